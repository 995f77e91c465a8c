"""TT-NN's Tracy calls (ttnn/profiler.py): zones, messages and frames for the Tracy host profiler.

    import device_sim as ttnn
    ttnn.tracy_message("`TT_SIGNPOST: start`")   # tracy's signpost(), which tests/ttnn's perf cases call
    ttnn.stop_tracy_zone()                        # False: no zone was open

device_sim runs no Tracy client, so each call is what it is in a TT-NN build without Tracy (ENABLE_TRACY off, the
default build): the op_profiler functions behind them compile to nothing, and stop_tracy_zone reports no zone
stopped. A model's or test's profiling markers therefore run unchanged.
"""

from __future__ import annotations


def start_tracy_zone(source: str, functName: str, lineNum: int, color: int = 0) -> None:  # noqa: N803
    """Open a Tracy zone at `source`:`lineNum` in `functName` (TT-NN's argument names); nothing without Tracy."""


def stop_tracy_zone(name: str = "", color: int = 0) -> bool:
    """Close the innermost open Tracy zone, naming it `name`; whether one was closed (never, without Tracy)."""
    return False


def tracy_message(source: str, color: int = 0xF0F8FF) -> None:
    """Send `source` to Tracy's message log (tracy.signpost's route); nothing without Tracy."""


def tracy_frame() -> None:
    """Mark the end of a frame in Tracy; nothing without Tracy."""
