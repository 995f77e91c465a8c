"""`Report.export_html` / `ttreport html`: one self-contained HTML report, loaded in headless Chromium
(tests/browser.py): no console errors, every op in the op table, charts drawn, a screenshot not blank."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import browser
import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport import Config, db
from ttreport.read import device_time
from ttreport.read.report import ReportError

SAMPLE = Path(__file__).resolve().parents[1] / "sample_reports" / "demo"
needs_browser = pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing()))
CHARTS = ("timeline-chart", "device-timeline-chart", "memory-l1", "memory-dram", "device-by-name-chart",
          "by-name-chart")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    shutil.copytree(SAMPLE, root / "demo")
    db.upgrade(root / "demo" / "db.sqlite")  # a no-op unless the schema moved on since the sample was made
    with ttreport.open(root / "demo") as r:
        return root / "demo", r.export_html(root / "demo.html")


@pytest.fixture(scope="module")
def loaded(demo):
    """The demo's page as Chromium shows it (one load shared by the tests that only read it)."""
    if browser.missing() is not None:
        pytest.skip(browser.missing())
    return browser.load(demo[1])


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    """A golden-mode capture whose bfloat4_b add fails its local check (PCC below 0.9999)."""
    root = tmp_path_factory.mktemp("golden")
    dev = ttnn.open_device(0)
    try:
        with ttreport.capture(root / "g", config=Config(comparison="local")) as cap:
            a = ttnn.from_torch(torch.randn(64, 64, generator=torch.Generator().manual_seed(0)), dtype=ttnn.bfloat16,
                                layout=ttnn.TILE, device=dev)
            for dtype in (ttnn.bfloat16, ttnn.bfloat8_b, ttnn.bfloat4_b, ttnn.bfloat4_b):
                ttnn.add(a, a, dtype=dtype)
    finally:
        ttnn.close_device(dev)
    with ttreport.open(cap.path) as r:
        failed = r.sql("SELECT MIN(operation_id) AS id FROM tensor_comparisons WHERE status = 'fail'")[0]["id"]
        return cap.path, r.export_html(root / "g.html"), failed


