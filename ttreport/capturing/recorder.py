"""The hook device_sim calls around every op: the only ttreport code on the model's thread.

begin() and end() take ids, clocks, a cheap stack (code objects and line numbers, not text)
and references to what cannot change later (a tensor's values are immutable torch tensors),
then append ONE tuple to the op log (oplog.LogQueue). Formatting, SQL and file writes happen
in the writer process and on the tensor thread. Tensor objects themselves are never queued: holding them
would delay their buffers' frees and change the memory picture being recorded.

The recorder sits in device_sim's single, process-wide hook slot (not in a context variable,
as STYLE.md suggests), because a capture must record the ops of every thread.

Queue records are plain tuples tagged by their first item, declared in records.py (records.Op, records.Alloc,
...: their fields in order), which every producer and consumer imports; _hook.c reads the same positions.
They are made as the op log writes them, so that appending one is a marshal and a copy: a stack is the
number the log defined it under, a tensor argument is b"t<id>", any other object the log's b"o<n>", files are
(tensor_id, path) pairs; what a record names by id (a stack's code objects, a MemoryConfig, a device's perf
config) the log defines when the recorder first sees it (define_stack, define_config, define_device), before
the record.
A spec (records.Spec)'s layout is int(layout), or (int(layout), tile height, tile width) for a tile other than
32x32 (ttnn.Tile((16, 32)) pads to 16 rows). Records hold ints and strings,
not the enums, configs, Buffer or torch tensor objects of each op: the garbage collector
untracks such tuples, so a queue of thousands of ops costs its collections nothing.
"""

from __future__ import annotations

import datetime
import itertools
import os
import runpy
import sys
import threading
import time
import traceback
import warnings
import weakref

import torch

import device_sim
import ttreport
from device_sim import perf_model, views
from device_sim.allocator import Buffer
from device_sim.complex_tensor import ComplexTensor
from device_sim.device import Device
from device_sim.device_work import Program
from device_sim.distributed import MeshTensor
from device_sim.tensor import DEFAULT_TILE, Tensor
from device_sim.types import BufferType, Layout
from ttreport import schema_sql
from ttreport.capturing import log_perf, log_tensors, stacks
from ttreport.capturing.records import ALLOC, DEVICE, FREE, OP, ROW, TENSOR, Text, Token
from ttreport.errors import ReportIncompleteWarning

try:
    from ttreport.capturing import _hook
except ImportError:  # built without a C compiler: the Python begin, end and listener
    _hook = None

# begin, end and the memory listener in C (ttreport/capturing/_hook.c); the Python methods below are its
# specification (tests/test_hook_native.py holds them equal), its fallback (TTREPORT_PURE=1, no compiler) and
# its slow path
NATIVE = _hook is not None and stacks.NATIVE

# Ids of tensors the capture makes itself (goldens) start here, far above device_sim's: taken
# from device_sim's counter by a background thread, they would shift the model's tensor ids
# from run to run.
MADE_TENSOR_ID_BASE = 10**12

# Tensor ids the recorder remembers having queued a spec for. A run makes millions of tensors, and a
# set of every id grew ~110 B per tensor for the whole run. Past MAX_SEEN, the older half is forgotten:
# a tensor seen again after that (a weight used all run long) has its spec queued once more, and the
# writer's INSERT OR IGNORE keeps its first row. The cost: one extra spec per such tensor per
# MAX_SEEN // 2 new tensors; memory stays under ~7 MB.
MAX_SEEN = 1 << 16
# The stored tensors' bookkeeping (_stored, _stored_values: ~250 B a tensor) is pruned of tensors whose device_sim
# Tensor is gone each time it has doubled, from this size up: a long capture with tensors="outputs" keeps about
# twice its live stored tensors, not every tensor it ever stored (1,000,000 small outputs held ~250 MB before).
PRUNE_STORED_AT = 1 << 14
MAX_STACKS = 200_000  # distinct stacks remembered (a log defines one seen again after that once more)
_PRIMITIVE = frozenset({int, float, bool, str, type(None)})  # argument types recorded as they are
_DEFAULT_TILE_SHAPE = [32, 32]  # a spec names any other tile (_layout_key)
_MESH = object()  # Recorder._devices' value for a mesh: it is recorded as its chips

