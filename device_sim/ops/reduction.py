"""Reductions over one dim, several, or all (dim=None); keepdim=False as TT-NN's default."""

from __future__ import annotations

import enum
import math

import torch

from device_sim import device_work, dtypes, numerics
from device_sim.compute_config import MathFidelity, resolve
from device_sim.ops import eltwise
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, values
from device_sim.ops.data_movement import index_dtype, reshape_on_device
from device_sim.ops.sampling import seed_cores
from device_sim.program_config_checks import tt_fatal
from device_sim.program_configs import UnaryOpType, UnaryWithParam
from device_sim.programs import accumulation, indexing, reduction, reduction_nd
from device_sim.programs import prod as prod_programs
from device_sim.programs import topk as topk_programs
from device_sim.programs.intermediate import Intermediate
from device_sim.registry import OWN_NAME, pending_output_target, register_op
from device_sim.tensor import Tensor
from device_sim.types import DRAM_MEMORY_CONFIG, DataType, Layout, MemoryConfig


class ReductionDimError(ValueError, RuntimeError):
    """A reduction the input's shape has no answer for (a dim out of range, an empty dim's max). TT-NN raises
    RuntimeError (TT_FATAL): nightly test_reduction_ops.py expects one where torch raises; device_sim's is also the
    ValueError it was."""


def _dims(dim):
    return tuple(int(d) for d in dim) if isinstance(dim, (list, tuple)) else dim


def _reduce(x: torch.Tensor, fn, dim, keepdim: bool, **kw) -> torch.Tensor:
    if dim is None:
        # torch's reductions take dim=None, but keepdim then needs every dim named.
        dim = tuple(range(x.dim()))
    return fn(x, dim=_dims(dim), keepdim=keepdim, **kw)


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_REDUCE_EXAMPLE = """

    >>> x = ttnn.from_torch(torch.tensor([[1.0, 2.0, 4.0], [3.0, 0.5, 2.0]]), layout=ttnn.TILE, device=device)
    >>> torch.allclose({op}(x, dim=-1).to_torch().float(), {op}.golden_function(x.to_torch(), -1).float())
    True
"""


def _reduction(name: str, fn, programs, *, result_dtype: DataType | None = None, takes_correction: bool = False,
               fpu: str | None = None, **declared):
    """ttnn.<name>: `fn` (a torch reduction) over `dim`; `programs(input, out, dim, keepdim, scalar, config)` gives
    the device operations it runs (None: none); takes_correction: TT-NN's correction= (var, std); fpu: "sum" or
    "mean", reduced as the matrix engine does under a compute_kernel_config (_on_the_fpu); `declared` goes to
    register_op (kind, output_keyword)."""
    def golden(t, dim=None, keepdim=False, *_, correction=True, scalar=1.0, **__):
        kw = {"correction": int(correction)} if takes_correction else {}
        # TT-NN's scalar= scales the input before it is reduced (1.0 leaves it as it is).
        x = t.float() if scalar == 1.0 else t.float() * scalar
        r = _reduce(x, fn, dim, keepdim, **kw)
        # TT-NN's goldens call torch's reduction on the tensor as given, so a bfloat16 input gives a bfloat16 result
        # (torch sums in float32 and rounds once): test_reduction_h_interleaved.py holds a bfloat16 sum of 64 rows to
        # 0.001 of it (Frobenius), which a float32 golden misses by the output's own rounding (0.0016)
        return r.to(t.dtype) if t.is_floating_point() and r.is_floating_point() else r

    def op(input_tensor: Tensor, dim=None, keepdim: bool = False, *, correction: bool = True, scalar: float = 1.0,
           memory_config: MemoryConfig | None = None, compute_kernel_config=None, op_name: str = OWN_NAME,
           **tt_nn_only) -> Tensor:
        if name == "prod" and (isinstance(dim, Tensor) or "output_tensor" in tt_nn_only):
            # prod's other overload, prod(input, output_tensor, *, dims): over dims (N or C), written into
            # output_tensor, given by position or keyword (prod_nanobind.cpp; test_prod_nc.py, the docs examples)
            target = dim if isinstance(dim, Tensor) else tt_nn_only.pop("output_tensor")
            return _prod_nc(op_name, input_tensor, target, tt_nn_only.pop("dims", None), tt_nn_only)
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        ins = device_inputs(op_name, input_tensor)
        x = values(input_tensor, op_name).float()
        try:
            r = golden(x, dim, keepdim, correction=correction, scalar=scalar)
        except (IndexError, RuntimeError) as e:
            text = f"{op_name}: cannot reduce shape {list(x.shape)} over dim {dim!r}: {e}"
            if isinstance(dim, int) and -x.dim() <= dim < x.dim() and x.shape[dim] == 0:
                # an empty dim has no max, min or arg: TT-NN's TT_FATAL (argmax_device_operation.cpp), a RuntimeError
                raise tt_fatal("input_shape[d] != 0", text, where="device_sim/ops/reduction.py") from None
            raise ReductionDimError(text) from None
        if fpu is not None and numerics.emulating(compute_kernel_config):
            r = _on_the_fpu(op_name, x, dim, keepdim, compute_kernel_config, mean=fpu == "mean", scaler=scalar)
        fresh = pending_output_target(op_name) is None  # argmax may write into a given output_tensor
        out = output(r, input_tensor, ins, op_name=op_name, dtype=result_dtype, memory_config=memory_config)
        launched = programs(input_tensor, out, dim, keepdim, scalar, compute_kernel_config)
        if launched is not None:
            # compute_program_hash's fields beyond the CBs: the math op (the op), dim, scaler, memory configs,
            # sub_core_grids (taken, its cores not modelled)
            device_work.launch_after(out, fresh, input_tensor, launched, (
                op_name, dim if not isinstance(dim, list) else tuple(dim), scalar, input_tensor.memory_config(),
                out.memory_config(), tt_nn_only.get("sub_core_grids")))
        return out

    op.__doc__ = (f"{name} over `dim` (None: every dim) of the input times `scalar`; var and std take TT-NN's "
                  f"correction=True (unbiased)." + _REDUCE_EXAMPLE.format(op=f"ttnn.{name}"))
    return register_op(f"ttnn.{name}", golden=golden, **declared)(op)


