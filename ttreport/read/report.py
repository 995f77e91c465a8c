"""Reading a report: `ttreport.open(path)` gives a read-only `Report`.

    report = ttreport.open("generated/ttreport/reports/demo")
    for op in report.operations(name="matmul", sort="duration", limit=10):
        print(op.id, op.name, op.duration_ns, [t.shape for t in op.output_tensors])  # ns, (1, 32, 64)
    report.sql("SELECT name, COUNT(*) AS n FROM operations GROUP BY name")

The database is opened with SQLite's `mode=ro` and `query_only`, so nothing a reader does can
change a report. Listing many ops costs a few queries per page of ops (arguments, tensors,
errors are fetched for the whole page at once), never one query per op.
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import re
import sqlite3
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ttreport import db, recovery, schema_sql, wal
from ttreport.config import DEFAULT_ROOT, default_root
from ttreport.errors import ReportError, TensorFileDamagedError
from ttreport.export.html import MAX_OPS as HTML_MAX_OPS
from ttreport.export.html import export_html
from ttreport.export.memory import ALLOCATED, MemoryPeaks, Peak, memory_peaks
from ttreport.export.trace import export_chrome_trace
from ttreport.folder import capture_holds, log_left
from ttreport.memory_text import BUFFER_LAYOUTS, BUFFER_TYPES  # noqa: F401 (report.BUFFER_TYPES: readers' names)
from ttreport.read import device_time, terminal
from ttreport.steps import Schedule

DB_FILE = db.DB_FILE
# Where TT-NN's logging (TTNN_CONFIG_OVERRIDES' enable_logging, ttreport.ttnn_config) puts its reports by default.
TTNN_ROOT = Path("generated/ttnn/reports")
# How deep `ttreport ls FOLDER` looks for report folders: FOLDER/generated/ttreport/reports/NAME is 4 levels
# down, the deepest a capture puts one by default; deeper would walk a whole checkout for each `ls`.
FIND_DEPTH = 4

_TICK = 100_000  # SQLite steps between checks of a query's timeout and of Ctrl-C (well under 10 ms)
_CHUNK = 900  # ids per IN (...) list; SQLite builds before 3.32 allow 999 parameters
_RUN = 50_000  # consecutive ids fetched by one BETWEEN
_SORTS = {
    "id": "o.operation_id",
    "duration": "o.duration DESC, o.operation_id",
    "start": "o.start_ns, o.operation_id",
    # slowest on the device first (the performance model's estimate); ops without one last (SQLite's NULLs are least)
    "device": "(SELECT p.ideal_ns FROM device_perf p WHERE p.operation_id = o.operation_id) DESC, o.operation_id",
}


# Report.table's sort keys: column, descending. torch.profiler's names (key_averages().table(sort_by=...)) map to
# the same column here: its "cpu_time" and "cuda_time" are the mean per call, "..._total" the sum, "self_..." less
# the children; "cuda"/"xpu"/"device" are all the device, whose time here is the performance model's estimate.
TABLE_SORTS = {key: (key, True) for key in ("host_time_total", "self_host_time_total", "host_time_mean",
                                             "host_time_max", "device_time_total", "device_time_mean")} | {
    "host_time": ("host_time_mean", True), "device_time": ("device_time_mean", True),
    "count": ("count", True), "name": ("name", False), "l1_allocated": ("l1_allocated_max", True),
    "cpu_time_total": ("host_time_total", True), "self_cpu_time_total": ("self_host_time_total", True),
    "cpu_time": ("host_time_mean", True), "cuda_time_total": ("device_time_total", True),
    "self_cuda_time_total": ("device_time_total", True), "cuda_time": ("device_time_mean", True),
    "self_device_time_total": ("device_time_total", True), "xpu_time_total": ("device_time_total", True),
}


class QueryTimeoutError(ReportError, TimeoutError):
    """A query ran past its timeout and was stopped."""


# Plain slotted records (frozen ones build 10x slower, which shows on a page of 100,000 ops).
# An op's tensors may be shared with the op next to it: treat them as read-only.
@dataclass(slots=True)
class TensorInfo:
    """One row of `tensors`: what a tensor was and where it lived. Text columns are as stored; `shape` and
    `padded_shape` are the dims as ints, read from `shape_text` and `padded_shape_text`."""

    id: int
    shape_text: str | None  # "Shape([1, 32, 64])", as TT-NN writes it
    dtype: str | None  # "DataType.BFLOAT16"
    layout: str | None  # "Layout.TILE"
    memory_config: str | None  # a MemoryConfig repr; None on the host
    buffer_type: str | None  # "L1", "DRAM", ...; None on the host
    address: int | None
    size: int | None  # device bytes, tile padding included
    memory_config_source: str | None  # argument | context | inputs | default
    producer: int | None  # operation_id that made it; None if made before the capture or on the host
    file: str | None  # relative to the report folder; None when not stored
    device_id: int | None = None
    padded_shape_text: str | None = None

    @property
    def shape(self) -> tuple[int, ...] | None:
        """The shape as integers, (1, 32, 64); None when the report holds no shape text."""
        return _dims(self.shape_text)

    @property
    def padded_shape(self) -> tuple[int, ...] | None:
        """The shape with its tile padding, (1, 32, 64); None when the report does not record it."""
        return _dims(self.padded_shape_text)

    @property
    def dims(self) -> tuple[int, ...]:
        """The shape as integers, () when none is recorded."""
        return self.shape or ()


def _dims(text) -> tuple[int, ...] | None:
    # a damaged row may hold a number or a BLOB where the text belongs: no dims, not a TypeError
    return tuple(int(d) for d in re.findall(r"-?\d+", text)) if isinstance(text, str) else None


@dataclass(slots=True)
class ErrorInfo:
    operation_id: int | None
    operation_name: str | None
    error_type: str | None
    message: str | None
    stack_trace: str | None
    timestamp: str | None


@dataclass(slots=True)
class Operation:
    id: int
    name: str
    duration: float | None  # seconds
    start_ns: int | None  # relative to the capture's start
    end_ns: int | None
    parent: int | None  # the op that called this one
    depth: int | None  # 0 for ops the model called directly
    status: str | None  # ok | error
    thread: str | None
    l1_bytes: int | None  # L1 bytes live after the op
    dram_bytes: int | None
    stack_trace: str | None
    arguments: list[tuple[str, str]] = field(default_factory=list)  # ('0', ...), ('memory_config', ...)
    input_tensors: list[TensorInfo] = field(default_factory=list)
    output_tensors: list[TensorInfo] = field(default_factory=list)
    error: ErrorInfo | None = None

    @property
    def duration_ns(self) -> int | None:
        """The duration in whole nanoseconds, as the clock measured it (end_ns - start_ns): `duration` is the
        same in float seconds, which cannot hold every nanosecond count exactly."""
        if isinstance(self.start_ns, int) and isinstance(self.end_ns, int):
            return self.end_ns - self.start_ns
        ns = self.duration * 1e9 if isinstance(self.duration, (int, float)) else math.nan
        return round(ns) if math.isfinite(ns) else None  # 1e308 s, a damaged row's, is no count of nanoseconds


@dataclass(slots=True)
class BufferInfo:
    """A device buffer live after an op (a row of the `buffers` view)."""

    operation_id: int
    device_id: int
    address: int
    max_size_per_bank: int
    buffer_type: str  # "L1", "DRAM", ...
    buffer_layout: str  # "INTERLEAVED", "HEIGHT_SHARDED", ...


@dataclass(slots=True)
class Summary:
    status: str | None
    operations: int
    top_level_seconds: float  # the sum of depth-0 durations: the model's time in ops
    by_name: list[dict]  # name, count, total_s, self_s, total_ns, self_ns, percent (of self time), by self time
    # The two figures of memory (ttreport.export.memory): allocated (bank-rounded, all banks: the ops' l1_bytes and
    # dram_bytes) and in buffers (their own sizes, the highest device's); each operation_id, name, bytes.
    peak_l1: dict | None  # allocated
    peak_dram: dict | None
    errors: list[ErrorInfo]
    # Golden checks made during the capture: mode, status, count, lowest pcc, and the op with it.
    comparisons: list[dict] = field(default_factory=list)
    status_text: str | None = None  # the status with what the capture lost: "complete (lost 4667 ops)"
    # On a mesh: each device's highest L1 (device_id, bytes, operation_id, name), from its buffers' own sizes.
    peak_l1_by_device: list[dict] = field(default_factory=list)
    peak_l1_in_buffers: dict | None = None  # + device_id
    peak_dram_in_buffers: dict | None = None
    top_level_ns: int = 0  # top_level_seconds in whole nanoseconds, as the clock measured them (no float noise)
    steps: list[StepInfo] = field(default_factory=list)  # each step's figures, when the run had more than one


@dataclass(slots=True)
class StepInfo:
    """One step of a run (run.step() calls before its ops began): its phase in the run's schedule and its top-level
    ops' figures. A report without steps is one step, 0, active."""

    step: int
    phase: str  # ttreport.steps.PHASES: "active" for every step of a run without a schedule
    ops: int  # top-level ops
    device_ns: int | None  # the performance model's estimate over them (None: none estimated)
    host_ns: int | None  # the emulator's host time in them


