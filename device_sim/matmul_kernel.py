"""Which torch kernel computes a default bfloat16 matmul: torch's bfloat16 kernel where its result obeys
device_sim's rule, else the float32 one.

    import torch
    from device_sim import matmul_kernel
    a, b = torch.randn(256, 256).bfloat16(), torch.randn(256, 256).bfloat16()
    y = matmul_kernel.bf16_product(a, b)   # bfloat16 [256, 256], or None: then compute in float32

The rule of an exact matmul (docs/numerics.md, "The default kernel"): the products exact, summed in
float32, the sum rounded once to bfloat16, nearest even. The float32 path obeys it by construction
(bfloat16 operands widened, torch's float32 matmul, .bfloat16()); so does torch's bfloat16 kernel
(oneDNN's AMX / AVX512-BF16 code here: float32 accumulators, one RNE conversion), but in its own
order of the float32 sums, so 1 in ~5,000 outputs of a 1024^3 randn product is one bfloat16 ulp
apart from the float32 path's (bench/README.md, "Issue 14, round 6"), and 6-8x faster. A bias of one
value per column goes through torch.addmm, which adds it to the float32 sums before the rounding, as the
float32 path does. Two things keep it to the rule:
- a probe, once a process, on inputs whose every partial sum is exact in float32: a kernel that
  rounds products or partial sums to bfloat16, or rounds other than to nearest even (or, for addmm,
  before the bias), gives other values than the float32 path there and is not used (other CPUs run
  other kernels);
- a guard on each call: the kernel treats float32 denormals as zero (its inputs, products and
  partial sums), the float32 path does not. Every product and partial sum of a matmul is a multiple
  of the product of the operands' smallest quanta, 2**(ea - 134) * 2**(eb - 134) for the smallest
  nonzero magnitudes' exponent fields ea and eb; the kernel runs only when both are normal (ea,
  eb >= 1) and that quantum is at least float32's smallest normal, 2**-126: ea + eb >= 142.
  Typical values pass (randn's least magnitude of a million is ~1e-6, ea ~107); values below
  ~2**-60 in both operands go to float32.
And one condition of speed: the kernel must be at least twice as fast as the float32 path (kernel_taken()).
On a CPU without AMX or AVX512-BF16 (an AVX2-only EPYC, say) torch's bfloat16 matmul obeys the rule but is
50-110x slower than the float32 path (a [1, 128, 768] @ [768, 3072] linear: 600 ms against 8.8), so there the
float32 path runs.
"""

from __future__ import annotations

import functools
import os
import time

import torch

try:
    import device_sim._native as _native
except ImportError:  # built without a C compiler: the torch guard below
    _native = None
if os.environ.get("DEVICE_SIM_PURE", "") not in ("", "0"):
    _native = None

# Below 128^3 multiply-adds the bfloat16 kernel's fixed cost (~17 us a call here, against ~6 us for a 32^3
# float32 product with its widenings) makes float32 the faster path; at 128^3 they tie (23 against 33 us),
# at 256^3 bfloat16 is 5x faster (0.044 against 0.22 ms). Thread time, one torch thread.
MIN_MACS = 128**3
# ea + eb >= this keeps every nonzero product and partial sum at or above 2**-126 (module docstring).
_MIN_EXPONENT_SUM = 142
_ALL_ZERO = 0x8000  # a min magnitude of 15 bits: none of the values is nonzero
# A bias's least quantum, 2**(e - 134), at least 2**-126: partial sums that include it stay normal too.
_MIN_BIAS_EXPONENT = 8


