"""The pytest plugin: `pytest --ttreport` on a small real suite (in a subprocess) writes one report per test
and a table, a marker sets a test's config, and a divergence from a baseline fails exactly that test."""

import json
import re
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest

import ttreport
from ttreport.pytest_plugin import report_name

REPO = Path(__file__).resolve().parents[1]

SUITE = '''
import pytest
import torch
import device_sim as ttnn
import ttreport

SCALE = {scale}


@pytest.fixture
def device():
    dev = ttnn.open_device(0)
    yield dev
    ttnn.close_device(dev)


def tensor(device, *shape):
    g = torch.Generator().manual_seed(0)
    return ttnn.from_torch(torch.randn(*shape, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)


def test_add(device):
    x = tensor(device, 32, 64)
    ttnn.add(x, x)


def test_matmul_relu(device):
    x, w = tensor(device, 32, 64), tensor(device, 64, 32)
    h = ttnn.matmul(x, w)
    h = ttnn.mul(h, SCALE)  # the planted divergence when SCALE is not 1
    ttnn.relu(h)


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.ttreport(config=ttreport.Config(tensors="all", stack_traces=False))
def test_softmax(device, n):
    for _ in range(n):
        ttnn.softmax(tensor(device, 32, 32), dim=-1)


def test_no_device_ops():
    assert 1 + 1 == 2
'''


def plugin_args() -> list[str]:
    """-p loads the plugin unless the installed entry point does already (loading it twice is an error)."""
    installed = any(e.value == "ttreport.pytest_plugin" for e in metadata.entry_points(group="pytest11"))
    return [] if installed else ["-p", "ttreport.pytest_plugin"]


def run_suite(pytester, root, *args, scale=1.0):
    pytester.makepyfile(test_suite=SUITE.format(scale=scale))
    return pytester.runpytest_subprocess(*plugin_args(), "--ttreport", f"--ttreport-root={root}", "-p",
                                         "no:cacheprovider", *args, timeout=300)


def test_each_test_gets_its_own_report_and_the_table_lists_them(pytester, tmp_path):
    root = tmp_path / "reports"
    result = run_suite(pytester, root)
    result.assert_outcomes(passed=5)
    names = ["test_suite.test_add", "test_suite.test_matmul_relu", "test_suite.test_softmax[1]",
             "test_suite.test_softmax[2]", "test_suite.test_no_device_ops"]
    assert sorted(p.name for p in root.iterdir()) == sorted(names)
    with ttreport.open(root / "test_suite.test_matmul_relu") as r:
        assert [op.name for op in r.operations(depth=0)][-3:] == ["ttnn.matmul", "ttnn.mul", "ttnn.relu"]
    with ttreport.open(root / "test_suite.test_softmax[2]") as r:
        assert sum(op.name == "ttnn.softmax" for op in r.operations(depth=0)) == 2
    out = result.stdout.str()
    assert "ttreport: 5 test report(s) under" in out
    header = next(line for line in result.stdout.lines if line.startswith("test "))
    assert header.split() == ["test", "ops", "device", "(est.)", "host", "time", "peak", "L1", "errors", "report"]
    row = next(line for line in result.stdout.lines if line.startswith("test_suite.test_add "))
    assert str(root / "test_suite.test_add") in row and row.split()[1] == "2"  # from_torch, add


def test_the_marker_sets_the_config_and_the_default_stores_outputs(pytester, tmp_path):
    root = tmp_path / "reports"
    run_suite(pytester, root).assert_outcomes(passed=5)
    marked = json.loads((root / "test_suite.test_softmax[1]" / "config.json").read_text())["config"]
    plain = json.loads((root / "test_suite.test_add" / "config.json").read_text())["config"]
    assert marked["tensors"] == "all" and marked["stack_traces"] is False
    assert plain["tensors"] == "outputs" and plain["stack_traces"] is True
    with ttreport.open(root / "test_suite.test_add") as r:
        assert r.sql("SELECT COUNT(*) AS n FROM tensors WHERE file IS NOT NULL")[0]["n"] > 0


def test_a_planted_divergence_fails_exactly_that_test_naming_the_op(pytester, tmp_path):
    baseline, current = tmp_path / "baseline", tmp_path / "current"
    run_suite(pytester, baseline).assert_outcomes(passed=5)
    same = run_suite(pytester, current, f"--ttreport-baseline={baseline}")
    same.assert_outcomes(passed=5)
    assert same.stdout.str().count(" match ") >= 4

    result = run_suite(pytester, current, f"--ttreport-baseline={baseline}", scale=1.5)
    result.assert_outcomes(passed=4, failed=1)
    out = result.stdout.str()
    assert "FAILED test_suite.py::test_matmul_relu" in out
    assert "ttreport: ttnn.mul diverged from the baseline" in out
    row = next(line for line in result.stdout.lines if line.startswith("test_suite.test_matmul_relu "))
    assert "diverged at op" in row and "(ttnn.mul)" in row


