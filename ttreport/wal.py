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
import os
import sqlite3
import stat
from pathlib import Path

from ttreport.errors import ReportError

VIEW = "view"  # _operations: the database's operations is a view
FOLD_WAIT_MS = 200  # a reader mid-query keeps the fold from completing; it is not waited for longer


def wal_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + "-wal")


def sidecars(db_path: Path) -> list[Path]:
    """The files SQLite opens beside `db_path`: its WAL, the WAL's index and its rollback journal."""
    return [db_path.with_name(db_path.name + suffix) for suffix in ("-wal", "-shm", "-journal")]


def refuse_odd_sidecars(db_path: Path) -> None:
    """Raise ReportError where a file SQLite opens beside `db_path` (sidecars) is a link or not a regular file: none
    that SQLite made. It writes them in place (through a link: a file outside the folder), and the open of a FIFO
    never returns: every reading command hung on a db.sqlite-journal that was one. Before any SQLite open of a
    folder's db."""
    for path in sidecars(db_path):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            raise ReportError(f"{path} is a link (to {os.readlink(path)}), never a file SQLite made: reading the "
                              f"report would write through it; move it out of the folder")
        if not stat.S_ISREG(mode):
            raise ReportError(f"{path} is not a regular file (a FIFO, a folder or a device), never a file SQLite made: "
                              f"SQLite opens it with the report (a FIFO never answers); move it out of the folder")


def fold(db_path: str | os.PathLike) -> bool:
    """Fold `db_path`'s left-over WAL into it; True when db.sqlite now stands alone (or already did). The caller
    holds the folder's lock (ttreport.recovery.recover, which finishes an op log left beside it first).

    False, changing nothing, while another reader holds a snapshot, or when the folder or file cannot be written
    (or the disk is still full).
    """
    db_path = Path(db_path)
    if not os.path.lexists(wal_path(db_path)):
        return True
    if db_path.is_symlink():  # SQLite reads the WAL beside the link's target, and a fold would write the target
        return False
    refuse_odd_sidecars(db_path)
    # A capture only adds ops, so a WAL that leaves fewer than db.sqlite holds alone is not its capture's: a planted
    # one made `ttreport summary` rewrite a complete 66-op report to 3. Refused, nothing written (DESIGN.md: never
    # replace a db with one holding fewer ops). A db.sqlite that cannot be read alone (a killed capture's) is folded.
    uri = db_path.resolve().as_uri()
    alone = _operations(f"{uri}?immutable=1")
    if alone == VIEW:  # counted, a recursive one never ends; folded, the WAL may change what readers then refuse
        raise ReportError(f"{db_path} is not a report ttreport wrote: operations is a view where a report holds a "
                          f"table (a view runs SQL the folder brings); read the report its capture wrote")
    if alone is not None:
        folded = _operations(f"{uri}?mode=ro&vfs=unix-none", exclusive=True)
        if not isinstance(folded, int) or folded < alone:
            left = f"{folded:,} ops of the {alone:,}" if isinstance(folded, int) else \
                f"no operations table of the {alone:,} ops"
            raise ReportError(f"{wal_path(db_path)} would leave {left} that {db_path.name} holds: it is not this "
                              f"report's (a capture only adds ops); move it out of the folder")
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


def _operations(uri: str, *, exclusive: bool = False) -> int | str | None:
    """How many ops the database at `uri` holds; VIEW when its operations is a view (never read: a view under that
    name runs SQL the folder brings, and a recursive one never ends); None when it cannot be read so, or holds no
    operations.

    exclusive: read the WAL through an index in this process's memory, never a db.sqlite-shm beside it. A mode=ro
    read of a WAL makes that file, and a refused WAL left it in the folder a reading command refused to change.
    SQLite keeps a WAL's index in memory in EXCLUSIVE locking mode, which a mode=ro file can take only on the
    unix-none VFS (no file locks: the caller holds the folder's lock, so no capture writes the db meanwhile)."""
    try:
        con = sqlite3.connect(uri, uri=True)
        try:
            if exclusive:
                con.execute("PRAGMA locking_mode = EXCLUSIVE")
            kind = con.execute("SELECT type FROM sqlite_master WHERE name = 'operations'").fetchone()
            if kind != ("table",):
                return VIEW if kind == ("view",) else None
            return con.execute("SELECT COUNT(*) FROM operations").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return None
