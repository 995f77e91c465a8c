"""TopKDeviceOperation as TT-NN's topk composite runs it, with the transposes around it.

tt-metal's ttnn/cpp/ttnn/operations/reduction/topk/: topk.cpp moves the reduced dim last (ttnn::transpose(dim, -1)
unless it is last already), views the tensor as 4-D, pads the last dim up to min_dim_per_core (64) with -inf
(+inf for the smallest), fills the tile padding the same way, runs TopKDeviceOperation with k rounded up to whole
tiles, slices the results back to k and transposes both back. TopKDeviceOperation picks its multi-core factory for
a last dim of at least multi_core_min_width (8192) that is a power of two with k <= 64 (when
find_topk_core_config finds a core split), else its "single-core" factory
(device/topk_single_core_program_factory.cpp), which splits the Ht rows of tiles over the grid (or the
sub_core_grids given) row by row (split_work_to_cores, row_wise) and creates, in the indices' format (UINT16 while
the dim fits, else UINT32):

    c_0 2 input tiles, c_1 2 index tiles, c_2 4 and c_4 2 x Kt tiles in the compute format (bfloat16 for a
    bfloat8_b input, else the input's), c_3 4 and c_5 2 x Kt index tiles, c_6 Kt value tiles, c_7 Kt index tiles

Modelled: an interleaved bfloat16 / bfloat8_b TILE input of rank <= 4 reduced over its last or second-to-last dim;
a dim under 64 padded with the multi-core pad (bfloat16 outside L1, as topk.cpp picks pad_multicore); tile padding
filled (device_sim.programs.fill_pad; bfloat16); a k off whole tiles sliced back (the slice programs of
device_sim.programs.shape, on stand-ins for TopK's outputs); the single-core factory. Anything else launches
nothing (None): see docs/device_work.md.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.topk import topk_programs
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> [(p.name, p.ranges) for p in topk_programs(x, 32, -1)]
    [('TopKDeviceOperation', ((0, 0, 1, 0),))]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

import math

from device_sim.device_work import (
    TILE,
    TILE_BYTES,
    CircularBuffer,
    Program,
    cached,
    grid_of,
    make_program,
    shape_of,
    split_work,
)
from device_sim.programs import data_movement
from device_sim.programs import shape as shape_programs
from device_sim.programs.fill_pad import fill_pad_program, needs_fill
from device_sim.programs.intermediate import Intermediate
from device_sim.types import BufferType, DataType, Layout

NAME = "TopKDeviceOperation"
_MULTI_CORE_MIN_WIDTH = 8192  # topk_constants.hpp
_MIN_DIM_PER_CORE = 64
_DTYPES = {DataType.BFLOAT16, DataType.BFLOAT8_B}  # validate: "Input tensor must be BFLOAT16, or BFLOAT8_B"


def index_dtype(width: int) -> DataType:
    """compute_output_specs' index dtype: UINT16 while the reduced dim is at most 65535 long, else UINT32."""
    return DataType.UINT16 if width <= 65535 else DataType.UINT32


