"""Making tensors outside from_torch: ttnn.Tensor(...), as_tensor and its cache, allocate and copy."""

import sqlite3

import numpy as np
import pytest
import torch

import device_sim as ttnn
import ttreport
from device_sim.ops.tensor_io import cache_path


def test_tensor_from_values_and_a_shape_in_tt_nns_positional_form(device):
    t = ttnn.Tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [1, 2, 3], ttnn.bfloat16, ttnn.ROW_MAJOR, device, ttnn.L1)
    assert torch.equal(t.to_torch(), torch.arange(1.0, 7.0).reshape(1, 2, 3).bfloat16())
    assert (t.shape, t.dtype, t.layout, t.memory_config(), t.device()) == ((1, 2, 3), ttnn.bfloat16, ttnn.ROW_MAJOR,
                                                                           ttnn.L1, device)
    host = ttnn.Tensor([1, 2, 3, 4], [2, 2], ttnn.int32, ttnn.TILE)
    assert host.device() is None and host.padded_shape == (32, 32) and host.to_list() == [[1, 2], [3, 4]]


def test_tensor_from_an_array_in_tt_nns_keyword_form(device):
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ttnn.Tensor(array, ttnn.bfloat8_b, device)  # (tensor, data_type, device): layout defaults to TILE
    assert (t.dtype, t.layout, t.memory_config_source) == (ttnn.bfloat8_b, ttnn.TILE, "default")
    t = ttnn.Tensor(tensor=torch.ones(2, 3), data_type=ttnn.float32, layout=ttnn.TILE, mem_config=ttnn.L1,
                    device=device)
    assert (t.layout, t.memory_config(), t.memory_config_source) == (ttnn.TILE, ttnn.L1, "argument")


def test_tensor_rejects_values_that_do_not_fill_the_shape():
    with pytest.raises(ValueError, match=r"ttnn.Tensor: 3 values do not fill shape \[2, 2\] \(4 elements\)"):
        ttnn.Tensor([1.0, 2.0, 3.0], [2, 2], ttnn.bfloat16, ttnn.ROW_MAJOR)
    with pytest.raises(TypeError, match="data_type and layout are required in this form"):
        ttnn.Tensor([1.0, 2.0], [2])


def test_a_device_tensor_made_by_tensor_during_a_capture_is_recorded_with_its_producer(tmp_path, device):
    with ttreport.capture(tmp_path / "r") as report:
        t = ttnn.Tensor(np.ones((32, 32), dtype=np.float32), device=device, layout=ttnn.TILE)
        y = ttnn.exp(t)
    con = sqlite3.connect(report.db_path)
    try:
        ops = con.execute("SELECT operation_id, name FROM operations ORDER BY operation_id").fetchall()
        assert [n for _, n in ops] == ["ttnn.Tensor", "ttnn.exp"]
        made = con.execute("SELECT producer_operation_id, address, buffer_type FROM tensors WHERE tensor_id = ?",
                           (t.tensor_id,)).fetchone()
        assert made == (ops[0][0], t.buffer_address(), 0)
        assert con.execute("SELECT tensor_id FROM output_tensors WHERE operation_id = ?", (ops[0][0],)).fetchall() \
            == [(t.tensor_id,)]
        assert con.execute("SELECT tensor_id FROM input_tensors WHERE operation_id = ?", (ops[1][0],)).fetchall() \
            == [(t.tensor_id,)]
    finally:
        con.close()
    assert torch.allclose(y.to_torch(), torch.ones(32, 32).exp())


# -- as_tensor ------------------------------------------------------------------------------------------------------
def test_as_tensor_names_its_cache_file_as_tt_nn_does(tmp_path):
    assert cache_path(tmp_path / "w", ttnn.bfloat8_b, ttnn.TILE) == tmp_path / "w_dtype_BFLOAT8_B_layout_TILE.tensorbin"
    assert cache_path("w", None, None).name == "w_dtype_None_layout_None.tensorbin"


def test_as_tensor_writes_its_cache_once_then_loads_it_without_converting_again(tmp_path, device):
    calls = []

    def preprocess(t):
        calls.append(tuple(t.shape))
        return t.transpose(0, 1)

    w = torch.randn(64, 32)
    kw = dict(dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device, memory_config=ttnn.DRAM,
              cache_file_name=tmp_path / "cache" / "w", preprocess=preprocess)
    first = ttnn.as_tensor(w, **kw)
    file = tmp_path / "cache" / "w_dtype_BFLOAT8_B_layout_TILE.tensorbin"
    assert file.is_file() and calls == [(64, 32)]
    second = ttnn.as_tensor(w, **kw)
    assert calls == [(64, 32)]  # loaded from the file: preprocess did not run again
    third = ttnn.as_tensor(None, **kw)  # a later run need not even have the weights
    for t in (first, second, third):
        assert (t.shape, t.dtype, t.layout, t.memory_config(), t.device()) == ((32, 64), ttnn.bfloat8_b, ttnn.TILE,
                                                                               ttnn.DRAM, device)
        assert torch.equal(t.to_torch(), first.to_torch())
    want = ttnn.from_torch(w.transpose(0, 1), dtype=ttnn.bfloat8_b, layout=ttnn.TILE).to_torch()
    assert torch.equal(first.to_torch(), want)
    assert len({first.buffer_address(), second.buffer_address(), third.buffer_address()}) == 3


