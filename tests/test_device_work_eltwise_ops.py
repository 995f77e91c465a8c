"""The element-wise ops beyond unary/binary launch TT-NN's device operations: ternary, in place, clamp, fill.

CBs are hand-checked against ternary_program_factory.cpp (device_sim/programs/eltwise.py cites it), the
unary factory and binary_ng's (device_sim/programs/eltwise.py).
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import cbs, launched  # tests/programs_heard.py

import device_sim as ttnn
from device_sim.programs import eltwise, normalization

BF16, BF8, F32 = 2048, 1088, 4096  # bytes of one 32x32 tile


def tt(device, shape, dtype=ttnn.bfloat16, **kw):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=ttnn.TILE, device=device, **kw)


def test_where_of_three_tensors_streams_each_through_two_tile_cbs_on_every_core(device):
    p, t, f = tt(device, (2, 32, 64)), tt(device, (2, 32, 64), ttnn.bfloat8_b), tt(device, (2, 32, 64))
    [prog] = launched(device, lambda: ttnn.where(p, t, f))
    # predicate c_0, true c_1 (its own format), false c_2, output c_3 (the true value's dtype: ternary.cpp's TTT
    # passes t_true.dtype() as the output dtype)
    assert (prog.name, cbs(prog)) == ("TernaryDeviceOperation", [(0, 2, BF16), (1, 2, BF8), (2, 2, BF16),
                                                                 (3, 2, BF8)])
    assert prog.ranges == ((0, 0, 7, 7),)


def test_a_number_operand_is_a_kernel_argument_not_a_cb(device):
    a, b = tt(device, (64, 64)), tt(device, (64, 64))
    [lerp] = launched(device, lambda: ttnn.lerp(a, b, 0.25))  # TTS: the weight is a number
    assert cbs(lerp) == [(0, 2, BF16), (1, 2, BF16), (3, 2, BF16)]
    [where] = launched(device, lambda: ttnn.where(a, 1.0, b))  # TST: the false tensor takes c_1
    assert cbs(where) == [(0, 2, BF16), (1, 2, BF16), (3, 2, BF16)]


def test_a_row_broadcast_operand_adds_the_three_broadcast_cbs(device):
    a, row, c = tt(device, (1, 64, 64)), tt(device, (1, 1, 64)), tt(device, (1, 64, 64))
    [prog] = launched(device, lambda: ttnn.addcmul(a, row, c, value=0.5))
    assert [i for i, _, _ in cbs(prog)] == [0, 1, 2, 4, 5, 6, 3]


def test_mac_is_tt_nns_composite_of_a_multiply_and_an_add(device):
    a, b, c = tt(device, (64, 64)), tt(device, (64, 64)), tt(device, (64, 64))
    assert [p.name for p in launched(device, lambda: ttnn.mac(a, b, c))] == ["BinaryNgDeviceOperation"] * 2


@pytest.mark.parametrize("call", [
    lambda t: ttnn.sigmoid(t), lambda t: ttnn.clamp(t, min=-0.5, max=0.5), lambda t: ttnn.clip(t, -1.0, 1.0),
    lambda t: ttnn.fill(t, 3.5)], ids=["sigmoid", "clamp", "clip", "fill"])
def test_sigmoid_clamp_and_fill_are_one_unary_program(device, call):
    t = tt(device, (64, 64))
    [prog] = launched(device, lambda: call(t))
    assert (prog.name, cbs(prog)) == ("UnaryDeviceOperation", [(0, 2, BF16), (2, 2, BF16)])


def test_clamp_with_tensor_bounds_is_a_composite_device_sim_does_not_model(device):
    t, lo, hi = tt(device, (64, 64)), tt(device, (64, 64)), tt(device, (64, 64))
    assert launched(device, lambda: ttnn.clamp(t, lo, hi)) == []


def test_an_in_place_add_runs_binary_ng_into_its_first_input(device):
    a, b = tt(device, (64, 64)), tt(device, (64, 64), ttnn.bfloat8_b)
    [prog] = launched(device, lambda: ttnn.add_(a, b))
    assert (prog.name, cbs(prog)) == ("BinaryNgDeviceOperation", [(0, 2, BF16), (2, 2, BF16), (1, 2, BF8)])


def test_an_in_place_op_whose_cbs_clash_keeps_the_tensors_values(device):
    # binary_ng's 6 tiles of CBs need 12 KiB at the bottom of L1; an L1 tensor filling all but 8 KiB of each
    # core's L1 makes them clash, as on hardware; the in-place op fails before it writes
    c = device.config
    room = c.l1_size - c.l1_unreserved_base
    rows = (room - 8 * 1024) * 64 // (32 * 2) // 32 * 32  # interleaved over 64 cores: rows of 32 bf16 values
    a, b = tt(device, (64, 32)), tt(device, (64, 32))
    before = a.to_torch().clone()
    blocker = ttnn.from_torch(torch.zeros(rows, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                              memory_config=ttnn.L1_MEMORY_CONFIG)
    with pytest.raises(RuntimeError, match="clash with L1 buffers"):
        ttnn.add_(a, b)
    assert torch.equal(a.to_torch(), before)
    ttnn.deallocate(blocker)
    assert eltwise.binary_program(a, b.dtype, a.dtype).cb_region_end == 6 * BF16


# -- softmax variants: the attention-optimized factory (normalization.softmax_program) -------------

def test_scale_mask_softmax_in_place_adds_the_mask_cbs(device):
    # [1, 1, 64, 256]: Wt = 8, block 8. Numeric-stable row CBs as ttnn.softmax's (c_0 8, c_11 16, c_7, c_2, c_6 8),
    # then the mask's: c_9 Wt + block = 16, c_3 the scale tile, c_4 the mask row (8 tiles, bfloat8_b), and c_5 in
    # the mask's format; c_8 the row max and c_10 the row
    x, mask = tt(device, (1, 1, 64, 256)), tt(device, (1, 1, 1, 256), ttnn.bfloat8_b)
    [prog] = launched(device, lambda: ttnn.scale_mask_softmax_in_place(x, 0.125, mask))
    assert (prog.name, cbs(prog)) == ("SoftmaxDeviceOperation", [
        (0, 8, BF16), (11, 16, BF16), (7, 1, BF16), (2, 1, BF16), (6, 8, BF16), (9, 16, BF16), (3, 1, BF16),
        (4, 8, BF8), (5, 1, BF8), (8, 1, BF16), (10, 8, BF16)])


def test_softmax_in_place_and_attention_softmax_without_a_mask_run_plain_softmax(device):
    x = tt(device, (1, 2, 32, 64))
    plain = normalization.softmax_program(x, ttnn.bfloat16)
    assert [cbs(p) for p in launched(device, lambda: ttnn.softmax_in_place(x))] == [cbs(plain)]
    assert [cbs(p) for p in launched(device, lambda: ttnn.transformer.attention_softmax(x, head_size=16))] == \
        [cbs(plain)]


def test_attention_softmax_in_place_with_a_mask_that_clashes_keeps_the_scores(device):
    x, mask = tt(device, (1, 1, 32, 64)), tt(device, (1, 1, 32, 64))
    [prog] = launched(device, lambda: ttnn.transformer.attention_softmax_(x, head_size=16, attention_mask=mask))
    assert [i for i, _, _ in cbs(prog)] == [0, 11, 7, 2, 6, 9, 3, 4, 5, 8, 10]
    y = tt(device, (1, 1, 32, 64))
    c = device.config
    rows = (c.l1_size - c.l1_unreserved_base - 4 * 1024) * 64 // 64 // 32 * 32  # leaves 4 KiB a core
    blocker = ttnn.from_torch(torch.zeros(rows, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                              memory_config=ttnn.L1_MEMORY_CONFIG)
    before = y.to_torch().clone()
    with pytest.raises(RuntimeError, match="clash with L1 buffers"):
        ttnn.transformer.attention_softmax_(y, head_size=16, attention_mask=mask)
    assert torch.equal(y.to_torch(), before)
    ttnn.deallocate(blocker)


# -- creation: full_like and its kin fill on the device; full, zeros, ones, arange are written from the host ------

def test_full_like_of_a_tiled_tensor_is_tt_nns_fill(device):
    t = tt(device, (64, 64))
    for call in (lambda: ttnn.full_like(t, 2.0), lambda: ttnn.zeros_like(t), lambda: ttnn.ones_like(t)):
        [prog] = launched(device, call)
        assert (prog.name, cbs(prog)) == ("UnaryDeviceOperation", [(0, 2, BF16), (2, 2, BF16)])
    rm = ttnn.from_torch(torch.ones(4, 4), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=device)
    assert launched(device, lambda: ttnn.zeros_like(rm)) == []  # made on the host and written
    assert launched(device, lambda: ttnn.empty_like(t)) == []  # allocation only
    assert launched(device, lambda: ttnn.full((64, 64), 1.0, device=device, layout=ttnn.TILE)) == []


def test_rand_draws_float32_tiles_and_writes_the_output_format(device):
    [prog] = launched(device, lambda: ttnn.rand((64, 128), device=device, layout=ttnn.TILE))
    # 8 output tiles over 8 cores; two float32 tiles drawn, one bfloat16 tile written
    assert (prog.name, cbs(prog), prog.ranges) == ("RandDeviceOperation", [(0, 2, F32), (1, 1, BF16)],
                                                   ((0, 0, 0, 7),))
    t = tt(device, (64, 64))
    assert [p.name for p in launched(device, lambda: ttnn.rand_like(t))] == ["RandDeviceOperation"]


def test_bcast_streams_a_b_and_the_output_through_two_tile_cbs_on_every_core(device):
    a, row = tt(device, (2, 64, 64)), tt(device, (2, 1, 64), ttnn.bfloat8_b)
    [prog] = launched(device, lambda: ttnn.bcast(a, row, ttnn.BcastOpMath.ADD, ttnn.BcastOpDim.H))
    assert (prog.name, cbs(prog), prog.ranges) == ("BcastDeviceOperation", [(0, 2, BF16), (1, 2, BF8), (16, 2, BF16)],
                                                   ((0, 0, 7, 7),))


def test_a_sharded_unary_op_uses_its_shards_as_cbs(device):
    cfg = ttnn.create_sharded_memory_config((32, 64), core_grid=ttnn.CoreGrid(y=1, x=2),
                                            strategy=ttnn.ShardStrategy.HEIGHT,
                                            use_height_and_width_as_shard_shape=True)
    x = ttnn.to_memory_config(tt(device, (64, 64)), cfg)
    [prog] = launched(device, lambda: ttnn.relu(x))
    # the [32, 64] shard is 2 tiles: c_0 the input's shard, c_2 the output's, both globally allocated
    assert (prog.factory, cbs(prog), [cb.globally_allocated for cb in prog.cbs], prog.ranges) == (
        "UnaryShardedProgramFactory", [(0, 2, BF16), (2, 2, BF16)], [True, True], ((0, 0, 1, 0),))
    assert prog.cb_region_end == prog.cb_base  # nothing in the static region


def test_a_binary_op_on_operands_sharded_alike_uses_the_shards_as_cbs(device):
    cfg = ttnn.create_sharded_memory_config((32, 64), core_grid=ttnn.CoreGrid(y=1, x=2),
                                            strategy=ttnn.ShardStrategy.HEIGHT,
                                            use_height_and_width_as_shard_shape=True)
    a, b = (ttnn.to_memory_config(tt(device, (64, 64)), cfg) for _ in range(2))
    [prog] = launched(device, lambda: ttnn.add(a, b))
    # 2-tile shards: c_0 a's, c_1 b's, c_2 the output's, all globally allocated
    assert (cbs(prog), [cb.globally_allocated for cb in prog.cbs]) == (
        [(0, 2, BF16), (1, 2, BF16), (2, 2, BF16)], [True, True, True])
    [scalar] = launched(device, lambda: ttnn.mul(a, 0.5))
    assert cbs(scalar) == [(0, 2, BF16), (1, 1, BF16), (2, 2, BF16)]  # a number: one tile of b
