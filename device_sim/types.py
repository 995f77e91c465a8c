"""Value types of the TT-NN API: dtypes, layouts, memory configs, shards, core grids, shapes.

Enum values follow TT-NN's numbering (DESIGN.md): reports store them as readable text
(`DataType.BFLOAT16`) and tools that know TT-NN's numbers can still map them.
"""

from __future__ import annotations

import enum
import math
import numbers
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
    # TT-NN's "no dtype" (tt_metal/api/tt-metalium/tensor/types.hpp: INVALID = 8), an op attribute's default; tt-metal's
    # tests list the dtypes as every DataType member but this one. No tensor holds it (to_device_values refuses it).
    INVALID = 8

    @classmethod
    def _missing_(cls, value):
        # TT-NN's bindings refuse a torch dtype with "incompatible function arguments" and a signature to decode;
        # here it is one line naming the ttnn dtype to pass (ttnn has no float16/float64: the nearest is named).
        text = str(value)
        if text.startswith("torch."):
            name = _TTNN_NAME_OF_TORCH.get(text.removeprefix("torch."), "bfloat16")
            raise TypeError(f"dtype={text} is a torch dtype; TT-NN ops take a ttnn dtype: "
                            f"pass dtype=ttnn.{name}") from None  # (the enum's own "not a valid DataType" unshown)
        names = ", ".join(f"ttnn.{m.name.lower()}" for m in cls if m is not cls.INVALID)
        raise ValueError(f"dtype={value!r} is not a ttnn dtype; pass one of {names}")

    @property
    def is_block_float(self) -> bool:
        return self in (DataType.BFLOAT8_B, DataType.BFLOAT4_B)

    @property
    def is_float(self) -> bool:
        return self in (DataType.BFLOAT16, DataType.FLOAT32, DataType.BFLOAT8_B, DataType.BFLOAT4_B)


# The ttnn dtype for a torch dtype passed as dtype= (named in the error above; from_torch infers the same ones).
_TTNN_NAME_OF_TORCH = {"bfloat16": "bfloat16", "float32": "float32", "float16": "bfloat16", "float64": "float32",
                       "int32": "int32", "int64": "uint32", "int16": "uint16", "uint8": "uint8", "bool": "uint8"}


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


class ShardDistributionStrategy(_TTEnum):
    """How an NdShardSpec deals its shards to the grid's cores (TT-NN's names)."""

    ROUND_ROBIN_1D = 0
    GRID_2D = 1


class ShardSpecError(ValueError, RuntimeError):
    """A shard spec or sharded memory config that cannot place a tensor.

    TT-NN raises RuntimeError (TT_FATAL) for these; device_sim's is also a ValueError, so
    code written against either catches it.
    """


@dataclass(frozen=True, init=False)
class CoreCoord:
    x: int
    y: int

    def __init__(self, x, y=None):
        # TT-NN's binding takes CoreCoord(x, y) and CoreCoord((x, y)), a pair (its tuple constructor).
        if y is None:
            try:
                x, y = x
            except (TypeError, ValueError):
                raise TypeError(f"CoreCoord takes x and y, or a pair (x, y); got {x!r}") from None
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y)

    def __repr__(self) -> str:
        return f"(x={self.x},y={self.y})"


def _coord(c) -> CoreCoord:
    return c if isinstance(c, CoreCoord) else CoreCoord(*c)


@dataclass(frozen=True)
class CoreRange:
    start: CoreCoord
    end: CoreCoord  # inclusive, as in TT-NN

    def __init__(self, start, end):
        object.__setattr__(self, "start", _coord(start))
        object.__setattr__(self, "end", _coord(end))
        if self.end.x < self.start.x or self.end.y < self.start.y:
            raise ShardSpecError(f"CoreRange end {self.end} is before start {self.start}; give (start, end) in order")

    def cores(self) -> list[CoreCoord]:
        return [
            CoreCoord(x, y)
            for y in range(self.start.y, self.end.y + 1)
            for x in range(self.start.x, self.end.x + 1)
        ]

    def grid_size(self) -> CoreCoord:
        return CoreCoord(self.end.x - self.start.x + 1, self.end.y - self.start.y + 1)

    def num_cores(self) -> int:
        g = self.grid_size()
        return g.x * g.y

    size = num_cores

    def contains(self, other) -> bool:
        """Whether a CoreCoord or a CoreRange lies inside this range."""
        if isinstance(other, CoreRange):
            return self.contains(other.start) and self.contains(other.end)
        return self.start.x <= other.x <= self.end.x and self.start.y <= other.y <= self.end.y

    def intersects(self, other: CoreRange) -> bool:
        return not (other.start.x > self.end.x or other.end.x < self.start.x
                    or other.start.y > self.end.y or other.end.y < self.start.y)

    def __repr__(self) -> str:
        return f"[{self.start} - {self.end}]"


