"""A bank allocator that places buffers the way TT-NN's lock-step allocator does.

A buffer occupies the same address range in every bank it touches, so one free list per
buffer type describes all banks of that type. Interleaved buffers spread their pages
round-robin over all banks; a sharded buffer takes one shard per core of its grid.
DRAM is allocated bottom-up (lowest free address first) and L1 top-down (highest first),
as TT-Metal's allocator does, so that L1 tensors stay clear of circular buffers, which
grow up from the bottom of L1.

Each chip has its own allocators; the chips of a mesh allocate a mesh tensor's buffers in lock step
(LockStep, entered by MeshDevice.lockstep()), one address on every chip, as TT-NN's MeshDevice allocates
a MeshBuffer once for all its chips.

The bookkeeping runs in C (device_sim/_native.c: NativeBankAllocator, NativeDeviceMemory) when that
optional extension was built by `pip install`; otherwise, or with DEVICE_SIM_PURE=1 in the environment
(or `allocator.NATIVE = False` before a device opens), in the pure-Python classes below. Both give the
same addresses, buffers, listener events and errors for the same calls (tests/test_native_allocator.py).

    >>> from device_sim.allocator import BufferType, TensorMemoryLayout, device_memory
    >>> memory = device_memory(0, {BufferType.DRAM: dict(num_banks=12, bank_size=1 << 30, base=0,
    ...                                                   alignment=32, bottom_up=True)})
    >>> memory.allocate(BufferType.DRAM, TensorMemoryLayout.INTERLEAVED, page_size=2048, num_pages=24).address
    0
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from typing import NamedTuple

from device_sim.types import BufferType, TensorMemoryLayout


class OutOfMemoryError(MemoryError):
    """The device has no free block large enough; the message lists what is using memory."""


# A NamedTuple, not a frozen dataclass: every op's output makes one, and a frozen dataclass's
# __init__ (a setattr per field) cost 1.3 us of a 32x32 add's 17 (0.5 us this way).
class Buffer(NamedTuple):
    buffer_id: int
    device_id: int
    buffer_type: BufferType
    buffer_layout: TensorMemoryLayout
    address: int  # offset in each bank
    max_size_per_bank: int
    page_size: int
    num_pages: int
    num_banks: int  # banks (or shard cores) that hold its pages
    # A sharded buffer's (x, y) core of each shard, in shard order (DRAM shards: (bank, 0)); None if interleaved.
    cores: tuple[tuple[int, int], ...] | None = None

    @property
    def size(self) -> int:
        return self.page_size * self.num_pages


_buffer_ids = itertools.count(1)
_new_buffer = tuple.__new__


def _rounded(size_per_bank: int, alignment: int) -> int:
    """The bytes a buffer of `size_per_bank` takes in each bank: at least 1, rounded up to the alignment."""
    return -(-max(size_per_bank, 1) // alignment) * alignment


class BankAllocator:
    """Free-list allocator for one buffer type; addresses are bank offsets in [base, bank_size)."""

    def __init__(self, buffer_type: BufferType, *, num_banks: int, bank_size: int, base: int,
                 alignment: int, bottom_up: bool):
        self.buffer_type = buffer_type
        self.num_banks = num_banks
        self.bank_size = bank_size
        self.base = base
        self.alignment = alignment
        self.bottom_up = bottom_up
        self._free: list[list[int]] = [[base, bank_size]]  # sorted [start, end) blocks
        self.live: dict[int, Buffer] = {}
        self.bytes_per_bank_used = 0

    def free_bytes_per_bank(self) -> int:
        return sum(e - s for s, e in self._free)

    def free_blocks(self) -> list[list[int]]:
        """The free list: [start, end) pairs in address order."""
        return [list(b) for b in self._free]

    def largest_free_block(self) -> int:
        return max((e - s for s, e in self._free), default=0)

    def lowest_occupied_address(self) -> int | None:
        """The lowest address any live buffer holds (every bank alike: lock-step), or None if none is live.

        O(1) from the sorted free list: circular buffers (device_work.launch) must end below it.
        """
        if not self.live:
            return None
        free = self._free
        return free[0][1] if free and free[0][0] == self.base else self.base

    def allocate(self, size_per_bank: int) -> int:
        size = _rounded(size_per_bank, self.alignment)
        blocks = self._free if self.bottom_up else reversed(self._free)
        for block in blocks:
            start, end = block
            if end - start < size:
                continue
            if self.bottom_up:
                addr = start
                block[0] = start + size
            else:
                addr = end - size
                block[1] = addr
            if block[0] == block[1]:
                self._free.remove(block)
            self.bytes_per_bank_used += size
            return addr
        raise OutOfMemoryError(size)

    def _holding(self, addr: int, size: int) -> int:
        """Index of the free block that holds all of [addr, addr + size), or -1."""
        for i, (start, end) in enumerate(self._free):
            if start > addr:
                break
            if addr + size <= end:
                return i
        return -1

    def is_free(self, addr: int, size_per_bank: int) -> bool:
        """Whether allocate_at(addr, size_per_bank) would take the block."""
        return self._holding(addr, _rounded(size_per_bank, self.alignment)) >= 0

    def allocate_at(self, addr: int, size_per_bank: int) -> bool:
        """Take exactly [addr, addr + size) (size rounded up to the alignment): a mesh buffer's one address on
        this chip. False, and nothing taken, when that range is not wholly free."""
        size = _rounded(size_per_bank, self.alignment)
        i = self._holding(addr, size)
        if i < 0:
            return False
        block = self._free[i]
        if block[0] < addr and addr + size < block[1]:  # from the middle: the block splits in two
            self._free.insert(i + 1, [addr + size, block[1]])
            block[1] = addr
        elif block[0] == addr:
            block[0] += size
            if block[0] == block[1]:
                del self._free[i]
        else:
            block[1] = addr
        self.bytes_per_bank_used += size
        return True

    def release(self, addr: int, size_per_bank: int) -> None:
        size = _rounded(size_per_bank, self.alignment)
        self.bytes_per_bank_used -= size
        start, end = addr, addr + size
        free = self._free
        i = 0
        while i < len(free) and free[i][0] < start:
            i += 1
        free.insert(i, [start, end])
        # Coalesce with the neighbours.
        if i + 1 < len(free) and free[i][1] == free[i + 1][0]:
            free[i][1] = free.pop(i + 1)[1]
        if i > 0 and free[i - 1][1] == free[i][0]:
            free[i - 1][1] = free.pop(i)[1]


class DeviceMemory:
    """The DRAM and L1 allocators of one device, and every live buffer on it."""

    def __init__(self, device_id: int, allocators: dict[BufferType, BankAllocator]):
        self.device_id = device_id
        self.allocators = allocators
        self._lock = threading.RLock()  # re-entrant: a GC-run Tensor.__del__ may free inside allocate
        self.listener = None  # called with ("alloc" | "free", Buffer); ttreport's seam
        self.lockstep: LockStep | None = None  # set while this chip's mesh allocates in lock step (lockstep())

    def allocate(self, buffer_type: BufferType, layout: TensorMemoryLayout, *, page_size: int,
                 num_pages: int, num_banks: int | None = None, pages_per_bank: int | None = None,
                 cores: tuple[tuple[int, int], ...] | None = None) -> Buffer:
        alloc = self.allocators[buffer_type]
        banks = num_banks or alloc.num_banks
        per_bank = pages_per_bank if pages_per_bank is not None else -(-num_pages // banks)
        size_per_bank = per_bank * page_size
        with self._lock:
            try:
                step = self.lockstep
                addr = alloc.allocate(size_per_bank) if step is None else step.place(self, alloc, size_per_bank)
            except OutOfMemoryError:
                where = "" if not cores else f" core (x={cores[0][0]},y={cores[0][1]}) (the first of {len(cores)}):"
                raise OutOfMemoryError(self._oom_message(alloc, size_per_bank, num_pages * page_size, where)) from None
            buf = Buffer(next(_buffer_ids), self.device_id, buffer_type, layout, addr,
                         size_per_bank, page_size, num_pages, banks, cores)
            alloc.live[buf.buffer_id] = buf
        if self.listener is not None:
            self.listener("alloc", buf)
        return buf

    def allocate_like(self, like: Buffer) -> Buffer:
        """A new buffer of `like`'s type, layout and size, interleaved: the output of an op whose result has
        its input's spec (element-wise ops), with none of allocate()'s page arithmetic."""
        alloc = self.allocators[like.buffer_type]
        with self._lock:
            try:
                step = self.lockstep
                addr = (alloc.allocate(like.max_size_per_bank) if step is None
                        else step.place(self, alloc, like.max_size_per_bank))
            except OutOfMemoryError:
                self._raise_oom_like(like)
            # Field by field as allocate() makes them (_replace is 2x slower): id, device, type, layout, address, rest.
            buf = _new_buffer(Buffer, (next(_buffer_ids), like[1], like[2], like[3], addr, *like[5:]))
            alloc.live[buf.buffer_id] = buf
        if self.listener is not None:
            self.listener("alloc", buf)
        return buf

    def free(self, buf: Buffer) -> None:
        alloc = self.allocators[buf.buffer_type]
        with self._lock:
            if alloc.live.pop(buf.buffer_id, None) is None:
                return  # already freed: deallocate() then garbage collection
            alloc.release(buf.address, buf.max_size_per_bank)
        if self.listener is not None:
            self.listener("free", buf)

    def live_buffers(self) -> list[Buffer]:
        with self._lock:
            return [b for a in self.allocators.values() for b in a.live.values()]

    def bytes_used(self, buffer_type: BufferType) -> int:
        """Bytes in use across all banks of one type."""
        a = self.allocators[buffer_type]
        return a.bytes_per_bank_used * a.num_banks

    def _raise_oom_like(self, like: Buffer):
        alloc = self.allocators[like.buffer_type]
        raise OutOfMemoryError(self._oom_message(alloc, like.max_size_per_bank, like.size)) from None

    def _oom_message(self, alloc: BankAllocator, size_per_bank: int, total: int, where: str = "") -> str:
        largest = sorted(alloc.live.values(), key=lambda b: -b.max_size_per_bank)[:5]
        listing = "; ".join(
            f"buffer {b.buffer_id} at {b.address:#x}: {b.max_size_per_bank} B/bank ({b.buffer_layout.name})"
            for b in largest
        ) or "none"
        return (
            f"Out of {alloc.buffer_type.name} memory on device {self.device_id}:{where} requested "
            f"{size_per_bank} B per bank ({total} B in all) over {alloc.num_banks} banks, but only "
            f"{alloc.free_bytes_per_bank()} B per bank are free and the largest free block is "
            f"{alloc.largest_free_block()} B. Largest live buffers: {listing}. "
            f"Deallocate tensors you no longer need (tensor.deallocate()) or place this one in "
            f"{'DRAM' if alloc.buffer_type == BufferType.L1 else 'a smaller memory config'}."
        )


class LockStep:
    """One mesh-wide action's allocations (an op on a mesh's tensors, a tensor sent to a mesh), in lock step.

    TT-NN allocates a mesh buffer once, in the MeshDevice's own allocator, and makes each chip's buffer at that
    one address (tt_metal/distributed/mesh_buffer.cpp: MeshBuffer::create, initialize_device_buffers). Here each
    chip still books its own buffer (its id, its listener event, its free list, so a chip's view of its memory
    stays whole), but the k-th allocation a chip makes in the action takes the address of the k-th mesh buffer:
    the one the first chip to make a k-th allocation chose.

    That first choice is the chip's own first fit when the range is free on every chip (always, while the chips
    hold the same buffers); else the first fit among the ranges free on all of them, as TT-NN's mesh allocator
    picks in its HYBRID mode (which reads each chip's own allocator). A chip whose k-th allocation differs (another
    buffer type or size: shards of unequal shapes) or whose range is taken (by buffers made on that chip alone)
    allocates on its own, and that tensor's shards then have no one address.
    """

    __slots__ = ("memories", "placed", "made")

    def __init__(self, memories: list[DeviceMemory]):
        self.memories = memories
        self.placed: list[tuple[BufferType, int, int]] = []  # the k-th mesh buffer: (type, size per bank, address)
        self.made: dict[int, int] = {}  # id(memory) -> how many allocations that chip has made in this action

    def place(self, memory: DeviceMemory, alloc: BankAllocator, size_per_bank: int) -> int:
        """The address of `memory`'s next buffer, taken from `alloc` (raises OutOfMemoryError as allocate())."""
        k = self.made.get(id(memory), 0)
        self.made[id(memory)] = k + 1
        if k < len(self.placed):
            buffer_type, size, addr = self.placed[k]
            if buffer_type == alloc.buffer_type and size == size_per_bank and alloc.allocate_at(addr, size):
                return addr
            return alloc.allocate(size_per_bank)
        addr = self._choose(memory, alloc, size_per_bank)
        self.placed.append((alloc.buffer_type, size_per_bank, addr))
        return addr

    def _choose(self, memory: DeviceMemory, alloc: BankAllocator, size_per_bank: int) -> int:
        addr = alloc.allocate(size_per_bank)
        others = [m.allocators[alloc.buffer_type] for m in self.memories if m is not memory]
        if all(o.is_free(addr, size_per_bank) for o in others):
            return addr
        alloc.release(addr, size_per_bank)
        common = _common_first_fit([alloc, *others], size_per_bank)
        if common is not None and alloc.allocate_at(common, size_per_bank):
            return common
        return alloc.allocate(size_per_bank)  # no range is free on every chip: this one's own


