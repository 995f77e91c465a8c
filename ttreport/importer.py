"""`ttreport import`: a TT-NN graph capture (the JSON `ttnn.graph.end_graph_capture_to_file` writes) as a report.

    from ttreport.importer import import_graph_report
    import_graph_report("report.json", Path("generated/ttreport/reports/imported"))  # -> the folder's db.sqlite

The rows are those TT-NN's own importer, ttnn/graph_report.py (ttnn 0.81.1's, report version 1), makes from the same
JSON: one operation per top-level function_start/function_end pair (TT-NN's wrapper ops filtered the same way),
its inputs and outputs from the `.python_io.json` records when there are any, else from the graph's tensor nodes,
the buffers live at each op's end, a `ttnn::deallocate` op for a deallocation outside any op, the devices
(renumbered from 0), errors, device tensors, each op's captured subgraph and its nodes and edges. They go into a
database that db.create makes: a current ttreport report that every `ttreport` command and ttnn-visualizer read.
Where ttreport departs from graph_report.py, it is on purpose: an error row names the op it happened in (TT-NN's
names operation 0) and that op's status is "error"; a tensor whose id is 0 is kept (TT-NN's `if tid:` drops it).

The JSON comes from outside and is read as untrusted input: its size is bounded (MAX_REPORT_BYTES), every value
is checked for its type and range before a row is made, and nothing is written until all of it has been read, so
a bad file leaves no folder behind. Files are written only inside DEST, under fixed names. The database is built
under a temporary name (PARTIAL_FILE) and renamed to db.sqlite once every row is in: an import that fails while
writing (a full disk, a file size limit) removes what it wrote and says so in one line (a report it was to overwrite
stays as it was), and one that is killed leaves no db.sqlite of its own, nothing that reads as its report.

Standard library and ttreport's floor only (db, folder, errors): no torch, no device_sim.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections import defaultdict, deque
from pathlib import Path

from ttreport import db, folder
from ttreport.errors import TTReportError

SUPPORTED_REPORT_VERSION = 1  # graph_report.py's SUPPORTED_REPORT_VERSION (graph_consts.hpp's kCurrentReportVersion)
# A graph capture of a whole model is a few hundred MiB of JSON (a node per tensor, buffer and CB); Python holds
# ~10x that once parsed, so 512 MiB is the most this reads rather than a machine's memory.
MAX_REPORT_BYTES = 512 << 20
MAX_TEXT = 1 << 20  # one string (an error message, a memory config): 1 MiB is far past any TT-NN writes
MAX_INT = (1 << 63) - 1  # SQLite's INTEGER
# graph_report.py's _FILTERED_OP_PREFIXES: TT-NN's internal wrappers, left out (their children still count)
FILTERED_OP_PREFIXES = ("ttnn::convert_python_tensor_to_tt_tensor",
                        "tt::tt_metal::detail::convert_tt_tensor_to_framework_tensor", "Tensor::deallocate",
                        "Tensor::to_device", "Tensor::reshape", "tt::tt_metal::to_dtype")
BUFFER_LAYOUTS = {"INTERLEAVED": 0, "HEIGHT_SHARDED": 1, "WIDTH_SHARDED": 2, "BLOCK_SHARDED": 3}
DEVICE_COLUMNS = ("device_id", "num_y_cores", "num_x_cores", "num_y_compute_cores", "num_x_compute_cores",
                  "worker_l1_size", "l1_num_banks", "l1_bank_size", "address_at_first_l1_bank",
                  "address_at_first_l1_cb_buffer", "num_banks_per_storage_core", "num_compute_cores",
                  "num_storage_cores", "total_l1_memory", "total_l1_for_tensors", "total_l1_for_interleaved_buffers",
                  "total_l1_for_sharded_buffers", "cb_limit")
# report_metadata keys that are ttreport's own: a capture's metadata never replaces them
OWN_METADATA = frozenset({folder.SCHEMA_VERSION_KEY, folder.REVISION_KEY, "status"})
# The YAML texts a report may carry, and the fixed names they take in the folder (graph_report.py's names)
SIDE_FILES = {"cluster_descriptor": folder.CLUSTER_DESCRIPTOR_FILE, "mesh_coordinate_mapping": folder.MESH_MAPPING_FILE}
# The database while the import writes it; renamed to db.sqlite when whole (a report is never half an import)
PARTIAL_FILE = f".{folder.DB_FILE}.import"


class GraphReportError(TTReportError, ValueError):
    """A graph capture file ttreport cannot import: the message names the bad value and what to do."""


# -- reading the JSON: every value checked before it is used ------------------------------------------------------
class _Reader:
    """Typed reads of one untrusted JSON file; each failure names the file, the place and the value."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, what: str, value) -> GraphReportError:
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        return GraphReportError(f"{self.path}: {where} is {what}, not {shown}; import the JSON that "
                                f"ttnn.graph.end_graph_capture_to_file wrote, unchanged")

    def load(self):
        try:
            size = self.path.stat().st_size
            if not self.path.is_file():
                raise GraphReportError(f"{self.path} is not a file; give the JSON file "
                                       f"ttnn.graph.end_graph_capture_to_file wrote")
            if size > MAX_REPORT_BYTES:
                raise GraphReportError(f"{self.path} is {size:,d} bytes, more than the {MAX_REPORT_BYTES:,d} an "
                                       f"import reads; capture fewer ops per file (end and begin the capture again)")
            with open(self.path, "rb") as f:
                data = f.read(MAX_REPORT_BYTES + 1)
        except OSError as e:
            raise GraphReportError(f"cannot read {self.path} ({e.strerror or type(e).__name__}); give the path of "
                                   f"a graph capture's JSON file") from None
        if len(data) > MAX_REPORT_BYTES:  # it grew while read
            raise GraphReportError(f"{self.path} is more than {MAX_REPORT_BYTES:,d} bytes; capture fewer ops per file")
        try:
            return json.loads(data, parse_constant=self._constant)
        except (ValueError, RecursionError) as e:  # JSONDecodeError, bad UTF-8, nesting too deep
            why = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
            raise GraphReportError(f"{self.path} is not JSON ({why}); give the file "
                                   f"ttnn.graph.end_graph_capture_to_file wrote") from None

    def _constant(self, name):
        raise GraphReportError(f"{self.path} holds {name}, which is not JSON; give the file "
                               f"ttnn.graph.end_graph_capture_to_file wrote")

    def dict(self, value, where):
        if not isinstance(value, dict):
            raise self.fail(where, "an object", value)
        return value

    def list(self, value, where):
        if not isinstance(value, list):
            raise self.fail(where, "a list", value)
        return value

    def int(self, value, where, default=0):
        """An int in [0, MAX_INT]; TT-NN writes some as decimal strings (a CB's size and address)."""
        if value is None:
            return default
        if isinstance(value, str) and value.isdigit() and len(value) <= 19:
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
            raise self.fail(where, f"an integer from 0 to {MAX_INT}", value)
        return value

    def text(self, value, where, default=""):
        if value is None:
            return default
        if not isinstance(value, str) or len(value) > MAX_TEXT:
            raise self.fail(where, f"a string of at most {MAX_TEXT:,d} characters", value)
        if not value.isascii():
            try:  # JSON's "\ud800" is a lone surrogate: no UTF-8 text, which SQLite refuses mid-import
                value.encode()
            except UnicodeEncodeError:
                raise self.fail(where, "Unicode text", value) from None
        return value

    def ints(self, value, where):
        return [self.int(v, f"{where}[{i}]") for i, v in enumerate(self.list(value or [], where))]


