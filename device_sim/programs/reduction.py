"""ReduceDeviceOperation (sum, mean, max, min over the last two dims) as TT-NN's reduce factories build it.

A reduction over W is reduce_op_multi_core_w.cpp, over H reduce_op_multi_core_h.cpp (tt-metal's
ttnn/cpp/ttnn/operations/reduction/generic/device/); over both, TT-NN runs W then H: two programs.
Reductions over the outer dims (a transpose first in TT-NN) are not modelled.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.reduction import reduce_programs
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 1, 64, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> [[cb.num_pages for cb in p.cbs] for p in reduce_programs(x, ttnn.bfloat16, (3,))]
    [[2, 2, 2, 1]]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim import dtypes
from device_sim.device_work import (
    TILE,
    TILE_BYTES,
    CircularBuffer,
    Program,
    cached,
    cores_row_major,
    grid_of,
    make_program,
    shape_of,
    split_work,
)
from device_sim.types import DataType

NAME = "ReduceDeviceOperation"
_BF16 = DataType.BFLOAT16


def reduce_programs(x, out_dtype: DataType, dims: tuple[int, ...]) -> tuple[Program, ...]:
    """The programs reducing `x` (TILE, interleaved) over `dims` (non-negative), () when TT-NN would
    first move other dims into place (not modelled). W: c_0 two input tiles, c_2 two bfloat16 scaler
    tiles, c_3 two output tiles, c_4 one accumulator tile, split_work_to_cores over the NC*Ht rows of
    tiles. H: c_0 two input tiles, c_2 one scaler tile, c_16 two output tiles, over the NC*Wt columns."""
    torch_shape = x._value.shape
    rank = len(torch_shape)
    dims = tuple(sorted(set(dims)))
    if not dims or any(d < rank - 2 and torch_shape[d] != 1 for d in dims):
        return ()
    dev = x.device()
    key = (NAME, shape_of(x), x.dtype, out_dtype, dims, grid_of(dev))
    return cached(key, lambda: _build(dev, tuple(x.padded_shape), x.dtype, out_dtype, dims))


def _build(dev, shape, in_dtype, out_dtype, dims) -> tuple[Program, ...]:
    rank = len(shape)
    nc = 1
    for d in shape[:-2]:
        nc *= d
    ht, wt = shape[-2] // TILE, shape[-1] // TILE
    gx, gy = grid_of(dev)
    in_t, out_t, scaler = TILE_BYTES[in_dtype], TILE_BYTES[out_dtype], TILE_BYTES[_BF16]
    programs = []
    if rank - 1 in dims:
        cbs = (CircularBuffer((0,), 2, in_t), CircularBuffer((2,), 2, scaler), CircularBuffer((3,), 2, out_t),
               CircularBuffer((4,), 1, out_t))
        programs.append(make_program(NAME, "ReduceMultiCoreWProgramFactory", cbs, split_work(nc * ht, gx, gy)))
        in_t, wt = out_t, 1  # H then reads W's output, one tile wide
    if rank - 2 in dims:
        cbs = (CircularBuffer((0,), 2, in_t), CircularBuffer((2,), 1, scaler), CircularBuffer((16,), 2, out_t))
        programs.append(make_program(NAME, "ReduceMultiCoreHProgramFactory", cbs, split_work(nc * wt, gx, gy)))
    return tuple(programs)


def fast_reduce_nc_program(x, out_dtype: DataType, dim: int, *, fp32_dest_acc_en: bool) -> Program:
    """FastReduceNCDeviceOperation over one outer dim of `x` (experimental/reduction/fast_reduce_nc/device/
    fast_reduce_nc_program_factory.cpp): c_0 twice `granularity` input tiles (the largest divisor of the reduced
    dim up to 8), c_1 one bfloat16 zero tile, c_24 the accumulator (a float32 tile with an fp32 destination), c_16
    two output tiles; split_work_to_cores row by row over the output's tiles."""
    shape = tuple(x.padded_shape)
    key = ("FastReduceNCDeviceOperation", shape, dim, x.dtype, out_dtype, fp32_dest_acc_en, grid_of(x.device()))

    def build():
        page = TILE_BYTES[out_dtype]
        granularity = next(g for g in range(8, 0, -1) if shape[dim] % g == 0)
        out_tiles = 1
        for i, d in enumerate(shape[:-2]):
            out_tiles *= 1 if i == dim else d
        out_tiles *= shape[-2] // TILE * (shape[-1] // TILE)
        cbs = (CircularBuffer((0,), 2 * granularity, page), CircularBuffer((1,), 1, TILE_BYTES[_BF16]),
               CircularBuffer((24,), 1, 2 * page if fp32_dest_acc_en else page), CircularBuffer((16,), 2, page))
        return make_program("FastReduceNCDeviceOperation", "FastReduceNCProgramFactory", cbs,
                            split_work(out_tiles, *grid_of(x.device()), row_wise=True))

    return cached(key, build)


