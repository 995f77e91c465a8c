"""An op that writes into a stored tensor (output_tensor=, an in-place op) stores the new values as its own file.

The tensor's first file keeps the values it had when first stored; each later write is
tensors/<tensor_id>@<operation_id>.pt with a `tensor_writes` row (schema 0009), and
Report.load_tensor(tensor_id, after_operation=N) gives the values it held right after op N.
"""

from __future__ import annotations

import sqlite3

import pytest
import torch

import device_sim as ttnn
import ttreport


def dev(t, device):
    return ttnn.from_torch(t, dtype=ttnn.float32, layout=ttnn.TILE, device=device)


def rows(report, sql, *args):
    con = sqlite3.connect(report.db_path)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("detach", [True, False])
def test_each_write_into_a_stored_tensor_gets_its_own_file_and_reads_back_after_its_op(tmp_path, device, detach):
    a, b = dev(torch.full((32, 32), 2.0), device), dev(torch.full((32, 32), 3.0), device)
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(tensors="outputs",
                                                                  detach_saved_tensors=detach)) as report:
        out = ttnn.add(a, b)  # 5
        ttnn.multiply(a, b, output_tensor=out)  # 6, into the same tensor
        ttnn.add_(out, b)  # 9, in place
        same = ttnn.reshape(out, (32, 32))  # hands the tensor back unchanged: no new file
    assert same is out
    (first, mul, add_, reshape) = [op for (op,) in rows(report, "SELECT operation_id FROM operations ORDER BY 1")]
    suffix = ".pt" if detach else ".bin"
    writes = rows(report, "SELECT operation_id, tensor_id, file FROM tensor_writes ORDER BY operation_id")
    assert writes == [(mul, out.tensor_id, f"tensors/{out.tensor_id}@{mul}{suffix}"),
                      (add_, out.tensor_id, f"tensors/{out.tensor_id}@{add_}{suffix}")]
    assert all((report.path / f).is_file() for _, _, f in writes)
    with ttreport.open(report.path) as r:
        held = {op: float(r.load_tensor(out.tensor_id, after_operation=op)[0, 0]) for op in (first, mul, add_, reshape)}
        assert float(r.load_tensor(out.tensor_id)[0, 0]) == 5.0  # the file the tensor was first stored in
    assert held == {first: 5.0, mul: 6.0, add_: 9.0, reshape: 9.0}


def test_a_write_file_that_cannot_be_written_leaves_the_first_file_and_its_row(tmp_path, device):
    a, b = dev(torch.full((32, 32), 2.0), device), dev(torch.full((32, 32), 3.0), device)
    warns = pytest.warns(ttreport.ReportIncompleteWarning, match="could not write tensor file")
    with warns, ttreport.capture(tmp_path / "r", config=ttreport.Config(tensors="outputs")) as report:
        out = ttnn.add(a, b)
        # Every name the next op's write could take is a folder already: its file cannot be written.
        for op in range(64):
            (report.path / "tensors" / f"{out.tensor_id}@{op}.pt").mkdir(parents=True, exist_ok=True)
        ttnn.multiply(a, b, output_tensor=out)
    assert rows(report, "SELECT COUNT(*) FROM tensor_writes") == [(0,)]
    assert rows(report, "SELECT file FROM tensors WHERE tensor_id = ?", out.tensor_id) == [
        (f"tensors/{out.tensor_id}.pt",)]
    with ttreport.open(report.path) as r:
        assert float(r.load_tensor(out.tensor_id)[0, 0]) == 5.0
        assert float(r.load_tensor(out.tensor_id, after_operation=10**6)[0, 0]) == 5.0  # no write was kept


def test_a_merged_run_keeps_each_ranks_writes_under_their_new_ids(tmp_path, device):
    from ttreport.read.merge import merge

    def rank(name, fill):
        a = dev(torch.full((32, 32), fill), device)
        with ttreport.capture(tmp_path / name, config=ttreport.Config(tensors="outputs")) as report:
            out = ttnn.add(a, a)
            ttnn.multiply(a, a, output_tensor=out)
        return report.path

    r0, r1 = rank("r0", 3.0), rank("r1", 5.0)
    db = merge([r0, r1], tmp_path / "merged", ranks={r1: 1})
    con = sqlite3.connect(db)
    try:
        writes = con.execute("SELECT operation_id, tensor_id, file FROM tensor_writes ORDER BY 1").fetchall()
    finally:
        con.close()
    assert len(writes) == 2 and writes[0][:2] != writes[1][:2]
    assert [f for _, _, f in writes] == [f"tensors/{t}@{op}.pt" for op, t, _ in writes]
    with ttreport.open(tmp_path / "merged") as r:
        after = [float(r.load_tensor(t, after_operation=op)[0, 0]) for op, t, _ in writes]
        first = [float(r.load_tensor(t)[0, 0]) for _, t, _ in writes]
    assert after == [9.0, 25.0] and first == [6.0, 10.0]


def test_check_verifies_each_write_file_against_its_row(tmp_path, device):
    a = dev(torch.full((32, 32), 2.0), device)
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(tensors="outputs")) as report:
        out = ttnn.add(a, a)
        ttnn.multiply(a, a, output_tensor=out)
    assert ttreport.check(report.path) == []
    ((rel,),) = rows(report, "SELECT file FROM tensor_writes")
    raw = bytearray((report.path / rel).read_bytes())
    raw[-40] ^= 0xFF  # one flipped byte in the stored values
    (report.path / rel).write_bytes(bytes(raw))
    faults = ttreport.check(report.path)
    assert len(faults) == 1 and f"tensor {out.tensor_id}" in faults[0] and "changed since the capture" in faults[0]


@pytest.mark.parametrize("native", [True, False], ids=["c-hook", "pure-python"])
def test_a_write_through_a_view_is_a_write_into_the_tensor_it_views_too(tmp_path, device, monkeypatch, native):
    # ttnn.view / a reshape-view shares its input's buffer (device_sim/views.py): an in-place op on the view
    # changes both, so both stored tensors get a file, and after_operation= reads 2.0 in each.
    from ttreport.capturing import recorder

    monkeypatch.setattr(recorder, "NATIVE", native and recorder.NATIVE)
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(tensors="outputs")) as report:
        base = ttnn.add(dev(torch.full((1, 64, 32), 0.5), device), 0.5)  # 1.0, stored
        view = ttnn.reshape(base, (2, 32, 32))  # a view over base's buffer: no write, no new file for base
        assert view.buffer_address() == base.buffer_address()
        ttnn.add_(view, 1.0)  # 2.0 in both
        ttnn.multiply(base, 3.0, output_tensor=base)  # 6.0 in both: a write into base shows through the view
    ops = [op for (op,) in rows(report, "SELECT operation_id FROM operations ORDER BY 1")]
    add_, mul = ops[-2], ops[-1]
    assert rows(report, "SELECT operation_id, tensor_id FROM tensor_writes ORDER BY 1, 2") == sorted(
        [(add_, base.tensor_id), (add_, view.tensor_id), (mul, base.tensor_id), (mul, view.tensor_id)])
    with ttreport.open(report.path) as r:
        for tid, shape in ((base.tensor_id, (1, 64, 32)), (view.tensor_id, (2, 32, 32))):
            held = [r.load_tensor(tid, after_operation=op) for op in (ops[1], add_, mul)]
            assert [tuple(v.shape) for v in held] == [shape] * 3
            assert [float(v.unique()) for v in held] == [1.0, 2.0, 6.0]
    assert ttreport.check(report.path) == []
