"""The performance model's constants from a file (device_sim/perf_constants.py): what `ttreport calibrate` writes.

    .venv/bin/python -m pytest tests/test_perf_constants.py -q
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from device_sim import perf_constants, perf_model

ESTIMATE = ("import json; from device_sim import perf_model as m; "
            "o = m.Operand(2048, 'dram', (32, 32), False); "
            "print(json.dumps([m.LAUNCH_NS, m.estimate('relu', [o], [o], None).ideal_ns]))")
SAMPLE = Path(__file__).resolve().parents[1] / "sample_reports" / "demo"
CLIP = Path(__file__).resolve().parent / "data" / "ops_perf" / "wh_clip_encoder_2_first40.csv"


def run(env_file=None) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin"} | ({perf_constants.ENV_VAR: str(env_file)} if env_file else {})
    return subprocess.run([sys.executable, "-c", ESTIMATE], capture_output=True, text=True, timeout=120, env=env)


def test_a_file_named_by_the_environment_sets_the_constants_every_estimate_uses(tmp_path):
    base_launch, base = json.loads(run().stdout)
    path = tmp_path / "constants.json"
    path.write_text(json.dumps({"constants": {"LAUNCH_NS": base_launch + 1000}, "fitted_on": "anything"}))
    launch, ns = json.loads(run(path).stdout)
    assert launch == base_launch + 1000 and ns == base + 1000  # launch adds to every op's estimate


@pytest.mark.parametrize("text, says", [
    ('{"constants": {"CLOCK_GHZ": 2}}', "'CLOCK_GHZ' is not a constant of the performance model that can be set"),
    ('{"constants": {"LAUNCH_NS": -3}}', "LAUNCH_NS = '-3' is not a positive number"),
    ('{"constants": {"LAUNCH_NS": NaN}}', "LAUNCH_NS = 'nan' is not a positive number"),
    ('{"constants": {"LAUNCH_NS": 1%s}}' % ("0" * 400), "LAUNCH_NS = '1000"),  # too large for a float
    ('{"constants": {"SFPU_OP_CYCLES": {"gelu": "fast"}}}', "is not a positive number per op name"),
    ('{"LAUNCH_NS": 1}', "is not a constants file"),
    ("not json", "is not a constants file"),
])
def test_a_bad_file_stops_the_import_with_its_value_and_the_fix(tmp_path, text, says):
    path = tmp_path / "constants.json"
    path.write_text(text)
    done = run(path)
    assert done.returncode != 0 and says in done.stderr.splitlines()[-1] and str(path) in done.stderr


def test_use_returns_what_it_replaced_and_a_table_is_merged():
    old = perf_constants.use(perf_model, {"SFPU_OP_CYCLES": {"gelu": 111}, "LAUNCH_NS": 7})
    try:
        assert perf_model.SFPU_OP_CYCLES["gelu"] == 111 and perf_model.LAUNCH_NS == 7
        assert perf_model.SFPU_OP_CYCLES["erf"] == old["SFPU_OP_CYCLES"]["erf"]  # the rest of the table kept
    finally:
        perf_constants.use(perf_model, old)
    assert old["SFPU_OP_CYCLES"] == perf_model.SFPU_OP_CYCLES and old["LAUNCH_NS"] == perf_model.LAUNCH_NS


def test_the_record_is_the_file_applied_at_import_not_one_named_later(tmp_path, monkeypatch):
    # this process imported perf_model with no file named: a variable set afterwards changes no estimate
    path = tmp_path / "constants.json"
    path.write_text(json.dumps({"constants": {"LAUNCH_NS": 1}}))
    monkeypatch.setenv(perf_constants.ENV_VAR, str(path))
    assert perf_constants.environment() is None


def cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ttreport.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


def test_a_capture_with_the_environment_set_records_the_file_and_its_summary_says_so(tmp_path):
    path = tmp_path / "constants.json"
    constants = {"LAUNCH_NS": perf_model.LAUNCH_NS + 1000, "SFPU_OP_CYCLES": {"relu": 77}}
    path.write_text(json.dumps({"constants": constants, "fitted_on": "anything"}))
    script = tmp_path / "relu.py"
    script.write_text("import torch, ttnn\ndevice = ttnn.open_device(device_id=0)\n"
                      "ttnn.relu(ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE_LAYOUT, device=device))\n")
    done = cli("run", "--name", tmp_path / "r", script, env={**os.environ, perf_constants.ENV_VAR: str(path)})
    assert done.returncode == 0, done.stderr
    recorded = {"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "constants": constants}
    assert json.loads(cli("summary", tmp_path / "r", "--json").stdout)["perf_constants"] == recorded
    text = cli("summary", tmp_path / "r").stdout.splitlines()
    device = next(i for i, line in enumerate(text) if line.startswith("device  "))
    assert text[device + 1] == f"        estimated with calibrated constants from {path} " \
                               f"(sha256 {recorded['sha256'][:12]}, 2 set)"


def test_a_report_made_with_the_models_own_constants_says_nothing_and_a_damaged_record_reads_as_unknown(tmp_path):
    report = tmp_path / "demo"
    shutil.copytree(SAMPLE, report)
    assert json.loads(cli("summary", report, "--json").stdout)["perf_constants"] is None
    assert "calibrated constants" not in cli("summary", report).stdout
    with sqlite3.connect(report / "db.sqlite") as con:
        con.execute("INSERT INTO report_metadata (key, value) VALUES ('perf_constants', ?)", ("[" * 100_000,))
    con.close()
    done = cli("summary", report)
    assert done.returncode == 0 and "estimated with calibrated constants from ? (sha256 ?, 0 set)" in done.stdout


def test_a_bad_file_is_one_line_from_the_commands_that_import_the_model(tmp_path):
    path = tmp_path / "constants.json"
    path.write_text('{"constants": {"CLOCK_GHZ": 2}}')
    script = tmp_path / "nothing.py"
    script.write_text("")
    env = {**os.environ, perf_constants.ENV_VAR: str(path)}
    for args in (("run", "--name", tmp_path / "r", script), ("calibrate", CLIP, "-o", tmp_path / "c.json")):
        done = cli(*args, env=env)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.strip() == f"Error: {perf_constants.ENV_VAR}={path}: 'CLOCK_GHZ' is not a constant of the " \
                                      f"performance model that can be set; the names are " \
                                      f"{', '.join(sorted(perf_constants.settable(perf_model)))}"


def test_compare_timing_warns_when_the_two_runs_estimates_used_different_constants(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(SAMPLE, a)
    shutil.copytree(SAMPLE, b)
    record = {"path": "/team/constants.json", "sha256": "ab" * 32, "constants": {"LAUNCH_NS": 1061}}
    with sqlite3.connect(b / "db.sqlite") as con:
        con.execute("INSERT INTO report_metadata (key, value) VALUES ('perf_constants', ?)", (json.dumps(record),))
    con.close()
    said = ("A's device estimates use the model's own constants, B's calibrated constants from /team/constants.json "
            "(sha256 abababababab): their differences are partly the constants'")
    done = cli("compare", a, b, "--timing")
    assert done.returncode == 0 and f"warning: {said}" in done.stdout.splitlines()
    assert json.loads(cli("compare", a, b, "--timing", "--json", "-").stdout)["constants"] == said
    assert json.loads(cli("compare", b, b, "--timing", "--json", "-").stdout)["constants"] is None
    # the html page's summary says it beside the device figure, as `ttreport summary` does
    assert cli("html", b, "-o", tmp_path / "b.html").returncode == 0
    assert ("<dt>device constants</dt><dd>estimated with calibrated constants from /team/constants.json (sha256 "
            "abababababab, 1 set)</dd>") in (tmp_path / "b.html").read_text()
