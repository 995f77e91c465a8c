"""The emulated FPU and SFPU: what math fidelity, the destination format and approx mode do to values.

    from device_sim import numerics
    from device_sim.compute_config import MathFidelity, Numerics
    lofi = Numerics(MathFidelity.LoFi, math_approx_mode=False, fp32_dest_acc_en=False, packer_l1_acc=False)
    y = numerics.matmul(a, b, lofi)          # float32 values, as a Wormhole matmul would give them

The model (docs/numerics.md gives the sources and what is exact and what is not):
- The multiplier is 5 x 7 bits. A matmul's in1 sits in srcA (5 bits a pass: the hidden bit and 4
  mantissa bits), in0 in srcB (7 bits: the hidden bit and 6). LoFi is one pass on the high bits
  of both; HiFi2 adds a pass on srcA's next 4 bits; HiFi3 adds one on srcB's next 6 bits;
  HiFi4 adds the pass of both low slices. Source registers hold at most 19-bit floats (10 mantissa bits), so
  float32 operands lose their low mantissa bits even at HiFi4. Operand bits are truncated.
- Products of one 16-wide face step are summed exactly (float32 here) and added into the
  destination register; without fp32_dest_acc_en the destination is bfloat16, so the running
  sum is rounded to bfloat16 after every 16 values of K.
- Reductions (sum, mean) run on the same engine: the input in srcA, the scaler (1 or 1/N) in
  srcB, so LoFi keeps 5 bits of each input and 7 of 1/N.
- Approx-mode SFPU functions use the approximations below, each with its error figure.
"""

from __future__ import annotations

import contextlib
import contextvars
import math

import torch

from device_sim.compute_config import MathFidelity, Numerics

# Off: ops given no compute_kernel_config compute exactly (the fast default). On: they run TT-NN's
# default kernel for the op, as if given an empty config. Per thread and asyncio task, like ttnn.memory.
_TT_NN_DEFAULTS = contextvars.ContextVar("device_sim_tt_nn_default_kernels", default=False)


@contextlib.contextmanager
def tt_nn_default_kernels(enabled: bool = True):
    """Within the block, ops without a compute_kernel_config emulate TT-NN's default one for the op.

        with device_sim.numerics.tt_nn_default_kernels():
            y = model(x)   # matmul at HiFi2 with a bfloat16 destination, softmax with approx exp, ...
    """
    token = _TT_NN_DEFAULTS.set(bool(enabled))
    try:
        yield
    finally:
        _TT_NN_DEFAULTS.reset(token)


def emulating(compute_kernel_config) -> bool:
    """Whether an op given `compute_kernel_config` (None: none) runs the emulated kernel."""
    return compute_kernel_config is not None or _TT_NN_DEFAULTS.get()


FACE_K = 16  # K values a matrix-engine step sums before adding into the destination register
SRC_BITS = 11  # significant bits a 19-bit source register keeps (hidden bit + 10 mantissa bits)
SRCA_HI, SRCA_ALL = 5, 9  # srcA: the first pass's bits, and both passes' (hidden + 4 + 4)
SRCB_HI, SRCB_ALL = 7, 13  # srcB: hidden + 6, then the next 6 (more than a source register holds)


def keep_bits(x: torch.Tensor, bits: int) -> torch.Tensor:
    """float32 x truncated (toward zero) to `bits` significant bits; inf and torch's NaN pass unchanged.

    Clears the low 24-bits mantissa bits of each float32 word: exact for normal numbers; NaN keeps
    its quiet bit (bit 22), so it stays NaN for any bits >= 2.
    """
    if bits >= 24:
        return x
    mask = -(1 << (24 - bits))  # ...1110000: keeps sign, exponent and the top bits-1 stored mantissa bits
    return (x.contiguous().view(torch.int32) & mask).view(torch.float32)


def to_bf16(x: torch.Tensor) -> torch.Tensor:
    """x rounded to bfloat16 (nearest even), as float32."""
    return x.to(torch.bfloat16).float()


