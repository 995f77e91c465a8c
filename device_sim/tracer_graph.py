"""ttnn.tracer's graph: its node and operation types (TT-NN 0.81's names and fields), and walks over it.

    import torch, device_sim as ttnn
    from device_sim.tracer_graph import TorchFunction, flatten_graph
    ttnn.CONFIG.enable_fast_runtime_mode = False
    layer = torch.nn.Linear(8, 8)
    with ttnn.tracer.trace():
        y = layer(torch.rand(2, 8))
    flat = flatten_graph(ttnn.tracer.get_graph(y))   # the Linear call inlined: rand, 2 parameters, linear
    calls = [str(d["operation"]) for _, d in flat.nodes(data=True) if isinstance(d["operation"], TorchFunction)]

A graph is a networkx.MultiDiGraph whose nodes are `Node`s with an `operation` attribute (one of the
types below), `shapes` and `dtypes` per output, and for ttnn tensors `layouts` and `memory_configs`;
edges carry `source_output_index` and `sink_input_index`. A TorchModule holds the graph of what its
call ran, entered through TorchModuleInput nodes. device_sim/tracer.py builds these graphs; which node made each
traced tensor (_remember, _where) and get_graph, its reading, are here, under both tracer.py and tracer_draw.py.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

import torch

from device_sim.graph import tensors_in as _tensors_in  # private here: ttnn.tracer's public names are TT-NN's
from device_sim.tensor import Tensor


@dataclasses.dataclass
class Node:
    name: str
    unique_id: int

    def __hash__(self):
        return hash(self.name)

    def __lt__(self, other):
        return self.unique_id < other.unique_id


@dataclasses.dataclass
class PositionalArgumentName:
    index: int

    def __repr__(self):
        return f"{self.index}"

    def __hash__(self):
        return hash(self.index)


@dataclasses.dataclass
class InputTensorIndex:
    """An argument that was a tensor: the index of the edge that brings it in."""

    index: int

    def __repr__(self):
        return f"${self.index}"


def _arguments(pairs) -> str:
    return ", ".join(f"{v}" if isinstance(n, PositionalArgumentName) else f"{n}={v}" for n, v in pairs)


@dataclasses.dataclass
class TorchTensor:
    tensor: torch.Tensor

    def to_string(self, verbose: bool = False) -> str:
        return "torch.Tensor"

    __repr__ = to_string


@dataclasses.dataclass
class TorchParameter:
    parameter: torch.nn.Parameter
    name: str = ""

    def to_string(self, verbose: bool = False) -> str:
        return f"torch.nn.Parameter\n{self.name}" if self.name else "torch.nn.Parameter"

    __repr__ = to_string


@dataclasses.dataclass
class TorchFunction:
    function: Any
    arg_name_value_pairs: list

    def to_string(self, verbose: bool = False) -> str:
        f = self.function
        owner = getattr(f, "__objclass__", None)
        if owner is not None:  # a Tensor method: torch._C.TensorBase.add
            name = f"{owner.__module__}.{owner.__name__}.{f.__name__}"
        else:
            name = f"{getattr(f, '__module__', None) or type(f).__module__}.{getattr(f, '__name__', type(f).__name__)}"
        for long, short in (("torch.nn.modules", "torch.nn"), ("torch._tensor", "torch.Tensor"),
                            ("torch._C.TensorBase", "torch.Tensor"), ("torch._C._nn", "torch.nn.functional"),
                            ("torch._C._VariableFunctions", "torch"), ("torch._C", "torch")):
            name = name.replace(long, short)
        return f"{name}({_arguments(self.arg_name_value_pairs)})" if verbose else name

    __repr__ = to_string


@dataclasses.dataclass
class ModuleIOTensor:
    """One input (a module_input node) or output of a traced module, inside the module's own graph."""

    graph: Any
    node: Node
    output_index: int

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def shape(self):
        return self.graph.nodes[self.node]["shapes"][self.output_index]


@dataclasses.dataclass
class TorchModule:
    module: torch.nn.Module
    graph: Any  # the module's own networkx.MultiDiGraph
    inputs: list
    outputs: list
    arg_name_value_pairs: list
    name: str = ""  # its path in the outermost traced module: "encoder.layer.0"

    def to_string(self, verbose: bool = False) -> str:
        text = f"{type(self.module).__module__}.{type(self.module).__name__}"
        if verbose:
            text += f"({_arguments(self.arg_name_value_pairs)})"
        return f"{text}\n{self.name}" if self.name else text

    __repr__ = to_string


@dataclasses.dataclass
class TorchModuleInput:
    name: str

    def to_string(self, verbose: bool = False) -> str:
        return self.name

    __repr__ = to_string


