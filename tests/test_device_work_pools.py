"""Device work of max_pool2d and avg_pool2d (the input's sharding, the halo, its move and Pool2D's CBs) and of
bilinear upsampling (the input's sharding, the halo and UpsampleOperation's bilinear factory).

Each test builds a known shape and checks the programs against the factories' arithmetic (device_sim/programs/pool.py
cites them), with the arithmetic in the comments.
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import launched as heard  # tests/programs_heard.py

import device_sim as ttnn
from device_sim.programs.pool import avg_scalars_per_core, output_hw, pool2d_programs

BF16, BF8 = 2048, 1088  # bytes of one 32x32 tile


def cbs(program) -> list[tuple]:
    return [(cb.indices, cb.num_pages, cb.page_size, cb.globally_allocated) for cb in program.cbs]


def image(device, n, h, w, c, dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, memory_config=None):
    """TT-NN's flattened NHWC input, [1, 1, N*H*W, C]."""
    return ttnn.from_torch(torch.randn(1, 1, n * h * w, c), dtype=dtype, layout=layout, device=device,
                           memory_config=memory_config)


def test_a_max_pool_shards_its_input_gathers_the_halo_moves_it_and_pools(device):
    # 2 images 16x16x64, 3x3 window, stride 2, padding 1: out 8x8, 2 x 64 = 128 output sticks. Height sharding:
    # the largest divisor of 128 within 64 cores is 64, so the whole 8x8 grid, 2 output sticks a core.
    x = image(device, 2, 16, 16, 64)
    progs = heard(device, lambda: ttnn.max_pool2d(x, 2, 16, 16, 64, [3, 3], [2, 2], [1, 1], [1, 1]))
    assert [p.name for p in progs] == ["InterleavedToShardedDeviceOperation", "HaloDeviceOperation",
                                       "MoveDeviceOperation", "Pool2D"]
    assert {p.ranges for p in progs} == {((0, 0, 7, 7),)}
    i2s, halo, move, pool = progs
    # input shards: 512 sticks / 64 cores = 8 sticks of 64 x 2 B = 128 B (c_0, the shard); the DRAM re-align
    # scratch c_1: 4 pages of align(128 + 32, 32) = 160 B
    assert cbs(i2s) == [((0,), 8, 128, True), ((1,), 4, 160, False)]
    # halo: a core's 2 outputs (adjacent in a row, 2 apart) read from the first window's top-left to the second's
    # bottom-right in the 18x18 padded input: 2 + (2 x 18 + 2) + 1 = 41 sticks
    assert cbs(halo) == [((0,), 8, 128, True), ((1,), 41, 128, True), ((2,), 1, 128, False), ((3,), 1, 128, False)]
    # reallocate_halo_output: the halo shard [41, 64] moved (41 x 64 is no whole number of tiles: 41 stick pages)
    assert cbs(move) == [((0,), 41, 128, True), ((1,), 41, 128, True)]
    # Pool2D: c_0 scalar 2 tiles, c_1 clear value 1 tile, c_2 the 41 halo sticks, c_3 the reader indices (2 per
    # core, rounded up to 4 B), c_4 / c_5 the split readers' 2 pages of 2 channel tiles x 9 window rows = 576
    # elements, padded to a 1024-element tile (2048 B); c_6 the output shard: 2 sticks x 64 / 16 = 8 pages of 32 B
    assert (pool.factory, cbs(pool)) == ("Pool2D::MultiCore", [
        ((0,), 2, BF16, False), ((1,), 1, BF16, False), ((2,), 41, 128, True), ((3,), 1, 4, True),
        ((4,), 2, BF16, False), ((5,), 2, BF16, False), ((6,), 8, 32, True)])
    assert pool.cb_region_end - pool.cb_base == (2 + 1 + 2 + 2) * BF16  # only the static CBs count in L1


