"""LayerNorm and RMSNorm over a hidden dim split across chips: TT-NN's layer_norm_pre_all_gather /
_post_all_gather and rms_norm_pre_all_gather / _post_all_gather.

    stats = ttnn.layer_norm_pre_all_gather(x)                     # each chip: its slice's statistics
    stats = ttnn.all_gather(stats, dim=3, cluster_axis=1)         # every chip: every slice's
    y = ttnn.layer_norm_post_all_gather(x, stats, epsilon=1e-5, weight=gamma_slice, bias=beta_slice)

Each statistic sits in column 0 of its own tile, one tile per statistic per chip, as TT-NN lays them
out; which statistics depends on the program TT-NN runs:

- an interleaved input (LayerNormPreAllGatherDeviceOperation, layernorm_pre_allgather.cpp): sums over
  the slice, [sum(x**2), sum(x)] for a layer norm, [sum(x**2)] for an RMS norm. The post op adds every
  chip's sums and divides by the full width (its slice x the chips).
- the same with LayerNormDefaultProgramConfig(use_welford=True) (layernorm_pre_allgather_welford.cpp):
  the slice's [mean, variance]; the post op pools them (equal slices: the mean of the means, the mean
  of variance + mean**2, less the pooled mean squared).
- a sharded input with a LayerNormShardedMultiCoreProgramConfig (LayerNormDeviceOperation's distributed
  stages, layernorm_sharded_pre_allgather.cpp): means over the slice, [E(x), E(x**2)] or [E(x**2)],
  bfloat16, on the first core of the input's grid; a residual is added into the input's own shard. The
  post op averages every chip's means (its stats must be sharded on one core).
"""

from __future__ import annotations

import torch

from device_sim import device_work
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, values
from device_sim.program_config_checks import tt_fatal
from device_sim.program_configs import LayerNormDefaultProgramConfig, LayerNormShardedMultiCoreProgramConfig
from device_sim.programs import distributed_norm as programs
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor
from device_sim.types import CoreRange, CoreRangeSet, DataType, Layout, MemoryConfig, ShardSpec

STATS_WIDTH = 32  # one tile column per statistic
_HERE = "device_sim/ops/distributed_norm.py"


def _stage(program_config) -> str:
    """Which program computes the statistics: "sharded", "welford" or "sums" (see the module docstring)."""
    if isinstance(program_config, LayerNormShardedMultiCoreProgramConfig):
        return "sharded"
    if isinstance(program_config, LayerNormDefaultProgramConfig) and program_config.use_welford:
        return "welford"
    return "sums"


def _stats_golden(rms: bool):
    def golden(t, *_, residual_input_tensor=None, program_config=None, **__):
        x = t.float() if residual_input_tensor is None else t.float() + residual_input_tensor.float()
        stage = _stage(program_config)
        if stage == "sharded":
            cols = [x.square().mean(-1)] if rms else [x.mean(-1), x.square().mean(-1)]
        elif stage == "welford":
            cols = [x.mean(-1), x.var(-1, unbiased=False)]
        else:
            cols = [x.square().sum(-1)] if rms else [x.square().sum(-1), x.sum(-1)]
        stats = torch.zeros(*x.shape[:-1], STATS_WIDTH * len(cols))
        for i, c in enumerate(cols):
            stats[..., STATS_WIDTH * i] = c
        return stats

    return golden


