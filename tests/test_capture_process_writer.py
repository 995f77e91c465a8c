"""Config(writer="process"): the op log and the writer process (ttreport.capturing: oplog, writer_process).

The model's process appends records to the op log; a real writer process writes SQLite. These tests
run real captures in real subprocesses, kill them with real SIGKILLs, and read the reports back.
"""

import json
import marshal
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from report_tables import tables

import ttreport
from ttreport.capturing import oplog
from ttreport.capturing.oplog import LogSink, LogTail
from ttreport.capturing.records import META, OP, STOP

REPO = Path(__file__).resolve().parent.parent

MODEL = r"""
import json, os, pathlib, sys
import torch
import device_sim as ttnn
import ttreport

job = json.loads(sys.argv[1])
torch.manual_seed(0)
dev = ttnn.open_device(0)
cfg = ttreport.Config(tensors=job.get("tensors", "none"), buffer_pages=job.get("pages", False), device_graphs=True)
with ttreport.capture(pathlib.Path(job["report"]), config=cfg) as cap:
    if job.get("tell_pids"):
        print("pids", os.getpid(), cap._writer.pid, flush=True)
    a = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    b = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    print("op", 2, flush=True)
    for i in range(job["ops"]):
        c = ttnn.add(a, b, memory_config=ttnn.L1_MEMORY_CONFIG)
        hifi2 = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi2)
        d = ttnn.matmul(c, b, compute_kernel_config=hifi2)
        e = ttnn.softmax(d, dim=-1)
        f = ttnn.concat([e, a], dim=0)
        g = ttnn.reshape(f, (2, 64, 64))
        ttnn.deallocate(c)
        for _ in range(job.get("burst", 0)):  # more ops (and stored outputs) a step
            ttnn.add(a, b)
        print("op", 2 + (6 + job.get("burst", 0)) * (i + 1), flush=True)  # after the ops returned: each is recorded
    try:
        ttnn.add(a, torch.zeros(3))
    except TypeError:
        pass
ttnn.close_device(dev)
"""

# Columns that differ between two runs of the same model: clocks, and a .pt file's CRC (torch's zip holds a
# random serialization id; the tensor thread that writes the files is the same in both modes).


def _start(tmp_path: Path, report: Path, *, pure: bool = False, **job) -> subprocess.Popen:
    job = {"report": str(report), "ops": 20, **job}
    script = tmp_path / "model.py"
    script.write_text(MODEL)
    env = {**os.environ, "TTREPORT_PURE": "1" if pure else ""}  # the pure recorder: the C hook's specification
    return subprocess.Popen([sys.executable, str(script), json.dumps(job)], cwd=REPO, stdout=subprocess.PIPE,
                            text=True, env=env)


def _run(tmp_path: Path, report: Path, **job) -> None:
    proc = _start(tmp_path, report, **job)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out


def _ops(report: Path) -> int:
    with ttreport.open(report) as r:
        return r.count_operations()


def _wait_unlocked(report: Path, timeout_s: float = 60) -> None:
    from ttreport.folder import capture_holds

    deadline = time.monotonic() + timeout_s
    while capture_holds(report):
        assert time.monotonic() < deadline, f"{report} still locked after {timeout_s} s"
        time.sleep(0.05)


def test_the_c_hook_and_the_pure_recorder_write_the_same_rows_with_pages_and_stored_outputs(tmp_path):
    # One writer route (issue 32): the pure-Python recorder is the C hook's specification, through the same writer
    for name, pure in (("pure", True), ("process", False)):
        _run(tmp_path, tmp_path / name, tensors="outputs", pages=True, pure=pure)
    pure, process = tables(tmp_path / "pure" / "db.sqlite"), tables(tmp_path / "process" / "db.sqlite")
    assert pure.keys() == process.keys()
    for table in pure:
        assert process[table] == pure[table], table
    assert len(pure["operations"]) == 2 + 6 * 20 + 1
    assert pure["errors"] and pure["device_perf"] and pure["captured_graph"] and pure["buffer_pages"]
    assert not (tmp_path / "process" / "oplog").exists()  # the log is deleted once the report holds it all
    with ttreport.open(tmp_path / "process") as r:
        assert r.status == "complete"


