"""Device work of the 1x1, stride-1 conv2d TT-NN runs as a matmul: from an interleaved input without a shard_layout,
a tilize of the flattened [1, 1, N*H*W, C] input when it is ROW_MAJOR, then the interleaved matmul's program.
"""

from __future__ import annotations

import torch
from programs_heard import launched as heard  # tests/programs_heard.py

import device_sim as ttnn

BF16, BF8 = 2048, 1088  # bytes of one 32x32 tile


def cbs(program) -> list[tuple]:
    return [(cb.indices, cb.num_pages, cb.page_size) for cb in program.cbs]


def conv1x1(device, x, out_channels, n, h, w, bias=None, conv_config=None):
    c = x.shape[-1]
    weight = ttnn.from_torch(torch.randn(out_channels, c, 1, 1), dtype=ttnn.bfloat16)
    return heard(device, lambda: ttnn.conv2d(input_tensor=x, weight_tensor=weight, bias_tensor=bias, device=device,
                                             in_channels=c, out_channels=out_channels, batch_size=n, input_height=h,
                                             input_width=w, kernel_size=(1, 1), conv_config=conv_config))


def test_a_1x1_conv_tilizes_its_flattened_input_and_runs_the_linear_tt_nn_runs_instead(device):
    # [1, 16, 16, 64] ROW_MAJOR -> [1, 1, 256, 64]: 8 rows of 2 tiles, one row of tiles a core on (0..7, 0); c_0 and
    # c_16 a row of 2 tiles each
    x = ttnn.from_torch(torch.randn(1, 16, 16, 64), dtype=ttnn.bfloat16, device=device)
    bias = ttnn.from_torch(torch.randn(1, 1, 1, 128), dtype=ttnn.bfloat16)
    tilize, mm = conv1x1(device, x, 128, 1, 16, 16, bias=bias)
    assert (tilize.name, tilize.ranges, cbs(tilize)) == ("TilizeDeviceOperation", ((0, 0, 7, 0),),
                                                         [((0,), 2, BF16), ((16,), 2, BF16)])
    # matmul [256, 64] x [64, 128]: Mt 8, Kt 2, Nt 4, a 2D config with per_core_M = 8 / 8 = 1, per_core_N = 1,
    # in0_block_w 2 (one K block: nothing doubled, packer_l1_acc off so c_4 and c_5 share one tile); c_3 the bias
    # tile; 4 x 8 cores
    assert (mm.name, mm.factory, mm.ranges) == ("MatmulDeviceOperation", "MatmulMultiCoreReuseMultiCastProgramConfig",
                                                ((0, 0, 3, 7),))
    assert cbs(mm) == [((0,), 2, BF16), ((1,), 2, BF16), ((3,), 1, BF16), ((4, 5), 1, BF16)]
    # the same program ttnn.linear runs on those operands
    a = ttnn.from_torch(torch.randn(1, 1, 256, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.randn(64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    c = ttnn.from_torch(torch.randn(128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    cfg = ttnn.WormholeComputeKernelConfig(fp32_dest_acc_en=False, packer_l1_acc=False)
    [linear] = heard(device, lambda: ttnn.linear(a, b, bias=c, compute_kernel_config=cfg))
    assert (linear.cbs, linear.ranges) == (mm.cbs, mm.ranges)


def test_a_1x1_conv_of_rows_that_are_not_whole_tiles_pads_while_tilizing(device):
    # [2, 10, 10, 32] -> 200 rows: TilizeWithValPadding over ceil(200 / 32) = 7 rows of tiles. The matmul [200, 32] x
    # [32, 40 -> 64]: Mt 7, Kt 1, Nt 2 -> a 1D config (K is one tile): per_core_M = ceil(7 / 64) = 1, per_core_N 2,
    # in0_block_w 1: c_0 1, c_1 2, c_4 / c_5 2 tiles, on 7 cores row by row
    x = ttnn.from_torch(torch.randn(2, 10, 10, 32), dtype=ttnn.bfloat16, device=device)
    tilize, mm = conv1x1(device, x, 40, 2, 10, 10)
    assert tilize.name == "TilizeWithValPaddingDeviceOperation" and tilize.ranges == ((0, 0, 6, 0),)
    assert (mm.factory, cbs(mm), mm.ranges) == ("MatmulMultiCoreReuseMultiCast1DProgramConfig",
                                                [((0,), 1, BF16), ((1,), 2, BF16), ((4, 5), 2, BF16)], ((0, 0, 6, 0),))
    # a TILE bfloat8_b input needs no tilize; its tiles set c_0's page
    tiled = ttnn.from_torch(torch.randn(2, 10, 10, 32), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
    [mm8] = conv1x1(device, tiled, 40, 2, 10, 10)
    assert cbs(mm8)[0] == ((0,), 1, BF8)


def test_a_sharded_1x1_conv_is_not_modelled_and_launches_nothing(device):
    # conv_config.shard_layout set: TT-NN shards the input and runs the matmul with a sharded in0 (not modelled)
    x = ttnn.from_torch(torch.randn(1, 16, 16, 64), dtype=ttnn.bfloat16, device=device)
    cfg = ttnn.Conv2dConfig(shard_layout=ttnn.TensorMemoryLayout.HEIGHT_SHARDED)
    assert conv1x1(device, x, 64, 1, 16, 16, conv_config=cfg) == []
