"""TT-NN's performance report files: one ops_perf_results.csv row per device operation per chip, as TT-NN writes them.

A capture writes them at its close and `ttreport perf-csv` writes them from a finished report, both through
ttreport/export/ops_perf.py. A row is a program of an op's captured graph (the graph device_sim's program models
make, kept for every op by the default Config(device_graphs="distinct")), named as TT-NN's profiler names it
(OP CODE "MatmulDeviceOperation"), in launch order; an op that launches no program (from_torch, to_torch, a view,
deallocate) has none. What each row says is checked here against the report's own tables and against device_sim's
program models heard directly; tests/test_visualizer_performance.py shows ttnn-visualizer linking the two reports.

    .venv/bin/python -m pytest tests/test_ops_perf_csv.py -q
"""

import csv
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from click.testing import CliRunner
from programs_heard import launched  # tests/programs_heard.py

import device_sim as ttnn
import ttreport
from ttreport import db
from ttreport.cli import main
from ttreport.export.ops_perf import CALL_COUNT_CHIP_BITS, OPS_CSV_HEADER

SAMPLE = Path(__file__).resolve().parents[1] / "sample_reports" / "demo"
HOST_ONLY = {"from_torch", "to_torch", "reshape", "deallocate"}


def model(device):
    """Host-only ops and views, one-program ops, a linear with keyword arguments, and a 1x1 conv2d of a ROW_MAJOR
    input, which TT-NN runs as two device operations (a tilize, then a matmul)."""
    a = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.linear(a, a, bias=a, activation="relu")
    c = ttnn.softmax(b, dim=-1)
    ttnn.to_torch(ttnn.reshape(c, (1, 64, 64)))
    ttnn.to_torch(ttnn.from_torch(torch.randn(3, 5)))  # host to host
    x = ttnn.from_torch(torch.randn(1, 16, 16, 64), dtype=ttnn.bfloat16, device=device)
    w = ttnn.from_torch(torch.randn(128, 64, 1, 1), dtype=ttnn.bfloat16)
    ttnn.conv2d(input_tensor=x, weight_tensor=w, device=device, in_channels=64, out_channels=128, batch_size=1,
                input_height=16, input_width=16, kernel_size=(1, 1))
    ttnn.deallocate(b)
    ttnn.relu(a)
    return a, x, w


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    dev = ttnn.open_device(0)
    try:
        with ttreport.capture(tmp_path_factory.mktemp("perf") / "run") as cap:
            model(dev)
    finally:
        ttnn.close_device(dev)
    return cap.path


def rows(folder: Path) -> list[dict]:
    with open(folder / "ops_perf_results.csv", newline="") as f:
        return list(csv.DictReader(f))


def launches(report: Path) -> list[tuple]:
    """(op id, op name, program name, chip) of each program of each op's captured graph, in op order: read
    straight from the report's graph tables."""
    with sqlite3.connect(report / "db.sqlite") as con:
        graphs = con.execute("SELECT o.operation_id, o.name, d.captured_graph FROM operation_graphs g "
                             "JOIN operations o USING (operation_id) JOIN distinct_graphs d USING (graph_id) "
                             "ORDER BY o.operation_id").fetchall()
    return [(op_id, name, n["params"]["name"], int(n["params"]["device_id"])) for op_id, name, text in graphs
            for n in json.loads(text) if n["node_type"] == "function_start" and "device_id" in n["params"]]


def estimates(report: Path) -> dict[int, tuple]:
    with sqlite3.connect(report / "db.sqlite") as con:
        return {r[0]: r[1:] for r in con.execute("SELECT operation_id, compute_ns, bandwidth_ns, ideal_ns, "
                                                 "math_fidelity FROM device_perf")}


def test_each_program_of_each_op_is_a_row_named_as_tt_nn_names_it(run):
    got, want = rows(run), launches(run)
    assert [r["OP CODE"] for r in got] == [program for _, _, program, _ in want]
    by_op = [(name, program) for _, name, program, _ in want]
    assert by_op[:2] == [("ttnn.linear", "MatmulDeviceOperation"), ("ttnn.softmax", "SoftmaxDeviceOperation")]
    assert [p for name, p in by_op if name == "ttnn.conv2d"] == ["TilizeDeviceOperation", "MatmulDeviceOperation"]
    assert by_op[-1] == ("ttnn.relu", "UnaryDeviceOperation")
    with ttreport.open(run) as r:
        ran = {name.removeprefix("ttnn.") for name, in r.execute("SELECT name FROM operations")}
    assert ran >= HOST_ONLY  # they ran, and are not device rows: no program, no row
    assert not {r["OP CODE"] for r in got} & ran
    assert {r["OP TYPE"] for r in got} == {"tt_dnn_device"} and {r["DEVICE ID"] for r in got} == {"0"}


