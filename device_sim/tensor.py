"""The device tensor: values as the device holds them, a layout, and a buffer in device memory.

A Tensor keeps its values as a torch tensor in the logical shape, already rounded to its
device dtype (dtypes.to_device_values). Tile padding is not materialised: `padded_shape`
and the buffer's size account for it, and reads never see it. Math in the ops runs in
float32 on these values and the result is rounded to the output dtype.
"""

from __future__ import annotations

import enum
import itertools

import torch

from device_sim import dtypes, placement, sharding
from device_sim.device import Device
from device_sim.types import (
    BufferType,
    DataType,
    Layout,
    MemoryConfig,
    Shape,
)


class StorageType(enum.IntEnum):
    HOST = 0
    DEVICE = 1


_tensor_ids = itertools.count(0)


def next_tensor_id() -> int:
    """A new process-unique tensor id; profilers use it for tensors they make (goldens)."""
    return next(_tensor_ids)


def padded(shape, layout: Layout) -> tuple[int, ...]:
    if layout != Layout.TILE:
        return tuple(shape)
    s = list(shape) if len(shape) >= 2 else [1] * (2 - len(shape)) + list(shape)
    s[-1] = -(-s[-1] // dtypes.TILE_WIDTH) * dtypes.TILE_WIDTH
    s[-2] = -(-s[-2] // dtypes.TILE_HEIGHT) * dtypes.TILE_HEIGHT
    return tuple(s)


class Tensor:
    __slots__ = ("_value", "dtype", "layout", "_device", "_memory_config", "memory_config_source",
                 "buffer", "tensor_id", "__weakref__")

    def __init__(self, data, dtype: DataType | None = None, device: Device | None = None,
                 layout: Layout = Layout.ROW_MAJOR, memory_config: MemoryConfig | None = None, *,
                 memory: MemoryConfig | None = None):
        """`ttnn.Tensor(numpy_or_torch_array, dtype=, device=, layout=)` as in TT-NN."""
        if memory is not None and memory_config is not None:
            raise TypeError("give either memory= or memory_config=, not both (they are the same argument)")
        value = data if isinstance(data, torch.Tensor) else torch.as_tensor(data)
        dtype = DataType(dtype) if dtype is not None else dtypes.FROM_TORCH.get(value.dtype, DataType.FLOAT32)
        cfg, source = (placement.resolve(memory_config or memory, [], "ttnn.Tensor") if device is not None
                       else (None, None))
        self._init(dtypes.to_device_values(value, dtype), dtype, Layout(layout), device, cfg, source)

    @classmethod
    def _create(cls, value: torch.Tensor, dtype: DataType, layout: Layout, device: Device | None,
                memory_config: MemoryConfig | None, source: str | None) -> Tensor:
        """A tensor over already-rounded `value`; allocates its buffer when `device` is given."""
        t = cls.__new__(cls)
        t._init(value, dtype, layout, device, memory_config, source)
        return t

    def _init(self, value, dtype, layout, device, memory_config, source):
        dtypes.check_layout(dtype, layout)
        self._value = value
        self.dtype = dtype
        self.layout = layout
        self._device = device
        self._memory_config = memory_config if device is not None else None
        self.memory_config_source = source if device is not None else None
        self.buffer = None
        self.tensor_id = next_tensor_id()
        if device is not None:
            if memory_config.is_sharded() and memory_config.shard_spec is None:  # L1_*_SHARDED_MEMORY_CONFIG
                self._memory_config = memory_config = sharding.complete(
                    memory_config, padded(value.shape, layout), layout, device)
            self.buffer = _allocate(device, value.shape, dtype, layout, memory_config)

    # -- what it is ------------------------------------------------------------------------
    @property
    def shape(self) -> Shape:
        return Shape(self._value_or_raise().shape)

    @property
    def padded_shape(self) -> Shape:
        return Shape(padded(self._value_or_raise().shape, self.layout))

    logical_shape = shape

    @property
    def value(self) -> torch.Tensor:
        """The values as the device holds them: logical shape, host torch dtype. Read-only by contract.

        Unlike to_torch() this is no op: profilers read it without being recorded.
        """
        return self._value_or_raise()

    def memory_config(self) -> MemoryConfig | None:
        return self._memory_config

    def is_sharded(self) -> bool:
        return self._memory_config is not None and self._memory_config.is_sharded()

    def device(self) -> Device | None:
        return self._device

    def storage_type(self) -> StorageType:
        return StorageType.DEVICE if self._device is not None else StorageType.HOST

    def is_allocated(self) -> bool:
        return self._value is not None

    def buffer_address(self) -> int:
        if self.buffer is None:
            raise RuntimeError(f"tensor {self.tensor_id} is on the host and has no buffer address")
        return self.buffer.address

    def get_dtype(self) -> DataType:
        return self.dtype

    def get_layout(self) -> Layout:
        return self.layout

    def volume(self) -> int:
        return self._value_or_raise().numel()

    @property
    def rank(self) -> int:
        return self._value_or_raise().dim()

    def _value_or_raise(self) -> torch.Tensor:
        v = self._value
        if v is None:
            raise RuntimeError(
                f"tensor {self.tensor_id} was deallocated and can no longer be used; "
                f"keep it alive (do not call deallocate) until its last use"
            )
        return v

    def _free(self) -> None:
        buf, self.buffer, self._value = self.buffer, None, None
        if buf is not None and self._device is not None:
            self._device.memory.free(buf)

    def __del__(self):
        buf = getattr(self, "buffer", None)
        if buf is not None:
            self._device.memory.free(buf)

    def __repr__(self) -> str:
        if self._value is None:
            return f"ttnn.Tensor(id={self.tensor_id}, deallocated)"
        where = "host"
        if self._device is not None:
            cfg = self._memory_config
            where = (f"device {self._device.device_id} {cfg.buffer_type.name} {cfg.memory_layout.name} "
                     f"@{self.buffer.address:#x}")
        return (f"ttnn.Tensor(id={self.tensor_id}, shape={self.shape!r}, dtype={self.dtype!r}, "
                f"layout={self.layout!r}, {where})")

    def __len__(self) -> int:
        return self.shape[0]

    # -- torch-style methods (the concise API) ---------------------------------------------
    def to_torch(self, **kwargs) -> torch.Tensor:
        return ops.to_torch(self, **kwargs)

    def cpu(self) -> Tensor:
        return ops.from_device(self)

    from_device = cpu

    def to_device(self, device: Device, memory_config: MemoryConfig | None = None, **kwargs) -> Tensor:
        return ops.to_device(self, device, memory_config=memory_config, **kwargs)

    def to(self, device: Device, memory_config: MemoryConfig | None = None, **kwargs) -> Tensor:
        return self.to_device(device, memory_config, **kwargs)

    def to_layout(self, layout: Layout, **kwargs) -> Tensor:
        return ops.to_layout(self, layout, **kwargs)

    def reshape(self, *shape, **kwargs) -> Tensor:
        return ops.reshape(self, shape[0] if len(shape) == 1 else shape, **kwargs)

    def permute(self, *dims, **kwargs) -> Tensor:
        return ops.permute(self, dims[0] if len(dims) == 1 else dims, **kwargs)

    def transpose(self, dim0: int, dim1: int, **kwargs) -> Tensor:
        return ops.transpose(self, dim0, dim1, **kwargs)

    def deallocate(self, force: bool = True) -> None:
        ops.deallocate(self, force)

    def __getitem__(self, index) -> Tensor:
        return ops.data_movement.getitem(self, index)

    # Operators are one-line calls to the registered ops, so a profiler sees them as ops.
    def __add__(self, other): return ops.add(self, other)  # noqa: E704
    def __radd__(self, other): return ops.add(self, other)  # noqa: E704
    def __sub__(self, other): return ops.sub(self, other)  # noqa: E704
    def __rsub__(self, other): return ops.rsub(self, other)  # noqa: E704
    def __mul__(self, other): return ops.mul(self, other)  # noqa: E704
    def __rmul__(self, other): return ops.mul(self, other)  # noqa: E704
    def __truediv__(self, other): return ops.div(self, other)  # noqa: E704
    def __rtruediv__(self, other): return ops.mul(ops.reciprocal(self), other)  # noqa: E704
    def __matmul__(self, other): return ops.matmul(self, other)  # noqa: E704
    def __pow__(self, other): return ops.pow(self, other)  # noqa: E704
    def __neg__(self): return ops.neg(self)  # noqa: E704
    def __abs__(self): return ops.abs(self)  # noqa: E704
    def __eq__(self, other): return ops.eq(self, other)  # noqa: E704
    def __ne__(self, other): return ops.ne(self, other)  # noqa: E704
    def __gt__(self, other): return ops.gt(self, other)  # noqa: E704
    def __ge__(self, other): return ops.ge(self, other)  # noqa: E704
    def __lt__(self, other): return ops.lt(self, other)  # noqa: E704
    def __le__(self, other): return ops.le(self, other)  # noqa: E704
    # `a += b` makes a new tensor and rebinds `a`, as TT-NN's ops are not in place.
    __iadd__, __isub__, __imul__, __itruediv__ = __add__, __sub__, __mul__, __truediv__
    __hash__ = object.__hash__


def _allocate(device: Device, shape, dtype: DataType, layout: Layout, cfg: MemoryConfig):
    if not device.is_open:
        raise RuntimeError(f"device {device.device_id} is closed; open it again with ttnn.open_device()")
    pshape = padded(shape, layout)
    page = dtypes.page_size(dtype, layout, pshape)
    pages = dtypes.num_pages(layout, pshape)
    if not cfg.is_sharded():
        return device.memory.allocate(cfg.buffer_type, cfg.memory_layout, page_size=page, num_pages=pages)
    return sharding.allocate(device, pshape, dtype, layout, cfg)


def buffer_type_of(t: Tensor) -> BufferType | None:
    return t._memory_config.buffer_type if t._memory_config is not None else None


# Imported last: the ops modules build on Tensor, and Tensor's methods call the ops.
from device_sim import ops  # noqa: E402
