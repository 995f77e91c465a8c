"""11. What a capture costs besides the model's thread (issue 33): start-up, bytes, the writer, the close.

    python -m bench --only footprint                     # ~1-2 minutes on 2 cores
    python -m bench --only footprint --capture-ops 1000000   # + the 1,000,000-op close and the 500k report, for real

Each figure is printed beside its target, with what it is set against measured in the same run:
- capture start, warm (imports done, a capture made before) and cold (a fresh interpreter that has imported
  what the model imports, torch and device_sim: `import ttreport` and the first capture's start count),
  against torch.profiler(record_shapes, with_stack)'s start under the same two conditions;
- the pytest plugin's cost per test: the same file of small device tests run with and without --ttreport;
- bytes per op of a default report of 32x32 adds (db.sqlite once closed), and the 500,000-op report those
  bytes make (projected from the measured ops, unless --capture-ops ran that many);
- the writer process's ops per second of its CPU against SQLite alone copying the same report's rows with
  INSERT ... SELECT (bench.capture_overhead's measure), and the close after the loop.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import torch

import ttreport
from bench.capture_overhead import _sqlite_alone_ops_per_s
from bench.common import Figure, at_least, at_most, info, median

REPO = Path(__file__).resolve().parents[1]
START_WARM_MS = 30  # issue 33's targets
START_COLD_S = 0.3
PLUGIN_MS = 50
BYTES_PER_OP = 1500
REPORT_500K_GB = 0.75
WRITER_VS_SQLITE = 0.8
CLOSE_1M_S = 3.0


def run(tmp, *, n_ops: int, repeats: int, plugin_tests: int, big_ops: int = 0) -> list[Figure]:
    figures = _start(tmp, repeats)
    figures += _plugin(tmp, plugin_tests)
    return figures + _report(tmp, n_ops, big_ops)


def _start(tmp, repeats: int) -> list[Figure]:
    """Warm and cold start of a capture and of torch.profiler, side by side."""
    def ours(i):
        cap = ttreport.capture(tmp / f"start-{i}", config=ttreport.Config())
        t = time.perf_counter()
        cap.start()
        started = time.perf_counter() - t
        cap.stop()
        return started

    def profiler():
        prof = torch.profiler.profile(record_shapes=True, with_stack=True)
        t = time.perf_counter()
        prof.start()
        started = time.perf_counter() - t
        prof.stop()
        return started

    ours(-1), profiler()  # warm: what the first of each loads (modules, the writer's fork path) is loaded
    warm = [ours(i) for i in range(repeats)]
    warm_prof = [profiler() for _ in range(repeats)]
    cold = [_cold("ttreport", tmp / f"cold-{i}") for i in range(max(1, repeats // 2))]
    cold_prof = [_cold("torch.profiler", None) for _ in range(max(1, repeats // 2))]
    w, wp, c, cp = median(warm) * 1e3, median(warm_prof) * 1e3, median(cold), median(cold_prof)
    return [
        at_most("capture start, warm", w, "ms", START_WARM_MS),
        info("torch.profiler(record_shapes, with_stack) start, warm", wp, "ms"),
        info("capture start / torch.profiler start, warm", w / max(wp, 1e-6), "x"),
        at_most("capture start, cold: import ttreport + first start", c, "s", START_COLD_S),
        info("torch.profiler start, cold: import torch.profiler + first start", cp, "s"),
        info("capture start / torch.profiler start, cold", c / max(cp, 1e-9), "x"),
    ]


_COLD = {
    # The model's own imports come first and are not counted: a model under ttreport imports them anyway.
    "ttreport": """
        import sys, time
        import torch, device_sim
        t = time.perf_counter()
        import ttreport
        cap = ttreport.capture(sys.argv[1], config=ttreport.Config())
        cap.start()
        print(time.perf_counter() - t)
        cap.stop()
    """,
    "torch.profiler": """
        import time
        import torch, device_sim
        t = time.perf_counter()
        import torch.profiler
        prof = torch.profiler.profile(record_shapes=True, with_stack=True)
        prof.start()
        print(time.perf_counter() - t)
        prof.stop()
    """,
}


def _cold(which: str, folder) -> float:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(_COLD[which]), str(folder)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    if out.returncode:
        raise RuntimeError(f"the cold start of {which} failed: {out.stderr[-2000:]}")
    return float(out.stdout.split()[-1])


_TESTS = """
import device_sim as ttnn
import pytest
import torch

@pytest.fixture(scope="module")
def device():
    d = ttnn.open_device(0)
    yield d
    ttnn.close_device(d)

@pytest.mark.parametrize("i", range({n}))
def test_add(device, i):
    a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert ttnn.to_torch(a + a)[0, 0] == 2
