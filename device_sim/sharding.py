"""Sharded memory configs and where a sharded tensor's shards lie, core by core.

    import device_sim as ttnn
    device = ttnn.open_device(0)
    cfg = ttnn.create_sharded_memory_config((1, 256, 128), ttnn.CoreGrid(y=2, x=4), ttnn.ShardStrategy.HEIGHT)
    t = ttnn.from_torch(torch.randn(1, 256, 128), layout=ttnn.TILE, device=device, memory_config=cfg)
    t.memory_config().shard_spec.shape     # (32, 128): one shard per core
    t.buffer.cores                         # ((0, 0), (1, 0), ...): the (x, y) core of each shard

A sharded buffer holds one shard per core of its grid, each at the same L1 address (TT-Metal
allocates L1 lock-step across banks), so the per-core placement is the core list and the
address. A *_SHARDED MemoryConfig without a spec (ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG) is
completed here from the device grid, as TT-NN's ops complete it from their own core grid.
"""

from __future__ import annotations

import math

import torch

from device_sim import dtypes, per_core
from device_sim.types import (
    BufferType,
    CoreCoord,
    CoreGrid,
    CoreRange,
    CoreRangeSet,
    Layout,
    MemoryConfig,
    NdShardSpec,
    ShardOrientation,
    ShardSpec,
    ShardSpecError,
    ShardStrategy,
    TensorMemoryLayout,
)

_LAYOUT = {
    ShardStrategy.HEIGHT: TensorMemoryLayout.HEIGHT_SHARDED,
    ShardStrategy.WIDTH: TensorMemoryLayout.WIDTH_SHARDED,
    ShardStrategy.BLOCK: TensorMemoryLayout.BLOCK_SHARDED,
}


# -- making configs ----------------------------------------------------------------------------
def create_sharded_memory_config(shape, core_grid, strategy: ShardStrategy,
                                 orientation: ShardOrientation | None = None,
                                 use_height_and_width_as_shard_shape: bool = False) -> MemoryConfig:
    """An L1 MemoryConfig that shards a tensor of `shape` over `core_grid` by `strategy`, as TT-NN's.

    Args:
        shape: the tensor's shape, seen as 2D: height = product of all dims but the last.
        core_grid: a ttnn.CoreGrid, a pair of CoreGrids (a full block and a partial last row),
            or a ttnn.CoreRangeSet (only with use_height_and_width_as_shard_shape=True).
        strategy: ttnn.ShardStrategy.HEIGHT, WIDTH or BLOCK.
        orientation: the order shards are dealt to cores; ROW_MAJOR when None.
        use_height_and_width_as_shard_shape: the last two dims of `shape` are the shard itself
            (swapped for COL_MAJOR, as TT-NN does).
    """
    layout = _layout_of(strategy)
    orientation = ShardOrientation.ROW_MAJOR if orientation is None else ShardOrientation(orientation)
    grid = _grid_of(core_grid)
    if isinstance(core_grid, CoreRangeSet) and not use_height_and_width_as_shard_shape:
        raise ShardSpecError(
            "create_sharded_memory_config: a CoreRangeSet core_grid needs use_height_and_width_as_shard_shape=True "
            "(TT-NN derives shard shapes only over a CoreGrid); pass the shard shape, or a ttnn.CoreGrid"
        )
    *batch, height, width = _shape2(shape)
    if use_height_and_width_as_shard_shape:
        shard = (height, width) if orientation == ShardOrientation.ROW_MAJOR else (width, height)
        return MemoryConfig(layout, BufferType.L1, ShardSpec(grid, shard, orientation))
    height *= math.prod(batch)
    if isinstance(core_grid, (list, tuple)):
        raise ShardSpecError("create_sharded_memory_config: a pair of CoreGrids needs "
                             "use_height_and_width_as_shard_shape=True; give the shard shape itself")
    gy, gx = core_grid.y, core_grid.x
    if layout == TensorMemoryLayout.BLOCK_SHARDED:
        rows, cols = (gy, gx) if orientation == ShardOrientation.ROW_MAJOR else (gx, gy)
        shard = (_split(height, rows, "height", f"{rows} grid rows"),
                 _split(width, cols, "width", f"{cols} grid columns"))
    elif layout == TensorMemoryLayout.HEIGHT_SHARDED:
        shard = _split(height, gy * gx, "height", f"{gy * gx} cores"), width
    else:
        shard = height, _split(width, gy * gx, "width", f"{gy * gx} cores")
    return MemoryConfig(layout, BufferType.L1, ShardSpec(grid, shard, orientation))


