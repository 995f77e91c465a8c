"""Every registered op against its golden torch function, and what a golden comparison can't show."""

from __future__ import annotations

import inspect

import pytest
import torch
import torch.nn.functional as F

import device_sim as ttnn
from device_sim import dtypes

# Ops without a golden, on purpose: each is registered with the reason (register_op's no_golden=).
NO_GOLDEN = {name for name, op in ttnn.OPS.items() if op.no_golden}


def rnd(*shape, low=-2.0, high=2.0, seed=0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed + len(shape) * 100 + sum(shape))
    return torch.rand(shape, generator=g) * (high - low) + low


def dev(t: torch.Tensor, device, dtype=ttnn.bfloat16, layout=ttnn.TILE, **kw) -> ttnn.Tensor:
    return ttnn.from_torch(t, dtype=dtype, layout=layout, device=device, **kw)


def x(device, *shape, **kw):
    return dev(rnd(*(shape or (2, 32, 64)), **kw), device)


def half_equal(device):
    """(a, b) equal at about half the positions, so comparisons give both answers."""
    a = rnd(2, 32, 64)
    b = torch.where(rnd(2, 32, 64, seed=1) > 0, a, rnd(2, 32, 64, seed=2))
    return dev(a, device), dev(b, device)


def indices(high, *shape):
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(0))


def unary(**kw):
    return lambda d: ((x(d, **kw),), {})


def binary(**kw):
    return lambda d: ((x(d), x(d, seed=3, **kw)), {})


def case(*args, **kwargs):
    """A case whose arguments need the device: `args` and `kwargs` values may be functions of it."""
    call = lambda v, d: v(d) if callable(v) and not isinstance(v, type) else v  # noqa: E731
    return lambda d: (tuple(call(a, d) for a in args), {k: call(v, d) for k, v in kwargs.items()})


pos = dict(low=0.5, high=3.0)
EXACT = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4, math_approx_mode=False,
                                         fp32_dest_acc_en=True)
CASES = {
    # core
    "ttnn.from_torch": lambda d: ((rnd(2, 32, 64),), dict(dtype=ttnn.bfloat16, layout=ttnn.TILE, device=d)),
    "ttnn.to_torch": unary(),
    "ttnn.to_device": lambda d: ((dev(rnd(4, 64), None), d), {}),
    "ttnn.from_device": unary(),
    "ttnn.to_layout": lambda d: ((dev(rnd(3, 40), d, layout=ttnn.ROW_MAJOR), ttnn.TILE), {}),
    "ttnn.to_memory_config": lambda d: ((x(d), ttnn.L1), {}),
    # sharded data movement: x(d) is [2, 32, 64], 64 rows of 64 as 2 shards of 32 rows
    "ttnn.interleaved_to_sharded": lambda d: ((x(d), ttnn.CoreGrid(y=1, x=2), [32, 64],
                                               ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.ShardOrientation.ROW_MAJOR),
                                              {}),
    "ttnn.sharded_to_interleaved": lambda d: ((dev(rnd(2, 32, 64), d, memory=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG),),
                                              {}),
    "ttnn.reshard": lambda d: ((dev(rnd(2, 32, 64), d, memory=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG),
                                ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG), {}),
    "ttnn.interleaved_to_sharded_partial": lambda d: ((x(d, 1, 1, 128, 64), ttnn.CoreGrid(y=1, x=2), [32, 64], 2, 1,
                                                       ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
                                                       ttnn.ShardOrientation.ROW_MAJOR), {}),
    "ttnn.sharded_to_interleaved_partial": lambda d: ((dev(rnd(1, 1, 64, 64), d,
                                                           memory=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG),
                                                       x(d, 1, 1, 128, 64, seed=3), 2, 1), {}),
    "ttnn.typecast": lambda d: ((x(d), ttnn.float32), {}),
    "ttnn.experimental.typecast": lambda d: ((x(d), ttnn.float32), {}),
    "ttnn.clone": unary(),
    "ttnn.reshape": lambda d: ((x(d), (2, 64, 32)), {}),
    "ttnn.permute": lambda d: ((x(d), (2, 0, 1)), {}),
    "ttnn.transpose": lambda d: ((x(d), 1, 2), {}),
    "ttnn.slice": lambda d: ((x(d), [0, 3, 0], [2, 19, 64], [1, 2, 1]), {}),
    # making tensors (tensor_io)
    "ttnn.Tensor": lambda d: ((rnd(2, 32, 64), ttnn.bfloat16, d, ttnn.TILE), {}),
    "ttnn.as_tensor": lambda d: ((rnd(2, 32, 64), ttnn.bfloat16), dict(layout=ttnn.TILE, device=d,
                                                                       memory_config=ttnn.DRAM)),
    "ttnn.allocate_tensor_on_device": lambda d: ((ttnn.Shape([2, 32, 64]), ttnn.bfloat16, ttnn.TILE, d), {}),
    # unary
    **{f"ttnn.{n}": unary() for n in
       ["neg", "abs", "square", "relu", "gelu", "silu", "sigmoid", "sigmoid_accurate", "tanh", "sin", "cos", "exp"]},
    **{f"ttnn.{n}": unary(**pos) for n in ["log", "sqrt", "rsqrt", "reciprocal"]},
    # binary
    **{f"ttnn.{n}": binary() for n in ["add", "sub", "rsub", "mul", "maximum", "minimum"]},
    "ttnn.div": binary(**pos),
    "ttnn.divide": binary(**pos),
    "ttnn.pow": lambda d: ((x(d, **pos), x(d, seed=3)), {}),
    **{f"ttnn.{n}": lambda d: (half_equal(d), {}) for n in ["eq", "ne", "gt", "ge", "lt", "le"]},
    # creation and movement
    **{f"ttnn.{n}": case((2, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=lambda d: d)
       for n in ["zeros", "ones", "empty"]},
    "ttnn.full": case((3, 5), fill_value=1.5, dtype=ttnn.float32, device=lambda d: d),
    "ttnn.arange": case(2, 50, 3, device=lambda d: d),
    **{f"ttnn.{n}": unary() for n in ["zeros_like", "ones_like", "empty_like"]},
    "ttnn.full_like": lambda d: ((x(d), -2.25), {}),
    "ttnn.concat": lambda d: (([x(d), x(d, 2, 16, 64), x(d, seed=4)], 1), {}),
    "ttnn.split": lambda d: ((x(d), 24, 1), {}),
    "ttnn.pad": lambda d: ((dev(rnd(2, 30, 60), d, layout=ttnn.ROW_MAJOR), [(1, 1), (0, 4)], 0.5), {}),
    "ttnn.repeat": lambda d: ((x(d), (1, 2, 3)), {}),
    # shape and data movement (ops/data_movement.py)
    "ttnn.squeeze": lambda d: ((dev(rnd(1, 32, 1, 64), d),), {}),
    "ttnn.unsqueeze": lambda d: ((x(d), 1), {}),
    "ttnn.unsqueeze_to_4D": unary(),
    "ttnn.view": lambda d: ((x(d), (1, 64, 64)), {}),
    "ttnn.stack": lambda d: (([x(d), x(d, seed=3)], 1), {}),
    "ttnn.repeat_interleave": lambda d: ((x(d), 2, 1), {}),
    "ttnn.expand": lambda d: ((x(d, 1, 32, 64), [3, -1, -1]), {}),
    "ttnn.chunk": lambda d: ((x(d), 3, 2), {}),
    "ttnn.tilize": lambda d: ((dev(rnd(3, 40), d, layout=ttnn.ROW_MAJOR),), {}),
    "ttnn.untilize": unary(),
    "ttnn.tilize_with_val_padding": lambda d: ((dev(rnd(3, 40), d, layout=ttnn.ROW_MAJOR), [32, 64], 0.5), {}),
    "ttnn.tilize_with_zero_padding": lambda d: ((dev(rnd(3, 40), d, layout=ttnn.ROW_MAJOR),), {}),
    "ttnn.untilize_with_unpadding": lambda d: ((x(d), [1, 20, 39]), {}),
    "ttnn.sort": lambda d: ((x(d),), dict(dim=1, descending=True)),
    "ttnn.gather": lambda d: ((x(d), 2, dev(indices(64, 2, 32, 8),
                                            d, dtype=ttnn.uint32)), {}),
    # reallocate and move free their input, so this harness (which reuses it) gets a host tensor, which they
    # return as it is; test_data_movement.py checks them on the device.
    **{f"ttnn.{n}": lambda d: ((dev(rnd(4, 64), None),), {}) for n in ["reallocate", "move"]},
    # more element-wise ops (ops/eltwise.py) and reductions (ops/reduction.py)
    **{f"ttnn.{n}": unary() for n in
       ["floor", "ceil", "trunc", "erf", "erfc", "exp2", "expm1", "sign", "mish", "hardswish", "hardsigmoid", "relu6",
        "swish", "tan", "atan", "logical_not", "isfinite", "isnan", "isinf"]},
    **{f"ttnn.{n}": unary(**pos) for n in ["log1p", "log2", "log10"]},
    **{f"ttnn.{n}": unary(low=-0.9, high=0.9) for n in ["asin", "acos"]},
    "ttnn.leaky_relu": lambda d: ((x(d), 0.2), {}),
    "ttnn.elu": lambda d: ((x(d),), dict(alpha=0.5)),
    "ttnn.celu": lambda d: ((x(d),), dict(alpha=1.5)),
    "ttnn.softplus": lambda d: ((x(d),), dict(beta=2.0, threshold=3.0)),
    "ttnn.hardtanh": lambda d: ((x(d), -0.5, 0.75), {}),
    "ttnn.heaviside": lambda d: ((x(d),), dict(value=0.5)),
    "ttnn.round": lambda d: ((x(d),), dict(decimals=1)),
    **{f"ttnn.{n}": binary() for n in ["logical_and", "logical_or", "logical_xor", "atan2", "squared_difference"]},
    **{f"ttnn.{n}": binary(**pos) for n in ["remainder", "fmod"]},
    **{f"ttnn.{n}": lambda d: ((dev(indices(1000, 2, 32, 64), d, dtype=ttnn.int32),
                                dev(indices(1000, 2, 32, 64).flip(-1), d, dtype=ttnn.int32)), {})
       for n in ["bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm"]},
    **{f"ttnn.{n}": lambda d: ((dev(indices(1000, 2, 32, 64), d, dtype=ttnn.int32),
                                dev(indices(8, 2, 32, 64), d, dtype=ttnn.int32)), {})
       for n in ["bitwise_left_shift", "bitwise_right_shift", "logical_left_shift", "logical_right_shift"]},
    "ttnn.where": lambda d: ((dev((rnd(2, 32, 64, seed=5) > 0).float(), d), x(d, seed=3), x(d, seed=4)), {}),
    "ttnn.lerp": lambda d: ((x(d), x(d, seed=3), 0.25), {}),
    "ttnn.addcmul": lambda d: ((x(d), x(d, seed=3), x(d, seed=4)), dict(value=0.5)),
    "ttnn.addcdiv": lambda d: ((x(d), x(d, seed=3), x(d, seed=4, **pos)), dict(value=0.5)),
    "ttnn.mac": lambda d: ((x(d), x(d, seed=3), x(d, seed=4)), {}),
    "ttnn.clamp": lambda d: ((x(d),), dict(min=-0.5, max=0.5)),
    "ttnn.clip": lambda d: ((x(d), -1.0, 1.0), {}),
    "ttnn.prod": lambda d: ((x(d, low=0.9, high=1.1),), dict(dim=-1)),
    "ttnn.cumsum": lambda d: ((x(d), 2), dict(reverse_order=True)),
    "ttnn.cumprod": lambda d: ((x(d, low=0.9, high=1.1), 2), dict(reverse_order=True)),
    "ttnn.topk": lambda d: ((x(d), 5), dict(dim=1, largest=False)),
    "ttnn.bcast": lambda d: ((x(d), x(d, 2, 1, 64, seed=3), ttnn.BcastOpMath.SUB, ttnn.BcastOpDim.H), {}),
    "ttnn.softmax_in_place": unary(),
    "ttnn.scale_mask_softmax_in_place": lambda d: ((x(d, 2, 4, 32, 32), 0.25, x(d, 2, 1, 1, 32, seed=3)), {}),
    # TT-NN runs the hw-dims variant only on a ROW_MAJOR-sharded input with a sharded program config and an
    # interleaved [1, 1, H, W] mask: 2 x 4 x 32 rows of 32, one 32 x 32 shard a core on (0..7, 0)
    "ttnn.scale_causal_mask_hw_dims_softmax_in_place": lambda d: (
        (_height_sharded(x(d, 2, 4, 32, 32), 0, 8), 0.25, x(d, 1, 1, 32, 32, seed=3)),
        dict(program_config=ttnn.SoftmaxShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(8, 1),
                                                                      subblock_w=1, block_h=1, block_w=1))),
    "ttnn.to_dtype": lambda d: ((dev(rnd(4, 64), None, layout=ttnn.ROW_MAJOR), ttnn.float32), {}),
    # weights as TT-NN's factories take them: create_group_norm_weight_bias_rm's ROW_MAJOR [1, 1, rows, 32]
    "ttnn.group_norm": lambda d: ((x(d, 2, 1, 64, 64),), dict(num_groups=8, epsilon=1e-5, **{
        k: dev(ttnn.create_group_norm_weight_bias_rm(rnd(64, seed=s), 64, 2), d, layout=ttnn.ROW_MAJOR)
        for k, s in (("weight", 1), ("bias", 2))})),
    # in place (the harness reads golden inputs before the op writes into them), indexing and fill
    **{f"ttnn.{n}": binary() for n in ["add_", "sub_", "mul_"]},
    "ttnn.div_": binary(**pos),
    **{f"ttnn.{n}_": lambda d: (half_equal(d), {})
       for n in ["eq", "ne", "gt", "ge", "lt", "le", "logical_and", "logical_or", "logical_xor"]},
    "ttnn.plus_one": lambda d: ((dev(indices(100, 2, 32) - 50, d, dtype=ttnn.int32),),
                                dict(skip_negative_entries=True)),
    **{f"ttnn.{n}": lambda d: ((x(d),), dict(diagonal=1)) for n in ["tril", "triu"]},
    "ttnn.copy": lambda d: ((x(d), x(d, seed=3)), {}),
    "ttnn.fill": lambda d: ((x(d), 3.5), {}),
    "ttnn.narrow": lambda d: ((x(d), 2, 5, 20), {}),
    "ttnn.reshape_on_device": lambda d: ((x(d), 1, 2, 32, 64), {}),
    "ttnn.scatter": lambda d: ((x(d), 2, dev(torch.argsort(rnd(2, 32, 64), -1)[..., :8], d, dtype=ttnn.uint32),
                                x(d, 2, 32, 8, seed=3)), {}),
    # matmul
    # HiFi4 with a float32 destination multiplies bfloat16 inputs exactly, so only the output rounding
    # is left to compare; the default fidelity's loss is tested in test_numerics.py.
    "ttnn.matmul": lambda d: ((x(d), x(d, 2, 96, 64)), dict(transpose_b=True, activation="silu",
                                                            compute_kernel_config=EXACT)),
    "ttnn.linear": lambda d: ((x(d), x(d, 64, 96)), dict(bias=x(d, 1, 96), activation="gelu",
                                                         compute_kernel_config=EXACT)),
    # reductions
    "ttnn.sum": lambda d: ((x(d),), dict(dim=-1)),
    "ttnn.mean": lambda d: ((x(d),), {}),
    "ttnn.max": lambda d: ((x(d), 1), {}),
    "ttnn.min": lambda d: ((x(d), [0, 2]), {}),
    "ttnn.var": lambda d: ((x(d),), dict(dim=-1, keepdim=True)),
    "ttnn.std": lambda d: ((x(d),), dict(dim=1, correction=False)),
    "ttnn.argmax": lambda d: ((x(d),), dict(dim=-1)),
    # normalization
    "ttnn.softmax": lambda d: ((x(d), -1), {}),
    "ttnn.layer_norm": lambda d: ((x(d),), dict(weight=x(d, 64), bias=x(d, 1, 64, seed=5), epsilon=1e-5,
                                                residual_input_tensor=x(d, seed=6))),
    "ttnn.rms_norm": lambda d: ((x(d),), dict(weight=x(d, 64), epsilon=1e-6)),
    "ttnn.embedding": lambda d: ((dev(torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(0)), d,
                                      dtype=ttnn.uint32, layout=ttnn.ROW_MAJOR), x(d, 100, 64)), {}),
    # transformer
    "ttnn.transformer.split_query_key_value_and_split_heads": lambda d: ((x(d, 2, 32, 192),), dict(num_heads=4)),
    "ttnn.transformer.concatenate_heads": lambda d: ((x(d, 2, 4, 32, 16),), {}),
    **{f"ttnn.transformer.{n}": lambda d: ((x(d, 2, 4, 32, 32),), dict(head_size=16, attention_mask=x(d, 2, 1, 1, 32)))
       for n in ["attention_softmax", "attention_softmax_"]},
    "ttnn.transformer.scaled_dot_product_attention": lambda d: ((x(d, 1, 4, 32, 16), x(d, 1, 2, 32, 16, seed=1),
                                                                 x(d, 1, 2, 32, 16, seed=2)), {}),
}