def _reduce_programs(*, fast_reduce_nc: bool = False):
    """TT-NN's ReduceDeviceOperation (reduce_op.cpp's ReduceOpMath SUM / MAX / MIN; mean is a sum scaled by 1/N) over
    a TILE interleaved input; over outer dims reduce_nd_loop, except where TT-NN runs fast_reduce_nc (a bfloat16 or
    bfloat8_b sum: not modelled)."""
    def programs(t: Tensor, out: Tensor, dim, keepdim, scalar, config):
        if t.device() is None or t.layout != Layout.TILE or t.is_sharded():
            return None
        rank = len(t.shape)
        dims = tuple(range(rank) if dim is None else [d % rank for d in ((dim,) if isinstance(dim, int) else dim)])
        found = reduction.reduce_programs(t, out.dtype, dims)
        if not found and not (fast_reduce_nc and t.dtype in (DataType.BFLOAT16, DataType.BFLOAT8_B)):
            found = reduction_nd.reduce_nd_programs(t, out.dtype, dims)
        return found

    return programs


def _welford_programs(t: Tensor, out: Tensor, dim, keepdim, scalar, config):
    """var and std over one dim (W or H): TT-NN's welford program."""
    d = _dims(dim)
    if not (isinstance(d, int) or len(d or ()) == 1):
        return None
    fp32 = bool(getattr(config, "fp32_dest_acc_en", False))
    return reduction_nd.welford_program(t, out.dtype, d if isinstance(d, int) else d[0], scalar=scalar,
                                        fp32_dest_acc_en=fp32)


def _prod_nc(op_name: str, input_tensor: Tensor, output_tensor: Tensor, dims, tt_nn_only) -> Tensor:
    """prod(input, output_tensor, *, dims): the product over each of `dims` (kept, as 1) into output_tensor, in place,
    by ProdNc for a dim 0 or 1 of a 4-D input (prod.cpp's prod_nc_impl)."""
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if not dims:
        raise TypeError(f"{op_name}(input_tensor, output_tensor, *, dims): give dims, the dims to multiply over")
    device_inputs(op_name, input_tensor, output_tensor)
    r = values(input_tensor, op_name).float()
    for d in dims:
        r = torch.prod(r, dim=int(d), keepdim=True)
    output_tensor._write(r)
    launched = prod_programs.prod_programs(input_tensor, int(dims[0])) if len(dims) == 1 else None
    if launched is not None:
        device_work.launch_after(output_tensor, False, input_tensor, launched)
    return output_tensor


def _prod_programs(t: Tensor, out: Tensor, dim, keepdim, scalar, config):
    """ProdAll, or ProdNc over dim 0 / 1 of 4-D."""
    return prod_programs.prod_programs(t, dim) if isinstance(dim, (int, type(None))) else None


def _argmax_programs(t: Tensor, out: Tensor, dim, keepdim, scalar, config):
    return indexing.argmax_program(t, dim, keepdim) if isinstance(dim, (int, type(None))) else None


def _on_the_fpu(op_name: str, x: torch.Tensor, dim, keepdim: bool, config, *, mean: bool,
                scaler: float) -> torch.Tensor:
    """sum/mean as the matrix engine reduces: fidelity passes and destination format (docs/numerics.md).

    The other reductions take a compute_kernel_config and do not depend on it (max/min do not use
    the multiplier; var/std are left exact here).
    """
    # TT-NN's reductions default to HiFi4 (init_device_compute_kernel_config(..., MathFidelity::HiFi4)).
    n = resolve(op_name, config, math_fidelity=MathFidelity.HiFi4, math_approx_mode=True, fp32_dest_acc_en=False)
    dims = tuple(range(x.dim())) if dim is None else _dims(dim)
    dims = tuple(sorted({d % x.dim() for d in (dims if isinstance(dims, tuple) else (dims,))}))
    return numerics.reduce_sum(x, dims, keepdim, n, mean=mean, scaler=scaler)


def _argmax(x, dim, keepdim):
    # torch.argmax reduces one dim or, with dim=None, the flattened tensor.
    if dim == tuple(range(x.dim())):
        r = torch.argmax(x)
        return r.reshape([1] * x.dim()) if keepdim else r
    if isinstance(dim, tuple):
        raise ValueError(f"ttnn.argmax reduces one dim (or all with dim=None), got {list(dim)}")
    return torch.argmax(x, dim=dim, keepdim=keepdim)


sum = _reduction("sum", torch.sum, _reduce_programs(fast_reduce_nc=True), fpu="sum", kind="rows")  # noqa: A001

# -- ttnn.experimental.fast_reduce_nc: a sum over the outer dims, one FastReduceNC program a dim ---------------------

def _fast_reduce_nc_golden(input, *_, dims=(), **__):  # noqa: A002  (TT-NN's name)
    return torch.sum(input.float(), tuple(int(d) for d in dims), keepdim=True)


