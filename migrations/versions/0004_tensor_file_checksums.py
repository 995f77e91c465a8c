"""Tensor file checksums: what each stored tensor file held when it was written.

Revision ID: 0004
Revises: 0003
Create Date: 2025-01-04

`tensor_files` holds, per stored tensor file, its size, its CRC-32 and the shape and torch
dtype that loading it gives. Readers verify a file against its row before trusting its values
(a flipped byte, or a file swapped for another tensor's). Reports made before this revision
have no rows: their files are still checked against the shape in `tensors`.

Frozen like 0001: the DDL is written here, not read from ttreport.schema.
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tensor_files",
        sa.Column("tensor_id", sa.Integer), sa.Column("file_bytes", sa.Integer), sa.Column("crc32", sa.Integer),
        sa.Column("shape", sa.Text), sa.Column("dtype", sa.Text),
        sa.PrimaryKeyConstraint("tensor_id", sqlite_on_conflict="REPLACE"),
    )


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
