"""Folding a left-over write-ahead log back into db.sqlite, so a report is one file that stands alone.

    from ttreport.wal import fold
    fold(Path("generated/ttreport/reports/run-1/db.sqlite"))  # True: db.sqlite now holds every commit

A capture writes in WAL mode and folds the log back when it closes. A capture that could not close
(SIGKILL, power loss) or could not fold (the disk was full) leaves its committed batches in
`db.sqlite-wal`: then `db.sqlite` copied alone is empty or "malformed". The first reader that may
write the folder folds it (`ttreport.open`, every CLI command, `ttreport check --repair`): a
checkpoint(TRUNCATE) and a switch back to the rollback journal, which removes -wal and -shm. That is
SQLite's own recovery; nothing in the report changes. It is never done while a capture holds the
folder's lock, and a reader that cannot write (read-only media, another user's files) reads the
WAL as before.

Imports only the standard library: readers that never import torch use it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from pathlib import Path

LOCK_FILE = ".lock"  # flock'd while a capture writes the folder; holds the capturing pid (capture/session.py)
OPLOG_DIR = "oplog"  # a process writer's op log (ttreport.capture.oplog): what a killed one leaves to finish from
OPLOG_DONE_DIR = "oplog.done"  # the op log renamed as it is deleted: its report holds every op (writer_process)
CLOSED_STATUSES = ("complete", "error", "interrupted")  # a capture that closed its report wrote one of these
RESERVE_FILE = ".reserve"  # disk space a capture holds for its closing notes; a killed one leaves it
# tensor_lifetime's rows, worked out beside a long capture's close (capture/writer.py); a killed close leaves it
LIFETIMES_FILE = ".lifetimes.sqlite"
FOLD_WAIT_MS = 200  # a reader mid-query keeps the fold from completing; it is not waited for longer


def wal_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + "-wal")


def closed(meta: dict) -> bool:
    """Whether a report's metadata says its db holds every op its capture recorded: the capture closed it (its
    status), or its op log was written to the end after the capture was killed (log_finished). The writer
    process writes either only once the db holds every op (ttreport.capture.writer_process)."""
    return meta.get("status") in CLOSED_STATUSES or "log_finished" in meta


def fold(db_path: str | os.PathLike, *, remove_unused_log: bool = False) -> bool:
    """Fold `db_path`'s left-over WAL into it; True when db.sqlite now stands alone (or already did).

    False, changing nothing, while a capture holds the folder, while another reader holds a snapshot,
    or when the folder or file cannot be written (or the disk is still full). An op log left beside it is
    finished first (writer_process.finish_from_log): rebuilt from, or, remove_unused_log (`ttreport check
    --repair`), deleted when the report says it holds every op.
    """
    db_path = Path(db_path)
    # A process writer's op log: the report is rebuilt from it (or, marked done, it is deleted).
    log = any(os.path.isdir(db_path.parent / name) for name in (OPLOG_DIR, OPLOG_DONE_DIR))
    if not log and not os.path.lexists(wal_path(db_path)):
        return True
    lock_fd = _hold_folder(db_path.parent)
    if lock_fd is False:
        return False  # a capture is writing this report
    try:
        if log:
            # Imports torch: only for a killed capture's log.
            from ttreport.capture.writer_process import finish_from_log

            if not finish_from_log(db_path.parent, remove_unused=remove_unused_log):
                return False
            if not os.path.lexists(wal_path(db_path)):
                return True
        con = sqlite3.connect(db_path, timeout=FOLD_WAIT_MS / 1000, isolation_level=None)
        try:
            if con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]:
                return False  # busy: a reader holds an older snapshot
            # Every commit is in db.sqlite now; the switch removes -wal and -shm, unless another reader
            # has the file open (then an empty -wal stays, which SQLite ignores).
            with contextlib.suppress(sqlite3.OperationalError):
                con.execute("PRAGMA journal_mode=DELETE")
        finally:
            con.close()
    except sqlite3.Error:
        return False  # read-only folder or file, disk still full, a reader in the way: read the WAL as is
    finally:
        if lock_fd is not None:  # a killed capture's lock: its reserve and scratch files are of no more use
            for leftover in (RESERVE_FILE, LIFETIMES_FILE):
                with contextlib.suppress(OSError):
                    os.unlink(db_path.parent / leftover)
            os.close(lock_fd)
    return True


def log_contents(log: Path) -> tuple[str | None, int, int]:
    """Why the op log `log` is not read (a link, a segment that is not a plain file), else None; and the ops and
    bytes of records it holds. For `ttreport check`: the rebuild (fold) and this count are the one route into a
    killed capture's log, both here on the floor the readers stand on (recovery in a module of its own is issue
    32's). Imports the writer process's code, and so torch: only for a report with a log left beside it."""
    from ttreport.capture.writer_process import count_log, unreadable_log

    why = unreadable_log(log)
    return (why, 0, 0) if why is not None else (None, *count_log(log))


def log_left(folder: str | os.PathLike) -> str | None:
    """A short note of an op log left in `folder` that no capture is writing, for a report's status line: what
    it is and its size on disk (None: there is none). `ttreport check` says more: the ops it holds, the fix."""
    folder = Path(folder)
    for name, what in ((OPLOG_DIR, "an op log left beside it"), (OPLOG_DONE_DIR, "a finished op log not deleted")):
        path = folder / name
        if os.path.lexists(path) and not capture_holds(folder):
            try:
                sizes = [e.stat(follow_symlinks=False).st_size for e in os.scandir(path) if e.name.endswith(".seg")]
            except OSError:
                sizes = []  # a link or a file of that name: check names it
            segments = f"{len(sizes)} segment" + ("" if len(sizes) == 1 else "s")
            return f"{what}: {name}/, {segments}, {sum(sizes) / 2**20:.1f} MiB on disk (ttreport check)"
    return None


def capture_holds(folder: str | os.PathLike) -> bool:
    """Whether a capture is writing the report in `folder` now: it holds the folder's lock. A report whose
    status is still "running" and that no capture holds was killed before it closed."""
    try:
        fd = os.open(Path(folder) / LOCK_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False  # closing removes the lock file
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # released by the close below
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _hold_folder(folder: Path) -> int | None | bool:
    """The folder's capture lock, taken (its descriptor), None when there is no lock file (no capture
    runs: close removes it), False when a capture holds it. A reader never creates the lock file."""
    try:
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:
        return False  # cannot take it (read-only, a link planted as the lock): do not fold
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    with contextlib.suppress(OSError):
        if os.path.samestat(os.fstat(fd), os.stat(folder / LOCK_FILE)):
            return fd
    os.close(fd)  # its holder removed it as it let go: a capture was closing or starting; leave it be
    return False