@register_op("ttnn.experimental.fast_reduce_nc", kind="rows", output_keyword="output", golden=_fast_reduce_nc_golden)
def fast_reduce_nc(input: Tensor, *, dims=(), memory_config: MemoryConfig | None = None,  # noqa: A002
                   compute_kernel_config=None, op_name: str = OWN_NAME) -> Tensor:
    """The sum over `dims` (outer dims, 0 to 6 and below the rank), kept as 1, of a bfloat16 or bfloat8_b TILE
    tensor, as fast_reduce_nc.cpp runs it: one FastReduceNC a dim, the largest first, each output in the input's
    dtype (DRAM interleaved unless `memory_config`). The kernel adds the dim's tiles one by one into the destination
    register: rounded to bfloat16 at each add unless compute_kernel_config has fp32_dest_acc_en (HiFi4 otherwise,
    init_device_compute_kernel_config's default); `output=` writes the last step into a tensor. Departure: the
    output keeps the input's logical last two dims where TT-NN's compute_output_specs takes the padded ones.

    >>> x = ttnn.from_torch(torch.ones(2, 4, 32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> y = ttnn.experimental.fast_reduce_nc(x, dims=[0, 1])
    >>> y.shape, torch.equal(y.to_torch(), ttnn.experimental.fast_reduce_nc.golden_function(x.to_torch(), dims=[0, 1]))
    (Shape([1, 1, 32, 32]), True)
    """
    where = "device_sim/ops/reduction.py"
    if not isinstance(input, Tensor) or input.device() is None:
        raise tt_fatal("input.storage_type() == StorageType::DEVICE",
                       f"Input tensor storage type must be DEVICE but got {input!r}", where=where)
    if not dims:
        raise tt_fatal("!dims.empty()", "fast_reduce_nc dims should not be empty", where=where)
    if input.dtype not in (DataType.BFLOAT16, DataType.BFLOAT8_B) or input.layout != Layout.TILE:
        raise tt_fatal("check_tensor(input, \"FastReduceNC\", \"input\", {BFLOAT16, BFLOAT8_B})",
                       f"FastReduceNC input must be a BFLOAT16 or BFLOAT8_B TILE tensor, got {input.dtype!r} "
                       f"{input.layout!r}", where=where)
    rank = len(input.shape)
    ordered = sorted(int(d) for d in dims)
    for d in ordered:
        if not 0 <= d <= 6:
            raise tt_fatal("args.dim >= 0 && args.dim <= MAX_NUM_DIMENSIONS - 2", "dim must be between 0 and 6.",
                           where=where)
        if d >= rank:
            raise tt_fatal("args.dim < input_rank", f"dim must be smaller than input tensor rank {rank}.",
                           where=where)
    n = resolve(op_name, compute_kernel_config, math_fidelity=MathFidelity.HiFi4, math_approx_mode=False,
                fp32_dest_acc_en=False)
    fresh = pending_output_target(op_name) is None
    memory_config = memory_config if memory_config is not None else DRAM_MEMORY_CONFIG
    r, step_input, launched = values(input, op_name), input, []
    for d in reversed(ordered):
        if numerics.emulating(compute_kernel_config) and not n.fp32_dest_acc_en:
            acc = torch.zeros_like(r.select(d, 0)).unsqueeze(d)
            for k in range(r.shape[d]):  # the 16-bit destination rounds each add (add_tiles with acc_to_dest)
                acc = numerics.to_bf16(acc + r.narrow(d, k, 1))
            r = acc
        else:
            r = torch.sum(r, d, keepdim=True)
        r = dtypes.to_device_values(r, input.dtype).float()  # each step's output, packed in the input's dtype
        launched.append(reduction.fast_reduce_nc_program(step_input, input.dtype, d,
                                                         fp32_dest_acc_en=n.fp32_dest_acc_en))
        step_input = Intermediate(input, tuple(r.shape), input.dtype)
    out = output(r, input, device_inputs(op_name, input), op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, fresh, input, tuple(launched))
    return out

mean = _reduction("mean", torch.mean, _reduce_programs(), fpu="mean", kind="rows")
max = _reduction("max", torch.amax, _reduce_programs(), kind="rows")  # noqa: A001
min = _reduction("min", torch.amin, _reduce_programs(), kind="rows")  # noqa: A001
var = _reduction("var", torch.var, _welford_programs, takes_correction=True, kind="rows")
std = _reduction("std", torch.std, _welford_programs, takes_correction=True, kind="rows")
argmax = _reduction("argmax", _argmax, _argmax_programs, result_dtype=DataType.UINT32, kind="rows",
                    output_keyword="output_tensor")


# -- along one dim: prod, cumsum, topk -----------------------------------------------------------

def _prod(x, dim, keepdim):
    if dim == tuple(range(x.dim())):
        r = torch.prod(x)
        return r.reshape([1] * x.dim()) if keepdim else r
    if isinstance(dim, tuple):
        raise ValueError(f"ttnn.prod multiplies over one dim (or all with dim=None), got {list(dim)}")
    return torch.prod(x, dim=dim, keepdim=keepdim)


prod = _reduction("prod", _prod, _prod_programs, kind="rows")


def _scan_golden(fn):
    def golden(input, dim, *_, reverse_order=False, **__):  # noqa: A002  (TT-NN's name)
        x = input.flip(dim) if reverse_order else input
        r = fn(x.float() if x.is_floating_point() else x, dim)
        return r.flip(dim) if reverse_order else r
    return golden


_cumsum_golden = _scan_golden(torch.cumsum)


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_SCAN_EXAMPLE = """

    >>> x = ttnn.from_torch(torch.tensor([[1.0, 2.0, 4.0], [3.0, 0.5, 2.0]]), layout=ttnn.TILE, device=device)
    >>> torch.allclose({op}(x, dim=1).to_torch(), {op}.golden_function(x.to_torch(), 1))
    True
"""


