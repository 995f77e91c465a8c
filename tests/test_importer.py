"""`ttreport import` (ttreport/importer.py): a TT-NN graph capture's JSON made into a ttreport report folder.

A model runs on device_sim under ttreport.capture and ttnn.graph's capture at once (the graph's hook hands every
op on to ttreport's), so the imported report and the captured one describe the same ops, tensors and buffers.
The differential tests load TT-NN's own importer, ttnn/graph_report.py, out of the ttnn 0.81.1 wheel that `make test`
downloads (tests/graph_report_wheel.py); without the wheel they skip, naming the command that fetches it.

    .venv/bin/python -m pytest tests/test_importer.py -q
"""

import json
import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import graph_report_wheel  # tests/graph_report_wheel.py
import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport import db

REPO = Path(__file__).resolve().parent.parent


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ttreport.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


def model(device):
    """A small model: a linear layer, an activation, a residual add, and a matmul whose shapes do not fit."""
    x = ttnn.from_torch(torch.rand(1, 1, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    w = ttnn.from_torch(torch.rand(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                        memory_config=ttnn.L1_MEMORY_CONFIG)
    return x, w


def run(x, w) -> list:
    """The model's outputs, returned: a tensor freed outside every op is an op of its own in TT-NN's import
    (`ttnn::deallocate`), and none in ttreport's capture."""
    h = ttnn.linear(x, w)
    r = ttnn.relu(h)
    a = ttnn.add(x, r)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        ttnn.matmul(x, x)
    return [h, r, a]


@pytest.fixture
def both(device, tmp_path):
    """The model captured by ttreport and by ttnn.graph in the same run; the graph's JSON imported with the CLI."""
    x, w = model(device)
    with ttreport.capture(tmp_path / "captured"):
        ttnn.graph.begin_graph_capture(ttnn.graph.RunMode.NORMAL)
        try:
            outputs = run(x, w)
        finally:
            ttnn.graph.end_graph_capture_to_file(tmp_path / "report.json")
    del outputs
    done = cli("import", tmp_path / "report.json", tmp_path / "imported")
    assert done.returncode == 0, done.stderr
    assert "imported 4 operations" in done.stdout
    return tmp_path / "captured" / "db.sqlite", tmp_path / "imported" / "db.sqlite"


def rows(path, sql, *params):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        return con.execute(sql, params).fetchall()


TENSORS = """SELECT o.operation_id, t.shape, t.dtype, t.layout, t.address FROM operations o
             JOIN {io}_tensors io ON io.operation_id = o.operation_id JOIN tensors t ON t.tensor_id = io.tensor_id
             WHERE o.depth = 0 ORDER BY o.operation_id, io.{io}_index"""


def test_an_imported_capture_has_the_ops_tensors_buffers_and_error_ttreport_captures(both):
    captured, imported = both
    assert db.is_current(imported)
    names = "SELECT name FROM operations WHERE depth = 0 ORDER BY operation_id"
    assert rows(imported, names) == rows(captured, names) == [
        ("ttnn.linear",), ("ttnn.relu",), ("ttnn.add",), ("ttnn.matmul",)]
    for io in ("input", "output"):  # a tensor an op reads twice (matmul(x, x)) is one input in TT-NN's import
        assert rows(imported, TENSORS.format(io=io)) == list(dict.fromkeys(rows(captured, TENSORS.format(io=io))))
    # ttreport lists every live buffer; the graph only those allocated inside the capture (x and w are not)
    buffers = "SELECT operation_id, device_id, address, max_size_per_bank, buffer_type FROM buffers"
    from_graph, from_capture = set(rows(imported, buffers)), set(rows(captured, buffers))
    assert from_graph and from_graph <= from_capture
    ttreport_ids = dict(rows(captured, "SELECT operation_id, name FROM operations WHERE depth = 0"))
    assert {op for op, *_ in from_graph} <= set(ttreport_ids)
    error = "SELECT operation_id, operation_name, error_type, error_message FROM errors"
    assert rows(imported, error) == [row for row in rows(captured, error)]
    assert rows(imported, "SELECT status FROM operations WHERE operation_id = 4") == [("error",)]
    devices = "SELECT * FROM devices"
    assert rows(imported, devices) == rows(captured, devices)


def test_summary_ops_and_html_read_an_imported_report(both, tmp_path):
    _, imported = both
    summary = cli("summary", imported.parent)
    assert summary.returncode == 0, summary.stderr
    assert "ttnn.linear" in summary.stdout and "ttnn.matmul: RuntimeError" in summary.stdout
    ops = cli("ops", imported.parent)
    assert ops.returncode == 0, ops.stderr
    assert [line.split()[1] for line in ops.stdout.splitlines()[2:]] == [
        "ttnn.linear", "ttnn.relu", "ttnn.add", "ttnn.matmul"]
    html = cli("html", imported.parent, "-o", tmp_path / "imported.html")
    assert html.returncode == 0, html.stderr


def test_an_existing_dest_is_refused_unless_overwrite_replaces_the_report(both):
    _, imported = both
    report_json = imported.parent.parent / "report.json"
    again = cli("import", report_json, imported.parent)
    assert again.returncode == 2 and "exists already" in again.stderr and len(again.stderr.splitlines()) == 1
    replaced = cli("import", report_json, imported.parent, "--overwrite")
    assert replaced.returncode == 0, replaced.stderr
    not_a_report = imported.parent.parent / "notes"
    not_a_report.mkdir()
    (not_a_report / "mine.txt").write_text("keep")
    refused = cli("import", report_json, not_a_report, "--overwrite")
    assert refused.returncode == 2 and "not a report folder" in refused.stderr
    assert (not_a_report / "mine.txt").read_text() == "keep"


GOOD_NODE = {"counter": 0, "node_type": "capture_start", "params": {}, "arguments": [], "connections": [],
             "input_tensors": [], "stacking_level": 0}


def report_with(**fields):
    return {"version": 1, "graph": [GOOD_NODE], "devices": [], "metadata": {}, **fields}


def tensor_node(**params):
    return {**GOOD_NODE, "node_type": "tensor", "params": {"tensor_id": 1, "shape": "Shape([1])", **params}}


BAD_REPORTS = {
    "not JSON": (b"{\"version\": 1, \"graph\": [", "is not JSON"),
    "not UTF-8": (b"\xff\xfe{}", "is not JSON"),
    "NaN": (b'{"version": 1, "graph": [], "metadata": {"x": NaN}}', "holds NaN"),
    "a list at the top": ([1, 2], "the file is an object"),
    "another version": (report_with(version=2), "graph report version 2"),
    "graph an object": (report_with(graph={"0": GOOD_NODE}), '"graph" is a list'),
    "a node a string": (report_with(graph=["capture_start"]), "graph[0] is an object"),
    "params a list": (report_with(graph=[{**GOOD_NODE, "params": [1]}]), "graph[0].params is an object"),
    "a connection negative": (report_with(graph=[{**GOOD_NODE, "connections": [-1]}]),
                              "graph[0].connections[0] is an integer"),
    "a tensor id a word": (report_with(graph=[tensor_node(tensor_id="abc")]), "graph[0].params.tensor_id"),
    "an address past 64 bits": (report_with(graph=[tensor_node(address=1 << 70)]), "graph[0].params.address"),
    "a huge shape string": (report_with(graph=[tensor_node(shape="[" * (1 << 20 + 1))]), "graph[0].params.shape"),
    "nesting a million deep": (b"[" * 1_000_000, "is not JSON"),
    "a buffer key a path": (report_with(per_operation_buffers={"../../etc/passwd": []}),
                            "a per_operation_buffers key is an integer"),
    "a device id a float": (report_with(devices=[{"device_id": 0.5}]), "devices[0].device_id"),
    # JSON's escape of half a UTF-16 pair: a str Python reads and SQLite cannot store (it failed mid-import)
    "an op name a lone surrogate": (report_with(graph=[{**GOOD_NODE, "node_type": "function_start",
                                                        "params": {"name": "\ud800"}}]), "graph[0].params.name"),
}


@pytest.mark.parametrize("case", BAD_REPORTS)
def test_a_bad_graph_report_is_one_line_exit_2_and_writes_nothing(case, tmp_path):
    content, expected = BAD_REPORTS[case]
    path = tmp_path / "report.json"
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    done = cli("import", path, tmp_path / "out")
    assert done.returncode == 2, done.stderr
    assert expected in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()


def ops(n: int) -> list[dict]:
    """A graph of `n` top-level ops, each a function_start and its function_end."""
    return [{**GOOD_NODE, "counter": i, "node_type": kind, "params": {"name": "ttnn.add"}}
            for i, kind in enumerate(["function_start", "function_end"] * n)]


@pytest.mark.parametrize("dest", ["new", "empty", "a report"])
def test_an_import_that_fails_while_writing_leaves_no_report_and_says_so_in_one_line(tmp_path, dest):
    # A real write failure: the file size limit (RLIMIT_FSIZE) stops SQLite mid-import, as a full disk does. The
    # empty database is ~280 KB and these 2,000 ops ~1.7 MB: the limit falls between, inside the rows' transaction.
    path, out = tmp_path / "report.json", tmp_path / "out"
    if dest == "empty":
        out.mkdir()
    elif dest == "a report":  # one op, overwritten by the import that fails: it stays as it was
        path.write_text(json.dumps(report_with(graph=ops(1))))
        assert cli("import", path, out).returncode == 0
    path.write_text(json.dumps(report_with(graph=ops(2000))))
    limit = 512 << 10
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "import", path, out, "--overwrite"],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    assert done.returncode == 2, done.stderr
    assert f"cannot write the report into {out}" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr
    # nothing of the import: the folder it made is gone, an empty one stays empty, a report stays whole
    if dest == "a report":
        assert sorted(p.name for p in out.iterdir()) == ["db.sqlite"]
        assert rows(out / "db.sqlite", "SELECT count(*) FROM operations") == [(1,)]
    else:
        assert (sorted(out.iterdir()) == []) if dest == "empty" else not out.exists()
    assert cli("import", path, out, "--overwrite").returncode == 0  # the same import with room for it
    assert rows(out / "db.sqlite", "SELECT count(*) FROM operations") == [(2000,)]


def test_a_graph_file_whose_name_is_not_utf8_imports_with_its_name_escaped(tmp_path):
    path = tmp_path / os.fsdecode(b"report-\xff.json")
    path.write_text(json.dumps(report_with(graph=ops(1))))
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "import", path, tmp_path / "out"], capture_output=True,
                          timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    [(source,)] = rows(tmp_path / "out" / "db.sqlite", "SELECT value FROM report_metadata WHERE key = 'imported_from'")
    assert source.endswith("report-\\xff.json")


def test_the_yaml_a_report_carries_is_written_only_inside_dest_under_its_fixed_name(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report_with(cluster_descriptor="chips: {0: [0, 0, 0, 0]}\n",
                                           mesh_coordinate_mapping="chips: {}\n")))
    done = cli("import", path, tmp_path / "a" / ".." / "out")
    assert done.returncode == 2 and "the folder" in done.stderr  # a/ does not exist: no tree is made
    done = cli("import", path, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "report.json"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")) == [
        "cluster_descriptor.yaml", "db.sqlite", "physical_chip_mesh_coordinate_mapping_1_of_1.yaml"]
    assert (tmp_path / "out" / "cluster_descriptor.yaml").read_text() == "chips: {0: [0, 0, 0, 0]}\n"


