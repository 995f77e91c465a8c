"""Report.table (torch.profiler's key_averages().table()), a capture's own .table()/.summary(), one memory
vocabulary across the summary, the HTML and the trace, and golden counts that say they are comparisons.

    print(ttreport.open(path).table(sort_by="device_time_total", row_limit=10))
    with ttreport.capture("run") as run:
        model(x)
    print(run.table(sort_by="cpu_time_total"))     # torch.profiler's key names work too

Each test runs on the demo model captured once (golden mode: its 68 comparisons are made on 64 ops).
"""

import json
import re
import shutil
import sqlite3
import subprocess
import sys

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport import demo as demo_model
from ttreport.export import memory
from ttreport.read.report import ReportError
from ttreport.read.terminal import human_bytes


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return demo_model.capture_demo(tmp_path_factory.mktemp("table") / "demo", perf_files=False)


def _rows(text: str) -> list[list[str]]:
    """The table's data rows, split into cells (two or more spaces apart), header and rule left out."""
    lines = text.splitlines()
    body = lines[2:]
    return [re.split(r"\s{2,}", line.strip()) for line in body if line.startswith("ttnn.")]


def test_the_table_aggregates_ops_by_name_sorted_by_estimated_device_time(demo):
    with ttreport.open(demo) as r:
        text = r.table(sort_by="device_time_total", row_limit=None)
        expected = r.sql("SELECT o.name, COUNT(*) AS n, SUM(p.ideal_ns) AS device_ns FROM operations o "
                         "LEFT JOIN device_perf p USING (operation_id) GROUP BY o.name "
                         "ORDER BY device_ns DESC, o.name")
        # torch.profiler's key names sort by the same column: "cuda_time_total" is the device's total
        assert r.table(sort_by="cuda_time_total", row_limit=None).splitlines()[:-1] == text.splitlines()[:-1]
        assert r.table(sort_by="cpu_time_total").splitlines()[:-1] == r.table().splitlines()[:-1]
    header = text.splitlines()[0]
    for column in ("count", "host total", "host self", "host mean", "host max", "device total (est.)",
                   "device mean (est.)", "max L1 allocated after"):
        assert column in header
    rows = _rows(text)
    assert [(row[0], int(row[1])) for row in rows] == [(e["name"], e["n"]) for e in expected]
    assert text.splitlines()[-1].startswith("sorted by device_time_total;")


def test_the_table_keeps_row_limit_names_and_says_how_many_more(demo):
    with ttreport.open(demo) as r:
        names = r.sql("SELECT COUNT(DISTINCT name) AS n FROM operations")[0]["n"]
        by_count = r.sql("SELECT name FROM operations GROUP BY name ORDER BY COUNT(*) DESC, name LIMIT 3")
        text = r.table(sort_by="count", row_limit=3)
        assert len(_rows(r.table(row_limit=-1))) == names  # -1, as torch.profiler: every name
    assert [row[0] for row in _rows(text)] == [b["name"] for b in by_count]
    assert f"... {names - 3} more op names (row_limit=3" in text


@pytest.mark.parametrize(("kwargs", "named"), [({"sort_by": "self_cpu_memory_usage"}, "'self_cpu_memory_usage'"),
                                               ({"row_limit": "10"}, "'10'")])
def test_a_bad_table_option_is_one_error_naming_it_and_the_choices(demo, kwargs, named):
    with ttreport.open(demo) as r, pytest.raises(ReportError) as e:
        r.table(**kwargs)
    assert named in str(e.value) and ("device_time_total" in str(e.value) or "None" in str(e.value))


def test_a_capture_reads_its_own_table_and_summary_without_opening_the_report(tmp_path):
    with ttreport.capture(tmp_path / "run") as run:
        dev = ttnn.open_device(0)
        try:
            x = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
            for _ in range(3):
                x = ttnn.add(x, x)
        finally:
            ttnn.close_device(dev)
    assert [(row[0], row[1]) for row in _rows(run.table(sort_by="count"))][:2] == \
        [("ttnn.add", "3"), ("ttnn.from_torch", "1")]
    with ttreport.open(run.path) as r:
        assert run.summary() == r.summary()
    with pytest.raises(ReportError, match="has not started"):
        ttreport.Capture(tmp_path / "never").table()