@dataclass(frozen=True)
class CoreRangeSet:
    """Disjoint CoreRanges, kept sorted by start (TT-NN takes a Python set, which has no order)."""

    _ranges: tuple[CoreRange, ...]

    def __init__(self, ranges=()):
        if isinstance(ranges, CoreRange):
            ranges = [ranges]
        rs = sorted(ranges, key=lambda r: (r.start.y, r.start.x))
        for i, a in enumerate(rs):
            if not isinstance(a, CoreRange):
                raise TypeError(f"CoreRangeSet takes CoreRanges, got {a!r}")
            for b in rs[i + 1:]:
                if a.intersects(b):
                    raise ShardSpecError(f"CoreRangeSet ranges {a!r} and {b!r} overlap; give disjoint ranges")
        object.__setattr__(self, "_ranges", tuple(rs))

    def ranges(self) -> list[CoreRange]:
        return list(self._ranges)

    def size(self) -> int:
        """The number of ranges (TT-NN's CoreRangeSet.size()); num_cores() counts cores."""
        return len(self._ranges)

    def cores(self, orientation: ShardOrientation = ShardOrientation.ROW_MAJOR) -> list[CoreCoord]:
        key = (lambda c: (c.x, c.y)) if orientation == ShardOrientation.COL_MAJOR else (lambda c: (c.y, c.x))
        return sorted((c for r in self._ranges for c in r.cores()), key=key)

    def num_cores(self) -> int:
        return sum(r.num_cores() for r in self._ranges)

    def bounding_box(self) -> CoreRange:
        if not self._ranges:
            raise ShardSpecError("an empty CoreRangeSet has no bounding box")
        rs = self._ranges
        return CoreRange(CoreCoord(min(r.start.x for r in rs), min(r.start.y for r in rs)),
                         CoreCoord(max(r.end.x for r in rs), max(r.end.y for r in rs)))

    def contains(self, other) -> bool:
        """Whether a CoreCoord, CoreRange or CoreRangeSet lies inside this set."""
        if isinstance(other, CoreRangeSet):
            return all(self.contains(c) for c in other.cores())
        if isinstance(other, CoreRange):
            return all(self.contains(c) for c in other.cores())
        return any(r.contains(other) for r in self._ranges)

    def intersects(self, other) -> bool:
        others = other._ranges if isinstance(other, CoreRangeSet) else (other,)
        return any(a.intersects(b) for a in self._ranges for b in others)

    def merge(self, other) -> CoreRangeSet:
        """The union with a CoreRange or CoreRangeSet, as whole rows of cores joined into ranges."""
        extra = other.cores() if isinstance(other, (CoreRangeSet, CoreRange)) else [_coord(other)]
        return _from_cores({*self.cores(), *extra})

    def subtract(self, other) -> CoreRangeSet:
        """The cores of this set not in a CoreRange or CoreRangeSet, joined into ranges as merge() joins them
        (TT-NN's CoreRangeSet.subtract; tt-metal's test_paged_fused_update_cache.py carves shard grids with it)."""
        gone = set(other.cores()) if isinstance(other, (CoreRangeSet, CoreRange)) else {_coord(other)}
        left = set(self.cores()) - gone
        return _from_cores(left) if left else CoreRangeSet([])

    def __repr__(self) -> str:
        return "{" + ", ".join(repr(r) for r in self._ranges) + "}"


