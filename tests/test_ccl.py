"""Collectives move data between a mesh's chips as TT-NN's do, and check their fabric arguments."""

from __future__ import annotations

import pytest
import torch

import device_sim as ttnn


@pytest.fixture
def mesh():
    m = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(2, 4))
    try:
        yield m
    finally:
        ttnn.close_mesh_device(m)


def per_chip(t) -> list[torch.Tensor]:
    return [s.to_torch() for s in ttnn.get_device_tensors(t)]


def distinct(mesh, shape=(1, 1, 32, 64)):
    """A float32 tensor whose shard on chip i is filled with values from chip i's own range."""
    parts = [torch.randn(shape, generator=torch.Generator().manual_seed(i)) + 10 * i for i in range(8)]
    t = ttnn.aggregate_as_tensor([ttnn.from_torch(p, layout=ttnn.TILE, device=c)
                                  for p, c in zip(parts, mesh.get_devices())])
    return t, parts


def test_all_gather_over_the_whole_mesh_joins_every_shard_in_chip_order(mesh):
    t, parts = distinct(mesh)
    out = ttnn.all_gather(t, dim=3)
    assert tuple(out.shape) == (1, 1, 32, 64 * 8)
    for got in per_chip(out):
        assert torch.equal(got, torch.cat(parts, 3))


def test_all_gather_along_an_axis_gathers_within_each_row_or_column(mesh):
    t, parts = distinct(mesh)
    rows = per_chip(ttnn.all_gather(t, dim=2, cluster_axis=1))
    assert torch.equal(rows[5], torch.cat(parts[4:8], 2))  # chip (1, 1): its row is chips 4..7
    cols = per_chip(ttnn.all_gather(t, dim=2, cluster_axis=0))
    assert torch.equal(cols[6], torch.cat([parts[2], parts[6]], 2))  # chip (1, 2): its column is chips 2, 6


def test_reduce_scatter_sums_the_group_and_keeps_the_chips_part(mesh):
    t, parts = distinct(mesh)
    out = per_chip(ttnn.reduce_scatter(t, dim=3, cluster_axis=1))
    row1 = parts[4] + parts[5] + parts[6] + parts[7]
    torch.testing.assert_close(out[6], row1[..., 32:48])  # chip (1, 2) keeps the third quarter
    assert out[6].shape == (1, 1, 32, 16)


def test_all_reduce_gives_every_chip_the_sum(mesh):
    t, parts = distinct(mesh)
    out = per_chip(ttnn.all_reduce(t))
    for got in out:
        torch.testing.assert_close(got, sum(parts))
    cols = per_chip(ttnn.all_reduce(t, cluster_axis=0))
    torch.testing.assert_close(cols[1], parts[1] + parts[5])


def test_point_to_point_delivers_the_senders_shard_and_leaves_the_rest(mesh):
    t, parts = distinct(mesh)
    out = per_chip(ttnn.point_to_point(t, ttnn.MeshCoordinate(0, 1), ttnn.MeshCoordinate(1, 3)))
    assert torch.equal(out[7], parts[1]) and torch.equal(out[0], parts[0])


def test_the_async_forms_give_the_same_results_with_their_overloads(mesh):
    t, parts = distinct(mesh)
    sem = ttnn.create_global_semaphore(mesh, ttnn.CoreRangeSet([]), 0)
    a = ttnn.experimental.all_gather_async(t, 3, [sem], topology=ttnn.Topology.Ring)
    b = ttnn.experimental.all_gather_async(t, persistent_output_buffer=None, dim=3, multi_device_global_semaphore=sem,
                                           cluster_axis=None, num_links=2)
    c = ttnn.experimental.all_gather_async(t, 3, 1, mesh, ttnn.Topology.Linear, sem)  # (dim, axis, mesh, topology)
    assert torch.equal(per_chip(a)[3], per_chip(b)[3])
    assert torch.equal(per_chip(c)[3], torch.cat(parts[:4], 3))
    r = ttnn.experimental.reduce_scatter_minimal_async(t, None, 3, [sem, sem], cluster_axis=1)
    torch.testing.assert_close(per_chip(r)[0], (parts[0] + parts[1] + parts[2] + parts[3])[..., :16])
    s = ttnn.experimental.all_reduce_async(t, cluster_axis=1, mesh_device=mesh, math_op=ttnn.ReduceType.Sum)
    torch.testing.assert_close(per_chip(s)[4], parts[4] + parts[5] + parts[6] + parts[7])


