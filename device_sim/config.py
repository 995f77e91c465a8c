"""`ttnn.CONFIG`: TT-NN's run-time configuration, and the report it turns on.

    TTNN_CONFIG_OVERRIDES='{"enable_logging": true, "report_name": "run1"}' python model.py

TT-NN reads TTNN_CONFIG_OVERRIDES (a JSON object) and TTNN_CONFIG_PATH (a JSON file) when it
is imported; device_sim does the same, with TT-NN's field names and defaults. When
`enable_logging` is true, a report of the whole process is captured, with no change to the
script, into `root_report_path/<report_name>_<mondd>_<HHMM>` (TT-NN's report_path naming).

device_sim never imports ttreport (DESIGN.md). The report comes from whichever package
registers a `device_sim.reporters` entry point (ttreport does, in pyproject.toml): it is
looked up and imported only when logging is switched on, and is called as
`start(ttnn.CONFIG)`, returning an object whose `stop()` closes the report (and whose
`status` is None while it runs). As in TT-NN, switching `ttnn.CONFIG.enable_logging` (or
`ttnn.manage_config("enable_logging", ...)`) off and on again pauses and resumes logging
into the same report; `device_sim.config.stop_reporting()` or interpreter exit closes it.

One departure from TT-NN 0.81: TT-NN logs nothing while `enable_fast_runtime_mode` is true
(its default) and only warns. device_sim has no separate fast path, so `enable_logging`
alone starts the report.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import warnings
from importlib.metadata import distributions
from pathlib import Path

from device_sim import registry

ENV_VAR = "TTNN_CONFIG_OVERRIDES"
PATH_ENV_VAR = "TTNN_CONFIG_PATH"
REPORTER_GROUP = "device_sim.reporters"

_HOME = Path(os.environ.get("HOME", "~"))
# TT-NN 0.81's Config fields (ttnn/core/config.hpp), in its order, with its defaults.
_DEFAULTS = {
    "cache_path": _HOME / ".cache/ttnn",
    "model_cache_path": _HOME / ".cache/ttnn/models",
    "tmp_dir": Path("/tmp/ttnn"),
    "enable_model_cache": False,
    "enable_fast_runtime_mode": True,
    "throw_exception_on_fallback": False,
    "enable_logging": False,
    "enable_graph_report": False,
    "enable_detailed_buffer_report": False,
    "enable_detailed_tensor_report": False,
    "enable_comparison_mode": False,
    "comparison_mode_should_raise_exception": False,
    "comparison_mode_pcc": 0.9999,
    "root_report_path": Path("generated/ttnn/reports"),
    "report_name": None,
}
_PATHS = {"cache_path", "model_cache_path", "tmp_dir", "root_report_path"}
_report_paths: dict[tuple, Path] = {}


class Config:
    """TT-NN's `ttnn.Config`: attributes with TT-NN's names; a wrong name or type is an error at once."""

    __slots__ = (*_DEFAULTS, "_quiet")

    def __init__(self, **values):
        object.__setattr__(self, "_quiet", True)
        for name, default in _DEFAULTS.items():
            object.__setattr__(self, name, default)
        for name, value in values.items():
            setattr(self, name, value)
        object.__setattr__(self, "_quiet", False)

    def __setattr__(self, name: str, value) -> None:
        if name not in _DEFAULTS:
            raise AttributeError(f"ttnn.Config has no field {name!r}; the fields are: {', '.join(_DEFAULTS)}")
        object.__setattr__(self, name, _coerce(name, value))
        if not self._quiet:
            self.validate(name)
            if name == "enable_logging" and self is CONFIG:
                _sync_reporter()

    @property
    def report_path(self) -> Path | None:
        """Where a report goes: root_report_path/<snake_cased report_name>_<mondd>_<HHMM>, or None without a name."""
        if self.report_name is None:
            return None
        key = (self.report_name, self.root_report_path)
        if key not in _report_paths:  # worked out once per name, as TT-NN caches it, so the minute stays put
            name = re.sub(r"_+", "_", re.sub(r"[^a-z0-9]", "_", str(self.report_name)[:64].lower())).strip("_")
            stamp = datetime.datetime.now().strftime("%b%d_%H%M").lower()
            _report_paths[key] = self.root_report_path / f"{name}_{stamp}"
        return _report_paths[key]

    def validate(self, name: str) -> None:
        """TT-NN's warnings for combinations that do nothing (config.cpp's Config::validate)."""
        reports = ("enable_graph_report", "enable_detailed_buffer_report", "enable_detailed_tensor_report")
        if name in reports and getattr(self, name) and not self.enable_logging:
            warnings.warn(f"ttnn.CONFIG.{name} is set but enable_logging is not: no report is written; "
                          f"set enable_logging too", stacklevel=3)

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in _DEFAULTS}

    def __repr__(self) -> str:
        fields = ",".join(f"{k}={v}" for k, v in self.to_dict().items())
        return f"Config{{{fields},report_path={self.report_path}}}"


def _coerce(name: str, value):
    default = _DEFAULTS[name]
    if name == "report_name":
        if value is None or value == "":
            return None
        if not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"ttnn.CONFIG.report_name must be a string or None, got {value!r}")
        return str(value)
    if name in _PATHS:
        if not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"ttnn.CONFIG.{name} must be a path (a string), got {value!r}")
        return Path(value)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise TypeError(f"ttnn.CONFIG.{name} must be true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise TypeError(f"ttnn.CONFIG.{name} must be a number between 0 and 1, got {value!r}")
    return float(value)


CONFIG = Config()


def load_config_from_dictionary(config: dict, from_file: bool = False) -> None:
    """Set ttnn.CONFIG's fields from `config`, as TT-NN does; an unknown key is a ValueError (a warning from a file)."""
    if not isinstance(config, dict):
        raise ValueError(f"a ttnn config must be a JSON object of field names to values, got {config!r}")
    object.__setattr__(CONFIG, "_quiet", True)  # one reporter decision after every key is in
    try:
        for key, value in config.items():
            if key in _DEFAULTS:
                setattr(CONFIG, key, value)
            elif from_file:
                warnings.warn(f"Unknown configuration key: {key} in {os.environ.get(PATH_ENV_VAR)}; the keys are: "
                              f"{', '.join(_DEFAULTS)}", stacklevel=2)
            else:
                raise ValueError(f"Unknown configuration key: {key}; the keys are: {', '.join(_DEFAULTS)}")
    finally:
        object.__setattr__(CONFIG, "_quiet", False)
    for key in config:
        if key in _DEFAULTS:
            CONFIG.validate(key)
    _sync_reporter()


