"""The performance model's estimates against figures worked out by hand, and TT-NN's own relations.

    .venv/bin/python -m pytest tests/test_perf_model.py -q

Hand figures, Wormhole defaults (8x8 cores, 1 GHz; docs/perf_model.md gives every constant's source). Every
program pays LAUNCH 1500 ns. A 1024x1024 bfloat16 tensor is 1024 tiles of 2048 B = 2 MiB:
  the chip's DRAM (240 GB/s achieved)       2^21 / 240                        = 8738.13 ns
  one core reading a DRAM tile              340 ns latency + 2048 / 22 B/cycle = 433.09 ns
  one core writing a DRAM tile              340 + 2048 / 21                    = 437.52 ns
  one core reading an L1 tile over the NoC  170 + 2048 / 29                    = 240.62 ns
  over PCIe                                 2^21 / 32 GB/s                     = 65536 ns
A 1024^3 bfloat16 matmul at HiFi2 (its default), 2D over 8x8 cores: 4x4 output tiles a core, K = 32 tiles.
  A tile-step: max(16 cycles x 2 passes + 4, two 2 KiB tiles / 90 B/cycle unpacked = 45.51) = 45.51 cycles,
  so compute = 4 * 4 * 32 * 45.51 = 23302 ns (TT-NN's own ideal relation says 16384: matmul_compute_ns).
  A core reads 4x32 in0 tiles in 4 blocks of 4x8 (one request a block): 4 * 340 + 128 * 2048 / 22 = 13275.6,
  the same for in1: 26551.3 ns; the chip's DRAM for the three 2 MiB tensors: 26214.4 ns; so data 26552 ns.
  Half the smaller overlaps nothing (11651), so ideal = 1500 + 26552 + 11651 = 39703 ns.
"""

import math

import pytest
import torch

import device_sim as ttnn
import ttreport
from device_sim import perf_model
from ttreport.read import device_time

DRAM_2MIB = 2**21 / 240  # ns at the achieved chip rate
TILE_READ, TILE_WRITE, L1_TILE = 340 + 2048 / 22, 340 + 2048 / 21, 170 + 2048 / 29


def _t(device, memory, dtype=ttnn.bfloat16, shape=(1024, 1024)):
    return ttnn.from_torch(torch.randn(*shape, generator=torch.Generator().manual_seed(0)), dtype=dtype,
                           layout=ttnn.TILE, device=device, memory=memory)


def _est(fn, args, kwargs, out):
    return perf_model.estimate_op(fn, args, kwargs, out)


def test_a_matmul_in_dram_by_hand_and_tt_nns_ideal_relation(device):
    a, b = _t(device, ttnn.DRAM), _t(device, ttnn.DRAM)
    c = ttnn.matmul(a, b)
    e = _est(ttnn.matmul, (a, b), {}, c)
    assert (e.compute_ns, e.bandwidth_ns, e.overlap_ns, e.fixed_ns) == (23302, 26552, 11651, 1500)
    assert (e.ideal_ns, e.bound, e.cores, e.math_fidelity) == (39703, "bandwidth", 64, "HiFi2")
    # TT-NN's matmul relation (its PM COMPUTE): ceil(2*K*M*N*batch / (cores * 4096) * fidelity multiplier) cycles
    assert perf_model.matmul_compute_ns(1024, 1024, 1024, 1, ttnn.MathFidelity.HiFi2) == \
        math.ceil(2 * 1024**3 / (64 * 4096) * 2) == 16384


def test_the_unpacker_caps_a_bfloat16_matmul_so_lofi_saves_only_on_block_floats(device):
    a, b = _t(device, ttnn.L1), _t(device, ttnn.L1)
    hifi4 = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4)
    lofi = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.LoFi)
    c = ttnn.matmul(a, b)
    e2 = _est(ttnn.matmul, (a, b), {}, c)
    e4 = _est(ttnn.matmul, (a, b), {"compute_kernel_config": hifi4}, ttnn.matmul(a, b, compute_kernel_config=hifi4))
    e1 = _est(ttnn.matmul, (a, b), {"compute_kernel_config": lofi}, ttnn.matmul(a, b, compute_kernel_config=lofi))
    # in L1 the reads are NoC requests: 2 * (4 * 170 + 128 * 2048 / 29) = 19438.9 ns, less than HiFi2's math
    assert (e2.compute_ns, e2.bandwidth_ns, e2.bound) == (23302, 19439, "compute")
    assert e4.compute_ns == 16 * 32 * (16 * 4 + 4)  # 68 cycles a step: the passes, not the unpacker
    assert e1.compute_ns == e2.compute_ns  # 20 cycles of math wait on 45.5 of unpacking
    a8, b8 = _t(device, ttnn.L1, ttnn.bfloat8_b), _t(device, ttnn.L1, ttnn.bfloat8_b)
    lo8 = _est(ttnn.matmul, (a8, b8), {"compute_kernel_config": lofi}, ttnn.matmul(a8, b8, compute_kernel_config=lofi))
    assert lo8.compute_ns == math.ceil(16 * 32 * 2 * 1088 / 90)  # 24.2 cycles: two 1088 B tiles unpacked


