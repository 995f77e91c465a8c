"""group_norm, the distributed norms and the hw-dims causal softmax launch the device operations TT-NN runs for them.

CBs are hand-checked against the factories device_sim/programs/group_norm.py, distributed_norm.py and
normalization.py (the sharded softmax) cite:
each expected size below is worked out from the factory's formula in the comment beside it.
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import launched  # tests/programs_heard.py

import device_sim as ttnn

BF16 = 2048  # bytes of one bfloat16 tile


def tt(device, shape, dtype=ttnn.bfloat16, layout=ttnn.TILE):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=layout, device=device)


def cbs(program) -> list[tuple]:
    return [(cb.indices, cb.num_pages, cb.page_size) for cb in program.cbs]


def gamma_rm(device, channels, cores_x):
    """A gamma / beta as TT-NN's models pass it: create_group_norm_weight_bias_rm's [1, 1, rows, 32], ROW_MAJOR."""
    return ttnn.from_torch(ttnn.create_group_norm_weight_bias_rm(torch.randn(channels), channels, cores_x),
                           dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=device)


def test_a_small_batch_group_norm_runs_the_multicast_factory_on_the_grid_tt_nn_derives(device):
    # [2, 1, 64, 64], 8 groups: Ht = 2*64/32 = 4 rows of tiles. find_expected_dram_grid from x = 8: nvc = 2
    # (64/8 = 8 channels is not whole tiles, 64/2 = 32 is, and 8 % 2 == 0), so 8 // 2 = 4 virtual rows a
    # core row and gy = min(4 // 4, 8) = 1: grid 8 x 1, 4 virtual rows. Batch 2 < 4: the multicast factory.
    x = tt(device, (2, 1, 64, 64))
    g, b = gamma_rm(device, 64, 2), gamma_rm(device, 64, 2)
    [p] = launched(device, lambda: ttnn.group_norm(x, num_groups=8, weight=g, bias=b, epsilon=1e-5))
    assert (p.name, p.factory, p.ranges) == ("GroupNormDeviceOperation", "GroupNormMcastProgramFactory",
                                             ((0, 0, 7, 0),))  # (8 // 2) * 2 * 1 = 8 cores
    # per_core_Mt = 4 / 4 = 1, per_core_N = 32 (1 tile); a group of 8 channels spans 1 tile: block 1 x 1;
    # num_out_blocks from the heuristic: 64*64 / (65536 * 2*4) = 0 -> 1. Senders every
    # cores_per_batch = (128/32) / 2 = 2 cores and every 4 (a channel block): groups of 2 cores, c_10 = 2 * 2.
    assert cbs(p) == [((0,), 1, BF16), ((16,), 1, BF16), ((29,), 1, BF16), ((2,), 1, BF16), ((3,), 1, BF16),
                      ((4,), 1, BF16), ((5,), 1, BF16), ((6,), 1, BF16), ((28,), 2, BF16),  # mask: 2 * block_wt
                      ((24,), 1, BF16), ((25,), 1, BF16), ((23,), 1, BF16), ((22,), 1, BF16), ((8,), 1, BF16),
                      ((21,), 1, BF16), ((10,), 4, BF16), ((15, 9), 1, BF16), ((14, 13), 1, BF16),
                      ((27,), 1, BF16)]


def test_a_batch_that_fills_the_virtual_rows_runs_the_no_multicast_factory_and_core_grid_sets_the_grid(device):
    # core_grid 4 x 2, 320 channels in 32 groups: nvc = 4 gives 80 channels (not whole tiles), 3 does not divide
    # 32 groups, 2 gives 160 = 5 tiles: virtual rows (4 // 2) * 2 = 4 <= batch 4, so no multicast.
    x = tt(device, (4, 1, 256, 320))
    [p] = launched(device, lambda: ttnn.group_norm(x, num_groups=32, core_grid=ttnn.CoreGrid(y=2, x=4),
                                                   num_out_blocks=2, epsilon=1e-5))
    assert (p.factory, p.ranges) == ("GroupNormNoMcastProgramFactory", ((0, 0, 3, 1),))  # 4 * 2 cores
    # Ht = 4*256/32 = 32, per_core_Mt = 32 / 4 = 8, one batch a core: block_ht 8, over 2 out blocks: 4 rows;
    # 10-channel groups over 160 channels span at most 2 tiles (group 3 spans 30..39): block 4 x 2 = 8 tiles.
    sizes = dict((cb.indices, cb.num_pages) for cb in p.cbs)
    assert [sizes[(i,)] for i in (0, 16, 29, 24, 25, 23, 22)] == [8] * 7
    # the mask two block widths; a sender every core (one batch a core, 2 channel blocks): groups of one core
    assert (sizes[(28,)], sizes[(10,)]) == (2 * 2, 2 * 1)
    assert (5,) not in sizes and (6,) not in sizes  # no gamma, no beta


def test_group_norm_forms_tt_nn_refuses_launch_nothing(device):
    float_input = tt(device, (1, 1, 32, 64), dtype=ttnn.float32)  # "Input tensor must be BFLOAT16"
    assert launched(device, lambda: ttnn.group_norm(float_input, num_groups=4)) == []
    plain = tt(device, (64,))  # a TILE gamma: "Gamma tensor must have ROW_MAJOR layout" in the factory
    x = tt(device, (1, 1, 32, 64))
    assert launched(device, lambda: ttnn.group_norm(x, num_groups=4, weight=plain)) == []
    # "num_out_blocks cannot be specified when core_grid is auto-selected"
    assert launched(device, lambda: ttnn.group_norm(x, num_groups=4, num_out_blocks=2)) == []


def sharded(t, layout, grid_x, grid_y, shard):
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(grid_x - 1, grid_y - 1))])
    spec = ttnn.ShardSpec(grid, shard, ttnn.ShardOrientation.ROW_MAJOR)
    return ttnn.to_memory_config(t, ttnn.MemoryConfig(layout, ttnn.BufferType.L1, spec))


def test_a_block_sharded_group_norm_runs_the_sharded_factory_on_the_shard_grid(device):
    # [1, 1, 256, 128] block-sharded over 2 columns x 4 rows: 64 x 64 shards (2 x 2 tiles); 32 groups of 4 channels,
    # 16 a core; a group never crosses a tile (block_wt 1); one batch over 4 rows of cores: block_ht = 2
    x = sharded(tt(device, (1, 1, 256, 128)), ttnn.TensorMemoryLayout.BLOCK_SHARDED, 2, 4, (64, 64))
    g = gamma_rm(device, 128, 2)
    [p] = launched(device, lambda: ttnn.group_norm(x, num_groups=32, weight=g, epsilon=1e-5))
    assert (p.name, p.factory, p.ranges) == ("GroupNormDeviceOperation", "GroupNormShardedProgramFactory",
                                             ((0, 0, 1, 3),))
    assert [(cb.indices, cb.num_pages, cb.page_size, cb.globally_allocated) for cb in p.cbs] == [
        ((0,), 4, BF16, True), ((16,), 4, BF16, True),  # the input's and the output's 2 x 2-tile shards
        ((1,), 4, BF16, False),  # the tilized input
        ((2,), 1, BF16, False), ((3,), 1, BF16, False), ((4,), 1, BF16, False),  # scalers, epsilon
        ((5,), 2, BF16, False),  # gamma: per_core_Nt = 2 tiles
        ((7,), 2, BF16, False),  # the mask TT-NN makes: 2 x block_wt
        ((13,), 2, BF16, False),  # x: block_ht x block_wt = 2 x 1
        ((8,), 1, BF16, False), ((10,), 1, BF16, False), ((15, 9), 1, BF16, False), ((17,), 1, BF16, False),
        ((26,), 1, BF16, False)]


def test_a_row_major_height_sharded_group_norm_tilizes_in_and_untilizes_out(device):
    # [1, 1, 256, 64] ROW_MAJOR height-sharded over 8 cores: 32 x 64 shards = 32 x 64 x 2 B = 2 tiles' bytes
    x = sharded(ttnn.from_torch(torch.randn(1, 1, 256, 64), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR,
                                device=device), ttnn.TensorMemoryLayout.HEIGHT_SHARDED, 8, 1, (32, 64))
    [p] = launched(device, lambda: ttnn.group_norm(x, num_groups=8, epsilon=1e-5))
    pages = {cb.indices: cb.num_pages for cb in p.cbs}
    assert (p.ranges, pages[(0,)], pages[(1,)], pages[(30,)], pages[(13,)]) == (((0, 0, 7, 0),), 2, 2, 2, 1)
    width = sharded(tt(device, (1, 1, 64, 256)), ttnn.TensorMemoryLayout.WIDTH_SHARDED, 8, 1, (64, 32))
    assert launched(device, lambda: ttnn.group_norm(width, num_groups=8)) == []  # TT-NN refuses width sharding

def test_a_group_norm_whose_cbs_reach_an_l1_tensor_fails_with_tt_metals_clash_error():
    dev = ttnn.open_device(0, l1_size=98_304 + 65_536)  # 64 KiB above the CB base per core
    try:
        x = tt(dev, (2, 1, 64, 64))
        g = gamma_rm(dev, 64, 2)
        ttnn.group_norm(x, num_groups=8, weight=g, epsilon=1e-5)  # fits while L1 is empty
        held = ttnn.from_torch(torch.zeros(32 * 64 * 28, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev,
                               memory_config=ttnn.L1_MEMORY_CONFIG)  # 28 tiles = 56 KiB per core: 8 KiB left
        # the multicast factory's static CBs (first test, no beta): 22 tiles = 44 KiB
        live = len(dev.memory.live_buffers())
        with pytest.raises(RuntimeError, match="Statically allocated circular buffers in program .* clash with L1 "
                                               "buffers on core range"):
            ttnn.group_norm(x, num_groups=8, weight=g, epsilon=1e-5)
        assert len(dev.memory.live_buffers()) == live  # the fresh output was freed; the held tensor stays
        ttnn.deallocate(held)
    finally:
        ttnn.close_device(dev)


def test_rms_norm_pre_all_gather_sums_squares_a_row_of_tiles_a_core(device):
    x, residual = tt(device, (1, 1, 64, 256)), tt(device, (1, 1, 64, 256))
    [p] = launched(device, lambda: ttnn.rms_norm_pre_all_gather(x, residual_input_tensor=residual))
    # 64 / 32 = 2 rows of tiles over split_work_to_cores row by row: cores (0, 0) and (1, 0); Wt = 256 / 32 = 8:
    # the input and x**2 double-buffered (2 * 8), the scaler one tile, one output tile a row (RMSNorm)
    assert (p.name, p.factory, p.ranges) == ("LayerNormPreAllGatherDeviceOperation",
                                             "LayerNormPreAllGatherProgramFactory", ((0, 0, 1, 0),))
    assert cbs(p) == [((0,), 16, BF16), ((1,), 1, BF16), ((6,), 16, BF16), ((14,), 1, BF16)]
    # 2-D: 2 rows over cores_x = 2, Wt = 8 over cores_y = 8 (both up to grid_y = 8): one tile of a row a core
    [p2] = launched(device, lambda: ttnn.rms_norm_pre_all_gather(x, use_2d_core_grid=True))
    assert (p2.factory, p2.ranges) == ("LayerNormPreAllGather2DProgramFactory", ((0, 0, 1, 7),))
    assert cbs(p2) == [((0,), 16, BF16), ((1,), 1, BF16), ((6,), 16, BF16), ((15,), 1, BF16), ((16,), 1, BF16),
                       ((13,), 1, BF16), ((14,), 1, BF16)]  # c_15: the core's Wt / cores_y = 1 partial tile


def test_rms_norm_post_all_gather_normalizes_a_row_of_tiles_a_core_with_the_gathered_stats(device):
    x, stats = tt(device, (1, 1, 96, 128)), tt(device, (1, 1, 96, 64))  # stats of 2 chips: 2 tiles wide
    w, b = tt(device, (128,), dtype=ttnn.bfloat8_b), tt(device, (128,))
    [p] = launched(device, lambda: ttnn.rms_norm_post_all_gather(x, stats, epsilon=1e-5, weight=w, bias=b))
    assert (p.name, p.factory, p.ranges) == ("LayerNormPostAllGatherDeviceOperation",
                                             "LayerNormPostAllGatherProgramFactory", ((0, 0, 2, 0),))  # 3 rows
    bf8 = 1088  # a bfloat8_b tile: 1024 mantissas + 64 shared exponents
    # Wt = 4: input, gamma (bfloat8_b), beta, x * 1/rms (c_12) and the output a row each; stats 2 tiles
    assert cbs(p) == [((0,), 4, BF16), ((1,), 2, BF16), ((2,), 4, bf8), ((3,), 4, BF16), ((4,), 1, BF16),
                      ((5,), 1, BF16), ((6,), 1, BF16), ((8,), 1, BF16), ((9,), 1, BF16), ((10,), 1, BF16),
                      ((12,), 4, BF16), ((14,), 4, BF16)]
    # 2-D: 3 rows over cores_x = 3 (3 divides 3), Wt = 4 over cores_y = 4: one tile of a row a core
    [p2] = launched(device, lambda: ttnn.rms_norm_post_all_gather(x, stats, epsilon=1e-5, use_2d_core_grid=True))
    pages = {cb.indices[0]: cb.num_pages for cb in p2.cbs}
    assert p2.ranges == ((0, 0, 2, 3),) and (pages[0], pages[12], pages[14]) == (1, 1, 1)


def test_a_post_all_gather_row_past_95_percent_of_free_l1_is_cut_as_the_factory_cuts_it():
    dev = ttnn.open_device(0, l1_size=98_304 + 65_536)  # 64 KiB free per core
    try:
        x, stats = tt(dev, (1, 1, 32, 32 * 40)), tt(dev, (1, 1, 32, 32))
        [p] = launched(dev, lambda: ttnn.rms_norm_post_all_gather(x, stats))
        # 40 tiles * 2048 B > 0.95 * 65536: the row is cut to (65536 / 2048) * 0.95 / 7 = 4.34 -> 4 tiles
        pages = {cb.indices[0]: cb.num_pages for cb in p.cbs}
        assert (pages[0], pages[12], pages[14]) == (4, 4, 4)
    finally:
        ttnn.close_device(dev)


def _height_sharded(device, t, n):
    """t height-sharded in L1 over cores (0..n-1, 0), ROW_MAJOR orientation, one 32-row shard a core."""
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(n - 1, 0))])
    spec = ttnn.ShardSpec(grid, (32, t.shape[-1]), ttnn.ShardOrientation.ROW_MAJOR)
    return ttnn.to_memory_config(t, ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
                                                      spec))


def test_the_hw_dims_causal_softmax_runs_the_sharded_factory_with_a_single_buffered_mask(device):
    # scores [2, 4, 32, 32]: 256 rows over 8 cores, a 32 x 32 shard each: block_h = block_w = 1
    scores = _height_sharded(device, tt(device, (2, 4, 32, 32)), 8)
    mask = tt(device, (1, 1, 32, 32))  # interleaved [1, 1, H, W]: the hw dims only
    cfg = ttnn.SoftmaxShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(8, 1), subblock_w=1, block_h=1,
                                                    block_w=1)
    [p] = launched(device, lambda: ttnn.scale_causal_mask_hw_dims_softmax_in_place(scores, 0.25, mask,
                                                                                     program_config=cfg))
    assert (p.name, p.factory, p.ranges) == ("SoftmaxDeviceOperation", "SoftmaxShardedProgramFactoryAttentionOptimized",
                                             ((0, 0, 7, 0),))
    # in0 = the shard (1 x 1), two scalers, the scaled mask (block_w), the fused scale, the causal mask block_w
    # tiles single-buffered (in3_CB_size is doubled for every causal interleaved mask but this variant's), the
    # output shard, exps (block_w), 1/sum, the row max and x - max (numeric_stable)
    assert [(cb.num_pages, cb.globally_allocated) for cb in p.cbs] == [
        (1, True), (1, False), (1, False), (1, False), (1, False), (1, False), (1, True), (1, False), (1, False),
        (1, False), (1, False)]
    [causal] = launched(device, lambda: ttnn.scale_mask_softmax_in_place(scores, 0.25, mask, is_causal_mask=True,
                                                                         program_config=cfg))
    assert causal.cbs[5].num_pages == 2  # the plain causal variant double-buffers the same mask


def test_the_hw_dims_causal_softmax_of_an_interleaved_input_is_refused_as_tt_nn_refuses_it(device):
    x, mask = tt(device, (2, 4, 32, 32)), tt(device, (1, 1, 32, 32))
    before = ttnn.to_torch(x)
    with pytest.raises(RuntimeError, match=r"TT_FATAL @ .*!attributes.is_scale_causal_mask_hw_dims_softmax\n"
                                           r"info:\nScale causal mask HW dims softmax not supported in default "
                                           r"program config"):
        ttnn.scale_causal_mask_hw_dims_softmax_in_place(x, 0.25, mask)
    assert torch.equal(ttnn.to_torch(x), before)  # refused before the in-place write
    cfg = ttnn.SoftmaxShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(8, 1), subblock_w=1, block_h=1,
                                                    block_w=1)
    with pytest.raises(RuntimeError, match="Input tensor must be sharded when using SoftmaxSharded"):
        ttnn.scale_causal_mask_hw_dims_softmax_in_place(x, 0.25, mask, program_config=cfg)