def test_as_tensor_rebuilds_a_cache_file_it_cannot_read(tmp_path):
    file = cache_path(tmp_path / "w", ttnn.bfloat16, ttnn.ROW_MAJOR)
    file.write_bytes(b"not a tensor")
    t = ttnn.as_tensor(torch.ones(2, 3), ttnn.bfloat16, cache_file_name=tmp_path / "w")
    assert torch.equal(t.to_torch(), torch.ones(2, 3).bfloat16())
    assert torch.equal(ttnn.load_tensor(file).to_torch(), t.to_torch())


def test_as_tensor_needs_a_memory_config_with_a_device_and_a_tensor_without_a_cache(tmp_path, device):
    with pytest.raises(ValueError, match="memory_config must be given when device is"):
        ttnn.as_tensor(torch.ones(2, 3), ttnn.bfloat16, device=device)
    with pytest.raises(FileNotFoundError, match="no cache file .*w_dtype_BFLOAT16_layout_ROW_MAJOR.tensorbin"):
        ttnn.as_tensor(None, ttnn.bfloat16, cache_file_name=tmp_path / "w")


def test_as_tensor_shows_its_from_torch_nested_in_a_capture(tmp_path, device):
    with ttreport.capture(tmp_path / "r") as report:
        ttnn.as_tensor(torch.ones(32, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device, memory_config=ttnn.L1)
    con = sqlite3.connect(report.db_path)
    try:
        rows = con.execute("SELECT name, depth FROM operations ORDER BY operation_id").fetchall()
    finally:
        con.close()
    assert rows == [("ttnn.as_tensor", 0), ("ttnn.from_torch", 1)]


# -- allocate and copy ----------------------------------------------------------------------------------------------
def test_allocate_then_copy_fills_a_device_tensor_in_place(device):
    out = ttnn.allocate_tensor_on_device(ttnn.Shape([2, 32, 64]), ttnn.bfloat16, ttnn.TILE, device, ttnn.L1)
    assert (out.shape, out.memory_config(), out.buffer.size) == ((2, 32, 64), ttnn.L1, 2 * 2 * 2048)
    address, tensor_id = out.buffer_address(), out.tensor_id
    x = torch.randn(2, 32, 64)
    assert ttnn.copy_host_to_device_tensor(ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE), out) is None
    assert (out.buffer_address(), out.tensor_id) == (address, tensor_id)
    assert torch.equal(out.to_torch(), x.bfloat16())
    spec = ttnn.TensorSpec(ttnn.Shape([32, 32]), ttnn.float32, ttnn.TILE, ttnn.DRAM)
    assert ttnn.allocate_tensor_on_device(spec, device).spec == spec


def test_copy_into_a_tensor_of_another_spec_names_both(device):
    out = ttnn.allocate_tensor_on_device([32, 32], ttnn.bfloat16, ttnn.TILE, device)
    host = ttnn.from_torch(torch.ones(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE)
    with pytest.raises(ValueError, match=r"host tensor is \[32, 64\] .* but the device tensor is \[32, 32\]"):
        ttnn.copy_host_to_device_tensor(host, out)
    with pytest.raises(ValueError, match="is on the host; make it with ttnn.allocate_tensor_on_device"):
        ttnn.copy_host_to_device_tensor(host, host)


def test_as_tensor_caches_the_whole_tensor_and_shards_it_over_a_mesh_on_load(tmp_path):
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 2))
    try:
        w = torch.randn(32, 64)
        kw = dict(dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh, memory_config=ttnn.DRAM,
                  cache_file_name=tmp_path / "w", mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=1))
        ttnn.as_tensor(w, **kw)
        cached = ttnn.load_tensor(cache_path(tmp_path / "w", ttnn.bfloat16, ttnn.TILE))
        assert cached.shape == (32, 64)  # one file, unsharded: it serves a mesh of any size
        loaded = ttnn.as_tensor(None, **kw)
        assert [t.shape for t in ttnn.get_device_tensors(loaded)] == [(32, 32), (32, 32)]
        joined = ttnn.to_torch(loaded, mesh_composer=ttnn.ConcatMeshToTensor(mesh, dim=1))
        assert torch.equal(joined, w.bfloat16())
    finally:
        ttnn.close_mesh_device(mesh)
