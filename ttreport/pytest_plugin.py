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

A test does not wait for its report to be written: its capture ends once the op log holds everything it
recorded (Capture(wait_on_close=False)), and the writer process finishes the report while the next tests run.
The session waits for every report at its end, before the table, and says there which could not be finished;
at most MAX_BEHIND reports are unfinished at once. A test checked against a baseline waits for its own.

With --ttreport-baseline ROOT, each test's report is checked against ROOT/<same name>, and the test
fails, naming the first op (in this run's order) that changed, when:
  - an op was added, removed or replaced (an op of one run with no partner in the other);
  - an aligned op's input or output changed shape, dtype, layout or memory config;
  - an output's values diverged (ttreport.compare_reports at the finer dtype's tolerances, or at
    --ttreport-rtol/--ttreport-atol/--ttreport-pcc, or the marker's rtol=/atol=/pcc=).
--ttreport-lenient (or the marker's strict=False) lets added and removed ops pass, for a model whose
op sequence may change; specs and values are still checked. Time is compared on the device clock: the
performance model's estimate, the same for the same ops run after run (the emulator's host time moves with
warm-up and load). The table shows each test's estimated device time against its baseline's, and
--ttreport-max-slowdown=X (or the marker's max_slowdown=X) fails a test whose device time grew by more than
the fraction X (0.05: 5 %). A missing baseline report fails the
test too (a CI gate that passes what it cannot check would hide regressions), saying how to make one.

    @pytest.mark.ttreport(pcc=0.999, strict=False)
    def test_decoder(device): ...
"""

from __future__ import annotations

import collections
import dataclasses
import re
import sqlite3
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

import ttreport
from ttreport.errors import TTReportError

MARKER = "ttreport"
# Reports finished behind the tests at most at once: one more waits for the oldest. Each is a writer process
# (a fork of the test process, ~8 MB of its own) with its folder lock and pipe: 10,000 quick tests must not fork
# 10,000. 8: 20 small device tests (load 6, best of 3, bench/README.md) added 81-84 ms a test with 8 behind, 115-118
# with 4, 129 with 1 or 2, 90 with 16 (a small report's writer takes 0.1-0.5 s, most of it waiting on syncs).
MAX_BEHIND = 8


def pytest_addoption(parser) -> None:
    group = parser.getgroup("ttreport", "ttreport: one report per test")
    group.addoption("--ttreport", action="store_true", help="Capture each test into its own ttreport report.")
    group.addoption("--ttreport-root", metavar="DIR", default=None,
                    help="Folder the test reports are written under (default: generated/ttreport/reports).")
    group.addoption("--ttreport-baseline", metavar="ROOT", default=None,
                    help="Compare each test's report with the same test's report under ROOT; an added, removed or "
                         "replaced op, a changed shape, dtype, layout or memory config, or diverged values fail the "
                         "test, naming the op. Implies --ttreport.")
    for tol in ("rtol", "atol", "pcc"):
        group.addoption(f"--ttreport-{tol}", metavar="X", type=float, default=None,
                        help=f"The baseline comparison's {tol} (default: the finer dtype's tolerance).")
    group.addoption("--ttreport-max-slowdown", metavar="X", type=float, default=None,
                    help="Fail a test whose estimated device time grew by more than this fraction of its "
                         "baseline's (0.05: 5 %%); by default device time is shown, not checked.")
    group.addoption("--ttreport-lenient", action="store_true",
                    help="Let ops added to or removed from the baseline's sequence pass (specs and values are "
                         "still checked).")


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "ttreport(config=None, rtol=None, atol=None, pcc=None, strict=True, "
                            "max_slowdown=None): the ttreport.Config this test is captured with under --ttreport, "
                            "and its baseline gate's tolerances, strictness and device-time limit")
    baseline = config.getoption("ttreport_baseline")
    if config.getoption("ttreport") or baseline:
        # deferred: this plugin loads in every pytest run; the reading side only under --ttreport
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
    seconds: float | None  # the emulator's host time in top-level ops
    device_ns: int | None  # the performance model's estimate over the top-level ops (None: no estimate)
    peak_l1_bytes: int | None
    errors: int | None
    path: Path
    baseline: str = ""  # "", "match", "diverged at op N (name)", "no baseline", "not compared"
    baseline_device_ns: int | None = None

    @property
    def device_change(self) -> float | None:
        """Device time against the baseline's, as a fraction (0.1: 10 % slower); None when either has none."""
        if not self.device_ns or not self.baseline_device_ns:
            return None
        return self.device_ns / self.baseline_device_ns - 1


class _Session:
    """What --ttreport adds: a capture around each test's call, the baseline check, and the table."""

    def __init__(self, root: Path, baseline: Path | None):
        self.root, self.baseline = root, baseline
        self.results: list[_Result] = []
        # (name, folder, its result once read) of every test's report, in the tests' order: a folder, not the
        # Capture, which is let go once its report is finished
        self.reports: list[tuple[str, Path, _Result | None]] = []
        self.behind: collections.deque = collections.deque()  # captures whose writer processes are still writing
        self.warned: list[str] = []  # what finishing a report warned of (as a test's warnings): shown at the end
        self.failed: list[str] = []  # reports that could not be finished or read: shown, and the session fails

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        name = report_name(item.nodeid)
        for earlier in [entry for entry in self.behind if entry[0] == name]:  # a rerun: its folder is still locked
            self.behind.remove(earlier)
            self._finish(*earlier)
        # Without a baseline nothing in the test's result reads its report: it is finished behind the next tests.
        # Its writer process is one forked while an earlier test's report was waited for, when there is one.
        capture = ttreport.Capture(name, config=self._config(item), wait_on_close=self.baseline is not None,
                                   fork_ahead=True)
        try:
            with capture:
                outcome = yield
        except BaseException:
            # The test failed (or was skipped): its report is listed, with the error it recorded, and not
            # compared: the test has failed already.
            if capture.status is not None:
                self._closed(name, capture)
            raise
        self._closed(name, capture)
        if self.baseline is not None:  # read now (the capture waited): the gate fails this test, not the session
            result = self._result(name, capture.path)
            self.reports[-1] = (name, capture.path, result)
            self._check_baseline(result, _gate(item))
        return outcome

    def _closed(self, name: str, capture) -> None:
        self.reports.append((name, capture.path, None))
        self.behind.append((name, capture))
        while len(self.behind) > MAX_BEHIND:
            self._finish(*self.behind.popleft())

    def _finish(self, name: str, capture) -> None:
        """Wait for a report's writer; what its close says (a warning, an error) is kept for the session's end,
        not raised in whichever test happens to be running then."""
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            try:
                capture.wait()
            except (OSError, sqlite3.Error, TTReportError) as e:
                self.failed.append(f"{name}: its report {capture.path} was not finished: {e}")
            finally:  # (a Ctrl-C, raised once the report is whole, keeps what it warned of too)
                self.warned += [f"{name}: {w.category.__name__}: {w.message}" for w in said]

    def pytest_sessionfinish(self, session) -> None:
        interrupted = False
        for _, capture in self.behind:
            capture.fork_ahead = False  # no test follows: a writer forked for the next would be of no use
        while self.behind:
            try:
                self._finish(*self.behind.popleft())
            except KeyboardInterrupt:
                # A Ctrl-C while the session waits: Capture.wait finished that report first, and the rest are
                # finished too (each close is whole, its perf files written); only reading them for the table is
                # left out.
                interrupted = True
        if interrupted:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
            self.warned.append(f"interrupted: every report is finished ({len(self.reports)}); the table is left out "
                               f"(`ttreport ls {self.root}` lists them)")
            return
        for name, path, result in self.reports:
            try:
                self.results.append(result or self._result(name, path))
            except (OSError, sqlite3.Error, TTReportError) as e:
                self.failed.append(f"{name}: its report {path} cannot be read: {e}")
        if self.failed and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a report a CI run was asked for is missing

    def _config(self, item):
        marker = item.get_closest_marker(MARKER)
        given = marker.kwargs.get("config", marker.args[0] if marker.args else None) if marker else None
        if given is not None and not isinstance(given, ttreport.Config):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.ttreport(config=...) takes a ttreport.Config, got "
                                    f"{type(given).__name__} {given!r}")
        base = given if given is not None else ttreport.Config(tensors="outputs")
        return dataclasses.replace(base, root=self.root, overwrite=True)

    def _result(self, name: str, path: Path) -> _Result:
        # deferred: this plugin loads in every pytest run; the reading side only under --ttreport
        from ttreport.read.report import Report

        with Report(path) as r:
            s = r.summary()
            device = _device_ns(r)
        return _Result(name, s.operations, s.top_level_seconds, device, s.peak_l1["bytes"] if s.peak_l1 else None,
                       len(s.errors), path)

    def _check_baseline(self, result: _Result, gate: dict) -> None:
        # deferred: this plugin loads in every pytest run; the reading side only under --ttreport (and compare's
        # torch, through metrics, only with a baseline to compare against)
        from ttreport.read.compare import compare_reports
        from ttreport.read.report import Report

        reference = self.baseline / result.name
        if not reference.is_dir():
            result.baseline = "no baseline"
            pytest.fail(f"ttreport: no baseline report {reference} for this test; make one with "
                        f"pytest --ttreport --ttreport-root {self.baseline} on a known-good version", pytrace=False)
        strict, max_slowdown = gate.pop("strict"), gate.pop("max_slowdown")
        with Report(reference) as r:
            result.baseline_device_ns = _device_ns(r)
            if result.ops == 0 and r.count_operations() == 0:
                result.baseline = "match"  # neither run launched an op: nothing can have diverged
                return
        try:
            comparison = compare_reports(reference, result.path, strict=strict, **gate)
        except TTReportError as e:  # no stored tensors, a damaged or newer report: one line, the fix in it
            result.baseline = "not compared"
            pytest.fail(f"ttreport: cannot compare with the baseline {reference}: {e}", pytrace=False)
        with Report(reference) as ra, Report(result.path) as rb:
            changes = _changes(comparison, ra, rb, strict)
        change = result.device_change
        if not changes and max_slowdown is not None and change is not None and change > max_slowdown:
            result.baseline = f"device time {change:+.1%}"
            pytest.fail(f"ttreport: estimated device time {_ns(result.device_ns)} is {change:+.1%} against the "
                        f"baseline's {_ns(result.baseline_device_ns)} (max slowdown {max_slowdown:.1%})\n"
                        f"  baseline: {reference}\n  this run: {result.path}\n"
                        f"  details:  ttreport compare --timing {reference} {result.path}", pytrace=False)
        if not changes:
            result.baseline = "match"
            return
        first = changes[0]  # the first change in this run's op order
        result.baseline = f"{first.kind} at {first.where} ({first.name})"
        more = "; ".join(f"{c.name} {c.kind} at {c.where}" for c in changes[1:6]) + (" ..." if len(changes) > 6 else "")
        lines = [f"ttreport: {first.name} {first.what}"]
        lines += [f"  and {len(changes) - 1} more: {more}"] if more else []
        lines += [f"  baseline: {reference}", f"  this run: {result.path}",
                  f"  details:  ttreport compare {'--strict ' if strict else ''}{reference} {result.path}",
                  "  if the change is intended, remake the baseline: "
                  f"pytest --ttreport --ttreport-root {self.baseline}"]
        pytest.fail("\n".join(lines), pytrace=False)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        tr = terminalreporter
        for line in self.warned:
            tr.write_line(f"ttreport: {line}", yellow=True)
        for line in self.failed:
            tr.write_line(f"ttreport: {line}", red=True)
        if not self.results:
            return
        # deferred: this plugin loads in every pytest run; the reading side only under --ttreport
        from ttreport.read import terminal

        tr.write_sep("=", f"ttreport: {len(self.results)} test report(s) under {self.root}")
        columns = ["test", "ops", "device (est.)", "host time", "peak L1", "errors"] + (
            ["baseline", "device vs baseline"] if self.baseline else []) + ["report"]
        rows = [(r.name, r.ops, _ns(r.device_ns), terminal.human_seconds(r.seconds),
                 terminal.human_bytes(r.peak_l1_bytes), r.errors,
                 *([r.baseline, "" if r.device_change is None else f"{r.device_change:+.1%}"] if self.baseline else []),
                 str(r.path)) for r in self.results]
        for line in terminal.plain_table(columns, rows):
            tr.write_line(line)


def _gate(item) -> dict:
    """The baseline gate's settings for one test: the marker's rtol/atol/pcc/strict over the command line's."""
    opt = item.config.getoption
    gate = {t: opt(f"ttreport_{t}") for t in ("rtol", "atol", "pcc")}
    gate["strict"] = not opt("ttreport_lenient")
    gate["max_slowdown"] = opt("ttreport_max_slowdown")
    marker = item.get_closest_marker(MARKER)
    for key, value in (marker.kwargs.items() if marker else ()):
        if key == "config":
            continue
        if key not in gate:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.ttreport({key}=...) is not an option; it takes "
                                    f"config=, rtol=, atol=, pcc=, strict= and max_slowdown=")
        if key == "strict" and not isinstance(value, bool) or key != "strict" and not (
                value is None or isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.ttreport({key}={value!r}) takes "
                                    + ("True or False" if key == "strict" else "a number >= 0"))
        gate[key] = value
    return gate


