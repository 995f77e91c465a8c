"""The op table and the one hook seam that ttreport (or any profiler) plugs into.

Every op is registered once with `@register_op(name, golden=...)`. The wrapper does one
global read when no hook is installed; with a hook it calls

    token = hook.begin(op, args, kwargs)
    ... the op runs (nested ops go through the same wrapper) ...
    hook.end(token, output, exception)    # exactly once, exception None on success

and re-raises the op's exception unchanged. The hook is process-wide so that ops run by
any thread are seen; a profiler tracks nesting per thread itself. A hook may also offer
`operation_id(token)`, the id it gave that op (ttreport's report row): ttnn.tracer, which
installs itself in front of the hook it finds and hands every call on, labels its nodes so.

An op that TT-NN lets write into a given tensor (`ttnn.add(a, b, output_tensor=c)`,
`ttnn.matmul(a, b, optional_output_tensor=c)`) is handled here once for all such ops: the
wrapper takes the keyword, the op's output() call writes into that tensor (its buffer and
tensor id stay), and the hook's `output` is that tensor.

An op is declared once, at its registration: its kind (how the perf model prices it), its traits (what it
is beyond its name: no program on the device, a view), its output keyword, its golden or the reason it has
none, the link pattern of a collective and the other public names it goes by. The perf model, the tests and
the docs read these from OPS instead of keeping their own name lists. A body that names itself in its checks
and errors takes `op_name: str = OWN_NAME` and the registry fills in its registered name, at no cost a call:

    @register_op("ttnn.view", kind="free", traits={Trait.VIEW}, golden=_view_golden)   # ops/data_movement.py
    def view(input_tensor, shape, *, op_name: str = OWN_NAME, **tt_nn_only):
        ...  raise ValueError(f"{op_name}: cannot view shape ...")   # "ttnn.view: cannot view shape ..."

The registry is a floor under the tensor and the ops: it imports nothing of device_sim (the optional C extension
`_native` aside). Tensor's methods and operators call registered ops (`a + b` is ttnn.add), and the ops are built on
Tensor, so Tensor reaches them through the table here, TTNN, which register_op fills as each op registers (its
public function under its short name and its aliases'): `TTNN.add(a, b)` costs one attribute lookup, as `ops.add`
did. What the wrapper needs of a tensor (output_tensor=: write into it, free a result copied into it; a golden
fallback: read tensors back) it knows by TensorBase, Tensor's base, and reaches ttnn.to_torch / ttnn.from_torch in
TTNN. A multi-chip mesh's per-chip runner (device_sim.distributed, above) registers itself here as the ops do, and
the device floor turns it on while a multi-chip mesh is open (set_per_device).

    from device_sim.registry import TTNN
    TTNN.add(a, b)   # ttnn.add(a, b), for a module below the ops
"""

from __future__ import annotations

import enum
import functools
import inspect
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch


class Trait(enum.Enum):
    """What an op is beyond its kind; tests/test_device_work_coverage.py and docs/device_work.md read these."""

    HOST = "host"  # TT-NN runs no program for it: a host conversion, a transfer between host and device, an allocation
    VIEW = "view"  # TT-NN returns a view of its input's buffer: no program


# How perf_model prices an op's device time (its family). unary: one SFPU pass a tile, the default; binary: an FPU
# op on two operands; rows: a tile row a unit of work (reductions, sort, topk); norm, softmax: several passes over
# each tile row; matmul; conv2d: a halo and a matmul; embedding: looked-up rows; move: data movement, by the pages
# it touches; host_move: bytes over PCIe; collective: ethernet links (Op.collective names the pattern); free: no
# device time at all.
KINDS = frozenset({"unary", "binary", "rows", "norm", "softmax", "matmul", "conv2d", "embedding", "move",
                   "host_move", "collective", "free"})
# A collective's pattern: what crosses its busiest link (perf_model.collective_link_ns).
COLLECTIVES = frozenset({"gather", "reduce_scatter", "all_reduce", "point_to_point"})


class _OwnName(str):
    """The default a body's `op_name` parameter declares; register_op replaces it with the registered name."""


OWN_NAME = _OwnName("ttnn.<op>")


