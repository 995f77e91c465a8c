"""`ttnn.graph`: TT-NN's graph capture, driven from device_sim's op hook and memory listener.

    ttnn.graph.begin_graph_capture(ttnn.graph.RunMode.NORMAL)
    y = ttnn.relu(x)
    trace = ttnn.graph.end_graph_capture()          # a list of TT-NN's graph nodes
    ttnn.graph.extract_calltrace(trace)             # ['ttnn.relu', 'UnaryDeviceOperation']
    ttnn.graph.extract_peak_L1_memory_usage(trace)  # bytes

The nodes are GraphProcessor's (tt-metal ttnn/core/graph/graph_processor.cpp at peer/TT_METAL_COMMIT): each
has `counter`, `node_type`, `params`, `arguments`, `connections`, `input_tensors`, `stacking_level`, and
`duration_ns` on a function_end or capture_end. Params are strings but for size, address, tensor_id,
device_id, buffer_type, page_size, num_cores and max_size_per_bank, which are ints, as to_json() writes them.
Every device_sim op call is a `function_start`/`function_end` pair named as TT-NN's Python decorator names it
(`ttnn.relu`), its input tensors as `tensor` nodes (with their `buffer`s) pointing at it and its outputs
hanging off its function_end; each buffer it allocates is made in a nested `tt::tt_metal::create_device_tensor`
(`buffer` and `buffer_allocate` nodes), each program the op launches is a nested pair named as TT-NN names the device
operation (`UnaryDeviceOperation`) holding `circular_buffer_deallocate_all` and one
`circular_buffer_allocate` per CB; every buffer allocated or freed meanwhile is a `buffer_allocate` /
`buffer_deallocate` node. end_graph_capture_to_file writes TT-NN's report file (version, graph, devices,
metadata) and the `.python_io.json` sidecar that TT-NN's ttnn/graph_report.py imports.

Departures, each because device_sim is no hardware: RunMode.NO_DISPATCH still runs every op (the math runs on
the host; nothing is dispatched to skip), so it differs from NORMAL only in writing address 0 for buffers and
CBs, as TT-NN's mocked allocations read. The `arguments` of a create_device_tensor that makes an op's output are
TT-NN's (shape, dtype, layout, device id, memory config; a temporary's stay empty), and a device operation's are
its attributes and its input tensors as tt_stl's reflection prints them; but device_sim keeps no C++
operation_attributes_t, so the attributes' fields are the Python call's (by parameter name, the output's spec
resolved: _attributes_text). An op's outputs are created inside its device operation's node, as TT-NN's launch()
creates them, where device_sim allocated them just before launching the program (_enclose); where anything else
came between, they stay just before it. An op that raises gets an `error` node (error_type, error_message,
error_operation: the form graph_report.py imports) before its function_end.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import json
import pathlib
import re
import threading
import time
import traceback
from dataclasses import dataclass, fields, is_dataclass

import torch

from device_sim import registry
from device_sim.compute_config import MathFidelity, init_device_compute_kernel_config
from device_sim.config import CONFIG
from device_sim.device import open_devices
from device_sim.device_work import cores_text
from device_sim.dtypes import ELEMENT_SIZE
from device_sim.tensor import StorageType, Tensor
from device_sim.types import BufferType, Layout, MemoryConfig, Shape, TensorMemoryLayout

REPORT_VERSION = 1  # graph_consts.hpp's kCurrentReportVersion


class RunMode(enum.IntEnum):
    """How ops run while captured (IGraphProcessor::RunMode)."""

    NORMAL = 0
    NO_DISPATCH = 1


# to_json() writes these params as numbers, every other one as a string
_INT_PARAMS = frozenset({"size", "address", "tensor_id", "device_id", "buffer_type", "page_size", "num_cores",
                         "max_size_per_bank"})
_LAYOUT_NAMES = {TensorMemoryLayout.INTERLEAVED: "INTERLEAVED", TensorMemoryLayout.HEIGHT_SHARDED: "HEIGHT_SHARDED",
                 TensorMemoryLayout.WIDTH_SHARDED: "WIDTH_SHARDED", TensorMemoryLayout.BLOCK_SHARDED: "BLOCK_SHARDED"}


def _node(counter: int, node_type: str, params: dict, level: int, connections=None) -> dict:
    return {"counter": counter, "node_type": node_type, "params": params, "arguments": [],
            "connections": connections if connections is not None else [], "input_tensors": [],
            "stacking_level": level}


class _Processor:
    """One capture: GraphProcessor's vertex list and its stack of open functions."""

    def __init__(self, mode: RunMode):
        self.mode = RunMode(mode)
        self.graph = [_node(0, "capture_start", {}, 0)]
        self.stack = [0]  # current_op_id: counters of the open function_starts, capture_start at the bottom
        self.starts: list[int] = []  # perf_counter_ns of each open function
        self.last_finished = -1
        self.buffers: dict[int, int] = {}  # buffer id -> its `buffer` node
        self.devices: dict[int, dict] = {}  # device id -> its info, as track_device() records it
        # an open op call's function_start -> the call and the nodes made inside it whose arguments its end fills:
        # {"call": (op, args, kwargs), "programs": [device operation starts], "created": {buffer id: start}}
        self.calls: dict[int, dict] = {}
        self.t0 = time.perf_counter_ns()
        self.timestamp_ns = time.time_ns()

    def _add(self, node_type: str, params: dict, connections=None) -> int:
        counter = len(self.graph)
        self.graph.append(_node(counter, node_type, params, len(self.stack) - 1, connections))
        self.graph[self.stack[-1]]["connections"].append(counter)
        return counter

    def _address(self, address: int) -> int:
        return 0 if self.mode == RunMode.NO_DISPATCH else address

    def add_buffer(self, buf) -> int:
        node = self.buffers.get(buf.buffer_id)
        if node is None:
            node = self.buffers[buf.buffer_id] = self._add("buffer", {
                "size": buf.size, "type": _type_name(buf), "buffer_type": int(buf.buffer_type),
                "layout": _LAYOUT_NAMES.get(buf.buffer_layout, "UNKNOWN"), "device_id": buf.device_id})
        return node

    def add_tensor(self, t) -> int:
        shards = getattr(t, "shards", None)
        buf = shards[0].buffer if shards else t.buffer
        params = {"shape": str(t.shape), "tensor_id": t.tensor_id, "dtype": f"DataType::{t.dtype.name}",
                  "layout": f"Layout::{t.layout.name}", "size": t.logical_volume() * ELEMENT_SIZE.get(t.dtype, 1)}
        if buf is not None and t.is_allocated():
            params["memory_config"] = str(t.memory_config())
            params.update(device_id=buf.device_id, address=self._address(buf.address),
                          buffer_type=int(buf.buffer_type))
            if shards:
                params["device_tensors"] = json.dumps([
                    {"device_id": s.buffer.device_id, "mesh_device_id": buf.device_id,
                     "address": self._address(s.buffer.address)} for s in shards if s.buffer is not None])
        counter = len(self.graph)
        self.graph.append(_node(counter, "tensor", params, len(self.stack) - 1))
        if buf is not None:
            self.graph[self.add_buffer(buf)]["connections"].append(counter)
        return counter

    def function_start(self, name: str, inputs=(), call=None) -> None:
        counter = len(self.graph)
        node = _node(counter, "function_start", {"inputs": str(len(inputs)), "name": name}, len(self.stack))
        self.graph.append(node)
        if call is not None:
            # pending: the first create_device_tensor of outputs no device operation encloses yet
            self.calls[counter] = {"call": call, "programs": [], "created": {}, "pending": None}
        if self.last_finished != -1:
            self.graph[self.last_finished]["connections"].append(counter)
            self.last_finished = -1
        self.graph[self.stack[-1]]["connections"].append(counter)
        self.stack.append(counter)
        self.starts.append(time.perf_counter_ns())
        for t in inputs:
            tensor = self.add_tensor(t)
            self.graph[tensor]["connections"].append(counter)
            node["input_tensors"].append(tensor)

    def function_end(self, outputs=()) -> None:
        if len(self.stack) == 1:
            raise RuntimeError("ttnn.graph.track_function_end() without a function_start open in the capture")
        start = self.stack[-1]
        name = self.graph[start]["params"]["name"]
        counter = len(self.graph)
        node = _node(counter, "function_end", {"name": name}, self.graph[start]["stacking_level"])
        duration = time.perf_counter_ns() - self.starts.pop()
        if duration > 0:
            node["duration_ns"] = duration
        self.graph.append(node)
        self.graph[start]["connections"].append(counter)
        self.last_finished = counter
        for t in outputs:
            node["connections"].append(self.add_tensor(t))
        self.stack.pop()
        call = self.calls.pop(start, None)
        if call is not None:
            self._fill_arguments(call, outputs)

    def _fill_arguments(self, call: dict, outputs) -> None:
        """The C++ arguments of the nodes an op call made, once its outputs are known: each create_device_tensor of
        an output (shape, dtype, layout, device, memory config) and each device operation (its attributes, its
        input tensors), as device/device_operation.hpp's launch() hands them to track_function_start."""
        op, args, kwargs = call["call"]
        for t in outputs:
            for buf in _buffers(t):
                start = call["created"].get(buf.buffer_id)
                if start is not None:
                    self.graph[start]["arguments"] = [str(t.shape), f"DataType::{t.dtype.name}",
                                                      f"Layout::{t.layout.name}", str(_device_id(t)),
                                                      str(t.memory_config())]
        if not call["programs"]:
            return
        attributes = _attributes_text(op, args, kwargs, outputs[0] if outputs else None)
        inputs = [t for t in tensors_in((args, kwargs)) if t.storage_type() == StorageType.DEVICE]
        for start in call["programs"]:
            reads = [] if self.graph[start]["params"]["name"] in _NO_TENSOR_ARGS else inputs
            self.graph[start]["arguments"] = [attributes, "{" + ", ".join(_tensor_text(t) for t in reads) + "}"]

    def error(self, name: str, exc: BaseException) -> None:
        self._add("error", {"error_type": type(exc).__name__, "error_message": str(exc), "error_operation": name})

    def allocate(self, buf, device) -> None:
        """A buffer an op allocates is made inside a nested create_device_tensor, as TT-NN allocates one (so
        extract_peak_L1_memory_usage's look at a top-level op's input buffers never takes it for one)."""
        self._track_device(device)
        inside = len(self.stack) > 1
        if inside:
            call = self.calls.get(self.stack[-1])
            self.function_start(_CREATE)
            if call is not None:
                call["created"][buf.buffer_id] = self.stack[-1]
                if call["pending"] is None:
                    call["pending"] = self.stack[-1]
        buffer_node = self.add_buffer(buf)
        self._add("buffer_allocate", {
            "size": buf.size, "address": self._address(buf.address), "type": _type_name(buf),
            "buffer_type": int(buf.buffer_type), "layout": _LAYOUT_NAMES.get(buf.buffer_layout, "UNKNOWN"),
            "page_size": buf.page_size, "num_cores": 0 if buf.cores is None else len(buf.cores),
            "device_id": buf.device_id, "max_size_per_bank": buf.max_size_per_bank}, [buffer_node])
        if inside:
            self.function_end()

    def deallocate(self, buf, device) -> None:
        self._track_device(device)
        buffer_node = self.add_buffer(buf)
        self._add("buffer_deallocate", {
            "size": buf.size, "address": self._address(buf.address), "type": _type_name(buf),
            "buffer_type": int(buf.buffer_type), "layout": _LAYOUT_NAMES.get(buf.buffer_layout, "UNKNOWN"),
            "page_size": buf.page_size, "num_cores": 0 if buf.cores is None else len(buf.cores),
            "device_id": buf.device_id}, [buffer_node])

    def program(self, program, device) -> None:
        """A launched program as its device operation: track_program's CB nodes inside a nested function."""
        self._track_device(device)
        call = self.calls.get(self.stack[-1])
        pending = call["pending"] if call is not None else None
        if pending is None or not self._enclose(call, pending, program.name):
            self.function_start(program.name)
        if call is not None:
            call["pending"] = None
            call["programs"].append(self.stack[-1])
        self._add("circular_buffer_deallocate_all", {"device_id": program.device_id}, [self.stack[-1]])
        cores = cores_text(program.ranges)
        for cb, address in program.cb_addresses():
            self._add("circular_buffer_allocate", {
                "size": str(cb.size), "address": str(self._address(address)), "core_range_set": cores,
                "globally_allocated": "1" if cb.globally_allocated else "0", "device_id": program.device_id})
        self.function_end()

    def _enclose(self, call: dict, first: int, name: str) -> bool:
        """Open device operation `name` at `first`, around the create_device_tensor nodes from there on, as TT-NN's
        launch() creates an op's outputs inside its device operation (device_sim allocates them before it launches
        the program). Only where nothing but those nodes came since, so that no node outside moves: the op's
        start and the function_end that linked on to `first` are the only nodes before it that name one after."""
        tail = self.graph[first:]
        if any(n["node_type"] not in ("buffer", "buffer_allocate") and n["params"].get("name") != _CREATE
               for n in tail):
            return False

        def shift(c: int) -> int:
            return c + 1 if c >= first else c

        for n in tail:
            n["counter"] += 1
            n["stacking_level"] += 1
            n["connections"] = [shift(c) for c in n["connections"]]
        parent = self.graph[self.stack[-1]]
        node = _node(first, "function_start", {"inputs": "0", "name": name}, len(self.stack),
                     [c + 1 for c in parent["connections"] if c >= first])
        parent["connections"] = [c for c in parent["connections"] if c < first] + [first]
        self.graph.insert(first, node)
        # the buffer nodes that moved are those of buffers first seen in the tail: all made by this call, so its
        # `created` names them (a scan of every buffer would make each launch cost the capture's length)
        for buffer_id in call["created"]:
            if self.buffers.get(buffer_id, -1) >= first:
                self.buffers[buffer_id] += 1
        call["created"] = {k: shift(v) for k, v in call["created"].items()}
        self.last_finished = shift(self.last_finished)
        self.stack.append(first)
        self.starts.append(time.perf_counter_ns())
        return True

    def _track_device(self, device) -> None:
        if device is None or device.device_id in self.devices:
            return
        c = device.config
        info = dict(device.facts(), arch=device.arch().name, num_dram_channels=c.dram_banks,
                    dram_size_per_channel=c.dram_bank_size)
        self.devices[device.device_id] = info

    def end(self) -> list:
        node = _node(len(self.graph), "capture_end", {}, 0)
        duration = time.perf_counter_ns() - self.t0
        if duration > 0:
            node["duration_ns"] = duration
        self.graph.append(node)
        self.graph[self.last_finished if self.last_finished != -1 else 0]["connections"].append(node["counter"])
        return self.graph

    def report(self) -> dict:
        metadata = {"capture_timestamp_ns": self.timestamp_ns}
        if self.graph[-1]["node_type"] == "capture_end":
            metadata["total_duration_ns"] = self.graph[-1].get("duration_ns", 0)
        # the distributed context's place (TT-NN 0.81's get_report(); its graph_report.py refuses a file without
        # a rank): device_sim runs in one process, rank 0 of 1, whatever the mesh
        metadata.update(rank=0, world_size=1)
        return {"version": REPORT_VERSION, "graph": self.graph, "devices": list(self.devices.values()),
                "metadata": metadata}


