"""TT-NN's performance report files for a capture: ops_perf_results.csv and profile_log_device.csv.

    import ttreport
    from ttreport.export.ops_perf import export_ops_perf
    with ttreport.open("sample_reports/demo") as r:
        export_ops_perf(r, "/tmp/demo_perf")     # or `ttreport perf-csv REPORT [FOLDER]`

`ops_perf_results.csv` has the columns tt-metal's tools/tracy/process_ops_logs.py writes
(OPS_CSV_HEADER, with INPUT_i_* / OUTPUT_i_* per tensor), one row per op with a device time
estimate (docs/perf_model.md): its "PM IDEAL/COMPUTE/BANDWIDTH [ns]" are the model's figures and,
as device_sim has no device clock, "DEVICE KERNEL DURATION [ns]" is the model's ideal time too.
`profile_log_device.csv` is the device log ttnn-visualizer requires beside it (its ARCH line, then
a zone start and end per op, laid end to end on core (1, 1), joined to the CSV by "run host ID").
"""

from __future__ import annotations

import csv
import gc
import io
import os
import re
from pathlib import Path

from ttreport import outfile
from ttreport.folder import DEVICE_LOG_FILE, PERF_FILE  # noqa: F401 (ops_perf's file names)

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


def _tensor_fields(shape, layout, dtype, buffer_type, memory_config, device_id) -> tuple:
    """A tensor's seven INPUT_i_*/OUTPUT_i_* values (TENSOR_FIELDS), from its `tensors` row's texts."""
    dims = [int(n) for n in re.findall(r"\d+", shape or "")]
    dims = ([1] * (4 - len(dims)) + dims)[-4:] if len(dims) <= 4 else [_prod(dims[:-3]), *dims[-3:]]
    if buffer_type is None:
        memory = "HOST"
    else:
        kind = re.search(r"TensorMemoryLayout::(\w+)", memory_config or "")
        memory = f"DEV_{device_id}_{'L1' if buffer_type == 1 else 'DRAM'}_{kind.group(1) if kind else 'INTERLEAVED'}"
    return (*dims, (layout or "").rsplit(".", 1)[-1], (dtype or "").rsplit(".", 1)[-1], memory)


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

    def __init__(self, r):
        self.r = r
        self.numbers: dict[tuple, int] = {}
        self.fields: list[tuple] = []  # by number: the seven TENSOR_FIELDS values
        self.devices: list[int | None] = []  # by number: the device id of a tensor on a device

    def number(self, tensor_id, spec_id, buffer_type, device_id) -> int:
        key = (spec_id, buffer_type, device_id) if spec_id is not None else (None, tensor_id)
        n = self.numbers.get(key)
        if n is None:
            row = self.r.execute("SELECT shape, layout, dtype, buffer_type, memory_config, device_id FROM tensors "
                                 "WHERE tensor_id = ?", (tensor_id,)).fetchone()
            n = self.add(key, row)
        return n

    def add(self, key, row) -> int:
        """Number a new key from a `tensors` row's (shape, layout, dtype, buffer_type, memory_config, device_id)."""
        fields = _tensor_fields(*row)
        on = re.match(r"DEV_(\d+)_", fields[-1])
        n = self.numbers[key] = len(self.fields)
        self.fields.append(fields)
        self.devices.append(int(on.group(1)) if on else None)
        return n


def export_ops_perf(r, folder: str | os.PathLike) -> Path:
    """Write ops_perf_results.csv and profile_log_device.csv for report `r` into `folder`; returns the CSV's path."""
    # The cyclic collector paused while it runs: an op's two link lists are GC-tracked, and the full collections
    # their millions set off walked them all again and again (1.65-1.73 -> 1.44 s of CPU on a 200,000-op
    # report). Nothing made here holds a cycle; refcounting frees it all.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _export(r, folder)
    finally:
        if collecting:
            gc.enable()


