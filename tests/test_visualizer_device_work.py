"""What ttnn-visualizer shows of the device work of layer_norm, conv2d and the data-movement and reduction ops.

The real visualizer (tests/visualizer.py) reads a fresh report; each op's "Device operations" and its
"Peak L1 memory load per core" come from what its REST API returns for the op (the helpers port the
frontend's reading, in test_visualizer_device_ops.py).
"""

import pytest
import torch
from test_sharded_model import layer, run_layer  # noqa: F401  (layer: a fixture, the BERT layer's weights)
from test_visualizer_device_ops import device_op_names, peak_l1_per_core

import device_sim as ttnn
import ttreport

TILE_BF16 = 2048


@pytest.fixture
def report(tmp_path, device):
    x = ttnn.from_torch(torch.randn(1, 1, 64, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    rm = ttnn.from_torch(torch.randn(1, 1, 64, 256), dtype=ttnn.bfloat16, device=device)
    image = ttnn.from_torch(torch.randn(1, 16, 16, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    w = ttnn.from_torch(torch.randn(64, 32, 3, 3), dtype=ttnn.bfloat16)
    with ttreport.capture(tmp_path / "run", config=ttreport.Config(device_graphs=True)) as handle:
        ttnn.layer_norm(x, memory_config=ttnn.L1_MEMORY_CONFIG)  # its output's L1 share adds to the CBs
        ttnn.conv2d(input_tensor=image, weight_tensor=w, device=device, in_channels=32, out_channels=64,
                    batch_size=1, input_height=16, input_width=16, kernel_size=(3, 3), padding=(1, 1))
        ttnn.to_layout(rm, ttnn.TILE)
        ttnn.typecast(x, ttnn.bfloat8_b)
        ttnn.mean(x, dim=None)
        ttnn.transpose(x, -2, -1)
    return handle.path


def test_layer_norm_conv2d_and_data_movement_show_their_device_operations(visualizer, report):
    instance = visualizer.open(report)
    ops = {o["name"]: o["id"] for o in visualizer.get("/api/operations", instance)}
    shown = {name: device_op_names(visualizer.get(f"/api/operations/{ops[name]}", instance)["device_operations"])
             for name in ops}
    assert shown == {
        "ttnn.layer_norm": ["LayerNormDeviceOperation"],
        "ttnn.conv2d": ["InterleavedToShardedDeviceOperation", "HaloDeviceOperation", "Conv2dDeviceOperation"],
        "ttnn.to_layout": ["TilizeDeviceOperation"], "ttnn.typecast": ["TypecastDeviceOperation"],
        "ttnn.mean": ["ReduceDeviceOperation", "ReduceDeviceOperation"],  # W, then H
        "ttnn.transpose": ["TransposeDeviceOperation"]}


def test_peak_l1_per_core_of_a_layer_norm_and_a_conv2d(visualizer, report):
    instance = visualizer.open(report)
    ops = {o["name"]: o["id"] for o in visualizer.get("/api/operations", instance)}
    ln = visualizer.get(f"/api/operations/{ops['ttnn.layer_norm']}", instance)["device_operations"]
    # [64, 256]: c_0 8, c_16 16, c_18 2, c_2 2, c_3 2, c_19 2, c_24 8, c_20 8, c_21 8 = 56 bfloat16 tiles, plus the
    # 64x256 bfloat16 L1 output interleaved over the 64 cores
    assert peak_l1_per_core(ln) == 56 * TILE_BF16 + 64 * 256 * 2 / 64
    conv = visualizer.get(f"/api/operations/{ops['ttnn.conv2d']}", instance)["device_operations"]
    # 16x16x32 -> 64 channels, 3x3, pad 1: 8 rows of output tiles, one a core. The conv's static CBs are the
    # largest: weights 2 x 3 tiles (out width 2 tiles x act_block_w = ceil(32 * 3 / 32)), the activation block
    # (3 tiles) and its tilized copy (3), and the 64 B scratchpad; partials, output, reader indices and the
    # halo'd activation live in their own buffers (globally allocated: not counted)
    assert peak_l1_per_core(conv) == (6 + 3 + 3) * TILE_BF16 + 64


def test_the_device_ops_of_a_sharded_bert_encoder_layer_show_their_device_operations(
        visualizer, tmp_path, device, layer):  # noqa: F811  (the imported fixture)
    _, p, x, mask = layer
    with ttreport.capture(tmp_path / "bert", config=ttreport.Config(device_graphs=True)) as handle:
        run_layer(device, p, x, mask)
    instance = visualizer.open(handle.path)
    shown = [(o["name"], device_op_names(visualizer.get(f"/api/operations/{o['id']}", instance)["device_operations"]))
             for o in visualizer.get("/api/operations", instance)]
    mm, ln = ["MatmulDeviceOperation"], ["LayerNormDeviceOperation"]
    assert shown == [
        ("ttnn.from_torch", []),  # host ops: no program runs on the device
        ("ttnn.to_memory_config", ["InterleavedToShardedDeviceOperation"]),
        ("ttnn.from_torch", []),
        ("ttnn.linear", mm),
        # the layer's 4 heads cannot split over its 8 width cores (create_qkv_heads' factory refuses that shape),
        # so device_sim models no program for it; the test below shows the program of a shape it takes
        ("ttnn.transformer.split_query_key_value_and_split_heads", []),
        ("ttnn.deallocate", []),
        ("ttnn.matmul", mm),
        ("ttnn.transformer.attention_softmax_", ["SoftmaxDeviceOperation"]),
        ("ttnn.matmul", mm),
        ("ttnn.transformer.concatenate_heads", ["ConcatenateHeads"]),
        ("ttnn.linear", mm), ("ttnn.layer_norm", ln), ("ttnn.linear", mm), ("ttnn.linear", mm), ("ttnn.layer_norm", ln)]
