"""What ttnn-visualizer shows of the device work added for the ternary, shape and softmax-variant ops.

The real visualizer (tests/visualizer.py) reads a fresh report, as tests/test_visualizer_device_work.py
does: each op's "Device operations" and "Peak L1 memory load per core" are what its REST API returns,
read with the frontend's walk ported in test_visualizer_device_ops.py.
"""

import pytest
import torch
from test_visualizer_device_ops import device_op_names, peak_l1_per_core

import device_sim as ttnn
import ttreport

TILE_BF16 = 2048


@pytest.fixture
def report(tmp_path, device):
    def tt(shape, layout=ttnn.TILE):
        return ttnn.from_torch(torch.randn(*shape), dtype=ttnn.bfloat16, layout=layout, device=device)

    a, b, c = tt((64, 64)), tt((64, 64)), tt((64, 64))
    rm = tt((1, 1, 4, 36), ttnn.ROW_MAJOR)
    with ttreport.capture(tmp_path / "run", config=ttreport.Config(device_graphs=True)) as handle:
        ttnn.where(a, b, c)
        ttnn.pad(rm, [(0, 0), (0, 4)], 0.0)
        ttnn.slice(a, [0, 3], [64, 64])  # not tile-aligned: through ROW_MAJOR and back
        ttnn.scale_mask_softmax_in_place(a, 0.5, b)
    return handle.path


def test_the_visualizer_shows_the_device_operations_of_where_pad_slice_and_softmax(visualizer, report):
    instance = visualizer.open(report)
    shown = [(o["name"], device_op_names(visualizer.get(f"/api/operations/{o['id']}", instance)["device_operations"]))
             for o in visualizer.get("/api/operations", instance)]
    assert shown == [
        ("ttnn.where", ["TernaryDeviceOperation"]), ("ttnn.pad", ["PadDeviceOperation"]),
        ("ttnn.slice", ["UntilizeDeviceOperation", "SliceDeviceOperation", "TilizeWithValPaddingDeviceOperation"]),
        ("ttnn.scale_mask_softmax_in_place", ["SoftmaxDeviceOperation"])]


def test_the_visualizer_reads_the_peak_l1_per_core_of_where_and_pad(visualizer, report):
    instance = visualizer.open(report)
    ops = {o["name"]: o["id"] for o in visualizer.get("/api/operations", instance)}
    where = visualizer.get(f"/api/operations/{ops['ttnn.where']}", instance)["device_operations"]
    # c_0..c_3, two bfloat16 tiles each, on every core; the output is in DRAM
    assert peak_l1_per_core(where) == 4 * 2 * TILE_BF16
    pad = visualizer.get(f"/api/operations/{ops['ttnn.pad']}", instance)["device_operations"]
    # 40-value rows: the 96 B pad row and realignment row, and 16 barriers of 26 rows of 80 B
    assert peak_l1_per_core(pad) == 96 + 96 + 16 * 26 * 80
