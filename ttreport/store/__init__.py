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

import os

from ttreport.errors import ReportError
from ttreport.read.report import Report
from ttreport.store.connection import StoreError, is_store_url, shown
from ttreport.store.history import history, runs
from ttreport.store.pull import materialize
from ttreport.store.push import push


def open_run(url: str, run) -> Report:
    """Run `run` (its name, run id or UUID) of the store at `url`, as a read-only ttreport Report."""
    return Report(materialize(url, run))


def open(path: str | os.PathLike, run=None) -> Report:  # noqa: A001 - ttreport.open mirrors the builtin on purpose
    """ttreport.open: the report at `path` (its folder, its db.sqlite, or a name under the default root) read-only;
    or, given a store URL (postgresql://... or a libpq DSN, host=...), the run `run` of that store (its name, run id
    or UUID). Here, in the layer above both, so that reading a folder (read.report) imports nothing of a store."""
    if is_store_url(path):
        return open_run(path, run)
    if run is not None:
        raise ReportError(f"run={run!r} names a run of a store, but {path} is a report folder: give a store URL "
                          f"(postgresql://...) or leave run out")
    return Report(path)


__all__ = ["StoreError", "history", "is_store_url", "materialize", "open", "open_run", "push", "runs", "shown"]
