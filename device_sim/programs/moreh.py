"""ttnn.moreh_norm's device work where TT-NN composes it from moreh_abs_pow and moreh_sum.

moreh_norm.cpp takes a finite, non-zero p over one dim as |x|^p (MorehAbsPowOperation), a sum over the dim
(MorehSumOperation) and the 1/p-th power (MorehAbsPowOperation again). Their factories, in tt-metal's
ttnn/cpp/ttnn/operations/moreh/: moreh_abs_pow/device/moreh_abs_pow_program_factory.cpp and
moreh_sum/device/moreh_sum_{w,h}_program_factory.cpp (MorehSumOperation::select_program_factory: the last dim
takes the W factory, the one before it the H factory).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.moreh import moreh_norm_programs
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(2, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> [(p.name, p.factory) for p in moreh_norm_programs(x, 2.0, (1,), True)]  # doctest: +NORMALIZE_WHITESPACE
    [('MorehAbsPowOperation', 'MorehAbsPowFactory'), ('MorehSumOperation', 'MorehSumHFactory'),
     ('MorehAbsPowOperation', 'MorehAbsPowFactory')]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

import math

from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, cached, cores_col_major, grid_of, make_program
from device_sim.types import DataType, Layout

_BF16 = DataType.BFLOAT16


def moreh_norm_programs(x, p: float, dims: tuple, keepdim: bool, *, fp32_dest_acc_en: bool = False):
    """The three programs of a p-norm over one of the two tile dims of a bfloat16 TILE interleaved input (moreh_sum
    takes bfloat16 or int32), in launch order; None for what is not modelled: p of 0 or +-inf
    (MorehNormOperation's own factories), several dims or an outer dim (moreh_sum's NC factory)."""
    if (x._device is None or x.is_sharded() or x.layout != Layout.TILE or x.dtype != _BF16 or len(dims) != 1
            or p == 0 or math.isinf(p)):
        return None
    rank = x._value.dim()
    d = dims[0] % rank
    if rank < 2 or d < rank - 2:
        return None
    shape = tuple(x.padded_shape)
    # the sum's output keeps a tile dim as one padded tile (32), with keepdim or without
    reduced = shape[:d] + (TILE,) + shape[d + 1:]
    key = ("moreh_norm", shape, d, fp32_dest_acc_en, grid_of(x._device))

    def build():
        grid = grid_of(x._device)
        return (_abs_pow(shape, fp32_dest_acc_en, grid), _sum(shape, d == rank - 1, fp32_dest_acc_en, grid),
                _abs_pow(reduced, fp32_dest_acc_en, grid))

    return cached(key, build)


def _outer(shape) -> int:
    n = 1
    for v in shape[:-2]:
        n *= v
    return n


def _abs_pow(shape, fp32: bool, grid):
    """MorehAbsPowFactory: c_0..c_3 (input, one, 1/p's decimal, the W mask), c_16 the output and c_24..c_27 (|x|,
    log|x|, the decimal power, |x|^p) one tile each, the intermediates float32 with an fp32 destination; on
    split_work_to_cores' cores (column by column) for the rows of tiles."""
    bf16, im = TILE_BYTES[_BF16], TILE_BYTES[DataType.FLOAT32 if fp32 else _BF16]
    cbs = [CircularBuffer((i,), 1, bf16) for i in (0, 1, 2, 3, 16)] + [CircularBuffer((i,), 1, im)
                                                                        for i in (24, 25, 26, 27)]
    rows = _outer(shape) * shape[-2] // TILE
    return make_program("MorehAbsPowOperation", "MorehAbsPowFactory", cbs, cores_col_major(rows, *grid))


def _sum(shape, over_w: bool, fp32: bool, grid):
    """MorehSumWFactory / MorehSumHFactory: c_0 two input tiles, c_2 the bfloat16 scaler (two tiles over W, one
    over H), c_3 the mask (one bfloat16 tile), c_24 the accumulator (float32 with an fp32 destination), c_25 one
    tile (sized as c_24 over W), c_16 two output tiles; the work is the rows of tiles (W) or the columns (H),
    split column by column over the grid."""
    bf16, im = TILE_BYTES[_BF16], TILE_BYTES[DataType.FLOAT32 if fp32 else _BF16]
    cbs = [CircularBuffer((0,), 2, bf16), CircularBuffer((2,), 2 if over_w else 1, bf16),
           CircularBuffer((3,), 1, bf16), CircularBuffer((24,), 1, im),
           CircularBuffer((25,), 1, im if over_w else bf16), CircularBuffer((16,), 2, bf16)]
    units = _outer(shape) * (shape[-2] if over_w else shape[-1]) // TILE
    factory = "MorehSumWFactory" if over_w else "MorehSumHFactory"
    return make_program("MorehSumOperation", factory, cbs, cores_col_major(units, *grid))
