"""The writer: records -> rows -> one SQLite transaction per batch, in the writer process.

The writer process (writer_process.py, and a rebuild of a killed capture: ttreport.recovery) reads the op log
in batches (capture.log_writer.pump) and hands each to Writer._write. All formatting happens here, off the
model's thread: argument values, tensor specs, stack traces (deduplicated: one text per distinct stack).

A failing disk never stops the model: the batch is rolled back, a warning is given once,
the loss is counted, and later batches are still tried; close() notes it in report_metadata.
"""

from __future__ import annotations

import contextlib
import itertools
import linecache
import operator
import os
import re
import sqlite3
import sys
import threading
import time
from json.encoder import encode_basestring_ascii as _json_str
from pathlib import Path

import torch

from device_sim.device_work import Program
from device_sim.tensor import padded
from device_sim.tile import Tile
from device_sim.types import BufferType, DataType, Layout, TensorMemoryLayout
from ttreport import db, schema_sql
from ttreport.capturing import device_graph
from ttreport.capturing.records import (
    ALLOC,
    DEVICE,
    FILE_LOST,
    FLUSH,
    FREE,
    META,
    OP,
    PROGRAM,
    ROW,
    STOP,
    TENSOR,
    Alloc,
    AllocField,
    Free,
    FreeField,
    Op,
    Spec,
    TensorArg,
)
from ttreport.errors import LossWarner
from ttreport.folder import LIFETIMES_FILE

try:  # the staging rows as a virtual table (_rows.c), built by `pip install` where a compiler and SQLite's header are
    from ttreport.capturing import _rows
except ImportError:
    _rows = None
# The rows through _rows (one INSERT ... SELECT a table a batch) rather than executemany (one INSERT a row), and the
# batch's common records made into rows in C (_rows.Items) rather than by Writer._item: the Python route stays the
# specification (TTREPORT_PURE=1 runs it; tests/test_writer_rows.py and test_writer_items.py hold the reports equal).
ROWS = _rows is not None and os.environ.get("TTREPORT_PURE", "") in ("", "0")

CLOSE_WAIT_MS = 200  # how long closing waits for a reader before leaving the report in WAL mode
MAX_VALUE_CHARS = 2000  # an argument's text beyond this is cut: reprs of big host arrays add nothing
MAX_CACHED = 200_000  # entries kept in each per-value cache (tensor specs, argument texts)
# Tensor id -> spec texts, only for tensors inside list arguments (concat's inputs): a miss reads the
# row back from the db. Bounded like the recorder's seen ids: it grew by one entry per tensor.
MAX_SPEC_OF = 1 << 16
MAX_GRAPHS = 4096  # distinct captured graphs kept in the temp tables (a model repeats a few; all are dropped past it)

# One staging row per op holds its arguments as JSON, and, when there is just one of each, the new tensor's row, the
# buffer allocated before the op ended and the buffer freed before the next op. SQLite spreads it into operations,
# tensors and buffer_lifetimes itself: binding one wide row costs far less Python (and holds the GIL, which the model's
# thread needs, far less) than binding five narrow ones. input_tensors' and output_tensors' rows are fed set-wise from
# an (operation_id, tensor ids) pair an op instead (_FED).
# Its columns come from the schema and the records: an `operations` column that is a field of records.Op
# of the same name is copied from the record as it is (_OP_FIELDS); the writer works out the others
# (_OP_MADE; duration in SQL; rank keeps its default).
_OP_DIRECT = [c for c in schema_sql.COLUMNS["operations"] if c in Op._fields]
_OP_MADE = ("status", "stack_trace_id", "arguments")
assert set(schema_sql.COLUMNS["operations"]) == {*_OP_DIRECT, *_OP_MADE, "duration", "rank"}, \
    "an operations column that is neither a field of records.Op nor made by writer.py"
_OP_POSITIONS = tuple(Op._fields.index(c) for c in _OP_DIRECT)
_OP_FIELDS = operator.itemgetter(*_OP_POSITIONS)  # the record's, in that order
_OP_COLUMNS = ", ".join([*_OP_DIRECT, *_OP_MADE])
# A tensors row is its own columns and its spec's texts (_SPEC_TEXT_COLUMNS, read from tensor_specs in SQL, inserted
# before the tensors of its batch; NULL memory config: on the host); rank keeps its default. Its own columns come from
# the schema: one that is a field of records.Spec of the same name (whose shape, dtype and layout are numbers, not the
# texts) is copied from the record (_TENSOR_DIRECT), the writer makes the others (_TENSOR_MADE). A tensor's row
# (Writer._tensor_row), its staging columns (t_*) and tensor_records' parameters are in _TENSOR_OWN's order.
_SPEC_TEXT_COLUMNS = ("shape", "dtype", "layout", "memory_config", "padded_shape", "storage_type")
_SPEC_TEXTS = ("s.shape, s.dtype, s.layout, s.memory_config, s.padded_shape, "
               "CASE WHEN s.memory_config IS NULL THEN 'StorageType.HOST' ELSE 'StorageType.DEVICE' END")
_TENSOR_DIRECT = [c for c in schema_sql.COLUMNS["tensors"] if c in Spec._fields and c not in _SPEC_TEXT_COLUMNS]
_TENSOR_MADE = ("spec_id", "file")
assert set(schema_sql.COLUMNS["tensors"]) == {*_TENSOR_DIRECT, *_TENSOR_MADE, *_SPEC_TEXT_COLUMNS, "rank"}, \
    "a tensors column that is neither a field of records.Spec, nor a spec's text, nor made by writer.py"
_TENSOR_OWN = (*_TENSOR_DIRECT, *_TENSOR_MADE)
_SPEC_POSITIONS = tuple(Spec._fields.index(c) for c in _TENSOR_DIRECT)
_SPEC_FIELDS = operator.itemgetter(*_SPEC_POSITIONS)  # the record's, in that order
_TENSOR_COLUMNS = ", ".join([*_TENSOR_OWN, *_SPEC_TEXT_COLUMNS])
_SPEC_ID_AT, _TENSOR_ID_AT = _TENSOR_OWN.index("spec_id"), _TENSOR_OWN.index("tensor_id")
_BUFFER_FIELDS = Alloc._fields[1:]  # buffer_lifetimes' columns of the same names
_BUFFER_COLUMNS = ", ".join(_BUFFER_FIELDS)
# An op's staging row: its op columns, its tensor ids, its one new tensor (Writer._tensor_row), the latest alloc
# and free before its end (the records, tag included), its captured graph.
_STAGING_COLUMNS = [*_OP_DIRECT, *_OP_MADE,
                    *(f"t_{c}" for c in _TENSOR_OWN),
                    *(f"b_{f}" for f in Alloc._fields), *(f"f_{f}" for f in Free._fields), "g_id"]
# The batch's staging rows are read where they are, in the virtual table fed with them (temp.op_rows, _rows.Feeder):
# inserted into a temp table with two indexes, joined to itself there and deleted, they cost ~1.2 µs an op of SQL more
# (20,000 adds; bench/README.md, issue 33, staging). They go into temp.op_staging without the Feeder (executemany), and
# only their operation_id, end_seq and g_id where a join needs SQLite to see their order or an index (_NARROW): that of
# `buffers` (_BUFFERS_JOIN, by the end_seq index) and the per-op graph tables' (_PER_OP_GRAPHS: each op's rows, in op
# order, then in its graph's; from the virtual table SQLite sorted them all, 3.7 -> 7.2 µs an op for nodes' rows).
# Every other statement below reads {src}, either.
_STAGING = f"CREATE TEMP TABLE op_staging ({', '.join(_STAGING_COLUMNS)})"
_OP_ROWS = f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.op_rows USING ttreport_rows({', '.join(_STAGING_COLUMNS)})"
_FED_STAGING, _STAGED = "temp.op_rows", "temp.op_staging"
_NARROW = f"INSERT INTO {_STAGED} (operation_id, end_seq, g_id) SELECT operation_id, end_seq, g_id FROM {_FED_STAGING}"
_STAGING_WIDTH = len(_STAGING_COLUMNS)
_STAGING_TENSOR = slice(_STAGING_COLUMNS.index(f"t_{_TENSOR_OWN[0]}"),
                        _STAGING_COLUMNS.index(f"t_{_TENSOR_OWN[-1]}") + 1)  # its new tensor's row (_TENSOR_OWN)
# Each distinct captured graph (a model repeats a few) is kept once in temp tables with its nodes and edges
# rows less the op id; an op's staging row names it (g_id) and SQL copies the rows under the op's id. Binding
# ~20 narrow rows an op from Python took a third of the writer process's time.
_GRAPH_TABLES = [
    "CREATE TEMP TABLE graph_texts (graph_id INTEGER PRIMARY KEY, captured_graph TEXT)",
    "CREATE TEMP TABLE graph_nodes (graph_id, unique_id, fn, name, PRIMARY KEY (graph_id, unique_id)) WITHOUT ROWID",
    "CREATE TEMP TABLE graph_edges (graph_id, source, sink, i, PRIMARY KEY (graph_id, source, i)) WITHOUT ROWID",
]
_SPREAD = [
    f"INSERT INTO main.operations ({_OP_COLUMNS}, duration) "
    f"SELECT {_OP_COLUMNS}, (end_ns - start_ns) * 1e-9 FROM {{src}}",
    f"INSERT OR IGNORE INTO main.tensors ({_TENSOR_COLUMNS}) SELECT {', '.join('t_' + c for c in _TENSOR_OWN)}, "
    f"{_SPEC_TEXTS} FROM {{src}} LEFT JOIN main.tensor_specs s ON s.spec_id = t_spec_id "
    f"WHERE t_tensor_id IS NOT NULL",
    # A buffer freed in the same batch (the common case: an op's output dropped before the next op) is inserted freed,
    # found by the rows' f_buffer_id (op_rows' lookup of a column's value, op_staging's index); _FREES then rewrites
    # only the rows of earlier batches (an UPDATE of each, with its index entry, cost 1.1 µs an op more: 20,000 adds).
    f"INSERT OR IGNORE INTO main.buffer_lifetimes ({_BUFFER_COLUMNS}, freed_seq) SELECT "
    f"{', '.join('s.b_' + c for c in _BUFFER_FIELDS)}, f.f_freed_seq FROM {{src}} s "
    f"LEFT JOIN {{src}} f ON f.f_buffer_id = s.b_buffer_id WHERE s.b_buffer_id IS NOT NULL ORDER BY s.rowid",
]
# Final tables' rows of (key, index, value) made by Writer._op as (key, values) pairs, inserted after the spreads
# (Writer._insert_spread).
_FED = {"input_tensors": "INSERT INTO main.input_tensors (operation_id, input_index, tensor_id)",
        "output_tensors": "INSERT INTO main.output_tensors (operation_id, output_index, tensor_id)"}
