"""Native accelerators, each optional: without a C compiler `pip install` still succeeds and the pure-Python
paths run (device_sim/allocator.py says which it uses). Everything else is declared in pyproject.toml.

_hook.c reads the records' tags and field positions from ttreport/capturing/_records.h, which is rendered here from
ttreport/capturing/records.py (standard library only, loaded by its path: nothing else of ttreport is imported)."""

import importlib.util
from pathlib import Path

from setuptools import Extension, setup

_HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_records", _HERE / "ttreport/capturing/records.py")
_records = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_records)
_header = _HERE / "ttreport/capturing/_records.h"
if not _header.exists() or _header.read_text() != _records.c_header():
    _header.write_text(_records.c_header())

setup(
    ext_modules=[
        # device_sim's bank allocator and an op output's buffer (device_sim/_native.c).
        Extension("device_sim._native", ["device_sim/_native.c"], optional=True, extra_compile_args=["-O2"]),
        # the recorder's walk over an op's caller frames (ttreport/capturing/_stacks.c; stacks.py says which runs).
        Extension("ttreport.capturing._stacks", ["ttreport/capturing/_stacks.c"], optional=True,
                  extra_compile_args=["-O2"]),
        # the recorder's begin, end and memory listener for an op log (ttreport/capturing/_hook.c; recorder.NATIVE).
        Extension("ttreport.capturing._hook", ["ttreport/capturing/_hook.c"], depends=["ttreport/capturing/_records.h"],
                  optional=True, extra_compile_args=["-O2"]),
        # the writer process's read of its own op log (ttreport/capturing/_logread.c; oplog.NATIVE).
        Extension("ttreport.capturing._logread", ["ttreport/capturing/_logread.c"],
                  depends=["ttreport/capturing/_records.h"], optional=True, extra_compile_args=["-O2"]),
        # the writer's batch loop and its rows as a SQLite virtual table (ttreport/capturing/_rows.c; writer.ROWS).
        # Needs SQLite's header (Debian's libsqlite3-dev); without it the build of this one is skipped, as any optional
        # one. It reads the records' field positions from _records.h too.
        Extension("ttreport.capturing._rows", ["ttreport/capturing/_rows.c"], depends=["ttreport/capturing/_records.h"],
                  libraries=["sqlite3"], optional=True, extra_compile_args=["-O2"]),
        # compare_tensors' one pass over a chunk of pairs (ttreport/_fold.c; metrics.NATIVE).
        Extension("ttreport._fold", ["ttreport/_fold.c"], optional=True,
                  extra_compile_args=["-O3", "-ffp-contract=off", "-Wno-psabi"]),
    ],
)
