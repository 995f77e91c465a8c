"""The writer process: tails a capture's op log (ttreport.capturing.oplog) and writes the SQLite report from it.

    process = WriterProcess(folder, config, lock_fd)  # session.py's, with Config(writer="process")
    process.start(); ...; process.join()

With Config(writer="process") a capture forks this writer process beside the model:
the model's threads only append records to the log, and this process turns them into rows with
writer.Writer's own code (capture.log_writer). It shares the capture's folder lock (the descriptor
is inherited), so no reader folds or rebuilds the report while it writes. It tells the capture through a pipe: a line
`flushed <token>` per committed flush, then one JSON line of what it wrote and lost.

A capture made with fork_ahead (the pytest plugin's) takes a Spare when one waits: a writer process forked while
an earlier capture's close waited for its own writer (the model's thread idle then), handed the folder, the lock and
the shared count over a socket. Its fork (10-25 ms of a start of ~45, bench/README.md) then leaves the start. It is
this process as it was when forked: it is used only while what a writer reads of it is the same now (Spare.current).

When the capturing process dies (SIGKILL), this process notices (its parent changes), writes
what the log holds (every op appended before the kill) and closes the report, whose status stays
"running": readers show that the run was killed. When this process is killed too, the log stays,
and the next `ttreport.open`, CLI command or `ttreport check --repair` rebuilds the report from the
whole log (ttreport.recovery, which says in what order a log ends so that a kill at any instant loses no
op).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import itertools
import json
import mmap
import os
import select
import signal
import socket
import sqlite3
import threading
import time
import traceback
from pathlib import Path

from device_sim import perf_constants, perf_model, registry
from ttreport.capturing import oplog
from ttreport.capturing.log_tensors import FileWriter
from ttreport.capturing.log_writer import OPTIONS, open_writer, pump, remove_finished_log
from ttreport.capturing.oplog import LogTail
from ttreport.capturing.records import META
from ttreport.folder import DB_FILE, OPLOG_DIR, RESERVE_FILE
from ttreport.recovery import finish_from_log

# A test seam (tests/test_hardening_recovery.py): with TTREPORT_TEST_KILL_STEP=k in its environment the writer
# process SIGKILLs itself at step k of the end of its log (_Steps), to show that a kill at each loses no op.
KILL_STEP_VAR = "TTREPORT_TEST_KILL_STEP"


# -- the capturing process's handle ---------------------------------------------------------------
class WriterProcess:
    """Starts the writer process and waits for its flushes and its end; Writer's interface for session.py."""

    def __init__(self, folder: Path, config, lock_fd: int, *, ahead: bool = False):
        self.folder = Path(folder)
        self.ahead = ahead  # a Spare forked ahead may write this capture (Capture's fork_ahead)
        self.options = {k: getattr(config, k) for k in OPTIONS}
        self.lock_fd = lock_fd  # inherited by the fork: the folder stays locked until both have let go
        self.error: Exception | None = None
        self.records_lost = self.ops_lost = self.records_written = 0
        self.pid: int | None = None
        self.returncode: int | None = None
        self._fd: int | None = None  # the read end of the pipe it reports on
        self._flushed = 0
        self._buffer = b""
        self._tokens = itertools.count(1)
        self._read_lock = threading.Lock()
        self.result: dict | None = None
        self.sink = None  # the capture's LogSink: its losses are added to the writer's at the end
        self.tensor_files: dict = {}  # what it wrote of the tensor files the log carried, and its CPU for them
        self.stalled = False  # killed by join after WRITER_STALL_S without progress

    def start(self) -> None:
        """Fork the writer process. A fork, not a new interpreter: it has ttreport, device_sim and torch
        imported already (a fresh `python -m` takes ~1.3 s of CPU to import them, which a short capture's
        close would wait for). It uses none of the parent's threads or locks: only the log, SQLite (its own
        connection) and pure-Python row building, and it leaves by os._exit. With `ahead`, a Spare waiting for a
        capture is handed this one instead, when it is current."""
        if self.ahead and (spare := take_spare()) is not None:
            if spare.hand(self.folder, self.options, self.lock_fd, self.sink.progress_fd):
                self.pid, self._fd = spare.pid, spare.fd
                return
            spare.close()  # it died: a writer is forked below
        parent = os.getpid()
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer process
            code = 1
            try:
                os.close(read_fd)
                _on_its_own()
                progress = self.sink.progress if self.sink is not None else None  # shared with the LogSink
                code = main(self.folder, parent, self.options, write_fd, progress)
            except BaseException:  # noqa: BLE001 - said on stderr; the capture rebuilds from the log
                traceback.print_exc()
            finally:
                os._exit(code)
        os.close(write_fd)
        self.pid, self._fd = pid, read_fd

    def is_alive(self) -> bool:
        if self.pid is None or self.returncode is not None:
            return False
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return True
        self.returncode = os.waitstatus_to_exitcode(status)
        return False

    def next_token(self) -> int:
        return next(self._tokens)

    def wait_flushed(self, token: int, timeout: float | None) -> bool:
        """Wait until the writer process has committed flush `token` (False on timeout or its death)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._read_lock:
            while self._flushed < token:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                if not self._read_line(left):
                    return False
        return True

    def _read_line(self, timeout: float | None) -> bool | None:
        """True: a line was read; None: none within `timeout`; False: the process ended (its pipe closed)."""
        fd = self._fd
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return False  # it ended
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        text = line.decode()
        if text.startswith("flushed "):
            self._flushed = max(self._flushed, int(text.split()[1]))
        elif text.startswith("{"):
            self.result = json.loads(text)
        return True

    def join(self) -> None:
        """Wait for the writer process to end; note what it reported (or that it died, and rebuild from the log)."""
        if self.sink is not None and self.sink.stop_lost and self.is_alive():
            os.kill(self.pid, signal.SIGTERM)  # the log had no room for its STOP: it ends here, as if killed
        with self._read_lock:
            # Waited for while it works: a line said, or CPU used, or asleep on the disk (state D: a long fsync).
            # A writer that does none of these for WRITER_STALL_S (stopped by SIGSTOP, or stuck) would hold the
            # close for ever; it is killed, and the capture rebuilds the report from the log, which holds every op.
            last, since = _state(self.pid), time.monotonic()
            while (said := self._read_line(JOIN_POLL_S)) is not False:
                now = _state(self.pid)
                if said or now != last or now is None or now[0] == "D":
                    last, since = now, time.monotonic()
                elif time.monotonic() - since > oplog.WRITER_STALL_S:
                    os.kill(self.pid, signal.SIGKILL)
                    self.stalled = True
                    since = time.monotonic()
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        os.close(self._fd)
        result = self.result
        if result is None:  # killed (or crashed) before it finished: the log still holds everything
            how = f"exit status {self.returncode}" + (f", killed after {oplog.WRITER_STALL_S:g} s without progress"
                                                      if self.stalled else "")
            if not finish_from_log(self.folder, remove_unused=True):  # its own log: one the db holds is deleted
                self.error = RuntimeError(f"the writer process ended ({how}) and the report could not be rebuilt from "
                                          f"its log; ttreport check --repair tries again")
            self._add_log_losses()
            return
        self.error = None if result.get("error") is None else RuntimeError(result["error"])
        self.records_lost, self.ops_lost = result["records_lost"], result["ops_lost"]
        self.records_written = result["records_written"]
        self.tensor_files = {k: v for k, v in result.items() if k.startswith("tensor_")}  # log_tensors.FileWriter's
        if result.get("tensor_files_lost") and self.sink is not None:
            self.sink.warner.warn(result["tensor_file_error"])  # the capture's one warning, if not given yet
        self._add_log_losses()

    def _add_log_losses(self) -> None:
        sink = self.sink  # what the op log could not take (a full disk) is lost as the writer's losses are
        if sink is not None and sink.error is not None:
            self.records_lost += sink.records_lost
            self.ops_lost += sink.ops_lost
            self.error = self.error or sink.error


JOIN_POLL_S = 0.5  # how often join looks at a writer process that says nothing
# The writer process's young-generation collections, one each GC_THRESHOLD container allocations (Python's default:
# 700): each walked the batch's live record tuples, and the collector was 0.65 of the log read's 3.2 µs an op (20,000
# adds; bench/README.md, issue 33, session 17). Its rows and caches hold no cycles (pump freezes them after each
# batch); a collection still comes now and then, for a cycle an exception's traceback makes.
GC_THRESHOLD = 100_000


def _on_its_own() -> None:
    """In a writer process just forked: out of the model's session and signals, the model's objects frozen."""
    os.setsid()  # Ctrl-C in a terminal reaches the model, which closes the capture; not this
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    gc.freeze()  # the model's objects, inherited: never walked by this process's collections
    gc.set_threshold(GC_THRESHOLD)


# -- a writer process forked ahead -----------------------------------------------------------------
SPARE_POLL_S = 1.0  # how often a spare looks whether the capturing process still runs (its socket may be inherited)


class Spare:
    """A writer process forked before its capture starts, waiting on a socket for the capture's folder, options,
    folder lock and shared count (LogSink.progress_fd), then main() as a writer forked at the start runs it.

    Forked by fork_ahead() while an earlier capture's close waits for its writer. It ends unused when the capturing
    process closes its socket (close(), or its exit) or ends (it looks every SPARE_POLL_S: a child forked beside it
    may hold the socket too), so it never outlives it."""

    def __init__(self):
        parent = os.getpid()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        read_fd, write_fd = os.pipe()
        self.state = _state_now()
        pid = os.fork()
        if pid == 0:  # the spare
            code = 1
            try:
                ours.close()
                os.close(read_fd)
                _on_its_own()
                code = _serve(theirs, parent, write_fd)
            except BaseException:  # noqa: BLE001 - said on stderr; the capture rebuilds from the log
                traceback.print_exc()
            finally:
                os._exit(code)
        theirs.close()
        os.close(write_fd)
        self.pid, self.fd, self.socket = pid, read_fd, ours

    def current(self) -> bool:
        """Whether what a writer reads of this process is as it was at the fork: the ops registered, the performance
        model's constants (perf_constants.use), the environment (TTREPORT_* and the test seams). ~0.15 ms."""
        return self.state == _state_now()

    def hand(self, folder: Path, options: dict, lock_fd: int, progress_fd: int | None) -> bool:
        """Give it a capture to write (False: it is gone, or there is no shared count to give it)."""
        job = json.dumps({"folder": str(folder), "options": options}).encode()
        try:
            if progress_fd is None:
                raise OSError("no memfd for the shared count")
            socket.send_fds(self.socket, [job], [lock_fd, progress_fd])
        except OSError:
            return False
        self.socket.close()  # its work is given: it now ends as a writer does
        return True

    def close(self, reap: bool = True) -> None:
        """Let it go unused: it sees its socket closed and ends (reaped later by _reap, never waited for here)."""
        self.socket.close()
        os.close(self.fd)
        if reap:
            _unreaped.append(self.pid)


