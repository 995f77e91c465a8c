"""ttreport perf-csv: TT-NN's ops_perf_results.csv and profile_log_device.csv from the device time estimates.

    .venv/bin/python -m pytest tests/test_ops_perf_csv.py -q
"""

import csv
import shutil
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

import ttreport
from ttreport import db
from ttreport.cli import main
from ttreport.export.ops_perf import OPS_CSV_HEADER

SAMPLE = Path(__file__).resolve().parents[1] / "sample_reports" / "demo"


def test_the_report_folder_gets_tt_nns_performance_files_with_the_models_figures(tmp_path):
    from ttnn_visualizer.csv_queries import DeviceLogProfilerQueries
    from ttnn_visualizer.utils import is_valid_performance_report_dir, newest_ops_perf_file

    demo = Path(shutil.copytree(SAMPLE, tmp_path / "demo"))
    db.upgrade(demo / "db.sqlite")
    result = CliRunner().invoke(main, ["perf-csv", str(demo)])
    assert result.exit_code == 0, result.output
    assert is_valid_performance_report_dir(demo) and newest_ops_perf_file(demo) == demo / "ops_perf_results.csv"
    with open(demo / "ops_perf_results.csv") as f:
        rows = list(csv.DictReader(f))
        header = rows[0].keys()
    assert [c for c in OPS_CSV_HEADER if c not in ("INPUTS", "OUTPUTS")] == [c for c in header if c in OPS_CSV_HEADER]
    assert {"INPUT_0_W", "INPUT_0_X", "INPUT_0_MEMORY", "INPUT_0_DATATYPE", "OUTPUT_0_MEMORY"} <= set(header)
    with ttreport.open(demo) as r:
        stored = r.execute("SELECT operation_id, compute_ns, bandwidth_ns, ideal_ns, math_fidelity FROM device_perf "
                           "ORDER BY operation_id").fetchall()
        linear = r.execute("SELECT MIN(operation_id) FROM operations WHERE name = 'ttnn.linear'").fetchone()[0]
    assert [(int(x["GLOBAL CALL COUNT"]), int(x["PM COMPUTE [ns]"]), int(x["PM BANDWIDTH [ns]"]),
             int(x["PM IDEAL [ns]"]), x["MATH FIDELITY"] or None) for x in rows] == stored
    row = next(x for x in rows if int(x["GLOBAL CALL COUNT"]) == linear)
    assert (row["OP CODE"], row["OP TYPE"], row["MATH FIDELITY"]) == ("linear", "tt_dnn_device", "HiFi2")
    assert row["INPUT_1_MEMORY"] == "DEV_0_DRAM_INTERLEAVED" and row["INPUT_1_DATATYPE"] == "BFLOAT16"
    # the device log as the visualizer reads it: its ARCH line skipped, the header's spaces stripped
    log = pd.read_csv(demo / "profile_log_device.csv", skiprows=1)
    log.columns = log.columns.str.strip()
    assert set(DeviceLogProfilerQueries.REQUIRED_DEVICE_LOG_COLUMNS) <= set(log.columns)
    assert len(log) == 2 * len(rows)
    assert sorted(set(log["run host ID"])) == [s[0] for s in stored]
