"""Program configs checked against an op's operands as TT-NN checks them, with TT_FATAL-style errors.

    from device_sim.program_config_checks import validate_matmul
    validate_matmul(cfg, (2, 128, 256), (256, 512), dest_tiles=8, device_grid=(8, 8))  # or RuntimeError

The checks follow MatmulDeviceOperation::validate_on_program_cache_miss (tt-metal's
matmul_device_operation.cpp): zero fields, in0_block_w dividing K, blocks and subblocks dividing
the per-core tiles, subblocks fitting the destination register (get_dest_reg_count), the grid
fitting the device, the per-core blocks covering M and N on the grid, and the sharded operands'
layouts and shard shapes matching the config. Each error names the field to change.
"""

from __future__ import annotations

import math

from device_sim.program_configs import (
    MATMUL_PROGRAM_CONFIGS,
    TILE,
    LayerNormDefaultProgramConfig,
    LayerNormShardedMultiCoreProgramConfig,
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig,
    MatmulMultiCoreReuseMultiCastProgramConfig,
    MatmulMultiCoreReuseProgramConfig,
    SDPAProgramConfig,
    _grid_xy,
)
from device_sim.types import BufferType, CoreCoord, ShardOrientation, TensorMemoryLayout


def tt_fatal(condition: str, message: str, where: str = "device_sim/program_config_checks.py") -> RuntimeError:
    """A RuntimeError worded as TT-NN's TT_FATAL: the condition that failed, then what to do.

    `where` names the device_sim module that checked (TT-NN names its C++ file and line there).
    """
    return RuntimeError(f"TT_FATAL @ {where}: {condition}\ninfo:\n{message}")


def _check(ok: bool, condition: str, message: str) -> None:
    if not ok:
        raise tt_fatal(condition, message)


def check_grid(cfg, device_grid: tuple[int, int]) -> None:
    """The config's grid fits the device's compute grid (x columns, y rows)."""
    x, y = _grid_xy(cfg.compute_with_storage_grid_size)
    dx, dy = device_grid
    _check(x <= dx and y <= dy, "compute_with_storage_grid_size <= device.compute_with_storage_grid_size()",
           f"{type(cfg).__name__}: compute_with_storage_grid_size {CoreCoord(x, y)} does not fit the device's "
           f"{CoreCoord(dx, dy)} grid; use at most x={dx}, y={dy}")


