"""A report as one self-contained HTML file: open it in any browser, with no network.

    with ttreport.open("generated/ttreport/reports/demo") as r:
        r.export_html("demo.html")

Sections: the summary (device time estimated by the performance model, host transfers apart; both figures of
each memory peak, named as ttreport.export.memory names them for every view); a timeline of every op on the
host (nested ops on rows below their callers) and each chip's device timeline (the model's estimates back to
back); L1 and DRAM in buffers over the run per device with each peak marked; device and host time by op name;
the slowest ops on the device; measured beside modelled, where a real run's times are attached (`ttreport attach`:
per op name, and the ops the model is furthest from); golden PCC
per op with the first divergence marked (golden-mode captures, or a report-vs-report comparison
given as `comparison=`); a searchable op table whose rows link each op to its tensors, stack trace
and error; the tensor table, each tensor linked to the op that made it and the ops that read it.

Charts are plotly's (its plotly.min.js is embedded, ~4.8 MB, so the file opens offline); the
tables are plain HTML written as the rows stream from SQL. Clicking a bar or point jumps to its op.

The page stays one a browser opens, however large or strange the report (a 1,000,000-op report once
made a 3.6 GB page): the first MAX_OPS ops by default, each series at most MAX_POINTS points, each value
at most VALUE_CHARS characters, each op's arguments and tensors at most MAX_LISTED, and the op and
tensor tables end at TABLE_CHARS; the page says what it left out and which command shows it.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

from ttreport import memory_text, outfile
from ttreport.errors import ReportError
from ttreport.export import memory
from ttreport.export.golden import first_divergence, golden_checks
from ttreport.memory_text import BUFFER_TYPES
from ttreport.read import device_time, measured
from ttreport.read.terminal import json_safe

SUFFIXES = (".html", ".htm")
SLOWEST = 20  # rows in the slowest-ops table
# Ops in the timeline and the op table unless `limit` says otherwise: the demo's ops take ~2.5 KB of page
# each, so ~25 MB, which Chromium opens in a few seconds. The timeline never draws more bars than this.
MAX_OPS = 10_000
MAX_POINTS = 10_000  # points of one memory or PCC series: a run's longer series keeps each stretch's extreme
VALUE_CHARS = 2_000  # characters of one value (a name, an argument, a stack trace); the demo's longest is 626
MAX_LISTED = 64  # arguments, and input or output tensors, listed for one op
MAX_ERRORS = 100  # errors listed in the summary
MAX_READERS = 64  # ops listed as reading one tensor
# Characters of the op table, and of the tensor table: past it the table ends with a note. A page past a few
# hundred MB does not open in Chromium; this keeps a --limit 0 export of a large report under ~200 MB.
TABLE_CHARS = 128 * 1024 * 1024
NAMES_IN_LEGEND = 19  # the timeline colours the op names with the most self time; the rest are "other"
# 20 distinguishable colours (d3's category20 reordered: strong hues first), one per name and "other" (grey).
_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf",
            "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5",
            "#393b79", "#7f7f7f"]

_CSS = """
body { font: 14px system-ui, sans-serif; margin: 0 2em 3em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 12px; } td, th { padding: 2px 8px; border-bottom: 1px solid #eee;
text-align: left; vertical-align: top; } th { background: #f4f4f4; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } tr.error td { background: #fde8e8; }
tr.fail td { background: #fff3d6; } tr:target td { outline: 2px solid #2a6df4; } pre { margin: 0;
white-space: pre-wrap; font-size: 11px; } .chart { width: 100%; height: 380px; } dl { display: grid;
grid-template-columns: max-content auto; gap: 2px 1em; } dt { font-weight: 600; }
dd { margin: 0; overflow-wrap: anywhere; } #search { width: 30em;
padding: 4px; } .note { color: #666; } nav a { margin-right: 1em; }
"""

_JS = """
function plot(id) {
  const spec = JSON.parse(document.getElementById(id + '-data').textContent);
  const el = document.getElementById(id);
  Plotly.newPlot(el, spec.data, spec.layout, {displaylogo: false, responsive: true});
  el.on('plotly_click', e => {
    const p = e.points[0];
    if (p && p.customdata != null) location.hash = 'op-' + p.customdata;
  });
}
document.querySelectorAll('.chart').forEach(el => plot(el.id));
// The rows the page holds: fewer than the header's count when the op table reached TABLE_CHARS.
const listed = document.querySelectorAll('#ops tbody tr').length;
document.getElementById('shown').textContent = document.getElementById('listed').textContent = listed;
const search = document.getElementById('search');
search.addEventListener('input', () => {
  const words = search.value.toLowerCase().split(/\\s+/).filter(w => w);
  let shown = 0;
  document.querySelectorAll('#ops tbody tr').forEach(tr => {
    const text = tr.dataset.search;
    const ok = words.every(w => text.includes(w));
    tr.hidden = !ok; shown += ok;
  });
  document.getElementById('shown').textContent = shown;
});
// ?q=words opens the page with the op table filtered (a link can share a search).
const q = new URLSearchParams(location.search).get('q');
if (q) { search.value = q; search.dispatchEvent(new Event('input')); }
"""


def export_html(report, path, *, limit: int | None = MAX_OPS, top_level: bool = False, comparison=None) -> Path:
    """Write `report` (an open Report) as a self-contained HTML file at `path` (.html); return the path.

    Args:
        limit: at most this many ops (in call order) in the op table (the timeline draws at most MAX_OPS of
            them); None for all, up to TABLE_CHARS of rows.
        top_level: only the ops the model called directly (depth 0) in the timeline and the op table.
        comparison: a ttreport.read.compare.ReportComparison whose B is this report: its PCC per op and
            its root cause are drawn beside the golden checks.
    """
    from plotly.offline import get_plotlyjs  # only the html export needs plotly

    path = Path(path)
    if not path.name.endswith(SUFFIXES):
        raise ReportError(f"an HTML report is written as .html, not {path.name!r}; "
                          f"name the file e.g. {path.with_suffix('.html').name}")
    if limit is not None and limit < 1:
        raise ReportError(f"limit must be at least 1 (or None for every op), not {limit!r}")
    summary = report.summary()
    checks = golden_checks(report)
    device = device_time.of_ops(report)  # op id -> estimated ns (none in a TT-NN report)
    vs_measured = measured.summary(report, worst=SLOWEST)  # a real run's times, where one is attached
    e = html.escape
    with outfile.open(path, "w") as f:  # a link at `path` is replaced, never written through
        w = f.write
        w(f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>ttreport: {e(report.path.name)}"
          f"</title><style>{_CSS}</style>\n<script>{get_plotlyjs()}</script></head><body>\n")
        w(f"<h1>ttreport: {e(report.path.name)}</h1><nav>" + "".join(
            f"<a href='#{a}'>{t}</a>" for a, t in (("summary", "summary"), ("timeline", "timeline"),
                                                   ("memory", "memory"), ("by-name", "time by op name"),
                                                   ("slowest", "slowest ops"),
                                                   *((("measured", "measured"),) if vs_measured else ()),
                                                   ("pcc", "PCC"), ("ops", "ops"), ("tensors", "tensors"))
        ) + "</nav>\n")
        _summary(w, report, summary, device_time.total(report))
        bars = MAX_OPS if limit is None else min(limit, MAX_OPS)
        w("<h2 id='timeline'>Timeline</h2><p class='note'>On the host (the emulator's own time, first calls' "
          "warm-up included): each op is a bar from its start to its end; nested ops sit on the rows below the op "
          "that called them. Click a bar for its row in the op table."
          + (f" At most the first {bars:,} ops are drawn." if bars < (limit or math.inf) else "") + "</p>")
        depth = 0 if top_level else None
        _chart(w, "timeline-chart", _timeline(report, summary, bars, depth))
        if device:
            w("<p class='note'>On the device, per chip: each top-level op's kernel time estimated by the "
              "performance model, the ops back to back from the first op's start (the model estimates kernels, "
              "not the gaps between them).</p>")
            _chart(w, "device-timeline-chart", _device_timeline(report, summary, bars))
        figure = memory.IN_BUFFERS if report.execute("SELECT 1 FROM buffer_lifetimes LIMIT 1").fetchone() \
            else memory.ALLOCATED  # a TT-NN report records no buffers: its timeline is the ops' l1_bytes
        w(f"<h2 id='memory'>Memory in use</h2><p class='note'>{_MEMORY_NOTE}The charts draw {figure} after "
          "each op, per device, with the peak of each marked. Click a point for its op.</p>")
        for kind in ("L1", "DRAM"):
            _chart(w, f"memory-{kind.lower()}", _memory(report, kind, figure))
        w("<h2 id='by-name'>Time by op name</h2><p class='note'>Device time: estimated by the performance "
          "model, over every call. Host self time: the emulator's time in an op less the ops it called.</p>")
        if device:
            _chart(w, "device-by-name-chart", _device_by_name(report))
        _chart(w, "by-name-chart", _by_name(summary))
        _slowest(w, report, device)
        if vs_measured is not None:
            _measured(w, vs_measured)
        _pcc(w, report, checks, comparison)
        top_tensor = _ops(w, report, checks, limit, depth, device, measured.of_ops(report) if vs_measured else {})
        _tensors(w, report, top_tensor)
        w(f"<script>{_JS}</script></body></html>\n")
    return path


def _chart(w, div_id: str, spec: dict) -> None:
    # json_safe: a damaged row's 1e308 s adds up to inf, which JSON (and so plotly) cannot hold
    data = json.dumps(json_safe(spec), default=str, allow_nan=False).replace("</", "<\\/")
    w(f"<div class='chart' id='{div_id}'></div><script type='application/json' id='{div_id}-data'>{data}</script>\n")


def _text(v, limit: int = VALUE_CHARS) -> str:
    """`v` as HTML text: escaped, and cut past `limit` characters with its length said."""
    text = "" if v is None else v if isinstance(v, str) else str(v)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text):,} characters; `ttreport op ID` or `ttreport query` shows all)"
    return html.escape(text)


def _listed(items: list, what: str) -> tuple[list, str]:
    """The first MAX_LISTED of an op's `items`, and a note on the rest ("" when none were left out)."""
    if len(items) <= MAX_LISTED:
        return items, ""
    return items[:MAX_LISTED], f"... {len(items) - MAX_LISTED:,} more {what} (`ttreport op ID` lists all)"


class _Thinned:
    """One chart series of at most MAX_POINTS points: of each run of `step` points in a row, the one `better`
    keeps (the highest memory, the lowest PCC), so the extremes a reader looks for survive."""

    def __init__(self, step: int, better):
        self.step, self.better = step, better
        self.x, self.y, self.customdata, self.names = [], [], [], []
        self._bucket = None

    def add(self, index: int, x, y, op_id, name=None) -> None:
        bucket = index // self.step
        if bucket != self._bucket:
            self._bucket = bucket
            self.x.append(x), self.y.append(y), self.customdata.append(op_id), self.names.append(name)
        elif self.better(y, self.y[-1]):
            self.x[-1], self.y[-1], self.customdata[-1], self.names[-1] = x, y, op_id, name


def _step(n: int) -> int:
    """Points of a series of `n` that share one drawn point, so that at most MAX_POINTS are drawn."""
    return max(1, math.ceil(n / MAX_POINTS))


def _bytes(n) -> str:
    if not isinstance(n, (int, float)):
        return "" if n is None else html.escape(str(n))
    for unit in ("B", "KiB", "MiB"):
        if abs(n) < 1024:
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _seconds(s) -> str:
    if not isinstance(s, (int, float)) or s != s:
        return ""
    return f"{s:.3f} s" if s >= 1 else f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} us"