def _common_first_fit(allocs: list[BankAllocator], size_per_bank: int) -> int | None:
    """Where first fit places `size_per_bank` among the ranges free in every one of `allocs` (chips of one
    geometry), or None if no such range is large enough."""
    first = allocs[0]
    size = _rounded(size_per_bank, first.alignment)
    common = first.free_blocks()
    for other in allocs[1:]:
        theirs, both, i, j = other.free_blocks(), [], 0, 0
        while i < len(common) and j < len(theirs):  # two sorted lists of [start, end): their overlaps
            start, end = max(common[i][0], theirs[j][0]), min(common[i][1], theirs[j][1])
            if start < end:
                both.append([start, end])
            if common[i][1] < theirs[j][1]:
                i += 1
            else:
                j += 1
        common = both
    fits = [b for b in common if b[1] - b[0] >= size]
    if not fits:
        return None
    return fits[0][0] if first.bottom_up else fits[-1][1] - size


@contextlib.contextmanager
def lockstep(memories):
    """Allocations on `memories` (the chips of a mesh) inside this block are the mesh's, made in lock step:
    LockStep. A block inside another one over any of the same chips is part of that one."""
    memories = list(memories)
    if len(memories) < 2 or any(m.lockstep is not None for m in memories):
        yield
        return
    step = LockStep(memories)
    for m in memories:
        m.lockstep = step
    try:
        yield
    finally:
        for m in memories:
            m.lockstep = None


