"""fold launches the pad and Fold device operations TT-NN's fold.cpp runs for an interleaved row-major input.

Sizes are worked out in the comments from pad_rm_reader_writer_multi_core_default and
fold_multi_core_row_major_interleaved (device_sim/programs/fold.py and shape.py cite them).
"""

from __future__ import annotations

import torch

import device_sim as ttnn


def heard(device, call) -> list:
    """The programs `call()` launches on `device`, through the memory listener ttreport's report hears."""
    seen, old = [], device.memory.listener
    device.memory.listener = lambda kind, obj: seen.append(obj) if kind == "program" else None
    try:
        call()
    finally:
        device.memory.listener = old
    return seen


def nhwc(device, n, h, w, c, layout=ttnn.ROW_MAJOR, memory_config=None):
    return ttnn.from_torch(torch.randn(n, h, w, c), dtype=ttnn.bfloat16, layout=layout, device=device,
                           memory_config=memory_config)


def cbs(program) -> list[tuple]:
    return [(cb.indices[0], cb.num_pages, cb.page_size) for cb in program.cbs]


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
