"""One function that compares two tensors and returns every figure at once.

    r = compare_tensors(actual, golden)            # torch, numpy (ttreport.ptfile's) or device_sim tensors
    r.passed, r.reason, r.pcc, r.max_abs_error, r.mismatched_text, r.worst_index ...

The policies, in one place:

- **Pass rule.** A comparison passes when both checks hold:
  closeness — no element outside ``atol + rtol*|golden|`` (and no NaN/inf mismatch), and
  correlation — PCC >= ``desired_pcc`` (0.9999 by default) wherever PCC is defined.
  ``pcc_ok`` and ``close_ok`` keep the two verdicts apart for callers that judge by one
  (golden mode judges accumulated drift by PCC alone). To judge by PCC alone, pass
  ``rtol=math.inf``; to judge by closeness alone, pass ``pcc=-1``.
- **Constant tensors.** PCC is undefined when either tensor has zero variance; the verdict
  then falls back to closeness and ``pcc`` is reported as 1.0 if every element is close and
  NaN otherwise, never 1.0 for a mismatch. Empty tensors of equal shape pass the same way.
- **NaN and inf.** Positions where either value is not finite take no part in the error
  figures or PCC. There, inf matches only inf of the same sign, and NaN matches NaN only
  with ``equal_nan=True``; every other pair is a mismatch, counted in ``mismatched``, fails
  the comparison and makes ``max_abs_error`` NaN (a NaN was involved) or inf. The worst
  index then points at the first such pair. NaN is never turned into a number.
- **Shape or dtype-category mismatch** (float vs integer vs bool, or complex) gives a failed
  result with the reason, not an exception.
- **Tolerances** default per dtype: ``dtype=`` (a device dtype like ``"bfloat8_b"``, a
  ``DataType`` or a torch dtype) or else the looser of the two tensors' own dtypes (a
  device_sim tensor gives its device dtype). torch.testing's defaults for IEEE floats; for
  block floats, whose small values keep only a few bits relative to the largest value of
  their 16-value block, ``atol`` scales with the golden's largest magnitude (see TOLERANCES).
- **max_rel_error** is max ``|a-g|/|g|`` as torch.testing defines it: 0/0 counts as 0 and
  x/0 as inf. **max_ulp** is max ``|a-g| / ulp(g)`` where ``ulp(g)`` is the spacing of the
  actual's IEEE dtype at the golden's magnitude (the smallest subnormal spacing at 0); it is
  None for block floats and integers, where an ULP has no fixed meaning.
- **worst_index** is where ``|a-g|`` is largest (as torch.testing reports it).

Speed and memory: one pass over fixed-size chunks. A contiguous bfloat16/float32 chunk is read
once by ttreport/_fold.c (no copies, every total in one loop: bench 5, ~18x a naive torch PCC);
other chunks, and all of them with TTREPORT_PURE=1 or no compiler, go through numpy with a
handful of reused float32 work buffers (float64 for float64 or integer inputs). Per-chunk sums
are merged in float64 with Chan's formulas, so PCC keeps about 1e-7 accuracy however large the
tensor. Chunks holding NaN/inf (found from their sums, not by a mask on every chunk) take a
slower exact path. Up to one thread per CPU takes chunks in turn (see _fold_all).

The work is numpy's, never torch's: a torch tensor's memory is read through numpy without a copy
(ttreport.ptfile.array_of; bfloat16, which numpy has no dtype for, as its uint16 bits), so values read
from report files (ptfile.read_array) are compared with no torch imported (`ttreport compare`: bench 12).
"""

from __future__ import annotations

import math
import os
import sys
import threading
from dataclasses import asdict, dataclass

import numpy as np

from ttreport.ptfile import BFloat16Bits, array_dtype, array_of

DEFAULT_PCC = 0.9999
try:  # one pass per chunk in C (ttreport/_fold.c); the numpy path below is its fallback and its reference
    from ttreport import _fold
except ImportError:  # no compiler at install
    _fold = None
NATIVE = _fold is not None and os.environ.get("TTREPORT_PURE", "") in ("", "0")

CHUNK = 1 << 18  # elements per chunk: four float32 buffers stay in L2-sized memory; see bench/

