"""Per-device comparison of mesh runs: a divergence on one chip of one rank is named by rank, device and op.

Each rank of a two-rank run runs a Llama-style MLP on a 2x4 mesh, written as tt-metal's T3000 models
write it (activations replicated, w1/w3 split by columns and w2 by rows over a row's chips with
ShardTensor2dMesh, the partial sums meeting in a reduce_scatter and an all_gather along the row), and
captures it in golden mode with its outputs stored: one file per device shard. `swiglu` is the
model's own op, run per chip like any op on a mesh; PLANT="rank:device" makes that chip's kernel
wrong (a fault on one chip), which is what the comparisons must find.
"""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport.cli import main
from ttreport.errors import ComparisonError
from ttreport.read import merge
from ttreport.read.compare import compare_reports
from ttreport.read.report import ReportError

REPO = Path(__file__).resolve().parent.parent
PLANTED_RANK, PLANTED_DEVICE = 1, 5

RANK_SCRIPT = r"""
import os, sys, torch
import device_sim as ttnn
import ttreport
from device_sim.registry import register_op

rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
plant = os.environ.get("PLANT", "")
faulty = int(plant.split(":")[1]) if plant.split(":")[0] == str(rank) else None

@register_op("model.swiglu", golden=lambda a, b: torch.nn.functional.silu(a) * b)
def swiglu(a, b):
    out = ttnn.mul(ttnn.silu(a), b)
    if faulty is not None and a.device().device_id == faulty:  # this chip's kernel is wrong
        out = ttnn.add(out, 0.25)
    return out

S, D, F = 32, 128, 256
g = torch.Generator().manual_seed(0)
w1, w3, w2 = (torch.randn(shape, generator=g) * 0.1 for shape in ((D, F), (D, F), (F, D)))
x = torch.randn(1, 1, S, D, generator=torch.Generator().manual_seed(10 + rank))
mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(2, 4))
put = lambda t, dims: ttnn.from_torch(t, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                                      mesh_mapper=ttnn.ShardTensor2dMesh(mesh, mesh_shape=(2, 4), dims=dims))
config = ttreport.Config(tensors="outputs", comparison="local", comparison_pcc=0.99)
with ttreport.capture(sys.argv[1], config=config):
    tw1, tw3, tw2 = put(w1, (None, -1)), put(w3, (None, -1)), put(w2, (None, -2))
    tx = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                         mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))
    m = swiglu(ttnn.linear(tx, tw1), ttnn.linear(tx, tw3))
    y = ttnn.reduce_scatter(ttnn.linear(m, tw2), dim=3, cluster_axis=1, topology=ttnn.Topology.Linear)
    y = ttnn.all_gather(y, dim=3, cluster_axis=1, topology=ttnn.Topology.Linear)
ttnn.close_mesh_device(mesh)
"""


def _run_rank(tmp: Path, rank: int, plant: str = "") -> Path:
    script = tmp / "mesh_rank.py"
    script.write_text(RANK_SCRIPT)
    out = tmp / f"rank{rank}{'-planted' if plant else ''}"
    env = {**os.environ, "OMPI_COMM_WORLD_RANK": str(rank), "PYTHONPATH": str(REPO), "PLANT": plant}
    env.pop("TTREPORT_CONFIG", None)
    subprocess.run([sys.executable, str(script), str(out)], env=env, check=True, cwd=tmp, timeout=300)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two merged two-rank runs: `good`, and `bad`, whose rank 1 ran with chip 5's swiglu faulty."""
    tmp = tmp_path_factory.mktemp("mesh-ranks")
    rank0, rank1 = _run_rank(tmp, 0), _run_rank(tmp, 1)
    planted = _run_rank(tmp, PLANTED_RANK, f"{PLANTED_RANK}:{PLANTED_DEVICE}")
    good = merge.merge([rank0, rank1], tmp / "good").parent
    bad = merge.merge([rank0, planted], tmp / "bad").parent
    return good, bad