def _nodes(r: _Reader, graph) -> list[dict]:
    """The graph's nodes, each checked: a node_type, params, connections and input_tensors of the right types."""
    nodes = []
    for i, node in enumerate(r.list(graph, '"graph"')):
        where = f"graph[{i}]"
        node = r.dict(node, where)
        nodes.append({"node_type": r.text(node.get("node_type"), f"{where}.node_type"),
                      "counter": r.int(node.get("counter", i), f"{where}.counter"),
                      "params": r.dict(node.get("params") or {}, f"{where}.params"),
                      "arguments": [r.text(a if isinstance(a, str) else json.dumps(a), f"{where}.arguments")
                                    for a in r.list(node.get("arguments") or [], f"{where}.arguments")],
                      "connections": r.ints(node.get("connections"), f"{where}.connections"),
                      "input_tensors": r.ints(node.get("input_tensors"), f"{where}.input_tensors"),
                      "duration_ns": r.int(node.get("duration_ns"), f"{where}.duration_ns"),
                      "raw": node})
    return nodes


def _python_io(r: _Reader, records) -> dict[str, deque]:
    """The `.python_io.json` records by op name, in order (graph_report.py's python_io_by_name)."""
    by_name = defaultdict(deque)
    for i, rec in enumerate(r.list(records or [], "python_io")):
        where = f"python_io[{i}]"
        rec = r.dict(rec, where)
        args = r.dict(rec.get("arguments") or {}, f"{where}.arguments")
        trace = rec.get("python_stack_trace")
        by_name[r.text(rec.get("name"), f"{where}.name")].append({
            "arguments": {r.text(k, f"{where}.arguments key"): r.text(v if isinstance(v, str) else json.dumps(v),
                                                                       f"{where}.arguments[{k!r}]")
                          for k, v in args.items()},
            "input_tensor_ids": r.ints(rec.get("input_tensor_ids"), f"{where}.input_tensor_ids") or None,
            "output_tensor_ids": r.ints(rec.get("output_tensor_ids"), f"{where}.output_tensor_ids") or None,
            "python_stack_trace": "".join(r.text(line, f"{where}.python_stack_trace")
                                          for line in r.list(trace or [], f"{where}.python_stack_trace")),
        })
    return by_name


