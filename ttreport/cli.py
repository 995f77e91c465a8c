"""The `ttreport` command: read reports, query them, run scripts under capture.

One click group, one command per job; every command has help text with an `Example:`.
Errors a user can cause (a wrong path, an unknown op id, a write in `query`) print one line
and exit with status 2, never a traceback.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import difflib
import json
import math
import os
import runpy
import sqlite3
import sys
import traceback
from pathlib import Path

import click

from ttreport import db, memory_text, outfile, recovery, wal
from ttreport.attach import attach as attach_report
from ttreport.config import Config
from ttreport.errors import NeedsUpgradeError, NewerSchemaError, TTReportError
from ttreport.export import memory
from ttreport.export.html import MAX_OPS as HTML_MAX_OPS
from ttreport.export.ops_perf import export_ops_perf
from ttreport.folder import OPLOG_DIR, OPLOG_DONE_DIR
from ttreport.importer import import_graph_report
from ttreport.read import device_time, measured, terminal
from ttreport.read.faults import check as check_report
from ttreport.read.report import (
    DEFAULT_ROOT,
    Report,
    Summary,
    connect_readonly,
    default_roots,
    find_reports,
    resolve,
    sql_param,
)
from ttreport.read.terminal import json_safe
from ttreport.store import cli as store_cli
from ttreport.store.connection import is_store_url, masked

BAD_INPUT = 2


class Failure(click.ClickException):
    """A one-line error for the user, exit status 2."""

    exit_code = BAD_INPUT


def one_line(text: str) -> str:
    """`text` with each line break or control character escaped ("\\x1e"): a damaged database's error
    can quote its bytes, and the error must stay one line."""
    return "".join(repr(c)[1:-1] if c.isspace() and c != " " or not c.isprintable() else c for c in text)


_STORE_URLS = "ttreport.store_urls"  # ctx.meta: the store URLs (and DSNs) of the command line
REPORT_PARAMS = frozenset({"report", "reports", "a", "b", "against"})  # the parameters that name a report


class _Group(click.Group):
    def parse_args(self, ctx, args):
        # The store URLs (and libpq DSNs) of the command line, whose passwords invoke() hides in any message.
        ctx.meta[_STORE_URLS] = [a for a in args if is_store_url(a)]
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        try:
            try:
                return self._invoke(ctx)
            except click.UsageError as e:
                # click prints the usage and a "Try --help" line above the error when it has the command's context:
                # three lines where every other error is one ("ttreport diff-tensor missing.pt b.pt", "ttreport op
                # REPORT abc"). The error keeps its class (BadParameter, ...) for main(standalone_mode=False) callers.
                if e.ctx is not None:
                    hint = f"(`{e.ctx.command_path} --help` shows its usage)"
                    e.message, e.ctx = f"{one_line(e.message)} {hint}" if e.message else hint, None
                raise
        except click.ClickException as e:
            # Any message may quote a store URL of the command line (click's "unexpected extra argument", a URL
            # given where a report folder belongs): its password is hidden, in whatever form it is quoted.
            for url in ctx.meta.get(_STORE_URLS, ()):
                e.message = masked(e.message, url)
            raise

    def _invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except TTReportError as e:
            raise Failure(one_line(str(e))) from None
        except ValueError as e:
            # A bad DEVICE_SIM_PERF_CONSTANTS file, raised as a command imports the performance model (run, demo,
            # calibrate). Its module is looked up, not imported: importing it here would load device_sim and torch
            # into every command's start; a ConstantsFileError can only come from it once it is loaded.
            constants = sys.modules.get("device_sim.perf_constants")
            if constants is not None and isinstance(e, constants.ConstantsFileError):
                raise Failure(one_line(str(e))) from None
            raise
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            if isinstance(e, sqlite3.OperationalError) and str(e) == "interrupted":
                raise KeyboardInterrupt from None  # Ctrl-C stopped a statement: click says "Aborted!"
            # A damaged page, or text that is not UTF-8, found where a reader looked: the same one line.
            report = ctx.meta.get("ttreport.report", "REPORT")  # set by _open
            what = one_line(str(e))[:200] if str(e) else type(e).__name__
            raise Failure(f"{report} cannot be read: its database is damaged ({what}); "
                          f"`ttreport check {report}` lists the damage") from None


@click.group(cls=_Group)
@click.version_option(package_name="ttreport")
def main():
    """Read, query and make ttreport reports: the op history of a TT-NN model run.

    Example: ttreport summary generated/ttreport/reports/demo
    """


# -- formatting -------------------------------------------------------------------------------

# Units, cells and plain tables live in ttreport.read.terminal (shared with the other commands' modules); a
# damaged report's text or BLOB where a number belongs is shown as it is, never a TypeError. Every value from a
# report reaches the terminal through _cell (control characters escaped, length capped) or, in the views
# composed as lines here (op, tensor), through terminal.printable over the whole text.
human_bytes, human_seconds, _cell = terminal.human_bytes, terminal.human_seconds, terminal.cell
table_lines = terminal.plain_table
# `op` shows one op whole: its arguments, stack trace and error up to this many characters each (the demo's
# longest is 626; the cap keeps a crafted 64 MiB one from flooding the terminal).
OP_VALUE_CHARS = 20_000


def format_table(columns, rows) -> str:
    """An aligned plain-text table; numbers are right-aligned, a multi-line value takes several lines."""
    return "\n".join(table_lines(columns, rows))


def _number(x, spec: str) -> str:
    return format(x, spec) if isinstance(x, (int, float)) else _cell(x)


def _address(a) -> str:
    return f"{a:#x}" if isinstance(a, int) else _cell(a)


def _tensor_brief(t) -> str:
    where = f"{t.buffer_type}@{_address(t.address)}" if t.buffer_type is not None and t.address is not None else "host"
    dtype = _cell(t.dtype or "?").removeprefix("DataType.")
    return f"{t.id}:{list(t.dims)} {dtype} {where}"


def format_summary(s: Summary, path, *, table=format_table, device=None, device_by_name=None, slowest=(),
                   measured=None, constants=None) -> str:
    # The folder's name comes with the folder (an archive's): its control characters escaped, as compare's A: are.
    out = [f"report  {terminal.printable(str(path))}", f"status  {_cell(s.status_text or s.status or 'unknown')}",
           f"ops     {s.operations} ({human_seconds(s.top_level_seconds)} of emulator host time in top-level ops)"]
    if device is not None:  # device_time.DeviceTotal: the performance model's estimate
        out.append(f"device  {device_time.human_ns(device.ideal_ns)} estimated on the device in top-level ops "
                   f"({device.compute_bound} compute-bound, {device.bandwidth_bound} bandwidth-bound)")
        if constants is not None:  # device_time.ConstantsFile: DEVICE_SIM_PERF_CONSTANTS was set for the capture
            out.append(f"        estimated with calibrated constants from {_cell(constants.path)} "
                       f"(sha256 {_cell(constants.sha256)[:12]}, {len(constants.constants)} set)")
        if device.transfer_ns:
            out.append(f"        kernels {device_time.human_ns(device.kernel_ns)}, host transfers "
                       f"{device_time.human_ns(device.transfer_ns)} (to and from the host over PCIe)")
        if slowest:  # device_time.slowest: (op id, name, ns)
            out.append("        slowest: " + ", ".join(f"op {i} {_cell(name)} {device_time.human_ns(ns)}"
                                                       for i, name, ns in slowest))
    if measured is not None:  # read.measured.MeasuredSummary: a real profiler run attached (`ttreport attach`)
        out += _measured_lines(measured, table)
    out.append("")
    if s.by_name:
        dev = device_by_name or {}
        # Slowest on the device first (the estimate is the same run after run); by host self time without one.
        by_name = sorted(s.by_name, key=lambda r: -(dev.get(r["name"]) or 0)) if dev else s.by_name
        rows = [(r["name"], r["count"], device_time.human_ns(dev.get(r["name"])), human_seconds(r["total_s"]),
                 human_seconds(r["self_s"]), "" if math.isnan(r["percent"]) else f"{r['percent']:.1f}%")
                for r in by_name]
        out += ["time by op name (device: estimated, all calls; host: the emulator's, self excludes the ops it "
                "called):", table(["name", "count", "device", "host total", "host self", "self %"], rows), ""]
    if s.steps:  # a run captured in steps (run.step()): comparisons and history use the active ones
        active = [st for st in s.steps if st.phase == "active"]
        out += ["steps (top-level ops; device: estimated; host: the emulator's):",
                table(["step", "phase", "ops", "device", "host"],
                      [(st.step, st.phase, st.ops, device_time.human_ns(st.device_ns), human_seconds(
                          None if st.host_ns is None else st.host_ns / 1e9)) for st in s.steps])]
        if active:
            estimated = [st.device_ns for st in active if st.device_ns is not None]
            host = sum(st.host_ns or 0 for st in active) / len(active) / 1e9
            out.append(f"{_plural(len(active), 'active step')}: device "
                       f"{device_time.human_ns(round(sum(estimated) / len(estimated))) if estimated else '?'} "
                       f"a step on average, host {human_seconds(host)}")
        out.append("")
    # Both figures of memory, named as every view names them (ttreport.export.memory).
    peaks = [(memory.label(kind, figure), peak) for kind, figures in (
        ("L1", ((memory.ALLOCATED, s.peak_l1), (memory.IN_BUFFERS, s.peak_l1_in_buffers))),
        ("DRAM", ((memory.ALLOCATED, s.peak_dram), (memory.IN_BUFFERS, s.peak_dram_in_buffers))))
        for figure, peak in figures if peak is not None]
    width = max((len(label) for label, _ in peaks), default=0)
    for label, peak in peaks:
        out.append(f"{label:<{width}}  {human_bytes(peak['bytes'])} after op {peak['operation_id']} "
                   f"({_cell(peak['name'])})")
    if len(s.peak_l1_by_device) > 1:  # a mesh: which chip runs out of L1 first
        top = s.peak_l1_by_device[0]
        out.append(f"{memory.label('L1', memory.IN_BUFFERS)} by device (highest: device {top['device_id']}):")
        out += [f"  device {p['device_id']}: {human_bytes(p['bytes'])} after op {p['operation_id']} "
                f"({_cell(p['name'])})" for p in sorted(s.peak_l1_by_device, key=lambda p: p["device_id"])]
    for c in s.comparisons:
        lowest = c["lowest_pcc"]
        device = c.get("lowest_pcc_device_id")
        lowest = f", lowest PCC {_number(lowest, '.6f')} at op {c['lowest_pcc_operation_id']}" \
            + (f" (device {device})" if device is not None else "") if lowest is not None else ""
        # Comparisons, not ops: one per output tensor (and device), so they can outnumber the ops.
        ops = f" on {_plural(c['ops'], 'op')}" if c.get("ops") is not None else ""
        out.append(f"golden    {_cell(c['mode'])} {_cell(c['status'])}: {_plural(c['count'], 'comparison')}"
                   f"{ops}{lowest}")
    out.append(f"errors    {len(s.errors)}")
    for e in s.errors:  # one line each; `ttreport op` shows the whole message
        where = f"op {e.operation_id} {_cell(e.operation_name)}" if e.operation_id is not None else "the model raised"
        line = f"  {where}: {_cell(e.error_type)}: {_cell(_one_line(e.message))}"
        out.append(_cut_middle(line, 160))
    return "\n".join(out)


def _measured_lines(m, table) -> list[str]:
    """Measured beside modelled (read.measured.summary): totals, the per-op spread, each op name, the furthest ops."""
    ns, ratio = device_time.human_ns, lambda x: "" if x is None else f"{x:.2f}x"
    out = [f"measured {ns(m.measured_ns)} on the device over {_plural(m.ops, 'op')} that a real run measured "
           f"({_cell(m.source or 'attached')}: {m.matched_rows:,} of its {m.rows:,} device operations matched); "
           f"the model says {ns(m.modelled_ns)} for them: {ratio(m.ratio)}"]
    if m.median_ratio is not None:
        out.append(f"         estimate / measured per op: median {ratio(m.median_ratio)}, {100 * m.within_2x:.0f}% "
                   f"within 2x, {100 * m.within_4x:.0f}% within 4x")
    if m.worst:
        out.append("         furthest: " + ", ".join(f"op {o.operation_id} {_cell(o.name)} {ns(o.modelled_ns)} "
                                                     f"vs {ns(o.measured_ns)} ({ratio(o.ratio)})" for o in m.worst[:3]))
    if m.by_name:
        out += ["measured beside modelled by op name (estimate / measured; below 1 the model is too fast):",
                table(["name", "ops", "measured", "modelled", "ratio"],
                      [(n.name, n.ops, ns(n.measured_ns), ns(n.modelled_ns), ratio(n.ratio)) for n in m.by_name])]
    return out


def _cut_middle(line: str, width: int) -> str:
    """`line` in `width` characters: cut in the middle, so that its last sentence (the fix, in this project's
    messages: "...; pass X", "... Move one with Y") stays whole when it takes at most 100 of them."""
    if len(line) <= width:
        return line
    tail = max(line.rfind(". "), line.rfind("; "))
    keep = len(line) - tail - 2 if tail > 0 and len(line) - tail - 2 <= 100 else (width - 5) // 2
    return line[:width - 5 - keep] + " ... " + line[len(line) - keep:]


def _plural(n, noun: str) -> str:
    return f"{_cell(n)} {noun}" + ("" if n == 1 else "s")


def _one_line(message) -> str:
    """An error message's line for the summary: its first line, or for a TT_FATAL (TT-NN's and device_sim's
    "TT_FATAL @ where: condition\ninfo:\nwhat") the text after info:, which says what is wrong."""
    lines = ("" if message is None else str(message)).splitlines() or [""]  # a damaged row may hold any type
    if lines[0].startswith("TT_FATAL @") and "info:" in lines[1:3]:
        rest = lines[lines.index("info:", 1) + 1:]
        return "TT_FATAL: " + " / ".join(x.strip() for x in rest if x.strip()) if rest else lines[0]
    return lines[0]


# -- JSON and output paths, the same for every command ------------------------------------------------------

# Every reading command takes --json: one JSON document on stdout, nothing else there (progress and notes go to
# stderr), so `ttreport X --json | jq` works for each.
_json_flag = click.option("--json", "as_json", is_flag=True, help="Print it as one JSON document on stdout.")


def _echo_json(value) -> None:
    """`value` (dataclasses, named tuples, dicts, lists) as indented JSON: NaN as null, a BLOB as hex."""
    click.echo(json.dumps(json_safe(_plain(value)), indent=2, default=_json_default))


# The reading API's figures made from stored fields (TensorInfo's dims as ints, Operation's whole nanoseconds):
# in the JSON beside the fields they come from.
_DERIVED = ("shape", "padded_shape", "duration_ns")


def _plain(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return out | {k: _plain(getattr(value, k)) for k in _DERIVED if hasattr(type(value), k)}
    if hasattr(value, "_asdict"):  # a NamedTuple (device_time's figures)
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _output_folder(folder: Path, written: Path) -> None:
    """The one rule for every file a command writes (trace, html, perf-csv, merge, compare's --json/--csv): the
    folder it goes into must exist. A typo in a path (`-o reprots/x.html`) is refused, never made into a new
    tree of folders, as cp, gcc -o and curl -o (without --create-dirs) do."""
    if folder.exists() and not folder.is_dir():  # `mkdir -p` of it would fail too: not the fix to offer
        raise Failure(f"cannot write {written}: {folder} is a file, not a folder; give a path in a folder")
    if not folder.is_dir():
        raise Failure(f"cannot write {written}: the folder {folder} does not exist; make it first "
                      f"(mkdir -p {folder}) or give a path in a folder that exists")


def _output_file(path: Path | None) -> Path | None:
    if path is not None and str(path) != "-":
        _output_folder(path.parent, path)
    return path


def _open(path) -> Report:
    click.get_current_context().meta["ttreport.report"] = path  # shared by every context: for _Group's errors
    return Report(path)


# -- commands ---------------------------------------------------------------------------------

@main.command(name="ls")
@click.argument("root", required=False, type=click.Path(file_okay=False, path_type=Path))
@_json_flag
def ls_command(root: Path | None, as_json: bool):
    """List the reports under ROOT, looking into its subfolders (4 levels down); without ROOT, those in
    generated/ttreport/reports (ttreport's captures) and generated/ttnn/reports (TT-NN's logging,
    TTNN_CONFIG_OVERRIDES), under the working directory or else its project root (the nearest folder
    above with a pyproject.toml or .git).

    Shows each report's path (as other commands take it), op count, status, size on disk and start time.

    Example: ttreport ls generated/ttreport/reports
    """
    if root is None:
        roots = [r for r in default_roots() if r.is_dir()]
        if not roots:
            raise Failure(f"no reports yet: neither {DEFAULT_ROOT} nor generated/ttnn/reports is here or under the "
                          f"project root (`ttreport demo` makes one), or give the folder that holds your reports")
        # paths as the other commands take them from here: relative to the working directory when under it
        folders = [(f, os.path.relpath(f) if not os.path.relpath(f).startswith("..") else str(f))
                   for r in roots for f in find_reports(r)]
    elif not root.exists():
        raise Failure(f"{root} does not exist: no reports there yet (`ttreport demo` makes one), or give the "
                      f"folder that holds your report folders")
    elif not root.is_dir():
        raise Failure(f"{root} is a file; give the folder that holds report folders")
    else:
        folders = [(f, f.relative_to(root).as_posix() if f != root else str(root)) for f in find_reports(root)]
    rows = []
    for folder, name in folders:
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        try:
            with Report(folder) as r:
                meta = r.metadata
                rows.append((name, r.count_operations(), r.status_text, size,
                             meta.get("started_at", "")[:19].replace("T", " ")))
        except TTReportError as e:
            status = ("needs upgrade" if isinstance(e, NeedsUpgradeError)
                      else "needs a newer ttreport" if isinstance(e, NewerSchemaError) else "unreadable")
            rows.append((name, None, status, size, ""))
        except (sqlite3.DatabaseError, UnicodeDecodeError):
            rows.append((name, None, "damaged (ttreport check)", size, ""))
    if as_json:
        _echo_json([dict(zip(("path", "operations", "status", "bytes", "started_at"), row)) for row in rows])
        return
    if not rows:
        click.echo(f"no reports under {root or ' or '.join(map(str, roots))}")
        return
    terminal.echo_table(["name", "ops", "status", "size", "started"],
                        [(n, ops, status, human_bytes(size), started) for n, ops, status, size, started in rows])


@main.command()
@click.argument("report")
@click.option("--name", "-n", help="Op name, its last part (matmul) or a glob (*norm*).")
@click.option("--sort", type=click.Choice(["id", "duration", "start", "device"]), default="id", show_default=True,
              help="Call order, start time, slowest first on the host (duration: the emulator's time) or on the "
                   "device (device: the performance model's estimate).")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True,
              help="At most this many ops (0: all).")
@click.option("--top-level", is_flag=True, help="Only the ops the model called directly (depth 0).")
@_json_flag
def ops(report, name, sort, limit, top_level, as_json):
    """List the ops of REPORT: id, name, duration, output shapes and where they live.

    Nested ops are indented under the op that called them. A --name that matches no op is refused,
    naming the closest op names of the report.

    Example: ttreport ops generated/ttreport/reports/demo --name matmul --sort device --limit 10
    """
    with _open(report) as r:
        total = r.count_operations(name)
        if name and not total:
            _no_op_named(r, name)
        if as_json:
            _echo_json([_op_json(r, op) for op in r.iter_operations(name, sort=sort, limit=limit or None,
                                                                    depth=0 if top_level else None)])
            return
        shown = 0

        def rows():  # made as they are printed: `--limit 0` on millions of ops takes little memory
            nonlocal shown
            for op in r.iter_operations(name, sort=sort, limit=limit or None, depth=0 if top_level else None):
                shown += 1
                indent = "  " * op.depth if isinstance(op.depth, int) and 0 < op.depth < 64 and sort == "id" else ""
                yield (op.id, indent + op.name if isinstance(op.name, str) else op.name, human_seconds(op.duration),
                       device_time.text(device_time.of_op(r, op.id)), op.status or "",
                       ", ".join(_tensor_brief(t) for t in op.output_tensors))

        terminal.echo_table(["id", "name", "duration", "device (est.)", "status", "outputs (id:shape dtype where)"],
                            rows())
    if shown < total and not top_level:
        click.echo(f"({shown} of {total} ops; --limit 0 shows all)")
    elif not shown and total:  # every op of that name was called by another op
        click.echo(f"(no top-level op{f' named {_cell(name)!r}' if name else ''}; {total} nested: leave out "
                   f"--top-level to list them)")


def _no_op_named(r: Report, name: str, option: str = "--name") -> None:
    """Refuse a --name that matches no op: a typo gets the closest names (difflib, on the whole and last part)."""
    names = r.op_names()
    last = {n.rsplit(".", 1)[-1]: n for n in names}
    # names holding the last part first (`softmax`: ttnn.transformer.attention_softmax), then difflib's nearest
    part = name.rsplit(".", 1)[-1].strip("*?[]")
    close = list(dict.fromkeys([n for n in names if part and part in n]
                               + [last[m] for m in difflib.get_close_matches(part, list(last), n=5)]
                               + difflib.get_close_matches(name, names)))[:5]
    hint = f"closest: {', '.join(map(_cell, close))}" if close else f"its {len(names)} op names: `ttreport summary`"
    raise Failure(f"{option} {_cell(name)!r}: no op of {r.path} is named so (a name, its last part or a glob); {hint}")


def _op_json(r: Report, op, children=None) -> dict:
    """An op as `ops --json` and `op --json` give it: its row, tensors and arguments, the device estimate."""
    out = _plain(op)
    out["device"] = _plain(device_time.of_op(r, op.id))
    out["measured"] = _plain(measured.of_op(r, op.id))  # a real run's device operations (`ttreport attach`)
    if children is not None:
        out["calls"] = [{"id": c.id, "name": c.name} for c in children]
    return out


def _rounding(t, r: Report | None) -> str:
    """Why a small tensor takes more device memory than its size: whole pages in every bank."""
    if r is None or not isinstance(t.size, int):
        return ""
    per_bank, banks = r.per_bank_bytes(t), r.banks(t.buffer_type)
    if per_bank is None or banks is None or per_bank * banks <= t.size:
        return ""
    return (f"; allocated {human_bytes(per_bank * banks)} (bank rounding: an interleaved buffer takes "
            f"{human_bytes(per_bank)} in each of {banks} banks)")


def _tensor_lines(t, label: str, r: Report | None = None) -> list[str]:
    lines = [f"  {label} tensor {t.id}: {_cell(t.shape_text)} {_cell(t.dtype)} {_cell(t.layout)}"]
    if t.buffer_type is not None:
        address = _address(t.address)
        lines.append(f"      {_cell(t.buffer_type)} at {address}, {human_bytes(t.size)}{_rounding(t, r)}, "
                     f"device {t.device_id}")
        # The shard spec said in words (grid, shard shape, orientation): the visualizer's regex misses TT-NN's text.
        cfg = _cell(memory_text.readable(t.memory_config))
        source = t.memory_config_source
        lines.append(f"      {cfg}" + (f" (chosen by: {_cell(source)})" if source else ""))
    else:
        lines.append("      on the host")
    made = f"by op {t.producer}" if t.producer is not None else "before the capture or on the host"
    lines.append(f"      made {made}")
    if t.file:
        lines.append(f"      stored in {_cell(t.file)}")
    return lines


@main.command()
@click.argument("report")
@click.argument("operation_id", type=int)
@_json_flag
def op(report, operation_id, as_json):
    """Everything about one op: arguments, input and output tensors, memory, stack trace, error.

    Example: ttreport op generated/ttreport/reports/demo 12
    """
    with _open(report) as r:
        if as_json:
            _echo_json(_op_json(r, r.operation(operation_id), r.children(operation_id)))
            return
        _echo_op(r, r.operation(operation_id), r.children(operation_id))


def _echo_op(r: Report, o, children) -> None:
    # A TT-NN report (or one upgraded from it) records no status, depth, thread or memory: those lines go.
    out = [f"op {o.id}: {_cell(o.name)}"]
    if o.status is not None:
        out.append(f"  status    {o.status}")
    out.append(f"  duration  {human_seconds(o.duration) or 'not recorded'}")
    p = device_time.of_op(r, o.id)
    if p is not None:
        fidelity = f", {p.math_fidelity}" if p.math_fidelity else ""
        out.append(f"  device    {device_time.human_ns(p.ideal_ns)} estimated, {p.bound}-bound (compute "
                   f"{device_time.human_ns(p.compute_ns)}, bandwidth {device_time.human_ns(p.bandwidth_ns)}{fidelity})")
    real = measured.of_op(r, o.id)
    if real:  # a real run's times attached (`ttreport attach`): the op's device operations on its slowest chip
        ns = measured.of_ops(r, o.id).get(o.id)
        ratio = f": estimate / measured {p.ideal_ns / ns:.2f}x" if p is not None and isinstance(p.ideal_ns, int) \
            and ns else ""
        ran = ", ".join(dict.fromkeys(_cell(m.op_code) + (f" on {_cell(m.core_count)} cores" if m.core_count else "")
                                      for m in real))
        out.append(f"  measured  {device_time.human_ns(ns) or 'no kernel time'} on real hardware ({ran}){ratio}")
    if o.depth is not None:
        out.append(f"  depth     {o.depth}" + (f" (called by op {o.parent})" if o.parent is not None else ""))
    if o.thread is not None:
        out.append(f"  thread    {o.thread}")
    if o.l1_bytes is not None or o.dram_bytes is not None:
        out.append(f"  after it  L1 {human_bytes(o.l1_bytes) or '?'}, DRAM {human_bytes(o.dram_bytes) or '?'} "
                   f"allocated (bank rounding: each buffer takes whole pages in each of its banks)")
    by_device = r.l1_by_device(o.id) if o.l1_bytes is not None else []
    if len(by_device) > 1:  # a mesh: each chip's L1 after the op
        out.append("  L1 by device  " + ", ".join(f"{d['device_id']}: {human_bytes(d['bytes'])}" for d in by_device))
    out += _golden_lines(r.golden_checks(o.id))
    if children:
        out.append("  calls     " + _cell(", ".join(f"{c.id} {c.name}" for c in children), OP_VALUE_CHARS))
    out.append("arguments:")
    out += [f"  {_cell(k)} = {_cell(v, OP_VALUE_CHARS)}" for k, v in o.arguments] or ["  (none)"]
    out.append("inputs:")
    for i, t in enumerate(o.input_tensors):
        out += _tensor_lines(t, f"[{i}]", r)
    out.append("outputs:")
    for i, t in enumerate(o.output_tensors):
        out += _tensor_lines(t, f"[{i}]", r)
    if o.stack_trace:
        out += ["stack trace:", *("  " + line for line in _cell(o.stack_trace, OP_VALUE_CHARS).rstrip().splitlines())]
    if o.error is not None:
        out += [f"error: {_cell(o.error.error_type)}: {_cell(o.error.message, OP_VALUE_CHARS)}"]
    click.echo(terminal.printable("\n".join(out)))  # what the lines quote from the report, escaped


def _golden_lines(checks: list[dict]) -> list[str]:
    """One line per mode of an op's golden checks; on a mesh, which devices failed and the worst one."""
    lines = []
    for mode in dict.fromkeys(c["mode"] for c in checks):
        rows = [c for c in checks if c["mode"] == mode]  # worst first
        worst, failed = rows[0], [c for c in rows if c["status"] == "fail"]
        pcc = f", lowest PCC {_number(worst['pcc'], '.6f')}" if worst["pcc"] is not None else ""
        devices = sorted({c["device_id"] for c in rows if c["device_id"] is not None})
        if not devices:
            lines.append(f"  golden    {mode}: " + ", ".join(c["status"] for c in rows) + pcc)
            continue
        bad = sorted({c["device_id"] for c in failed})
        verdict = f"fail on device(s) {', '.join(map(str, bad))}" if bad else worst["status"]
        lines.append(f"  golden    {mode}: {verdict} of {len(devices)} devices{pcc} (worst: device "
                     f"{worst['device_id']})")
    return lines


@main.command()
@click.argument("report")
@click.argument("sql")
@click.option("--json", "as_json", is_flag=True, help="Rows as a JSON list of objects.")
@click.option("--csv", "as_csv", is_flag=True, help="Rows as CSV with a header line.")
@click.option("-p", "--param", "params", type=(str, str), multiple=True,
              help="A value for a :name in the SQL, e.g. -p tensor_id 42. A number is bound as a number; "
                   "CAST(:name AS TEXT) in the SQL takes it as text.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=300.0,
              show_default=True, help="Stop the query after this many seconds.")
def query(report, sql, as_json, as_csv, params, timeout_s):
    """Run a read-only SQL query on REPORT and print the rows.

    docs/queries.md has a cookbook of queries. Statements that write are refused.
    Values for :name placeholders come from -p NAME VALUE. Rows are printed as they are read,
    so a query over millions of rows starts at once and takes little memory; Ctrl-C stops it.

    Example: ttreport query generated/ttreport/reports/demo "SELECT * FROM tensors WHERE tensor_id = :id" -p id 3
    """
    if as_json and as_csv:
        raise Failure("give either --json or --csv, not both")
    with _open(report) as r:
        columns, rows = r.rows(sql, {k: sql_param(v) for k, v in params}, timeout_s=timeout_s)
        if as_json:
            _echo_json_rows(columns, rows)
        elif as_csv:
            writer = csv.writer(_Echo(), lineterminator="\n")
            writer.writerow(columns)
            # On a terminal the values' control characters are escaped (they would act on it); into a pipe or
            # a file the CSV holds them as stored.
            shown = terminal.is_terminal()
            for row in rows:
                writer.writerow([terminal.printable(v) if shown and isinstance(v, str) else v for v in row])
        elif columns:
            terminal.echo_table(columns, rows)


class _Echo:
    """A file-like sink that hands each write to click.echo (what csv.writer needs to stream rows)."""

    def write(self, text: str) -> None:
        click.echo(text, nl=False)


def _echo_json_rows(columns, rows) -> None:
    """A JSON list of objects, written one row at a time (the same text json.dumps(indent=2) gives)."""
    first = True
    for row in rows:
        item = json.dumps(dict(zip(columns, row)), indent=2, default=_json_default)
        click.echo(("[\n" if first else ",\n") + "\n".join("  " + line for line in item.splitlines()), nl=False)
        first = False
    click.echo("[]" if first else "\n]")


def _json_default(value):
    if isinstance(value, bytes):
        return value.hex()  # a BLOB, as hex
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


@main.command()
@click.argument("report")
@_json_flag
def summary(report, as_json):
    """Device time (estimated) and host time by op name, per step, peak L1 and DRAM with the op, errors, status.

    Example: ttreport summary generated/ttreport/reports/demo
    """
    with _open(report) as r:
        if as_json:
            _echo_json({"report": str(r.path), **_plain(r.summary()), "device": _plain(device_time.total(r)),
                        "device_ns_by_name": device_time.by_name(r), "measured": _plain(measured.summary(r)),
                        "perf_constants": _plain(device_time.constants_file(r))})
            return
        click.echo(format_summary(r.summary(), r.path, table=terminal.table_text, device=device_time.total(r),
                                  device_by_name=device_time.by_name(r), slowest=device_time.slowest(r, 3),
                                  measured=measured.summary(r), constants=device_time.constants_file(r)))


@main.command()
@click.argument("report")
@click.argument("tensor_id", type=int)
@click.option("--device", type=int, default=None,
              help="A tensor on a mesh: the stats of this device's shard only (default: each device's).")
@_json_flag
def tensor(report, tensor_id, device, as_json):
    """One tensor: its spec, where it lived, who made and used it, and stats of its stored values.

    Example: ttreport tensor generated/ttreport/reports/demo 3
    """
    with _open(report) as r:
        t = r.tensor(tensor_id)
        consumers = r.consumers(tensor_id)
        if as_json:
            _echo_json(_tensor_json(r, t, consumers, device))
            return
        out = _tensor_lines(t, "", r)
        out[0] = f"tensor {t.id}: {t.shape_text} {t.dtype}" + (f" {t.layout}" if t.layout else "")
        for c in r.sql("SELECT tensor_id, operation_id, mode FROM tensor_comparisons WHERE golden_tensor_id = ?",
                       (tensor_id,)):
            out.append(f"      the torch golden ({c['mode']}) of tensor {c['tensor_id']}, op {c['operation_id']}")
        if t.padded_shape_text and t.padded_shape_text != t.shape_text:
            out.insert(1, f"      padded to {t.padded_shape_text}")
        out.append("      used by " + (", ".join(f"op {c.id} ({c.name})" for c in consumers) or "no op"))
        devices = r.tensor_devices(tensor_id) if t.file else []
        if devices:  # a mesh tensor: a file and stats per device shard
            out.append(f"      one file per device shard: devices {', '.join(map(str, devices))}")
            if device is not None and device not in devices:
                raise Failure(f"tensor {tensor_id} has no shard on device {device}; its devices: {devices}")
            out.append("stats:")
            out += [f"  device {d}: {_stats(r.load_array(tensor_id, device=d))}"
                    for d in ([device] if device is not None else devices)]
        elif device is not None:
            raise Failure(f"tensor {tensor_id} is not stored per device (it is not a mesh tensor, or its values "
                          f"were not stored); leave --device out")
        elif t.file:
            values = r.load_array(tensor_id)  # numpy: no torch to import (~2-3 s of a `tensor` that read it)
            out.append("stats:")
            out.append(f"  {_stats(values)}")
        else:
            out.append("values not stored (capture with ttreport.Config(tensors='all') to keep them)")
    click.echo(terminal.printable("\n".join(out)))  # what the lines quote from the report, escaped


def _tensor_json(r: Report, t, consumers, device: int | None) -> dict:
    """`tensor --json`: the tensor's row, its readers, and the stats of its stored values (per device shard)."""
    out = {**_plain(t), "used_by": [{"id": c.id, "name": c.name} for c in consumers], "stats": None}
    devices = r.tensor_devices(t.id) if t.file else []
    if device is not None and device not in devices:
        raise Failure(f"tensor {t.id} has no shard on device {device}; its devices: {devices or 'none stored'}")
    if devices:
        out["stats_by_device"] = {d: _stats_figures(r.load_array(t.id, device=d))
                                  for d in ([device] if device is not None else devices)}
    elif t.file:
        out["stats"] = _stats_figures(r.load_array(t.id))
    return out


def _stats_figures(values) -> dict:
    """numel, and over the finite values min, max, mean, std; how many are not finite. `values`: Report.load_array's
    (bfloat16 as its bits)."""
    import numpy as np  # only `tensor` needs it (~0.1 s): the other reading commands start without it

    from ttreport.ptfile import BFloat16Bits  # numpy too

    v = (values.float32() if isinstance(values, BFloat16Bits) else np.asarray(values)).astype(np.float64).ravel()
    finite = v[np.isfinite(v)]
    figures = {"numel": v.size, "non_finite": v.size - finite.size}
    if finite.size:
        figures.update(min=float(finite.min()), max=float(finite.max()), mean=float(finite.mean()),
                       std=float(finite.std()))
    return figures


def _stats(values) -> str:
    if values.size == 0:
        return "empty"
    f = _stats_figures(values)
    parts = [f"numel {f['numel']}"] + [f"{k} {f[k]:.6g}" for k in ("min", "max", "mean", "std") if k in f]
    if f["non_finite"]:
        parts.append(f"{f['non_finite']} non-finite")
    return ", ".join(parts)


@main.command()
@click.argument("report")
@click.option("--device-graphs", is_flag=True,
              help="Also fill TT-NN's per-op captured_graph, nodes and edges from the report's distinct graphs "
                   "(a default capture keeps each graph once), so that ttnn-visualizer shows each op's device "
                   "operations and links the perf files to them: ~2.8 KB more an op.")
def upgrade(report, device_graphs):
    """Upgrade REPORT, written by an older ttreport (or by TT-NN), to this version's schema (in place).

    A report already at this version is left as it is, byte for byte (unless --device-graphs
    fills the graph tables it left empty); a file that is not a report (empty, not SQLite,
    another program's database) is refused. Each step is printed with its time as it completes.

    REPORT is a folder, never a store's run (no --run, unlike the reading commands): a store brings
    its own tables to this version when a command connects to it, and a run's local folder is a
    cache built at this version's schema, so there is nothing to upgrade.

    Example: ttreport upgrade generated/ttreport/reports/old-run --device-graphs
    """
    click.get_current_context().meta["ttreport.report"] = report
    if is_store_url(report):  # the group's error handling hides its password
        raise Failure(f"{report} is a store: a store brings its own tables to this version when a command connects "
                      "to it, and its runs are read at this version's schema; upgrade a report folder")
    path = resolve(report)
    if path.is_symlink():  # a report folder is data from elsewhere: its db.sqlite may lead out of it
        raise Failure(one_line(f"{path} is a link (to {os.readlink(path)}): upgrade rewrites the db in place, which "
                               f"would write the file it leads to; upgrade that file's own folder, or put a copy of "
                               f"it in place of the link"))
    # What readers refuse in a folder, upgrade refuses first, before it opens the db to write: a planted WAL or hot
    # journal would be folded or rolled into it by SQLite itself (a planted WAL's 3 ops replaced the 66 the db held).
    # A real killed capture's WAL is folded, as by a reader.
    with contextlib.suppress(sqlite3.DatabaseError):  # not SQLite at all: check_writable_report says so
        connect_readonly(path).close()
    db.check_writable_report(path)
    _upgrade(report, path)
    if device_graphs:
        try:
            filled = db.fill_device_graphs(path)
        except sqlite3.Error as e:  # rolled back: the three tables are as they were
            raise Failure(one_line(f"cannot fill the graph tables of {path.parent}: {e} (the report is as it was; "
                                   f"`ttreport check {report}` lists any damage)")) from None
        click.echo(f"filled TT-NN's captured_graph, nodes and edges of {filled} ops of {path.parent}" if filled else
                   f"{path.parent}'s captured_graph has its rows already (or no op launched a device program)")


def _upgrade(report: str, path: Path) -> None:
    from sqlalchemy.exc import DBAPIError

    before = db.current_revision(path)
    if db.is_current(path):
        click.echo(f"{path.parent} is already at schema {before}")
        return
    revisions = db.revisions()
    steps = len(revisions) - 1 - (revisions.index(before) if before in revisions else 0)

    def step_done(line: str, advance) -> None:
        click.echo(f"  {line}", err=True)
        advance()

    try:
        with terminal.progress("upgrading", total=steps, unit="schema steps") as advance:
            db.upgrade(path, progress=lambda line: step_done(line, advance))
    except DBAPIError as e:  # SQLAlchemy's wrapper of SQLite's error; the upgrade was rolled back
        raise Failure(one_line(f"cannot upgrade {path.parent}: {e.orig} (the file is as it was; "
                               f"`ttreport check {report}` lists any damage)")) from None
    after = db.current_revision(path)
    _restamp_config(path.parent / "config.json", after)
    click.echo(f"upgraded {path.parent}: schema {before or 'none (TT-NN)'} -> {after}")


def _restamp_config(path: Path, revision: str) -> None:
    """config.json's schema_version (ttreport's key beside TT-NN's config) follows the upgraded db; a
    config.json that is not ttreport's JSON object is left as it is."""
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    if isinstance(config, dict) and config.get("schema_version") not in (None, revision):
        config["schema_version"] = revision
        outfile.write_text(path, json.dumps(config, indent=2) + "\n")  # a link in the folder is replaced, not followed


@main.command()
@click.argument("report")
@click.option("--repair", is_flag=True, help="First fold a WAL that a killed or disk-full capture left back into "
              "db.sqlite, so that the file stands alone (every reader tries to), rebuild db.sqlite from the op log a "
              "killed capture left, and delete one the report no longer needs; a fault if it cannot. A store's run "
              "(--run) has nothing to repair: its folder is a cache pulled whole from the store.")
@_json_flag
def check(report, repair, as_json):
    """Check REPORT's integrity: the database, ids across tables, tensor files, status, a left-over op log.

    Lists each fault and exits with status 1 if there is any; prints "ok" and exits 0 if none.

    Example: ttreport check generated/ttreport/reports/demo
    """
    click.get_current_context().meta["ttreport.report"] = report
    faults = _repair(report, err=as_json) if repair else []  # with --json, stdout holds the JSON only
    faults += check_report(report)
    if as_json:
        _echo_json({"report": report, "ok": not faults, "faults": faults})
        sys.exit(1 if faults else 0)
    for fault in faults:
        click.echo(one_line(fault))
    if faults:
        sys.exit(1)
    click.echo("ok")


def _repair(report, *, err: bool = False) -> list[str]:
    """Finish REPORT's op log and fold its left-over WAL (ttreport.recovery); the fault when the WAL cannot be folded.
    An op log that stays is check's to name (read.faults: what it holds, and why it stays)."""
    db_path = resolve(report)
    journal = db_path.with_name(db_path.name + "-journal")
    try:
        wal.refuse_odd_sidecars(db_path)  # a journal that is a FIFO or a link is no write to roll back
    except TTReportError as e:
        return [str(e)]
    if os.path.lexists(journal):  # a hot journal readers refuse (read.report.connect_readonly): SQLite rolls it back
        try:
            sqlite3.connect(db_path).execute("SELECT 1 FROM sqlite_master LIMIT 1").connection.close()
        except sqlite3.Error as e:
            return [f"{journal}: could not be rolled back into {db_path.name} ({e})"]
        if not os.path.lexists(journal):
            click.echo(f"repaired: rolled back the cut-short write in {journal.name}", err=err)
    log = wal.wal_path(db_path)
    had_wal = os.path.lexists(log)
    op_logs = [db_path.parent / name for name in (OPLOG_DIR, OPLOG_DONE_DIR)
               if os.path.lexists(db_path.parent / name)]
    if not had_wal and not op_logs:
        return []
    folded = recovery.recover(db_path, remove_unused_log=True)
    for op_log in op_logs:
        if not os.path.lexists(op_log):
            click.echo(f"repaired: {db_path} holds every op of the op log {op_log.name}/, which is deleted", err=err)
    if not had_wal or any(os.path.lexists(op_log) for op_log in op_logs):
        return []  # a WAL is folded only after its op log is finished: check names the log and why it stays
    if folded:
        click.echo(f"repaired: folded {log.name} into {db_path}, which now stands alone", err=err)
        return []
    return [f"{log}: could not be folded into {db_path.name} (a capture is writing the report, a reader holds it, or "
            f"the folder cannot be written: a full disk?); copy the folder whole, never {db_path.name} alone"]


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--name", help="Report name under generated/ttreport/reports, or a path; default: SCRIPT-<time>.")
@click.option("--overwrite", is_flag=True, help="Replace the report of that name if there is one (only a report "
              "that ttreport made; files of yours beside it stay).")
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(name, overwrite, script, args):
    """Run an existing TT-NN SCRIPT under capture, with `import ttnn` resolving to device_sim.

    Options go before SCRIPT; everything after it is passed to the script as sys.argv[1:]. With
    TTNN_CONFIG_OVERRIDES' enable_logging on, the run goes into the report that starts (TT-NN's
    root_report_path and report_name), and --name is refused.

    Example: ttreport run --name my-run model.py --batch 2
    """
    import device_sim
    from device_sim import config as ttnn_config
    from ttreport.capturing.session import Capture  # torch and device_sim: only a capture imports them

    device_sim.install_as_ttnn()
    # TTNN_CONFIG_OVERRIDES' enable_logging started a capture as ttnn was installed (TT-NN's own switch, into
    # root_report_path): the script runs in that one, as it would under TT-NN; captures cannot nest.
    logging = ttnn_config.active_reporter()
    if logging is not None and (name or overwrite):
        raise Failure(f"TTNN_CONFIG_OVERRIDES' enable_logging already captures this run into {logging.path}; leave "
                      f"out --name/--overwrite (report_name and root_report_path name it), or turn logging off")
    argv, path0 = sys.argv, sys.path[0]
    sys.argv, sys.path[0] = [str(script), *args], str(script.resolve().parent)
    # A name makes <root>/<name>; a path is used as it is; no name makes <script>-<time>.
    target = (Path(name) if os.sep in name or "/" in name else name) if name else None
    handle, status = None, 0
    try:
        opened = contextlib.nullcontext(logging) if logging is not None else \
            Capture(target, config=Config(overwrite=True) if overwrite else None, base_name=script.stem)
        with opened as handle, \
                terminal.progress(f"running {script.name}", count=lambda: handle.log_bytes_written() // 1024,
                                  unit="KiB of records written"):
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            click.echo(e.code, err=True)  # sys.exit("usage: ..."): Python prints the message, so does a run
    except KeyboardInterrupt:
        interrupted(handle.path if handle is not None else None)
    except Exception as e:
        if handle is None and isinstance(e, TTReportError):
            raise  # the capture never started (a bad TTREPORT_CONFIG, an existing report): one line, exit 2
        # The script's own error: show its traceback from the script's first frame, not ttreport's.
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != str(script):
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb or e.__traceback__)
        status = 1
    finally:
        sys.argv, sys.path[0] = argv, path0
    if handle is not None:
        click.echo(f"report: {handle.path}", err=status != 0)
        click.echo(f"next:   ttreport summary {handle.path}", err=status != 0)
    sys.exit(status)


