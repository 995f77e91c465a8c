"""repeat and expand launch RepeatDeviceOperation once per repeated dim, as TT-NN's repeat.cpp runs it.

CBs are hand-checked against tt-metal's data_movement/repeat/device/ factories: both create c_0 and c_1, one page
each, on the whole grid. The higher-dim factory's page is 2 x READ_ALIGNMENT (64 B) + the page it moves (a tile
in the tile-native mode, else a row); the last-dim factory's is twice the row's bytes when they are a multiple
of 8, four times at 4, eight times at 2 (its ternary chain, whose first test never holds).
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import cbs, launched  # tests/programs_heard.py

import device_sim as ttnn

BF16, BF8 = 2048, 1088  # bytes of one 32x32 tile


def tt(device, shape, dtype=ttnn.bfloat16, layout=ttnn.TILE, **kw):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=layout, device=device, **kw)


def test_a_whole_tile_repeat_runs_the_tile_native_program_once_per_repeated_dim(device):
    x = tt(device, (2, 32, 64))
    programs = launched(device, lambda: ttnn.repeat(x, (1, 2, 3)))  # W then H; dim 0 is repeated once
    assert [(p.name, p.factory) for p in programs] == [("RepeatDeviceOperation", "RepeatProgramFactoryHigherDim")] * 2
    for p in programs:
        assert cbs(p) == [(0, 1, 128 + BF16), (1, 1, 128 + BF16)]  # 2 x 64 B + a bfloat16 tile
        assert p.ranges == ((0, 0, 7, 7),)


def test_the_tile_native_page_is_the_inputs_tile(device):
    x = tt(device, (1, 64, 32), dtype=ttnn.bfloat8_b)
    [p] = launched(device, lambda: ttnn.repeat(x, (4, 1, 1)))
    assert cbs(p) == [(0, 1, 128 + BF8), (1, 1, 128 + BF8)]


def test_expand_is_repeat_by_the_output_over_the_input(device):
    x = tt(device, (1, 32, 64))
    [p] = launched(device, lambda: ttnn.expand(x, [3, -1, -1]))
    assert (p.name, cbs(p)) == ("RepeatDeviceOperation", [(0, 1, 128 + BF16), (1, 1, 128 + BF16)])
    assert launched(device, lambda: ttnn.expand(x, [1, 32, 64])) == []  # nothing to repeat: the input as is


def test_a_repeat_of_ones_runs_nothing(device):
    x = tt(device, (2, 32, 64))
    assert launched(device, lambda: ttnn.repeat(x, (1, 1, 1))) == []


def test_a_tile_tensor_that_is_not_whole_tiles_repeats_through_row_major_and_back(device):
    x = tt(device, (2, 5, 7))
    programs = launched(device, lambda: ttnn.repeat(x, (2, 1, 3)))
    assert [(p.name, p.factory) for p in programs] == [
        ("UntilizeWithUnpaddingDeviceOperation", "UntilizeMultiCoreProgramFactory"),
        ("RepeatDeviceOperation", "RepeatProgramFactoryLastDim"),
        ("RepeatDeviceOperation", "RepeatProgramFactoryHigherDim"),
        ("TilizeWithValPaddingDeviceOperation", "TilizeMultiCoreInterleavedProgramFactory"),
    ]
    # W first: rows of 7 bfloat16 values are 14 B, a multiple of 2 only: 8 x 14 = 112 B. Then dim 0 moves rows
    # of the repeated width, 21 values = 42 B: 128 + 42 = 170 B.
    assert cbs(programs[1]) == [(0, 1, 112), (1, 1, 112)]
    assert cbs(programs[2]) == [(0, 1, 170), (1, 1, 170)]


@pytest.mark.parametrize("width, dtype, cb_bytes", [
    (8, ttnn.bfloat16, 2 * 16),  # 16 B rows: a multiple of 8
    (6, ttnn.bfloat16, 4 * 12),  # 12 B: of 4
    (7, ttnn.bfloat16, 8 * 14),  # 14 B: of 2
    (7, ttnn.float32, 4 * 28),   # 28 B: of 4
    (64, ttnn.float32, 2 * 256),
])
def test_a_row_major_last_dim_repeat_sizes_its_cbs_by_the_rows_alignment(device, width, dtype, cb_bytes):
    x = tt(device, (3, width), dtype=dtype, layout=ttnn.ROW_MAJOR)
    [p] = launched(device, lambda: ttnn.repeat(x, (1, 2)))
    assert (p.factory, cbs(p), p.ranges) == (
        "RepeatProgramFactoryLastDim", [(0, 1, cb_bytes), (1, 1, cb_bytes)], ((0, 0, 7, 7),))


def test_a_row_major_upper_dim_repeat_moves_whole_rows(device):
    x = tt(device, (2, 3, 40), layout=ttnn.ROW_MAJOR)
    [p] = launched(device, lambda: ttnn.repeat(x, (1, 4, 1)))
    assert (p.factory, cbs(p)) == ("RepeatProgramFactoryHigherDim", [(0, 1, 128 + 80), (1, 1, 128 + 80)])


def test_a_repeat_whose_cbs_clash_with_an_l1_tensor_fails_and_frees_its_output():
    # 8 KiB of L1 above the reserved base per core; the two 2,176 B CBs end 4,352 B above it
    dev = ttnn.open_device(0, l1_size=98_304 + 8192)
    try:
        x = tt(dev, (1, 32, 32))
        # two tiles on each of 64 banks, from the top: the lowest 4,096 B above the base, below the CBs' end
        held = tt(dev, (128 * 32, 32), memory_config=ttnn.L1_MEMORY_CONFIG)
        live = len(dev.memory.live_buffers())
        with pytest.raises(RuntimeError, match="clash with L1 buffers"):
            ttnn.repeat(x, (2, 1, 1))
        assert len(dev.memory.live_buffers()) == live
        held.deallocate()
        assert len(launched(dev, lambda: ttnn.repeat(x, (2, 1, 1)))) == 1  # room again
    finally:
        ttnn.close_device(dev)


# -- repeat_interleave: TT-NN's composite (repeat_interleave.cpp) -------------------------------------------------

def test_repeat_interleave_untilizes_concats_the_copies_and_tilizes_back(device):
    x = tt(device, (2, 32, 64))
    programs = launched(device, lambda: ttnn.repeat_interleave(x, 2, 1))
    assert [p.name for p in programs] == ["UntilizeDeviceOperation", "ConcatDeviceOperation", "TilizeDeviceOperation"]
    untilize, concat, tilize = programs
    # untilize: 2 rows of tiles 2 tiles wide, one row a core (single-buffered) on 2 cores
    assert (cbs(untilize), untilize.ranges) == ([(0, 2, BF16), (16, 2, BF16)], ((0, 0, 1, 0),))
    # concat into [2, 32, 2, 64] ROW_MAJOR: rows of 64 bfloat16 values (128 B), 128 rows over the 64 cores
    assert (cbs(concat), concat.ranges) == ([(0, 2, 128)], ((0, 0, 7, 7),))
    # tilize [2, 64, 64]: 4 rows of tiles, each a core's row of 2 tiles
    assert (cbs(tilize), tilize.ranges) == ([(0, 2, BF16), (16, 2, BF16)], ((0, 0, 3, 0),))


def test_repeat_interleave_over_the_last_dim_runs_between_two_transposes(device):
    x = tt(device, (2, 32, 64))
    programs = launched(device, lambda: ttnn.repeat_interleave(x, 2, -1))
    assert [p.name for p in programs] == ["TransposeDeviceOperation", "UntilizeDeviceOperation",
                                          "ConcatDeviceOperation", "TilizeDeviceOperation", "TransposeDeviceOperation"]
    # over [2, 64, 32] transposed: the copies are rows of 32 values (64 B); the result [2, 128, 32] is 8 tiles
    assert cbs(programs[2]) == [(0, 2, 64)]
    assert programs[4].ranges == ((0, 0, 0, 7),)


def test_more_than_32_repeats_concat_in_batches_of_32_then_join_them(device):
    x = tt(device, (1, 32, 32), layout=ttnn.ROW_MAJOR)
    programs = launched(device, lambda: ttnn.repeat_interleave(x, 40, 0))
    # batches of 32 and 8 copies, then both joined: ROW_MAJOR needs no untilize or tilize
    assert [p.name for p in programs] == ["ConcatDeviceOperation"] * 3
    assert [cbs(p) for p in programs] == [[(0, 2, 64)]] * 3
    assert [p.ranges for p in programs] == [((0, 0, 7, 7),), ((0, 0, 7, 7),), ((0, 0, 7, 7),)]  # 1024, 256, 1280 rows


def test_repeat_interleave_once_is_a_move_to_the_output_config_alone(device):
    x = tt(device, (2, 32, 64))
    assert launched(device, lambda: ttnn.repeat_interleave(x, 1, 0)) == []  # to_memory_config to the same config
    [copy] = launched(device, lambda: ttnn.repeat_interleave(x, 1, 0, memory_config=ttnn.L1_MEMORY_CONFIG))
    assert (copy.name, cbs(copy)) == ("CopyDeviceOperation", [(0, 2, BF16)])


def test_repeat_interleave_on_l1_copies_concats_dram_result_back_to_l1(device):
    x = tt(device, (2, 32, 64), memory_config=ttnn.L1_MEMORY_CONFIG)
    programs = launched(device, lambda: ttnn.repeat_interleave(x, 2, 1))
    assert [p.name for p in programs] == ["UntilizeDeviceOperation", "ConcatDeviceOperation", "TilizeDeviceOperation",
                                          "CopyDeviceOperation"]
    # the copy of the tilized [2, 64, 64] (8 tiles, two in flight, column by column) from DRAM into L1
    assert (cbs(programs[3]), programs[3].ranges) == ([(0, 2, BF16)], ((0, 0, 0, 7),))


def test_a_batch_of_one_copy_from_l1_is_concats_move_to_dram(device):
    x = tt(device, (2, 32, 64), layout=ttnn.ROW_MAJOR, memory_config=ttnn.L1_MEMORY_CONFIG)
    programs = launched(device, lambda: ttnn.repeat_interleave(x, 33, 0))
    # 32 copies, then the 33rd alone (its to_memory_config to DRAM: rows of 128 B), then both joined, then to L1
    assert [p.name for p in programs] == ["ConcatDeviceOperation", "CopyDeviceOperation", "ConcatDeviceOperation",
                                          "CopyDeviceOperation"]
    assert cbs(programs[1]) == [(0, 2, 128)]
