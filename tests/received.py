"""What the tests of received (hostile) report folders share: the CLI run as a user runs it, its one-line refusal,
a copy of the sample report, SQL run on a copy."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from ttreport import db

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_reports" / "demo"


def cli(*args, timeout=120, **kw) -> subprocess.CompletedProcess:
    """`ttreport ARGS` in a fresh process (stdout a pipe: the plain-text views); bytes unless text=True."""
    return subprocess.run([sys.executable, "-m", "ttreport.cli", *map(str, args)], capture_output=True, cwd=REPO,
                          timeout=timeout, env={**os.environ, "TTREPORT_PLAIN": "1"}, **kw)


def one_line_error(done: subprocess.CompletedProcess) -> str:
    """The CLI's refusal: exit 2, one line on stderr, no traceback."""
    err = done.stderr if isinstance(done.stderr, str) else done.stderr.decode()
    assert done.returncode == 2, (done.returncode, err[-2000:])
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err[-2000:]
    return err


def demo_copy(tmp_path: Path) -> Path:
    """A copy of the sample report, at the schema's head."""
    folder = Path(shutil.copytree(SAMPLE, tmp_path / "demo"))
    db.upgrade(folder / "db.sqlite")  # a no-op unless the schema moved on since the sample was made
    return folder


def execute(folder: Path, *statements, params=()) -> None:
    con = sqlite3.connect(folder / "db.sqlite")
    with con:
        for s in statements:
            con.execute(s, params)
    con.close()
