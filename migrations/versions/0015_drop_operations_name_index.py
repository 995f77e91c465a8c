"""`ix_operations_name` goes: `ix_operations_name_duration` (name, duration) answers every lookup by name.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05

A closed report has both, and SQLite already answers `WHERE name = ?` from the wider one (EXPLAIN QUERY PLAN on
the sample report: a covering search of ix_operations_name_duration), so the narrow one was never read there. A
capture kept it up to date batch by batch: 0.27 µs of the writer process's CPU an op (0.99 -> 0.71 µs for the
operations rows with and without it, 200,000 adds copied in batches of 2,000) and 33 B an op of the db while it
runs (bench/README.md, issue 33, close33). A capture in progress has no name index now (the wide one is made at its
close, db.LATE_INDEXES): a live reader's name lookup scans.

Frozen like 0001: the DDL is written here, not read from ttreport.schema. IF EXISTS: a report made at the head by
this ttreport and set back by hand (tests) has none.
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_operations_name")


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
