"""The pytest plugin: one report per test, a table of them at the end, and a baseline gate for CI.

    pytest --ttreport                                  # each test's ops into <root>/<test name>/
    pytest --ttreport --ttreport-root baseline/        # make a baseline on a known-good commit
    pytest --ttreport --ttreport-baseline baseline/    # fail a test whose values diverge from it

    @pytest.mark.ttreport(config=ttreport.Config(tensors="all", stack_depth=8))
    def test_attention(device): ...

Installed with ttreport as a `pytest11` entry point, it adds the options and the marker only:
nothing is captured, and neither torch nor device_sim is imported, until --ttreport is given.

What a test's report holds: the ops its body runs (pytest's call phase); tensors made by fixtures
are the inputs it was given. Reports are named after the test's node id ("tests/test_x.py::test_a[2]"
becomes "tests.test_x.test_a[2]") and a rerun replaces them (only reports ttreport made). Without a
marker each test is captured with Config(tensors="outputs"), the least a comparison needs; a
marker's config is used as given, with the root and overwrite set by the plugin. TTREPORT_CONFIG
applies on top of either, as everywhere.

With --ttreport-baseline ROOT, each test's report is compared (ttreport.compare_reports, at its
default tolerances) with ROOT/<same name>: a divergence fails the test with the op that diverged
first, and a missing baseline report fails it too (a CI gate that passes what it cannot check
would hide regressions), saying how to make one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

MARKER = "ttreport"


def pytest_addoption(parser) -> None:
    group = parser.getgroup("ttreport", "ttreport: one report per test")
    group.addoption("--ttreport", action="store_true", help="Capture each test into its own ttreport report.")
    group.addoption("--ttreport-root", metavar="DIR", default=None,
                    help="Folder the test reports are written under (default: generated/ttreport/reports).")
    group.addoption("--ttreport-baseline", metavar="ROOT", default=None,
                    help="Compare each test's report with the same test's report under ROOT; a divergence fails "
                         "the test, naming the op. Implies --ttreport.")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "ttreport(config=None): the ttreport.Config this test is captured with "
                            "under --ttreport")
    baseline = config.getoption("ttreport_baseline")
    if config.getoption("ttreport") or baseline:
        from ttreport.read.report import DEFAULT_ROOT

        root = Path(config.getoption("ttreport_root") or DEFAULT_ROOT)
        if baseline is not None and not Path(baseline).is_dir():
            raise pytest.UsageError(f"--ttreport-baseline {baseline}: no such folder; give the folder a baseline run "
                                    f"wrote its reports under (pytest --ttreport --ttreport-root {baseline})")
        config.pluginmanager.register(_Session(root, None if baseline is None else Path(baseline)), "ttreport-session")


def report_name(nodeid: str) -> str:
    """The report folder name of a test: its node id as one plain folder name.

    "tests/test_x.py::TestA::test_b[2-x]" -> "tests.test_x.TestA.test_b[2-x]"
    """
    path, _, rest = nodeid.partition("::")
    name = ".".join([*Path(path).with_suffix("").parts, *rest.split("::")]) if rest else Path(path).stem
    # Separators and characters a file system or shell dislikes become "_"; the parameters stay readable.
    return re.sub(r"[^A-Za-z0-9._\-\[\]=+,]", "_", name).strip(".") or "test"


@dataclass
class _Result:
    name: str
    ops: int | None
    seconds: float | None
    peak_l1_bytes: int | None
    errors: int | None
    path: Path
    baseline: str = ""  # "", "match", "diverged at op N (name)", "no baseline", "not compared"


class _Session:
    """What --ttreport adds: a capture around each test's call, the baseline check, and the table."""

    def __init__(self, root: Path, baseline: Path | None):
        self.root, self.baseline = root, baseline
        self.results: list[_Result] = []

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        import ttreport

        name = report_name(item.nodeid)
        capture = ttreport.Capture(name, config=self._config(item))
        try:
            with capture:
                outcome = yield
        except BaseException:
            # The test failed (or was skipped): its report is listed, with the error it recorded, and not
            # compared: the test has failed already.
            if capture.status is not None:
                self.results.append(self._result(name, capture.path))
            raise
        result = self._result(name, capture.path)
        self.results.append(result)
        if self.baseline is not None:
            self._check_baseline(result)
        return outcome

    def _config(self, item):
        import dataclasses

        import ttreport

        marker = item.get_closest_marker(MARKER)
        given = marker.kwargs.get("config", marker.args[0] if marker.args else None) if marker else None
        if given is not None and not isinstance(given, ttreport.Config):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.ttreport(config=...) takes a ttreport.Config, got "
                                    f"{type(given).__name__} {given!r}")
        base = given if given is not None else ttreport.Config(tensors="outputs")
        return dataclasses.replace(base, root=self.root, overwrite=True)

    def _result(self, name: str, path: Path) -> _Result:
        from ttreport.read.report import Report

        with Report(path) as r:
            s = r.summary()
        return _Result(name, s.operations, s.top_level_seconds, s.peak_l1["bytes"] if s.peak_l1 else None,
                       len(s.errors), path)

    def _check_baseline(self, result: _Result) -> None:
        from ttreport.errors import TTReportError
        from ttreport.read.compare import compare_reports
        from ttreport.read.report import Report

        reference = self.baseline / result.name
        if not reference.is_dir():
            result.baseline = "no baseline"
            pytest.fail(f"ttreport: no baseline report {reference} for this test; make one with "
                        f"pytest --ttreport --ttreport-root {self.baseline} on a known-good version", pytrace=False)
        with Report(reference) as r:
            if result.ops == 0 and r.count_operations() == 0:
                result.baseline = "match"  # neither run launched an op: nothing can have diverged
                return
        try:
            comparison = compare_reports(reference, result.path)
        except TTReportError as e:  # no stored tensors, a damaged or newer report: one line, the fix in it
            result.baseline = "not compared"
            pytest.fail(f"ttreport: cannot compare with the baseline {reference}: {e}", pytrace=False)
        if comparison.exit_code == 0:
            result.baseline = "match"
            return
        rc = comparison.root_cause or next(p for p in comparison.pairs if p.status != "match")
        result.baseline = f"diverged at op {rc.b_id} ({rc.name})"
        pytest.fail(f"ttreport: {rc.name} diverged from the baseline (baseline op {rc.a_id}, this run's op "
                    f"{rc.b_id}): {rc.reason}\n  baseline: {reference}\n  this run: {result.path}\n"
                    f"  details:  ttreport compare {reference} {result.path}", pytrace=False)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.results:
            return
        from ttreport.read import terminal

        tr = terminalreporter
        tr.write_sep("=", f"ttreport: {len(self.results)} test report(s) under {self.root}")
        columns = ["test", "ops", "time", "peak L1", "errors"] + (["baseline"] if self.baseline else []) + ["report"]
        rows = [(r.name, r.ops, terminal.human_seconds(r.seconds), terminal.human_bytes(r.peak_l1_bytes), r.errors,
                 *([r.baseline] if self.baseline else []), str(r.path)) for r in self.results]
        for line in terminal.plain_table(columns, rows):
            tr.write_line(line)