def _type_name(buf) -> str:
    return "DRAM" if buf.buffer_type == BufferType.DRAM else "L1"


# -- the C++ argument texts (graph_argument_serializer.cpp; tt_stl's reflection prints structs as Name(field=value,...))
# Device operations whose tensor_args_t holds no Tensor (tt-metal's ttnn/cpp/ttnn/operations at peer/TT_METAL_COMMIT,
# `struct tensor_args_t {};`: full, rand, randn, debug's apply_device_delay): their input vector is empty.
_NO_TENSOR_ARGS = frozenset({"FullDeviceOperation", "RandDeviceOperation", "RandnDeviceOperation",
                             "ApplyDeviceDelayDeviceOperation"})
_CREATE = "tt::tt_metal::create_device_tensor"
# The output spec a device operation holds resolved, where the call may leave it None
_RESOLVED = {"dtype": lambda t: t.dtype, "layout": lambda t: t.layout, "memory_config": lambda t: t.memory_config()}


def _buffers(t) -> list:
    shards = getattr(t, "shards", None)
    return [s.buffer for s in shards if s.buffer is not None] if shards else [b for b in [t.buffer] if b is not None]


def _device_id(t) -> int:
    # graph_argument_serializer.cpp writes a device pointer as its id
    bufs = _buffers(t)
    return bufs[0].device_id if bufs else 0