def _summary_peaks(text: str) -> dict:
    return {m[1]: (m[2], int(m[3])) for m in re.finditer(
        r"^(peak \S+ (?:allocated|in buffers) \([^)]*\))\s+(\S+ \S+) after op (\d+)", text, re.M)}


def test_summary_html_and_trace_name_both_memory_figures_alike_and_agree(demo, tmp_path):
    shown = subprocess.run([sys.executable, "-m", "ttreport.cli", "summary", str(demo)], capture_output=True,
                           text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    with ttreport.open(demo) as r:
        peaks = memory.memory_peaks(r)
        page = r.export_html(tmp_path / "demo.html").read_text()
        trace = json.loads(r.export_chrome_trace(tmp_path / "demo.json").read_text())
    expected = {label: (human_bytes(p.bytes), p.operation_id) for label, p in peaks.labelled()}
    assert set(expected) == {f"peak {k} {f}" for k in ("L1", "DRAM") for f in (memory.ALLOCATED, memory.IN_BUFFERS)}
    # The two figures differ (L1 by 40x in the demo): a view showing one unnamed would mislead.
    assert peaks.allocated["L1"].bytes > 10 * peaks.in_buffers["L1"].bytes
    assert _summary_peaks(shown.stdout) == expected
    html_peaks = {m[1]: (m[2], int(m[3])) for m in re.finditer(
        r"<dt>(peak [^<]+)</dt><dd>(\S+ \S+) after <a href='#op-\d+'>op (\d+)</a>", page)}
    assert html_peaks == expected
    assert memory.ALLOCATED in page.split("id='memory'")[1].split("</p>")[0]  # the note names both
    events = trace["traceEvents"]
    labels = next(e["args"]["labels"] for e in events if e["ph"] == "M" and e["name"] == "process_labels")
    assert {m[1]: (m[2], int(m[3])) for m in re.finditer(r"(peak [^:]+): (\S+ \S+) after op (\d+)", labels)} \
        == expected
    counters = [e["args"] for e in events if e["ph"] == "C"]
    for kind in ("L1", "DRAM"):  # the trace's counters peak at the summary's figure in buffers
        assert max(c[f"{kind} {memory.IN_BUFFERS}"] for c in counters) == peaks.in_buffers[kind].bytes


def test_golden_counts_say_they_are_comparisons_and_on_how_many_ops(demo, tmp_path):
    with ttreport.open(demo) as r:
        n, ops = r.execute("SELECT COUNT(*), COUNT(DISTINCT operation_id) FROM tensor_comparisons "
                           "WHERE mode = 'local' AND status = 'pass'").fetchone()
        page = r.export_html(tmp_path / "demo.html").read_text()
    assert n > ops  # an op with several outputs is compared once per output
    shown = subprocess.run([sys.executable, "-m", "ttreport.cli", "summary", str(demo)], capture_output=True,
                           text=True, timeout=120)
    assert f"golden    local pass: {n} comparisons on {ops} ops, lowest PCC" in shown.stdout
    assert f"<dt>golden local pass</dt><dd>{n} comparisons on {ops} ops, lowest PCC" in page


def test_the_table_escapes_an_op_name_from_a_report_made_elsewhere(demo, tmp_path):
    hostile = tmp_path / "hostile"
    shutil.copytree(demo, hostile)
    with sqlite3.connect(hostile / "db.sqlite") as conn:  # a report folder is data from elsewhere (DESIGN.md)
        conn.execute("UPDATE operations SET name = 'ttnn.add\x1b]0;pwned\x07\x1b[2J' WHERE name = 'ttnn.add'")
    conn.close()
    with ttreport.open(hostile) as r:
        text = r.table(sort_by="name", row_limit=None)
    assert r"ttnn.add\x1b]0;pwned\x07\x1b[2J" in text and not any(c in text for c in "\x1b\x07")
