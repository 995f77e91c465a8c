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
    aligned_page,
    cached,
    grid_of,
    make_program,
    round_up,
    shape_of,
    split_work,
)
from device_sim.programs import data_movement
from device_sim.types import DataType, Layout

_L1_ALIGNMENT, _DRAM_ALIGNMENT = 16, 32


def _whole_grid(dev) -> tuple:
    gx, gy = grid_of(dev)
    return ((0, 0, gx - 1, gy - 1),)


def _interleaved(*tensors) -> bool:
    return all(t.device() is not None and not t.is_sharded() for t in tensors)


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
    dev = x.device()
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


def pad_program(x, out, front_w: int = 0, *, out_shape: tuple | None = None) -> Program | None:
    """PadDeviceOperation as pad_device_operation.cpp's select_program_factory picks it (use_multicore, TT-NN's
    default) for an interleaved input of rank <= 4; `front_w` is the padding before the input along the last dim.

    TILE (pad_tile_multicore_program_factory.cpp): c_0 and c_1 two output pages each and c_2 one page of the
    pad value, in the input's format, on the whole grid. ROW_MAJOR (pad_rm_reader_writer_multi_core_default):
    one DRAM-aligned padded row of the pad value, a second one for realignment when there is front padding
    along W or the L1-aligned row is not DRAM-aligned, and the streaming buffer: rows per barrier (2 KiB of
    L1-aligned rows, at least one) times min(16, what fits in half of L1 above the reserved base), on the cores
    split_work_to_cores gives the output's rows. The factory names these buffers; device_sim numbers them as
    the factory's earlier version did (c_1, c_2, c_0). `out_shape` stands for `out` when the padded tensor is
    another op's intermediate (fold pads before folding), which device_sim does not allocate.
    """
    if not _interleaved(x, *([out] if out_shape is None else [])) or x._value.dim() > 4:
        return None
    dev = x.device()
    shape = out._value.shape if out_shape is None else tuple(out_shape)
    key = ("PadDeviceOperation", shape_of(x), shape, x.dtype, front_w, grid_of(dev))

    def build():
        if x.layout == Layout.TILE:
            page = TILE_BYTES[x.dtype]
            cbs = (CircularBuffer((0,), 2, page), CircularBuffer((1,), 2, page), CircularBuffer((2,), 1, page))
            return make_program("PadDeviceOperation", "PadTileMulticoreProgramFactory", cbs, _whole_grid(dev))
        size = dtypes.ELEMENT_SIZE[x.dtype]
        padded = shape[-1] * size
        l1_row, dram_row = round_up(padded, _L1_ALIGNMENT), round_up(padded, _DRAM_ALIGNMENT)
        cbs = [CircularBuffer((1,), 1, dram_row)]
        if front_w or l1_row % _DRAM_ALIGNMENT:
            cbs.append(CircularBuffer((2,), 1, dram_row))
        per_barrier = max(-(-2048 // l1_row), 1)
        budget = dev.config.l1_size // 2 - dev.config.l1_unreserved_base
        depth = min(max(budget // (per_barrier * l1_row), 1), 16)
        cbs.append(CircularBuffer((0,), depth * per_barrier, l1_row))
        rows = 1
        for d in shape[:-1]:
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
    if x.device() is None or x.is_sharded() != sharded_out:  # a move that changes the sharding: not modelled
        return None
    dev = x.device()
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
        return make_program("MoveDeviceOperation", "MoveProgramFactory", (CircularBuffer((0,), 2, round_up(page, 32)),),
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
    ROW_MAJOR input is the row-major slice alone. None for a sharded tensor, and for a block float, which has
    no row-major form (not modelled: the op's values are right, no program is recorded).

    SliceDeviceOperation's row-major factories (slice/device/): with steps, slice_program_factory_rm_stride.cpp
    (c_0 two input rows, aligned to the larger of the two buffers' alignments); without,
    slice_program_factory_rm.cpp (c_0 double-buffers its reads: each core's row count padded to 32, merged into
    reads of at most 4 KiB, pages of the output row aligned to that alignment, twice it when the first column
    is not aligned in the source). Both over the cores split_work_to_cores gives the output rows.
    """
    if not _interleaved(x, out) or x.dtype not in dtypes.ELEMENT_SIZE:
        return None

    dev = x.device()
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
            page = round_up(x._value.shape[-1] * size, align)
            return make_program("SliceDeviceOperation", "SliceRmStrideProgramFactory", (CircularBuffer((0,), 2, page),),
                                cores)
        if (int(index[-1].start or 0) * size) % src_align:
            align *= 2
        row = out._value.shape[-1] * size
        gx, gy = grid_of(dev)
        per_core = -(-rows // min(max(rows, 1), gx * gy))
        pad32 = round_up(per_core, 32)
        per_barrier = pad32 // _merge_sticks(pad32, round_up(row, max(src_align, dst_align)), 4096)
        return make_program("SliceDeviceOperation", "SliceRmProgramFactory",
                            (CircularBuffer((0,), 2 * per_barrier, round_up(row, align)),), cores)

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


def slice_write_programs(x, out, steps: tuple) -> tuple[Program, ...] | None:
    """The programs ttnn.experimental.slice_write runs to write `x` into a strided slice of `out`, as slice_write.cpp
    does for interleaved tensors: a TILE input or output goes through ROW_MAJOR (the input untilized, the output
    untilized, written and tilized back), and SliceWriteDeviceOperation's row-major factory
    (slice_write_rm_interleaved_program_factory.cpp) writes the input's rows: c_0 double-buffers its reads (each
    core's row count padded to 32, merged into reads of at most 4 KiB, rows aligned to the larger of the buffers'
    alignments), c_1 the same again when the last dim is strided, over the cores split_work_to_cores gives the
    rows. None for a sharded tensor or a block float (their factories are not modelled)."""
    if not _interleaved(x, out) or x.dtype not in dtypes.ELEMENT_SIZE or out.dtype not in dtypes.ELEMENT_SIZE:
        return None

    dev = x.device()
    key = ("SliceWriteDeviceOperation", shape_of(x), x.dtype, steps[-1] != 1, x.memory_config().buffer_type,
           out.memory_config().buffer_type, grid_of(dev))

    def build():
        src_align = _DRAM_ALIGNMENT if x.memory_config().buffer_type.name == "DRAM" else _L1_ALIGNMENT
        dst_align = _DRAM_ALIGNMENT if out.memory_config().buffer_type.name == "DRAM" else _L1_ALIGNMENT
        shape = tuple(x._value.shape) or (1,)
        rows = 1
        for d in shape[:-1]:
            rows *= d
        gx, gy = grid_of(dev)
        page = round_up(shape[-1] * dtypes.ELEMENT_SIZE[x.dtype], max(src_align, dst_align))
        pad32 = round_up(-(-rows // min(max(rows, 1), gx * gy)), 32)
        per_barrier = pad32 // _merge_sticks(pad32, page, 4096)
        cbs = [CircularBuffer((0,), 2 * per_barrier, page)]
        if steps[-1] != 1:
            cbs.append(CircularBuffer((1,), 2 * per_barrier, page))
        return make_program("SliceWriteDeviceOperation", "SliceWriteRMInterleavedProgramFactory", tuple(cbs),
                            split_work(rows, gx, gy))

    rm = cached(key, build)
    if x.layout == Layout.ROW_MAJOR and out.layout == Layout.ROW_MAJOR:
        return (rm,)
    # slice_write.cpp: to_layout(ROW_MAJOR) of a TILE input, of the output, and to_layout back to the output's
    steps_in = () if x.layout == Layout.ROW_MAJOR else (data_movement.untilize_program(x, x.dtype),)
    if out.layout == Layout.ROW_MAJOR:
        return (*steps_in, rm)
    return (*steps_in, data_movement.untilize_program(out, out.dtype), rm,
            data_movement.tilize_program(out, out.dtype, out=out))


def transpose_cn_program(x) -> Program | None:
    """TransposeDeviceOperation's CN factory (transpose/device/transpose_cn_program_factory.cpp; ttnn.transpose of
    dims 0 and 1, and permute (1, 0, 2, 3)): one two-page buffer of the input's pages (tiles, or rows of a
    ROW_MAJOR tensor), over the cores split_work_to_cores gives the pages. Interleaved only."""
    if x.device() is None or x.is_sharded():
        return None
    dev = x.device()
    key = ("TransposeDeviceOperation", "cn", shape_of(x), x.dtype, grid_of(dev))

    def build():
        shape = tuple(x.padded_shape)
        tile = x.layout == Layout.TILE
        page = TILE_BYTES[x.dtype] if tile else shape[-1] * dtypes.ELEMENT_SIZE[x.dtype]
        return make_program("TransposeDeviceOperation", "TransposeCNProgramFactory", (CircularBuffer((0,), 2, page),),
                            split_work(dtypes.num_pages(x.layout, shape), *grid_of(dev)))

    return cached(key, build)


def permute_device_program(x, out, order: tuple) -> Program | None:
    """PermuteDeviceOperation for an interleaved TILE tensor of rank 4 (`order`: the 4-D permutation), as
    permute_device_operation.cpp picks its factory (permute_tiled_program_factory.cpp): the tiled dims kept or
    swapped, MultiCoreTileInvariant (c_0 two tiles, c_16 two more when H and W swap, over the output's tiles);
    one of them kept as the last dim, MultiCoreTileRowInvariant (c_0 two tiles, a face-row padding buffer c_1
    when the new H is not whole tiles, c_16 when the old H becomes W, over the larger of split_work_to_cores'
    splits of the input tiles and of the output's last tile rows); both moved, MultiCoreTiledGeneric (c_0, c_1,
    c_2 two tiles each, widened by the read misalignment, and c_3 one padding face row when the new H is not
    whole tiles, over the larger split of the XW blocks and the last tile rows). None for ROW_MAJOR (not modelled).
    """
    if x.device() is None or x.is_sharded() or out.is_sharded() or x.layout != Layout.TILE or len(order) != 4:
        return None
    dev = x.device()
    key = ("PermuteDeviceOperation", shape_of(x), x.dtype, order, x.memory_config().buffer_type, grid_of(dev))

    def build():
        shape = [1] * (4 - x._value.dim()) + list(x._value.shape)
        out_shape = [shape[d] for d in order]
        tile, size = TILE_BYTES[x.dtype], dtypes.ELEMENT_SIZE.get(x.dtype, 2)
        gx, gy = grid_of(dev)
        out_p = (*out_shape[:2], round_up(out_shape[2], 32), round_up(out_shape[3], 32))
        out_tiles = dtypes.num_pages(Layout.TILE, out_p)
        last_rows = out_tiles // (out_p[2] // 32)  # the output's last row of tiles along H, which holds padding
        if order[2:] in ((2, 3), (3, 2)):
            cbs = [CircularBuffer((0,), 2, tile)] + ([CircularBuffer((16,), 2, tile)] if order[2:] == (3, 2) else [])
            return make_program("PermuteDeviceOperation", "MultiCoreTileInvariant", cbs, split_work(out_tiles, gx, gy))
        in_p = (*shape[:2], round_up(shape[2], 32), round_up(shape[3], 32))
        if order[3] in (2, 3):
            swap = order[3] == 2
            new_h = shape[order[2]]  # the output's H, padded to whole tiles where it is not
            cbs = [CircularBuffer((0,), 2, tile)]
            if new_h % 32:
                cbs.append(CircularBuffer((1,), 1, 16 * size))
            if swap:
                cbs.append(CircularBuffer((16,), 2, tile))
            if swap:  # the factory swaps the output's H and W (and the dims) before counting its last tile rows
                last_rows = out_tiles // (out_p[3] // 32)
            units = max(dtypes.num_pages(Layout.TILE, in_p), last_rows)
            return make_program("PermuteDeviceOperation", "MultiCoreTileRowInvariant", cbs, split_work(units, gx, gy))
        src_align = _DRAM_ALIGNMENT if x.memory_config().buffer_type.name == "DRAM" else _L1_ALIGNMENT
        page = tile + max(src_align - 16 * size, 0)
        xw = round_up(shape[order[3]], 32) * round_up(shape[3], 32)
        for i in range(3):
            if i != order[3]:
                xw *= shape[i]
        cbs = [CircularBuffer((i,), 2, page) for i in range(3)]
        if out_shape[2] % 32:
            cbs.append(CircularBuffer((3,), 1, 16 * size))
        return make_program("PermuteDeviceOperation", "MultiCoreTiledGeneric", cbs,
                            split_work(max(xw // (32 * 32), last_rows), gx, gy))

    return cached(key, build)


def transpose_hc_shape_program(dev, shape4: list, dtype) -> Program:
    """transpose_hc_tiled_interleaved_program_factory.cpp on a 4-D logical shape (the CBs and cores
    data_movement.transpose_hc_program builds from tensors), for the transposes TT-NN composes inside other ops
    and for tensors of rank < 4 (unsqueezed to 4-D)."""
    key = ("TransposeDeviceOperation", "hc", tuple(shape4), dtype, grid_of(dev))
    return cached(key, lambda: _transpose_hc(dev, shape4, dtype))


def _transpose_hc(dev, shape4: list, dtype) -> Program:
    out4 = [shape4[0], shape4[2], shape4[1], shape4[3]]
    in_p = (*shape4[:2], round_up(shape4[2], 32), round_up(shape4[3], 32))
    out_p = (*out4[:2], round_up(out4[2], 32), round_up(out4[3], 32))
    cbs = [CircularBuffer((0,), 2, TILE_BYTES[dtype])]
    if shape4[1] % 32:
        cbs.append(CircularBuffer((1,), 1, 16 * 16 * dtypes.ELEMENT_SIZE.get(dtype, 2)))
    tiles = dtypes.num_pages(Layout.TILE, in_p)
    padded_rows = dtypes.num_pages(Layout.TILE, out_p) // (out_p[2] // 32)
    return make_program("TransposeDeviceOperation", "TransposeHCTiledInterleavedProgramFactory", cbs,
                        split_work(max(tiles, padded_rows), *grid_of(dev)))


def permute_rm_program(x, order: tuple) -> Program:
    """PermuteDeviceOperation for an interleaved ROW_MAJOR tensor (permute_rm_program_factory.cpp; `order` the
    permutation of its dims). The last dim kept, MultiCoreRowInvariant: c_0 two input rows (the logical width,
    aligned to the input's memory), split_work_to_cores over the rows. Else MultiCoreBlockedGeneric, which
    swaps W with the new last dim X in 32 x 32 blocks: c_0 two blocks of 32 input rows of 32 elements, c_2 two
    of 32 output rows of 32, c_1 two whole blocks, split_work_to_cores over (rows / X) x ceil(X / 32) x
    ceil(W / 32) blocks."""
    dev = x.device()
    shape = tuple(x._value.shape)
    key = ("PermuteDeviceOperation", "rm", shape, x.dtype, order, x.memory_config().buffer_type, grid_of(dev))

    def build():
        size = dtypes.ELEMENT_SIZE[x.dtype]
        rows = 1
        for d in shape[:-1]:
            rows *= d
        if order[-1] == len(shape) - 1:
            cbs = (CircularBuffer((0,), 2, aligned_page(x, shape[-1] * size)),)
            return make_program("PermuteDeviceOperation", "MultiCoreRowInvariant", cbs, split_work(rows, *grid_of(dev)))
        X, W = shape[order[-1]], shape[-1]
        blocks = rows // X * -(-X // 32) * -(-W // 32)
        cbs = (CircularBuffer((0,), 2 * 32, 32 * size), CircularBuffer((2,), 2 * 32, 32 * size),
               CircularBuffer((1,), 2, 32 * 32 * size))
        return make_program("PermuteDeviceOperation", "MultiCoreBlockedGeneric", cbs, split_work(blocks, *grid_of(dev)))

    return cached(key, build)


def permute_programs(x, out, dims) -> tuple[Program, ...] | None:
    """The programs TT-NN's permute (permute.cpp) runs for an interleaved TILE tensor of rank <= 4, on its 4-D
    view: none for a permutation that keeps the shape and moves only dims of one element (a no-op there), a
    WH transpose for (0, 1, 3, 2), HC for (0, 2, 1, 3), CN for (1, 0, 2, 3), else PermuteDeviceOperation; a
    bfloat8_b input other than WH, CN or CN+WH is typecast to bfloat16 and back around it. An interleaved
    ROW_MAJOR tensor's permute is one PermuteDeviceOperation whatever the order (permute.cpp's transposes are
    transpose.cpp's prim::permute for ROW_MAJOR), of any rank. None where not modelled (sharded, TILE of rank > 4)."""
    rank = len(dims)
    if x.device() is None or x.is_sharded() or out.is_sharded():
        return None
    if rank > 4:  # permute.cpp: prim::permute straight away (after is_permute_nop); its tiled factories not modelled
        if x.layout != Layout.ROW_MAJOR:
            return None
        order, shape = tuple(int(d) % rank for d in dims), list(x._value.shape)
        if order[-1] == rank - 1 and all(d == i or shape[i] == 1 for i, d in enumerate(order)) \
                and [shape[d] for d in order] == shape:
            return ()
        return (permute_rm_program(x, order),)
    order = tuple(range(4 - rank)) + tuple(int(d) % rank + 4 - rank for d in dims)
    shape4 = [1] * (4 - rank) + list(x._value.shape)
    kept = order[2:] == (2, 3) if x.layout == Layout.TILE else order[3] == 3  # the dims the layout's pages span
    if kept and [shape4[d] for d in order] == shape4 and all(d == i or shape4[i] == 1 for i, d in enumerate(order)):
        return ()  # permute.cpp's is_permute_nop: the shape stays and only dims of one element move
    if x.layout == Layout.ROW_MAJOR:  # every order on an interleaved ROW_MAJOR tensor is one prim::permute
        return (permute_rm_program(x, tuple(int(d) % rank for d in dims)),)
    if order == (0, 1, 3, 2):
        return (data_movement.transpose_wh_program(x, out.dtype),)
    bf8 = x.dtype == DataType.BFLOAT8_B and order not in ((1, 0, 2, 3), (1, 0, 3, 2))
    if order == (0, 2, 1, 3):
        core = transpose_hc_shape_program(x.device(), shape4, DataType.BFLOAT16 if bf8 else x.dtype)
    elif order == (1, 0, 2, 3):
        core = transpose_cn_program(x)
    else:
        core = permute_device_program(x, out, order)
        if core is not None and bf8:  # its factory then reads the bfloat16 copy
            core = cached(("PermuteDeviceOperation", "bf16", core), lambda: make_program(
                core.name, core.factory, tuple(CircularBuffer(cb.indices, cb.num_pages, TILE_BYTES[DataType.BFLOAT16]
                                                              if cb.page_size == TILE_BYTES[x.dtype] else cb.page_size)
                                               for cb in core.cbs), core.ranges))
    if core is None:
        return None
    if not bf8:
        return (core,)
    to_bf16 = data_movement.typecast_program(x, DataType.BFLOAT16)
    back = cached(("TypecastDeviceOperation", "permute", shape_of(out), grid_of(x.device())),
                  lambda: data_movement._streaming("TypecastDeviceOperation", "TypecastProgramFactory", x.device(),
                                                   tuple(out.padded_shape), DataType.BFLOAT16, out.dtype, Layout.TILE,
                                                   out_index=2, always_out=True))
    return to_bf16, core, back


def slice_piece_programs(x, out, index) -> tuple[Program, ...] | None:
    """The programs TT-NN's slice runs for x[index] (unit steps) into `out`: the tile factory for a tile-aligned
    slice of a TILE tensor, else slice_programs' row-major path."""
    shape = x._value.shape
    aligned = x.layout == Layout.TILE and len(shape) >= 2 and all(
        i.start % 32 == 0 and (i.stop % 32 == 0 or i.stop == n) for i, n in zip(index[-2:], shape[-2:]))
    if aligned and x.device() is not None and not x.is_sharded() and not out.is_sharded():
        return (data_movement.slice_program(x, out),)
    return slice_programs(x, out, index)


def split_programs(x, pieces: list, dim: int, *, split_op: bool) -> list | None:
    """The programs of each piece of TT-NN's split (split.cpp) or chunk (chunk.cpp) of `x` along `dim`: one slice
    per piece (slice_piece_programs). split's special case, two pieces along the last dim of a TILE tensor whose
    first two dims fit the grid's width and whose last two span two tiles or more, runs SplitDeviceOperation
    instead: not modelled (None)."""
    if x.device() is None or len(x._value.shape) < 2:
        return None
    shape = x._value.shape
    rank = len(shape)
    d = dim % rank
    gx, _ = grid_of(x.device())
    if split_op and len(pieces) == 2 and d == rank - 1 and x.layout == Layout.TILE and \
            shape[0] * shape[1] < gx + 1 and shape[-2] // 32 >= 2 and shape[-1] // 32 >= 2:
        return None
    programs, start = [], 0
    for piece in pieces:
        n = piece._value.shape[d]
        index = [slice(0, s, 1) for s in shape]
        index[d] = slice(start, start + n, 1)
        programs.append(slice_piece_programs(x, piece, index))
        start += n
    return programs


def _shard_grid(spec) -> tuple:
    return tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in spec.grid.ranges())


def i2s_partial_program(x, out) -> Program | None:
    """InterleavedToShardedPartialDeviceOperation (sharded_partial/interleaved_to_sharded_partial/device/
    interleaved_to_sharded_partial_program_factory.cpp, keep_l1_aligned off), on the output's shard grid: with a
    dtype change c_0 holds the input's pages of a shard (aligned to the input buffer), and the shard itself is c_16,
    else c_0 (its pages aligned to the output buffer; the L1 shard's own buffer, globally allocated); c_1, four
    DRAM-aligned scratch pages, only when a DRAM input's page is not a multiple of 32 B (Wormhole)."""
    spec = out.memory_config().shard_spec if out.is_sharded() else None
    if x.device() is None or spec is None:
        return None
    src_dram = x.memory_config().buffer_type.name == "DRAM"
    key = ("InterleavedToShardedPartialDeviceOperation", x.dtype, out.dtype, x.layout, spec, src_dram)

    def build():
        h, w = spec.shape
        tile = x.layout == Layout.TILE
        units = (h // 32) * (w // 32) if tile else h
        in_unit = TILE_BYTES[x.dtype] if tile else w * dtypes.ELEMENT_SIZE[x.dtype]
        out_unit = TILE_BYTES[out.dtype] if tile else w * dtypes.ELEMENT_SIZE[out.dtype]
        src_align = _DRAM_ALIGNMENT if src_dram else _L1_ALIGNMENT
        cbs = []
        if x.dtype != out.dtype:
            cbs.append(CircularBuffer((0,), units, round_up(in_unit, src_align)))
        cbs.append(CircularBuffer((16 if x.dtype != out.dtype else 0,), units, round_up(out_unit, _L1_ALIGNMENT), True))
        if src_dram and in_unit % _DRAM_ALIGNMENT:
            cbs.append(CircularBuffer((1,), 4, round_up(in_unit, _DRAM_ALIGNMENT)))
        return make_program("InterleavedToShardedPartialDeviceOperation", "InterleavedToShardedPartialProgramFactory",
                            cbs, _shard_grid(spec))

    return cached(key, build)


def s2i_partial_program(x, out) -> Program | None:
    """ShardedToInterleavedPartialDeviceOperation (sharded_partial/sharded_to_interleaved_partial/device/
    sharded_to_interleaved_partial_program_factory.cpp) writing x's shards into `out` (interleaved): c_0 the shard
    (its pages aligned to L1, globally allocated), and with a dtype change c_16, the shard's pages in the output's
    format aligned to the output buffer; on the shard grid."""
    spec = x.memory_config().shard_spec if x.is_sharded() else None
    if x.device() is None or spec is None or out.is_sharded():
        return None
    dst_dram = out.memory_config().buffer_type.name == "DRAM"
    key = ("ShardedToInterleavedPartialDeviceOperation", x.dtype, out.dtype, x.layout, spec, dst_dram)

    def build():
        h, w = spec.shape
        tile = x.layout == Layout.TILE
        units = (h // 32) * (w // 32) if tile else h
        in_unit = TILE_BYTES[x.dtype] if tile else w * dtypes.ELEMENT_SIZE[x.dtype]
        cbs = [CircularBuffer((0,), units, round_up(in_unit, _L1_ALIGNMENT), True)]
        if x.dtype != out.dtype:
            out_unit = TILE_BYTES[out.dtype] if tile else w * dtypes.ELEMENT_SIZE[out.dtype]
            cbs.append(CircularBuffer((16,), units, round_up(out_unit, _DRAM_ALIGNMENT if dst_dram else _L1_ALIGNMENT)))
        return make_program("ShardedToInterleavedPartialDeviceOperation", "ShardedToInterleavedPartialProgramFactory",
                            cbs, _shard_grid(spec))

    return cached(key, build)


def reshape_on_device_program(x, out) -> Program | None:
    """ReshapeDeviceOperation of TT-NN's older 4-D reshape_on_device (reshape_on_device/device/
    reshape_tile_program_factory.cpp) for an interleaved TILE tensor: one core, (0, 0), streams two tiles through
    c_0, and adds c_1, one alignment-sized landing pad, when the input buffer's alignment (DRAM 32 B, L1 16 B) is
    wider than a face row (16 elements; block floats count 1 B an element). The ROW_MAJOR factory is not modelled."""
    if x.device() is None or x.layout != Layout.TILE or x.is_sharded() or out.is_sharded():
        return None
    align = _DRAM_ALIGNMENT if x.memory_config().buffer_type.name == "DRAM" else _L1_ALIGNMENT
    key = ("ReshapeDeviceOperation", "on_device", x.dtype, align)

    def build():
        cbs = [CircularBuffer((0,), 2, TILE_BYTES[x.dtype])]
        if align > 16 * dtypes.ELEMENT_SIZE.get(x.dtype, 1):
            cbs.append(CircularBuffer((1,), 1, align))
        return make_program("ReshapeDeviceOperation", "ReshapeTileProgramFactory", cbs, ((0, 0, 0, 0),))

    return cached(key, build)
