"""Mesh devices: chips with their own memory, mesh tensors with a shard per chip at one address (lock-step
allocation), ops run per chip."""

from __future__ import annotations

import pytest
import torch

import device_sim as ttnn
from device_sim import registry


@pytest.fixture
def mesh():
    m = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(2, 4))
    try:
        yield m
    finally:
        ttnn.close_mesh_device(m)


def test_open_device_returns_a_one_by_one_mesh_as_tt_nn_0_81_does(device):
    assert isinstance(device, ttnn.MeshDevice)
    assert tuple(device.shape) == (1, 1)
    assert device.get_devices() == [device]
    assert device.get_device_ids() == [0]
    t = ttnn.from_torch(torch.ones(32, 32), device=device)
    assert type(t) is ttnn.Tensor  # one chip: an ordinary tensor, nothing per shard


def test_a_mesh_has_chips_in_row_major_order_each_with_its_own_allocator(mesh):
    assert mesh.get_device_ids() == list(range(8))
    assert mesh.get_num_devices() == 8 == ttnn.get_num_devices()
    assert tuple(mesh.shape) == (2, 4) and mesh.num_rows == 2 and mesh.num_cols == 4
    assert mesh.get_device_id(ttnn.MeshCoordinate(1, 2)) == 6
    memories = {id(chip.memory) for chip in mesh.get_devices()}
    assert len(memories) == 8
    t = ttnn.from_torch(torch.ones(32, 32), device=mesh, memory_config=ttnn.L1)
    addresses = [s.buffer.address for s in ttnn.get_device_tensors(t)]
    assert len(set(addresses)) == 1  # one mesh buffer: the mesh allocates it once, for every chip
    assert [s.buffer.device_id for s in ttnn.get_device_tensors(t)] == list(range(8))


def _addresses(t) -> set[int]:
    return {s.buffer.address for s in ttnn.get_device_tensors(t)}


def test_a_mesh_tensor_has_one_address_on_every_chip_after_one_chip_allocated_alone(mesh):
    # TT-NN's MeshBuffer takes its address from the mesh's allocator, then each chip's buffer sits there
    # (tt_metal/distributed/mesh_buffer.cpp); the chips' own first fits would differ here
    a = ttnn.from_torch(torch.ones(64, 64), layout=ttnn.TILE, device=mesh, memory_config=ttnn.L1)
    alone = ttnn.relu(ttnn.get_device_tensors(a)[3])  # chip 3 alone: an ordinary single-chip op
    chip0 = mesh.get_devices()[0].memory.allocators[ttnn.BufferType.L1]
    assert chip0.is_free(alone.buffer.address, alone.buffer.max_size_per_bank)  # chip 0's own next first fit
    b = ttnn.relu(a)
    c = ttnn.add(a, b)
    assert len(_addresses(b)) == len(_addresses(c)) == 1
    assert _addresses(b) != {alone.buffer.address}  # clear of chip 3's tensor, on every chip
    for chip in mesh.get_devices():  # each chip books its own buffer at that address
        assert {buf.address for buf in chip.memory.live_buffers()} >= _addresses(b) | _addresses(c)


def test_a_one_chip_submesh_allocates_on_its_own_and_two_submeshes_apart(mesh):
    # A 1x1 submesh is its chip (its memory is the chip's): a tensor there takes that chip's own first fit
    single = mesh.create_submesh(ttnn.MeshShape(1, 1), ttnn.MeshCoordinate(1, 3))
    assert single.memory is mesh.get_devices()[7].memory
    alone = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=single, memory_config=ttnn.L1)
    assert type(alone) is ttnn.Tensor and alone.buffer.device_id == 7
    # Two 1x4 submeshes share no chip, so each allocates as a mesh of its own (TT-NN gives each submesh its
    # allocator): the same address on both rows, but the second row's keeps clear of chip 7's tensor
    top, bottom = mesh.create_submeshes(ttnn.MeshShape(1, 4))
    x = ttnn.from_torch(torch.ones(32, 128), layout=ttnn.TILE, device=top, memory_config=ttnn.L1,
                        mesh_mapper=ttnn.ShardTensorToMesh(top, dim=1))
    y = ttnn.from_torch(torch.ones(32, 128), layout=ttnn.TILE, device=bottom, memory_config=ttnn.L1,
                        mesh_mapper=ttnn.ShardTensorToMesh(bottom, dim=1))
    assert _addresses(x) == {alone.buffer.address}
    assert len(_addresses(y)) == 1 and _addresses(y) != _addresses(x)


