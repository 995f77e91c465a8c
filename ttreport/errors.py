"""Exceptions a user of ttreport can cause; each message names the bad value and the fix."""

from __future__ import annotations


class TTReportError(Exception):
    """Base class of ttreport's own errors."""


class ConfigError(TTReportError, ValueError):
    """A Config field (or a TTREPORT_CONFIG key) has a value ttreport does not accept."""


class ReportExistsError(TTReportError, FileExistsError):
    """The report folder exists already; reports are never silently overwritten."""


class CaptureActiveError(TTReportError, RuntimeError):
    """A capture was started while another one (or another profiler's hook) is active."""


class NeedsUpgradeError(TTReportError):
    """A report was written by an older ttreport and must be upgraded before it is read."""


class TensorFileError(TTReportError):
    """A stored tensor file is missing or cannot be read."""


class ReportIncompleteWarning(UserWarning):
    """Something was not recorded (disk full, folder unwritable, tensor cap reached); the run went on."""


class ComparisonError(TTReportError, AssertionError):
    """A golden comparison failed during a capture with raise_on_mismatch=True; `.comparison` holds every figure."""

    def __init__(self, message: str, comparison=None, operation_id: int | None = None):
        super().__init__(message)
        self.comparison = comparison
        self.operation_id = operation_id
