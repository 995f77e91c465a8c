"""MatmulDeviceOperation (ttnn.matmul, ttnn.linear, conv2d's matmul) as TT-NN's matmul program factories build it.

The blocking comes from the call's program config, or from what TT-NN's create_matmul_program_config picks
without one (a 1D systolic or a 2D multicast config, output blocks shrunk to fit below the lowest L1 tensor).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.matmul import matmul_program
    >>> dev = ttnn.open_device()
    >>> a = ttnn.from_torch(torch.ones(64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> b = ttnn.from_torch(torch.ones(128, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = matmul_program(a, b, None, ttnn.bfloat16, None)
    >>> p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs]
    ('MatmulDeviceOperation', [((0,), 4, 2048), ((1,), 4, 2048), ((4, 5), 1, 2048)])
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim import dtypes
from device_sim.device_work import (
    TILE_BYTES,
    CircularBuffer,
    Program,
    cached,
    cores_row_major,
    make_program,
    max_l1_space,
    shape_of,
    tiles,
)
from device_sim.tile import Tile
from device_sim.types import DataType

_F32 = DataType.FLOAT32
_BF16 = DataType.BFLOAT16


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
    # A model repeats a few shapes: the default program of each is worked out once (~10 us a time otherwise).
    dev = a.device()
    key = (tuple(ashape), tuple(bshape), a.dtype, b.dtype, bias.dtype if bias is not None else None, out_dtype,
           dev.config.grid_x if dev is not None else 8, dev.config.grid_y if dev is not None else 8,
           fp32_dest_acc_en, packer_l1_acc, out_sharded)
    if program_config is not None:
        # So is a given config's, by what _matmul_program reads of it (configs are unhashable dataclasses, often
        # made anew per call): a new program at every call was a new PROG definition in a capture's op log
        return cached(("MatmulDeviceOperation", *key, *_config_facts(program_config)), lambda: _matmul_program(
            a, b, bias, out_dtype, program_config, ashape, bshape, fp32_dest_acc_en, packer_l1_acc, out_sharded))
    hit = _default_programs.get(key)
    if hit is None:
        if len(_default_programs) >= 4096:
            _default_programs.clear()
        hit = _default_programs[key] = _matmul_program(a, b, bias, out_dtype, None, ashape, bshape,
                                                       fp32_dest_acc_en, packer_l1_acc, out_sharded)
    program, estimate = hit
    room = max_l1_space(dev)
    if estimate < room:  # the whole per-core output fits: one block per core, the common case
        return program
    # TT-NN's get_multi_dim_per_core_factor shrinks the output blocks until its estimate fits below the
    # lowest L1 tensor: the program depends on what L1 holds now, so it is cached by that room too.
    key += (room,)
    hit = _default_programs.get(key)
    if hit is None:
        hit = _default_programs[key] = _matmul_program(a, b, bias, out_dtype, None, ashape, bshape,
                                                       fp32_dest_acc_en, packer_l1_acc, out_sharded, room=room)
    return hit[0]


_default_programs: dict[tuple, tuple[Program, int]] = {}  # key -> (program, TT-NN's CB estimate of whole blocks)


def _config_facts(cfg) -> tuple:
    """What _matmul_program reads of a program config: its kind, blocking, grid and multicast transpose."""
    grid = getattr(cfg, "compute_with_storage_grid_size", None)
    return (type(cfg).__name__, getattr(cfg, "per_core_M", None), getattr(cfg, "per_core_N", None),
            getattr(cfg, "in0_block_w", None), (grid.x, grid.y) if hasattr(grid, "x") else grid and tuple(grid),
            bool(getattr(cfg, "transpose_mcast", False)), getattr(cfg, "out_block_h", None),
            getattr(cfg, "out_block_w", None))


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
    for n_tiles in sorted(best, reverse=True):
        m, n = best[n_tiles]
        if _cb_estimate(m, n, k, *sizes) < room:
            return m, n
    return 1, 1


def _matmul_program(a, b, bias, out_dtype, program_config, ashape, bshape, fp32_dest_acc_en, packer_l1_acc,
                    out_sharded=False, room=None):
    """The program, or for the default config (program_config None) (program, TT-NN's CB estimate of whole
    blocks); `room` (bytes of L1 below the lowest tensor) shrinks the default config's output blocks to fit."""
    Mt, Kt, Nt = tiles(ashape[-2]), tiles(ashape[-1]), tiles(bshape[-1])
    B = 1
    for d in ashape[:-2]:
        B *= d
    dev = a.device()
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
        if room is not None:
            # matmul_program passes `room` only when that whole-matrix block does not fit: TT-NN's can_cbs_fit_in_l1
            # fails and it falls back to create_simple_matmul_program_config, whose DRAM-interleaved form is the 2D
            # multicast config without batch fusion: ceil(Mt/gy) x ceil(Nt/gx) a core, in0_block_w Kt/gx or 1
            # (Whisper's encoder self-attention, 20 heads of 1500x1500: a 47x47-tile block wanted 5 MB of CBs).
            per_M, per_N, kw = -(-Mt // gy), -(-Nt // gx), (Kt // gx if Kt % gx == 0 else 1)
            two_d, kind = True, "MatmulMultiCoreReuseMultiCastProgramConfig"
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
    sizes = TILE_BYTES
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


# tt-metal's matmul_utilities.hpp: an input CB is double-buffered when more than one block passes through it
MCAST_INPUT_BUFFERING_DEPTH = 2


def sparse_matmul_program(a, b, sparsity, out, cfg, *, batch_a: int, batch_b: int, fp32_dest_acc_en: bool,
                          packer_l1_acc: bool) -> Program:
    """SparseMatmulMultiCoreReuseMcast1DProgramFactory (matmul/device/sparse/factory/
    sparse_matmul_multicore_reuse_mcast_1d_optimized.cpp) for a MatmulMultiCoreReuseMultiCast1DProgramConfig with
    mcast_in0: one [per_core_M, per_core_N] block of tiles a core, the cores row by row from (0, 0). c_0 in0's
    block (out_block_h x in0_block_w tiles of a's tile), c_1 in1's (out_block_w x in0_block_w), each double-buffered
    when batch_a * batch_b * (Kt / in0_block_w) > 1; c_6 and c_7 one sparsity page each (its row, DRAM-aligned);
    c_4 the output block in the output tile, c_5 the intermediate sharing it unless their formats differ (packer L1
    accumulation over several K blocks, or a float32 destination). No intermediate read CBs: those are Blackhole's."""
    key = ("SparseMatmulDeviceOperation", shape_of(a), shape_of(b), shape_of(sparsity), a.dtype, b.dtype, out.dtype,
           sparsity.dtype, batch_a, batch_b, fp32_dest_acc_en, packer_l1_acc, cfg.in0_block_w, cfg.per_core_M,
           cfg.per_core_N, cfg.out_block_h, cfg.out_block_w, sparsity.device().config.dram_alignment,
           a.device().config.grid_x)
    # built once per what its CBs read (a new program at every call was a new PROG definition in a capture's op log)
    return cached(key, lambda: _sparse_matmul(a, b, sparsity, out, cfg, batch_a, batch_b, fp32_dest_acc_en,
                                              packer_l1_acc))


def _sparse_matmul(a, b, sparsity, out, cfg, batch_a: int, batch_b: int, fp32_dest_acc_en: bool,
                   packer_l1_acc: bool) -> Program:
    th0, tw0 = a.tile.tile_shape
    tw1 = b.tile.tile_shape[1]
    kt = a.padded_shape[-1] // tw0
    num_blocks = kt // cfg.in0_block_w
    mt, nt = a.padded_shape[-2] // th0, b.padded_shape[-1] // tw1
    cores = -(-mt // cfg.per_core_M) * -(-nt // cfg.per_core_N)
    depth = MCAST_INPUT_BUFFERING_DEPTH if batch_a * batch_b * num_blocks > 1 else 1
    out_tile = Tile((th0, tw1))
    out_bytes = out_tile.get_tile_size(out.dtype)
    l1_acc = packer_l1_acc and num_blocks > 1
    interm = (DataType.FLOAT32 if fp32_dest_acc_en else DataType.BFLOAT16) if l1_acc else \
        (DataType.FLOAT32 if fp32_dest_acc_en else out.dtype)
    block = cfg.out_block_h * cfg.out_block_w
    row = sparsity.padded_shape[-1] * dtypes.ELEMENT_SIZE[sparsity.dtype]
    page = -(-row // sparsity.device().config.dram_alignment) * sparsity.device().config.dram_alignment
    cbs = [CircularBuffer((0,), cfg.out_block_h * cfg.in0_block_w * depth, a.tile.get_tile_size(a.dtype)),
           CircularBuffer((1,), cfg.out_block_w * cfg.in0_block_w * depth, b.tile.get_tile_size(b.dtype)),
           CircularBuffer((6,), 1, page), CircularBuffer((7,), 1, page)]
    if interm != out.dtype:
        cbs += [CircularBuffer((5,), block, out_tile.get_tile_size(interm)), CircularBuffer((4,), block, out_bytes)]
    else:
        cbs.append(CircularBuffer((4, 5), block, out_bytes))
    grid_x = a.device().config.grid_x
    return make_program("SparseMatmulDeviceOperation", "SparseMatmulMultiCoreReuseMcast1DProgramFactory", cbs,
                        cores_row_major(cores, grid_x))
