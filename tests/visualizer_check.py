"""`make visualizer-check`: a fresh demo report opened in the real ttnn-visualizer, its operations page
screenshotted by headless Chromium and checked not to be blank.

    .venv/bin/python tests/visualizer_check.py [OUT_DIR]   # default: generated/visualizer-check

Captures the demo model into OUT_DIR/report, starts ttnn-visualizer on 127.0.0.1 (tests/visualizer.py),
opens the report as an instance, loads `/operations?instanceId=...` in Chromium (tests/browser.py),
and writes OUT_DIR/operations.png. Fails (exit 1) when the page is blank or does not list the report's
ops with their source lines; exits 0 with a message saying so when chromium is not installed. The
same page check runs in `make test` (tests/test_visualizer_screenshot.py, about 9 s on an idle machine,
with the session's server); this script adds the demo capture and its own server, and keeps the PNG.
"""

from __future__ import annotations

import re
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # browser.py and visualizer.py sit beside this file

import browser  # noqa: E402
import visualizer  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# A page of one colour over more than this share of its pixels shows nothing (the app's bare background
# measures 1.0; the operations list with its rows about 0.8).
MAX_BLANK = 0.97
# The page's count of the report's ops, and each listed op's label: its name and the model's file and line
# (the first frame of its stack trace). The list is virtualised, so only the first rows are in the DOM.
LABEL = re.compile(r"ttnn\.\w+ \(demo\.py:\d+\)")


class PageCheckError(RuntimeError):
    """The operations page is blank or does not show the report's ops."""


def check_operations_page(vis: visualizer.Visualizer, report: Path, png: Path) -> str:
    """Open `report` in the running `vis`, screenshot its operations page to `png` and check it; what
    the page showed, in a line. Raises PageCheckError when it is blank or lacks the report's ops."""
    instance = vis.open(report)
    url = f"{vis.base}/operations?instanceId={instance}"
    page = browser.load(url, wait_ms=15000)
    browser.screenshot(url, png, size=(1400, 1000), wait_ms=15000)
    with sqlite3.connect(report / "db.sqlite") as con:
        n_ops = con.execute("SELECT count(*) FROM operations").fetchone()[0]
    text = page.text()
    labels = LABEL.findall(text)
    if f"Showing {n_ops} operations" not in text or not labels:
        raise PageCheckError(f"the operations page at {url} does not show the report's {n_ops} ops, each "
                             f"labelled with its demo.py line; its text ends: {text[-400:]!r} (screenshot: {png})")
    blank = browser.blank_fraction(png)
    if blank > MAX_BLANK:
        raise PageCheckError(f"{png} is blank ({blank:.1%} of its pixels one colour, more than {MAX_BLANK:.0%})")
    return f"the operations page shows {n_ops} ops, the first {labels[0]}; {blank:.1%} of its pixels share one colour"


def check(out_dir: Path) -> Path:
    """Capture the demo, start the visualizer, screenshot and check its operations page; the PNG's path."""
    from ttreport.demo import capture_demo

    out_dir.mkdir(parents=True, exist_ok=True)
    report = capture_demo(out_dir.resolve() / "report")
    png = out_dir / "operations.png"
    with tempfile.TemporaryDirectory(prefix="visualizer-check-") as work:
        vis = visualizer.start(Path(work))
        try:
            print(f"visualizer-check: {check_operations_page(vis, report, png)}")
        except PageCheckError as e:
            raise SystemExit(f"visualizer-check: FAILED: {e}") from None
        finally:
            visualizer.stop(vis)
    return png


def main(argv: list[str]) -> int:
    if (why := browser.missing()) is not None:
        print(f"visualizer-check: skipped: {why}")
        return 0
    out_dir = Path(argv[0]) if argv else REPO / "generated/visualizer-check"
    print(f"visualizer-check: screenshot: {check(out_dir)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
