"""12. The reading commands' start-up, and `ttreport compare` against the API it wraps (issue 33).

    python -m bench --only startup

Each reading command (--version, ls, summary, ops, op, query on the sample report; history and runs on a throwaway
PostgreSQL store holding it) runs in a fresh interpreter, as the `ttreport` script runs it, `repeats` times; the
figure is the fastest run (the machine is shared: the fastest is the one least disturbed), beside issue 33's
target of 0.3 s, and beside `python -c pass` measured in the same run. `compare A B` is then timed as a user sees
it (a fresh `ttreport compare`, imports and all) against the API's own work in a process that has imported
ttreport and torch already (ttreport.compare_reports(A, B), as issue 33 measured the API): target 1.2x.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from bench.common import Figure, at_most, info

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_reports" / "demo"
# The `ttreport` console script's own two lines (.venv/bin/ttreport): not `python -m ttreport.cli`, which runs the
# module as __main__ and imports it a second time when anything imports ttreport.cli.
SCRIPT = "import sys; from ttreport.cli import main; sys.argv[0] = 'ttreport'; sys.exit(main())"
TARGET_S = 0.3
COMPARE_RATIO = 1.2
COMMANDS = {
    "--version": ["--version"],
    "ls": ["ls", str(SAMPLE.parent)],
    "summary": ["summary", str(SAMPLE)],
    "ops": ["ops", str(SAMPLE)],
    "op": ["op", str(SAMPLE), "12"],
    "query": ["query", str(SAMPLE), "SELECT COUNT(*) FROM operations"],
}


def fastest(argv: list[str], repeats: int) -> float:
    """The fastest of `repeats` runs of `argv` (a fresh process each), in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=300)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[3:]} failed: {done.stderr.strip().splitlines()[-1:]}")
    return min(times)


def command_seconds(args: list[str], repeats: int) -> float:
    return fastest([sys.executable, "-c", SCRIPT, *args], repeats)


def _store_commands(tmp: Path, repeats: int) -> list[Figure]:
    """history and runs on a throwaway store holding the sample report (skipped without PostgreSQL)."""
    from ttreport.store import push, throwaway

    try:
        cluster = throwaway.start()
    except throwaway.Unavailable as e:
        print(f"  history, runs skipped: {e}")
        return []
    try:
        url = cluster.new_database()
        (tmp / "tensor-store").mkdir(exist_ok=True)  # where the sample's tensor files go
        url += ("&" if "?" in url else "?") + f"tensors={tmp / 'tensor-store'}"
        push(SAMPLE, url, name="sample")
        return [at_most(f"ttreport {name}: fastest of {repeats}", command_seconds(args, repeats),
                        "s", TARGET_S)
                for name, args in (("history", ["history", url, "--op", "ttnn.matmul"]), ("runs", ["runs", url]))]
    finally:
        cluster.stop()


def _compare(repeats: int) -> list[Figure]:
    import torch  # noqa: F401 (imported before the API is timed: issue 33's API figure has torch imported)

    import ttreport

    ttreport.compare_reports(SAMPLE, SAMPLE)  # the first call's own imports, before the timed ones
    api = []
    for _ in range(repeats):
        start = time.perf_counter()
        ttreport.compare_reports(SAMPLE, SAMPLE)
        api.append(time.perf_counter() - start)
    cli = command_seconds(["compare", str(SAMPLE), str(SAMPLE)], repeats)
    return [info("compare: the API (compare_reports, torch imported)", min(api), "s"),
            info("compare: the CLI (`ttreport compare A B`, fresh)", cli, "s"),
            at_most("compare: CLI / API", cli / min(api), "x", COMPARE_RATIO)]


def run(tmp: Path, repeats: int) -> list[Figure]:
    figures = [info(f"python -c pass: fastest of {repeats} (the interpreter alone)",
                    fastest([sys.executable, "-c", "pass"], repeats), "s")]
    figures += [at_most(f"ttreport {name}: fastest of {repeats}", command_seconds(args, repeats),
                        "s", TARGET_S) for name, args in COMMANDS.items()]
    figures += _store_commands(tmp, repeats)
    figures += _compare(repeats)
    return figures
