"""Folding a left-over write-ahead log back into db.sqlite, so a report is one file that stands alone.

    from ttreport.wal import fold
    fold(Path("generated/ttreport/reports/run-1/db.sqlite"))  # True: db.sqlite now holds every commit
    # (with the folder's lock held: readers call ttreport.recovery.recover, which takes it)

A capture writes in WAL mode and folds the log back when it closes. A capture that could not close
(SIGKILL, power loss) or could not fold (the disk was full) leaves its committed batches in
`db.sqlite-wal`: then `db.sqlite` copied alone is empty or "malformed". The first reader that may
write the folder folds it (ttreport.recovery.recover: `ttreport.open`, every CLI command, `ttreport check
--repair`): a checkpoint(TRUNCATE) and a switch back to the rollback journal, which removes -wal and -shm. That is
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
OPLOG_DIR = "oplog"  # a process writer's op log (ttreport.capture.oplog): what a killed one leaves (recovery)
OPLOG_DONE_DIR = "oplog.done"  # the op log renamed as it is deleted: its report holds every op (recovery)
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
    process writes either only once the db holds every op (ttreport.recovery)."""
    return meta.get("status") in CLOSED_STATUSES or "log_finished" in meta


def fold(db_path: str | os.PathLike) -> bool:
    """Fold `db_path`'s left-over WAL into it; True when db.sqlite now stands alone (or already did). The caller
    holds the folder's lock (ttreport.recovery.recover, which finishes an op log left beside it first).

    False, changing nothing, while another reader holds a snapshot, or when the folder or file cannot be written
    (or the disk is still full).
    """
    db_path = Path(db_path)
    if not os.path.lexists(wal_path(db_path)):
        return True
    try:
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
    return True


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


def hold_folder(folder: Path) -> int | None | bool:
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
