"""ttnn.graph (device_sim/graph.py): TT-NN's graph capture, its trace readers, and TT-NN's own importer reading it.

The differential test loads TT-NN's pure-Python importer, ttnn/graph_report.py, out of the ttnn 0.81.1 wheel that
`make test` downloads (tests/graph_report_wheel.py). tt-metal's own graph unit tests run through peer/plugin.py
from the checkout that `make peer` uses (TT_METAL_HOME, default generated/tt-metal, at peer/TT_METAL_COMMIT).
Each skips, saying what to fetch, without its source.

    .venv/bin/python -m pytest tests/test_ttnn_graph.py -q
"""

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import graph_report_wheel  # tests/graph_report_wheel.py
import pytest
import torch

import device_sim as ttnn
from device_sim import registry
from device_sim.graph_tracer_utils import GraphTracerUtils

REPO = Path(__file__).resolve().parent.parent
TT_METAL_HOME = Path(os.environ.get("TT_METAL_HOME", REPO / "generated" / "tt-metal"))
needs_tt_metal = pytest.mark.skipif(not (TT_METAL_HOME / "tests" / "ttnn").is_dir(),
                                    reason=f"no tt-metal checkout at {TT_METAL_HOME} (peer/README.md lays one out)")


def l1(device, *shape):
    return ttnn.from_torch(torch.rand(*shape), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                           memory_config=ttnn.L1_MEMORY_CONFIG)


def nodes(trace, node_type):
    return [n for n in trace if n["node_type"] == node_type]


def test_a_capture_nests_each_op_its_programs_and_buffers_as_graph_processor_writes_them(device):
    x = l1(device, 1, 1, 32, 64)
    ttnn.graph.begin_graph_capture(ttnn.graph.RunMode.NORMAL)
    assert ttnn.graph.is_graph_capture_active()
    y = ttnn.relu(x)
    trace = ttnn.graph.end_graph_capture()
    assert not ttnn.graph.is_graph_capture_active() and registry.get_hook() is None

    assert [n["counter"] for n in trace] == list(range(len(trace)))
    assert trace[0]["node_type"] == "capture_start" and trace[-1]["node_type"] == "capture_end"
    start = trace[1]
    assert start["params"] == {"inputs": "1", "name": "ttnn.relu"} and start["stacking_level"] == 1
    (input_node,) = [trace[i] for i in start["input_tensors"]]
    assert input_node["params"]["tensor_id"] == x.tensor_id and start["counter"] in input_node["connections"]
    # the output hangs off the op's function_end, with its buffer's real address (NORMAL mode)
    end = next(n for n in trace if n["node_type"] == "function_end" and n["params"]["name"] == "ttnn.relu")
    (out,) = [trace[c] for c in end["connections"] if trace[c]["node_type"] == "tensor"]
    assert out["params"]["tensor_id"] == y.tensor_id and out["params"]["address"] == y.buffer.address
    assert out["params"]["dtype"] == "DataType::BFLOAT16" and out["params"]["layout"] == "Layout::TILE"
    (alloc,) = nodes(trace, "buffer_allocate")
    assert alloc["params"]["address"] == y.buffer.address and alloc["params"]["type"] == "L1"
    # the program is a nested function holding its CBs, at stacking level 2, and, as TT-NN's launch() creates an
    # op's outputs, the create_device_tensor of its output (level 3)
    names = ttnn.graph.extract_calltrace(trace)
    assert names == ["ttnn.relu", "UnaryDeviceOperation", "tt::tt_metal::create_device_tensor"]
    cbs = nodes(trace, "circular_buffer_allocate")
    assert cbs and all(n["stacking_level"] == 2 for n in cbs)
    assert alloc["stacking_level"] == 3
    assert end["duration_ns"] > 0 and trace[-1]["duration_ns"] >= end["duration_ns"]


def test_no_dispatch_writes_address_0_for_buffers_and_cbs(device):
    x = l1(device, 1, 1, 32, 32)
    ttnn.graph.begin_graph_capture(ttnn.graph.RunMode.NO_DISPATCH)
    y = ttnn.relu(x)
    trace = ttnn.graph.end_graph_capture()
    assert y.buffer.address > 0
    assert [n["params"]["address"] for n in nodes(trace, "buffer_allocate")] == [0]
    assert {n["params"]["address"] for n in nodes(trace, "circular_buffer_allocate")} == {"0"}


