"""Recovering a report from its op log never loses an op (issue 29, round two: items 3, 4, 7 and 12).

A process writer's capture leaves `oplog/` beside db.sqlite when it is killed; readers rebuild the report
from it (ttreport.recovery: recover -> finish_from_log). These tests make the
folders that went wrong: a stray or half-deleted log beside a complete report, a writer process killed at
each step of its close, a config.json whose options would make the rebuild spin, a read-only folder whose
log holds more than its db. Captures run in real processes forked from one "zygote" interpreter (torch and
ttreport imported once, as in test_crash.py); readers run as the real `ttreport` command, each with a
timeout.
"""

import hashlib
import json
import os
import select
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import ttreport

REPO = Path(__file__).resolve().parent.parent
READER_TIMEOUT_S = 60  # a reader that runs past this hangs: the rebuild of these small logs takes ~1 s
SEGMENT_BYTES = 64 << 10  # ~200 ops a segment: a 1,000-op capture spans 5 of them

ZYGOTE = r"""
import json, os, pathlib, shutil, signal, sys
import torch
import device_sim as ttnn
import ttreport
from ttreport.capturing import oplog

def run(job):
    os.environ.update(job.get("env", {}))  # the writer process is forked from here: it inherits them
    oplog.SEGMENT_BYTES = oplog.MIN_SEGMENT_BYTES = job["segment_bytes"]
    oplog.RESERVE_BYTES = 4096
    report = pathlib.Path(job["report"])
    dev = ttnn.open_device(0)
    cap = ttreport.capture(report, config=ttreport.Config(writer="process"))
    with cap:
        a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
        for i in range(2, job["ops"] + 1):
            if i == job.get("kill_writer_at"):  # the db holds the ops before i; the log holds them all
                cap.flush(timeout=60)
                os.kill(cap._writer.pid, signal.SIGKILL)
            a = a + 1
        if job.get("copy_log"):  # every op is in the log: keep a copy of it as the close is about to delete it
            cap.flush(timeout=60)
            shutil.copytree(report / "oplog", job["copy_log"])
        if job.get("kill_writer_at"):
            os.kill(os.getpid(), signal.SIGKILL)
    ttnn.close_device(dev)
    pathlib.Path(job["result"]).write_text(json.dumps({"writer_exit": cap._writer.returncode, "status": cap.status}))

for line in sys.stdin:
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            run(job)
            code = 0
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    print("exit", os.waitstatus_to_exitcode(status), flush=True)
"""