# Transformer, KV-cache and vision ops of real models (issue 9, part C). Shapes: see each op's docstring.
def _page_table(d):
    return dev(torch.tensor([[0, 1], [3, 2]]), d, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR)


def _positions(d, positions):
    """Decode positions as TT-NN's paged cache updates take them with a page table: an int32 ROW_MAJOR tensor."""
    return dev(torch.tensor(positions), d, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR)


def _height_sharded(t, y: int, n: int, shard=(32, 32), rows: int = 1):
    """t height-sharded in L1 over cores (0..n-1, y..y+rows-1), one shard each (TT-NN's decode ops take only these)."""
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, y), ttnn.CoreCoord(n - 1, y + rows - 1))])
    spec = ttnn.ShardSpec(grid, shard, ttnn.ShardOrientation.ROW_MAJOR)
    return ttnn.to_memory_config(t, ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec))


def _conv_kwargs(d, **kw):
    w = dev(rnd(8, 16, 3, 3, seed=1), None, layout=ttnn.ROW_MAJOR)  # torch's OIHW, on the host as models keep it
    return dict(input_tensor=x(d, 1, 8, 8, 16), weight_tensor=w, device=d, in_channels=16, out_channels=8,
                batch_size=1, input_height=8, input_width=8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1),
                dilation=(1, 1), groups=1, **kw)


_conv_geometry = dict(input_memory_config=ttnn.DRAM, input_layout=ttnn.TILE, in_channels=16, out_channels=8,
                      batch_size=1, input_height=8, input_width=8, kernel_size=(3, 3), stride=(1, 1),
                      padding=(1, 1), dilation=(1, 1), groups=1, input_dtype=ttnn.bfloat16)