# TT-NN's per-op graph tables, only with device_graphs=True (the temp tables are empty otherwise: 0.4 µs an op of
# statements that found nothing).
_PER_OP_GRAPHS = [
    "INSERT INTO main.captured_graph (operation_id, captured_graph) SELECT s.operation_id, g.captured_graph "
    "FROM temp.op_staging s CROSS JOIN temp.graph_texts g ON g.graph_id = s.g_id WHERE s.g_id IS NOT NULL "
    "ORDER BY s.rowid",
    "INSERT INTO main.nodes (operation_id, unique_id, node_operation_id, name) SELECT s.operation_id, n.unique_id, "
    "CASE WHEN n.fn THEN s.operation_id END, n.name FROM temp.op_staging s CROSS JOIN temp.graph_nodes n "
    "ON n.graph_id = s.g_id WHERE s.g_id IS NOT NULL ORDER BY s.rowid, n.unique_id",
    "INSERT INTO main.edges (operation_id, source_unique_id, sink_unique_id, source_output_index, sink_input_index, "
    "key) SELECT s.operation_id, e.source, e.sink, e.i, 0, e.i FROM temp.op_staging s CROSS JOIN temp.graph_edges e "
    "ON e.graph_id = s.g_id WHERE s.g_id IS NOT NULL ORDER BY s.rowid, e.source, e.i",
]
# Each op's graph by id: ~10 B an op where its text per op was 1.4-2 KB (distinct_graphs holds each text once).
_OPERATION_GRAPHS = ("INSERT INTO main.operation_graphs (operation_id, graph_id) SELECT operation_id, g_id "
                     "FROM {src} WHERE g_id IS NOT NULL ORDER BY rowid")
_FREES = ("UPDATE main.buffer_lifetimes SET freed_seq = s.f_freed_seq FROM {src} s "
          "WHERE s.f_buffer_id IS NOT NULL AND buffer_lifetimes.buffer_id = s.f_buffer_id "
          "AND buffer_lifetimes.freed_seq IS NULL")
# After the stack texts: each op's stack by its id.
_STACK_TRACES = ("INSERT INTO main.stack_traces (operation_id, stack_trace, source_file_id) "
                 "SELECT o.operation_id, t.stack_trace, t.source_file_id FROM {src} o "
                 "CROSS JOIN main.stack_trace_texts t ON t.stack_trace_id = o.stack_trace_id ORDER BY o.rowid")

# A tensor argument's text, as ttreport has always written it, rendered from the tensor's row.
_TENSOR_TEXT = ("'ttnn.Tensor(id=' || r.tensor_id || ', shape=' || COALESCE(s.shape, 'None') || ', dtype=' "
                "|| s.dtype || ', layout=' || s.layout || ', ' "
                "|| COALESCE(s.placement, s.memory_config, 'host') || ')'")
# operation_arguments' rows, fed as (operation_id, name, text, tensor id) made by Writer._op, go in first: a tensor's
# text is the writer's (Writer._argument_text) where it knows the tensor's first spec, else rendered here from its row.
# Rendered here for every tensor, from json_each of the staging row's arguments, they took 2.5 µs an op of SQL
# (bench/README.md, issue 33, cwriter4 and cwriter5). The select's {0}..{3} are the fed row's columns.
_ARGUMENTS = "INSERT INTO main.operation_arguments (operation_id, name, value)"
_ARGUMENT_ROW = ("{0}, {1}, COALESCE({2}, (SELECT " + _TENSOR_TEXT + " FROM main.tensors r "
                 "LEFT JOIN main.tensor_specs s ON s.spec_id = r.spec_id WHERE r.tensor_id = {3}), "
                 "'ttnn.Tensor(id=' || {3} || ')')")
# `buffers`' rows: made by _rows.Items while the log's records come in seq order (b.rows["buffers"], fed: 1.98 -> 0.79
# µs an op of SQL where the join and its sort made them, 20,000 adds: bench/README.md issue 33, cwriter5), else by
# _BUFFERS_JOIN, the specification.
_BUFFERS = "INSERT INTO main.buffers (operation_id, device_id, address, max_size_per_bank, buffer_type, buffer_layout)"
# `buffers` lists what is live after each op, once the allocations and frees are in: the candidates are the buffers
# live after the last batch plus those allocated since (temp.live_buffers, so no op scans every allocation of the
# capture), checked against the op's end_seq.
# CROSS JOIN fixes the join order: buffer_lifetimes has no index until close, and SQLite would otherwise
# scan all of it (every allocation of the capture) once per batch; each candidate then finds the ops it
# outlived by a range of op_staging's end_seq index, not by testing every op of the batch (a batch
# allocates about as many buffers as it has ops).
_BUFFERS_JOIN = (
    f"{_BUFFERS} SELECT o.operation_id, b.device_id, b.address, b.max_size_per_bank, b.buffer_type, b.buffer_layout "
    "FROM temp.live_buffers l CROSS JOIN main.buffer_lifetimes b ON b.buffer_id = l.buffer_id "
    "CROSS JOIN temp.op_staging o ON o.end_seq BETWEEN b.allocated_seq + 1 AND COALESCE(b.freed_seq - 1, 1 << 62) "
    "ORDER BY o.rowid, b.buffer_id")
# temp.live_buffers, kept all along (the join may be needed from any batch on: _rows.Items.exact), as it was when the
# live set was scanned each batch for the rows freed by then (0.49 -> 0.16 µs an op, 20,000 adds; the scan grew with the
# live buffers, a model's weights): a freed_seq is written by a FREE record of the batch, so the live set less each
# batch's frees. A batch with ops adds the buffers allocated since the last (?1: the highest id then), where the join
# does not run (?2 false) those not freed yet; after the join the new ones freed already go (_LIVE_FREED_NEW: they
# were its candidates), and in every batch the frees of buffers of earlier batches (ids up to ?1; the batch's ops'
# frees from {src}, the others by id).
_LIVE_NEW = ("INSERT OR IGNORE INTO temp.live_buffers SELECT buffer_id FROM main.buffer_lifetimes "
             "WHERE buffer_id > ?1 AND (?2 OR freed_seq IS NULL)")
_LIVE_FREED_NEW = ("DELETE FROM temp.live_buffers WHERE buffer_id IN (SELECT buffer_id FROM main.buffer_lifetimes "
                   "WHERE buffer_id > ? AND freed_seq IS NOT NULL)")
_LIVE_FREED = ("DELETE FROM temp.live_buffers WHERE buffer_id IN "
               "(SELECT f_buffer_id FROM {src} WHERE f_buffer_id <= ?)")
_ALLOC_WIDTH = len(Alloc._fields)
_ALLOC_BUFFER_ID, _ALLOC_BUFFER = int(AllocField.BUFFER_ID), int(AllocField.BUFFER)
_ALLOC_BUFFER_TYPE, _ALLOC_BY_OP = int(AllocField.BUFFER_TYPE), int(AllocField.ALLOCATED_BY_OPERATION_ID)
MAX_GRAPH_KEYS = 4096  # the writer's captured graphs found by their programs' identity (_captured_graph)
_ALLOC_PLACE = slice(AllocField.DEVICE_ID, AllocField.SIZE + 1)  # device to size: where a buffer is (its graph's)
_new_tuple = tuple.__new__
_FREE_BUFFER_ID = int(FreeField.BUFFER_ID)
_NO_TENSOR = (None,) * len(_TENSOR_OWN)
_HOST_TENSOR = [None] * len(_TENSOR_DIRECT)  # a TENSOR record's row (Writer._host_tensor_row): id and producer
_HOST_TENSOR_AT = (_TENSOR_DIRECT.index("tensor_id"), _TENSOR_DIRECT.index("producer_operation_id"))
_NO_ALLOC = (None,) * len(Alloc._fields)
_NO_FREE = (None,) * len(Free._fields)

# Tables worked out once the capture is over, from the whole history (also by migration 0005).
# The file and line of an op's user code (stack_traces are stack_trace_texts by operations.stack_trace_id):
# its stack text's first '  File "<path>", line <n>, in ...'.
_PATH = 'substr(st.stack_trace, 9, instr(st.stack_trace, \'", line \') - 9)'
_LINE = ('CAST(substr(st.stack_trace, instr(st.stack_trace, \'", line \') + 8, '
         'instr(st.stack_trace, \', in \') - instr(st.stack_trace, \'", line \') - 8) AS INTEGER)')