@main.command()
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder to write the report under (default: generated/ttreport/reports).")
def demo(root):
    """Run a small transformer model under capture; print its summary and one SQL query's answer.

    Example: ttreport demo
    """
    from ttreport import demo as demo_module  # the demo's model: torch and device_sim (~1.2 s), here only

    try:
        _demo(demo_module, root)
    except KeyboardInterrupt:
        interrupted(demo_module.report_path(root))


def _demo(demo_module, root: Path | None) -> None:
    """Capture the demo (`demo_module`: ttreport.demo, imported by the command), then show its summary, one query's
    answer, what to try next, and its trace and HTML page."""
    # The last run's pictures stop matching once its report is replaced: they go first, so that a run stopped
    # midway (Ctrl-C: the report says "interrupted") never leaves them beside a report they do not show.
    for stale in demo_module.export_paths(demo_module.report_path(root)):
        stale.unlink(missing_ok=True)
    path = demo_module.capture_demo("demo", root=root)
    with Report(path) as report:
        summary = report.summary()
        click.echo(format_summary(summary, path, table=terminal.table_text, device=device_time.total(report),
                                  device_by_name=device_time.by_name(report),
                                  slowest=device_time.slowest(report, 3),
                                  constants=device_time.constants_file(report)))  # rich on a terminal, else plain
        cur = report.execute(demo_module.DEMO_QUERY)
        click.echo("\nWhich ops put their output in L1, and which rule chose L1?\n")
        click.echo(demo_module.DEMO_QUERY + "\n")
        click.echo(terminal.table_text([d[0] for d in cur.description], cur.fetchall()))
        # The first layer norm's output, in DRAM by default: in L1 it shortens the linear that reads it. (LoFi, the
        # hint before, changed nothing: the demo's bfloat16 matmuls wait on the unpacker, not on the math.)
        norm_out = report.sql("SELECT x.tensor_id FROM output_tensors x JOIN operations o USING (operation_id) "
                              "WHERE o.name = 'ttnn.layer_norm' ORDER BY o.operation_id LIMIT 1")[0]["tensor_id"]
    refused = summary.errors[0].operation_id if summary.errors else 1
    cli = demo_module.cli_name()
    click.echo(f"\nreport: {path}")
    click.echo(f"next:   {cli} ops {path} --sort device --limit 10   # the slowest ops on the device (estimated)")
    click.echo(f"        {cli} op {path} {refused}   # everything about the op strict mode refused")
    click.echo("        docs/queries.md   # more questions answered in SQL, for `ttreport query`")
    click.echo(f"        {cli} whatif {path} --tensor {norm_out} --memory L1   # the first layer norm's output in L1: "
               f"device time re-estimated (docs/perf_model.md)")
    # The pictures of the run (ttreport trace / ttreport html), next to the report folder.
    trace, page = demo_module.export_paths(path)
    with Report(path) as report:
        trace = report.export_chrome_trace(trace)
        page = report.export_html(page)
    click.echo(f"\ntrace:  {trace}   # drag onto https://ui.perfetto.dev or chrome://tracing")
    click.echo(f"html:   {page.resolve().as_uri()}   # open in a browser; needs no network")


