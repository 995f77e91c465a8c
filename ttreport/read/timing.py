"""Two runs' op times and memory side by side, ops aligned as the value comparison aligns them.

    from ttreport.read import compare_timing
    t = compare_timing("run-a", "run-b")
    for row in t.rows[:5]:             # biggest slowdowns first
        print(row.name, row.a_device_ns, row.b_device_ns, row.delta_ns)

Times are compared on the device clock by default: the performance model's estimate of each op's device time
(device_perf.ideal_ns), which is the same for the same op, run after run, so an unchanged model shows no
change. clock="host" compares the emulator's own host time instead (operations.duration), which moves with
first-call warm-up and the machine's load (the demo's first matmul: 23.9 ms, 125 us later). clock="measured"
compares the device time a real hardware run measured, where one is attached to each report (`ttreport attach`,
read.measured). Rows carry all three.

A run captured in steps (ttreport.steps: run.step(), a schedule) is compared on its active steps alone, as
torch.profiler keeps only those: the first calls' warm-up steps are left out. When the two runs have as many
active steps, their active ops are aligned whole; when not, per-step averages are compared: each run's first
active step's ops are aligned, each op's time the mean over the run's active steps of the op at the same place
(steps whose ops differ in name from the first's are left out of it).

A is the reference: delta = B - A (positive: B is slower), ratio = B / A. Ops pair up through
compare.align (same name and shapes, then same name in the gaps), so a timing row and a
value row speak of the same two ops. No stored tensors are needed. Memory is what each op's row
records: the L1 and DRAM bytes allocated after it ran.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ttreport.read import device_time, measured
from ttreport.read.compare import _name_matches, _ops, align, json_safe, report_path, unrelated_runs
from ttreport.read.report import Report, active_steps, has_steps

CLOCKS = ("device", "host", "measured")


@dataclass(slots=True)
class TimingRow:
    name: str
    a_id: int
    b_id: int
    a_device_ns: float | None  # the performance model's estimate in A, ns (None: no estimate, a host-only op)
    b_device_ns: float | None
    a_host_s: float | None  # the emulator's host time in A, seconds (None: not recorded); per-step means: means
    b_host_s: float | None
    a_l1_bytes: int | None  # L1 allocated after the op in A
    b_l1_bytes: int | None
    a_dram_bytes: int | None
    b_dram_bytes: int | None
    clock: str = "device"  # which of the clocks delta and ratio compare
    # measured on real hardware (`ttreport attach`: read.measured), ns; None: nothing attached or not matched
    a_measured_ns: float | None = None
    b_measured_ns: float | None = None

    @property
    def a_ns(self) -> float | None:
        """A's time on the compared clock, ns."""
        return _ns(self.a_device_ns, self.a_host_s, self.a_measured_ns, self.clock)

    @property
    def b_ns(self) -> float | None:
        return _ns(self.b_device_ns, self.b_host_s, self.b_measured_ns, self.clock)

    @property
    def delta_ns(self) -> float | None:
        a, b = self.a_ns, self.b_ns
        return None if a is None or b is None else b - a

    @property
    def ratio(self) -> float | None:
        return self.b_ns / self.a_ns if self.delta_ns is not None and self.a_ns > 0 else None

    def to_dict(self) -> dict:
        return {**asdict(self), "delta_ns": self.delta_ns, "ratio": self.ratio}


def _ns(device_ns, host_s, measured_ns, clock: str) -> float | None:
    if clock != "host":
        x = device_ns if clock == "device" else measured_ns
        return x if _is_number(x) else None
    return host_s * 1e9 if _is_number(host_s) else None