# Each distinct stack's file and line once (temp.stack_lines), and every tensor's uses in one pass over
# input_tensors grouped by tensor (4x faster than a correlated lookup per tensor), into a table keyed by tensor id
# (temp.tensor_uses), read in ix_input_tensors_tensor's order: as a subquery, SQLite built an automatic index on it
# and sorted the uses for the GROUP BY, 0.374-0.388 -> 0.324-0.341 s of CPU for 200,000 adds' rows (5 alternating
# pairs; the same rows there, in the sample report and in 7,429 ops with 1,428 deallocates: bench/README.md, close33).
_LIFETIME_TEMPS = [
    "DROP TABLE IF EXISTS temp.stack_lines",
    "CREATE TEMP TABLE stack_lines (stack_trace_id INTEGER PRIMARY KEY, path, line)",
    f"INSERT INTO temp.stack_lines SELECT st.stack_trace_id, {_PATH}, {_LINE} FROM stack_trace_texts st",
    "DROP TABLE IF EXISTS temp.tensor_uses",
    "CREATE TEMP TABLE tensor_uses (tensor_id INTEGER PRIMARY KEY, last_use, dealloc)",
    """INSERT INTO temp.tensor_uses
        SELECT i.tensor_id, MAX(CASE WHEN o.name != 'ttnn.deallocate' THEN i.operation_id END),
               MIN(CASE WHEN o.name = 'ttnn.deallocate' THEN i.operation_id END)
        FROM input_tensors i JOIN operations o USING (operation_id) WHERE i.tensor_id IS NOT NULL
        GROUP BY i.tensor_id""",
]
_LIFETIME_COLUMNS = ("tensor_id, producer_operation_id, last_use_operation_id, deallocate_operation_id, "
                     "producer_source_file, producer_source_line, last_use_source_file, last_use_source_line")
_LIFETIMES = """SELECT t.tensor_id, t.producer_operation_id, u.last_use, u.dealloc, pl.path, pl.line, ll.path, ll.line
        FROM tensors t
        LEFT JOIN temp.tensor_uses u ON u.tensor_id = t.tensor_id
        LEFT JOIN operations po ON po.operation_id = t.producer_operation_id
        LEFT JOIN temp.stack_lines pl ON pl.stack_trace_id = po.stack_trace_id
        LEFT JOIN operations lo ON lo.operation_id = u.last_use
        LEFT JOIN temp.stack_lines ll ON ll.stack_trace_id = lo.stack_trace_id
        ORDER BY t.tensor_id"""
_AFTER_LIFETIMES = [
    "DELETE FROM buffer_chunks",
    # As the visualizer aggregates buffer_pages itself when this table is absent (queries.py).
    """INSERT INTO buffer_chunks (operation_id, device_id, address, bank_id, core_x, core_y, chunk_address, chunk_size,
                                  page_size, num_pages, buffer_type)
        SELECT operation_id, device_id, address, bank_id, core_x, core_y, MIN(page_address),
               MAX(page_address + page_size) - MIN(page_address), MAX(page_size), COUNT(*), buffer_type
        FROM buffer_pages GROUP BY operation_id, device_id, address, bank_id, core_x, core_y, buffer_type
        ORDER BY operation_id, device_id, address, bank_id""",
]
AT_CLOSE = [
    "DELETE FROM tensor_lifetime",
    *_LIFETIME_TEMPS,
    f"INSERT INTO tensor_lifetime ({_LIFETIME_COLUMNS}) {_LIFETIMES}",
    "DROP TABLE temp.stack_lines",
    "DROP TABLE temp.tensor_uses",
    *_AFTER_LIFETIMES,
]
# A report of at least this many ops has its tensor_lifetime rows kept by _LifetimesAside; below it, the second
# connection and the copy cost about what they save.
ASIDE_MIN_OPS = 50_000
# _LifetimesAside looks at the report every FOLLOW_S during the capture, and makes a pass once PASS_OPS more ops are
# committed (~1.3 µs of CPU an op, on a thread at a low priority: bench/README.md, issue 33, close1m).
FOLLOW_S = 1.0
PASS_OPS = 20_000
# The passes' nice value, and when they stop: a pass that waited for a core more than STARVED times its CPU. A pass
# holds a read snapshot, which keeps the writer's WAL from being reset: at nice 19 on a machine at load 6, passes of
# 0.6 s of CPU in all took 48.6 s, and the WAL they held took the late indexes' CPU 1.2 -> 2.2 s (1,000,000 adds).
FOLLOW_NICE = 10
STARVED = 10
# Its scratch tables (schema `aside`): each stack's file and line; each tensor's last use (not a deallocate) and first
# deallocate so far; tensor_lifetime's rows so far (`lifetimes`, made by tensor_lifetime's own statement read from the
# report, so that the writer's copy is SQLite's transfer of whole records: 0.075-0.083 -> 0.060-0.065 s of CPU for
# 200,000 rows). `touched`: a pass's tensors used.
_ASIDE_TABLES = [
    "CREATE TABLE aside.lines (stack_trace_id INTEGER PRIMARY KEY, path, line)",
    "CREATE TABLE aside.uses (tensor_id INTEGER PRIMARY KEY, last_use, dealloc)",
    "CREATE TEMP TABLE touched (tensor_id INTEGER PRIMARY KEY, last_use, dealloc)",
]
# A pass, in one read snapshot, over what the writer committed since the last: the stacks after :stacks, the
# input_tensors rows after :uses (the writer appends them; stack ids it gives in order) up to :uses_to, the tensors
# after :tensors up to :tensors_to. A tensor's row that comes after a higher id's (a host tensor first seen late) is
# added by the close's pass (_STRAGGLERS). Each the spec's (_LIFETIMES) for what it has seen: a last use is the
# highest op id not a deallocate, a deallocate the lowest.
_PASS = [
    f"INSERT INTO aside.lines SELECT st.stack_trace_id, {_PATH}, {_LINE} FROM main.stack_trace_texts st "
    f"WHERE st.stack_trace_id > :stacks",
    "DELETE FROM temp.touched",
    """INSERT INTO temp.touched
        SELECT i.tensor_id, MAX(CASE WHEN o.name != 'ttnn.deallocate' THEN i.operation_id END),
               MIN(CASE WHEN o.name = 'ttnn.deallocate' THEN i.operation_id END)
        FROM main.input_tensors i CROSS JOIN main.operations o ON o.operation_id = i.operation_id
        WHERE i.rowid > :uses AND i.rowid <= :uses_to AND i.tensor_id IS NOT NULL GROUP BY i.tensor_id""",
    # max() and min() of two values are NULL if either is: each side stands in for the other's NULL
    """INSERT INTO aside.uses SELECT * FROM temp.touched WHERE true ON CONFLICT (tensor_id) DO UPDATE SET
        last_use = max(COALESCE(last_use, excluded.last_use), COALESCE(excluded.last_use, last_use)),
        dealloc = min(COALESCE(dealloc, excluded.dealloc), COALESCE(excluded.dealloc, dealloc))""",
    """UPDATE aside.lifetimes SET last_use_operation_id = u.last_use, deallocate_operation_id = u.dealloc,
                                 last_use_source_file = l.path, last_use_source_line = l.line
        FROM temp.touched b CROSS JOIN aside.uses u ON u.tensor_id = b.tensor_id
        LEFT JOIN main.operations o ON o.operation_id = u.last_use
        LEFT JOIN aside.lines l ON l.stack_trace_id = o.stack_trace_id
        WHERE lifetimes.tensor_id = b.tensor_id""",
]
_NEW_LIFETIMES = """INSERT INTO aside.lifetimes
        SELECT t.tensor_id, t.producer_operation_id, u.last_use, u.dealloc, pl.path, pl.line, ll.path, ll.line
        FROM main.tensors t
        LEFT JOIN aside.uses u ON u.tensor_id = t.tensor_id
        LEFT JOIN main.operations po ON po.operation_id = t.producer_operation_id
        LEFT JOIN aside.lines pl ON pl.stack_trace_id = po.stack_trace_id
        LEFT JOIN main.operations lo ON lo.operation_id = u.last_use
        LEFT JOIN aside.lines ll ON ll.stack_trace_id = lo.stack_trace_id"""
_PASS.append(f"{_NEW_LIFETIMES} WHERE t.tensor_id > :tensors AND t.tensor_id <= :tensors_to ORDER BY t.tensor_id")
_STRAGGLERS = f"{_NEW_LIFETIMES} WHERE t.tensor_id NOT IN (SELECT tensor_id FROM aside.lifetimes) ORDER BY t.tensor_id"
# SQLite's sorter threads for the late indexes' sorts (PRAGMA threads): the model has ended by then, so the writer
# may have a second core (a machine's cores less the writer's own, at most 4). The sorter uses none while temp_store
# is MEMORY (vdbesort.c), so the close sets it to FILE, which drops the batches' temp tables (done with by then).
# 200,000 adds' late indexes, the building thread's CPU: 0.38 -> 0.24 s with 1 thread, 0.21 with 2, 0.17 with 4;
# all threads' 0.37 -> 0.39 s (bench/README.md, issue 33, close33).
SORT_THREADS = max(1, min(4, (os.cpu_count() or 2) - 1))

