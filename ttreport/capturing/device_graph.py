"""An op's device work as TT-NN's graph capture writes it: the `captured_graph` JSON the visualizer reads.

device_sim tells the recorder about each program an op launches (device_sim.device_work.Program:
the device operation's name, its circular buffers, their cores). The writer turns an op's programs
into one JSON array of TT-NN's graph nodes (graph_processor.cpp): `counter`, `node_type`, `params`
(every value a string), `arguments` and `connections`. The op is a `function_start` named as C++
names it (`ttnn::matmul`), each program a nested `function_start` (`MatmulDeviceOperation`) holding a
`circular_buffer_deallocate_all` (TT-Metal frees the previous program's CBs first) and one
`circular_buffer_allocate` per CB. ttnn-visualizer counts the nested names as "Device operations"
and sums the CB sizes per core into "Peak L1 memory load per core".

Example:
    >>> from device_sim.device_work import CircularBuffer, Program, cores_row_major
    >>> p = Program("MatmulDeviceOperation", "1D", (CircularBuffer((0,), 2, 2048),), cores_row_major(2, 8),
    ...             program_id=1, device_id=0, cb_base=98304)
    >>> import json
    >>> [n["node_type"] for n in json.loads(captured_graph("ttnn.matmul", [p]))]  # doctest: +NORMALIZE_WHITESPACE
    ['capture_start', 'function_start', 'function_start', 'circular_buffer_deallocate_all',
     'circular_buffer_allocate', 'function_end', 'function_end', 'capture_end']
"""

from __future__ import annotations

import hashlib
import json

from device_sim.device_work import cores_text
from ttreport.capturing import records

# TensorMemoryLayout numbers -> the names graph_processor.cpp writes
_LAYOUTS = {0: "INTERLEAVED", 1: "SINGLE_BANK", 2: "HEIGHT_SHARDED", 3: "WIDTH_SHARDED", 4: "BLOCK_SHARDED"}


def _buffer_params(a: tuple) -> dict:
    """A recorder ALLOC record (records.Alloc) as track_allocate's params; num_cores is 0 for an interleaved
    buffer, as TT-NN writes it."""
    a = records.view(a)
    cores = 0 if a.buffer_layout == 0 else -(-a.size // max(a.max_size_per_bank, 1))
    return {"size": str(a.size), "address": str(a.address), "type": "L1",
            "layout": _LAYOUTS.get(a.buffer_layout, "UNKNOWN"), "num_cores": str(cores), "device_id": str(a.device_id)}


def cpp_name(op_name: str) -> str:
    """'ttnn.experimental.rotary_embedding' -> 'ttnn::experimental::rotary_embedding', as TT-NN's graph names ops."""
    return op_name.replace(".", "::")


def captured_graph(op_name: str, programs: list, l1_allocs=()) -> str:
    """The JSON text of one op's captured graph, its programs in launch order.

    `l1_allocs` are the recorder's ALLOC records of the L1 buffers the op made (its outputs): TT-NN
    allocates them inside the device operation before its program's CBs, so they appear there, as
    `buffer_allocate` nodes the visualizer adds (per core) to the CBs' load.
    """
    return _build(op_name, programs, l1_allocs)


def graph_id(text: str) -> int:
    """A captured graph's id in distinct_graphs: its text's BLAKE2b-64 as a signed integer (SQLite's INTEGER), so
    the same graph has the same id in every report (migration 0012 gives old reports' graphs the same)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def graph_rows(text: str) -> tuple[list, list]:
    """The `nodes` and `edges` rows of a captured graph's JSON text, less the op's id (the writer keeps them once
    per distinct graph and copies them under each op's id in SQL).

    nodes: (unique_id, is a function_start, name); edges: (source, sink, connection index, 0, connection index).
    edges as TT-NN 0.81's graph_report.py writes them from a captured graph: one row per connection, (operation_id,
    source counter, sink counter, connection index, 0, connection index). nodes hold every node of the graph under
    the op's id (unique_id its counter, the one edges join on; node_operation_id the op's id on a function_start,
    the op or a device operation; name the C++ name or the node type), so that TT-NN's
    database.load_graph(report, operation_id) rebuilds the op's graph; graph_report.py itself writes one row per
    top-level op, under its report's base id (docs/schema_parity.md).
    """
    graph = json.loads(text)
    nodes = [(n["counter"], n["node_type"] == "function_start", n.get("params", {}).get("name", n["node_type"]))
             for n in graph]
    edges = [(n["counter"], sink, index, 0, index) for n in graph for index, sink in enumerate(n["connections"])]
    return nodes, edges


def _build(op_name: str, programs: list, l1_allocs) -> str:
    nodes: list[dict] = []

    def node(node_type: str, params: dict, parent: int | None) -> int:
        counter = len(nodes)
        nodes.append({"counter": counter, "node_type": node_type, "params": params, "arguments": [],
                      "connections": []})
        if parent is not None:
            nodes[parent]["connections"].append(counter)
        return counter

    top = node("capture_start", {}, None)
    name = cpp_name(op_name)
    op = node("function_start", {"name": name, "inputs": "0"}, top)
    # A mesh op's output is one buffer at one address on all its chips (TT-NN's lock-step mesh allocation: one
    # buffer_allocate node). The visualizer adds every buffer_allocate into one "Peak L1 memory load per core",
    # so only the first chip's copy is a node; the buffers table keeps every chip's.
    chip = programs[0].device_id if programs else None
    for i, p in enumerate(programs):
        device = str(p.device_id)
        start = node("function_start", {"name": p.name, "inputs": "0", "device_id": device}, op)
        if i == 0:
            for a in l1_allocs:
                if records.view(a).device_id == chip:
                    node("buffer_allocate", _buffer_params(a), start)
        node("circular_buffer_deallocate_all", {"device_id": device}, start)
        cores = cores_text(p.ranges)
        for cb, address in p.cb_addresses():
            node("circular_buffer_allocate", {"size": str(cb.size), "address": str(address), "core_range_set": cores,
                                              "globally_allocated": "1" if cb.globally_allocated else "0",
                                              "device_id": device}, start)
        node("function_end", {"name": p.name}, start)
    node("function_end", {"name": name}, op)
    node("capture_end", {}, top)
    return json.dumps(nodes, separators=(",", ":"))
