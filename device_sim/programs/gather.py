"""GatherDeviceOperation as TT-NN's gather composite runs it, with the transposes around it.

tt-metal's ttnn/cpp/ttnn/operations/data_movement/gather/: gather.cpp moves the gathered dim last in the index and
then in the input (ttnn::transpose(dim, -1) unless it is last already), views both as 4-D, fills the index's
tile padding with 0 (fill_implicit_tile_padding), slices the input to the index's shape but for the last dim
(a whole-tensor slice is the input itself) and fills its tile padding, runs GatherDeviceOperation and transposes
its output back. The device operation picks its factory by the tiles along the last dim
(device/gather_device_operation.cpp, GATHER_WT_THRESHOLD = 60): past 60 in the input or the index,
GatherProgramFactorySingleRowMultiCore (c_0 2 input tiles, c_1 one index tile, c_2 one output tile, over the
index's Wt tiles); else GatherProgramFactorySingleRowSingleCore (c_0 a whole input row of Wt tiles, c_1 and c_2 one
tile each, over the index's Ht rows of tiles); both split the work over the grid row by row.

Modelled: interleaved TILE input and index of the same rank <= 4, gathered along the last or the second-to-last dim;
the input's slice to the index's padded rows (device_sim.programs.shape's slice programs, on stand-ins) when they
differ, within the input; FillPadDeviceOperation (device_sim.programs.fill_pad) for tensors that are not whole
tiles. Anything else launches nothing (None): see docs/device_work.md.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.gather import gather_programs
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> i = ttnn.from_torch(torch.zeros(1, 64, 32, dtype=torch.int32), dtype=ttnn.uint32, layout=ttnn.TILE, device=dev)
    >>> [(p.factory, [cb.num_pages for cb in p.cbs]) for p in gather_programs(x, i, -1)]
    [('GatherProgramFactorySingleRowSingleCore', [4, 1, 1])]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, Program, cached, grid_of, make_program, split_work
from device_sim.programs import data_movement
from device_sim.programs import shape as shape_programs
from device_sim.programs.fill_pad import fill_pad_program, needs_fill
from device_sim.programs.intermediate import Intermediate
from device_sim.types import DataType, Layout

NAME = "GatherDeviceOperation"
_WT_THRESHOLD = 60  # gather_device_operation.cpp's GATHER_WT_THRESHOLD
_INDEX_DTYPES = {DataType.UINT32, DataType.UINT16}


def gather_programs(x, index, dim: int) -> tuple[Program, ...] | None:
    """The programs TT-NN's gather runs to pick `x`'s values at `index` along `dim`, in order: for the second-to-last
    dim the index's transpose, a FillPad of the index when it is not whole tiles, the input's transpose, a FillPad
    of the input when it is not whole tiles, the gather, and for the second-to-last dim the output's transpose;
    None where not modelled (see the module docstring)."""
    if x.device() is None or index.device() is None or x.is_sharded() or index.is_sharded():
        return None
    if x.layout != Layout.TILE or index.layout != Layout.TILE or index.dtype not in _INDEX_DTYPES:
        return None
    shape, ishape = tuple(x._value.shape), tuple(index._value.shape)
    rank = len(shape)
    if not 2 <= rank <= 4 or len(ishape) != rank or dim % rank < rank - 2:
        return None
    last = dim % rank == rank - 1
    moved = shape if last else (*shape[:-2], shape[-1], shape[-2])
    imoved = ishape if last else (*ishape[:-2], ishape[-1], ishape[-2])
    # the input is sliced to the index's padded shape but for the last dim: a slice past the input is not modelled
    ends = (*_four(imoved)[:2], -(-imoved[-2] // TILE) * TILE, moved[-1])
    if any(e > n for e, n in zip(ends, _four(moved))):
        return None
    if x.dtype.is_block_float and needs_fill(ends):
        return None  # a bfloat8_b fill is typecast around (not modelled)
    dev = x.device()
    key = (NAME, shape, ishape, x.dtype, index.dtype, last, x.memory_config().buffer_type, grid_of(dev))
    return cached(key, lambda: _build(x, shape, ishape, moved, imoved, ends, index.dtype, last))


def _four(shape) -> tuple:
    return (1,) * (4 - len(shape)) + tuple(shape)


def _build(x, shape, ishape, moved, imoved, ends, idx_dtype, last) -> tuple[Program, ...] | None:
    dev, dtype = x.device(), x.dtype
    rows = ends[0] * ends[1] * ends[2]  # the index's padded rows
    ht, wt_in, wt_idx = rows // TILE, -(-moved[-1] // TILE), -(-imoved[-1] // TILE)
    value, index = TILE_BYTES[dtype], TILE_BYTES[idx_dtype]
    gx, gy = grid_of(dev)
    if wt_in > _WT_THRESHOLD or wt_idx > _WT_THRESHOLD:
        gather = make_program(NAME, "GatherProgramFactorySingleRowMultiCore", (
            CircularBuffer((0,), 2, value), CircularBuffer((1,), 1, index), CircularBuffer((2,), 1, value)),
            split_work(wt_idx, gx, gy, row_wise=True))
    else:
        gather = make_program(NAME, "GatherProgramFactorySingleRowSingleCore", (
            CircularBuffer((0,), wt_in, value), CircularBuffer((1,), 1, index), CircularBuffer((2,), 1, value)),
            split_work(ht, gx, gy, row_wise=True))
    programs = [] if last else [data_movement.transpose_wh_shape_program(dev, ishape, idx_dtype)]
    if needs_fill(imoved):  # the index's tile padding filled with 0
        programs.append(fill_pad_program(dev, _four(imoved), idx_dtype))
    if not last:
        programs.append(data_movement.transpose_wh_shape_program(dev, shape, dtype))
    if ends != _four(moved):  # the input sliced to the index's padded rows (the slice programs of shape.py)
        sliced = shape_programs.slice_piece_programs(Intermediate(x, _four(moved), dtype), Intermediate(x, ends, dtype),
                                                     tuple(slice(0, e) for e in ends))
        if sliced is None:
            return None
        programs += sliced
    if needs_fill(ends):  # the input's with the float minimum
        programs.append(fill_pad_program(dev, ends, dtype))
    programs.append(gather)
    if not last:
        programs.append(data_movement.transpose_wh_shape_program(dev, imoved, dtype))
    return tuple(programs)