# Both figures, in the words of ttreport.export.memory's docstring (the summary and the trace name them alike).
_MEMORY_NOTE = (f"A run's memory has two figures. <b>{memory.ALLOCATED}</b>: what the allocator holds, each "
                f"buffer rounded up to whole pages in every bank it is spread over (the ops' l1_bytes, dram_bytes); "
                f"it decides whether L1 runs out. <b>{memory.IN_BUFFERS}</b>: the sum of the live buffers' own "
                f"sizes, per device, the bytes the tensors need. The first is the larger: a one-tile buffer takes "
                f"a page in each of 64 L1 banks. ")


def _summary(w, report, s, device) -> None:
    e = html.escape
    rows = [("report", e(str(report.path))), ("status", _text(s.status_text or s.status or "unknown")),
            ("ops", f"{s.operations} ({_seconds(s.top_level_seconds)} of emulator host time in top-level ops)")]
    if device is not None:  # device_time.DeviceTotal
        rows.append(("device (estimated)", f"{device_time.human_ns(device.ideal_ns)} in top-level ops: kernels "
                     f"{device_time.human_ns(device.kernel_ns)}, host transfers "
                     f"{device_time.human_ns(device.transfer_ns) or '0 ns'} ({device.compute_bound} compute-bound, "
                     f"{device.bandwidth_bound} bandwidth-bound)"))
        if (c := device_time.constants_file(report)) is not None:  # DEVICE_SIM_PERF_CONSTANTS, as the summary says
            rows.append(("device constants", f"estimated with calibrated constants from {_text(c.path, 300)} "
                         f"(sha256 {_text(c.sha256[:12])}, {len(c.constants)} set)"))
    if s.steps:  # a run captured in steps: each step's phase and times, as `ttreport summary` lists them
        rows.append(("steps", "; ".join(
            f"{st.step} {e(st.phase)}: {_text(st.ops, 30)} ops, device {device_time.human_ns(st.device_ns) or '?'}, "
            f"host {_seconds(None if st.host_ns is None else st.host_ns / 1e9)}" for st in s.steps[:MAX_LISTED])
            + (f"; ... {len(s.steps) - MAX_LISTED:,} more (`ttreport summary` lists all)"
               if len(s.steps) > MAX_LISTED else "")))
    # Both figures of memory, named as the summary and the trace name them (ttreport.export.memory).
    for kind, figures in (("L1", ((memory.ALLOCATED, s.peak_l1), (memory.IN_BUFFERS, s.peak_l1_in_buffers))),
                          ("DRAM", ((memory.ALLOCATED, s.peak_dram), (memory.IN_BUFFERS, s.peak_dram_in_buffers)))):
        for figure, peak in figures:
            if peak is not None:
                rows.append((memory.label(kind, figure), f"{_bytes(peak['bytes'])} after <a href='#op-"
                             f"{peak['operation_id']}'>op {peak['operation_id']}</a> ({_text(peak['name'], 300)})"))
    if len(s.peak_l1_by_device) > 1:  # a mesh: each device's (one device's is the row above)
        for p in sorted(s.peak_l1_by_device, key=lambda p: p["device_id"] if isinstance(p["device_id"], int) else -1):
            rows.append((f"{memory.label('L1', memory.IN_BUFFERS)}, device {_text(p['device_id'], 30)}",
                         f"{_bytes(p['bytes'])} after <a href='#op-{p['operation_id']}'>op {p['operation_id']}</a>"))
    for c in s.comparisons:
        low = c["lowest_pcc"]
        op = _text(c["lowest_pcc_operation_id"], 30)
        at = f", lowest PCC {low:.6f} at <a href='#op-{op}'>op {op}</a>" if isinstance(low, float) else ""
        # Comparisons, not ops: one per output tensor (and device), so they can outnumber the ops.
        ops = f" on {_text(c['ops'], 30)} op{'' if c['ops'] == 1 else 's'}" if c.get("ops") is not None else ""
        rows.append((f"golden {_text(c['mode'], 100)} {_text(c['status'], 100)}",
                     f"{c['count']} comparison{'' if c['count'] == 1 else 's'}{ops}{at}"))
    rows.append(("errors", str(len(s.errors))))
    for err in s.errors[:MAX_ERRORS]:
        op = _text(err.operation_id, 30)
        where = f"<a href='#op-{op}'>op {op}</a> {_text(err.operation_name, 300)}" \
            if err.operation_id is not None else "the model raised"
        message = str(err.message).splitlines()[0][:300] if err.message else ""
        rows.append(("", f"{where}: {_text(err.error_type, 300)}" + (f": {e(message)}" if message else "")))
    if len(s.errors) > MAX_ERRORS:
        rows.append(("", f"... {len(s.errors) - MAX_ERRORS:,} more (`ttreport query REPORT \"SELECT * FROM errors\"` "
                         f"lists all)"))
    w("<h2 id='summary'>Summary</h2><dl>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>\n")