def manual_seed_program(dev, factory: str, cb_tensors: tuple, user_id: int | None, ranges: tuple = ()) -> Program:
    """ManualSeedDeviceOperation (reduction/manual_seed/device/manual_seed_program_factory.cpp) on the whole grid, row
    by row (num_cores_to_corerangeset, row_wise), or on `ranges` ((x0, y0, x1, y1): sub_core_grids):
    SingleSeedToAllCores a compute kernel and no CB; SingleSeedSingleCore its kernel on core `user_id` alone;
    SingleSeedSetCores c_0 and c_1, SetSeedsSetCores c_0..c_2, each one tile of the tables' format (`cb_tensors`: the
    user_ids table's dtype, then the seeds')."""
    gx, gy = grid_of(dev)
    key = ("ManualSeedDeviceOperation", factory, cb_tensors, user_id, ranges, gx, gy)

    def build():
        cbs = tuple(CircularBuffer((i,), 1, TILE_BYTES[dtype]) for i, dtype in enumerate(cb_tensors))
        grid = ranges or ((0, 0, gx - 1, gy - 1),)
        if user_id is not None:  # the user_id-th core of the grid, row by row (corerange_to_cores, row_wise)
            cores = [(x, y) for x0, y0, x1, y1 in grid for y in range(y0, y1 + 1) for x in range(x0, x1 + 1)]
            x, y = cores[user_id]
            return make_program("ManualSeedDeviceOperation", factory, cbs, ((x, y, x, y),))
        return make_program("ManualSeedDeviceOperation", factory, cbs, grid)

    return cached(key, build)


def sampling_program(dev, width: int, indices_dtype: DataType, out_dtype: DataType, ranges: tuple = ()) -> Program:
    """SamplingProgramFactory (reduction/sampling/device/sampling_program_factory.cpp) for 32 users (one tile row,
    Ht = 1) of `width` values (Wt = width / 32 tiles): one user a core, the first 32 cores row by row
    (num_cores_to_corerangeset, row_wise) or `ranges` (sub_core_grids). Its CBs in creation order: c_0 the values and
    c_2 their UInt16 indices, 4 tiles each (two tiles a local sort, doubled); c_3 / c_17 the MAX and SUM scalers; c_4
    the top-k mask (4); c_5 / c_6 the transposed values and indices (Wt each); c_7, c_1 and c_8 the top-32 values,
    probabilities and indices (2 each); c_9 / c_10 the row max and sum; c_11 the random tile; c_12 the indices'
    rows (32 sticks of width * 4 B); c_13 the 32 outputs; c_14..c_16 the 32 k, p and temp values."""
    gx, gy = grid_of(dev)
    key = ("SamplingDeviceOperation", width, indices_dtype, out_dtype, ranges, gx, gy)

    def build():
        users = 32  # TT_FATAL'd: N * C * H == 32, so Ht = 1
        wt = width // TILE
        values, index = TILE_BYTES[DataType.BFLOAT16], TILE_BYTES[DataType.UINT16]
        cbs = (CircularBuffer((0,), 4, values), CircularBuffer((2,), 4, index), CircularBuffer((3,), 1, values),
               CircularBuffer((17,), 1, values), CircularBuffer((4,), 4, values), CircularBuffer((5,), wt, values),
               CircularBuffer((6,), wt, index), CircularBuffer((7,), 2, values), CircularBuffer((1,), 2, values),
               CircularBuffer((8,), 2, index), CircularBuffer((9,), 1, values), CircularBuffer((10,), 1, values),
               CircularBuffer((11,), 1, values),
               CircularBuffer((12,), users, wt * TILE * dtypes.ELEMENT_SIZE[indices_dtype]),
               CircularBuffer((13,), 1, users * dtypes.ELEMENT_SIZE[out_dtype]), CircularBuffer((14,), 1, users * 4),
               CircularBuffer((15,), 1, users * 2), CircularBuffer((16,), 1, users * 2))
        return make_program("SamplingDeviceOperation", "SamplingProgramFactory", cbs,
                            ranges or cores_row_major(users, gx))

    return cached(key, build)