# Frames in these folders are the library's, not the user's, and are left out of stack traces;
# so are the interpreter's own (`<frozen runpy>` under `python -m`). The example models shipped
# inside the packages are user code: their traces show the model's lines.
_LIBRARY_DIRS = (os.path.dirname(os.path.abspath(device_sim.__file__)) + os.sep,
                 os.path.dirname(os.path.abspath(ttreport.__file__)) + os.sep)  # all of ttreport, not capture/ alone
_EXAMPLE_FILES = frozenset(os.path.join(d, name) for d, name in zip(_LIBRARY_DIRS, ("examples.py", "demo.py")))


_RUNNER_FILES = frozenset({runpy.__file__})  # `ttreport run` and `python -m` run the user's script through it


def user_stacklevel() -> int:
    """warnings.warn's stacklevel, for its caller, that names the first frame outside device_sim and ttreport (the
    user's call of the op), however many frames of theirs lie between: an op's hook is called from C
    (device_sim/_native.c's Dispatch) or from registry's Python wrapper."""
    f, level = sys._getframe(1), 1
    while f.f_back is not None and _is_library(f.f_code.co_filename):
        f, level = f.f_back, level + 1
    return level


def _is_library(filename: str) -> bool:
    return filename.startswith("<frozen ") or filename in _RUNNER_FILES or (
        filename.startswith(_LIBRARY_DIRS) and filename not in _EXAMPLE_FILES)


def outer_boundary(frame):
    """The code of the first library frame at or outside `frame` (the one that opened a capture), or None.

    When ttreport itself runs the user's code (`ttreport run`, `ttreport demo`), nothing outside that
    frame is the user's (click, the console script): stack traces stop there.
    """
    while frame is not None:
        if _is_library(frame.f_code.co_filename):
            return frame.f_code
        frame = frame.f_back
    return None



def _layout_key(t) -> int | tuple:
    """A spec's layout: int(layout), with the tile's height and width if not 32x32 (its padded shape differs)."""
    tile = t.tile
    if tile is None or tile.tile_shape == _DEFAULT_TILE_SHAPE or t.layout != Layout.TILE:
        return int(t.layout)
    return (int(t.layout), *tile.tile_shape)


