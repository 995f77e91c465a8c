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

An op on a mesh ran once per device, each on its own shards, and is checked the same way: per device,
the golden runs on that device's shards of the inputs and is compared with that device's shard of the
output, giving one row per device (tensor_comparisons.device_id; NULL for a one-device tensor). An op
that spreads a torch tensor over the mesh itself (from_torch, with its mesh_mapper) has its golden split
by the same mapper. Global mode carries a mesh tensor's goldens per device.

A ttnn.ComplexTensor argument reaches the golden as one torch complex tensor (torch.complex of its parts as
float32, as device_sim's complex goldens take it). A ComplexTensor output is compared part by part, its real part
against the golden's real part and its imaginary against the imaginary: one row for each part's tensor, as the op
lists both parts among its output tensors, so `ttreport compare` pairs the same tensors.

Each compared output gives a row in local_/global_tensor_comparison_records (TT-NN's
columns; `matches` is ttreport's pass) and one in tensor_comparisons with every metric and a
status: pass, fail, golden_error (the golden raised, or returned something that is not the
op's outputs; an `errors` row holds the traceback) or no_golden (the op has none; never
counted as a pass). With tensors stored, golden tensors are stored too, with their own ids.

The work runs on one background thread ("ttreport-golden"), in op order (global mode
carries goldens forward by tensor id). On the model's thread before_op (the arguments, before
the op runs, as an in-place op replaces its input's values) and after_op (the outputs) only take
references to what cannot change: each tensor's `.value` (immutable), dtype and id, the other
arguments, and a copy of any torch tensor argument (from_torch's input, which the model may
change in place later). A golden check therefore never lands inside a parent op's span, though the
checker still shares the cores and the GIL with the model. The queue is bounded by the bytes
it keeps alive (`max_pending_bytes`); past it the model's thread waits for the checker (that
wait, at an op's end, does land in its parent's span), never drops a check.
Capture.stop drains the checker before the writer drains. An error inside the checker (not
in a golden: that is a golden_error above) is recorded as an `errors` row of type
golden_checker_error and in report_metadata, and warned about at close.

`raise_on_mismatch=True` keeps the checks on the model's thread, right after each op, so the
ComparisonError comes from the op that failed (after its rows); such a profile's parent ops
include their children's checks. Carried goldens are dropped when their tensor is
deallocated or garbage-collected, and the oldest go first past `max_carried_bytes`.
"""

from __future__ import annotations

import collections
import datetime
import math
import threading
import time
import traceback
import warnings
import weakref
from collections import OrderedDict

import torch

from device_sim.complex_tensor import ComplexTensor
from device_sim.distributed import MeshTensor
from device_sim.tensor import Tensor
from ttreport.capturing.records import META
from ttreport.errors import ComparisonError, ReportIncompleteWarning
from ttreport.metrics import Comparison, compare_tensors

MAX_CARRIED_BYTES = 2 << 30  # global goldens kept at most; past it the oldest are dropped
MAX_PENDING_BYTES = 1 << 30  # tensor values the checker's queue keeps alive before the model waits

_OP, _DROP, _FLUSH = range(3)  # queue records: (_OP, op, args, kwargs, outputs, op_id), (_DROP, tid), (_FLUSH, event)


def make_checker(config, recorder) -> GoldenChecker:
    return GoldenChecker(config, recorder)


class GoldenError(Exception):
    """A golden function that raised, or returned something other than the op's outputs."""


class Snapshot:
    """A tensor as the checker sees it: its values (immutable), device dtype and id, never the Tensor.

    Holding the Tensor would keep its buffer allocated and change the memory being recorded.
    compare_tensors reads `.value` and `.dtype` as it does from a Tensor.
    """

    __slots__ = ("value", "dtype", "tensor_id")

    def __init__(self, t: Tensor):
        self.value = t.value if t.is_allocated() else None
        self.dtype = t.dtype
        self.tensor_id = t.tensor_id


class MeshSnapshot(Snapshot):
    """A mesh tensor as the checker sees it: a Snapshot per device shard, and each shard's device id."""

    __slots__ = ("shards", "device_ids")

    def __init__(self, t: MeshTensor):
        super().__init__(t)
        self.shards = [Snapshot(s) for s in t.shards]
        for s in self.shards:
            s.tensor_id = t.tensor_id  # a shard's rows name the mesh tensor (and the device)
        self.device_ids = [chip.device_id for chip in t.mesh._chips]  # a host mesh tensor's shard i is chip i's

    def nbytes(self) -> int:
        return sum(s.value.numel() * s.value.element_size() for s in self.shards if s.value is not None)


class ComplexSnapshot:
    """A ttnn.ComplexTensor as the checker sees it: a Snapshot of its real part and one of its imaginary part.

    Its golden reads it as one torch complex tensor (torch.complex of the parts as float32, as device_sim's
    complex goldens take it, device_sim/ops/complex.py); as an output it is compared part by part.
    """

    __slots__ = ("real", "imag")

    def __init__(self, real: Snapshot, imag: Snapshot):
        self.real, self.imag = real, imag


class GoldenChecker:
    def __init__(self, config, recorder, *, max_carried_bytes: int = MAX_CARRIED_BYTES,
                 max_pending_bytes: int = MAX_PENDING_BYTES):
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
        # The checker thread, and weakref callbacks run by the garbage collector in the middle of
        # anything, touch `carried`: a re-entrant lock keeps it whole.
        self._lock = threading.RLock()
        self.failures = 0  # exceptions inside the checker itself (not in goldens)
        self.first_failure: str | None = None
        self.max_pending_bytes = max_pending_bytes
        self._pending_bytes = 0
        self._pending_lock = threading.Lock()
        self._items: collections.deque = collections.deque()
        self._wake = threading.Event()
        self._closing = False
        self._thread: threading.Thread | None = None
        if not self.raise_on_mismatch:  # that one raises at the failing op, so it checks on the model's thread
            self._thread = threading.Thread(target=self._loop, name="ttreport-golden", daemon=True)
            self._thread.start()

    # -- the seam: recorder.begin() calls before_op, recorder.end() after_op (on the model's thread) --
    def before_op(self, args, kwargs) -> tuple:
        """The op's arguments as its golden will see them, taken before the op runs: an op that writes
        into an input (attention_softmax_, ttnn.fill_cache, ...) gives that tensor new values."""
        nbytes = [0]
        return tuple([_snapshot(a, nbytes) for a in args]), {k: _snapshot(v, nbytes) for k, v in kwargs.items()}

    def after_op(self, op, args, kwargs, output, operation_id: int) -> None:
        outputs = [t for t in (output if isinstance(output, (list, tuple)) else (output,))
                   if isinstance(t, (Tensor, ComplexTensor))]
        if op.name == "ttnn.deallocate":
            for t in _tensors_in(args, kwargs):
                self._submit((_DROP, t.tensor_id))
        if not outputs:
            return
        if "global" in self.modes and op.golden_function is not None:
            for t in outputs:
                for part in (t.real, t.imag) if isinstance(t, ComplexTensor) else (t,):
                    self._watch(part)
        nbytes = [0]
        record = (_OP, op, tuple([_snapshot(a, nbytes) for a in args]),
                  {k: _snapshot(v, nbytes) for k, v in kwargs.items()},
                  [_snapshot(t, nbytes) for t in outputs], operation_id)
        self._submit(record, nbytes[0])

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every op queued so far is checked and its rows are queued for the writer."""
        if self._thread is not None and self._thread.is_alive():
            done = threading.Event()
            self._submit((_FLUSH, done))
            done.wait(timeout)

    def close(self) -> None:
        """Check every queued op, stop the thread; Capture.stop calls it before the writer drains."""
        if self._thread is not None:
            self._closing = True
            self._wake.set()
            self._thread.join()
        with self._lock:
            self.carried.clear()
            self.carried_bytes = 0
        if self.failures:
            self.recorder.queue.put((META, "golden_checker_errors", self.failures))
            warnings.warn(
                f"ttreport: {self.failures} golden check(s) failed inside ttreport, so the report lacks their "
                f"comparisons (see the errors rows of type golden_checker_error); the first: {self.first_failure}",
                ReportIncompleteWarning, stacklevel=2,
            )

    # -- the queue and the checker thread -------------------------------------------------------
    def _submit(self, record, nbytes: int = 0) -> None:
        thread = self._thread
        if thread is None:
            self._run(record)  # raise_on_mismatch: here and now, so a ComparisonError reaches the model
            return
        if self._closing and not thread.is_alive():
            return  # a tensor collected after close: nothing is carried any more
        with self._pending_lock:
            self._pending_bytes += nbytes
        self._items.append((record, nbytes))
        if not self._wake.is_set():
            self._wake.set()
        if nbytes and self._pending_bytes > self.max_pending_bytes and threading.current_thread() is not thread:
            # Back-pressure, never loss: the model waits until the checker has caught up by half.
            while self._pending_bytes > self.max_pending_bytes // 2 and thread.is_alive():
                time.sleep(0.001)

    def _loop(self) -> None:
        items, wake = self._items, self._wake
        while True:
            wake.wait()
            wake.clear()  # before draining: a record queued during the drain sets it again
            while items:
                record, nbytes = items.popleft()
                try:
                    self._run(record)
                except BaseException as exc:  # noqa: BLE001 (kept and reported at close; the thread goes on)
                    self._failed(record, exc)
                finally:
                    with self._pending_lock:
                        self._pending_bytes -= nbytes
            if self._closing:
                return

    def _run(self, record) -> None:
        tag = record[0]
        if tag == _DROP:
            self._drop(record[1])
        elif tag == _FLUSH:
            record[1].set()
        else:
            self._check_op(*record[1:])

    def _failed(self, record, exc: BaseException) -> None:
        self.failures += 1
        what = f"{type(exc).__name__}: {exc}"
        if self.first_failure is None:
            self.first_failure = what
        op, operation_id = (record[1].name, record[5]) if record[0] == _OP else (None, None)
        try:
            self.recorder.emit("errors", {
                "operation_id": operation_id, "operation_name": op, "error_type": "golden_checker_error",
                "error_message": f"the golden check itself failed: {what}",
                "stack_trace": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
                "timestamp": datetime.datetime.now().isoformat(timespec="milliseconds"),
            })
        except Exception as e:  # noqa: BLE001 (still counted, and warned about at close)
            self.first_failure += f" (and its errors row could not be queued: {e!r})"

    # -- one op, every mode ---------------------------------------------------------------------
    def _check_op(self, op, args, kwargs, outputs, operation_id) -> None:
        failed = None
        for mode in self.modes:
            results = self._check(mode, op, args, kwargs, outputs, operation_id)
            failed = failed or next((r for r in results if not r[1].passed), None)
        if failed is not None and self.raise_on_mismatch:
            tensor, c, device_id = failed
            on = "" if device_id is None else f" (its shard on device {device_id})"
            raise ComparisonError(
                f"{op.name} (operation {operation_id}) output tensor {tensor.tensor_id}{on} does not match its golden: "
                f"{c.reason}; max abs error {c.max_abs_error:.4g} at {c.worst_index}. "
                f"Config(raise_on_mismatch=False) records mismatches and goes on",
                comparison=c, operation_id=operation_id,
            )

    # -- one mode -------------------------------------------------------------------------------
    def _check(self, mode, op, args, kwargs, outputs, operation_id) -> list:
        golden = op.golden_function
        if golden is None:
            for t in _parts(outputs):
                self._record(mode, operation_id, t, None, "no_golden", f"{op.name} has no golden function")
                if mode == "global":
                    self._carry(t, None)
            return []
        mesh = next((t for t in _parts(outputs) if isinstance(t, MeshSnapshot)), None)
        try:
            if mesh is None:
                per_device = [self._golden(mode, op, args, kwargs, len(outputs), None)]
            elif op.mesh_aware:  # it spread whole tensors over the mesh itself: its golden is split the same way
                whole = self._golden(mode, op, args, kwargs, len(outputs), None)
                per_device = _spread(whole, kwargs.get("mesh_mapper"), len(mesh.shards))
            else:  # it ran once per device on that device's shards: so does its golden
                per_device = [self._golden(mode, op, args, kwargs, len(outputs), i) for i in range(len(mesh.shards))]
            per_device = [_complex_goldens(values, outputs, op.name) for values in per_device]
        except Exception as exc:
            self._golden_error(mode, op, operation_id, outputs, exc)
            return []
        results = []
        for k, t in enumerate(outputs):
            goldens = [values[k] for values in per_device]
            if isinstance(t, ComplexSnapshot):  # part by part: each part is an output tensor of the op's own
                for j, part in enumerate((t.real, t.imag)):
                    results += self._compare_output(mode, operation_id, part, [pair[j] for pair in goldens])
            else:
                results += self._compare_output(mode, operation_id, t, goldens)
        return results

    def _compare_output(self, mode, operation_id, t: Snapshot, goldens: list[torch.Tensor]) -> list:
        """One output tensor against its golden (one per device: a mesh tensor's shards, each against its own)."""
        if not isinstance(t, MeshSnapshot):
            results = [(t, self._compare(mode, operation_id, t, goldens[0], None), None)]
            if mode == "global":
                self._carry(t, goldens[0])
            return results
        results = [(t, self._compare(mode, operation_id, shard, goldens[i], device_id), device_id)
                   for i, (shard, device_id) in enumerate(zip(t.shards, t.device_ids))]
        if mode == "global":
            self._carry(t, _DeviceGoldens(goldens))
        return results

    def _golden(self, mode, op, args, kwargs, n: int, device: int | None) -> list[torch.Tensor]:
        """The op's golden outputs on its inputs as `mode` sees them; device: on that device's shards."""
        convert = _local_value if mode == "local" else self._global_value
        gargs = tuple(_convert(a, convert, device) for a in args)
        gkwargs = {k: _convert(v, convert, device) for k, v in kwargs.items()}
        return _golden_outputs(op.golden_function(*gargs, **gkwargs), n, op.name)

    def _compare(self, mode, operation_id, t: Snapshot, g: torch.Tensor, device_id: int | None) -> Comparison:
        c = compare_tensors(t, g, pcc=self.pcc, dtype=t.dtype, **self._tolerances(mode))
        gid = self.recorder.store_tensor(g, None, operation_id) if self.store else None
        self._record(mode, operation_id, t, gid, c.status, c.reason, c, device_id)
        return c

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
        for t in _parts(outputs):
            self._record(mode, operation_id, t, None, "golden_error", reason)
            if mode == "global":
                self._carry(t, None)

    def _record(self, mode, operation_id, t: Snapshot, golden_id, status, reason, c: Comparison | None = None,
                device_id: int | None = None):
        row = {"operation_id": operation_id, "mode": mode, "tensor_id": t.tensor_id, "golden_tensor_id": golden_id,
               "status": status, "reason": reason, "desired_pcc": self.pcc, "device_id": device_id}
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
    def _global_value(self, t: Snapshot, device: int | None = None) -> torch.Tensor:
        with self._lock:
            g = self.carried.get(t.tensor_id)
        if isinstance(g, _DeviceGoldens):  # a mesh tensor's: the one of the device whose shards the op read
            g = g.values[device] if device is not None and device < len(g.values) else None
        return g if g is not None else _local_value(t, device)

    def _carry(self, t: Snapshot, golden: torch.Tensor | None) -> None:
        tid = t.tensor_id
        with self._lock:
            self._drop(tid)
            if golden is None:
                return
            self.carried[tid] = golden
            self.carried_bytes += _carried_bytes(golden)
            while self.carried_bytes > self.max_carried_bytes and len(self.carried) > 1:
                self._drop(next(iter(self.carried)))

    def _watch(self, t: Tensor) -> None:
        # On the model's thread, which holds the Tensor. The drop it leads to is queued behind the ops
        # already queued, so it comes after the carry it undoes.
        if t.tensor_id not in self._watched:
            self._watched.add(t.tensor_id)
            weakref.finalize(t, self._forget, t.tensor_id)

    def _drop(self, tid: int) -> None:
        with self._lock:
            g = self.carried.pop(tid, None)
            if g is not None:
                self.carried_bytes -= _carried_bytes(g)

    def _forget(self, tid: int) -> None:
        # Called by the garbage collector, on any thread (the checker's too): it never waits.
        self._watched.discard(tid)
        self._submit((_DROP, tid))


class _DeviceGoldens:
    """A mesh tensor's carried goldens (global mode): one per device, in the mesh's order."""

    __slots__ = ("values",)

    def __init__(self, values: list[torch.Tensor]):
        self.values = values


def _carried_bytes(g) -> int:
    values = g.values if isinstance(g, _DeviceGoldens) else [g]
    return sum(v.numel() * v.element_size() for v in values)


def _spread(whole: list[torch.Tensor], mapper, n: int) -> list[list[torch.Tensor]]:
    """Per device, the outputs of a golden computed on whole tensors, split as the op's mesh_mapper split its
    input (each device's piece; without a mapper, TT-NN replicates: the whole golden on every device)."""
    pieces = [mapper.map(g) if mapper is not None else [g] * n for g in whole]
    for p in pieces:
        if len(p) != n:
            raise GoldenError(f"the mesh mapper split the golden into {len(p)} pieces for {n} devices")
    return [[p[i] for p in pieces] for i in range(n)]


def _snapshot(x, nbytes: list):
    """What after_op queues for `x`: a Snapshot for a Tensor, a ComplexSnapshot for a ComplexTensor, a copy of a
    torch tensor, the rest as is."""
    if isinstance(x, (ComplexTensor, ComplexSnapshot)):  # before_op took it already when it is a ComplexSnapshot
        return ComplexSnapshot(_snapshot(x.real, nbytes), _snapshot(x.imag, nbytes))
    if isinstance(x, (Tensor, Snapshot)):
        # before_op took it already when it is a Snapshot
        snap = x if isinstance(x, Snapshot) else MeshSnapshot(x) if type(x) is MeshTensor else Snapshot(x)
        if isinstance(snap, MeshSnapshot):
            nbytes[0] += snap.nbytes()
        elif snap.value is not None:
            nbytes[0] += snap.value.numel() * snap.value.element_size()
        return snap
    if isinstance(x, torch.Tensor):
        nbytes[0] += x.numel() * x.element_size()
        return x.detach().clone()  # the model's own tensor (from_torch's input) may change in place later
    if type(x) in (list, tuple):
        return type(x)([_snapshot(e, nbytes) for e in x])
    return x


def _local_value(t: Snapshot, device: int | None = None) -> torch.Tensor:
    """The values the op read: a mesh tensor's shard on device index `device` when given."""
    v = t.shards[device].value if device is not None and isinstance(t, MeshSnapshot) else t.value
    if v is None:
        raise RuntimeError(f"tensor {t.tensor_id} was deallocated before this op; its values are gone")
    return v.float() if v.is_floating_point() else v


def _convert(x, convert, device: int | None = None):
    if isinstance(x, Snapshot):
        return convert(x, device)
    if isinstance(x, ComplexSnapshot):  # as device_sim's complex goldens take one: a complex64 torch tensor
        return torch.complex(convert(x.real, device).float(), convert(x.imag, device).float())
    if type(x) in (list, tuple) and any(isinstance(e, (Snapshot, ComplexSnapshot)) for e in x):
        return type(x)(_convert(e, convert, device) for e in x)
    return x


def _tensors_in(args, kwargs):
    for a in (*args, *kwargs.values()):
        for t in (a if type(a) in (list, tuple) else (a,)):
            if isinstance(t, (Tensor, Snapshot)):
                yield t


def _parts(outputs: list) -> list[Snapshot]:
    """The outputs' tensors as the comparison rows name them: a ComplexSnapshot's real part, then its imaginary."""
    return [p for t in outputs for p in ((t.real, t.imag) if isinstance(t, ComplexSnapshot) else (t,))]


def _complex_goldens(values: list[torch.Tensor], outputs: list, op_name: str) -> list:
    """The golden outputs, each of a ComplexTensor output as its (real, imag) pair: from a complex golden (abs,
    reciprocal, multiply, ...), or from a real one holding [real | imag] along the last dim, as device_sim's complex
    backward goldens give a gradient (device_sim/ops/complex.py, after TT-NN's complex_unary_backward tests)."""
    pairs = list(values)
    for k, t in enumerate(outputs):
        if not isinstance(t, ComplexSnapshot):
            continue
        g, part = values[k], (t.real.shards[0] if isinstance(t.real, MeshSnapshot) else t.real).value
        if g.is_complex():
            pairs[k] = (g.real, g.imag)
        elif part is not None and g.dim() and part.dim() and g.shape[-1] == 2 * part.shape[-1]:
            pairs[k] = tuple(g.chunk(2, dim=-1))
        else:
            raise GoldenError(f"the golden function of {op_name} returned a real tensor of shape {list(g.shape)} "
                              f"for ComplexTensor output {k}; it must return a complex tensor (or [real | imag] "
                              f"along the last dim)")
    return pairs


def _golden_outputs(result, n: int, op_name: str) -> list[torch.Tensor]:
    values = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(values) != n or not all(isinstance(v, torch.Tensor) for v in values):
        got = ", ".join(type(v).__name__ for v in values)
        raise GoldenError(f"the golden function of {op_name} returned ({got}) for {n} output tensor(s); "
                          f"it must return one torch.Tensor per output")
    return [v.detach() for v in values]
