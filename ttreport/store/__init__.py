"""A shared PostgreSQL store of runs: push report folders into it, read any run back as a Report.

    import ttreport
    from ttreport import store
    url = "postgresql://ci@db.example/ttreport?tensors=/mnt/ttreport-tensors"
    run_id, added = store.push("generated/ttreport/reports/demo", url, name="nightly-1234")
    report = ttreport.open(url, run="nightly-1234")   # the same Report API as for a folder
    store.runs(url)                                   # every run, with model, host, commit, status
    store.history(url, "ttnn.matmul", shape="1x32x64")  # one op run by run, changes flagged

The schema is ttreport.schema's tables with a run_id column (tables.py); PostgreSQL-only SQL stays
in this package. Credentials come from the URL, PG* variables or ~/.pgpass (connection.py).
"""

from __future__ import annotations

from ttreport.store.connection import StoreError, is_store_url, shown
from ttreport.store.history import history, runs
from ttreport.store.pull import materialize
from ttreport.store.push import push


def open_run(url: str, run):
    """Run `run` (its name, run id or UUID) of the store at `url`, as a read-only ttreport Report."""
    from ttreport.read.report import Report

    return Report(materialize(url, run))


__all__ = ["StoreError", "history", "is_store_url", "materialize", "open_run", "push", "runs", "shown"]
