"""ttreport whatif: a report re-estimated with one change, without rerunning the model.

    .venv/bin/python -m pytest tests/test_whatif.py -q

The demo's figures follow docs/perf_model.md: a core reads a one-tile (2048 B) bfloat16 page from DRAM in
340 + 2048 / 22 = 433.1 ns and over the NoC from L1 in 170 + 2048 / 29 = 240.6 ns, so moving a tensor to L1
shortens each op that waits on its pages; a [32, 96] bfloat16 weight is 3 tiles, 6144 B, and 3264 B as
bfloat8_b (1088 B a tile): each page written or read is shorter.

The sample's device_perf rows are what a capture of the demo stores with the current model.
"""

import math
import shutil
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport import db
from ttreport.cli import main
from ttreport.read import whatif

SAMPLE = Path(__file__).resolve().parents[1] / "sample_reports" / "demo"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("whatif")
    shutil.copytree(SAMPLE, root / "demo")
    db.upgrade(root / "demo" / "db.sqlite")  # a no-op unless the schema moved on since the sample was made
    return root / "demo"


def test_without_a_change_every_op_is_estimated_as_the_capture_stored_it(demo):
    with ttreport.open(demo) as r:
        interleaved = r.execute("SELECT tensor_id, buffer_type FROM tensors WHERE buffer_type IS NOT NULL "
                                "AND memory_config LIKE '%INTERLEAVED%'").fetchall()
        assert len(interleaved) > 30
        touched = set()
        for tid, buffer_type in interleaved:  # each tensor "moved" to where it is: every op it touches re-estimated
            w = whatif.whatif(r, tensor_id=tid, memory="L1" if buffer_type == 1 else "DRAM")
            assert w.changed == [] and w.peak_l1_after == w.peak_l1_before
            assert w.after_ns - w.before_ns == sum(c.after_ns - c.before_ns for c in w.changed)
            touched.update(op for (op,) in r.execute(
                "SELECT operation_id FROM input_tensors WHERE tensor_id = ? UNION "
                "SELECT operation_id FROM output_tensors WHERE tensor_id = ?", (tid, tid)))
        estimated = {op for (op,) in r.execute("SELECT operation_id FROM device_perf")}
        assert len(estimated & touched) >= 0.9 * len(estimated)
        assert whatif.whatif(r, math_fidelity="HiFi2").changed == []  # the demo's matmuls run at HiFi2


def test_moving_the_demos_dram_activation_to_l1_saves_the_predicted_bandwidth(demo):
    with ttreport.open(demo) as r:
        # the first layer_norm's output, left in DRAM by the inputs rule and read by a linear
        [(tid,)] = r.execute(
            "SELECT t.tensor_id FROM operations o JOIN output_tensors x USING (operation_id) JOIN tensors t "
            "USING (tensor_id) WHERE o.name = 'ttnn.layer_norm' AND t.buffer_type = 0 ORDER BY o.operation_id "
            "LIMIT 1").fetchall()
        w = whatif.whatif(r, tensor_id=tid, memory="L1")
    assert w.changed, "the linear reading it waits on its pages: its estimate must move"
    for c in w.changed:  # its two in0 tiles (K = 64) each 433.1 - 240.6 = 192.5 ns sooner, at most
        assert 0 < c.before_ns - c.after_ns <= math.ceil(2 * 192.5 * 1.5)
    assert w.after_ns < w.before_ns
    assert w.peak_l1_after >= w.peak_l1_before


def test_a_bfloat8_b_weight_saves_the_predicted_bytes_in_the_linear_that_reads_it(demo):
    with ttreport.open(demo) as r:
        [(op_id, tid, shape)] = r.execute(
            "SELECT o.operation_id, t.tensor_id, t.shape FROM operations o JOIN input_tensors i USING (operation_id) "
            "JOIN tensors t USING (tensor_id) WHERE o.name = 'ttnn.linear' AND i.input_index = 1 "
            "AND t.dtype = 'DataType.BFLOAT16' AND t.shape = 'Shape([32, 96])' ORDER BY o.operation_id LIMIT 1"
        ).fetchall()
        w = whatif.whatif(r, tensor_id=tid, dtype="bfloat8_b")
    # the from_torch that uploaded it (its bytes cross PCIe and land in DRAM), and the linear that reads it
    upload, c = w.changed
    assert (upload.name, c.operation_id) == ("ttnn.from_torch", op_id)
    assert c.after_ns < c.before_ns
    # the upload: 3 cores each write one tile, 340 + 2048 / 21 ns as bfloat16, 340 + 1088 / 21 as bfloat8_b
    assert upload.before_ns - upload.after_ns == math.ceil(340 + 2048 / 21) - math.ceil(340 + 1088 / 21)
    assert w.after_ns == w.before_ns - sum(x.before_ns - x.after_ns for x in w.changed)