@functools.cache
def _signature(function) -> inspect.Signature:
    return inspect.signature(function)  # ~40 us a call: once per op, not once per op call


def _attributes_text(op, args, kwargs, output) -> str:
    """operation_attributes_t as device_sim can tell it: the call's arguments that are not tensors, by the op's
    parameter names, with dtype, layout and memory_config resolved from the output and a moreh op's omitted
    compute_kernel_config resolved as TT-NN resolves it (all 23 of init_device_compute_kernel_config's calls under
    operations/moreh default to HiFi4). device_sim keeps no C++ struct, so the fields are the Python call's."""
    try:
        bound = _signature(op.function).bind(*args, **kwargs)
    except TypeError:  # the call did not fit (the op raised): its attributes are unknown
        return "operation_attributes_t()"
    bound.apply_defaults()
    fields_ = []
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if name == "op_name" or kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if tensors_in(value):
            continue
        if value is None and name in _RESOLVED and output is not None:
            value = _RESOLVED[name](output)
        elif value is None and name == "compute_kernel_config" and op.name.startswith("ttnn.moreh_"):
            value = init_device_compute_kernel_config(math_fidelity=MathFidelity.HiFi4)
        fields_.append(f"{name}={_value_text(value)}")
    return f"operation_attributes_t({','.join(fields_)})"