def _export(r, folder: str | os.PathLike) -> Path:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ops = r.execute("SELECT o.operation_id, o.name, o.start_ns, o.end_ns, p.compute_ns, p.bandwidth_ns, p.ideal_ns, "
                    "p.math_fidelity FROM operations o JOIN device_perf p USING (operation_id) "
                    "ORDER BY o.operation_id").fetchall()
    cores = r.execute("SELECT MAX(num_x_compute_cores * num_y_compute_cores) FROM devices").fetchone()[0] or 64
    fields = _Fields(r)
    # One scan of `tensors`, then the link tables alone: cheaper than joining them row by row. A tensor's
    # number is looked up by its key first: the method call per tensor was a tenth of the export.
    by_key, number = fields.numbers, {}
    for tid, spec_id, buffer_type, device_id in r.execute("SELECT tensor_id, spec_id, buffer_type, device_id "
                                                          "FROM tensors"):
        n = by_key.get((spec_id, buffer_type, device_id)) if spec_id is not None else None
        number[tid] = n if n is not None else fields.number(tid, spec_id, buffer_type, device_id)
    tensors: dict[int, tuple[list, list]] = {}  # op id -> (numbers of its inputs, of its outputs), in index order
    for table, index, side in (("input_tensors", "input_index", 0), ("output_tensors", "output_index", 1)):
        for op_id, tid in r.execute(f"SELECT operation_id, tensor_id FROM {table} ORDER BY operation_id, {index}"):
            if tid in number:  # as the join did: a link to no `tensors` row names no tensor
                tensors.setdefault(op_id, ([], []))[side].append(number[tid])
    n_in = max((len(v[0]) for v in tensors.values()), default=0)
    n_out = max((len(v[1]) for v in tensors.values()), default=0)
    # (inputs, outputs) -> (their columns as CSV text with a leading comma, the op's DEVICE ID)
    slots: dict[tuple, tuple[str, int]] = {}
    path = folder / PERF_FILE
    cycle = 0  # the device log's clock: ops laid end to end at 1 GHz (1 cycle = 1 ns)
    lines, log = [], []
    for op_id, name, start, end, compute, bandwidth, ideal, fidelity in ops:
        ins, outs = tensors.get(op_id, ((), ()))
        key = (tuple(ins), tuple(outs))
        columns, device = slots.get(key) or slots.setdefault(key, _slots(fields, *key, n_in, n_out))
        line, zones = op_lines(op_id, name, start, end, compute, bandwidth, ideal, fidelity, columns, device, cores,
                               cycle)
        lines.append(line)
        log.append(zones)
        cycle += ideal
    # Often into the report's own folder, which came from elsewhere: a link there is replaced, never written
    # through (ttreport.outfile).
    with outfile.open(path, "w", newline="") as f:
        f.write(header_text(n_in, n_out))
        f.writelines(lines)
    with outfile.open(folder / DEVICE_LOG_FILE, "w", newline="") as f:
        f.write(DEVICE_LOG_START)
        f.writelines(log)
    return path


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


def op_lines(op_id, name, start, end, compute, bandwidth, ideal, fidelity, columns, device, cores, cycle) -> tuple:
    """(ops_perf_results.csv's row, profile_log_device.csv's two zone rows) of one op whose device time starts at
    `cycle`; `columns`/`device` from _slots. The exporter at close and the writer process (live_perf.py) both
    write through this, so their bytes are the same."""
    # Each row is one f-string in csv.writer's own output (QUOTE_MINIMAL, "\r\n"): formatting ~60 fields a
    # row through csv.writer was half of the export. Text that csv would quote goes through it (_cell); the
    # tensor columns are rendered by csv once per distinct (inputs, outputs); numbers print as csv prints them.
    # tests/test_ops_perf_identical.py holds the bytes to the plain exporter's.
    end_cycle = cycle + ideal
    ideal_text = _cell(ideal)
    return (f"{_cell(name.removeprefix('ttnn.'))},tt_dnn_device,{op_id},{device},,{_cell(fidelity)},"
            f"{cores},,{_cell(start)},{_cell(end)},{'' if end is None else end - start},{cycle},{end_cycle},"
            f"{ideal_text},{ideal_text},,,,,,,,{columns},,,,,{ideal_text},{_cell(compute)},"
            f"{_cell(bandwidth)},,\r\n",
            f"0,1,1,BRISC,0,{cycle},0,{op_id},{op_id},BRISC-FW,ZONE_START,0,device_sim\r\n"
            f"0,1,1,BRISC,0,{end_cycle},0,{op_id},{op_id},BRISC-FW,ZONE_END,0,device_sim\r\n")


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


def _slots(fields: _Fields, ins: tuple, outs: tuple, n_in: int, n_out: int) -> tuple[str, int]:
    """The INPUT_i_*/OUTPUT_i_* columns of an op with these tensors (empty where it has fewer than the most) as
    csv.writer writes them, each after a comma (nothing when there are none), and its DEVICE ID: that of its
    first tensor on a device, else 0."""
    empty = ("",) * len(TENSOR_FIELDS)
    columns = [v for side, n in ((ins, n_in), (outs, n_out))
               for slot in [*(fields.fields[t] for t in side), *[empty] * (n - len(side))] for v in slot]
    device = next((fields.devices[t] for t in (*ins, *outs) if fields.devices[t] is not None), 0)
    if not columns:
        return "", device
    out = io.StringIO()
    csv.writer(out).writerow(("", *columns))  # the leading empty field gives the comma before the first column
    return out.getvalue()[:-2], device
