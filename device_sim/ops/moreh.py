"""TT-NN's moreh ops that models call: ttnn.moreh_norm, which Python code reaches as ttnn.operations.moreh.norm.

    import device_sim as ttnn
    norms = ttnn.operations.moreh.norm(features, p=2.0, dim=1, keepdim=True)  # one L2 norm per row
    unit = ttnn.divide(features, norms)

The norm is worked out in float32 (torch.linalg.vector_norm) and rounded once to the input's dtype.
"""

from __future__ import annotations

import enum
import math
import numbers
from functools import partial

import torch

from device_sim import device_work, dtypes, numerics, placement
from device_sim.compute_config import MathFidelity, Numerics, resolve
from device_sim.ops import common
from device_sim.ops import moreh_group_norm as _group_norm
from device_sim.ops import moreh_nll_loss as _nll_loss
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, values
from device_sim.ops.reduction import cumsum as _ttnn_cumsum
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import creation as creation_programs
from device_sim.programs import moreh as moreh_programs
from device_sim.registry import OWN_NAME, pending_output_target, register_op
from device_sim.tensor import Tensor
from device_sim.types import DRAM_MEMORY_CONFIG, DataType, Layout, MemoryConfig


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
    return torch.linalg.vector_norm(x, ord=float(p), dim=_reduce_dims(dim, x.dim(), "ttnn.moreh_norm"),
                                    keepdim=keepdim)