_TENSOR_COLUMNS = ("tensor_id, shape, dtype, layout, memory_config, buffer_type, address, size, "
                   "memory_config_source, producer_operation_id, file, device_id, padded_shape")
_OP_COLUMNS = ("o.operation_id, o.name, o.duration, o.start_ns, o.end_ns, o.parent_operation_id, o.depth, "
               "o.status, o.thread, o.l1_bytes, o.dram_bytes, s.stack_trace")
_ERROR_COLUMNS = "operation_id, operation_name, error_type, error_message, stack_trace, timestamp"


# What a capture notes in report_metadata when it could not keep everything, as shown beside the status.
_LOSS_NOTES = (("ops_lost", "ops"), ("tensor_files_lost", "tensor files"), ("tensors_skipped", "tensors not stored"))


def status_text(meta: dict) -> str:
    """A report's status as `ls` and `summary` show it: with what the capture lost, if anything
    ("complete (lost 4667 ops)"; `ttreport check` gives the details)."""
    status = meta.get("status") or "unknown"
    lost = [f"{meta[key]} {what}" for key, what in _LOSS_NOTES if meta.get(key) not in (None, "0")]
    if not meta.get("ops_lost") and meta.get("records_lost") not in (None, "0"):
        lost.insert(0, f"{meta['records_lost']} records")  # a report from before ops_lost was noted
    if not lost and meta.get("writer_error"):
        lost.append("nothing counted, but the writer failed")
    return f"{status} (lost {', '.join(lost)})" if lost else status


def _ns(alias: str) -> str:
    """SQL for an op's duration in whole nanoseconds: its clock's end - start (the writer's `duration` is that
    times 1e-9), or for a TT-NN report that has only `duration`, that rounded."""
    return (f"COALESCE({alias}end_ns - {alias}start_ns, CAST(ROUND({alias}duration * 1e9) AS INTEGER))")


def schedule_of(conn) -> Schedule | None:
    """The run's schedule (report_metadata.schedule, ttreport.steps); None: none, every step is active."""
    row = conn.execute("SELECT value FROM report_metadata WHERE key = 'schedule'").fetchone()
    try:
        return Schedule.from_json(row[0]) if row else None
    except (TypeError, ValueError) as e:  # from a report folder: a damaged value is one line, not a traceback
        raise ReportError(f"{e}; `ttreport check` the report, or delete that row from a copy of it") from None


def has_steps(conn) -> bool:
    """Whether the report records steps (operations.step: a report from before steps is one step, 0)."""
    return any(r[1] == "step" for r in conn.execute("PRAGMA table_info(operations)"))


def _step(alias: str, steps: bool) -> str:
    # A NULL or damaged step counts as step 0, where ops before the first run.step() are.
    return f"(CASE WHEN typeof({alias}step) = 'integer' THEN {alias}step ELSE 0 END)" if steps else "0"


def active_steps(conn) -> tuple[list[int], str]:
    """(the active step numbers, SQL to AND onto a WHERE over `operations o` keeping their ops: "" when that is
    every op). Timing statistics use these alone: warm-up and wait steps are left out."""
    steps = has_steps(conn)
    numbers = [r[0] for r in conn.execute(f"SELECT DISTINCT {_step('', steps)} FROM operations ORDER BY 1")] or [0]
    schedule = schedule_of(conn)
    if schedule is None:
        return numbers, ""
    active = [n for n in numbers if schedule.is_active(n)]
    return active, "" if active == numbers else f" AND {_step('o.', steps)} IN ({', '.join(map(str, active))})"


def _tensor(row) -> TensorInfo:
    tid, shape, dtype, layout, cfg, btype, addr, size, source, producer, file, dev, padded = row
    return TensorInfo(tid, shape, dtype, layout, cfg, BUFFER_TYPES.get(btype, btype), addr, size, source,
                      producer, file, dev, padded)


def default_roots() -> list[Path]:
    """The folders `ttreport ls` lists without an argument: DEFAULT_ROOT and TTNN_ROOT, under the working
    directory when it has them, else under the project root (config.default_root: where a capture puts them)."""
    return [default_root(DEFAULT_ROOT), default_root(TTNN_ROOT)]


def find_reports(folder: str | os.PathLike, depth: int = FIND_DEPTH) -> list[Path]:
    """The report folders (those holding a db.sqlite) at or under `folder`, `depth` levels down at most, in
    path order. A report folder's own subfolders are not searched (its tensors/); neither are links to folders
    (a report folder is data from elsewhere: a link could lead anywhere, or in a loop) nor hidden folders."""
    found, level = [], [Path(folder)]
    for _ in range(depth + 1):
        below = []
        for d in level:
            if (d / DB_FILE).is_file():
                found.append(d)
                continue
            try:
                below += [c for c in d.iterdir() if c.is_dir() and not c.is_symlink() and not c.name.startswith(".")]
            except OSError:  # a folder we may not read: nothing listed from it
                continue
        level = below
    return sorted(found)


def resolve(path: str | os.PathLike) -> Path:
    """The db.sqlite of a report given as its folder, its db file, or a name under the default root."""
    p = Path(path)
    for candidate in (p, DEFAULT_ROOT / p, default_root() / p):
        if candidate.is_dir() and (candidate / DB_FILE).is_file():
            return candidate / DB_FILE
        if candidate.is_file():
            return candidate
    if p.is_dir():
        raise ReportError(f"{p} is a folder but holds no {DB_FILE}; give a report folder (`ttreport ls {p}` lists)")
    raise ReportError(f"no report at {p}; give a report folder or its {DB_FILE} (`ttreport ls` lists reports)")


