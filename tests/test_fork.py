"""A child forked during a capture: it never closes, unlocks or empties the parent's report, and its
ops (which the parent's writer cannot receive) are not recorded, with one warning in the child.

Real processes: a script captures, forks with os.fork(), the child runs ops and exits normally
(atexit handlers run), and meanwhile a second process tries to overwrite the live report.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import ttreport

REPO = Path(__file__).resolve().parent.parent

PARENT = r"""
import json, os, pathlib, signal, sys, time, warnings
import torch
import device_sim as ttnn
import ttreport

report = pathlib.Path(sys.argv[1])
dev = ttnn.open_device(0)
with ttreport.capture(report) as cap:
    a = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=dev)
    for _ in range(10):
        a = a + 1
    pid = os.fork()
    if pid == 0:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            b = a
            for _ in range(2000):
                b = b + 1
        lost = [str(w.message) for w in caught if issubclass(w.category, ttreport.ReportIncompleteWarning)]
        print(json.dumps({"child": os.getpid(), "warnings": lost, "result": b.to_torch()[0, 0].item()}), flush=True)
        sys.exit(0)  # a normal exit: SystemExit leaves the with-block, then atexit handlers run
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"child_exit": os.waitstatus_to_exitcode(status)}), flush=True)
    pid = os.fork()
    if pid == 0:  # a second child, ended by SIGTERM: it must end as SIGTERM ends it, closing nothing
        time.sleep(60)
        os._exit(0)
    time.sleep(0.5)
    os.kill(pid, signal.SIGTERM)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"child_exit": os.waitstatus_to_exitcode(status)}), flush=True)
    sys.stdin.readline()  # the test tries to overwrite the report now
    for _ in range(10):
        a = a + 1
print(json.dumps({"closed": cap.status}), flush=True)
"""

SECOND = r"""
import pathlib, sys
import ttreport
try:
    ttreport.capture(pathlib.Path(sys.argv[1]), config=ttreport.Config(overwrite=True)).start()
except ttreport.ReportInUseError as e:
    print("refused:", e)
    sys.exit(3)
