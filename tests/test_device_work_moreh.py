"""moreh_norm launches the programs TT-NN composes a p-norm over the tile dims from.

moreh_norm.cpp: for a finite p, |x|^p (MorehAbsPowOperation), the sum over the dim (MorehSumOperation's W or H
factory), then the 1/p-th power; for p of 0 or +-inf, MorehNormOperation itself. The CB sizes are worked out in
the comments from the factories device_sim/programs/moreh.py cites.
"""

from __future__ import annotations

import math

import torch
from programs_heard import cbs
from programs_heard import launched as heard  # tests/programs_heard.py

import device_sim as ttnn

BF16, F32 = 2048, 4096  # bytes of one tile


def tt(device, *shape):
    return ttnn.from_torch(torch.randn(*shape), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)


ABS_POW = [(0, 1, BF16), (1, 1, BF16), (2, 1, BF16), (3, 1, BF16), (16, 1, BF16), (24, 1, BF16), (25, 1, BF16),
           (26, 1, BF16), (27, 1, BF16)]  # input, one, 1/p's decimal, the W mask, output, four intermediates


def test_an_l2_norm_over_h_is_abs_pow_then_the_h_sum_then_the_root(device):
    x = tt(device, 2, 32, 64)
    first, total, root = heard(device, lambda: ttnn.moreh_norm(x, 2.0, dim=1, keepdim=True))
    assert [(p.name, p.factory) for p in (first, total, root)] == [
        ("MorehAbsPowOperation", "MorehAbsPowFactory"), ("MorehSumOperation", "MorehSumHFactory"),
        ("MorehAbsPowOperation", "MorehAbsPowFactory")]
    # |x|^p: 2 x 1 rows of tiles, one a core down the first column
    assert (cbs(first), first.ranges) == (ABS_POW, ((0, 0, 0, 1),))
    # sum over H: 2 x Wt = 2 x 2 columns of tiles; two input tiles, one scaler and one mask tile, the accumulator
    # and its bfloat16 copy, two output tiles
    assert (cbs(total), total.ranges) == ([(0, 2, BF16), (2, 1, BF16), (3, 1, BF16), (24, 1, BF16), (25, 1, BF16),
                                           (16, 2, BF16)], ((0, 0, 0, 3),))
    assert (cbs(root), root.ranges) == (ABS_POW, ((0, 0, 0, 1),))  # the sum keeps H as one padded tile


def test_a_norm_over_w_uses_the_w_sum_and_an_fp32_destination_widens_the_intermediates(device):
    x = tt(device, 2, 64, 96)
    config = ttnn.WormholeComputeKernelConfig(fp32_dest_acc_en=True)
    first, total, root = heard(device, lambda: ttnn.moreh_norm(x, 3.0, dim=-1, compute_kernel_config=config))
    # 2 x 2 rows of tiles for every program: cores (0, 0)..(0, 3)
    assert {p.ranges for p in (first, total, root)} == {((0, 0, 0, 3),)}
    assert [c[2] for c in cbs(first)] == [BF16] * 5 + [F32] * 4
    # over W the scaler holds two tiles and c_25 is sized as the float32 accumulator
    assert (total.factory, cbs(total)) == ("MorehSumWFactory", [(0, 2, BF16), (2, 2, BF16), (3, 1, BF16),
                                                                (24, 1, F32), (25, 1, F32), (16, 2, BF16)])


def test_an_infinity_norm_runs_moreh_norms_own_factory_per_dim_the_last_dim_first(device):
    x = tt(device, 2, 64, 96)
    [h] = heard(device, lambda: ttnn.moreh_norm(x, math.inf, dim=1))
    # over H: 2 x Wt = 2 x 3 columns of tiles, column by column; input, one, mask, output, three intermediates
    assert (h.name, h.factory, h.ranges) == ("MorehNormOperation", "ProgramFactoryHOther", ((0, 0, 0, 5),))
    assert cbs(h) == [(0, 1, BF16), (1, 1, BF16), (2, 1, BF16), (16, 1, BF16), (24, 1, BF16), (25, 1, BF16),
                      (26, 1, BF16)]
    # over both: W first (2 x Ht = 4 rows of tiles), then H of the [2, 64, 32] result (2 x 1 columns)
    w, h2 = heard(device, lambda: ttnn.moreh_norm(x, -math.inf, dim=[1, 2]))
    assert [(p.factory, p.ranges) for p in (w, h2)] == [("ProgramFactoryWOther", ((0, 0, 0, 3),)),
                                                        ("ProgramFactoryHOther", ((0, 0, 0, 1),))]
    # p = 0 over both: the count over W, then a sum over H of the [2, 64, 32] counts
    count, total = heard(device, lambda: ttnn.moreh_norm(x, 0.0, dim=[2, 1]))
    assert [(p.name, p.factory) for p in (count, total)] == [("MorehNormOperation", "ProgramFactoryWOther"),
                                                             ("MorehSumOperation", "MorehSumHFactory")]


def test_a_finite_norm_over_outer_or_several_dims_sums_with_moreh_sums_factories_between_the_abs_pows(device):
    x = tt(device, 2, 32, 64)
    names = lambda programs: [(p.name, p.factory) for p in programs]  # noqa: E731
    pow_, sum_ = ("MorehAbsPowOperation", "MorehAbsPowFactory"), "MorehSumOperation"
    # over the outer dim: |x|^p, moreh_sum's NC factory, then ^(1/p)
    assert names(heard(device, lambda: ttnn.moreh_norm(x, 2.0, dim=0))) == [
        pow_, (sum_, "MorehSumNCFactory"), pow_]
    # over both tile dims: one sum a dim, W then H
    assert names(heard(device, lambda: ttnn.moreh_norm(x, 2.0, dim=[1, 2]))) == [
        pow_, (sum_, "MorehSumWFactory"), (sum_, "MorehSumHFactory"), pow_]
    # every dim: W, H, then NC
    assert names(heard(device, lambda: ttnn.moreh_norm(x, 2.0))) == [
        pow_, (sum_, "MorehSumWFactory"), (sum_, "MorehSumHFactory"), (sum_, "MorehSumNCFactory"), pow_]


def test_an_infinity_norm_over_an_outer_dim_runs_a_factory_launching_nothing_modelled(device):
    x = tt(device, 2, 32, 64)
    assert heard(device, lambda: ttnn.moreh_norm(x, math.inf, dim=0)) == []  # moreh_norm's NC factory
