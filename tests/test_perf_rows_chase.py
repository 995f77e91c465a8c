"""The perf files' rows rendered while the writer process still writes (ops_perf.Chase), and kept by the close.

A capture's close starts a Chase before it waits for its writer process: the rows of the ops committed so far are
rendered on a thread while the writer writes the rest, and export_ops_perf(..., chased=chase) keeps them only if
nothing they were made from changed since. Here the chase runs over a finished capture's db, a range of a few ops
at a time, and what the close writes from it is compared byte for byte with one export of the whole report.
"""

import sqlite3
import time

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport.capturing import oplog
from ttreport.export import ops_perf


def model(device, *, concat: str | None = None):
    a = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    for _ in range(40):
        c = ttnn.add(a, b)
        ttnn.matmul(c, b)  # estimated on the model's thread: its device_perf row follows it in the log
    if concat is not None:  # three inputs after ops of two: every row so far needs one more tensor's columns
        ttnn.concat([a, b, c], dim=0)
        if concat == "before the last op":
            ttnn.add(a, b)


def capture(tmp_path, device, **kwargs):
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(perf_files=False)) as cap:
        model(device, **kwargs)
    return cap.path


def chased(path, monkeypatch):
    """A Chase over the report at `path`, run until it has rendered every op it may (all but the log's last)."""
    monkeypatch.setattr(ops_perf, "CHASE_OPS", 7)  # many ranges of a few ops
    chase = ops_perf.Chase(path / "db.sqlite", lambda: 1 << 30)  # as if the writer had a long way to go
    chase.begin()
    with ttreport.open(path) as r:
        last = r.execute("SELECT MAX(operation_id) FROM operation_graphs").fetchone()[0]
    deadline = time.monotonic() + 30
    while chase.rows.done < last - 1 and not chase.rows.stale and time.monotonic() < deadline:
        time.sleep(0.01)
    return chase


def export_both(path, chase, tmp_path):
    """The files the close writes with the chase's rows, and those of one export of the whole report."""
    with ttreport.open(path) as r:
        ops_perf.export_ops_perf(r, tmp_path / "closed", chased=chase)
        ops_perf.export_ops_perf(r, tmp_path / "whole")
    return [((tmp_path / "closed" / name).read_bytes(), (tmp_path / "whole" / name).read_bytes())
            for name in (ops_perf.PERF_FILE, ops_perf.DEVICE_LOG_FILE)]


def test_the_rows_chased_range_by_range_are_kept_and_equal_one_export(tmp_path, device, monkeypatch):
    path = capture(tmp_path, device)
    chase = chased(path, monkeypatch)
    assert chase.rows.done > 40  # it rendered most ops' rows, in ranges of 7
    with ttreport.open(path) as r:
        assert chase.rows_for(r) is chase.rows  # kept: nothing they were made from has changed
    for closed, whole in export_both(path, chase, tmp_path):
        assert closed == whole


def test_a_device_perf_row_committed_after_its_op_was_rendered_makes_the_close_render_all_anew(
        tmp_path, device, monkeypatch):
    path = capture(tmp_path, device)
    con = sqlite3.connect(path / "db.sqlite")
    matmul, *estimate = con.execute("SELECT * FROM device_perf WHERE operation_id = (SELECT MIN(operation_id) "
                                    "FROM operations WHERE name = 'ttnn.matmul')").fetchone()
    with con:
        con.execute("DELETE FROM device_perf WHERE operation_id = ?", (matmul,))  # not committed yet
    chase = chased(path, monkeypatch)
    assert chase.rows.done > matmul  # rendered with no estimate
    with con:  # the row comes with a later batch
        con.execute("INSERT INTO device_perf VALUES (?, ?, ?, ?, ?, ?)", (matmul, *estimate))
    con.close()
    with ttreport.open(path) as r:
        assert chase.rows_for(r) is None
    for closed, whole in export_both(path, chase, tmp_path):
        assert closed == whole


@pytest.mark.parametrize("where", ["before the last op", "the last op"])
def test_an_op_with_more_tensors_than_the_rows_so_far_makes_the_close_render_all_anew(
        tmp_path, device, monkeypatch, where):
    path = capture(tmp_path, device, concat=where)
    chase = chased(path, monkeypatch)
    # Before the last op, the chase reads the concat and stops; as the last op (never settled: its rows may
    # follow it in the log), the close reads it after the chased rows.
    assert chase.rows.stale == (where == "before the last op")
    for closed, whole in export_both(path, chase, tmp_path):
        assert closed == whole
    with open(tmp_path / "closed" / ops_perf.PERF_FILE) as f:
        assert "INPUT_2_W" in f.readline()


def test_a_capture_whose_model_waits_for_its_writer_writes_the_chased_rows_as_one_export_would(
        tmp_path, device, monkeypatch):
    # The model waits for the writer process every few hundred ops (a 128 KiB lag bound, looked at every 32 KiB
    # of log), and the chase renders meanwhile; then the close.
    monkeypatch.setattr(oplog, "LAG_BYTES", 128 << 10)
    monkeypatch.setattr(oplog, "PACE_BYTES", 32 << 10)
    waits = []
    wait_for_writer = oplog.LogSink._wait_for_writer
    monkeypatch.setattr(oplog.LogSink, "_wait_for_writer",
                        lambda sink, until: waits.append(until) or wait_for_writer(sink, until))
    with ttreport.capture(tmp_path / "r") as cap:
        a = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        for _ in range(3000):
            ttnn.add(a, a)
    assert waits and cap._chase.rows.done > 0  # it waited, and the chase rendered rows meanwhile
    # Whether the chase also wrote both files (once the writer had committed all) or the close rendered the rest
    # depends on which thread a loaded machine runs first; either way the files are one export's.
    assert cap._chase.written in (None, cap.path / ops_perf.PERF_FILE)
    with ttreport.open(cap.path) as r:
        ops_perf.export_ops_perf(r, tmp_path / "whole")
    for name in (ops_perf.PERF_FILE, ops_perf.DEVICE_LOG_FILE):
        assert (cap.path / name).read_bytes() == (tmp_path / "whole" / name).read_bytes()
