"""cumsum launches AccumulationDeviceOperation as TT-NN's accumulation_invoke runs it: between two permutes that swap
the scanned dim with dim 0 of the 4-D view when the dim is among the input's last three, else where it is.

CBs are hand-checked against tt-metal's reduction/accumulation/device/accumulation_program_factory.cpp: four CBs of
four tiles, created as c_0 (input format), c_3, c_2, c_1 (output format); split_work_to_cores (column by column) over
the rows, i.e. the tiles divided by the scanned dim's (padded) length. The permutes' own CBs are
tests/test_device_work_shape_ops.py's.
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import cbs, launched  # tests/programs_heard.py

import device_sim as ttnn

BF16, F32 = 2048, 4096  # bytes of one 32x32 tile


def tt(device, shape, dtype=ttnn.bfloat16, layout=ttnn.TILE, **kw):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=layout, device=device, **kw)


def test_an_outer_dim_of_a_4d_tensor_is_scanned_where_it_is(device):
    x = tt(device, (4, 2, 32, 64))
    [p] = launched(device, lambda: ttnn.cumsum(x, 0))
    assert (p.name, p.factory) == ("AccumulationDeviceOperation", "AccumulationProgramFactory")
    assert cbs(p) == [(0, 4, BF16), (3, 4, BF16), (2, 4, BF16), (1, 4, BF16)]
    # 4 x 2 x 1 x 2 = 16 tiles, 4 along dim 0: 4 rows, one a core, column by column
    assert p.ranges == ((0, 0, 0, 3),)


def test_the_last_dim_is_permuted_to_the_front_and_back(device):
    x = tt(device, (2, 32, 64))
    programs = launched(device, lambda: ttnn.cumsum(x, 2, reverse_order=True))
    # [1, 2, 32, 64] permuted by (3, 1, 2, 0): both tiled dims move, the tiled generic permute each way
    permute = ("PermuteDeviceOperation", "MultiCoreTiledGeneric")
    assert [(p.name, p.factory) for p in programs] == [
        permute, ("AccumulationDeviceOperation", "AccumulationProgramFactory"), permute]
    # [64, 2, 32, 1] pads to [64, 2, 32, 32]: 128 tiles, 64 along the scanned dim: 2 rows
    assert programs[1].ranges == ((0, 0, 0, 1),)


def test_a_dim_of_one_is_a_cn_transpose_and_dtype_a_typecast_first(device):
    x = tt(device, (2, 32, 64))
    programs = launched(device, lambda: ttnn.cumsum(x, 0, dtype=ttnn.float32))
    assert [p.name for p in programs] == ["TypecastDeviceOperation", "TransposeDeviceOperation",
                                          "AccumulationDeviceOperation", "TransposeDeviceOperation"]
    scan = programs[2]
    assert cbs(scan) == [(0, 4, F32), (3, 4, F32), (2, 4, F32), (1, 4, F32)]  # it reads the float32 copy
    assert scan.ranges == ((0, 0, 0, 1),)  # [2, 1, 32, 64]: 4 tiles, 2 along dim 0


@pytest.mark.parametrize("shape, layout", [((2, 3, 4, 32, 64), ttnn.TILE), ((2, 32, 64), ttnn.ROW_MAJOR)])
def test_a_5d_permute_or_a_row_major_input_is_not_modelled(device, shape, layout):
    x = tt(device, shape, layout=layout)
    assert launched(device, lambda: ttnn.cumsum(x, -1)) == []
