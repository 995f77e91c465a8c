"""The reading side: what opens a finished report, with one entry point for it.

    from ttreport.read import open
    with open("generated/ttreport/reports/demo") as report:   # the same as ttreport.open(...)
        print(report.summary())

report.py reads one report (`open`, `Report`); faults.py lists its damage (`check`); compare.py and
timing.py set two reports side by side; merge.py joins ranks' reports; device_time.py and whatif.py
read the performance model's estimates, measured.py a real run's device times attached beside them (`ttreport
attach`); terminal.py draws tables and progress for the commands.
Reading must not import torch or device_sim (`ttreport summary` starts in well under a second), so
each name is imported on first use (PEP 562).
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ttreport.read.compare import ReportComparison, compare_reports
    from ttreport.read.faults import check
    from ttreport.read.report import Report, open  # noqa: A004
    from ttreport.read.timing import TimingComparison, compare_timing

# Public name -> the module of this package that defines it.
_ENTRY = {
    "Report": "report", "open": "report", "check": "faults", "ReportComparison": "compare",
    "compare_reports": "compare", "TimingComparison": "timing", "compare_timing": "timing",
}


def __getattr__(name: str):
    module = _ENTRY.get(name)
    if module is None:
        raise AttributeError(f"module 'ttreport.read' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ttreport.read.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_ENTRY))


__all__ = ["Report", "open", "check", "ReportComparison", "compare_reports", "TimingComparison", "compare_timing"]
