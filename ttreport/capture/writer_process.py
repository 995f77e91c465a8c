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

The end of a log, in an order that a kill at any instant leaves the whole log or a report that holds
every op: the db is written and closed; then its closing note (the capture's status, or log_finished)
is committed, so a report that says it is complete holds every op; then the log's folder is renamed
oplog.done (atomic), and only then deleted. A reader finding oplog.done finishes the deletion; one
finding oplog beside a report that is not closed rebuilds from it, and never replaces the db with a
rebuild that holds fewer ops.
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
import warnings
from pathlib import Path
from types import SimpleNamespace

from ttreport.capture import oplog
from ttreport.capture.log_tensors import FileWriter
from ttreport.capture.oplog import OPLOG_DIR, LogTail, remove_log, segment_path, write_count
from ttreport.capture.recorder import FLUSH, META, OP, STOP
from ttreport.config import Config
from ttreport.errors import ReportIncompleteWarning
from ttreport.wal import OPLOG_DONE_DIR, RESERVE_FILE, closed

DB_FILE = "db.sqlite"
IDLE_SLEEP_S = 0.0005  # between looks at an idle log: a few hundred µs of latency, ~nothing of CPU
REBUILD_SUFFIX = ".rebuild"
_OPTIONS = ("flush_ops", "flush_interval_s", "buffer_pages", "device_graphs", "perf_files")
# A rebuild's batches hold at most this many records, whatever config.json says: Config's own queue_max default,
# the most a thread writer holds. A folder's flush_ops of 10**12 would have read a whole log into one batch.
REBUILD_BATCH_MAX = 100_000
# A test seam (tests/test_hardening_recovery.py): with TTREPORT_TEST_KILL_STEP=k in its environment the writer
# process SIGKILLs itself at step k of the end of its log (_Steps), to show that a kill at each loses no op.
KILL_STEP_VAR = "TTREPORT_TEST_KILL_STEP"


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
         files=None, held: list | None = None) -> bool:
    """Write the log's records in batches until its STOP (True) or, once `parent_alive()` is False, its end.

    freeze=True (the writer process only, never a reader's process, whose own objects it would freeze too):
    gc.freeze() after each batch. progress: the capture's LogSink.progress, told the bytes written after each
    batch (its back-pressure). files: a log_tensors.FileWriter, which writes the tensor files the batch carries.
    held: the capture's status note goes there instead of into the db (the writer process commits it once the
    db is closed: _finish)."""
    flush_ops, interval = options["flush_ops"], options["flush_interval_s"]
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
        if batch:
            if files is not None:
                batch = files.convert(batch)
            if held is not None:
                batch = _hold_status(batch, held)
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


def _hold_status(batch: list, held: list) -> list:
    """`batch` less the capture's status note, which goes to `held`: one pass over the tags (~0.1 % of the
    writer's time for a 2,000-record batch)."""
    kept = [r for r in batch if r[0] != META or r[1] != "status"]
    if len(kept) != len(batch):
        held += [r for r in batch if r[0] == META and r[1] == "status"]
    return kept


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


def _remove_finished_log(log: Path, step=lambda: None) -> None:
    """Delete a log whose report holds every op it does: renamed oplog.done first (atomic), so a kill from then
    on leaves a name that says the db is complete (a reader finishes the deletion: finish_from_log), never a
    half-deleted log that a reader would rebuild a smaller report from."""
    done = log.with_name(OPLOG_DONE_DIR)
    # OSError: a folder that cannot be written (read-only media), or oplog.done a file or someone else's folder:
    # what is left stays, whole or marked done, for `ttreport check` to name.
    with contextlib.suppress(OSError):
        remove_log(done)  # one an earlier kill left: out of the rename's way
        os.rename(log, done)
        step()  # 3: renamed
        n = 1
        while os.path.lexists(segment_path(done, n)):
            os.unlink(segment_path(done, n))
            step()  # 4, 5, ...: each segment
            n += 1
        remove_log(done)  # its progress note, and the folder
        if os.path.lexists(done):  # files of someone else's were in it: they stay where they were
            os.rename(done, log)


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
    writer = _writer(folder / DB_FILE, tail, options)
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
        _remove_finished_log(folder / OPLOG_DIR, step)
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
def finish_from_log(folder: str | os.PathLike, *, remove_unused: bool = False) -> bool:
    """Finish what the writer process of `folder`'s capture left: rebuild db.sqlite from its op log, or delete a
    log the db holds all of. True: db.sqlite is the report (rebuilt, or there was nothing to rebuild from).

    The caller holds the folder's lock (no capture or writer process is writing it).
    - oplog.done: the writer process had finished (the db holds every op) and was deleting it: deleted.
    - oplog beside a report that says it is closed (its status, or log_finished: written only once the db holds
      every op, _finish): not rebuilt from. It stays, for `ttreport check` to name, unless remove_unused (the
      capture whose log it is, or `ttreport check --repair`) and it holds no op more than the db.
    - oplog beside a report that is not closed: the report is rebuilt beside the old db from the whole log,
      with the old db's report_metadata, and replaces it only when whole and holding at least the old db's ops
      (never fewer: a half-deleted log made a 250,000-op report one of 98,635); the log is deleted last. A
      failure or a refusal (said in one line, a ReportIncompleteWarning) leaves the db and the log as they were.
    """
    folder = Path(folder)
    log = folder / OPLOG_DIR
    done = folder / OPLOG_DONE_DIR
    if done.is_dir() and not done.is_symlink():
        with contextlib.suppress(OSError):  # a folder that cannot be written: check names it
            remove_log(done)  # a kill cut its deletion short: the report holds every op
    if not os.path.lexists(log):
        return True
    db_path = folder / DB_FILE
    meta, old_ops = _old_report(db_path)
    why = unreadable_log(log)
    if why is not None:
        return _refuse(log, why)
    if closed(meta):
        if remove_unused and count_log(log)[0] <= old_ops:
            _remove_finished_log(log)
        return True
    from ttreport import db

    tmp = folder / (DB_FILE + REBUILD_SUFFIX)
    _discard(tmp)
    try:
        db.create(tmp, indexes=False)
        con = sqlite3.connect(tmp)
        with con:
            con.executemany("INSERT OR REPLACE INTO report_metadata (key, value) VALUES (?, ?)", meta.items())
        con.close()
    except Exception:  # noqa: BLE001 - SQLAlchemy's or SQLite's (a full disk): the old db and the log stay
        _discard(tmp)
        return False
    options, refused = _old_options(folder)
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
    except Exception as e:  # noqa: BLE001 - a log this version cannot decode (damaged, or not a capture's): refused
        if writer.con is not None:
            writer.con.close()
        tail.close()
        _discard(tmp)
        return _refuse(log, f"its records cannot be read ({type(e).__name__}: {e})")
    finally:
        if collecting:
            gc.enable()
    rebuilt = _ops(writer.con) if writer.con is not None and writer.error is None else 0
    if writer.error is None and rebuilt < old_ops:
        writer.con.close()
        tail.close()
        _discard(tmp)
        return _refuse(log, f"it holds {rebuilt} ops, fewer than the {old_ops} of {DB_FILE} beside it, which a "
                            f"rebuild from it would lose")
    damaged = tail.damage  # the log read to a write that does not read: what follows it is not in the report
    if not stopped and writer.con is not None:
        note = ("from the op log by a reader: the capture and its writer process were killed; every op the "
                "capture recorded is here" if damaged is None else
                f"from the op log by a reader: the capture and its writer process were killed; {damaged}, and the "
                f"ops after it are not here (the log is kept beside the report for `ttreport check`)")
        if refused:
            note += f" (config.json's {refused} not allowed: the defaults used)"
        notes = [(META, "log_finished", note)] + ([(META, "log_damaged", damaged)] if damaged else [])
        writer._write([*notes, *files.notes()])
    if writer.con is not None:
        writer._close()
    tail.close()
    if writer.error is not None:
        _discard(tmp)  # the old db and the log stay as they were
        return False
    for sidecar in _sidecars(db_path):  # the old WAL must not be replayed into the new file
        with contextlib.suppress(FileNotFoundError):
            sidecar.unlink()
    os.replace(tmp, db_path)
    if damaged is None:  # a damaged log stays: what is past the damage may be more ops, which this version can't read
        _remove_finished_log(log)
    return True


