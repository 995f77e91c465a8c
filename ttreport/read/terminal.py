"""Terminal output shared by the commands: tables through rich on a terminal, plain text elsewhere, and
progress bars on stderr.

    from ttreport.read import terminal
    with terminal.progress("comparing ops", total=len(pairs)) as advance:
        for pair in pairs:
            ...
            advance()
    terminal.echo_table(["name", "ops", "size"], [("demo", 12, 4096)], units={"size": "bytes"})

Rules every command follows through this module:
- rich is imported only when something is drawn on a terminal: the reading commands start in ~0.1 s
  and a pipe never pays for it (tests/test_cli_startup.py).
- Colour and boxes only on a tty. Piped or redirected output (and every --json/--csv) is the plain
  aligned text of `plain_table`, stable for scripts and tests.
- Progress goes to stderr, and only when stderr is a terminal: logs and CI output stay clean.
- A report is data from elsewhere: every value shown goes through `cell`, which escapes control characters
  (an ESC in an op name would retitle or clear the terminal: it prints as \x1b) and caps its length (a
  64 MiB op name printed whole, and every row padded to it, took `summary` 41 s and 3 GB).
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator


def is_terminal(stream=None) -> bool:
    """Whether `stream` (stdout by default) is an interactive terminal. TTREPORT_PLAIN=1 says no."""
    if os.environ.get("TTREPORT_PLAIN"):
        return False
    stream = sys.stdout if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or file-like stream without isatty
        return False


# -- values ---------------------------------------------------------------------------------------
# A damaged report can hold text or a BLOB where a number belongs: it is shown as it is, never a TypeError.

# Characters of a value that a terminal would act on rather than show: C0 controls but newline and tab (ESC
# starts CSI and OSC sequences; CR overwrites the line), DEL, C1 (0x9b is a one-byte CSI to some terminals),
# and the line separators and bidirectional overrides that move or reorder what follows.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# Characters of one value shown in a table: a long stack trace's few dozen lines fit; a 64 MiB name does not
# print whole or widen every row to itself. The machine formats (query --json/--csv to a file) keep it all.
VALUE_CHARS = 1000


def printable(text: str) -> str:
    """`text` with each control character written as Python writes it in a string ("\x1b", "\r", "\u202e")."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def cell(v, limit: int = VALUE_CHARS) -> str:
    """A value as a terminal view shows it: its control characters escaped, text past `limit` characters cut
    with its length said."""
    if v is None:
        return ""
    if isinstance(v, bytes):  # a BLOB: shown, not decoded
        return f"<{len(v)} bytes>"
    text = v if isinstance(v, str) else str(v)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text):,} characters)"
    return printable(text)


def json_safe(x):
    """NaN -> null and +-inf -> "inf"/"-inf": JSON has neither; a BLOB key (a damaged row's op name) as hex."""
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k.hex() if isinstance(k, bytes) else k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


