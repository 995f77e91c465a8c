"""The performance model's estimates against figures worked out by hand, and TT-NN's own relations.

    .venv/bin/python -m pytest tests/test_perf_model.py -q

Hand figures, Wormhole defaults (8x8 cores, 1 GHz, DRAM 258 GiB/s, NoC bisection 2*8*32 = 512 B/cycle,
a core's own L1 64 B/cycle, PCIe 32 GB/s). A 1024x1024 bfloat16 tensor is 1024 tiles of 2048 B = 2 MiB:
  in DRAM        2 MiB / 258 GiB/s                 = 2^21 * 1e9 / (258 * 2^30) = 7570.33 ns
  over the NoC   2 MiB / 512 B/ns                  = 4096 ns
  sharded in L1  2 MiB / (64 cores * 64 B/ns)      = 512 ns
  over PCIe      2 MiB / 32 GB/s                   = 65536 ns
A 1024^3 matmul: 2 * 1024^3 mul-adds / (64 * 4096) = 8192 cycles at LoFi, x2 at HiFi2 (its default).
"""

import math

import pytest
import torch

import device_sim as ttnn
import ttreport
from device_sim import perf_model
from ttreport.read import device_time

DRAM_2MIB = 2**21 * 1e9 / (258 * 2**30)


def _t(device, memory, dtype=ttnn.bfloat16, shape=(1024, 1024)):
    return ttnn.from_torch(torch.randn(*shape, generator=torch.Generator().manual_seed(0)), dtype=dtype,
                           layout=ttnn.TILE, device=device, memory=memory)


def _est(fn, args, kwargs, out):
    return perf_model.estimate_op(fn, args, kwargs, out)


def test_a_matmul_in_dram_is_bandwidth_bound_with_tt_nns_compute_figure(device):
    a, b = _t(device, ttnn.DRAM), _t(device, ttnn.DRAM)
    c = ttnn.matmul(a, b)
    e = _est(ttnn.matmul, (a, b), {}, c)
    assert e.compute_ns == 16384 and e.math_fidelity == "HiFi2"
    assert e.bandwidth_ns == math.ceil(3 * DRAM_2MIB) == 22711
    assert (e.ideal_ns, e.bound) == (22711, "bandwidth")
    # TT-NN's matmul relation: ceil(2*K*M*N*batch / (cores * 4096) * fidelity multiplier) cycles at 1 GHz.
    assert e.compute_ns == math.ceil(2 * 1024 * 1024 * 1024 / (64 * 4096) * 2)


def test_a_matmul_in_l1_is_compute_bound_and_lofi_halves_its_compute(device):
    a, b = _t(device, ttnn.L1), _t(device, ttnn.L1)
    c = ttnn.matmul(a, b)
    e = _est(ttnn.matmul, (a, b), {}, c)
    assert (e.compute_ns, e.bandwidth_ns, e.bound) == (16384, 3 * 4096, "compute")
    lofi = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.LoFi)
    c2 = ttnn.matmul(a, b, compute_kernel_config=lofi)
    e2 = _est(ttnn.matmul, (a, b), {"compute_kernel_config": lofi}, c2)
    assert (e2.compute_ns, e2.math_fidelity, e2.bound) == (8192, "LoFi", "bandwidth")


def test_bfloat8_b_weights_cut_the_bytes_read_by_their_tiles_size(device):
    a, w = _t(device, ttnn.DRAM), _t(device, ttnn.DRAM, ttnn.bfloat8_b)
    c = ttnn.matmul(a, w)
    e = _est(ttnn.matmul, (a, w), {}, c)
    # 1024 tiles of 1088 B (1024 one-byte mantissas + 64 shared exponents) for the weight
    assert e.bandwidth_ns == math.ceil((2 * 2**21 + 1024 * 1088) * 1e9 / (258 * 2**30)) == 19163


