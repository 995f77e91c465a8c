"""Every file a reader writes (an export, a comparison's JSON, perf-csv's files, config.json) goes through here:
written whole into a new file beside the target, then renamed over it.

    from ttreport import outfile
    with outfile.open("demo.html", "w", encoding="utf-8") as f:
        f.write("<!DOCTYPE html>...")
    outfile.write_text("diff.json", text)

A report folder is data from elsewhere (DESIGN.md, "Trust boundary"): its `ops_perf_results.csv` may be a
symbolic link to a file of the user's, which `open(path, "w")` would overwrite through the link. Here the
bytes go to a temporary file in the same folder, opened with O_CREAT|O_EXCL|O_NOFOLLOW (never an existing
file or link), and os.replace renames it over `path`: a rename replaces a link itself, never its target.
A reader of `path` sees the old file or the whole new one, never half of it; a failed write (a full disk,
Ctrl-C) removes the temporary file and leaves `path` as it was. Imports only the standard library.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import secrets
from pathlib import Path

from ttreport.errors import TTReportError


class OutputFileError(TTReportError, OSError):
    """A file a reader was asked to write cannot be written there (no such folder, no permission, a full disk)."""


@contextlib.contextmanager
def open(path: str | os.PathLike, mode: str = "w", *, encoding: str | None = None,  # noqa: A001 - open() for writing
         newline: str | None = None):
    """A new file object for `path` ("w" text or "wb" bytes) that replaces `path` when the block ends without
    an error. A symbolic link at `path` is replaced, never followed."""
    if mode not in ("w", "wb"):
        raise ValueError(f"outfile.open writes a whole new file: mode 'w' or 'wb', not {mode!r}")
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        raise OutputFileError(f"{path} is a folder; give a file name to write (e.g. {path / 'out'})")
    # The pid and 8 random hex digits: two writers of one path (two shells exporting at once) never share one.
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as e:
        raise _error(path, e) from None
    try:
        with builtins.open(fd, mode, encoding=None if "b" in mode else encoding or "utf-8", newline=newline) as f:
            yield f
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and not isinstance(e, TTReportError):
            raise _error(path, e) from None  # a full disk or a folder made read-only meanwhile: one line
        raise


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write `text` (UTF-8) as the whole of `path`, as `open` does; returns the path."""
    with open(path, "w") as f:
        f.write(text)
    return Path(path)


def _error(path: Path, e: OSError) -> OutputFileError:
    return OutputFileError(f"cannot write {path}: {e.strerror or e}; give a file in a folder that exists and that "
                           f"you can write (with room on its disk)")