def _accumulation(name: str, fn, **declared):
    """ttnn.<name>: TT-NN's accumulation_invoke (reduction/accumulation/accumulation_common.cpp), shared by cumsum
    and cumprod: `fn` (torch.cumsum, torch.cumprod) along `dim`, from the end when reverse_order=True; `dtype`
    casts the input first; `out=` receives the result."""
    op_name = f"ttnn.{name}"
    golden = _scan_golden(fn)

    def op(input: Tensor, dim: int, *, dtype: DataType | None = None, reverse_order: bool = False,  # noqa: A002
           memory_config: MemoryConfig | None = None, **tt_nn_only) -> Tensor:
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        target = pending_output_target(op_name)
        if target is not None:  # accumulation_common.cpp's validate_output_tensor, first
            if target.device() is None:
                raise tt_fatal("is_device_tensor(output_tensor)", "Preallocated output tensor must be on device",
                               where="device_sim/ops/reduction.py")
            if tuple(target.shape) != tuple(input.shape):
                raise tt_fatal("input_tensor.logical_shape() == output_tensor.logical_shape()",
                               f"Shape mismatch: input tensor shape {input.shape} does not match output tensor shape "
                               f"{target.shape}.", where="device_sim/ops/reduction.py")
        ins = device_inputs(op_name, input)
        x = values(input, op_name)
        if not -x.dim() <= dim < (x.dim() or 1):  # (this module's max is ttnn.max)
            raise tt_fatal("(dim >= -rank) && (dim < rank)", f"{op_name}: The requested accumulation axis is {dim}, "
                           f"while the input tensor has rank {x.dim()}.", where="device_sim/ops/reduction.py")
        if dtype is not None:
            x = dtypes.to_device_values(x, DataType(dtype))
            x = x.float() if x.is_floating_point() else x
        fresh = pending_output_target(op_name) is None  # out= is the caller's: kept if the program fails
        out = output(golden(x, dim, reverse_order=reverse_order), input, ins, op_name=op_name, dtype=dtype,
                     memory_config=memory_config)
        # AccumulationDeviceOperation between the permutes that bring the dim to the front (programs.accumulation)
        device_work.launch_after(out, fresh, input, accumulation.accumulation_programs(input, dim, out.dtype))
        return out

    op.__doc__ = (f"Running {name[3:]} along `dim` (from the end when reverse_order=True); `dtype` casts the input "
                  f"first." + _SCAN_EXAMPLE.format(op=op_name))
    return register_op(op_name, golden=golden, output_keyword="out", **declared)(op)


cumsum = _accumulation("cumsum", torch.cumsum, kind="rows")
cumprod = _accumulation("cumprod", torch.cumprod)


def _ema_golden(input_tensor, alpha, *_, **__):
    """y_t = alpha * y_(t-1) + (1 - alpha) * x_t along the last dim, y_(-1) = 0 (tt-metal's test_ema.py golden), in
    float32 as the SFPU keeps the running value in its float32 destination (the output is rounded once, by the op)."""
    x = input_tensor.float()
    alpha = torch.tensor(float(alpha), dtype=torch.float32)
    beta = 1.0 - alpha  # the factory's 1.0f - alpha, in float32
    out, prev = torch.empty_like(x), torch.zeros_like(x[..., 0])
    for t in range(x.shape[-1]):
        prev = x[..., t] * beta + prev * alpha
        out[..., t] = prev
    return out


def _ema_check(op_name: str, input_tensor: Tensor, target, alpha) -> None:
    """EmaDeviceOperation::validate_on_program_cache_miss's TT_FATALs, in its order and words."""
    where = "device_sim/ops/reduction.py"
    if input_tensor.dtype != DataType.BFLOAT16:
        raise tt_fatal("input_tensor.dtype() == DataType::BFLOAT16",
                       f"Input tensor must be BFLOAT16, got: {input_tensor.dtype!r}", where=where)
    if input_tensor.device() is None:
        raise tt_fatal("input_tensor.storage_type() == StorageType::DEVICE", "Input tensor must be on device",
                       where=where)
    if input_tensor.layout != Layout.TILE:
        raise tt_fatal("input_tensor.layout() == Layout::TILE",
                       f"Input tensor must have TILE layout, got: {input_tensor.layout!r}", where=where)
    shape = input_tensor.shape
    if len(shape) != 4:
        raise tt_fatal("input_shape.rank() == 4", f"EMA input must be 4D [1, B, C, T], got rank {len(shape)}",
                       where=where)
    if shape[0] != 1:
        raise tt_fatal("input_shape[0] == 1", f"EMA expects leading dimension to be 1, got {shape[0]}", where=where)
    if target is not None:
        if target.dtype != DataType.BFLOAT16 or target.device() is None or target.layout != Layout.TILE:
            raise tt_fatal("output_tensor: BFLOAT16, on device, TILE", f"Output tensor must be a BFLOAT16 TILE "
                           f"tensor on device, got {target.dtype!r} {target.layout!r}", where=where)
        if math.prod(target.padded_shape) != math.prod(input_tensor.padded_shape):
            raise tt_fatal("input_tensor.padded_shape().volume() == output_tensor.padded_shape().volume()",
                           f"Input and output must have the same volume, input: {math.prod(input_tensor.padded_shape)}"
                           f", output: {math.prod(target.padded_shape)}", where=where)
    if math.isnan(alpha):
        raise tt_fatal("!std::isnan(operation_attributes.alpha)", "EMA alpha must be a valid number, got NaN",
                       where=where)


