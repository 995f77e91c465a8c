"""reshape (its copy case), pad, move/reallocate and copy launch the device operations TT-NN runs for them.

CBs are hand-checked against the factories device_sim/programs/shape.py cites; the arithmetic is in the
comments (bfloat16 rows of W values are 2W bytes; Wormhole aligns L1 to 16 B and DRAM to 32 B).
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import cbs, launched  # tests/programs_heard.py

import device_sim as ttnn

BF16, BF8 = 2048, 1088  # bytes of one 32x32 tile


def tt(device, shape, dtype=ttnn.bfloat16, layout=ttnn.TILE, **kw):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=layout, device=device, **kw)


def test_a_tiled_reshape_that_is_no_view_copies_one_tile_at_a_time_on_the_whole_grid(device):
    x = tt(device, (2, 32, 64))
    [p] = launched(device, lambda: ttnn.reshape(x, (2, 64, 32)))  # the last dim changes: a copy
    assert (p.name, p.factory, cbs(p), p.ranges) == (
        "ReshapeDeviceOperation", "ReshapeTiledProgramFactory", [(1, 1, BF16), (2, 1, BF16)], ((0, 0, 7, 7),))
    assert launched(device, lambda: ttnn.reshape(x, (1, 2, 32, 64))) == []  # a view: no program


def test_a_row_major_reshape_reads_through_64_byte_windows(device):
    x = tt(device, (1, 4, 64), layout=ttnn.ROW_MAJOR)
    [p] = launched(device, lambda: ttnn.reshape(x, (1, 8, 32)))
    # input rows of 128 B: ((128 - 1) & ~63) + 128 = 192; output rows of 64 B: ((64 - 1) & ~63) + 80 = 80
    assert (p.factory, cbs(p)) == ("ReshapeRMProgramFactory", [(0, 2, 192), (1, 1, 80)])


def test_a_tiled_pad_streams_output_pages_beside_one_pad_value_tile(device):
    x = tt(device, (1, 1, 32, 32))
    [p] = launched(device, lambda: ttnn.pad(x, [(0, 32), (0, 32)], 0.0))
    assert (p.name, p.factory, cbs(p), p.ranges) == (
        "PadDeviceOperation", "PadTileMulticoreProgramFactory", [(0, 2, BF16), (1, 2, BF16), (2, 1, BF16)],
        ((0, 0, 7, 7),))


@pytest.mark.parametrize("shape, padding, expected", [
    # 64 values a row: 128 B, DRAM-aligned already, no front padding: the pad row and the stream only. 2 KiB per
    # barrier is 16 rows; half of L1 above the reserved base (651,264 B) holds 318 barriers, capped at 16
    ((2, 30, 60), [(1, 1), (0, 4)], [(1, 1, 128), (0, 16 * 16, 128)]),
    # front padding along W adds the realignment row
    ((1, 1, 4, 30), [(0, 0), (2, 0)], [(1, 1, 64), (2, 1, 64), (0, 32 * 16, 64)]),
    # 40 values: 80 B rows (L1-aligned), 96 B DRAM-aligned, so realigned too; ceil(2048 / 80) = 26 rows a barrier
    ((1, 1, 4, 36), [(0, 0), (0, 4)], [(1, 1, 96), (2, 1, 96), (0, 26 * 16, 80)]),
])
def test_a_row_major_pad_sizes_its_rows_and_barriers_as_the_default_factory(device, shape, padding, expected):
    x = tt(device, shape, layout=ttnn.ROW_MAJOR)
    [p] = launched(device, lambda: ttnn.pad(x, padding, 0.5))
    assert (p.factory, cbs(p)) == ("PadRmReaderWriterMultiCoreDefaultProgramFactory", expected)


def test_the_pad_streams_rows_over_the_cores_split_work_to_cores_gives_them(device):
    x = tt(device, (2, 30, 60), layout=ttnn.ROW_MAJOR)
    [p] = launched(device, lambda: ttnn.pad(x, [(1, 1), (0, 4)], 0.0))
    assert p.ranges == ((0, 0, 7, 7),)  # 2 x 32 output rows: one per core of the 8x8 grid
    small = tt(device, (1, 1, 3, 30), layout=ttnn.ROW_MAJOR)
    [q] = launched(device, lambda: ttnn.pad(small, [(0, 0), (0, 2)], 0.0))
    assert q.ranges == ((0, 0, 0, 2),)  # 3 rows: 3 cores, column by column


def test_move_and_reallocate_run_the_copy_factory_as_move_device_operation(device):
    x = tt(device, (2, 32, 64))  # 4 tiles: 4 cores
    [p] = launched(device, lambda: ttnn.move(x))
    assert (p.name, cbs(p), p.ranges) == ("MoveDeviceOperation", [(0, 2, BF16)], ((0, 0, 0, 3),))
    y = tt(device, (2, 32, 64))
    assert [q.name for q in launched(device, lambda: ttnn.reallocate(y))] == ["MoveDeviceOperation"]


def test_a_sharded_move_backs_both_cbs_with_the_shards(device):
    cfg = ttnn.create_sharded_memory_config((64, 64), core_grid=ttnn.CoreGrid(y=1, x=2),
                                            strategy=ttnn.ShardStrategy.HEIGHT,
                                            use_height_and_width_as_shard_shape=True)
    x = ttnn.to_memory_config(tt(device, (128, 64)), cfg)
    [p] = launched(device, lambda: ttnn.move(x))
    assert (cbs(p), [cb.globally_allocated for cb in p.cbs], p.cb_region_end) == (
        [(0, 4, BF16), (1, 4, BF16)], [True, True], p.cb_base)  # nothing in the static region


def test_copy_writes_through_the_copy_factory_converting_to_the_destination_dtype(device):
    a, b = tt(device, (2, 32, 64)), tt(device, (2, 32, 64), ttnn.bfloat8_b)
    [p] = launched(device, lambda: ttnn.copy(a, b))
    assert (p.name, cbs(p)) == ("CopyDeviceOperation", [(0, 2, BF16), (16, 2, BF8)])


# -- slice past the tile-aligned case, and stack --------------------------------------------------

def test_a_row_major_slice_double_buffers_merged_reads_of_its_rows(device):
    x = tt(device, (1, 1, 64, 64), layout=ttnn.ROW_MAJOR)
    [p] = launched(device, lambda: ttnn.slice(x, [0, 0, 0, 8], [1, 1, 64, 40]))
    # 64 output rows of 32 values (64 B) over 64 cores: one row a core, padded to 32 rows; 32 x 64 B = 2 KiB is one
    # read (at most 4 KiB), so a read is 32 rows, double-buffered: 64 pages. Column 8 starts 16 B in, misaligned in
    # DRAM (32 B), so the page is the row aligned to twice 32 B: 64 B
    assert (p.name, p.factory, cbs(p), p.ranges) == (
        "SliceDeviceOperation", "SliceRmProgramFactory", [(0, 64, 64)], ((0, 0, 7, 7),))


def test_a_row_major_slice_merges_reads_up_to_4_kib(device):
    x = tt(device, (1, 1, 4096, 64), layout=ttnn.ROW_MAJOR)
    [p] = launched(device, lambda: ttnn.slice(x, [0, 0, 0, 0], [1, 1, 4096, 48]))
    # 4096 rows over 64 cores: 64 a core (a multiple of 32). Rows of 96 B; the largest read of whole rows up to
    # 4 KiB that divides 64 x 96 B is 32 rows (3 KiB): two reads of 32 rows, double-buffered: 64 pages of 96 B
    assert cbs(p) == [(0, 64, 96)]
    wide = tt(device, (1, 1, 64, 1024), layout=ttnn.ROW_MAJOR)
    [q] = launched(device, lambda: ttnn.slice(wide, [0, 0, 0, 0], [1, 1, 64, 1000]))
    # rows of 2000 B (2016 aligned): 32 padded rows a core; reads of 2 rows (4032 B) divide 32 x 2016: 2 x 2 pages
    assert cbs(q) == [(0, 4, 2016)]


def test_a_strided_row_major_slice_streams_whole_input_rows(device):
    x = tt(device, (1, 1, 32, 100), layout=ttnn.ROW_MAJOR)
    [p] = launched(device, lambda: ttnn.slice(x, [0, 0, 0, 0], [1, 1, 32, 100], [1, 1, 2, 3]))
    # input rows of 200 B aligned to 32 B (both buffers in DRAM): 224; 16 output rows on 16 cores
    assert (p.factory, cbs(p), p.ranges) == ("SliceRmStrideProgramFactory", [(0, 2, 224)], ((0, 0, 1, 7),))


def test_an_unaligned_tiled_slice_goes_through_row_major_and_back(device):
    x = tt(device, (1, 12, 64, 64))
    shown = [p.name for p in launched(device, lambda: ttnn.slice(x, [0, 0, 3, 0], [1, 12, 64, 64]))]
    # 61 rows are no whole tiles: the result is tilized with padding
    assert shown == ["UntilizeDeviceOperation", "SliceDeviceOperation", "TilizeWithValPaddingDeviceOperation"]
    padded = tt(device, (1, 1, 40, 64))  # a padded input untilizes with unpadding
    assert launched(device, lambda: ttnn.slice(padded, [0, 0, 0, 0], [1, 1, 40, 64], [1, 1, 2, 1]))[0].name == \
        "UntilizeWithUnpaddingDeviceOperation"


def test_stack_along_an_outer_dim_is_one_concat(device):
    a, b = tt(device, (2, 32, 64)), tt(device, (2, 32, 64))
    [p] = launched(device, lambda: ttnn.stack([a, b], 1))
    # the output [2, 2, 32, 64] has 8 tiles: the concat factory's two-page CB over 8 cores
    assert (p.name, cbs(p), p.ranges) == ("ConcatDeviceOperation", [(0, 2, BF16)], ((0, 0, 0, 7),))


# -- permute and the CN transpose ------------------------------------------------------------------

@pytest.mark.parametrize("dims, factory, expected", [
    # N and C swap, H and W swap: the tiled dims stay tiled; the swap adds the transposed copy c_16
    ((1, 0, 3, 2), "MultiCoreTileInvariant", [(0, 2, BF16), (16, 2, BF16)]),
    # W stays last, H moves: the new H (C = 3) is no whole tile, so one face row of padding (16 bfloat16 values)
    ((0, 2, 1, 3), None, None),  # an HC transpose, checked below
    ((2, 0, 1, 3), "MultiCoreTileRowInvariant", [(0, 2, BF16), (1, 1, 32)]),
    # both tiled dims move: three two-tile buffers, and the padding row as the new H (2) is no whole tile
    ((3, 2, 1, 0), "MultiCoreTiledGeneric", [(0, 2, BF16), (1, 2, BF16), (2, 2, BF16), (3, 1, 32)]),
])
def test_permute_picks_the_factory_by_which_tiled_dims_move(device, dims, factory, expected):
    x = tt(device, (2, 3, 64, 64))
    programs = launched(device, lambda: ttnn.permute(x, dims))
    if factory is None:
        assert [(p.name, p.factory) for p in programs] == [
            ("TransposeDeviceOperation", "TransposeHCTiledInterleavedProgramFactory")]
        return
    [p] = programs
    assert (p.name, p.factory, cbs(p)) == ("PermuteDeviceOperation", factory, expected)


def test_a_cn_transpose_streams_pages_through_one_two_page_buffer(device):
    x = tt(device, (2, 3, 64, 64))  # 24 tiles: 24 cores, three columns of the 8x8 grid
    for call in (lambda: ttnn.transpose(x, 0, 1), lambda: ttnn.permute(x, (1, 0, 2, 3))):
        [p] = launched(device, call)
        assert (p.name, p.factory, cbs(p), p.ranges) == (
            "TransposeDeviceOperation", "TransposeCNProgramFactory", [(0, 2, BF16)], ((0, 0, 2, 7),))


def test_a_bfloat8_b_permute_runs_in_bfloat16_between_two_typecasts(device):
    x = tt(device, (2, 3, 64, 64), ttnn.bfloat8_b)
    programs = launched(device, lambda: ttnn.permute(x, (2, 0, 1, 3)))
    assert [p.name for p in programs] == ["TypecastDeviceOperation", "PermuteDeviceOperation",
                                          "TypecastDeviceOperation"]
    assert cbs(programs[1])[0] == (0, 2, BF16)  # the permute reads the bfloat16 copy
    assert [p.name for p in launched(device, lambda: ttnn.permute(x, (1, 0, 2, 3)))] == ["TransposeDeviceOperation"]


def test_a_permute_that_moves_only_unit_dims_runs_nothing(device):
    x = tt(device, (1, 1, 64, 64))
    assert launched(device, lambda: ttnn.permute(x, (1, 0, 2, 3))) == []  # the shape stays: a no-op in TT-NN
    y = tt(device, (1, 3, 64, 64))  # [3, 1, 64, 64] is another shape: the CN transpose runs
    assert [p.factory for p in launched(device, lambda: ttnn.permute(y, (1, 0, 2, 3)))] == ["TransposeCNProgramFactory"]


# -- split and chunk: one slice per piece ------------------------------------------------------------

def test_chunk_along_an_outer_dim_runs_one_tile_slice_per_piece(device):
    x = tt(device, (2, 32, 64))
    programs = launched(device, lambda: ttnn.chunk(x, 2, 0))
    assert [(p.name, p.factory) for p in programs] == [("SliceDeviceOperation", "SliceTileProgramFactory")] * 2


def test_split_into_unaligned_rows_slices_each_piece_through_row_major(device):
    x = tt(device, (2, 32, 64))
    names = [p.name for p in launched(device, lambda: ttnn.split(x, 24, 1))]  # 24 and 8 rows: no whole tiles
    assert names == ["UntilizeDeviceOperation", "SliceDeviceOperation", "TilizeWithValPaddingDeviceOperation"] * 2


def test_splitting_the_last_dim_in_two_is_tt_nns_split_device_operation_not_modelled(device):
    x = tt(device, (1, 1, 64, 64))
    assert launched(device, lambda: ttnn.split(x, 32, 3)) == []


# -- the partial sharding moves --------------------------------------------------------------------

def test_interleaved_to_sharded_partial_backs_its_output_cb_with_the_shard(device):
    x = tt(device, (1, 1, 128, 64))
    [p] = launched(device, lambda: ttnn.interleaved_to_sharded_partial(
        x, ttnn.CoreGrid(y=1, x=2), [32, 64], 2, 1, ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
        ttnn.ShardOrientation.ROW_MAJOR))
    # a [32, 64] shard: 2 tiles; bfloat16 tiles (2048 B) need no DRAM scratch
    assert (p.name, cbs(p), [cb.globally_allocated for cb in p.cbs], p.ranges) == (
        "InterleavedToShardedPartialDeviceOperation", [(0, 2, BF16)], [True], ((0, 0, 1, 0),))
    [q] = launched(device, lambda: ttnn.interleaved_to_sharded_partial(
        x, ttnn.CoreGrid(y=1, x=2), [32, 64], 2, 0, ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
        ttnn.ShardOrientation.ROW_MAJOR, output_dtype=ttnn.bfloat8_b))
    assert cbs(q) == [(0, 2, BF16), (16, 2, BF8)]  # the input pages stream through c_0; the shard is c_16
    rm = tt(device, (1, 1, 64, 40), layout=ttnn.ROW_MAJOR)  # 80 B rows from DRAM: not 32 B-aligned, so c_1
    [r] = launched(device, lambda: ttnn.interleaved_to_sharded_partial(
        rm, ttnn.CoreGrid(y=1, x=2), [16, 40], 2, 0, ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
        ttnn.ShardOrientation.ROW_MAJOR))
    assert cbs(r) == [(0, 16, 80), (1, 4, 96)]


def test_sharded_to_interleaved_partial_reads_the_shard_in_place(device):
    s = ttnn.from_torch(torch.randn(1, 1, 64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                        memory_config=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG)
    cache = tt(device, (1, 1, 128, 64))
    [p] = launched(device, lambda: ttnn.sharded_to_interleaved_partial(s, cache, 2, 1))
    shard = s.memory_config().shard_spec.shape
    tiles = shard[0] // 32 * (shard[1] // 32)
    assert (p.name, cbs(p), [cb.globally_allocated for cb in p.cbs]) == (
        "ShardedToInterleavedPartialDeviceOperation", [(0, tiles, BF16)], [True])


def test_reshape_on_device_streams_tiles_on_one_core(device):
    x = tt(device, (1, 2, 32, 64))
    [p] = launched(device, lambda: ttnn.reshape_on_device(x, 1, 1, 64, 64))
    # bfloat16 face rows are 32 B, as wide as DRAM's alignment: no landing pad
    assert (p.name, p.factory, cbs(p), p.ranges) == (
        "ReshapeDeviceOperation", "ReshapeTileProgramFactory", [(0, 2, BF16)], ((0, 0, 0, 0),))
    b8 = tt(device, (1, 2, 32, 64), ttnn.bfloat8_b)  # 16 B face rows: a 32 B landing pad for DRAM reads
    assert cbs(launched(device, lambda: ttnn.reshape_on_device(b8, 1, 1, 64, 64))[0]) == [(0, 2, BF8), (1, 1, 32)]
