"""The op log's back-pressure by bytes: the model waits while the writer process has more than
LogSink.lag_bytes of the log still to write, so a long capture's close is bounded (issue 14).

    .venv/bin/python -m pytest tests/test_oplog_back_pressure.py -q

The writer process counts the log bytes it has written to SQLite into memory it shares with the
capture (LogSink.progress, inherited by the fork); the sink looks at it every PACE_BYTES.
"""

import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport.capturing import oplog
from ttreport.capturing.oplog import LogSink, LogTail
from ttreport.capturing.records import META, OP, STOP, Op

REPO = Path(__file__).resolve().parent.parent


def op_record(op_id: int) -> tuple:
    # The recorder's OP record (recorder.Recorder.end), with nothing but ints and strings in it.
    return tuple(Op(tag=OP, name="ttnn.add", operation_id=op_id, start_ns=0, end_ns=1, parent_operation_id=None,
                    depth=0, thread="MainThread", stack=None, args=(), kwargs=None, inputs=(), outputs=(), specs=(),
                    files=None, end_seq=op_id, l1_bytes=0, dram_bytes=0, error=None, step=0))


def wait_until_stalled(appended: list, thread: threading.Thread, sink: LogSink, at_least: int) -> int:
    """The count of records appended once the appending thread has made no progress for 0.3 s after writing at
    least `at_least` bytes of log (a thread merely descheduled on a loaded machine, before that, is not a stall)."""
    last, since = -1, time.monotonic()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and thread.is_alive():
        if appended[0] != last:
            last, since = appended[0], time.monotonic()
        elif time.monotonic() - since > 0.3 and sink._done + sink._off >= at_least:
            return last
        time.sleep(0.01)
    raise AssertionError(f"the appending thread never waited (alive: {thread.is_alive()}, {appended[0]} records)")


def test_the_model_waits_while_the_writer_is_too_far_behind_and_loses_nothing(tmp_path, monkeypatch):
    # One segment for the whole run (~4 MiB; the first is 2 MiB otherwise): the looks fall at whole PACE_BYTES
    monkeypatch.setattr(oplog, "FIRST_SEGMENT_BYTES", oplog.SEGMENT_BYTES)
    sink = LogSink(tmp_path / "log", lag_bytes=256 << 10)
    alive = [True]
    sink.writer_alive = lambda: alive[0]
    n = 60_000  # ~4 MiB of records: several PACE_BYTES
    appended = [0]

    def model():
        for i in range(1, n + 1):
            sink.append(op_record(i))
            appended[0] = i
        sink.append((STOP, None))

    thread = threading.Thread(target=model)
    thread.start()
    stalled = wait_until_stalled(appended, thread, sink, oplog.PACE_BYTES)
    written = sink._done + sink._off
    assert oplog.PACE_BYTES <= written < oplog.PACE_BYTES + 1024, written  # at its first look: nothing read yet
    assert stalled < n

    oplog._COUNT.pack_into(sink.progress, 0, written)  # the writer caught up: on to the next look, and waits there
    again = wait_until_stalled(appended, thread, sink, 2 * oplog.PACE_BYTES)
    assert again > stalled and 2 * oplog.PACE_BYTES <= sink._done + sink._off < 2 * oplog.PACE_BYTES + 1024

    alive[0] = False  # a writer process that ended is never waited for
    thread.join(30)
    assert not thread.is_alive() and appended[0] == n
    tail = LogTail(tmp_path / "log")
    records, _ = tail.read(n + 10)
    assert [r[2] for r in records if r[0] == OP] == list(range(1, n + 1))
    assert tail.done + tail.off == sink._done + sink._off  # both ends count the log's bytes alike


def test_a_captures_writer_process_reports_every_byte_it_wrote_through_the_shared_memory(tmp_path, device):
    a = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=device)
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(writer="process")) as cap:
        for _ in range(200):
            a = ttnn.add(a, a)
        sink = cap._queue.items
    # The writer process is a fork: what it counted is in the capture's own mapping, up to the STOP record.
    assert oplog._COUNT.unpack_from(sink.progress)[0] == sink._done + sink._off > 200 * 100


MODEL = r"""
import os, pathlib, sys
import pytest
import torch
import device_sim as ttnn
import ttreport
from ttreport.capturing import oplog
oplog.LAG_BYTES, oplog.PACE_BYTES = 128 << 10, 32 << 10  # it waits after a few hundred ops
dev = ttnn.open_device(0)
a = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=dev)
with ttreport.capture(pathlib.Path(sys.argv[1]), config=ttreport.Config(writer="process")) as cap:
    print("pids", os.getpid(), cap._writer.pid, flush=True)
    for i in range(1_000_000):
        ttnn.add(a, a)
        print("op", i + 2, flush=True)  # after the op returned: it is in the log
"""


