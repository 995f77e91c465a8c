"""README's lists stay true to the code: every op family, CLI command and doc is listed, every op it names runs.

    .venv/bin/python -m pytest tests/test_readme_lists.py -q
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import device_sim
from device_sim import registry
from ttreport.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def op_section() -> str:
    text = README.read_text()
    start = text.index("## The ops device_sim runs")
    return text[start:text.index("\n## ", start + 1)]


def table_rows() -> list[tuple[str, str]]:
    rows = [line.split("|")[1:3] for line in op_section().splitlines() if line.startswith("| ")]
    return [(family.strip(), ops.strip()) for family, ops in rows[1:]]  # the header row left out


def test_every_module_that_registers_ops_is_a_family_in_the_readme():
    listed = {m for family, _ in table_rows() for m in re.findall(r"`(\w+)`", family)}
    modules = {op.function.__module__.rsplit(".", 1)[-1] for op in registry.registered_ops()}
    assert modules - listed == set(), "add these device_sim/ops modules to README's op table"
    assert listed - modules == set(), "README's op table names modules that register no op"


def test_every_op_the_readme_names_is_registered():
    names = {op.name.removeprefix("ttnn.") for op in registry.registered_ops()}
    named = [n for _, ops in table_rows() for n in re.findall(r"`([\w.]+)`", ops)]
    assert len(named) > 40
    unknown = [n for n in named if not any(r == n or r.endswith("." + n) for r in names)]
    assert unknown == []


def test_what_is_not_emulated_is_named_where_the_readme_says():
    section = op_section()
    assert "device_sim.NOT_EMULATED" in section and "generic_op" in device_sim.NOT_EMULATED
    for doc in re.findall(r"docs/\w+\.md", section):
        assert (README.parent / doc).is_file(), doc


def test_every_cli_command_is_in_the_readmes_command_table():
    text = README.read_text()
    table = text[text.index("| command | what it shows |"):text.index("REPORT is a report folder")]
    listed = set(re.findall(r"`ttreport ([a-z-]+)", table))
    shown = {name for name, command in main.commands.items() if not command.hidden}  # as `ttreport --help` lists
    assert shown - listed == set(), "add these commands to README's command table"


def test_every_doc_is_in_the_readmes_table_of_where_things_are():
    text = README.read_text()
    table = text[text.index("## Where things are"):]
    docs = {f"docs/{p.name}" for p in (README.parent / "docs").glob("*.md")}
    assert docs - set(re.findall(r"`(docs/\w+\.md)`", table)) == set(), "add these docs to README's table"


def test_the_readmes_ttnn_visualizer_command_uses_flags_the_installed_visualizer_has():
    command = next(line.strip() for line in README.read_text().splitlines() if "ttnn-visualizer --" in line)
    flags = re.findall(r"\s(--[a-z-]+)", command)
    assert {"--profiler-path", "--performance-path", "--host"} <= set(flags)
    exe = shutil.which("ttnn-visualizer", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("ttnn-visualizer is not installed here (pip install -e '.[dev]' brings it)")
    usage = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=120).stdout
    assert [f for f in flags if f not in usage] == []
