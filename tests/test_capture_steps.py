"""Steps, as torch.profiler names them: capture(schedule=ttreport.schedule(...)) and run.step(). Every op is recorded;
operations.step is how many times step() had been called when the op began; the schedule is in report_metadata."""

import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

import ttreport
from ttreport.steps import Schedule

MODEL = textwrap.dedent("""
    import sys, threading, torch
    import device_sim as ttnn
    import ttreport

    device = ttnn.open_device(0)
    a = ttnn.from_torch(torch.ones(32, 32), device=device, layout=ttnn.TILE)
    b = ttnn.from_torch(torch.ones(3, 5), device=device, layout=ttnn.TILE)
    schedule = ttreport.schedule(wait=1, warmup=1, active=2) if sys.argv[2] == "schedule" else None
    with ttreport.capture(sys.argv[1], schedule=schedule) as run:
        ttnn.add(a, a)                      # before any step(): step 0
        for _ in range(3):
            ttnn.linear(a, a, bias=a)       # one op, as TT-NN runs it
            ttnn.relu(ttnn.add(a, a))
            run.step()
        t = threading.Thread(target=lambda: ttnn.multiply(a, a))  # another thread's op: the run's step count
        t.start(); t.join()
        try:
            ttnn.matmul(a, b)
        except Exception:
            pass                            # an op that raised is recorded with its step too
""")


def capture(tmp_path, name, *, pure: bool, schedule: str = "schedule") -> sqlite3.Connection:
    script = tmp_path / "model.py"
    script.write_text(MODEL)
    env = {**os.environ, "TTREPORT_PURE": "1" if pure else ""}
    done = subprocess.run([sys.executable, str(script), str(tmp_path / name), schedule], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return sqlite3.connect(tmp_path / name / "db.sqlite")


@pytest.mark.parametrize("pure", [False, True], ids=["c-hook", "pure-python"])
def test_each_op_records_how_many_steps_had_been_taken_when_it_began(tmp_path, pure):
    con = capture(tmp_path, "r", pure=pure)
    rows = con.execute("SELECT name, step, status FROM operations ORDER BY operation_id").fetchall()
    assert [(name, step) for name, step, _ in rows] == [
        ("ttnn.add", 0),
        ("ttnn.linear", 0), ("ttnn.add", 0), ("ttnn.relu", 0),
        ("ttnn.linear", 1), ("ttnn.add", 1), ("ttnn.relu", 1),
        ("ttnn.linear", 2), ("ttnn.add", 2), ("ttnn.relu", 2),
        ("ttnn.mul", 3), ("ttnn.matmul", 3),
    ]
    assert rows[-1][2] == "error"


def test_the_c_hook_and_the_pure_recorder_record_the_same_steps(tmp_path):
    query = "SELECT operation_id, name, step FROM operations ORDER BY operation_id"
    assert capture(tmp_path, "c", pure=False).execute(query).fetchall() == \
        capture(tmp_path, "py", pure=True).execute(query).fetchall()


def test_the_schedule_is_kept_in_the_report_as_its_json_and_absent_without_one(tmp_path):
    con = capture(tmp_path, "with", pure=False)
    (text,) = con.execute("SELECT value FROM report_metadata WHERE key = 'schedule'").fetchone()
    assert Schedule.from_json(text) == ttreport.schedule(wait=1, warmup=1, active=2)
    con = capture(tmp_path, "without", pure=False, schedule="none")
    assert con.execute("SELECT value FROM report_metadata WHERE key = 'schedule'").fetchall() == []
    assert con.execute("SELECT MAX(step) FROM operations").fetchone() == (3,)  # steps are counted all the same


def test_a_schedule_that_is_not_one_is_refused_in_one_line(tmp_path):
    with pytest.raises(TypeError, match=r"schedule=\{'wait': 1\}: give ttreport.schedule\(wait=\.\.\."):
        ttreport.capture(tmp_path / "r", schedule={"wait": 1})