class Lines:
    """Lines from a child's stdout as they come (print's pieces may arrive in more than one read)."""

    def __init__(self, fd: int):
        self.fd, self.buf = fd, b""

    def until_quiet(self, quiet_s: float, *, first_only: bool = False, deadline_s: float = 60) -> list[str]:
        out = []
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], quiet_s)
            if not ready:
                return out
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return out
            *lines, self.buf = (self.buf + chunk).split(b"\n")
            out += [line.decode() for line in lines]
            if first_only and out:
                return out
        raise AssertionError("the model never waited for its writer")


def test_a_sigterm_while_the_model_waits_for_its_writer_closes_the_report(tmp_path):
    # The wait is outside the log's lock: the SIGTERM handler closes the capture from inside it and appends the
    # closing notes itself (with the lock held through the wait, it would deadlock there).
    report = tmp_path / "r"
    proc = subprocess.Popen([sys.executable, "-c", MODEL, str(report)], stdout=subprocess.PIPE, cwd=REPO)
    try:
        lines = Lines(proc.stdout.fileno())
        first = lines.until_quiet(30, first_only=True)
        assert first and first[0].startswith("pids "), first
        model, writer = (int(w) for w in first[0].split()[1:3])
        os.kill(writer, signal.SIGSTOP)  # it falls behind: the model soon waits for it
        try:
            printed = [int(line.split()[1]) for line in first[1:] + lines.until_quiet(1.0) if line.startswith("op ")]
            assert printed, "the model ran no op"
            os.kill(model, signal.SIGTERM)
            time.sleep(0.2)
        finally:
            os.kill(writer, signal.SIGCONT)
        assert proc.wait(60) == -signal.SIGTERM
    finally:
        proc.kill()
        proc.wait(10)
    with ttreport.open(report) as r:
        assert r.status == "interrupted"
        assert r.count_operations() >= max(printed)  # every op it printed, and the tensor's from_torch


def test_closing_notes_appended_by_a_signal_handler_in_the_middle_of_an_append_are_written(tmp_path):
    # What a SIGTERM that lands while this thread holds the log's lock does: session.Capture._on_signal closes
    # the report in the same thread, so its notes and STOP are appended under the lock that thread holds.
    sink = LogSink(tmp_path / "log")
    sink.append(op_record(1))

    def interrupted_append():
        with sink._lock:  # the append the signal interrupted
            sink.append((META, "status", "interrupted"))
            sink.append((STOP, None))

    thread = threading.Thread(target=interrupted_append, daemon=True)
    thread.start()
    thread.join(10)
    assert not thread.is_alive(), "the closing notes waited for a lock their own thread holds"
    records, _ = LogTail(tmp_path / "log").read(10)
    assert [r[0] for r in records] == [OP, META, STOP]


def _resident_pages(mm, start: int, end: int) -> int:
    """Pages of the mapping [start, end) in memory (mincore(2)): the prefault's work, as the kernel sees it."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    page = oplog.mmap.PAGESIZE
    buf = ctypes.c_char.from_buffer(mm, start)
    vec = (ctypes.c_ubyte * ((end - start + page - 1) // page))()
    try:
        assert libc.mincore(ctypes.c_void_p(ctypes.addressof(buf)), ctypes.c_size_t(end - start), vec) == 0
    finally:
        del buf  # the exported buffer, or the mmap cannot close
    return sum(v & 1 for v in vec)


@pytest.mark.skipif(oplog._MADV_POPULATE_WRITE is None, reason="no MADV_POPULATE_WRITE here")
def test_the_logs_pages_are_faulted_in_ahead_of_the_writes_and_no_further(tmp_path):
    sink = LogSink(tmp_path / "log")
    page = oplog.mmap.PAGESIZE
    assert sink._prefaulted == oplog.PREFAULT_BYTES  # a new segment: its first chunks at once
    i = 0
    while sink._off < 3 * oplog.PACE_BYTES + 1000:
        i += 1
        sink.append(op_record(i))
    assert sink._prefaulted % page == 0
    assert sink._off <= sink._prefaulted <= sink._off + oplog.PREFAULT_BYTES
    assert _resident_pages(sink._mm, 0, sink._prefaulted) == sink._prefaulted // page
    beyond = sink._prefaulted + 4 * oplog.PACE_BYTES
    assert _resident_pages(sink._mm, beyond, beyond + oplog.PACE_BYTES) == 0  # the rest of the segment: untouched
    sink.close()
    records, _ = LogTail(tmp_path / "log").read(i + 10)
    assert [r[2] for r in records if r[0] == OP] == list(range(1, i + 1))


def test_a_kernel_without_the_prefault_writes_the_log_as_before(tmp_path, monkeypatch):
    monkeypatch.setattr(oplog, "_MADV_POPULATE_WRITE", 0x7FFF)  # an advice no kernel knows: EINVAL, as before 5.14
    sink = LogSink(tmp_path / "log")
    assert oplog._MADV_POPULATE_WRITE is None and sink._prefaulted == 0  # given up at once, for good
    for i in range(1, 20_001):
        sink.append(op_record(i))
    sink.close()
    records, _ = LogTail(tmp_path / "log").read(20_010)
    assert [r[2] for r in records if r[0] == OP] == list(range(1, 20_001))
