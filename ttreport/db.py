"""Creating, opening and upgrading report databases (alembic's cookbook, run in-process).

A new report is `metadata.create_all` stamped at the alembic head; an older report is
upgraded with `command.upgrade` on a connection passed through `cfg.attributes`. Migrations
ship inside the package as ttreport.migrations, so an installed ttreport finds them.
"""

from __future__ import annotations

import functools
import os
import re
import sqlite3
import tempfile
import time
from pathlib import Path

from ttreport import migrations, schema_sql, wal
from ttreport.errors import NeedsUpgradeError, NewerSchemaError, NotAReportError
from ttreport.folder import (
    DB_FILE,  # noqa: F401 (db.DB_FILE: the folder's name for the report's database)
    REVISION_KEY,
    SCHEMA_VERSION_KEY,
    TTNN_SCHEMA_VERSION,
)

# alembic and SQLAlchemy (~0.3 s to import) are imported only to create or upgrade a database:
# readers learn the revisions from the migration files themselves.


def _alembic_config():
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    # The package's own folder, wherever it is installed; never the source tree.
    cfg.set_main_option("script_location", os.path.dirname(migrations.__file__))
    return cfg


@functools.cache
def revisions() -> tuple[str, ...]:
    """This ttreport's revisions, oldest first, read from the migration files (as alembic reads them:
    each file's `revision` and `down_revision`; a test holds this equal to alembic's own walk)."""
    down_of = {}
    folder = Path(migrations.__file__).parent / "versions"
    for f in folder.glob("*.py"):
        text = f.read_text()
        rev = re.search(r'^revision\s*=\s*["\']([^"\']+)["\']', text, re.M)
        if rev:
            down = re.search(r'^down_revision\s*=\s*(?:["\']([^"\']+)["\']|None)', text, re.M)
            down_of[rev.group(1)] = down.group(1) if down else None
    after = {down: rev for rev, down in down_of.items()}
    chain, rev = [], after.get(None)
    while rev is not None:
        chain.append(rev)
        rev = after.get(rev)
    assert len(chain) == len(down_of), f"migrations in {folder} do not form one chain: {down_of}"
    return tuple(chain)


def head_revision() -> str:
    return revisions()[-1]


def known_revisions() -> frozenset[str]:
    """Every revision this ttreport's migrations name; any other was made by a newer ttreport."""
    return frozenset(revisions())


def _engine(path):
    from sqlalchemy import create_engine, event

    engine = create_engine(f"sqlite:///{Path(path)}")

    # pysqlite's own BEGIN handling breaks DDL inside transactions (SQLAlchemy's documented fix).
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _):
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN")

    return engine


def create(path, *, indexes: bool = True, skip: frozenset = frozenset(), metadata: dict | None = None) -> None:
    """A new, empty report database at `path`, stamped at the head revision, with the schema's indexes but those
    named in `skip` (none with indexes=False), and `metadata`'s keys and values (their str) in report_metadata.

    A capture's writer process makes all but LATE_INDEXES at once (skip=LATE_INDEXES), and the writer keeps them
    current (no more of its CPU than building them at close, and less left for the close of a long capture); it
    makes LATE_INDEXES when it closes.

    The schema comes from ttreport.schema_sql, the statements `metadata.create_all` and alembic's stamp make
    (generated from schema.py; tests/test_schema_sql.py holds them equal). A new file gets the bytes of that
    database made once per process in memory: SQLAlchemy's create_all and alembic's stamp took 0.34 s and their
    imports ~0.3 s of a capture's start, the statements themselves ~15 ms a capture, the copy ~1 ms (bench/README.md,
    issue 33). A file that is there already (empty, or a report) has the statements run on it. The metadata is
    written without a sync, as the schema is (a capture's start facts: a synced commit took 20-25 ms of the start).
    """
    try:  # O_EXCL: a new file, never one a link points to
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        fd = None
    if fd is not None:
        with os.fdopen(fd, "wb") as f:
            f.write(_empty_report(indexes, skip))
    if fd is None or metadata:
        con = sqlite3.connect(path, isolation_level=None)
        try:
            if fd is None:
                _create_schema(con, indexes, skip)
            if metadata:
                con.execute("PRAGMA synchronous=OFF")  # a file the machine lost mid-way is no report either way
                con.execute("BEGIN")
                con.executemany("INSERT OR REPLACE INTO report_metadata (key, value) VALUES (?, ?)",
                                [(k, str(v)) for k, v in metadata.items()])
                con.execute("COMMIT")
        finally:
            con.close()