def _value_text(value) -> str:
    """One value as tt_stl's reflection prints it."""
    if value is None:
        return "std::nullopt"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}::{value.name}"
    if isinstance(value, (int, float, str, Shape, MemoryConfig)):
        return str(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return f"SmallVector({list(value)})"  # ttnn::SmallVector: the container TT-NN's attributes hold dims in
    if isinstance(value, (list, tuple)):
        return "{" + ", ".join(_value_text(v) for v in value) + "}"
    if is_dataclass(value) and not isinstance(value, type):
        inner = ",".join(f"{f.name}={_value_text(getattr(value, f.name))}" for f in fields(value))
        return f"{type(value).__name__}({inner})"
    return f"<{type(value).__name__}>"  # graph_argument_serializer.cpp's text for a type it cannot print


def _tensor_text(t) -> str:
    """A Tensor as tt_stl's reflection prints one: its storage and TensorSpec (logical shape and TensorLayout, whose
    default alignment is page_config.cpp's: the tile's height and width for TILE, [1] for an interleaved
    ROW_MAJOR tensor, the shard width for a sharded one)."""
    tile = t.tile
    page = "TilePageConfig" if t.layout == Layout.TILE else "RowMajorPageConfig"
    cfg = t.memory_config()
    if t.layout == Layout.TILE:
        alignment = [tile.height, tile.width]
    elif cfg is not None and cfg.shard_spec is not None:
        alignment = [int(cfg.shard_spec.shape[1])]
    else:
        alignment = [1]
    storage = "DeviceStorage()" if t.storage_type() == StorageType.DEVICE else "HostStorage()"
    return (f"Tensor(storage={storage},tensor_spec=TensorSpec(logical_shape={t.shape},tensor_layout=TensorLayout("
            f"dtype=DataType::{t.dtype.name},page_config=PageConfig(config={page}(tile=Tile(tile_shape="
            f"{{{tile.height}, {tile.width}}},face_shape={{{tile.face_shape[0]}, {tile.face_shape[1]}}},num_faces="
            f"{tile.num_faces}))),memory_config={cfg},alignment=Alignment({alignment}))))")


# -- the tracker: open captures, the op hook and the devices' memory listeners ------------------------------
_lock = threading.RLock()
_processors: list[_Processor] = []
_hook = None  # the _OpHook installed while a capture is open
_listeners: dict[object, object] = {}  # device (a chip) -> the memory listener it had before the capture
_detailed_buffer_tracing = False
_python_io_data: list = []
_python_io_recording_enabled = False
_python_stack_traces_enabled = False


class _OpHook:
    """device_sim's hook while a capture is open: each op call is a function in every capture, and every call
    is handed on to `inner` (a ttreport capture or ttnn.tracer installed before)."""

    def __init__(self, inner):
        self.inner = inner

    def __repr__(self):
        return f"<ttnn.graph's hook, in front of {self.inner!r}>"

    def begin(self, op, args, kwargs):
        inputs = tensors_in((args, kwargs))
        with _lock:
            for t in inputs:
                _follow(getattr(t, "_device", None))
            _follow(kwargs.get("device"))
            for p in _processors:
                p.function_start(op.name, inputs, (op, args, kwargs))
            record = None
            if _python_io_recording_enabled:
                record = _python_record(op.name, args, kwargs, inputs)
        token = self.inner.begin(op, args, kwargs) if self.inner is not None else None
        return token, op.name, record

    def end(self, token, output, exc):
        inner_token, name, record = token
        try:
            if self.inner is not None:
                self.inner.end(inner_token, output, exc)
        finally:
            outputs = tensors_in(output) if exc is None else []
            with _lock:
                for p in _processors:
                    if exc is not None:
                        p.error(name, exc)
                    p.function_end(outputs)
                if record is not None:
                    record["output_tensor_ids"] = [t.tensor_id for t in outputs]

    def operation_id(self, token):
        op_id = getattr(self.inner, "operation_id", None)
        return op_id(token[0]) if op_id is not None else None


def tensors_in(value, kinds: tuple[type, ...] = (Tensor,), out: list | None = None) -> list:
    """Every instance of `kinds` in `value`, in order, lists, tuples, dicts and dataclasses opened: device_sim's
    Tensors for a graph capture's op inputs and outputs; ttnn.tracer passes (torch.Tensor, Tensor)."""
    out = [] if out is None else out
    if isinstance(value, kinds):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            tensors_in(v, kinds, out)
    elif isinstance(value, dict):
        for v in value.values():
            tensors_in(v, kinds, out)
    elif is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            tensors_in(getattr(value, f.name), kinds, out)
    return out


def _follow(device) -> None:
    """Hear `device`'s buffers and programs (each chip's, for a mesh) until the last capture ends."""
    if device is None or not hasattr(device, "config"):
        return
    for chip in getattr(device, "_chips", None) or [device]:
        memory = getattr(chip, "memory", None)
        if memory is None or chip in _listeners:
            continue
        previous = _listeners[chip] = memory.listener
        memory.listener = _listener(chip, previous)


def _listener(chip, previous):
    def on_memory(event: str, obj) -> None:
        with _lock:
            for p in _processors:
                if event == "alloc":
                    p.allocate(obj, chip)
                elif event == "free":
                    p.deallocate(obj, chip)
                else:  # "program": a device_work.Program
                    p.program(obj, chip)
        if previous is not None:
            previous(event, obj)

    on_memory.graph_chip = chip
    return on_memory


def _stop_following() -> None:
    for chip, previous in _listeners.items():
        if getattr(chip.memory.listener, "graph_chip", None) is chip:  # else someone replaced it: theirs stays
            chip.memory.listener = previous
    _listeners.clear()


# -- the capture API (graph_nanobind.cpp and ttnn/graph.py) --------------------------------------------------
def begin_graph_capture(run_mode: RunMode = RunMode.NORMAL) -> None:
    """Start capturing every op, buffer and program into a graph; captures nest, each gets every node."""
    global _hook, _python_io_data, _python_io_recording_enabled
    with _lock:
        if not _processors:
            _python_io_data = []
            _python_io_recording_enabled = True
        _processors.append(_Processor(run_mode))
        if _hook is None:
            _hook = _OpHook(registry.get_hook())
            registry.set_hook(_hook)

        for device in open_devices():
            _follow(device)


def _pop() -> _Processor:
    global _hook, _python_io_recording_enabled
    with _lock:
        if not _processors:
            raise RuntimeError("no graph capture is open: call ttnn.graph.begin_graph_capture() first")
        processor = _processors.pop()
        processor.end()
        if not _processors:
            _python_io_recording_enabled = False
            if registry.get_hook() is _hook:  # else someone installed theirs in front: ours passes calls on
                registry.set_hook(_hook.inner)
                _hook = None
            _stop_following()
        return processor


def end_graph_capture() -> list:
    """End the innermost capture and return its nodes."""
    return _pop().graph


def end_graph_capture_to_file(report_path) -> list:
    """End the innermost capture, write TT-NN's report file (and the Python I/O sidecar next to it) and return
    the nodes. `python -m ttnn.graph_report report.json DIR` (tt-metal's importer) reads the file."""
    processor = _pop()
    path = pathlib.Path(report_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(processor.report(), indent=2))
    if _python_io_data:
        path.with_suffix(".python_io.json").write_text(json.dumps(_python_io_data))
    return processor.graph


def is_graph_capture_active() -> bool:
    return bool(_processors)


def track_function_start(function_name: str) -> None:
    """Open a function node in every capture (what TT-NN's Python decorators call around an op)."""
    with _lock:
        for p in _processors:
            p.function_start(function_name)


def track_function_end() -> None:
    with _lock:
        for p in _processors:
            p.function_end()


def enable_detailed_buffer_tracing() -> None:
    """Set the flag TT-NN's report path reads. device_sim's reports write no per-page snapshots from it."""
    global _detailed_buffer_tracing
    _detailed_buffer_tracing = True


def disable_detailed_buffer_tracing() -> None:
    global _detailed_buffer_tracing
    _detailed_buffer_tracing = False


def is_detailed_buffer_tracing_enabled() -> bool:
    return _detailed_buffer_tracing


# -- Python-level I/O records (ttnn/graph.py): what end_graph_capture_to_file writes to the sidecar ------------
def enable_python_io_recording() -> None:
    global _python_io_recording_enabled
    _python_io_recording_enabled = True


def disable_python_io_recording() -> None:
    global _python_io_recording_enabled
    _python_io_recording_enabled = False


def is_python_io_recording_enabled() -> bool:
    return _python_io_recording_enabled


def enable_python_stack_traces() -> None:
    global _python_stack_traces_enabled
    _python_stack_traces_enabled = True


def disable_python_stack_traces() -> None:
    global _python_stack_traces_enabled
    _python_stack_traces_enabled = False


def is_python_stack_trace_enabled() -> bool:
    return _python_stack_traces_enabled


def _ttnn_tensor_summary(t) -> str:
    info = {"shape": t.shape, "dtype": t.dtype, "layout": t.layout, "memory_config": t.memory_config(),
            "storage_type": f"StorageType.{t.storage_type().name}", "tensor_id": t.tensor_id,
            "is_allocated": t.is_allocated()}
    device = t.device()
    if device is not None:
        info["device_id"] = device.id()
    return "ttnn.Tensor(" + ", ".join(f"{k}={v}" for k, v in info.items()) + ")"


def _safe_arg_str(v) -> str:
    if isinstance(v, Tensor):
        return _ttnn_tensor_summary(v)
    if isinstance(v, torch.Tensor):
        return f"torch.Tensor(shape={list(v.shape)}, dtype={v.dtype})"
    return str(v)


# Frames left out of a recorded stack trace: device_sim's own and the test runner's (TT-NN leaves out its
# decorators.py and graph.py, _pytest and pluggy the same way).
_INTERNAL_FRAME = re.compile(r"[/\\](device_sim|_pytest|pluggy)[/\\]|[/\\]bin[/\\]pytest$|^<frozen ")


def _python_record(name: str, args, kwargs, inputs) -> dict:
    record = {"name": name, "arguments": {**{k: _safe_arg_str(v) for k, v in kwargs.items()},
                                          **{str(i): _safe_arg_str(v) for i, v in enumerate(args)}},
              "input_tensor_ids": [t.tensor_id for t in inputs]}
    if _python_stack_traces_enabled:
        frames = [f for f in traceback.extract_stack() if not _INTERNAL_FRAME.search(f.filename)]
        record["python_stack_trace"] = [f'  File "{f.filename}", line {f.lineno}, in {f.name}\n    {f.line}\n'
                                        for f in reversed(frames)]
    _python_io_data.append(record)
    return record


def record_python_operation(name, function_args, function_kwargs) -> None:
    _python_record(name, function_args, function_kwargs, tensors_in((function_args, function_kwargs)))


def store_output_tensor_ids(output_tensor_ids) -> None:
    if _python_io_data:
        _python_io_data[-1]["output_tensor_ids"] = output_tensor_ids


def store_captured_graph(captured_graph_json) -> None:
    if _python_io_data:
        _python_io_data[-1]["captured_graph"] = captured_graph_json


@contextlib.contextmanager
def full_graph_capture(report_path, *, run_mode=None, slow_dispatch: bool = True):
    """Capture a block with stack traces and detailed buffer tracing on, written to `report_path` at its end."""
    prev_stack_traces, prev_buffers = _python_stack_traces_enabled, _detailed_buffer_tracing
    prev_fast = CONFIG.enable_fast_runtime_mode
    enable_python_stack_traces()
    enable_detailed_buffer_tracing()
    if slow_dispatch:
        CONFIG.enable_fast_runtime_mode = False
    try:
        begin_graph_capture(run_mode if run_mode is not None else RunMode.NORMAL)
        yield
        end_graph_capture_to_file(report_path)
    finally:
        if is_graph_capture_active():
            end_graph_capture()
        if not prev_buffers:
            disable_detailed_buffer_tracing()
        if not prev_stack_traces:
            disable_python_stack_traces()
        CONFIG.enable_fast_runtime_mode = prev_fast


# -- reading a trace (graph_trace_utils.cpp) -------------------------------------------------------------------
@dataclass(frozen=True)
class TensorInfo:
    shape: Shape
    size: int
    type: BufferType

    def __repr__(self) -> str:
        return f"TensorInfo(shape={self.shape}, size={self.size}, type={self.type.name})"


@dataclass(frozen=True)
class PeakMemoryUsagePerCore:
    peak_cb: int = 0  # circular buffers, bytes per core
    peak_l1: int = 0  # L1 buffers, bytes per core
    peak_total: int = 0

    def __repr__(self) -> str:
        return f"PeakMemoryUsagePerCore(peak_cb={self.peak_cb}, peak_l1={self.peak_l1}, peak_total={self.peak_total})"

    def __str__(self) -> str:
        return (f"Peak Memory Usage Per Core:\n  CB:    {self.peak_cb} bytes\n  L1:    {self.peak_l1} bytes\n"
                f"  Total: {self.peak_total} bytes")


def _int(v) -> int:
    return int(v)


def extract_calltrace(trace: list) -> list[str]:
    """The name of every function_start, in order."""
    return [v["params"]["name"] for v in trace if v["node_type"] == "function_start"]


def extract_peak_L1_memory_usage(trace: list) -> int:  # noqa: N802 (TT-NN's name)
    """The most bytes of L1 buffers plus CBs live at once, summed over the device (not per core)."""
    total_cb = total_buffer = peak = 0
    depth = 0
    i = 0
    while i < len(trace):
        v = trace[i]
        kind = v["node_type"]
        if kind == "function_start":
            if depth == 0:  # the input buffers listed right after a top-level op's start count as live
                while i + 1 < len(trace) and trace[i + 1]["node_type"] in ("buffer", "tensor"):
                    i += 1
                    inner = trace[i]
                    if inner["node_type"] == "buffer" and inner["params"]["type"] == "L1":
                        total_buffer += _int(inner["params"]["size"])
                    elif inner["node_type"] == "buffer":
                        break
            depth += 1
        elif kind == "circular_buffer_allocate":
            total_cb += _int(v["params"]["size"])
        elif kind == "circular_buffer_deallocate_all":
            total_cb = 0
        elif kind == "buffer_allocate" and v["params"]["type"] == "L1":
            total_buffer += _int(v["params"]["size"])
        elif kind == "buffer_deallocate":
            buffer = trace[v["connections"][0]]
            if buffer["params"]["type"] == "L1":
                total_buffer -= _int(buffer["params"]["size"])
        elif kind == "function_end":
            depth -= 1
        peak = max(peak, total_cb + total_buffer)
        i += 1
    return peak


def _last_end_with_tensors(trace: list) -> dict | None:
    for v in reversed(trace):
        if v["node_type"] == "function_end" and any(trace[c]["node_type"] == "tensor" for c in v["connections"]):
            return v
    return None


def extract_output_tensors(trace: list) -> set[int]:
    """The counters of the tensor nodes the last op with outputs produced."""
    end = _last_end_with_tensors(trace)
    if end is None:
        raise RuntimeError("No function_end node with tensor connections found in the trace")
    return {c for c in end["connections"] if trace[c]["node_type"] == "tensor"}


def count_intermediate_and_output_tensors(trace: list) -> tuple[int, int]:
    """(intermediate, output) tensor counts: create_device_tensor results that are not the last op's outputs."""
    if not any(v["node_type"] == "function_start" for v in trace):
        raise RuntimeError("the trace has no function_start: nothing ran in the capture")
    outputs = extract_output_tensors(trace)
    intermediate = {v["connections"][0] for v in trace
                    if v["node_type"] == "function_end" and v["params"]["name"] == "create_device_tensor"}
    return len(intermediate - outputs), len(outputs)


def extract_output_info(trace: list) -> list[TensorInfo]:
    """Shape, buffer size and buffer type of each output of the last op with outputs."""
    outputs = extract_output_tensors(trace)
    out = []
    for node in trace:
        if node["node_type"] != "buffer":
            continue
        for counter in dict.fromkeys(node["connections"]):
            if counter in outputs:
                shape_text = trace[counter]["params"]["shape"]
                dims = shape_text[shape_text.index("[") + 1:shape_text.index("]")]
                shape = Shape([int(d) for d in dims.split(",") if d.strip()])
                kind = BufferType.L1 if node["params"]["type"] == "L1" else BufferType.DRAM
                out.append(TensorInfo(shape, _int(node["params"]["size"]), kind))
    return out


def _per_core(node: dict, interleaved_storage_cores: int) -> int:
    params = node["params"]
    cores = _int(params["num_cores"]) or interleaved_storage_cores
    pages = -(-_int(params["size"]) // _int(params["page_size"]))
    return -(-pages // cores) * _int(params["page_size"])


def extract_resource_usage_per_core(trace: list, interleaved_storage_cores: int) -> PeakMemoryUsagePerCore:
    """Worst-case peak CB, L1-buffer and total bytes on one core (an interleaved buffer's pages spread over
    `interleaved_storage_cores`)."""
    cb = l1 = total = peak_cb = peak_l1 = peak_total = 0
    for expected, node in enumerate(trace):
        if node["counter"] != expected:
            raise RuntimeError("Graph trace counter/execution out of order")
        kind = node["node_type"]
        if kind == "circular_buffer_allocate":
            if _int(node["params"]["globally_allocated"]) != 1:
                size = _int(node["params"]["size"])
                cb += size
                total += size
                peak_cb, peak_total = max(peak_cb, cb), max(peak_total, total)
        elif kind == "circular_buffer_deallocate_all":
            total -= cb
            cb = 0
        elif kind in ("buffer_allocate", "buffer_deallocate") and node["params"]["type"] != "DRAM":
            size = _per_core(node, interleaved_storage_cores)
            if kind == "buffer_allocate":
                l1 += size
                total += size
                peak_l1, peak_total = max(peak_l1, l1), max(peak_total, total)
            else:
                l1 -= size
                total -= size
    return PeakMemoryUsagePerCore(peak_cb, peak_l1, peak_total)


def extract_levelized_graph(trace: list, max_level: int = 1) -> list[dict]:
    """The trace as data flow between ops at stacking level <= max_level and the level-1 input tensors
    (levelized_graph.cpp): each vertex has counter, stacking_level, name, arguments, in_edges, out_edges,
    internals, output_info and output_shape."""
    if [n["counter"] for n in trace] != list(range(len(trace))):
        raise RuntimeError("Graph trace counter/execution out of order")
    vertices, id_of = [], {}

    def vertex(node, name, level, arguments=()):
        id_of[node["counter"]] = len(vertices)
        vertices.append({"counter": len(vertices), "stacking_level": level, "name": name,
                         "arguments": [a for a in arguments if isinstance(a, str)], "in_edges": [], "out_edges": [],
                         "internals": [], "output_info": [], "output_shape": [], "_node": node["counter"]})

    for n in trace:
        if n["node_type"] == "tensor" and n["stacking_level"] == 1:
            vertex(n, f"tensor[{n['params']['tensor_id']}]" if "tensor_id" in n.get("params", {}) else "tensor", 1)
            if "shape" in n.get("params", {}):
                vertices[-1]["output_shape"].append(n["params"]["shape"])
    for n in trace:
        if n["node_type"] == "function_start" and n["stacking_level"] <= max_level:
            vertex(n, n["params"]["name"], n["stacking_level"], n.get("arguments", []))

    def connections(n):
        return [c for c in n.get("connections", []) if 0 <= c < len(trace)]

    start_to_end, end_to_start = {}, {}
    for n in trace:
        if n["node_type"] == "function_start":
            ends = [c for c in connections(n) if trace[c]["node_type"] == "function_end"
                    and trace[c]["params"]["name"] == n["params"]["name"]]
            if ends:
                start_to_end[n["counter"]], end_to_start[ends[0]] = ends[0], n["counter"]
    producer_end = {}  # tensor counter -> the shallowest function_end that produced it
    for n in trace:
        if n["node_type"] == "function_end":
            for c in connections(n):
                if trace[c]["node_type"] == "tensor":
                    old = producer_end.get(c)
                    if old is None or n["stacking_level"] < trace[old]["stacking_level"]:
                        producer_end[c] = n["counter"]

    def producer(tensor_counter):
        start = end_to_start.get(producer_end.get(tensor_counter, -1))
        return id_of.get(start) if start is not None else None

    def add_edge(src, dst):
        if src != dst and dst not in vertices[src]["out_edges"]:
            vertices[src]["out_edges"].append(dst)

    consumers: dict[int, list[int]] = {}
    for n in trace:
        if n["node_type"] == "tensor":
            for c in connections(n):
                consumers.setdefault(c, []).append(n["counter"])
    for v in vertices:
        node = trace[v["_node"]]
        if node["node_type"] == "tensor":
            for c in connections(node):
                if c in id_of:
                    add_edge(v["counter"], id_of[c])
            continue
        for t in consumers.get(node["counter"], []):
            if t in id_of:
                add_edge(id_of[t], v["counter"])
            elif (p := producer(t)) is not None:
                add_edge(p, v["counter"])
    for v in vertices:
        node = trace[v["_node"]]
        if node["node_type"] == "tensor" or node["counter"] not in start_to_end:
            continue
        end = start_to_end[node["counter"]]
        v["internals"] = [id_of[n["counter"]] for n in trace[node["counter"] + 1:end]
                          if n["node_type"] == "function_start" and n["stacking_level"] == v["stacking_level"] + 1
                          and n["counter"] in id_of]
    for v in vertices:
        for c in v["out_edges"]:
            consumer = vertices[c]
            first = consumer["arguments"][0] if consumer["arguments"] else ""
            if consumer["stacking_level"] == v["stacking_level"] and first.startswith("Tensor("):
                if first not in v["output_info"]:
                    v["output_info"].append(first)
                break
    for v in vertices:
        node = trace[v["_node"]]
        if node["node_type"] == "tensor" or node["counter"] not in start_to_end:
            continue
        for c in connections(trace[start_to_end[node["counter"]]]):
            shape = trace[c].get("params", {}).get("shape") if trace[c]["node_type"] == "tensor" else None
            if shape is not None and shape not in v["output_shape"]:
                v["output_shape"].append(shape)
    for v in vertices:
        node = trace[v["_node"]]
        if node["node_type"] == "tensor":
            if (p := producer(node["counter"])) is not None:
                v["in_edges"].append(p)
            continue
        for t in node.get("input_tensors", []):
            if t in id_of:
                v["in_edges"].append(id_of[t])
            elif (p := producer(t)) is not None:
                v["in_edges"].append(p)
    for v in vertices:
        del v["_node"]
    return vertices


# -- printing and drawing (ttnn/graph.py) ------------------------------------------------------------------------
_LABELS = {"capture_start": "Capture Start", "capture_end": "Capture End", "buffer": "Add Device Buffer",
           "buffer_allocate": "Allocate Device Buffer", "buffer_deallocate": "Deallocate Device Buffer",
           "circular_buffer_allocate": "Allocate Circular Buffer",
           "circular_buffer_deallocate_all": "Deallocate All Circular Buffers"}


def pretty_format(captured_graph: list) -> str:
    output, tabs = "", ""
    for node in captured_graph:
        kind = node["node_type"]
        if kind == "function_end":
            tabs = tabs[:-4]
        if kind == "function_start":
            text = "Function Start: " + node["params"]["name"]
        elif kind == "function_end":
            text = "Function End:   " + node["params"]["name"]
        elif kind == "tensor":
            text = "Add Tensor: " + str(node["params"]["tensor_id"])
        elif kind == "error":
            text = "Error: " + node["params"].get("error_message", "")
        elif kind in _LABELS:
            text = _LABELS[kind]
        else:
            raise ValueError(f"Unknown node type: {kind}")
        output += f"{tabs}{text:{50 - len(tabs)}}\n"
        if kind == "function_start":
            tabs += "    "
    return output


def pretty_print(captured_graph: list) -> None:
    print(pretty_format(captured_graph))


def visualize(captured_graph: list, *, file_name=None):
    """The graph drawn by graphviz, each function a cluster; rendered to file_name (.svg, .png or .pdf)."""
    import graphviz  # only when drawing

    graph = graphviz.Digraph(engine="dot", graph_attr={"ordering": "in", "rankdir": "TB"},
                             node_attr={"style": "filled", "fontsize": "10", "shape": "box", "margin": "0"})
    with contextlib.ExitStack() as clusters:
        current, stack = graph, []
        for node in captured_graph:
            kind, params = node["node_type"], node["params"]
            if kind == "function_start":
                stack.append(current)
                current = clusters.enter_context(current.subgraph(name=f"cluster_{node['counter']}"))
                current.attr(label=params["name"])
            label = kind + (f"\n{params['name']}" if "name" in params and kind.startswith("function") else "")
            label += f"\n{params['tensor_id']}" if kind == "tensor" else ""
            current.node(f"node_{node['counter']}", label, fillcolor="#DCDCDC")
            if kind == "function_end":
                current = stack.pop()
    if stack:
        raise ValueError("Call stack not empty")
    for node in captured_graph:
        for sink in node["connections"]:
            graph.edge(f"node_{node['counter']}", f"node_{sink}")
    if file_name is not None:
        file_name = pathlib.Path(file_name)
        if file_name.suffix not in {".svg", ".png", ".pdf"}:
            raise ValueError(f"file_name must have a .svg, .png or .pdf suffix, not {file_name.suffix}")
        graph.render(file_name.with_suffix(""), format=file_name.suffix[1:])
    return graph
