"""ttnn.tracer: the graph a `with trace():` block builds is what the block did (TT-NN 0.81's tracer).

    .venv/bin/python -m pytest tests/test_tracer.py -q
"""

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
import ttreport
from device_sim import tracer
from device_sim.tracer import get_graph, trace, visualize

SCRIPT = Path(__file__).parent / "data" / "tracer_script.py"


@pytest.fixture(autouse=True)
def slow_runtime():
    # TT-NN traces only with enable_fast_runtime_mode off (its default is on).
    with ttnn.manage_config("enable_fast_runtime_mode", False):
        yield


def nodes(graph):
    """[(node name without its unique id, operation text)] in the order the nodes were made."""
    return [(n.name.rsplit("_", 1)[0], str(d["operation"])) for n, d in sorted(graph.nodes(data=True))]


def edges(graph):
    """{(source, sink, source_output_index, sink_input_index)} with node names as in nodes()."""
    short = {n: n.name.rsplit("_", 1)[0] for n in graph}
    return {(short[u], short[v], d["source_output_index"], d["sink_input_index"]) for u, v, d in graph.edges(data=True)}


def test_a_torch_factory_then_a_torch_function_is_a_chain_of_two_nodes():
    with trace():
        t = torch.randint(0, 100, (1, 64), dtype=torch.int32)
        t = torch.exp(t)
        untraced_size = t.shape  # not a tensor: no node
    graph = get_graph(t)
    assert nodes(graph) == [("torch_input", "torch.randint"), ("exp", "torch.exp")]
    assert edges(graph) == {("torch_input", "exp", 0, 0)}
    [(_, exp)] = [(n, d) for n, d in graph.nodes(data=True) if n.name.startswith("exp")]
    assert exp["shapes"] == ((1, 64),) and exp["dtypes"] == (torch.float32,) and exp["duration"] >= 0
    assert untraced_size == (1, 64)


def test_torch_calls_outside_a_trace_or_on_untraced_tensors_make_no_node():
    plain = torch.ones(3)
    with trace():
        doubled = plain * 2  # no traced input: not traced, as TT-NN's subclass would not see it
        made = torch.zeros(3)
        summed = made + plain  # the untraced input becomes a torch_input source of its own
    assert tracer._where(doubled) is None
    graph = get_graph(summed)
    assert nodes(graph) == [("torch_input", "torch.zeros"), ("torch_input", "torch.Tensor"),
                            ("add", "torch.Tensor.add")]
    assert {(e[0], e[3]) for e in edges(graph)} == {("torch_input", 0), ("torch_input", 1)}
    after = made * 3
    assert tracer._where(after) is None


def test_ttnn_conversions_and_ops_are_one_node_each_with_their_outputs_spec(device):
    with trace():
        t = torch.randint(0, 100, (4, 64), dtype=torch.int32)
        t = ttnn.from_torch(t, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, memory=ttnn.L1)
        t = ttnn.reshape(t, (2, 4, 32))
        t = ttnn.to_torch(t)
    graph = get_graph(t)
    # from_torch, reshape and to_torch run torch inside; none of that is a node, as in TT-NN.
    assert nodes(graph) == [("torch_input", "torch.randint"), ("ttnn.from_torch", "ttnn.from_torch"),
                            ("ttnn.reshape", "ttnn.reshape"), ("ttnn.to_torch", "ttnn.to_torch")]
    assert edges(graph) == {("torch_input", "ttnn.from_torch", 0, 0), ("ttnn.from_torch", "ttnn.reshape", 0, 0),
                            ("ttnn.reshape", "ttnn.to_torch", 0, 0)}
    by_name = {n.name.rsplit("_", 1)[0]: d for n, d in graph.nodes(data=True)}
    reshape = by_name["ttnn.reshape"]
    assert reshape["shapes"] == (ttnn.Shape([2, 4, 32]),)
    assert reshape["dtypes"] == (ttnn.bfloat16,) and reshape["layouts"] == (ttnn.TILE,)
    assert reshape["memory_configs"][0].buffer_type == ttnn.BufferType.L1
    assert by_name["ttnn.to_torch"]["memory_configs"] == (None,) and by_name["ttnn.to_torch"]["dtypes"] == (
        torch.bfloat16,)
    args = dict(by_name["ttnn.reshape"]["operation"].arg_name_value_pairs)
    assert str(args["input_tensor"]) == "$0" and tuple(args["shape"]) == (2, 4, 32)


