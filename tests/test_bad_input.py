"""Bad input gets a one-line error naming the file and the problem, and harms nothing.

Library: a specific exception class from ttreport.errors. CLI: exit status 2, one line, no
traceback. Received reports are untrusted: a pickle payload in a .pt file never runs, paths
never leave the report folder, and `ttreport query` cannot change a report or create a file.
"""

import hashlib
import os
import pickle
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport.cli import main
from ttreport.errors import ConfigError, TensorFileError, TTReportError

TTREPORT = str(Path(sys.executable).with_name("ttreport"))


def invoke(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False, env=env)


def assert_one_line_error(result, *words):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    for w in words:
        assert str(w) in lines[0], (w, lines[0])


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """A real report with tensors stored both ways: .pt (the default) and .bin (detach off)."""
    root = tmp_path_factory.mktemp("reports")
    device = ttnn.open_device(0)
    try:
        for name, detach in (("pt", True), ("bin", False)):
            cfg = ttreport.Config(root=root, tensors="outputs", detach_saved_tensors=detach)
            with ttreport.capture(name, config=cfg):
                a = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
                a + a
    finally:
        ttnn.close_device(device)
    return root


@pytest.fixture
def report(sample, tmp_path):
    """A fresh copy of the .pt report to damage; .tensor_id is an output whose file is stored."""
    path = tmp_path / "copy"
    shutil.copytree(sample / "pt", path)
    return path


def assert_refused_to_start(cap, error, match):
    try:
        with pytest.raises(error, match=match):
            cap.start()
    finally:
        cap.stop()  # a start that wrongly succeeded must not leave its hook to the next test


