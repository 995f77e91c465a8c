"""A writer process forked ahead (Capture(fork_ahead=True), the pytest plugin's): forked while a close waits for its
writer, handed the next capture, let go when what it inherited has changed, and never outliving the process that
forked it (real subprocesses: a clean exit, a SIGKILL, and a child forked beside it)."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport.capturing import writer_process

REPO = Path(__file__).resolve().parent.parent
# Ops enough that the writer process is still writing when the close looks (a spare is forked only then): the loop
# makes them faster than it writes them.
BEHIND = 2000


@pytest.fixture(autouse=True)
def no_spare_left():
    yield
    if (spare := writer_process.take_spare()) is not None:  # (each close forks one for a next capture)
        spare.close()


def adds(device, n):
    a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    for _ in range(n):
        a = ttnn.add(a, a)


def ops(path) -> int:
    with ttreport.open(path) as r:
        assert r.metadata["status"] == "complete"
        return r.count_operations()


def test_the_next_capture_is_written_by_the_writer_forked_during_the_last_close(device, tmp_path):
    first = ttreport.Capture(tmp_path / "first", fork_ahead=True)
    with first:
        adds(device, BEHIND)
    spare = writer_process._spare
    assert spare is not None  # forked while the close waited for the first capture's writer
    with ttreport.Capture(tmp_path / "second", fork_ahead=True) as second:
        adds(device, 30)
        assert second._writer.pid == spare.pid
    assert ops(first.path) == BEHIND + 1 and ops(second.path) == 31  # from_torch and the adds
    assert (second.path / "ops_perf_results.csv").is_file()


def test_a_spare_forked_before_the_environment_changed_is_let_go_and_a_writer_forked(device, tmp_path, monkeypatch):
    with ttreport.Capture(tmp_path / "first", fork_ahead=True):
        adds(device, BEHIND)
    spare = writer_process._spare
    assert spare is not None and spare.current()
    monkeypatch.setenv("TTREPORT_SPARE_TEST", "1")  # what a writer reads (a test seam's variable, say) changed
    assert not spare.current()
    with ttreport.Capture(tmp_path / "second") as second:  # (fork_ahead off: forks its own, leaves the spare alone)
        adds(device, 2)
    assert second._writer.pid != spare.pid and writer_process._spare is spare
    with ttreport.Capture(tmp_path / "third", fork_ahead=True) as third:
        adds(device, 3)
        assert third._writer.pid != spare.pid  # the stale spare was let go, not handed the capture
    assert ops(third.path) == 4
    deadline = time.monotonic() + 30
    while spare.pid in writer_process._unreaped and time.monotonic() < deadline:
        writer_process._reap()  # it ended once its socket closed
        time.sleep(0.05)
    assert spare.pid not in writer_process._unreaped


SCRIPT = r"""
import os, signal, sys, torch
import device_sim as ttnn
import ttreport
from ttreport.capturing import writer_process

dev = ttnn.open_device(0)
with ttreport.Capture(sys.argv[1], fork_ahead=True):
    a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    for _ in range(int(sys.argv[3])):
        a = ttnn.add(a, a)
assert writer_process._spare is not None
child = os.fork()
if child == 0:  # a child forked beside the spare neither keeps nor uses it
    os._exit(0 if writer_process._spare is None else 3)
assert os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0
print(writer_process._spare.pid, flush=True)
if sys.argv[2] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


def ended(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_a_spare_left_at_exit_or_by_a_kill_does_not_outlive_its_process(tmp_path):
    for how in ("exit", "kill"):
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / how), how, str(BEHIND)], cwd=REPO,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == (0 if how == "exit" else -signal.SIGKILL), done.stderr
        pid = int(done.stdout.split()[-1])
        deadline = time.monotonic() + 2 * writer_process.SPARE_POLL_S + 10
        while not ended(pid):
            assert time.monotonic() < deadline, f"the spare writer process {pid} outlived its process ({how})"
            time.sleep(0.05)
        assert ops(tmp_path / how) == BEHIND + 1
