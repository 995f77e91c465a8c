"""A run of the store as a report folder: `ttreport.open(URL, run=...)` reads it with the same Report.

The run's rows are copied once into a SQLite report in a local cache folder (a run never changes
once pushed: the cache is keyed by its UUID), built under a temporary name and renamed into place,
so every reader, the CLI's commands and exports included, answers from the same code as for a
folder. Its tensor files are hard links into the tensor store (copies across filesystems). The
cache is bounded, least recently used run out first (cache.py: TTREPORT_STORE_CACHE_RUNS / _BYTES).

    from ttreport.store import open_run
    report = open_run("postgresql:///ttreport", run="nightly-1234")
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from ttreport import db
from ttreport.folder import REVISION_KEY, SCHEMA_VERSION_KEY
from ttreport.store import cache
from ttreport.store.connection import StoreError, connect, ensure_schema, shown, split_url, talking_to
from ttreport.store.push import TENSORS_DIR

CACHE_ENV = cache.ROOT_ENV
cache_root = cache.root


def find_run(conn, url: str, run) -> tuple:
    """The `runs` row (run_id, report_uuid, name, tensor_dir) that `run` names: a run_id, a UUID or a name."""
    if run is None or str(run).strip() == "":
        raise StoreError(f"name a run of {shown(url)} with --run (run=...); `ttreport runs {shown(url)}` lists them")
    text = str(run)
    sql = "SELECT run_id, report_uuid, name, tensor_dir FROM runs WHERE "
    rows = conn.execute(sql + "report_uuid = %s", (text,)).fetchall()
    if not rows and text.isdigit():
        rows = conn.execute(sql + "run_id = %s", (int(text),)).fetchall()
    if not rows:
        rows = conn.execute(sql + "name = %s ORDER BY run_id", (text,)).fetchall()
    if not rows:
        raise StoreError(f"no run {text!r} in {shown(url)}: give a name, run id or UUID that "
                         f"`ttreport runs {shown(url)}` lists")
    if len(rows) > 1:
        ids = ", ".join(f"{r[0]} ({r[1]})" for r in rows)
        raise StoreError(f"{len(rows)} runs of {shown(url)} are named {text!r}: runs {ids}; give one's run id or UUID")
    return rows[0]


def materialize(url: str, run) -> Path:
    """The local report folder holding run `run` of the store at `url` (made on first use; making one
    evicts the least recently used others past the cache's limits)."""
    limits = cache.Limits.from_env()  # a bad limit is said before any copying
    with talking_to(url):
        return _materialize(url, run, limits)


def _materialize(url: str, run, limits: cache.Limits) -> Path:
    conn = connect(url)
    try:
        ensure_schema(conn)
        run_id, ident, _, tensor_dir = find_run(conn, url, run)
        folder = cache_root() / ident
        if (folder / db.DB_FILE).is_file() and cache.touch(folder):
            return folder
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = folder.parent / f".{ident}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            _fill(conn, run_id, tmp / db.DB_FILE)
            if tensor_dir is not None:
                _link_tensors(url, tensor_dir, tmp)
            try:
                os.rename(tmp, folder)
            except OSError:
                if not (folder / db.DB_FILE).is_file():  # else another reader made it first: the same run
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        cache.touch(folder)
        cache.prune(max_runs=limits.max_runs, max_bytes=limits.max_bytes, keep=folder)
        return folder
    finally:
        conn.close()


def _fill(conn, run_id: int, path: Path) -> None:
    from ttreport.store import tables  # SQLAlchemy: imported only to make a run's cache

    db.create(path, indexes=False)
    out = sqlite3.connect(path)
    try:
        with conn.transaction():
            conn.execute("SET TRANSACTION READ ONLY")
            with out:
                for table in tables.REPORT_TABLES:
                    cols = tables.report_columns(table.name)
                    if table.name == "report_metadata":  # below, less the version notes
                        continue
                    names = ", ".join(f'"{c}"' for c in cols)
                    order = ", ".join(tables.order_by(table.name))
                    cur = conn.cursor(name=f"pull_{table.name}")  # server-side: a big run is not held at once
                    cur.execute(f"SELECT {names} FROM {table.name} WHERE run_id = %s ORDER BY {order}", (run_id,))
                    marks = ", ".join("?" * len(cols))
                    while batch := cur.fetchmany(10_000):
                        out.executemany(f"INSERT INTO {table.name} ({names}) VALUES ({marks})", batch)
                    cur.close()
                # the new file's own version notes stay (db._versions): the run may have been pushed from an older one
                cur = conn.execute("SELECT key, value FROM report_metadata WHERE run_id = %s AND key NOT IN (%s, %s)",
                                   (run_id, SCHEMA_VERSION_KEY, REVISION_KEY))
                out.executemany("INSERT OR REPLACE INTO report_metadata (key, value) VALUES (?, ?)", cur.fetchall())
            db.create_indexes(out)
            out.commit()
    finally:
        out.close()


def _link_tensors(url: str, tensor_dir: str, folder: Path) -> None:
    _, store = split_url(url)
    if store is None:
        return  # readers find no files and say so per tensor, as for a folder whose files were removed
    # Only the run's tensors/: a run pushed by an older ttreport has its folder at <report UUID>/, where a
    # later push of the same report into another store puts its own <push UUID>/ folder (push.py).
    source = Path(store) / tensor_dir / TENSORS_DIR
    if not source.is_dir() or not source.resolve().is_relative_to(Path(store).resolve()):
        return  # a run row naming a folder outside the tensor store (`..`, a link out) gets no files from it
    # Hard links where the tensor store shares the cache's filesystem, else copies: a reader trusts
    # only files inside the report folder, never a symbolic link out of it (storage.load_tensor).
    for path in source.rglob("*"):
        if path.is_symlink():
            continue  # a link planted in the shared store: its target is no file a push wrote (rglob skips into
            # linked folders already; os.link and copyfile would follow a linked file)
        target = folder / TENSORS_DIR / path.relative_to(source)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
        except OSError:
            shutil.copyfile(path, target)