def interrupted(path: Path | None):
    """A Ctrl-C during a capture (demo, run): one line saying where the report of the ops so far is, instead of
    click's bare "Aborted!"; exit 130, as a shell reports a command that SIGINT ended (128 + 2)."""
    if path is not None and (Path(path) / "db.sqlite").exists():
        click.echo(f"interrupted: {path} holds the ops recorded so far (`ttreport summary {path}`)", err=True)
    else:
        click.echo("interrupted before the capture started: no report was made", err=True)
    sys.exit(130)


@main.command("merge")
@click.argument("reports", nargs=-1, required=True)
@click.option("-o", "--output", "out", type=click.Path(file_okay=False), required=True,
              help="The new report to write (must not exist), named as a capture is: a plain name is made under "
                   "Config.root (generated/ttreport/reports unless TTREPORT_CONFIG's \"root\" says), a path "
                   "(absolute, or holding a separator: ./run, out/run) is used as given.")
@click.option("--rank", "ranks", multiple=True, metavar="REPORT=N",
              help="Merge REPORT as rank N, whatever rank its rows hold (a rank killed before its capture "
                   "closed keeps rank 0). Repeatable.")
def merge_command(reports, out, ranks):
    """Join the reports of a multi-host run's ranks (one per rank) into one report of the run: ids made
    unique, each row keeping its rank, tensor files copied.

    Example: ttreport merge reports/rank0 reports/rank1 -o reports/run --rank reports/rank1=1
    """
    from ttreport.read.merge import merge  # SQLAlchemy (schema): only merge imports it

    # -o names the report as capture("run") or capture("out/run") does, so `merge r0 r1 -o run` lands beside
    # r0 and r1 under the root, where `ttreport ls` and every command's REPORT-by-name find it.
    if out in ("", ".", ".."):
        raise click.BadParameter(f"{out!r} is not a report name; give a new name (run) or a path (./run)",
                                 param_hint="-o")
    plain = not (os.path.isabs(out) or os.sep in out or "/" in out)
    out = Config.from_env().root / out if plain else Path(out)
    if not plain:  # the root of a plain name is ttreport's own, made as a capture makes it
        _output_folder(out.parent, out)

    given = {}
    for item in ranks:
        report, sep, rank = item.rpartition("=")
        if not sep or not report or not rank.strip().isdigit():
            raise click.BadParameter(f"{item!r} is not REPORT=N (a report folder and a rank >= 0, e.g. "
                                     f"reports/rank1=1)", param_hint="--rank")
        given[resolve(report)] = int(rank)
    # each REPORT as every command reads one: a folder, its db.sqlite or a name under the default root
    path = merge([resolve(r) for r in reports], out, ranks=given)
    click.echo(f"merged {len(reports)} reports into {path.parent}")