def test_gathering_over_an_axis_the_mesh_does_not_have_is_an_error(mesh):
    t, _ = distinct(mesh)
    with pytest.raises(ValueError, match=r"cluster_axis=2, but the mesh \[2, 4\] has axes \[0, 1\]"):
        ttnn.all_gather(t, dim=3, cluster_axis=2)


def test_fabric_arguments_are_checked(mesh):
    t, _ = distinct(mesh)
    with pytest.raises(TypeError, match="topology='Ring'"):
        ttnn.all_gather(t, dim=3, topology="Ring")
    with pytest.raises(ValueError, match="num_links=0"):
        ttnn.all_gather(t, dim=3, num_links=0)
    with pytest.raises(TypeError, match="multi_device_global_semaphore= must be a ttnn.GlobalSemaphore"):
        ttnn.experimental.all_gather_async(t, dim=3, multi_device_global_semaphore=None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'cluster_axes'"):
        ttnn.all_gather(t, dim=3, cluster_axes=1)


def test_a_scatter_that_does_not_divide_names_the_group_size(mesh):
    t, _ = distinct(mesh, (1, 1, 32, 42))
    with pytest.raises(ValueError, match="does not split evenly over the 4 chips"):
        ttnn.reduce_scatter(t, dim=3, cluster_axis=1)


def test_collectives_take_the_memory_config_they_are_given(mesh):
    t, _ = distinct(mesh)
    out = ttnn.all_gather(t, dim=3, memory_config=ttnn.L1_MEMORY_CONFIG)
    assert all(s.memory_config().buffer_type == ttnn.BufferType.L1 for s in ttnn.get_device_tensors(out))


def test_on_a_single_device_a_collective_is_a_copy(device):
    t = ttnn.from_torch(torch.randn(1, 1, 32, 32), layout=ttnn.TILE, device=device)
    out = ttnn.all_gather(t, dim=3)
    assert out is not t and torch.equal(out.to_torch(), t.to_torch())


def test_set_fabric_config_is_recorded():
    before = ttnn.get_fabric_config()
    try:
        ttnn.set_fabric_config(ttnn.FabricConfig.FABRIC_1D)
        assert ttnn.get_fabric_config() == ttnn.FabricConfig.FABRIC_1D
    finally:
        ttnn.set_fabric_config(before)


def test_mesh_partition_undoes_all_gather(mesh):
    t, parts = distinct(mesh)
    back = per_chip(ttnn.mesh_partition(ttnn.all_gather(t, dim=3, cluster_axis=1), 3, cluster_axis=1))
    for got, want in zip(back, parts):
        assert torch.equal(got, want)


def test_distributed_rms_norm_over_a_row_matches_rms_norm_of_the_whole(mesh):
    x, g = torch.randn(1, 1, 32, 256), torch.randn(256)
    slices = ttnn.ShardTensor2dMesh(mesh, mesh_shape=(2, 4), dims=(None, 3))
    tx = ttnn.from_torch(x, layout=ttnn.TILE, device=mesh, mesh_mapper=slices)
    tg = ttnn.from_torch(g.view(1, 1, 1, 256), layout=ttnn.TILE, device=mesh, mesh_mapper=slices)
    stats = ttnn.all_gather(ttnn.rms_norm_pre_all_gather(tx, dtype=ttnn.float32), dim=3, cluster_axis=1)
    assert tuple(stats.shape) == (1, 1, 32, 128)  # one tile column per chip of the row
    y = ttnn.rms_norm_post_all_gather(tx, stats, epsilon=1e-5, weight=tg)
    got = ttnn.to_torch(y, mesh_composer=ttnn.ConcatMesh2dToTensor(mesh, mesh_shape=(2, 4), dims=(0, 3)))[:1]
    torch.testing.assert_close(got, x * torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-5) * g)


def test_a_global_semaphore_holds_l1_at_one_address_on_every_chip(mesh):
    before = [c.memory.bytes_used(ttnn.BufferType.L1) for c in mesh.get_devices()]
    sem = ttnn.create_global_semaphore(mesh, ttnn.CoreRangeSet([]), 0)
    addresses = {b.address for b in sem.buffers}
    assert addresses == {ttnn.get_global_semaphore_address(sem)}
    assert all(c.memory.bytes_used(ttnn.BufferType.L1) > b for c, b in zip(mesh.get_devices(), before))
    del sem
    assert [c.memory.bytes_used(ttnn.BufferType.L1) for c in mesh.get_devices()] == before


def test_visualize_mesh_device_prints_each_chip_at_its_coordinate(mesh, capsys):
    ttnn.visualize_mesh_device(mesh)
    out = capsys.readouterr().out
    assert "MeshDevice(rows=2, cols=4)" in out and "(1, 3) dev 7" in out
