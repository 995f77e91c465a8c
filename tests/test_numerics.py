"""The emulated FPU and SFPU: math fidelity, destination accumulation and approx-mode functions."""

from __future__ import annotations

import math

import pytest
import torch

import device_sim as ttnn
from device_sim import numerics
from device_sim.compute_config import Numerics

F = ttnn.MathFidelity


def pcc(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.corrcoef(torch.stack([a.float().flatten(), b.float().flatten()]))[0, 1])


def config(fidelity, fp32_dest_acc_en=False):
    return ttnn.WormholeComputeKernelConfig(math_fidelity=fidelity, math_approx_mode=False,
                                            fp32_dest_acc_en=fp32_dest_acc_en, packer_l1_acc=True)


def test_keep_bits_truncates_to_significant_bits_and_spares_inf_and_nan():
    x = torch.tensor([1.99, -1.99, 3.0, 0.1, math.inf, math.nan])
    got = numerics.keep_bits(x, 5)  # 1.1111b: the hidden bit and 4 more
    assert got[:4].tolist() == [1.9375, -1.9375, 3.0, pytest.approx(0.1, rel=2**-4)]
    assert got[4] == math.inf and math.isnan(got[5])
    assert float(numerics.keep_bits(torch.tensor([0.1]), 5)) <= 0.1  # toward zero