def test_peak_l1_counts_the_live_input_buffers_the_output_and_the_cbs(device):
    ttnn.graph.begin_graph_capture(ttnn.graph.RunMode.NO_DISPATCH)
    a, b = l1(device, 4, 1, 32, 32), l1(device, 1, 1, 32, 32)
    c = ttnn.add(a, b)
    trace = ttnn.graph.end_graph_capture()
    cb_bytes = sum(int(n["params"]["size"]) for n in nodes(trace, "circular_buffer_allocate"))
    assert cb_bytes > 0
    assert ttnn.graph.extract_peak_L1_memory_usage(trace) == a.buffer.size + b.buffer.size + c.buffer.size + cb_bytes
    cores = device.compute_with_storage_grid_size().x * device.compute_with_storage_grid_size().y
    usage = ttnn.graph.extract_resource_usage_per_core(trace, cores)
    # each interleaved buffer of 1 or 4 tiles puts at most one 2 KiB page on a core of the 64
    assert (usage.peak_cb, usage.peak_l1) == (cb_bytes, 3 * 2048) and usage.peak_total == cb_bytes + 3 * 2048
    assert ttnn.graph.count_intermediate_and_output_tensors(trace) == (0, 1)
    (info,) = ttnn.graph.extract_output_info(trace)
    assert (tuple(info.shape), info.size, info.type) == ((4, 1, 32, 32), c.buffer.size, ttnn.BufferType.L1)
    assert ttnn.graph.extract_peak_L1_memory_usage(nodes(trace, "capture_start")) == 0


def test_the_levelized_graph_links_tensors_to_the_ops_that_read_and_make_them(device):
    x = l1(device, 1, 1, 32, 32)
    ttnn.graph.begin_graph_capture()
    y = ttnn.relu(x)
    ttnn.add(y, x)
    trace = ttnn.graph.end_graph_capture()
    level1 = ttnn.graph.extract_levelized_graph(trace)
    by_name = {v["name"]: v for v in level1 if not v["name"].startswith("tensor")}
    relu, add = by_name["ttnn.relu"], by_name["ttnn.add"]
    # each op's level-1 input tensor nodes feed it, as in levelized_graph.cpp's JoinTest
    assert [level1[i]["name"] for i in add["in_edges"]] == [f"tensor[{y.tensor_id}]", f"tensor[{x.tensor_id}]"]
    assert all(add["counter"] in level1[i]["out_edges"] for i in add["in_edges"])
    # the output node hanging off relu's function_end has relu as its producer
    made = [v for v in level1 if v["name"] == f"tensor[{y.tensor_id}]" and v["in_edges"]]
    assert [v["in_edges"] for v in made] == [[relu["counter"]]]
    assert relu["output_shape"] == ["Shape([1, 1, 32, 32])"]
    assert {v["stacking_level"] for v in level1} == {1} and not relu["internals"]
    level2 = ttnn.graph.extract_levelized_graph(trace, max_level=2)
    relu2 = next(v for v in level2 if v["name"] == "ttnn.relu")
    assert [level2[i]["name"] for i in relu2["internals"]] == ["UnaryDeviceOperation"]


def test_a_failing_op_leaves_an_error_node_and_the_capture_usable(device):
    x = l1(device, 1, 1, 32, 64)
    ttnn.graph.begin_graph_capture()
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        ttnn.matmul(x, x)
    trace = ttnn.graph.end_graph_capture()
    (error,) = nodes(trace, "error")
    assert error["params"]["error_operation"] == "ttnn.matmul" and "cannot be multiplied" in error["params"][
        "error_message"]
    assert [n["params"]["name"] for n in nodes(trace, "function_end")] == ["ttnn.matmul"]
    with pytest.raises(RuntimeError, match="no graph capture is open"):
        ttnn.graph.end_graph_capture()


def test_the_graph_hook_hands_every_op_on_to_the_hook_installed_before_it(device):
    seen = []

    class Recorder:
        def begin(self, op, args, kwargs):
            seen.append(op.name)
            return op.name

        def end(self, token, output, exc):
            seen.append(f"end {token}")

    previous = registry.set_hook(Recorder())
    try:
        x = l1(device, 1, 1, 32, 32)
        ttnn.graph.begin_graph_capture()
        ttnn.relu(x)
        trace = ttnn.graph.end_graph_capture()
        assert type(registry.get_hook()) is Recorder
    finally:
        registry.set_hook(previous)
    assert seen[-2:] == ["ttnn.relu", "end ttnn.relu"] and ttnn.graph.extract_calltrace(trace)[0] == "ttnn.relu"