def _device_ns(report) -> int | None:
    """The test's estimated device time: a step's on average over the active steps of a run captured in steps
    (ttreport.steps; warm-up left out), so that runs of different step counts compare; else the whole run's."""
    timed = [s.device_ns for s in report.steps() if s.phase == "active" and s.device_ns is not None]
    return round(sum(timed) / len(timed)) if timed else None


def _ns(ns) -> str:
    # deferred: this plugin loads in every pytest run; the reading side only under --ttreport
    from ttreport.read.device_time import human_ns

    return human_ns(ns)


# What an aligned op's tensors must keep for the gate: the texts TT-NN writes for each (tensors table).
_SPEC_SQL = """
SELECT x.{index}, t.shape, t.dtype, t.layout, t.memory_config FROM {table} x JOIN tensors t USING (tensor_id)
WHERE x.operation_id = ? ORDER BY x.{index}"""
_SPEC_FIELDS = ("shape", "dtype", "layout", "memory config")


def _specs(report, operation_id: int) -> dict:
    return {(side, row[0]): row[1:] for side, table, index in (("input", "input_tensors", "input_index"),
                                                               ("output", "output_tensors", "output_index"))
            for row in report.execute(_SPEC_SQL.format(table=table, index=index), (operation_id,))}


@dataclass(frozen=True)
class Change:
    """One way a test's run differs from its baseline: `kind` (replaced, removed, added, changed, diverged), the
    op's name, where (this run's op, or the baseline's for an op this run lacks) and what, in a sentence."""

    order: float  # position in this run's op order (an op this run lacks sits after its predecessor's partner)
    kind: str
    name: str
    where: str
    what: str


