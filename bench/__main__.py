"""Run the benchmarks and print every figure with its target.

    python -m bench              # every benchmark, full sizes (a few minutes on 2 cores)
    python -m bench --quick      # tiny sizes, a few seconds: checks that they run, not the targets
    python -m bench --only capture,dispatch

Big files (the 1,000,000-op report, the tensors) go to a temporary folder removed at the end.
The exit status is 0 whatever the verdicts: misses are findings, shown as MISS.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

from bench import (
    capture_overhead,
    comparison,
    device_time,
    dispatch,
    footprint,
    persistence,
    queries,
    seams,
    tensor_storage,
)
from bench import exports as exports_bench
from bench import startup as startup_bench
from bench import store as store_bench
from bench import upgrade as upgrade_bench

FULL = dict(
    capture=dict(n_ops=20_000, repeats=3, commit_ops=100),
    persistence=dict(n_ops=1_000_000),
    queries=dict(repeats=30),
    storage=dict(sizes_mib=[1, 4, 16, 64, 256], total_mib=256),
    comparison=dict(tensor_mib=64, repeats=3, report_tensors=16, report_tensor_mib=64),
    dispatch=dict(n_ops=20_000, repeats=7),
    upgrade=dict(sizes=[20_000, 40_000, 200_000]),
    exports=dict(n_ops=40_000),
    store=dict(runs=1_000, ops=10_000, repeats=30),
    startup=dict(repeats=5, plugin_tests=20),
    device_time=dict(),
    footprint=dict(n_ops=20_000, repeats=7, plugin_tests=20),
    seams=dict(ops=20_000, repeats=3),
)
QUICK = dict(
    capture=dict(n_ops=200, repeats=1, commit_ops=5),
    persistence=dict(n_ops=2_000),
    queries=dict(repeats=3),
    storage=dict(sizes_mib=[0.0625, 0.25], total_mib=0.25),
    comparison=dict(tensor_mib=0.5, repeats=1, report_tensors=2, report_tensor_mib=0.0625),
    dispatch=dict(n_ops=200, repeats=3, big_ops=2, matmul_ops=1, big=256, layers=1, seq=32, prefill=512,
                  prefill_chunk=256),
    upgrade=dict(sizes=[200, 400]),
    exports=dict(n_ops=400),
    store=dict(runs=20, ops=200, repeats=3),
    startup=dict(repeats=1, plugin_tests=2),
    device_time=dict(),
    footprint=dict(n_ops=200, repeats=2, plugin_tests=2),
    seams=dict(ops=200, repeats=1),
)
TITLES = {
    "capture": "1. Capture overhead (model thread)",
    "persistence": "2. Persistence",
    "storage": "3. Tensor storage",
    "queries": "4. Queries on the big report",
    "comparison": "5. Comparison",
    "dispatch": "6. Dispatch with no capture",
    "upgrade": "7. Upgrading an old report",
    "exports": "8. Exports: trace and HTML",
    "store": "9. The PostgreSQL store: history and runs over 1,000 runs",
    "device_time": "10. Device time against real Wormhole measurements (held-out cases)",
    "footprint": "11. Start-up, bytes, the writer against SQLite, the close (issue 33)",
    "startup": "12. Reading commands' start-up; compare, the CLI against the API (issue 33)",
    "seams": "13. Each native fast path against its pure-Python specification (issue 32)",
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes; seconds, for the smoke test")
    parser.add_argument("--only", default=",".join(TITLES), help=f"comma-separated subset of {','.join(TITLES)}")
    parser.add_argument("--capture-ops", type=int, default=0,
                        help="also capture this many ops with each writer (1000000: issue 14's close target)")
    args = parser.parse_args(argv)
    chosen = args.only.split(",")
    unknown = set(chosen) - set(TITLES)
    if unknown:
        parser.error(f"unknown benchmark(s) {sorted(unknown)}; choose from {','.join(TITLES)}")
    sizes = QUICK if args.quick else FULL
    torch.set_num_threads(max(1, torch.get_num_threads()))
    print(f"python -m bench{' --quick' if args.quick else ''}: Python {platform.python_version()}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} torch threads")
    started = time.perf_counter()
    misses = 0
    with tempfile.TemporaryDirectory(prefix="ttreport-bench-") as tmp:
        tmp, big_report = Path(tmp), None
        for key in TITLES:
            if key not in chosen:
                continue
            print(f"\n{TITLES[key]}", flush=True)
            t = time.perf_counter()
            if key == "persistence" or (key == "queries" and big_report is None):
                figures, big_report = persistence.run(tmp, **sizes["persistence"])
                if key == "queries":
                    figures = []
            if key == "capture":
                figures = capture_overhead.run(tmp, **sizes[key], big_ops=args.capture_ops)
            elif key == "queries":
                figures = queries.run(big_report, **sizes[key])
            elif key == "storage":
                figures = tensor_storage.run(tmp, **sizes[key])
            elif key == "comparison":
                figures = comparison.run(tmp, **sizes[key])
            elif key == "dispatch":
                figures = dispatch.run(tmp, **sizes[key])
            elif key == "upgrade":
                figures = upgrade_bench.run(tmp, **sizes[key])
            elif key == "exports":
                figures = exports_bench.run(tmp, **sizes[key])
            elif key == "store":
                figures = store_bench.run(tmp, **sizes[key])
            elif key == "device_time":
                figures = device_time.run(**sizes[key])
            elif key == "startup":
                figures = startup_bench.run(tmp, **sizes[key])
            elif key == "seams":
                figures = seams.run(tmp, **sizes[key])
            elif key == "footprint":
                figures = footprint.run(tmp, **sizes[key], big_ops=args.capture_ops)
            for f in figures:
                print(f.line(), flush=True)
                misses += f.ok is False
            print(f"  ({time.perf_counter() - t:.1f} s)")
    print(f"\n{misses} target(s) missed; {time.perf_counter() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