@main.command("import")
@click.argument("report_json", metavar="REPORT.json", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path))
@click.option("--overwrite", is_flag=True, help="Replace DEST if it holds a ttreport report (anything else is "
                                                "never replaced).")
def import_command(report_json, dest, overwrite):
    """Make a report folder DEST from a TT-NN graph capture: the JSON ttnn.graph.end_graph_capture_to_file wrote
    (and its .python_io.json beside it), with the operations, tensors, buffers, errors and devices TT-NN's
    graph_report.py imports. Every command (summary, ops, html, compare) and ttnn-visualizer read it.

    Example: ttreport import report.json generated/ttreport/reports/imported
    """
    _output_folder(dest.parent, dest)
    path = import_graph_report(report_json, dest, overwrite=overwrite)
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
        n_ops, n_tensors = (con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("operations", "tensors"))
    click.echo(f"imported {n_ops} operations and {n_tensors} tensors from {report_json} into {dest}")


# -- exports (ttreport.export) ------------------------------------------------------------------

@main.command()
@click.argument("report")
@click.argument("ops_perf_csv", metavar="OPS_PERF_RESULTS.csv", type=click.Path(dir_okay=False, path_type=Path))
@_json_flag
def attach(report, ops_perf_csv, as_json):
    """Attach a real hardware run's device times (TT-NN's ops_perf_results.csv) to REPORT, op by op.

    The file's device operations are paired in order with the report's (by OP CODE where the names agree);
    summary, compare --timing (--measured) and html then show measured beside modelled. Attaching again
    replaces what was attached; a file that fails its checks changes nothing.

    Example: ttreport attach generated/ttreport/reports/demo ops_perf_results.csv
    """
    click.get_current_context().meta["ttreport.report"] = report
    done = attach_report(report, ops_perf_csv)
    if as_json:
        _echo_json({"report": str(done.report), "source": str(done.source), "rows": done.rows,
                    "device_operations": done.device_ops, "matched": done.matched, "by_name": done.by_name,
                    "first_mismatch": done.first_mismatch})
        return
    click.echo(one_line(done.line()))