def test_a_multi_chip_mesh_has_no_memory_of_its_own_and_says_where_it_is(mesh):
    with pytest.raises(AttributeError, match="each chip has its allocator"):
        mesh.memory  # noqa: B018


def test_mesh_shape_coordinates_and_ranges():
    assert ttnn.MeshShape(2, 4) == ttnn.MeshShape([2, 4]) and ttnn.MeshShape(2, 4).mesh_size() == 8
    rng = ttnn.MeshCoordinateRange(ttnn.MeshShape(2, 2))
    assert list(rng) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert ttnn.MeshCoordinate(1, 1) in rng and len(rng) == 4
    with pytest.raises(ValueError, match="positive integer"):
        ttnn.MeshShape(0, 4)


def test_submeshes_share_the_parents_chips_and_reshape_keeps_the_order(mesh):
    rows = mesh.create_submeshes(ttnn.MeshShape(1, 4))
    assert [r.get_device_ids() for r in rows] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert rows[1].get_devices()[0] is mesh.get_devices()[4]
    sub = mesh.create_submesh(ttnn.MeshShape(2, 2), offset=ttnn.MeshCoordinate(0, 2))
    assert sub.get_device_ids() == [2, 3, 6, 7]
    mesh.reshape(ttnn.MeshShape(1, 8))
    assert tuple(mesh.shape) == (1, 8) and mesh.get_device_ids() == list(range(8))
    with pytest.raises(ValueError, match="cannot reshape"):
        mesh.reshape(ttnn.MeshShape(3, 3))


def test_opening_more_chips_than_the_system_has_names_the_setting():
    with pytest.raises(ValueError, match="DEVICE_SIM_SYSTEM_MESH"):
        ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(4, 8))


def test_a_chip_already_open_cannot_join_a_mesh(device):
    with pytest.raises(RuntimeError, match=r"device\(s\) \[0\] are already open"):
        ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))


def test_ops_run_once_per_chip_only_while_a_multi_chip_mesh_is_open(mesh):
    assert registry._per_device is not None
    ttnn.close_mesh_device(mesh)
    assert registry._per_device is None  # single-chip ops are back to one global read


def test_shard_tensor_2d_mesh_splits_rows_over_mesh_rows_and_columns_over_mesh_columns(mesh):
    x = torch.arange(64 * 256, dtype=torch.float32).reshape(64, 256)
    t = ttnn.from_torch(x, device=mesh, mesh_mapper=ttnn.ShardTensor2dMesh(mesh, mesh_shape=(2, 4), dims=(0, 1)))
    assert tuple(t.shape) == (32, 64)  # each chip's shard, as TT-NN reports it
    shards = ttnn.get_device_tensors(t)
    assert torch.equal(shards[6].to_torch(), x[32:, 128:192])  # chip (1, 2)
    back = ttnn.to_torch(t, mesh_composer=ttnn.ConcatMesh2dToTensor(mesh, mesh_shape=(2, 4), dims=(0, 1)))
    assert torch.equal(back, x)


def test_none_in_shard_tensor_2d_mesh_replicates_along_that_mesh_dimension(mesh):
    x = torch.arange(8 * 64, dtype=torch.float32).reshape(8, 64)
    t = ttnn.from_torch(x, device=mesh, mesh_mapper=ttnn.ShardTensor2dMesh(mesh, mesh_shape=(2, 4), dims=(None, 1)))
    shards = [s.to_torch() for s in ttnn.get_device_tensors(t)]
    assert torch.equal(shards[1], x[:, 16:32]) and torch.equal(shards[5], x[:, 16:32])