class Recorder:
    def __init__(self, config, queue, storage=None, *, t0_ns: int | None = None):
        self.config = config
        self.queue = queue  # an oplog.LogQueue: the op log the writer process reads
        self.storage = storage  # log_tensors.LogStorage
        self.golden = None  # ttreport.capturing.golden's checker when config.comparison != "off"
        self.t0_ns = t0_ns if t0_ns is not None else time.perf_counter_ns()
        self._op_ids = itertools.count(1)
        self._seq = itertools.count(1)  # buffer events and op ends; 0 means "before the capture"
        self._local = threading.local()
        self._seen: dict[int, None] = {}  # tensor ids whose spec is queued, oldest first; at most MAX_SEEN
        self._stored: set[int] = set()  # tensor ids whose values are queued for storage
        # tensor id -> (the Tensor, the values last queued for it), both weakly: a write into a stored tensor is stored
        # when its values changed; an entry whose Tensor is gone is pruned (_prune_stored)
        self._stored_values: dict[int, tuple[weakref.ref, weakref.ref]] = {}
        self._prune_at = PRUNE_STORED_AT
        self._storage_lock = threading.Lock()
        self.tensor_bytes = 0
        self.tensors_skipped = 0
        self.tensor_bytes_skipped = 0
        self._devices: dict[object, object] = {}  # Device -> its previous memory listener
        self._allocators: list[tuple] = []  # (L1, DRAM) BankAllocator of each device
        self._code_is_lib: dict[int, tuple] = {}  # id(code) -> (code, is_library); holding code keeps ids unique
        self._configs: dict[int, object] = {}  # id(MemoryConfig) -> it: records carry the id, held here
        self._stacks: dict[tuple, object] = {}  # stack (code ids and lines) -> what records carry for it
        self._wire = queue.wire
        self._stack_traces = config.stack_traces
        self._stack_items = config.stack_depth * 2
        self._walk = stacks.walker(config.stack_depth)
        self._store_inputs = config.tensors == "all"
        self._store_outputs = config.tensors != "none"
        self._suffix = ".pt" if config.detach_saved_tensors else ".bin"
        self._put = queue.items.append  # straight to the log (LogSink.append), which paces the model itself
        self._on_buffer = self._buffer_listener()
        # (handler, signum) of a signal that arrived inside a finalizer (see capture._on_signal):
        # delivered at the next op's start, where its exception reaches the model.
        self.deferred_signal = None
        self._made_ids = itertools.count(MADE_TENSOR_ID_BASE)
        self.boundary = None  # stack traces stop at this code object's frame (see outer_boundary)
        self._last_op_exception = None  # id() of the latest exception an op raised: recorded with the op
        self.host_outputs = False  # whether an op's output was a host tensor (set once; read at close)
        self.steps = 0  # the run's step() calls (Capture.step): each op records it at its begin (the C begin too)
        # device_sim's estimate of each op; a process writer makes most of them itself (ttreport.capturing.log_perf)
        self.estimate = perf_model.estimate_op
        if NATIVE:
            self._use_native()

    def _use_native(self) -> None:
        # The C hook shares this recorder's state (counters, dicts, the thread-local op stack, the log's pending
        # list and lock): it records the common op itself and calls the methods below for the rest.
        sink = self.queue.items
        native = _hook.Hook(
            rec=self, begin_py=type(self).begin, end_py=type(self).end, listener_py=self._on_buffer,
            op_ids=self._op_ids, seq=self._seq, local=self._local, seen=self._seen, stacks=self._stacks,
            define_stack=self._define_stack, walk=self._walk, code_is_lib=self._code_is_lib, classify=self._classify,
            stack_items=self._stack_items, allocators=self._allocators, tensor_type=Tensor, buffer_type=Buffer,
            default_tile=DEFAULT_TILE, strip=self._strip, see=self._see, devices=self._devices, configs=self._configs,
            estimates=self._estimates, sink=sink, t0=self.t0_ns, max_seen=MAX_SEEN, stack_traces=self._stack_traces,
            pages=self.config.buffer_pages, store_inputs=self._store_inputs, store_outputs=self._store_outputs,
            program_type=Program, graphs=self.config.device_graphs)
        self.begin, self.end, self._on_buffer = native.begin, native.end, native.on_buffer
        storage = self.storage
        if self._store_outputs and isinstance(storage, log_tensors.LogStorage) and storage.pt:
            # A stored output's values into the op's own write, in C (_plan_storage and put_with_op's common case)
            native.store_with(stored=self._stored, stored_values=self._stored_values, storage=storage,
                              lock=self._storage_lock, shared=views.SHARED, dtype_text=log_tensors._TEXT,
                              suffix=self._suffix, torch_tensor=torch.Tensor, values_tag=log_tensors.VALUES,
                              max_tensor_bytes=self.config.max_tensor_bytes, log_max_bytes=storage.max_bytes,
                              prune=self._prune_stored, prune_at=self._prune_at)

    def _estimates(self, op) -> bool:
        """Whether end() asks self.estimate about `op` (the C hook asks once an op, and leaves those to end())."""
        if self.estimate is log_perf.estimate_on_model_thread:
            return op.short_name in log_perf.ON_MODEL_THREAD
        return True

    # -- the hook --------------------------------------------------------------------------
    def begin(self, op, args, kwargs):
        if self.deferred_signal is not None:
            self._deliver_signal()
        start = time.perf_counter_ns()
        local = self._local
        stack = getattr(local, "stack", None)
        if stack is None:
            stack = local.stack = []
            local.thread = threading.current_thread().name
        op_id = next(self._op_ids)
        parent = stack[-1] if stack else None
        stack.append(op_id)
        if self._stack_traces:  # interned: the same stack is the same number (tuple) every time
            # (id(code), line, ...) of the innermost user frames, from the op's caller out: no text, no library.
            frames = self._walk(1, self.boundary, self._stack_items, self._code_is_lib, self._classify)
            stack_ref = self._stacks.get(frames)
            if stack_ref is None:
                stack_ref = self._define_stack(frames)
        else:
            stack_ref = None
        inputs: list[int] = []
        specs: list[tuple] = []
        files: list[tuple] = []
        seen = self._seen
        strip = self._strip
        args_q = []
        for a in args:
            if type(a) is Tensor:  # the common case, inlined: a tensor the capture has seen already
                tid = a.tensor_id
                if tid in seen:
                    inputs.append(tid)
                    args_q.append(b"t%d" % tid)
                    continue
            args_q.append(a if type(a) in _PRIMITIVE else strip(a, inputs, specs))
        args_q = tuple(args_q)
        kwargs_q = {k: strip(v, inputs, specs) for k, v in kwargs.items()} if kwargs else None
        if self._store_inputs:
            for a in itertools.chain(args, kwargs.values()):
                for t in (a if isinstance(a, (list, tuple)) else (a,)):
                    for part in _parts(t):
                        if isinstance(part, Tensor):
                            self._plan_storage(part, files)
        # Snapshotted before the op runs: an in-place op (attention_softmax_, the KV-cache ops) changes its input.
        golden_args = self.golden.before_op(args, kwargs) if self.golden is not None else None
        # records.Token, as a plain tuple (the C begin makes the same)
        return (op, op_id, start, parent, len(stack) - 1, local.thread, stack_ref, args_q, kwargs_q, inputs, specs,
                files, golden_args, args, kwargs, self.steps)

    def operation_id(self, token) -> int:
        """The report's operation_id for the op begin() returned `token` for (ttnn.tracer labels its nodes so)."""
        return _token(token).operation_id

    def end(self, token, output, exc):
        end = time.perf_counter_ns()
        token = _token(token)
        op, op_id, inputs, specs, files = token.op, token.operation_id, token.inputs, token.specs, token.files
        self._local.stack.pop()
        writes: list[tuple] = []  # values this op wrote into already-stored tensors: files for storage only
        if type(output) is Tensor:  # the common case: one new tensor
            tid = output.tensor_id
            outputs = (tid,)
            if tid not in self._seen:
                self._see(output, op_id, [], specs)
            if self._store_outputs:
                self._plan_storage(output, files, op_id, writes)
        else:
            outputs = []
            if output is not None:
                self._see_outputs(output, op_id, outputs, specs, files, writes)
            outputs = tuple(outputs)
        l1 = dram = 0
        for l1_banks, dram_banks in self._allocators:  # DeviceMemory.bytes_used, without two calls per device
            l1 += l1_banks.bytes_per_bank_used * l1_banks.num_banks
            dram += dram_banks.bytes_per_bank_used * dram_banks.num_banks
        error = None
        if exc is not None:
            error = _error(exc)
            self._last_op_exception = id(exc)
        # Tuples of ints and strings: the collector untracks them, and the queue costs it nothing to walk.
        t0 = self.t0_ns
        if files or writes:  # the values go into the op's own write (log_tensors.LogStorage)
            self.storage.put_with_op(files + writes)
        self._put((OP, op.name, op_id, token.start_ns - t0, end - t0, token.parent_operation_id, token.depth,
                   token.thread, token.stack, token.args, token.kwargs, tuple(inputs), outputs, tuple(specs),
                   files and tuple([(f[0], f[1]) for f in files]) or None, next(self._seq), l1, dram,
                   error, token.step))  # records.Op
        if exc is None:
            args, kwargs, golden_args = token.op_args, token.op_kwargs, token.golden_args
            # device_sim's performance model: shapes and dtypes only, a few microseconds (docs/perf_model.md).
            est = self.estimate(op, args, kwargs, output)
            if est is not None:
                self._put((ROW, "device_perf", {"operation_id": op_id, "compute_ns": est.compute_ns,
                                                "bandwidth_ns": est.bandwidth_ns, "ideal_ns": est.ideal_ns,
                                                "bound": est.bound, "math_fidelity": est.math_fidelity}))
            if golden_args is not None:
                # The seam for ttreport.capturing.golden: it runs the op's golden function and records the
                # comparison with emit() and store_tensor(). It must read tensors through `.value`, never call
                # device_sim ops (those would be recorded as the model's ops).
                self.golden.after_op(op, golden_args[0], golden_args[1], output, op_id)

    def _see_outputs(self, output, op_id, outputs, specs, files, writes) -> None:
        for item in output if isinstance(output, (list, tuple)) else (output,):
            # one level down too: conv2d returns (out, (h, w), (weights, bias))
            for u in item if type(item) in (list, tuple) else (item,):
                for t in _parts(u):
                    if isinstance(t, Tensor):
                        self._see(t, op_id, outputs, specs)
                        if self._store_outputs:
                            self._plan_storage(t, files, op_id, writes)

    def _deliver_signal(self) -> None:
        handler, signum = self.deferred_signal
        self.deferred_signal = None
        handler(signum, None)

    # -- what the hot path snapshots ------------------------------------------------------
    def _strip(self, x, inputs, specs):
        """An argument as recorded: a tensor as b"t<id>" (its spec noted); a list or tuple item by item; an int,
        float, bool, str or None as it is; anything else as the log wires it (b"o<n>", its text defined once)."""
        t = type(x)
        if t in _PRIMITIVE:
            return x
        if isinstance(x, Tensor):
            self._see(x, None, inputs, specs)
            return b"t%d" % x.tensor_id
        if t is list or t is tuple:
            return t([self._strip(e, inputs, specs) for e in x])
        if t is ComplexTensor:  # its parts are the op's input tensors, the real one first
            self._see(x.real, None, inputs, specs)
            self._see(x.imag, None, inputs, specs)
            # by its text alone: the log keeps each object it wires (oplog's _objects, up to MAX_OBJECTS), and the
            # ComplexTensor held there would keep both parts' buffers allocated after the model let them go
            return self._wire(Text(repr(x)))
        if isinstance(x, Device) and x not in self._devices:
            self.add_device(x, before_capture=False)
        return self._wire(x)

    def _see(self, t: Tensor, producer, ids: list, specs: list) -> None:
        tid = t.tensor_id
        ids.append(tid)
        seen = self._seen
        if tid in seen:
            return
        if len(seen) >= MAX_SEEN:
            _forget_older_half(seen)
        seen[tid] = None
        device = t.device()
        if device is not None and device not in self._devices:
            self.add_device(device, before_capture=False)
        shape = tuple(t.value.shape) if t.is_allocated() else None
        cfg = t.memory_config()
        if cfg is not None and id(cfg) not in self._configs:
            self._configs[id(cfg)] = cfg
            self.queue.define_config(id(cfg), cfg)
        buf = t.buffer
        layout = int(t.layout) if t.tile is DEFAULT_TILE else _layout_key(t)
        if buf is not None and type(t) is Tensor:
            specs.append((tid, shape, int(t.dtype), layout, id(cfg), t.memory_config_source, device.device_id,
                          buf.address, int(buf.buffer_type), buf.page_size * buf.num_pages, producer))
        elif type(t) is MeshTensor:
            self._see_mesh_tensor(t, tid, shape, cfg, producer, specs)
        else:
            if device is None and producer is not None:
                self.host_outputs = True  # an op made a host tensor: close asks the report which (host_ops_warning)
            specs.append((tid, shape, int(t.dtype), layout, None if cfg is None else id(cfg),
                          t.memory_config_source, None if device is None else device.device_id,
                          None if buf is None else buf.address, None if buf is None else int(buf.buffer_type),
                          None if buf is None else buf.page_size * buf.num_pages, producer))

    def _see_mesh_tensor(self, t, tid, shape, cfg, producer, specs) -> None:
        # As TT-NN's report: the row's address is the mesh buffer's one address, the same on every chip (TT-NN
        # allocates a mesh in lock-step; it names the tensor's buffers in the visualizer), and no device; NULL
        # where chip-only allocations left the shards at different addresses. device_tensors holds one (tensor,
        # device, address) row per shard. size is one shard's.
        bufs = [s.buffer for s in t.shards]
        b0 = bufs[0]
        address = b0.address if b0 is not None and all(b is not None and b.address == b0.address for b in bufs) \
            else None
        specs.append((tid, shape, int(t.dtype), _layout_key(t), None if cfg is None else id(cfg),
                      t.memory_config_source, None, address, None if b0 is None else int(b0.buffer_type),
                      None if b0 is None else b0.page_size * b0.num_pages, producer))
        for b in bufs:
            if b is not None:
                self._put((ROW, "device_tensors", {"tensor_id": tid, "device_id": b.device_id, "address": b.address}))

    def _classify(self, code) -> tuple:
        """The stack walk's cache entry for a code object it has not seen: (code, is_library)."""
        entry = self._code_is_lib[id(code)] = (code, _is_library(code.co_filename))
        return entry

    def _define_stack(self, frames: tuple):
        if len(self._stacks) >= MAX_STACKS:
            self._stacks.clear()  # a log defines the stacks seen again once more, under new numbers
        ref = self._stacks[frames] = self.queue.define_stack(frames)
        return ref

    def code(self, code_id: int):
        """The code object behind an id in a queued stack (for the writer)."""
        return self._code_is_lib[code_id][0]

    def memory_config(self, config_id: int):
        """The MemoryConfig behind an id in a queued spec (for the writer)."""
        return self._configs[config_id]

    # -- buffers and devices ---------------------------------------------------------------
    def add_device(self, device, *, before_capture: bool) -> None:
        """Record `device` and follow its buffers: live ones now, then every alloc and free.

        A mesh of several chips is recorded as its chips (each has its own memory and `devices` row).
        """
        chips = getattr(device, "_chips", None)
        if chips is not None and chips != [device]:  # a mesh (even a submesh of one chip) is its chips
            self._devices[device] = _MESH
            for chip in chips:
                if chip not in self._devices:
                    self.add_device(chip, before_capture=before_capture)
            return
        memory = device.memory
        self._devices[device] = memory.listener
        self._allocators.append((memory.allocators[BufferType.L1], memory.allocators[BufferType.DRAM]))
        self.queue.put((DEVICE, device.facts()))
        self.queue.define_device(device)
        if not self.config.buffers:
            return
        memory.listener = self._on_buffer
        seq = 0 if before_capture else next(self._seq)
        for buf in memory.live_buffers():
            self.queue.put(_alloc(buf, seq, None, self.config.buffer_pages))

    def chips(self) -> list:
        """The chips the capture recorded (devices with their own memory; a mesh counts as its chips)."""
        return [d for d, previous in self._devices.items() if previous is not _MESH]

    def _buffer_listener(self):
        # A closure over locals: this runs twice per op in a typical model, so every lookup counts.
        # It never waits for the writer: a free can run on any thread, the writer's included (GC).
        local, seq, pages = self._local, self._seq, self.config.buffer_pages
        append, program, put = self.queue.event, self.queue.program, self.queue.put
        graphs = self.config.device_graphs

        def on_buffer(event: str, buf) -> None:
            if event == "free":
                append((FREE, buf.buffer_id, next(seq)))
                return
            stack = getattr(local, "stack", None)
            if event == "program":  # buf is a device_work.Program
                if graphs:
                    program(stack[-1] if stack else None, buf)
                return
            if pages:  # the Buffer itself goes with it: the queue makes it what its writer reads
                put(_alloc(buf, next(seq), stack[-1] if stack else None, True))
            else:
                append((ALLOC, buf.buffer_id, buf.device_id, buf.address, buf.max_size_per_bank,
                        int(buf.buffer_type), int(buf.buffer_layout), buf.page_size * buf.num_pages, next(seq),
                        stack[-1] if stack else None))

        return on_buffer

    def restore_devices(self) -> None:
        for device, previous in self._devices.items():
            if previous is not _MESH and device.memory.listener is self._on_buffer:
                device.memory.listener = previous

    # -- tensor storage ------------------------------------------------------------------
    def _plan_storage(self, t: Tensor, files: list, op_id: int | None = None, writes: list | None = None) -> None:
        tid = t.tensor_id
        if views.SHARED and writes is not None and type(t) is Tensor and t.buffer is not None:
            # A write through a view is a write into every tensor over its buffer (device_sim/views.py): each
            # stored one gets a file too, so load_tensor(after_operation=) is true for all of them. The
            # identity check in _plan_write leaves out those the op did not change (a view just made).
            for other in views.others(t):
                if other.tensor_id in self._stored and type(other) is not MeshTensor:
                    self._plan_write(other, writes, op_id)
        if tid in self._stored or not t.is_allocated():
            if writes is not None and tid in self._stored and type(t) is not MeshTensor and t.is_allocated():
                self._plan_write(t, writes, op_id)
            return
        if type(t) is MeshTensor:
            self._plan_shards(t, files)
            return
        value = t.value
        if self._reserve(value.numel() * value.element_size()):
            self._stored.add(tid)
            self._stored_values[tid] = (weakref.ref(t), weakref.ref(value))
            if len(self._stored_values) >= self._prune_at:
                self._prune_stored()
            files.append((tid, f"tensors/{tid}{self._suffix}", value, t.dtype, t.layout, t.memory_config()))

    def _plan_write(self, t: Tensor, writes: list, op_id: int) -> None:
        # Op `op_id` output a tensor whose values were stored already: it wrote into it (output_tensor=, an
        # in-place op). Its new values get a file of their own (schema.tensor_writes); the same values
        # (an op that hands back its input unchanged) get none.
        tid, value = t.tensor_id, t.value
        last = self._stored_values.get(tid)
        if last is not None and last[1]() is value:
            return
        if self._reserve(value.numel() * value.element_size()):
            self._stored_values[tid] = (weakref.ref(t), weakref.ref(value))
            writes.append((tid, f"tensors/{tid}@{op_id}{self._suffix}", value, t.dtype, t.layout, t.memory_config(),
                           op_id))

    def _prune_stored(self) -> int:
        """Forget the stored tensors whose device_sim Tensor is gone (an id never comes back), then prune again once
        what is left has doubled; returns that size (the C hook keeps its own copy). A mesh tensor's and a made
        tensor's ids stay: they have no entry here."""
        gone = [tid for tid, (tensor, _) in list(self._stored_values.items()) if tensor() is None]  # list(): atomic
        for tid in gone:
            self._stored_values.pop(tid, None)
            self._stored.discard(tid)
        self._prune_at = max(PRUNE_STORED_AT, 2 * len(self._stored_values))
        return self._prune_at

    def _plan_shards(self, t: MeshTensor, files: list) -> None:
        # One file per device shard, tensors/<id>/<device_id>.pt: each item's path is the folder (what the
        # writer puts in the tensors row), then come the shard's file name in it and its device id.
        shards = t.shards
        if self._reserve(sum(s.value.numel() * s.value.element_size() for s in shards)):
            self._stored.add(t.tensor_id)
            folder = f"tensors/{t.tensor_id}/"
            for s, chip in zip(shards, t.mesh._chips):  # a host mesh tensor's shard i is still chip i's
                files.append((t.tensor_id, folder, s.value, s.dtype, s.layout, s.memory_config(),
                              f"{chip.device_id}{self._suffix}", chip.device_id))

    def _reserve(self, nbytes: int) -> bool:
        with self._storage_lock:
            if self.tensor_bytes + nbytes <= self.config.max_tensor_bytes:
                self.tensor_bytes += nbytes
                return True
            first = self.tensors_skipped == 0
            self.tensors_skipped += 1
            self.tensor_bytes_skipped += nbytes
        if first:
            warnings.warn(
                f"ttreport: tensor storage reached max_tensor_bytes={self.config.max_tensor_bytes}; later tensors "
                f"are not stored (their specs still are). Raise Config(max_tensor_bytes=...) to keep them",
                ReportIncompleteWarning, stacklevel=user_stacklevel(),
            )
        return False

    # -- for other parts of ttreport (golden comparison) ---------------------------------
    def emit(self, table: str, row: dict) -> None:
        """Queue one row for any table of the schema; it is written in the writer's next batch."""
        columns = schema_sql.COLUMNS.get(table)
        if columns is None:
            raise ValueError(f"no table {table!r} in the report schema; tables: {', '.join(schema_sql.COLUMNS)}")
        unknown = set(row) - set(columns)
        if unknown:
            raise ValueError(f"table {table!r} has no column(s) {sorted(unknown)}; columns: {list(columns)}")
        self._put((ROW, table, row))

    def store_tensor(self, value, device_dtype_name: str | None = None,
                     producer_operation_id: int | None = None) -> int:
        """Record (and, within max_tensor_bytes, store as .pt) a torch tensor the capture made; returns its id."""
        tid = next(self._made_ids)
        self._seen[tid] = None
        file = None
        if self._reserve(value.numel() * value.element_size()):
            self._stored.add(tid)
            file = f"tensors/{tid}.pt"
        self._put((TENSOR, tid, value.shape, device_dtype_name or str(value.dtype), producer_operation_id, file))
        if file is not None:
            self.storage.put_many([(tid, file, value, None, None, None)])
        return tid

    def model_error(self, exc: BaseException) -> None:
        """Queue an `errors` row with no op for an exception the model's own code raised out of the capture.

        One that an op raised (and its op's row holds) is not repeated. The traceback starts at the
        user's first frame: ttreport's and the script runner's frames are left out.
        """
        if id(exc) == self._last_op_exception:
            return
        tb = exc.__traceback__
        while tb is not None and (_is_library(tb.tb_frame.f_code.co_filename) or tb.tb_frame.f_code is self.boundary):
            tb = tb.tb_next
        text = "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))
        self._put((ROW, "errors", {"operation_id": None, "operation_name": None, "error_type": _type_name(type(exc)),
                                   "error_message": str(exc), "stack_trace": text,
                                   "timestamp": datetime.datetime.now().isoformat(timespec="milliseconds")}))

    def notes(self) -> dict:
        """What the recorder dropped on purpose, for report_metadata."""
        if not self.tensors_skipped:
            return {}
        return {"tensors_skipped": self.tensors_skipped, "tensor_bytes_skipped": self.tensor_bytes_skipped}


