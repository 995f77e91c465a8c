"""RMSNorm over a hidden dim split across chips: TT-NN's rms_norm_pre_all_gather / _post_all_gather.

    stats = ttnn.rms_norm_pre_all_gather(x)                      # each chip: sum(x^2) of its slice
    stats = ttnn.all_gather(stats, dim=3, cluster_axis=1)         # every chip: every slice's sum
    y = ttnn.rms_norm_post_all_gather(x, stats, epsilon=1e-5, weight=gamma_slice)

The stats tensor is one tile wide per chip, as TT-NN lays it out: [..., rows, 32] with the
slice's sum of squares in column 0 and zeros elsewhere. After the gather, column 32*k holds
chip k's sum; the post op adds them and divides by the full width (its slice x the chips).
"""

from __future__ import annotations

import torch

from device_sim import device_work
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, values
from device_sim.programs import distributed_norm as programs
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout, MemoryConfig

STATS_WIDTH = 32  # one tile column per chip


def _pre_golden(t, *_, residual_input_tensor=None, **__):
    x = t.float() if residual_input_tensor is None else t.float() + residual_input_tensor.float()
    stats = torch.zeros(*x.shape[:-1], STATS_WIDTH)
    stats[..., 0] = x.square().sum(-1)
    return stats


def _post_golden(t, stats, *_, epsilon=1e-12, weight=None, bias=None, **__):
    x = t.float()
    chips = _chips_in(stats.shape[-1], "ttnn.rms_norm_post_all_gather")
    total = stats.float()[..., ::STATS_WIDTH].sum(-1, keepdim=True)
    y = x * torch.rsqrt(total / (x.shape[-1] * chips) + epsilon)
    if weight is not None:
        y = y * weight.float().reshape(x.shape[-1])
    return y + bias.float().reshape(x.shape[-1]) if bias is not None else y


def _chips_in(width: int, op_name: str) -> int:
    if width % STATS_WIDTH:
        raise ValueError(f"{op_name}: stats last dim {width} is not a multiple of {STATS_WIDTH}; give the "
                         f"all-gathered output of ttnn.rms_norm_pre_all_gather")
    return width // STATS_WIDTH


@register_op("ttnn.rms_norm_pre_all_gather", kind="norm", golden=_pre_golden)
def rms_norm_pre_all_gather(input_tensor: Tensor, *, dtype: DataType = DataType.BFLOAT16,
                            residual_input_tensor: Tensor | None = None, memory_config: MemoryConfig | None = None,
                            use_2d_core_grid=None, fast_and_approximate_mode: bool = False,
                            op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """This chip's part of a distributed RMSNorm: the sum of squares of its slice of the last dim.

    >>> x = ttnn.from_torch(torch.full((1, 1, 32, 64), 2.0), ttnn.bfloat16, layout=ttnn.TILE,
    ...                      device=device)
    >>> stats = ttnn.rms_norm_pre_all_gather(x)  # this chip's sum of squares
    >>> stats.shape, stats.to_torch()[0, 0, 0, 0].item()
    (Shape([1, 1, 32, 32]), 256.0)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor, residual_input_tensor)
    r = values(residual_input_tensor, op_name) if residual_input_tensor is not None else None
    out = output(_pre_golden(values(input_tensor, op_name), residual_input_tensor=r), input_tensor, ins,
                 op_name=op_name, dtype=dtype, layout=Layout.TILE, memory_config=memory_config)
    if programs.supported(input_tensor):
        device_work.launch_after(out, True, input_tensor, programs.rms_pre_program(
            input_tensor, out.dtype, use_2d_core_grid=bool(use_2d_core_grid)))
    return out


@register_op("ttnn.rms_norm_post_all_gather", golden=_post_golden)
def rms_norm_post_all_gather(input_tensor: Tensor, stats: Tensor, *, epsilon: float = 1e-12,
                             weight: Tensor | None = None, bias: Tensor | None = None,
                             memory_config: MemoryConfig | None = None, dtype: DataType | None = None,
                             use_2d_core_grid=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The slice normalized by the RMS over every chip's slice (from the gathered stats).

    >>> x = ttnn.from_torch(torch.full((1, 1, 32, 64), 2.0), ttnn.bfloat16, layout=ttnn.TILE,
    ...                      device=device)
    >>> stats = ttnn.rms_norm_pre_all_gather(x)  # all_gather'd from every chip on a mesh
    >>> ttnn.rms_norm_post_all_gather(x, stats, epsilon=0.0).to_torch()[0, 0, 0, :2]
    tensor([1., 1.], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor, stats, weight, bias)
    if tuple(stats.shape[:-1]) != tuple(input_tensor.shape[:-1]):
        raise ValueError(f"{op_name}: stats {list(stats.shape)} and input {list(input_tensor.shape)} differ before "
                         f"the last dim; pass the gathered stats of this same input")
    v = lambda t: values(t, op_name) if t is not None else None  # noqa: E731
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.volume() != input_tensor.shape[-1]:
            raise ValueError(f"{op_name}: {name} has {t.volume()} values for a slice {input_tensor.shape[-1]} wide")
    y = _post_golden(v(input_tensor), v(stats), epsilon=epsilon, weight=v(weight), bias=v(bias))
    out = output(y, input_tensor, ins, op_name=op_name, dtype=dtype, memory_config=memory_config)
    if programs.supported(input_tensor):
        config = tt_nn_only.get("compute_kernel_config")
        device_work.launch_after(out, True, input_tensor, programs.rms_post_program(
            input_tensor, stats, out.dtype, weight=weight, bias=bias, use_2d_core_grid=bool(use_2d_core_grid),
            fp32_dest_acc_en=bool(getattr(config, "fp32_dest_acc_en", False))))
    return out