@functools.cache
def _empty_report(indexes: bool, skip: frozenset) -> bytes:
    """The bytes of a new report database (create's arguments), made in memory."""
    con = sqlite3.connect(":memory:", isolation_level=None)
    try:
        _create_schema(con, indexes, skip)
        return con.serialize()
    finally:
        con.close()


def _create_schema(con: sqlite3.Connection, indexes: bool, skip: frozenset) -> None:
    con.execute("PRAGMA synchronous=OFF")  # a file the machine lost mid-way is no report either way
    con.execute("BEGIN")
    for sql in schema_sql.TABLES:
        con.execute(sql)
    con.execute("DELETE FROM alembic_version")
    con.execute("INSERT INTO alembic_version (version_num) VALUES (?)", (head_revision(),))
    # what _set_schema_version writes (its SQLAlchemy connection is not made here)
    con.executemany("INSERT OR REPLACE INTO report_metadata (key, value) VALUES (?, ?)", _versions())
    if indexes:
        create_indexes(con, skip=skip)
    con.execute("COMMIT")


def schema_sql_text() -> str:
    """ttreport/schema_sql.py's text: the statements that `metadata.create_all` and alembic's stamp at the head
    run on an empty database, read back from its sqlite_master (`python -m ttreport.db > ttreport/schema_sql.py`
    after a change to schema.py)."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy import create_engine

    from ttreport import schema  # SQLAlchemy: only rendering schema_sql.py needs the tables

    engine = create_engine("sqlite://")
    with engine.begin() as conn:
        schema.metadata.create_all(conn)
        MigrationContext.configure(conn).stamp(ScriptDirectory.from_config(_alembic_config()), "head")
        rows = conn.exec_driver_sql("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                                    "ORDER BY rowid").fetchall()
    engine.dispose()
    creates = {"table": "CREATE TABLE", "view": "CREATE VIEW", "trigger": "CREATE TRIGGER"}
    tables = [sql.replace(creates[kind], f"{creates[kind]} IF NOT EXISTS", 1) for kind, _, sql in rows
              if kind != "index"]
    index_sql = {name: sql for kind, name, sql in rows if kind == "index"}
    order = [index.name for index in schema.INDEXES]
    assert set(order) == set(index_sql), "an index outside schema.INDEXES, or one create_all did not make"
    lines = ['"""The report schema as SQL: the statements that `schema.metadata.create_all` and alembic\'s stamp run',
             "on an empty database, which db.create runs itself (in one transaction; SQLAlchemy and alembic took",
             "~0.6 s of a capture's start). Generated from ttreport/schema.py; do not edit:",
             "",
             "    .venv/bin/python -m ttreport.db > ttreport/schema_sql.py",
             "",
             "tests/test_schema_sql.py fails while this differs from what schema.py's metadata makes.",
             '"""',
             "",
             "# Tables, views and triggers, in create_all's order; alembic's version table last.",
             "TABLES = ["]
    lines += [f"    (\n{_literal(sql)}\n    )," for sql in tables]
    lines += ["]", "", "# schema.INDEXES by name, in their order (db.create_indexes adds IF NOT EXISTS).",
              "INDEXES = {"]
    lines += [f"    {name!r}: (\n{_literal(index_sql[name])}\n    )," for name in order]
    lines += ["}", "", "# Each table of schema.py and its columns, in order: what the capture checks rows and",
              "# names tables against without importing SQLAlchemy (~0.2-0.7 s of a cold start).", "COLUMNS = {"]
    for table in schema.metadata.sorted_tables:
        cols = ", ".join(repr(c.name) for c in table.c)
        line = f"    {table.name!r}: ({cols}{',' if len(table.c) == 1 else ''}),"
        if len(line) > 120:
            line = f"    {table.name!r}: (\n" + "\n".join(f"        {c.name!r}," for c in table.c) + "\n    ),"
        lines.append(line)
    lines += ["}", ""]
    return "\n".join(lines)


# Indexes on keys that come in no order (an op's duration): kept current row by row, each insert lands on
# a random page, and these three took a fifth of a writer process's CPU on a 200,000-op log; built at close
# they take ~1.8 µs an op. A writer process's capture makes the others at its start (create_indexes(skip=)).
LATE_INDEXES = frozenset({"ix_operations_duration", "ix_operations_name_duration", "ix_operations_l1_bytes"})


