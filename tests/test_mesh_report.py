"""A report of a mesh run: one op per call, each chip's tensors and buffers, and per-device L1 peaks."""

from __future__ import annotations

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport.cli import main


@pytest.fixture
def mesh_report(tmp_path):
    """A 1x4 mesh run where chip 2 alone holds an extra 64 KiB L1 tensor after op 3."""
    path = tmp_path / "mesh"
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 4))
    try:
        with ttreport.capture(path):
            x = ttnn.from_torch(torch.randn(1, 1, 32, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                                memory_config=ttnn.L1, mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
            y = ttnn.relu(x)
            extra = ttnn.from_torch(torch.ones(128, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE,  # op 3
                                    device=mesh.get_devices()[2], memory_config=ttnn.L1)
            ttnn.all_gather(y, dim=3)
            del extra
    finally:
        ttnn.close_mesh_device(mesh)
    return path


def test_an_op_on_a_mesh_is_recorded_once_with_a_device_tensor_per_chip(mesh_report):
    r = ttreport.Report(mesh_report)
    assert [o["name"] for o in r.sql("SELECT name FROM operations ORDER BY operation_id")] == [
        "ttnn.from_torch", "ttnn.relu", "ttnn.from_torch", "ttnn.all_gather"]
    relu_out = r.sql("SELECT tensor_id FROM output_tensors WHERE operation_id = 2")[0]["tensor_id"]
    row = r.sql("SELECT shape, device_id, address FROM tensors WHERE tensor_id = ?", (relu_out,))[0]
    assert row["shape"] == "Shape([1, 1, 32, 32])" and row["device_id"] is None
    shards = r.sql("SELECT device_id, address FROM device_tensors WHERE tensor_id = ? ORDER BY device_id",
                   (relu_out,))
    assert [s["device_id"] for s in shards] == [0, 1, 2, 3]
    assert {s["address"] for s in shards} == {row["address"]}  # one address on every chip, the row's
    # After chip 2 alone allocated a tensor (op 3), the all_gather's output is still one mesh buffer: the lock-step
    # allocator gives it the first range free on every chip, clear of chip 2's tensor
    gathered = r.sql("SELECT t.tensor_id, t.address FROM tensors t JOIN output_tensors o USING (tensor_id) "
                     "WHERE o.operation_id = 4")[0]
    assert gathered["address"] is not None
    assert {s["address"] for s in r.sql("SELECT address FROM device_tensors WHERE tensor_id = ?",
                                        (gathered["tensor_id"],))} == {gathered["address"]}
    on_chip_2 = sorted((b["address"], b["address"] + b["max_size_per_bank"]) for b in r.sql(
        "SELECT address, max_size_per_bank FROM buffers WHERE operation_id = 4 AND device_id = 2 "
        "AND buffer_type = 1"))  # L1
    assert gathered["address"] in [start for start, _ in on_chip_2] and len(on_chip_2) >= 3
    assert all(end <= start for (_, end), (start, _) in zip(on_chip_2, on_chip_2[1:]))  # none overlaps another
    assert [d["device_id"] for d in r.devices] == [0, 1, 2, 3]
    assert {b["device_id"] for b in r.sql("SELECT device_id FROM buffers WHERE operation_id = 2")} == {0, 1, 2, 3}


def test_the_per_device_l1_peak_names_the_device_that_hit_it(mesh_report):
    s = ttreport.Report(mesh_report).summary()
    top = s.peak_l1_by_device[0]
    assert top["device_id"] == 2 and top["bytes"] - s.peak_l1_by_device[1]["bytes"] == 128 * 256 * 2
    assert {p["device_id"] for p in s.peak_l1_by_device} == {0, 1, 2, 3}


def test_the_cli_shows_l1_per_device_in_summary_and_op(mesh_report):
    summary = CliRunner().invoke(main, ["summary", str(mesh_report)], catch_exceptions=False).output
    assert "highest: device 2" in summary and "device 3:" in summary
    op = CliRunner().invoke(main, ["op", str(mesh_report), "4"], catch_exceptions=False).output
    assert "L1 by device  0: " in op and ", 3: " in op


def test_a_single_device_report_shows_no_per_device_lines(tmp_path, device):
    with ttreport.capture(tmp_path / "one"):
        ttnn.relu(ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=device, memory_config=ttnn.L1))
    summary = CliRunner().invoke(main, ["summary", str(tmp_path / "one")], catch_exceptions=False).output
    assert "by device" not in summary


def test_a_mesh_report_carries_the_cluster_descriptor_tt_nn_writes(mesh_report, tmp_path, device):
    text = (mesh_report / "cluster_descriptor.yaml").read_text()
    assert "ethernet_connections: [" in text and "   7: Wormhole," in text  # the whole 2x4 system, a T3000
    assert "[{chip: 0, chan: 0}, {chip: 1, chan: 8}]," in text  # remote chip 0 to MMIO chip 1, on their n300
    assert "chips_with_mmio: [\n   1: 0,\n   2: 3,\n   5: 1,\n   6: 2,\n]" in text
    assert (mesh_report / "physical_chip_mesh_coordinate_mapping_1_of_1.yaml").read_text().startswith(
        "chips:\n  0: [0, 0]\n  1: [0, 1]\n")
    with ttreport.capture(tmp_path / "one"):
        ttnn.relu(ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=device))
    # one chip: the machine's descriptor all the same, as TT-NN's reports carry UMD's (the topology view reads it)
    assert (tmp_path / "one" / "cluster_descriptor.yaml").read_text() == text


def test_a_one_chip_submesh_is_recorded_as_its_chip_once(tmp_path):
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 4))
    try:
        sub = mesh.create_submesh(ttnn.MeshShape(1, 1), offset=ttnn.MeshCoordinate(0, 2))
        chip = mesh.get_devices()[2]
        with ttreport.capture(tmp_path / "sub"):
            x = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=sub, memory_config=ttnn.L1)
            t = ttnn.relu(x)
            l1_now = chip.memory.bytes_used(ttnn.BufferType.L1)
        del x, t
    finally:
        ttnn.close_mesh_device(mesh)
    r = ttreport.Report(tmp_path / "sub")
    assert [d["device_id"] for d in r.devices] == [0, 1, 2, 3]  # the open chips, each once
    assert r.sql("SELECT l1_bytes FROM operations WHERE operation_id = 2")[0]["l1_bytes"] == l1_now  # not twice


def test_the_cookbooks_mesh_queries_answer_on_a_mesh_report(mesh_report):
    from test_cookbook import cookbook_queries

    sql = dict(cookbook_queries())
    r = ttreport.Report(mesh_report)
    shards = r.sql(sql["Where does each shard of a mesh tensor live?"])
    assert {s["device_id"] for s in shards} == {0, 1, 2, 3}
    per_chip = r.sql(sql["Each chip's L1 after every op (on a mesh, one row per chip)"])
    after_op3 = {row["device_id"]: row["l1_bytes"] for row in per_chip if row["operation_id"] == 3}
    assert after_op3[2] - after_op3[0] == 128 * 256 * 2  # chip 2's extra tensor