def _timeline(report, summary, limit, depth) -> dict:
    named = [r["name"] for r in summary.by_name[:NAMES_IN_LEGEND]]
    label = {n: _text(n, 100) for n in named} | {"other": "other"}  # a legend entry's text
    traces: dict = {}
    for op in report.iter_operations(sort="id", limit=limit, depth=depth):
        if not isinstance(op.start_ns, int):  # not recorded, or a damaged row's text (`ttreport check` names it)
            continue
        name = op.name if op.name in named else "other"
        t = traces.setdefault(name, {"type": "bar", "orientation": "h", "name": label[name], "base": [], "x": [],
                                     "y": [], "customdata": [], "hovertext": [], "hoverinfo": "text"})
        end = op.start_ns + (op.duration_ns or 0)  # duration_ns: end_ns - start_ns, else the duration
        t["base"].append(op.start_ns / 1e6)
        t["x"].append(max(end - op.start_ns, 1) / 1e6)
        t["y"].append(f"{_text(op.thread or 'main', 100)} depth {op.depth or 0}")
        t["customdata"].append(op.id)
        t["hovertext"].append(f"op {op.id} {_text(op.name, 300)} {_seconds((end - op.start_ns) / 1e9)}")
    return _timeline_figure(traces, named, "time (ms)")