def test_flush_makes_every_op_so_far_readable_while_the_process_writer_runs(tmp_path):
    import torch

    import device_sim as ttnn

    dev = ttnn.open_device(0)
    try:
        with ttreport.capture(tmp_path / "r", config=ttreport.Config(writer="process", flush_interval_s=60)) as cap:
            a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
            for _ in range(30):
                a = a + 1
            cap.flush(timeout=60)
            con = sqlite3.connect(f"file:{tmp_path / 'r' / 'db.sqlite'}?mode=ro", uri=True)
            assert con.execute("SELECT COUNT(*) FROM operations").fetchone()[0] == 31
            con.close()
    finally:
        ttnn.close_device(dev)
    assert cap.status == "complete"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sigkill_at_a_random_op_loses_no_op_recorded_before_it(tmp_path, seed):
    report = tmp_path / "r"
    proc = _start(tmp_path, report, ops=400)
    kill_after = random.Random(seed).randint(3, 300)
    seen = 0
    for line in proc.stdout:
        seen = int(line.split()[1])
        if seen >= kill_after:
            proc.send_signal(signal.SIGKILL)  # the ops printed so far have returned: they must all be there
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    _wait_unlocked(report)  # the writer process finishes the report from the log, then lets the folder go
    assert not (report / "oplog").exists()
    con = sqlite3.connect(report / "db.sqlite")
    ops = con.execute("SELECT COUNT(*) FROM operations").fetchone()[0]
    meta = dict(con.execute("SELECT key, value FROM report_metadata"))
    con.close()
    assert ops >= seen
    assert meta["status"] == "running" and "killed" in meta["log_finished"]
    with ttreport.open(report) as r:
        assert "no process is capturing it" in r.status_text
        assert r.count_operations() == ops


def _kill_model_and_writer_after_op_150(tmp_path: Path, report: Path, **job) -> int:
    """Run the model (400 ops); once op 150 has returned, SIGKILL its writer process, then it. The last op seen."""
    proc = _start(tmp_path, report, ops=400, tell_pids=True, **job)
    model_pid, writer_pid = map(int, proc.stdout.readline().split()[1:])
    seen = 0
    for line in proc.stdout:
        seen = int(line.split()[1])
        if seen >= 150:
            os.kill(writer_pid, signal.SIGKILL)
            os.kill(model_pid, signal.SIGKILL)
            break
    proc.wait(timeout=60)
    _wait_unlocked(report)
    return seen


def test_a_report_whose_writer_process_was_killed_too_is_rebuilt_from_the_log_on_open(tmp_path):
    report = tmp_path / "r"
    seen = _kill_model_and_writer_after_op_150(tmp_path, report)
    assert (report / "oplog").is_dir()  # nobody finished it
    assert _ops(report) >= seen  # opening it rebuilt the db from the whole log
    assert not (report / "oplog").exists()
    with ttreport.open(report) as r:
        assert r.status == "running" and "reader" in r.metadata["log_finished"]
        assert r.sql("SELECT COUNT(*) AS n FROM stack_traces")[0]["n"] == r.count_operations()


def _every_output_file_loads(report: Path, seen: int) -> int:
    """Every output of the ops up to `seen` has its file, whole (load_tensor checks its recorded CRC-32); the count."""
    with ttreport.open(report) as r:
        rows = r.sql("SELECT t.tensor_id, t.file FROM output_tensors o JOIN tensors t USING (tensor_id) "
                     "WHERE o.operation_id <= ?", (seen,))
    assert rows and all(row["file"] for row in rows), [row for row in rows if not row["file"]]
    for row in rows:
        ttreport.load_tensor(report, row["tensor_id"])
    return len(rows)


@pytest.mark.parametrize("seed", [4, 5])
def test_sigkill_loses_no_tensor_file_of_an_op_that_returned(tmp_path, seed):
    # With the writer process a stored output's bytes are in the op log when its op returns (log_tensors.py):
    # the writer process writes the files of the ops before the kill.
    report = tmp_path / "r"
    # 40 adds a step: a tensor thread in the model's process (before log_tensors.py) was then files behind at
    # any kill, and lost them.
    proc = _start(tmp_path, report, tensors="outputs", ops=100, burst=40)
    kill_after = random.Random(seed).randint(3, 3000)
    seen = 0
    for line in proc.stdout:
        seen = int(line.split()[1])
        if seen >= kill_after:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    _wait_unlocked(report)
    assert not (report / "oplog").exists()
    assert _every_output_file_loads(report, seen) >= 2 + (seen - 2) // 46 * 45  # all but deallocate have one


