"""A report folder: the names of what a capture writes into it, its lock, its reserve, and the overwrite policy.

    from ttreport import folder
    fd = folder.prepare(Path("generated/ttreport/reports/run-1"), overwrite=False)  # empty, locked: capture into it
    folder.capture_holds(Path("generated/ttreport/reports/run-1"))  # True until folder.unlock(path, fd)

    <root>/<name>/
      db.sqlite, config.json, tensors/    the report (DESIGN.md's "Report folder")
      .lock                               flock'd while a capture writes the folder; holds the capturing pid
      .reserve                            disk room held for the closing notes; a killed capture leaves it
      oplog/, oplog.done/                 a process writer's op log; what a killed one leaves (ttreport.recovery)

A capture (capturing/session.py) takes the folder with prepare(), which refuses a folder holding a report unless told
to overwrite it, and then deletes only what a capture writes (CAPTURE_FILES, tensor files, op log segments). A reader
that may write the folder (ttreport.recovery) takes the same lock with hold_folder() and never creates the lock
file. The kernel drops an flock with the last descriptor, so a killed capture never leaves the folder stuck.

Standard library only: the capture, the writer process, recovery and the readers (which never import torch) share it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sqlite3
import time
from pathlib import Path

from ttreport.errors import ReportExistsError, ReportInUseError, ReportPathError

DB_FILE = "db.sqlite"
CONFIG_FILE = "config.json"
TENSORS_DIR = "tensors"  # tensors/<tensor_id>.pt or .bin; a mesh tensor's shards in tensors/<tensor_id>/
LOCK_FILE = ".lock"
RESERVE_FILE = ".reserve"
# tensor_lifetime's rows, worked out beside a long capture's close (capturing/writer.py); a killed close leaves it
LIFETIMES_FILE = ".lifetimes.sqlite"
OPLOG_DIR = "oplog"  # a process writer's op log (ttreport.capturing.oplog): what a killed one leaves (recovery)
OPLOG_DONE_DIR = "oplog.done"  # the op log renamed as it is deleted: its report holds every op (recovery)
REBUILD_SUFFIX = ".rebuild"  # db.sqlite.rebuild: a report being rebuilt from its op log (recovery)
CLUSTER_DESCRIPTOR_FILE = "cluster_descriptor.yaml"
# Each chip's mesh coordinate, in a report of a multi-chip run; the name TT-NN 0.81's graph_report.py gives it
MESH_MAPPING_FILE = "physical_chip_mesh_coordinate_mapping_1_of_1.yaml"
PERF_FILE = "ops_perf_results.csv"  # TT-NN's perf rows (export/ops_perf.py)
DEVICE_LOG_FILE = "profile_log_device.csv"  # TT-NN's device profiler log (export/ops_perf.py)
# What a capture writes into its folder (besides tensors/, the op log and LOCK_FILE): all that overwrite deletes.
CAPTURE_FILES = (DB_FILE, f"{DB_FILE}-wal", f"{DB_FILE}-shm", f"{DB_FILE}-journal", CONFIG_FILE,
                 DB_FILE + REBUILD_SUFFIX, f".{CONFIG_FILE}.tmp", RESERVE_FILE, CLUSTER_DESCRIPTOR_FILE,
                 f".{CLUSTER_DESCRIPTOR_FILE}.tmp", MESH_MAPPING_FILE, f".{MESH_MAPPING_FILE}.tmp", LIFETIMES_FILE,
                 PERF_FILE, DEVICE_LOG_FILE)
# A tensor file (or its temporary name while written): tensors/<id>.pt, tensors/.<id>.pt.tmp, ...
_TENSOR_FILE = re.compile(r"\.?\d+\.(pt|bin)(\.[A-Za-z0-9_]+)*")
# Only the temporary name (storage.py: .<id>.pt.tmp, or tempfile.mkstemp's .<id>.pt.<8 characters>.tmp)
_TENSOR_TEMP = re.compile(r"\.\d+\.(pt|bin)(\.[A-Za-z0-9_]+)?\.tmp")
# An op log's own files: its segments, its progress note, the perf files' parts the writer process renders.
_LOG_FILE = re.compile(r"\d+\.(seg|tmp)|\.progress(\.tmp)?|\.(ops_perf_results|profile_log_device)\.csv\.part")
CLOSED_STATUSES = ("complete", "error", "interrupted")  # a capture that closed its report wrote one of these
# report_metadata's schema_version is TT-NN's own database version, as ttnn/graph_report.py writes it
# (DATABASE_SCHEMA_VERSION = 2): ttnn-visualizer 0.108 warns "Incompatible report version" past major 3, and read
# ttreport's alembic revision there ("0011") as v11.0.0. ttreport's revision has a key of its own (db._versions).
# Here, not in schema.py (which re-exports them), whose module imports SQLAlchemy (~0.1 s).
SCHEMA_VERSION_KEY = "schema_version"
TTNN_SCHEMA_VERSION = "2"
REVISION_KEY = "ttreport_schema_revision"
# The notes written at close (status, end time, losses) take a few pages of the WAL: 64 KiB holds them.
RESERVE_BYTES = 64 << 10
# A killed capture's writer process holds the folder's lock while it writes the rest of the op log: a new
# capture into the folder waits this long for it (a 20,000-op backlog takes ~1 s) before it is refused.
ORPHAN_WAIT_S = 10.0


def closed(meta: dict) -> bool:
    """Whether a report's metadata says its db holds every op its capture recorded: the capture closed it (its
    status), or its op log was written to the end after the capture was killed (log_finished). The writer
    process writes either only once the db holds every op (ttreport.recovery)."""
    return meta.get("status") in CLOSED_STATUSES or "log_finished" in meta


def segment_path(log: Path, n: int) -> Path:
    """The n-th segment (from 1) of the op log in folder `log`."""
    return log / f"{n:06d}.seg"


def remove_log(log: Path) -> None:
    """Delete an op log's segments and progress note, and its folder unless something else is in it."""
    if not log.is_dir() or log.is_symlink():
        return
    for entry in log.iterdir():
        if _LOG_FILE.fullmatch(entry.name) and entry.is_file() and not entry.is_symlink():
            entry.unlink()
    with contextlib.suppress(OSError):
        log.rmdir()