def _changes(comparison, ra, rb, strict: bool) -> list[Change]:
    """Every way this run (B) differs from the baseline (A), in B's op order: ops added, removed or replaced (with
    strict), an aligned op's changed tensor specs, diverged values."""
    changes = []
    if strict:
        added = dict(comparison.only_b)
        partner = {p.a_id: p.b_id for p in comparison.pairs}
        for a_id, name in comparison.only_a:
            before = max((b for a, b in partner.items() if a < a_id), default=0)
            replaced_by = next((n for i, n in added.items() if i > before), None)
            verb = f"was replaced by {replaced_by}" if replaced_by else "was removed"
            changes.append(Change(before + 0.5, "replaced" if replaced_by else "removed", name,
                                  f"baseline op {a_id}", f"(baseline op {a_id}) {verb}: the op sequence changed"))
        for b_id, name in added.items():
            changes.append(Change(b_id, "added", name, f"op {b_id}",
                                  f"(this run's op {b_id}) was added: the baseline has no such op here"))
    for p in comparison.pairs:
        a, b = _specs(ra, p.a_id), _specs(rb, p.b_id)
        changed = next((key for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)), None)
        if changed is not None:
            side, index = changed
            if a.get(changed) is None or b.get(changed) is None:
                what = f"{side} {index} is {'new' if a.get(changed) is None else 'gone'}"
            else:
                i = next(i for i, (x, y) in enumerate(zip(a[changed], b[changed])) if x != y)
                what = f"{side} {index}'s {_SPEC_FIELDS[i]} changed: {a[changed][i]} -> {b[changed][i]}"
            changes.append(Change(p.b_id, "changed", p.name, f"op {p.b_id}", f"(this run's op {p.b_id}) {what}"))
        elif p.status != "match":
            changes.append(Change(p.b_id, "diverged", p.name, f"op {p.b_id}", f"diverged from the baseline (baseline "
                                  f"op {p.a_id}, this run's op {p.b_id}): {p.reason}"))
    return sorted(changes, key=lambda c: c.order)
