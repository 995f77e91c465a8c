"""fold launches the pad and Fold device operations TT-NN's fold.cpp runs for an interleaved row-major input.

Sizes are worked out in the comments from pad_rm_reader_writer_multi_core_default and
fold_multi_core_row_major_interleaved (device_sim/programs/fold.py and shape.py cite them).
"""

from __future__ import annotations

import torch
from programs_heard import cbs
from programs_heard import launched as heard  # tests/programs_heard.py

import device_sim as ttnn


def nhwc(device, n, h, w, c, layout=ttnn.ROW_MAJOR, memory_config=None):
    return ttnn.from_torch(torch.randn(n, h, w, c), dtype=ttnn.bfloat16, layout=layout, device=device,
                           memory_config=memory_config)


def test_a_padded_dram_fold_pads_then_folds_a_patch_at_a_time_on_the_whole_grid(device):
    x = nhwc(device, 2, 6, 8, 16)
    pad, fold = heard(device, lambda: ttnn.fold(x, 2, 4, padding=(1, 1, 0, 0)))
    # pad to [2, 8, 8, 16]: rows of 16 x 2 B = 32 B (L1- and DRAM-aligned already, no realignment row); 2 KiB of
    # rows a barrier = 64 rows, 16 barriers deep (half of L1 holds far more); 2 x 8 x 8 = 128 rows over 64 cores
    assert (pad.name, cbs(pad), pad.ranges) == ("PadDeviceOperation", [(1, 1, 32), (0, 16 * 64, 32)],
                                                ((0, 0, 7, 7),))
    # fold: a 32 B stick is DRAM-aligned, a 2 x 4 patch is 8 sticks = 256 B, double-buffered; no scratch CB
    assert (fold.name, fold.factory, cbs(fold), fold.ranges) == ("Fold", "MultiCoreDRAMFold", [(0, 2, 256)],
                                                                 ((0, 0, 7, 7),))


def test_an_unaligned_stick_adds_the_readers_scratch_patch(device):
    x = nhwc(device, 1, 4, 4, 8)  # 8 x 2 B = 16 B sticks, aligned up to 32 B for DRAM reads
    [fold] = heard(device, lambda: ttnn.fold(x, 2, 2))
    assert cbs(fold) == [(0, 2, 32 * 4), (1, 1, 16 * 4)]  # 4 sticks a patch, aligned and as they are


def test_a_tiled_input_with_whole_tiles_of_channels_is_untilized_then_folded_row_major(device):
    tiled = nhwc(device, 1, 4, 4, 32, layout=ttnn.TILE)  # W = 4 is no whole tile: the untilize unpads
    untilize, fold = heard(device, lambda: ttnn.fold(tiled, 2, 2))
    assert (untilize.name, fold.name) == ("UntilizeWithUnpaddingDeviceOperation", "Fold")
    # padded [1, 4, 32, 32]: 4 rows of one tile, one a core on 4 cores: c_0 / c_16 a row of tiles, single-buffered
    assert (cbs(untilize), untilize.ranges) == ([(0, 1, 2048), (16, 1, 2048)], ((0, 0, 3, 0),))
    # 32 channels x 2 B = 64 B sticks (DRAM-aligned), 2 x 2 patches of 4 sticks: 256 B pages, double-buffered
    assert cbs(fold) == [(0, 2, 256)]


def test_folds_tt_nn_runs_otherwise_launch_nothing_modelled(device):
    tiled = nhwc(device, 1, 4, 4, 16, layout=ttnn.TILE)  # the tiled factory and its reshape: not modelled
    assert heard(device, lambda: ttnn.fold(tiled, 2, 2)) == []
    l1 = nhwc(device, 1, 4, 4, 16, memory_config=ttnn.L1_MEMORY_CONFIG)
    assert heard(device, lambda: ttnn.fold(l1, 2, 2, padding=(1, 1))) == []  # TT-NN's L1 fallback drops padding
    assert [p.name for p in heard(device, lambda: ttnn.fold(l1, 2, 2))] == ["Fold"]
    x = nhwc(device, 1, 4, 4, 16)
    assert heard(device, lambda: ttnn.fold(x, 2, 2, use_transpose_as_fold=True)) == []  # the legacy composite