def _state_now() -> tuple:
    return (tuple(map(id, registry.OPS.values())), perf_constants.settable(perf_model), dict(os.environ))


def _serve(sock: socket.socket, parent: int, out_fd: int) -> int:
    """The spare's wait for its capture, then its work as a writer process (0: let go unused)."""
    while not select.select([sock], [], [], SPARE_POLL_S)[0]:
        if os.getppid() != parent:
            return 0  # the capturing process has ended
    job, fds, _, _ = socket.recv_fds(sock, 1 << 16, 2)
    if not job:
        return 0  # let go (close(), or the capturing process's exit)
    sock.close()
    lock_fd, progress_fd = fds  # the lock is held until this process ends, as a forked writer holds its inherited one
    progress = mmap.mmap(progress_fd, oplog._COUNT.size)
    os.close(progress_fd)
    job = json.loads(job)
    return main(Path(job["folder"]), parent, job["options"], out_fd, progress)


_spare: Spare | None = None  # this process's one spare writer process, if any
_unreaped: list[int] = []  # spares let go, not yet reaped (their exit is not waited for)


def _reap() -> None:
    for pid in list(_unreaped):
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == 0:
                continue  # still ending
        _unreaped.remove(pid)


def fork_ahead() -> None:
    """Fork a Spare now, unless one waits: called while a capture's close waits for its writer process (the fork
    waits for any capture's perf-rows chase to be out of SQLite: session._before_fork)."""
    global _spare
    _reap()
    if _spare is not None or not hasattr(os, "memfd_create") or not hasattr(socket, "send_fds"):
        return
    _spare = Spare()


