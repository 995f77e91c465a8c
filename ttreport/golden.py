"""Golden mode: during a capture, each op's torch golden function runs too and is compared.

    ttreport.capture("run", config=ttreport.Config(comparison="both", tensors="outputs"))

- local: the golden runs on the op's own inputs as the device held them (`.value`, float
  inputs as float32), so the comparison isolates this op's error.
- global: the golden runs on goldens carried forward from earlier ops, keyed by tensor id
  and starting from the torch tensors the model fed in (from_torch's golden is its input
  before rounding), so the comparison shows drift accumulated since then. A tensor with no
  carried golden (made before the capture, by an op whose golden raised or that has none,
  or dropped as below) starts again from its device values.

Both judge with ttreport.compare_tensors at the output's device dtype and
Config.comparison_pcc/rtol/atol. Global comparisons judge by PCC alone unless
comparison_rtol or comparison_atol is set: one op's elementwise tolerances do not bound
error accumulated over many ops (NaN/inf mismatches still fail).

Each compared output gives a row in local_/global_tensor_comparison_records (TT-NN's
columns; `matches` is ttreport's pass) and one in tensor_comparisons with every metric and a
status: pass, fail, golden_error (the golden raised, or returned something that is not the
op's outputs; an `errors` row holds the traceback) or no_golden (the op has none; never
counted as a pass). With tensors stored, golden tensors are stored too, with their own ids.
`raise_on_mismatch=True` raises ComparisonError from the op that failed, after its rows.

The work runs on the model's thread, in op order, right after each op (golden mode roughly
doubles a run's time, as Config says). Carried goldens are dropped when their tensor is
deallocated or garbage-collected, and the oldest go first past `max_carried_bytes`.
"""

from __future__ import annotations

import datetime
import math
import threading
import traceback
import weakref
from collections import OrderedDict

import torch

from device_sim.tensor import Tensor
from ttreport.errors import ComparisonError
from ttreport.metrics import Comparison, compare_tensors

MAX_CARRIED_BYTES = 2 << 30  # global goldens kept at most; past it the oldest are dropped


def make_checker(config, recorder) -> GoldenChecker:
    return GoldenChecker(config, recorder)


class GoldenError(Exception):
    """A golden function that raised, or returned something other than the op's outputs."""


