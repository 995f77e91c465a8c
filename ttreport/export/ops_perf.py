"""TT-NN's performance report files for a capture: ops_perf_results.csv and profile_log_device.csv.

    import ttreport
    from ttreport.export.ops_perf import export_ops_perf
    with ttreport.open("sample_reports/demo") as r:
        export_ops_perf(r, "/tmp/demo_perf")     # or `ttreport perf-csv REPORT [FOLDER]`

`ops_perf_results.csv` has the columns tt-metal's tools/tracy/process_ops_logs.py writes
(OPS_CSV_HEADER, with INPUT_i_* / OUTPUT_i_* per tensor) and TT-NN's rows: one per device operation
per chip, named as TT-NN names it (OP CODE "MatmulDeviceOperation"), in launch order. The device
operations are the programs of each op's captured graph (ttreport.capturing.device_graph, kept for
every op with Config(device_graphs="distinct"), the default), so an op with no program (from_torch,
to_torch, a view, deallocate) has no row, and a mesh op has one per chip. ttnn-visualizer pairs these
rows, in order and by name, with the device operations of each op's graph: the link between a memory
report and its performance report. GLOBAL CALL COUNT is TT-NN's device operation id: the launch's
number times 1,024 plus the chip (CALL_COUNT_CHIP_BITS). The op's device time estimate
(docs/perf_model.md) is each chip's, shared evenly by the programs the op launched on that chip: its
"PM IDEAL/COMPUTE/BANDWIDTH [ns]" and, as device_sim has no device clock, "DEVICE KERNEL DURATION
[ns]" too. `profile_log_device.csv` is the device log ttnn-visualizer requires beside it (its ARCH
line, then a zone start and end per row on core (1, 1) of its chip, its run host ID the row's GLOBAL
CALL COUNT, each chip's rows end to end).

This is the one code route that writes them: a capture's close (Config.perf_files) and `ttreport
perf-csv` both call export_ops_perf on the committed db (bench/README.md, "perf rows": why the writer
process no longer renders them as ops commit). A capture's close also runs a Chase while it waits for its
writer process: the same rows, of the ops committed so far, rendered range by range from the same db.
"""

from __future__ import annotations

import csv
import gc
import io
import json
import os
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import NamedTuple

from ttreport import outfile
from ttreport.errors import ReportError
from ttreport.folder import DEVICE_LOG_FILE, PERF_FILE

__all__ = ["CALL_COUNT_CHIP_BITS", "Chase", "DEVICE_LOG_FILE", "DEVICE_LOG_HEADER", "OPS_CSV_HEADER", "PERF_FILE",
           "TENSOR_FIELDS", "DeviceOperation", "device_operations", "export_ops_perf"]

# tt-metal's OPS_CSV_HEADER, in its order; INPUTS/OUTPUTS are replaced by the per-tensor columns.
OPS_CSV_HEADER = [
    "OP CODE", "OP TYPE", "GLOBAL CALL COUNT", "DEVICE ID", "ATTRIBUTES", "MATH FIDELITY", "CORE COUNT",
    "PARALLELIZATION STRATEGY", "HOST START TS", "HOST END TS", "HOST DURATION [ns]", "DEVICE FW START CYCLE",
    "DEVICE FW END CYCLE", "DEVICE FW DURATION [ns]", "DEVICE KERNEL DURATION [ns]",
    "DEVICE BRISC KERNEL DURATION [ns]", "DEVICE NCRISC KERNEL DURATION [ns]", "DEVICE TRISC0 KERNEL DURATION [ns]",
    "DEVICE TRISC1 KERNEL DURATION [ns]", "DEVICE TRISC2 KERNEL DURATION [ns]", "DEVICE ERISC KERNEL DURATION [ns]",
    "DEVICE COMPUTE CB WAIT FRONT [ns]", "DEVICE COMPUTE CB RESERVE BACK [ns]", "INPUTS", "OUTPUTS",
    "COMPUTE KERNEL PATH", "COMPUTE KERNEL HASH", "DATA MOVEMENT KERNEL PATH", "DATA MOVEMENT KERNEL HASH",
    "PM IDEAL [ns]", "PM COMPUTE [ns]", "PM BANDWIDTH [ns]", "PM REQ I BW", "PM REQ O BW",
]
TENSOR_FIELDS = ("W", "Z", "Y", "X", "LAYOUT", "DATATYPE", "MEMORY")
DEVICE_LOG_HEADER = ["PCIe slot", "core_x", "core_y", "RISC processor type", "timer_id", "time[cycles since reset]",
                     "stat value", "run ID", "run host ID", "zone name", "type", "source line", "source file"]
