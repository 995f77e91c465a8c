"""device_perf rows made by the writer process from what the op log carries, not on the model's thread.

    perf = LogPerf()
    perf.add_device(0, (8, 8, 1.0, 288.0, 32.0))              # a (PERF_CONFIG, ...) definition of the log
    row = perf.row(op_record)                                  # (operation_id, compute_ns, ...): COLUMNS; or None

device_sim's estimate (perf_model.estimate_op) takes ~6 µs an op from live tensors; everything it
reads of them is in the specs the recorder already sends (shape, dtype, layout, buffer bytes, memory
config, device), so the writer process keeps each tensor's operand and costs the op with
perf_model.estimate, the same function estimate_op ends in. Matmuls need the math fidelity their
kernel config resolves to, which only the live call knows: the capture estimates those on the
model's thread as before (ON_MODEL_THREAD), and this module leaves them out.
"""

from __future__ import annotations

import operator

from device_sim import perf_model
from device_sim.distributed import MeshTensor
from device_sim.types import BufferType, DataType, Layout, TensorMemoryLayout
from ttreport.capturing.records import Op, Spec

# their fidelity, a conv2d's kernel, an attention's causality come from the live call (perf_model.NEEDS_CALL)
ON_MODEL_THREAD = perf_model.NEEDS_CALL
MAX_TENSORS = 1 << 18  # operands kept, newest first: 4x the specs the recorder can remember (recorder.MAX_SEEN)


def estimate_on_model_thread(op, args, kwargs, output):
    """The recorder's estimate with a process writer: matmuls' and a mesh op's (the writer process costs the
    rest; it has no mesh to cost a collective's links with, LogPerf.row)."""
    here = _here.get(op.name)
    if here is None:
        here = _here[op.name] = op.name.rsplit(".", 1)[-1] in ON_MODEL_THREAD
    if here or _on_mesh(output, args, kwargs):
        return perf_model.estimate_op(op, args, kwargs, output)
    return None


def _on_mesh(output, args, kwargs) -> bool:
    """Whether an op's output or an argument is a MeshTensor (or a list or tuple holding one)."""
    for v in (output, *args, *(kwargs.values() if kwargs else ())):
        if type(v) is MeshTensor or (type(v) in (list, tuple) and any(type(t) is MeshTensor for t in v)):
            return True
    return False


_here: dict[str, bool] = {}  # op name -> estimated on the model's thread (one dict lookup an op)
# device_perf's columns, in the order of LogPerf.row's values (the writer takes them as a records.RowValues)
COLUMNS = ("operation_id", "compute_ns", "bandwidth_ns", "ideal_ns", "bound", "math_fidelity")


def device_fields(device) -> tuple:
    """What LogPerf.add_device takes: the device's PerfConfig as estimate_op makes it."""
    c = perf_model.PerfConfig.of(device)
    return (c.grid_x, c.grid_y, c.clock_ghz, c.dram_gib_per_s, c.pcie_gb_per_s)


