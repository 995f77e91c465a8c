"""The attention block of device_sim/examples.py, written as TT-NN scripts are today (long names).

It is a plain TT-NN script: tests/test_models.py runs it unchanged on device_sim through
device_sim.install_as_ttnn(). It saves its inputs, weights and output to the path given.

    python attention_long_names.py OUT.pt
"""

import sys

import torch
import ttnn
from ttnn.model_preprocessing import preprocess_linear_bias, preprocess_linear_weight


def attention(hidden_states, qkv_weight, qkv_bias, output_weight, output_bias, *, num_heads):
    head_size = hidden_states.shape[-1] // num_heads
    fused_qkv = ttnn.linear(hidden_states, qkv_weight, bias=qkv_bias, memory_config=ttnn.L1_MEMORY_CONFIG)
    query, key, value = ttnn.transformer.split_query_key_value_and_split_heads(
        fused_qkv, num_heads=num_heads, memory_config=ttnn.L1_MEMORY_CONFIG
    )
    ttnn.deallocate(fused_qkv)
    attention_scores = ttnn.matmul(query, key, memory_config=ttnn.L1_MEMORY_CONFIG)
    ttnn.deallocate(query)
    ttnn.deallocate(key)
    attention_probs = ttnn.transformer.attention_softmax_(attention_scores, head_size=head_size)
    context = ttnn.matmul(attention_probs, value, memory_config=ttnn.L1_MEMORY_CONFIG)
    ttnn.deallocate(attention_probs)
    ttnn.deallocate(value)
    context = ttnn.transformer.concatenate_heads(context, memory_config=ttnn.L1_MEMORY_CONFIG)
    output = ttnn.linear(context, output_weight, bias=output_bias, memory_config=ttnn.DRAM_MEMORY_CONFIG)
    ttnn.deallocate(context)
    return output


def main(out_path):
    torch.manual_seed(0)
    batch_size, sequence_size, hidden_size, num_heads = 2, 64, 128, 4
    torch_qkv = torch.nn.Linear(hidden_size, 3 * hidden_size)
    torch_output = torch.nn.Linear(hidden_size, hidden_size)
    torch_hidden_states = torch.randn(batch_size, sequence_size, hidden_size)

    device = ttnn.open_device(device_id=0)

    def weight(tensor):
        return ttnn.to_device(preprocess_linear_weight(tensor, dtype=ttnn.bfloat16), device,
                              memory_config=ttnn.DRAM_MEMORY_CONFIG)

    def bias(tensor):
        return ttnn.to_device(preprocess_linear_bias(tensor, dtype=ttnn.bfloat16), device,
                              memory_config=ttnn.DRAM_MEMORY_CONFIG)

    hidden_states = ttnn.from_torch(torch_hidden_states, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                                    device=device, memory_config=ttnn.L1_MEMORY_CONFIG)
    output = attention(hidden_states, weight(torch_qkv.weight), bias(torch_qkv.bias), weight(torch_output.weight),
                       bias(torch_output.bias), num_heads=num_heads)
    torch_result = ttnn.to_torch(output)
    ttnn.close_device(device)
    torch.save({
        "hidden_states": torch_hidden_states,
        "qkv": torch_qkv.state_dict(),
        "output": torch_output.state_dict(),
        "num_heads": num_heads,
        "result": torch_result,
    }, out_path)


if __name__ == "__main__":
    main(sys.argv[1])