# GLOBAL CALL COUNT = (the device operation's launch number << 10) | its chip: TT-NN's first MatmulDeviceOperation on
# an 8-chip mesh is 1024..1031 on chips 0..7 (tt-perf-report tests/data/bh_8xp150_deepseek_v3_d_p.csv), a one-chip
# run's ops 1024, 2048, ... (tests/data/wh_clip_encoder_2.csv).
CALL_COUNT_CHIP_BITS = 10


class DeviceOperation(NamedTuple):
    """One program of an op's captured graph: the device operation a perf row is named after."""

    name: str  # "MatmulDeviceOperation", as device_sim's program model names it (device_work.Program.name)
    device_id: int  # the chip it ran on
    cores: int | None  # the cores its CBs live on (None: a program with no CB)


_RANGE = re.compile(r"\[(\d+)-(\d+) - (\d+)-(\d+)\]")  # device_work.range_text's '[x0-y0 - x1-y1]'


def device_operations(text: str) -> list[DeviceOperation]:
    """The device operations of a captured graph's JSON text (ttreport.capturing.device_graph.captured_graph's), in
    launch order: each nested function_start that names a chip, as ttnn-visualizer counts them (its names have no
    '::'). The visualizer links a perf row to each, in order, by name. Here, not beside the graph's builder: the
    reading side reads it, and capturing/ sits above export/. A text that is not such a graph (a report is input:
    edited, damaged, nested past the parser's depth) is a ValueError."""
    try:
        return _device_operations(text)
    except (TypeError, KeyError, IndexError, AttributeError, RecursionError) as e:
        raise ValueError(f"{type(e).__name__}: {e}") from None


def _device_operations(text: str) -> list[DeviceOperation]:
    nodes = json.loads(text)
    out = []
    for n in nodes:
        params = n.get("params", {})
        if n["node_type"] != "function_start" or "device_id" not in params:
            continue
        cores = None
        for child in n["connections"]:
            ranges = nodes[child]["params"].get("core_range_set")
            if ranges is not None:  # every CB of a program lives on the program's cores
                cores = sum((x1 - x0 + 1) * (y1 - y0 + 1) for x0, y0, x1, y1 in
                            ((int(v) for v in r) for r in _RANGE.findall(ranges)))
                break
        out.append(DeviceOperation(params["name"], int(params["device_id"]), cores))
    return out


def _tensor_fields(shape, layout, dtype, buffer_type, memory_config, device_id) -> tuple:
    """A tensor's seven INPUT_i_*/OUTPUT_i_* values (TENSOR_FIELDS), from its `tensors` row's texts. A mesh
    tensor's row names no chip: TT-NN writes DEV_0 for it on every chip (the deepseek file's rows of chip 5).
    A damaged row's number or BLOB where a text belongs is taken as its text (`ttreport check` names the row)."""
    shape, layout, dtype, memory_config = (x if isinstance(x, str) else "" if x is None else str(x)
                                           for x in (shape, layout, dtype, memory_config))
    dims = [int(n) for n in re.findall(r"\d+", shape)]
    dims = ([1] * (4 - len(dims)) + dims)[-4:] if len(dims) <= 4 else [_prod(dims[:-3]), *dims[-3:]]
    if buffer_type is None:
        memory = "HOST"
    else:
        kind = re.search(r"TensorMemoryLayout::(\w+)", memory_config)
        memory = (f"DEV_{device_id or 0}_{'L1' if buffer_type == 1 else 'DRAM'}_"
                  f"{kind.group(1) if kind else 'INTERLEAVED'}")
    return (*dims, layout.rsplit(".", 1)[-1], dtype.rsplit(".", 1)[-1], memory)


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


