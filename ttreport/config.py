"""The one configuration of a capture: a keyword-only dataclass, costly features off by default.

    ttreport.Config(tensors="outputs", stack_depth=8)

`Config.from_env(base)` applies the TTREPORT_CONFIG environment variable, a JSON object of
field names to values, on top of `base`; capture() does this for every config it is given,
so a run can be reconfigured without touching its code:

    TTREPORT_CONFIG='{"tensors": "all", "buffer_pages": true}' python model.py
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ttreport.errors import ConfigError

ENV_VAR = "TTREPORT_CONFIG"
TENSOR_MODES = ("none", "outputs", "all")
COMPARISON_MODES = ("off", "local", "global", "both")


@dataclass(kw_only=True)
class Config:
    # Where a report given by name is created: <root>/<name>/.
    root: Path = Path("generated/ttreport/reports")
    # Which tensors' values are written to tensors/: "none" (only their specs go in the db),
    # "outputs" (every op output once; costs a copy to disk per output, off the model's
    # thread), or "all" (inputs too, so weights made before the capture are kept).
    tensors: str = "none"
    # Store tensors as plain torch .pt files readable anywhere; False writes device_sim's .bin.
    detach_saved_tensors: bool = True
    # Total bytes of tensor files; once reached, storage stops with a warning, the run goes on.
    max_tensor_bytes: int = 8 << 30
    # Record the user's call site of each op: about 1-3 us per op on the model's thread.
    stack_traces: bool = True
    # User frames kept per stack trace, innermost first.
    stack_depth: int = 16
    # Record buffer allocations and frees (the `buffers` view): one queue put per event.
    buffers: bool = True
    # Record every page of every live buffer after each op: large, slow; for memory debugging.
    buffer_pages: bool = False
    # Golden comparison during capture (ttreport.golden): runs each op's torch golden too, on
    # one background thread in op order, so op durations are not inflated; it roughly doubles
    # the CPU a run needs. raise_on_mismatch=True runs the checks on the model's thread, so the
    # exception comes from the failing op.
    comparison: str = "off"
    comparison_pcc: float = 0.9999
    comparison_rtol: float | None = None  # None: the default for the output's dtype
    comparison_atol: float | None = None
    raise_on_mismatch: bool = False
    # The writer commits a batch after this many seconds or this many records, whichever is
    # first: what a crash can lose at most.
    flush_interval_s: float = 0.05
    flush_ops: int = 2000
    # Records waiting for the writer before the model's thread waits for it (never drops).
    queue_max: int = 100_000
    # Replace an existing report of the same name (only a folder holding a report).
    overwrite: bool = False
    # gc.freeze() the objects that exist when the capture starts, and unfreeze them at close.
    # Queued records outlive the collector's young generations, and every ~10k of them set off a
    # full pass over the whole heap (torch's included): 10-20 us per op. The cost of freezing:
    # garbage cycles made before the capture are collected only after it ends.
    gc_freeze: bool = True

    def __post_init__(self):
        self.root = Path(self.root)
        _choice("tensors", self.tensors, TENSOR_MODES)
        _choice("comparison", self.comparison, COMPARISON_MODES)
        for name in ("detach_saved_tensors", "stack_traces", "buffers", "buffer_pages", "raise_on_mismatch",
                     "overwrite", "gc_freeze"):
            if not isinstance(getattr(self, name), bool):
                _fail(name, getattr(self, name), "true or false")
        for name, low in (("max_tensor_bytes", 0), ("stack_depth", 1), ("flush_ops", 1), ("queue_max", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                _fail(name, value, f"an integer >= {low}")
        if not _number(self.flush_interval_s) or self.flush_interval_s <= 0:
            _fail("flush_interval_s", self.flush_interval_s, "a number of seconds > 0")
        if not _number(self.comparison_pcc) or not 0 <= self.comparison_pcc <= 1:
            _fail("comparison_pcc", self.comparison_pcc, "a number between 0 and 1")
        for name in ("comparison_rtol", "comparison_atol"):
            value = getattr(self, name)
            if value is not None and (not _number(value) or value < 0):
                _fail(name, value, "null or a number >= 0")

    @classmethod
    def from_env(cls, base: Config | None = None, environ=None) -> Config:
        """`base` (or the defaults) with the TTREPORT_CONFIG JSON object applied on top."""
        base = base if base is not None else cls()
        text = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
        if not text:
            return base
        try:
            overrides = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{ENV_VAR} is not valid JSON ({e}): {text!r}; "
                              f'give an object such as {{"tensors": "all"}}') from None
        if not isinstance(overrides, dict):
            raise ConfigError(f'{ENV_VAR} must be a JSON object such as {{"tensors": "all"}}, got {text!r}')
        names = [f.name for f in dataclasses.fields(cls)]
        for key in overrides:
            if key not in names:
                raise ConfigError(f"{ENV_VAR} has unknown key {key!r}; the keys are: {', '.join(names)}")
        return dataclasses.replace(base, **overrides)

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["root"] = str(self.root)
        return d


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _choice(name: str, value, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        _fail(name, value, " | ".join(repr(a) for a in allowed))


def _fail(name: str, value, allowed: str):
    raise ConfigError(f"Config {name}={value!r} is not allowed; use {allowed}")