@dataclass
class TimingComparison:
    a: Path
    b: Path
    rows: list[TimingRow]  # biggest slowdown (B - A) first; rows without both times last
    only_a: list[tuple[int, str]]  # (operation_id, name) with no partner in B
    only_b: list[tuple[int, str]]
    # per side: device_ns (estimated) and host_s in the aligned ops, peak L1 and DRAM bytes after any aligned op
    totals: dict
    unrelated: str | None = None  # the line saying A and B look like different models (compare.unrelated_runs)
    clock: str = "device"
    # per side: the active steps compared ("steps") and, with per_step, how many steps each op's mean is over
    steps: dict | None = None
    per_step: bool = False  # the runs have different numbers of active steps: per-step averages are compared
    constants: str | None = None  # the line saying A's and B's estimates used different constants (constants_note)

    def to_dict(self) -> dict:
        return json_safe({"a": str(self.a), "b": str(self.b), "clock": self.clock, "unrelated": self.unrelated,
                          "constants": self.constants, "steps": self.steps, "per_step": self.per_step,
                          "totals": self.totals, "ops": [r.to_dict() for r in self.rows],
                          "unaligned": {"a": [{"operation_id": i, "name": n} for i, n in self.only_a],
                                        "b": [{"operation_id": i, "name": n} for i, n in self.only_b]}})

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)


def _device_sql(r: Report) -> str:
    return "(SELECT p.ideal_ns FROM device_perf p WHERE p.operation_id = o.operation_id)" \
        if r._has_table("device_perf") else "NULL"  # a TT-NN report has no estimates


def _row_sql(r: Report) -> str:
    return f"SELECT {_device_sql(r)}, o.duration, o.l1_bytes, o.dram_bytes FROM operations o WHERE o.operation_id = ?"


def _step_means(r: Report, top_level: bool, active: list[int], meas_of: dict[int, int]) -> tuple[str, dict, int]:
    """For per-step averages: (SQL keeping the first active step's ops, {op id: (mean device ns, mean host s, mean
    measured ns)} over the active steps whose ops have the same names in the same order, how many steps those are).
    meas_of: each op's measured ns (measured.of_ops)."""
    step = "(CASE WHEN typeof(o.step) = 'integer' THEN o.step ELSE 0 END)" if has_steps(r._conn) else "0"
    depth = " AND COALESCE(o.depth, 0) = 0" if top_level else ""
    by_step: dict[int, list] = {}
    for n, op_id, name, device, host in r.execute(
            f"SELECT {step}, o.operation_id, o.name, {_device_sql(r)}, o.duration "
            f"FROM operations o WHERE {step} IN ({', '.join(map(str, active))}){depth} ORDER BY o.operation_id"):
        by_step.setdefault(n, []).append((op_id, name, device, host, meas_of.get(op_id)))
    first = by_step.get(active[0], []) if active else []
    same = [ops for ops in by_step.values() if [o[1] for o in ops] == [o[1] for o in first]]
    means = {op[0]: tuple(_mean([ops[k][c] for ops in same]) for c in (2, 3, 4)) for k, op in enumerate(first)}
    return f" AND {step} = {active[0] if active else -1}", means, len(same)


def _mean(xs) -> float | None:
    xs = [x for x in xs if _is_number(x)]
    return sum(xs) / len(xs) if xs else None