try:
    import device_sim._native as _native
except ImportError:  # built without a C compiler (setup.py's extension is optional): the pure classes
    _native = None

# Read when a device opens (device_memory), so a test can open one device of each kind in one process.
NATIVE = _native is not None and os.environ.get("DEVICE_SIM_PURE", "") in ("", "0")

if _native is not None:
    _native.configure(OutOfMemoryError, Buffer, _buffer_ids)

    class NativeBankAllocator(_native.Banks):
        """BankAllocator with its free list, live buffers and byte count held in C: the same methods and
        attributes, the same results call for call."""

        def __init__(self, buffer_type: BufferType, *, num_banks: int, bank_size: int, base: int,
                     alignment: int, bottom_up: bool):
            super().__init__(base, bank_size, alignment, bottom_up)
            self.buffer_type = buffer_type
            self.num_banks = num_banks

        @property
        def _free(self) -> list[list[int]]:
            return self.free_blocks()

    class NativeDeviceMemory(_native.Memory, DeviceMemory):
        """DeviceMemory whose allocate_like() and free() (every element-wise op's output and its free) run in
        C over NativeBankAllocators; the rest is DeviceMemory's own Python."""

        def __init__(self, device_id: int, allocators: dict[BufferType, NativeBankAllocator]):
            DeviceMemory.__init__(self, device_id, allocators)
            self._attach(allocators)

        # What the C allocate_like calls while `lockstep` is set: a mesh buffer's address is the mesh's.
        _allocate_like_in_lockstep = DeviceMemory.allocate_like


def device_memory(device_id: int, banks: dict[BufferType, dict]) -> DeviceMemory:
    """One device's memory: a bank allocator per buffer type, made from `banks` (BankAllocator's keyword
    arguments for each type); the C classes when NATIVE is set, else the pure-Python ones."""
    native = NATIVE
    make = NativeBankAllocator if native else BankAllocator
    allocators = {buffer_type: make(buffer_type, **kw) for buffer_type, kw in banks.items()}
    return (NativeDeviceMemory if native else DeviceMemory)(device_id, allocators)
