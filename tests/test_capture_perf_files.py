"""A capture writes TT-NN's performance report files into its folder at close (Config.perf_files, on by default).

ops_perf_results.csv gets one row per device operation (each program of each op's captured graph), read
back from the db after the model's last op by the exporter `ttreport perf-csv` runs (the one route);
profile_log_device.csv sits beside it, so ttnn-visualizer accepts the folder as a performance report.
Config(perf_files=False) (or TTREPORT_CONFIG) leaves them out.
"""

import csv
import warnings

import pytest
import torch
from test_ops_perf_csv import launches  # tests/test_ops_perf_csv.py

import device_sim as ttnn
import ttreport
from ttreport.errors import ConfigError, ReportIncompleteWarning


def run(device):
    x = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    y = ttnn.relu(x)
    return ttnn.matmul(x, y)


def rows(path):
    with open(path / "ops_perf_results.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_a_capture_writes_one_csv_row_per_device_operation_at_close(tmp_path, device):
    with ttreport.capture(tmp_path / "r") as cap:
        run(device)
        assert not (cap.path / "ops_perf_results.csv").exists()  # nothing written while the model runs
    with ttreport.open(cap.path) as r:
        estimated = dict(r.execute("SELECT operation_id, ideal_ns FROM device_perf"))
    want = launches(cap.path)
    assert [(op, program) for _, op, program, _ in want] == [("ttnn.relu", "UnaryDeviceOperation"),
                                                              ("ttnn.matmul", "MatmulDeviceOperation")]
    assert [(row["OP CODE"], int(row["PM IDEAL [ns]"])) for row in rows(cap.path)] == [
        (program, estimated[op_id]) for op_id, _, program, _ in want]  # the from_torch launched no program
    log = (cap.path / "profile_log_device.csv").read_text().splitlines()
    assert log[0].startswith("ARCH: wormhole_b0")
    assert len(log) == 2 + 2 * len(want)  # ARCH line, header, a zone start and end per row


def test_perf_files_off_writes_neither_file(tmp_path, device):
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(perf_files=False)) as cap:
        run(device)
    assert not (cap.path / "ops_perf_results.csv").exists()
    assert not (cap.path / "profile_log_device.csv").exists()


def test_ttreport_config_turns_them_off_and_rejects_a_non_boolean(tmp_path, device, monkeypatch):
    monkeypatch.setenv("TTREPORT_CONFIG", '{"perf_files": false}')
    with ttreport.capture(tmp_path / "r") as cap:
        run(device)
    assert not (cap.path / "ops_perf_results.csv").exists()
    monkeypatch.setenv("TTREPORT_CONFIG", '{"perf_files": "yes"}')
    with pytest.raises(ConfigError, match=r"perf_files='yes' is not allowed; use true or false"):
        ttreport.Config.from_env()


def test_overwriting_a_report_removes_its_old_perf_files(tmp_path, device):
    with ttreport.capture(tmp_path / "r") as cap:
        run(device)
    assert (cap.path / "ops_perf_results.csv").exists()
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(overwrite=True, perf_files=False)) as cap:
        run(device)
    assert not (cap.path / "ops_perf_results.csv").exists()  # stale figures of the old run would mislead
    assert not (cap.path / "profile_log_device.csv").exists()


def test_a_folder_it_cannot_write_them_into_warns_and_keeps_the_report(tmp_path, device):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ttreport.capture(tmp_path / "r") as cap:
            run(device)
            (cap.path / "ops_perf_results.csv").mkdir()  # a folder where the file goes: the write fails
    messages = [str(w.message) for w in caught if issubclass(w.category, ReportIncompleteWarning)]
    assert len(messages) == 1 and "ttreport perf-csv" in messages[0]
    with ttreport.open(cap.path) as r:
        assert r.summary().status == "complete"