def test_an_avg_pool_whose_divisor_varies_adds_a_second_scalar_cb_and_a_scalar_config(device):
    # 4x4x32, 3x3 window, stride 1, padding 1, count_include_pad=False: every window's divisor is its in-image area.
    # On a 2x2 grid: 16 output sticks over 4 cores, one output row a core. Row 0's areas are 4, 6, 6, 4 (3 runs),
    # row 1's 6, 9, 9, 6 (3 runs): 3 entries of 3 uint16 = 18 B in the config's page.
    common = dict(batch=1, height=4, width=4, channels=32, kernel=(3, 3), stride=(1, 1), padding=(1, 1, 1, 1),
                  dilation=(1, 1), ceil_mode=False, divisor_override=None, in_dtype=ttnn.bfloat16, in_tile=False,
                  in_sharded=False, out_dtype=ttnn.bfloat16, out_tile=False, reallocate_halo=False, grid=(2, 2))
    *_, pool = pool2d_programs(avg=True, count_include_pad=False, **common)
    assert avg_scalars_per_core(4, 4, 4, 4, (3, 3), (1, 1), (1, 1, 1, 1), False, 1, 4, 4) == 3
    # c_0 and c_1 the two readers' scalars, c_2 the clear value; the halo: 4 outputs from (r, 0) to (r, 3) of the
    # 6x6 padded input: 3 + (2 x 6 + 2) + 1 = 18 sticks of 32 x 2 B; readers 1 tile x 9 rows -> a 2048 B page;
    # output 4 sticks x 32 / 16 = 8 pages of 32 B; the config last
    assert cbs(pool) == [((0,), 2, BF16, False), ((1,), 2, BF16, False), ((2,), 1, BF16, False),
                         ((3,), 18, 64, True), ((4,), 1, 4, True), ((5,), 2, BF16, False), ((6,), 2, BF16, False),
                         ((7,), 8, 32, True), ((8,), 1, 18, True)]
    # counting the padding (the default) every window divides by 9: one scalar CB, no config
    *_, counted = pool2d_programs(avg=True, count_include_pad=True, **common)
    assert [cb.indices for cb in counted.cbs] == [(i,) for i in range(7)]
    assert [(cb.num_pages, cb.page_size) for cb in counted.cbs] == [(n, size) for _, n, size, _ in cbs(pool)[1:8]]


def test_ceil_mode_adds_the_last_partial_window_and_its_padding():
    # 16 rows, window 3, stride 2, padding 1: floor gives 8 outputs, ceil (15 / 2 = 7.5 -> 8) + 1 = 9, and the last
    # window (from 16 - 1 = 15 < 16 + 1) starts inside the image, so it stays: extra padding 2 x 8 + 3 - 18 = 1.
    assert output_hw(16, 16, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False) == (8, 8, 0, 0)
    assert output_hw(16, 16, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True) == (9, 9, 1, 1)
    # 5 rows, window 2, stride 2, padding 1: ceil gives 4 outputs, but the 4th would start at 6 >= 5 + 1: dropped
    assert output_hw(5, 5, (2, 2), (2, 2), (1, 1, 1, 1), (1, 1), True) == (3, 3, 0, 0)


