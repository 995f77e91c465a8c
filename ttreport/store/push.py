"""`ttreport push REPORT... --to URL`: upload report folders into a store, each in one transaction.

A report is known by its UUID (report_metadata's report_id, written at capture): pushing it again
finds its row in `runs` and writes nothing. Its rows go in with COPY; its tensor files are copied
into a folder of the tensor store that is this push's alone, `<report UUID>/<push UUID>/` (the
run's tensor_dir), renamed into place just before the commit. Several stores may share one tensor
store (a team-wide TTREPORT_TENSOR_STORE) and hold the same report: no push ever deletes or
rewrites a folder it did not make, so a push into one store cannot touch another's files. A killed
push leaves no rows and at most a folder no run names (a hidden `.UUID.PUSH.tmp` while copying; its
own push folder if killed between the rename and the commit), which nothing reads.

    from ttreport.store import push
    run_id, new = push("generated/ttreport/reports/demo", "postgresql:///ttreport?tensors=/mnt/t")
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path

from ttreport.folder import TENSORS_DIR, capture_holds
from ttreport.read.report import active_steps, check_schema, connect_readonly, resolve
from ttreport.store.connection import StoreError, connect, ensure_schema, split_url, talking_to

# For a report captured before capture wrote report_id: an identity from what the capture did write.
_LEGACY_NAMESPACE = uuid.UUID("6f1c2a4e-2d0b-4c55-9b0e-7d2f1e7c4a10")

# Each file a reader may load: a tensor's first stored values, and each later write into it (an in-place op,
# output_tensor=: tensor_writes, schema 0009; check_schema has made sure the report is at the head, with that table).
_FILES_SQL = """SELECT file FROM tensors WHERE file IS NOT NULL
                UNION SELECT file FROM tensor_writes WHERE file IS NOT NULL"""
_STATS_SQL = """
    SELECT o.name, t.shape, COUNT(*), SUM(o.duration), MAX(o.duration), MAX(o.l1_bytes), MIN(c.pcc),
           COUNT(p.ideal_ns), SUM(p.ideal_ns), MAX(p.ideal_ns)
    FROM operations o
    LEFT JOIN device_perf p ON p.operation_id = o.operation_id
    LEFT JOIN input_tensors i ON i.operation_id = o.operation_id AND i.input_index = 0
    LEFT JOIN tensors t ON t.tensor_id = i.tensor_id
    LEFT JOIN (SELECT operation_id, MIN(pcc) AS pcc FROM tensor_comparisons GROUP BY operation_id) c
           ON c.operation_id = o.operation_id
    WHERE o.name IS NOT NULL{active}
    GROUP BY o.name, t.shape"""


def shape_key(shape_text) -> str:
    """A shape's dims joined by 'x' ("Shape([1, 32, 64])", "[1,32,64]", "1x32x64" -> "1x32x64")."""
    return "x".join(re.findall(r"-?\d+", shape_text or ""))


def report_uuid(meta: dict) -> str:
    if meta.get("report_id"):
        return str(uuid.UUID(meta["report_id"]))
    basis = "|".join(str(meta.get(k)) for k in ("host", "started_at", "capture_timestamp_ns"))
    return str(uuid.uuid5(_LEGACY_NAMESPACE, basis))


def push(report, url: str, *, name: str | None = None, model: str | None = None) -> tuple[int, bool]:
    """Push the report folder `report` into the store at `url`: (its run_id, True if this push added it)."""
    db_path = resolve(report)
    folder = db_path.parent
    # Opened as a reader opens a folder (a killed capture's WAL folded; planted SQL and files refused): a view in
    # report_metadata's place made push never end, a left-over WAL was read through a -shm it made.
    src = connect_readonly(db_path)
    try:
        check_schema(src, db_path)  # NeedsUpgradeError names `ttreport upgrade`
        meta = dict(src.execute("SELECT key, value FROM report_metadata"))
        if meta.get("status") == "running" and capture_holds(folder):
            raise StoreError(f"{folder} is still being captured; push it after its capture closes")
        ident = report_uuid(meta)
        files = [f for (f,) in src.execute(_FILES_SQL)]
        _, tensor_store = split_url(url)
        if files and tensor_store is None:
            raise StoreError(f"{folder} holds {len(files)} tensor files and the store has no tensor store: add "
                             f"?tensors=/a/shared/dir to the URL or set TTREPORT_TENSOR_STORE")
        with talking_to(url):
            conn = connect(url)
            try:
                ensure_schema(conn)
                return _push(conn, src, folder, meta, ident, files, tensor_store, name or folder.name, model)
            finally:
                conn.close()
    finally:
        src.close()