class _Fields:
    """Each tensor's fields, worked out once per distinct (spec, buffer type, device): a run's tens of
    thousands of tensors share a handful of specs, and parsing their texts per tensor was most of the
    export's time (47 ms of the 50 ms budget per 1,000 ops). A spec's texts are one `tensor_specs` row,
    copied into every `tensors` row that names it, so the first tensor of a key speaks for the rest.
    Each distinct tensor is a small number; an op's inputs and outputs, a tuple of them."""

    def __init__(self):
        self.numbers: dict[tuple, int] = {}
        self.fields: list[tuple] = []  # by number: the seven TENSOR_FIELDS values

    def number(self, r, tensor_id, spec_id, buffer_type, device_id) -> int:
        key = (spec_id, buffer_type, device_id) if spec_id is not None else (None, tensor_id)
        n = self.numbers.get(key)
        if n is None:
            row = r.execute("SELECT shape, layout, dtype, buffer_type, memory_config, device_id FROM tensors "
                            "WHERE tensor_id = ?", (tensor_id,)).fetchone()
            n = self.numbers[key] = len(self.fields)
            self.fields.append(_tensor_fields(*row))
        return n


def export_ops_perf(r, folder: str | os.PathLike, *, chased: Chase | None = None) -> Path:
    """Write ops_perf_results.csv and profile_log_device.csv for report `r` into `folder`; returns the CSV's path.
    `chased`: a Chase that rendered the rows of the ops committed while the writer process wrote the rest; those
    are kept when nothing they read has changed since, and only the ops after them are rendered here (none, when
    the chase wrote the files itself into `folder`: Chase.written)."""
    # The cyclic collector paused while it runs: an op's two link lists are GC-tracked, and the full collections
    # their millions set off walked them all again and again (1.65-1.73 -> 1.44 s of CPU on a 200,000-op
    # report). Nothing made here holds a cycle; refcounting frees it all.
    collecting = gc.isenabled()
    gc.disable()
    try:
        if chased is not None:
            chased.stop()
            if chased.written is not None and chased.written.parent == Path(folder):
                return chased.written  # it wrote both, once the writer had committed the whole log
        rows = chased.rows_for(r) if chased is not None else None
        if rows is not None:
            rows.render(rows.read(r))
            if rows.stale:  # an op after the chased ones has more tensors than they made room for
                rows = None
        if rows is None:
            rows = _Rows()
            rows.render(rows.read(r))
        return rows.write(folder)
    finally:
        if collecting:
            gc.enable()


# An op's keyword arguments (not its tensors, nor the device), its ATTRIBUTES: the nearest device_sim has to TT-NN's
# device operation attributes (a matmul's program_config, compute_kernel_config, transpose_a, ...).
_ATTRIBUTES_SQL = ("SELECT a.operation_id, a.name, a.value FROM operation_graphs g JOIN operation_arguments a "
                   "USING (operation_id) WHERE a.operation_id > ? AND a.operation_id <= ? "
                   "AND a.name NOT GLOB '[0-9]*' AND a.name != 'device' "
                   "AND a.value NOT LIKE 'ttnn.Tensor(%' ORDER BY a.operation_id, a.name")
_QUOTED = re.compile(r"'(.*)'|\"(.*)\"", re.S)
# a time that is not an integer (an edited or damaged report) is left blank, as the readers leave it out
_START, _END, _COMPUTE, _BANDWIDTH, _IDEAL = (f"CASE WHEN typeof({c}) = 'integer' THEN {c} END" for c in (
    "o.start_ns", "o.end_ns", "p.compute_ns", "p.bandwidth_ns", "p.ideal_ns"))
_OPS_SQL = (f"SELECT o.operation_id, {_START}, {_END}, g.graph_id, {_COMPUTE}, {_BANDWIDTH}, {_IDEAL}, "
            "p.math_fidelity FROM operation_graphs g JOIN operations o USING (operation_id) "
            "LEFT JOIN device_perf p USING (operation_id) WHERE o.operation_id > ? AND o.operation_id <= ? "
            "ORDER BY o.operation_id")  # o's, not g's: SQLite walks o in id order, and sorted g's ids in a temp b-tree
_LAST = (1 << 63) - 1  # past any op id: "to the end"