def bf16_product(a: torch.Tensor, b: torch.Tensor, transpose_a: bool = False, transpose_b: bool = False,
                 bias: torch.Tensor | None = None) -> torch.Tensor | None:
    """a @ b (each transposed first as asked), plus `bias`, as torch's bfloat16 kernel computes it, when that
    obeys the rule here; None when the caller must compute in float32 (small products, denormals in reach,
    other kernels, a bias other than one value per output column).

    Args:
        a, b: bfloat16 torch tensors of 2 or more dims whose shapes multiply (the caller checked them).
        bias: bfloat16, one value per column of the product ([N], [1, N], ...): added to the float32 sums
            before their one rounding (torch.addmm), as the float32 path adds it; b must then be 2-D.
    """
    # the size first: most calls of a model are small, and this is 0.15 us of their 15 (a 32^3 product)
    if b.dim() < 2 or a.numel() * b.size(-2 if transpose_b else -1) < MIN_MACS or a.dim() < 2:
        return None
    if a.dtype is not torch.bfloat16 or b.dtype is not torch.bfloat16 or not kernel_taken() \
            or not no_denormals(a, b):
        return None
    a, b = (a.transpose(-2, -1) if transpose_a else a), (b.transpose(-2, -1) if transpose_b else b)
    if bias is None:
        return torch.matmul(a, b)
    n = b.shape[-1]
    if (b.dim() != 2 or bias.dtype is not torch.bfloat16 or bias.numel() != n or bias.shape[-1] != n
            or bias.dim() > a.dim()  # [1, 1, N] on a 2-D product widens it: the float32 path says how
            or not bias_kernel_taken() or min_magnitude(bias) >> 7 < _MIN_BIAS_EXPONENT):
        return None
    y = torch.addmm(bias.reshape(n), a.reshape(-1, a.shape[-1]), b)  # [..., M, K] as [... * M, K]: one matrix
    return y.view(*a.shape[:-1], n)


def no_denormals(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether no product or float32 partial sum of a @ b can be a float32 denormal, and no input is one."""
    ea, eb = min_magnitude(a) >> 7, min_magnitude(b) >> 7  # exponent fields; all zeros read as 256
    return ea >= 1 and eb >= 1 and ea + eb >= _MIN_EXPONENT_SUM


# A tensor this many elements or more keeps its min_magnitude (a model's weights: the same torch tensor in every
# call). The scan reads every value (~0.3 ns each): 4 linears' weights of BERT-base, 2.7 ms of a 12.6 ms layer.
_KEEP_MIN_ELEMENTS = 1 << 16


def min_magnitude(t: torch.Tensor) -> int:
    """The least magnitude among t's nonzero bfloat16 values as its 15 bits (sign dropped), 0x8000 if none.

    A large tensor keeps it in an attribute, with torch's version counter, which every in-place change to it or
    to a view of its storage moves on: a tensor changed since is scanned again."""
    big = t.numel() >= _KEEP_MIN_ELEMENTS
    if big:
        kept = getattr(t, "_device_sim_min_magnitude", None)
        if kept is not None and kept[0] == t._version:
            return kept[1]
    if _native is not None and t.is_contiguous():
        m = _native.bf16_min_magnitude(t.data_ptr(), t.numel())  # t is held by the caller for the call
    elif t.numel() == 0:
        return _ALL_ZERO
    else:
        # (bits - 1) & 0x7FFF sends +-0 (0x0000, 0x8000 as int16 -32768) to 0x7FFF, above every other magnitude.
        m = int(((t.view(torch.int16) - 1) & 0x7FFF).min()) + 1
    if big:
        t._device_sim_min_magnitude = (t._version, m)
    return m


@functools.cache
def kernel_taken() -> bool:
    """Whether bf16_product runs torch's bfloat16 matmul here: it is faster and obeys the rule. Once a process
    (the speed first: where the kernel is slow, its probe would cost another ~25 ms)."""
    return kernel_faster(torch.matmul) and kernel_obeys_rule()


@functools.cache
def bias_kernel_taken() -> bool:
    """Whether bf16_product runs torch.addmm for a bias (kernel_taken() first): the same two questions."""
    return kernel_faster(lambda a, b: torch.addmm(b[0], a, b)) and bias_kernel_obeys_rule()


# The bfloat16 kernel is taken only where it is at least this many times faster than the float32 path on a
# 256^3 product: 5x on the AMX machine of round 6 (0.044 against 0.22 ms), 60x slower on an AVX2-only EPYC
# (24 against 0.39 ms). A margin that wide keeps timing noise from choosing one kernel in one process and the
# other in the next (their outputs differ in ~1 of 5,000 values: the order of the float32 sums).
MIN_SPEEDUP = 2.0
_SPEED_SIZE = 256


def kernel_faster(product) -> bool:
    """Whether `product(a, b)` of two bfloat16 256 x 256 matrices takes at most 1/MIN_SPEEDUP of the float32
    path's time (widen both, torch.matmul, round). Each is called once untimed (a kernel's first call may build
    it), then timed best of 3; a kernel slower than the float32 path on its first timed call is not timed again
    (the slow ones cost ~25 ms a call). Wall time: torch's own threads work for the call too."""
    g = torch.Generator().manual_seed(16)
    a = torch.randn(_SPEED_SIZE, _SPEED_SIZE, generator=g).bfloat16()
    b = torch.randn(_SPEED_SIZE, _SPEED_SIZE, generator=g).bfloat16()

    def seconds(f) -> float:
        start = time.perf_counter()
        f()
        return time.perf_counter() - start

    def float32_path():
        return torch.matmul(a.float(), b.float()).bfloat16()

    def kernel():
        return product(a, b)

    float32_path(), kernel()
    reference = min(seconds(float32_path) for _ in range(3))
    best = seconds(kernel)
    if best > reference:
        return False
    best = min(best, *(seconds(kernel) for _ in range(2)))
    return best * MIN_SPEEDUP <= reference


