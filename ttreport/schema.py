"""The report database schema: TT-NN's tables and columns, plus ttreport's additions.

Tools that read TT-NN reports (ttnn-visualizer) find the tables and columns they know;
ttreport's additions are extra columns and tables they ignore. Four TT-NN tables are views
here, so that a report stays small without changing what a reader sees:

- `stack_traces(operation_id, stack_trace)` joins each op to one row of `stack_trace_texts`,
  since the same trace repeats for every iteration of a model's loop;
- `buffers(operation_id, device_id, address, max_size_per_bank, buffer_type, buffer_layout)`
  lists every buffer live after each op, derived from `buffer_lifetimes`: one row per
  allocation, with the event sequence numbers at which it was allocated and freed, compared
  with the op's `end_seq`;
- `tensors` joins each `tensor_records` row to its `tensor_specs` row (shape, dtype, layout,
  memory config: a model repeats a few of them over thousands of tensors);
- `operation_arguments(operation_id, name, value)` spreads `operations.arguments` (JSON), and
  renders a tensor argument, stored as its id, from the tensor's row.

This module is the one place the schema is written down. `create_all` (new reports) and the
alembic migrations (old reports) must produce the same schema; a test holds them together.
"""

from __future__ import annotations

from sqlalchemy import DDL, Column, Float, Index, Integer, MetaData, PrimaryKeyConstraint, Table, Text, event

metadata = MetaData()


def _id(name: str, **kw) -> Column:
    return Column(name, Integer, **kw)


operations = Table(
    "operations", metadata,
    _id("operation_id", primary_key=True, autoincrement=False),
    Column("name", Text),
    Column("duration", Float),  # seconds, as TT-NN
    # ttreport additions
    Column("start_ns", Integer),  # perf_counter_ns at begin, relative to the capture's start
    Column("end_ns", Integer),
    _id("parent_operation_id"),  # the op that called this one; NULL at the top level
    Column("depth", Integer),  # 0 for ops the model called directly
    Column("status", Text),  # "ok" | "error"
    Column("thread", Text),  # the thread's name
    _id("stack_trace_id"),  # -> stack_trace_texts
    Column("end_seq", Integer),  # event sequence number at the op's end (see buffer_lifetimes)
    Column("l1_bytes", Integer),  # L1 bytes live on the device after the op, all banks
    Column("dram_bytes", Integer),  # DRAM bytes live after the op, all banks
    # The op's arguments as JSON: an array when all are positional, else an object of name -> value;
    # a value is its text, or a tensor's id (a JSON integer). The `operation_arguments` view spreads
    # it (an array's indexes are the names '0', '1', ...) and renders tensors from their rows.
    Column("arguments", Text),
)

# What a tensor's row shares with many others (a model's shapes and configs repeat), stored once.
tensor_specs = Table(
    "tensor_specs", metadata,
    _id("spec_id", primary_key=True, autoincrement=False),
    Column("shape", Text),  # Shape([1, 32, 64]); NULL when the tensor held no values
    Column("dtype", Text),  # DataType.BFLOAT16
    Column("layout", Text),  # Layout.TILE
    Column("memory_config", Text),  # MemoryConfig(...) repr; NULL on the host
    Column("padded_shape", Text),
    Column("placement", Text),  # "L1 INTERLEAVED", as a tensor argument's text shows it; NULL on the host
)

tensor_records = Table(
    "tensor_records", metadata,
    _id("tensor_id", primary_key=True, autoincrement=False),
    _id("spec_id"),  # -> tensor_specs
    _id("device_id"),
    Column("address", Integer),
    Column("buffer_type", Integer),  # BufferType number; NULL on the host
    Column("size", Integer),  # bytes of the device buffer (tile padding included)
    Column("memory_config_source", Text),  # argument | context | inputs | default
    _id("producer_operation_id"),  # NULL for tensors made before the capture or on the host
    Column("file", Text),  # path of the stored tensor, relative to the report folder
)

