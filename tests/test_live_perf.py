"""The writer process writes the perf files as its batches commit (ttreport/capturing/live_perf.py).

Its files must be the exporter's, byte for byte: each test captures with the writer process, then
writes the files again from the finished db with export_ops_perf (itself held to the plain exporter
by test_ops_perf_identical.py) and compares. Where the live files cannot follow (a wider op after
the rows it has rendered, a row emitted into a table they read), the capture writes them from the
db at close as before: the bytes are the same, and the writer's result says why.

    .venv/bin/python -m pytest tests/test_live_perf.py -q
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport.capturing import live_perf
from ttreport.export import ops_perf
from ttreport.export.ops_perf import DEVICE_LOG_FILE, PERF_FILE

REPO = Path(__file__).resolve().parent.parent


def model(device, n: int, *, concat_at: int | None = None) -> None:
    """Adds, matmuls (their estimate is made on the model's thread and comes after the op), linear (an op
    with nested ops: the parent commits after its children), deallocate (no estimate), failing adds (no
    estimate) and host tensors."""
    a = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device,
                        memory_config=ttnn.L1)
    for i in range(n):
        c = ttnn.add(a, b)
        d = ttnn.matmul(a, c)
        e = ttnn.linear(a, d, bias=b, activation="relu") if i % 3 == 0 else ttnn.relu(d)
        ttnn.deallocate(c)
        if i == concat_at:
            ttnn.concat([a, b, e, a], dim=0)
        if i % 7 == 0:
            with pytest.raises(Exception):  # noqa: B017, PT011 - any refusal: an op with an error and no estimate
                ttnn.add(a, ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE,
                                            device=device))
            ttnn.to_torch(ttnn.from_torch(torch.randn(3, 5)))


def capture(path: Path, device, n: int, **kwargs):
    config = ttreport.Config(writer="process", flush_ops=kwargs.pop("flush_ops", 2000))
    with ttreport.capture(path, config=config) as cap:
        model(device, n, **kwargs)
    return cap


def assert_exporters_bytes(report: Path, tmp_path: Path) -> str:
    with ttreport.open(report) as r:
        ops_perf.export_ops_perf(r, tmp_path / "exported")
    for name in (PERF_FILE, DEVICE_LOG_FILE):
        assert (report / name).read_bytes() == (tmp_path / "exported" / name).read_bytes(), name
    return (report / PERF_FILE).read_text()


def test_the_writer_process_writes_the_exporters_bytes_as_ops_commit(tmp_path, device):
    cap = capture(tmp_path / "r", device, 40, concat_at=20)
    result = cap._writer.result
    assert result["perf_files"] is True and result["perf_files_why"] is None
    text = assert_exporters_bytes(cap.path, tmp_path)
    assert "INPUT_3_MEMORY" in text.splitlines()[0]  # the concat of four, after rows of narrower ops
    assert not (cap.path / "oplog").exists()


def test_batches_of_a_few_records_split_ops_from_their_estimates_and_children_from_parents(tmp_path, device):
    cap = capture(tmp_path / "r", device, 30, flush_ops=3)
    assert cap._writer.result["perf_files"] is True
    text = assert_exporters_bytes(cap.path, tmp_path)
    assert ",matmul," not in text and "\nmatmul," in text and "\nlinear," in text


def test_more_ops_than_it_holds_back_are_written_as_they_commit(tmp_path, device, monkeypatch):
    monkeypatch.setattr(live_perf, "HOLD_ROWS", 8)  # the fork inherits it
    monkeypatch.setattr(live_perf, "MAX_TENSORS", 6)  # tensors it dropped are read back from the db when named
    cap = capture(tmp_path / "r", device, 40, flush_ops=50)
    assert cap._writer.result["perf_files"] is True
    assert_exporters_bytes(cap.path, tmp_path)


def test_a_wider_op_after_the_rows_it_wrote_leaves_the_files_to_the_exporter(tmp_path, device, monkeypatch):
    monkeypatch.setattr(live_perf, "HOLD_ROWS", 8)
    cap = capture(tmp_path / "r", device, 30, concat_at=25, flush_ops=50)
    result = cap._writer.result
    assert result["perf_files"] is False and "widest op (3, 1 -> 4, 1)" in result["perf_files_why"]
    text = assert_exporters_bytes(cap.path, tmp_path)
    assert "INPUT_3_MEMORY" in text.splitlines()[0]
    assert not (cap.path / "oplog").exists()  # its part files went with the log


def test_a_row_emitted_into_a_table_the_files_read_leaves_them_to_the_exporter(tmp_path, device):
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(writer="process")) as cap:
        model(device, 5)
        cap.recorder.emit("input_tensors", {"operation_id": 3, "input_index": 9, "tensor_id": 1})
        model(device, 5)
    result = cap._writer.result
    assert result["perf_files"] is False and "input_tensors row from outside the ops" in result["perf_files_why"]
    assert_exporters_bytes(cap.path, tmp_path)


def test_golden_checks_host_tensors_and_comparison_rows_keep_the_exporters_bytes(tmp_path, device):
    config = ttreport.Config(writer="process", comparison="local", flush_ops=7)
    with ttreport.capture(tmp_path / "r", config=config) as cap:
        model(device, 10)
    assert cap._writer.result["perf_files"] is True
    with ttreport.open(cap.path) as r:
        assert r.sql("SELECT COUNT(*) AS n FROM tensor_comparisons")[0]["n"] > 0
    assert_exporters_bytes(cap.path, tmp_path)


def test_perf_files_off_leaves_the_writer_process_without_them(tmp_path, device):
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(writer="process", perf_files=False)) as cap:
        model(device, 3)
    assert "perf_files" not in cap._writer.result
    assert not (cap.path / PERF_FILE).exists() and not (cap.path / DEVICE_LOG_FILE).exists()


KILLED = r"""
import os, pathlib, signal, sys, torch
import device_sim as ttnn, ttreport
from ttreport.capturing import live_perf
live_perf.HOLD_ROWS = 4  # parts on disk before the kill
dev = ttnn.open_device(0)
cap = ttreport.capture(pathlib.Path(sys.argv[1]), config=ttreport.Config(writer="process", flush_ops=5)).start()
a = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
for _ in range(50):
    ttnn.add(a, a)
cap.flush()
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_capture_gets_no_perf_files_and_leaves_no_parts(tmp_path):
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "r")], cwd=REPO, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    import time

    from ttreport.folder import capture_holds

    deadline = time.monotonic() + 60
    while capture_holds(tmp_path / "r"):  # the writer process finishes the report from the log
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert not (tmp_path / "r" / PERF_FILE).exists()  # as before: a killed capture's are `ttreport perf-csv`'s
    assert not (tmp_path / "r" / "oplog").exists()
    with ttreport.open(tmp_path / "r") as r:
        assert r.count_operations() == 51


def test_a_killed_writer_processes_parts_go_with_its_log(tmp_path):
    log = tmp_path / "r" / "oplog"
    log.mkdir(parents=True)
    for name in live_perf.PARTS:
        (log / name).write_text("rows")
    from ttreport.capturing.oplog import remove_log

    remove_log(log)
    assert not log.exists()
    assert os.listdir(tmp_path / "r") == []