print("started")
"""


def test_a_forked_child_that_exits_leaves_the_parents_capture_running_and_locked(tmp_path):
    report = tmp_path / "live"
    (tmp_path / "parent.py").write_text(PARENT)
    (tmp_path / "second.py").write_text(SECOND)
    parent = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"), str(report)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        child = json.loads(parent.stdout.readline())
        assert child["result"] == 2011.0  # the child's ops ran, unrecorded
        assert len(child["warnings"]) == 1, child["warnings"]  # once, not once per op
        assert f"process {child['child']}" in child["warnings"][0] and str(report) in child["warnings"][0]
        assert json.loads(parent.stdout.readline()) == {"child_exit": 0}
        assert json.loads(parent.stdout.readline()) == {"child_exit": -signal.SIGTERM}
        assert (report / ".lock").read_text().strip() == str(parent.pid)  # the child's exit left the lock
        second = subprocess.run([sys.executable, str(tmp_path / "second.py"), str(report)], capture_output=True,
                                text=True, cwd=REPO, timeout=120)
        assert second.returncode == 3, second.stdout + second.stderr
        assert f"pid {parent.pid}" in second.stdout
        parent.stdin.write("go on\n")
        parent.stdin.flush()
        assert json.loads(parent.stdout.readline()) == {"closed": "complete"}
        assert parent.wait(60) == 0, parent.stderr.read()
    finally:
        if parent.poll() is None:
            parent.kill()
    with ttreport.open(report) as r:
        assert r.status == "complete" and "writer_error" not in r.metadata, r.metadata
        assert r.count_operations() == 21  # from_torch and the parent's 20 adds; none of the child's
    assert ttreport.check(report) == []
    assert not (report / ".lock").exists()


def wait_or_kill(pid: int, timeout_s: float = 60) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError(f"forked child {pid} hung (a lock held at the fork by the writer thread?)")


def test_forked_children_can_capture_reports_of_their_own_while_the_parent_writes(tmp_path, device):
    # Each fork lands while the parent's writer is busy with a batch; a child that inherited SQLite's
    # mutexes held by that thread would hang on its first SQLite call.
    import device_sim as ttnn

    with ttreport.capture(tmp_path / "parent") as cap:
        a = ttnn.ones((32, 32), device=device)
        for n in range(10):
            for _ in range(300):
                a = a + 1
            pid = os.fork()
            if pid == 0:  # the child reports through its exit code
                code = 1
                try:
                    with ttreport.capture(tmp_path / f"child-{n}"):
                        for _ in range(50):
                            a + 1
                    with ttreport.open(tmp_path / f"child-{n}") as r:
                        code = 0 if r.count_operations() == 50 else 2
                finally:
                    os._exit(code)
            assert wait_or_kill(pid) == 0
    with ttreport.open(cap.path) as r:
        assert r.count_operations() == 1 + 10 * 300


def test_a_fork_waits_while_the_perf_rows_chase_is_inside_sqlite(tmp_path, device):
    # The chase (export/ops_perf.Chase) reads the db on a thread of the capturing process; a fork taken while it
    # is inside SQLite would hand the child SQLite's mutexes held by a thread it does not have. The at-fork handler
    # takes the chase's busy lock: here the chase holds it for 0.4 s and the fork must wait that out.
    import threading

    import device_sim as ttnn

    with ttreport.capture(tmp_path / "parent") as cap:
        a = ttnn.ones((32, 32), device=device)
        a = a + 1
        chase = cap._chase
        assert chase is not None
        held = threading.Event()

        def hold():
            with chase.busy:
                held.set()
                time.sleep(0.4)

        holder = threading.Thread(target=hold)
        holder.start()
        held.wait()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        waited = time.monotonic() - start
        holder.join()
        assert wait_or_kill(pid) == 0
        assert waited >= 0.3, f"the fork took {waited:.3f} s: it did not wait for the chase's SQLite work"


STOPPED = r"""
import json, os, pathlib, sqlite3, sys, threading, time
import device_sim as ttnn
import ttreport

report = pathlib.Path(sys.argv[1])
dev = ttnn.open_device(0)
cap = ttreport.capture(report)
cap.start()
a = ttnn.ones((32, 32), device=dev)
for _ in range(200):
    a = a + 1
cap.stop(wait=False)  # its writer process and its perf-rows chase go on until wait()
chase = cap._chase
held = threading.Event()

def hold():  # the chase inside SQLite, for 0.4 s
    with chase.busy:
        held.set()
        time.sleep(0.4)

holder = threading.Thread(target=hold)
holder.start()
held.wait()
start = time.monotonic()
pid = os.fork()
if pid == 0:  # the user's child uses SQLite at once
    con = sqlite3.connect(":memory:")
    con.execute("SELECT 1").fetchone()
    os._exit(0)
waited = time.monotonic() - start
holder.join()
_, status = os.waitpid(pid, 0)
cap.wait()
print(json.dumps({"waited": waited, "child_exit": os.waitstatus_to_exitcode(status), "status": cap.status}))
"""


def test_a_fork_after_stop_without_waiting_waits_while_its_chase_is_inside_sqlite(tmp_path):
    # stop(wait=False) ends the capture for the model, but its chase renders through the writer's backlog until
    # wait(): a user's fork meanwhile must wait for the chase to leave SQLite, as it does during the capture.
    done = subprocess.run([sys.executable, "-c", STOPPED, str(tmp_path / "r")], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["child_exit"] == 0 and said["status"] == "complete", said
    assert said["waited"] >= 0.3, f"the fork took {said['waited']:.3f} s: it did not wait for the chase's SQLite work"
    with ttreport.open(tmp_path / "r") as r:
        assert r.count_operations() == 201