@functools.cache
def kernel_obeys_rule() -> bool:
    """Whether torch's bfloat16 matmul, on this machine and torch, passes probe(): asked once a process."""
    return probe(torch.matmul)


@functools.cache
def bias_kernel_obeys_rule() -> bool:
    """Whether torch.addmm of bfloat16 tensors passes probe_bias(): asked once a process."""
    return probe_bias(torch.addmm)


def probe_bias(addmm) -> bool:
    """Whether `addmm(bias, a, b)` of bfloat16 tensors adds the bias to the float32 sums before their one
    rounding, on probe()'s operands and a bias of multiples of 1/16 (every sum exact in float32): bias[0] =
    2**-9 takes row 2's 1 + 2**-8 (a tie, to 1 if rounded first) to 1 + 3 * 2**-9, which rounds once to
    1 + 2**-7. A kernel that rounds the product before adding the bias gives 1 there."""
    a, b = _probe_operands()
    bias = torch.randint(-16, 17, (b.shape[1],), generator=torch.Generator().manual_seed(15)) / 16
    bias[0] = 2.0**-9
    bias = bias.bfloat16()
    expected = (torch.matmul(a.float(), b.float()) + bias.float()).bfloat16()
    assert expected[2, 0] == 1 + 2.0**-7, "the probe's own sums must be exact"
    return torch.equal(addmm(bias, a, b), expected)


def probe(matmul) -> bool:
    """Whether `matmul` of two bfloat16 tensors gives the float32 path's values on a probe whose every partial
    sum is exact in float32, so that only the order of the sums could tell such a kernel's results apart.

    Its rows catch the departures: products rounded to bfloat16 before the sum, partial sums kept in bfloat16
    (over blocks of any size), a final rounding other than to nearest even (two ties, one to each side). 128 x 520
    @ 520 x 128 (K not a multiple of 32, MACs at MIN_MACS's size class); ~0.1 ms once a process.
    """
    a, b = _probe_operands()
    expected = torch.matmul(a.float(), b.float()).bfloat16()
    assert expected[0, 0] == 2 and expected[1, 1] == 2.0**-14, "the probe's own sums must be exact"
    return torch.equal(matmul(a, b), expected)


def _probe_operands() -> tuple[torch.Tensor, torch.Tensor]:
    m, k = 128, 520
    a, b = torch.zeros(m, k), torch.zeros(k, m)
    b[:, 0] = 1
    a[0, 0], a[0, 1:513] = 1, 2.0**-9  # 1 + 512 * 2**-9 = 2: a bfloat16 running sum stays at 1
    a[1, 0], a[1, 1] = 1 + 2.0**-7, -(1 + 2.0**-6)  # with b[0, 1] = 1 + 2**-7: 2**-14 from exact products only
    b[0, 1], b[1, 1] = 1 + 2.0**-7, 1
    a[2, 0], a[2, 1] = 1, 2.0**-8  # 1 + 2**-8: a tie, to even 1
    a[3, 0], a[3, 1] = 1 + 2.0**-7, 2.0**-8  # 1 + 3 * 2**-8: a tie, to even 1 + 2**-6
    # The other rows and columns: random multiples of 1/16 times random integers, 5 significant bits each, so
    # every partial sum is a multiple of 1/16 below 2**14, exact in float32 in any order but not in bfloat16:
    # a bfloat16 running total over blocks of any size would lose its low bits.
    g = torch.Generator().manual_seed(14)
    a[4:, :] = torch.randint(-16, 17, (m - 4, k), generator=g) / 16
    b[:, 2:] = torch.randint(-16, 17, (k, m - 2), generator=g)
    return a.bfloat16(), b.bfloat16()
