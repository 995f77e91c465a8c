"""The examples in docstrings run: each module of ttreport and device_sim that holds a `>>>` example.

    .venv/bin/python -m pytest tests/test_doctests.py -q

A test of its own rather than pytest's --doctest-modules over the packages: that would import every module,
the optional ones too (ttreport.store needs psycopg), and run outside tests/conftest.py's fixtures.
"""

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ttreport", "device_sim")
# pytest's own default for doctests: `...` in an expected output matches anything.
FLAGS = doctest.ELLIPSIS


def modules_with_examples() -> list[str]:
    """The dotted name of every module under PACKAGES whose source holds a `>>>`, found without importing."""
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if ">>>" in path.read_text():
                parts = path.relative_to(ROOT).with_suffix("").parts
                names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def run_examples(tests: list[doctest.DocTest]) -> str:
    """Runs each docstring's examples; returns doctest's report of the failures ('' when all pass)."""
    runner, report = doctest.DocTestRunner(optionflags=FLAGS), []
    for test in tests:
        runner.run(test, out=report.append)
    return "".join(report)


def test_the_packages_hold_examples():
    assert len(modules_with_examples()) >= 40  # 47 when this test was written


@pytest.mark.parametrize("name", modules_with_examples())
def test_each_modules_examples_run(name):
    tests = [t for t in doctest.DocTestFinder().find(importlib.import_module(name)) if t.examples]
    assert tests, f"{name} has a '>>>' that is no docstring example"
    assert run_examples(tests) == ""
