"""ttnn-visualizer links a capture's memory report with its performance report (the real server, tests/visualizer.py).

A capture's folder holds the memory report (db.sqlite) and, written at close, the performance report
(ops_perf_results.csv, profile_log_device.csv); the folder is opened as both, as a user opening it with
`--profiler-path` and `--performance-path` would. The visualizer links the two when the performance rows,
in order, carry the names of the device operations in each op's captured graph (its frontend's
`matchDeviceOperationOrdersToPerf`, ported to ttnn_visualizer.agent.linking, which says so): then an op's
page shows its device operations' device times. The graph tables it reads are TT-NN's per-op ones, which a
report has with Config(device_graphs=True) (TT-NN's enable_graph_report), as below.
"""

import json
import subprocess
import sys

import pytest
import torch

import device_sim as ttnn
import ttreport


def captured(path, device, model):
    with ttreport.capture(path, config=ttreport.Config(device_graphs=True)) as cap:
        model(device)
    with ttreport.open(cap.path) as r:
        graphs = r.execute("SELECT o.operation_id, o.name, g.captured_graph, p.ideal_ns FROM captured_graph g "
                           "JOIN operations o USING (operation_id) LEFT JOIN device_perf p USING (operation_id) "
                           "ORDER BY o.operation_id").fetchall()
    # (op id, op name, device operation, chip, the op's estimate), from the report's own graph table
    rows = [(op_id, name, n["params"]["name"], int(n["params"]["device_id"]), ns) for op_id, name, text, ns in graphs
            for n in json.loads(text) if n["node_type"] == "function_start" and "device_id" in n["params"]]
    return cap.path, rows


