"""Tensor files with the op log (ttreport/capturing/log_tensors.py): a stored tensor's bytes go into the log with
its op, and the capture's tensor threads write the file from that record; the writer process writes only the files
no row followed (a killed model's). Values too big for the log, and every value once the disk runs low, reach the
threads without the log.

    .venv/bin/python -m pytest tests/test_log_tensors.py -q

(A SIGKILL of the model at a random op loses no tensor file of an op that returned: test_capture_process_writer.py;
with the threads held back, here.)
"""

import sqlite3

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport import Config, load_tensor
from ttreport.capturing import log_tensors
from ttreport.capturing.log_tensors import VALUES, FileWriter
from ttreport.capturing.records import FILE_LOST, META, OP, ROW, STOP


def model(device, n: int = 6):
    a = ttnn.from_torch(torch.randn(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    big = ttnn.from_torch(torch.randn(256, 256), dtype=ttnn.float32, layout=ttnn.TILE, device=device)  # 256 KiB
    outs = []
    for _ in range(n):
        a = ttnn.exp(ttnn.mul(a, 0.5))
        outs.append(a)
    outs.append(ttnn.add(big, 1.0))
    return outs


def stored(report) -> dict[int, str]:
    con = sqlite3.connect(report.path / "db.sqlite")
    try:
        return dict(con.execute("SELECT tensor_id, file FROM tensors WHERE file IS NOT NULL"))
    finally:
        con.close()


def test_the_tensor_threads_write_every_file_and_the_writer_process_none(tmp_path, device):
    with ttreport.capture(tmp_path / "r", config=Config(tensors="outputs", writer="process")) as report:
        outs = model(device)
    files = stored(report)
    assert [files[t.tensor_id] for t in outs] == [f"tensors/{t.tensor_id}.pt" for t in outs]
    for t in outs:
        assert torch.equal(load_tensor(report.path, t.tensor_id), t.value)  # checked against its tensor_files row
    # The 15 outputs (2 from_torch, 6 mul, 6 exp, the add), the two of 256 KiB among them (not through the log).
    assert report._storage.files_written == 15 and len(files) == 15 and report._storage.cpu_s > 0
    written = report._writer.tensor_files
    assert written["tensor_files_written"] == 0 and written["tensor_files_lost"] == 0
    assert not list((report.path / "tensors").glob(".*"))  # no temporary left behind


def test_with_a_smaller_cap_every_value_goes_to_the_tensor_thread_and_the_report_is_the_same(tmp_path, device,
                                                                                           monkeypatch):
    torch.manual_seed(0)
    with ttreport.capture(tmp_path / "log", config=Config(tensors="outputs", writer="process")) as by_log:
        model(device)
    monkeypatch.setattr(log_tensors, "LOG_VALUE_BYTES", 0)
    torch.manual_seed(0)
    with ttreport.capture(tmp_path / "thread", config=Config(tensors="outputs", writer="process")) as by_thread:
        model(device)
    assert by_log._storage.files_written == by_thread._storage.files_written == 15
    rows = []
    for report in (by_log, by_thread):
        con = sqlite3.connect(report.path / "db.sqlite")
        rows.append(con.execute("SELECT tensor_id, f.file_bytes, f.shape, f.dtype, t.file = 'tensors/' || tensor_id "
                                "|| '.pt' FROM tensors t JOIN tensor_files f USING (tensor_id) ORDER BY tensor_id"
                                ).fetchall())
        con.close()
    assert [r[1:] for r in rows[0]] == [r[1:] for r in rows[1]] and len(rows[0]) == 15
    for a, b in zip(*rows):  # the same values, from either writer's file
        assert torch.equal(load_tensor(by_log.path, a[0]), load_tensor(by_thread.path, b[0]))


def test_bin_files_are_written_by_the_tensor_threads_with_the_tensors_layout_and_memory(tmp_path, device):
    from device_sim import serialization

    with ttreport.capture(tmp_path / "r", config=Config(tensors="outputs", detach_saved_tensors=False)) as report:
        x = ttnn.from_torch(torch.randn(2, 40, 50), layout=ttnn.TILE, device=device, memory=ttnn.L1)
        y = ttnn.exp(x)
    assert report._storage.files_written == 2 and report._writer.tensor_files["tensor_files_written"] == 0
    back = serialization.load_tensor(report.path / "tensors" / f"{y.tensor_id}.bin", device=device)
    assert torch.equal(back.value, y.value) and (back.dtype, back.layout) == (y.dtype, y.layout)
    assert back.memory_config() == ttnn.L1
    assert torch.equal(load_tensor(report.path, y.tensor_id), y.value)


def test_a_file_that_cannot_be_written_clears_its_row_after_the_op_that_names_it(tmp_path):
    # Another thread's op may carry a value ahead of its own op's record, into the batch before: the loss is
    # repeated at the end of the next batch, after that op's row has set the file.
    (tmp_path / "tensors").write_text("a file where the folder must be")
    files = FileWriter(tmp_path)
    values = (VALUES, 7, "tensors/7.pt", "torch.float32", (2,), bytes(8), (), None)
    first = files.convert([values, (META, "k", 1)])
    assert first == [(META, "k", 1), (FILE_LOST, 7)]
    op = (OP, "ttnn.add")
    assert files.convert([op]) == [op, (FILE_LOST, 7)]
    assert files.convert([op]) == [op]
    assert "could not write tensor file tensors/7.pt" in files.error
    assert files.convert([(STOP, None)]) == [(META, "tensor_files_lost", 1), (META, "tensor_file_error", files.error),
                                            (STOP, None)]


def test_the_losses_add_to_the_tensor_threads_count_in_the_closing_notes(tmp_path):
    (tmp_path / "tensors").write_text("not a folder")
    files = FileWriter(tmp_path)
    files.convert([(VALUES, 7, "tensors/7@3.pt", "torch.float32", (2,), bytes(8), (3,), None)])  # a lost write
    assert files.convert([(META, "tensor_files_lost", "2"), (STOP, None)]) == [(META, "tensor_files_lost", 3),
                                                                                 (STOP, None)]


def test_values_written_are_the_rows_the_tensor_thread_makes(tmp_path):
    files = FileWriter(tmp_path)
    value = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3)
    data = value.view(torch.int16).numpy().tobytes()
    out = files.convert([(VALUES, 5, "tensors/5.pt", "torch.bfloat16", (2, 3), data, (), None),
                         (VALUES, 5, "tensors/5@9.pt", "torch.bfloat16", (2, 3), data, (9,), None),
                         (VALUES, 6, "tensors/6/", "torch.bfloat16", (2, 3), data, ("1.pt", 1), None)])
    assert [(r[0], r[1]) for r in out] == [(ROW, "tensor_files"), (ROW, "tensor_writes"), (ROW, "device_tensor_files")]
    assert out[1][2]["operation_id"] == 9 and out[1][2]["file"] == "tensors/5@9.pt" and out[2][2]["device_id"] == 1
    for rel, row in (("tensors/5.pt", out[0][2]), ("tensors/6/1.pt", out[2][2])):
        blob = (tmp_path / rel).read_bytes()
        assert (row["file_bytes"], row["shape"], row["dtype"]) == (len(blob), "[2, 3]", "torch.bfloat16")
        assert torch.equal(torch.load(tmp_path / rel, weights_only=True), value)


@pytest.mark.parametrize("native", [True, False], ids=["c-hook", "pure-python"])
def test_a_capture_stores_the_values_an_op_returned_not_later_ones(tmp_path, device, monkeypatch, native):
    # The log holds a copy made when the op returned: an in-place op after it gets a file of its own.
    from ttreport.capturing import recorder

    monkeypatch.setattr(recorder, "NATIVE", native and recorder.NATIVE)
    with ttreport.capture(tmp_path / "r", config=Config(tensors="outputs")) as report:
        a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        b = ttnn.add(a, a)
        before = b.value.clone()
        ttnn.add(a, a, output_tensor=b)
        ttnn.add(b, b, output_tensor=b)
    assert torch.equal(load_tensor(report.path, b.tensor_id), before)
    with ttreport.open(report.path) as r:
        assert torch.equal(r.load_tensor(b.tensor_id), before)
        assert torch.equal(r.load_tensor(b.tensor_id, after_operation=r.count_operations()), b.value)


def test_values_go_to_the_tensor_thread_when_the_free_space_cannot_be_read(tmp_path):
    # The model's thread must not fail an op over it: the tensor thread meets the same folder and records the loss.
    from ttreport.capturing.log_tensors import LogStorage
    from ttreport.capturing.oplog import LogQueue, LogSink
    from ttreport.storage import TensorStore

    sink = LogSink(tmp_path / "log")
    store = TensorStore(tmp_path / "gone", LogQueue(sink))
    storage = LogStorage(sink, store, tmp_path / "gone")
    item = (5, "tensors/5.pt", torch.ones(4), None, None, None)
    storage.put_with_op([item])
    assert sink._pending == [] and store.queue.get_nowait() == item
    assert "cannot be read" in storage.room.low
    sink.close()


@pytest.mark.parametrize("native", [True, False], ids=["c-hook", "pure-python"])  # each one's store path
def test_a_long_capture_forgets_the_stored_tensors_that_are_gone(tmp_path, device, monkeypatch, native):
    from ttreport.capturing import recorder

    monkeypatch.setattr(recorder, "PRUNE_STORED_AT", 64)
    monkeypatch.setattr(recorder, "NATIVE", native and recorder.NATIVE)
    a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    largest = 0
    with ttreport.capture(tmp_path / "r", config=Config(tensors="outputs")) as report:
        kept = ttnn.add(a, a)  # stored, and alive to the end
        for _ in range(1000):
            x = ttnn.add(a, a)  # stored, then gone at the next iteration
            largest = max(largest, len(report.recorder._stored_values))
        ttnn.mul(a, 3.0, output_tensor=kept)  # a write into a tensor stored 1,000 outputs (and many prunes) ago
        assert report.recorder._stored_values.keys() <= report.recorder._stored
    assert largest <= 64 and len(report.recorder._stored) < 64
    assert torch.equal(load_tensor(report.path, x.tensor_id), torch.full((32, 32), 2.0, dtype=torch.bfloat16))
    con = sqlite3.connect(report.path / "db.sqlite")
    try:
        assert con.execute("SELECT COUNT(*) FROM tensor_files").fetchone()[0] == 1001  # kept and every x
        writes = con.execute("SELECT tensor_id FROM tensor_writes").fetchall()
    finally:
        con.close()
    assert writes == [(kept.tensor_id,)]  # still known as stored: its new values are a write, its file unchanged
    assert torch.equal(load_tensor(report.path, kept.tensor_id), torch.full((32, 32), 2.0, dtype=torch.bfloat16))


def _values(tid: int, extra=(), path=None) -> tuple:
    value = torch.arange(6, dtype=torch.float32)
    return (VALUES, tid, path or f"tensors/{tid}.pt", "torch.float32", (6,), value.numpy().tobytes(), extra, None)


def test_once_the_model_writes_the_files_a_value_whose_row_follows_is_not_written_again(tmp_path):
    files = FileWriter(tmp_path)
    row = (ROW, "tensor_files", {"tensor_id": 5, "file_bytes": 1, "crc32": 2, "shape": "[6]", "dtype": "torch.float32"})
    out = files.convert([(META, log_tensors.BY_MODEL, 1), _values(5), (OP, "ttnn.add"), row])
    assert out == [(OP, "ttnn.add"), row]  # the note and the record are the writer's own
    assert files.convert([(STOP, None)]) == [(STOP, None)]
    assert files.files_written == 0 and not (tmp_path / "tensors").exists()


def test_the_values_no_row_followed_are_written_at_the_logs_end(tmp_path):
    # A killed model's threads had not written these: the log's end (its STOP, or the end of a killed capture's
    # log: notes()) writes them, each file whole, with the row the threads would have made.
    files = FileWriter(tmp_path)
    write_row = (ROW, "tensor_writes", {"tensor_id": 5, "operation_id": 9, "file": "tensors/5@9.pt"})
    assert files.convert([(META, log_tensors.BY_MODEL, 1), _values(5), _values(5, (9,), "tensors/5@9.pt"),
                          _values(6, ("0.pt", 0), "tensors/6/"), _values(6, ("1.pt", 1), "tensors/6/"),
                          write_row]) == [write_row]
    out = files.notes()
    assert sorted((r[1], r[2]["tensor_id"], r[2].get("device_id")) for r in out) == [
        ("device_tensor_files", 6, 0), ("device_tensor_files", 6, 1), ("tensor_files", 5, None)]
    for rel in ("tensors/5.pt", "tensors/6/0.pt", "tensors/6/1.pt"):
        assert torch.equal(torch.load(tmp_path / rel, weights_only=True), torch.arange(6, dtype=torch.float32))
    assert not (tmp_path / "tensors" / "5@9.pt").exists()  # its row came: the threads' file
    assert files.notes() == [] and files.files_written == 3
    (tmp_path / "stop").mkdir()
    again = FileWriter(tmp_path / "stop")
    out = again.convert([(META, log_tensors.BY_MODEL, 1), _values(7), (STOP, None)])
    assert [r[:2] for r in out] == [(ROW, "tensor_files"), (STOP, None)]


def test_a_file_the_threads_lost_is_not_written_by_the_writer_process(tmp_path):
    files = FileWriter(tmp_path)
    out = files.convert([(META, log_tensors.BY_MODEL, 1), _values(6, ("0.pt", 0), "tensors/6/"),
                         _values(6, ("1.pt", 1), "tensors/6/"), (FILE_LOST, 6)])
    assert out == [(FILE_LOST, 6)] and files.notes() == [] and not (tmp_path / "tensors").exists()


def test_a_log_without_the_note_has_its_files_written_as_they_come(tmp_path):
    # A log of an earlier ttreport, rebuilt by a reader: no thread of the model wrote its files.
    out = FileWriter(tmp_path).convert([_values(5), (OP, "ttnn.add")])
    assert [r[:2] for r in out] == [(ROW, "tensor_files"), (OP, "ttnn.add")] and (tmp_path / "tensors/5.pt").exists()



def test_a_tensors_folder_removed_while_it_is_held_open_is_made_again_and_a_file_there_is_refused(tmp_path):
    # The folder is held open (storage.TensorFolder); a cleanup job's rm -rf must not lose the files that follow.
    import shutil

    files = FileWriter(tmp_path)
    assert [r[:2] for r in files.convert([_values(5)])] == [(ROW, "tensor_files")]
    shutil.rmtree(tmp_path / "tensors")
    assert [r[:2] for r in files.convert([_values(6)])] == [(ROW, "tensor_files")]
    assert torch.equal(torch.load(tmp_path / "tensors" / "6.pt", weights_only=True), torch.arange(6.0))
    shutil.rmtree(tmp_path / "tensors")
    (tmp_path / "tensors").write_text("a file where the folder must be")
    assert files.convert([_values(7)]) == [(FILE_LOST, 7)]
    assert "tensors is not a folder of the report's but a file or a link" in files.error
    assert files.files_written == 2 and files.files_lost == 1


def test_a_file_planted_under_the_threads_temporary_name_is_left_alone_and_the_value_still_written(tmp_path):
    # The temporary name is the thread's own (made new: O_EXCL|O_NOFOLLOW); one already there gives way to a random one.
    import os
    import threading

    (tmp_path / "tensors").mkdir()
    planted = tmp_path / "tensors" / f".5.pt.{os.getpid()}_{threading.get_ident()}.tmp"
    planted.write_bytes(b"someone else's")
    out = FileWriter(tmp_path).convert([_values(5)])
    assert [r[:2] for r in out] == [(ROW, "tensor_files")] and planted.read_bytes() == b"someone else's"
    assert torch.equal(torch.load(tmp_path / "tensors" / "5.pt", weights_only=True), torch.arange(6.0))
    assert sorted(p.name for p in (tmp_path / "tensors").iterdir()) == sorted(["5.pt", planted.name])

HELD_BACK = r"""
import json, os, pathlib, signal, sys, threading
import torch
import device_sim as ttnn
import ttreport

dev = ttnn.open_device(0)
report = pathlib.Path(sys.argv[1])
cap = ttreport.capture(report, config=ttreport.Config(tensors="outputs"))
cap.start()
gate = threading.Event()
write = cap._storage.write_values
cap._storage.write_values = lambda rec: gate.wait() and write(rec)  # the tensor threads write nothing
a = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
outs = [ttnn.add(a, a) for _ in range(50)] + [ttnn.exp(a)]
ids = [t.tensor_id for t in outs]
torch.save({i: t.value for i, t in zip(ids, outs)}, report.parent / "values.pt")
print(json.dumps(ids), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_sigkill_while_the_tensor_threads_are_behind_loses_no_file(tmp_path):
    # The threads of the killed model wrote none of the 52 files: the writer process writes them from the log.
    import json
    import subprocess
    import sys
    import time

    from ttreport.folder import capture_holds

    script = tmp_path / "model.py"
    script.write_text(HELD_BACK)
    report = tmp_path / "r"
    proc = subprocess.run([sys.executable, str(script), str(report)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -9, proc.stderr
    ids = json.loads(proc.stdout)
    deadline = time.monotonic() + 60
    while capture_holds(report):  # the writer process notices its parent is gone, and finishes the report
        assert time.monotonic() < deadline
        time.sleep(0.05)
    values = torch.load(tmp_path / "values.pt", weights_only=True)
    with ttreport.open(report) as r:
        assert r.count_operations() == 52
        for tid in ids:
            assert torch.equal(r.load_tensor(tid), values[tid])  # checked against the row the writer made
    assert not list((report / "tensors").glob(".*"))


def test_a_row_or_loss_in_a_later_batch_of_plain_records_still_ends_its_values_wait(tmp_path):
    # convert passes a batch of none of the tags it acts on as it is; while values wait, a row and a loss are such
    # tags: a batch of ops and the row of an earlier batch's values must still end the wait (no file written).
    files = FileWriter(tmp_path)
    row = (ROW, "tensor_files", {"tensor_id": 5, "file_bytes": 1, "crc32": 2, "shape": "[6]", "dtype": "torch.float32"})
    op = (OP, "ttnn.add")
    assert files.convert([(META, log_tensors.BY_MODEL, 1), _values(5), _values(6)]) == []
    plain = [op, op]
    assert files.convert(plain) is plain  # nothing to act on: the batch as it is
    assert files.convert([op, row]) == [op, row]
    assert files.convert([(FILE_LOST, 6), op]) == [(FILE_LOST, 6), op]
    assert files.notes() == [] and files.files_written == 0 and not (tmp_path / "tensors").exists()