# Ops that make or move host tensors on purpose (from_torch without device=, from_device, to_layout on the host,
# as_tensor, ttnn.zeros): a host output of theirs is no sign of a forgotten device=; any other op's is.
HOST_CATEGORIES = frozenset({"core", "tensor_io", "creation", "data_movement"})

# The first op of each name whose output is a host tensor (no device, no buffer: a mesh tensor's row has a
# buffer_type); one row per op name, so the grouping is the only cost (one scan of tensors, at close).
_HOST_OPS_SQL = """
SELECT o.name, MIN(o.operation_id) FROM tensors t JOIN operations o ON o.operation_id = t.producer_operation_id
WHERE t.device_id IS NULL AND t.buffer_type IS NULL GROUP BY o.name"""


def host_ops_warning(con) -> str | None:
    """The warning for a capture whose compute ops ran on host tensors (device= forgotten), naming the first;
    None when every such op only made or moved tensors. `con`: the closed capture's database."""
    from device_sim.registry import OPS

    found = [(op_id, name) for name, op_id in con.execute(_HOST_OPS_SQL)
             if name not in OPS or OPS[name].category not in HOST_CATEGORIES]
    if not found:
        return None
    op_id, name = min(found)
    return (f"ttreport: {name} (operation {op_id}) ran on host tensors, not on a device, and so did "
            f"{len(found) - 1} other op name(s): the report has no device time or L1 for them. Put the inputs on "
            f"the device: ttnn.from_torch(..., device=device), or ttnn.to_device(tensor, device)")