def _from_cores(cores) -> CoreRangeSet:
    """Cores as a CoreRangeSet: runs along each row, then equal runs of adjacent rows stacked."""
    runs: list[list[int]] = []  # [x0, x1, y0, y1]
    for y in sorted({c.y for c in cores}):
        xs = sorted(c.x for c in cores if c.y == y)
        start = prev = xs[0]
        for x in [*xs[1:], None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            above = next((r for r in runs if r[0] == start and r[1] == prev and r[3] == y - 1), None)
            if above is not None:
                above[3] = y
            else:
                runs.append([start, prev, y, y])
            if x is not None:
                start = prev = x
    return CoreRangeSet([CoreRange(CoreCoord(x0, y0), CoreCoord(x1, y1)) for x0, x1, y0, y1 in runs])


@dataclass(frozen=True)
class CoreGrid:
    y: int
    x: int

    @property
    def num_cores(self) -> int:
        return self.x * self.y

    def to_core_range_set(self) -> CoreRangeSet:
        return CoreRangeSet([CoreRange(CoreCoord(0, 0), CoreCoord(self.x - 1, self.y - 1))])


def _grid(grid, what: str) -> CoreRangeSet:
    if isinstance(grid, CoreGrid):
        return grid.to_core_range_set()
    if isinstance(grid, CoreRange):
        return CoreRangeSet([grid])
    if not isinstance(grid, CoreRangeSet):
        raise TypeError(f"{what} grid must be a ttnn.CoreRangeSet (or CoreGrid), got {grid!r}")
    if not grid.num_cores():
        raise ShardSpecError(f"{what} grid {grid!r} has no cores")
    return grid


@dataclass(frozen=True)
class ShardSpec:
    """One shard's shape (height, width in elements) and the cores that hold the shards, as TT-NN's."""

    grid: CoreRangeSet
    shape: tuple[int, int]
    orientation: ShardOrientation = ShardOrientation.ROW_MAJOR

    def __init__(self, grid, shard_shape, shard_orientation=ShardOrientation.ROW_MAJOR, *_):
        object.__setattr__(self, "grid", _grid(grid, "ShardSpec"))
        shape = tuple(int(s) if isinstance(s, numbers.Integral) else s for s in shard_shape)
        if len(shape) != 2 or not all(isinstance(s, int) and s > 0 for s in shape):
            raise ShardSpecError(f"ShardSpec shape {list(shape)} must be two positive ints [height, width]")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "orientation", ShardOrientation(shard_orientation))

    def num_cores(self) -> int:
        return self.grid.num_cores()

    def __repr__(self) -> str:
        # TT-NN 0.81's text, which reports store: ShardSpec's attribute_names are ("grid", "shape", "orientation")
        # (tt_metal/api/tt-metalium/buffer.hpp; ShardMode and physical_shard_shape are gone), printed by
        # tt_stl/reflection.hpp as Name(a=v,b=v): the grid by CoreRangeSet::str(), the std::array as {h, w},
        # the enum scoped (docs/shard_spec_text.md).
        h, w = self.shape
        return (f"ShardSpec(grid={self.grid!r},shape={{{h}, {w}}},"
                f"orientation=ShardOrientation::{self.orientation.name})")


@dataclass(frozen=True)
class NdShardSpec:
    """A shard of any rank: the tensor is cut into `shard_shape` blocks, dealt to the grid's cores."""

    shard_shape: tuple[int, ...]
    grid: CoreRangeSet
    orientation: ShardOrientation = ShardOrientation.ROW_MAJOR
    shard_distribution_strategy: ShardDistributionStrategy = ShardDistributionStrategy.ROUND_ROBIN_1D

    def __init__(self, shard_shape, grid, orientation=ShardOrientation.ROW_MAJOR,
                 shard_distribution_strategy=ShardDistributionStrategy.ROUND_ROBIN_1D):
        shape = tuple(int(s) if isinstance(s, numbers.Integral) else s for s in shard_shape)
        if not shape or not all(isinstance(s, int) and s > 0 for s in shape):
            raise ShardSpecError(f"NdShardSpec shard_shape {list(shape)} must be positive ints")
        object.__setattr__(self, "shard_shape", shape)
        object.__setattr__(self, "grid", _grid(grid, "NdShardSpec"))
        object.__setattr__(self, "orientation", ShardOrientation(orientation))
        object.__setattr__(self, "shard_distribution_strategy",
                           ShardDistributionStrategy(shard_distribution_strategy))

    def num_cores(self) -> int:
        return self.grid.num_cores()

    def __repr__(self) -> str:  # TT-NN's operator<< text, which a report's memory_config holds
        return _nd_text(list(self.shard_shape), self.grid.ranges(), self.orientation, self.shard_distribution_strategy)


