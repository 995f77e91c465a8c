"""Every command and code block in README.md and docs/*.md runs as written, and prints what it says it prints.

    .venv/bin/python -m pytest tests/test_docs.py -q

A block is a fenced one (```) or an indented one (four spaces, after a blank line). Each is
- shell: every line is run by bash as a real subprocess, the venv's bin first on PATH (as the README's
  `. .venv/bin/activate` makes it), in a folder that holds one fresh demo report (made once per session, by
  `ttreport demo`): at generated/ttreport/reports/demo, and copied to REPORT, A and B, the placeholders the
  docs use, so a command runs as it is written; `[FOLDER]`-style optional arguments are left out. A command
  must exit 0, and every "quoted phrase" and every figure with its unit (`150.1 us`, `-192 ns`) in its comment
  must be in what it prints: that is how a doc claims an output;
- python: a doc's Python blocks, joined in order, run as one script by plain python in that folder;
- sql: docs/queries.md's, which tests/test_cookbook.py runs on the sample report;
- text: a folder layout, a formula, a text TT-NN writes: nothing to run; TEXT says which, and why.
SKIP lists what runs elsewhere, with the reason.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from ttreport.demo import cli_name

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
VENV_BIN = Path(sys.executable).parent
COMMANDS = ("ttreport", "ttnn-visualizer", "make", "pytest", "python", "URL=")

# Blocks with nothing to run: (doc, first line) -> what the block is.
TEXT = {
    ("README.md", "generated/ttreport/reports/<name>/"): "the report folder's layout",
    ("docs/design_departures.md", "<root>/<name>/"): "the report folder's layout",
    ("docs/perf_model.md", "ideal = launch + max(compute, data movement) [+ half the smaller, for matmuls]"):
        "the model's formula",
    ("docs/shard_spec_text.md",
     "MemoryConfig(memory_layout=TensorMemoryLayout::HEIGHT_SHARDED,buffer_type=BufferType::L1,"):
        "the text TT-NN writes for a sharded tensor; tests/test_visualizer_shard_spec.py checks the report's",
}

# Commands (by what they hold) that run elsewhere, with the reason.
SKIP = {
    "make demo": "the session's report is `ttreport demo`'s, which is what make demo runs after installing",
    "make test": "this suite",
    "pytest --ttreport": "tests/test_pytest_plugin.py runs the plugin's options in pytester subprocesses",
    "ttnn-visualizer": "a server; tests/test_visualizer_*.py start the real one (make visualizer-check in chromium)",
    "URL": "needs a PostgreSQL server; tests/test_store.py runs push, runs, history and query on a throwaway one",
}
# A doc's Python blocks that run elsewhere, with the reason.
SKIP_PYTHON = {
    "README.md": "tests/test_demo.py::test_the_readme_examples_run_as_written runs them in order and checks the "
                 "report they make",
}

# What a doc's `ttreport run ... model.py` runs: a script that says `import ttnn`, as a TT-NN script does.
MODEL_PY = """\
import sys
import torch
import ttnn