class Zygote:
    """One interpreter with torch and ttreport imported; capture(...) forks a child of it per capture."""

    def __init__(self, folder: Path):
        (folder / "zygote.py").write_text(ZYGOTE)
        self.folder = folder
        self.proc = subprocess.Popen([sys.executable, str(folder / "zygote.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=REPO)

    def capture(self, report: Path, ops: int, timeout_s: float = 120, **job) -> dict:
        """Capture `ops` ops into `report` in a forked child; its exit code, and what it said of its close."""
        result = report.with_suffix(".json")
        job = {"report": str(report), "ops": ops, "segment_bytes": SEGMENT_BYTES, "result": str(result), **job}
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        assert ready, f"the capture into {report} did not end within {timeout_s} s"
        line = self.proc.stdout.readline()
        assert line.startswith("exit"), f"the zygote died (exit {self.proc.poll()})"
        return {"exit": int(line.split()[1]), **(json.loads(result.read_text()) if result.exists() else {})}

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    z = Zygote(tmp_path_factory.mktemp("zygote"))
    yield z
    z.close()


def ttreport_cli(*args, timeout_s: float = READER_TIMEOUT_S) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-m", "ttreport.cli", *map(str, args)], cwd=REPO,
                              capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`ttreport {' '.join(map(str, args))}` hung (still running after {timeout_s} s)")


def db_facts(report: Path) -> tuple[int, dict]:
    """The db's op count and report_metadata, read straight from the file (no reader's fold)."""
    con = sqlite3.connect(f"file:{report / 'db.sqlite'}?mode=ro", uri=True)
    try:
        return (con.execute("SELECT COUNT(*) FROM operations").fetchone()[0],
                dict(con.execute("SELECT key, value FROM report_metadata")))
    finally:
        con.close()


def folder_state(report: Path) -> dict:
    """What "left as it was" compares: every file but the db's with its bytes' hash, and the db's rows (its
    bytes move as any reader's connection folds its WAL, SQLite's own recovery, which changes no row). Not
    .reserve: a killed capture's room for its closing notes, which the first reader to take the folder's lock
    deletes (recovery.recover)."""
    con = sqlite3.connect(f"file:{report / 'db.sqlite'}?mode=ro", uri=True)
    try:
        rows = hashlib.sha256("\n".join(con.iterdump()).encode()).hexdigest()
    finally:
        con.close()
    return {"db.sqlite rows": rows, **{str(p.relative_to(report)): hashlib.sha256(p.read_bytes()).hexdigest()
                                       for p in sorted(report.rglob("*"))
                                       if p.is_file() and not p.name.startswith("db.sqlite") and p.name != ".reserve"}}


# -- item 3: a read command never replaces a db with one holding fewer ops ----------------------------
def test_an_empty_op_log_beside_a_complete_report_is_not_rebuilt_from(zygote, tmp_path):
    report = tmp_path / "r"
    assert zygote.capture(report, 66)["status"] == "complete"
    (report / "oplog").mkdir()  # a stray, empty log: summary rebuilt a 0-op report from it
    before = folder_state(report)
    out = ttreport_cli("summary", report)
    assert out.returncode == 0, out.stderr
    ops, meta = db_facts(report)
    assert ops == 66 and meta["status"] == "complete"
    assert (report / "oplog").is_dir() and folder_state(report) == before
    check = ttreport_cli("check", report)
    assert check.returncode == 1 and "oplog" in check.stdout and "complete" in check.stdout, check.stdout
    assert len(check.stdout.splitlines()) == 1
    repaired = ttreport_cli("check", "--repair", report)  # the fix it names: the log is deleted, the db kept
    assert repaired.returncode == 0 and not (report / "oplog").exists(), repaired.stdout
    assert db_facts(report)[0] == 66


def test_a_rebuild_that_would_hold_fewer_ops_than_the_db_is_refused_and_said(zygote, tmp_path):
    report = tmp_path / "r"
    zygote.capture(report, 400, kill_writer_at=300)  # the writer and the model killed: status running
    ops, meta = db_facts(report)
    assert meta["status"] == "running" and ops == 299
    shutil.rmtree(report / "oplog")
    (report / "oplog").mkdir()  # a log holding nothing: a rebuild from it would hold 0 of the db's 299 ops
    before = folder_state(report)
    out = ttreport_cli("summary", report)
    assert out.returncode == 0, out.stderr
    assert db_facts(report)[0] == 299 and folder_state(report) == before
    said = [line for line in out.stderr.splitlines() if "oplog" in line]
    assert len(said) == 1 and "299" in said[0], out.stderr
    check = ttreport_cli("check", report)
    assert "oplog" in check.stdout and "would lose 299 ops" in check.stdout, check.stdout


# -- item 4: a kill at any step of the close leaves the whole log or a complete db --------------------
def test_a_half_deleted_log_beside_a_complete_report_loses_no_op(zygote, tmp_path):
    # What a kill of the writer process as it deleted the log left: the close rebuilt 98,635 of 250,000 ops.
    report, copy = tmp_path / "r", tmp_path / "log-copy"
    assert zygote.capture(report, 1000, copy_log=str(copy))["status"] == "complete"
    segments = sorted(copy.glob("*.seg"))
    assert len(segments) >= 4
    segments[2].unlink()  # deleted before the kill; the first two stayed
    shutil.copytree(copy, report / "oplog")
    out = ttreport_cli("summary", report)
    assert out.returncode == 0, out.stderr
    ops, meta = db_facts(report)
    assert ops == 1000 and meta["status"] == "complete"


def test_a_log_marked_done_is_deleted_by_the_next_reader_and_named_where_it_cannot_be(zygote, tmp_path):
    # A kill after the rename to oplog.done, with no capture left to finish it: the report holds every op.
    report, copy = tmp_path / "r", tmp_path / "log-copy"
    zygote.capture(report, 1000, copy_log=str(copy))
    shutil.copytree(copy, report / "oplog.done")
    (report / "oplog.done" / "000001.seg").unlink()  # its deletion had begun
    check = read_only(report, "check", report)
    assert check.returncode == 1 and "oplog.done" in check.stdout and "Traceback" not in check.stderr, check
    out = ttreport_cli("summary", report)
    assert out.returncode == 0 and not (report / "oplog.done").exists(), out.stderr
    assert db_facts(report)[0] == 1000 and ttreport.check(report) == []


def test_an_op_log_that_is_a_link_is_never_read(zygote, tmp_path):
    report, elsewhere = tmp_path / "r", tmp_path / "elsewhere"
    zygote.capture(report, 400, kill_writer_at=300)
    (report / "oplog").rename(elsewhere)  # a log of 400 ops outside the folder, linked in
    (report / "oplog").symlink_to(elsewhere)
    segments = sorted(elsewhere.glob("*.seg"))
    out = ttreport_cli("summary", report)
    assert out.returncode == 0 and "link" in out.stderr, out.stderr
    assert db_facts(report)[0] == 299 and sorted(elsewhere.glob("*.seg")) == segments
    assert "not an op log that is read" in ttreport_cli("check", report).stdout


# -- item 7: options read back from config.json are validated; a bad one never makes a reader spin ---------
@pytest.mark.parametrize("bad", [{"flush_ops": 0}, {"flush_ops": -1}, {"flush_ops": "2000"}, {"flush_ops": None},
                                 {"buffer_pages": "yes"}], ids=repr)
def test_a_bad_option_in_config_json_never_hangs_the_rebuild(zygote, tmp_path, bad):
    report = tmp_path / "reports" / "r"
    report.parent.mkdir()
    zygote.capture(report, 400, kill_writer_at=300)
    config = json.loads((report / "config.json").read_text())
    config["config"].update(bad)
    (report / "config.json").write_text(json.dumps(config))
    listed = ttreport_cli("ls", report.parent)
    assert listed.returncode == 0 and " 400 " in listed.stdout, listed.stdout + listed.stderr
    ops, meta = db_facts(report)
    assert ops == 400 and not (report / "oplog").exists()  # rebuilt with the default options, which it notes
    assert f"config.json's {bad}" in meta["log_finished"], meta["log_finished"]
    summary = ttreport_cli("summary", report)
    assert summary.returncode == 0 and "Traceback" not in summary.stderr, summary.stderr


def test_a_kill_of_the_writer_process_at_each_step_of_its_close_loses_no_op(zygote, tmp_path):
    # The steps (writer_process._Steps): 1 the db closed, 2 its status committed, 3 the log renamed oplog.done,
    # then one per segment deleted. Killed at each, the capture's close finishes the report from what is left.
    step, kills = 1, 0
    while True:
        report = tmp_path / f"step-{step}"
        result = zygote.capture(report, 1000, env={"TTREPORT_TEST_KILL_STEP": str(step)})
        assert result["exit"] == 0 and result["status"] == "complete", result
        ops, meta = db_facts(report)
        assert (ops, meta["status"]) == (1000, "complete"), f"killed at step {step}"
        assert not (report / "oplog").exists() and not (report / "oplog.done").exists(), f"killed at step {step}"
        assert ttreport.check(report) == [], f"killed at step {step}"
        if result["writer_exit"] == 0:  # past the last step: nothing left to kill
            break
        assert result["writer_exit"] == -9
        step, kills = step + 1, kills + 1
    assert kills >= 3 + 4, "the steps: the db closed, its status, the rename, and a kill after each of 4+ segments"


# -- item 12: a folder no reader can write says that its op log holds more than its db ----------------------
def read_only(report: Path, *args) -> subprocess.CompletedProcess:
    """`ttreport ARGS` with `report` read-only: a read-only bind mount of it in a mount namespace of the command's
    own when run as root (root ignores file modes), else the folder and its files made unwritable."""
    if os.geteuid() != 0:
        paths = [report, *report.rglob("*")]
        for p in paths:
            p.chmod(p.stat().st_mode & ~0o222)
        try:
            return ttreport_cli(*args)
        finally:
            for p in paths:
                p.chmod(p.stat().st_mode | 0o200)
    unshare = shutil.which("unshare")
    command = [sys.executable, "-m", "ttreport.cli", *map(str, args)]
    probe = subprocess.run([unshare, "-m", "true"], capture_output=True) if unshare else None
    if probe is None or probe.returncode != 0:
        pytest.skip("running as root, and no mount namespace to mount the report read-only in (unshare -m)")
    try:
        return subprocess.run([unshare, "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(report),
                               *command], cwd=REPO, capture_output=True, text=True, timeout=READER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`ttreport {' '.join(map(str, args))}` hung on a read-only folder")


def test_a_read_only_folder_says_its_op_log_holds_ops_its_db_lacks(zygote, tmp_path):
    report = tmp_path / "r"
    zygote.capture(report, 1000, kill_writer_at=300)  # the db holds 299 ops; the log all 1,000
    assert db_facts(report)[0] == 299
    check = read_only(report, "check", report)
    assert check.returncode == 1, check.stdout + check.stderr
    said = [line for line in check.stdout.splitlines() if "oplog" in line]
    assert len(said) == 1 and "holding 1,000 ops, db.sqlite 299" in said[0] and "--repair" in said[0], check.stdout
    summary = read_only(report, "summary", report)
    assert summary.returncode == 0, summary.stderr
    status = next(line for line in summary.stdout.splitlines() if line.startswith("status"))
    assert "an op log left beside it: oplog/" in status, summary.stdout
    assert db_facts(report)[0] == 299 and (report / "oplog").is_dir()  # nothing was written
    repaired = ttreport_cli("check", "--repair", report)  # writable again: the fix it names
    assert db_facts(report)[0] == 1000 and not (report / "oplog").exists(), repaired.stdout + repaired.stderr
