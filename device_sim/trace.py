"""Traces and events: capture a sequence of ops once, replay it over the same tensors, as TT-NN's traces do.

    x = ttnn.from_torch(torch.randn(32, 64), layout=ttnn.TILE, device=device)   # the trace's input
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    y = ttnn.gelu(ttnn.linear(x, w))                                              # captured (and run once)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    ttnn.copy_host_to_device_tensor(ttnn.from_torch(new_input, layout=ttnn.TILE), x)
    ttnn.execute_trace(device, tid, cq_id=0, blocking=False)                     # y now holds the new result
    ttnn.release_trace(device, tid)

A trace records the top-level ops called between begin and end, with their arguments. It
holds no tensor an op made inside the capture: such a tensor is a numbered slot, referenced
weakly, so an intermediate the model drops (or deallocates) during the capture is freed then,
as TT-NN frees it (TT-NN's trace keeps addresses, not tensors). Without this, Whisper's
encoder filled L1 inside a capture: every layer's L1 activations stayed allocated. Tensors
made before the capture (inputs, weights) are held as they are.

Replaying runs each op's body again: an output the model still holds is written in place
(same buffer, same tensor id), as on the device; an output it dropped is made afresh as a
scratch tensor, lives until its last use in the replay, and is freed then, so a replay
leaves the memory as it found it. An output the model holds but deallocated is brought back
for the replay and deallocated again by the replayed deallocate. Unlike TT-NN, the ops also
run while they are captured (the outputs hold real values at once).

In a report, a replay is one `ttnn.execute_trace` op (arguments: trace_id, cq_id) whose
children are the replayed ops, so each replayed op names its trace through its parent.
Events exist so TT-NN scripts run: device_sim runs every op synchronously, so an event is
complete when it is recorded.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from dataclasses import dataclass, field

from device_sim import registry
from device_sim.registry import Op
from device_sim.tensor import Tensor

# Ops that move data between the host and the device; TT-NN refuses them inside a trace capture.
_HOST_TRANSFERS = frozenset({
    "ttnn.to_torch", "ttnn.from_device", "ttnn.to_device", "ttnn.copy_host_to_device_tensor",
    "ttnn.copy_host_to_device_tensor_partial",
    "ttnn.copy_device_to_host_tensor",
})


class MeshTraceId(int):
    """The id begin_trace_capture returns; pass it to end_trace_capture, execute_trace and release_trace."""

    def __repr__(self) -> str:
        return f"MeshTraceId({int(self)})"


@dataclass(frozen=True)
class _Slot:
    """Stands, in a captured op's arguments or output, for a tensor an op of the same trace made."""

    index: int


@dataclass
class _Trace:
    trace_id: MeshTraceId
    device: object
    cq_id: int
    ops: list = field(default_factory=list)  # (op, args, kwargs, output), tensors made in the capture as _Slots
    slots: list = field(default_factory=list)  # weakref to the tensor each _Slot stands for
    last_use: dict = field(default_factory=dict)  # slot index -> index in ops of the last op that reads it
    made: dict = field(default_factory=dict)  # while capturing: id(tensor) -> its _Slot
    ended: bool = False
    hook: object = None  # the _CaptureHook while capturing

    def _known(self, t):
        slot = self.made.get(id(t))
        return slot if slot is not None and self.slots[slot.index]() is t else None  # an id can be reused

    def record(self, op: Op, args, kwargs, output) -> None:
        """Append one op, its tensors made in this capture replaced by their slots."""
        at = len(self.ops)
        outside = [t for t in _tensors((args, kwargs)) if self._known(t) is None]
        self.ops.append((op, self._args(tuple(args), at), self._args(dict(kwargs), at), self._output(output, outside)))

    # Methods, not closures: a recursive closure is a reference cycle that would keep the tensors alive until gc.
    def _args(self, v, at: int):
        if not isinstance(v, Tensor):
            return _map(v, self._args, at)
        slot = self._known(v)
        if slot is None:
            return v
        self.last_use[slot.index] = at
        return slot

    def _output(self, v, outside: list):
        if not isinstance(v, Tensor):
            return _map(v, self._output, outside)
        known = self._known(v)
        if known is not None or any(v is t for t in outside):
            return known or v  # an argument returned as the output
        slot = _Slot(len(self.slots))
        self.slots.append(weakref.ref(v))
        self.made[id(v)] = slot
        return slot


def _map(v, f, extra):
    if isinstance(v, tuple):
        return tuple(f(x, extra) for x in v)
    if isinstance(v, list):
        return [f(x, extra) for x in v]
    if isinstance(v, dict):
        return {k: f(x, extra) for k, x in v.items()}
    return v


