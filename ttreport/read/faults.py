"""`ttreport.check(path)`: every way a report can be damaged, found and listed.

    faults = ttreport.check("generated/ttreport/reports/demo")
    for fault in faults:
        print(fault)

A fault is one line of text naming what is wrong and where. The checks: SQLite's own
`PRAGMA integrity_check`; the schema revision; the status (a report whose capture was killed
stays "running"); what the capture itself noted as lost; ids that point at rows that do not
exist (input/output tensors, producers, parents, stack traces, errors); values a reader would
trip on (a BLOB or text where a number belongs, text that is not UTF-8), in every table; an op
log a killed capture left that no reader could finish (a read-only folder, a rebuild refused as
it would hold fewer ops), with the ops it holds against the db's; and every tensor file the
report names: inside the report folder, a regular file, no larger than its shape allows, and
loadable with the CRC-32, shape and dtype the capture recorded for it.
A damaged page or schema never stops the checks that can still run. Only a path that holds no
report raises (ReportError); everything about the report's contents is a fault.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ttreport import recovery, schema_sql
from ttreport.errors import ReportError, TTReportError
from ttreport.folder import CLOSED_STATUSES, OPLOG_DIR, OPLOG_DONE_DIR, capture_holds, closed
from ttreport.read.report import check_schema, connect_readonly, expected_file, load_tensor, resolve
from ttreport.steps import Schedule

# What reading a damaged database raises: SQLite's errors, and a UnicodeDecodeError when SQLite's own
# message quotes a damaged schema text that is not UTF-8.
_UNREADABLE = (sqlite3.DatabaseError, UnicodeDecodeError)
SHOWN_IDS = 10  # ids quoted per fault; the count says how many there are in all
SHOWN_CHARS = 200  # of a value quoted in a fault (a status, a file column): its length says how long it is

# (what is checked, SQL selecting the offending ids): each dangling reference in the schema.
_DANGLING = [
    ("input_tensors rows name operations that do not exist",
     "SELECT DISTINCT operation_id FROM input_tensors WHERE operation_id NOT IN (SELECT operation_id FROM operations)"),
    ("output_tensors rows name operations that do not exist",
     "SELECT DISTINCT operation_id FROM output_tensors "
     "WHERE operation_id NOT IN (SELECT operation_id FROM operations)"),
    ("input_tensors rows name tensors that do not exist",
     "SELECT DISTINCT tensor_id FROM input_tensors WHERE tensor_id NOT IN (SELECT tensor_id FROM tensors)"),
    ("output_tensors rows name tensors that do not exist",
     "SELECT DISTINCT tensor_id FROM output_tensors WHERE tensor_id NOT IN (SELECT tensor_id FROM tensors)"),
    ("tensors name producer operations that do not exist",
     "SELECT tensor_id FROM tensors WHERE producer_operation_id IS NOT NULL "
     "AND producer_operation_id NOT IN (SELECT operation_id FROM operations)"),
    ("operations name parent operations that do not exist",
     "SELECT operation_id FROM operations WHERE parent_operation_id IS NOT NULL "
     "AND parent_operation_id NOT IN (SELECT operation_id FROM operations)"),
    ("operations name stack traces that do not exist",
     "SELECT operation_id FROM operations WHERE stack_trace_id IS NOT NULL "
     "AND stack_trace_id NOT IN (SELECT stack_trace_id FROM stack_trace_texts)"),
    ("errors rows name operations that do not exist",
     "SELECT operation_id FROM errors WHERE operation_id IS NOT NULL "
     "AND operation_id NOT IN (SELECT operation_id FROM operations)"),
    ("measured_perf rows (by position) name operations that do not exist",  # `ttreport attach` pairs them
     "SELECT position FROM measured_perf WHERE operation_id IS NOT NULL "
     "AND operation_id NOT IN (SELECT operation_id FROM operations)"),
]

# Keys the capture writes to report_metadata when it could not keep everything.
_LOSS_KEYS = ("ops_lost", "records_lost", "tensor_files_lost", "tensors_skipped", "writer_error", "tensor_file_error")


def check(path: str | os.PathLike) -> list[str]:
    """The faults of the report at `path` (its folder, its db.sqlite, or a name); [] when it is sound."""
    db_path = resolve(path)
    folder = db_path.parent
    try:
        con = connect_readonly(db_path)
    except (sqlite3.Error, UnicodeDecodeError) as e:
        return [f"{db_path}: cannot be opened ({e})"]
    except ReportError as e:  # a left-over WAL that is not the report's (ttreport.wal.fold)
        return [str(e)]
    try:
        return _check(con, db_path, folder)
    finally:
        con.close()


def _check(con: sqlite3.Connection, db_path: Path, folder: Path) -> list[str]:
    # Text that is not UTF-8 is a fault to list, not a reason to stop: read it with replacement marks.
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        problems = [r[0] for r in con.execute("PRAGMA integrity_check")]
    except _UNREADABLE as e:
        return [f"{db_path}: not a readable SQLite database ({e})"]
    faults = [f"{db_path}: integrity_check: {p}" for p in problems if p != "ok"]
    try:
        check_schema(con, db_path)
    except TTReportError as e:  # not a report, or an older or newer schema: its tables cannot be trusted
        return [*faults, str(e), *_value_faults(con, db_path)]  # though its values may say why
    except _UNREADABLE as e:  # a damaged schema page or revision: the tables cannot be trusted
        return [*faults, f"{db_path}: cannot be read as a report ({e})", *_value_faults(con, db_path)]
    # A table of the schema dropped from the report: readers that need it fail ("no such table: device_perf" from
    # summary, ops, op, trace, html, whatif), so check must not say ok.
    present = {str(r[0]).lower() for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    faults += [f"{db_path}: the table {t} is missing (every report of this schema has one): the commands that read "
               f"it fail; the report was damaged or edited, copy it again from its source"
               for t in sorted(set(schema_sql.COLUMNS) - present)]
    # Each step on its own: a damaged page under one table must not hide what the others show.
    meta, files = {}, []
    try:
        meta = dict(con.execute("SELECT key, value FROM report_metadata"))
    except _UNREADABLE as e:
        faults.append(f"{db_path}: report_metadata cannot be read ({e})")
    faults += _metadata_faults(meta, db_path)
    faults += _log_faults(con, db_path, meta)
    for what, sql in _DANGLING:
        try:
            ids = [r[0] for r in con.execute(sql)]
        except _UNREADABLE as e:
            faults.append(f"{db_path}: {what.split(' name ')[0]} cannot be read ({e})")
            continue
        if ids:
            faults.append(f"{db_path}: {what}: {_ids(ids)}")
    faults += _value_faults(con, db_path)
    try:
        files = con.execute("SELECT tensor_id, file FROM tensors WHERE file IS NOT NULL ORDER BY tensor_id").fetchall()
        if con.execute("SELECT 1 FROM sqlite_master WHERE name = 'tensor_writes'").fetchone():
            # what ops wrote into stored tensors (schema 0009): each file checked against its own row
            files += [(tid, rel, facts) for tid, rel, *facts in con.execute(
                "SELECT tensor_id, file, file_bytes, crc32, shape, dtype FROM tensor_writes ORDER BY operation_id")]
    except _UNREADABLE as e:
        faults.append(f"{db_path}: the tensor files cannot be listed ({e})")
    return faults + _file_faults(con, folder, files)


# The storage classes each declared column type may hold; a damaged record can hold any.
_TYPES_OF = {"INTEGER": "'integer', 'null'", "FLOAT": "'real', 'integer', 'null'", "REAL": "'real', 'integer', 'null'",
             "TEXT": "'text', 'null'"}


def _value_faults(con: sqlite3.Connection, db_path: Path) -> list[str]:
    """Values a reader would trip on: text that is not UTF-8, and a value of the wrong type for its column."""
    faults = []
    try:
        tables = _tables(con)
    except _UNREADABLE as e:
        return [f"{db_path}: its tables cannot be listed ({e})"]
    for table in tables:
        try:
            columns = [(r[1], (r[2] or "").upper()) for r in con.execute(f'PRAGMA table_info("{table}")')]
            for column, declared in columns:
                declared = "TEXT" if declared.startswith("VARCHAR") else declared
                if declared not in _TYPES_OF:
                    continue
                rows = [r[0] for r in con.execute(
                    f'SELECT rowid FROM "{table}" WHERE typeof("{column}") NOT IN ({_TYPES_OF[declared]}) '
                    f"ORDER BY rowid")]
                if rows:
                    faults.append(f"{db_path}: {table}.{column} holds values that are not {declared} "
                                  f"(a damaged record), rowids {_ids(rows)}")
            faults += _undecodable(con, db_path, table, [c for c, _ in columns])
        except _UNREADABLE as e:
            faults.append(f"{db_path}: table {table} cannot be read ({e})")
    return faults


def _tables(con: sqlite3.Connection) -> list[str]:
    return [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                      "AND name NOT LIKE 'sqlite_%' ORDER BY name")]


def _undecodable(con: sqlite3.Connection, db_path: Path, table: str, columns: list[str]) -> list[str]:
    """Text that is not UTF-8 (every reader would fail on it): one fault per column, naming the rows."""
    bad: dict[str, list] = {}
    con.text_factory = bytes
    try:
        picks = ", ".join(f'CASE typeof("{c}") WHEN \'text\' THEN "{c}" END' for c in columns)
        for rowid, *values in con.execute(f'SELECT rowid, {picks} FROM "{table}"'):
            for column, value in zip(columns, values):
                if isinstance(value, bytes):
                    try:
                        value.decode("utf-8")
                    except UnicodeDecodeError:
                        bad.setdefault(column, []).append(rowid)
    finally:
        con.text_factory = lambda b: b.decode("utf-8", "replace")
    return [f"{db_path}: {table}.{column} holds text that is not UTF-8, rowids {_ids(rows)}"
            for column, rows in bad.items()]


def _metadata_faults(meta: dict, db_path: Path) -> list[str]:
    faults = []
    status = meta.get("status")
    if status != "complete":
        why = {"running": "the capture never closed (the process was killed, or is still running)",
               "error": "the model raised an exception", "interrupted": "the run was interrupted by a signal",
               None: "report_metadata has no status"}.get(status, "not a status ttreport writes")
        faults.append(f"{db_path}: status is {_shown(status)}, not 'complete': {why}")
    lost = {k: meta[k] for k in _LOSS_KEYS if k in meta}
    if lost:
        noted = ", ".join(f"{k}={_capped(str(v))}" for k, v in lost.items())
        faults.append(f"{db_path}: the capture noted a loss: {noted}")
    try:  # summary and html refuse a schedule they cannot read, naming `ttreport check`: check names it too
        Schedule.from_json(meta.get("schedule"))
    except (TypeError, ValueError) as e:
        faults.append(f"{db_path}: {e}")
    return faults


def _log_faults(con: sqlite3.Connection, db_path: Path, meta: dict) -> list[str]:
    """An op log a killed capture left that no reader finished (connect_readonly tried: recovery.recover): what it holds
    against what the db holds, and the fix. A capture's own log while it runs is no fault."""
    folder = db_path.parent
    log, done = folder / OPLOG_DIR, folder / OPLOG_DONE_DIR
    if not (os.path.lexists(log) or os.path.lexists(done)) or capture_holds(folder):
        return []
    faults = []
    if os.path.lexists(done):
        faults.append(f"{done}: an op log whose deletion a kill cut short (the report holds every op): a reader "
                      f"where the folder is writable finishes it (`ttreport check --repair`), or delete it")
    if not os.path.lexists(log):
        return faults
    why, ops, used = recovery.log_contents(log)
    if why is not None:
        return [*faults, f"{log}: not an op log that is read: {why}; delete it"]
    try:
        db_ops = con.execute("SELECT COUNT(*) FROM operations").fetchone()[0]
    except _UNREADABLE:
        db_ops = 0  # its faults are listed above; a rebuild would keep nothing of it either
    segments = sum(1 for e in os.scandir(log) if e.name.endswith(".seg"))
    held = (f"{log}: an op log of {segments} segments ({used:,} bytes of records) holding {ops:,} ops, "
            f"{db_path.name} {db_ops:,}")
    if closed(meta):
        said = f"status {meta['status']!r}" if meta.get("status") in CLOSED_STATUSES else "log_finished"
        if ops <= db_ops:
            faults.append(f"{held}: not used, as the report says it holds every op ({said}); "
                          f"`ttreport check --repair` deletes it")
        else:
            faults.append(f"{held}: not used, as the report says it holds every op ({said}); move it out of the "
                          f"folder to keep the ops only it holds")
    elif ops < db_ops:
        faults.append(f"{held}: the report is not rebuilt from it, as that would lose {db_ops - ops:,} ops; "
                      f"delete it if the report is right")
    else:
        faults.append(f"{held}: not folded in, so readers show {ops - db_ops:,} ops fewer; open the report once "
                      f"where its folder is writable, or run `ttreport check --repair` there, to rebuild "
                      f"{db_path.name} from it")
    return faults