@main.command()
@click.argument("sources", metavar="CSV_OR_REPORT...", nargs=-1, required=True)
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The constants file to write (JSON); DEVICE_SIM_PERF_CONSTANTS=FILE makes the model use it.")
@_json_flag
def calibrate(sources, out, as_json):
    """Fit the performance model's named constants to real profiler runs: TT-NN ops_perf_results.csv files, or
    reports with one attached (`ttreport attach`).

    Fits the launch cost, page latencies, DRAM and NoC rates and per-tile compute cycles on two thirds of the
    measured cases, and prints the median estimate / measured and the share within 2x and 4x on the held-out
    third, before and after. Runs with DEVICE_SIM_PERF_CONSTANTS=FILE in the environment estimate with them.

    Example: ttreport calibrate ops_perf_results.csv -o constants.json
    """
    from ttreport.calibrate import calibrate as fit  # device_sim's performance model: only calibrate imports it

    _output_file(out)
    c = fit(sources)
    outfile.write_text(out, c.to_json())
    if as_json:
        click.echo(c.to_json(), nl=False)
        return
    click.echo(f"cases: {c.cases:,} ({c.fit_after.cases:,} fitted, {c.held_out_after.cases:,} held out) from "
               f"{_plural(len(sources), 'source')}; {c.left_out:,} device operations the model is not fitted on "
               "left out")
    click.echo(f"held out: {c.held_out_before.text()} -> {c.held_out_after.text()}")
    click.echo(f"fitted:   {c.fit_before.text()} -> {c.fit_after.text()}")
    terminal.echo_table(["family", "cases", "median before", "in 2x before", "median after", "in 2x after"],
                        [(f, b.cases, f"{b.median:.2f}x", f"{100 * b.within_2x:.0f}%", f"{a.median:.2f}x",
                          f"{100 * a.within_2x:.0f}%") for f, (b, a) in c.families.items() if b.cases and a.cases])
    moved = [f"{n} {c.before[n]} -> {v}" for n, v in c.constants.items()]
    click.echo(f"constants: {', '.join(moved) if moved else 'none moved (the data asks for no change)'}")
    click.echo(f"wrote {out} (DEVICE_SIM_PERF_CONSTANTS={out} makes the model use it)")


