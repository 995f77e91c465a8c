"""Compute kernel configs: TT-NN's fields, defaults and keyword-only constructors, and how ops read them."""

from __future__ import annotations

import pytest
import torch

import device_sim as ttnn
from device_sim.compute_config import Numerics


def test_wormhole_config_defaults_are_tt_nn_bindings():
    cfg = ttnn.WormholeComputeKernelConfig()
    assert (cfg.math_fidelity, cfg.math_approx_mode, cfg.fp32_dest_acc_en, cfg.packer_l1_acc,
            cfg.dst_full_sync_en, cfg.throttle_level) == (
        ttnn.MathFidelity.Invalid, True, False, False, False, ttnn.ThrottleLevel.NO_THROTTLE)
    assert [int(f) for f in ttnn.MathFidelity] == [0, 2, 3, 4, 255]


def test_configs_are_keyword_only_and_fields_are_writable_as_in_tt_nn():
    with pytest.raises(TypeError):
        ttnn.WormholeComputeKernelConfig(ttnn.MathFidelity.HiFi4)  # noqa
    cfg = ttnn.BlackholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi2)
    cfg.fp32_dest_acc_en = True
    assert isinstance(cfg, ttnn.WormholeComputeKernelConfig) and cfg.fp32_dest_acc_en
    assert not hasattr(ttnn.GrayskullComputeKernelConfig(), "fp32_dest_acc_en")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("math_fidelity", "HiFi4", "math_fidelity must be a ttnn.MathFidelity"),
    ("fp32_dest_acc_en", 1, "fp32_dest_acc_en must be True or False"),
    ("throttle_level", 3, "throttle_level must be a ttnn.ThrottleLevel"),
])
def test_a_wrong_field_type_is_a_type_error_naming_the_field(field, value, message):
    with pytest.raises(TypeError, match=message):
        ttnn.WormholeComputeKernelConfig(**{field: value})


def test_init_device_compute_kernel_config_keeps_a_given_config_and_fills_defaults_otherwise():
    given = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi3)
    assert ttnn.init_device_compute_kernel_config(None, given) is given
    made = ttnn.init_device_compute_kernel_config(None, math_fidelity=ttnn.MathFidelity.HiFi4, fp32_dest_acc_en=True)
    assert (made.math_fidelity, made.math_approx_mode, made.fp32_dest_acc_en) == (ttnn.MathFidelity.HiFi4, True, True)
    assert ttnn.init_device_compute_kernel_config(None).math_fidelity == ttnn.MathFidelity.LoFi
    with pytest.raises(TypeError, match="must be a ttnn.WormholeComputeKernelConfig"):
        ttnn.init_device_compute_kernel_config(None, "HiFi4")


def test_destination_register_holds_8_tiles_or_4_with_fp32_accumulation():
    F = ttnn.MathFidelity.LoFi
    assert Numerics(F, False, False, False).dest_tiles == 8
    assert Numerics(F, False, True, False).dest_tiles == 4
    assert Numerics(F, False, False, False, dst_full_sync_en=True).dest_tiles == 16


def _pair(device, dtype_a=ttnn.bfloat16, dtype_b=ttnn.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = ttnn.from_torch(torch.randn(64, 256, generator=g), dtype=dtype_a, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.randn(256, 64, generator=g), dtype=dtype_b, layout=ttnn.TILE, device=device)
    return a, b


def test_an_invalid_fidelity_means_the_ops_own_default_hifi2_for_bfloat16_matmul(device):
    a, b = _pair(device)
    unset = ttnn.matmul(a, b, compute_kernel_config=ttnn.WormholeComputeKernelConfig(math_approx_mode=False))
    hifi2 = ttnn.matmul(a, b, compute_kernel_config=ttnn.WormholeComputeKernelConfig(
        math_fidelity=ttnn.MathFidelity.HiFi2, math_approx_mode=False))
    lofi = ttnn.matmul(a, b, compute_kernel_config=ttnn.WormholeComputeKernelConfig(
        math_fidelity=ttnn.MathFidelity.LoFi, math_approx_mode=False))
    assert torch.equal(unset.value, hifi2.value) and not torch.equal(unset.value, lofi.value)


def test_a_compute_kernel_config_of_the_wrong_kind_names_what_is_wanted(device):
    a, b = _pair(device)
    with pytest.raises(TypeError, match="compute_kernel_config must be a ttnn.WormholeComputeKernelConfig"):
        ttnn.matmul(a, b, compute_kernel_config={"math_fidelity": "LoFi"})


def test_without_a_config_matmul_is_exact_and_with_hifi4_fp32_it_matches_for_bfloat16(device):
    a, b = _pair(device)
    exact = a.value.float() @ b.value.float()
    plain = ttnn.matmul(a, b, dtype=ttnn.float32)
    hifi4 = ttnn.matmul(a, b, dtype=ttnn.float32, compute_kernel_config=ttnn.WormholeComputeKernelConfig(
        math_fidelity=ttnn.MathFidelity.HiFi4, fp32_dest_acc_en=True))
    torch.testing.assert_close(plain.value, exact)
    torch.testing.assert_close(hifi4.value, exact)  # bfloat16 operands fit HiFi4's 9 x 11 bits exactly
