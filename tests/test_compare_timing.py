"""`ttreport compare A B --timing`: two runs' op times (device by default, host on request) and memory side by
side, slowest change first."""

import json
import shutil
import sqlite3

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport.cli import main
from ttreport.read.compare import compare_reports
from ttreport.read.timing import compare_timing


def model(device, *, extra_op=False):
    g = torch.Generator().manual_seed(0)
    x = ttnn.from_torch(torch.randn(64, 128, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    w = ttnn.from_torch(torch.randn(128, 128, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    h = ttnn.matmul(x, w)
    if extra_op:
        h = ttnn.mul(h, 1.0)
    h = ttnn.relu(h)
    return ttnn.add(h, 1.0)


@pytest.fixture
def run(tmp_path, device):
    def run(name, **changes):
        with ttreport.capture(tmp_path / name, config=ttreport.Config(tensors="all")) as report:
            model(device, **changes)
        return report.path

    return run


def slowed(report, tmp_path, op_name, seconds=0.0, device_ns=0):
    """A copy of `report` in which every op named `op_name` took `seconds` longer on the host and `device_ns` longer
    in the model's estimate: a planted slowdown."""
    copy = tmp_path / f"{report.name}-slow"
    shutil.copytree(report, copy)
    con = sqlite3.connect(copy / "db.sqlite")
    with con:
        con.execute("UPDATE operations SET duration = duration + ? WHERE name = ?", (seconds, op_name))
        con.execute("UPDATE device_perf SET ideal_ns = ideal_ns + ? WHERE operation_id IN "
                    "(SELECT operation_id FROM operations WHERE name = ?)", (device_ns, op_name))
    con.close()
    return copy


def test_the_slowed_op_comes_first_with_its_change_and_ratio_on_the_device_clock(run, tmp_path):
    a = run("a")
    t = compare_timing(a, slowed(a, tmp_path, "ttnn.relu", 0.5, device_ns=7_000))
    assert t.clock == "device"
    first = t.rows[0]
    assert first.name == "ttnn.relu"
    assert first.delta_ns == 7_000 and first.b_device_ns - first.a_device_ns == 7_000 and first.ratio > 1
    assert all(r.delta_ns == 0 for r in t.rows[1:] if r.delta_ns is not None)
    assert t.totals["b"]["device_ns"] - t.totals["a"]["device_ns"] == 7_000
    assert first.b_host_s - first.a_host_s == pytest.approx(0.5)  # the host figure rides along, not compared


def test_the_host_clock_compares_the_emulators_time(run, tmp_path):
    a = run("a")
    t = compare_timing(a, slowed(a, tmp_path, "ttnn.relu", 0.5), clock="host")
    first = t.rows[0]
    assert first.name == "ttnn.relu"
    assert first.delta_ns == pytest.approx(0.5e9) and first.ratio > 1
    assert all(r.delta_ns == pytest.approx(0) for r in t.rows[1:])
    assert t.totals["b"]["host_s"] - t.totals["a"]["host_s"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="clock='wall'"):
        compare_timing(a, a, clock="wall")


def test_two_runs_of_an_unchanged_model_differ_by_nothing_on_the_device(run):
    """The point of the device clock: host times differ run to run (warm-up, load); the model's estimate does not."""
    t = compare_timing(run("a"), run("b"))
    timed = [r for r in t.rows if r.a_device_ns is not None]
    assert len(timed) >= 5 and all(r.delta_ns == 0 for r in timed)
    assert t.totals["a"]["device_ns"] == t.totals["b"]["device_ns"] > 0
    assert any(r.a_host_s != r.b_host_s for r in t.rows)  # the host clock did move


def test_ops_pair_up_as_the_value_comparison_pairs_them(run):
    a, b = run("a"), run("b", extra_op=True)
    t = compare_timing(a, b)
    values = compare_reports(a, b)
    assert sorted((r.a_id, r.b_id) for r in t.rows) == sorted((p.a_id, p.b_id) for p in values.pairs)
    assert [n for _, n in t.only_b] == ["ttnn.mul"] and not t.only_a


def test_each_row_carries_the_memory_each_report_recorded_after_the_op(run):
    a, b = run("a"), run("b")
    t = compare_timing(a, b)
    con = sqlite3.connect(a / "db.sqlite")
    recorded = dict(((i, (l1, dram)) for i, l1, dram in con.execute(
        "SELECT operation_id, l1_bytes, dram_bytes FROM operations")))
    con.close()
    assert all((r.a_l1_bytes, r.a_dram_bytes) == recorded[r.a_id] for r in t.rows)
    assert any(r.a_dram_bytes for r in t.rows)  # the model's tensors live in DRAM
    assert t.totals["a"]["peak_dram_bytes"] == max(dram for _, dram in recorded.values() if dram is not None)


def test_the_cli_prints_the_slowest_change_first_and_writes_json(run, tmp_path):
    a = run("a")
    b = slowed(a, tmp_path, "ttnn.matmul", 0.25)
    out = tmp_path / "timing.json"
    result = CliRunner().invoke(main, ["compare", str(a), str(b), "--timing", "--host-time", "--json", str(out)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("A op"))
    assert "A host" in lines[header]
    assert "ttnn.matmul" in lines[header + 2] and "+250.00 ms" in lines[header + 2]
    assert " / " not in lines[header + 2]  # the copy's memory is the same: one figure, not "A / B"
    assert "aligned ops: device (estimated) A" in result.output and "peak DRAM" in result.output
    data = json.loads(out.read_text())
    assert data["clock"] == "host"
    assert data["ops"][0]["name"] == "ttnn.matmul" and data["ops"][0]["delta_ns"] == pytest.approx(0.25e9)


def test_the_cli_compares_device_time_by_default(run, tmp_path):
    a = run("a")
    b = slowed(a, tmp_path, "ttnn.relu", 0.25, device_ns=3_000)  # the host slowdown is larger, and not compared
    result = CliRunner().invoke(main, ["compare", str(a), str(b), "--timing"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("A op"))
    assert "A device (est.)" in lines[header]
    assert "ttnn.relu" in lines[header + 2] and "+3.0 us" in lines[header + 2]


def test_timing_needs_no_stored_tensors(tmp_path, device):
    for name in ("a", "b"):
        with ttreport.capture(tmp_path / name):
            model(device)
    t = compare_timing(tmp_path / "a", tmp_path / "b")
    assert [r.name for r in t.rows if r.name.endswith("matmul")] == ["ttnn.matmul"]