def load_config_from_json_file(json_path) -> None:
    with open(json_path) as f:
        load_config_from_dictionary(json.load(f), from_file=True)


def save_config_to_json_file(json_path) -> None:
    values = {k: (str(v) if isinstance(v, Path) else v) for k, v in CONFIG.to_dict().items()}
    Path(json_path).write_text(json.dumps(values, indent=4))


@contextlib.contextmanager
def manage_config(name: str, value):
    """`with ttnn.manage_config("enable_logging", True):` sets one field for the block and puts it back after."""
    original = getattr(CONFIG, name)
    setattr(CONFIG, name, value)
    try:
        yield
    finally:
        setattr(CONFIG, name, original)


def apply_environment(environ=None) -> None:
    """TT-NN's import-time reading of TTNN_CONFIG_PATH and TTNN_CONFIG_OVERRIDES (device_sim calls it once)."""
    environ = os.environ if environ is None else environ
    path = environ.get(PATH_ENV_VAR)
    if path:
        if Path(path).exists():
            load_config_from_json_file(path)
        else:  # as TT-NN: a named file that is missing is written with the defaults, to edit later
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            save_config_to_json_file(path)
    text = environ.get(ENV_VAR, "").strip()
    if text:
        try:
            overrides = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{ENV_VAR} is not valid JSON ({e}): {text!r}; give an object such as "
                             f'{{"enable_logging": true, "report_name": "run1"}}') from None
        load_config_from_dictionary(overrides)


# -- the reporter -------------------------------------------------------------------------------
_reporter = None  # what the reporter's start() returned: an object with stop() and `status` (None while running)
_reporter_hook = None  # the device_sim hook it installed, taken out while logging is paused


def _sync_reporter() -> None:
    """enable_logging on: start the report (or resume it); off: pause it. TT-NN toggles logging into one report."""
    global _reporter, _reporter_hook
    if CONFIG.enable_logging:
        if _reporter is None or getattr(_reporter, "status", None) is not None:
            _reporter = _load_reporter()(CONFIG)
            _reporter_hook = registry.get_hook()
        elif registry.get_hook() is None:
            registry.set_hook(_reporter_hook)
    elif _reporter is not None and registry.get_hook() is _reporter_hook:
        registry.set_hook(None)


def stop_reporting() -> None:
    """Close the report enable_logging started (it also closes at interpreter exit)."""
    global _reporter, _reporter_hook
    reporter, _reporter, _reporter_hook = _reporter, None, None
    if reporter is not None:
        reporter.stop()


def active_reporter():
    """The report that ttnn.CONFIG.enable_logging started and that is still open, or None."""
    return _reporter


def _load_reporter():
    # Every distribution, not entry_points()'s one per name: a stale ttreport.egg-info in the working
    # directory (left by an older editable install) would otherwise hide the installed metadata.
    found = sorted({ep.value: ep for d in distributions() for ep in d.entry_points if ep.group == REPORTER_GROUP}
                   .values(), key=lambda ep: ep.name)
    if not found:
        raise RuntimeError(
            f"ttnn.CONFIG.enable_logging is set, but no package registers a {REPORTER_GROUP!r} entry point to write "
            f"the report; install ttreport (pip install -e . in this repository), or turn enable_logging off"
        )
    return found[0].load()
