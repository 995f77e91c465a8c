"""The store's local cache of runs is bounded: least recently used runs go first (ttreport/store/cache.py).

Against a real throwaway PostgreSQL cluster (conftest's postgres_cluster), as tests/test_store.py; skipped,
saying why, where none can be started.
"""

import os
import shutil
import sqlite3
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
from ttreport.store import cache


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reports") / "base"
    dev = ttnn.open_device(0)
    try:
        with ttreport.capture(folder, config=ttreport.Config(tensors="outputs")):
            x = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
            ttnn.relu(ttnn.add(x, 1.0))
    finally:
        ttnn.close_device(dev)
    return folder


@pytest.fixture
def runs(postgres_cluster, captured, tmp_path, monkeypatch):
    """A fresh store holding runs a, b and c (copies of one capture under their own UUIDs); the cache
    under tmp_path/cache. Returns the store's URL."""
    monkeypatch.setenv("TTREPORT_STORE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "tensor-store").mkdir()
    url = f"{postgres_cluster.new_database()}&tensors={tmp_path / 'tensor-store'}"
    for name in "abc":
        copy = tmp_path / name
        shutil.copytree(captured, copy)
        con = sqlite3.connect(copy / "db.sqlite")
        with con:
            con.execute("UPDATE report_metadata SET value = ? WHERE key = 'report_id'", (str(uuid.uuid4()),))
        con.close()
        store.push(copy, url, name=name)
    return url


def read(url, name) -> Path:
    """Open run `name` as a user does; the folder it was read from."""
    with ttreport.open(url, run=name) as report:
        assert report.count_operations() == 3
        path = report.path
    time.sleep(0.02)  # the next read's mark falls in a later tick of the filesystem's clock
    return path


def cached(tmp_path) -> set[Path]:
    return set(cache.cached_runs(tmp_path / "cache"))


def test_past_the_run_limit_the_least_recently_used_run_is_evicted(runs, tmp_path, monkeypatch):
    monkeypatch.setenv("TTREPORT_STORE_CACHE_RUNS", "2")
    a, b = read(runs, "a"), read(runs, "b")
    assert read(runs, "a") == a  # a read from the cache: a is now the most recently used
    c = read(runs, "c")
    assert cached(tmp_path) == {a, c}
    assert read(runs, "b") == b  # copied in again, whole, when read again; a goes now
    assert cached(tmp_path) == {c, b}
    assert [p.name for p in (tmp_path / "cache").iterdir() if p.name.startswith(".")] == []  # no leftovers


def test_past_the_byte_limit_runs_go_until_it_fits_but_never_the_run_just_read(runs, tmp_path, monkeypatch):
    a = read(runs, "a")
    one_run = cache.size(a)
    assert one_run > 0 and (a / "db.sqlite").stat().st_size <= one_run
    monkeypatch.setenv("TTREPORT_STORE_CACHE_BYTES", str(2 * one_run))
    b = read(runs, "b")
    assert cached(tmp_path) == {a, b}
    c = read(runs, "c")
    assert cached(tmp_path) == {b, c}
    monkeypatch.setenv("TTREPORT_STORE_CACHE_BYTES", "1")  # smaller than any run: only the one read stays
    assert read(runs, "a") != b and cached(tmp_path) == {a}


def test_hard_linked_tensor_files_are_not_counted_against_the_limit(runs, tmp_path):
    a = read(runs, "a")
    tensor_files = [p for p in (a / "tensors").iterdir() if p.is_file()]
    assert tensor_files and all(p.stat().st_nlink == 2 for p in tensor_files)  # linked from the tensor store
    own = sum(p.stat().st_size for p in a.rglob("*") if p.is_file() and p.stat().st_nlink == 1)
    assert cache.size(a) == own


def test_prune_removes_least_recently_used_first_and_keeps_what_it_is_told(runs, tmp_path):
    a, b, c = read(runs, "a"), read(runs, "b"), read(runs, "c")
    os.utime(a)  # used last
    assert cache.prune(max_runs=1, keep=b) == [c, a]
    assert cached(tmp_path) == {b}


@pytest.mark.parametrize("env, value", [("TTREPORT_STORE_CACHE_RUNS", "ten"),
                                        ("TTREPORT_STORE_CACHE_RUNS", "0"),
                                        ("TTREPORT_STORE_CACHE_BYTES", "2 parsecs")])
def test_a_bad_limit_is_named_with_the_fix_and_evicts_nothing(runs, tmp_path, monkeypatch, env, value):
    a = read(runs, "a")
    monkeypatch.setenv(env, value)
    with pytest.raises(store.StoreError, match=f"{env}='{value}' is not a cache limit: give .* or unset it"):
        ttreport.open(runs, run="b")
    result = CliRunner().invoke(main, ["summary", runs, "--run", "b"])
    assert result.exit_code == 2 and f"{env}='{value}'" in result.output
    assert cached(tmp_path) == {a}
