"""A stored memory_config text read back into its parts, and said in a line a person reads.

Reports keep the text TT-NN 0.81 writes (`MemoryConfig(memory_layout=TensorMemoryLayout::HEIGHT_SHARDED,...,
shard_spec=ShardSpec(grid={[(x=0,y=0) - (x=0,y=1)]},shape={32, 64},orientation=ShardOrientation::ROW_MAJOR),
...)`, docs/shard_spec_text.md). ttnn-visualizer 0.108's server-side parser reads a shard spec only in the
older `...,halo=N)` form, so it shows ours (and TT-NN's) as std::nullopt; `ttreport op`, `ttreport tensor`
and the HTML export read it here instead. Older texts (`...,halo=0)`, `...,mode=ShardMode::PHYSICAL,...`,
the `.`-separated enums of reports before 0005) read the same.

    >>> text = ("MemoryConfig(memory_layout=TensorMemoryLayout::HEIGHT_SHARDED,buffer_type=BufferType::L1,"
    ...         "shard_spec=ShardSpec(grid={[(x=0,y=0) - (x=0,y=1)]},shape={32, 64},"
    ...         "orientation=ShardOrientation::ROW_MAJOR),nd_shard_spec=std::nullopt,created_with_nd_shard_spec=0)")
    >>> readable(text)
    'L1 HEIGHT_SHARDED, shards of 32x64 on 2 cores {[(x=0,y=0) - (x=0,y=1)]}, ROW_MAJOR'
    >>> readable("MemoryConfig(memory_layout=TensorMemoryLayout::INTERLEAVED,buffer_type=BufferType::DRAM,"
    ...          "shard_spec=std::nullopt,nd_shard_spec=std::nullopt,created_with_nd_shard_spec=0)")
    'DRAM INTERLEAVED'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# TT-NN's numbering of buffer types and memory layouts (DESIGN.md "Schema"), as names for readers.
BUFFER_TYPES = {0: "DRAM", 1: "L1", 2: "SYSTEM_MEMORY", 3: "L1_SMALL", 4: "TRACE"}
BUFFER_LAYOUTS = {0: "INTERLEAVED", 2: "HEIGHT_SHARDED", 3: "WIDTH_SHARDED", 4: "BLOCK_SHARDED"}
_LAYOUT = re.compile(r"memory_layout=TensorMemoryLayout(?:::|\.)(\w+)")
_BUFFER = re.compile(r"buffer_type=BufferType(?:::|\.)(\w+)")
_SHARD = re.compile(r"shard_spec=ShardSpec\(grid=(\{[^}]*\}),shape=\{(\d+), (\d+)\},"
                    r"orientation=ShardOrientation(?:::|\.)(\w+)")
_RANGE = re.compile(r"\[\(x=(\d+),y=(\d+)\) - \(x=(\d+),y=(\d+)\)\]")


@dataclass(frozen=True)
class MemoryText:
    """The parts of a memory_config text; the shard fields are None for an interleaved config."""

    memory_layout: str | None  # "HEIGHT_SHARDED"
    buffer_type: str | None  # "L1"
    grid: str | None = None  # "{[(x=0,y=0) - (x=0,y=1)]}", as TT-NN prints a CoreRangeSet
    shard_shape: tuple[int, int] | None = None  # (height, width) of one shard, in elements
    orientation: str | None = None  # "ROW_MAJOR"
    num_cores: int | None = None  # cores in the grid


def parse(text: str | None) -> MemoryText | None:
    """The parts of a stored memory_config text; None for no text (a host tensor) or one that is no MemoryConfig."""
    if not text or not text.startswith("MemoryConfig("):
        return None
    layout, buffer = _LAYOUT.search(text), _BUFFER.search(text)
    parts = MemoryText(layout and layout.group(1), buffer and buffer.group(1))
    shard = _SHARD.search(text)
    if shard is None:
        return parts
    grid = shard.group(1)
    cores = sum((int(x1) - int(x0) + 1) * (int(y1) - int(y0) + 1) for x0, y0, x1, y1 in _RANGE.findall(grid))
    return MemoryText(parts.memory_layout, parts.buffer_type, grid, (int(shard.group(2)), int(shard.group(3))),
                      shard.group(4), cores)


def readable(text: str | None) -> str | None:
    """'L1 HEIGHT_SHARDED, shards of 32x64 on 2 cores {[...]}, ROW_MAJOR'; the text itself if it does not parse."""
    m = parse(text)
    if m is None:
        return text
    head = " ".join(p for p in (m.buffer_type, m.memory_layout) if p)
    if m.shard_shape is None:
        return head
    h, w = m.shard_shape
    cores = f"{m.num_cores} core{'s' if m.num_cores != 1 else ''}"
    return f"{head}, shards of {h}x{w} on {cores} {m.grid}, {m.orientation}"
