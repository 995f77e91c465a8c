"""Id order: the indexes on keys that do not rise with the rowid become partial.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03

An unsorted `SELECT operation_id FROM operations` was answered from the whole `l1_bytes` (or
`duration`) index, and `SELECT tensor_id FROM input_tensors` from the tensor index: the rows came
back in that index's order, not the table's (the visualizer reads without ORDER BY). These indexes
are dropped here and made again, partial (`WHERE <key> IS NOT NULL`), with the report's other
indexes after the last revision: a query that compares the key still uses them, a plain SELECT reads
the table in id order.

Frozen like 0001: the names are written here, not read from ttreport.schema.
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_WHOLE = ("ix_operations_duration", "ix_operations_l1_bytes", "ix_input_tensors_tensor", "ix_output_tensors_tensor",
          "ix_buffer_lifetimes_seq", "ix_device_tensors_tensor", "ix_tensor_writes_tensor",
          "idx_stack_traces_source_file_id", "ix_local_cmp_tensor", "ix_global_cmp_tensor",
          "ix_tensor_comparisons_tensor")


def upgrade() -> None:
    bind = op.get_bind()
    for index in _WHOLE:
        bind.exec_driver_sql(f"DROP INDEX IF EXISTS {index}")


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
