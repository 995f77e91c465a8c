"""The DiT LayerNorm split across chips: DIT pre/post all-gather device operations' Welford factories.

tt-metal's ttnn/cpp/ttnn/operations/experimental/transformer/dit_layernorm_pre_all_gather/device/
dit_layernorm_pre_all_gather_welford_program_factory.cpp and dit_layernorm_post_all_gather's. Both split the input's
rows of tiles over the grid row by row (split_work_to_cores(grid, rows, true)) and stride along a row by the
destination register's tiles (get_dest_reg_count: 8, or 4 accumulating in float32).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.dit_layernorm import pre_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 1, 64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> r = ttnn.create_layer_norm_reciprocals(dev, ttnn.CoreRangeSet({ttnn.CoreRange((0, 0), (7, 7))}), 128)
    >>> p = pre_program(x, r, ttnn.bfloat16, dest_tiles=8)
    >>> [(cb.indices, cb.num_pages) for cb in p.cbs], p.ranges  # 2 rows of tiles: 2 cores
    ([((0,), 16), ((1,), 16), ((14,), 4), ((2,), 1)], ((0, 0, 1, 0),))
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

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
)
from device_sim.types import DataType

_F32, _BF16 = DataType.FLOAT32, DataType.BFLOAT16


def _rows(x) -> int:
    shape = x.padded_shape
    n = 1
    for d in shape[:-1]:
        n *= d
    return n // TILE


def pre_program(x, recip, out_dtype: DataType, *, dest_tiles: int) -> Program:
    """PreAllGatherWelfordProgramFactory: c_0 two blocks of input tiles, c_1 two blocks of bfloat16 ones (x**2's
    CB), c_14 the output's two tiles (mean, variance) twice, c_2 one page of the float32 reciprocal table (its
    aligned size per bank)."""
    dev = x.device()
    recip_bytes = recip.buffer.max_size_per_bank
    key = ("DitLayerNormPreAllGather", shape_of(x), x.dtype, out_dtype, dest_tiles, recip_bytes, grid_of(dev))

    def build():
        cbs = [CircularBuffer((0,), 2 * dest_tiles, TILE_BYTES[x.dtype]),
               CircularBuffer((1,), 2 * dest_tiles, TILE_BYTES[_BF16]),
               CircularBuffer((14,), 4, TILE_BYTES[out_dtype]), CircularBuffer((2,), 1, recip_bytes)]
        return make_program("PreAllGatherDeviceOperation", "PreAllGatherWelfordProgramFactory", cbs,
                            cores_row_major(min(_rows(x), grid_of(dev)[0] * grid_of(dev)[1]), grid_of(dev)[0]))

    return cached(key, build)


def post_program(x, stats, out_dtype: DataType, gamma, beta, *, dest_tiles: int, fp32_dest_acc_en: bool) -> Program:
    """PostAllGatherWelfordProgramFactory: c_0 two blocks of input tiles, c_1 the stats' row twice, c_2 / c_3 gamma
    and beta (a row of tiles rounded up to the block, when given), c_4 epsilon (one bfloat16 tile), c_5 two, c_6 one
    and c_7 a block of intermediate tiles (float32 with an fp32 destination), c_8 two blocks of output tiles."""
    dev = x.device()
    gd = gamma.dtype if gamma is not None else None
    bd = beta.dtype if beta is not None else None
    key = ("DitLayerNormPostAllGather", shape_of(x), shape_of(stats), x.dtype, stats.dtype, out_dtype, gd, bd,
           dest_tiles, fp32_dest_acc_en, grid_of(dev))

    def build():
        wt = x.padded_shape[-1] // TILE
        row = -(-wt // dest_tiles) * dest_tiles
        inter = TILE_BYTES[_F32 if fp32_dest_acc_en else _BF16]
        cbs = [CircularBuffer((0,), 2 * dest_tiles, TILE_BYTES[x.dtype]),
               CircularBuffer((1,), 2 * (stats.padded_shape[-1] // TILE), TILE_BYTES[stats.dtype])]
        if gamma is not None:
            cbs.append(CircularBuffer((2,), row, TILE_BYTES[gd]))
        if beta is not None:
            cbs.append(CircularBuffer((3,), row, TILE_BYTES[bd]))
        cbs += [CircularBuffer((4,), 1, TILE_BYTES[_BF16]), CircularBuffer((5,), 2, inter),
                CircularBuffer((6,), 1, inter), CircularBuffer((7,), dest_tiles, inter),
                CircularBuffer((8,), 2 * dest_tiles, TILE_BYTES[out_dtype])]
        return make_program("PostAllGatherDeviceOperation", "PostAllGatherWelfordProgramFactory", cbs,
                            cores_row_major(min(_rows(x), grid_of(dev)[0] * grid_of(dev)[1]), grid_of(dev)[0]))

    return cached(key, build)
