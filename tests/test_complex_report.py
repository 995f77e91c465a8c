"""A ttnn.ComplexTensor in a report: its parts are the op's input / output tensors, and its golden is complex.

device_sim's complex ops (device_sim/ops/complex.py) take and give a ComplexTensor, a (real, imag) pair of
tensors. The recorder lists both parts (real first) among an op's tensors, with their buffers and stored values;
the golden route hands the golden one torch complex tensor and compares an output part by part. The C hook's
records of the same ops are held equal to these in tests/test_hook_native.py (its model takes a ComplexTensor).
"""

import sqlite3
import subprocess
import sys
from pathlib import Path

import torch

import device_sim as ttnn
import ttreport
from device_sim.ops import complex as complex_ops
from ttreport import Config

REPO = Path(__file__).resolve().parent.parent


def rows(db_dir, sql, *params) -> list[dict]:
    con = sqlite3.connect(Path(db_dir) / "db.sqlite")
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(sql, params)]
    finally:
        con.close()


def _parts(device, n: int = 2, seed: int = 0) -> list:
    g = torch.Generator().manual_seed(seed)
    return [ttnn.from_torch(torch.randn(1, 1, 32, 32, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE,
                            device=device) for _ in range(n)]


def _op_id(report, name: str) -> int:
    return rows(report.path, "SELECT operation_id FROM operations WHERE name = ? AND depth = 0", name)[0][
        "operation_id"]


def _comparisons(report, op_id: int) -> list[dict]:
    return rows(report.path, "SELECT mode, tensor_id, status, pcc, golden_tensor_id, reason FROM tensor_comparisons "
                "WHERE operation_id = ? ORDER BY mode, rowid", op_id)


def test_complex_abs_and_reciprocal_pass_against_complex_goldens(tmp_path, device):
    with ttreport.capture(tmp_path / "r", config=Config(comparison="both", tensors="outputs")) as report:
        re, im = _parts(device)
        z = ttnn.complex_tensor(re, im)
        magnitude = ttnn.abs(z)
        inverse = ttnn.reciprocal(z)
    assert rows(report.path, "SELECT * FROM errors") == []
    abs_rows = _comparisons(report, _op_id(report, "ttnn.abs"))
    assert [(c["mode"], c["tensor_id"], c["status"]) for c in abs_rows] == [
        ("global", magnitude.tensor_id, "pass"), ("local", magnitude.tensor_id, "pass")]
    # one row per part, each naming that part's tensor: the real part's, then the imaginary part's
    recip_rows = _comparisons(report, _op_id(report, "ttnn.reciprocal"))
    parts = [inverse.real.tensor_id, inverse.imag.tensor_id]
    assert [(c["mode"], c["tensor_id"], c["status"]) for c in recip_rows] == [
        (mode, tid, "pass") for mode in ("global", "local") for tid in parts]
    # the local golden is the torch op on the complex tensor of the parts as the device held them
    want = torch.reciprocal(torch.complex(re.value.float(), im.value.float()))
    with ttreport.open(report.path) as r:
        local = [c for c in recip_rows if c["mode"] == "local"]
        torch.testing.assert_close(r.load_tensor(local[0]["golden_tensor_id"]), want.real)
        torch.testing.assert_close(r.load_tensor(local[1]["golden_tensor_id"]), want.imag)
    records = rows(report.path, "SELECT tensor_id, matches FROM local_tensor_comparison_records")
    assert {(r["tensor_id"], r["matches"]) for r in records} >= {(tid, 1) for tid in [magnitude.tensor_id, *parts]}


def test_a_complex_backward_golden_in_real_and_imag_halves_is_compared_part_by_part(tmp_path, device):
    # device_sim's complex backward goldens give a gradient as [real | imag] along the last dim (TT-NN's tests')
    with ttreport.capture(tmp_path / "r", config=Config(comparison="local")) as report:
        re, im, grad = _parts(device, 3)
        [dz] = ttnn.angle_bw(grad, ttnn.complex_tensor(re, im), memory_config=ttnn.DRAM_MEMORY_CONFIG)
    found = _comparisons(report, _op_id(report, "ttnn.angle_bw"))
    assert [(c["tensor_id"], c["status"]) for c in found] == [(dz.real.tensor_id, "pass"), (dz.imag.tensor_id, "pass")]
    assert rows(report.path, "SELECT * FROM errors") == []


def _shift_reciprocals_imag(monkeypatch) -> None:
    """ttnn.reciprocal of a ComplexTensor gives the device's result with its imaginary part shifted by 1."""
    right = complex_ops.OVERLOADS["ttnn.reciprocal"]

    def off_in_imag(x, memory_config=None):
        out = right(x, memory_config)
        return ttnn.complex_tensor(out.real, ttnn.add(out.imag, 1.0))

    monkeypatch.setitem(complex_ops.OVERLOADS, "ttnn.reciprocal", off_in_imag)


def test_a_complex_op_on_a_mesh_is_compared_per_device_on_that_devices_shards(tmp_path):
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 2))
    try:
        g = torch.Generator().manual_seed(0)
        with ttreport.capture(tmp_path / "r", config=Config(comparison="local", tensors="outputs")) as report:
            re, im = (ttnn.from_torch(torch.randn(1, 1, 32, 64, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE,
                                      device=mesh, mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3)) for _ in range(2))
            out = ttnn.reciprocal(ttnn.complex_tensor(re, im))
        found = rows(report.path, "SELECT tensor_id, device_id, status, golden_tensor_id FROM tensor_comparisons "
                     "WHERE operation_id = ? ORDER BY rowid", _op_id(report, "ttnn.reciprocal"))
        chips = [chip.device_id for chip in mesh._chips]
        assert [(c["tensor_id"], c["device_id"], c["status"]) for c in found] == [
            (part.tensor_id, chip, "pass") for part in (out.real, out.imag) for chip in chips]
        with ttreport.open(report.path) as r:  # device i's golden: the op on device i's shards
            for i, c in enumerate(found[len(chips):]):
                want = torch.reciprocal(torch.complex(re.shards[i].value.float(), im.shards[i].value.float()))
                torch.testing.assert_close(r.load_tensor(c["golden_tensor_id"]), want.imag)
    finally:
        ttnn.close_mesh_device(mesh)