@main.command()
@click.argument("report")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The trace file to write: .json, or .json.gz compressed.")
def trace(report, out):
    """Write the run as a Chrome trace-event / Perfetto JSON file: ops as nested slices per thread,
    L1 and DRAM in use per device as counter tracks, arrows from each tensor's producer to its readers.

    Example: ttreport trace generated/ttreport/reports/demo -o demo.json
    """
    _output_file(out)
    with _open(report) as r, terminal.progress("writing the trace"):
        path = r.export_chrome_trace(out)
    click.echo(f"trace: {path}")
    click.echo("open:  drag it onto https://ui.perfetto.dev or chrome://tracing (both read it in the browser)")


@main.command()
@click.argument("report")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The .html file to write.")
@click.option("--limit", type=click.IntRange(min=0), default=HTML_MAX_OPS, show_default=True,
              help="At most this many ops in the op table, in call order (0: all, up to 128 MiB of rows); the "
                   f"timeline draws at most {HTML_MAX_OPS:,}.")
@click.option("--top-level", is_flag=True, help="Only the ops the model called directly (depth 0) in the timeline "
              "and the op table.")
@click.option("--against", help="Another report of the same model: B is REPORT, A this one; draws the PCC "
              "of each op against it and marks the first divergence (both need stored tensors).")