_pool = dict(batch_size=1, input_h=8, input_w=8, channels=32, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))
CASES.update({
    "ttnn.transformer.scaled_dot_product_attention_decode": lambda d: (
        (x(d, 1, 2, 4, 32), x(d, 2, 2, 64, 32, seed=1), x(d, 2, 2, 64, 32, seed=2)), dict(cur_pos=[5, 40])),
    "ttnn.transformer.paged_scaled_dot_product_attention_decode": lambda d: (
        (x(d, 1, 2, 4, 32), x(d, 4, 2, 32, 32, seed=1), x(d, 4, 2, 32, 32, seed=2), _page_table(d)),
        dict(cur_pos_tensor=dev(torch.tensor([5, 40]), d, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR))),
    "ttnn.experimental.nlp_create_qkv_heads": lambda d: ((x(d, 1, 1, 32, 256),), dict(num_heads=4, num_kv_heads=2)),
    "ttnn.experimental.nlp_concat_heads": lambda d: ((x(d, 1, 4, 32, 32),), {}),
    "ttnn.experimental.nlp_create_qkv_heads_decode": lambda d: ((x(d, 1, 1, 8, 256),), dict(num_heads=4,
                                                                                          num_kv_heads=2)),
    # one user's [32 heads, 32] a core on (0..7, 0): TT-NN takes only a height-sharded input
    "ttnn.experimental.nlp_concat_heads_decode": lambda d: ((_height_sharded(x(d, 1, 8, 32, 32), 0, 8),),
                                                            dict(num_heads=4)),
    "ttnn.experimental.rotary_embedding_llama": lambda d: (
        (x(d, 1, 4, 32, 64), x(d, 1, 1, 32, 64, seed=1), x(d, 1, 1, 32, 64, seed=2),
         dev(ttnn.ops.rotary.get_rot_transformation_mat(), d)), {}),
    "ttnn.experimental.rotary_embedding": lambda d: ((x(d, 1, 4, 32, 64), x(d, 1, 1, 64, 64, seed=1),
                                                      x(d, 1, 1, 64, 64, seed=2)), {}),
    **{n: lambda d: ((x(d, 2, 2, 64, 32), x(d, 1, 2, 40, 32, seed=1), 1), {})
       for n in ["ttnn.fill_cache", "ttnn.kv_cache.fill_cache_for_user_"]},
    **{n: lambda d: ((x(d, 2, 2, 64, 32), x(d, 1, 2, 32, 32, seed=1), 5), {})
       for n in ["ttnn.update_cache", "ttnn.kv_cache.update_cache_for_token_"]},
    # the token height-sharded one user a core, as TT-NN takes it
    "ttnn.experimental.paged_update_cache": lambda d: ((x(d, 4, 2, 32, 32), _height_sharded(x(d, 1, 2, 2, 32, seed=1),
                                                                                              0, 2)),
                                                       dict(update_idxs_tensor=_positions(d, [3, 40]),
                                                            page_table=_page_table(d))),
    "ttnn.experimental.paged_fill_cache": lambda d: ((x(d, 4, 2, 32, 32), x(d, 1, 2, 40, 32, seed=1),
                                                      _page_table(d)), dict(batch_idx=1)),
    "ttnn.conv2d": lambda d: ((), _conv_kwargs(d, bias_tensor=dev(rnd(1, 1, 1, 8, seed=2), None,
                                                                  layout=ttnn.ROW_MAJOR))),
    "ttnn.prepare_conv_weights": lambda d: ((), dict(weight_tensor=dev(rnd(8, 16, 3, 3), None, layout=ttnn.ROW_MAJOR),
                                                     weights_format="OIHW", has_bias=True, device=d, **_conv_geometry)),
    "ttnn.prepare_conv_bias": lambda d: ((), dict(bias_tensor=dev(rnd(1, 1, 1, 8), None, layout=ttnn.ROW_MAJOR),
                                                  device=d, **_conv_geometry)),
    "ttnn.max_pool2d": lambda d: ((dev(rnd(1, 1, 64, 32), d, layout=ttnn.ROW_MAJOR),),
                                  dict(dilation=(1, 1), **_pool)),
    "ttnn.avg_pool2d": lambda d: ((dev(rnd(1, 1, 64, 32), d, layout=ttnn.ROW_MAJOR),), dict(_pool)),
    "ttnn.global_avg_pool2d": lambda d: ((x(d, 2, 8, 8, 32),), {}),
    "ttnn.adaptive_avg_pool2d": lambda d: ((), dict(input_tensor=dev(rnd(1, 1, 96, 32), d, layout=ttnn.ROW_MAJOR),
                                                    batch_size=2, input_h=8, input_w=6, channels=32,
                                                    output_size=[4, 3])),
    "ttnn.adaptive_max_pool2d": lambda d: ((), dict(input_tensor=dev(rnd(1, 1, 96, 32), d, layout=ttnn.ROW_MAJOR),
                                                    batch_size=2, input_h=8, input_w=6, channels=32,
                                                    output_size=[4, 3])),
    "ttnn.upsample": lambda d: ((dev(rnd(1, 4, 4, 32), d, layout=ttnn.ROW_MAJOR), 2), {}),
    "ttnn.fold": lambda d: ((dev(rnd(2, 6, 8, 16), d, layout=ttnn.ROW_MAJOR), 2, 4), dict(padding=(1, 1, 0, 0))),
    "ttnn.conv1d": lambda d: ((), dict(input_tensor=x(d, 2, 16, 8), weight_tensor=dev(rnd(4, 8, 3), None,
                                       layout=ttnn.ROW_MAJOR), device=d, in_channels=8, out_channels=4, batch_size=2,
                                       input_length=16, kernel_size=3, stride=2, padding=1)),
    "ttnn.conv_transpose2d": lambda d: ((), dict(input_tensor=x(d, 1, 5, 6, 8), weight_tensor=dev(rnd(8, 4, 3, 3), None,
                                                 layout=ttnn.ROW_MAJOR), device=d, in_channels=8, out_channels=4,
                                                 batch_size=1, input_height=5, input_width=6, kernel_size=(3, 3),
                                                 stride=(2, 2), padding=(1, 1), output_padding=(1, 1))),
    "ttnn.prepare_conv_transpose2d_weights": lambda d: ((), dict(
        weight_tensor=dev(rnd(16, 8, 3, 3), None, layout=ttnn.ROW_MAJOR), weights_format="IOHW", has_bias=True,
        device=d, **_conv_geometry)),
    "ttnn.prepare_conv_transpose2d_bias": lambda d: ((), dict(
        bias_tensor=dev(rnd(1, 1, 1, 8), None, layout=ttnn.ROW_MAJOR), device=d, **_conv_geometry)),
    "ttnn.transformer.windowed_scaled_dot_product_attention": lambda d: (
        (x(d, 1, 2, 64, 32), x(d, 1, 2, 64, 32, seed=1), x(d, 1, 2, 64, 32, seed=2),
         dev(torch.tensor([0, 16, 40, 64]), d, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR)), {}),
    "ttnn.transformer.chunked_scaled_dot_product_attention": lambda d: (
        # chunk_start_idx a multiple of q_chunk_size (32), as TT-NN requires
        (x(d, 2, 4, 32, 32), x(d, 4, 2, 32, 32, seed=1), x(d, 4, 2, 32, 32, seed=2), _page_table(d), 32), {}),
    # a joint sequence of 15, padded to a tile: its padding rows masked out of the keys
    "ttnn.transformer.joint_scaled_dot_product_attention": lambda d: (
        tuple(x(d, 1, 2, n, 32, seed=i) for i, n in enumerate((64, 64, 64, 15, 15, 15))),
        dict(joint_strategy="rear", program_config=ttnn.SDPAProgramConfig(
            compute_with_storage_grid_size=(8, 8), q_chunk_size=32, k_chunk_size=32))),
    # every input height-sharded, as TT-NN requires: q, k one user a core on rows 0 and 1; cos, sin q's users then
    # k's ([1, 16, 1, 64]) on rows 2-3, trans_mat one tile a core on rows 4-5
    "ttnn.experimental.rotary_embedding_llama_fused_qk": lambda d: (
        (_height_sharded(x(d, 1, 8, 4, 64), 0, 8, (32, 64)), _height_sharded(x(d, 1, 8, 1, 64, seed=3), 1, 8, (32, 64)),
         _height_sharded(x(d, 1, 16, 1, 64, seed=1), 2, 8, (32, 64), rows=2),
         _height_sharded(x(d, 1, 16, 1, 64, seed=2), 2, 8, (32, 64), rows=2),
         _height_sharded(dev(ttnn.ops.rotary.get_rot_transformation_mat().repeat(1, 1, 16, 1), d), 4, 8, rows=2)),
        {}),
    "ttnn.experimental.split_query_key_value_and_split_heads": lambda d: ((x(d, 2, 1, 32, 384), ttnn.CoreCoord(4, 2)),
                                                                         dict(num_heads=4)),
    "ttnn.experimental.nlp_create_qkv_heads_falcon7b": lambda d: ((x(d, 1, 1, 32, 4672),), {}),
    "ttnn.experimental.nlp_kv_cache_load_slice": lambda d: ((x(d, 2, 2, 128, 32),), dict(seq_len_start=32,
                                                                                      seq_len_end=96)),
    "ttnn.experimental.paged_fused_update_cache": lambda d: (
        (x(d, 4, 2, 32, 32), _height_sharded(x(d, 1, 2, 2, 32, seed=1), 0, 2), x(d, 4, 2, 32, 32, seed=2),
         _height_sharded(x(d, 1, 2, 2, 32, seed=3), 1, 2)),  # keys and values sharded on disjoint grids
        dict(update_idxs_tensor=_positions(d, [3, 40]), page_table=_page_table(d))),
})


# Distributed RMSNorm's two halves (issue 11): stats as if gathered from two chips (columns 0 and 32).
def _gathered_stats(d):
    s = torch.zeros(1, 1, 32, 64)
    s[..., 0], s[..., 32] = rnd(1, 1, 32, low=20, high=40), rnd(1, 1, 32, low=20, high=40, seed=1)
    return dev(s, d)


CASES.update({
    "ttnn.rms_norm_pre_all_gather": lambda d: ((x(d, 1, 1, 32, 64),), dict(residual_input_tensor=x(d, 1, 1, 32, 64,
                                                                                                   seed=1))),
    "ttnn.rms_norm_post_all_gather": lambda d: ((x(d, 1, 1, 32, 64), _gathered_stats(d)),
                                                dict(epsilon=1e-5, weight=x(d, 64), bias=x(d, 64, seed=2))),
    # LayerNorm's: [sum(x**2), sum(x)] a chip, from two chips' slices of 64 (tiles 0-3)
    "ttnn.layer_norm_pre_all_gather": lambda d: ((x(d, 1, 1, 32, 64),), {}),
    "ttnn.layer_norm_post_all_gather": lambda d: (
        (x(d, 1, 1, 32, 64), dev(torch.cat([ttnn.layer_norm_pre_all_gather.golden_function(
            rnd(1, 1, 32, 64, seed=s)) for s in (0, 1)], -1), d)),
        dict(epsilon=1e-5, weight=x(d, 64), bias=x(d, 64, seed=2))),
})


CASES.update({"ttnn.moreh_norm": lambda d: ((x(d), 2.0), dict(dim=1, keepdim=True))})  # ttnn.operations.moreh.norm
# the norm of x(d) over dim 1 (keepdim), and its gradient: positive values keep the norm away from 0
CASES.update({"ttnn.moreh_norm_backward": lambda d: ((x(d, low=0.5), ttnn.moreh_norm(x(d, low=0.5), 2.0, dim=1,
                                                                                       keepdim=True),
                                                      x(d, 2, 1, 64, seed=3), 2.0), dict(dim=1, keepdim=True))})

