"""Element-wise ops beyond the basic table: numbers on either side, parameters, ternary ops, clamp, predicates."""

from __future__ import annotations

import inspect
import sqlite3

import pytest
import torch
import torch.nn.functional as F

import device_sim as ttnn
import ttreport


def rnd(*shape, seed=0):
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)) * 4 - 2


def dev(t, device, dtype=ttnn.bfloat16, layout=ttnn.TILE, **kw):
    return ttnn.from_torch(t, dtype=dtype, layout=layout, device=device, **kw)


def f32(t: ttnn.Tensor) -> torch.Tensor:
    return t.value.float()


def rounded(t: torch.Tensor) -> torch.Tensor:
    """A float32 result as a bfloat16 device tensor holds it."""
    return t.bfloat16().float()


def test_a_number_may_come_first_in_a_binary_op(device):
    a = dev(rnd(2, 32, 64), device)
    out = ttnn.subtract(1.0, a)
    assert torch.equal(f32(out), rounded(1.0 - f32(a)))
    assert (out.dtype, out.layout, out.shape) == (a.dtype, a.layout, a.shape)
    assert torch.equal(f32(ttnn.divide(2.0, a)), rounded(2.0 / f32(a)))
    with pytest.raises(TypeError, match="one of the first two arguments must be a ttnn tensor, got float and int"):
        ttnn.add(1.0, 2)


def test_use_legacy_picks_a_kernel_and_changes_no_value(device):
    a, b = dev(rnd(2, 32, 64), device), dev(rnd(2, 32, 64, seed=1), device)
    assert torch.equal(ttnn.mul(a, b, use_legacy=True).value, ttnn.mul(a, b).value)
    assert torch.equal(ttnn.add(a, b, use_legacy=False).value, ttnn.add(a, b).value)


@pytest.mark.parametrize(("name", "call", "ref"), [
    ("leaky_relu", lambda t: ttnn.leaky_relu(t, negative_slope=0.3), lambda v: F.leaky_relu(v, 0.3)),
    ("elu", lambda t: ttnn.elu(t, 0.5), lambda v: F.elu(v, 0.5)),
    ("softplus", lambda t: ttnn.softplus(t, beta=2.0, threshold=1.0), lambda v: F.softplus(v, 2.0, 1.0)),
    ("hardtanh", lambda t: ttnn.hardtanh(t, min_val=-0.5, max_val=0.25), lambda v: v.clamp(-0.5, 0.25)),
    ("round", lambda t: ttnn.round(t, decimals=1), lambda v: torch.round(v, decimals=1)),
    ("hardswish", ttnn.hardswish, F.hardswish),
    ("mish", ttnn.mish, F.mish),
    ("log1p", lambda t: ttnn.log1p(ttnn.abs(t)), lambda v: torch.log1p(v.abs())),
])
def test_unary_ops_with_parameters_match_torch(device, name, call, ref):
    t = dev(rnd(2, 32, 64), device)
    torch.testing.assert_close(f32(call(t)), rounded(ref(f32(t))), rtol=2**-7, atol=1e-5)


def test_parameterised_unary_ops_take_tt_nns_names_and_reject_others(device):
    assert list(inspect.signature(ttnn.leaky_relu).parameters)[:2] == ["input_tensor", "negative_slope"]
    assert list(inspect.signature(ttnn.softplus).parameters)[:3] == ["input_tensor", "beta", "threshold"]
    with pytest.raises(TypeError, match=r"ttnn\.elu\(\) got an unexpected keyword argument 'alpah'; "
                                        r"did you mean 'alpha'\?"):
        ttnn.elu(dev(rnd(32, 32), device), alpah=1.0)


def test_predicates_give_one_and_zero_in_the_input_dtype(device):
    v = torch.tensor([[1.0, float("nan"), float("inf"), 0.0]])
    t = dev(v, device, dtype=ttnn.float32)
    assert ttnn.isnan(t).value.tolist() == [[0, 1, 0, 0]]
    assert ttnn.isfinite(t).value.tolist() == [[1, 0, 0, 1]]
    assert ttnn.isinf(t).value.tolist() == [[0, 0, 1, 0]]
    assert ttnn.logical_not(t).value.tolist() == [[0, 0, 0, 1]]
    assert ttnn.isnan(t).dtype == ttnn.float32
    b = dev(torch.tensor([[0.0, 1.0, 0.0, 2.0]]), device, dtype=ttnn.float32)
    assert ttnn.logical_and(t, b).value.tolist() == [[0, 1, 0, 0]]
    assert ttnn.logical_or(t, b).value.tolist() == [[1, 1, 1, 1]]