def test_minimal_matmul_is_priced_at_its_own_default_fidelity_not_matmuls(device):
    # ttnn::prim::minimal_matmul runs HiFi2 unless a compute_kernel_config says otherwise; matmul's rule would give two
    # block-float inputs LoFi
    a8, b8 = _t(device, ttnn.L1, ttnn.bfloat8_b), _t(device, ttnn.L1, ttnn.bfloat8_b)
    mm = ttnn.experimental.minimal_matmul
    assert _est(mm, (a8, b8), {}, mm(a8, b8)).math_fidelity == "HiFi2"
    assert _est(ttnn.matmul, (a8, b8), {}, ttnn.matmul(a8, b8)).math_fidelity == "LoFi"
    lofi = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.LoFi)
    given = _est(mm, (a8, b8), {"compute_kernel_config": lofi}, mm(a8, b8, compute_kernel_config=lofi))
    assert given.math_fidelity == "LoFi"


def test_bfloat8_b_weights_cut_the_bytes_read_by_their_tiles_size(device):
    a, w = _t(device, ttnn.DRAM), _t(device, ttnn.DRAM, ttnn.bfloat8_b)
    c = ttnn.matmul(a, w)
    e = _est(ttnn.matmul, (a, w), {}, c)
    # 1024 tiles of 1088 B (1024 one-byte mantissas + 64 shared exponents) for the weight: the chip's DRAM bound
    assert e.bandwidth_ns == math.ceil((2 * 2**21 + 1024 * 1088) / 240) == 22119
    assert e.compute_ns == 16 * 32 * 36  # bfloat16 by bfloat8_b: 34.8 cycles unpacked, under HiFi2's 36


def test_an_eltwise_add_in_dram_and_sharded_in_l1(device):
    a, b = _t(device, ttnn.DRAM), _t(device, ttnn.DRAM)
    c = ttnn.add(a, b)
    e = _est(ttnn.add, (a, b), {}, c)
    # 16 tiles a core: reads 2 * 16 * 433.09, writes 16 * 437.52, the chip's DRAM 3 * 8738.13: DRAM-bound
    assert (e.compute_ns, e.bandwidth_ns, e.ideal_ns, e.cores) == (16 * 32, math.ceil(3 * DRAM_2MIB), 27715, 64)
    cfg = ttnn.create_sharded_memory_config((1024, 1024), ttnn.CoreGrid(y=8, x=8), ttnn.ShardStrategy.BLOCK)
    sa, sb = ttnn.to_memory_config(a, cfg), ttnn.to_memory_config(b, cfg)
    sc = ttnn.add(sa, sb, memory_config=cfg)
    es = _est(ttnn.add, (sa, sb), {"memory_config": cfg}, sc)
    # every core its own 16 tiles at 64 B/cycle: two inputs read, 1024 ns; no NoC request, no DRAM
    assert (es.compute_ns, es.bandwidth_ns, es.ideal_ns) == (512, 1024, 2524)


