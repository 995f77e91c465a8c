"""The performance model's constants from a file: a team with hardware fits them to its own chips.

    DEVICE_SIM_PERF_CONSTANTS=constants.json python model.py     # every estimate of the run uses them

    from device_sim import perf_model, perf_constants
    old = perf_constants.use(perf_model, {"LAUNCH_NS": 1800})    # returns the values it replaced
    perf_constants.use(perf_model, old)                          # and back

`ttreport calibrate` writes the file: {"constants": {"LAUNCH_NS": 1712, "DRAM_ACHIEVED_GB_PER_S": 221.4, ...}}
(with what it was fitted on beside it). perf_model applies the file DEVICE_SIM_PERF_CONSTANTS names as it is
imported; a ttreport capture records the file (environment(): its path, hash and constants) in its report. A
name is one of perf_model's upper-case constants that its functions read when they run: a number, or a table of
numbers by op name (SFPU_OP_CYCLES: merged into the model's); the chip's own figures are PerfConfig's fields, set
by making a PerfConfig (CHIP below). Every value must be a positive finite number; a file that breaks
that, names an unknown constant, or is not such JSON is a ConstantsFileError (a ValueError) naming it and the fix.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from types import ModuleType

ENV_VAR = "DEVICE_SIM_PERF_CONSTANTS"
# perf_model's constants that PerfConfig's defaults (and collective_link_ns's) took when the module was made:
# setting them later would change nothing, so they are refused; a PerfConfig(clock_ghz=...) sets the chip.
CHIP = frozenset({"CLOCK_GHZ", "DRAM_GIB_PER_S", "PCIE_GB_PER_S", "ETH_GB_PER_S"})
MAX_FILE_BYTES = 1 << 20  # a file of a few dozen constants is a few KiB


class ConstantsFileError(ValueError):
    """A constants file or value the model cannot take: the message names it and the fix (the CLI prints it as one
    line, exit status 2)."""


def settable(model: ModuleType) -> dict:
    """The constants a file may set: {name: current value}."""
    return {n: v for n, v in vars(model).items() if n.isupper() and not n.startswith("_") and n not in CHIP
            and (_number(v) or isinstance(v, dict) and v and all(isinstance(k, str) and _number(x)
                                                                for k, x in v.items()))}


def use(model: ModuleType, values: dict, *, source: str = "the constants") -> dict:
    """Set `model`'s constants to `values` ({name: number, or {op name: number}}); returns what they replace."""
    can = settable(model)
    if not isinstance(values, dict):
        raise ConstantsFileError(f"{source}: give an object of constants by name, not {type(values).__name__}")
    checked = {}
    for name, value in values.items():
        if name not in can:
            raise ConstantsFileError(f"{source}: {name!r} is not a constant of the performance model that can be "
                                     f"set; the names are {', '.join(sorted(can))}")
        table = isinstance(can[name], dict)
        numbers = list(value.values()) if table and isinstance(value, dict) else [value]
        for x in numbers:
            if not (_number(x) and 0 < x <= sys.float_info.max) or isinstance(value, dict) != table:
                raise ConstantsFileError(f"{source}: {name} = {str(value)[:60]!r} is not a positive number"
                                         f"{' per op name' if table else ''}; give one such as {str(can[name])[:60]}")
        checked[name] = {**can[name], **value} if table else value
    old = {name: can[name] for name in checked}
    for name, value in checked.items():
        setattr(model, name, value)
    return old


def load(model: ModuleType, path) -> dict:
    """Set `model`'s constants from the JSON file at `path` ({"constants": {...}}); returns what they replace."""
    return use(model, _read(path)[0], source=f"{ENV_VAR}={path}")


# The file apply_environment set the model's constants from, as environment() gives it (None: none was)
_applied: dict | None = None


def apply_environment(model: ModuleType) -> None:
    """perf_model's import: the file DEVICE_SIM_PERF_CONSTANTS names, if set."""
    global _applied
    path = os.environ.get(ENV_VAR, "")
    if path:
        constants, data = _read(path)
        use(model, constants, source=f"{ENV_VAR}={path}")
        _applied = {"path": os.path.abspath(path), "sha256": hashlib.sha256(data).hexdigest(), "constants": constants}


def environment() -> dict | None:
    """The file DEVICE_SIM_PERF_CONSTANTS named as perf_model was imported, as a capture records it beside its
    estimates: {"path": absolute, "sha256": of its bytes, "constants": what it set}; None when it named none (the
    model's own constants), or before perf_model is imported (no estimate has used any: a capture imports the model
    first, ttreport.capturing.log_perf). Kept from that import, not read again: the file or the variable changed
    since would describe constants the estimates do not use. perf_model imports this module, not the reverse."""
    return _applied


def _read(path) -> tuple[dict, bytes]:
    """The "constants" object of the file at `path`, and the file's bytes."""
    source = str(path)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise ConstantsFileError(f"{ENV_VAR}={source}: cannot be read ({e.strerror or e}); name the file "
                                 "`ttreport calibrate -o` wrote") from None
    try:
        constants = json.loads(data)["constants"] if len(data) <= MAX_FILE_BYTES else None
    except (ValueError, TypeError, KeyError):
        constants = None
    if constants is None:
        raise ConstantsFileError(f"{ENV_VAR}={source}: is not a constants file (JSON with a \"constants\" object, at "
                                 f"most {MAX_FILE_BYTES:,} bytes); name the file `ttreport calibrate -o` wrote")
    return constants, data


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)
