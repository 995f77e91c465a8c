"""A default bfloat16 matmul runs torch's bfloat16 kernel where it keeps the rule: exact products, float32 sums,
one round to nearest even (device_sim/matmul_kernel.py; docs/numerics.md, "The default kernel")."""

from __future__ import annotations

import pytest
import torch

import device_sim as ttnn
from device_sim import matmul_kernel
from device_sim.matmul_kernel import min_magnitude, no_denormals, probe, probe_bias


def _float32_path(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a.float(), b.float()).bfloat16()


def _exact(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # float64 sums of the exact products (K <= 4096 terms of 16 significant bits: exact but for ~2**-40 of
    # relative error), rounded to float32 and then to bfloat16: the rule's value but for rare double roundings.
    return torch.matmul(a.double(), b.double()).float().bfloat16()


def _device(t: torch.Tensor, device) -> ttnn.Tensor:
    return ttnn.from_torch(t, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)


def _randn(*shape, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).bfloat16()


# --- the probe -------------------------------------------------------------------------------------------


def _rounded_products(a, b):
    return (a.float().unsqueeze(-1) * b.float().unsqueeze(0)).bfloat16().float().sum(1).bfloat16()


def _bf16_total_over_blocks(size):
    def matmul(a, b):
        total = torch.zeros(a.shape[0], b.shape[1], dtype=torch.bfloat16)
        for k in range(0, a.shape[1], size):
            total = (total.float() + a[:, k:k + size].float() @ b[k:k + size].float()).bfloat16()
        return total
    return matmul


def _final_rounding(half_up: bool):
    def matmul(a, b):
        bits = (a.float() @ b.float()).view(torch.int32)
        return ((bits + 0x8000 if half_up else bits) & ~0xFFFF).view(torch.float32).bfloat16()
    return matmul


def test_the_bias_probe_passes_the_float32_path_and_fails_a_kernel_that_rounds_before_the_bias():
    assert probe_bias(lambda bias, a, b: (torch.matmul(a.float(), b.float()) + bias.float()).bfloat16())
    assert not probe_bias(lambda bias, a, b: _float32_path(a, b).float().add(bias.float()).bfloat16())
    assert not probe_bias(lambda bias, a, b: _float32_path(a, b))  # no bias at all


def test_the_probe_passes_the_float32_path_and_fails_every_kernel_that_breaks_the_rule():
    assert probe(_float32_path)
    assert not probe(_rounded_products)
    for size in (1, 16, 32, 64, 128, 256, 512):
        assert not probe(_bf16_total_over_blocks(size)), size
    assert not probe(_final_rounding(half_up=True))
    assert not probe(_final_rounding(half_up=False))  # toward zero


# --- the denormal guard -----------------------------------------------------------------------------------


def _reference_min_magnitude(t: torch.Tensor) -> int:
    bits = [int(x) & 0x7FFF for x in t.reshape(-1).view(torch.int16).tolist()]
    return min((m for m in bits if m), default=0x8000)


@pytest.mark.parametrize("pure", [False, True], ids=["native", "torch"])
def test_min_magnitude_finds_the_least_nonzero_magnitude_in_c_and_in_torch(monkeypatch, pure):
    if pure:
        monkeypatch.setattr(matmul_kernel, "_native", None)
    elif matmul_kernel._native is None:
        pytest.skip("device_sim._native is not built")
    g = torch.Generator().manual_seed(3)
    cases = [torch.zeros(0), torch.zeros(5), torch.tensor([-0.0, 0.0, -0.0]), torch.tensor([float("inf")]),
             torch.tensor([float("nan"), 0.0, -3.0]), torch.tensor([2.0**-133, -2.0**-130, 0.0]),
             torch.tensor([-(2.0**-126), 1.0]), torch.randn(1000, generator=g)]
    for n in (1, 15, 16, 17, 33, 4097):  # the C loop's 16 lanes and its tail
        t = torch.randn(n, generator=g) * 1e-3
        t[torch.randint(0, n, (n // 3 + 1,), generator=g)] = 0
        t[n // 2] = -(2.0**-120) if n > 2 else t[n // 2]
        cases.append(t)
    for t in cases:
        t = t.bfloat16()
        assert min_magnitude(t) == _reference_min_magnitude(t), t
    row = torch.zeros(64).bfloat16()
    row[60] = -(2.0**-100)  # in the tail of a strided view's copy: the torch path for a non-contiguous view
    assert min_magnitude(row.view(8, 8).T) == _reference_min_magnitude(row)


@pytest.mark.parametrize("pure", [False, True], ids=["native", "torch"])
def test_a_large_tensors_least_magnitude_is_kept_until_it_or_its_storage_changes(monkeypatch, pure):
    """A weight's scan is kept for the next call (matmul_kernel._KEEP_MIN_ELEMENTS), and done again after any
    in-place change: to the tensor, through a view of its storage, or by a copy into it."""
    if pure:
        monkeypatch.setattr(matmul_kernel, "_native", None)
    t = torch.ones(256, 256, dtype=torch.bfloat16)  # 65,536 elements: kept
    assert t.numel() >= matmul_kernel._KEEP_MIN_ELEMENTS
    assert min_magnitude(t) == _reference_min_magnitude(t) == 0x3F80
    t[3, 3] = 2.0**-20
    assert min_magnitude(t) == _reference_min_magnitude(t)
    t.view(-1)[7] = -(2.0**-40)  # through a view: the storage's version moves on for the base too
    assert min_magnitude(t) == _reference_min_magnitude(t)
    t.copy_(torch.full((256, 256), 4.0))
    assert min_magnitude(t) == 0x4080
    t[0, 0] = 0.0  # zeros have no magnitude: the least stays 4.0
    assert min_magnitude(t) == 0x4080


def _pair(ea: int, eb: int):
    """128 x 128 operands (the kernel's size class), zero but for a 2 x 2 corner whose product's [0, 0] is
    (129 * 129 - 128 * 130) quanta = 2**(ea + eb - 268): a float32 denormal for ea + eb = 141."""
    a, b = torch.zeros(128, 128), torch.zeros(128, 128)
    qa, qb = 2.0 ** (ea - 134), 2.0 ** (eb - 134)
    a[0, 0], a[0, 1] = 129 * qa, 128 * qa
    b[0, 0], b[1, 0] = 129 * qb, -130 * qb
    return a.bfloat16(), b.bfloat16()


def test_a_product_whose_partial_sums_could_be_denormal_takes_the_float32_path_and_keeps_the_denormal(device):
    a, b = _pair(70, 71)
    assert not no_denormals(a, b)
    y = ttnn.to_torch(ttnn.matmul(_device(a, device), _device(b, device)))
    assert y[0, 0].item() == 2.0**-127  # a denormal: torch's bfloat16 kernel flushes it to 0 where it has AMX
    assert torch.equal(y, _float32_path(a, b))
    a, b = _pair(71, 71)  # one exponent step up: every partial sum a multiple of 2**-126
    assert no_denormals(a, b)
    y = ttnn.to_torch(ttnn.matmul(_device(a, device), _device(b, device)))
    assert y[0, 0].item() == 2.0**-126
    assert torch.equal(y, _float32_path(a, b))


def test_denormal_inputs_take_the_float32_path(device):
    a, b = _randn(256, 256, seed=1), _randn(256, 256, seed=2)
    a[5, 7] = 2.0**-130  # one bfloat16 denormal: the kernel would read it as 0
    b *= 2.0**100  # so that its products are normal
    assert not no_denormals(a, b)
    y = ttnn.to_torch(ttnn.matmul(_device(a, device), _device(b, device)))
    assert torch.equal(y, _float32_path(a, b))


# --- which kernel, and how far its results are from the float32 path's ----------------------------------


SHAPES = [((1024, 1024), (1024, 1024)), ((8, 128, 1000), (1000, 96)), ((4, 3, 64, 77), (4, 3, 77, 160)),
          ((3, 1, 64, 200), (1, 5, 200, 256)), ((128, 4097), (4097, 64)), ((64, 16384), (16384, 64))]


@pytest.mark.parametrize(("shape_a", "shape_b"), SHAPES, ids=[f"{a}@{b}" for a, b in SHAPES])
def test_outputs_are_the_float32_paths_but_in_a_few_elements_one_ulp_apart_and_no_further_from_exact(
        device, shape_a, shape_b):
    a, b = _randn(*shape_a, seed=11), _randn(*shape_b, seed=12)
    y = ttnn.to_torch(ttnn.matmul(_device(a, device), _device(b, device)))
    old, exact = _float32_path(a, b), _exact(a, b)
    differ = y != old
    assert int(differ.sum()) <= max(2, y.numel() // 2000)  # 1 in ~5,000 measured: a kernel of bfloat16 sums
    # within float32 accumulation's bound, in any order, then one rounding (a bfloat16 running total is not):
    # |y - exact| <= half a bfloat16 ulp of the value + (K - 1) * 2**-24 * sum |a_ik * b_kj|, each side doubled
    k, ex = shape_a[-1], torch.matmul(a.double(), b.double())
    bound = ex.abs() * 2.0**-8 + k * 2.0**-23 * torch.matmul(a.double().abs(), b.double().abs())
    assert bool(((y.double() - ex).abs() <= bound).all())
    # the sums' order, not a rounding: no further from exact than the float32 path (fewer, in every run here)
    assert int((y != exact).sum()) <= int((old != exact).sum()) + max(2, y.numel() // 20000)


@pytest.fixture(params=["this_machines_choice", "forced_where_it_obeys"])
def kernel(request, monkeypatch):
    """The kernel this machine's speed check chooses, and torch's bfloat16 kernel wherever it obeys the rule
    (so that its path is tested on a machine where it is too slow to be taken)."""
    if request.param == "forced_where_it_obeys":
        monkeypatch.setattr(matmul_kernel, "kernel_taken", matmul_kernel.kernel_obeys_rule)
        monkeypatch.setattr(matmul_kernel, "bias_kernel_taken", matmul_kernel.bias_kernel_obeys_rule)
    return request.param


def test_the_speed_check_takes_a_kernel_twice_as_fast_as_the_float32_path_and_no_other():
    import time

    assert matmul_kernel.kernel_faster(lambda a, b: a)  # no work at all
    assert not matmul_kernel.kernel_faster(_float32_path)  # the float32 path itself: not twice as fast

    def slow(a, b):
        time.sleep(0.005)
        return _float32_path(a, b)

    assert not matmul_kernel.kernel_faster(slow)


def test_a_kernel_not_taken_leaves_every_product_to_the_float32_path(device, monkeypatch):
    monkeypatch.setattr(matmul_kernel, "kernel_taken", lambda: False)
    a, b = _randn(256, 512, seed=5), _randn(512, 256, seed=6)
    assert matmul_kernel.bf16_product(a, b) is None
    assert torch.equal(ttnn.to_torch(ttnn.matmul(_device(a, device), _device(b, device))), _float32_path(a, b))


def test_a_large_default_product_is_torchs_bfloat16_kernel_where_it_is_taken(device, kernel):
    a, b = _randn(256, 512, seed=5), _randn(512, 256, seed=6)
    y = ttnn.to_torch(ttnn.matmul(_device(a, device), _device(b, device), transpose_b=False))
    expected = torch.matmul(a, b) if matmul_kernel.kernel_taken() else _float32_path(a, b)
    assert torch.equal(y, expected)
    assert torch.equal(ttnn.to_torch(ttnn.linear(_device(a, device), _device(b, device))), expected)  # no bias
    target = _device(torch.zeros(256, 256).bfloat16(), device)  # a bfloat16 output tensor: the same kernel
    ttnn.matmul(_device(a, device), _device(b, device), optional_output_tensor=target)
    assert torch.equal(ttnn.to_torch(target), expected)
    yt = ttnn.to_torch(ttnn.matmul(_device(a.T.contiguous(), device), _device(b.T.contiguous(), device),
                                   transpose_a=True, transpose_b=True))
    expected = torch.matmul(a.T.contiguous().T, b.T.contiguous().T) if matmul_kernel.kernel_taken() \
        else _float32_path(a, b)
    assert torch.equal(yt, expected)


def test_products_under_128_cubed_multiply_adds_keep_the_float32_path(device):
    a, b = _randn(64, 96, seed=7), _randn(96, 64, seed=8)  # 393,216 multiply-adds
    assert matmul_kernel.bf16_product(a, b) is None
    assert torch.equal(ttnn.to_torch(ttnn.matmul(_device(a, device), _device(b, device))), _float32_path(a, b))
    a, b = _randn(128, 128, seed=7), _randn(128, 128, seed=8)
    assert (matmul_kernel.bf16_product(a, b) is None) is not matmul_kernel.kernel_taken()
    assert matmul_kernel.bf16_product(a.float(), b.float()) is None  # float32 operands: never
    assert matmul_kernel.bf16_product(a[0], b) is None  # a vector: torch's matrix-vector kernels are not probed


@pytest.mark.parametrize(("shape_a", "shape_b", "kernel"),
                         [((1024, 1024), (1024, 1024), "this_machines_choice"),
                          ((8, 128, 1000), (1000, 96), "this_machines_choice"),
                          ((8, 128, 1000), (1000, 96), "forced_where_it_obeys")], indirect=["kernel"])
def test_a_bfloat16_bias_joins_the_float32_sums_before_the_one_rounding(device, shape_a, shape_b, kernel):
    a, b, bias = _randn(*shape_a, seed=21), _randn(*shape_b, seed=22), _randn(1, shape_b[-1], seed=23)
    y = ttnn.to_torch(ttnn.linear(_device(a, device), _device(b, device), bias=_device(bias, device)))
    old = (torch.matmul(a.float(), b.float()) + bias.float()).bfloat16()
    ex = torch.matmul(a.double(), b.double()) + bias.double()
    if matmul_kernel.kernel_taken() and matmul_kernel.bias_kernel_taken():
        assert torch.equal(y, torch.addmm(bias[0], a.reshape(-1, shape_a[-1]), b).view(y.shape))
    assert int((y != old).sum()) <= max(2, y.numel() // 2000)
    bound = ex.abs() * 2.0**-8 + shape_a[-1] * 2.0**-23 * (torch.matmul(a.double().abs(), b.double().abs())
                                                           + bias.double().abs())
    assert bool(((y.double() - ex).abs() <= bound).all())
    # As close to the exact sums as the float32 path, but for the order of the float32 sums: a kernel's order differs
    # from the float32 path's in ~1 of 5,000 values (matmul_kernel.MIN_SPEEDUP's note), and either may be the one
    # a double rounding takes off the exact value. AVX512-BF16's kernel (VDPBF16PS, an EPYC of this round) missed 21
    # of 98,304 where the float32 path missed 14; an AVX2 machine's forced kernel missed at most 2 more.
    missed, missed_f32 = int((y != ex.float().bfloat16()).sum()), int((old != ex.float().bfloat16()).sum())
    assert missed <= missed_f32 + max(2, y.numel() // 5000)


def test_a_bias_that_is_not_one_value_per_column_or_near_the_denormals_keeps_the_float32_path(device):
    a, b = _randn(256, 256, seed=9), _randn(256, 256, seed=10)
    f32 = torch.matmul(a.float(), b.float())
    for bias in (_randn(256, 256, seed=11), _randn(1, 1, 256, seed=12), torch.full((1, 256), 2.0**-130).bfloat16()):
        assert matmul_kernel.bf16_product(a, b, bias=bias) is None
        y = ttnn.to_torch(ttnn.linear(_device(a, device), _device(b, device), bias=_device(bias, device)))
        assert torch.equal(y, (f32 + bias.float()).bfloat16())


def test_activation_float32_outputs_and_kernel_configs_keep_the_float32_path(device):
    a, b = _randn(256, 256, seed=9), _randn(256, 256, seed=10)
    bias = _randn(1, 256, seed=11)
    A, B, Bias = _device(a, device), _device(b, device), _device(bias, device)
    f32 = torch.matmul(a.float(), b.float())
    # one rounding after the bias and after the activation, as before
    assert torch.equal(ttnn.to_torch(ttnn.linear(A, B, bias=Bias, activation="relu")),
                       torch.relu(f32 + bias.float()).bfloat16())
    assert torch.equal(ttnn.to_torch(ttnn.matmul(A, B, activation="relu")), torch.relu(f32).bfloat16())
    assert torch.equal(ttnn.to_torch(ttnn.matmul(A, B, dtype=ttnn.float32)), f32)
    target = ttnn.from_torch(torch.zeros(256, 256), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    ttnn.matmul(A, B, optional_output_tensor=target)
    assert torch.equal(ttnn.to_torch(target), f32)
    hifi4 = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4, fp32_dest_acc_en=True)
    assert torch.equal(ttnn.to_torch(ttnn.matmul(A, B, compute_kernel_config=hifi4)), f32.bfloat16())


def test_a_bias_adds_to_the_float32_product_as_before_whether_it_fits_the_product_or_widens_it(device):
    a, b = _randn(64, 128, seed=12), _randn(128, 96, seed=13)
    A, B, f32 = _device(a, device), _device(b, device), torch.matmul(a.float(), b.float())
    for shape in ([1, 96], [96], [64, 96], [1, 1, 96], [2, 1, 96]):  # the last two widen the product's shape
        bias = _randn(*shape, seed=14)
        y = ttnn.to_torch(ttnn.linear(A, B, bias=_device(bias, device)))
        assert torch.equal(y, (f32 + bias.float()).bfloat16()), shape
