"""A report as a Chrome trace-event / Perfetto JSON file (ui.perfetto.dev, chrome://tracing, speedscope).

    with ttreport.open("generated/ttreport/reports/demo") as r:
        r.export_chrome_trace("demo.json")          # or "demo.json.gz"

What the file holds (the Trace Event Format's JSON object form):
- each op a complete ("X") slice on its thread, so an op's nested ops sit inside it; its args carry
  the op id, its arguments, each input and output tensor (shape, dtype, layout, memory config,
  buffer), the golden PCC checks made on it and its error;
- an op that raised is coloured "terrible" (red) and has an instant ("i") event "error: <type>";
- one track per chip, "device N (estimated)": each top-level op's device kernel time estimated by the
  performance model (ttreport.read.device_time.timeline: back to back from the first op's start, the
  estimate in its args with its bound); the host tracks are the emulator's own time;
- one counter ("C") track per device, "device N memory", with series "L1 in buffers (their own sizes)"
  and "DRAM in buffers (their own sizes)": bytes in use after each op (ttreport.export.memory; a TT-NN
  report, which records no buffers, has "... allocated (bank-rounded, all banks)" instead);
- the process's labels name the run's four peaks, both figures of L1 and DRAM, as `ttreport summary`
  and the HTML name them ("peak L1 allocated (bank-rounded, all banks): 1.5 MiB after op 49 (ttnn.add)");
- a flow arrow ("s" -> "f", category "tensor") from the op that produced a tensor to each op that
  took it as an input.

Events are written as they are read from SQL (ops a page at a time), never held whole.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

from ttreport import outfile
from ttreport.errors import ReportError
from ttreport.export import memory
from ttreport.export.golden import GoldenStream
from ttreport.read.device_time import human_ns, timeline
from ttreport.read.terminal import human_bytes

PID = 1
DEVICE_TID = 1_000_000  # + device id: each chip's device track, past any host thread's tid (1, 2, ...)
SUFFIXES = (".json", ".json.gz")


def export_chrome_trace(report, path) -> Path:
    """Write `report` (an open Report) as a trace to `path` (.json, or .json.gz compressed); return the path."""
    path = Path(path)
    if not any(path.name.endswith(s) for s in SUFFIXES):
        raise ReportError(f"a trace is written as .json or .json.gz, not {path.name!r}; "
                          f"name the file e.g. {path.with_suffix('.json').name}")
    # A link at `path` is replaced, never written through (ttreport.outfile).
    with outfile.open(path, "wb") as raw, _text(raw, path) as f:
        first = True
        other = {"report": str(report.path), "status": report.status_text, "exporter": "ttreport"}
        f.write('{"displayTimeUnit": "ns", "otherData": ' + json.dumps(other) + ', "traceEvents": [\n')
        for event in trace_events(report):
            if not first:
                f.write(",\n")
            f.write(json.dumps(event, default=str, allow_nan=False))  # NaN would make the file unreadable
            first = False
        f.write("\n]}\n")
    return path


def _text(raw, path: Path):
    """A UTF-8 text stream onto `raw`, gzip-compressed for a .gz path."""
    if not path.name.endswith(".gz"):
        return io.TextIOWrapper(raw, encoding="utf-8")
    # gzip's level 6 (zlib's default): ~1.7x faster than gzip.open's 9 for a few percent more bytes. The header
    # names `path`, not the temporary file the bytes go to.
    packed = gzip.GzipFile(filename=path.name, mode="wb", fileobj=raw, compresslevel=6)
    return io.TextIOWrapper(packed, encoding="utf-8")


def trace_events(report):
    """Every event of the trace, as dicts, in the order they are read (a generator)."""
    yield {"ph": "M", "pid": PID, "name": "process_name", "args": {"name": f"ttreport {report.path.name}"}}
    peaks = memory.memory_peaks(report).labelled()
    if peaks:
        yield {"ph": "M", "pid": PID, "name": "process_labels", "args": {"labels": "; ".join(
            f"{label}: {human_bytes(p.bytes)} after op {p.operation_id} ({p.name})" for label, p in peaks)}}
    tids: dict = {}
    golden = GoldenStream(report)
    clock_ns = 0  # where an op with no recorded start goes: right after the previous op
    for op in report.iter_operations(sort="id"):
        # A start that is not a whole number (a damaged row's text, BLOB or float: `ttreport check` names it) is one
        # not recorded: the op is placed as a TT-NN report's are.
        recorded = isinstance(op.start_ns, int)
        start_ns = op.start_ns if recorded else None
        if start_ns is None:
            # A TT-NN report records durations only (and no nesting): its ops are laid end to end, in call
            # order, as ttnn-visualizer lists them; the args say the times are placed, not measured.
            if not isinstance(op.duration, (int, float)) or op.duration != op.duration:
                continue
            start_ns = clock_ns
        tid = tids.get(op.thread)
        if tid is None:
            tid = tids[op.thread] = len(tids) + 1
            yield {"ph": "M", "pid": PID, "tid": tid, "name": "thread_name", "args": {"name": op.thread or "main"}}
            yield {"ph": "M", "pid": PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}}
        dur_ns = op.duration_ns or 0  # end_ns - start_ns, else the duration
        clock_ns = max(clock_ns, start_ns + max(dur_ns, 0))
        event = {"ph": "X", "pid": PID, "tid": tid, "name": op.name, "cat": "op",
                 "ts": start_ns / 1000, "dur": max(dur_ns, 0) / 1000, "args": _args(op, golden.get(op.id))}
        if not recorded:
            event["args"]["placed"] = "no start time recorded: placed after the previous op"
        if op.status == "error" or op.error is not None:
            event["cname"] = "terrible"
            yield event
            yield {"ph": "i", "s": "t", "pid": PID, "tid": tid, "ts": start_ns / 1000, "cat": "error",
                   "name": f"error: {op.error.error_type if op.error else 'unknown'}",
                   "args": {"operation_id": op.id, "message": op.error.message if op.error else None}}
        else:
            yield event
    yield from _device_tracks(report)
    yield from _counters(report)
    yield from _flows(report, tids)


def _device_tracks(report):
    named = set()
    for d in timeline(report):
        tid = DEVICE_TID + d.device_id
        if d.device_id not in named:
            named.add(d.device_id)
            yield {"ph": "M", "pid": PID, "tid": tid, "name": "thread_name",
                   "args": {"name": f"device {d.device_id} (estimated)"}}
            yield {"ph": "M", "pid": PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}}
        yield {"ph": "X", "pid": PID, "tid": tid, "name": d.name, "cat": "device", "ts": d.start_ns / 1000,
               "dur": (d.end_ns - d.start_ns) / 1000,
               "args": {"operation_id": d.operation_id, "device_ns": d.end_ns - d.start_ns, "bound": d.bound,
                        "estimated": f"{human_ns(d.end_ns - d.start_ns)} by the performance model"}}


def _tensor(t) -> dict:
    return {"tensor_id": t.id, "shape": t.shape_text, "dtype": t.dtype, "layout": t.layout,
            "memory_config": t.memory_config, "buffer_type": t.buffer_type, "device_id": t.device_id,
            "address": t.address, "size": t.size}


def _args(op, checks) -> dict:
    args = {"operation_id": op.id, "depth": op.depth, "arguments": dict(op.arguments),
            "inputs": [_tensor(t) for t in op.input_tensors], "outputs": [_tensor(t) for t in op.output_tensors],
            "l1_bytes_after": op.l1_bytes, "dram_bytes_after": op.dram_bytes}
    if op.parent is not None:
        args["parent_operation_id"] = op.parent
    if checks:
        args["golden"] = checks
        found = [c["pcc"] for c in checks if isinstance(c["pcc"], float)]
        if found:
            args["golden_pcc"] = min(found)
    if op.error is not None:
        args["error"] = {"type": op.error.error_type, "message": op.error.message}
    if op.stack_trace:
        args["source"] = op.stack_trace.strip().splitlines()[0].strip()  # the user's line: innermost first
    return args


def _counters(report):
    last: dict = {}
    # A report with no buffers recorded (a TT-NN one) draws the ops' l1_bytes: the other figure.
    figure = memory.IN_BUFFERS if report.execute("SELECT 1 FROM buffer_lifetimes LIMIT 1").fetchone() \
        else memory.ALLOCATED
    for point in memory.memory_timeline(report):
        if point.end_ns is None:
            continue
        by_device: dict = {}
        for (device, kind), n in point.bytes.items():
            by_device.setdefault(device, {})[kind] = n
        for device, values in sorted(by_device.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
            full = {f"{kind} {figure}": values.get(kind, 0) for kind in ("L1", "DRAM")}
            if last.get(device) == full:
                continue  # a counter holds its value: write it only when it changes
            last[device] = full
            name = f"device {device} memory" if device is not None else "memory (all devices)"
            yield {"ph": "C", "pid": PID, "name": name, "ts": point.end_ns / 1000, "args": full}


def _flows(report, tids: dict):
    """Producer -> consumer arrows, one per (tensor, consuming op), read as one streamed join."""
    cur = report.execute(
        "SELECT i.tensor_id, p.operation_id, p.end_ns, p.thread, c.operation_id, c.start_ns, c.thread "
        "FROM input_tensors i JOIN tensors t ON t.tensor_id = i.tensor_id "
        "JOIN operations p ON p.operation_id = t.producer_operation_id "
        "JOIN operations c ON c.operation_id = i.operation_id "
        "WHERE p.operation_id != c.operation_id AND typeof(p.end_ns) = 'integer' "
        "AND typeof(c.start_ns) = 'integer' ORDER BY i.operation_id, i.input_index")
    flow_id = 0
    while batch := cur.fetchmany(1000):
        for tensor_id, p_id, p_end, p_thread, c_id, c_start, c_thread in batch:
            if p_thread not in tids or c_thread not in tids:
                continue
            flow_id += 1
            name = f"tensor {tensor_id}"
            # The start binds to the slice open at its ts on that thread: 1 ns before the producer's end,
            # so the producer (whose nested ops have all ended) holds it rather than its parent.
            yield {"ph": "s", "id": flow_id, "pid": PID, "tid": tids[p_thread], "ts": max(p_end - 1, 0) / 1000,
                   "cat": "tensor", "name": name, "args": {"tensor_id": tensor_id, "producer": p_id}}
            yield {"ph": "f", "bp": "e", "id": flow_id, "pid": PID, "tid": tids[c_thread], "ts": c_start / 1000,
                   "cat": "tensor", "name": name, "args": {"tensor_id": tensor_id, "consumer": c_id}}
