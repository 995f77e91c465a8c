"""What ttnn-visualizer shows of an op's device work: its device operations, CBs and peak L1 per core.

The real visualizer (tests/visualizer.py) reads each report; the checks use what its REST API returns for
an op, the data its "Device operations" list and "Peak L1 memory load per core" are drawn from.
"""

import pytest
import torch

import device_sim as ttnn
import ttreport

TILE_BF16 = 2048


def device_op_names(graph: list) -> list[str]:
    # The visualizer's list: function_start names that are neither ttnn ops ('ttnn::', 'ttnn.') nor torch's
    return [n["params"]["name"] for n in graph if n["node_type"] == "function_start"
            and not any(s in n["params"]["name"] for s in ("(torch)", "::", "ttnn."))]


def peak_l1_per_core(graph: list) -> float:
    """The visualizer's "Peak L1 memory load per core" (its frontend's walk of the graph, ported): CBs summed
    per core (reset by circular_buffer_deallocate_all) plus each L1 buffer's size over its cores (64 if 0)."""
    per_core: dict[str, int] = {}
    cb_max = buffers = peak = 0
    for n in graph[1:]:
        p = n["params"]
        if n["node_type"] == "circular_buffer_allocate" and p.get("globally_allocated") not in ("1", 1):
            for core in _cores(p["core_range_set"]):
                per_core[core] = per_core.get(core, 0) + int(p["size"])
                cb_max = max(cb_max, per_core[core])
        elif n["node_type"] == "circular_buffer_deallocate_all":
            per_core, cb_max = {}, 0
        elif n["node_type"] == "buffer_allocate" and p["type"] == "L1":
            buffers += int(p["size"]) / (int(p["num_cores"]) or 64)
        peak = max(peak, cb_max + buffers)
    return peak


def _cores(text: str) -> list[tuple[int, int]]:
    import re

    cores = []
    for rng in re.findall(r"\[([^\]]+)\]", text):
        (x0, y0), (x1, y1) = [tuple(map(int, m)) for m in re.findall(r"(\d+)-(\d+)", rng)][:2]
        cores += [(x, y) for x in range(x0, x1 + 1) for y in range(y0, y1 + 1)]
    return cores


@pytest.fixture
def report(tmp_path, device):
    a = ttnn.from_torch(torch.randn(256, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    bias = ttnn.from_torch(torch.randn(1, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with ttreport.capture(tmp_path / "run", config=ttreport.Config(device_graphs=True)) as handle:
        ttnn.matmul(a, a)  # DRAM output: the peak is the CBs alone
        ttnn.linear(a, a, bias=bias, memory_config=ttnn.L1_MEMORY_CONFIG)  # an L1 output adds its share per core
        ttnn.relu(a)  # UnaryDeviceOperation: two tiles in, two out
        ttnn.to_torch(a)  # a read back to the host runs no program
    return handle.path


def test_a_matmul_shows_its_device_operation_cbs_and_peak_l1_per_core(visualizer, report):
    instance = visualizer.open(report)
    ops = {}
    for o in visualizer.get("/api/operations", instance):  # in id order: linear's nested matmul comes later
        ops.setdefault(o["name"], o["id"])
    mm = visualizer.get(f"/api/operations/{ops['ttnn.matmul']}", instance)["device_operations"]
    assert device_op_names(mm) == ["MatmulDeviceOperation"]
    assert [int(n["params"]["size"]) for n in mm if n["node_type"] == "circular_buffer_allocate"] == [
        8 * TILE_BF16, 8 * TILE_BF16, TILE_BF16]
    assert peak_l1_per_core(mm) == 17 * TILE_BF16

    lin = visualizer.get(f"/api/operations/{ops['ttnn.linear']}", instance)["device_operations"]
    assert device_op_names(lin) == ["MatmulDeviceOperation"]  # one program: bias fused, no separate add
    # in0, in1, bias and output CBs, plus the 256x256 bfloat16 output interleaved over 64 cores
    assert peak_l1_per_core(lin) == (8 + 8 + 1 + 1) * TILE_BF16 + 256 * 256 * 2 / 64

    relu = visualizer.get(f"/api/operations/{ops['ttnn.relu']}", instance)["device_operations"]
    assert device_op_names(relu) == ["UnaryDeviceOperation"]
    assert peak_l1_per_core(relu) == 4 * TILE_BF16  # its DRAM output adds nothing per core
    host = visualizer.get(f"/api/operations/{ops['ttnn.to_torch']}", instance)["device_operations"]
    assert device_op_names(host) == []


def test_a_clash_shows_the_error_and_the_cbs_that_clashed(visualizer, tmp_path):
    dev = ttnn.open_device(0, l1_size=98_304 + 65_536)
    try:
        a = ttnn.from_torch(torch.randn(256, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
        with ttreport.capture(tmp_path / "clash", config=ttreport.Config(device_graphs=True)) as handle:
            held = ttnn.from_torch(torch.randn(49_152, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev,
                                   memory_config=ttnn.L1_MEMORY_CONFIG)
            with pytest.raises(RuntimeError, match="clash with L1 buffers"):
                ttnn.matmul(a, a)
    finally:
        ttnn.close_device(dev)
    instance = visualizer.open(handle.path)
    op = next(o for o in visualizer.get("/api/operations", instance) if o["name"] == "ttnn.matmul")
    detail = visualizer.get(f"/api/operations/{op['id']}", instance)
    assert f"L1 buffer allocated at {held.buffer_address()}" in detail["error"]["error_message"]
    assert device_op_names(detail["device_operations"]) == ["MatmulDeviceOperation"]
    assert peak_l1_per_core(detail["device_operations"]) == 17 * TILE_BF16
    tensors = visualizer.get("/api/tensors", instance)
    assert any(t["address"] == held.buffer_address() and t["buffer_type"] == 1 for t in tensors)
