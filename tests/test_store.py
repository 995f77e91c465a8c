"""The PostgreSQL store (issue 15): push, re-push, concurrent and killed pushes, runs, history, and the
same answers from a run in the store as from its folder. Against a real server (conftest.py's postgres_cluster):
skipped, saying why, where no PostgreSQL server can be started."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport import store
from ttreport.cli import main
from ttreport.store import throwaway as postgres

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def url(postgres_cluster, tmp_path, monkeypatch):
    """A fresh database with a tensor store; runs are cached under tmp_path."""
    monkeypatch.setenv("TTREPORT_STORE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "tensor-store").mkdir()
    return f"{postgres_cluster.new_database()}&tensors={tmp_path / 'tensor-store'}"


def model(device, scale=1.0):
    g = torch.Generator().manual_seed(0)
    x = ttnn.from_torch(torch.randn(64, 128, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                        memory_config=ttnn.L1_MEMORY_CONFIG)  # so that each op has an L1 figure
    w = ttnn.from_torch(torch.randn(128, 64, generator=g) * scale, dtype=ttnn.bfloat16, layout=ttnn.TILE,
                        device=device)
    return ttnn.relu(ttnn.add(ttnn.matmul(x, w), 1.0))


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """One report with tensor files and golden checks, captured once for the module."""
    folder = tmp_path_factory.mktemp("reports") / "base"
    dev = ttnn.open_device(0)
    try:
        with ttreport.capture(folder, config=ttreport.Config(tensors="all", comparison="local")):
            model(dev)
    finally:
        ttnn.close_device(dev)
    return folder


def copy_report(src: Path, dst: Path, *, slower: float = 1.0, device_slower: float = 1.0) -> Path:
    """Another report: src's files under a new identity (and, given `slower`, its matmuls that much slower on the
    host; given `device_slower`, in the model's device estimate)."""
    import shutil

    shutil.copytree(src, dst)
    con = sqlite3.connect(dst / "db.sqlite")
    with con:
        con.execute("UPDATE report_metadata SET value = ? WHERE key = 'report_id'", (str(uuid.uuid4()),))
        con.execute("UPDATE operations SET duration = duration * ? WHERE name = 'ttnn.matmul'", (slower,))
        con.execute("UPDATE device_perf SET ideal_ns = CAST(ideal_ns * ? AS INTEGER) WHERE operation_id IN "
                    "(SELECT operation_id FROM operations WHERE name = 'ttnn.matmul')", (device_slower,))
    con.close()
    return dst


def counts(url) -> dict:
    import psycopg

    from ttreport.store.connection import split_url

    with psycopg.connect(split_url(url)[0]) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables}


def test_a_capture_writes_a_uuid_identity(captured):
    con = sqlite3.connect(captured / "db.sqlite")
    (value,) = con.execute("SELECT value FROM report_metadata WHERE key = 'report_id'").fetchone()
    con.close()
    assert uuid.UUID(value).version == 4


def test_pushing_a_report_twice_adds_it_once(url, captured):
    run_id, added = store.push(captured, url)
    assert added
    before = counts(url)
    assert before["operations"] == ttreport.open(captured).summary().operations > 0
    assert store.push(captured, url) == (run_id, False)
    assert counts(url) == before
    [run] = store.runs(url)
    assert (run["run_id"], run["name"], run["status"]) == (run_id, "base", "complete")


def test_a_run_from_the_store_answers_as_its_folder_does(url, captured):
    store.push(captured, url, name="nightly-1")
    folder = ttreport.open(captured)
    with ttreport.open(url, run="nightly-1") as run:
        assert run.summary() == folder.summary()
        fields = lambda ops: [(o.id, o.name, o.duration, o.l1_bytes, o.arguments,  # noqa: E731
                               [(t.id, t.shape, t.buffer_type, t.address) for t in o.output_tensors])
                              for o in ops]
        assert fields(run.operations()) == fields(folder.operations())
        q = "SELECT name, COUNT(*), SUM(duration) FROM operations GROUP BY name ORDER BY name"
        assert run.sql(q) == folder.sql(q)
        out_id = folder.operations(name="ttnn.matmul")[0].output_tensors[0].id
        assert torch.equal(run.load_tensor(out_id), folder.load_tensor(out_id))
    runner = CliRunner()
    for args in (["summary"], ["ops", "--limit", "0"], ["op", "4"],
                 ["query", "SELECT name, duration FROM operations ORDER BY operation_id"]):
        a = runner.invoke(main, [args[0], url, "--run", "nightly-1", *args[1:]])
        b = runner.invoke(main, [args[0], str(captured), *args[1:]])
        assert a.exit_code == b.exit_code == 0, (a.output, b.output)
        assert a.output.replace(str(ttreport.open(url, run="nightly-1").path), "P") == \
            b.output.replace(str(captured), "P"), args