@graph_report_wheel.needs_wheel
def test_tt_nn_graph_report_and_ttreport_import_agree_on_ops_tensors_and_buffers(device, tmp_path):
    graph_report = graph_report_wheel.load()
    ttnn.from_torch(torch.rand(1))  # graph_report.py drops a tensor whose id is 0 (`if tid:`); ttreport keeps it
    x, w = model(device)
    ttnn.graph.begin_graph_capture(ttnn.graph.RunMode.NORMAL)
    try:
        run(x, w)  # its outputs freed outside any op: ttnn::deallocate ops
        ttnn.deallocate(x)
    finally:
        ttnn.graph.end_graph_capture_to_file(tmp_path / "report.json")
    agree(graph_report, tmp_path, "with python_io")
    # without the .python_io.json: inputs and outputs from the graph's tensor nodes, lifted from nested ops
    (tmp_path / "report.python_io.json").unlink()
    agree(graph_report, tmp_path, "graph only")


def agree(graph_report, tmp_path, name):
    theirs = graph_report.import_report(tmp_path / "report.json", tmp_path / f"tt-nn {name}")
    done = cli("import", tmp_path / "report.json", tmp_path / name)
    assert done.returncode == 0, done.stderr
    ours = tmp_path / name / "db.sqlite"
    for sql in ("SELECT operation_id, name, duration FROM operations ORDER BY operation_id",
                "SELECT tensor_id, shape, dtype, layout, memory_config, device_id, address, buffer_type FROM tensors "
                "ORDER BY tensor_id",
                "SELECT * FROM (SELECT operation_id, input_index, tensor_id FROM input_tensors) ORDER BY 1, 2",
                "SELECT * FROM (SELECT operation_id, output_index, tensor_id FROM output_tensors) ORDER BY 1, 2",
                "SELECT operation_id, device_id, address, max_size_per_bank, buffer_type, buffer_layout FROM buffers "
                "ORDER BY 1, 3",
                "SELECT operation_id, name, value FROM operation_arguments ORDER BY 1, 2",
                "SELECT device_id, l1_num_banks, worker_l1_size FROM devices",
                "SELECT operation_id, unique_id, node_operation_id, name FROM nodes ORDER BY 2",
                "SELECT operation_id, source_unique_id, sink_unique_id, source_output_index, sink_input_index, key "
                "FROM edges ORDER BY 1, 2, 4"):
        assert rows(ours, sql) == rows(theirs, sql), sql
    subgraphs = "SELECT operation_id, captured_graph FROM captured_graph ORDER BY 1"
    assert [(op, json.loads(g)) for op, g in rows(ours, subgraphs)] == [
        (op, json.loads(g)) for op, g in rows(theirs, subgraphs)]
    # errors: the same error, named by the op it happened in (TT-NN's row names operation 0)
    error = "SELECT operation_name, error_type, error_message FROM errors"
    assert rows(ours, error) == rows(theirs, error)


