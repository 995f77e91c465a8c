"""11. What a capture costs besides the model's thread (issue 33): start-up, bytes, the writer, the close.

    python -m bench --only footprint                     # ~1-2 minutes on 2 cores
    python -m bench --only footprint --capture-ops 1000000   # + the 1,000,000-op close and the 500k report, for real

Each figure is printed beside its target, with what it is set against measured in the same run:
- capture start, warm and cold, against torch.profiler's, and the pytest plugin's cost per test: bench 12's
  (bench/startup.py, `--only startup`), printed here too;
- bytes per op of a default report of 32x32 adds (db.sqlite once closed), and the 500,000-op report those
  bytes make (projected from the measured ops, unless --capture-ops ran that many);
- the writer process's ops per second of its CPU against SQLite alone copying the same report's rows with
  INSERT ... SELECT (bench.capture_overhead's measure), and the close after the loop.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.capture_overhead import _sqlite_alone_close_s, _sqlite_alone_ops_per_s
from bench.common import Figure, at_least, at_most, info
from bench.startup import capture_start, plugin_per_test

REPO = Path(__file__).resolve().parents[1]
BYTES_PER_OP = 1500  # issue 33's targets
REPORT_500K_GB = 0.75
WRITER_VS_SQLITE = 0.8
CLOSE_1M_S = 3.0


def run(tmp, *, n_ops: int, repeats: int, plugin_tests: int, big_ops: int = 0) -> list[Figure]:
    figures = capture_start(tmp, repeats)  # bench 12's, printed here too beside the bytes and the writer
    figures += plugin_per_test(tmp, plugin_tests)
    return figures + _report(tmp, n_ops, big_ops)


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
if sys.argv[3:] == ["executemany"]:  # the writer's executemany route, beside the one it takes (writer.ROWS)
    from ttreport.capturing import writer
    writer.ROWS = False  # read by the writer process, forked from this one
if sys.argv[3:] == ["pyread"]:  # its log read in Python, beside the C read it takes (oplog.NATIVE)
    from ttreport.capturing import oplog
    oplog.NATIVE = False
cpu_s = []
for name, ops in (("idle", 0), ("report", n)):  # the writer process's start-up and close alone, then the loop's
    cap = ttreport.capture(f"{path}-{name}", config=ttreport.Config())
    cap.start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # after start: its `git rev-parse` is reaped
    t = time.perf_counter()
    for _ in range(ops):
        ttnn.add(a, b)
    loop_s = time.perf_counter() - t
    sink = cap._writer.sink  # the log's bytes the writer process had still to write when the loop ended
    behind = (sink._done + sink._off - sink.written()) / max(sink._done + sink._off, 1) * ops
    t = time.perf_counter()
    cap.stop()  # reaps the writer process: its CPU is in RUSAGE_CHILDREN now
    close_s = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s.append((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
print(json.dumps({"loop_s": loop_s, "close_s": close_s, "writer_cpu_s": cpu_s[1] - cpu_s[0], "behind_ops": behind,
                  "writer_s": cap.close_s.get("writer", 0.0), "perf_files_s": cap.close_s.get("perf_files", 0.0),
                  "db_close_s": (cap._writer.result or {}).get("db_close_s", 0.0)}))
"""


def _capture(tmp, n: int, name: str, *route: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _LOOP, str(n), str(tmp / name), *route], cwd=REPO,
                         capture_output=True, text=True, timeout=3600)
    if out.returncode:
        raise RuntimeError(f"the {n:,}-add capture failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def _report(tmp, n_ops: int, big_ops: int) -> list[Figure]:
    """A default capture of n_ops adds (a model script's loop, in its own interpreter): its bytes per op, the
    writer's rate against SQLite's (and again with the writer's rows bound by executemany, the route without
    _rows.c, and with its log read in Python, the route without _logread.c), its close; with big_ops, one more
    capture of that many, for its close."""
    figures = []
    for n, name in ((n_ops, "report"), (big_ops, "big")):
        if not n:
            continue
        got = _capture(tmp, n, name)
        db = tmp / f"{name}-report" / "db.sqlite"
        per_op = db.stat().st_size / n
        label = f"{n:,} adds"
        # The close, split: the writer process's backlog (the ops it had still to write when the loop ended), then
        # its db's close (the late indexes, tensor_lifetime, the WAL's fold); then the perf files, in the model's.
        figures += [info(f"close ({label}): ops the writer had still to write at the loop's end", got["behind_ops"],
                         "ops"),
                    info(f"close ({label}): the writer's backlog", got["writer_s"] - got["db_close_s"], "s"),
                    info(f"close ({label}): the db's close (late indexes, tensor_lifetime, WAL fold)",
                         got["db_close_s"], "s"),
                    info(f"close ({label}): the perf files", got["perf_files_s"], "s")]
        figures += [at_most(f"default report, 32x32 adds: bytes per op ({label})", per_op, "B/op", BYTES_PER_OP)]
        figures += _by_table(db, n)
        if name == "report":
            writer_rate = n / max(got["writer_cpu_s"], 1e-9)
            pure_rate = n / max(_capture(tmp, n, "executemany", "executemany")["writer_cpu_s"], 1e-9)
            pyread_rate = n / max(_capture(tmp, n, "pyread", "pyread")["writer_cpu_s"], 1e-9)
            sqlite_rate = _sqlite_alone_ops_per_s(db, tmp / "sqlite-alone.sqlite")
            sqlite_close_s = _sqlite_alone_close_s(tmp / "sqlite-alone.sqlite")
            same_file_rate = n / (n / sqlite_rate + sqlite_close_s)
            figures += [
                info("writer process: ops per second of its CPU", writer_rate, "ops/s"),
                info("SQLite alone: INSERT ... SELECT of the same rows, per CPU s", sqlite_rate, "ops/s"),
                info("writer process / SQLite alone, its rows by executemany (no _rows.c)",
                     pure_rate / sqlite_rate, "x"),
                info("writer process / SQLite alone, its log read in Python (no _logread.c)",
                     pyread_rate / sqlite_rate, "x"),
                at_least("writer process / SQLite alone", writer_rate / sqlite_rate, "x", WRITER_VS_SQLITE),
                info("SQLite alone: then the writer's close of those rows (late indexes, WAL fold), per op",
                     sqlite_close_s / n * 1e6, "µs/op"),
                info("writer process / SQLite alone making the same final file (copy + that close)",
                     writer_rate / same_file_rate, "x"),
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