def _attributes(pairs: list) -> str:
    """TT-NN's ATTRIBUTES text of (name, value) pairs: its dict as str() writes it, with every ',' a ';' (as
    process_ops_logs writes it: {'eps': '1e-05'; 'output_mem_config': 'MemoryConfig(...;...)'})."""
    items = []
    for name, value in pairs:
        quoted = _QUOTED.fullmatch(value or "")
        value = next(g for g in quoted.groups() if g is not None) if quoted else value
        items.append(f"'{name}': '{value}'")
    return ("{" + "; ".join(items) + "}").replace(",", ";").replace("\n", " ")


class _Rows:
    """The two files' lines, rendered op range by op range: read() what a range of ops needs from the db (in one
    read transaction, when the caller holds one), render() it, and write() the files once every op is rendered.
    One call of each for a committed report; a Chase calls read and render range by range while the writer
    process still writes, and the close renders the rest. A row depends on the rows before it (its call count,
    host time and device clock), so ranges are rendered in op id order; `stale` says that what a later range
    found (more tensor columns, another grid) makes the rows rendered so far wrong."""

    def __init__(self):
        self.grid: int | None = None  # the CORE COUNT of a program with no CB: the devices' compute grid
        self.graphs: dict[int, list] = {}  # graph id -> its device operations
        self.plans: dict[int, tuple] = {}  # graph id -> _plan(): a model repeats a few graphs
        self.fields = _Fields()
        self.number: dict[int, int] = {}  # tensor id -> its fields' number
        self.max_tensor: int | None = None  # the highest tensor id read (None: none read yet)
        self.unresolved: set[int] = set()  # tensor ids an op linked with no `tensors` row when its range was read
        self.columns_of: dict[tuple, str] = {}  # (inputs, outputs) -> their columns as CSV text with a leading comma
        self.lines: list[str] = []
        self.log: list[str] = []
        self.n_in = self.n_out = 0  # the most inputs and outputs of an op so far: the header's tensor columns
        self.launches = 0  # device operations launched so far (a mesh launch counts once, as TT-NN numbers them)
        self.host_ts = 0  # the last row's HOST START TS: strictly increasing, as tt-perf-report sorts rows by it
        self.cycles: dict[int, int] = {}  # chip -> its device log's clock: its rows end to end at 1 GHz
        self.done = 0  # the op id up to which rows are rendered
        self.ops = 0  # operation_graphs rows read, and device_perf rows of the same range: for still_right()
        self.perf_rows = 0
        self.stale = False

    def read(self, r, upto: int | None = None) -> tuple:
        """What the ops after `done`, up to op id `upto` (None: the last), need from the db."""
        lo, hi = self.done, _LAST if upto is None else upto
        grid = r.execute("SELECT MAX(num_x_compute_cores * num_y_compute_cores) FROM devices").fetchone()[0] or 64
        if self.grid is not None and grid != self.grid:
            self.stale = True  # the rows so far counted the cores of a program with no CB on the old grid
        self.grid = grid
        ops = r.execute(_OPS_SQL, (lo, hi)).fetchall()
        graphs = self.graphs
        if not graphs or any(op[3] not in graphs for op in ops):
            for gid, text in r.execute("SELECT graph_id, captured_graph FROM distinct_graphs"):
                if gid in graphs:
                    continue
                try:  # the folder's data, which may have been edited or damaged: a one-line error, never a traceback
                    graphs[gid] = device_operations(text)
                except ValueError as e:
                    raise ReportError(f"{r.path}: captured graph {gid} of distinct_graphs is not one ({e}), so its "
                                      "device operations cannot be named; the report is damaged: capture the run "
                                      "again") from None
        attributes: dict[int, list] = {}
        for op_id, name, value in r.execute(_ATTRIBUTES_SQL, (lo, hi)):
            attributes.setdefault(op_id, []).append((name, value))
        # One scan of `tensors` (those not read before), then the link tables alone: cheaper than joining them row by
        # row. A tensor's number is looked up by its key first: the method call per tensor was a tenth of the export.
        fields, by_key, number = self.fields, self.fields.numbers, self.number
        scan = "SELECT tensor_id, spec_id, buffer_type, device_id FROM tensors"
        tid = None
        for tid, spec_id, buffer_type, device_id in (r.execute(scan) if self.max_tensor is None else
                                                     r.execute(f"{scan} WHERE tensor_id > ?", (self.max_tensor,))):
            n = by_key.get((spec_id, buffer_type, device_id)) if spec_id is not None else None
            number[tid] = n if n is not None else fields.number(r, tid, spec_id, buffer_type, device_id)
        if tid is not None:  # the scan's last, in its primary key's order
            self.max_tensor = tid
        elif self.max_tensor is None:
            self.max_tensor = -_LAST  # read, and none there
        tensors: dict[int, tuple[list, list]] = {}  # op id -> (numbers of its inputs, of its outputs), in index order
        for table, index, side in (("input_tensors", "input_index", 0), ("output_tensors", "output_index", 1)):
            for op_id, tid in r.execute(f"SELECT x.operation_id, x.tensor_id FROM {table} x JOIN operation_graphs g "
                                        f"USING (operation_id) WHERE x.operation_id > ? AND x.operation_id <= ? "
                                        f"ORDER BY x.operation_id, x.{index}", (lo, hi)):
                n = number.get(tid)
                if n is not None:
                    tensors.setdefault(op_id, ([], []))[side].append(n)
                else:  # as a join would: a link to no `tensors` row names no tensor (yet: still_right() looks again)
                    self.unresolved.add(tid)
        if upto is not None:
            self.ops += len(ops)
            self.perf_rows += r.execute("SELECT COUNT(*) FROM device_perf WHERE operation_id > ? AND operation_id <= ?",
                                        (lo, hi)).fetchone()[0]
            self.done = hi
        return (ops, attributes, tensors, max((len(v[0]) for v in tensors.values()), default=0),
                max((len(v[1]) for v in tensors.values()), default=0))

    def still_right(self, r) -> bool:
        """Whether the rows rendered so far are what one render of the whole committed report would give."""
        if self.stale:
            return False
        grid = r.execute("SELECT MAX(num_x_compute_cores * num_y_compute_cores) FROM devices").fetchone()[0] or 64
        counts = r.execute("SELECT (SELECT COUNT(*) FROM operation_graphs WHERE operation_id <= ?1), "
                           "(SELECT COUNT(*) FROM device_perf WHERE operation_id <= ?1)", (self.done,)).fetchone()
        if grid != (self.grid or grid) or counts != (self.ops, self.perf_rows):  # (None: nothing read yet)
            return False
        return not any(r.execute("SELECT 1 FROM tensors WHERE tensor_id = ?", (t,)).fetchone()
                       for t in self.unresolved)

    def render(self, read: tuple) -> None:
        """The lines of the ops read()."""
        ops, attributes, tensors, n_in, n_out = read
        n_in, n_out = max(self.n_in, n_in), max(self.n_out, n_out)
        if (n_in, n_out) != (self.n_in, self.n_out):
            self.stale = self.stale or bool(self.lines)  # the lines so far have fewer tensor columns
            self.n_in, self.n_out = n_in, n_out
            self.columns_of.clear()
        fields, grid, columns_of, plans, graphs = self.fields, self.grid, self.columns_of, self.plans, self.graphs
        lines, log, cycles = self.lines, self.log, self.cycles
        launches, host_ts = self.launches, self.host_ts
        for op_id, start, end, graph_id, compute, bandwidth, ideal, fidelity in ops:
            plan = plans.get(graph_id)
            if plan is None:
                plan = plans[graph_id] = _plan(graphs.get(graph_id) or (), grid)
            rows, launched = plan
            if not rows:
                continue
            ins, outs = tensors.get(op_id, ((), ()))
            key = (tuple(ins), tuple(outs))
            columns = columns_of.get(key)
            if columns is None:
                columns = columns_of[key] = _columns(fields, *key, n_in, n_out)
            attrs = _cell(_attributes(attributes[op_id])) if op_id in attributes else ""
            fidelity, end_text = _cell(fidelity), _cell(end)
            for name, chip, n, i, cores in rows:
                call = (launches + i + 1) << CALL_COUNT_CHIP_BITS | chip
                host_ts = max(start or 0, host_ts + 1)
                kernel = _share(ideal, n, i)
                cycle = cycles.get(chip, 0)
                end_cycle = cycles[chip] = cycle + (kernel or 0)
                kernel_text = _cell(kernel)
                lines.append(
                    f"{name},tt_dnn_device,{call},{chip},{attrs},{fidelity},{cores},,{host_ts},{end_text},"
                    f"{'' if end is None else end - host_ts},{cycle},{end_cycle},{kernel_text},{kernel_text},,,,,,,,"
                    f"{columns},,,,,{kernel_text},{_cell(_share(compute, n, i))},{_cell(_share(bandwidth, n, i))},,"
                    "\r\n")
                log.append(f"{chip},1,1,BRISC,0,{cycle},0,{call},{call},BRISC-FW,ZONE_START,0,device_sim\r\n"
                           f"{chip},1,1,BRISC,0,{end_cycle},0,{call},{call},BRISC-FW,ZONE_END,0,device_sim\r\n")
            launches += launched
        self.launches, self.host_ts = launches, host_ts

    def write(self, folder: str | os.PathLike) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        # Often into the report's own folder, which came from elsewhere: a link there is replaced, never written
        # through (ttreport.outfile).
        # Both files or neither: the device log is written (and renamed) inside the CSV's block, after the CSV's
        # bytes are flushed, so a failure of either (a full disk) leaves no half of the pair (a visualizer reading
        # the CSV expects its device log).
        path = folder / PERF_FILE
        with outfile.open(path, "w", newline="") as f:
            f.write(header_text(self.n_in, self.n_out))
            f.writelines(self.lines)
            f.flush()
            with outfile.open(folder / DEVICE_LOG_FILE, "w", newline="") as log:
                log.write(DEVICE_LOG_START)
                log.writelines(self.log)
        return path