def create_indexes(con: sqlite3.Connection, *, skip: frozenset = frozenset()) -> None:
    """Create the schema's indexes that `con`'s database lacks (a capture's last step), but those named in `skip`.

    Each call makes them in the schema's order. An index whose order is not the table's is partial
    (schema.INDEXES), so a plain `SELECT operation_id FROM operations` reads the table, in id order; the two
    sort indexes are whole, with hint_sort_indexes' hint instead.

    In one transaction (`con`'s own, if one is open): a commit per statement synced the file 27 times, 0.44 s of a
    capture's start (bench/README.md, issue 33)."""
    own = not con.in_transaction
    if own:
        con.execute("BEGIN")
    try:
        for ddl in _index_ddl():
            if not skip or re.search(r"INDEX IF NOT EXISTS (\w+)", ddl).group(1) not in skip:
                con.execute(ddl)
        if not skip & set(SORT_INDEXES):
            hint_sort_indexes(con.execute)
    except BaseException:
        if own and con.in_transaction:
            con.execute("ROLLBACK")
        raise
    if own:
        con.execute("COMMIT")


# The indexes that answer `ORDER BY duration DESC LIMIT 10` and `ORDER BY l1_bytes DESC, operation_id LIMIT 1`
# without sorting the table. A partial index would keep unsorted SELECTs in id order, but SQLite would then
# use it only for a query whose WHERE says `duration IS NOT NULL` (78 ms instead of 0.01 at 1M ops without).
# So they are whole, and sqlite_stat1 tells SQLite their rows are wide (`sz=`, its documented row-size hint):
# a full scan then reads the table (id order), while an ORDER BY ... LIMIT still reads the index. A user's
# ANALYZE rewrites these rows without the hint; `ttreport upgrade` or the next close does not put it back on
# a current report, `db.hint_sort_indexes` does.
SORT_INDEXES = ("ix_operations_duration", "ix_operations_l1_bytes")
_SORT_INDEX_ROW_BYTES = 2000  # more than any operations row; tests/test_visualizer_tables.py holds both plans


def hint_sort_indexes(execute) -> None:
    """Write SORT_INDEXES' rows of sqlite_stat1: the table's row count (the planner's estimate for every
    query on operations) and the row-size hint. `execute` is a sqlite3 connection's or SQLAlchemy
    connection's exec_driver_sql."""
    execute("ANALYZE sqlite_master")  # makes sqlite_stat1 when it is missing; analyzes no table
    n = max(execute("SELECT COUNT(*) FROM operations").fetchone()[0], 1)
    execute(f"DELETE FROM sqlite_stat1 WHERE tbl = 'operations' AND idx IN {SORT_INDEXES!r}")
    for name in SORT_INDEXES:
        execute("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES ('operations', ?, ?)",
                (name, f"{n} 1 sz={_SORT_INDEX_ROW_BYTES}"))


@functools.cache
def _index_ddl() -> list[str]:
    return [sql.replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS", 1) for sql in schema_sql.INDEXES.values()]


@functools.cache
def _index_names() -> frozenset[str]:
    return frozenset(schema_sql.INDEXES)


def _connect_ro(path) -> sqlite3.Connection:
    wal.refuse_odd_sidecars(Path(path))  # SQLite opens them with the db: a FIFO there never answers
    # as_uri() percent-encodes the path: a folder named "run?1" or "a#b" is a path, not a URI query or fragment.
    return sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)


def current_revision(path) -> str | None:
    """The alembic revision of the database at `path`; None for one made before alembic stamped it."""
    con = _connect_ro(path)
    try:
        kind = con.execute("SELECT type FROM sqlite_master WHERE name = 'alembic_version'").fetchone()
        if kind is None:
            return None
        if kind != ("table",):  # a view runs SQL the folder brings: a recursive one never ends
            raise NotAReportError(f"{path} is not a report ttreport wrote: alembic_version is a {kind[0]} where a "
                                  f"report holds a table (a view runs SQL the folder brings); nothing to upgrade")
        row = con.execute("SELECT version_num FROM alembic_version").fetchone()
        if row is not None and not isinstance(row[0], str):
            raise NotAReportError(f"{path}: alembic_version holds {row[0]!r}, not a schema revision: the database "
                                  f"is damaged (`ttreport check` lists the damage)")
        return row[0] if row else None
    finally:
        con.close()