device = ttnn.open_device(device_id=0)
x = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE_LAYOUT, device=device)
ttnn.relu(x)
print("args:", sys.argv[1:])
"""


@dataclass(frozen=True)
class Block:
    doc: str  # README.md, docs/perf_model.md
    line: int  # its first line's number in the doc
    lang: str  # shell, python, sql or text
    text: str

    @property
    def first(self) -> str:
        return self.text.splitlines()[0].strip()


def kind(text: str, fence_lang: str) -> str:
    if fence_lang in ("python", "sql"):
        return fence_lang
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if all(line.split()[0].startswith(COMMANDS) or line.startswith(".venv/bin/") for line in lines):
        return "shell"
    try:
        ast.parse(text)
    except SyntaxError:
        return "text"
    return "python"


def doc_blocks(path: Path) -> list[Block]:
    """The fenced and indented blocks of one markdown file, in order."""
    doc, lines, found = str(path.relative_to(ROOT)), path.read_text().splitlines(), []
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if fence:
            end = lines.index("```", i + 1)
            text = "\n".join(lines[i + 1:end]) + "\n"
            found.append(Block(doc, i + 2, kind(text, fence[1]), text))
            i = end + 1
        elif lines[i].startswith("    ") and lines[i].strip() and (i == 0 or not lines[i - 1].strip()):
            end = i  # to the next blank line: the docs keep a block's shell and Python lines a blank line apart
            while end < len(lines) and lines[end].startswith("    ") and lines[end].strip():
                end += 1
            text = "\n".join(line[4:] for line in lines[i:end]).strip("\n") + "\n"
            found.append(Block(doc, i + 1, kind(text, ""), text))
            i = end
        else:
            i += 1
    return found


def all_blocks() -> list[Block]:
    return [b for path in DOCS for b in doc_blocks(path)]


def shell_lines() -> list[tuple[str, str]]:
    """(where, command line) for every line of every shell block."""
    return [(f"{b.doc}:{b.line + n}", line.strip()) for b in all_blocks() if b.lang == "shell"
            for n, line in enumerate(b.text.splitlines()) if line.strip()]


def split_comment(line: str) -> tuple[str, str]:
    """The command and its comment: the docs set a comment off by two spaces or more."""
    command, *comment = re.split(r"\s{2,}#\s", line, maxsplit=1)
    return command.strip(), "".join(comment).strip()


def claims(comment: str) -> list[str]:
    """What a comment says the command prints: its "quoted phrases" and its figures with units."""
    quoted = re.findall(r'"([^"]+)"', comment)
    rest = re.sub(r'"[^"]+"', "", comment)
    figures = re.findall(r"[-+]?\d+(?:\.\d+)? (?:ns|us|ms|s|B|KiB|MiB|GiB)\b", rest)
    return quoted + figures


def skip_reason(command: str) -> str | None:
    return next((reason for held, reason in SKIP.items() if held in command), None)


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="session")
def docs_folder(tmp_path_factory):
    """A folder as a reader's checkout has it after `make demo`: one demo report, made once for every test here,
    copied to the names the docs use for a report (REPORT, A, B), the committed sample, and a TT-NN script."""
    folder = tmp_path_factory.mktemp("docs")
    (folder / "generated" / "ttreport" / "reports").mkdir(parents=True)  # the root a capture here writes under
    made = run_shell(folder, "ttreport demo", timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr
    demo = folder / "generated" / "ttreport" / "reports" / "demo"
    for name in ("REPORT", "A", "B"):
        shutil.copytree(demo, folder / name)
    shutil.copytree(ROOT / "sample_reports", folder / "sample_reports")
    (folder / "model.py").write_text(MODEL_PY)
    return folder, made.stdout


def run_shell(folder: Path, command: str, timeout: int = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", "TTREPORT_PLAIN": "1"}
    env.pop("TTREPORT_CONFIG", None)
    return subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_every_block_is_known():
    blocks = all_blocks()
    assert len(blocks) >= 30  # 38 when this test was written
    text = {(b.doc, b.first) for b in blocks if b.lang == "text"}
    assert text - set(TEXT) == set(), "a block that is neither a command nor Python: run it here, or list it in TEXT"
    assert set(TEXT) - text == set(), "TEXT lists a block the docs no longer have"


@pytest.mark.parametrize("where, line", shell_lines(), ids=[w for w, _ in shell_lines()])
def test_each_command_runs_and_prints_what_its_comment_says(docs_folder, where, line):
    command, comment = split_comment(line)
    reason = skip_reason(command)
    if reason:
        pytest.skip(reason)
    folder, _ = docs_folder
    done = run_shell(folder, re.sub(r"\s\[[A-Z]+\]", "", command))  # [FOLDER]: an optional argument, left out
    assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
    out = flat(done.stdout)
    for claim in claims(comment):
        assert flat(claim) in out, f"{where}: {command} does not print {claim!r}:\n{done.stdout}"
    if " whatif " in f" {command} ":  # an example of a change is one that changes an estimate
        assert "no op's estimate changes" not in out, f"{where}: {command} changes nothing"


def python_docs() -> list[str]:
    return sorted({b.doc for b in all_blocks() if b.lang == "python"})


@pytest.mark.parametrize("doc", python_docs())
def test_each_docs_python_blocks_run_in_order_under_plain_python(docs_folder, doc):
    reason = SKIP_PYTHON.get(doc)
    if reason:
        pytest.skip(reason)
    folder, _ = docs_folder
    script = "".join(b.text for b in all_blocks() if b.doc == doc and b.lang == "python")
    path = folder / (doc.replace("/", "_") + ".py")
    path.write_text(script)
    done = run_shell(folder, f"python {path.name}")
    assert done.returncode == 0, f"{doc}'s Python blocks, run as {path}:\n{done.stdout}{done.stderr}"


def test_the_demos_next_steps_run_and_its_whatif_changes_an_estimate(docs_folder):
    folder, printed = docs_folder
    lines = printed.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("next:"))
    hints = [split_comment(line.removeprefix("next:").strip())[0] for line in lines[start:]
             if line.strip() and not line.startswith(("trace:", "html:"))]
    commands = [h for h in hints if h.startswith(("ttreport ", ".venv/bin/ttreport "))]
    assert len(commands) == 3 and any(" whatif " in c for c in commands), hints
    for command in commands:
        done = run_shell(folder, command)
        assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
        assert "no op's estimate changes" not in done.stdout, f"{command} changes nothing"
    assert all((ROOT / h).is_file() for h in hints if h not in commands), hints  # docs/queries.md


def test_the_demo_names_the_cli_as_a_shell_without_the_venv_on_path_reaches_it(monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # `make demo` in a shell that never activated the venv
    assert cli_name() == os.path.relpath(VENV_BIN / "ttreport", ROOT)  # .venv/bin/ttreport
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}/usr/bin:/bin")
    assert cli_name() == "ttreport"


def inline_commands() -> list[tuple[str, str]]:
    """(doc, span) for every `ttreport ...` code span in the prose: a command's form, its placeholders left in."""
    return [(str(path.relative_to(ROOT)), span) for path in DOCS
            for span in re.findall(r"`(?:\.venv/bin/)?(ttreport [^`]+)`", path.read_text())]


def test_every_command_the_prose_names_exists_with_the_options_it_names():
    from ttreport.cli import main

    spans = inline_commands()
    assert len(spans) >= 40  # 49 when this test was written
    wrong = []
    for doc, span in spans:
        name, *words = span.split()[1:]
        if name == "COMMAND":  # `ttreport COMMAND --help`
            continue
        command = main.commands.get(name)
        if command is None:
            wrong.append(f"{doc}: `{span}`: no command {name!r}")
            continue
        options = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)} | {"--help"}
        wrong += [f"{doc}: `{span}`: {name} has no option {w}" for w in words
                  if w.strip("[]").startswith("--") and w.strip("[]").split("=")[0] not in options]
    assert wrong == []
