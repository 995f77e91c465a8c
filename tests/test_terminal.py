"""Terminal output: rich tables fitted to a terminal with colour, plain text through a pipe, and progress
bars on stderr only when it is a terminal (real pseudo-terminals and pipes, in subprocesses)."""

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from ttreport.read import terminal

ROWS = [(1, "ttnn.matmul", "1.25 ms", "a long output description " * 4), (22, "ttnn.add", "12.0 us", "x")]


def test_a_table_through_a_pipe_is_plain_aligned_text(capsys):
    terminal.echo_table(["id", "name", "duration", "outputs"], ROWS)
    out = capsys.readouterr().out
    assert "\x1b[" not in out  # no colour
    lines = out.splitlines()
    assert lines[0].split() == ["id", "name", "duration", "outputs"] and set(lines[1]) == {"-", " "}
    assert lines[3].startswith("22  ttnn.add")  # numbers right-aligned to the widest


def test_a_table_on_a_terminal_fits_its_width_in_colour():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=60, color_system="standard")
    terminal.echo_table(["id", "name", "duration", "outputs"], ROWS, console=console)
    text = buffer.getvalue()
    assert "\x1b[" in text  # the headers in colour
    visible = [line for line in _strip(text).splitlines() if line.strip()]
    assert max(len(line) for line in visible) <= 60
    assert sum("a long output description" in line for line in visible) >= 1  # folded, not cut off
    assert "[1, 32]" in _strip(_table_of([(1, "[1, 32]")]))  # a value is text, not rich markup


def test_units_are_human_sized():
    assert terminal.human_bytes(1536) == "1.5 KiB" and terminal.human_bytes(12) == "12 B"
    assert terminal.human_seconds(0.0025) == "2.50 ms" and terminal.human_seconds(3) == "3.00 s"
    assert terminal.human_seconds(b"\x00") == "<1 bytes>"  # a damaged value is shown, not a TypeError


PROGRESS = """
import time
from ttreport.read import terminal
with terminal.progress("working", total=3, unit="steps") as advance:
    for _ in range(3):
        time.sleep(0.4)
        advance()
print("done")
"""


def test_progress_is_drawn_on_a_terminal_stderr():
    main, child = pty.openpty()
    done = subprocess.run([sys.executable, "-c", PROGRESS], stdout=subprocess.PIPE, stderr=child, timeout=120,
                          env={**os.environ, "TERM": "xterm", "COLUMNS": "100"})
    os.close(child)
    drawn = _read_all(main)
    assert done.returncode == 0 and done.stdout.decode().strip() == "done"
    assert "working" in drawn and "steps" in drawn


def test_progress_stays_off_a_pipe_and_quick_work_draws_nothing():
    done = subprocess.run([sys.executable, "-c", PROGRESS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "" and done.stdout.strip() == "done"
    quick = PROGRESS.replace("time.sleep(0.4)", "pass")
    main, child = pty.openpty()
    done = subprocess.run([sys.executable, "-c", quick], stdout=subprocess.PIPE, stderr=child, timeout=120)
    os.close(child)
    assert done.returncode == 0 and "working" not in _read_all(main)


def _table_of(rows) -> str:
    buffer = io.StringIO()
    terminal.echo_table(["id", "value"], rows, console=Console(file=buffer, force_terminal=True, width=80))
    return buffer.getvalue()


def _strip(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child's side is closed and everything has been read
            break
        if not data:
            break
        chunks.append(data)
    os.close(fd)
    return b"".join(chunks).decode(errors="replace")


MODEL = """
import time
import torch
import ttnn
device = ttnn.open_device(0)
for _ in range(20):
    ttnn.relu(ttnn.from_torch(torch.randn(32, 32), layout=ttnn.TILE, device=device))
    time.sleep(0.05)
print("model done")
"""


def test_ttreport_run_shows_progress_on_a_terminal_and_the_script_output_stays_on_stdout(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(MODEL)
    main, child = pty.openpty()
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "run", "--name", str(tmp_path / "rep"), str(script)],
                          stdout=subprocess.PIPE, stderr=child, timeout=300, cwd=tmp_path,
                          env={**os.environ, "TERM": "xterm", "COLUMNS": "120"})
    os.close(child)
    drawn = _read_all(main)
    assert done.returncode == 0, drawn
    assert done.stdout.decode().splitlines()[0] == "model done"  # piped stdout is the script's, untouched
    assert "running model.py" in drawn and "records written" in drawn
    assert "model done" not in drawn


def test_figures_with_units_are_right_aligned_on_a_terminal():
    text = _strip(_table_of([(1, "1.25 ms"), (2, "12.0 us"), (3, "")]))
    ends = {line.rstrip().__len__() for line in text.splitlines() if " ms" in line or " us" in line}
    assert len(ends) == 1  # both figures end in the same column


def test_summary_on_a_narrow_terminal_fits_it():
    sample = Path(__file__).resolve().parents[1] / "sample_reports" / "demo"
    main, child = pty.openpty()
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "summary", str(sample)], stdout=child, stderr=child,
                          timeout=120, env={**os.environ, "COLUMNS": "70", "TERM": "xterm"})
    os.close(child)
    shown = _strip(_read_all(main))
    assert done.returncode == 0, shown
    lines = shown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("time by op name"))
    end = next(i for i, line in enumerate(lines) if line.startswith("peak L1"))
    table = lines[start + 1:end]
    assert max(len(line) for line in table) <= 70  # the table is fitted (an error's one line may run longer)
    assert any("ttnn.add" in line for line in table)
    assert any("─" in line for line in table)  # drawn by rich (its header rule), not the plain dashes