def test_a_reader_that_rebuilds_a_killed_report_writes_its_tensor_files_too(tmp_path):
    report = tmp_path / "r"
    seen = _kill_model_and_writer_after_op_150(tmp_path, report, tensors="outputs")
    assert (report / "oplog").is_dir()
    assert _every_output_file_loads(report, seen) >= 2 + (seen - 2) // 6 * 5  # opening it rebuilt db and files
    assert not (report / "oplog").exists() and not list((report / "tensors").glob(".*"))


def test_a_torn_record_at_the_end_of_the_log_is_ignored(tmp_path):
    sink = LogSink(tmp_path / "log")
    for i in range(5):
        sink.append((META, f"key{i}", i))
    sink.close()
    segment = tmp_path / "log" / "000001.seg"
    data = bytearray(segment.read_bytes())
    payload = marshal.dumps([(META, "key5", 5)])
    end = data.index(b"\x00" * 64)
    data[end:end + 4] = len(payload).to_bytes(4, "little")  # a length whose payload the kill cut short
    data[end + 4:end + 8] = payload[:4]
    segment.write_bytes(bytes(data))
    tail = LogTail(tmp_path / "log")
    records, more = tail.read(100)
    assert [r[1] for r in records] == [f"key{i}" for i in range(5)]
    assert not more and tail.torn


def test_records_continue_across_log_segments(tmp_path, monkeypatch):
    for name, value in (("SEGMENT_BYTES", 4096), ("MIN_SEGMENT_BYTES", 4096), ("RESERVE_BYTES", 512)):
        monkeypatch.setattr(oplog, name, value)
    sink = LogSink(tmp_path / "log")
    for i in range(1000):
        sink.append((META, "k", "x" * (i % 50)))
    sink.append((STOP, None))
    sink.close()
    assert len(list((tmp_path / "log").glob("*.seg"))) > 5
    records, _ = LogTail(tmp_path / "log").read(5000)
    assert len(records) == 1001 and records[-1][0] == STOP and records[999] == (META, "k", "x" * 49)
    assert all(r[0] != OP for r in records)


def test_overwrite_removes_a_killed_process_writers_log(tmp_path):
    report = tmp_path / "r"
    _run(tmp_path, report, ops=1)
    shutil.rmtree(report / "oplog", ignore_errors=True)
    (report / "oplog").mkdir()
    (report / "oplog" / "000001.seg").write_bytes(b"\x00" * 64)
    (report / "oplog" / "notes.txt").write_text("mine")
    with ttreport.capture(report, config=ttreport.Config(writer="process", overwrite=True)):
        pass
    assert sorted(p.name for p in (report / "oplog").iterdir()) == ["notes.txt"]  # only what a capture wrote


def test_the_demo_with_golden_checks_writes_the_same_report_through_the_c_hook_and_the_pure_recorder(tmp_path):
    # Only the hook differs (recorder.NATIVE): TTREPORT_PURE=1 would swap the comparison's own accelerator too
    for name, native in (("thread", False), ("process", True)):  # "thread": the pure recorder's (names stay short)
        code = (f"from ttreport.capturing import recorder; recorder.NATIVE = recorder.NATIVE and {native}; "
                f"from ttreport.demo import capture_demo; capture_demo({str(tmp_path / name)!r})")
        subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True, timeout=300)
    thread, process = tables(tmp_path / "thread" / "db.sqlite"), tables(tmp_path / "process" / "db.sqlite")
    # The golden thread's host tensors number their specs in the order its records meet the ops' (timing, in
    # both recorders): the specs' texts must match, not their numbers.
    for rows in (thread, process):
        rows["tensor_specs"] = sorted(row[1:] for row in rows.pop("tensor_specs"))
        rows["tensors"] = [row[:-2] + row[-1:] for row in rows["tensors"]]  # spec_id: second from the end
    for table in thread:
        assert process[table] == thread[table], table
    assert thread["device_perf"] and thread["local_tensor_comparison_records"] and thread["errors"]