# dtype name -> (rtol, atol, atol as a fraction of max|golden|)
TOLERANCES = {
    "float64": (1e-7, 1e-7, 0.0),
    "float32": (1.3e-6, 1e-5, 0.0),
    "float16": (1e-3, 1e-5, 0.0),
    "bfloat16": (1.6e-2, 1e-5, 0.0),
    # A block float rounds each value to a step of about 2**-(mantissa bits - 1) of its block's
    # largest value: 2**-6 (bfloat8_b, 7 bits) and 2**-2 (bfloat4_b, 3 bits). Twice the worst
    # rounding error of a correctly rounded value, relative to the tensor's largest value.
    "bfloat8_b": (2.0**-6, 1e-5, 2.0**-6),
    "bfloat4_b": (2.0**-2, 1e-5, 2.0**-2),
    "int": (0.0, 0.0, 0.0),
    "bool": (0.0, 0.0, 0.0),
}
# Coarser first; a comparison between two dtypes defaults to the coarser one's tolerances.
_COARSENESS = ["bfloat4_b", "bfloat8_b", "bfloat16", "float16", "float32", "float64", "int", "bool"]
# IEEE dtype name -> (mantissa bits without the implicit one, smallest normal exponent)
_IEEE = {"float64": (52, -1022), "float32": (23, -126), "float16": (10, -14), "bfloat16": (7, -126)}


@dataclass(frozen=True, slots=True)
class Comparison:
    passed: bool
    reason: str
    pcc: float  # NaN where undefined and not every element is close
    max_abs_error: float
    mean_abs_error: float
    max_rel_error: float
    mismatched: int  # elements outside atol + rtol*|golden|, NaN/inf mismatches included
    mismatched_fraction: float
    numel: int
    max_ulp: float | None
    worst_index: tuple[int, ...] | None
    worst_actual: float | None
    worst_golden: float | None
    shapes: tuple[tuple[int, ...], tuple[int, ...]]
    dtypes: tuple[str, str]
    rtol: float
    atol: float
    desired_pcc: float
    pcc_ok: bool
    close_ok: bool

    @property
    def status(self) -> str:
        return "pass" if self.passed else "fail"

    @property
    def mismatched_text(self) -> str:
        """"3 of 1,048,576 (<0.01%)": a fraction that never rounds a real mismatch to 0%."""
        return f"{self.mismatched:,} of {self.numel:,} ({format_fraction(self.mismatched, self.numel)})"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["status"] = self.status
        d["shapes"] = [list(s) for s in self.shapes]
        d["worst_index"] = list(self.worst_index) if self.worst_index is not None else None
        d["dtypes"] = list(self.dtypes)
        return d

    def __str__(self) -> str:
        return f"{self.status}: {self.reason}"


def format_fraction(count: int, total: int) -> str:
    """A percentage that shows '<0.01%' rather than 0% for a few, and '>99.99%' rather than 100% for most."""
    if total == 0 or count == 0:
        return "0%"
    pct = 100.0 * count / total
    if count == total:
        return "100%"
    if pct < 0.01:
        return "<0.01%"
    if pct > 99.99:
        return ">99.99%"
    return f"{pct:.2f}%"


def dtype_name(dtype) -> str:
    """'bfloat16', 'bfloat8_b', 'float32', 'int', 'bool', ... from a DataType, a torch or numpy dtype or a name."""
    torch = sys.modules.get("torch")  # a torch.dtype exists only once torch is imported: never imported here
    if torch is not None and isinstance(dtype, torch.dtype):
        if dtype == torch.bool:
            return "bool"
        if dtype.is_floating_point or dtype.is_complex:
            return str(dtype).removeprefix("torch.")
        return "int"
    name = getattr(dtype, "name", dtype)  # device_sim DataType is an IntEnum with .name
    if not isinstance(name, str):
        raise TypeError(f"dtype must be a device or torch dtype or its name, got {dtype!r}")
    name = name.removeprefix("DataType.").removeprefix("torch.").lower()
    if name in ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"):
        return "int"
    if name not in TOLERANCES and name not in ("complex64", "complex128"):
        raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(TOLERANCES)}")
    return name