def validate_matmul(cfg, a_shape, b_shape, *, dest_tiles: int, device_grid: tuple[int, int] | None) -> None:
    """TT-NN's checks of a matmul program config for a [..., M, K] x [..., K, N] matmul (shapes after transposes)."""
    name = type(cfg).__name__
    if not isinstance(cfg, MATMUL_PROGRAM_CONFIGS):
        raise TypeError(f"ttnn.matmul: program_config must be one of {[c.__name__ for c in MATMUL_PROGRAM_CONFIGS]}, "
                        f"got {type(cfg).__name__}")
    tiles = lambda n: math.ceil(n / TILE)  # noqa: E731
    batch_a = math.prod(a_shape[:-2]) if len(a_shape) > 2 else 1
    M_one, K, N = tiles(a_shape[-2] if len(a_shape) > 1 else 1), tiles(a_shape[-1]), tiles(b_shape[-1])
    fuse_batch = getattr(cfg, "fuse_batch", False)
    M = M_one * batch_a if fuse_batch else M_one
    for f in ("in0_block_w", "out_subblock_h", "out_subblock_w", "out_block_h", "out_block_w", "per_core_M",
              "per_core_N"):
        if hasattr(cfg, f):
            _check(getattr(cfg, f) != 0, f"program_config.{f} != 0", f"{f} is 0, which is not valid")
    _check(K % cfg.in0_block_w == 0, "K % program_config.in0_block_w == 0",
           f"{name}: in0_block_w ({cfg.in0_block_w}) must divide K in tiles ({K}); use a divisor of {K}")
    if fuse_batch:
        batch_b = math.prod(b_shape[:-2]) if len(b_shape) > 2 else 1
        _check(batch_b == 1, "get_batch_size(b_shape_padded) == 1",
               "Matmul with fused batch requires input tensors of shapes BCMK*11KN=BCMN or equivalent. "
               "Please change the second input tensor or adjust the program config (fuse_batch=False).")
    if hasattr(cfg, "out_block_h"):
        splits = (("per_core_M", "out_block_h"), ("per_core_N", "out_block_w"),
                  ("out_block_h", "out_subblock_h"), ("out_block_w", "out_subblock_w"))
    else:
        splits = (("per_core_M", "out_subblock_h"), ("per_core_N", "out_subblock_w")) if hasattr(
            cfg, "out_subblock_h") else ()
    for whole, part in splits:
        w, p = getattr(cfg, whole), getattr(cfg, part)
        _check(w % p == 0, f"program_config.{whole} % program_config.{part} == 0",
               f"{name}: {part} ({p}) must divide {whole} ({w})")
    if hasattr(cfg, "out_subblock_h"):
        sub = cfg.out_subblock_h * cfg.out_subblock_w
        _check(sub <= dest_tiles, "out_subblock_h * out_subblock_w <= dest register tiles",
               f"{name}: out_subblock_h * out_subblock_w = {cfg.out_subblock_h} * {cfg.out_subblock_w} = {sub} tiles "
               f"does not fit the destination register ({dest_tiles} tiles with this compute_kernel_config; "
               f"4 with fp32_dest_acc_en=True, 8 without); choose smaller subblocks")
    if isinstance(cfg, MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig):
        return  # its grid is the input's shard grid, checked with the shard spec
    if device_grid is not None:
        check_grid(cfg, device_grid)
    gx, gy = _grid_xy(cfg.compute_with_storage_grid_size)
    blocks_m, blocks_n = math.ceil(M / cfg.per_core_M), math.ceil(N / cfg.per_core_N)
    if isinstance(cfg, MatmulMultiCoreReuseProgramConfig):
        M_all = M_one * batch_a
        _check(cfg.per_core_N == N, "N == per_core_N",
               f"{name}: N, {N}, is not equal to per_core_N, {cfg.per_core_N}")
        if cfg.per_core_M > M_one:
            _check(cfg.per_core_M % M_one == 0 and M_all % cfg.per_core_M == 0, "per_core_M % M == 0",
                   f"{name}: per_core_M, {cfg.per_core_M}, must be a multiple of M, {M_one}, and divide the total "
                   f"height {M_all} if per_core_M > M")
        else:
            _check(M_one % cfg.per_core_M == 0, "M % per_core_M == 0",
                   f"{name}: per_core_M, {cfg.per_core_M}, must divide M, {M_one}, if per_core_M < M")
        cores = math.ceil(M_all / cfg.per_core_M)
        _check(cores <= gx * gy, "num_blocks <= num_cores",
               f"{name}: {cores} blocks of per_core_M={cfg.per_core_M} tiles need more cores than the "
               f"{gx}x{gy} grid has; raise per_core_M")
    elif isinstance(cfg, MatmulMultiCoreReuseMultiCastProgramConfig):
        rows, cols = (gx, gy) if cfg.transpose_mcast else (gy, gx)
        _check(blocks_m <= rows, "num_blocks_y <= num_cores_y",
               f"{name}: per_core_M={cfg.per_core_M} splits M={M} tiles into {blocks_m} blocks, more than the "
               f"grid's {rows} {'columns' if cfg.transpose_mcast else 'rows'}; raise per_core_M to at least "
               f"{math.ceil(M / rows)}")
        _check(blocks_n <= cols, "num_blocks_x <= num_cores_x",
               f"{name}: per_core_N={cfg.per_core_N} splits N={N} tiles into {blocks_n} blocks, more than the "
               f"grid's {cols} {'rows' if cfg.transpose_mcast else 'columns'}; raise per_core_N to at least "
               f"{math.ceil(N / cols)}")
    elif isinstance(cfg, MatmulMultiCoreReuseMultiCast1DProgramConfig):
        _check(not (cfg.mcast_in0 and cfg.gather_in0), "!(mcast_in0 && gather_in0)",
               "Matmul1D does not support mcast_in0 and gather_in0 at the same time.")
        blocks = blocks_n if cfg.mcast_in0 else blocks_m
        along = ("N", N, "per_core_N", cfg.per_core_N) if cfg.mcast_in0 else ("M", M, "per_core_M", cfg.per_core_M)
        _check(blocks <= gx * gy, "num_blocks <= num_cores",
               f"{name}: {along[2]}={along[3]} splits {along[0]}={along[1]} tiles into {blocks} blocks, more than "
               f"the {gx}x{gy} grid's {gx * gy} cores; raise {along[2]} to at least {math.ceil(along[1] / (gx * gy))}")
        other = ("M", M, "per_core_M", cfg.per_core_M) if cfg.mcast_in0 else ("N", N, "per_core_N", cfg.per_core_N)
        _check(other[3] >= other[1], f"{other[2]} >= {other[0]}",
               f"{name}: with mcast_in0={cfg.mcast_in0} every core computes all of {other[0]}, so {other[2]} "
               f"({other[3]}) must be at least {other[0]} in tiles ({other[1]})")


