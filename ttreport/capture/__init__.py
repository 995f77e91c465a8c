"""The capture side: what runs while a model runs, and `capture` / `profile` / `Capture`, its one entry point.

    from ttreport.capture import capture
    with capture("my-run") as run:   # the same as ttreport.capture("my-run")
        model(x)

session.py opens the report and closes it in every case; recorder.py is the hook on the model's thread;
oplog.py, writer.py and writer_process.py turn its records into rows; golden.py, log_perf.py and
device_graph.py add the golden checks, device time estimates and captured graphs; rank.py writes a
multi-host run's rank into the rows at close. The session imports
torch and device_sim, so it is imported on first use (PEP 562): the writer process and the readers that
import one of these modules for a constant do not pay for it.

`ttreport.capture` itself is the function, not this package (the public API predates the package): import
a module as `from ttreport.capture import recorder`, and patch it in a test as `monkeypatch.setattr(recorder,
"NAME", value)`; `import ttreport.capture.recorder as r` and the dotted-string forms reach the function.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ttreport.capture.session import Capture, capture, profile

_ENTRY = frozenset({"Capture", "capture", "profile"})


def __getattr__(name: str):
    if name not in _ENTRY:
        raise AttributeError(f"module 'ttreport.capture' has no attribute {name!r}")
    from ttreport.capture import session

    value = getattr(session, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | _ENTRY)


__all__ = ["Capture", "capture", "profile"]