def _fidelity_terms(a: torch.Tensor, b: torch.Tensor, fidelity: MathFidelity):
    """The (in0 part, in1 part) pairs whose products sum to what the multiplier passes compute.

    in0 = a is srcB (7-bit passes), in1 = b is srcA (5-bit passes). A pass multiplies one slice of
    each; passes distribute, so LoFi..HiFi4 need one or two matmuls, never four.
    """
    a_hi = keep_bits(a, SRCB_HI)
    b_hi = keep_bits(b, SRCA_HI)
    if fidelity == MathFidelity.LoFi:
        return [(a_hi, b_hi)]
    b_all = keep_bits(b, min(SRCA_ALL, SRC_BITS))
    if fidelity == MathFidelity.HiFi2:  # + srcA low x srcB high
        return [(a_hi, b_all)]
    a_all = keep_bits(a, min(SRCB_ALL, SRC_BITS))
    if fidelity == MathFidelity.HiFi3:  # + srcA high x srcB low
        return [(a_hi, b_all), (a_all - a_hi, b_hi)]
    return [(a_all, b_all)]  # HiFi4: all four passes


PARTIALS_MAX = 1 << 23  # float32 face-step partial products held at once (32 MiB) in the bfloat16 path


def _face_partials(a: torch.Tensor, b: torch.Tensor, k0: int, steps: int) -> torch.Tensor:
    """The products of `steps` face steps from k0 on, one [..., M, N] slab per step: [..., steps, M, N]."""
    k1 = min(k0 + steps * FACE_K, a.shape[-1])
    pad = (-(k1 - k0)) % FACE_K  # a last partial face step, zero-padded (adds nothing)
    sa, sb = a[..., k0:k1], b[..., k0:k1, :]
    if pad:
        sa = torch.nn.functional.pad(sa, (0, pad))
        sb = torch.nn.functional.pad(sb, (0, 0, 0, pad))
    n_steps = sa.shape[-1] // FACE_K
    sa = sa.reshape(*sa.shape[:-1], n_steps, FACE_K).movedim(-2, -3)  # [..., steps, M, 16]
    sb = sb.reshape(*sb.shape[:-2], n_steps, FACE_K, sb.shape[-1])  # [..., steps, 16, N]
    return torch.matmul(sa, sb)


