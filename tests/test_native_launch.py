"""device_work.launch in C (device_sim/_native.c) against its specification, device_work._launch.

The same launches on two fresh devices, one through each, give the same program-cache entries, the same
program ids taken, the same programs heard by a listener and the same errors, for the calls C takes itself
(CBs that fit, with or without a listener: one that raises, one that is not callable, one that allocates the
L1 the CBs need) and for each it hands to _launch (a clash, a region past L1, an unworked region).
DEVICE_SIM_PURE=1 makes _launch the launch. A capture's listener hears the C launch's programs as it hears
_launch's: a model captured through each writes the same report.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch
from report_tables import tables

import device_sim as ttnn
from device_sim import allocator, device_work
from device_sim.device_work import CircularBuffer, Program, ProgramHash, make_program

native = pytest.mark.skipif(device_work.launch is device_work._launch,
                            reason="device_sim._native was not built, or DEVICE_SIM_PURE is set")


def _program(pages: int, factory: str = "F") -> Program:
    return make_program("UnaryDeviceOperation", factory, [CircularBuffer((0,), pages, 2048)], ((0, 0, 7, 7),))


def _whole_l1(c) -> Program:
    """CBs over the whole of L1 above its reserved base (device config `c`): they fit while L1 holds no tensor."""
    return _program((c.l1_size - c.l1_unreserved_base) // 2048)


def _launches(launch, device) -> list:
    """Each call's outcome: the cache's size after it, the program ids it took, its error text (ids as N), and
    what a listener heard (each program whole, its type, its id relative to the call's first)."""
    small, other = _program(2), _program(4, "G")
    huge = _program(1 << 20)  # 2 GiB of CBs: past the end of L1
    unworked = Program("UnaryDeviceOperation", "F", small.cbs, small.ranges)  # cb_bytes -1: worked out at launch
    c = device.config
    whole_l1 = _whole_l1(c)
    heard, held = [], []
    outcomes = []

    def listen(event, what):
        if event == "program":
            heard.append(what)

    def call(*args):
        before = next(device_work._program_ids)
        try:
            launch(*args)
            error = None
        except (RuntimeError, TypeError, ValueError, AttributeError) as e:
            error = f"{type(e).__name__}: {re.sub(r'program [0-9]+', 'program N', str(e))}"
        taken = next(device_work._program_ids) - before - 1
        cache = device.program_cache
        outcomes.append((None if cache is None else len(cache), taken, error,
                         [(type(p), p._replace(program_id=p.program_id - before)) for p in heard]))
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
    device.memory.listener = listen
    call(device, other)
    call(device, small, ("ttnn.relu", 0))
    call(device, small, ProgramHash(("ttnn.add|whole",)))
    call(device, small, ["unhashable"])  # the cache's TypeError: nothing heard
    call(device, unworked)
    call(device, huge)  # heard, then refused
    call(types.SimpleNamespace(memory=device.memory, config=c, program_cache=set()), small)  # no device_id

    def refusing(event, what):
        listen(event, what)
        raise ValueError("the listener refuses")

    def allocating(event, what):  # takes the L1 the program's CBs need, after they were checked once
        listen(event, what)
        if event == "program":
            held.append(ttnn.from_torch(torch.zeros(32, 32), layout=ttnn.TILE, device=device,
                                        memory_config=ttnn.L1_MEMORY_CONFIG))

    device.memory.listener = refusing
    call(device, other)
    device.memory.listener = 5
    call(device, other)
    device.memory.listener = allocating
    call(device, whole_l1)  # the clash, found after the listener
    device.memory.listener = listen
    call(device, small)  # below the tensor the listener took
    held.pop().deallocate()
    device.disable_and_clear_program_cache()
    call(device, small)
    device.enable_program_cache()
    device.memory.listener = None
    l1 = ttnn.from_torch(torch.zeros(32, 32), layout=ttnn.TILE, device=device, memory_config=ttnn.L1_MEMORY_CONFIG)
    call(device, small)  # below the tensor
    call(device, whole_l1)  # the tensor's clash
    l1.deallocate()
    device.disable_and_clear_program_cache()
    call(device, small)
    device.enable_program_cache()
    call(device, other)
    return outcomes


@native
def test_the_c_launch_takes_the_entries_ids_and_errors_its_python_specification_takes():
    results, handed = [], []

    def counted(*args):  # the calls the C launch hands to its specification
        handed.append(args[1].cb_bytes)
        return device_work._launch(*args)

    for launch in (device_work._launch, device_work.launch):
        device = ttnn.open_device(0)
        allocator._native.configure_launch(counted, Program, ProgramHash, device_work._program_ids,
                                           device_work._refuse)
        try:
            results.append(_launches(launch, device))
            results.append(set(device.program_cache))
        finally:
            allocator._native.configure_launch(device_work._launch, Program, ProgramHash, device_work._program_ids,
                                               device_work._refuse)
            ttnn.close_device(device)
    pure, pure_entries, fast, fast_entries = results
    # unworked, past L1, no device, no memory; with the listener unworked and past L1; the tensor's clash. The C
    # took every other call itself, the listener's included (the listener's own clash too).
    small, huge = _program(2).cb_bytes, _program(1 << 20).cb_bytes
    assert handed == [-1, huge, small, small, -1, huge, _whole_l1(ttnn.DeviceConfig()).cb_bytes]
    assert fast == pure
    assert fast_entries == pure_entries and len(fast_entries) == 1  # the last call's, after the cache was cleared
    errors = [error for _, _, error, _ in pure if error]
    assert len(errors) == 9, errors
    assert errors[0] == errors[2] == "TypeError: unhashable type: 'list'"
    assert "beyond max L1 size" in errors[1] and errors[3] == errors[1]
    assert errors[4] == "AttributeError: 'types.SimpleNamespace' object has no attribute 'device_id'"
    assert errors[5:7] == ["ValueError: the listener refuses", "TypeError: 'int' object is not callable"]
    assert "clash with L1 buffers" in errors[7] and "clash with L1 buffers" in errors[8]
    heard = [p for *_, programs in pure for p in programs]
    assert len(heard) == 9 and all(kind is Program for kind, _ in heard)
    base = ttnn.DeviceConfig().l1_unreserved_base
    assert heard[0][1] == _program(4, "G")._replace(program_id=1, device_id=0, cb_base=base)


def test_device_sim_pure_makes_the_python_launch_the_launch():
    code = "from device_sim import device_work; print(device_work.launch is device_work._launch)"
    for pure, want in (("1", "True"), ("0", str(allocator._native is None))):
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "DEVICE_SIM_PURE": pure},
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == want


