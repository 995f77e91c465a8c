"""`ttnn.core`: TT-NN's small helpers about tensors and core grids, under the module name models import.

    import device_sim as ttnn
    ttnn.core.roundup(100, 32)                   # 128
    ttnn.core.is_tensor_storage_on_device(t)     # True for a device tensor
    ttnn.get_memory_config(t)                    # t.memory_config(), or None on the host
"""

from __future__ import annotations

from device_sim.sharding import (  # noqa: F401  (ttnn.core's names)
    create_sharded_memory_config,
    create_sharded_memory_config_,
    is_sharded,
    num_cores_to_corerangeset,
    num_cores_to_corerangeset_in_subcoregrids,
)


def divup(a: int, b: int) -> int:
    return (a + b - 1) // b


def roundup(a: int, b: int) -> int:
    return divup(a, b) * b


def has_storage_type_of(tensor, storage_type) -> bool:
    return tensor.storage_type() == storage_type


def is_tensor_storage_on_device(tensor) -> bool:
    return tensor.device() is not None


def get_memory_config(tensor):
    """The tensor's memory config; None for a host tensor, as TT-NN's."""
    return tensor.memory_config() if is_tensor_storage_on_device(tensor) else None


def has_tile_padding(tensor, *, dim: int | None = None) -> bool:
    """Whether the tile layout pads the tensor (in `dim`, or in its last two dims)."""
    shape, padded = tensor.shape, tensor.padded_shape
    if dim is not None:
        return shape[dim] != padded[dim]
    return len(shape) > 1 and tuple(shape[-2:]) != tuple(padded[-2:])
