"""Drawing a ttnn.tracer graph with graphviz, as TT-NN 0.81's visualize does; DOT source when `dot` is missing.

    from ttnn.tracer import trace, visualize
    with trace():
        t = torch.exp(torch.randint(0, 100, (1, 64), dtype=torch.int32))
    drawing = visualize(t)                  # a graphviz.Digraph; drawing.source is its DOT text
    visualize(t, file_name="exp.svg")       # drawn by graphviz's `dot`; without it: exp.dot and a warning

Each node is a table: its label (`12: ttnn.add` when a ttreport capture gave it an operation id, and
its duration), one cell per input and per output with shape, dtype, layout and memory. A module call
is a coloured cluster holding what it ran (`max_depth` levels deep; `show_modules=False` inlines them).
The Python `graphviz` package writes the DOT text; only drawing it needs graphviz's `dot` program
(Debian: apt-get install graphviz). TT-NN without `dot` warns and returns None; here the Digraph
comes back either way, and a file asked for is written as its DOT source beside the name given.
"""

from __future__ import annotations

import html
import shutil
import warnings
from pathlib import Path

from device_sim.tracer_graph import TorchModule, TorchModuleInput, get_graph, module_sink, module_source

# TT-NN's colours for module clusters, one per nesting level.
LEVEL_COLORS = ["#0000ff80", "#ee00ee80", "#ff000080", "#eeee0080", "#00ff0080", "#00eeee80"]
_DRAWN = {".svg", ".png", ".pdf"}  # what TT-NN renders
_SOURCE = {".dot", ".gv"}  # the DOT text itself (device_sim's addition: needs no `dot`)


def duration_to_string(duration: float) -> str:
    if duration < 1e-6:
        return f"{duration * 1e9:.1f} ns"
    if duration < 1e-3:
        return f"{duration * 1e6:.1f} µs"
    if duration < 1:
        return f"{duration * 1e3:.1f} ms"
    return f"{duration:.1f} s"


def _layout_text(layout) -> str:
    name = getattr(layout, "name", None)
    return f"Layout: {name}" if name in ("ROW_MAJOR", "TILE") else ""


def _memory_text(memory_config) -> str:
    if memory_config is None:
        return ""
    text = f"Memory: {memory_config.buffer_type.name}, {memory_config.memory_layout.name}"
    spec = memory_config.shard_spec
    if spec is not None:
        text += (f"\nShard Grid: {spec.grid}\nShard Shape: {spec.shape}\n"
                 f"Shard Orientation: {spec.orientation.name}")
    return text


def _cell(port: str, title: str, lines) -> str:
    text = "<BR/>".join(html.escape(str(line)).replace("\n", "<BR/>") for line in (title, *lines) if line != "")
    return f'<TD PORT="{port}">{text}</TD>'


def _table(label: str, inputs: list, outputs: list) -> str:
    rows = 2 if inputs and outputs else 1
    head = f'<TD ROWSPAN="{rows}">{html.escape(label).replace(chr(10), "<BR/>")}</TD>'
    first = "".join(_cell(f"${i}", f"Input {i}", cell) for i, cell in enumerate(inputs))
    second = "".join(_cell(f"#{i}", f"Output {i}", cell) for i, cell in enumerate(outputs))
    if not inputs:
        first, second = second, ""
    table = f"<TR>{head}{first}</TR>" + (f"<TR>{second}</TR>" if second else "")
    return f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="1" CELLPADDING="1">{table}</TABLE>>'


def _tensor_lines(attributes: dict, index: int) -> list:
    lines = [attributes["shapes"][index], attributes["dtypes"][index]]
    if "layouts" in attributes:
        lines.append(_layout_text(attributes["layouts"][index]))
    if "memory_configs" in attributes:
        lines.append(_memory_text(attributes["memory_configs"][index]))
    return lines


def visualize_node(graphviz_graph, graph, node, max_depth, visualize_node, visualize_edge, level, verbose):
    """Draw one node (TT-NN's signature, so a caller's own visualize_node can stand in)."""
    attributes = graph.nodes[node]
    operation = attributes["operation"]
    label = operation.to_string(verbose=verbose)
    if attributes.get("operation_id") is not None:
        label = f"{attributes['operation_id']}: {label}"
    if attributes.get("duration") is not None:
        label = f"{label}\nduration: {duration_to_string(attributes['duration'])}"
    inputs = [_tensor_lines(graph.nodes[source], data["source_output_index"])
              for source, _, data in sorted(graph.in_edges(node, data=True), key=lambda e: e[2]["sink_input_index"])]
    outputs = [_tensor_lines(attributes, i) for i in range(len(attributes["shapes"]))]
    if isinstance(operation, TorchModule):
        color = LEVEL_COLORS[level % len(LEVEL_COLORS)]
        if max_depth is None or level < max_depth - 1:
            with graphviz_graph.subgraph(name=f"cluster_{node.name}") as cluster:
                cluster.attr(fontcolor="black", bgcolor=color, label=label, rankdir="TB")
                cluster.node_attr["style"] = "filled"
                _draw(cluster, operation.graph, max_depth=max_depth, visualize_node=visualize_node,
                      visualize_edge=visualize_edge, verbose=verbose, level=level + 1)
        else:
            graphviz_graph.node(node.name, label=_table(label, inputs, outputs), fontcolor="black", fillcolor=color)
        return
    url = None if attributes.get("operation_id") is None else f"/operation_buffer_report/{attributes['operation_id']}"
    graphviz_graph.node(node.name, label=_table(label, inputs, outputs), fillcolor="#DCDCDC", URL=url)


