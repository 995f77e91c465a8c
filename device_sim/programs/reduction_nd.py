"""Reductions over outer dims: the programs TT-NN's reduce_impl runs one axis at a time; and var / std.

tt-metal's ttnn/cpp/ttnn/operations/reduction/generic/generic_reductions.cpp: a reduction that is not W, H or
H and W together goes through reduce_nd_loop, from the last reduced dim to the first, keeping dims: W and H
are one ReduceDeviceOperation each (device_sim.programs.reduction), and an outer dim i is transposed to H
(ttnn::transpose(t, i, -2)), reduced over H and transposed back. mean, max and min take this path; sum
does too except for bfloat16 / bfloat8_b inputs, which TT-NN reduces over the outer dims with
fast_reduce_nc (FastReduceNCDeviceOperation, not modelled). The transposes are modelled where they are
TT-NN's HC transpose (the outer dim is C of the 4-D view: dim 0 of a rank-3 tensor, dim 1 of a rank-4
one); another outer dim returns () (not modelled).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.reduction_nd import reduce_nd_programs
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(2, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> [p.name for p in reduce_nd_programs(x, ttnn.bfloat16, (0, 1, 2))]  # doctest: +NORMALIZE_WHITESPACE
    ['ReduceDeviceOperation', 'ReduceDeviceOperation', 'TransposeDeviceOperation', 'ReduceDeviceOperation',
     'TransposeDeviceOperation']
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

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
from device_sim.programs import reduction
from device_sim.programs.shape import transpose_hc_shape_program
from device_sim.types import DataType, Layout


def _padded4(shape: list) -> tuple:
    """The 4-D padded shape TT-NN's kernels see (unsqueezed to rank 4, the last two dims in whole tiles)."""
    s = [1] * (4 - len(shape)) + list(shape)
    return (*s[:2], -(-s[2] // TILE) * TILE, -(-s[3] // TILE) * TILE)


def reduce_nd_programs(x, out_dtype: DataType, dims: tuple[int, ...]) -> tuple[Program, ...]:
    """The programs reduce_nd_loop runs to reduce `x` (interleaved TILE) over `dims` (non-negative, at least one
    outer dim), intermediates in `out_dtype`; () where a transpose is not TT-NN's HC one."""
    shape = list(x._value.shape)
    rank = len(shape)
    dims = tuple(sorted(set(dims)))
    if rank > 4 or any(d < rank - 2 and d + 4 - rank != 1 for d in dims):
        return ()
    dev = x.device()
    key = ("reduce_nd", shape_of(x), x.dtype, out_dtype, dims, grid_of(dev))

    def build():
        s = [1] * (4 - rank) + shape  # the 4-D view: dim d of x is dim d + 4 - rank
        programs, dtype = [], x.dtype
        for d in sorted(dims, reverse=True):
            d4 = d + 4 - rank
            if d4 == 1:  # an outer dim: to H, reduce H, back
                programs.append(transpose_hc_shape_program(dev, s, dtype))
                s[1], s[2] = s[2], s[1]
                programs += reduction._build(dev, _padded4(s), dtype, out_dtype, (2,))
                s[2] = 1
                programs.append(transpose_hc_shape_program(dev, s, out_dtype))
                s[1], s[2] = s[2], s[1]
            else:
                programs += reduction._build(dev, _padded4(s), dtype, out_dtype, (d4,))
                s[d4] = 1
            dtype = out_dtype
        return tuple(programs)

    return cached(key, build)


def welford_program(x, out_dtype: DataType, dim: int, *, scalar: float = 1.0, fp32_dest_acc_en: bool = False) \
        -> Program | None:
    """WelfordReduceDeviceOperation, which TT-NN's var and std run over one dim (generic_reductions.cpp's
    std_var_impl; reduction/generic/device/welford_reduce_program_factory.cpp) for W or H of an interleaved TILE
    tensor: c_0 two input tiles, c_2 one bfloat16 scaler tile, c_16 two output tiles; over W also c_19, one tile
    in the destination's format (float32 with fp32_dest_acc_en), and with a scalar other than 1 c_20, one input
    tile. split_work_to_cores over the NC*Ht rows (W) or NC*Wt columns (H) of tiles. None for another dim (TT-NN
    permutes it to H first: not modelled)."""
    rank = x._value.dim()
    if x.device() is None or x.is_sharded() or x.layout != Layout.TILE or rank < 2 or dim % rank < rank - 2:
        return None
    dev = x.device()
    reduce_w = dim % rank == rank - 1
    key = ("WelfordReduceDeviceOperation", shape_of(x), x.dtype, out_dtype, reduce_w, scalar != 1.0,
           fp32_dest_acc_en, grid_of(dev))

    def build():
        shape = tuple(x.padded_shape)
        nc = 1
        for d in shape[:-2]:
            nc *= d
        ht, wt = shape[-2] // TILE, shape[-1] // TILE
        cbs = [CircularBuffer((0,), 2, TILE_BYTES[x.dtype]), CircularBuffer((2,), 1, TILE_BYTES[DataType.BFLOAT16]),
               CircularBuffer((16,), 2, TILE_BYTES[out_dtype])]
        if reduce_w:
            scratch = DataType.FLOAT32 if fp32_dest_acc_en else DataType.BFLOAT16  # the destination's format
            cbs.append(CircularBuffer((19,), 1, TILE_BYTES[scratch]))
        if scalar != 1.0:
            cbs.append(CircularBuffer((20,), 1, TILE_BYTES[x.dtype]))
        return make_program("WelfordReduceDeviceOperation", "WelfordReduceProgramFactory", cbs,
                            split_work(nc * (ht if reduce_w else wt), *grid_of(dev)))

    return cached(key, build)
