"""scatter launches ScatterDeviceOperation as TT-NN's scatter.cpp runs it: in ROW_MAJOR, after an untilize of each TILE
operand (input, index, source) and before a tilize back.

CBs are hand-checked against tt-metal's data_movement/scatter/device/scatter_program_factory.cpp: one page each of
c_0 (input), c_2 (index), c_1 (source), c_3 (output), created in that order; a page is the row's bytes rounded up to
32, or at most calculate_optimal_chunk_size's ceil32((free L1 / 4 / 4) x 0.8 - 32) values; split_work_to_cores over
the input's rows, column by column.
"""

from __future__ import annotations

import torch
from programs_heard import cbs, launched  # tests/programs_heard.py

import device_sim as ttnn


def tt(device, shape, dtype=ttnn.bfloat16, layout=ttnn.TILE):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=layout, device=device)


def idx(device, high, shape, layout=ttnn.TILE):
    values = torch.argsort(torch.rand(*shape[:-1], high, generator=torch.Generator().manual_seed(0)), -1)
    return ttnn.from_torch(values[..., :shape[-1]].int(), dtype=ttnn.uint32, layout=layout, device=device)


def test_a_tile_scatter_untilizes_its_three_operands_and_tilizes_the_result(device):
    x, i, s = tt(device, (2, 32, 64)), idx(device, 64, (2, 32, 8)), tt(device, (2, 32, 8))
    programs = launched(device, lambda: ttnn.scatter(x, 2, i, s))
    assert [p.name for p in programs] == ["UntilizeDeviceOperation", "UntilizeWithUnpaddingDeviceOperation",
                                          "UntilizeWithUnpaddingDeviceOperation", "ScatterDeviceOperation",
                                          "TilizeDeviceOperation"]
    scatter = programs[3]
    # rows of 64 bfloat16 values (128 B); the index's 8 uint32 (32 B) and the source's 8 bfloat16 (16 B -> 32 B)
    assert (scatter.factory, cbs(scatter)) == ("ScatterProgramFactory", [(0, 1, 128), (2, 1, 32), (1, 1, 32),
                                                                          (3, 1, 128)])
    assert scatter.ranges == ((0, 0, 7, 7),)  # 64 rows, one a core


def test_a_row_major_scatter_is_the_device_operation_alone(device):
    x, i, s = tt(device, (3, 40), layout=ttnn.ROW_MAJOR), idx(device, 40, (3, 5), ttnn.ROW_MAJOR), tt(
        device, (3, 5), layout=ttnn.ROW_MAJOR)
    [p] = launched(device, lambda: ttnn.scatter(x, -1, i, s))
    assert cbs(p) == [(0, 1, 96), (2, 1, 32), (1, 1, 32), (3, 1, 96)]  # 80 B rows round up to 96
    assert p.ranges == ((0, 0, 0, 2),)  # 3 rows


def test_rows_longer_than_the_free_l1_allows_are_read_in_chunks():
    dev = ttnn.open_device(0, l1_size=98_304 + 65_536)  # 64 KiB free per core
    try:
        x = tt(dev, (1, 4096), layout=ttnn.ROW_MAJOR)
        i, s = idx(dev, 4096, (1, 8), ttnn.ROW_MAJOR), tt(dev, (1, 8), layout=ttnn.ROW_MAJOR)
        [p] = launched(dev, lambda: ttnn.scatter(x, -1, i, s))
        # 65536 / 4 / 4 = 4096; x 0.8 = 3276.8; - 32 = 3244.8 -> 3244 -> 3264 values a chunk: 6528 B
        assert cbs(p) == [(0, 1, 6528), (2, 1, 32), (1, 1, 32), (3, 1, 6528)]
    finally:
        ttnn.close_device(dev)


def test_forms_tt_nn_refuses_launch_nothing(device):
    # check_support: "Scatter doesn't work for fp32 tiled tensors yet"; a uint32 TILE index over 256 along the dim
    x, i, s = tt(device, (2, 32, 64), dtype=ttnn.float32), idx(device, 64, (2, 32, 8)), tt(device, (2, 32, 8))
    assert launched(device, lambda: ttnn.scatter(x, -1, i, s)) == []
    x, i, s = tt(device, (32, 512)), idx(device, 512, (32, 300)), tt(device, (32, 300))
    assert launched(device, lambda: ttnn.scatter(x, -1, i, s)) == []


def test_another_dim_is_not_modelled(device):
    # (a reduction is: ScatterReduceBfloat16ProgramFactory, test_peer_lessons' scatter lesson)
    x, i, s = tt(device, (2, 32, 64)), idx(device, 32, (2, 32, 64)), tt(device, (2, 32, 64))
    assert launched(device, lambda: ttnn.scatter(x, 1, i, s)) == []
