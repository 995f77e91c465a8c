"""Device work: the programs (TT-NN's device operations) an op launches, and their circular buffers.

A TT-NN op runs one or more device operations; each is a program whose factory creates circular
buffers (CBs) in the L1 of every core it runs on. CBs are laid out from the bottom of L1's
unreserved region upwards, while L1 tensors are allocated from the top down (allocator.py). When
the CB region of a program reaches the lowest live L1 buffer, TT-Metal refuses to launch it with
"Statically allocated circular buffers in program N clash with L1 buffers on core range ...";
device_sim raises the same error, as the hardware would fail.

launch() checks the region (a few integer operations: cheap enough to run on every op) and tells
the device's memory listener (ttreport's seam, the same one buffer events use) about the program,
which the report turns into TT-NN's captured graph. This module is the framework: the Program and its
CircularBuffers, launch, and the helpers the program models share (tile sizes, work splits, a build
cache). The models themselves, one module per op family following TT-NN's program factories' CB sizes,
live in device_sim/programs/ (matmul, normalization's softmax, eltwise's unary and binary, ...); an op
with no model launches nothing.

Example:
    >>> import device_sim as ttnn
    >>> from device_sim import device_work
    >>> from device_sim.device_work import CircularBuffer
    >>> dev = ttnn.open_device()
    >>> p = device_work.make_program("UnaryDeviceOperation", "UnaryProgramFactory",
    ...                              [CircularBuffer((0,), 2, 2048), CircularBuffer((2,), 2, 2048)], ((0, 0, 7, 7),))
    >>> p.cb_bytes, device_work.cores_text(p.ranges)
    (8192, '{[0-0 - 7-7]}')
    >>> device_work.launch(dev, p)   # fits: L1 holds no tensor yet
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from device_sim import allocator
from device_sim.dtypes import tile_size
from device_sim.types import BufferType, CoreCoord, CoreRange, CoreRangeSet, DataType

TILE = 32


# NamedTuples, not dataclasses: a matmul makes a program and its CBs on every call (a few us matter).
class CircularBuffer(NamedTuple):
    indices: tuple[int, ...]  # the CB indices (c_0, c_4, ...) that share this buffer (output and interm0 may)
    num_pages: int  # tiles
    page_size: int  # bytes of one tile in the CB's data format
    # Backed by a tensor's own L1 buffer (a sharded output): not in the program's static CB region.
    globally_allocated: bool = False

    @property
    def size(self) -> int:
        return self.num_pages * self.page_size


class Program(NamedTuple):
    name: str  # the device operation, as TT-NN's graph capture names it ("MatmulDeviceOperation")
    factory: str  # the program factory (or program config) whose CBs these are
    cbs: tuple[CircularBuffer, ...]
    ranges: tuple[tuple[int, int, int, int], ...]  # where the CBs live: (x0, y0, x1, y1) core ranges, inclusive
    cb_bytes: int = -1  # the CB region's bytes per core, alignment included (-1: work it out from cbs)
    program_id: int = 0
    device_id: int = 0
    cb_base: int = 0  # L1 address of the first CB (the device's unreserved base)

    def cb_addresses(self) -> list[tuple[CircularBuffer, int]]:
        """Each CB with its L1 address: packed upwards from cb_base, each aligned as L1 buffers are."""
        out, addr = [], self.cb_base
        for cb in self.cbs:
            if cb.globally_allocated:  # at its tensor's address, which the program does not hold: shown as 0
                out.append((cb, 0))
                continue
            out.append((cb, addr))
            addr += round_up(cb.size)
        return out

    @property
    def cb_region_end(self) -> int:
        return self.cb_base + (self.cb_bytes if self.cb_bytes >= 0 else _region(self.cbs))

    @property
    def l1_bytes_per_core(self) -> int:
        return sum(cb.size for cb in self.cbs)

    @property
    def cores(self) -> CoreRangeSet:
        return CoreRangeSet([CoreRange(CoreCoord(x0, y0), CoreCoord(x1, y1)) for x0, y0, x1, y1 in self.ranges])


def round_up(n: int, alignment: int = 16) -> int:
    """`n` rounded up to a multiple of `alignment` (16 bytes: L1's, where CBs are packed)."""
    return -(-n // alignment) * alignment


def aligned_page(t, n: int | None = None) -> int:
    """TT-Metal's Buffer::aligned_page_size(): device tensor `t`'s page (or a page of `n` bytes) rounded up to the
    alignment of the memory `t` is in (its device config's l1_alignment for L1, dram_alignment otherwise)."""
    c = t.device().config
    alignment = c.l1_alignment if t.memory_config().buffer_type == BufferType.L1 else c.dram_alignment
    return round_up(t.buffer.page_size if n is None else n, alignment)


def make_program(name: str, factory: str, cbs, ranges: tuple) -> Program:
    """A Program with its CB region's size worked out once (launch reads it on every run)."""
    cbs = tuple(cbs)
    return Program(name, factory, cbs, ranges, _region(cbs))


def _region(cbs) -> int:
    return sum(round_up(cb.num_pages * cb.page_size) for cb in cbs if not cb.globally_allocated)


_program_ids = itertools.count(1)
_new_tuple = tuple.__new__
_L1 = BufferType.L1


class ProgramHash(tuple):
    """A cache_key that is an op's whole compute_program_hash, for an op whose hash reads no tensor shape
    (group_attn_matmul_device_operation.cpp: attributes, memory layouts, dtypes): the entry is the key alone, so
    two shapes share one entry as in TT-NN (nightly test_attn_matmul.py counts one over two shapes)."""


def _launch(device, program: Program, cache_key=None) -> None:
    """Run `program` on `device`: report it to the memory listener, then check its CBs against L1.

    The program cache holds one entry per program built; `cache_key` (hashable) adds what the op's
    compute_program_hash reads beyond the program's CBs and cores (its op type, attributes, memory configs),
    so that two ops building the same CBs take two entries, as they do in TT-NN; a ProgramHash is the whole entry.

    Raises RuntimeError with TT-Metal's text when the CB region passes the end of L1 or reaches the
    lowest live L1 buffer. The listener hears the program first, as TT-NN's graph capture records the
    CBs before the check, so a report shows the CBs of a program that failed.
    """
    if device is None:
        return
    memory = getattr(device, "memory", None)
    if memory is None:
        return
    cache = device.program_cache
    if cache is not None:
        cache.add(program if cache_key is None else cache_key if type(cache_key) is ProgramHash
                  else (program, cache_key))
    c = device.config
    base = c.l1_unreserved_base
    program_id = next(_program_ids)
    if memory.listener is not None:  # tuple.__new__: a NamedTuple's own __new__ is Python (0.12 us more an op)
        memory.listener("program", _new_tuple(Program, (program.name, program.factory, program.cbs, program.ranges,
                                                        program.cb_bytes, program_id, device.device_id, base)))
    end = base + (program.cb_bytes if program.cb_bytes >= 0 else _region(program.cbs))
    if end <= c.l1_size:
        lowest = memory.allocators[_L1].lowest_occupied_address()  # _L1: BufferType.L1 is a 0.06 us lookup
        if lowest is None or lowest >= end:
            return
    _refuse(c, memory, program, program_id, end)


def _refuse(c, memory, program: Program, program_id: int, end: int) -> None:
    """launch's errors, for a CB region ending at `end` that passes the end of L1 (config `c`) or reaches the lowest
    live L1 buffer of `memory` (the C launch calls it too, when its listener allocated L1 below the region)."""
    where = range_text(program.ranges[0])  # TT-Metal names the first core range whose CBs fail
    if end > c.l1_size:
        raise RuntimeError(f"TT_THROW @ device_sim/device_work.py: tt::exception\ninfo:\nStatically allocated circular "
                           f"buffers on core range {where} grow to {end} B which is beyond max L1 size of "
                           f"{c.l1_size} B")
    lowest = memory.allocators[BufferType.L1].lowest_occupied_address()
    if lowest is not None and lowest < end:
        raise RuntimeError(f"TT_THROW @ device_sim/device_work.py: tt::exception\ninfo:\nStatically allocated circular "
                           f"buffers in program {program_id} clash with L1 buffers on core range {where}. "
                           f"L1 buffer allocated at {lowest} and static circular buffer region ends at {end}")


# device_sim/_native.c's launch takes the usual call (a chip of its own Memory, CBs that fit) in C, the program-cache
# entry, a program id and the listener's call as _launch takes them, and hands every other call to _launch, its
# specification; with DEVICE_SIM_PURE=1, or no extension built, _launch is launch. A 32x32 add's launch: 0.33 -> 0.13
# us of thread CPU; a captured one's (its listener the recorder's), 1.2-1.5 us less than through _launch.
launch = _launch
if allocator.NATIVE:
    allocator._native.configure_launch(_launch, Program, ProgramHash, _program_ids, _refuse)
    launch = allocator._native.launch


def launch_for(out, fresh: bool, device, program: Program, cache_key=None) -> None:
    """launch(), for an op whose output `out` exists already (its L1 counts, as TT-NN allocates outputs
    before the program runs). If the program cannot launch, a `fresh` output (not an input written in
    place, not a given output_tensor) is freed before the error goes on."""
    try:
        launch(device, program, cache_key)
    except RuntimeError:
        if fresh:
            out._free()
        raise


def launch_after(out, fresh: bool, x, programs, cache_key=None) -> None:
    """launch_for() each of `programs` (a Program, a tuple of them, or None: nothing modelled) on the device of
    the op's input `x`; nothing for a host tensor."""
    device = getattr(x, "_device", None)
    if device is None or programs is None:
        return
    for program in (programs,) if isinstance(programs, Program) else programs:
        launch_for(out, fresh, device, program, cache_key)


def range_text(r: tuple[int, int, int, int]) -> str:
    """A core range as TT-Metal's CoreRange::str() writes it in its errors and graphs: '[0-0 - 7-7]' (x-y)."""
    return f"[{r[0]}-{r[1]} - {r[2]}-{r[3]}]"


def cores_text(ranges: tuple) -> str:
    """Core ranges as CoreRangeSet::str(): '{[0-0 - 7-7], [0-1 - 3-1]}'."""
    return "{" + ", ".join(range_text(r) for r in ranges) + "}"


def cores_row_major(n: int, grid_x: int) -> tuple:
    """The first n cores of a grid of grid_x columns, row by row (TT-Metal's num_cores_to_corerangeset)."""
    full, rest = divmod(n, grid_x)
    ranges = ((0, 0, grid_x - 1, full - 1),) if full else ()
    return ranges + ((0, full, rest - 1, full),) if rest else ranges


# -- shared by the program models (device_sim/programs/) ---------------------------------------
# bytes of one 32x32 tile per dtype, block-float exponents included
TILE_BYTES = {dt: tile_size(dt) for dt in DataType if dt is not DataType.INVALID}


def max_divisor(n: int, cap: int) -> int:
    """TT-NN's find_max_divisor(n, cap): the largest divisor of n up to cap."""
    return next(d for d in range(min(cap, n), 0, -1) if n % d == 0)


def tiles(n: int) -> int:
    """Tiles of 32 that hold n rows or columns."""
    return -(-n // TILE)


def shape_of(t) -> tuple:
    """A tensor's torch shape, layout and tile: what its padded shape follows, as a cache key. ~0.2 us to read,
    where Tensor.padded_shape builds a Shape (~4 us), too slow to pay on every op."""
    return t._value.shape, t.layout, t.tile


def grid_of(device) -> tuple[int, int]:
    """The device's worker grid (x, y); TT-Metal's compute_with_storage_grid_size()."""
    return (device.config.grid_x, device.config.grid_y) if device is not None else (8, 8)


def max_l1_space(device) -> int:
    """TT-NN's get_max_l1_space (matmul_utilities.cpp, data_movement/common.cpp): the bytes from the L1 base to
    the lowest L1 tensor, or to the top of L1; what a factory that sizes its CBs to fit may take."""
    if device is None or getattr(device, "memory", None) is None:
        return 1 << 62
    c = device.config
    lowest = device.memory.allocators[BufferType.L1].lowest_occupied_address()
    return (lowest if lowest is not None else c.l1_size) - c.l1_unreserved_base


def split_work(units: int, grid_x: int, grid_y: int, row_wise: bool = False) -> tuple:
    """The cores TT-Metal's split_work_to_cores gives `units` of work: one unit or more per core, the first
    min(units, cores) cores, column by column (its default) or row by row."""
    n = min(max(units, 1), grid_x * grid_y)
    return cores_row_major(n, grid_x) if row_wise else cores_col_major(n, grid_x, grid_y)


def split_blocks(blocks: int, grid_x: int, grid_y: int) -> tuple:
    """The cores split_blocks_for_tilize (work_split_tilize.hpp) gives `blocks` rows of tiles: ceil(blocks /
    cores) blocks a core, so ceil(blocks / that) cores, row by row."""
    per_core = -(-max(blocks, 1) // (grid_x * grid_y))
    return cores_row_major(-(-max(blocks, 1) // per_core), grid_x)


_built: dict[tuple, Program] = {}


def cached(key: tuple, build) -> Program:
    """The program `build()` makes for `key`, built once: a model repeats a few shapes, and the per-op cost
    is then one dict lookup (a build is ~10 us)."""
    program = _built.get(key)
    if program is None:
        if len(_built) >= 4096:
            _built.clear()
        program = _built[key] = build()
    return program


def cores_col_major(n: int, grid_x: int, grid_y: int) -> tuple:
    """The first n cores column by column: split_work_to_cores' default (row_wise=false) order."""
    full, rest = divmod(min(n, grid_x * grid_y), grid_y)
    ranges = ((0, 0, full - 1, grid_y - 1),) if full else ()
    return ranges + ((full, 0, full, rest - 1),) if rest else ranges
