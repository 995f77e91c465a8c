"""BcastToOperation: ttnn.experimental.broadcast_to's one program.

tt-metal's ttnn/cpp/ttnn/operations/experimental/bcast_to/device/bcast_to_program_factory.cpp: two CBs of two
tiles each in the input's format (c_0 read, c_1 the broadcast tile the writer sends), on the cores
split_work_to_cores gives the output's tiles, row-major (its `row_major = true`).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.bcast_to import bcast_to_program
    >>> dev = ttnn.open_device()
    >>> out = ttnn.from_torch(torch.zeros(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = bcast_to_program(out)
    >>> p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs], p.ranges
    ('BcastToOperation', [((0,), 2, 2048), ((1,), 2, 2048)], ((0, 0, 3, 0),))
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim import dtypes
from device_sim.device_work import (
    TILE_BYTES,
    CircularBuffer,
    Program,
    cached,
    grid_of,
    make_program,
    shape_of,
    split_work,
)
from device_sim.types import Layout


def bcast_to_program(out) -> Program:
    """The BcastToOperation that writes `out` (an interleaved TILE tensor in the input's dtype)."""
    dev = out.device()
    key = ("BcastToOperation", shape_of(out), out.dtype, grid_of(dev))
    tile = TILE_BYTES[out.dtype]
    return cached(key, lambda: make_program(
        "BcastToOperation", "BcastToTileFactory", (CircularBuffer((0,), 2, tile), CircularBuffer((1,), 2, tile)),
        split_work(dtypes.num_pages(Layout.TILE, tuple(out.padded_shape)), *grid_of(dev), row_wise=True)))
