"""Issue 29 (hardening), received report folders as hostile input, as a new user meets them: each command that is
given the wrong thing, or a tampered copy of the sample report, answers in one line naming the value and the fix,
never a traceback or a hang, and changes nothing in the folder it refuses.

Each command runs as a user runs it: `python -m ttreport.cli` in a subprocess, with a timeout.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ttreport import db

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_reports" / "demo"


def cli(*args, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ttreport.cli", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=timeout, env={**os.environ, "TTREPORT_PLAIN": "1"})


def one_line_error(done: subprocess.CompletedProcess) -> str:
    """The CLI's refusal: exit 2, one line on stderr, no traceback."""
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]
    return done.stderr


@pytest.fixture
def demo(tmp_path) -> Path:
    folder = Path(shutil.copytree(SAMPLE, tmp_path / "demo"))
    db.upgrade(folder / "db.sqlite")  # a no-op unless the schema moved on since the sample was made
    return folder


# -- the store's commands given a folder ------------------------------------------------------------------------

@pytest.mark.parametrize("args, said", [
    (["history", "{r}", "--op", "ttnn.add"], "it is a folder: to read one report, `ttreport summary {r}`"),
    (["runs", "{r}"], "it is a folder"),
    (["runs", "{r}/db.sqlite"], "it is a file"),
    (["runs", "{r}/nothing-here"], "write it as postgresql://"),
])
def test_a_folder_or_file_given_for_a_store_url_is_named_with_the_fix(demo, args, said):
    # libpq's own words came out: `missing "=" after "<folder>" in connection info string`.
    err = one_line_error(cli(*(a.format(r=demo) for a in args)))
    assert "is not a store URL" in err and said.format(r=demo) in err and "connection info" not in err, err