def _accumulate(terms, n: Numerics) -> torch.Tensor:
    """Sum a_part @ b_part over K in the destination format: float32, or bfloat16 after every face step.

    The bfloat16 path forms a batch of face steps' products with one matmul, then adds them into
    the running sum one by one, rounding each time: the rounding is sequential, the products are not.
    """
    if n.fp32_dest_acc_en:
        out = None
        for ta, tb in terms:
            p = torch.matmul(ta, tb)
            out = p if out is None else out + p
        return out
    a0, b0 = terms[0]
    K = a0.shape[-1]
    out_numel = max(1, torch.broadcast_shapes(a0.shape[:-2], b0.shape[:-2]).numel() * a0.shape[-2] * b0.shape[-1])
    group = max(1, PARTIALS_MAX // out_numel)  # face steps per batched matmul
    acc = None
    for k0 in range(0, K, group * FACE_K):
        partials = _face_partials(*terms[0], k0, group)
        for ta, tb in terms[1:]:  # HiFi3's second pass
            partials += _face_partials(ta, tb, k0, group)
        for step in partials.unbind(-3):
            acc = to_bf16(step if acc is None else acc + step)
    return acc if acc is not None else torch.matmul(a0, b0)  # K == 0: zeros of the right shape


def matmul(a: torch.Tensor, b: torch.Tensor, n: Numerics) -> torch.Tensor:
    """a @ b (float32, torch's broadcasting and 1-D rules) as the matrix engine computes it under `n`."""
    squeeze_a, squeeze_b = a.dim() == 1, b.dim() == 1
    a = a.unsqueeze(0) if squeeze_a else a
    b = b.unsqueeze(-1) if squeeze_b else b
    out = _accumulate(_fidelity_terms(a.float(), b.float(), n.math_fidelity), n)
    if squeeze_a:
        out = out.squeeze(-2)
    if squeeze_b:
        out = out.squeeze(-1)
    return out


def conv2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, stride, dilation, groups: int,
           n: Numerics) -> torch.Tensor:
    """torch's conv2d (padding already applied to x, NCHW) as TT-NN runs it: an im2col matmul on the engine.

    The unfolded activations are in0 (srcB) and the weights in1 (srcA), K = C/groups * kh * kw,
    so a conv loses what a matmul of that K loses at the same fidelity and destination format.
    """
    N, C, H, W = x.shape
    O, Cg, kh, kw = weight.shape
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    oh, ow = (H - dh * (kh - 1) - 1) // sh + 1, (W - dw * (kw - 1) - 1) // sw + 1
    cols = torch.nn.functional.unfold(x.float(), (kh, kw), dilation=(dh, dw), stride=(sh, sw))  # [N, C*kh*kw, L]
    cols = cols.reshape(N, groups, Cg * kh * kw, oh * ow).transpose(-1, -2)  # [N, g, L, K]
    w = weight.float().reshape(groups, O // groups, Cg * kh * kw).transpose(-1, -2)  # [g, K, O/g]
    y = matmul(cols, w, n).transpose(-1, -2).reshape(N, O, oh, ow)
    return y if bias is None else y + bias.float().reshape(1, O, 1, 1)


def reduce_sum(x: torch.Tensor, dims: tuple[int, ...], keepdim: bool, n: Numerics, *, mean: bool,
               scaler: float = 1.0) -> torch.Tensor:
    """sum of x * scaler (mean: x * scaler/N) over `dims` on the matrix engine: x in srcA, the scaler in srcB."""
    count = math.prod(x.shape[d] for d in dims) if dims else 1
    s = torch.tensor(scaler / count if mean else scaler, dtype=torch.float32)
    # Move the reduced dims last and flatten them: the engine walks them in 16-value face steps.
    rest = [d for d in range(x.dim()) if d not in dims]
    flat = x.float().permute(*rest, *dims).reshape(*[x.shape[d] for d in rest], count)
    # The input takes in1's place (srcA), the scaler in0's (srcB): the matmul's pass split, elementwise.
    products = sum(s_part * x_part for s_part, x_part in _fidelity_terms(s, flat, n.math_fidelity))
    if n.fp32_dest_acc_en:
        out = products.sum(-1)
    else:
        out = None
        for k0 in range(0, count, FACE_K):
            step = products[..., k0:k0 + FACE_K].sum(-1)
            out = to_bf16(step if out is None else out + step)
        out = products.sum(-1) if out is None else out  # count == 0: an empty sum
    if keepdim:
        for d in sorted(dims):
            out = out.unsqueeze(d)
    return out


# -- SFPU approximations (math_approx_mode / fast_and_approximate_mode) --------------------------

def exp_approx(x: torch.Tensor) -> torch.Tensor:
    """2**i * (1 + f) for x/ln2 = i + f: the exponent from the integer part, the mantissa linear in f.

    The SFPU's approximate exp builds the float from its bits this way (Schraudolph's method).
    Max relative error 6.1% (at f = 1/ln2 - 1), exact at integer multiples of ln2.
    """
    y = x.float() / math.log(2.0)
    i = torch.floor(y)
    out = torch.ldexp(1.0 + (y - i), i.clamp(-150, 128).to(torch.int32))
    return torch.where(torch.isnan(x), x.float(), out)


def sigmoid_approx(x: torch.Tensor) -> torch.Tensor:
    """1 / (1 + exp_approx(-x)): max absolute error 0.015."""
    return 1.0 / (1.0 + exp_approx(-x))


def tanh_approx(x: torch.Tensor) -> torch.Tensor:
    """2 * sigmoid_approx(2x) - 1: max absolute error 0.03."""
    return 2.0 * sigmoid_approx(2.0 * x) - 1.0


def gelu_approx(x: torch.Tensor) -> torch.Tensor:
    """GELU's tanh form with the approximate tanh: max absolute error 0.02 against the erf form."""
    x = x.float()
    return 0.5 * x * (1.0 + tanh_approx(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def reciprocal_approx(x: torch.Tensor) -> torch.Tensor:
    """1/x by one Newton-Raphson step from a linear seed on the mantissa: max relative error 0.35%.

    x = m * 2**e with m in [0.5, 1); seed 48/17 - 32/17 m (max relative error 1/17), one step
    r(2 - x r) squares it. The precise SFPU path takes more steps; device_sim then uses torch.
    """
    x = x.float()
    m, e = torch.frexp(x)
    r = torch.ldexp(48.0 / 17.0 - 32.0 / 17.0 * m.abs(), -e) * torch.sign(m)
    r = r * (2.0 - m * torch.ldexp(r, e))
    return torch.where((x == 0) | ~torch.isfinite(x), torch.reciprocal(x), r)


# ln(x) for x in [1, 2]: the SFPU's degree-5 minimax polynomial (ckernel_sfpu_log.h, Sollya's fpminimax over
# [1 + 2**-20, 2]), constant term first, evaluated by Horner's rule in float32.
_LOG_POLY = (-2.0069785118103027, 3.767500400543213, -2.800232410430908, 1.3681391477584839, -0.3706687390804291,
             0.04224011301994324)
_LN2_F32 = 0.693147182464599609375


def log_approx(x: torch.Tensor) -> torch.Tensor:
    """ln(x) as calculate_log_body<FAST_APPROX=true> computes it: the mantissa with x's sign (setexp(x, 127))
    through _LOG_POLY, plus the exponent times ln 2; 0 gives -inf. The fast mode skips the precise mode's fix-ups,
    so a negative x gives the polynomial of its negative mantissa (a finite number, not NaN) and +inf gives
    128 ln 2 + 0 (88.72, not inf). On positive finite x it is the precise mode's value (relative error ~1e-7).
    """
    x = x.float()
    m, e = torch.frexp(x)  # x = m * 2**e, |m| in [0.5, 1)
    inf = torch.isinf(x)
    mant = torch.where(inf, torch.sign(x), 2.0 * m)  # setexp(x, 127): 1.f with x's sign; inf's mantissa is 0
    exponent = torch.where(inf, 128, e - 1).float()
    series = torch.full_like(mant, _LOG_POLY[-1])
    for c in reversed(_LOG_POLY[:-1]):
        series = series * mant + c
    return torch.where(x == 0, float("-inf"), exponent * _LN2_F32 + series)


# _init_sqrt_'s 23-bit constants (tt-llk ckernel_sfpu_sqrt.h, after Kokosinski et al. 2024): the 1/sqrt seed's magic
# number and the first refinement's polynomial
_SQRT_MAGIC, _SQRT_P1, _SQRT_P2 = 0x5F1110A0, 2.2825186, 2.2533049


def _root_approx(x: torch.Tensor, reciprocal: bool) -> torch.Tensor:
    """sqrt (or 1/sqrt) as _calculate_sqrt_body_<FAST_APPROX=true> computes it: the precise kernel without its
    negative-input fix-up, so x >= 0 gives the precise value (torch's here) and x < 0 the seed and refinements run
    on its bits: magic - (bits >> 1) as a float, y *= P1 + c (P2 + c) with c = -x y^2, then one Householder step,
    a finite number where the precise mode gives NaN."""
    x = x.float()
    bits = x.view(torch.int32).to(torch.int64) & 0xFFFFFFFF  # the unsigned word SFPSHFT shifts
    y = ((_SQRT_MAGIC - (bits >> 1)) & 0xFFFFFFFF).to(torch.int64)
    y = torch.where(y >= 2**31, y - 2**32, y).to(torch.int32).view(torch.float32)
    c = -y * (x * y)
    y = y * (_SQRT_P1 + c * (_SQRT_P2 + c))
    xy = x * y
    residual = 1.0 + (-y * xy)
    refined = residual * (0.5 * y) + y if reciprocal else residual * (0.5 * xy) + xy
    return torch.where(x < 0, refined, torch.rsqrt(x) if reciprocal else torch.sqrt(x))


def erf_approx(x: torch.Tensor) -> torch.Tensor:
    """erf as Wormhole's calculate_erf_body computes it (ckernel_sfpu_erf_erfc.h): on |x| a degree-4 polynomial
    over [0, 1) and another over [1, 3), 1 from 3 on, the sign put back; max absolute error 8e-4 (just below 3)."""
    a = x.float().abs()

    def poly(c4, c3, c2, c1, c0):  # POLYVAL5's Horner order
        return (((c4 * a + c3) * a + c2) * a + c1) * a + c0

    low = poly(0.166342190, -0.476685015, 0.0275416549, 1.12544048, 0.0000661338118)
    high = poly(-0.03170029, 0.31310241, -1.1603072, 1.91684792, -0.19469693)
    r = torch.where(a >= 3.0, 1.0, torch.where(a >= 1.0, high, low))
    return torch.where(x < 0, -r, r)


APPROX = {"exp": exp_approx, "sigmoid": sigmoid_approx, "tanh": tanh_approx, "gelu": gelu_approx, "erf": erf_approx,
          "sqrt": lambda x: _root_approx(x, reciprocal=False), "rsqrt": lambda x: _root_approx(x, reciprocal=True),
          "reciprocal": reciprocal_approx, "log": log_approx,
          # log_with_base_tile: the same body times 1/ln 2 or 1/ln 10; log1p_tile: the log of 1 + x, whose fast
          # mode skips the same NaN fix-up for 1 + x < 0
          "log2": lambda x: log_approx(x) * (1.0 / math.log(2.0)),
          "log10": lambda x: log_approx(x) * (1.0 / math.log(10.0)),
          "log1p": lambda x: log_approx(x.float() + 1.0)}
