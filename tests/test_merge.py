"""A multi-host run: two real rank processes each capture a report, and `ttreport merge` joins them."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import ttreport
from ttreport.capturing.rank import RANK_TABLES, host_rank
from ttreport.cli import main
from ttreport.errors import MergeError
from ttreport.read import merge
from ttreport.read.compare import compare_reports
from ttreport.read.faults import check

REPO = Path(__file__).resolve().parent.parent

# One rank of a distributed run: the rank comes from OMPI_COMM_WORLD_RANK, as mpirun sets it.
# Rank r runs 2 + r multiplies by 2, so each rank's op count tells the ranks apart; PLANT_RANK=r makes
# rank r's last multiply use 3 instead: a divergence whose inputs still match.
RANK_SCRIPT = r"""
import sys, torch
import device_sim as ttnn
import ttreport

out = sys.argv[1]
device = ttnn.open_device(device_id=0)
with ttreport.capture(__import__("pathlib").Path(out), config=ttreport.Config(tensors="outputs")):
    rank = int(__import__("os").environ["OMPI_COMM_WORLD_RANK"])
    x = ttnn.from_torch(torch.full((32, 32), float(rank)), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                        device=device)
    planted = __import__("os").environ.get("PLANT_RANK") == str(rank)
    for i in range(2 + rank):
        x = ttnn.multiply(x, 3.0 if planted and i == 1 + rank else 2.0)
    ttnn.to_torch(x)
