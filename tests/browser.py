"""Headless Chromium for the export tests: load a page, read its DOM and console, take a screenshot.

    page = browser.load(Path("demo.html"))        # a Page: dom (after scripts ran), console lines
    browser.screenshot(Path("demo.html"), Path("shot.png"))
    browser.blank_fraction(Path("shot.png"))      # share of pixels equal to the most common colour

Drives Debian's `chromium` on the command line (--dump-dom / --screenshot, console messages from
--enable-logging=stderr), so no driver or npm package is needed. `.ci/run` installs chromium and
the speedscope viewer (`npm install --prefix generated/npm speedscope`); tests skip, saying which is
missing, on a machine without them. Also a script: `python tests/browser.py REPORT OUT.png`
writes a screenshot of REPORT's HTML export (how docs/html_report.png is made).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEEDSCOPE = Path(os.environ.get("TTREPORT_SPEEDSCOPE", REPO / "generated/npm/node_modules/speedscope"))
_CONSOLE = re.compile(r":CONSOLE[:(]\d+\)?\] (.*)")
# Lines chromium itself prints for a sandbox-less container (no D-Bus, no GPU): not the page's.
_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
          "--no-first-run", "--disable-extensions", "--allow-file-access-from-files"]


def chromium() -> str | None:
    """The chromium executable, or None."""
    for name in (os.environ.get("TTREPORT_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if chromium() is None:
        return ("no chromium on PATH (as root: apt-get install -y chromium; .ci/run does this), "
                "or set TTREPORT_CHROMIUM")
    return None


def missing_speedscope() -> str | None:
    if (why := missing()) is not None:
        return why
    if not (SPEEDSCOPE / "dist/release/index.html").is_file():
        return (f"no speedscope viewer at {SPEEDSCOPE} (npm install --prefix generated/npm speedscope; "
                f".ci/run does this), or set TTREPORT_SPEEDSCOPE")
    return None


@dataclass
class Page:
    dom: str  # the document after its scripts ran
    console: list[str]  # every console message and uncaught error, as chromium logged them

    def text(self) -> str:
        """The DOM's text, tags dropped."""
        return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", self.dom))


def _run(args: list[str], *, timeout_s: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([chromium(), *_FLAGS, *args], capture_output=True, text=True, timeout=timeout_s,
                          check=False)


def load(url: str | Path, *, wait_ms: int = 8000, size=(1400, 1000)) -> Page:
    """Open `url` (a file path or a URL), let its scripts run for up to `wait_ms` of virtual time, and
    return its DOM and console."""
    url = url.resolve().as_uri() if isinstance(url, Path) else url
    done = _run(["--enable-logging=stderr", "--v=0", f"--virtual-time-budget={wait_ms}",
                 f"--window-size={size[0]},{size[1]}", "--dump-dom", url])
    if done.returncode != 0 or "<html" not in done.stdout:
        raise RuntimeError(f"chromium could not load {url} (exit {done.returncode}): {done.stderr[-2000:]}")
    return Page(done.stdout, [m.group(1) for m in map(_CONSOLE.search, done.stderr.splitlines()) if m])


def screenshot(url: str | Path, png: Path, *, size=(1280, 1800), wait_ms: int = 8000) -> Path:
    url = url.resolve().as_uri() if isinstance(url, Path) else url
    png.unlink(missing_ok=True)
    done = _run([f"--window-size={size[0]},{size[1]}", f"--virtual-time-budget={wait_ms}",
                 f"--screenshot={png.resolve()}", url])
    if not png.is_file():
        raise RuntimeError(f"chromium wrote no screenshot of {url} (exit {done.returncode}): {done.stderr[-2000:]}")
    return png


def blank_fraction(png: Path) -> float:
    """The share of pixels that have the image's most common colour (1.0: a blank page)."""

    counts = _colour_counts(png)
    return max(counts.values()) / sum(counts.values())


def colours(png: Path) -> int:
    """How many distinct colours the (downscaled) screenshot holds: charts bring many."""
    return len(_colour_counts(png))


def _colour_counts(png: Path) -> dict:
    from PIL import Image

    with Image.open(png) as im:
        small = im.convert("RGB").resize((320, 450))
    return {colour: n for n, colour in small.getcolors(maxcolors=320 * 450)}


def speedscope_url(trace: Path, work: Path, *, view: str = "sandwich") -> str:
    """The URL that opens `trace` in the local speedscope viewer, as its own CLI does it: the file,
    base64 in a script next to it that calls speedscope.loadFileFromBase64."""
    script = work / (trace.name + ".js")
    data = base64.b64encode(trace.read_bytes()).decode()
    script.write_text(f"speedscope.loadFileFromBase64({json.dumps(trace.name)}, {json.dumps(data)})")
    return f"{(SPEEDSCOPE / 'dist/release/index.html').resolve().as_uri()}#localProfilePath={script.resolve()}" \
           f"&view={view}"


def main(argv: list[str]) -> None:
    """python tests/browser.py REPORT OUT.png: a screenshot of REPORT's HTML export."""
    import tempfile

    import ttreport

    report, out = argv
    with tempfile.TemporaryDirectory() as tmp, ttreport.open(report) as r:
        page = r.export_html(Path(tmp) / "report.html")
        screenshot(page, Path(out), size=(1280, 1400))
    from PIL import Image

    with Image.open(out) as im:  # 256 colours keep the committed picture small and the text sharp
        im.convert("RGB").quantize(colors=256).save(out, optimize=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
