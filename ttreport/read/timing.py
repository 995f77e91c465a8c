"""Two runs' op durations and memory side by side, ops aligned as the value comparison aligns them.

    from ttreport.read import compare_timing
    t = compare_timing("run-a", "run-b")
    for row in t.rows[:5]:             # biggest slowdowns first
        print(row.name, row.a_s, row.b_s, row.delta_s)

A is the reference: delta = B - A (positive: B is slower), ratio = B / A. Ops pair up through
compare.align (same name and shapes, then same name in the gaps), so a timing row and a
value row speak of the same two ops. No stored tensors are needed. Memory is what each op's row
records: the L1 and DRAM bytes allocated after it ran.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ttreport.read.compare import _name_matches, _ops, align, json_safe, report_path, unrelated_runs
from ttreport.read.report import Report


@dataclass(slots=True)
class TimingRow:
    name: str
    a_id: int
    b_id: int
    a_s: float | None  # duration in A, seconds (None: not recorded)
    b_s: float | None
    a_l1_bytes: int | None  # L1 allocated after the op in A
    b_l1_bytes: int | None
    a_dram_bytes: int | None
    b_dram_bytes: int | None

    @property
    def delta_s(self) -> float | None:
        return None if not _is_number(self.a_s) or not _is_number(self.b_s) else self.b_s - self.a_s

    @property
    def ratio(self) -> float | None:
        return self.b_s / self.a_s if self.delta_s is not None and self.a_s > 0 else None

    def to_dict(self) -> dict:
        return {**asdict(self), "delta_s": self.delta_s, "ratio": self.ratio}


@dataclass
class TimingComparison:
    a: Path
    b: Path
    rows: list[TimingRow]  # biggest slowdown (B - A) first; rows without both durations last
    only_a: list[tuple[int, str]]  # (operation_id, name) with no partner in B
    only_b: list[tuple[int, str]]
    totals: dict  # per side: seconds in the aligned ops, peak L1 and DRAM bytes after any aligned op
    unrelated: str | None = None  # the line saying A and B look like different models (compare.unrelated_runs)

    def to_dict(self) -> dict:
        return json_safe({"a": str(self.a), "b": str(self.b), "unrelated": self.unrelated, "totals": self.totals,
                          "ops": [r.to_dict() for r in self.rows],
                          "unaligned": {"a": [{"operation_id": i, "name": n} for i, n in self.only_a],
                                        "b": [{"operation_id": i, "name": n} for i, n in self.only_b]}})

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)


_ROW_SQL = "SELECT operation_id, duration, l1_bytes, dram_bytes FROM operations WHERE operation_id = ?"


def compare_timing(a, b, *, ops: str | None = None, top_level: bool = True) -> TimingComparison:
    """Align report B's ops with report A's and pair their durations and memory; see the module docstring.

    ops: only ops whose name matches (exact, its last dotted part, or a glob) are listed; all take
    part in the alignment. top_level: only ops the model called (depth 0), as compare does.
    """
    with Report(report_path(a, "compare_timing")) as ra, Report(report_path(b, "compare_timing")) as rb:
        keys: dict[tuple, int] = {}
        names: dict[str, int] = {}
        ids_a, ka, na, _ = _ops(ra, top_level, keys, names)
        ids_b, kb, nb, _ = _ops(rb, top_level, keys, names)
        name_of = list(names)
        aligned, only_a, only_b = align(ka, kb, na, nb, key_of=list(keys))
        rows = []
        for i, j in aligned:
            name = name_of[na[i]]
            if ops is not None and not _name_matches(name, ops):
                continue
            (_, a_s, a_l1, a_dram), (_, b_s, b_l1, b_dram) = (
                ra.execute(_ROW_SQL, (ids_a[i],)).fetchone(), rb.execute(_ROW_SQL, (ids_b[j],)).fetchone())
            rows.append(TimingRow(name, ids_a[i], ids_b[j], a_s, b_s, a_l1, b_l1, a_dram, b_dram))
        totals = {side: {"seconds": sum(s for s in secs if _is_number(s)),
                         "peak_l1_bytes": max((x for x in l1 if _is_number(x)), default=None),
                         "peak_dram_bytes": max((x for x in dram if _is_number(x)), default=None)}
                  for side, secs, l1, dram in (
                      ("a", [r.a_s for r in rows], [r.a_l1_bytes for r in rows], [r.a_dram_bytes for r in rows]),
                      ("b", [r.b_s for r in rows], [r.b_l1_bytes for r in rows], [r.b_dram_bytes for r in rows]))}
        # Biggest slowdown first; a row missing a duration (a TT-NN report without timings) goes last.
        rows.sort(key=lambda r: (r.delta_s is None, -(r.delta_s or 0.0), r.a_id))
        return TimingComparison(ra.path, rb.path, rows, [(ids_a[i], name_of[na[i]]) for i in only_a],
                                [(ids_b[j], name_of[nb[j]]) for j in only_b], totals,
                                unrelated_runs(sum(ka[i] == kb[j] for i, j in aligned), len(ka), len(kb)))


def _is_number(x) -> bool:
    # A damaged report can hold text where a number belongs: that op's figure is left out, not a TypeError.
    return isinstance(x, (int, float)) and not isinstance(x, bool)
