"""The C bank allocator (device_sim/_native.c) against the pure-Python one: same calls, same results.

Each test drives both with one sequence of allocations and frees and compares addresses, free lists,
buffers, listener events and error texts; then whole op sequences on a device of each kind compare
outputs bit for bit. DEVICE_SIM_PURE=1 (or allocator.NATIVE = False) selects the pure classes.
"""

from __future__ import annotations

import gc
import os
import random
import re
import subprocess
import sys
import sysconfig
import threading

import pytest
import torch

import device_sim as ttnn
from device_sim import allocator
from device_sim.allocator import BankAllocator, Buffer, DeviceMemory, OutOfMemoryError, device_memory
from device_sim.types import BufferType, TensorMemoryLayout

native = pytest.mark.skipif(allocator._native is None, reason="device_sim._native was not built (no C compiler)")
INTERLEAVED = TensorMemoryLayout.INTERLEAVED
BANKS = {
    BufferType.DRAM: dict(num_banks=12, bank_size=1 << 20, base=0x4000, alignment=32, bottom_up=True),
    BufferType.L1: dict(num_banks=64, bank_size=64 << 10, base=0x2000, alignment=16, bottom_up=False),
}


def _both(monkeypatch) -> tuple[DeviceMemory, DeviceMemory]:
    memories = []
    for flag in (False, True):
        monkeypatch.setattr(allocator, "NATIVE", flag)
        memories.append(device_memory(0, BANKS))
    return memories[0], memories[1]


def _without_ids(text: str) -> str:
    return re.sub(r"buffer \d+", "buffer N", text)


def test_the_native_allocator_is_built_where_a_c_compiler_is():
    if not sysconfig.get_config_var("CC"):
        pytest.skip("this Python knows no C compiler")
    assert allocator._native is not None, "pip install -e . should have built device_sim._native (setup.py)"


@native
def test_the_two_bank_allocators_give_the_same_addresses_for_the_same_allocations_and_frees():
    for kw in BANKS.values():
        pure = BankAllocator(BufferType.L1, **kw)
        fast = allocator.NativeBankAllocator(BufferType.L1, **kw)
        rng = random.Random(7)
        held: list[tuple[int, int]] = []
        for step in range(3000):
            if held and rng.random() < 0.45:
                addr, size = held.pop(rng.randrange(len(held)))
                pure.release(addr, size)
                fast.release(addr, size)
            else:
                size = rng.choice([0, 1, 31, 32, 33, 2048, 4096, 30000, rng.randrange(1, 200000)])
                outcomes = []
                for a in (pure, fast):
                    try:
                        outcomes.append(a.allocate(size))
                    except OutOfMemoryError as e:
                        outcomes.append(("oom", e.args))
                assert outcomes[0] == outcomes[1], f"step {step}: allocate({size})"
                if not isinstance(outcomes[0], tuple):
                    held.append((outcomes[0], size))
            assert fast.free_blocks() == pure.free_blocks() == pure._free, f"step {step}"
            assert fast.bytes_per_bank_used == pure.bytes_per_bank_used
            assert fast.free_bytes_per_bank() == pure.free_bytes_per_bank()
            assert fast.largest_free_block() == pure.largest_free_block()
        assert (fast.base, fast.bank_size, fast.alignment, fast.bottom_up) == (pure.base, pure.bank_size,
                                                                                 pure.alignment, pure.bottom_up)


