"""Run tt-metal's own tests/ttnn sample (peer/files.txt) against device_sim and tabulate it by family.

    make peer                                     # the whole sample; the table, then the failure causes
    .venv/bin/python -m peer.run --family norms --json generated/peer/norms.json
    .venv/bin/python -m peer.run --file test_softmax.py --max-per-file 0    # 0: every case of the file
    .venv/bin/python -m peer.run --sample my_files.txt --out generated/peer/mine   # files outside the sample

TT_METAL_HOME (default generated/tt-metal) must hold tt-metal at the commit in peer/TT_METAL_COMMIT
(peer/fetch_tt_metal.sh lays it out). The test files are run as they are, through peer/plugin.py.
Exit status: 0 when the run completed (whatever the pass rate), 2 for a setup error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUTCOMES = ("passed", "failed", "error", "skipped")


def sample(path: Path = HERE / "files.txt") -> list[tuple[str, str]]:
    """(family, path under tests/ttnn) for each line of the sample."""
    rows = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            family, rel = line.split()
            rows.append((family, rel))
    return rows


def checked_home(home: Path) -> Path:
    """TT_METAL_HOME, checked to hold the pinned commit; SystemExit(2) naming the fix otherwise."""
    want = (HERE / "TT_METAL_COMMIT").read_text().strip()
    stamp = home / ".tt_metal_commit"
    if stamp.exists():
        have = stamp.read_text().strip()
    elif (home / ".git").exists():
        git = ["git", "-C", str(home), "rev-parse", "HEAD"]
        have = subprocess.run(git, capture_output=True, text=True).stdout.strip()
    else:
        sys.exit(f"peer: {home} holds no tt-metal checkout; lay one out with "
                 f"peer/fetch_tt_metal.sh GIT_DIR {home} (commit {want})")
    if have != want:
        sys.exit(f"peer: {home} is tt-metal {have or '(unknown)'}, not the pinned {want}; "
                 f"lay the pinned one out with peer/fetch_tt_metal.sh, or change peer/TT_METAL_COMMIT on purpose")
    return home


def run(home: Path, files: list[str], *, json_path: Path, log_path: Path, max_per_file: int,
        timeout_s: float) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-p", "peer.plugin", "-p", "no:ttreport", "-p", "no:cacheprovider",
           "--noconftest", "--continue-on-collection-errors", "--rootdir", str(home), "-c", os.devnull,
           "--import-mode=importlib", "-o", "empty_parameter_set_mark=skip", "-q", "--no-header", "-rN",
           "--tb=short",
           f"--peer-json={json_path}", f"--peer-max-per-file={max_per_file}", f"--peer-timeout={timeout_s}",
           *(f"tests/ttnn/{f}" for f in files)]
    env = {**os.environ, "TT_METAL_HOME": str(home),
           "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        subprocess.run(cmd, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT)
    if not json_path.exists():
        sys.exit(f"peer: pytest wrote no results; see {log_path}")
    return json.loads(json_path.read_text())


def cause(message: str) -> str:
    """A failure's line reduced to its cause: the missing name, the refused input, the exception kind."""
    m = re.search(r"module '([\w.]+)' has no attribute '(\w+)'", message)
    if m:
        return f"missing {m[1]}.{m[2]}"
    m = re.search(r"No module named '([\w.]+)'", message)
    if m:
        return f"no module {m[1]}"
    m = re.search(r"'(\w+)' object has no attribute '(\w+)'", message)
    if m:
        return f"missing {m[1]}.{m[2]}"
    m = re.search(r"cannot import name '(\w+)' from '([\w.]+)'", message)
    if m:
        return f"missing {m[2]}.{m[1]}"
    m = re.search(r"got an unexpected keyword argument '(\w+)'", message)
    if m:
        fn = re.search(r"([\w.]+)\(\) got an unexpected", message)
        return f"keyword {m[1]}= refused by {fn[1] if fn else '?'}"
    first = message.strip().splitlines()[0] if message.strip() else "(no message)"
    first = re.sub(r"0x[0-9a-f]+", "0x…", first)
    first = re.sub(r"\d+(\.\d+)?(e-?\d+)?", "N", first)
    return first[:110]