def _moments(stats: torch.Tensor, width: int, *, rms: bool, stage: str, op_name: str):
    """(E(x) or None for an RMS norm, E(x**2)) over every chip's slice, from the gathered stats."""
    per_chip = 1 if rms else 2
    if stats.shape[-1] % (STATS_WIDTH * per_chip):
        raise tt_fatal(f"stats.padded_shape()[-1] % {STATS_WIDTH * per_chip} == 0",
                       f"{op_name}: stats last dim {stats.shape[-1]} holds {per_chip} tile(s) per chip; give the "
                       f"all-gathered output of the matching _pre_all_gather op", _HERE)
    cols = stats.float()[..., ::STATS_WIDTH]
    cols = cols.reshape(*cols.shape[:-1], -1, per_chip)  # [..., chips, statistics]
    chips = cols.shape[-2]
    if rms:
        ex2 = cols[..., 0]
        return None, (ex2.mean(-1) if stage == "sharded" else ex2.sum(-1) / (width * chips))
    if stage == "sharded":
        return cols[..., 0].mean(-1), cols[..., 1].mean(-1)
    if stage == "welford":
        mean, var = cols[..., 0], cols[..., 1]
        return mean.mean(-1), (var + mean.square()).mean(-1)
    return cols[..., 1].sum(-1) / (width * chips), cols[..., 0].sum(-1) / (width * chips)


def _normed_golden(rms: bool):
    def golden(t, stats, *_, epsilon=1e-12, weight=None, bias=None, program_config=None, **__):
        x = t.float()
        n = x.shape[-1]
        ex, ex2 = _moments(stats, n, rms=rms, stage=_stage(program_config), op_name="post_all_gather")
        if ex is None:
            y = x * torch.rsqrt(ex2 + epsilon).unsqueeze(-1)
        else:
            y = (x - ex.unsqueeze(-1)) * torch.rsqrt(ex2 - ex.square() + epsilon).unsqueeze(-1)
        if weight is not None:
            y = y * weight.float().reshape(n)
        return y + bias.float().reshape(n) if bias is not None else y

    return golden


def _sharded_stats_config(x: Tensor, memory_config: MemoryConfig | None, width: int) -> MemoryConfig:
    """LayerNormDeviceOperation's PRE_ALL_GATHER output placement (compute_output_specs): the output config
    (memory_config, else the input's) with the input's shard spec narrowed to the stats' width on the first
    core of the input's grid."""
    base = memory_config if memory_config is not None else x.memory_config()
    spec = x.memory_config().shard_spec
    first = spec.grid.bounding_box().start
    return MemoryConfig(base.memory_layout, base.buffer_type,
                        ShardSpec(CoreRangeSet([CoreRange(first, first)]), (spec.shape[0], width), spec.orientation))


def _check_sharded(op_name: str, x: Tensor, stage: str) -> None:
    """LayerNormDeviceOperation's checks for a distributed stage (layernorm_device_operation.cpp)."""
    if stage != "sharded":
        if x.is_sharded():
            raise tt_fatal("input.memory_config().memory_layout() == TensorMemoryLayout::INTERLEAVED",
                           f"{op_name}: a sharded input needs a ttnn.LayerNormShardedMultiCoreProgramConfig "
                           f"(program_config=); an interleaved one runs without it", _HERE)
        return
    if not x.is_sharded():
        raise tt_fatal("a.is_sharded()", f"{op_name}: a LayerNormShardedMultiCoreProgramConfig needs a sharded input; "
                       f"shard it (ttnn.to_memory_config) or drop program_config", _HERE)
    if x.padded_shape[-2] != 32:
        raise tt_fatal("a.padded_shape()[-2] == TILE_HEIGHT",
                       f"{op_name}: only activations with batch size = 32 are supported; got padded shape "
                       f"{list(x.padded_shape)}", _HERE)


def _only_in_the_other(op_name: str, rms: bool, **given) -> None:
    """TypeError for a keyword only the other norm's binding takes (layernorm_distributed_nanobind.cpp: recip_tensor;
    rmsnorm_distributed_nanobind.cpp: use_2d_core_grid, fast_and_approximate_mode); the ops share one body."""
    theirs = ("recip_tensor",) if rms else ("use_2d_core_grid", "fast_and_approximate_mode")
    for k in theirs:
        if given.get(k) is not None:
            other = op_name.replace("rms_norm", "layer_norm") if rms else op_name.replace("layer_norm", "rms_norm")
            raise TypeError(f"{op_name}() got an unexpected keyword argument {k!r} ({other} takes it)")