class LogPerf:
    def __init__(self):
        self.tensors: dict[int, tuple] = {}  # tensor id -> (Operand or None, device id, on a mesh)
        self.devices: dict[int, perf_model.PerfConfig] = {}
        self.mesh: set[int] = set()  # tensor ids with per-device shards (device_tensors rows): not estimated
        # One operand object per distinct spec, so an estimate is remembered by the op's name and its operands'
        # identities: a model repeats a few specs, and making operands and estimates took a fifth of the writer
        # process's Python.
        self._operands: dict[tuple, perf_model.Operand | None] = {}
        self._estimates: dict[tuple, tuple] = {}  # key -> (the estimate's fields or None, the operands)
        # op name -> whether its row is not this module's (estimated on the model's thread, or a free): an op's kind is
        # fixed once registered (registry.register_op refuses a second), and this process registers no more ops
        self._skip: dict[str, bool] = {}

    def add_device(self, device_id: int, fields: tuple) -> None:
        self.devices[device_id] = perf_model.PerfConfig(*fields)

    def note(self, spec, configs) -> None:
        """Keep a tensor's operand from its spec (records.Spec)."""
        tid, shape, dtype, layout, cfg_id, device_id, address, buffer_type, size = _NOTED(spec)
        mesh = device_id is None and buffer_type is not None  # a mesh tensor: its row has a type, no device
        # A config id names one config for the whole capture (the recorder holds each it numbered).
        key = (shape, dtype, layout, cfg_id, buffer_type, size, address is None)
        operands = self._operands
        operand = operands.get(key, _MISSING)
        if operand is _MISSING:
            if shape is None:
                operand = None
            elif address is not None:  # in a device buffer
                cfg = configs.get(cfg_id) if cfg_id is not None else None
                shard = getattr(cfg, "shard_spec", None)
                operand = perf_model.Operand(size, perf_model.location(BufferType(buffer_type),
                                                                       cfg.memory_layout if cfg else None), shape,
                                             _row_major(layout), shard.num_cores() if shard is not None else 0,
                                             cfg is not None and cfg.memory_layout == TensorMemoryLayout.HEIGHT_SHARDED)
            else:
                layout = layout[0] if type(layout) is tuple else layout
                operand = perf_model.Operand(perf_model.operand_bytes(shape, DataType(dtype), Layout(layout)),
                                             "host", shape, _row_major(layout))
            if len(operands) >= MAX_TENSORS:
                operands.clear()  # the estimates hold the operands their keys name: they stay right
            operands[key] = operand
        tensors = self.tensors
        tensors.pop(tid, None)  # re-sent after the recorder forgot it: newest again
        if len(tensors) >= MAX_TENSORS:
            for key in list(tensors)[:len(tensors) // 2]:
                del tensors[key]
        tensors[tid] = (operand, device_id, mesh)

    def row(self, rec) -> tuple | None:
        """The op's device_perf row, as the recorder would have queued it, by COLUMNS; None when estimate_op gives
        none. `rec`: an OP record (records.Op)."""
        rec = tuple.__new__(Op, rec)
        name, op_id, kwargs, inputs, outputs = rec.name, rec.operation_id, rec.kwargs, rec.inputs, rec.outputs
        skip = self._skip.get(name)
        if skip is None:  # once a name: the registry's kinds cost ~0.35 µs a test (perf_model._Kinds)
            short = name.rsplit(".", 1)[-1]
            skip = self._skip[name] = short in ON_MODEL_THREAD or short in perf_model._FREE
        if skip:
            return None
        tensors, mesh = self.tensors, self.mesh
        key = [name, None]
        device_id = None
        for tid in outputs:
            t = tensors.get(tid)
            if t is None or t[2] or tid in mesh:
                return None  # a mesh tensor (not modelled), or one whose spec is gone (never: see MAX_TENSORS)
            if device_id is None:
                device_id = t[1]
            key.append(id(t[0]))
        key.append(None)  # outputs, then inputs
        for tid in inputs:
            t = tensors.get(tid)
            if t is None or t[2] or tid in mesh:
                return None
            if device_id is None:
                device_id = t[1]
            key.append(id(t[0]))
        key[1] = (device_id, bool(kwargs.get("transpose_a")) if kwargs else False)
        key = tuple(key)
        hit = self._estimates.get(key)
        if hit is None:
            # The operands are held beside the estimate: the ids in its key stay theirs while it is kept.
            hit = (self._estimate(name, outputs, inputs, *key[1]), [tensors[t][0] for t in (*outputs, *inputs)])
            if len(self._estimates) >= MAX_TENSORS:
                self._estimates.clear()
            self._estimates[key] = hit
        est = hit[0]
        if est is None:
            return None
        return (op_id, *est)

    def _estimate(self, name, outputs, inputs, device_id, transpose_a) -> tuple | None:
        cfg = self.devices.get(device_id) if device_id is not None else None
        if cfg is None:
            return None
        ins = [o for o in (self.tensors[t][0] for t in inputs) if o is not None]
        outs = [o for o in (self.tensors[t][0] for t in outputs) if o is not None]
        est = perf_model.estimate(name, ins, outs, None, cfg, transpose_a=transpose_a)
        if est is None:
            return None
        return est.compute_ns, est.bandwidth_ns, est.ideal_ns, est.bound, est.math_fidelity  # COLUMNS[1:]


_MISSING = object()
# The fields note() reads, in one call: a named view and its nine attributes took ~0.25 µs more a tensor (timeit, the
# min of 5 alternating runs; row()'s five read so were no faster).
_NOTED = operator.itemgetter(*[Spec._fields.index(f) for f in ("tensor_id", "shape", "dtype", "layout", "config_id",
                                                                "device_id", "address", "buffer_type", "size")])


def _row_major(layout) -> bool:
    """A spec's layout (a Layout's value, or a tuple whose first item is) is not TILE: the model counts rows."""
    layout = layout[0] if type(layout) is tuple else layout
    return layout is not None and Layout(layout) != Layout.TILE
