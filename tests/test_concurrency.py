"""Concurrency: many threads under one capture, a second process on the same report, readers during writes."""

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
import ttreport

TTREPORT = str(Path(sys.executable).with_name("ttreport"))
THREADS, OPS = 8, 150


def in_time(fn, timeout=60):
    """Run fn in a daemon thread: a deadlock fails the test instead of hanging the suite."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # re-raised on the test's thread below
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"did not finish within {timeout} s: a deadlock?"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_eight_threads_under_one_capture_record_every_op_once(device, tmp_path):
    def model():
        barrier = threading.Barrier(THREADS)

        def worker():
            a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
            barrier.wait()
            for _ in range(OPS):
                a = a + 1

        threads = [threading.Thread(target=worker, name=f"w{i}") for i in range(THREADS)]
        with ttreport.capture(tmp_path / "threads", config=ttreport.Config(tensors="outputs")) as cap:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return cap

    cap = in_time(model)  # the close included: no deadlock between the writer, the tensor thread and GC frees
    with ttreport.open(cap.path) as r:
        rows = r.sql("SELECT operation_id, thread FROM operations ORDER BY operation_id")
        assert [row["operation_id"] for row in rows] == list(range(1, THREADS * (OPS + 1) + 1))  # once each
        per_thread = r.sql("SELECT thread, COUNT(*) AS n FROM operations GROUP BY thread ORDER BY thread")
        assert per_thread == [{"thread": f"w{i}", "n": OPS + 1} for i in range(THREADS)]
        outputs = r.sql("SELECT tensor_id, COUNT(*) AS n FROM output_tensors GROUP BY tensor_id HAVING n > 1")
        assert outputs == []  # tensor ids are unique across threads too
    assert ttreport.check(cap.path) == []


def test_reading_while_writing_sees_a_consistent_prefix(device, tmp_path):
    seen = []
    stop = threading.Event()
    report = tmp_path / "live"

    def read_loop():
        while not stop.is_set():
            if not (report / "db.sqlite").exists():
                continue
            with ttreport.open(report) as r:
                # One transaction per batch: an op is never visible without its tensors.
                broken = r.sql("""
                    SELECT o.operation_id FROM operations o
                    WHERE (SELECT COUNT(*) FROM input_tensors i WHERE i.operation_id = o.operation_id)
                          != (CASE WHEN o.name LIKE '%from_torch' THEN 0 ELSE 1 END)
                       OR (SELECT COUNT(*) FROM output_tensors x WHERE x.operation_id = o.operation_id) != 1
                       OR EXISTS (SELECT 1 FROM output_tensors x LEFT JOIN tensors t USING (tensor_id)
                                  WHERE x.operation_id = o.operation_id AND t.tensor_id IS NULL)""")
                ids = [row["operation_id"] for row in r.sql("SELECT operation_id FROM operations ORDER BY 1")]
            assert broken == [] and ids == list(range(1, len(ids) + 1))
            seen.append(len(ids))
            time.sleep(0.01)  # no indexes until close: each read scans, so leave the model some CPU

    def model():
        reader = threading.Thread(target=read_loop, daemon=True)
        with ttreport.capture(report, config=ttreport.Config(flush_interval_s=0.005)):
            reader.start()
            a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
            cli = []
            for i in range(1000):
                a = ttnn.relu(a)
                if i % 10 == 0:
                    time.sleep(0.002)  # a model does work between ops; it lets the reader in mid-run
                if i == 500:
                    cli.append(subprocess.run([TTREPORT, "query", str(report), "SELECT COUNT(*) AS n FROM operations"],
                                              capture_output=True, text=True))
        stop.set()
        reader.join(10)
        return cli

    cli = in_time(model)
    assert all(p.returncode == 0 and p.stdout.split()[-1].isdigit() for p in cli), [p.stderr for p in cli]
    counts = [int(p.stdout.split()[-1]) for p in cli]
    assert counts == sorted(counts)
    assert len({n for n in seen if 0 < n < 1001}) >= 3, "the reader should have seen the report grow mid-run"



def test_closing_while_a_reader_is_mid_query_neither_waits_nor_loses_anything(device, tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ttreport.capture(tmp_path / "read") as cap:
            a = ttnn.from_torch(torch.ones(32, 32), device=device)
            for _ in range(100):
                a = a + 1
            cap.flush()
            # A `ttreport query` in progress: a read transaction holding its snapshot through the close.
            reader = sqlite3.connect(f"file:{cap.db_path}?mode=ro", uri=True, isolation_level=None)
            reader.execute("BEGIN")
            assert reader.execute("SELECT COUNT(*) FROM operations").fetchone()[0] == 101
            start = time.monotonic()
    closing = time.monotonic() - start
    reader.close()
    assert closing < 2, f"close waited {closing:.1f} s for the reader"
    assert [str(w.message) for w in caught if issubclass(w.category, ttreport.ReportIncompleteWarning)] == []
    with ttreport.open(cap.path) as r:
        assert r.count_operations() == 101 and r.status == "complete"
    assert ttreport.check(cap.path) == []  # no loss noted: the WAL it kept holds every batch

HOLDER = r"""
import pathlib, sys, time, torch
import device_sim as ttnn, ttreport
with ttreport.capture(pathlib.Path(sys.argv[1])):
    a = ttnn.from_torch(torch.ones(4, 4))
    print("capturing", flush=True)
    time.sleep(120)
"""


def test_a_second_process_is_refused_until_the_holder_dies(tmp_path):
    report = tmp_path / "shared"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(report)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "capturing"
        again = ttreport.capture(report, config=ttreport.Config(overwrite=True))
        try:
            with pytest.raises(ttreport.TTReportError, match=f"(?s){report}.*(in use|another process)") as refused:
                again.start()
            assert f"pid {holder.pid}" in str(refused.value)
        finally:
            again.stop()
        assert (report / "db.sqlite").exists()
        # The kernel drops its lock with it; its writer process holds the folder until it has written the rest of
        # the op log, and the next capture waits for that (folder.ORPHAN_WAIT_S) instead of refusing.
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
        start = time.monotonic()
        with ttreport.capture(report, config=ttreport.Config(overwrite=True)) as cap:
            ttnn.from_torch(torch.ones(2, 2))
        assert time.monotonic() - start < 10 and cap.status == "complete"
    finally:
        holder.kill()
        holder.wait(10)