def _push(conn, src, folder: Path, meta: dict, ident: str, files, tensor_store, name, model):
    tensor_dir = f"{ident}/{uuid.uuid4()}" if files else None
    staged = final = None
    try:
        with conn.transaction():
            row = conn.execute(
                "INSERT INTO runs (report_uuid, name, model, host, git_commit, started_at, status, operations, "
                "ttreport_version, tensor_dir) VALUES (%s, %s, %s, %s, %s, %s, %s, "
                "%s, %s, %s) ON CONFLICT (report_uuid) DO NOTHING RETURNING run_id",
                (ident, name, model or meta.get("model") or folder.name, meta.get("host"), meta.get("git_commit"),
                 meta.get("started_at"), meta.get("status"),
                 src.execute("SELECT COUNT(*) FROM operations").fetchone()[0], meta.get("ttreport_version"),
                 tensor_dir)).fetchone()
            if row is None:  # pushed before (or by a push that committed while this one waited)
                (run_id,) = conn.execute("SELECT run_id FROM runs WHERE report_uuid = %s", (ident,)).fetchone()
                return run_id, False
            (run_id,) = row
            from ttreport.store import tables  # SQLAlchemy: imported only to push

            for table in tables.REPORT_TABLES:
                _copy_table(conn, src, table.name, run_id)
            _copy_stats(conn, src, run_id)
            if files:
                final = Path(tensor_store) / tensor_dir
                staged = Path(tensor_store) / f".{ident}.{final.name}.tmp"  # beside it: the rename is atomic
                _stage_files(folder, files, staged)
                final.parent.mkdir(exist_ok=True)
                os.rename(staged, final)
                staged = None
        return run_id, True
    except BaseException:
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)
        # Renamed, then the transaction failed: its rows are gone, and the folder is this push's alone. Unless
        # the connection broke in the commit, when the run may be in the store after all: the folder stays.
        if final is not None and final.exists() and not conn.broken:
            shutil.rmtree(final, ignore_errors=True)
        raise


def _copy_table(conn, src, name: str, run_id: int) -> None:
    from ttreport.store import tables  # SQLAlchemy: imported only to push

    cols = tables.report_columns(name)
    order = tables.ROW_ORDER in tables.order_by(name)
    select = ", ".join(f'"{c}"' for c in cols) + (", rowid" if order else "")
    target = ", ".join(["run_id", *cols, *([tables.ROW_ORDER] if order else [])])
    with conn.cursor().copy(f"COPY {name} ({target}) FROM STDIN") as copy:
        for row in src.execute(f"SELECT {select} FROM {name}"):
            copy.write_row((run_id, *row))


def _copy_stats(conn, src, run_id: int) -> None:
    # A run captured in steps (ttreport.steps): history's figures are its active steps' (no warm-up calls).
    _, active = active_steps(src)
    merged: dict[tuple, list] = {}
    for name, shape, count, total, longest, l1, pcc, timed, device, device_max in src.execute(
            _STATS_SQL.format(active=active)):
        key = (name, shape_key(shape))
        m = merged.setdefault(key, [0, None, None, None, None, 0, None, None])
        m[0] += count
        m[1] = _fold(sum, m[1], total)
        m[2] = _fold(max, m[2], longest)
        m[3] = _fold(max, m[3], l1)
        m[4] = _fold(min, m[4], pcc)
        m[5] += timed
        m[6] = _fold(sum, m[6], device)
        m[7] = _fold(max, m[7], device_max)
    with conn.cursor().copy("COPY run_op_stats (run_id, name, shape, count, total_s, max_s, peak_l1, min_pcc, "
                            "device_count, total_device_ns, max_device_ns) FROM STDIN") as copy:
        for (name, shape), values in merged.items():
            copy.write_row((run_id, name, shape, *values))


def _fold(f, a, b):
    """f over a and b, NULLs skipped (two shape texts with the same dims fold into one row)."""
    values = [x for x in (a, b) if x is not None]
    return f(values) if values else None


def _stage_files(folder: Path, files, staged: Path) -> None:
    """Copy the report's tensor files into the new folder `staged` (in the tensor store); nothing that exists
    is removed or written over."""
    if not staged.parent.is_dir():
        raise StoreError(f"the tensor store {staged.parent} is not a directory; create it (on a disk every host "
                         f"mounts)")
    staged.mkdir()
    # Readers take tensor files from the report's tensors/ folder only, and a run's folder is linked into the
    # cache beside its db.sqlite (pull.py): a row naming any other file, or a link out of tensors/ (a report
    # is input: it must not carry another file of this host into a shared store), is refused.
    root = folder.resolve() / TENSORS_DIR  # not resolved itself: a tensors/ that is a link leads out of the report
    for rel in files:
        source = folder / rel
        # A mesh tensor's row names its folder, which holds a file per device shard (tensors/<id>/<device>.pt).
        shards = source.is_dir() and not source.is_symlink()
        for path in sorted(source.iterdir()) if shards else [source]:
            target = staged / os.path.relpath(path, folder)
            if Path(rel).is_absolute() or not path.resolve().is_relative_to(root) or \
                    not target.resolve().is_relative_to(staged.resolve() / TENSORS_DIR):
                raise StoreError(f"{folder}: tensor file {rel!r} is outside the report's {TENSORS_DIR}/ folder; "
                                 f"`ttreport check` it")
            if not path.is_file():
                continue  # the report's row says it was lost or deleted; readers say so the same way
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
