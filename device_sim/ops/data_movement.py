"""Shape and data-movement ops with TT-NN's signatures: squeeze, stack, expand, tilize, sort, reallocate, ...

    import torch, device_sim as ttnn
    device = ttnn.open_device(0)
    t = ttnn.from_torch(torch.randn(32, 64), layout=ttnn.TILE, device=device)
    t4 = ttnn.unsqueeze_to_4D(t)                      # [1, 1, 32, 64]
    s = ttnn.stack([t, t], dim=0)                     # [2, 32, 64]
    values, indices = ttnn.sort(t, dim=-1, descending=True)
    t = ttnn.reallocate(t)                            # same values, moved into the freed space

Each op is one recorded op with one output buffer, as in TT-NN. Where TT-NN makes a
zero-cost view (squeeze, unsqueeze, view), device_sim still gives the output its own buffer.
"""

from __future__ import annotations

import builtins
import math

import torch

from device_sim import device_work, dtypes, placement
from device_sim.ops.common import check_tt_nn_only, device_inputs, held, output, values
from device_sim.ops.core import reshape, to_layout, untilized_dtype
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import bcast_to as bcast_to_programs
from device_sim.programs import data_movement as programs
from device_sim.programs import fill_pad as fill_pad_programs
from device_sim.programs import gather as gather_programs
from device_sim.programs import index_fill as index_fill_programs
from device_sim.programs import repeat as repeat_programs
from device_sim.programs import scatter as scatter_programs
from device_sim.programs import shape as shape_programs
from device_sim.programs import sort as sort_programs
from device_sim.registry import OWN_NAME, Trait, pending_output_target, register_op
from device_sim.tensor import Tensor, reshaped
from device_sim.types import (
    BufferType,
    CoreCoord,
    CoreRange,
    CoreRangeSet,
    DataType,
    Layout,
    MemoryConfig,
    ShardOrientation,
    ShardSpec,
    TensorMemoryLayout,
)

_HERE = "device_sim/ops/data_movement.py"  # where a TT_FATAL-worded error says it was checked


def _out(op_name: str, input_tensor: Tensor, value: torch.Tensor, memory_config, tt_nn_only, *, padded: bool = False,
         **kw) -> Tensor:
    """The common tail of a one-input movement op: check keywords, place `value` like the input. A `layout=` in
    `kw` is the tilize / untilize family (padded: its forms that pad or unpad)."""
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    out = output(value.contiguous(), input_tensor, ins, op_name=op_name, memory_config=memory_config, **kw)
    if "layout" in kw:  # the tilize / untilize family: their device operation (device_sim.programs)
        program = programs.layout_program(input_tensor, out, padded=padded)
        device_work.launch_after(out, True, input_tensor, program)
    return out