def test_hifi4_slows_a_compute_bound_matmul_and_moving_a_live_tensor_to_l1_raises_peak_l1(tmp_path, device):
    a = ttnn.from_torch(torch.randn(1024, 1024), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                        memory=ttnn.L1)
    with ttreport.capture(tmp_path / "r") as handle:
        d = ttnn.from_torch(torch.randn(1024, 1024), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                            memory=ttnn.DRAM)
        c = ttnn.matmul(a, a, memory=ttnn.L1)
    with ttreport.open(handle.path) as r:
        # bfloat16 tile-steps wait 45.5 cycles on the unpacker: LoFi's 20 cycles of math change nothing, HiFi4's 68 do
        assert whatif.whatif(r, math_fidelity="LoFi").changed == []
        [mm] = whatif.whatif(r, math_fidelity="HiFi4").changed
        reads = math.ceil(9719.4 * 2 / 2)  # half of the L1 reads' 19438.9 ns does not overlap the math
        assert (mm.name, mm.before_ns, mm.after_ns) == ("ttnn.matmul", 1500 + 23302 + reads, 1500 + 34816 + reads)
        moved = whatif.whatif(r, tensor_id=d.tensor_id, memory="L1")
        assert moved.peak_l1_after - moved.peak_l1_before == d.buffer.size
        assert moved.changed == []  # its upload is PCIe-bound (2 MiB / 32 GB/s) wherever it lands
    del c


def test_what_the_rows_do_not_say_scales_the_stored_estimate_instead_of_replacing_it(tmp_path, device):
    # a bmm given a core_grid spreads its batches over the cores; a report's rows do not keep the grid, so an
    # estimate from them alone puts it on one core: the change's effect is scaled onto the stored estimate
    from device_sim import perf_model

    a = ttnn.from_torch(torch.randn(16, 64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, memory=ttnn.L1)
    b = ttnn.from_torch(torch.randn(16, 64, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, memory=ttnn.L1)
    with ttreport.capture(tmp_path / "r") as handle:
        ttnn.matmul(a, b, core_grid=ttnn.CoreGrid(y=8, x=12))
    with ttreport.open(handle.path) as r:
        [op] = r.operations(name="ttnn.matmul")
        stored = r.execute("SELECT ideal_ns FROM device_perf WHERE operation_id = ?", (op.id,)).fetchone()[0]
        assert whatif.whatif(r, math_fidelity="HiFi2").changed == []  # unchanged: as stored, not the gridless figure
        [mm] = whatif.whatif(r, math_fidelity="HiFi4").changed
    rows = [perf_model.Operand(t.buffer.size, "l1", tuple(t.shape), False) for t in (a, b)]
    out = perf_model.Operand(16 * 2 * 2048, "l1", (16, 64, 32), False)
    gridless = [perf_model.estimate("matmul", rows, [out], f).ideal_ns
                for f in (ttnn.MathFidelity.HiFi2, ttnn.MathFidelity.HiFi4)]
    assert gridless[0] > 4 * stored  # what the rows alone would have said
    assert mm.before_ns == stored and mm.after_ns == round(stored * gridless[1] / gridless[0]) > stored


def test_the_whatif_command_prints_the_changes_and_refuses_a_bad_request(demo):
    runner = CliRunner()
    out = runner.invoke(main, ["whatif", str(demo), "--math-fidelity", "LoFi"])
    assert out.exit_code == 0 and "device time (top-level ops)" in out.output and "peak L1" in out.output
    bad = runner.invoke(main, ["whatif", str(demo), "--tensor", "3", "--memory", "L1", "--dtype", "bfloat8_b"])
    assert bad.exit_code == 2 and "give exactly one change (--memory, --dtype or --math-fidelity), got 2" in bad.output
    bad = runner.invoke(main, ["whatif", str(demo), "--memory", "L1"])
    assert bad.exit_code == 2 and "give its id with --tensor ID" in bad.output
    bad = runner.invoke(main, ["whatif", str(demo), "--tensor", "999999", "--memory", "L1"])
    assert bad.exit_code == 2 and "tensor 999999 is not in this report" in bad.output