# At the close, a Chase stops reading ranges once the writer process has less than this of the log to write (1 MiB:
# ~3,000 small ops, ~0.15 s of its work at 20k ops a second), waits for the writer to have committed all of it, and
# reads the rest in one short transaction as the writer's own close begins (its late indexes: ~2.5 µs an op, ahead
# of its final checkpoint, which waits writer.CLOSE_WAIT_MS, 200 ms, for a reader before it leaves the report in WAL
# mode); then it writes both files while that close runs.
CHASE_STOP_BYTES = 1 << 20
CHASE_END_POLL_S = 0.002  # between looks at the writer's count, for the last ~0.15 s of its backlog
CHASE_OPS = 20_000  # ops read in one read transaction (~20-60 ms here): the writer's WAL is not held back longer
CHASE_POLL_S = 0.05  # between looks when the writer has committed nothing new (it commits a batch every ~50 ms)
# Rendered between two looks at whether the model runs again (~1-3 ms of the GIL): a model that stops waiting for
# its writer gets the GIL back within that, not after a whole range.
CHASE_SLICE_OPS = 500


class Chase(threading.Thread):
    """The perf files' rows of the ops a capture's writer process has committed, rendered on a thread of the
    capturing process while its model's thread waits: for the writer process (a loop past oplog.LAG_BYTES sleeps
    in its pacing: 6.7 s of a 100,000-add loop here), and at the close, for the writer's backlog (~30,000 small
    ops, ~3-5 s here). The model's core is idle then. Those rows took the close ~9 µs of CPU an op after the
    writer was done (bench/README.md, issue 33, close). Once the writer has committed the whole log, the chase
    reads the rest and writes both files while the writer's own close runs (CHASE_STOP_BYTES).
    export_ops_perf(r, folder, chased=chase) takes those files, or keeps what was rendered if nothing it read has
    changed since (_Rows.still_right) and renders the rest; any failure here leaves it all to that call.

    An op is rendered once every op of a lower id is committed and so is a later op of the log (a higher
    end_seq): the rows a matmul's estimate adds to device_perf travel in the log with the op after it."""

    def __init__(self, db_path: str | os.PathLike, left, idle=lambda: True, alive=lambda: True):
        super().__init__(name="ttreport-perf-rows", daemon=True)
        self.db_path = Path(db_path)
        self.left = left  # () -> bytes of the log the writer process has still to write
        self.idle = idle  # () -> whether the model waits (oplog.LogSink.waiting): the chase may work meanwhile
        self.alive = alive  # () -> whether the writer process may still commit (not yet reaped)
        self.rows = _Rows()
        self.error: Exception | None = None
        self.written: Path | None = None  # the CSV's path, once the chase wrote both files (at the close)
        self._halt = threading.Event()
        self._wake = threading.Event()  # set by closing() and stop(): a wait between looks ends at once
        self._closing = False
        self._begun = False
        # held while this thread is inside SQLite: the capture's at-fork handler takes it (capturing/session.py), so a
        # child forked by the model never gets SQLite's mutexes held by a thread it does not have
        self.busy = threading.Lock()

    def begin(self) -> None:
        """Start the thread, once: at the model's first wait for the writer (oplog.LogSink.on_wait) or at the close,
        never at the capture's start, where a thread's start waits for a core to run it (start-up median 38.3 ->
        47.5 ms, 30 warm starts each way, load 6)."""
        if not self._begun:
            self._begun = True
            self.start()

    def closing(self) -> None:
        """The capture is closing: the model's thread is done, so the chase works whenever there is something to
        read, until the writer process is CHASE_STOP_BYTES from the end of the log."""
        self._closing = True
        self._wake.set()
        self.begin()

    def _may_work(self) -> bool:
        return self._closing or self.idle()

    def run(self) -> None:
        con = None
        try:
            rows = self.rows
            while not self._halt.is_set() and not rows.stale and self.alive():
                if not self._may_work():
                    self._wake.wait(CHASE_POLL_S)
                    continue
                if con is None:  # at the model's first wait or the close: nothing at a capture's start
                    with self.busy:
                        con = sqlite3.connect(f"{self.db_path.resolve().as_uri()}?mode=ro", uri=True,
                                              isolation_level=None, check_same_thread=False)
                if self._closing and self.left() <= CHASE_STOP_BYTES:
                    read = self._last_read(con)
                    with self.busy:
                        con.close()
                    con = None  # before the writer's switch out of WAL mode
                    if read is not None:
                        rows.render(read)
                        if not rows.stale:
                            self.written = rows.write(self.db_path.parent)
                    break
                with self.busy:
                    con.execute("BEGIN")  # one snapshot for the range's reads
                    try:
                        upto = _settled(con, rows.done)
                        read = rows.read(con, upto) if upto > rows.done else None
                    finally:
                        con.execute("COMMIT")
                if read is None:
                    self._halt.wait(CHASE_POLL_S)
                    continue
                ops, *rest = read
                for k in range(0, len(ops), CHASE_SLICE_OPS):
                    while not self._may_work() and not self._halt.is_set():
                        self._halt.wait(CHASE_POLL_S)  # the model runs again: the GIL is its own
                    rows.render((ops[k:k + CHASE_SLICE_OPS], *rest))
        except Exception as e:  # noqa: BLE001 - a damaged graph, a db error: the close's export does it all itself
            self.error = e
        finally:
            if con is not None:
                with self.busy:
                    con.close()

    def _last_read(self, con) -> tuple | None:
        """Once the writer has committed the whole log: the ops not rendered yet, if the rows so far are still
        right (_Rows.still_right), in one snapshot; None when the writer stops short or the chase is stopped."""
        while self.left() > 0 and not self._halt.is_set() and self.alive():
            time.sleep(CHASE_END_POLL_S)
        if self.left() > 0 or self._halt.is_set():
            return None
        with self.busy:
            con.execute("BEGIN")
            try:
                return self.rows.read(con) if self.rows.still_right(con) else None
            finally:
                con.execute("COMMIT")

    def stop(self) -> None:
        self._halt.set()
        self._wake.set()
        if self.ident is not None:  # started
            self.join()

    def rows_for(self, r) -> _Rows | None:
        """Stop; the rows rendered so far if they are still right for report `r`, else None."""
        self.stop()
        if self.error is not None or not self.rows.still_right(r):
            return None
        return self.rows


