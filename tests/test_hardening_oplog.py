"""A received report folder's op log is data, never code (issue 29): reading or rebuilding from it runs
nothing it holds, writes nowhere outside the folder's tensors/, and a model never waits forever for a
writer process that cannot make progress.

    .venv/bin/python -m pytest tests/test_hardening_oplog.py -q

The captures here are real, in subprocesses, with their writer process stopped (SIGSTOP) or unable to
note its progress, and on a real full disk.
"""

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import ttreport

REPO = Path(__file__).resolve().parent.parent


# -- 5. a writer that makes no progress never holds the model: it waits at most WRITER_STALL_S, then goes on -----
STALLED = r"""
import os, pathlib, sys, time
import torch
import device_sim as ttnn
import ttreport
from ttreport.capture import oplog
oplog.SEGMENT_BYTES = oplog.MIN_SEGMENT_BYTES  # a new segment every ~800 ops: the segment back-pressure acts too
oplog.LAG_BYTES, oplog.PACE_BYTES = 128 << 10, 32 << 10  # and the byte back-pressure after a few hundred ops
oplog.WRITER_STALL_S = float(sys.argv[3])
report, how = pathlib.Path(sys.argv[1]), sys.argv[2]
dev = ttnn.open_device(0)
a = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=dev)
with ttreport.capture(report, config=ttreport.Config(writer="process")) as cap:
    if how == "progress-unwritable":  # as on a full disk: the writer's segment note can no longer be replaced
        note = report / "oplog" / ".progress"
        note.unlink(missing_ok=True)
        note.mkdir()
    print("pids", os.getpid(), cap._writer.pid, flush=True)
    sys.stdin.readline()  # the test has stopped the writer (or not)
    started = time.monotonic()
    for i in range(int(sys.argv[4])):
        ttnn.add(a, a)
    print("loop", round(time.monotonic() - started, 2), flush=True)
    sys.stdin.readline()  # the writer may go on now
"""


def run_stalled(tmp_path: Path, how: str, ops: int, stall_s: float) -> tuple[float, Path]:
    """Run the model against a writer stopped (SIGSTOP) or unable to note its progress; the loop's seconds."""
    report = tmp_path / "r"
    proc = subprocess.Popen([sys.executable, "-c", STALLED, str(report), how, str(stall_s), str(ops)], cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    writer = None
    try:
        model, writer = map(int, proc.stdout.readline().split()[1:])
        if how == "sigstop":
            os.kill(writer, signal.SIGSTOP)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        done = _line_within(proc, 90)
        assert done is not None, f"the model's loop of {ops} ops did not end in 90 s: it waits for its writer"
        if how == "sigstop":
            os.kill(writer, signal.SIGCONT)
        proc.stdin.write("close\n")
        proc.stdin.flush()
        assert proc.wait(120) == 0
    finally:
        if writer is not None and how == "sigstop":
            with contextlib.suppress(ProcessLookupError):  # it ended
                os.kill(writer, signal.SIGCONT)
        proc.kill()
        proc.wait(10)
    return float(done.split()[1]), report


def _line_within(proc: subprocess.Popen, timeout_s: float) -> str | None:
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    return proc.stdout.readline() if ready else None


def test_a_stopped_writer_process_holds_the_model_at_most_the_stall_bound_and_loses_nothing(tmp_path):
    seconds, report = run_stalled(tmp_path, "sigstop", 20_000, stall_s=1.0)
    # Held once per kind of back-pressure for the bound (the writer never moves while stopped), then not again.
    assert seconds < 20, seconds
    with ttreport.open(report) as r:
        assert r.count_operations() == 20_000 and r.status == "complete"


def test_a_writer_that_cannot_note_its_segment_as_on_a_full_disk_never_holds_the_model(tmp_path):
    # The writer moves on (its byte count, in shared memory, cannot fail), but its .progress file stays stale:
    # the model waited on that file for ever once five segments ahead of it.
    seconds, report = run_stalled(tmp_path, "progress-unwritable", 20_000, stall_s=60.0)
    assert seconds < 30, seconds  # far under the stall bound: the model never waited on the stale note
    with ttreport.open(report) as r:
        assert r.count_operations() == 20_000 and r.status == "complete"


FULL = r"""
import json, pathlib, sys, time
import torch
import device_sim as ttnn
import ttreport
dev = ttnn.open_device(0)
a = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=dev)
started = time.monotonic()
with ttreport.capture(pathlib.Path(sys.argv[1]), config=ttreport.Config(writer="process", tensors="all")) as cap:
    for i in range(int(sys.argv[2])):
        ttnn.add(a, a)
    print(json.dumps({"loop_s": time.monotonic() - started}), flush=True)
print(json.dumps({"closed_s": time.monotonic() - started, "status": cap.status}), flush=True)
"""
FULL_RUNS, FULL_OPS = (9, 30_000) if os.environ.get("TTREPORT_STRESS") == "1" else (1, 10_000)


def test_a_model_storing_every_tensor_on_a_full_disk_runs_to_its_end_and_counts_what_it_lost(tmp_path):
    # The case, end to end on a real 6 MiB filesystem: 2 runs in 9 of 30,000 ops hung. A writer that
    # cannot replace its segment note there (the test above makes it stale every time) left the model waiting
    # on it for ever. TTREPORT_STRESS=1 runs those 9.
    from test_crash import tmpfs

    with tmpfs(tmp_path / "6m", "6m") as disk:
        for run in range(FULL_RUNS):
            report = disk / f"r{run}"
            out = subprocess.run([sys.executable, "-c", FULL, str(report), str(FULL_OPS)], cwd=REPO,
                                 capture_output=True, text=True, timeout=300)
            assert out.returncode == 0, out.stderr[-3000:]
            closed = json.loads(out.stdout.splitlines()[-1])
            assert closed["status"] == "complete"
            with ttreport.open(report) as r:
                kept, meta = r.count_operations(), r.metadata
            assert kept + int(meta.get("ops_lost", 0)) == FULL_OPS, (run, kept, meta)
            shutil.rmtree(report)  # room for the next run
