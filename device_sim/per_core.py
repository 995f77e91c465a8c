"""Per-core L1 allocation: TT-Metal's HYBRID allocator mode (MemoryConfig.experimental_set_per_core_allocation).

    cfg.experimental_set_per_core_allocation(True)     # a sharded L1 config
    t = ttnn.from_torch(x, device=device, memory_config=cfg)
    t.experimental_per_core_buffer_address(ttnn.CoreCoord(0, 0))

Each shard takes its own address from its core's own free list, top-down, so two cores can hold shards at the same
address; the lock-step allocator (allocator.py) places a buffer at one address in every bank. Neither overlaps the
other on a core: a per-core shard is placed only where the lock-step list is free, and the union of all per-core
shards is held in the lock-step list as reservations (allocate_at), so lock-step buffers step around them with no
change to that allocator. A core's own list is the lock-step free list with the reservations handed back, less its
own shards. Only the bookkeeping is here; the buffer's values live in its tensor as every tensor's do.
"""

from __future__ import annotations

import itertools
import weakref

from device_sim.allocator import Buffer, OutOfMemoryError
from device_sim.types import BufferType

_ids = itertools.count(1 << 40)  # buffer ids apart from the lock-step allocator's


class PerCoreL1:
    """One device's per-core L1 shards and their reservations in its lock-step L1 list."""

    def __init__(self, memory):
        self.memory = memory
        self.banks = memory.allocators[BufferType.L1]
        self.shards: dict[tuple[int, int], dict[int, tuple[int, int]]] = {}  # core -> buffer id -> (address, size)
        self.reserved: list[tuple[int, int]] = []

    def allocate(self, cores: tuple, size: int) -> tuple[int, dict]:
        """(a buffer id, each core's address) for a shard of `size` bytes on each of `cores`."""
        size = -(-max(size, 1) // self.banks.alignment) * self.banks.alignment
        buffer_id, placed = next(_ids), {}
        with self.memory._lock:
            self._unreserve()
            try:
                for core in cores:
                    addr = self._highest_fit(core, size)
                    if addr is None:
                        raise OutOfMemoryError(f"Out of Memory: Not enough space to allocate {size} B of L1 on core "
                                               f"(x={core[0]},y={core[1]}) in per-core allocation")
                    self.shards.setdefault(core, {})[buffer_id] = (addr, size)
                    placed[core] = addr
            except OutOfMemoryError:
                for core in placed:
                    del self.shards[core][buffer_id]
                raise
            finally:
                self._reserve()
        return buffer_id, placed

    def free(self, buffer_id: int) -> None:
        with self.memory._lock:
            self._unreserve()
            for held in self.shards.values():
                held.pop(buffer_id, None)
            self._reserve()

    def _highest_fit(self, core, size: int) -> int | None:
        """The highest address of `size` free bytes on `core`: the lock-step free list less the core's shards."""
        free = self.banks.free_blocks()
        for addr, n in self.shards.get(core, {}).values():
            free = [piece for start, end in free for piece in ((start, min(end, addr)), (max(start, addr + n), end))
                    if piece[0] < piece[1]]
        for start, end in sorted(free, reverse=True):
            if end - start >= size:
                return end - size
        return None

    def _unreserve(self) -> None:
        for addr, n in self.reserved:
            self.banks.release(addr, n)
        self.reserved = []

    def _reserve(self) -> None:
        spans = sorted(span for held in self.shards.values() for span in held.values())
        merged: list[list[int]] = []
        for addr, n in spans:
            if merged and addr <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], addr + n)
            else:
                merged.append([addr, addr + n])
        for start, end in merged:
            taken = self.banks.allocate_at(start, end - start)
            assert taken, "a per-core shard overlaps a lock-step buffer"  # _highest_fit placed it in a free block
            self.reserved.append((start, end - start))


def allocate(device, layout, page_size: int, pages_per_core: int, cores: tuple) -> Buffer:
    """A sharded L1 buffer whose shards each have their own address (Buffer.address: the first core's)."""
    memory = device.memory
    per_core = getattr(memory, "per_core", None)
    if per_core is None:
        per_core = memory.per_core = PerCoreL1(memory)
    buffer_id, placed = per_core.allocate(cores, pages_per_core * page_size)
    buf = Buffer(buffer_id, memory.device_id, BufferType.L1, layout, placed[cores[0]], pages_per_core * page_size,
                 page_size, pages_per_core * len(cores), len(cores), cores)
    _addresses[buffer_id] = placed
    return buf


_addresses: dict[int, dict] = {}  # buffer id -> core -> address, while the buffer lives


def address(buffer: Buffer, core) -> int:
    """The L1 address of `buffer`'s shard on `core`."""
    placed = _addresses.get(buffer.buffer_id)
    if placed is None:
        raise RuntimeError(f"buffer {buffer.buffer_id} was not allocated per core; use buffer_address()")
    key = (core.x, core.y)
    if key not in placed:
        raise RuntimeError(f"core (x={core.x},y={core.y}) holds no shard of buffer {buffer.buffer_id}")
    return placed[key]


def release(memory, buffer_id: int) -> None:
    """Free a per-core buffer's shards (once: deallocate, then the tensor's finalizer, may both ask)."""
    if _addresses.pop(buffer_id, None) is not None:
        memory.per_core.free(buffer_id)


def release_with(tensor, device, buffer: Buffer) -> None:
    """Free `buffer`'s shards when `tensor` is gone, as ttnn.deallocate frees them sooner (the lock-step free path
    never sees a per-core buffer)."""
    weakref.finalize(tensor, release, device.memory, buffer.buffer_id)
