"""Recovery of a killed capture: what a reader does with what it left, before reading the report.

    from ttreport.recovery import recover
    recover(Path("generated/ttreport/reports/run-1/db.sqlite"))  # True: db.sqlite stands alone, holding every op

A capture that could not close leaves one or two things beside its db: a process writer's op log (oplog/, when the
writer process was killed too; oplog.done/, when it was killed while deleting a log the db holds all of), and a
WAL (db.sqlite-wal) holding its committed batches. The first reader that may write the folder (`ttreport.open`,
every CLI command, `ttreport check --repair`) calls recover(): under the folder's lock, never while a capture holds
it, it finishes the op log (finish_from_log: rebuilds the report from the whole log, or deletes a log the db holds
all of), then folds the WAL (ttreport.wal). A capture whose writer process died calls finish_from_log on its own
folder too (writer_process.WriterProcess.join).

The end of a log, in an order that a kill at any instant leaves the whole log or a report that holds every op: the
db is written and closed; then its closing note (the capture's status, or log_finished) is committed, so a report
that says it is complete holds every op; then the log's folder is renamed oplog.done (atomic), and only then
deleted. A reader finding oplog.done finishes the deletion; one finding oplog beside a report that is not closed
rebuilds from it, and never replaces the db with a rebuild that holds fewer ops.

Imports the standard library and the shared floor only, so readers that never import torch call it: the rebuild
runs the capture's writer code (ttreport.capturing.log_writer: torch, device_sim), imported only when a log is there.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sqlite3
import warnings
from pathlib import Path

from ttreport import wal
from ttreport.config import Config
from ttreport.errors import ReportIncompleteWarning
from ttreport.folder import (
    DB_FILE,
    LIFETIMES_FILE,
    OPLOG_DIR,
    OPLOG_DONE_DIR,
    REBUILD_SUFFIX,
    RESERVE_FILE,
    closed,
    hold_folder,
    remove_log,
    remove_temporary_files,
    segment_path,
)

# A rebuild's batches hold at most this many records, whatever config.json says: Config's own queue_max default,
# the most a thread writer holds. A folder's flush_ops of 10**12 would have read a whole log into one batch.
REBUILD_BATCH_MAX = 100_000


def recover(db_path: str | os.PathLike, *, remove_unused_log: bool = False) -> bool:
    """Finish what a killed capture left beside `db_path`; True when db.sqlite now stands alone (or already did).

    False, changing nothing, while a capture holds the folder, while another reader holds a snapshot, or when the
    folder or file cannot be written (or the disk is still full): the reader reads the WAL as is. An op log left
    beside it is finished first (finish_from_log): rebuilt from, or, remove_unused_log (`ttreport check --repair`),
    deleted when the report says it holds every op.
    """
    db_path = Path(db_path)
    log = any(os.path.isdir(db_path.parent / name) for name in (OPLOG_DIR, OPLOG_DONE_DIR))
    if not log and not os.path.lexists(wal.wal_path(db_path)):
        return True
    lock_fd = hold_folder(db_path.parent)
    if lock_fd is False:
        return False  # a capture is writing this report
    try:
        if log and not finish_from_log(db_path.parent, remove_unused=remove_unused_log):
            return False
        return wal.fold(db_path)
    finally:
        if lock_fd is not None:  # a killed capture's lock: its reserve, scratch and half-written files are of no use
            for leftover in (RESERVE_FILE, LIFETIMES_FILE):
                with contextlib.suppress(OSError):
                    os.unlink(db_path.parent / leftover)
            with contextlib.suppress(OSError):
                remove_temporary_files(db_path.parent)
            os.close(lock_fd)


def log_contents(log: Path) -> tuple[str | None, int, int]:
    """Why the op log `log` is not read (a link, a segment that is not a plain file), else None; and the ops and
    bytes of records it holds. For `ttreport check`: the rebuild (finish_from_log) and this count are the one route
    into a killed capture's log."""
    why = unreadable_log(log)
    return (why, 0, 0) if why is not None else (None, *count_log(log))


def finish_from_log(folder: str | os.PathLike, *, remove_unused: bool = False) -> bool:
    """Finish what the writer process of `folder`'s capture left: rebuild db.sqlite from its op log, or delete a
    log the db holds all of. True: db.sqlite is the report (rebuilt, or there was nothing to rebuild from).

    The caller holds the folder's lock (no capture or writer process is writing it).
    - oplog.done: the writer process had finished (the db holds every op) and was deleting it: deleted.
    - oplog beside a report that says it is closed (its status, or log_finished: written only once the db holds
      every op, writer_process._finish): not rebuilt from. It stays, for `ttreport check` to name, unless
      remove_unused (the capture whose log it is, or `ttreport check --repair`) and it holds no op more than the db.
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
            from ttreport.capturing.log_writer import remove_finished_log  # the writer's code: torch (see below)

            remove_finished_log(log)
        return True
    # The writer's code, and so torch and device_sim (~1.2 s): imported only to rebuild from a killed capture's log.
    from ttreport import db
    from ttreport.capturing.log_tensors import FileWriter
    from ttreport.capturing.log_writer import OPTIONS, open_writer, pump, remove_finished_log
    from ttreport.capturing.oplog import LogTail
    from ttreport.capturing.records import META

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
    options, refused = _old_options(folder, OPTIONS)
    tail = LogTail(log)
    writer = open_writer(tmp, tail, options)
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
    for sidecar in wal.sidecars(db_path):  # the old WAL must not be replayed into the new file
        with contextlib.suppress(FileNotFoundError):
            sidecar.unlink()
    os.replace(tmp, db_path)
    if damaged is None:  # a damaged log stays: what is past the damage may be more ops, which this version can't read
        remove_finished_log(log)
    return True


def count_log(log: Path) -> tuple[int, int]:
    """The ops an op log holds and its bytes of records, read as a rebuild reads it (to its end, or its first
    torn record or missing segment): ~30 µs an op."""
    # The op log's modules: device_sim and torch (~1.2 s), for a log only.
    from ttreport.capturing.oplog import LogTail
    from ttreport.capturing.records import OP

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
    for leftover in (tmp, *wal.sidecars(tmp)):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()


def _ops(con: sqlite3.Connection) -> int:
    return con.execute("SELECT COUNT(*) FROM operations").fetchone()[0]


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


def _old_options(folder: Path, names: tuple) -> tuple[dict, dict]:
    """The writer options `names` that config.json records, each checked as Config checks it (one it refuses takes its
    default), and those refused. A folder is data from elsewhere: its flush_ops of 0 made the rebuild spin."""
    try:
        saved = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        saved = {}
    config, refused = Config.read_back(saved.get("config") if isinstance(saved, dict) else None)
    options = {k: getattr(config, k) for k in names}
    options["flush_ops"] = min(options["flush_ops"], REBUILD_BATCH_MAX)
    return options, {k: v for k, v in refused.items() if k in names}