def _device_timeline(report, summary, limit: int) -> dict:
    """Each chip's row of estimated kernels (device_time.timeline), coloured by op name as the host timeline."""
    named = [r["name"] for r in summary.by_name[:NAMES_IN_LEGEND]]
    traces: dict = {}
    for drawn, d in enumerate(device_time.timeline(report)):
        if drawn >= limit:
            break
        name = d.name if d.name in named else "other"
        # One hover template for the trace, not a text per bar: the page's bound holds 10,000 bars of each timeline.
        t = traces.setdefault(name, {"type": "bar", "orientation": "h", "name": _text(name, 100), "base": [],
                                     "x": [], "y": [], "customdata": [],
                                     "hovertemplate": "op %{customdata}: %{x:.4f} ms estimated<extra>%{fullData.name}"
                                                      "</extra>"})
        t["base"].append(d.start_ns / 1e6)
        t["x"].append(max(d.end_ns - d.start_ns, 1) / 1e6)
        t["y"].append(f"device {d.device_id}")
        t["customdata"].append(d.operation_id)
    return _timeline_figure(traces, named, "estimated device time (ms)")


def _timeline_figure(traces: dict, named: list, x_title: str) -> dict:
    """A timeline's figure (host or device): a trace per op name in the legend's order, "other" last and grey."""
    order = sorted(traces, key=lambda n: named.index(n) if n in named else len(named))
    data = [traces[n] for n in order]
    for i, (n, t) in enumerate(zip(order, data)):
        t["marker"] = {"color": _COLOURS[i] if n != "other" else _COLOURS[-1]}
    return {"data": data, "layout": {"barmode": "overlay", "xaxis": {"title": {"text": x_title}},
                                     "yaxis": {"autorange": "reversed", "type": "category", "automargin": True},
                                     "margin": {"t": 20}, "legend": {"font": {"size": 10}}}}


