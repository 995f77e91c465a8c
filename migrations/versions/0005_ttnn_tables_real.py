"""TT-NN's tables as real tables, TT-NN 0.81's text forms and tables, rows in id order.

Revision ID: 0005
Revises: 0004
Create Date: 2025-01-05

ttnn-visualizer looks tables up in sqlite_master by type, so `stack_traces`, `tensors`,
`operation_arguments` and `buffers` stop being views: each becomes a table holding what its
view showed, in id order (`buffers`: op by op, each op's buffers in allocation order).
`tensor_records` folds into `tensors` (which keeps its `spec_id`); `tensor_specs`,
`stack_trace_texts` and `buffer_lifetimes` stay as the writer's compact storage.

Stack texts are turned to TT-NN's order, innermost frame first (traceback.format_stack()'s
entries reversed and joined by newlines, as TT-NN's database.py stores them): the first
`File "...", line N` is the user's line that called the op, which the visualizer shows.

Added from TT-NN 0.81's report schema (graph_report.py, ttnn-visualizer 0.108's models):
`source_files` and `stack_traces.source_file_id` (empty and NULL here: a capture fills them);
`tensor_lifetime` and `buffer_chunks` (worked out from the history); `captured_graph`, `nodes`,
`edges` (empty: an older report recorded no device work);
`tensors.storage_type`; a `rank` column (0) on the tables the visualizer filters by rank.

The `(name, duration)`, `name` and `parent_operation_id` indexes become partial (`WHERE ...
IS NOT NULL`): a query that compares the column still uses them, but an unsorted SELECT of
(operation_id, name, duration) no longer reads the covering index and comes back scrambled.

Frozen like 0001: the DDL and SQL are written here, not read from ttreport.schema.
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def _rank() -> sa.Column:
    return sa.Column("rank", sa.Integer, server_default="0")


_OP_TENSORS = """
        SELECT o.operation_id, o.name, 'input' AS direction, i.input_index AS tensor_index, t.*
        FROM operations o JOIN input_tensors i USING (operation_id) JOIN tensors t USING (tensor_id)
        UNION ALL
        SELECT o.operation_id, o.name, 'output', x.output_index, t.*
        FROM operations o JOIN output_tensors x USING (operation_id) JOIN tensors t USING (tensor_id)"""

_SPECS_UPDATE = """
        AFTER UPDATE ON tensor_specs BEGIN
            UPDATE tensors SET shape = NEW.shape, dtype = NEW.dtype, layout = NEW.layout,
                               memory_config = NEW.memory_config, padded_shape = NEW.padded_shape
            WHERE spec_id = OLD.spec_id;
        END"""

_PATH = "substr(st.stack_trace, 9, instr(st.stack_trace, '\", line ') - 9)"
_LINE = ("CAST(substr(st.stack_trace, instr(st.stack_trace, '\", line ') + 8, "
         "instr(st.stack_trace, ', in ') - instr(st.stack_trace, '\", line ') - 8) AS INTEGER)")

_LIFETIME = f"""
    INSERT INTO tensor_lifetime (tensor_id, producer_operation_id, last_use_operation_id, deallocate_operation_id,
                                 producer_source_file, producer_source_line, last_use_source_file,
                                 last_use_source_line)
    SELECT l.tensor_id, l.producer, l.last_use, l.dealloc,
           (SELECT {_PATH} FROM stack_traces st WHERE st.operation_id = l.producer),
           (SELECT {_LINE} FROM stack_traces st WHERE st.operation_id = l.producer),
           (SELECT {_PATH} FROM stack_traces st WHERE st.operation_id = l.last_use),
           (SELECT {_LINE} FROM stack_traces st WHERE st.operation_id = l.last_use)
    FROM (SELECT t.tensor_id, t.producer_operation_id AS producer,
                 (SELECT MAX(i.operation_id) FROM input_tensors i JOIN operations o USING (operation_id)
                  WHERE i.tensor_id = t.tensor_id AND o.name != 'ttnn.deallocate') AS last_use,
                 (SELECT MIN(i.operation_id) FROM input_tensors i JOIN operations o USING (operation_id)
                  WHERE i.tensor_id = t.tensor_id AND o.name = 'ttnn.deallocate') AS dealloc
          FROM tensors t) l
    ORDER BY l.tensor_id"""

_CHUNKS = """
    INSERT INTO buffer_chunks (operation_id, device_id, address, bank_id, core_x, core_y, chunk_address, chunk_size,
                               page_size, num_pages, buffer_type)
    SELECT operation_id, device_id, address, bank_id, core_x, core_y, MIN(page_address),
           MAX(page_address + page_size) - MIN(page_address), MAX(page_size), COUNT(*), buffer_type
    FROM buffer_pages GROUP BY operation_id, device_id, address, bank_id, core_x, core_y, buffer_type
    ORDER BY operation_id, device_id, address, bank_id"""


def innermost_first(text: str) -> str:
    """An outermost-first stack text (ttreport before 0005) in TT-NN's form: one entry per frame (its
    File line and source line, each ending in a newline), innermost first, joined by newlines."""
    entries: list[str] = []
    for line in text.splitlines():
        if line.startswith("  File ") or not entries:
            entries.append("")
        entries[-1] += line + "\n"
    return "\n".join(reversed(entries))


def _stack_traces(bind) -> None:
    op.add_column("stack_trace_texts", sa.Column("source_file_id", sa.Integer))
    op.create_table(
        "source_files",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("path", sa.Text, unique=True, nullable=False),
        sa.Column("contents", sa.Text),
    )
    # source_files stays empty for an older report: upgrading never reads the files its stacks name (a
    # report from elsewhere could name any file of this machine); the visualizer reads the model's file itself.
    rows = bind.exec_driver_sql("SELECT stack_trace_id, stack_trace FROM stack_trace_texts").fetchall()
    for stack_id, text in rows:
        bind.exec_driver_sql("UPDATE stack_trace_texts SET stack_trace = ? WHERE stack_trace_id = ?",
                             (innermost_first(text or ""), stack_id))
    op.create_table(
        "stack_traces_0005",
        sa.Column("operation_id", sa.Integer), sa.Column("stack_trace", sa.Text),
        sa.Column("source_file_id", sa.Integer), _rank(),
    )
    bind.exec_driver_sql(
        "INSERT INTO stack_traces_0005 (operation_id, stack_trace, source_file_id) "
        "SELECT o.operation_id, t.stack_trace, t.source_file_id FROM operations o "
        "JOIN stack_trace_texts t ON t.stack_trace_id = o.stack_trace_id ORDER BY o.operation_id")
    bind.exec_driver_sql("DROP VIEW stack_traces")
    bind.exec_driver_sql("ALTER TABLE stack_traces_0005 RENAME TO stack_traces")


def _tensors(bind) -> None:
    op.create_table(
        "tensors_0005",
        sa.Column("tensor_id", sa.Integer, primary_key=True, autoincrement=False),
        *[sa.Column(c, sa.Text) for c in ("shape", "dtype", "layout", "memory_config")],
        *[sa.Column(c, sa.Integer) for c in ("device_id", "address", "buffer_type", "size")],
        sa.Column("memory_config_source", sa.Text), sa.Column("producer_operation_id", sa.Integer),
        sa.Column("file", sa.Text), sa.Column("padded_shape", sa.Text), sa.Column("storage_type", sa.Text),
        sa.Column("spec_id", sa.Integer), _rank(),
    )
    bind.exec_driver_sql("""
        INSERT INTO tensors_0005 (tensor_id, shape, dtype, layout, memory_config, device_id, address, buffer_type,
                                  size, memory_config_source, producer_operation_id, file, padded_shape,
                                  storage_type, spec_id)
        SELECT r.tensor_id, s.shape, s.dtype, s.layout, s.memory_config, r.device_id, r.address, r.buffer_type, r.size,
               r.memory_config_source, r.producer_operation_id, r.file, s.padded_shape,
               CASE WHEN s.memory_config IS NULL THEN 'StorageType.HOST' ELSE 'StorageType.DEVICE' END, r.spec_id
        FROM tensor_records r LEFT JOIN tensor_specs s ON s.spec_id = r.spec_id ORDER BY r.tensor_id""")
    bind.exec_driver_sql("DROP VIEW tensors")  # and its INSTEAD OF triggers
    bind.exec_driver_sql("DROP TABLE tensor_records")  # and its index
    bind.exec_driver_sql("ALTER TABLE tensors_0005 RENAME TO tensors")


def _arguments(bind) -> None:
    op.create_table(
        "operation_arguments_0005",
        sa.Column("operation_id", sa.Integer), sa.Column("name", sa.Text), sa.Column("value", sa.Text), _rank(),
    )
    # The view yields each op's arguments in the order they were given, ops in id order.
    bind.exec_driver_sql("INSERT INTO operation_arguments_0005 (operation_id, name, value) "
                         "SELECT operation_id, name, value FROM operation_arguments")
    bind.exec_driver_sql("DROP VIEW operation_arguments")
    bind.exec_driver_sql("ALTER TABLE operation_arguments_0005 RENAME TO operation_arguments")


def _buffers(bind) -> None:
    op.create_table(
        "buffers_0005",
        *[sa.Column(c, sa.Integer) for c in ("operation_id", "device_id", "address", "max_size_per_bank",
                                             "buffer_type", "buffer_layout")],
        _rank(),
    )
    # Each allocation finds the ops it outlived by a range of their end_seq (a temporary index), instead of
    # every op testing every allocation before it (quadratic: hours on a 200,000-op report).
    bind.exec_driver_sql("CREATE INDEX tmp_0005_end_seq ON operations (end_seq)")
    bind.exec_driver_sql("""
        INSERT INTO buffers_0005 (operation_id, device_id, address, max_size_per_bank, buffer_type, buffer_layout)
        SELECT o.operation_id, b.device_id, b.address, b.max_size_per_bank, b.buffer_type, b.buffer_layout
        FROM buffer_lifetimes b CROSS JOIN operations o
          ON o.end_seq BETWEEN b.allocated_seq + 1 AND COALESCE(b.freed_seq - 1, 1 << 62)
        ORDER BY o.operation_id, b.buffer_id""")
    bind.exec_driver_sql("DROP INDEX tmp_0005_end_seq")
    bind.exec_driver_sql("DROP VIEW buffers")
    bind.exec_driver_sql("ALTER TABLE buffers_0005 RENAME TO buffers")


def upgrade() -> None:
    bind = op.get_bind()
    bind.exec_driver_sql("DROP VIEW IF EXISTS op_tensors")  # it reads the tensors view; made again below
    for table in ("operations", "input_tensors", "output_tensors", "buffer_pages", "device_tensors", "errors"):
        op.add_column(table, _rank())
    _stack_traces(bind)
    _arguments(bind)  # before tensors: its view reads tensor_records
    _tensors(bind)
    _buffers(bind)
    op.create_table(
        "buffer_chunks",
        *[sa.Column(c, sa.Integer) for c in ("operation_id", "device_id", "address", "bank_id", "core_x", "core_y",
                                             "chunk_address", "chunk_size", "page_size", "num_pages", "buffer_type")],
        _rank(),
    )
    op.create_table(
        "tensor_lifetime",
        sa.Column("tensor_id", sa.Integer, primary_key=True, autoincrement=False),
        *[sa.Column(c, sa.Integer) for c in ("producer_operation_id", "last_use_operation_id",
                                             "deallocate_operation_id")],
        sa.Column("producer_source_file", sa.Text), sa.Column("producer_source_line", sa.Integer),
        sa.Column("last_use_source_file", sa.Text), sa.Column("last_use_source_line", sa.Integer),
    )
    op.create_table("captured_graph", sa.Column("operation_id", sa.Integer), sa.Column("captured_graph", sa.Text),
                    _rank())
    op.create_table("nodes", sa.Column("operation_id", sa.Integer), sa.Column("unique_id", sa.Integer),
                    sa.Column("node_operation_id", sa.Integer), sa.Column("name", sa.Text), _rank())
    op.create_table("edges", *[sa.Column(c, sa.Integer) for c in (
        "operation_id", "source_unique_id", "sink_unique_id", "source_output_index", "sink_input_index", "key")],
        _rank())
    # Temporary indexes for the joins below (the report's own are made after the last revision).
    bind.exec_driver_sql("CREATE INDEX tmp_0005_inputs ON input_tensors (tensor_id, operation_id)")
    bind.exec_driver_sql("CREATE INDEX tmp_0005_stacks ON stack_traces (operation_id)")
    bind.exec_driver_sql(_LIFETIME)
    bind.exec_driver_sql(_CHUNKS)
    bind.exec_driver_sql("DROP INDEX tmp_0005_inputs")
    bind.exec_driver_sql("DROP INDEX tmp_0005_stacks")
    for index in ("ix_operations_name", "ix_operations_name_duration", "ix_operations_parent"):
        bind.exec_driver_sql(f"DROP INDEX IF EXISTS {index}")  # made again, partial, with the others
    bind.exec_driver_sql(f"CREATE VIEW op_tensors AS {_OP_TENSORS}")
    bind.exec_driver_sql(f"CREATE TRIGGER tensor_specs_update {_SPECS_UPDATE}")


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