@pytest.fixture
def bfp8_operands(device):
    """A [256, 1024] x [1024, 256] matmul with both operands bfloat8_b, as a LoFi model would hold them."""
    g = torch.Generator().manual_seed(7)
    a, b = torch.randn(256, 1024, generator=g), torch.randn(1024, 256, generator=g)
    ta = ttnn.from_torch(a, dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
    tb = ttnn.from_torch(b, dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
    return ta, tb, a @ b


def test_bfloat8_b_lofi_matmul_loses_pcc_against_hifi4(bfp8_operands):
    """LoFi keeps 5 bits of in1 (srcA) where bfloat8_b holds 7: about twice HiFi4's error.

    TT-NN's published ResNet-50 figures (bfloat8_b weights and activations, batch 8; 50-odd layers
    of this) are PCC 0.978 at HiFi4, 0.944 at HiFi2 and 0.885 at LoFi: one matmul loses far less,
    but LoFi's loss is the larger, by a factor (here ~2x in 1 - PCC) that compounds over layers.
    """
    a, b, golden = bfp8_operands
    got = {f: ttnn.matmul(a, b, dtype=ttnn.float32, compute_kernel_config=config(f, fp32_dest_acc_en=False))
           for f in (F.LoFi, F.HiFi2, F.HiFi4)}
    p = {f: pcc(t.value, golden) for f, t in got.items()}
    assert p[F.LoFi] < p[F.HiFi4] < 1.0
    assert 1 - p[F.LoFi] > 1.5 * (1 - p[F.HiFi4])
    assert 0.999 < p[F.LoFi] < 0.9999  # one layer: a small loss, but one a 0.9999 check catches
    # bfloat8_b holds 7 bits: HiFi2's 9 bits of srcA already take all of in1, so HiFi2 == HiFi4.
    assert torch.equal(got[F.HiFi2].value, got[F.HiFi4].value)


def test_hifi2_drops_in0s_last_bfloat16_bit_and_hifi3_restores_it(device):
    a = ttnn.from_torch(torch.tensor([[1 + 2**-7] * 32] * 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.eye(32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    f32 = dict(dtype=ttnn.float32)
    assert float(ttnn.matmul(a, b, **f32, compute_kernel_config=config(F.HiFi2, True)).value[0, 0]) == 1.0
    assert float(ttnn.matmul(a, b, **f32, compute_kernel_config=config(F.HiFi3, True)).value[0, 0]) == 1 + 2**-7


def test_a_bfloat16_destination_loses_more_than_a_float32_one_over_a_long_k(device):
    g = torch.Generator().manual_seed(1)
    a = ttnn.from_torch(torch.randn(64, 4096, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.randn(4096, 64, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    golden = a.value.float() @ b.value.float()
    err = {acc: float((ttnn.matmul(a, b, dtype=ttnn.float32, compute_kernel_config=config(F.HiFi4, acc)).value
                       - golden).abs().mean()) for acc in (False, True)}
    assert err[True] < 1e-4 < err[False]  # float32 destination: exact products, float32 sums


def test_reduction_sum_and_mean_use_the_matrix_engine_numerics(device):
    g = torch.Generator().manual_seed(2)
    x = ttnn.from_torch(torch.rand(32, 2048, generator=g) + 1.0, dtype=ttnn.bfloat16, layout=ttnn.TILE,
                        device=device)
    exact = x.value.float().sum(-1)
    lofi = ttnn.sum(x, -1, compute_kernel_config=config(F.LoFi, True)).value.float()
    hifi4 = ttnn.sum(x, -1, compute_kernel_config=config(F.HiFi4, True)).value.float()
    # LoFi keeps 5 bits of each input: values in [1, 2) truncate by 1/32 on average.
    assert float(((exact - lofi) / exact).mean()) == pytest.approx(2**-6, rel=0.25)
    torch.testing.assert_close(hifi4, exact.bfloat16().float())
    bf16_dest = ttnn.sum(x, -1, compute_kernel_config=config(F.HiFi4, False)).value.float()
    rel = ((bf16_dest - exact) / exact).abs()
    # A bfloat16 running sum rounded every 16 values: near 3000 its step is 16, so each ~24 added loses up
    # to 8 (swamping); the reason TT-NN's norms accumulate in float32.
    assert 2**-9 < float(rel.max()) < 2**-4
    mean = ttnn.mean(x, -1, compute_kernel_config=config(F.HiFi4, True)).value.float()
    torch.testing.assert_close(mean, (exact / 2048).bfloat16().float(), rtol=2**-8, atol=0)
    assert torch.equal(ttnn.sum(x, -1).value, x.value.float().sum(-1).bfloat16())  # no config: exact


@pytest.mark.parametrize(("name", "exact", "bound", "relative"), [
    ("exp", torch.exp, 0.0616, True),
    ("sigmoid", torch.sigmoid, 0.015, False),
    ("tanh", torch.tanh, 0.03, False),
    ("gelu", torch.nn.functional.gelu, 0.02, False),
])
def test_approximations_stay_within_their_documented_error(name, exact, bound, relative):
    x = torch.linspace(-6, 6, 20001)
    err = (numerics.APPROX[name](x) - exact(x)).abs()
    if relative:
        err = err / exact(x).abs()
    assert bound / 10 < float(err.max()) <= bound  # a real approximation, and no worse than documented


def test_approximate_reciprocal_is_within_its_documented_error():
    x = torch.cat([torch.linspace(0.01, 100, 10001), -torch.linspace(0.01, 100, 101)])
    rel = ((numerics.reciprocal_approx(x) - 1 / x) * x).abs()
    assert 1e-4 < float(rel.max()) <= 0.0036


@pytest.mark.parametrize("op", ["exp", "gelu", "tanh", "sigmoid"])
def test_fast_and_approximate_mode_switches_the_unary_op_to_the_sfpu_approximation(device, op):
    x = ttnn.from_torch(torch.linspace(-3, 3, 32 * 64).reshape(32, 64), dtype=ttnn.float32, layout=ttnn.TILE,
                        device=device)
    fn = getattr(ttnn, op)
    precise, fast = fn(x).value, fn(x, fast_and_approximate_mode=True).value
    torch.testing.assert_close(fast, numerics.APPROX[op](x.value))
    assert not torch.equal(precise, fast)


def test_numerics_matmul_keeps_torchs_vector_rules():
    n = Numerics(F.HiFi4, False, True, False)
    a, b = torch.randn(3, 64), torch.randn(64)
    assert numerics.matmul(a, b, n).shape == (3,)
    assert numerics.matmul(b, a.T, n).shape == (3,)


def test_conv2d_runs_as_an_im2col_matmul_on_the_engine():
    g = torch.Generator().manual_seed(4)
    x, w, b = (torch.randn(*s, generator=g).bfloat16().float() for s in ((2, 8, 10, 10), (6, 4, 3, 3), (6,)))
    exact = torch.nn.functional.conv2d(x, w, b, stride=(2, 1), dilation=(1, 2), groups=2)
    hifi4 = numerics.conv2d(x, w, b, (2, 1), (1, 2), 2, Numerics(F.HiFi4, False, True, False))
    lofi = numerics.conv2d(x, w, b, (2, 1), (1, 2), 2, Numerics(F.LoFi, False, False, False))
    torch.testing.assert_close(hifi4, exact)  # bfloat16 operands: HiFi4 multiplies them exactly
    assert 0.999 < pcc(lofi, exact) < pcc(hifi4, exact)


def test_sigmoid_takes_tt_nns_mode_and_refuses_partial_tile_vector_modes(device):
    x = ttnn.from_torch(torch.linspace(-4, 4, 32 * 32).reshape(32, 32), dtype=ttnn.float32, layout=ttnn.TILE,
                        device=device)
    for mode in (ttnn.SigmoidMode.FastApproximate, ttnn.SigmoidMode.AccurateWithFastExp):
        torch.testing.assert_close(ttnn.sigmoid(x, mode=mode).value, numerics.sigmoid_approx(x.value))
    torch.testing.assert_close(ttnn.sigmoid(x, mode=ttnn.SigmoidMode.Accurate).value, torch.sigmoid(x.value))
    with pytest.raises(NotImplementedError, match="vector_mode=1"):
        ttnn.sigmoid(x, vector_mode=1)


def test_softmax_with_a_config_uses_approx_exp_and_reciprocal_and_the_row_sums_fidelity(device):
    g = torch.Generator().manual_seed(5)
    x = ttnn.from_torch(torch.randn(2, 32, 128, generator=g) * 3, dtype=ttnn.float32, layout=ttnn.TILE,
                        device=device)
    exact = torch.softmax(x.value, -1)
    assert torch.equal(ttnn.softmax(x).value, exact)  # no config: torch's softmax
    precise = ttnn.softmax(x, compute_kernel_config=ttnn.WormholeComputeKernelConfig(
        math_fidelity=ttnn.MathFidelity.HiFi4, math_approx_mode=False, fp32_dest_acc_en=True)).value
    approx = ttnn.softmax(x, compute_kernel_config=ttnn.WormholeComputeKernelConfig(
        math_fidelity=ttnn.MathFidelity.HiFi4, math_approx_mode=True, fp32_dest_acc_en=False)).value
    torch.testing.assert_close(precise, exact, rtol=2**-9, atol=1e-6)  # the row sum's 19-bit source register
    assert 0.999 < pcc(approx, exact) < pcc(precise, exact)  # exp within 6%: a visible, bounded loss
    torch.testing.assert_close(approx.sum(-1), torch.ones(2, 32), rtol=0, atol=0.02)  # still about normalised


def test_tt_nn_default_kernels_makes_ops_without_a_config_run_tt_nns_default(device):
    g = torch.Generator().manual_seed(6)
    a = ttnn.from_torch(torch.randn(64, 512, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.randn(512, 64, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    hifi2 = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi2, math_approx_mode=False,
                                             fp32_dest_acc_en=False, packer_l1_acc=True)
    exact = ttnn.matmul(a, b)
    with numerics.tt_nn_default_kernels():
        default = ttnn.matmul(a, b)  # TT-NN: HiFi2, bfloat16 destination for a bfloat16 output
        soft = ttnn.softmax(a)
        with numerics.tt_nn_default_kernels(False):
            assert torch.equal(ttnn.matmul(a, b).value, exact.value)
    assert torch.equal(default.value, ttnn.matmul(a, b, compute_kernel_config=hifi2).value)
    assert not torch.equal(default.value, exact.value)
    assert torch.equal(soft.value, ttnn.softmax(a, compute_kernel_config=ttnn.WormholeComputeKernelConfig()).value)
    assert torch.equal(ttnn.matmul(a, b).value, exact.value)  # the block ended


def test_divide_with_fast_and_approximate_mode_multiplies_by_the_approximate_reciprocal(device):
    # bfloat16 operands: binary_ng's FPU path, a times RECIP(b); float32 ones keep the SFPU's precise division
    # (is_binary_sfpu_op), fast mode or not
    g = torch.Generator().manual_seed(8)
    x, y = torch.randn(32, 64, generator=g), torch.rand(32, 64, generator=g) + 0.5
    a = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(y, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    fast = ttnn.divide(a, b, fast_and_approximate_mode=True).value
    torch.testing.assert_close(fast, (a.value.float() * numerics.reciprocal_approx(b.value.float())).bfloat16())
    a = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(y, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert torch.equal(ttnn.divide(a, b, fast_and_approximate_mode=True).value, a.value / b.value)
    assert torch.equal(ttnn.divide(a, b).value, a.value / b.value)
    assert torch.equal(ttnn.add(a, b, fast_and_approximate_mode=True).value, (a.value + b.value))  # exact anyway


def test_in_place_binary_ops_take_fast_and_approximate_mode(device):
    a = ttnn.from_torch(torch.full((32, 32), 3.0), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.full((32, 32), 1.7), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert torch.equal(ttnn.mul_(a, b, fast_and_approximate_mode=True).value, torch.full((32, 32), 3.0) * 1.7)
    c = ttnn.from_torch(torch.full((32, 32), 3.0), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    got = ttnn.div_(c, b, fast_and_approximate_mode=True).value
    torch.testing.assert_close(got, 3.0 * numerics.reciprocal_approx(b.value))


def test_layer_norm_with_a_bfloat16_destination_loses_what_an_fp32_one_keeps(device):
    g = torch.Generator().manual_seed(9)
    # rows of mean 10: a bfloat16 running sum near 40960 steps by 256, so the statistics are swamped
    x = ttnn.from_torch(torch.randn(1, 64, 4096, generator=g) + 10, dtype=ttnn.bfloat16, layout=ttnn.TILE,
                        device=device)
    exact = torch.nn.functional.layer_norm(x.value.float(), (4096,), eps=1e-5)

    def run(fp32):
        return ttnn.layer_norm(x, epsilon=1e-5, compute_kernel_config=ttnn.WormholeComputeKernelConfig(
            math_fidelity=ttnn.MathFidelity.HiFi4, fp32_dest_acc_en=fp32)).value.float()

    err32, err16 = (float((run(f) - exact).abs().mean()) for f in (True, False))
    assert err32 < 0.002  # the output's own bfloat16 rounding
    assert err16 > 0.1  # the reason TT-NN's models run norms with fp32_dest_acc_en=True
    rms = ttnn.rms_norm(x, epsilon=1e-5, compute_kernel_config=ttnn.WormholeComputeKernelConfig(
        math_fidelity=ttnn.MathFidelity.HiFi4, fp32_dest_acc_en=True)).value.float()
    golden = x.value.float() * torch.rsqrt(x.value.float().square().mean(-1, keepdim=True) + 1e-5)
    torch.testing.assert_close(rms, golden, rtol=2**-7, atol=0)  # within the output's bfloat16 rounding