def check_current(path) -> None:
    """Raise NeedsUpgradeError unless the database at `path` is at the head revision (NewerSchemaError
    when it is past it)."""
    rev, head = current_revision(path), head_revision()
    _refuse_newer(path, rev)
    if rev != head:
        raise NeedsUpgradeError(
            f"{path} has schema revision {rev or 'none (a TT-NN report)'} but this ttreport reads {head}; "
            f"upgrade it in place with `ttreport upgrade {Path(path).parent}` or ttreport.db.upgrade(path)"
        )


def _refuse_newer(path, rev: str | None) -> None:
    if rev is not None and rev not in known_revisions():
        raise NewerSchemaError(
            f"{path} was written by a newer ttreport (schema revision {rev}, which this ttreport does not know; "
            f"it reads up to {head_revision()}); upgrade ttreport to read it: `git pull` then `pip install -e .` "
            f"in a source checkout, else `pip install --upgrade ttreport`"
        )


# The tables TT-NN's own reports have (revision 0001); a database without them and without a
# ttreport revision is something else, and upgrading it would add ttreport's tables to it.
_TTNN_TABLES = frozenset({"operations", "operation_arguments", "tensors", "input_tensors", "output_tensors"})


def _tables(path) -> set[str]:
    con = _connect_ro(path)
    try:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    finally:
        con.close()


def check_is_report(path) -> None:
    """Raise NotAReportError unless `path` is a report database: a ttreport revision, or TT-NN's tables."""
    path = Path(path)
    if not path.is_file():
        raise NotAReportError(f"{path} is not a file; give a report folder or its {DB_FILE}")
    if path.stat().st_size == 0:
        raise NotAReportError(f"{path} is empty (0 bytes), not a report; nothing to upgrade")
    try:
        tables = _tables(path)
        rev = current_revision(path)
    except sqlite3.DatabaseError as e:
        raise NotAReportError(f"{path} is not a SQLite database ({e}); nothing to upgrade") from None
    if rev is None and not tables >= _TTNN_TABLES:
        missing = ", ".join(sorted(_TTNN_TABLES - tables))
        raise NotAReportError(f"{path} is a SQLite database but not a report (no alembic revision, and no "
                              f"{missing} table); ttreport upgrades only ttreport and TT-NN reports")


def check_writable_report(path) -> None:
    """Raise NotAReportError unless the database at `path` is a report (check_is_report) that ttreport may write
    (upgrade, attach): it holds no view or trigger that its revision's migrations did not make, under a name they
    use (a write would run them)."""
    check_is_report(path)
    rev = current_revision(path)
    if rev is None or rev in known_revisions():  # a newer one is refused as newer (_refuse_newer)
        _refuse_foreign_sql(Path(path), rev or revisions()[0])


def _refuse_foreign_sql(path: Path, rev: str) -> None:
    """Raise NotAReportError where the database at `path` holds a view or trigger that its revision's migrations did
    not make, under a name they use. The folder is data from elsewhere, and a write runs its SQL: a trigger fires
    on the upgrade's or attach's writes (one on report_metadata deleted every op as the upgrade stamped its version;
    one on measured_perf, as attach stored a hardware run), a view in a table's place is read by a migration (0005
    reads the operation_arguments and stack_traces views of a 0004 report: a recursive one never ends). A view of
    the user's own, under another name, no migration reads: kept."""
    made = _made_by_migrations(rev)
    con = _connect_ro(path)
    try:
        rows = con.execute("SELECT type, name, sql FROM sqlite_master WHERE type IN ('view', 'trigger')").fetchall()
    finally:
        con.close()
    names = {name for _, name in made} | set(schema_sql.COLUMNS) | {"alembic_version"}
    faults = []  # (rank, what): a view in a table's place first (renaming the table rewrote the views that read it)
    for kind, name, sql in rows:
        key = (kind, str(name).lower())
        if key in made and _same_sql(sql, made[key]):
            continue
        if key not in made and key[1] in names:
            faults.append((0, f"{name} is a view where a report holds a table"))
        elif key in made:
            faults.append((1, f"its {kind} {name} is not the one ttreport's migrations made"))
        elif kind == "trigger":
            faults.append((1, f"{name} is a trigger that ttreport's migrations did not make"))
    if faults:
        raise NotAReportError(f"{path} is not a report ttreport wrote: {min(faults)[1]} (writing to it would run SQL "
                              f"the folder brings); use the report its capture wrote")