def human_bytes(n) -> str:
    if n is None:
        return ""
    if not isinstance(n, (int, float)):
        return cell(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def human_seconds(s) -> str:
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return ""
    if not isinstance(s, (int, float)):
        return cell(s)
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


# -- tables ---------------------------------------------------------------------------------------

def plain_table(columns, rows, *, sample: int = 1000) -> Iterator[str]:
    """Aligned plain-text lines, made as `rows` (any iterable) is read: the widths come from the first
    `sample` rows, and a longer value later only runs past its column. Numbers are right-aligned; a
    multi-line value takes several lines. Memory stays bounded."""
    rows = iter(rows)
    first = [r for _, r in zip(range(sample), rows)]
    cells = [[cell(v) for v in row] for row in first]
    widths = [max([len(str(c))] + [len(line) for r in cells for line in r[i].splitlines()])
              for i, c in enumerate(columns)]
    numeric = [bool(first) and all(isinstance(row[i], (int, float)) or row[i] is None for row in first)
               for i in range(len(columns))]

    def lines(values):
        split = [v.splitlines() or [""] for v in values]
        for k in range(max(len(s) for s in split)):
            yield "  ".join((s[k] if k < len(s) else "").rjust(w) if num else (s[k] if k < len(s) else "").ljust(w)
                            for s, w, num in zip(split, widths, numeric)).rstrip()

    yield from lines([str(c) for c in columns])
    yield from lines(["-" * w for w in widths])
    for r in cells:
        yield from lines(r)
    del first, cells
    for row in rows:
        yield from lines([cell(v) for v in row])


# Rows drawn at once by rich: it measures every row to fit the terminal, so a longer listing is drawn in
# blocks of this many (each fitted on its own) and memory stays bounded on `ops --limit 0`.
RICH_BLOCK = 2000


def echo_table(columns, rows: Iterable, *, title: str | None = None, console=None) -> None:
    """Print a table: through rich on a terminal (fitted to its width, numbers right-aligned, headers
    in colour), else as `plain_table` lines. `console` (a rich Console) forces the rich path."""
    if console is None and not is_terminal():
        if title:
            print(title)
        for line in plain_table(columns, rows):
            print(line)
        return
    console = console or _console(stderr=False)
    rows = iter(rows)
    first = True
    while True:
        block = [r for _, r in zip(range(RICH_BLOCK), rows)]
        if not block and not first:
            return
        console.print(rich_table(columns, block, title=title if first else None, header=first))
        first = False
        if len(block) < RICH_BLOCK:
            return


def table_text(columns, rows) -> str:
    """A whole table as text for a report that is printed at once (`ttreport summary`): drawn by rich for
    the terminal's width when stdout is a terminal, else plain aligned text."""
    if not is_terminal():
        return "\n".join(plain_table(columns, rows))
    from rich.console import Console

    width = _console(stderr=False).width  # the terminal's, read before drawing into a buffer
    buffer = io.StringIO()
    Console(file=buffer, force_terminal=True, width=width, highlight=False).print(rich_table(columns, list(rows)))
    return buffer.getvalue().rstrip("\n")


def rich_table(columns, rows: list, *, title: str | None = None, header: bool = True):
    """A rich Table of `rows`; a column whose values are all numbers (or figures with units) is right-aligned."""
    from rich import box
    from rich.table import Table

    table = Table(title=title, box=box.SIMPLE_HEAD, show_header=header, header_style="bold cyan",
                  pad_edge=False, title_justify="left")
    for i, c in enumerate(columns):
        numeric = bool(rows) and all(isinstance(r[i], (int, float)) or r[i] is None
                                     or isinstance(r[i], str) and _FIGURE.match(r[i]) for r in rows)
        table.add_column(str(c), justify="right" if numeric else "left", overflow="fold")
    for r in rows:
        table.add_row(*(_escape(cell(v)) for v in r))
    return table


# A figure with its unit ("14.14 ms", "1.5 KiB", "73.0%", "+2.00 ms (1.50x)", "48.0 KiB / 96.0 KiB"): right-aligned
# like a number.
_FIGURE = re.compile(r"^$|^[+-]?[\d.,]+ ?(B|KiB|MiB|GiB|s|ms|us|%)?( \([\d.]+x\))?"
                     r"( / ([\d.,]+ ?(B|KiB|MiB|GiB)?|\?))?$")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)  # a value like "[1, 32]" is text, not rich markup


def _console(stderr: bool):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


# -- progress -------------------------------------------------------------------------------------

@contextlib.contextmanager
def progress(description: str, total: int | None = None, *, count: Callable[[], int] | None = None,
             unit: str = "", enabled: bool | None = None) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr while the block runs; yields `advance(n=1)`.

    total: the number of steps, or None for work of unknown length (a spinner with the elapsed time).
    count: read a few times a second for the figure shown instead of the advanced steps (the records a
    capture has written so far, say). unit: a word after the figures ("ops").
    enabled: None (default) draws only when stderr is a terminal; False never. Nothing is drawn for
    work that ends within half a second, so quick commands stay quiet.
    """
    if enabled is None:
        enabled = is_terminal(sys.stderr)
    if not enabled:
        yield _no_advance
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    elif count is not None:
        columns.append(TextColumn("{task.completed:,.0f}"))
    if unit:
        columns.append(TextColumn(unit))
    columns.append(TimeElapsedColumn())
    # transient: the bar leaves no line behind. What the program prints meanwhile goes above the bar, and
    # stdout is taken over for that only when it is the terminal too: `ttreport run x.py > out.txt` still
    # writes the script's output to out.txt.
    bar = Progress(*columns, console=_console(stderr=True), transient=True, refresh_per_second=8,
                   redirect_stdout=is_terminal(sys.stdout))
    task = bar.add_task(description, total=total)
    shown = [False]
    started = time.monotonic()

    def advance(n: int = 1) -> None:
        bar.update(task, advance=n)

    # A small thread starts the bar once the work has taken half a second (a slow first step shows too),
    # and reads `count` when given.
    stop = threading.Event()

    def poll():
        while not stop.wait(0.25):
            if count is not None:
                bar.update(task, completed=count())
            if not shown[0] and time.monotonic() - started >= 0.5:
                shown[0] = True
                bar.start()

    poller = threading.Thread(target=poll, name="ttreport-progress", daemon=True)
    poller.start()
    try:
        yield advance
    finally:
        stop.set()
        poller.join()
        if shown[0]:
            bar.stop()


def _no_advance(n: int = 1) -> None:
    pass