def test_an_imported_report_opens_in_ttnn_visualizer_with_its_ops_tensors_and_buffers(visualizer, both):
    _, imported = both
    instance = visualizer.open(imported.parent)
    ops = visualizer.get("/api/operations", instance)
    assert [o["name"] for o in ops] == ["ttnn.linear", "ttnn.relu", "ttnn.add", "ttnn.matmul"]
    made = dict(rows(imported, "SELECT operation_id, address FROM output_tensors JOIN tensors USING (tensor_id)"))
    for op in ops[:3]:
        (out,) = op["outputs"]
        assert out["address"] == made[op["id"]]
    detail = visualizer.get(f"/api/operations/{ops[2]['id']}", instance)
    assert {(b["address"], b["device_id"]) for b in detail["buffers"]} == set(
        rows(imported, "SELECT address, device_id FROM buffers WHERE operation_id = ?", ops[2]["id"]))


@graph_report_wheel.needs_wheel
def test_tt_nn_graph_report_and_ttreport_import_agree_on_a_mesh_run(tmp_path):
    graph_report = graph_report_wheel.load()
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    try:
        x = ttnn.from_torch(torch.randn(1, 1, 64, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                            mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
        ttnn.graph.begin_graph_capture()
        try:
            ttnn.all_gather(ttnn.relu(x), dim=3)
        finally:
            ttnn.graph.end_graph_capture_to_file(tmp_path / "report.json")
    finally:
        ttnn.close_mesh_device(mesh)
    agree(graph_report, tmp_path, "mesh")
    ours = tmp_path / "mesh" / "db.sqlite"
    assert rows(ours, "SELECT count(*) FROM devices") == [(2,)]
    assert rows(ours, "SELECT count(DISTINCT tensor_id) FROM device_tensors") == [(3,)]
    same = "SELECT tensor_id, device_id, address FROM device_tensors ORDER BY 1, 2"
    assert rows(ours, same) == rows(tmp_path / "tt-nn mesh" / "db.sqlite", same)
