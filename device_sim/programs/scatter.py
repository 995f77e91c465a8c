"""ScatterDeviceOperation as TT-NN's scatter composite runs it: in ROW_MAJOR, between untilizes and a tilize.

tt-metal's ttnn/cpp/ttnn/operations/data_movement/scatter/: scatter.cpp takes the input, the index and the source
(sliced to the index's shape; a whole-tensor slice is the source itself) to ROW_MAJOR (to_layout: an untilize, with
unpadding when not whole tiles), moves the scattered dim last (a row-major transpose unless it is last already),
views them as 4-D, runs ScatterDeviceOperation and takes the result back to the input's layout. Without a reduction
the device operation's factory is device/scatter_program_factory.cpp: one page each of c_0 (input), c_2 (index),
c_1 (source) and c_3 (output), created in that order, a page being a row chunk rounded up to 32 B: the row, or at
most calculate_optimal_chunk_size's ceil32(free L1 / 16 x 0.8 - 32) values of it (free L1: from the allocator's
base to the lowest L1 buffer); split_work_to_cores (column by column) over the input's rows.

A reduction ('add', 'multiply') of a bfloat16 input runs device/scatter_reduce_bfloat16_program_factory.cpp instead:
the same four pages and c_4, a float32 page of the row chunk (the running value); of another dtype, the plain factory.

Modelled: interleaved input, index and source tensors (TILE or ROW_MAJOR) of rank <= 4, scattered along the last
dim, the source of the index's shape. Anything else launches nothing (None).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.scatter import scatter_programs
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(4, 64), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=dev)
    >>> i = ttnn.from_torch(torch.zeros(4, 8, dtype=torch.int32), dtype=ttnn.uint32, layout=ttnn.ROW_MAJOR, device=dev)
    >>> s = ttnn.from_torch(torch.ones(4, 8), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=dev)
    >>> [[(cb.indices[0], cb.page_size) for cb in p.cbs] for p in scatter_programs(x, i, s, -1, x)]
    [[(0, 128), (2, 32), (1, 32), (3, 128)]]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim import dtypes
from device_sim.device_work import CircularBuffer, Program, cached, grid_of, make_program, shape_of, split_work
from device_sim.programs import data_movement
from device_sim.types import BufferType, DataType, Layout

NAME = "ScatterDeviceOperation"
_I32 = {DataType.UINT32, DataType.INT32}


def _ceil32(n: int) -> int:
    return -(-n // 32) * 32


def chunk_values(device) -> int:
    """calculate_optimal_chunk_size: the most values of a row one page holds, from the L1 free below the lowest L1
    buffer (the top of L1 when there is none), down from the allocator's base."""
    c = device.config
    lowest = device.memory.allocators[BufferType.L1].lowest_occupied_address()
    room = (lowest if lowest is not None else c.l1_size) - c.l1_unreserved_base
    return _ceil32(int((room // 4 // 4) * 0.8 - 32))


def scatter_programs(x, index, src, dim: int, out, *, reduce: bool = False) -> tuple[Program, ...] | None:
    """The programs TT-NN's scatter runs to write `src` into `x` at `index` along `dim` (`out` the result, for the
    tilize back; `reduce`: a reduction was asked for), in order; None where not modelled (see the module docstring)."""
    tensors = (x, index, src)
    if any(getattr(t, "_device", None) is None or t.is_sharded() or t.dtype.is_block_float for t in tensors):
        return None  # a block-float tensor has no ROW_MAJOR form (TT-NN's to_layout changes its dtype)
    shape = tuple(x._value.shape)
    rank = len(shape)
    if any(t.layout == Layout.TILE and (t.dtype == DataType.FLOAT32 or t.dtype in _I32 and t._value.shape[dim] > 256)
           for t in tensors):
        return None  # check_support refuses these (float32 TILE; a 32-bit TILE row over 256): device_sim computes them
    if not 1 <= rank <= 4 or dim % rank != rank - 1 or tuple(src._value.shape) != tuple(index._value.shape):
        return None  # a row-major transpose, a source slice or a 5-D view first (not modelled)
    dev = x.device()
    chunk = chunk_values(dev)
    reduce = reduce and x.dtype == DataType.BFLOAT16  # select_program_factory: the reduce factory for bfloat16 only
    key = (NAME, *(shape_of(t) for t in (*tensors, out)), x.dtype, index.dtype, src.dtype, out.dtype, chunk,
           grid_of(dev), reduce)
    return cached(key, lambda: _build(dev, tensors, out, chunk, reduce))


def _build(dev, tensors, out, chunk, reduce: bool) -> tuple[Program, ...]:
    x, index, src = tensors
    scatter = _scatter(dev, tuple(x._value.shape), tuple(index._value.shape), x.dtype, index.dtype, src.dtype, chunk,
                       reduce)
    before = tuple(data_movement.untilize_program(t, t.dtype, name="UntilizeWithUnpaddingDeviceOperation" if tuple(
        t._value.shape[-2:]) != tuple(t.padded_shape[-2:]) else "UntilizeDeviceOperation")
        for t in tensors if t.layout == Layout.TILE)
    if x.layout != Layout.TILE:
        return (*before, scatter)
    padded_out = tuple(out._value.shape[-2:]) != tuple(out.padded_shape[-2:])
    tilize = data_movement.tilize_program(x, out.dtype, out=out, name="TilizeWithValPaddingDeviceOperation"
                                          if padded_out else "TilizeDeviceOperation")
    return (*before, scatter, tilize)


def _scatter(dev, shape, ishape, dtype, idx_dtype, src_dtype, chunk, reduce: bool) -> Program:
    size = dtypes.ELEMENT_SIZE
    rows = 1
    for d in shape[:-1]:
        rows *= d
    page_in = _ceil32(min(shape[-1], chunk) * size[dtype])
    page_idx = _ceil32(min(ishape[-1], chunk) * size[idx_dtype])
    page_src = _ceil32(min(ishape[-1], chunk) * size[src_dtype])
    cbs = (CircularBuffer((0,), 1, page_in), CircularBuffer((2,), 1, page_idx), CircularBuffer((1,), 1, page_src),
           CircularBuffer((3,), 1, page_in))
    if reduce:
        cbs += (CircularBuffer((4,), 1, _ceil32(min(shape[-1], chunk) * 4)),)
    factory = "ScatterReduceBfloat16ProgramFactory" if reduce else "ScatterProgramFactory"
    return make_program(NAME, factory, cbs, split_work(rows, *grid_of(dev)))