def take_spare() -> Spare | None:
    """The waiting Spare, if it is current (one that is not is let go); it is no longer this process's spare."""
    global _spare
    spare, _spare = _spare, None
    if spare is not None and not spare.current():
        spare.close()
        return None
    return spare


def _let_go_at_exit() -> None:
    # Exit would close its socket too (the spare then ends), but a socket object left open warns (ResourceWarning)
    global _spare
    if _spare is not None:
        spare, _spare = _spare, None
        spare.close(reap=False)


def _forget_in_child() -> None:
    global _spare
    _unreaped.clear()  # the parent's children
    if _spare is not None:  # the parent's: a child forked beside it neither uses nor keeps it
        spare, _spare = _spare, None
        spare.close(reap=False)


atexit.register(_let_go_at_exit)
os.register_at_fork(after_in_child=_forget_in_child)


def _state(pid: int) -> tuple[str, int] | None:
    """A process's state letter and CPU time in clock ticks (/proc/PID/stat); None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after the command name, which may hold spaces and ")"
    return fields[0], int(fields[11]) + int(fields[12])  # state; utime + stime


# -- the writer process itself ---------------------------------------------------------------------
class _Steps:
    """The steps of the end of a log, counted; the test seam's kill (KILL_STEP_VAR) at the one it names."""

    def __init__(self):
        value = os.environ.get(KILL_STEP_VAR, "")
        self.kill_at = int(value) if value.isdigit() else 0
        self.done = 0

    def __call__(self) -> None:
        self.done += 1
        if self.done == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


