"""The report database schema: TT-NN's tables and columns, plus ttreport's additions.

Tools that read TT-NN reports (ttnn-visualizer) find the tables and columns they know, as real
tables (the visualizer looks tables up in sqlite_master by type), with rows in id order;
ttreport's additions are extra columns and tables they ignore. Behind three of them sits
compact storage that the writer keeps and fills them from, with SQL, on its own thread:

- `stack_trace_texts` holds each distinct stack once (a model's loop repeats a few); the writer
  copies an op's text into `stack_traces`, innermost frame first as TT-NN stores it;
- `buffer_lifetimes` holds one row per allocation with the event sequence numbers at which it
  was allocated and freed; the writer lists every buffer live after each op in `buffers`;
- `tensor_specs` holds each distinct (shape, dtype, layout, memory config) once: the writer
  numbers them, and `tensors` rows carry the texts (and the spec's id).

`operations.arguments` keeps each op's arguments as JSON (a tensor as its id), and
`operation_arguments` their texts, one row per argument. `source_files`, `tensor_lifetime`,
`buffer_chunks` and the `rank` columns are TT-NN 0.81's (ttnn-visualizer 0.108 reads them);
`captured_graph`, `nodes` and `edges` are TT-NN's tables for an op's device work.

    >>> from ttreport import schema
    >>> sorted(t for t in ("stack_traces", "tensors", "buffers") if t in schema.metadata.tables)
    ['buffers', 'stack_traces', 'tensors']

This module is the one place the schema is written down. `create_all` (new reports) and the
alembic migrations (old reports) must produce the same schema; a test holds them together.
"""

from __future__ import annotations

from sqlalchemy import DDL, Column, Float, Index, Integer, MetaData, PrimaryKeyConstraint, Table, Text, event, text

metadata = MetaData()


def _id(name: str, **kw) -> Column:
    return Column(name, Integer, **kw)


def _rank() -> Column:
    """TT-NN 0.81's host rank of a multi-host run; ttreport captures one process: always 0."""
    return Column("rank", Integer, server_default="0")


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
    # a value is its text, or a tensor's id (a JSON integer). `operation_arguments` holds the same
    # spread out (an array's indexes are the names '0', '1', ...), with tensors rendered from their rows.
    Column("arguments", Text),
    _rank(),
    # How many times the run's step() had been called when the op began (0 before the first); with
    # report_metadata.schedule, which steps were active (ttreport.steps). NULL: a report made before steps.
    Column("step", Integer),
)