def _rows(dom: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr id="op-(\d+)"', dom)]


def _drawn(dom: str, div_id: str) -> str:
    """The chart's div as plotly left it (its svg)."""
    start = dom.index(f'id="{div_id}"')
    return dom[start:dom.index('<script type="application/json"', start)]


def test_another_suffix_or_a_limit_below_one_is_refused(demo, tmp_path):
    folder, _ = demo
    with ttreport.open(folder) as r:
        with pytest.raises(ReportError, match=r"as \.html, not 'r\.json'"):
            r.export_html(tmp_path / "r.json")
        with pytest.raises(ReportError, match="limit must be at least 1"):
            r.export_html(tmp_path / "r.html", limit=0)
    assert list(tmp_path.iterdir()) == []


def test_the_file_needs_no_network(demo):
    _, page = demo
    text = page.read_text()
    assert "Plotly" in text and len(text) > 3_000_000  # plotly.min.js is inside
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=['\"]?(https?:)?//", text)


@needs_browser
def test_the_demo_report_loads_with_no_console_errors_and_every_op_in_its_table(demo, loaded):
    folder, _ = demo
    assert loaded.console == []
    with ttreport.open(folder) as r:
        ids = [o.id for o in r.iter_operations()]
        errors = r.errors()
    assert _rows(loaded.dom) == ids
    # Each op links to its tensors, and each tensor row to the op that made it.
    assert re.search(r'<tr id="tensor-\d+">.*?<a href="#op-\d+">op \d+</a>', loaded.dom)
    row = loaded.dom[loaded.dom.index(f'<tr id="op-{errors[0].operation_id}"'):]
    row = row[:row.index("</tr>")]
    assert 'class="error"' in row and errors[0].error_type in row and "stack trace" in row


@needs_browser
def test_the_charts_are_drawn_with_each_devices_peak_marked(demo, loaded):
    folder, _ = demo
    dom = loaded.dom
    for chart in CHARTS:
        drawn = _drawn(dom, chart)
        assert 'class="main-svg"' in drawn, f"{chart} was not drawn"
        assert re.search(r'class="(point|trace bars|js-line)', drawn), f"{chart} has no data drawn"
    with ttreport.open(folder) as r:
        peak = r.peak_l1_by_device()[0]
    assert re.search(rf'>peak [\d.]+ KiB \(op {peak["operation_id"]} {re.escape(peak["name"])}\)<',
                     _drawn(dom, "memory-l1"))


def test_device_time_shows_in_the_summary_the_slowest_ops_and_each_ops_row(demo):
    folder, page = demo
    text = page.read_text()
    with ttreport.open(folder) as r:
        estimated = dict(r.execute("SELECT operation_id, ideal_ns FROM device_perf"))
        total = device_time.total(r)
    assert f"<dt>device (estimated)</dt><dd>{device_time.human_ns(total.ideal_ns)} in top-level ops: kernels " \
           f"{device_time.human_ns(total.kernel_ns)}, host transfers {device_time.human_ns(total.transfer_ns)}" in text
    slowest = text[text.index("<h2 id='slowest'>"):text.index("</table>", text.index("<h2 id='slowest'>"))]
    assert "By estimated device time." in slowest
    listed = [int(i) for i in re.findall(r"<tr><td><a href='#op-(\d+)'>", slowest)]
    assert listed == sorted(estimated, key=lambda i: (-estimated[i], i))[:len(listed)] and len(listed) == 20
    op = listed[0]
    row = text[text.index(f"<tr id='op-{op}'"):]
    assert f"<td class='num'>{device_time.human_ns(estimated[op])}</td>" in row[:row.index("</tr>")]


@needs_browser
def test_a_screenshot_of_the_report_is_not_blank(demo, tmp_path):
    _, page = demo
    png = browser.screenshot(page, tmp_path / "shot.png")
    assert browser.blank_fraction(png) < 0.9 and browser.colours(png) > 50


@needs_browser
def test_the_search_box_keeps_only_the_matching_ops(demo):
    folder, page = demo
    loaded = browser.load(page.resolve().as_uri() + "?q=ttnn.matmul")
    with ttreport.open(folder) as r:
        matmuls = [o.id for o in r.operations(name="ttnn.matmul")]
    shown = [int(i) for i in re.findall(r'<tr id="op-(\d+)"(?![^>]*hidden)', loaded.dom)]
    assert shown == matmuls and f'<span id="shown">{len(matmuls)}</span>' in loaded.dom


@needs_browser
def test_a_golden_capture_marks_its_first_divergence(golden):
    folder, page, failed = golden
    loaded = browser.load(page)
    assert loaded.console == []
    with ttreport.open(folder) as r:
        assert _rows(loaded.dom) == [o.id for o in r.iter_operations()]
    assert f'First golden divergence: <a href="#op-{failed}">op {failed}</a>' in loaded.dom
    drawn = _drawn(loaded.dom, "pcc-chart")
    assert "main-svg" in drawn and f"first divergence: op {failed}" in drawn
    row = loaded.dom[loaded.dom.index(f'<tr id="op-{failed}"'):]
    assert row.startswith(f'<tr id="op-{failed}" class="fail"')


def test_a_limit_keeps_the_first_ops_and_says_so(demo, tmp_path):
    folder, _ = demo
    with ttreport.open(folder) as r:
        text = r.export_html(tmp_path / "r.html", limit=5).read_text()
        total = r.count_operations()
    assert _rows(text.replace("'", '"')) == [1, 2, 3, 4, 5]
    assert f"(the first 5 of {total};" in text


def test_ttreport_html_writes_the_file_and_says_how_to_open_it(demo, tmp_path):
    folder, _ = demo
    out = tmp_path / "cli.html"
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "html", str(folder), "-o", str(out)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert f"open: {out.resolve().as_uri()}" in done.stdout and out.stat().st_size > 3_000_000


@needs_browser
def test_against_another_report_draws_the_pcc_per_op_and_marks_the_root_cause(tmp_path):
    def run(name, dtype):
        dev = ttnn.open_device(0)
        try:
            with ttreport.capture(tmp_path / name, config=Config(tensors="all")) as cap:
                a = ttnn.from_torch(torch.randn(64, 64, generator=torch.Generator().manual_seed(0)),
                                    dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
                ttnn.relu(ttnn.add(a, a, dtype=dtype))
        finally:
            ttnn.close_device(dev)
        return cap.path

    a, b = run("a", ttnn.bfloat16), run("b", ttnn.bfloat4_b)
    out = tmp_path / "b.html"
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "html", str(b), "-o", str(out), "--against", str(a)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    with ttreport.open(b) as r:
        add = r.operations(name="ttnn.add")[0].id
    loaded = browser.load(out)
    assert loaded.console == []
    assert f'First divergence from {a}: <a href="#op-{add}">op {add}</a> ttnn.add' in loaded.dom
    drawn = _drawn(loaded.dom, "pcc-chart")
    assert f"first divergence: op {add}" in drawn
    assert drawn.count('<path class="point') == 3  # from_torch, add, relu: one PCC each


def test_top_level_keeps_only_the_ops_the_model_called(tmp_path):
    dev = ttnn.open_device(0)
    composite = ttnn.register_op("test_export.exp_plus_one")(lambda x: ttnn.add(ttnn.exp(x), 1.0))
    try:
        with ttreport.capture(tmp_path / "r") as cap:
            composite(ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev))
    finally:
        del ttnn.OPS["test_export.exp_plus_one"]
        ttnn.close_device(dev)
    out = tmp_path / "r.html"
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "html", str(cap.path), "-o", str(out),
                           "--top-level"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    with ttreport.open(cap.path) as r:
        top = [o.id for o in r.operations(depth=0)]
        assert len(top) < r.count_operations()
    text = out.read_text()
    assert _rows(text.replace("'", '"')) == top and "(top-level ops only)" in text