@dataclass(eq=False)
class Op:
    name: str  # "ttnn.add"
    function: Callable  # the op's body
    golden_function: Callable | None = None
    fallback_function: Callable | None = None
    category: str = ""
    wrapper: Callable | None = field(default=None, repr=False)
    output_keyword: str | None = None  # "output_tensor" / "optional_output_tensor" where TT-NN takes one
    mesh_aware: bool = False  # handles mesh tensors itself (collectives, from_torch): never run per chip
    kind: str = "unary"  # how perf_model prices it (KINDS)
    traits: frozenset[Trait] = frozenset()
    collective: str | None = None  # a collective's pattern (COLLECTIVES)
    no_golden: str | None = None  # why the op has no golden function, when it has none
    aliases: tuple[str, ...] = ()  # other names it is public under ("ttnn.multiply" for "ttnn.mul")

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def short_names(self) -> tuple[str, ...]:
        """Its last name part and its aliases': what a report's short op names are matched against."""
        return (self.short_name, *(a.rsplit(".", 1)[-1] for a in self.aliases))


class TensorBase:
    """What the registry knows of a ttnn tensor: device_sim.tensor.Tensor derives from it (no state of its own).

    The registry sits below Tensor (Tensor's methods call ops through TTNN), so it tells a ttnn tensor by this base:
    the one it writes an op's result into (`_write`), a result it copied there and frees (`_free`), an argument a
    golden fallback reads back.
    """

    __slots__ = ()


class OpTable:
    """TTNN: the public function of every op registered as `ttnn.<name>`, under <name> (and each alias's), set by
    register_op as the op registers: what device_sim.ops exports, reachable from below the ops (Tensor's methods)."""

    def __getattr__(self, name: str):  # only reached for a name not set: no cost on a registered op's lookup
        raise AttributeError(f"ttnn.{name} is not a registered op; import device_sim (which registers every op) "
                             f"before calling it, and ttnn.registered_ops() lists them")


TTNN = OpTable()


class Hook(Protocol):
    """What set_hook takes: ttreport's Recorder implements it, ttnn.tracer wraps one. Declared for readers and type
    checkers only; the registry calls the two methods and nothing else.

    begin and end are called exactly once per recorded op call, on the thread that made it, nested calls between
    them. A hook may also offer `operation_id(token) -> int | None`, the id it gave the op (ttnn.tracer labels its
    graph's nodes with it).
    """

    def begin(self, op: Op, args: tuple, kwargs: dict) -> Any:
        """Before the body runs; returns a token handed back to end()."""

    def end(self, token: Any, output: Any, exception: BaseException | None) -> None:
        """After it: its output (the output keyword's tensor when one was given), or the exception it raised
        (None on success), which the wrapper re-raises unchanged."""


class MemoryListener(Protocol):
    """A device's memory.listener (allocator.DeviceMemory): ttreport hears buffers and programs through it."""

    def __call__(self, event: str, obj: Any) -> None:
        """event "alloc" or "free" with an allocator.Buffer; "program" with a device_work.Program."""


OPS: dict[str, Op] = {}
# Each short name (Op.short_names: how a report names an op) -> the op registered under it first (see named)
_BY_SHORT: dict[str, Op] = {}
_hook: Hook | None = None

# device_sim/_native.c's Dispatch: an op's public function that calls the body at once when no mesh runner is
# installed and no keyword needs the wrapper (`memory=`, the op's output keyword), between the hook's begin and
# end when one is installed (the wrapper's own steps, in C), else the wrapper. Absent when the extension was not
# built, or with DEVICE_SIM_PURE=1: the wrapper itself is then the public function.
try:
    import device_sim._native as _native
except ImportError:
    _native = None
if os.environ.get("DEVICE_SIM_PURE", "") not in ("", "0"):
    _native = None

class _Writes(threading.local):
    # (op name, tensor) the running op writes its output into, or None; per thread, as ops nest per thread.
    target: tuple | None = None


_writes = _Writes()


def output_target(op_name: str):
    """The tensor that op `op_name`'s output goes into (its output_tensor=), taken once; else None.

    ops.common.output() asks this, so an op nested inside (linear's matmul) never takes its caller's target.
    """
    w = _writes.target
    if w is None or w[0] != op_name:
        return None
    _writes.target = None
    return w[1]


def pending_output_target(op_name: str):
    """The tensor op `op_name` will write into (its output_tensor=), without taking it; else None.

    For an op whose numerics depend on the output dtype (matmul's accumulation): common.output_dtype.
    """
    w = _writes.target
    return w[1] if w is not None and w[0] == op_name else None


