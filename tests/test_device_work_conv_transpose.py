"""conv_transpose2d launches conv2d's programs over the spread-out input TT-NN's halo builds for it.

conv_transpose2d.cpp (conv_transpose2d_L1): the input is sharded on the cores the output's rows pick, the halo
(a transposed sliding window) spreads it out with stride - 1 zeros between pixels and dilation * (kernel - 1) -
padding around it (output_padding more at the bottom and right), and Conv2dDeviceOperation runs with stride 1 and
no padding over that full input. The arithmetic is in the comments; conv2d's CBs are hand-checked in
tests/test_device_work_matmul_conv.py.
"""

from __future__ import annotations

import torch
from programs_heard import launched as heard  # tests/programs_heard.py

import device_sim as ttnn
from device_sim.programs.conv import conv2d_programs


def transpose(device, **kw):
    x = ttnn.from_torch(torch.randn(1, 5, 6, 8), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    w = ttnn.from_torch(torch.randn(8, 4, 3, 3), dtype=ttnn.bfloat16)
    args = dict(input_tensor=x, weight_tensor=w, device=device, in_channels=8, out_channels=4, batch_size=1,
                input_height=5, input_width=6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1),
                output_padding=(1, 1))
    return lambda: ttnn.conv_transpose2d(**{**args, **kw})


def test_a_strided_transposed_conv_shards_spreads_the_input_in_the_halo_and_convolves_with_stride_one(device):
    i2s, halo, conv = heard(device, transpose(device))
    assert [p.name for p in (i2s, halo, conv)] == ["InterleavedToShardedDeviceOperation", "HaloDeviceOperation",
                                                   "Conv2dDeviceOperation"]
    # output 10 x 12 ((5 - 1) * 2 - 2 + 2 + 1 + 1 = 10; (6 - 1) * 2 - 2 + 2 + 1 + 1 = 12): 120 rows, 4 rows of tiles,
    # so 4 cores in a row
    assert {p.ranges for p in (i2s, halo, conv)} == {((0, 0, 3, 0),)}
    # the real input's 30 pixels over 4 cores: 32-row shards of 8 channels aligned to 32 (a TILE input): 1 tile
    assert (i2s.cbs[0].num_pages, i2s.cbs[0].page_size, halo.cbs[0].num_pages) == (1, 2048, 1)
    # full input 12 x 14 (9 strided rows + 1 above + 1 + 1 below; 11 columns + 1 + 2). Core 1's outputs 32..63 run
    # from (2, 8) to (5, 3): their 3x3 windows span full-input sticks 2 * 14 + 8 = 36 to 7 * 14 + 5 = 103: 68
    # sticks of 32 channels x 2 B, the most of any core
    assert (halo.cbs[1].num_pages, halo.cbs[1].page_size) == (68, 64)
    same = conv2d_programs(batch=1, height=12, width=14, in_channels=8, out_channels=4, kernel=(3, 3), stride=(1, 1),
                           padding=(0, 0, 0, 0), dilation=(1, 1), in_dtype=ttnn.bfloat16, in_tile=True,
                           in_sharded=False, out_dtype=ttnn.bfloat16, weights_dtype=ttnn.bfloat16, bias=False,
                           grid=(8, 8), input_hw=(5, 6))
    assert conv.cbs == same[-1].cbs  # conv2d's CBs over the full input, stride 1, no padding


def test_a_1x1_transposed_conv_runs_conv2ds_interleaved_matmul(device):
    # 1x1, stride 1, no padding: use_matmul_for_1x1_conv; an interleaved input without a shard_layout runs the matmul
    # out of the interleaved tensor: [1, 1, 16, 32] by the prepared [1, 1, 32, 32] weights, tilized first if ROW_MAJOR
    x = ttnn.from_torch(torch.randn(1, 4, 4, 32), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=device)
    w = ttnn.from_torch(torch.randn(32, 32, 1, 1), dtype=ttnn.bfloat16)
    one = dict(input_tensor=x, weight_tensor=w, device=device, in_channels=32, out_channels=32, batch_size=1,
               input_height=4, input_width=4, kernel_size=(1, 1))
    tilize, mm = heard(device, lambda: ttnn.conv_transpose2d(**one))
    # 16 rows are no whole tile: the tilize pads (TilizeWithValPadding); the matmul is one 32 x 32 tile by one
    assert (tilize.name, mm.name) == ("TilizeWithValPaddingDeviceOperation", "MatmulDeviceOperation")
    # the same programs as conv2d's 1x1 matmul path (whose CBs tests/test_device_work_matmul_conv.py hand-checks)
    conv = heard(device, lambda: ttnn.conv2d(input_tensor=x, weight_tensor=w, device=device, in_channels=32,
                                             out_channels=32, batch_size=1, input_height=4, input_width=4,
                                             kernel_size=(1, 1)))
    assert [(p.name, p.cbs, p.ranges) for p in conv] == [(p.name, p.cbs, p.ranges) for p in (tilize, mm)]


def test_dram_slicing_launches_nothing_modelled(device):
    sliced = transpose(device, dram_slice_config=ttnn.Conv2dSliceConfig(slice_type=ttnn.Conv2dDRAMSliceHeight,
                                                                          num_slices=2))
    assert heard(device, sliced) == []