def connect_readonly(db_path: Path) -> sqlite3.Connection:
    # mode=ro makes the file itself unwritable to us; query_only also refuses temp-table writes. Neither
    # stops ATTACH or VACUUM INTO from creating a new file, nor `PRAGMA query_only = 0`: the limit and
    # the authorizer do.
    wal.refuse_odd_sidecars(db_path)  # before SQLite opens them: a FIFO there hung every reader
    recovery.recover(db_path)  # what a killed or disk-full capture left (an op log, a WAL) goes into db.sqlite
    # isolation_level=None: no implicit BEGIN before a statement that writes (and is then refused), which
    # would leave the connection in a transaction, reading one frozen snapshot of a live report.
    conn = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False,
                           isolation_level=None, factory=_Connection)
    if any(db_path.with_name(db_path.name + suffix).exists() for suffix in ("-wal", "-journal")):
        try:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1")
        except sqlite3.OperationalError as e:
            if "readonly" not in str(e):
                raise
            conn.close()
            journal = db_path.with_name(db_path.name + "-journal")
            if journal.exists():
                # A hot rollback journal: rolling it back writes its pages into db.sqlite, and a journal planted
                # beside a complete report rewrote its op names on `ttreport summary`. A capture writes in WAL mode;
                # only a cut-short upgrade or attach leaves one, so a reader refuses and --repair rolls it back.
                raise ReportError(f"{journal} holds a write to {db_path.name} that was cut short (a killed upgrade or "
                                  f"attach), or is not this report's: reading would roll it into the report; "
                                  f"`ttreport check --repair {db_path.parent}` rolls it back where the folder is "
                                  f"trusted, else move it out of the folder") from None
            # A capture killed mid-write leaves a WAL index that only a writer may recover: recover it (SQLite's own
            # crash recovery: committed batches stay, the torn one is rolled back), then read as before.
            sqlite3.connect(db_path).execute("SELECT 1 FROM sqlite_master LIMIT 1").connection.close()
            conn = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False,
                                   isolation_level=None, factory=_Connection)
    conn.execute("PRAGMA query_only = ON")
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.read_only = _ReadOnly(_virtual_tables(conn))
    conn.set_authorizer(conn.read_only)
    return conn


class _Connection(sqlite3.Connection):
    """A reader's connection: it keeps its authorizer, whose last refusal says why a statement failed."""

    read_only: _ReadOnly


# Pragmas that take an argument and still only read.
_READING_PRAGMAS = frozenset({"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
                              "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check"})


# SQLite's functions that only compute a value from their arguments and the rows a statement reads: the core
# scalar, aggregate and window functions, the date, JSON and math ones (sqlite.org/lang_corefunc.html,
# lang_aggfunc.html, windowfunctions.html, lang_datefunc.html, json1.html, lang_mathfunc.html), through 3.47.
# Everything else is refused, by name, before the statement runs: fts3_tokenizer (it hands out a pointer, and
# registers one given as a BLOB, which the next FTS read calls: a crash), load_extension, sqlite_log, the FTS,
# FTS5 and R*Tree helpers (fts5(), rtreenode(), match(), snippet(), ... that parse BLOBs from the file or
# pointers), and any function a later SQLite or an extension adds until it is judged and listed here.
# sqlite_offset() stays: it reads a row's byte offset in the file, which `ttreport check` users may want.
_READING_FUNCTIONS = frozenset((
    # core
    "abs", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex", "if", "ifnull", "iif", "instr",
    "length", "like", "likelihood", "likely", "lower", "ltrim", "max", "min", "nullif", "octet_length", "printf",
    "quote", "random", "randomblob", "replace", "round", "rtrim", "sign", "soundex", "substr", "substring",
    "subtype", "trim", "typeof", "unhex", "unicode", "unlikely", "upper", "zeroblob", "changes",
    "last_insert_rowid", "total_changes", "sqlite_compileoption_get", "sqlite_compileoption_used", "sqlite_offset",
    "sqlite_source_id", "sqlite_version",
    # aggregate
    "avg", "count", "group_concat", "string_agg", "sum", "total", "median", "percentile", "percentile_cont",
    "percentile_disc",
    # window
    "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value",
    "last_value", "nth_value",
    # date
    "date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff", "current_date", "current_time",
    "current_timestamp",
    # JSON
    "json", "jsonb", "json_array", "jsonb_array", "json_array_length", "json_error_position", "json_extract",
    "jsonb_extract", "->", "->>", "json_insert", "jsonb_insert", "json_object", "jsonb_object", "json_patch",
    "jsonb_patch", "json_pretty", "json_quote", "json_remove", "jsonb_remove", "json_replace", "jsonb_replace",
    "json_set", "jsonb_set", "json_type", "json_valid", "json_group_array", "jsonb_group_array",
    "json_group_object", "jsonb_group_object",
    # math
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos", "cosh", "degrees", "exp",
    "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power", "radians", "sin", "sinh", "sqrt", "tan",
    "tanh", "trunc",
))


class _ReadOnly:
    """The authorizer of a reader's connection (sqlite3 calls it as each statement is prepared): no ATTACH, no
    pragma that sets, only reading functions, and no virtual table of the report's own schema (a ttreport
    report holds none; reading one runs its module's code on bytes from elsewhere). `refused` says why the
    last refused statement was, for its error."""

    def __init__(self, virtual_tables: frozenset[str]):
        self.virtual_tables = virtual_tables
        self.refused: str | None = None

    def __call__(self, action, arg1, arg2, _db, _trigger) -> int:
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_PRAGMA and arg2 is not None and arg1.lower() not in _READING_PRAGMAS:
            return sqlite3.SQLITE_DENY  # `PRAGMA x = v` sets x
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() not in _READING_FUNCTIONS:
            self.refused = (f"the SQL function {arg2}() is refused: a query on a report may call only SQLite's "
                            f"reading functions (core, aggregate, window, date, JSON and math ones); leave {arg2}() "
                            f"out")
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_READ and arg1 is not None and arg1.lower() in self.virtual_tables:
            self.refused = (f"{arg1} is a virtual table, which no ttreport report holds: reading it is refused (its "
                            f"module's code would run on bytes from elsewhere); read the report's own tables")
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK


# A table whose CREATE statement, comments aside, says VIRTUAL; or with no b-tree of its own (rootpage 0).
_VIRTUAL = re.compile(r"\s*create\s+virtual\s", re.IGNORECASE)
_SQL_COMMENT = re.compile(r"/\*.*?(\*/|$)|--[^\n]*", re.DOTALL)


def _virtual_tables(conn: sqlite3.Connection) -> frozenset[str]:
    """The lower-cased names of the virtual tables the database's schema declares, read from sqlite_master's text
    (asking SQLite itself, PRAGMA table_list, would connect each one: its module's code would run)."""
    try:
        rows = conn.execute("SELECT name, sql, rootpage FROM sqlite_master WHERE type = 'table'").fetchall()
    except sqlite3.DatabaseError:
        # A schema that cannot be read cannot be prepared against either: no statement reaches any table.
        # check_schema names the damage.
        return frozenset()
    return frozenset(str(name).lower() for name, sql, root in rows
                     if root == 0 or isinstance(sql, str) and _VIRTUAL.match(_SQL_COMMENT.sub(" ", sql)))


# The tables readers read by name: the schema's, and alembic's revision (db.check_current).
_READ_TABLES = frozenset(schema_sql.COLUMNS) | {"alembic_version"}


def check_schema(conn: sqlite3.Connection, db_path: Path) -> None:
    """Raise ReportError unless the database is a ttreport report; NeedsUpgradeError if it is older."""
    try:
        rows = conn.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
    except sqlite3.DatabaseError as e:
        raise ReportError(f"{db_path} is not a SQLite database ({e})") from None
    present = {name for name, _ in rows}
    if "operations" not in present:
        raise ReportError(f"{db_path} is not a ttreport report: it has no operations table")
    # Every statement a reader runs on its own reads these tables; a view under one of their names would run SQL
    # the folder brings (a recursive one reads forever: summary, ops and ls hung on one). Only `query`, whose SQL
    # the user writes and whose --timeout bounds it, reaches the report's own views (op_tensors, ...).
    # An older schema had views under some of these names (0004: tensors, buffers, ...): its readers are told to
    # upgrade, reading only alembic_version (db.check_current), which is never a view.
    views = sorted(str(name) for name, kind in rows if kind == "view" and str(name).lower() in _READ_TABLES)
    if "alembic_version" in (v.lower() for v in views):
        _refuse_view(db_path, "alembic_version")
    db.check_current(db_path)
    if views:
        _refuse_view(db_path, views[0])


def _refuse_view(db_path: Path, name: str) -> None:
    raise ReportError(f"{db_path} is not a report ttreport wrote: {name} is a view where a report holds a table (a "
                      f"view runs SQL the folder brings); read the report its capture wrote")


