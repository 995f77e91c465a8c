"""RandDeviceOperation, the one creation op TT-NN runs as a program (full, zeros, ones and arange fill a host
tensor and write it to the device; full_like and its kin run ttnn::fill, a UnaryDeviceOperation).

tt-metal's ttnn/cpp/ttnn/operations/rand/device/rand_program_factory.cpp: the compute kernel draws two float32
tiles at a time ("rand_tiles") and the writer converts one tile into the output's format ("rand_out"), on
the cores split_work_to_cores gives the output's tiles. The factory names these dataflow buffers; device_sim
numbers them in creation order (c_0, c_1). Its writer takes bfloat16 and float32 TILE outputs only.

Example:
    >>> import device_sim as ttnn
    >>> from device_sim.programs.creation import rand_program
    >>> dev = ttnn.open_device()
    >>> p = rand_program(ttnn.rand((64, 64), device=dev, layout=ttnn.TILE))
    >>> p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs], p.ranges
    ('RandDeviceOperation', [((0,), 2, 4096), ((1,), 1, 2048)], ((0, 0, 0, 3),))
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
from device_sim.types import DataType, Layout


def rand_program(out) -> Program | None:
    """The RandDeviceOperation that fills `out` (a device tensor); None for a ROW_MAJOR or sharded output or a dtype
    the writer does not take."""
    if out.device() is None or out.layout != Layout.TILE or out.is_sharded() or \
            out.dtype not in (DataType.BFLOAT16, DataType.FLOAT32):
        return None
    dev = out.device()
    key = ("RandDeviceOperation", shape_of(out), out.dtype, grid_of(dev))
    return cached(key, lambda: make_program(
        "RandDeviceOperation", "RandProgramFactory",
        (CircularBuffer((0,), 2, TILE_BYTES[DataType.FLOAT32]), CircularBuffer((1,), 1, TILE_BYTES[out.dtype])),
        split_work(dtypes.num_pages(Layout.TILE, tuple(out.padded_shape)), *grid_of(dev))))


def randn_program(out) -> Program:
    """RandnDeviceOperation (randn/device/randn_program_factory.cpp) filling the TILE tensor `out`: c_0 two tiles in
    its format, split_work_to_cores over its tiles."""
    dev = out.device()
    key = ("RandnDeviceOperation", shape_of(out), out.dtype, grid_of(dev))
    return cached(key, lambda: make_program(
        "RandnDeviceOperation", "ProgramFactory", (CircularBuffer((0,), 2, TILE_BYTES[out.dtype]),),
        split_work(dtypes.num_pages(Layout.TILE, tuple(out.padded_shape)), *grid_of(dev))))


def bernoulli_program(x, out) -> Program:
    """BernoulliDeviceOperation (bernoulli/device/bernoulli_program_factory.cpp) drawing `out` from the
    probabilities `x`: c_0 two tiles of x's format, c_24 two float32 tiles (the draws), c_25 one tile of out's
    format, split_work_to_cores over out's tiles."""
    dev = out.device()
    key = ("BernoulliDeviceOperation", shape_of(out), x.dtype, out.dtype, grid_of(dev))
    return cached(key, lambda: make_program(
        "BernoulliDeviceOperation", "ProgramFactory",
        (CircularBuffer((0,), 2, TILE_BYTES[x.dtype]), CircularBuffer((24,), 2, TILE_BYTES[DataType.FLOAT32]),
         CircularBuffer((25,), 1, TILE_BYTES[out.dtype])),
        split_work(dtypes.num_pages(Layout.TILE, tuple(out.padded_shape)), *grid_of(dev))))


def fill_rm_program(out) -> Program:
    """FillRMDeviceOperation (data_movement/fill_rm/device/fill_rm_program_factory.cpp) on core (0, 0): c_0 (the
    row of val_hi then val_lo) and c_1 (the row of val_lo), 16 tiles each of the output's format."""
    key = ("FillRMDeviceOperation", out.dtype)
    return cached(key, lambda: make_program(
        "FillRMDeviceOperation", "FillRMProgramFactory",
        (CircularBuffer((0,), 16, TILE_BYTES[out.dtype]), CircularBuffer((1,), 16, TILE_BYTES[out.dtype])),
        ((0, 0, 0, 0),)))


def uniform_program(t) -> Program | None:
    """The UniformDeviceOperation that fills `t` in place (uniform/device/uniform_program_factory.cpp): c_24 of two
    float32 tiles (the draws) and c_0 of one tile in t's format, split_work_to_cores over the tiles."""
    dev = t.device()
    key = ("UniformDeviceOperation", shape_of(t), t.dtype, grid_of(dev))
    return cached(key, lambda: make_program(
        "UniformDeviceOperation", "UniformProgramFactory",
        (CircularBuffer((24,), 2, TILE_BYTES[DataType.FLOAT32]), CircularBuffer((0,), 1, TILE_BYTES[t.dtype])),
        split_work(dtypes.num_pages(Layout.TILE, tuple(t.padded_shape)), *grid_of(dev))))


def full_program(out) -> Program | None:
    """The FullDeviceOperation that writes moreh_full / moreh_full_like's `out` (ttnn/cpp/ttnn/operations/full/device/
    full_program_factory_interleaved.cpp): c_0 of one output page, and c_1 of one more when there are more pages than
    cores (a second writer kernel), on the cores split_work_to_cores gives the pages. A sharded output (the
    FullShardedProgramFactory / FullNDShardedProgramFactory): c_24 of one page on the cores holding its shards.
    None off a device."""
    if out.device() is None:
        return None
    dev = out.device()
    if out.is_sharded():
        buf = out.buffer
        cores = tuple((x, y, x, y) for x, y in (buf.cores or ()))
        factory = "FullShardedProgramFactory" if out.memory_config().nd_shard_spec is None else \
            "FullNDShardedProgramFactory"
        return cached(("FullDeviceOperation", factory, buf.page_size, out.dtype, cores), lambda: make_program(
            "FullDeviceOperation", factory, (CircularBuffer((24,), 1, buf.page_size),), cores))
    key = ("FullDeviceOperation", shape_of(out), out.dtype, grid_of(dev))

    def build():
        shape = tuple(out.padded_shape)
        pages = dtypes.num_pages(out.layout, shape)
        page = dtypes.page_size(out.dtype, out.layout, shape)
        ranges = split_work(pages, *grid_of(dev))
        cores = min(max(pages, 1), grid_of(dev)[0] * grid_of(dev)[1])
        cbs = [CircularBuffer((0,), 1, page)] + ([CircularBuffer((1,), 1, page)] if pages > cores else [])
        return make_program("FullDeviceOperation", "FullInterleavedProgramFactory", cbs, ranges)

    return cached(key, build)