def _vals(op_name: str, t) -> torch.Tensor:
    """A tensor argument's values as it holds them (common.held): this module's ops move or pick values."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{op_name}: expected a ttnn tensor, got {type(t).__name__}")
    return held(t, op_name)


def _dim(op_name: str, dim: int, rank: int) -> int:
    """`dim` made non-negative, or an error naming the rank (torch's message says 'Dimension out of range')."""
    if not -rank <= int(dim) < rank:
        raise IndexError(f"{op_name}: dim {dim} is out of range for a tensor of rank {rank} "
                         f"(use -{rank} .. {rank - 1})")
    return int(dim) % rank


# -- rank changes --------------------------------------------------------------------------------

def _squeeze_golden(t, dim=None, *_, **__):
    if dim is None:
        return t.squeeze()
    dims = [dim] if isinstance(dim, int) else list(dim)
    return t.squeeze(tuple(dims))


@register_op("ttnn.squeeze", kind="free", traits={Trait.VIEW}, golden=_squeeze_golden)
def squeeze(input_tensor: Tensor, dim=None, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Drop dims of size 1: all of them (dim=None), one (int) or several (list); a dim of another size stays.

    >>> x = ttnn.from_torch(torch.zeros(1, 2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.squeeze(x, 0).shape
    Shape([2, 3])
    """
    v = _vals(op_name, input_tensor)
    dims = [dim] if isinstance(dim, int) else (list(dim) if dim is not None else None)
    if dims is not None:  # squeeze.cpp's checks, in its order (dims made non-negative, largest first)
        rank = v.dim()
        if rank == 0:
            if not dims or (len(dims) == 1 and dims[0] in (0, -1)):
                return input_tensor
            raise tt_fatal("input_tensor_rank == 0", f"Dimension out of range (expected to be of [-1, 0], but got "
                                                     f"{dims[0]})", _HERE)
        dims = sorted((d + rank if d < 0 else d for d in dims), reverse=True)
        for i, d in enumerate(dims):
            if i and d == dims[i - 1]:
                raise tt_fatal("dim != dims[i - 1]", f"dim {d} appears multiple times in the list of dims", _HERE)
            if not 0 <= d < rank:
                raise tt_fatal("(dim >= 0) && (dim < input_tensor_rank)", f"Dimension out of range (expected to be "
                                                                         f"in range of [{-rank},{rank - 1}], but got "
                                                                         f"{d})", _HERE)
    return _reshape_like_tt_nn(op_name, input_tensor, _squeeze_golden(v, dims), tt_nn_only)


def _unsqueeze_golden(t, dim, *_, **__):
    return t.unsqueeze(dim)


@register_op("ttnn.unsqueeze", kind="free", traits={Trait.VIEW}, golden=_unsqueeze_golden)
def unsqueeze(input_tensor: Tensor, dim: int, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Insert a dim of size 1 at `dim` (negative counts from the end of the result, as in torch).

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.unsqueeze(x, 0).shape
    Shape([1, 2, 3])
    """
    v = _vals(op_name, input_tensor)
    rank = v.dim()
    if not -rank - 1 <= int(dim) <= rank:  # unsqueeze.cpp's TT_FATAL (a RuntimeError; test_unsqueeze.py expects one)
        raise tt_fatal("(dim >= min_dim) && (dim <= max_dim)", f"Dimension out of range (expected to be in range of "
                       f"[{-rank - 1},{rank}], but got {dim})", where="device_sim/ops/data_movement.py")
    d = _dim(op_name, dim, rank + 1)
    return _reshape_like_tt_nn(op_name, input_tensor, v.unsqueeze(d), tt_nn_only)


def _reshape_like_tt_nn(op_name: str, input_tensor: Tensor, value: torch.Tensor, tt_nn_only) -> Tensor:
    """squeeze and unsqueeze call ttnn::reshape in TT-NN (unsqueeze.cpp): a view where reshape makes one."""
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    view = reshaped(input_tensor, value.shape)
    return view if view is not None else _out(op_name, input_tensor, value, None, None)


def _to_4d(t):
    if t.dim() > 4:
        raise ValueError(f"ttnn.unsqueeze_to_4D: shape {list(t.shape)} has rank {t.dim()} > 4; "
                         f"reshape it to 4 dims first")
    return t.reshape((1,) * (4 - t.dim()) + tuple(t.shape))


@register_op("ttnn.unsqueeze_to_4D", kind="free", traits={Trait.VIEW}, golden=lambda t, *_, **__: _to_4d(t))
def unsqueeze_to_4D(input_tensor: Tensor, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:  # noqa: N802  (TT-NN's name)
    """Prepend dims of size 1 up to rank 4 ([32, 64] -> [1, 1, 32, 64]). TT-NN (core.cpp) returns a rank-4
    tensor itself and reshapes the others, so on a device this is a view of the input's buffer.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.unsqueeze_to_4D(x).shape
    Shape([1, 1, 2, 3])
    """
    return _reshape_like_tt_nn(op_name, input_tensor,
                               _to_4d(_vals(op_name, input_tensor)), tt_nn_only)


def _view_golden(t, shape, *_, **__):
    return t.reshape(tuple(int(s) for s in shape))


@register_op("ttnn.view", kind="free", traits={Trait.VIEW}, golden=_view_golden)
def view(input_tensor: Tensor, shape, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The same values in `shape` (one -1 allowed), over the input's own buffer: TT-NN's view never copies.

    TT-NN's doc names when a view keeps the data whole (the last dim unchanged; in TILE, the second-last
    too or no padding in it); outside that it would scramble a device tensor, and TT-NN's view.cpp refuses it
    with a TT_FATAL (RuntimeError), as it refuses a change of volume.

    >>> x = ttnn.from_torch(torch.arange(64.0).reshape(2, 32), device=device)
    >>> ttnn.view(x, (1, 2, 32)).shape
    Shape([1, 2, 32])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    v = _vals(op_name, input_tensor)
    try:
        r = _view_golden(v, shape)
    except RuntimeError:
        raise tt_fatal("shape.volume() == tensor.logical_volume()", f"{op_name}: invalid view, logical volumes are "
                       f"changing from {v.numel()} (shape {list(v.shape)}) to {list(shape)}; use ttnn.reshape",
                       "device_sim/ops/data_movement.py") from None
    if input_tensor.buffer is None:  # a host tensor: its values, in the new shape
        return _out(op_name, input_tensor, r, None, None)
    out = reshaped(input_tensor, r.shape, None)
    if out is None:
        raise tt_fatal("the last dim, and in TILE the second-last or its lack of padding, are kept",
                       f"{op_name}: viewing {input_tensor.layout!r} tensor {input_tensor.tensor_id} of shape "
                       f"{list(v.shape)} as {list(r.shape)} would scramble it on the device; use ttnn.reshape",
                       "device_sim/ops/data_movement.py")
    return out


@register_op("ttnn.experimental.view", kind="free", traits={Trait.VIEW},
             golden=lambda t, *shape, **__: _view_golden(t, shape[0] if len(shape) == 1 else shape))
def experimental_view(input_tensor: Tensor, *shape, op_name: str = OWN_NAME) -> Tensor:
    """ttnn.view's view, its shape given as one sequence or as N, C, H, W (TT-NN's view_nanobind.cpp).

    >>> x = ttnn.from_torch(torch.arange(64.0).reshape(2, 32), device=device)
    >>> ttnn.experimental.view(x, 1, 1, 2, 32).shape
    Shape([1, 1, 2, 32])
    """
    return view.op.function(input_tensor, shape[0] if len(shape) == 1 else shape, op_name=op_name)


# -- joining, repeating, broadcasting ------------------------------------------------------------

def _stack_golden(tensors, dim=0, *_, **__):
    return torch.stack(list(tensors), dim)


@register_op("ttnn.stack", golden=_stack_golden)
def stack(tensors, dim: int = 0, *, memory_config: MemoryConfig | None = None,
          op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Join equal-shaped tensors along a new dim `dim`.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.stack([x, x], dim=0).shape
    Shape([2, 2, 3])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{op_name} needs at least one tensor")
    vs = [_vals(op_name, t) for t in tensors]
    if len({tuple(v.shape) for v in vs}) > 1:
        raise ValueError(f"{op_name}: every tensor must have the same shape, got {[list(v.shape) for v in vs]}")
    d = _dim(op_name, dim, vs[0].dim() + 1)
    ins = device_inputs(op_name, *tensors)
    out = output(torch.stack(vs, d), tensors[0], ins, op_name=op_name, memory_config=memory_config)
    # TT-NN's stack unsqueezes each input (a view when the new dim is outside the last two) and concatenates:
    # one ConcatDeviceOperation (interleaved TILE; a new dim among the last two would reshape first: not modelled)
    if out.device() is not None and d < out._value.dim() - 2 and all(
            t.layout == Layout.TILE and not t.is_sharded() for t in (*tensors, out)):
        device_work.launch_after(out, True, out, programs.concat_program(out))
    return out


def _roll_args(op_name: str, rank: int, shifts, dim) -> tuple[list[int], list[int]]:
    """roll's three overloads (roll_nanobind.cpp): (shifts, dims) lists, (shift, dim) ints, and a lone shift, which
    rolls the flattened tensor (dim None here). Checked as roll.cpp's TT_FATALs check them."""
    if dim is None:
        return [int(shifts)], []
    shifts = [int(shifts)] if isinstance(shifts, int) else [int(v) for v in shifts]
    dims = [int(dim)] if isinstance(dim, int) else [int(v) for v in dim]
    if not shifts or len(shifts) != len(dims):
        raise tt_fatal("!shifts.empty() && shifts.size() == input_dims.size()",
                       f"Roll expects shifts {len(shifts)} and dims {len(dims)} to have the same length",
                       where=_HERE)
    for d in dims:
        if not -rank <= d < rank:
            raise tt_fatal("dim >= -num_dims && dim < num_dims", f"Invalid dimension index {d}. The dimension "
                           f"must be within the range [{-rank}, {rank - 1}].", where=_HERE)
    return shifts, dims


@register_op("ttnn.roll", kind="move", golden=lambda t, shifts, dim=None, *_, **__: torch.roll(t, shifts, dim))
def roll(input_tensor: Tensor, shifts, dim=None, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The tensor's values shifted along each of `dim` by `shifts` (wrapping round), as torch.roll; with no dim, the
    flattened tensor's. TT-NN's composite (roll.cpp) slices each shifted dim in two and concatenates the halves the
    other way round; device_sim records one op and launches that concat per shifted dim.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.roll(x, [1], [1]).to_torch()
    tensor([[2., 0., 1.],
            [5., 3., 4.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    v = held(input_tensor, op_name)
    shifts, dims = _roll_args(op_name, v.dim(), shifts, dim)
    r = torch.roll(v, shifts, dims) if dims else torch.roll(v.reshape(-1), shifts[0]).reshape(v.shape)
    ins = device_inputs(op_name, input_tensor)
    out = output(r, input_tensor, ins, op_name=op_name)
    moved = sum(1 for s, d in zip(shifts, dims or [0]) if s % (v.shape[d] if dims else v.numel()))
    if out.device() is not None and moved and not out.is_sharded():
        device_work.launch_after(out, True, input_tensor, (programs.concat_program(out),) * moved)
    return out


def _repeat_interleave_golden(t, repeats, dim, *_, **__):
    return torch.repeat_interleave(t, repeats, dim)


@register_op("ttnn.repeat_interleave", golden=_repeat_interleave_golden)
def repeat_interleave(input_tensor: Tensor, repeats: int, dim: int, *, memory_config: MemoryConfig | None = None,
                      op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Repeat each element `repeats` times along `dim` ([a, b] -> [a, a, b, b]).

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.repeat_interleave(x, 2, dim=0).to_torch()
    tensor([[0., 1., 2.],
            [0., 1., 2.],
            [3., 4., 5.],
            [3., 4., 5.]])
    """
    v = _vals(op_name, input_tensor)
    d = _dim(op_name, dim, v.dim())
    if isinstance(repeats, Tensor):
        repeats = values(repeats).to(torch.int64)
    out = _out(op_name, input_tensor, torch.repeat_interleave(v, repeats, d), memory_config,
               tt_nn_only)
    if isinstance(repeats, int):  # TT-NN takes one count; its composite's programs (device_sim.programs.repeat)
        device_work.launch_after(out, True, input_tensor,
                                 repeat_programs.repeat_interleave_programs(input_tensor, repeats, d, out))
    return out


def _expand_golden(t, output_shape, *_, **__):
    return t.expand(tuple(int(s) for s in output_shape))


@register_op("ttnn.expand", golden=_expand_golden)
def expand(input_tensor: Tensor, output_shape, *, memory_config: MemoryConfig | None = None,
           op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Broadcast dims of size 1 up to `output_shape` (-1 keeps a dim), as torch.Tensor.expand.

    >>> x = ttnn.from_torch(torch.tensor([[1.0, 2.0, 3.0]]), layout=ttnn.TILE, device=device)
    >>> ttnn.expand(x, (2, 3)).to_torch()
    tensor([[1., 2., 3.],
            [1., 2., 3.]])
    """
    v = _vals(op_name, input_tensor)
    try:
        r = _expand_golden(v, output_shape)
    except RuntimeError:
        raise ValueError(f"{op_name}: cannot expand shape {list(v.shape)} to {list(output_shape)}; only dims "
                         f"of size 1 expand, and -1 keeps a dim") from None
    out = _out(op_name, input_tensor, r, memory_config, tt_nn_only)
    # TT-NN's expand is ttnn::repeat by output / input per dim (the input's dims aligned to the right, as torch)
    have = (1,) * (r.dim() - v.dim()) + tuple(v.shape)
    reps = tuple(n // h if h else 1 for n, h in zip(r.shape, have))
    device_work.launch_after(out, True, input_tensor, repeat_programs.repeat_programs(input_tensor, reps, out))
    return out


def _broadcast_to_golden(t, output_shape, *_, **__):
    return t.broadcast_to(tuple(output_shape))


@register_op("ttnn.experimental.broadcast_to", output_keyword="output", golden=_broadcast_to_golden)
def broadcast_to(input: Tensor, output_shape, *, memory_config: MemoryConfig | None = None,  # noqa: A002
                 op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The input broadcast to `output_shape` (dims of size 1 repeated, dims aligned to the right; at most 4-D), as
    torch.Tensor.broadcast_to, in one BcastToOperation (experimental/bcast_to); `output=` writes into a tensor.

    >>> x = ttnn.from_torch(torch.tensor([[1.0, 2.0]]), layout=ttnn.TILE, device=device)
    >>> ttnn.experimental.broadcast_to(x, ttnn.Shape([2, 2])).to_torch()
    tensor([[1., 2.],
            [1., 2.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    v = held(input, op_name)
    shape = [int(n) for n in output_shape]
    where = _HERE
    if v.dim() > len(shape):
        raise tt_fatal("input_shape.size() <= output_shape.size()", f"Input tensor shape {list(v.shape)} must be at "
                       f"least as large as the broadcast shape {shape}, which it is not", where=where)
    if len(shape) > 4:
        raise tt_fatal("input_shape.size() <= 4 and output_shape.size() <= 4", f"Tensor shape and broadcast size "
                       f"{list(v.shape)} {shape} must be at most 4D", where=where)
    for i in range(-1, -v.dim() - 1, -1):
        if v.shape[i] not in (shape[i], 1):
            raise tt_fatal("(input_dim == output_dim) || (input_dim == 1)", f"Input dimension {i} (size "
                           f"{v.shape[i]}) cannot be broadcast to output dimension {i} (size {shape[i]})", where=where)
    if input.layout != Layout.TILE or input.is_sharded():
        raise tt_fatal("input.layout() == Layout::TILE", "bcast_to: the input must be an interleaved TILE tensor",
                       where=where)
    fresh = pending_output_target(op_name) is None
    out = output(v.broadcast_to(tuple(shape)).contiguous(), input, device_inputs(op_name, input), op_name=op_name,
                 memory_config=memory_config)
    if out.device() is not None:
        device_work.launch_after(out, fresh, input, bcast_to_programs.bcast_to_program(out))
    return out


def _index_fill_golden(t, dim, index, value, *_, **__):
    return torch.index_fill(t, dim, index.long(), value)


@register_op("ttnn.index_fill", golden=_index_fill_golden)
def index_fill(input: Tensor, dim: int, index: Tensor, value, *,  # noqa: A002 (TT-NN's name)
               memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The input with every slice along `dim` that `index` (1-D, UINT32) names set to `value`, as torch.index_fill:
    one IndexFillOperation over a ROW_MAJOR interleaved input, checked as index_fill_device_operation.cpp checks.

    >>> x = ttnn.from_torch(torch.zeros(3, 2), device=device)
    >>> i = ttnn.from_torch(torch.tensor([0, 2]), device=device)
    >>> ttnn.index_fill(x, 0, i, 1.5).to_torch()
    tensor([[1.5000, 1.5000],
            [0.0000, 0.0000],
            [1.5000, 1.5000]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)

    def check(ok: bool, condition: str, message: str) -> None:
        if not ok:
            raise tt_fatal(condition, f"Index fill: {message}", where=_HERE)

    check(isinstance(input, Tensor) and input.device() is not None, "input.storage_type() == StorageType::DEVICE",
          "Input must be on device")
    check(input.layout == Layout.ROW_MAJOR, "input.layout() == Layout::ROW_MAJOR", "Only supporting row major layout")
    check(not input.is_sharded() and (memory_config is None or not memory_config.is_sharded()),
          "memory_layout() == TensorMemoryLayout::INTERLEAVED", "Not currently supporting sharding")
    check(isinstance(index, Tensor) and index.device() is input.device(), "index.device() == input.device()",
          "Index tensor must be on the same device as input")
    check(len(index.shape) == 1, "index.logical_shape().rank() == 1", "Index tensor must be 1D")
    check(index.dtype == DataType.UINT32, "index.dtype() == DataType::UINT32",
          f"Index tensor must have UINT32 dtype; got {index.dtype}")
    check(0 <= dim < len(input.shape), "dim < input.logical_shape().rank() && dim >= 0", "Invalid dimension")
    floats = input.dtype in (DataType.BFLOAT16, DataType.FLOAT32)
    check((floats and isinstance(value, float)) or (input.dtype == DataType.INT32 and isinstance(value, int)),
          "(is_float_dtype && value_is_float) || (is_int_dtype && value_is_int)",
          f"Value type must match input tensor dtype. Got {input.dtype} input dtype with "
          f"{'float' if isinstance(value, float) else 'int'} value type")
    r = torch.index_fill(held(input, op_name), dim, values(index, op_name).long(), value)
    out = output(r, input, device_inputs(op_name, input, index), op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, True, input, index_fill_programs.index_fill_program(input, index))
    return out


def _chunk_golden(t, chunks, dim=0, *_, **__):
    return list(torch.chunk(t, chunks, dim))


@register_op("ttnn.chunk", golden=_chunk_golden)
def chunk(input_tensor: Tensor, chunks: int, dim: int = 0, *, op_name: str = OWN_NAME, **tt_nn_only) -> list[Tensor]:
    """`chunks` near-equal pieces along `dim` (the last may be smaller), as torch.chunk.

    >>> x = ttnn.from_torch(torch.zeros(4, 64), layout=ttnn.TILE, device=device)
    >>> [t.shape for t in ttnn.chunk(x, 2, dim=1)]
    [Shape([4, 32]), Shape([4, 32])]
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    v = _vals(op_name, input_tensor)
    d = _dim(op_name, dim, v.dim())
    ins = device_inputs(op_name, input_tensor)
    outs = [output(p.contiguous(), input_tensor, ins, op_name=op_name) for p in torch.chunk(v, chunks, d)]
    for out, piece in zip(outs, shape_programs.split_programs(input_tensor, outs, d, split_op=False) or ()):
        device_work.launch_after(out, True, input_tensor, piece)  # one slice per piece, as chunk.cpp runs them
    return outs


# -- layout changes ------------------------------------------------------------------------------

def _identity(t, *_, **__):
    return t


@register_op("ttnn.tilize", kind="move", golden=_identity)
def tilize(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None, dtype: DataType | None = None,
           use_multicore: bool = True, use_low_perf: bool = False, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Row-major to TILE layout; the logical shape stays and the last two dims pad to whole tiles.
    `use_multicore=False` or `use_low_perf=True` run TT-NN's single-core factory (a tile a block when low-perf).

    >>> x = ttnn.from_torch(torch.rand(32, 64), dtype=ttnn.bfloat16, device=device)
    >>> ttnn.tilize(x).layout
    Layout.TILE
    """
    if use_multicore and not use_low_perf:
        return _out(op_name, input_tensor, _vals(op_name, input_tensor), memory_config, tt_nn_only,
                    dtype=dtype, layout=Layout.TILE)
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    out = output(_vals(op_name, input_tensor).contiguous(), input_tensor, device_inputs(op_name, input_tensor),
                 op_name=op_name, memory_config=memory_config, dtype=dtype, layout=Layout.TILE)
    device_work.launch_after(out, True, input_tensor, programs.tilize_single_program(input_tensor, out, use_low_perf))
    return out


@register_op("ttnn.untilize", kind="move", golden=_identity)
def untilize(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
             op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """TILE to row-major layout; the tile padding goes.

    >>> x = ttnn.from_torch(torch.rand(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.untilize(x).layout
    Layout.ROW_MAJOR
    """
    return _out(op_name, input_tensor, _vals(op_name, input_tensor), memory_config, tt_nn_only,
                dtype=untilized_dtype(input_tensor.dtype), layout=Layout.ROW_MAJOR)


def _check_padded_shape(op_name: str, shape, output_padded_shape) -> list[int]:
    """TilizeWithValPaddingDeviceOperation's checks of the padded shape (tilize_with_val_padding_device_operation.cpp):
    the input's rank, no dim smaller than the input's, the last two whole tiles."""
    out = [int(s) for s in output_padded_shape]
    if len(out) != len(shape) or any(o < d for o, d in zip(out, shape)):
        raise ValueError(f"{op_name}: output_tensor_shape {out} must have the input's rank {len(shape)} and no dim "
                         f"smaller than the input's {list(shape)}")
    if out[-1] % dtypes.TILE_WIDTH or out[-2] % dtypes.TILE_HEIGHT:
        raise ValueError(f"{op_name}: output_tensor_shape {out} must end in whole {dtypes.TILE_HEIGHT}x"
                         f"{dtypes.TILE_WIDTH} tiles to be tilizable")
    return out


def _tilize_padded_golden(t, output_tensor_shape, pad_value=0.0, *_, **__):
    _check_padded_shape("tilize_with_val_padding", t.shape, output_tensor_shape)
    return t


def _tilize_padded(op_name: str, input_tensor: Tensor, output_padded_shape: list[int], pad_value: float,
                   memory_config, dtype, use_multicore: bool, tt_nn_only) -> Tensor:
    """The tilize_with_*_padding ops' common tail. The output keeps the input's logical shape (the TensorSpec of
    TilizeWithValPaddingDeviceOperation::compute_output_specs is the input's logical shape, in TILE); the padding
    holds `pad_value` (to_torch_with_padded_shape shows it), and the program is the one TT-NN picks for
    `output_padded_shape`."""
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    out = output(_vals(op_name, input_tensor).contiguous(), input_tensor, ins, op_name=op_name,
                 memory_config=memory_config, dtype=dtype, layout=Layout.TILE)
    out._pad_fill = float(pad_value)
    program = programs.tilize_padded_program(input_tensor, out, tuple(output_padded_shape), use_multicore)
    device_work.launch_after(out, True, input_tensor, program)
    return out


@register_op("ttnn.tilize_with_val_padding", kind="move", golden=_tilize_padded_golden)
def tilize_with_val_padding(input_tensor: Tensor, output_tensor_shape, pad_value: float, *,
                            memory_config: MemoryConfig | None = None, dtype: DataType | None = None,
                            use_multicore: bool = True, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """TILE layout, its tile padding holding `pad_value`, tilized as a tensor padded to `output_tensor_shape`;
    the logical shape stays the input's, as in TT-NN.

    >>> x = ttnn.from_torch(torch.ones(1, 1, 2, 3), dtype=ttnn.bfloat16, device=device)
    >>> y = ttnn.tilize_with_val_padding(x, (1, 1, 32, 32), 0.0)
    >>> y.layout, y.shape, y.padded_shape
    (Layout.TILE, Shape([1, 1, 2, 3]), Shape([1, 1, 32, 32]))
    """
    shape = _check_padded_shape(op_name, _vals(op_name, input_tensor).shape, output_tensor_shape)
    return _tilize_padded(op_name, input_tensor, shape, pad_value, memory_config, dtype, use_multicore, tt_nn_only)


def _tile_padded_shape(shape) -> list[int]:
    return list(shape[:-2]) + [-(-int(s) // dtypes.TILE_HEIGHT) * dtypes.TILE_HEIGHT for s in shape[-2:]]


@register_op("ttnn.tilize_with_zero_padding", kind="move", golden=lambda t, *_, **__: t)
def tilize_with_zero_padding(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
                             output_dtype: DataType | None = None, use_multicore: bool = True,
                             op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """TILE layout with zeros in the tile padding (the last two dims padded to multiples of 32); the logical
    shape stays the input's, as in TT-NN. `output_dtype`, not `dtype`, as TT-NN's binding names it.

    >>> x = ttnn.from_torch(torch.ones(1, 1, 2, 3), dtype=ttnn.bfloat16, device=device)
    >>> y = ttnn.tilize_with_zero_padding(x)
    >>> y.layout, y.shape, y.padded_shape
    (Layout.TILE, Shape([1, 1, 2, 3]), Shape([1, 1, 32, 32]))
    """
    v = _vals(op_name, input_tensor)
    if v.dim() < 1:
        raise ValueError(f"{op_name} needs rank >= 1, got a scalar")
    # a 1-D input keeps its 1-D logical shape over 2-D tiles (TilizeWithValPaddingDeviceOperation's validate)
    padded = _tile_padded_shape(v.shape if v.dim() > 1 else (1, v.shape[0]))
    return _tilize_padded(op_name, input_tensor, padded, 0.0, memory_config, output_dtype, use_multicore, tt_nn_only)


def _unpad_golden(t, output_tensor_end, *_, **__):
    # TT-NN's end is inclusive: the output's shape is output_tensor_end + 1 in every dim.
    return t[tuple(slice(0, int(e) + 1) for e in output_tensor_end)]


def _unpadded_shard_config(t: Tensor, cfg: MemoryConfig | None, out_shape: list[int]) -> MemoryConfig | None:
    """untilize_with_unpadding's sharded output spec (UntilizeWithUnpaddingDeviceOperation::compute_output_specs):
    from a 2D-sharded input to a sharded output, the input's grid with the shard cut to the output, a height-sharded
    shard [rows per core rounded up to the tile, output width], others [all rows, the input's shard width]."""
    out_cfg = cfg if cfg is not None else t.memory_config()
    spec = t.memory_config().shard_spec if t.is_sharded() else None
    if spec is None or out_cfg is None or not out_cfg.is_sharded():
        return cfg
    rows = math.prod(out_shape[:-1])
    if t.memory_config().memory_layout == TensorMemoryLayout.HEIGHT_SHARDED:
        th, per_core = t.tile.tile_shape[0], -(-rows // spec.num_cores())
        shape = (-(-per_core // th) * th, out_shape[-1])
    else:
        shape = (rows, spec.shape[1])
    return MemoryConfig(out_cfg.memory_layout, out_cfg.buffer_type, ShardSpec(spec.grid, shape, spec.orientation))


@register_op("ttnn.untilize_with_unpadding", kind="move", golden=_unpad_golden)
def untilize_with_unpadding(input_tensor: Tensor, output_tensor_end, *, memory_config: MemoryConfig | None = None,
                            op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Row-major layout, keeping [0, output_tensor_end[i]] (inclusive) of each dim.

    >>> x = ttnn.from_torch(torch.ones(1, 1, 32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> y = ttnn.untilize_with_unpadding(x, (0, 0, 1, 2))
    >>> y.layout, y.shape
    (Layout.ROW_MAJOR, Shape([1, 1, 2, 3]))
    """
    v = _vals(op_name, input_tensor)
    end = [int(e) for e in output_tensor_end]
    limit = list(input_tensor.padded_shape)
    if len(end) != v.dim() or any(not 0 <= e < d for e, d in zip(end, limit)):
        raise ValueError(f"{op_name}: output_tensor_end {end} must give one inclusive end per "
                         f"dim of padded shape {limit}, each below that dim's size")
    if any(e >= d for e, d in zip(end, v.shape)):  # into the tile padding, which TT-NN's kernel reads as it is
        fill = getattr(input_tensor, "_pad_fill", 0.0)
        v = torch.nn.functional.pad(v, (0, limit[-1] - v.shape[-1], 0, limit[-2] - v.shape[-2]), value=fill)
    memory_config = _unpadded_shard_config(input_tensor, memory_config, [e + 1 for e in end])
    return _out(op_name, input_tensor, _unpad_golden(v, end), memory_config, tt_nn_only,
                dtype=untilized_dtype(input_tensor.dtype), layout=Layout.ROW_MAJOR, padded=True)


# -- sorting and indexing ------------------------------------------------------------------------

def index_dtype(size: int) -> DataType:
    """TT-NN's index dtype for sort/topk: UINT16 while indices fit in it, else UINT32."""
    return DataType.UINT16 if size <= 2**16 else DataType.UINT32


def _sort_golden(t, dim=-1, descending=False, *_, **__):
    r = torch.sort(t, dim=dim, descending=descending, stable=True)  # ties in input order, as the op sorts them
    return [r.values, r.indices]


@register_op("ttnn.sort", kind="rows", golden=_sort_golden)
def sort(input_tensor: Tensor, dim: int = -1, descending: bool = False, stable: bool = False, *,
         memory_config: MemoryConfig | None = None, out: tuple[Tensor, Tensor] | None = None,
         op_name: str = OWN_NAME, **tt_nn_only) -> list[Tensor]:
    """[sorted values, their indices in the input] along `dim`; indices are UINT16 (UINT32 past 65536).
    `out=(values, indices)`: preallocated tensors the results are written into (sort_nanobind.cpp).

    >>> x = ttnn.from_torch(torch.tensor([[3.0, 1.0, 2.0]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> values, indices = ttnn.sort(x)
    >>> values.to_torch(), indices.to_torch()
    (tensor([[1., 2., 3.]], dtype=torch.bfloat16), tensor([[1, 2, 0]], dtype=torch.uint16))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    v = _vals(op_name, input_tensor)
    d = _dim(op_name, dim, v.dim())
    # A stable sort always: the order of ties is then the same every run, which unstable TT-NN leaves open.
    r = torch.sort(v, dim=d, descending=descending, stable=True)
    ins = device_inputs(op_name, input_tensor)
    if out is not None:
        if len(out) != 2 or not all(isinstance(t, Tensor) for t in out):
            raise TypeError(f"{op_name}: out= takes a (values, indices) pair of ttnn.Tensor, got {out!r}")
        # sort_device_operation.cpp's checks of preallocated outputs
        if out[0].dtype != input_tensor.dtype:
            raise tt_fatal("output_tensors.at(0)->dtype() == input_tensor.dtype()",
                           f"Output values tensor dtype must be the same as input tensor dtype. Got output values "
                           f"tensor dtype: {out[0].dtype!r} and input tensor dtype: {input_tensor.dtype!r}", _HERE)
        if out[1].dtype not in (DataType.UINT16, DataType.UINT32):
            raise tt_fatal("output_tensors.at(1)->dtype() == DataType::UINT16 || ... == DataType::UINT32",
                           f"Output indices tensor dtype must be UINT16 or UINT32. Got output indices tensor dtype: "
                           f"{out[1].dtype!r}", _HERE)
        out[0]._write(r.values)
        out[1]._write(r.indices)
        device_work.launch_after(out[0], False, input_tensor,
                                 sort_programs.sort_programs(input_tensor, d, out[1].dtype))
        return list(out)
    outs = [output(r.values, input_tensor, ins, op_name=op_name, memory_config=memory_config),
            output(r.indices, input_tensor, ins, op_name=op_name, memory_config=memory_config,
                   dtype=index_dtype(v.shape[d]))]
    # SortDeviceOperation, with the transposes around it for the second-to-last dim (device_sim.programs.sort)
    try:
        device_work.launch_after(outs[0], True, input_tensor, sort_programs.sort_programs(input_tensor, d,
                                                                                          outs[1].dtype))
    except RuntimeError:
        outs[1]._free()  # a clash: neither fresh output is kept
        raise
    return outs


def _indexed(op_name: str, input: Tensor, index: Tensor, dim: int, index_dtypes: str, tt_nn_only):  # noqa: A002
    """gather's and scatter's checks: (input's values, index's values, dim made non-negative); index must
    hold integers (`index_dtypes` names the dtypes TT-NN takes for it)."""
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    v, idx = _vals(op_name, input), _vals(op_name, index)
    if idx.is_floating_point():
        raise TypeError(f"{op_name}: index must hold integers (dtype={index_dtypes}), got {index.dtype!r}")
    return v, idx, _dim(op_name, dim, v.dim())


def _gather_golden(input, dim, index, *_, **__):  # noqa: A002  (TT-NN's name)
    return torch.gather(input, dim, index.long())


@register_op("ttnn.gather", golden=_gather_golden, output_keyword="out")
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False,  # noqa: A002
           memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """input's values picked along `dim` at `index` (UINT16/UINT32), as torch.gather; the result has index's shape,
    or is written into `out=` (gather_nanobind.cpp's preallocated output).

    >>> x = ttnn.from_torch(torch.tensor([[10.0, 20.0, 30.0]]), layout=ttnn.TILE, device=device)
    >>> i = ttnn.from_torch(torch.tensor([[2, 0]]), dtype=ttnn.uint32, layout=ttnn.TILE, device=device)
    >>> ttnn.gather(x, -1, i).to_torch()
    tensor([[30., 10.]])
    """
    v, idx, d = _indexed(op_name, input, index, dim, "ttnn.uint32 or ttnn.uint16", tt_nn_only)
    try:
        r = torch.gather(v, d, idx.long())
    except RuntimeError as e:
        raise ValueError(f"{op_name}: index of shape {list(idx.shape)} does not fit input of shape "
                         f"{list(v.shape)} along dim {dim}: {e}") from None
    ins = device_inputs(op_name, input, index)
    fresh = pending_output_target(op_name) is None  # not written into out=
    out = output(r, input, ins, op_name=op_name, memory_config=memory_config)
    # GatherDeviceOperation, between transposes for the second-to-last dim (device_sim.programs.gather)
    device_work.launch_after(out, fresh, input, gather_programs.gather_programs(input, index, d))
    return out


def _tosa_gather_golden(input, index, *_, **__):  # noqa: A002  (TT-NN's name)
    return torch.gather(input, 1, index.long().unsqueeze(-1).expand(-1, -1, input.shape[-1]))


@register_op("ttnn.tosa_gather", golden=_tosa_gather_golden)
def tosa_gather(input: Tensor, index: Tensor, *, memory_config: MemoryConfig | None = None,  # noqa: A002
                op_name: str = OWN_NAME) -> Tensor:
    """TOSA's gather: output[n, w, c] = input[n, index[n, w], c] for an [N, K, C] input and an [N, W] index. TT-NN's
    composite (data_movement/gather/tosa/gather_tosa.cpp): the index unsqueezed and expanded to [N, W, C], then
    ttnn.gather along dim 1, into the input's memory config unless one is given.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(1, 3, 2), layout=ttnn.TILE, device=device)
    >>> i = ttnn.from_torch(torch.tensor([[2, 0]]), dtype=ttnn.uint32, layout=ttnn.TILE, device=device)
    >>> ttnn.tosa_gather(x, i).to_torch()
    tensor([[[4., 5.],
             [0., 1.]]])
    """
    for name, t, rank in (("Input", input, 3), ("Index", index, 2)):
        if len(t.shape) != rank:
            raise tt_fatal(f"{name.lower()}_tensor_rank == {rank}", f"{op_name}: {name} tensor rank must be {rank}, "
                           f"got: {len(t.shape)}", where=_HERE)
    if index.shape[0] != input.shape[0]:
        raise tt_fatal("N == index_lshape[0]", f"{op_name}: Index tensor first dimension must be equal to input "
                       f"tensor first dimension (index {list(index.shape)}, input {list(input.shape)})", where=_HERE)
    n, w, c = index.shape[0], index.shape[1], input.shape[-1]
    wide = expand(unsqueeze(index, -1), [n, w, c], memory_config=index.memory_config())
    return gather(input, 1, wide, memory_config=memory_config or input.memory_config())


# -- moving buffers ------------------------------------------------------------------------------

def _move(op_name: str, input_tensor: Tensor, memory_config, tt_nn_only) -> Tensor:
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if not isinstance(input_tensor, Tensor):
        raise TypeError(f"{op_name} takes a ttnn tensor, got {type(input_tensor).__name__}")
    if input_tensor.device() is None:
        return input_tensor  # TT-NN moves only device buffers; a host tensor comes back as it is
    v = input_tensor._value_or_raise()
    cfg, source = placement.resolve(memory_config, [input_tensor], op_name)
    dtype, layout, device = input_tensor.dtype, input_tensor.layout, input_tensor.device()
    program = shape_programs.move_program(input_tensor, cfg is not None and cfg.is_sharded())
    # TT-NN's move frees the input's buffer first, then allocates the output: DRAM fills bottom-up and L1
    # top-down, so the new buffer lands at the lowest (DRAM) or highest (L1) free address, closing gaps.
    input_tensor._free()
    out = Tensor._create(v, dtype, layout, device, cfg, source)
    device_work.launch_after(out, True, out, program)  # MoveDeviceOperation
    return out


@register_op("ttnn.reallocate", kind="move", golden=_identity)
def reallocate(input_tensor: Tensor, memory_config: MemoryConfig | None = None,
               *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Defragment: free the tensor's buffer and allocate it again, so it lands in the space just freed.

    The input is deallocated; use the returned tensor (a new tensor id, as TT-NN's move makes one).

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.reallocate(x).to_torch()
    tensor([[0., 1., 2.],
            [3., 4., 5.]])
    """
    return _move(op_name, input_tensor, memory_config, tt_nn_only)


@register_op("ttnn.move", kind="move", golden=_identity)
def move(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
         op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """ttnn.reallocate's underlying op: free the input, allocate the output (optionally in `memory_config`).

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.move(x).to_torch()
    tensor([[0., 1., 2.],
            [3., 4., 5.]])
    """
    return _move(op_name, input_tensor, memory_config, tt_nn_only)


# -- more shape and indexing ops -----------------------------------------------------------------

def _narrow_golden(t, dim, start, length, *_, **__):
    return t.narrow(dim, start, length)


@register_op("ttnn.narrow", traits={Trait.VIEW}, golden=_narrow_golden)
def narrow(input_tensor: Tensor, dim: int, start: int, length: int, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """`length` entries of `dim` from `start`, as torch.narrow; the rank stays.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.narrow(x, 1, 1, 2).to_torch()
    tensor([[1., 2.],
            [4., 5.]])
    """
    v = _vals(op_name, input_tensor)
    d = _dim(op_name, dim, v.dim())
    if not (start >= 0 and length >= 0 and start + length <= v.shape[d]):
        raise ValueError(f"{op_name}: [{start}, {start + length}) does not fit dim {dim} of shape {list(v.shape)}")
    cfg = _narrowed_config(op_name, input_tensor, d, start, length)
    return _out(op_name, input_tensor, v.narrow(d, start, length), cfg, tt_nn_only)


def _narrowed_config(op_name: str, t: Tensor, dim: int, start: int, length: int) -> MemoryConfig | None:
    """An L1-sharded narrow's output config, as TT-NN's narrow.cpp makes its view's: the shard cut to `length`
    when the narrowed range lies within one shard (a row of pages high, for the last dim), on the cores whose
    shards hold the range, ROW_MAJOR; None (the input's config) otherwise."""
    cfg = t.memory_config()
    if cfg is None or cfg.buffer_type != BufferType.L1 or not t.is_sharded() or cfg.shard_spec is None:
        return None
    shape, (sh, sw) = list(t.padded_shape), cfg.shard_spec.shape
    if start == 0 and length == shape[dim]:
        return None
    ph, pw = (dtypes.TILE_HEIGHT, dtypes.TILE_WIDTH) if t.layout == Layout.TILE else (1, sw)
    per_row = math.prod(shape[dim + 1:-1])
    width = dim == len(shape) - 1
    offset, narrowed = 0, (sh, sw)
    if width and sh == ph and start % sw + length <= sw:
        narrowed, offset = (sh, length), start % sw // pw
    elif not width and start * per_row % sh + length * per_row <= sh:
        narrowed, offset = (length * per_row, sw), start * per_row % sh // ph * (sw // pw)
    elif not ((start if width else start * per_row) % (sw if width else sh) == 0
              and (length if width else length * per_row) % (sw if width else sh) == 0):
        raise tt_fatal("full shards or a split within one shard", f"{op_name}: narrowing dim {dim} of an L1-sharded "
                       f"tensor takes whole shards or a part of one shard; got start {start}, length {length} with "
                       f"shard shape ({sh}, {sw})", "device_sim/ops/data_movement.py")
    grid_width = -(-shape[-1] // pw) // (sw // pw)
    cores = []
    for i, core in enumerate(t.buffer.cores):
        if width:
            page = i % grid_width * sw // pw + offset
            inside = start // pw <= page < (start + length) // pw
        else:
            page = (i // grid_width * sh // ph + offset // (sw // pw)) % (shape[dim] * per_row // ph)
            inside = start * per_row // ph <= page < (start + length) * per_row // ph
        if inside:
            cores.append(core)
    grid = CoreRangeSet([CoreRange(CoreCoord(*c), CoreCoord(*c)) for c in cores])
    return MemoryConfig(cfg.memory_layout, BufferType.L1, ShardSpec(grid, narrowed, ShardOrientation.ROW_MAJOR))


def _reshape_on_device_golden(t, W, Z, Y, X, *_, **__):  # noqa: N803  (TT-NN's names)
    return t.reshape(W, Z, Y, X)


@register_op("ttnn.reshape_on_device", golden=_reshape_on_device_golden)
def reshape_on_device(input_tensor: Tensor, W: int, Z: int, Y: int, X: int, *,  # noqa: N803
                      memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """TT-NN's older 4-D reshape: the same values as [W, Z, Y, X] (one -1 allowed).

    >>> x = ttnn.from_torch(torch.zeros(1, 1, 32, 64), layout=ttnn.TILE, device=device)
    >>> ttnn.reshape_on_device(x, 1, 1, 64, 32).shape
    Shape([1, 1, 64, 32])
    """
    v = _vals(op_name, input_tensor)
    try:
        r = v.reshape(W, Z, Y, X)
    except RuntimeError:
        raise ValueError(f"{op_name}: cannot reshape shape {list(v.shape)} ({v.numel()} elements) to "
                         f"{[W, Z, Y, X]}") from None
    out = _out(op_name, input_tensor, r, memory_config, tt_nn_only)
    device_work.launch_after(out, True, input_tensor, shape_programs.reshape_on_device_program(input_tensor, out))
    return out


def _scatter_golden(input, dim, index, src, *_, reduce=None, **__):  # noqa: A002  (TT-NN's name)
    src = src if isinstance(src, torch.Tensor) else torch.full(index.shape, float(src), dtype=input.dtype)
    if reduce is None:
        return torch.scatter(input, dim, index.long(), src.to(input.dtype))
    # TT-NN's 'add' / 'multiply' (torch.scatter's reduce=, deprecated there) as scatter_reduce names them
    return torch.scatter_reduce(input, dim, index.long(), src.to(input.dtype),
                                reduce={"add": "sum", "multiply": "prod"}.get(reduce, str(reduce)))


def _check_scatter(op_name: str, input: Tensor, index: Tensor, src, dim: int, reduce) -> None:  # noqa: A002
    """scatter.cpp's validate_inputs TT_FATALs (and the device operation's integer index), in their words: equal
    ranks, dim in range, reduce 'add' or 'multiply', index no longer than src anywhere nor than input off dim."""
    a, i = list(input.shape), list(index.shape)
    s = list(src.shape) if isinstance(src, Tensor) else i

    def need(ok: bool, condition: str, message: str) -> None:
        if not ok:
            raise tt_fatal(condition, f"{op_name}: {message}", where=_HERE)

    need(index.dtype in (DataType.UINT16, DataType.UINT32, DataType.INT32), "index dtype is an integer",
         f"index must hold integers (UINT16, UINT32 or INT32), got {index.dtype}")
    need(len(a) == len(i), "input_rank == index_rank", f"input_rank must be equal to index_rank (input_rank == "
                                                       f"{len(a)}, index_rank == {len(i)})")
    need(len(a) == len(s), "input_rank == source_rank", f"input_rank must be equal to source_rank (input_rank == "
                                                        f"{len(a)}, source_rank == {len(s)})")
    need(-len(a) <= dim < len(a), "-input_rank <= dim < input_rank", f"dim must follow the condition -input_rank <= "
                                                                      f"dim < input_rank (dim: {dim}, rank: {len(a)}).")
    need(reduce is None or reduce in ("add", "multiply"), "reduce in ALLOWED_REDUCTIONS",
         f"reduce must be either 'add' or 'multiply' (case-sensitive), got {reduce}")
    d = dim % len(a)
    for k in range(len(a)):
        need(i[k] <= s[k], f"index_shape[{k}] <= source_shape[{k}]", f"index_shape[{k}] <= source_shape[{k}] == false "
                                                                    f"(index_shape: {i}, source_shape: {s})")
        need(k == d or i[k] <= a[k], f"index_shape[{k}] <= input_shape[{k}]",
             f"index_shape[{k}] <= input_shape[{k}] == false (index_shape: {i}, input_shape: {a})")


@register_op("ttnn.scatter", golden=_scatter_golden)
def scatter(input: Tensor, dim: int, index: Tensor, src, *, reduce: str | None = None,  # noqa: A002
            memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """A copy of `input` with `src` (a tensor or a number) written at `index` along `dim`, as torch.scatter;
    reduce='add' or 'multiply' combines instead of overwriting (the two scatter.cpp allows, torch.scatter's reduce=).

    >>> x = ttnn.from_torch(torch.zeros(1, 4), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> i = ttnn.from_torch(torch.tensor([[3, 0]]), dtype=ttnn.int32, layout=ttnn.TILE, device=device)
    >>> src = ttnn.from_torch(torch.tensor([[5.0, 7.0]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.scatter(x, -1, i, src).to_torch()
    tensor([[7., 0., 0., 5.]], dtype=torch.bfloat16)
    """
    _check_scatter(op_name, input, index, src, dim, reduce)
    v, idx, d = _indexed(op_name, input, index, dim, "ttnn.uint32 or ttnn.int32", tt_nn_only)
    s = values(src, op_name)
    try:
        r = _scatter_golden(v, d, idx, s, reduce=reduce)
    except RuntimeError as e:
        raise ValueError(f"{op_name}: index {list(idx.shape)} and src {list(getattr(s, 'shape', []))} do not "
                         f"fit input {list(v.shape)} along dim {dim}: {e}") from None
    ins = device_inputs(op_name, input, index, src)
    out = output(r, input, ins, op_name=op_name, memory_config=memory_config)
    if isinstance(src, Tensor):  # ScatterDeviceOperation in ROW_MAJOR (programs.scatter)
        device_work.launch_after(out, True, input, scatter_programs.scatter_programs(input, index, src, d, out,
                                                                                     reduce=reduce is not None))
    return out


def _scatter_add_golden(input, dim, index, src, *_, **__):  # noqa: A002  (TT-NN's name)
    return _scatter_golden(input, dim, index, src, reduce="add")


@register_op("ttnn.scatter_add", golden=_scatter_add_golden)
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor, *,  # noqa: A002
                memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """scatter with reduce='add': a copy of `input` with each of `src`'s values added at `index` along `dim`
    (scatter.cpp's scatter_add, which calls scatter so).

    >>> x = ttnn.from_torch(torch.ones(1, 4), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> i = ttnn.from_torch(torch.tensor([[3, 3]]), dtype=ttnn.int32, layout=ttnn.TILE, device=device)
    >>> src = ttnn.from_torch(torch.tensor([[5.0, 7.0]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.scatter_add(x, -1, i, src).to_torch()
    tensor([[ 1.,  1.,  1., 13.]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return scatter(input, dim, index, src, reduce="add", memory_config=memory_config, **tt_nn_only)


def _tosa_scatter_golden(input, index, src, *_, **__):  # noqa: A002  (TT-NN's name)
    return torch.scatter(input, 1, index.long().unsqueeze(-1).expand(-1, -1, input.shape[-1]), src)


@register_op("ttnn.tosa_scatter", golden=_tosa_scatter_golden)
def tosa_scatter(input: Tensor, index: Tensor, src: Tensor, *, memory_config: MemoryConfig | None = None,  # noqa: A002
                 op_name: str = OWN_NAME) -> Tensor:
    """TOSA's scatter: a copy of the [N, K, C] input with output[n, index[n, w], c] = src[n, w, c] for an [N, W]
    index and an [N, W, C] src, in the input's layout and memory config unless one is given. TT-NN's composite
    (data_movement/scatter/tosa_scatter.cpp) with its TOSA shape TT_FATALs: the index unsqueezed and expanded over
    the channels, then the scatter along dim 1 (TT-NN transposes dims 1 and 2 to scatter along the last; device_sim's
    ttnn.scatter runs the same transposes around its ScatterDeviceOperation).

    >>> x = ttnn.from_torch(torch.zeros(1, 3, 2), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> i = ttnn.from_torch(torch.tensor([[2]]), dtype=ttnn.uint32, layout=ttnn.TILE, device=device)
    >>> s = ttnn.from_torch(torch.ones(1, 1, 2), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.tosa_scatter(x, i, s).to_torch()[0]
    tensor([[0., 0.],
            [0., 0.],
            [1., 1.]], dtype=torch.bfloat16)
    """
    a, i, s = (list(t.shape) for t in (input, index, src))
    checks = ((len(a) == 3, f"input tensor must be of rank 3, it is {len(a)} instead"),
              (len(i) == 2, f"index tensor must be of rank 2, it is {len(i)} instead"),
              (len(s) == 3, f"source tensor must be of rank 3, it is {len(s)} instead"))
    for ok, message in checks:
        if not ok:
            raise tt_fatal("TOSA rank", f"{op_name}: According to TOSA specification, {message}.", where=_HERE)
    for ok, message in ((a[0] == s[0], f"Input shape has a different dimension N than source shape (input shape: {a}, "
                                       f"source shape: {s})."),
                        (a[2] == s[2], f"Input shape has a different dimension C than source shape (input shape: {a}, "
                                       f"source shape: {s})."),
                        (a[0] == i[0], f"Input shape has a different dimension N than index shape (input shape: {a}, "
                                       f"index shape: {i})."),
                        (i[1] == s[1], f"Index shape has a different dimension W than source shape (index shape: {i}, "
                                       f"source shape: {s}).")):
        if not ok:
            raise tt_fatal("TOSA shapes", f"{op_name}: {message}", where=_HERE)
    wide = expand(unsqueeze(index, -1), [i[0], i[1], a[2]], memory_config=index.memory_config())
    return scatter(input, 1, wide, src, memory_config=memory_config or input.memory_config())


def _indexed_fill_golden(batch_id, input_tensor_a, input_tensor_b, *_, **__):
    out = input_tensor_a.clone()
    for i, b in enumerate(batch_id.reshape(-1).tolist()):  # a repeated id: the last one's row, as the reader's loop
        out[int(b)] = input_tensor_b[i]
    return out


@register_op("ttnn.indexed_fill", kind="move", golden=_indexed_fill_golden)
def indexed_fill(batch_id: Tensor, input_tensor_a: Tensor, input_tensor_b: Tensor, *,
                 memory_config: MemoryConfig | None = None, dim: int = 0, op_name: str = OWN_NAME) -> Tensor:
    """A copy of input_tensor_a whose batch batch_id[i] is input_tensor_b's batch i, for each of b's batches
    (IndexedFillDeviceOperation: ROW_MAJOR interleaved inputs of the same inner dims, batch ids ROW_MAJOR, dim 0).

    >>> a = ttnn.from_torch(torch.zeros(4, 1, 1, 2), ttnn.bfloat16, device=device)
    >>> b = ttnn.from_torch(torch.ones(2, 1, 1, 2), ttnn.bfloat16, device=device)
    >>> ids = ttnn.from_torch(torch.tensor([[[[3, 1]]]], dtype=torch.int32), ttnn.uint32, device=device)
    >>> ttnn.indexed_fill(ids, a, b).to_torch()[:, 0, 0, 0]
    tensor([0., 1., 0., 1.], dtype=torch.bfloat16)
    """
    sa, sb = list(input_tensor_a.shape), list(input_tensor_b.shape)
    for ok, condition, message in (
            (input_tensor_a.layout == Layout.ROW_MAJOR, "layout == ROW_MAJOR",
             "Currently only supporting row major layout"),
            (input_tensor_b.layout == input_tensor_a.layout, "b.layout == a.layout", "Inputs must be same layout"),
            (len(sa) == len(sb) == 4 and sa[1:] == sb[1:], "a_shape[1:] == b_shape[1:]",
             "Dims except batch dim must be the same on inputs"),
            (sb[0] == batch_id.padded_shape[-1], "b_shape[0] == batch_ids.padded_shape[-1]",
             "Second input and batch ids must be same outer dim"),
            (batch_id.layout == Layout.ROW_MAJOR, "batch_ids.layout == ROW_MAJOR", "Batch IDs must be ROW MAJOR"),
            (dim == 0, "dim == 0", "Currently only supporting batch dimension"),
            (input_tensor_a.device() is not None, "storage_type == DEVICE",
             "Operands to Index Fill need to be on device!"),
            (not input_tensor_a.is_sharded(), "INTERLEAVED", "Index Fill does not currently support sharding")):
        if not ok:
            raise tt_fatal(condition, f"{op_name}: {message}", where=_HERE)
    ins = device_inputs(op_name, batch_id, input_tensor_a, input_tensor_b)
    y = _indexed_fill_golden(values(batch_id), held(input_tensor_a), held(input_tensor_b))
    out = output(y, input_tensor_a, ins, op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, True, input_tensor_a, programs.indexed_fill_program(input_tensor_a, batch_id))
    return out


def _nonzero_golden(input_tensor, *_, **__):
    found = torch.nonzero(input_tensor.reshape(-1)).reshape(-1)
    count = torch.zeros(1, 1, 1, 8, dtype=torch.int64)
    count[..., 0] = found.numel()
    indices = torch.zeros(input_tensor.shape, dtype=torch.int64)
    indices.view(-1)[:found.numel()] = found
    return [count, indices]


@register_op("ttnn.nonzero", kind="move", golden=_nonzero_golden)
def nonzero(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME) -> list:
    """[count, indices] of a [1, 1, 1, X] ROW_MAJOR tensor's non-zero entries, both UINT32 ROW_MAJOR: count [1, 1, 1, 8]
    with the number in its first entry, indices [1, 1, 1, X] with the positions first (the entries past them are what
    the device leaves; device_sim's are 0). NonZeroIndicesDeviceOperation's checks, on core (0, 0).

    >>> x = ttnn.from_torch(torch.tensor([[[[0.0, 3.0, 0.0, 5.0]]]]), ttnn.bfloat16, device=device)
    >>> count, indices = ttnn.nonzero(x)
    >>> count.to_torch()[0, 0, 0, 0].item(), indices.to_torch()[0, 0, 0, :2].tolist()
    (2, [1, 3])
    """
    shape = list(input_tensor.shape)
    for ok, condition, message in (
            (len(shape) == 4 and shape[:3] == [1, 1, 1], "shape == [1, 1, 1, X]",
             "The input shape must be 4D with the following form: 1, 1, 1, X."),
            (input_tensor.layout == Layout.ROW_MAJOR, "layout == ROW_MAJOR",
             "Currently only supporting row major layout"),
            (input_tensor.device() is not None, "storage_type == DEVICE", "Operands to Non-zero need to be on device!"),
            (not input_tensor.is_sharded(), "INTERLEAVED", "Non-zero does not currently support sharding")):
        if not ok:
            raise tt_fatal(condition, f"{op_name}: {message}", where=_HERE)
    ins = device_inputs(op_name, input_tensor)
    cfg = memory_config if memory_config is not None else input_tensor.memory_config()
    outs = [output(v, input_tensor, ins, op_name=op_name, dtype=DataType.UINT32, layout=Layout.ROW_MAJOR,
                   memory_config=cfg) for v in _nonzero_golden(values(input_tensor, op_name))]
    device_work.launch_after(outs[0], True, input_tensor, programs.nonzero_program(input_tensor))
    return outs


@register_op("ttnn.copy", kind="move", golden=lambda input_a, input_b, *_, **__: input_a.clone())
def copy(input_a: Tensor, input_b: Tensor, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Write input_a's values into input_b (same buffer and tensor id), in input_b's dtype; returns input_b.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> y = ttnn.from_torch(torch.zeros(2, 3), layout=ttnn.TILE, device=device)
    >>> _ = ttnn.copy(x, y)
    >>> y.to_torch()
    tensor([[0., 1., 2.],
            [3., 4., 5.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    device_inputs(op_name, input_a, input_b)
    a, b = _vals(op_name, input_a), _vals(op_name, input_b)
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{op_name}: input_a has shape {list(a.shape)} but input_b has {list(b.shape)}; "
                         f"copy needs equal shapes")
    if input_a.device() is not None and not input_a.is_sharded() and not input_b.is_sharded():
        # CopyDeviceOperation into input_b's buffer, launched before the write (a CB clash keeps input_b's values)
        device_work.launch(input_a.device(), programs.copy_program(input_a, input_b.dtype))
    input_b._write(a)
    return input_b


def _assign_golden(input_tensor, input_b=None, *_, dtype=None, **__):
    if input_b is not None:
        return input_tensor.clone()
    return input_tensor.clone() if dtype is None else input_tensor.to(dtypes.TORCH_DTYPE[DataType(dtype)])


@register_op("ttnn.assign", kind="move", output_keyword="output_tensor", golden=_assign_golden)
def assign(input_tensor: Tensor, input_b: Tensor | None = None, *, memory_config: MemoryConfig | None = None,
           dtype: DataType | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """A copy of the tensor in `memory_config` (and `dtype`), as TT-NN's assign(input_tensor, *, memory_config,
    dtype=None, output_tensor=None); or, as assign(input_a, input_b), input_a's values written into input_b, which
    it returns (copy_nanobind.cpp binds both).

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> y = ttnn.assign(x, memory_config=ttnn.L1)
    >>> y.memory_config().buffer_type, torch.equal(y.to_torch(), x.to_torch())
    (BufferType.L1, True)
    """
    if input_b is not None:
        return copy(input_tensor, input_b, op_name=op_name, **tt_nn_only)
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    fresh = pending_output_target(op_name) is None
    out = output(held(input_tensor, op_name), input_tensor, ins, op_name=op_name, dtype=dtype,
                 memory_config=memory_config)
    if input_tensor.device() is not None and not input_tensor.is_sharded() and not out.is_sharded():
        device_work.launch_after(out, fresh, input_tensor, programs.copy_program(input_tensor, out.dtype))
    return out


@register_op("ttnn.to_dtype", kind="move", traits={Trait.HOST},
             golden=lambda t, dtype, *_, **__: t.to(dtypes.TORCH_DTYPE[DataType(dtype)]))
def to_dtype(input_tensor: Tensor, dtype: DataType, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """A host tensor's values in another dtype (block floats come out in TILE layout); on the device, use
    ttnn.typecast.

    >>> x = ttnn.from_torch(torch.tensor([[1.5, 2.0]]))
    >>> ttnn.to_dtype(x, ttnn.bfloat16).dtype
    DataType.BFLOAT16
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    v = _vals(op_name, input_tensor)
    if input_tensor.device() is not None:
        raise ValueError(f"{op_name} converts host tensors; tensor {input_tensor.tensor_id} is on device "
                         f"{input_tensor.device().device_id}: use ttnn.typecast(tensor, dtype) there")
    dtype = DataType(dtype)
    layout = Layout.TILE if dtype.is_block_float else input_tensor.layout
    return Tensor._create(dtypes.to_device_values(v, dtype), dtype, layout, None, None, None)


# -- fill_implicit_tile_padding -----------------------------------------------------------------------
# tt-metal's norm, softmax and reduction tests fill the padding with a marker value first, to catch a kernel that
# reads it. device_sim's ops compute on the logical values only, so the padding never reaches a result; the fill
# is kept as the tensor's one padding value, which to_torch_with_padded_shape() shows.

def _fill_pad_golden(input_tensor, fill_value, *_, **__):
    return input_tensor  # the logical values are unchanged; only the padding, which torch has not, is filled


@register_op("ttnn.fill_implicit_tile_padding", golden=_fill_pad_golden)
def fill_implicit_tile_padding(input_tensor: Tensor, fill_value: float, *, memory_config: MemoryConfig | None = None,
                               op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Fill the tile padding of a TILE tensor's last two dims with `fill_value` (TT-NN's fill_pad.cpp): a new
    tensor in `memory_config` (default: the input's); the input itself when those dims are whole tiles.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> y = ttnn.fill_implicit_tile_padding(x, 7.0)
    >>> y.to_torch(), y.padded_shape
    (tensor([[0., 1., 2.],
            [3., 4., 5.]]), Shape([32, 32]))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if not isinstance(input_tensor, Tensor):
        raise TypeError(f"{op_name}: expected a ttnn tensor, got {type(input_tensor).__name__}")
    v = held(input_tensor, op_name)
    h, w = (v.shape[-2] if v.dim() > 1 else 1), (v.shape[-1] if v.dim() else 1)
    if h % 32 == 0 and w % 32 == 0:  # TT-NN checks against TILE_HEIGHT for both dims, and returns its input
        return input_tensor
    if input_tensor.layout != Layout.TILE:
        raise RuntimeError(f"{op_name}: tensor {input_tensor.tensor_id} is ROW_MAJOR and has no tile padding; "
                           f"it fills a TILE tensor's (ttnn.to_layout(t, ttnn.TILE_LAYOUT) first)")
    cfg = memory_config if memory_config is not None else input_tensor.memory_config()
    out = _out(op_name, input_tensor, v, cfg, {})
    out._pad_fill = float(fill_value)
    if input_tensor.device() is not None:  # a bfloat8_b tensor: TT-NN typecasts around it, not modelled (None)
        device_work.launch_after(out, True, input_tensor, fill_pad_programs.fill_pad_program(
            input_tensor.device(), tuple(v.shape), input_tensor.dtype))
    return out


# -- CHW to HWC: the conv models' input reorder (tt-metal's experimental/cnn/convert_to_hwc) ---------------------------


def _convert_to_hwc_golden(t, *_, l1_alignment: int = 16, **__):
    """[1, B, C, HW] -> [1, 1, B*HW, C'], C' = C zero-padded to whole `l1_alignment` bytes (16 on Wormhole)."""
    b, c, hw = t.shape[1:]
    align = l1_alignment // t.element_size()
    return torch.nn.functional.pad(t.transpose(2, 3).reshape(1, 1, b * hw, c), (0, -(-c // align) * align - c))


@register_op("ttnn.experimental.convert_to_hwc", kind="move", golden=_convert_to_hwc_golden)
def convert_to_hwc(input: Tensor, *, memory_config: MemoryConfig | None = None,  # noqa: A002
                   dtype: DataType | None = None, op_name: str = OWN_NAME) -> Tensor:
    """A [1, B, C, HW] ROW_MAJOR width-sharded tensor (L1 or DRAM) as [1, 1, B*HW, C'] height-sharded: each pixel's
    channels in a row, C padded up to a whole L1 alignment (16 B: 8 bfloat16 channels) with zeros. Without
    `memory_config` (an L1 input only) the output takes the input's grid, B times its shard width in rows.

    >>> spec = ttnn.ShardSpec(ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(0, 0))}),
    ...                       (3, 32), ttnn.ShardOrientation.ROW_MAJOR)
    >>> cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.L1, spec)
    >>> x = ttnn.Tensor(torch.arange(96.0).reshape(1, 1, 3, 32), ttnn.bfloat16, device=device,
    ...                 layout=ttnn.ROW_MAJOR_LAYOUT, mem_config=cfg)
    >>> y = ttnn.experimental.convert_to_hwc(x)
    >>> y.shape, y.to_torch()[0, 0, 1, :4]
    (Shape([1, 1, 32, 8]), tensor([ 1., 33., 65.,  0.], dtype=torch.bfloat16))
    """
    where = _HERE
    if not isinstance(input, Tensor) or input.device() is None:
        raise TypeError(f"{op_name}: takes a ttnn tensor on a device, got {input!r}")
    mc = input.memory_config()
    if mc.buffer_type == BufferType.DRAM and memory_config is None:
        raise tt_fatal("memory_config.has_value()",
                       "When input tensor is in DRAM, output memory_config must be explicitly specified", where=where)
    shape = tuple(input.shape)
    if len(shape) != 4:
        raise tt_fatal("shape.size() == 4", f"Input shape must be rank 4 (was rank {len(shape)})", where=where)
    _, b, c, hw = shape
    if shape[0] != 1:
        raise tt_fatal("shape[0] == 1", f"Expected input tensor to be shape [1, B, C, HW] (shape was {list(shape)})",
                       where=where)
    if c > 32:
        raise tt_fatal("C <= TILE_HEIGHT", f"C must be less than or equal to 32 (was {c})", where=where)
    if input.layout != Layout.ROW_MAJOR:
        raise tt_fatal("input.layout() == Layout::ROW_MAJOR", "Input tensor must be in row-major layout", where=where)
    if mc.memory_layout != TensorMemoryLayout.WIDTH_SHARDED or mc.shard_spec is None:
        raise tt_fatal("input.memory_config().memory_layout() == TensorMemoryLayout::WIDTH_SHARDED",
                       "Input tensor must be width sharded", where=where)
    # compute_alignment_requirement_in_elements: the L1 alignment in elements of the input's dtype
    align = input.device().config.l1_alignment // dtypes.ELEMENT_SIZE[input.dtype]
    if memory_config is None:  # infer_hwc_output_memory_config
        spec = mc.shard_spec
        memory_config = MemoryConfig(TensorMemoryLayout.HEIGHT_SHARDED, mc.buffer_type, ShardSpec(
            spec.grid, (b * spec.shape[1], -(-c // align) * align), spec.orientation))
    if memory_config.shard_spec is None or memory_config.memory_layout != TensorMemoryLayout.HEIGHT_SHARDED:
        raise tt_fatal("args.memory_config.is_sharded() && memory_layout() == HEIGHT_SHARDED",
                       "Output tensor must be height sharded", where=where)
    if memory_config.shard_spec.shape[1] % align:
        raise tt_fatal("output_memory_config.shard_spec()->shape[1] % alignment_elements == 0",
                       f"Output shard width must be rounded up to next multiple of {align} to satisfy alignment "
                       f"constraints (width was {memory_config.shard_spec.shape[1]})", where=where)
    hwc = _convert_to_hwc_golden(held(input, op_name), l1_alignment=input.device().config.l1_alignment)
    out = output(hwc, input, [input], op_name=op_name, dtype=dtype, memory_config=memory_config)
    device_work.launch_after(out, True, input, programs.convert_to_hwc_program(input, out))
    return out


def _convert_to_chw_golden(t, *_, **__):
    """[1, 1, HW, C] -> [1, 1, C, HW]."""
    return t.transpose(2, 3)


@register_op("ttnn.experimental.convert_to_chw", kind="move", golden=_convert_to_chw_golden)
def convert_to_chw(input: Tensor, *, dtype: DataType | None = None, op_name: str = OWN_NAME) -> Tensor:  # noqa: A002
    """An [1, 1, HW, C] TILE tensor height-sharded in L1 (C <= 32) as [1, 1, C, HW] in ROW_MAJOR, width-sharded on the
    input's grid with shards (C, the input's shard height), in `dtype` (default the input's): convert_to_hwc's
    inverse, as convert_to_chw_device_operation.cpp infers the output.

    >>> grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 0))})
    >>> cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
    ...                         ttnn.ShardSpec(grid, (32, 32), ttnn.ShardOrientation.ROW_MAJOR))
    >>> x = ttnn.from_torch(torch.arange(128.0).reshape(1, 1, 64, 2), ttnn.bfloat16, layout=ttnn.TILE,
    ...                     device=device, memory_config=cfg)
    >>> y = ttnn.experimental.convert_to_chw(x)
    >>> y.shape, y.to_torch()[0, 0, 1, :3]
    (Shape([1, 1, 2, 64]), tensor([1., 3., 5.], dtype=torch.bfloat16))
    """
    where = _HERE
    if not isinstance(input, Tensor) or input.device() is None:
        raise TypeError(f"{op_name}: takes a ttnn tensor on a device, got {input!r}")
    mc, shape = input.memory_config(), tuple(input.shape)
    checks = ((mc.is_sharded() and mc.shard_spec is not None, "input.is_sharded()",
               "Input tensor must be sharded to infer output memory config"),
              (mc.memory_layout == TensorMemoryLayout.HEIGHT_SHARDED,
               "input_memory_config.memory_layout() == TensorMemoryLayout::HEIGHT_SHARDED",
               "Input tensor must be height sharded"),
              (len(shape) == 4, "shape.size() == 4", f"Input shape must be rank 4 (was rank {len(shape)})"),
              (len(shape) == 4 and shape[0] == 1 and shape[1] == 1, "shape[0] == 1 && shape[1] == 1",
               "Expected input tensor to be shape [1, 1, HW, C]"),
              (shape[-1] <= 32, "C <= TILE_HEIGHT", f"C must be less than or equal to 32 (was {shape[-1]})"),
              (shape[-2] % 32 == 0, "HW % TILE_HEIGHT == 0", "HW must be divisible by tile size"),
              (mc.shard_spec is None or mc.shard_spec.shape[0] % 32 == 0,
               "input_shard_spec.shape[0] % TILE_HEIGHT == 0", "Shard height must be divisible by tile size"))
    for ok, condition, message in checks:
        if not ok:
            raise tt_fatal(condition, message, where=where)
    spec = mc.shard_spec
    out_cfg = MemoryConfig(TensorMemoryLayout.WIDTH_SHARDED, mc.buffer_type,
                           ShardSpec(spec.grid, (shape[-1], spec.shape[0]), spec.orientation))
    out = output(_convert_to_chw_golden(held(input, op_name)), input, [input], op_name=op_name,
                 dtype=dtype if dtype is not None else input.dtype, layout=Layout.ROW_MAJOR, memory_config=out_cfg)
    device_work.launch_after(out, True, input, programs.convert_to_chw_program(input, out))
    return out


# -- DeepSeek prefill's MoE row moves (tt-metal's experimental/deepseek_prefill/extract and insert) --------------------


def _prefill_checks(op_name: str, global_tensor: Tensor, start: Tensor, counts: Tensor, global_expert_id: int,
                    local_tensor: Tensor | None = None) -> None:
    """The device operations' host checks (extract_device_operation.cpp / insert's): the row tensors 2D bfloat8_b
    TILE in interleaved DRAM, start and counts UINT32 ROW_MAJOR in interleaved DRAM, 1D or [1, E] with the same E,
    and global_expert_id < E. TT_FATAL one-liners naming the tensor."""
    def dram(t: Tensor) -> bool:
        mc = t.memory_config()
        return mc.buffer_type == BufferType.DRAM and mc.memory_layout == TensorMemoryLayout.INTERLEAVED

    rows = (("global_tensor", global_tensor),) + ((("local_tensor", local_tensor),) if local_tensor is not None else ())
    for name, t in rows:
        for ok, what in ((t.device() is not None, "be on device"), (t.dtype == DataType.BFLOAT8_B, "be BFLOAT8_B"),
                         (t.layout == Layout.TILE, "be TILE layout"), (dram(t), "be DRAM interleaved"),
                         (len(t.shape) == 2, f"be 2D (got shape {list(t.shape)})")):
            if not ok:
                raise tt_fatal(f"{name} must {what}", f"{op_name}: {name} must {what}", where=_HERE)
    if local_tensor is not None and local_tensor.shape[-1] != global_tensor.shape[-1]:
        raise tt_fatal("local_tensor hidden_dim == global_tensor hidden_dim", f"{op_name}: local_tensor's hidden dim "
                       f"{local_tensor.shape[-1]} must equal global_tensor's {global_tensor.shape[-1]}", where=_HERE)
    for name, t in (("start", start), ("counts", counts)):
        shape = tuple(t.shape)
        for ok, what in ((t.dtype == DataType.UINT32, "be UINT32"), (t.layout == Layout.ROW_MAJOR, "be ROW_MAJOR"),
                         (dram(t), "be DRAM interleaved"),
                         (len(shape) == 1 or (len(shape) == 2 and shape[0] == 1),
                          f"be 1D or 2D with first dimension == 1 (got shape {list(shape)})")):
            if not ok:
                raise tt_fatal(f"{name} must {what}", f"{op_name}: {name} must {what}", where=_HERE)
    if start.shape[-1] != counts.shape[-1]:
        raise tt_fatal("start_last_dim == counts_last_dim", f"{op_name}: start and counts must have the same last "
                       f"dimension, got start={start.shape[-1]} and counts={counts.shape[-1]}", where=_HERE)
    if not 0 <= global_expert_id < start.shape[-1]:
        raise tt_fatal("global_expert_id < start_last_dim", f"{op_name}: global_expert_id ({global_expert_id}) must be "
                       f"in the range [0, {start.shape[-1] - 1}]", where=_HERE)


def _prefill_slice(start: Tensor, counts: Tensor, expert: int) -> tuple[int, int]:
    """(the expert's first row, its rows rounded up to whole tiles), read from the device-resident tables."""
    first = int(values(start).reshape(-1)[expert])
    rows = -(-int(values(counts).reshape(-1)[expert]) // 32) * 32
    return first, rows


def _prefill_extract_golden(global_tensor, start, counts, *_, global_expert_id=0, max_dispatched_tokens_per_expert=32,
                            **__):
    first = int(start.reshape(-1)[global_expert_id])
    rows = -(-int(counts.reshape(-1)[global_expert_id]) // 32) * 32
    out = global_tensor.new_zeros(max_dispatched_tokens_per_expert, global_tensor.shape[-1])
    out[:rows] = global_tensor[first:first + rows]
    return out


@register_op("ttnn.experimental.deepseek_prefill.extract", kind="move", golden=_prefill_extract_golden)
def prefill_extract(global_tensor: Tensor, start: Tensor, counts: Tensor, *, global_expert_id: int,
                    max_dispatched_tokens_per_expert: int, op_name: str = OWN_NAME) -> Tensor:
    """One MoE expert's rows of the dispatch buffer: global_tensor[start[e] : start[e] + ceil_tile(counts[e]), :] into
    the first rows of a [max_dispatched_tokens_per_expert, hidden] bfloat8_b TILE tensor in DRAM (the rows past them
    are left as the device leaves them; device_sim's are 0).

    >>> g = ttnn.from_torch(torch.arange(64.0).repeat_interleave(32).reshape(64, 32), ttnn.bfloat8_b,
    ...                     layout=ttnn.TILE, device=device)
    >>> idx = lambda v: ttnn.from_torch(torch.tensor(v, dtype=torch.int32), ttnn.uint32, device=device)
    >>> out = ttnn.experimental.deepseek_prefill.extract(g, idx([0, 32]), idx([32, 5]), global_expert_id=1,
    ...                                                  max_dispatched_tokens_per_expert=32)
    >>> out.shape, out.to_torch()[0, 0].item()
    (Shape([32, 32]), 32.0)
    """
    _prefill_checks(op_name, global_tensor, start, counts, global_expert_id)
    m = int(max_dispatched_tokens_per_expert)
    if m <= 0 or m % 32:
        raise tt_fatal("max_dispatched_tokens_per_expert > 0 && % TILE_HEIGHT == 0", f"{op_name}: "
                       f"max_dispatched_tokens_per_expert ({m}) must be a positive multiple of TILE_HEIGHT (32)",
                       where=_HERE)
    first, rows = _prefill_slice(start, counts, global_expert_id)
    if first + rows > global_tensor.shape[0] or rows > m:  # the kernels' runtime asserts
        raise tt_fatal("start + ceil_tile(counts) <= global_rows && ceil_tile(counts) <= max_dispatched_tokens",
                       f"{op_name}: expert {global_expert_id}'s rows [{first}, {first + rows}) leave global_tensor "
                       f"({global_tensor.shape[0]} rows) or the output ({m} rows)", where=_HERE)
    ins = device_inputs(op_name, global_tensor, start, counts)
    y = _prefill_extract_golden(held(global_tensor), values(start), values(counts), global_expert_id=global_expert_id,
                                max_dispatched_tokens_per_expert=m)
    out = output(y, global_tensor, ins, op_name=op_name, memory_config=MemoryConfig(TensorMemoryLayout.INTERLEAVED,
                                                                                       BufferType.DRAM))
    device_work.launch_after(out, True, global_tensor, programs.prefill_rows_program(global_tensor, start, "extract"))
    return out


def _prefill_insert_golden(global_tensor, local_tensor, start, counts, *_, global_expert_id=0, **__):
    first = int(start.reshape(-1)[global_expert_id])
    rows = -(-int(counts.reshape(-1)[global_expert_id]) // 32) * 32
    out = global_tensor.clone()
    out[first:first + rows] = local_tensor[:rows].to(out.dtype)
    return out


@register_op("ttnn.experimental.deepseek_prefill.insert", kind="move", golden=_prefill_insert_golden)
def prefill_insert(global_tensor: Tensor, local_tensor: Tensor, start: Tensor, counts: Tensor, *,
                   global_expert_id: int, op_name: str = OWN_NAME) -> Tensor:
    """extract's inverse, in place: local_tensor's first ceil_tile(counts[e]) rows written over global_tensor's rows
    from start[e]; returns global_tensor.

    >>> g = ttnn.from_torch(torch.zeros(64, 32), ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
    >>> loc = ttnn.from_torch(torch.ones(32, 32), ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
    >>> idx = lambda v: ttnn.from_torch(torch.tensor(v, dtype=torch.int32), ttnn.uint32, device=device)
    >>> out = ttnn.experimental.deepseek_prefill.insert(g, loc, idx([0, 32]), idx([32, 5]), global_expert_id=1)
    >>> out is g, g.to_torch()[:, 0].sum().item()
    (True, 32.0)
    """
    _prefill_checks(op_name, global_tensor, start, counts, global_expert_id, local_tensor)
    first, rows = _prefill_slice(start, counts, global_expert_id)
    if first + rows > global_tensor.shape[0] or rows > local_tensor.shape[0]:  # the kernels' runtime asserts
        raise tt_fatal("start + ceil_tile(counts) <= global_rows && ceil_tile(counts) <= local_rows",
                       f"{op_name}: expert {global_expert_id}'s rows [{first}, {first + rows}) leave global_tensor "
                       f"({global_tensor.shape[0]} rows) or local_tensor ({local_tensor.shape[0]} rows)", where=_HERE)
    device_inputs(op_name, global_tensor, local_tensor, start, counts)
    y = _prefill_insert_golden(held(global_tensor), held(local_tensor), values(start), values(counts),
                               global_expert_id=global_expert_id)
    device_work.launch(global_tensor.device(), programs.prefill_rows_program(global_tensor, start, "insert"))
    global_tensor._write(y)
    return global_tensor


# -- membership (tt-metal's experimental/isin) -------------------------------------------------------------------------


def _isin_golden(elements, test_elements, *_, invert=False, **__):
    return torch.isin(elements, test_elements, invert=invert).to(torch.int32)


@register_op("ttnn.experimental.isin", kind="move", output_keyword="out", golden=_isin_golden)
def isin(elements: Tensor, test_elements: Tensor, *, assume_unique: bool = False, invert: bool = False,
         op_name: str = OWN_NAME) -> Tensor:
    """A UINT32 mask of elements' shape and layout: 1 where the element is among test_elements (0 there if invert),
    as torch.isin. TT-NN's composite (isin.cpp): both operands to ROW_MAJOR and flattened, IsInDeviceOperation, the
    mask reshaped and laid out back as the elements were.

    >>> a = ttnn.from_torch(torch.tensor([[1, 5, 2, 9]], dtype=torch.int32), layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.tensor([9, 1], dtype=torch.int32), layout=ttnn.TILE, device=device)
    >>> ttnn.experimental.isin(a, b).to_torch()
    tensor([[1, 0, 0, 1]], dtype=torch.uint32)
    """
    if elements.dtype != test_elements.dtype:
        raise tt_fatal("elements.dtype() == test_elements.dtype()", f"{op_name}: elements.dtype: "
                       f"{elements.dtype.name}, test_elements.dtype: {test_elements.dtype.name}, they must be equal",
                       where=_HERE)
    for name, t in (("Elements", elements), ("Test elements", test_elements)):
        if t.device() is None:
            raise tt_fatal("storage_type() == StorageType::DEVICE", f"{op_name}: {name} tensor is not on a device",
                           where=_HERE)
        if t.memory_config().is_sharded():
            raise tt_fatal("!is_sharded()", f"{op_name}: {name} tensor is sharded", where=_HERE)
    flat = []
    for t in (elements, test_elements):
        if t.layout != Layout.ROW_MAJOR:
            t = to_layout(t, Layout.ROW_MAJOR)
        flat.append(reshape(t, [t.shape.volume()]) if len(t.shape) > 1 else t)
    e, t = flat
    ins = device_inputs(op_name, e, t)
    mask = output(_isin_golden(values(e), values(t), invert=invert), e, ins, op_name=op_name, dtype=DataType.UINT32,
                  layout=Layout.ROW_MAJOR, memory_config=elements.memory_config())
    device_work.launch_after(mask, True, e, programs.isin_program(e, t))
    if len(elements.shape) != 1:
        mask = reshape(mask, list(elements.shape))
    return to_layout(mask, elements.layout) if elements.layout != Layout.ROW_MAJOR else mask


# -- writing into a slice of a tensor (tt-metal's experimental/slice_write) --------------------------------------------


def _slice_write_golden(input_tensor, output_tensor, start, end, step, *_, **__):
    out = output_tensor.clone()
    out[tuple(builtins.slice(int(b), int(e), int(s)) for b, e, s in zip(start, end, step))] = input_tensor.to(out.dtype)
    return out


@register_op("ttnn.experimental.slice_write", kind="move", golden=_slice_write_golden)
def slice_write(input_tensor: Tensor, output_tensor: Tensor, start, end, step, *, op_name: str = OWN_NAME) -> Tensor:
    """Write `input_tensor` into output_tensor[start:end:step] (one python slice a dim), in place, and return
    output_tensor: the slice's shape must be the input's. slice_write.cpp takes a TILE input or output through
    ROW_MAJOR around its row-major SliceWriteDeviceOperation; an empty slice leaves the output as it is.

    >>> dst = ttnn.from_torch(torch.zeros(4, 8), dtype=ttnn.bfloat16, device=device)
    >>> src = ttnn.from_torch(torch.ones(2, 4), dtype=ttnn.bfloat16, device=device)
    >>> ttnn.experimental.slice_write(src, dst, [0, 0], [4, 8], [2, 2]).to_torch()[:2]
    tensor([[1., 0., 1., 0., 1., 0., 1., 0.],
            [0., 0., 0., 0., 0., 0., 0., 0.]], dtype=torch.bfloat16)
    """
    where = _HERE
    for name, t in (("input_tensor", input_tensor), ("output_tensor", output_tensor)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op_name}: {name} must be a ttnn tensor, got {type(t).__name__}")
    if output_tensor.is_sharded():
        raise tt_fatal("!output_tensor.is_sharded()", "Slice Write currently doesn't support sharded output tensors.",
                       where=where)
    if input_tensor.device() is None:
        raise tt_fatal("input.storage_type() == StorageType::DEVICE", "Expects Input on Device", where=where)
    begins, ends, steps = ([int(v) for v in a] for a in (start, end, step))
    out_shape = tuple(output_tensor.shape)
    if not len(begins) == len(ends) == len(steps) == len(out_shape) == len(input_tensor.shape):
        raise tt_fatal("input_tensor.padded_shape().rank() == args.slice_start.rank()",
                       f"Ranks of input {list(input_tensor.shape)}, output {list(out_shape)}, start {begins}, end "
                       f"{ends} and step {steps} must all be equal", where=where)
    size = []
    for i, (b, e, s) in enumerate(zip(begins, ends, steps)):
        if e < b:
            raise tt_fatal("ends[i] >= begins[i]", f"End {e} must be greater than or equal to start {b}", where=where)
        if s < 1 or e > out_shape[i]:
            raise tt_fatal("args.slice_end[i] <= output_padded_shape[i]", f"Ends {e} must be less than or equal to "
                           f"the shape of the tensor {out_shape[i]} (and step {s} at least 1)", where=where)
        size.append((e - b + s - 1) // s)
    if 0 in size:  # slice_write.cpp: an empty slice returns the output unchanged
        return output_tensor
    if tuple(size) != tuple(input_tensor.shape):
        raise tt_fatal("actual_shape[i] == input.logical_shape()[i]", f"Size of the slice being written {size} should "
                       f"match the size of the input tensor {list(input_tensor.shape)}", where=where)
    device_inputs(op_name, input_tensor, output_tensor)
    launched = shape_programs.slice_write_programs(input_tensor, output_tensor, tuple(steps))
    for program in launched or ():  # before the write: a launch that fails leaves the output as it was
        device_work.launch(input_tensor.device(), program)
    output_tensor._write(_slice_write_golden(held(input_tensor, op_name), held(output_tensor, op_name), begins, ends,
                                             steps))
    return output_tensor
