"""Program configs: how TT-NN splits an op over cores, checked against the op's shapes as TT-NN checks them.

    import device_sim as ttnn
    cfg = ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), in0_block_w=2, out_subblock_h=1,
        out_subblock_w=4, per_core_M=4, per_core_N=4, transpose_mcast=False, fused_activation=None)
    out = ttnn.matmul(a, b, program_config=cfg)   # a bad split raises RuntimeError naming the field

Fields and keyword defaults follow TT-NN's Python bindings (matmul_pybind.cpp, normalization and
transformer bindings). device_sim.program_config_checks checks a config against an op's operands
as TT-NN does and names the field to change (RuntimeError worded as TT_FATAL's). A config changes
where the work runs, never the values, so any valid config gives the same result; a fused
activation is applied.
"""

from __future__ import annotations

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


def _grid_xy(grid) -> tuple[int, int]:
    # A config keeps the grid as a ttnn.CoreCoord, as TT-NN's binding converts an (x, y) tuple to one at
    # construction: tt_transformers passes SDPAProgramConfig(compute_with_storage_grid_size=(8, 8)) and the
    # op reads .x and .y.
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


def as_unary_with_param(value, where: str) -> UnaryWithParam:
    """`value` as TT-NN's nanobind converts it to a UnaryWithParam (activation.cpp's init_implicit):
    a UnaryWithParam as is, a UnaryOpType, or a pair (UnaryOpType, float | int | bool) whose second item is
    the parameter, a bool as 1.0/0.0 (tt-metal models write `fused_activation=(ttnn.UnaryOpType.GELU, True)`)."""
    if isinstance(value, UnaryWithParam):
        return value
    if isinstance(value, UnaryOpType):
        return UnaryWithParam(value)
    if (isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], UnaryOpType)
            and isinstance(value[1], (bool, int, float))):
        return UnaryWithParam(value[0], float(value[1]))
    raise TypeError(f"{where} must be a ttnn.UnaryWithParam, a ttnn.UnaryOpType or a pair "
                    f"(ttnn.UnaryOpType, number), or None; got {value!r}")


def _check_activation(cfg) -> None:
    if cfg.fused_activation is not None:
        cfg.fused_activation = as_unary_with_param(cfg.fused_activation, f"{type(cfg).__name__}: fused_activation")


@dataclass(kw_only=True)
class MatmulMultiCoreReuseProgramConfig:
    compute_with_storage_grid_size: CoreCoord
    in0_block_w: int
    out_subblock_h: int
    out_subblock_w: int
    per_core_M: int
    per_core_N: int

    def __post_init__(self):
        self.compute_with_storage_grid_size = CoreCoord(*_grid_xy(self.compute_with_storage_grid_size))
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
    fused_activation: UnaryWithParam | None = None  # optional: matmul_nanobind.cpp defaults it to None
    fuse_batch: bool = True

    def __post_init__(self):
        self.compute_with_storage_grid_size = CoreCoord(*_grid_xy(self.compute_with_storage_grid_size))
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
        self.compute_with_storage_grid_size = CoreCoord(*_grid_xy(self.compute_with_storage_grid_size))
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
        self.compute_with_storage_grid_size = CoreCoord(*_grid_xy(self.compute_with_storage_grid_size))
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
        self.compute_with_storage_grid_size = CoreCoord(*_grid_xy(self.compute_with_storage_grid_size))
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
        self.compute_with_storage_grid_size = CoreCoord(*_grid_xy(self.compute_with_storage_grid_size))
        _positive_ints(self, ("q_chunk_size", "k_chunk_size", "max_cores_per_head_batch"))


@dataclass(kw_only=True)
class MinimalMatmulConfig:
    """ttnn.experimental.minimal_matmul's blocking, in tiles (minimal_matmul_nanobind.cpp: every field defaults to 1,
    the grid to (1, 1)); the op checks it as MinimalMatmulDeviceOperation::validate does."""
    M_block_size: int = 1
    K_block_size: int = 1
    N_block_size: int = 1
    subblock_h: int = 1
    subblock_w: int = 1
    compute_with_storage_grid_size: CoreCoord = field(default_factory=lambda: CoreCoord(1, 1))

    def __post_init__(self):
        self.compute_with_storage_grid_size = CoreCoord(*_grid_xy(self.compute_with_storage_grid_size))