def height_sharded(device, t, cores, shard):
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(cores - 1, 0))])
    spec = ttnn.ShardSpec(grid, shard, ttnn.ShardOrientation.ROW_MAJOR)
    return ttnn.to_memory_config(t, ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
                                                      spec))


def test_a_height_sharded_fold_runs_the_sharded_factory_on_its_shards(device):
    # [1, 8, 8, 32] over 4 cores: 16 pixels a core = 2 whole groups of stride_h = 2 rows of 8: no reshard.
    x = height_sharded(device, nhwc(device, 1, 8, 8, 32), 4, (16, 32))
    out = []
    [fold] = heard(device, lambda: out.append(ttnn.fold(x, 2, 2)))
    # the output takes TT-NN's derived spec (fold_device_op.cpp): shards 2 x 2 times shorter and wider, same cores
    spec = out[0].memory_config().shard_spec
    assert (out[0].shape, tuple(spec.shape), spec.grid.num_cores()) == ((1, 4, 4, 128), (4, 128), 4)
    assert torch.equal(ttnn.to_torch(out[0]), ttnn.to_torch(ttnn.fold(ttnn.to_memory_config(x, ttnn.DRAM_MEMORY_CONFIG),
                                                                         2, 2)))
    # c_0 the input shard: 16 pixels of 32 x 2 B = 64 B (16 B-aligned); c_16 the output shard: 16 / 4 = 4 pixels of
    # 2 x 2 x 64 = 256 B; both the tensors' own buffers
    assert (fold.factory, cbs(fold), fold.ranges) == ("MultiCore", [(0, 16, 64), (16, 4, 256)], ((0, 0, 3, 0),))
    assert all(cb.globally_allocated for cb in fold.cbs)


def test_a_padded_sharded_fold_pads_in_the_halo_and_reshards_to_whole_rows(device):
    x = height_sharded(device, nhwc(device, 1, 8, 8, 32), 4, (16, 32))
    out = []
    halo, reshard, fold = heard(device, lambda: out.append(ttnn.fold(x, 2, 2, padding=(1, 1))))
    # the halo writes the 10 x 10 padded pixels, ceil(100 / 4) = 25 a core
    assert (halo.name, halo.cbs[1].num_pages, halo.cbs[1].page_size) == ("HaloDeviceOperation", 25, 64)
    # 25 is no whole number of 2-row groups (20 pixels): 100 / 20 = 5 groups over 5 cores (the most up to 64 that
    # divide 5), 20 pixels each, row by row; the same-width reshard reads the 25-pixel shards
    assert (reshard.factory, cbs(reshard), reshard.ranges) == ("ReshardSameWidthFactory", [(0, 25, 64)],
                                                               ((0, 0, 4, 0),))
    assert (cbs(fold), fold.ranges) == ([(0, 20, 64), (16, 5, 256)], ((0, 0, 4, 0),))
    # the output's shards are the Fold program's: 5 folded pixels of 128 channels on each of the 5 cores
    spec = out[0].memory_config().shard_spec
    assert (out[0].shape, tuple(spec.shape), spec.grid.num_cores()) == ((1, 5, 5, 128), (5, 128), 5)
    block = ttnn.to_memory_config(nhwc(device, 1, 8, 8, 64), ttnn.create_sharded_memory_config(
        (64, 64), core_grid=ttnn.CoreGrid(y=2, x=2), strategy=ttnn.ShardStrategy.BLOCK))
    assert heard(device, lambda: ttnn.fold(block, 2, 2, override_memory_config=ttnn.DRAM_MEMORY_CONFIG)) == []
