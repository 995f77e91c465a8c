"""Device time estimates: the performance model's figures per op.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02

`device_perf` holds, per op that does device work, device_sim's performance model estimate
(device_sim/perf_model.py): compute-bound and bandwidth-bound nanoseconds, their maximum, which
one dominates, and the math fidelity the compute figure assumes. Reports made before this
revision have no rows: their ops show no device time.

Frozen like 0001: the DDL is written here, not read from ttreport.schema.
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "device_perf",
        sa.Column("operation_id", sa.Integer, primary_key=True),
        sa.Column("compute_ns", sa.Integer), sa.Column("bandwidth_ns", sa.Integer), sa.Column("ideal_ns", sa.Integer),
        sa.Column("bound", sa.Text), sa.Column("math_fidelity", sa.Text),
    )


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