# What tt-metal's own unit tests call (make peer; tests/test_peer_lessons.py).
CASES.update({
    "ttnn.fill_implicit_tile_padding": lambda d: ((x(d, 2, 17, 40), -42.0), {}),
    "ttnn.scale_mask_softmax": lambda d: ((x(d, 2, 4, 32, 32), 0.25, x(d, 2, 1, 1, 32, seed=3)), {}),
    "ttnn.moreh_full": lambda d: (([3, 40, 70], 2.5, d), dict(dtype=ttnn.float32)),
    "ttnn.moreh_full_like": lambda d: ((x(d), 7), dict(dtype=ttnn.int32)),
    "ttnn.moreh_arange": lambda d: ((0, 96, 1, d), dict(dtype=ttnn.float32)),
    "ttnn.moreh_dot": lambda d: ((x(d, 1, 1, 1, 64), x(d, 1, 1, 1, 64, seed=3)), {}),
    "ttnn.moreh_cumsum": lambda d: ((x(d), 1), {}),
    "ttnn.moreh_cumsum_backward": lambda d: ((x(d), 1), {}),
    # keepdim: without it TT-NN keeps a reduced tile dim as 1 where torch drops it
    "ttnn.moreh_sum": lambda d: ((x(d), 1), dict(keepdim=True)),
    "ttnn.moreh_mean": lambda d: ((x(d),), dict(dim=2, keepdim=True)),
    "ttnn.moreh_sum_backward": lambda d: ((x(d, 2, 1, 64),), dict(input=x(d, seed=3), dim=1, keepdim=True)),
    "ttnn.moreh_mean_backward": lambda d: ((x(d, 2, 32, 1),), dict(dim=2, keepdim=True, input_grad_shape=[2, 32, 64])),
    "ttnn.moreh_matmul": lambda d: ((x(d, 2, 64, 32), x(d, 64, 96, seed=3)), dict(transpose_input=True,
                                                                                  bias=x(d, 1, 96, seed=4))),
    "ttnn.moreh_linear": lambda d: ((x(d), x(d, 48, 64, seed=3)), dict(bias=x(d, 1, 1, seed=4))),
    # 2-D operands: a batched one's gradient is a second rounding (moreh_sum after the product) the golden lacks
    "ttnn.moreh_matmul_backward": lambda d: ((x(d, 32, 32), x(d, 32, 64, seed=1), x(d, 64, 32, seed=2)),
                                             dict(input_a_grad=x(d, 32, 64, seed=3), input_b_grad=x(d, 64, 32))),
    "ttnn.moreh_linear_backward": lambda d: ((x(d, 32, 16), x(d, 32, 64, seed=1), x(d, 16, 64, seed=2)), dict(
        input_grad=x(d, 32, 64, seed=3), weight_grad=x(d, 16, 64, seed=4), bias_grad=x(d, 1, 16, seed=5))),
    "ttnn.moreh_bmm": lambda d: ((x(d, 2, 32, 64), x(d, 2, 64, 32, seed=1)), {}),
    "ttnn.moreh_bmm_backward": lambda d: ((x(d, 2, 32, 32), x(d, 2, 32, 64, seed=1), x(d, 2, 64, 32, seed=2)),
                                          dict(input_grad=x(d, 2, 32, 64, seed=3), mat2_grad=x(d, 2, 64, 32))),
    "ttnn.moreh_dot_backward": lambda d: ((x(d, 1, 1, 1, 1), x(d, 1, 1, 1, 64, seed=1), x(d, 1, 1, 1, 64, seed=2)),
                                          dict(input_grad=x(d, 1, 1, 1, 64, seed=3),
                                               other_grad=x(d, 1, 1, 1, 64, seed=4))),
    # an fp32 destination: the kernel's intermediates unrounded, as the golden's
    "ttnn.moreh_sgd": lambda d: ((x(d), x(d, seed=1), x(d, seed=2)), dict(
        lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01, momentum_initialized=True,
        compute_kernel_config=ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4,
                                                               fp32_dest_acc_en=True))),
    # an fp32 destination: the intermediates unrounded, as the goldens'; amsgrad's running max for adam
    "ttnn.moreh_adam": lambda d: ((x(d), x(d, seed=1), x(d, seed=2), x(d, low=0.1, seed=3)), dict(
        lr=0.1, weight_decay=0.1, step=2, amsgrad=True, max_exp_avg_sq_in=x(d, low=0.1, seed=4),
        compute_kernel_config=ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4,
                                                               fp32_dest_acc_en=True))),
    "ttnn.moreh_adamw": lambda d: ((x(d), x(d, seed=1), x(d, seed=2), x(d, low=0.1, seed=3), 0.1), dict(
        step=3, amsgrad=True, max_exp_avg_sq_in=x(d, low=0.1, seed=4),
        compute_kernel_config=ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4,
                                                               fp32_dest_acc_en=True))),
    "ttnn.moreh_fold": lambda d: ((dev(rnd(2, 12, 12), d, layout=ttnn.ROW_MAJOR), None, [4, 5], [2, 2]), {}),
    # a max_norm above the total: a coefficient of 1 leaves the gradients as they are, so a second call matches
    "ttnn.moreh_clip_grad_norm": lambda d: (([x(d), x(d, 3, 40, seed=1)], 1e6, 2.0), {}),
    # ROW_MAJOR: torch's shape (a TILE input keeps the indexed dims as ones)
    "ttnn.moreh_getitem": lambda d: ((dev(rnd(2, 8, 64), d, layout=ttnn.ROW_MAJOR),
                                      [dev(torch.tensor([3, -1, 0]), d, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR)],
                                      [1]), {}),
    # float32: TT-NN's composite rounds after the matmul, the scaling and the add (a bfloat16 case differs by an ulp)
    "ttnn.addmm": lambda d: (tuple(dev(rnd(*s, seed=k), d, dtype=ttnn.float32) for s, k in
                                   (((32, 64), 0), ((32, 96), 3), ((96, 64), 4))), dict(alpha=0.5, beta=2.0)),
    # more unary ops (ops/eltwise.py), inputs where each is defined
    **{f"ttnn.{n}": unary() for n in ["i0", "i1", "cbrt", "rad2deg", "deg2rad", "sinh", "cosh", "asinh", "log_sigmoid",
                                      "softsign", "selu", "tanhshrink", "signbit", "isneginf", "isposinf", "eqz",
                                      "nez", "gtz", "ltz", "gez", "lez"]},
    **{f"ttnn.{n}": unary(**pos) for n in ["lgamma", "digamma"]},
    "ttnn.erfinv": unary(low=-0.9, high=0.9),
    "ttnn.atanh": unary(low=-0.9, high=0.9),
    "ttnn.acosh": unary(low=1.5, high=4.0),
    "ttnn.multigammaln": unary(low=2.0, high=4.0),
    "ttnn.hardshrink": lambda d: ((x(d),), dict(lambd=0.25)),
    "ttnn.softshrink": lambda d: ((x(d),), dict(lambd=0.25)),
    "ttnn.polygamma": lambda d: ((x(d, **pos), 1), {}),
    "ttnn.threshold": lambda d: ((x(d), 0.1, -2.0), {}),
    "ttnn.rdiv": lambda d: ((x(d, **pos), 3.5), {}),
    "ttnn.bias_gelu": lambda d: ((x(d), x(d, seed=3)), {}),
    "ttnn.relu_max": lambda d: ((x(d), 0.5), {}),
    "ttnn.identity": lambda d: ((x(d),), {}),
    "ttnn.logit": lambda d: ((x(d, low=0.1, high=0.9),), dict(eps=0.05)),
    "ttnn.rpow": lambda d: ((x(d), 2.0), {}),
    "ttnn.xielu": lambda d: ((x(d),), dict(alpha_p=0.3, alpha_n=0.1)),
    "ttnn.experimental.view": lambda d: ((x(d, 2, 32, 64), 1, 1, 64, 64), {}),
    "ttnn.prelu": lambda d: ((x(d), x(d, 32, seed=3)), {}),
    **{f"ttnn.{n}": lambda d: ((x(d, 1, 2, 32, 128),), dict(dim=-1)) for n in ["glu", "reglu", "swiglu"]},
    # geglu gates with TT-NN's fast gelu, its golden with torch's: inputs where the two agree (gelu(x) ~ x)
    "ttnn.geglu": lambda d: ((x(d, 1, 2, 32, 128, low=4.0, high=6.0),), dict(dim=-1)),
    # backward ops (ops/backward.py): (grad, input[, other]), inputs kept where every function is defined
    **{f"ttnn.{n}_bw": lambda d: ((x(d, seed=7), x(d, **pos), x(d, seed=3, **pos)), {})
       for n in ["add", "sub", "subalpha", "rsub", "mul", "div"]},
    **{f"ttnn.{n}_bw": lambda d: ((x(d, seed=7), x(d, **pos)), {})
       for n in ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "square", "reciprocal", "relu", "sigmoid", "tanh",
                 "silu", "sin", "cos", "i0", "lgamma", "gelu"]},
    # the backward ops tt-metal's nightly eltwise/backward tests call (issue 31), each on a domain it is defined on
    **{f"ttnn.{n}_bw": lambda d: ((x(d, seed=7), x(d, **pos)), {})
       for n in ["asinh", "cosh", "sinh", "erf", "erfc", "exp2", "expm1", "log10", "log1p", "log2", "digamma",
                 "deg2rad", "rad2deg", "frac", "trunc", "floor", "ceil", "round", "sign", "log_sigmoid", "selu",
                 "hardswish", "hardsigmoid", "relu6", "tanhshrink", "softsign", "fill_zero", "fill", "hardshrink",
                 "softshrink", "leaky_relu", "elu", "celu", "hardtanh", "softplus"]},
    **{f"ttnn.{n}_bw": lambda d: ((x(d, seed=7), x(d, low=0.1, high=0.9)), {})
       for n in ["acos", "asin", "atan", "atanh", "erfinv", "logit", "logiteps", "tan"]},
    "ttnn.acosh_bw": lambda d: ((x(d, seed=7), x(d, low=1.5, high=3.0)), {}),
    "ttnn.multigammaln_bw": lambda d: ((x(d, seed=7), x(d, low=2.0, high=3.0)), {}),
    "ttnn.prod_bw": lambda d: ((x(d, seed=7), x(d, **pos)), dict(dim=1)),
    "ttnn.experimental.gelu_bw": lambda d: ((x(d, seed=7), x(d)), {}),
    **{f"ttnn.{n}_bw": (lambda params: lambda d: ((x(d, seed=7), x(d, **pos), *params), {}))(v) for n, v in [
        ("threshold", (1.0, 0.0)), ("polygamma", (1,)), ("pow", (2.0,)), ("rpow", (2.0,)), ("div_no_nan", (2.0,)),
        ("rdiv", (2.0,)), ("clamp", (0.8, 2.0)), ("clip", (0.8, 2.0))]},
    "ttnn.repeat_bw": lambda d: ((x(d, 2, 64, 64, seed=7), x(d), [1, 2, 1]), {}),
    **{f"ttnn.{n}_bw": lambda d: ((x(d, seed=7), x(d, **pos), x(d, seed=3, **pos)), {})
       for n in ["addalpha", "atan2", "xlogy", "hypot", "ldexp", "logaddexp", "logaddexp2", "squared_difference",
                 "min", "max", "fmod", "remainder", "bias_gelu", "assign"]},
    "ttnn.concat_bw": lambda d: ((x(d, 2, 32, 128, seed=7), x(d), x(d, seed=3)), dict(dim=-1)),
    **{f"ttnn.{n}_bw": lambda d: ((x(d, seed=7), x(d), x(d, seed=3), x(d, seed=4, **pos), 0.5), {})
       for n in ["addcmul", "addcdiv"]},
    "ttnn.lerp_bw": lambda d: ((x(d, seed=7), x(d), x(d, seed=3), x(d, seed=4, low=0.0, high=1.0)), {}),
    "ttnn.where_bw": lambda d: ((x(d, seed=7), dev((rnd(2, 32, 64, seed=5) > 0).float(), d), x(d), x(d, seed=3)),
                                {}),
    **{f"ttnn.{n}": lambda d: ((x(d), x(d, seed=3, **pos)), {})
       for n in ["ldexp", "logaddexp", "logaddexp2", "hypot", "xlogy", "div_no_nan"]},
    **{f"ttnn.{n}": lambda d: ((x(d), x(d, seed=3), 0.5), {}) for n in ["addalpha", "subalpha"]},
    "ttnn.isclose": lambda d: ((x(d), x(d, seed=3)), dict(rtol=0.5, atol=0.5)),
    "ttnn.relu_min": lambda d: ((x(d), 0.5), {}),
    "ttnn.floor_div": lambda d: ((x(d), x(d, seed=3, **pos)), {}),
    "ttnn.nextafter": lambda d: ((x(d), x(d, seed=3)), {}),
    "ttnn.polyval": lambda d: ((x(d), [-3.0, 0.5, 10.0]), {}),
    "ttnn.frac": lambda d: ((x(d),), {}),
    "ttnn.experimental.broadcast_to": lambda d: ((x(d, 1, 32, 64), ttnn.Shape([2, 3, 32, 64])), {}),
    "ttnn.index_fill": lambda d: ((dev(rnd(4, 3, 12), d, layout=ttnn.ROW_MAJOR), 1,
                                   dev(torch.tensor([0, 2]), d, dtype=ttnn.uint32, layout=ttnn.ROW_MAJOR), 1.5), {}),
    "ttnn.assign": lambda d: ((x(d),), dict(memory_config=ttnn.L1_MEMORY_CONFIG)),
    "ttnn.roll": lambda d: ((x(d), [1, -3], [1, 2]), {}),
})


def as_golden_input(v):
    """What a golden function gets: each ttnn tensor replaced by the values the device holds."""
    if isinstance(v, ttnn.Tensor):
        return v.value.float() if v.value.is_floating_point() else v.value
    if isinstance(v, ttnn.ComplexTensor):  # TT-NN's complex goldens take a torch complex tensor
        return torch.complex(v.real.value.float(), v.imag.value.float())
    if isinstance(v, (list, tuple)):
        return type(v)(as_golden_input(e) for e in v)
    return v


def assert_matches_golden(out, golden):
    if isinstance(out, (list, tuple)):
        assert isinstance(golden, (list, tuple)) and len(out) == len(golden)
        for o, g in zip(out, golden):
            assert_matches_golden(o, g)
        return
    if isinstance(golden, list) and len(golden) == 1:  # ttnn.experimental.gelu_bw: a tensor; its golden, gelu_bw's
        golden = golden[0]
    if isinstance(out, ttnn.ComplexTensor):  # against a complex golden, or a backward's [real | imag] in the last dim
        if golden.is_complex():
            assert_matches_golden(out.real, golden.real)
            assert_matches_golden(out.imag, golden.imag)
        else:
            assert_matches_golden(ttnn.concat([out.real, out.imag], dim=-1), golden)
        return
    dtype = out.dtype if isinstance(out, ttnn.Tensor) else dtypes.FROM_TORCH[out.dtype]
    got = out.value if isinstance(out, ttnn.Tensor) else out
    assert tuple(got.shape) == tuple(golden.shape)
    if not dtype.is_float:
        assert torch.equal(got.long(), golden.long())
    elif dtype == ttnn.float32:
        torch.testing.assert_close(got, golden.float())
    else:
        # bfloat16 rounding is at most half an ulp of 2**-7 relative; allow one ulp for float32 op order.
        torch.testing.assert_close(got.float(), golden.float(), rtol=2**-7, atol=1e-5)