def _write_body(op: Op, function: Callable) -> Callable:
    """`function` with its result written into the call's output keyword; returns that tensor."""

    def body(*args, **kwargs):
        target = kwargs.pop(op.output_keyword)
        previous, _writes.target = _writes.target, (op.name, target)
        try:
            result = function(*args, **kwargs)
            if _writes.target is not None and result is not target:
                # The op made its result without output() (a composite, or an early return): copy it in.
                target._write(result.value)
                if isinstance(result, TensorBase) and not any(result is a for a in (*args, *kwargs.values())):
                    result._free()
        finally:
            _writes.target = previous
        return target

    return body


def _call_writing_into(op: Op, function: Callable, args: tuple, kwargs: dict):
    """Run `op` with its output written into kwargs[op.output_keyword]; the hook sees that tensor as the output."""
    target = kwargs[op.output_keyword]
    if not isinstance(target, TensorBase):
        raise TypeError(f"{op.name}: {op.output_keyword}= must be a ttnn tensor to write into, "
                        f"got {type(target).__name__}")
    body = _write_body(op, function)
    if _per_device is not None and not op.mesh_aware:
        per_chip = _per_device(op, body, args, kwargs)
        if per_chip is not None:
            # Each chip writes into its own shard of the target; the mesh runner records the op once.
            # (It records the mesh tensor it assembles over those shards, which is not the target's id.)
            per_chip(*args, **kwargs)
            shards = getattr(target, "shards", None)
            if shards:
                target._value = shards[0]._value  # a mesh tensor keeps its first shard's values as its own
            return target
    hook = _hook
    token = hook.begin(op, args, kwargs) if hook is not None else None
    try:
        body(*args, **kwargs)
    except BaseException as exc:
        if hook is not None:
            hook.end(token, None, exc)
        raise
    if hook is not None:
        hook.end(token, target, None)
    return target


# Set while a multi-chip mesh is open (device_sim.mesh): given (op, function, args, kwargs) it returns
# None for an ordinary call, or a callable that runs the call itself and calls the hook once: an op on
# mesh tensors (run once per chip on each chip's shards), or an op nested in one on a chip after the
# first (not recorded: chip 0's call is). None otherwise, so a single-chip op pays one global read.
_per_device = None


def set_per_device(runner) -> None:
    global _per_device
    _per_device = runner


# The runner of an op on a multi-chip mesh, device_sim.distributed.per_device_runner: distributed registers it as it
# is imported (it sits above the device floor that opens meshes, as the ops sit above this table), and
# device_sim.device installs it with set_per_device while a multi-chip mesh is open.
_mesh_runner = None


def register_mesh_runner(runner) -> None:
    global _mesh_runner
    _mesh_runner = runner


def mesh_runner():
    """The registered mesh runner; importing device_sim registers it (device_sim.distributed)."""
    assert _mesh_runner is not None, "device_sim.distributed registers the mesh runner as it is imported"
    return _mesh_runner


def set_hook(hook: Hook | None) -> Hook | None:
    """Install `hook` (or None) for all threads; returns the previous one so callers can restore it."""
    global _hook
    previous, _hook = _hook, hook
    return previous


def get_hook() -> Hook | None:
    return _hook


def _rename_memory(kwargs: dict) -> None:
    if "memory_config" in kwargs and kwargs["memory_config"] is not None and kwargs["memory"] is not None:
        raise TypeError("give either memory= or memory_config=, not both (they are the same argument)")
    cfg = kwargs.pop("memory")
    if cfg is not None or "memory_config" not in kwargs:
        kwargs["memory_config"] = cfg


