"""create_sharded_memory_config: a sharded L1 MemoryConfig derived from a tensor shape, as TT-NN makes it."""

from __future__ import annotations

import math

from device_sim.types import (
    BufferType,
    CoreGrid,
    CoreRangeSet,
    MemoryConfig,
    ShardOrientation,
    ShardSpec,
    ShardStrategy,
    TensorMemoryLayout,
)

_LAYOUT = {
    ShardStrategy.HEIGHT: TensorMemoryLayout.HEIGHT_SHARDED,
    ShardStrategy.WIDTH: TensorMemoryLayout.WIDTH_SHARDED,
    ShardStrategy.BLOCK: TensorMemoryLayout.BLOCK_SHARDED,
}


def create_sharded_memory_config(shape, core_grid: CoreGrid | CoreRangeSet, strategy: ShardStrategy,
                                 orientation: ShardOrientation | None = ShardOrientation.ROW_MAJOR,
                                 halo: bool = False, use_height_and_width_as_shard_shape: bool = False
                                 ) -> MemoryConfig:
    """An L1 MemoryConfig that shards a tensor of `shape` over `core_grid` by `strategy`.

    The tensor is seen as 2D: height = product of all dims but the last, width = the last.
    HEIGHT splits the height over every core, WIDTH the width, BLOCK the height over the
    grid's rows and the width over its columns (columns and rows with COL_MAJOR). With
    `use_height_and_width_as_shard_shape=True` the last two dims of `shape` are the shard
    itself (swapped for COL_MAJOR, as TT-NN does). `halo` is accepted for TT-NN scripts.
    """
    if strategy not in _LAYOUT:
        raise ValueError(f"strategy must be ttnn.ShardStrategy.HEIGHT, WIDTH or BLOCK, got {strategy!r}")
    orientation = ShardOrientation(orientation if orientation is not None else ShardOrientation.ROW_MAJOR)
    grid = core_grid.to_core_range_set() if isinstance(core_grid, CoreGrid) else core_grid
    if not isinstance(grid, CoreRangeSet):
        raise TypeError(f"core_grid must be a ttnn.CoreGrid or ttnn.CoreRangeSet, got {core_grid!r}")
    shape = tuple(int(d) for d in shape)
    if len(shape) < 2:
        raise ValueError(f"shape {list(shape)} needs at least two dims (height, width)")
    if use_height_and_width_as_shard_shape:
        h, w = shape[-2:]
        shard = (h, w) if orientation == ShardOrientation.ROW_MAJOR else (w, h)
    else:
        shard = _shard_shape(math.prod(shape[:-1]), shape[-1], grid, strategy, orientation)
    return MemoryConfig(_LAYOUT[strategy], BufferType.L1, ShardSpec(grid, shard, orientation))


def _shard_shape(height: int, width: int, grid: CoreRangeSet, strategy, orientation) -> tuple[int, int]:
    n = grid.num_cores()
    if strategy == ShardStrategy.HEIGHT:
        return _split(height, n, "height", f"{n} cores"), width
    if strategy == ShardStrategy.WIDTH:
        return height, _split(width, n, "width", f"{n} cores")
    box = grid.bounding_box()
    rows, cols = box.end.y - box.start.y + 1, box.end.x - box.start.x + 1
    if rows * cols != n:
        raise ValueError(f"BLOCK sharding needs a rectangular core grid, got {grid!r}")
    if orientation == ShardOrientation.COL_MAJOR:
        rows, cols = cols, rows
    return _split(height, rows, "height", f"{rows} grid rows"), _split(width, cols, "width", f"{cols} grid columns")


def _split(size: int, parts: int, what: str, over: str) -> int:
    if size % parts:
        raise ValueError(
            f"tensor {what} {size} does not divide evenly over {over}; pick a core grid that divides it, "
            f"or pass the shard shape itself with use_height_and_width_as_shard_shape=True"
        )
    return size // parts