def _memory(report, kind: str, figure: str) -> dict:
    series: dict = {}
    step = _step(report.count_operations())  # memory_timeline yields at most a point per op
    for index, point in enumerate(memory.memory_timeline(report)):
        if point.end_ns is None:
            continue
        for (device, k), n in point.bytes.items():
            if k == kind:
                s = series.get(device) or series.setdefault(device, _Thinned(step, lambda a, b: a > b))
                s.add(index, point.end_ns / 1e6, n, point.operation_id, point.name)
    data = []
    for device in sorted(series, key=lambda d: (d is None, d or 0)):
        s = series[device]
        label = f"device {device}" if device is not None else "all devices"
        data.append({"type": "scatter", "mode": "lines", "line": {"shape": "hv"},
                     "name": f"{label} {kind} {figure}",
                     "x": s.x, "y": s.y, "customdata": s.customdata,
                     "hovertemplate": "%{y} B after op %{customdata}<extra></extra>"})
        i = max(range(len(s.y)), key=lambda j: s.y[j])
        data.append({"type": "scatter", "mode": "markers+text", "name": f"{label} peak",
                     "x": [s.x[i]], "y": [s.y[i]], "customdata": [s.customdata[i]],
                     "marker": {"size": 11, "symbol": "star"}, "cliponaxis": False,
                     # the label on the side with room: left of a peak in the run's second half
                     "textposition": "top left" if i > len(s.y) / 2 else "top right",
                     "text": [f"peak {_bytes(s.y[i])} (op {s.customdata[i]} {_text(s.names[i], 100)})"]})
    title = f"{kind} {figure}" + ("" if data else ": no buffers recorded")
    return {"data": data, "layout": {"title": {"text": title}, "xaxis": {"title": {"text": "time (ms)"}},
                                     "yaxis": {"title": {"text": "bytes"}, "rangemode": "tozero"},
                                     "margin": {"t": 40}}}


def _device_by_name(report) -> dict:
    rows = sorted(((n, ns) for n, ns in device_time.by_name(report).items() if isinstance(ns, int)),
                  key=lambda r: -r[1])[:30]
    return {"data": [{"type": "bar", "orientation": "h", "y": [_text(n, 100) for n, _ in rows],
                      "x": [ns / 1e3 for _, ns in rows], "hovertemplate": "%{y}: %{x:.1f} us estimated on the "
                      "device<extra></extra>"}],
            "layout": {"xaxis": {"title": {"text": "estimated device time (us)"}}, "yaxis": {"autorange": "reversed"},
                       "margin": {"t": 20, "l": 220}}}


def _by_name(summary) -> dict:
    rows = [r for r in summary.by_name if isinstance(r["self_s"], (int, float))][:30]
    return {"data": [{"type": "bar", "orientation": "h", "y": [_text(r["name"], 100) for r in rows],
                      "x": [r["self_s"] * 1e3 for r in rows],
                      "text": [f"{r['count']} calls" for r in rows], "hovertemplate": "%{y}: %{x:.3f} ms, %{text}"
                      "<extra></extra>"}],
            "layout": {"xaxis": {"title": {"text": "host self time (ms)"}}, "yaxis": {"autorange": "reversed"},
                       "margin": {"t": 20, "l": 220}}}


def _slowest(w, report, device: dict) -> None:
    """The SLOWEST ops by estimated device time (by host time in a report without estimates)."""
    if device:
        ids = sorted(device, key=lambda i: (-device[i], i))[:SLOWEST]
        ops, by = [report.operation(i) for i in ids], "estimated device time"
    else:
        ops, by = report.operations(sort="duration", limit=SLOWEST), "host time (no device time in this report)"
    w(f"<h2 id='slowest'>Slowest ops</h2><p class='note'>By {by}.</p><table><thead><tr><th>op</th><th>name</th>"
      "<th>device (est.)</th><th>host</th><th>outputs</th></tr></thead><tbody>")
    for op in ops:
        w(f"<tr><td><a href='#op-{op.id}'>{op.id}</a></td><td>{_text(op.name, 300)}</td><td class='num'>"
          f"{device_time.human_ns(device.get(op.id))}</td><td class='num'>{_seconds(op.duration)}</td>"
          f"<td>{_tensor_links(op.output_tensors[:MAX_LISTED])}</td></tr>")
    w("</tbody></table>\n")