def coarser_dtype(a: str, b: str) -> str:
    return min(a, b, key=lambda n: _COARSENESS.index(n) if n in _COARSENESS else len(_COARSENESS))


def finer_dtype(a: str, b: str) -> str:
    return max(a, b, key=lambda n: _COARSENESS.index(n) if n in _COARSENESS else -1)


def _as_array(x, what: str) -> tuple[np.ndarray, str, bool]:
    """(x's values as a plain numpy array, its dtype's name, whether the array holds bfloat16 bits)."""
    torch = sys.modules.get("torch")  # a torch tensor exists only once torch is imported: never imported here
    if torch is not None and isinstance(x, torch.Tensor):
        values = array_of(x)
        name = dtype_name(x.dtype)
    elif isinstance(x, np.ndarray):
        values, name = x, dtype_name(array_dtype(x))
    elif torch is not None and isinstance(getattr(x, "value", None), torch.Tensor) and x.dtype is not None:
        values, name = array_of(x.value), dtype_name(x.dtype)  # a device_sim tensor: its device dtype's tolerances
    else:
        raise TypeError(
            f"compare_tensors: {what} must be a torch tensor, a numpy array or a device_sim tensor, "
            f"got {type(x).__name__}; wrap data with torch.as_tensor(...)"
        )
    return np.asarray(values), name, isinstance(values, BFloat16Bits)


def _category(x: np.ndarray, bf16: bool) -> str:
    kind = "f" if bf16 else x.dtype.kind
    return {"b": "bool", "c": "complex", "f": "float"}.get(kind, "integer")


def _floats(x: np.ndarray, bf16: bool, dtype=np.float64) -> np.ndarray:
    """x's values as a new array of `dtype` (bfloat16 bits widened exactly)."""
    if bf16:
        x = BFloat16Bits.float32(x)  # also a plain array's bits (_as_array drops the subclass)
    return x.astype(dtype)


def _widen(x: np.ndarray, bf16: bool, out: np.ndarray) -> None:
    """x's values into the work buffer `out` (bfloat16 bits into a float32 buffer with no temporary)."""
    if bf16 and out.dtype == np.float32:
        np.left_shift(x, 16, out=out.view(np.uint32), dtype=np.uint32)
    elif bf16:
        np.copyto(out, _floats(x, True, np.float32))
    else:
        np.copyto(out, x, casting="unsafe")


def _element(x: np.ndarray, bf16: bool, index: tuple[int, ...]):
    """The value at `index` as a Python number (bfloat16 bits as the float they stand for)."""
    return _floats(x[index].reshape(1), True, np.float32)[0].item() if bf16 else x[index].item()