@register_op("ttnn.moreh_norm", output_keyword="output", golden=_golden)
def moreh_norm(input: Tensor, p: float, *, dim=None, keepdim: bool = False, memory_config: MemoryConfig | None = None,
               compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The p-norm of `input` over `dim` (an int, a list, or None for every dim), as torch.linalg.vector_norm.

    p is any float, math.inf included; `output=` writes into a given tensor (register_op's output_keyword).

    >>> x = ttnn.from_torch(torch.tensor([[3.0, 4.0]]), layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_norm(x, 2.0, dim=1).to_torch()
    tensor([5.])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or math.isnan(p):
        raise TypeError(f"{op_name}: p must be a number (2.0 for the L2 norm), got {p!r}")
    ins = device_inputs(op_name, input)
    x = values(input, op_name).float()
    dims = _reduce_dims(dim, x.dim(), op_name)  # moreh_norm.cpp: an empty list is every dim, as None is
    y = torch.linalg.vector_norm(x, ord=float(p), dim=dims, keepdim=keepdim)
    out = output(y, input, ins, op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, True, input, moreh_programs.moreh_norm_programs(
        input, float(p), dims, keepdim, fp32_dest_acc_en=bool(getattr(compute_kernel_config, "fp32_dest_acc_en",
                                                                      False))))
    return out


norm = moreh_norm  # ttnn.operations.moreh.norm, as TT-NN's Python names it


def _moreh_norm_backward_golden(input, output, output_grad, p, *_, dim=None, **__):  # noqa: A002
    dims = _reduce_dims(dim, input.dim(), "ttnn.moreh_norm_backward")
    return _norm_grad(input.float(), output.float(), output_grad.float(), float(p), dims)


def _norm_grad(x: torch.Tensor, y: torch.Tensor, dy: torch.Tensor, p: float, dims: tuple) -> torch.Tensor:
    """moreh_norm_backward's kernel, (x^(p - 1) * y * dy) / y^p: dy * sign(x) |x|^(p-1) / y^(p-1), the norm y and
    its gradient dy broadcast back over the reduced dims."""
    y, dy = _unreduce(y, x.dim(), dims), _unreduce(dy, x.dim(), dims)
    return dy * torch.sign(x) * x.abs().pow(p - 1) / y.pow(p - 1)


@register_op("ttnn.moreh_norm_backward", kind="binary", output_keyword="input_grad", golden=_moreh_norm_backward_golden)
def moreh_norm_backward(input: Tensor, output: Tensor, output_grad: Tensor, p: float, *, dim=None,  # noqa: A002
                        keepdim: bool = False, memory_config: MemoryConfig | None = None, compute_kernel_config=None,
                        op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The gradient of moreh_norm's p-norm over `dim` at `input`, given its `output` and `output_grad` (either
    keepdim form, torch's or TT-NN's); `input_grad=` receives it (register_op's output_keyword).

    >>> x = ttnn.from_torch(torch.tensor([[3.0, 4.0]]), layout=ttnn.TILE, device=device)
    >>> y = ttnn.moreh_norm(x, 2.0, dim=1, keepdim=True)
    >>> g = ttnn.from_torch(torch.tensor([[1.0]]), layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_norm_backward(x, y, g, 2.0, dim=1, keepdim=True).to_torch()
    tensor([[0.6000, 0.8000]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or math.isnan(p):
        raise TypeError(f"{op_name}: p must be a number (2.0 for the L2 norm), got {p!r}")
    ins = device_inputs(op_name, input, output, output_grad)
    x = values(input, op_name).float()
    dims = _reduce_dims(dim, x.dim(), op_name)
    try:
        dx = _norm_grad(x, values(output, op_name).float(), values(output_grad, op_name).float(), float(p), dims)
    except RuntimeError:  # torch's broadcast: output or output_grad is not the norm's shape
        raise ValueError(f"{op_name}: output {list(output.shape)} and output_grad {list(output_grad.shape)} must be "
                         f"the norm of input {list(input.shape)} over dims {list(dims)} (keepdim={keepdim})") from None
    fresh = pending_output_target(op_name) is None
    # common.output: this op's `output` parameter (TT-NN's name for the norm) hides the helper
    out = common.output(dx, input, ins, op_name=op_name, memory_config=memory_config)
    fp32 = bool(getattr(compute_kernel_config, "fp32_dest_acc_en", False))
    device_work.launch_after(out, fresh, input, moreh_programs.moreh_norm_backward_program(out, fp32_dest_acc_en=fp32))
    return out


norm_backward = moreh_norm_backward  # ttnn.operations.moreh.norm_backward


# -- moreh_full, moreh_full_like: FullDeviceOperation writes the value on the device ---------------------------------

_FULL_DTYPES = (DataType.BFLOAT16, DataType.INT32, DataType.FLOAT32)  # FullDeviceOperation::validate_inputs


def _fill(shape, fill_value) -> torch.Tensor:
    # TT-NN takes a float or an int (std::variant<float, int>); an int fills an int32 tensor exactly
    if isinstance(fill_value, bool) or not isinstance(fill_value, numbers.Real):
        raise TypeError(f"fill_value must be a float or an int, got {fill_value!r}")
    return torch.full(tuple(shape), fill_value, dtype=torch.int64 if isinstance(fill_value, numbers.Integral)
                      else torch.float64)


def _full(op_name: str, shape, fill_value, device, dtype, layout, memory_config, inputs=()) -> Tensor:
    dtype, layout = DataType(dtype), Layout(layout)
    if dtype not in _FULL_DTYPES:
        raise tt_fatal("dtype == BFLOAT16 || dtype == INT32 || dtype == FLOAT32", f"Full: Unsupported data type "
                       f"{dtype!r}\n{op_name}: give dtype=ttnn.bfloat16, ttnn.int32 or ttnn.float32",
                       where="device_sim/ops/moreh.py")
    shape = [int(d) for d in shape]
    if len(shape) <= 1:
        raise tt_fatal("shape.size() > 1", f"Full operation error: Shape size must be greater than 1, but got shape "
                       f"size = {len(shape)}", where="device_sim/ops/moreh.py")
    for i, d in enumerate(shape):
        if d <= 0:
            raise tt_fatal("shape[i] > 0", f"Full operation error: Invalid shape at index {i}. Each dimension of the "
                           f"shape must be greater than 0, butgot shape[{i}] = {d}", where="device_sim/ops/moreh.py")
    cfg, source = placement.resolve(memory_config, list(inputs), op_name)
    out = Tensor._create(dtypes.to_device_values(_fill(shape, fill_value), dtype), dtype, layout, device, cfg, source)
    device_work.launch_after(out, True, out, creation_programs.full_program(out))
    return out


def _moreh_full_golden(shape, fill_value, *_, dtype=DataType.BFLOAT16, **__):
    return _fill(shape, fill_value).to(dtypes.TORCH_DTYPE[DataType(dtype)])


@register_op("ttnn.moreh_full", golden=_moreh_full_golden)
def moreh_full(shape, fill_value, device, *, dtype: DataType = DataType.BFLOAT16, layout: Layout = Layout.TILE,
               memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """A device tensor of `shape` (rank >= 2) holding `fill_value` (a float, or an int for exact int32 values),
    written by one FullDeviceOperation (TT-NN's full_nanobind.cpp; memory_config defaults to DRAM interleaved).

    >>> ttnn.moreh_full((2, 3), 4.0, device).to_torch()
    tensor([[4., 4., 4.],
            [4., 4., 4.]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if device is None:
        raise TypeError(f"{op_name}: give the device to allocate the tensor on")
    return _full(op_name, shape, fill_value, device, dtype, layout,
                 memory_config if memory_config is not None else DRAM_MEMORY_CONFIG)


def _moreh_full_like_golden(input, fill_value, dtype=None, *_, **__):
    out_dtype = dtypes.TORCH_DTYPE[DataType(dtype)] if dtype is not None else input.dtype
    return _fill(input.shape, fill_value).to(out_dtype)


@register_op("ttnn.moreh_full_like", golden=_moreh_full_like_golden)
def moreh_full_like(input: Tensor, fill_value, dtype: DataType | None = None, layout: Layout | None = None,
                    memory_config: MemoryConfig | None = None, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """A tensor of `input`'s shape holding `fill_value`, in `dtype`, `layout` and `memory_config` (each defaults to
    the input's), made by one FullDeviceOperation on the input's device (TT-NN's full_like.cpp).

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_full_like(x, 1.5).to_torch()
    tensor([[1.5000, 1.5000, 1.5000],
            [1.5000, 1.5000, 1.5000]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if not isinstance(input, Tensor) or input.device() is None:
        raise tt_fatal("input.storage_type() == StorageType::DEVICE", f"Full Like: Input must be on device\n"
                       f"{op_name}: move the input to a device first (ttnn.to_device)", where="device_sim/ops/moreh.py")
    ins = device_inputs(op_name, input)
    return _full(op_name, tuple(input.shape), fill_value, input.device(),
                 dtype if dtype is not None else input.dtype, layout if layout is not None else input.layout,
                 memory_config if memory_config is not None else input.memory_config(), ins)


# -- moreh arange, dot, cumsum (ttnn.operations.moreh.arange / dot / cumsum / cumsum_backward) ------------------

def _arange_values(start: float, step: float, n: int, dtype: DataType) -> torch.Tensor:
    """What moreh_arange's writer stores: start + step * i in float32; bfloat16 by dropping the low 16 bits (the
    kernel shifts, it does not round), int32 by C's truncation toward zero."""
    v = torch.tensor(start, dtype=torch.float32) + torch.tensor(step, dtype=torch.float32) * torch.arange(
        n, dtype=torch.float32)
    if dtype == DataType.BFLOAT16:
        return (v.view(torch.int32) & -65536).view(torch.float32)  # exact in bfloat16
    if dtype == DataType.INT32:
        return v.trunc()
    return v


def _moreh_arange_count(start, end, step) -> int:
    f = numbers.Real
    assert isinstance(start, f) and isinstance(end, f) and isinstance(step, f)
    s, e, st = (torch.tensor(float(v), dtype=torch.float32) for v in (start, end, step))
    return int(math.ceil(float((e - s) / st)))  # float32 arithmetic, as the device operation's attributes are


def _moreh_arange_golden(start=0, end=None, step=1, *_, untilize_out=False, dtype=DataType.BFLOAT16, **__):
    r = torch.arange(start, end, step).to(dtypes.TORCH_DTYPE[DataType(dtype)])
    return r if untilize_out else r.reshape(1, -1)  # [1, N] unless untilized, as the op's output


@register_op("ttnn.moreh_arange", output_keyword="output", golden=_moreh_arange_golden)
def moreh_arange(start: float = 0, end: float | None = None, step: float = 1, device=None, *,
                 untilize_out: bool = False, dtype: DataType = DataType.BFLOAT16,
                 memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """[start, end) by step, written by MorehArangeOperation: [1, N] TILE, or [N] ROW_MAJOR with untilize_out=True;
    `output=` (register_op's output_keyword) receives start + step * i for each of its last dim's positions.

    >>> ttnn.moreh_arange(0, 4, 1, device).to_torch()
    tensor([[0., 1., 2., 3.]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    where = "device_sim/ops/moreh.py"
    dtype = DataType(dtype)
    if step == 0:
        raise tt_fatal("step != 0", "step must be nonzero.", where)
    if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
        raise tt_fatal("((step > 0) && (end >= start)) || ((step < 0) && (end <= start))",
                       "Upper bound and larger bound inconsistent with step sign.", where)
    if dtype in (DataType.BFLOAT8_B, DataType.UINT32):
        raise tt_fatal(f"dtype != {dtype.name}", f"moreh arange not support {dtype.name.lower()} dtype.", where)
    target = pending_output_target(op_name)
    if target is not None:
        if target.dtype != dtype:
            raise tt_fatal("dtype == output->dtype()", "If output is provided as input, its dtype should match the "
                           "dtype parameter.", where)
        want = Layout.ROW_MAJOR if untilize_out else Layout.TILE
        if target.layout != want:
            raise tt_fatal(f"output_layout == Layout::{want.name}", f"Error: output_layout must be Layout::{want.name} "
                           f"when {'' if untilize_out else '!'}untilize_out", where)
        shape = tuple(target.shape)
    else:
        n = _moreh_arange_count(start, end, step)
        shape = (n,) if untilize_out else (1, n)
    n = shape[-1]
    value = _arange_values(float(start), float(step), n, dtype).reshape(
        *shape[:-1], n) if len(shape) > 1 else _arange_values(float(start), float(step), n, dtype)
    if target is not None:
        out = output(value.expand(shape).contiguous(), target, [target], op_name=op_name)
    else:
        cfg, source = placement.resolve(memory_config if memory_config is not None else DRAM_MEMORY_CONFIG, [],
                                        op_name)
        out = Tensor._create(dtypes.to_device_values(value, dtype), dtype,
                             Layout.ROW_MAJOR if untilize_out else Layout.TILE, device, cfg, source)
    device_work.launch_after(out, target is None, out, moreh_programs.moreh_arange_program(out))
    return out


def _moreh_dot_golden(input_tensor_a, input_tensor_b, *_, **__):
    return (input_tensor_a.float() * input_tensor_b.float()).sum(-1, keepdim=True)


@register_op("ttnn.moreh_dot", output_keyword="output", golden=_moreh_dot_golden)
def moreh_dot(input_tensor_a: Tensor, input_tensor_b: Tensor, *, dtype: DataType | None = None,
              memory_config: MemoryConfig | None = None, compute_kernel_config=None,
              op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The dot product of two [1, 1, 1, W] tensors, as [1, 1, 1, 1] (MorehDotOperation, one core); `output=` receives
    it (register_op's output_keyword).

    >>> a = ttnn.from_torch(torch.tensor([[[[1.0, 2.0, 3.0]]]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_dot(a, a).to_torch()
    tensor([[[[14.]]]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    where = "device_sim/ops/moreh.py"
    for t in (input_tensor_a, input_tensor_b):
        s = list(t.shape)
        if len(s) != 4 or s[:3] != [1, 1, 1]:
            raise tt_fatal("is_1d_tensor(input)", f"Invalid input tensor dimensions.\n{op_name}: give [1, 1, 1, W] "
                           f"tensors, got {s}", where)
    if input_tensor_a.shape[3] != input_tensor_b.shape[3]:
        raise tt_fatal("a_shape_wo_padding[3] == b_shape_wo_padding[3]", "Shape without padding must be the same.",
                       where)
    if input_tensor_a.dtype not in (DataType.BFLOAT16, DataType.BFLOAT8_B):
        raise tt_fatal("input_a.dtype() == BFLOAT16 || BFLOAT8_B", "Unsupported data format", where)
    ins = device_inputs(op_name, input_tensor_a, input_tensor_b)
    y = _moreh_dot_golden(values(input_tensor_a, op_name), values(input_tensor_b, op_name))
    fresh = pending_output_target(op_name) is None
    out = output(y, input_tensor_a, ins, op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, fresh, input_tensor_a, moreh_programs.moreh_dot_program(input_tensor_a))
    return out


def _moreh_cumsum_golden(input, dim, *_, **__):  # noqa: A002
    return torch.cumsum(input.float(), dim)


@register_op("ttnn.moreh_cumsum", golden=_moreh_cumsum_golden)
def moreh_cumsum(input: Tensor, dim: int, *, output: Tensor | None = None,  # noqa: A002
                 memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """TT-NN's moreh_cumsum.cpp: ttnn.cumsum(input, dim) in the input's dtype and memory config, into `output`
    when given (recorded nested).

    >>> x = ttnn.from_torch(torch.ones(1, 1, 2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_cumsum(x, 3).to_torch()
    tensor([[[[1., 2., 3.],
              [1., 2., 3.]]]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return _ttnn_cumsum(input, dim, dtype=input.dtype, reverse_order=False, out=output,
                  memory_config=memory_config if memory_config is not None else input.memory_config())


def _moreh_cumsum_backward_golden(output_grad, dim, *_, **__):
    return torch.cumsum(output_grad.float().flip(dim), dim).flip(dim)


@register_op("ttnn.moreh_cumsum_backward", golden=_moreh_cumsum_backward_golden)
def moreh_cumsum_backward(output_grad: Tensor, dim: int, *, input_grad: Tensor | None = None,
                          memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """TT-NN's moreh_cumsum.cpp: the gradient of a cumsum, ttnn.cumsum(output_grad, dim, reverse_order=True), into
    `input_grad` when given (recorded nested).

    >>> g = ttnn.from_torch(torch.ones(1, 1, 2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_cumsum_backward(g, 3).to_torch()
    tensor([[[[3., 2., 1.],
              [3., 2., 1.]]]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return _ttnn_cumsum(output_grad, dim, dtype=output_grad.dtype, reverse_order=True, out=input_grad,
                  memory_config=memory_config if memory_config is not None else output_grad.memory_config())


# -- moreh_sum, moreh_mean and their backwards: one device operation a dim (moreh_sum.cpp, moreh_mean.cpp) -----------

_WHERE = "device_sim/ops/moreh.py"


def _check_tensor(t: Tensor, op_name: str, name: str, dtypes_: tuple[DataType, ...]) -> None:
    """moreh_helper_functions.cpp's check_tensor: TILE, on the device, of one of `dtypes_`."""
    short = op_name.rsplit(".", 1)[-1]
    if t.layout != Layout.TILE:
        raise tt_fatal("tensor.layout() == layout", f"{short} {name} only supports TILE layout.", _WHERE)
    if t.device() is None:
        raise tt_fatal("tensor.storage_type() == StorageType::DEVICE", f"{short} {name} need to be on device!", _WHERE)
    if t.dtype not in dtypes_:
        names = ", ".join(d.name for d in dtypes_)
        raise tt_fatal("dtype_supported", f"{short} {name} only supports specific data types. [{names}]", _WHERE)


def _reduce_dims(dim, rank: int, op_name: str) -> tuple[int, ...]:
    """get_dim (moreh_helper_functions.cpp): an int, a list (empty: every dim) or None (every dim), sorted."""
    if dim is not None and not isinstance(dim, numbers.Integral) and len(dim) == 0:
        dim = None
    return tuple(sorted({d % rank for d in _dims(dim, rank, op_name)}))


def _engine(op_name: str, compute_kernel_config) -> Numerics | None:
    """The matrix engine's numerics for a moreh reduction given a compute_kernel_config (device_sim.numerics), None
    without one (exact float32 sums, device_sim's fast default): the prims' init_device_compute_kernel_config(arch,
    config, HiFi4) defaults, approx mode on, a bfloat16 destination."""
    if not numerics.emulating(compute_kernel_config):
        return None
    return resolve(op_name, compute_kernel_config, math_fidelity=MathFidelity.HiFi4, math_approx_mode=True,
                   fp32_dest_acc_en=False)


def _reduce(op_name: str, input: Tensor, dim, keepdim: bool, mean: bool, memory_config,  # noqa: A002
            compute_kernel_config) -> Tensor:
    """moreh_sum.cpp / moreh_mean.cpp: one device operation a dim, the largest first, each output in the input's
    dtype (so a bfloat16 result is rounded after each dim), the last one into `output=` when given."""
    _check_tensor(input, op_name, "input", (DataType.BFLOAT16,) if mean else (DataType.BFLOAT16, DataType.INT32))
    ins = device_inputs(op_name, input)
    x = values(input, op_name)
    integer = input.dtype == DataType.INT32
    n = _engine(op_name, compute_kernel_config)
    steps, shape = moreh_programs.reduce_steps(tuple(x.shape), _reduce_dims(dim, x.dim(), op_name), keepdim)
    for _, d in steps:  # each reduced dim kept as 1 here; the shape left is taken at the end
        if integer:
            x = x.to(torch.int64).sum(d, keepdim=True)
        elif n is not None:
            x = dtypes.to_device_values(numerics.reduce_sum(x.float(), (d,), True, n, mean=mean), input.dtype)
        else:
            x = dtypes.to_device_values(x.float().mean(d, keepdim=True) if mean else x.float().sum(d, keepdim=True),
                                        input.dtype)
    x = x.reshape(shape)
    target = pending_output_target(op_name)
    if target is not None and keepdim and len(target.shape) != x.dim() and math.prod(target.shape) == x.numel():
        # validate_output_with_keepdim compares the dims right-aligned: a keepdim output of another rank is taken
        # (moreh_matmul_backward's sum over a broadcast operand's batch dims writes into the operand's gradient)
        x = x.reshape(tuple(target.shape))
    fresh = target is None
    out = output(x, input, ins, op_name=op_name, memory_config=memory_config)
    fp32 = bool(getattr(compute_kernel_config, "fp32_dest_acc_en", False))
    programs = moreh_programs.moreh_reduce_programs(input, steps, mean=mean, fp32_dest_acc_en=fp32)
    if programs is not None:
        device_work.launch_after(out, fresh, input, programs)
    return out


def _moreh_sum_golden(input, dim=None, *_, keepdim=False, **__):  # noqa: A002
    return torch.sum(input.float(), _reduce_dims(dim, input.dim(), "ttnn.moreh_sum"), keepdim=keepdim)


@register_op("ttnn.moreh_sum", kind="rows", output_keyword="output", golden=_moreh_sum_golden)
def moreh_sum(input: Tensor, dim=None, *, keepdim: bool = False, memory_config: MemoryConfig | None = None,  # noqa: A002
              compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The sum of a TILE bfloat16 or int32 input over `dim` (an int, a list, or None / [] for every dim). Without
    keepdim a reduced dim is dropped unless it is one of the last two, which stay as 1 (TT-NN's shape, not
    torch's); `output=` receives it (register_op's output_keyword).

    >>> x = ttnn.from_torch(torch.ones(2, 3, 32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> y = ttnn.moreh_sum(x, [0, 3])
    >>> y.shape, y.to_torch()[0, 0, 0].item()
    (Shape([3, 32, 1]), 128.0)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return _reduce(op_name, input, dim, keepdim, False, memory_config, compute_kernel_config)


def _moreh_mean_golden(input, *_, dim=None, keepdim=False, **__):  # noqa: A002
    return torch.mean(input.float(), _reduce_dims(dim, input.dim(), "ttnn.moreh_mean"), keepdim=keepdim)


@register_op("ttnn.moreh_mean", kind="rows", output_keyword="output", golden=_moreh_mean_golden)
def moreh_mean(input: Tensor, *, dim=None, keepdim: bool = False, divisor=None,  # noqa: A002
               memory_config: MemoryConfig | None = None, compute_kernel_config=None, op_name: str = OWN_NAME,
               **tt_nn_only) -> Tensor:
    """The mean of a TILE bfloat16 input over `dim`, shaped as moreh_sum's; `divisor` is refused as TT-NN refuses
    it ("divisor not supported yet"); `output=` receives it.

    >>> x = ttnn.from_torch(torch.arange(64.0).reshape(1, 1, 2, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_mean(x, dim=3, keepdim=True).to_torch().flatten()
    tensor([15.5000, 47.5000], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if divisor is not None:
        raise tt_fatal("operation_attributes.divisor.has_value() == false", "divisor not supported yet.", _WHERE)
    return _reduce(op_name, input, dim, keepdim, True, memory_config, compute_kernel_config)


def _backward(op_name: str, output_grad: Tensor, shape: tuple, dims: tuple, keepdim: bool, scale: float,
              memory_config, *, mean: bool) -> Tensor:
    _check_tensor(output_grad, op_name, "output_grad", (DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.FLOAT32))
    ins = device_inputs(op_name, output_grad)
    try:
        y = _grad(values(output_grad, op_name), shape, dims, keepdim, scale)
    except RuntimeError:  # torch's expand: output_grad is not the reduction of `shape`
        raise tt_fatal("expected_output_grad_shape[i] >= output_grad_shape_wo_padding[i]",
                       f"{op_name}: output_grad {list(output_grad.shape)} is not the reduction of {list(shape)} over "
                       f"dims {list(dims)} (keepdim={keepdim})", _WHERE) from None
    fresh = pending_output_target(op_name) is None
    out = output(y, output_grad, ins, op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, fresh, output_grad, moreh_programs.moreh_reduce_backward_program(out, mean=mean))
    return out


def _moreh_sum_backward_golden(output_grad, *_, input=None, dim=None, keepdim=False, input_grad=None,  # noqa: A002
                               **__):
    shape = tuple((input if input is not None else input_grad).shape)
    dims = _reduce_dims(dim, len(shape), "ttnn.moreh_sum_backward")
    return _grad(output_grad, shape, dims, keepdim, 1.0)


def _unreduce(t: torch.Tensor, rank: int, dims: tuple) -> torch.Tensor:
    """A reduction's result over `dims` back at `rank` dims: the dims it dropped put back as ones (every one of
    `dims` in torch's keepdim=False form, the outer ones in TT-NN's, which keeps a reduced tile dim as 1)."""
    if t.dim() < rank:
        dropped = dims if rank - t.dim() == len(dims) else [d for d in dims if d < rank - 2]
        for d in sorted(dropped):
            t = t.unsqueeze(d)
    return t


def _grad(output_grad: torch.Tensor, shape: tuple, dims: tuple, keepdim: bool, scale: float) -> torch.Tensor:
    """output_grad times `scale`, broadcast over the reduced `dims` of `shape` (the input's), a dropped dim put
    back first."""
    return (_unreduce(output_grad.float(), len(shape), dims) * scale).expand(shape)


@register_op("ttnn.moreh_sum_backward", kind="binary", output_keyword="input_grad", golden=_moreh_sum_backward_golden)
def moreh_sum_backward(output_grad: Tensor, *, input: Tensor | None = None, dim=None,  # noqa: A002
                       keepdim: bool = False, memory_config: MemoryConfig | None = None, compute_kernel_config=None,
                       op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The gradient of moreh_sum: output_grad broadcast to the input's shape (`input`'s, or `input_grad`'s, which
    receives it when given).

    >>> g = ttnn.from_torch(torch.tensor([[[[1.0], [2.0]]]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> x = ttnn.from_torch(torch.zeros(1, 1, 2, 3), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_sum_backward(g, input=x, dim=3, keepdim=True).to_torch()
    tensor([[[[1., 1., 1.],
              [2., 2., 2.]]]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    target = pending_output_target(op_name)
    if input is None and target is None:
        raise tt_fatal("(input.has_value() || input_grad.has_value())", "either input or input_grad must have a value",
                       _WHERE)
    shape = tuple((input if input is not None else target).shape)
    if input is not None and target is not None and tuple(target.padded_shape) != tuple(input.padded_shape):
        raise tt_fatal("input_shape == input_grad_shape", "both shape between input and input_grad should be the same",
                       _WHERE)
    dims = _reduce_dims(dim, len(shape), op_name)
    return _backward(op_name, output_grad, shape, dims, keepdim, 1.0, memory_config, mean=False)


def _mean_backward_shape(op_name, output_grad, dim, keepdim, input_grad_shape, target) -> tuple[tuple, tuple]:
    """moreh_mean_backward.cpp: input_grad's rank is output_grad's plus the dims a keepdim=False mean dropped;
    its shape is input_grad_shape's or the given input_grad's."""
    rank = len(output_grad.shape)
    if not keepdim and dim is not None:
        rank += 1 if isinstance(dim, numbers.Integral) else len(dim)
    if target is not None:
        shape = tuple(target.shape)
    elif input_grad_shape is not None:
        shape = tuple(input_grad_shape)
    else:
        raise tt_fatal("input_grad.has_value() || input_grad_shape.has_value()",
                       f"{op_name}: give input_grad_shape= (the mean's input shape) or input_grad=", _WHERE)
    return shape, _reduce_dims(dim, rank, op_name)


def _moreh_mean_backward_golden(output_grad, *_, dim=None, keepdim=False, input_grad_shape=None, input_grad=None,
                                **__):
    shape, dims = _mean_backward_shape("ttnn.moreh_mean_backward", output_grad, dim, keepdim, input_grad_shape,
                                       input_grad)
    return _grad(output_grad, shape, dims, keepdim, 1.0 / math.prod(shape[d] for d in dims))


@register_op("ttnn.moreh_mean_backward", kind="binary", output_keyword="input_grad",
             golden=_moreh_mean_backward_golden)
def moreh_mean_backward(output_grad: Tensor, *, dim=None, keepdim: bool = False, input_grad_shape=None,
                        memory_config: MemoryConfig | None = None, compute_kernel_config=None,
                        op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The gradient of moreh_mean: output_grad over the count of the reduced elements, broadcast to
    `input_grad_shape` (or to `input_grad`'s shape, which receives it when given).

    >>> g = ttnn.from_torch(torch.tensor([[[[3.0], [6.0]]]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_mean_backward(g, dim=3, keepdim=True, input_grad_shape=[1, 1, 2, 3]).to_torch()
    tensor([[[[1., 1., 1.],
              [2., 2., 2.]]]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    shape, dims = _mean_backward_shape(op_name, output_grad, dim, keepdim, input_grad_shape,
                                       pending_output_target(op_name))
    scale = 1.0 / math.prod(shape[d] for d in dims)
    return _backward(op_name, output_grad, shape, dims, keepdim, scale, memory_config, mean=True)


# -- moreh_matmul, moreh_linear and their backwards (moreh_matmul.cpp, moreh_linear.cpp, ..._backward.cpp) -----------


def _is_dot(input: Tensor, other: Tensor, transpose_input: bool, transpose_other: bool) -> bool:  # noqa: A002
    """moreh_matmul.cpp's is_dot_forward: two equal [1, 1, 1, W] tensors, untransposed, go to moreh_dot."""
    a, b = list(input.shape), list(other.shape)
    return len(a) == 4 and a == b and a[:3] == [1, 1, 1] and not (transpose_input or transpose_other)


def _moreh_matmul_golden(input, other, *_, transpose_input=False, transpose_other=False, bias=None,  # noqa: A002
                         **__):
    a, b = input.float(), other.float()
    if a.dim() == 4 and a.shape == b.shape and a.shape[:3] == (1, 1, 1) and not (transpose_input or transpose_other):
        return _moreh_dot_golden(a, b)
    y = torch.matmul(a.transpose(-1, -2) if transpose_input else a, b.transpose(-1, -2) if transpose_other else b)
    return y if bias is None else y + bias.float()


@register_op("ttnn.moreh_matmul", kind="matmul", output_keyword="output", golden=_moreh_matmul_golden)
def moreh_matmul(input: Tensor, other: Tensor, *, transpose_input: bool = False,  # noqa: A002
                 transpose_other: bool = False, bias: Tensor | None = None, memory_config: MemoryConfig | None = None,
                 compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """input @ other (each transposed first when asked), torch's batch broadcasting, plus a [1, N] or [1, 1]
    bias; two equal [1, 1, 1, W] tensors are moreh_dot's (is_dot_forward). `output=` receives it. With a
    compute_kernel_config the matrix engine's numerics (device_sim.numerics: LoFi unless given, bfloat16
    destination unless fp32_dest_acc_en), else exact float32 products, rounded once.

    >>> a = ttnn.from_torch(torch.ones(2, 32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.ones(32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> y = ttnn.moreh_matmul(a, b, transpose_other=True)
    >>> y.shape, y.to_torch()[0, 0, 0].item()
    (Shape([2, 32, 32]), 64.0)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if _is_dot(input, other, transpose_input, transpose_other):
        return moreh_dot(input, other, dtype=input.dtype, memory_config=memory_config,
                         compute_kernel_config=compute_kernel_config)
    target = pending_output_target(op_name)
    for name, t in (("input", input), ("other", other), ("output", target), ("bias", bias)):
        if t is not None:
            _check_tensor(t, op_name, name, (DataType.BFLOAT16,))
    ins = device_inputs(op_name, input, other, bias)
    a, b = values(input, op_name).float(), values(other, op_name).float()
    a = a.transpose(-1, -2) if transpose_input else a
    b = b.transpose(-1, -2) if transpose_other else b
    if a.shape[-1] != b.shape[-2]:
        raise tt_fatal("input_k == other_k", f"k must be the same. input_k {a.shape[-1]}, other_k {b.shape[-2]}",
                       _WHERE)
    for i, (da, db) in enumerate(zip(reversed(a.shape[:-2]), reversed(b.shape[:-2]))):
        if da != db and 1 not in (da, db):
            raise tt_fatal("input_dim[i] == 1 || other_dim[i] == 1",
                           f"one of dim must be one. {i + 2}th dim input_dim {da}, other_dim {db}", _WHERE)
    if bias is not None and (len(bias.shape) != 2 or bias.shape[-1] not in (1, b.shape[-1])):
        raise tt_fatal("bias_rank == 2 && (bias_w == 1 || bias_w == other_n)",
                       f"bias must be [1, {b.shape[-1]}] or [1, 1] (tilized), got {list(bias.shape)}", _WHERE)
    config = None
    if numerics.emulating(compute_kernel_config):
        # the prim's init_device_compute_kernel_config(arch, config): LoFi, approx mode on, a bfloat16 destination
        config = resolve(op_name, compute_kernel_config, math_fidelity=MathFidelity.LoFi, math_approx_mode=True,
                         fp32_dest_acc_en=False)
    y = numerics.matmul(a, b, config) if config is not None else torch.matmul(a, b)
    if bias is not None:
        y = y + values(bias, op_name).float()
    fresh = target is None
    out = output(y, input, ins, op_name=op_name, memory_config=memory_config)
    fp32 = config is not None and config.fp32_dest_acc_en
    device_work.launch_after(out, fresh, input, moreh_programs.moreh_matmul_program(out, fp32_dest_acc_en=fp32))
    return out


def _moreh_linear_golden(input, weight, *_, bias=None, **__):  # noqa: A002
    return _moreh_matmul_golden(input, weight, transpose_other=True, bias=bias)


@register_op("ttnn.moreh_linear", kind="matmul", output_keyword="output", golden=_moreh_linear_golden)
def moreh_linear(input: Tensor, weight: Tensor, *, bias: Tensor | None = None,  # noqa: A002
                 memory_config: MemoryConfig | None = None, compute_kernel_config=None, op_name: str = OWN_NAME,
                 **tt_nn_only) -> Tensor:
    """input @ weight^T + bias (moreh_linear.cpp: moreh_matmul with transpose_other, recorded nested); `output=`
    receives it.

    >>> x = ttnn.from_torch(torch.ones(1, 32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> w = ttnn.from_torch(torch.ones(16, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> bias = ttnn.from_torch(torch.ones(1, 16), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_linear(x, w, bias=bias).to_torch()[0, 0, :2]
    tensor([65., 65.], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return moreh_matmul(input, weight, transpose_other=True, bias=bias, output=pending_output_target(op_name),
                        memory_config=memory_config, compute_kernel_config=compute_kernel_config)


def _batch_dims(shape, rank: int) -> list:
    """A shape's batch dims (all but the last two), right-aligned to `rank` dims with ones."""
    shape = list(shape)
    return [1] * (rank - len(shape)) + shape[:-2]


def _matmul_into(target: Tensor, a: Tensor, b: Tensor, transpose_a: bool, transpose_b: bool, memory_config,
                 compute_kernel_config) -> Tensor:
    """moreh_matmul_backward.cpp / moreh_linear_backward.cpp: a gradient with the product's batch dims is the
    product written into `target`; one with fewer (a broadcast operand's) is the product summed over the
    batch dims that differ (find_reduce_dim), keepdim, into `target`."""
    product_batch = [max(x, y) for x, y in zip(*(_batch_dims(t.shape, 8) for t in (a, b)))]
    if product_batch == _batch_dims(target.shape, 8):
        return moreh_matmul(a, b, transpose_input=transpose_a, transpose_other=transpose_b, output=target,
                            memory_config=memory_config, compute_kernel_config=compute_kernel_config)
    temp = moreh_matmul(a, b, transpose_input=transpose_a, transpose_other=transpose_b, memory_config=memory_config,
                        compute_kernel_config=compute_kernel_config)
    rank = len(temp.shape)
    dims = [i for i, (x, y) in enumerate(zip(_batch_dims(temp.shape, rank), _batch_dims(target.shape, rank)))
            if x != y]
    moreh_sum(temp, dims, keepdim=True, output=target, memory_config=memory_config,
              compute_kernel_config=compute_kernel_config)
    temp._free()  # the temporary goes out of scope in TT-NN's function, freeing its buffer
    return target


def _required(are_required_outputs, n: int, op_name: str) -> tuple:
    required = tuple(bool(r) for r in are_required_outputs)
    if len(required) != n:
        raise tt_fatal(f"are_required_outputs.size() == {n}", f"{op_name}: are_required_outputs size must be {n}",
                       _WHERE)
    return required


def _moreh_matmul_backward_golden(output_grad, input_a, input_b, *_, are_required_outputs=(True, True), **__):
    a, b = input_a.float().requires_grad_(), input_b.float().requires_grad_()
    torch.matmul(a, b).backward(output_grad.float())
    return [g if r else None for g, r in zip((a.grad, b.grad), are_required_outputs)]


@register_op("ttnn.moreh_matmul_backward", kind="matmul", golden=_moreh_matmul_backward_golden)
def moreh_matmul_backward(output_grad: Tensor, input_a: Tensor, input_b: Tensor, *,
                          are_required_outputs=(True, True), input_a_grad: Tensor | None = None,
                          input_b_grad: Tensor | None = None, memory_config: MemoryConfig | None = None,
                          compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> list:
    """The gradients of input_a @ input_b, written into input_a_grad and input_b_grad (TT-NN takes them given)
    as moreh_matmul_backward.cpp composes them: output_grad @ input_b^T and input_a^T @ output_grad (moreh_matmul,
    recorded nested), summed over a broadcast operand's batch dims (moreh_sum). Returns [input_a_grad,
    input_b_grad], None where not required.

    >>> g = ttnn.from_torch(torch.ones(32, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> a = ttnn.from_torch(torch.ones(32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.ones(64, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ga, gb = ttnn.zeros_like(a), ttnn.zeros_like(b)
    >>> ttnn.moreh_matmul_backward(g, a, b, input_a_grad=ga, input_b_grad=gb)[1].to_torch()[0, :2]
    tensor([32., 32.], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if list(output_grad.shape) == [1, 1, 1, 1] and _is_dot(input_a, input_b, False, False):  # is_dot_backward
        return moreh_dot_backward(output_grad, input_a, input_b, input_grad=input_a_grad, other_grad=input_b_grad,
                                  memory_config=memory_config)
    required = _required(are_required_outputs, 2, op_name)
    outputs = [None, None]
    for i, (grad, name) in enumerate(((input_a_grad, "Input"), (input_b_grad, "Other"))):
        if required[i] and grad is None:
            raise tt_fatal(f"{name.lower()}_grad.has_value()",
                           f"{name} gradient is marked required but not provided.", _WHERE)
    if required[0]:
        outputs[0] = _matmul_into(input_a_grad, output_grad, input_b, False, True, memory_config,
                                  compute_kernel_config)
    if required[1]:
        outputs[1] = _matmul_into(input_b_grad, input_a, output_grad, True, False, memory_config,
                                  compute_kernel_config)
    return outputs


def _moreh_linear_backward_golden(output_grad, input, weight, *_, are_required_outputs=(True, True, True),  # noqa: A002
                                  bias=None, bias_grad=None, **__):
    x, w = input.float().requires_grad_(), weight.float().requires_grad_()
    torch.nn.functional.linear(x, w).backward(output_grad.float())
    g = output_grad.float()
    shape = bias_grad.shape if bias_grad is not None else bias.shape if bias is not None else (1, g.shape[-1])
    b = g.sum() if shape[-1] == 1 else g.reshape(-1, g.shape[-1]).sum(0)
    return [v if r else None for v, r in zip((x.grad, w.grad, b.reshape(shape)), are_required_outputs)]


def _bias_add_backward(g: torch.Tensor, scalar: bool, bf16_acc: bool) -> torch.Tensor:
    """MorehBiasAddBackwardOperation's kernels (moreh_bias_backward_{single_core_hw,multi_core_h}.cpp): each tile
    of output_grad reduced whole (a scalar bias) or over its rows (a [1, N] one), and added into the running sum
    in c_25, which holds bfloat16 without fp32_dest_acc_en: the sum rounds once a tile, batch and tile rows
    in order. Exact float32 sums when `bf16_acc` is off."""
    g = g.reshape(-1, *g.shape[-2:]) if g.dim() >= 2 else g.reshape(1, 1, -1)
    if not bf16_acc:
        return g.sum() if scalar else g.sum((0, 1))
    B, H, W = g.shape
    g = torch.nn.functional.pad(g, (0, -W % 32, 0, -H % 32))  # the masks zero the padding
    tiles = g.reshape(B, g.shape[1] // 32, 32, g.shape[2] // 32, 32)
    # scalar: each tile's sum, in b, ht, wt order; else each row of tiles' column sums, in b, ht order
    parts = tiles.sum((2, 4)).reshape(-1) if scalar else tiles.sum(2).reshape(-1, tiles.shape[3] * 32)
    acc = None
    for p in parts:
        acc = numerics.to_bf16(p if acc is None else acc + p)
    return acc[..., :W] if not scalar else acc


@register_op("ttnn.moreh_linear_backward", kind="matmul", golden=_moreh_linear_backward_golden)
def moreh_linear_backward(output_grad: Tensor, input: Tensor, weight: Tensor, *,  # noqa: A002
                          are_required_outputs=(True, True, True), bias: Tensor | None = None,
                          input_grad: Tensor | None = None, weight_grad: Tensor | None = None,
                          bias_grad: Tensor | None = None, input_grad_memory_config: MemoryConfig | None = None,
                          weight_grad_memory_config: MemoryConfig | None = None,
                          bias_grad_memory_config: MemoryConfig | None = None, compute_kernel_config=None,
                          op_name: str = OWN_NAME, **tt_nn_only) -> list:
    """The gradients of moreh_linear, written into the given input_grad, weight_grad and bias_grad, as
    moreh_linear_backward.cpp composes them: output_grad @ weight and output_grad^T @ input (moreh_matmul, summed
    over batch dims weight does not have), and MorehBiasAddBackwardOperation's sum of output_grad into a [1, N]
    bias_grad (all but the last dim) or a [1, 1] one (everything). Returns [input_grad, weight_grad, bias_grad],
    None where not required.

    >>> g = ttnn.from_torch(torch.ones(2, 32, 16), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> x = ttnn.from_torch(torch.ones(2, 32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> w = ttnn.from_torch(torch.ones(16, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> gb = ttnn.from_torch(torch.zeros(1, 16), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> grads = ttnn.moreh_linear_backward(g, x, w, are_required_outputs=(False, False, True), bias_grad=gb)
    >>> grads[2].to_torch()[0, :2]
    tensor([64., 64.], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    required = _required(are_required_outputs, 3, op_name)
    for t in (output_grad, input, weight):
        if t.device() is None:
            raise tt_fatal("storage_type() == StorageType::DEVICE", "input and weight tensors need to be on device",
                           _WHERE)
    for given, like, name in ((input_grad, input, "input_grad"), (weight_grad, weight, "weight_grad")):
        if given is not None and tuple(given.shape) != tuple(like.shape):
            raise tt_fatal("is_same_shape", f"both tensors should be the same shape: {name} {list(given.shape)}, "
                           f"expected {list(like.shape)}", _WHERE)
    if bias_grad is not None and (len(bias_grad.shape) != 2 or bias_grad.shape[-2] != 1):
        raise tt_fatal("is_scalar(bias_grad_tensor) || is_1d_tensor(bias_grad_tensor)",
                       "bias_grad tensor should be 1d or scalar", _WHERE)
    outputs = [None, None, None]
    for i, (grad, name) in enumerate(((input_grad, "input_grad"), (weight_grad, "weight_grad"),
                                      (bias_grad, "bias_grad"))):
        if required[i] and grad is None:
            raise tt_fatal(f"{name}.has_value()", f"{name} tensor should not be std::nullopt", _WHERE)
    if required[0]:
        outputs[0] = moreh_matmul(output_grad, weight, output=input_grad, memory_config=input_grad_memory_config,
                                  compute_kernel_config=compute_kernel_config)
    if required[1]:
        outputs[1] = _matmul_into(weight_grad, output_grad, input, True, False, weight_grad_memory_config,
                                  compute_kernel_config)
    if required[2]:
        n = _engine(op_name, compute_kernel_config)  # moreh_linear_backward.cpp's default: HiFi4, approx on
        b = _bias_add_backward(values(output_grad, op_name).float(), bias_grad.shape[-1] == 1,
                               n is not None and not n.fp32_dest_acc_en)
        bias_grad._write(b.reshape(tuple(bias_grad.shape)))
        fp32 = n is not None and n.fp32_dest_acc_en
        device_work.launch_after(bias_grad, False, output_grad, moreh_programs.moreh_bias_add_backward_program(
            output_grad, bias_grad, fp32_dest_acc_en=fp32))
        outputs[2] = bias_grad
    return outputs


def _moreh_bmm_golden(input, mat2, *_, **__):  # noqa: A002
    return torch.bmm(input.float(), mat2.float())


@register_op("ttnn.moreh_bmm", kind="matmul", output_keyword="output", golden=_moreh_bmm_golden)
def moreh_bmm(input: Tensor, mat2: Tensor, *, memory_config: MemoryConfig | None = None,  # noqa: A002
              compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """input @ mat2 of two [B, M, K] / [B, K, N] tensors (moreh_bmm.cpp: moreh_matmul, recorded nested); `output=`
    receives it.

    >>> a = ttnn.from_torch(torch.ones(2, 32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_bmm(a, ttnn.from_torch(torch.ones(2, 64, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)).shape
    Shape([2, 32, 32])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return moreh_matmul(input, mat2, output=pending_output_target(op_name), memory_config=memory_config,
                        compute_kernel_config=compute_kernel_config)


def _moreh_bmm_backward_golden(output_grad, input, mat2, *_, are_required_outputs=(True, True), **__):  # noqa: A002
    return _moreh_matmul_backward_golden(output_grad, input, mat2, are_required_outputs=are_required_outputs)


@register_op("ttnn.moreh_bmm_backward", kind="matmul", golden=_moreh_bmm_backward_golden)
def moreh_bmm_backward(output_grad: Tensor, input: Tensor, mat2: Tensor, *,  # noqa: A002
                       are_required_outputs=(True, True), input_grad: Tensor | None = None,
                       mat2_grad: Tensor | None = None, input_grad_memory_config: MemoryConfig | None = None,
                       mat2_grad_memory_config: MemoryConfig | None = None, compute_kernel_config=None,
                       op_name: str = OWN_NAME, **tt_nn_only) -> list:
    """The gradients of moreh_bmm, written into the given input_grad and mat2_grad as moreh_bmm_backward.cpp
    composes them: output_grad @ mat2^T and input^T @ output_grad (moreh_matmul, recorded nested). Returns
    [input_grad, mat2_grad], None where not required.

    >>> g = ttnn.from_torch(torch.ones(2, 32, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> a = ttnn.from_torch(torch.ones(2, 32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.ones(2, 64, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_bmm_backward(g, a, b, are_required_outputs=(True, False), input_grad=ttnn.zeros_like(a))[0].shape
    Shape([2, 32, 64])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    required = _required(are_required_outputs, 2, op_name)
    outputs = [None, None]
    for i, (grad, name) in enumerate(((input_grad, "input_grad"), (mat2_grad, "mat2_grad"))):
        if required[i] and grad is None:
            raise tt_fatal(f"{name}.has_value()", f"{name} needs to have a value when "
                           f"{name.removesuffix('_grad')}_requires_grad is True.", _WHERE)
    if required[0]:
        outputs[0] = moreh_matmul(output_grad, mat2, transpose_other=True, output=input_grad,
                                  memory_config=input_grad_memory_config, compute_kernel_config=compute_kernel_config)
    if required[1]:
        outputs[1] = moreh_matmul(input, output_grad, transpose_input=True, output=mat2_grad,
                                  memory_config=mat2_grad_memory_config, compute_kernel_config=compute_kernel_config)
    return outputs


def _moreh_dot_backward_golden(output_grad, input, other, *_, input_grad=None, other_grad=None, **__):  # noqa: A002
    g = output_grad.float().reshape(())
    return [None if input_grad is None else g * other.float(), None if other_grad is None else g * input.float()]


@register_op("ttnn.moreh_dot_backward", kind="binary", golden=_moreh_dot_backward_golden)
def moreh_dot_backward(output_grad: Tensor, input: Tensor, other: Tensor, *,  # noqa: A002
                       input_grad: Tensor | None = None, other_grad: Tensor | None = None,
                       memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> list:
    """The gradients of moreh_dot: output_grad (a [1, 1, 1, 1] scalar) times other into input_grad and times input
    into other_grad, each when given (MorehDotBackwardOperation, on core (0, 0)). Returns [input_grad,
    other_grad].

    >>> g = ttnn.from_torch(torch.full((1, 1, 1, 1), 2.0), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> a = ttnn.from_torch(torch.tensor([[[[1.0, 2.0]]]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_dot_backward(g, a, a, input_grad=ttnn.zeros_like(a))[0].to_torch()
    tensor([[[[2., 4.]]]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if list(output_grad.shape) != [1, 1, 1, 1]:
        raise tt_fatal("is_scalar(output_grad)", f"Invalid value type\n{op_name}: output_grad must be [1, 1, 1, 1], "
                       f"got {list(output_grad.shape)}", _WHERE)
    for t in (input, other):
        if len(t.shape) != 4 or list(t.shape[:3]) != [1, 1, 1]:
            raise tt_fatal("is_1d_tensor(input)", f"Invalid input tensor dimensions.\n{op_name}: give [1, 1, 1, W] "
                           f"tensors, got {list(t.shape)}", _WHERE)
    if list(input.shape) != list(other.shape):
        raise tt_fatal("is_same_shape(input, other)", "Tensor A and B should have the same shape.", _WHERE)
    for grad, like in ((input_grad, input), (other_grad, other)):
        if grad is not None and list(grad.shape) != list(like.shape):
            raise tt_fatal("tensor_shape == grad_tensor_shape", "Tensor shape and grad tensor shape should be the "
                           "same.", _WHERE)
    device_inputs(op_name, output_grad, input, other)
    g = values(output_grad, op_name).float().reshape(())
    for grad, v in ((input_grad, other), (other_grad, input)):
        if grad is not None:
            grad._write(g * values(v, op_name).float())
    written = next((t for t in (input_grad, other_grad) if t is not None), None)
    if written is not None:
        device_work.launch_after(written, False, output_grad, moreh_programs.moreh_dot_backward_program(output_grad))
    return [input_grad, other_grad]


# -- moreh_getitem: advanced indexing by int32 index tensors over consecutive dims ------------------------------------


def _getitem(x: torch.Tensor, indices: list, dims: list) -> torch.Tensor:
    """x indexed by 1-D `indices` over the consecutive `dims` (negative indices from the end, as torch's x[:, idx]):
    the indexed dims become one dim of the indices' length where the first was."""
    return x[(slice(None),) * dims[0] + tuple(i.reshape(-1).long() for i in indices)]


def _moreh_getitem_golden(input, index_tensors, index_dims, *_, **__):  # noqa: A002
    return _getitem(input, list(index_tensors), [int(d) for d in index_dims])


@register_op("ttnn.moreh_getitem", kind="move", output_keyword="output", golden=_moreh_getitem_golden)
def moreh_getitem(input: Tensor, index_tensors, index_dims, *,  # noqa: A002
                  memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """input[..., idx_0, idx_1, ...] for int32 index tensors over consecutive `index_dims` (MorehGetItemOperation).
    A ROW_MAJOR input gives torch's shape (the indexed dims become one of the indices' length); a TILE input
    keeps its rank, the indexed dims 1 but the last, which takes the indices' length (compute_output_specs).
    `output=` receives it.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), ttnn.bfloat16, device=device)
    >>> i = ttnn.from_torch(torch.tensor([2, -3]), ttnn.int32, device=device)
    >>> ttnn.moreh_getitem(x, [i], [1]).to_torch()
    tensor([[2., 0.],
            [5., 3.]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    indices, dims = list(index_tensors), [int(d) for d in index_dims]
    where = "ttnn/cpp/ttnn/operations/moreh/moreh_getitem/device/moreh_getitem_device_operation.cpp"
    if input.dtype not in (DataType.INT32, DataType.BFLOAT16):
        raise tt_fatal("dtype == DataType::INT32 || dtype == DataType::BFLOAT16",
                       "Input tensor must be of type INT32 or BFLOAT16!", where)
    if not indices or len(indices) != len(dims):
        raise ValueError(f"{op_name}: give one index tensor for each of index_dims {dims}, got {len(indices)}")
    size = indices[0].shape[-1]
    for idx in indices:
        if idx.dtype != DataType.INT32:
            raise tt_fatal("index_tensor.dtype() == DataType::INT32", "Index tensor must be of type INT32!", where)
        if idx.layout == Layout.ROW_MAJOR and len(idx.shape) != 1:
            raise tt_fatal("index_shape.rank() == 1", "Index tensor must be 1D for ROW_MAJOR layout!", where)
        if input.layout == Layout.ROW_MAJOR and idx.layout == Layout.TILE:
            raise tt_fatal("!(input_layout == Layout::ROW_MAJOR && index_layout == Layout::TILE)",
                           "input layout ROW_MAJOR and index layout TILE not supported", where)
        if idx.shape[-1] != size:
            raise tt_fatal("index_size == index_shape[-1]", "The shapes of all index tensors must be identical!",
                           where)
    if input.layout == Layout.ROW_MAJOR and 4 in dims:
        raise tt_fatal("dim != 4", "getitem for ROW_MAJOR layout not support W index tensor!", where)
    if dims != list(range(dims[0], dims[0] + len(dims))):
        raise tt_fatal("dim_start + i == dim", f"The value of index_dims={dims} must be consecutive integers.", where)
    ins = device_inputs(op_name, input, *indices)
    x = values(input, op_name)
    try:
        y = _getitem(x, [values(i, op_name) for i in indices], dims)
    except IndexError as e:  # an index past its dim: torch's own words name it
        raise ValueError(f"{op_name}: {e}") from None
    if input.layout == Layout.TILE:  # the indexed dims kept as ones, the last one the indices' length
        shape = list(x.shape)
        for d in dims:
            shape[d] = 1
        shape[dims[-1]] = size
        y = y.reshape(shape)
    fresh = pending_output_target(op_name) is None
    out = output(y, input, ins, op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, fresh, input, moreh_programs.moreh_getitem_program(input, out, dims,
                                                                                     indices[0].layout))
    return out


# -- moreh_sgd: one SGD step, torch.optim.SGD's update --------------------------------------------------------------


def _sgd(param, grad, buf, lr, momentum, dampening, weight_decay, nesterov, rounded) -> tuple:
    """moreh_sgd.cpp's kernel on float32 values (torch.optim.SGD's update): grad plus weight_decay * param; with
    momentum, the buffer momentum * buf + (1 - dampening) * grad (grad itself on the first step, no buffer), and
    the step along grad + momentum * buffer (nesterov) or the buffer. `rounded` is each intermediate's CB format
    (bfloat16 without fp32_dest_acc_en), the scalars included."""
    r = rounded
    lr, momentum, dampening, weight_decay = (r(torch.tensor(float(v))) for v in (lr, momentum, dampening,
                                                                                 weight_decay))
    g = r(grad + r(param * weight_decay)) if weight_decay != 0 else grad
    new_buf = None
    if momentum != 0:
        new_buf = g if buf is None else r(r(g * r(1 - dampening)) + r(buf * momentum))
        g = r(g + r(new_buf * momentum)) if nesterov else new_buf
    return param - r(lr * g), new_buf


def _moreh_sgd_golden(param_in, grad, momentum_buffer_in=None, param_out=None, momentum_buffer_out=None, lr=1e-3,
                      momentum=0, dampening=0, weight_decay=0, nesterov=False, *_, momentum_initialized=False, **__):
    buf = momentum_buffer_in.float() if momentum_initialized and momentum_buffer_in is not None else None
    return list(_sgd(param_in.float(), grad.float(), buf, lr, momentum, dampening, weight_decay, nesterov,
                     lambda v: v))


@register_op("ttnn.moreh_sgd", kind="binary", golden=_moreh_sgd_golden)
def moreh_sgd(param_in: Tensor, grad: Tensor, momentum_buffer_in: Tensor | None = None, param_out: Tensor | None = None,
              momentum_buffer_out: Tensor | None = None, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
              weight_decay: float = 0, nesterov: bool = False, *, momentum_initialized: bool,
              param_out_memory_config: MemoryConfig | None = None,
              momentum_buffer_out_memory_config: MemoryConfig | None = None, compute_kernel_config=None,
              op_name: str = OWN_NAME, **tt_nn_only) -> list:
    """One SGD step of a TILE bfloat16 parameter (MorehSgdOperation, torch.optim.SGD's update), into param_out and
    momentum_buffer_out when given, else new tensors; the momentum buffer is read only when momentum_initialized.
    Returns [param_out, momentum_buffer_out], the buffer None without momentum.

    >>> p = ttnn.from_torch(torch.ones(32, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> g = ttnn.from_torch(torch.full((32, 32), 2.0), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_sgd(p, g, lr=0.25, momentum_initialized=False)[0].to_torch()[0, :2]
    tensor([0.5000, 0.5000], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    for name, t in (("param_in", param_in), ("grad", grad), ("momentum_buffer_in", momentum_buffer_in),
                    ("param_out", param_out), ("momentum_buffer_out", momentum_buffer_out)):
        if t is not None:
            _check_tensor(t, op_name, name, (DataType.BFLOAT16,))
    ins = device_inputs(op_name, param_in, grad, momentum_buffer_in)
    n = _engine(op_name, compute_kernel_config)
    rounded = numerics.to_bf16 if n is None or not n.fp32_dest_acc_en else (lambda v: v)
    buf = values(momentum_buffer_in, op_name).float() if momentum_initialized and momentum != 0 else None
    new_param, new_buf = _sgd(values(param_in, op_name).float(), values(grad, op_name).float(), buf, lr, momentum,
                              dampening, weight_decay, nesterov, rounded)
    outs = []
    for given, value, cfg in ((param_out, new_param, param_out_memory_config),
                              (momentum_buffer_out, new_buf, momentum_buffer_out_memory_config)):
        if value is None:
            outs.append(given)  # no momentum: a given buffer is left as it is, none is made
        elif given is not None:
            given._write(value)
            outs.append(given)
        else:
            outs.append(output(value, param_in, ins, op_name=op_name, memory_config=cfg or param_in.memory_config()))
    fp32 = n is not None and n.fp32_dest_acc_en
    device_work.launch_after(outs[0], param_out is None, param_in, moreh_programs.moreh_sgd_program(
        param_in, fp32_dest_acc_en=fp32))
    return outs if new_buf is not None else [outs[0], None]


# -- moreh_adam, moreh_adamw: one Adam / AdamW step, torch.optim's update --------------------------------------------


def _adam(param, grad, m, v, vmax, *, lr, beta1, beta2, eps, weight_decay, step, decoupled, rounded) -> tuple:
    """moreh_adam.cpp's / moreh_adamw.cpp's update on float32 values (torch.optim.Adam / AdamW): the weight decay
    added to the gradient (Adam) or taken off the parameter (AdamW), the moving averages, amsgrad's running max
    when vmax is given, and the bias-corrected step. `rounded` is each intermediate tile's CB format (bfloat16
    without fp32_dest_acc_en); the scalars stay exact (the reader fills their tiles in a form not modelled, and
    rounding beta2 = 0.999 to bfloat16 first would make 1 - beta2 = 0)."""
    r = rounded
    if decoupled:
        param = r(param * (1 - lr * weight_decay))
    elif weight_decay != 0:
        grad = r(grad + r(param * weight_decay))
    m = r(r(m * beta1) + r(grad * (1 - beta1)))
    v = r(r(v * beta2) + r(r(grad * grad) * (1 - beta2)))
    vmax = None if vmax is None else torch.maximum(vmax, v)
    denom = r(r(torch.sqrt(v if vmax is None else vmax)) / math.sqrt(1 - beta2 ** step) + eps)
    return param - r(r(m / denom) * (lr / (1 - beta1 ** step))), m, v, vmax


def _adam_op(op_name, param_in, grad, exp_avg_in, exp_avg_sq_in, max_exp_avg_sq_in, outs_given, memory_config,
             compute_kernel_config, *, decoupled, amsgrad, **hyper) -> list:
    for name, t in (("param_in", param_in), ("grad", grad), ("exp_avg_in", exp_avg_in),
                    ("exp_avg_sq_in", exp_avg_sq_in)):
        _check_tensor(t, op_name, name, (DataType.BFLOAT16, DataType.BFLOAT8_B))
    if amsgrad and max_exp_avg_sq_in is None:
        raise tt_fatal("max_exp_avg_sq_in.has_value()", f"{op_name}: amsgrad needs max_exp_avg_sq_in", _WHERE)
    ins = device_inputs(op_name, param_in, grad, exp_avg_in, exp_avg_sq_in,
                        *([max_exp_avg_sq_in] if amsgrad else []))
    n = _engine(op_name, compute_kernel_config)
    rounded = numerics.to_bf16 if n is None or not n.fp32_dest_acc_en else (lambda x: x)
    f = [None if t is None else values(t, op_name).float()
         for t in (param_in, grad, exp_avg_in, exp_avg_sq_in, max_exp_avg_sq_in if amsgrad else None)]
    results = _adam(*f, decoupled=decoupled, rounded=rounded, **hyper)
    outs = []
    for given, value in zip(outs_given, results):
        if value is None:
            outs.append(None)
        elif given is not None:
            given._write(value)
            outs.append(given)
        else:
            outs.append(output(value, param_in, ins, op_name=op_name, memory_config=memory_config))
    fp32 = n is not None and n.fp32_dest_acc_en
    device_work.launch_after(outs[0], outs_given[0] is None, param_in, moreh_programs.moreh_adam_program(
        param_in, amsgrad, decoupled=decoupled, fp32_dest_acc_en=fp32))
    return outs


def _moreh_adam_golden(param_in, grad, exp_avg_in, exp_avg_sq_in, *_, lr=0.001, beta1=0.9, beta2=0.999, eps=1e-8,
                       weight_decay=0.0, step=0, amsgrad=False, max_exp_avg_sq_in=None, **__):
    return list(_adam(param_in.float(), grad.float(), exp_avg_in.float(), exp_avg_sq_in.float(),
                      max_exp_avg_sq_in.float() if amsgrad else None, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                      weight_decay=weight_decay, step=step, decoupled=False, rounded=lambda x: x))


@register_op("ttnn.moreh_adam", kind="binary", golden=_moreh_adam_golden)
def moreh_adam(param_in: Tensor, grad: Tensor, exp_avg_in: Tensor, exp_avg_sq_in: Tensor, *, lr: float = 0.001,
               beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.0, step: int = 0,
               amsgrad: bool = False, max_exp_avg_sq_in: Tensor | None = None, param_out: Tensor | None = None,
               exp_avg_out: Tensor | None = None, exp_avg_sq_out: Tensor | None = None,
               max_exp_avg_sq_out: Tensor | None = None, memory_config: MemoryConfig | None = None,
               compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> list:
    """One Adam step (torch.optim.Adam's update at `step`, MorehAdamOperation), into the *_out tensors when given,
    else new ones. Returns [param_out, exp_avg_out, exp_avg_sq_out, max_exp_avg_sq_out], the last None without
    amsgrad.

    >>> t = lambda v: ttnn.from_torch(torch.full((32, 32), v), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> out = ttnn.moreh_adam(t(1.0), t(0.5), t(0.0), t(0.0), lr=0.1, step=1)
    >>> out[0].to_torch()[0, 0]  # 1 - lr * sign(grad) on the first step
    tensor(0.8984, dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return _adam_op(op_name, param_in, grad, exp_avg_in, exp_avg_sq_in, max_exp_avg_sq_in,
                    (param_out, exp_avg_out, exp_avg_sq_out, max_exp_avg_sq_out), memory_config,
                    compute_kernel_config, decoupled=False, amsgrad=amsgrad, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                    weight_decay=weight_decay, step=step)


def _moreh_adamw_golden(param_in, grad, exp_avg_in, exp_avg_sq_in, lr=0.001, beta1=0.9, beta2=0.999, eps=1e-8,
                        weight_decay=1e-2, step=0, amsgrad=False, *_, max_exp_avg_sq_in=None, **__):
    return list(_adam(param_in.float(), grad.float(), exp_avg_in.float(), exp_avg_sq_in.float(),
                      max_exp_avg_sq_in.float() if amsgrad else None, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                      weight_decay=weight_decay, step=step, decoupled=True, rounded=lambda x: x))


@register_op("ttnn.moreh_adamw", kind="binary", golden=_moreh_adamw_golden)
def moreh_adamw(param_in: Tensor, grad: Tensor, exp_avg_in: Tensor, exp_avg_sq_in: Tensor, lr: float = 0.001,
                beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8, weight_decay: float = 1e-2,
                step: int = 0, amsgrad: bool = False, *, max_exp_avg_sq_in: Tensor | None = None,
                param_out: Tensor | None = None, exp_avg_out: Tensor | None = None,
                exp_avg_sq_out: Tensor | None = None, max_exp_avg_sq_out: Tensor | None = None,
                memory_config: MemoryConfig | None = None, compute_kernel_config=None, op_name: str = OWN_NAME,
                **tt_nn_only) -> list:
    """One AdamW step (torch.optim.AdamW's update: the weight decay taken off the parameter, MorehAdamWDeviceOperation),
    as moreh_adam otherwise; its hyperparameters may be positional, as TT-NN's binding takes them.

    >>> t = lambda v: ttnn.from_torch(torch.full((32, 32), v), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_adamw(t(1.0), t(0.5), t(0.0), t(0.0), 0.1, step=1)[0].to_torch()[0, 0]
    tensor(0.8984, dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return _adam_op(op_name, param_in, grad, exp_avg_in, exp_avg_sq_in, max_exp_avg_sq_in,
                    (param_out, exp_avg_out, exp_avg_sq_out, max_exp_avg_sq_out), memory_config,
                    compute_kernel_config, decoupled=True, amsgrad=amsgrad, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                    weight_decay=weight_decay, step=step)


# -- moreh_clip_grad_norm: torch.nn.utils.clip_grad_norm_ on a list of gradients, in place --------------------------


def _nonfinite(norm_type) -> RuntimeError:
    return tt_fatal("std::isfinite(fp32_total_norm)", f"The total norm of order {norm_type} for gradients from "
                    f"`parameters` is non-finite, so it cannot be clipped. To disable this error and scale the "
                    f"gradients by the non-finite norm anyway, set `error_if_nonfinite=False`", _WHERE)


def _total_norm(grads: list, p: float) -> torch.Tensor:
    """The p-norm of every gradient's elements together: (sum |g|^p)^(1/p), the largest |g| for p = inf."""
    flat = torch.cat([g.reshape(-1) for g in grads])
    return torch.linalg.vector_norm(flat, ord=p)


def _moreh_clip_grad_norm_golden(inputs, max_norm, norm_type=2.0, *_, **__):
    return _total_norm([t.float() for t in inputs], float(norm_type)).reshape(1, 1)


@register_op("ttnn.moreh_clip_grad_norm", kind="unary", golden=_moreh_clip_grad_norm_golden)
def moreh_clip_grad_norm(inputs, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False, *,
                         total_norm: Tensor | None = None, memory_config: MemoryConfig | None = None,
                         compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """torch.nn.utils.clip_grad_norm_ on TILE gradients: their total norm_type-norm, returned as a [1, 1] tensor
    (or into total_norm=), and each gradient scaled in place by min(max_norm / (total + 1e-6), 1), as
    moreh_clip_grad_norm.cpp runs it: step 1 sums |g|^p per gradient, step 2 takes the total's 1/p-th power on
    one core, step 3 scales the gradients. The clip coefficient's own ops (full, add, div, minimum on [1] tensors)
    are computed here rather than recorded.

    >>> g = ttnn.from_torch(torch.full((32, 32), 0.25), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_clip_grad_norm([g], 1.0).to_torch().item(), g.to_torch()[0, 0].item()
    (8.0, 0.03125)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    inputs = list(inputs)
    p = float(norm_type)
    if error_if_nonfinite and math.isnan(p):
        raise _nonfinite(norm_type)
    if not inputs:
        raise ValueError(f"{op_name}: give at least one gradient tensor")
    for t in inputs:
        _check_tensor(t, op_name, "input", (DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.FLOAT32))
    ins = device_inputs(op_name, *inputs)
    total = dtypes.to_device_values(_total_norm([values(t, op_name).float() for t in inputs], p), inputs[0].dtype)
    if error_if_nonfinite and not torch.isfinite(total):
        raise _nonfinite(norm_type)
    coef = torch.clamp(max_norm / (total.float() + 1e-6), max=1.0)
    for t in inputs:
        t._write(values(t, op_name).float() * coef)
    fresh = total_norm is None
    if total_norm is not None:
        total_norm._write(total.float().reshape(tuple(total_norm.shape)))
        out = total_norm
    else:
        out = output(total.float().reshape(1, 1), inputs[0], ins, op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, fresh, inputs[0], moreh_programs.moreh_clip_grad_norm_programs(inputs))
    return out


# -- moreh_fold: torch's nn.Fold (col2im) -----------------------------------------------------------------------------


def _moreh_fold_golden(input, output=None, output_size=None, kernel_size=None, dilation=(1, 1),  # noqa: A002
                       padding=(0, 0), stride=(1, 1), *_, **__):
    return torch.nn.functional.fold(input.float(), tuple(output_size), tuple(kernel_size), tuple(dilation),
                                    tuple(padding), tuple(stride))


@register_op("ttnn.moreh_fold", kind="move", golden=_moreh_fold_golden)
def moreh_fold(input: Tensor, output: Tensor | None = None, output_size=None, kernel_size=None,  # noqa: A002
               dilation=(1, 1), padding=(0, 0), stride=(1, 1), *, memory_config: MemoryConfig | None = None,
               op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """torch.nn.functional.fold (col2im) of a ROW_MAJOR [N, C*kh*kw, L] or [C*kh*kw, L] input into [N, C, H, W]
    (MorehFoldOperation's row-major factory); `output` (TT-NN's second positional argument) receives it when
    given.

    >>> x = ttnn.from_torch(torch.ones(1, 4, 4), ttnn.bfloat16, device=device)
    >>> ttnn.moreh_fold(x, None, [3, 3], [2, 2]).to_torch()[0, 0]
    tensor([[1., 2., 1.],
            [2., 4., 2.],
            [1., 2., 1.]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    where = "ttnn/cpp/ttnn/operations/moreh/moreh_fold/device/fold_device_operation.cpp"
    if input.layout != Layout.ROW_MAJOR:
        raise tt_fatal("input.layout() == Layout::ROW_MAJOR", "Fold: only support input in ROW_MAJOR", where)
    for name, v in (("output_size", output_size), ("kernel_size", kernel_size), ("dilation", dilation),
                    ("padding", padding), ("stride", stride)):
        if v is None or len(v) != 2:
            raise tt_fatal(f"operation_attributes.{name}.size() == 2", f"Fold: {name} takes 2 elements", where)
    if len(input.shape) not in (2, 3):
        raise tt_fatal("(input_rank == 3) || (input_rank == 2)", "Fold: Only support 3D or 2D input tensor", where)
    ins = device_inputs(op_name, input)
    try:
        y = _moreh_fold_golden(values(input, op_name), None, output_size, kernel_size, dilation, padding, stride)
    except RuntimeError as e:  # torch's own check names the block count or the channel size that does not fit
        raise tt_fatal("input_shape[input_rank - 1] == l", f"Fold: Invalid input tensor size ({e})", where) from None
    if output is not None:
        output._write(y)
        out = output
    else:
        out = common.output(y, input, ins, op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, output is None, input, moreh_programs.moreh_fold_program(input, out))
    return out


# ttnn.operations.moreh.<name>, as TT-NN's Python names them
arange, dot, cumsum, cumsum_backward = moreh_arange, moreh_dot, moreh_cumsum, moreh_cumsum_backward
sum, mean, sum_backward, mean_backward = moreh_sum, moreh_mean, moreh_sum_backward, moreh_mean_backward  # noqa: A001
matmul, linear = moreh_matmul, moreh_linear
matmul_backward, linear_backward = moreh_matmul_backward, moreh_linear_backward
bmm, bmm_backward, dot_backward = moreh_bmm, moreh_bmm_backward, moreh_dot_backward
getitem, sgd, adam, adamw = moreh_getitem, moreh_sgd, moreh_adam, moreh_adamw
clip_grad_norm, fold = moreh_clip_grad_norm, moreh_fold


# -- moreh_softmax / softmin / logsoftmax and their backwards (moreh_softmax/, moreh_softmax_backward/) ----------------


class MorehSoftmaxOp(enum.IntEnum):
    """Which of the three a moreh_softmax device operation computes (moreh_softmax_device_operation.hpp)."""
    SOFTMAX = 0
    SOFTMIN = 1
    LOGSOFTMAX = 2


class MorehSoftmaxOpParallelizationStrategy(enum.IntEnum):
    """The program factory: the whole dim in L1 (SMALL_W / SMALL_H), streamed (LARGE_W / LARGE_H), or an outer dim
    (LARGE_C); NONE picks it by the dim and what fits in L1."""
    NONE = 0
    SMALL_W = 1
    SMALL_H = 2
    LARGE_W = 3
    LARGE_H = 4
    LARGE_C = 5


# The backward's own enums, the same members (moreh_softmax_backward_device_operation.hpp)
MorehSoftmaxBackwardOp = enum.IntEnum("MorehSoftmaxBackwardOp", [(m.name, m.value) for m in MorehSoftmaxOp])
MorehSoftmaxBackwardOp.__doc__ = "Which of the three a moreh_softmax_backward device operation differentiates."
MorehSoftmaxBackwardOpParallelizationStrategy = enum.IntEnum(
    "MorehSoftmaxBackwardOpParallelizationStrategy", [(m.name, m.value) for m in MorehSoftmaxOpParallelizationStrategy])
MorehSoftmaxBackwardOpParallelizationStrategy.__doc__ = "moreh_softmax_backward's program factory, as the forward's."

_SOFTMAX_FN = {MorehSoftmaxOp.SOFTMAX: lambda x, d: torch.softmax(x, d),
               MorehSoftmaxOp.SOFTMIN: lambda x, d: torch.softmax(-x, d),
               MorehSoftmaxOp.LOGSOFTMAX: lambda x, d: torch.log_softmax(x, d)}
# The CBs a SMALL factory needs below TT-NN's 512 KiB of L1 (is_moreh_softmax_{w,h}_small_available): n tiles of the
# dim times 3 (input, output, x - max or exp) plus 2 fixed tiles of the input's format and 4 of the intermediate's
# for the forward; the backward counts n tiles times 3 and 5 fixed tiles, all of the input's format.
_L1_512KB = 512 * 1024


def _softmax_small_fits(x: Tensor, n: int, fp32: bool, backward: bool) -> bool:
    page = device_work.TILE_BYTES[x.dtype]
    if backward:
        use = 3 * n * page + 5 * page
    else:
        inter = device_work.TILE_BYTES[DataType.FLOAT32] if fp32 else page
        use = 2 * n * page + 3 * page + 2 * n * inter + 3 * inter
    return x.device().config.l1_unreserved_base + use <= _L1_512KB


def _softmax_strategy(op_name: str, x: Tensor, dim: int, strategy, fp32: bool, backward: bool) -> str:
    """get_parallelization_strategy: NONE picks SMALL over the last two dims when it fits, else LARGE (LARGE_C for
    an outer dim); a given one must suit the dim (and a SMALL one fit)."""
    rank = len(x.shape)
    strategy = MorehSoftmaxOpParallelizationStrategy(int(strategy)).name
    which = "W" if dim == rank - 1 else "H" if dim == rank - 2 else None
    n = (x.padded_shape[-1] if which == "W" else x.padded_shape[-2]) // 32
    if strategy == "NONE":
        if which is None:
            return "LARGE_C"
        return f"SMALL_{which}" if _softmax_small_fits(x, n, fp32, backward) else f"LARGE_{which}"
    if which is None and strategy != "LARGE_C":
        raise tt_fatal("strategy == LARGE_C", "Invalid parallelization strategy. large c is for dim 0 to (rank - 3)\n"
                       f"{op_name}: dim {dim} of a rank-{rank} tensor takes LARGE_C (or NONE)", _MOREH_WHERE)
    if which is not None and strategy not in (f"SMALL_{which}", f"LARGE_{which}"):
        raise tt_fatal(f"strategy == SMALL_{which} || strategy == LARGE_{which}", f"Invalid parallelization strategy. "
                       f"{strategy} is not for dim {which}\n{op_name}: give SMALL_{which}, LARGE_{which} or NONE",
                       _MOREH_WHERE)
    if strategy.startswith("SMALL") and not _softmax_small_fits(x, n, fp32, backward):
        raise tt_fatal(f"is_moreh_softmax_{which.lower()}_small_available", f"not enough circular buffer memory for "
                       f"{strategy}\n{op_name}: give LARGE_{which} (or NONE)", _MOREH_WHERE)
    return strategy


_MOREH_WHERE = "device_sim/ops/moreh.py"
_SOFTMAX_DTYPES = (DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.FLOAT32)


def _softmax_dim(op_name: str, x: Tensor, dim) -> int:
    rank = len(x.shape)
    if not isinstance(dim, numbers.Integral) or not 0 <= dim < rank:
        raise tt_fatal("dim >= 0 && dim < rank", f"dim {dim} should be less than output tensor rank {rank}\n"
                       f"{op_name}: give a dim in [0, {rank - 1}]", _MOREH_WHERE)
    return int(dim)


def _moreh_softmax_golden(input_tensor, dim, *_, op=MorehSoftmaxOp.SOFTMAX, **__):
    return _SOFTMAX_FN[MorehSoftmaxOp(int(op))](input_tensor.float(), dim)


def _moreh_softmax_factory(default_op: MorehSoftmaxOp):
    def op(input_tensor: Tensor, dim: int, *, output_tensor: Tensor | None = None, op=default_op,
           strategy=MorehSoftmaxOpParallelizationStrategy.NONE, memory_config: MemoryConfig | None = None,
           compute_kernel_config=None, op_name: str = OWN_NAME) -> Tensor:
        x = input_tensor
        device_inputs(op_name, x)
        if x.device() is None:
            raise tt_fatal("input.storage_type() == StorageType::DEVICE", f"Operands to softmax need to be on device!"
                           f"\n{op_name}: move the input with ttnn.to_device(t, device)", _MOREH_WHERE)
        if x.layout != Layout.TILE:
            raise tt_fatal("input.layout() == Layout::TILE", f"Inputs to softmax must be tilized\n{op_name}: convert "
                           f"it with ttnn.to_layout(t, ttnn.TILE)", _MOREH_WHERE)
        if x.dtype not in _SOFTMAX_DTYPES:
            raise tt_fatal("dtype in (BFLOAT16, BFLOAT8_B, FLOAT32)", f"Inputs must be of bfloat16, bfloat8_b or "
                           f"float32 type. Received: {x.dtype}", _MOREH_WHERE)
        d = _softmax_dim(op_name, x, dim)
        # init_device_compute_kernel_config(..., HiFi4, approx, fp32 accumulation iff the input is float32)
        fp32 = getattr(compute_kernel_config, "fp32_dest_acc_en", x.dtype == DataType.FLOAT32) \
            if compute_kernel_config is not None else x.dtype == DataType.FLOAT32
        chosen = _softmax_strategy(op_name, x, d, strategy, fp32, backward=False)
        y = _SOFTMAX_FN[MorehSoftmaxOp(int(op))](values(x, op_name).float(), d)
        fresh = output_tensor is None
        if output_tensor is not None:
            output_tensor._write(y)
            out = output_tensor
        else:
            out = output(y, x, [x], op_name=op_name, memory_config=memory_config if memory_config is not None
                         else x.memory_config())
        device_work.launch_after(out, fresh, x, moreh_programs.moreh_softmax_program(
            x, d, chosen, backward=False, fp32_dest_acc_en=fp32))
        return out
    return op


_SOFTMAX_DOC = """ttnn.moreh_{name}(input_tensor, dim, *, output_tensor=None, op, strategy=NONE, memory_config=None,
    compute_kernel_config=None): {what} over `dim` (0 <= dim < rank), worked out in float32 and rounded once to the
    input's dtype; output_tensor= receives it. strategy picks TT-NN's program factory (MorehSoftmaxOpParallelization
    Strategy), checked against the dim as TT-NN checks it; op (MorehSoftmaxOp) overrides which of the three it is.

    >>> x = ttnn.from_torch(torch.tensor([[0.0, 2.0]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> round(ttnn.moreh_{name}(x, 1).to_torch()[0, 1].item(), 2)
    {want}
    """


def _register_softmax(name: str, which: MorehSoftmaxOp, what: str, want: float):
    body = _moreh_softmax_factory(which)
    body.__doc__ = _SOFTMAX_DOC.format(name=name, what=what, want=want)
    return register_op(f"ttnn.moreh_{name}", kind="softmax", output_keyword="output_tensor",
                       golden=partial(_moreh_softmax_golden, op=which))(body)


moreh_softmax = _register_softmax("softmax", MorehSoftmaxOp.SOFTMAX, "exp(x) / sum(exp(x))", 0.88)
moreh_softmin = _register_softmax("softmin", MorehSoftmaxOp.SOFTMIN, "softmax of -x", 0.12)
moreh_logsoftmax = _register_softmax("logsoftmax", MorehSoftmaxOp.LOGSOFTMAX, "log of softmax", -0.13)


def _softmax_backward(which: MorehSoftmaxOp, y: torch.Tensor, dy: torch.Tensor, dim: int) -> torch.Tensor:
    """The input's gradient from the forward's output y and its gradient dy (the kernels' formulas: softmax's
    y * (dy - sum(y * dy)), softmin's negation of it, logsoftmax's dy - exp(y) * sum(dy))."""
    if which == MorehSoftmaxOp.LOGSOFTMAX:
        return dy - torch.exp(y) * dy.sum(dim, keepdim=True)
    dx = y * (dy - (y * dy).sum(dim, keepdim=True))
    return -dx if which == MorehSoftmaxOp.SOFTMIN else dx


def _moreh_softmax_backward_golden(output_tensor, output_grad_tensor, dim, *_, op=MorehSoftmaxOp.SOFTMAX, **__):
    return _softmax_backward(MorehSoftmaxOp(int(op)), output_tensor.float(), output_grad_tensor.float(), dim)


def _moreh_softmax_backward_factory(default_op: MorehSoftmaxOp):
    def op(output_tensor: Tensor, output_grad_tensor: Tensor, dim: int, *, input_grad_tensor: Tensor | None = None,
           op=default_op, strategy=MorehSoftmaxBackwardOpParallelizationStrategy.NONE,
           memory_config: MemoryConfig | None = None, compute_kernel_config=None, op_name: str = OWN_NAME) -> Tensor:
        y, dy = output_tensor, output_grad_tensor
        device_inputs(op_name, y, dy)
        for name, t, what in (("output_tensor", y, "Output"), ("output_grad_tensor", dy, "Output_grad")):
            if t.device() is None:
                raise tt_fatal("storage_type() == StorageType::DEVICE", f"Operands to softmax need to be on device!\n"
                               f"{op_name}: move {name} with ttnn.to_device(t, device)", _MOREH_WHERE)
            if t.layout != Layout.TILE:
                raise tt_fatal(f"{name}.layout() == Layout::TILE", f"{what} to softmax must be tilized",
                               _MOREH_WHERE)
            if t.dtype not in (DataType.BFLOAT16, DataType.BFLOAT8_B):
                raise tt_fatal(f"{name}.dtype() in (BFLOAT16, BFLOAT8_B)", f"{name}'s dtype should be bfloat16 or "
                               f"bfloat8_b, got {t.dtype}", _MOREH_WHERE)
        d = _softmax_dim(op_name, y, dim)
        fp32 = bool(getattr(compute_kernel_config, "fp32_dest_acc_en", False))
        chosen = _softmax_strategy(op_name, y, d, strategy, fp32, backward=True)
        dx = _softmax_backward(MorehSoftmaxOp(int(op)), values(y, op_name).float(), values(dy, op_name).float(), d)
        fresh = input_grad_tensor is None
        if input_grad_tensor is not None:
            input_grad_tensor._write(dx)
            out = input_grad_tensor
        else:
            out = output(dx, y, [y, dy], op_name=op_name, memory_config=memory_config if memory_config is not None
                         else y.memory_config())
        device_work.launch_after(out, fresh, y, moreh_programs.moreh_softmax_program(
            y, d, chosen, backward=True, fp32_dest_acc_en=fp32))
        return out
    return op


_SOFTMAX_BACKWARD_DOC = """ttnn.moreh_{name}_backward(output_tensor, output_grad_tensor, dim, *, input_grad_tensor=None,
    op, strategy=NONE, memory_config=None, compute_kernel_config=None): the gradient of moreh_{name}'s input from its
    output y and that output's gradient dy ({what}), bfloat16 or bfloat8_b, worked out in float32 and rounded once;
    input_grad_tensor= receives it. strategy and op as moreh_{name}'s (MorehSoftmaxBackward* enums).

    >>> y = ttnn.from_torch(torch.tensor([[0.25, 0.75]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> dy = ttnn.from_torch(torch.tensor([[1.0, 0.0]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moreh_{name}_backward(y, dy, 1).to_torch()[0].tolist()
    {want}
    """


def _register_softmax_backward(name: str, which: MorehSoftmaxOp, what: str, want: list):
    body = _moreh_softmax_backward_factory(which)
    body.__doc__ = _SOFTMAX_BACKWARD_DOC.format(name=name, what=what, want=want)
    return register_op(f"ttnn.moreh_{name}_backward", kind="softmax", output_keyword="input_grad_tensor",
                       golden=partial(_moreh_softmax_backward_golden, op=which))(body)


moreh_softmax_backward = _register_softmax_backward("softmax", MorehSoftmaxOp.SOFTMAX, "y * (dy - sum(y * dy))",
                                                    [0.1875, -0.1875])
moreh_softmin_backward = _register_softmax_backward("softmin", MorehSoftmaxOp.SOFTMIN, "-y * (dy - sum(y * dy))",
                                                    [-0.1875, 0.1875])
moreh_logsoftmax_backward = _register_softmax_backward("logsoftmax", MorehSoftmaxOp.LOGSOFTMAX,
                                                       "dy - exp(y) * sum(dy)", [-0.283203125, -2.109375])

# ttnn.operations.moreh's names for them (ttnn/operations/moreh.py; its SoftmaxOp names the strategy enum, as there)
softmax, softmin, logsoftmax = moreh_softmax, moreh_softmin, moreh_logsoftmax
softmax_backward, softmin_backward, logsoftmax_backward = (moreh_softmax_backward, moreh_softmin_backward,
                                                           moreh_logsoftmax_backward)
SoftmaxOp = SoftmaxOpParallelizationStrategy = MorehSoftmaxOpParallelizationStrategy
SoftmaxBackwardOp, SoftmaxBackwardOpParallelizationStrategy = (MorehSoftmaxBackwardOp,
                                                               MorehSoftmaxBackwardOpParallelizationStrategy)

# ttnn.operations.moreh.nll_loss, nll_loss_backward, nll_loss_unreduced_backward (registered in moreh_nll_loss)
nll_loss, nll_loss_backward, nll_loss_unreduced_backward = (
    _nll_loss.moreh_nll_loss, _nll_loss.moreh_nll_loss_backward, _nll_loss.moreh_nll_loss_unreduced_backward)
group_norm_backward = _group_norm.moreh_group_norm_backward  # ttnn.operations.moreh.group_norm_backward