@register_op("ttnn.ema", kind="rows", golden=_ema_golden, output_keyword="out")
def ema(input_tensor: Tensor, alpha: float, *, core_grid=None, memory_config: MemoryConfig | None = None,
        compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The exponential moving average along the last dim of a bfloat16 TILE [1, B, C, T]: y_t = alpha * y_(t-1) +
    (1 - alpha) * x_t from y_(-1) = 0, the running value in float32 (ema.cpp's fp32 destination by default), the
    output bfloat16; EmaProgramFactory on the most cores of `core_grid` (default: the device's) that divide the
    B * C/32 rows of tiles. `out=` takes a preallocated output.

    >>> x = ttnn.from_torch(torch.ones(1, 1, 1, 4), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.ema(x, 0.5).to_torch()
    tensor([[[[0.5000, 0.7500, 0.8750, 0.9375]]]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    target = pending_output_target(op_name)
    _ema_check(op_name, input_tensor, target, float(alpha))
    ins = device_inputs(op_name, input_tensor)
    fresh = target is None
    out = output(_ema_golden(values(input_tensor, op_name), alpha), input_tensor, ins, op_name=op_name,
                 dtype=DataType.BFLOAT16, memory_config=memory_config)
    grid = input_tensor.device().compute_with_storage_grid_size()
    gx, gy = (core_grid.x, core_grid.y) if core_grid is not None and core_grid.x and core_grid.y else (grid.x, grid.y)
    device_work.launch_after(out, fresh, input_tensor, accumulation.ema_program(input_tensor, out.dtype, gx, gy))
    return out


def _moe_golden(input_tensor, expert_mask_tensor, topk_mask_tensor, k=32, *_, **__):
    """Expert 0's routing weight per row (tt-metal's test_moe.py golden): the top k of input + expert_mask, softmaxed
    with topk_mask added (-inf past the e experts used), summed where the index is 0; [..., 1]."""
    values, indices = torch.topk(input_tensor.float() + expert_mask_tensor.float(), int(k), dim=-1)
    weights = torch.softmax(values + topk_mask_tensor.float(), dim=-1)
    return torch.sum(weights * (indices == 0), dim=-1, keepdim=True)


@register_op("ttnn.moe", kind="rows", golden=_moe_golden, output_keyword="output_tensor")
def moe(input_tensor: Tensor, expert_mask_tensor: Tensor, topk_mask_tensor: Tensor, k: int = 32, *,
        memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Mixtral's routing weight of expert 0 per row, [N, C, H, 1] in the input's dtype: topk's sort of input +
    expert_mask over W, the top k softmaxed with topk_mask added, summed where the index is 0; MoeDeviceOperation's
    TT_FATALs (rank 4, k 32, W a power of 2 of at least 64, N*C*H whole tiles, TILE, interleaved, the masks' shapes)
    and MoeProgramFactory on core (0, 0).

    >>> x = ttnn.from_torch(torch.arange(64.0).reshape(1, 1, 1, 64).flip(-1), ttnn.bfloat16, layout=ttnn.TILE,
    ...                     device=device)
    >>> em = ttnn.from_torch(torch.zeros(1, 1, 1, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> tm = ttnn.from_torch(torch.zeros(1, 1, 1, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.moe(x, em, tm, 32).to_torch().shape  # expert 0 holds the largest score here
    torch.Size([1, 1, 1, 1])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor, expert_mask_tensor, topk_mask_tensor)
    shape, top, expert = (t.padded_shape for t in (input_tensor, topk_mask_tensor, expert_mask_tensor))
    cfg = memory_config if memory_config is not None else input_tensor.memory_config()
    where = "device_sim/ops/reduction.py"
    checks = (  # MoeDeviceOperation::validate_on_program_cache_miss, in its order and words
        (len(shape) == 4, "input_shape.rank() == 4", f"Input shape must be 4D, got {len(shape)}"),
        (k == 32, "args.k == 32", f"K must be equal to 32, pad with -infinity if necessary to get 32, got {k}"),
        (len(shape) == 4 and shape[-1] >= 64, "input_shape[-1] >= 64",
         f"Input shape inner dim {shape[-1]} must be a multiple of 64, pad with -infinity if necessary"),
        (shape[-1] & (shape[-1] - 1) == 0, "(input_shape[-1] & (input_shape[-1] - 1)) == 0",
         f"Input shape inner dim {shape[-1]} must be a power of 2, pad with -infinity if necessary"),
        (math.prod(shape[:-1]) % 32 == 0, "(input_shape[0] * input_shape[1] * input_shape[2]) % 32 == 0",
         f"Input height (combined input_shape[0-2]) {math.prod(shape[:-1])} must be a multiple of 32"),
        (not cfg.is_sharded(), "args.output_memory_config.is_sharded() == false",
         "Sharded implementation not supported yet"),
        (input_tensor.layout == Layout.TILE, "input_tensor.layout() == Layout::TILE",
         "The input must be in tiled format"),
        (top[-1] == k, "topk_shape[-1] == args.k", f"Topk shape inner dim must be equal to k, got {top[-1]}"),
        (expert[-1] == shape[-1], "expert_shape[-1] == input_shape[-1]",
         f"Expert shape inner dim must be equal to input_shape[-1], got {expert[-1]}"),
        (top[-2] == 32, "topk_shape[-2] == 32", f"Topk shape inner dim must be equal to 32, got {top[-2]}"),
        (expert[-2] == 32, "expert_shape[-2] == 32", f"Expert shape inner dim must be equal to 32, got {expert[-2]}"),
    )
    for ok, condition, message in checks:
        if not ok:
            raise tt_fatal(condition, message, where=where)
    fresh = pending_output_target(op_name) is None
    x, em, tm = (values(t, op_name) for t in (input_tensor, expert_mask_tensor, topk_mask_tensor))
    out = output(_moe_golden(x, em, tm, k), input_tensor, ins, op_name=op_name, memory_config=cfg)
    device_work.launch_after(out, fresh, input_tensor, topk_programs.moe_program(
        input_tensor, expert_mask_tensor, topk_mask_tensor, out))
    return out


def _topk_golden(input_tensor, k=32, dim=-1, largest=True, sorted=True, *_, indices_tensor=None, **__):  # noqa: A002
    # Ties keep input order (a stable sort), so the indices are the same every run.
    order = torch.sort(input_tensor, dim=dim, descending=largest, stable=True).indices.narrow(dim, 0, k)
    idx = order if indices_tensor is None else torch.gather(indices_tensor, dim, order)
    return [torch.gather(input_tensor, dim, order), idx]


@register_op("ttnn.topk", kind="rows", golden=_topk_golden)
def topk(input_tensor: Tensor, k: int = 32, dim: int = -1, largest: bool = True, sorted: bool = True,  # noqa: A002
         *, memory_config: MemoryConfig | None = None, indices_tensor: Tensor | None = None, stable: bool = False,
         op_name: str = OWN_NAME, **tt_nn_only) -> list[Tensor]:
    """[the k largest (or smallest) values along `dim`, their indices], both sorted, as torch.topk.

    Indices are UINT16 while the dim fits (UINT32 past 65536), or come from `indices_tensor` (read at the
    chosen positions, in its dtype) when given. Ties are broken by input order whether or not stable=True.

    >>> x = ttnn.from_torch(torch.tensor([[1.0, 5.0, 3.0, 4.0]]), ttnn.bfloat16, layout=ttnn.TILE,
    ...                      device=device)
    >>> values, indices = ttnn.topk(x, k=2)
    >>> values.to_torch(), indices.to_torch()
    (tensor([[5., 4.]], dtype=torch.bfloat16), tensor([[1, 3]], dtype=torch.uint16))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if input_tensor.dtype not in (DataType.BFLOAT16, DataType.BFLOAT8_B):  # TopKDeviceOperation's validate
        raise tt_fatal("input_tensor_dtype == DataType::BFLOAT16 || input_tensor_dtype == DataType::BFLOAT8_B",
                       f"Input tensor must be BFLOAT16, or BFLOAT8_B, got: {input_tensor.dtype!r}",
                       where="device_sim/ops/reduction.py")
    ins = device_inputs(op_name, input_tensor, indices_tensor)
    x = values(input_tensor, op_name)
    n = x.shape[dim] if -x.dim() <= dim < x.dim() else None
    if n is None or not 1 <= k <= n:
        raise ValueError(f"{op_name}: k={k} along dim {dim} does not fit shape {list(x.shape)}; "
                         f"k must be between 1 and that dim's size")
    given = values(indices_tensor, op_name) if indices_tensor is not None else None
    if given is not None and tuple(given.shape) != tuple(x.shape):
        raise ValueError(f"{op_name}: indices_tensor has shape {list(given.shape)}, not the input's {list(x.shape)}")
    vals, idx = _topk_golden(x, k, dim, largest, indices_tensor=given)
    like_idx = indices_tensor if indices_tensor is not None else input_tensor
    idx_dtype = None if indices_tensor is not None else index_dtype(n)
    outs = [output(vals, input_tensor, ins, op_name=op_name, memory_config=memory_config),
            output(idx, like_idx, ins, op_name=op_name, memory_config=memory_config, dtype=idx_dtype)]
    # TopKDeviceOperation, with the transposes around it for the second-to-last dim (device_sim.programs.topk)
    programs = topk_programs.topk_programs(input_tensor, k, dim, tt_nn_only.get("sub_core_grids"))
    try:
        device_work.launch_after(outs[0], True, input_tensor, programs)
    except RuntimeError:
        outs[1]._free()  # a clash: neither fresh output is kept
        raise
    return outs


# -- the cores' random seeds (tt-metal's reduction/manual_seed) ------------------------------------------------------


@register_op("ttnn.manual_seed", no_golden="it returns nothing: it sets the cores' random number generators' seeds")
def manual_seed(seeds=0, *, device=None, user_ids=None, sub_core_grids=None, op_name: str = OWN_NAME) -> None:
    """Seed the random number generators of the device's cores, as ttnn.sampling draws from them: one seed for every
    core, or for core `user_ids` (0..31), or for each core a UINT32 ROW_MAJOR `user_ids` table names (with one seed
    each from a `seeds` table of the same shape). ManualSeedDeviceOperation's program factory by what is a tensor;
    its TT_FATALs. device_sim's ops draw from torch, so the seeds change no values here.

    >>> ttnn.manual_seed(42, device=device)
    """
    here = "device_sim/ops/reduction.py"

    def fatal(condition: str, message: str):
        return tt_fatal(condition, f"{op_name}: {message}", where=here)

    seed_table, id_table = isinstance(seeds, Tensor), isinstance(user_ids, Tensor)
    if seed_table:
        for name, t in (("Seeds", seeds),) + ((("User IDs", user_ids),) if id_table else ()):
            if t.dtype != DataType.UINT32:
                raise fatal("dtype == UINT32", f"{name} tensor must be of type UINT32.")
            if t.layout != Layout.ROW_MAJOR:
                raise fatal("layout == ROW_MAJOR", f"{name} tensor must have ROW_MAJOR layout.")
        if id_table and tuple(seeds.shape) != tuple(user_ids.shape):
            raise fatal("seeds_shape == user_ids_shape", "Seeds tensor and User IDs tensor must have the same shape.")
        if user_ids is not None and not id_table:
            raise fatal("!operation_attributes.user_ids.has_value()",
                        "Seeds were provided as a tensor, so user_ids must not be provided as a scalar.")
        if not id_table:
            raise fatal("user_ids tensor", "A seeds tensor needs a user_ids tensor of the same shape.")
        device = seeds.device()
    elif id_table:
        if user_ids.dtype != DataType.UINT32 or user_ids.layout != Layout.ROW_MAJOR:
            raise fatal("dtype == UINT32 && layout == ROW_MAJOR",
                        "User IDs tensor must be of type UINT32 with ROW_MAJOR layout.")
        device = user_ids.device()
    elif user_ids is not None and not 0 <= int(user_ids) <= 31:
        raise fatal("user_ids >= 0 && user_ids <= 31", "User IDs scalar must be in the range [0, 31].")
    if device is None:
        raise fatal("device.has_value()", "Device must be provided when seeds is a uint32_t value.")
    chips = device.get_devices() if hasattr(device, "get_devices") else [device]  # every chip of a mesh
    ranges = tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in sub_core_grids.ranges()) if sub_core_grids else ()
    if seed_table:
        factory, cb_tensors, core = ("ManualSeedSetSeedsSetCoresProgramFactory",
                                     (user_ids.dtype, seeds.dtype, seeds.dtype), None)
    elif id_table:
        factory, cb_tensors, core = "ManualSeedSingleSeedSetCoresProgramFactory", (user_ids.dtype, user_ids.dtype), None
    elif user_ids is not None:
        factory, cb_tensors, core = "ManualSeedSingleSeedSingleCoreProgramFactory", (), int(user_ids)
    else:
        factory, cb_tensors, core = "ManualSeedSingleSeedToAllCoresProgramFactory", (), None
    program = reduction.manual_seed_program(chips[0], factory, cb_tensors, core, ranges)
    # the seeds each user's core takes, which ttnn.sampling's draws then follow
    users = values(user_ids).reshape(-1).tolist() if id_table else [int(user_ids)] if user_ids is not None else \
        range(32)
    seeded = dict(zip(users, values(seeds).reshape(-1).tolist() if seed_table else [int(seeds)] * len(users)))
    for chip in chips:
        device_work.launch(chip, program)
        seed_cores(chip, seeded)


# -- losses (tt-metal's operations/loss: loss.cpp) ---------------------------------------------------------------------


class LossReductionMode(enum.Enum):
    """loss_types.hpp's LossReductionMode: the loss per element (NONE), or its MEAN or SUM over every element."""

    NONE = 0
    MEAN = 1
    SUM = 2


def _loss_golden(square: bool):
    # TT-NN's golden (ttnn/operations/losses.py) is torch's loss, its reduction torch's "none" / "mean" / "sum"
    # (nightly test_losses.py passes those); the op's own LossReductionMode is taken too, for a capture's golden
    loss = torch.nn.MSELoss if square else torch.nn.L1Loss

    def golden(input_reference, input_prediction, *_, reduction="none", **__):
        mode = reduction.name.lower() if isinstance(reduction, LossReductionMode) else reduction
        return loss(reduction=mode)(input_reference.float(), input_prediction.float())

    return golden


def _loss(name: str, square: bool):
    activation = UnaryOpType.SQUARE if square else UnaryOpType.ABS

    def op(input_reference: Tensor, input_prediction: Tensor, *, reduction=LossReductionMode.NONE,
           memory_config: MemoryConfig | None = None, output_tensor: Tensor | None = None,
           op_name: str = OWN_NAME) -> Tensor:
        if not isinstance(reduction, LossReductionMode):
            raise TypeError(f"{op_name}(): reduction must be a ttnn.LossReductionMode, got {reduction!r}")
        # loss.cpp's composite: subtract with the loss's unary fused, then sum or mean over every element
        result = eltwise.subtract(input_reference, input_prediction, memory_config=memory_config,
                                  output_tensor=output_tensor, activations=[UnaryWithParam(activation)])
        cfg = memory_config if memory_config is not None else input_reference.memory_config()
        if reduction == LossReductionMode.SUM:
            return sum(result, memory_config=cfg)
        if reduction == LossReductionMode.MEAN:
            return mean(result, memory_config=cfg)
        return result

    what = "squared" if square else "absolute"
    op.__doc__ = f"""The {what} difference of the two tensors per element, or its mean or sum (reduction=
    ttnn.LossReductionMode.MEAN / SUM): loss.cpp's subtract with {activation.name} fused, then ttnn.mean or
    ttnn.sum over every element.

    >>> a = ttnn.from_torch(torch.tensor([[1.0, 2.0]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.tensor([[3.0, 1.0]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.{name}(a, b).to_torch()
    tensor([[{"4., 1." if square else "2., 1."}]], dtype=torch.bfloat16)
    """
    return register_op(f"ttnn.{name}", golden=_loss_golden(square))(op)


mse_loss = _loss("mse_loss", square=True)
l1_loss = _loss("l1_loss", square=False)


# -- unary composites over H and W (tt-metal a8c5af0f unary_composite_op.cpp; bound with one keyword, memory_config)


def _var_hw_golden(input_tensor, *_, **__):
    return torch.var(input_tensor.float(), dim=(-2, -1), keepdim=True, correction=0)


def _std_hw_golden(input_tensor, *_, **__):
    return torch.sqrt(_var_hw_golden(input_tensor))


def _normalize_golden(dims):
    # The op's own arithmetic: divided by the population std (_std divides by H * W). TT-NN's goldens
    # (ttnn/operations/unary.py) call torch.std, unbiased, which is 1 / (2 H W) larger (2.4e-4 for a 32x64 plane):
    # tt-metal's tests compare by PCC, which that scale leaves at 1, while a golden comparison of the op against it
    # would show the golden's difference as the op's error.
    def golden(input_tensor, *_, **__):
        x = input_tensor.float()
        return (x - x.mean(dims, keepdim=True)) / x.std(dims, keepdim=True, correction=0)

    return golden


_normalize_hw_golden = _normalize_golden((-2, -1))
_normalize_global_golden = _normalize_golden((0, 1, 2, 3))


def _variance_hw(y: Tensor, y_minus_mean_y: Tensor, memory_config) -> Tensor:
    """detail::_variance_impl: the squares of y - mean, summed over H and W and scaled by 1 / (H * W) of the padded
    shape (correction 0: a population variance), in one reduce."""
    padded = y.padded_shape
    squares = eltwise.square(y_minus_mean_y, memory_config=memory_config)
    return sum(squares, [2, 3], True, scalar=1.0 / (padded[-1] * padded[-2]))


def _centered_hw(y: Tensor) -> Tensor:
    """y minus its mean over H and W: ttnn::mean over dims {2, 3}, then a bcast SUB over HW."""
    return eltwise.bcast(y, mean(y, [2, 3], True), eltwise.BcastOpMath.SUB, eltwise.BcastOpDim.HW)


@register_op("ttnn.var_hw", kind="rows", golden=_var_hw_golden)
def var_hw(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME) -> Tensor:
    """The variance over H and W of each batch and channel, [N, C, 1, 1] (population: divided by H * W), as
    unary_composite_op.cpp's var_hw: mean, a bcast subtract, square, then a sum scaled by 1 / (H * W).

    >>> x = ttnn.from_torch(torch.arange(2048.0).reshape(1, 2, 32, 32), ttnn.float32, layout=ttnn.TILE,
    ...                     device=device)
    >>> torch.allclose(ttnn.var_hw(x).to_torch(), ttnn.var_hw.golden_function(x.to_torch()), rtol=1e-3)
    True
    """
    device_inputs(op_name, input_tensor)
    cfg = memory_config if memory_config is not None else input_tensor.memory_config()
    return _variance_hw(input_tensor, _centered_hw(input_tensor), cfg)


@register_op("ttnn.std_hw", kind="rows", golden=_std_hw_golden)
def std_hw(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME) -> Tensor:
    """The standard deviation over H and W of each batch and channel, [N, C, 1, 1]: the sqrt of var_hw.

    >>> x = ttnn.from_torch(torch.arange(2048.0).reshape(1, 2, 32, 32), ttnn.float32, layout=ttnn.TILE,
    ...                     device=device)
    >>> torch.allclose(ttnn.std_hw(x).to_torch(), ttnn.std_hw.golden_function(x.to_torch()), rtol=1e-3)
    True
    """
    return eltwise.sqrt(var_hw(input_tensor, memory_config=memory_config), memory_config=memory_config)


@register_op("ttnn.normalize_hw", kind="rows", golden=_normalize_hw_golden)
def normalize_hw(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
                 op_name: str = OWN_NAME) -> Tensor:
    """Each batch and channel minus its mean over H and W, divided by its standard deviation there (population), as
    unary_composite_op.cpp's normalize_hw: mean, a bcast subtract, _std, reciprocal, multiply.

    >>> x = ttnn.from_torch(torch.arange(2048.0).reshape(1, 2, 32, 32), ttnn.float32, layout=ttnn.TILE,
    ...                     device=device)
    >>> y = ttnn.normalize_hw(x).to_torch()
    >>> torch.allclose(y, ttnn.normalize_hw.golden_function(x.to_torch()), rtol=1e-3, atol=2e-3)
    True
    """
    device_inputs(op_name, input_tensor)
    centered = _centered_hw(input_tensor)
    std_y = eltwise.sqrt(_variance_hw(input_tensor, centered, memory_config), memory_config=memory_config)
    return eltwise.multiply(centered, eltwise.reciprocal(std_y, memory_config=memory_config),
                            memory_config=memory_config)


@register_op("ttnn.normalize_global", kind="rows", golden=_normalize_global_golden)
def normalize_global(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
                     op_name: str = OWN_NAME) -> Tensor:
    """The tensor minus its mean over every element, divided by its standard deviation (population), as
    unary_composite_op.cpp's normalize_global: a rank-4 input reshaped on device to [1, 1, H, W * C * N],
    normalize_hw, and reshaped back.

    >>> x = ttnn.from_torch(torch.arange(2048.0).reshape(2, 1, 32, 32), ttnn.float32, layout=ttnn.TILE,
    ...                     device=device)
    >>> y = ttnn.normalize_global(x).to_torch()
    >>> torch.allclose(y, ttnn.normalize_global.golden_function(x.to_torch()), rtol=1e-3, atol=2e-3)
    True
    """
    device_inputs(op_name, input_tensor)
    padded = input_tensor.padded_shape
    if len(padded) != 4:
        raise tt_fatal("y.padded_shape().rank() == 4", f"Cannot support non-rank 4 Tensor (got shape "
                       f"{list(input_tensor.shape)}); reshape it to [N, C, H, W] first",
                       where="device_sim/ops/reduction.py")
    n, c, h, w = padded
    # reshape_on_device folds N, C and W into W: [N, C, H, W] -> [1, 1, H, W * C * N] (its TILE form; the values of
    # each H row are W * C * N wide, so a mean over H and W is a mean over every element)
    y_hw = reshape_on_device(input_tensor, 1, 1, h, w * c * n)
    return reshape_on_device(normalize_hw(y_hw, memory_config=memory_config), n, c, h, w)