def _measured(w, m) -> None:
    """Measured beside modelled (read.measured.summary): a real hardware run's device times attached to the report."""
    ns = device_time.human_ns

    def ratio(x) -> str:
        return "" if x is None or not math.isfinite(x) else f"{x:.2f}x"

    share = "" if m.median_ratio is None else (
        f" Per op, estimate / measured: median {ratio(m.median_ratio)}, {100 * m.within_2x:.0f}% within 2x, "
        f"{100 * m.within_4x:.0f}% within 4x.")
    w(f"<h2 id='measured'>Measured beside modelled</h2><p class='note'>A real run's device times "
      f"({_text(m.source or 'attached', 300)}: {m.matched_rows:,} of its {m.rows:,} device operations matched an op "
      f"here) beside the performance model's estimates: {ns(m.measured_ns)} measured, {ns(m.modelled_ns)} modelled "
      f"over {m.ops:,} ops ({ratio(m.ratio)}).{share} Below 1x the model is too fast.</p>")
    w("<table><thead><tr><th>name</th><th>ops</th><th>measured</th><th>modelled</th><th>estimate / measured</th>"
      "</tr></thead><tbody>")
    for n in m.by_name[:MAX_LISTED]:
        w(f"<tr><td>{_text(n.name, 300)}</td><td class='num'>{n.ops:,}</td><td class='num'>{ns(n.measured_ns)}</td>"
          f"<td class='num'>{ns(n.modelled_ns)}</td><td class='num'>{ratio(n.ratio)}</td></tr>")
    w("</tbody></table>\n<p class='note'>The ops the model is furthest from, either way:</p><table><thead><tr>"
      "<th>op</th><th>name</th><th>measured</th><th>modelled</th><th>estimate / measured</th></tr></thead><tbody>")
    for o in m.worst:
        w(f"<tr><td><a href='#op-{o.operation_id}'>{o.operation_id}</a></td><td>{_text(o.name, 300)}</td>"
          f"<td class='num'>{ns(o.measured_ns)}</td><td class='num'>{ns(o.modelled_ns)}</td>"
          f"<td class='num'>{ratio(o.ratio)}</td></tr>")
    w("</tbody></table>\n")


def _pcc(w, report, checks: dict, comparison) -> None:
    w("<h2 id='pcc'>PCC per op</h2>")
    data, shapes, notes = [], [], []
    by_mode: dict = {}
    for op_id in sorted(checks):
        for c in checks[op_id]:
            if c["pcc"] is not None:
                m = by_mode.setdefault(c["mode"], {})
                m[op_id] = min(m.get(op_id, 1.0), c["pcc"])
    for mode, points in sorted(by_mode.items(), key=lambda kv: str(kv[0])):  # a damaged mode may be a number
        s = _lowest(points.items())
        data.append({"type": "scatter", "mode": "markers+lines", "name": f"golden {_text(mode, 100)}", "x": s.x,
                     "y": s.y, "customdata": s.customdata, "hovertemplate": "op %{x}: PCC %{y:.6f}<extra></extra>"})
    first = first_divergence(checks)
    if first is not None:
        notes.append(f"First golden divergence: <a href='#op-{first[0]}'>op {first[0]}</a> "
                     f"({_text(first[1]['mode'], 100)}, tensor {_text(first[1]['tensor_id'], 30)}"
                     + (f", device {first[1]['device_id']}" if first[1].get("device_id") is not None else "")
                     + f", PCC {_pcc_text(first[1]['pcc'])} below "
                     f"{first[1]['desired_pcc']})")
        shapes.append(first[0])
    if comparison is not None:
        s = _lowest([(p.b_id, p.worst.pcc) for p in comparison.pairs
                     if p.worst is not None and p.worst.pcc == p.worst.pcc])
        data.append({"type": "scatter", "mode": "markers+lines", "name": f"vs {_text(comparison.a.name, 100)}",
                     "x": s.x, "y": s.y, "customdata": s.customdata,
                     "hovertemplate": "op %{x}: PCC %{y:.6f} against A<extra></extra>"})
        rc = comparison.root_cause
        if rc is not None:
            notes.append(f"First divergence from {html.escape(str(comparison.a))}: <a href='#op-{rc.b_id}'>op "
                         f"{rc.b_id}</a> {html.escape(rc.name)} ({html.escape(rc.reason)})")
            shapes.append(rc.b_id)
        else:
            notes.append(f"Every aligned op matches {html.escape(str(comparison.a))}.")
    if not data:
        w("<p class='note'>No PCC recorded: capture with golden checks (Config(golden=...)) or export with a "
          "comparison against another report (ttreport html REPORT --against OTHER).</p>\n")
        return
    if first is None and not any("First golden" in n for n in notes) and checks:
        notes.insert(0, "Every golden check passed.")
    w("".join(f"<p>{n}</p>" for n in notes))
    layout = {"xaxis": {"title": {"text": "operation id"}}, "yaxis": {"title": {"text": "PCC"}}, "margin": {"t": 20},
              "shapes": [{"type": "line", "x0": x, "x1": x, "yref": "paper", "y0": 0, "y1": 1,
                          "line": {"color": "red", "dash": "dot"}} for x in shapes],
              "annotations": [{"x": x, "yref": "paper", "y": 1, "text": f"first divergence: op {x}",
                               "showarrow": False, "font": {"color": "red"}} for x in shapes]}
    _chart(w, "pcc-chart", {"data": data, "layout": layout})