def compare_timing(a, b, *, ops: str | None = None, top_level: bool = True, clock: str = "device") -> TimingComparison:
    """Align report B's ops with report A's and pair their times and memory; see the module docstring.

    ops: only ops whose name matches (exact, its last dotted part, or a glob) are listed; all take
    part in the alignment. top_level: only ops the model called (depth 0), as compare does.
    clock: "device" (the model's estimate, the default), "host" (the emulator's time) or "measured" (a real run's,
    attached with `ttreport attach`) for delta, ratio and order.
    """
    if clock not in CLOCKS:
        raise ValueError(f"clock={clock!r}: give one of {', '.join(CLOCKS)}")
    with Report(report_path(a, "compare_timing")) as ra, Report(report_path(b, "compare_timing")) as rb:
        (steps_a, only_a_sql), (steps_b, only_b_sql) = active_steps(ra._conn), active_steps(rb._conn)
        per_step = len(steps_a) != len(steps_b)
        means_a = means_b = None
        steps = {"a": {"steps": steps_a}, "b": {"steps": steps_b}}
        # each op's measured time as read.measured sums it (empty: nothing attached)
        meas_a, meas_b = measured.of_ops(ra), measured.of_ops(rb)
        if per_step:
            only_a_sql, means_a, steps["a"]["averaged_over"] = _step_means(ra, top_level, steps_a, meas_a)
            only_b_sql, means_b, steps["b"]["averaged_over"] = _step_means(rb, top_level, steps_b, meas_b)
        keys: dict[tuple, int] = {}
        names: dict[str, int] = {}
        ids_a, ka, na, _ = _ops(ra, top_level, keys, names, only_a_sql)
        ids_b, kb, nb, _ = _ops(rb, top_level, keys, names, only_b_sql)
        name_of = list(names)
        aligned, only_a, only_b = align(ka, kb, na, nb, key_of=list(keys))
        sql_a, sql_b = _row_sql(ra), _row_sql(rb)
        rows = []
        for i, j in aligned:
            name = name_of[na[i]]
            if ops is not None and not _name_matches(name, ops):
                continue
            (a_dev, a_s, a_l1, a_dram), (b_dev, b_s, b_l1, b_dram) = (
                ra.execute(sql_a, (ids_a[i],)).fetchone(), rb.execute(sql_b, (ids_b[j],)).fetchone())
            a_meas, b_meas = meas_a.get(ids_a[i]), meas_b.get(ids_b[j])
            if per_step:
                (a_dev, a_s, a_meas), (b_dev, b_s, b_meas) = means_a[ids_a[i]], means_b[ids_b[j]]
            rows.append(TimingRow(name, ids_a[i], ids_b[j], a_dev, b_dev, a_s, b_s, a_l1, b_l1, a_dram, b_dram, clock,
                                  a_meas, b_meas))
        totals = {side: {"device_ns": sum(x for x in dev if _is_number(x)),
                         "host_s": sum(s for s in secs if _is_number(s)),
                         # over the ops with a measured time (None: nothing attached), and the model's for them
                         "measured_ns": sum(m for m in meas if _is_number(m)) if any(map(_is_number, meas)) else None,
                         "modelled_measured_ns": sum(x for x, m in zip(dev, meas) if _is_number(x) and _is_number(m)),
                         "peak_l1_bytes": max((x for x in l1 if _is_number(x)), default=None),
                         "peak_dram_bytes": max((x for x in dram if _is_number(x)), default=None)}
                  for side, dev, secs, l1, dram, meas in (
                      ("a", [r.a_device_ns for r in rows], [r.a_host_s for r in rows], [r.a_l1_bytes for r in rows],
                       [r.a_dram_bytes for r in rows], [r.a_measured_ns for r in rows]),
                      ("b", [r.b_device_ns for r in rows], [r.b_host_s for r in rows], [r.b_l1_bytes for r in rows],
                       [r.b_dram_bytes for r in rows], [r.b_measured_ns for r in rows]))}
        # Biggest slowdown first; a row missing a time (a host-only op on the device clock, a TT-NN report) goes last.
        rows.sort(key=lambda r: (r.delta_ns is None, -(r.delta_ns or 0.0), r.a_id))
        return TimingComparison(ra.path, rb.path, rows, [(ids_a[i], name_of[na[i]]) for i in only_a],
                                [(ids_b[j], name_of[nb[j]]) for j in only_b], totals,
                                unrelated_runs(sum(ka[i] == kb[j] for i, j in aligned), len(ka), len(kb)), clock,
                                steps, per_step, constants_note(device_time.constants_file(ra),
                                                                device_time.constants_file(rb)))


def constants_note(a: device_time.ConstantsFile | None, b: device_time.ConstantsFile | None) -> str | None:
    """The line saying the two runs' estimates were made with different constants (DEVICE_SIM_PERF_CONSTANTS, by
    the files' hashes); None when they were made with the same."""
    if (a and a.sha256) == (b and b.sha256):
        return None

    def said(c) -> str:
        return f"calibrated constants from {c.path} (sha256 {c.sha256[:12]})" if c else "the model's own constants"
    return f"A's device estimates use {said(a)}, B's {said(b)}: their differences are partly the constants'"


def _is_number(x) -> bool:
    # A damaged report can hold text where a number belongs: that op's figure is left out, not a TypeError.
    return isinstance(x, (int, float)) and not isinstance(x, bool)