def test_an_eltwise_add_in_dram_and_sharded_in_l1(device):
    a, b = _t(device, ttnn.DRAM), _t(device, ttnn.DRAM)
    c = ttnn.add(a, b)
    e = _est(ttnn.add, (a, b), {}, c)
    assert (e.compute_ns, e.bandwidth_ns, e.bound) == (16 * 8, 22711, "bandwidth")  # 16 tiles a core, 8 cycles each
    cfg = ttnn.create_sharded_memory_config((1024, 1024), ttnn.CoreGrid(y=8, x=8), ttnn.ShardStrategy.BLOCK)
    sa, sb = ttnn.to_memory_config(a, cfg), ttnn.to_memory_config(b, cfg)
    sc = ttnn.add(sa, sb, memory_config=cfg)
    es = _est(ttnn.add, (sa, sb), {"memory_config": cfg}, sc)
    assert (es.compute_ns, es.bandwidth_ns) == (128, 3 * 512)


def test_data_moves_between_dram_l1_and_the_host(device):
    a = _t(device, ttnn.DRAM)
    l1 = ttnn.to_memory_config(a, ttnn.L1_MEMORY_CONFIG)
    e = _est(ttnn.to_memory_config, (a, ttnn.L1_MEMORY_CONFIG), {}, l1)
    assert (e.compute_ns, e.bandwidth_ns) == (0, math.ceil(DRAM_2MIB + 4096))
    back = ttnn.to_memory_config(l1, ttnn.DRAM_MEMORY_CONFIG)
    assert _est(ttnn.to_memory_config, (l1, ttnn.DRAM_MEMORY_CONFIG), {}, back).bandwidth_ns == e.bandwidth_ns
    host = torch.randn(1024, 1024)
    up = ttnn.from_torch(host, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, memory=ttnn.DRAM)
    eu = _est(ttnn.from_torch, (host,), {"device": device}, up)
    assert eu.bandwidth_ns == math.ceil(DRAM_2MIB + 65536)
    down = ttnn.to_torch(up)
    assert _est(ttnn.to_torch, (up,), {}, down).bandwidth_ns == eu.bandwidth_ns


def test_a_host_only_op_has_no_estimate():
    t = ttnn.from_torch(torch.randn(32, 32))
    assert _est(ttnn.from_torch, (torch.randn(32, 32),), {}, t) is None


def test_another_chip_is_a_perf_config(device):
    a, b = _t(device, ttnn.DRAM), _t(device, ttnn.DRAM)
    c = ttnn.matmul(a, b)
    big = perf_model.PerfConfig(grid_x=16, grid_y=8, clock_ghz=2.0, dram_gib_per_s=516.0)
    e = perf_model.estimate_op(ttnn.matmul, (a, b), {}, c, big)
    assert e.compute_ns == 16384 // 2 // 2  # twice the cores, twice the clock
    assert e.bandwidth_ns == math.ceil(3 * DRAM_2MIB / 2)
    with pytest.raises(ValueError, match="clock_ghz must be a positive number, got 0"):
        perf_model.PerfConfig(clock_ghz=0)


def test_a_device_config_sets_the_chip_the_capture_estimates_for():
    dev = ttnn.open_device(device_id=0, config=ttnn.DeviceConfig(dram_gib_per_s=129.0))
    try:
        a, b = _t(dev, ttnn.DRAM), _t(dev, ttnn.DRAM)
        c = ttnn.add(a, b)
        assert _est(ttnn.add, (a, b), {}, c).bandwidth_ns == math.ceil(6 * DRAM_2MIB)
    finally:
        ttnn.close_device(dev)


def test_a_capture_stores_each_ops_estimate_and_the_cli_shows_it(tmp_path, device):
    from click.testing import CliRunner

    from ttreport.cli import main

    a, b = _t(device, ttnn.DRAM), _t(device, ttnn.DRAM)
    with ttreport.capture(tmp_path / "r") as handle:
        c = ttnn.matmul(a, b)
        d = ttnn.to_memory_config(c, ttnn.L1_MEMORY_CONFIG)
    with ttreport.open(handle.path) as r:
        mm, move = r.operations()
        assert device_time.of_op(r, mm.id) == (16384, 22711, 22711, "bandwidth", "HiFi2")
        assert device_time.of_op(r, move.id).ideal_ns == math.ceil(DRAM_2MIB + 4096)
        assert device_time.total(r) == (22711 + 11667, 2, 0, 2)
    del d
    runner = CliRunner()
    out = runner.invoke(main, ["summary", str(handle.path)]).output
    assert "device  34.4 us estimated on the device in top-level ops (0 compute-bound, 2 bandwidth-bound)" in out
    out = runner.invoke(main, ["ops", str(handle.path)]).output
    assert "22.7 us bw" in out and "11.7 us bw" in out
    out = runner.invoke(main, ["op", str(handle.path), str(mm.id)]).output
    assert "device    22.7 us estimated, bandwidth-bound (compute 16.4 us, bandwidth 22.7 us, HiFi2)" in out