def visualize_edge(graphviz_graph, graph, edge, max_depth, level):
    """Draw one edge, from inside a drawn module cluster to inside another where the edge's ends are modules."""
    source, sink, _, data = edge
    levels = None if max_depth is None else max_depth - level - 1
    _, source, source_index = module_source(graph, source, data["source_output_index"], levels)
    sink_graph, sink, sink_index = module_sink(graph, sink, data["sink_input_index"], levels)
    sink_name = f"{sink.name}:${sink_index}"
    if isinstance(sink_graph.nodes[sink]["operation"], TorchModuleInput):
        sink_name = sink.name  # a module input's table has no input cells
    graphviz_graph.edge(f"{source.name}:#{source_index}", sink_name,
                        label=f"{source_index} -> {sink_index}", fontcolor="black" if level == 0 else "white")


def _draw(graphviz_graph, graph, *, max_depth, visualize_node, visualize_edge, verbose, level=0):
    if max_depth is not None and level == max_depth:
        return graphviz_graph
    for node in sorted(graph):
        visualize_node(graphviz_graph, graph, node, max_depth, visualize_node, visualize_edge, level, verbose=verbose)
    for node in sorted(graph):
        for edge in graph.in_edges(node, data=True, keys=True):
            visualize_edge(graphviz_graph, graph, edge, max_depth, level)
    return graphviz_graph


def visualize(output, *, show_modules: bool = True, max_depth: int | None = None, file_name=None,
              graph_attr: dict | None = None, node_attr: dict | None = None, edge_attr: dict | None = None,
              visualize_node=visualize_node, visualize_edge=visualize_edge, verbose: bool = False):
    """Draw the graph that made `output` (see get_graph); returns the graphviz.Digraph.

    Args:
        output: a traced tensor, tensors in a list/tuple/dict, or a graph from get_graph.
        show_modules: draw module calls as clusters (False: inline what they ran; then no max_depth).
        max_depth: how many levels of module calls to open (None: all; 1: top-level modules as boxes).
        file_name: .svg, .png or .pdf to draw it to with graphviz's `dot`; .dot or .gv for the DOT text.
        graph_attr, node_attr, edge_attr: graphviz attributes (TT-NN's defaults when None).
        visualize_node, visualize_edge: callables drawing one node / edge (TT-NN's signatures).
        verbose: label torch and ttnn calls with their arguments.
    """
    import graphviz

    if not show_modules and max_depth is not None:
        raise RuntimeError("max_depth is not supported with show_modules=False: modules are inlined; drop one")
    if max_depth is not None and max_depth < 1:
        raise RuntimeError(f"max_depth must be greater than 0, got {max_depth}")
    suffix = None if file_name is None else Path(file_name).suffix
    if suffix is not None and suffix not in _DRAWN | _SOURCE:
        raise ValueError(f"file_name must have a .svg, .png or .pdf suffix (or .dot/.gv for the DOT source), "
                         f"not {suffix!r}: {file_name}")
    graph = get_graph(output, flatten=not show_modules)
    drawing = graphviz.Digraph(
        engine="dot",
        graph_attr=graph_attr if graph_attr is not None else {"ordering": "in", "rankdir": "TB"},
        node_attr=node_attr if node_attr is not None else {
            "style": "filled", "border": "1", "fontsize": "10", "ranksep": "0.1", "height": "0.2",
            "fontname": "Linux libertine", "margin": "0", "shape": "box"},
        edge_attr=edge_attr if edge_attr is not None else {"fontsize": "10"},
    )
    _draw(drawing, graph, max_depth=max_depth, visualize_node=visualize_node, visualize_edge=visualize_edge,
          verbose=verbose)
    have_dot = shutil.which("dot") is not None
    if file_name is not None:
        path = Path(file_name)
        if suffix in _SOURCE:
            path.write_text(drawing.source)
        elif have_dot:
            drawing.render(outfile=path, cleanup=True)
        else:
            source = path.with_suffix(".dot")
            source.write_text(drawing.source)
            warnings.warn(f"graphviz's `dot` program is not on PATH, so {path} was not drawn; its DOT source is in "
                          f"{source}. Install graphviz (Debian: apt-get install graphviz), then run: "
                          f"dot -T{suffix[1:]} {source} -o {path}", stacklevel=2)
    elif not have_dot:
        warnings.warn("graphviz's `dot` program is not on PATH: the graph returned cannot be drawn, but its "
                      ".source is the DOT text; pass file_name='graph.dot' to save it, or install graphviz "
                      "(Debian: apt-get install graphviz) to draw it", stacklevel=2)
    return drawing