"""


def _plugin(tmp, n_tests: int) -> list[Figure]:
    """Milliseconds per test that --ttreport adds: a file of n_tests small device tests run with and without it (best
    of 2 each, alternating), timed by pytest itself (--durations: each test's setup, call and teardown summed; the
    interpreter's start and imports, ~3 s and varying by a second on a loaded machine, are left out of both)."""
    folder = tmp / "plugin"
    folder.mkdir()
    (folder / "test_small.py").write_text(_TESTS.replace("{n}", str(n_tests)))
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def pytest(*flags) -> float:
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                              "--durations=0", "--durations-min=0", "test_small.py", *flags], cwd=folder, env=env,
                             capture_output=True, text=True, timeout=600, check=True).stdout
        return sum(float(m) for m in re.findall(r"^([\d.]+)s (?:setup|call|teardown) ", out, re.M))

    plain, captured = [], []
    for _ in range(2):
        plain.append(pytest())
        captured.append(pytest("--ttreport", "--ttreport-root", str(folder / "reports")))
    per_test = (min(captured) - min(plain)) / n_tests * 1e3
    return [at_most(f"pytest plugin: added per test (--ttreport, {n_tests} small tests)", per_test, "ms", PLUGIN_MS)]


# The 32x32 add loop as a model script runs it, at module level: its ops' stacks are one frame, as a model's
# top-level loop gives (a loop inside the bench's own calls recorded ~10 frames, ~1 KB of stack text an op).
_LOOP = """
import json, resource, sys, time
import torch
import device_sim as ttnn
import ttreport

device = ttnn.open_device(0)
a = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
b = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
for _ in range(100):
    ttnn.add(a, b)
n, path = int(sys.argv[1]), sys.argv[2]
cpu_s = []
for name, ops in (("idle", 0), ("report", n)):  # the writer process's start-up and close alone, then the loop's
    cap = ttreport.capture(f"{path}-{name}", config=ttreport.Config())
    cap.start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # after start: its `git rev-parse` is reaped
    t = time.perf_counter()
    for _ in range(ops):
        ttnn.add(a, b)
    loop_s = time.perf_counter() - t
    t = time.perf_counter()
    cap.stop()  # reaps the writer process: its CPU is in RUSAGE_CHILDREN now
    close_s = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s.append((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
print(json.dumps({"loop_s": loop_s, "close_s": close_s, "writer_cpu_s": cpu_s[1] - cpu_s[0]}))
"""


def _report(tmp, n_ops: int, big_ops: int) -> list[Figure]:
    """A default capture of n_ops adds (a model script's loop, in its own interpreter): its bytes per op, the
    writer's rate against SQLite's, its close; with big_ops, one more capture of that many, for its close."""
    figures = []
    for n, name in ((n_ops, "report"), (big_ops, "big")):
        if not n:
            continue
        out = subprocess.run([sys.executable, "-c", _LOOP, str(n), str(tmp / name)], cwd=REPO, capture_output=True,
                             text=True, timeout=3600)
        if out.returncode:
            raise RuntimeError(f"the {n:,}-add capture failed: {out.stderr[-2000:]}")
        got = json.loads(out.stdout.splitlines()[-1])
        db = tmp / f"{name}-report" / "db.sqlite"
        per_op = db.stat().st_size / n
        label = f"{n:,} adds"
        figures += [at_most(f"default report, 32x32 adds: bytes per op ({label})", per_op, "B/op", BYTES_PER_OP)]
        figures += _by_table(db, n)
        if name == "report":
            writer_rate = n / max(got["writer_cpu_s"], 1e-9)
            sqlite_rate = _sqlite_alone_ops_per_s(db, tmp / "sqlite-alone.sqlite")
            figures += [
                info("writer process: ops per second of its CPU", writer_rate, "ops/s"),
                info("SQLite alone: INSERT ... SELECT of the same rows, per CPU s", sqlite_rate, "ops/s"),
                at_least("writer process / SQLite alone", writer_rate / sqlite_rate, "x", WRITER_VS_SQLITE),
                info(f"close after the {label} loop", got["close_s"], "s"),
                info(f"loop per op ({label})", got["loop_s"] / n * 1e6, "µs/op"),
            ]
            if big_ops < 500_000:
                figures.append(at_most(f"a 500,000-op report (projected from {label})", per_op * 5e5 / 1e9, "GB",
                                       REPORT_500K_GB))
        else:
            figures += [at_most(f"close after the {label} loop", got["close_s"], "s", CLOSE_1M_S),
                        info(f"loop per op ({label})", got["loop_s"] / n * 1e6, "µs/op"),
                        at_most(f"a 500,000-op report (the {label}' bytes per op)", per_op * 5e5 / 1e9, "GB",
                                REPORT_500K_GB)]
    return figures


def _by_table(db: Path, n: int) -> list[Figure]:
    """The tables holding most of the bytes (SQLite's dbstat, pages per table and its indexes), per op."""
    import sqlite3

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT COALESCE(m.tbl_name, s.name), SUM(s.pgsize) FROM dbstat s LEFT JOIN sqlite_master m "
                           "ON m.name = s.name GROUP BY 1 ORDER BY 2 DESC LIMIT 5").fetchall()
    except sqlite3.OperationalError:  # a SQLite built without dbstat
        return []
    finally:
        con.close()
    return [info(f"... of it {table} (with its indexes)", size / n, "B/op") for table, size in rows]