# A capture whose listener hears every launch: adds in DRAM and L1, a matmul, a unary op and the binary op's
# program-hash entry, each run again (the C hook's known programs), then a matmul whose CBs clash with an L1
# tensor (the op's error, its CBs recorded). ROUTE "python" sends every launch to _launch; "c" counts those the C
# launch hands to it; DEVICE_SIM_PURE=1 runs the pure allocator as well.
MODEL = r"""
import pathlib, sys
import torch
import device_sim as ttnn
import ttreport
from device_sim import allocator, device_work

route, report = sys.argv[1], pathlib.Path(sys.argv[2])
handed = []
if route == "python":
    device_work.launch = device_work._launch
elif route == "c":
    def counted(*args):
        handed.append(args[1].name)
        return device_work._launch(*args)
    allocator._native.configure_launch(counted, device_work.Program, device_work.ProgramHash,
                                       device_work._program_ids, device_work._refuse)
torch.manual_seed(0)
dev = ttnn.open_device(0, l1_size=98_304 + 65_536)
tile = lambda *shape, **kw: ttnn.from_torch(torch.randn(*shape), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev,
                                            **kw)
with ttreport.capture(report, config=ttreport.Config(device_graphs=True)):
    a, b, w = tile(64, 64), tile(64, 64), tile(256, 256)
    for _ in range(3):
        c = ttnn.add(a, b, memory_config=ttnn.L1_MEMORY_CONFIG)
        d = ttnn.relu(ttnn.add(c, b))
        e = ttnn.matmul(w, w)
        del c, d, e
    held = tile(49_152, 32, memory_config=ttnn.L1_MEMORY_CONFIG)
    try:
        ttnn.matmul(w, w)
    except RuntimeError as err:
        print("refused", "clash with L1 buffers" in str(err))
ttnn.close_device(dev)
print("handed", handed)
"""


def _captured(tmp_path: Path, route: str) -> str:
    script = tmp_path / "model.py"
    script.write_text(MODEL)
    env = {k: v for k, v in os.environ.items() if k != "DEVICE_SIM_PURE"}
    if route == "pure":
        env["DEVICE_SIM_PURE"] = "1"
    out = subprocess.run([sys.executable, str(script), route, str(tmp_path / route)], cwd=Path(__file__).parent.parent,
                         env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return out.stdout


@native
def test_a_capture_through_the_c_launch_writes_the_report_the_python_launch_writes(tmp_path):
    out = {route: _captured(tmp_path, route) for route in ("c", "python", "pure")}
    assert all("refused True" in text for text in out.values())
    assert "handed ['MatmulDeviceOperation']" in out["c"]  # the clash alone went to _launch
    c, python, pure = (tables(tmp_path / route / "db.sqlite") for route in ("c", "python", "pure"))
    for report in (c, python, pure):  # the traceback differs: the count's frame (c), registry's Python wrapper (pure)
        report["errors"] = [tuple(f.split("Traceback")[0] if isinstance(f, str) else f for f in row)
                            for row in report["errors"]]
    assert c.keys() == python.keys() == pure.keys()
    for table in c:
        assert c[table] == python[table] == pure[table], table
    assert len(c["errors"]) == 1 and len(c["captured_graph"]) == 13  # 3 x (add, add, relu, matmul) and the clash
