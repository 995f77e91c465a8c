"""The DiT LayerNorm over a hidden dim split across chips: ttnn.experimental.dit_layernorm_pre_allgather and
dit_layernorm_post_allgather.

    stats = ttnn.experimental.dit_layernorm_pre_allgather(x, recip)          # each chip: its slice's [mean, var]
    stats = ttnn.all_gather(stats, dim=3, cluster_axis=1)                    # every chip: every slice's
    y = ttnn.experimental.dit_layernorm_post_allgather(x, stats, epsilon=1e-5, weight=gamma, bias=beta)

Welford's statistics as ttnn.layer_norm_pre_all_gather gives them with use_welford (distributed_norm.py, whose
pooling the post op shares): the slice's mean in column 0 of one tile, its variance in column 0 of the next
(layernorm_pre_allgather_welford.cpp's welford_finalize_to_row, transposed). recip is the kernel's table of
1/1 .. 1/W (ttnn.create_layer_norm_reciprocals); device_sim works the statistics out in float32 without it.
"""

from __future__ import annotations

import torch

from device_sim import device_work
from device_sim.compute_config import MathFidelity, resolve
from device_sim.ops.common import device_inputs, output, values
from device_sim.ops.distributed_norm import STATS_WIDTH, _moments
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import dit_layernorm as programs
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout, MemoryConfig, TensorMemoryLayout

_WHERE = "device_sim/ops/dit_layernorm.py"
_FLOATS = (DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.FLOAT32)


def _numerics(op_name: str, compute_kernel_config):
    # dit_layernorm_{pre,post}_all_gather.cpp: init_device_compute_kernel_config(arch, config, HiFi4, true, false)
    return resolve(op_name, compute_kernel_config, math_fidelity=MathFidelity.HiFi4, math_approx_mode=True,
                   fp32_dest_acc_en=False)


def _check(checks, op_name: str) -> None:
    for ok, condition, message in checks:
        if not ok:
            raise tt_fatal(condition, f"{message}\n{op_name}", _WHERE)


def _on_device(x: Tensor) -> bool:
    return x.device() is not None and x.buffer is not None


def _pre_golden(input_tensor, *_, **__):
    x = input_tensor.float()
    stats = torch.zeros(*x.shape[:-1], 2 * STATS_WIDTH)
    stats[..., 0] = x.mean(-1)
    stats[..., STATS_WIDTH] = x.var(-1, unbiased=False)
    return stats


@register_op("ttnn.experimental.dit_layernorm_pre_allgather", kind="norm", golden=_pre_golden)
def dit_layernorm_pre_allgather(input_tensor: Tensor, recip_tensor: Tensor, *, dtype: DataType = DataType.BFLOAT16,
                                compute_kernel_config=None, memory_config: MemoryConfig | None = None,
                                op_name: str = OWN_NAME) -> Tensor:
    """This chip's slice statistics for a DiT LayerNorm: [..., 64], the slice's mean in column 0 of the first tile
    and its (population) variance in column 0 of the second, in `dtype` (bfloat16 by default).

    >>> x = ttnn.from_torch(torch.tensor([1.0, 3.0]).repeat(1, 1, 32, 16), ttnn.bfloat16, layout=ttnn.TILE,
    ...                     device=device)
    >>> recip = ttnn.create_layer_norm_reciprocals(device, ttnn.CoreRangeSet({ttnn.CoreRange((0, 0), (7, 7))}), 32)
    >>> stats = ttnn.experimental.dit_layernorm_pre_allgather(x, recip)
    >>> stats.shape, stats.to_torch()[0, 0, 0, 0].item(), stats.to_torch()[0, 0, 0, 32].item()
    (Shape([1, 1, 32, 64]), 2.0, 1.0)
    """
    x = input_tensor
    _check(((not x.is_sharded(), "!input.is_sharded()", "DIT layernorm pre-all-gather does not support sharded "
             "inputs."),
            (x.layout == Layout.TILE, "input.layout() == Layout::TILE", "Only tilized inputs supported."),
            (x.memory_config().memory_layout == TensorMemoryLayout.INTERLEAVED,
             "memory_layout() == TensorMemoryLayout::INTERLEAVED", "Only interleaved inputs supported."),
            (x.dtype in _FLOATS, "input.dtype() in (BFLOAT16, BFLOAT8_B, FLOAT32)", "Input data format not supported."),
            (_on_device(x), "input.storage_type() == StorageType::DEVICE", "Operands must be on device.")), op_name)
    ins = device_inputs(op_name, x, recip_tensor)
    n = _numerics(op_name, compute_kernel_config)
    out = output(_pre_golden(values(x, op_name)), x, ins, op_name=op_name, dtype=dtype, layout=Layout.TILE,
                 memory_config=memory_config if memory_config is not None else x.memory_config())
    device_work.launch_after(out, True, x, programs.pre_program(x, recip_tensor, out.dtype, dest_tiles=n.dest_tiles))
    return out


