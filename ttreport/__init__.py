"""ttreport: capture a TT-NN model's op history into a SQLite report, and read it back.

    with ttreport.capture("my-run", config=ttreport.Config(tensors="outputs")) as report:
        model(x)
    ttreport.open(report.path).summary()

The layers, each importing only those above it in this list (tests/test_import_graph.py fails on any import
ring, imports inside functions counted; such an import only defers a heavy dependency, and says which):

  floor     errors, config, folder (a report folder's names, lock and overwrite policy), wal, schema, db, steps,
            memory_text, outfile, ptfile, metrics, storage; capturing/records.py (standard library only)
  helpers   read/terminal.py, read/device_time.py: units, tables and device time, importing nothing of ttreport
  export    export/*: renders a report's rows (ops_perf, trace, html, memory, golden)
  capture   capturing/*: the hook, the op log and the writers (the close writes perf files with export.ops_perf)
  recovery  recovery.py: finishes what a killed capture left; runs capture's writer (imported only for a log)
  read      read/*: opens a report (recovering it first) and reads it; Report.export_* call export
  session   capturing/session.py: the capture's entry (ttreport.capture, profile, Capture); reads its own report
            back at close (perf files) and for Capture.summary
  store     store/*: pushes reports to PostgreSQL and reads runs back; ttreport.open (a folder or a store's run)
  top       cli, demo, pytest_plugin, ttnn_config
"""

import importlib
from typing import TYPE_CHECKING

from ttreport.errors import (
    CaptureActiveError,
    ComparisonError,
    ConfigError,
    NeedsUpgradeError,
    NewerSchemaError,
    ReportExistsError,
    ReportIncompleteWarning,
    ReportInUseError,
    ReportPathError,
    TensorFileError,
    TTReportError,
)

if TYPE_CHECKING:  # what each name is; at run time the module is imported on first use (below)
    from ttreport.capturing.session import Capture, capture, profile
    from ttreport.config import Config
    from ttreport.metrics import Comparison, compare_tensors
    from ttreport.read import Report, ReportComparison, check, compare_reports
    from ttreport.read.report import load_tensor
    from ttreport.store import open  # noqa: A004

# Where each public name lives: the capture side's entry point (ttreport.capturing.session), the reading side's
# (ttreport.read; ttreport.store's open, which opens a store's run too), or a shared module. Importing device_sim
# or torch takes ~1.5 s, so `ttreport summary` and `import ttreport.read` import neither: a name is imported the
# first time it is used (PEP 562).
_LAZY = {
    "Capture": "capturing.session", "capture": "capturing.session", "profile": "capturing.session", "check": "read",
    "ReportComparison": "read", "compare_reports": "read", "Config": "config",
    "Comparison": "metrics", "compare_tensors": "metrics", "Report": "read", "open": "store",
    "load_tensor": "read.report", "schedule": "steps",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ttreport' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ttreport.{module}"), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Capture", "capture", "profile", "Config", "load_tensor", "check",
    "TTReportError", "ConfigError", "ReportExistsError", "CaptureActiveError", "NeedsUpgradeError",
    "NewerSchemaError", "ReportInUseError", "ReportPathError", "TensorFileError", "ReportIncompleteWarning",
    "ComparisonError",
    "Comparison", "compare_tensors", "ReportComparison", "compare_reports",
    "Report", "open", "schedule",
]
