"""Tensor writes: the values an op wrote into a tensor whose file was already stored.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02

A tensor's file holds the values it had when first stored. An op that writes into an existing tensor
(`output_tensor=` / `optional_output_tensor=`, an in-place op such as `add_`) now gets a file of its
own, tensors/<tensor_id>@<operation_id>.pt, and a `tensor_writes` row with that file's size, CRC-32,
shape and dtype (as `tensor_files`). Reports made before this revision kept only the first values.

Frozen like 0001: the DDL is written here, not read from ttreport.schema.
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tensor_writes",
        sa.Column("operation_id", sa.Integer), sa.Column("tensor_id", sa.Integer), sa.Column("file", sa.Text),
        sa.Column("file_bytes", sa.Integer), sa.Column("crc32", sa.Integer),
        sa.Column("shape", sa.Text), sa.Column("dtype", sa.Text),
        sa.PrimaryKeyConstraint("operation_id", "tensor_id", sqlite_on_conflict="REPLACE"),
    )
    op.create_index("ix_tensor_writes_tensor", "tensor_writes", ["tensor_id", "operation_id"])


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