# ttnn.batch_norm (issue 31: tests/ttnn's test_batch_norm.py); its statistics are [1, C, 1, 1]
CASES.update({"ttnn.batch_norm": lambda d: ((x(d, 2, 4, 32, 32, **pos),), dict(
    running_mean=x(d, 1, 4, 1, 1, seed=1), running_var=x(d, 1, 4, 1, 1, seed=2, **pos), weight=x(d, 1, 4, 1, 1, seed=3),
    bias=x(d, 1, 4, 1, 1, seed=4)))})


# issue 31's smallops: hardmish; convert_to_hwc of a [1, B, C, HW] ROW_MAJOR input width-sharded over two cores
_WIDTH_SHARDED_2 = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.L1, ttnn.ShardSpec(
    ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 0))}), (6, 32),
    ttnn.ShardOrientation.ROW_MAJOR))
CASES.update({
    "ttnn.hardmish": unary(),
    # float32 (what the golden is given): 3 channels padded to 4, a 16 B alignment of float32
    "ttnn.experimental.convert_to_hwc": lambda d: ((dev(rnd(1, 2, 3, 64), d, dtype=ttnn.float32,
                                                        layout=ttnn.ROW_MAJOR, memory_config=_WIDTH_SHARDED_2),), {}),
    # small integers, as tt-metal's test_fast_reduce_nc.py sums: exact at each step's bfloat16 output
    "ttnn.experimental.fast_reduce_nc": lambda d: ((dev(indices(5, 2, 3, 32, 64).float() - 2, d),), dict(dims=[0, 1])),
    # a strided write into a TILE output (through ROW_MAJOR, as slice_write.cpp does)
    "ttnn.experimental.slice_write": lambda d: ((x(d, 2, 16, 32), x(d, 2, 32, 64, seed=3), [0, 0, 0], [2, 32, 64],
                                                [1, 2, 2]), {}),
    "ttnn.bitcast": lambda d: ((dev(rnd(2, 32, 64), d, dtype=ttnn.float32), ttnn.uint32), {}),
    "ttnn.unary_chain": lambda d: ((x(d), [ttnn.UnaryWithParam(ttnn.UnaryOpType.SUB_UNARY_SFPU, 0.5),
                                          ttnn.UnaryWithParam(ttnn.UnaryOpType.LTZ)]), {}),
    "ttnn.bitwise_not": lambda d: ((dev(indices(1000, 2, 32, 64).int() - 500, d, dtype=ttnn.int32),), {}),
    "ttnn.alt_complex_rotate90": unary(),
})


# ttnn.experimental.conv3d (issue 31: tests/ttnn's test_conv3d.py): [N, D, H, W, C] with C padded to 32; grouped
# weights in torch's layout, prepared by the op; C_in in two blocks of 16, summed in bfloat16
CASES.update({
    "ttnn.experimental.conv3d": lambda d: ((), dict(
        input_tensor=dev(rnd(2, 4, 5, 6, 32), d, layout=ttnn.ROW_MAJOR),
        weight_tensor=dev(rnd(32, 16, 3, 3, 3, seed=1), None, layout=ttnn.ROW_MAJOR), device=d,
        bias_tensor=x(d, 1, 32, seed=2), dtype=ttnn.bfloat16, output_channels=32, kernel_size=(3, 3, 3),
        stride=(1, 2, 1), padding=(0, 1, 1), padding_mode="replicate", groups=2,
        config=ttnn.Conv3dConfig(C_in_block=16))),
    "ttnn.experimental.prepare_conv3d_weights": lambda d: ((), dict(
        weight_tensor=dev(rnd(8, 6, 1, 3, 3), None, layout=ttnn.ROW_MAJOR), groups=2, device=d)),
})

# ttnn.quantize / dequantize / requantize (issue 31: nightly eltwise/test_quantization.py): scalar tensors and numbers
_Q = lambda d: dev(torch.tensor([[-9, 0, 7, 120]], dtype=torch.int32), d, dtype=ttnn.int32)  # noqa: E731
CASES.update({
    "ttnn.quantize": lambda d: ((x(d, 4, 64), dev(torch.tensor([0.02]), d, dtype=ttnn.float32), 3), {}),
    "ttnn.dequantize": lambda d: ((_Q(d), 0.02, dev(torch.tensor([[3]], dtype=torch.int32), d, dtype=ttnn.int32)),
                                  dict(dtype=ttnn.float32)),
    "ttnn.requantize": lambda d: ((_Q(d), 0.02, 3, 0.05, -4), {}),
})

# ttnn.experimental.padded_slice (issue 31: nightly data_movement/test_slice_for_conv.py): into height shards of 3 cores
_RM = dict(layout=ttnn.ROW_MAJOR)
CASES.update({"ttnn.experimental.padded_slice": lambda d: (
    (dev(rnd(2, 6, 5, 20), d, **_RM), [0, 2, 0, 0], [2, 5, 5, 20], [1, 1, 1, 1]), dict(
        memory_config=ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, ttnn.ShardSpec(
            ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(2, 0))]), (10, 32),
            ttnn.ShardOrientation.ROW_MAJOR))))})

# ttnn.experimental.convert_to_chw (issue 31: conv/data_movement/test_convert_to_chw.py): [1, 1, HW, C] height shards
CASES.update({"ttnn.experimental.convert_to_chw": lambda d: ((dev(rnd(1, 1, 64, 3), d, memory_config=ttnn.MemoryConfig(
    ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, ttnn.ShardSpec(ttnn.CoreRangeSet(
        [ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 0))]), (32, 32), ttnn.ShardOrientation.ROW_MAJOR))),),
    {})})

# ttnn.rotate (issue 31: tests/ttnn's pool/test_rotate.py): NHWC, about a custom centre, filled outside
CASES.update({"ttnn.rotate": lambda d: ((dev(rnd(2, 9, 12, 32), d, layout=ttnn.ROW_MAJOR), 30.0), dict(
    center=(4.0, 3.0), fill=0.5, interpolation_mode="bilinear"))})
# a grid of 2 samples a point (K = 2), some past the edges (zeros there); float32, as the kernel's weights take the
# input's dtype (bfloat16 weights are not the golden's)
CASES.update({"ttnn.grid_sample": lambda d: ((dev(rnd(2, 9, 12, 32), d, ttnn.float32, layout=ttnn.ROW_MAJOR),
                                              dev(rnd(2, 5, 7, 4, seed=1), d, layout=ttnn.ROW_MAJOR)), {})})

# ttnn.experimental.deepseek_prefill.extract / insert (issue 31: unit_tests/operations/deepseek/): one expert's rows
_IDX = lambda d, v: dev(torch.tensor(v, dtype=torch.int32), d, dtype=ttnn.uint32, layout=ttnn.ROW_MAJOR)  # noqa: E731
CASES.update({
    "ttnn.experimental.deepseek_prefill.extract": lambda d: (
        (dev(rnd(96, 64), d, dtype=ttnn.bfloat8_b), _IDX(d, [0, 32, 64]), _IDX(d, [32, 20, 32])),
        dict(global_expert_id=1, max_dispatched_tokens_per_expert=64)),
    "ttnn.experimental.deepseek_prefill.insert": lambda d: (
        (dev(rnd(96, 64), d, dtype=ttnn.bfloat8_b), dev(rnd(64, 64, seed=1), d, dtype=ttnn.bfloat8_b),
         _IDX(d, [0, 32, 64]), _IDX(d, [32, 20, 32])), dict(global_expert_id=1)),
})

# ttnn.tosa_gather (issue 31: data_movement/test_tosa_gather.py): [N, K, C] rows picked by an [N, W] index
CASES.update({"ttnn.tosa_gather": lambda d: ((x(d, 2, 40, 33), dev(torch.randint(0, 40, (2, 9)), d, dtype=ttnn.uint32)),
                                             {})})

# ttnn.experimental.isin (issue 31: nightly experimental/test_isin.py): a TILE int32 mask of the elements' shape
CASES.update({"ttnn.experimental.isin": lambda d: (
    (dev(torch.randint(0, 50, (3, 40)), d, dtype=ttnn.int32), dev(torch.randint(0, 50, (17,)), d, dtype=ttnn.int32)),
    dict(invert=True))})

# ttnn.experimental.repeat_and_interleave_eltwise_mul (issue 31: nightly ssm/test_ssm_repeat_and_interleave_...):
# [1, 1, 32, 32] repeated 5120 times times [1, 1, 32, 5120] repeated 32 times each
CASES.update({"ttnn.experimental.repeat_and_interleave_eltwise_mul": lambda d: (
    (x(d, 1, 1, 32, 32), x(d, 1, 1, 32, 5120, seed=1)), {})})

# ttnn.tosa_scatter (issue 31: data_movement/test_tosa_scatter.py): [N, W, C] rows written at an [N, W] index
CASES.update({"ttnn.tosa_scatter": lambda d: (
    (x(d, 2, 40, 33), dev(torch.randperm(40)[:9].repeat(2, 1), d, dtype=ttnn.uint32), x(d, 2, 9, 33, seed=1)), {})})

# ttnn.experimental.dit_rms_norm_unary_fused (issue 31: nightly experimental/test_dit_rms_norm_unary_fused.py)
CASES.update({"ttnn.experimental.dit_rms_norm_unary_fused": lambda d: (
    (x(d, 2, 32, 64),), dict(epsilon=1e-5, weight=x(d, 1, 64, seed=1), activation="silu"))})

# the in-place forms binary_nanobind.cpp binds besides add_ ... logical_xor_ (issue 31: docs_examples' logaddexp2_)
CASES.update({f"ttnn.{n}_": binary(**pos) for n in ["squared_difference", "bias_gelu", "ldexp", "logaddexp",
                                                    "logaddexp2", "rsub"]})

# ttnn.mse_loss / l1_loss (issue 31: docs_examples/test_losses_examples.py): loss.cpp's subtract with a fused unary
CASES.update({f"ttnn.{n}": lambda d: ((x(d), x(d, seed=3)), dict(reduction=ttnn.LossReductionMode.MEAN))
              for n in ["mse_loss", "l1_loss"]})

# ttnn.outer (issue 31: docs_examples' test_outer): binary_composite_op.cpp's reshape, tilize and matmul
CASES.update({"ttnn.outer": lambda d: (
    (x(d, 1, 1, 40, 1), dev(rnd(1, 1, 1, 24, seed=3), d, layout=ttnn.ROW_MAJOR)), {})})

# ttnn.fill_rm / fill_ones_rm (issue 31: docs_examples' data movement): a ROW_MAJOR [N, C, H, W] with a filled corner
CASES.update({"ttnn.fill_rm": lambda d: ((2, 3, 40, 48, 33, 31, x(d), 1.5, -0.5), {}),
              "ttnn.fill_ones_rm": lambda d: ((2, 3, 40, 48, 33, 31, x(d)), {})})

# ttnn.indexed_fill (issue 31: docs_examples' data movement): b's batches written over a's at batch_id
CASES.update({"ttnn.indexed_fill": lambda d: (
    (dev(torch.tensor([[[[5, 0, 2]]]]), d, dtype=ttnn.uint32, layout=ttnn.ROW_MAJOR),
     dev(rnd(8, 1, 2, 40), d, layout=ttnn.ROW_MAJOR), dev(rnd(3, 1, 2, 40, seed=1), d, layout=ttnn.ROW_MAJOR)), {})})

