"""Two transformer pieces written with the concise API: documentation, and what tests/test_models.py runs.

    import device_sim as ttnn
    from device_sim.examples import attention, linear_parameters

    device = ttnn.open_device(0)
    qkv = linear_parameters(torch.nn.Linear(C, 3 * C), device)
    out = linear_parameters(torch.nn.Linear(C, C), device)
    x = ttnn.from_torch(torch_x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    y = attention(x, qkv, out, num_heads=4).to_torch()

The same attention block in TT-NN's long names is tests/tt_nn_scripts/attention_long_names.py.
Shapes: B batch, S sequence, C hidden, H heads, D = C / H head size.
"""

from __future__ import annotations

from typing import NamedTuple

import device_sim as ttnn
from device_sim.model_preprocessing import preprocess_linear_bias, preprocess_linear_weight


class Linear(NamedTuple):
    weight: ttnn.Tensor  # [in, out], as ttnn.linear takes it
    bias: ttnn.Tensor  # [1, out]


def linear_parameters(module, device, dtype=ttnn.bfloat16) -> Linear:
    """A torch.nn.Linear's weights on the device. Weights are big and live long: DRAM."""
    weight = preprocess_linear_weight(module.weight, dtype=dtype)
    bias = preprocess_linear_bias(module.bias, dtype=dtype)
    return Linear(weight.to_device(device, memory=ttnn.DRAM), bias.to_device(device, memory=ttnn.DRAM))


def attention(x: ttnn.Tensor, qkv: Linear, out: Linear, *, num_heads: int,
              attention_mask: ttnn.Tensor | None = None) -> ttnn.Tensor:
    """Multi-head self-attention of x [B, S, C]; attention_mask is added to the scores ([B, 1, 1, S])."""
    D = x.shape[-1] // num_heads
    with ttnn.memory(ttnn.L1):  # the intermediates are small and short-lived: L1
        fused = ttnn.linear(x, qkv.weight, bias=qkv.bias)  # [B, S, 3C]
        q, k, v = ttnn.transformer.split_query_key_value_and_split_heads(fused, num_heads=num_heads)
        scores = q @ k  # q [B, H, S, D] @ k [B, H, D, S] -> [B, H, S, S]
        probs = ttnn.transformer.attention_softmax(scores, head_size=D, attention_mask=attention_mask)
        context = ttnn.transformer.concatenate_heads(probs @ v)  # [B, H, S, D] -> [B, S, C]
    return ttnn.linear(context, out.weight, bias=out.bias, memory=ttnn.DRAM)


def mlp(x: ttnn.Tensor, up: Linear, down: Linear) -> ttnn.Tensor:
    """down(gelu(up(x))) over x [B, S, C], the tokens flattened into one [B*S, C] matrix."""
    B, S, C = x.shape
    h = ttnn.linear(x.reshape(B * S, C), up.weight, bias=up.bias, activation="gelu", memory=ttnn.L1)
    h = h @ down.weight + down.bias  # the [B*S, 4C] activation never leaves L1; the output follows the rules
    return h.reshape(B, S, C)
