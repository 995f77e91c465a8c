"""Device work: the programs (TT-NN's device operations) an op launches, and their circular buffers.

A TT-NN op runs one or more device operations; each is a program whose factory creates circular
buffers (CBs) in the L1 of every core it runs on. CBs are laid out from the bottom of L1's
unreserved region upwards, while L1 tensors are allocated from the top down (allocator.py). When
the CB region of a program reaches the lowest live L1 buffer, TT-Metal refuses to launch it with
"Statically allocated circular buffers in program N clash with L1 buffers on core range ...";
device_sim raises the same error, as the hardware would fail.

launch() checks the region (a few integer operations: cheap enough to run on every op) and tells
the device's memory listener (ttreport's seam, the same one buffer events use) about the program,
which the report turns into TT-NN's captured graph. Ops describe their programs with the
program-factory models below (matmul_program, softmax_program, binary_program, unary_program),
which follow TT-NN's factories' CB sizes; an op with no model launches nothing.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim import device_work
    >>> dev = ttnn.open_device()
    >>> a = ttnn.from_torch(torch.ones(64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> b = ttnn.from_torch(torch.ones(128, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = device_work.matmul_program(a, b, None, ttnn.bfloat16, None)
    >>> p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs]
    ('MatmulDeviceOperation', [((0,), 4, 2048), ((1,), 4, 2048), ((4, 5), 1, 2048)])
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

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
            addr += _align(cb.size)
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


def _align(n: int, alignment: int = 16) -> int:
    return -(-n // alignment) * alignment


def make_program(name: str, factory: str, cbs, ranges: tuple) -> Program:
    """A Program with its CB region's size worked out once (launch reads it on every run)."""
    cbs = tuple(cbs)
    return Program(name, factory, cbs, ranges, _region(cbs))


def _region(cbs) -> int:
    return sum(_align(cb.num_pages * cb.page_size) for cb in cbs if not cb.globally_allocated)


_program_ids = itertools.count(1)
_new_tuple = tuple.__new__
_L1 = BufferType.L1


def launch(device, program: Program) -> None:
    """Run `program` on `device`: report it to the memory listener, then check its CBs against L1.

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
        cache.add(program)
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


def launch_for(out, fresh: bool, device, program: Program) -> None:
    """launch(), for an op whose output `out` exists already (its L1 counts, as TT-NN allocates outputs
    before the program runs). If the program cannot launch, a `fresh` output (not an input written in
    place, not a given output_tensor) is freed before the error goes on."""
    try:
        launch(device, program)
    except RuntimeError:
        if fresh:
            out._free()
        raise


def launch_after(out, fresh: bool, x, programs) -> None:
    """launch_for() each of `programs` (a Program, a tuple of them, or None: nothing modelled) on the device of
    the op's input `x`; nothing for a host tensor."""
    device = getattr(x, "_device", None)
    if device is None or programs is None:
        return
    for program in (programs,) if isinstance(programs, Program) else programs:
        launch_for(out, fresh, device, program)


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


# -- matmul ------------------------------------------------------------------------------------
_F32 = DataType.FLOAT32
_BF16 = DataType.BFLOAT16
_TILE_BYTES = {dt: tile_size(dt) for dt in DataType}