@functools.cache
def _made_by_migrations(rev: str) -> dict[tuple[str, str], str]:
    """{(type, lower-case name): SQL} of each table, view and trigger a report at revision `rev` holds: the schema's
    statements at the head (ttreport.schema_sql), an empty database upgraded to `rev` before it (tests/
    test_migrations.py holds the two routes equal at the head). ~0.05 s past alembic's import."""
    if rev == head_revision():
        con = sqlite3.connect(":memory:")
        _create_schema(con, True, frozenset())
    else:
        with tempfile.TemporaryDirectory() as folder:
            upgrade(Path(folder) / DB_FILE, rev)
            con = sqlite3.connect(Path(folder) / DB_FILE)
    try:
        return {(kind, name.lower()): sql for kind, name, sql in
                con.execute("SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'view', 'trigger')")}
    finally:
        con.close()


def _same_sql(a, b: str) -> bool:
    """Whether two CREATE statements are the same but for blanks and identifier quotes (an ALTER TABLE ... RENAME
    quotes the names it rewrites in the views and triggers that read the table, and older schema.py texts differ
    in indentation)."""
    return isinstance(a, str) and _plain(a) == _plain(b)


def _plain(sql: str) -> str:
    return " ".join(sql.replace('"', " ").replace("`", " ").lower().split())


def is_current(path) -> bool:
    """True when the database at `path` is at the head revision with every index and both version notes (_versions):
    upgrading would not change it. A report from before REVISION_KEY (its schema_version the alembic revision) is
    not: its upgrade writes them."""
    if current_revision(path) != head_revision():
        return False
    con = _connect_ro(path)
    try:
        present = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        versions = set(con.execute("SELECT key, value FROM report_metadata WHERE key IN (?, ?)",
                                   [k for k, _ in _versions()]))
    finally:
        con.close()
    return _index_names() <= present and versions == set(_versions())


def upgrade(path, revision: str = "head", *, progress=None) -> None:
    """Upgrade the database at `path` in place to `revision` (the head by default); a missing or empty
    file is created, upgraded from empty. A database that is neither a report nor empty is refused
    (NotAReportError), and one that is already current is not touched (not even its file's bytes).

    `progress`, when given, is called with one line per revision applied and the seconds it took.
    """
    path = Path(path)
    tt_nn = False  # a report TT-NN wrote: its tables, and no alembic revision
    if path.exists() and path.stat().st_size:
        check_writable_report(path)
        rev = current_revision(path)
        _refuse_newer(path, rev)
        if revision == "head" and is_current(path):
            return
        tt_nn = rev is None
    from alembic import command

    cfg = _alembic_config()
    engine = _engine(path)
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            if tt_nn:
                command.stamp(cfg, revisions()[0])  # 0001 is TT-NN's own tables: they are there already
            if progress is None:
                command.upgrade(cfg, revision)
            else:
                # One revision at a time, so that a long upgrade says where it is.
                from alembic.runtime.migration import MigrationContext

                start = MigrationContext.configure(conn).get_current_revision()
                targets = revisions() if revision == "head" else revisions()[:revisions().index(revision) + 1]
                for rev in targets[targets.index(start) + 1 if start in targets else 0:]:
                    t = time.perf_counter()
                    command.upgrade(cfg, rev)
                    progress(f"{start or 'empty'} -> {rev}: {time.perf_counter() - t:.1f} s")
                    start = rev
            if revision == "head":
                _set_schema_version(conn)
                for ddl in _index_ddl():  # a capture killed before it closed has none
                    conn.exec_driver_sql(ddl)
                hint_sort_indexes(conn.exec_driver_sql)
    finally:
        engine.dispose()