def html(report, out, limit, top_level, against):
    """Write the run as one self-contained HTML file (opens offline): summary, timeline, L1 and DRAM
    per device with the peaks, time by op name, slowest ops, golden PCC, a searchable op table.

    Example: ttreport html generated/ttreport/reports/demo -o demo.html
    """
    _output_file(out)
    comparison = None
    if against is not None:
        from ttreport.read.compare import compare_reports  # torch (metrics): only the comparing commands import it

        comparison = compare_reports(against, report, progress=True)
    with _open(report) as r, terminal.progress("writing the page"):
        path = r.export_html(out, limit=limit or None, top_level=top_level, comparison=comparison)
    click.echo(f"html: {path}")
    click.echo(f"open: {path.resolve().as_uri()} in a browser (no network needed)")


# -- comparison (ttreport.read.compare, ttreport.metrics) --------------------------------------------

def _tolerance_options(f):
    f = click.option("--pcc", type=float, help="Desired PCC (default 0.9999).")(f)
    f = click.option("--atol", type=float, help="Absolute tolerance (default: by dtype).")(f)
    return click.option("--rtol", type=float, help="Relative tolerance (default: by dtype).")(f)


@main.command()
@click.argument("a")
@click.argument("b")
@_tolerance_options
@click.option("--ops", "pattern", help="Compare only ops named so: a glob (*matmul*), a name or its last part.")
@click.option("--json", "json_file", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              is_flag=False, flag_value="-", help="Also write every figure to this JSON file; --json alone (last, "
              "or --json=-) prints only the JSON on stdout, as every reading command's --json does.")
@click.option("--csv", "csv_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write one row per aligned op (status, rank, differing devices, figures) to this CSV file.")
@click.option("--strict", is_flag=True, help="Ops present in only one report fail the comparison too.")
@click.option("--all-depths", is_flag=True, help="Align nested ops too, not only the ones the model called.")
@click.option("--timing", is_flag=True, help="Instead of values: each aligned op's device time (the performance "
              "model's estimate) and L1/DRAM after it in A and B side by side, biggest slowdown first (needs no "
              "stored tensors).")
@click.option("--host-time", is_flag=True, help="With --timing: compare the emulator's host time instead of device "
              "time (it moves with first-call warm-up and the machine's load).")
@click.option("--measured", is_flag=True, help="With --timing: compare the device time a real hardware run measured "
              "(attached to both reports with `ttreport attach`) instead of the estimate.")
@click.option("--limit", type=click.IntRange(min=0), default=50, show_default=True,
              help="With --timing: at most this many ops "
              "(0: all).")
def compare(a, b, rtol, atol, pcc, pattern, json_file, csv_file, strict, all_depths, timing, host_time, measured,
            limit):
    """Compare report B with report A op by op and name the first op that diverged.

    Exits 0 when every aligned op matches, 1 when one does not (or, with --strict, when an op
    has no partner), 2 on bad input. Both runs need stored tensors: Config(tensors="all") (inputs
    made before the capture too, so a root cause is told from its effects; tensors="outputs" is
    the least that works).

    With --timing it compares each aligned op's estimated device time (--host-time: the emulator's
    host time; --measured: a real run's, attached with `ttreport attach`) and the memory after it instead, and
    exits 0. Where a report has measured times attached, they show beside the estimates.

    Example: ttreport compare generated/ttreport/reports/run-a generated/ttreport/reports/run-b --json diff.json
    """
    # before the work: a missing folder fails at once, not after minutes of comparing
    _output_file(json_file)
    _output_file(csv_file)
    if pattern:  # a pattern that matches no op in either report is a typo, not an empty comparison
        with _open(a) as ra, _open(b) as rb:
            if not ra.count_operations(pattern) and not rb.count_operations(pattern):
                _no_op_named(ra, pattern, "--ops")
    if timing:
        if host_time and measured:
            raise Failure("give --host-time or --measured, not both")
        _compare_timing(a, b, pattern, json_file, all_depths, limit,
                        "host" if host_time else "measured" if measured else "device")
        return
    from ttreport.read.compare import compare_reports  # torch (metrics): only the comparing commands import it

    result = compare_reports(a, b, rtol=rtol, atol=atol, pcc=pcc, ops=pattern, strict=strict,
                             progress=sys.stderr.isatty(), top_level=not all_depths)
    if str(json_file) == "-":
        click.echo(result.to_json())
        sys.exit(result.exit_code)
    click.echo(result.to_table(table=terminal.table_text))
    if json_file is not None:
        outfile.write_text(json_file, result.to_json() + "\n")
        click.echo(f"json: {json_file}")
    if csv_file is not None:
        outfile.write_text(csv_file, result.to_csv())
        click.echo(f"csv: {csv_file}")
    sys.exit(result.exit_code)


def _compare_timing(a, b, pattern, json_file, all_depths, limit, clock) -> None:
    from ttreport.read.timing import compare_timing  # torch (metrics): only the comparing commands import it

    t = compare_timing(a, b, ops=pattern, top_level=not all_depths, clock=clock)
    if clock == "measured":  # else a table of blank times: nothing attached, or no aligned op measured
        for path, side in ((t.a, "a"), (t.b, "b")):
            if t.totals[side]["measured_ns"] is None:
                raise Failure(one_line(f"{path} has no measured device time for any aligned op: `ttreport attach "
                                       f"{path} ops_perf_results.csv` first, or leave out --measured"))
    if str(json_file) == "-":
        click.echo(t.to_json())
        return
    click.echo(f"A: {terminal.printable(str(t.a))}\nB: {terminal.printable(str(t.b))}")  # as read.compare's
    if t.unrelated:
        click.echo(f"warning: {t.unrelated}")  # before the table, as compare's value table says it
    if t.constants:
        click.echo(f"warning: {terminal.cell(t.constants)}")  # the paths are the reports' text
    if t.steps and any(len(t.steps[side]["steps"]) > 1 or t.steps[side]["steps"] != [0] for side in "ab"):
        said = {side: f"{_plural(len(v['steps']), 'active step')}" + (
            f" (averaged over {v['averaged_over']})" if "averaged_over" in v else "") for side, v in t.steps.items()}
        click.echo(f"steps: A {said['a']}, B {said['b']}" + (
            "; per-step averages compared (one step's ops aligned)" if t.per_step else ""))
    shown = t.rows[:limit] if limit else t.rows

    def ns(x) -> str:
        return "" if x is None else device_time.human_ns(round(x))

    def change(r) -> str:
        if r.delta_ns is None:
            return ""
        return f"{'+' if r.delta_ns >= 0 else '-'}{ns(abs(r.delta_ns))}" + (
            f" ({r.ratio:.2f}x)" if r.ratio is not None else "")

    def both(a, b) -> str:  # one figure when the runs agree, "A / B" when they do not: fewer columns to read
        return human_bytes(a) if a == b else f"{human_bytes(a) or '?'} / {human_bytes(b) or '?'}"

    what = {"device": "device (est.)", "host": "host", "measured": "measured"}[clock]
    # a real run's times beside the estimates, where one is attached (`ttreport attach`): estimate / measured
    beside = clock == "device" and any(r.a_measured_ns is not None or r.b_measured_ns is not None for r in t.rows)
    extra = ["A measured", "B measured", "est. / meas. (A / B)"] if beside else []

    def vs(r) -> list:
        def ratio(est, meas) -> str:
            return f"{est / meas:.2f}x" if est is not None and meas else "?"
        if not beside:
            return []
        if r.a_measured_ns is None and r.b_measured_ns is None:
            return ["", "", ""]  # an op the real run did not measure (a host transfer)
        return [ns(r.a_measured_ns), ns(r.b_measured_ns),
                f"{ratio(r.a_device_ns, r.a_measured_ns)} / {ratio(r.b_device_ns, r.b_measured_ns)}"]

    terminal.echo_table(
        ["A op", "B op", "name", f"A {what}", f"B {what}", "B - A", *extra, "L1 after (A / B)", "DRAM after (A / B)"],
        ((r.a_id, r.b_id, r.name, ns(r.a_ns), ns(r.b_ns), change(r), *vs(r),
          both(r.a_l1_bytes, r.b_l1_bytes), both(r.a_dram_bytes, r.b_dram_bytes)) for r in shown))
    if len(shown) < len(t.rows):
        click.echo(f"... {len(t.rows) - len(shown):,} more aligned ops not shown (--limit 0 shows all)")
    for side, only in (("A", t.only_a), ("B", t.only_b)):
        if only:
            listed = ", ".join(f"{i} {n}" for i, n in only[:20]) + (" ..." if len(only) > 20 else "")
            click.echo(f"{len(only)} op(s) only in {side}, unaligned: {listed}")
    ta, tb = t.totals["a"], t.totals["b"]
    for side, x in (("A", ta), ("B", tb)):
        if x["measured_ns"] is not None:
            click.echo(f"{side}: measured {ns(x['measured_ns'])} on real hardware in its aligned ops with a measured "
                       f"time; the model says {ns(x['modelled_measured_ns'])} for them")
    click.echo(f"{len(t.rows)} aligned ops: device (estimated) A {ns(ta['device_ns'])}, B {ns(tb['device_ns'])}; "
               f"emulator host time A {human_seconds(ta['host_s'])}, B {human_seconds(tb['host_s'])}; "
               f"peak L1 A {human_bytes(ta['peak_l1_bytes']) or '?'}, B {human_bytes(tb['peak_l1_bytes']) or '?'}; "
               f"peak DRAM A {human_bytes(ta['peak_dram_bytes']) or '?'}, "
               f"B {human_bytes(tb['peak_dram_bytes']) or '?'}")
    if json_file is not None:
        outfile.write_text(json_file, t.to_json() + "\n")
        click.echo(f"json: {json_file}")


