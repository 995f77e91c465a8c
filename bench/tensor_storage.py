"""3. Tensor storage: big tensors stored during a capture, against a raw write of the same bytes.

For each size, `count` host tensors are made by ttnn.from_torch (an op, so its output is
stored with tensors="outputs"):
- model-thread cost per tensor = the op's time captured minus uncaptured (medians), judged
  against that tensor's raw write+fsync time;
- end-to-end throughput = bytes stored / (captured loop + close - uncaptured loop), judged
  against a raw sequential write+fsync of the same bytes right after it (after an untimed raw
  pass, so both write into page cache that was used before); the median of three such pairs.
"""

from __future__ import annotations

import os
import shutil
import time

import torch

import device_sim as ttnn
import ttreport
from bench.common import Figure, MiB, at_least, at_most, info, median

REPEATS = 3  # capture/raw pairs per size: the machine is shared, so one pair can land on a busy moment


def run(tmp, *, sizes_mib: list[float], total_mib: float) -> list[Figure]:
    figures = []
    for size in sizes_mib:
        count = max(2, round(total_mib / size))
        figures += _one_size(tmp, size, count)
    return figures


def _one_size(tmp, size_mib: float, count: int) -> list[Figure]:
    numel = int(size_mib * MiB) // 2
    sources = [torch.randn(numel).to(torch.bfloat16) for _ in range(count)]
    nbytes = numel * 2 * count
    label = f"{size_mib:g} MiB x {count}"

    def make_all(times):
        for x in sources:
            t = time.perf_counter()
            ttnn.from_torch(x, dtype=ttnn.bfloat16)
            times.append(time.perf_counter() - t)

    bare_times: list[float] = []
    make_all(bare_times)  # warm-up and the uncaptured op time
    bare_times.clear()
    t = time.perf_counter()
    make_all(bare_times)
    bare_loop = time.perf_counter() - t

    # On this VM a page the guest has not used lately costs ~4x a reused one to fill (the host maps it
    # on first touch): an untimed raw pass leaves freed page cache behind, so the capture's files and
    # the raw files after it both land in reused pages. Without it, whichever writes first pays alone
    # (0.6 s against 0.08 for 256 MiB to the page cache, measured side by side).
    _raw_write(tmp / "raw", sources)
    cap_times: list[float] = []
    ratios, raws = [], []
    for rep in range(REPEATS):  # capture, then raw, side by side; the median pair's ratio is the figure
        path = tmp / f"storage-{size_mib:g}-{rep}"
        cap = ttreport.capture(path, config=ttreport.Config(tensors="outputs", max_tensor_bytes=nbytes * 2))
        cap.start()
        t = time.perf_counter()
        try:
            make_all(cap_times)
        finally:
            cap.stop()
        end_to_end = time.perf_counter() - t - bare_loop
        stored = sum(f.stat().st_size for f in (path / "tensors").iterdir())
        if stored < nbytes:
            raise AssertionError(f"{path}: {stored} bytes of tensor files, expected at least {nbytes}")
        shutil.rmtree(path)
        raws.append(_raw_write(tmp / "raw", sources))
        ratios.append(raws[-1] / end_to_end)

    raw = median(raws)
    added = median(cap_times) - median(bare_times)
    raw_per_tensor = raw / count
    return [
        info(f"{label}: raw write+fsync", nbytes / raw / MiB, "MiB/s"),
        info(f"{label}: model thread added per tensor", added * 1e3, "ms"),
        at_most(f"{label}: model-thread added / raw write time", added / raw_per_tensor * 100, "%", 10),
        at_least(f"{label}: stored end to end / raw write+fsync", median(ratios), "x", 0.8),
    ]


def _raw_write(folder, sources) -> float:
    """Seconds to write each tensor's bytes to its own file with write + fsync, one after another."""
    folder.mkdir(exist_ok=True)
    t = time.perf_counter()
    for i, x in enumerate(sources):
        with open(folder / f"{i}.raw", "wb") as f:
            f.write(memoryview(x.view(torch.uint8).numpy()))
            f.flush()
            os.fsync(f.fileno())
    elapsed = time.perf_counter() - t
    shutil.rmtree(folder)
    return elapsed