def test_a_wrong_complex_output_is_a_mismatch_not_an_error(tmp_path, device, monkeypatch):
    _shift_reciprocals_imag(monkeypatch)
    with ttreport.capture(tmp_path / "r", config=Config(comparison="local")) as report:
        out = ttnn.reciprocal(ttnn.complex_tensor(*_parts(device)))
    found = _comparisons(report, _op_id(report, "ttnn.reciprocal"))
    assert [(c["tensor_id"], c["status"]) for c in found] == [(out.real.tensor_id, "pass"),
                                                               (out.imag.tensor_id, "fail")]
    assert "outside atol" in found[1]["reason"]
    assert rows(report.path, "SELECT * FROM errors") == []


def test_compare_names_the_complex_op_whose_part_differs(tmp_path, device, monkeypatch):
    for name in ("a", "b"):
        if name == "b":
            _shift_reciprocals_imag(monkeypatch)
        with ttreport.capture(tmp_path / name, config=Config(tensors="outputs")):
            z = ttnn.complex_tensor(*_parts(device))
            ttnn.abs(ttnn.reciprocal(z))
    shown = subprocess.run([sys.executable, "-m", "ttreport.cli", "compare", str(tmp_path / "a"), str(tmp_path / "b")],
                           cwd=REPO, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 1, shown.stderr
    assert "ROOT CAUSE: ttnn.reciprocal" in shown.stdout


def test_a_golden_giving_a_real_tensor_for_a_complex_output_is_a_golden_error(tmp_path, device, monkeypatch):
    monkeypatch.setattr(ttnn.OPS["ttnn.reciprocal"], "golden_function", lambda z, *_, **__: torch.reciprocal(z).real)
    with ttreport.capture(tmp_path / "r", config=Config(comparison="local")) as report:
        out = ttnn.reciprocal(ttnn.complex_tensor(*_parts(device)))
    found = _comparisons(report, _op_id(report, "ttnn.reciprocal"))
    assert [(c["tensor_id"], c["status"]) for c in found] == [(out.real.tensor_id, "golden_error"),
                                                               (out.imag.tensor_id, "golden_error")]
    assert "returned a real tensor of shape [1, 1, 32, 32] for ComplexTensor output 0" in found[0]["reason"]
    errors = rows(report.path, "SELECT operation_name, error_type FROM errors")
    assert errors == [{"operation_name": "ttnn.reciprocal", "error_type": "golden_error"}]


def test_complex_ops_list_their_parts_as_tensors_with_buffers_and_values(tmp_path, device):
    with ttreport.capture(tmp_path / "r", config=Config(tensors="all")) as report:
        a_re, a_im, b_re, b_im = _parts(device, 4)
        a, b = ttnn.complex_tensor(a_re, a_im), ttnn.complex_tensor(b_re, b_im)
        product = ttnn.multiply(a, b)
        magnitude = ttnn.abs(product)
    mul, abs_ = _op_id(report, "ttnn.mul"), _op_id(report, "ttnn.abs")

    def listed(table, index, op_id):
        return [r["tensor_id"] for r in rows(report.path, f"SELECT tensor_id FROM {table} WHERE operation_id = ? "
                                             f"ORDER BY {index}", op_id)]

    assert listed("input_tensors", "input_index", mul) == [t.tensor_id for t in (a_re, a_im, b_re, b_im)]
    assert listed("output_tensors", "output_index", mul) == [product.real.tensor_id, product.imag.tensor_id]
    assert listed("input_tensors", "input_index", abs_) == [product.real.tensor_id, product.imag.tensor_id]
    assert listed("output_tensors", "output_index", abs_) == [magnitude.tensor_id]
    args = rows(report.path, "SELECT name, value FROM operation_arguments WHERE operation_id = ?", mul)
    assert args[:2] == [{"name": "0", "value": repr(a)}, {"name": "1", "value": repr(b)}]
    with ttreport.open(report.path) as r:
        for part in (a_re, a_im, product.real, product.imag):
            spec = rows(report.path, "SELECT address, buffer_type FROM tensors WHERE tensor_id = ?", part.tensor_id)
            assert spec == [{"address": part.buffer.address, "buffer_type": int(part.buffer.buffer_type)}]
            torch.testing.assert_close(r.load_tensor(part.tensor_id), part.value)
    shown = subprocess.run([sys.executable, "-m", "ttreport.cli", "op", str(report.path), str(mul)], cwd=REPO,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    inputs = shown.stdout.split("\ninputs:\n")[1].split("\noutputs:\n")[0]
    assert [line.split(":")[0].strip() for line in inputs.splitlines() if line.startswith("  [")] == [
        f"[{i}] tensor {t.tensor_id}" for i, t in enumerate((a_re, a_im, b_re, b_im))]
