"""UpsampleOperation (nearest, integer scale, interleaved) as upsample_program_factory_multicore_interleaved.cpp
(tt-metal's ttnn/cpp/ttnn/operations/pool/upsample/device/) builds it, and global_avg_pool2d's reduction, and bilinear
upsampling's input sharding, halo and UpsampleOperation (upsample_bilinear_program_factory_multicore.cpp), and
nearest upsampling by float scales (upsample_nearest_float_program_factory.cpp); sharded nearest upsampling by
integer scales runs another factory, not modelled (max_pool2d and avg_pool2d: programs/pool.py).

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
    aligned_page,
    cached,
    cores_row_major,
    grid_of,
    make_program,
    shape_of,
    split_work,
)
from device_sim.programs.conv import halo_cbs, max_out_sticks_per_core
from device_sim.programs.data_movement import i2s_cbs
from device_sim.types import DataType, Layout


def upsample_program(x, out_dtype: DataType) -> Program:
    """A ROW_MAJOR input streams one row (C x element size, DRAM-aligned) at a time through c_0, which the writer
    repeats; a TILE input untilizes a row of tiles from c_0 into c_1. Either CB doubles when a core takes two
    units or more (rows, or rows of tiles), split_work_to_cores over them."""
    dev = x.device()
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


def upsample_nearest_float_program(out) -> Program:
    """UpsampleNearestFloatProgramFactory (upsample_nearest_float_program_factory.cpp): a reader that fetches, for
    each output page, the input page its Q16.16 source index names, and a writer; no compute kernel. c_0 holds
    2 x 2 (num_cb_pages x BUFFERING_FACTOR) output pages of the output buffer's aligned page size;
    split_work_to_cores over the output's pages (a stick, or a shard-wide part of one) on the whole grid, whatever
    the input's sharding."""
    dev = out.device()
    buf = out.buffer
    key = ("UpsampleOperation", "float", shape_of(out), out.dtype, buf.page_size, buf.buffer_type, grid_of(dev))

    def build():
        n, h, w, c = tuple(out.padded_shape)
        pages = n * h * w * (c * dtypes.ELEMENT_SIZE[out.dtype] // buf.page_size)
        return make_program("UpsampleOperation", "UpsampleNearestFloatProgramFactory",
                            [CircularBuffer((0,), 4, aligned_page(out))], split_work(pages, *grid_of(dev)))

    return cached(key, build)


def global_avg_pool_program(x) -> Program:
    """global_avg_pool2d (pool/global_avg_pool/global_avg_pool.cpp) views x [N, H, W, C] as [N, 1, H*W, C] (its
    padded dims) and sums over H scaled by 1/H: one ReduceDeviceOperation, reduce_op_multi_core_h's CBs (as
    programs.reduction): c_0 two input tiles, c_2 one bfloat16 scaler tile, c_16 two output tiles in the input's
    format (pool_sum ignores the dtype asked for), split_work_to_cores over the N x C/32 columns of tiles."""
    dev = x.device()
    key = ("ReduceDeviceOperation", "global_avg_pool2d", shape_of(x), x.dtype, grid_of(dev))

    def build():
        n, _, _, c = tuple(x.padded_shape)
        tile = TILE_BYTES[x.dtype]
        cbs = (CircularBuffer((0,), 2, tile), CircularBuffer((2,), 1, TILE_BYTES[DataType.BFLOAT16]),
               CircularBuffer((16,), 2, tile))
        return make_program("ReduceDeviceOperation", "ReduceMultiCoreHProgramFactory", cbs,
                            split_work(n * c // TILE, *grid_of(dev)))

    return cached(key, build)


def upsample_bilinear_programs(*, batch: int, height: int, width: int, channels: int, scale: tuple[int, int],
                               grid: tuple[int, int], in_shard=None) -> tuple[Program, ...]:
    """Bilinear upsample as upsample.cpp runs it (bfloat16, ROW_MAJOR, channels a multiple of 32): an interleaved
    input is height sharded first (compute_bilinear_autoshard_memory_config: min(cores, N*H*W) shards of
    ceil(N*H*W / shards) sticks, row by row), then HaloDeviceOperation gathers each core's 2x2 windows over the input
    padded by 1 (stride 1, as many windows as input sticks), then UpsampleOperation runs
    upsample_bilinear_program_factory_multicore.cpp: c_0 the halo shard, c_1 / c_2 four pixels a page, double-buffered
    (c_1's page at most 8 tiles wide), c_3 / c_4 two scalar tiles each, c_5 the output shard of the input shard's
    sticks x scale_h x scale_w, one 32-channel page each. `in_shard` is a height-sharded input's (shard height,
    core ranges)."""
    key = ("upsample_bilinear", batch, height, width, channels, scale, grid, in_shard)

    def build():
        stick = channels * 2  # bfloat16
        programs = []
        if in_shard is None:
            sticks = batch * height * width
            shards = min(grid[0] * grid[1], sticks)
            shard_h = -(-sticks // shards)
            ranges = cores_row_major(shards, grid[0])
            programs.append(make_program("InterleavedToShardedDeviceOperation", "InterleavedToShardedProgramFactory",
                                         i2s_cbs(DataType.BFLOAT16, DataType.BFLOAT16, False, shard_h, channels),
                                         ranges))
        else:
            shard_h, ranges = in_shard
        halo = max_out_sticks_per_core(batch, height, width, height, width, (2, 2), (1, 1), (1, 1, 1, 1), (1, 1),
                                       shard_h)
        programs.append(make_program("HaloDeviceOperation", "UntilizeWithHaloProgramFactory",
                                     halo_cbs(DataType.BFLOAT16, False, shard_h, channels, halo), ranges))
        tile = TILE_BYTES[DataType.BFLOAT16]
        cbs = (CircularBuffer((0,), halo, stick, True), CircularBuffer((1,), 4 * 2, min(TILE * 2 * 8, stick)),
               CircularBuffer((2,), 4 * 2, stick), CircularBuffer((3,), 2, tile), CircularBuffer((4,), 2, tile),
               CircularBuffer((5,), shard_h * scale[0] * scale[1] * -(-channels // TILE), TILE * 2, True))
        programs.append(make_program("UpsampleOperation", "UpsampleBilinearProgramFactory", cbs, ranges))
        return tuple(programs)

    return cached(key, build)
