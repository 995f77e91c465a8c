"""The real ttnn-visualizer's operations page, in headless Chromium, shows a fresh demo report: not blank,
the report's op count, each op labelled with its source line (what `make visualizer-check` checks, with
the session's visualizer server). Skips, saying why, where chromium is not installed.
"""

import browser
import pytest
from visualizer_check import check_operations_page

from ttreport.demo import capture_demo


@pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing()))
def test_the_operations_page_of_a_fresh_demo_report_lists_its_ops_with_their_lines(visualizer, tmp_path):
    report = capture_demo(tmp_path / "demo")
    shown = check_operations_page(visualizer, report, tmp_path / "operations.png")
    assert "the first ttnn.from_torch (demo.py:" in shown
