"""The two sort indexes on operations are whole again, with a row-size hint that keeps plain SELECTs off them.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03

0010 made `ix_operations_duration` and `ix_operations_l1_bytes` partial, so that an unsorted SELECT reads the
table in id order; but SQLite then used them only for a query whose WHERE implies `duration IS NOT NULL`, and
`ORDER BY duration DESC LIMIT 10` sorted the whole table (78 ms at 1,000,000 ops instead of 0.01). They are
dropped here and made again whole with the report's other indexes after the last revision, where
ttreport.db.hint_sort_indexes writes their sqlite_stat1 rows (`sz=`: SQLite's row-size hint).

Frozen like 0001: the names are written here, not read from ttreport.schema.
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    for index in ("ix_operations_duration", "ix_operations_l1_bytes"):
        bind.exec_driver_sql(f"DROP INDEX IF EXISTS {index}")


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
