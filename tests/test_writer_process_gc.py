"""The writer process takes its batches out of the cyclic collector's sight (gc.freeze() after each);
rebuilding a report from its log in a reader's process only pauses the collector (freezing would take
the reader's own objects out of its sight too).

    .venv/bin/python -m pytest tests/test_writer_process_gc.py -q
"""

import gc
import os
import sqlite3

import torch

import device_sim as ttnn
import ttreport
from ttreport import recovery
from ttreport.capturing import writer_process


def test_rebuilding_a_report_from_its_log_freezes_none_of_the_readers_objects(tmp_path, device, monkeypatch):
    monkeypatch.setattr(writer_process, "remove_finished_log", lambda log, step=None: None)  # kept, as after a kill
    a = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with ttreport.capture(tmp_path / "run", config=ttreport.Config(writer="process", perf_files=False)) as cap:
        for _ in range(50):
            a = ttnn.add(a, a)
    (tmp_path / "run" / "db.sqlite").unlink()  # rebuilt from the log alone
    frozen = gc.get_freeze_count()
    assert recovery.finish_from_log(cap.path)
    assert gc.get_freeze_count() == frozen and gc.isenabled()  # paused while it ran, on again
    with sqlite3.connect(cap.db_path) as con:
        assert con.execute("SELECT COUNT(*) FROM operations").fetchone()[0] == 50


def test_the_writer_process_writes_every_batch_with_its_caches_frozen(tmp_path, device):
    # flush_ops=3: dozens of batches, each frozen after it; the report is whole and the writer process said so
    a = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    config = ttreport.Config(writer="process", perf_files=False, flush_ops=3)
    with ttreport.capture(tmp_path / "run", config=config) as cap:
        for _ in range(60):
            a = ttnn.add(a, a)
    assert cap.status == "complete"
    said = {k: v for k, v in cap._writer.result.items() if not k.startswith("tensor_")}  # no tensor files here
    assert 0 <= said.pop("db_close_s") < 60  # the close's own time, which bench 11 prints
    said.pop("db_close_parts")  # its steps' times: tests/test_writer_close.py
    assert said == {"error": None, "records_lost": 0, "ops_lost": 0, "records_written": cap._writer.records_written}
    assert cap._writer.tensor_files["tensor_files_written"] == 0
    with sqlite3.connect(cap.db_path) as con:
        assert con.execute("SELECT COUNT(*) FROM operations").fetchone()[0] == 60


def test_a_rebuild_from_a_folders_log_reads_no_source_file_it_names(tmp_path, device, monkeypatch):
    # a log from a folder is untrusted: its code records name any path on the reader's machine, and a rebuild that
    # read them would copy that file (a key, a FIFO that hangs) into the report; the capture's own writer reads them
    monkeypatch.setattr(writer_process, "remove_finished_log", lambda log, step=None: None)  # kept, as after a kill
    a = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with ttreport.capture(tmp_path / "run", config=ttreport.Config(perf_files=False)) as cap:
        ttnn.add(a, a)
    sql = ("SELECT (SELECT COUNT(*) FROM source_files), "
           "(SELECT COUNT(*) FROM stack_traces WHERE stack_trace LIKE '%ttnn.add(a, a)%')")
    with sqlite3.connect(cap.db_path) as con:
        assert con.execute(sql).fetchone() == (1, 1)  # this file, and the line that called the op
    (tmp_path / "run" / "db.sqlite").unlink()  # rebuilt from the log alone
    assert recovery.finish_from_log(cap.path)
    with sqlite3.connect(cap.db_path) as con:
        assert con.execute(sql).fetchone() == (0, 0)
        assert con.execute("SELECT COUNT(*) FROM stack_traces WHERE stack_trace LIKE '%test_writer_process_gc.py%'"
                           ).fetchone()[0] == 1  # the frames themselves are the log's: kept


def test_a_forked_writer_process_collects_young_objects_rarely():
    # each young-generation pass walked a batch's live record tuples (a fifth of the log's read); a writer process,
    # forked at a capture's start or ahead of it, sets its own threshold, the model's process keeps Python's
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            writer_process._on_its_own()
            os.write(write, repr(gc.get_threshold()).encode())
        finally:
            os._exit(0)
    os.close(write)
    try:
        said = os.read(read, 100).decode()
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    assert said.startswith(f"({writer_process.GC_THRESHOLD}, ")
    assert gc.get_threshold()[0] < writer_process.GC_THRESHOLD