def test_compare_reads_two_runs_of_the_store(url, captured, tmp_path):
    store.push(captured, url, name="a")
    store.push(copy_report(captured, tmp_path / "b"), url, name="b")
    r = CliRunner().invoke(main, ["compare", url, "--run", "a", url, "--run", "b"])
    assert r.exit_code == 0, r.output
    assert "identical" in r.output.lower() or "match" in r.output.lower()


def test_history_flags_the_run_where_an_op_got_slower(url, captured, tmp_path):
    store.push(captured, url, name="n1")
    store.push(copy_report(captured, tmp_path / "n2", slower=3.0), url, name="n2")  # host time alone moved
    store.push(copy_report(captured, tmp_path / "n3", slower=3.0, device_slower=2.0), url, name="n3")
    rows = store.history(url, "ttnn.matmul", shape="64x128")
    assert [r["run"] for r in rows] == ["n1", "n2", "n3"]
    assert [r["flags"] for r in rows[:2]] == [[], []]  # device time is compared: n2's host slowdown is no change
    assert rows[2]["flags"] == ["device +100%"]
    assert rows[2]["mean_device_ns"] == pytest.approx(2 * rows[0]["mean_device_ns"], rel=1e-6)
    assert rows[0]["mean_device_ns"] > 0 and rows[0]["max_device_ns"] == rows[0]["mean_device_ns"]  # one call
    host = store.history(url, "ttnn.matmul", shape="64x128", clock="host")
    assert [r["flags"] for r in host] == [[], ["host time +200%"], []]
    assert host[1]["mean_s"] == pytest.approx(3 * host[0]["mean_s"])
    assert rows[0]["peak_l1"] > 0 and rows[0]["min_pcc"] > 0.99
    assert store.history(url, "ttnn.matmul", shape="1x2x3") == []
    r = CliRunner().invoke(main, ["history", url, "--op", "ttnn.matmul"])
    assert r.exit_code == 0 and "device +100%" in r.output.splitlines()[-1], r.output
    r = CliRunner().invoke(main, ["history", url, "--op", "ttnn.matmul", "--host-time"])
    assert r.exit_code == 0 and "host time +200%" in r.output.splitlines()[-2], r.output
    r = CliRunner().invoke(main, ["runs", url, "--json"])
    assert [run["name"] for run in json.loads(r.output)] == ["n1", "n2", "n3"]


def _push_process(report, url, env=None):
    return subprocess.Popen([sys.executable, "-m", "ttreport.cli", "push", str(report), "--to", url],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                            env={**os.environ, **(env or {})})


def test_eight_concurrent_pushes_all_land_once(url, captured, tmp_path):
    reports = [copy_report(captured, tmp_path / f"r{i}") for i in range(8)]
    procs = [_push_process(r, url) for r in reports + reports[:2]]  # two of them pushed twice at once
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    n = ttreport.open(captured).summary().operations
    c = counts(url)
    assert c["runs"] == 8 and c["operations"] == 8 * n
    assert sum("already in the store" in o for o, _ in outs) == 2


