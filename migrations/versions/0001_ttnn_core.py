"""TT-NN's report tables, with the names and columns TT-NN and ttnn-visualizer use.

Revision ID: 0001
Revises:
Create Date: 2025-01-01

Frozen: this migration writes its own DDL and never reads ttreport.schema, so a later change
to the schema cannot change what upgrading an old report does.
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _int(name, **kw):
    return sa.Column(name, sa.Integer, **kw)


def _text(name):
    return sa.Column(name, sa.Text)


DEVICE_COLUMNS = (
    "num_y_cores", "num_x_cores", "num_y_compute_cores", "num_x_compute_cores", "worker_l1_size",
    "l1_num_banks", "l1_bank_size", "address_at_first_l1_bank", "address_at_first_l1_cb_buffer",
    "num_banks_per_storage_core", "num_compute_cores", "num_storage_cores", "total_l1_memory",
    "total_l1_for_tensors", "total_l1_for_interleaved_buffers", "total_l1_for_sharded_buffers", "cb_limit",
)


def upgrade() -> None:
    op.create_table("operations", _int("operation_id", primary_key=True, autoincrement=False), _text("name"),
                    sa.Column("duration", sa.Float))
    op.create_table("operation_arguments", _int("operation_id"), _text("name"), _text("value"))
    op.create_table("tensors", _int("tensor_id", primary_key=True, autoincrement=False), _text("shape"),
                    _text("dtype"), _text("layout"), _text("memory_config"), _int("device_id"), _int("address"),
                    _int("buffer_type"), _int("size"))
    op.create_table("input_tensors", _int("operation_id"), _int("input_index"), _int("tensor_id"))
    op.create_table("output_tensors", _int("operation_id"), _int("output_index"), _int("tensor_id"))
    op.create_table("devices", _int("device_id", primary_key=True, autoincrement=False),
                    *[_int(c) for c in DEVICE_COLUMNS])
    op.create_table("buffers", _int("operation_id"), _int("device_id"), _int("address"), _int("max_size_per_bank"),
                    _int("buffer_type"), _int("buffer_layout"))
    op.create_table("buffer_pages", _int("operation_id"), _int("device_id"), _int("address"), _int("core_y"),
                    _int("core_x"), _int("bank_id"), _int("page_index"), _int("page_address"), _int("page_size"),
                    _int("buffer_type"))
    op.create_table("device_tensors", _int("tensor_id"), _int("device_id"), _int("address"))
    op.create_table("stack_traces", _int("operation_id"), _text("stack_trace"))
    op.create_table("errors", _int("operation_id"), _text("operation_name"), _text("error_type"),
                    _text("error_message"), _text("stack_trace"), _text("timestamp"))
    for name in ("local_tensor_comparison_records", "global_tensor_comparison_records"):
        op.create_table(name, _int("tensor_id"), _int("golden_tensor_id"), _int("matches"),
                        sa.Column("desired_pcc", sa.Float), sa.Column("actual_pcc", sa.Float))
    op.create_table("report_metadata", sa.Column("key", sa.Text, primary_key=True), _text("value"))


def downgrade() -> None:
    for name in ("report_metadata", "global_tensor_comparison_records", "local_tensor_comparison_records",
                 "errors", "stack_traces", "device_tensors", "buffer_pages", "buffers", "devices",
                 "output_tensors", "input_tensors", "tensors", "operation_arguments", "operations"):
        op.drop_table(name)
