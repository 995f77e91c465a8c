"""A close that does not wait for the writer process (Capture(wait_on_close=False), stop(wait=False)): the block
ends with its ops in the op log, the next capture may start at once, and wait() finishes the report as the waiting
close does. What the pytest plugin uses (tests/test_pytest_plugin.py runs it, killed included)."""

import torch

import device_sim as ttnn
import ttreport
from ttreport.folder import hold_folder


def adds(device, n):
    a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    for _ in range(n):
        a = ttnn.add(a, a)


def test_the_next_capture_starts_before_the_last_ones_report_is_finished_and_both_end_complete(device, tmp_path):
    first = ttreport.Capture(tmp_path / "first", wait_on_close=False)
    with first:
        adds(device, 30)
    assert first.status == "complete"
    assert hold_folder(first.path) is False  # still the capture's until wait(): no reader folds it meanwhile
    with ttreport.capture(tmp_path / "second") as second:  # no CaptureActiveError: the hook went at the block's end
        adds(device, 5)
    first.wait()
    first.wait()  # nothing left to wait for: returns at once
    assert hold_folder(first.path) is None  # let go, and the lock file removed as a waiting close removes it
    for capture, n in ((first, 30), (second, 5)):
        with ttreport.open(capture.path) as r:
            assert r.metadata["status"] == "complete"
            assert [op.name for op in r.operations()].count("ttnn.add") == n
    assert (first.path / "ops_perf_results.csv").is_file() and "writer" in first.close_s  # its close, all of it


def test_reading_a_capture_closed_without_waiting_waits_for_its_report(device, tmp_path):
    capture = ttreport.Capture(tmp_path / "run", wait_on_close=False)
    with capture:
        adds(device, 3)
    assert capture.summary().operations == 4  # from_torch and the adds: read once the writer has finished


def test_stop_with_wait_finishes_a_capture_stopped_without(device, tmp_path):
    capture = ttreport.capture(tmp_path / "run").start()
    adds(device, 2)
    capture.stop(wait=False)
    assert hold_folder(capture.path) is False
    capture.stop(wait=True)  # as atexit and a signal's close do after the block's end
    assert hold_folder(capture.path) is None
    with ttreport.open(capture.path) as r:
        assert r.metadata["status"] == "complete"