def test_a_tiled_bfloat8_input_untilizes_in_the_halo_and_a_tiled_output_adds_the_pre_tilize_cb(device):
    # 1 image 32x32x32 bfloat8_b in TILE, 2x2 window, stride 2: 256 output sticks; a TILE output shards whole rows of
    # tiles: 8 rows of tiles, 8 cores (0..7, 0); input shards of 1024 / 8 = 128 rows (4 tiles of bfloat8_b).
    x = image(device, 1, 32, 32, 32, ttnn.bfloat8_b, ttnn.TILE)
    progs = heard(device, lambda: ttnn.max_pool2d(x, 1, 32, 32, 32, [2, 2], [2, 2], [0, 0], [1, 1],
                                                  output_layout=ttnn.TILE, reallocate_halo_output=False))
    assert [p.name for p in progs] == ["InterleavedToShardedDeviceOperation", "HaloDeviceOperation", "Pool2D"]
    i2s, halo, pool = progs
    assert i2s.ranges == ((0, 0, 7, 0),) and cbs(i2s)[0] == ((0,), 4, BF8, True)
    # halo: c_0 the 4 input tiles; a core's 32 outputs are two output rows of 16, whose windows cover 4 input rows:
    # the last window starts 2 x 32 + 30 sticks after the first and spans 32 + 1 more: 94 + 33 + 1 = 128 sticks of
    # 32 bfloat16; c_4 / c_5 untilize 1 tile row, double-buffered
    assert cbs(halo) == [((0,), 4, BF8, True), ((1,), 128, 64, True), ((2,), 1, 64, False), ((3,), 1, 64, False),
                         ((4,), 2, BF16, False), ((5,), 2, BF16, False)]
    # Pool2D reads bfloat8_b as bfloat16: readers 1 tile x 4 window rows (128 elements -> one 2048 B tile); the
    # pre-tilize CB 32 rows x 1 tile of 32 x 2 B; the output shard [32, 32] as one bfloat16 tile
    assert cbs(pool) == [((0,), 2, BF16, False), ((1,), 1, BF16, False), ((2,), 128, 64, True), ((3,), 1, 32, True),
                         ((4,), 2, BF16, False), ((5,), 2, BF16, False), ((6,), 32, 64, False),
                         ((7,), 1, BF16, True)]


def test_a_wide_channel_count_reduces_eight_tiles_at_a_time():
    # 320 channels = 10 tiles > MAX_TILES_PER_REDUCTION (8 for a max pool): each reader page holds 8 tiles x 32 x 9
    # window rows = 2304 elements, padded to 3 tiles: 3 x 1024 x 2 B = 6144 B
    *_, pool = pool2d_programs(avg=False, batch=1, height=8, width=8, channels=320, kernel=(3, 3), stride=(1, 1),
                               padding=(1, 1, 1, 1), dilation=(1, 1), ceil_mode=False, count_include_pad=True,
                               divisor_override=None, in_dtype=ttnn.bfloat16, in_tile=False, in_sharded=False,
                               out_dtype=ttnn.bfloat16, out_tile=False, reallocate_halo=False, grid=(8, 8))
    assert cbs(pool)[4:6] == [((4,), 2, 6144, False), ((5,), 2, 6144, False)]


def test_a_height_sharded_input_pools_on_its_own_cores_without_resharding(device):
    # [1, 1, 256, 32] height sharded on (0..3, 0), 64 sticks a core: no InterleavedToSharded; 8x8 image 2x2 / 2:
    # 16 output sticks over those 4 cores
    spec = ttnn.ShardSpec(ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(3, 0))]), (64, 32),
                          ttnn.ShardOrientation.ROW_MAJOR)
    cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec)
    x = image(device, 4, 8, 8, 32, memory_config=cfg)
    progs = heard(device, lambda: ttnn.max_pool2d(x, 4, 8, 8, 32, [2, 2], [2, 2], [0, 0], [1, 1]))
    assert [(p.name, p.ranges) for p in progs] == [(n, ((0, 0, 3, 0),)) for n in
                                                   ("HaloDeviceOperation", "MoveDeviceOperation", "Pool2D")]
    assert cbs(progs[0])[0] == ((0,), 64, 64, True)  # the input's own shard


@pytest.mark.parametrize("kwargs", [dict(applied_shard_scheme=ttnn.TensorMemoryLayout.WIDTH_SHARDED),
                                    dict(dram_slice_config=object())])
def test_width_sharding_and_dram_slicing_launch_nothing_as_they_are_not_modelled(device, kwargs):
    x = image(device, 1, 8, 8, 32)
    assert heard(device, lambda: ttnn.avg_pool2d(x, 1, 8, 8, 32, [2, 2], [2, 2], [0, 0], **kwargs)) == []