def test_data_moves_between_dram_l1_and_the_host(device):
    a = _t(device, ttnn.DRAM)
    l1 = ttnn.to_memory_config(a, ttnn.L1_MEMORY_CONFIG)
    e = _est(ttnn.to_memory_config, (a, ttnn.L1_MEMORY_CONFIG), {}, l1)
    # 16 tiles a core: 6929 ns read, 3850 written over the NoC; the chip's DRAM 8738 ns is the longest
    assert (e.compute_ns, e.bandwidth_ns, e.ideal_ns) == (0, math.ceil(DRAM_2MIB), 1500 + 8739)
    back = ttnn.to_memory_config(l1, ttnn.DRAM_MEMORY_CONFIG)
    assert _est(ttnn.to_memory_config, (l1, ttnn.DRAM_MEMORY_CONFIG), {}, back).bandwidth_ns == e.bandwidth_ns
    host = torch.randn(1024, 1024)
    up = ttnn.from_torch(host, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, memory=ttnn.DRAM)
    eu = _est(ttnn.from_torch, (host,), {"device": device}, up)
    assert eu.bandwidth_ns == 65536  # PCIe is the slowest path
    down = ttnn.to_torch(up)
    assert _est(ttnn.to_torch, (up,), {}, down).bandwidth_ns == eu.bandwidth_ns


def test_what_an_op_moves_slice_by_bytes_kept_embedding_by_rows_looked_up(device):
    x = _t(device, ttnn.DRAM, shape=(1024, 1024))
    half = ttnn.slice(x, (0, 0), (1024, 512))
    whole = ttnn.to_memory_config(x, ttnn.DRAM_MEMORY_CONFIG)
    es = _est(ttnn.slice, (x, (0, 0), (1024, 512)), {}, half)
    ew = _est(ttnn.to_memory_config, (x, ttnn.DRAM_MEMORY_CONFIG), {}, whole)
    assert es.bandwidth_ns == math.ceil(DRAM_2MIB) < ew.bandwidth_ns == math.ceil(2 * DRAM_2MIB)
    ids = ttnn.from_torch(torch.tensor([[1, 5, 7, 9]]), dtype=ttnn.uint32, device=device)
    table = ttnn.from_torch(torch.randn(50000, 1024), dtype=ttnn.bfloat16, device=device)  # 100 MB, row-major
    emb = ttnn.embedding(ids, table)
    ee = _est(ttnn.embedding, (ids, table), {}, emb)
    # 4 rows of 2 KiB, one core: each read then written, 4 * (433.09 + 437.52) ns; the table's size plays no part
    assert (ee.cores, ee.bandwidth_ns) == (1, math.ceil(4 * (TILE_READ + TILE_WRITE)))


def test_work_goes_to_the_cores_the_program_uses(device):
    # a layer norm splits tile rows over cores: one tile row (32 x 1280) is one core's 40 tiles: the row's reductions
    # (3600 cycles) and 8 passes of 112 cycles over each tile, whatever the fidelity (Segformer's LoFi and HiFi4 norms)
    x = _t(device, ttnn.DRAM, shape=(32, 1280))
    e = _est(ttnn.layer_norm, (x,), {}, ttnn.layer_norm(x))
    assert (e.cores, e.compute_ns, e.math_fidelity) == (1, 3600 + 40 * 8 * 112, "HiFi4")
    lofi = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.LoFi)
    e1 = _est(ttnn.layer_norm, (x,), {"compute_kernel_config": lofi}, ttnn.layer_norm(x, compute_kernel_config=lofi))
    assert (e1.compute_ns, e1.math_fidelity) == (3600 + 40 * 8 * 112, "LoFi")
    # a GELU's 1650 SFPU cycles a tile against a relu's 128, on 64 cores of 2 tiles each
    y = _t(device, ttnn.DRAM, shape=(128, 1024))
    assert _est(ttnn.gelu, (y,), {}, ttnn.gelu(y)).compute_ns == 2 * 1650
    assert _est(ttnn.relu, (y,), {}, ttnn.relu(y)).compute_ns == 2 * 128


def test_a_bmm_given_a_core_grid_spreads_its_batches_over_the_cores(device):
    # BERT's attention matmul: in1 batched and a core_grid given: TT-NN's MatmulMultiCoreReuseProgramConfig puts a
    # batch's whole output on a core, the batches over the grid (the device's 8x8 when 8x12 does not fit)
    a = _t(device, ttnn.L1, shape=(16, 64, 64))
    b = _t(device, ttnn.L1, shape=(16, 64, 32))
    grid = ttnn.CoreGrid(y=8, x=12)
    e = _est(ttnn.matmul, (a, b), {"core_grid": grid}, ttnn.matmul(a, b, core_grid=grid))
    plain = _est(ttnn.matmul, (a, b), {}, ttnn.matmul(a, b))
    assert e.cores == 16 and plain.cores == 1  # without a grid: the output's one tile column over the cores
    step = 2048 * 2 / 90  # a bfloat16 tile-step at HiFi2: the unpacker's cap
    assert e.compute_ns == math.ceil(2 * 1 * 2 * step)  # a batch: Mt 2 x Nt 1 output tiles, Kt 2 steps each
    assert e.ideal_ns < plain.ideal_ns / 4