def _settled(con, done: int) -> int:
    """The highest op id up to which every op after `done` is committed with all its rows (Chase's rule)."""
    ops = con.execute("SELECT operation_id, end_seq FROM operations WHERE operation_id > ? ORDER BY operation_id "
                      "LIMIT ?", (done, CHASE_OPS)).fetchall()
    seqs = [seq for _, seq in ops if type(seq) is int]
    if len(seqs) < len(ops) or not seqs:
        return done  # no op, or one with no end_seq (not a capture's): left to the close
    last_seq, upto = max(seqs), done
    for op_id, seq in ops:
        if op_id != upto + 1 or seq >= last_seq:
            break
        upto = op_id
    return upto



def _plan(programs, grid: int) -> tuple[list, int]:
    """An op's rows as its graph has them: (OP CODE cell, chip, programs on that chip, this one's place among them,
    CORE COUNT) each, and the launches they are (the most programs on one chip: a mesh launch counts once)."""
    on_chip: dict[int, int] = {}
    for p in programs:
        on_chip[p.device_id] = on_chip.get(p.device_id, 0) + 1
    nth: dict[int, int] = {}
    rows = []
    for p in programs:
        i = nth[p.device_id] = nth.get(p.device_id, -1) + 1
        rows.append((_cell(p.name), p.device_id, on_chip[p.device_id], i, p.cores or grid))
    return rows, max(on_chip.values(), default=0)