def count_log(log: Path) -> tuple[int, int]:
    """The ops an op log holds and its bytes of records, read as a rebuild reads it (to its end, or its first
    torn record or missing segment): ~30 µs an op."""
    tail = LogTail(log)
    ops = 0
    try:
        while True:
            records, more = tail.read(REBUILD_BATCH_MAX)
            ops += sum(1 for r in records if r[0] == OP)
            if not more:
                return ops, tail.done + tail.off
    finally:
        tail.close()


def unreadable_log(log: Path) -> str | None:
    """Why `log` is not read (a link, or a segment that is not a plain file: it would read outside the folder),
    or None."""
    if log.is_symlink() or not log.is_dir():
        return "it is not a folder the capture made (a link, or a file)"
    n = 1
    while os.path.lexists(segment_path(log, n)):
        if not segment_path(log, n).is_file() or segment_path(log, n).is_symlink():
            return f"its {segment_path(log, n).name} is not a plain file (a link?)"
        n += 1
    return None


def _refuse(log: Path, why: str) -> bool:
    """Say in one line why the report is not rebuilt from `log` (which stays, as does the db); False."""
    # The log's path as the warning's place: shown as one line, with no source line under it.
    warnings.warn_explicit(f"the report is not rebuilt from this op log: {why}; both are left as they are "
                           f"(`ttreport check {log.parent}` says more)", ReportIncompleteWarning, str(log), 0)
    return False


def _discard(tmp: Path) -> None:
    for leftover in (tmp, *_sidecars(tmp)):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()


def _ops(con: sqlite3.Connection) -> int:
    return con.execute("SELECT COUNT(*) FROM operations").fetchone()[0]


def _sidecars(db_path: Path) -> list[Path]:
    return [db_path.with_name(db_path.name + s) for s in ("-wal", "-shm", "-journal")]


def _old_report(db_path: Path) -> tuple[dict, int]:
    """The report_metadata a capture wrote at its start (versions, status, ids), and the ops the old db holds,
    from the old db as far as it reads ({}, 0: not at all)."""
    meta, ops = {}, 0
    try:
        con = sqlite3.connect(db_path)
        try:
            meta = dict(con.execute("SELECT key, value FROM report_metadata"))
            ops = _ops(con)
        finally:
            con.close()
    except sqlite3.Error:
        return meta, ops  # what could be read: the metadata of a db whose operations are damaged, say
    return meta, ops


def _old_options(folder: Path) -> tuple[dict, dict]:
    """The writer options config.json records, each checked as Config checks it (one it refuses takes its
    default), and those refused. A folder is data from elsewhere: its flush_ops of 0 made the rebuild spin."""
    try:
        saved = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        saved = {}
    config, refused = Config.read_back(saved.get("config") if isinstance(saved, dict) else None)
    options = {k: getattr(config, k) for k in _OPTIONS}
    options["flush_ops"] = min(options["flush_ops"], REBUILD_BATCH_MAX)
    options["perf_files"] = False  # as before: a rebuilt report's perf files are `ttreport perf-csv`'s
    return options, {k: v for k, v in refused.items() if k in _OPTIONS}