def _pre(rms: bool):
    name = "rms_norm_pre_all_gather" if rms else "layer_norm_pre_all_gather"
    golden = _stats_golden(rms)

    def op(input_tensor: Tensor, *, dtype: DataType = DataType.BFLOAT16, residual_input_tensor: Tensor | None = None,
           compute_kernel_config=None, program_config=None, memory_config: MemoryConfig | None = None,
           recip_tensor: Tensor | None = None, use_2d_core_grid=None, fast_and_approximate_mode: bool = False,
           op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
        # recip_tensor: the Welford kernel's table of 1/1 .. 1/W (ttnn.create_layer_norm_reciprocals), read on the
        # device; device_sim takes the statistics in float32 without it.
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        _only_in_the_other(op_name, rms, recip_tensor=recip_tensor, use_2d_core_grid=use_2d_core_grid,
                           fast_and_approximate_mode=fast_and_approximate_mode or None)
        stage = _stage(program_config)
        if stage == "welford" and recip_tensor is None:
            raise tt_fatal("tensor_args.recip_tensor.has_value()",
                           f"{op_name}: the Welford algorithm requires recip_tensor. Use "
                           f"ttnn.create_layer_norm_reciprocals() to create it.", _HERE)
        _check_sharded(op_name, input_tensor, stage)
        ins = device_inputs(op_name, input_tensor, residual_input_tensor)
        device_inputs(op_name, input_tensor, recip_tensor)
        r = values(residual_input_tensor, op_name) if residual_input_tensor is not None else None
        x = values(input_tensor, op_name)
        stats = golden(x, residual_input_tensor=r, program_config=program_config)
        if stage == "sharded":
            if r is not None:  # the kernel writes the pre-add back over the input's own shard (FUSE_PRE_ADD)
                input_tensor._write(x.float() + r.float())
            cfg = _sharded_stats_config(input_tensor, memory_config, stats.shape[-1])
            out = output(stats, input_tensor, ins, op_name=op_name, dtype=DataType.BFLOAT16, layout=Layout.TILE,
                         memory_config=cfg)
            device_work.launch_after(out, True, input_tensor, programs.sharded_stage_program(
                input_tensor, out, program_config, rms=rms, stage="pre", residual=residual_input_tensor,
                fp32_dest_acc_en=bool(getattr(compute_kernel_config, "fp32_dest_acc_en", False))))
            return out
        out = output(stats, input_tensor, ins, op_name=op_name, dtype=dtype, layout=Layout.TILE,
                     memory_config=memory_config)
        if programs.supported(input_tensor):
            device_work.launch_after(out, True, input_tensor, programs.pre_program(
                input_tensor, out.dtype, rms=rms, use_2d_core_grid=bool(use_2d_core_grid)))
        return out

    what = "the sum of squares" if rms else "the sum of squares and the sum"
    op.__doc__ = f"""This chip's part of a distributed {'RMSNorm' if rms else 'LayerNorm'}: {what} of its slice of the
    last dim (means with a sharded input and its LayerNormShardedMultiCoreProgramConfig).

    >>> x = ttnn.from_torch(torch.full((1, 1, 32, 64), 2.0), ttnn.bfloat16, layout=ttnn.TILE,
    ...                      device=device)
    >>> stats = ttnn.{name}(x)  # this chip's statistics
    >>> stats.shape, stats.to_torch()[0, 0, 0, 0].item()
    (Shape([1, 1, 32, {32 if rms else 64}]), 256.0)
    """
    return register_op(f"ttnn.{name}", kind="norm", golden=golden)(op)


def _post(rms: bool):
    name = "rms_norm_post_all_gather" if rms else "layer_norm_post_all_gather"
    golden = _normed_golden(rms)

    def op(input_tensor: Tensor, stats: Tensor, *, epsilon: float = 1e-12, weight: Tensor | None = None,
           bias: Tensor | None = None, memory_config: MemoryConfig | None = None, compute_kernel_config=None,
           program_config=None, dtype: DataType | None = None, use_2d_core_grid=None, op_name: str = OWN_NAME,
           **tt_nn_only) -> Tensor:
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        _only_in_the_other(op_name, rms, use_2d_core_grid=use_2d_core_grid)
        stage = _stage(program_config)
        _check_sharded(op_name, input_tensor, stage)
        if stage == "sharded" and (not stats.is_sharded() or stats.memory_config().shard_spec is None
                                   or stats.memory_config().shard_spec.grid.num_cores() != 1):
            raise tt_fatal("stats.value().is_sharded() && stats_shard_spec.num_cores() == 1",
                           f"{op_name}: with a sharded input the gathered stats must be sharded on one core; "
                           f"ttnn.to_memory_config them to a one-core WIDTH_SHARDED config", _HERE)
        ins = device_inputs(op_name, input_tensor, stats, weight, bias)
        if tuple(stats.shape[:-1]) != tuple(input_tensor.shape[:-1]):
            raise ValueError(f"{op_name}: stats {list(stats.shape)} and input {list(input_tensor.shape)} differ before "
                             f"the last dim; pass the gathered stats of this same input")
        v = lambda t: values(t, op_name) if t is not None else None  # noqa: E731
        for what, t in (("weight", weight), ("bias", bias)):
            if t is not None and t.logical_volume() != input_tensor.shape[-1]:
                raise ValueError(f"{op_name}: {what} has {t.logical_volume()} values for a slice "
                                 f"{input_tensor.shape[-1]} wide")
        y = golden(v(input_tensor), v(stats), epsilon=epsilon, weight=v(weight), bias=v(bias),
                   program_config=program_config)
        fp32 = bool(getattr(compute_kernel_config, "fp32_dest_acc_en", False))
        if stage == "sharded":
            cfg = memory_config if memory_config is not None else input_tensor.memory_config()
            if cfg.shard_spec is None:  # compute_output_specs: the input's shard spec
                cfg = MemoryConfig(cfg.memory_layout, cfg.buffer_type, input_tensor.memory_config().shard_spec)
            out = output(y, input_tensor, ins, op_name=op_name, dtype=dtype, memory_config=cfg)
            device_work.launch_after(out, True, input_tensor, programs.sharded_stage_program(
                input_tensor, out, program_config, rms=rms, stage="post", gamma=weight, beta=bias,
                fp32_dest_acc_en=fp32))
            return out
        out = output(y, input_tensor, ins, op_name=op_name, dtype=dtype, memory_config=memory_config)
        if programs.supported(input_tensor):
            device_work.launch_after(out, True, input_tensor, programs.post_program(
                input_tensor, stats, out.dtype, rms=rms, weight=weight, bias=bias,
                use_2d_core_grid=bool(use_2d_core_grid), fp32_dest_acc_en=fp32))
        return out

    op.__doc__ = f"""The slice normalized by the statistics of every chip's slice (the gathered stats).

    >>> x = ttnn.from_torch(torch.tensor([[1.0, 3.0] * 32] * 32).reshape(1, 1, 32, 64), ttnn.bfloat16,
    ...                      layout=ttnn.TILE, device=device)
    >>> stats = ttnn.{name.replace('post', 'pre')}(x)  # all_gather'd from every chip on a mesh
    >>> ttnn.{name}(x, stats, epsilon=0.0).to_torch()[0, 0, 0, :2]
    tensor([{'0.4473, 1.3438' if rms else '-1.,  1.'}], dtype=torch.bfloat16)
    """
    return register_op(f"ttnn.{name}", kind="norm", golden=golden)(op)


rms_norm_pre_all_gather = _pre(rms=True)
layer_norm_pre_all_gather = _pre(rms=False)
rms_norm_post_all_gather = _post(rms=True)
layer_norm_post_all_gather = _post(rms=False)