def test_shard_and_replicate_mappers_and_the_concat_composer(mesh):
    x = torch.randn(1, 1, 32, 256)
    sharded = ttnn.from_torch(x, device=mesh, mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
    assert tuple(sharded.shape) == (1, 1, 32, 32)
    assert torch.equal(ttnn.to_torch(sharded, mesh_composer=ttnn.ConcatMeshToTensor(mesh, dim=3)), x)
    replicated = ttnn.from_torch(x, device=mesh, mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))
    joined = ttnn.to_torch(replicated, mesh_composer=ttnn.ConcatMeshToTensor(mesh, dim=0))
    assert joined.shape == (8, 1, 32, 256) and torch.equal(joined[7:], x)
    config = ttnn.MeshMapperConfig([ttnn.PlacementReplicate(), ttnn.PlacementShard(-1)])
    t = ttnn.from_torch(x, device=mesh, mesh_mapper=ttnn.create_mesh_mapper(mesh, config))
    assert tuple(t.shape) == (1, 1, 32, 64)


def test_from_torch_onto_a_mesh_without_a_mapper_replicates(mesh):
    t = ttnn.from_torch(torch.ones(32, 32), device=mesh)
    assert isinstance(t, ttnn.MeshTensor) and len(ttnn.get_device_tensors(t)) == 8


def test_to_torch_of_several_shards_without_a_composer_says_what_to_pass(mesh):
    t = ttnn.from_torch(torch.ones(32, 32), device=mesh)
    with pytest.raises(ValueError, match="mesh_composer=ttnn.ConcatMeshToTensor"):
        ttnn.to_torch(t)


def test_a_shard_that_does_not_split_evenly_is_an_error_naming_the_dim(mesh):
    with pytest.raises(ValueError, match="does not split evenly into 8 shards"):
        ttnn.from_torch(torch.ones(32, 100), device=mesh, mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=1))


def test_a_mapper_for_another_mesh_is_an_error(mesh):
    rows = mesh.create_submeshes(ttnn.MeshShape(1, 4))
    with pytest.raises(ValueError, match="mesh_mapper is for"):
        ttnn.from_torch(torch.ones(32, 128), device=rows[0], mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=1))


def test_an_op_on_mesh_tensors_runs_on_each_chips_shard(mesh):
    a, b = torch.randn(64, 256), torch.randn(64, 256)
    mapper = ttnn.ShardTensor2dMesh(mesh, mesh_shape=(2, 4), dims=(0, 1))
    ta = ttnn.from_torch(a, device=mesh, layout=ttnn.TILE, mesh_mapper=mapper)
    tb = ttnn.from_torch(b, device=mesh, layout=ttnn.TILE, mesh_mapper=mapper)
    out = ttnn.mul(ta, tb) + 1.0
    assert isinstance(out, ttnn.MeshTensor)
    got = ttnn.to_torch(out, mesh_composer=ttnn.ConcatMesh2dToTensor(mesh, mesh_shape=(2, 4), dims=(0, 1)))
    torch.testing.assert_close(got, a * b + 1.0)
    assert [s.device().device_id for s in ttnn.get_device_tensors(out)] == list(range(8))


def test_creation_ops_with_a_mesh_device_make_a_tensor_on_every_chip(mesh):
    t = ttnn.zeros((32, 32), device=mesh, layout=ttnn.TILE)
    assert isinstance(t, ttnn.MeshTensor)
    assert {s.device().device_id for s in ttnn.get_device_tensors(t)} == set(range(8))


def test_a_mesh_tensor_moves_to_the_host_and_back_shard_by_shard(mesh):
    x = torch.randn(32, 256)
    t = ttnn.from_torch(x, device=mesh, mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=1))
    host = ttnn.from_device(t)
    assert host.device() is None and all(s.device() is None for s in ttnn.get_device_tensors(host))
    again = ttnn.to_device(host, mesh)
    composer = ttnn.ConcatMeshToTensor(mesh, dim=1)
    assert torch.equal(ttnn.to_torch(host, mesh_composer=composer), x)
    assert torch.equal(ttnn.to_torch(again, mesh_composer=composer), x)


def test_deallocating_a_mesh_tensor_frees_every_chips_buffer(mesh):
    t = ttnn.from_torch(torch.ones(32, 32), device=mesh, memory_config=ttnn.L1)
    chips = mesh.get_devices()
    used = [c.memory.bytes_used(ttnn.BufferType.L1) for c in chips]
    assert all(u > 0 for u in used)
    ttnn.deallocate(t)
    assert [c.memory.bytes_used(ttnn.BufferType.L1) for c in chips] == [0] * 8
    with pytest.raises(RuntimeError, match="deallocated"):
        t.shape  # noqa: B018