# Events that did not fit an op's row are bound as queued (numbered parameters skip the tag in ?1).
_ALLOC_VALUES = ",".join(f"?{i + 1}" for i in range(1, len(Alloc._fields)))
_INSERT = {
    "tensor_specs": "INSERT INTO tensor_specs (spec_id, shape, dtype, layout, memory_config, padded_shape, placement) "
                    "VALUES (?,?,?,?,?,?,?)",
    "tensor_records": f"INSERT OR IGNORE INTO tensors ({_TENSOR_COLUMNS}) SELECT "
                      f"{','.join(f'?{i + 1}' for i in range(len(_TENSOR_OWN)))}, {_SPEC_TEXTS} FROM (SELECT 1) "
                      f"LEFT JOIN tensor_specs s ON s.spec_id = ?{_SPEC_ID_AT + 1}",
    "allocs": f"INSERT OR IGNORE INTO buffer_lifetimes ({_BUFFER_COLUMNS}) VALUES ({_ALLOC_VALUES})",
    "source_files": "INSERT INTO source_files (id, path, contents) VALUES (?,?,?)",
    "stack_trace_texts": "INSERT INTO stack_trace_texts (stack_trace_id, stack_trace, source_file_id) VALUES (?,?,?)",
    "errors": "INSERT INTO errors (operation_id, operation_name, error_type, error_message, stack_trace, timestamp) "
              "VALUES (?,?,?,?,?,?)",
    "frees": f"UPDATE buffer_lifetimes SET freed_seq = ?{FreeField.FREED_SEQ + 1} "
             f"WHERE buffer_id = ?{FreeField.BUFFER_ID + 1}",
    "buffer_pages": "INSERT INTO buffer_pages (operation_id, device_id, address, core_y, core_x, bank_id, page_index, "
                    "page_address, page_size, buffer_type) VALUES (?,?,?,?,?,?,?,?,?,?)",
    "files": "UPDATE tensors SET file = ? WHERE tensor_id = ?",
    "lost": "UPDATE tensors SET file = NULL WHERE tensor_id = ?",
    "meta": "INSERT OR REPLACE INTO report_metadata (key, value) VALUES (?, ?)",
}


def connect(db_path) -> sqlite3.Connection:
    con = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute("PRAGMA temp_store=MEMORY")
    con.execute(_STAGING)
    con.execute("CREATE INDEX temp.op_staging_end_seq ON op_staging (end_seq)")
    con.execute("CREATE INDEX temp.op_staging_freed ON op_staging (f_buffer_id) WHERE f_buffer_id IS NOT NULL")
    con.execute("CREATE TEMP TABLE live_buffers (buffer_id INTEGER PRIMARY KEY)")
    for ddl in _GRAPH_TABLES:
        con.execute(ddl)
    return con


class _LifetimesAside:
    """tensor_lifetime's rows kept by a second connection, from read snapshots of what the writer has committed, in a
    scratch database beside the report; the writer copies them in at its close (one INSERT ... SELECT, ~0.35 s for
    1,000,000 rows), or, if anything failed here, works them out itself (AT_CLOSE).

    With follow=True (the writer process's own capture: Writer.follow_lifetimes), a thread at a low priority
    makes a pass over what was committed since the last once PASS_OPS more ops are in: mostly on the model's core
    while the model waits for the writer, and no more once a pass finds no idle core (STARVED). At the close (start)
    a thread at the writer's priority makes the last pass beside the late indexes. Worked out whole at the close,
    the rows took 0.9-1.05 s of CPU for 1,000,000 adds on the core the index sorts share (bench/README.md, issue
    33, close33 and close1m).

    Only for a report in WAL mode (a reader there never blocks the writer), with ASIDE_MIN_OPS ops or more.
    """

    def __init__(self, db_path, *, follow: bool):
        self.db_path = Path(db_path)
        self.scratch = self.db_path.with_name(LIFETIMES_FILE)
        self.error: Exception | None = None
        self.wall_s = self.cpu_s = 0.0  # the close's pass (Writer.close_parts)
        self.follow_wall_s = self.follow_s = 0.0  # the passes' during the capture
        self._con: sqlite3.Connection | None = None  # the report read-only, the scratch attached as `aside`
        self._seen = {"ops": 0, "stacks": 0, "uses": 0, "tensors": 0}  # what the committed passes read up to
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if follow:
            self._thread = threading.Thread(target=self._follow, name="ttreport-lifetimes", daemon=True)
            self._thread.start()

    def _follow(self) -> None:
        if sys.platform.startswith("linux"):  # this thread's own nice value (Linux's setpriority of a thread id)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), FOLLOW_NICE)
        try:
            while not self._stop.wait(FOLLOW_S):
                wall, cpu = time.perf_counter(), time.thread_time()
                if self._pass(PASS_OPS):
                    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
                    self.follow_wall_s += wall
                    self.follow_s += cpu
                    if wall > STARVED * cpu + FOLLOW_S:
                        return  # no idle core: the close works the rest out (its whole query past half)
        except Exception as e:  # noqa: BLE001 - stopped by the close, a full disk, a bug: the close starts over
            if not self._stop.is_set():
                self.error = e

    def _pass(self, min_ops: int) -> bool:
        """A pass, if ASIDE_MIN_OPS ops and `min_ops` more than the last pass saw are committed (True once made);
        min_ops=0: the close's, which also adds any tensor's row that came after a higher id's."""
        con = self._connect()
        ops = con.execute("SELECT MAX(operation_id) FROM main.operations").fetchone()[0] or 0
        if ops < max(ASIDE_MIN_OPS, self._seen["ops"] + min_ops):
            return False
        self._attach(con)
        con.execute("BEGIN")
        try:
            seen = {**self._seen,
                    "ops": con.execute("SELECT MAX(operation_id) FROM main.operations").fetchone()[0] or 0,
                    "uses_to": con.execute("SELECT MAX(rowid) FROM main.input_tensors").fetchone()[0] or 0,
                    "tensors_to": con.execute("SELECT MAX(tensor_id) FROM main.tensors").fetchone()[0] or 0}
            if not min_ops and seen["ops"] - self._seen["ops"] > seen["ops"] // 2:
                # The passes fell behind (at a low priority, on a machine with no idle core): most of the rows
                # by the close's whole query, 0.19 against 0.27-0.38 s of CPU for 200,000 adds by a pass.
                con.execute("DELETE FROM aside.lifetimes")
                for sql in _LIFETIME_TEMPS:
                    con.execute(sql)
                con.execute(f"INSERT INTO aside.lifetimes {_LIFETIMES}")
                con.execute(_PASS[0], seen)  # the stacks' lines, for the count below
            else:
                for sql in _PASS:
                    if min_ops and self._stop.is_set():
                        raise InterruptedError("the capture is closing")  # the close's pass takes over
                    con.execute(sql, seen)
            if not min_ops:
                stacks = con.execute("SELECT COUNT(*) FROM main.stack_trace_texts").fetchone()[0]
                if stacks != con.execute("SELECT COUNT(*) FROM aside.lines").fetchone()[0]:
                    raise RuntimeError("a stack's row came after a higher id's")  # the writer works the rows out
                if (con.execute("SELECT COUNT(*) FROM main.tensors").fetchone()[0]
                        != con.execute("SELECT COUNT(*) FROM aside.lifetimes").fetchone()[0]):
                    con.execute(_STRAGGLERS)
            seen["stacks"] = con.execute("SELECT COALESCE(MAX(stack_trace_id), 0) FROM aside.lines").fetchone()[0]
            seen["uses"], seen["tensors"] = seen["uses_to"], max(seen["tensors"], seen["tensors_to"])
            con.execute("COMMIT")
            self._seen = seen
            return True
        finally:
            if con.in_transaction:
                con.execute("ROLLBACK")

    def _connect(self) -> sqlite3.Connection:
        if self._con is None:
            uri = self.db_path.resolve().as_uri() + "?mode=ro"
            self._con = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            self._con.execute("PRAGMA temp_store=MEMORY")
        return self._con

    def _attach(self, con: sqlite3.Connection) -> None:
        """The scratch database and its tables, at the first pass."""
        if con.execute("SELECT 1 FROM pragma_database_list WHERE name = 'aside'").fetchone():
            return
        self.scratch.unlink(missing_ok=True)  # a killed capture's
        ddl = con.execute("SELECT sql FROM main.sqlite_master WHERE name = 'tensor_lifetime'").fetchone()[0]
        ddl, n = re.subn(r'^CREATE TABLE "?tensor_lifetime"?', "CREATE TABLE aside.lifetimes", ddl)
        if n != 1:
            raise ValueError(f"tensor_lifetime's statement not understood: {ddl[:80]!r}")
        con.execute("ATTACH DATABASE ? AS aside", (str(self.scratch),))
        con.execute("PRAGMA aside.journal_mode=MEMORY")  # a pass stopped by the close is rolled back
        con.execute("PRAGMA aside.synchronous=OFF")  # a scratch file: thrown away on any failure
        for sql in (*_ASIDE_TABLES, ddl):
            con.execute(sql)

    def _stop_following(self) -> None:
        self._stop.set()
        if self._thread is not None:
            con = self._con
            if con is not None:
                with contextlib.suppress(sqlite3.ProgrammingError):  # closed by its thread meanwhile
                    con.interrupt()  # a pass under way is rolled back
            self._thread.join()
            self._thread = None

    def _disconnect(self) -> None:
        if self._con is not None:  # another connection would keep the closed report in WAL mode
            self._con.close()
            self._con = None

    def start(self, con: sqlite3.Connection) -> bool:
        """At the close: stop the passes and start the last, beside the late indexes; False where the writer works
        the rows out itself (fewer than ASIDE_MIN_OPS ops, or not in WAL mode)."""
        self._stop_following()
        if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            self._disconnect()
            return False  # a rebuild from the log (rollback journal): a reader would block the index writes
        if (con.execute("SELECT MAX(operation_id) FROM operations").fetchone()[0] or 0) < ASIDE_MIN_OPS:
            self._disconnect()
            return False
        self._thread = threading.Thread(target=self._last, name="ttreport-lifetimes", daemon=True)
        self._thread.start()
        return True

    def _last(self) -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            if self.error is None:
                self._pass(0)
        except Exception as e:  # noqa: BLE001 - a full disk, a bug: the writer works the rows out itself
            self.error = e
        finally:
            self._disconnect()
        self.wall_s, self.cpu_s = time.perf_counter() - wall, time.thread_time() - cpu

    def copy_into(self, con: sqlite3.Connection) -> bool:
        """Wait for the rows; True once they are in tensor_lifetime (in `con`'s open transaction, if any)."""
        self._thread.join()
        if self.error is not None:
            return False
        try:
            con.execute("ATTACH DATABASE ? AS aside", (str(self.scratch),))
        except sqlite3.Error:
            return False
        try:
            con.execute("DELETE FROM tensor_lifetime")
            con.execute("INSERT INTO tensor_lifetime SELECT * FROM aside.lifetimes")  # whole records, in id order
            return True
        finally:
            con.execute("DETACH DATABASE aside")

    def discard(self) -> None:
        self._stop_following()
        self._disconnect()
        with contextlib.suppress(OSError):
            self.scratch.unlink()


