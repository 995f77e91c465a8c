"""sort launches SortDeviceOperation as TT-NN's sort.cpp runs it: the single-row single-core factory (up to 64 tiles
along the dim), with a WH transpose before and two after (values, indices) for the second-to-last dim.

CBs are hand-checked against tt-metal's sort_single_row_single_core_program_factory.cpp: c_0 / c_1 4 input / index
tiles, c_2 / c_3 the row's Wt input / index tiles, c_4 two value tiles' bytes in index-tile pages, c_5 two index
tiles, c_6 one 32 x 32 uint8 synchronization page; cores: a row of tiles each, the grid's rows first, and
the factory's last CoreRange one core wider than the rows of tiles left.
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import cbs, launched  # tests/programs_heard.py

import device_sim as ttnn

BF16, U16 = 2048, 2048  # bytes of one 32x32 tile


def tt(device, shape, dtype=ttnn.bfloat16):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=ttnn.TILE, device=device)


def test_a_sort_along_the_last_dim_holds_the_whole_row_transposed(device):
    x = tt(device, (1, 96, 256))
    [p] = launched(device, lambda: ttnn.sort(x, -1, descending=True))
    assert (p.name, p.factory) == ("SortDeviceOperation", "SortProgramFactorySingleRowSingleCore")
    wt = 256 // 32
    assert cbs(p) == [(0, 4, BF16), (1, 4, U16), (2, wt, BF16), (3, wt, U16), (4, 2, U16), (5, 2, U16), (6, 1, 1024)]
    assert p.ranges == ((0, 0, 2, 0),)  # 96 rows: 3 rows of tiles, the first 3 cores of row 0


def test_a_partial_last_row_of_cores_spans_one_core_more_as_the_factory_writes_it(device):
    x = tt(device, (1, 10 * 32, 64))
    [p] = launched(device, lambda: ttnn.sort(x))
    # 10 rows of tiles on an 8-wide grid: row 0 whole, then CoreRange (0, 1)-(2, 1), whose end x is 10 % 8 = 2
    assert p.ranges == ((0, 0, 7, 0), (0, 1, 2, 1))


def test_a_sort_along_the_second_to_last_dim_transposes_before_and_both_results_after(device):
    x = tt(device, (2, 64, 64))
    programs = launched(device, lambda: ttnn.sort(x, dim=1))
    assert [p.name for p in programs] == ["TransposeDeviceOperation", "SortDeviceOperation",
                                          "TransposeDeviceOperation", "TransposeDeviceOperation"]
    assert cbs(programs[3]) == [(0, 2, U16), (16, 2, U16)]  # the indices, transposed in their own format


def test_a_dim_off_a_power_of_two_is_padded_and_both_results_sliced_back(device):
    x = tt(device, (2, 32, 96))
    programs = launched(device, lambda: ttnn.sort(x))
    # 96 pads to 128 (the next power of two); the results [1, 2, 32, 128] slice back to 96: tile-aligned slices
    assert [p.name for p in programs] == ["PadDeviceOperation", "SortDeviceOperation", "SliceDeviceOperation",
                                          "SliceDeviceOperation"]
    assert cbs(programs[1])[2:4] == [(2, 4, BF16), (3, 4, U16)]  # Wt = 128 / 32


def test_a_dim_that_is_not_whole_tiles_is_filled_and_sorted_in_its_padded_tiles(device):
    x = tt(device, (2, 30, 48))
    fill, sort = launched(device, lambda: ttnn.sort(x))
    # 48 pads to 64 in its tiles, already a power of two: no pad, no slice; fill: a bfloat16 face row + 2 B
    assert (fill.name, cbs(fill), fill.ranges) == ("FillPadDeviceOperation", [(0, 2, 34)], ((0, 0, 0, 1),))
    assert (cbs(sort)[2], sort.ranges) == ((2, 2, BF16), ((0, 0, 1, 0),))


@pytest.mark.parametrize("shape, dim", [
    ((32, 4096), -1),     # 128 tiles along the dim: a multi-core factory
    ((64, 32, 64), 0),    # an outer dim (a permute)
])
def test_another_factory_or_a_permute_launches_nothing(device, shape, dim):
    x = tt(device, shape)
    assert launched(device, lambda: ttnn.sort(x, dim)) == []
