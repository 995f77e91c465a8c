"""Program configs: how TT-NN splits an op over cores, checked against the op's shapes as TT-NN checks them.

    import device_sim as ttnn
    cfg = ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), in0_block_w=2, out_subblock_h=1,
        out_subblock_w=4, per_core_M=4, per_core_N=4, transpose_mcast=False, fused_activation=None)
    out = ttnn.matmul(a, b, program_config=cfg)   # a bad split raises RuntimeError naming the field

Fields and keyword defaults follow TT-NN's Python bindings (matmul_pybind.cpp, normalization and
transformer bindings); the checks follow MatmulDeviceOperation::validate (matmul_device_operation.cpp)
and name the field to change. A config changes where the work runs, never the values, so
device_sim computes the same result with any valid config; a fused activation is applied.
An invalid one raises RuntimeError with TT_FATAL's shape of message, as TT-NN does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from device_sim.types import CoreCoord, CoreRangeSet, _TTEnum

TILE = 32

# TT-NN's UnaryOpType, in its declaration order (unary_op_types.hpp). Numbers differ between TT-NN
# releases, so reports store the name.
UnaryOpType = _TTEnum("UnaryOpType", [
    "EXP", "RECIP", "GELU", "GELU_TANH", "RELU", "SQRT", "SIGMOID", "LOG", "LOG1P", "TANH", "LOG2", "LOG10",
    "SIN", "COS", "COSH", "SINH", "ABS", "ABS_INT32", "SIGN", "SQUARE", "EQZ", "NEZ", "GTZ", "LTZ", "GEZ",
    "LEZ", "RELU_MAX", "RELU_MIN", "POWER", "POWER_ITERATIVE", "LEAKY_RELU", "ELU", "EXP2", "HEAVISIDE",
    "EXPM1", "SIGNBIT", "ASIN", "ACOS", "ACOSH", "RSQRT", "RELU6", "ATAN", "ASINH", "ATANH", "ERF", "ERFC",
    "ISINF", "ISPOSINF", "ISNEGINF", "ISNAN", "LOGICAL_NOT_UNARY", "ISFINITE", "ERFINV", "I0", "I1", "TAN",
    "RSUB", "RDIV", "SILU", "SOFTPLUS", "IDENTITY", "NEG", "ADD_UNARY_SFPU", "SUB_UNARY_SFPU",
    "MUL_UNARY_SFPU", "DIV_UNARY_SFPU", "UNARY_NE", "UNARY_EQ", "UNARY_GT", "UNARY_LT", "UNARY_GE",
    "UNARY_LE", "TILED_PROD", "TYPECAST", "BITCAST", "BITWISE_XOR", "BITWISE_NOT", "BITWISE_AND",
    "BITWISE_OR", "RIGHT_SHIFT", "FLOOR", "CEIL", "TRUNC", "FRAC", "ROUND", "LEFT_SHIFT", "REMAINDER", "FMOD",
    "DROPOUT", "FILL", "PRELU_SFPU", "ZERO_POINT", "ALT_COMPLEX_ROTATE90", "MISH", "HARDMISH", "MAXIMUM",
    "MINIMUM", "TANHSHRINK", "THRESHOLD", "SOFTSHRINK", "HARDSHRINK", "HARDTANH", "HARDSIGMOID",
    "HARDSWISH", "WHERE_TSS", "MAC_TSS", "SOFTSIGN", "CELU", "CLAMP_TSS", "SELU", "RPOW", "CBRT",
    "LOGSIGMOID", "LOGIT", "XIELU",
], start=0)


class UnaryWithParam:
    """An activation fused into an op: `UnaryWithParam(UnaryOpType.RELU)` or `(UnaryOpType.LEAKY_RELU, 0.01)`."""

    __slots__ = ("op_type", "params")

    def __init__(self, op_type: UnaryOpType, *params: float):
        if not isinstance(op_type, UnaryOpType):
            raise TypeError(f"UnaryWithParam: op_type must be a ttnn.UnaryOpType (e.g. ttnn.UnaryOpType.RELU), "
                            f"got {op_type!r}")
        if len(params) == 1 and isinstance(params[0], (list, tuple)):
            params = tuple(params[0])
        self.op_type = op_type
        self.params = tuple(float(p) for p in params)

    @property
    def param(self) -> float | None:
        return self.params[0] if self.params else None

    def __eq__(self, other) -> bool:
        return isinstance(other, UnaryWithParam) and (self.op_type, self.params) == (other.op_type, other.params)

    def __hash__(self) -> int:
        return hash((self.op_type, self.params))

    def __repr__(self) -> str:
        return f"UnaryWithParam(op_type={self.op_type!r},params={list(self.params)})"


def tt_fatal(condition: str, message: str) -> RuntimeError:
    """A RuntimeError worded as TT-NN's TT_FATAL: the condition that failed, then what to do."""
    return RuntimeError(f"TT_FATAL @ device_sim/program_configs.py: {condition}\ninfo:\n{message}")


def _check(ok: bool, condition: str, message: str) -> None:
    if not ok:
        raise tt_fatal(condition, message)


def _grid_xy(grid) -> tuple[int, int]:
    if isinstance(grid, (tuple, list)) and len(grid) == 2:
        return int(grid[0]), int(grid[1])
    if hasattr(grid, "x") and hasattr(grid, "y"):
        return int(grid.x), int(grid.y)
    raise TypeError(f"compute_with_storage_grid_size must be a ttnn.CoreCoord(x, y), got {grid!r}")


