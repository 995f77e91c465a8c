"""Measured device times attached from a real profiler run: `measured_perf`.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05

`ttreport attach REPORT ops_perf_results.csv` keeps each device operation of TT-NN's profiler file (its OP CODE,
DEVICE KERNEL DURATION [ns], tensors and attributes) beside the report, with the report op it was matched to, so
that summaries, comparisons and the HTML report set measured time beside the performance model's. A report made
before this revision has the table empty: nothing attached.

Frozen like 0001: the DDL is written here, not read from ttreport.schema.
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "measured_perf",
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("operation_id", sa.Integer), sa.Column("op_code", sa.Text), sa.Column("device_id", sa.Integer),
        sa.Column("global_call_count", sa.Integer), sa.Column("kernel_ns", sa.Integer), sa.Column("fw_ns", sa.Integer),
        sa.Column("core_count", sa.Integer), sa.Column("math_fidelity", sa.Text), sa.Column("inputs", sa.Text),
        sa.Column("outputs", sa.Text), sa.Column("attributes", sa.Text),
    )


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