def _tensors(v):
    if isinstance(v, Tensor):
        yield v
    elif isinstance(v, (tuple, list)):
        for x in v:
            yield from _tensors(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from _tensors(x)


_ids = itertools.count(0)
_traces: dict[int, _Trace] = {}
_capturing: dict[int, _Trace] = {}  # id(device) -> the trace being captured on it
_lock = threading.Lock()


class _CaptureHook:
    """Records the top-level ops of the capturing thread, and passes every call on to the hook it replaced."""

    def __init__(self, trace: _Trace, inner):
        self.trace, self.inner = trace, inner
        self.thread = threading.get_ident()
        self.depth = 0

    def begin(self, op: Op, args, kwargs):
        mine = threading.get_ident() == self.thread
        transfer = op.name in _HOST_TRANSFERS or (op.name == "ttnn.from_torch" and kwargs.get("device") is not None)
        if mine and self.depth == 0 and transfer:
            raise RuntimeError(
                f"{op.name} moves data between the host and the device during trace capture "
                f"(trace {int(self.trace.trace_id)}); TT-NN does not allow reads or writes inside a trace. "
                f"Do it before ttnn.begin_trace_capture or after ttnn.end_trace_capture"
            )
        if mine:
            self.depth += 1
        inner = self.inner.begin(op, args, kwargs) if self.inner is not None else None
        return (mine, op, args, kwargs, inner)

    def end(self, token, output, exception) -> None:
        mine, op, args, kwargs, inner = token
        try:
            if self.inner is not None:
                self.inner.end(inner, output, exception)
        finally:
            if mine:
                self.depth -= 1
                if self.depth == 0 and exception is None:
                    self.trace.record(op, args, kwargs, output)


def begin_trace_capture(device, cq_id: int = 0) -> MeshTraceId:
    """Start recording the ops called on this thread into a new trace of `device`; returns its id."""
    with _lock:
        if id(device) in _capturing:
            held = _capturing[id(device)]
            raise RuntimeError(f"a trace capture is already in progress on {device!r} (trace {int(held.trace_id)}); "
                               f"end it with ttnn.end_trace_capture(device, trace_id) first")
        trace = _Trace(MeshTraceId(next(_ids)), device, int(cq_id))
        hook = _CaptureHook(trace, registry.get_hook())
        registry.set_hook(hook)
        trace.hook = hook
        _capturing[id(device)] = trace
        _traces[int(trace.trace_id)] = trace
    return trace.trace_id


def end_trace_capture(device, trace_id, cq_id: int = 0) -> None:
    """Stop recording trace `trace_id`; the hook that was installed before the capture is put back."""
    with _lock:
        trace = _capturing.get(id(device))
        if trace is None or trace.trace_id != trace_id:
            raise RuntimeError(f"no trace capture of trace {int(trace_id)} is in progress on {device!r}; "
                               f"begin one with ttnn.begin_trace_capture(device)")
        del _capturing[id(device)]
        if registry.get_hook() is trace.hook:
            registry.set_hook(trace.hook.inner)
        trace.ended = True
        trace.made.clear()


def _trace(device, trace_id, what: str) -> _Trace:
    trace = _traces.get(int(trace_id))
    if trace is None or trace.device is not device:
        raise RuntimeError(f"ttnn.{what}: trace {int(trace_id)} was not captured on {device!r}, or was released; "
                           f"use the id ttnn.begin_trace_capture returned")
    if not trace.ended:
        raise RuntimeError(f"ttnn.{what}: trace {int(trace_id)} is still being captured; "
                           f"call ttnn.end_trace_capture first")
    return trace


_EXECUTE = Op("ttnn.execute_trace", function=None, category="trace")


def execute_trace(device, trace_id, cq_id: int = 0, blocking: bool = True) -> None:
    """Replay trace `trace_id`: each captured op runs again on the same tensors, writing into its outputs."""
    trace = _trace(device, trace_id, "execute_trace")
    hook = registry.get_hook()
    if hook is None:
        return _replay(trace, None)
    token = hook.begin(_EXECUTE, (device,), {"trace_id": int(trace_id), "cq_id": cq_id, "blocking": blocking})
    try:
        _replay(trace, hook)
    except BaseException as exc:
        hook.end(token, None, exc)
        raise
    hook.end(token, None, None)


def _replay(trace: _Trace, hook) -> None:
    live = {}  # slot index -> the tensor it stands for in this replay: the model's own, or a scratch one
    for index, ref in enumerate(trace.slots):
        t = ref()
        if t is not None:
            live[index] = t
    held = set(live)

    for at, (op, args, kwargs, out_refs) in enumerate(trace.ops):
        args, kwargs, out = _resolve(args, live), _resolve(kwargs, live), _resolve(out_refs, live)
        call_kwargs = dict(kwargs)
        if op.output_keyword is not None and call_kwargs.get(op.output_keyword) is not None:
            out = call_kwargs.pop(op.output_keyword)  # it wrote into that tensor when captured
        call_kwargs.pop(op.output_keyword, None)
        # An op on a mesh runs through the per-chip runner, which tells the hook itself (as registry's wrapper
        # leaves it to): told here too, a profiler recorded each replayed mesh op twice, one nested in the other.
        on_mesh = registry._per_device is not None and not op.mesh_aware and \
            registry._per_device(op, op.function, args, call_kwargs) is not None
        here = hook if not on_mesh else None
        token = here.begin(op, args, kwargs) if here is not None else None
        try:
            made = _run_into(op, args, call_kwargs, out)
        except BaseException as exc:
            if here is not None:
                here.end(token, None, exc)
            raise
        if here is not None:
            here.end(token, made, None)
        refs = out_refs if isinstance(out_refs, (list, tuple)) else [out_refs]
        news = made if isinstance(made, (list, tuple)) else [made]
        for ref, new in zip(refs, news):
            if isinstance(ref, _Slot) and isinstance(new, Tensor):
                live.setdefault(ref.index, new)
        # A scratch tensor goes at its last use (or at once, unread), as the model dropped it when captured.
        for index in [i for i in live if i not in held and trace.last_use.get(i, -1) <= at]:
            del live[index]


def _resolve(v, live: dict):
    return live.get(v.index) if isinstance(v, _Slot) else _map(v, _resolve, live)


def _run_into(op: Op, args, kwargs, out):
    """Run `op`, writing into the output tensors the model holds; returns the outputs (scratch ones where none)."""
    run = op.function
    if registry._per_device is not None and not op.mesh_aware:
        run = registry._per_device(op, run, args, kwargs) or run
    if isinstance(out, Tensor) and out.is_allocated() and getattr(out, "shards", None):
        # A mesh tensor: the per-chip runs make a new one; each chip's values go into the held tensor's shard.
        result = run(*args, **kwargs)
        for shard, value in zip(out.shards, result.shards):
            shard._write(value.value)
        out._value = out.shards[0]._value  # a mesh tensor keeps its first shard's values as its own
        return out
    if isinstance(out, Tensor) and out.is_allocated():
        # The op's output() writes into `out` (its buffer stays): the path ops' output_tensor= takes.
        previous, registry._writes.target = registry._writes.target, (op.name, out)
        try:
            result = run(*args, **kwargs)
            if registry._writes.target is not None and result is not out:
                out._write(result.value)  # made without output() (a composite): copy it in
                _free_new(result, args, kwargs)
        finally:
            registry._writes.target = previous
        return out
    result = run(*args, **kwargs)
    if isinstance(result, (list, tuple)):
        olds = out if isinstance(out, (list, tuple)) else [None] * len(result)
        made = [_adopt(old, new, args, kwargs) for old, new in zip(olds, result)]
        return made if isinstance(result, list) else tuple(made)
    return _adopt(out, result, args, kwargs)


def _adopt(old, new, args, kwargs):
    if isinstance(old, Tensor) and isinstance(new, Tensor) and new is not old:
        old._value = new._value  # an output the traced code deallocated lives again until its deallocate
        _free_new(new, args, kwargs)
        return old
    return new


def _free_new(result, args, kwargs) -> None:
    if isinstance(result, Tensor) and not any(result is a for a in (*args, *kwargs.values())):
        result._free()


def release_trace(device, trace_id) -> None:
    """Forget trace `trace_id`; executing it afterwards is an error."""
    _trace(device, trace_id, "release_trace")
    del _traces[int(trace_id)]


# -- events -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MeshEvent:
    """A point in a command queue. device_sim's queues run synchronously: every event is already complete."""

    device: object
    cq_id: int
    event_id: int


_event_ids = itertools.count(0)


def record_event(device, cq_id: int = 0, sub_device_ids=None) -> MeshEvent:
    return MeshEvent(device, int(cq_id), next(_event_ids))


def _check_event(event, what: str) -> None:
    if not isinstance(event, MeshEvent):
        raise TypeError(f"ttnn.{what} takes the event ttnn.record_event returned, got {event!r}")


def wait_for_event(cq_id: int, event: MeshEvent) -> None:
    """Make queue `cq_id` wait for `event`: a no-op here, as the event is complete when recorded."""
    _check_event(event, "wait_for_event")


def event_synchronize(event: MeshEvent) -> None:
    """Block the host until `event` completes: it already has."""
    _check_event(event, "event_synchronize")
