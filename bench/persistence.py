"""2. Persistence: a capture of many small ops, how fast its writer goes, and how big the report is.

The writer's rate is op records per second of the writer process's own CPU time (RUSAGE_CHILDREN once the
capture has reaped it), so a neighbour on the shared cores does not count against it. The capture's
end-to-end rate is shown beside it. (Until issue 32 this clocked the retired writer thread.)
"""

from __future__ import annotations

import os
import resource
import time

import device_sim as ttnn
import ttreport
from bench.common import Figure, at_most, info, small_inputs

# A mix, so that "ops by name" and the cookbook have something to find; a 32x32 matmul costs
# about 15 simple ops in device_sim, so one step in 25 has one.
OPS_PER_STEP = 4
MATMUL_EVERY = 25


def make_report(path, n_ops: int) -> tuple[float, float, float]:
    """Capture `n_ops` small ops into `path`: (loop seconds, close seconds, writer CPU seconds)."""
    device = ttnn.open_device(0)
    try:
        a, b = small_inputs(device)

        def step(i):
            c = ttnn.add(a, b)
            d = ttnn.mul(c, b)
            e = ttnn.relu(d, memory=ttnn.L1)  # so that L1 use rises and falls
            return ttnn.matmul(e, a) if i % MATMUL_EVERY == 0 else ttnn.sub(e, a)

        cap = ttreport.capture(path, config=ttreport.Config(tensors="none"))
        cap.start()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)  # after start: its `git rev-parse` is reaped
        try:
            t = time.perf_counter()
            for i in range(n_ops // OPS_PER_STEP):
                step(i)
            loop = time.perf_counter() - t
        finally:
            t = time.perf_counter()
            cap.stop()  # reaps the writer process: its CPU is in RUSAGE_CHILDREN now
            close = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return loop, close, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    finally:
        ttnn.close_device(device)


def run(tmp, *, n_ops: int) -> tuple[list[Figure], object]:
    path = tmp / "big-report"
    idle_cpu = make_report(tmp / "idle-report", 0)[2]  # the writer process's start-up and close, no ops
    loop, close, writer_cpu = make_report(path, n_ops)
    writer_cpu = max(writer_cpu - idle_cpu, 1e-9)
    n = n_ops // OPS_PER_STEP * OPS_PER_STEP
    with ttreport.open(path) as report:
        status, count = report.status, report.count_operations()
    db_bytes = os.path.getsize(path / "db.sqlite")
    return [
        info(f"capture of {n:,} ops: model loop", loop, "s"),
        info(f"capture of {n:,} ops: close (drain, indexes)", close, "s"),
        # issue 14's >= 150,000 was withdrawn by issue 33 (beyond SQLite itself for ~34 rows an op): printed, not judged
        info("writer: op records per writer-CPU second", n / writer_cpu, "records/s"),
        info("capture end to end (loop + close)", n / (loop + close), "ops/s"),
        Figure(f"report opens, status {status!r}, ops counted", count, "ops", f"== {n:,}",
               count == n and status == "complete"),
        at_most("report bytes per op (db.sqlite, no tensors)", db_bytes / n, "bytes/op", 500),
    ], path
