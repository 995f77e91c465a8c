"""Exceptions a user of ttreport can cause; each message names the bad value and the fix."""

from __future__ import annotations

import threading
import warnings


class TTReportError(Exception):
    """Base class of ttreport's own errors."""


class ReportError(TTReportError):
    """A report cannot be opened or read as asked; the message says what to do instead."""


class ConfigError(TTReportError, ValueError):
    """A Config field (or a TTREPORT_CONFIG key) has a value ttreport does not accept."""


class ReportExistsError(TTReportError, FileExistsError):
    """The report folder exists already; reports are never silently overwritten."""


class CaptureActiveError(TTReportError, RuntimeError):
    """A capture was started while another one (or another profiler's hook) is active."""


class NeedsUpgradeError(TTReportError):
    """A report was written by an older ttreport and must be upgraded before it is read."""


class NewerSchemaError(TTReportError):
    """A report was written by a newer ttreport (a schema revision this one does not know); upgrading
    the report cannot help, upgrading ttreport does."""


class NotAReportError(TTReportError, ValueError):
    """A file given as a report is not one (empty, not SQLite, or another program's database)."""


class MergeError(TTReportError, ValueError):
    """Reports that cannot be merged into one run: different schemas, a rank given twice, too few."""


class ReportInUseError(TTReportError, RuntimeError):
    """Another process is capturing into the report folder (it holds the folder's lock)."""


class ReportPathError(TTReportError, ValueError):
    """A report name leads out of Config.root (through a symbolic link)."""


class MeasuredFileError(TTReportError, ValueError):
    """A profiler file given to `ttreport attach` or `calibrate` is not TT-NN's ops_perf_results.csv, or holds a
    value no profiler writes (the message names the line, the column and the value)."""


class TensorFileError(TTReportError):
    """A stored tensor file is missing or cannot be read."""


class TensorFileDamagedError(TensorFileError):
    """A stored tensor file is there but is not what the capture wrote (changed bytes, another tensor's
    shape or dtype, too large, not a regular file): its values must not be compared or shown."""


class TensorTooLargeError(TensorFileError):
    """A tensor file holds more elements than a reader loads (TTREPORT_MAX_TENSOR_ELEMENTS): nothing was
    allocated for it; raising the cap loads it."""


class ReportIncompleteWarning(UserWarning):
    """Something was not recorded (disk full, folder unwritable, tensor cap reached); the run went on."""


class LossWarner:
    """The one place a capture warns that something was not recorded: the writer thread, the tensor
    thread and close share one, so a full disk gives the user one warning, not one per part.
    Every later loss is still counted in report_metadata."""

    def __init__(self):
        self._lock = threading.Lock()
        self.warned = False

    def warn(self, message: str) -> None:
        with self._lock:
            if self.warned:
                return
            self.warned = True
        warnings.warn(f"{message}; the model keeps running, and this and any later loss are noted in "
                      f"report_metadata (this warning is given once per capture)", ReportIncompleteWarning,
                      stacklevel=3)


class ComparisonError(TTReportError, AssertionError):
    """A golden comparison failed during a capture with raise_on_mismatch=True; `.comparison` holds every figure."""

    def __init__(self, message: str, comparison=None, operation_id: int | None = None):
        super().__init__(message)
        self.comparison = comparison
        self.operation_id = operation_id