def test_bitwise_ops_work_on_integer_tensors_only(device):
    a = dev(torch.tensor([[12, 10]]), device, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR)
    b = dev(torch.tensor([[10, 6]]), device, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR)
    assert ttnn.bitwise_and(a, b).value.tolist() == [[8, 2]]
    assert ttnn.bitwise_xor(a, 3).value.tolist() == [[15, 9]]
    with pytest.raises(TypeError, match="bitwise ops take integer tensors"):
        ttnn.bitwise_or(dev(rnd(32, 32), device), 1)


def test_where_takes_tensors_or_numbers_for_either_branch(device):
    v = rnd(2, 32, 64)
    t = dev(v, device, memory_config=ttnn.L1)
    cond = ttnn.gt(t, 0.0)
    out = ttnn.where(cond, t, 0.0)
    assert torch.equal(f32(out), torch.where(f32(t) > 0, f32(t), 0.0))
    assert out.memory_config() == ttnn.L1 and out.memory_config_source == "inputs"
    both = ttnn.where(cond, 1.0, -1.0)
    assert torch.equal(f32(both), torch.where(f32(t) > 0, 1.0, -1.0)) and both.shape == (2, 32, 64)
    with pytest.raises(RuntimeError, match=r"ttnn.where: predicate, true_value, false_value of shapes "
                                         r"\[\[2, 32, 64\], \[2, 32, 32\], 0.0\] do not broadcast"):
        ttnn.where(cond, dev(rnd(2, 32, 32), device), 0.0)


def test_lerp_addcmul_addcdiv_and_mac_match_torch(device):
    a, b, c = (dev(rnd(2, 32, 64, seed=s), device) for s in range(3))
    va, vb, vc = f32(a), f32(b), f32(c)
    close = lambda got, want: torch.testing.assert_close(f32(got), rounded(want), rtol=2**-7, atol=1e-5)  # noqa: E731
    close(ttnn.lerp(a, b, 0.25), torch.lerp(va, vb, 0.25))
    close(ttnn.lerp(a, b, c), torch.lerp(va, vb, vc))
    close(ttnn.addcmul(a, b, c, value=0.5), torch.addcmul(va, vb, vc, value=0.5))
    d = ttnn.add(ttnn.abs(c), 1.0)
    close(ttnn.addcdiv(a, b, d, value=2.0), torch.addcdiv(va, vb, f32(d), value=2.0))
    close(ttnn.mac(a, b, c), va * vb + vc)


def test_clamp_takes_number_or_tensor_bounds_and_needs_one(device):
    v = rnd(2, 32, 64)
    t = dev(v, device)
    assert torch.equal(f32(ttnn.clamp(t, min=-0.5)), f32(t).clamp(min=-0.5))
    assert torch.equal(f32(ttnn.clip(t, -1.0, 1.0)), f32(t).clamp(-1.0, 1.0))
    lo, hi = dev(-rnd(2, 32, 64, seed=1).abs(), device), dev(rnd(2, 32, 64, seed=2).abs(), device)
    assert torch.equal(f32(ttnn.clamp(t, lo, hi)), torch.clamp(f32(t), f32(lo), f32(hi)))
    with pytest.raises(RuntimeError, match="Only one of 'min' or 'max' can be None"):  # TT-NN's TT_FATAL
        ttnn.clip(t)
    with pytest.raises(TypeError, match="both as numbers or both as tensors"):
        ttnn.clamp(t, lo, 1.0)


def test_an_elementwise_op_keeps_the_inputs_dtype_unless_told(device):
    t = dev(rnd(32, 64), device, dtype=ttnn.float32)
    assert ttnn.floor(t).dtype == ttnn.float32
    out = ttnn.erf(t, dtype=ttnn.bfloat8_b)
    assert (out.dtype, out.layout) == (ttnn.bfloat8_b, ttnn.TILE)


