"""Reductions over one dim, several, or all (dim=None); keepdim=False as TT-NN's default."""

from __future__ import annotations

import torch

from device_sim.ops.common import check_tt_nn_only, device_inputs, output, values
from device_sim.registry import register_op
from device_sim.tensor import Tensor
from device_sim.types import DataType, MemoryConfig


def _dims(dim):
    return tuple(int(d) for d in dim) if isinstance(dim, (list, tuple)) else dim


def _reduce(x: torch.Tensor, fn, dim, keepdim: bool, **kw) -> torch.Tensor:
    if dim is None:
        # torch's reductions take dim=None, but keepdim then needs every dim named.
        dim = tuple(range(x.dim()))
    return fn(x, dim=_dims(dim), keepdim=keepdim, **kw)


def _reduction(name: str, fn, *, result_dtype: DataType | None = None, **fn_kw):
    def golden(t, dim=None, keepdim=False, *_, correction=True, **__):
        kw = {"correction": int(correction)} if name in ("var", "std") else {}
        return _reduce(t.float(), fn, dim, keepdim, **kw, **fn_kw)

    def op(input_tensor: Tensor, dim=None, keepdim: bool = False, *, correction: bool = True,
           memory_config: MemoryConfig | None = None, **tt_nn_only) -> Tensor:
        op_name = f"ttnn.{name}"
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        ins = device_inputs(op_name, input_tensor)
        x = values(input_tensor, op_name).float()
        try:
            r = golden(x, dim, keepdim, correction=correction)
        except (IndexError, RuntimeError) as e:
            raise ValueError(f"{op_name}: cannot reduce shape {list(x.shape)} over dim {dim!r}: {e}") from None
        return output(r, input_tensor, ins, op_name=op_name, dtype=result_dtype, memory_config=memory_config)

    op.__doc__ = f"{name} over `dim` (None: every dim); var and std take TT-NN's correction=True (unbiased)."
    return register_op(f"ttnn.{name}", golden=golden)(op)


def _argmax(x, dim, keepdim):
    # torch.argmax reduces one dim or, with dim=None, the flattened tensor.
    if dim == tuple(range(x.dim())):
        r = torch.argmax(x)
        return r.reshape([1] * x.dim()) if keepdim else r
    if isinstance(dim, tuple):
        raise ValueError(f"ttnn.argmax reduces one dim (or all with dim=None), got {list(dim)}")
    return torch.argmax(x, dim=dim, keepdim=keepdim)


sum = _reduction("sum", torch.sum)  # noqa: A001
mean = _reduction("mean", torch.mean)
max = _reduction("max", torch.amax)  # noqa: A001
min = _reduction("min", torch.amin)  # noqa: A001
var = _reduction("var", torch.var)
std = _reduction("std", torch.std)
argmax = _reduction("argmax", _argmax, result_dtype=DataType.UINT32)
