"""`ttnn._ttnn.reports`: what TT-NN's report code reads off a device (ttnn/api/ttnn/reports.hpp).

    import device_sim as ttnn
    device = ttnn.open_device(0)
    t = ttnn.from_torch(torch.ones(64, 64), layout=ttnn.TILE, device=device, memory_config=ttnn.L1_MEMORY_CONFIG)
    len(ttnn._ttnn.reports.get_buffer_pages(device))     # 4: the tensor's four tile pages, one per L1 bank

tt-metal's unit tests count the pages before and after an op to check it left no buffer behind.
"""

from __future__ import annotations

from typing import NamedTuple

from device_sim.types import BufferType, TensorMemoryLayout


class DeviceInfo(NamedTuple):
    num_y_cores: int
    num_x_cores: int
    num_y_compute_cores: int
    num_x_compute_cores: int
    worker_l1_size: int
    l1_num_banks: int
    l1_bank_size: int
    address_at_first_l1_bank: int
    address_at_first_l1_cb_buffer: int
    num_banks_per_storage_core: int
    num_compute_cores: int
    num_storage_cores: int
    total_l1_memory: int
    total_l1_for_tensors: int
    total_l1_for_interleaved_buffers: int
    total_l1_for_sharded_buffers: int
    cb_limit: int


class BufferInfo(NamedTuple):
    device_id: int
    address: int
    max_size_per_bank: int
    buffer_type: BufferType
    buffer_layout: TensorMemoryLayout


class BufferPageInfo(NamedTuple):
    device_id: int
    address: int
    core_y: int
    core_x: int
    bank_id: int
    page_index: int
    page_address: int
    page_size: int
    buffer_type: BufferType


def get_device_info(device) -> DeviceInfo:
    facts = device.facts()
    return DeviceInfo(**{k: facts[k] for k in DeviceInfo._fields})


def _chips(devices) -> list:
    devices = devices if isinstance(devices, (list, tuple)) else [devices]
    return [chip for d in devices for chip in (getattr(d, "_chips", None) or [d])]


def _live(chip) -> list:
    return sorted(chip.memory.live_buffers(), key=lambda b: b.buffer_id)


def get_buffers(devices) -> list[BufferInfo]:
    """Every live buffer (DRAM and L1) of the devices (a device, a mesh, or a list of them), oldest first."""
    return [BufferInfo(chip.device_id, b.address, b.max_size_per_bank, b.buffer_type, b.buffer_layout)
            for chip in _chips(devices) for b in _live(chip)]


def get_buffer_pages(devices) -> list[BufferPageInfo]:
    """Each page of every live L1 buffer and where it lies, as TT-NN's get_buffer_pages: interleaved pages
    round-robin over the L1 banks, sharded pages shard by shard on their cores; banks are numbered row-major
    over the worker grid."""
    pages = []
    for chip in _chips(devices):
        grid_x = chip.config.grid_x
        for b in _live(chip):
            if b.buffer_type != BufferType.L1:
                continue
            sharded = b.buffer_layout != TensorMemoryLayout.INTERLEAVED
            per_bank = max(b.max_size_per_bank // b.page_size, 1)
            for i in range(b.num_pages):
                bank, slot = (i // per_bank, i % per_bank) if sharded else (i % b.num_banks, i // b.num_banks)
                if b.cores:
                    x, y = b.cores[bank]
                    bank = y * grid_x + x
                pages.append(BufferPageInfo(chip.device_id, b.address, bank // grid_x, bank % grid_x, bank, i,
                                            b.address + slot * b.page_size, b.page_size, b.buffer_type))
    return pages


__all__ = ["BufferInfo", "BufferPageInfo", "DeviceInfo", "get_buffer_pages", "get_buffers", "get_device_info"]