FORKING = r"""
import json, os, pathlib, sys
import torch
import device_sim as ttnn
import ttreport

dev = ttnn.open_device(0)
with ttreport.capture(pathlib.Path(sys.argv[1]), config=ttreport.Config(writer="process")) as cap:
    a = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=dev)
    for _ in range(10):
        a = a + 1
    pid = os.fork()
    if pid == 0:  # its ops must not reach the parent's log (the log's mmap is shared with the parent)
        b = a
        for _ in range(500):
            b = b + 1
        os._exit(0 if b.to_torch()[0, 0].item() == 511.0 else 1)
    child_exit = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    for _ in range(10):
        a = a + 1
print(json.dumps({"child_exit": child_exit, "status": cap.status}), flush=True)
"""


def test_a_child_forked_during_a_process_writer_capture_leaves_the_parents_log_alone(tmp_path):
    (tmp_path / "forking.py").write_text(FORKING)
    out = subprocess.run([sys.executable, str(tmp_path / "forking.py"), str(tmp_path / "r")], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout) == {"child_exit": 0, "status": "complete"}
    with ttreport.open(tmp_path / "r") as r:
        assert r.count_operations() == 21  # from_torch and 20 adds: the parent's, none of the child's
        assert [o["operation_id"] for o in r.sql("SELECT operation_id FROM operations")] == list(range(1, 22))


def test_a_full_disk_stops_the_op_log_without_crashing_the_model_and_counts_the_loss(tmp_path, device):
    import contextlib
    import warnings

    import torch
    from test_crash import tmpfs

    import device_sim as ttnn

    with tmpfs(tmp_path / "4m", "4m") as disk, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ttreport.capture(disk / "full", config=ttreport.Config(writer="process", device_graphs=False)) as cap:
            a = ttnn.from_torch(torch.zeros(64, 64), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
            for _ in range(100):
                a = a + 1
            cap.flush(timeout=120)
            fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
            with contextlib.suppress(OSError), os.fdopen(fd, "wb", buffering=0) as filler:
                while filler.write(b"x" * 4096):
                    pass
            for _ in range(20_000):  # a page of a sparse log written on a full disk would be SIGBUS here
                a = a + 1
        assert a.to_torch()[0, 0].item() == 20_100  # the model ran to its end
        lost = [str(w.message) for w in caught if issubclass(w.category, ttreport.ReportIncompleteWarning)]
        assert len(lost) == 1 and "op log" in lost[0], lost
        (disk / "filler").unlink()
        with ttreport.open(cap.path) as r:
            kept, meta = r.count_operations(), r.metadata
        assert kept >= 101 and kept + int(meta["ops_lost"]) == 20_101, (kept, meta)
        # Whichever met the full disk first: the db (the writer process's SQLite) or the log (this process).
        assert meta["status"] == "complete" and ("full" in meta["writer_error"] or "No space" in meta["writer_error"])
        assert not (cap.path / "oplog").exists()  # the writer process reached STOP: its losses are counted


def test_a_mesh_op_gets_its_device_time(tmp_path):
    # The thread writer's recorder estimated every op on the model's thread; the writer process models no mesh
    # (log_perf.LogPerf.row), and mesh ops had none there: they are estimated on the model's thread now.
    import torch

    import device_sim as ttnn

    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 2))
    try:
        x = ttnn.from_torch(torch.ones(1, 1, 32, 64), layout=ttnn.TILE, device=mesh,
                            mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
        with ttreport.capture(tmp_path / "r") as cap:
            ttnn.all_gather(ttnn.add(x, x), dim=3)
    finally:
        ttnn.close_mesh_device(mesh)
    with ttreport.open(cap.path) as r:
        rows = r.sql("SELECT o.name, p.ideal_ns FROM operations o LEFT JOIN device_perf p USING (operation_id) "
                     "ORDER BY o.operation_id")
    assert [row["name"] for row in rows] == ["ttnn.add", "ttnn.all_gather"]
    assert all(row["ideal_ns"] and row["ideal_ns"] > 0 for row in rows), rows