def _share(ns, n: int, i: int):
    """The i-th of n programs' share of an op's `ns` on its chip: even, the remainder on the first (None: none)."""
    if ns is None or n == 1:
        return ns
    part = int(ns) // n
    return part + int(ns) - part * n if i == 0 else part


# The device log's first two lines, as tt-metal writes them (its header with a space after each comma).
DEVICE_LOG_START = "ARCH: wormhole_b0, CHIP_FREQ[MHz]: 1000\n" + ", ".join(DEVICE_LOG_HEADER) + "\n"


def header_text(n_in: int, n_out: int) -> str:
    """ops_perf_results.csv's header line for ops of at most `n_in` inputs and `n_out` outputs, as csv writes it."""
    io_columns = [f"{side}_{i}_{f}" for side, n in (("INPUT", n_in), ("OUTPUT", n_out)) for i in range(n)
                  for f in TENSOR_FIELDS]
    at = OPS_CSV_HEADER.index("INPUTS")
    out = io.StringIO()
    csv.writer(out).writerow(OPS_CSV_HEADER[:at] + io_columns + OPS_CSV_HEADER[at + 2:])
    return out.getvalue()


# Each row is one f-string in csv.writer's own output (QUOTE_MINIMAL, "\r\n"): formatting ~60 fields a row through
# csv.writer was half of the export. Text that csv would quote goes through it (_cell); the tensor columns are
# rendered by csv once per distinct (inputs, outputs); numbers print as csv prints them. tests/test_ops_perf_csv.py
# reads the file back with csv and with the visualizer's own readers.
_PLAIN = re.compile(r'[^,"\r\n]*')  # text csv.writer writes as it is (QUOTE_MINIMAL quotes the rest)


def _cell(v) -> str:
    """`v` as csv.writer writes it in a row of several fields: None empty, text quoted where it must be."""
    if type(v) is int:  # most cells: first
        return str(v)
    if v is None:
        return ""
    if isinstance(v, str):
        if _PLAIN.fullmatch(v):
            return v
        out = io.StringIO()
        csv.writer(out).writerow((v, ""))  # two fields: a lone empty field would be quoted
        return out.getvalue()[:-3]  # less the empty field's comma and "\r\n"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _columns(fields: _Fields, ins: tuple, outs: tuple, n_in: int, n_out: int) -> str:
    """The INPUT_i_*/OUTPUT_i_* columns of an op with these tensors (empty where it has fewer than the most) as
    csv.writer writes them, each after a comma (nothing when there are none)."""
    empty = ("",) * len(TENSOR_FIELDS)
    columns = [v for side, n in ((ins, n_in), (outs, n_out))
               for slot in [*(fields.fields[t] for t in side), *[empty] * (n - len(side))] for v in slot]
    if not columns:
        return ""
    out = io.StringIO()
    csv.writer(out).writerow(("", *columns))  # the leading empty field gives the comma before the first column
    return out.getvalue()[:-2]