@dataclass(frozen=True)
class MemoryConfig:
    """Where a tensor lives. A *_SHARDED layout without a shard_spec (ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG)
    is completed by the op that places a tensor in it, from its inputs' spec or the device grid."""

    memory_layout: TensorMemoryLayout = TensorMemoryLayout.INTERLEAVED
    buffer_type: BufferType = BufferType.DRAM
    shard_spec: ShardSpec | None = field(default=None)
    nd_shard_spec: NdShardSpec | None = field(default=None, repr=False)
    # TT-NN's experimental per-core L1 allocation (device_sim/per_core.py), set in place by
    # experimental_set_per_core_allocation; where a buffer is placed, not what the config is, so left out of ==
    per_core_allocation: bool = field(default=False, repr=False, compare=False)

    def __init__(self, memory_layout=None, buffer_type=BufferType.DRAM,
                 shard_spec: ShardSpec | None = None, nd_shard_spec: NdShardSpec | None = None):
        # TT-NN's second form: MemoryConfig(buffer_type, nd_shard_spec), positional or by name (tt-metal's tests
        # write MemoryConfig(buffer_type=..., nd_shard_spec=...)). TT-NN gives it the ND_SHARDED layout; device_sim
        # places it as BLOCK_SHARDED over the spec's grid (memory_config.cpp; no memory_layout given either way).
        if isinstance(buffer_type, NdShardSpec) and nd_shard_spec is None:
            memory_layout, buffer_type, nd_shard_spec = None, memory_layout, buffer_type
        if memory_layout is None:
            memory_layout = (TensorMemoryLayout.INTERLEAVED if nd_shard_spec is None
                             else TensorMemoryLayout.BLOCK_SHARDED)
        set_ = object.__setattr__
        set_(self, "memory_layout", TensorMemoryLayout(memory_layout))
        set_(self, "buffer_type", BufferType(buffer_type))
        sharded = self.memory_layout != TensorMemoryLayout.INTERLEAVED
        if shard_spec is not None and not isinstance(shard_spec, ShardSpec):
            raise TypeError(f"MemoryConfig shard_spec must be a ttnn.ShardSpec, got {shard_spec!r}")
        if not sharded and nd_shard_spec is None:
            # TT-NN 0.81's MemoryConfig(INTERLEAVED, buffer_type, shard_spec) takes the spec without a check and its
            # interleaved buffer never reads it (tests/ttnn's test_batch_norm passes one); device_sim drops it, so
            # the config equals the plain interleaved one (docs/design_departures.md)
            shard_spec = None
        set_(self, "shard_spec", shard_spec)
        set_(self, "nd_shard_spec", nd_shard_spec)
        if not sharded and (shard_spec is not None or nd_shard_spec is not None):
            raise ShardSpecError("an INTERLEAVED MemoryConfig takes no shard_spec; pick a *_SHARDED memory_layout")
        if sharded and self.buffer_type not in (BufferType.L1, BufferType.DRAM):
            raise ShardSpecError(f"{self.memory_layout!r} needs buffer_type L1 or DRAM, got {self.buffer_type!r}")

    def is_sharded(self) -> bool:
        # Identity, not !=: IntEnum's != costs ~0.5 us, and every op's output asks this.
        return self.memory_layout is not TensorMemoryLayout.INTERLEAVED

    def is_l1(self) -> bool:
        return self.buffer_type in (BufferType.L1, BufferType.L1_SMALL)

    def is_dram(self) -> bool:
        return self.buffer_type == BufferType.DRAM

    def experimental_set_per_core_allocation(self, enabled: bool) -> None:
        """TT-NN's MemoryConfig.experimental_set_per_core_allocation: a sharded L1 tensor of this config takes an
        address per core (device_sim/per_core.py). It changes this config in place, as TT-NN's does."""
        object.__setattr__(self, "per_core_allocation", bool(enabled))

    def __repr__(self) -> str:  # TT-NN 0.81's text (C++ `::` enums), which reports store and the visualizer reads
        nd = self.nd_shard_spec
        return (
            f"MemoryConfig(memory_layout=TensorMemoryLayout::{self.memory_layout.name},"
            f"buffer_type=BufferType::{self.buffer_type.name},"
            f"shard_spec={'std::nullopt' if self.shard_spec is None else repr(self.shard_spec)},"
            f"nd_shard_spec={'std::nullopt' if nd is None else repr(nd)},"
            f"created_with_nd_shard_spec={int(nd is not None)})"
        )

    __str__ = __repr__

    def tensor_text(self, padded_shape) -> str:
        """The text TT-NN 0.81 writes for a tensor placed with this config (a report's tensors.memory_config).

        A tensor's TensorSpec completes a 2D ShardSpec with the NdShardSpec it implies
        (ttnn/core/tensor/tensor_spec.cpp, populate_nd_shard_spec_from_legacy), so a sharded tensor's text
        carries both; the config a user passes (an op argument) keeps nd_shard_spec=std::nullopt (repr).
        """
        nd = None if self.nd_shard_spec is not None else _nd_from_legacy(self, list(padded_shape))
        if nd is None:
            return repr(self)
        return repr(self).replace(",nd_shard_spec=std::nullopt,", f",nd_shard_spec={nd},", 1)