def one_chip(device):
    x = ttnn.from_torch(torch.randn(64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    w = ttnn.from_torch(torch.randn(128, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    y = ttnn.relu(ttnn.matmul(x, w))
    ttnn.to_torch(ttnn.reshape(y, (1, 64, 64)))  # host-only ops between device ones: no rows


@pytest.fixture
def run(tmp_path, device, visualizer):
    path, launched = captured(tmp_path / "perf-run", device, one_chip)
    return visualizer, visualizer.open(path, performance=True), path, launched


def link(path):
    """ttnn-visualizer's own link of the folder as memory and performance report (its port of the frontend's)."""
    from ttnn_visualizer.agent import linking
    from ttnn_visualizer.agent.handles import ReportRegistry

    registry = ReportRegistry()
    return linking.operation_link(registry, registry.add(str(path), str(path)))


def test_the_perf_results_give_each_device_operation_its_estimated_device_time(run):
    vis, instance, _, launched = run
    assert [(name, program) for _, name, program, _, _ in launched] == [("ttnn.matmul", "MatmulDeviceOperation"),
                                                                        ("ttnn.relu", "UnaryDeviceOperation")]
    got = vis.get("/api/performance/perf-results", instance)
    assert [(o["OP_CODE"], o["GLOBAL_CALL_COUNT"], o["DEVICE_ID"], o["DEVICE_KERNEL_DURATION_[ns]"]) for o in got] == [
        (program, k * 1024 + chip, chip, ns) for k, (_, _, program, chip, ns) in enumerate(launched, 1)]
    assert all(ns > 0 for *_, ns in launched)


def test_the_memory_and_performance_reports_link_and_op_pages_show_device_times(run):
    vis, instance, path, launched = run
    from ttnn_visualizer.agent import linking

    # What the frontend pairs: each op's device operations (the function_starts of /api/operations' graphs that
    # name no '::', as its isDeviceOperation), against the rows of its link view (host ops hidden, chips merged)
    device_ops = [n["params"]["name"] for op in vis.get("/api/operations", instance)
                  for n in op["device_operations"] or () if n["node_type"] == "function_start"
                  and linking.is_device_operation(n["params"]["name"])]
    report = vis.get("/api/performance/perf-results/report", instance)["report"]
    assert device_ops == [r["raw_op_code"] for r in report] == [program for _, _, program, _, _ in launched]
    linked = link(path)
    assert linked.status is linking.LinkStatus.LINKED and linked.matched_on is linking.MatchedOn.FUNCTION_START
    # an op's page: its device operations' device times, in µs, the estimates
    shown = {op: [(r["raw_op_code"], float(r["device_time"])) for r in rows]
             for op, rows in linked.perf_rows_by_operation.items()}
    assert shown == {op_id: [(program, pytest.approx(ns / 1000))] for op_id, _, program, _, ns in launched}


def test_the_performance_report_lists_the_device_operations_with_their_device_times(run):
    # the Performance tab's table: device_time in us, each row's share of the total
    vis, instance, _, launched = run
    report = vis.get("/api/performance/perf-results/report", instance)["report"]
    got = [(r["raw_op_code"], float(r["device_time"])) for r in report]
    assert got == [(program, pytest.approx(ns / 1000)) for _, _, program, _, ns in launched]
    total = sum(ns for *_, ns in launched)
    assert [float(o["total_percent"]) for o in report] == [pytest.approx(100 * ns / total) for *_, ns in launched]


def test_the_device_log_has_a_zone_per_row_as_long_as_its_estimate(run):
    vis, instance, _, launched = run
    log = vis.get("/api/performance/device-log", instance)
    starts = {e["run_host_ID"]: e["time[cycles_since_reset]"] for e in log if e["type"] == "ZONE_START"}
    ends = {e["run_host_ID"]: e["time[cycles_since_reset]"] for e in log if e["type"] == "ZONE_END"}
    calls = [k * 1024 for k in range(1, len(launched) + 1)]
    assert [ends[c] - starts[c] for c in calls] == [ns for *_, ns in launched]


def test_the_report_version_is_tt_nns_so_the_visualizer_does_not_warn(run):
    # ttnn-visualizer 0.108 reads report_metadata.schema_version as semver and warns "Incompatible report version"
    # past major 3; TT-NN's graph_report.py writes its DATABASE_SCHEMA_VERSION, 2. ttreport's revision: its own key.
    from ttreport import db

    vis, instance, _, _ = run
    meta = vis.get("/api/report-metadata", instance)
    assert meta["schema_version"] == "2" and meta["ttreport_schema_revision"] == db.head_revision()


def t3000(mesh):
    """A 2x4 run of mesh ops, each launching one device operation on every chip."""
    x = ttnn.from_torch(torch.randn(1, 1, 64, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                        memory_config=ttnn.L1, mesh_mapper=ttnn.ShardTensor2dMesh(mesh, mesh_shape=(2, 4), dims=(2, 3)))
    y = ttnn.relu(x)
    ttnn.softmax(ttnn.all_gather(y, dim=3, cluster_axis=1), dim=-1)


def test_a_2x4_mesh_run_has_a_row_per_chip_and_links(tmp_path, visualizer):
    from ttnn_visualizer.agent import linking

    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(2, 4))
    try:
        path, launched = captured(tmp_path / "t3k", mesh, t3000)
    finally:
        ttnn.close_mesh_device(mesh)
    programs = [program for _, _, program, chip, _ in launched if chip == 0]
    assert programs == ["UnaryDeviceOperation", "AllGatherDeviceOperation", "SoftmaxDeviceOperation"]
    instance = visualizer.open(path, performance=True)
    got = visualizer.get("/api/performance/perf-results", instance)
    # one row per chip, each device operation's rows numbered as TT-NN numbers them (its launch times 1,024 + chip)
    assert [(o["OP_CODE"], o["DEVICE_ID"], o["GLOBAL_CALL_COUNT"]) for o in got] == [
        (program, chip, k * 1024 + chip) for k, program in enumerate(programs, 1) for chip in range(8)]
    assert all(o["DEVICE_KERNEL_DURATION_[ns]"] > 0 for o in got)
    # the visualizer merges the chips' rows and pairs them with each op's device operations, recorded once per chip
    report = visualizer.get("/api/performance/perf-results/report", instance)["report"]
    assert [r["raw_op_code"] for r in report] == programs
    linked = link(path)
    assert linked.status is linking.LinkStatus.LINKED
    assert linked.matched_on is linking.MatchedOn.FUNCTION_START_COLLAPSED
    assert [[r["raw_op_code"] for r in rows] for rows in linked.perf_rows_by_operation.values()] == [[p] for p in
                                                                                                     programs]
    assert all(float(r["device_time"]) > 0 for rows in linked.perf_rows_by_operation.values() for r in rows)


def test_a_default_report_links_once_upgrade_fills_its_graph_tables(tmp_path, device, visualizer):
    # the default capture keeps each distinct graph once (device_graphs="distinct"), so TT-NN's per-op captured_graph
    # the visualizer reads is empty and nothing links; `ttreport upgrade --device-graphs` spreads the graphs into it
    from ttnn_visualizer.agent import linking

    with ttreport.capture(tmp_path / "default") as cap:
        one_chip(device)
    assert link(cap.path).status is not linking.LinkStatus.LINKED
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "upgrade", str(cap.path), "--device-graphs"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "filled TT-NN's captured_graph, nodes and edges of 2 ops" in done.stdout
    linked = link(cap.path)
    assert linked.status is linking.LinkStatus.LINKED
    assert [[r["raw_op_code"] for r in rows] for rows in linked.perf_rows_by_operation.values()] == [
        ["MatmulDeviceOperation"], ["UnaryDeviceOperation"]]
    assert all(float(r["device_time"]) > 0 for rows in linked.perf_rows_by_operation.values() for r in rows)
