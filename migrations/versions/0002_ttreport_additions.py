"""ttreport's additions: op timing and nesting, compact stack traces and buffers, comparisons, views, indexes.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02

`stack_traces` and `buffers` become views over compact tables; their old rows are moved so
that the views return exactly what the tables held. Old ops get `end_seq = 2 * operation_id`
and each old buffer row a lifetime from 2*op-1 to 2*op+1, so it is live after its op only.
Frozen like 0001: the DDL is written here, not read from ttreport.schema.
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _int(name, **kw):
    return sa.Column(name, sa.Integer, **kw)


VIEWS = {
    "stack_traces": """
        SELECT o.operation_id AS operation_id, s.stack_trace AS stack_trace
        FROM operations o JOIN stack_trace_texts s ON s.stack_trace_id = o.stack_trace_id""",
    "buffers": """
        SELECT o.operation_id AS operation_id, b.device_id AS device_id, b.address AS address,
               b.max_size_per_bank AS max_size_per_bank, b.buffer_type AS buffer_type,
               b.buffer_layout AS buffer_layout
        FROM operations o JOIN buffer_lifetimes b
          ON b.allocated_seq < o.end_seq AND (b.freed_seq IS NULL OR b.freed_seq > o.end_seq)""",
    "op_tensors": """
        SELECT o.operation_id, o.name, 'input' AS direction, i.input_index AS tensor_index, t.*
        FROM operations o JOIN input_tensors i USING (operation_id) JOIN tensors t USING (tensor_id)
        UNION ALL
        SELECT o.operation_id, o.name, 'output', x.output_index, t.*
        FROM operations o JOIN output_tensors x USING (operation_id) JOIN tensors t USING (tensor_id)""",
    "memory_after_op": """
        SELECT operation_id, name, l1_bytes, dram_bytes FROM operations""",
}

INDEXES = [
    ("ix_operations_name", "operations", ["name"]),
    ("ix_operations_parent", "operations", ["parent_operation_id"]),
    ("ix_operations_duration", "operations", ["duration"]),
    ("ix_operations_l1_bytes", "operations", ["l1_bytes"]),
    ("ix_operation_arguments_op", "operation_arguments", ["operation_id"]),
    ("ix_tensors_producer", "tensors", ["producer_operation_id"]),
    ("ix_input_tensors_op", "input_tensors", ["operation_id"]),
    ("ix_input_tensors_tensor", "input_tensors", ["tensor_id"]),
    ("ix_output_tensors_op", "output_tensors", ["operation_id"]),
    ("ix_output_tensors_tensor", "output_tensors", ["tensor_id"]),
    ("ix_buffer_lifetimes_seq", "buffer_lifetimes", ["allocated_seq", "freed_seq"]),
    ("ix_buffer_pages_op", "buffer_pages", ["operation_id"]),
    ("ix_device_tensors_tensor", "device_tensors", ["tensor_id"]),
    ("ix_errors_op", "errors", ["operation_id"]),
    ("ix_local_cmp_tensor", "local_tensor_comparison_records", ["tensor_id"]),
    ("ix_global_cmp_tensor", "global_tensor_comparison_records", ["tensor_id"]),
    ("ix_tensor_comparisons_op", "tensor_comparisons", ["operation_id"]),
    ("ix_tensor_comparisons_tensor", "tensor_comparisons", ["tensor_id"]),
]


def upgrade() -> None:
    with op.batch_alter_table("operations") as b:
        for column in (sa.Column("start_ns", sa.Integer), sa.Column("end_ns", sa.Integer),
                       _int("parent_operation_id"), sa.Column("depth", sa.Integer), sa.Column("status", sa.Text),
                       sa.Column("thread", sa.Text), _int("stack_trace_id"), sa.Column("end_seq", sa.Integer),
                       sa.Column("l1_bytes", sa.Integer), sa.Column("dram_bytes", sa.Integer)):
            b.add_column(column)
    with op.batch_alter_table("tensors") as b:
        for column in (sa.Column("memory_config_source", sa.Text), _int("producer_operation_id"),
                       sa.Column("file", sa.Text), sa.Column("padded_shape", sa.Text)):
            b.add_column(column)

    # Stack traces: one row per distinct text, numbered in order of first use.
    op.create_table("stack_trace_texts", _int("stack_trace_id", primary_key=True, autoincrement=False),
                    sa.Column("stack_trace", sa.Text))
    op.execute("""
        INSERT INTO stack_trace_texts (stack_trace_id, stack_trace)
        SELECT ROW_NUMBER() OVER (ORDER BY MIN(operation_id)), stack_trace
        FROM stack_traces WHERE stack_trace IS NOT NULL GROUP BY stack_trace""")
    # Each op's text id through a keyed map: a subquery per op over the unindexed stack_traces took
    # quadratic time (20,000 ops 9 s, 40,000 ops 47 s); this is linear (bench/upgrade.py).
    op.execute("CREATE INDEX ix_upgrade_stack_text ON stack_trace_texts (stack_trace)")
    op.execute("CREATE TEMP TABLE upgrade_op_stack (operation_id INTEGER PRIMARY KEY, stack_trace_id INTEGER)")
    op.execute("""
        INSERT INTO upgrade_op_stack (operation_id, stack_trace_id)
        SELECT s.operation_id, MIN(t.stack_trace_id) FROM stack_traces s
        JOIN stack_trace_texts t ON t.stack_trace = s.stack_trace GROUP BY s.operation_id""")
    op.execute("""
        UPDATE operations SET stack_trace_id = (
            SELECT m.stack_trace_id FROM upgrade_op_stack m WHERE m.operation_id = operations.operation_id)""")
    op.execute("DROP TABLE upgrade_op_stack")
    op.execute("DROP INDEX ix_upgrade_stack_text")
    op.drop_table("stack_traces")

    # Buffers: each old row becomes a lifetime that covers its op's end and no other op's.
    op.create_table(
        "buffer_lifetimes",
        _int("buffer_id", primary_key=True, autoincrement=False), _int("device_id"),
        sa.Column("address", sa.Integer), sa.Column("max_size_per_bank", sa.Integer),
        sa.Column("buffer_type", sa.Integer), sa.Column("buffer_layout", sa.Integer), sa.Column("size", sa.Integer),
        sa.Column("allocated_seq", sa.Integer), sa.Column("freed_seq", sa.Integer),
        _int("allocated_by_operation_id"),
    )
    op.execute("UPDATE operations SET end_seq = 2 * operation_id")
    op.execute("""
        INSERT INTO buffer_lifetimes (buffer_id, device_id, address, max_size_per_bank, buffer_type, buffer_layout,
                                      allocated_seq, freed_seq)
        SELECT ROW_NUMBER() OVER (ORDER BY rowid), device_id, address, max_size_per_bank, buffer_type, buffer_layout,
               2 * operation_id - 1, 2 * operation_id + 1
        FROM buffers""")
    op.drop_table("buffers")

    op.create_table(
        "tensor_comparisons",
        _int("operation_id"), sa.Column("mode", sa.Text), _int("tensor_id"), _int("golden_tensor_id"),
        sa.Column("status", sa.Text), sa.Column("reason", sa.Text),
        *[sa.Column(c, sa.Float) for c in ("pcc", "desired_pcc", "max_abs_error", "mean_abs_error",
                                            "max_rel_error")],
        sa.Column("mismatched", sa.Integer), sa.Column("mismatched_fraction", sa.Float),
        sa.Column("numel", sa.Integer), sa.Column("max_ulp", sa.Float), sa.Column("rtol", sa.Float),
        sa.Column("atol", sa.Float), sa.Column("worst_index", sa.Text), sa.Column("worst_actual", sa.Float),
        sa.Column("worst_golden", sa.Float),
    )
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns)
    for name, sql in VIEWS.items():
        op.execute(f"CREATE VIEW {name} AS {sql}")


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
