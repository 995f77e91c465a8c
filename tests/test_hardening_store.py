"""Issue 29, the store: a store URL's secret is never printed, in any form of URL or DSN, nor a traceback for a
malformed one. The commands run as a user runs them, in subprocesses.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ttreport
from ttreport import store

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_reports" / "demo"
SECRET = "s3cretPW"


def cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ttreport.cli", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=60, env={**os.environ, **(env or {})})


# -- secrets ------------------------------------------------------------------------------------------------

# Each form a store can be named in, with the secret in it; none of these reaches a server (no socket there).
NOWHERE = "/nonexistent-ttreport-socket-dir"
SECRET_FORMS = [
    f"postgresql://ci@/ttreport?host={NOWHERE}&password={SECRET}",  # libpq's password parameter
    f"postgresql://ci@/ttreport?host={NOWHERE}&sslpassword={SECRET}",
    f"postgresql://ci@/ttreport?host={NOWHERE}&pass%77ord={SECRET}",  # libpq decodes a parameter's name too
    f"postgresql://ci:{SECRET}%ZZ@/ttreport?host={NOWHERE}",  # libpq's error quotes the bad token
    f"postgresql://ci@/ttreport?host={NOWHERE}&password={SECRET}%ZZ",
    f"host={NOWHERE} dbname=ttreport password={SECRET}",  # a key=value DSN
    f"host={NOWHERE} dbname=ttreport password='{SECRET} quoted'",
    f"host={NOWHERE} password='{SECRET}",  # unterminated: libpq refuses it
    f"host={NOWHERE} password={SECRET} dbname",  # a key with no value
    f"postgresql://ci:{SECRET}@[::1:5432/ttreport",  # not a URL Python or libpq can parse
]


def commands(url: str) -> list[list[str]]:
    return [["push", str(SAMPLE), "--to", url], ["runs", url], ["history", url, "--op", "ttnn.add"],
            ["summary", url, "--run", "nightly-1"], ["query", url, "SELECT 1"]]


@pytest.mark.parametrize("i, url", list(enumerate(SECRET_FORMS)))
def test_no_form_of_a_store_url_prints_its_secret_or_a_traceback(i, url, tmp_path):
    pytest.importorskip("psycopg", reason="the store needs psycopg")
    # Each form through one command, in turn, so that each command meets two forms (a process is ~0.5 s).
    args = commands(url)[i % 5]
    done = cli(*args, env={"TTREPORT_TENSOR_STORE": str(tmp_path), "TTREPORT_STORE_CACHE": str(tmp_path)})
    said = done.stdout + done.stderr
    assert done.returncode == 2, (args, said)
    assert SECRET not in said and "Traceback" not in said, (args, said)
    assert len(done.stderr.strip().splitlines()) == 1, (args, said)


def test_a_malformed_url_is_named_with_the_fix():
    done = cli("runs", "postgresql://ci@[::1:5432/ttreport")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "postgresql://ci@[::1:5432/ttreport" in done.stderr and "postgresql://[user@]host" in done.stderr


@pytest.mark.parametrize("url", SECRET_FORMS)
def test_ttreport_open_never_says_the_secret(url):
    pytest.importorskip("psycopg", reason="the store needs psycopg")
    with pytest.raises(store.StoreError) as e:
        ttreport.open(url, run="nightly-1")
    assert SECRET not in str(e.value) and e.value.__suppress_context__


def test_a_password_is_masked_in_the_url_shown_but_host_and_database_stay():
    shown = store.shown
    assert shown(f"postgresql://ci:{SECRET}@db:5432/tt?tensors=/t") == "postgresql://ci:***@db:5432/tt?tensors=/t"
    assert shown(f"postgresql://ci@db/tt?password={SECRET}&port=5") == "postgresql://ci@db/tt?password=***&port=5"
    assert shown(f"host=db password={SECRET} dbname=tt") == "host=db password=*** dbname=tt"
    assert shown(f"host=db password = '{SECRET} x' dbname=tt") == "host=db password = *** dbname=tt"