operation_arguments = Table(
    "operation_arguments", metadata,
    _id("operation_id"),
    Column("name", Text),  # '0', '1', ... positional; else the keyword
    Column("value", Text),
    _rank(),
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

tensors = Table(
    "tensors", metadata,
    _id("tensor_id", primary_key=True, autoincrement=False),
    Column("shape", Text),  # Shape([1, 32, 64]); NULL when the tensor held no values
    Column("dtype", Text),  # DataType.BFLOAT16
    Column("layout", Text),  # Layout.TILE
    Column("memory_config", Text),  # MemoryConfig(memory_layout=TensorMemoryLayout::...) as TT-NN prints it
    _id("device_id"),
    Column("address", Integer),
    Column("buffer_type", Integer),  # BufferType number; NULL on the host
    Column("size", Integer),  # bytes of the device buffer (tile padding included)
    # ttreport additions
    Column("memory_config_source", Text),  # argument | context | inputs | default
    _id("producer_operation_id"),  # NULL for tensors made before the capture or on the host
    Column("file", Text),  # path of the stored tensor, relative to the report folder
    Column("padded_shape", Text),
    Column("storage_type", Text),  # StorageType.DEVICE | StorageType.HOST
    _id("spec_id"),  # -> tensor_specs, the texts above
    _rank(),
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

# A mesh tensor is stored as one file per device shard, tensors/<tensor_id>/<device_id>.pt (its `tensors`
# row's file is the folder, "tensors/<tensor_id>/"): the same facts as tensor_files, per shard.
device_tensor_files = Table(
    "device_tensor_files", metadata,
    _id("tensor_id"), _id("device_id"),
    Column("file_bytes", Integer), Column("crc32", Integer), Column("shape", Text), Column("dtype", Text),
    PrimaryKeyConstraint("tensor_id", "device_id", sqlite_on_conflict="REPLACE"),
)

# The values an op wrote into a tensor that already had a stored file (output_tensor=, an in-place op):
# each such write is its own file, tensors/<tensor_id>@<operation_id>.pt, with the facts tensor_files
# holds. A tensor's values after op N are its newest write at or before N, else its tensor_files file.
tensor_writes = Table(
    "tensor_writes", metadata,
    _id("operation_id"), _id("tensor_id"),
    Column("file", Text),  # relative to the report folder
    Column("file_bytes", Integer), Column("crc32", Integer), Column("shape", Text), Column("dtype", Text),
    PrimaryKeyConstraint("operation_id", "tensor_id", sqlite_on_conflict="REPLACE"),
)

input_tensors = Table(
    "input_tensors", metadata,
    _id("operation_id"), Column("input_index", Integer), _id("tensor_id"), _rank(),
)

output_tensors = Table(
    "output_tensors", metadata,
    _id("operation_id"), Column("output_index", Integer), _id("tensor_id"), _rank(),
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

# Every buffer live on a device after each op, as TT-NN lists them (filled from buffer_lifetimes).
buffers = Table(
    "buffers", metadata,
    _id("operation_id"), _id("device_id"), Column("address", Integer), Column("max_size_per_bank", Integer),
    Column("buffer_type", Integer), Column("buffer_layout", Integer), _rank(),
)

buffer_pages = Table(
    "buffer_pages", metadata,
    _id("operation_id"), _id("device_id"), Column("address", Integer),
    Column("core_y", Integer), Column("core_x", Integer), Column("bank_id", Integer),
    Column("page_index", Integer), Column("page_address", Integer), Column("page_size", Integer),
    Column("buffer_type", Integer), _rank(),
)

# buffer_pages collapsed per (op, buffer, bank): the run of pages a buffer holds on one core, which
# the visualizer's L1 views draw (it aggregates buffer_pages the same way when this table is absent).
buffer_chunks = Table(
    "buffer_chunks", metadata,
    _id("operation_id"), _id("device_id"), Column("address", Integer), Column("bank_id", Integer),
    Column("core_x", Integer), Column("core_y", Integer), Column("chunk_address", Integer),
    Column("chunk_size", Integer), Column("page_size", Integer), Column("num_pages", Integer),
    Column("buffer_type", Integer), _rank(),
)

device_tensors = Table(
    "device_tensors", metadata,
    _id("tensor_id"), _id("device_id"), Column("address", Integer), _rank(),
)

# The source file of each stack's innermost frame, once per path (TT-NN's Source button reads it).
source_files = Table(
    "source_files", metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("path", Text, unique=True, nullable=False),
    Column("contents", Text),
)

stack_trace_texts = Table(
    "stack_trace_texts", metadata,
    _id("stack_trace_id", primary_key=True, autoincrement=False),
    Column("stack_trace", Text),
    _id("source_file_id"),  # -> source_files: the innermost frame's file
)

stack_traces = Table(
    "stack_traces", metadata,
    _id("operation_id"),
    Column("stack_trace", Text),  # TT-NN's text: innermost frame first, '  File "...", line N, in f' + source
    _id("source_file_id"),
    _rank(),
)

# When each tensor was made, last read and deallocated, and the user's line for each (filled at close).
tensor_lifetime = Table(
    "tensor_lifetime", metadata,
    _id("tensor_id", primary_key=True, autoincrement=False),
    _id("producer_operation_id"), _id("last_use_operation_id"), _id("deallocate_operation_id"),
    Column("producer_source_file", Text), Column("producer_source_line", Integer),
    Column("last_use_source_file", Text), Column("last_use_source_line", Integer),
)

# Each distinct captured graph once, keyed by its text's hash (device_graph.graph_id: the same graph has the same
# id in every report), and the graph of each op that launched device programs. A model repeats a few graphs: an
# add's 1,398-byte text stored per op was half of a report's bytes (bench/README.md, issue 33).
distinct_graphs = Table(
    "distinct_graphs", metadata,
    _id("graph_id", primary_key=True, autoincrement=False), Column("captured_graph", Text),
)
operation_graphs = Table(
    "operation_graphs", metadata,
    _id("operation_id", primary_key=True, autoincrement=False), _id("graph_id"),
)

# TT-NN's record of an op's device work (its captured graph, and that graph's nodes and edges), filled only with
# Config(device_graphs=True), as TT-NN's enable_graph_report: ttnn-visualizer reads captured_graph by op.
# captured_graph holds one row per op that launched device programs (device_sim.device_work; capturing/device_graph.py
# builds the JSON); nodes and edges hold that graph's nodes and connections (device_graph.graph_rows).
captured_graph = Table(
    "captured_graph", metadata,
    _id("operation_id"), Column("captured_graph", Text), _rank(),
)
nodes = Table(
    "nodes", metadata,
    _id("operation_id"), _id("unique_id"), _id("node_operation_id"), Column("name", Text), _rank(),
)
edges = Table(
    "edges", metadata,
    _id("operation_id"), _id("source_unique_id"), _id("sink_unique_id"), Column("source_output_index", Integer),
    Column("sink_input_index", Integer), Column("key", Integer), _rank(),
)

errors = Table(
    "errors", metadata,
    _id("operation_id"),
    Column("operation_name", Text),
    Column("error_type", Text),
    Column("error_message", Text),
    Column("stack_trace", Text),
    Column("timestamp", Text),
    _rank(),
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
    # An op on a mesh is compared per device shard: one row per device; NULL for a one-device tensor.
    _id("device_id"),
)

# The performance model's estimate of each op's device kernel time (device_sim/perf_model.py,
# docs/perf_model.md): TT-NN's "PM COMPUTE / PM BANDWIDTH / PM IDEAL [ns]". No row: no device work.
device_perf = Table(
    "device_perf", metadata,
    Column("operation_id", Integer, primary_key=True),
    Column("compute_ns", Integer),
    Column("bandwidth_ns", Integer),
    Column("ideal_ns", Integer),  # the larger of the two: the estimate
    Column("bound", Text),  # "compute" | "bandwidth": which one dominates
    Column("math_fidelity", Text),  # the fidelity the compute figure assumes ("HiFi2"); NULL: no matrix work
)

# Measured device times attached from a real profiler run (`ttreport attach`, ttreport/read/measured.py): one row per
# device operation of TT-NN's ops_perf_results.csv (signposts left out), in the file's order, and the report op it was
# matched to. Attaching again replaces every row. No rows: nothing attached (a report made before this table too).
measured_perf = Table(
    "measured_perf", metadata,
    Column("position", Integer, primary_key=True),  # the device operation's place in the file, from 1
    _id("operation_id"),  # the report op it matched (in order, by OP CODE); NULL: no op of the report matched it
    Column("op_code", Text),  # OP CODE ("MatmulDeviceOperation")
    _id("device_id"),  # DEVICE ID
    Column("global_call_count", Integer),
    Column("kernel_ns", Integer),  # DEVICE KERNEL DURATION [ns]: the measured figure set beside device_perf.ideal_ns
    Column("fw_ns", Integer),  # DEVICE FW DURATION [ns]
    Column("core_count", Integer),
    Column("math_fidelity", Text),
    # Each tensor as "1x1x19x1280|TILE|BFLOAT16|DRAM_INTERLEAVED" (logical shape), ';' between tensors: what
    # `ttreport calibrate` rebuilds the op's operands from (bench/data/wormhole_ops_perf/cases.csv's form)
    Column("inputs", Text), Column("outputs", Text),
    Column("attributes", Text),  # ATTRIBUTES, as the file has it (an eltwise op's type: BinaryOpType::ADD)
)

report_metadata = Table(
    "report_metadata", metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text),
)

def _set(column) -> dict:
    """A partial index's condition: rows where `column` is set. A query that compares the column
    (`name = 'ttnn.matmul'`, a join on it) can use the index; a plain SELECT cannot, so it reads the table
    in id order instead of in the index's order (the visualizer's unsorted reads rely on that order)."""
    return {"sqlite_where": text(f"{column.name} IS NOT NULL")}


# A table's default row order is its id order (SELECT without ORDER BY, as the visualizer reads): every
# index on a key that does not rise with the rowid is partial, since SQLite scans a covering index rather
# than the table for `SELECT operation_id FROM operations` (but for the two sort indexes on operations,
# db.SORT_INDEXES: whole, with a row-size hint in sqlite_stat1 instead). Those on operation_id rise with it
# (rows are written in op order) and stay whole, so that ORDER BY operation_id reads them without a sort.
INDEXES = [
    # A name's ops in id order (a page of them, `ttreport ops --name`) without sorting all of them (migration 0016).
    Index("ix_operations_name", operations.c.name, **_set(operations.c.name)),
    # "The 10 slowest matmuls": one name's ops by duration without sorting all of them.
    Index("ix_operations_name_duration", operations.c.name, operations.c.duration, **_set(operations.c.name)),
    Index("ix_operations_parent", operations.c.parent_operation_id, **_set(operations.c.parent_operation_id)),
    # Whole, not partial, so that a plain `ORDER BY duration DESC LIMIT 10` reads it (SQLite uses a partial
    # index only for a query whose WHERE implies the index's); db.hint_sort_indexes keeps plain SELECTs off it.
    Index("ix_operations_duration", operations.c.duration),
    # DESC, so that "peak L1, first op to reach it" (l1_bytes DESC, operation_id) reads one entry.
    Index("ix_operations_l1_bytes", operations.c.l1_bytes.desc()),
    Index("ix_operation_arguments_op", operation_arguments.c.operation_id),
    Index("ix_tensors_producer", tensors.c.producer_operation_id, **_set(tensors.c.producer_operation_id)),
    Index("ix_input_tensors_op", input_tensors.c.operation_id),
    Index("ix_input_tensors_tensor", input_tensors.c.tensor_id, **_set(input_tensors.c.tensor_id)),
    Index("ix_output_tensors_op", output_tensors.c.operation_id),
    Index("ix_output_tensors_tensor", output_tensors.c.tensor_id, **_set(output_tensors.c.tensor_id)),
    Index("ix_buffer_lifetimes_seq", buffer_lifetimes.c.allocated_seq, buffer_lifetimes.c.freed_seq,
          **_set(buffer_lifetimes.c.allocated_seq)),
    Index("ix_buffers_op", buffers.c.operation_id),
    Index("ix_buffer_pages_op", buffer_pages.c.operation_id),
    Index("ix_buffer_chunks_op", buffer_chunks.c.operation_id),
    Index("ix_device_tensors_tensor", device_tensors.c.tensor_id, **_set(device_tensors.c.tensor_id)),
    Index("ix_tensor_writes_tensor", tensor_writes.c.tensor_id, tensor_writes.c.operation_id,
          **_set(tensor_writes.c.tensor_id)),
    Index("ix_stack_traces_op", stack_traces.c.operation_id),
    # TT-NN's name for it (graph_report.py's CREATE_INDEX_STACK_TRACES_SOURCE_FILE_SQL)
    Index("idx_stack_traces_source_file_id", stack_traces.c.source_file_id, **_set(stack_traces.c.source_file_id)),
    Index("ix_errors_op", errors.c.operation_id),
    Index("ix_nodes_op", nodes.c.operation_id),
    Index("ix_edges_op", edges.c.operation_id),
    Index("ix_local_cmp_tensor", local_tensor_comparison_records.c.tensor_id,
          **_set(local_tensor_comparison_records.c.tensor_id)),
    Index("ix_global_cmp_tensor", global_tensor_comparison_records.c.tensor_id,
          **_set(global_tensor_comparison_records.c.tensor_id)),
    Index("ix_tensor_comparisons_op", tensor_comparisons.c.operation_id),
    Index("ix_tensor_comparisons_tensor", tensor_comparisons.c.tensor_id, **_set(tensor_comparisons.c.tensor_id)),
]

# ttreport's question views.
VIEWS: dict[str, str] = {
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

# A spec's texts, changed in place (a repair, a test that damages a report), change its tensors' rows.
TRIGGERS: dict[str, str] = {
    "tensor_specs_update": """
        AFTER UPDATE ON tensor_specs BEGIN
            UPDATE tensors SET shape = NEW.shape, dtype = NEW.dtype, layout = NEW.layout,
                               memory_config = NEW.memory_config, padded_shape = NEW.padded_shape
            WHERE spec_id = OLD.spec_id;
        END""",
}


for _name, _sql in VIEWS.items():
    event.listen(metadata, "after_create", DDL(f"CREATE VIEW IF NOT EXISTS {_name} AS {_sql}"))
for _name, _sql in TRIGGERS.items():
    event.listen(metadata, "after_create", DDL(f"CREATE TRIGGER IF NOT EXISTS {_name} {_sql}"))