def test_global_call_count_is_tt_nns_device_operation_id(run):
    # TT-NN numbers each device operation it launches and writes the number times 1,024 plus the chip
    got = rows(run)
    assert [int(r["GLOBAL CALL COUNT"]) for r in got] == [(k << CALL_COUNT_CHIP_BITS) for k in range(1, len(got) + 1)]
    assert CALL_COUNT_CHIP_BITS == 10


def test_an_ops_estimate_is_shared_by_its_programs_and_is_each_rows_device_time(run):
    got, want, est = rows(run), launches(run), estimates(run)
    per_op: dict[int, list] = {}
    for row, (op_id, _, _, _) in zip(got, want):
        per_op.setdefault(op_id, []).append(row)
    assert max(len(v) for v in per_op.values()) == 2  # the conv2d
    for op_id, op_rows in per_op.items():
        compute, bandwidth, ideal, fidelity = est[op_id]
        for column, total in (("PM IDEAL [ns]", ideal), ("PM COMPUTE [ns]", compute),
                              ("PM BANDWIDTH [ns]", bandwidth)):
            assert sum(int(r[column]) for r in op_rows) == total, (op_id, column)
        assert {r["MATH FIDELITY"] for r in op_rows} == {fidelity or ""}
    for r in got:
        assert r["DEVICE KERNEL DURATION [ns]"] == r["DEVICE FW DURATION [ns]"] == r["PM IDEAL [ns]"]
        assert int(r["DEVICE FW END CYCLE"]) - int(r["DEVICE FW START CYCLE"]) == int(r["PM IDEAL [ns]"]) > 0
    # one chip's device operations end to end, in launch order
    assert [int(r["DEVICE FW START CYCLE"]) for r in got[1:]] == [int(r["DEVICE FW END CYCLE"]) for r in got[:-1]]


def test_core_count_is_the_programs_and_attributes_are_the_ops_keyword_arguments(run, device):
    got = rows(run)
    # device_sim's program models, heard directly on the same shapes: the cores each program's CBs live on
    a, x, w = model(device)
    heard = [*launched(device, lambda: ttnn.linear(a, a, bias=a, activation="relu")),
             *launched(device, lambda: ttnn.softmax(a, dim=-1))]
    cores = [sum((x1 - x0 + 1) * (y1 - y0 + 1) for x0, y0, x1, y1 in p.ranges) for p in heard]
    assert [int(r["CORE COUNT"]) for r in got[:2]] == cores
    assert len(set(cores)) == 2  # a matmul of 2x2 output tiles on 4 cores, the softmax on more
    assert [r["ATTRIBUTES"] for r in got[:2]] == ["{'activation': 'relu'}", "{'dim': '-1'}"]
    conv = [r["ATTRIBUTES"] for r in got[2:4]]
    assert conv[0] == conv[1] and "'kernel_size': '(1; 1)'" in conv[0]  # TT-NN writes ';' for every ','
    assert "device" not in conv[0] and "Tensor" not in conv[0]


def test_host_start_ts_rises_row_by_row_inside_each_ops_host_time(run):
    # tt-perf-report (and so the visualizer) sorts rows by HOST START TS before anything else
    got, want = rows(run), launches(run)
    with ttreport.open(run) as r:
        clocks = {op_id: (s, e) for op_id, s, e in r.execute("SELECT operation_id, start_ns, end_ns FROM operations")}
    starts = [int(r["HOST START TS"]) for r in got]
    assert starts == sorted(set(starts))
    for r, (op_id, _, _, _) in zip(got, want):
        start, end = clocks[op_id]
        assert start <= int(r["HOST START TS"]) < int(r["HOST END TS"]) == end


def test_the_device_log_has_each_rows_zone_on_its_chip_as_the_visualizer_reads_it(run):
    from ttnn_visualizer.csv_queries import DeviceLogProfilerQueries
    from ttnn_visualizer.utils import is_valid_performance_report_dir

    assert is_valid_performance_report_dir(run)
    got = rows(run)
    log = pd.read_csv(run / "profile_log_device.csv", skiprows=1)  # its ARCH line skipped, as the visualizer does
    log.columns = log.columns.str.strip()
    assert set(DeviceLogProfilerQueries.REQUIRED_DEVICE_LOG_COLUMNS) <= set(log.columns)
    zones = {(int(z["run host ID"]), z["type"]): (int(z["PCIe slot"]), int(z["time[cycles since reset]"]))
             for _, z in log.iterrows()}
    assert len(zones) == len(log) == 2 * len(got)
    for r in got:
        call, chip = int(r["GLOBAL CALL COUNT"]), int(r["DEVICE ID"])
        assert zones[call, "ZONE_START"] == (chip, int(r["DEVICE FW START CYCLE"]))
        assert zones[call, "ZONE_END"] == (chip, int(r["DEVICE FW END CYCLE"]))


