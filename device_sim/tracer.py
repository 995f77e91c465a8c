"""`ttnn.tracer`: what a block of torch and ttnn code did, as a graph (TT-NN 0.81's ttnn/tracer.py).

    import torch, ttnn
    from ttnn.tracer import trace, visualize, get_graph
    ttnn.CONFIG.enable_fast_runtime_mode = False      # as in TT-NN, tracing needs the slow path
    with trace():
        t = torch.randint(0, 100, (4, 64), dtype=torch.int32)
        t = ttnn.to_torch(ttnn.reshape(ttnn.from_torch(t), (2, 4, 32)))
    graph = get_graph(t)          # a networkx.MultiDiGraph: randint -> from_torch -> reshape -> to_torch
    visualize(t, file_name="t.svg")   # drawn by graphviz's `dot`; without it, t.dot and a warning

The graph is TT-NN's: one node per torch factory call (`torch_input_N`, a TorchFunction), per torch
function on a traced tensor (`exp_N`), per top-level ttnn op (`ttnn.from_torch_N`, a TTNNOperation
with its outputs' shapes, dtypes, layouts and memory configs) and per torch.nn.Module call (`<name>_N`,
a TorchModule holding its own graph, entered through `module_input_N` nodes). Untraced tensors an op
reads become `torch_input_N` / `torch_parameter_N` / `ttnn_input_N` sources. Each edge carries
`source_output_index` and `sink_input_index`. Ops nested inside a ttnn op are not traced, as in TT-NN.

How it watches, without TT-NN's tensor subclass and patched torch functions (tensors keep their own
types, so device_sim and a ttreport capture see plain tensors): torch calls through a TorchFunctionMode
(per thread: only the tracing thread is traced); ttnn ops through device_sim's hook seam, chained in
front of the hook already installed (a ttreport capture goes on recording, and under one each ttnn node
carries the report's operation_id, so a label `12: ttnn.add` is row 12 of `ttreport ops`); modules
through torch's global forward hooks. Which node made a tensor is remembered weakly, by the tensor.

Departures from TT-NN 0.81, each a fix: an exception inside `with trace():` ends the trace; a tensor's
graph from an earlier trace is merged in place rather than copied; non-tensor outputs (conv2d's sizes)
are skipped rather than raising. visualize() without graphviz's `dot` returns the graph and writes
its DOT source (TT-NN warns and returns None). `codegen` is not provided, and a traced tensor has no
`.graph` attribute (ask get_graph(tensor)).

The graph's node types and walks (and get_graph) are in tracer_graph.py; drawing is tracer_draw.py; this module
builds the graph and exports all three's public names.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import threading
import time
import weakref
from typing import Any

import torch
from torch.nn.modules import module as _nn_module
from torch.overrides import TorchFunctionMode

from device_sim import registry
from device_sim.config import CONFIG
from device_sim.core import get_memory_config
from device_sim.tensor import Tensor
from device_sim.tracer_draw import LEVEL_COLORS, duration_to_string, visualize
from device_sim.tracer_graph import (
    InputTensorIndex,
    ModuleIOTensor,
    Node,
    PositionalArgumentName,
    TorchFunction,
    TorchModule,
    TorchModuleInput,
    TorchParameter,
    TorchTensor,
    TTNNOperation,
    TTNNTensor,
    _remember,
    _tensors,
    _where,
    flatten_graph,
    get_graph,
)

# The torch factories TT-NN's torch_tracer wraps (TORCH_CREATION_OPERATION_NAMES): their results are sources.
_CREATION_NAMES = ("as_tensor", "from_numpy", "zeros", "zeros_like", "ones", "ones_like", "arange", "range",
                   "linspace", "logspace", "eye", "empty", "empty_like", "full", "full_like", "complex", "heaviside",
                   "bernoulli", "multinomial", "normal", "poisson", "rand", "rand_like", "randint", "randint_like",
                   "randn", "randn_like", "randperm")
_CREATION_IDS = frozenset(id(getattr(torch, name)) for name in _CREATION_NAMES if hasattr(torch, name))


_unique = iter(range(1 << 62))


def _any_traced(args, kwargs) -> bool:
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            if _where(value) is not None:
                return True
        elif isinstance(value, (list, tuple, dict)) and any(_where(t) is not None for t in _tensors(value)):
            return True
    return False


def _argument_pairs(function, args, kwargs) -> list:
    """TT-NN's arg_name_value_pairs: (name, value), tensors as InputTensorIndex, arguments left at default dropped."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        parameters = {}
    names = [p.name for p in parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    index = iter(range(1 << 30))

    def value_of(v):
        if isinstance(v, (torch.Tensor, Tensor)):
            return InputTensorIndex(next(index))
        if isinstance(v, (list, tuple)):
            return type(v)(value_of(e) for e in v)
        if isinstance(v, dict):
            return {k: value_of(e) for k, e in v.items()}
        return v

    def at_default(name, v) -> bool:
        p = parameters.get(name) if isinstance(name, str) else None
        if p is None or p.default is inspect.Parameter.empty or _tensors(v):
            return False
        try:
            return bool(v is p.default or v == p.default)
        except Exception:  # a value whose == is not a plain bool (an array): it is not the default
            return False

    pairs = []
    for i, v in enumerate(args):
        name = names[i] if i < len(names) else PositionalArgumentName(i)
        if not at_default(name, v):
            pairs.append((name, value_of(v)))
    for name, v in kwargs.items():
        if not at_default(name, v):
            pairs.append((name, value_of(v)))
    return pairs


# -- a trace ---------------------------------------------------------------------------------------------
@dataclasses.dataclass(eq=False)
class _Scope:
    """The graph being written: the trace's own, or that of the module call running now."""

    graph: Any
    module: Any = None
    inputs: list = dataclasses.field(default_factory=list)  # (outer source, module_input node) per input
    local: dict = dataclasses.field(default_factory=dict)  # id(tensor) -> module_input node, in this scope
    start: float = 0.0


class _Trace:
    def __init__(self, nx):
        self.nx = nx
        self.thread = threading.get_ident()
        self.scopes = [_Scope(nx.MultiDiGraph())]
        self.depth = 0  # ttnn ops running on the tracing thread: only the outermost is traced
        self.names: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # module -> dotted name

    def here(self) -> bool:
        return self.depth == 0 and threading.get_ident() == self.thread

    @property
    def scope(self) -> _Scope:
        return self.scopes[-1]

    def add_node(self, prefix: str, operation, outputs, **attributes) -> Node:
        uid = next(_unique)
        node = Node(name=f"{prefix}_{uid}", unique_id=uid)
        self.scope.graph.add_node(node, operation=operation, **attributes)
        for index, tensor in enumerate(outputs):
            _remember(tensor, self.scope.graph, node, index)
        return node

    def source(self, tensor) -> tuple:
        """The node (and output index) in the current graph that `tensor` comes from; made if need be."""
        where = _where(tensor)
        for depth in range(len(self.scopes) - 1, -1, -1):  # the innermost scope that knows it
            scope = self.scopes[depth]
            hit = scope.local.get(id(tensor))
            if hit is not None and hit[1] is tensor:
                found = (hit[0], 0)
                break
            if where is not None and where[0] is scope.graph:
                found = where[1:]
                break
        else:
            if where is None:  # an untraced tensor: a source node of its own, for this use (as TT-NN)
                return self.input_node(tensor), 0
            # Traced in an earlier trace, or in a module call that has ended: its graph joins this one.
            self.scope.graph.update(where[0])
            return where[1:]
        for scope in self.scopes[depth + 1:]:  # each module call between takes it in through a module input
            found = self.module_input(scope, tensor, found, "")
        return found

    def input_node(self, tensor) -> Node:
        if isinstance(tensor, Tensor):
            return self.add_node("ttnn_input", TTNNTensor(), (), shapes=(tensor.shape,), dtypes=(tensor.dtype,),
                                 layouts=(tensor.layout,), memory_configs=(get_memory_config(tensor),))
        if isinstance(tensor, torch.nn.Parameter):
            return self.add_node("torch_parameter", TorchParameter(tensor, self.parameter_name(tensor)), (),
                                 shapes=(tuple(tensor.shape),), dtypes=(tensor.dtype,), duration=None)
        return self.add_node("torch_input", TorchTensor(tensor), (), shapes=(tuple(tensor.shape),),
                             dtypes=(tensor.dtype,), duration=None)

    def parameter_name(self, parameter) -> str:
        for scope in reversed(self.scopes):
            if scope.module is not None:
                for name, p in scope.module.named_parameters():
                    if p is parameter:
                        prefix = self.names.get(scope.module, "")
                        return f"{prefix}.{name}" if prefix else name
        return ""

    def module_input(self, scope: _Scope, tensor, outer: tuple, name: str) -> tuple:
        uid = next(_unique)
        node = Node(name=f"module_input_{uid}", unique_id=uid)
        shape = tuple(tensor.shape) if isinstance(tensor, torch.Tensor) else tensor.shape
        scope.graph.add_node(node, operation=TorchModuleInput(name), shapes=(shape,), dtypes=(tensor.dtype,))
        scope.local[id(tensor)] = (node, tensor)
        scope.inputs.append((outer, node))
        return node, 0

    def connect(self, node: Node, sources) -> None:
        for sink_index, (source, source_index) in enumerate(sources):
            self.scope.graph.add_edge(source, node, source_output_index=source_index, sink_input_index=sink_index)

    # -- modules (torch's global forward hooks) --
    def module_enter(self, module, args) -> None:
        if module not in self.names:  # a top-level module names its children, as TT-NN's __ttnn_tracer_name__
            for name, child in module.named_modules():
                self.names.setdefault(child, name)
        outer = [(t, self.source(t)) for t in _tensors(args) if isinstance(t, torch.Tensor)]
        try:
            names = list(inspect.signature(module.forward).parameters)
        except (TypeError, ValueError):
            names = []
        scope = _Scope(self.nx.MultiDiGraph(), module=module, start=time.perf_counter())
        self.scopes.append(scope)
        for i, (tensor, source) in enumerate(outer):
            self.module_input(scope, tensor, source, names[i] if i < len(names) else f"{i}")

    def module_exit(self, module, args, kwargs, output) -> None:
        scope = self.scopes[-1]
        for name, value in kwargs.items():  # inputs given by keyword were met at first use: name them now
            for tensor in _tensors(value):
                hit = scope.local.get(id(tensor))
                if hit is not None and hit[1] is tensor:
                    scope.graph.nodes[hit[0]]["operation"].name = name
        outputs = [t for t in _tensors(output) if isinstance(t, torch.Tensor)]
        module_outputs = [ModuleIOTensor(scope.graph, *self.source(t)) for t in outputs]
        self.scopes.pop()
        name = self.names.get(module, "")
        operation = TorchModule(module, scope.graph, [ModuleIOTensor(scope.graph, n, 0) for _, n in scope.inputs],
                                module_outputs, _argument_pairs(module.forward, args, kwargs), name)
        node = self.add_node(name, operation, outputs, shapes=tuple(tuple(t.shape) for t in outputs),
                             dtypes=tuple(t.dtype for t in outputs), duration=time.perf_counter() - scope.start)
        self.connect(node, [outer for outer, _ in scope.inputs])


_trace: _Trace | None = None  # the trace running now (one per process, as TT-NN's)


class _TorchCalls(TorchFunctionMode):
    """Each torch call on the tracing thread: a node when it makes a tensor from nothing or from a traced one."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        t = _trace
        if t is None or not t.here() or (id(func) not in _CREATION_IDS and not _any_traced(args, kwargs)):
            return func(*args, **kwargs)
        start = time.perf_counter()
        result = func(*args, **kwargs)
        duration = time.perf_counter() - start
        outputs = [r for r in _tensors(result) if isinstance(r, torch.Tensor)]
        if not outputs:  # .shape, .item(), ...: nothing to trace
            return result
        inputs = [a for a in _tensors((args, kwargs)) if isinstance(a, torch.Tensor)]
        if id(func) in _CREATION_IDS and not inputs:
            t.add_node("torch_input", TorchFunction(func, _argument_pairs(func, args, kwargs)), outputs,
                       shapes=(tuple(outputs[0].shape),), dtypes=(outputs[0].dtype,), duration=duration)
            return result
        sources = [t.source(a) for a in inputs]  # before the outputs are remembered: an in-place op returns its input
        operation = TorchFunction(func, _argument_pairs(func, args, kwargs))
        node = t.add_node(getattr(func, "__name__", "function"), operation, outputs, duration=duration,
                          shapes=tuple(tuple(o.shape) for o in outputs), dtypes=tuple(o.dtype for o in outputs))
        t.connect(node, sources)
        return result


class _OpHook:
    """device_sim's hook while tracing: notes each top-level ttnn op, and hands every call on to `inner`."""

    def __init__(self, trace: _Trace, inner):
        self.trace, self.inner = trace, inner

    def __repr__(self):
        return f"<ttnn.tracer's hook, in front of {self.inner!r}>"

    def begin(self, op, args, kwargs):
        t = self.trace
        mine = threading.get_ident() == t.thread
        top = mine and t.depth == 0
        sources = [t.source(a) for a in _tensors((args, kwargs))] if top else None
        if mine:
            t.depth += 1  # torch calls and ops inside this op are its own business: not traced
        token = self.inner.begin(op, args, kwargs) if self.inner is not None else None
        op_id = getattr(self.inner, "operation_id", None) if top else None
        return token, mine, sources, op_id(token) if op_id is not None else None, op, args, kwargs

    def end(self, token, output, exc):
        inner_token, mine, sources, op_id, op, args, kwargs = token
        try:
            if self.inner is not None:
                self.inner.end(inner_token, output, exc)
            if sources is not None and exc is None:
                self.record(op, args, kwargs, output, sources, op_id)
        finally:
            if mine:
                self.trace.depth -= 1

    def record(self, op, args, kwargs, output, sources, op_id) -> None:
        outputs = _tensors(output)
        attributes = dict(shapes=tuple(o.shape for o in outputs), dtypes=tuple(o.dtype for o in outputs),
                          layouts=tuple(o.layout for o in outputs),
                          memory_configs=tuple(get_memory_config(o) if isinstance(o, Tensor) else None
                                               for o in outputs))
        if op_id is not None:
            attributes["operation_id"] = op_id
        operation = TTNNOperation(op.name, op.wrapper, _argument_pairs(op.wrapper, args, kwargs))
        self.trace.connect(self.trace.add_node(op.name, operation, outputs, **attributes), sources)


def _module_called(module, args):
    t = _trace
    if t is not None and t.here():
        t.module_enter(module, args)


def _module_returned(module, args, kwargs, output):
    t = _trace
    if t is not None and t.here() and t.scope.module is module:
        t.module_exit(module, args, kwargs, output)


# -- the public API --------------------------------------------------------------------------------------
def enable_tracing() -> None:
    """Start tracing torch calls, ttnn ops and module calls on this thread (trace() does this for a block)."""
    global _trace
    if CONFIG.enable_fast_runtime_mode:
        raise ValueError(
            "Tracing is not supported in fast runtime mode. ttnn.CONFIG.enable_fast_runtime_mode is True (TT-NN's "
            "default); set ttnn.CONFIG.enable_fast_runtime_mode = False first, or export "
            "TTNN_CONFIG_OVERRIDES='{\"enable_fast_runtime_mode\": false}' before ttnn is imported (ttnn reads it "
            "at import, so setting os.environ later changes nothing)"
        )
    if _trace is not None:
        raise ValueError("Tracing is already enabled. Traces cannot nest: end the running `with trace():` first")
    import networkx  # ~0.2 s to import: only when a trace starts

    t = _Trace(networkx)
    t.mode = _TorchCalls()
    t.mode.__enter__()
    t.handles = [_nn_module.register_module_forward_pre_hook(_module_called),
                 _nn_module.register_module_forward_hook(_module_returned, with_kwargs=True, always_call=True)]
    t.hook = _OpHook(t, registry.get_hook())
    registry.set_hook(t.hook)
    _trace = t


def disable_tracing() -> None:
    """Stop tracing; the graphs stay with the tensors the traced code made."""
    global _trace
    t, _trace = _trace, None
    if t is None:
        return
    for handle in t.handles:
        handle.remove()
    if registry.get_hook() is t.hook:  # else someone replaced it meanwhile: theirs stays
        registry.set_hook(t.hook.inner)
    t.mode.__exit__(None, None, None)


def is_tracing_enabled() -> bool:
    return _trace is not None


@contextlib.contextmanager
def trace():
    """`with trace():` records what the block does into a graph, read back with get_graph(tensor) or visualize."""
    enable_tracing()
    try:
        yield
    finally:
        disable_tracing()


__all__ = [
    "trace", "visualize", "get_graph", "flatten_graph", "enable_tracing", "disable_tracing", "is_tracing_enabled",
    "Node", "PositionalArgumentName", "InputTensorIndex", "TorchTensor", "TorchParameter", "TorchFunction",
    "TorchModule", "TorchModuleInput", "ModuleIOTensor", "TTNNTensor", "TTNNOperation", "LEVEL_COLORS",
    "duration_to_string",
]
