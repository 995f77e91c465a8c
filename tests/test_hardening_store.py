"""Issue 29, the store: a store URL's secret is never printed, in any form of URL or DSN, nor a traceback for a
malformed one; and a push never touches another store's tensor files.

The commands run as a user runs them, in subprocesses; the tensor store's tests against a real throwaway
PostgreSQL cluster (conftest's postgres_cluster), skipped, saying why, where none can be started.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ttreport
from ttreport import store

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_reports" / "demo"
SECRET = "s3cretPW"


def cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ttreport.cli", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=60, env={**os.environ, **(env or {})})


# -- secrets ------------------------------------------------------------------------------------------------

# Each form a store can be named in, with the secret in it; none of these reaches a server (no socket there).
NOWHERE = "/nonexistent-ttreport-socket-dir"
SECRET_FORMS = [
    f"postgresql://ci@/ttreport?host={NOWHERE}&password={SECRET}",  # libpq's password parameter
    f"postgresql://ci@/ttreport?host={NOWHERE}&sslpassword={SECRET}",
    f"postgresql://ci@/ttreport?host={NOWHERE}&pass%77ord={SECRET}",  # libpq decodes a parameter's name too
    f"postgresql://ci:{SECRET}%ZZ@/ttreport?host={NOWHERE}",  # libpq's error quotes the bad token
    f"postgresql://ci@/ttreport?host={NOWHERE}&password={SECRET}%ZZ",
    f"host={NOWHERE} dbname=ttreport password={SECRET}",  # a key=value DSN
    f"host={NOWHERE} dbname=ttreport password='{SECRET} quoted'",
    f"host={NOWHERE} password='{SECRET}",  # unterminated: libpq refuses it
    f"host={NOWHERE} password={SECRET} dbname",  # a key with no value
    f"postgresql://ci:{SECRET}@[::1:5432/ttreport",  # not a URL Python or libpq can parse
]


def commands(url: str) -> list[list[str]]:
    return [["push", str(SAMPLE), "--to", url], ["runs", url], ["history", url, "--op", "ttnn.add"],
            ["summary", url, "--run", "nightly-1"], ["query", url, "SELECT 1"]]


@pytest.mark.parametrize("i, url", list(enumerate(SECRET_FORMS)))
def test_no_form_of_a_store_url_prints_its_secret_or_a_traceback(i, url, tmp_path):
    pytest.importorskip("psycopg", reason="the store needs psycopg")
    # Each form through one command, in turn, so that each command meets two forms (a process is ~0.5 s).
    args = commands(url)[i % 5]
    done = cli(*args, env={"TTREPORT_TENSOR_STORE": str(tmp_path), "TTREPORT_STORE_CACHE": str(tmp_path)})
    said = done.stdout + done.stderr
    assert done.returncode == 2, (args, said)
    assert SECRET not in said and "Traceback" not in said, (args, said)
    assert len(done.stderr.strip().splitlines()) == 1, (args, said)


@pytest.mark.parametrize("args", [["push", "{url}", "--to", "{url}"],  # the URL where the report belongs
                                  ["runs", "{url}", "{url}"]])  # click's "unexpected extra argument (...)"
def test_a_message_that_quotes_a_store_url_from_the_command_line_hides_its_password(args):
    url = f"postgresql://ci:{SECRET}@/ttreport?host={NOWHERE}"
    done = cli(*[a.format(url=url) for a in args])
    assert done.returncode == 2 and "postgresql:" in done.stderr, done.stderr
    assert SECRET not in done.stdout + done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_malformed_url_is_named_with_the_fix():
    done = cli("runs", "postgresql://ci@[::1:5432/ttreport")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "postgresql://ci@[::1:5432/ttreport" in done.stderr and "postgresql://[user@]host" in done.stderr


@pytest.mark.parametrize("url", SECRET_FORMS)
def test_ttreport_open_never_says_the_secret(url):
    pytest.importorskip("psycopg", reason="the store needs psycopg")
    with pytest.raises(store.StoreError) as e:
        ttreport.open(url, run="nightly-1")
    assert SECRET not in str(e.value) and e.value.__suppress_context__


def test_a_password_is_masked_in_the_url_shown_but_host_and_database_stay():
    shown = store.shown
    assert shown(f"postgresql://ci:{SECRET}@db:5432/tt?tensors=/t") == "postgresql://ci:***@db:5432/tt?tensors=/t"
    assert shown(f"postgresql://ci@db/tt?password={SECRET}&port=5") == "postgresql://ci@db/tt?password=***&port=5"
    assert shown(f"host=db password={SECRET} dbname=tt") == "host=db password=*** dbname=tt"
    assert shown(f"host=db password = '{SECRET} x' dbname=tt") == "host=db password = *** dbname=tt"


# -- the tensor store -----------------------------------------------------------------------------------------

def files_of(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under root: (inode, modification time), which a rewrite changes."""
    return {str(p.relative_to(root)): (p.stat().st_ino, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def sql(url: str, statement: str, params=()) -> list[tuple]:
    import psycopg

    from ttreport.store.connection import split_url

    with psycopg.connect(split_url(url)[0]) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


@pytest.fixture
def two_stores(postgres_cluster, tmp_path, monkeypatch):
    """Two stores (databases) sharing one tensor directory, as a team-wide TTREPORT_TENSOR_STORE makes them."""
    monkeypatch.setenv("TTREPORT_STORE_CACHE", str(tmp_path / "cache"))
    shared = tmp_path / "tensor-store"
    shared.mkdir()
    return [f"{postgres_cluster.new_database()}&tensors={shared}" for _ in range(2)], shared


@pytest.fixture
def report(tmp_path) -> Path:
    shutil.copytree(SAMPLE, tmp_path / "demo")
    return tmp_path / "demo"


def run_files(url: str, shared: Path) -> Path:
    """The tensor folder of the store's one run."""
    [(tensor_dir,)] = sql(url, "SELECT tensor_dir FROM runs")
    return shared / tensor_dir


def loads_every_tensor(url: str, report: Path) -> None:
    folder = ttreport.open(report)
    with ttreport.open(url, run="demo") as run:
        ids = [t.id for t in folder.tensors() if t.file]
        assert ids
        for i in ids:
            assert run.load_tensor(i).equal(folder.load_tensor(i)), i


def test_a_failed_push_into_a_second_store_leaves_the_first_stores_files(two_stores, report):
    (a, b), shared = two_stores
    store.push(report, a)
    a_files = run_files(a, shared)
    before = files_of(a_files)
    assert len(before) > 10
    store.runs(b)  # makes b's tables; then b refuses every push at its commit, after the files are in place
    sql(b, "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
           "$$BEGIN RAISE EXCEPTION 'refused at commit by the test'; END$$")
    sql(b, "CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON runs DEFERRABLE INITIALLY DEFERRED "
           "FOR EACH ROW EXECUTE FUNCTION refuse()")
    done = cli("push", str(report), "--to", b)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "refused at commit by the test" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert files_of(a_files) == before  # not one of a's files removed or rewritten (was: 136 files -> 0)
    assert store.runs(b) == []
    left = {str(p.relative_to(a_files)) if p.is_relative_to(a_files) else str(p) for p in shared.rglob("*")
            if p.is_file()}
    assert left == set(before)  # and the failed push left none of its own behind
    loads_every_tensor(a, report)


def test_a_push_into_a_second_store_neither_rewrites_nor_shares_the_first_stores_files(two_stores, report):
    (a, b), shared = two_stores
    store.push(report, a)
    a_files = run_files(a, shared)
    before = files_of(a_files)
    assert store.push(report, b)[1]
    assert files_of(a_files) == before
    b_files = run_files(b, shared)
    assert not b_files.is_relative_to(a_files) and not a_files.is_relative_to(b_files)
    assert sorted(files_of(b_files)) == sorted(before)
    loads_every_tensor(a, report)
    shutil.rmtree(shared.parent / "cache")
    loads_every_tensor(b, report)


def test_a_push_carries_no_file_from_outside_the_reports_tensors_folder(two_stores, report, tmp_path):
    (a, _), shared = two_stores
    elsewhere = tmp_path / "host-secret.txt"
    elsewhere.write_text("not the report's")
    victim = next(p for p in (report / "tensors").iterdir() if p.is_file())
    victim.unlink()
    victim.symlink_to(elsewhere)  # a received report's tensor file, linked to a file of the pushing host
    with pytest.raises(store.StoreError, match=f"tensor file 'tensors/{victim.name}' is outside the report's "
                                               "tensors/ folder"):
        store.push(report, a)
    assert store.runs(a) == []
    assert [p for p in shared.rglob("*") if p.is_file()] == []


def test_a_push_carries_nothing_through_a_tensors_folder_that_is_a_link(two_stores, report, tmp_path):
    (a, _), shared = two_stores
    elsewhere = tmp_path / "dot-ssh"  # a received report whose tensors/ leads to a folder of the pushing host
    shutil.move(report / "tensors", elsewhere)
    (report / "tensors").symlink_to(elsewhere)
    with pytest.raises(store.StoreError, match="is outside the report's tensors/ folder"):
        store.push(report, a)
    assert store.runs(a) == []
    assert [p for p in shared.rglob("*") if p.is_file()] == []


def test_a_run_pushed_in_the_old_layout_reads_only_its_own_files(two_stores, report):
    # Before issue 29 a run's files were at <report UUID>/tensors/; a push of the same report into another
    # store now puts its files beside them, at <report UUID>/<push UUID>/tensors/.
    (a, b), shared = two_stores
    store.push(report, a)
    pushed = run_files(a, shared)
    old = pushed.parent
    (pushed / "tensors").rename(old / "tensors")
    pushed.rmdir()
    sql(a, "UPDATE runs SET tensor_dir = %s", (old.name,))
    store.push(report, b)
    with ttreport.open(a, run="demo") as run:
        assert sorted(p.name for p in run.path.iterdir()) == ["db.sqlite", "tensors"]
    loads_every_tensor(a, report)


def test_a_pull_takes_no_file_through_a_link_planted_in_the_tensor_store(two_stores, report, tmp_path):
    (a, _), shared = two_stores
    store.push(report, a)
    secret = tmp_path / "id_rsa"
    secret.write_text("a file of the pulling host")
    (run_files(a, shared) / "tensors" / "planted.pt").symlink_to(secret)
    with ttreport.open(a, run="demo") as run:
        assert not (run.path / "tensors" / "planted.pt").exists()
    loads_every_tensor(a, report)


def test_a_run_from_the_store_has_the_values_an_op_wrote_into_a_stored_tensor(two_stores, tmp_path):
    # An in-place write is its own file (tensors/<id>@<op>.pt, a tensor_writes row), which a push once left out.
    import torch

    import device_sim as ttnn

    (a, _), _ = two_stores
    device = ttnn.open_device(0)
    try:
        x, y = (ttnn.from_torch(torch.full((32, 32), v), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
                for v in (2.0, 3.0))
        with ttreport.capture(tmp_path / "writes", config=ttreport.Config(tensors="outputs")):
            out = ttnn.add(x, y)  # 5
            ttnn.add_(out, y)  # 8, into the same stored tensor
    finally:
        ttnn.close_device(device)
    store.push(tmp_path / "writes", a)
    with ttreport.open(a, run="writes") as run:
        last = run.count_operations()
        assert float(run.load_tensor(out.tensor_id)[0, 0]) == 5.0
        assert float(run.load_tensor(out.tensor_id, after_operation=last)[0, 0]) == 8.0