ttnn.close_device(device)
"""


def _run_rank(tmp_path, rank: int, plant: int | None = None) -> Path:
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    out = tmp_path / f"rank{rank}{'' if plant is None else '-planted'}"
    env = {**os.environ, "OMPI_COMM_WORLD_RANK": str(rank), "PYTHONPATH": str(REPO), "PLANT_RANK": str(plant)}
    env.pop("TTREPORT_CONFIG", None)
    subprocess.run([sys.executable, str(script), str(out)], env=env, check=True, cwd=tmp_path, timeout=120)
    return out


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ranks")
    return _run_rank(tmp, 0), _run_rank(tmp, 1)


def _rows(path, sql):
    con = sqlite3.connect(path / "db.sqlite")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_each_rank_process_writes_its_rank_into_every_row(ranks):
    for rank, path in enumerate(ranks):
        for table in RANK_TABLES:
            assert {r[0] for r in _rows(path, f"SELECT DISTINCT rank FROM {table}")} <= {rank}, table
        assert _rows(path, "SELECT DISTINCT rank FROM operations") == [(rank,)]
        assert _rows(path, "SELECT value FROM report_metadata WHERE key = 'rank'") == [(str(rank),)]


def test_merged_report_answers_per_rank_and_passes_check(ranks, tmp_path):
    out = tmp_path / "run"
    result = main.main(["merge", str(ranks[0]), str(ranks[1]), "-o", str(out)], standalone_mode=False)
    assert result is None
    per_rank = dict(_rows(out, "SELECT rank, count(*) FROM operations GROUP BY rank"))
    expected = {r: _rows(p, "SELECT count(*) FROM operations")[0][0] for r, p in enumerate(ranks)}
    assert per_rank == expected and expected[1] == expected[0] + 1  # rank 1 ran one more multiply
    assert check(out) == []
    assert json.loads(_rows(out, "SELECT value FROM report_metadata WHERE key = 'ranks'")[0][0]) == [0, 1]


def test_merged_ids_do_not_clash_and_keep_their_links(ranks, tmp_path):
    out = tmp_path / "run"
    merge.merge(ranks, out)
    total = sum(_rows(p, "SELECT count(*) FROM operations")[0][0] for p in ranks)
    assert _rows(out, "SELECT count(DISTINCT operation_id), count(*) FROM operations") == [(total, total)]
    # every output tensor's producer is an op of the same rank
    bad = _rows(out, "SELECT count(*) FROM output_tensors x JOIN tensors t USING (tensor_id) "
                     "JOIN operations o ON o.operation_id = t.producer_operation_id WHERE o.rank != x.rank")
    assert bad == [(0,)]
    assert _rows(out, "SELECT count(*) FROM output_tensors x LEFT JOIN tensors t USING (tensor_id) "
                      "WHERE t.tensor_id IS NULL") == [(0,)]
    # rank 1's last output holds 1.0 doubled 3 times, read through its copied file under its new id
    with ttreport.open(out) as r:
        (tid,) = _rows(out, "SELECT max(tensor_id) FROM output_tensors x JOIN tensors t USING (tensor_id) "
                            "WHERE x.rank = 1 AND t.file IS NOT NULL")[0]
        assert float(r.load_tensor(tid).float().mean()) == 8.0
        assert len(r.operations()) == total


def test_compare_of_two_merged_runs_names_the_rank_of_a_planted_divergence(ranks, tmp_path):
    good = merge.merge(ranks, tmp_path / "good").parent
    planted = _run_rank(tmp_path, 1, plant=1)
    bad = merge.merge([ranks[0], planted], tmp_path / "bad").parent
    result = compare_reports(good, bad)
    # the root cause is rank 1's last multiply (the planted one), and the table names its rank
    last = _rows(bad, "SELECT max(operation_id) FROM operations WHERE rank = 1 AND depth = 0 AND name LIKE '%mul%'")
    assert result.root_cause is not None and result.root_cause.b_id == last[0][0]
    assert result.root_cause_rank == 1
    assert f"ROOT CAUSE: {result.root_cause.name} on rank 1 (" in result.to_table()
    assert result.to_dict()["root_cause"]["rank"] == 1
    assert compare_reports(ranks[0], planted).root_cause_rank is None  # one rank each: no rank named


def test_merging_one_rank_twice_is_an_error_naming_the_rank(ranks, tmp_path):
    with pytest.raises(MergeError, match="rank 0 is in both"):
        merge.merge([ranks[0], ranks[0]], tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_merging_reports_of_different_schemas_is_an_error(ranks, tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    (old / "db.sqlite").write_bytes((ranks[1] / "db.sqlite").read_bytes())
    con = sqlite3.connect(old / "db.sqlite")
    with con:
        con.execute("UPDATE alembic_version SET version_num = '0004'")
    con.close()
    with pytest.raises(MergeError, match="different schemas.*ttreport upgrade"):
        merge.merge([ranks[0], old], tmp_path / "run")


def test_rank_comes_from_config_then_mpi_then_zero():
    assert host_rank(3, environ={"OMPI_COMM_WORLD_RANK": "1"}) == 3
    assert host_rank(None, environ={"OMPI_COMM_WORLD_RANK": "1"}) == 1
    assert host_rank(None, environ={}) == 0
    with pytest.raises(MergeError, match="'x' is not a rank"):
        host_rank(None, environ={"OMPI_COMM_WORLD_RANK": "x"})
    with pytest.raises(ttreport.ConfigError, match="rank=-1"):
        ttreport.Config(rank=-1)


def test_a_merge_that_fails_part_way_leaves_no_folder(ranks, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(ranks[1], damaged)
    con = sqlite3.connect(damaged / "db.sqlite")
    with con:
        con.execute("DROP TABLE device_perf")
    con.close()
    with pytest.raises(sqlite3.OperationalError, match="device_perf"):
        merge.merge([ranks[0], damaged], tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_ttnn_visualizer_reads_the_merged_run_as_one_with_its_ranks(ranks, tmp_path):
    from ttnn_visualizer.queries import DatabaseQueries

    path = merge.merge(ranks, tmp_path / "run")
    con = sqlite3.connect(path)
    try:
        q = DatabaseQueries(connection=con)
        assert q.query_operation_ranks() == [0, 1]
        ops = list(q.query_operations())
        assert [o.operation_id for o in ops] == sorted({o.operation_id for o in ops})  # id order, no clash
        assert len(ops) == sum(_rows(p, "SELECT count(*) FROM operations")[0][0] for p in ranks)
        stacks = {s.operation_id for s in q.query_stack_traces()}
        assert {o.operation_id for o in ops if o.name != "ttnn.from_torch"} <= stacks
        tensor_ids = {t.tensor_id for t in q.query_tensors()}
        assert {t.tensor_id for t in q.query_output_tensors()} <= tensor_ids
    finally:
        con.close()


# A rank killed before its capture closed: its rows keep rank 0, as the rank is written at close.
KILLED_RANK_SCRIPT = r"""
import sys, time, torch
import device_sim as ttnn
import ttreport

