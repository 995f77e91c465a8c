"""8. Exports: `ttreport trace` and `ttreport html` on a captured run (issue 13, part A).

    python -m bench --only exports

A run of N small ops (an add and the deallocate of its output, so memory moves every op) is
captured, then exported as a trace and as HTML. Figures: ops exported per second, bytes per op of
each file, and the trace export's peak Python memory (tracemalloc) at N and 2N ops: the events are
streamed from SQL to the file, so doubling the ops must not double the memory (target: at most
1.5x). The HTML keeps its chart series (a few numbers per op) in memory, shown for context. TT-NN's perf
files (ops_perf_results.csv, profile_log_device.csv), which every capture writes at close, are timed
per 1,000 estimated ops (target: at most 50 ms, the bar for Config.perf_files to default on).
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from pathlib import Path

import device_sim as ttnn
import ttreport
from bench.common import at_most, info, small_inputs
from ttreport.export.ops_perf import export_ops_perf


def capture(tmp: Path, n_ops: int) -> Path:
    dev = ttnn.open_device(0)
    try:
        with ttreport.capture(tmp / f"exports-{n_ops}", config=ttreport.Config(overwrite=True)) as cap:
            a, b = small_inputs(dev)
            for _ in range(n_ops // 2):
                ttnn.deallocate(ttnn.add(a, b))
    finally:
        ttnn.close_device(dev)
    return cap.path


def peak_bytes(fn) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run(tmp: Path, n_ops: int) -> list:
    small, big = capture(tmp, n_ops // 2), capture(tmp, n_ops)
    figures = []
    with ttreport.open(big) as r:
        ops = r.count_operations()
        for what, export, out in (("trace", r.export_chrome_trace, "t.json"), ("trace .gz", r.export_chrome_trace,
                                                                             "t.json.gz"),
                                  ("html", r.export_html, "t.html")):
            gc.collect()
            t = time.perf_counter()
            path = export(tmp / out)
            seconds = time.perf_counter() - t
            figures.append(info(f"{what}: ops exported per second ({ops:,} ops)", ops / seconds, "ops/s"))
            figures.append(info(f"{what}: file bytes per op", path.stat().st_size / ops, "B/op"))
        # TT-NN's perf files, as every capture writes them at close (Config.perf_files defaults on below 50 ms)
        t = time.perf_counter()
        export_ops_perf(r, tmp / "perf")
        per_1000 = (time.perf_counter() - t) * 1e3 * 1000 / r.execute("SELECT COUNT(*) FROM device_perf").fetchone()[0]
        figures.append(at_most("perf files (ops_perf_results.csv, profile_log_device.csv) per 1,000 ops", per_1000,
                               "ms", 50))
        peak_big = peak_bytes(lambda: r.export_chrome_trace(tmp / "m.json"))
        html_big = peak_bytes(lambda: r.export_html(tmp / "m.html"))
    with ttreport.open(small) as r:
        peak_small = peak_bytes(lambda: r.export_chrome_trace(tmp / "m.json"))
        html_small = peak_bytes(lambda: r.export_html(tmp / "m.html"))
    figures.append(info(f"trace peak Python memory at {ops:,} ops", peak_big / 2**20, "MiB"))
    figures.append(at_most("trace peak memory, 2N ops / N ops", peak_big / peak_small, "x", 1.5))
    figures.append(info(f"html peak Python memory at {ops:,} ops (N: {html_small / 2**20:.1f})", html_big / 2**20,
                        "MiB"))
    return figures
