"""The local cache of runs read from the store: bounded, least recently used run evicted first.

Reading a run copies it into `<cache root>/<uuid>/` (pull.py). Each read of a run marks its folder
used (its modification time); after a new run is copied in, the least recently used other runs are
removed until the cache holds at most `max_runs` runs and `max_bytes` bytes. The run just read is
never removed, even when it alone is over `max_bytes`.

    TTREPORT_STORE_CACHE=/scratch/ttreport-cache    # where (default ~/.cache/ttreport/store)
    TTREPORT_STORE_CACHE_RUNS=8                     # how many runs (default 20)
    TTREPORT_STORE_CACHE_BYTES=2GiB                 # how many bytes (default 10GiB; B, KiB, MiB, GiB, TiB)

    from ttreport.store import cache
    cache.prune(max_runs=2)   # the paths it removed, least recently used first

Bytes are what removing a run gives back: a tensor file hard-linked from the tensor store shares
its blocks with the store and is not counted. A run another process is reading when it is evicted
keeps what it has open (the SQLite file), and is copied in again at its next `ttreport.open`.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from ttreport.store.connection import StoreError

ROOT_ENV, RUNS_ENV, BYTES_ENV = "TTREPORT_STORE_CACHE", "TTREPORT_STORE_CACHE_RUNS", "TTREPORT_STORE_CACHE_BYTES"
DEFAULT_RUNS = 20  # a team's handful of baselines and recent nightlies
DEFAULT_BYTES = 10 * 2**30  # the sample run is ~1 MiB; a large model's run with tensors a few GiB
_UNITS = {"": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def root() -> Path:
    return Path(os.environ.get(ROOT_ENV) or Path.home() / ".cache" / "ttreport" / "store")


def _limit(env: str, default: int, bytes_: bool) -> int:
    text = os.environ.get(env, "").strip()
    if not text:
        return default
    m = re.fullmatch(r"(\d+)\s*([a-zA-Z]*)", text)
    unit = m.group(2).lower() if m else None
    if m is None or unit not in (_UNITS if bytes_ else {""}) or int(m.group(1)) < 1:
        form = "a whole number of bytes, or with KiB, MiB, GiB or TiB (2GiB)" if bytes_ else "a whole number (8)"
        raise StoreError(f"{env}={text!r} is not a cache limit: give {form}, at least 1, or unset it for the "
                         f"default ({default})")
    return int(m.group(1)) * _UNITS[unit]


@dataclass(frozen=True)
class Limits:
    max_runs: int
    max_bytes: int

    @classmethod
    def from_env(cls) -> Limits:
        """The limits TTREPORT_STORE_CACHE_RUNS / _BYTES set, else the defaults; a bad value is a StoreError."""
        return cls(_limit(RUNS_ENV, DEFAULT_RUNS, False), _limit(BYTES_ENV, DEFAULT_BYTES, True))


def touch(folder: Path) -> bool:
    """Mark a cached run used now (its place in the least-recently-used order); False if another process
    has just evicted it, so the caller copies it in again."""
    try:
        os.utime(folder)
    except FileNotFoundError:
        return False
    return True


def size(folder: Path) -> int:
    """The bytes removing `folder` gives back (files hard-linked elsewhere are not counted)."""
    total = 0
    for path in folder.rglob("*"):
        try:
            st = path.lstat()
        except FileNotFoundError:  # the folder is being evicted by another process: nothing to give back
            continue
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
            total += st.st_size
    return total


def cached_runs(where: Path | None = None) -> list[Path]:
    """The cached run folders, least recently used first (temporary folders of a copy under way are not runs)."""
    where = where or root()
    if not where.is_dir():
        return []
    used = {}
    for p in where.iterdir():
        if p.name.startswith("."):
            continue
        try:
            st = p.stat()
        except FileNotFoundError:  # evicted by another process since the listing
            continue
        if stat.S_ISDIR(st.st_mode):
            used[p] = st.st_mtime_ns
    return sorted(used, key=used.get)


def prune(*, max_runs: int | None = None, max_bytes: int | None = None, keep: Path | None = None) -> list[Path]:
    """Remove least recently used runs until at most max_runs runs and max_bytes bytes are cached (None:
    the environment's or default limit); `keep` is never removed. Returns the removed folders, oldest first."""
    limits = Limits.from_env()
    max_runs = limits.max_runs if max_runs is None else max_runs
    max_bytes = limits.max_bytes if max_bytes is None else max_bytes
    runs = cached_runs()
    sizes = {p: size(p) for p in runs}
    total, removed = sum(sizes.values()), []
    for folder in runs:
        if len(runs) - len(removed) <= max_runs and total <= max_bytes:
            break
        if keep is not None and folder.resolve() == keep.resolve():
            continue
        # Renamed first, so a reader sees the whole run or none; a run a reader is opening now comes back
        # complete at its next read.
        gone = folder.parent / f".{folder.name}.{os.getpid()}.evicted"
        try:
            os.rename(folder, gone)
        except FileNotFoundError:  # another process evicted it first
            pass
        else:
            shutil.rmtree(gone)
        removed.append(folder)
        total -= sizes[folder]
    return removed