def test_a_test_without_a_baseline_report_fails_saying_how_to_make_one(pytester, tmp_path):
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    result = run_suite(pytester, tmp_path / "current", f"--ttreport-baseline={baseline}", "-k", "test_add")
    result.assert_outcomes(failed=1, deselected=4)
    assert f"no baseline report {baseline / 'test_suite.test_add'}" in result.stdout.str()
    assert f"pytest --ttreport --ttreport-root {baseline}" in result.stdout.str()


def test_without_the_flag_nothing_is_captured(pytester, tmp_path):
    pytester.makepyfile(test_suite=SUITE.format(scale=1.0))
    result = pytester.runpytest_subprocess(*plugin_args(), "-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(passed=5)
    assert "ttreport:" not in result.stdout.str()
    assert not (pytester.path / "generated").exists()


def test_report_names_are_plain_folder_names_from_the_node_id():
    assert report_name("tests/test_x.py::test_a") == "tests.test_x.test_a"
    assert report_name("tests/test_x.py::TestA::test_b[2-x]") == "tests.test_x.TestA.test_b[2-x]"
    assert report_name("t.py::test_c[a/b c]") == "t.test_c[a_b_c]"


def test_the_plugin_is_a_pytest11_entry_point():
    text = (REPO / "pyproject.toml").read_text()  # tomllib is not in Python 3.10
    section = re.search(r"^\[project\.entry-points\.pytest11\]\n(.*?)(?=^\[)", text, re.M | re.S)
    assert section and re.findall(r"^(\w+) = \"([\w.]+)\"", section.group(1), re.M) == [
        ("ttreport", "ttreport.pytest_plugin")]


def test_loading_the_plugin_imports_neither_torch_nor_device_sim():
    # Every pytest run of an environment with ttreport installed loads it: it must cost nothing until --ttreport.
    probe = ("import sys, ttreport.pytest_plugin\n"
             "print(sorted(m for m in ('torch', 'device_sim', 'sqlalchemy', 'rich') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


GATE_SUITE = '''
import pytest
import torch
import device_sim as ttnn

VARIANT = "{variant}"


@pytest.fixture
def device():
    dev = ttnn.open_device(0)
    yield dev
    ttnn.close_device(dev)


def test_block(device):
    g = torch.Generator().manual_seed(0)
    rows = 64 if VARIANT == "shape" else 32
    dtype = ttnn.bfloat8_b if VARIANT == "dtype" else ttnn.bfloat16
    x = ttnn.from_torch(torch.randn(rows, 64, generator=g), dtype=dtype, layout=ttnn.TILE, device=device)
    w = ttnn.from_torch(torch.randn(64, 32, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    h = ttnn.matmul(x, w, memory_config=ttnn.L1_MEMORY_CONFIG if VARIANT == "memory" else ttnn.DRAM_MEMORY_CONFIG)
    if VARIANT != "removed":
        h = ttnn.gelu(h) if VARIANT == "replaced" else ttnn.relu(h)
    if VARIANT == "added":
        h = ttnn.neg(ttnn.neg(h))
    h = ttnn.mul(h, 1.05 if VARIANT == "output" else 1.0)
    return ttnn.to_torch(h)
'''


def run_gate(pytester, root, variant, *args):
    pytester.makepyfile(test_gate=GATE_SUITE.format(variant=variant))
    return pytester.runpytest_subprocess(*plugin_args(), "--ttreport", f"--ttreport-root={root}", "-p",
                                         "no:cacheprovider", "-W", "ignore::pytest.PytestReturnNotNoneWarning",
                                         *args, timeout=300)


@pytest.mark.parametrize(("variant", "op", "says"), [
    ("replaced", "ttnn.relu", "was replaced by ttnn.gelu"),
    ("removed", "ttnn.relu", "was removed"),
    ("added", "ttnn.neg", "was added"),
    ("shape", "ttnn.from_torch", "output 0's shape changed: Shape([32, 64]) -> Shape([64, 64])"),
    ("dtype", "ttnn.from_torch", "output 0's dtype changed: DataType.BFLOAT16 -> DataType.BFLOAT8_B"),
    ("memory", "ttnn.matmul", "output 0's memory config changed"),
    ("output", "ttnn.mul", "diverged from the baseline"),
])
def test_the_baseline_gate_fails_every_kind_of_change_naming_the_op(pytester, tmp_path, variant, op, says):
    baseline = tmp_path / "baseline"
    run_gate(pytester, baseline, "same").assert_outcomes(passed=1)
    run_gate(pytester, tmp_path / "same", "same", f"--ttreport-baseline={baseline}").assert_outcomes(passed=1)
    result = run_gate(pytester, tmp_path / "changed", variant, f"--ttreport-baseline={baseline}")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    line = next(x for x in result.stdout.lines if x.strip().startswith("ttreport: ") and "Failed" not in x)
    assert line.strip().startswith(f"ttreport: {op} "), out
    assert says in out, out
    row = next(x for x in result.stdout.lines if x.startswith("test_gate.test_block "))
    assert f"({op})" in row


def test_the_gate_compares_device_time_and_fails_a_slowdown_past_the_limit(pytester, tmp_path):
    baseline = tmp_path / "baseline"
    run_gate(pytester, baseline, "same").assert_outcomes(passed=1)
    same = run_gate(pytester, tmp_path / "same", "same", f"--ttreport-baseline={baseline}",
                    "--ttreport-max-slowdown=0")
    same.assert_outcomes(passed=1)  # the model's estimate of the same ops is the same: +0.0 %, whatever the host did
    row = next(x for x in same.stdout.lines if x.startswith("test_gate.test_block "))
    assert " match " in row and " +0.0% " in row
    # Two more ops (allowed by --ttreport-lenient) take more device time: past a 1 % limit, the test fails.
    slower = run_gate(pytester, tmp_path / "added", "added", f"--ttreport-baseline={baseline}", "--ttreport-lenient",
                      "--ttreport-max-slowdown=0.01")
    slower.assert_outcomes(failed=1)
    assert "ttreport: estimated device time " in slower.stdout.str()
    assert "(max slowdown 1.0%)" in slower.stdout.str()
    row = next(x for x in slower.stdout.lines if x.startswith("test_gate.test_block "))
    change = float(row.split("device time ")[1].split("%")[0])
    assert change > 1 and f"{change:+.1f}%" in row.split("device time ")[1]


def test_lenient_lets_an_added_op_pass_but_still_checks_specs_and_values(pytester, tmp_path):
    baseline = tmp_path / "baseline"
    run_gate(pytester, baseline, "same").assert_outcomes(passed=1)
    run_gate(pytester, tmp_path / "a", "added", f"--ttreport-baseline={baseline}",
             "--ttreport-lenient").assert_outcomes(passed=1)
    run_gate(pytester, tmp_path / "b", "memory", f"--ttreport-baseline={baseline}",
             "--ttreport-lenient").assert_outcomes(failed=1)
    # A tolerance wide enough for the changed constant (x1.05) lets the output through; the default does not.
    run_gate(pytester, tmp_path / "c", "output", f"--ttreport-baseline={baseline}",
             "--ttreport-rtol=0.1").assert_outcomes(passed=1)


def test_a_bad_marker_option_is_a_usage_error_naming_it(pytester, tmp_path):
    pytester.makepyfile(test_m='''
import pytest

@pytest.mark.ttreport(pcc="high")
def test_x():
    pass
''')
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    result = pytester.runpytest_subprocess(*plugin_args(), f"--ttreport-baseline={baseline}",
                                           f"--ttreport-root={tmp_path / 'r'}", "-p", "no:cacheprovider", timeout=120)
    assert "@pytest.mark.ttreport(pcc='high') takes a number >= 0" in result.stdout.str() + result.stderr.str()


KILLED_SUITE = '''
import os
import signal

import pytest
import torch
import device_sim as ttnn
from ttreport.capturing.writer_process import KILL_STEP_VAR


def adds():
    dev = ttnn.open_device(0)
    a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    for _ in range(40):
        a = ttnn.add(a, a)
    ttnn.close_device(dev)


def test_finished_alone():
    adds()


@pytest.fixture
def writer_killed(monkeypatch):
    monkeypatch.setenv(KILL_STEP_VAR, "1")  # its writer process, forked from here, dies as it closes the db


def test_writer_killed(writer_killed):
    adds()


def test_session_killed():
    os.kill(os.getpid(), signal.SIGKILL)  # the session never reaches its end: no report above was waited for
'''


def wait_unlocked(report: Path, timeout_s: float = 120) -> None:
    """Wait until no process holds the report's folder lock (its writer process, orphaned by the kill, has ended)."""
    from ttreport.folder import hold_folder, unlock

    deadline = time.monotonic() + timeout_s
    while (fd := hold_folder(report)) is False:
        assert time.monotonic() < deadline, f"{report} is still locked after {timeout_s} s"
        time.sleep(0.1)
    if fd is not None:
        unlock(report, fd)


def test_a_session_killed_before_its_end_loses_no_op_of_the_reports_it_did_not_wait_for(tmp_path):
    # The tests' reports are finished behind them; the session dies (SIGKILL) before it waits for any. One
    # writer process finishes its report alone; the other dies too, and `ttreport` rebuilds that one from its log.
    (tmp_path / "test_killed.py").write_text(KILLED_SUITE)
    root = tmp_path / "reports"
    done = subprocess.run([sys.executable, "-m", "pytest", *plugin_args(), "-p", "no:cacheprovider", "-o", "addopts=",
                           "test_killed.py", "--ttreport", f"--ttreport-root={root}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == -9, done.stdout + done.stderr
    alone, killed = root / "test_killed.test_finished_alone", root / "test_killed.test_writer_killed"
    for report in (alone, killed):
        wait_unlocked(report)
    assert not (alone / "oplog").exists() and (killed / "oplog").exists()  # only the killed writer's log is left

    def cli(report, sql):
        out = subprocess.run([sys.executable, "-m", "ttreport.cli", "query", "--json", str(report), sql],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    names = {r: [row["name"] for row in cli(r, "SELECT name FROM operations ORDER BY operation_id")]
             for r in (alone, killed)}
    assert names[alone].count("ttnn.add") == 40 and names[killed] == names[alone]
    for report in (alone, killed):
        meta = {row["key"]: row["value"] for row in cli(report, "SELECT key, value FROM report_metadata")}
        assert meta["status"] == "complete", report
    assert not (killed / "oplog").exists()  # the reader's rebuild holds every op, so the log went


TWICE_SUITE = '''
import pytest
import torch
import device_sim as ttnn


@pytest.mark.parametrize("label", ["a b", "a_b"])  # two tests, one report name: test_twice.test_add[a_b]
def test_add(label):
    dev = ttnn.open_device(0)
    x = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    ttnn.add(x, x)
    ttnn.close_device(dev)
'''


def test_a_second_test_of_the_same_report_name_waits_for_the_first_report_before_replacing_it(pytester, tmp_path):
    pytester.makepyfile(test_twice=TWICE_SUITE)
    root = tmp_path / "reports"
    result = pytester.runpytest_subprocess(*plugin_args(), "--ttreport", f"--ttreport-root={root}", "-p",
                                           "no:cacheprovider", timeout=300)
    result.assert_outcomes(passed=2)  # the second is not refused as a capture into a live report
    assert "ttreport: 2 test report(s) under" in result.stdout.str()
    assert [p.name for p in root.iterdir()] == ["test_twice.test_add[a_b]"]
    with ttreport.open(root / "test_twice.test_add[a_b]") as r:
        assert r.metadata["status"] == "complete"


INTERRUPTED_SUITE = '''
import torch
import device_sim as ttnn


def test_add():
    dev = ttnn.open_device(0)
    a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    for _ in range(40):
        a = ttnn.add(a, a)
    ttnn.close_device(dev)
'''

# Runs before the plugin's end of session: its writer process is stopped for a while, and the Ctrl-C is sent once
# the session's wait for it has begun (the wait's own SIGINT handler is in place).
INTERRUPTED_CONFTEST = '''
import os
import signal
import threading
import time

import pytest


def ctrl_c_in_the_wait(writer, before):
    while signal.getsignal(signal.SIGINT) is before:
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(1.0)
    os.kill(writer, signal.SIGCONT)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    (_, capture), = session.config.pluginmanager.get_plugin("ttreport-session").behind
    writer = capture._writer.pid
    os.kill(writer, signal.SIGSTOP)
    threading.Thread(target=ctrl_c_in_the_wait, args=(writer, signal.getsignal(signal.SIGINT)), daemon=True).start()
'''


def test_a_ctrl_c_during_the_sessions_wait_for_a_report_finishes_it_first_then_stops(tmp_path):
    (tmp_path / "test_interrupted.py").write_text(INTERRUPTED_SUITE)
    (tmp_path / "conftest.py").write_text(INTERRUPTED_CONFTEST)
    root = tmp_path / "reports"
    done = subprocess.run([sys.executable, "-m", "pytest", *plugin_args(), "-p", "no:cacheprovider", "-o", "addopts=",
                           "test_interrupted.py", "--ttreport", f"--ttreport-root={root}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.INTERRUPTED, said
    assert f"SIGINT noted: finishing the report {root / 'test_interrupted.test_add'} first" in said
    assert "interrupted: every report is finished (1)" in said and "Traceback" not in said
    report = root / "test_interrupted.test_add"
    assert (report / "ops_perf_results.csv").is_file() and (report / "profile_log_device.csv").is_file()
    with ttreport.open(report) as r:
        assert r.metadata["status"] == "complete" and r.count_operations() == 41  # from_torch and the adds
