"""Value types of the TT-NN API: dtypes, layouts, memory configs, shards, core grids, shapes.

Enum values follow TT-NN's numbering (DESIGN.md): reports store them as readable text
(`DataType.BFLOAT16`) and tools that know TT-NN's numbers can still map them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class _TTEnum(enum.IntEnum):
    """An enum that prints as TT-NN prints it: `DataType.BFLOAT16`, the text reports store."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    __str__ = __repr__


class DataType(_TTEnum):
    BFLOAT16 = 0
    FLOAT32 = 1
    UINT32 = 2
    BFLOAT8_B = 3
    BFLOAT4_B = 4
    UINT8 = 5
    UINT16 = 6
    INT32 = 7

    @property
    def is_block_float(self) -> bool:
        return self in (DataType.BFLOAT8_B, DataType.BFLOAT4_B)

    @property
    def is_float(self) -> bool:
        return self in (DataType.BFLOAT16, DataType.FLOAT32, DataType.BFLOAT8_B, DataType.BFLOAT4_B)


class Layout(_TTEnum):
    ROW_MAJOR = 0
    TILE = 1


class BufferType(_TTEnum):
    DRAM = 0
    L1 = 1
    SYSTEM_MEMORY = 2
    L1_SMALL = 3
    TRACE = 4


class TensorMemoryLayout(_TTEnum):
    INTERLEAVED = 0
    HEIGHT_SHARDED = 2
    WIDTH_SHARDED = 3
    BLOCK_SHARDED = 4


class ShardOrientation(_TTEnum):
    ROW_MAJOR = 0
    COL_MAJOR = 1


class ShardStrategy(enum.Enum):
    HEIGHT = "height"
    WIDTH = "width"
    BLOCK = "block"


@dataclass(frozen=True)
class CoreCoord:
    x: int
    y: int

    def __repr__(self) -> str:
        return f"(x={self.x},y={self.y})"


@dataclass(frozen=True)
class CoreRange:
    start: CoreCoord
    end: CoreCoord  # inclusive, as in TT-NN

    def __post_init__(self):
        if self.end.x < self.start.x or self.end.y < self.start.y:
            raise ValueError(f"CoreRange end {self.end} is before start {self.start}")

    def cores(self) -> list[CoreCoord]:
        return [
            CoreCoord(x, y)
            for y in range(self.start.y, self.end.y + 1)
            for x in range(self.start.x, self.end.x + 1)
        ]

    def num_cores(self) -> int:
        return (self.end.x - self.start.x + 1) * (self.end.y - self.start.y + 1)


@dataclass(frozen=True)
class CoreRangeSet:
    ranges: tuple[CoreRange, ...]

    def __init__(self, ranges):
        object.__setattr__(self, "ranges", tuple(ranges))

    def cores(self, orientation: ShardOrientation = ShardOrientation.ROW_MAJOR) -> list[CoreCoord]:
        cores = sorted({c for r in self.ranges for c in r.cores()}, key=lambda c: (c.y, c.x))
        if orientation == ShardOrientation.COL_MAJOR:
            cores.sort(key=lambda c: (c.x, c.y))
        return cores

    def num_cores(self) -> int:
        return len({c for r in self.ranges for c in r.cores()})

    def bounding_box(self) -> CoreRange:
        cs = self.cores()
        return CoreRange(
            CoreCoord(min(c.x for c in cs), min(c.y for c in cs)),
            CoreCoord(max(c.x for c in cs), max(c.y for c in cs)),
        )

    def __repr__(self) -> str:
        return "{" + ", ".join(f"[{r.start} - {r.end}]" for r in self.ranges) + "}"


@dataclass(frozen=True)
class CoreGrid:
    y: int
    x: int

    @property
    def num_cores(self) -> int:
        return self.x * self.y

    def to_core_range_set(self) -> CoreRangeSet:
        return CoreRangeSet([CoreRange(CoreCoord(0, 0), CoreCoord(self.x - 1, self.y - 1))])


@dataclass(frozen=True)
class ShardSpec:
    grid: CoreRangeSet
    shape: tuple[int, int]  # one shard, in elements: (height, width)
    orientation: ShardOrientation = ShardOrientation.ROW_MAJOR

    def __init__(self, grid, shape, orientation=ShardOrientation.ROW_MAJOR, *_):
        if isinstance(grid, CoreGrid):
            grid = grid.to_core_range_set()
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "shape", tuple(int(s) for s in shape))
        object.__setattr__(self, "orientation", ShardOrientation(orientation))
        if len(self.shape) != 2 or min(self.shape) <= 0:
            raise ValueError(f"ShardSpec shape must be two positive ints (height, width), got {shape}")

    @property
    def num_cores(self) -> int:
        return self.grid.num_cores()

    def __repr__(self) -> str:
        return f"ShardSpec(grid={self.grid!r},shape={list(self.shape)},orientation={self.orientation!r})"


@dataclass(frozen=True)
class MemoryConfig:
    memory_layout: TensorMemoryLayout = TensorMemoryLayout.INTERLEAVED
    buffer_type: BufferType = BufferType.DRAM
    shard_spec: ShardSpec | None = field(default=None)

    def __post_init__(self):
        object.__setattr__(self, "memory_layout", TensorMemoryLayout(self.memory_layout))
        object.__setattr__(self, "buffer_type", BufferType(self.buffer_type))
        sharded = self.memory_layout != TensorMemoryLayout.INTERLEAVED
        if sharded and self.shard_spec is None:
            raise ValueError(
                f"{self.memory_layout!r} needs a shard_spec; use ttnn.create_sharded_memory_config(...) to make one"
            )
        if not sharded and self.shard_spec is not None:
            raise ValueError("an INTERLEAVED MemoryConfig takes no shard_spec; pick a *_SHARDED memory_layout")

    def is_sharded(self) -> bool:
        return self.memory_layout != TensorMemoryLayout.INTERLEAVED

    def __repr__(self) -> str:
        return (
            f"MemoryConfig(memory_layout={self.memory_layout!r},buffer_type={self.buffer_type!r},"
            f"shard_spec={self.shard_spec!r})"
        )

    __str__ = __repr__


DRAM_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.INTERLEAVED, BufferType.DRAM)
L1_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.INTERLEAVED, BufferType.L1)


class Shape(tuple):
    """A tensor shape that prints as TT-NN prints it: `Shape([1, 32, 64])`."""

    def __new__(cls, dims=()):
        return super().__new__(cls, (int(d) for d in dims))

    def __repr__(self) -> str:
        return f"Shape({list(self)})"

    __str__ = __repr__

    @property
    def rank(self) -> int:
        return len(self)

    def volume(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Shape(r) if isinstance(i, slice) else r
