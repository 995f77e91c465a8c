"""Each op's step: how many times the run's step() had been called when the op began.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05

`operations.step` (0 before the first step()) with the run's schedule in report_metadata.schedule
(ttreport.steps.Schedule's JSON) tells a reader which ops ran in active steps. A report made before this
revision has no steps: its ops' step is NULL, and a reader takes the whole run as one active step.

Frozen like 0001: the column is written here, not read from ttreport.schema.
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("operations", sa.Column("step", sa.Integer))


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
