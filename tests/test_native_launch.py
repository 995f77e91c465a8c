"""device_work.launch in C (device_sim/_native.c) against its specification, device_work._launch.

The same launches on two fresh devices, one through each, give the same program-cache entries, the same
program ids taken, the same programs heard by a listener and the same errors, for the calls C takes itself
(CBs that fit) and for each it hands to _launch (a listener, a clash, a region past L1, an unworked region).
DEVICE_SIM_PURE=1 makes _launch the launch. A capture's listener sends every launch to _launch, so a report's
tables see _launch alone; what C does itself shows in the cache and the program ids, compared here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types

import pytest
import torch

import device_sim as ttnn
from device_sim import allocator, device_work
from device_sim.device_work import CircularBuffer, Program, ProgramHash, make_program

native = pytest.mark.skipif(device_work.launch is device_work._launch,
                            reason="device_sim._native was not built, or DEVICE_SIM_PURE is set")


def _program(pages: int, factory: str = "F") -> Program:
    return make_program("UnaryDeviceOperation", factory, [CircularBuffer((0,), pages, 2048)], ((0, 0, 7, 7),))


def _launches(launch, device) -> list:
    """Each call's outcome: the cache's size after it, the program ids it took, its error text (ids as N), and
    what a listener heard (program ids relative to the call's first)."""
    small, other = _program(2), _program(4, "G")
    huge = _program(1 << 20)  # 2 GiB of CBs: past the end of L1
    unworked = Program("UnaryDeviceOperation", "F", small.cbs, small.ranges)  # cb_bytes -1: worked out at launch
    heard = []
    outcomes = []

    def call(*args):
        before = next(device_work._program_ids)
        try:
            launch(*args)
            error = None
        except (RuntimeError, TypeError) as e:
            error = f"{type(e).__name__}: {re.sub(r'program [0-9]+', 'program N', str(e))}"
        taken = next(device_work._program_ids) - before - 1
        cache = device.program_cache
        outcomes.append((None if cache is None else len(cache), taken, error,
                         [(p.factory, p.program_id - before) for p in heard]))
        heard.clear()

    call(device, small)
    call(device, small)  # the same entry
    call(device, small, ("ttnn.relu", 0))  # the program with a key
    call(device, small, ProgramHash(("ttnn.add|whole",)))  # the key alone
    call(device, other, ProgramHash(("ttnn.add|whole",)))
    call(device, small, ["unhashable"])
    call(device, unworked)
    call(device, huge)
    call(None, small)
    call(types.SimpleNamespace(memory=None), small)
    device.memory.listener = lambda event, what: heard.append(what) if event == "program" else None
    call(device, other)
    device.memory.listener = None
    l1 = ttnn.from_torch(torch.zeros(32, 32), layout=ttnn.TILE, device=device, memory_config=ttnn.L1_MEMORY_CONFIG)
    call(device, small)  # below the tensor
    c = device.config
    call(device, _program((c.l1_size - c.l1_unreserved_base) // 2048))  # L1 whole: the tensor's clash
    l1.deallocate()
    device.disable_and_clear_program_cache()
    call(device, small)
    device.enable_program_cache()
    call(device, other)
    return outcomes


@native
def test_the_c_launch_takes_the_entries_ids_and_errors_its_python_specification_takes():
    results = []
    for launch in (device_work._launch, device_work.launch):
        device = ttnn.open_device(0)
        try:
            results.append(_launches(launch, device))
            results.append(set(device.program_cache))
        finally:
            ttnn.close_device(device)
    pure, pure_entries, fast, fast_entries = results
    assert fast == pure
    assert fast_entries == pure_entries and len(fast_entries) == 1  # the last call's, after the cache was cleared
    errors = [error for _, _, error, _ in pure if error]
    assert len(errors) == 3 and "clash with L1 buffers" in errors[2] and "beyond max L1 size" in errors[1]
    assert [heard for *_, heard in pure if heard] == [[("G", 1)]]


def test_device_sim_pure_makes_the_python_launch_the_launch():
    code = "from device_sim import device_work; print(device_work.launch is device_work._launch)"
    for pure, want in (("1", "True"), ("0", str(allocator._native is None))):
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "DEVICE_SIM_PURE": pure},
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == want