def register_op(name: str, *, kind: str = "unary", traits=(), golden: Callable | None = None,
                no_golden: str | None = None, output_keyword: str | None = None, collective: str | None = None,
                aliases: tuple[str, ...] = (), fallback: Callable | None = None, mesh_aware: bool = False,
                plain: Callable | None = None):
    """Register an op body under `name` ("ttnn.add"); returns the public, hookable function.

    Args:
        kind: how perf_model prices its device time (KINDS; "unary", one SFPU pass a tile, by default).
        traits: Trait members: HOST (TT-NN runs no program for it), VIEW (a view of its input's buffer).
        golden: the torch function a golden comparison runs on the op's inputs (tests/test_ops.py, ttreport).
        no_golden: why it has none, when golden is None on purpose (deallocate returns nothing, a collective's
            result depends on other chips' shards).
        output_keyword: the keyword TT-NN takes a tensor to write the result into ("output_tensor" for the
            element-wise ops, "optional_output_tensor" for matmul and linear; the op's nanobind file names it).
        collective: a collective's pattern (COLLECTIVES); its kind is then "collective".
        aliases: other registered-style names it is public under ("ttnn.multiply" for "ttnn.mul").
        fallback: the op's own host fallback (get_fallback_function).
        mesh_aware: it handles mesh tensors itself (collectives, from_torch): never run per chip.
        plain: for a binary op, the body's own fast path for a call with two positional arguments and no
            keywords, a Tensor and a Tensor or a Python number (float or int); it returns the output, or None to
            let the body decide. With device_sim._native built, such a call with no hook runs it without the
            body's keyword checks; the body must give the same result for the same call.
    """
    if collective is not None:
        if collective not in COLLECTIVES:
            raise ValueError(f"{name}: collective={collective!r} is not one of {sorted(COLLECTIVES)}")
        kind = "collective"
    if kind not in KINDS:
        raise ValueError(f"{name}: kind={kind!r} is not one of {sorted(KINDS)}")
    traits = frozenset(traits)
    if not all(isinstance(t, Trait) for t in traits):
        raise ValueError(f"{name}: traits must be Trait members, got {sorted(map(repr, traits))}")
    if golden is not None and no_golden:
        raise ValueError(f"{name}: give golden= or no_golden=, not both")

    def decorate(function: Callable) -> Callable:
        if name in OPS:
            raise ValueError(f"op {name!r} is registered twice")
        for short in (name, *aliases):
            other = named(short.rsplit(".", 1)[-1])
            if other is not None and (other.kind, other.collective) != (kind, collective):
                # a report names ops by short name (ttnn.typecast and ttnn.experimental.typecast are both "typecast"):
                # one short name is priced one way
                raise ValueError(f"{name}: kind={kind!r}, but {other.name}, also {short.rsplit('.', 1)[-1]!r} in a "
                                 f"report, is kind={other.kind!r}; declare the same kind (and collective) for both")
        # Ops made by a factory (eltwise's _unary, ...) are all called `op`: name them as registered.
        function.__name__ = function.__qualname__ = name.rsplit(".", 1)[-1]
        own = function.__kwdefaults__ or {}
        if "op_name" in own:
            if own["op_name"] is not OWN_NAME:
                raise ValueError(f"{name}: the body's op_name= default must be registry.OWN_NAME (the registry "
                                 f"fills it in), got {own['op_name']!r}")
            own["op_name"] = name  # the body's checks and errors name the op; a default costs nothing a call
        category = function.__module__.rsplit(".", 1)[-1]
        out_kw = output_keyword
        op = Op(name, function, golden, fallback, category=category, output_keyword=out_kw, mesh_aware=mesh_aware,
                kind=kind, traits=traits, collective=collective, no_golden=no_golden, aliases=tuple(aliases))

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if kwargs:
                if "memory" in kwargs:
                    _rename_memory(kwargs)
                if out_kw is not None and out_kw in kwargs:
                    if kwargs[out_kw] is not None:
                        return _call_writing_into(op, function, args, kwargs)
                    del kwargs[out_kw]  # output_tensor=None: TT-NN's default, a new tensor
            if _per_device is not None and not mesh_aware:
                run = _per_device(op, function, args, kwargs)
                if run is not None:  # one op on a mesh: it calls the hook once itself
                    return run(*args, **kwargs)
            hook = _hook
            if hook is None:
                # Positional only when there are no keywords: **{} still builds a dict (~0.3 us of a small op).
                return function(*args, **kwargs) if kwargs else function(*args)
            token = hook.begin(op, args, kwargs)
            try:
                output = function(*args, **kwargs)
            except BaseException as exc:
                hook.end(token, None, exc)
                raise
            hook.end(token, output, None)
            return output

        if out_kw is not None or "op_name" in own:
            wrapper.__signature__ = _public_signature(function, out_kw)
        wrapper.op = op
        wrapper.golden_function = golden
        public = wrapper if _native is None else _native.Dispatch(function, wrapper, globals(), plain, op)
        op.wrapper = public
        OPS[name] = op
        for public_name in (name, *op.aliases):
            prefix, _, short = public_name.rpartition(".")
            if prefix == "ttnn":
                setattr(TTNN, short, public)
        for short in op.short_names:
            if named(short) is None:
                _BY_SHORT[short] = op
        return public

    return decorate


