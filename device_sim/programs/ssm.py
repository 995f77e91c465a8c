"""Mamba's SSM device operations: HCSumReduceDeviceOperation and PrefixScanDeviceOperation.

tt-metal's ttnn/cpp/ttnn/operations/experimental/ssm/hc_sum_reduce/device/hc_sum_reduce_program_factory.cpp and
prefix_scan/device/prefix_scan_program_factory.cpp.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.ssm import hc_sum_reduce_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 1, 32, 2048), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = hc_sum_reduce_program(x)
    >>> [(cb.indices, cb.num_pages) for cb in p.cbs], p.ranges  # 2048 / 1024 = 2 blocks: 2 cores
    ([((0,), 2), ((2,), 2), ((24,), 2), ((25,), 2), ((26,), 2), ((16,), 2)], ((0, 0, 0, 1),))
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import (
    TILE,
    TILE_BYTES,
    CircularBuffer,
    Program,
    cached,
    cores_col_major,
    grid_of,
    make_program,
    shape_of,
)
from device_sim.types import DataType

_F32, _BF16 = DataType.FLOAT32, DataType.BFLOAT16


def hc_sum_reduce_program(x) -> Program:
    """HCSumReduceProgramFactory: c_0 (the input), c_2 (the scaler), c_24..c_26 (intermediates) and c_16 (the
    output, in the input's format) two tiles each, the intermediates Float16_b (Float32 for a float32 input); its
    blocks of 32 x 32 input columns split_work_to_cores' way, column by column."""
    dev = x.device()
    key = ("HCSumReduceDeviceOperation", shape_of(x), x.dtype, grid_of(dev))

    def build():
        page = TILE_BYTES[x.dtype]
        inter = TILE_BYTES[_F32 if x.dtype is _F32 else _BF16]
        cbs = [CircularBuffer((0,), 2, page)] + [CircularBuffer((i,), 2, inter) for i in (2, 24, 25, 26)] + \
            [CircularBuffer((16,), 2, page)]
        blocks = x.padded_shape[-1] // (TILE * TILE)
        return make_program("HCSumReduceDeviceOperation", "HCSumReduceProgramFactory", cbs,
                            cores_col_major(blocks, *grid_of(dev)))

    return cached(key, build)


def prefix_scan_program(a, out) -> Program:
    """PrefixScanProgramFactory on a's shard grid, for a [seq, hidden] shard of a: c_0 a chunk of 32 input tiles
    (a and bx take turns), c_24 / c_25 / c_26 the 32 tiles a tilize packs rows into, c_27 / c_28 / c_29 two tiles
    each (h_prev, a * h, h), c_31 one tile a chunk of 32 along a row, c_2 one 64 B row a tile along the row (the
    hidden state), all Float16_b; c_16 the output's shard (its own buffer)."""
    spec = a.memory_config().shard_spec
    key = ("PrefixScanDeviceOperation", shape_of(a), a.dtype, out.dtype, spec)

    def build():
        bf16 = TILE_BYTES[_BF16]
        row_tiles, col_tiles = spec.shape[1] // TILE, spec.shape[0] // TILE
        cbs = [CircularBuffer((0,), 32, TILE_BYTES[a.dtype])] + \
            [CircularBuffer((i,), 32, bf16) for i in (24, 25, 26)] + \
            [CircularBuffer((i,), 2, bf16) for i in (27, 28, 29)] + \
            [CircularBuffer((31,), -(-row_tiles // 32), bf16), CircularBuffer((2,), row_tiles, 2 * TILE),
             CircularBuffer((16,), row_tiles * col_tiles, TILE_BYTES[out.dtype], True)]
        ranges = tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in spec.grid.ranges())
        return make_program("PrefixScanDeviceOperation", "PrefixScanProgramFactory", cbs, ranges)

    return cached(key, build)
