"""TT-NN's moreh ops that models call: ttnn.moreh_norm, which Python code reaches as ttnn.operations.moreh.norm.

    import device_sim as ttnn
    norms = ttnn.operations.moreh.norm(features, p=2.0, dim=1, keepdim=True)  # one L2 norm per row
    unit = ttnn.divide(features, norms)

The norm is worked out in float32 (torch.linalg.vector_norm) and rounded once to the input's dtype.
"""

from __future__ import annotations

import math
import numbers

import torch

from device_sim import device_work
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, values
from device_sim.programs import moreh as moreh_programs
from device_sim.registry import register_op
from device_sim.tensor import Tensor
from device_sim.types import MemoryConfig


def _dims(dim, rank: int, op_name: str):
    if dim is None:
        return tuple(range(rank))
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    for d in dims:
        if not isinstance(d, numbers.Integral) or not -rank <= d < rank:
            raise ValueError(f"{op_name}: dim {dim!r} is not a dim (or list of dims) of a rank-{rank} tensor; "
                             f"give dims in [{-rank}, {rank - 1}] or None for all")
    return dims


def _golden(input, p, *_, dim=None, keepdim=False, **__):
    x = input.float()
    return torch.linalg.vector_norm(x, ord=float(p), dim=_dims(dim, x.dim(), "ttnn.moreh_norm"), keepdim=keepdim)


@register_op("ttnn.moreh_norm", golden=_golden)
def moreh_norm(input: Tensor, p: float, *, dim=None, keepdim: bool = False, memory_config: MemoryConfig | None = None,
               compute_kernel_config=None, **tt_nn_only) -> Tensor:
    """The p-norm of `input` over `dim` (an int, a list, or None for every dim), as torch.linalg.vector_norm.

    p is any float, math.inf included; `output=` writes into a given tensor (registry.OUTPUT_TENSOR_OPS).
    """
    op_name = "ttnn.moreh_norm"
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or math.isnan(p):
        raise TypeError(f"{op_name}: p must be a number (2.0 for the L2 norm), got {p!r}")
    ins = device_inputs(op_name, input)
    x = values(input, op_name).float()
    dims = _dims(dim, x.dim(), op_name)
    y = torch.linalg.vector_norm(x, ord=float(p), dim=dims, keepdim=keepdim)
    out = output(y, input, ins, op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, True, input, moreh_programs.moreh_norm_programs(
        input, float(p), dims, keepdim, fp32_dest_acc_en=bool(getattr(compute_kernel_config, "fp32_dest_acc_en",
                                                                      False))))
    return out


norm = moreh_norm  # ttnn.operations.moreh.norm, as TT-NN's Python names it