def first_stored(path: Path) -> tuple[int, Path]:
    with ttreport.open(path) as r:
        t = next(t for t in r.tensors() if t.file)
    return t.id, path / t.file


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- damaged files ---------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_a_damaged_db_is_a_one_line_error(report, damage):
    db = report / "db.sqlite"
    blob = db.read_bytes()
    db.write_bytes({"garbage": os.urandom(len(blob)), "truncated": blob[:len(blob) // 3], "empty": b""}[damage])
    with pytest.raises(TTReportError, match=str(db)):
        ttreport.open(report).close()
    assert_one_line_error(invoke("summary", report), db)
    result = invoke("check", report)
    assert result.exit_code != 0 and str(db) in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("damage", ["truncated", "garbage", "missing"])
@pytest.mark.parametrize("kind", ["pt", "bin"])
def test_a_damaged_or_missing_tensor_file_is_a_one_line_error(sample, tmp_path, kind, damage):
    path = tmp_path / kind
    shutil.copytree(sample / kind, path)
    tid, file = first_stored(path)
    assert file.suffix == f".{kind}"
    if damage == "missing":
        file.unlink()
    else:
        blob = file.read_bytes()
        file.write_bytes(blob[:len(blob) // 2] if damage == "truncated" else os.urandom(len(blob)))
    named = str(tid) if damage == "missing" else str(file)
    with ttreport.open(path) as r, pytest.raises(TensorFileError, match=named):
        r.load_tensor(tid)
    assert_one_line_error(invoke("tensor", path, tid), named)
    faults = ttreport.check(path)
    assert len(faults) == 1 and f"tensor {tid}" in faults[0], faults


def test_a_report_from_a_newer_ttreport_says_so(report):
    con = sqlite3.connect(report / "db.sqlite")
    with con:
        con.execute("UPDATE alembic_version SET version_num = 'ffff_from_the_future'")
    con.close()
    with pytest.raises(TTReportError, match="ffff_from_the_future") as e:
        ttreport.open(report)
    assert "newer ttreport" in str(e.value) and "upgrade it in place" not in str(e.value), "upgrading cannot help"
    assert_one_line_error(invoke("summary", report), "ffff_from_the_future", "newer ttreport")
    assert_one_line_error(invoke("upgrade", report), "ffff_from_the_future", "newer ttreport")
    assert "needs a newer ttreport" in invoke("ls", report.parent).output


# -- a pickle payload never runs ---------------------------------------------------------------
class _Payload:
    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (Path.touch, (Path(self.target),))


def test_a_pickle_payload_in_a_pt_file_is_never_executed(report, tmp_path):
    tid, file = first_stored(report)
    target = tmp_path / "pwned"
    with open(file, "wb") as f:
        pickle.dump(_Payload(target), f)  # a plain pickle (torch.load reads those too)
    other_tid = tid
    with ttreport.open(report) as r, pytest.raises(TensorFileError, match=str(file)):
        r.load_tensor(other_tid)
    with pytest.raises(TensorFileError):
        ttreport.load_tensor(report, tid)
    cli = subprocess.run([TTREPORT, "tensor", str(report), str(tid)], capture_output=True, text=True)
    assert cli.returncode == 2 and "Traceback" not in cli.stderr, cli.stderr
    assert str(file) in cli.stderr
    faults = ttreport.check(report)
    assert any(str(file) in f for f in faults), faults
    # torch.save's own zip format, with the payload inside: the same refusal.
    torch.save({"t": torch.ones(1), "x": _Payload(target)}, file)
    with pytest.raises(TensorFileError):
        ttreport.load_tensor(report, tid)
    cli = subprocess.run([TTREPORT, "tensor", str(report), str(tid)], capture_output=True, text=True)
    assert cli.returncode == 2
    assert not target.exists(), "the payload ran"


def test_refusing_a_pickle_never_advises_loading_it_with_weights_only_false(report, tmp_path):
    # A report from before tensor files had checksums (its tensor_files rows gone): the file is loaded,
    # and torch refuses the pickled object. Its advice to re-run with weights_only=False is not passed on.
    tid, file = first_stored(report)
    con = sqlite3.connect(report / "db.sqlite")
    con.execute("DELETE FROM tensor_files")
    con.commit()
    con.close()
    torch.save({"t": torch.ones(1), "x": _Payload(tmp_path / "pwned")}, file)
    with pytest.raises(TensorFileError) as e:
        ttreport.load_tensor(report, tid)
    message = str(e.value)
    assert "never loads those (loading them could run arbitrary code)" in message, message
    assert "GLOBAL" in message and "weights_only" not in message and "\n" not in message
    assert not (tmp_path / "pwned").exists()


# -- paths stay inside the report root ---------------------------------------------------------
@pytest.mark.parametrize("name", ["..", ".", ""])
def test_report_names_cannot_escape_the_root(tmp_path, name):
    # A string holding a separator ("../x", "/tmp/abs") is a path, the user's explicit choice like a
    # pathlib.Path (test_capture); a plain name stays inside the root.
    root = tmp_path / "root"
    assert_refused_to_start(ttreport.capture(name, config=ttreport.Config(root=root)), ValueError, "plain folder name")
    assert not root.exists()


def test_a_report_name_that_is_a_symlink_out_of_the_root_is_refused(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside)
    assert_refused_to_start(ttreport.capture("link", config=ttreport.Config(root=root)), TTReportError, "link")
    assert list(outside.iterdir()) == []


def test_a_tensor_file_that_is_a_symlink_out_of_the_report_is_refused(report, tmp_path):
    tid, file = first_stored(report)
    secret = tmp_path / "secret.pt"
    torch.save(torch.arange(3), secret)
    file.unlink()
    file.symlink_to(secret)
    with pytest.raises(TensorFileError, match="outside"):
        ttreport.load_tensor(report, tid)
    assert any("outside" in f for f in ttreport.check(report))


def test_a_file_column_pointing_out_of_the_report_is_a_fault(report):
    tid, _ = first_stored(report)
    con = sqlite3.connect(report / "db.sqlite")
    with con:
        con.execute("UPDATE tensors SET file = '../../../etc/passwd' WHERE tensor_id = ?", (tid,))
    con.close()
    faults = ttreport.check(report)
    assert faults == [f"tensor {tid}: file '../../../etc/passwd' points outside the report folder {report}"]


# -- query cannot write ------------------------------------------------------------------------
WRITES = [
    "INSERT INTO report_metadata (key, value) VALUES ('x', 'y')",
    "UPDATE operations SET name = 'x'",
    "DELETE FROM operations",
    "DROP TABLE operations",
    "CREATE TABLE x (a)",
    "CREATE TEMP TABLE x (a)",
    "PRAGMA user_version = 5",
    "PRAGMA journal_mode = WAL",
    "PRAGMA query_only = 0",
    "PRAGMA writable_schema = 1",
    "REINDEX",
    "VACUUM",
]


@pytest.mark.parametrize("sql", WRITES)
def test_query_refuses_every_write(report, sql):
    db = report / "db.sqlite"
    before = digest(db)
    result = invoke("query", report, sql)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "read-only" in result.output
    with ttreport.open(report) as r, pytest.raises(TTReportError, match="read-only"):
        r.sql(sql)
    assert digest(db) == before and sorted(p.name for p in report.iterdir()) == [
        "cluster_descriptor.yaml", "config.json", "db.sqlite", "ops_perf_results.csv", "profile_log_device.csv",
        "tensors"]  # as captured


@pytest.mark.parametrize("sql", ["ATTACH DATABASE '{new}' AS x", "VACUUM INTO '{new}'"])
def test_query_cannot_create_a_file(report, tmp_path, sql):
    new = tmp_path / "created.db"
    before = digest(report / "db.sqlite")
    result = invoke("query", report, sql.format(new=new))
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    with ttreport.open(report) as r, pytest.raises(TTReportError):
        r.sql(sql.format(new=new))
    assert not new.exists()
    assert digest(report / "db.sqlite") == before


def test_query_still_reads_and_reading_pragmas_work(report):
    with ttreport.open(report) as r:
        assert r.sql("PRAGMA integrity_check") == [{"integrity_check": "ok"}]
        assert any(c["name"] == "operation_id" for c in r.sql("PRAGMA table_info(operations)"))
        assert r.sql("SELECT COUNT(*) AS n FROM operations")[0]["n"] == 2


# -- TTREPORT_CONFIG ---------------------------------------------------------------------------
@pytest.mark.parametrize("text, key", [
    ('{"tensorz": "all"}', "tensorz"),
    ('{"tensors": "everything"}', "tensors"),
    ('{"flush_ops": 0}', "flush_ops"),
    ('{"flush_interval_s": "soon"}', "flush_interval_s"),
    ('{"stack_traces": "yes"}', "stack_traces"),
    ('{"max_tensor_bytes": -1}', "max_tensor_bytes"),
    ('["tensors"]', "TTREPORT_CONFIG"),
    ("{tensors: all}", "TTREPORT_CONFIG"),
])
def test_a_bad_ttreport_config_is_refused_naming_the_key(tmp_path, monkeypatch, text, key):
    monkeypatch.setenv("TTREPORT_CONFIG", text)
    assert_refused_to_start(ttreport.capture(tmp_path / "r"), ConfigError, key)
    assert not (tmp_path / "r").exists()
    script = tmp_path / "model.py"
    script.write_text("print('the model ran')\n")
    result = invoke("run", "--name", tmp_path / "r", script, env={"TTREPORT_CONFIG": text})
    assert_one_line_error(result, key)
    assert "the model ran" not in result.output