class Report:
    """A read-only view of one report folder. Use `ttreport.open(path)` to make one."""

    def __init__(self, path: str | os.PathLike):
        self.db_path = resolve(path)
        self.path = self.db_path.parent  # the report folder
        try:
            self._conn = connect_readonly(self.db_path)
        except sqlite3.Error as e:
            raise ReportError(f"cannot open {self.db_path} for reading: {e}") from None
        try:
            check_schema(self._conn, self.db_path)
        except BaseException:
            self._conn.close()
            raise
        self._deadline = self._timeout_s = None
        self._timed_out = False
        self._conn.set_progress_handler(self._tick, _TICK)

    # -- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Report:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Report {self.path}>"

    # -- SQL -------------------------------------------------------------------------------
    def execute(self, query: str, params=(), *, timeout_s: float | None = None) -> sqlite3.Cursor:
        """Run one read-only statement; the cursor's `description` names the columns.

        `timeout_s` bounds the statement's time, fetching its rows included: past it, reading the
        cursor raises ReportError (QueryTimeoutError). Ctrl-C stops a running statement too. With
        execute() the deadline also holds for other reads on this Report until the next execute();
        sql() and rows() drop it once their rows are read.
        """
        self._deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self._timeout_s = timeout_s
        self._conn.read_only.refused = None
        try:
            return self._conn.execute(query, params)
        except sqlite3.Error as e:
            raise self._error(e) from None

    def _error(self, e: sqlite3.Error) -> Exception:
        """The ReportError (or KeyboardInterrupt) that `e`, raised by a statement, stands for."""
        if self._conn.in_transaction:  # a BEGIN the user gave, or a statement that failed halfway
            self._conn.rollback()
        refused, self._conn.read_only.refused = self._conn.read_only.refused, None
        if refused is not None:  # the authorizer stopped it ("not authorized", "access to t.c is prohibited")
            return ReportError(refused)
        if isinstance(e, sqlite3.ProgrammingError):  # a :name or ? without a value, or values for none
            return ReportError(f"SQL error: {e} (in the CLI: -p NAME VALUE for each :NAME)")
        if isinstance(e, sqlite3.OperationalError) and str(e) == "interrupted":
            if self._timed_out:
                self._timed_out = False
                return QueryTimeoutError(f"the query ran past its timeout of {self._timeout_s:g} s and was "
                                         f"stopped; narrow it (WHERE, LIMIT) or give a longer timeout "
                                         f"(ttreport query --timeout SECONDS)")
            return KeyboardInterrupt()
        if any(w in str(e) for w in ("readonly", "query_only", "not authorized", "authorization denied",
                                     "attached databases")):
            return ReportError(f"reports are read-only and this statement writes ({e}); "
                               f"to change a report, open a copy of {self.db_path} with sqlite3")
        if (isinstance(e, sqlite3.DatabaseError) and not isinstance(e, sqlite3.OperationalError)) \
                or str(e).startswith("Could not decode to UTF-8"):
            return e  # a damaged page or text: the CLI names the report and `ttreport check`
        if str(e).removeprefix("no such table: ").lower() in schema_sql.COLUMNS:  # dropped from a report: damage
            return ReportError(f"SQL error: {e}: every report of this schema has it, so {self.path} was damaged or "
                               f"edited; `ttreport check {self.path}` lists what it lacks")
        return ReportError(f"SQL error: {e}")

    def _tick(self) -> int:
        # SQLite calls this every _TICK virtual-machine steps of a statement; non-zero stops it. Being
        # Python, it also lets a pending Ctrl-C run (its KeyboardInterrupt stops the statement).
        if self._deadline is not None and time.monotonic() > self._deadline:
            self._timed_out = True
            return 1
        return 0

    def rows(self, query: str, params=(), *, timeout_s: float | None = None):
        """(column names, an iterator of row tuples): rows are read from SQLite as they are consumed."""
        cur = self.execute(query, params, timeout_s=timeout_s)

        def stream():
            try:
                while batch := cur.fetchmany(1000):
                    yield from batch
            except sqlite3.Error as e:
                raise self._error(e) from None
            finally:
                self._deadline = None  # the timeout was this query's; later reads have none

        return [d[0] for d in cur.description or ()], stream()

    def sql(self, query: str, params=(), *, timeout_s: float | None = None) -> list[dict]:
        """The rows of a read-only query, each a dict keyed by column name."""
        names, rows = self.rows(query, params, timeout_s=timeout_s)
        return [dict(zip(names, row)) for row in rows]

    # -- report-wide facts -----------------------------------------------------------------
    @property
    def metadata(self) -> dict[str, str]:
        # Values are text; a damaged one (a number, a BLOB) is shown as text rather than break the readers,
        # and a NULL one is a key not written.
        return {k: v if isinstance(v, str) else repr(v)
                for k, v in self._conn.execute("SELECT key, value FROM report_metadata") if v is not None}

    @property
    def status(self) -> str | None:
        return self.metadata.get("status")

    @property
    def status_text(self) -> str:
        """The status with what the capture lost, if anything: "complete (lost 4667 ops)"; a report left
        "running" that no capture holds says so (its process was killed: ops after its last commit are lost)."""
        meta = self.metadata
        text = status_text(meta)
        if meta.get("status") == "running" and not capture_holds(self.path):
            text = text.replace("running", "running, but no process is capturing it (killed?)", 1)
        left = log_left(self.path)  # an op log no reader could finish: what is shown may lack its ops
        return text if left is None else f"{text}; {left}"

    @property
    def devices(self) -> list[dict]:
        return self.sql("SELECT * FROM devices ORDER BY device_id")

    def count_operations(self, name: str | None = None) -> int:
        where, params = self._name_filter(name)
        return self._conn.execute(f"SELECT COUNT(*) FROM operations o {where}", params).fetchone()[0]

    # -- operations ------------------------------------------------------------------------
    def op_names(self) -> list[str]:
        """The distinct op names, sorted; a walk of the name index, not a scan of every op."""
        return [r[0] for r in self._conn.execute(
            "WITH RECURSIVE n(name) AS (SELECT MIN(name) FROM operations UNION ALL "
            "SELECT (SELECT MIN(name) FROM operations WHERE name > n.name) FROM n WHERE n.name IS NOT NULL) "
            "SELECT name FROM n WHERE name IS NOT NULL")]

    def _name_filter(self, pattern: str | None) -> tuple[str, list]:
        """A WHERE clause for ops named `pattern`: exact, the last dotted part, or a glob."""
        if not pattern:
            return "", []
        glob = any(c in pattern for c in "*?[")
        names = [n for n in self.op_names()
                 if (fnmatch.fnmatchcase(n, pattern) if glob else n == pattern or n.endswith("." + pattern))]
        # Exact names keep the lookup on the name index however large the report.
        return f"WHERE o.name IN ({','.join('?' * len(names)) or 'NULL'})", names

    def operations(self, name: str | None = None, *, sort: str = "id", limit: int | None = None,
                   offset: int = 0, depth: int | None = None) -> list[Operation]:
        """Ops in the report, each with its arguments, tensors, stack trace and error.

        `name` is an exact op name ("ttnn.matmul"), its last part ("matmul"), or a glob
        ("*norm*"). `sort` is "id" (call order), "start", "duration" (slowest on the host first) or
        "device" (slowest on the device first: the performance model's estimate).
        `depth=0` keeps only the ops the model called directly (and those of a TT-NN report,
        which records no depth).
        """
        return list(self.iter_operations(name, sort=sort, limit=limit, offset=offset, depth=depth))

    def iter_operations(self, name: str | None = None, *, sort: str = "id", limit: int | None = None,
                        offset: int = 0, depth: int | None = None, page: int = 1000):
        """The same ops as operations(), made `page` at a time as they are consumed: memory stays
        bounded however many ops the report holds."""
        if sort not in _SORTS:
            raise ReportError(f"sort must be one of {', '.join(_SORTS)}, not {sort!r}")
        if sort == "device" and not self._has_table("device_perf"):
            raise ReportError("this report has no device time estimates (a TT-NN report, or one from before schema "
                              "0006): sort by duration, the host time, instead")
        where, params = self._name_filter(name)
        if depth is not None:
            where += (" AND" if where else "WHERE") + " COALESCE(o.depth, 0) = ?"
            params.append(depth)
        if sort != "duration":
            yield from self._op_pages(where, params, _SORTS[sort], limit, offset, page)
            return
        # Slowest first, ops with no duration last: the timed ones come from the duration index (partial,
        # schema.INDEXES), which an ORDER BY over every row could not use, then the others in id order.
        timed = (where + " AND" if where else "WHERE") + " o.duration IS NOT NULL"
        shown = 0
        for op in self._op_pages(timed, params, _SORTS[sort], limit, offset, page):
            shown += 1
            yield op
        if limit is not None and shown >= limit:
            return
        if offset and not shown:  # the offset may have skipped all the timed ones, or only some
            offset -= self._conn.execute(f"SELECT COUNT(*) FROM operations o {timed}", params).fetchone()[0]
        else:
            offset = 0
        untimed = (where + " AND" if where else "WHERE") + " o.duration IS NULL"
        yield from self._op_pages(untimed, params, "o.operation_id", None if limit is None else limit - shown,
                                  max(offset, 0), page)

    def _op_pages(self, where: str, params: list, order: str, limit: int | None, offset: int, page: int):
        window = f"LIMIT {int(limit)} OFFSET {int(offset)}" if limit is not None else \
            (f"LIMIT -1 OFFSET {int(offset)}" if offset else "")
        cur = self._conn.execute(
            f"SELECT {_OP_COLUMNS} FROM operations o "
            f"LEFT JOIN stack_trace_texts s ON s.stack_trace_id = o.stack_trace_id "
            f"{where} ORDER BY {order} {window}", params)
        while rows := cur.fetchmany(page):
            yield from self._complete(rows)

    def operation(self, operation_id: int) -> Operation:
        rows = self._conn.execute(
            f"SELECT {_OP_COLUMNS} FROM operations o LEFT JOIN stack_trace_texts s "
            f"ON s.stack_trace_id = o.stack_trace_id WHERE o.operation_id = ?", (int(operation_id),)).fetchall()
        if not rows:
            last = self._conn.execute("SELECT MIN(operation_id), MAX(operation_id) FROM operations").fetchone()
            span = f"ids run from {last[0]} to {last[1]}" if last[0] is not None else "it has no operations"
            raise ReportError(f"no operation {operation_id} in {self.path}; {span}")
        return self._complete(rows)[0]

    def children(self, operation_id: int) -> list[Operation]:
        """The ops that `operation_id` called, in call order."""
        rows = self._conn.execute(
            f"SELECT {_OP_COLUMNS} FROM operations o LEFT JOIN stack_trace_texts s "
            f"ON s.stack_trace_id = o.stack_trace_id WHERE o.parent_operation_id = ? ORDER BY o.operation_id",
            (int(operation_id),)).fetchall()
        return self._complete(rows)

    def _complete(self, rows) -> list[Operation]:
        """Operations for `rows` of _OP_COLUMNS, with everything else fetched a page at a time."""
        ids = [r[0] for r in rows]
        args, ins, outs, errs, seen = defaultdict(list), defaultdict(list), defaultdict(list), {}, {}
        for where, chunk in _id_conditions(ids):
            for op_id, name, value in self._conn.execute(
                    # No ORDER BY: the view yields each op's arguments in json_each's (given) order,
                    # which a sort, having no key for it, would not promise to keep.
                    f"SELECT operation_id, name, value FROM operation_arguments WHERE operation_id {where}", chunk):
                args[op_id].append((name, value))
            for table, index, into in (("input_tensors", "input_index", ins), ("output_tensors", "output_index", outs)):
                for row in self._conn.execute(
                        f"SELECT x.operation_id, x.tensor_id, {_TENSOR_COLUMNS.replace('tensor_id, ', '')} "
                        f"FROM {table} x LEFT JOIN tensors t ON t.tensor_id = x.tensor_id "
                        f"WHERE x.operation_id {where} ORDER BY x.operation_id, x.{index}", chunk):
                    # Most tensors are one op's output and the next op's input: build each once.
                    info = seen.get(row[1])
                    if info is None:
                        info = seen[row[1]] = _tensor(row[1:])
                    into[row[0]].append(info)
            for row in self._conn.execute(
                    f"SELECT {_ERROR_COLUMNS} FROM errors WHERE operation_id {where}", chunk):
                errs[row[0]] = ErrorInfo(*row)
        return [Operation(*r, arguments=args[r[0]], input_tensors=ins[r[0]], output_tensors=outs[r[0]],
                          error=errs.get(r[0])) for r in rows]

    # -- tensors ---------------------------------------------------------------------------
    def tensors(self, *, limit: int | None = None, offset: int = 0) -> list[TensorInfo]:
        page = f"LIMIT {int(limit)} OFFSET {int(offset)}" if limit is not None else ""
        return [_tensor(r) for r in self._conn.execute(
            f"SELECT {_TENSOR_COLUMNS} FROM tensors ORDER BY tensor_id {page}")]

    def tensor(self, tensor_id: int) -> TensorInfo:
        row = self._conn.execute(f"SELECT {_TENSOR_COLUMNS} FROM tensors WHERE tensor_id = ?",
                                 (int(tensor_id),)).fetchone()
        if row is None:
            raise ReportError(f"no tensor {tensor_id} in {self.path}; `ttreport query {self.path} "
                              f"\"SELECT tensor_id, shape FROM tensors\"` lists them")
        return _tensor(row)

    def producer(self, tensor_id: int) -> Operation | None:
        """The op that made the tensor; None for tensors made before the capture or on the host."""
        producer = self.tensor(tensor_id).producer
        return self.operation(producer) if producer is not None else None

    def consumers(self, tensor_id: int) -> list[Operation]:
        """Every op that took the tensor as an input, in call order."""
        rows = self._conn.execute(
            f"SELECT {_OP_COLUMNS} FROM operations o LEFT JOIN stack_trace_texts s "
            f"ON s.stack_trace_id = o.stack_trace_id WHERE o.operation_id IN "
            f"(SELECT operation_id FROM input_tensors WHERE tensor_id = ?) ORDER BY o.operation_id",
            (int(tensor_id),)).fetchall()
        return self._complete(rows)

    def load_tensor(self, tensor_id: int, *, device: int | None = None, dims=None, mesh_shape=None,
                    after_operation: int | None = None):
        """The stored tensor as a plain torch.Tensor on the CPU (no device or device_sim needed).

        after_operation: the values it held right after that op. An op that wrote into a stored tensor
        (output_tensor=, an in-place op) left a file of its own (the tensor_writes table); without it, or
        before any such write, the tensor's first stored values.

        A tensor on a mesh is stored as one file per device shard. device: that device's shard. Without
        it, the shards joined as TT-NN's mesh composers join them: dims=None stacks them on a new first
        dimension in device order, dims=d concatenates them along d (ConcatMeshToTensor), and
        dims=(d0, d1) with mesh_shape=(rows, cols) joins each row's along d1, then the rows along d0
        (ConcatMesh2dToTensor). A report keeps no mesh mapper, so how shards form the logical tensor is
        the reader's to say, as it is to_torch's.

        Raises TensorFileError when the capture did not store it (Config(tensors="none"), the
        default) or its file is missing or damaged; ReportError for a device that holds no shard of it.
        """
        from ttreport import storage  # numpy (and torch to make the tensor): only readers that load tensors pay

        tensor_id = int(tensor_id)
        devices = self.tensor_devices(tensor_id)
        if not devices:
            if dims is not None or mesh_shape is not None:
                raise ReportError(f"tensor {tensor_id} is not a mesh tensor: dims= and mesh_shape= join the device "
                                  f"shards of a mesh tensor; leave them out")
            if device is not None and device != self.tensor(tensor_id).device_id:
                raise ReportError(f"tensor {tensor_id} is not on device {device} (it is one tensor, on device "
                                  f"{self.tensor(tensor_id).device_id}); leave device= out")
            if after_operation is not None:
                write = self._newest_write(tensor_id, after_operation)
                if write is not None:  # an op at or before after_operation wrote into it: that file
                    facts = write[1:]
                    return storage.load_tensor(self.path, tensor_id, expected_file(
                        self._conn, tensor_id, self.path, write=facts), file=write[0])
            return storage.load_tensor(self.path, tensor_id, self.expected_file(tensor_id))
        if device is not None:
            if device not in devices:
                raise ReportError(f"tensor {tensor_id} has no stored shard on device {device}; its devices: {devices}")
            return storage.load_tensor(self.path, tensor_id, self.expected_file(tensor_id, device=device),
                                       device=device)
        shards = [storage.load_tensor(self.path, tensor_id, self.expected_file(tensor_id, device=d), device=d)
                  for d in devices]
        return _compose(shards, dims, mesh_shape, tensor_id)

    def load_array(self, tensor_id: int, *, device: int | None = None):
        """load_tensor's values as a numpy array, read with no torch imported (what compare reads): numpy's dtype
        of the same name, bfloat16 as its uint16 bits (ttreport.ptfile.BFloat16Bits). A mesh tensor's shard by
        device= (load_tensor joins shards); a file checked as load_tensor checks it."""
        from ttreport import storage  # numpy: only readers that load tensors pay for it

        return storage.load_tensor(self.path, int(tensor_id), self.expected_file(tensor_id, device=device),
                                   device=device, as_array=True)

    def tensor_devices(self, tensor_id: int) -> list[int]:
        """The devices whose shard of a mesh tensor the report stores, in order; [] for a one-device tensor."""
        if not self._has_table("device_tensor_files"):
            return []  # a report from before schema 0007 stored a mesh tensor's first shard alone
        return [r[0] for r in self._conn.execute(
            "SELECT device_id FROM device_tensor_files WHERE tensor_id = ? ORDER BY device_id", (int(tensor_id),))]

    def _has_table(self, name: str) -> bool:
        return self._conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None

    def _column_exists(self, table: str, column: str) -> bool:
        return any(r[1] == column for r in self._conn.execute(f"PRAGMA table_info({table})"))

    def golden_checks(self, operation_id: int) -> list[dict]:
        """The op's golden comparisons (mode, tensor_id, device_id, status, pcc, max_abs_error), one per output
        and mode, or one per device shard on a mesh; worst first (failures, then the lowest PCC)."""
        device = "device_id" if self._column_exists("tensor_comparisons", "device_id") else "NULL AS device_id"
        return self.sql(f"SELECT mode, tensor_id, {device}, status, pcc, max_abs_error FROM tensor_comparisons "
                        f"WHERE operation_id = ? ORDER BY mode, status = 'pass', pcc IS NULL, pcc, device_id",
                        (int(operation_id),))

    def _newest_write(self, tensor_id: int, operation_id: int):
        """(file, file_bytes, crc32, shape, dtype) of the newest write into `tensor_id` at or before the op."""
        if not self._conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'tensor_writes'").fetchone():
            return None  # a report made before schema 0009
        return self._conn.execute(
            "SELECT file, file_bytes, crc32, shape, dtype FROM tensor_writes WHERE tensor_id = ? AND operation_id <= ? "
            "ORDER BY operation_id DESC LIMIT 1", (int(tensor_id), int(operation_id))).fetchone()

    def expected_file(self, tensor_id: int, *, device: int | None = None):
        """What the report says the tensor's file (or `device`'s shard file) holds (a storage.Expected),
        checked when it is loaded."""
        return expected_file(self._conn, tensor_id, self.path, device)

    # -- memory and errors -----------------------------------------------------------------
    def buffers(self, operation_id: int) -> list[BufferInfo]:
        """Every device buffer live right after the op, by address."""
        end_seq = self._conn.execute("SELECT end_seq FROM operations WHERE operation_id = ?",
                                     (int(operation_id),)).fetchone()
        if end_seq is None:
            self.operation(operation_id)  # raises with the id range
        if end_seq[0] is None:
            return []
        # The same rows as the `buffers` view, without joining every op to every buffer.
        return [BufferInfo(int(operation_id), dev, addr, size, BUFFER_TYPES.get(bt, bt), BUFFER_LAYOUTS.get(bl, bl))
                for dev, addr, size, bt, bl in self._conn.execute(
                    "SELECT device_id, address, max_size_per_bank, buffer_type, buffer_layout FROM buffer_lifetimes "
                    "WHERE allocated_seq < ?1 AND (freed_seq IS NULL OR freed_seq > ?1) "
                    "ORDER BY buffer_type, address", (end_seq[0],))]

    def per_bank_bytes(self, t: TensorInfo) -> int | None:
        """Bytes the tensor's buffer takes in each bank it is interleaved over (None when not recorded)."""
        if t.buffer_type is None or t.address is None:
            return None
        btype = next((k for k, v in BUFFER_TYPES.items() if v == t.buffer_type), t.buffer_type)
        row = self._conn.execute(
            "SELECT max_size_per_bank FROM buffer_lifetimes WHERE device_id IS ? AND address = ? AND buffer_type = ? "
            "ORDER BY allocated_by_operation_id IS NOT ? LIMIT 1",
            (t.device_id, t.address, btype, t.producer)).fetchone()
        return row[0] if row and isinstance(row[0], int) else None

    def banks(self, buffer_type: str) -> int | None:
        """How many banks an interleaved buffer of `buffer_type` ("L1", "DRAM") spreads over on this report's
        device: L1's from `devices`; DRAM's from the first op's DRAM bytes over its live buffers' per-bank sizes."""
        cache = self.__dict__.setdefault("_bank_counts", {})  # asked once per tensor shown: worked out once
        if buffer_type not in cache:
            cache[buffer_type] = self._banks(buffer_type)
        return cache[buffer_type]

    def _banks(self, buffer_type: str) -> int | None:
        if buffer_type == "L1":
            row = self._conn.execute("SELECT MIN(l1_num_banks) FROM devices").fetchone()
            return row[0] if row and isinstance(row[0], int) and row[0] > 0 else None
        if buffer_type != "DRAM":
            return None
        row = self._conn.execute("SELECT operation_id, dram_bytes FROM operations WHERE dram_bytes > 0 "
                                 "ORDER BY operation_id LIMIT 1").fetchone()
        if row is None:
            return None
        per_bank = sum(b.max_size_per_bank for b in self.buffers(row[0]) if b.buffer_type == "DRAM"
                       and isinstance(b.max_size_per_bank, int))
        return round(row[1] / per_bank) if per_bank and isinstance(row[1], int) else None

    def errors(self) -> list[ErrorInfo]:
        return [ErrorInfo(*r) for r in self._conn.execute(
            f"SELECT {_ERROR_COLUMNS} FROM errors ORDER BY operation_id")]

    def summary(self) -> Summary:
        """Time by op name, memory peaks and errors: what `ttreport summary` prints."""
        by_name = self.sql(f"""
            WITH child AS (SELECT parent_operation_id AS id, SUM(duration) AS d, SUM({_ns("")}) AS ns
                           FROM operations WHERE parent_operation_id IS NOT NULL GROUP BY parent_operation_id)
            SELECT o.name, COUNT(*) AS count, SUM(o.duration) AS total_s,
                   SUM(MAX(COALESCE(o.duration, 0) - COALESCE(child.d, 0), 0)) AS self_s,
                   SUM({_ns("o.")}) AS total_ns,
                   SUM(MAX(COALESCE({_ns("o.")}, 0) - COALESCE(child.ns, 0), 0)) AS self_ns
            FROM operations o LEFT JOIN child ON child.id = o.operation_id
            GROUP BY o.name ORDER BY self_s DESC, o.name""")
        all_self = sum(r["self_s"] or 0 for r in by_name)
        for r in by_name:
            r["percent"] = 100 * (r["self_s"] or 0) / all_self if all_self else math.nan
        # A TT-NN report (upgraded from 0001) records no depth: its ops count as top-level.
        top = self._conn.execute("SELECT COUNT(*), COALESCE(SUM(CASE WHEN COALESCE(depth, 0) = 0 THEN duration END), "
                                 f"0), COALESCE(SUM(CASE WHEN COALESCE(depth, 0) = 0 THEN {_ns('')} END), 0) "
                                 "FROM operations").fetchone()
        # On a mesh each device's shard has its row: the lowest PCC's device is the op's worst device.
        device = "device_id" if self._column_exists("tensor_comparisons", "device_id") else "NULL"
        comparisons = self.sql(f"""
            SELECT mode, status, COUNT(*) AS count, MIN(pcc) AS lowest_pcc,
                   (SELECT c2.operation_id FROM tensor_comparisons c2 WHERE c2.mode = c.mode
                    AND c2.status = c.status AND c2.pcc IS NOT NULL ORDER BY c2.pcc LIMIT 1) AS lowest_pcc_operation_id,
                   (SELECT c2.{device} FROM tensor_comparisons c2 WHERE c2.mode = c.mode
                    AND c2.status = c.status AND c2.pcc IS NOT NULL ORDER BY c2.pcc LIMIT 1) AS lowest_pcc_device_id
            FROM tensor_comparisons c GROUP BY mode, status ORDER BY mode, status""")
        # Each count is of comparisons (one per output tensor, and per device on a mesh), not of ops: `ops` says
        # how many ops they were made on (the demo: 68 comparisons on 64 ops).
        for c in comparisons:
            c["ops"] = self._conn.execute("SELECT COUNT(DISTINCT operation_id) FROM tensor_comparisons WHERE mode IS ? "
                                          "AND status IS ?", (c["mode"], c["status"])).fetchone()[0]
        peaks = memory_peaks(self)
        steps = self.steps()
        return Summary(self.status, top[0], top[1], by_name, _peak_dict(peaks.allocated.get("L1")),
                       _peak_dict(peaks.allocated.get("DRAM")), self.errors(), comparisons, self.status_text,
                       peak_l1_by_device=_by_device(peaks, "L1"),
                       peak_l1_in_buffers=_peak_dict(peaks.in_buffers.get("L1"), device=True),
                       peak_dram_in_buffers=_peak_dict(peaks.in_buffers.get("DRAM"), device=True), top_level_ns=top[2],
                       steps=steps if len(steps) > 1 else [])

    @property
    def schedule(self) -> Schedule | None:
        """The schedule the run was captured with (ttreport.steps.Schedule); None: every step was active."""
        return schedule_of(self._conn)

    def steps(self) -> list[StepInfo]:
        """Per step (in step order): its phase, top-level op count, estimated device time and host time."""
        steps = has_steps(self._conn)
        schedule = schedule_of(self._conn)
        device = self._has_table("device_perf")
        rows = self._conn.execute(f"""
            SELECT {_step("o.", steps)} AS step, COUNT(*), {"SUM(p.ideal_ns)" if device else "NULL"}, SUM({_ns("o.")})
            FROM operations o {"LEFT JOIN device_perf p ON p.operation_id = o.operation_id" if device else ""}
            WHERE COALESCE(o.depth, 0) = 0 GROUP BY step ORDER BY step""").fetchall()
        return [StepInfo(n, "active" if schedule is None else schedule.phase(n), ops, dev, host)
                for n, ops, dev, host in rows]

    def active_steps(self) -> list[int]:
        """The step numbers that were active (all of them without a schedule; [0] for a report without steps)."""
        return active_steps(self._conn)[0]

    def table(self, *, sort_by: str = "host_time_total", row_limit: int | None = 100) -> str:
        """Ops aggregated by name, as torch.profiler's `key_averages().table()`: count, host time (total, self,
        mean, max), device time estimated by the performance model (total, mean), and the highest L1 allocated
        after one of them; sorted by `sort_by` (TABLE_SORTS: ours, or torch.profiler's name for the same column),
        at most `row_limit` names (None or -1: all). Returns the table as text.

            print(ttreport.open(path).table(sort_by="device_time_total", row_limit=10))
        """
        if sort_by not in TABLE_SORTS:
            raise ReportError(f"sort_by={sort_by!r} is not a table column; give one of {', '.join(TABLE_SORTS)}")
        if row_limit is not None and (isinstance(row_limit, bool) or not isinstance(row_limit, int)
                                      or row_limit < -1):
            raise ReportError(f"row_limit={row_limit!r} is not a number of rows; give a count >= 0, or None "
                              f"(or -1, as torch.profiler) for every op name")
        device = self._has_table("device_perf")
        column, descending = TABLE_SORTS[sort_by]
        rows = self.sql(f"""
            WITH child AS (SELECT parent_operation_id AS id, SUM(duration) AS d FROM operations
                           WHERE parent_operation_id IS NOT NULL GROUP BY parent_operation_id)
            SELECT o.name AS name, COUNT(*) AS count, SUM(o.duration) AS host_time_total,
                   SUM(MAX(COALESCE(o.duration, 0) - COALESCE(child.d, 0), 0)) AS self_host_time_total,
                   AVG(o.duration) AS host_time_mean, MAX(o.duration) AS host_time_max,
                   {"SUM(p.ideal_ns)" if device else "NULL"} AS device_time_total,
                   {"AVG(p.ideal_ns)" if device else "NULL"} AS device_time_mean,
                   MAX(CASE WHEN typeof(o.l1_bytes) = 'integer' THEN o.l1_bytes END) AS l1_allocated_max
            FROM operations o LEFT JOIN child ON child.id = o.operation_id
            {"LEFT JOIN device_perf p ON p.operation_id = o.operation_id" if device else ""}
            GROUP BY o.name ORDER BY {column} {"DESC" if descending else ""}, name""")
        shown = rows if row_limit in (None, -1) else rows[:row_limit]
        columns = ["name", "count", "host total", "host self", "host mean", "host max", "device total (est.)",
                   "device mean (est.)", "max L1 allocated after"]
        lines = list(terminal.plain_table(columns, (
            (r["name"], r["count"], terminal.human_seconds(r["host_time_total"]),
             terminal.human_seconds(r["self_host_time_total"]), terminal.human_seconds(r["host_time_mean"]),
             terminal.human_seconds(r["host_time_max"]), device_time.human_ns(r["device_time_total"]),
             device_time.human_ns(None if r["device_time_mean"] is None else round(r["device_time_mean"])),
             terminal.human_bytes(r["l1_allocated_max"])) for r in shown)))
        if len(shown) < len(rows):
            lines.append(f"... {len(rows) - len(shown)} more op names (row_limit={row_limit}; None shows all)")
        lines.append(f"sorted by {sort_by}; host time measured per call (self: less the ops it called); device "
                     f"time estimated by the performance model{'' if device else ' (none in this report)'}; "
                     f"L1 {ALLOCATED}")
        return "\n".join(lines)

    def l1_by_device(self, operation_id: int) -> list[dict]:
        """L1 bytes (buffers' own sizes) live on each device after op `operation_id`: device_id, bytes."""
        return self.sql("""
            SELECT b.device_id AS device_id, SUM(b.size) AS bytes
            FROM operations o JOIN buffer_lifetimes b
              ON b.allocated_seq < o.end_seq AND (b.freed_seq IS NULL OR b.freed_seq > o.end_seq)
            WHERE o.operation_id = ? AND b.buffer_type = 1 GROUP BY b.device_id ORDER BY b.device_id""",
                        (int(operation_id),))

    def peak_l1_by_device(self) -> list[dict]:
        """Each device's highest L1 in buffers after any op (device_id, bytes, operation_id, name), highest first
        (ttreport.export.memory.memory_peaks: one streamed walk of the buffers' alloc and free events)."""
        return _by_device(memory_peaks(self), "L1")

    # -- exports (ttreport.export; like torch.profiler's export_chrome_trace) ------------------
    def export_chrome_trace(self, path: str | os.PathLike) -> Path:
        """Write the run as a Chrome trace-event / Perfetto JSON file (.json, or .json.gz compressed)
        that ui.perfetto.dev and chrome://tracing open: ops as nested slices, L1/DRAM counters per
        device, producer -> consumer flows. Returns the path."""
        return export_chrome_trace(self, path)

    def export_html(self, path: str | os.PathLike, *, limit: int | None = HTML_MAX_OPS, top_level: bool = False,
                    comparison=None) -> Path:
        """Write the run as one self-contained .html report (summary, timeline, memory per device,
        time by op name, slowest ops, a searchable op table, golden PCC); no network needed to open it.
        `limit` caps the ops in the op table (default 10,000; None: every op, up to the page's bound; the
        timeline draws at most 10,000), `top_level` keeps only the ops the model called there; `comparison`, a
        ReportComparison whose B is this report, adds its PCC per op and root cause. Returns the path."""
        return export_html(self, path, limit=limit, top_level=top_level, comparison=comparison)



