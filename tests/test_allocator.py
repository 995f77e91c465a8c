"""The bank allocator: where buffers go, that they never overlap, and what running out says."""

import gc
import random

import pytest
import torch

import device_sim as ttnn
from device_sim.allocator import OutOfMemoryError


@pytest.fixture
def small_device():
    # Small banks so a few hundred tensors fill them and the free list gets fragmented.
    dev = ttnn.open_device(0, l1_size=98_304 + 64 * 1024, dram_bank_size=256 * 1024, dram_banks=4)
    try:
        yield dev
    finally:
        ttnn.close_device(dev)


def tiled(shape, device, memory):
    return ttnn.from_torch(torch.zeros(shape), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, memory=memory)


def assert_no_overlaps(device):
    by_type = {}
    for b in device.memory.live_buffers():
        by_type.setdefault(b.buffer_type, []).append(b)
    for buffer_type, bufs in by_type.items():
        alloc = device.memory.allocators[buffer_type]
        bufs.sort(key=lambda b: b.address)
        for b in bufs:
            assert alloc.base <= b.address and b.address + b.max_size_per_bank <= alloc.bank_size, b
        for lo, hi in zip(bufs, bufs[1:]):
            assert lo.address + lo.max_size_per_bank <= hi.address, f"{lo} overlaps {hi}"


def random_config(rng, shape):
    if rng.random() < 0.3 and shape[-2] % 64 == 0:
        # Height-sharded over two cores somewhere on the grid.
        x, y = rng.randrange(7), rng.randrange(8)
        grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(x, y), ttnn.CoreCoord(x + 1, y))])
        return ttnn.create_sharded_memory_config((shape[-2] // 2, shape[-1]), grid, ttnn.ShardStrategy.HEIGHT,
                                                 use_height_and_width_as_shard_shape=True)
    return rng.choice([ttnn.L1, ttnn.DRAM])


def test_random_allocations_never_overlap(small_device):
    rng = random.Random(0)
    live = []
    for _ in range(300):
        if live and rng.random() < 0.4:
            live.pop(rng.randrange(len(live))).deallocate()
        else:
            shape = (rng.choice([32, 64, 128]), rng.choice([32, 64, 96]))
            layout = rng.choice([ttnn.TILE, ttnn.ROW_MAJOR])
            try:
                live.append(ttnn.from_torch(torch.zeros(shape), dtype=ttnn.bfloat16, layout=layout,
                                            device=small_device, memory=random_config(rng, shape)))
            except OutOfMemoryError:
                live.pop(0).deallocate()
        assert_no_overlaps(small_device)
    kinds = {(b.buffer_type, b.buffer_layout) for b in small_device.memory.live_buffers()}
    assert len(kinds) >= 3, kinds  # the run really mixed DRAM, L1 and sharded buffers


def test_freed_space_is_reused(device):
    a = tiled((64, 64), device, ttnn.L1)
    address = a.buffer_address()
    a.deallocate()
    b = tiled((64, 64), device, ttnn.L1)
    assert b.buffer_address() == address


def test_l1_is_allocated_top_down_and_dram_bottom_up(device):
    c = device.config
    l1 = [tiled((32, 32), device, ttnn.L1) for _ in range(2)]
    dram = [tiled((32, 32), device, ttnn.DRAM) for _ in range(2)]
    assert l1[0].buffer_address() + l1[0].buffer.max_size_per_bank == c.l1_size
    assert l1[1].buffer_address() < l1[0].buffer_address()
    assert dram[0].buffer_address() == c.dram_unreserved_base
    assert dram[1].buffer_address() > dram[0].buffer_address()


def test_interleaved_pages_spread_round_robin_over_all_banks(device):
    # 2x3 tiles = 6 pages over 12 DRAM banks: one page in a bank at most.
    t = tiled((64, 96), device, ttnn.DRAM)
    assert (t.buffer.num_pages, t.buffer.num_banks, t.buffer.max_size_per_bank) == (6, 12, 2048)
    # 64 tiles over the 64 L1 banks, also one page each; 65 need two in some banks.
    assert tiled((32, 2048), device, ttnn.L1).buffer.max_size_per_bank == 2048
    assert tiled((32, 2080), device, ttnn.L1).buffer.max_size_per_bank == 4096


def test_deallocate_frees_the_buffer(device):
    before = device.memory.bytes_used(ttnn.BufferType.L1)
    t = tiled((64, 64), device, ttnn.L1)
    assert device.memory.bytes_used(ttnn.BufferType.L1) > before
    assert t.buffer in device.memory.live_buffers()
    ttnn.deallocate(t)
    assert device.memory.bytes_used(ttnn.BufferType.L1) == before
    t.deallocate()  # a second deallocate is harmless, as in TT-NN


def test_garbage_collection_frees_the_buffer(device):
    t = tiled((64, 64), device, ttnn.L1)
    buffer = t.buffer
    del t
    gc.collect()
    assert buffer not in device.memory.live_buffers()
    assert device.memory.bytes_used(ttnn.BufferType.L1) == 0


def test_out_of_memory_names_request_free_space_and_largest_buffers(small_device):
    l1 = small_device.memory.allocators[ttnn.BufferType.L1]
    # 16 KiB per bank each: four fill the 64 KiB of L1 left for tensors.
    blocks = [tiled((32, 8 * 64 * 32), small_device, ttnn.L1) for _ in range(4)]
    biggest = blocks[0].buffer
    blocks[1].deallocate()
    blocks[3].deallocate()  # 32 KiB free per bank, but in two 16 KiB holes
    with pytest.raises(OutOfMemoryError) as info:
        tiled((32, 16 * 64 * 32), small_device, ttnn.L1)
    message = str(info.value)
    assert "Out of L1 memory on device 0" in message
    assert "requested 32768 B per bank" in message
    assert f"only {l1.free_bytes_per_bank()} B per bank are free" in message and l1.free_bytes_per_bank() == 32768
    assert f"largest free block is {l1.largest_free_block()} B" in message and l1.largest_free_block() == 16384
    assert f"buffer {biggest.buffer_id} at {biggest.address:#x}: 16384 B/bank" in message
    assert "deallocate" in message.lower()