@dataclasses.dataclass
class TTNNTensor:
    def to_string(self, verbose: bool = False) -> str:
        return "ttnn.Tensor"

    __repr__ = to_string


@dataclasses.dataclass
class TTNNOperation:
    pretty_name: str
    operation: Any
    arg_name_value_pairs: Any

    def to_string(self, verbose: bool = False) -> str:
        return f"{self.pretty_name}({_arguments(self.arg_name_value_pairs)})" if verbose else self.pretty_name

    __repr__ = to_string


# -- walks ---------------------------------------------------------------------------------------------------
def module_source(graph, node: Node, index: int, levels: int | None = None) -> tuple:
    """(graph, node, index) that really makes output `index` of `node`: inside module calls, `levels` deep at most."""
    while isinstance(graph.nodes[node]["operation"], TorchModule) and (levels is None or levels > 0):
        out = graph.nodes[node]["operation"].outputs[index]
        graph, node, index = out.graph, out.node, out.output_index
        levels = None if levels is None else levels - 1
    return graph, node, index


def module_sink(graph, node: Node, index: int, levels: int | None = None) -> tuple:
    """(graph, node, index) that really takes input `index` of `node`: a module call's module_input node."""
    while isinstance(graph.nodes[node]["operation"], TorchModule) and (levels is None or levels > 0):
        module_input = graph.nodes[node]["operation"].inputs[index]
        graph, node, index = module_input.graph, module_input.node, 0
        levels = None if levels is None else levels - 1
    return graph, node, index


def flatten_graph(graph):
    """`graph` with each module call replaced by what it ran, and module inputs wired straight through."""
    import networkx as nx

    flat = nx.MultiDiGraph()

    def inline(g):
        for node, data in g.nodes(data=True):
            if isinstance(data["operation"], TorchModule):
                inline(data["operation"].graph)
            else:
                flat.add_node(node, **data)
        for u, v, data in g.edges(data=True):
            _, source, source_index = module_source(g, u, data["source_output_index"])
            _, sink, sink_index = module_sink(g, v, data["sink_input_index"])
            flat.add_edge(source, sink, source_output_index=source_index, sink_input_index=sink_index)

    inline(graph)
    for node in [n for n, d in flat.nodes(data=True) if isinstance(d["operation"], TorchModuleInput)]:
        for feeder, _, fed in list(flat.in_edges(node, data=True)):
            for _, user, use in list(flat.out_edges(node, data=True)):
                flat.add_edge(feeder, user, source_output_index=fed["source_output_index"],
                              sink_input_index=use["sink_input_index"])
        flat.remove_node(node)
    return flat


# -- which node made each tensor ---------------------------------------------------------------------------
_made: dict[int, tuple] = {}  # id(tensor) -> (weakref to it, graph, node, output index)


def _remember(tensor, graph, node: Node, index: int) -> None:
    key = id(tensor)

    def forget(ref, key=key):  # only this tensor's entry: its id may be reused by a newer one
        entry = _made.get(key)
        if entry is not None and entry[0] is ref:
            del _made[key]

    _made[key] = (weakref.ref(tensor, forget), graph, node, index)


def _where(tensor):
    """(graph, node, output index) of the node that made `tensor`, or None if it was not traced."""
    entry = _made.get(id(tensor))
    if entry is None or entry[0]() is not tensor:
        return None
    return entry[1:]


def _tensors(value) -> list:
    """Every torch or ttnn tensor in `value` (lists, tuples, dicts and dataclasses opened), in order."""
    return _tensors_in(value, (torch.Tensor, Tensor))


def get_graph(value, flatten: bool = False):
    """The networkx.MultiDiGraph that made `value` (a traced tensor, or a list/tuple/dict of them, or a graph).

    flatten=True inlines every module call, leaving torch functions and ttnn ops (TT-NN's flatten_graph).
    """
    import networkx as nx

    if isinstance(value, nx.MultiDiGraph):
        graph = value
    else:
        tensors = _tensors(value)
        if not tensors:
            raise RuntimeError(f"get_graph() takes a traced tensor (or tensors in a list, tuple or dict), got "
                               f"{type(value).__name__}")
        graphs = []
        for tensor in tensors:
            where = _where(tensor)
            if where is None:
                raise RuntimeError(
                    f"this {type(tensor).__module__}.{type(tensor).__name__} of shape {tuple(tensor.shape)} was not "
                    f"made inside a `with ttnn.tracer.trace():` block, so it has no graph; pass a tensor that the "
                    f"traced code made")
            if not any(g is where[0] for g in graphs):
                graphs.append(where[0])
        graph = nx.compose_all(graphs)
    return flatten_graph(graph) if flatten else graph