# -- the rows: graph_report.py's import_graph ---------------------------------------------------------------------
class _Rows:
    """The rows of one graph, built as graph_report.py's import_graph builds them (see its comments for the why)."""

    def __init__(self, r: _Reader, nodes: list[dict], python_io: dict[str, deque], dev_id: dict[int, int],
                 per_operation_buffers: dict | None):
        self.r, self.graph, self.python_io, self.dev_id = r, nodes, python_io, dev_id
        self.per_operation_buffers = per_operation_buffers
        self.operations, self.arguments, self.inputs, self.outputs = [], [], [], []
        self.tensors, self.device_tensors, self.buffers, self.errors = {}, [], [], []
        self.owner = {}  # address -> the first tensor seen there (graph_report.py's scan of its tensors, as a dict)
        self.stack_traces, self.captured_graph, self.nodes = [], [], []

    def device(self, value, where):
        raw = self.r.int(value, where)
        return self.dev_id.get(raw, raw)

    def tensor_id(self, node) -> int | None:
        """The tensor id of the graph node at index `node`, or None when it is no tensor node."""
        if node >= len(self.graph) or self.graph[node]["node_type"] != "tensor":
            return None
        tid = self.graph[node]["params"].get("tensor_id")
        return None if tid is None or tid == "" else self.r.int(tid, f"graph[{node}].params.tensor_id")

    def build(self):
        stack, depth, seen_compute = [], 0, False
        active = []  # (device_id, address, max_size_per_bank, buffer_type, layout): buffers live now
        scope = None  # what the top-level op now open has seen in its nested ops
        for i, node in enumerate(self.graph):
            kind, params, where = node["node_type"], node["params"], f"graph[{i}]"
            if scope is not None:
                scope["nodes"].append(node)
            if kind == "function_start":
                name = self.r.text(params.get("name"), f"{where}.params.name", "unknown")
                filtered = name.startswith(FILTERED_OP_PREFIXES) or (name == "ttnn.from_torch" and not seen_compute)
                if not filtered and depth == 0 and name != "ttnn.from_torch":
                    seen_compute = True
                nested = depth > 0 or filtered
                queue = self.python_io.get(name)
                stack.append({"node": node, "name": name, "nested": nested,
                              "python_io": queue.popleft() if queue else None})
                if not nested:
                    depth += 1
                    # (operation_id, unique_id, node_operation_id, name): TT-NN 0.81's graph_report.py fills both ids
                    # with the op's (the older one at peer/TT_METAL_COMMIT wrote operation_id 0)
                    self.nodes.append((len(self.operations) + 1, node["counter"], len(self.operations) + 1, name))
                    scope = {"nodes": [node], "in": [], "out": [], "out_nodes": [], "nested_out": set(),
                             "nested_in": set()}
            elif kind == "function_end":
                start = stack.pop() if stack else None
                if start is not None and start["nested"]:
                    if scope is not None:
                        self.nest(scope, start, node)
                    continue
                depth = max(depth - 1, 0)
                op_id = len(self.operations) + 1
                self.operation(op_id, self.r.text(params.get("name"), f"{where}.params.name", "unknown"),
                               node, start, scope or {"nodes": [], "in": [], "out": [], "out_nodes": [],
                                                      "nested_out": set(), "nested_in": set()}, active)
                scope = None
            elif kind == "tensor":
                self.tensor(node, where)
            elif kind == "buffer_allocate":
                layout = self.r.text(params.get("layout"), f"{where}.params.layout", "INTERLEAVED")
                size = self.r.int(params.get("size"), f"{where}.params.size")
                active.append((self.device(params.get("device_id"), f"{where}.params.device_id"),
                               self.r.int(params.get("address"), f"{where}.params.address"),
                               self.r.int(params.get("max_size_per_bank", size), f"{where}.params.max_size_per_bank"),
                               self.r.int(params.get("buffer_type"), f"{where}.params.buffer_type"),
                               BUFFER_LAYOUTS.get(layout, 0)))
            elif kind == "buffer_deallocate":
                address = self.deallocated(node, where)
                if address is not None:
                    active = [b for b in active if b[1] != address]
                owner = self.owner.get(address)
                if not stack:  # outside every op: an op of its own, as graph_report.py makes it
                    op_id = len(self.operations) + 1
                    self.operations.append((op_id, "ttnn::deallocate", 0.0, "ok"))
                    self.nodes.append((op_id, node["counter"], op_id, "ttnn::deallocate"))
                    if owner is not None:
                        self.inputs.append((op_id, owner))
                    self.buffers.extend((op_id, *b) for b in active)
                    self.captured_graph.append((op_id, _subgraph([node], alone=True)))
                elif owner is not None and scope is not None:
                    scope["in"].append(owner)
            elif kind == "error":
                open_op = next((s for s in reversed(stack) if not s["nested"]), None)
                self.errors.append({"after": len(self.operations) + 1 if open_op else 0,
                                    "name": self.r.text(params.get("error_operation"), f"{where}.params."
                                                        "error_operation"),
                                    "type": self.r.text(params.get("error_type"), f"{where}.params.error_type",
                                                        "unknown"),
                                    "message": self.r.text(params.get("error_message"),
                                                           f"{where}.params.error_message")})
        errored = {e["name"] for e in self.errors}
        for orphan in stack:  # started, never ended: the op crashed the capture
            if not orphan["nested"] and orphan["name"] not in errored:
                self.errors.append({"after": 0, "name": orphan["name"], "type": "incomplete_operation",
                                    "message": f"Operation '{orphan['name']}' started but never completed "
                                               f"(likely crashed)"})
        return self

    def deallocated(self, node, where):
        if "address" in node["params"]:
            return self.r.int(node["params"]["address"], f"{where}.params.address")
        for c in node["connections"]:
            if c < len(self.graph) and self.graph[c]["node_type"] == "buffer_allocate":
                return self.r.int(self.graph[c]["params"].get("address"), f"graph[{c}].params.address")
        return None

    def nest(self, scope, start, end):
        """A nested op's tensors, lifted to the top-level op around it when it names none of its own."""
        own_in = [t for t in map(self.tensor_id, start["node"]["input_tensors"]) if t is not None]
        scope["nested_in"].update(own_in)
        scope["in"].extend(own_in)
        for c in end["connections"]:
            tid = self.tensor_id(c)
            if tid is not None:
                if tid not in own_in:
                    scope["nested_out"].add(tid)
                scope["out"].append(tid)
                scope["out_nodes"].append(self.graph[c])

    def operation(self, op_id, name, end, start, scope, active):
        py = start["python_io"] if start else None
        status = "ok"
        self.operations.append((op_id, name, end["duration_ns"] / 1e9, status))
        if py and py["arguments"]:
            self.arguments.extend((op_id, k, v) for k, v in py["arguments"].items())
        elif start:
            self.arguments.extend((op_id, f"arg_{i}", a) for i, a in enumerate(start["node"]["arguments"]))
        if py and py["python_stack_trace"]:
            self.stack_traces.append((op_id, py["python_stack_trace"]))
        if py and py["input_tensor_ids"]:
            self.inputs.extend((op_id, t) for t in py["input_tensor_ids"])
        elif start:
            direct = [t for t in map(self.tensor_id, start["node"]["input_tensors"]) if t is not None]
            lifted = [t for t in dict.fromkeys(scope["in"]) if t not in scope["nested_out"]]
            self.inputs.extend((op_id, t) for t in direct or lifted)
        out = [c for c in end["connections"] if self.tensor_id(c) is not None]
        out_nodes = [self.graph[c] for c in out]
        if py and py["output_tensor_ids"]:
            self.outputs.extend((op_id, t) for t in py["output_tensor_ids"])
            out_nodes = []  # graph_report.py's subgraph of an op with Python I/O ends at its function_end
        elif out:
            self.outputs.extend((op_id, self.tensor_id(c)) for c in out)
        else:  # lifted from the nested ops: their outputs no other nested op read
            internal = scope["nested_out"] & scope["nested_in"]
            kept = {}
            for tid, n in zip(scope["out"], scope["out_nodes"]):
                if tid not in internal and tid not in kept:
                    kept[tid] = n
            self.outputs.extend((op_id, t) for t in kept)
            out_nodes = list(kept.values())
        self.captured_graph.append((op_id, _subgraph(scope["nodes"] + out_nodes)))
        counter = start["node"]["counter"] if start else None
        snapshot = (self.per_operation_buffers or {}).get(str(counter)) if counter is not None else None
        if snapshot is not None:
            self.buffers.extend((op_id, *b) for b in snapshot)
        else:
            self.buffers.extend((op_id, *b) for b in active)

    def tensor(self, node, where):
        p = node["params"]
        tid = None if p.get("tensor_id") in (None, "") else self.r.int(p["tensor_id"], f"{where}.params.tensor_id")
        if tid is None or tid in self.tensors:
            return
        device_id = None if p.get("device_id") is None else self.device(p.get("device_id"), f"{where}.params.device_id")
        address = None if p.get("address") is None else self.r.int(p.get("address"), f"{where}.params.address")
        if address is not None:
            self.owner.setdefault(address, tid)
        self.tensors[tid] = (self.r.text(p.get("shape"), f"{where}.params.shape"),
                             self.r.text(p.get("dtype"), f"{where}.params.dtype", None),
                             self.r.text(p.get("layout"), f"{where}.params.layout", None),
                             self.r.text(p.get("memory_config"), f"{where}.params.memory_config", None),
                             device_id, address, self.r.int(p.get("buffer_type"), f"{where}.params.buffer_type"),
                             None if p.get("size") is None else self.r.int(p.get("size"), f"{where}.params.size"))
        if p.get("device_tensors"):
            try:
                shards = json.loads(self.r.text(p["device_tensors"], f"{where}.params.device_tensors"))
            except ValueError:
                raise self.r.fail(f"{where}.params.device_tensors", "a JSON list", p["device_tensors"]) from None
            for j, dt in enumerate(self.r.list(shards, f"{where}.params.device_tensors")):
                dt = self.r.dict(dt, f"{where}.params.device_tensors[{j}]")
                self.device_tensors.append((tid, self.device(dt.get("mesh_device_id", dt.get("device_id")),
                                                             f"{where}.params.device_tensors[{j}].device_id"),
                                            self.r.int(dt.get("address"), f"{where}.params.device_tensors[{j}]."
                                                                          "address")))