# ttnn.nonzero (issue 31: docs_examples' data movement): the count and positions of a [1, 1, 1, X] row's non-zeros
CASES.update({"ttnn.nonzero": lambda d: (
    (dev(torch.tensor([[[[0.0, 2, 0, 0, 3] * 8]]]), d, layout=ttnn.ROW_MAJOR),), {})})


# ttnn.ComplexTensor's ops (issue 31: nightly eltwise/complex and backward/complex_ops), TT-NN's composites of
# element-wise ops: float32 parts, so the composite's few roundings stay within the golden's float32 tolerance
def cx(d, seed=0):
    return ttnn.complex_tensor(*(dev(rnd(2, 32, 64, seed=seed + i), d, dtype=ttnn.float32) for i in (0, 1)))


def fx(d, seed=4):
    return dev(rnd(2, 32, 64, seed=seed), d, dtype=ttnn.float32)


CASES.update({f"ttnn.{n}": case(cx) for n in ("real", "imag", "angle", "is_real", "is_imag", "conj", "polar")})
CASES.update({f"ttnn.{n}": case(fx, cx, memory_config=ttnn.DRAM_MEMORY_CONFIG) for n in ("real_bw", "imag_bw",
                                                                                        "angle_bw")})
CASES.update({f"ttnn.{n}": case(lambda d: cx(d, seed=6), cx, memory_config=ttnn.DRAM_MEMORY_CONFIG)
              for n in ("conj_bw", "polar_bw")})

# the decode-attention matmuls (issue 31: nightly matmul/test_attn_matmul.py): q [1, heads, 32 users, K] against each
# user's keys [32, kv_heads, K, N]; from_cache reads 40 tokens (as 64) of a [32, 1, 96, 64] cache, transposed
CASES.update({
    "ttnn.experimental.attn_matmul": lambda d: ((x(d, 1, 3, 32, 64), x(d, 32, 1, 64, 96, seed=1)),
                                                dict(compute_with_storage_grid_size=ttnn.CoreCoord(8, 8))),
    "ttnn.experimental.attn_matmul_from_cache": lambda d: (
        (x(d, 1, 3, 32, 64), x(d, 32, 1, 96, 64, seed=1)),
        dict(num_tokens=40, transpose_hw=True, compute_with_storage_grid_size=ttnn.CoreCoord(8, 8))),
    "ttnn.experimental.group_attn_matmul": lambda d: ((x(d, 1, 4, 32, 64), x(d, 32, 2, 64, 96, seed=1)),
                                                      dict(compute_with_storage_grid_size=ttnn.CoreCoord(8, 8)))})

# the minimal matmuls (issue 31: nightly experimental/test_minimal_matmul.py, test_minimal_matmul_split.py): a batched
# input folded into M, a bias and a fused GELU, 1x1x1-tile blocks on a 2x2 grid; the split cuts N=96 into 3 outputs
_MINIMAL = dict(config=ttnn.MinimalMatmulConfig(M_block_size=1, K_block_size=1, N_block_size=1, subblock_h=1,
                                                subblock_w=1, compute_with_storage_grid_size=(2, 2)))
CASES.update({
    "ttnn.experimental.minimal_matmul": lambda d: ((x(d, 2, 64, 64), x(d, 64, 96, seed=1)),
                                                   dict(bias_tensor=x(d, 1, 96, seed=2),
                                                        fused_activation=(ttnn.UnaryOpType.GELU, False), **_MINIMAL)),
    "ttnn.experimental.minimal_matmul_split": lambda d: ((x(d, 2, 64, 64), x(d, 64, 96, seed=1)),
                                                         dict(chunks=3, bias_tensor=x(d, 1, 96, seed=2), **_MINIMAL)),
    # DiT's gated residual (nightly experimental/test_dit_minimal_matmul_addcmul_fused.py): a + 0.5 * (x @ w) * gate
    "ttnn.experimental.dit_minimal_matmul_addcmul_fused": lambda d: (
        (x(d, 64, 64), x(d, 64, 96, seed=1), 0.5, x(d, 64, 96, seed=3), x(d, 1, 96, seed=4)),
        dict(bias_tensor=x(d, 1, 96, seed=2), **_MINIMAL))})

# GPT-OSS's MoE router (issue 31: nightly experimental/test_topk_router_gpt.py): K=96 (3 tiles, one a core of each
# group), the top 4 of 128 experts with their softmax weights
CASES.update({"ttnn.experimental.topk_router_gpt": lambda d: (
    (x(d, 32, 96),), dict(weight_tensor=x(d, 96, 128, seed=1), bias_tensor=x(d, 32, 128, seed=2), k=4))})

# DeepSeek's multi-latent attention (issue 31: nightly and unit sdpa/test_mla_decode.py, test_mla_prefill.py): V the
# first 32 of K's 64 columns; decode from a [B, 1, S, 64] cache and a paged one, prefill causal and chunked (tokens
# 32..63 of a paged cache)
CASES.update({
    "ttnn.transformer.flash_multi_latent_attention_decode": lambda d: (
        (x(d, 1, 2, 4, 64), x(d, 2, 1, 64, 64, seed=1)), dict(head_dim_v=32, cur_pos=[5, 40])),
    "ttnn.transformer.paged_flash_multi_latent_attention_decode": lambda d: (
        (x(d, 1, 2, 4, 64), x(d, 4, 1, 32, 64, seed=1), None, 32, _page_table(d)),
        dict(cur_pos_tensor=_positions(d, [5, 40]))),
    "ttnn.transformer.flash_mla_prefill": lambda d: ((x(d, 1, 4, 64, 64), x(d, 1, 1, 64, 64, seed=1), 32), {}),
    "ttnn.transformer.chunked_flash_mla_prefill": lambda d: (
        (x(d, 2, 4, 32, 64), x(d, 4, 1, 32, 64, seed=1), 32, _page_table(d), 32), {})})

# moreh's NLL loss (issue 31: nightly moreh/test_moreh_nll_loss.py, test_moreh_nll_loss_unreduced.py): 4 rows of 10
# classes, one target ignored (ignore_index=9), per-class weights; the backwards write into an input_grad_tensor
_NLL_TARGET = lambda d: dev(torch.tensor([1, 0, 9, 3]), d, dtype=ttnn.int32)  # noqa: E731
CASES.update({
    "ttnn.moreh_nll_loss": lambda d: ((x(d, 4, 10), _NLL_TARGET(d), "sum"),
                                      dict(weight_tensor=x(d, 10, seed=1, low=0.5), ignore_index=9)),
    "ttnn.moreh_nll_loss_backward": lambda d: ((_NLL_TARGET(d), x(d, 1, seed=2), True), dict(
        weight_tensor=x(d, 10, seed=1, low=0.5), divisor_tensor=dev(torch.tensor([2.5]), d),
        input_grad_tensor=x(d, 4, 10), ignore_index=9)),
    "ttnn.moreh_nll_loss_unreduced_backward": lambda d: ((_NLL_TARGET(d), x(d, 4, seed=2)), dict(
        weight_tensor=x(d, 10, seed=1, low=0.5), input_grad_tensor=x(d, 4, 10), ignore_index=9))})

# scatter_add (issue 31: nightly data_movement/test_scatter.py): scatter's 'add' reduction, 8 of 64 columns a row
CASES.update({"ttnn.scatter_add": lambda d: (
    (x(d), 2, dev(torch.argsort(rnd(2, 32, 64), -1)[..., :8], d, dtype=ttnn.uint32), x(d, 2, 32, 8, seed=1)), {})})

# moreh group_norm's backward (issue 31: nightly moreh/test_moreh_group_norm.py): 2 x 4 x 32 x 32 in 2 groups, the
# forward's mean and rstd as [1, 1, N, groups], every gradient asked for
_GN_X = lambda d: x(d, 2, 4, 32, 32, seed=1)  # noqa: E731
CASES.update({"ttnn.moreh_group_norm_backward": lambda d: (
    (x(d, 2, 4, 32, 32), _GN_X(d), dev(_GN_X(d).value.float().reshape(2, 2, -1).mean(-1).reshape(1, 1, 2, 2), d),
     dev(_GN_X(d).value.float().reshape(2, 2, -1).var(-1, unbiased=False).add(1e-5).rsqrt().reshape(1, 1, 2, 2), d),
     2), dict(are_required_outputs=(True, True, True), gamma=x(d, 1, 1, 1, 4, seed=2)))})

# moreh_softmax / softmin / logsoftmax and their backwards (issue 31: nightly moreh/test_moreh_softmax.py and 3 more):
# over W (SMALL_W), H and an outer dim (LARGE_C); the backwards from a softmax output and a gradient
CASES.update({f"ttnn.moreh_{n}": lambda d, dim=dim: ((x(d, 2, 3, 32, 64), dim), {})
              for n, dim in (("softmax", 3), ("softmin", 2), ("logsoftmax", 1))})
CASES.update({f"ttnn.moreh_{n}_backward": lambda d, dim=dim: (
    (dev(torch.softmax(rnd(2, 3, 32, 64), dim), d), x(d, 2, 3, 32, 64, seed=1), dim), {})
    for n, dim in (("softmax", 3), ("softmin", 2), ("logsoftmax", 0))})

# Mamba's SSM ops (issue 31: nightly ssm/test_ssm_1d_sum_reduce.py, test_ssm_prefix_scan.py): runs of 32 summed;
# the scan over 64 rows of a width-sharded [1, 1, 64, 64] (2 cores) from a row-major bfloat16 state
def _ssm_sharded(d, v, rows, layout=ttnn.TILE):
    spec = ttnn.ShardSpec(ttnn.num_cores_to_corerangeset(2, ttnn.CoreCoord(8, 8), True), [rows, 32],
                          ttnn.ShardOrientation.ROW_MAJOR)
    return dev(v, d, layout=layout, memory_config=ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED,
                                                                     ttnn.BufferType.L1, spec))


CASES.update({"ttnn.experimental.hc_sum_reduce": lambda d: ((x(d, 1, 1, 32, 2048),), {}),
              "ttnn.experimental.prefix_scan": lambda d: (
                  (_ssm_sharded(d, rnd(1, 1, 64, 64, low=-1.0, high=1.0), 64),
                   _ssm_sharded(d, rnd(1, 1, 64, 64, seed=1), 64),
                   _ssm_sharded(d, rnd(1, 1, 1, 64, seed=2), 1, layout=ttnn.ROW_MAJOR)), {})})

# ttnn.from_buffer (issue 31: docs_examples' test_tensor_creation_examples.py): a flat list's values in a shape
CASES.update({"ttnn.from_buffer": lambda d: (([1.5, -2.0, 3.25, 4.0, 5.0, 6.0], [2, 3], ttnn.bfloat16, d), {})})

# the DiT LayerNorm's stages (issue 31: nightly transformers/test_distributed_dit_layernorm.py): a slice's Welford
# [mean, var]; the post op with the stats of two equal slices and a per-batch TILE affine
_RECIP = lambda d: ttnn.create_layer_norm_reciprocals(  # noqa: E731
    d, ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 7))}), 64)
CASES.update({"ttnn.experimental.dit_layernorm_pre_allgather": lambda d: ((x(d, 1, 2, 32, 64), _RECIP(d)), {}),
              "ttnn.experimental.dit_layernorm_post_allgather": lambda d: (
                  (x(d, 1, 2, 32, 64), dev(torch.cat([torch.zeros(1, 2, 32, 32), torch.ones(1, 2, 32, 32)] * 2, -1),
                                           d)),
                  dict(epsilon=1e-5, weight=x(d, 2, 32, 64, seed=1), bias=x(d, 2, 32, 64, seed=2)))})

