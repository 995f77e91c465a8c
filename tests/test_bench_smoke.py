"""The benchmarks at tiny sizes (`python -m bench --quick`), so that they never rot.

This checks that every benchmark runs and prints every figure; it does not judge the
targets (tiny sizes say nothing about speed). `make bench` runs the real sizes.
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FIGURES = [
    "writer=process, metadata+stacks: added on model thread", "torch.profiler added / writer=process added",
    "commit-per-insert / ttreport added", "tensors=outputs: wall added (loop + close) / torch.save's",
    "writer: op records per writer-CPU second", "report bytes per op", "report opens, status 'complete'",
    "model-thread added / raw write time", "stored end to end / raw write+fsync",
    "op by id: p50", "ops by name (first page of 100): p50", "an op's inputs and outputs: p50",
    "a tensor's producer and consumers: p50", "10 slowest ops: p50", "peak L1 with its op: p50",
    "cookbook: 10 slowest matmuls with shapes: p50",
    "compare_tensors, 0.5 MiB bf16 each", "compare_tensors / naive", "compare_reports",
    "registry dispatch / direct body", "ttnn.add 32x32 bf16 / torch.add (median of pairs)",
    "ttnn.add 256x256 bf16 / torch.add (median of pairs)", "ttnn.matmul 256^3 bf16 / torch.matmul bf16",
    "ttnn.matmul / torch.matmul float32, same values",
    "ttnn.matmul 256^3 outputs != float32 path's", "!= exact-then-rounded: ours / float32 path",
    "trace: ops exported per second", "html: ops exported per second", "trace peak memory, 2N ops / N ops",
    "held-out: share within 2x", "held-out: share within 4x",
    "capture start, warm", "pytest plugin: added per test", "default report, 32x32 adds: bytes per op",
    "writer process / SQLite alone", "the db's close (late indexes, tensor_lifetime, WAL fold)",
    "ttreport summary: fastest of 1", "compare: CLI / API",
    "device_sim dispatch + allocator (add 32x32): pure / C",
    "ttreport hook + stack walk (captured add 32x32): pure / C",
    "eltwise add 32x32: run() / plain()", "eltwise add 32x32, memory_config=: run() / plain()",
]
# Benchmark 9 needs a PostgreSQL server; where none can start it says "skipped: ..." instead.
STORE_FIGURES = ["history for one op (all runs): p50", "history for one op and shape: p50", "runs (every run): p50"]


def test_every_benchmark_runs_and_prints_every_figure(tmp_path):
    out = subprocess.run([sys.executable, "-m", "bench", "--quick"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={"TMPDIR": str(tmp_path), "PATH": ""})
    assert out.returncode == 0, out.stderr[-3000:]
    for figure in FIGURES:
        lines = [line for line in out.stdout.splitlines() if figure in line]
        assert lines, f"{figure!r} missing from:\n{out.stdout}"
        assert all(re.search(r"\s-?[\d,.]+(e-?\d+)?\s", line) for line in lines), lines
    store_section = out.stdout.split("9. The PostgreSQL store")[1]
    if "skipped: " not in store_section:
        for figure in STORE_FIGURES:
            assert re.search(re.escape(figure) + r"\s+[\d,.]+\s", store_section), (figure, store_section)
    assert "target(s) missed" in out.stdout
    left = [p.name for p in tmp_path.iterdir() if p.name.startswith("ttreport-bench-")]
    assert left == [], "the benchmarks left their temporary folder behind"


def test_an_unknown_benchmark_is_refused_with_the_choices():
    out = subprocess.run([sys.executable, "-m", "bench", "--only", "speed"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2
    assert "unknown benchmark(s) ['speed']" in out.stderr and "capture,persistence" in out.stderr