def validate_matmul_sharding(cfg, a_shape, b_shape, a_mem, b_mem, out_mem) -> None:
    """TT-NN's checks that tie a matmul program config to its sharded operands (memory configs may be None).

    Shapes are after transposes; a memory config without a shard_spec (ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG,
    completed by the op) is checked for its layout only. Messages are TT-NN's, after the field's name.
    """
    name = type(cfg).__name__
    L = TensorMemoryLayout
    sharded = lambda m: m is not None and m.memory_layout != L.INTERLEAVED  # noqa: E731
    shard = lambda m: m.shard_spec.shape if m.shard_spec is not None else None  # noqa: E731
    tiles = lambda n: math.ceil(n / TILE)  # noqa: E731
    batch_a = math.prod(a_shape[:-2]) if len(a_shape) > 2 else 1
    fuse = getattr(cfg, "fuse_batch", False)
    M, K, N = tiles(a_shape[-2]) * (batch_a if fuse else 1), tiles(a_shape[-1]), tiles(b_shape[-1])
    if hasattr(cfg, "compute_with_storage_grid_size"):
        gx, gy = _grid_xy(cfg.compute_with_storage_grid_size)
        for label, m in (("input_tensor_a", a_mem), ("input_tensor_b", b_mem)):
            if sharded(m) and m.buffer_type != BufferType.DRAM and m.shard_spec is not None:
                box = m.shard_spec.grid.bounding_box()
                _check(box.end.x <= gx and box.end.y <= gy, "range.contains(shard_grid)",
                       f"{name}: Tensor shard spec grid must be within config grid! {label}'s shard grid: "
                       f"{m.shard_spec.grid!r}, config compute_with_storage_grid_size: {CoreCoord(gx, gy)}")

    def a_shard_rows(per_core_M):
        s = shard(a_mem)
        if s is not None:
            _check(per_core_M == s[0] // TILE, "per_core_M == shard_shape[0] / in0_tile.get_height()",
                   f"{name}: per_core_M ({per_core_M}) must equal shard_shape[0] / in0_tile.get_height() "
                   f"({s[0] // TILE}) of input_tensor_a's shard {list(s)}")
        return s

    def out_subblocks(layout):
        if not sharded(out_mem):
            return
        _check(out_mem.memory_layout == layout, f"output memory layout == {layout!r}",
               f"{name}: Output memory layout must be {layout.name}, got: {out_mem.memory_layout!r}")
        _check(cfg.out_subblock_w == cfg.per_core_N or cfg.out_subblock_h == 1,
               "out_subblock_w == per_core_N || out_subblock_h == 1",
               "Error: out_subblock_w must be equal to per_core_N or out_subblock_h must be equal to 1.")
        if hasattr(cfg, "out_block_w"):
            _check(cfg.out_block_w == cfg.per_core_N or cfg.out_block_h == 1,
                   "out_block_w == per_core_N || out_block_h == 1",
                   "Error: out_block_w must be equal to per_core_N or out_block_h must be equal to 1.")

    if isinstance(cfg, MatmulMultiCoreReuseMultiCastProgramConfig):
        if sharded(a_mem):
            _check(cfg.fuse_batch, "program_config.fuse_batch", f"{name}: Batch fusion is required when input A "
                   f"is sharded (fuse_batch=True)")
            _check(a_mem.memory_layout in (L.BLOCK_SHARDED, L.HEIGHT_SHARDED), "A is BLOCK or HEIGHT sharded",
                   f"{name}: Unsupported memory layout {a_mem.memory_layout!r}.")
            s = a_shard_rows(cfg.per_core_M)
            if a_mem.memory_layout == L.BLOCK_SHARDED and a_mem.shard_spec is not None:
                want = ShardOrientation.COL_MAJOR if cfg.transpose_mcast else ShardOrientation.ROW_MAJOR
                _check(a_mem.shard_spec.orientation == want, "shard orientation matches transpose_mcast",
                       f"{name}: Input tensor A must have {want.name} shard orientation for "
                       f"{'' if cfg.transpose_mcast else 'non-'}transpose MCAST, got: {a_mem.shard_spec.orientation!r}")
            if a_mem.memory_layout == L.HEIGHT_SHARDED:
                _check(not cfg.transpose_mcast, "!transpose_mcast",
                       f"{name}: Transpose MCAST not supported with HEIGHT_SHARDED layout")
                _check(cfg.in0_block_w == K, "K == in0_block_w",
                       f"{name}: K ({K}) must equal in0_block_w ({cfg.in0_block_w})")
            if s is not None:
                _check((s[1] // TILE) % cfg.in0_block_w == 0, "shard_shape[1] / 32 % in0_block_w == 0",
                       f"{name}: shard_shape[1] / in0_tile.get_width() ({s[1] // TILE}) must be divisible by "
                       f"in0_block_w ({cfg.in0_block_w})")
        if sharded(b_mem):
            _check(not cfg.transpose_mcast, "!transpose_mcast",
                   f"{name}: Transpose MCAST not supported when input B is sharded")
            _check(b_mem.memory_layout in (L.WIDTH_SHARDED, L.HEIGHT_SHARDED), "B is WIDTH_SHARDED or HEIGHT_SHARDED",
                   f"{name}: Input B memory layout must be WIDTH_SHARDED or HEIGHT_SHARDED, got: "
                   f"{b_mem.memory_layout!r}")
            if b_mem.memory_layout == L.HEIGHT_SHARDED:  # a batched matmul's B, whole [K, N] matrices per DRAM bank
                _check(b_mem.buffer_type == BufferType.DRAM, "B in DRAM",
                       f"{name}: HEIGHT_SHARDED input B is only supported in DRAM, got: {b_mem.buffer_type!r}")
                _check(not fuse, "!program_config.fuse_batch",
                       f"{name}: HEIGHT_SHARDED input B requires fuse_batch=false for batched matmul")
                s = shard(b_mem)
                if s is not None:
                    h, w = tiles(s[0]), tiles(s[1])
                    _check(w == N, "in1_shard_width_in_tiles == N",
                           f"{name}: HEIGHT_SHARDED input B shard width ({w} tiles) must equal N ({N} tiles)")
                    _check(h >= K and h % K == 0, "in1_shard_height_in_tiles % K == 0",
                           f"{name}: HEIGHT_SHARDED input B shard height ({h} tiles) must be divisible by K ({K} "
                           f"tiles) so each bank holds complete [K, N] matrices")
                    batch_b = math.prod(b_shape[:-2]) if len(b_shape) > 2 else 1
                    banks = b_mem.shard_spec.grid.num_cores()
                    _check(h // K * banks >= batch_b, "batches_per_bank * num_banks >= B",
                           f"{name}: HEIGHT_SHARDED input B: batches_per_bank ({h // K}) * num_banks ({banks}) = "
                           f"{h // K * banks} must be >= batch size B ({batch_b})")
        out_subblocks(L.BLOCK_SHARDED)
    elif isinstance(cfg, MatmulMultiCoreReuseMultiCast1DProgramConfig) and not cfg.gather_in0:
        a_layout, out_layout = (L.WIDTH_SHARDED, L.WIDTH_SHARDED) if cfg.mcast_in0 else (
            L.HEIGHT_SHARDED, L.HEIGHT_SHARDED)
        if sharded(a_mem):
            _check(cfg.fuse_batch, "program_config.fuse_batch", "Error: Batch fusion must be enabled.")
            _check(a_mem.memory_layout == a_layout, f"A is {a_layout.name}",
                   f"{name}: Error: input_tensor_a must be {a_layout.name.lower().replace('_', ' ')} with "
                   f"mcast_in0={cfg.mcast_in0}. Provided tensor memory layout: {a_mem.memory_layout!r}")
            s = a_shard_rows(cfg.per_core_M)
            if s is not None and cfg.mcast_in0:
                _check((s[1] // TILE) % cfg.in0_block_w == 0, "shard_shape[1] / 32 % in0_block_w == 0",
                       f"{name}: Error: shard_shape[1] ({s[1]}) / in0_tile.get_width() ({TILE}) must be divisible "
                       f"by in0_block_w ({cfg.in0_block_w}).")
            elif s is not None:
                _check(s[1] // TILE == K, "K == shard_shape[1] / in0_tile.get_width()",
                       f"{name}: Error: K must be equal to shard_shape[1] / in0_tile.get_width() "
                       f"({K} != {s[1] // TILE}).")
        if sharded(out_mem):
            if cfg.mcast_in0:
                _check(cfg.per_core_M == M, "M == per_core_M",
                       f"{name}: Error: M {M} must be equal to per_core_M {cfg.per_core_M}.")
            else:
                _check(cfg.per_core_N == N, "N == per_core_N", f"{name}: Error: N must be equal to per_core_N.")
        out_subblocks(out_layout)
        if not cfg.mcast_in0:
            _check(not sharded(b_mem), "B is INTERLEAVED", f"{name}: Error: Operand B must be interleaved.")
        elif sharded(b_mem) and b_mem.buffer_type == BufferType.L1:
            _check(b_mem.memory_layout == L.WIDTH_SHARDED, "B is WIDTH_SHARDED",
                   f"{name}: Operand B can only be interleaved or L1 width sharded.")
            s = shard(b_mem)
            if s is not None:
                _check(cfg.per_core_N == s[1] // TILE, "per_core_N == shard_shape[1] / 32",
                       f"{name}: Shard width must match per core N ({cfg.per_core_N} != {s[1] // TILE}).")
    elif isinstance(cfg, MatmulMultiCoreReuseProgramConfig) and sharded(a_mem):
        _check(a_mem.memory_layout != L.WIDTH_SHARDED, "A is not WIDTH_SHARDED",
               f"{name}: Error: memory layout, {a_mem.memory_layout!r}, is not width sharded")
        s = shard(a_mem)
        if s is not None:
            _check(a_shape[-1] == s[1], "K == shard_shape[1]",
                   f"{name}: Error: K, {a_shape[-1]}, needs to be equal to {s[1]}")
            _check(s[1] == cfg.in0_block_w * TILE, "shard_shape[1] == in0_block_w * 32",
                   f"{name}: Error: {s[1]} needs to equal {cfg.in0_block_w} * {TILE} (in0_block_w)")
            _check(cfg.per_core_M * TILE == s[0], "per_core_M * 32 == shard_shape[0]",
                   f"{name}: Error: {cfg.per_core_M} * {TILE} needs to equal {s[0]} (per_core_M)")
    elif isinstance(cfg, MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig):
        _check(sharded(a_mem), "input_tensor_a.is_sharded()",
               f"{name}: Input tensor A must be sharded for DRAM sharded program config")
        _check(sharded(out_mem), "output_mem_config.is_sharded()",
               f"{name}: Output memory config must be sharded for DRAM sharded program config")
        _check(a_mem.memory_layout == L.WIDTH_SHARDED, "A is WIDTH_SHARDED",
               f"{name}: Input A memory layout must be WIDTH_SHARDED, got: {a_mem.memory_layout!r}")
        _check(cfg.per_core_M == M, "M == per_core_M", f"{name}: M ({M}) must equal per_core_M ({cfg.per_core_M})")
        _check(sharded(b_mem) and b_mem.memory_layout == L.WIDTH_SHARDED, "B is WIDTH_SHARDED",
               f"{name}: Input B memory layout must be WIDTH_SHARDED (in DRAM), got: "
               f"{b_mem.memory_layout if b_mem is not None else None!r}")


def validate_layer_norm(cfg, op_name: str, shape, a_mem, out_mem, residual_mem) -> None:
    """TT-NN's checks of a layer_norm / rms_norm program config (LayerNormDeviceOperation::validate).

    `shape` is the input's padded shape (whole tiles), as TT-NN checks it.
    """
    if isinstance(cfg, LayerNormDefaultProgramConfig):
        _check(not (cfg.use_welford and op_name == "ttnn.rms_norm"), "!use_welford",
               "Welford's algorithm is not supported for RMSNorm")
        return
    if not isinstance(cfg, LayerNormShardedMultiCoreProgramConfig):
        raise TypeError(f"{op_name}: program_config must be a ttnn.LayerNormDefaultProgramConfig or "
                        f"ttnn.LayerNormShardedMultiCoreProgramConfig, got {type(cfg).__name__}")
    name = type(cfg).__name__
    L = TensorMemoryLayout
    _check(not (cfg.use_welford and op_name == "ttnn.rms_norm"), "!use_welford",
           "Welford's algorithm is not supported for RMSNorm")
    _check(a_mem is not None and a_mem.memory_layout != L.INTERLEAVED and a_mem.shard_spec is not None,
           "a.is_sharded()", f"{op_name}: {name} needs a sharded input (with a shard spec), got "
           f"{a_mem!r}; shard it first (ttnn.to_memory_config / ttnn.interleaved_to_sharded) or use "
           f"ttnn.LayerNormDefaultProgramConfig()")
    if out_mem is not None:
        if cfg.inplace:
            _check(out_mem.memory_layout != L.INTERLEAVED, "output_mem_config.is_sharded()",
                   "Output memory config must be sharded for inplace operation")
        _check(a_mem.buffer_type == out_mem.buffer_type, "input buffer type == output buffer type",
               f"Input and output buffer types must match, got input: {a_mem.buffer_type!r} vs output: "
               f"{out_mem.buffer_type!r}")
        _check(a_mem.memory_layout == out_mem.memory_layout, "input memory layout == output memory layout",
               f"Input and output memory layouts must match, got input: {a_mem.memory_layout!r} vs output: "
               f"{out_mem.memory_layout!r}")
    M, K = math.prod(shape[:-1]), shape[-1]
    _check(cfg.block_w % cfg.subblock_w == 0, "block_w % subblock_w == 0",
           f"{name}: block_w must be divisible by subblock_w ({cfg.block_w} % {cfg.subblock_w}).")
    _check(M % TILE == 0, "M % TILE_HEIGHT == 0", f"M ({M}) must be divisible by tile height ({TILE})")
    _check(K % TILE == 0, "K % TILE_WIDTH == 0", f"K ({K}) must be divisible by tile width ({TILE})")
    spec = a_mem.shard_spec
    box = spec.grid.bounding_box()
    gx, gy = _grid_xy(cfg.compute_with_storage_grid_size)
    _check(box.end.x - box.start.x < gx and box.end.y - box.start.y < gy, "bbox within compute grid",
           f"{name}: Bounding box dimensions must be smaller than compute grid size, got bbox x: {box.start.x} to "
           f"{box.end.x}, y: {box.start.y} to {box.end.y} vs grid size x: {gx}, y: {gy} "
           f"(compute_with_storage_grid_size)")
    Mt, Kt = M // TILE, K // TILE
    if cfg.block_h * TILE == M:  # one row of shards: the statistics are multicast along it
        cores = spec.grid.num_cores()
        _check(cfg.block_w == math.ceil(Kt / cores), "block_w == K / num_cores",
               f"{name}: block_w ({cfg.block_w}) must equal to K (in tiles) / num_cores ({math.ceil(Kt / cores)})")
        _check(cfg.block_h == Mt, "block_h == M", f"{name}: block_h ({cfg.block_h}) must equal to M (in tiles) ({Mt})")
        _check(a_mem.memory_layout != L.HEIGHT_SHARDED, "not HEIGHT_SHARDED",
               f"Height sharded memory layout is not supported, got: {a_mem.memory_layout!r}")
    else:
        row_wise = spec.orientation == ShardOrientation.ROW_MAJOR
        across, down = (box.end.x + 1, box.end.y + 1) if row_wise else (box.end.y + 1, box.end.x + 1)
        _check(cfg.block_w == math.ceil(Kt / across), "block_w == K / num_cores_c",
               f"{name}: block_w ({cfg.block_w}) must equal to K (in tiles) / num_cores_c ({math.ceil(Kt / across)})")
        _check(cfg.block_h == Mt // down, "block_h == M / num_cores_r",
               f"{name}: block_h ({cfg.block_h}) must equal to M (in tiles)/ num_cores_r ({Mt // down})")
    if residual_mem is not None:
        _check(residual_mem.memory_layout != L.INTERLEAVED, "residual.is_sharded()",
               "Residual tensor must be sharded when input is sharded")
        _check(residual_mem.shard_spec == spec, "residual shard spec == input shard spec",
               f"Residual tensor shard spec must match input shard spec, got residual: {residual_mem.shard_spec!r} "
               f"vs input: {spec!r}")
    _check(cfg.block_h * TILE == spec.shape[0], "block_h * TILE_HEIGHT == shard_shape[0]",
           f"{name}: Block height * TILE_HEIGHT must match shard shape[0], got {cfg.block_h * TILE} vs "
           f"{spec.shape[0]} (block_h)")
    _check(cfg.block_w * TILE == spec.shape[1], "block_w * TILE_WIDTH == shard_shape[1]",
           f"{name}: Block width * TILE_WIDTH must match shard shape[1], got {cfg.block_w * TILE} vs "
           f"{spec.shape[1]} (block_w)")


def validate_sdpa(cfg, op_name: str) -> None:
    """TT-NN's checks of an SDPAProgramConfig (sdpa_device_operation.cpp): chunk sizes in whole tiles."""
    if not isinstance(cfg, SDPAProgramConfig):
        raise TypeError(f"{op_name}: program_config must be a ttnn.SDPAProgramConfig, got {type(cfg).__name__}")
    for field in ("q_chunk_size", "k_chunk_size"):
        size = getattr(cfg, field)
        _check(size % TILE == 0, f"{field} % TILE_WIDTH == 0",
               f"{op_name}: {field} must be divisible by TILE_SIZE. Got {field}: {size}, TILE_SIZE: {TILE}")