# ttnn.embedding_bw (issue 31: data_movement/test_backward_embedding.py): 64 ids into 40 rows, each row hit several
# times within one block of 32 ids (the first block rows 0-19, the second 20-39): the kernel rounds a row's sum once
# per block, so a row hit in two blocks is rounded twice, which a golden in float32 is not
_EBW_IDS = lambda d: dev(torch.randint(0, 20, (2, 32), generator=torch.Generator().manual_seed(0))  # noqa: E731
                         + torch.tensor([[0], [20]]), d, dtype=ttnn.uint32, layout=ttnn.ROW_MAJOR)
CASES.update({"ttnn.embedding_bw": lambda d: ((_EBW_IDS(d), x(d, 40, 64), x(d, 1, 1, 64, 64)), {})})

# ttnn.var_hw, std_hw, normalize_hw, normalize_global (issue 31: docs_examples' eltwise unary): the composites of
# unary_composite_op.cpp (mean, a bcast subtract, square, a scaled sum, ...), in float32, where no step rounds
CASES.update({f"ttnn.{n}": lambda d: ((dev(rnd(2, 2, 32, 64), d, dtype=ttnn.float32),), {})
              for n in ["var_hw", "std_hw", "normalize_hw", "normalize_global"]})

# ttnn.logical_not_ (issue 31: docs_examples' eltwise unary): logical_not written into its input (in place)
CASES.update({"ttnn.logical_not_": lambda d: ((dev((rnd(2, 32, 64, seed=5) > 0).float(), d),), {})})

# ttnn.allocate_tensor_on_host (issue 31: docs_examples' test_copy_device_to_host_tensor): zeros on the host
CASES.update({"ttnn.allocate_tensor_on_host": lambda d: ((ttnn.Shape([2, 32, 64]), ttnn.bfloat16, ttnn.TILE, d), {})})

# ttnn.experimental.rotate_half (issue 31: integration_tests/falcon7b/test_falcon_rotary_embeddings.py)
CASES.update({"ttnn.experimental.rotate_half": lambda d: ((x(d, 1, 2, 32, 64),), {})})

# ttnn.ema (issue 31: docs_examples' test_ema, unit reduce/test_ema.py): a running average along T in float32
CASES.update({"ttnn.ema": lambda d: ((x(d, 1, 2, 64, 96), 0.75), {})})

# ttnn.moe (issue 31: docs_examples' test_moe, unit reduce/test_moe.py): expert 0's weight among the top 32 of 64,
# the last 56 experts masked out (-inf) and 2 of the 32 used, as Mixtral's test does
_MASK = lambda d, n, used: dev(torch.cat([torch.zeros(1, 1, 1, used), torch.full((1, 1, 1, n - used),  # noqa: E731
                                                                                  float("-inf"))], -1), d)
CASES.update({"ttnn.moe": lambda d: ((x(d, 1, 1, 32, 64), _MASK(d, 64, 8), _MASK(d, 32, 2), 32), {})})

# ttnn.sparse_matmul (issue 31: unit matmul/test_sparse_matmul.py, docs_examples' test_sparse_matmul): b sparse, 2 x 2
# tokens by 4 experts, every other product kept, on the 1D multicast config of the tests
_SPARSE_CFG = ttnn.MatmulMultiCoreReuseMultiCast1DProgramConfig(
    compute_with_storage_grid_size=ttnn.CoreCoord(2, 2), in0_block_w=1, out_subblock_h=1, out_subblock_w=1,
    out_block_h=1, out_block_w=1, per_core_M=1, per_core_N=1, fuse_batch=False, fused_activation=None, mcast_in0=True)
CASES.update({"ttnn.sparse_matmul": lambda d: ((x(d, 2, 2, 32, 64), x(d, 1, 4, 64, 64, seed=1)), dict(
    sparsity=dev(torch.tensor([1.0, 0.0] * 8).reshape(2, 2, 1, 4), d, layout=ttnn.ROW_MAJOR),
    program_config=_SPARSE_CFG, nnz=8))})


def test_every_registered_op_has_a_golden_case():
    assert set(ttnn.OPS) == set(CASES) | NO_GOLDEN, "register each new op with a case in CASES (or no_golden='why')"
    assert all(ttnn.OPS[n].golden_function is None for n in NO_GOLDEN)
    assert not set(CASES) & NO_GOLDEN


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_its_golden_function(name, device):
    op = ttnn.OPS[name]
    args, kwargs = CASES[name](device)
    # Read the golden's inputs first: an in-place op (ttnn.fill_cache, attention_softmax_) replaces its input's values.
    golden_args, golden_kwargs = as_golden_input(args), {k: as_golden_input(v) for k, v in kwargs.items()}
    out = op.wrapper(*args, **kwargs)
    golden = op.golden_function(*golden_args, **golden_kwargs)
    assert_matches_golden(out, golden)


# -- broadcasting and shape errors -----------------------------------------------------------

@pytest.mark.parametrize("other", [(64,), (1, 64), (2, 1, 64), (2, 32, 1), ()])
def test_binary_ops_broadcast_like_torch(device, other):
    a, b = rnd(2, 32, 64), rnd(*other, seed=7)
    out = ttnn.mul(dev(a, device), dev(b, device))
    assert out.shape == (2, 32, 64)
    torch.testing.assert_close(out.value.float(), (a.bfloat16().float() * b.bfloat16().float()).bfloat16().float())


def test_binary_ops_take_python_numbers_on_either_side(device):
    a = dev(rnd(2, 32, 64), device)
    torch.testing.assert_close((2.0 - a).value, (2.0 - a.value.float()).bfloat16())
    torch.testing.assert_close((a * 3).value, (a.value.float() * 3).bfloat16())


def test_shapes_that_do_not_broadcast_name_both(device):
    with pytest.raises(RuntimeError, match=r"\[2, 32, 64\] and \[32\] do not broadcast"):
        ttnn.add(dev(rnd(2, 32, 64), device), dev(rnd(32), device))


def test_matmul_shape_mismatch_names_both_shapes(device):
    with pytest.raises(RuntimeError, match=r"width=64 height=32\nttnn.matmul: shapes \[2, 32, 64\] and \[32, 96\] "
                                           r"cannot be multiplied"):
        ttnn.matmul(x(device), x(device, 32, 96))


def test_matmul_batch_dims_that_do_not_broadcast_are_an_error(device):
    with pytest.raises(RuntimeError, match=r"\[2, 32, 64\] and \[3, 64, 32\] have batch dims"):
        ttnn.matmul(x(device), x(device, 3, 64, 32))


def test_concat_of_mismatched_shapes_names_them(device):
    with pytest.raises(RuntimeError, match=r"\[\[2, 32, 64\], \[2, 16, 32\]\] cannot be joined along dim 1"):
        ttnn.concat([x(device), x(device, 2, 16, 32)], dim=1)


def test_linear_rejects_an_unknown_activation(device):
    with pytest.raises(ValueError, match="'tanhh' is not one of"):
        ttnn.linear(x(device), x(device, 64, 32), activation="tanhh")


# -- nesting ----------------------------------------------------------------------------------

class DepthHook:
    """Records (event, op name, depth) as a profiler would see them."""

    def __init__(self):
        self.events, self.depth = [], 0

    def begin(self, op, args, kwargs):
        self.events.append(("begin", op.name, self.depth))
        self.depth += 1
        return op.name

    def end(self, token, output, exc):
        self.depth -= 1
        self.events.append(("end", token, self.depth))


def test_linear_is_one_op_with_its_bias_and_activation_inside(device):
    a, w, b = x(device), x(device, 64, 96), x(device, 1, 96)
    hook = DepthHook()
    previous = ttnn.set_hook(hook)
    try:
        out = ttnn.linear(a, w, bias=b, activation="relu")
        unbiased = ttnn.linear(a, w, activation="relu")
    finally:
        ttnn.set_hook(previous)
    # As TT-NN's linear: one op each, no nested matmul or add.
    assert hook.events == [("begin", "ttnn.linear", 0), ("end", "ttnn.linear", 0)] * 2
    assert out.dtype == ttnn.bfloat16 and float(out.value.min()) == 0.0 and float(unbiased.value.min()) == 0.0
    assert torch.equal(out.value, torch.relu(a.value.float() @ w.value.float() + b.value.float()).bfloat16())


def test_linear_rounds_only_its_output_to_the_requested_dtype(device):
    a, w, b = x(device), x(device, 64, 96), x(device, 1, 96)
    out = ttnn.linear(a, w, bias=b, dtype=ttnn.bfloat8_b)
    exact = a.value.float() @ w.value.float() + b.value.float()
    assert out.dtype == ttnn.bfloat8_b
    assert torch.equal(out.value, dtypes.to_device_values(exact, ttnn.bfloat8_b))


# -- reductions -------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "var", "std"])
@pytest.mark.parametrize(("dim", "keepdim", "shape"), [
    (None, False, ()), (None, True, (1, 1, 1)), (-1, False, (2, 32)), (1, True, (2, 1, 64)),
    ([0, 2], True, (1, 32, 1)), ([0, 2], False, (32,)),
])
def test_reductions_keep_or_drop_dims(device, op, dim, keepdim, shape):
    t = x(device)
    out = getattr(ttnn, op)(t, dim=dim, keepdim=keepdim)
    assert out.shape == shape
    ref = getattr(torch, {"max": "amax", "min": "amin"}.get(op, op))(
        t.value.float(), dim=tuple(range(3)) if dim is None else dim, keepdim=keepdim)
    torch.testing.assert_close(out.value.float(), ref.bfloat16().float())


def test_argmax_over_everything_gives_the_flat_index_as_uint32(device):
    v = rnd(2, 32, 64)
    out = ttnn.argmax(dev(v, device))
    assert out.dtype == ttnn.uint32 and out.shape == ()
    assert int(out.value) == int(torch.argmax(v.bfloat16()))


# -- dtypes -----------------------------------------------------------------------------------

def test_matmul_to_bfloat8_b_rounds_to_block_float_values(device):
    a, b = x(device), x(device, 64, 96)
    out16 = ttnn.matmul(a, b)
    out8 = ttnn.matmul(a, b, dtype=ttnn.bfloat8_b)
    assert out8.dtype == ttnn.bfloat8_b and out8.layout == ttnn.TILE
    assert not torch.equal(out8.value, out16.value)
    v = out8.value.float()
    assert torch.equal(dtypes.to_device_values(v, ttnn.bfloat8_b).float(), v)  # exactly representable
    assert torch.equal(v.bfloat16().float(), v)
    torch.testing.assert_close(v, out16.value.float(), rtol=0, atol=float(v.abs().max()) * 2**-6)


# -- creation ---------------------------------------------------------------------------------

def test_creation_ops_without_a_device_make_host_tensors():
    for t in [ttnn.zeros((2, 3)), ttnn.full((2, 3), 7), ttnn.arange(5), ttnn.rand((4, 4))]:
        assert t.storage_type() == ttnn.StorageType.HOST and t.device() is None
    assert ttnn.arange(5).value.tolist() == [0, 1, 2, 3, 4]
    assert ttnn.zeros((2, 3)).dtype == ttnn.bfloat16 and ttnn.zeros((2, 3)).layout == ttnn.ROW_MAJOR


def test_creation_ops_take_tt_nn_positional_arguments(device):
    z = ttnn.zeros((32, 64), ttnn.float32, ttnn.TILE, device, ttnn.L1)
    assert (z.dtype, z.layout, z.device(), z.memory_config()) == (ttnn.float32, ttnn.TILE, device, ttnn.L1)
    f = ttnn.full_like(z, 4.0, ttnn.bfloat16)
    assert f.dtype == ttnn.bfloat16 and float(f.value.max()) == 4.0
    assert ttnn.arange(1, 7, 2, ttnn.int32, device).value.tolist() == [1, 3, 5]


