"""The store's commands: `ttreport push`, `ttreport runs`, `ttreport history`; and `--run` for the rest.

Every command that reads a REPORT also takes a store URL with `--run NAME` (run id, name or UUID):
`ttreport ops postgresql://db/ttreport --run nightly-1234`. takes_runs() gives the command that option; once click
has parsed the command line, each URL is swapped for the local folder that holds its run (pull.py), so the commands
read a run with the same code as a folder. `compare URL --run a URL --run b` compares two runs.

    ttreport push generated/ttreport/reports/demo --to postgresql:///ttreport --name nightly-1
    ttreport history postgresql:///ttreport --op ttnn.matmul --shape 1x32x64
"""

from __future__ import annotations

import csv
import difflib
import functools
import json
import sys

import click

from ttreport.read.device_time import human_ns
from ttreport.read.report import sql_param
from ttreport.read.terminal import echo_table, human_bytes, human_seconds, plain_table
from ttreport.store.connection import StoreError, is_store_url
from ttreport.store.history import history as op_history
from ttreport.store.history import op_shapes
from ttreport.store.history import runs as list_runs
from ttreport.store.pull import materialize
from ttreport.store.push import push as push_one
from ttreport.store.push import shape_key
from ttreport.store.query import query


def takes_runs(command: click.Command, *, whole_store: click.Command | None = None) -> click.Command:
    """`command`, one that reads REPORTs, with a `--run NAME` option: each store URL given for a report (an
    argument's or an option's value) stands for the local folder that holds run NAME (pull.materialize). The URLs
    take the --run values in the order they come on the command line (click fills the parameters in that order):
    `compare URL --run a URL --run b`. `whole_store`: the command that answers a store URL given with no --run
    (query's SQL over every run of the store: query-store), called with the same values, the URL as its `url`."""
    command.params.append(click.Option(["--run", "runs"], multiple=True, metavar="NAME",
                                       help="With a store URL for a report: the run it names (run id, name or "
                                            "UUID; `ttreport runs URL` lists them); one --run for each URL, in order."))
    body = command.callback

    @functools.wraps(body)
    def with_runs(*args, runs, **kwargs):
        urls = [(name, i) for name, value in kwargs.items() for i, x in _items(value) if is_store_url(x)]
        if urls and not runs and whole_store is not None:
            (name, _), = urls
            kwargs["url"] = kwargs.pop(name)
            return click.get_current_context().invoke(whole_store, **kwargs)
        if len(runs) != len(urls):
            raise StoreError(f"{len(urls)} store URL(s) and {len(runs)} --run: give one --run NAME after each store "
                             f"URL (`ttreport runs URL` lists the runs)")
        for (name, i), run in zip(urls, runs):
            folder = str(materialize(kwargs[name] if i is None else kwargs[name][i], run))
            kwargs[name] = folder if i is None else (*kwargs[name][:i], folder, *kwargs[name][i + 1:])
        return body(*args, **kwargs)

    command.callback = with_runs
    return command


def _items(value) -> list[tuple[int | None, object]]:
    """(index, item) for each item of a multiple or nargs=-1 parameter's tuple; (None, value) for one value."""
    return list(enumerate(value)) if isinstance(value, (tuple, list)) else [(None, value)]


@click.command()
@click.argument("reports", nargs=-1, required=True)
@click.option("--to", "url", required=True, help="the store: postgresql://[user@]host[:port]/db[?tensors=DIR]")
@click.option("--name", default=None, help="the run's name (default: the report folder's name); one report only")
@click.option("--model", default=None, help="the model's name for `runs` (default: the report folder's name)")
def push(reports, url, name, model):
    """Upload REPORT folders into the store at --to, each in one transaction (a pushed report is skipped).

    Every reading command then takes the store's URL and --run NAME in place of a folder.
    Credentials: in the URL, PGPASSWORD/PGUSER, or ~/.pgpass; none is written into a report or the store.

    Example: ttreport push generated/ttreport/reports/demo --to "postgresql://ci@db/ttreport?tensors=/mnt/t"
    """
    if name and len(reports) > 1:
        raise StoreError(f"--name {name!r} names one run, and {len(reports)} reports were given: push them one by one")
    for report in reports:
        run_id, added = push_one(report, url, name=name, model=model)
        click.echo(f"{report}: {'pushed as' if added else 'already in the store as'} run {run_id}")


