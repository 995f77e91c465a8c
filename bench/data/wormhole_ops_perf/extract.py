"""Cases for cases.csv from a public Wormhole `ops_perf_results` CSV (TT-NN's device profiler output).

    python -m bench.data.wormhole_ops_perf.extract FILE SOURCE REPO PATH COMMIT FIRST_CASE > rows.csv

One case per op signature (op code, every input's and the output's shape, layout, dtype and memory, math
fidelity, core count): the median DEVICE KERNEL DURATION [ns] of its rows, leaving out rows more than 1.5x off the
first one's (logged with a stale shape). Device operations are named as the TT-NN call that runs them, by
ttreport.calibrate.op_for, as `ttreport calibrate` names a team's own (BinaryDeviceOperation with binary_op_type
MUL: multiply; UnaryDeviceOperation's op_chain: gelu); a conv2d is what ttnn.conv2d runs, the Halo, the Move
after it and OptimizedConvNew, summed. A sharded operand spans the op's cores (the 5th field of its spec). The
split is fixed here, before any fitting: the second of every three signatures of a family, in the file's order, is
held out.

Only Wormhole files are accepted: the profiler's firmware cycles over its nanoseconds is the chip's clock, 1.0 GHz
on Wormhole (Blackhole runs at 1.35: tt-perf-report's ops_perf_results_2025_09_18_11_39_20.csv is one).
"""

from __future__ import annotations

import csv
import re
import statistics
import sys
from collections import defaultdict

from ttreport import calibrate

COLUMNS = ["case", "split", "family", "op", "op_code", "inputs", "output", "math_fidelity", "cores_measured",
           "measured_ns", "samples", "params", "source", "repo", "path", "commit", "derivation"]
WORMHOLE_CLOCK_GHZ = 1.0
STALE_SHAPE_SPREAD = 1.5


def _dims(row: dict, prefix: str) -> list[str] | None:
    padded = prefix + "_W_PAD[LOGICAL]" in row
    key = prefix + ("_W_PAD[LOGICAL]" if padded else "_W")
    if not row.get(key):
        return None
    if padded:  # "32[19]": the logical size is in brackets
        return [row[f"{prefix}_{d}_PAD[LOGICAL]"].split("[")[-1].rstrip("]") for d in "WZYX"]
    return [row[f"{prefix}_{d}"] for d in "WZYX"]


def _spec(row: dict, prefix: str) -> str | None:
    dims = _dims(row, prefix)
    if dims is None:
        return None
    memory = re.sub(r"^DEV_\d+_", "", row[f"{prefix}_MEMORY"])
    spec = f"{'x'.join(dims)}|{row[prefix + '_LAYOUT']}|{row[prefix + '_DATATYPE']}|{memory}"
    return spec + f"|{row['CORE COUNT']}" if "SHARDED" in memory else spec


def cases(path: str, source: str, repo: str, repo_path: str, commit: str, first_case: int) -> list[dict]:
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["OP TYPE"] == "tt_dnn_device" and r["DEVICE KERNEL DURATION [ns]"]]
    clocks = [(int(r["DEVICE FW END CYCLE"]) - int(r["DEVICE FW START CYCLE"])) / int(r["DEVICE FW DURATION [ns]"])
              for r in rows if r["DEVICE FW DURATION [ns]"] and int(r["DEVICE FW DURATION [ns]"]) > 0]
    clock = statistics.median(clocks)
    if abs(clock - WORMHOLE_CLOCK_GHZ) > 0.01:
        raise SystemExit(f"{path}: firmware runs at {clock:.2f} GHz, not Wormhole's {WORMHOLE_CLOCK_GHZ}")
    groups: dict[tuple, list[int]] = defaultdict(list)
    order: list[tuple] = []
    halo: list[dict] = []  # a conv2d's Halo and Move rows, until its OptimizedConvNew
    for r in rows:
        ns = int(r["DEVICE KERNEL DURATION [ns]"])
        inputs = [s for s in (_spec(r, f"INPUT_{i}") for i in range(4)) if s]
        if r["OP CODE"] == "HaloDeviceOperation":
            halo = [r]
            continue
        if halo and r["OP CODE"] == "MoveDeviceOperation":
            halo.append(r)
            continue
        conv = calibrate.conv_params(r["ATTRIBUTES"]) if r["OP CODE"] == "OptimizedConvNew" else None
        if conv and halo:
            x = _spec(halo[0], "INPUT_0")
            key = ("conv2d", "conv2d", "OptimizedConvNew+Halo", ";".join([x, *inputs[1:]]), _spec(r, "OUTPUT_0"),
                   r["MATH FIDELITY"], r["CORE COUNT"], conv)
            ns += sum(int(h["DEVICE KERNEL DURATION [ns]"]) for h in halo)
            halo = []
        else:
            halo = []
            named = calibrate.op_for(r["OP CODE"], r["ATTRIBUTES"], inputs)
            if named is None:
                continue
            op, family, params = named
            key = (family, op, r["OP CODE"], ";".join(inputs), _spec(r, "OUTPUT_0"), r["MATH FIDELITY"],
                   r["CORE COUNT"], params)
        if key not in groups:
            order.append(key)
        groups[key].append(ns)
    out = []
    seen: dict[str, int] = defaultdict(int)
    for key in order:
        # Calls of one signature take the same time to a few percent. Those more than STALE_SHAPE_SPREAD off the
        # first call's were logged with a stale shape: Segformer's scalar multiplies and softmaxes repeat the first
        # stage's [16384, 256] at every stage while their times fall 6x with the real sizes.
        first = groups[key][0]
        groups[key] = [ns for ns in groups[key] if 1 / STALE_SHAPE_SPREAD <= ns / first <= STALE_SHAPE_SPREAD]
        family, op, code, inputs, output, fidelity, cores, params = key
        split = "holdout" if seen[family] % 3 == 1 else "fit"
        seen[family] += 1
        derivation = ("median over the calls of the summed DEVICE KERNEL DURATION [ns] of the Halo, Move and "
                      "OptimizedConvNew rows one ttnn.conv2d runs" if family == "conv2d" else
                      "median DEVICE KERNEL DURATION [ns] of the rows with this signature")
        out.append(dict(zip(COLUMNS, [first_case + len(out), split, family, op, code, inputs, output, fidelity, cores,
                                      int(statistics.median(groups[key])), len(groups[key]), params, source, repo,
                                      repo_path, commit, derivation])))
    return out


def main(argv: list[str]) -> int:
    path, source, repo, repo_path, commit, first = argv
    w = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
    w.writerows(cases(path, source, repo, repo_path, commit, int(first)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