class _Batch:
    """A batch's rows while Writer._write makes them: the rows by table (Writer._commit's), the staging rows, the
    stacks and specs it numbered (forgotten again if it is rolled back), the flush and stop records, and the latest
    alloc and free not yet in an op's staging row (one slot each)."""

    __slots__ = ("rows", "staging", "new_stacks", "new_specs", "waiters", "alloc", "free")

    def __init__(self, rows: dict):
        self.rows = rows
        self.staging, self.new_stacks, self.new_specs, self.waiters = [], [], [], []
        self.alloc = self.free = None


class Writer:
    """Turns batches of records (records.py) into rows of the report at `db_path` (`con`, connected by its owner);
    `defs` answers what records name by id (oplog.Definitions: code(id), memory_config(id))."""

    def __init__(self, db_path, defs, config, warner: LossWarner | None = None):
        self.warner = warner or LossWarner()  # shared with the tensor thread: one warning per capture
        self.db_path = db_path
        self.defs = defs
        self._live: dict | None = {} if config.buffer_pages else None  # buffer id -> Buffer, for buffer_pages
        self._grid_x: dict[int, int] = {}  # device id -> worker columns, to place L1 banks on cores
        self._programs: dict[int, list] = {}  # op id -> the device programs it launched, until its row comes
        self._l1_allocs: dict[int, list] = {}  # op id -> the L1 buffers it allocated, until its row comes
        self._l1_owner: dict[int, int] = {}  # buffer id -> the op id whose _l1_allocs holds it
        self._graphs = config.device_graphs  # graphs wanted (their L1 buffers are gathered for them)
        # TT-NN's per-op captured_graph, nodes and edges wanted too (device_graphs=True, not "distinct"): _PER_OP_GRAPHS
        # copies them from the temp tables, which hold the graphs only then.
        self._per_op_graphs = config.device_graphs is True
        self._graph_ids: dict[str, int] = {}  # a captured graph's text -> its graph_id (device_graph.graph_id)
        self._graph_keys: dict[tuple, tuple] = {}  # an op's name, programs and L1 buffers -> (graph_id, programs)
        self.error: BaseException | None = None  # the first failure, reported at close
        self.records_lost = 0
        self.ops_lost = 0  # of records_lost, the ops: what ls and summary show beside the status
        self.records_written = 0
        self.close_s = 0.0  # wall time of _close: the late indexes, tensor_lifetime, the WAL's fold (bench/ shows it)
        self.close_parts: dict[str, list[float]] = {}  # _close's steps: [wall s, CPU s of the thread that ran it]
        self._lifetimes: _LifetimesAside | None = None  # following the capture (follow_lifetimes)
        self._stacks: dict[tuple, int] = {}  # frames key -> stack_trace_id
        self._source_files: dict[str, int | None] = {}  # path -> source_files id (None: not readable)
        self._max_buffer_id = 0  # the highest buffer id committed: later ones join temp.live_buffers
        # (shape, dtype number, layout number, id(MemoryConfig)) -> (spec_id, None, its texts); the recorder
        # holds every config it queued an id of, so ids are never reused during a capture.
        self._specs: dict[tuple, tuple] = {}
        self._spec_ids = itertools.count(1)
        self._spec_of: dict[int, tuple] = {}  # tensor id -> its spec's texts, for tensors inside list arguments
        self._pending: tuple = ((), [])  # the batch's staging rows and other tensor rows, while it is made
        self._texts: dict = {}  # (type, value) or id -> (JSON text of an argument value, the value held, its text)
        # Tensor id -> its first spec's texts, or its argument text once rendered (Writer._first_spec); a tensor id
        # at or below the floor that is not kept may have been forgotten (SQL renders its text).
        self._arg_texts: dict[int, tuple | str] = {}
        self._arg_floor = [-1]  # a list: _rows.Items reads and moves it too
        # One dict per enum, keyed by number: BFLOAT16 and ROW_MAJOR are both 0.
        self._dtype_text = {int(e): repr(e) for e in DataType}
        self._layout_text = {int(e): repr(e) for e in Layout}
        self._feeder = None  # the _rows.Feeder on self.con (ROWS), made at the first batch; False: executemany
        self._row_tables: set[int] = set()  # the widths of the temp.rows_<width> virtual tables made on self.con
        # Writer._write's loop in C over the common records, on these caches (ROWS; else self._item for each record).
        self._items = None if _rows is None else _rows.Items(
            stacks=self._stacks, specs=self._specs, spec_of=self._spec_of, texts=self._texts, programs=self._programs,
            l1_allocs=self._l1_allocs, l1_owner=self._l1_owner, graph_keys=self._graph_keys,
            arg_texts=self._arg_texts, arg_floor=self._arg_floor, live=self._live is not None,
            graphs=bool(self._graphs), tensor_arg=TensorArg, op_fields=_OP_POSITIONS, spec_fields=_SPEC_POSITIONS,
            max_spec_of=MAX_SPEC_OF, staging_width=_STAGING_WIDTH, max_value_chars=MAX_VALUE_CHARS, program=Program,
            program_fields=tuple(Program._fields.index(f) for f in ("cbs", "ranges", "name", "device_id", "cb_base")))

    # -- a batch ---------------------------------------------------------------------------
    def _write(self, batch: list) -> bool:
        """Commit `batch` in one transaction; True once the stop record is among it."""
        if not batch:
            return False
        if self.con is None:
            self._count_lost(batch)
            return self._release([item for item in batch if item[0] in (FLUSH, STOP)])
        rows = {name: [] for name in _INSERT}
        rows.update(devices=[], other={}, graphs=[], graph_nodes=[], graph_edges=[], operation_arguments=[],
                    buffers=None, **{name: [] for name in _FED})
        b = _Batch(rows)
        self._pending = (b.staging, rows["tensor_records"])
        try:
            if ROWS:  # the common records in C (_rows.Items), each other one by self._item
                self._items.write(batch, b, self._item)
            else:
                item_rows = self._item
                for item in batch:
                    item_rows(item, b)
            if b.alloc is not None:
                rows["allocs"].append(b.alloc)
            if b.free is not None:
                rows["frees"].append(b.free)
            self._pending = ((), [])
            self._commit(b.staging, rows)
            self.records_written += len(batch)
            waiters = b.waiters
        except Exception as e:  # the disk, or a bug here: never the model's problem (see module docstring)
            for key in b.new_stacks:
                self._stacks.pop(key, None)
            for key in b.new_specs:
                self._specs.pop(key, None)
            for _, path, _ in rows["source_files"]:
                self._source_files.pop(path, None)
            for _, text in rows["graphs"]:  # rolled back with the batch: defined again when seen again
                self._graph_ids.pop(text, None)
            if self._arg_texts:  # which of them the rolled-back rows named is not kept: SQL renders them all
                self._arg_floor[0] = max(self._arg_floor[0], *self._arg_texts)
                self._arg_texts.clear()
            self._graph_keys.clear()  # which of them name the graphs just rolled back is not kept
            if self._items is not None:  # its live buffers are not the db's now: the join makes the rows from here
                self._items.exact = 0
            self._count_lost(batch)
            self._fail(e)
            waiters = [item for item in batch if item[0] in (FLUSH, STOP)]
        return self._release(waiters)

    def _item(self, item, b: _Batch) -> None:
        """One record of a batch into `b`'s rows. The specification of _rows.Items.write, which does the common
        OP, ALLOC, FREE, ROW and PROGRAM records itself and hands this every other one (a new stack, spec or graph,
        an argument text not cached, files, an error, buffer pages, a nested op's L1 buffers or one freed before its
        op's end, the rarer tags)."""
        tag, rows = item[0], b.rows
        if tag == OP:
            item = _new_tuple(Op, item)  # its named view: no copy, C-speed attribute reads
            graph = self._captured_graph(item, rows) if self._programs or self._l1_allocs else None
            # The slots take the latest alloc and free before the op's end, whichever op they belong to.
            b.staging.append(self._op(item, rows, b.new_stacks, b.new_specs) + (b.alloc or _NO_ALLOC)
                             + (b.free or _NO_FREE) + (graph,))
            b.alloc = b.free = None
        elif tag == ALLOC:  # records.Alloc's fields by position: no named view made for each
            if self._live is not None:  # records.AllocPages: its Buffer for buffer_pages
                self._live[item[_ALLOC_BUFFER_ID]] = item[_ALLOC_BUFFER]
                item = item[:_ALLOC_WIDTH]
            by_op = item[_ALLOC_BY_OP]
            if self._graphs and item[_ALLOC_BUFFER_TYPE] == 1 and by_op is not None:
                # in its op's graph, if it launches a program
                self._l1_allocs.setdefault(by_op, []).append(item)
                self._l1_owner[item[_ALLOC_BUFFER_ID]] = by_op
            if b.alloc is not None:
                rows["allocs"].append(b.alloc)
            b.alloc = item
        elif tag == FREE:
            buffer_id = item[_FREE_BUFFER_ID]
            if self._l1_owner:
                self._drop_l1_alloc(buffer_id)
            if self._live is not None:
                self._live.pop(buffer_id, None)
            if b.free is not None:
                rows["frees"].append(b.free)
            b.free = item
        elif tag == ROW:  # device_perf's row of every op (a RowValues): before the rarer tags
            if len(item) == 4:
                rows["other"].setdefault((item[1], item[2]), []).append(item[3])
            else:  # a Row: by its dict
                rows["other"].setdefault((item[1], tuple(item[2])), []).append(tuple(item[2].values()))
        elif tag == PROGRAM:
            self._programs.setdefault(item[1], []).append(item[2])
        elif tag == TENSOR:
            rows["tensor_records"].append(self._host_tensor_row(item, rows, b.new_specs))
        elif tag == DEVICE:
            rows["devices"].append(item[1])
            self._grid_x[item[1]["device_id"]] = item[1]["num_x_cores"]
        elif tag == META:
            rows["meta"].append((item[1], str(item[2])))
        elif tag == FILE_LOST:
            rows["lost"].append((item[1],))
        else:
            b.waiters.append(item)  # FLUSH or STOP

    @staticmethod
    def _release(waiters: list) -> bool:
        """Wake whoever waits on a flush or stop; True when the stop has come."""
        for _, done in waiters:
            if done is not None:
                done.set()
        return any(tag == STOP for tag, _ in waiters)

    def _commit(self, staging: list, rows: dict) -> None:
        con = self.con
        if self._feeder is None:
            self._feeder = self._start_feeder()
        if self._feeder:
            self._make_row_tables([3, 4, 6, *(len(cols) for _, cols in rows["other"])])
        con.execute("BEGIN")
        try:
            # Devices and specs first: the ROW records and tensor rows that follow may refer to them.
            for facts in rows["devices"]:
                cols = ", ".join(facts)
                con.execute(f"INSERT OR IGNORE INTO devices ({cols}) VALUES ({', '.join('?' * len(facts))})",
                            tuple(facts.values()))
            if rows["tensor_specs"]:
                con.executemany(_INSERT["tensor_specs"], rows["tensor_specs"])
            if rows["graphs"]:  # again after MAX_GRAPHS forgot them: the same id, already there
                con.executemany("INSERT OR IGNORE INTO main.distinct_graphs VALUES (?, ?)", rows["graphs"])
            if rows["graphs"] and self._per_op_graphs:
                con.executemany("INSERT INTO temp.graph_texts VALUES (?, ?)", rows["graphs"])
                con.executemany("INSERT INTO temp.graph_nodes VALUES (?, ?, ?, ?)", rows["graph_nodes"])
                con.executemany("INSERT INTO temp.graph_edges VALUES (?, ?, ?, ?)", rows["graph_edges"])
            src = joined = None
            if staging:
                joined = rows["buffers"] is None  # by _BUFFERS_JOIN
                src = self._stage(staging, joined or self._per_op_graphs)
                for sql in _SPREAD:
                    con.execute(sql.format(src=src))
            for name, sql in _INSERT.items():  # in order: every insert before the updates that follow it
                if name == "frees" and staging:
                    con.execute(_FREES.format(src=src))
                if rows[name] and name != "tensor_specs":
                    con.executemany(sql, rows[name])
            max_buffer_id = self._max_buffer_id
            if staging:
                for sql in (_STACK_TRACES, _OPERATION_GRAPHS):
                    con.execute(sql.format(src=src))
                for sql in _PER_OP_GRAPHS if self._per_op_graphs else ():
                    con.execute(sql)
                con.execute(_LIVE_NEW, (max_buffer_id, joined))
                if joined:
                    con.execute(_BUFFERS_JOIN)
                    con.execute(_LIVE_FREED_NEW, (max_buffer_id,))
                con.execute(_LIVE_FREED.format(src=src), (max_buffer_id,))
            if rows["frees"]:
                con.executemany("DELETE FROM temp.live_buffers WHERE buffer_id = ?", [
                    (free[_FREE_BUFFER_ID],) for free in rows["frees"] if free[_FREE_BUFFER_ID] <= max_buffer_id])
            if staging:
                if src == _FED_STAGING:
                    self._feeder.feed(None)  # read no more
                if joined or self._per_op_graphs or src == _STAGED:
                    con.execute("DELETE FROM temp.op_staging")
                for name, head in _FED.items():
                    if rows[name]:
                        self._insert_spread(head, rows[name])
                if rows["operation_arguments"]:
                    self._insert(_ARGUMENTS, rows["operation_arguments"], _ARGUMENT_ROW)
                if not joined:
                    self._insert_joined(_BUFFERS, rows["buffers"])
                max_buffer_id = con.execute("SELECT MAX(buffer_id) FROM main.buffer_lifetimes").fetchone()[0] or 0
            for (table, cols), values in rows["other"].items():
                self._insert(f"INSERT INTO {table} ({', '.join(cols)})", values)
            forget = len(self._graph_ids) > MAX_GRAPHS
            if forget:
                for table in ("graph_texts", "graph_nodes", "graph_edges"):
                    con.execute(f"DELETE FROM temp.{table}")
            con.execute("COMMIT")
            if forget:
                self._graph_ids.clear()
                self._graph_keys.clear()
            self._max_buffer_id = max(max_buffer_id, self._max_buffer_id)
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise

    def _stage(self, staging: list, narrow: bool) -> str:
        """Where the batch's staging rows are read ({src} of _SPREAD and the rest): temp.op_rows fed with them, or,
        without the Feeder, temp.op_staging with them inserted. `narrow`: a join reads temp.op_staging too (_NARROW)."""
        if not self._feeder:
            self._insert(f"INSERT INTO {_STAGED}", staging)
            return _STAGED
        self._feeder.feed(staging)
        if narrow:
            self.con.execute(_NARROW)
        return _FED_STAGING

    def _start_feeder(self):
        """The _rows.Feeder on self.con, or False: the rows go one INSERT each."""
        if not ROWS:
            return False
        try:
            feeder = _rows.Feeder(self.con, str(self.db_path))
            self.con.execute(_OP_ROWS)  # outside a batch: a rolled-back one would drop it
            return feeder
        except (RuntimeError, ValueError, TypeError, sqlite3.Error):
            # The sqlite3 module runs another SQLite than the one _rows links, or the connection is not to the file
            # (a db opened by URI): executemany writes the same rows, as without _rows.
            return False

    def _make_row_tables(self, widths) -> None:
        """A temp.rows_<width> virtual table for each width not made yet: before the batch's BEGIN, since a
        rolled-back batch would drop a table made inside it."""
        for width in set(widths) - self._row_tables:
            columns = ", ".join(f"c{i}" for i in range(width))
            self.con.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.rows_{width} USING ttreport_rows({columns})")
            self._row_tables.add(width)

    def _insert(self, head: str, rows: list, select: str | None = None) -> None:
        """`head` ("INSERT INTO t (a, b)") for each of `rows`, or of what `select` makes of each ("{1}, {0}": SQL over
        the row's values by position): through the virtual table of their width when _rows is there (one statement a
        batch: the staging rows' 4.3-4.6 -> 1.4-1.6 µs of the writer process's CPU an op, 20,000 adds; bench/README.md
        issue 33), else one INSERT a row (executemany, the specification)."""
        width = len(rows[0])
        fed = self._feeder and width in self._row_tables
        if select is None:
            select = ", ".join(f"{{{i}}}" for i in range(width))
        values = select.format(*(f"c{i}" if fed else f"?{i + 1}" for i in range(width)))
        if not fed:
            self.con.executemany(f"{head} SELECT {values}", rows)
            return
        self._feeder.feed(rows)
        try:
            self.con.execute(f"{head} SELECT {values} FROM temp.rows_{width}")
        finally:
            self._feeder.feed(None)

    def _insert_spread(self, head: str, pairs: list) -> None:
        """`head` ("INSERT INTO t (key, index, value)") for each value of each (key, values) pair, indexed from 0:
        through _rows' feed_spread (the rows made in C), else one INSERT a row (executemany, the specification)."""
        if not self._feeder or 3 not in self._row_tables:
            self.con.executemany(f"{head} VALUES (?, ?, ?)",
                                 [(key, i, v) for key, values in pairs for i, v in enumerate(values)])
            return
        self._feeder.feed_spread(pairs)
        try:
            self.con.execute(f"{head} SELECT * FROM temp.rows_3")
        finally:
            self._feeder.feed(None)

    def _insert_joined(self, head: str, pairs: list) -> None:
        """`head` for the rows (key, *row) of each (key, rows) pair: through _rows' feed_joined (the rows made in C),
        else one INSERT a row. The rows of a pair are one width (each op's live buffers: _rows.Items)."""
        width = next((len(each[0]) + 1 for _, each in pairs if each), None)
        if width is None:
            return
        if not self._feeder or width not in self._row_tables:
            self.con.executemany(f"{head} VALUES ({', '.join('?' * width)})",
                                 [(key, *row) for key, each in pairs for row in each])
            return
        self._feeder.feed_joined(pairs)
        try:
            self.con.execute(f"{head} SELECT * FROM temp.rows_{width}")
        finally:
            self._feeder.feed(None)

    def _count_lost(self, batch: list) -> None:
        self.records_lost += len(batch)
        self.ops_lost += sum(1 for item in batch if item[0] == OP)

    def _fail(self, e: Exception) -> None:
        if self.error is None:
            self.error = e
            self.warner.warn(f"ttreport: could not write to {self.db_path} ({type(e).__name__}: {e}); what was "
                             f"committed is kept")

    def follow_lifetimes(self) -> None:
        """Keep tensor_lifetime's rows as the capture goes, beside the report (_LifetimesAside): for the writer
        process's own capture, whose db is in WAL mode, in a process that does not fork (a thread inside SQLite at a
        fork would leave the child its locks)."""
        if self.con is not None and self._lifetimes is None:
            self._lifetimes = _LifetimesAside(self.db_path, follow=True)

    def _close(self) -> None:
        aside, started = self._lifetimes or _LifetimesAside(self.db_path, follow=False), time.perf_counter()
        part = _Parts(self.close_parts)
        beside = False
        try:
            beside = aside.start(self.con)
            if SORT_THREADS:
                self.con.execute("PRAGMA temp_store=FILE")
                self.con.execute(f"PRAGMA threads={SORT_THREADS}")
            try:
                db.create_indexes(self.con)
            except sqlite3.OperationalError:
                if not SORT_THREADS:
                    raise
                # The threaded sorts spill to SQLite's temp folder (a full /tmp: "database or disk is full"); the
                # one-thread sort in memory needs none of it, as before SORT_THREADS. create_indexes rolled back.
                self.con.execute("PRAGMA threads=0")
                self.con.execute("PRAGMA temp_store=MEMORY")
                db.create_indexes(self.con)
            part("indexes")
            with self.con:  # after the indexes, which their joins use
                if beside and aside.copy_into(self.con):
                    for sql in _AFTER_LIFETIMES:
                        self.con.execute(sql)
                else:
                    for sql in AT_CLOSE:
                        self.con.execute(sql)
            part("lifetimes")  # (with an aside: the wait for it, and the copy)
            # A reader mid-query (ttreport query, a Report) is waited for briefly, not for SQLite's 5 s.
            self.con.execute(f"PRAGMA busy_timeout = {CLOSE_WAIT_MS}")
            if self.con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0:
                # A closed report is one plain file: it can be copied alone and read from read-only media.
                self.con.execute("PRAGMA journal_mode=DELETE")
            # else a reader still holds a snapshot: every batch is committed in the WAL, which stays (readable)
            part("checkpoint")
        except sqlite3.Error as e:
            # Busy: a reader came in before the journal switch (WAL readers never block the index writes).
            if getattr(e, "sqlite_errorcode", None) != sqlite3.SQLITE_BUSY:
                self._fail(e)
        finally:
            aside.discard()
            if beside:
                self.close_parts["lifetimes aside"] = [aside.wall_s, aside.cpu_s]
            if aside.follow_s:  # not the close's: the passes' CPU during the capture
                self.close_parts["lifetimes passes during the capture"] = [aside.follow_wall_s, aside.follow_s]
            self.con.close()
            self.close_s = time.perf_counter() - started

    # -- records to rows ---------------------------------------------------------------------
    def _captured_graph(self, op: Op, rows) -> int | None:
        """The graph_id of the op's captured graph, from the programs it launched (None: no row, as for a host op);
        a graph not seen before is queued for the temp tables."""
        programs = self._programs.pop(op.operation_id, None)
        l1 = self._l1_allocs.pop(op.operation_id, ())
        parent = op.parent_operation_id
        for a in l1:
            if programs is None and parent is not None:  # a nested op's buffers are its caller's (linear's add)
                self._l1_allocs.setdefault(parent, []).append(a)
                self._l1_owner[a[_ALLOC_BUFFER_ID]] = parent
            else:
                self._l1_owner.pop(a[_ALLOC_BUFFER_ID], None)
        if programs is None:
            return None
        # A model repeats a few graphs (same op, programs and output placement): each is built once, found again by
        # its programs' CBs and core ranges by identity: the log's PROG definition made them once (LogTail._decode),
        # and hashing them as nested tuples every op was half of this method (0.99 -> 0.59 µs an op for a key,
        # timeit). The cache holds the programs, so no id in a key is reused while it is kept. The program id is not
        # in the text (TT-NN's graph has none), so it stays out of the key.
        key = (op.name, tuple([(id(p.cbs), id(p.ranges), p.name, p.device_id, p.cb_base) for p in programs]),
               tuple([a[_ALLOC_PLACE] for a in l1]))
        hit = self._graph_keys.get(key)
        if hit is not None:
            return hit[0]
        text = device_graph.captured_graph(op.name, programs, l1)
        graph_id = self._graph_ids.get(text)
        if graph_id is None:
            graph_id = self._graph_ids[text] = device_graph.graph_id(text)
            rows["graphs"].append((graph_id, text))
            if self._per_op_graphs:
                nodes, edges = device_graph.graph_rows(text)
                rows["graph_nodes"].extend((graph_id, *n) for n in nodes)
                rows["graph_edges"].extend((graph_id, source, sink, i) for source, sink, i, _, _ in edges)
        # Bounded: each key holds its programs, and a log written before PROG records (a killed capture's, finished by
        # this version) has new core-range tuples every op, so its keys never repeat.
        if len(self._graph_keys) >= MAX_GRAPH_KEYS:
            self._graph_keys.clear()
        self._graph_keys[key] = (graph_id, programs)
        return graph_id

    def _drop_l1_alloc(self, buffer_id: int) -> None:
        """A buffer freed before its op's graph is written is not in it (linear's float32 intermediate)."""
        op = self._l1_owner.pop(buffer_id, None)
        if op is not None:
            pending = self._l1_allocs.get(op, [])
            pending[:] = [a for a in pending if a[_ALLOC_BUFFER_ID] != buffer_id]

    def _op(self, rec: Op, rows, new_stacks, new_specs) -> tuple:
        """The op's staging row up to its buffer slots; its tensor ids' rows, other new tensors, stack text, files
        and error go to `rows`."""
        op_id, frames, specs, files = rec.operation_id, rec.stack, rec.specs, rec.files
        args, kwargs, inputs, outputs = rec.args, rec.kwargs, rec.inputs, rec.outputs
        stack_id = None
        if frames:
            stack_id = self._stacks.get(frames)
            if stack_id is None:
                stack_id = self._stacks[frames] = len(self._stacks) + 1
                new_stacks.append(frames)
                rows["stack_trace_texts"].append((stack_id, self.format_stack(frames), self._source_file(frames, rows)))
        tensor = _NO_TENSOR
        if specs:
            file_of = {f[0]: f[1] for f in files} if files else None
            tensor_row = self._tensor_row
            for spec in specs:
                row = tensor_row(spec, file_of.pop(spec[0], None) if file_of else None, rows, new_specs)
                if tensor is _NO_TENSOR:
                    tensor = row  # the op's row carries one; any others are bound on their own
                else:
                    rows["tensor_records"].append(row)
            if file_of:  # stored now, spec recorded by an earlier op
                rows["files"].extend((rel, tid) for tid, rel in file_of.items())
        elif files:
            rows["files"].extend((f[1], f[0]) for f in files)
        # JSON of cached pieces (json.dumps costs 3x more): an array for positional arguments only, else an
        # object of name -> value; a tensor is its id, anything else its text. And each argument's row (_ARGUMENTS).
        arguments = None
        if args or kwargs:
            argument, argument_rows, parts = self._argument, rows["operation_arguments"], []
            named = [(str(i), a) for i, a in enumerate(args)]
            if kwargs:
                named.extend(kwargs.items())
            for name, v in named:
                json, text, tid = argument(v)
                parts.append(f"{_json_str(name)}:{json}" if kwargs else json)
                argument_rows.append((op_id, name, text, tid))
            arguments = "{" + ",".join(parts) + "}" if kwargs else "[" + ",".join(parts) + "]"
        if self._live is not None:
            for buf in self._live.values():
                if buf.buffer_type == BufferType.L1:
                    rows["buffer_pages"].extend(self._pages(op_id, buf))
        status = "ok"
        if rec.error is not None:
            status = "error"
            error_type, message, tb, timestamp = rec.error  # records.Error
            text = (f"Op called from (most recent call last):\n{self.format_stack(frames, innermost_first=False)}\n"
                    if frames else "")
            text += "".join(tb.format())
            rows["errors"].append((op_id, rec.name, error_type, message, text, timestamp))
        # input_tensors' and output_tensors' rows, one (operation_id, tensor ids) pair each (_FED): JSON arrays in the
        # staging row spread by json_each took 0.6 µs an op of Python and 1.9 of SQL (20,000 adds; bench/README.md,
        # cwriter3).
        if inputs:
            rows["input_tensors"].append((op_id, inputs))
        if outputs:
            rows["output_tensors"].append((op_id, outputs))
        return (*_OP_FIELDS(rec), status, stack_id, arguments, *tensor)  # _STAGING_COLUMNS' order

    def _pages(self, op_id: int, buf):
        """Each page of an L1 buffer, where it lies: interleaved round-robin over the banks, or one shard
        of consecutive pages per core of its shard grid (buf.cores), banks numbered row-major over the worker grid."""
        grid_x = self._grid_x.get(buf.device_id, 1)
        per_bank = max(buf.max_size_per_bank // buf.page_size, 1)
        sharded = buf.buffer_layout != TensorMemoryLayout.INTERLEAVED
        cores = getattr(buf, "cores", None)
        for i in range(buf.num_pages):
            bank, slot = (i // per_bank, i % per_bank) if sharded else (i % buf.num_banks, i // buf.num_banks)
            if cores:
                x, y = cores[bank]
                bank = y * grid_x + x
            yield (op_id, buf.device_id, buf.address, bank // grid_x, bank % grid_x, bank, i,
                   buf.address + slot * buf.page_size, buf.page_size, int(buf.buffer_type))

    def _tensor_row(self, spec, file, rows, new_specs) -> tuple:
        tid, shape, dtype, layout, cfg = spec[:5]  # records.Spec: the rest is copied as it is (_SPEC_FIELDS)
        key = (shape, dtype, layout, cfg)
        hit = self._specs.get(key)
        if hit is None:
            hit = self._new_spec(key, shape, dtype, layout, cfg, rows, new_specs)
        spec_of = self._spec_of
        if len(spec_of) >= MAX_SPEC_OF:
            _halve(spec_of)
        spec_of[tid] = hit[2]
        self._first_spec(tid, hit[2])
        return _SPEC_FIELDS(spec) + (hit[0], file)

    def _first_spec(self, tid: int, texts: tuple) -> None:
        """Keep a tensor's spec texts for its argument text (Writer._argument_text) if this is its first spec, the one
        its tensors row keeps (INSERT OR IGNORE). A tensor not kept at or below self._arg_floor[0] may have been
        forgotten (the older half past MAX_SPEC_OF) or rolled back: its arguments' texts are rendered in SQL."""
        arg_texts = self._arg_texts
        if tid in arg_texts or tid <= self._arg_floor[0]:
            return
        if len(arg_texts) >= MAX_SPEC_OF:
            self._arg_floor[0] = max(self._arg_floor[0], *itertools.islice(arg_texts, len(arg_texts) // 2))
            _halve(arg_texts)
        arg_texts[tid] = texts

    def _argument_text(self, tid: int) -> str | None:
        """A tensor argument's text from its first spec (rendered once), or None: SQL renders it (_ARGUMENT_ROW)."""
        texts = self._arg_texts.get(tid)
        if texts is None or type(texts) is str:
            return texts
        text = self._arg_texts[tid] = _render_tensor(tid, texts)
        return text

    def _new_spec(self, key, shape, dtype, layout, cfg, rows, new_specs) -> tuple:
        tile = None
        if type(layout) is tuple:  # (layout, tile height, width): a tile other than 32x32 (recorder._layout_key)
            layout, tile = layout[0], Tile(layout[1:])
        if shape is None:
            shape_text = pshape_text = pdims = None
        else:
            dims = list(shape)
            pdims = list(padded(dims, Layout(layout), tile))
            shape_text, pshape_text = f"Shape({dims})", f"Shape({pdims})"
        cfg_text = placement = None
        if cfg is not None:
            cfg = self.defs.memory_config(cfg)
            # A placed sharded tensor's text carries the NdShardSpec its TensorSpec derives, as TT-NN 0.81's does.
            cfg_text = repr(cfg) if pdims is None or not cfg.is_sharded() else cfg.tensor_text(pdims)
            placement = f"{cfg.buffer_type.name} {cfg.memory_layout.name}"
        return self._add_spec(key, None, (shape_text, self._dtype_text[dtype], self._layout_text[layout], cfg_text,
                                         pshape_text, placement), rows, new_specs)

    def _add_spec(self, key, cfg, texts: tuple, rows, new_specs) -> tuple:
        """Number a new spec (shape, dtype, layout, memory config, padded shape, placement texts) and queue its row."""
        spec_id = next(self._spec_ids)
        shape, dtype, layout, _, _, placement = texts
        hit = self._specs[key] = (spec_id, cfg, (shape, dtype, layout, placement or "host"))
        new_specs.append(key)
        rows["tensor_specs"].append((spec_id, *texts))
        return hit

    def _host_tensor_row(self, rec, rows, new_specs) -> tuple:
        _, tid, shape, dtype_text, producer, file = rec
        key = (shape, dtype_text)
        hit = self._specs.get(key)
        if hit is None:
            hit = self._add_spec(key, None, (f"Shape({list(shape)})", dtype_text, None, None, None, None), rows,
                                 new_specs)
        self._first_spec(tid, hit[2])
        row = _HOST_TENSOR.copy()
        row[_HOST_TENSOR_AT[0]], row[_HOST_TENSOR_AT[1]] = tid, producer
        return (*row, hit[0], file)

    def _tensor_text(self, tid: int) -> str:
        """A tensor argument's text inside a list argument, as _TENSOR_TEXT renders a plain one in SQL: from its spec's
        texts (self._spec_of; else this batch's rows, not in the db yet; else the db), or by its id alone when it has
        no row or its spec no dtype or layout (a host tensor's: SQL's || of a NULL is NULL)."""
        tid = int(tid)
        texts = self._spec_of.get(tid) or self._pending_texts(tid)
        if texts is None:
            texts = self.con.execute(
                "SELECT s.shape, s.dtype, s.layout, COALESCE(s.placement, s.memory_config, 'host') FROM tensors r "
                "JOIN tensor_specs s ON s.spec_id = r.spec_id WHERE r.tensor_id = ?", (tid,)).fetchone()
        return _render_tensor(tid, texts)

    def _pending_texts(self, tid: int) -> tuple | None:
        """The spec texts of a tensor whose row this batch holds (self._pending: its staging rows and other tensor
        rows), which the bounded _spec_of may have dropped already; None if it holds none. Rare: a scan."""
        staging, others = self._pending
        rows = [row[_STAGING_TENSOR] for row in staging] + others
        spec_id = next((row[_SPEC_ID_AT] for row in reversed(rows) if row[_TENSOR_ID_AT] == tid), None)
        if spec_id is None:  # not this batch's: the db has it (the specs' scan below would find nothing)
            return None
        return next((texts for number, _, texts in self._specs.values() if number == spec_id), None)

    # -- formatting -------------------------------------------------------------------------
    def _argument(self, v) -> tuple:
        """An argument as (its JSON, its operation_arguments text, its tensor id): a tensor as its id (a number in the
        JSON; its text None where SQL renders it), anything else as its text (a string in the JSON; no id)."""
        t = type(v)
        if t is TensorArg:
            tid = int(v)
            return int.__repr__(v), self._argument_text(tid), tid
        # Immutable values are formatted once: by value for the common scalars, by id (the object held,
        # so the id stays unique) for the rest; lists are formatted each time (they may hold tensors).
        if t is float:  # 0.0 == -0.0 and nan != nan: never a cache key
            text = repr(v)
            return _json_str(text), text, None
        key = (t, v) if t is int or t is bool or t is str or v is None else id(v)
        hit = self._texts.get(key)
        if hit is not None and (type(key) is tuple or hit[1] is v):
            return hit[0], hit[2], None
        text = self.format_value(v)
        if not text.isascii():  # a lone surrogate (an object's repr) has no UTF-8: '?' (json_each wrote its 3 bytes,
            # which no reader decoded)
            text = text.encode("utf-8", "replace").decode()
        json = _json_str(text)
        if t is not list and t is not tuple:
            if len(self._texts) >= MAX_CACHED:
                _halve(self._texts)
            self._texts[key] = (json, v, text)
        return json, text, None

    def format_value(self, v) -> str:
        t = type(v)
        if t is int or t is float or t is bool or v is None:
            return repr(v)
        if t is TensorArg:
            return self._tensor_text(v)
        if type(v) in (list, tuple):
            inner = ", ".join(self.format_value(e) for e in v)
            text = f"[{inner}]" if type(v) is list else f"({inner}{',' if len(v) == 1 else ''})"
        elif isinstance(v, torch.Tensor):
            text = f"torch.Tensor(shape={list(v.shape)}, dtype={v.dtype})"
        else:
            text = repr(v)
        return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "..."

    def format_stack(self, frames: tuple, *, innermost_first: bool = True) -> str:
        """The frames as TT-NN stores an op's stack: traceback.format_stack()'s entries ('  File "...", line N,
        in f' and the source line), innermost first, joined by newlines (so the user's line that called the op
        comes first: the visualizer labels the op with the first File and line). innermost_first=False gives a
        Python traceback's order, for an error's text."""
        entries = []
        for i in range(0, len(frames), 2):
            code = self.defs.code(frames[i])
            lineno = frames[i + 1]
            entry = f'  File "{code.co_filename}", line {lineno}, in {code.co_name}\n'
            source = linecache.getline(code.co_filename, lineno).strip() if self.defs.read_sources else ""
            if source:
                entry += f"    {source}\n"
            entries.append(entry)
        if innermost_first:
            return "\n".join(entries)
        return "".join(reversed(entries)).rstrip("\n")

    def _source_file(self, frames: tuple, rows) -> int | None:
        """The source_files id of the innermost frame's file, adding its row (path and contents) the first time
        the file is seen; None when it cannot be read (an interactive session's '<stdin>') or may not be (a log
        from a folder: Definitions.read_sources)."""
        path = self.defs.code(frames[0]).co_filename
        if path in self._source_files:
            return self._source_files[path]
        lines = linecache.getlines(path) if self.defs.read_sources else []
        file_id = None
        if lines:
            file_id = len(self._source_files) + 1
            rows["source_files"].append((file_id, path, "".join(lines)))
        self._source_files[path] = file_id
        return file_id


class _Parts:
    """Each call notes the wall and this thread's CPU seconds since the one before under a name (Writer.close_parts:
    bench/capture_overhead.py prints them beside the close they split)."""

    def __init__(self, into: dict):
        self.into = into
        self.wall, self.cpu = time.perf_counter(), time.thread_time()

    def __call__(self, name: str) -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        self.into[name] = [wall - self.wall, cpu - self.cpu]
        self.wall, self.cpu = wall, cpu


def _render_tensor(tid: int, texts: tuple | None) -> str:
    """A tensor argument's text from its spec's texts (shape, dtype, layout, placement or 'host'), as _TENSOR_TEXT
    renders it from its row in SQL: by its id alone when it has no row or its spec no dtype or layout (a host tensor's:
    SQL's || of a NULL is NULL)."""
    if texts is None or texts[1] is None or texts[2] is None:
        return f"ttnn.Tensor(id={tid})"
    shape, dtype, layout, where = texts
    return f"ttnn.Tensor(id={tid}, shape={shape}, dtype={dtype}, layout={layout}, {where})"


def _halve(cache: dict) -> None:
    """Drop the older half of a bounded cache (dicts keep insertion order)."""
    for key in list(itertools.islice(cache, len(cache) // 2)):
        del cache[key]
