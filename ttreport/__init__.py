"""ttreport: capture a TT-NN model's op history into a SQLite report, and read it back.

    with ttreport.capture("my-run", config=ttreport.Config(tensors="outputs")) as report:
        model(x)
"""

import sys
import types
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
    from ttreport.capture import Capture, capture, profile
    from ttreport.check import check
    from ttreport.compare import ReportComparison, compare_reports
    from ttreport.config import Config
    from ttreport.metrics import Comparison, compare_tensors
    from ttreport.report import Report, open  # noqa: A004
    from ttreport.storage import load_tensor

# Where each public name lives. Importing device_sim or torch takes ~1.5 s, so `ttreport summary`
# and `import ttreport.report` import neither: a name is imported the first time it is used (PEP 562).
_LAZY = {
    "Capture": "capture", "capture": "capture", "profile": "capture", "check": "check",
    "ReportComparison": "compare", "compare_reports": "compare", "Config": "config",
    "Comparison": "metrics", "compare_tensors": "metrics", "Report": "report", "open": "report",
    "load_tensor": "storage",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ttreport' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"ttreport.{module}"), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


class _Package(types.ModuleType):
    # Importing the submodule ttreport.capture (or .check) sets the package's attribute of that name to
    # the module; the public name is the function of the same name, so that is what is kept.
    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and _LAZY.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "Capture", "capture", "profile", "Config", "load_tensor", "check",
    "TTReportError", "ConfigError", "ReportExistsError", "CaptureActiveError", "NeedsUpgradeError",
    "NewerSchemaError", "ReportInUseError", "ReportPathError", "TensorFileError", "ReportIncompleteWarning",
    "ComparisonError",
    "Comparison", "compare_tensors", "ReportComparison", "compare_reports",
    "Report", "open",
]