def _tiles(n: int) -> int:
    return -(-n // TILE)


def matmul_program(a, b, bias, out_dtype: DataType, program_config, *, shapes: tuple | None = None,
                   fp32_dest_acc_en: bool | None = None, packer_l1_acc: bool | None = None,
                   out_sharded: bool = False) -> Program:
    """MatmulDeviceOperation's CBs as TT-NN's multicast program factories create them.

    The blocking (per_core_M, per_core_N, in0_block_w, grid) is the program config's, or, without one,
    what create_matmul_program_config picks for interleaved operands: a 1D systolic config when the
    output is more than 8x taller than wide (or the reverse) or a dimension fits in one tile, else a
    2D one with per_core_M = ceil(B*Mt / grid_y), per_core_N = ceil(Nt / grid_x) and the largest
    in0_block_w <= 4 that divides Kt; its output block (out_block_h x out_block_w) is the whole per-core
    output when TT-NN's CB estimate fits below the lowest L1 tensor, else the biggest, squarest divisor
    block that fits (get_multi_dim_per_core_factor). CBs (matmul_multicore_reuse_mcast_*_program_factory.cpp):
    c_0 in0 out_block_h*in0_block_w tiles and c_1 in1 out_block_w*in0_block_w tiles, each doubled when
    there is more than one K block; c_3 the bias, out_block_w tiles; c_4 output and c_5 the
    intermediate, out_block_h*out_block_w tiles, one shared buffer when their data formats agree.
    Defaults as TT-NN's matmul: fp32 destination iff the output is float32, packer L1 accumulation
    otherwise. `shapes` are the operands' shapes after transpose_a/transpose_b (default: a's and b's).
    A sharded output backs the output CB (and c_5 when it shares it) with its own buffer: globally
    allocated, outside the static region.
    """
    ashape, bshape = shapes if shapes is not None else (a._value.shape, b._value.shape)
    if program_config is not None:
        return _matmul_program(a, b, bias, out_dtype, program_config, ashape, bshape, fp32_dest_acc_en,
                               packer_l1_acc, out_sharded)
    # A model repeats a few shapes: the default program of each is worked out once (~10 us a time otherwise).
    dev = a._device
    key = (tuple(ashape), tuple(bshape), a.dtype, b.dtype, bias.dtype if bias is not None else None, out_dtype,
           dev.config.grid_x if dev is not None else 8, dev.config.grid_y if dev is not None else 8,
           fp32_dest_acc_en, packer_l1_acc, out_sharded)
    cached = _default_programs.get(key)
    if cached is None:
        if len(_default_programs) >= 4096:
            _default_programs.clear()
        cached = _default_programs[key] = _matmul_program(a, b, bias, out_dtype, None, ashape, bshape,
                                                          fp32_dest_acc_en, packer_l1_acc, out_sharded)
    program, estimate = cached
    room = _max_l1_space(dev)
    if estimate < room:  # the whole per-core output fits: one block per core, the common case
        return program
    # TT-NN's get_multi_dim_per_core_factor shrinks the output blocks until its estimate fits below the
    # lowest L1 tensor: the program depends on what L1 holds now, so it is cached by that room too.
    key += (room,)
    cached = _default_programs.get(key)
    if cached is None:
        cached = _default_programs[key] = _matmul_program(a, b, bias, out_dtype, None, ashape, bshape,
                                                          fp32_dest_acc_en, packer_l1_acc, out_sharded, room=room)
    return cached[0]


_default_programs: dict[tuple, tuple[Program, int]] = {}  # key -> (program, TT-NN's CB estimate of whole blocks)


def _max_l1_space(device) -> int:
    """TT-NN's get_max_l1_space (matmul_utilities.cpp): from the L1 base to the lowest L1 tensor, or to the top."""
    if device is None or getattr(device, "memory", None) is None:
        return 1 << 62
    c = device.config
    lowest = device.memory.allocators[BufferType.L1].lowest_occupied_address()
    return (lowest if lowest is not None else c.l1_size) - c.l1_unreserved_base


def _cb_estimate(m: int, n: int, k: int, in0_tile: int, in1_tile: int, interm_tile: int, bias_tile: int) -> int:
    """TT-NN's get_estimated_size_of_cbs for m x n output tiles per core and k-tile blocks (interleaved in0:
    no c_2). Its output CB is estimated at in0's tile size."""
    return 2 * m * k * in0_tile + 2 * n * k * in1_tile + m * n * in0_tile + m * n * interm_tile + k * bias_tile


def _out_blocks(per_m: int, per_n: int, k: int, room: int, sizes: tuple) -> tuple[int, int]:
    """TT-NN's get_multi_dim_per_core_factor (adjust_in0_block_w false): the largest out_block_h x out_block_w,
    each dividing per_core_M / per_core_N and closest to square, whose CB estimate fits in `room`; else 1 x 1."""
    if _cb_estimate(per_m, per_n, k, *sizes) < room:
        return per_m, per_n
    ms = [per_m, 1, *(f for f in range(per_m // 2, 1, -1) if per_m % f == 0)]
    ns = [per_n, 1, *(f for f in range(per_n // 2, 1, -1) if per_n % f == 0)]
    best: dict[int, tuple[int, int]] = {}  # tiles per block -> (h, w), a later one of the same squareness wins
    for m in ms:
        for n in ns:
            ratio = max(m, n) / min(m, n)
            old = best.get(m * n)
            if old is None or not max(old) / min(old) < ratio:
                best[m * n] = (m, n)
    for tiles in sorted(best, reverse=True):
        m, n = best[tiles]
        if _cb_estimate(m, n, k, *sizes) < room:
            return m, n
    return 1, 1


def _matmul_program(a, b, bias, out_dtype, program_config, ashape, bshape, fp32_dest_acc_en, packer_l1_acc,
                    out_sharded=False, room=None):
    """The program, or for the default config (program_config None) (program, TT-NN's CB estimate of whole
    blocks); `room` (bytes of L1 below the lowest tensor) shrinks the default config's output blocks to fit."""
    Mt, Kt, Nt = _tiles(ashape[-2]), _tiles(ashape[-1]), _tiles(bshape[-1])
    B = 1
    for d in ashape[:-2]:
        B *= d
    dev = a._device
    gx, gy = (dev.config.grid_x, dev.config.grid_y) if dev is not None else (8, 8)
    fp32 = out_dtype == _F32 if fp32_dest_acc_en is None else fp32_dest_acc_en
    packer = (not fp32) if packer_l1_acc is None else packer_l1_acc
    cfg = program_config
    kind = type(cfg).__name__ if cfg is not None else None
    if cfg is not None and hasattr(cfg, "per_core_M"):
        per_M, per_N, kw = cfg.per_core_M, cfg.per_core_N, cfg.in0_block_w
        grid = getattr(cfg, "compute_with_storage_grid_size", None)
        if grid is not None:
            gx, gy = (grid.x, grid.y) if hasattr(grid, "x") else tuple(grid)
        two_d = kind == "MatmulMultiCoreReuseMultiCastProgramConfig"
        transpose = bool(getattr(cfg, "transpose_mcast", False))
    elif any(d > 1 for d in bshape[:-2]):  # a batched b: one whole output matrix per core
        per_M, per_N, kw, two_d, transpose = Mt, Nt, 1, False, False
        kind = "MatmulMultiCoreReuseProgramConfig"
    else:
        height, width = B * Mt, Nt
        ratio = max(height, width) // max(min(height, width), 1)
        if ratio > 8 or Kt <= 1 or Mt <= 1 or Nt <= 1:
            cores = gx * gy
            if height > width:  # tall: in1 is multicast, each core a band of rows
                per_M, per_N = -(-height // cores), Nt
            else:
                per_M, per_N = height, -(-Nt // cores)
            kw = -(-Kt // cores)
            while Kt % kw:
                kw -= 1
            two_d, kind = False, "MatmulMultiCoreReuseMultiCast1DProgramConfig"
        else:
            per_M, per_N = -(-height // gy), -(-Nt // gx)
            kw = 4
            while Kt % kw:
                kw -= 1
            two_d, kind = True, "MatmulMultiCoreReuseMultiCastProgramConfig"
        transpose = False
    num_blocks = max(Kt // max(kw, 1), 1)
    depth = 2 if B * num_blocks > 1 else 1
    sizes = _TILE_BYTES
    in0_tile, in1_tile, out_tile = sizes[a.dtype], sizes[b.dtype], sizes[out_dtype]
    # The factories size their CBs by the output block (out_block_h x out_block_w), a config's or, without
    # one, what TT-NN's create_matmul_program_config fits into L1 (estimate_interm_tile_size's intermediate).
    estimate_sizes = (in0_tile, in1_tile, sizes[_F32] if fp32 else max(sizes[_BF16], out_tile),
                      sizes[bias.dtype] if bias is not None else 0)
    block_h = getattr(cfg, "out_block_h", None) or per_M
    block_w = getattr(cfg, "out_block_w", None) or per_N
    if cfg is None and room is not None and kind != "MatmulMultiCoreReuseProgramConfig":
        block_h, block_w = _out_blocks(per_M, per_N, kw, room, estimate_sizes)
    cbs = [CircularBuffer((0,), block_h * kw * depth, in0_tile), CircularBuffer((1,), block_w * kw * depth, in1_tile)]
    if bias is not None:
        cbs.append(CircularBuffer((3,), block_w, sizes[bias.dtype]))
    packer_on = packer and num_blocks > 1
    interm = (_F32 if fp32 else _BF16) if packer_on else (_F32 if fp32 else out_dtype)
    out_tiles = per_M * per_N if out_sharded else block_h * block_w  # a sharded output's CB is its whole shard
    if interm == out_dtype:
        cbs.append(CircularBuffer((4, 5), out_tiles, out_tile, out_sharded))
    else:
        cbs += [CircularBuffer((4,), out_tiles, out_tile, out_sharded),
                CircularBuffer((5,), block_h * block_w, sizes[interm])]
    # MatmulMultiCoreReuse's blocks do not span batches; the multicast factories fold batches into M.
    blocks_y = B * -(-Mt // per_M) if kind == "MatmulMultiCoreReuseProgramConfig" else -(-B * Mt // per_M)
    blocks_x = -(-Nt // per_N)
    if two_d:
        x, y = (blocks_y, blocks_x) if transpose else (blocks_x, blocks_y)
        ranges = ((0, 0, min(x, gx) - 1, min(y, gy) - 1),)
    else:
        ranges = cores_row_major(min(blocks_y * blocks_x, gx * gy), gx)
    program = make_program("MatmulDeviceOperation", kind, cbs, ranges)
    return program if cfg is not None else (program, _cb_estimate(per_M, per_N, kw, *estimate_sizes))


# -- softmax -----------------------------------------------------------------------------------
def _max_divisor(n: int, cap: int) -> int:
    return next(d for d in range(min(cap, n), 0, -1) if n % d == 0)


def softmax_program(x, out_dtype: DataType, *, fp32_dest_acc_en: bool = False, numeric_stable: bool = True,
                    mask_dtype: DataType | None = None) -> Program:
    """SoftmaxDeviceOperation over the last dim of an interleaved tensor, as
    softmax_program_factory_attention_optimized.cpp creates its CBs, on every core of the grid.

    Wt tiles per row; block = the largest divisor of Wt up to 8 (4 with an fp32 destination). c_0 the
    input (the whole row when numeric_stable, else two blocks), c_11 the output (two blocks), c_7 the
    1/sum tile, c_2 the reduce scaler, c_6 the row's exps, c_5 a mask tile; numeric_stable adds c_8
    (the row max) and c_10 (the row, Wt tiles). Intermediates are float32 with an fp32 destination,
    else bfloat16. When these pass 90% of L1 the factory switches to its large-tensor kernel, whose
    row CBs hold 80 tiles. A mask (scale_mask_softmax, attention_softmax; `mask_dtype` its dtype) adds
    c_9 (Wt + block tiles, the scaled and masked row), c_3 (the scale tile) and c_4 (the mask row, Wt
    tiles, in the mask's format, as c_5 then is), and counts them in the 90% estimate.
    """
    Wt = _tiles(x._value.shape[-1]) if x._value.dim() else 1
    block = _max_divisor(Wt, 4 if fp32_dest_acc_en else 8)
    sizes = _TILE_BYTES
    in_tile, out_tile, im = sizes[x.dtype], sizes[out_dtype], sizes[_F32 if fp32_dest_acc_en else _BF16]
    scalar = mask = sizes[_BF16]
    in0_t = Wt if numeric_stable else 2 * block
    im0_t = im4_t = Wt
    im3_t = Wt + block
    estimate = in0_t * in_tile + im0_t * im + 2 * block * out_tile + 5 * im + (Wt * im if numeric_stable else 0)
    if mask_dtype is not None:
        mask = sizes[mask_dtype]
        estimate += im3_t * im + scalar + Wt * mask
    dev = x._device
    large = dev is not None and estimate > 0.9 * dev.config.l1_size
    if large:
        in0_t = im0_t = im4_t = im3_t = 80
    cbs = [CircularBuffer((0,), in0_t, in_tile), CircularBuffer((11,), 2 * block, out_tile),
           CircularBuffer((7,), 1, im)]
    if large:
        cbs += [CircularBuffer((12,), 1, im), CircularBuffer((15,), 1, im), CircularBuffer((16,), 1, im)]
    cbs += [CircularBuffer((2,), 1, scalar), CircularBuffer((6,), im0_t, im)]
    if mask_dtype is not None:
        cbs += [CircularBuffer((9,), im3_t, im), CircularBuffer((3,), 1, scalar), CircularBuffer((4,), Wt, mask)]
    cbs.append(CircularBuffer((5,), 1, mask))
    if numeric_stable:
        cbs.append(CircularBuffer((8,), 1, im))
    if numeric_stable or large:
        cbs.append(CircularBuffer((10,), im4_t, im))
    gx, gy = (dev.config.grid_x, dev.config.grid_y) if dev is not None else (8, 8)
    return make_program("SoftmaxDeviceOperation", "SoftmaxProgramFactoryAttentionOptimized", cbs,
                   ((0, 0, gx - 1, gy - 1),))


# -- shared by the program models (device_sim/programs/) ---------------------------------------
TILE_BYTES = _TILE_BYTES  # bytes of one 32x32 tile per dtype, block-float exponents included
max_divisor = _max_divisor  # TT-NN's find_max_divisor(n, cap): the largest divisor of n up to cap


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


# -- element-wise ------------------------------------------------------------------------------
def cores_col_major(n: int, grid_x: int, grid_y: int) -> tuple:
    """The first n cores column by column: split_work_to_cores' default (row_wise=false) order."""
    full, rest = divmod(min(n, grid_x * grid_y), grid_y)
    ranges = ((0, 0, full - 1, grid_y - 1),) if full else ()
    return ranges + ((full, 0, full, rest - 1),) if rest else ranges


_eltwise_programs: dict[tuple, Program] = {}


def unary_program(x, out_dtype: DataType) -> Program:
    """UnaryDeviceOperation on a TILE tensor (unary_program_factory.cpp): c_0 and c_2 hold two tiles each
    (the input's and the output's formats), on the cores split_work_to_cores gives its tiles."""
    dev = x._device
    gx, gy = (dev.config.grid_x, dev.config.grid_y) if dev is not None else (8, 8)
    shape = x._value.shape
    tiles = 1
    for d in shape[:-2]:
        tiles *= d
    tiles *= _tiles(shape[-2]) * _tiles(shape[-1]) if len(shape) >= 2 else _tiles(shape[-1]) if shape else 1
    key = ("unary", x.dtype, out_dtype, min(tiles, gx * gy), gx, gy)
    program = _eltwise_programs.get(key)
    if program is None:
        sizes = _TILE_BYTES
        program = make_program("UnaryDeviceOperation", "UnaryProgramFactory",
                               (CircularBuffer((0,), 2, sizes[x.dtype]), CircularBuffer((2,), 2, sizes[out_dtype])),
                               cores_col_major(tiles, gx, gy))
        _eltwise_programs[key] = program
    return program


def binary_program(a, b_dtype: DataType | None, out_dtype: DataType, *, lhs_activations: bool = False,
                   rhs_activations: bool = False) -> Program:
    """BinaryNgDeviceOperation (binary_ng_program_factory.cpp) on every core: c_0 a, c_2 the output and
    c_1 b, two tiles each (b a scalar: one tile in a's format; b_dtype None), plus one-tile c_3 / c_4 when
    a's / b's fused activations run before the op."""
    dev = a._device
    gx, gy = (dev.config.grid_x, dev.config.grid_y) if dev is not None else (8, 8)
    key = ("binary", a.dtype, b_dtype, out_dtype, lhs_activations, rhs_activations, gx, gy)
    program = _eltwise_programs.get(key)
    if program is None:
        sizes = _TILE_BYTES
        cbs = [CircularBuffer((0,), 2, sizes[a.dtype])]
        if lhs_activations:
            cbs.append(CircularBuffer((3,), 1, sizes[a.dtype]))
        cbs.append(CircularBuffer((2,), 2, sizes[out_dtype]))
        cbs.append(CircularBuffer((1,), 2, sizes[b_dtype]) if b_dtype is not None
                   else CircularBuffer((1,), 1, sizes[a.dtype]))
        if rhs_activations:
            cbs.append(CircularBuffer((4,), 1, sizes[b_dtype if b_dtype is not None else a.dtype]))
        program = _eltwise_programs[key] = make_program("BinaryNgDeviceOperation", "BinaryNgProgramFactory", cbs,
                                                        ((0, 0, gx - 1, gy - 1),))
    return program