def family_of(nodeid: str, families: dict[str, str]) -> str:
    rel = nodeid.split("::")[0].removeprefix("tests/ttnn/")
    return families.get(rel, "?")


def tabulate(results: list[dict], rows: list[tuple[str, str]]) -> tuple[dict, Counter, dict]:
    families = {rel: fam for fam, rel in rows}
    table: dict[str, Counter] = defaultdict(Counter)
    causes: Counter = Counter()
    where: dict[str, set] = defaultdict(set)
    for r in results:
        fam = family_of(r["nodeid"], families)
        outcome = {"xfailed": "skipped", "xpassed": "passed"}.get(r["outcome"], r["outcome"])
        table[fam][outcome] += 1
        if outcome in ("failed", "error"):
            c = cause(r["message"])
            causes[c] += 1
            where[c].add(r["nodeid"].split("::")[0].rsplit("/", 1)[-1])
    return table, causes, where


def print_table(table: dict[str, Counter], order: list[str]) -> None:
    head = f"{'family':16} {'passed':>7} {'failed':>7} {'errors':>7} {'skipped':>8} {'ran':>6} {'pass %':>7}"
    print(head)
    print("-" * len(head))
    total = Counter()
    for fam in [*order, *sorted(set(table) - set(order))]:
        c = table.get(fam, Counter())
        total.update(c)
        _row(fam, c)
    print("-" * len(head))
    _row("all", total)


def _row(name: str, c: Counter) -> None:
    ran = c["passed"] + c["failed"] + c["error"]
    pct = f"{100 * c['passed'] / ran:.1f}" if ran else "-"
    print(f"{name:16} {c['passed']:7} {c['failed']:7} {c['error']:7} {c['skipped']:8} {ran:6} {pct:>7}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tt-metal-home", default=os.environ.get("TT_METAL_HOME", str(REPO / "generated" / "tt-metal")))
    p.add_argument("--sample", type=Path, default=HERE / "files.txt",
                   help="the list of files to run, in files.txt's form (family, path under tests/ttnn)")
    p.add_argument("--out", type=Path, default=REPO / "generated" / "peer",
                   help="folder for pytest.log and results.json (one per concurrent run)")
    p.add_argument("--family", action="append", help="run only this family (repeatable)")
    p.add_argument("--file", action="append", help="run only sample files whose path ends with this (repeatable)")
    p.add_argument("--max-per-file", type=int, default=30, help="cases run per file, spread evenly (0: all)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before one test is stopped")
    p.add_argument("--json", type=Path, help="write the table, the causes and every test's outcome here")
    p.add_argument("--causes", type=int, default=40, help="how many failure causes to list")
    args = p.parse_args(argv)

    home = checked_home(Path(args.tt_metal_home).resolve())
    rows = sample(args.sample)
    if args.family:
        rows = [r for r in rows if r[0] in args.family]
    if args.file:
        rows = [r for r in rows if any(r[1].endswith(f) for f in args.file)]
    if not rows:
        sys.exit("peer: no sample file matches --family/--file")
    out_dir = args.out
    raw = run(home, [rel for _, rel in rows], json_path=out_dir / "results.json", log_path=out_dir / "pytest.log",
              max_per_file=args.max_per_file, timeout_s=args.timeout)
    table, causes, where = tabulate(raw["results"], rows)
    order = list(dict.fromkeys(fam for fam, _ in rows))
    print(f"tt-metal {(HERE / 'TT_METAL_COMMIT').read_text().strip()[:12]}: {len(rows)} files, "
          f"at most {args.max_per_file or 'all'} cases each (log: {out_dir / 'pytest.log'})\n")
    print_table(table, order)
    print(f"\nfailure causes (top {args.causes} of {len(causes)}), cases and files:")
    for c, n in causes.most_common(args.causes):
        files = sorted(where[c])
        print(f"{n:5}  {c}  [{len(files)}: {', '.join(files[:3])}{', ...' if len(files) > 3 else ''}]")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "tt_metal_commit": (HERE / "TT_METAL_COMMIT").read_text().strip(), "max_per_file": args.max_per_file,
            "families": {f: dict(c) for f, c in table.items()},
            "causes": [{"cause": c, "cases": n, "files": sorted(where[c])} for c, n in causes.most_common()],
            "results": raw["results"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
