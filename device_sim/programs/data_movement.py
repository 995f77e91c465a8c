"""Data movement device operations: layout changes, copies, concat, transpose, typecast, sharding moves.

Each builder follows one tt-metal program factory (named in its docstring, under
ttnn/cpp/ttnn/operations/data_movement/ unless said otherwise). Pages are tiles for a TILE tensor and
rows (padded width x element size) for a ROW_MAJOR one, as the factories page them.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs import data_movement
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(64, 320), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=dev)
    >>> p = data_movement.tilize_program(x, ttnn.bfloat16)
    >>> p.name, [(cb.indices, cb.num_pages) for cb in p.cbs], p.ranges
    ('TilizeDeviceOperation', [((0,), 10), ((16,), 10)], ((0, 0, 1, 0),))
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
    cores_row_major,
    grid_of,
    make_program,
    max_l1_space,
    shape_of,
    split_blocks,
    split_work,
)
from device_sim.program_config_checks import tt_fatal
from device_sim.types import BufferType, DataType, Layout, TensorMemoryLayout


def _round32(n: int) -> int:
    return -(-n // 32) * 32


def _tile_padded(shape) -> tuple:
    return (*shape[:-2], *(-(-int(d) // TILE) * TILE for d in shape[-2:]))


def _rows_and_wt(shape) -> tuple[int, int]:
    """(rows of tiles, tiles per row) of a padded shape."""
    rows = 1
    for d in shape[:-1]:
        rows *= d
    return -(-rows // TILE), -(-shape[-1] // TILE)


def _shard_ranges(spec) -> tuple:
    return tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in spec.grid.ranges())


def layout_program(x, out, *, padded: bool = False) -> Program | None:
    """The program that changes `x`'s layout into `out`'s: tilize (ROW_MAJOR to TILE) or untilize (TILE to
    ROW_MAJOR), their padding variants when `padded`; None when the layout stays or for a sharded tilize."""
    if x.layout == out.layout or x.device() is None:
        return None
    if out.layout == Layout.TILE:
        if x.is_sharded():
            return None
        name = "TilizeWithValPaddingDeviceOperation" if padded else "TilizeDeviceOperation"
        return tilize_program(x, out.dtype, name=name, out=out)
    return untilize_program(x, out.dtype, name="UntilizeWithUnpaddingDeviceOperation" if padded else
                            "UntilizeDeviceOperation")


def memory_move_program(x, out) -> Program | None:
    """to_memory_config's device operation (to_memory_config_op.cpp): InterleavedToSharded, ShardedToInterleaved,
    a copy between interleaved configs, or a reshard between sharded ones; None for a sharded-to-sharded move
    that changes the dtype (a sharded copy) or has an ND-sharded side (not modelled)."""
    if x.device() is None:
        return None
    if out.is_sharded():
        if not x.is_sharded():
            return interleaved_to_sharded_program(x, out)
        if x.memory_config().shard_spec is None or out.memory_config().shard_spec is None:
            return None  # an ND-sharded side: TT-NN's nd reshard factory is not modelled
        return reshard_program(x, out) if x.dtype == out.dtype else None
    return sharded_to_interleaved_program(x, out) if x.is_sharded() else copy_program(x, out.dtype)


def reshard_program(x, out) -> Program:
    """ReshardDeviceOperation (sharded/reshard/device/reshard_program_factory.cpp). Height to height sharding:
    the same-width factory, one CB (c_0) over the L1 side's own shard (the output's when it is in L1, else the
    input's), sized by the other side's shard (its pages x the page), on the L1 side's grid. Otherwise the
    generic factory: c_16 over the output shard, on the output's grid. Pages are tiles, or shard-wide rows."""
    in_spec, out_spec = x.memory_config().shard_spec, out.memory_config().shard_spec
    in_layout, out_layout = x.memory_config().memory_layout, out.memory_config().memory_layout
    out_l1 = out.memory_config().buffer_type == BufferType.L1
    key = ("ReshardDeviceOperation", x.dtype, x.layout, in_spec, out_spec, in_layout, out_layout, out_l1)

    def build():
        tile = x.layout == Layout.TILE
        height = TensorMemoryLayout.HEIGHT_SHARDED
        if in_layout == height and out_layout == height:
            local, remote = (out_spec, in_spec) if out_l1 else (in_spec, out_spec)
            unit = TILE_BYTES[x.dtype] if tile else local.shape[1] * dtypes.ELEMENT_SIZE[x.dtype]
            pages = remote.shape[0] * remote.shape[1] // (TILE * TILE) if tile else remote.shape[0]
            return make_program("ReshardDeviceOperation", "ReshardSameWidthFactory",
                                (CircularBuffer((0,), pages, unit, True),), _shard_ranges(local))
        unit = TILE_BYTES[x.dtype] if tile else out_spec.shape[1] * dtypes.ELEMENT_SIZE[x.dtype]
        pages = out_spec.shape[0] * out_spec.shape[1] // (TILE * TILE) if tile else out_spec.shape[0]
        return make_program("ReshardDeviceOperation", "ReshardGenericFactory",
                            (CircularBuffer((16,), pages, unit, True),), _shard_ranges(out_spec))

    return cached(key, build)