def create_sharded_memory_config_(shape, core_grid, strategy, orientation,
                                  use_height_and_width_as_shard_shape: bool = False,
                                  tile_layout: bool = False) -> MemoryConfig:
    """TT-NN's variant for shapes that do not divide evenly: shards are rounded up, the last is partial.

    `strategy` may be a ShardStrategy or a TensorMemoryLayout; a CoreRangeSet grid is allowed.
    With tile_layout=True shard heights are rounded up to whole 32-row tiles.
    """
    layout = strategy if isinstance(strategy, TensorMemoryLayout) else _layout_of(strategy)
    if layout == TensorMemoryLayout.INTERLEAVED:
        raise ShardSpecError("create_sharded_memory_config_: strategy must be a sharded layout, not INTERLEAVED")
    orientation = ShardOrientation.ROW_MAJOR if orientation is None else ShardOrientation(orientation)
    grid = _grid_of(core_grid)
    *batch, height, width = _shape2(shape)
    if use_height_and_width_as_shard_shape:
        shard = (height, width) if orientation == ShardOrientation.ROW_MAJOR else (width, height)
        return MemoryConfig(layout, BufferType.L1, ShardSpec(grid, shard, orientation))
    height *= math.prod(batch)
    n = grid.num_cores()
    box = grid.bounding_box().grid_size()
    up = lambda a, b: -(-a // b)  # noqa: E731
    if layout == TensorMemoryLayout.BLOCK_SHARDED:
        if box.x * box.y != n:
            raise ShardSpecError(f"BLOCK sharding needs a rectangular core grid, got {grid!r}")
        rows, cols = (box.y, box.x) if orientation == ShardOrientation.ROW_MAJOR else (box.x, box.y)
        h = up(height, rows * 32) * 32 if tile_layout else up(height, rows)
        shard = h, up(width, cols)
    elif layout == TensorMemoryLayout.HEIGHT_SHARDED:
        shard = (up(height, n * 32) * 32 if tile_layout else up(height, n)), width
    else:
        shard = height, up(width, n)
    return MemoryConfig(layout, BufferType.L1, ShardSpec(grid, shard, orientation))


def num_cores_to_corerangeset(target_num_cores: int, grid_size, row_wise: bool = False) -> CoreRangeSet:
    """The first `target_num_cores` cores of a `grid_size` grid (a CoreCoord, or an (x, y) pair: TT-NN's binding
    converts a tuple or list to CoreCoord; anything else with x and y, a CoreGrid too, is read as before): whole
    columns (or rows if row_wise), then the rest."""
    grid = grid_size if hasattr(grid_size, "x") else CoreCoord(grid_size)
    gx, gy = grid.x, grid.y
    if not 0 < target_num_cores <= gx * gy:
        raise ShardSpecError(
            f"num_cores_to_corerangeset: target_num_cores {target_num_cores} must be between 1 and the "
            f"{gx * gy} cores of a {gx}x{gy} (x by y) grid"
        )
    major = gx if row_wise else gy  # cores along one full row (or column)
    full, rest = divmod(target_num_cores, major)
    ranges = []
    if row_wise:
        if full:
            ranges.append(CoreRange(CoreCoord(0, 0), CoreCoord(gx - 1, full - 1)))
        if rest:
            ranges.append(CoreRange(CoreCoord(0, full), CoreCoord(rest - 1, full)))
    else:
        if full:
            ranges.append(CoreRange(CoreCoord(0, 0), CoreCoord(full - 1, gy - 1)))
        if rest:
            ranges.append(CoreRange(CoreCoord(full, 0), CoreCoord(full, rest - 1)))
    return CoreRangeSet(ranges)


def grid_to_cores(num_cores_or_start, grid_x_or_end, grid_y: int | None = None, row_wise: bool = False) \
        -> list[CoreCoord]:
    """tt-metal's grid_to_cores (core_coord.cpp), both overloads: the first `num_cores` cores of a grid_x x grid_y
    grid, row by row (row_wise) or column by column; or every core from `start` to `end` (CoreCoords, inclusive)."""
    if isinstance(num_cores_or_start, CoreCoord) or isinstance(grid_x_or_end, CoreCoord):
        start, end = (c if isinstance(c, CoreCoord) else CoreCoord(c) for c in (num_cores_or_start, grid_x_or_end))
        xs, ys = range(start.x, end.x + 1), range(start.y, end.y + 1)
        return ([CoreCoord(x, y) for y in ys for x in xs] if row_wise else [CoreCoord(x, y) for x in xs for y in ys])
    n, gx, gy = num_cores_or_start, grid_x_or_end, grid_y
    if n > gx * gy:
        raise ShardSpecError(f"grid_to_cores: Number of cores {n} exceeds grid size {gx}x{gy}")
    return [CoreCoord(i % gx, i // gx) if row_wise else CoreCoord(i // gy, i % gy) for i in range(n)]


def corerange_to_cores(core_range_set, max_cores: int | None = None, row_wise: bool = False) -> list[CoreCoord]:
    """The cores of each range in turn, row by row (row_wise) or column by column, at most `max_cores`."""
    ranges = [core_range_set] if isinstance(core_range_set, CoreRange) else core_range_set.ranges()
    cores = []
    for r in ranges:
        if row_wise:
            cores += [CoreCoord(x, y) for y in range(r.start.y, r.end.y + 1) for x in range(r.start.x, r.end.x + 1)]
        else:
            cores += [CoreCoord(x, y) for x in range(r.start.x, r.end.x + 1) for y in range(r.start.y, r.end.y + 1)]
    return cores if max_cores is None else cores[:max_cores]


# -- completing a spec-less config --------------------------------------------------------------
def complete(cfg: MemoryConfig, padded_shape, layout: Layout, device, tile_hw=(32, 32)) -> MemoryConfig:
    """`cfg` with a shard spec: a *_SHARDED config without one gets the widest even split over the device grid.

    HEIGHT uses the most cores (of the worker grid, row by row) that divide the height in tiles,
    WIDTH the same over the width, BLOCK the most rows and columns of the grid that divide each.
    """
    if not cfg.is_sharded() or cfg.shard_spec is not None or cfg.nd_shard_spec is not None:
        return cfg
    grid = device.compute_with_storage_grid_size()
    th, tw = tile_hw if layout == Layout.TILE else (1, 1)
    height, width = math.prod(padded_shape[:-1]), padded_shape[-1]
    rows, cols = height // th, width // tw  # in tiles (or elements in ROW_MAJOR)
    if cfg.memory_layout == TensorMemoryLayout.BLOCK_SHARDED:
        gy, gx = _divisor(rows, grid.y), _divisor(cols, grid.x)
        spec = ShardSpec(CoreGrid(y=gy, x=gx), (rows // gy * th, cols // gx * tw))
    else:
        n = _divisor(rows if cfg.memory_layout == TensorMemoryLayout.HEIGHT_SHARDED else cols, grid.x * grid.y)
        cores = num_cores_to_corerangeset(n, CoreCoord(grid.x, grid.y), row_wise=True)
        shard = ((rows // n * th, width) if cfg.memory_layout == TensorMemoryLayout.HEIGHT_SHARDED
                 else (height, cols // n * tw))
        spec = ShardSpec(cores, shard)
    return MemoryConfig(cfg.memory_layout, cfg.buffer_type, spec)


def complete_from_inputs(cfg: MemoryConfig, shape, layout: Layout, inputs, tile_hw=(32, 32)) -> MemoryConfig:
    """`cfg` completed over the grid and orientation of the first sharded input it divides evenly over.

    TT-NN's ops put a spec-less sharded output on the cores their sharded input is on; an output
    that no input's grid divides is left for complete() to spread over the device grid.
    """
    if cfg.shard_spec is not None or cfg.nd_shard_spec is not None:
        return cfg
    th, tw = tile_hw if layout == Layout.TILE else (1, 1)
    dims = list(shape) if len(shape) >= 2 else [1] * (2 - len(shape)) + list(shape)
    rows = math.prod(dims[:-2]) * -(-dims[-2] // th)  # in tiles (elements in ROW_MAJOR)
    cols = -(-dims[-1] // tw)
    for t in inputs:
        c = getattr(t, "_memory_config", None)
        spec = c.shard_spec if c is not None else None
        if spec is None:
            continue
        n, orient = spec.num_cores(), spec.orientation
        if cfg.memory_layout == TensorMemoryLayout.BLOCK_SHARDED:
            size = spec.grid.bounding_box().grid_size()
            gy, gx = (size.y, size.x) if orient == ShardOrientation.ROW_MAJOR else (size.x, size.y)
            if size.x * size.y == n and rows % gy == 0 and cols % gx == 0:
                shard = (rows // gy * th, cols // gx * tw)
                return MemoryConfig(cfg.memory_layout, cfg.buffer_type, ShardSpec(spec.grid, shard, orient))
        elif cfg.memory_layout == TensorMemoryLayout.HEIGHT_SHARDED and rows % n == 0:
            shard = (rows // n * th, cols * tw)
            return MemoryConfig(cfg.memory_layout, cfg.buffer_type, ShardSpec(spec.grid, shard, orient))
        elif cfg.memory_layout == TensorMemoryLayout.WIDTH_SHARDED and cols % n == 0:
            shard = (rows * th, cols // n * tw)
            return MemoryConfig(cfg.memory_layout, cfg.buffer_type, ShardSpec(spec.grid, shard, orient))
    return cfg


def _divisor(size: int, most: int) -> int:
    return next(n for n in range(min(size, most), 0, -1) if size % n == 0)


# -- placing a sharded tensor --------------------------------------------------------------------
def allocate(device, padded_shape, dtype, layout: Layout, cfg: MemoryConfig, tile_hw=(32, 32), tile_bytes=None):
    """The sharded buffer of a tensor: one shard per core, each at one address, with its core list.

    A spec that cannot hold the tensor is a ShardSpecError naming the field; a shard larger
    than the free L1 of its cores is an OutOfMemoryError naming the first core.
    """
    if cfg.nd_shard_spec is not None and cfg.shard_spec is None:
        cores, pages_per_core, page = _nd_geometry(device, padded_shape, dtype, layout, cfg, tile_hw, tile_bytes)
    else:
        cores, pages_per_core, page = _geometry(device, padded_shape, dtype, layout, cfg, tile_hw, tile_bytes)
    if cfg.per_core_allocation and cfg.buffer_type == BufferType.L1:
        return per_core.allocate(device, cfg.memory_layout, page, pages_per_core, tuple((c.x, c.y) for c in cores))
    return device.memory.allocate(cfg.buffer_type, cfg.memory_layout, page_size=page,
                                  num_pages=pages_per_core * len(cores), num_banks=len(cores),
                                  pages_per_bank=pages_per_core, cores=tuple((c.x, c.y) for c in cores))


def _check_grid(device, grid: CoreRangeSet, buffer_type: BufferType, what: str) -> None:
    box = grid.bounding_box()
    if buffer_type == BufferType.DRAM:  # a DRAM shard grid numbers DRAM banks along x
        banks = device.config.dram_banks
        if box.end.x >= banks or box.end.y > 0:
            raise ShardSpecError(f"{what} grid {grid!r} reaches past the device's {banks} DRAM banks "
                                 f"(x 0..{banks - 1}, y 0)")
        return
    g = device.compute_with_storage_grid_size()
    if box.end.x >= g.x or box.end.y >= g.y:
        raise ShardSpecError(
            f"{what} grid {grid!r} reaches past the device's {g.y}x{g.x} worker grid (x 0..{g.x - 1}, y 0..{g.y - 1}); "
            f"use cores inside device.compute_with_storage_grid_size()"
        )


def _page(dtype, layout: Layout, shard_width: int, tile_bytes) -> int:
    if layout == Layout.TILE:
        return tile_bytes if tile_bytes is not None else dtypes.tile_size(dtype)
    return shard_width * dtypes.ELEMENT_SIZE[dtype]


def _geometry(device, pshape, dtype, layout, cfg: MemoryConfig, tile_hw, tile_bytes):
    """(cores in shard order, pages per core, page size) for a 2D ShardSpec."""
    spec = cfg.shard_spec
    _check_grid(device, spec.grid, cfg.buffer_type, "ShardSpec")
    h, w = spec.shape
    th, tw = tile_hw
    if layout == Layout.TILE and (h % th or w % tw):
        raise ShardSpecError(
            f"ShardSpec shape {list(spec.shape)} must be whole {th}x{tw} tiles in TILE layout; "
            f"round it up to a multiple of the tile, or use ROW_MAJOR"
        )
    rows, cols = math.prod(pshape[:-1]), (pshape[-1] if pshape else 1)
    need_y, need_x = -(-rows // h), -(-cols // w)
    kind, n = cfg.memory_layout, spec.num_cores()
    # TT-NN's TensorLayout aligns the physical width up to a wider shard's (24 wide in 32-wide shards: test_mpwi.py)
    if kind == TensorMemoryLayout.HEIGHT_SHARDED and w < cols:
        raise ShardSpecError(f"HEIGHT_SHARDED ShardSpec shape {list(spec.shape)}: width {w} must be at least the "
                             f"tensor's padded width {cols}; a height-sharded shard holds whole rows")
    if kind == TensorMemoryLayout.WIDTH_SHARDED and h != rows:
        raise ShardSpecError(f"WIDTH_SHARDED ShardSpec shape {list(spec.shape)}: height {h} must equal the tensor's "
                             f"padded height {rows} (all dims but the last); a width-sharded shard holds whole columns")
    ordered = spec.grid.cores(spec.orientation)
    if kind == TensorMemoryLayout.BLOCK_SHARDED:
        box = spec.grid.bounding_box()
        size = box.grid_size()
        if size.x * size.y != n:
            raise ShardSpecError(f"BLOCK_SHARDED ShardSpec grid {spec.grid!r} must be one rectangle of cores")
        gy, gx = (size.y, size.x) if spec.orientation == ShardOrientation.ROW_MAJOR else (size.x, size.y)
        if need_y > gy or need_x > gx:
            raise _too_small(cfg, pshape, rows, cols, need_y, need_x, f"a {gy}x{gx} grid")
        if spec.orientation == ShardOrientation.ROW_MAJOR:
            cores = [CoreCoord(box.start.x + j, box.start.y + i) for i in range(need_y) for j in range(need_x)]
        else:
            cores = [CoreCoord(box.start.x + i, box.start.y + j) for i in range(need_y) for j in range(need_x)]
    else:
        used = need_y * need_x
        if used > n:
            raise _too_small(cfg, pshape, rows, cols, need_y, need_x, f"{n} cores")
        cores = ordered[:used]
    pages = (h // th) * (w // tw) if layout == Layout.TILE else h
    return cores, pages, _page(dtype, layout, w, tile_bytes)


def _too_small(cfg, pshape, rows, cols, need_y, need_x, grid_text) -> ShardSpecError:
    return ShardSpecError(
        f"{cfg.memory_layout!r} ShardSpec shape {list(cfg.shard_spec.shape)} on {grid_text} cannot hold a tensor of "
        f"padded shape {list(pshape)} (as {rows}x{cols}); it needs {need_y}x{need_x} shards. "
        f"Use ttnn.create_sharded_memory_config(shape, core_grid, strategy) to derive a fitting config"
    )


def _nd_geometry(device, pshape, dtype, layout, cfg: MemoryConfig, tile_hw, tile_bytes):
    """(cores, pages per core, page size) for an NdShardSpec: shards dealt round-robin over the grid."""
    spec: NdShardSpec = cfg.nd_shard_spec
    _check_grid(device, spec.grid, cfg.buffer_type, "NdShardSpec")
    shard = tuple(spec.shard_shape)
    if len(shard) > len(pshape):
        raise ShardSpecError(f"NdShardSpec shard_shape {list(shard)} has more dims than the tensor {list(pshape)}")
    shard = (1,) * (len(pshape) - len(shard)) + shard
    th, tw = tile_hw
    if layout == Layout.TILE:  # TT-NN's TensorLayout aligns a shard's last two dims up to whole tiles (its pages)
        shard = (*shard[:-2], -(-shard[-2] // th) * th, -(-shard[-1] // tw) * tw)
    n_shards = math.prod(-(-p // s) for p, s in zip(pshape, shard))
    cores = spec.grid.cores(spec.orientation)[:n_shards]
    per_core = -(-n_shards // len(cores))
    if layout == Layout.TILE:
        pages = math.prod(shard[:-2]) * (shard[-2] // th) * (shard[-1] // tw)
    else:
        pages = math.prod(shard[:-1])
    return cores, per_core * pages, _page(dtype, layout, shard[-1], tile_bytes)


# -- helpers ------------------------------------------------------------------------------------
def _layout_of(strategy) -> TensorMemoryLayout:
    if strategy not in _LAYOUT:
        raise ShardSpecError(f"strategy must be ttnn.ShardStrategy.HEIGHT, WIDTH or BLOCK, got {strategy!r}")
    return _LAYOUT[strategy]


def _grid_of(core_grid) -> CoreRangeSet:
    if isinstance(core_grid, CoreGrid):
        return core_grid.to_core_range_set()
    if isinstance(core_grid, CoreRangeSet):
        return core_grid
    if isinstance(core_grid, (list, tuple)) and len(core_grid) == 2 and all(isinstance(g, CoreGrid) for g in core_grid):
        full, last = core_grid  # TT-NN: a full block of rows, then a partial row below it
        return CoreRangeSet([CoreRange(CoreCoord(0, 0), CoreCoord(full.x - 1, full.y - 1)),
                             CoreRange(CoreCoord(0, full.y), CoreCoord(last.x - 1, full.y))])
    raise TypeError(f"core_grid must be a ttnn.CoreGrid, a pair of CoreGrids or a ttnn.CoreRangeSet, got {core_grid!r}")


def _shape2(shape) -> tuple[int, ...]:
    dims = tuple(int(d) for d in shape)
    if len(dims) < 2:
        raise ShardSpecError(f"shape {list(dims)} needs at least two dims (height, width)")
    return dims


def _split(size: int, parts: int, what: str, over: str) -> int:
    if size % parts:
        raise ShardSpecError(
            f"tensor {what} {size} does not divide evenly over {over}; pick a core grid that divides it, "
            f"or pass the shard shape itself with use_height_and_width_as_shard_shape=True"
        )
    return size // parts


def is_sharded(tensor) -> bool:
    """`ttnn.is_sharded(tensor)`: whether a device tensor's memory config is sharded."""
    return tensor.is_sharded()


def get_optimal_worker_cores_for_sharded_tensor(tensor) -> list[CoreCoord]:
    """`ttnn.get_optimal_worker_cores_for_sharded_tensor(t)`: the cores that hold an L1-sharded tensor's shards,
    each once, in shard order, where a kernel that reads the shards runs best: for a round-robin spread (height,
    width and ND sharding) the first min(cores, shards) of the grid in its orientation's order, for block
    sharding the grid cut to the shards' rows and columns (TT-NN's GRID_2D). A DRAM-sharded tensor's answer,
    the worker next to each DRAM bank, depends on the chip's harvested rows, which device_sim does not model."""
    if tensor.device() is None or tensor.buffer is None:
        raise RuntimeError("Tensor must be on device to compute optimal worker cores")
    if not tensor.is_sharded():
        raise RuntimeError("Tensor must be sharded to compute optimal worker cores")
    if tensor.buffer.buffer_type != BufferType.L1:
        raise NotImplementedError("get_optimal_worker_cores_for_sharded_tensor: a DRAM-sharded tensor's worker cores "
                                  "follow the chip's harvesting, which device_sim does not model; shard it in L1")
    return [CoreCoord(x, y) for x, y in dict.fromkeys(tensor.buffer.cores)]


def shards_on(tensor, core_filter: CoreRangeSet):
    """A bool tensor of `tensor`'s logical shape: True where the element's shard lies on a core of `core_filter`
    (a 2D shard spec: shards in row-major order over the padded [rows, width] view, as allocate places them)."""
    spec, shape, cores = tensor.memory_config().shard_spec, list(tensor.shape), tensor.buffer.cores
    if spec is None:
        raise ShardSpecError("a partial copy by cores needs a 2D shard spec; this tensor's spec is ND")
    padded = list(tensor.padded_shape)
    h, w = spec.shape
    rank_rows = [math.prod(shape[:-2]) if len(shape) > 1 else 1, shape[-2] if len(shape) > 1 else 1]
    pad_h = padded[-2] if len(padded) > 1 else 1
    rows = (torch.arange(rank_rows[0])[:, None] * pad_h + torch.arange(rank_rows[1])[None, :]).reshape(-1)
    per_row = -(-padded[-1] // w)
    shard = (rows // h)[:, None] * per_row + (torch.arange(shape[-1]) // w)[None, :]
    wanted = {(c.x, c.y) for r in core_filter.ranges() for c in r.cores()}
    on = torch.tensor([tuple(c) in wanted for c in cores], dtype=torch.bool)
    return on[shard].reshape(shape)


def num_cores_to_corerangeset_in_subcoregrids(start_core, target_num_cores: int, sub_core_grids: CoreRangeSet,
                                              row_wise: bool = False) -> CoreRangeSet:
    """`target_num_cores` cores of `sub_core_grids`, taken in order from `start_core` (row by row if row_wise)."""
    key = (lambda c: (c.y, c.x)) if row_wise else (lambda c: (c.x, c.y))
    cores = [c for r in sub_core_grids.ranges() for c in sorted(r.cores(), key=key)]
    start = CoreCoord(start_core.x, start_core.y)
    if start not in cores:
        raise ShardSpecError(f"num_cores_to_corerangeset_in_subcoregrids: start_core {start} is not in "
                             f"sub_core_grids {sub_core_grids!r}")
    cores = cores[cores.index(start):]
    if not 0 < target_num_cores <= len(cores):
        raise ShardSpecError(f"num_cores_to_corerangeset_in_subcoregrids: target_num_cores {target_num_cores} must "
                             f"be between 1 and the {len(cores)} cores from {start} on")
    return CoreRangeSet([]).merge(CoreRangeSet([CoreRange(c, c) for c in cores[:target_num_cores]]))