def test_a_push_killed_half_way_leaves_the_store_as_it_was(url, captured, tmp_path):
    import psycopg

    from ttreport.store.connection import split_url

    store.push(captured, url)
    before = counts(url)
    report = copy_report(captured, tmp_path / "killed")
    with psycopg.connect(split_url(url)[0]) as blocker:
        # The push writes every report table, then run_op_stats: holding that table stops it half-way.
        blocker.execute("LOCK TABLE run_op_stats IN ACCESS EXCLUSIVE MODE")
        proc = _push_process(report, url)
        deadline = time.monotonic() + 60
        while not blocker.execute("SELECT 1 FROM pg_locks WHERE NOT granted").fetchone():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        # the push's rows are in its open transaction now
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        blocker.rollback()
    assert counts(url) == before
    tensor_store = Path(split_url(url)[1])
    assert [p.name for p in tensor_store.iterdir() if not p.name.startswith(".")] == \
        [store.runs(url)[0]["report_uuid"]]
    assert store.push(report, url)[1]  # and the report can still be pushed


def test_bad_run_names_and_missing_tensor_store_are_named(url, captured, postgres_cluster):
    store.push(captured, url, name="x")
    with pytest.raises(store.StoreError, match="no run 'nope'.*ttreport runs"):
        ttreport.open(url, run="nope")
    with pytest.raises(store.StoreError, match="--run"):
        ttreport.open(url)
    with pytest.raises(store.StoreError, match="tensor store"):
        store.push(captured, postgres_cluster.new_database())
    r = CliRunner().invoke(main, ["ops", url])
    assert r.exit_code == 2 and "--run" in r.output


def test_a_password_in_the_url_is_never_shown():
    pytest.importorskip("psycopg", reason="the store needs psycopg")
    bad = "postgresql://u:s3cret@127.0.0.1:1/db"
    with pytest.raises(store.StoreError) as e:
        store.runs(bad)
    assert "s3cret" not in str(e.value) and "u:***@" in str(e.value)


def test_query_without_a_run_reads_across_the_store_and_cannot_write(url, captured, tmp_path):
    store.push(captured, url, name="a")
    store.push(copy_report(captured, tmp_path / "b"), url, name="b")
    sql = ("SELECT r.name, COUNT(*) AS n FROM operations o JOIN runs r USING (run_id) "
           "WHERE o.name = :op GROUP BY r.name ORDER BY r.name")
    r = CliRunner().invoke(main, ["query", url, sql, "-p", "op", "ttnn.matmul", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == [{"name": "a", "n": 1}, {"name": "b", "n": 1}]
    before = counts(url)
    r = CliRunner().invoke(main, ["query", url, "DELETE FROM runs"])
    assert r.exit_code == 2 and "read-only transaction" in r.output
    r = CliRunner().invoke(main, ["query", url, "SELECT pg_sleep(5)", "--timeout", "0.2"])
    assert r.exit_code == 2 and "statement timeout" in r.output
    assert counts(url) == before


def test_a_store_made_by_an_older_ttreport_gains_the_new_columns(url, captured):
    import psycopg

    from ttreport import db
    from ttreport.store.connection import split_url

    store.push(captured, url)
    older = db.revisions()[-2]
    with psycopg.connect(split_url(url)[0]) as conn:  # as a store of the revision before would be
        conn.execute("ALTER TABLE operations DROP COLUMN arguments")
        conn.execute("DROP TABLE tensor_files")
        conn.execute("UPDATE store_meta SET value = %s", (older,))
    assert store.runs(url)[0]["name"] == "base"  # any use upgrades it
    with psycopg.connect(split_url(url)[0]) as conn:
        assert conn.execute("SELECT value FROM store_meta").fetchone() == (db.head_revision(),)
        assert conn.execute("SELECT COUNT(*) FROM operations WHERE arguments IS NULL").fetchone()[0] > 0
        assert conn.execute("SELECT to_regclass('tensor_files') IS NOT NULL").fetchone() == (True,)
        conn.execute("UPDATE store_meta SET value = 'ffff'")
    with pytest.raises(store.StoreError, match="revision ffff, which this ttreport does not know"):
        store.runs(url)


def test_without_postgresql_binaries_the_cluster_says_why(monkeypatch):
    pytest.importorskip("psycopg", reason="the store needs psycopg")
    monkeypatch.setattr(postgres.shutil, "which", lambda name: None)
    monkeypatch.setattr(postgres.glob, "glob", lambda pattern: [])
    with pytest.raises(postgres.Unavailable, match="no PostgreSQL server binaries .*apt-get install postgresql"):
        postgres.start()