def test_perf_csv_writes_the_demo_reports_files_with_tt_nns_columns(tmp_path):
    demo = Path(shutil.copytree(SAMPLE, tmp_path / "demo"))
    db.upgrade(demo / "db.sqlite")
    for name in ("ops_perf_results.csv", "profile_log_device.csv"):
        (demo / name).unlink(missing_ok=True)
    result = CliRunner().invoke(main, ["perf-csv", str(demo)])
    assert result.exit_code == 0, result.output
    got = rows(demo)
    header = got[0].keys()
    assert [c for c in OPS_CSV_HEADER if c not in ("INPUTS", "OUTPUTS")] == [c for c in header if c in OPS_CSV_HEADER]
    assert {"INPUT_0_W", "INPUT_0_X", "INPUT_0_MEMORY", "INPUT_0_DATATYPE", "OUTPUT_0_MEMORY"} <= set(header)
    assert [r["OP CODE"] for r in got] == [program for _, _, program, _ in launches(demo)]
    matmul = next(r for r in got if r["OP CODE"] == "MatmulDeviceOperation")
    assert matmul["MATH FIDELITY"] == "HiFi2" and matmul["INPUT_1_MEMORY"] == "DEV_0_DRAM_INTERLEAVED"


def test_the_two_files_are_written_both_or_neither(tmp_path):
    # the device log cannot be written (a folder stands at its name, as a full disk would fail it): the CSV, written
    # first, must not stay alone (a run killed under load left it so: tests/test_crash.py's full disk)
    demo = Path(shutil.copytree(SAMPLE, tmp_path / "demo"))
    db.upgrade(demo / "db.sqlite")
    for name in ("ops_perf_results.csv", "profile_log_device.csv"):
        (demo / name).unlink(missing_ok=True)
    (demo / "profile_log_device.csv").mkdir()
    result = CliRunner().invoke(main, ["perf-csv", str(demo)])
    assert result.exit_code != 0 and "profile_log_device.csv is a folder" in result.output, result.output
    assert not (demo / "ops_perf_results.csv").exists()
    assert sorted(p.name for p in demo.iterdir() if p.name.startswith(".")) == []  # no temporary file left


def test_a_report_captured_without_device_graphs_gets_the_header_and_no_rows(tmp_path, device):
    # no record of the device operations, so nothing to name a row after (docs/perf_model.md)
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(device_graphs=False)) as cap:
        model(device)
    with ttreport.open(cap.path) as r:
        assert r.execute("SELECT COUNT(*) FROM device_perf").fetchone()[0] > 0
    assert rows(cap.path) == [] and (cap.path / "ops_perf_results.csv").read_text().startswith("OP CODE,")


@pytest.mark.parametrize("graph", ["not json", "[1, 2]", '[{"node_type": "function_start", "params": {"name": "X", '
                                   '"device_id": "chip"}, "connections": []}]', "[" * 200_000])  # past json's depth
def test_a_damaged_captured_graph_is_a_one_line_error_naming_it(run, tmp_path, graph):
    report = Path(shutil.copytree(run, tmp_path / "damaged"))
    with sqlite3.connect(report / "db.sqlite") as con:
        gid = con.execute("SELECT MIN(graph_id) FROM distinct_graphs").fetchone()[0]
        con.execute("UPDATE distinct_graphs SET captured_graph = ? WHERE graph_id = ?", (graph, gid))
    con.close()
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "perf-csv", str(report), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"captured graph {gid} of distinct_graphs is not one" in done.stderr
    assert "capture the run again" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "ops_perf_results.csv").exists()


def test_a_time_that_is_not_an_integer_is_exported_blank(run, tmp_path):
    report = Path(shutil.copytree(run, tmp_path / "edited"))
    with sqlite3.connect(report / "db.sqlite") as con:  # the report is input: an edited estimate, not a traceback
        con.execute("UPDATE device_perf SET ideal_ns = 'abc'")
        con.execute("UPDATE operations SET start_ns = 'x'")
    con.close()
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "perf-csv", str(report), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    got = rows(tmp_path)
    assert got and all(row["DEVICE KERNEL DURATION [ns]"] == "" for row in got)
