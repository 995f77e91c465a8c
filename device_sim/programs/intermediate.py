"""Stand-ins for the tensors TT-NN makes inside a composite op and device_sim does not (a transposed, padded or
permuted copy, a device operation's output before it is sliced), so the program builders that read a tensor's
shape, dtype, layout and memory config can size those steps' programs too.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.intermediate import Intermediate
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(2, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> t = Intermediate(x, (2, 64, 5), ttnn.uint16)
    >>> tuple(t._value.shape), t.padded_shape, t.dtype
    ((2, 64, 5), (2, 64, 32), DataType.UINT16)
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

import torch

from device_sim.tensor import padded
from device_sim.types import DataType, Layout


class Intermediate:
    """A tensor of `dims` and `dtype` placed like `like` and laid out like it (or in `layout`): the attributes the
    builders read, over a meta tensor (no data, no buffer)."""

    def __init__(self, like, dims, dtype: DataType, layout: Layout | None = None):
        self._device, self.tile, self.dtype = like.device(), like.tile, dtype
        self.layout = like.layout if layout is None else layout
        self._value = torch.empty(tuple(dims), device="meta")
        self._memory_config = like.memory_config()

    @property
    def padded_shape(self) -> tuple:
        return padded(self._value.shape, self.layout, self.tile)

    def memory_config(self):
        return self._memory_config

    def device(self):
        return self._device

    def is_sharded(self) -> bool:
        return False