def _public_signature(function: Callable, keyword: str | None) -> inspect.Signature:
    """The op's signature as callers see it: the body's, without the op_name the registry fills in, plus the
    output keyword the wrapper takes."""
    sig = inspect.signature(function)
    params = [p for p in sig.parameters.values() if p.name != "op_name"]
    if keyword is not None and keyword not in sig.parameters:
        at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
        params.insert(at, inspect.Parameter(keyword, inspect.Parameter.KEYWORD_ONLY, default=None))
    return sig.replace(parameters=params)


def _op_of(fn) -> Op:
    op = getattr(fn, "op", None)
    if op is None:
        op = OPS.get(fn) if isinstance(fn, str) else None
    if op is None:
        raise ValueError(f"{fn!r} is not a registered op; ttnn.registered_ops() lists them")
    return op


def get_golden_function(fn) -> Callable:
    # TT-NN's decorators.get_golden_function reads operation.golden_function, so an object of the caller's own that
    # has one passes too (tt-metal's test_math.py and test_unary.py wrap reciprocal and sigmoid in such classes)
    if getattr(fn, "op", None) is None and not isinstance(fn, str) and getattr(fn, "golden_function", None) is not None:
        return fn.golden_function
    op = _op_of(fn)
    if op.golden_function is None:
        raise RuntimeError(f"{op.name} has no golden function")
    return op.golden_function


def get_fallback_function(fn) -> Callable:
    """The op run on the host as TT-NN's fallback: ttnn tensors in, ttnn tensors out.

    An op's own fallback is returned as it is. Otherwise, as TT-NN's decorators.get_fallback_function,
    its golden is wrapped: each ttnn tensor argument (also inside lists) goes through ttnn.to_torch, the
    golden runs, and each torch tensor it returns goes through ttnn.from_torch with the first tensor
    argument's dtype, layout and device. Both conversions are ops, so a capture shows them.
    """
    op = _op_of(fn)
    if op.fallback_function is not None:
        return op.fallback_function
    golden = get_golden_function(op.wrapper)

    def fallback(*args, **kwargs):
        first = []

        def to_host(v):
            if isinstance(v, TensorBase):
                first.append(v)
                return TTNN.to_torch(v)
            return type(v)(to_host(e) for e in v) if isinstance(v, (list, tuple)) else v

        out = golden(*(to_host(a) for a in args), **{k: to_host(v) for k, v in kwargs.items()})
        like = first[0] if first else None
        place = {} if like is None else dict(dtype=like.dtype, layout=like.layout, device=like.device())

        def to_device(v):
            if isinstance(v, (list, tuple)):
                return type(v)(to_device(e) for e in v)
            if not isinstance(v, torch.Tensor):
                raise RuntimeError(f"{op.name}'s fallback: its golden returned a {type(v).__name__}, not a "
                                   f"torch tensor or a list of them")
            return TTNN.from_torch(v, **place)

        return to_device(out)

    fallback.__name__ = f"{op.short_name}_fallback"
    return fallback


def registered_ops() -> list[Op]:
    return list(OPS.values())


def named(short: str) -> Op | None:
    """The registered op a report's short op name names: its last name part or an alias's ("add", "multiply" for
    ttnn.mul); None when none is. Read at each call, so an op registered later (or removed from OPS) counts as it
    is now: perf_model prices ops through this, by their declared kind."""
    op = _BY_SHORT.get(short)
    return op if op is not None and OPS.get(op.name) is op else None


def public_functions(namespace: str) -> dict[str, Callable]:
    """{name: public function} of every op registered as `namespace`.<name> (and of each alias there): what a
    namespace module (device_sim.ops for "ttnn", ops.experimental for "ttnn.experimental") exports."""
    found = {}
    for op in OPS.values():
        for name in (op.name, *op.aliases):
            prefix, _, short = name.rpartition(".")
            if prefix == namespace:
                found[short] = op.wrapper
    return found
