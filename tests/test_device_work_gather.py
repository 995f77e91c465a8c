"""gather launches GatherDeviceOperation as TT-NN's gather.cpp runs it: the single-row single-core factory up to 60
tiles along the last dim, the multi-core one past that, and transposes around it for the second-to-last dim.

CBs are hand-checked against tt-metal's data_movement/gather/device/gather_program_factory.cpp: single-core, c_0 the
input's whole row of Wt tiles, c_1 one index tile, c_2 one output tile, over the index's rows of tiles; multi-core,
c_0 two input tiles, c_1 and c_2 one tile each, over the index's tiles along the last dim; both row by row.
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import cbs, launched  # tests/programs_heard.py

import device_sim as ttnn

BF16, U32 = 2048, 4096  # bytes of one 32x32 tile


def tt(device, shape, dtype=ttnn.bfloat16, **kw):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=ttnn.TILE, device=device, **kw)


def idx(device, high, shape, dtype=ttnn.uint32):
    values = torch.randint(0, high, shape, generator=torch.Generator().manual_seed(0), dtype=torch.int32)
    return ttnn.from_torch(values, dtype=dtype, layout=ttnn.TILE, device=device)


def test_a_gather_along_the_last_dim_holds_a_whole_input_row_per_core(device):
    x, i = tt(device, (2, 64, 128)), idx(device, 128, (2, 64, 32))
    [p] = launched(device, lambda: ttnn.gather(x, -1, i))
    assert (p.name, p.factory) == ("GatherDeviceOperation", "GatherProgramFactorySingleRowSingleCore")
    assert cbs(p) == [(0, 4, BF16), (1, 1, U32), (2, 1, BF16)]  # 128 values: a row of 4 tiles
    assert p.ranges == ((0, 0, 3, 0),)  # the index's 2 x 64 rows: 4 rows of tiles


def test_a_uint16_index_streams_uint16_tiles(device):
    x, i = tt(device, (32, 64)), idx(device, 64, (32, 64), dtype=ttnn.uint16)
    [p] = launched(device, lambda: ttnn.gather(x, 1, i))
    assert cbs(p) == [(0, 2, BF16), (1, 1, 2048), (2, 1, BF16)]


def test_more_than_60_tiles_along_the_last_dim_take_the_multi_core_factory(device):
    x, i = tt(device, (32, 61 * 32)), idx(device, 61 * 32, (32, 64))
    [p] = launched(device, lambda: ttnn.gather(x, -1, i))
    assert (p.factory, cbs(p)) == ("GatherProgramFactorySingleRowMultiCore", [(0, 2, BF16), (1, 1, U32), (2, 1, BF16)])
    assert p.ranges == ((0, 0, 1, 0),)  # the index's 2 tiles along the last dim


def test_a_gather_along_the_second_to_last_dim_transposes_index_input_and_output(device):
    x, i = tt(device, (2, 64, 32)), idx(device, 64, (2, 64, 32))
    programs = launched(device, lambda: ttnn.gather(x, 1, i))
    assert [p.name for p in programs] == ["TransposeDeviceOperation", "TransposeDeviceOperation",
                                          "GatherDeviceOperation", "TransposeDeviceOperation"]
    assert cbs(programs[0]) == [(0, 2, U32), (16, 2, U32)]  # the index first, in its own format
    assert cbs(programs[2]) == [(0, 2, BF16), (1, 1, U32), (2, 1, BF16)]  # [2, 32, 64] moved: rows of 2 tiles


def test_an_index_that_is_not_whole_tiles_gets_its_padding_filled_first(device):
    x, i = tt(device, (2, 32, 64)), idx(device, 64, (2, 32, 8))
    fill, gather = launched(device, lambda: ttnn.gather(x, -1, i))
    # fill_pad_program_factory.cpp: two pages of a uint32 face row (16 x 4 B) + 2 B; one [32, 8] matrix a core
    assert (fill.name, cbs(fill), fill.ranges) == ("FillPadDeviceOperation", [(0, 2, 66)], ((0, 0, 0, 1),))
    assert cbs(gather) == [(0, 2, BF16), (1, 1, U32), (2, 1, BF16)]  # the index padded to one tile along W


def test_an_input_that_is_not_whole_tiles_is_filled_after_the_index(device):
    x, i = tt(device, (32, 40)), idx(device, 40, (32, 8))
    names = [p.name for p in launched(device, lambda: ttnn.gather(x, -1, i))]
    assert names == ["FillPadDeviceOperation", "FillPadDeviceOperation", "GatherDeviceOperation"]


def test_an_input_with_more_rows_than_the_index_is_sliced_to_them_first(device):
    x, i = tt(device, (2, 64, 64)), idx(device, 64, (2, 32, 64))
    programs = launched(device, lambda: ttnn.gather(x, -1, i))
    # [1, 2, 64, 64] sliced to the index's [1, 2, 32, 64]: whole tiles, the tile slice factory
    assert [(p.name, p.factory) for p in programs] == [
        ("SliceDeviceOperation", "SliceTileProgramFactory"),
        ("GatherDeviceOperation", "GatherProgramFactorySingleRowSingleCore")]
    assert programs[1].ranges == ((0, 0, 1, 0),)  # the index's 2 rows of tiles


@pytest.mark.parametrize("shape, index_shape, dim", [
    ((2, 40, 64), (2, 40, 8), -1),    # rows that are not whole tiles: the slice to 64 padded rows passes the input
    ((64, 32, 64), (64, 32, 64), 0),  # an outer dim (a permute)
])
def test_forms_with_a_slice_past_the_input_or_a_permute_launch_nothing(device, shape, index_shape, dim):
    x, i = tt(device, shape), idx(device, 8, index_shape)
    assert launched(device, lambda: ttnn.gather(x, dim, i)) == []