def test_a_host_only_op_has_no_estimate():
    t = ttnn.from_torch(torch.randn(32, 32))
    assert _est(ttnn.from_torch, (torch.randn(32, 32),), {}, t) is None


def test_another_chip_is_a_perf_config(device):
    a, b = _t(device, ttnn.DRAM), _t(device, ttnn.DRAM)
    c = ttnn.matmul(a, b)
    big = perf_model.PerfConfig(grid_x=16, grid_y=8, clock_ghz=2.0, dram_gib_per_s=516.0)
    e = perf_model.estimate_op(ttnn.matmul, (a, b), {}, c, big)
    assert e.compute_ns == math.ceil(4 * 2 * 32 * 4096 / 90 / 2)  # 4x2 output tiles a core, at twice the clock
    assert e.bandwidth_ns == math.ceil(3 * DRAM_2MIB / 2)  # twice the DRAM
    with pytest.raises(ValueError, match="clock_ghz must be a positive number, got 0"):
        perf_model.PerfConfig(clock_ghz=0)


def test_a_device_config_sets_the_chip_the_capture_estimates_for():
    dev = ttnn.open_device(device_id=0, config=ttnn.DeviceConfig(dram_gib_per_s=129.0))
    try:
        a, b = _t(dev, ttnn.DRAM), _t(dev, ttnn.DRAM)
        c = ttnn.add(a, b)
        assert _est(ttnn.add, (a, b), {}, c).bandwidth_ns == math.ceil(6 * DRAM_2MIB)  # half the DRAM
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
        assert device_time.of_op(r, mm.id) == (23302, 26552, 39703, "bandwidth", "HiFi2")
        assert device_time.of_op(r, move.id).ideal_ns == 1500 + math.ceil(DRAM_2MIB)
        assert device_time.total(r) == (39703 + 10239, 2, 0, 2, 0)  # no host transfer among them
    del d
    runner = CliRunner()
    out = runner.invoke(main, ["summary", str(handle.path)]).output
    assert "device  49.9 us estimated on the device in top-level ops (0 compute-bound, 2 bandwidth-bound)" in out
    out = runner.invoke(main, ["ops", str(handle.path)]).output
    assert "39.7 us bw" in out and "10.2 us bw" in out
    out = runner.invoke(main, ["op", str(handle.path), str(mm.id)]).output
    assert "device    39.7 us estimated, bandwidth-bound (compute 23.3 us, bandwidth 26.6 us, HiFi2)" in out


# -- meshes: one chip's time on its shards, and the collectives' ethernet links -------------------------------
# A 32x32 bfloat16 tile is 2048 B; an ethernet link moves 12.5 B/ns each way. On a 2x4 mesh a row is 4 chips:
#   all_gather of one tile per chip along a row, Linear: the end chip receives 3 tiles over one link
#       3 * 2048 / 12.5 = 491.52 -> 492 ns; Ring (two links a chip): half, 245.76 -> 246 ns
#   reduce_scatter of 4 tiles (8192 B) per chip along a row, Linear: 3/4 of 8192 B = 6144 B -> 492 ns
#   all_reduce of the same: twice that, 12288 B -> 983.04 -> 984 ns; with num_links=2: 492 ns
#   the chip's own DRAM traffic is far less (all_gather: 2048 + 8192 B / 240 GB/s = 43 ns)
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
    # relu of one tile per chip: 128 SFPU cycles on one core; a tile read and one written
    x = _on_mesh(mesh, 8)
    e = _est(ttnn.relu, (x,), {}, ttnn.relu(x))
    assert (e.compute_ns, e.bandwidth_ns, e.cores) == (128, math.ceil(TILE_WRITE), 1)
    whole = _on_mesh(mesh, 4)  # 4 tiles on every chip: 4 cores busy at once, each as long
    e = _est(ttnn.relu, (whole,), {}, ttnn.relu(whole))
    assert (e.compute_ns, e.bandwidth_ns, e.cores) == (128, math.ceil(TILE_WRITE), 4)