def _positive_ints(cfg, names) -> None:
    for name in names:
        v = getattr(cfg, name)
        if isinstance(v, bool) or not isinstance(v, int):
            # pybind's .noconvert(): a float or a bool is a TypeError at construction, not a silent cast.
            raise TypeError(f"{type(cfg).__name__}: {name} must be an int, got {v!r}")
        if v < 0:
            raise TypeError(f"{type(cfg).__name__}: {name} must be >= 0, got {v}")


def _check_activation(cfg) -> None:
    if cfg.fused_activation is not None and not isinstance(cfg.fused_activation, UnaryWithParam):
        raise TypeError(f"{type(cfg).__name__}: fused_activation must be a ttnn.UnaryWithParam or None, "
                        f"got {cfg.fused_activation!r}")


@dataclass(kw_only=True)
class MatmulMultiCoreReuseProgramConfig:
    compute_with_storage_grid_size: CoreCoord
    in0_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    per_core_M: int
    per_core_N: int

    def __post_init__(self):
        _grid_xy(self.compute_with_storage_grid_size)
        _positive_ints(self, ("in0_block_w", "out_subblock_h", "out_subblock_w", "per_core_M", "per_core_N"))


@dataclass(kw_only=True)
class MatmulMultiCoreReuseMultiCastProgramConfig:
    compute_with_storage_grid_size: CoreCoord
    in0_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    out_block_h: int | None = None  # None: per_core_M, as TT-NN's binding fills it
    out_block_w: int | None = None  # None: per_core_N
    per_core_M: int
    per_core_N: int
    transpose_mcast: bool
    fused_activation: UnaryWithParam | None
    fuse_batch: bool = True

    def __post_init__(self):
        _grid_xy(self.compute_with_storage_grid_size)
        self.out_block_h = self.per_core_M if self.out_block_h is None else self.out_block_h
        self.out_block_w = self.per_core_N if self.out_block_w is None else self.out_block_w
        _positive_ints(self, ("in0_block_w", "out_subblock_h", "out_subblock_w", "out_block_h", "out_block_w",
                              "per_core_M", "per_core_N"))
        _check_activation(self)


@dataclass(kw_only=True)
class MatmulMultiCoreReuseMultiCast1DProgramConfig:
    compute_with_storage_grid_size: CoreCoord
    in0_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    out_block_h: int | None = None
    out_block_w: int | None = None
    per_core_M: int
    per_core_N: int
    fuse_batch: bool
    fused_activation: UnaryWithParam | None = None  # optional in 0.81: model code leaves it out
    mcast_in0: bool
    gather_in0: bool = False
    hop_cores: CoreRangeSet = field(default_factory=lambda: CoreRangeSet([]))
    num_global_cb_receivers: int = 1
    untilize_out: bool = False

    def __post_init__(self):
        _grid_xy(self.compute_with_storage_grid_size)
        self.out_block_h = self.per_core_M if self.out_block_h is None else self.out_block_h
        self.out_block_w = self.per_core_N if self.out_block_w is None else self.out_block_w
        _positive_ints(self, ("in0_block_w", "out_subblock_h", "out_subblock_w", "out_block_h", "out_block_w",
                              "per_core_M", "per_core_N", "num_global_cb_receivers"))
        _check_activation(self)


@dataclass(kw_only=True)
class MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig:
    in0_block_w: int
    per_core_M: int
    per_core_N: int
    fused_activation: UnaryWithParam | None = None

    def __post_init__(self):
        _positive_ints(self, ("in0_block_w", "per_core_M", "per_core_N"))
        _check_activation(self)


MATMUL_PROGRAM_CONFIGS = (MatmulMultiCoreReuseProgramConfig, MatmulMultiCoreReuseMultiCastProgramConfig,
                          MatmulMultiCoreReuseMultiCast1DProgramConfig,
                          MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig)


@dataclass(kw_only=True)
class LayerNormDefaultProgramConfig:
    legacy_reduction: bool = False
    legacy_rsqrt: bool = False
    use_welford: bool = False


@dataclass(kw_only=True)
class LayerNormShardedMultiCoreProgramConfig:
    compute_with_storage_grid_size: CoreCoord
    subblock_w: int
    block_h: int
    block_w: int
    inplace: bool
    legacy_reduction: bool = False
    legacy_rsqrt: bool = False
    use_welford: bool = False

    def __post_init__(self):
        _grid_xy(self.compute_with_storage_grid_size)
        _positive_ints(self, ("subblock_w", "block_h", "block_w"))


@dataclass(kw_only=True)
class SoftmaxDefaultProgramConfig:
    pass


@dataclass(kw_only=True)
class SoftmaxShardedMultiCoreProgramConfig:
    compute_with_storage_grid_size: CoreCoord
    subblock_w: int
    block_h: int
    block_w: int

    def __post_init__(self):
        _grid_xy(self.compute_with_storage_grid_size)
        _positive_ints(self, ("subblock_w", "block_h", "block_w"))


@dataclass(kw_only=True)
class SDPAProgramConfig:
    compute_with_storage_grid_size: CoreCoord
    sub_core_grids: CoreRangeSet | None = None
    q_chunk_size: int
    k_chunk_size: int
    exp_approx_mode: bool | None = None
    max_cores_per_head_batch: int = 16

    def __post_init__(self):
        _grid_xy(self.compute_with_storage_grid_size)
        _positive_ints(self, ("q_chunk_size", "k_chunk_size", "max_cores_per_head_batch"))


# -- validation against an op's shapes --------------------------------------------------------

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