# -- the lock -----------------------------------------------------------------------------------------
def lock_folder(folder: Path) -> int:
    """Take `folder`'s lock for a capture, creating the lock file and writing this pid into it; its descriptor.
    ReportInUseError when another capture holds it (or, after ORPHAN_WAIT_S, a killed capture's writer process)."""
    lock = folder / LOCK_FILE
    deadline = time.monotonic() + ORPHAN_WAIT_S
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            if holder.isdigit() and not _alive(int(holder)):
                # The capturing process is gone but the lock is held: its writer process is writing the rest of
                # the op log into the report. Wait for it (briefly) rather than refuse a re-run after a kill.
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise ReportInUseError(
                    f"report folder {folder} is in use: the process that captured into it (pid {holder}) has "
                    f"ended, and its writer process is still writing the report from its op log after "
                    f"{ORPHAN_WAIT_S:g} s; try again once it has finished, or capture into another folder"
                ) from None
            raise ReportInUseError(
                f"report folder {folder} is in use: another process "
                f"({f'pid {holder}' if holder.isdigit() else 'pid unknown'}) is capturing into it; wait for it "
                f"to close its capture, or capture into another folder"
            ) from None
        try:
            if os.path.samestat(os.fstat(fd), os.stat(lock)):
                break
        except FileNotFoundError:
            pass
        os.close(fd)  # its holder removed it as it let go: lock the file that is there now
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def unlock(folder: Path, fd: int) -> None:
    """Let go of the lock `fd` that lock_folder took. The file is removed while still held: whoever opened the
    old file sees it is gone and takes a new one."""
    with contextlib.suppress(OSError):
        os.unlink(folder / LOCK_FILE)
    os.close(fd)


def hold_folder(folder: Path) -> int | None | bool:
    """The folder's capture lock, taken by a reader (its descriptor), None when there is no lock file (no capture
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def reserve_room(path: Path) -> None:
    """Hold RESERVE_BYTES of the disk in a file that close deletes before it writes the status: when the
    disk fills during a capture, the report can still say it is complete and what it lost."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        os.posix_fallocate(fd, 0, RESERVE_BYTES)
    except OSError:
        os.ftruncate(fd, 0)  # not even that much room: the capture runs, as it would without the reserve
    finally:
        os.close(fd)


