"""A Ctrl-C during `ttreport run` ends with one line saying where the report of the ops so far is, not click's bare
"Aborted!" (tests/test_surprises.py stops `ttreport demo` the same way, with a real SIGINT from outside)."""

import json
import os
import sqlite3
import subprocess
import sys

# A TT-NN script that a Ctrl-C stops after its second op: SIGINT sent to itself, as a terminal's Ctrl-C arrives.
SCRIPT = """\
import os
import signal
import torch
import ttnn

device = ttnn.open_device(device_id=0)
x = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE_LAYOUT, device=device)
ttnn.relu(x)
os.kill(os.getpid(), signal.SIGINT)
ttnn.exp(x)
"""


def test_ctrl_c_during_ttreport_run_says_where_the_partial_report_is(tmp_path):
    (tmp_path / "model.py").write_text(SCRIPT)
    env = {**os.environ, "TTREPORT_CONFIG": json.dumps({"root": str(tmp_path / "reports")}), "TTREPORT_PLAIN": "1"}
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "run", "--name", "stopped", "model.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    path = tmp_path / "reports" / "stopped"
    assert done.returncode == 130, done.stderr
    assert done.stderr.splitlines() == [
        f"interrupted: {path} holds the ops recorded so far (`ttreport summary {path}`)"], done.stderr
    con = sqlite3.connect(path / "db.sqlite")
    status = con.execute("SELECT value FROM report_metadata WHERE key = 'status'").fetchone()[0]
    names = [n for (n,) in con.execute("SELECT name FROM operations ORDER BY operation_id")]
    con.close()
    assert status == "interrupted" and names == ["ttnn.from_torch", "ttnn.relu"]