# -- meshes: one chip's time on its shards, and the collectives' ethernet links -------------------------------
# A 32x32 bfloat16 tile is 2048 B; an ethernet link moves 12.5 B/ns each way. On a 2x4 mesh a row is 4 chips:
#   all_gather of one tile per chip along a row, Linear: the end chip receives 3 tiles over one link
#       3 * 2048 / 12.5 = 491.52 -> 492 ns; Ring (two links a chip): half, 245.76 -> 246 ns
#   reduce_scatter of 4 tiles (8192 B) per chip along a row, Linear: 3/4 of 8192 B = 6144 B -> 492 ns
#   all_reduce of the same: twice that, 12288 B -> 983.04 -> 984 ns; with num_links=2: 492 ns
#   the chip's own DRAM traffic is far less (all_gather: 2048 + 8192 B / 258 GiB/s = 37 ns)
@pytest.fixture
def mesh():
    m = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(2, 4))
    yield m
    ttnn.close_mesh_device(m)


def _on_mesh(mesh, cols: int):
    return ttnn.from_torch(torch.randn(1, 1, 32, 32 * cols), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                           mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3) if cols == 8 else
                           ttnn.ReplicateTensorToMesh(mesh))


def test_collectives_cost_their_busiest_ethernet_link_by_hand(mesh):
    x = _on_mesh(mesh, 8)  # one tile per chip
    for topology, want in ((ttnn.Topology.Linear, 492), (ttnn.Topology.Ring, 246)):
        kw = dict(dim=3, cluster_axis=1, topology=topology)
        e = _est(ttnn.all_gather, (x,), kw, ttnn.all_gather(x, **kw))
        assert (e.compute_ns, e.bandwidth_ns, e.bound) == (0, want, "bandwidth")
    full = _on_mesh(mesh, 4)  # 4 tiles on every chip
    kw = dict(dim=3, cluster_axis=1, topology=ttnn.Topology.Linear)
    assert _est(ttnn.reduce_scatter, (full,), kw, ttnn.reduce_scatter(full, **kw)).bandwidth_ns == 492
    kw = dict(cluster_axis=1, topology=ttnn.Topology.Linear)
    assert _est(ttnn.all_reduce, (full,), kw, ttnn.all_reduce(full, **kw)).bandwidth_ns == 984
    kw["num_links"] = 2
    assert _est(ttnn.all_reduce, (full,), kw, ttnn.all_reduce(full, **kw)).bandwidth_ns == 492
    # over the whole mesh (no cluster_axis): 8 chips, the end of the line receives 7 tiles
    assert _est(ttnn.all_gather, (x,), {"dim": 3}, ttnn.all_gather(x, dim=3)).bandwidth_ns == math.ceil(7 * 2048 / 12.5)
    assert perf_model.collective_link_ns("gather", 2048, 1) == 0  # a group of one chip moves nothing


def test_an_op_on_a_mesh_costs_one_chips_time_on_its_shard(mesh):
    # relu of one tile per chip: 128 SFPU cycles on one core; a tile read and one written, 4096 B of DRAM
    x = _on_mesh(mesh, 8)
    e = _est(ttnn.relu, (x,), {}, ttnn.relu(x))
    assert (e.compute_ns, e.bandwidth_ns) == (128, math.ceil(4096 * 1e9 / (258 * 2**30)))
    whole = _on_mesh(mesh, 4)  # 4 tiles on every chip: 4 cores busy at once, 4x the bytes
    e = _est(ttnn.relu, (whole,), {}, ttnn.relu(whole))
    assert (e.compute_ns, e.bandwidth_ns) == (128, math.ceil(4 * 4096 * 1e9 / (258 * 2**30)))
