"""matmul, and linear built from the public matmul, add and activation ops.

linear calls the hooked functions (not their bodies), so a profiler sees matmul, add and
the activation as ops nested one level inside linear.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from device_sim.ops import eltwise
from device_sim.ops.common import broadcasts, check_tt_nn_only, device_inputs, output, values
from device_sim.registry import register_op
from device_sim.tensor import Tensor
from device_sim.types import DataType, MemoryConfig

_ACTIVATIONS = {"relu": (eltwise.relu, F.relu), "gelu": (eltwise.gelu, F.gelu), "silu": (eltwise.silu, F.silu)}


def _operands(a: torch.Tensor, b: torch.Tensor, transpose_a: bool, transpose_b: bool):
    return (a.transpose(-2, -1) if transpose_a else a), (b.transpose(-2, -1) if transpose_b else b)


def _activation(op_name: str, activation: str | None):
    if activation is not None and activation not in _ACTIVATIONS:
        raise ValueError(f"{op_name}: activation {activation!r} is not one of {sorted(_ACTIVATIONS)} or None")
    return _ACTIVATIONS[activation][1] if activation is not None else (lambda y: y)


def _matmul_golden(a, b, *_, transpose_a=False, transpose_b=False, activation=None, **__):
    out = torch.matmul(*_operands(a.float(), b.float(), transpose_a, transpose_b))
    return _activation("ttnn.matmul", activation)(out)


def _check_shapes(op_name: str, a: torch.Tensor, b: torch.Tensor) -> None:
    if a.dim() < 1 or b.dim() < 1 or a.shape[-1] != b.shape[-2 if b.dim() > 1 else -1]:
        raise ValueError(
            f"{op_name}: shapes {list(a.shape)} and {list(b.shape)} cannot be multiplied: the last dim of the "
            f"first ({a.shape[-1] if a.dim() else None}) must equal the second-to-last dim of the second "
            f"({b.shape[-2] if b.dim() > 1 else None}); transpose or reshape one of them"
        )
    if not broadcasts(a.shape[:-2], b.shape[:-2]):
        raise ValueError(f"{op_name}: shapes {list(a.shape)} and {list(b.shape)} have batch dims that do not broadcast")


@register_op("ttnn.matmul", golden=_matmul_golden)
def matmul(input_tensor_a: Tensor, input_tensor_b: Tensor, *, transpose_a: bool = False, transpose_b: bool = False,
           activation: str | None = None, memory_config: MemoryConfig | None = None,
           dtype: DataType | None = None, core_grid=None, program_config=None, **tt_nn_only) -> Tensor:
    """a @ b with torch's batch broadcasting, then the fused activation; the output dtype defaults to a's.

    core_grid, program_config and compute_kernel_config are accepted and have no effect here.
    """
    if tt_nn_only:
        check_tt_nn_only("ttnn.matmul", tt_nn_only)
    ins = device_inputs("ttnn.matmul", input_tensor_a, input_tensor_b)
    a, b = _operands(values(input_tensor_a, "ttnn.matmul").float(), values(input_tensor_b, "ttnn.matmul").float(),
                     transpose_a, transpose_b)
    _check_shapes("ttnn.matmul", a, b)
    act = _activation("ttnn.matmul", activation)
    return output(act(torch.matmul(a, b)), input_tensor_a, ins, op_name="ttnn.matmul", dtype=dtype,
                  memory_config=memory_config)


def _linear_golden(a, b, *_, bias=None, activation=None, transpose_a=False, transpose_b=False, **__):
    out = _matmul_golden(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    return _activation("ttnn.linear", activation)(out if bias is None else out + bias.float())


@register_op("ttnn.linear", golden=_linear_golden)
def linear(input_tensor_a: Tensor, input_tensor_b: Tensor, *, bias: Tensor | None = None,
           transpose_a: bool = False, transpose_b: bool = False, activation: str | None = None,
           memory_config: MemoryConfig | None = None, dtype: DataType | None = None, core_grid=None,
           program_config=None, **tt_nn_only) -> Tensor:
    """a @ b + bias, then the activation ("relu", "gelu", "silu" or None).

    b is [in, out] (ttnn.model_preprocessing.preprocess_linear_weight makes it from torch's
    [out, in]); bias is [1, out]. Steps before the last keep float32 so that, as in TT-NN's
    fused kernel, only the final output is rounded to `dtype`.
    """
    if tt_nn_only:
        check_tt_nn_only("ttnn.linear", tt_nn_only)
    _activation("ttnn.linear", activation)
    dtype = DataType(dtype) if dtype is not None else input_tensor_a.dtype
    final = activation or ("add" if bias is not None else "matmul")
    last = lambda step: dtype if step == final else DataType.FLOAT32  # noqa: E731
    out = matmul(input_tensor_a, input_tensor_b, transpose_a=transpose_a, transpose_b=transpose_b,
                 memory_config=memory_config, dtype=last("matmul"))
    if bias is not None:
        out = eltwise.add(out, bias, memory_config=memory_config, dtype=last("add"))
    if activation is not None:
        out = _ACTIVATIONS[activation][0](out, memory_config=memory_config, dtype=last(activation))
    return out
