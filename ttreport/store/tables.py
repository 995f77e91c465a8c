"""The store's schema: every report table of ttreport.schema, with a run_id column in front.

Nothing here lists a report column: each store table is derived from the report table of the same
name, so a migration that adds a column to the report adds it to the store. SQLite's INTEGER is 64
bits; PostgreSQL's is 32, so every integer column becomes BIGINT. Two tables of the store's own:
`runs` (one row per pushed report, its identity and metadata) and `run_op_stats` (per run, per op
name and first input shape: count, time, peak L1, lowest PCC), which `history` reads.

    >>> from ttreport.store import tables
    >>> [c.name for c in tables.store_table("operations").primary_key]
    ['run_id', 'operation_id']
"""

from __future__ import annotations

import functools

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from ttreport import schema

ROW_ORDER = "row_order"  # added to a report table without a primary key

store_metadata = MetaData()

runs = Table(
    "runs", store_metadata,
    Column("run_id", BigInteger, primary_key=True, autoincrement=True),
    Column("report_uuid", Text, nullable=False),  # report_metadata's report_id, written at capture
    Column("name", Text, nullable=False),  # --name at push; else the report folder's name
    Column("model", Text), Column("host", Text), Column("git_commit", Text),
    Column("started_at", Text), Column("status", Text), Column("operations", BigInteger),
    Column("ttreport_version", Text),
    Column("pushed_at", Text, server_default=text("to_char(now() AT TIME ZONE 'UTC', "
                                                  "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")),
    Column("tensor_dir", Text),  # under the tensor store; NULL when the report stored no tensor files
    UniqueConstraint("report_uuid", name="uq_runs_report_uuid"),
)
Index("ix_runs_name", runs.c.name)

run_op_stats = Table(
    "run_op_stats", store_metadata,
    Column("run_id", BigInteger, nullable=False),
    Column("name", Text, nullable=False),
    Column("shape", Text, nullable=False),  # the first input's dims, "1x32x64"; "" when it has none
    Column("count", BigInteger), Column("total_s", Float), Column("max_s", Float),
    Column("peak_l1", BigInteger), Column("min_pcc", Float),
    # The performance model's device time (device_perf.ideal_ns) over the calls with an estimate: what history
    # compares by default, the same run after run for the same ops where host time is not.
    Column("device_count", BigInteger), Column("total_device_ns", BigInteger), Column("max_device_ns", BigInteger),
    PrimaryKeyConstraint("run_id", "name", "shape"),
)
# history: one op name across all runs, in run order, without reading the runs' operations.
Index("ix_run_op_stats_name", run_op_stats.c.name, run_op_stats.c.run_id)

store_meta = Table("store_meta", store_metadata, Column("key", Text, primary_key=True), Column("value", Text))

REPORT_TABLES = [t for t in schema.metadata.sorted_tables]


def _derive(table: Table) -> Table:
    columns = [Column("run_id", BigInteger, nullable=False)]
    for c in table.columns:
        kind = BigInteger if isinstance(c.type, Integer) else Float if isinstance(c.type, Float) else Text
        columns.append(Column(c.name, kind))
    pk = [c.name for c in table.primary_key.columns]
    if not pk:  # the row's place in the report (its rowid), so that a run reads back in the report's order
        columns.append(Column(ROW_ORDER, BigInteger, nullable=False))
        pk = [ROW_ORDER]
    return Table(table.name, store_metadata, *columns, PrimaryKeyConstraint("run_id", *pk))


for _t in REPORT_TABLES:
    _derive(_t)


@functools.cache
def store_table(name: str) -> Table:
    """The store's table for the report table `name`."""
    return store_metadata.tables[name]


def order_by(name: str) -> list[str]:
    """The store table's key after run_id: the report's order of its rows."""
    return [c.name for c in store_table(name).primary_key.columns][1:]


def report_columns(name: str) -> list[str]:
    """The report table's columns, in order (the store's table has run_id before them)."""
    return [c.name for c in schema.metadata.tables[name].columns]