def compare_tensors(actual, golden, *, rtol: float | None = None, atol: float | None = None,
                    pcc: float | None = None, equal_nan: bool = True, dtype=None,
                    chunk_size: int = CHUNK) -> Comparison:
    """Compare `actual` with `golden` (the reference); see the module docstring for every policy."""
    a, a_name, a_bf16 = _as_array(actual, "actual")
    g, g_name, g_bf16 = _as_array(golden, "golden")
    name = dtype_name(dtype) if dtype is not None else coarser_dtype(a_name, g_name)
    d_rtol, d_atol, atol_scale = TOLERANCES.get(name, TOLERANCES["float64"])
    if atol is not None:
        atol_scale = 0.0
    rtol = float(d_rtol if rtol is None else rtol)
    atol = float(d_atol if atol is None else atol)
    desired = DEFAULT_PCC if pcc is None else float(pcc)
    base = dict(numel=a.size, shapes=(tuple(a.shape), tuple(g.shape)), dtypes=(a_name, g_name),
                rtol=rtol, atol=atol, desired_pcc=desired)

    if a.shape != g.shape:
        return _failed(base, f"shape mismatch: actual {list(a.shape)} vs golden {list(g.shape)}")
    ca, cg = _category(a, a_bf16), _category(g, g_bf16)
    if ca != cg:
        return _failed(base, f"dtype mismatch: actual is {ca} ({a_name}), golden is {cg} ({g_name}); "
                             f"convert one (e.g. golden.to(actual.dtype)) to compare values")
    if ca == "complex":
        return _failed(base, "complex tensors are not supported; compare .real and .imag separately")
    if a.size == 0:
        return Comparison(passed=True, reason=f"both empty, shape {list(a.shape)}", pcc=1.0, max_abs_error=0.0,
                          mean_abs_error=0.0, max_rel_error=0.0, mismatched=0, mismatched_fraction=0.0,
                          max_ulp=0.0 if name in _IEEE else None, worst_index=None, worst_actual=None,
                          worst_golden=None, pcc_ok=True, close_ok=True, **base)

    ulp_name = dtype_name(dtype) if dtype is not None else a_name
    work = np.float32 if ca == "float" and max(a.itemsize, g.itemsize) <= 4 else np.float64
    # With a scaled atol the threshold is known only after the pass: count in a second pass if needed.
    chunk = max(1, int(chunk_size))
    acc = _fold_all(a, g, chunk, lambda: _Accumulator(
        work, rtol, math.inf if atol_scale else atol, equal_nan, _IEEE.get(ulp_name), chunk,
        need_max_golden=bool(atol_scale), bf16=(a_bf16, g_bf16)))
    if atol_scale:
        atol = atol + atol_scale * acc.max_abs_golden
        base["atol"] = atol
        acc.atol = atol
        if acc.max_excess > atol:  # rare: the scaled atol was unknown during the pass, count now
            acc.mismatched = acc.nonfinite_mismatched
            for _, xa, xg in _chunks(a, g, acc.chunk):
                acc.count_outside(xa, xg)
    return _result(acc, a, g, base)


def _failed(base: dict, reason: str) -> Comparison:
    nan = math.nan
    return Comparison(passed=False, reason=reason, pcc=nan, max_abs_error=nan, mean_abs_error=nan,
                      max_rel_error=nan, mismatched=base["numel"], mismatched_fraction=1.0 if base["numel"] else 0.0,
                      max_ulp=None, worst_index=None, worst_actual=None, worst_golden=None,
                      pcc_ok=False, close_ok=False, **base)