def _nd_from_legacy(cfg: MemoryConfig, padded: list) -> str | None:
    """The NdShardSpec TT-NN's TensorSpec derives from a 2D ShardSpec, as its operator<< prints it
    (ttnn/core/tensor/types.cpp: JSON-like, not the reflection form); None where TT-NN derives none."""
    spec = cfg.shard_spec
    if spec is None or not cfg.is_sharded() or not padded:
        return None
    h, w = spec.shape
    layout = cfg.memory_layout
    ranges = spec.grid.ranges()
    if layout == TensorMemoryLayout.WIDTH_SHARDED:
        shard = [*padded[:-1], w]
    else:
        if len(padded) >= 2 and padded[-2] % h:  # a shard would cut across a higher dim: TT-NN derives none
            return None
        shard = [1] * len(padded)
        if len(padded) >= 2:
            shard[-2] = h
        shard[-1] = w
        if layout == TensorMemoryLayout.BLOCK_SHARDED:  # the grid shrinks to the shards there are
            rows = max(-(-math.prod(padded[:-1]) // h), 1)
            cols = max(-(-padded[-1] // w), 1)
            if spec.orientation != ShardOrientation.ROW_MAJOR:
                rows, cols = cols, rows
            s = ranges[0].start
            ranges = [CoreRange(s, CoreCoord(s.x + cols - 1, s.y + rows - 1))]
    return _nd_text(shard, ranges, spec.orientation, ShardDistributionStrategy.ROUND_ROBIN_1D)


def _nd_text(shard: list, ranges, orientation, strategy) -> str:
    """An NdShardSpec as TT-NN's operator<< prints it (ttnn/core/tensor/types.cpp): JSON-like, not reflection."""
    grid = ", ".join(f'{{"start":{{"x":{r.start.x},"y":{r.start.y}}},"end":{{"x":{r.end.x},"y":{r.end.y}}}}}'
                     for r in ranges)
    return (f'{{"shard_shape":[{", ".join(map(str, shard))}],"grid":[{grid}],'
            f'"orientation":"ShardOrientation::{orientation.name}",'
            f'"shard_distribution_strategy":"ShardDistributionStrategy::{strategy.name}"}}')


DRAM_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.INTERLEAVED, BufferType.DRAM)
L1_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.INTERLEAVED, BufferType.L1)
# Sharded layouts without a spec: the op that places a tensor in one works the spec out.
L1_HEIGHT_SHARDED_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.HEIGHT_SHARDED, BufferType.L1)
L1_WIDTH_SHARDED_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.WIDTH_SHARDED, BufferType.L1)
L1_BLOCK_SHARDED_MEMORY_CONFIG = MemoryConfig(TensorMemoryLayout.BLOCK_SHARDED, BufferType.L1)


class Shape(tuple):
    """A tensor shape that prints as TT-NN prints it: `Shape([1, 32, 64])`.

    `Shape(logical, padded)` and `shape.with_tile_padding()` are older TT-NN's (before 0.50) two-shape form,
    which tt-metal's functional Whisper and tt_transformers still call: with_tile_padding() is the padded
    shape (a tensor's `padded_shape`), or the shape itself when none was given.
    """

    def __new__(cls, dims=(), padded=None):
        shape = super().__new__(cls, (int(d) for d in dims))
        if padded is not None:
            padded = tuple(int(d) for d in padded)
            if len(padded) != len(shape) or any(p < d for p, d in zip(padded, shape)):
                raise ValueError(f"ttnn.Shape: padded shape {list(padded)} must have the rank of {list(shape)} "
                                 f"and no dimension smaller")
            shape._padded = padded
        return shape

    _padded = None  # the padded dims, or a function giving them (a tensor's shape computes them on demand)

    def with_tile_padding(self) -> Shape:
        padded = self._padded() if callable(self._padded) else self._padded
        return Shape(self if padded is None else padded)

    def __reduce__(self):  # pickle and copy the dims (and padded dims), not the function a tensor's shape holds
        padded = self._padded() if callable(self._padded) else self._padded
        return (Shape, (tuple(self), padded))

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

    # TT-NN's Shape compares equal to a list of the same dims (its binding takes a list where it takes a Shape):
    # tt-metal's tests write `assert output.shape == [2, 3]`.
    def __eq__(self, other):
        return tuple.__eq__(self, tuple(other)) if isinstance(other, list) else tuple.__eq__(self, other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__
