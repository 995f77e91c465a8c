"""Steps of a run, as torch.profiler names them: skip_first, then cycles of wait, warmup and active steps.

A capture records every op of every step (a report is the model's whole run: its memory, its errors and
what ttnn-visualizer shows), each op row carrying its step number (`operations.step`: how many times
`run.step()` had been called when the op began). The schedule is kept in the report
(`report_metadata.schedule`, JSON), so a reader knows which steps were active: timing statistics, `compare
--timing`, `history` and the pytest gate use the active steps only, leaving out the first calls' warm-up.

    >>> s = Schedule(wait=1, warmup=1, active=2)
    >>> [s.phase(n) for n in range(5)]
    ['wait', 'warmup', 'active', 'active', 'wait']
    >>> Schedule(skip_first=1, wait=0, warmup=1, active=1, repeat=1).phase(3)
    'done'
    >>> Schedule.from_json(s.to_json()) == s
    True

Standard library only: the reading side imports it without torch or device_sim.
"""

from __future__ import annotations

import dataclasses
import json

PHASES = ("skip", "wait", "warmup", "active", "done")


@dataclasses.dataclass(frozen=True)
class Schedule:
    """torch.profiler.schedule's arguments: after `skip_first` steps, cycles of `wait` + `warmup` + `active`
    steps, `repeat` times (0: until the run ends)."""

    wait: int = 0
    warmup: int = 0
    active: int = 1
    repeat: int = 0
    skip_first: int = 0

    def __post_init__(self):
        for name in ("wait", "warmup", "active", "repeat", "skip_first"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"schedule {name}={value!r}: give a whole number of steps, 0 or more")
        if self.active < 1:
            raise ValueError(f"schedule active={self.active}: give at least 1 active step, or no schedule")

    def phase(self, step: int) -> str:
        """The phase of step number `step` (0 is the first): one of PHASES."""
        if step < self.skip_first:
            return "skip"
        step -= self.skip_first
        cycle = self.wait + self.warmup + self.active
        if self.repeat and step >= cycle * self.repeat:
            return "done"
        at = step % cycle
        return "wait" if at < self.wait else "warmup" if at < self.wait + self.warmup else "active"

    def is_active(self, step: int) -> bool:
        return self.phase(step) == "active"

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> Schedule | None:
        """The schedule a report keeps, or None for a run without one (every step is active then). The text
        comes from a report folder: anything but the five whole numbers raises ValueError in one line."""
        if text is None:
            return None
        try:
            fields = json.loads(text)
        except (TypeError, ValueError, RecursionError):  # RecursionError: arrays nested past Python's stack
            raise ValueError(f"report_metadata.schedule {str(text)[:80]!r} is not JSON: a damaged report") from None
        if not isinstance(fields, dict) or set(fields) - {f.name for f in dataclasses.fields(cls)}:
            raise ValueError(f"report_metadata.schedule {str(text)[:80]!r} is not a schedule's fields")
        return cls(**fields)


def schedule(*, wait: int = 0, warmup: int = 0, active: int = 1, repeat: int = 0, skip_first: int = 0) -> Schedule:
    """torch.profiler.schedule's signature: `ttreport.capture(path, schedule=ttreport.schedule(wait=1, warmup=1,
    active=3))`, then `run.step()` after each step of the model."""
    return Schedule(wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first)


def active_steps(schedule_: Schedule | None, steps: list[int]) -> list[int]:
    """Those of `steps` (step numbers found in a report) that were active: all of them without a schedule."""
    return list(steps) if schedule_ is None else [s for s in steps if schedule_.is_active(s)]
