"""Fused activations: the `activation=` / `activations=` / `fused_activation` an op applies in its own kernel.

    import device_sim as ttnn
    y = ttnn.linear(x, w, activation="gelu")                                     # a string, or
    y = ttnn.add(a, b, activations=[ttnn.UnaryWithParam(ttnn.UnaryOpType.RELU)])  # TT-NN's struct

`resolve` turns either spelling into a function of (float32 values, approx) that the op calls on
its result before rounding it, so the fused op stays one op with one output, as in TT-NN.
`approx` is the kernel's math_approx_mode: exp, gelu, sigmoid, tanh and reciprocal then use the
SFPU approximations of device_sim.numerics.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from device_sim import numerics
from device_sim.program_configs import UnaryOpType, UnaryWithParam
from device_sim.types import _TTEnum

T = UnaryOpType


class SigmoidMode(_TTEnum):
    """ttnn.sigmoid's mode= (TT-NN's SigmoidMode): both faster modes use numerics.sigmoid_approx here."""

    Accurate = 0
    AccurateWithFastExp = 1
    FastApproximate = 2


def _approximable(name: str, exact):
    approx = numerics.APPROX[name]
    return lambda x, p, a: approx(x) if a else exact(x)


def _power_iterative(x: torch.Tensor, exponent: float) -> torch.Tensor:
    """x multiplied by itself `exponent` times (power_iterative_tile), which takes a non-negative integer only
    (unary_op_utils.cpp's TT_FATAL; tt-metal's test_unary_pow.py xfails the others)."""
    if exponent < 0 or exponent != int(exponent):
        raise RuntimeError(f"TT_FATAL: POWER_ITERATIVE requires non-negative integer exponent, got {exponent}")
    y = torch.ones_like(x)
    for _ in range(int(exponent)):
        y = y * x
    return y


# UnaryOpType -> f(x, params, approx). Parameters as TT-NN's kernels read them (params[0], ...).
_FUNCTIONS = {
    T.RELU: lambda x, p, a: torch.relu(x),
    # GELU's parameter is its kernel's fast-approximation flag (UnaryWithParam(GELU, 1.0), or the pair
    # (UnaryOpType.GELU, True) in matmul program configs): either it or the kernel's approx mode picks it.
    T.GELU: lambda x, p, a: (numerics.APPROX["gelu"] if a or (p and p[0]) else F.gelu)(x),
    T.GELU_TANH: lambda x, p, a: F.gelu(x, approximate="tanh"),
    T.SILU: lambda x, p, a: x * (numerics.sigmoid_approx(x) if a else torch.sigmoid(x)),
    T.SIGMOID: _approximable("sigmoid", torch.sigmoid),
    T.TANH: _approximable("tanh", torch.tanh),
    T.EXP: _approximable("exp", torch.exp),
    T.RECIP: _approximable("reciprocal", torch.reciprocal),
    T.SQRT: lambda x, p, a: torch.sqrt(x),
    T.RSQRT: lambda x, p, a: torch.rsqrt(x),
    T.LOG: lambda x, p, a: torch.log(x),
    T.ABS: lambda x, p, a: torch.abs(x),
    T.NEG: lambda x, p, a: torch.neg(x),
    T.SQUARE: lambda x, p, a: torch.square(x),
    T.SIN: lambda x, p, a: torch.sin(x),
    T.COS: lambda x, p, a: torch.cos(x),
    T.ERF: lambda x, p, a: torch.erf(x),
    T.IDENTITY: lambda x, p, a: x,
    T.RELU6: lambda x, p, a: torch.clamp(x, 0.0, 6.0),
    T.LEAKY_RELU: lambda x, p, a: F.leaky_relu(x, p[0]),
    T.ELU: lambda x, p, a: F.elu(x, p[0]),
    T.RELU_MAX: lambda x, p, a: torch.clamp(torch.relu(x), max=p[0]),
    T.RELU_MIN: lambda x, p, a: torch.clamp(x, min=p[0]),
    T.POWER: lambda x, p, a: torch.pow(x, p[0]),
    T.POWER_ITERATIVE: lambda x, p, a: _power_iterative(x, p[0]),
    T.SOFTPLUS: lambda x, p, a: F.softplus(x, beta=p[0], threshold=p[1]),
    T.HARDTANH: lambda x, p, a: torch.clamp(x, p[0], p[1]),
    T.MISH: lambda x, p, a: F.mish(x),
    # the steps of a ttnn.unary_chain (tt-metal's test_binary_ng_typecast.py): x - p, x + p, x * p, a comparison
    # with 0 as 1.0 / 0.0, and TYPECAST(from, to), whose values pass (the chain's output takes its dtype)
    T.SUB_UNARY_SFPU: lambda x, p, a: x - p[0],
    T.ADD_UNARY_SFPU: lambda x, p, a: x + p[0],
    T.MUL_UNARY_SFPU: lambda x, p, a: x * p[0],
    T.LTZ: lambda x, p, a: (x < 0).float(),
    T.GTZ: lambda x, p, a: (x > 0).float(),
    T.LEZ: lambda x, p, a: (x <= 0).float(),
    T.GEZ: lambda x, p, a: (x >= 0).float(),
    T.EQZ: lambda x, p, a: (x == 0).float(),
    T.NEZ: lambda x, p, a: (x != 0).float(),
    T.TYPECAST: lambda x, p, a: x,
    T.DIV_UNARY_SFPU: lambda x, p, a: x / p[0],
    # binary_ng's own activation lists take any unary SFPU op (tt-metal's test_binary_bcast_ext.py fuses each of
    # these); the predicates give 1.0 / 0.0 like the comparisons with 0 above
    T.FLOOR: lambda x, p, a: torch.floor(x),
    T.CEIL: lambda x, p, a: torch.ceil(x),
    T.LOG2: lambda x, p, a: torch.log2(x),
    T.LOG10: lambda x, p, a: torch.log10(x),
    T.EXP2: lambda x, p, a: torch.exp2(x),
    T.EXPM1: lambda x, p, a: torch.expm1(x),
    T.TAN: lambda x, p, a: torch.tan(x),
    T.ATAN: lambda x, p, a: torch.atan(x),
    T.ERFC: lambda x, p, a: torch.erfc(x),
    T.ERFINV: lambda x, p, a: torch.erfinv(x),
    T.I0: lambda x, p, a: torch.i0(x),
    T.SIGN: lambda x, p, a: torch.sign(x),
    T.SIGNBIT: lambda x, p, a: torch.signbit(x).float(),
    T.ISINF: lambda x, p, a: torch.isinf(x).float(),
    T.ISPOSINF: lambda x, p, a: torch.isposinf(x).float(),
    T.ISNEGINF: lambda x, p, a: torch.isneginf(x).float(),
    T.ISNAN: lambda x, p, a: torch.isnan(x).float(),
    T.ISFINITE: lambda x, p, a: torch.isfinite(x).float(),
    T.LOGICAL_NOT_UNARY: lambda x, p, a: (x == 0).float(),
}
_NEEDS = {T.LEAKY_RELU: 1, T.ELU: 1, T.RELU_MAX: 1, T.RELU_MIN: 1, T.POWER: 1, T.POWER_ITERATIVE: 1, T.SOFTPLUS: 2,
          T.HARDTANH: 2, T.SUB_UNARY_SFPU: 1, T.ADD_UNARY_SFPU: 1, T.MUL_UNARY_SFPU: 1, T.DIV_UNARY_SFPU: 1,
          T.TYPECAST: 2}
# Taken in a list of UnaryWithParam only: string_to_unary_with_param (unary_op_utils.cpp) names none of them.
_UNNAMED = {T.LTZ, T.GTZ, T.LEZ, T.GEZ, T.EQZ, T.NEZ, T.FLOOR, T.CEIL, T.EXP2, T.EXPM1, T.TAN, T.ATAN, T.ERFC,
            T.ERFINV, T.I0, T.SIGNBIT, T.ISINF, T.ISPOSINF, T.ISNEGINF, T.ISNAN, T.ISFINITE, T.LOGICAL_NOT_UNARY}
# The strings TT-NN's matmul/linear take for `activation=` (the op's name in lower case).
NAMES = {t.name.lower(): t for t in _FUNCTIONS if t not in _NEEDS and t not in _UNNAMED}
# Names string_to_unary_with_param (unary_op_utils.cpp) maps to an op with a parameter set
_WITH_PARAMS = {"gelu_approx": (T.GELU, 1.0)}


def resolve(op_name: str, activation):
    """f(x, approx) for `activation` (None, a name like "gelu", or a UnaryWithParam); None stays None."""
    if activation is None:
        return None
    if isinstance(activation, str):
        name = activation.lower()
        if name in _WITH_PARAMS:
            activation = UnaryWithParam(*_WITH_PARAMS[name])
        elif name not in NAMES:
            raise ValueError(f"{op_name}: activation {activation!r} is not one of {sorted([*NAMES, *_WITH_PARAMS])}; "
                             f"or pass a ttnn.UnaryWithParam")
        else:
            activation = UnaryWithParam(NAMES[name])
    if isinstance(activation, tuple) and activation and isinstance(activation[0], UnaryOpType):
        # a (UnaryOpType, param, ...) pair converts as TT-NN's binding converts it (test_binary_bcast_ext.py
        # passes activations=[(ttnn.UnaryOpType.ADD_UNARY_SFPU, 7)])
        activation = UnaryWithParam(*activation)
    if isinstance(activation, UnaryOpType):
        # TT-NN's UnaryWithParam is built from a bare UnaryOpType where one is expected (its C++ constructor
        # from op_type alone); tt-metal's binary tests pass input_tensor_a_activations=[ttnn.UnaryOpType.SILU].
        activation = UnaryWithParam(activation)
    if not isinstance(activation, UnaryWithParam):
        raise TypeError(f"{op_name}: an activation is a name like 'relu', a ttnn.UnaryOpType or a "
                        f"ttnn.UnaryWithParam, got {activation!r}")
    fn = _FUNCTIONS.get(activation.op_type)
    if fn is None:
        raise NotImplementedError(
            f"{op_name}: device_sim does not emulate fused {activation.op_type!r}; it emulates "
            f"{', '.join(t.name for t in _FUNCTIONS)}")
    need = _NEEDS.get(activation.op_type, 0)
    if len(activation.params) < need:
        raise ValueError(f"{op_name}: {activation.op_type!r} takes {need} parameter(s), got {list(activation.params)}; "
                         f"e.g. ttnn.UnaryWithParam({activation.op_type!r}, {', '.join(['0.1'] * need)})")
    params = activation.params
    return lambda x, approx=False: fn(x, params, approx)


def resolve_all(op_name: str, activations, between=None):
    """One function applying a list (or one) of activations in order; None for None or an empty list. `between(x)`:
    what each step's result becomes before the next reads it (a 16-bit destination register's rounding)."""
    if activations is None:
        return None
    items = activations if isinstance(activations, (list, tuple)) else [activations]
    fns = [resolve(op_name, a) for a in items]
    if not fns:
        return None

    def apply(x, approx=False):
        for f in fns:
            x = f(x, approx)
            if between is not None:
                x = between(x)
        return x

    return apply