def _load_tensor_file(path: Path):
    if path.suffix not in (".pt", ".bin"):
        raise Failure(f"{path} is neither a .pt nor a .bin tensor file")
    from ttreport import storage  # numpy (device_sim and torch for a .bin): only the commands that load tensors pay

    # Bounded as a report's own files are (a link out of the report's tensors folder, a zip bomb, more elements
    # than TTREPORT_MAX_TENSOR_ELEMENTS: one line); a .bin keeps its device dtype (bfloat8_b, ...) for the tolerances.
    # A .pt is read into numpy, as compare reads it: no torch import (~2-7 s here).
    return storage.read_tensor_file(path, storage.named_tensors_folder(path), as_array=True)


@main.command(name="diff-tensor")
@click.argument("a", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("b", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_tolerance_options
@click.option("--json", "as_json", is_flag=True, help="Print every figure as JSON.")
def diff_tensor(a, b, rtol, atol, pcc, as_json):
    """Compare two stored tensor files (.pt or .bin): B against A, the reference.

    Exits 0 when they match within tolerance, 1 when they do not, 2 on bad input. A file is read as a
    received report's are: never through a link out of its folder (its report's tensors/), nothing
    unpickled, at most TTREPORT_MAX_TENSOR_ELEMENTS elements (default 1 Gi; set it to load more).

    Example: ttreport diff-tensor run-a/tensors/12.pt run-b/tensors/12.pt
    """
    from ttreport.metrics import compare_tensors  # numpy: only the comparing commands import it

    c = compare_tensors(_load_tensor_file(b), _load_tensor_file(a), rtol=rtol, atol=atol, pcc=pcc)
    if as_json:
        click.echo(json.dumps(json_safe(c.to_dict()), indent=2))
    else:
        worst = f"{c.worst_index}: {c.worst_actual} vs {c.worst_golden}" if c.worst_index is not None else ""
        rows = [("status", c.status), ("reason", c.reason), ("PCC", c.pcc), ("max abs error", c.max_abs_error),
                ("mean abs error", c.mean_abs_error), ("max rel error", c.max_rel_error),
                ("max ULP", c.max_ulp), ("mismatched", c.mismatched_text), ("worst (B vs A)", worst),
                ("shapes", f"{list(c.shapes[0])} vs {list(c.shapes[1])}"),
                ("dtypes", f"{c.dtypes[0]} vs {c.dtypes[1]}"), ("rtol, atol", f"{c.rtol:.3g}, {c.atol:.3g}")]
        click.echo("\n".join(f"{k:<15} {'' if v is None else v}" for k, v in rows))
    sys.exit(0 if c.passed else 1)


@main.command()
@click.argument("report")
@click.option("--tensor", "tensor_id", type=int, help="The tensor to change (ids: `ttreport ops REPORT`).")
@click.option("--memory", type=click.Choice(["L1", "DRAM"], case_sensitive=False), help="Put it in this memory.")
@click.option("--dtype", type=click.Choice(["bfloat16", "bfloat8_b", "bfloat4_b", "float32"], case_sensitive=False),
              help="Give it this dtype.")
@click.option("--math-fidelity", type=click.Choice(["LoFi", "HiFi2", "HiFi3", "HiFi4"]),
              help="Run the matmuls (those reading --tensor, if given) at this fidelity.")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True,
              help="At most this many changed ops (0: all).")
@_json_flag
def whatif(report, tensor_id, memory, dtype, math_fidelity, limit, as_json):
    """Re-estimate device time (and peak L1) with one change, without rerunning the model.

    Each op's estimated device time (docs/perf_model.md) is worked out again from its tensors with the
    change; the ops whose estimate moves are listed, then the totals.

    Example: ttreport whatif generated/ttreport/reports/demo --tensor 45 --memory L1
    """
    from ttreport.read import whatif as whatif_module  # reads device_sim's model: loaded only for this command

    with _open(report) as r:
        w = whatif_module.whatif(r, tensor_id=tensor_id, memory=memory, dtype=dtype, math_fidelity=math_fidelity)
    if as_json:  # every changed op: --limit shortens the table only
        _echo_json(w)
        return
    ns = device_time.human_ns
    rows = [(c.operation_id, c.name, ns(c.before_ns), ns(c.after_ns), f"{c.after_ns - c.before_ns:+,d} ns",
             c.bound_after) for c in (w.changed[:limit] if limit else w.changed)]
    if rows:
        terminal.echo_table(["id", "name", "device before", "after", "change", "bound after"], rows)
    else:
        click.echo("no op's estimate changes")
    if limit and len(w.changed) > limit:
        click.echo(f"({limit} of {len(w.changed)} changed ops; --limit 0 shows all)")
    if w.skipped:
        first, why = w.skipped[0]
        click.echo(f"({len(w.skipped)} op(s) skipped, left as stored: their rows hold a value the model cannot read, "
                   f"e.g. op {first}: {_cell(why, 300)}; `ttreport check {report}` lists the damage)")
    pct = f" ({(w.after_ns - w.before_ns) / w.before_ns:+.1%})" if w.before_ns else ""
    click.echo(f"device time (top-level ops)  {ns(w.before_ns)} -> {ns(w.after_ns)}{pct}")
    if w.peak_l1_before is not None:
        click.echo(f"peak L1 (all banks)          {human_bytes(w.peak_l1_before)} -> {human_bytes(w.peak_l1_after)} "
                   f"({w.peak_l1_after - w.peak_l1_before:+,d} B)")


@main.command(name="perf-csv")
@click.argument("report")
@click.argument("folder", required=False)
def perf_csv(report, folder):
    """Write TT-NN's performance report files (ops_perf_results.csv, profile_log_device.csv) from the estimates.

    Into the report's folder unless FOLDER (a folder that exists) is given; ttnn-visualizer's Performance tab
    reads them.
    Each op's PM IDEAL/COMPUTE/BANDWIDTH [ns] are the performance model's (docs/perf_model.md).

    Example: ttreport perf-csv generated/ttreport/reports/demo
    """
    if folder is not None:
        _output_folder(Path(folder), Path(folder) / "ops_perf_results.csv")
    with _open(report) as r:
        path = export_ops_perf(r, folder or r.path)
    click.echo(f"wrote {path} and {path.with_name('profile_log_device.csv').name} beside it")


def _store_commands() -> None:
    """push, runs, history: the store's commands (ttreport.store.cli; psycopg is imported only when one runs)."""
    store = (store_cli.push, store_cli.runs, store_cli.history, store_cli.query_store)
    for command in store:
        main.add_command(command)
    # Every other command that reads a report reads a store's run too: a store URL for REPORT, with --run NAME.
    # attach and upgrade write into their report: a run's folder is pull.py's cache of rows that never change once
    # pushed (rebuilt from the store when evicted, at this version's schema), so what they wrote there would reach
    # neither the store nor a later read. check reads a run; its --repair has nothing to do there (its help says so).
    for command in main.commands.values():
        reads = any(p.name in REPORT_PARAMS and p.type is click.STRING for p in command.params)
        if reads and command not in (*store, attach, upgrade):
            store_cli.takes_runs(command, whole_store=store_cli.query_store if command is query else None)


_store_commands()


if __name__ == "__main__":  # python -m ttreport.cli
    main()
