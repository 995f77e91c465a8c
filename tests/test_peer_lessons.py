"""What tt-metal's own tests/ttnn taught device_sim (`make peer`, peer/README.md), kept as small tests of ours.

Each test names the TT-NN behaviour a tt-metal unit test relied on and device_sim lacked or refused.

    .venv/bin/python -m pytest tests/test_peer_lessons.py -q
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from programs_heard import launched  # tests/programs_heard.py

import device_sim as ttnn

# -- what tt-metal's device fixture calls (its conftest.py and tests/scripts/common.py) ---------------


def test_the_device_fixture_calls_run_get_pcie_device_id_cluster_type_and_a_dispatch_config_of_nones():
    assert ttnn.GetPCIeDeviceID(0) == 0
    with pytest.raises(ValueError, match="chips 0 to"):
        ttnn.GetPCIeDeviceID(ttnn.get_num_devices())
    # the default emulated system is 2x4 Wormhole chips: a T3K, whose dispatch cores are ethernet cores, ROW
    assert ttnn.cluster.get_cluster_type() == ttnn.cluster.ClusterType.T3K
    assert ttnn.cluster.ClusterType.TG == 5 and ttnn._ttnn.cluster is ttnn.cluster
    cfg = ttnn.DispatchCoreConfig(None, None, None)
    assert (cfg.type, cfg.axis) == (ttnn.DispatchCoreType.ETH, ttnn.DispatchCoreAxis.ROW)
    with pytest.raises(ValueError, match="COL axis is not supported for ETH"):
        ttnn.DispatchCoreConfig(ttnn.DispatchCoreType.ETH, ttnn.DispatchCoreAxis.COL)
    device = ttnn.CreateDevice(device_id=0, dispatch_core_config=cfg)
    ttnn.close_device(device)


def test_mesh_device_fixture_reads_the_system_mesh_through_ttnn_ttnn_multi_device():
    shape = ttnn._ttnn.multi_device.SystemMeshDescriptor().shape()
    assert shape.mesh_size() == ttnn.get_num_devices()
    assert ttnn._ttnn.multi_device.MeshDevice is ttnn.MeshDevice


# -- the program cache: tests count its entries around an op ----------------------------------------


def test_running_an_op_again_on_the_same_specs_adds_no_program_cache_entry(device):
    a = ttnn.from_torch(torch.ones(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    before = device.num_program_cache_entries()
    ttnn.add(a, a)
    once = device.num_program_cache_entries()
    ttnn.add(a, a)
    ttnn.add(a, a)
    assert once == before + 1 and device.num_program_cache_entries() == once
    ttnn.exp(a)  # another program
    assert device.num_program_cache_entries() == once + 1
    device.disable_and_clear_program_cache()
    ttnn.add(a, a)
    assert device.num_program_cache_entries() == 0
    device.enable_program_cache()
    ttnn.add(a, a)
    assert device.num_program_cache_entries() == 1


# -- ttnn._ttnn.reports: the backward tests count L1 pages before and after an op --------------------


def test_get_buffer_pages_lists_each_l1_page_round_robin_over_the_banks_and_no_dram_page(device):
    dram = ttnn.from_torch(torch.ones(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    l1 = ttnn.from_torch(torch.ones(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                         memory_config=ttnn.L1_MEMORY_CONFIG)
    pages = ttnn._ttnn.reports.get_buffer_pages(device)
    assert [p.page_index for p in pages] == [0, 1, 2, 3]
    assert [p.bank_id for p in pages] == [0, 1, 2, 3] and {p.address for p in pages} == {l1.buffer.address}
    assert all(p.page_size == 2048 and p.buffer_type == ttnn.BufferType.L1 for p in pages)
    assert {b.address for b in ttnn._ttnn.reports.get_buffers(device)} == {dram.buffer.address, l1.buffer.address}
    assert ttnn._ttnn.reports.get_device_info(device).l1_num_banks == 64


# -- norms, softmax, reductions: fill the tile padding first, then check the op never reads it ---------------


def test_fill_implicit_tile_padding_fills_only_the_padding_and_keeps_an_aligned_tensor(device):
    t = ttnn.from_torch(torch.ones(3, 17, 17), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    filled = ttnn.fill_implicit_tile_padding(t, -42.0)
    assert torch.equal(ttnn.to_torch(filled), torch.ones(3, 17, 17, dtype=torch.bfloat16))
    padded = ttnn.from_device(filled).to_torch_with_padded_shape()
    assert padded.shape == (3, 32, 32) and padded[0, 16, 16] == 1
    assert padded[0, 17, 0] == -42 and padded[2, 0, 31] == -42
    assert ttnn.from_device(t).to_torch_with_padded_shape()[0, 31, 31] == 0  # from_torch pads with 0
    aligned = ttnn.from_torch(torch.ones(32, 64), layout=ttnn.TILE, device=device)
    assert ttnn.fill_implicit_tile_padding(aligned, 5.0) is aligned  # no padding: TT-NN returns its input
    assert ttnn.get_golden_function(ttnn.fill_implicit_tile_padding)(torch.ones(2), 3.0).tolist() == [1.0, 1.0]


def test_rms_norm_golden_takes_the_weight_positionally_and_rounds_to_its_dtype_as_tt_nn_does():
    x = torch.rand(2, 24, 42, dtype=torch.bfloat16)
    w = torch.rand(42, dtype=torch.bfloat16)
    golden = ttnn.get_golden_function(ttnn.rms_norm)
    want = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-12)).to(torch.bfloat16) * w
    got = golden(x, w)
    assert got.dtype == torch.bfloat16 and torch.equal(got, want)
    assert torch.equal(golden(x, weight=w), want)


def test_scale_mask_softmax_makes_a_new_tensor_and_leaves_its_input(device):
    x = torch.randn(1, 1, 32, 64)
    mask = torch.zeros(1, 1, 1, 64)
    mask[..., 32:] = float("-inf")
    t = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    m = ttnn.from_torch(mask, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    out = ttnn.scale_mask_softmax(t, 0.5, m)
    want = torch.softmax(t.value.float() * 0.5 + mask, -1)
    assert out is not t and torch.allclose(ttnn.to_torch(out).float(), want, atol=1e-2)
    assert torch.equal(ttnn.to_torch(t), x.bfloat16())


def test_pearson_correlation_coefficient_follows_tt_nn_rules(device):
    a = torch.randn(64, 64)
    assert ttnn.pearson_correlation_coefficient(a, a.clone()) == 1.0
    assert ttnn.pearson_correlation_coefficient(a, torch.zeros(64, 64)) == 0.0  # one all zero
    assert ttnn.pearson_correlation_coefficient(torch.full((4,), float("nan")), torch.full((4,), float("nan"))) == 1.0
    t = ttnn.from_torch(a * 3 + 1, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert ttnn.pearson_correlation_coefficient(a, t) > 0.9999  # a ttnn tensor is read back first
    with pytest.raises(ValueError, match="not a torch.Tensor"):
        ttnn.pearson_correlation_coefficient([1.0], a)


# -- creation and sharding -------------------------------------------------------------------------------------


def test_a_memory_config_given_an_nd_shard_spec_by_name_is_sharded(device):
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 1))})
    nd = ttnn.NdShardSpec(ttnn.Shape([1, 32, 32]), grid, ttnn.ShardOrientation.ROW_MAJOR)
    cfg = ttnn.MemoryConfig(buffer_type=ttnn.BufferType.L1, nd_shard_spec=nd)  # tt-metal's tests write it so
    assert cfg.is_sharded() and cfg == ttnn.MemoryConfig(ttnn.BufferType.L1, nd)
    t = ttnn.from_torch(torch.ones(4, 32, 32), layout=ttnn.TILE, device=device, memory_config=cfg)
    assert t.is_sharded() and torch.equal(ttnn.to_torch(t), torch.ones(4, 32, 32, dtype=torch.bfloat16))
    with pytest.raises(ttnn.ShardSpecError, match="INTERLEAVED MemoryConfig takes no shard_spec"):
        ttnn.MemoryConfig(ttnn.TensorMemoryLayout.INTERLEAVED, ttnn.BufferType.L1, nd_shard_spec=nd)


def test_moreh_full_and_full_like_write_the_value_on_the_device_with_one_program(device):
    out = ttnn.moreh_full([3, 40, 70], 2.5, device)
    assert out.dtype == ttnn.bfloat16 and out.layout == ttnn.TILE and out.memory_config() == ttnn.DRAM_MEMORY_CONFIG
    assert torch.equal(ttnn.to_torch(out), torch.full((3, 40, 70), 2.5, dtype=torch.bfloat16))
    before = device.num_program_cache_entries()
    like = ttnn.moreh_full_like(out, 16777217, dtype=ttnn.int32)  # an int fills exactly
    assert like.dtype == ttnn.int32 and int(ttnn.to_torch(like)[0, 0, 0]) == 16777217
    assert device.num_program_cache_entries() == before + 1
    with pytest.raises(RuntimeError, match="Full: Unsupported data type"):
        ttnn.moreh_full([2, 32], 1.0, device, dtype=ttnn.bfloat8_b)
    with pytest.raises(RuntimeError, match="Shape size must be greater than 1"):
        ttnn.moreh_full([32], 1.0, device)
    with pytest.raises(RuntimeError, match="Input must be on device"):
        ttnn.moreh_full_like(ttnn.from_torch(torch.ones(2, 2)), 1.0)


# -- backward ops: tt-metal's nightly eltwise/backward tests -------------------------------------------------


def test_binary_backward_ops_give_both_gradients_or_the_required_ones_written_where_asked(device):
    g, a, b = (torch.randn(1, 1, 32, 64, generator=torch.Generator().manual_seed(s)) for s in (1, 2, 3))
    tg, ta, tb = (ttnn.from_torch(v, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device) for v in (g, a, b))
    grad_a, grad_b = ttnn.mul_bw(tg, ta, tb)
    torch.testing.assert_close(ttnn.to_torch(grad_a).float(), (tg.value.float() * tb.value.float()), rtol=2**-7,
                               atol=1e-5)
    golden = ttnn.get_golden_function(ttnn.mul_bw)(g, a.requires_grad_(), b.requires_grad_())
    assert len(golden) == 2 and torch.allclose(golden[1], g * a.detach())
    only = ttnn.from_torch(torch.zeros(1, 1, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    got = ttnn.add_bw(tg, ta, tb, are_required_outputs=[False, True], other_grad=only, queue_id=0)
    assert got[0] is None and got[1] is only and torch.equal(ttnn.to_torch(only), ttnn.to_torch(tg))
    (scalar_grad,) = ttnn.mul_bw(tg, ta, 2.0)  # a number: one gradient
    assert torch.equal(ttnn.to_torch(scalar_grad), (tg.value.float() * 2).bfloat16())
    _, sub = ttnn.subalpha_bw(tg, ta, tb, 0.5)  # alpha positionally, as TT-NN binds it
    assert torch.equal(ttnn.to_torch(sub), (-0.5 * tg.value.float()).bfloat16())


def test_div_bw_by_zero_gives_inf_or_nan_as_tt_nn_composite_and_zeros_for_a_rounded_division(device):
    g = ttnn.from_torch(torch.tensor([[1.0, 0.0, -2.0, 3.0]]), dtype=ttnn.float32, device=device)
    a = ttnn.from_torch(torch.tensor([[1.0, 1.0, 2.0, 0.0]]), dtype=ttnn.float32, device=device)
    zero = ttnn.from_torch(torch.zeros(1, 4), dtype=ttnn.float32, device=device)
    grad_a, grad_b = (ttnn.to_torch(t)[0].tolist() for t in ttnn.div_bw(g, a, zero))
    assert grad_a[0] == float("inf") and grad_a[1] != grad_a[1] and grad_a[2] == float("-inf")
    assert grad_b[0] == float("-inf") and grad_b[1] != grad_b[1] and grad_b[3] != grad_b[3]
    assert ttnn.to_torch(ttnn.div_bw(g, a, zero, rounding_mode="floor")[0]).abs().sum() == 0
    with pytest.raises(RuntimeError, match="Incorrect rounding mode"):
        ttnn.div_bw(g, a, zero, rounding_mode="round")


def test_unary_backward_ops_return_a_one_tensor_list_and_gelu_bw_takes_approximate(device):
    x = torch.linspace(-3, 3, 32 * 32).reshape(1, 1, 32, 32)
    g = torch.ones(1, 1, 32, 32)
    tx, tg = (ttnn.from_torch(v, dtype=ttnn.float32, layout=ttnn.TILE, device=device) for v in (x, g))
    (exact,) = ttnn.gelu_bw(tg, tx)
    (tanh,) = ttnn.gelu_bw(tg, tx, approximate="tanh")
    xs = x.clone().requires_grad_()
    torch.nn.functional.gelu(xs, approximate="tanh").sum().backward()
    torch.testing.assert_close(ttnn.to_torch(tanh), xs.grad)
    assert not torch.equal(ttnn.to_torch(exact), ttnn.to_torch(tanh))
    (neg,) = ttnn.neg_bw(tg, tx)
    assert torch.equal(ttnn.to_torch(neg), -g)


def test_every_backward_op_tt_metals_nightly_tests_call_takes_their_arguments(device):
    # the 75 *_bw ops of tests/ttnn/nightly/.../eltwise/backward that device_sim lacked (99 files: 23.5 % -> 98.9 %),
    # called as those tests call them: parameters by position or keyword as unary_backward_nanobind.cpp binds them
    x = torch.linspace(0.1, 0.9, 32 * 32).reshape(1, 1, 32, 32)
    g = torch.ones(1, 1, 32, 32)
    tx, tg = (ttnn.from_torch(v, dtype=ttnn.float32, layout=ttnn.TILE, device=device) for v in (x, g))
    calls = {
        "acos_bw": (), "erfinv_bw": (), "multigammaln_bw": (), "hardswish_bw": (), "fill_zero_bw": (),
        "polygamma_bw": (2,), "pow_bw": (2.0,), "rpow_bw": (3.0,), "div_no_nan_bw": (4.0,), "threshold_bw": (0.5, 0.0),
        "clamp_bw": (0.2, 0.6), "repeat_bw": ([1, 2, 1, 1],)}
    for name, args in calls.items():
        op, grad = getattr(ttnn, name), g
        if name == "repeat_bw":  # the incoming gradient has the repeated shape
            grad = torch.ones(1, 2, 32, 32)
        want = op.golden_function(grad, x, *args)[0]
        (got,) = op(ttnn.from_torch(grad, dtype=ttnn.float32, layout=ttnn.TILE, device=device), tx, *args)
        torch.testing.assert_close(ttnn.to_torch(got), want, msg=name)
    # keyword-only in TT-NN, but TT-NN's golden functions take them by position (test_backward_celu.py)
    (celu,) = ttnn.celu_bw(tg, tx, alpha=0.5)
    torch.testing.assert_close(ttnn.to_torch(celu), ttnn.celu_bw.golden_function(g, x, 0.5)[0])
    with pytest.raises(TypeError, match="takes 2 positional arguments"):
        ttnn.celu_bw(tg, tx, 0.5)


def test_backward_ops_follow_tt_nn_composites_where_they_depart_from_autograd(device):
    x = ttnn.from_torch(torch.tensor([[-1.0, 0.0, 2.0, 4.0]]), dtype=ttnn.float32, device=device)
    g = ttnn.from_torch(torch.tensor([[1.0, -1.0, 1.0, 1.0]]), dtype=ttnn.float32, device=device)
    # pow_bw: +inf wherever the input is <= 0, and TT_FATAL on a negative exponent (unary_backward.cpp)
    assert ttnn.to_torch(ttnn.pow_bw(g, x, 2.0)[0])[0].tolist() == [float("inf"), float("inf"), 4.0, 8.0]
    with pytest.raises(RuntimeError, match="exponent >= 0.0"):
        ttnn.pow_bw(g, x, -1.0)
    # rdiv_bw (scalar / x): at x == 0 an infinity signed against grad * scalar; zeros with a rounding mode
    rdiv = ttnn.to_torch(ttnn.rdiv_bw(g, x, 2.0)[0])[0].tolist()
    assert rdiv[1] == float("inf") and rdiv[2] == -0.5
    assert ttnn.to_torch(ttnn.rdiv_bw(g, x, 2.0, rounding_mode="floor")[0]).abs().sum() == 0
    # prod_bw: the incoming gradient sits in the first place along dim (test_backward_prod.py's data)
    v = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    grad = torch.tensor([[[[1.0, 0.0], [1.0, 0.0]]]])  # the product of each row, in column 0
    tv, tgrad = (ttnn.from_torch(t, dtype=ttnn.float32, device=device) for t in (v, grad))
    assert ttnn.to_torch(ttnn.prod_bw(tgrad, tv, dim=-1)[0]).tolist() == [[[[2.0, 1.0], [4.0, 3.0]]]]
    assert ttnn.to_torch(ttnn.prod_bw(tgrad, tv)[0]).tolist() == [[[[24.0, 12.0], [8.0, 6.0]]]]


def test_ternary_assign_and_experimental_backward_ops(device):
    a, b, c, g = (ttnn.from_torch(torch.tensor([[v, 2.0]]), dtype=ttnn.float32, device=device)
                  for v in (1.0, 3.0, 4.0, 1.0))
    grads = ttnn.addcmul_bw(g, a, b, c, 0.5)
    assert [ttnn.to_torch(t)[0, 0].item() for t in grads] == [1.0, 2.0, 1.5]
    assert len(ttnn.lerp_bw(g, a, b, 0.25)) == 2 and len(ttnn.lerp_bw(g, a, b, c)) == 3  # a number: no gradient
    cond = ttnn.from_torch(torch.tensor([[1.0, 0.0]]), dtype=ttnn.float32, device=device)
    on_a, on_b = (ttnn.to_torch(t)[0].tolist() for t in ttnn.where_bw(g, cond, a, b))
    assert on_a == [1.0, 0.0] and on_b == [0.0, 2.0]  # g is [1, 2]
    target = ttnn.from_torch(torch.zeros(1, 2), dtype=ttnn.float32, device=device)
    assert ttnn.assign_bw(g, a, input_a_grad=target)[0] is target and len(ttnn.assign_bw(g, a, b)) == 2
    fused = ttnn.experimental.gelu_bw(g, a)  # the fused op returns a tensor, not a list
    x = torch.tensor([[1.0, 2.0]], requires_grad=True)
    torch.nn.functional.gelu(x).backward(torch.tensor([[1.0, 2.0]]))
    assert isinstance(fused, ttnn.Tensor) and torch.allclose(ttnn.to_torch(fused), x.grad)


def test_a_host_block_float_tensor_stays_tile_when_asked_for_row_major_as_tt_nn_host_to_layout(device):
    t = ttnn.Tensor(torch.ones(32, 32, dtype=torch.bfloat16), ttnn.bfloat8_b)
    with pytest.warns(UserWarning, match="was not executed"):
        same = t.to(ttnn.ROW_MAJOR_LAYOUT)
    assert same is t and same.layout == ttnn.TILE
    assert torch.equal(same.to_torch().float(), torch.ones(32, 32))


# -- matmul, reductions, shapes ----------------------------------------------------------------------------------


def test_addmm_is_beta_input_plus_alpha_mat1_at_mat2_run_as_tt_nn_composite(device):
    g = torch.Generator().manual_seed(0)
    inp, m1, m2 = torch.randn(32, 64, generator=g), torch.randn(32, 96, generator=g), torch.randn(96, 64, generator=g)
    ti, t1, t2 = (ttnn.from_torch(v, dtype=ttnn.float32, layout=ttnn.TILE, device=device) for v in (inp, m1, m2))
    out = ttnn.addmm(ti, t1, t2, alpha=0.5, beta=2.0)
    torch.testing.assert_close(ttnn.to_torch(out), torch.addmm(inp, m1, m2, alpha=0.5, beta=2.0), rtol=1e-2, atol=1e-2)
    assert out.memory_config() == ttnn.DRAM_MEMORY_CONFIG
    with pytest.raises(RuntimeError, match="alpha parameter cannot be 0"):
        ttnn.addmm(ti, t1, t2, alpha=0.0)
    with pytest.raises(RuntimeError, match="input_tensor must have shape matching"):
        ttnn.addmm(t1, t1, t2)
    into = ttnn.from_torch(torch.zeros(32, 64), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert ttnn.addmm(ti, t1, t2, optional_output_tensor=into) is into


def test_cumsum_writes_into_out_and_shapes_compare_equal_to_lists(device):
    t = ttnn.from_torch(torch.ones(2, 3), dtype=ttnn.float32, device=device)
    out = ttnn.from_torch(torch.zeros(2, 3), dtype=ttnn.float32, device=device)
    assert ttnn.cumsum(t, 1, out=out) is out and ttnn.to_torch(out).tolist() == [[1, 2, 3], [1, 2, 3]]
    assert out.shape == [2, 3] and out.shape != [3, 2] and out.shape == (2, 3) and ttnn.Shape([]) == []
    assert hash(ttnn.Shape([2, 3])) == hash((2, 3))
    assert ttnn.has_storage_type_of(t, ttnn.DEVICE_STORAGE_TYPE)


def test_gcd_and_lcm_take_int32_tensors_as_tt_nn(device):
    a = torch.tensor([[12, -18, 0, 7]], dtype=torch.int32)
    b = torch.tensor([[8, 12, 5, -3]], dtype=torch.int32)
    ta, tb = (ttnn.from_torch(v, dtype=ttnn.int32, layout=ttnn.TILE, device=device) for v in (a, b))
    assert ttnn.to_torch(ttnn.gcd(ta, tb)).tolist() == torch.gcd(a, b).tolist()
    assert ttnn.to_torch(ttnn.lcm(ta, tb)).tolist() == torch.lcm(a, b).tolist()
    with pytest.raises(TypeError, match="takes ttnn.int32"):
        ttnn.gcd(ttnn.from_torch(torch.ones(1, 4), layout=ttnn.TILE, device=device), tb)


# -- ttnn.operations: the Python modules tt-metal's matmul and pool tests import from ---------------------------


def test_ttnn_operations_is_a_package_whose_modules_import_by_name():
    import importlib

    from device_sim.compat import install_as_ttnn

    install_as_ttnn()
    pool = importlib.import_module("ttnn.operations.pool")
    acts = importlib.import_module("ttnn.operations.activations")
    assert pool is ttnn.operations.pool and acts is ttnn.operations.activations
    assert ttnn.operations.moreh.norm is ttnn.moreh_norm
    relu6 = acts.get_golden_function_for_activation("relu6")
    assert relu6(torch.tensor([-1.0, 7.0])).tolist() == [0.0, 6.0]
    silu = acts.get_golden_function_for_activation(ttnn.UnaryWithParam(ttnn.UnaryOpType.SILU))
    assert silu is torch.nn.functional.silu and acts.get_golden_function_for_activation(None) is None
    with pytest.raises(RuntimeError, match="not supported as activation"):
        acts.get_golden_function_for_activation(ttnn.UnaryOpType.ERF)


def test_golden_maxpool2d_gives_indices_into_the_unpadded_image():
    from device_sim.operations.pool import golden_maxpool2d

    x = torch.arange(16.0).reshape(1, 4, 4, 1)  # NHWC, one channel: the max of each window is its last element
    out, idx = golden_maxpool2d(x, 1, 4, 4, 1, [2, 2], [2, 2], [1, 1], [1, 1], return_indices=True)
    want, want_idx = torch.nn.functional.max_pool2d(x.permute(0, 3, 1, 2), 2, 2, 1, return_indices=True)
    assert torch.equal(out.flatten(), want.flatten()) and torch.equal(idx.flatten(), want_idx.flatten())


def test_tensor_spec_sharding_builders_round_shards_to_the_layout_as_tt_nn(device):
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(3, 0))})
    spec = ttnn.TensorSpec((4, 40, 70), ttnn.bfloat16, ttnn.TILE_LAYOUT)
    across = spec.sharded_across_dims([0], grid)  # dim 0 cut to 1; the rest padded (64 x 96), tile-aligned
    assert across.memory_config.nd_shard_spec.shard_shape == (1, 64, 96) and across.memory_config.is_sharded()
    assert spec.sharded_across_dims_except([2], grid).memory_config.nd_shard_spec.shard_shape == (1, 32, 96)
    rm = ttnn.TensorSpec((4, 40, 70), ttnn.bfloat16, ttnn.ROW_MAJOR_LAYOUT)
    assert rm.sharded((1, 37, 37), grid).memory_config.nd_shard_spec.shard_shape == (1, 37, 64)  # 64 B of bfloat16
    assert rm.sharded((1, 37, 37), grid, ttnn.ShardShapeAlignment.NONE).memory_config.nd_shard_spec.shard_shape == \
        (1, 37, 37)
    assert rm.height_sharded(grid).memory_config.nd_shard_spec.shard_shape == (40, 70)  # 160 rows over 4 cores
    t = ttnn.from_torch(torch.ones(4, 40, 70), layout=ttnn.TILE, device=device, memory_config=across.memory_config)
    assert torch.equal(ttnn.to_torch(t), torch.ones(4, 40, 70, dtype=torch.bfloat16))


def test_moves_into_and_out_of_an_nd_sharded_config_keep_the_values(device):
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(3, 0))})
    nd = ttnn.MemoryConfig(ttnn.BufferType.L1, ttnn.NdShardSpec([1, 32, 64], grid))
    x = torch.randn(4, 32, 64).bfloat16()
    t = ttnn.from_torch(x, layout=ttnn.TILE, device=device)
    sharded = ttnn.interleaved_to_sharded(t, nd)
    legacy = ttnn.to_memory_config(t, ttnn.create_sharded_memory_config(
        (4, 32, 64), ttnn.CoreGrid(y=1, x=4), ttnn.ShardStrategy.HEIGHT))
    for out in (sharded, ttnn.to_memory_config(legacy, nd), ttnn.sharded_to_interleaved(sharded)):
        assert torch.equal(ttnn.to_torch(out), x)


def test_cumprod_runs_as_cumsum_does_with_out_and_reverse_order(device):
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert ttnn.to_torch(ttnn.cumprod(t, 1)).tolist() == [[1.0, 2.0, 6.0, 24.0]]
    assert ttnn.to_torch(ttnn.cumprod(t, -1, reverse_order=True)).tolist() == [[24.0, 24.0, 12.0, 4.0]]
    out = ttnn.from_torch(torch.zeros(1, 4), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert ttnn.cumprod(t, 1, out=out) is out and ttnn.to_torch(out)[0, 3] == 24


def test_more_unary_ops_follow_tt_nn_goldens(device):
    x = torch.tensor([[-8.0, -0.5, 0.0, 2.0, 27.0]])
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert ttnn.to_torch(ttnn.cbrt(t)).tolist()[0][0] == pytest.approx(-2.0)  # sign kept: sgn(x) * |x| ** (1/3)
    assert ttnn.to_torch(ttnn.eqz(t)).tolist() == [[0.0, 0.0, 1.0, 0.0, 0.0]]
    assert ttnn.to_torch(ttnn.lez(t)).tolist() == [[1.0, 1.0, 1.0, 0.0, 0.0]]
    assert ttnn.to_torch(ttnn.threshold(t, 1.0, -3.0)).tolist() == [[-3.0, -3.0, -3.0, 2.0, 27.0]]
    assert ttnn.to_torch(ttnn.hardshrink(t, lambd=1.0)).tolist() == [[-8.0, 0.0, 0.0, 2.0, 27.0]]
    p = ttnn.from_torch(torch.tensor([[2.5, 3.0]]), dtype=ttnn.float32, device=device)
    want = sum(torch.lgamma(torch.tensor([2.5, 3.0]) - d) for d in (0, 0.5, 1.0, 1.5)) + 3.434189657547
    torch.testing.assert_close(ttnn.to_torch(ttnn.multigammaln(p))[0], want)


def test_prelu_takes_a_weight_per_channel_one_weight_or_a_number(device):
    x = torch.tensor([[[-2.0, 4.0]], [[-2.0, 4.0]]]).reshape(1, 2, 1, 2)  # two channels
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    w = ttnn.from_torch(torch.tensor([0.5, 0.25]), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert ttnn.to_torch(ttnn.prelu(t, w)).flatten().tolist() == [-1.0, 4.0, -0.5, 4.0]
    assert ttnn.to_torch(ttnn.prelu(t, [-1])).flatten().tolist() == [2.0, 4.0, 2.0, 4.0]
    assert ttnn.to_torch(ttnn.prelu(t, 0.5)).flatten().tolist() == [-1.0, 4.0, -1.0, 4.0]
    with pytest.raises(ValueError, match="one per channel"):
        ttnn.prelu(t, [1.0, 2.0, 3.0])


def test_glu_family_splits_the_last_dim_in_whole_tiles_and_gates_the_first_half(device):
    x = torch.randn(1, 1, 32, 128)
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    torch.testing.assert_close(ttnn.to_torch(ttnn.glu(t, -1)), torch.nn.functional.glu(x, -1), rtol=1e-4, atol=1e-4)
    a, b = x.split(64, -1)
    torch.testing.assert_close(ttnn.to_torch(ttnn.reglu(t, 3)), a * torch.relu(b), rtol=1e-4, atol=1e-4)
    with pytest.raises(RuntimeError, match="Split tensor dimension should be in full tile"):
        ttnn.swiglu(ttnn.from_torch(torch.randn(1, 1, 32, 96), layout=ttnn.TILE, device=device))
    with pytest.raises(RuntimeError, match="last dim"):
        ttnn.geglu(t, 2)


def test_moreh_arange_dot_and_cumsum_by_their_python_names(device):
    moreh = ttnn.operations.moreh
    a = moreh.arange(2.3, 15.3, 0.5, device)  # [1, N] TILE bfloat16; the writer truncates to bfloat16
    want = torch.tensor(2.3, dtype=torch.float32) + torch.tensor(0.5) * torch.arange(26, dtype=torch.float32)
    assert a.shape == [1, 26] and a.layout == ttnn.TILE
    assert torch.equal(ttnn.to_torch(a)[0].float(), (want.view(torch.int32) & -65536).view(torch.float32))
    rm = moreh.arange(0, 10, 3, device, untilize_out=True, dtype=ttnn.int32)
    assert rm.shape == [4] and ttnn.to_torch(rm).tolist() == [0, 3, 6, 9]
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        moreh.arange(0, 10, -1, device)
    v = ttnn.from_torch(torch.arange(4.0).reshape(1, 1, 1, 4), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert ttnn.to_torch(moreh.dot(v, v)).flatten().tolist() == [14.0]
    g = ttnn.from_torch(torch.ones(1, 1, 2, 3), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert ttnn.to_torch(moreh.cumsum(g, 3)).tolist() == [[[[1, 2, 3], [1, 2, 3]]]]
    assert ttnn.to_torch(moreh.cumsum_backward(g, 3)).tolist() == [[[[3, 2, 1], [3, 2, 1]]]]


def test_layer_norm_takes_the_welford_reciprocal_table_tt_nn_builds(device):
    grid = device.compute_with_storage_grid_size()
    cores = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(grid.x - 1, grid.y - 1))})
    recip = ttnn.create_layer_norm_reciprocals(device, cores, 24)
    assert recip.shape == [64, 24] and recip.dtype == ttnn.float32 and recip.is_sharded()
    assert ttnn.to_torch(recip)[5, :3].tolist() == [1.0, 0.5, pytest.approx(1 / 3)]
    x = torch.rand(32, 24)
    t = ttnn.from_torch(x, layout=ttnn.TILE, device=device)
    out = ttnn.layer_norm(t, program_config=ttnn.LayerNormDefaultProgramConfig(use_welford=True), recip_tensor=recip)
    torch.testing.assert_close(ttnn.to_torch(out).float(), torch.nn.functional.layer_norm(t.value.float(), [24]),
                               rtol=2e-2, atol=2e-2)
    with pytest.raises(TypeError, match="recip_tensor"):
        ttnn.rms_norm(t, recip_tensor=recip)


def test_adaptive_max_pool2d_and_the_pool_goldens_keep_tt_nn_dtypes(device):
    from device_sim.operations.pool import golden_adaptive_max_pool2d, golden_maxpool2d

    x = torch.randn(2, 8, 6, 32).bfloat16()
    t = ttnn.from_torch(x.reshape(1, 1, 96, 32), layout=ttnn.ROW_MAJOR, device=device)
    out = ttnn.adaptive_max_pool2d(t, 2, 8, 6, 32, [4, 3], dram_slice_config=None)
    want = golden_adaptive_max_pool2d(x, 2, 8, 6, 32, (4, 3))
    assert want.dtype == torch.bfloat16 and torch.equal(ttnn.to_torch(out), want)
    assert golden_maxpool2d(x, 2, 8, 6, 32, [2, 2], [2, 2], [0, 0], [1, 1]).dtype == torch.bfloat16
    assert ttnn.Op2DDRAMSliceHeight == ttnn.Conv2dDRAMSliceHeight


# -- conv2d: an input padded past in_channels (tests/ttnn's test_graph_capture) ---------------------


def test_conv2d_reads_only_in_channels_of_an_input_padded_past_them(device):
    from device_sim.operations.conv2d import Conv2dConfig  # `from ttnn.operations.conv2d import Conv2dConfig`

    x = torch.randn(1, 16, 6, 6)  # 16 channels for in_channels=3: TT-NN zero-pads the weights to match
    w = torch.randn(8, 3, 3, 3)
    nhwc = x.permute(0, 2, 3, 1).reshape(1, 1, 36, 16)
    out = ttnn.conv2d(input_tensor=ttnn.from_torch(nhwc, dtype=ttnn.float32, device=device),
                      weight_tensor=ttnn.from_torch(w, dtype=ttnn.float32), device=device, in_channels=3,
                      out_channels=8, batch_size=1, input_height=6, input_width=6, kernel_size=(3, 3),
                      padding=(1, 1), conv_config=Conv2dConfig(), dtype=ttnn.float32)
    ref = torch.nn.functional.conv2d(x[:, :3], w, padding=1).permute(0, 2, 3, 1).reshape(1, 1, 36, 8)
    torch.testing.assert_close(ttnn.to_torch(out).float(), ref, rtol=1e-2, atol=1e-2)


# -- tt_lib: tests/tt_eager's helpers import tt-metal's tt_lib, which imports ttnn._ttnn.deprecated ----------


def test_tt_lib_imports_its_deprecated_bindings_through_ttnn_ttnn(tmp_path):
    import subprocess
    import sys

    code = ("import device_sim; device_sim.install_as_ttnn()\n"
            "from ttnn._ttnn.deprecated import operations\n"
            "import ttnn._ttnn.deprecated.operations.primary\n"
            "print(operations.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "device_sim._ttnn.deprecated.operations", done.stderr


def test_a_norm_weight_one_tile_high_is_read_from_its_first_row(device):
    # tests/ttnn's test_rmsnorm pads gamma [1, 1, 1, W] to [1, 1, 32, W] with zeros (pad_weight) and tilizes it
    x = torch.rand(1, 1, 64, 64)
    gamma = torch.rand(1, 1, 1, 64)
    padded = torch.cat([gamma, torch.zeros(1, 1, 31, 64)], dim=2)
    tx = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    tile_high = ttnn.from_torch(padded, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    row = ttnn.from_torch(gamma.reshape(64), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=device)
    for norm in (ttnn.rms_norm, ttnn.layer_norm):
        assert torch.equal(ttnn.to_torch(norm(tx, weight=tile_high)), ttnn.to_torch(norm(tx, weight=row)))


def test_untilizing_a_bfloat8_b_tensor_on_device_gives_bfloat16(device):
    # untilize_device_operation.cpp: BFLOAT8_B has no row-major form; tests/ttnn's softmax tests untilize one
    t = ttnn.from_torch(torch.randn(1, 2, 24, 42), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
    for out in (ttnn.to_layout(t, ttnn.ROW_MAJOR_LAYOUT), ttnn.untilize(t),
                ttnn.untilize_with_unpadding(t, [0, 1, 23, 41])):
        assert (out.dtype, out.layout) == (ttnn.bfloat16, ttnn.ROW_MAJOR)
        assert torch.equal(ttnn.to_torch(out), ttnn.to_torch(t))


def test_a_softmax_mask_of_another_height_is_read_as_the_kernel_reads_it(device):
    x = torch.randn(2, 1, 128, 64)
    tx = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    rows = torch.randn(2, 1, 32, 64)  # one tile row per batch: its first row is added to every row
    out = ttnn.scale_mask_softmax(tx, 0.5, ttnn.from_torch(rows, dtype=ttnn.float32, layout=ttnn.TILE, device=device))
    torch.testing.assert_close(ttnn.to_torch(out), torch.softmax(x * 0.5 + rows[:, :, :1], -1), rtol=1e-2, atol=1e-3)
    causal = torch.randn(2, 1, 64, 64)  # is_causal_mask: 64 rows repeating down the input's 128
    out = ttnn.scale_mask_softmax(tx, 0.5, ttnn.from_torch(causal, dtype=ttnn.float32, layout=ttnn.TILE,
                                                           device=device), is_causal_mask=True)
    torch.testing.assert_close(ttnn.to_torch(out), torch.softmax(x * 0.5 + causal.repeat(1, 1, 2, 1), -1),
                               rtol=1e-2, atol=1e-3)


def test_sort_writes_into_preallocated_values_and_indices_and_checks_their_dtypes(device):
    x = torch.randn(1, 1, 32, 64)
    t = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    values, indices = ttnn.zeros_like(t), ttnn.zeros_like(t, dtype=ttnn.uint16)
    got = ttnn.sort(t, dim=-1, out=(values, indices))
    assert got[0] is values and got[1] is indices
    ref = torch.sort(ttnn.to_torch(t), dim=-1, stable=True)
    assert torch.equal(ttnn.to_torch(values), ref.values)
    assert torch.equal(ttnn.to_torch(indices).long(), ref.indices)
    with pytest.raises(RuntimeError, match="Output values tensor dtype must be the same as input tensor dtype"):
        ttnn.sort(t, out=(ttnn.zeros_like(t, dtype=ttnn.float32), indices))


def test_upsample_of_a_sharded_input_scales_its_shard_height(device):
    # upsample_common.cpp: nearest's output shard is the input shard's rows times scale_h * scale_w
    x = torch.randn(1, 8, 8, 32)
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 1))])
    cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
                            ttnn.ShardSpec(grid, (4, 32), ttnn.ShardOrientation.ROW_MAJOR))
    t = ttnn.to_memory_config(ttnn.from_torch(x, dtype=ttnn.bfloat16, device=device), memory_config=cfg)
    out = ttnn.upsample(t, (2, 3))
    assert out.memory_config().shard_spec.shape == (24, 32)
    ref = x.repeat_interleave(2, 1).repeat_interleave(3, 2)
    assert torch.equal(ttnn.to_torch(out).float(), ref.bfloat16().float())


def test_a_sub_device_manager_is_created_loaded_and_removed_as_on_a_mesh_device(device):
    grid = device.compute_with_storage_grid_size()
    rows = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 1), ttnn.CoreCoord(grid.x - 1, grid.y - 1))})
    manager = device.create_sub_device_manager([ttnn.SubDevice([rows])], 0)
    device.load_sub_device_manager(manager)
    device.set_sub_device_stall_group([ttnn.SubDeviceId(0)])
    with pytest.raises(ValueError, match="name no sub-device of the loaded manager, which has 1"):
        device.set_sub_device_stall_group([ttnn.SubDeviceId(1)])
    with pytest.raises(RuntimeError, match="is loaded; clear_loaded_sub_device_manager"):
        device.remove_sub_device_manager(manager)
    a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert ttnn.to_torch(ttnn.linear(a, a, sub_device_id=ttnn.SubDeviceId(0)))[0, 0] == 32
    device.reset_sub_device_stall_group()
    device.clear_loaded_sub_device_manager()
    device.remove_sub_device_manager(manager)
    with pytest.raises(RuntimeError, match="was not created on this device"):
        device.load_sub_device_manager(manager)
    # the names model code writes in annotations (deepseek_v3's config_dataclass.py)
    assert ttnn._ttnn.device.SubDeviceId is ttnn.SubDeviceId and ttnn._ttnn.operations.ccl.Topology is ttnn.Topology
    assert ttnn._ttnn.global_semaphore.global_semaphore is ttnn.GlobalSemaphore


def test_pad_to_tile_keeps_the_logical_shape_and_puts_the_value_in_the_tile_padding(device):
    # tt-metal's moreh/cumsum tests pad host tensors with NaN, tilize them and compare the logical result
    x = torch.randint(-2, 3, (32, 33)).bfloat16()
    t = ttnn.Tensor(x, ttnn.bfloat16).pad_to_tile(float("nan")).to(ttnn.TILE_LAYOUT).to(device)
    assert t.shape == (32, 33) and torch.equal(ttnn.to_torch(t), x)
    padded = t.to_torch_with_padded_shape()
    assert padded.shape == (32, 64) and padded[:, 33:].isnan().all()


def test_tile_reshape_map_mode_names_the_modes_reshape_takes(device):
    # tests/ttnn's test_reshape.py reads ttnn.TileReshapeMapMode at import (a parametrize list)
    t = ttnn.from_torch(torch.randn(1, 8, 8), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    for mode in (ttnn.TileReshapeMapMode.CACHE, ttnn.TileReshapeMapMode.RECREATE):
        assert ttnn.reshape(t, (1, 16, 4), reshape_tile_mode=mode).shape == (1, 16, 4)


def test_squeeze_checks_its_dims_as_squeeze_cpp_does(device):
    scalar = ttnn.from_torch(torch.tensor(2.0), dtype=ttnn.bfloat16, device=device)
    assert ttnn.squeeze(scalar, 0) is scalar and ttnn.squeeze(scalar, [-1]) is scalar
    t = ttnn.from_torch(torch.rand(1, 1, 1, 64), dtype=ttnn.bfloat16, device=device)
    for dims, match in (([4], "Dimension out of range"), ([-5], "Dimension out of range"),
                        ([0, -4], "appears multiple times")):
        with pytest.raises(RuntimeError, match=match):
            ttnn.squeeze(t, dims)
    assert ttnn.squeeze(t, [-4, -3]).shape == (1, 64)


def test_an_empty_slice_is_an_empty_tensor(device):
    # slice.cpp returns ttnn::empty for a result with a 0-size dim (tests/ttnn's test_slice_negative_ends)
    for layout in (ttnn.ROW_MAJOR, ttnn.TILE):
        t = ttnn.from_torch(torch.randn(32, 32, 32, 32), dtype=ttnn.bfloat16, layout=layout, device=device)
        assert ttnn.to_torch(t[0:-32, :, :, :]).shape == (0, 32, 32, 32)


def test_bias_gelu_is_gelu_of_the_sum(device):
    # tests/ttnn's test_binary_scalar reads ttnn.bias_gelu at import, with an output_tensor= and a scalar
    x = torch.randn(32, 32)
    a = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    out = ttnn.from_torch(torch.zeros(32, 32), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    ttnn.bias_gelu(a, 3.0, output_tensor=out)
    torch.testing.assert_close(ttnn.to_torch(out), torch.nn.functional.gelu(x + 3.0), rtol=1e-5, atol=1e-5)


def test_rdiv_relu_max_and_identity_follow_tt_nn_goldens(device):
    x = torch.empty(1, 1, 32, 32).uniform_(-100, 100)
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    for mode in (None, "trunc", "floor"):
        torch.testing.assert_close(ttnn.to_torch(ttnn.rdiv(t, 3.5, rounding_mode=mode)),
                                   torch.div(torch.full_like(x, 3.5), x, rounding_mode=mode))
    assert torch.equal(ttnn.to_torch(ttnn.relu_max(t, 5.0)), torch.relu(torch.clamp(x, max=5.0)))
    assert torch.equal(ttnn.to_torch(ttnn.identity(t)), x)


def test_linear_takes_tt_nn_activation_names_gelu_approx_and_mish(device):
    # string_to_unary_with_param (unary_op_utils.cpp): "gelu_approx" is GELU with its approximation flag set
    x, w = torch.randn(32, 64), torch.randn(64, 32)
    a = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(w, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    plain = ttnn.to_torch(ttnn.linear(a, b))
    torch.testing.assert_close(ttnn.to_torch(ttnn.linear(a, b, activation="mish")),
                               torch.nn.functional.mish(plain), rtol=1e-4, atol=1e-4)
    approx = ttnn.to_torch(ttnn.linear(a, b, activation="gelu_approx"))
    torch.testing.assert_close(approx, torch.nn.functional.gelu(plain), rtol=0.05, atol=0.05)


def test_logit_and_rpow_follow_tt_nn_goldens(device):
    x = torch.empty(1, 1, 32, 32).uniform_(-1.0, 1.1)
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    # eps > 0.5 clamps to [1 - eps, eps] by hand, as TT-NN's golden (torch's clamp with lo > hi is undefined)
    clamped = torch.clamp(x, 0.2, 0.8)
    torch.testing.assert_close(ttnn.to_torch(ttnn.logit(t, eps=0.8)), torch.log(clamped / (1 - clamped)))
    torch.testing.assert_close(ttnn.to_torch(ttnn.logit(t, eps=0.1)), torch.special.logit(x, eps=0.1))
    torch.testing.assert_close(ttnn.to_torch(ttnn.rpow(t, 3.0)), torch.pow(3.0, x))


def test_xielu_is_tt_nn_goldens_piecewise_activation(device):
    x = torch.linspace(-4, 4, 1024).reshape(1, 1, 32, 32)
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    neg = 0.1 * torch.expm1(torch.clamp(x, max=-1e-6)) - 0.1 * x + 0.5 * x
    ref = torch.where(x > 0, 0.3 * x * x + 0.5 * x, neg)
    torch.testing.assert_close(ttnn.to_torch(ttnn.xielu(t, alpha_p=0.3, alpha_n=0.1)), ref)


def test_typecast_takes_tt_nns_input_dtype_output_dtype_overload(device):
    # test_eltwise_typecast.py: ttnn.typecast(t, input_dtype, output_dtype), the input dtype checked (typecast.cpp)
    t = ttnn.from_torch(torch.tensor([[1.25, -3.0]]), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    out = ttnn.typecast(t, ttnn.float32, ttnn.int32)
    assert out.dtype == ttnn.int32 and ttnn.to_torch(out).tolist() == [[1, -3]]
    with pytest.raises(RuntimeError, match="input dtype and input tensor's dtype provided should match"):
        ttnn.typecast(t, ttnn.bfloat16, ttnn.int32)


def test_interleaved_to_sharded_takes_the_grid_as_an_x_y_pair(device):
    # test_reduce.py, test_matmul_1d_2d.py: interleaved_to_sharded(t, (x, y), shard_shape, scheme, orientation)
    t = ttnn.from_torch(torch.rand(32, 256), layout=ttnn.TILE, device=device)
    s = ttnn.interleaved_to_sharded(t, (4, 2), [32, 32], ttnn.TensorMemoryLayout.WIDTH_SHARDED,
                                    ttnn.ShardOrientation.COL_MAJOR)
    grid = s.memory_config().shard_spec.grid.bounding_box()
    assert (grid.end.x, grid.end.y) == (3, 1) and torch.equal(ttnn.to_torch(s), ttnn.to_torch(t))


def test_prod_writes_over_dims_into_an_output_tensor_as_tt_nns_second_overload(device):
    # test_prod_nc.py: ttnn.prod(input, output, dims=[d]) multiplies over N or C into `output`, in place
    x = torch.randint(-3, 4, (2, 3, 32, 32)).float()
    t = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    out = ttnn.from_torch(torch.zeros(2, 1, 32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert ttnn.prod(t, out, dims=[1]) is out
    assert torch.equal(ttnn.to_torch(out).float(), torch.prod(x, 1, keepdim=True).bfloat16().float())
    with pytest.raises(TypeError, match="give dims"):
        ttnn.prod(t, out)


def test_assign_copies_into_a_memory_config_or_into_a_second_tensor(device):
    # test_copy.py: ttnn.assign(t, memory_config=...) and assign(a, b) (copy_nanobind.cpp binds both)
    x = torch.arange(64.0).reshape(2, 32)
    t = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    y = ttnn.assign(t, memory_config=ttnn.L1_MEMORY_CONFIG, dtype=ttnn.float32)
    assert y.memory_config().buffer_type == ttnn.BufferType.L1 and y.dtype == ttnn.float32
    b = ttnn.from_torch(torch.zeros(2, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert ttnn.assign(t, b) is b and torch.equal(ttnn.to_torch(b).float(), x)


def test_roll_takes_its_three_overloads_and_checks_as_roll_cpp(device):
    x = torch.arange(2 * 3 * 32 * 32.0).reshape(2, 3, 32, 32)
    t = ttnn.from_torch(x, layout=ttnn.TILE, device=device)
    assert torch.equal(ttnn.to_torch(ttnn.roll(t, [1, -2], [2, 3])), torch.roll(x, [1, -2], [2, 3]))
    assert torch.equal(ttnn.to_torch(ttnn.roll(t, 5, 1)), torch.roll(x, 5, 1))
    assert torch.equal(ttnn.to_torch(ttnn.roll(t, 7)), torch.roll(x, 7))  # no dim: the flattened tensor
    with pytest.raises(RuntimeError, match="to have the same length"):
        ttnn.roll(t, [1, 2], [3])
    with pytest.raises(RuntimeError, match="Invalid dimension index 4"):
        ttnn.roll(t, [1], [4])


def test_uniform_fills_its_input_in_place_truncating_bfloat16_draws_below_to(device):
    # test_uniform.py: ttnn.uniform(t, from, to, seed) with max < to in the tensor's dtype; TT-NN's writer keeps a
    # float32 draw's upper 16 bits, so a draw just under `to` never rounds up to it
    t = ttnn.from_torch(torch.ones(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert ttnn.uniform(t, 2.1, 9, 5) is t
    v = ttnn.to_torch(t)  # ~18 of the 4096 draws lie in [8.97, 9), which round-to-nearest would make 9
    assert torch.tensor(2.1, dtype=torch.bfloat16) <= v.min() and v.max() < 9
    assert [p.name for p in launched(device, lambda: ttnn.uniform(t))] == ["UniformDeviceOperation"]
    with pytest.raises(RuntimeError, match="from param must be < to"):
        ttnn.uniform(t, 1.0, 1.0)


def test_binary_composites_the_eltwise_tests_call(device):
    # test_binary_fp32.py, test_binaryng_fp32.py, test_div_ops.py, test_binaryng_ND.py (ttnn/operations/binary.py)
    a, b = torch.tensor([[1.0, 2.0, -0.5, 3.0]]), torch.tensor([[0.0, 2.0, 3.0, -1.0]])
    ta, tb = (ttnn.from_torch(v, dtype=ttnn.float32, layout=ttnn.TILE, device=device) for v in (a, b))
    torch.testing.assert_close(ttnn.to_torch(ttnn.div_no_nan(ta, tb)), torch.tensor([[0.0, 1.0, -0.5 / 3, -3.0]]))
    torch.testing.assert_close(ttnn.to_torch(ttnn.logaddexp(ta, tb)), torch.logaddexp(a, b))
    torch.testing.assert_close(ttnn.to_torch(ttnn.ldexp(ta, tb)), torch.ldexp(a, b))
    torch.testing.assert_close(ttnn.to_torch(ttnn.addalpha(ta, tb, 2.0)), torch.add(a, b, alpha=2.0))
    torch.testing.assert_close(ttnn.to_torch(ttnn.subalpha(ta, tb, 0.5)), torch.sub(a, b, alpha=0.5))


def test_comparison_goldens_give_torch_bool_while_the_device_gives_ones_and_zeros(device):
    # test_binary_comp_fp32.py asserts golden.dtype == torch.bool: TT-NN's goldens are torch.eq, torch.gt, ...
    a = ttnn.from_torch(torch.tensor([[1.0, 2.0]]), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.tensor([[1.0, 3.0]]), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    golden = ttnn.get_golden_function(ttnn.eq)(torch.tensor([[1.0, 2.0]]), torch.tensor([[1.0, 3.0]]))
    assert golden.dtype == torch.bool and golden.tolist() == [[True, False]]
    out = ttnn.eq(a, b)
    assert out.dtype == ttnn.float32 and ttnn.to_torch(out).tolist() == [[1.0, 0.0]]


def test_experimental_broadcast_to_is_one_bcast_to_program_and_checks_as_bcast_to_cpp(device):
    # test_broadcast_to.py: ttnn.experimental.broadcast_to(t, ttnn.Shape(...), memory_config=..., output=...)
    x = torch.rand(1, 1, 32, 64)
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    names = [p.name for p in launched(device, lambda: ttnn.experimental.broadcast_to(t, ttnn.Shape([2, 3, 32, 64])))]
    assert names == ["BcastToOperation"]
    out = ttnn.from_torch(torch.zeros(2, 1, 32, 64), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert ttnn.experimental.broadcast_to(t, ttnn.Shape([2, 1, 32, 64]), output=out) is out
    assert torch.equal(ttnn.to_torch(out), x.broadcast_to(2, 1, 32, 64))
    with pytest.raises(RuntimeError, match="cannot be broadcast to output dimension -1"):
        ttnn.experimental.broadcast_to(t, ttnn.Shape([1, 1, 32, 32]))


def test_index_fill_fills_the_named_slices_of_a_row_major_tensor(device):
    # test_index_fill.py: ttnn.index_fill(t, dim, index, value), index a UINT32 1-D tensor (from_torch of int64)
    x = torch.rand(3, 4, 5)
    t = ttnn.from_torch(x, device=device)
    i = ttnn.from_torch(torch.tensor([0, 2]), device=device)
    assert i.dtype == ttnn.uint32
    out = ttnn.index_fill(t, 1, i, 2.5)
    assert torch.equal(ttnn.to_torch(out), torch.index_fill(x, 1, torch.tensor([0, 2]), 2.5))
    assert [p.name for p in launched(device, lambda: ttnn.index_fill(t, 0, i, 1.0))] == ["IndexFillOperation"]
    with pytest.raises(RuntimeError, match="Value type must match input tensor dtype"):
        ttnn.index_fill(t, 0, i, 3)
    with pytest.raises(RuntimeError, match="Only supporting row major layout"):
        ttnn.index_fill(ttnn.to_layout(t, ttnn.TILE), 0, i, 1.0)


def test_a_2d_mcast_matmul_takes_a_batched_b_height_sharded_in_dram(device):
    # nightly test_matmul.py: MatmulMultiCoreReuseMultiCastProgramConfig without fused_activation (None by default)
    # and a B of whole [K, N] matrices per DRAM bank (matmul_device_operation.cpp allows HEIGHT_SHARDED B there)
    cfg = ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(
        compute_with_storage_grid_size=(2, 2), in0_block_w=1, out_subblock_h=1, out_subblock_w=1, per_core_M=1,
        per_core_N=1, transpose_mcast=False, fuse_batch=False)
    assert cfg.fused_activation is None
    a, b = torch.randn(4, 32, 32), torch.randn(4, 32, 32)
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(3, 0))])
    spec = ttnn.ShardSpec(grid, [32, 32], ttnn.ShardOrientation.ROW_MAJOR)
    in1 = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.DRAM, spec)
    ta = ttnn.from_torch(a, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    tb = ttnn.from_torch(b, dtype=ttnn.float32, layout=ttnn.TILE, device=device, memory_config=in1)
    torch.testing.assert_close(ttnn.to_torch(ttnn.matmul(ta, tb, program_config=cfg)), a @ b, rtol=0.02, atol=0.05)
    with pytest.raises(RuntimeError, match="fuse_batch"):
        ttnn.matmul(ta, tb, program_config=ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(
            compute_with_storage_grid_size=(2, 2), in0_block_w=1, out_subblock_h=1, out_subblock_w=1, per_core_M=4,
            per_core_N=1, transpose_mcast=False, fuse_batch=True))


def test_isclose_takes_rtol_atol_equal_nan_and_its_golden_gives_bool(device):
    # test_binary_composite.py: ttnn.isclose(a, b, rtol=, atol=, equal_nan=) against torch.isclose
    a, b = torch.tensor([[1.0, 2.0, float("nan")]]), torch.tensor([[1.05, 3.0, float("nan")]])
    ta, tb = (ttnn.from_torch(v, dtype=ttnn.float32, layout=ttnn.TILE, device=device) for v in (a, b))
    assert ttnn.to_torch(ttnn.isclose(ta, tb, rtol=0.1, atol=0.0, equal_nan=True)).tolist() == [[1.0, 0.0, 1.0]]
    assert ttnn.get_golden_function(ttnn.isclose)(a, b, rtol=0.1, atol=0.0).tolist() == [[True, False, False]]


def test_relu_min_and_frac_follow_tt_nns_goldens(device):
    # test_unary.py / test_math.py callers: relu_min(x, lower_limit) = max(x, lower_limit); frac = x - trunc(x)
    x = torch.tensor([[-1.75, 0.25, 2.5]])
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert ttnn.to_torch(ttnn.relu_min(t, 0.5)).tolist() == [[0.5, 0.5, 2.5]]
    assert ttnn.to_torch(ttnn.frac(t)).tolist() == [[-0.75, 0.25, 0.5]]


def test_bitwise_shifts_take_two_int32_tensors(device):
    # test_binary_uint16.py, test_binaryng_fp32.py, test_binary_composite.py: bitwise_left/right_shift(a, b)
    a, b = torch.tensor([[1, -8, 5]], dtype=torch.int32), torch.tensor([[3, 1, 0]], dtype=torch.int32)
    ta, tb = (ttnn.from_torch(v, dtype=ttnn.int32, layout=ttnn.TILE, device=device) for v in (a, b))
    assert ttnn.to_torch(ttnn.bitwise_left_shift(ta, tb)).tolist() == [[8, -16, 5]]
    assert ttnn.to_torch(ttnn.bitwise_right_shift(ta, tb)).tolist() == [[0, -4, 5]]


def test_in_place_comparisons_write_ones_and_zeros_into_the_first_input(device):
    # test_binary_composite.py: ttnn.lt_(a, b) / ttnn.logical_and_(a, b), against TT-NN's golden a.lt_(b)
    a, b = torch.tensor([[1.0, 2.0, 0.0]]), torch.tensor([[2.0, 2.0, 1.0]])
    ta, tb = (ttnn.from_torch(v, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device) for v in (a, b))
    assert ttnn.lt_(ta, tb) is ta and ttnn.to_torch(ta).tolist() == [[1.0, 0.0, 1.0]]
    assert ttnn.to_torch(ttnn.logical_and_(ta, tb)).tolist() == [[1.0, 0.0, 1.0]]
    assert ttnn.get_golden_function(ttnn.lt_)(a.bfloat16(), b.bfloat16()).dtype == torch.bfloat16  # a.lt_(b)


def test_floor_div_and_polyval_follow_tt_nns_goldens(device):
    # test_binary_composite.py: floor_div(t, t | number) = torch.floor_divide; polyval(t, coeffs) by Horner's rule
    x = torch.tensor([[-7.0, 7.5, 2.0]])
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert ttnn.to_torch(ttnn.floor_div(t, 2.0)).tolist() == [[-4.0, 3.0, 1.0]]
    assert ttnn.to_torch(ttnn.polyval(t, [1.0, 0.0, -1.0])).tolist() == [[48.0, 55.25, 3.0]]


def test_core_range_set_subtract_leaves_the_other_cores_as_ranges():
    # test_paged_fused_update_cache.py: the grid less the first cache's shard grid gives the second one's start
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 7))})
    first = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 0)),
                               ttnn.CoreRange(ttnn.CoreCoord(0, 1), ttnn.CoreCoord(1, 1))})
    left = grid.subtract(first)
    assert left.num_cores() == 64 - 10 and left.ranges()[0].start == ttnn.CoreCoord(2, 1)
    assert not left.intersects(first) and grid.subtract(grid).num_cores() == 0


def test_nextafter_steps_one_ulp_of_the_tensors_own_dtype(device):
    # test_nextafter.py, test_binary_composite.py: torch.nextafter on bfloat16 tensors steps a bfloat16 ULP
    a, b = torch.tensor([[1.0, 2.0]], dtype=torch.bfloat16), torch.tensor([[2.0, 0.0]], dtype=torch.bfloat16)
    ta, tb = (ttnn.from_torch(v, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device) for v in (a, b))
    assert torch.equal(ttnn.to_torch(ttnn.nextafter(ta, tb)), torch.nextafter(a, b))


def test_cumsum_checks_out_and_dim_as_accumulation_common_cpp(device):
    # test_cumsum.py / test_cumprod.py *_failing_cases expect RuntimeError (TT_FATAL) for each
    t = ttnn.from_torch(torch.rand(2, 32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with pytest.raises(RuntimeError, match="Preallocated output tensor must be on device"):
        ttnn.cumsum(t, 0, out=ttnn.zeros([2, 32, 32], dtype=ttnn.bfloat16))
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        ttnn.cumprod(t, 0, out=ttnn.zeros([2, 32, 1], dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device))
    with pytest.raises(RuntimeError, match="accumulation axis is 3"):
        ttnn.cumsum(t, 3)


# -- upsample, moreh and ttnn.graph (nightly test_upsample.py, moreh's nightly files, test_graph_capture.py) ---------


def test_upsample_takes_float_scales_through_the_float_factory_and_always_writes_row_major(device):
    # nightly test_upsample.py (108 cases): scale_factor (1.5, 1.5), (0.75, 0.75), (2.0, 1.5) ...; the output is
    # floor(H * scale) rows, each pixel the input's at floor(dst / scale) (torch's nearest), as
    # UpsampleNearestFloatProgramFactory computes it
    x = torch.randn(2, 8, 6, 32)
    t = ttnn.from_torch(x, dtype=ttnn.bfloat16, device=device)
    outs = []
    for scale in ((1.5, 1.5), (0.75, 0.75), (2.0, 1.5), 2.5):
        ref = torch.nn.functional.interpolate(x.bfloat16().permute(0, 3, 1, 2), scale_factor=scale)
        [program] = launched(device, lambda s=scale: outs.append(ttnn.upsample(t, s)))
        assert program.factory == "UpsampleNearestFloatProgramFactory"
        assert torch.equal(ttnn.to_torch(outs[-1]), ref.permute(0, 2, 3, 1))
    # a sharded input's float output: its N*OH*OW rows over the input's grid, its layout kept (block: the grid's rows)
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 3))])
    cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.BLOCK_SHARDED, ttnn.BufferType.L1,
                            ttnn.ShardSpec(grid, (24, 16), ttnn.ShardOrientation.ROW_MAJOR))
    out = ttnn.upsample(ttnn.to_memory_config(t, memory_config=cfg), (1.5, 1.5))
    assert out.shape == (2, 12, 9, 32) and out.memory_config().shard_spec.shape == (2 * 12 * 9 // 4, 16)
    # compute_output_specs: ROW_MAJOR and bfloat16 out of a TILE bfloat8_b input; a float scale of a TILE input is
    # refused (the float factory reads sticks), and so are a scale <= 0 and bilinear's non-integer scales
    tiled = ttnn.from_torch(torch.randn(1, 4, 32, 32), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
    out = ttnn.upsample(tiled, 2)
    assert (out.layout, out.dtype, out.shape) == (ttnn.ROW_MAJOR, ttnn.bfloat16, (1, 8, 64, 32))
    with pytest.raises(RuntimeError, match="Unsupported upsample configuration"):
        ttnn.upsample(tiled, 1.5)
    with pytest.raises(RuntimeError, match="scale_factor_w must be positive"):
        ttnn.upsample(t, (2, 0))
    with pytest.raises(RuntimeError, match="bilinear mode requires integer scale factors"):
        ttnn.upsample(t, 1.5, mode="bilinear")


# -- smallops: dtypes and small ops the sample's leftovers needed (issue 31) -------------------------------------------


def test_datatype_has_tt_nns_invalid_member_that_tt_metals_tests_filter_out_and_no_tensor_holds(device):
    # test_to_dtype.py, test_torch_conversion.py and test_tensor_to_list.py list the dtypes at import as
    # `[d for _, d in ttnn.DataType._member_map_.items() if d != ttnn.DataType.INVALID]` (types.hpp: INVALID = 8)
    assert int(ttnn.DataType.INVALID) == 8 and "INVALID" in ttnn.DataType._member_map_
    dtypes = [d for _, d in ttnn.DataType._member_map_.items() if d != ttnn.DataType.INVALID]
    assert ttnn.bfloat16 in dtypes and ttnn.int32 in dtypes and len(dtypes) == 8
    with pytest.raises(ValueError, match="dtype=DataType.INVALID holds no values"):
        ttnn.from_torch(torch.ones(2, 2), dtype=ttnn.DataType.INVALID, device=device)


def test_log_family_takes_fast_and_approximate_mode_which_skips_the_nan_fix_up_of_negative_inputs(device):
    # test_unary_ops_ttnn.py::test_unary_log_like_fast_approx_ttnn (64 cases) passes fast_and_approximate_mode= to
    # log, log1p, log2, log10; ckernel_sfpu_log.h's FAST_APPROX body is the precise one without its NaN / inf
    # fix-ups: positive inputs give the precise value, a negative one the polynomial of its mantissa, not NaN
    x = torch.tensor([[0.5, 1.0, 2.0, 10.0, 100.0, 0.0, -4.0, -0.5]])
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    for op, ref in ((ttnn.log, torch.log), (ttnn.log2, torch.log2), (ttnn.log10, torch.log10)):
        fast = ttnn.to_torch(op(t, fast_and_approximate_mode=True))
        assert torch.allclose(fast[0, :5], ref(x[0, :5]), rtol=1e-5, atol=1e-5)
        assert fast[0, 5] == float("-inf") and torch.isfinite(fast[0, 6:]).all()
        assert torch.isnan(ttnn.to_torch(op(t))[0, 6:]).all()  # the precise mode: NaN
    fast = ttnn.to_torch(ttnn.log1p(t, fast_and_approximate_mode=True))
    assert torch.allclose(fast[0, :5], torch.log1p(x[0, :5]), rtol=1e-5, atol=1e-5) and torch.isfinite(fast[0, 6])


def test_hardmish_truncates_a_bfloat16_result_as_sfpstore_does(device):
    # test_unary.py's hardmish cases (14): x * clamp(x / 2 + 1, 0, 1) in float32, a 16-bit result cut, not rounded,
    # to bfloat16 (hardmish_tile; TT-NN's golden does the same); -0.59375 gives -0.416015625, not -0.41796875
    x = torch.tensor([[-0.59375, -0.154296875, 1.5, -3.0]])
    out = ttnn.to_torch(ttnn.hardmish(ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)))
    assert out.tolist() == [[-0.416015625, -0.1416015625, 1.5, -0.0]]
    assert torch.equal(out, ttnn.get_golden_function(ttnn.hardmish)(x.bfloat16()))
    f32 = ttnn.to_torch(ttnn.hardmish(ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)))
    assert torch.equal(f32, x * torch.clamp(x * 0.5 + 1, 0, 1))


def test_moreh_sum_and_mean_reduce_a_dim_at_a_time_keeping_tile_dims_and_their_backwards_broadcast(device):
    # nightly test_moreh_sum.py / test_moreh_mean.py (303 cases): ttnn.operations.moreh.sum(x, dim, keepdim=False)
    # drops a reduced outer dim but keeps a reduced tile dim as 1 (filter_indices_with_last_two), one
    # MorehSumOperation a dim, the largest first; an int32 sum is exact
    x = torch.randint(-2, 3, (3, 2, 40, 50)).float()
    t = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    outs = []
    programs = launched(device, lambda: outs.append(ttnn.operations.moreh.sum(t, [0, 1, 3])))
    assert [p.factory for p in programs] == ["MorehSumWFactory", "MorehSumNCFactory", "MorehSumNCFactory"]
    assert outs[0].shape == (40, 1) and torch.equal(ttnn.to_torch(outs[0]).float(), x.sum((0, 1, 3))[:, None])
    assert ttnn.operations.moreh.sum(t, None).shape == (1, 1)
    i = ttnn.from_torch(x.long() * 1000, dtype=ttnn.int32, layout=ttnn.TILE, device=device)
    assert torch.equal(ttnn.to_torch(ttnn.operations.moreh.sum(i, 2, keepdim=True)).long(), (x.long() * 1000).sum(
        2, keepdim=True))
    m = ttnn.operations.moreh.mean(t, dim=[1, 2], keepdim=True)
    torch.testing.assert_close(ttnn.to_torch(m).float(), x.mean((1, 2), keepdim=True), rtol=2**-7, atol=1e-3)
    with pytest.raises(RuntimeError, match="divisor not supported yet"):
        ttnn.operations.moreh.mean(t, dim=1, divisor=4)
    # the gradients: output_grad broadcast back over the reduced dims (a dropped one put back), over their count
    g = ttnn.from_torch(torch.ones(3, 40, 1), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    got = ttnn.operations.moreh.sum_backward(g, input=t, dim=[1, 3])
    assert got.shape == (3, 2, 40, 50) and torch.equal(ttnn.to_torch(got).float(), torch.ones(3, 2, 40, 50))
    got = ttnn.operations.moreh.mean_backward(g, dim=[1, 3], input_grad_shape=[3, 2, 40, 50])
    torch.testing.assert_close(ttnn.to_torch(got).float(), torch.full((3, 2, 40, 50), 0.01), rtol=2**-7, atol=0)


def test_div_stores_a_bfloat16_zero_over_zero_as_inf_and_divides_float32_exactly_in_fast_mode(device):
    # test_binary_fp32.py::test_binary_div_edge_case_ttnn (6 cases): a bfloat16 0/0 is +inf on the device (the
    # SFPU's NaN in a 16-bit destination), a float32 one NaN; float32 operands take the SFPU's precise div under
    # fast_and_approximate_mode too (is_binary_sfpu_op), so 7 / 2.5 is 2.8, not the approximate reciprocal's
    a, b = torch.tensor([[0.0, 1.0, -1.0, 7.0]]), torch.tensor([[0.0, 0.0, 0.0, 2.5]])
    for dtype, zero_by_zero in ((ttnn.bfloat16, float("inf")), (ttnn.float32, float("nan"))):
        ta, tb = (ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE, device=device) for x in (a, b))
        for out in (ttnn.div(ta, tb), ttnn.divide(ta, tb), ttnn.div(ta, tb, rounding_mode="trunc")):
            want = torch.tensor([zero_by_zero, float("inf"), -float("inf")])
            torch.testing.assert_close(ttnn.to_torch(out).float()[0, :3], want, rtol=0, atol=0, equal_nan=True)
    fp32 = [ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device) for x in (a, b)]
    assert ttnn.to_torch(ttnn.div(*fp32, fast_and_approximate_mode=True))[0, 3] == torch.tensor(7.0) / 2.5


def test_convert_to_hwc_turns_width_sharded_chw_into_height_sharded_hwc_with_aligned_channels(device):
    # test_convert_to_hwc.py (261 cases): [1, B, C, HW] ROW_MAJOR width-sharded (L1 or DRAM) -> [1, 1, B*HW, C']
    # height-sharded, C' = C rounded up to 16 B; without memory_config the output takes the input's grid and B times
    # its shard width in rows; a DRAM input needs memory_config (convert_to_hwc.cpp's TT_FATAL)
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 0))})
    x = torch.randn(1, 2, 3, 64, dtype=torch.bfloat16)

    def sharded(buffer_type):
        cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, buffer_type,
                                ttnn.ShardSpec(grid, (6, 32), ttnn.ShardOrientation.ROW_MAJOR))
        return ttnn.Tensor(x, ttnn.bfloat16, device=device, layout=ttnn.ROW_MAJOR_LAYOUT, mem_config=cfg)

    [program] = launched(device, lambda: ttnn.experimental.convert_to_hwc(sharded(ttnn.BufferType.L1)))
    assert program.name == "ConvertToHWCDeviceOperation" and [cb.indices[0] for cb in program.cbs] == [0, 1, 2, 3, 4, 5]
    out = ttnn.experimental.convert_to_hwc(sharded(ttnn.BufferType.L1))
    spec = out.memory_config().shard_spec
    assert out.shape == (1, 1, 128, 8) and out.memory_config().memory_layout == ttnn.TensorMemoryLayout.HEIGHT_SHARDED
    assert tuple(spec.shape) == (64, 8) and spec.grid == grid
    hwc = ttnn.to_torch(out)
    assert torch.equal(hwc[..., :3], x.transpose(2, 3).reshape(1, 1, 128, 3)) and not hwc[..., 3:].any()
    with pytest.raises(RuntimeError, match="When input tensor is in DRAM, output memory_config must be explicitly"):
        ttnn.experimental.convert_to_hwc(sharded(ttnn.BufferType.DRAM))


def test_fast_reduce_nc_sums_outer_dims_one_program_a_dim_rounding_each_add_in_a_16_bit_destination(device):
    # test_fast_reduce_nc.py (63 cases): ttnn.experimental.fast_reduce_nc(x, dims=, output=, compute_kernel_config=)
    # sums dims 0 and 1 (kept as 1) in one FastReduceNC a dim; the kernel adds the dim's tiles into the destination
    # one by one, so a 16-bit destination rounds every partial sum (256 + 1 + 1 stays 256) and an fp32 one does not
    x = torch.ones(3, 1, 32, 32)
    x[0] = 256.0
    t = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    config = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4, fp32_dest_acc_en=False)
    out = ttnn.experimental.fast_reduce_nc(t, dims=[0], output=None, compute_kernel_config=config)
    assert out.shape == (1, 1, 32, 32) and out.memory_config() == ttnn.DRAM_MEMORY_CONFIG
    assert ttnn.to_torch(out).unique().tolist() == [256.0]
    fp32 = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4, fp32_dest_acc_en=True)
    assert ttnn.to_torch(ttnn.experimental.fast_reduce_nc(t, dims=[0], compute_kernel_config=fp32)).unique().tolist() \
        == [258.0]
    programs = launched(device, lambda: ttnn.experimental.fast_reduce_nc(
        ttnn.from_torch(torch.ones(2, 4, 32, 64), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device), dims=[1, 0]))
    assert [p.name for p in programs] == ["FastReduceNCDeviceOperation"] * 2
    assert [cb.num_pages for cb in programs[0].cbs] == [8, 1, 1, 2]  # dim 1 first: 4 tiles deep, granularity 4
    with pytest.raises(RuntimeError, match="fast_reduce_nc dims should not be empty"):
        ttnn.experimental.fast_reduce_nc(t, dims=[])


def test_slice_write_writes_into_a_strided_slice_of_the_output_in_place(device):
    # test_slice_write.py (16 cases, ranks 1 to 8, both layouts): slice_write(input, output, start, end, step)
    # writes input into output[start:end:step] in place and returns output; a TILE tensor goes through ROW_MAJOR
    # around SliceWriteDeviceOperation (slice_write.cpp); the slice's shape must be the input's
    dst = torch.zeros(2, 32, 64)
    out = ttnn.from_torch(dst, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    src = ttnn.from_torch(torch.ones(2, 11, 16), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    programs = launched(device, lambda: ttnn.experimental.slice_write(src, out, [0, 1, 3], [2, 32, 64], [1, 3, 4]))
    dst[0:2, 1:32:3, 3:64:4] = 1
    assert torch.equal(ttnn.to_torch(out).float(), dst)
    assert [p.name for p in programs] == ["UntilizeDeviceOperation", "UntilizeDeviceOperation",
                                          "SliceWriteDeviceOperation", "TilizeDeviceOperation"]
    assert len(programs[2].cbs) == 2  # the strided last dim reads the output's rows too (c_1)
    with pytest.raises(RuntimeError, match="Size of the slice being written"):
        ttnn.experimental.slice_write(src, out, [0, 0, 0], [2, 32, 64], [1, 1, 1])


def test_from_torch_takes_torchs_uint16_and_uint32_as_ttnn_uint16_and_uint32(device):
    # test_to_dtype.py (44 cases) and test_unary.py's bitcast cases make their inputs with torch.uint16 / uint32,
    # which tt-metal's utils_for_testing.py pairs with ttnn.uint16 / uint32, and read them back in those dtypes
    x = torch.tensor([[0, 7, 65535]], dtype=torch.uint16)
    t = ttnn.from_torch(x, device=device)
    assert t.dtype == ttnn.uint16 and torch.equal(ttnn.to_torch(t, dtype=torch.uint16), x)
    y = torch.tensor([[0, 7, 2**32 - 1]], dtype=torch.uint32)
    t = ttnn.from_torch(y, layout=ttnn.TILE, device=device)
    assert t.dtype == ttnn.uint32 and torch.equal(ttnn.to_torch(t, dtype=torch.uint32), y)


def test_bitcast_reads_the_bits_as_a_dtype_of_the_same_width(device):
    # test_unary.py / test_unary_shard.py's bitcast cases (34): uint16 <-> bfloat16, uint32 <-> float32,
    # uint32 <-> int32, the bits kept (TT-NN's golden: torch.Tensor.view); other pairs are refused
    x = torch.tensor([[1.0, -1.0, 3.140625]], dtype=torch.bfloat16)
    t = ttnn.from_torch(x, layout=ttnn.TILE, device=device)
    u16 = ttnn.bitcast(t, ttnn.uint16)
    assert u16.dtype == ttnn.uint16 and torch.equal(ttnn.to_torch(u16, dtype=torch.uint16), x.view(torch.uint16))
    assert torch.equal(ttnn.to_torch(ttnn.bitcast(u16, ttnn.bfloat16)), x)
    i = ttnn.from_torch(torch.tensor([[-1, 0, 2**31 - 1]], dtype=torch.int32), dtype=ttnn.int32, device=device)
    assert ttnn.to_torch(ttnn.bitcast(i, ttnn.uint32)).tolist() == [[2**32 - 1, 0, 2**31 - 1]]
    with pytest.raises(RuntimeError, match="supported pairs: UINT16 <-> BFLOAT16"):
        ttnn.bitcast(t, ttnn.float32)


def test_unary_chain_runs_the_chain_in_one_op_and_takes_a_final_typecasts_dtype(device):
    # test_binary_ng_typecast.py::test_binary_ng_typecast_lt and docs_examples' test_unary_chain: x - 0.99, LTZ,
    # TYPECAST(float32 -> bfloat16) is lt(x, 0.99) as 1.0 / 0.0 in bfloat16 (unary.cpp's unary_impl)
    x = torch.tensor([[0.5, 0.99, 1.5]])
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    chain = [ttnn.UnaryWithParam(ttnn.UnaryOpType.SUB_UNARY_SFPU, 0.99), ttnn.UnaryWithParam(ttnn.UnaryOpType.LTZ),
             ttnn.UnaryWithParam(ttnn.UnaryOpType.TYPECAST, ttnn.DataType.FLOAT32.value, ttnn.DataType.BFLOAT16.value)]
    [program] = launched(device, lambda: ttnn.unary_chain(t, chain))
    out = ttnn.unary_chain(t, chain)
    assert program.name == "UnaryDeviceOperation" and out.dtype == ttnn.bfloat16
    assert ttnn.to_torch(out).tolist() == [[1.0, 0.0, 0.0]]
    assert "ltz" not in ttnn.activations.NAMES  # a chain's step, not a name matmul's activation= takes


def test_typecast_to_uint8_keeps_the_low_byte_of_the_integer_part(device):
    # test_eltwise_typecast.py's uint8 outputs (inputs -257..257, golden torch's .to(torch.uint8)): Wormhole's
    # typecast kernels wrap modulo 256 (ckernel_sfpu_typecast.h's fp32_to_uint8 / uint_to_uint8), not clamp
    x = torch.tensor([[-257.5, -1.0, 0.7, 255.0, 256.0, 300.9]])
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert ttnn.to_torch(ttnn.typecast(t, ttnn.uint8)).tolist() == [[255, 255, 0, 255, 0, 44]]
    i = ttnn.from_torch(torch.tensor([[-257, 511]], dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.TILE,
                        device=device)
    assert ttnn.to_torch(ttnn.typecast(i, ttnn.int32, ttnn.uint8)).tolist() == [[255, 255]]


def test_sqrt_and_rsqrt_take_fast_and_approximate_mode_which_skips_the_negative_input_nan(device):
    # test_unary.py::test_unary_root_ops_ttnn (8 fast-mode cases, ULP <= 2 on [1, 100]): _calculate_sqrt_body_'s
    # FAST_APPROX runs the precise seed and refinements without the x < 0 -> NaN fix-up
    x = torch.tensor([[1.0, 2.0, 99.0, -4.0]])
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    for op, ref in ((ttnn.sqrt, torch.sqrt), (ttnn.rsqrt, torch.rsqrt)):
        fast = ttnn.to_torch(op(t, fast_and_approximate_mode=True))
        assert torch.equal(fast[0, :3], ref(x[0, :3])) and not torch.isnan(fast[0, 3])
        assert torch.isnan(ttnn.to_torch(op(t))[0, 3])


def test_erf_takes_fast_and_approximate_mode_as_the_sfpus_piecewise_polynomial(device):
    # test_unary_ops_ttnn.py::test_unary_erf_ttnn (3 fast cases) and docs_examples' test_erf: erf_tile<true> is
    # calculate_erf_body, a degree-4 polynomial on [0, 1) and on [1, 3), 1 beyond, odd in x
    x = torch.tensor([[-3.5, -0.5, 0.0, 0.5, 2.0, 3.5]])
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    fast = ttnn.to_torch(ttnn.erf(t, fast_and_approximate_mode=True))
    assert fast[0, 0] == -1.0 and fast[0, 5] == 1.0 and fast[0, 1] == -fast[0, 3]
    assert (fast - torch.erf(x)).abs().max() < 1e-3 and not torch.equal(fast, ttnn.to_torch(ttnn.erf(t)))


def test_a_fused_power_iterative_multiplies_a_non_negative_integer_times_and_refuses_other_exponents(device):
    # test_unary_pow.py::test_power_as_activation (POWER_ITERATIVE 0, 2, 3 pass, -3, 3.65, -4.2 xfail on TT-NN):
    # power_iterative_tile multiplies; unary_op_utils.cpp TT_FATALs on a negative or fractional exponent
    x = ttnn.from_torch(torch.full((16, 16), 1.5), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    for n, want in ((0, 1.0), (2, 9.0), (3, 27.0)):
        out = ttnn.add(x, x, activations=[ttnn.UnaryWithParam(ttnn.UnaryOpType.POWER_ITERATIVE, n)])
        assert ttnn.to_torch(out).unique().tolist() == [want]
    with pytest.raises(RuntimeError, match="POWER_ITERATIVE requires non-negative integer exponent"):
        ttnn.add(x, x, activations=[ttnn.UnaryWithParam(ttnn.UnaryOpType.POWER_ITERATIVE, 3.65)])


def test_remainder_by_zero_is_minus_inf_in_bfloat16_and_its_golden_takes_a_number_in_float32(device):
    # test_remainder.py (13 cases): TT-NN packs the NaN of x % 0 as -inf in bfloat16 (NaN in float32), and its golden
    # takes a bfloat16 tensor with a number in float32 (5.0 % 0.002 is 0.0019989, not the bfloat16 number's 0.0007)
    ones = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    zeros = ttnn.from_torch(torch.zeros(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert ttnn.to_torch(ttnn.remainder(ones, zeros)).unique().tolist() == [float("-inf")]
    f32 = [ttnn.from_torch(torch.full((32, 32), float(v)), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
           for v in (1, 0)]
    assert torch.isnan(ttnn.to_torch(ttnn.remainder(*f32))).all()
    x = torch.tensor([[5.0]], dtype=torch.bfloat16)
    golden = ttnn.get_golden_function(ttnn.remainder)(x, 0.002)
    t = ttnn.from_torch(x, layout=ttnn.TILE, device=device)
    assert torch.allclose(ttnn.to_torch(ttnn.remainder(t, 0.002)), golden, atol=1e-3, rtol=0) and golden > 0.0015


def test_get_golden_function_reads_the_golden_function_attribute_of_any_object(device):
    # test_math.py::test_recip and test_unary.py::test_sigmoid wrap the op in a class of their own with a
    # golden_function attribute; TT-NN's decorators.get_golden_function returns operation.golden_function
    class Wrapper:
        golden_function = staticmethod(torch.reciprocal)

        def __call__(self, t):
            return ttnn.reciprocal(t)

    assert ttnn.get_golden_function(Wrapper()) is torch.reciprocal
    assert ttnn.get_golden_function(ttnn.reciprocal) is ttnn.reciprocal.golden_function
    with pytest.raises(ValueError, match="is not a registered op"):
        ttnn.get_golden_function(object())


def test_bitwise_not_inverts_every_bit_of_an_int32_tensor_and_refuses_a_float_one(device):
    # test_unary.py / test_unary_ops_ttnn.py / docs_examples bitwise_not (11 cases): INT32 only (unary_nanobind.cpp)
    x = torch.tensor([[0, 1, -1, 2**31 - 1, -(2**31)]], dtype=torch.int32)
    t = ttnn.from_torch(x, dtype=ttnn.int32, layout=ttnn.TILE, device=device)
    assert torch.equal(ttnn.to_torch(ttnn.bitwise_not(t)), torch.bitwise_not(x))
    with pytest.raises(RuntimeError, match="takes an INT32 tensor"):
        ttnn.bitwise_not(ttnn.from_torch(torch.ones(2, 2), layout=ttnn.TILE, device=device))


def test_alt_complex_rotate90_turns_each_re_im_pair_into_minus_im_re(device):
    # test_unary.py::test_alt_complex_rotate90 (4 dtypes, torch.equal with TT-NN's golden): multiply by i
    x = torch.randn(32, 64)
    for dtype in (ttnn.float32, ttnn.bfloat16, ttnn.bfloat8_b):
        t = ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE, device=device)
        held = ttnn.to_torch(t)
        assert torch.equal(ttnn.to_torch(ttnn.alt_complex_rotate90(t)),
                           ttnn.get_golden_function(ttnn.alt_complex_rotate90)(held))


# -- sweep: tt-metal test files outside the sample (issue 31) ------------------------------------------------------


def test_distributed_layer_norm_gathers_sums_or_welford_moments_and_normalizes_the_full_row(device):
    # test_distributed_layernorm_exhaustive.py (451 cases): layer_norm_pre_all_gather on each chip's slice, the
    # stats gathered on the last dim, layer_norm_post_all_gather; the interleaved kernel writes [sum(x**2), sum(x)],
    # the Welford one (LayerNormDefaultProgramConfig(use_welford=True), recip_tensor required) [mean, variance]
    torch.manual_seed(0)
    x, gamma, beta = torch.randn(1, 1, 32, 256) * 3 + 2, torch.rand(256) + 0.5, torch.rand(256)
    want = torch.nn.functional.layer_norm(x, (256,), gamma, beta, 1e-6)
    slices = [ttnn.from_torch(s, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device) for s in x.chunk(2, -1)]
    welford = ttnn.LayerNormDefaultProgramConfig(use_welford=True)
    recips = ttnn.create_layer_norm_reciprocals(device, ttnn.CoreRangeSet(
        [ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 7))]), 128)
    for kw in ({}, dict(program_config=welford, recip_tensor=recips)):
        stats = [ttnn.layer_norm_pre_all_gather(s, **kw) for s in slices]
        assert stats[0].shape == (1, 1, 32, 64) and stats[0].dtype == ttnn.bfloat16
        gathered = ttnn.concat(stats, -1)
        out = [ttnn.layer_norm_post_all_gather(
            s, gathered, epsilon=1e-6, program_config=kw.get("program_config"),
            weight=ttnn.from_torch(g.reshape(1, 1, 1, -1), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device),
            bias=ttnn.from_torch(b.reshape(1, 1, 1, -1), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device))
            for s, g, b in zip(slices, gamma.chunk(2), beta.chunk(2))]
        got = torch.cat([ttnn.to_torch(o).float() for o in out], -1)
        assert torch.allclose(got, want, atol=0.06), (kw, (got - want).abs().max())
    first = ttnn.to_torch(ttnn.layer_norm_pre_all_gather(slices[0])).float()
    xs = x.chunk(2, -1)[0].bfloat16().float()
    assert torch.allclose(first[..., 0], xs.square().sum(-1), rtol=0.01)  # tile 0: sum(x**2)
    assert torch.allclose(first[..., 32], xs.sum(-1), rtol=0.01, atol=0.5)  # tile 1: sum(x)
    with pytest.raises(RuntimeError, match="requires recip_tensor"):
        ttnn.layer_norm_pre_all_gather(slices[0], program_config=welford)
    with pytest.raises(TypeError, match="'use_2d_core_grid'"):
        ttnn.layer_norm_pre_all_gather(slices[0], use_2d_core_grid=True)


def test_a_sharded_distributed_norm_stage_takes_means_on_the_grids_first_core_and_adds_the_residual_in_place(device):
    # test_distributed_layernorm_sharded.py: a width-sharded input with a LayerNormShardedMultiCoreProgramConfig runs
    # LayerNormDeviceOperation's PRE_ALL_GATHER stage: [E(x), E(x**2)] (RMS: [E(x**2)]), bfloat16, sharded on the
    # input grid's first core; a residual is written back over the input (FUSE_PRE_ADD). The post stage takes the
    # stats sharded on one core and averages every chip's means.
    torch.manual_seed(1)
    x, r = torch.randn(1, 1, 32, 512), torch.randn(1, 1, 32, 512)
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(1, 0), ttnn.CoreCoord(4, 0))])
    cfg = ttnn.create_sharded_memory_config(shape=(32, 128), core_grid=grid, strategy=ttnn.ShardStrategy.WIDTH,
                                            use_height_and_width_as_shard_shape=True)
    program = ttnn.LayerNormShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(8, 8), subblock_w=4,
                                                          block_h=1, block_w=4, inplace=False)
    sharded = lambda t: ttnn.to_memory_config(  # noqa: E731
        ttnn.from_torch(t, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device), memory_config=cfg)
    a = sharded(x)
    stats = ttnn.layer_norm_pre_all_gather(a, residual_input_tensor=sharded(r), program_config=program)
    s = stats.memory_config().shard_spec
    assert stats.shape == (1, 1, 32, 64) and s.shape == (32, 64) and s.grid.num_cores() == 1
    assert s.grid.bounding_box().start == ttnn.CoreCoord(1, 0)
    xr = (x.bfloat16().float() + r.bfloat16().float()).bfloat16().float()
    assert torch.equal(ttnn.to_torch(a).float(), xr)  # the pre-add, over the input's own shards
    got = ttnn.to_torch(stats).float()
    assert torch.allclose(got[..., 0], xr.mean(-1), atol=0.01)
    assert torch.allclose(got[..., 32], xr.square().mean(-1), rtol=0.01)
    rms = ttnn.to_torch(ttnn.rms_norm_pre_all_gather(sharded(x), program_config=program)).float()
    assert rms.shape == (1, 1, 32, 32) and torch.allclose(rms[..., 0], x.bfloat16().float().square().mean(-1),
                                                          rtol=0.01)
    one_core = ttnn.create_sharded_memory_config(shape=(32, 64), core_grid=ttnn.CoreRangeSet(
        [ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(0, 0))]), strategy=ttnn.ShardStrategy.WIDTH,
        use_height_and_width_as_shard_shape=True)
    y = ttnn.layer_norm_post_all_gather(sharded(x), ttnn.to_memory_config(stats, memory_config=one_core),
                                        epsilon=1e-6, program_config=program)
    ex, ex2 = got[..., 0:1], got[..., 32:33]
    want = (x.bfloat16().float() - ex) * torch.rsqrt(ex2 - ex.square() + 1e-6)
    assert y.is_sharded() and torch.allclose(ttnn.to_torch(y).float(), want, atol=0.05)
    with pytest.raises(RuntimeError, match="sharded on one core"):
        ttnn.layer_norm_post_all_gather(sharded(x), ttnn.to_memory_config(stats, memory_config=ttnn.DRAM),
                                        program_config=program)


def test_conv3d_runs_torchs_conv3d_on_prepared_weights_in_c_in_blocks(device):
    # test_conv3d.py (1551 cases): ttnn.Conv3dConfig, ttnn.experimental.prepare_conv3d_weights ([kD*kH*kW*C, C_out],
    # rows by C_in block) and ttnn.experimental.conv3d on an [N, D, H, W, C] ROW_MAJOR input, C padded to 32;
    # groups, "replicate" padding, stride and dilation as torch's nn.Conv3d
    torch.manual_seed(0)
    conv = torch.nn.Conv3d(12, 48, (3, 3, 3), stride=(1, 2, 1), padding=(0, 1, 1), dilation=(1, 1, 2), groups=2,
                           padding_mode="replicate")
    x = torch.randn(2, 12, 6, 7, 9)
    want = conv(x).detach()
    tt_x = ttnn.from_torch(torch.nn.functional.pad(x.permute(0, 2, 3, 4, 1), (0, 20)), device=device,
                           dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT)
    cfg = ttnn.Conv3dConfig(C_in_block=32, compute_with_storage_grid_size=device.compute_with_storage_grid_size())
    w = ttnn.experimental.prepare_conv3d_weights(weight_tensor=ttnn.from_torch(conv.weight.data, dtype=ttnn.bfloat16),
                                                 groups=2, C_in_block=32, alignment=32, device=device)
    assert w.shape == (27 * 32, 48) and w.device() is not None
    out = ttnn.experimental.conv3d(
        input_tensor=tt_x, weight_tensor=w, device=device, dtype=ttnn.bfloat16, output_channels=48,
        bias_tensor=ttnn.from_torch(conv.bias.data.reshape(1, -1), device=device, dtype=ttnn.bfloat16,
                                    layout=ttnn.TILE_LAYOUT),
        kernel_size=(3, 3, 3), stride=(1, 2, 1), padding=(0, 1, 1), dilation=(1, 1, 2), padding_mode="replicate",
        groups=2, config=cfg)
    got = ttnn.to_torch(out).float().permute(0, 4, 1, 2, 3)
    assert got.shape == want.shape and out.layout == ttnn.ROW_MAJOR_LAYOUT
    assert torch.corrcoef(torch.stack([got.flatten(), want.flatten()]))[0, 1] > 0.9999
    [program] = launched(device, lambda: ttnn.experimental.conv3d(
        input_tensor=tt_x, weight_tensor=w, device=device, dtype=ttnn.bfloat16, output_channels=48,
        kernel_size=(3, 3, 3), stride=(1, 2, 1), padding=(0, 1, 1), dilation=(1, 1, 2), groups=2, config=cfg))
    assert (program.name, program.factory) == ("Conv3dDeviceOperation", "Conv3dProgramFactory")
    with pytest.raises(RuntimeError, match="must be divisible by C_in_block"):
        ttnn.experimental.conv3d(input_tensor=tt_x, weight_tensor=w, device=device, dtype=ttnn.bfloat16,
                                 output_channels=48, kernel_size=(3, 3, 3), config=ttnn.Conv3dConfig(C_in_block=48))


def test_moreh_matmul_broadcasts_batches_and_its_backwards_sum_a_broadcast_operands_gradient(device):
    # nightly test_moreh_matmul.py / test_moreh_linear.py (296 cases): ttnn.operations.moreh.matmul with
    # transposes and batch dims that broadcast, a [1, 1] bias, and the backwards moreh_matmul_backward.cpp /
    # moreh_linear_backward.cpp compose: a gradient with fewer batch dims than the product is moreh_sum'ed into it
    def tt(v):
        return ttnn.from_torch(v, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)

    a, b = torch.randint(-2, 3, (3, 1, 40, 20)).float(), torch.randint(-2, 3, (2, 50, 20)).float()
    bias = torch.tensor([[5.0]])
    y = ttnn.operations.moreh.matmul(tt(a), tt(b), transpose_other=True, bias=tt(bias))
    assert y.shape == (3, 2, 40, 50) and torch.equal(ttnn.to_torch(y).float(), a @ b.transpose(-1, -2) + bias)
    g = torch.randint(-2, 3, (3, 2, 40, 50)).float()
    ga = tt(torch.zeros(3, 1, 40, 20))
    programs = launched(device, lambda: ttnn.operations.moreh.matmul_backward(
        tt(g), tt(a), tt(b.transpose(-1, -2)), input_a_grad=ga, input_b_grad=tt(torch.zeros(2, 20, 50))))
    assert [p.name for p in programs] == ["MorehMatmulOperation", "MorehSumOperation"] * 2
    ref_a, ref_b = a.clone().requires_grad_(), b.transpose(-1, -2).clone().requires_grad_()
    torch.matmul(ref_a, ref_b).backward(g)
    assert torch.equal(ttnn.to_torch(ga).float(), ref_a.grad)
    # linear_backward: bias_grad [1, N] sums all but the last dim, [1, 1] everything (MorehBiasAddBackwardOperation)
    x, w = torch.randint(-2, 3, (2, 40, 20)).float(), torch.randint(-2, 3, (50, 20)).float()
    gl = torch.randint(-2, 3, (2, 40, 50)).float()
    grads = ttnn.operations.moreh.linear_backward(tt(gl), tt(x), tt(w), bias=tt(torch.zeros(1, 50)),
                                                  input_grad=tt(torch.zeros(2, 40, 20)),
                                                  weight_grad=tt(torch.zeros(50, 20)), bias_grad=tt(torch.zeros(1, 50)))
    assert torch.equal(ttnn.to_torch(grads[0]).float(), gl @ w)
    assert torch.equal(ttnn.to_torch(grads[1]).float(), (gl.transpose(-1, -2) @ x).sum(0))
    assert torch.equal(ttnn.to_torch(grads[2]).float(), gl.sum((0, 1))[None])
    scalar = ttnn.operations.moreh.linear_backward(tt(gl), tt(x), tt(w), are_required_outputs=(False, False, True),
                                                   bias_grad=tt(torch.zeros(1, 1)))
    assert scalar[:2] == [None, None] and ttnn.to_torch(scalar[2]).item() == gl.sum().item()
    with pytest.raises(RuntimeError, match="Input gradient is marked required but not provided"):
        ttnn.operations.moreh.matmul_backward(tt(g), tt(a), tt(b.transpose(-1, -2)))


def test_rotate_is_torchvisions_rotate_of_an_nhwc_tensor_with_its_fill(device):
    # pool/test_rotate.py (104 cases) compares ttnn.rotate with its golden, torchvision's rotate (grid_sample of an
    # inverse rotation about the image centre, a fill where the source falls outside); 90-degree turns are exact
    torch.manual_seed(0)
    x = torch.randn(2, 6, 6, 32, dtype=torch.bfloat16)
    t = ttnn.from_torch(x, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)
    assert torch.equal(ttnn.to_torch(ttnn.rotate(t, 90.0)), torch.rot90(x, 1, (1, 2)))
    assert torch.equal(ttnn.to_torch(ttnn.rotate(t, 0.0)), x)
    out = ttnn.to_torch(ttnn.rotate(t, 45.0, fill=7.0, interpolation_mode="bilinear"))
    assert out.shape == x.shape and out[0, 0, 0, 0] == 7.0  # a corner's source is outside the image
    assert torch.equal(ttnn.get_golden_function(ttnn.rotate)(x, angle=45.0, fill=7.0, interpolation_mode="bilinear"),
                       out)
    [program] = launched(device, lambda: ttnn.rotate(t, 30.0))
    assert (program.name, program.factory) == ("RotateDeviceOperation", "NearestProgramFactory")
    with pytest.raises(RuntimeError, match="expand=True is not supported"):
        ttnn.rotate(t, 30.0, expand=True)
    with pytest.raises(RuntimeError, match="ROW_MAJOR layout"):
        ttnn.rotate(ttnn.from_torch(x, layout=ttnn.TILE_LAYOUT, device=device), 30.0)


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")  # torch's deprecation of its reference
def test_quantize_dequantize_and_requantize_match_torchs_per_tensor_and_per_channel_quantization(device):
    # nightly eltwise/test_quantization.py (8800 cases): scale and zero-point as numbers, scalar tensors of any rank,
    # or (axis=) 1D per-channel tensors; int32 out of quantize, bfloat16 (or dtype=) out of dequantize
    torch.manual_seed(0)
    x = torch.rand(5, 7, 11)
    scale, zp = (x.max() - x.min()).item() / 255, -128 - int(x.min().item() / ((x.max() - x.min()).item() / 255))
    tt_x = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)
    s_t = ttnn.from_torch(torch.tensor([[scale]]), dtype=ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)
    q = ttnn.quantize(tt_x, s_t, zp)
    assert q.dtype == ttnn.int32
    assert torch.equal(ttnn.to_torch(q), torch.quantize_per_tensor(x, scale, zp, torch.qint32).int_repr())
    d = ttnn.dequantize(q, scale, zp, dtype=ttnn.float32)
    assert torch.allclose(ttnn.to_torch(d), torch.quantize_per_tensor(x, scale, zp, torch.qint32).dequantize())
    assert ttnn.dequantize(q, scale, zp).dtype == ttnn.bfloat16
    scales, zps = torch.rand(7) * 0.01 + 0.001, torch.randint(-5, 5, (7,), dtype=torch.int32)
    q = ttnn.quantize(tt_x, ttnn.from_torch(scales, dtype=ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device),
                      ttnn.from_torch(zps, dtype=ttnn.int32, layout=ttnn.TILE_LAYOUT, device=device), axis=-2)
    want = torch.quantize_per_channel(x, scales, zps, axis=1, dtype=torch.qint32).int_repr()
    assert (ttnn.to_torch(q) - want).abs().max() <= 1  # x / s in float32, as the device divides
    r = ttnn.to_torch(ttnn.requantize(ttnn.quantize(tt_x, scale, zp), scale, zp, scale * 2, 3))
    assert (r - torch.quantize_per_tensor(x, scale * 2, 3, torch.qint32).int_repr()).abs().max() <= 1
    with pytest.raises(RuntimeError, match="Per-tensor quantization only takes scalar-tensor scales"):
        ttnn.quantize(tt_x, ttnn.from_torch(torch.ones(2), dtype=ttnn.float32, device=device), zp)
    with pytest.raises(RuntimeError, match="expects a 1D scale tensor of 7 values"):
        ttnn.quantize(tt_x, ttnn.from_torch(torch.ones(5), dtype=ttnn.float32, device=device), 0, axis=1)


def test_a_row_major_transpose_is_a_permute_device_operation_with_its_dims_in_the_graph(device):
    # test_graph_capture.py's test_graph_capture_with_all_parameters(_json_output): transpose.cpp runs an
    # interleaved ROW_MAJOR transpose as prim::permute, whose node carries dims=SmallVector([0, 2, 1, 3])
    x = torch.rand(1, 64, 4, 32)
    t = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=device, memory_config=ttnn.L1)
    ttnn.graph.begin_graph_capture(ttnn.graph.RunMode.NORMAL)
    y = ttnn.transpose(t, 1, 2)
    graph = ttnn.graph.end_graph_capture()
    assert torch.equal(ttnn.to_torch(y), x.bfloat16().transpose(1, 2))
    [node] = [n for n in graph if n["node_type"] == "function_start"
              and n["params"]["name"] == "PermuteDeviceOperation"]
    assert "SmallVector([0, 2, 1, 3])" in node["arguments"][0] and "BufferType::L1" in node["arguments"][0]
    # permute_rm_program_factory.cpp, split over the 64 cores: the last dim kept, its 256 rows; the last dim moved,
    # 32 x 32 blocks: 256 rows / X (the new last dim, 4) x ceil(4 / 32) x ceil(32 / 32) = 64
    [p] = launched(device, lambda: ttnn.transpose(t, 1, 2))
    assert (p.factory, p.cores.num_cores()) == ("MultiCoreRowInvariant", 64)
    [p] = launched(device, lambda: ttnn.transpose(t, -1, -2))
    assert (p.factory, p.cores.num_cores()) == ("MultiCoreBlockedGeneric", 64)


def test_padded_slice_flattens_a_4d_slice_into_the_sharded_config_with_its_channels_padded(device):
    # nightly data_movement/test_slice_for_conv.py (744 padded_slice cases): ttnn.SlidingWindowParallelConfig, and
    # ttnn.experimental.padded_slice into a sharded [1, 1, N*H*W, C] output; a height-sharded output's width is its
    # shard width, the channels past the input's zeros; bfloat8_b comes out bfloat16, ROW_MAJOR
    cfg = ttnn.SlidingWindowParallelConfig(grid=ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0),
                                                                                  ttnn.CoreCoord(3, 0))]),
                                           shard_scheme=ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
                                           shard_orientation=ttnn.ShardOrientation.ROW_MAJOR)
    x = torch.randint(-10, 10, (2, 8, 6, 9)).float()
    t = ttnn.from_torch(x, dtype=ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT, device=device)
    mem = ttnn.MemoryConfig(cfg.shard_scheme, ttnn.BufferType.L1,
                            ttnn.ShardSpec(cfg.grid, (12, 16), cfg.shard_orientation))
    out = ttnn.experimental.padded_slice(t, [0, 2, 0, 0], [2, 6, 6, 9], [1, 1, 1, 1], memory_config=mem)
    assert (out.shape, out.dtype, out.layout) == ((1, 1, 48, 16), ttnn.bfloat16, ttnn.ROW_MAJOR_LAYOUT)
    want = torch.nn.functional.pad(x[:, 2:6], (0, 7)).reshape(1, 1, 48, 16)
    assert torch.equal(ttnn.to_torch(out).float(), want) and out.memory_config() == mem
    with pytest.raises(RuntimeError, match="Output Memory Config must be sharded"):
        ttnn.experimental.padded_slice(t, [0, 2, 0, 0], [2, 6, 6, 9], [1, 1, 1, 1], memory_config=ttnn.L1)
    with pytest.raises(RuntimeError, match="Steps != 1"):
        ttnn.experimental.padded_slice(t, [0, 2, 0, 0], [2, 6, 6, 9], [1, 2, 1, 1], memory_config=mem)


def test_max_pool2d_returns_each_maxs_flat_index_in_its_image_with_return_indices(device):
    # pool/test_mpwi.py and nightly test_max_pool2d_sweeps_mpwi.py (143 cases): return_indices=True gives (output,
    # indices), each index h * input_w + w of the max in the unpadded image (torch's), uint16 up to 65535 positions
    torch.manual_seed(0)
    n, h, w, c = 2, 9, 7, 16
    x = torch.randn(n, c, h, w).bfloat16().float()
    t = ttnn.from_torch(x.permute(0, 2, 3, 1).reshape(1, 1, n * h * w, c), ttnn.bfloat16, device=device)
    out, at = ttnn.max_pool2d(t, n, h, w, c, [3, 3], [2, 2], [1, 1], [1, 1], return_indices=True)
    want, want_at = torch.nn.functional.max_pool2d(x, 3, 2, 1, return_indices=True)
    assert at.dtype == ttnn.uint16 and at.shape == out.shape
    flat = lambda y: y.permute(0, 2, 3, 1).reshape(1, 1, -1, c)  # noqa: E731
    assert torch.equal(ttnn.to_torch(out).float(), flat(want))
    assert torch.equal(ttnn.to_torch(at).long(), flat(want_at))
    assert not isinstance(ttnn.max_pool2d(t, n, h, w, c, [3, 3], [2, 2], [1, 1], [1, 1]), tuple)


def test_tensor_and_core_helpers_tt_metals_tensor_tests_call(device):
    # unit_tests/tensor/test_tensor_utilities.py, test_tensor_serialization.py (which calls
    # num_cores_to_corerangeset(56, [8, 7], True) at import), test_tensor_conversion.py's numpy half, and
    # base_functionality/test_grid_to_cores.py
    assert ttnn.num_cores_to_corerangeset(56, [8, 7], True) == ttnn.num_cores_to_corerangeset(
        56, ttnn.CoreCoord(8, 7), True)
    assert ttnn.grid_to_cores(3, 4, 4, row_wise=True) == [ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 0),
                                                          ttnn.CoreCoord(2, 0)]
    assert ttnn.grid_to_cores(3, 4, 4)[1] == ttnn.CoreCoord(0, 1)
    assert len(ttnn.grid_to_cores(ttnn.CoreCoord(1, 1), ttnn.CoreCoord(2, 3))) == 6
    assert (ttnn.tile_size(ttnn.bfloat8_b), ttnn.element_size(ttnn.float32)) == (1088, 4)
    with pytest.raises(RuntimeError, match="undefined for block float"):
        ttnn.element_size(ttnn.bfloat4_b)
    assert (ttnn.get_dram_alignment(), ttnn.get_l1_alignment()) == (32, 16)
    t = ttnn.from_torch(torch.ones(1, 1, 16, 40), dtype=ttnn.bfloat16, device=device)  # ROW_MAJOR: a page a row
    assert (t.buffer_page_size(), t.buffer_num_pages(), t.buffer_aligned_page_size(), t.element_size()) == \
        (80, 16, 96, 2)
    u = ttnn.from_torch(torch.arange(6, dtype=torch.int32).reshape(2, 3), dtype=ttnn.uint16)
    assert str(u.to_numpy().dtype) == "uint16" and u.to_numpy().tolist() == [[0, 1, 2], [3, 4, 5]]


def test_moreh_norm_takes_an_empty_dim_list_sums_outer_dims_and_has_a_backward(device):
    # nightly test_moreh_norm.py (466 cases): dim=[] is every dim (moreh_norm.cpp); a finite p over outer or several
    # dims is |x|^p, moreh_sum a dim at a time, the 1/p-th power; norm_backward takes torch's keepdim=False shapes
    def tt(v):
        return ttnn.from_torch(v, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)

    x = torch.rand(5, 8, 40, 36) + 0.5
    t = tt(x)
    torch.testing.assert_close(ttnn.to_torch(ttnn.operations.moreh.norm(t, p=2.0, dim=[])).float().flatten(),
                               torch.linalg.vector_norm(x.bfloat16().float()).reshape(1), rtol=2**-7, atol=0)
    programs = launched(device, lambda: ttnn.operations.moreh.norm(t, p=2.5, dim=[0, 3], keepdim=True))
    assert [p.factory for p in programs] == ["MorehAbsPowFactory", "MorehSumWFactory", "MorehSumNCFactory",
                                             "MorehAbsPowFactory"]
    xr = x.bfloat16().float().requires_grad_()
    y = torch.linalg.vector_norm(xr, ord=2.0, dim=(0, 1))
    g = torch.rand(y.shape)
    y.backward(g)
    got = ttnn.operations.moreh.norm_backward(t, tt(y.detach()), tt(g), p=2.0, dim=[0, 1],
                                              input_grad=tt(torch.zeros(5, 8, 40, 36)))
    torch.testing.assert_close(ttnn.to_torch(got).float(), xr.grad, rtol=0.02, atol=1e-3)


def test_convert_to_chw_transposes_height_shards_into_width_shards_of_the_same_cores(device):
    # conv/data_movement/test_convert_to_chw.py (111 cases): a TILE [1, 1, HW, C] tensor height-sharded in L1 becomes
    # a ROW_MAJOR [1, 1, C, HW] one, width-sharded on the same cores with (C, the input's shard height) shards
    x = torch.randn(1, 1, 96, 5).bfloat16()
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 0))})
    cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
                            ttnn.ShardSpec(grid, (64, 32), ttnn.ShardOrientation.ROW_MAJOR))  # padded: 2 x 64 >= 96
    t = ttnn.from_torch(x, dtype=ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT, device=device, memory_config=cfg)
    outs = []
    [program] = launched(device, lambda: outs.append(ttnn.experimental.convert_to_chw(t, dtype=ttnn.bfloat16)))
    assert program.name == "ConvertToCHWDeviceOperation"
    y = outs[0]
    assert (y.shape, y.layout, y.dtype) == ((1, 1, 5, 96), ttnn.ROW_MAJOR_LAYOUT, ttnn.bfloat16)
    assert y.memory_config().memory_layout == ttnn.TensorMemoryLayout.WIDTH_SHARDED
    assert y.memory_config().shard_spec.shape == (5, 64)
    assert torch.equal(ttnn.to_torch(y), ttnn.to_torch(t).transpose(2, 3))
    with pytest.raises(RuntimeError, match="must be height sharded"):
        ttnn.experimental.convert_to_chw(ttnn.from_torch(x, layout=ttnn.TILE_LAYOUT, device=device,
                                                         memory_config=ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG))


def test_moreh_bmm_its_backward_and_dot_backward(device):
    # nightly test_moreh_bmm.py and test_moreh_dot_backward.py (83 cases): bmm and its backward are moreh_matmul
    # (moreh_bmm.cpp, moreh_bmm_backward.cpp); a dot's gradients are output_grad times the other operand, and
    # moreh_matmul_backward of two [1, 1, 1, W] operands is that dot backward (is_dot_backward)
    def tt(v):
        return ttnn.from_torch(v, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)

    a, b = torch.randint(-2, 3, (3, 40, 20)).float(), torch.randint(-2, 3, (3, 20, 50)).float()
    assert torch.equal(ttnn.to_torch(ttnn.operations.moreh.bmm(tt(a), tt(b))).float(), a @ b)
    g = torch.randint(-2, 3, (3, 40, 50)).float()
    ga, gb = ttnn.operations.moreh.bmm_backward(tt(g), tt(a), tt(b), input_grad=tt(torch.zeros(3, 40, 20)),
                                                mat2_grad=tt(torch.zeros(3, 20, 50)))
    assert torch.equal(ttnn.to_torch(ga).float(), g @ b.transpose(1, 2))
    assert torch.equal(ttnn.to_torch(gb).float(), a.transpose(1, 2) @ g)
    x, y = torch.randint(-2, 3, (1, 1, 1, 40)).float(), torch.randint(-2, 3, (1, 1, 1, 40)).float()
    dx = tt(torch.zeros(1, 1, 1, 40))
    [program] = launched(device, lambda: ttnn.operations.moreh.matmul_backward(
        tt(torch.full((1, 1, 1, 1), 3.0)), tt(x), tt(y), input_a_grad=dx))
    assert program.name == "MorehDotBackwardOperation" and torch.equal(ttnn.to_torch(dx).float(), 3 * y)


def test_set_printoptions_picks_the_profile_notation_and_precision_and_a_freed_tensor_keeps_its_shape(device):
    # base_functionality/test_print_tensor.py (50 cases): ttnn.set_printoptions(profile=, sci_mode=, precision=), and
    # a deallocated tensor's text names its shape
    t = ttnn.from_torch(torch.tensor([[1.5, -2.25, 3.0, 4.0, 5.0]]), dtype=ttnn.bfloat16, device=device)
    try:
        ttnn.set_printoptions(profile="empty")
        assert str(t) == "ttnn.Tensor(..., shape=Shape([1, 5]), dtype=DataType::BFLOAT16, layout=Layout::ROW_MAJOR)"
        ttnn.set_printoptions(profile="full", sci_mode=True, precision=2)
        assert str(t).startswith("ttnn.Tensor([[ 1.50e+00, -2.25e+00,  3.00e+00,  4.00e+00,  5.00e+00]]")
        ttnn.set_printoptions(profile="short", sci_mode=False, precision=1)
        assert str(t).startswith("ttnn.Tensor([[ 1.5, -2.2,  ...,  4.0,  5.0]]")
    finally:
        ttnn.set_printoptions(profile="short")
    ttnn.deallocate(t)
    assert str(t) == ("ttnn.Tensor(<buffer is not allocated>, shape=Shape([1, 5]), dtype=DataType::BFLOAT16, "
                      "layout=Layout::ROW_MAJOR)")


def test_moreh_getitem_indexes_consecutive_dims_and_a_tile_input_keeps_its_rank(device):
    # nightly test_moreh_getitem.py (338 cases): ttnn.operations.moreh.getitem(x, [idx, ...], dims), int32 indices
    # (negative from the end); ROW_MAJOR gives torch's shape, TILE keeps the indexed dims as ones
    # (compute_output_specs), and an index over W of a ROW_MAJOR input is refused as TT-NN refuses it
    x = torch.randint(0, 10, (4, 5, 6, 7)).to(torch.bfloat16)
    i, j = torch.tensor([0, -1, 2, 3, 1]), torch.tensor([5, 0, -2, 1, 1])
    ti, tj = (ttnn.from_torch(v, dtype=ttnn.int32, device=device) for v in (i, j))
    rm = ttnn.operations.moreh.getitem(ttnn.from_torch(x, device=device), [ti, tj], [1, 2])
    assert rm.shape == (4, 5, 7) and torch.equal(ttnn.to_torch(rm), x[:, i, j])
    tiled = ttnn.operations.moreh.getitem(ttnn.from_torch(x, layout=ttnn.TILE, device=device), [ti, tj], [1, 2])
    assert tiled.shape == (4, 1, 5, 7) and torch.equal(ttnn.to_torch(tiled).reshape(4, 5, 7), x[:, i, j])
    x5 = ttnn.from_torch(torch.zeros(2, 2, 2, 2, 8, dtype=torch.bfloat16), device=device)
    with pytest.raises(RuntimeError, match="not support W index tensor"):
        ttnn.operations.moreh.getitem(x5, [ti], [4])


def test_moreh_sgd_is_torch_optim_sgds_step_with_momentum_dampening_and_nesterov(device):
    # nightly test_moreh_sgd.py (164 cases): ttnn.operations.moreh.sgd(param, grad, buf_in, param_out, buf_out, lr,
    # momentum, dampening, weight_decay, nesterov, momentum_initialized=...) returns [param_out, buf_out]
    def tt(v):
        return ttnn.from_torch(v, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)

    w = torch.nn.Parameter(torch.randn(32, 64).bfloat16().float())
    opt = torch.optim.SGD([w], lr=0.5, momentum=0.9, dampening=0.25, weight_decay=0.1, nesterov=False)
    w.grad = torch.randn(32, 64).bfloat16().float()
    opt.step()  # the first step: the buffer is the gradient itself
    buf_in, p_in = opt.state[w]["momentum_buffer"].clone(), w.detach().clone()
    opt.step()  # the second, from an initialized buffer
    fp32 = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4, fp32_dest_acc_en=True)
    p_out, buf_out = ttnn.operations.moreh.sgd(tt(p_in), tt(w.grad), tt(buf_in), None, tt(buf_in), 0.5, 0.9, 0.25,
                                               0.1, False, momentum_initialized=True, compute_kernel_config=fp32)
    torch.testing.assert_close(ttnn.to_torch(p_out).float(), w.detach(), rtol=2**-7, atol=2e-2)
    torch.testing.assert_close(ttnn.to_torch(buf_out).float(), opt.state[w]["momentum_buffer"], rtol=2**-7, atol=2e-2)
    assert ttnn.operations.moreh.sgd(tt(p_in), tt(w.grad), momentum_initialized=False)[1] is None  # no momentum


def test_deepseek_prefill_extract_and_insert_move_one_experts_tile_rounded_rows(device):
    # unit_tests/operations/deepseek/test_deepseek_prefill_extract.py and _insert.py (57 cases): extract copies
    # global[start[e] : start[e] + ceil_tile(counts[e])] into a [max_dispatched_tokens, hidden] tensor; insert writes a
    # local tensor's first ceil_tile(counts[e]) rows back there, in place. Rows are bfloat8_b TILE, the tables UINT32.
    def rows(v):
        return ttnn.from_torch(v, dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)

    def table(v):
        return ttnn.from_torch(torch.tensor(v, dtype=torch.int32), dtype=ttnn.uint32, device=device)

    g = torch.arange(128.0).repeat_interleave(64).reshape(128, 64)
    start, counts = table([0, 64, 96]), table([64, 3, 32])
    outs = []
    [program] = launched(device, lambda: outs.append(ttnn.experimental.deepseek_prefill.extract(
        rows(g), start, counts, global_expert_id=1, max_dispatched_tokens_per_expert=64)))
    assert program.name == "ExtractDeviceOperation"
    got = ttnn.to_torch(outs[0]).float()
    assert got.shape == (64, 64)
    assert torch.equal(got[:32], ttnn.to_torch(rows(g)).float()[64:96])  # 3 rows round up to one tile of 32
    gt = rows(torch.zeros(128, 64))
    assert ttnn.experimental.deepseek_prefill.insert(gt, rows(torch.ones(64, 64)), start, counts,
                                                     global_expert_id=1) is gt
    assert ttnn.to_torch(gt).float()[:, 0].tolist() == [0.0] * 64 + [1.0] * 32 + [0.0] * 32
    with pytest.raises(RuntimeError, match="global_tensor must be BFLOAT8_B"):
        ttnn.experimental.deepseek_prefill.extract(ttnn.from_torch(g, layout=ttnn.TILE, device=device), start, counts,
                                                   global_expert_id=1, max_dispatched_tokens_per_expert=64)


def test_moreh_adam_and_adamw_step_as_torch_optim_and_from_torch_copies_its_values(device):
    # nightly test_moreh_adam.py / test_moreh_adamw.py (151 cases): one step from zero moving averages as
    # torch.optim.Adam / AdamW take it. The test makes the device parameter, then steps torch's optimizer on the same
    # torch tensor in place: from_torch must have copied it (TT-NN does), or the device parameter moves too
    p = torch.nn.Parameter(torch.randn(32, 64).bfloat16().float())
    dev_p = ttnn.from_torch(p, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    p.grad = torch.randn(32, 64).bfloat16().float()
    start = p.detach().clone()
    opt = torch.optim.Adam([p], lr=0.1, betas=(0.5, 0.555), weight_decay=0.3)
    opt.step()
    assert torch.equal(ttnn.to_torch(dev_p).float(), start)

    def tt(v):
        return ttnn.from_torch(v, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)

    zero = torch.zeros(32, 64)
    fp32 = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4, fp32_dest_acc_en=True)
    for moreh_op, torch_opt in ((ttnn.operations.moreh.adam, torch.optim.Adam),
                                (ttnn.operations.moreh.adamw, torch.optim.AdamW)):
        q = torch.nn.Parameter(start.clone())
        q.grad = p.grad.clone()
        ref = torch_opt([q], lr=0.1, betas=(0.5, 0.555), weight_decay=0.3)
        ref.step()
        out = moreh_op(dev_p, tt(q.grad), tt(zero), tt(zero), lr=0.1, beta1=0.5, beta2=0.555, weight_decay=0.3, step=1,
                       compute_kernel_config=fp32)  # float32 intermediates, as the float32 reference's
        assert out[3] is None  # no amsgrad
        torch.testing.assert_close(ttnn.to_torch(out[0]).float(), q.detach(), rtol=2**-7, atol=1e-2)
        torch.testing.assert_close(ttnn.to_torch(out[2]).float(), ref.state[q]["exp_avg_sq"], rtol=2**-6, atol=1e-3)


def test_tosa_gather_is_gather_along_dim_1_of_the_index_expanded_over_channels(device):
    # unit_tests/operations/data_movement/test_tosa_gather.py (10 cases): output[n, w, c] = input[n, index[n, w], c],
    # TT-NN's composite of unsqueeze, expand and gather (gather_tosa.cpp), with its rank TT_FATALs
    x = torch.randn(3, 50, 7).bfloat16()
    i = torch.randint(0, 50, (3, 11))
    t = ttnn.from_torch(x, layout=ttnn.TILE, device=device)
    got = ttnn.tosa_gather(t, ttnn.from_torch(i, dtype=ttnn.uint32, layout=ttnn.TILE, device=device))
    assert torch.equal(ttnn.to_torch(got), torch.gather(x, 1, i.unsqueeze(-1).expand(-1, -1, 7)))
    with pytest.raises(RuntimeError, match="Index tensor rank must be 2, got: 3"):
        ttnn.tosa_gather(t, ttnn.from_torch(i.unsqueeze(0), dtype=ttnn.uint32, layout=ttnn.TILE, device=device))


def test_isin_is_torch_isin_as_a_uint32_mask_laid_out_as_the_elements(device):
    # nightly experimental/test_isin.py (15 cases): TT-NN's composite (isin.cpp) flattens both operands to ROW_MAJOR,
    # runs IsInDeviceOperation and reshapes / re-tiles the UINT32 mask as the elements were; dtypes must match
    a, b = torch.randint(0, 60, (2, 3, 45), dtype=torch.int32), torch.randint(0, 60, (5, 7), dtype=torch.int32)
    ta = ttnn.from_torch(a, dtype=ttnn.int32, layout=ttnn.TILE, device=device)
    tb = ttnn.from_torch(b, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR, device=device)
    outs = []
    programs = launched(device, lambda: outs.append(ttnn.experimental.isin(ta, tb, invert=True)))
    assert "IsInDeviceOperation" in [p.name for p in programs]
    got = outs[0]
    assert (got.shape, got.dtype, got.layout) == ((2, 3, 45), ttnn.uint32, ttnn.TILE_LAYOUT)
    assert torch.equal(ttnn.to_torch(got).bool(), torch.isin(a, b, invert=True))
    with pytest.raises(RuntimeError, match="they must be equal"):
        ttnn.experimental.isin(ta, ttnn.from_torch(b.float(), layout=ttnn.TILE, device=device))


def test_moreh_clip_grad_norm_returns_the_total_norm_and_scales_the_gradients_in_place(device):
    # nightly test_moreh_clip_grad_norm.py (20 cases): torch.nn.utils.clip_grad_norm_ on a list of TILE gradients;
    # a NaN norm_type with error_if_nonfinite is TT-NN's error, in torch's words
    grads = [torch.rand(2, 3, 40, 50) * 2.5, torch.rand(1, 1, 20, 70) * 2.5]
    params = [torch.nn.Parameter(torch.empty(g.shape)) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g.bfloat16().float()
    tt = [ttnn.from_torch(g, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device) for g in grads]
    expected = torch.nn.utils.clip_grad_norm_(params, 2.0, -0.8)
    total = ttnn.operations.moreh.clip_grad_norm(tt, 2.0, -0.8)
    torch.testing.assert_close(ttnn.to_torch(total).float().reshape(1), expected.reshape(1), rtol=2**-7, atol=0)
    for p, t in zip(params, tt):
        torch.testing.assert_close(ttnn.to_torch(t).float(), p.grad, rtol=2**-7, atol=1e-3)
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        ttnn.operations.moreh.clip_grad_norm(tt, 1.0, float("nan"), True)


def test_moreh_fold_is_torchs_col2im_of_a_row_major_input(device):
    # nightly test_moreh_fold.py (24 cases): ttnn.operations.moreh.fold(input, None, output_size, kernel_size,
    # dilation, padding, stride), the output the second positional argument; a TILE input is refused as TT-NN does
    x = torch.randn(2, 3 * 2 * 3, 12)
    args = ([5, 6], [2, 3], [1, 1], [1, 0], [2, 1])
    got = ttnn.operations.moreh.fold(ttnn.from_torch(x, dtype=ttnn.float32, device=device), None, *args)
    torch.testing.assert_close(ttnn.to_torch(got), torch.nn.functional.fold(x, *args))
    with pytest.raises(RuntimeError, match="only support input in ROW_MAJOR"):
        ttnn.operations.moreh.fold(ttnn.from_torch(x, layout=ttnn.TILE, device=device), None, *args)


def test_randn_draws_standard_normal_tiles_and_refuses_what_its_binding_cannot_convert(device):
    # nightly rand/test_randn.py (80 cases): RandnDeviceOperation fills a TILE tensor in DRAM by default, untilized
    # for ROW_MAJOR (randn.cpp); a seed repeats the draws; nanobind's conversions raise TypeError
    outs = []
    [program] = launched(device, lambda: outs.append(ttnn.randn((256, 256), device, seed=5)))
    x = outs[0]
    assert program.name == "RandnDeviceOperation"
    assert (x.dtype, x.layout, x.memory_config()) == (ttnn.bfloat16, ttnn.TILE_LAYOUT, ttnn.DRAM_MEMORY_CONFIG)
    v = ttnn.to_torch(x).float()
    assert abs(v.mean().item()) < 0.05 and abs(v.std().item() - 1) < 0.05
    assert torch.equal(ttnn.to_torch(ttnn.randn((256, 256), device, seed=5)), ttnn.to_torch(x))
    rm = ttnn.randn((32, 64), device, dtype=ttnn.float32, layout=ttnn.ROW_MAJOR_LAYOUT, seed=1)
    assert (rm.dtype, rm.layout) == (ttnn.float32, ttnn.ROW_MAJOR_LAYOUT)
    for bad in (dict(shape=[2, -1]), dict(shape=5), dict(layout="ROW_MAJOR"), dict(dtype="ttnn.bfloat16")):
        with pytest.raises(TypeError, match="incompatible function arguments"):
            ttnn.randn(**{"shape": [2, 2], "device": device, **bad})
    with pytest.raises(RuntimeError, match="must be Float32 or Bfloat16"):
        ttnn.randn([2, 2], device, dtype=ttnn.int32)


def test_bernoulli_draws_zeros_and_ones_as_float32_tiles_or_into_a_given_output(device):
    # nightly rand/test_bernoulli.py (37 cases): BernoulliDeviceOperation, float32 TILE unless dtype= says otherwise,
    # output= drawn into; p = 0 and p = 1 are exact; its TT_FATALs on the input's layout and dtype
    p = torch.rand(64, 96)
    p[0], p[1] = 0.0, 1.0
    tp = ttnn.from_torch(p, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    outs = []
    [program] = launched(device, lambda: outs.append(ttnn.bernoulli(tp, 11)))
    y = ttnn.to_torch(outs[0])
    assert program.name == "BernoulliDeviceOperation"
    assert (outs[0].dtype, outs[0].layout, y.shape) == (ttnn.float32, ttnn.TILE_LAYOUT, (64, 96))
    assert set(y.unique().tolist()) <= {0.0, 1.0} and not y[0].any() and y[1].all()
    target = ttnn.empty([64, 96], device=device, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT)
    assert ttnn.bernoulli(tp, 11, output=target) is target and target.dtype == ttnn.bfloat16
    with pytest.raises(RuntimeError, match="Bernoulli: Input tensor must be tilized"):
        ttnn.bernoulli(ttnn.from_torch(p, dtype=ttnn.bfloat16, device=device))


def test_repeat_and_interleave_eltwise_mul_repeats_one_side_and_interleaves_the_other(device):
    # nightly ssm/test_ssm_repeat_and_interleave_eltwise_mul.py (97 cases): Mamba's product of a [.., 32] (repeated
    # 5120 times) or [.., 32 * 5120] tensor and a [.., 5120] (each value 32 times) or [.., 32 * 5120] one
    a, b = torch.randn(1, 1, 64, 32).bfloat16(), torch.randn(1, 1, 64, 5120).bfloat16()

    def tt(v):
        return ttnn.from_torch(v, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)

    outs = []
    [program] = launched(device, lambda: outs.append(ttnn.experimental.repeat_and_interleave_eltwise_mul(
        tt(a), tt(b), memory_config=ttnn.L1_MEMORY_CONFIG)))
    assert program.name == "RepeatAndInterleaveEltwiseMulDeviceOperation"
    want = (a.float().repeat(1, 1, 1, 5120) * b.float().repeat_interleave(32, dim=-1)).bfloat16()
    assert outs[0].shape == (1, 1, 64, 163840) and outs[0].memory_config() == ttnn.L1_MEMORY_CONFIG
    assert torch.equal(ttnn.to_torch(outs[0]), want)
    with pytest.raises(RuntimeError, match="Input b width must be 32 or 32\\*5120"):
        ttnn.experimental.repeat_and_interleave_eltwise_mul(tt(a), tt(b[..., :64]))


def test_tosa_scatter_writes_source_rows_at_the_index_along_dim_1_with_tosas_shape_checks(device):
    # unit_tests/operations/data_movement/test_tosa_scatter.py (5 cases): output[n, index[n, w], c] = src[n, w, c],
    # TT-NN's composite (tosa_scatter.cpp) over the scatter; its TOSA rank and shape TT_FATALs
    inp, src = torch.randn(3, 20, 6).bfloat16(), torch.randn(3, 4, 6).bfloat16()
    idx = torch.stack([torch.randperm(20)[:4] for _ in range(3)])

    def tt(v, dtype=ttnn.bfloat16):
        return ttnn.from_torch(v, dtype=dtype, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)

    got = ttnn.tosa_scatter(tt(inp), tt(idx, ttnn.uint32), tt(src))
    assert got.layout == ttnn.ROW_MAJOR_LAYOUT
    assert torch.equal(ttnn.to_torch(got), torch.scatter(inp, 1, idx.unsqueeze(-1).expand(-1, -1, 6), src))
    with pytest.raises(RuntimeError, match="Index shape has a different dimension W than source shape"):
        ttnn.tosa_scatter(tt(inp), tt(idx[:, :3], ttnn.uint32), tt(src))


def test_manual_seed_picks_its_program_factory_by_what_is_a_tensor(device):
    # unit_tests/operations/reduce/test_manual_seed.py (4 of 8 cases; the rest need ttnn.sampling):
    # ManualSeedDeviceOperation's four factories, and its TT_FATALs on a scalar user_ids beside a seeds table
    def table(v):
        return ttnn.from_torch(torch.tensor(v), dtype=ttnn.uint32, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)

    calls = {"ManualSeedSingleSeedToAllCoresProgramFactory": dict(seeds=42),
             "ManualSeedSingleSeedSingleCoreProgramFactory": dict(seeds=42, user_ids=7),
             "ManualSeedSingleSeedSetCoresProgramFactory": dict(seeds=7, user_ids=table([0, 1, 2])),
             "ManualSeedSetSeedsSetCoresProgramFactory": dict(seeds=table([42, 1, 4]), user_ids=table([0, 1, 2]))}
    for factory, kwargs in calls.items():
        [program] = launched(device, lambda kw=kwargs: ttnn.manual_seed(device=device, **kw))
        assert (program.name, program.factory) == ("ManualSeedDeviceOperation", factory)
    with pytest.raises(RuntimeError, match="Seeds were provided as a tensor, so user_ids must not be provided as a"):
        ttnn.manual_seed(seeds=table([42]), device=device, user_ids=7)
    with pytest.raises(RuntimeError, match=r"User IDs scalar must be in the range \[0, 31\]"):
        ttnn.manual_seed(3, device=device, user_ids=40)


def test_dit_rms_norm_unary_fused_is_rms_norm_with_its_activation_in_the_same_program(device):
    # nightly experimental/test_dit_rms_norm_unary_fused.py (28 cases): prim::layer_norm (RMSNORM) with a unary
    # activation fused, named by string, UnaryOpType or UnaryWithParam; one LayerNormDeviceOperation
    v, w = torch.randn(1, 64, 96).bfloat16(), torch.randn(96).bfloat16()
    t = ttnn.from_torch(v, layout=ttnn.TILE, device=device)
    tw = ttnn.from_torch(w.unsqueeze(0), layout=ttnn.TILE, device=device)
    outs = []
    [program] = launched(device, lambda: outs.append(ttnn.experimental.dit_rms_norm_unary_fused(
        t, epsilon=1e-5, weight=tw, activation=ttnn.UnaryOpType.SILU)))
    assert program.name == "LayerNormDeviceOperation"
    plain = ttnn.to_torch(ttnn.rms_norm(t, epsilon=1e-5, weight=tw)).float()
    torch.testing.assert_close(ttnn.to_torch(outs[0]).float(), torch.nn.functional.silu(plain), rtol=0.02, atol=0.02)
    assert torch.equal(ttnn.to_torch(ttnn.experimental.dit_rms_norm_unary_fused(t, epsilon=1e-5, weight=tw)),
                       ttnn.to_torch(ttnn.rms_norm(t, epsilon=1e-5, weight=tw)))


def test_the_binary_ops_in_place_forms_bound_beside_add_write_into_the_first_input(device):
    # docs_examples/test_pointwise_binary_examples.py calls ttnn.logaddexp2_; binary_nanobind.cpp binds ldexp_,
    # logaddexp_, logaddexp2_, squared_difference_, rsub_ and bias_gelu_ in place as it binds add_
    a, b = torch.tensor([[2.0, 3.0], [4.0, 5.0]]), torch.tensor([[1.0, 1.0], [2.0, 0.5]])
    want = {"logaddexp2_": torch.logaddexp2(a, b), "logaddexp_": torch.logaddexp(a, b), "ldexp_": torch.ldexp(a, b),
            "squared_difference_": (a - b) ** 2, "rsub_": b - a,
            "bias_gelu_": torch.nn.functional.gelu(a + b)}
    tb = ttnn.from_torch(b, ttnn.bfloat16, layout=ttnn.TILE, device=device)
    for name, expected in want.items():
        ta = ttnn.from_torch(a, ttnn.bfloat16, layout=ttnn.TILE, device=device)
        assert getattr(ttnn, name)(ta, tb) is ta
        torch.testing.assert_close(ttnn.to_torch(ta).float(), expected, rtol=0.02, atol=0.02)


def test_mse_and_l1_loss_are_a_fused_subtract_then_the_reduction_mode(device):
    # docs_examples/test_losses_examples.py: loss.cpp subtracts with SQUARE or ABS fused, then ttnn.mean / ttnn.sum
    # over every element by ttnn.LossReductionMode (NONE keeps the per-element loss)
    a, b = torch.tensor([[1.0, 2.0, -3.0]]), torch.tensor([[3.0, 1.0, 1.0]])
    ta, tb = (ttnn.from_torch(v, ttnn.bfloat16, layout=ttnn.TILE, device=device) for v in (a, b))
    assert ttnn.to_torch(ttnn.mse_loss(ta, tb)).float().tolist() == [[4.0, 1.0, 16.0]]
    assert ttnn.to_torch(ttnn.l1_loss(ta, tb, reduction=ttnn.LossReductionMode.SUM)).item() == 7.0
    assert ttnn.to_torch(ttnn.mse_loss(ta, tb, reduction=ttnn.LossReductionMode.MEAN)).item() == 7.0
    with pytest.raises(TypeError, match="reduction must be a ttnn.LossReductionMode"):
        ttnn.l1_loss(ta, tb, reduction="mean")


def test_outer_reshapes_both_sides_to_a_column_and_a_row_then_multiplies(device):
    # docs_examples/test_pointwise_binary_examples.py's test_outer: binary_composite_op.cpp reshapes a 4-D tensor with
    # one dim above 1 to [1, 1, M, 1] and the other to [1, 1, 1, N], tilizes them and runs ttnn.matmul
    a, b = torch.arange(1.0, 4.0).reshape(1, 3, 1, 1), torch.arange(1.0, 6.0).reshape(5, 1, 1, 1)
    ta = ttnn.from_torch(a, ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)
    tb = ttnn.from_torch(b, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    outs = []
    programs = launched(device, lambda: outs.append(ttnn.outer(ta, tb)))
    assert "MatmulDeviceOperation" in [p.name for p in programs]
    assert torch.equal(ttnn.to_torch(outs[0]).float(), torch.outer(a.flatten(), b.flatten()).reshape(1, 1, 3, 5))
    with pytest.raises(RuntimeError, match="3 dimensions are required to be 1"):
        ttnn.outer(ttnn.from_torch(torch.ones(1, 2, 2, 1), layout=ttnn.TILE_LAYOUT, device=device), tb)


def test_prod_takes_its_output_tensor_overload_by_keyword_too(device):
    # docs_examples/test_reduction_examples.py: prod(input_tensor=..., output_tensor=..., dims=[0, 1]), the NC
    # overload named by keyword (prod_nanobind.cpp), writes the products into output_tensor
    x = torch.rand(2, 3, 4, 5) + 0.5
    t = ttnn.from_torch(x, ttnn.bfloat16, layout=ttnn.TILE, device=device)
    out = ttnn.from_torch(torch.zeros(1, 1, 4, 5), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert ttnn.prod(input_tensor=t, output_tensor=out, dims=[0, 1]) is out
    want = ttnn.to_torch(t).float().prod(0, keepdim=True).prod(1, keepdim=True)
    torch.testing.assert_close(ttnn.to_torch(out).float(), want, rtol=0.05, atol=0.01)


def test_manual_seed_runs_on_the_sub_core_grids_given(device):
    # manual_seed_program_factory.cpp's compute_core_grid: sub_core_grids replaces the whole grid, and a scalar
    # user_ids picks that grid's user_ids-th core, row by row
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(1, 1), ttnn.CoreCoord(2, 2))])
    [everywhere] = launched(device, lambda: ttnn.manual_seed(5, device=device, sub_core_grids=grid))
    [one] = launched(device, lambda: ttnn.manual_seed(5, device=device, user_ids=3, sub_core_grids=grid))
    assert (everywhere.ranges, one.ranges) == (((1, 1, 2, 2),), ((2, 2, 2, 2),))


def test_fill_rm_makes_a_row_major_tensor_with_val_hi_in_its_top_left_corner(device):
    # docs_examples/test_data_movement_examples.py: fill_rm(N, C, H, W, hOnes, wOnes, any, val_hi, val_lo) and
    # fill_ones_rm, FillRMDeviceOperation on core (0, 0), on any's device in its dtype; the fill must fit
    t = ttnn.from_torch(torch.zeros(2, 3, 64, 96), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    outs = []
    [program] = launched(device, lambda: outs.append(ttnn.fill_ones_rm(2, 3, 64, 96, 33, 31, t)))
    assert (program.name, program.ranges) == ("FillRMDeviceOperation", ((0, 0, 0, 0),))
    want = torch.zeros(2, 3, 64, 96)
    want[:, :, :33, :31] = 1
    assert outs[0].layout == ttnn.ROW_MAJOR_LAYOUT and torch.equal(ttnn.to_torch(outs[0]).float(), want)
    with pytest.raises(RuntimeError, match="Fill dimensions must be <= tensor dimensions"):
        ttnn.fill_rm(1, 1, 8, 8, 9, 1, t, 1.0, 0.0)


def test_indexed_fill_writes_b_batches_over_a_at_the_batch_ids(device):
    # docs_examples/test_data_movement_examples.py: indexed_fill(batch_id, a, b), IndexedFillDeviceOperation; a
    # repeated id takes the last of b's batches given it (the reader keeps the last match)
    a, b = torch.zeros(6, 1, 1, 4), torch.arange(12.0).reshape(3, 1, 1, 4)
    ids = torch.tensor([[[[4, 1, 4]]]], dtype=torch.int32)

    def rm(v, dtype=ttnn.bfloat16):
        return ttnn.from_torch(v, dtype, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)

    outs = []
    [program] = launched(device, lambda: outs.append(ttnn.indexed_fill(rm(ids, ttnn.uint32), rm(a), rm(b))))
    assert program.name == "IndexedFillDeviceOperation"
    want = a.clone()
    want[1], want[4] = b[1], b[2]
    assert torch.equal(ttnn.to_torch(outs[0]).float(), want)
    with pytest.raises(RuntimeError, match="Second input and batch ids must be same outer dim"):
        ttnn.indexed_fill(rm(ids[..., :2], ttnn.uint32), rm(a), rm(b))


def test_nonzero_gives_the_count_and_the_positions_of_a_rows_non_zero_entries(device):
    # docs_examples/test_data_movement_examples.py: nonzero of a [1, 1, 1, X] ROW_MAJOR tensor, two UINT32 tensors
    # (the count first in a [1, 1, 1, 8] row, the positions first in a [1, 1, 1, X] row), one device operation
    v = torch.zeros(1, 1, 1, 40)
    v[..., [3, 17, 39]] = torch.tensor([1.0, -2.0, 0.5])
    t = ttnn.from_torch(v, ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)
    outs = []
    [program] = launched(device, lambda: outs.extend(ttnn.nonzero(t)))
    assert program.name == "NonZeroIndicesDeviceOperation"
    count, indices = outs
    assert (count.dtype, count.shape, indices.shape) == (ttnn.uint32, (1, 1, 1, 8), (1, 1, 1, 40))
    assert ttnn.to_torch(count)[0, 0, 0, 0].item() == 3
    assert ttnn.to_torch(indices)[0, 0, 0, :3].tolist() == [3, 17, 39]
    with pytest.raises(RuntimeError, match="The input shape must be 4D with the following form: 1, 1, 1, X"):
        ttnn.nonzero(ttnn.from_torch(torch.ones(1, 1, 2, 4), ttnn.bfloat16, device=device))


def test_conv_transpose2d_returns_and_takes_back_the_weights_prepare_conv_transpose2d_weights_makes(device):
    # unit_tests/operations/conv/test_conv_transpose2d.py: prepare_conv_transpose2d_weights / _bias (IOHW weights,
    # mirrored and transposed into conv2d's [1, 1, KH*KW*in, out], groups spread over zeros) give exactly the
    # tensors conv_transpose2d returns with return_weights_and_bias, and conv_transpose2d takes them back
    torch.manual_seed(0)
    x, w, b = torch.randn(1, 4, 5, 5), torch.randn(4, 3, 3, 3), torch.randn(1, 1, 1, 6)
    geometry = dict(in_channels=4, out_channels=6, batch_size=1, input_height=5, input_width=5, kernel_size=(3, 3),
                    stride=(2, 2), padding=(1, 1), dilation=(1, 1), groups=2, device=device)
    want = torch.nn.functional.conv_transpose2d(x, w, b.reshape(-1), stride=2, padding=1, groups=2)
    x_dev = ttnn.from_torch(x.permute(0, 2, 3, 1), ttnn.float32, device=device)
    for mirror in (True, False):
        w_given = w if mirror else w.flip(-2, -1)
        y, [w_conv, b_conv] = ttnn.conv_transpose2d(
            input_tensor=x_dev, weight_tensor=ttnn.from_torch(w_given, ttnn.float32),
            bias_tensor=ttnn.from_torch(b, ttnn.float32), mirror_kernel=mirror, return_weights_and_bias=True,
            **geometry)
        common = dict(input_memory_config=ttnn.L1_MEMORY_CONFIG, input_layout=ttnn.ROW_MAJOR_LAYOUT,
                      input_dtype=ttnn.float32, **geometry)
        w_prep = ttnn.prepare_conv_transpose2d_weights(weight_tensor=ttnn.from_torch(w_given, ttnn.float32),
                                                       weights_format="IOHW", has_bias=True, mirror_kernel=mirror,
                                                       **common)
        b_prep = ttnn.prepare_conv_transpose2d_bias(bias_tensor=ttnn.from_torch(b, ttnn.float32), **common)
        assert w_prep.shape == (1, 1, 3 * 3 * 4, 6) and w_prep.layout == ttnn.TILE_LAYOUT
        assert torch.equal(ttnn.to_torch(w_conv), ttnn.to_torch(w_prep))
        assert torch.equal(ttnn.to_torch(b_conv), ttnn.to_torch(b_prep))
        again = ttnn.conv_transpose2d(input_tensor=x_dev, weight_tensor=w_prep, bias_tensor=b_prep, **geometry)
        for out in (y, again):
            got = ttnn.to_torch(out).reshape(1, 9, 9, 6).permute(0, 3, 1, 2)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="weights_format='OIHW'.*pass weights_format='IOHW'"):
        ttnn.prepare_conv_transpose2d_weights(weight_tensor=ttnn.from_torch(w, ttnn.float32), weights_format="OIHW",
                                              has_bias=False, **common)


def test_an_auto_sharded_conv_whose_height_sharded_cbs_outgrow_l1_runs_as_tt_nn_picks_another_layout(device):
    # unit_tests/operations/conv/test_prepare_conv_weights.py (8x7x7, 512 -> 512 channels, 3x3) and
    # test_conv_transpose2d.py (Vanilla UNet's 512 -> 256): with no shard_layout TT-NN picks block sharding by
    # estimated L1 use; height sharding would hold all 512 channels' 3x3 weights on each core (1.87 MB of 1.43 MB)
    x = ttnn.from_torch(torch.randn(8, 7, 7, 512), ttnn.bfloat16, device=device)
    w = ttnn.from_torch(torch.randn(512, 512, 3, 3), ttnn.bfloat16)
    geometry = dict(input_tensor=x, weight_tensor=w, device=device, in_channels=512, out_channels=512, batch_size=8,
                    input_height=7, input_width=7, kernel_size=(3, 3), padding=(1, 1))
    assert ttnn.conv2d(**geometry).shape == (1, 1, 8 * 7 * 7, 512)
    height = ttnn.Conv2dConfig(shard_layout=ttnn.TensorMemoryLayout.HEIGHT_SHARDED)
    with pytest.raises(RuntimeError, match="Statically allocated circular buffers .* beyond max L1 size"):
        ttnn.conv2d(conv_config=height, **geometry)  # asked for by name, it fails as TT-NN's would


# -- nightly eltwise (round 14): binary_ng's fused activations and its output_tensor check -------------------------


def test_binary_ng_fuses_any_unary_sfpu_op_and_takes_an_op_param_pair(device):
    # nightly test_binary_bcast_ext.py: lhs FLOOR, rhs CEIL, post COS; post ISINF / SIGNBIT give 1.0 / 0.0; a post
    # activation given as the pair (UnaryOpType.ADD_UNARY_SFPU, 7) converts as TT-NN's binding converts it
    a = torch.tensor([[0.5, 1.5, -2.25, 3.75]])
    b = torch.tensor([[1.25, -0.5, 2.5, 0.25]])
    ta, tb = (ttnn.from_torch(x, layout=ttnn.TILE, device=device) for x in (a, b))
    op = ttnn.UnaryOpType
    got = ttnn.add(ta, tb, input_tensor_a_activations=[op.FLOOR], input_tensor_b_activations=[op.CEIL],
                   activations=[op.COS])
    torch.testing.assert_close(ttnn.to_torch(got).float(), torch.cos(a.floor() + b.ceil()), atol=1e-2, rtol=1e-2)
    assert ttnn.to_torch(ttnn.sub(ta, tb, activations=[op.SIGNBIT])).tolist() == [[1.0, 0.0, 1.0, 0.0]]
    assert ttnn.to_torch(ttnn.mul(ta, tb, activations=[(op.ADD_UNARY_SFPU, 7)])).float().tolist() == \
        (a * b + 7).tolist()
    torch.testing.assert_close(ttnn.to_torch(ttnn.divide(ta, tb, activations=[(op.DIV_UNARY_SFPU, 2)])), a / b / 2)
    with pytest.raises(ValueError, match="takes 1 parameter"):
        ttnn.add(ta, tb, activations=[op.DIV_UNARY_SFPU])


def test_a_binary_output_tensor_of_another_shape_fails_tt_nn_s_output_check_before_the_broadcast_check(device):
    # nightly test_binary_bcast_ext.py test_binary_opt_output_invalid_bcast: binary_ng's compute_output_specs checks
    # output_tensor= first, against compute_broadcasted_output, which keeps a's dim where neither is 1
    def t(*shape):
        return ttnn.from_torch(torch.rand(shape), layout=ttnn.TILE, device=device)

    with pytest.raises(RuntimeError, match=r"Shape of Output tensor Shape\(\[5, 3, 1, 32\]\) provided does not match "
                                           r"the broadcasted output shape Shape\(\[5, 3, 32, 32\]\)"):
        ttnn.add(t(1, 1, 1, 1), t(5, 3, 32, 32), output_tensor=t(5, 3, 1, 32))
    with pytest.raises(RuntimeError, match=r"Shape of Output tensor .* shape Shape\(\[5, 2, 64, 128\]\)"):
        ttnn.gt(t(5, 2, 64, 1), t(1, 3, 1, 128), output_tensor=t(5, 3, 64, 128))
    out = t(1, 3, 32, 32)  # the right shape is written, leading 1s and all
    assert ttnn.mul(t(1, 1, 1, 1), t(3, 32, 32), output_tensor=out) is out


def test_the_loss_goldens_take_torch_s_reduction_names_as_tt_nn_s_goldens_do(device):
    # nightly test_losses.py: get_golden_function(ttnn.mse_loss)(a, b, reduction="mean") is torch's MSELoss (TT-NN's
    # losses.py); the golden read "mean" as no reduction and compared a whole tensor with the op's one value
    a, b = torch.tensor([[1.0, 2.0, 6.0]]), torch.tensor([[3.0, 1.0, 2.0]])
    assert ttnn.get_golden_function(ttnn.mse_loss)(a, b, reduction="mean").item() == 7.0
    assert ttnn.get_golden_function(ttnn.l1_loss)(a, b, reduction="sum").item() == 7.0
    assert ttnn.get_golden_function(ttnn.l1_loss)(a, b).tolist() == [[2.0, 1.0, 4.0]]
    assert ttnn.get_golden_function(ttnn.mse_loss)(a, b, reduction=ttnn.LossReductionMode.SUM).item() == 21.0


# -- round 14, base_functionality (basefn): tilize_with_*_padding as TT-NN's device operation has it ---------


def test_tilize_with_val_padding_keeps_the_logical_shape_and_fills_the_tile_padding(device):
    # test_tilize_untilize_2D.py and test_to_layout.py: TilizeWithValPaddingDeviceOperation::compute_output_specs
    # gives the input's logical shape, so to_torch reads [43, 64] back; the pad value is in the tile padding
    v = torch.rand(43, 64, dtype=torch.bfloat16)
    x = ttnn.from_torch(v, device=device, layout=ttnn.ROW_MAJOR)
    y = ttnn.tilize_with_val_padding(x, [64, 128], 2.0, use_multicore=False)
    assert (y.shape, y.layout) == ((43, 64), ttnn.TILE) and torch.equal(ttnn.to_torch(y), v)
    assert bool((y.to_torch_with_padded_shape()[43:] == 2).all())
    z = ttnn.tilize_with_zero_padding(x, output_dtype=ttnn.float32)
    assert (z.shape, z.dtype) == ((43, 64), ttnn.float32)
    with pytest.raises(ValueError, match="whole 32x32 tiles"):
        ttnn.tilize_with_val_padding(x, [64, 100], 0.0)


def test_a_row_of_tiles_too_wide_for_l1_tilizes_by_the_block_factory(device):
    # test_tilize_pad_cb.py: a [1, 1, 1, 50304] row is 1572 tiles, whose c_0 and c_16 (6.4 MB) pass L1
    # (is_enough_space false), so select_program_factory picks the block factory with or without use_multicore:
    # split_blocks_for_tilize_wh cuts it into 25-tile blocks, 63 cores, row by row
    x = ttnn.from_torch(torch.rand(1, 1, 1, 50304), dtype=ttnn.bfloat16, device=device)
    for multicore in (True, False):
        (p,) = launched(device, lambda m=multicore: ttnn.tilize_with_zero_padding(x, use_multicore=m))
        assert (p.factory, p.ranges) == ("TilizeWithValPaddingMultiCoreBlockInterleavedFactory",
                                         ((0, 0, 7, 6), (0, 7, 6, 7)))
        assert [(cb.indices, cb.num_pages) for cb in p.cbs] == [((0,), 25), ((16,), 25)]
    narrow = ttnn.from_torch(torch.rand(43, 64), dtype=ttnn.bfloat16, device=device)
    (p,) = launched(device, lambda: ttnn.tilize_with_val_padding(narrow, [64, 128], 2.0, use_multicore=False))
    assert (p.factory, p.ranges) == ("TilizeWithValPaddingSingleCoreFactory", ((0, 0, 0, 0),))
    wide = ttnn.from_torch(torch.rand(32, 15916), dtype=ttnn.bfloat16, device=device)  # 498 tiles: 8-tile blocks
    (p,) = launched(device, lambda: ttnn.to_layout(wide, ttnn.TILE))
    assert (p.factory, p.cbs[0].num_pages) == ("TilizeMultiCoreBlockProgramFactory", 8)


def test_a_reduction_golden_returns_the_inputs_dtype_as_tt_nn_s_torch_call_does(device):
    # unit_tests/operations/reduce/test_reduction_h_interleaved.py: TT-NN's golden for sum (mean, max, min, var, std)
    # is torch's on the tensor as given, a bfloat16 result for a bfloat16 input, which the device's bfloat16 sum
    # (float32 sums rounded once) meets exactly; a float32 golden differs by that rounding (Frobenius 0.0016 > 0.001)
    torch.manual_seed(0)
    x = (torch.rand(1, 576, 64, 32) * 200 - 100).to(torch.bfloat16)
    golden = ttnn.get_golden_function(ttnn.sum)(x, dim=-2)
    assert golden.dtype == torch.bfloat16 and torch.equal(golden, torch.sum(x, dim=-2))
    assert ttnn.get_golden_function(ttnn.mean)(x.float(), dim=-1).dtype == torch.float32
    y = ttnn.sum(ttnn.from_torch(x, layout=ttnn.TILE_LAYOUT, device=device), dim=-2)
    assert torch.equal(ttnn.to_torch(y).reshape(golden.shape), golden)


def test_the_device_s_dispatch_modes_l1_size_cluster_type_text_and_view_s_tt_fatal(device):
    # test_device.py: the worker L1 above the reserved base; the slow-dispatch flag survives a fast-dispatch block
    assert ttnn.get_max_worker_l1_unreserved_size() == 1_499_136 - 98_304
    ttnn.enable_asynchronous_slow_dispatch(device)
    with ttnn.device.setup_fast_dispatch(device):
        pass
    assert ttnn.device.is_asynchronous_slow_dispatch_enabled(device)
    ttnn.disable_asynchronous_slow_dispatch(device)
    assert not ttnn.is_asynchronous_slow_dispatch_enabled(device)
    # test_cluster.py: str() of the enum as TT-NN's binding prints it
    assert str(ttnn.cluster.get_cluster_type()) == "ClusterType.T3K"
    # test_view.py test_invalid_cases: view.cpp's TT_FATALs are RuntimeErrors (a changed volume, a changed tile row)
    x = ttnn.from_torch(torch.rand(16, 8, 1, 32, 16), layout=ttnn.TILE, device=device)
    with pytest.raises(RuntimeError, match="logical volumes are changing"):
        ttnn.view(x, (8, 16, 31, 16))
    with pytest.raises(RuntimeError, match="would scramble it"):
        ttnn.view(ttnn.from_torch(torch.rand(16, 1, 1, 256, 16), layout=ttnn.TILE, device=device),
                  (8, 16, 32, 1, 16))


def test_the_peer_plugin_skips_what_tests_ttnn_conftest_skips_in_fast_runtime_mode(tmp_path):
    # tests/ttnn/conftest.py, which tt-metal's pytest runs load: in fast runtime mode (TT-NN's default) a case marked
    # requires_fast_runtime_mode_off is skipped (unit_tests/operations/matmul/test_experimental.py's 34 tracing
    # cases, whose ttnn.tracer raises in that mode in TT-NN as in device_sim). peer/plugin.py keeps that rule.
    (tmp_path / "tests" / "ttnn").mkdir(parents=True)
    (tmp_path / "tests" / "ttnn" / "test_marks.py").write_text(
        "import pytest\n\n\n@pytest.mark.requires_fast_runtime_mode_off\ndef test_traces():\n"
        "    raise AssertionError('ran')\n\n\ndef test_plain():\n    pass\n")
    env = {**os.environ, "TT_METAL_HOME": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    env.pop("TTNN_CONFIG_OVERRIDES", None)
    cmd = [sys.executable, "-m", "pytest", "-p", "peer.plugin", "-p", "no:ttreport", "-p", "no:cacheprovider",
           "--noconftest", "--rootdir", str(tmp_path), "-c", os.devnull, "-q", "tests/ttnn/test_marks.py"]
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert "1 passed, 1 skipped" in run.stdout, run.stdout


def test_the_optimal_worker_cores_of_a_sharded_tensor_are_its_shard_cores_each_once(device):
    # test_get_optimal_worker_cores_for_sharded_tensor.py (its NOC.NOC_0 default needs ttnn.NOC to import)
    assert (ttnn.NOC.NOC_0, ttnn.NOC.NOC_1, ttnn.NOC_MODE.DM_DYNAMIC_NOC) == (0, 1, 1)

    def cores(cfg, shape):
        t = ttnn.to_device(ttnn.from_torch(torch.rand(shape), layout=ttnn.ROW_MAJOR), device, memory_config=cfg)
        return [(c.x, c.y) for c in ttnn.get_optimal_worker_cores_for_sharded_tensor(t)]

    row = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 0))})
    height = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
                               ttnn.ShardSpec(row, [32, 64], ttnn.ShardOrientation.ROW_MAJOR))
    assert cores(height, (1, 1, 128, 64)) == [(0, 0), (1, 0), (2, 0), (3, 0)]  # 4 shards on an 8-core row
    square = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(3, 3))})
    block = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.BLOCK_SHARDED, ttnn.BufferType.L1,
                              ttnn.ShardSpec(square, [32, 32], ttnn.ShardOrientation.COL_MAJOR))
    assert cores(block, (1, 1, 64, 64)) == [(0, 0), (0, 1), (1, 0), (1, 1)]  # GRID_2D: the 2x2 corner, by column
    four = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(3, 0))})
    nd = ttnn.MemoryConfig(buffer_type=ttnn.BufferType.L1, nd_shard_spec=ttnn.NdShardSpec(
        shard_shape=[2, 1, 32, 64], grid=four, orientation=ttnn.ShardOrientation.ROW_MAJOR))
    assert cores(nd, (2, 1, 256, 64)) == [(0, 0), (1, 0), (2, 0), (3, 0)]  # 8 shards round-robin: each core once
    with pytest.raises(RuntimeError, match="Tensor must be on device"):
        ttnn.get_optimal_worker_cores_for_sharded_tensor(ttnn.from_torch(torch.rand(32, 64)))
    with pytest.raises(RuntimeError, match="Tensor must be sharded"):
        ttnn.get_optimal_worker_cores_for_sharded_tensor(ttnn.from_torch(torch.rand(32, 64), device=device))


# -- ttnn.ComplexTensor and the complex ops (round 14: nightly eltwise/complex, backward/complex_ops) ------------------


def test_complex_ops_take_a_complex_tensor_and_compose_element_wise_ops_as_tt_nn_does(device):
    # nightly test_complex.py and backward/complex_ops/*: ttnn.complex_tensor(real, imag), the overloads of abs,
    # reciprocal, multiply, divide, mul_bw, sub_bw (alpha), and ttnn.Tensor(t) of a tensor (pytensor.cpp's copy
    # constructor) as the tests wrap a gradient
    zt = torch.complex(torch.tensor([[3.0, -1.0, 0.5]]), torch.tensor([[4.0, 2.0, -0.25]]))
    wt = torch.complex(torch.tensor([[1.0, 2.0, -3.0]]), torch.tensor([[-1.0, 0.5, 2.0]]))

    def cplx(t):
        parts = (ttnn.from_torch(p, dtype=ttnn.float32, layout=ttnn.TILE, device=device) for p in (t.real, t.imag))
        return ttnn.complex_tensor(*parts)

    def torch_of(c):
        return torch.complex(ttnn.to_torch(c.real), ttnn.to_torch(c.imag))

    z, w = cplx(zt), cplx(wt)
    assert z[0] is z.real and ttnn.real(z) is z.real and ttnn.Tensor(z.imag) is z.imag
    assert repr(z) == f"ComplexTensor(real=tensor {z.real.tensor_id}, imag=tensor {z.imag.tensor_id})"
    torch.testing.assert_close(ttnn.to_torch(ttnn.abs(z)), zt.abs())
    torch.testing.assert_close(torch_of(ttnn.multiply(z, w)), zt * wt)
    torch.testing.assert_close(torch_of(ttnn.divide(z, w)), zt / wt)
    torch.testing.assert_close(torch_of(ttnn.reciprocal(z)), 1 / zt)
    torch.testing.assert_close(torch_of(ttnn.conj(z)), zt.conj().resolve_conj())
    torch.testing.assert_close(ttnn.to_torch(ttnn.angle(z)), zt.angle())
    # backward: TT-NN's goldens give each gradient as [real | imag] in the last dim
    for op, args, golden_args in ((ttnn.mul_bw, (z, w), (zt, wt)), (ttnn.sub_bw, (z, w, 3.5), (zt, wt, 3.5))):
        got = op(cplx(wt), *args, memory_config=ttnn.DRAM_MEMORY_CONFIG)
        want = ttnn.get_golden_function(op)(wt, *golden_args[:2], alpha=3.5) if op is ttnn.sub_bw else \
            ttnn.get_golden_function(op)(wt, *golden_args)
        for g, e in zip(got, want):
            torch.testing.assert_close(torch.cat((ttnn.to_torch(g.real), ttnn.to_torch(g.imag)), -1), e)
    [dz] = ttnn.angle_bw(z.real, z, memory_config=ttnn.DRAM_MEMORY_CONFIG)
    [want] = ttnn.get_golden_function(ttnn.angle_bw)(zt.real, zt)
    torch.testing.assert_close(torch.cat((ttnn.to_torch(dz.real), ttnn.to_torch(dz.imag)), -1), want)
    with pytest.raises(TypeError, match="ttnn.neg takes no ttnn.ComplexTensor"):
        ttnn.neg(z)
    with pytest.raises(ValueError, match="real has shape \\[1, 3\\] and imag \\[40, 3\\]"):  # padded: 32 vs 64 rows
        ttnn.complex_tensor(z.real, ttnn.from_torch(torch.ones(40, 3), layout=ttnn.TILE, device=device))


def test_an_nd_sharded_tensor_round_trips_through_dump_and_load_with_its_spec(device, tmp_path):
    # test_tensor_serialization.py: TensorSpec.block_sharded / sharded_across_dims_except give an ND shard spec
    # (no 2D shard_spec); the file kept only the 2D one, so loading it failed ("needs a shard_spec")
    grid = ttnn.num_cores_to_corerangeset(56, [8, 7], True)
    spec = ttnn.TensorSpec((2, 3, 40, 50), ttnn.float32, ttnn.TILE_LAYOUT, buffer_type=ttnn.BufferType.L1
                           ).block_sharded(grid)
    v = torch.rand(2, 3, 40, 50)
    ttnn.dump_tensor(str(tmp_path / "t.tensorbin"), ttnn.from_torch(v, spec=spec, device=device))
    back = ttnn.load_tensor(str(tmp_path / "t.tensorbin"), device=device)
    assert back.spec == spec and torch.equal(ttnn.to_torch(back), v)


def test_tracy_calls_run_as_in_a_tt_nn_build_without_tracy():
    # tt-metal's tracy package (tools/tracy, installed as `tracy`): its signpost() calls ttnn.tracy_message, and
    # unit_tests/operations/data_movement/test_tilize.py's trace-mode cases signpost; TT-NN built without Tracy (the
    # default) compiles op_profiler's calls to nothing, and stop_tracy_zone reports no zone closed
    assert ttnn.tracy_message("`TT_SIGNPOST: start`") is None
    assert ttnn.start_tracy_zone("model.py", "forward", 12, color=3) is None and ttnn.stop_tracy_zone("f") is False
    assert ttnn.tracy_frame() is None


def test_the_attention_matmuls_multiply_each_users_q_heads_by_that_users_kv(device):
    # nightly matmul/test_attn_matmul.py (603 cases, none ran: the three ops were missing): attn_matmul,
    # attn_matmul_from_cache and group_attn_matmul give (a.transpose(0, 2) @ b).transpose(0, 2), each on the whole grid
    grid = ttnn.CoreCoord(8, 8)
    q, kv = torch.randn(1, 4, 32, 64), torch.randn(32, 2, 64, 96)

    def tile(v):
        return ttnn.from_torch(v, ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)

    def want(a, b):
        return (a.transpose(0, 2) @ b).transpose(0, 2)

    outs = []
    [program] = launched(device, lambda: outs.append(ttnn.experimental.group_attn_matmul(
        tile(q), tile(kv), compute_with_storage_grid_size=grid, memory_config=ttnn.MemoryConfig(
            ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1))))
    assert program.name == "GroupAttnMatmulDeviceOperation" and program.ranges == ((0, 0, 7, 7),)
    # a HEIGHT_SHARDED output without a spec: one q head a core, [batch, N] a shard, column by column by default
    spec = outs[0].memory_config().shard_spec
    assert spec.shape == (32, 96) and spec.num_cores() == 4 and spec.orientation == ttnn.ShardOrientation.COL_MAJOR
    torch.testing.assert_close(ttnn.to_torch(outs[0]), want(q, kv.repeat_interleave(2, dim=1)))
    one = kv[:, :1]
    torch.testing.assert_close(ttnn.to_torch(ttnn.experimental.attn_matmul(
        tile(q), tile(one), compute_with_storage_grid_size=grid)), want(q, one))
    cache = torch.randn(32, 1, 128, 64)  # 40 tokens are read as 64, transposed for the pre-softmax product
    got = ttnn.experimental.attn_matmul_from_cache(tile(q), tile(cache), num_tokens=40, transpose_hw=True,
                                                   compute_with_storage_grid_size=grid)
    torch.testing.assert_close(ttnn.to_torch(got), want(q, cache[:, :, :64].transpose(-2, -1)))
    with pytest.raises(RuntimeError, match="Number of kv_heads must be 1"):
        ttnn.experimental.attn_matmul(tile(q), tile(kv), compute_with_storage_grid_size=grid)
    with pytest.raises(RuntimeError, match="Only batch 32 is supported"):
        ttnn.experimental.group_attn_matmul(tile(q.repeat(1, 1, 2, 1)), tile(kv.repeat(2, 1, 1, 1)),
                                            compute_with_storage_grid_size=grid)


def test_interleaved_to_sharded_over_a_grid_size_takes_only_the_cores_its_shards_need(device):
    # interleaved_to_sharded.cpp: given a grid size (compute_with_storage_grid_size()), num_cores_to_corerangeset of
    # the padded shape's shard count; device_sim spread 4 shards over all 64 cores, so test_attn_matmul.py's
    # 'Q heads must be sharded on number of q heads' failed (251 cases)
    t = ttnn.from_torch(torch.rand(1, 4, 32, 64), layout=ttnn.TILE_LAYOUT, device=device)
    s = ttnn.interleaved_to_sharded(t, device.compute_with_storage_grid_size(), [32, 64],
                                    ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.ShardOrientation.COL_MAJOR)
    assert s.memory_config().shard_spec.grid == ttnn.num_cores_to_corerangeset(4, ttnn.CoreCoord(8, 8), False)
    assert torch.equal(ttnn.to_torch(s), ttnn.to_torch(t))


def test_dram_group_norm_params_from_torch_lays_out_gamma_beta_and_the_mask_for_a_dram_group_norm(device):
    # unit_tests/operations/fused/test_group_norm_DRAM.py (84 cases): TT-NN's Python helpers
    # dram_group_norm_params_from_torch, dram_group_norm_virtual_columns (compute_num_virtual_cols: the most columns
    # up to grid x and the groups that divide the groups and leave multiples of 32 channels) and
    # create_group_norm_reciprocals (1/1 .. 1/n a core, one row a core)
    grid = ttnn.CoreGrid(y=8, x=8)
    assert ttnn.dram_group_norm_virtual_columns(grid, 768, 32) == 8
    assert ttnn.dram_group_norm_virtual_columns(grid, 384, 6) == 6  # 64 channels a column
    assert ttnn.dram_group_norm_virtual_columns(grid, 480, 8) == 1  # no other count leaves multiples of 32
    with pytest.raises(ValueError, match="num_channels=48"):
        ttnn.dram_group_norm_virtual_columns(grid, 48, 3)
    recips = ttnn.create_group_norm_reciprocals(1, 128, 16, 16, 8, ttnn.CoreGrid(y=2, x=4))
    # 16 channels x 8 height tiles a group, over the 2 virtual rows one image takes: 64 a core
    assert recips.shape == (8, 64) and torch.equal(recips[3], 1 / torch.arange(1, 65.0))
    torch.manual_seed(0)
    n, c, hw, groups = 2, 256, 64, 8
    x, w, b = torch.rand(n, 1, hw, c), torch.rand(c), torch.rand(c)
    [gamma, beta], mask = ttnn.dram_group_norm_params_from_torch([w, b], c, groups, device, core_grid=grid)
    assert gamma.layout == ttnn.ROW_MAJOR_LAYOUT and gamma.shape == (1, 1, c // 32, 32) and mask.device() is not None
    x_dev = ttnn.from_torch(x, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    y = ttnn.group_norm(x_dev, num_groups=groups, input_mask=mask, weight=gamma, bias=beta, core_grid=grid,
                        memory_config=ttnn.DRAM_MEMORY_CONFIG, inplace=False, num_out_blocks=1)
    want = torch.nn.functional.group_norm(x.permute(0, 3, 1, 2), groups, w, b, eps=1e-12).permute(0, 2, 3, 1)
    torch.testing.assert_close(ttnn.to_torch(y).float(), want, rtol=0.05, atol=0.05)


def test_moreh_softmax_softmin_logsoftmax_and_backwards_pick_tt_nns_factories(device):
    # nightly moreh/test_moreh_softmax.py, _softmin.py, _logsoftmax.py, _logsoftmax_ulp.py did not import:
    # ttnn.operations.moreh.SoftmaxOpParallelizationStrategy and the six ops were missing
    moreh = ttnn.operations.moreh
    v = torch.rand(2, 3, 64, 96)
    t = ttnn.from_torch(v, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    for op, want, dim, factory in ((moreh.softmax, torch.softmax(v, 3), 3, "MorehSoftmaxWSmallFactory"),
                                   (moreh.softmin, torch.softmax(-v, 2), 2, "MorehSoftmaxHSmallFactory"),
                                   (moreh.logsoftmax, torch.log_softmax(v, 1), 1, "MorehSoftmaxCLargeFactory")):
        outs = []
        [program] = launched(device, lambda op=op, dim=dim, outs=outs: outs.append(op(t, dim)))
        assert program.factory == factory
        torch.testing.assert_close(ttnn.to_torch(outs[0]).float(), want, atol=0.02, rtol=0.02)
    y = torch.softmax(v, 3)
    dy = torch.rand(2, 3, 64, 96)
    yt, dyt = (ttnn.from_torch(a, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device) for a in (y, dy))
    outs = []
    strategy = moreh.SoftmaxBackwardOpParallelizationStrategy.LARGE_W
    [program] = launched(device, lambda: outs.append(moreh.softmax_backward(yt, dyt, 3, strategy=strategy)))
    assert program.factory == "MorehSoftmaxBackwardWLargeFactory"
    want = y * (dy - (y * dy).sum(3, keepdim=True))
    torch.testing.assert_close(ttnn.to_torch(outs[0]).float(), want, atol=0.02, rtol=0.05)
    with pytest.raises(RuntimeError, match="SMALL_H is not for dim W"):
        moreh.softmax(t, 3, strategy=moreh.SoftmaxOpParallelizationStrategy.SMALL_H)


def test_tanh_bw_and_gelu_bw_keep_their_tails_as_tt_nn_s_derivative_kernels_do(device):
    # unit eltwise test_tanh_bw_ulp.py / test_gelu_bw_ulp.py: within 2 bfloat16 ULPs of the exact derivative. tanh_bw's
    # kernel computes sech^2 as 4 e^-2|x| / (1 + e^-2|x|)^2 (1 - tanh^2 is 0 in float32 at x = 10); gelu_bw's minimax
    # polynomial keeps Phi(-6) = 9.9e-10 that float32's 1 + erf(x / sqrt 2) loses
    x = ttnn.from_torch(torch.tensor([[10.0, -20.0, -6.0, 0.5]]), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    g = ttnn.from_torch(torch.ones(1, 4), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    x64 = torch.tensor([10.0, -20.0, -6.0, 0.5], dtype=torch.float64)
    sech2 = 1 / torch.cosh(x64) ** 2
    gelu_d = 0.5 * torch.special.erfc(-x64 / 2 ** 0.5) + x64 * torch.exp(-x64 * x64 / 2) / (2 * torch.pi) ** 0.5
    [dt] = ttnn.tanh_bw(g, x)
    [dg] = ttnn.gelu_bw(g, x)
    torch.testing.assert_close(ttnn.to_torch(dt).double()[0], sech2, rtol=2 * 2 ** -8, atol=0)
    torch.testing.assert_close(ttnn.to_torch(dg).double()[0], gelu_d, rtol=2 * 2 ** -8, atol=1e-37)  # -20: 1e-86, 0
    assert ttnn.to_torch(ttnn.tanh_bw(g, ttnn.from_torch(torch.full((1, 4), 60.0), dtype=ttnn.bfloat16,
                                                         layout=ttnn.TILE, device=device))[0]).abs().max() == 0


def test_to_torch_gives_uint16_and_uint32_tensors_as_torch_s_own_unsigned_dtypes(device):
    # test_tensor_nd_sharding.py: torch.allclose(torch.uint16 input, ttnn.to_torch(t)) needs the same dtype; TT-NN's
    # Tensor.to_torch hands torch the host buffer in the device dtype (pytensor.cpp), device_sim gave int32 / int64
    for dtype, torch_dtype in ((ttnn.uint16, torch.uint16), (ttnn.uint32, torch.uint32)):
        v = torch.randint(0, 60000, (3, 4, 5), dtype=torch.int64).to(torch_dtype)
        t = ttnn.from_torch(v, dtype=dtype, device=device)
        assert ttnn.to_torch(t).dtype == torch_dtype and torch.allclose(ttnn.to_torch(t), v)
        assert ttnn.to_torch(t, dtype=torch.int64).dtype == torch.int64  # an asked dtype still wins
    indices = ttnn.argmax(ttnn.from_torch(torch.rand(1, 1, 32, 64), layout=ttnn.TILE, device=device), dim=-1)
    assert ttnn.to_torch(indices).dtype == torch.uint32


def test_grid_sample_samples_an_nhwc_input_bilinearly_at_a_normalised_grid(device):
    # unit_tests/operations/pool/test_grid_sample.py (42 cases; the file imported golden_grid_sample from
    # ttnn.operations.pool): GridSampleOperation's bilinear kernel, zeros outside, the weights in the input's dtype;
    # K coordinate pairs a point lay the samples along W, or along C with batch_output_channels
    torch.manual_seed(0)
    x = torch.randn(2, 16, 16, 64, dtype=torch.bfloat16)
    grid = torch.rand(2, 6, 5, 4) * 2.4 - 1.2  # two points each, some past the edges
    x_dev = ttnn.from_torch(x, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)
    g_dev = ttnn.from_torch(grid, ttnn.float32, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)
    outs = []
    [program] = launched(device, lambda: outs.append(ttnn.grid_sample(x_dev, g_dev)))
    assert (program.name, outs[0].shape, outs[0].layout) == ("GridSampleOperation", (2, 6, 10, 64),
                                                              ttnn.ROW_MAJOR_LAYOUT)
    want = ttnn.operations.pool.golden_grid_sample(x, grid)
    assert torch.allclose(ttnn.to_torch(outs[0]).float(), want.float(), atol=0.02, rtol=1e-2)
    wide = ttnn.grid_sample(x_dev, g_dev, batch_output_channels=True)
    assert torch.equal(ttnn.to_torch(wide), ttnn.to_torch(outs[0]).reshape(2, 6, 5, 128))
    with pytest.raises(RuntimeError, match="use_precomputed_grid = false is not supported with mode = 'nearest'"):
        ttnn.grid_sample(x_dev, g_dev, mode="nearest")
    with pytest.raises(RuntimeError, match="divisible by TILE_WIDTH"):
        ttnn.grid_sample(ttnn.from_torch(x[..., :48], layout=ttnn.ROW_MAJOR_LAYOUT, device=device), g_dev)


def test_fmod_golden_takes_a_bfloat16_tensor_and_a_number_in_float32_as_tt_nn_s(device):
    # unit_tests/operations/eltwise/test_div_ops.py::test_unary_fmod: TT-NN's golden (ttnn/operations/binary.py)
    # takes a bfloat16 tensor in float32 against a number, as for remainder: fmod(-0.75, -0.0029) is -0.0018, which
    # the device gives; in bfloat16 the number rounds to -0.0028992 and the result to -0.0020 (atol 0.001 apart)
    x = torch.tensor([[-0.75, 53.75, -82.5]], dtype=torch.bfloat16)
    want = torch.fmod(x.float(), -0.0029).bfloat16()
    assert torch.equal(ttnn.get_golden_function(ttnn.fmod)(x, -0.0029), want)
    got = ttnn.fmod(ttnn.from_torch(x, layout=ttnn.TILE_LAYOUT, device=device), -0.0029)
    assert torch.equal(ttnn.to_torch(got), want)


def test_a_partial_host_to_device_copy_writes_only_the_shards_on_the_filter_s_cores(device):
    # test_copy_host_to_device_tensor_partial.py: two complementary filters rebuild the full copy; an empty filter
    # writes nothing; DRAM shards' cores are (bank, 0); TT-NN refuses an interleaved tensor (RuntimeError)
    def sharded(buffer_type, end):
        grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), end)})
        cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, buffer_type, ttnn.ShardSpec(grid, (32, 32)))
        return ttnn.allocate_tensor_on_device(ttnn.Shape([1, 1, 64, 32]), ttnn.uint32, ttnn.ROW_MAJOR, device, cfg)

    ref = torch.randint(0, 2**16, (1, 1, 64, 32), dtype=torch.int64).to(torch.uint32)
    host = ttnn.from_torch(ref, dtype=ttnn.uint32)
    core = lambda x, y: ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(x, y), ttnn.CoreCoord(x, y))})  # noqa: E731
    for buffer_type, end, second in ((ttnn.BufferType.L1, ttnn.CoreCoord(0, 1), core(0, 1)),
                                     (ttnn.BufferType.DRAM, ttnn.CoreCoord(1, 0), core(1, 0))):
        dev = sharded(buffer_type, end)
        ttnn.copy_host_to_device_tensor_partial(host, dev, core(0, 0))
        got = ttnn.to_torch(dev)
        assert torch.equal(got[..., :32, :], ref[..., :32, :]) and not got[..., 32:, :].any()
        ttnn.copy_host_to_device_tensor_partial(host, dev, second)
        assert torch.equal(ttnn.to_torch(dev), ref)
    dev = sharded(ttnn.BufferType.L1, ttnn.CoreCoord(0, 1))
    ttnn.copy_host_to_device_tensor_partial(host, dev, ttnn.CoreRangeSet([]))
    assert not ttnn.to_torch(dev).any()
    with pytest.raises(RuntimeError, match="needs a sharded tensor"):
        interleaved = ttnn.allocate_tensor_on_device(ttnn.Shape([1, 1, 64, 32]), ttnn.uint32, ttnn.ROW_MAJOR, device)
        ttnn.copy_host_to_device_tensor_partial(host, interleaved, core(0, 0))


def test_mambas_hc_sum_reduce_and_prefix_scan_run_as_tt_nns_ssm_ops(device):
    # nightly ssm/test_ssm_1d_sum_reduce.py and test_ssm_prefix_scan.py: ttnn.experimental.hc_sum_reduce and
    # prefix_scan were missing (0 of 51); prefix_scan also leaves the last hidden state in h_prev
    v = torch.randn(1, 1, 32, 2048)
    x = ttnn.from_torch(v, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    outs = []
    [program] = launched(device, lambda: outs.append(ttnn.experimental.hc_sum_reduce(x)))
    assert program.name == "HCSumReduceDeviceOperation" and outs[0].padded_shape == ttnn.Shape([1, 1, 32, 64])
    torch.testing.assert_close(ttnn.to_torch(outs[0]).float(), v.bfloat16().float().reshape(1, 1, 32, 64, 32).sum(-1),
                               atol=0.1, rtol=0.02)
    grid = ttnn.num_cores_to_corerangeset(2, ttnn.CoreCoord(8, 8), True)

    def sharded(t, rows, layout=ttnn.TILE_LAYOUT):
        spec = ttnn.ShardSpec(grid, [rows, 32], ttnn.ShardOrientation.ROW_MAJOR)
        cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.L1, spec)
        return ttnn.from_torch(t, ttnn.bfloat16, layout=layout, device=device, memory_config=cfg)

    a, bx, h0 = torch.rand(1, 1, 64, 64), torch.randn(1, 1, 64, 64), torch.randn(1, 1, 1, 64)
    h_prev = sharded(h0, 1, ttnn.ROW_MAJOR_LAYOUT)
    got = ttnn.experimental.prefix_scan(sharded(a, 64), sharded(bx, 64), h_prev)
    h, want = h0[0, 0, 0].bfloat16().float(), []
    for i in range(64):
        h = a.bfloat16().float()[0, 0, i] * h + bx.bfloat16().float()[0, 0, i]
        want.append(h)
    torch.testing.assert_close(ttnn.to_torch(got).float()[0, 0], torch.stack(want), atol=0.05, rtol=0.02)
    torch.testing.assert_close(ttnn.to_torch(h_prev).float()[0, 0, 0], want[-1], atol=0.05, rtol=0.02)
    with pytest.raises(RuntimeError, match="Expected input tensors to be sharded"):
        ttnn.experimental.prefix_scan(x, x, h_prev)


def test_narrowing_an_l1_sharded_tensor_within_its_shards_narrows_the_shard_spec(device):
    # test_narrow.py l1_height_sharded_dim3_tile: TT-NN's narrow.cpp gives the view a shard cut to the narrowed
    # width ([32, 32] of [32, 128]) on the cores holding the range; device_sim kept [32, 128], wider than the output
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(3, 3))})
    cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
                            ttnn.ShardSpec(grid, (32, 128), ttnn.ShardOrientation.ROW_MAJOR))
    v = torch.rand(1, 8, 64, 128)
    out = ttnn.narrow(ttnn.from_torch(v, layout=ttnn.TILE, device=device, memory_config=cfg), 3, 32, 32)  # float32
    spec = out.memory_config().shard_spec
    assert out.memory_config().memory_layout == ttnn.TensorMemoryLayout.HEIGHT_SHARDED and spec.shape == (32, 32)
    assert spec.grid.num_cores() == 16 and torch.equal(ttnn.to_torch(out), v[..., 32:64])


def test_from_buffer_makes_a_tensor_of_a_flat_list_in_a_shape(device):
    # docs_examples test_tensor_creation_examples.py: ttnn.from_buffer(buffer=, shape=, dtype=, layout=, device=)
    # (creation_nanobind.cpp); a buffer of the wrong length is Tensor::from_vector's TT_FATAL
    t = ttnn.from_buffer(buffer=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], dtype=ttnn.bfloat16,
                         layout=ttnn.ROW_MAJOR_LAYOUT, device=device)
    assert t.device() is not None and t.layout == ttnn.ROW_MAJOR_LAYOUT
    assert ttnn.to_torch(t).tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert ttnn.to_torch(ttnn.from_buffer([7, 8], [1, 2], ttnn.int32, device)).dtype == torch.int32
    with pytest.raises(RuntimeError, match="the buffer holds 3 values but shape \\[2, 2\\] takes 4"):
        ttnn.from_buffer([1.0, 2.0, 3.0], [2, 2], ttnn.float32, device)


def test_int32_division_gives_float32_and_the_logical_shifts_are_bound(device):
    # unit_tests/operations/eltwise/test_binary_int32.py (855 cases; it failed to import without
    # ttnn.logical_left_shift): binary_ng's DIV of INT32 by INT32 or a number is FLOAT32 ("Integer division results
    # in FP32 outputs"; rounding_mode trunc / floor stay INT32, another output dtype is refused); logical_left_shift
    # is LEFT_SHIFT, logical_right_shift shifts the 32 bits unsigned (TT-NN's golden: (a & 0xFFFFFFFF) >> b)
    a = ttnn.from_torch(torch.tensor([[7, -7, 9, -1]], dtype=torch.int32), layout=ttnn.TILE_LAYOUT, device=device)
    b = ttnn.from_torch(torch.tensor([[2, 2, -4, 28]], dtype=torch.int32), layout=ttnn.TILE_LAYOUT, device=device)
    q = ttnn.div(a, b)
    want = torch.tensor([[7, -7, 9, -1]]) / torch.tensor([[2, 2, -4, 28]])  # float32 true division
    assert q.dtype == ttnn.float32 and torch.equal(ttnn.to_torch(q), want)
    assert ttnn.divide(a, 2).dtype == ttnn.float32
    assert ttnn.to_torch(ttnn.div(a, b, rounding_mode="floor")).tolist() == [[3, -4, -3, -1]]
    with pytest.raises(RuntimeError, match="Incorrect output_dtype value for Integer Division"):
        ttnn.div(a, b, dtype=ttnn.int32)
    assert ttnn.to_torch(ttnn.logical_right_shift(a, b)).tolist() == [[1, 1073741822, 0, 15]]
    assert torch.equal(ttnn.to_torch(ttnn.logical_left_shift(a, 3)), ttnn.to_torch(ttnn.bitwise_left_shift(a, 3)))


def test_gather_writes_into_a_preallocated_out(device):
    # unit_tests/operations/data_movement/test_gather.py::test_gather_preallocated_output: gather_nanobind.cpp binds
    # out=, the tensor the result is written into
    x = ttnn.from_torch(torch.tensor([[10.0, 20.0, 30.0]]), layout=ttnn.TILE_LAYOUT, device=device)
    i = ttnn.from_torch(torch.tensor([[2, 0]]), dtype=ttnn.uint16, layout=ttnn.TILE_LAYOUT, device=device)
    out = ttnn.from_torch(torch.zeros(1, 2), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    ttnn.gather(x, -1, index=i, out=out)
    assert ttnn.to_torch(out).tolist() == [[30.0, 10.0]]


def test_per_core_allocation_gives_each_core_its_own_top_down_free_list_clear_of_lock_step_buffers(device):
    # per_core_allocation/test_per_core_allocation.py: MemoryConfig.experimental_set_per_core_allocation makes each
    # shard take its own address; two cores can share one, lock-step buffers never overlap them, and a freed
    # shard's space comes back
    def tensor(core, size, per_core=True):
        spec = ttnn.ShardSpec(ttnn.CoreRangeSet([ttnn.CoreRange(core, core)]), [1, size])
        cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec)
        if per_core:
            cfg.experimental_set_per_core_allocation(True)
        return ttnn.from_torch(torch.zeros(1, size, dtype=torch.uint8), dtype=ttnn.uint8, device=device,
                               memory_config=cfg)

    c0, c1 = ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 0)
    a, b = tensor(c0, 2048), tensor(c1, 2048)
    top = a.experimental_per_core_buffer_address(c0)
    assert b.experimental_per_core_buffer_address(c1) == top  # independent lists, the same top
    below = tensor(c0, 1024)
    assert below.experimental_per_core_buffer_address(c0) == top - 1024  # top-down under the first shard
    lock = tensor(c1, 4096, per_core=False)  # lock-step: below every per-core shard on every core
    assert lock.buffer_address() + 4096 <= top - 1024
    del a
    again = tensor(c0, 2048)
    assert again.experimental_per_core_buffer_address(c0) == top  # the freed shard's space comes back
    with pytest.raises(RuntimeError, match="holds no shard"):
        again.experimental_per_core_buffer_address(c1)
    ttnn.deallocate(again)  # frees its shard now, not when the tensor object dies
    assert tensor(c0, 2048).experimental_per_core_buffer_address(c0) == top


def test_where_gives_tt_nn_s_output_dtype_and_keeps_integer_scalars_whole(device):
    # unit test_where.py, every case: an INT32 / UINT32 predicate with float scalars is typecast to FLOAT32 first
    # (unary.cpp's where_tss), so 31.2 stays 31.2; TTT gives the true value's dtype (ternary.cpp); integer scalars
    # keep all 32 bits; a NaN scalar is stored as +inf in a bfloat16 output
    c = torch.tensor([[1, 0, 1, 0]], dtype=torch.int32)
    pred = ttnn.from_torch(c, dtype=ttnn.int32, layout=ttnn.TILE, device=device)
    out = ttnn.where(pred, 15.5, 31.2)
    assert out.dtype == ttnn.float32 and torch.equal(ttnn.to_torch(out), torch.where(c.bool(), 15.5, 31.2))
    t = ttnn.from_torch(torch.rand(1, 4), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    f = ttnn.from_torch(torch.rand(1, 4), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert ttnn.where(pred, t, f).dtype == ttnn.float32
    big = ttnn.where(pred, 2147483647, -2147483648)
    assert big.dtype == ttnn.int32 and ttnn.to_torch(big).tolist() == [[2147483647, -2147483648] * 2]
    fpred = ttnn.from_torch(c.bfloat16(), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert ttnn.to_torch(ttnn.where(fpred, float("nan"), 0.0)).float().tolist() == [[float("inf"), 0.0] * 2]


def test_dit_layernorm_pre_and_post_allgather_pool_welford_stats_of_the_slices(device):
    # nightly transformers/test_distributed_dit_layernorm.py: ttnn.experimental.dit_layernorm_pre_allgather /
    # _post_allgather were missing. Two slices of one row, each [mean, var] in column 0 of its own tile; the post op
    # pools them and applies an affine per batch element ([batch, 32, width] TILE weights, Motif's)
    v = torch.randn(1, 2, 32, 128) * 3 + 1
    recip = ttnn.create_layer_norm_reciprocals(
        device, ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 7))}), 64)

    def tile(t):
        return ttnn.from_torch(t, ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)

    halves = [tile(h) for h in v.chunk(2, -1)]
    outs = []
    [program] = launched(device, lambda: outs.append(ttnn.experimental.dit_layernorm_pre_allgather(
        halves[0], recip, dtype=ttnn.float32)))
    assert program.factory == "PreAllGatherWelfordProgramFactory"
    first = ttnn.to_torch(outs[0])
    torch.testing.assert_close(first[..., 0], v[..., :64].mean(-1), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(first[..., 32], v[..., :64].var(-1, unbiased=False), atol=1e-3, rtol=1e-4)
    stats = ttnn.concat([ttnn.experimental.dit_layernorm_pre_allgather(h, recip, dtype=ttnn.float32) for h in halves],
                        -1)
    w, b = torch.rand(2, 1, 128), torch.rand(2, 1, 128)
    got = [ttnn.to_torch(ttnn.experimental.dit_layernorm_post_allgather(
        halves[i], stats, weight=tile(w.expand(2, 32, 128).chunk(2, -1)[i]),
        bias=tile(b.expand(2, 32, 128).chunk(2, -1)[i]))) for i in range(2)]
    want = torch.nn.functional.layer_norm(v, (128,), eps=1e-5) * w + b
    torch.testing.assert_close(torch.cat(got, -1), want, atol=1e-3, rtol=1e-3)
    with pytest.raises(RuntimeError, match="Beta must be provided when gamma is provided"):
        ttnn.experimental.dit_layernorm_post_allgather(halves[0], stats, weight=tile(w.expand(2, 32, 128)[..., :64]))


def test_layer_norm_takes_a_gamma_zero_padded_to_the_inputs_padded_width(device):
    # nightly fused/test_layernorm.py's mix-precision cases: pad_by_zero makes a 42-wide input's gamma a [1, 1, 32, 64]
    # TILE tensor; TT-NN reads each tile's first row up to the width, device_sim refused its 2048 values
    x = torch.rand(1, 1, 24, 42)
    gamma = torch.rand(42)
    g = torch.nn.functional.pad(gamma.reshape(1, 1, 1, 42), (0, 22, 0, 31))
    xt = ttnn.from_torch(x, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    gt = ttnn.from_torch(g, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    want = torch.nn.functional.layer_norm(x, (42,), gamma.bfloat16().float(), eps=1e-5)
    torch.testing.assert_close(ttnn.to_torch(ttnn.layer_norm(xt, weight=gt, epsilon=1e-5)).float(), want,
                               atol=0.05, rtol=0.02)


def test_addcmul_and_addcdiv_goldens_keep_the_input_dtype_as_tt_nn_s_do(device):
    # unit test_ternary.py: TT-NN's golden is torch.addcmul on the bfloat16 tensors (a bfloat16 result, the float32 one
    # rounded once); device_sim's was float32, so a sum near -36600 (a bfloat16 step of 256) scored PCC 0.935
    a = torch.full((1, 4), 100.0, dtype=torch.bfloat16) + torch.arange(4, dtype=torch.bfloat16)
    b, c = torch.tensor([[81.5]], dtype=torch.bfloat16), torch.tensor([[-29.125]], dtype=torch.bfloat16)
    for op, torch_op in ((ttnn.addcmul, torch.addcmul), (ttnn.addcdiv, torch.addcdiv)):
        golden = ttnn.get_golden_function(op)(a, b, c, value=15.5)
        assert golden.dtype == torch.bfloat16 and torch.equal(golden, torch_op(a, b, c, value=15.5))
        got = op(*(ttnn.from_torch(t, layout=ttnn.TILE, device=device) for t in (a, b, c)), value=15.5)
        assert torch.equal(ttnn.to_torch(got), golden)


def test_untilize_with_unpadding_reads_into_the_tile_padding_which_to_layout_s_pad_value_fills(device):
    # test_to_layout.py test_to_layout_pad_value_*: to_layout(t, TILE, pad_value=v) fills the tile padding with v, and
    # untilize_with_unpadding(t, padded_shape - 1) reads it back (TT-NN's kernel reads the padded tiles as they are);
    # device_sim ignored pad_value and refused an end past the logical shape
    x = torch.rand(30, 62, dtype=torch.bfloat16)
    tiled = ttnn.to_layout(ttnn.from_torch(x, dtype=ttnn.bfloat16, device=device), ttnn.TILE_LAYOUT, pad_value=1.5)
    out = ttnn.to_torch(ttnn.untilize_with_unpadding(tiled, [31, 63]))
    assert torch.equal(out, torch.nn.functional.pad(x, (0, 2, 0, 2), value=1.5))
    with pytest.raises(ValueError, match="each below that dim's size"):
        ttnn.untilize_with_unpadding(tiled, [32, 63])


def test_softmax_reads_a_row_major_mask_as_tt_nns_batch_rows_of_32(device):
    # nightly fused/test_softmax_sharded.py's test_scale_mask_softmax_rm: a ROW_MAJOR mask is [batch, 1, W / 32, 32]
    # (softmax_device_operation.cpp's expected shape), one row of W per batch; device_sim refused [7, 1, 12, 32]
    x = torch.rand(2, 3, 64, 128)
    mask = (torch.rand(2, 1, 1, 128) > 0.5).float() * -1e4
    xt = ttnn.from_torch(x, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    mt = ttnn.from_torch(mask.reshape(2, 1, 4, 32), ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)
    got = ttnn.to_torch(ttnn.scale_mask_softmax(xt, 0.5, mt)).float()
    torch.testing.assert_close(got, torch.softmax(x.bfloat16().float() * 0.5 + mask, -1), atol=0.02, rtol=0.05)


def test_tilize_use_low_perf_and_single_core_run_tt_nn_s_single_core_factory(device):
    # test_to_layout.py: ttnn.tilize(x, use_low_perf=True) was refused as a keyword TT-NN's op lacks; it and
    # use_multicore=False select TilizeSingleCoreProgramFactory (a one-tile block when low-perf)
    x = ttnn.from_torch(torch.rand(64, 128), dtype=ttnn.bfloat16, device=device)
    (p,) = launched(device, lambda: ttnn.tilize(x, use_low_perf=True))
    assert (p.factory, p.ranges, p.cbs[0].num_pages) == ("TilizeSingleCoreProgramFactory", ((0, 0, 0, 0),), 1)
    (p,) = launched(device, lambda: ttnn.tilize(x, use_multicore=False))
    assert p.cbs[0].num_pages == 4  # the whole 4-tile row fits half of L1
    assert torch.equal(ttnn.to_torch(ttnn.tilize(x, use_low_perf=True)), ttnn.to_torch(x))


def test_sdpa_decode_takes_tt_nns_attention_sink_tile_and_scales_it(device):
    # nightly sdpa/test_sdpa_decode_sink.py: TT-NN's decode sink is a [padded heads, 32] tile with each head's logit in
    # column 0, which the kernel scales as it scales the scores (the test passes sink / scale); device_sim refused it
    B, H, S, D = 1, 4, 64, 32
    q, k, v = torch.randn(1, B, H, D), torch.randn(B, H, S, D), torch.randn(B, H, S, D)
    sink, scale = torch.randn(H) * 4, D ** -0.5
    tile = torch.nn.functional.pad(sink.reshape(H, 1) / scale, (0, 31))

    def dt(t):
        return ttnn.from_torch(t, ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)

    got = ttnn.transformer.scaled_dot_product_attention_decode(
        dt(q), dt(k), dt(v), cur_pos=[S - 1], scale=scale,
        attention_sink=ttnn.from_torch(tile, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device))
    scores = torch.einsum("hd,hsd->hs", q[0, 0], k[0]) * scale
    logits = torch.cat([scores, (tile[:, 0].bfloat16().float() * scale).reshape(H, 1)], -1)
    want = torch.einsum("hs,hsd->hd", torch.softmax(logits, -1)[:, :-1], v[0])
    torch.testing.assert_close(ttnn.to_torch(got)[0, 0], want, atol=1e-4, rtol=1e-4)


def test_tilize_with_zero_padding_takes_a_1d_tensor_over_2d_tiles(device):
    # test_to_layout.py test_tilize_with_padding_for_1D: a [W] row-major input tilizes to a [W] tensor whose padded
    # shape is [32, W rounded up] (TilizeWithValPaddingDeviceOperation's validate: 1-D logical, 2-D padded)
    v = torch.rand(50)
    out = ttnn.tilize_with_zero_padding(ttnn.from_torch(v, dtype=ttnn.float32, device=device))
    assert (out.shape, out.padded_shape, out.layout) == ((50,), (32, 64), ttnn.TILE)
    assert torch.equal(ttnn.to_torch(out), v)


def test_a_fused_activation_reads_the_binary_result_as_the_16_bit_destination_holds_it(device):
    # nightly test_binary_bcast_ext.py: add(..., activations=[ERFINV]) in bfloat16 (no fp32_dest_acc_en) applies ERFINV
    # to a + b rounded to bfloat16, as the test's golden does; in float32 the destination holds a + b whole
    a, b = torch.tensor([[0.5]]), torch.tensor([[0.400390625]])  # bfloat16-exact; a + b (0.900390625) is not
    for dtype, want in ((ttnn.bfloat16, torch.erfinv((a + b).bfloat16().float()).bfloat16().float()),
                        (ttnn.float32, torch.erfinv(a + b))):
        ta, tb = (ttnn.from_torch(t, dtype=dtype, layout=ttnn.TILE, device=device) for t in (a, b))
        got = ttnn.add(ta, tb, activations=[ttnn.UnaryOpType.ERFINV])
        torch.testing.assert_close(ttnn.to_torch(got).float(), want, rtol=0, atol=0)


def test_untilizing_a_row_of_tiles_too_wide_for_l1_runs_the_untilize_block_factory(device):
    # test_tilize_with_val_padding.py test_run_tilize_large_row_input, test_to_layout.py: a [32, 15916] tensor's
    # 498-tile row in two CBs passes L1 (untilize.cpp's is_enough_space), so UntilizeMultiCoreBlockProgramFactory
    # splits it as tilize's block factory does (8-tile blocks); the row-wide CBs overflowed L1
    v = torch.rand(32, 15916, dtype=torch.bfloat16)
    tiled = ttnn.to_layout(ttnn.from_torch(v, dtype=ttnn.bfloat16, device=device), ttnn.TILE_LAYOUT)
    programs = launched(device, lambda: ttnn.to_layout(tiled, ttnn.ROW_MAJOR_LAYOUT))
    assert [(p.factory, p.cbs[0].num_pages) for p in programs] == [("UntilizeMultiCoreBlockProgramFactory", 8)]
    assert torch.equal(ttnn.to_torch(ttnn.to_layout(tiled, ttnn.ROW_MAJOR_LAYOUT)), v)


def test_sdpa_decode_takes_a_mask_of_one_batch_for_every_user(device):
    # unit_tests/operations/sdpa/test_sdpa_decode.py::test_sdpa_decode_broadcast_mask_batch:
    # sdpa_decode_device_operation.cpp checks the mask's heads and length, not its batch; [1, 1, H, S] serves all
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 4, 32), torch.randn(2, 1, 64, 32), torch.randn(2, 1, 64, 32)
    mask = torch.zeros(1, 1, 4, 64)
    mask[..., 40:] = float("-inf")

    def dev(t):
        return ttnn.from_torch(t, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)

    one = ttnn.transformer.scaled_dot_product_attention_decode(dev(q), dev(k), dev(v), is_causal=False,
                                                               attn_mask=dev(mask))
    every = ttnn.transformer.scaled_dot_product_attention_decode(dev(q), dev(k), dev(v), is_causal=False,
                                                                 attn_mask=dev(mask.expand(1, 2, 4, 64).clone()))
    assert torch.equal(ttnn.to_torch(one), ttnn.to_torch(every))
    with pytest.raises(ValueError, match=r"give attn_mask \[1, B, H, S\]"):
        ttnn.transformer.scaled_dot_product_attention_decode(dev(q), dev(k), dev(v), is_causal=False,
                                                             attn_mask=dev(torch.zeros(1, 3, 4, 64)))


def test_fill_gives_an_integer_tensor_the_value_whole(device):
    # unit_tests/operations/eltwise/test_fill.py::test_fill_uint32: filled through float32, uint32's 4294967293 became
    # 2**32 - 1 and 2147483647 became 2**31; TT-NN's golden (torch.full in the tensor's dtype) keeps them
    x = ttnn.from_torch(torch.ones((1, 2), dtype=torch.uint32), dtype=ttnn.uint32, layout=ttnn.TILE_LAYOUT,
                        device=device)
    for value in (4294967293, 2147483647, 25.5):
        want = ttnn.get_golden_function(ttnn.fill)(torch.ones((1, 2), dtype=torch.uint32), value)
        assert torch.equal(ttnn.to_torch(ttnn.fill(x, value)), want)


def test_pad_refuses_sub_core_grids_on_one_core(device):
    # unit_tests/operations/data_movement/test_pad_subcoregrids.py: pad_device_operation.cpp's TT_FATAL, sub_core_grids
    # only with use_multicore=True
    t = ttnn.from_torch(torch.rand(1, 1, 32, 32), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(3, 3))])
    padding = ((0, 0), (0, 0), (0, 32), (0, 32))
    assert ttnn.pad(t, padding=padding, value=0, sub_core_grids=grid).shape == (1, 1, 64, 64)
    with pytest.raises(RuntimeError, match="sub_core_grids is only supported when use_multicore is true"):
        ttnn.pad(t, padding=padding, value=0, use_multicore=False, sub_core_grids=grid)


def test_sigmoid_accurate_is_sigmoid_under_tt_nn_s_deprecated_name(device):
    # unit_tests/operations/eltwise/test_sigmoid_accurate_21f.py: ttnn.sigmoid_accurate (unary.cpp: SIGMOID, accurate)
    x = ttnn.from_torch(torch.linspace(-8, 8, 64).reshape(2, 32), layout=ttnn.TILE_LAYOUT, device=device)
    assert torch.equal(ttnn.to_torch(ttnn.sigmoid_accurate(x)), ttnn.to_torch(ttnn.sigmoid(x)))
    assert torch.equal(ttnn.to_torch(ttnn.sigmoid_accurate(x, True)),
                       ttnn.to_torch(ttnn.sigmoid(x, fast_and_approximate_mode=True)))


def test_matmul_refuses_a_block_sharded_output_on_one_column_with_a_batched_b(device):
    # nightly matmul/test_matmul_block_sharded_1d_grid.py (issue #32306): create_simple_matmul_program_config refuses a
    # BLOCK_SHARDED output on a single row or column of cores when B is batched; device_sim ran it (5 DID NOT RAISE)
    a, b = (ttnn.from_torch(torch.randn(2, 64, 64), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
            for _ in range(2))

    def block(end):
        grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(*end))})
        shard = (64, 64) if end == (0, 1) else (128, 32)
        return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.BLOCK_SHARDED, ttnn.BufferType.L1,
                                 ttnn.ShardSpec(grid, shard, ttnn.ShardOrientation.ROW_MAJOR))

    for end in ((0, 1), (1, 0)):
        with pytest.raises(RuntimeError, match="BLOCK_SHARDED output on a 1D grid"):
            ttnn.matmul(a, b, memory_config=block(end))
    one_b = ttnn.from_torch(torch.randn(64, 64), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    assert ttnn.matmul(a, one_b, memory_config=block((0, 1))).shape == ttnn.Shape([2, 64, 64])  # B of batch 1 runs


def test_reductions_and_softmax_take_a_program_cache_entry_per_op_and_memory_config(device):
    # unit_tests/operations/{reduce/test_reduction,fused/test_softmax}_program_cache.py: TT-NN's compute_program_hash
    # keys an entry by the op's attributes and memory configs beyond its CBs, so sum and max of one shape, or one
    # softmax into DRAM and into L1, take two entries; the same call again takes none
    x = ttnn.from_torch(torch.rand(1, 1, 64, 64), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)

    def entries(*calls):
        before = device.num_program_cache_entries()
        for call in calls:
            call()
        return device.num_program_cache_entries() - before

    assert entries(lambda: ttnn.sum(x, dim=-1), lambda: ttnn.max(x, dim=-1), lambda: ttnn.sum(x, dim=-1)) == 2
    dram, l1 = ttnn.DRAM_MEMORY_CONFIG, ttnn.L1_MEMORY_CONFIG
    assert entries(lambda: ttnn.softmax(x, dim=-1, memory_config=dram),
                   lambda: ttnn.softmax(x, dim=-1, memory_config=l1),
                   lambda: ttnn.softmax(x, dim=-1, memory_config=l1)) == 2


def test_untilize_with_unpadding_of_a_height_sharded_tensor_cuts_the_shard_to_the_output(device):
    # test_to_layout.py test_untilize_with_unpadding_W_16: the output's shard is [rows a core, output width]
    # (UntilizeWithUnpaddingDeviceOperation::compute_output_specs); the input's [128, 32] shard was kept for 16 columns
    x = torch.rand(1, 1, 256, 16, dtype=torch.bfloat16)
    cfg = ttnn.create_sharded_memory_config([128, 32], core_grid=ttnn.CoreGrid(y=1, x=2),
                                            strategy=ttnn.ShardStrategy.HEIGHT,
                                            use_height_and_width_as_shard_shape=True)
    t = ttnn.to_memory_config(ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device), cfg)
    out = ttnn.untilize_with_unpadding(t, [0, 0, 255, 15])
    assert out.memory_config().shard_spec.shape == (128, 16) and torch.equal(ttnn.to_torch(out), x)


def test_sharded_layer_norm_takes_each_row_s_mean_per_core_then_across_cores(device):
    # nightly fused/test_layernorm_sharded.py test_layernorm_1d_sharded_mix_precision_rm (M=64, K=8192 on 8x8 cores,
    # bfloat16 destination): the sharded kernel means each core's 128 values, then the 64 partials; one sequential
    # bfloat16 sum over 8192 stopped growing at 0.252 of a 0.327 variance (Frobenius error 0.137 against 0.016)
    torch.manual_seed(1234)
    x = torch.rand(1, 1, 64, 8192) * 2 - 0.95
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 7))})
    sharded = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.L1,
                                ttnn.ShardSpec(grid, [64, 128], ttnn.ShardOrientation.ROW_MAJOR))
    t = ttnn.to_memory_config(ttnn.from_torch(x, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device), sharded)
    program = ttnn.LayerNormShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(8, 8), subblock_w=4,
                                                          block_h=2, block_w=4, inplace=True)
    config = ttnn.init_device_compute_kernel_config(device.arch(), math_fidelity=ttnn.MathFidelity.HiFi2,
                                                    math_approx_mode=True, fp32_dest_acc_en=False)
    out = ttnn.layer_norm(t, epsilon=1e-2, memory_config=sharded, program_config=program,
                          compute_kernel_config=config)
    want = torch.nn.functional.layer_norm(ttnn.to_torch(t).float(), (8192,), eps=1e-2)
    assert (ttnn.to_torch(out).float() - want).norm() / want.norm() < 0.016


def test_sharded_layer_norm_s_output_takes_the_input_s_shard_spec_when_its_config_has_none(device):
    # the same file's 2-D cases with a 992-wide input: LayerNormDeviceOperation::compute_output_specs gives an inplace
    # output the input's spec and a shard-spec-less output config the input's shard spec; device_sim derived its own
    # (here 3x2 cores of [32, 32]; there 8 cores of 1015808 B, whose CBs then clashed with L1)
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 1))})
    sharded = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.BLOCK_SHARDED, ttnn.BufferType.L1,
                                ttnn.ShardSpec(grid, [32, 64], ttnn.ShardOrientation.ROW_MAJOR))
    x = ttnn.from_torch(torch.rand(1, 1, 64, 96), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    t = ttnn.to_memory_config(x, sharded)  # 96 wide on 2 columns of 64: the second holds 32 and padding
    no_spec = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.BLOCK_SHARDED, ttnn.BufferType.L1)
    for inplace in (True, False):
        program = ttnn.LayerNormShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(2, 2), subblock_w=2,
                                                              block_h=1, block_w=2, inplace=inplace)
        out = ttnn.layer_norm(t, epsilon=1e-5, memory_config=no_spec, program_config=program)
        assert out.memory_config() == sharded


def test_the_fused_parallel_sequential_api_finds_unpack_to_dest_mode_and_the_kernel_source_type():
    # unit fused/parallel_sequential/*: models/experimental/ops' cb_allocator does `from ttnn import UnpackToDestMode`
    # and fills a per-CB list with UnpackToDestMode.Default; every case of the 5 files stopped at that import.
    # numbering: tt_metal/api/tt-metalium/base_types.hpp, `enum class UnpackToDestMode : uint8_t {UnpackToDestFp32,
    # Default}`
    assert [(m.name, int(m)) for m in ttnn.UnpackToDestMode] == [("UnpackToDestFp32", 0), ("Default", 1)]
    assert repr([ttnn.UnpackToDestMode.Default] * 2) == "[UnpackToDestMode.Default, UnpackToDestMode.Default]"
    # its code generator compares kernel.source_type with KernelDescriptor.SourceType.SOURCE_CODE without a device
    # (test_parallel_sequential_infra.py, 3 cases); building a KernelDescriptor still refuses
    assert [m.name for m in ttnn.KernelDescriptor.SourceType] == ["FILE_PATH", "SOURCE_CODE"]
    with pytest.raises(ttnn.NotEmulatedError, match="ttnn.KernelDescriptor is not emulated"):
        ttnn.KernelDescriptor(kernel_source="k.cpp", source_type=ttnn.KernelDescriptor.SourceType.FILE_PATH)


# -- round 14, intwrap: integers keep their low bits, as TT-NN's host conversion and integer ALU do ----------------


def test_integer_values_wrap_into_unsigned_dtypes_on_the_host_and_through_integer_ops(device):
    # TT-NN converts with torch's wrapping .to(int32) / .to(int16) (pytensor.cpp convert_py_tensor_to_host_buffer):
    # nightly experimental/test_isin.py's -100 (int64, no dtype= so uint32) must not become 0, which elements hold;
    # unit eltwise/test_binary_uint32.py test_binary_sub_uint32_underflow wants a - b < 0 as its two's complement
    tests = ttnn.from_torch(torch.tensor([-100, 200]), device=device, layout=ttnn.TILE)
    assert tests.dtype == ttnn.uint32 and ttnn.to_torch(tests, dtype=torch.int64).tolist() == [2**32 - 100, 200]
    assert ttnn.to_torch(ttnn.from_torch(torch.tensor([-100, 70000]), dtype=ttnn.uint16), dtype=torch.int32) \
        .tolist() == [2**16 - 100, 70000 - 2**16]
    a, b = torch.tensor([[5, 4294967295]], dtype=torch.int64), torch.tensor([[7, 3]], dtype=torch.int64)
    ta, tb = (ttnn.from_torch(x, dtype=ttnn.uint32, layout=ttnn.TILE, device=device) for x in (a, b))
    assert ttnn.to_torch(ttnn.sub(ta, tb), dtype=torch.int32).tolist() == [[-2, -4]]
    assert ttnn.to_torch(ttnn.add(ta, tb), dtype=torch.int64).tolist() == [[12, 2]]
    # unit eltwise/test_binary_int32.py test_bitwise_right_shift: uint32's 32 bits shift as int32 (the sign comes in)
    shifted = ttnn.bitwise_right_shift(ttnn.from_torch(torch.tensor([[-4, 64]]), dtype=ttnn.uint32, device=device), 1)
    assert ttnn.to_torch(shifted, dtype=torch.int64).tolist() == [[2**32 - 2, 32]]
    # floats still truncate and saturate: torch's cast of an out-of-range float is undefined
    assert ttnn.to_torch(ttnn.from_torch(torch.tensor([-1.5, 5e9]), dtype=ttnn.uint32), dtype=torch.int64) \
        .tolist() == [0, 2**32 - 1]


# -- round 14, minmm: ttnn.experimental.minimal_matmul and minimal_matmul_split with a MinimalMatmulConfig -----------


def test_minimal_matmul_folds_upper_dims_into_m_and_split_cuts_n_into_tile_aligned_outputs(device):
    # nightly experimental/test_minimal_matmul.py and test_minimal_matmul_split.py stopped at ttnn.MinimalMatmulConfig:
    # [..., M, K] @ [K, N] + bias, then the (UnaryOpType, approx) activation, at TT-NN's HiFi2 fp32-accumulating kernel
    # (minimal_matmul_nanobind.cpp); the split is MinimalMatmulDeviceOperation with chunks outputs of N / chunks each
    a, w, b = torch.randn(2, 64, 128), torch.randn(128, 192), torch.randn(1, 192)
    ta, tw, tb = (ttnn.from_torch(t, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device) for t in (a, w, b))
    cfg = ttnn.MinimalMatmulConfig(M_block_size=2, K_block_size=2, N_block_size=2, subblock_h=2, subblock_w=1,
                                   compute_with_storage_grid_size=device.compute_with_storage_grid_size())
    kernel = ttnn.init_device_compute_kernel_config(device.arch(), math_fidelity=ttnn.MathFidelity.HiFi2,
                                                    math_approx_mode=False, fp32_dest_acc_en=True, packer_l1_acc=True)
    want = torch.nn.functional.gelu(ttnn.to_torch(ta).float() @ ttnn.to_torch(tw).float() + ttnn.to_torch(tb).float())
    out = ttnn.experimental.minimal_matmul(ta, tw, bias_tensor=tb, fused_activation=(ttnn.UnaryOpType.GELU, False),
                                           config=cfg, compute_kernel_config=kernel)
    assert out.shape == ttnn.Shape([2, 64, 192]) and out.dtype == ttnn.bfloat16
    assert torch.corrcoef(torch.stack([ttnn.to_torch(out).float().flatten(), want.flatten()]))[0, 1] > 0.9995
    parts = launched(device, lambda: ttnn.experimental.minimal_matmul_split(ta, tw, chunks=3, config=cfg))
    assert [p.name for p in parts] == ["MinimalMatmulDeviceOperation"]  # one program for the three outputs
    parts = ttnn.experimental.minimal_matmul_split(ta, tw, chunks=3, config=cfg)
    assert [list(p.shape) for p in parts] == [[2, 64, 64]] * 3
    whole = ttnn.to_torch(ttnn.experimental.minimal_matmul(ta, tw, config=cfg))
    assert torch.equal(torch.cat([ttnn.to_torch(p) for p in parts], -1), whole)
    # validate's refusals, TT_FATAL (RuntimeError) as the tests' pytest.raises((RuntimeError, ValueError)) expect;
    # 192 / 2 = 96 is tile-aligned, so the last case takes N = 96 (48 a chunk)
    w96 = ttnn.from_torch(torch.randn(128, 96), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    for weight, kwargs, words in ((tw, dict(chunks=0), "chunks >= 1"), (tw, dict(dim=0), "only supports dim=-1"),
                                  (tw, dict(chunks=5), "divisible by chunks=5"), (w96, dict(chunks=2), "tile-aligned")):
        with pytest.raises(RuntimeError, match=words):
            ttnn.experimental.minimal_matmul_split(ta, weight, config=cfg, **kwargs)
    with pytest.raises(RuntimeError, match="must be divisible by subblock_h"):
        ttnn.experimental.minimal_matmul(ta, tw, config=ttnn.MinimalMatmulConfig(
            M_block_size=3, K_block_size=1, N_block_size=1, subblock_h=2, subblock_w=1,
            compute_with_storage_grid_size=(2, 2)))
    # dit_minimal_matmul_addcmul_fused (nightly experimental/test_dit_minimal_matmul_addcmul_fused.py): the same program
    # with a residual [M, N] and a gate [1, N]; the residual must be in the weight's format (the factory's TT_FATAL)
    x2, res, gate = ta.reshape((128, 128)), torch.randn(128, 192), torch.randn(1, 192)
    tres, tgate = (ttnn.from_torch(t, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device) for t in (res, gate))
    got = ttnn.to_torch(ttnn.experimental.dit_minimal_matmul_addcmul_fused(x2, tw, 0.5, tres, tgate, config=cfg))
    want = torch.addcmul(ttnn.to_torch(tres).float(), ttnn.to_torch(x2).float() @ ttnn.to_torch(tw).float(),
                         ttnn.to_torch(tgate).float(), value=0.5)
    assert torch.corrcoef(torch.stack([got.float().flatten(), want.flatten()]))[0, 1] > 0.9995
    with pytest.raises(RuntimeError, match="ternary_a_data_format must be equal to in1_data_format"):
        ttnn.experimental.dit_minimal_matmul_addcmul_fused(x2, tw, 0.5, ttnn.typecast(tres, ttnn.float32), tgate,
                                                           config=cfg)


def test_embedding_bw_sums_each_ids_gradient_row_32_ids_at_a_time(device):
    # unit data_movement/test_backward_embedding.py: ttnn.embedding_bw gives torch's embedding weight gradient as
    # [1, 1, rows, hidden] in the gradient's dtype; the kernel adds one gradient tile row (32 ids) at a time and
    # packs the rows it hit to the output's format, so a row hit in two blocks is rounded twice
    ids = torch.randint(0, 96, (2, 64), generator=torch.Generator().manual_seed(0))
    table = torch.randn(96, 160, requires_grad=True)
    grad = torch.randn(1, 1, 128, 160)
    torch.nn.functional.embedding(ids, table).reshape(grad.shape).backward(grad)
    t_ids = ttnn.from_torch(ids, dtype=ttnn.uint32, device=device)
    t_table = ttnn.from_torch(table.detach(), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    t_grad = ttnn.from_torch(grad, dtype=ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT, device=device)
    out = ttnn.embedding_bw(t_ids, t_table, t_grad, dtype=ttnn.bfloat8_b)
    assert out.shape == ttnn.Shape([1, 1, 96, 160]) and out.dtype == ttnn.bfloat8_b
    assert torch.corrcoef(torch.stack([ttnn.to_torch(out).float().flatten(), table.grad.flatten()]))[0, 1] > 0.99
    one = ttnn.from_torch(torch.zeros(2, 32, dtype=torch.int32), dtype=ttnn.uint32, device=device)  # 64 ids of row 0
    steps = torch.full((1, 1, 64, 32), 1.0)
    steps[..., 32:, :] = 2.0**-8  # the second block adds 0.125 to 32, half a bfloat16 ulp there: a tie, to even
    got = ttnn.embedding_bw(one, t_table, ttnn.from_torch(steps, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                                                          device=device))
    assert ttnn.to_torch(got)[0, 0, 0, 0] == 32.0 and float(steps.sum(-2)[0, 0, 0]) == 32.125
    with pytest.raises(RuntimeError, match="Output and input gradient tensors must have the same dtype"):
        ttnn.embedding_bw(t_ids, t_table, t_grad, dtype=ttnn.bfloat16)


def test_topk_router_gpt_routes_on_the_twelve_cores_next_to_the_dram_banks(device):
    # nightly experimental/test_topk_router_gpt.py (and test_mla_wo.py / test_moe_mm.py's shard grids): the worker
    # beside each of a Wormhole's 12 DRAM banks, core_assignment.cpp's placement on device_sim's chip (NOC0 rows 10
    # and 11 harvested); the router's 4 groups of 3 of them each take a 32-expert tile
    cores = device.get_optimal_dram_bank_to_logical_worker_assignment(ttnn.NOC.NOC_0)
    assert [(c.x, c.y) for c in cores] == [(3, 7), (0, 0), (0, 4), (0, 5), (4, 0), (7, 3), (4, 1), (4, 7), (4, 6),
                                           (4, 2), (4, 4), (4, 5)]
    assert device.get_optimal_dram_bank_to_logical_worker_assignment(ttnn.NOC.NOC_1) == cores
    x, w = (ttnn.from_torch(torch.zeros(s), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
            for s in ((32, 64), (64, 128)))
    b = ttnn.from_torch(torch.arange(128.0).expand(32, 128), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    outs = []
    programs = launched(device, lambda: outs.extend(ttnn.experimental.topk_router_gpt(x, weight_tensor=w,
                                                                                      bias_tensor=b, k=5)))
    idx, wgt = outs
    assert {(r[0], r[1]) for p in programs for r in p.ranges} == {(c.x, c.y) for c in cores}
    # [32, round_up(k, 8)] ROW_MAJOR in L1, uint16 indices largest first and their softmax, zero past k
    assert (idx.dtype, wgt.dtype, idx.layout, idx.memory_config().buffer_type) == (
        ttnn.uint16, ttnn.bfloat16, ttnn.ROW_MAJOR_LAYOUT, ttnn.BufferType.L1)
    assert ttnn.to_torch(idx)[0].tolist() == [127, 126, 125, 124, 123, 0, 0, 0]
    want = torch.softmax(torch.arange(127.0, 122.0, -1), -1).bfloat16().float()
    torch.testing.assert_close(ttnn.to_torch(wgt)[0].float(), torch.cat([want, torch.zeros(3)]))
    with pytest.raises(RuntimeError, match="only supports num_experts=128"):
        ttnn.experimental.topk_router_gpt(x, weight_tensor=w, bias_tensor=b, num_experts=64)


def test_infer_ttnn_module_args_gives_tt_nns_keys_and_an_entry_for_every_module_called():
    # integration_tests/openpdn_mnist: the model reads conv.conv_blocking_and_parallelization_config_override from
    # each Conv2dArgs, and its preprocessing sets conv_args[key].module for every key, the Linear's ("fc1") included
    from device_sim.model_preprocessing import infer_ttnn_module_args

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.pool1 = torch.nn.Conv2d(3, 4, 3), torch.nn.MaxPool2d(2)
            self.fc1 = torch.nn.Linear(4 * 3 * 3, 5)

        def forward(self, x):
            return self.fc1(self.pool1(self.conv1(x)).flatten(1))

    args = infer_ttnn_module_args(model=Net(), run_model=lambda m: m(torch.randn(2, 3, 8, 8)), device=None)
    assert list(args) == ["conv1", "pool1", "fc1"] and args.fc1 == {}
    conv = args.conv1
    assert conv.conv_blocking_and_parallelization_config_override == {}
    assert conv.math_fidelity == ttnn.MathFidelity.HiFi4
    assert (conv.use_1d_systolic_array, conv.enable_auto_formatting, conv.input_height) == (True, False, 8)
    assert (args.pool1.input_channels, args.pool1.input_height) == (4, 6)


def test_ttnn_dot_access_imports_by_tt_nns_path():
    # integration_tests/bert/test_performance.py imports models/demos/bert/tt/ttnn_optimized_sharded_bert.py, which does
    # `from ttnn.dot_access import DotAccessDict`: the file failed to import; its cases now skip on Wormhole as they say
    code = ("import device_sim; device_sim.install_as_ttnn()\n"
            "from ttnn.dot_access import DotAccessDict, make_dot_access_dict\n"
            "d = make_dot_access_dict({'attention': {'heads': 12}, 'n': 1})\n"
            "assert type(d.attention) is DotAccessDict and d.attention.heads == 12 and d.n == 1\n"
            "try:\n    d.missing\nexcept KeyError:\n    print('KeyError')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "KeyError"


def test_visualize_tensor_prints_each_chips_shard_and_its_replicas(capsys):
    # distributed/test_visualization_T3000.py: ttnn.visualize_tensor of a host tensor made with a mesh mapper and of
    # the same tensor on the mesh (TT-NN's ttnn/distributed/distributed.py); each of its cases stopped at the name
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(2, 4))
    try:
        mapper = ttnn.create_mesh_mapper(mesh, ttnn.MeshMapperConfig(
            placements=[ttnn.PlacementReplicate(), ttnn.PlacementShard(3)]))
        host = ttnn.from_torch(torch.rand(1, 1, 64, 128), mesh_mapper=mapper, layout=ttnn.ROW_MAJOR_LAYOUT)
        ttnn.visualize_tensor(host)
        ttnn.visualize_tensor(host.to(mesh))
    finally:
        ttnn.close_mesh_device(mesh)
    out = capsys.readouterr().out
    assert out.count("shard [1, 1, 64, 32]") == 16 and "on host, 8 shards" in out and "on device, 8 shards" in out
    # rows replicate, columns shard: chip (1, c) holds what chip (0, c) holds
    lines = out.splitlines()
    groups = [line.split("|")[1:-1] for line in lines if "replica group" in line]
    assert [g.strip() for g in groups[0]] == [g.strip() for g in groups[1]] == [f"replica group {c}" for c in range(4)]


def test_concat_golden_takes_groups_third_and_element_wise_cache_entries_follow_tt_nn_s_hash(device):
    # unit data_movement/test_concat.py calls ttnn.concat.golden_function(ts, dim, groups): groups is the golden's
    # third positional parameter, as in TT-NN's (data_movement.py), so two groups interleave a0 b0 a1 b1
    a, b = torch.arange(4.0).reshape(1, 4), 10 + torch.arange(4.0).reshape(1, 4)
    assert ttnn.concat.golden_function([a, b], 1, 2).tolist() == [[0.0, 1.0, 10.0, 11.0, 2.0, 3.0, 12.0, 13.0]]
    # unit eltwise/test_{unary,binary_ng}_program_cache.py: an entry is what compute_program_hash reads, so the op,
    # the memory configs and binary_ng's subtile broadcast each make another entry; the same call again makes none
    x = ttnn.from_torch(torch.rand(1, 1, 32, 64), layout=ttnn.TILE_LAYOUT, device=device)
    row = ttnn.from_torch(torch.rand(1, 1, 1, 64), layout=ttnn.TILE_LAYOUT, device=device)
    device.clear_program_cache()
    counts = []
    l1 = ttnn.L1_MEMORY_CONFIG
    for call in (lambda: ttnn.relu(x), lambda: ttnn.sqrt(x), lambda: ttnn.relu(x, memory_config=l1),
                 lambda: ttnn.add(x, x), lambda: ttnn.mul(x, x), lambda: ttnn.add(x, x, memory_config=l1),
                 lambda: ttnn.add(x, row), lambda: ttnn.add(x, x), lambda: ttnn.relu(x)):
        call()
        counts.append(device.num_program_cache_entries())
    assert counts == [1, 2, 3, 4, 5, 6, 7, 7, 7]


# -- round 15: scaled dot-product attention (nightly sdpa/test_sdpa_joint.py, _decode_cache.py, _chunked.py) --------

def _tile(t, device, dtype=ttnn.bfloat16):
    return ttnn.from_torch(t, dtype=dtype, layout=ttnn.TILE_LAYOUT, device=device)


def test_sdpa_decode_program_cache_keys_what_compute_program_hash_reads(device):
    # sdpa_decode_device_operation.cpp's compute_program_hash reads the cur_pos list, share_cache (unset, False and
    # True apart) and the cur_pos tensor's logical shape, none of which changes the program's CBs
    g = torch.Generator().manual_seed(1)
    q = _tile(torch.randn(1, 2, 8, 64, generator=g), device)
    k, v = (_tile(torch.randn(2, 1, 256, 64, generator=g), device, ttnn.bfloat8_b) for _ in range(2))
    decode = ttnn.transformer.scaled_dot_product_attention_decode
    device.disable_and_clear_program_cache()
    device.enable_program_cache()
    entries = []
    for kwargs in (dict(cur_pos=[100, 200]), dict(cur_pos=[100, 200]), dict(cur_pos=[101, 200]),
                   dict(cur_pos=[101, 200], share_cache=False)):
        decode(q, k, v, **kwargs)
        entries.append(device.num_program_cache_entries())
    for pos in (torch.tensor([7, 9]), torch.tensor([[7], [9]])):
        decode(q, k, v, cur_pos_tensor=ttnn.from_torch(pos, dtype=ttnn.int32, device=device))
        entries.append(device.num_program_cache_entries())
    assert entries == [1, 1, 2, 3, 4, 5]
    # share_cache=True: every user reads one cache [1, KVH, S, D]
    shared = decode(q, *(ttnn.slice(t, [0, 0, 0, 0], [1, 1, 256, 64]) for t in (k, v)), cur_pos=[100, 200],
                    share_cache=True)
    both = decode(q, *(ttnn.concat([ttnn.slice(t, [0, 0, 0, 0], [1, 1, 256, 64])] * 2, dim=0) for t in (k, v)),
                  cur_pos=[100, 200])
    torch.testing.assert_close(ttnn.to_torch(shared), ttnn.to_torch(both))
    with pytest.raises(RuntimeError, match="Share cache expects K to have batch size of 1, but got 2"):
        decode(q, k, v, cur_pos=[100, 200], share_cache=True)


def test_chunked_sdpa_takes_a_program_cache_entry_per_scalar_start_and_one_for_a_start_tensor(device):
    # sdpa_device_operation.cpp hashes a scalar chunk_start_idx (it sets the keys' length the kernels are built
    # for), not a start tensor's value; and each chunk is causal attention at its offset in the whole sequence
    g = torch.Generator().manual_seed(2)
    q_all, k_all, v_all = (torch.randn(1, 4 if i == 0 else 1, 256, 64, generator=g) for i in range(3))
    k, v = (_tile(t.reshape(1, 1, 8, 32, 64).transpose(1, 2).reshape(8, 1, 32, 64), device) for t in (k_all, v_all))
    table = ttnn.from_torch(torch.arange(8, dtype=torch.int32)[None], dtype=ttnn.int32, device=device)
    want = torch.nn.functional.scaled_dot_product_attention(
        q_all.bfloat16().float(), *(t.bfloat16().float().expand(1, 4, 256, 64) for t in (k_all, v_all)),
        is_causal=True)
    chunked = ttnn.transformer.chunked_scaled_dot_product_attention
    for flexible in (False, True):
        device.disable_and_clear_program_cache()
        device.enable_program_cache()
        for start in (0, 64, 128, 192):
            q = _tile(q_all[:, :, start: start + 64], device)
            out = chunked(q, k, v, table, chunk_start_idx_tensor=ttnn.from_torch(
                torch.tensor([start], dtype=torch.int32), dtype=ttnn.int32, device=device)) if flexible else \
                chunked(q, k, v, table, start)
            torch.testing.assert_close(ttnn.to_torch(out).float(), want[:, :, start: start + 64], rtol=2**-7,
                                       atol=2e-2)
        assert device.num_program_cache_entries() == (1 if flexible else 4)


def test_joint_sdpa_attends_over_both_sequences_joined_and_masks_their_tile_padding(device):
    # ttnn.transformer.joint_scaled_dot_product_attention (joint_sdpa.cpp): q, k, v [b, nh, N, dh] and the joint ones
    # [b, nh, L, dh] attend as one non-causal sequence of N + L; the output comes back split in two. N = 15 and
    # L = 19 are padded to a tile each, and the padding rows must not be keys
    g = torch.Generator().manual_seed(0)
    a, j = (torch.randn(3, 1, 2, n, 64, generator=g) for n in (15, 19))
    config = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=32, k_chunk_size=32)
    out, joint_out = ttnn.transformer.joint_scaled_dot_product_attention(
        *(_tile(t, device) for t in (*a, *j)), joint_strategy="rear", program_config=config)
    want = torch.nn.functional.scaled_dot_product_attention(
        *(torch.cat([x.bfloat16().float(), y.bfloat16().float()], 2) for x, y in zip(a, j)))
    assert (out.shape, joint_out.shape) == (ttnn.Shape([1, 2, 15, 64]), ttnn.Shape([1, 2, 19, 64]))
    torch.testing.assert_close(ttnn.to_torch(out).float(), want[:, :, :15], rtol=2**-7, atol=1e-2)
    torch.testing.assert_close(ttnn.to_torch(joint_out).float(), want[:, :, 15:], rtol=2**-7, atol=1e-2)
    with pytest.raises(RuntimeError, match="Joint strategy must be 'rear'. Got: front"):
        ttnn.transformer.joint_scaled_dot_product_attention(
            *(_tile(t, device) for t in (*a, *j)), joint_strategy="front", program_config=config)


def test_var_std_and_normalize_over_hw_are_tt_nns_population_composites(device):
    # docs_examples/test_eltwise_unary_examples.py (var_hw, std_hw, normalize_hw, normalize_global) and
    # profiling/test_host_overhead_ci.py (which names ttnn.var_hw at import): unary_composite_op.cpp divides by H * W
    x = torch.randn(1, 2, 64, 64, dtype=torch.bfloat16)
    t = ttnn.from_torch(x, layout=ttnn.TILE_LAYOUT, device=device)
    var = ttnn.to_torch(ttnn.var_hw(t)).float()
    assert var.shape == (1, 2, 1, 1)
    torch.testing.assert_close(var, x.float().var((-2, -1), keepdim=True, correction=0), rtol=2**-6, atol=1e-3)
    torch.testing.assert_close(ttnn.to_torch(ttnn.std_hw(t)).float(), var.sqrt(), rtol=2**-7, atol=1e-3)
    z = ttnn.to_torch(ttnn.normalize_hw(t)).float()
    assert z.shape == x.shape and z.mean((-2, -1)).abs().max() < 0.02 and (z.std((-2, -1)) - 1).abs().max() < 0.02
    g = ttnn.to_torch(ttnn.normalize_global(t)).float()
    assert g.mean().abs() < 0.02 and (g.std() - 1).abs() < 0.02
    with pytest.raises(RuntimeError, match="Cannot support non-rank 4 Tensor"):
        ttnn.normalize_global(ttnn.from_torch(x[0], layout=ttnn.TILE_LAYOUT, device=device))


def test_sampling_draws_within_top_k_and_top_p_and_follows_the_cores_seeds(device):
    # unit eltwise/test_sampling.py, reduce/test_manual_seed.py: ttnn.sampling gives each of 32 users an index from its
    # top-k, top-p set; seed= makes a draw repeat, no seed goes on from the cores' state, ttnn.manual_seed sets it
    # (UINT32_MAX leaves it), and k = 32 with p = 0 is the top-1 (ties in bfloat16 to the lower index)
    torch.manual_seed(0)
    logits = torch.randn(1, 1, 32, 128)
    v = ttnn.from_torch(logits, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    ids = ttnn.from_torch(torch.arange(128, dtype=torch.int32).expand(1, 1, 32, 128), dtype=ttnn.int32, device=device)

    def per_user(values, dtype):
        return ttnn.from_torch(torch.tensor(values), dtype=dtype, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)

    k, p = per_user([20] * 32, ttnn.uint32), per_user([0.9] * 32, ttnn.bfloat16)
    temp = per_user([1.0] * 32, ttnn.bfloat16)

    def draw(**kw):
        return ttnn.to_torch(ttnn.sampling(v, ids, k=k, p=p, temp=temp, **kw)).reshape(32).long()

    first = draw(seed=5)
    assert torch.equal(first, draw(seed=5)) and not torch.equal(draw(), draw())
    top20 = logits.reshape(32, 128).topk(20).indices
    assert all(int(first[u]) in top20[u].tolist() for u in range(32))
    ttnn.manual_seed(seeds=42, device=device)
    again = draw()
    ttnn.manual_seed(seeds=42, device=device)
    ttnn.manual_seed(seeds=2**32 - 1, device=device)  # UINT32_MAX: the state stays as 42 left it
    assert torch.equal(again, draw())
    top1 = ttnn.sampling(v, ids, k=per_user([32] * 32, ttnn.uint32), p=per_user([0.0] * 32, ttnn.bfloat16), temp=temp)
    assert ttnn.to_torch(top1).reshape(32).tolist() == logits.bfloat16().reshape(32, 128).float().argmax(-1).tolist()
    with pytest.raises(RuntimeError, match="Input must have 32 users"):
        ttnn.sampling(ttnn.from_torch(logits[:, :, :16], dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device),
                      ttnn.from_torch(torch.zeros(1, 1, 16, 128, dtype=torch.int32), dtype=ttnn.int32, device=device),
                      k=k, p=p, temp=temp)


def test_selu_takes_scale_and_alpha_and_logical_not_writes_into_its_input(device):
    # docs_examples/test_eltwise_unary_examples.py: ttnn.selu(t, scale=1.0507, alpha=1.67326) (unary_nanobind.cpp binds
    # both, keyword-only) and ttnn.logical_not_(t), logical_not into t itself (unary_composite_op.cpp)
    x = torch.tensor([[-1.0, 0.0, 2.0, -3.0]])
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE_LAYOUT, device=device)
    torch.testing.assert_close(ttnn.to_torch(ttnn.selu(t, scale=2.0, alpha=0.5)), 2.0 * torch.nn.functional.elu(x, 0.5))
    torch.testing.assert_close(ttnn.to_torch(ttnn.selu(t)), torch.nn.functional.selu(x), rtol=1e-5, atol=1e-5)
    assert ttnn.logical_not_(t) is t
    assert ttnn.to_torch(t).tolist() == [[0.0, 1.0, 0.0, 0.0]]


def test_a_device_tensor_copies_into_a_host_tensor_allocated_from_its_spec(device):
    # docs_examples/test_core_examples.py's test_copy_device_to_host_tensor: ttnn.allocate_tensor_on_host(spec, device)
    # then ttnn.copy_device_to_host_tensor(device_tensor, host_tensor), in place (tt-metal's pytensor bindings)
    src = ttnn.from_torch(torch.randn(2, 3), dtype=ttnn.bfloat16, device=device)
    dst = ttnn.allocate_tensor_on_host(src.spec, device)
    assert dst.storage_type() == ttnn.StorageType.HOST and torch.count_nonzero(ttnn.to_torch(dst)) == 0
    assert ttnn.copy_device_to_host_tensor(src, dst) is None
    assert torch.equal(ttnn.to_torch(dst), ttnn.to_torch(src))
    with pytest.raises(ValueError, match="must match"):
        ttnn.copy_device_to_host_tensor(src, ttnn.allocate_tensor_on_host(ttnn.Shape([3, 2]), ttnn.bfloat16,
                                                                          ttnn.ROW_MAJOR_LAYOUT, device))


def test_multi_latent_attention_reads_v_from_the_first_head_dim_v_columns_of_k(device):
    # nightly and unit sdpa/test_mla_decode.py, test_mla_prefill.py: DeepSeek's MLA ops take no V tensor; V is K's first
    # head_dim_v columns and the output has head_dim_v columns, in DRAM unless a memory_config is given
    torch.manual_seed(0)
    q, k = torch.randn(1, 2, 8, 96), torch.randn(2, 1, 64, 96)
    tq = ttnn.from_torch(q, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device, memory_config=ttnn.L1_MEMORY_CONFIG)
    tk = ttnn.from_torch(k, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    out = ttnn.transformer.flash_multi_latent_attention_decode(tq, tk, head_dim_v=64, cur_pos=[10, 63], scale=0.1)
    assert out.shape == ttnn.Shape([1, 2, 8, 64]) and out.memory_config() == ttnn.DRAM_MEMORY_CONFIG
    qq, kk = ttnn.to_torch(tq).float(), ttnn.to_torch(tk).float()
    for b, pos in enumerate((10, 63)):
        want = torch.softmax(qq[0, b] @ kk[b, 0, : pos + 1].T * 0.1, -1) @ kk[b, 0, : pos + 1, :64]
        torch.testing.assert_close(ttnn.to_torch(out)[0, b].float(), want, rtol=0.02, atol=0.02)
    # a sharded Q's heads split by its shard height (the factory's q_heads_parallel_factor): 128 heads in 32-row
    # shards are 4 groups of one tile each, whose CBs fit L1 where one 4-tile group's do not
    spec = ttnn.create_sharded_memory_config(shape=(32, 576), core_grid=ttnn.num_cores_to_corerangeset(
        8, device.compute_with_storage_grid_size(), row_wise=True), strategy=ttnn.ShardStrategy.HEIGHT,
        use_height_and_width_as_shard_shape=True)
    big_q = ttnn.from_torch(torch.randn(1, 2, 128, 576), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device,
                            memory_config=spec)
    big_k = ttnn.from_torch(torch.randn(2, 1, 128, 576), ttnn.bfloat8_b, layout=ttnn.TILE_LAYOUT, device=device)
    big = ttnn.transformer.flash_multi_latent_attention_decode(big_q, big_k, head_dim_v=512, cur_pos=[5, 100])
    assert big.shape == ttnn.Shape([1, 2, 128, 512])
    with pytest.raises(RuntimeError, match="Multi-latent attention decode only tested for causal"):
        ttnn.transformer.flash_multi_latent_attention_decode(tq, tk, head_dim_v=64, is_causal=False)
    with pytest.raises(RuntimeError, match="Head dimension of V must be less than or equal to head dim of Q"):
        ttnn.transformer.flash_mla_prefill(tq, tk, 128)


def test_rotate_half_swaps_the_padded_widths_halves_on_one_core(device):
    # integration_tests/falcon7b/test_falcon_rotary_embeddings.py: ttnn.experimental.rotate_half gives torch's
    # cat(-x2, x1) exactly (RotateHalfDeviceOperation on core (0, 0)); a ROW_MAJOR input is tilized first, and a width
    # that is not whole pairs of tiles is refused (rotate_half.cpp's TT_FATAL)
    x = torch.randn(1, 3, 40, 64).bfloat16()
    x1, x2 = x.chunk(2, -1)
    for layout in (ttnn.TILE_LAYOUT, ttnn.ROW_MAJOR_LAYOUT):
        t = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=layout, device=device)
        programs = launched(device, lambda t=t: ttnn.experimental.rotate_half(t))
        assert [(p.name, p.ranges) for p in programs][-1] == ("RotateHalfDeviceOperation", ((0, 0, 0, 0),))
    y = ttnn.experimental.rotate_half(t)
    assert y.layout == ttnn.TILE_LAYOUT and torch.equal(ttnn.to_torch(y), torch.cat([-x2, x1], -1))
    with pytest.raises(RuntimeError, match="must be divisible by 64"):
        ttnn.experimental.rotate_half(ttnn.from_torch(x[..., :32], layout=ttnn.TILE_LAYOUT, device=device))


def test_a_tensor_is_truthy_and_an_nd_shard_in_tile_layout_aligns_up_to_tiles(device):
    # unit reduce/test_cumsum.py asserts `prealloc == out` (an element-wise eq tensor) for a rank-0 tensor: TT-NN's
    # Tensor binds no __bool__ or __len__, so any tensor is truthy (device_sim's fell back to len(), shape[0])
    zero_d = ttnn.from_torch(torch.tensor(3.0), layout=ttnn.TILE_LAYOUT, device=device)
    empty = ttnn.from_torch(torch.zeros(0, 32), device=device)
    assert bool(zero_d == zero_d) and bool(empty)
    # unit data_movement/test_full.py: an NdShardSpec of [16, 16, 16] in TILE layout holds [16, 32, 32] shards
    cfg = ttnn.MemoryConfig(ttnn.BufferType.DRAM, ttnn.NdShardSpec(
        [16, 16, 16], ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(4, 0))}),
        ttnn.ShardOrientation.COL_MAJOR))
    t = ttnn.full([64, 64, 64], 2.0, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device, memory_config=cfg)
    assert t.memory_config().nd_shard_spec is not None and torch.equal(ttnn.to_torch(t), torch.full((64, 64, 64), 2.0,
                                                                                                    dtype=torch.bfloat16))


def test_moreh_nll_loss_writes_the_weights_sum_into_the_divisor_and_its_backward_into_input_grad(device):
    # nightly moreh/test_moreh_nll_loss.py, test_moreh_nll_loss_unreduced.py: ttnn.operations.moreh.nll_loss is
    # torch's NLLLoss; a mean writes sum(weight[target]) into divisor_tensor (step 1 and a moreh_sum), which the
    # backward then divides by; the backwards write into input_grad_tensor, as TT-NN cannot make one
    torch.manual_seed(0)
    x, target, weight = torch.randn(6, 5), torch.tensor([0, 4, 1, 1, 3, 2]), torch.rand(5) + 0.5
    tx, tw = (ttnn.from_torch(t, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device) for t in (x, weight))
    tt = ttnn.from_torch(target, ttnn.int32, layout=ttnn.TILE_LAYOUT, device=device)
    div, out = (ttnn.from_torch(torch.zeros(1), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
                for _ in range(2))
    xb, wb = ttnn.to_torch(tx).float(), ttnn.to_torch(tw).float()
    loss = ttnn.operations.moreh.nll_loss(tx, tt, "mean", weight_tensor=tw, divisor_tensor=div, output_tensor=out,
                                          ignore_index=1)
    assert loss is out
    kept = target != 1
    assert ttnn.to_torch(div).item() == pytest.approx(wb[target][kept].sum().item(), rel=2**-7)
    want = torch.nn.functional.nll_loss(xb, target, weight=wb, ignore_index=1)
    assert ttnn.to_torch(loss).item() == pytest.approx(want.item(), rel=2**-6)
    none = ttnn.operations.moreh.nll_loss(tx, tt, "none", ignore_index=1)
    assert ttnn.to_torch(none).float().tolist() == pytest.approx((-xb[torch.arange(6), target] * kept).tolist(),
                                                                 rel=2**-7)
    grad = ttnn.from_torch(torch.zeros(6, 5), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    dy = ttnn.from_torch(torch.tensor([2.0]), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    got = ttnn.operations.moreh.nll_loss_backward(tt, dy, True, weight_tensor=tw, divisor_tensor=div,
                                                  input_grad_tensor=grad, ignore_index=1)
    xg = xb.clone().requires_grad_()
    (torch.nn.functional.nll_loss(xg, target, weight=wb, ignore_index=1) * 2).backward()
    assert got is grad
    torch.testing.assert_close(ttnn.to_torch(got).float(), xg.grad, rtol=2**-6, atol=1e-3)
    with pytest.raises(RuntimeError, match="not support creating output tensors"):
        ttnn.operations.moreh.nll_loss_unreduced_backward(tt, dy)
    with pytest.raises(RuntimeError, match="Divisor tensor must not be empty"):
        ttnn.operations.moreh.nll_loss(tx, tt, "mean")


def test_group_norm_sharded_config_and_grid_size_as_groupnorm_grid_utils_derives_them(device):
    # nightly fused/test_group_norm.py, docs_examples/test_normalization_examples.py: the helpers that pick a sharded
    # group_norm's L1 config and grid (groupnorm_grid_utils.cpp, ttnn/operations/normalization.py)
    cfg, grid = ttnn.determine_expected_group_norm_sharded_config_and_grid_size(
        device=device, num_channels=256, num_groups=32, input_nhw=1280 * 720, is_height_sharded=False)
    assert (grid.x, grid.y) == (8, 8) and cfg.memory_layout == ttnn.TensorMemoryLayout.BLOCK_SHARDED
    assert (tuple(cfg.shard_spec.shape), cfg.shard_spec.orientation) == ((32, 115200), ttnn.ShardOrientation.COL_MAJOR)
    # 64 channels in 2 groups over 3 tile rows: 3 row cores (the largest divisor of 3 up to 8), height-sharded
    cfg, grid = ttnn.determine_expected_group_norm_sharded_config_and_grid_size(
        device=device, num_channels=64, num_groups=2, input_nhw=96, is_height_sharded=True, is_row_major=True)
    assert (grid.x, grid.y, tuple(cfg.shard_spec.shape)) == (3, 1, (32, 64))
    assert ttnn.get_group_norm_cores_across_channel(cfg.memory_layout, grid, ttnn.ShardOrientation.ROW_MAJOR) == 1
    assert ttnn.get_group_norm_cores_across_channel(ttnn.TensorMemoryLayout.BLOCK_SHARDED, grid) == 1
    with pytest.raises(RuntimeError, match="must be divisible by num_groups"):
        ttnn.determine_expected_group_norm_sharded_config_and_grid_size(
            device=device, num_channels=96, num_groups=5, input_nhw=96, is_height_sharded=True)


def test_topk_takes_only_bfloat16_or_bfloat8_b_and_argmax_of_an_empty_dim_is_a_tt_fatal(device):
    # unit reduce/test_topk.py: TopKDeviceOperation refuses float32, uint32 and int32 inputs (TT_FATAL); unit
    # reduce/test_argmax.py catches RuntimeError only, as TT-NN's "Expected reduction dim 1 to have non-zero size" is
    for dtype in (ttnn.float32, ttnn.uint32, ttnn.int32):
        x = ttnn.from_torch(torch.randint(0, 100, (1, 1, 32, 64)), dtype, layout=ttnn.TILE_LAYOUT, device=device)
        with pytest.raises(RuntimeError, match="Input tensor must be BFLOAT16, or BFLOAT8_B"):
            ttnn.topk(x, k=32, dim=-1)
    empty = ttnn.from_torch(torch.zeros(32, 0, dtype=torch.bfloat16), device=device)
    with pytest.raises(RuntimeError, match="non-zero size"):
        ttnn.argmax(empty, dim=1, keepdim=True)


def test_the_sweep_helpers_import_ttnn_operations_matmul_and_reduction():
    # nightly matmul/test_bert_matmuls.py imports tests/tt_eager's sweep_tests/tt_lib_ops.py, which does
    # `import ttnn.operations.matmul` and `import ttnn.operations.reduction` (TT-NN's ttnn/operations/*.py modules)
    assert ttnn.operations.matmul.MatmulMultiCoreReuseProgramConfig is ttnn.MatmulMultiCoreReuseProgramConfig
    assert ttnn.operations.reduction.ReduceType is ttnn.ReduceType
    code = "import device_sim; device_sim.install_as_ttnn(); import ttnn.operations.matmul, ttnn.operations.reduction"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_fill_of_an_integer_tensor_wraps_the_truncated_value_to_its_bits(device):
    # unit eltwise/test_unary_ops_ttnn.py's test_fill: uint32 filled with -29 holds 2**32 - 29, as TT-NN's golden
    # (torch.full_like under tt-metal's torch) gives; device_sim clamped it to 0. int32 truncates -29.5 to -29
    u = ttnn.from_torch(torch.randint(0, 100, (64, 128), dtype=torch.int32), dtype=ttnn.uint32,
                        layout=ttnn.TILE_LAYOUT, device=device)
    got = ttnn.to_torch(ttnn.fill(u, -29), dtype=torch.int64)
    assert got.unique().tolist() == [2**32 - 29]
    assert ttnn.fill.golden_function(torch.zeros(2, 2, dtype=torch.uint32), -29).to(torch.int64).unique().tolist() == [
        2**32 - 29]
    i = ttnn.from_torch(torch.zeros(64, 128, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.TILE_LAYOUT,
                        device=device)
    assert ttnn.to_torch(ttnn.fill(i, -29.5)).unique().tolist() == [-29]


def test_ema_runs_along_t_in_float32_on_the_cores_that_divide_the_rows(device):
    # docs_examples/test_reduction_examples.py's test_ema and unit reduce/test_ema.py: ttnn.ema(x, alpha) of a
    # bfloat16 [1, B, C, T], y_t = alpha y_(t-1) + (1 - alpha) x_t from 0, the running value held in float32 (a
    # bfloat16 running value drifts: 0.999 ** t rounds); EmaProgramFactory on the most cores dividing B * C/32 (6 -> 6)
    x = torch.rand(1, 2, 96, 200, dtype=torch.bfloat16)
    t = ttnn.from_torch(x, layout=ttnn.TILE_LAYOUT, device=device)
    programs = launched(device, lambda: ttnn.ema(t, 0.999, core_grid=ttnn.CoreGrid(y=4, x=4)))
    assert [(p.name, p.ranges) for p in programs] == [("EmaDeviceOperation", ((0, 0, 0, 3), (1, 0, 1, 1)))]
    want, prev = torch.empty(1, 2, 96, 200), torch.zeros(1, 2, 96)
    for i in range(200):
        prev = x[..., i].float() * (1 - torch.tensor(0.999)) + prev * 0.999
        want[..., i] = prev
    assert torch.equal(ttnn.to_torch(ttnn.ema(t, 0.999)), want.bfloat16())
    with pytest.raises(RuntimeError, match="Input tensor must be BFLOAT16"):
        ttnn.ema(ttnn.typecast(t, ttnn.float32), 0.5)


def test_moe_gives_expert_zeros_routing_weight_per_row(device):
    # docs_examples/test_reduction_examples.py's test_moe and unit reduce/test_moe.py (Mixtral 8x7B: 8 of 64 experts,
    # 2 used): ttnn.moe's [N, C, H, 1] weight of expert 0 among the top 32, on one core; k must be 32 (TT_FATAL)
    x = torch.randn(1, 1, 32, 64, dtype=torch.bfloat16)
    x[..., 8:] = float("-inf")
    top = torch.zeros(1, 1, 1, 32, dtype=torch.bfloat16)
    top[..., 2:] = float("-inf")
    t, em, tm = (ttnn.from_torch(v, layout=ttnn.TILE_LAYOUT, device=device)
                 for v in (x, torch.zeros(1, 1, 1, 64, dtype=torch.bfloat16), top))
    out = []
    programs = launched(device, lambda: out.append(ttnn.moe(t, em, tm, 32)))
    assert [(p.name, p.ranges) for p in programs] == [("MoeDeviceOperation", ((0, 0, 0, 0),))]
    assert list(out[0].shape) == [1, 1, 32, 1] and list(out[0].padded_shape) == [1, 1, 32, 32]
    values, indices = torch.topk(x.float(), 32)
    want = (torch.softmax(values + top.float(), -1) * (indices == 0)).sum(-1, keepdim=True)
    torch.testing.assert_close(ttnn.to_torch(out[0]).float(), want, rtol=2**-7, atol=1e-5)
    assert (want > 0).any() and (want == 0).any()  # rows where expert 0 is in the top 2 and rows where it is not
    with pytest.raises(RuntimeError, match="K must be equal to 32"):
        ttnn.moe(t, em, tm, 16)


def test_scatter_reduces_by_add_or_multiply_and_refuses_bad_shapes_as_tt_fatal(device):
    # nightly data_movement/test_scatter.py: scatter.cpp allows reduce 'add' and 'multiply' only (torch.scatter's
    # names; ttnn.scatter_add is the first), on a bfloat16 input through ScatterReduceBfloat16ProgramFactory (its c_4,
    # a float32 row); its validate_inputs refuses mismatched ranks, a dim out of range and a float index as TT_FATALs
    x = ttnn.from_torch(torch.ones(4, 64), ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)
    i = ttnn.from_torch(torch.tensor([[3, 3]] * 4, dtype=torch.int32), ttnn.int32, layout=ttnn.ROW_MAJOR_LAYOUT,
                        device=device)
    s = ttnn.from_torch(torch.full((4, 2), 2.0), ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT, device=device)
    programs = []
    got = launched(device, lambda: programs.append(ttnn.scatter_add(x, -1, i, s)))
    assert ttnn.to_torch(programs[0])[:, 3].tolist() == [5.0] * 4
    assert [(p.factory, [cb.indices[0] for cb in p.cbs]) for p in got] == [
        ("ScatterReduceBfloat16ProgramFactory", [0, 2, 1, 3, 4])]
    assert ttnn.to_torch(ttnn.scatter(x, -1, i, s, reduce="multiply"))[0, 3] == 4.0
    for bad, match in (({"reduce": "sum"}, "reduce must be either 'add' or 'multiply'"),
                       ({"dim": 2}, "dim must follow the condition")):
        with pytest.raises(RuntimeError, match=match):
            ttnn.scatter(x, bad.get("dim", -1), i, s, reduce=bad.get("reduce"))
    with pytest.raises(RuntimeError, match="input_rank must be equal to index_rank"):
        ttnn.scatter(x, -1, ttnn.reshape(i, (1, 4, 2)), s)


def test_sparse_matmul_computes_only_the_blocks_its_sparsity_keeps(device):
    # unit matmul/test_sparse_matmul.py (11 cases) and docs_examples' test_sparse_matmul: ttnn.sparse_matmul's three
    # modes and their output shapes (compute_sparse_matmul_output_shape), on 16 x 32 tiles as the tests give them
    cfg = ttnn.MatmulMultiCoreReuseMultiCast1DProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(2, 1), in0_block_w=1, out_subblock_h=1, out_subblock_w=1,
        out_block_h=1, out_block_w=1, per_core_M=1, per_core_N=1, fuse_batch=False, fused_activation=None,
        mcast_in0=True)
    a, b = torch.randn(2, 3, 16, 32), torch.randn(1, 3, 32, 64)

    def tt(t, dtype=ttnn.bfloat16, tile=(16, 32)):
        return ttnn.from_torch(t, dtype=dtype, layout=ttnn.TILE_LAYOUT, device=device, tile=ttnn.Tile(tile))

    ta, tb = tt(a), tt(b, tile=(32, 32))
    keep = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    s = ttnn.from_torch(keep.reshape(1, 1, 2, 3), dtype=ttnn.bfloat16, device=device)
    out = []
    programs = launched(device, lambda: out.append(ttnn.sparse_matmul(ta, tb, sparsity=s, program_config=cfg,
                                                                      nnz=3, is_input_a_sparse=True,
                                                                      is_input_b_sparse=False)))
    assert [(p.name, p.ranges) for p in programs] == [("SparseMatmulDeviceOperation", ((0, 0, 1, 0),))]
    y = ttnn.to_torch(out[0]).float()
    assert y.shape == (2, 3, 16, 64)
    for i in range(2):
        for e in range(3):
            want = a[i, e].bfloat16().float() @ b[0, e].bfloat16().float() if keep[i, e] else torch.zeros(16, 64)
            torch.testing.assert_close(y[i, e], want.bfloat16().float(), rtol=2**-7, atol=1e-2)
    # b sparse: [A, B, M, K] x [1, E, K, N] gives [A, B, 1, E, M, N]; sparsity [A, B, 1, E]
    s2 = ttnn.from_torch(torch.ones(2, 3, 1, 3), dtype=ttnn.bfloat16, device=device)
    assert list(ttnn.sparse_matmul(ta, tb, sparsity=s2, program_config=cfg).shape) == [2, 3, 1, 3, 16, 64]
    with pytest.raises(RuntimeError, match=r"sparsity.logical_volume\(\) \(6\) must be equal .* \(18\)"):
        ttnn.sparse_matmul(ta, tb, sparsity=s, program_config=cfg)


def test_a_reduction_torch_refuses_raises_runtime_error_as_tt_nn(device):
    # nightly reduction/test_reduction_ops.py requires ttnn to raise (IndexError, TypeError or RuntimeError) where
    # torch does: the max of a tensor with an empty dim, a dim a 0-D tensor does not have. TT-NN's are TT_FATALs
    empty = ttnn.from_torch(torch.zeros(6, 0, 32, dtype=torch.bfloat16), layout=ttnn.TILE_LAYOUT, device=device)
    with pytest.raises(RuntimeError, match="cannot reduce shape"):
        ttnn.max(empty)
    scalar = ttnn.from_torch(torch.tensor(1.5, dtype=torch.bfloat16), layout=ttnn.TILE_LAYOUT, device=device)
    with pytest.raises(RuntimeError, match="cannot reduce shape"):
        ttnn.std(scalar, dim=(0, 2, 4))
    with pytest.raises(ValueError):  # and still the ValueError device_sim raised before
        ttnn.std(scalar, dim=(0, 2, 4))


def test_reshape_to_a_ttnn_shape_moves_rows_into_the_tile_padding_as_a_list_does_not(device):
    # nightly transformers/test_paged_update_cache.py: ttnn.reshape(xt, ttnn.Shape([1, 4, 8, 128])) of a [1, 4, 32, 128]
    # TILE tensor. reshape.cpp's ttnn::Shape overload passes the shape as its own padded shape, with no volume check:
    # each 32-row tile keeps its first 8 rows. A list goes through infer_dims_for_reshape, which refuses the volume
    x = torch.randn(1, 4, 8, 128)
    t = ttnn.Tensor(torch.nn.functional.pad(x, (0, 0, 0, 24)), ttnn.bfloat16).to(ttnn.TILE_LAYOUT)
    r = ttnn.reshape(t, ttnn.Shape([1, 4, 8, 128]))
    assert r.shape == ttnn.Shape([1, 4, 8, 128])
    assert torch.equal(ttnn.to_torch(r).float(), x.bfloat16().float())
    with pytest.raises(RuntimeError, match="new_volume == old_volume"):
        ttnn.reshape(t, [1, 4, 8, 128])


def test_group_norm_negative_mask_is_the_input_masks_complement():
    # unit fused/test_group_norm.py's negative-mask cases: ttnn.create_group_norm_input_negative_mask is the input
    # mask with 0 and 1 swapped (groupnorm_input_mask.cpp's is_negative_mask), a host TILE tensor of the same shape
    mask = ttnn.create_group_norm_input_mask(640, 32, 4, ttnn.bfloat16)
    negative = ttnn.create_group_norm_input_negative_mask(640, 32, 4, ttnn.bfloat16)
    assert negative.shape == mask.shape and negative.layout == ttnn.TILE_LAYOUT
    assert torch.equal(ttnn.to_torch(negative), 1 - ttnn.to_torch(mask))


def test_paged_update_cache_with_mesh_coords_writes_only_on_those_chips_of_the_mesh():
    # unit transformers/test_paged_cache_mask.py: an op on a mesh runs once per chip, and mesh_coords names the chips
    # to write by their place in the mesh; every chip had taken itself for (0, 0)
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2), physical_device_ids=[1, 2])
    try:
        shard = ttnn.ShardTensor2dMesh(mesh, dims=(None, 0), mesh_shape=[1, 2])
        cache = ttnn.from_torch(torch.zeros(2, 1, 32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=mesh,
                                mesh_mapper=shard)
        token = ttnn.from_torch(torch.ones(1, 2, 1, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=mesh,
                                mesh_mapper=ttnn.ShardTensor2dMesh(mesh, dims=(None, 1), mesh_shape=[1, 2]),
                                memory_config=ttnn.create_sharded_memory_config(
                                    (32, 32), ttnn.num_cores_to_corerangeset(1, mesh.compute_with_storage_grid_size(),
                                                                             row_wise=True),
                                    ttnn.ShardStrategy.HEIGHT, use_height_and_width_as_shard_shape=True))
        idx = ttnn.from_torch(torch.tensor([3, 5], dtype=torch.int32), dtype=ttnn.int32, device=mesh,
                              mesh_mapper=shard)
        ttnn.experimental.paged_update_cache(cache, token, update_idxs_tensor=idx,
                                             mesh_coords={ttnn.MeshCoordinate(0, 1)})
        out = ttnn.to_torch(cache, mesh_composer=ttnn.ConcatMeshToTensor(mesh, dim=0))
        assert out[0].abs().sum() == 0 and out[1, 0, 5].tolist() == [1.0] * 32 and out[1].sum() == 32
    finally:
        ttnn.close_mesh_device(mesh)


def test_tensor_volume_is_the_physical_volume_and_logical_volume_the_logical_one(device):
    # nightly transformers/test_paged_update_cache.py sizes its shards as xt.volume() // padded_shape[-1] // cores:
    # TT-NN binds Tensor.volume to physical_volume (pytensor.cpp), the tile-padded count
    t = ttnn.from_torch(torch.zeros(1, 4, 8, 128), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    assert (t.volume(), t.logical_volume()) == (1 * 4 * 32 * 128, 1 * 4 * 8 * 128)
    r = ttnn.from_torch(torch.zeros(3, 5), ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT)
    assert r.volume() == r.logical_volume() == 15


def test_unsqueeze_out_of_range_is_a_tt_fatal():
    # unit base_functionality/test_unsqueeze.py's test_invalid_cases: unsqueeze.cpp refuses a dim outside
    # [-rank - 1, rank] with TT_FATAL (a RuntimeError), where device_sim raised IndexError
    t = ttnn.from_torch(torch.rand(1, 1, 253, dtype=torch.bfloat16))
    for dim in (4, -5):
        with pytest.raises(RuntimeError, match="Dimension out of range"):
            ttnn.unsqueeze(t, dim)
    assert ttnn.unsqueeze(t, 3).shape == ttnn.Shape([1, 1, 253, 1]) and ttnn.unsqueeze(t, -4).shape[0] == 1


def test_the_peer_plugin_keeps_every_case_of_a_file_with_fewer_cases_than_its_cap(tmp_path):
    # peer/plugin.py spread cap picks as group[i * n // cap]: a 7-case file at --peer-max-per-file 30 ran cases 0
    # and 1 only (presid, round 15). Every case of a small file runs; a large one gets cap cases spread over it.
    (tmp_path / "tests" / "ttnn").mkdir(parents=True)
    (tmp_path / "tests" / "ttnn" / "test_small.py").write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('i', range(7))\ndef test_case(i):\n    pass\n")
    (tmp_path / "tests" / "ttnn" / "test_large.py").write_text(
        "import pytest\n\n\n@pytest.mark.parametrize('i', range(40))\ndef test_case(i):\n    pass\n")
    env = {**os.environ, "TT_METAL_HOME": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    env.pop("TTNN_CONFIG_OVERRIDES", None)
    cmd = [sys.executable, "-m", "pytest", "-p", "peer.plugin", "-p", "no:ttreport", "-p", "no:cacheprovider",
           "--noconftest", "--rootdir", str(tmp_path), "-c", os.devnull, "-q", "--peer-max-per-file", "30",
           "tests/ttnn/test_small.py", "tests/ttnn/test_large.py"]
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert "37 passed, 10 deselected" in run.stdout, run.stdout


def test_moreh_group_norm_backward_gives_torchs_gradients_from_the_forwards_mean_and_rstd(device):
    # nightly moreh/test_moreh_group_norm.py: ttnn.operations.moreh.group_norm_backward(dy, x, mean, rstd, groups,
    # are_required_outputs=..., gamma=, input_grad=, gamma_grad=, beta_grad=) writes each asked-for gradient into
    # its tensor and returns None for the others (moreh_group_norm_backward.cpp's two device operations)
    torch.manual_seed(0)
    x, dy, g = torch.randn(2, 4, 8, 8), torch.randn(2, 4, 8, 8), torch.randn(4)
    xg = x.reshape(2, 2, -1)
    mean, rstd = xg.mean(-1), (xg.var(-1, unbiased=False) + 1e-5).rsqrt()
    xr, gr = x.clone().requires_grad_(), g.clone().requires_grad_()
    torch.nn.functional.group_norm(xr, 2, gr, None, 1e-5).backward(dy)

    def tt(t, **kw):
        return ttnn.from_torch(t, ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device, **kw)

    dgamma = tt(torch.zeros(1, 1, 1, 4))
    dx, got_g, db = ttnn.operations.moreh.group_norm_backward(
        tt(dy), tt(x), tt(mean.reshape(1, 1, 2, 2)), tt(rstd.reshape(1, 1, 2, 2)), 2,
        are_required_outputs=(True, True, False), gamma=tt(g.reshape(1, 1, 1, 4)), gamma_grad=dgamma)
    assert got_g is dgamma and db is None
    for got, want in ((dx, xr.grad), (got_g, gr.grad)):
        pcc = torch.corrcoef(torch.stack([ttnn.to_torch(got).float().reshape(-1), want.reshape(-1)]))[0, 1]
        assert pcc > 0.999


def test_group_attn_matmul_keeps_one_program_cache_entry_over_shapes_as_its_hash_reads_none(device):
    # nightly matmul/test_attn_matmul.py's test_group_attn_matmul_with_program_cache: TT-NN's compute_program_hash
    # for group_attn_matmul reads attributes, layouts and dtypes but no shape (and out_subblock_w, 8 for N >= 256), so
    # K 96 / N 576 / 10 heads and K 64 / N 256 / 50 heads share one entry
    grid = device.compute_with_storage_grid_size()
    before = device.num_program_cache_entries()
    for k, n, q, kv in ((96, 576, 10, 2), (64, 256, 50, 5)):
        a = ttnn.from_torch(torch.randn(1, q, 32, k), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
        b = ttnn.from_torch(torch.randn(32, kv, k, n), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
        ttnn.experimental.group_attn_matmul(a, b, compute_with_storage_grid_size=grid)
    assert device.num_program_cache_entries() - before == 1
    a = ttnn.from_torch(torch.randn(1, 10, 32, 96), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    b = ttnn.from_torch(torch.randn(32, 2, 96, 128), ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    ttnn.experimental.group_attn_matmul(a, b, compute_with_storage_grid_size=grid)  # out_subblock_w 4: a new one
    assert device.num_program_cache_entries() - before == 2