def test_a_mesh_tensor_is_stored_as_one_file_per_device_shard(runs):
    good, _ = runs
    with ttreport.open(good) as r:
        (tid, rank), = r.execute("SELECT t.tensor_id, t.rank FROM operations o JOIN output_tensors x "
                                 "USING (operation_id) JOIN tensors t USING (tensor_id) "
                                 "WHERE o.name = 'ttnn.from_torch' ORDER BY o.operation_id LIMIT 1").fetchall()
        assert rank == 0 and r.tensor(tid).file == f"tensors/{tid}/"
        assert r.tensor_devices(tid) == list(range(8))
        assert sorted(p.name for p in (good / "tensors" / str(tid)).iterdir()) == [f"{d}.pt" for d in range(8)]
        # w1, split by columns over each row's 4 chips and the same on both rows: the mappers' inverse
        w1 = torch.randn((128, 256), generator=torch.Generator().manual_seed(0)) * 0.1
        whole = r.load_tensor(tid, dims=(0, 1), mesh_shape=(2, 4))
        assert whole.shape == (256, 256)  # the two rows' replicas, one above the other
        torch.testing.assert_close(whole[:128].float(), w1.bfloat16().float())
        assert torch.equal(r.load_tensor(tid, device=6), r.load_tensor(tid, device=2))  # row 1 repeats row 0
        assert r.load_tensor(tid).shape == (8, 128, 64)  # stacked, in device order
        with pytest.raises(ReportError, match="no stored shard on device 9"):
            r.load_tensor(tid, device=9)


def test_compare_names_the_rank_device_and_op_of_a_divergence_on_one_chip(runs, tmp_path):
    good, bad = runs
    result = compare_reports(good, bad)
    rc = result.root_cause
    assert rc is not None and rc.name == "model.swiglu"
    assert (result.root_cause_rank, rc.devices) == (PLANTED_RANK, [PLANTED_DEVICE])
    assert f"ROOT CAUSE: model.swiglu on rank 1, device 5 (A op {rc.a_id}, B op {rc.b_id})" in result.to_table()
    assert "inputs match, outputs do not" in rc.reason
    # rank 0 ran the same in both runs; rank 1's ops before swiglu match on every device
    rank_of = dict(ttreport.open(bad).execute("SELECT operation_id, rank FROM operations").fetchall())
    assert all(p.status == "match" for p in result.pairs if rank_of[p.b_id] == 0)
    out = result.to_dict()["root_cause"]
    assert (out["rank"], out["device"], out["name"]) == (1, 5, "model.swiglu")
    by_device = {d["device_id"]: d["passed"] for d in out["outputs"][0]["devices"]}
    assert by_device == {d: d != PLANTED_DEVICE for d in range(8)}
    # and through the CLI: the table, the JSON file, the exit code
    json_file, csv_file = tmp_path / "diff.json", tmp_path / "diff.csv"
    with pytest.raises(SystemExit) as exit_info:
        main.main(["compare", str(good), str(bad), "--json", str(json_file), "--csv", str(csv_file)],
                  standalone_mode=False)
    assert exit_info.value.code == 1
    written = json.loads(json_file.read_text())
    assert written["root_cause"]["device"] == PLANTED_DEVICE
    assert {(o["rank"], o["status"]) for o in written["ops"]} >= {(0, "match"), (1, "mismatch")}
    rows = list(csv.DictReader(csv_file.open()))
    assert len(rows) == len(result.pairs)
    mismatched = [r for r in rows if r["status"] == "mismatch"]
    assert [(r["name"], r["rank"], r["devices"]) for r in mismatched] == [("model.swiglu", "1", "5")]


def test_golden_mode_flags_exactly_the_faulty_chip_of_the_faulty_rank(runs):
    good, bad = runs
    failing = "SELECT o.rank, o.name, c.device_id FROM tensor_comparisons c JOIN operations o USING (operation_id) " \
              "WHERE c.status = 'fail'"
    with ttreport.open(bad) as r:
        assert r.sql(failing) == [{"rank": PLANTED_RANK, "name": "model.swiglu", "device_id": PLANTED_DEVICE}]
        checked = r.sql("SELECT count(DISTINCT device_id) AS n FROM tensor_comparisons c JOIN operations o "
                        "USING (operation_id) WHERE o.name = 'model.swiglu' AND o.rank = 1")
        assert checked == [{"n": 8}]  # every device's shard was checked, not only the first
    with ttreport.open(good) as r:
        assert r.sql(failing) == []