def _peak_dict(peak: Peak | None, *, device: bool = False) -> dict | None:
    if peak is None:
        return None
    d = {"operation_id": peak.operation_id, "name": peak.name, "bytes": peak.bytes}
    return d | {"device_id": peak.device_id} if device else d


def _by_device(peaks: MemoryPeaks, kind: str) -> list[dict]:
    found = [p for (_, k), p in peaks.by_device.items() if k == kind]
    return [{"device_id": p.device_id, "bytes": p.bytes, "operation_id": p.operation_id, "name": p.name}
            for p in sorted(found, key=lambda p: (-p.bytes, p.device_id if p.device_id is not None else -1))]


def _compose(shards: list, dims, mesh_shape, tensor_id: int):
    """A mesh tensor's device shards joined (see Report.load_tensor)."""
    import torch

    if dims is None:
        if mesh_shape is not None:
            raise ReportError("mesh_shape= goes with dims=(d0, d1); give both, or neither to stack the shards")
        return torch.stack(shards)
    if isinstance(dims, int):
        return torch.cat(shards, dims)
    dims, shape = tuple(dims), tuple(mesh_shape or ())
    if len(dims) != 2 or len(shape) != 2 or shape[0] * shape[1] != len(shards):
        raise ReportError(f"tensor {tensor_id} has {len(shards)} device shards: join them with dims=d, or with "
                          f"dims=(d0, d1) and mesh_shape=(rows, cols) of {len(shards)} devices "
                          f"(got dims={dims}, mesh_shape={mesh_shape})")
    rows = [torch.cat(shards[r * shape[1]:(r + 1) * shape[1]], dims[1]) for r in range(shape[0])]
    return torch.cat(rows, dims[0])


