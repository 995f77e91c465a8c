"""`Report.export_chrome_trace` / `ttreport trace`: a Chrome trace-event / Perfetto JSON file of a run,
checked against the report it came from, and opened in a real offline viewer (speedscope in Chromium)."""

import gzip
import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import browser
import pytest

import device_sim as ttnn
import ttreport
from ttreport import Config, db
from ttreport import demo as demo_model
from ttreport.export.memory import IN_BUFFERS
from ttreport.read.report import ReportError

L1 = f"L1 {IN_BUFFERS}"  # the counter series of the L1 buffers' own sizes


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo model under a golden-mode capture (its strict-mode error included), then a composite
    op (exp then add, as TT-NN composes ops) whose two ops are nested in it; and the run's trace."""
    root = tmp_path_factory.mktemp("trace")
    composite = ttnn.register_op("test_export.exp_plus_one")(lambda x: ttnn.add(ttnn.exp(x), 1.0))
    try:
        with ttreport.capture(root / "demo", config=Config(comparison="local")) as cap:
            logits = demo_model.run_model()
            dev = ttnn.open_device(0)
            try:
                composite(composite(ttnn.from_torch(logits, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)))
            finally:
                ttnn.close_device(dev)
    finally:
        del ttnn.OPS["test_export.exp_plus_one"]
    with ttreport.open(cap.path) as r:
        path = r.export_chrome_trace(root / "demo.json")
    return cap.path, path, json.loads(path.read_text())["traceEvents"]


def _ops(report):
    return {o.id: o for o in report.iter_operations()}


def test_every_op_is_a_slice_on_its_thread_at_its_recorded_time(demo):
    folder, _, events = demo
    slices = {e["args"]["operation_id"]: e for e in events if e["ph"] == "X" and e["cat"] == "op"}
    with ttreport.open(folder) as r:
        ops = _ops(r)
    assert set(slices) == set(ops)
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    for op_id, op in ops.items():
        s = slices[op_id]
        assert s["name"] == op.name and names[s["tid"]] == op.thread
        assert s["ts"] == pytest.approx(op.start_ns / 1000)
        assert s["dur"] == pytest.approx((op.end_ns - op.start_ns) / 1000)