def test_a_1x1_conv_is_a_matmul_and_a_3x3_one_adds_its_halo_and_window_gathers(device):
    # TT-NN's use_matmul_for_1x1_conv: a 1x1 conv of stride 1 and no padding runs as a matmul of its input
    def conv(k, padding):
        x = ttnn.from_torch(torch.randn(1, 16, 16, 64), dtype=ttnn.bfloat16, device=device)
        w = ttnn.from_torch(torch.randn(64, 64, k, k), dtype=ttnn.bfloat16)
        kw = dict(input_tensor=x, weight_tensor=w, device=device, in_channels=64, out_channels=64, batch_size=1,
                  input_height=16, input_width=16, kernel_size=(k, k), stride=(1, 1), padding=(padding, padding))
        return _est(ttnn.conv2d, (), kw, ttnn.conv2d(**kw))

    one, three = conv(1, 0), conv(3, 1)
    # 256 output rows (8 tile rows) by K = 64 (2 tiles) by N = 64: the matmul's own estimate, nothing added
    rows = perf_model.Operand(8 * 2 * 2048, "dram", (256, 64))
    w = perf_model.Operand(2 * 2 * 2048, "dram", (64, 64))
    out = perf_model.Operand(8 * 2 * 2048, "dram", (256, 64))
    mm = perf_model.estimate("matmul", [rows, w], [out], ttnn.MathFidelity.HiFi4)
    assert (one.compute_ns, one.bandwidth_ns) == (mm.compute_ns, mm.bandwidth_ns)
    # the 3x3: K = 9 * 64, on the grid's cores, with the halo and the 3 window runs an output row it gathers
    assert three.cores == 16 and three.bandwidth_ns >= math.ceil(256 / 16) * 3 * perf_model.CONV_WINDOW_READ_NS
    assert three.ideal_ns > 2 * one.ideal_ns


def test_untilize_shard_moves_and_a_sharded_move_by_hand(device):
    # an untilize gives each core whole tile rows: [256, 1024] is 8 rows of 32 tiles, 8 cores, each 32 tiles at
    # 730 cycles (the compute bound) against 32 tiles read (L1_TILE each) and 32 sticks written (60 ns + 2 KiB each)
    x = _t(device, ttnn.L1, shape=(256, 1024))
    u = ttnn.untilize(x)
    e = _est(ttnn.untilize, (x,), {}, u)
    assert (e.cores, e.compute_ns, e.bandwidth_ns) == (8, 32 * 730, math.ceil(32 * L1_TILE))
    # the same tensor height-sharded over 8 cores: interleaved_to_sharded is a data-movement program (0.6 us launch)
    # reading each core's 32 tiles over the NoC; sharded_to_interleaved waits on each of its 32 writes (450 ns)
    cfg = ttnn.create_sharded_memory_config((256, 1024), ttnn.CoreGrid(y=1, x=8), ttnn.ShardStrategy.HEIGHT)
    s = ttnn.to_memory_config(x, cfg)
    i2s = _est(ttnn.interleaved_to_sharded, (x, cfg), {}, s)
    assert (i2s.cores, i2s.fixed_ns, i2s.bandwidth_ns) == (8, 600, math.ceil(32 * L1_TILE))
    back = ttnn.sharded_to_interleaved(s, ttnn.L1_MEMORY_CONFIG)
    s2i = _est(ttnn.sharded_to_interleaved, (s, ttnn.L1_MEMORY_CONFIG), {}, back)
    assert (s2i.cores, s2i.fixed_ns, s2i.bandwidth_ns) == (8, 600, math.ceil(32 * (450 + 2048 / 29)))
    # moving a sharded buffer copies each core's 64 KiB shard through the NoC to itself at 29 B/cycle
    m = ttnn.move(s)
    mv = _est(ttnn.move, (s,), {}, m)
    assert (mv.cores, mv.fixed_ns, mv.bandwidth_ns) == (8, 600, math.ceil(32 * 2048 / 29))


def test_an_empty_tensors_tilize_and_untilize_have_an_estimate(device):
    # a [32, 0] or [0, 32] tensor has no whole tile row or column: priced as one, not a ZeroDivisionError
    for shape in ((32, 0), (0, 32)):
        x = ttnn.from_torch(torch.zeros(*shape), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)
        t = ttnn.to_layout(x, ttnn.TILE_LAYOUT)
        for fn, args, out in ((ttnn.tilize, (x,), t), (ttnn.untilize, (t,), ttnn.untilize(t))):
            assert _est(fn, args, {}, out).cores == 1