class GoldenChecker:
    def __init__(self, config, recorder, *, max_carried_bytes: int = MAX_CARRIED_BYTES):
        self.recorder = recorder
        self.modes = [m for m in ("local", "global") if config.comparison in (m, "both")]
        self.pcc = config.comparison_pcc
        self.rtol, self.atol = config.comparison_rtol, config.comparison_atol
        self.raise_on_mismatch = config.raise_on_mismatch
        self.store = config.tensors != "none"
        self.carried: OrderedDict[int, torch.Tensor] = OrderedDict()  # tensor id -> global golden
        self.carried_bytes = 0
        self.max_carried_bytes = max_carried_bytes
        self._watched: set[int] = set()
        # Ops on several threads, and weakref callbacks run by the garbage collector in the middle
        # of any of them, all touch `carried`: a re-entrant lock keeps it whole.
        self._lock = threading.RLock()

    # -- the seam: recorder.end() calls this after each op that returned ------------------------
    def after_op(self, op, args, kwargs, output, operation_id: int) -> None:
        outputs = [t for t in (output if isinstance(output, (list, tuple)) else (output,)) if isinstance(t, Tensor)]
        if op.name == "ttnn.deallocate":
            for t in _tensors_in(args, kwargs):
                self._drop(t.tensor_id)
        if not outputs:
            return
        failed = None
        for mode in self.modes:
            results = self._check(mode, op, args, kwargs, outputs, operation_id)
            failed = failed or next(((t, c) for t, c in results if not c.passed), None)
        if failed is not None and self.raise_on_mismatch:
            tensor, c = failed
            raise ComparisonError(
                f"{op.name} (operation {operation_id}) output tensor {tensor.tensor_id} does not match its golden: "
                f"{c.reason}; max abs error {c.max_abs_error:.4g} at {c.worst_index}. "
                f"Config(raise_on_mismatch=False) records mismatches and goes on",
                comparison=c, operation_id=operation_id,
            )

    # -- one mode -------------------------------------------------------------------------------
    def _check(self, mode, op, args, kwargs, outputs, operation_id) -> list:
        golden = op.golden_function
        if golden is None:
            for t in outputs:
                self._record(mode, operation_id, t, None, "no_golden", f"{op.name} has no golden function")
                if mode == "global":
                    self._carry(t, None)
            return []
        convert = _local_value if mode == "local" else self._global_value
        try:
            gargs = tuple(_convert(a, convert) for a in args)
            gkwargs = {k: _convert(v, convert) for k, v in kwargs.items()}
            result = golden(*gargs, **gkwargs)
            values = _golden_outputs(result, len(outputs), op.name)
        except Exception as exc:
            self._golden_error(mode, op, operation_id, outputs, exc)
            return []
        results = []
        for t, g in zip(outputs, values):
            if any(g is a for a in (*args, *kwargs.values())):
                g = g.clone()  # from_torch's golden is the model's own tensor: keep it from later in-place changes
            c = compare_tensors(t, g, pcc=self.pcc, dtype=t.dtype, **self._tolerances(mode))
            gid = self.recorder.store_tensor(g, None, operation_id) if self.store else None
            self._record(mode, operation_id, t, gid, c.status, c.reason, c)
            if mode == "global":
                self._carry(t, g)
            results.append((t, c))
        return results

    def _tolerances(self, mode: str) -> dict:
        if mode == "global" and self.rtol is None and self.atol is None:
            return {"rtol": math.inf}  # PCC alone: see the module docstring
        return {"rtol": self.rtol, "atol": self.atol}

    def _golden_error(self, mode, op, operation_id, outputs, exc) -> None:
        reason = str(exc) if isinstance(exc, GoldenError) else \
            f"golden function of {op.name} raised {type(exc).__name__}: {exc}"
        self.recorder.emit("errors", {
            "operation_id": operation_id, "operation_name": op.name, "error_type": "golden_error",
            "error_message": f"{mode} comparison: {reason}",
            "stack_trace": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
            "timestamp": datetime.datetime.now().isoformat(timespec="milliseconds"),
        })
        for t in outputs:
            self._record(mode, operation_id, t, None, "golden_error", reason)
            if mode == "global":
                self._carry(t, None)

    def _record(self, mode, operation_id, t: Tensor, golden_id, status, reason, c: Comparison | None = None):
        row = {"operation_id": operation_id, "mode": mode, "tensor_id": t.tensor_id, "golden_tensor_id": golden_id,
               "status": status, "reason": reason, "desired_pcc": self.pcc}
        if c is not None:
            row.update(pcc=c.pcc, max_abs_error=c.max_abs_error, mean_abs_error=c.mean_abs_error,
                       max_rel_error=c.max_rel_error, mismatched=c.mismatched,
                       mismatched_fraction=c.mismatched_fraction, numel=c.numel, max_ulp=c.max_ulp,
                       rtol=c.rtol, atol=c.atol, worst_actual=c.worst_actual, worst_golden=c.worst_golden,
                       worst_index=str(list(c.worst_index)) if c.worst_index is not None else None)
            self.recorder.emit(f"{mode}_tensor_comparison_records", {
                "tensor_id": t.tensor_id, "golden_tensor_id": golden_id, "matches": int(c.passed),
                "desired_pcc": self.pcc, "actual_pcc": c.pcc,
            })
        self.recorder.emit("tensor_comparisons", row)

    # -- goldens carried forward (global) -------------------------------------------------------
    def _global_value(self, t: Tensor) -> torch.Tensor:
        with self._lock:
            g = self.carried.get(t.tensor_id)
        return g if g is not None else _local_value(t)

    def _carry(self, t: Tensor, golden: torch.Tensor | None) -> None:
        tid = t.tensor_id
        with self._lock:
            self._drop(tid)
            if golden is None:
                return
            self.carried[tid] = golden
            self.carried_bytes += golden.numel() * golden.element_size()
            if tid not in self._watched:
                self._watched.add(tid)
                weakref.finalize(t, self._forget, tid)
            while self.carried_bytes > self.max_carried_bytes and len(self.carried) > 1:
                self._drop(next(iter(self.carried)))

    def _drop(self, tid: int) -> None:
        with self._lock:
            g = self.carried.pop(tid, None)
            if g is not None:
                self.carried_bytes -= g.numel() * g.element_size()

    def _forget(self, tid: int) -> None:
        with self._lock:
            self._watched.discard(tid)
            self._drop(tid)


def _local_value(t: Tensor) -> torch.Tensor:
    v = t.value
    return v.float() if v.is_floating_point() else v


def _convert(x, convert):
    if isinstance(x, Tensor):
        return convert(x)
    if type(x) in (list, tuple) and any(isinstance(e, Tensor) for e in x):
        return type(x)(_convert(e, convert) for e in x)
    return x


def _tensors_in(args, kwargs):
    for a in (*args, *kwargs.values()):
        for t in (a if type(a) in (list, tuple) else (a,)):
            if isinstance(t, Tensor):
                yield t


def _golden_outputs(result, n: int, op_name: str) -> list[torch.Tensor]:
    values = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(values) != n or not all(isinstance(v, torch.Tensor) for v in values):
        got = ", ".join(type(v).__name__ for v in values)
        raise GoldenError(f"the golden function of {op_name} returned ({got}) for {n} output tensor(s); "
                          f"it must return one torch.Tensor per output")
    return [v.detach() for v in values]
