"""ttreport: capture a TT-NN model's op history into a SQLite report, and read it back.

    with ttreport.capture("my-run", config=ttreport.Config(tensors="outputs")) as report:
        model(x)
"""

from ttreport.capture import Capture, capture, profile
from ttreport.check import check
from ttreport.compare import ReportComparison, compare_reports
from ttreport.config import Config
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
from ttreport.metrics import Comparison, compare_tensors
from ttreport.report import Report, open  # noqa: A004
from ttreport.storage import load_tensor

__all__ = [
    "Capture", "capture", "profile", "Config", "load_tensor", "check",
    "TTReportError", "ConfigError", "ReportExistsError", "CaptureActiveError", "NeedsUpgradeError",
    "NewerSchemaError", "ReportInUseError", "ReportPathError", "TensorFileError", "ReportIncompleteWarning",
    "ComparisonError",
    "Comparison", "compare_tensors", "ReportComparison", "compare_reports",
    "Report", "open",
]
