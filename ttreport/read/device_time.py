"""Reading the performance model's device time estimates from a report (the `device_perf` table).

    import ttreport
    from ttreport.read import device_time
    with ttreport.open("sample_reports/demo") as r:
        print(device_time.total(r))            # DeviceTotal(ideal_ns=..., compute_bound=..., bandwidth_bound=...)
        print(device_time.of_op(r, 37))        # DevicePerf(compute_ns=2, bandwidth_ns=64, ideal_ns=64, ...)
        print(device_time.by_name(r)["ttnn.linear"])   # estimated ns over all linears

The estimates are made at capture time by device_sim.perf_model (docs/perf_model.md); a report
captured before schema 0006, or a TT-NN report, has none, and these return None or empty.
"""

from __future__ import annotations

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


_COLUMNS = "compute_ns, bandwidth_ns, ideal_ns, bound, math_fidelity"


def of_op(r, operation_id: int) -> DevicePerf | None:
    row = r.execute(f"SELECT {_COLUMNS} FROM device_perf WHERE operation_id = ?", (operation_id,)).fetchone()
    return None if row is None else DevicePerf(*row)


def total(r) -> DeviceTotal | None:
    """Device time summed over the ops the model called directly (a nested op's time is inside its caller's)."""
    row = r.execute(
        "SELECT SUM(p.ideal_ns), COUNT(*), SUM(p.bound = 'compute'), SUM(p.bound = 'bandwidth') "
        "FROM device_perf p JOIN operations o USING (operation_id) WHERE o.depth = 0 OR o.depth IS NULL"
    ).fetchone()
    return None if not row or not row[1] else DeviceTotal(*row)


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
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns} ns"
