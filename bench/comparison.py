"""5. Comparison: compare_tensors against a naive torch PCC + max-abs, and compare_reports' memory.

Throughput counts the bytes of both bfloat16 inputs. compare_reports runs in a subprocess
whose peak RSS (VmHWM, whole process: interpreter, torch and all) is judged against the
two largest tensors plus 300 MB.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

import torch

import device_sim as ttnn
import ttreport
from bench.common import Figure, MiB, at_least, at_most, info, median, timed
from ttreport.metrics import compare_tensors


def naive(a: torch.Tensor, g: torch.Tensor) -> tuple[float, float]:
    """PCC and max |a - g| as a notebook writes them: whole-tensor float32 temporaries."""
    a, g = a.float(), g.float()
    am, gm = a - a.mean(), g - g.mean()
    pcc = (am * gm).sum() / torch.sqrt((am * am).sum() * (gm * gm).sum())
    return pcc.item(), (a - g).abs().max().item()


def run(tmp, *, tensor_mib: float, repeats: int, report_tensors: int, report_tensor_mib: float) -> list[Figure]:
    return _tensors(tensor_mib, repeats) + _compare_reports(tmp, report_tensors, report_tensor_mib)


def _tensors(tensor_mib: float, repeats: int) -> list[Figure]:
    numel = int(tensor_mib * MiB) // 2
    g = torch.randn(numel).to(torch.bfloat16)
    a = (g.float() + 1e-3 * torch.randn(numel)).to(torch.bfloat16)
    gb = 2 * numel * 2 / 1e9
    compare_tensors(a, g), naive(a, g)  # warm-up
    ours, theirs = [], []
    for _ in range(repeats):
        ours.append(timed(lambda: compare_tensors(a, g)))
        theirs.append(timed(lambda: naive(a, g)))
    ref_pcc, r = naive(a, g)[0], compare_tensors(a, g)
    if not math.isclose(r.pcc, ref_pcc, rel_tol=1e-5):
        raise AssertionError(f"compare_tensors pcc {r.pcc} disagrees with the naive {ref_pcc}")
    ours_gbs, naive_gbs = gb / median(ours), gb / median(theirs)
    return [
        at_least(f"compare_tensors, {tensor_mib:g} MiB bf16 each", ours_gbs, "GB/s", 1.5),
        info("naive torch PCC + max-abs", naive_gbs, "GB/s"),
        at_least("compare_tensors / naive", ours_gbs / naive_gbs, "x", 10),
    ]


def _make_report(path, count: int, numel: int, noise: float) -> None:
    gen = torch.Generator().manual_seed(0)
    with ttreport.capture(path, config=ttreport.Config(tensors="outputs", max_tensor_bytes=1 << 40)):
        for _ in range(count):
            x = torch.randn(numel, generator=gen)
            ttnn.from_torch(x + noise * torch.randn(numel), dtype=ttnn.bfloat16)


# VmHWM, not getrusage's ru_maxrss: that one keeps the forking parent's peak across exec.
_CHILD = """
import json, sys, time
import ttreport.read.compare
def hwm():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
base = hwm()
t = time.perf_counter()
ttreport.read.compare.compare_reports(sys.argv[1], sys.argv[2])
print(json.dumps({"wall_s": time.perf_counter() - t, "base_kib": base, "peak_kib": hwm()}))
"""


def _compare_reports(tmp, count: int, tensor_mib: float) -> list[Figure]:
    label = f"compare_reports, 2 reports of {count} x {tensor_mib:g} MiB"
    try:
        import ttreport.read.compare  # noqa: F401
    except ModuleNotFoundError:
        return [Figure(f"{label}: ttreport.read.compare is missing", math.nan, "", "exists", False)]
    numel = int(tensor_mib * MiB) // 2
    t = time.perf_counter()
    _make_report(tmp / "cmp-a", count, numel, 0.0)
    _make_report(tmp / "cmp-b", count, numel, 1e-3)
    made = time.perf_counter() - t
    out = subprocess.run([sys.executable, "-c", _CHILD, str(tmp / "cmp-a"), str(tmp / "cmp-b")],
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    limit = 2 * tensor_mib * MiB / 1e6 + 300
    return [
        info(f"{label}: making both reports", made, "s"),
        info(f"{label}: wall time", result["wall_s"], "s"),
        info(f"{label}: RSS after imports", result["base_kib"] * 1024 / 1e6, "MB"),
        at_most(f"{label}: peak RSS", result["peak_kib"] * 1024 / 1e6, "MB", limit),
    ]