# TT-NN's per-op graph tables (captured_graph, nodes, edges) spread from each distinct graph kept once
# (distinct_graphs, operation_graphs), as a Config(device_graphs=True) capture writes them, in SQL alone: each graph's
# JSON is read once into temp tables (json_each), then copied under each op's id. A graph that is not a JSON array of
# objects (the folder is untrusted) adds no rows.
_GRAPH_PARTS = [
    "CREATE TEMP TABLE fill_nodes (graph_id, unique_id, fn, name)",
    "CREATE TEMP TABLE fill_edges (graph_id, source, sink, i)",
    "INSERT INTO temp.fill_nodes SELECT g.graph_id, json_extract(n.value, '$.counter'), "
    "json_extract(n.value, '$.node_type') = 'function_start', CASE WHEN json_type(n.value, '$.params.name') IS NULL "
    "THEN json_extract(n.value, '$.node_type') ELSE json_extract(n.value, '$.params.name') END "
    "FROM main.distinct_graphs g, json_each(g.captured_graph) n "
    "WHERE json_valid(g.captured_graph) AND json_type(g.captured_graph) = 'array' AND n.type = 'object'",
    "INSERT INTO temp.fill_edges SELECT g.graph_id, json_extract(n.value, '$.counter'), c.value, c.key "
    "FROM main.distinct_graphs g, json_each(g.captured_graph) n, json_each(n.value, '$.connections') c "
    "WHERE json_valid(g.captured_graph) AND json_type(g.captured_graph) = 'array' AND n.type = 'object' "
    "AND json_type(n.value, '$.connections') = 'array'",
]
_GRAPH_SPREAD = [
    "INSERT INTO main.captured_graph (operation_id, captured_graph) SELECT o.operation_id, g.captured_graph "
    "FROM main.operation_graphs o JOIN main.distinct_graphs g USING (graph_id) ORDER BY o.operation_id",
    "INSERT INTO main.nodes (operation_id, unique_id, node_operation_id, name) SELECT o.operation_id, n.unique_id, "
    "CASE WHEN n.fn THEN o.operation_id END, n.name FROM main.operation_graphs o JOIN temp.fill_nodes n "
    "USING (graph_id) ORDER BY o.operation_id, n.unique_id",
    "INSERT INTO main.edges (operation_id, source_unique_id, sink_unique_id, source_output_index, sink_input_index, "
    "key) SELECT o.operation_id, e.source, e.sink, e.i, 0, e.i FROM main.operation_graphs o JOIN temp.fill_edges e "
    "USING (graph_id) ORDER BY o.operation_id, e.source, e.i",
]


def fill_device_graphs(path) -> int:
    """Fill TT-NN's per-op captured_graph, nodes and edges of the current report at `path` from its distinct graphs
    (a capture with the default device_graphs="distinct" leaves them empty), as Config(device_graphs=True) would have
    written them: ttnn-visualizer then shows each op's "Device operations" and links the perf files' rows to them.
    Returns the number of ops filled; 0, touching nothing, where captured_graph has rows already.
    """
    check_current(path)
    con = sqlite3.connect(path)
    try:
        if con.execute("SELECT EXISTS (SELECT 1 FROM captured_graph)").fetchone()[0]:
            return 0
        with con:  # one transaction: all three tables or none
            for sql in _GRAPH_PARTS + _GRAPH_SPREAD:
                con.execute(sql)
            return con.execute("SELECT COUNT(*) FROM captured_graph").fetchone()[0]
    finally:
        con.close()


def _versions() -> list[tuple[str, str]]:
    """report_metadata's two version notes: TT-NN's database version under TT-NN's key, which TT-NN's readers check,
    and ttreport's alembic revision under its own (folder.SCHEMA_VERSION_KEY, REVISION_KEY)."""
    return [(SCHEMA_VERSION_KEY, TTNN_SCHEMA_VERSION), (REVISION_KEY, head_revision())]


def _set_schema_version(conn) -> None:
    from sqlalchemy import text

    conn.execute(text("INSERT OR REPLACE INTO report_metadata (key, value) VALUES (:k, :v)"),
                 [{"k": k, "v": v} for k, v in _versions()])


def _literal(text: str, width: int = 100) -> str:
    """`text` as adjacent string literals, one per source line (its own lines, long ones cut at a space)."""
    parts = []
    for line in text.splitlines(keepends=True):
        while len(line) > width and " " in line[:width]:
            cut = line.rindex(" ", 0, width) + 1
            parts.append(line[:cut])
            line = line[cut:]
        parts.append(line)
    return "\n".join(f"        {part!r}" for part in parts)


if __name__ == "__main__":  # python -m ttreport.db > ttreport/schema_sql.py, after a change to schema.py
    print(schema_sql_text(), end="")
