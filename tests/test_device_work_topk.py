"""topk launches TopKDeviceOperation as TT-NN's topk.cpp runs it: its single-core factory, with a WH transpose before
and two after (values, indices) for the second-to-last dim.

CBs are hand-checked against tt-metal's reduction/topk/device/topk_single_core_program_factory.cpp: with Kt = k / 32,
c_0 2 input tiles, c_1 2 index tiles, c_2 4 compute tiles, c_3 4 index tiles, c_4 2 Kt compute tiles, c_5 2 Kt index
tiles, c_6 Kt value tiles, c_7 Kt index tiles; the compute format is bfloat16 for a bfloat8_b input. The Ht rows of
tiles go to the first Ht cores of the grid, row by row.
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import cbs, launched  # tests/programs_heard.py

import device_sim as ttnn

BF16, BF8, U16 = 2048, 1088, 2048  # bytes of one 32x32 tile (UINT16: 2 B a value)


def tt(device, shape, dtype=ttnn.bfloat16, layout=ttnn.TILE, **kw):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=layout, device=device, **kw)


def test_topk_over_the_last_dim_is_one_program_over_the_rows_of_tiles(device):
    x = tt(device, (1, 3, 64, 256))
    [p] = launched(device, lambda: ttnn.topk(x, 64, dim=-1))
    kt = 64 // 32
    assert (p.name, p.factory) == ("TopKDeviceOperation", "TopKSingleCoreProgramFactory")
    assert cbs(p) == [(0, 2, BF16), (1, 2, U16), (2, 4, BF16), (3, 4, U16), (4, 2 * kt, BF16), (5, 2 * kt, U16),
                      (6, kt, BF16), (7, kt, U16)]
    assert p.ranges == ((0, 0, 5, 0),)  # 3 x 64 rows = 6 rows of tiles: the first 6 cores of row 0


def test_sub_core_grids_take_the_rows_of_tiles_range_by_range(device):
    x = tt(device, (1, 1, 320, 256))
    grids = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(1, 0), ttnn.CoreCoord(3, 1)),
                               ttnn.CoreRange(ttnn.CoreCoord(5, 5), ttnn.CoreCoord(6, 7))])
    [p] = launched(device, lambda: ttnn.topk(x, 32, sub_core_grids=grids))
    # 10 rows of tiles: the first range's 6 cores, then 4 of the second's, two whole rows of 2
    assert p.ranges == ((1, 0, 3, 1), (5, 5, 6, 6))


def test_a_bfloat8_b_input_sorts_in_bfloat16(device):
    x = tt(device, (32, 128), dtype=ttnn.bfloat8_b)
    [p] = launched(device, lambda: ttnn.topk(x, 32))
    assert cbs(p) == [(0, 2, BF8), (1, 2, U16), (2, 4, BF16), (3, 4, U16), (4, 2, BF16), (5, 2, U16), (6, 1, BF8),
                      (7, 1, U16)]


def test_more_rows_of_tiles_than_cores_fill_the_grid_row_by_row(device):
    x = tt(device, (1, 1, 70 * 32, 64))
    [p] = launched(device, lambda: ttnn.topk(x, 32))
    assert p.ranges == ((0, 0, 7, 7),)  # 70 rows of tiles over 64 cores


def test_topk_over_the_second_to_last_dim_transposes_before_and_both_results_after(device):
    x = tt(device, (2, 64, 64))
    programs = launched(device, lambda: ttnn.topk(x, 32, dim=1, largest=False))
    wh = ("TransposeDeviceOperation", "TransposeWHProgramFactory")
    assert [(p.name, p.factory) for p in programs] == [
        wh, ("TopKDeviceOperation", "TopKSingleCoreProgramFactory"), wh, wh]
    # the input's 8 tiles, then TopK over the 2 x 64 transposed rows (4 rows of tiles), then [2, 64, 32] twice: 4 tiles
    assert [p.ranges for p in programs] == [((0, 0, 0, 7),), ((0, 0, 3, 0),), ((0, 0, 0, 3),), ((0, 0, 0, 3),)]
    assert cbs(programs[3]) == [(0, 2, U16), (16, 2, U16)]  # the indices, transposed in their own format


def test_k_off_whole_tiles_and_a_short_dim_add_the_pad_and_both_slices(device):
    x = tt(device, (2, 32, 64))
    programs = launched(device, lambda: ttnn.topk(x, 5, dim=1, largest=False))
    # transposed to [2, 64, 32]: under 64, so padded to [1, 2, 64, 64] (+inf); TopK keeps a whole tile (k = 32);
    # values and indices are each sliced to 5 through ROW_MAJOR (tests/test_device_work_shape_ops.py's slices)
    slice_trip = ["UntilizeDeviceOperation", "SliceDeviceOperation", "TilizeWithValPaddingDeviceOperation"]
    assert [p.name for p in programs] == ["TransposeDeviceOperation", "PadDeviceOperation", "TopKDeviceOperation",
                                          *slice_trip, *slice_trip, "TransposeDeviceOperation",
                                          "TransposeDeviceOperation"]
    pad, topk = programs[1], programs[2]
    assert (pad.factory, cbs(pad)) == ("PadTileMulticoreProgramFactory", [(0, 2, BF16), (1, 2, BF16), (2, 1, BF16)])
    assert cbs(topk)[4:] == [(4, 2, BF16), (5, 2, U16), (6, 1, BF16), (7, 1, U16)]  # Kt = 1
    assert topk.ranges == ((0, 0, 3, 0),)  # 2 x 64 rows: 4 rows of tiles
    assert cbs(programs[4])[0][2] == 32  # the values' slice: rows of 5 bfloat16 (10 B), DRAM-aligned to 32 B


def test_dims_that_are_not_whole_tiles_get_their_padding_filled_before_topk(device):
    x = tt(device, (2, 30, 100))
    fill, topk = launched(device, lambda: ttnn.topk(x, 32))
    # fill_pad_program_factory.cpp: two pages of a bfloat16 face row (16 x 2 B) + 2 B, one [30, 100] matrix a core
    assert (fill.name, cbs(fill), fill.ranges) == ("FillPadDeviceOperation", [(0, 2, 34)], ((0, 0, 0, 1),))
    assert topk.ranges == ((0, 0, 1, 0),)  # the padded rows: 2 x 32 = 2 rows of tiles


@pytest.mark.parametrize("shape, dtype, k, dim", [
    ((2, 32, 48), ttnn.bfloat8_b, 5, -1),  # bfloat8_b, not whole tiles: its pad (not multi-core) and fill
    ((2, 32, 32), ttnn.bfloat8_b, 8, -1),  # a bfloat8_b pad is not pad_multicore (its factory not modelled)
    ((64, 16384), ttnn.bfloat16, 32, -1),  # 16384 wide, a power of two, k <= 64: the multi-core factory
    ((64, 32, 64), ttnn.bfloat16, 32, 0),  # an outer dim: a permute, not a WH transpose
])
def test_forms_whose_surrounding_programs_are_not_modelled_launch_nothing(device, shape, dtype, k, dim):
    x = tt(device, shape, dtype=dtype)
    assert launched(device, lambda: ttnn.topk(x, k, dim=dim)) == []


def test_a_topk_whose_cbs_clash_with_an_l1_tensor_fails_and_frees_both_outputs():
    dev = ttnn.open_device(0, l1_size=98_304 + 32_768)  # 32 KiB above the reserved base per core
    try:
        x = tt(dev, (32, 64))
        # the CBs: 2 + 2 + 4 + 4 + 2 + 2 + 1 + 1 = 18 tiles of 2 KiB, 36 KiB: past the end of L1 already
        live = len(dev.memory.live_buffers())
        with pytest.raises(RuntimeError, match="beyond max L1 size"):
            ttnn.topk(x, 32)
        assert len(dev.memory.live_buffers()) == live
    finally:
        ttnn.close_device(dev)