# What each stored tensor file held when the capture wrote it, so that a reader can tell a damaged or
# swapped file from a real difference: the file's size and CRC-32, and the shape and torch dtype that
# loading it gives. Written by the tensor thread; one row per file (a rewrite replaces the row).
tensor_files = Table(
    "tensor_files", metadata,
    _id("tensor_id"),
    Column("file_bytes", Integer),  # the file's size on disk
    Column("crc32", Integer),  # zlib.crc32 of the file's bytes
    Column("shape", Text),  # "[1, 32, 64]": the loaded tensor's shape, a JSON list
    Column("dtype", Text),  # "torch.bfloat16": the loaded tensor's dtype
    PrimaryKeyConstraint("tensor_id", sqlite_on_conflict="REPLACE"),
)

input_tensors = Table(
    "input_tensors", metadata,
    _id("operation_id"), Column("input_index", Integer), _id("tensor_id"),
)

output_tensors = Table(
    "output_tensors", metadata,
    _id("operation_id"), Column("output_index", Integer), _id("tensor_id"),
)

devices = Table(
    "devices", metadata,
    _id("device_id", primary_key=True, autoincrement=False),
    *[Column(c, Integer) for c in (
        "num_y_cores", "num_x_cores", "num_y_compute_cores", "num_x_compute_cores", "worker_l1_size",
        "l1_num_banks", "l1_bank_size", "address_at_first_l1_bank", "address_at_first_l1_cb_buffer",
        "num_banks_per_storage_core", "num_compute_cores", "num_storage_cores", "total_l1_memory",
        "total_l1_for_tensors", "total_l1_for_interleaved_buffers", "total_l1_for_sharded_buffers", "cb_limit",
    )],
)

buffer_lifetimes = Table(
    "buffer_lifetimes", metadata,
    _id("buffer_id", primary_key=True, autoincrement=False),
    _id("device_id"),
    Column("address", Integer),
    Column("max_size_per_bank", Integer),
    Column("buffer_type", Integer),
    Column("buffer_layout", Integer),
    Column("size", Integer),  # bytes over all banks
    Column("allocated_seq", Integer),  # 0 when it was live before the capture began
    Column("freed_seq", Integer),  # NULL while live at the end of the capture
    _id("allocated_by_operation_id"),  # the innermost op running when it was allocated, if any
)

buffer_pages = Table(
    "buffer_pages", metadata,
    _id("operation_id"), _id("device_id"), Column("address", Integer),
    Column("core_y", Integer), Column("core_x", Integer), Column("bank_id", Integer),
    Column("page_index", Integer), Column("page_address", Integer), Column("page_size", Integer),
    Column("buffer_type", Integer),
)

device_tensors = Table(
    "device_tensors", metadata,
    _id("tensor_id"), _id("device_id"), Column("address", Integer),
)

stack_trace_texts = Table(
    "stack_trace_texts", metadata,
    _id("stack_trace_id", primary_key=True, autoincrement=False),
    Column("stack_trace", Text),
)

errors = Table(
    "errors", metadata,
    _id("operation_id"),
    Column("operation_name", Text),
    Column("error_type", Text),
    Column("error_message", Text),
    Column("stack_trace", Text),
    Column("timestamp", Text),
)


def _comparison_records(name: str) -> Table:
    return Table(
        name, metadata,
        _id("tensor_id"), _id("golden_tensor_id"),
        Column("matches", Integer), Column("desired_pcc", Float), Column("actual_pcc", Float),
    )


local_tensor_comparison_records = _comparison_records("local_tensor_comparison_records")
global_tensor_comparison_records = _comparison_records("global_tensor_comparison_records")

tensor_comparisons = Table(
    "tensor_comparisons", metadata,
    _id("operation_id"),
    Column("mode", Text),  # local | global
    _id("tensor_id"), _id("golden_tensor_id"),
    Column("status", Text),  # pass | fail | no_golden | golden_error
    Column("reason", Text),
    Column("pcc", Float), Column("desired_pcc", Float),
    Column("max_abs_error", Float), Column("mean_abs_error", Float), Column("max_rel_error", Float),
    Column("mismatched", Integer), Column("mismatched_fraction", Float), Column("numel", Integer),
    Column("max_ulp", Float), Column("rtol", Float), Column("atol", Float),
    Column("worst_index", Text), Column("worst_actual", Float), Column("worst_golden", Float),
)

report_metadata = Table(
    "report_metadata", metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text),
)

