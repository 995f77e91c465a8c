"""Device operations of the shape-changing data movement ops: reshape (its copy case), pad, move.

Each builder follows one tt-metal program factory under ttnn/cpp/ttnn/operations/data_movement/ (named in
its docstring); interleaved tensors only (a sharded one returns None: not modelled). Pages are tiles for
a TILE tensor and rows (the logical width x element size, aligned as the factory aligns them) for a
ROW_MAJOR one. Wormhole's alignments: L1 16 B, DRAM 32 B.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs import shape
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(2, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = shape.reshape_program(x, ttnn.reshape(x, (2, 64, 32)))
    >>> p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs], p.ranges
    ('ReshapeDeviceOperation', [((1,), 1, 2048), ((2,), 1, 2048)], ((0, 0, 7, 7),))
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

_L1_ALIGNMENT, _DRAM_ALIGNMENT = 16, 32


def _align(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def _whole_grid(dev) -> tuple:
    gx, gy = grid_of(dev)
    return ((0, 0, gx - 1, gy - 1),)


def _interleaved(*tensors) -> bool:
    return all(t._device is not None and not t.is_sharded() for t in tensors)


def reshape_program(x, out) -> Program | None:
    """ReshapeDeviceOperation, the copy TT-NN's reshape runs when the result cannot be a view.

    TILE (reshape_view/device/host/reshape_tiled_program_factory.cpp): one input tile in c_1 and one output
    tile in c_2 (its comment: more than one fails PCC), created on the whole grid (the kernels run on the
    cores split_work_to_cores gives the output tiles). ROW_MAJOR (reshape_rm_program_factory.cpp): c_0 two
    pages of the input row rounded to a 64 B multiple plus 64 (the reader's read window), c_1 one page of
    the output row rounded likewise plus 16, on the whole grid.
    """
    if not _interleaved(x, out) or x.layout != out.layout:
        return None
    dev = x._device
    key = ("ReshapeDeviceOperation", shape_of(x), shape_of(out), x.dtype, out.dtype, grid_of(dev))

    def build():
        if x.layout == Layout.TILE:
            cbs = (CircularBuffer((1,), 1, TILE_BYTES[x.dtype]), CircularBuffer((2,), 1, TILE_BYTES[out.dtype]))
            return make_program("ReshapeDeviceOperation", "ReshapeTiledProgramFactory", cbs, _whole_grid(dev))
        size = dtypes.ELEMENT_SIZE[x.dtype]
        src, dst = x._value.shape[-1] * size, out._value.shape[-1] * size
        cbs = (CircularBuffer((0,), 2, ((src - 1) & ~63) + 128), CircularBuffer((1,), 1, ((dst - 1) & ~63) + 80))
        return make_program("ReshapeDeviceOperation", "ReshapeRMProgramFactory", cbs, _whole_grid(dev))

    return cached(key, build)


def pad_program(x, out, front_w: int = 0) -> Program | None:
    """PadDeviceOperation as pad_device_operation.cpp's select_program_factory picks it (use_multicore, TT-NN's
    default) for an interleaved input of rank <= 4; `front_w` is the padding before the input along the last dim.

    TILE (pad_tile_multicore_program_factory.cpp): c_0 and c_1 two output pages each and c_2 one page of the
    pad value, in the input's format, on the whole grid. ROW_MAJOR (pad_rm_reader_writer_multi_core_default):
    one DRAM-aligned padded row of the pad value, a second one for realignment when there is front padding
    along W or the L1-aligned row is not DRAM-aligned, and the streaming buffer: rows per barrier (2 KiB of
    L1-aligned rows, at least one) times min(16, what fits in half of L1 above the reserved base), on the cores
    split_work_to_cores gives the output's rows. The factory names these buffers; device_sim numbers them as
    the factory's earlier version did (c_1, c_2, c_0).
    """
    if not _interleaved(x, out) or x._value.dim() > 4:
        return None
    dev = x._device
    key = ("PadDeviceOperation", shape_of(x), shape_of(out), x.dtype, front_w, grid_of(dev))

    def build():
        if x.layout == Layout.TILE:
            page = TILE_BYTES[x.dtype]
            cbs = (CircularBuffer((0,), 2, page), CircularBuffer((1,), 2, page), CircularBuffer((2,), 1, page))
            return make_program("PadDeviceOperation", "PadTileMulticoreProgramFactory", cbs, _whole_grid(dev))
        size = dtypes.ELEMENT_SIZE[x.dtype]
        padded = out._value.shape[-1] * size
        l1_row, dram_row = _align(padded, _L1_ALIGNMENT), _align(padded, _DRAM_ALIGNMENT)
        cbs = [CircularBuffer((1,), 1, dram_row)]
        if front_w or l1_row % _DRAM_ALIGNMENT:
            cbs.append(CircularBuffer((2,), 1, dram_row))
        per_barrier = max(-(-2048 // l1_row), 1)
        budget = dev.config.l1_size // 2 - dev.config.l1_unreserved_base
        depth = min(max(budget // (per_barrier * l1_row), 1), 16)
        cbs.append(CircularBuffer((0,), depth * per_barrier, l1_row))
        rows = 1
        for d in out._value.shape[:-1]:
            rows *= d
        return make_program("PadDeviceOperation", "PadRmReaderWriterMultiCoreDefaultProgramFactory", cbs,
                            split_work(rows, *grid_of(dev)))

    return cached(key, build)


def move_program(x, sharded_out: bool) -> Program | None:
    """MoveDeviceOperation (move/device/move_program_factory.cpp). Interleaved: move_multi_core is the copy
    factory's program (two pages in c_0, each rounded up to 32 B, over split_work_to_cores' cores).
    Sharded: the input and output shards as c_0 and c_1 (both globally allocated), on the shard grid.
    TT-NN's variant for overlapping buffers (a move within the space the input just freed) is not modelled.
    Built from the input before it is freed (`sharded_out`: whether the output is sharded)."""
    if x._device is None or x.is_sharded() != sharded_out:  # a move that changes the sharding: not modelled
        return None
    dev = x._device
    spec = x.memory_config().shard_spec if x.is_sharded() else None
    key = ("MoveDeviceOperation", shape_of(x), x.dtype, spec, grid_of(dev))

    def build():
        tile = x.layout == Layout.TILE
        if spec is not None:
            h, w = spec.shape
            whole_tiles = (h * w) % (32 * 32) == 0
            page = TILE_BYTES[x.dtype] if whole_tiles else w * dtypes.ELEMENT_SIZE[x.dtype]
            pages = h * w // (32 * 32) if whole_tiles else h
            ranges = tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in spec.grid.ranges())
            return make_program("MoveDeviceOperation", "MoveShardedProgramFactory",
                                (CircularBuffer((0,), pages, page, True), CircularBuffer((1,), pages, page, True)),
                                ranges)
        shape = tuple(x.padded_shape)
        page = TILE_BYTES[x.dtype] if tile else shape[-1] * dtypes.ELEMENT_SIZE[x.dtype]
        return make_program("MoveDeviceOperation", "MoveProgramFactory", (CircularBuffer((0,), 2, _align(page, 32)),),
                            split_work(dtypes.num_pages(x.layout, shape), *grid_of(dev)))

    return cached(key, build)


def _merge_sticks(sticks: int, stick_bytes: int, max_read: int) -> int:
    """tt-metal's merge_num_sticks_to_read: the fewest reads of whole sticks, each at most max_read bytes, that
    cover `sticks` sticks (the largest read size that divides the total wins)."""
    total, reads, size = sticks * stick_bytes, sticks, stick_bytes
    while size <= max_read:
        if total % size == 0:
            reads = total // size
        size += stick_bytes
    return reads


def slice_programs(x, out, index) -> tuple[Program, ...] | None:
    """The programs TT-NN's slice runs for `x[index]` (index: one python slice per dim) into `out`, past the
    tile-aligned TILE case (data_movement.slice_program): slice.cpp takes a TILE input whose slice is strided
    or not tile-aligned to ROW_MAJOR first (an untilize, with unpadding when x is padded), slices that with
    the row-major factory and tilizes the result back (with padding when out is not whole tiles); a
    ROW_MAJOR input is the row-major slice alone. None for a sharded tensor (not modelled).

    SliceDeviceOperation's row-major factories (slice/device/): with steps, slice_program_factory_rm_stride.cpp
    (c_0 two input rows, aligned to the larger of the two buffers' alignments); without,
    slice_program_factory_rm.cpp (c_0 double-buffers its reads: each core's row count padded to 32, merged into
    reads of at most 4 KiB, pages of the output row aligned to that alignment, twice it when the first column
    is not aligned in the source). Both over the cores split_work_to_cores gives the output rows.
    """
    if not _interleaved(x, out):
        return None
    from device_sim.programs import data_movement  # the layout builders: data_movement imports nothing of this

    dev = x._device
    steps = tuple(int(i.step or 1) for i in index)
    key = ("SliceDeviceOperation", "rm", shape_of(x), shape_of(out), x.dtype, steps, int(index[-1].start or 0),
           x.memory_config().buffer_type, out.memory_config().buffer_type, grid_of(dev))

    def build():
        size = dtypes.ELEMENT_SIZE[x.dtype]
        src_align = _DRAM_ALIGNMENT if x.memory_config().buffer_type.name == "DRAM" else _L1_ALIGNMENT
        dst_align = _DRAM_ALIGNMENT if out.memory_config().buffer_type.name == "DRAM" else _L1_ALIGNMENT
        align = max(src_align, dst_align)
        rows = 1
        for d in out._value.shape[:-1]:
            rows *= d
        cores = split_work(rows, *grid_of(dev))
        if any(s != 1 for s in steps):
            page = _align(x._value.shape[-1] * size, align)
            return make_program("SliceDeviceOperation", "SliceRmStrideProgramFactory", (CircularBuffer((0,), 2, page),),
                                cores)
        if (int(index[-1].start or 0) * size) % src_align:
            align *= 2
        row = out._value.shape[-1] * size
        gx, gy = grid_of(dev)
        per_core = -(-rows // min(max(rows, 1), gx * gy))
        pad32 = _align(per_core, 32)
        per_barrier = pad32 // _merge_sticks(pad32, _align(row, max(src_align, dst_align)), 4096)
        return make_program("SliceDeviceOperation", "SliceRmProgramFactory",
                            (CircularBuffer((0,), 2 * per_barrier, _align(row, align)),), cores)

    rm = cached(key, build)
    if x.layout == Layout.ROW_MAJOR:
        return (rm,)
    padded_in = tuple(x._value.shape[-2:]) != tuple(x.padded_shape[-2:])
    padded_out = tuple(out._value.shape[-2:]) != tuple(out.padded_shape[-2:])
    untilize = data_movement.untilize_program(x, x.dtype, name="UntilizeWithUnpaddingDeviceOperation" if padded_in
                                              else "UntilizeDeviceOperation")
    tilize = data_movement.tilize_program(x, out.dtype, out=out, name="TilizeWithValPaddingDeviceOperation"
                                          if padded_out else "TilizeDeviceOperation")
    return untilize, rm, tilize