def test_get_device_tensors_and_aggregate_as_tensor_round_trip(mesh):
    t = ttnn.from_torch(torch.randn(32, 256), device=mesh, mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=1))
    parts = ttnn.get_device_tensors(t)
    back = ttnn.aggregate_as_tensor(parts)
    assert isinstance(back, ttnn.MeshTensor) and back.mesh is mesh
    assert [id(p) for p in ttnn.get_device_tensors(back)] == [id(p) for p in parts]
    with pytest.raises(ValueError, match="no open mesh has exactly the chips"):
        ttnn.aggregate_as_tensor(parts[::-1])


def test_tensors_on_two_different_meshes_in_one_op_are_an_error(mesh):
    top, bottom = mesh.create_submeshes(ttnn.MeshShape(1, 4))
    a = ttnn.from_torch(torch.ones(32, 32), device=top)
    b = ttnn.from_torch(torch.ones(32, 32), device=bottom)
    with pytest.raises(ValueError, match="is on device 0 but tensor .* is on device 4"):
        ttnn.add(a, b)


def test_a_mesh_tensor_is_dumped_shard_by_shard_and_loads_onto_a_mesh(mesh, tmp_path):
    x = torch.randn(32, 256)
    t = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh, memory_config=ttnn.L1,
                        mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=1))
    ttnn.dump_tensor(tmp_path / "w.bin", t)
    back = ttnn.load_tensor(tmp_path / "w.bin", device=mesh)
    assert isinstance(back, ttnn.MeshTensor) and back.memory_config().buffer_type == ttnn.BufferType.L1
    composer = ttnn.ConcatMeshToTensor(mesh, dim=1)
    assert torch.equal(ttnn.to_torch(back, mesh_composer=composer), ttnn.to_torch(t, mesh_composer=composer))
    with pytest.raises(ValueError, match="holds a tensor of 8 shards from a \\[2, 4\\] mesh"):
        ttnn.load_tensor(tmp_path / "w.bin")


def test_a_one_dimensional_mesh_is_one_row_of_chips():
    line = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(4))
    try:
        assert (line.num_rows, line.num_cols) == (1, 4)
        assert [m.get_device_ids() for m in line.create_submeshes(ttnn.MeshShape(2))] == [[0, 1], [2, 3]]
        t = ttnn.from_torch(torch.arange(4.0).view(1, 4), device=line, mesh_mapper=ttnn.ShardTensorToMesh(line, dim=1))
        gathered = ttnn.all_gather(t, dim=1, cluster_axis=0)
        assert torch.equal(ttnn.get_device_tensors(gathered)[3].to_torch(), torch.arange(4.0).view(1, 4))
    finally:
        ttnn.close_mesh_device(line)


def test_host_shards_join_into_a_host_mesh_tensor_of_an_open_mesh(mesh):
    parts = [ttnn.from_torch(torch.full((2, 2), float(i))) for i in range(8)]
    t = ttnn.from_host_shards(parts, ttnn.MeshShape(2, 4))
    assert t.device() is None and t.mesh is mesh
    on_mesh = ttnn.to_device(t, mesh)
    assert ttnn.get_device_tensors(on_mesh)[5].to_torch()[0, 0] == 5.0
    assert ttnn.combine_device_tensors(tensors=ttnn.get_device_tensors(on_mesh)).mesh is mesh
    with pytest.raises(ValueError, match=r"no open mesh has shape \(4, 2\)"):
        ttnn.from_host_shards(parts, ttnn.MeshShape(4, 2))


def test_device_sim_is_one_process_rank_0_of_1():
    assert not ttnn.using_distributed_env()
    assert (ttnn.distributed_context_get_rank(), ttnn.distributed_context_get_size()) == (0, 1)
    ttnn.distributed_context_barrier()


def test_a_chip_of_an_open_mesh_cannot_be_opened_again_as_a_device(mesh):
    with pytest.raises(RuntimeError, match="device 3 is a chip of the open MeshDevice"):
        ttnn.open_device(3)