device = ttnn.open_device(device_id=0)
cap = ttreport.capture(sys.argv[1], config=ttreport.Config(tensors="outputs"))
cap.start()
x = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
ttnn.multiply(x, 2.0)
cap.flush()
print("flushed", flush=True)
time.sleep(60)
"""


def _killed_rank(tmp_path, rank: int) -> Path:
    script = tmp_path / "killed.py"
    script.write_text(KILLED_RANK_SCRIPT)
    out = tmp_path / f"rank{rank}-killed"
    env = {**os.environ, "OMPI_COMM_WORLD_RANK": str(rank), "PYTHONPATH": str(REPO)}
    env.pop("TTREPORT_CONFIG", None)
    child = subprocess.Popen([sys.executable, str(script), str(out)], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "flushed"
    finally:
        child.kill()
        child.wait(timeout=30)
    return out


def test_a_rank_killed_before_closing_merges_under_the_rank_given_to_it(ranks, tmp_path):
    killed = _killed_rank(tmp_path, 1)
    assert _rows(killed, "SELECT DISTINCT rank FROM operations") == [(0,)]  # its rank never reached its rows
    with pytest.raises(MergeError, match="rank 0 is in both"):
        merge.merge([ranks[0], killed], tmp_path / "refused")
    out = tmp_path / "run"
    main.main(["merge", str(ranks[0]), str(killed), "-o", str(out), "--rank", f"{killed}=1"], standalone_mode=False)
    per_rank = dict(_rows(out, "SELECT rank, count(*) FROM operations GROUP BY rank"))
    assert per_rank == {0: _rows(ranks[0], "SELECT count(*) FROM operations")[0][0],
                        1: _rows(killed, "SELECT count(*) FROM operations")[0][0]}
    for table in RANK_TABLES:  # every row of the killed rank, not only its ops
        assert {r[0] for r in _rows(out, f"SELECT DISTINCT rank FROM {table}")} <= {0, 1}, table
    assert _rows(out, "SELECT DISTINCT rank FROM tensors WHERE tensor_id > (SELECT max(tensor_id) FROM tensors "
                      "WHERE rank = 0)") == [(1,)]


def test_a_rank_given_for_a_report_not_merged_or_not_a_rank_is_an_error(ranks, tmp_path):
    with pytest.raises(MergeError, match="not among the reports merged"):
        merge.merge(ranks, tmp_path / "run", ranks={tmp_path / "elsewhere": 1})
    with pytest.raises(MergeError, match="rank -1 .* is not a rank"):
        merge.merge(ranks, tmp_path / "run", ranks={ranks[1]: -1})
    with pytest.raises(click.BadParameter, match="not REPORT=N"):
        main.main(["merge", str(ranks[0]), str(ranks[1]), "-o", str(tmp_path / "run"), "--rank", "1"],
                  standalone_mode=False)
    assert not (tmp_path / "run").exists()


def test_merge_takes_reports_by_name_as_every_command_does(ranks, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "generated/ttreport/reports"
    for rank, path in enumerate(ranks):
        shutil.copytree(path, root / f"r{rank}")
    result = CliRunner().invoke(main, ["merge", "r0", "r1", "-o", "run", "--rank", "r1=1"])
    assert result.exit_code == 0, result.output
    assert _rows(root / "run", "SELECT DISTINCT rank FROM operations ORDER BY rank") == [(0,), (1,)]
    missing = CliRunner().invoke(main, ["merge", "r0", "r9", "-o", "run2"])
    assert missing.exit_code == 2 and "no report at r9" in missing.output and not (root / "run2").exists()


def test_merge_names_its_output_as_capture_does_a_plain_name_under_the_root_a_path_as_given(ranks, tmp_path,
                                                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TTREPORT_CONFIG", raising=False)
    a, b = (str(p) for p in ranks)
    plain = CliRunner().invoke(main, ["merge", a, b, "-o", "run", "--rank", f"{b}=1"])
    assert plain.exit_code == 0, plain.output
    assert (tmp_path / "generated/ttreport/reports/run/db.sqlite").is_file() and not (tmp_path / "run").exists()
    assert "generated/ttreport/reports/run" in plain.output
    # `ttreport ls` and every command's REPORT-by-name find it, as they find a capture's report
    assert "run" in CliRunner().invoke(main, ["ls"]).output
    assert CliRunner().invoke(main, ["summary", "run"]).exit_code == 0
    dotted = CliRunner().invoke(main, ["merge", a, b, "-o", "./here", "--rank", f"{b}=1"])
    assert dotted.exit_code == 0 and (tmp_path / "here/db.sqlite").is_file(), dotted.output
    monkeypatch.setenv("TTREPORT_CONFIG", json.dumps({"root": str(tmp_path / "elsewhere")}))
    moved = CliRunner().invoke(main, ["merge", a, b, "-o", "run", "--rank", f"{b}=1"])
    assert moved.exit_code == 0 and (tmp_path / "elsewhere/run/db.sqlite").is_file(), moved.output
    again = CliRunner().invoke(main, ["merge", a, b, "-o", "run", "--rank", f"{b}=1"])
    assert again.exit_code == 2 and "exists" in again.output
    dot = CliRunner().invoke(main, ["merge", a, b, "-o", "."])
    assert dot.exit_code == 2 and "'.' is not a report name" in dot.output
    helped = " ".join(CliRunner().invoke(main, ["merge", "--help"]).output.split())
    assert "a plain name is made under Config.root" in helped


@pytest.mark.parametrize("how", ["file", "tensors_folder", "row"])
def test_merge_carries_no_file_from_outside_a_ranks_tensors_folder(ranks, tmp_path, how):
    secret = tmp_path / "id_rsa"
    secret.write_text("a file of the merging host")
    rank1 = tmp_path / "rank1"
    shutil.copytree(ranks[1], rank1)
    victim = next(p for p in sorted((rank1 / "tensors").iterdir()) if p.is_file())
    if how == "file":  # a received report's tensor file, linked to a file of this host
        victim.unlink()
        victim.symlink_to(secret)
    elif how == "tensors_folder":  # its whole tensors/ a link to a folder of this host
        elsewhere = tmp_path / "dot-ssh"
        shutil.move(rank1 / "tensors", elsewhere)
        (rank1 / "tensors").symlink_to(elsewhere)
    else:  # a row naming a path out of the folder
        con = sqlite3.connect(rank1 / "db.sqlite")
        with con:
            con.execute("UPDATE tensors SET file = ? WHERE file = ?", (f"tensors/../../{secret.name}",
                                                                      f"tensors/{victim.name}"))
        con.close()
    with pytest.raises(MergeError, match="is outside the report's tensors/ folder"):
        merge.merge([ranks[0], rank1], tmp_path / "run")
    assert not (tmp_path / "run").exists()
    assert secret.read_text() == "a file of the merging host"


def test_merge_of_a_rank_whose_config_json_is_not_an_object_warns_and_goes_on(ranks, tmp_path):
    rank0 = tmp_path / "rank0"
    shutil.copytree(ranks[0], rank0)
    (rank0 / "config.json").write_text("[1, 2]")
    with pytest.warns(UserWarning, match="is not a JSON object; the merged report has no config.json"):
        merge.merge([rank0, ranks[1]], tmp_path / "run")
    assert not (tmp_path / "run" / "config.json").exists()
    assert check(tmp_path / "run") == []