def test_a_ttnn_tensor_made_before_the_trace_is_a_ttnn_input_node(device):
    a = ttnn.from_torch(torch.rand(32, 32), layout=ttnn.TILE, device=device)
    with trace():
        b = ttnn.add(a, a)
    graph = get_graph(b)
    assert nodes(graph) == [("ttnn_input", "ttnn.Tensor"), ("ttnn_input", "ttnn.Tensor"), ("ttnn.add", "ttnn.add")]
    assert sorted(e[3] for e in edges(graph)) == [0, 1]


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = torch.nn.Linear(8, 8)
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, hidden_states, residual):
        return self.norm(self.dense(hidden_states) + residual)


def test_a_torch_module_call_is_one_node_holding_the_graph_of_what_it_ran():
    block = Block().eval()
    with trace():
        x = torch.rand(2, 8)
        out = block(x, residual=torch.rand(2, 8))
    graph = get_graph(out)
    assert nodes(graph) == [("torch_input", "torch.rand"), ("torch_input", "torch.rand"), ("", f"{__name__}.Block")]
    assert edges(graph) == {("torch_input", "", 0, 0), ("torch_input", "", 0, 1)}
    [module] = [d["operation"] for _, d in graph.nodes(data=True) if isinstance(d["operation"], tracer.TorchModule)]
    inner = module.graph
    assert nodes(inner) == [
        ("module_input", "hidden_states"), ("dense", "torch.nn.modules.linear.Linear\ndense"),
        ("module_input", "residual"), ("add", "torch.Tensor.add"),
        ("norm", "torch.nn.modules.normalization.LayerNorm\nnorm")]
    assert edges(inner) == {("module_input", "dense", 0, 0), ("dense", "add", 0, 0), ("module_input", "add", 0, 1),
                            ("add", "norm", 0, 0)}
    [dense] = [d["operation"] for _, d in inner.nodes(data=True) if str(d["operation"]).endswith("dense")]
    assert nodes(dense.graph) == [("module_input", "input"), ("torch_parameter", "torch.nn.Parameter\ndense.weight"),
                                  ("torch_parameter", "torch.nn.Parameter\ndense.bias"),
                                  ("linear", "torch.nn.functional.linear")]
    assert [o.shape for o in module.outputs] == [(2, 8)]


def test_a_flattened_graph_is_the_functions_the_modules_ran_wired_straight_through():
    block = Block().eval()
    with trace():
        out = block(torch.rand(2, 8), torch.rand(2, 8))
    flat = get_graph(out, flatten=True)
    kinds = [name for name, _ in nodes(flat)]
    assert kinds.count("torch_parameter") == 4 and "module_input" not in kinds
    assert {(u, v) for u, v, _, _ in edges(flat)} == {
        ("torch_input", "linear"), ("torch_parameter", "linear"), ("linear", "add"), ("torch_input", "add"),
        ("add", "layer_norm"), ("torch_parameter", "layer_norm")}


def test_under_a_capture_the_ops_are_still_recorded_and_each_node_carries_its_report_operation_id(device, tmp_path):
    with ttreport.capture(tmp_path / "r") as handle:
        a = ttnn.from_torch(torch.rand(32, 32), layout=ttnn.TILE, device=device)
        with trace():
            b = ttnn.linear(a, a)
            c = (b + a).to_torch()
            assert ttnn.get_hook() is not handle.recorder  # the tracer's, in front of it
        assert ttnn.get_hook() is handle.recorder  # given back when the trace ends
    with ttreport.open(handle.path) as report:
        ops = [(op.id, op.name) for op in report.operations()]
    traced = sorted((d["operation_id"], d["operation"].pretty_name) for _, d in get_graph(c).nodes(data=True)
                    if "operation_id" in d)
    assert ops[0][1] == "ttnn.from_torch" and traced == ops[1:]  # from_torch ran before the trace
    assert [name for _, name in traced] == ["ttnn.linear", "ttnn.add", "ttnn.to_torch"]


def test_tracing_refuses_fast_runtime_mode_and_nesting_with_tt_nns_errors():
    with ttnn.manage_config("enable_fast_runtime_mode", True), pytest.raises(ValueError) as info, trace():
        pass
    assert str(info.value).startswith("Tracing is not supported in fast runtime mode.")
    assert "enable_fast_runtime_mode = False" in str(info.value)
    with trace(), pytest.raises(ValueError, match="Tracing is already enabled"):
        tracer.enable_tracing()
    assert not tracer.is_tracing_enabled()


