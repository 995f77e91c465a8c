"""Creating, opening and upgrading report databases (alembic's cookbook, run in-process).

A new report is `metadata.create_all` stamped at the alembic head; an older report is
upgraded with `command.upgrade` on a connection passed through `cfg.attributes`. Migrations
ship inside the package as ttreport.migrations, so an installed ttreport finds them.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from pathlib import Path

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, event, text
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.schema import CreateIndex

from ttreport import migrations, schema
from ttreport.errors import NeedsUpgradeError, NewerSchemaError

DB_FILE = "db.sqlite"


def _alembic_config() -> AlembicConfig:
    cfg = AlembicConfig()
    # The package's own folder, wherever it is installed; never the source tree.
    cfg.set_main_option("script_location", os.path.dirname(migrations.__file__))
    return cfg


@functools.cache
def head_revision() -> str:
    return ScriptDirectory.from_config(_alembic_config()).get_current_head()


@functools.cache
def known_revisions() -> frozenset[str]:
    """Every revision this ttreport's migrations name; any other was made by a newer ttreport."""
    return frozenset(s.revision for s in ScriptDirectory.from_config(_alembic_config()).walk_revisions())


def _engine(path):
    engine = create_engine(f"sqlite:///{Path(path)}")

    # pysqlite's own BEGIN handling breaks DDL inside transactions (SQLAlchemy's documented fix).
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _):
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN")

    return engine


def create(path, *, indexes: bool = True) -> None:
    """A new, empty report database at `path`, stamped at the head revision.

    A capture passes indexes=False and calls create_indexes() when it closes: keeping a dozen
    indexes current row by row would cost more than half the writer's time.
    """
    engine = _engine(path)
    try:
        with engine.begin() as conn:
            schema.metadata.create_all(conn)
            if not indexes:
                for index in schema.INDEXES:
                    conn.exec_driver_sql(f"DROP INDEX {index.name}")
            MigrationContext.configure(conn).stamp(ScriptDirectory.from_config(_alembic_config()), "head")
            _set_schema_version(conn)
    finally:
        engine.dispose()


def create_indexes(con: sqlite3.Connection) -> None:
    """Create the schema's indexes that `con`'s database lacks (a capture's last step)."""
    for ddl in _INDEX_DDL:
        con.execute(ddl)


_INDEX_DDL = [str(CreateIndex(index, if_not_exists=True).compile(dialect=sqlite_dialect.dialect()))
              for index in schema.INDEXES]


def current_revision(path) -> str | None:
    """The alembic revision of the database at `path`; None for one made before alembic stamped it."""
    con = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
    try:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'alembic_version'").fetchone():
            return None
        row = con.execute("SELECT version_num FROM alembic_version").fetchone()
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
            f"it reads up to {head_revision()}); upgrade ttreport to read it: pip install --upgrade ttreport"
        )


def upgrade(path, revision: str = "head") -> None:
    """Upgrade the database at `path` in place to `revision` (the head by default); a missing file
    is created, upgraded from empty."""
    if Path(path).exists():
        _refuse_newer(path, current_revision(path))
    cfg = _alembic_config()
    engine = _engine(path)
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
            if revision == "head":
                _set_schema_version(conn)
                for ddl in _INDEX_DDL:  # a capture killed before it closed has none
                    conn.exec_driver_sql(ddl)
    finally:
        engine.dispose()


def _set_schema_version(conn) -> None:
    conn.execute(
        text("INSERT OR REPLACE INTO report_metadata (key, value) VALUES (:k, :v)"),
        {"k": schema.SCHEMA_VERSION_KEY, "v": head_revision()},
    )
