"""The writer process: tails a capture's op log (ttreport.capture.oplog) and writes the SQLite report from it.

    from ttreport.capture.writer_process import finish_from_log
    finish_from_log(Path("generated/ttreport/reports/run-1"))  # a report whose capture and writer were killed

With Config(writer="process") a capture forks this writer process beside the model:
the model's threads only append records to the log, and this process turns them into rows with
writer.Writer's own code (its records are the recorder's tuples; what they refer to by id, the
log defines). It shares the capture's folder lock (the descriptor is inherited), so no reader
folds or rebuilds the report while it writes. It tells the capture through a pipe: a line
`flushed <token>` per committed flush, then one JSON line of what it wrote and lost.

When the capturing process dies (SIGKILL), this process notices (its parent changes), writes
what the log holds (every op appended before the kill) and closes the report, whose status stays
"running": readers show that the run was killed. When this process is killed too, the log stays,
and the next `ttreport.open`, CLI command or `ttreport check --repair` rebuilds the report from the
whole log with finish_from_log (ttreport.wal calls it).
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
from types import SimpleNamespace

from ttreport.capture.log_tensors import FileWriter
from ttreport.capture.oplog import OPLOG_DIR, LogTail, remove_log, write_count, write_progress
from ttreport.capture.recorder import FLUSH, META, STOP
from ttreport.wal import RESERVE_FILE

DB_FILE = "db.sqlite"
IDLE_SLEEP_S = 0.0005  # between looks at an idle log: a few hundred µs of latency, ~nothing of CPU
REBUILD_SUFFIX = ".rebuild"
_OPTIONS = ("flush_ops", "flush_interval_s", "buffer_pages", "device_graphs", "perf_files")


# -- the capturing process's handle ---------------------------------------------------------------
class WriterProcess:
    """Starts the writer process and waits for its flushes and its end; Writer's interface for session.py."""

    def __init__(self, folder: Path, config, lock_fd: int):
        self.folder = Path(folder)
        self.options = {k: getattr(config, k) for k in _OPTIONS}
        self.lock_fd = lock_fd  # inherited by the fork: the folder stays locked until both have let go
        self.busy = threading.Lock()  # the capture's at-fork handler takes it; nothing to wait for here
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
        self.perf_files_written, self.perf_files_s = False, 0.0  # the perf files, by the writer process (live_perf)
        self.sink = None  # the capture's LogSink: its losses are added to the writer's at the end
        self.tensor_files: dict = {}  # what it wrote of the tensor files the log carried, and its CPU for them

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

    def _read_line(self, timeout: float | None) -> bool:
        fd = self._fd
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                return False
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
            while self._read_line(None):
                pass
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        os.close(self._fd)
        result = self.result
        if result is None:  # killed (or crashed) before it finished: the log still holds everything
            how = f"exit status {self.returncode}"
            if not finish_from_log(self.folder):
                self.error = RuntimeError(f"the writer process ended ({how}) and the report could not be rebuilt from "
                                          f"its log; ttreport check --repair tries again")
            self._add_log_losses()
            return
        self.error = None if result.get("error") is None else RuntimeError(result["error"])
        self.records_lost, self.ops_lost = result["records_lost"], result["ops_lost"]
        self.records_written = result["records_written"]
        self.perf_files_written, self.perf_files_s = result.get("perf_files", False), result.get("perf_files_s", 0.0)
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


# -- the writer process itself ---------------------------------------------------------------------
def _writer(db_path: Path, tail: LogTail, options: dict):
    from ttreport.capture.writer import Writer, connect
    from ttreport.errors import LossWarner

    writer = Writer(db_path, None, tail.defs, SimpleNamespace(**options), LossWarner())
    try:
        writer.con = connect(db_path)
    except (sqlite3.Error, OSError) as e:  # an unwritable folder: the log is read to its end all the same
        writer.con = None
        writer._fail(e)
    if options.get("perf_files") and writer.con is not None:
        from ttreport.capture.live_perf import LivePerf

        writer.perf_files = LivePerf(db_path.parent, tail.folder)  # rendered as batches commit, moved at close
    return writer


def pump(writer, tail: LogTail, options: dict, parent_alive, *, freeze: bool = False, progress=None,
         files=None) -> bool:
    """Write the log's records in batches until its STOP (True) or, once `parent_alive()` is False, its end.

    freeze=True (the writer process only, never a reader's process, whose own objects it would freeze too):
    gc.freeze() after each batch. progress: the capture's LogSink.progress, told the bytes written after each
    batch (its back-pressure). files: a log_tensors.FileWriter, which writes the tensor files the batch carries."""
    flush_ops, interval = options["flush_ops"], options["flush_interval_s"]
    segment = 0
    while True:
        batch: list = []
        started = time.monotonic()
        dead = False
        while len(batch) < flush_ops:
            records, more = tail.read(flush_ops - len(batch))
            batch += records
            if records and records[-1][0] in (FLUSH, STOP):  # someone waits for it: commit now
                break
            if not more:
                if not parent_alive():
                    dead = True  # the next round reads what it appended before it died, to the end
                    break
                if batch and time.monotonic() - started >= interval:
                    break
                time.sleep(IDLE_SLEEP_S)
        if tail.segment != segment:
            segment = tail.segment
            write_progress(tail.folder, segment)
        if batch:
            if files is not None:
                batch = files.convert(batch)
            stopped = writer._write(batch)
            if progress is not None:
                write_count(progress, tail)
            if freeze:
                # What is left of the batch is the writer's caches: out of the cyclic collector's sight from now
                # on (refcounting still frees them). Its full collections walked every cached tuple again and
                # again: 12 % of this process's CPU over a 200,000-op log. The writer's rows hold no cycles.
                gc.freeze()
            if stopped:
                return True
        if dead and not batch:
            return False