INDEXES = [
    Index("ix_operations_name", operations.c.name),
    # "The 10 slowest matmuls": one name's ops by duration without sorting all of them.
    Index("ix_operations_name_duration", operations.c.name, operations.c.duration),
    Index("ix_operations_parent", operations.c.parent_operation_id),
    Index("ix_operations_duration", operations.c.duration),
    # DESC, so that "peak L1, first op to reach it" (l1_bytes DESC, operation_id) reads one entry.
    Index("ix_operations_l1_bytes", operations.c.l1_bytes.desc()),
    Index("ix_tensors_producer", tensor_records.c.producer_operation_id),
    Index("ix_input_tensors_op", input_tensors.c.operation_id),
    Index("ix_input_tensors_tensor", input_tensors.c.tensor_id),
    Index("ix_output_tensors_op", output_tensors.c.operation_id),
    Index("ix_output_tensors_tensor", output_tensors.c.tensor_id),
    Index("ix_buffer_lifetimes_seq", buffer_lifetimes.c.allocated_seq, buffer_lifetimes.c.freed_seq),
    Index("ix_buffer_pages_op", buffer_pages.c.operation_id),
    Index("ix_device_tensors_tensor", device_tensors.c.tensor_id),
    Index("ix_errors_op", errors.c.operation_id),
    Index("ix_local_cmp_tensor", local_tensor_comparison_records.c.tensor_id),
    Index("ix_global_cmp_tensor", global_tensor_comparison_records.c.tensor_id),
    Index("ix_tensor_comparisons_op", tensor_comparisons.c.operation_id),
    Index("ix_tensor_comparisons_tensor", tensor_comparisons.c.tensor_id),
]

# A tensor argument's text, as ttreport has always written it, rendered from the tensor's row.
_TENSOR_TEXT = """'ttnn.Tensor(id=' || r.tensor_id || ', shape=' || COALESCE(s.shape, 'None') || ', dtype=' || s.dtype
            || ', layout=' || s.layout || ', ' || COALESCE(s.placement, s.memory_config, 'host') || ')'"""

# Views: the TT-NN tables derived from compact ones, and the documented question views.
VIEWS: dict[str, str] = {
    # One scalar subquery per spec column, not a join: SQLite flattens this view into a reader's
    # (LEFT) JOIN and looks each row up by key, where a join inside the view would be materialized.
    "tensors": """
        SELECT r.tensor_id AS tensor_id,
               (SELECT shape FROM tensor_specs WHERE spec_id = r.spec_id) AS shape,
               (SELECT dtype FROM tensor_specs WHERE spec_id = r.spec_id) AS dtype,
               (SELECT layout FROM tensor_specs WHERE spec_id = r.spec_id) AS layout,
               (SELECT memory_config FROM tensor_specs WHERE spec_id = r.spec_id) AS memory_config,
               r.device_id AS device_id, r.address AS address, r.buffer_type AS buffer_type, r.size AS size,
               r.memory_config_source AS memory_config_source, r.producer_operation_id AS producer_operation_id,
               r.file AS file,
               (SELECT padded_shape FROM tensor_specs WHERE spec_id = r.spec_id) AS padded_shape
        FROM tensor_records r""",
    # Rows in the order the op's arguments were given (SQLite's sort keeps json_each's order on ties).
    "operation_arguments": f"""
        SELECT o.operation_id AS operation_id, CAST(j.key AS TEXT) AS name,
               CASE j.type WHEN 'integer' THEN COALESCE(
                   (SELECT {_TENSOR_TEXT}
                    FROM tensor_records r LEFT JOIN tensor_specs s ON s.spec_id = r.spec_id
                    WHERE r.tensor_id = j.value),
                   'ttnn.Tensor(id=' || j.value || ')')
               ELSE j.value END AS value
        FROM operations o, json_each(o.arguments) j""",
    "stack_traces": """
        SELECT o.operation_id AS operation_id, s.stack_trace AS stack_trace
        FROM operations o JOIN stack_trace_texts s ON s.stack_trace_id = o.stack_trace_id""",
    "buffers": """
        SELECT o.operation_id AS operation_id, b.device_id AS device_id, b.address AS address,
               b.max_size_per_bank AS max_size_per_bank, b.buffer_type AS buffer_type,
               b.buffer_layout AS buffer_layout
        FROM operations o JOIN buffer_lifetimes b
          ON b.allocated_seq < o.end_seq AND (b.freed_seq IS NULL OR b.freed_seq > o.end_seq)""",
    # Each op with its tensors, one row per tensor: where each input and output lived.
    "op_tensors": """
        SELECT o.operation_id, o.name, 'input' AS direction, i.input_index AS tensor_index, t.*
        FROM operations o JOIN input_tensors i USING (operation_id) JOIN tensors t USING (tensor_id)
        UNION ALL
        SELECT o.operation_id, o.name, 'output', x.output_index, t.*
        FROM operations o JOIN output_tensors x USING (operation_id) JOIN tensors t USING (tensor_id)""",
    # L1 and DRAM bytes live on the device after each op.
    "memory_after_op": """
        SELECT operation_id, name, l1_bytes, dram_bytes FROM operations""",
}