def test_the_html_export_names_the_device_of_the_first_golden_divergence(runs, tmp_path):
    _, bad = runs
    with ttreport.open(bad) as r:
        (op_id,), = r.execute("SELECT operation_id FROM operations WHERE name = 'model.swiglu' AND rank = 1").fetchall()
        html = r.export_html(tmp_path / "bad.html").read_text()
    assert f"op {op_id}</a> (local, tensor " in html and ", device 5, PCC " in html


def test_the_cli_shows_per_device_checks_and_shards(runs):
    from click.testing import CliRunner

    _, bad = runs
    with ttreport.open(bad) as r:
        (op_id, tid), = r.execute("SELECT o.operation_id, x.tensor_id FROM operations o JOIN output_tensors x "
                                  "USING (operation_id) WHERE o.name = 'model.swiglu' AND o.rank = 1").fetchall()
    shown = CliRunner().invoke(main, ["op", str(bad), str(op_id)])
    assert shown.exit_code == 0, shown.output
    assert "golden    local: fail on device(s) 5 of 8 devices" in shown.output and "(worst: device 5)" in shown.output
    summary = CliRunner().invoke(main, ["summary", str(bad)])
    assert "golden    local fail: 1 comparison on 1 op, lowest PCC" in summary.output
    assert f"at op {op_id} (device 5)" in summary.output
    tensor = CliRunner().invoke(main, ["tensor", str(bad), str(tid), "--device", "5"])
    assert tensor.exit_code == 0, tensor.output
    assert "one file per device shard: devices 0, 1, 2, 3, 4, 5, 6, 7" in tensor.output
    assert "  device 5: numel 2048" in tensor.output and "device 4:" not in tensor.output
    every = CliRunner().invoke(main, ["tensor", str(bad), str(tid)])
    assert [line.split(":")[0] for line in every.output.splitlines() if line.startswith("  device ")] == \
        [f"  device {d}" for d in range(8)]
    missing = CliRunner().invoke(main, ["tensor", str(bad), str(tid), "--device", "9"])
    assert missing.exit_code == 2 and "no shard on device 9" in missing.output


def test_a_store_keeps_every_device_shard_of_a_pushed_run(runs, tmp_path, monkeypatch, postgres_cluster):
    from ttreport import store

    monkeypatch.setenv("TTREPORT_STORE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "tensor-store").mkdir()
    url = f"{postgres_cluster.new_database()}&tensors={tmp_path / 'tensor-store'}"
    _, bad = runs
    store.push(bad, url, name="bad")
    with ttreport.open(bad) as local, ttreport.open(url, run="bad") as pulled:
        (tid,), = local.execute("SELECT x.tensor_id FROM operations o JOIN output_tensors x USING (operation_id) "
                                "WHERE o.name = 'model.swiglu' AND o.rank = 1").fetchall()
        assert pulled.tensor_devices(tid) == list(range(8))
        assert torch.equal(pulled.load_tensor(tid, device=5), local.load_tensor(tid, device=5))


def test_global_mode_carries_each_devices_golden_and_a_raised_mismatch_names_the_device(tmp_path):
    x = torch.zeros(32, 128)
    x[:, 64:96] = 1 / 3  # only device 2's shard holds values bfloat16 cannot hold exactly
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 4))
    try:
        put = dict(dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh, mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=1))
        with ttreport.capture(tmp_path / "both", config=ttreport.Config(comparison="both")):
            ttnn.add(ttnn.relu(ttnn.from_torch(x, **put)), 1.0)
        with ttreport.open(tmp_path / "both") as r:
            rows = r.sql("SELECT o.name, c.mode, count(*) AS n, count(DISTINCT c.device_id) AS devices FROM "
                         "tensor_comparisons c JOIN operations o USING (operation_id) GROUP BY o.name, c.mode")
            assert {(row["n"], row["devices"]) for row in rows} == {(4, 4)} and len(rows) == 6
            assert r.sql("SELECT DISTINCT status FROM tensor_comparisons") == [{"status": "pass"}]
        strict = ttreport.Config(comparison="local", raise_on_mismatch=True, comparison_rtol=0.0,
                                 comparison_atol=0.0)
        raised = r"ttnn.from_torch .* \(its shard on device 2\) does not match"
        with pytest.raises(ComparisonError, match=raised), ttreport.capture(tmp_path / "strict", config=strict):
            ttnn.from_torch(x, **put)
    finally:
        ttnn.close_mesh_device(mesh)