def _file_faults(con: sqlite3.Connection, folder: Path, files: list[tuple]) -> list[str]:
    """Faults of each (tensor_id, file) of `tensors`, and each (tensor_id, file, facts) of `tensor_writes`."""
    if not files:
        return []
    from ttreport import storage  # numpy: only a report with tensor files pays for it

    faults = []
    root = folder.resolve()
    for tid, rel, *write in files:
        if not isinstance(rel, str):
            faults.append(f"tensor {tid}: its file column holds {_shown(rel)}, not a path")
            continue
        try:
            path = (folder / rel).resolve()
        except (OSError, RuntimeError):  # Python 3.11 says RuntimeError for a loop of links (tensors/ -> tensors)
            faults.append(f"tensor {tid}: file {folder / rel} is reached through a loop of links")
            continue
        if not path.is_relative_to(root):
            faults.append(f"tensor {tid}: file {_shown(rel)} points outside the report folder {folder}")
        elif not path.exists():
            faults.append(f"tensor {tid}: file {folder / rel} is missing")
        else:
            # Loaded as a reader would: checked against its CRC-32, shape and dtype, bounded, regular files only;
            # as numpy arrays (load_array's form), so that a check imports no torch (~3 s of its ~4-7 s here). A mesh
            # tensor's shards are joined by load_tensor, with torch.
            try:
                if write:
                    storage.load_tensor(folder, tid, expected_file(con, tid, folder, write=write[0]), file=rel,
                                        as_array=True)
                elif storage.is_mesh_tensor(folder, tid):
                    load_tensor(folder, tid, expected_file(con, tid, folder))
                else:
                    storage.load_tensor(folder, tid, expected_file(con, tid, folder), as_array=True)
            except TTReportError as e:
                faults.append(f"tensor {tid}: {e}".replace(f"tensor {tid}: tensor {tid}: ", f"tensor {tid}: "))
            except _UNREADABLE as e:
                faults.append(f"tensor {tid}: its rows cannot be read ({e})")
    return faults


def _shown(value) -> str:
    """A value from the report as a fault quotes it: its repr, _capped (a 4 MB status made `ttreport check` print
    all of it)."""
    return _capped(repr(value))


def _capped(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text):,} characters)"


def _ids(ids: list) -> str:
    shown = ", ".join(str(i) for i in ids[:SHOWN_IDS])
    return f"{len(ids)} in all: {shown}" + (", ..." if len(ids) > SHOWN_IDS else "")