def tilize_program(x, out_dtype: DataType, *, name: str = "TilizeDeviceOperation", out=None) -> Program:
    """tilize_multi_core_interleaved_program_factory.cpp: a whole row of tiles (Wt) in c_0 (the input's
    format) and in c_16 (the output's), on the cores split_blocks_for_tilize gives the rows of tiles.

    tilize_with_val_padding is modelled the same way on the padded shape (its interleaved factory reads a
    row of tiles at a time too; `out`, the output, gives the padded shape). A row of tiles whose two CBs do not
    fit in L1 goes to the block factory (TilizeMultiCoreBlockProgramFactory, or val padding's
    BlockInterleaved one), as both ops' select_program_factory send it (is_enough_space false).
    """
    dev = x.device()
    room = max_l1_space(dev)
    wt = -(-(out if out is not None else x)._value.shape[-1] // TILE) if x._value.dim() else 1
    if room <= (TILE_BYTES[x.dtype] + TILE_BYTES[out_dtype]) * wt:
        factory = _VAL_BLOCK if name.startswith("TilizeWithVal") else "TilizeMultiCoreBlockProgramFactory"
        shape = tuple(out.padded_shape) if out is not None else _tile_padded(x.padded_shape)
        return _tilize_block(dev, x.dtype, out_dtype, shape, room, name, factory)
    key = (name, shape_of(out if out is not None else x), x.dtype, out_dtype, grid_of(dev))
    return cached(key, lambda: _tilize(dev, tuple(out.padded_shape) if out is not None else _tile_padded(
        x.padded_shape), x.dtype, out_dtype, name))


def tilize_single_program(x, out, low_perf: bool) -> Program | None:
    """TilizeSingleCoreProgramFactory (tilize_single_core_program_factory.cpp), for use_multicore=False or
    use_low_perf: c_0 and c_16 of a block of tiles on core (0, 0); the block is one tile when low-perf, else the
    largest divisor of the row's tiles whose two CBs fit in half of L1 above the reserved base."""
    dev = x.device()
    if dev is None or x.is_sharded():
        return None
    in_t, out_t = TILE_BYTES[x.dtype], TILE_BYTES[out.dtype]
    wt = -(-(x._value.shape[-1] if x._value.dim() else 1) // TILE)
    key = ("TilizeDeviceOperation", "single", wt, x.dtype, out.dtype, low_perf, dev.config.l1_size)

    def build():
        per_block = 1
        if not low_perf:
            max_tiles = (dev.config.l1_size // 2 - dev.config.l1_unreserved_base) // (in_t + out_t)
            per_block = wt if wt <= max_tiles else next(n for n in range(max_tiles, 0, -1) if wt % n == 0)
        return make_program("TilizeDeviceOperation", "TilizeSingleCoreProgramFactory",
                            (CircularBuffer((0,), per_block, in_t), CircularBuffer((16,), per_block, out_t)),
                            ((0, 0, 0, 0),))

    return cached(key, build)


def tilize_padded_program(x, out, padded: tuple, use_multicore: bool) -> Program | None:
    """TilizeWithValPaddingDeviceOperation for an interleaved input padded to `padded`, from the factory its
    select_program_factory picks (tilize_with_val_padding_device_operation.cpp): the block factory when a row of
    tiles in c_0 and c_16 does not fit in L1 (is_enough_space: the space below the lowest L1 tensor must exceed
    the two CBs), the single-core one for use_multicore=False, else the block factory where it would use more
    cores than the row split does (a row of more than 32 tiles), else the default one. None for a sharded
    input, whose factories are not modelled."""
    dev = x.device()
    if dev is None or x.is_sharded():
        return None
    name, in_t, out_t = "TilizeWithValPaddingDeviceOperation", TILE_BYTES[x.dtype], TILE_BYTES[out.dtype]
    wt, ht = padded[-1] // TILE, padded[-2] // TILE
    room = max_l1_space(dev)
    if room <= (in_t + out_t) * wt:
        return _tilize_block(dev, x.dtype, out.dtype, padded, room, name, _VAL_BLOCK)
    if not use_multicore:
        key = (name, "single", tuple(padded), x.dtype, out.dtype, dev.config.l1_size)
        return cached(key, lambda: _tilize_single(dev, padded, x.dtype, in_t, out_t))
    gx, gy = grid_of(dev)
    rows = _volume(padded) // padded[-1] // TILE
    if wt > 32 and (ht > 32 or wt > ht):
        in_shape = x.padded_shape
        blocks = in_shape[-1] * (in_shape[-2] if len(in_shape) > 1 else 1) // (TILE * TILE)
        if _ncores(gx * gy, rows) < _ncores_wh(gx * gy, blocks, wt, ht)[0]:
            return _tilize_block(dev, x.dtype, out.dtype, padded, room, name, _VAL_BLOCK)
    key = (name, "default", tuple(padded), x.dtype, out.dtype, gx, gy)
    return cached(key, lambda: make_program(name, "TilizeWithValPaddingMultiCoreDefaultFactory",
                                            (CircularBuffer((0,), wt, in_t), CircularBuffer((16,), wt, out_t)),
                                            split_blocks(rows, gx, gy)))


def _volume(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _tilize_single(dev, padded, dtype, in_t, out_t) -> Program:
    """TilizeWithValPaddingSingleCoreFactory: c_0 and c_16 of the largest divisor of the row's tiles that fits
    half of L1 (two CBs of 32 rows and a row of the input's elements: its max_X), on core (0, 0)."""
    c, elem = dev.config, dtypes.ELEMENT_SIZE[dtype]
    max_x = (c.l1_size // 2 - c.l1_unreserved_base - 32) // (elem * TILE * 2 + elem)
    max_tiles, wt = max_x // TILE, padded[-1] // TILE
    per_block = wt if wt <= max_tiles else next(n for n in range(max_tiles, 0, -1) if wt % n == 0)
    return make_program("TilizeWithValPaddingDeviceOperation", "TilizeWithValPaddingSingleCoreFactory",
                        (CircularBuffer((0,), per_block, in_t), CircularBuffer((16,), per_block, out_t)),
                        ((0, 0, 0, 0),))


_VAL_BLOCK = "TilizeWithValPaddingMultiCoreBlockInterleavedFactory"


def _tilize_block(dev, in_dtype, out_dtype, padded, room, name, factory) -> Program:
    """The block factories of tilize and tilize_with_val_padding (TilizeMultiCoreBlockProgramFactory,
    TilizeWithValPaddingMultiCoreBlockInterleavedFactory: the same CBs): the last two dims' tiles cut into square
    blocks (split_blocks_for_tilize_wh, the block side capped so that a block's row of tiles in c_0 and c_16 fits
    in `room`), a core a block, row by row; c_0 and c_16 hold a row of a block (of a sub-block when capped; the
    cliff column's shorter row on its cores). The CBs shown are the widest core's."""
    gx, gy = grid_of(dev)
    in_t, out_t = TILE_BYTES[in_dtype], TILE_BYTES[out_dtype]
    wt, ht = padded[-1] // TILE, padded[-2] // TILE
    limit = room // (in_t + out_t)
    key = (name, "block", tuple(padded), in_dtype, out_dtype, gx, gy, limit)

    def build():
        ncores, side, sub = _ncores_wh(gx * gy, wt * ht, wt, ht)
        if side > limit:
            ncores, side, sub = _ncores_wh_capped(gx * gy, wt, ht, limit)
        pages = max(sub, wt - (wt // side) * side)
        return make_program(name, factory, (CircularBuffer((0,), pages, in_t), CircularBuffer((16,), pages, out_t)),
                            cores_row_major(ncores, gx))

    return cached(key, build)


def _ncores(area: int, blocks: int) -> int:
    """work_split_tilize.hpp's compute_ncores: ceil(blocks / area) blocks a core, so this many cores."""
    per_core = -(-blocks // area)
    return -(-blocks // per_core) if per_core else blocks


def _ncores_wh(area: int, blocks: int, wt: int, ht: int) -> tuple[int, int, int]:
    """compute_ncores_wh (work_split_tilize.hpp): (cores, block side, sub-block side). The block side is the
    smallest whose square blocks over the wt x ht tiles number fewer than the cores (closest_square_larger_than_b,
    starting from the square root of blocks per core); 1 when none does."""
    per_core = -(-blocks // area)
    root = int(per_core ** 0.5)
    side = 1
    if root * root == per_core and -(-wt // root) * -(-ht // root) < area:
        side = root
    else:
        side = next((n for n in range(root + 1, wt * ht + 1) if -(-wt // n) * -(-ht // n) < area), 1)
    return -(-wt // side) * -(-ht // side), side, side


def _ncores_wh_capped(area: int, wt: int, ht: int, limit: int) -> tuple[int, int, int]:
    """compute_ncores_wh_sb: a block side over the L1 limit is n sub-blocks of fewer than `limit` tiles, the
    (sub-block, n) that gives the most blocks within the grid (then the smallest n), its row cliff under the
    limit."""
    if -(-wt // limit) * -(-ht // limit) < area:
        return -(-wt // limit) * -(-ht // limit), limit, limit
    best = None  # (blocks, -n, sub, side)
    for sub in range(limit - 1, 0, -1):
        for n in range(2, -(-wt // sub) + 1):
            side = n * sub
            blocks = -(-wt // side) * -(-ht // side)
            fits = blocks <= area and wt - (wt // side) * side < limit
            if fits and (best is None or (blocks, -n) > best[:2]):
                best = (blocks, -n, sub, side)
    if best is None:
        raise tt_fatal("opt_n != 0", "No solution found for single_block_size", "device_sim/programs/data_movement.py")
    return best[0], best[3], best[2]


def tilize_shape_program(dev, shape: tuple, in_dtype: DataType, out_dtype: DataType, *,
                         name: str = "TilizeDeviceOperation") -> Program:
    """tilize_program for the input viewed as `shape` (padded to whole tiles), as an op that flattens its input
    before tilizing it (conv2d's [1, 1, N*H*W, C]) runs it."""
    key = (name, "view", tuple(shape), in_dtype, out_dtype, grid_of(dev))
    return cached(key, lambda: _tilize(dev, _tile_padded(shape), in_dtype, out_dtype, name))


def _tilize(dev, shape, in_dtype, out_dtype, name) -> Program:
    rows, wt = _rows_and_wt(shape)
    cbs = (CircularBuffer((0,), wt, TILE_BYTES[in_dtype]), CircularBuffer((16,), wt, TILE_BYTES[out_dtype]))
    return make_program(name, "TilizeMultiCoreInterleavedProgramFactory", cbs, split_blocks(rows, *grid_of(dev)))


def untilize_program(x, out_dtype: DataType, *, name: str = "UntilizeDeviceOperation") -> Program:
    """untilize_multi_core_program_factory.cpp: rows of tiles split as split_blocks_for_tilize splits them;
    c_0 (input format) and c_16 (output format) hold a row of tiles, doubled when a core takes two rows
    or more. A sharded input's c_0 is its shard (globally allocated) and c_16 a shard-wide row, on the
    shard grid. An interleaved untilize whose row of tiles in two CBs of the input's tile size does not fit in L1
    (untilize.cpp's is_enough_space) runs UntilizeMultiCoreBlockProgramFactory, whose CBs and cores are tilize's
    block factory's."""
    dev = x.device()
    spec = x.memory_config().shard_spec if x.is_sharded() else None
    if spec is None and name == "UntilizeDeviceOperation":
        room = max_l1_space(dev)
        if room <= 2 * TILE_BYTES[x.dtype] * -(-(x._value.shape[-1] if x._value.dim() else 1) // TILE):
            return _tilize_block(dev, x.dtype, out_dtype, tuple(x.padded_shape), room, name,
                                 "UntilizeMultiCoreBlockProgramFactory")
    key = (name, shape_of(x), x.dtype, out_dtype, grid_of(dev), spec)
    return cached(key, lambda: _untilize(dev, tuple(x.padded_shape), x.dtype, out_dtype, spec, name))


def _untilize(dev, shape, in_dtype, out_dtype, spec, name) -> Program:
    in_t, out_t = TILE_BYTES[in_dtype], TILE_BYTES[out_dtype]
    if spec is not None:
        h, w = spec.shape
        blocks_per_core, wt = -(-h // TILE), -(-w // TILE)
        depth = 1 if blocks_per_core == 1 else 2
        cbs = (CircularBuffer((0,), wt * blocks_per_core, in_t, True), CircularBuffer((16,), wt * depth, out_t))
        return make_program(name, "UntilizeMultiCoreProgramFactory", cbs, _shard_ranges(spec))
    rows, wt = _rows_and_wt(shape)
    gx, gy = grid_of(dev)
    per_core = -(-rows // (gx * gy))
    depth = 1 if per_core == 1 else 2
    cbs = (CircularBuffer((0,), wt * depth, in_t), CircularBuffer((16,), wt * depth, out_t))
    return make_program(name, "UntilizeMultiCoreProgramFactory", cbs, split_blocks(rows, gx, gy))


def untilize_shape_program(dev, shape: tuple, dtype: DataType, *, name: str = "UntilizeDeviceOperation") -> Program:
    """untilize_program for an interleaved intermediate tensor of `shape` that a composite op untilizes
    (repeat_interleave's transposed input), which device_sim does not make."""
    key = (name, "view", tuple(shape), dtype, grid_of(dev))
    return cached(key, lambda: _untilize(dev, _tile_padded(shape), dtype, dtype, None, name))


def transpose_wh_program(x, out_dtype: DataType) -> Program:
    """transpose_wh_program_factory.cpp (the last two dims of an interleaved TILE tensor): two tiles in c_0
    and two in c_16, on the cores split_work_to_cores gives the tiles."""
    dev = x.device()
    return cached(("TransposeDeviceOperation", shape_of(x), x.dtype, out_dtype, grid_of(dev)),
                  lambda: _streaming("TransposeDeviceOperation", "TransposeWHProgramFactory", dev,
                                     tuple(x.padded_shape), x.dtype, out_dtype, Layout.TILE, out_index=16,
                                     always_out=True))


def transpose_wh_shape_program(dev, shape: tuple, dtype: DataType) -> Program:
    """transpose_wh_program for an intermediate tensor of `shape` (padded to whole tiles) that a composite op
    transposes (topk's result, transposed back), which device_sim does not make."""
    key = ("TransposeDeviceOperation", "view", tuple(shape), dtype, grid_of(dev))
    return cached(key, lambda: _streaming("TransposeDeviceOperation", "TransposeWHProgramFactory", dev,
                                          _tile_padded(shape), dtype, dtype, Layout.TILE, out_index=16,
                                          always_out=True))


def transpose_hc_program(x, out) -> Program:
    """transpose_hc_tiled_interleaved_program_factory.cpp (dims 1 and 2 of an interleaved 4D TILE tensor): two
    input tiles, plus a 16x16-value padding CB when C is not a whole number of tiles; on the larger of
    split_work_to_cores' splits of the input's tiles and of the output's padded tile rows."""
    dev = x.device()
    key = ("TransposeDeviceOperation", "hc", shape_of(x), shape_of(out), x.dtype, grid_of(dev))

    def build():
        in_shape, out_shape, channels = tuple(x.padded_shape), tuple(out.padded_shape), x.shape[1]
        gx, gy = grid_of(dev)
        cbs = [CircularBuffer((0,), 2, TILE_BYTES[x.dtype])]
        if channels % TILE:
            cbs.append(CircularBuffer((1,), 1, 16 * 16 * dtypes.ELEMENT_SIZE.get(x.dtype, 2)))
        tiles = _pages(in_shape, Layout.TILE)
        padded = _pages(out_shape, Layout.TILE) // (out_shape[2] // TILE)
        return make_program("TransposeDeviceOperation", "TransposeHCTiledInterleavedProgramFactory", cbs,
                            split_work(max(tiles, padded), gx, gy))

    return cached(key, build)


def permute_program(x, out, dims) -> Program | None:
    """The program TT-NN's permute (permute.cpp) runs for an interleaved TILE tensor of rank <= 4: the dims are
    taken to 4D; (0, 1, 3, 2) is a WH transpose and (0, 2, 1, 3) an HC one (TransposeDeviceOperation). CN and
    the general PermuteDeviceOperation factories are not modelled (None), nor a bfloat8_b permute other than
    WH, which TT-NN wraps in typecasts."""
    rank = len(dims)
    if rank > 4 or x.layout != Layout.TILE or x.is_sharded() or out.is_sharded():
        return None
    order = tuple(range(4 - rank)) + tuple(int(d) % rank + 4 - rank for d in dims)
    if order == (0, 1, 3, 2):
        return transpose_wh_program(x, out.dtype)
    if order == (0, 2, 1, 3) and rank == 4 and x.dtype != DataType.BFLOAT8_B:
        return transpose_hc_program(x, out)
    return None


def _pages(shape, layout: Layout) -> int:
    return dtypes.num_pages(layout, shape)


def _streaming(name: str, factory: str, dev, shape, in_dtype, out_dtype, layout, *, out_index: int,
               always_out: bool, row_wise: bool = False, align32: bool = False) -> Program:
    """The factories that stream pages through two-page CBs: c_0 in, and an output CB (c_<out_index>)
    always or only when the dtype changes, split_work_to_cores over the pages."""
    if layout == Layout.TILE:
        in_p, out_p = TILE_BYTES[in_dtype], TILE_BYTES[out_dtype]
    else:
        in_p = shape[-1] * dtypes.ELEMENT_SIZE[in_dtype]
        out_p = shape[-1] * dtypes.ELEMENT_SIZE[out_dtype]
    if align32:
        in_p, out_p = _round32(in_p), _round32(out_p)
    cbs = [CircularBuffer((0,), 2, in_p)]
    if always_out or in_dtype != out_dtype:
        cbs.append(CircularBuffer((out_index,), 2, out_p))
    gx, gy = grid_of(dev)
    return make_program(name, factory, cbs, split_work(_pages(shape, layout), gx, gy, row_wise=row_wise))


def slice_program(x, out) -> Program:
    """slice_program_factory_tile.cpp (a step-1, tile-aligned slice of an interleaved TILE tensor): one two-tile
    CB, c_0 in the input's format, that reader and writer share; split_work_to_cores over the output's tiles."""
    dev = x.device()
    return cached(("SliceDeviceOperation", shape_of(out), x.dtype, grid_of(dev)), lambda: make_program(
        "SliceDeviceOperation", "SliceTileProgramFactory", (CircularBuffer((0,), 2, TILE_BYTES[x.dtype]),),
        split_work(_pages(tuple(out.padded_shape), Layout.TILE), *grid_of(dev))))


def copy_program(x, out_dtype: DataType) -> Program:
    """copy_program_factory.cpp (clone, and to_memory_config between interleaved configs): two pages in c_0,
    each rounded up to 32 B, and two in c_16 only when the dtype changes; split_work_to_cores over the pages."""
    dev = x.device()
    return cached(("CopyDeviceOperation", shape_of(x), x.dtype, out_dtype, grid_of(dev)),
                  lambda: _streaming("CopyDeviceOperation", "CopyProgramFactory", dev, tuple(x.padded_shape),
                                     x.dtype, out_dtype, x.layout, out_index=16, always_out=False, align32=True))


def typecast_program(x, out_dtype: DataType) -> Program:
    """copy/typecast/device/typecast_program_factory.cpp: two pages in c_0 and two in c_2, over the pages
    (row by row for a ROW_MAJOR tensor, column by column for tiles)."""
    dev = x.device()
    rm = x.layout == Layout.ROW_MAJOR
    return cached(("TypecastDeviceOperation", shape_of(x), x.dtype, out_dtype, grid_of(dev)),
                  lambda: _streaming("TypecastDeviceOperation", "TypecastProgramFactory", dev, tuple(x.padded_shape),
                                     x.dtype, out_dtype, x.layout, out_index=2, always_out=True, row_wise=rm))


def concat_program(out) -> Program:
    """concat_program_factory.cpp's interleaved concat: one two-page CB (c_0, the output's page) that every
    input streams through, split_work_to_cores over the output's pages (row-wise for ROW_MAJOR)."""
    dev = out.device()
    key = ("ConcatDeviceOperation", shape_of(out), out.dtype, grid_of(dev))

    def build():
        shape = tuple(out.padded_shape)
        page = dtypes.page_size(out.dtype, out.layout, shape)
        gx, gy = grid_of(dev)
        return make_program("ConcatDeviceOperation", "ConcatProgramFactory", (CircularBuffer((0,), 2, page),),
                            split_work(_pages(shape, out.layout), gx, gy, row_wise=out.layout == Layout.ROW_MAJOR))

    return cached(key, build)


def concat_shape_program(dev, shape: tuple, dtype: DataType, layout: Layout) -> Program:
    """concat_program for an interleaved output of `shape` that a composite op concatenates (repeat_interleave's
    copies), which device_sim does not make."""
    key = ("ConcatDeviceOperation", "view", tuple(shape), dtype, layout, grid_of(dev))

    def build():
        padded = _tile_padded(shape) if layout == Layout.TILE else tuple(shape)
        gx, gy = grid_of(dev)
        return make_program("ConcatDeviceOperation", "ConcatProgramFactory",
                            (CircularBuffer((0,), 2, dtypes.page_size(dtype, layout, padded)),),
                            split_work(_pages(padded, layout), gx, gy, row_wise=layout == Layout.ROW_MAJOR))

    return cached(key, build)


# DRAM alignment (hal::get_dram_alignment on Wormhole) and the read transaction ids the reader keeps in flight
_DRAM_ALIGNMENT, _TRIDS = 32, 4


def i2s_cbs(in_dtype: DataType, out_dtype: DataType, tile: bool, shard_h: int, shard_w: int,
            src_alignment: int = _DRAM_ALIGNMENT) -> list:
    """InterleavedToShardedProgramFactory's CBs for one [shard_h, shard_w] shard, in the order it creates them:
    with a dtype change c_0 streams the input's pages (aligned to the source buffer's alignment) and the output
    is c_16, else the output is c_0; the output CB spans the L1 shard itself (globally allocated); c_1, the
    scratchpad that re-aligns DRAM reads for L1 (keep_l1_aligned, always on), holds 4 pages of
    align(page + 32, 32)."""
    units = (-(-shard_h // TILE) * -(-shard_w // TILE)) if tile else shard_h
    in_unit = TILE_BYTES[in_dtype] if tile else shard_w * dtypes.ELEMENT_SIZE[in_dtype]
    out_unit = TILE_BYTES[out_dtype] if tile else shard_w * dtypes.ELEMENT_SIZE[out_dtype]
    convert = in_dtype != out_dtype
    cbs = [CircularBuffer((0,), units, -(-in_unit // src_alignment) * src_alignment)] if convert else []
    cbs.append(CircularBuffer((16 if convert else 0,), units, -(-out_unit // 16) * 16, True))
    scratch = -(-(in_unit + _DRAM_ALIGNMENT) // _DRAM_ALIGNMENT) * _DRAM_ALIGNMENT
    cbs.append(CircularBuffer((1,), _TRIDS, scratch))
    return cbs


def interleaved_to_sharded_program(x, out) -> Program | None:
    """InterleavedToShardedDeviceOperation (interleaved_to_sharded_program_factory.cpp, i2s_cbs) on the output's
    shard grid; None for an output given an ND shard spec (its factory is not modelled)."""
    spec = out.memory_config().shard_spec
    if spec is None:
        return None
    in_l1 = x.memory_config().buffer_type == BufferType.L1
    key = ("InterleavedToShardedDeviceOperation", x.dtype, out.dtype, x.layout, spec, in_l1)
    return cached(key, lambda: make_program(
        "InterleavedToShardedDeviceOperation", "InterleavedToShardedProgramFactory",
        i2s_cbs(x.dtype, out.dtype, x.layout == Layout.TILE, *spec.shape, src_alignment=16 if in_l1 else 32),
        _shard_ranges(spec)))


def sharded_to_interleaved_program(x, out) -> Program | None:
    """ShardedToInterleavedDeviceOperation: the input CB is the shard itself (globally allocated); an output
    CB of a shard's pages, aligned as the output buffer (32 B in DRAM, 16 B in L1), only when the dtype changes
    (to_memory_config_op.cpp's L1 check counts these), on the shard grid. None for an ND-sharded input (its
    factory is not modelled)."""
    spec = x.memory_config().shard_spec
    if spec is None:
        return None
    out_l1 = out.memory_config().buffer_type == BufferType.L1
    key = ("ShardedToInterleavedDeviceOperation", x.dtype, out.dtype, x.layout, spec, out_l1)

    def build():
        tile = x.layout == Layout.TILE
        h, w = spec.shape
        units = (-(-h // TILE) * -(-w // TILE)) if tile else h
        in_unit = TILE_BYTES[x.dtype] if tile else w * dtypes.ELEMENT_SIZE[x.dtype]
        cbs = [CircularBuffer((0,), units, in_unit, True)]
        if x.dtype != out.dtype:
            out_unit = TILE_BYTES[out.dtype] if tile else w * dtypes.ELEMENT_SIZE[out.dtype]
            alignment = 16 if out_l1 else _DRAM_ALIGNMENT
            cbs.append(CircularBuffer((16,), units, -(-out_unit // alignment) * alignment))
        return make_program("ShardedToInterleavedDeviceOperation", "ShardedToInterleavedProgramFactory", cbs,
                            _shard_ranges(spec))

    return cached(key, build)



def prefill_rows_program(rows, start, which: str) -> Program:
    """deepseek_prefill's Extract / Insert device operations (extract_program_factory.cpp and insert's) on every core
    of the grid: c_0 32 tiles of the row tensor's format (a deep pipeline), then one aligned page each of the start
    table (c_1) and of the counts table for the reader and the writer (c_2, c_3)."""
    dev = rows.device()
    key = ("DeepseekPrefill", which, rows.dtype, start.buffer.page_size, grid_of(dev))

    def build():
        align = dev.config.dram_alignment
        page = -(-start.buffer.page_size // align) * align
        cbs = (CircularBuffer((0,), 32, TILE_BYTES[rows.dtype]), CircularBuffer((1,), 1, page),
               CircularBuffer((2,), 1, page), CircularBuffer((3,), 1, page))
        gx, gy = grid_of(dev)
        name = "ExtractDeviceOperation" if which == "extract" else "InsertDeviceOperation"
        factory = "ExtractProgramFactory" if which == "extract" else "InsertProgramFactory"
        return make_program(name, factory, cbs, ((0, 0, gx - 1, gy - 1),))

    return cached(key, build)


def isin_program(elements, test_elements) -> Program:
    """IsInDeviceOperation (experimental/isin/device/isin_program_factory.cpp) on its flat ROW_MAJOR operands: the
    elements split into subchunks of the most values three buffers fit in 80 % of a core's L1 (rounded down to 64:
    isin.cpp's calculate_max_fetch_size), a subchunk or more per core (split_work_to_cores); c_0 one subchunk of
    elements, c_1 of test elements, c_2 of the UINT32 mask."""
    dev = elements.device()
    key = ("IsIn", elements.dtype, test_elements.dtype, int(elements.shape[0]), grid_of(dev))

    def build():
        e, t, o = (dtypes.element_size(d) for d in (elements.dtype, test_elements.dtype, DataType.UINT32))
        fetch = int(dev.config.l1_size * 0.8 / (e + e + t)) & ~63  # TT-NN sizes the output buffer as the elements'
        subchunks = -(-int(elements.shape[0]) // fetch)
        cbs = (CircularBuffer((0,), 1, fetch * e), CircularBuffer((1,), 1, fetch * t),
               CircularBuffer((2,), 1, fetch * o))
        return make_program("IsInDeviceOperation", "IsInProgramFactory", cbs, split_work(subchunks, *grid_of(dev)))

    return cached(key, build)


def padded_slice_program(x, out) -> Program | None:
    """PaddedSliceDeviceOperation's RM factory (experimental/padded_slice/device/padded_slice_rm_program_factory.cpp)
    on the output's shard grid: c_0 the output shard (its own L1 buffer; rows rounded up to the L1 alignment when
    they are not aligned to max(source, destination) alignment), c_1 one padded output row when the output row is
    wider than the input's per core, then the reader's scratch for unaligned rows: 2 input rows plus the source
    alignment. None for a TILE input (the tile factory is not modelled)."""
    if x.layout != Layout.ROW_MAJOR:
        return None
    dev, spec = x.device(), out.memory_config().shard_spec
    key = ("PaddedSlice", tuple(x._value.shape), x.dtype, x.memory_config().buffer_type, out.memory_config())

    def build():
        size = dtypes.ELEMENT_SIZE[x.dtype]
        src = dev.config.dram_alignment if x.memory_config().buffer_type == BufferType.DRAM else dev.config.l1_alignment
        dst = dev.config.l1_alignment
        channel_cores = 1 if out.memory_config().memory_layout == TensorMemoryLayout.HEIGHT_SHARDED \
            else -(-out.padded_shape[-1] // spec.shape[1])  # get_num_cores_channels_from_sharded_tensor
        out_row, in_row = spec.shape[1] * size, x._value.shape[-1] * size // channel_cores
        unaligned = out_row % max(src, dst) != 0
        cbs = [CircularBuffer((0,), spec.shape[0], -(-out_row // dst) * dst if unaligned else out_row, True)]
        if out_row > in_row:
            cbs.append(CircularBuffer((1,), 1, out_row))
        if unaligned:
            cbs.append(CircularBuffer((len(cbs),), 2, -(-(x._value.shape[-1] * size + src) // src) * src))
        return make_program("PaddedSliceDeviceOperation", "PaddedSliceRMProgramFactory", tuple(cbs),
                            _shard_ranges(spec))

    return cached(key, build)


def indexed_fill_program(a, batch_ids) -> Program:
    """IndexedFillDeviceOperation (data_movement/indexed_fill/device/indexed_fill_program_factory.cpp) on every core
    of the grid: c_0 two rows of a (padded width, rounded up to 32 bytes), c_1 two pages of the batch ids (4 bytes
    each, rounded up to 32)."""
    dev = a.device()
    row = -(-int(a.padded_shape[-1]) * dtypes.ELEMENT_SIZE[a.dtype] // 32) * 32
    ids = -(-int(batch_ids.padded_shape[-1]) * 4 // 32) * 32
    key = ("IndexedFill", row, ids, grid_of(dev))
    gx, gy = grid_of(dev)
    return cached(key, lambda: make_program("IndexedFillDeviceOperation", "IndexedFillProgramFactory",
                                            (CircularBuffer((0,), 2, row), CircularBuffer((1,), 2, ids)),
                                            ((0, 0, gx - 1, gy - 1),)))


def nonzero_program(x) -> Program:
    """NonZeroIndicesDeviceOperation (data_movement/non_zero_indices/device/non_zero_indices_program_factory.cpp) on
    core (0, 0): c_0 two pages of the [1, 1, 1, X] input's row, c_1 two 32-byte pages (the count), c_2 two pages of
    X uint32 indices (each page rounded up to 32 bytes)."""
    n = int(x.shape[-1])
    row = -(-n * dtypes.ELEMENT_SIZE[x.dtype] // 32) * 32
    key = ("NonZeroIndices", row, n)
    return cached(key, lambda: make_program(
        "NonZeroIndicesDeviceOperation", "NonZeroIndicesProgramFactory",
        (CircularBuffer((0,), 2, row), CircularBuffer((1,), 2, 32), CircularBuffer((2,), 2, -(-n * 4 // 32) * 32)),
        ((0, 0, 0, 0),)))


def convert_to_chw_program(x, out) -> Program:
    """ConvertToCHWDeviceOperation (experimental/cnn/convert_to_chw/device/convert_to_chw_program_factory.cpp), on the
    input's shard grid: c_0 the input shard (its own L1 buffer, HW / 32 / cores tiles), c_1 the output shard (its own
    buffer, C rows of the shard's width), c_2 16 bfloat16 tiles for the transpose."""
    in_spec, out_spec = x.memory_config().shard_spec, out.memory_config().shard_spec
    key = ("ConvertToCHWDeviceOperation", x.dtype, out.dtype, tuple(x.shape), in_spec, out_spec)

    def build():
        cores = in_spec.grid.num_cores()
        tiles = -(-(x.shape[-2] // TILE) // cores)
        cbs = (CircularBuffer((0,), tiles, TILE_BYTES[x.dtype], True),
               CircularBuffer((1,), out_spec.shape[0], out_spec.shape[1] * dtypes.ELEMENT_SIZE[out.dtype], True),
               CircularBuffer((2,), 16, TILE_BYTES[DataType.BFLOAT16]))
        return make_program("ConvertToCHWDeviceOperation", "ConvertToCHWProgramFactory", cbs, _shard_ranges(in_spec))

    return cached(key, build)


def convert_to_hwc_program(x, out) -> Program:
    """ConvertToHWCDeviceOperation (experimental/cnn/convert_to_hwc/device/convert_to_hwc_program_factory.cpp),
    on the output's shard grid: c_0 the input shard (its own L1 buffer; a C-row staging copy of a DRAM input's
    shard), c_1 the C gathered rows of one block, c_2..c_4 the block's bfloat16 tiles (tilized and transposed
    twice), c_5 the output shard (its own buffer). A block is the output shard's rows, split into the first
    multiple of 32 from 1,024 up that divides them (select_block_size)."""
    in_spec, out_spec = x.memory_config().shard_spec, out.memory_config().shard_spec
    in_l1 = x.memory_config().buffer_type == BufferType.L1
    key = ("ConvertToHWCDeviceOperation", x.dtype, tuple(x.shape), in_spec, out_spec, in_l1)

    def build():
        size = dtypes.ELEMENT_SIZE[x.dtype]
        c = x.shape[-2]
        in_rows = in_spec.shape[0] if in_l1 else c
        gather = out_spec.shape[0]
        block = next((w for w in range(1024, gather + 1, 32) if gather % w == 0), gather)
        tiles = -(-block // TILE)
        bf16 = TILE_BYTES[DataType.BFLOAT16]
        cbs = (CircularBuffer((0,), in_rows, in_spec.shape[1] * size, in_l1),
               CircularBuffer((1,), c, block * size),
               *(CircularBuffer((i,), tiles, bf16) for i in (2, 3, 4)),
               CircularBuffer((5,), out_spec.shape[0], out_spec.shape[1] * size, True))
        return make_program("ConvertToHWCDeviceOperation", "ConvertToHWCProgramFactory", cbs,
                            _shard_ranges(out_spec))

    return cached(key, build)