def _parts(x) -> tuple:
    """The tensors `x` stands for as an op's input or output: a ComplexTensor's real part, then its imaginary."""
    return (x.real, x.imag) if type(x) is ComplexTensor else (x,)


def _forget_older_half(ids: dict) -> None:
    for key in list(itertools.islice(ids, len(ids) // 2)):  # dicts keep insertion order: the oldest first
        ids.pop(key, None)  # another model thread may be forgetting it too


def _alloc(buf, seq: int, op_id: int | None, pages: bool) -> tuple:
    """records.Alloc, or records.AllocPages with the Buffer."""
    row = (ALLOC, buf.buffer_id, buf.device_id, buf.address, buf.max_size_per_bank, int(buf.buffer_type),
           int(buf.buffer_layout), buf.page_size * buf.num_pages, seq, op_id)
    return row + (buf,) if pages else row  # the writer lays out a buffer's pages after each op


def _error(exc: BaseException) -> tuple:
    """records.Error."""
    # Errors are rare: the traceback is snapshotted here (no frames kept alive) and formatted by the writer.
    return (_type_name(type(exc)), str(exc),
            traceback.TracebackException(type(exc), exc, exc.__traceback__, lookup_lines=False),
            datetime.datetime.now().isoformat(timespec="milliseconds"))


def _token(token: tuple) -> Token:
    """begin()'s plain tuple (the C begin's too) as its named view: no copy."""
    return tuple.__new__(Token, token)


def _type_name(cls) -> str:
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