def _lowest(points) -> _Thinned:
    """(op id, PCC) points, in op order, as a series of at most MAX_POINTS that keeps each stretch's lowest PCC."""
    points = list(points)
    s = _Thinned(_step(len(points)), lambda a, b: a < b)
    for i, (op_id, pcc) in enumerate(points):
        s.add(i, op_id, pcc, op_id)
    return s


def _pcc_text(p) -> str:
    return f"{p:.6f}" if isinstance(p, float) else "n/a"


def _tensor_links(tensors) -> str:
    return ", ".join(f"<a href='#tensor-{t.id}'>{t.id}</a>&nbsp;{_text(_dims(t), 200)}" for t in tensors)


def _dims(t) -> str:
    dtype = t.dtype.removeprefix("DataType.") if isinstance(t.dtype, str) else "?"  # a damaged row's BLOB: "?"
    where = t.buffer_type or "host"
    return f"{list(t.dims)} {dtype} {where}"


def _ops(w, report, checks: dict, limit, depth, device: dict, real: dict) -> int | None:
    """The op table (`real`: op id -> measured ns, where a real run is attached); returns the highest tensor id its
    rows link to (-1 for none), or None when it lists every op: how far the tensor table goes."""
    total = report.count_operations() if depth is None else \
        report.execute("SELECT COUNT(*) FROM operations WHERE COALESCE(depth, 0) = 0").fetchone()[0]
    shown = total if limit is None else min(limit, total)
    more = "`ttreport html --limit N` writes more (0: all), `ttreport ops` and `ttreport query` list every op"
    w(f"<h2 id='ops'>Ops</h2><p><input id='search' type='search' placeholder='filter: words in the name, "
      f"tensors, error, source...'> <span id='shown'>{shown}</span> of <span id='listed'>{shown}</span> ops shown"
      f"{' (top-level ops only)' if depth is not None else ''}"
      f"{'' if shown == total else f' (the first {shown:,} of {total:,}; {more})'}</p>"
      "<table id='ops'><thead><tr><th>op</th><th>name</th><th>depth</th><th>start</th><th>device (est.)</th>"
      "<th>host</th>"
      "<th>inputs</th><th>outputs</th><th>L1 after</th><th>DRAM after</th><th>PCC</th><th>details</th>"
      "</tr></thead><tbody>\n")
    written, top_tensor = 0, -1
    for op in report.iter_operations(sort="id", limit=limit, depth=depth):
        if written > TABLE_CHARS:
            w(f"</tbody></table><p class='note'>The op table ends before op {op.id}: the page holds at most "
              f"{TABLE_CHARS // 2**20} MiB of op rows. {more}.</p>\n")
            return top_tensor
        row = _op_row(op, checks.get(op.id, []), device.get(op.id), real.get(op.id))
        w(row)
        written += len(row)
        top_tensor = max([top_tensor, *(t.id for t in op.input_tensors[:MAX_LISTED] + op.output_tensors[:MAX_LISTED]
                                        if isinstance(t.id, int))])  # not a damaged row's text id
    w("</tbody></table>\n")
    return top_tensor if shown < total else None


def _op_row(op, op_checks: list, device_ns: int | None = None, measured_ns: int | None = None) -> str:
    """One op's row of the op table, each value capped (VALUE_CHARS) and each list too (MAX_LISTED)."""
    e = html.escape
    pccs = [c["pcc"] for c in op_checks if c["pcc"] is not None]
    failed = any(c["status"] == "fail" for c in op_checks)
    classes = "error" if op.error is not None or op.status == "error" else "fail" if failed else ""
    details = []
    arguments, left = _listed(op.arguments, "arguments")
    if arguments:
        details.append("<b>arguments</b><pre>" + "\n".join(f"{_text(k, 100)} = {_text(v)}" for k, v in arguments)
                       + (f"\n{left}" if left else "") + "</pre>")
    for label, every in (("inputs", op.input_tensors), ("outputs", op.output_tensors)):
        tensors, left = _listed(every, label)
        if tensors:
            details.append(f"<b>{label}</b><pre>" + "\n".join(
                f"<a href='#tensor-{t.id}'>tensor {t.id}</a> {_text(t.shape_text, 200)} {_text(t.dtype, 100)} "
                f"{_text(t.layout, 100)} {_text(memory_text.readable(t.memory_config))}" for t in tensors)
                + (f"\n{left}" if left else "") + "</pre>")
    if op_checks:
        details.append("<b>golden</b><pre>" + "\n".join(
            f"{_text(c['mode'], 100)} tensor {_text(c['tensor_id'], 100)}: {_text(c['status'], 100)}, PCC "
            f"{_pcc_text(c['pcc'])} (desired {_text(c['desired_pcc'], 100)})" for c in op_checks[:MAX_LISTED])
            + "</pre>")
    if op.error is not None:
        details.append(f"<b>error</b><pre>{_text(op.error.error_type, 300)}: {_text(op.error.message)}</pre>")
    if op.stack_trace:
        details.append(f"<b>stack trace</b> (innermost first)<pre>{_text(op.stack_trace)}</pre>")
    error = op.error
    tensors = op.input_tensors[:MAX_LISTED] + op.output_tensors[:MAX_LISTED]
    search = " ".join(str(v)[:500] for v in (
        op.id, op.name, error and error.error_type or "", error and error.message or "", op.stack_trace or "",
        " ".join(f"{t.id} {t.shape_text} {t.dtype}" for t in tensors)))
    parent = f" <a href='#op-{_text(op.parent, 30)}' title='called by'>&uarr;{_text(op.parent, 30)}</a>" \
        if op.parent is not None else ""
    start = f"{op.start_ns / 1e6:.3f} ms" if isinstance(op.start_ns, int) else ""
    inputs, outputs = _listed(op.input_tensors, "inputs"), _listed(op.output_tensors, "outputs")
    return (f"<tr id='op-{op.id}' class='{classes}' data-search='{e(search.lower())}'><td>{op.id}</td>"
            f"<td>{_text(op.name, 300)}{parent}</td><td class='num'>{_text(op.depth, 30)}</td>"
            f"<td class='num'>{start}</td><td class='num'>{device_time.human_ns(device_ns)}"
            f"{'' if measured_ns is None else f'<br>measured {device_time.human_ns(measured_ns)}'}</td>"
            f"<td class='num'>{_seconds(op.duration)}</td>"
            f"<td>{_tensor_links(inputs[0])}{inputs[1] and ' ...'}</td>"
            f"<td>{_tensor_links(outputs[0])}{outputs[1] and ' ...'}</td>"
            f"<td class='num'>{_bytes(op.l1_bytes)}</td><td class='num'>{_bytes(op.dram_bytes)}</td>"
            f"<td class='num'>{_pcc_text(min(pccs)) if pccs else ''}</td>"
            f"<td>{'<details><summary>show</summary>' + ''.join(details) + '</details>' if details else ''}"
            "</td></tr>\n")


