"""2. Persistence: a capture of many small ops, how fast its writer goes, and how big the report is.

The writer's rate is op records per second of the writer thread's own CPU time (read from
its thread CPU clock), so a neighbour on the shared cores or the model thread holding the
GIL does not count against it. The capture's end-to-end rate is shown beside it.
"""

from __future__ import annotations

import os
import threading
import time

import device_sim as ttnn
import ttreport
from bench.common import Figure, at_least, at_most, info, small_inputs

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

        cap = ttreport.capture(path, config=ttreport.Config(tensors="none", writer="thread"))  # its thread is clocked
        cap.start()
        clock = _WriterClock()
        try:
            t = time.perf_counter()
            for i in range(n_ops // OPS_PER_STEP):
                step(i)
            loop = time.perf_counter() - t
        finally:
            t = time.perf_counter()
            cap.stop()
            close = time.perf_counter() - t
        return loop, close, clock.stop()
    finally:
        ttnn.close_device(device)


class _WriterClock(threading.Thread):
    """Samples the CPU clock of the capture's writer thread until that thread ends."""

    def __init__(self):
        super().__init__(daemon=True)
        self.writer = next(t for t in threading.enumerate() if t.name == "ttreport-writer")
        self.cpu_s = 0.0
        self._done = threading.Event()
        self.start()

    def run(self) -> None:
        clock = time.pthread_getcpuclockid(self.writer.ident)
        while self.writer.is_alive() and not self._done.is_set():
            try:
                self.cpu_s = time.clock_gettime(clock)
            except OSError:  # the thread ended between the check and the read
                break
            time.sleep(0.005)

    def stop(self) -> float:
        self.writer.join()
        self._done.set()
        self.join()
        return self.cpu_s


def run(tmp, *, n_ops: int) -> tuple[list[Figure], object]:
    path = tmp / "big-report"
    loop, close, writer_cpu = make_report(path, n_ops)
    n = n_ops // OPS_PER_STEP * OPS_PER_STEP
    with ttreport.open(path) as report:
        status, count = report.status, report.count_operations()
    db_bytes = os.path.getsize(path / "db.sqlite")
    return [
        info(f"capture of {n:,} ops: model loop", loop, "s"),
        info(f"capture of {n:,} ops: close (drain, indexes)", close, "s"),
        at_least("writer: op records per writer-CPU second", n / writer_cpu, "records/s", 150_000),
        info("capture end to end (loop + close)", n / (loop + close), "ops/s"),
        Figure(f"report opens, status {status!r}, ops counted", count, "ops", f"== {n:,}",
               count == n and status == "complete"),
        at_most("report bytes per op (db.sqlite, no tensors)", db_bytes / n, "bytes/op", 500),
    ], path
