"""prod launches ProdAllDeviceOperation (every dim) or ProdNcDeviceOperation (over one dim, between permutes for dims 2
and 3 of the 4-D view), as TT-NN's prod.cpp runs them.

CBs are hand-checked against tt-metal's reduction/prod/device/ factories: prod_all, core (0, 0) only, c_0 two input
tiles and c_3 two output tiles; prod_nc, c_0 two, c_1 one, c_2 one and c_3 two tiles in the output's format, over the
output's tiles (split_work_to_cores, column by column).
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import cbs, launched  # tests/programs_heard.py

import device_sim as ttnn

BF16, F32 = 2048, 4096  # bytes of one 32x32 tile


def tt(device, shape, dtype=ttnn.bfloat16, layout=ttnn.TILE):
    return ttnn.from_torch(torch.rand(*shape) + 0.5, dtype=dtype, layout=layout, device=device)


def test_prod_of_everything_streams_the_input_through_one_core(device):
    x = tt(device, (2, 32, 64), dtype=ttnn.float32)
    [p] = launched(device, lambda: ttnn.prod(x))
    assert (p.name, p.factory, cbs(p), p.ranges) == (
        "ProdAllDeviceOperation", "ProdAllProgramFactory", [(0, 2, F32), (3, 2, F32)], ((0, 0, 0, 0),))


@pytest.mark.parametrize("shape, dim, cores", [
    # [4, 2, 32, 64] over dim 0: the output [1, 2, 32, 64] is 4 tiles, one a core, column by column
    ((4, 2, 32, 64), 0, ((0, 0, 0, 3),)),
    # over dim 1: [4, 1, 32, 64], 8 tiles fill column 0
    ((4, 2, 32, 64), 1, ((0, 0, 0, 7),)),
    # rank 3 [2, 96, 64] over dim 0 is dim 1 of [1, 2, 96, 64]: the output [1, 1, 96, 64] is 3 x 2 tiles
    ((2, 96, 64), 0, ((0, 0, 0, 5),)),
])
def test_prod_over_dim_0_or_1_of_the_4d_view_is_one_prod_nc(device, shape, dim, cores):
    x = tt(device, shape)
    [p] = launched(device, lambda: ttnn.prod(x, dim=dim))
    assert (p.name, cbs(p), p.ranges) == (
        "ProdNcDeviceOperation", [(0, 2, BF16), (1, 1, BF16), (2, 1, BF16), (3, 2, BF16)], cores)


def test_prod_over_w_permutes_it_to_the_front_and_back_in_three_steps(device):
    x = tt(device, (2, 32, 64))
    programs = launched(device, lambda: ttnn.prod(x, dim=-1))
    # [1, 2, 32, 64] by (3, 0, 1, 2) to [64, 1, 2, 32]; ProdNc over dim 0 into [1, 1, 2, 32] (one tile); back by
    # (1, 2, 0, 3) to [1, 2, 1, 32]; the slice keeps it whole; then (0, 1, 3, 2): a WH transpose
    assert [p.name for p in programs] == ["PermuteDeviceOperation", "ProdNcDeviceOperation",
                                          "PermuteDeviceOperation", "TransposeDeviceOperation"]
    assert programs[1].ranges == ((0, 0, 0, 0),)
    assert programs[3].ranges == ((0, 0, 0, 1),)  # [1, 2, 1, 32]: 2 tiles


def test_prod_over_h_permutes_it_to_the_front_and_back_once(device):
    x = tt(device, (2, 96, 64))
    programs = launched(device, lambda: ttnn.prod(x, dim=1))
    # dim 2 of [1, 2, 96, 64]: by (2, 0, 1, 3) to [96, 1, 2, 64]; ProdNc into [1, 1, 2, 64]: 2 tiles; back once
    assert [p.name for p in programs] == ["PermuteDeviceOperation", "ProdNcDeviceOperation", "PermuteDeviceOperation"]
    assert programs[1].ranges == ((0, 0, 0, 1),)


def test_prod_of_a_row_major_tensor_is_not_modelled(device):
    x = tt(device, (2, 32, 64), layout=ttnn.ROW_MAJOR)
    assert launched(device, lambda: ttnn.prod(x, dim=0)) == []