def test_a_device_operation_and_the_output_it_creates_carry_their_cpp_arguments(device):
    a = ttnn.from_torch(torch.rand(1, 1, 1, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    ttnn.graph.begin_graph_capture()
    out = ttnn.moreh_dot(a, a, dtype=ttnn.bfloat16)
    trace = ttnn.graph.end_graph_capture()
    by_name = {n["params"]["name"]: n["arguments"] for n in nodes(trace, "function_start")}
    assert by_name["ttnn.moreh_dot"] == []  # a Python-level op: TT-NN's decorators pass no C++ arguments
    dram = str(ttnn.DRAM_MEMORY_CONFIG)
    assert by_name["tt::tt_metal::create_device_tensor"] == [
        "Shape([1, 1, 1, 1])", "DataType::BFLOAT16", "Layout::TILE", str(out.buffer.device_id), dram]
    attributes, inputs = by_name["MorehDotOperation"]
    # the omitted compute kernel config resolved as every moreh op resolves it, the output's memory config
    assert attributes.startswith("operation_attributes_t(dtype=DataType::BFLOAT16,memory_config=" + dram)
    assert "compute_kernel_config=WormholeComputeKernelConfig(math_fidelity=MathFidelity::HiFi4," in attributes
    tensor = ("Tensor(storage=DeviceStorage(),tensor_spec=TensorSpec(logical_shape=Shape([1, 1, 1, 32]),tensor_layout="
              "TensorLayout(dtype=DataType::BFLOAT16,page_config=PageConfig(config=TilePageConfig(tile=Tile(tile_shape="
              f"{{32, 32}},face_shape={{16, 16}},num_faces=4))),memory_config={dram},alignment=Alignment([32, 32]))))")
    assert inputs == "{" + tensor + ", " + tensor + "}"


def test_graph_tracer_utils_parses_the_argument_texts_into_json_as_tt_nn_does(device):
    a = ttnn.from_torch(torch.rand(1, 1, 1, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    ttnn.graph.begin_graph_capture()
    ttnn.moreh_dot(a, a)
    content = GraphTracerUtils.serialize_graph(ttnn.graph.end_graph_capture())["content"]
    assert [c["operation"] for c in content] == ["MorehDotOperation", "tt::tt_metal::create_device_tensor"]
    shape, dtype, layout, _, memory = content[1]["arguments"]
    assert (shape, dtype, layout) == ({"arg0": {"Shape": [1, 1, 1, 1]}}, {"arg1": "DataType::BFLOAT16"},
                                      {"arg2": "Layout::TILE"})
    assert memory["arg4"]["MemoryConfig"] == {
        "memory_layout": "TensorMemoryLayout::INTERLEAVED", "buffer_type": "BufferType::DRAM",
        "shard_spec": "std::nullopt", "nd_shard_spec": "std::nullopt", "created_with_nd_shard_spec": 0}


def test_full_device_operation_reads_no_tensor(device):
    x = ttnn.from_torch(torch.randint(0, 9, (32, 32), dtype=torch.int32), layout=ttnn.TILE, device=device)
    ttnn.graph.begin_graph_capture()
    ttnn.moreh_full_like(x, 3)
    trace = ttnn.graph.end_graph_capture()
    (full,) = [n for n in nodes(trace, "function_start") if n["params"]["name"] == "FullDeviceOperation"]
    attributes, inputs = full["arguments"]
    assert inputs == "{}" and "fill_value=3,dtype=DataType::INT32,layout=Layout::TILE," in attributes


@graph_report_wheel.needs_wheel
def test_tt_nn_graph_report_imports_the_report_file_as_the_ops_ran(device, tmp_path):
    graph_report = graph_report_wheel.load()
    ttnn.from_torch(torch.rand(1))  # graph_report.py drops a tensor whose id is 0 (`if tid:`)
    x = ttnn.from_torch(torch.rand(1, 1, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    ttnn.graph.begin_graph_capture(ttnn.graph.RunMode.NORMAL)
    r = ttnn.relu(x)
    a = ttnn.add(x, r)
    with pytest.raises(RuntimeError):
        ttnn.matmul(x, x)
    trace = ttnn.graph.end_graph_capture_to_file(tmp_path / "report.json")

    report = json.loads((tmp_path / "report.json").read_text())
    assert report["version"] == ttnn.graph.REPORT_VERSION and report["graph"] == trace
    assert (tmp_path / "report.python_io.json").exists()
    db = graph_report.import_report(tmp_path / "report.json", tmp_path / "db")
    with sqlite3.connect(db) as con:
        q = con.execute
        assert [r_[0] for r_ in q("SELECT name FROM operations ORDER BY operation_id")] == [
            "ttnn.relu", "ttnn.add", "ttnn.matmul"]
        assert q("SELECT input_index, tensor_id FROM input_tensors WHERE operation_id = 2").fetchall() == [
            (0, x.tensor_id), (1, r.tensor_id)]
        assert q("SELECT operation_id, tensor_id FROM output_tensors ORDER BY operation_id").fetchall() == [
            (1, r.tensor_id), (2, a.tensor_id)]
        assert q("SELECT shape, dtype, layout, address, device_id FROM tensors WHERE tensor_id = ?",
                 (a.tensor_id,)).fetchall() == [("Shape([1, 1, 32, 64])", "DataType.BFLOAT16", "Layout.TILE",
                                                  a.buffer.address, 0)]
        (error,) = q("SELECT operation_name, error_type, error_message FROM errors").fetchall()
        assert error[:2] == ("ttnn.matmul", "RuntimeError") and "cannot be multiplied" in error[2]
        facts = device.facts()
        assert q("SELECT l1_num_banks, worker_l1_size FROM devices").fetchall() == [
            (facts["l1_num_banks"], facts["worker_l1_size"])]
        assert (2, a.buffer.address) in q("SELECT operation_id, address FROM buffers").fetchall()


# tt-metal's own graph tests that device_sim passes unchanged (the rest of the files: peer/README.md says why
# it fails: a ResNet-50 demo run)
PEER_GRAPH_TESTS = [
    "unit_tests/base_functionality/test_graph_trace_utils.py",
    *(f"unit_tests/base_functionality/test_graph_report.py::{c}" for c in (
        "TestGraphCaptureToFile", "TestDurationExtraction", "TestGraphReportImport", "TestReportVersion",
        "TestRecordPythonOperation", "TestSafeArgStr")),
    *(f"unit_tests/base_functionality/test_graph_capture.py::{t}" for t in (
        "test_graph_capture", "test_graph_capture_topk", "test_graph_capture_without_memory_config",
        "test_graph_capture_without_dtype", "test_graph_capture_without_memory_config_json_output",
        "test_graph_capture_without_dtype_json_output", "test_extract_levelized_graph",
        "test_full_tensor_info_captured", "test_duration_captured", "test_detailed_buffer_tracing_control",
        "test_program_cache_invalidation_across_dispatch_modes", "test_graph_capture_inactive_with_open_device",
        "test_graph_capture_with_all_parameters", "test_graph_capture_with_all_parameters_json_output")),
]


@needs_tt_metal
def test_tt_metal_graph_unit_tests_pass_unchanged_against_device_sim(tmp_path):
    out = tmp_path / "peer.json"
    cmd = [sys.executable, "-m", "pytest", "-p", "peer.plugin", "-p", "no:ttreport", "-p", "no:cacheprovider",
           "--noconftest", "--rootdir", str(TT_METAL_HOME), "-c", os.devnull, "--import-mode=importlib", "-q",
           f"--peer-json={out}", *(f"tests/ttnn/{t}" for t in PEER_GRAPH_TESTS)]
    env = {**os.environ, "TT_METAL_HOME": str(TT_METAL_HOME), "PYTHONPATH": str(REPO)}
    done = subprocess.run(cmd, cwd=TT_METAL_HOME, env=env, capture_output=True, text=True, timeout=300)
    results = json.loads(out.read_text())["results"]
    failed = [r["nodeid"] for r in results if r["outcome"] != "passed"]
    # 59: the cases those names hold at peer/TT_METAL_COMMIT (a run that collects fewer ran less than it says)
    assert len(results) == 59 and not failed, done.stdout[-3000:]