def expected_file(conn: sqlite3.Connection, tensor_id: int, where, device: int | None = None, write=None):
    """The storage.Expected of `tensor_id`'s file (or of `device`'s shard file of a mesh tensor, or the
    `write` row's facts (file_bytes, crc32, shape, dtype) of a tensor_writes file) from the report on
    `conn` (a ReportError for an unknown id)."""
    from ttreport.storage import Expected  # numpy: only readers that load tensors pay for it

    row = conn.execute("SELECT shape FROM tensors WHERE tensor_id = ?", (int(tensor_id),)).fetchone()
    if row is None:
        raise ReportError(f"no tensor {tensor_id} in {where}; `ttreport query {where} "
                          f"\"SELECT tensor_id, shape FROM tensors\"` lists them")
    dims = tuple(int(d) for d in re.findall(r"-?\d+", row[0])) if isinstance(row[0], str) else None
    facts = write
    if facts is None and device is not None:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'device_tensor_files'").fetchone():
            facts = conn.execute("SELECT file_bytes, crc32, shape, dtype FROM device_tensor_files "
                                 "WHERE tensor_id = ? AND device_id = ?", (int(tensor_id), int(device))).fetchone()
    elif facts is None and conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'tensor_files'").fetchone():
        facts = conn.execute("SELECT file_bytes, crc32, shape, dtype FROM tensor_files WHERE tensor_id = ?",
                             (int(tensor_id),)).fetchone()
    if facts is None:
        return Expected(db_shape=dims or None)
    try:
        shape = json.loads(facts[2])
    except (TypeError, ValueError):
        shape = None
    file_bytes, crc, dtype = facts[0], facts[1], facts[3]
    if not (isinstance(file_bytes, int) and isinstance(crc, int) and isinstance(dtype, str)
            and isinstance(shape, list) and all(isinstance(d, int) for d in shape)):
        raise TensorFileDamagedError(f"tensor {tensor_id}: its tensor_files row in {where} is damaged "
                                     f"({facts!r}), so its file cannot be verified")
    return Expected(file_bytes, crc, shape, dtype, dims or None)