def test_a_pool_whose_cbs_reach_an_l1_tensor_fails_with_tt_metals_clash_error():
    dev = ttnn.open_device(0, l1_size=98_304 + 65_536)  # 64 KiB above the CB base per core
    try:
        x = image(dev, 1, 16, 16, 32)
        ttnn.max_pool2d(x, 1, 16, 16, 32, [2, 2], [2, 2], [0, 0], [1, 1])  # fits while L1 is empty
        held = ttnn.from_torch(torch.zeros(32 * 64 * 28, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev,
                               memory_config=ttnn.L1_MEMORY_CONFIG)  # 28 tiles = 56 KiB per core: 8 KiB left
        # Pool2D's static CBs: scalar 2 + clear value 1 + readers 2 x 2 tiles = 7 x 2048 = 14 KiB
        live = len(dev.memory.live_buffers())
        with pytest.raises(RuntimeError, match="Statically allocated circular buffers in program .* clash with L1 "
                                               "buffers on core range"):
            ttnn.max_pool2d(x, 1, 16, 16, 32, [2, 2], [2, 2], [0, 0], [1, 1])
        assert len(dev.memory.live_buffers()) == live  # the fresh output was freed; the held tensor stays
        ttnn.deallocate(held)
    finally:
        ttnn.close_device(dev)


def test_a_bilinear_upsample_shards_its_input_gathers_2x2_windows_and_writes_scaled_shards(device):
    # [2, 8, 16, 64] bfloat16 ROW_MAJOR: 256 sticks over min(64 cores, 256) = 64 shards of 4 sticks (128 B each)
    x = ttnn.from_torch(torch.randn(2, 8, 16, 64), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=device)
    i2s, halo, up = heard(device, lambda: ttnn.upsample(x, (2, 3), mode="bilinear"))
    assert [p.ranges for p in (i2s, halo, up)] == [((0, 0, 7, 7),)] * 3
    assert cbs(i2s) == [((0,), 4, 128, True), ((1,), 4, 160, False)]
    # halo: a core's 4 windows (2x2, stride 1) in the 10 x 18 padded input: 3 + (18 + 1) + 1 = 23 sticks
    assert cbs(halo) == [((0,), 4, 128, True), ((1,), 23, 128, True), ((2,), 1, 128, False), ((3,), 1, 128, False)]
    # UpsampleOperation: c_0 the halo shard; c_1 / c_2 4 pixels x 2 buffers of min(8 tiles x 32 x 2 B, 128 B);
    # c_3 / c_4 two scalar tiles; c_5 the output shard: 4 sticks x 2 x 3 = 24 sticks x 2 channel tiles of 64 B
    assert (up.name, up.factory, cbs(up)) == ("UpsampleOperation", "UpsampleBilinearProgramFactory", [
        ((0,), 23, 128, True), ((1,), 8, 128, False), ((2,), 8, 128, False), ((3,), 2, BF16, False),
        ((4,), 2, BF16, False), ((5,), 48, 64, True)])
    assert up.cb_region_end - up.cb_base == 2 * 8 * 128 + 2 * 2 * BF16


def test_a_bilinear_upsample_of_a_height_sharded_input_uses_its_shards_and_others_launch_nothing(device):
    spec = ttnn.ShardSpec(ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(3, 0))]), (16, 32),
                          ttnn.ShardOrientation.ROW_MAJOR)
    cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec)
    x = ttnn.from_torch(torch.randn(1, 8, 8, 32), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=device,
                        memory_config=cfg)
    # device_sim's output follows the memory rules: a DRAM output (TT-NN's own output stays sharded, then moves)
    halo, up = heard(device, lambda: ttnn.upsample(x, 2, mode="bilinear", memory_config=ttnn.DRAM_MEMORY_CONFIG))
    # 16 sticks a core (two image rows): windows from (r, 0) to (r + 1, 7) in the 10 x 10 padded input:
    # 10 + 7 + (10 + 1) + 1 = 29 sticks; output shard 16 x 4 = 64 sticks of 1 channel tile
    assert halo.ranges == up.ranges == ((0, 0, 3, 0),)
    assert cbs(up)[0] == ((0,), 29, 64, True) and cbs(up)[-1] == ((5,), 64, 64, True)
    # TT-NN's bilinear path takes bfloat16 ROW_MAJOR only
    tiled = ttnn.from_torch(torch.randn(1, 8, 8, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert heard(device, lambda: ttnn.upsample(tiled, 2, mode="bilinear")) == []