def _finish(writer, tail: LogTail, stopped: bool, files, held: list, step) -> None:
    """Close the db, then commit its closing note: the capture's status (held back by pump), or log_finished
    when the capture was killed. A report that says it is complete (or finished) holds every op, closed."""
    if not stopped and writer.con is not None:
        writer._write(files.notes())
        held.append((META, "log_finished", "by the writer process: the capturing process ended without "
                                           "closing the report (killed); every op it recorded is here"))
    connected = writer.con is not None
    if connected:
        writer._close()
    tail.close()
    step()  # 1: the db closed, without its closing note
    if connected and held:
        try:
            con = sqlite3.connect(writer.db_path)
            try:
                with con:
                    con.executemany("INSERT OR REPLACE INTO report_metadata (key, value) VALUES (?, ?)",
                                    [(key, str(value)) for _, key, value in held])
            finally:
                con.close()
        except sqlite3.Error as e:  # the capture writes its notes again, with the error (session.py)
            writer._fail(e)
    step()  # 2: the report says it is complete, beside its whole log


def main(folder: Path, parent: int, options: dict, out_fd: int, progress=None) -> int:
    """The writer process's work: write the log of the report in `folder` until its STOP, or until process
    `parent` has died and the log is read to its end; report on `out_fd`."""

    def say(text: str) -> None:
        data = (text + "\n").encode()
        while data:
            data = data[os.write(out_fd, data):]

    def tell(token) -> None:
        if token is not None:
            say(f"flushed {token}")

    tail = LogTail(folder / OPLOG_DIR, on_flush=tell, trusted=True)  # its own capture's log, written just now
    writer = open_writer(folder / DB_FILE, tail, options)
    writer.follow_lifetimes()
    files = FileWriter(folder)
    held: list = []
    stopped = pump(writer, tail, options, lambda: os.getppid() == parent, freeze=True, progress=progress,
                   files=files, held=held)
    step = _Steps()
    _finish(writer, tail, stopped, files, held, step)
    if not stopped:  # the capture was killed: the room it kept for its closing notes is of no more use
        with contextlib.suppress(OSError):
            os.unlink(folder / RESERVE_FILE)
    if stopped or writer.error is None:
        # The report holds it all now, or what it could not take is counted in it, as the thread writer's
        # losses are (a full disk). Kept only when this process could not finish: a reader rebuilds from it.
        remove_finished_log(folder / OPLOG_DIR, step)
    say(json.dumps({"error": None if writer.error is None else repr(writer.error),
                    "records_lost": writer.records_lost, "ops_lost": writer.ops_lost,
                    "records_written": writer.records_written, "db_close_s": writer.close_s,
                    "db_close_parts": writer.close_parts, **files.result()}))
    return 0