def _subgraph(nodes: list[dict], alone: bool = False) -> str:
    """One op's nodes between a capture_start and a capture_end, renumbered from 0 (graph_report.py's
    captured_graph, which ttnn-visualizer's graph view reads). `alone`: a deallocation outside every op, whose one
    node graph_report.py links to the capture_end and leaves its other numbers as they were."""
    ends = {"arguments": [], "connections": [], "input_tensors": [], "params": {}, "stacking_level": 0}
    raw = [{**ends, "node_type": "capture_start", "connections": [1], "counter": 0}, *(n["raw"] for n in nodes),
           {**ends, "node_type": "capture_end", "counter": 0}]
    renumber = {n.get("counter", 0): i for i, n in enumerate(raw)}
    out = []
    for i, n in enumerate(raw):
        n = {**n, "counter": i, "id": i}
        if alone and i == 1:
            n.update({"connections": [2]} if "connections" in n else {})
        else:
            for key in ("connections", "input_tensors"):
                if isinstance(n.get(key), list):
                    n[key] = [renumber.get(c, c) for c in n[key]]
        out.append(n)
    return json.dumps(out)


# -- writing the report -------------------------------------------------------------------------------------------
def import_graph_report(report_path, dest, *, overwrite: bool = False) -> Path:
    """Import the graph capture `report_path` (and its `.python_io.json` beside it, if any) into a new report
    folder `dest`; returns the report's database path.

    Args:
        report_path: the JSON file `ttnn.graph.end_graph_capture_to_file` wrote (report version 1).
        dest: the report folder to make; one that holds anything is refused unless `overwrite`, and then only a
            ttreport report is replaced (folder.refuse_existing, as a capture does).
        overwrite: replace the report at `dest`.
    """
    r = _Reader(Path(report_path))
    report = r.dict(r.load(), "the file")
    version = report.get("version")
    if version != SUPPORTED_REPORT_VERSION:
        raise GraphReportError(f"{r.path} is graph report version {version!r}; ttreport imports version "
                               f"{SUPPORTED_REPORT_VERSION}, the one TT-NN's graph_report.py reads")
    nodes = _nodes(r, report.get("graph", []))
    devices = [r.dict(d, f"devices[{i}]") for i, d in enumerate(r.list(report.get("devices") or [], '"devices"'))]
    raw_ids = sorted({r.int(d.get("device_id"), f"devices[{i}].device_id") for i, d in enumerate(devices)})
    dev_id = {raw: i for i, raw in enumerate(raw_ids)}  # from 0, as graph_report.py renumbers them
    device_rows = {}
    for i, d in enumerate(devices):
        row = [r.int(d.get(c), f"devices[{i}].{c}") for c in DEVICE_COLUMNS]
        row[0] = dev_id[row[0]]
        device_rows[row[0]] = tuple(row)  # INSERT OR REPLACE in graph_report.py: the last one per id
    python_io = report.get("python_io")
    if python_io is None:
        sidecar = r.path.with_suffix(".python_io.json")
        if sidecar.is_file():
            python_io = _Reader(sidecar).load()
    per_op = report.get("per_operation_buffers")
    if per_op is not None:
        per_op = {str(r.int(k, "a per_operation_buffers key")):
                  [(dev_id.get(r.int(b.get("device_id"), "per_operation_buffers device_id"), 0),
                    r.int(b.get("address"), "per_operation_buffers address"),
                    r.int(b.get("max_size_per_bank"), "per_operation_buffers max_size_per_bank"),
                    r.int(b.get("buffer_type"), "per_operation_buffers buffer_type"),
                    r.int(b.get("buffer_layout"), "per_operation_buffers buffer_layout"))
                   for b in (r.dict(b, f"per_operation_buffers[{k!r}][]") for b in r.list(v, f"per_operation_"
                                                                                            f"buffers[{k!r}]"))]
                  for k, v in r.dict(per_op, '"per_operation_buffers"').items()}
    rows = _Rows(r, nodes, _python_io(r, python_io), dev_id, per_op).build()
    metadata = {r.text(k, "a metadata key"): v if isinstance(v, (int, float)) else r.text(v, f"metadata[{k!r}]")
                for k, v in r.dict(report.get("metadata") or {}, '"metadata"').items() if k not in OWN_METADATA}
    side = {SIDE_FILES[k]: r.text(report[k], f'"{k}"') for k in SIDE_FILES if report.get(k)}

    dest = Path(dest)
    made = not os.path.lexists(dest)
    # refuses a folder holding anything but a report it may replace, which stays until this one is whole
    lock = folder.prepare(dest, overwrite, replace_later=True)
    partial, db_path = dest / PARTIAL_FILE, dest / folder.DB_FILE
    written = [partial, dest / f"{PARTIAL_FILE}-journal"]  # removed unless the import completes
    whole = False
    try:
        for path in written:  # a killed import's, in a report folder being overwritten
            path.unlink(missing_ok=True)
        # a file name's bytes that are not UTF-8 (Python holds them as lone surrogates) as \xff: text SQLite stores
        source = os.fsencode(r.path.resolve()).decode(errors="backslashreplace")
        db.create(partial, metadata={**metadata, "imported_from": source, "status": "complete"})
        _write(partial, rows, device_rows)
        folder.remove_report_files(dest)  # the report being overwritten, if any: its replacement is whole
        for name, text in side.items():
            fd = os.open(dest / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            written.append(dest / name)
            with os.fdopen(fd, "w") as f:
                f.write(text)
        os.replace(partial, db_path)
        whole = True
    except (sqlite3.Error, OSError) as e:
        why = (e.strerror if isinstance(e, OSError) else None) or str(e) or type(e).__name__
        raise GraphReportError(f"cannot write the report into {dest} ({why}); nothing of the import was kept: free "
                               f"disk space (or raise the file size limit) or give another DEST, and import again"
                               ) from None
    finally:
        if not whole:
            for path in written:
                with contextlib.suppress(OSError):
                    path.unlink()
        folder.unlock(dest, lock)
        if not whole and made:
            with contextlib.suppress(OSError):  # only while empty: what this import made and nothing else
                dest.rmdir()
    return db_path


def _write(db_path: Path, rows: _Rows, device_rows: dict) -> None:
    # Only I/O rows that name a tensor the graph describes, once per op, indexed in order (graph_report.py's
    # dedup); host tensors (no device) only when an op reads or makes them.
    def indexed(pairs):
        seen, n, out = set(), defaultdict(int), []
        for op_id, tid in pairs:
            if tid in rows.tensors and (op_id, tid) not in seen:
                seen.add((op_id, tid))
                out.append((op_id, n[op_id], tid))
                n[op_id] += 1
        return out

    referenced = {tid for _, tid in rows.inputs + rows.outputs}
    tensors = [(tid, *t) for tid, t in rows.tensors.items() if t[4] is not None or tid in referenced]
    kept = {t[0] for t in tensors}
    producer = {}
    for op_id, _, tid in (outputs := indexed(rows.outputs)):
        producer.setdefault(tid, op_id)
    failed = {e["after"] for e in rows.errors if e["after"]}
    con = sqlite3.connect(db_path, isolation_level=None)
    try:
        con.execute("BEGIN")
        con.executemany("INSERT INTO operations (operation_id, name, duration, depth, status) VALUES (?, ?, ?, 0, ?)",
                        [(o, n, d, "error" if o in failed else s) for o, n, d, s in rows.operations])
        con.executemany("INSERT INTO operation_arguments (operation_id, name, value) VALUES (?, ?, ?)",
                        rows.arguments)
        con.executemany("INSERT INTO tensors (tensor_id, shape, dtype, layout, memory_config, device_id, address, "
                        "buffer_type, size, producer_operation_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [(tid, shape, _dotted(dtype), _dotted(layout), mc, dev, addr, bt, size, producer.get(tid))
                         for tid, shape, dtype, layout, mc, dev, addr, bt, size in tensors])
        con.executemany("INSERT INTO input_tensors (operation_id, input_index, tensor_id) VALUES (?, ?, ?)",
                        indexed(rows.inputs))
        con.executemany("INSERT INTO output_tensors (operation_id, output_index, tensor_id) VALUES (?, ?, ?)",
                        outputs)
        con.executemany("INSERT INTO device_tensors (tensor_id, device_id, address) VALUES (?, ?, ?)",
                        list(dict.fromkeys(dt for dt in rows.device_tensors if dt[0] in kept)))
        con.executemany("INSERT INTO buffers (operation_id, device_id, address, max_size_per_bank, buffer_type, "
                        "buffer_layout) VALUES (?, ?, ?, ?, ?, ?)", rows.buffers)
        con.executemany("INSERT INTO errors (operation_id, operation_name, error_type, error_message, stack_trace, "
                        "timestamp) VALUES (?, ?, ?, ?, '', '')",
                        [(e["after"], e["name"], e["type"], e["message"]) for e in rows.errors])
        con.executemany("INSERT INTO stack_traces (operation_id, stack_trace) VALUES (?, ?)", rows.stack_traces)
        con.executemany("INSERT INTO captured_graph (operation_id, captured_graph) VALUES (?, ?)",
                        rows.captured_graph)
        con.executemany("INSERT INTO nodes (operation_id, unique_id, node_operation_id, name) VALUES (?, ?, ?, ?)",
                        rows.nodes)
        con.executemany("INSERT INTO edges (operation_id, source_unique_id, sink_unique_id, source_output_index, "
                        "sink_input_index, key) VALUES (?, ?, ?, ?, 0, ?)",
                        [(op_id, n["counter"], sink, i, i) for op_id, g in rows.captured_graph
                         for n in json.loads(g) for i, sink in enumerate(n["connections"])])
        con.executemany(f"INSERT INTO devices VALUES ({', '.join('?' * len(DEVICE_COLUMNS))})",
                        list(device_rows.values()))
        con.execute("COMMIT")
    finally:
        con.close()


def _dotted(name: str | None) -> str | None:
    """TT-NN's C++ names (DataType::BFLOAT16) as its Python prints them (DataType.BFLOAT16), as graph_report.py does."""
    return name.replace("::", ".") if name else name
