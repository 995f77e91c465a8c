"""`ttreport calibrate`: the performance model's named constants fitted to real profiler runs.

    .venv/bin/python -m pytest tests/test_calibrate.py -q

The profile is public TT-NN output (tests/data/ops_perf/README.md): a CLIP text encoder's first 40 device
operations on a Wormhole n150.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

from device_sim import perf_constants, perf_model
from ttreport import calibrate
from ttreport.read import measured

DATA = Path(__file__).resolve().parent / "data" / "ops_perf"
CLIP = DATA / "wh_clip_encoder_2_first40.csv"
SAMPLE = Path(__file__).resolve().parents[1] / "sample_reports" / "demo"


def cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ttreport.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


def mean_abs_log(cases, constants: dict) -> float:
    old = perf_constants.use(perf_model, constants)
    try:
        return sum(abs(math.log(calibrate.estimate_ns(c) / c.measured_ns)) for c in cases) / len(cases)
    finally:
        perf_constants.use(perf_model, old)


def test_calibrate_writes_constants_the_model_loads_and_that_fit_the_profile_better(tmp_path):
    out = tmp_path / "constants.json"
    done = cli("calibrate", CLIP, "-o", out)
    assert done.returncode == 0, done.stderr
    fitted = json.loads(out.read_text())
    assert "held out: median " in done.stdout and " -> median " in done.stdout
    assert f"wrote {out}" in done.stdout
    # a row per family: its cases, fitted and held out, before and after
    for family, (before, after) in fitted["families"].items():
        row = done.stdout.split(f"\n{family} ")[1].splitlines()[0]
        assert f"{before['median']:.2f}x" in row and f"{after['median']:.2f}x" in row
    assert sum(before["cases"] for before, _ in fitted["families"].values()) == fitted["cases"]
    # the figures printed are the file's
    assert f"median {fitted['held_out_after']['median']:.2f}x" in done.stdout.split("held out:")[1].splitlines()[0]
    # on the cases it was fitted on, the fit is never worse than the model it started from
    cases, _ = calibrate.cases_of(measured.read_ops_perf(CLIP))
    assert len(cases) == fitted["cases"]
    assert mean_abs_log(cases, fitted["constants"]) <= mean_abs_log(cases, fitted["before"])
    # of SFPU_OP_CYCLES only the entries of the unary ops the profile runs are fitted (the CLIP MLP's erf)
    assert set(fitted["constants"].get("SFPU_OP_CYCLES", {})) <= {"erf"}
    # a run with the file in its environment estimates with the fitted constants
    code = "import json; from device_sim import perf_model as m; print(json.dumps({n: getattr(m, n) for n in %r}))"
    env = {"PATH": "/usr/bin:/bin", perf_constants.ENV_VAR: str(out)}
    loaded = subprocess.run([sys.executable, "-c", code % list(fitted["constants"])], capture_output=True, text=True,
                            timeout=120, env=env, check=True)
    got = json.loads(loaded.stdout)
    for name, value in fitted["constants"].items():  # a table's fitted entries are merged into the model's
        assert ({k: got[name][k] for k in value} if isinstance(value, dict) else got[name]) == value


def test_a_report_with_a_profile_attached_calibrates_as_its_file_does(tmp_path):
    report = tmp_path / "demo"
    shutil.copytree(SAMPLE, report)
    assert cli("attach", report, CLIP).returncode == 0
    from_report = json.loads(cli("calibrate", report, "-o", tmp_path / "a.json", "--json").stdout)
    from_file = json.loads(cli("calibrate", CLIP, "-o", tmp_path / "b.json", "--json").stdout)
    assert {k: v for k, v in from_report.items() if k != "sources"} == \
        {k: v for k, v in from_file.items() if k != "sources"}


def test_device_operations_are_named_as_the_ttnn_call_that_runs_them():
    rows = measured.read_ops_perf(CLIP)
    cases, left_out = calibrate.cases_of(rows)
    assert left_out == 0
    named = {(c.op, c.family) for c in cases}
    # BinaryNgDeviceOperation's BinaryOpType::MUL is ttnn.multiply; UnaryDeviceOperation's UnaryOpType::ERF is erf;
    # a MinimalMatmulOp with a bias is ttnn.linear
    assert {("multiply", "eltwise_binary"), ("erf", "eltwise_unary"), ("linear", "matmul"),
            ("layer_norm", "norm"), ("embedding", "embedding")} <= named
    # a signature is one case, its time the median of its rows
    assert sum(c.rows for c in cases) == len(rows)


def test_a_report_without_measured_times_and_a_profile_of_nothing_it_prices_are_one_line_errors(tmp_path):
    report = tmp_path / "demo"
    shutil.copytree(SAMPLE, report)
    done = cli("calibrate", report, "-o", tmp_path / "c.json")
    assert done.returncode == 2 and "has no measured times attached; `ttreport attach" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    with open(CLIP, newline="") as f:
        header, row = list(csv.reader(f))[:2]
    row[header.index("OP CODE")] = "SomeNewDeviceOperation"
    only = tmp_path / "unknown_only.csv"
    with open(only, "w", newline="") as f:
        csv.writer(f).writerows([header, row])
    done = cli("calibrate", only, "-o", tmp_path / "c.json")
    assert done.returncode == 2 and "no device operation the model is fitted on" in done.stderr
    assert not (tmp_path / "c.json").exists()


def test_a_report_whose_attached_rows_were_altered_is_a_one_line_error(tmp_path):
    import sqlite3

    report = tmp_path / "demo"
    shutil.copytree(SAMPLE, report)
    assert cli("attach", report, CLIP).returncode == 0
    with sqlite3.connect(report / "db.sqlite") as con:  # the report is input: its rows are checked as the file's
        con.execute("UPDATE measured_perf SET inputs = NULL WHERE position = 3")
    done = cli("calibrate", report, "-o", tmp_path / "c.json")
    assert done.returncode == 2 and "measured_perf row 3 holds a value `ttreport attach` never writes" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "c.json").exists()


def test_a_profile_with_zero_dims_or_a_zero_kernel_time_calibrates_without_those_rows(tmp_path):
    with open(CLIP, newline="", encoding="utf-8-sig") as f:
        header, *rows = list(csv.reader(f))
    code, kernel = header.index("OP CODE"), header.index("DEVICE KERNEL DURATION [ns]")
    dims = [i for i, name in enumerate(header) if name.startswith(("INPUT_", "OUTPUT_")) and "PAD" in name]
    matmul = next(row for row in rows if "Matmul" in row[code])
    for i in dims:  # the file is input: a matmul of zero dims is not one the model can price
        matmul[i] = matmul[i] and "0"
    next(row for row in rows if "LayerNorm" in row[code])[kernel] = "0"  # no ratio to a zero time
    edited = tmp_path / "edited.csv"
    with open(edited, "w", newline="") as f:
        csv.writer(f).writerows([header, *rows])
    done = cli("calibrate", edited, "-o", tmp_path / "c.json", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["left_out"] == 2