# -- the overwrite policy -------------------------------------------------------------------------------
def prepare(path: Path, overwrite: bool, *, replace_later: bool = False) -> int:
    """Make `path` an empty report folder that this process holds; returns the lock's descriptor.

    The lock is taken before anything in the folder is deleted or written, and the folder is checked
    again under it: a second capture into a live report is refused, even with overwrite=True.
    Overwriting deletes only what a capture writes (CAPTURE_FILES, tensor files, op log files); anything else the
    folder holds stays. replace_later: the report being overwritten stays until the caller has its replacement
    whole and calls remove_report_files (ttreport import), so a failure on the way keeps it.
    """
    refuse_existing(path, overwrite)  # before writing anything (even the lock file)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd = lock_folder(path)
    except OSError as e:
        raise ReportPathError(
            f"cannot create the report folder {path} ({type(e).__name__}: {e.strerror or e}); capture into a "
            f"writable folder: set Config(root=...) (or TTREPORT_CONFIG's \"root\") or pass another path"
        ) from None
    try:
        refuse_existing(path, overwrite)
        if not replace_later:
            remove_report_files(path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def holds_report(path: Path) -> bool:
    """Whether capturing into `path` would be refused as a report already there (see refuse_existing)."""
    return os.path.lexists(path) and not (path.is_dir() and not [e for e in path.iterdir() if e.name != LOCK_FILE])


def refuse_existing(path: Path, overwrite: bool) -> None:
    """ReportExistsError when `path` holds something a capture may not write over: anything but an empty folder
    (or one holding only a killed capture's lock file), or, with overwrite, anything but a ttreport report."""
    if not holds_report(path):
        return
    if not overwrite:
        raise ReportExistsError(
            f"report folder {path} exists already and reports are never overwritten silently; "
            f"pass a new name, or Config(overwrite=True) (`ttreport run --overwrite`) to replace it"
        )
    why = not_a_report(path)
    if why is not None:
        raise ReportExistsError(
            f"{path} exists and is not a report folder that ttreport made ({why}); overwrite=True replaces only "
            f"ttreport's reports, so capture into another folder, or empty this one yourself"
        )


def not_a_report(path: Path) -> str | None:
    """Why `path` is not a folder holding a report that ttreport made; None when it is one."""
    if path.is_symlink() or not path.is_dir():
        return "not a folder"
    db_path = path / DB_FILE
    if db_path.is_symlink() or not db_path.is_file():
        return f"it has no {DB_FILE}"
    with open(db_path, "rb") as f:
        if f.read(16) != b"SQLite format 3\x00":
            return f"its {DB_FILE} is not a SQLite database"
    try:
        # Read-write only so that SQLite may recover the WAL a killed capture left; nothing is written.
        con = sqlite3.connect(db_path)
        try:
            # Every ttreport report notes its schema_version (reports from before alembic: their status).
            row = con.execute("SELECT 1 FROM report_metadata WHERE key IN (?, 'status')",
                              (SCHEMA_VERSION_KEY,)).fetchone()
        finally:
            con.close()
    except sqlite3.Error as e:
        return f"its {DB_FILE} has no ttreport report_metadata ({e})"
    if row is None:
        return f"its {DB_FILE} has neither a schema_version nor a status in report_metadata"
    return None


def remove_report_files(path: Path) -> None:
    """Delete what a capture writes into the folder `path` (CAPTURE_FILES, tensor files, op log files), which the
    caller holds (prepare); anything else stays."""
    for name in CAPTURE_FILES:
        entry = path / name
        if entry.is_symlink() or entry.is_file():
            entry.unlink()
    for log in (OPLOG_DIR, OPLOG_DONE_DIR):  # a process writer's op log (its segments and progress note only)
        remove_log(path / log)
    _remove_tensor_files(path, _TENSOR_FILE)
    with contextlib.suppress(OSError):  # not empty (or not there): it holds something a capture did not write
        (path / TENSORS_DIR).rmdir()


def remove_temporary_files(path: Path) -> None:
    """Delete the tensor files a killed capture left half written, under their temporary names (a finished file
    keeps its own). The caller holds the folder's lock: no capture is writing them."""
    _remove_tensor_files(path, _TENSOR_TEMP)


def _remove_tensor_files(path: Path, names: re.Pattern) -> None:
    """Delete the files of tensors/ (and of a mesh tensor's tensors/<id>/) whose names `names` matches; a link is
    removed, never followed."""
    tensors = path / TENSORS_DIR
    if not tensors.is_dir() or tensors.is_symlink():
        return
    for entry in tensors.iterdir():
        if names.fullmatch(entry.name) and (entry.is_symlink() or entry.is_file()):
            entry.unlink()
        elif entry.name.isdigit() and entry.is_dir() and not entry.is_symlink():  # a mesh tensor's shards
            for shard in entry.iterdir():
                if names.fullmatch(shard.name) and (shard.is_symlink() or shard.is_file()):
                    shard.unlink()
            with contextlib.suppress(OSError):  # kept when it holds something else
                entry.rmdir()


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