def test_an_exception_in_the_block_ends_the_trace_and_gives_the_hook_back(device):
    with pytest.raises(ZeroDivisionError), trace():
        torch.ones(2)
        raise ZeroDivisionError("the block fails")
    assert not tracer.is_tracing_enabled() and ttnn.get_hook() is None
    assert tracer._where(torch.zeros(2) + 1) is None  # torch calls are no longer watched


def test_another_threads_torch_calls_and_ops_are_not_in_the_graph(device):
    seen = {}

    def elsewhere():
        seen["t"] = torch.exp(torch.zeros(4))
        seen["op"] = ttnn.from_torch(torch.zeros(4))

    with trace():
        mine = torch.ones(4)
        worker = threading.Thread(target=elsewhere)
        worker.start()
        worker.join()
    assert tracer._where(seen["t"]) is None and tracer._where(seen["op"]) is None
    assert nodes(get_graph(mine)) == [("torch_input", "torch.ones")]


def test_asking_for_the_graph_of_an_untraced_tensor_names_the_fix():
    with pytest.raises(RuntimeError, match=r"was not made inside a `with ttnn.tracer.trace\(\):` block"):
        get_graph(torch.ones(2))


def test_visualize_without_graphvizs_dot_writes_the_dot_source_and_says_how_to_draw_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # a real PATH on which there is no `dot`
    with trace():
        t = torch.exp(torch.randint(0, 100, (1, 64), dtype=torch.int32))
    with pytest.warns(UserWarning, match=r"`dot` program is not on PATH, so .*graph.svg was not drawn"):
        drawing = visualize(t, file_name=tmp_path / "graph.svg")
    assert not (tmp_path / "graph.svg").exists()
    source = (tmp_path / "graph.dot").read_text()
    assert source == drawing.source
    [randint, exp] = sorted(get_graph(t))
    assert f'{randint.name}:"#0" -> {exp.name}:"$0"' in source
    assert "torch.randint" in source and "torch.exp" in source and "(1, 64)" in source


def test_visualize_draws_module_calls_as_clusters_down_to_max_depth(tmp_path):
    with trace():
        out = Block().eval()(torch.rand(2, 8), torch.rand(2, 8))
    visualize(out, file_name=tmp_path / "all.dot")
    visualize(out, max_depth=1, file_name=tmp_path / "top.dot")
    deep, top = (tmp_path / "all.dot").read_text(), (tmp_path / "top.dot").read_text()
    assert deep.count("subgraph cluster_") == 3 and "torch.nn.functional.linear" in deep
    assert "subgraph" not in top and "torch.nn.functional.linear" not in top and "Block" in top
    with pytest.raises(ValueError, match="suffix"):
        visualize(out, file_name=tmp_path / "graph.txt")


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz's dot is not installed (apt-get install graphviz)")
def test_visualize_with_graphvizs_dot_draws_an_svg(tmp_path):
    with trace():
        t = torch.exp(torch.ones(2))
    visualize(t, file_name=tmp_path / "graph.svg")
    assert "<svg" in (tmp_path / "graph.svg").read_text()


def test_a_tracer_script_run_by_ttreport_run_records_every_op_the_graph_shows(tmp_path):
    env = {**os.environ, "TTNN_CONFIG_OVERRIDES": '{"enable_fast_runtime_mode": false}'}
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "run", "--name", str(tmp_path / "r"), str(SCRIPT),
                           str(tmp_path / "graph.dot")], capture_output=True, text=True, timeout=300, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    traced = [line.split()[1:] for line in done.stdout.splitlines() if line.startswith("traced ")]
    with ttreport.open(tmp_path / "r") as report:
        ops = [[op.name, str(op.id)] for op in report.operations()]
    # The script's ops, in order: each traced node is one report row, and carries its operation_id.
    assert [name for name, _ in ops] == ["ttnn.from_torch", "ttnn.to_layout", "ttnn.exp", "ttnn.reshape",
                                         "ttnn.to_torch"]
    assert traced == ops
    source = (tmp_path / "graph.dot").read_text()
    assert "3: ttnn.exp" in source and "torch.Tensor.sum" in source and "torch.randint" in source
