"""A stored mesh tensor: one file per device shard, each verified when read, kept by overwrite rules.

    .venv/bin/python -m pytest tests/test_mesh_tensor_files.py -q
"""

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport.errors import TensorFileDamagedError
from ttreport.read.faults import check
from ttreport.read.report import ReportError

X = torch.arange(32 * 128, dtype=torch.float32).reshape(32, 128) / 64
XB = X.bfloat16().float()  # what the device holds


def capture_relu(path, **config):
    """relu of X split by columns over a 1x4 mesh; returns the ids of from_torch's and relu's outputs."""
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 4))
    try:
        with ttreport.capture(path, config=ttreport.Config(tensors="outputs", **config)):
            x = ttnn.from_torch(X, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                                mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=1))
            y = ttnn.relu(x)
        return x.tensor_id, y.tensor_id
    finally:
        ttnn.close_mesh_device(mesh)


@pytest.mark.parametrize("suffix, detach", [(".pt", True), (".bin", False)])
def test_each_device_shard_has_its_own_file_and_the_reader_joins_them(tmp_path, suffix, detach):
    _, y = capture_relu(tmp_path / "run", detach_saved_tensors=detach)
    folder = tmp_path / "run" / "tensors" / str(y)
    assert sorted(p.name for p in folder.iterdir()) == [f"{d}{suffix}" for d in range(4)]
    with ttreport.open(tmp_path / "run") as r:
        assert r.tensor(y).file == f"tensors/{y}/"
        assert r.tensor_devices(y) == [0, 1, 2, 3]
        torch.testing.assert_close(r.load_tensor(y, dims=1).float(), XB)  # ConcatMeshToTensor(dim=1)'s inverse
        torch.testing.assert_close(r.load_tensor(y, device=2).float(), XB[:, 64:96])
        assert r.load_tensor(y).shape == (4, 32, 32)  # without dims: stacked in device order
        with pytest.raises(ReportError, match="dims=d, or with dims=\\(d0, d1\\) and mesh_shape"):
            r.load_tensor(y, dims=(0, 1), mesh_shape=(2, 4))
    assert ttreport.load_tensor(tmp_path / "run", y).shape == (4, 32, 32)
    assert check(tmp_path / "run") == []


def test_a_changed_shard_file_is_caught_and_names_its_device(tmp_path):
    _, y = capture_relu(tmp_path / "run")
    shard = tmp_path / "run" / "tensors" / str(y) / "2.pt"
    blob = bytearray(shard.read_bytes())
    blob[-40] ^= 0xFF
    shard.write_bytes(bytes(blob))
    with ttreport.open(tmp_path / "run") as r:
        assert torch.equal(r.load_tensor(y, device=1).float(), XB[:, 32:64])  # the others still read
        with pytest.raises(TensorFileDamagedError, match=f"tensors/{y}/2.pt has changed"):
            r.load_tensor(y, device=2)
    faults = check(tmp_path / "run")
    assert len(faults) == 1 and f"tensor {y}" in faults[0] and "2.pt" in faults[0]


def test_overwriting_a_report_removes_its_shard_folders(tmp_path):
    capture_relu(tmp_path / "run")
    assert any(p.is_dir() for p in (tmp_path / "run" / "tensors").iterdir())
    with ttreport.capture(tmp_path / "run", config=ttreport.Config(overwrite=True)):
        pass
    assert not (tmp_path / "run" / "tensors").exists()


def test_a_one_device_tensor_has_no_shards_to_choose(tmp_path):
    device = ttnn.open_device(device_id=0)
    try:
        with ttreport.capture(tmp_path / "run", config=ttreport.Config(tensors="outputs")):
            y = ttnn.relu(ttnn.from_torch(X, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device))
    finally:
        ttnn.close_device(device)
    with ttreport.open(tmp_path / "run") as r:
        assert r.tensor_devices(y.tensor_id) == []
        assert torch.equal(r.load_tensor(y.tensor_id, device=0), r.load_tensor(y.tensor_id))
        with pytest.raises(ReportError, match="not on device 3"):
            r.load_tensor(y.tensor_id, device=3)
        with pytest.raises(ReportError, match="not a mesh tensor"):
            r.load_tensor(y.tensor_id, dims=1)