def _tensors(w, report, top_tensor: int | None) -> None:
    """The tensor table: every tensor up to `top_tensor`, the highest id the op table links to (None: all)."""
    w("<h2 id='tensors'>Tensors</h2><table id='tensor-table'><thead><tr><th>tensor</th><th>shape</th><th>dtype</th>"
      "<th>layout</th><th>memory</th><th>device</th><th>address</th><th>size</th><th>made by</th><th>read by</th>"
      "<th>memory config</th></tr></thead><tbody>\n")
    # At most MAX_READERS + 1 readers each (the one more says there are more), cut in SQL: a tensor that a
    # million ops read costs the page one short cell.
    cur = report.execute(
        "SELECT t.tensor_id, t.shape, t.dtype, t.layout, t.buffer_type, t.device_id, t.address, t.size, "
        "t.producer_operation_id, t.memory_config, (SELECT group_concat(operation_id) FROM "
        "(SELECT DISTINCT operation_id FROM input_tensors i WHERE i.tensor_id = t.tensor_id ORDER BY operation_id "
        f"LIMIT {MAX_READERS + 1})) FROM tensors t "
        + ("" if top_tensor is None else f"WHERE t.tensor_id <= {int(top_tensor)} ") + "ORDER BY t.tensor_id")
    written = 0
    while batch := cur.fetchmany(1000):
        for tid, shape, dtype, layout, btype, dev, addr, size, producer, cfg, readers in batch:
            if written > TABLE_CHARS:
                w(f"</tbody></table><p class='note'>The tensor table ends before tensor {tid}: the page holds at most "
                  f"{TABLE_CHARS // 2**20} MiB of tensor rows; `ttreport tensor REPORT ID` shows any tensor.</p>\n")
                return
            made = f"<a href='#op-{_text(producer, 30)}'>op {_text(producer, 30)}</a>" if producer is not None else ""
            ids = str(readers).split(",") if readers else []
            read = ", ".join(f"<a href='#op-{_text(r, 30)}'>{_text(r, 30)}</a>" for r in ids[:MAX_READERS]) \
                + (" ..." if len(ids) > MAX_READERS else "")
            row = (f"<tr id='tensor-{tid}'><td>{tid}</td><td>{_text(shape, 200)}</td><td>{_text(dtype, 100)}</td>"
                   f"<td>{_text(layout, 100)}</td><td>{_text(BUFFER_TYPES.get(btype, btype) or 'host', 100)}</td>"
                   f"<td>{_text(dev, 30)}</td><td class='num'>{f'{addr:#x}' if isinstance(addr, int) else ''}"
                   f"</td><td class='num'>{_bytes(size)}</td><td>{made}</td><td>{read}</td>"
                   f"<td>{_text(memory_text.readable(cfg) or '')}<pre>{_text(cfg or '')}</pre></td></tr>\n")
            w(row)
            written += len(row)
    if top_tensor is not None:
        w("</tbody></table><p class='note'>The tensors the ops above made or read, and those before them; "
          "`ttreport tensor REPORT ID` shows any tensor.</p>\n")
        return
    w("</tbody></table>\n")
