"""What the device-work tests share: the programs an op launches, heard as a report hears them.

    >>> import torch, device_sim as ttnn
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> [p.name for p in launched(dev, lambda: ttnn.relu(x))]
    ['UnaryDeviceOperation']
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations


def launched(device, call) -> list:
    """The programs `call()` launches on `device`, through the memory listener a capture's recorder uses."""
    seen, old = [], device.memory.listener
    device.memory.listener = lambda kind, obj: seen.append(obj) if kind == "program" else None
    try:
        call()
    finally:
        device.memory.listener = old
    return seen


def cbs(program) -> list[tuple]:
    """A program's circular buffers as (first index, pages, page size), in creation order."""
    return [(cb.indices[0], cb.num_pages, cb.page_size) for cb in program.cbs]