def test_each_chip_has_a_device_track_of_the_models_estimates_back_to_back(demo):
    folder, _, events = demo
    device = [e for e in events if e["ph"] == "X" and e["cat"] == "device"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    with ttreport.open(folder) as r:
        estimated = dict(r.execute("SELECT p.operation_id, p.ideal_ns FROM device_perf p JOIN operations o "
                                   "USING (operation_id) WHERE o.depth = 0"))
        first_start = r.operations(limit=1)[0].start_ns
    assert [e["args"]["operation_id"] for e in device] == sorted(estimated)  # every top-level estimate, in order
    assert {names[e["tid"]] for e in device} == {"device 0 (estimated)"}
    assert device[0]["ts"] == pytest.approx(first_start / 1000)
    for before, e in zip(device, device[1:]):  # back to back: the model estimates kernels, not the gaps
        assert e["ts"] == pytest.approx(before["ts"] + before["dur"])
    for e in device:
        assert e["dur"] == pytest.approx(estimated[e["args"]["operation_id"]] / 1000)
        assert e["args"]["device_ns"] == estimated[e["args"]["operation_id"]]


def test_nested_ops_lie_inside_their_parent_on_the_same_thread(demo):
    _, _, events = demo
    slices = {e["args"]["operation_id"]: e for e in events if e["ph"] == "X" and e["cat"] == "op"}
    nested = [s for s in slices.values() if "parent_operation_id" in s["args"]]
    assert len(nested) >= 4  # each composite's exp and add
    for s in nested:
        p = slices[s["args"]["parent_operation_id"]]
        assert p["tid"] == s["tid"] and p["ts"] <= s["ts"] and s["ts"] + s["dur"] <= p["ts"] + p["dur"]


def test_slice_args_carry_shapes_dtypes_memory_configs_and_the_golden_pcc(demo):
    folder, _, events = demo
    with ttreport.open(folder) as r:
        matmul = r.operations(name="ttnn.matmul", limit=1)[0]
        checks = r.sql("SELECT tensor_id, pcc FROM tensor_comparisons WHERE operation_id = ?", (matmul.id,))
    args = next(e["args"] for e in events
                if e["ph"] == "X" and e["cat"] == "op" and e["args"]["operation_id"] == matmul.id)
    assert [t["tensor_id"] for t in args["inputs"]] == [t.id for t in matmul.input_tensors]
    out = args["outputs"][0]
    assert out["shape"] == matmul.output_tensors[0].shape_text and out["dtype"].startswith("DataType.")
    assert out["memory_config"].startswith("MemoryConfig(memory_layout=TensorMemoryLayout::")
    assert checks and args["golden_pcc"] == pytest.approx(min(c["pcc"] for c in checks))
    assert args["source"].startswith('File "') and "demo.py" in args["source"]


def test_an_op_that_raised_is_red_with_an_error_marker(demo):
    folder, _, events = demo
    with ttreport.open(folder) as r:
        err = r.errors()[0]
    s = next(e for e in events if e["ph"] == "X" and e["cat"] == "op" and e["args"]["operation_id"] == err.operation_id)
    assert s["cname"] == "terrible" and s["args"]["error"]["type"] == err.error_type
    marker = [e for e in events if e["ph"] == "i" and e["cat"] == "error"]
    assert [m["args"]["operation_id"] for m in marker] == [err.operation_id]
    assert marker[0]["name"] == f"error: {err.error_type}" and marker[0]["ts"] == s["ts"]


def test_one_counter_track_per_device_follows_l1_and_dram_in_use(demo):
    folder, _, events = demo
    counters = [e for e in events if e["ph"] == "C"]
    assert {c["name"] for c in counters} == {"device 0 memory"}
    assert all(set(c["args"]) == {L1, f"DRAM {IN_BUFFERS}"} for c in counters)
    with ttreport.open(folder) as r:
        peak = r.peak_l1_by_device()[0]
        peak_op = r.operation(peak["operation_id"])
        at_peak = r.l1_by_device(peak["operation_id"])[0]["bytes"]
    assert max(c["args"][L1] for c in counters) == peak["bytes"] == at_peak
    # The value in force at the peak op's end is the peak (a counter holds until its next sample).
    before = [c for c in counters if c["ts"] <= peak_op.end_ns / 1000]
    assert before[-1]["args"][L1] == peak["bytes"]


def test_flows_run_from_each_tensors_producer_to_every_op_that_read_it(demo):
    folder, _, events = demo
    slices = [e for e in events if e["ph"] == "X" and e["cat"] == "op"]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and set(starts) == set(ends)

    def innermost(e):
        """The slice a flow event binds to: the deepest one open at its time on its thread."""
        open_ = [s for s in slices if s["tid"] == e["tid"] and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]
        return max(open_, key=lambda s: (s["args"]["depth"], s["ts"]))["args"]["operation_id"]

    arrows = defaultdict(set)
    for i, s in starts.items():
        assert ends[i]["bp"] == "e" and s["name"] == ends[i]["name"]
        arrows[s["args"]["tensor_id"]].add((innermost(s), innermost(ends[i])))
    with ttreport.open(folder) as r:
        expected = defaultdict(set)
        for tid, producer, consumer in r.execute(
                "SELECT i.tensor_id, t.producer_operation_id, i.operation_id FROM input_tensors i "
                "JOIN tensors t USING (tensor_id) WHERE t.producer_operation_id IS NOT NULL "
                "AND t.producer_operation_id != i.operation_id"):
            expected[tid].add((producer, consumer))
    assert arrows == expected


def test_a_json_gz_trace_is_the_same_events_compressed(demo, tmp_path):
    folder, _, events = demo
    with ttreport.open(folder) as r:
        path = r.export_chrome_trace(tmp_path / "t.json.gz")
    with gzip.open(path, "rt") as f:
        assert json.load(f)["traceEvents"] == events


def test_another_suffix_is_refused_naming_the_suffixes(demo, tmp_path):
    folder, _, _ = demo
    with ttreport.open(folder) as r, pytest.raises(ReportError, match=r"\.json or \.json\.gz, not 't\.txt'"):
        r.export_chrome_trace(tmp_path / "t.txt")
    assert not (tmp_path / "t.txt").exists()


def test_ttreport_trace_writes_the_file_and_says_how_to_open_it(demo, tmp_path):
    folder, _, events = demo
    out = tmp_path / "cli.json"
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "trace", str(folder), "-o", str(out)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert str(out) in done.stdout and "ui.perfetto.dev" in done.stdout
    assert json.loads(out.read_text())["traceEvents"] == events


def test_a_mesh_run_has_a_counter_track_for_each_chip(tmp_path):
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 2))
    try:
        with ttreport.capture(tmp_path / "mesh") as cap:
            x = ttnn.from_torch(__import__("torch").ones(2, 32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE,
                                device=mesh, mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=0),
                                memory_config=ttnn.L1_MEMORY_CONFIG)
            ttnn.add(x, x)
    finally:
        ttnn.close_mesh_device(mesh)
    with ttreport.open(cap.path) as r:
        events = [e for e in _events(r, tmp_path) if e["ph"] == "C"]
        peaks = {p["device_id"]: p["bytes"] for p in r.peak_l1_by_device()}
    by_device = defaultdict(int)
    for c in events:
        dev = int(re.match(r"device (\d+) memory", c["name"]).group(1))
        by_device[dev] = max(by_device[dev], c["args"][L1])
    assert dict(by_device) == peaks and len(peaks) == 2


