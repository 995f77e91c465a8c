"""Reading the performance model's device time estimates from a report (the `device_perf` table).

    import ttreport
    from ttreport.read import device_time
    with ttreport.open("sample_reports/demo") as r:
        print(device_time.total(r))            # DeviceTotal(ideal_ns=..., compute_bound=..., bandwidth_bound=...)
        print(device_time.of_op(r, 37))        # DevicePerf(compute_ns=2, bandwidth_ns=64, ideal_ns=64, ...)
        print(device_time.by_name(r)["ttnn.linear"])   # estimated ns over all linears
        print(device_time.constants_file(r))   # None: the model's own constants (else the fitted file's path ...)

The estimates are made at capture time by device_sim.perf_model (docs/perf_model.md); a report
captured before schema 0006, or a TT-NN report, has none, and these return None or empty.

Device time is the figure summaries, comparisons and history use: the model's estimate is the same for the
same ops, run after run, where the emulator's host time (operations.duration) moves with warm-up and load.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import groupby
from typing import NamedTuple


class DevicePerf(NamedTuple):
    compute_ns: int
    bandwidth_ns: int
    ideal_ns: int
    bound: str  # "compute" | "bandwidth"
    math_fidelity: str | None


class DeviceTotal(NamedTuple):
    ideal_ns: int  # estimated device kernel time of the top-level ops with an estimate, ns
    ops: int  # how many ops have an estimate
    compute_bound: int  # of those, how many are compute-bound
    bandwidth_bound: int
    transfer_ns: int = 0  # of ideal_ns, the host transfers' (HOST_TRANSFERS: mostly PCIe); the rest is kernels'

    @property
    def kernel_ns(self) -> int | None:
        return None if self.ideal_ns is None else self.ideal_ns - self.transfer_ns


class DeviceSlice(NamedTuple):
    """One op's estimated kernel on one chip's device timeline (ns on the report's clock)."""
    device_id: int
    operation_id: int
    name: str
    start_ns: int
    end_ns: int
    bound: str | None


_COLUMNS = "compute_ns, bandwidth_ns, ideal_ns, bound, math_fidelity"
# The ops that move a tensor between the host and the device: their estimate is mostly PCIe, not kernels, so the
# summary shows them apart (a BERT layer's uploads were 3.1 of its 4.4 ms). The same ops as perf_model's
# host moves, by the last part of their name: readers do not import device_sim.
HOST_TRANSFERS = frozenset({"from_torch", "to_torch", "to_device", "from_device"})
_TOP_LEVEL = "(o.depth = 0 OR o.depth IS NULL)"


def of_op(r, operation_id: int) -> DevicePerf | None:
    row = r.execute(f"SELECT {_COLUMNS} FROM device_perf WHERE operation_id = ?", (operation_id,)).fetchone()
    return None if row is None else DevicePerf(*row)


def total(r) -> DeviceTotal | None:
    """Device time summed over the ops the model called directly (a nested op's time is inside its caller's)."""
    row = r.execute(
        "SELECT SUM(p.ideal_ns), COUNT(*), SUM(p.bound = 'compute'), SUM(p.bound = 'bandwidth') "
        "FROM device_perf p JOIN operations o USING (operation_id) WHERE o.depth = 0 OR o.depth IS NULL"
    ).fetchone()
    return None if not row or not row[1] else DeviceTotal(*row, transfer_ns(r))


class ConstantsFile(NamedTuple):
    """The fitted constants a capture's estimates were made with (DEVICE_SIM_PERF_CONSTANTS, `ttreport calibrate`)."""
    path: str
    sha256: str
    constants: dict


def constants_file(r) -> ConstantsFile | None:
    """report_metadata.perf_constants: the constants file the capture ran with; None when the model's own were used.
    A record that is not the object a capture writes reads as path '?' (the report's text is untrusted)."""
    text = r.metadata.get("perf_constants")
    if text is None:
        return None
    try:
        got = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        got = None
    got = got if isinstance(got, dict) else {}
    path, sha, constants = got.get("path"), got.get("sha256"), got.get("constants")
    return ConstantsFile(path if isinstance(path, str) else "?", sha if isinstance(sha, str) else "?",
                         constants if isinstance(constants, dict) else {})


def transfer_ns(r) -> int:
    """The part of `total` spent in host transfers (HOST_TRANSFERS): the rest is the kernels'."""
    return sum(ns or 0 for name, ns in r.execute(
        f"SELECT o.name, SUM(p.ideal_ns) FROM device_perf p JOIN operations o USING (operation_id) WHERE {_TOP_LEVEL} "
        "GROUP BY o.name") if is_transfer(name))


def is_transfer(name) -> bool:
    return isinstance(name, str) and name.rsplit(".", 1)[-1] in HOST_TRANSFERS


def of_ops(r) -> dict[int, int]:
    """Every estimated op's ideal ns, by operation id."""
    return {i: ns for i, ns in r.execute("SELECT operation_id, ideal_ns FROM device_perf") if _is_int(ns)}


# (operation id, device id) of every chip an op's device tensors live on, in op order: where an op ran (a mesh op on
# each chip of its mesh tensors); an op with none is taken to run on device 0.
CHIPS_SQL = (
    "SELECT x.operation_id, t.device_id FROM (SELECT operation_id, tensor_id FROM output_tensors UNION ALL "
    "SELECT operation_id, tensor_id FROM input_tensors) x JOIN tensors t USING (tensor_id) "
    "WHERE t.buffer_type IS NOT NULL AND t.device_id IS NOT NULL UNION "
    "SELECT x.operation_id, d.device_id FROM (SELECT operation_id, tensor_id FROM output_tensors UNION ALL "
    "SELECT operation_id, tensor_id FROM input_tensors) x JOIN device_tensors d USING (tensor_id) "
    "WHERE d.device_id IS NOT NULL ORDER BY 1, 2")


def timeline(r) -> Iterator[DeviceSlice]:
    """Each chip's device timeline, in op order: the top-level ops with an estimate, on every chip their tensors live
    on (device 0 for one with none), back to back from the first op's host start. The model estimates kernels, not
    the gaps between them (dispatch, the emulator's own slowness), so on each chip an op starts when the one before
    it ends, as in a traced run. Streamed: two cursors in op order, merged."""
    devices = groupby(r.execute(CHIPS_SQL), key=lambda row: row[0])
    next_devices = next(devices, None)
    free: dict = {}  # device id -> when its last op ends
    start = None
    for op_id, name, host_start, ns, bound in r.execute(
            "SELECT o.operation_id, o.name, o.start_ns, p.ideal_ns, p.bound FROM device_perf p "
            f"JOIN operations o USING (operation_id) WHERE {_TOP_LEVEL} ORDER BY o.operation_id"):
        while next_devices is not None and _is_int(next_devices[0]) and next_devices[0] < op_id:
            next_devices = next(devices, None)
        on = {0}
        if next_devices is not None and next_devices[0] == op_id:
            on = {d for _, d in next_devices[1] if _is_int(d)} or on
        if not _is_int(ns) or ns < 0:
            continue  # a damaged row: left off the timeline, not a TypeError
        if start is None:
            start = host_start if _is_int(host_start) else 0
        for device in sorted(on):
            begin = free.get(device, start)
            free[device] = begin + ns
            yield DeviceSlice(device, op_id, name if isinstance(name, str) else str(name), begin, begin + ns,
                              bound if isinstance(bound, str) else None)


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def slowest(r, n: int = 5) -> list[tuple[int, str, int]]:
    """The `n` top-level ops the model estimates longest on the device: (operation id, name, ns), slowest first."""
    return [(i, name, ns) for i, name, ns in r.execute(
        "SELECT o.operation_id, o.name, p.ideal_ns FROM device_perf p JOIN operations o USING (operation_id) "
        f"WHERE {_TOP_LEVEL} AND typeof(p.ideal_ns) = 'integer' ORDER BY p.ideal_ns DESC, o.operation_id LIMIT ?",
        (n,))]


def by_name(r) -> dict[str, int]:
    """Estimated ns per op name over every op of that name (nested ones included, as `total` in summary is)."""
    return dict(r.execute("SELECT o.name, SUM(p.ideal_ns) FROM device_perf p JOIN operations o USING (operation_id) "
                          "GROUP BY o.name"))


def text(p: DevicePerf | None) -> str:
    """'22.7 us bw' / '16.4 us cmp': the estimate and its dominating bound, for a table cell."""
    if p is None:
        return ""
    return f"{human_ns(p.ideal_ns)} {'cmp' if p.bound == 'compute' else 'bw'}"


def human_ns(ns) -> str:
    if ns is None:
        return ""
    if not isinstance(ns, (int, float)) or isinstance(ns, bool):
        return "?"  # a damaged row's text or BLOB (`ttreport check` names it); never its bytes, which html would embed
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns} ns"
