"""AccumulationDeviceOperation as TT-NN's cumsum runs it, with the permutes around it.

tt-metal's ttnn/cpp/ttnn/operations/reduction/accumulation/: accumulation_common.cpp's accumulation_invoke
typecasts to `dtype` when one is given, and when the scanned dim is among the last three of the input
(rank - dim < 4) views the input as 4-D and permutes the dim to the front (ttnn::permute swapping it with dim 0),
scans dim 0 and permutes back; a dim further out is scanned where it is. The scan's factory
(device/accumulation_program_factory.cpp) creates four CBs of four tiles each on the cores split_work_to_cores
gives its rows (the tiles that are not along the scanned dim): c_0 in the input's format, then c_3 (the
accumulator), c_2 (the start value) and c_1 (the output) in the output's.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.accumulation import accumulation_programs
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(4, 2, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> [(p.name, [cb.indices[0] for cb in p.cbs], p.ranges) for p in accumulation_programs(x, 0, ttnn.bfloat16)]
    [('AccumulationDeviceOperation', [0, 3, 2, 1], ((0, 0, 0, 3),))]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import (
    TILE_BYTES,
    CircularBuffer,
    Program,
    cached,
    cores_col_major,
    grid_of,
    make_program,
    shape_of,
    split_work,
)
from device_sim.programs import data_movement, shape
from device_sim.programs.intermediate import Intermediate
from device_sim.tensor import padded
from device_sim.types import DataType, Layout

NAME = "AccumulationDeviceOperation"


def accumulation_programs(x, dim: int, out_dtype: DataType) -> tuple[Program, ...] | None:
    """The programs TT-NN's cumsum runs over `dim` of `x` into `out_dtype`, in order; () for an empty or 0-D
    tensor (TT-NN returns it); None where not modelled: a host, sharded or ROW_MAJOR tensor, rank over 4 with the
    dim among its last three (a 5-D permute), or a permute device_sim does not model."""
    if x.device() is None or x.is_sharded() or x.layout != Layout.TILE:
        return None
    rank = x._value.dim()
    if rank == 0 or x._value.numel() == 0:
        return ()
    axis = dim % rank
    if rank - axis < 4 and rank > 4:
        return None
    key = (NAME, shape_of(x), x.dtype, out_dtype, axis, x.memory_config().buffer_type, grid_of(x.device()))
    return cached(key, lambda: _build(x, axis, out_dtype))


def _build(x, axis: int, out_dtype: DataType) -> tuple[Program, ...] | None:
    programs = []
    dtype = x.dtype
    if out_dtype != x.dtype:  # ttnn::typecast first
        programs.append(data_movement.typecast_program(x, out_dtype))
        dtype = out_dtype
    dims, rank = tuple(x._value.shape), x._value.dim()
    if rank - axis >= 4:  # scanned where it is
        return (*programs, _scan(x.device(), x, dims, dtype, out_dtype, axis))
    dims4, axis4 = (1,) * (4 - rank) + dims, axis + 4 - rank  # the reshape to 4-D: a view
    order = [0, 1, 2, 3]
    order[0], order[axis4] = axis4, 0
    moved = tuple(dims4[d] for d in order)
    forward = shape.permute_programs(Intermediate(x, dims4, dtype), Intermediate(x, moved, dtype), order)
    back = shape.permute_programs(Intermediate(x, moved, out_dtype), Intermediate(x, dims4, out_dtype), order)
    if forward is None or back is None:
        return None
    return (*programs, *forward, _scan(x.device(), x, moved, dtype, out_dtype, 0), *back)


def _scan(dev, like, dims, in_dtype, out_dtype, axis: int) -> Program:
    pad = padded(dims, Layout.TILE, like.tile)
    tiles = 1
    for d in pad:
        tiles *= d
    tiles //= 32 * 32
    rows = tiles // pad[axis]  # the work units: every tile but those along the scanned dim
    cbs = (CircularBuffer((0,), 4, TILE_BYTES[in_dtype]), CircularBuffer((3,), 4, TILE_BYTES[out_dtype]),
           CircularBuffer((2,), 4, TILE_BYTES[out_dtype]), CircularBuffer((1,), 4, TILE_BYTES[out_dtype]))
    return make_program(NAME, "AccumulationProgramFactory", cbs, split_work(rows, *grid_of(dev)))


def max_cores_dividing(num_tiles: int, num_cores_max: int) -> tuple[int, int]:
    """get_max_cores_divisible_by_tiles_per_core_tiles (request_even=false): the most cores up to num_cores_max that
    divide num_tiles evenly (1 when none does), and the tiles each then takes."""
    cores = max((i for i in range(2, num_cores_max + 1) if num_tiles % i == 0), default=1)
    return cores, -(-num_tiles // cores)


def ema_program(x, out_dtype: DataType, grid_x: int, grid_y: int) -> Program:
    """EmaProgramFactory (reduction/accumulation/ema/device/ema_program_factory.cpp) for a TILE [1, B, C, T]: the
    B * C/32 rows of tiles over the most cores of the grid that divide them evenly, column by column
    (grid_to_cores(..., row_wise=false)); c_0 the input and c_1 the output two tiles each (ema_buffer_depth), c_2 one
    tile in the input's format (the transposed tile the SFPU reads)."""
    key = ("EmaDeviceOperation", shape_of(x), x.dtype, out_dtype, grid_x, grid_y)

    def build():
        _, b, c, _ = x.padded_shape
        cores, _ = max_cores_dividing(b * (c // 32), grid_x * grid_y)
        cbs = (CircularBuffer((0,), 2, TILE_BYTES[x.dtype]), CircularBuffer((1,), 2, TILE_BYTES[out_dtype]),
               CircularBuffer((2,), 1, TILE_BYTES[x.dtype]))
        return make_program("EmaDeviceOperation", "EmaProgramFactory", cbs, cores_col_major(cores, grid_x, grid_y))

    return cached(key, build)
