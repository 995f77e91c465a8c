"""ttnn-visualizer's Performance view opens on a device_sim run (the real server, tests/visualizer.py).

A capture's folder holds the memory report (db.sqlite) and, written at close, the performance report
(ops_perf_results.csv, profile_log_device.csv); the folder is opened as both, as a user opening it with
`--profiler-path` and `--performance-path` would, and the Performance view's endpoints give back each op
with the device time the performance model estimated for it.
"""

import pytest
import torch

import device_sim as ttnn
import ttreport


@pytest.fixture
def run(tmp_path, device, visualizer):
    with ttreport.capture(tmp_path / "perf-run") as cap:
        x = ttnn.from_torch(torch.randn(64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
        w = ttnn.from_torch(torch.randn(128, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
        ttnn.relu(ttnn.matmul(x, w))
    with ttreport.open(cap.path) as r:
        estimated = r.execute("SELECT o.operation_id, o.name, p.ideal_ns FROM device_perf p "
                              "JOIN operations o USING (operation_id) ORDER BY operation_id").fetchall()
    return visualizer, visualizer.open(cap.path, performance=True), estimated


def test_the_perf_results_give_each_op_its_estimated_device_time(run):
    vis, instance, estimated = run
    got = vis.get("/api/performance/perf-results", instance)
    ops = [(o["GLOBAL_CALL_COUNT"], f"ttnn.{o['OP_CODE']}", o["DEVICE_KERNEL_DURATION_[ns]"]) for o in got]
    assert ops == estimated
    assert [o["PM_IDEAL_[ns]"] for o in got] == [ns for _, _, ns in estimated]
    assert {"ttnn.matmul", "ttnn.relu"} <= {name for _, name, _ in estimated}
    assert all(ns > 0 for _, _, ns in estimated)


def test_the_performance_report_lists_the_ops_with_their_device_times(run):
    # the Performance tab's table: device_time in us, each op's share of the total
    vis, instance, estimated = run
    report = vis.get("/api/performance/perf-results/report", instance)["report"]
    got = [(int(o["global_call_count"]), f"ttnn.{o['op_code']}", float(o["device_time"])) for o in report]
    assert got == [(op_id, name, pytest.approx(ns / 1000)) for op_id, name, ns in estimated]
    total = sum(ns for _, _, ns in estimated)
    assert [float(o["total_percent"]) for o in report] == [pytest.approx(100 * ns / total) for _, _, ns in estimated]


def test_the_device_log_has_a_zone_per_op_as_long_as_its_estimate(run):
    vis, instance, estimated = run
    log = vis.get("/api/performance/device-log", instance)
    starts = {e["run_host_ID"]: e["time[cycles_since_reset]"] for e in log if e["type"] == "ZONE_START"}
    ends = {e["run_host_ID"]: e["time[cycles_since_reset]"] for e in log if e["type"] == "ZONE_END"}
    assert [(op_id, ends[op_id] - starts[op_id]) for op_id, _, _ in estimated] == [(i, ns) for i, _, ns in estimated]


def test_the_report_version_is_tt_nns_so_the_visualizer_does_not_warn(run):
    # ttnn-visualizer 0.108 reads report_metadata.schema_version as semver and warns "Incompatible report version"
    # past major 3; TT-NN's graph_report.py writes its DATABASE_SCHEMA_VERSION, 2. ttreport's revision: its own key.
    from ttreport import db

    vis, instance, _ = run
    meta = vis.get("/api/report-metadata", instance)
    assert meta["schema_version"] == "2" and meta["ttreport_schema_revision"] == db.head_revision()
