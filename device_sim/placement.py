"""How an op's output memory config is chosen (DESIGN.md, "TT-NN API, made concise").

The first rule that applies wins, and the output tensor remembers which one:
  "argument"  an explicit memory= / memory_config= argument;
  "context"   the innermost `with ttnn.memory(cfg):` block;
  "inputs"    every device input of the op has the same memory config;
  "default"   the process default (DRAM interleaved until set_default_memory_config).
The context lives in contextvars, so threads and asyncio tasks do not see each other's blocks.
"""

from __future__ import annotations

import contextlib
import contextvars

from device_sim.types import DRAM_MEMORY_CONFIG, MemoryConfig

_context: contextvars.ContextVar[MemoryConfig | None] = contextvars.ContextVar("device_sim_memory", default=None)
_strict: contextvars.ContextVar[bool] = contextvars.ContextVar("device_sim_strict", default=False)
_default = DRAM_MEMORY_CONFIG


def _check(cfg) -> MemoryConfig:
    if not isinstance(cfg, MemoryConfig):
        raise TypeError(f"expected a MemoryConfig such as ttnn.L1 or ttnn.DRAM, got {cfg!r}")
    return cfg


@contextlib.contextmanager
def memory(cfg: MemoryConfig):
    """Ops inside the block put their outputs in `cfg` unless given memory= explicitly."""
    token = _context.set(_check(cfg))
    try:
        yield cfg
    finally:
        _context.reset(token)


@contextlib.contextmanager
def strict(enabled: bool = True):
    """Multi-input ops inside the block raise when their inputs differ in memory config or layout."""
    token = _strict.set(enabled)
    try:
        yield
    finally:
        _strict.reset(token)


def set_strict(enabled: bool) -> None:
    _strict.set(enabled)


def set_default_memory_config(cfg: MemoryConfig) -> None:
    global _default
    _default = _check(cfg)


def get_default_memory_config() -> MemoryConfig:
    return _default


def get_memory_config_context() -> MemoryConfig | None:
    return _context.get()


def inputs_config(inputs) -> MemoryConfig | None:
    """The config rule 3 ("inputs") gives an op called with no memory= whose `inputs` are all in the very
    same config object (the usual case), outside any `with ttnn.memory` block and strict mode; else None,
    and resolve() decides. Two context reads and an identity check per input: the hot path's test."""
    if _context.get() is not None or _strict.get():
        return None
    cfg = inputs[0]._memory_config
    for t in inputs:
        if t._memory_config is not cfg:
            return None
    return cfg


def resolve(explicit, inputs, op_name: str = "op") -> tuple[MemoryConfig, str]:
    """The output memory config of an op and the rule that chose it.

    `inputs` are the op's device tensors. Strict mode is checked here, since every op that
    chooses an output config passes through.
    """
    if _strict.get() and len(inputs) > 1:
        first = inputs[0]
        for other in inputs[1:]:
            if other._memory_config != first._memory_config or other.layout != first.layout:
                raise ValueError(
                    f"{op_name}: strict mode: inputs differ: tensor {first.tensor_id} is "
                    f"{first.layout!r} in {first._memory_config!r}, tensor {other.tensor_id} is "
                    f"{other.layout!r} in {other._memory_config!r}. Move one with ttnn.to_memory_config / "
                    f"ttnn.to_layout, or leave `with ttnn.strict()`"
                )
    if explicit is not None:
        return _check(explicit), "argument"
    ctx = _context.get()
    if ctx is not None:
        return ctx, "context"
    if inputs:
        cfg = inputs[0]._memory_config
        if all(t._memory_config == cfg for t in inputs[1:]):
            return cfg, "inputs"
    return _default, "default"
