"""A report as one self-contained HTML file: open it in any browser, with no network.

    with ttreport.open("generated/ttreport/reports/demo") as r:
        r.export_html("demo.html")

Sections: the summary; a timeline of every op (nested ops on rows below their callers); L1 and DRAM
in use over the run per device with each peak marked; time by op name; the slowest ops; golden PCC
per op with the first divergence marked (golden-mode captures, or a report-vs-report comparison
given as `comparison=`); a searchable op table whose rows link each op to its tensors, stack trace
and error; the tensor table, each tensor linked to the op that made it and the ops that read it.

Charts are plotly's (its plotly.min.js is embedded, ~4.8 MB, so the file opens offline); the
tables are plain HTML written as the rows stream from SQL. Clicking a bar or point jumps to its op.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from ttreport import memory_text, outfile
from ttreport.export.golden import first_divergence, golden_checks
from ttreport.export.memory import memory_timeline

SUFFIXES = (".html", ".htm")
SLOWEST = 20  # rows in the slowest-ops table
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


def export_html(report, path, *, limit: int | None = None, top_level: bool = False, comparison=None) -> Path:
    """Write `report` (an open Report) as a self-contained HTML file at `path` (.html); return the path.

    Args:
        limit: at most this many ops (in call order) in the timeline and the op table; None for all.
        top_level: only the ops the model called directly (depth 0) in the timeline and the op table.
        comparison: a ttreport.read.compare.ReportComparison whose B is this report: its PCC per op and
            its root cause are drawn beside the golden checks.
    """
    from plotly.offline import get_plotlyjs  # only the html export needs plotly

    path = Path(path)
    if not path.name.endswith(SUFFIXES):
        from ttreport.read.report import ReportError

        raise ReportError(f"an HTML report is written as .html, not {path.name!r}; "
                          f"name the file e.g. {path.with_suffix('.html').name}")
    if limit is not None and limit < 1:
        from ttreport.read.report import ReportError

        raise ReportError(f"limit must be at least 1 (or None for every op), not {limit!r}")
    summary = report.summary()
    checks = golden_checks(report)
    e = html.escape
    with outfile.open(path, "w") as f:  # a link at `path` is replaced, never written through
        w = f.write
        w(f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>ttreport: {e(report.path.name)}"
          f"</title><style>{_CSS}</style>\n<script>{get_plotlyjs()}</script></head><body>\n")
        w(f"<h1>ttreport: {e(report.path.name)}</h1><nav>" + "".join(
            f"<a href='#{a}'>{t}</a>" for a, t in (("summary", "summary"), ("timeline", "timeline"),
                                                   ("memory", "memory"), ("by-name", "time by op name"),
                                                   ("slowest", "slowest ops"), ("pcc", "PCC"), ("ops", "ops"),
                                                   ("tensors", "tensors"))) + "</nav>\n")
        _summary(w, report, summary)
        w("<h2 id='timeline'>Timeline</h2><p class='note'>Each op is a bar from its start to its end; "
          "nested ops sit on the rows below the op that called them. Click a bar for its row in the op table.</p>")
        depth = 0 if top_level else None
        _chart(w, "timeline-chart", _timeline(report, summary, limit, depth))
        w("<h2 id='memory'>Memory in use</h2><p class='note'>Bytes of the device buffers live after each op "
          "(each buffer's own size, as Report.peak_l1_by_device counts them), per device; the peak of each is "
          "marked. The summary's peak L1 and DRAM count what the allocator holds in every bank (the ops' "
          "l1_bytes, dram_bytes), so they are larger. Click a point for its op.</p>")
        for kind in ("L1", "DRAM"):
            _chart(w, f"memory-{kind.lower()}", _memory(report, kind))
        w("<h2 id='by-name'>Time by op name</h2><p class='note'>Self time: an op's time less the ops it "
          "called.</p>")
        _chart(w, "by-name-chart", _by_name(summary))
        _slowest(w, report)
        _pcc(w, report, checks, comparison)
        _ops(w, report, checks, limit, depth)
        _tensors(w, report)
        w(f"<script>{_JS}</script></body></html>\n")
    return path


def _chart(w, div_id: str, spec: dict) -> None:
    data = json.dumps(spec, default=str, allow_nan=False).replace("</", "<\\/")
    w(f"<div class='chart' id='{div_id}'></div><script type='application/json' id='{div_id}-data'>{data}</script>\n")


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


def _summary(w, report, s) -> None:
    e = html.escape
    rows = [("report", e(str(report.path))), ("status", e(s.status_text or s.status or "unknown")),
            ("ops", f"{s.operations} ({_seconds(s.top_level_seconds)} in top-level ops)")]
    for label, peak in (("peak L1", s.peak_l1), ("peak DRAM", s.peak_dram)):
        if peak is not None:
            rows.append((label, f"{_bytes(peak['bytes'])} after <a href='#op-{peak['operation_id']}'>op "
                                f"{peak['operation_id']}</a> ({e(str(peak['name']))})"))
    for p in sorted(s.peak_l1_by_device, key=lambda p: p["device_id"] if isinstance(p["device_id"], int) else -1):
        rows.append((f"peak L1, device {p['device_id']}", f"{_bytes(p['bytes'])} after <a href='#op-"
                                                          f"{p['operation_id']}'>op {p['operation_id']}</a>"))
    for c in s.comparisons:
        low = c["lowest_pcc"]
        at = f", lowest PCC {low:.6f} at <a href='#op-{c['lowest_pcc_operation_id']}'>op " \
             f"{c['lowest_pcc_operation_id']}</a>" if isinstance(low, float) else ""
        rows.append((f"golden {e(str(c['mode']))}", f"{c['count']} {e(str(c['status']))}{at}"))
    rows.append(("errors", str(len(s.errors))))
    for err in s.errors:
        where = f"<a href='#op-{err.operation_id}'>op {err.operation_id}</a> {e(str(err.operation_name))}" \
            if err.operation_id is not None else "the model raised"
        rows.append(("", f"{where}: {e(str(err.error_type))}: {e((err.message or '').splitlines()[0][:300])}"
                     if err.message else f"{where}: {e(str(err.error_type))}"))
    w("<h2 id='summary'>Summary</h2><dl>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>\n")


def _timeline(report, summary, limit, depth) -> dict:
    named = [r["name"] for r in summary.by_name[:NAMES_IN_LEGEND]]
    traces: dict = {}
    for op in report.iter_operations(sort="id", limit=limit, depth=depth):
        if op.start_ns is None:
            continue
        name = op.name if op.name in named else "other"
        t = traces.setdefault(name, {"type": "bar", "orientation": "h", "name": name, "base": [], "x": [], "y": [],
                                     "customdata": [], "hovertext": [], "hoverinfo": "text"})
        end = op.end_ns if op.end_ns is not None else op.start_ns + (op.duration or 0) * 1e9
        t["base"].append(op.start_ns / 1e6)
        t["x"].append(max(end - op.start_ns, 1) / 1e6)
        t["y"].append(f"{op.thread or 'main'} depth {op.depth or 0}")
        t["customdata"].append(op.id)
        t["hovertext"].append(f"op {op.id} {op.name} {_seconds((end - op.start_ns) / 1e9)}")
    data = sorted(traces.values(), key=lambda t: named.index(t["name"]) if t["name"] in named else len(named))
    for i, t in enumerate(data):
        t["marker"] = {"color": _COLOURS[i] if t["name"] != "other" else _COLOURS[-1]}
    return {"data": data, "layout": {"barmode": "overlay", "xaxis": {"title": {"text": "time (ms)"}},
                                     "yaxis": {"autorange": "reversed", "type": "category", "automargin": True},
                                     "margin": {"t": 20}, "legend": {"font": {"size": 10}}}}


def _memory(report, kind: str) -> dict:
    series: dict = {}
    for point in memory_timeline(report):
        if point.end_ns is None:
            continue
        for (device, k), n in point.bytes.items():
            if k == kind:
                s = series.setdefault(device, {"x": [], "y": [], "customdata": [], "names": []})
                s["x"].append(point.end_ns / 1e6)
                s["y"].append(n)
                s["customdata"].append(point.operation_id)
                s["names"].append(point.name)
    data = []
    for device in sorted(series, key=lambda d: (d is None, d or 0)):
        s = series[device]
        label = f"device {device}" if device is not None else "all devices"
        data.append({"type": "scatter", "mode": "lines", "line": {"shape": "hv"}, "name": f"{label} {kind}",
                     "x": s["x"], "y": s["y"], "customdata": s["customdata"],
                     "hovertemplate": "%{y} B after op %{customdata}<extra></extra>"})
        i = max(range(len(s["y"])), key=lambda j: s["y"][j])
        data.append({"type": "scatter", "mode": "markers+text", "name": f"{label} peak",
                     "x": [s["x"][i]], "y": [s["y"][i]], "customdata": [s["customdata"][i]],
                     "marker": {"size": 11, "symbol": "star"}, "cliponaxis": False,
                     # the label on the side with room: left of a peak in the run's second half
                     "textposition": "top left" if i > len(s["y"]) / 2 else "top right",
                     "text": [f"peak {_bytes(s['y'][i])} (op {s['customdata'][i]} {s['names'][i]})"]})
    title = f"{kind} in use" + ("" if data else " (no buffers recorded)")
    return {"data": data, "layout": {"title": {"text": title}, "xaxis": {"title": {"text": "time (ms)"}},
                                     "yaxis": {"title": {"text": "bytes"}, "rangemode": "tozero"},
                                     "margin": {"t": 40}}}


def _by_name(summary) -> dict:
    rows = [r for r in summary.by_name if isinstance(r["self_s"], (int, float))][:30]
    return {"data": [{"type": "bar", "orientation": "h", "y": [r["name"] for r in rows],
                      "x": [r["self_s"] * 1e3 for r in rows],
                      "text": [f"{r['count']} calls" for r in rows], "hovertemplate": "%{y}: %{x:.3f} ms, %{text}"
                      "<extra></extra>"}],
            "layout": {"xaxis": {"title": {"text": "self time (ms)"}}, "yaxis": {"autorange": "reversed"},
                       "margin": {"t": 20, "l": 220}}}


def _slowest(w, report) -> None:
    e = html.escape
    w("<h2 id='slowest'>Slowest ops</h2><table><thead><tr><th>op</th><th>name</th><th>duration</th>"
      "<th>outputs</th></tr></thead><tbody>")
    for op in report.operations(sort="duration", limit=SLOWEST):
        w(f"<tr><td><a href='#op-{op.id}'>{op.id}</a></td><td>{e(op.name)}</td><td class='num'>"
          f"{_seconds(op.duration)}</td><td>{_tensor_links(op.output_tensors)}</td></tr>")
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
    for mode, points in sorted(by_mode.items()):
        data.append({"type": "scatter", "mode": "markers+lines", "name": f"golden {mode}", "x": list(points),
                     "y": list(points.values()), "customdata": list(points),
                     "hovertemplate": "op %{x}: PCC %{y:.6f}<extra></extra>"})
    first = first_divergence(checks)
    if first is not None:
        notes.append(f"First golden divergence: <a href='#op-{first[0]}'>op {first[0]}</a> ({first[1]['mode']}, "
                     f"tensor {first[1]['tensor_id']}"
                     + (f", device {first[1]['device_id']}" if first[1].get("device_id") is not None else "")
                     + f", PCC {_pcc_text(first[1]['pcc'])} below "
                     f"{first[1]['desired_pcc']})")
        shapes.append(first[0])
    if comparison is not None:
        pairs = [(p.b_id, p.worst.pcc) for p in comparison.pairs if p.worst is not None and p.worst.pcc == p.worst.pcc]
        data.append({"type": "scatter", "mode": "markers+lines", "name": f"vs {comparison.a.name}",
                     "x": [b for b, _ in pairs], "y": [c for _, c in pairs], "customdata": [b for b, _ in pairs],
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


def _pcc_text(p) -> str:
    return f"{p:.6f}" if isinstance(p, float) else "n/a"


def _tensor_links(tensors) -> str:
    return ", ".join(f"<a href='#tensor-{t.id}'>{t.id}</a>&nbsp;{html.escape(_dims(t))}" for t in tensors)


def _dims(t) -> str:
    dtype = (t.dtype or "?").removeprefix("DataType.")
    where = t.buffer_type or "host"
    return f"{list(t.dims)} {dtype} {where}"


def _ops(w, report, checks: dict, limit, depth) -> None:
    e = html.escape
    total = report.count_operations() if depth is None else \
        report.execute("SELECT COUNT(*) FROM operations WHERE COALESCE(depth, 0) = 0").fetchone()[0]
    shown = total if limit is None else min(limit, total)
    w(f"<h2 id='ops'>Ops</h2><p><input id='search' type='search' placeholder='filter: words in the name, "
      f"tensors, error, source...'> <span id='shown'>{shown}</span> of {shown} ops shown"
      f"{' (top-level ops only)' if depth is not None else ''}"
      f"{'' if shown == total else f' (the first {shown} of {total}; export with a larger limit for more)'}</p>"
      "<table id='ops'><thead><tr><th>op</th><th>name</th><th>depth</th><th>start</th><th>duration</th>"
      "<th>inputs</th><th>outputs</th><th>L1 after</th><th>DRAM after</th><th>PCC</th><th>details</th>"
      "</tr></thead><tbody>\n")
    for op in report.iter_operations(sort="id", limit=limit, depth=depth):
        op_checks = checks.get(op.id, [])
        pccs = [c["pcc"] for c in op_checks if c["pcc"] is not None]
        failed = any(c["status"] == "fail" for c in op_checks)
        classes = "error" if op.error is not None or op.status == "error" else "fail" if failed else ""
        details = []
        if op.arguments:
            details.append("<b>arguments</b><pre>" + e("\n".join(f"{k} = {v}" for k, v in op.arguments)) + "</pre>")
        for label, tensors in (("inputs", op.input_tensors), ("outputs", op.output_tensors)):
            if tensors:
                details.append(f"<b>{label}</b><pre>" + "\n".join(
                    f"<a href='#tensor-{t.id}'>tensor {t.id}</a> {e(str(t.shape))} {e(str(t.dtype))} "
                    f"{e(str(t.layout))} {e(str(memory_text.readable(t.memory_config)))}" for t in tensors) + "</pre>")
        if op_checks:
            details.append("<b>golden</b><pre>" + e("\n".join(
                f"{c['mode']} tensor {c['tensor_id']}: {c['status']}, PCC {_pcc_text(c['pcc'])} "
                f"(desired {c['desired_pcc']})" for c in op_checks)) + "</pre>")
        if op.error is not None:
            details.append(f"<b>error</b><pre>{e(str(op.error.error_type))}: {e(str(op.error.message))}</pre>")
        if op.stack_trace:
            details.append(f"<b>stack trace</b> (innermost first)<pre>{e(op.stack_trace)}</pre>")
        search = " ".join([str(op.id), op.name, op.error.error_type or "" if op.error else "",
                           op.error.message or "" if op.error else "", (op.stack_trace or "")[:500],
                           " ".join(f"{t.id} {t.shape} {t.dtype}" for t in op.input_tensors + op.output_tensors)])
        parent = f" <a href='#op-{op.parent}' title='called by'>&uarr;{op.parent}</a>" if op.parent is not None else ""
        start = f"{op.start_ns / 1e6:.3f} ms" if isinstance(op.start_ns, int) else ""
        w(f"<tr id='op-{op.id}' class='{classes}' data-search='{e(search.lower())}'><td>{op.id}</td>"
          f"<td>{e(op.name)}{parent}</td><td class='num'>{op.depth if op.depth is not None else ''}</td>"
          f"<td class='num'>{start}</td><td class='num'>{_seconds(op.duration)}</td>"
          f"<td>{_tensor_links(op.input_tensors)}</td><td>{_tensor_links(op.output_tensors)}</td>"
          f"<td class='num'>{_bytes(op.l1_bytes)}</td><td class='num'>{_bytes(op.dram_bytes)}</td>"
          f"<td class='num'>{_pcc_text(min(pccs)) if pccs else ''}</td>"
          f"<td>{'<details><summary>show</summary>' + ''.join(details) + '</details>' if details else ''}</td></tr>\n")
    w("</tbody></table>\n")


def _tensors(w, report) -> None:
    e = html.escape
    w("<h2 id='tensors'>Tensors</h2><table id='tensor-table'><thead><tr><th>tensor</th><th>shape</th><th>dtype</th>"
      "<th>layout</th><th>memory</th><th>device</th><th>address</th><th>size</th><th>made by</th><th>read by</th>"
      "<th>memory config</th></tr></thead><tbody>\n")
    cur = report.execute(
        "SELECT t.tensor_id, t.shape, t.dtype, t.layout, t.buffer_type, t.device_id, t.address, t.size, "
        "t.producer_operation_id, t.memory_config, (SELECT group_concat(operation_id) FROM "
        "(SELECT DISTINCT operation_id FROM input_tensors i WHERE i.tensor_id = t.tensor_id ORDER BY operation_id)) "
        "FROM tensors t ORDER BY t.tensor_id")
    from ttreport.read.report import BUFFER_TYPES

    while batch := cur.fetchmany(1000):
        for tid, shape, dtype, layout, btype, dev, addr, size, producer, cfg, readers in batch:
            made = f"<a href='#op-{producer}'>op {producer}</a>" if producer is not None else ""
            read = ", ".join(f"<a href='#op-{r}'>{r}</a>" for r in str(readers).split(",")) if readers else ""
            w(f"<tr id='tensor-{tid}'><td>{tid}</td><td>{e(str(shape))}</td><td>{e(str(dtype))}</td>"
              f"<td>{e(str(layout))}</td><td>{e(str(BUFFER_TYPES.get(btype, btype) or 'host'))}</td>"
              f"<td>{'' if dev is None else dev}</td><td class='num'>{f'{addr:#x}' if isinstance(addr, int) else ''}"
              f"</td><td class='num'>{_bytes(size)}</td><td>{made}</td><td>{read}</td>"
              f"<td>{e(memory_text.readable(cfg) or '')}<pre>{e(str(cfg or ''))}</pre></td></tr>\n")
    w("</tbody></table>\n")
