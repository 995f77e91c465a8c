"""The examples in docstrings run: each module of ttreport and device_sim that holds a `>>>` example, and each
registered op's own example (issue 32), family by family.

    .venv/bin/python -m pytest tests/test_doctests.py -q

A test of its own rather than pytest's --doctest-modules over the packages: that would import every module,
the optional ones too (ttreport.store needs psycopg), and run outside tests/conftest.py's fixtures.

An op's example is written as a reader types it after three lines that every op's example takes as given, so
that 288 examples stay a line or three each and share one device per family:

    >>> import torch
    >>> import device_sim as ttnn
    >>> device = ttnn.open_device(device_id=0)
"""

import doctest
import importlib
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
from device_sim import registry

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ttreport", "device_sim")
# pytest's own default for doctests: `...` in an expected output matches anything.
FLAGS = doctest.ELLIPSIS


def op_docstrings() -> set[str]:
    return {op.function.__doc__ for op in registry.registered_ops() if op.function.__doc__}


def modules_with_a_prompt() -> list[str]:
    """The dotted name of every module under PACKAGES whose source holds a `>>>`, found without importing."""
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if ">>>" in path.read_text():
                parts = path.relative_to(ROOT).with_suffix("").parts
                names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def modules_with_examples() -> list[str]:
    """The dotted name of every module under PACKAGES with a docstring example other than a registered op's (those
    run below, with the names they take as given)."""
    ops, finder = op_docstrings(), doctest.DocTestFinder()
    return [name for name in modules_with_a_prompt()
            if any(t.examples and t.docstring not in ops for t in finder.find(importlib.import_module(name)))]


def run_examples(tests: list[doctest.DocTest]) -> str:
    """Runs each docstring's examples; returns doctest's report of the failures ('' when all pass)."""
    runner, report = doctest.DocTestRunner(optionflags=FLAGS), []
    for test in tests:
        runner.run(test, out=report.append)
    return "".join(report)


def test_the_packages_hold_examples():
    assert len(modules_with_examples()) >= 40  # 47 when this test was written


def test_every_prompt_is_in_a_docstring_example_that_runs():
    # a `>>>` that doctest does not find (in a comment or a plain string) would never be run
    finder = doctest.DocTestFinder()
    unrun = [name for name in modules_with_a_prompt()
             if not any(t.examples for t in finder.find(importlib.import_module(name)))]
    assert unrun == [], "each of these has a '>>>' that is no docstring example"


@pytest.mark.parametrize("name", modules_with_examples())
def test_each_modules_examples_run(name):
    ops = op_docstrings()
    tests = doctest.DocTestFinder().find(importlib.import_module(name))
    assert run_examples([t for t in tests if t.examples and t.docstring not in ops]) == ""


def op_families() -> dict[str, list[registry.Op]]:
    """The registered ops with an example, by the device_sim/ops module that registers them."""
    families: dict[str, list[registry.Op]] = {}
    for op in registry.registered_ops():
        if ">>>" in (op.function.__doc__ or ""):
            families.setdefault(op.category, []).append(op)
    return families


@pytest.mark.parametrize("family", sorted(op_families()))
def test_each_ops_example_runs(family):
    ops = op_families()[family]
    # A collective's example opens a mesh of its own, which needs chip 0 closed: its family is given no device.
    device = None if all("open_mesh_device" in op.function.__doc__ for op in ops) else ttnn.open_device(device_id=0)
    try:
        parser, tests = doctest.DocTestParser(), []
        for op in ops:
            namespace = {"torch": torch, "ttnn": ttnn, "device": device}  # each op's example starts afresh
            source = Path(op.function.__code__.co_filename)
            tests.append(parser.get_doctest(op.function.__doc__, namespace, op.name, str(source),
                                            op.function.__code__.co_firstlineno))
        assert run_examples(tests) == ""
    finally:
        if device is not None:
            ttnn.close_device(device)


def test_every_registered_op_has_an_example():
    missing = [op.name for op in registry.registered_ops() if ">>>" not in (op.function.__doc__ or "")]
    assert missing == [], "give each a docstring example (a factory's ops share one, as eltwise's do)"
