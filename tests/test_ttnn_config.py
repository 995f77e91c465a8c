"""ttnn.CONFIG and TTNN_CONFIG_OVERRIDES: TT-NN's fields, its errors, and a report with no code change."""

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
from device_sim import config as ttnn_config
from ttreport.ttnn_config import config_for

REPO = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import torch
    import device_sim as ttnn
    device = ttnn.open_device(0)
    a = ttnn.from_torch(torch.ones(32, 64), layout=ttnn.TILE, device=device, memory_config=ttnn.L1)
    b = ttnn.exp(a) + a
    print(ttnn.to_torch(b).sum().item())
""")


def run(tmp_path, overrides=None, **env):
    """SCRIPT, unchanged, in a fresh interpreter with only the TT-NN environment variables set."""
    script = tmp_path / "model.py"
    script.write_text(SCRIPT)
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("TTNN_", "TTREPORT_"))}
    environ["PYTHONPATH"] = str(REPO)  # this checkout's device_sim and ttreport, not another installed one
    if overrides is not None:
        environ["TTNN_CONFIG_OVERRIDES"] = overrides if isinstance(overrides, str) else json.dumps(overrides)
    environ.update(env)
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=environ, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def restore_config():
    saved = ttnn.CONFIG.to_dict()
    yield ttnn.CONFIG
    ttnn.load_config_from_dictionary(saved)


def test_the_overrides_alone_turn_an_unchanged_script_into_a_report(tmp_path):
    root = tmp_path / "reports"
    done = run(tmp_path, {"enable_fast_runtime_mode": False, "enable_logging": True, "report_name": "BERT run/1",
                          "root_report_path": str(root), "enable_detailed_buffer_report": True,
                          "enable_comparison_mode": True, "comparison_mode_pcc": 0.99})
    assert done.returncode == 0, done.stderr
    (report,) = root.iterdir()
    assert report.name.startswith("bert_run_1_")  # TT-NN's report_path: snake-cased name, then _mondd_HHMM
    con = sqlite3.connect(report / "db.sqlite")
    try:
        ops = [r[0] for r in con.execute("SELECT name FROM operations ORDER BY operation_id")]
        status = con.execute("SELECT value FROM report_metadata WHERE key = 'status'").fetchone()[0]
        pages = con.execute("SELECT COUNT(*) FROM buffer_pages").fetchone()[0]
        checks = con.execute("SELECT desired_pcc, matches FROM local_tensor_comparison_records").fetchall()
    finally:
        con.close()
    assert ops[:3] == ["ttnn.from_torch", "ttnn.exp", "ttnn.add"] and status == "complete"
    assert pages > 0  # enable_detailed_buffer_report is ttreport's buffer_pages
    assert checks and all(pcc == 0.99 and matches for pcc, matches in checks)  # comparison mode: local goldens


def test_reports_go_under_tt_nns_default_root_and_only_when_logging_is_on(tmp_path):
    done = run(tmp_path, None)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "generated").exists()
    done = run(tmp_path, {"enable_logging": True})  # no report_name: ttreport names it by the time
    assert done.returncode == 0, done.stderr
    (report,) = (tmp_path / "generated/ttnn/reports").iterdir()
    assert (report / "db.sqlite").is_file()


def test_an_unknown_key_fails_at_import_naming_the_known_ones(tmp_path):
    done = run(tmp_path, {"enable_loging": True})
    assert done.returncode != 0
    assert "ValueError: Unknown configuration key: enable_loging; the keys are: cache_path," in done.stderr
    assert "enable_logging" in done.stderr.splitlines()[-1]


@pytest.mark.parametrize("overrides, message", [
    ('{"enable_logging": tru}', "TTNN_CONFIG_OVERRIDES is not valid JSON"),
    ('["enable_logging"]', "must be a JSON object"),
    ('{"enable_logging": "yes"}', "ttnn.CONFIG.enable_logging must be true or false, got 'yes'"),
    ('{"comparison_mode_pcc": 2}', "comparison_mode_pcc must be a number between 0 and 1, got 2"),
])
def test_bad_overrides_fail_at_import_with_the_value_and_the_fix(tmp_path, overrides, message):
    done = run(tmp_path, overrides)
    assert done.returncode != 0 and message in done.stderr


def test_config_has_tt_nns_fields_and_defaults():
    c = ttnn.Config()
    assert list(c.to_dict()) == [
        "cache_path", "model_cache_path", "tmp_dir", "enable_model_cache", "enable_fast_runtime_mode",
        "throw_exception_on_fallback", "enable_logging", "enable_graph_report", "enable_detailed_buffer_report",
        "enable_detailed_tensor_report", "enable_comparison_mode", "comparison_mode_should_raise_exception",
        "comparison_mode_pcc", "root_report_path", "report_name"]
    assert (c.enable_fast_runtime_mode, c.comparison_mode_pcc, c.root_report_path, c.report_path) == \
        (True, 0.9999, Path("generated/ttnn/reports"), None)
    with pytest.raises(AttributeError, match="ttnn.Config has no field 'enable_loging'; the fields are: cache_path"):
        c.enable_loging = True


def test_report_path_is_snake_cased_truncated_and_stamped_once(tmp_path):
    c = ttnn.Config(report_name="A" * 70 + " -- x", root_report_path=tmp_path)
    assert c.report_path.parent == tmp_path and c.report_path.name.startswith("a" * 64 + "_")
    assert c.report_path == c.report_path  # the same minute on every read


def test_tt_nn_settings_map_onto_ttreports_config(tmp_path):
    c = ttnn.Config(enable_detailed_buffer_report=True, enable_detailed_tensor_report=True,
                    enable_comparison_mode=True, comparison_mode_pcc=0.99,
                    comparison_mode_should_raise_exception=True, root_report_path=tmp_path)
    r = config_for(c)
    assert (r.root, r.buffer_pages, r.tensors, r.comparison, r.comparison_pcc, r.raise_on_mismatch) == \
        (tmp_path, True, "all", "local", 0.99, True)
    plain = config_for(ttnn.Config())
    assert (plain.buffer_pages, plain.tensors, plain.comparison) == (False, "none", "off")


def test_logging_switched_off_and_on_pauses_and_resumes_one_report(tmp_path, device, restore_config):
    restore_config.root_report_path = tmp_path
    restore_config.report_name = "block"
    x = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=device)
    try:
        with ttnn.manage_config("enable_logging", True):
            capture = ttnn_config.active_reporter()
            ttnn.exp(x)
            with ttnn.manage_config("enable_logging", False):  # as model preprocessing does
                ttnn.neg(x)
            assert ttnn_config.active_reporter() is capture
            ttnn.sin(x)
        assert ttnn.get_hook() is None and capture.status is None  # paused, still open
        ttnn.cos(x)
    finally:
        ttnn_config.stop_reporting()
    assert capture.status == "complete" and capture.path.parent == tmp_path
    con = sqlite3.connect(capture.db_path)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM operations ORDER BY operation_id")]
    finally:
        con.close()
    assert names == ["ttnn.exp", "ttnn.sin"] and ttnn.CONFIG.enable_logging is False


def test_a_detailed_report_without_logging_warns_as_tt_nn_does(restore_config):
    with pytest.warns(UserWarning, match="enable_detailed_buffer_report is set but enable_logging is not"):
        ttnn.load_config_from_dictionary({"enable_detailed_buffer_report": True})


def test_a_missing_config_file_is_written_with_the_defaults_and_unknown_file_keys_warn(tmp_path, restore_config):
    path = tmp_path / "cfg" / "ttnn.json"
    ttnn_config.apply_environment({"TTNN_CONFIG_PATH": str(path)})
    assert json.loads(path.read_text())["comparison_mode_pcc"] == 0.9999
    path.write_text(json.dumps({"enable_model_cache": True, "old_key": 1}))
    with pytest.warns(UserWarning, match="Unknown configuration key: old_key"):
        ttnn_config.apply_environment({"TTNN_CONFIG_PATH": str(path)})
    assert ttnn.CONFIG.enable_model_cache is True


def test_ttreport_run_gives_an_import_ttnn_script_the_report_its_overrides_ask_for(tmp_path):
    # A script written for TT-NN says `import ttnn`: only `ttreport run` makes that device_sim, and the
    # capture enable_logging starts is the run's own (it used to fail: "a capture is already running").
    script = tmp_path / "model.py"
    script.write_text(SCRIPT.replace("import device_sim as ttnn", "import ttnn"))
    root = tmp_path / "reports"
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("TTNN_", "TTREPORT_"))}
    environ.update(PYTHONPATH=str(REPO), TTNN_CONFIG_OVERRIDES=json.dumps(
        {"enable_logging": True, "report_name": "run1", "root_report_path": str(root)}))

    def ttreport_run(*options):
        return subprocess.run([sys.executable, "-m", "ttreport.cli", "run", *options, str(script)], cwd=tmp_path,
                              env=environ, capture_output=True, text=True, timeout=120)

    done = ttreport_run()
    assert done.returncode == 0, done.stderr
    (report,) = root.iterdir()
    assert report.name.startswith("run1_") and f"report: {report}" in done.stdout
    con = sqlite3.connect(report / "db.sqlite")
    try:
        ops = [r[0] for r in con.execute("SELECT name FROM operations ORDER BY operation_id")]
        status = con.execute("SELECT value FROM report_metadata WHERE key = 'status'").fetchone()[0]
    finally:
        con.close()
    assert ops == ["ttnn.from_torch", "ttnn.exp", "ttnn.add", "ttnn.to_torch"] and status == "complete"
    named = ttreport_run("--name", "mine")
    assert named.returncode == 2 and "enable_logging already captures this run into" in named.stderr
    assert "leave out --name/--overwrite" in named.stderr and not (tmp_path / "generated").exists()