# Writes to the two TT-NN tables that are views here go to the tables behind them, so that code
# written for TT-NN's tables (and ttreport's own tests) can still insert rows and set `file`.
# Specs made here are numbered downwards from -1: a capture's writer numbers its own upwards.
TRIGGERS: dict[str, str] = {
    "operation_arguments_insert": """
        INSTEAD OF INSERT ON operation_arguments BEGIN
            SELECT RAISE(ABORT, 'insert the operations row before its arguments')
            WHERE NOT EXISTS (SELECT 1 FROM operations WHERE operation_id = NEW.operation_id);
            UPDATE operations SET arguments = json_insert(COALESCE(arguments, '{}'), '$.' || json_quote(NEW.name),
                                                          CAST(NEW.value AS TEXT))
            WHERE operation_id = NEW.operation_id;
        END""",
    "tensors_insert": """
        INSTEAD OF INSERT ON tensors BEGIN
            INSERT INTO tensor_specs (spec_id, shape, dtype, layout, memory_config, padded_shape)
            SELECT (SELECT MIN(COALESCE(MIN(spec_id), 0), 0) - 1 FROM tensor_specs), NEW.shape, NEW.dtype, NEW.layout,
                   NEW.memory_config, NEW.padded_shape
            WHERE NOT EXISTS (SELECT 1 FROM tensor_specs WHERE shape IS NEW.shape AND dtype IS NEW.dtype
                               AND layout IS NEW.layout AND memory_config IS NEW.memory_config
                               AND padded_shape IS NEW.padded_shape AND placement IS NULL);
            INSERT INTO tensor_records (tensor_id, spec_id, device_id, address, buffer_type, size,
                                        memory_config_source, producer_operation_id, file)
            VALUES (NEW.tensor_id, (SELECT spec_id FROM tensor_specs WHERE shape IS NEW.shape AND dtype IS NEW.dtype
                                    AND layout IS NEW.layout AND memory_config IS NEW.memory_config
                                    AND padded_shape IS NEW.padded_shape AND placement IS NULL),
                    NEW.device_id, NEW.address, NEW.buffer_type, NEW.size, NEW.memory_config_source,
                    NEW.producer_operation_id, NEW.file);
        END""",
    "tensors_update_file": """
        INSTEAD OF UPDATE OF file ON tensors BEGIN
            UPDATE tensor_records SET file = NEW.file WHERE tensor_id = OLD.tensor_id;
        END""",
}

SCHEMA_VERSION_KEY = "schema_version"

# The views that stand in for TT-NN tables, described as tables (outside `metadata`, which
# create_all makes), so that `schema.tensors.insert()` and column lists still work.
view_tables = MetaData()
operation_arguments = Table(
    "operation_arguments", view_tables,
    _id("operation_id"),
    Column("name", Text),  # '0', '1', ... positional; else the keyword
    Column("value", Text),
)
tensors = Table(
    "tensors", view_tables,
    _id("tensor_id", primary_key=True, autoincrement=False),
    *[Column(c, Text) for c in ("shape", "dtype", "layout", "memory_config")],
    *[Column(c, Integer) for c in ("device_id", "address", "buffer_type", "size")],
    Column("memory_config_source", Text), _id("producer_operation_id"), Column("file", Text),
    Column("padded_shape", Text),
)

for _name, _sql in VIEWS.items():
    event.listen(metadata, "after_create", DDL(f"CREATE VIEW IF NOT EXISTS {_name} AS {_sql}"))
for _name, _sql in TRIGGERS.items():
    event.listen(metadata, "after_create", DDL(f"CREATE TRIGGER IF NOT EXISTS {_name} {_sql}"))