def _id_conditions(ids: list[int]):
    """(condition on operation_id, its parameters) pairs that together select exactly `ids`.

    A run of consecutive ids (a page of ops in call order) becomes one BETWEEN, one range scan
    of the index; scattered ids go in IN lists of at most _CHUNK.
    """
    ids = sorted(set(ids))
    i = 0
    while i < len(ids):
        j = min(i + _RUN, len(ids))
        if ids[j - 1] - ids[i] == j - 1 - i:
            yield "BETWEEN ? AND ?", (ids[i], ids[j - 1])
        else:
            j = min(i + _CHUNK, len(ids))
            yield f"IN ({','.join('?' * (j - i))})", ids[i:j]
        i = j


def sql_param(value: str):
    """A command line's -p value as SQLite should compare it: an integer or a real when it reads as one, else text."""
    for kind in (int, float):
        try:
            number = kind(value)
        except ValueError:
            continue
        if kind is float and not math.isfinite(number):
            break  # "nan", "inf": text, as given
        return number
    return value


def open(path: str | os.PathLike) -> Report:  # noqa: A001 - open mirrors the builtin on purpose
    """Open the report at `path` (its folder, its db.sqlite, or a name under the default root) read-only.
    ttreport.open (ttreport.store.open) also opens a run of a store; reading a folder knows nothing of stores."""
    return Report(path)


def load_tensor(report_dir, tensor_id: int, expected=None, *, device: int | None = None, file: str | None = None):
    """ttreport.load_tensor: the stored values of `tensor_id` in the report folder `report_dir` as a plain CPU
    torch.Tensor, its file checked against what the report's database says of it (storage.load_tensor checks
    the file; a mesh tensor's shards are joined without `device`). A folder of tensor files without a db.sqlite
    is checked for what a file can show by itself."""
    from ttreport import storage  # numpy (and torch to make the tensor): only readers that load tensors pay

    if (Path(report_dir) / DB_FILE).is_file():
        mesh = device is None and storage.is_mesh_tensor(report_dir, tensor_id)
        if file is None and (expected is None or mesh):
            with Report(report_dir) as r:  # each shard of a mesh tensor checked against its own row, then joined
                return r.load_tensor(tensor_id, device=device)
        if expected is None:
            with Report(report_dir) as r:
                expected = r.expected_file(tensor_id, device=device)
    return storage.load_tensor(report_dir, tensor_id, expected, device=device, file=file)