def _finish(writer, tail: LogTail, stopped: bool, files) -> None:
    if not stopped and writer.con is not None:
        writer._write([(META, "log_finished", "by the writer process: the capturing process ended without "
                                               "closing the report (killed); every op it recorded is here"),
                       *files.notes()])
    if writer.con is not None:
        writer._close()
    tail.close()


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

    tail = LogTail(folder / OPLOG_DIR, on_flush=tell)
    writer = _writer(folder / DB_FILE, tail, options)
    files = FileWriter(folder)
    stopped = pump(writer, tail, options, lambda: os.getppid() == parent, freeze=True, progress=progress,
                   files=files)
    _finish(writer, tail, stopped, files)
    if not stopped:  # the capture was killed: the room it kept for its closing notes is of no more use
        with contextlib.suppress(OSError):
            os.unlink(folder / RESERVE_FILE)
    if stopped or writer.error is None:
        # The report holds it all now, or what it could not take is counted in it, as the thread writer's
        # losses are (a full disk). Kept only when this process could not finish: a reader rebuilds from it.
        remove_log(folder / OPLOG_DIR)
    say(json.dumps({"error": None if writer.error is None else repr(writer.error),
                    "records_lost": writer.records_lost, "ops_lost": writer.ops_lost,
                    "records_written": writer.records_written, **files.result(), **_perf_result(writer)}))
    return 0


def _perf_result(writer) -> dict:
    """What the capture is told of the perf files (written: it need not export them; else why not)."""
    perf = writer.perf_files
    if perf is None:
        return {}
    return {"perf_files": writer.perf_files_written, "perf_files_s": perf.finish_s, "perf_files_why": perf.why}


# -- rebuilding a report from its log ----------------------------------------------------------------
def finish_from_log(folder: str | os.PathLike) -> bool:
    """Rebuild `folder`'s db.sqlite from the op log its capture left (True: done, or no log to do it from).

    The caller holds the folder's lock (no capture or writer process is writing it). The report is
    rebuilt beside the old db from the whole log, with the old db's report_metadata, and replaces it
    only when whole; the log is deleted last. A failure leaves the old db and the log as they were.
    """
    folder = Path(folder)
    log = folder / OPLOG_DIR
    if not log.is_dir():
        return True
    from ttreport import db

    db_path = folder / DB_FILE
    meta = _old_metadata(db_path)
    tmp = folder / (DB_FILE + REBUILD_SUFFIX)
    for leftover in (tmp, *_sidecars(tmp)):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
    try:
        db.create(tmp, indexes=False)
        con = sqlite3.connect(tmp)
        with con:
            con.executemany("INSERT OR REPLACE INTO report_metadata (key, value) VALUES (?, ?)", meta.items())
        con.close()
    except Exception:  # noqa: BLE001 - SQLAlchemy's or SQLite's (a full disk): the old db and the log stay
        for leftover in (tmp, *_sidecars(tmp)):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        return False
    options = {"flush_ops": 2000, "flush_interval_s": 0.05, "buffer_pages": False, "device_graphs": True}
    config = _old_options(folder)
    options.update({k: config[k] for k in _OPTIONS if k in config})
    options["perf_files"] = False  # as before: a rebuilt report's perf files are `ttreport perf-csv`'s
    tail = LogTail(log)
    writer = _writer(tmp, tail, options)
    files = FileWriter(folder)  # the files of the ops the capture logged: written again (the same bytes), or now
    if writer.con is not None:  # a file thrown away on any failure: no WAL, half the room on a small disk
        writer.con.execute("PRAGMA journal_mode=MEMORY")
    # The cyclic collector paused while it runs (12 % of its CPU over a 200,000-op log walking the writer's
    # caches), not frozen: this is a reader's process, whose own objects stay as they were.
    collecting = gc.isenabled()
    gc.disable()
    try:
        stopped = pump(writer, tail, options, lambda: False, files=files)
    finally:
        if collecting:
            gc.enable()
    if not stopped and writer.con is not None:
        writer._write([(META, "log_finished", "from the op log by a reader: the capture and its writer process "
                                               "were killed; every op the capture recorded is here"), *files.notes()])
    if writer.con is not None:
        writer._close()
    tail.close()
    if writer.error is not None:
        for leftover in (tmp, *_sidecars(tmp)):  # the old db and the log stay as they were
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        return False
    for sidecar in _sidecars(db_path):  # the old WAL must not be replayed into the new file
        with contextlib.suppress(FileNotFoundError):
            sidecar.unlink()
    os.replace(tmp, db_path)
    remove_log(log)
    return True


def _sidecars(db_path: Path) -> list[Path]:
    return [db_path.with_name(db_path.name + s) for s in ("-wal", "-shm", "-journal")]


def _old_metadata(db_path: Path) -> dict:
    """The report_metadata a capture wrote at its start (versions, status, ids), from the old db if it reads."""
    try:
        con = sqlite3.connect(db_path)
        try:
            return dict(con.execute("SELECT key, value FROM report_metadata"))
        finally:
            con.close()
    except sqlite3.Error:
        return {}


def _old_options(folder: Path) -> dict:
    try:
        return json.loads((folder / "config.json").read_text()).get("config", {})
    except (OSError, ValueError, AttributeError):
        return {}