def topk_programs(x, k: int, dim: int, sub_core_grids=None) -> tuple[Program, ...] | None:
    """The programs TT-NN's topk runs for the k best of `x` along `dim`, in order: for the second-to-last dim a
    transpose first, a pad for a dim under 64, TopK with k rounded up to whole tiles, the slices of both results
    back to k, and for the second-to-last dim their transposes back; None where not modelled (see the module
    docstring)."""
    if x.device() is None or x.is_sharded() or x.layout != Layout.TILE or x.dtype not in _DTYPES:
        return None
    shape = tuple(x._value.shape)
    rank = len(shape)
    if not 2 <= rank <= 4 or dim % rank < rank - 2:
        return None  # an outer dim (a permute; not modelled)
    last = dim % rank == rank - 1
    width = shape[-1] if last else shape[-2]
    in_l1 = x.memory_config().buffer_type == BufferType.L1
    if width < _MIN_DIM_PER_CORE and (x.dtype != DataType.BFLOAT16 or in_l1):
        return None  # topk.cpp's pad without pad_multicore (not modelled)
    if x.dtype == DataType.BFLOAT8_B and (shape[-1] % TILE or shape[-2] % TILE):
        return None  # a bfloat8_b fill of the tile padding is typecast around (not modelled)
    width, kt = -(-max(width, _MIN_DIM_PER_CORE) // TILE) * TILE, -(-k // TILE)
    if width >= _MULTI_CORE_MIN_WIDTH and width & (width - 1) == 0 and kt * TILE <= 64:
        return None  # the multi-core factory (not modelled)
    dev = x.device()
    grids = None if sub_core_grids is None else tuple(
        (r.start.x, r.start.y, r.end.x, r.end.y) for r in sub_core_grids.ranges())
    key = (NAME, shape, x.dtype, k, last, in_l1, grids, grid_of(dev))
    return cached(key, lambda: _build(x, shape, k, last, grids))


def first_cores(ranges: tuple, n: int) -> tuple:
    """The first n cores of core ranges taken in order, each row by row (split_work_to_cores over a CoreRangeSet,
    row_wise), as ranges: the whole rows of a range, then a partial row."""
    out = []
    for x0, y0, x1, y1 in ranges:
        if n <= 0:
            break
        width = x1 - x0 + 1
        take = min(n, width * (y1 - y0 + 1))
        rows, rest = divmod(take, width)
        if rows:
            out.append((x0, y0, x1, y0 + rows - 1))
        if rest:
            out.append((x0, y0 + rows, x0 + rest - 1, y0 + rows))
        n -= take
    return tuple(out)


def _build(x, shape, k, last, grids=None) -> tuple[Program, ...] | None:
    dev, dtype = x.device(), x.dtype
    moved = shape if last else (*shape[:-2], shape[-1], shape[-2])  # the reduced dim last
    moved4 = (1,) * (4 - len(moved)) + moved
    programs = [] if last else [data_movement.transpose_wh_shape_program(dev, shape, dtype)]
    if moved4[-1] < _MIN_DIM_PER_CORE:  # padded to 64 with -inf (+inf for the smallest)
        padded4 = (*moved4[:-1], _MIN_DIM_PER_CORE)
        programs.append(shape_programs.pad_program(Intermediate(x, moved4, dtype), None, 0, out_shape=padded4))
        moved4 = padded4
    if needs_fill(moved4):  # the tile padding filled with -inf (+inf)
        programs.append(fill_pad_program(dev, moved4, dtype))
    rows = moved4[0] * moved4[1] * -(-moved4[2] // TILE) * TILE
    ht, kt = rows // TILE, -(-k // TILE)
    idx = index_dtype(-(-moved4[-1] // TILE) * TILE)
    value, index = TILE_BYTES[dtype], TILE_BYTES[idx]
    compute = TILE_BYTES[DataType.BFLOAT16] if dtype == DataType.BFLOAT8_B else value
    cbs = (CircularBuffer((0,), 2, value), CircularBuffer((1,), 2, index), CircularBuffer((2,), 4, compute),
           CircularBuffer((3,), 4, index), CircularBuffer((4,), 2 * kt, compute), CircularBuffer((5,), 2 * kt, index),
           CircularBuffer((6,), kt, value), CircularBuffer((7,), kt, index))
    programs.append(make_program(NAME, "TopKSingleCoreProgramFactory", cbs,
                                 split_work(ht, *grid_of(dev), row_wise=True) if grids is None
                                 else first_cores(grids, ht)))
    if kt * TILE != k:  # both results sliced from the whole tiles back to k
        whole, cut = (*moved4[:-1], kt * TILE), (*moved4[:-1], k)
        index_of_cut = tuple(slice(0, n) for n in cut)
        for dt in (dtype, idx):
            sliced = shape_programs.slice_piece_programs(Intermediate(x, whole, dt), Intermediate(x, cut, dt),
                                                         index_of_cut)
            if sliced is None:
                return None
            programs += sliced
    if not last:
        result = (*moved[:-1], k)  # TopK's outputs, transposed back: values, then indices
        programs += [data_movement.transpose_wh_shape_program(dev, result, dtype),
                     data_movement.transpose_wh_shape_program(dev, result, idx)]
    return tuple(programs)


def moe_program(x, expert_mask, topk_mask, out) -> Program:
    """MoeProgramFactory (reduction/moe/device/moe_program_factory.cpp) on core (0, 0), for x [N, C, H, W]: Ht rows
    of Wt tiles sorted by topk's local sort and merge. c_0, c_1, c_2 the input, expert mask and top-k mask (4 tiles
    each: two at a time, double-buffered), c_3 one scaler tile (float32 for a float32 input, else bfloat16), c_4 the
    indices (4 uint16 tiles), c_5 / c_6 a row of transposed values (bfloat16) and indices (Wt each), c_7 / c_8 two
    value and index tiles, c_9, c_10 and c_11 (max, sum, output) the output's tiles each."""
    key = ("MoeDeviceOperation", shape_of(x), x.dtype, expert_mask.dtype, topk_mask.dtype, out.dtype)

    def build():
        wt = x.padded_shape[-1] // TILE
        out_tiles = math.prod(out.padded_shape) // (TILE * TILE)
        scalar = TILE_BYTES[DataType.FLOAT32 if x.dtype == DataType.FLOAT32 else DataType.BFLOAT16]
        index, value = TILE_BYTES[DataType.UINT16], TILE_BYTES[DataType.BFLOAT16]
        cbs = (CircularBuffer((0,), 4, TILE_BYTES[x.dtype]), CircularBuffer((1,), 4, TILE_BYTES[expert_mask.dtype]),
               CircularBuffer((2,), 4, TILE_BYTES[topk_mask.dtype]), CircularBuffer((3,), 1, scalar),
               CircularBuffer((4,), 4, index), CircularBuffer((5,), wt, value), CircularBuffer((6,), wt, index),
               CircularBuffer((7,), 2, value), CircularBuffer((8,), 2, index),
               *(CircularBuffer((i,), out_tiles, TILE_BYTES[out.dtype]) for i in (9, 10, 11)))
        return make_program("MoeDeviceOperation", "MoeProgramFactory", cbs, ((0, 0, 0, 0),))

    return cached(key, build)
