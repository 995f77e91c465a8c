"""The C memory listener (ttreport/capturing/_hook.c's on_buffer) knows an event by its text, not by its object.

device_sim's events ("alloc", "free", "program") are interned strings, which the C listener tells apart by a pointer
compare; a listener's caller may pass the same text as another str object (built at run time, not interned), and
then the C listener must record what it records for the interned one.
"""

from __future__ import annotations

import pytest
import torch

import device_sim as ttnn
import ttreport
from device_sim import device_work
from device_sim.device_work import CircularBuffer, make_program
from ttreport.capturing import recorder

native = pytest.mark.skipif(not recorder.NATIVE, reason="ttreport.capturing._hook is not built")


def _heard(rec, event: str, what) -> list:
    """The records rec's listener adds for (event, what), taken back off the log's pending list."""
    pending = rec.queue.items._pending
    n = len(pending)
    rec._on_buffer(event, what)
    heard = pending[n:]
    del pending[n:]
    return heard


@native
def test_an_event_text_that_is_not_interned_is_recorded_as_the_interned_one(tmp_path, device):
    p = make_program("UnaryDeviceOperation", "F", [CircularBuffer((0,), 2, 2048)], ((0, 0, 7, 7),))
    with ttreport.capture("events", config=ttreport.Config(root=tmp_path, device_graphs=True)) as handle:
        rec = handle.recorder
        assert type(rec._on_buffer).__name__ == "builtin_function_or_method"  # the C listener
        t = ttnn.from_torch(torch.zeros(32, 32), layout=ttnn.TILE, device=device)
        buf = t.buffer
        device_work.launch(device, p)  # its static part defined (PROG): the next launches are the C listener's
        heard = _heard(rec, "program", p._replace(program_id=7, device_id=device.device_id, cb_base=1))
        for event in ("free", "alloc", "program"):
            built = "".join(list(event))  # the same text, another object
            assert built is not event and built == event
            what = p._replace(program_id=7, device_id=device.device_id, cb_base=1) if event == "program" else buf
            interned, other = _heard(rec, event, what), _heard(rec, built, what)
            assert len(interned) == len(other) == 1
            if event == "program":
                assert interned == other == heard
            else:  # each took the next seq: the rest is equal
                seq = 2 if event == "free" else 8
                assert interned[0][:seq] + interned[0][seq + 1:] == other[0][:seq] + other[0][seq + 1:]
                assert other[0][seq] == interned[0][seq] + 1