def test_in_place_ops_write_into_their_first_input_and_return_it(device):
    a, b = dev(rnd(2, 32, 64), device), dev(rnd(2, 32, 64, seed=1), device)
    before, tensor_id, address = f32(a), a.tensor_id, a.buffer_address()
    out = ttnn.add_(a, b)
    assert out is a and (a.tensor_id, a.buffer_address()) == (tensor_id, address)
    assert torch.equal(f32(a), rounded(before + f32(b)))
    ttnn.multiply_(a, 2.0)
    assert torch.equal(f32(a), rounded(rounded(before + f32(b)) * 2))
    with pytest.raises(ValueError, match=r"ttnn.sub_: the result has shape \[2, 32, 64\] but input_tensor_a"):
        ttnn.sub_(dev(rnd(1, 32, 64), device), b)


def test_plus_one_steps_a_position_tensor_in_place_and_can_skip_negatives(device):
    pos = dev(torch.tensor([[5, -1, 0]]), device, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR)
    assert ttnn.plus_one(pos, skip_negative_entries=True) is pos and pos.value.tolist() == [[6, -1, 1]]
    ttnn.plus_one(pos)
    assert pos.value.tolist() == [[7, 0, 2]]


def test_tril_and_triu_keep_a_triangle_from_a_diagonal(device):
    t = dev(rnd(32, 32), device)
    assert torch.equal(ttnn.tril(t).value, torch.tril(t.value))
    assert torch.equal(ttnn.triu(t, diagonal=1).value, torch.triu(t.value, 1))


def test_an_in_place_op_is_recorded_with_its_input_as_its_output_and_no_new_buffer(tmp_path, device):
    a, b = dev(rnd(2, 32, 64), device), dev(rnd(2, 32, 64, seed=1), device)
    with ttreport.capture(tmp_path / "r") as report:
        ttnn.add_(a, b)
    con = sqlite3.connect(report.db_path)
    try:
        (op_id,) = con.execute("SELECT operation_id FROM operations WHERE name = 'ttnn.add_'").fetchone()
        outs = con.execute("SELECT tensor_id FROM output_tensors WHERE operation_id = ?", (op_id,)).fetchall()
        live = con.execute("SELECT COUNT(*) FROM buffers WHERE operation_id = ?", (op_id,)).fetchone()[0]
    finally:
        con.close()
    assert outs == [(a.tensor_id,)] and live == 2


@pytest.mark.parametrize(("dim", "take"), [(ttnn.BcastOpDim.H, (slice(0, 1), slice(None))),
                                           (ttnn.BcastOpDim.W, (slice(None), slice(0, 1))),
                                           (ttnn.BcastOpDim.HW, (slice(0, 1), slice(0, 1)))])
def test_bcast_applies_b_first_row_column_or_value_to_all_of_a(device, dim, take):
    a, b = dev(rnd(2, 32, 64), device), dev(rnd(2, 32, 64, seed=1), device)
    out = ttnn.bcast(a, b, ttnn.BcastOpMath.SUB, dim)
    assert torch.equal(f32(out), rounded(f32(a) - f32(b)[(..., *take)]))
    assert ttnn.bcast(a, b, math_op=ttnn.BcastOpMath.MUL, dim=dim).shape == (2, 32, 64)


def test_divide_and_div_are_two_ops_and_the_report_names_the_one_called(tmp_path, device):
    # TT-NN 0.81 registers ttnn.divide (binary.hpp) and ttnn.div (binary_composite.hpp, with rounding_mode).
    a, b = dev(rnd(2, 32, 64) * 4, device), dev(rnd(2, 32, 64, seed=1).abs() + 0.5, device)
    with ttreport.capture(tmp_path / "r") as report:
        ttnn.divide(a, b)
        ttnn.div(a, b)
        trunc = ttnn.div(a, b, rounding_mode="trunc")
        floor = ttnn.div(a, b, rounding_mode="floor")
    con = sqlite3.connect(report.db_path)
    try:
        names = [n for (n,) in con.execute("SELECT name FROM operations ORDER BY operation_id")]
    finally:
        con.close()
    assert names == ["ttnn.divide", "ttnn.div", "ttnn.div", "ttnn.div"]
    q = f32(a) / f32(b)
    assert torch.equal(f32(trunc), rounded(torch.trunc(q))) and torch.equal(f32(floor), rounded(torch.floor(q)))
    assert not torch.equal(f32(trunc), f32(floor))  # negative quotients tell them apart
    assert "rounding_mode" not in inspect.signature(ttnn.divide).parameters
    with pytest.raises(ValueError, match="rounding_mode='round' is not one of None, 'trunc', 'floor'"):
        ttnn.div(a, b, rounding_mode="round")
