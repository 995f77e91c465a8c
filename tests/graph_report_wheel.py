"""TT-NN's own importer, ttnn/graph_report.py, loaded straight out of the ttnn 0.81.1 wheel (issue 31 item 3).

The wheel is downloaded, never installed: `make test` fetches it into generated/ttnn-wheel/ when it is missing,
with the command in DOWNLOAD below (102 MB; pip needs the platform flags because the wheel is built for
manylinux_2_34 and CPython 3.10 only). graph_report.py is pure Python: its one module-level import from ttnn is
the sibling stack_trace_source.py (also read from the wheel), and its one third-party import is loguru's
`logger`, of which it calls only `warning` and `info` with ready-made f-strings, so a stdlib logger stands in
for it. ttnn's own __init__.py (C++ extensions) is never run.

The wheel's graph_report.py is newer than the checkout's at peer/TT_METAL_COMMIT (2,659 lines against 1,520; its
database schema 3.5 against 2): it refuses a report whose metadata has no `rank` (device_sim writes rank 0 of 1,
as get_report() does), fills nodes.operation_id with the op's id (the older one wrote 0), and adds per-rank
columns, storage_type and the sub-device tables, which the differential tests do not compare.

    graph_report = graph_report_wheel.load()       # or pytest.skip, naming DOWNLOAD
    graph_report.import_report("report.json", "out_dir")
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WHEEL = REPO / "generated" / "ttnn-wheel" / "ttnn-0.81.1-cp310-cp310-manylinux_2_34_x86_64.whl"
DOWNLOAD = (f".venv/bin/pip download --no-deps --only-binary=:all: --platform manylinux_2_34_x86_64 "
            f"--python-version 3.10 ttnn==0.81.1 -d {WHEEL.parent.relative_to(REPO)}  (or: make test)")
# The package name the two files are loaded under: not `ttnn`, which device_sim may be installed as.
PACKAGE = "ttnn_0_81_1_wheel"

needs_wheel = pytest.mark.skipif(not WHEEL.exists(), reason=f"no ttnn 0.81.1 wheel at {WHEEL}: run {DOWNLOAD}")


def load() -> types.ModuleType:
    """ttnn/graph_report.py from the wheel, as the module `ttnn_0_81_1_wheel.graph_report` (loaded once)."""
    if f"{PACKAGE}.graph_report" in sys.modules:
        return sys.modules[f"{PACKAGE}.graph_report"]
    if not WHEEL.exists():
        pytest.skip(f"no ttnn 0.81.1 wheel at {WHEEL}: run {DOWNLOAD}")
    package = types.ModuleType(PACKAGE)
    package.__path__ = []  # a package, so graph_report's `from .stack_trace_source import ...` resolves
    sys.modules[PACKAGE] = package
    loguru = types.ModuleType("loguru")
    loguru.logger = logging.getLogger("ttnn.graph_report")
    shadowed = sys.modules.get("loguru")
    sys.modules["loguru"] = loguru
    try:
        with zipfile.ZipFile(WHEEL) as wheel:
            for name in ("stack_trace_source", "graph_report"):
                _exec(wheel, name)
    except BaseException:
        # a half-run module left in sys.modules would be handed to the next caller as if it had loaded
        for name in (PACKAGE, f"{PACKAGE}.stack_trace_source", f"{PACKAGE}.graph_report"):
            sys.modules.pop(name, None)
        raise
    finally:
        if shadowed is None:
            del sys.modules["loguru"]
        else:
            sys.modules["loguru"] = shadowed
    return sys.modules[f"{PACKAGE}.graph_report"]


def _exec(wheel: zipfile.ZipFile, name: str) -> None:
    # __file__ is the path inside the wheel, as zipimport names it (graph_report asks git about its parents[2],
    # generated/, for report_metadata's git_sha; nothing compared here reads that)
    origin = f"{WHEEL}/ttnn/{name}.py"
    spec = importlib.util.spec_from_loader(f"{PACKAGE}.{name}", loader=None, origin=origin)
    module = importlib.util.module_from_spec(spec)
    module.__file__ = origin
    sys.modules[spec.name] = module
    exec(compile(wheel.read(f"ttnn/{name}.py"), origin, "exec"), module.__dict__)