@native
def test_the_two_bank_allocators_take_the_same_exact_ranges_for_a_mesh_buffer():
    # allocate_at / is_free: where a chip puts a buffer at the address its mesh chose (allocator.LockStep)
    for kw in BANKS.values():
        pure = BankAllocator(BufferType.L1, **kw)
        fast = allocator.NativeBankAllocator(BufferType.L1, **kw)
        rng, align = random.Random(11), kw["alignment"]
        held: list[tuple[int, int]] = []
        outcomes = []
        for step in range(3000):
            if held and rng.random() < 0.4:
                addr, size = held.pop(rng.randrange(len(held)))
                pure.release(addr, size)
                fast.release(addr, size)
                continue
            size = rng.choice([1, 16, 32, 33, 2048, rng.randrange(1, 50000)])
            blocks = pure.free_blocks()
            if blocks and rng.random() < 0.8:  # somewhere inside a free block: its start, end or middle
                start, end = rng.choice(blocks)
                addr = rng.choice([start, max(start, (end - size) // align * align),
                                   start + (end - start) // 2 // align * align])
            else:  # anywhere, often across a live buffer
                addr = kw["base"] + rng.randrange(0, kw["bank_size"] - kw["base"]) // align * align
            assert pure.is_free(addr, size) == fast.is_free(addr, size), f"step {step}"
            taken = pure.allocate_at(addr, size)
            assert fast.allocate_at(addr, size) == taken, f"step {step}: allocate_at({addr}, {size})"
            outcomes.append(taken)
            if taken:
                held.append((addr, size))
            assert fast.free_blocks() == pure.free_blocks(), f"step {step}"
            assert fast.bytes_per_bank_used == pure.bytes_per_bank_used
        assert outcomes.count(True) > 300 and outcomes.count(False) > 100  # both answers, many times


@native
def test_chips_allocating_in_lock_step_get_the_same_addresses_on_both_paths(monkeypatch):
    # Four chips of each kind; chip 2 holds a buffer alone first, so the mesh's buffers must keep clear of it
    results = []
    for flag in (False, True):
        monkeypatch.setattr(allocator, "NATIVE", flag)
        chips = [device_memory(i, BANKS) for i in range(4)]
        alone = chips[2].allocate(BufferType.L1, INTERLEAVED, page_size=2048, num_pages=64)
        placed = []
        for _ in range(3):
            with allocator.lockstep(chips):
                bufs = [m.allocate(BufferType.L1, INTERLEAVED, page_size=1024, num_pages=128) for m in chips]
                likes = [m.allocate_like(b) for m, b in zip(chips, bufs)]  # C's allocate_like on the native path
                for m, b in zip(chips, bufs):
                    m.free(b)
            placed.append(([b.address for b in bufs], [b.address for b in likes]))
        outside = chips[0].allocate(BufferType.L1, INTERLEAVED, page_size=1024, num_pages=128)
        results.append((alone.address, placed, outside.address, chips[1].allocators[BufferType.L1].free_blocks()))
        assert all(m.lockstep is None for m in chips)
    assert results[0] == results[1]
    alone_at, placed, outside_at, _ = results[0]
    for bufs, likes in placed:
        assert len(set(bufs)) == 1 and len(set(likes)) == 1  # one address on every chip
        assert alone_at not in bufs and alone_at not in likes  # chip 2's own buffer is not overlapped
    assert outside_at == alone_at  # outside the block chip 0 allocates on its own: its own first fit


@native
def test_the_two_device_memories_give_the_same_buffers_events_and_errors(monkeypatch):
    pure, fast = _both(monkeypatch)
    events = {id(pure): [], id(fast): []}
    for m in (pure, fast):
        log = events[id(m)]
        m.listener = lambda kind, buf, log=log: log.append((kind, buf[1:]))  # every field but the id
    assert type(fast).__name__ == "NativeDeviceMemory" and type(pure) is DeviceMemory
    rng = random.Random(3)
    held = {id(pure): [], id(fast): []}
    for step in range(2000):
        bt = rng.choice([BufferType.DRAM, BufferType.L1])
        choice = rng.random()
        results = []
        for m in (pure, fast):
            mine = held[id(m)]
            try:
                if mine and choice < 0.4:
                    m.free(mine.pop(random.Random(step).randrange(len(mine))))  # the same index for both
                    results.append("freed")
                elif mine and choice < 0.7:
                    like = mine[random.Random(step).randrange(len(mine))]
                    mine.append(m.allocate_like(like))
                    results.append(mine[-1][1:])
                else:
                    pages = random.Random(step).choice([1, 3, 64, 500, 4000])
                    mine.append(m.allocate(bt, INTERLEAVED, page_size=2048, num_pages=pages))
                    results.append(mine[-1][1:])
            except OutOfMemoryError as e:
                results.append(_without_ids(str(e)))
        assert results[0] == results[1], f"step {step}"
    assert events[id(pure)] == events[id(fast)] and len(events[id(fast)]) > 1000
    assert [b[1:] for b in pure.live_buffers()] == [b[1:] for b in fast.live_buffers()]
    for bt in BANKS:
        assert pure.bytes_used(bt) == fast.bytes_used(bt)
        assert pure.allocators[bt].lowest_occupied_address() == fast.allocators[bt].lowest_occupied_address()
    # A second free of a buffer does nothing in both, and tells the listener nothing.
    for m in (pure, fast):
        buf = held[id(m)][0]
        m.free(buf)
        before = len(events[id(m)])
        m.free(buf)
        assert len(events[id(m)]) == before


@native
def test_an_allocate_like_that_does_not_fit_raises_the_pure_paths_out_of_memory_text(monkeypatch):
    pure, fast = _both(monkeypatch)
    texts = []
    for m in (pure, fast):
        big = m.allocate(BufferType.L1, INTERLEAVED, page_size=2048, num_pages=64 * 20)
        with pytest.raises(OutOfMemoryError) as e:
            m.allocate_like(big)
        texts.append(_without_ids(str(e.value)))
        assert e.value.__cause__ is None
    assert texts[0] == texts[1]
    assert "Out of L1 memory on device 0: requested 40960 B per bank" in texts[1]


@native
def test_the_native_memory_rejects_what_is_not_a_buffer_of_its_banks(monkeypatch):
    _, fast = _both(monkeypatch)
    with pytest.raises(TypeError, match="expected a device_sim Buffer, got tuple"):
        fast.free((1, 0, BufferType.L1))
    stray = Buffer(1, 0, BufferType.TRACE, INTERLEAVED, 0, 32, 32, 1, 1)
    with pytest.raises(KeyError):
        fast.allocate_like(stray)


@native
def test_threads_and_the_garbage_collector_freeing_inside_allocations_leave_the_free_list_whole(monkeypatch):
    # 64 MiB banks (32,000 of these buffers): a Holder the collector met while it was still referenced moves to
    # an older generation and waits for a rarer collection; with the 1 MiB banks (504) and a large heap left by
    # earlier tests, those waiting Holders filled DRAM now and then (an OutOfMemoryError, not a broken list)
    monkeypatch.setattr(allocator, "NATIVE", True)
    banks = {**BANKS, BufferType.DRAM: dict(BANKS[BufferType.DRAM], bank_size=64 << 20)}
    fast = device_memory(0, banks)
    like = fast.allocate(BufferType.DRAM, INTERLEAVED, page_size=2048, num_pages=12)
    errors = []

    class Holder:  # a cycle, so only the collector frees its buffer: inside some later allocation
        def __init__(self, buf):
            self.buf, self.me = buf, self

        def __del__(self):
            fast.free(self.buf)

    def work(seed):
        try:
            churn(seed)
        except BaseException as e:  # noqa: BLE001  (the main thread fails the test with it)
            errors.append(e)

    def churn(seed):
        rng = random.Random(seed)
        mine = []
        for _ in range(3000):
            if mine and rng.random() < 0.5:
                fast.free(mine.pop(rng.randrange(len(mine))))
            else:
                buf = fast.allocate_like(like)
                if rng.random() < 0.3:
                    Holder(buf)
                else:
                    mine.append(buf)
        for buf in mine:
            fast.free(buf)

    old = gc.get_threshold()
    gc.set_threshold(50)  # collections often, so many land inside allocate_like's Buffer
    try:
        threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        gc.collect()
    finally:
        gc.set_threshold(*old)
    assert not errors
    fast.free(like)
    dram = fast.allocators[BufferType.DRAM]
    assert dram.free_blocks() == [[banks[BufferType.DRAM]["base"], banks[BufferType.DRAM]["bank_size"]]]
    assert dram.bytes_per_bank_used == 0 and not dram.live


def _run_model(device) -> tuple[list, list]:
    """A few ops of each memory kind; their outputs and every buffer event's fields but the id."""
    events = []

    def listen(kind, what):  # every field but the process-wide counters' (buffer id, program id)
        events.append((kind, what[:5] + what[6:] if kind == "program" else what[1:]))

    device.memory.listener = listen
    g = torch.Generator().manual_seed(0)
    x = ttnn.from_torch(torch.randn(64, 96, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    w = ttnn.from_torch(torch.randn(96, 64, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                        memory_config=ttnn.L1_MEMORY_CONFIG)
    outs = []
    for i in range(20):
        y = ttnn.add(x, x) if i % 2 else ttnn.mul(x, 0.5)
        z = ttnn.matmul(y, w, memory_config=ttnn.L1_MEMORY_CONFIG)
        outs += [ttnn.to_torch(y), ttnn.to_torch(ttnn.relu(z))]
        if i % 3 == 0:
            ttnn.deallocate(z)
        x = ttnn.sub(y, 1.0)
    device.memory.listener = None
    return outs, events


@native
def test_a_model_on_the_native_allocator_matches_the_pure_one_bit_for_bit(monkeypatch):
    results = []
    for flag in (False, True):
        monkeypatch.setattr(allocator, "NATIVE", flag)
        device = ttnn.open_device(0)
        try:
            assert (type(device.memory).__name__ == "NativeDeviceMemory") == flag
            results.append(_run_model(device))
        finally:
            ttnn.close_device(device)
    (pure_outs, pure_events), (fast_outs, fast_events) = results
    assert len(pure_outs) == len(fast_outs) == 40
    for p, f in zip(pure_outs, fast_outs):
        assert p.dtype == f.dtype and torch.equal(p.view(torch.int16), f.view(torch.int16))
    assert pure_events == fast_events and any(kind == "free" for kind, _ in fast_events)


def test_device_sim_pure_in_the_environment_selects_the_pure_classes():
    code = "import device_sim as ttnn; d = ttnn.open_device(0); print(type(d.memory).__name__)"
    env = {**os.environ, "DEVICE_SIM_PURE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "DeviceMemory"


def _outputs_of_each_kind(device) -> list[tuple]:
    """ttnn.add's output on TILE and ROW_MAJOR, bfloat16 and float32, DRAM and L1: every field of its spec."""
    seen = []
    g = torch.Generator().manual_seed(1)
    for layout in (ttnn.TILE, ttnn.ROW_MAJOR):
        for dtype in (ttnn.bfloat16, ttnn.float32):
            for memory in (ttnn.DRAM_MEMORY_CONFIG, ttnn.L1_MEMORY_CONFIG):
                x = ttnn.from_torch(torch.randn(40, 72, generator=g), dtype=dtype, layout=layout, device=device,
                                    memory_config=memory)
                y = ttnn.add(x, x)
                assert y.tensor_id > x.tensor_id
                seen.append((y.dtype, y.layout, y.tile, y.memory_config(), y.memory_config_source, y.buffer[1:],
                             y.value.dtype, y.value.view(torch.int16 if dtype == ttnn.bfloat16 else torch.int32)))
    return seen


@native
def test_an_element_wise_output_tensor_made_in_c_has_every_field_the_pure_path_gives(monkeypatch):
    results = []
    for flag in (False, True):
        monkeypatch.setattr(allocator, "NATIVE", flag)
        device = ttnn.open_device(0)
        try:
            results.append(_outputs_of_each_kind(device))
        finally:
            ttnn.close_device(device)
    for pure, fast in zip(*results):
        assert pure[:-1] == fast[:-1]
        assert torch.equal(pure[-1], fast[-1])


@native
def test_an_output_that_does_not_fit_in_l1_raises_and_frees_nothing_on_the_native_memory(monkeypatch):
    monkeypatch.setattr(allocator, "NATIVE", True)
    device = ttnn.open_device(0)
    try:
        l1 = device.memory.allocators[BufferType.L1]
        x = ttnn.from_torch(torch.ones(1024, 1024), dtype=ttnn.float32, layout=ttnn.TILE, device=device,
                            memory_config=ttnn.L1_MEMORY_CONFIG)
        ys = []
        with pytest.raises(OutOfMemoryError, match="Out of L1 memory on device 0"):
            for _ in range(100):
                ys.append(ttnn.add(x, x))
        used = l1.bytes_per_bank_used
        assert len(l1.live) == len(ys) + 1  # the failed output holds no buffer
        del ys
        gc.collect()
        assert l1.bytes_per_bank_used < used and len(l1.live) == 1
    finally:
        ttnn.close_device(device)


def test_device_sim_runs_on_the_pure_classes_when_the_extension_is_missing():
    code = (
        "import sys; sys.modules['device_sim._native'] = None  # as if pip had no C compiler\n"
        "import torch, types, device_sim as ttnn\n"
        "from device_sim import allocator\n"
        "d = ttnn.open_device(0)\n"
        "x = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=d)\n"
        "y = ttnn.add(x, x)\n"
        "print(allocator.NATIVE, type(d.memory).__name__, isinstance(ttnn.add, types.FunctionType), "
        "float(y.value[0, 0]), y.buffer.address == x.buffer.address + x.buffer.max_size_per_bank)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "DeviceMemory", "True", "2.0", "True"]


def _drop_tensors_and_views(device) -> tuple[list, int]:
    """Outputs dropped one by one, views (reshape without a copy) dropped before and after their base, a
    deallocated tensor dropped, a host tensor dropped: every free event, and the bytes still used at the end."""
    events = []
    device.memory.listener = lambda kind, what: events.append((kind, what))
    g = torch.Generator().manual_seed(3)
    x = ttnn.from_torch(torch.randn(1, 1, 64, 96, generator=g), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR_LAYOUT,
                        device=device)
    for i in range(6):
        y = ttnn.add(x, x)
        v = ttnn.reshape(y, (2, 1, 32, 96))  # a view (the same last dim): y's buffer, held twice
        assert v.buffer is y.buffer
        if i % 2:
            del y  # the view keeps the buffer
            gc.collect()
            assert not any(kind == "free" and what.buffer_id == v.buffer.buffer_id for kind, what in events)
        else:
            del v
        ttnn.deallocate(ttnn.mul(x, 2.0))
        host = ttnn.from_torch(torch.ones(4, 4))
        del host
    x = y = v = None  # noqa: F841 - the last ones dropped
    gc.collect()
    used = sum(device.memory.bytes_used(t) for t in (BufferType.DRAM, BufferType.L1))
    device.memory.listener = None
    return [(kind, what[1:]) for kind, what in events], used  # but the process-wide buffer ids


@native
def test_a_tensors_finalizer_in_c_frees_what_the_python_one_frees():
    """Tensor.__del__ is _native's C function (ops/common.py): the same free events, in the same order, as the
    Python one it replaces, with views sharing a buffer; DEVICE_SIM_PURE keeps the Python one."""
    from device_sim.tensor import Tensor

    native_del = Tensor.__dict__["__del__"]
    assert native_del is not Tensor._python_del and allocator.NATIVE
    results = []
    for finalizer in (Tensor._python_del, native_del):
        Tensor.__del__ = finalizer
        device = ttnn.open_device(0)
        try:
            results.append(_drop_tensors_and_views(device))
        finally:
            ttnn.close_device(device)
            Tensor.__del__ = native_del
    (python_events, python_used), (c_events, c_used) = results
    assert python_events == c_events and sum(kind == "free" for kind, _ in c_events) == 13
    assert python_used == c_used == 0
    code = ("import device_sim as ttnn; from device_sim.tensor import Tensor; "
            "print(Tensor.__dict__['__del__'] is Tensor._python_del)")
    env = {**os.environ, "DEVICE_SIM_PURE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
