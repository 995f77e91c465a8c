"""Mesh tensors per device: each shard's stored file, and golden comparisons per device.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02

A tensor on a mesh of devices is stored as one file per device shard, tensors/<id>/<device>.pt;
`device_tensor_files` holds each shard file's size, CRC-32, shape and dtype, as `tensor_files`
does for a one-device tensor. `tensor_comparisons.device_id` names the device whose shard a golden
comparison row judged (NULL: a one-device tensor). Reports made before this revision stored a mesh
tensor as its first device's shard alone and compared only that shard: they keep those rows.

Frozen like 0001: the DDL is written here, not read from ttreport.schema.
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "device_tensor_files",
        sa.Column("tensor_id", sa.Integer), sa.Column("device_id", sa.Integer),
        sa.Column("file_bytes", sa.Integer), sa.Column("crc32", sa.Integer),
        sa.Column("shape", sa.Text), sa.Column("dtype", sa.Text),
        sa.PrimaryKeyConstraint("tensor_id", "device_id", sqlite_on_conflict="REPLACE"),
    )
    with op.batch_alter_table("tensor_comparisons") as batch:
        batch.add_column(sa.Column("device_id", sa.Integer))


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
