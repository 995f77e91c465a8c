"""UpsampleOperation (nearest, integer scale, interleaved) as upsample_program_factory_multicore_interleaved.cpp
(tt-metal's ttnn/cpp/ttnn/operations/pool/upsample/device/) builds it, and global_avg_pool2d's reduction; bilinear
and sharded upsampling run other factories, not modelled (max_pool2d and avg_pool2d: programs/pool.py).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.vision import upsample_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 8, 8, 64), dtype=ttnn.bfloat16, device=dev)
    >>> [(cb.indices, cb.num_pages, cb.page_size) for cb in upsample_program(x, ttnn.bfloat16).cbs]
    [((0,), 1, 128)]
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
    grid_of,
    make_program,
    shape_of,
    split_work,
)
from device_sim.types import DataType, Layout


def upsample_program(x, out_dtype: DataType) -> Program:
    """A ROW_MAJOR input streams one row (C x element size, DRAM-aligned) at a time through c_0, which the writer
    repeats; a TILE input untilizes a row of tiles from c_0 into c_1. Either CB doubles when a core takes two
    units or more (rows, or rows of tiles), split_work_to_cores over them."""
    dev = x._device
    key = ("UpsampleOperation", shape_of(x), x.dtype, out_dtype, grid_of(dev))

    def build():
        shape = tuple(x.padded_shape)
        gx, gy = grid_of(dev)
        rows = 1
        for d in shape[:-1]:
            rows *= d
        if x.layout == Layout.TILE:
            units, pages = rows // TILE, shape[-1] // TILE
            in_p = TILE_BYTES[x.dtype]
        else:
            units, pages = rows, 1
            alignment = dev.config.dram_alignment if dev is not None else 32
            in_p = -(-shape[-1] * dtypes.ELEMENT_SIZE[x.dtype] // alignment) * alignment
        depth = 2 if units > gx * gy else 1  # split_work_to_cores gives a core two units or more only then
        cbs = [CircularBuffer((0,), pages * depth, in_p)]
        if x.layout == Layout.TILE:
            cbs.append(CircularBuffer((1,), pages * depth, TILE_BYTES[out_dtype]))
        return make_program("UpsampleOperation", "UpsampleMultiCoreInterleavedProgramFactory", cbs,
                            split_work(units, gx, gy))

    return cached(key, build)


def global_avg_pool_program(x) -> Program:
    """global_avg_pool2d (pool/global_avg_pool/global_avg_pool.cpp) views x [N, H, W, C] as [N, 1, H*W, C] (its
    padded dims) and sums over H scaled by 1/H: one ReduceDeviceOperation, reduce_op_multi_core_h's CBs (as
    programs.reduction): c_0 two input tiles, c_2 one bfloat16 scaler tile, c_16 two output tiles in the input's
    format (pool_sum ignores the dtype asked for), split_work_to_cores over the N x C/32 columns of tiles."""
    dev = x._device
    key = ("ReduceDeviceOperation", "global_avg_pool2d", shape_of(x), x.dtype, grid_of(dev))

    def build():
        n, _, _, c = tuple(x.padded_shape)
        tile = TILE_BYTES[x.dtype]
        cbs = (CircularBuffer((0,), 2, tile), CircularBuffer((2,), 1, TILE_BYTES[DataType.BFLOAT16]),
               CircularBuffer((16,), 2, tile))
        return make_program("ReduceDeviceOperation", "ReduceMultiCoreHProgramFactory", cbs,
                            split_work(n * c // TILE, *grid_of(dev)))

    return cached(key, build)