def _affine(t, width: int):
    """gamma or beta as it multiplies the input: TILE [..., 32, width] by its first row, per batch when its dim -3 is
    the input's (Motif's affine per batch element), or ROW_MAJOR [..., 32] rows read in order as `width` values."""
    if t is None:
        return None
    v = t.float()
    return v.reshape(-1) if v.shape[-1] != width else v[..., :1, :]


def _post_golden(input_tensor, stats, *_, epsilon=1e-5, weight=None, bias=None, **__):
    x = input_tensor.float()
    mean, ex2 = _moments(stats, x.shape[-1], rms=False, stage="welford", op_name="dit_layernorm_post_allgather")
    y = (x - mean.unsqueeze(-1)) * torch.rsqrt(ex2 - mean.square() + epsilon).unsqueeze(-1)
    w, b = _affine(weight, x.shape[-1]), _affine(bias, x.shape[-1])
    return y if w is None else y * w + b


def _check_affine(name: str, t: Tensor, x: Tensor) -> list:
    """check_weight_bias_shape (dit_layernorm_post_all_gather_device_operation.cpp)."""
    shape, xs = t.padded_shape, x.padded_shape
    tile = t.layout == Layout.TILE
    return [(t.dtype in (DataType.BFLOAT16, DataType.FLOAT32), f"{name.lower()}.dtype() in (BFLOAT16, FLOAT32)",
             f"{name} must be BF16 or FLOAT32."),
            (1 <= len(shape) <= len(xs), "ndims >= 1 && ndims <= rank", f"{name} must have 1-{len(xs)} dimensions, "
             f"got: {len(shape)}"),
            (not tile or shape[-1] == xs[-1], "shape[-1] == a.padded_shape()[-1]", f"{name} hidden dimension must "
             f"match input. Got {shape[-1]} vs {xs[-1]}"),
            (not tile or shape[-2] == 32, "shape[-2] == TILE_HEIGHT", f"{name} height must be TILE_HEIGHT (32), got: "
             f"{shape[-2] if len(shape) > 1 else 1}"),
            (tile or (shape[-1] == 32 and t.volume() // 32 == xs[-1] // 32), "ROW_MAJOR shape[-1] == TILE_WIDTH",
             f"{name} dimensions must align with input."),
            (len(shape) < 3 or shape[-3] in (1, xs[-3]), "shape[-3] == 1 || shape[-3] == a.padded_shape()[-3]",
             f"{name} batch dimension (dim[-3]) must be 1 or match input batch ({xs[-3]}), got: "
             f"{shape[-3] if len(shape) > 2 else 1}"),
            (len(shape) < 3 or shape[-3] == 1 or tile, "t.layout() == Layout::TILE", f"{name} with batch dimension "
             f"> 1 must use TILE layout. ROW_MAJOR layout does not support batch broadcasting.")]


@register_op("ttnn.experimental.dit_layernorm_post_allgather", kind="norm", golden=_post_golden)
def dit_layernorm_post_allgather(input_tensor: Tensor, stats: Tensor, *, epsilon: float = 1e-5,
                                 weight: Tensor | None = None, bias: Tensor | None = None,
                                 memory_config: MemoryConfig | None = None, compute_kernel_config=None,
                                 dtype: DataType | None = None, op_name: str = OWN_NAME) -> Tensor:
    """The slice normalised by every chip's gathered [mean, var] statistics (pooled over the equal slices), then
    scaled by weight and shifted by bias (both or neither: TILE [1, 32, width], or [batch, 32, width] for an affine
    per batch element, or ROW_MAJOR [width / 32, 32]).

    >>> x = ttnn.from_torch(torch.tensor([1.0, 3.0]).repeat(1, 1, 32, 16), ttnn.bfloat16, layout=ttnn.TILE,
    ...                     device=device)
    >>> recip = ttnn.create_layer_norm_reciprocals(device, ttnn.CoreRangeSet({ttnn.CoreRange((0, 0), (7, 7))}), 32)
    >>> stats = ttnn.experimental.dit_layernorm_pre_allgather(x, recip)  # all_gather'd from every chip on a mesh
    >>> ttnn.experimental.dit_layernorm_post_allgather(x, stats, epsilon=0.0).to_torch()[0, 0, 0, :2].tolist()
    [-1.0, 1.0]
    """
    x = input_tensor
    checks = [(not x.is_sharded(), "!a.is_sharded()", "DIT layernorm post-all-gather does not support sharded inputs."),
              (x.layout == Layout.TILE, "a.layout() == Layout::TILE", f"Input tensor must have TILE layout, got: "
               f"{x.layout}"),
              (x.dtype in _FLOATS, "a.dtype() in (BFLOAT16, BFLOAT8_B, FLOAT32)", f"Input tensor must be BFLOAT16, "
               f"BFLOAT8_B, or FLOAT32, got: {x.dtype}"),
              (_on_device(x) and _on_device(stats), "storage_type() == StorageType::DEVICE", "Operands must be on "
               "device."),
              (stats.layout == Layout.TILE, "stats.layout() == Layout::TILE", f"Stats tensor must have TILE layout, "
               f"got: {stats.layout}"),
              (stats.dtype in _FLOATS, "stats.dtype() in (BFLOAT16, BFLOAT8_B, FLOAT32)", "Stats tensor must be BF16, "
               "BF8_B, or FLOAT32."),
              (stats.padded_shape[-1] % 64 == 0, "stats.padded_shape()[-1] % (2 * TILE_WIDTH) == 0",
               f"Stats inner dimension must be multiple of 64 (two tiles), got: {stats.padded_shape[-1]}"),
              (tuple(stats.padded_shape[:-1]) == tuple(x.padded_shape[:-1]), "stats.padded_shape()[i] == "
               "a.padded_shape()[i]", f"Stats {list(stats.shape)} and input {list(x.shape)} must match but for the "
               f"last dim"),
              ((weight is None) == (bias is None), "gamma.has_value() == beta.has_value()",
               "Beta must be provided when gamma is provided." if bias is None
               else "Beta must not be provided without gamma.")]
    if weight is not None and bias is not None:
        checks += _check_affine("Gamma", weight, x) + _check_affine("Beta", bias, x)
    _check(checks, op_name)
    ins = device_inputs(op_name, x, stats, weight, bias)
    n = _numerics(op_name, compute_kernel_config)

    def v(t):
        return values(t, op_name) if t is not None else None

    y = _post_golden(v(x), v(stats), epsilon=epsilon, weight=v(weight), bias=v(bias))
    out = output(y, x, ins, op_name=op_name, dtype=dtype, layout=Layout.TILE,
                 memory_config=memory_config if memory_config is not None else x.memory_config())
    device_work.launch_after(out, True, x, programs.post_program(x, stats, out.dtype, weight, bias,
                                                                 dest_tiles=n.dest_tiles,
                                                                 fp32_dest_acc_en=n.fp32_dest_acc_en))
    return out