def _fold_all(a: np.ndarray, g: np.ndarray, chunk: int, make) -> _Accumulator:
    """Fold every chunk into accumulators made by `make`: one per thread, merged at the end.

    Up to one thread per CPU this process may run on (the caller's among them) takes whole chunks
    in turn: the C pass and numpy's loops let go of the GIL, and a whole chunk per thread meets no
    barrier after each small op (splitting each op across threads collapsed on shared cores).
    """
    chunks = _chunks(a, g, chunk)
    n_chunks = -(-a.size // chunk)
    if n_chunks == 1:  # the common small tensor: no threads to start or settings to change
        acc = make()
        for lo, xa, xg in chunks:
            acc.add(xa, xg, lo)
        return acc
    lock = threading.Lock()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    accs = [make() for _ in range(min(cpus, n_chunks))]
    errors = []

    def fold(acc: _Accumulator) -> None:
        try:
            while True:
                with lock:  # a strided input copies the chunk here, one at a time
                    item = next(chunks, None)
                if item is None:
                    return
                acc.add(item[1], item[2], item[0])
        except BaseException as e:  # re-raised by the caller below
            errors.append(e)

    threads = [threading.Thread(target=fold, args=(acc,), name="ttreport-compare") for acc in accs[1:]]
    for t in threads:
        t.start()
    try:
        fold(accs[0])
    finally:
        for t in threads:
            t.join()
    if errors:
        raise errors[0]
    for other in accs[1:]:
        accs[0].merge(other)
    return accs[0]


def _chunks(a: np.ndarray, g: np.ndarray, size: int):
    """(flat offset, actual chunk, golden chunk), 1-D; only one chunk is ever copied at a time."""
    n = a.size
    if (a.flags.c_contiguous and g.flags.c_contiguous) or a.ndim == 0:
        fa, fg = a.reshape(-1), g.reshape(-1)
        for lo in range(0, n, size):
            yield lo, fa[lo:lo + size], fg[lo:lo + size]
        return
    row = n // a.shape[0]  # strided input: whole rows of the first dimension per chunk
    per = max(1, size // max(row, 1))
    for r in range(0, a.shape[0], per):
        yield r * row, a[r:r + per].reshape(-1), g[r:r + per].reshape(-1)


class _Accumulator:
    """Running totals over the finite (actual, golden) pairs, chunk by chunk."""

    def __init__(self, work: type, rtol: float, atol: float, equal_nan: bool, ieee, chunk: int, *,
                 need_max_golden: bool, bf16: tuple[bool, bool] = (False, False)):
        self.work, self.rtol, self.atol, self.equal_nan, self.chunk = work, rtol, atol, equal_nan, chunk
        self.need_max_golden = need_max_golden  # for an atol that scales with max|golden|
        self.bf16 = bf16  # whether the actual's and the golden's chunks hold bfloat16 bits
        # ulp(g) = max(2**exponent(g), smallest normal) * 2**-mantissa_bits; the last factor is applied at the end
        self.ulp = (ieee[0], 2.0 ** ieee[1]) if ieee else None
        self.buffers = None
        self.n = 0  # finite pairs so far
        self.mean_a = self.mean_g = self.m2a = self.m2g = self.m2d = 0.0
        self.sum_abs = 0.0
        self.max_abs = -1.0
        self.worst = None  # flat index of max |a-g|
        self.max_rel = 0.0
        self.max_ulp = 0.0
        self.max_excess = -math.inf  # max of |a-g| - rtol*|g|
        self.max_abs_golden = 0.0
        self.mismatched = 0
        self.nonfinite_mismatched = 0
        self.nonfinite_nan = False  # a NaN took part in a non-finite mismatch
        self.first_nonfinite = None
        self.overflow = False

    def _buffers(self, n: int):
        if self.buffers is None or self.buffers[0].size < n:
            self.buffers = [np.empty(n, dtype=self.work) for _ in range(5)]  # the first chunk is the largest
        return [b[:n] for b in self.buffers]

    def add(self, xa: np.ndarray, xg: np.ndarray, offset: int) -> None:
        n = xa.size
        if NATIVE and self.work is np.float32 and xa.flags.c_contiguous and xg.flags.c_contiguous:
            a_bf16, g_bf16 = _fold_as(xa, self.bf16[0]), _fold_as(xg, self.bf16[1])
            if a_bf16 is not None and g_bf16 is not None:
                self._add_native(xa, a_bf16, xg, g_bf16, n, offset)
                return
        fa, fg, d, ag, e = self._buffers(n)
        _widen(xa, self.bf16[0], fa)
        _widen(xg, self.bf16[1], fg)
        if not self._fold(fa, fg, d, ag, e, offset, None):
            self._add_exact(xa, xg, offset)

    def _add_native(self, xa, a_bf16: bool, xg, g_bf16: bool, n: int, offset: int) -> None:
        """The chunk's totals from ttreport/_fold.c's one pass over it as it is (bfloat16 or float32)."""
        check = math.isfinite(self.rtol)
        totals = _fold.fold(xa.ctypes.data, a_bf16, xg.ctypes.data, g_bf16, n, self.rtol if check else 0.0,
                            self.atol, self.ulp[1] if self.ulp is not None else 0.0, self.max_abs)
        if totals is None:  # a NaN or an inf among the chunk's values
            self._add_exact(xa, xg, offset)
            return
        self._take(n, totals, lambda: (_floats(xa, self.bf16[0]), _floats(xg, self.bf16[1])), offset)

    def _add_exact(self, xa: np.ndarray, xg: np.ndarray, offset: int) -> None:
        """The rare chunk with a NaN or inf, or whose float32 sums overflow: float64, with masks."""
        a, g = _floats(xa, self.bf16[0]), _floats(xg, self.bf16[1])
        finite = np.isfinite(a) & np.isfinite(g)
        keep = None
        if not finite.all():
            bad = np.flatnonzero(~finite)
            va, vg = a[bad], g[bad]
            same = va == vg  # inf == inf of the same sign; NaN never equals NaN
            if self.equal_nan:
                same |= np.isnan(va) & np.isnan(vg)
            wrong = bad[~same]
            if wrong.size:
                self.nonfinite_mismatched += wrong.size
                self.mismatched += wrong.size
                self.nonfinite_nan |= bool((np.isnan(va) | np.isnan(vg))[~same].any())
                if self.first_nonfinite is None:
                    self.first_nonfinite = offset + int(wrong[0])
            keep = np.flatnonzero(finite)
            if keep.size == 0:
                return
            a, g = a[keep], g[keep]
        d, ag, e = np.empty_like(a), np.empty_like(a), np.empty_like(a)
        if not self._fold(a, g, d, ag, e, offset, keep):
            self.overflow = True  # only float64 values beyond ~1e150 get here

    def _fold(self, fa, fg, d, ag, e, offset, index) -> bool:
        """Fold one chunk of finite pairs into the totals; False, folding nothing, if a sum is not finite.

        fa, fg: the chunk in the work dtype; d, ag, e: work buffers; index: the flat positions of the pairs
        within the chunk when some were left out. Each step rounds as ttreport/_fold.c's (d - rtol |g| is a
        product, then a difference: no fused multiply-add), so both give the same maxima and counts.
        """
        n = fa.size
        with np.errstate(all="ignore"):  # an overflow is found from the sums below; x/0 is inf by design
            sa, sg = float(fa.sum()), float(fg.sum())
            saa, sgg = _dot(fa), _dot(fg)
            np.subtract(fa, fg, out=d)
            np.abs(d, out=d)
            sdd = _dot(d)
            if not math.isfinite(sa + sg + saa + sgg + sdd):
                return False
            dmax = float(d.max())
            worst = -1  # only when it beats the max so far, as the C pass (argmax is a second pass)
            if dmax > self.max_abs:
                i = int(d.argmax())
                worst = int(index[i]) if index is not None else i
            sd = float(d.sum())
            np.abs(fg, out=ag)
            gmax = float(ag.max()) if self.need_max_golden else 0.0
            emax, count = -math.inf, 0
            if math.isfinite(self.rtol):  # rtol=inf turns the closeness check off
                np.multiply(ag, self.rtol, out=e)
                np.subtract(d, e, out=e)
                emax = float(e.max())
                atol = float(self.work(self.atol))  # the C pass's float32 atol, for a float32 chunk
                if emax > atol:
                    count = int(np.count_nonzero(e > atol))
            # 0/0 counts as 0 and x/0 as inf: fmax's max leaves the NaNs of 0/0 out (nan_to_num's pass was 1 ms a
            # chunk, a third of the chunk's time), and d / |g| >= 0, so only an all-0/0 chunk needs its 0.
            np.divide(d, ag, out=e)
            rmax = float(np.fmax.reduce(e))
            rmax = 0.0 if math.isnan(rmax) else rmax
            umax = 0.0
            if self.ulp is not None:
                bits, mask = (np.int32, 0x7F800000) if fg.dtype == np.float32 else (np.int64, 0x7FF << 52)
                np.bitwise_and(fg.view(bits), mask, out=e.view(bits))
                np.maximum(e, self.ulp[1], out=e)
                np.divide(d, e, out=e)
                umax = float(e.max())
        self._take(n, (sa, sg, saa, sgg, sdd, sd, dmax, worst, gmax, emax, count, rmax, umax),
                   lambda: (fa.astype(np.float64), fg.astype(np.float64)), offset)
        return True

    def _take(self, n: int, totals: tuple, float64s, offset: int) -> None:
        """Fold one chunk's totals, as _fold (numpy) and ttreport/_fold.c (C) give them: sums of a, g, a², g², d²
        and d (d = |a - g|), max d and its flat index in the chunk (-1 unless it beats the max so far), max |g|,
        max d - rtol |g| and the count above atol, max d / |g|, max d / ulp(g) (before the mantissa factor).
        float64s: the chunk's pairs in float64, made only where the moments must be redone."""
        sa, sg, saa, sgg, sdd, sd, dmax, worst, gmax, emax, count, rmax, umax = totals
        if dmax > self.max_abs and worst >= 0:
            self.max_abs, self.worst = dmax, offset + worst
        self.sum_abs += sd
        self.max_abs_golden = max(self.max_abs_golden, gmax)
        if math.isfinite(self.rtol):
            self.max_excess = max(self.max_excess, emax)
            self.mismatched += count
        self.max_rel = max(self.max_rel, rmax)
        if self.ulp is not None:
            self.max_ulp = max(self.max_ulp, umax)
        self._moments(n, sa, sg, saa, sgg, sdd, float64s)

    def _moments(self, n, sa, sg, saa, sgg, sdd, float64s) -> None:
        # PCC from var a, var g and var(a - g): near 1 its error scales with 1 - PCC
        # rather than with the float32 rounding of a cross product. Raw sums of squares save two
        # passes; where they cancel badly (spread tiny next to the mean, constants) redo in float64.
        ma, mg, md = sa / n, sg / n, (sa - sg) / n
        m2a, m2g, m2d = saa - sa * ma, sgg - sg * mg, max(0.0, sdd - n * md * md)
        if m2a <= 1e-3 * saa or m2g <= 1e-3 * sgg:
            ma, mg, m2a, m2g, m2d = _moments64(*float64s())
        self._merge(n, ma, mg, m2a, m2g, m2d)

    def merge(self, o: _Accumulator) -> None:
        """Fold another accumulator's totals (of other chunks of the same tensors) into this one."""
        self._merge(o.n, o.mean_a, o.mean_g, o.m2a, o.m2g, o.m2d)
        self.sum_abs += o.sum_abs
        if o.max_abs > self.max_abs or (o.max_abs == self.max_abs and o.worst is not None
                                        and (self.worst is None or o.worst < self.worst)):
            self.max_abs, self.worst = o.max_abs, o.worst
        self.max_rel, self.max_ulp = max(self.max_rel, o.max_rel), max(self.max_ulp, o.max_ulp)
        self.max_excess = max(self.max_excess, o.max_excess)
        self.max_abs_golden = max(self.max_abs_golden, o.max_abs_golden)
        self.mismatched += o.mismatched
        self.nonfinite_mismatched += o.nonfinite_mismatched
        self.nonfinite_nan |= o.nonfinite_nan
        self.overflow |= o.overflow
        firsts = [i for i in (self.first_nonfinite, o.first_nonfinite) if i is not None]
        self.first_nonfinite = min(firsts) if firsts else None

    def _merge(self, n, ma, mg, m2a, m2g, m2d) -> None:
        """Chan et al.'s pairwise update of means and centered sums of squares."""
        if n == 0:
            return
        total = self.n + n
        da, dg = ma - self.mean_a, mg - self.mean_g
        f = self.n * n / total
        self.m2a += m2a + da * da * f
        self.m2g += m2g + dg * dg * f
        self.m2d += m2d + (da - dg) * (da - dg) * f
        self.mean_a += da * n / total
        self.mean_g += dg * n / total
        self.n = total

    def count_outside(self, xa: np.ndarray, xg: np.ndarray) -> None:
        a, g = _floats(xa, self.bf16[0]), _floats(xg, self.bf16[1])
        finite = np.isfinite(a) & np.isfinite(g)
        with np.errstate(all="ignore"):  # non-finite pairs are left out by `finite`
            outside = np.abs(a - g) > self.atol + self.rtol * np.abs(g)
        self.mismatched += int(np.count_nonzero(outside & finite))

    @property
    def pcc(self) -> float | None:
        if self.n < 2 or self.m2a <= 0.0 or self.m2g <= 0.0:
            return None
        sa, sg = math.sqrt(self.m2a), math.sqrt(self.m2g)
        # 2 cov = m2a + m2g - m2d, so 1 - PCC = (m2d - (sa - sg)**2) / (2 sa sg): no cancellation near 1
        return max(-1.0, min(1.0, 1.0 - (self.m2d - (sa - sg) * (sa - sg)) / (2.0 * sa * sg)))


def _moments64(a: np.ndarray, g: np.ndarray):
    """Means and centered sums of squares of a, g and a - g (float64 arrays), each in two passes."""
    ma, mg = float(a.mean()), float(g.mean())
    a, g = a - ma, g - mg
    d = a - g
    return ma, mg, _dot(a), _dot(g), _dot(d)


def _dot(x: np.ndarray) -> float:
    """x . x by numpy's own loop, not BLAS's: OpenBLAS starts its threads for every dot of a chunk, and beside
    _fold_all's threads a float64 compare of 32 MiB took 0.37-0.96 s instead of 0.07 (OPENBLAS_NUM_THREADS=1)."""
    return float(np.einsum("i,i->", x, x))


def _fold_as(x: np.ndarray, bf16: bool) -> bool | None:
    """How the C pass reads a chunk as it is: True for bfloat16 bits, False for float32, None: it does not."""
    return True if bf16 else False if x.dtype == np.float32 else None


def _result(acc: _Accumulator, a: np.ndarray, g: np.ndarray, base: dict) -> Comparison:
    numel, desired = base["numel"], base["desired_pcc"]
    # With no finite pairs left (all NaN/inf, matched or not) there is no error to measure: 0 if
    # every pair matched, NaN otherwise; a NaN/inf mismatch sets the max error to NaN or inf.
    none = 0.0 if acc.mismatched == 0 else math.nan
    max_abs, worst = (acc.max_abs, acc.worst) if acc.n else (none, None)
    if acc.nonfinite_mismatched:
        max_abs, worst = (math.nan if acc.nonfinite_nan else math.inf), acc.first_nonfinite
    close_ok = acc.mismatched == 0 and not acc.overflow
    pcc = acc.pcc
    pcc_ok = close_ok if pcc is None else pcc >= desired
    index = tuple(int(i) for i in np.unravel_index(worst, tuple(a.shape))) if worst is not None else None
    ulp = None if acc.ulp is None else (acc.max_ulp * 2.0 ** acc.ulp[0] if acc.n else none)
    r = dict(
        pcc=(1.0 if close_ok else math.nan) if pcc is None else pcc,
        max_abs_error=max_abs, mean_abs_error=acc.sum_abs / acc.n if acc.n else none,
        max_rel_error=acc.max_rel if acc.n else none, mismatched=acc.mismatched,
        mismatched_fraction=acc.mismatched / numel, max_ulp=ulp, worst_index=index,
        worst_actual=_element(a, acc.bf16[0], index) if index is not None else None,
        worst_golden=_element(g, acc.bf16[1], index) if index is not None else None,
        pcc_ok=pcc_ok, close_ok=close_ok,
    )
    r["reason"] = _reason(acc, r, pcc, desired, base["rtol"], base["atol"], numel)
    return Comparison(passed=pcc_ok and close_ok, **r, **base)


def _reason(acc, r, pcc, desired, rtol, atol, numel) -> str:
    parts = []
    tol = f"atol {atol:.3g} + rtol {rtol:.3g}*|golden|"
    if not (math.isfinite(atol) and math.isfinite(rtol)):
        tol = "no elementwise tolerance (NaN/inf checked)"
    if acc.overflow:
        parts.append("values too large for float64 sums (beyond ~1e150): rescale both to compare")
    if acc.nonfinite_mismatched:
        parts.append(f"{acc.nonfinite_mismatched:,} NaN/inf mismatch{'es' if acc.nonfinite_mismatched > 1 else ''}"
                     f" (first at {r['worst_index']}: actual {r['worst_actual']}, golden {r['worst_golden']})")
    outside = acc.mismatched - acc.nonfinite_mismatched
    if outside:
        parts.append(f"{outside:,} of {numel:,} ({format_fraction(outside, numel)}) outside {tol}")
    if pcc is None:
        why = "no finite pairs" if acc.n == 0 else "a tensor is constant"
        parts.append(f"PCC undefined ({why}), judged by closeness")
    elif pcc < desired:
        parts.append(f"PCC {pcc:.6f} < {desired}")
    else:
        parts.append(f"PCC {pcc:.6f} >= {desired}")
    if not r["close_ok"] or not r["pcc_ok"]:
        return "; ".join(parts)
    within = "no NaN/inf mismatch" if tol.startswith("no ") else f"all {numel:,} within {tol}"
    return f"{within}; {parts[-1]}"
