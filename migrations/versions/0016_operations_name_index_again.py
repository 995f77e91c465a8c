"""`ix_operations_name` again: a name's ops in id order, the first page of them without sorting them all.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06

0015 dropped it, as `ix_operations_name_duration` answers `WHERE name = ?` alone. It does not answer a name's
ops in call order (`WHERE name = ? AND operation_id > ? ORDER BY operation_id LIMIT 100`, a viewer's page and
`ttreport ops --name`): SQLite read every op of the name from the wide index and sorted them, 17-32 ms a page
on a 1,000,000-op report (bench 4, "ops by name": 0.4 ms with this index). The capture keeps it up to date again
(~0.27 us of the writer's CPU an op), so a live reader's lookup by name uses it too.

Frozen like 0001: the DDL is written here, not read from ttreport.schema.
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS ix_operations_name ON operations (name) WHERE name IS NOT NULL")


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