def test_creation_ops_place_their_output_by_the_memory_rules(device):
    z = ttnn.zeros((32, 32), device=device, layout=ttnn.TILE, memory=ttnn.L1)
    assert (z.memory_config(), z.memory_config_source) == (ttnn.L1, "argument")
    assert ttnn.ones((32, 32), device=device).memory_config_source == "default"
    like = ttnn.full_like(z, 2.0)
    assert (like.device(), like.layout, like.memory_config(), like.memory_config_source) == (
        device, ttnn.TILE, ttnn.L1, "inputs")
    assert ttnn.zeros_like(z, dtype=ttnn.float32, layout=ttnn.ROW_MAJOR).dtype == ttnn.float32


def test_block_float_creation_in_row_major_is_a_clear_error(device):
    with pytest.raises(ValueError, match="only in TILE layout"):
        ttnn.zeros((32, 32), dtype=ttnn.bfloat8_b, layout=ttnn.ROW_MAJOR, device=device)


def test_rand_is_uniform_in_range_and_follows_torch_manual_seed(device):
    torch.manual_seed(3)
    a = ttnn.rand((64, 64), low=-1.0, high=3.0, device=device, layout=ttnn.TILE)
    torch.manual_seed(3)
    b = ttnn.rand((64, 64), low=-1.0, high=3.0, device=device, layout=ttnn.TILE)
    assert torch.equal(a.value, b.value)
    assert float(a.value.min()) >= -1.0 and float(a.value.max()) <= 3.0 and a.value.float().std() > 0.5
    seeded = [ttnn.rand((8, 8), seed=5).value for _ in range(2)]
    assert torch.equal(*seeded)
    like = ttnn.rand_like(a)
    assert (like.shape, like.dtype, like.device()) == (a.shape, a.dtype, device)
    assert not torch.equal(like.value, a.value)


def test_pad_takes_tt_nn_pairs_from_the_first_padded_dim(device):
    out = ttnn.pad(dev(torch.ones(2, 3), device, layout=ttnn.ROW_MAJOR), [(1, 0), (0, 2)], 0.0)
    assert out.value.tolist() == [[0] * 5, [1, 1, 1, 0, 0], [1, 1, 1, 0, 0]]
    with pytest.raises(ValueError, match="at most 2 \\(before, after\\) pairs"):
        ttnn.pad(dev(torch.ones(2, 3), device, layout=ttnn.ROW_MAJOR), [(0, 1)] * 3, 0.0)


# -- normalization, embedding, transformer ----------------------------------------------------

def test_rms_norm_matches_torch(device):
    t, w = x(device), x(device, 64)
    out = ttnn.rms_norm(t, weight=w, epsilon=1e-6)
    ref = F.rms_norm(t.value.float(), (64,), w.value.float(), eps=1e-6)
    torch.testing.assert_close(out.value.float(), ref.bfloat16().float(), rtol=2**-7, atol=1e-5)


def test_embedding_takes_padding_idx_and_embeddings_type_which_change_no_value(device):
    table = x(device, 10, 64)
    ids = dev(torch.tensor([[1, 0, 7]]), device, dtype=ttnn.uint32, layout=ttnn.ROW_MAJOR)
    plain = ttnn.embedding(ids, table)
    padded = ttnn.embedding(ids, table, padding_idx=0, embeddings_type=ttnn.EmbeddingsType.PADDED)
    assert torch.equal(padded.value, plain.value) and torch.equal(plain.value[0, 1], table.value[0])
    with pytest.raises(IndexError, match="padding_idx 10 is outside the table's 10 rows"):
        ttnn.embedding(ids, table, padding_idx=10)
    with pytest.raises(ValueError, match="BINARY takes a two-row weight, got 10 rows"):
        ttnn.embedding(ids, table, embeddings_type=ttnn.EmbeddingsType.BINARY)


def test_embedding_errors_name_the_problem(device):
    table = x(device, 10, 64)
    ids = dev(torch.tensor([[1, 12]]), device, dtype=ttnn.uint32, layout=ttnn.ROW_MAJOR)
    with pytest.raises(IndexError, match=r"id 12 is outside the table's 10 rows"):
        ttnn.embedding(ids, table)
    with pytest.raises(TypeError, match="dtype=ttnn.uint32"):
        ttnn.embedding(dev(torch.tensor([[1.0]]), device), table)


def test_split_heads_puts_each_head_where_tt_nn_does(device):
    B, S, H, KVH, D = 1, 32, 4, 2, 16
    # Feature f of token s holds 1000*s + f, so every output element says where it came from.
    qkv = torch.arange(S)[:, None] * 1000.0 + torch.arange((H + 2 * KVH) * D)
    q, k, v = ttnn.transformer.split_query_key_value_and_split_heads(
        dev(qkv[None], device, dtype=ttnn.float32), num_heads=H, num_kv_heads=KVH)
    assert (q.shape, k.shape, v.shape) == ((B, H, S, D), (B, KVH, D, S), (B, KVH, S, D))
    assert q.value[0, 2, 5, 3] == 5 * 1000 + 2 * D + 3
    assert k.value[0, 1, 3, 5] == 5 * 1000 + H * D + 1 * D + 3
    assert v.value[0, 1, 5, 3] == 5 * 1000 + (H + KVH) * D + 1 * D + 3
    q2, k2, _ = ttnn.transformer.split_query_key_value_and_split_heads(
        dev(qkv[None, :, : H * D], device, dtype=ttnn.float32), dev(qkv[None, :, H * D:], device, dtype=ttnn.float32),
        num_heads=H, num_kv_heads=KVH, transpose_key=False)
    assert torch.equal(q2.value, q.value) and torch.equal(k2.value, k.value.transpose(-2, -1))
    heads = ttnn.transformer.concatenate_heads(q)
    assert torch.equal(heads.value[0], qkv[:, : H * D])
    # TT-NN's binding also takes use_falcon7b_backend= (its Falcon-7B kernel for the same split), as models pass it.
    q3, k3, v3 = ttnn.transformer.split_query_key_value_and_split_heads(
        dev(qkv[None], device, dtype=ttnn.float32), num_heads=H, num_kv_heads=KVH, transpose_key=True,
        memory_config=ttnn.L1, use_falcon7b_backend=True)
    assert torch.equal(q3.value, q.value) and torch.equal(k3.value, k.value) and torch.equal(v3.value, v.value)
    assert q3.memory_config() == ttnn.L1


@pytest.mark.parametrize("causal", [True, False])
def test_scaled_dot_product_attention_matches_torch(device, causal):
    q, k, v = x(device, 1, 4, 32, 16), x(device, 1, 2, 32, 16, seed=1), x(device, 1, 2, 32, 16, seed=2)
    mask = None if causal else x(device, 1, 1, 32, 32, seed=3)
    out = ttnn.transformer.scaled_dot_product_attention(q, k, v, is_causal=causal, attn_mask=mask)
    ref = F.scaled_dot_product_attention(q.value.float(), k.value.float(), v.value.float(), is_causal=causal,
                                         attn_mask=None if causal else mask.value.float(), enable_gqa=True)
    torch.testing.assert_close(out.value.float(), ref.bfloat16().float(), rtol=2**-7, atol=1e-5)
    with pytest.raises(ValueError, match="either is_causal=True or attn_mask"):
        ttnn.transformer.scaled_dot_product_attention(q, k, v, attn_mask=x(device, 1, 1, 32, 32))


def test_attention_softmax_underscore_writes_into_its_input_like_tt_nn(device):
    scores = x(device, 1, 2, 32, 32)
    before, tensor_id, address = scores.value.clone(), scores.tensor_id, scores.buffer_address()
    out = ttnn.transformer.attention_softmax_(scores, head_size=16)
    assert out is scores and (out.tensor_id, out.buffer_address()) == (tensor_id, address)
    ref = torch.softmax(before.float() / 4, -1)
    torch.testing.assert_close(scores.value.float(), ref.bfloat16().float(), rtol=2**-7, atol=1e-5)
    with pytest.raises(ValueError, match="writes into its input"):
        ttnn.transformer.attention_softmax_(scores, head_size=16, memory_config=ttnn.L1)


def test_preprocessed_linear_parameters_reproduce_torch_linear(device):
    torch.manual_seed(0)
    layer = torch.nn.Linear(64, 96)
    w = ttnn.model_preprocessing.preprocess_linear_weight(layer.weight.detach(), dtype=ttnn.float32)
    b = ttnn.model_preprocessing.preprocess_linear_bias(layer.bias.detach(), dtype=ttnn.float32)
    assert (w.shape, b.shape, w.layout, w.storage_type()) == ((64, 96), (1, 96), ttnn.TILE, ttnn.StorageType.HOST)
    a = rnd(2, 32, 64)
    out = ttnn.linear(dev(a, device, dtype=ttnn.float32), w.to_device(device), bias=b.to_device(device))
    torch.testing.assert_close(out.value, layer(a).detach())


# -- keyword arguments: TT-NN-only ones are accepted, typos are errors -----------------------

def takes_tt_nn_only(name):
    return any(p.kind is p.VAR_KEYWORD for p in inspect.signature(ttnn.OPS[name].function).parameters.values())


def test_a_misspelt_keyword_is_an_error_that_names_the_right_one(device):
    with pytest.raises(TypeError, match=r"ttnn\.sum\(\) got an unexpected keyword argument 'keep_dim'; "
                                        r"did you mean 'keepdim'\?"):
        ttnn.sum(x(device), dim=-1, keep_dim=True)
    with pytest.raises(TypeError, match="'programconfig'; did you mean 'program_config'"):
        ttnn.layer_norm(x(device), programconfig=None)
    with pytest.raises(TypeError, match=r"'zzz'; it takes input_tensor, dim, keepdim, correction, scalar, "
                                        r"memory_config"):
        ttnn.mean(x(device), zzz=1)


def test_output_tensor_is_refused_by_an_op_that_takes_none_in_tt_nn(device):
    a = x(device)
    with pytest.raises(TypeError, match="'output_tensor': TT-NN's op takes no output tensor"):
        ttnn.clone(a, output_tensor=ttnn.zeros_like(a))


@pytest.mark.parametrize("name", sorted(n for n in CASES if takes_tt_nn_only(n)))
def test_every_op_accepts_tt_nn_only_keywords_and_rejects_typos(name, device):
    op = ttnn.OPS[name]
    args, kwargs = CASES[name](device)
    plain = op.wrapper(*args, **kwargs)
    # Keywords an op names itself (matmul's program_config, core_grid) are honoured there, not ignored.
    own_params = inspect.signature(op.function).parameters
    extra = dict(program_config=object(), core_grid=ttnn.CoreGrid(y=8, x=8), queue_id=0)
    tuned = op.wrapper(*args, **kwargs, **{k: v for k, v in extra.items() if k not in own_params})
    for p, t in zip(*(o if isinstance(o, (list, tuple)) else [o] for o in (plain, tuned))):
        assert torch.equal(ttnn.to_torch(p), ttnn.to_torch(t))
    # The suggestion comes from the op's own parameters or, for ops without memory_config, from TT_NN_ONLY.
    own = "memory_config" in inspect.signature(op.function).parameters
    typo, meant = ("memory_confg", "memory_config") if own else ("queue_idd", "queue_id")
    with pytest.raises(TypeError, match=rf"{name}\(\) got .* '{typo}'; did you mean '{meant}'\?"):
        op.wrapper(*args, **kwargs, **{typo: None})