def test_flash_attention_is_costed_as_its_matmuls_and_softmax_over_the_q_chunks(device):
    # q, k, v [1, 8, 512, 64]: 8 heads x 16 q chunks of 32 rows = 128 units over 64 cores, 2 each; a unit streams
    # the head's 16 K and V tile rows (half of them, causal), 2 x 2 matmul tile-steps (45.5 cycles, the unpacker's
    # bfloat16 cap) and a softmax tile (700 cycles) for each
    q, k, v = (_t(device, ttnn.DRAM, shape=(1, 8, 512, 64)) for _ in range(3))
    sdpa = ttnn.transformer.scaled_dot_product_attention
    causal = _est(sdpa, (q, k, v), {"is_causal": True}, sdpa(q, k, v, is_causal=True))
    step = 2 * 2048 / 90
    assert (causal.cores, causal.math_fidelity) == (64, "HiFi2")
    assert causal.compute_ns == math.ceil(2 * 16 * 0.5 * (2 * 2 * step + 700))
    full = _est(sdpa, (q, k, v), {"is_causal": False}, sdpa(q, k, v, is_causal=False))
    assert full.compute_ns == math.ceil(2 * 16 * (2 * 2 * step + 700))


def test_a_captured_conv2d_and_attention_keep_the_estimate_their_keywords_give(tmp_path, device):
    # a conv2d's kernel and an attention's causality are keywords of the call, not facts of its tensors: the capture
    # (process writer) estimates them on the model's thread, as estimate_op does, not from the tensors alone
    x = ttnn.from_torch(torch.randn(1, 16, 16, 64), dtype=ttnn.bfloat16, device=device)
    w = ttnn.from_torch(torch.randn(64, 64, 3, 3), dtype=ttnn.bfloat16)
    kw = dict(input_tensor=x, weight_tensor=w, device=device, in_channels=64, out_channels=64, batch_size=1,
              input_height=16, input_width=16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    q = _t(device, ttnn.DRAM, shape=(1, 8, 512, 64))
    sdpa = ttnn.transformer.scaled_dot_product_attention
    with ttreport.capture(tmp_path / "r") as handle:
        y = ttnn.conv2d(**kw)
        a = sdpa(q, q, q, is_causal=False)
    with ttreport.open(handle.path) as r:
        conv, attention = r.operations()
        assert device_time.of_op(r, conv.id).ideal_ns == _est(ttnn.conv2d, (), kw, y).ideal_ns
        assert device_time.of_op(r, attention.id).ideal_ns == _est(sdpa, (q, q, q), {"is_causal": False}, a).ideal_ns


def test_every_op_of_a_kind_priced_from_its_keywords_is_estimated_from_its_call(tmp_path, device):
    # conv3d is declared kind="conv2d", whose kernel is a keyword of the call: NEEDS_CALL reads the kind, so the
    # capture estimates it on the model's thread as it does conv2d (by name alone, it was priced as a 1x1 kernel)
    x = ttnn.from_torch(torch.randn(1, 4, 8, 8, 32), device=device, dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT)
    w = ttnn.experimental.prepare_conv3d_weights(weight_tensor=ttnn.from_torch(torch.randn(32, 32, 3, 3, 3),
                                                                               dtype=ttnn.bfloat16),
                                                 groups=1, C_in_block=32, alignment=32, device=device)
    kw = dict(input_tensor=x, weight_tensor=w, device=device, dtype=ttnn.bfloat16, output_channels=32,
              kernel_size=(3, 3, 3), padding=(1, 1, 1), config=ttnn.Conv3dConfig(C_in_block=32))
    assert all(op.short_name in perf_model.NEEDS_CALL for op in ttnn.registered_ops()
               if op.kind in ("matmul", "conv2d"))
    with ttreport.capture(tmp_path / "r") as handle:
        y = ttnn.experimental.conv3d(**kw)
    with ttreport.open(handle.path) as r:
        [conv] = r.operations()
        assert device_time.of_op(r, conv.id).ideal_ns == _est(ttnn.experimental.conv3d, (), kw, y).ideal_ns
