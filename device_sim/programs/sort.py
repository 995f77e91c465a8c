"""SortDeviceOperation as TT-NN's sort composite runs it, with the transposes around it.

tt-metal's ttnn/cpp/ttnn/operations/data_movement/sort/: sort.cpp moves the sorted dim last (ttnn::transpose(dim, -1)
unless it is last already), views the tensor as 4-D, fills its tile padding with -inf / +inf, pads the last dim
to a power of two of at least 64 (bitonic sort), runs SortDeviceOperation, slices both results back and transposes
them back (values, then indices). The device operation takes its single-row single-core factory up to
SORT_WT_THRESHOLD (64) tiles along the dim (device/sort_single_row_single_core_program_factory.cpp), whose CBs are
c_0 and c_1 4 input / index tiles, c_2 and c_3 the row's Wt input / index tiles, c_4 two value tiles (in pages of the
index tile, as the factory sets them), c_5 two index tiles and c_6 a 1,024 B synchronization page; on one core a
row of tiles: the first Ht cores of the grid row by row, and for a partial last row one core more than the rows
left, as the factory's CoreRange ends at x = Ht % grid_x (the whole grid from Ht >= the cores on).

Modelled: an interleaved bfloat16 / uint16 TILE input of rank 2..4 sorted along its last or second-to-last dim,
up to 64 tiles along it once padded, with the fill of its tile padding (device_sim.programs.fill_pad), the pad to a
power of two (device_sim.programs.shape's pad) and the slices back, on stand-ins for the intermediate tensors.
Anything else launches nothing (None): see docs/device_work.md.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.sort import sort_programs
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> [(p.name, [cb.num_pages for cb in p.cbs], p.ranges) for p in sort_programs(x, -1, ttnn.uint16)]
    [('SortDeviceOperation', [4, 4, 4, 4, 2, 2, 1], ((0, 0, 1, 0),))]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, Program, cached, grid_of, make_program
from device_sim.programs import data_movement
from device_sim.programs import shape as shape_programs
from device_sim.programs.fill_pad import fill_pad_program, needs_fill
from device_sim.programs.intermediate import Intermediate
from device_sim.types import DataType, Layout

NAME = "SortDeviceOperation"
_WT_THRESHOLD = 64  # sort_device_operation.cpp's SORT_WT_THRESHOLD: past it, the multi-core factories
_DTYPES = {DataType.BFLOAT16, DataType.UINT16}


def sort_programs(x, dim: int, index_dtype: DataType) -> tuple[Program, ...] | None:
    """The programs TT-NN's sort runs along `dim` of `x` (indices in `index_dtype`), in order: for the
    second-to-last dim a transpose first, a FillPad of tile padding, a pad of the dim to a power of two of at least
    64, the sort, slices of both results back, and for the second-to-last dim their transposes back; None where not
    modelled (see the module docstring)."""
    if x.device() is None or x.is_sharded() or x.layout != Layout.TILE or x.dtype not in _DTYPES:
        return None
    shape = tuple(x._value.shape)
    rank = len(shape)
    if not 2 <= rank <= 4 or dim % rank < rank - 2:
        return None  # an outer dim (a permute; not modelled)
    last = dim % rank == rank - 1
    width = -(-(shape[-1] if last else shape[-2]) // TILE) * TILE
    if _bitonic_width(width) // TILE > _WT_THRESHOLD:
        return None  # the cross-core or DRAM factory (not modelled)
    dev = x.device()
    key = (NAME, shape, x.dtype, index_dtype, last, grid_of(dev))
    return cached(key, lambda: _build(x, shape, index_dtype, last))


def _bitonic_width(padded_w: int) -> int:
    """pre_sort_transform_tensor's padded last dim: the next power of two of the tile-padded width, at least 64."""
    target = 1 << max(padded_w - 1, 1).bit_length()
    return max(target, 2 * TILE)


def _cores(ht: int, gx: int, gy: int) -> tuple:
    if ht >= gx * gy:
        return ((0, 0, gx - 1, gy - 1),)
    rows, cols = divmod(ht, gx)
    if rows == 0:
        return ((0, 0, cols - 1, 0),)
    return ((0, 0, gx - 1, rows - 1),) + (((0, rows, cols, rows),) if cols else ())


def _build(x, shape, idx_dtype, last) -> tuple[Program, ...] | None:
    dev, dtype = x.device(), x.dtype
    moved = shape if last else (*shape[:-2], shape[-1], shape[-2])
    moved4 = (1,) * (4 - len(moved)) + moved
    programs = [] if last else [data_movement.transpose_wh_shape_program(dev, shape, dtype)]
    if needs_fill(moved4):  # -inf (+inf) into the tile padding
        programs.append(fill_pad_program(dev, moved4, dtype))
    padded_w = -(-moved4[-1] // TILE) * TILE
    target = _bitonic_width(padded_w)
    padding = target != padded_w  # a power of two of whole tiles, past one tile, is sorted as it is
    sorted4 = (*moved4[:-1], target) if padding else moved4
    if padding:  # ttnn::pad(multicore) up to the power of two
        programs.append(shape_programs.pad_program(Intermediate(x, moved4, dtype), None, 0, out_shape=sorted4))
    ht, wt = moved4[0] * moved4[1] * -(-moved4[2] // TILE), target // TILE
    value, index = TILE_BYTES[dtype], TILE_BYTES[idx_dtype]
    cbs = (CircularBuffer((0,), 4, value), CircularBuffer((1,), 4, index), CircularBuffer((2,), wt, value),
           CircularBuffer((3,), wt, index), CircularBuffer((4,), 2 * value // index, index),
           CircularBuffer((5,), 2, index), CircularBuffer((6,), 1, TILE * TILE))
    programs.append(make_program(NAME, "SortProgramFactorySingleRowSingleCore", cbs, _cores(ht, *grid_of(dev))))
    if padding:  # both results sliced back to the dim's length
        cut = tuple(slice(0, n) for n in moved4)
        for dt in (dtype, idx_dtype):
            sliced = shape_programs.slice_piece_programs(Intermediate(x, sorted4, dt), Intermediate(x, moved4, dt), cut)
            if sliced is None:
                return None
            programs += sliced
    if not last:
        programs += [data_movement.transpose_wh_shape_program(dev, moved, dtype),
                     data_movement.transpose_wh_shape_program(dev, moved, idx_dtype)]
    return tuple(programs)
