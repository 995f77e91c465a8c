"""Side by side in one process: tensor storage and the perf files, each the way before and the way now.

    python -m bench.before_after_io storage                        # torch.save against ttreport/ptfile.py
    git show 0c84684:ttreport/export/ops_perf.py > /tmp/ops_perf_before.py
    python -m bench.before_after_io perf-files /tmp/ops_perf_before.py --ops 40000 200000

`storage` runs benchmark 3 (bench/tensor_storage.py) twice over, alternating: once with the .pt
files written by torch.save and checksummed by reading them back (as before 62086c6), once as now.
`perf-files` captures runs of N ops (an add and the deallocate of its output, as benchmark 8), then
times an older exporter module against ttreport.export.ops_perf on the same report (best of 3,
alternating; wall and this process's CPU time) and checks that both write the same bytes. Load on a
shared machine moves the absolute figures; the two columns of one run are what compare.
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
import zlib
from pathlib import Path

import torch

from bench import exports, tensor_storage
from ttreport import ptfile


def torch_save(value, path, *, archive=None, fallback=None) -> ptfile.Written:
    """The storage thread's way before ptfile: torch.save, then the file read back for its CRC-32."""
    torch.save(value, path)
    crc, size = 0, 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            crc, size = zlib.crc32(chunk, crc), size + len(chunk)
    return ptfile.Written(size, crc)


def storage(tmp: Path, rounds: int) -> None:
    ours = ptfile.save_tensor
    try:
        for _ in range(rounds):
            for name, writer in (("torch.save (before)", torch_save), ("ttreport/ptfile.py (now)", ours)):
                ptfile.save_tensor = writer
                print(name, flush=True)
                for figure in tensor_storage.run(tmp, sizes_mib=[1, 4, 16, 64, 256], total_mib=256):
                    if "end to end" in figure.name:
                        print(figure.line(), flush=True)
    finally:
        ptfile.save_tensor = ours


def perf_files(tmp: Path, before_file: str, sizes: list[int]) -> None:
    import ttreport
    from ttreport.export import ops_perf as now

    spec = importlib.util.spec_from_file_location("ops_perf_before", before_file)
    before = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(before)
    for n_ops in sizes:
        with ttreport.open(exports.capture(tmp, n_ops)) as r:
            estimated = r.execute("SELECT COUNT(*) FROM device_perf").fetchone()[0]
            wall = {"before": float("inf"), "now": float("inf")}
            cpu = dict(wall)  # this process's CPU time: what the export costs, whatever else the machine runs
            for _ in range(3):
                for name, module in (("before", before), ("now", now)):
                    t, c = time.perf_counter(), time.process_time()
                    module.export_ops_perf(r, tmp / name)
                    wall[name] = min(wall[name], time.perf_counter() - t)
                    cpu[name] = min(cpu[name], time.process_time() - c)
        same = all((tmp / "before" / f).read_bytes() == (tmp / "now" / f).read_bytes()
                   for f in (now.PERF_FILE, now.DEVICE_LOG_FILE))
        k = 1e6 / estimated  # seconds -> ms per 1,000 estimated ops
        print(f"{estimated:,} estimated ops, ms per 1,000: wall before {wall['before'] * k:.1f}, now "
              f"{wall['now'] * k:.1f} ({wall['before'] / wall['now']:.2f}x); CPU before {cpu['before'] * k:.1f}, "
              f"now {cpu['now'] * k:.1f} ({cpu['before'] / cpu['now']:.2f}x); files byte-identical: {same}", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.before_after_io", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    s = sub.add_parser("storage", help="benchmark 3 with torch.save, then with ptfile, alternating")
    s.add_argument("--rounds", type=int, default=2)
    p = sub.add_parser("perf-files", help="an older ops_perf.py against the current one on the same reports")
    p.add_argument("before", help="the older ttreport/export/ops_perf.py, e.g. from `git show 0c84684:...`")
    p.add_argument("--ops", type=int, nargs="+", default=[40_000, 200_000], help="ops captured per report")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ttreport-bench-") as tmp:
        if args.what == "storage":
            storage(Path(tmp), args.rounds)
        else:
            perf_files(Path(tmp), args.before, args.ops)


if __name__ == "__main__":
    main()
