"""Benchmark 10: the performance model's device time against real Wormhole profiler measurements.

    python -m bench --only device_time        # the figures with their targets
    python -m bench.device_time               # the same, then every case with its ratio

Each case of bench/data/wormhole_ops_perf/cases.csv is one op measured on a Wormhole n150 (its source's
repository, path and commit on the row): its shapes, dtypes, layouts, memory configs and math fidelity,
and the measured DEVICE KERNEL DURATION. The case is rebuilt as the model's operands (what
perf_model.estimate_op makes of live tensors with that shape, dtype, layout and memory config) and
estimated; the ratio is estimate / measured. Cases are split once, before any fitting, into a fit set
(constants were tuned on it) and a held-out set (never looked at while tuning): the targets are judged
on the held-out set. bench/README.md ("Device time against Wormhole") has the figures before and after.
"""

from __future__ import annotations

import csv
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from bench.common import Figure, at_least, info
from device_sim import perf_model
from device_sim.compute_config import MathFidelity
from device_sim.types import DataType, Layout

CASES = Path(__file__).parent / "data" / "wormhole_ops_perf" / "cases.csv"
GRID_CORES = 64  # a sharded operand of the data set spans the benchmark's 8x8 grid


def operand(spec: str) -> perf_model.Operand:
    """'1x1x19x1280|TILE|BFLOAT16|DRAM_INTERLEAVED' as the model's operand (as estimate_op would make it)."""
    shape_text, layout, dtype, memory = spec.split("|")
    shape = tuple(int(d) for d in shape_text.split("x"))
    lay = Layout.TILE if layout == "TILE" else Layout.ROW_MAJOR
    nbytes = perf_model.operand_bytes(shape, DataType[dtype], lay)
    kind = "l1" if memory.startswith("L1") else "dram"
    sharded = "SHARDED" in memory
    return perf_model.Operand(nbytes, kind + ("_sharded" if sharded else ""), shape, lay != Layout.TILE,
                              GRID_CORES if sharded else 0)


def estimate(case: dict) -> perf_model.Estimate | None:
    ins = [operand(s) for s in case["inputs"].split(";") if s]
    outs = [operand(case["output"])]
    fidelity = MathFidelity[case["math_fidelity"]] if case["math_fidelity"] else None
    params = {"sfpu_op": case["op"]}
    return perf_model.estimate(case["op"], ins, outs, fidelity, params=params)


def load(path: Path = CASES) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def ratios(cases: list[dict]) -> list[tuple[dict, float, perf_model.Estimate]]:
    out = []
    for c in cases:
        e = estimate(c)
        if e is not None:
            out.append((c, e.ideal_ns / float(c["measured_ns"]), e))
    return out


def summary(rs: list[float]) -> tuple[float, float, float]:
    """Median ratio, share within 2x and within 4x."""
    if not rs:
        return math.nan, math.nan, math.nan
    within = [max(r, 1 / r) for r in rs]
    return statistics.median(rs), sum(w <= 2 for w in within) / len(rs), sum(w <= 4 for w in within) / len(rs)


def run(cases_path: Path = CASES) -> list[Figure]:
    cases = load(cases_path)
    figures = []
    for split in ("fit", "holdout"):
        got = ratios([c for c in cases if c["split"] == split])
        med, w2, w4 = summary([r for _, r, _ in got])
        label = "held-out" if split == "holdout" else "fit"
        if split == "holdout":
            figures += [Figure(f"{label} ({len(got)} cases): median estimate/measured", med, "x", "0.8-1.25",
                               0.8 <= med <= 1.25),
                        at_least(f"{label}: share within 2x", 100 * w2, "%", 80),
                        at_least(f"{label}: share within 4x", 100 * w4, "%", 95)]
        else:
            figures += [info(f"{label} ({len(got)} cases): median estimate/measured", med, "x"),
                        info(f"{label}: share within 2x", 100 * w2, "%"),
                        info(f"{label}: share within 4x", 100 * w4, "%")]
    every = ratios(cases)
    by_family = defaultdict(list)
    for c, r, _ in every:
        by_family[c["family"]].append(r)
    for family, rs in sorted(by_family.items()):
        med, w2, _ = summary(rs)
        figures.append(info(f"all cases, {family} ({len(rs)}): median ratio / % within 2x", med,
                            f"x / {100 * w2:.0f}%"))
    cores = [(int(c["cores_measured"]), e.cores) for c, _, e in every if c["cores_measured"]]
    figures.append(info("cases whose modelled core count is the profiler's", 100 * sum(a == b for a, b in cores) /
                        max(1, len(cores)), "%"))
    return figures


def main() -> int:
    for f in run():
        print(f.line())
    print(f"\n{'case':>4} {'split':<7} {'family':<14} {'op':<24} {'cores':>9} {'measured':>10} {'estimate':>10} ratio")
    for c, r, e in ratios(load()):
        print(f"{c['case']:>4} {c['split']:<7} {c['family']:<14} {c['op']:<24} {c['cores_measured']:>4}/{e.cores:<4} "
              f"{int(c['measured_ns']):>10,} {e.ideal_ns:>10,} {r:6.2f}  {c['inputs'].split(';')[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
