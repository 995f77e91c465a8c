"""What every benchmark shares: figures with their targets, timing, and the printout.

A figure that has a target is judged in the same run as the thing it is compared with
(ratios, never absolute timings judged against a number from another day), except where
the issue states an absolute target (µs/op, records/s, ms, GB/s, bytes): those are judged
as measured here and now.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

import device_sim as ttnn

MiB = 1 << 20


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    target: str = ""  # e.g. "<= 10"; empty for figures shown for context
    ok: bool | None = None  # None: no target

    def line(self) -> str:
        verdict = "" if self.ok is None else ("PASS" if self.ok else "MISS")
        return f"  {self.name:<58} {_num(self.value):>12} {self.unit:<10} {self.target:<16} {verdict}"


def at_most(name: str, value: float, unit: str, limit: float) -> Figure:
    return Figure(name, value, unit, f"<= {_num(limit)}", value <= limit)


def at_least(name: str, value: float, unit: str, limit: float) -> Figure:
    return Figure(name, value, unit, f">= {_num(limit)}", value >= limit)


def info(name: str, value: float, unit: str) -> Figure:
    return Figure(name, value, unit)


def _num(v: float) -> str:
    if v != v or v in (float("inf"), float("-inf")):
        return str(v)
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def timed(fn: Callable[[], object]) -> float:
    """Seconds `fn()` takes, with the garbage of earlier work collected first."""
    gc.collect()
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def median(xs) -> float:
    return statistics.median(xs)


def percentile(xs, p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def small_inputs(device, size: int = 32):
    """Two size x size bfloat16 tiles on `device`: the "small op" of the benchmarks."""
    a = ttnn.from_torch(torch.randn(size, size), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.randn(size, size), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    return a, b