def _events(report, tmp_path):
    return json.loads(report.export_chrome_trace(tmp_path / "x.json").read_text())["traceEvents"]


@pytest.mark.skipif(browser.missing_speedscope() is not None, reason=str(browser.missing_speedscope()))
def test_speedscope_opens_the_trace_and_shows_the_ops_nested(demo, tmp_path):
    folder, path, _ = demo
    page = browser.load(browser.speedscope_url(path, tmp_path), size=(1600, 2400))
    text = page.text()
    assert "Importing as Trace Event Format profile" in " ".join(page.console), page.console
    assert not [m for m in page.console if "Uncaught" in m or "rror" in m.split(",")[0]], page.console
    # The thread, as speedscope names a trace's (pid, tid) profile.
    assert "ttreport demo (pid 1), MainThread (tid 1)" in text
    # The sandwich view lists each frame with its total and self time: a parent op holds its nested
    # ops' time (total > self), a leaf op only its own.
    with ttreport.open(folder) as r:
        outer = max(r.operations(name="test_export.exp_plus_one"), key=lambda o: o.duration)
        kids = r.children(outer.id)
    rows = re.findall(r"([\d.]+)(ms|µs|s) \([\d.]+%\) ([\d.]+)(ms|µs|s) \([\d.]+%\) (\S+) \{\"operation_id\":(\d+)",
                      text)
    scale = {"s": 1.0, "ms": 1e-3, "µs": 1e-6}
    shown = {int(r[5]): (float(r[0]) * scale[r[1]], float(r[2]) * scale[r[3]], r[4]) for r in rows}
    total, self_, name = shown[outer.id]
    assert name == "test_export.exp_plus_one" and total == pytest.approx(outer.duration, rel=0.01, abs=2e-6)
    assert self_ == pytest.approx(outer.duration - sum(k.duration for k in kids), rel=0.05, abs=2e-6)
    assert self_ < total and [k.name for k in kids] == ["ttnn.exp", "ttnn.add"]
    for k in kids:  # a leaf op: all its time is its own
        assert shown[k.id][0] == shown[k.id][1] == pytest.approx(k.duration, rel=0.01, abs=2e-6)


def test_a_tt_nn_reports_ops_with_durations_only_are_laid_end_to_end(tmp_path):
    shutil.copytree(Path(__file__).parent / "data" / "report_v0001", tmp_path / "r")
    db.upgrade(tmp_path / "r" / "db.sqlite")
    with ttreport.open(tmp_path / "r") as r:
        ops = r.operations()
        slices = [e for e in _events(r, tmp_path) if e["ph"] == "X" and e["cat"] == "op"]
    assert [s["args"]["operation_id"] for s in slices] == [o.id for o in ops] and ops[0].start_ns is None
    clock = 0.0
    for s, o in zip(slices, ops):
        assert s["ts"] == pytest.approx(clock) and s["dur"] == pytest.approx(o.duration * 1e6)
        assert s["args"]["placed"].startswith("no start time recorded")
        clock += s["dur"]