@click.command()
@click.argument("url")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="only the last N runs pushed")
@click.option("--json", "as_json", is_flag=True, help="the runs as one JSON list of objects")
def runs(url, limit, as_json):
    """List the runs in the store at URL in the order they were pushed (run id), the last pushed last:
    name, model, host, git commit, start, status, ops. A run pushed late may have started earlier.

    Example: ttreport runs postgresql://ci@db/ttreport --limit 20
    """
    rows = list_runs(url, limit=limit)
    if as_json:  # one document, as every reading command's --json
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    cols = ["run_id", "name", "model", "host", "git_commit", "started_at", "status", "operations"]
    click.echo("\n".join(plain_table(cols, [[("" if r[c] is None else r[c] if c != "git_commit" else r[c][:12])
                                             for c in cols] for r in rows])))


@click.command()
@click.argument("url")
@click.option("--op", "op", required=True, help="the op's name, e.g. ttnn.matmul")
@click.option("--shape", default=None, help="only calls whose first input has these dims: 1x32x64 or [1, 32, 64]")
@click.option("--threshold", type=click.FloatRange(min=0, min_open=True), default=0.10, show_default=True,
              help="flag a run whose mean device time or peak L1 moved more than this fraction from the run before")
@click.option("--host-time", is_flag=True, help="flag changes of the emulator's host time instead of device time "
              "(host time moves with first-call warm-up and the machine's load)")
@click.option("--json", "as_json", is_flag=True, help="the runs as one JSON list of objects")
def history(url, op, shape, threshold, host_time, as_json):
    """Show op --op run by run from the store at URL (calls, mean device time estimated by the performance model,
    mean and max host time, peak L1, lowest PCC), with flags.

    A run is flagged where the op's mean device time (--host-time: host time) or peak L1 moved more than
    --threshold from the previous run that called it, or its lowest golden PCC fell by more than 0.001.

    Example: ttreport history postgresql://ci@db/ttreport --op ttnn.matmul --shape 1x32x64
    """
    rows = op_history(url, op, shape=shape, threshold=threshold, clock="host" if host_time else "device")
    if not rows:
        _unknown(url, op, shape)
    if as_json:  # one document, as every reading command's --json
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    cols = ["run_id", "run", "started_at", "commit", "calls", "device mean (est.)", "host mean", "host max",
            "peak L1", "min PCC", "changed"]
    table = [[r["run_id"], r["run"], r["started_at"] or "", (r["git_commit"] or "")[:12], r["count"],
              human_ns(round(r["mean_device_ns"])) if r["mean_device_ns"] is not None else "",
              human_seconds(r["mean_s"]) if r["mean_s"] is not None else "",
              human_seconds(r["max_s"]) if r["max_s"] is not None else "",
              human_bytes(r["peak_l1"]) if r["peak_l1"] is not None else "",
              f"{r['min_pcc']:.6f}" if r["min_pcc"] is not None else "", "; ".join(r["flags"])] for r in rows]
    click.echo("\n".join(plain_table(cols, table)))


def _unknown(url: str, op: str, shape: str | None) -> None:
    """Refuse an --op or --shape that matches nothing, saying which, with the names or shapes that would match."""
    known = op_shapes(url)
    if op not in known:
        close = difflib.get_close_matches(op, list(known), n=5, cutoff=0.6)
        hint = f"closest: {', '.join(close)}" if close else \
            f"op names are as `ttreport summary` shows them ({', '.join(list(known)[:5]) or 'the store is empty'})"
        raise StoreError(f"no run in the store calls op {op!r}; {hint}")
    shapes = known[op]
    listed = ", ".join(shapes[:20]) + (f" and {len(shapes) - 20} more" if len(shapes) > 20 else "")
    raise StoreError(f"{op} is never called with first-input shape {shape_key(shape)} in the store; its shapes: "
                     f"{listed} (give one of them to --shape, or leave it out)")


@click.command(name="query-store", hidden=True)  # `ttreport query URL SQL` without --run comes here
@click.argument("url")
@click.argument("sql")
@click.option("--json", "as_json", is_flag=True, help="Rows as a JSON list of objects.")
@click.option("--csv", "as_csv", is_flag=True, help="Rows as CSV with a header line.")
@click.option("-p", "--param", "params", type=(str, str), multiple=True, help="A value for a :name in the SQL.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=300.0,
              show_default=True, help="Stop the query after this many seconds.")
def query_store(url, sql, as_json, as_csv, params, timeout_s):
    """Run SQL over every run of the store at URL, in a read-only transaction (tables have a run_id column).

    Example: ttreport query postgresql:///ttreport "SELECT run_id, COUNT(*) FROM operations GROUP BY run_id"
    """
    if as_json and as_csv:
        raise StoreError("give either --json or --csv, not both")
    columns, rows = query(url, sql, {k: sql_param(v) for k, v in params}, timeout_s=timeout_s)
    if as_json:
        click.echo(json.dumps([dict(zip(columns, r)) for r in rows], default=str, indent=1))
    elif as_csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    elif columns:
        echo_table(columns, rows)
