"""The writer process: tails a capture's op log (ttreport.capturing.oplog) and writes the SQLite report from it.

    process = WriterProcess(folder, config, lock_fd)  # session.py's, with Config(writer="process")
    process.start(); ...; process.join()

With Config(writer="process") a capture forks this writer process beside the model:
the model's threads only append records to the log, and this process turns them into rows with
writer.Writer's own code (capture.log_writer). It shares the capture's folder lock (the descriptor
is inherited), so no reader folds or rebuilds the report while it writes. It tells the capture through a pipe: a line
`flushed <token>` per committed flush, then one JSON line of what it wrote and lost.

When the capturing process dies (SIGKILL), this process notices (its parent changes), writes
what the log holds (every op appended before the kill) and closes the report, whose status stays
"running": readers show that the run was killed. When this process is killed too, the log stays,
and the next `ttreport.open`, CLI command or `ttreport check --repair` rebuilds the report from the
whole log (ttreport.recovery, which says in what order a log ends so that a kill at any instant loses no
op).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import json
import os
import select
import signal
import sqlite3
import threading
import time
import traceback
from pathlib import Path

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

    def __init__(self, folder: Path, config, lock_fd: int):
        self.folder = Path(folder)
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
        connection) and pure-Python row building, and it leaves by os._exit."""
        parent = os.getpid()
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer process
            code = 1
            try:
                os.close(read_fd)
                os.setsid()  # Ctrl-C in a terminal reaches the model, which closes the capture; not this
                for signum in (signal.SIGINT, signal.SIGTERM):
                    signal.signal(signum, signal.SIG_DFL)
                gc.freeze()  # the model's objects, inherited: never walked by this process's collections
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
                    **files.result()}))
    return 0

