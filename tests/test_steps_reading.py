"""Reading a run captured in steps (issue 34): per-step statistics, the summary's steps table, and compare --timing
on the active steps alone (per-step averages when the two runs have different numbers of them); reports made with
the capture API (ttreport.capture(..., schedule=), run.step()), and one from before steps (no operations.step)."""

import json
import sqlite3
import subprocess
import sys

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport.cli import main
from ttreport.read.report import ReportError
from ttreport.read.timing import compare_timing
from ttreport.steps import Schedule

STEP_OPS = 3  # matmul, relu, add: each step's ops; step 0 also holds the two uploads before the first step


def _capture(folder, device, n_steps: int, schedule: Schedule | None, *, extra=False):
    """A capture of `n_steps` steps of the same block, run.step() after each."""
    with ttreport.capture(folder, schedule=schedule) as run:
        g = torch.Generator().manual_seed(0)
        x = ttnn.from_torch(torch.randn(64, 128, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        w = ttnn.from_torch(torch.randn(128, 128, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        for _ in range(n_steps):
            h = ttnn.relu(ttnn.matmul(x, w))
            ttnn.add(ttnn.mul(h, 2.0) if extra else h, 1.0)
            run.step()
    return run.path


def _step_of(path) -> dict[int, int]:
    con = sqlite3.connect(path / "db.sqlite")
    try:
        return dict(con.execute("SELECT operation_id, step FROM operations"))
    finally:
        con.close()


def test_steps_give_each_steps_phase_ops_and_times(tmp_path, device):
    path = _capture(tmp_path / "r", device, 4, Schedule(warmup=1, active=3))
    with ttreport.open(path) as r:
        steps = r.steps()
        assert r.schedule == Schedule(warmup=1, active=3) and r.active_steps() == [1, 2, 3]
        host = dict(r.execute("SELECT step, SUM(end_ns - start_ns) FROM operations GROUP BY step"))
    assert [(s.step, s.phase, s.ops) for s in steps] == [(0, "warmup", 5), (1, "active", 3), (2, "active", 3),
                                                         (3, "active", 3)]
    assert len({s.device_ns for s in steps[1:]}) == 1 and steps[1].device_ns > 0  # the same ops: the same estimate
    assert steps[0].device_ns > steps[1].device_ns  # the uploads too
    assert [s.host_ns for s in steps] == [host[n] for n in range(4)]


@pytest.mark.parametrize("column", ["kept", "dropped"])
def test_a_report_without_steps_is_one_active_step_0(tmp_path, device, column):
    with ttreport.capture(tmp_path / "r") as cap:
        ttnn.relu(ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device))
    if column == "dropped":  # a report from before operations.step: readers look for the column
        con = sqlite3.connect(cap.path / "db.sqlite")
        with con:
            con.execute("ALTER TABLE operations DROP COLUMN step")
        con.close()
    with ttreport.open(cap.path) as r:
        (step,) = r.steps()
        assert (step.step, step.phase, step.ops) == (0, "active", 2) and r.active_steps() == [0]
        assert r.summary().steps == []  # one step: no steps table
    assert compare_timing(cap.path, cap.path).steps["a"] == {"steps": [0]}


def test_the_summary_shows_the_steps_and_the_active_steps_mean(tmp_path, device):
    path = _capture(tmp_path / "r", device, 3, Schedule(warmup=1, active=2))
    with ttreport.open(path) as r:
        steps = r.steps()
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "summary", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("steps (top-level ops; device: estimated; host: the emulator's):")
    rows = [line.split()[:3] for line in lines[start + 3:start + 6]]
    assert rows == [["0", "warmup", "5"], ["1", "active", "3"], ["2", "active", "3"]]
    from ttreport.read.device_time import human_ns
    assert f"2 active steps: device {human_ns(steps[1].device_ns)} a step on average" in done.stdout


def test_compare_timing_uses_the_active_steps_alone(tmp_path, device):
    a = _capture(tmp_path / "a", device, 3, Schedule(warmup=1, active=2))
    b = _capture(tmp_path / "b", device, 3, Schedule(warmup=1, active=2))
    t = compare_timing(a, b)
    assert not t.per_step and t.steps["a"]["steps"] == [1, 2]
    steps_a, steps_b = _step_of(a), _step_of(b)
    assert len(t.rows) == 2 * STEP_OPS and not t.only_a and not t.only_b
    assert {steps_a[r.a_id] for r in t.rows} == {steps_b[r.b_id] for r in t.rows} == {1, 2}  # no warm-up op
    assert all(r.delta_ns == 0 for r in t.rows)


def test_different_step_counts_compare_per_step_averages(tmp_path, device):
    a = _capture(tmp_path / "a", device, 3, Schedule(warmup=1, active=2))
    b = _capture(tmp_path / "b", device, 5, None)  # no schedule: every step active, step 0's uploads included
    t = compare_timing(a, b, clock="host")
    assert t.per_step and t.steps["a"] == {"steps": [1, 2], "averaged_over": 2}
    assert t.steps["b"] == {"steps": [0, 1, 2, 3, 4], "averaged_over": 1}  # step 0's names are not the others'
    with ttreport.open(a) as r:
        host = {(s, name): d for s, name, d in r.execute(
            "SELECT step, name, duration FROM operations WHERE step IN (1, 2)")}
    relu = next(row for row in t.rows if row.name == "ttnn.relu")
    assert relu.a_host_s == pytest.approx((host[1, "ttnn.relu"] + host[2, "ttnn.relu"]) / 2)
    assert _step_of(a)[relu.a_id] == 1  # the row names the first active step's op
    device = compare_timing(a, b)
    assert {r.name for r in device.rows if r.delta_ns == 0} >= {"ttnn.matmul", "ttnn.relu", "ttnn.add"}
    out = CliRunner().invoke(main, ["compare", str(a), str(b), "--timing"]).output
    assert "steps: A 2 active steps (averaged over 2), B 5 active steps (averaged over 1); per-step averages" in out


def test_a_damaged_schedule_is_one_line_naming_it(tmp_path, device):
    path = _capture(tmp_path / "r", device, 2, None)
    con = sqlite3.connect(path / "db.sqlite")
    with con:
        con.execute("INSERT INTO report_metadata (key, value) VALUES ('schedule', ?)", (json.dumps({"wait": -1}),))
    con.close()
    with ttreport.open(path) as r, pytest.raises(ReportError, match=r"schedule wait=-1: .*`ttreport check`"):
        r.steps()
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "summary", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "wait=-1" in done.stderr


def test_history_and_the_gate_count_the_active_steps_alone(tmp_path, device, postgres_cluster, monkeypatch):
    from ttreport import store
    from ttreport.pytest_plugin import _device_ns

    monkeypatch.setenv("TTREPORT_STORE_CACHE", str(tmp_path / "cache"))
    url = postgres_cluster.new_database()
    stepped = _capture(tmp_path / "stepped", device, 4, Schedule(warmup=1, active=3))
    plain = _capture(tmp_path / "plain", device, 1, None)
    store.push(plain, url, name="plain")
    store.push(stepped, url, name="stepped")
    rows = store.history(url, "ttnn.relu")
    assert [(r["run"], r["count"]) for r in rows] == [("plain", 1), ("stepped", 3)]  # step 0's relu is warm-up
    assert rows[1]["mean_device_ns"] == rows[0]["mean_device_ns"] and rows[1]["flags"] == []
    with ttreport.open(stepped) as s, ttreport.open(plain) as p:
        assert _device_ns(s) == s.steps()[1].device_ns  # a step's on average: each active step is the same
        assert _device_ns(p) == p.steps()[0].device_ns


def test_the_html_summary_lists_the_steps(tmp_path, device):
    from ttreport.read.device_time import human_ns

    path = _capture(tmp_path / "r", device, 2, Schedule(warmup=1, active=1))
    with ttreport.open(path) as r:
        steps = r.steps()
        page = r.export_html(tmp_path / "r.html").read_text()
    assert f"<dt>steps</dt><dd>0 warmup: 5 ops, device {human_ns(steps[0].device_ns)}, host " in page
    assert f"; 1 active: 3 ops, device {human_ns(steps[1].device_ns)}, host " in page
