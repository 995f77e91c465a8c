"""The device tensor: values as the device holds them, a layout, and a buffer in device memory.

A Tensor keeps its values as a torch tensor in the logical shape, already rounded to its
device dtype (dtypes.to_device_values). Tile padding is not materialised: `padded_shape`
and the buffer's size account for it, and reads never see it. Math in the ops runs in
float32 on these values and the result is rounded to the output dtype.

Tensor's methods and operators are calls of registered ops (`a + b` is ttnn.add(a, b)). The ops are built on Tensor,
so Tensor reaches them through the registry's op table, registry.TTNN, filled as each op registers (importing
device_sim registers them all), and never imports device_sim.ops.
"""

from __future__ import annotations

import enum
import itertools
import math
import warnings

import torch

from device_sim import dtypes, per_core, sharding, views
from device_sim.device import Device
from device_sim.registry import TTNN, TensorBase
from device_sim.tensor_text import tensor_text
from device_sim.tile import DEFAULT_TILE, Tile, as_tile
from device_sim.types import (
    BufferType,
    CoreRangeSet,
    DataType,
    Layout,
    MemoryConfig,
    NdShardSpec,
    Shape,
    ShardDistributionStrategy,
    ShardOrientation,
    TensorMemoryLayout,
)


class StorageType(enum.IntEnum):
    HOST = 0
    DEVICE = 1


_tensor_ids = itertools.count(0)


def next_tensor_id() -> int:
    """A new process-unique tensor id; profilers use it for tensors they make (goldens)."""
    return next(_tensor_ids)


def padded(shape, layout: Layout, tile: Tile | None = None) -> tuple[int, ...]:
    """The shape with its last two dims rounded up to whole tiles (32x32 unless `tile` says otherwise)."""
    if layout != Layout.TILE:
        return tuple(shape)
    th, tw = (dtypes.TILE_HEIGHT, dtypes.TILE_WIDTH) if tile is None else tile.tile_shape
    s = list(shape) if len(shape) >= 2 else [1] * (2 - len(shape)) + list(shape)
    s[-1] = -(-s[-1] // tw) * tw
    s[-2] = -(-s[-2] // th) * th
    return tuple(s)


class Tensor(TensorBase):
    # _pad_fill: the one value a TILE tensor's tile padding holds when an op filled it
    # (ttnn.fill_implicit_tile_padding); unset (read as 0.0, what from_torch pads with) on every other tensor.
    __slots__ = ("_value", "dtype", "layout", "tile", "_device", "_memory_config", "memory_config_source",
                 "buffer", "tensor_id", "_pad_fill", "_freed_shape", "__weakref__")

    def __new__(cls, *args, **kwargs):
        """`ttnn.Tensor(...)` in TT-NN's forms (see ops/tensor_io.tensor):

            ttnn.Tensor(numpy_or_torch_array, data_type=None, device=None, layout=None, mem_config=None, tile=None)
            ttnn.Tensor(flat_list, shape, data_type, layout[, device[, memory_config]], tile=None)

        It is built by the registered op `ttnn.Tensor`, so a capture records a tensor made this way
        (with its producer and buffer) like any op's output.
        """
        if not args and not kwargs:  # _create and copy make an empty one and fill it in
            return object.__new__(cls)
        if cls is not Tensor:
            raise TypeError(f"{cls.__name__}(...) is made by its own factory; ttnn.Tensor(...) makes a tensor")
        if len(args) == 1 and not kwargs and isinstance(args[0], Tensor):
            # TT-NN's copy constructor (pytensor.cpp's nb::init<ttnn::Tensor&>): the same tensor, no op (tt-metal's
            # nightly complex backward tests wrap a device tensor so: ttnn.Tensor(ttnn.Tensor(t, dtype).to(device)))
            return args[0]
        return TTNN.Tensor(*args, **kwargs)

    def __init__(self, *args, **kwargs):
        pass  # __new__ built the tensor already; Python calls this on its result with the same arguments

    @classmethod
    def _create(cls, value: torch.Tensor, dtype: DataType, layout: Layout, device: Device | None,
                memory_config: MemoryConfig | None, source: str | None, tile: Tile | None = None) -> Tensor:
        """A tensor over already-rounded `value`; allocates its buffer when `device` is given."""
        t = object.__new__(cls)
        t._init(value, dtype, layout, device, memory_config, source, tile)
        return t

    @classmethod
    def host_stand_in(cls, value: torch.Tensor, dtype: DataType, layout: Layout,
                      memory_config: MemoryConfig | None = None, tile: Tile | None = None) -> Tensor:
        """A host tensor over `value` as it is: nothing allocated, no tensor id taken (-1), `memory_config` kept as
        the original tensor's. For a profiler that holds a tensor's values after the tensor itself is gone and
        hands them to dump_tensor (ttreport's tensor writer), without going through an op."""
        t = object.__new__(cls)
        t._value, t.dtype, t.layout, t.tile = value, dtype, layout, DEFAULT_TILE if tile is None else tile
        t._device, t.buffer, t._memory_config, t.memory_config_source, t.tensor_id = None, None, memory_config, None, -1
        return t

    def _init(self, value, dtype, layout, device, memory_config, source, tile=None):
        dtypes.check_layout(dtype, layout)
        self._value = value
        self.dtype = dtype
        self.layout = layout
        self.tile = DEFAULT_TILE if tile is None else tile
        self._device = device
        self._memory_config = memory_config if device is not None else None
        self.memory_config_source = source if device is not None else None
        self.buffer = None
        self.tensor_id = next_tensor_id()
        if device is not None:
            if memory_config.is_sharded() and memory_config.shard_spec is None:  # L1_*_SHARDED_MEMORY_CONFIG
                self._memory_config = memory_config = sharding.complete(
                    memory_config, padded(value.shape, layout, self.tile), layout, device, self.tile.tile_shape)
            self.buffer = _allocate(device, value.shape, dtype, layout, memory_config, self.tile)
            if memory_config.per_core_allocation and self.buffer.buffer_id in per_core._addresses:
                per_core.release_with(self, device, self.buffer)

    def _write(self, value: torch.Tensor) -> None:
        """Replace the values in place (an op's output_tensor=): same buffer, same tensor id."""
        self._value_or_raise()
        if tuple(value.shape) != tuple(self._value.shape):
            raise ValueError(
                f"output tensor {self.tensor_id} has shape {list(self._value.shape)} but the op's result has shape "
                f"{list(value.shape)}; pass an output_tensor of the result's shape"
            )
        self._value = dtypes.to_device_values(value, self.dtype)
        if views.SHARED and self.buffer is not None:  # a view over the same buffer sees the write
            views.propagate(self)

    # -- what it is ------------------------------------------------------------------------
    @property
    def shape(self) -> Shape:
        shape = Shape(self._value_or_raise().shape)
        # for with_tile_padding(); the layout and tile, not the tensor, so a kept shape never keeps its buffer alive
        layout, tile = self.layout, self.tile
        shape._padded = lambda: tuple(padded(shape, layout, tile))
        return shape

    @property
    def padded_shape(self) -> Shape:
        return Shape(padded(self._value_or_raise().shape, self.layout, self.tile))

    logical_shape = shape

    @property
    def value(self) -> torch.Tensor:
        """The values as the device holds them: logical shape, host torch dtype. Read-only by contract.

        Unlike to_torch() this is no op: profilers read it without being recorded.
        """
        return self._value_or_raise()

    def memory_config(self) -> MemoryConfig | None:
        return self._memory_config

    def device(self) -> Device | None:
        return self._device

    def storage_type(self) -> StorageType:
        return StorageType.DEVICE if self._device is not None else StorageType.HOST

    def is_allocated(self) -> bool:
        return self._value is not None

    def experimental_per_core_buffer_address(self, core) -> int:
        """The L1 address of this tensor's shard on `core`, for a per-core allocated tensor (device_sim/per_core.py)."""
        if self.buffer is None:
            raise RuntimeError(f"tensor {self.tensor_id} is on the host and has no buffer address")
        return per_core.address(self.buffer, core)

    def buffer_address(self) -> int:
        if self.buffer is None:
            raise RuntimeError(f"tensor {self.tensor_id} is on the host and has no buffer address")
        return self.buffer.address

    def get_dtype(self) -> DataType:
        return self.dtype

    def get_layout(self) -> Layout:
        return self.layout

    def volume(self) -> int:
        """The physical volume, tile padding included: TT-NN's binding of volume is physical_volume (pytensor.cpp),
        which tt-metal's tests divide into shard heights (nightly test_paged_update_cache.py)."""
        return math.prod(self.padded_shape)

    def logical_volume(self) -> int:
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
        if self._value is not None:  # what print(tensor) still shows of it (TT-NN keeps a deallocated tensor's spec)
            self._freed_shape = list(self._value.shape)
        buf, self.buffer, self._value = self.buffer, None, None
        if buf is not None and self._device is not None:
            if views.SHARED:  # a view shares it: every holder loses it (deallocate, force=True)
                views.drop_all(self, buf)
            self._device.memory.free(buf)
            if buf.buffer_id in per_core._addresses:  # a per-core buffer: its shards, which free() does not hold
                per_core.release(self._device.memory, buf.buffer_id)

    def _python_del(self):
        buf = getattr(self, "buffer", None)
        if buf is not None and (not views.SHARED or views.release(buf)):  # the last holder of a shared buffer
            self._device.memory.free(buf)

    # device_sim/ops/common.py puts _native's C function, these steps in C, in its place (DEVICE_SIM_PURE: not)
    __del__ = _python_del

    def __repr__(self) -> str:
        """TT-NN's text for a tensor: its values, then `shape=Shape([..]), dtype=DataType::X, layout=Layout::Y`."""
        return tensor_text(self._value, self.dtype, self.layout, getattr(self, "_freed_shape", None))

    def is_sharded(self) -> bool:
        return self._memory_config is not None and self._memory_config.is_sharded()

    def get_tile(self) -> Tile:
        return self.tile

    @property
    def spec(self) -> TensorSpec:
        v = self._value_or_raise()
        return TensorSpec(Shape(v.shape), self.dtype, self.layout, memory_config=self._memory_config, tile=self.tile)

    def item(self):
        """The one value of a one-element tensor, as a Python number (reads it back, as TT-NN does)."""
        v = self._value_or_raise()
        if v.numel() != 1:
            raise ValueError(f"item() needs a tensor with one element; tensor {self.tensor_id} has shape "
                             f"{list(v.shape)}")
        return v.item()

    def to_list(self) -> list:
        """The values as nested Python lists in the logical shape."""
        return self._value_or_raise().tolist()

    tolist = to_list

    def to_numpy(self):
        """The values as a numpy array in the logical shape (TT-NN's Tensor.to_numpy): an integer dtype in numpy's
        integer of its width, a float one in float32 (numpy has no bfloat16 or block floats)."""
        v = TTNN.to_torch(self)
        name = _NUMPY_INTS.get(self.dtype)
        return v.numpy().astype(name) if name is not None else v.float().numpy()

    def element_size(self) -> int:
        """Bytes of one element of the tensor's dtype (ttnn.element_size: none for a block float)."""
        return dtypes.element_size(self.dtype)

    def _buffer_or_raise(self):
        if self.buffer is None:
            raise RuntimeError(f"tensor {self.tensor_id} has no device buffer (on the host, or deallocated); move it "
                               f"with ttnn.to_device(tensor, device) first")
        return self.buffer

    def buffer_page_size(self) -> int:
        """Bytes of one page of the device buffer: a tile, or a row-major row."""
        return self._buffer_or_raise().page_size

    def buffer_num_pages(self) -> int:
        return self._buffer_or_raise().num_pages

    def buffer_aligned_page_size(self) -> int:
        """The page size rounded up to the buffer's memory's alignment (DRAM 32 bytes, L1 16 on Wormhole)."""
        b, c = self._buffer_or_raise(), self._device.config
        align = c.dram_alignment if b.buffer_type == BufferType.DRAM else c.l1_alignment
        return -(-b.page_size // align) * align

    def __len__(self) -> int:
        return self.shape[0]

    def __bool__(self) -> bool:
        # TT-NN's Tensor binds neither __bool__ nor __len__, so every tensor is truthy; tt-metal's tests rely on it
        # (test_cumsum.py's `assert preallocated_output_tensor == output_tensor`, an element-wise eq, of rank 0 too)
        return True

    # -- torch-style methods (the concise API) ---------------------------------------------
    def to_torch(self, **kwargs) -> torch.Tensor:
        return TTNN.to_torch(self, **kwargs)

    def to_torch_with_padded_shape(self) -> torch.Tensor:
        """The values in the padded shape, the tile padding included: 0 where from_torch padded, the fill value
        where ttnn.fill_implicit_tile_padding filled it (device_sim keeps one value for a tensor's padding)."""
        v = TTNN.to_torch(self)
        if self.layout != Layout.TILE:
            return v
        src = v.reshape(1, -1) if v.dim() < 2 else v
        th, tw = self.tile.tile_shape
        pad = (0, -src.shape[-1] % tw, 0, -src.shape[-2] % th)
        fill = getattr(self, "_pad_fill", 0.0)
        out = torch.nn.functional.pad(src.float() if v.is_floating_point() else src, pad, value=fill)
        return dtypes.to_device_values(out, self.dtype).to(v.dtype)

    def cpu(self, blocking: bool = True, cq_id=None) -> Tensor:
        """The tensor read back to the host (TT-NN's blocking and cq_id change nothing: ops run synchronously)."""
        return TTNN.from_device(self)

    from_device = cpu

    def to_device(self, device: Device, memory_config: MemoryConfig | None = None, **kwargs) -> Tensor:
        return TTNN.to_device(self, device, memory_config=memory_config, **kwargs)

    def to(self, target, memory_config: MemoryConfig | None = None, **kwargs) -> Tensor:
        """`t.to(layout)` (to_layout) or `t.to(device, memory_config)` (to_device), as TT-NN's Tensor.to.

        A host tensor of a block-float dtype stays TILE, with a warning: TT-NN's host to_layout does not convert
        bfloat8_b / bfloat4_b (tt_metal/impl/tensor/tensor_apis.cpp, to_layout_bfloat_impl), so
        `t.cpu().to(ttnn.ROW_MAJOR_LAYOUT).to_torch()` reads such a tensor back as it is."""
        if isinstance(target, Layout):
            if self._device is None and self.dtype.is_block_float and Layout(target) != self.layout:
                warnings.warn(f"Tensor layout must be Layout::TILE for bfloat8_b or bfloat4_b! Conversion from "
                              f"{self.layout} to {Layout(target)} was not executed!", stacklevel=2)
                return self
            return TTNN.to_layout(self, target, **kwargs)
        return self.to_device(target, memory_config, **kwargs)

    def pad_to_tile(self, pad_value: float = 0.0) -> Tensor:
        """A host copy whose last two dims are padded up to whole tiles with `pad_value`; the logical shape stays
        (TT-NN's host pad, tt_metal/impl/tensor/tensor_apis.cpp, builds the spec from the input's logical shape
        and the padded one). device_sim keeps the pad value as the copy's tile padding
        (to_torch_with_padded_shape shows it, and to_layout / to_device carry it)."""
        out = Tensor._create(self._value_or_raise(), self.dtype, self.layout, None, None, None, self.tile)
        out._pad_fill = float(pad_value)
        return out

    def unpad_from_tile(self, output_tensor_shape) -> Tensor:
        """A host copy cut back to `output_tensor_shape` from the start of each dim (TT-NN's host unpad)."""
        v = self._value_or_raise()
        shape = [int(d) for d in output_tensor_shape]
        if len(shape) != v.dim() or any(d > s for d, s in zip(shape, v.shape)):
            raise ValueError(f"unpad_from_tile: shape {shape} does not fit inside tensor {self.tensor_id}'s "
                             f"{list(v.shape)}; give a shape of the same rank, no larger in any dim")
        out = v[tuple(slice(0, d) for d in shape)].contiguous()
        return Tensor._create(out, self.dtype, self.layout, None, None, None, self.tile)

    def to_layout(self, layout: Layout, **kwargs) -> Tensor:
        return TTNN.to_layout(self, layout, **kwargs)

    def reshape(self, *shape, **kwargs) -> Tensor:
        return TTNN.reshape(self, shape[0] if len(shape) == 1 else shape, **kwargs)

    def permute(self, *dims, **kwargs) -> Tensor:
        return TTNN.permute(self, dims[0] if len(dims) == 1 else dims, **kwargs)

    def transpose(self, dim0: int, dim1: int, **kwargs) -> Tensor:
        return TTNN.transpose(self, dim0, dim1, **kwargs)

    def deallocate(self, force: bool = True) -> None:
        TTNN.deallocate(self, force)

    def __getitem__(self, index) -> Tensor:
        """`tensor[index]` as TT-NN's Tensor.__getitem__ does it: ttnn.slice, then ttnn.squeeze for int indices.

        Ints, slices with a positive step, and one Ellipsis are accepted; an int drops its dim, as in torch.
        """
        shape = tuple(self._value_or_raise().shape)
        items = list(index) if isinstance(index, tuple) else [index]
        if items.count(Ellipsis) > 1:
            raise IndexError("ttnn.Tensor.__getitem__: only one ellipsis ('...') is allowed in an index")
        if Ellipsis in items:
            at = items.index(Ellipsis)
            items[at:at + 1] = [slice(None)] * (len(shape) - len(items) + 1)
        if len(items) > len(shape):
            raise IndexError(f"ttnn.Tensor.__getitem__: {len(items)} indices for a tensor of rank {len(shape)}")
        items += [slice(None)] * (len(shape) - len(items))
        starts, ends, steps, dropped = [], [], [], []
        for d, (item, n) in enumerate(zip(items, shape)):
            if isinstance(item, int):
                i = item + n * (item < 0)
                if not 0 <= i < n:
                    raise IndexError(f"ttnn.Tensor.__getitem__: index {item} is out of range for dim {d} of size {n}")
                item, dropped = slice(i, i + 1), dropped + [d]
            if not isinstance(item, slice):
                raise TypeError(f"ttnn.Tensor.__getitem__: index {item!r} is neither an int, a slice nor '...'")
            b, e, s = item.indices(n)
            if s < 1:
                raise IndexError(f"ttnn.Tensor.__getitem__: step {s} in dim {d}; only positive steps are supported")
            starts, ends, steps = starts + [b], ends + [max(b, e)], steps + [s]
        out = TTNN.slice(self, starts, ends, steps)
        return TTNN.squeeze(out, dropped) if dropped else out

    # Operators are one-line calls to the registered ops, so a profiler sees them as ops.
    def __add__(self, other): return TTNN.add(self, other)  # noqa: E704
    def __radd__(self, other): return TTNN.add(self, other)  # noqa: E704
    def __sub__(self, other): return TTNN.sub(self, other)  # noqa: E704
    def __rsub__(self, other): return TTNN.rsub(self, other)  # noqa: E704
    def __mul__(self, other): return TTNN.mul(self, other)  # noqa: E704
    def __rmul__(self, other): return TTNN.mul(self, other)  # noqa: E704
    def __truediv__(self, other): return TTNN.div(self, other)  # noqa: E704
    def __rtruediv__(self, other): return TTNN.mul(TTNN.reciprocal(self), other)  # noqa: E704
    def __matmul__(self, other): return TTNN.matmul(self, other)  # noqa: E704
    def __pow__(self, other): return TTNN.pow(self, other)  # noqa: E704
    def __neg__(self): return TTNN.neg(self)  # noqa: E704
    def __abs__(self): return TTNN.abs(self)  # noqa: E704
    def __eq__(self, other): return TTNN.eq(self, other)  # noqa: E704
    def __ne__(self, other): return TTNN.ne(self, other)  # noqa: E704
    def __gt__(self, other): return TTNN.gt(self, other)  # noqa: E704
    def __ge__(self, other): return TTNN.ge(self, other)  # noqa: E704
    def __lt__(self, other): return TTNN.lt(self, other)  # noqa: E704
    def __le__(self, other): return TTNN.le(self, other)  # noqa: E704
    # `a += b` makes a new tensor and rebinds `a`, as TT-NN's ops are not in place.
    __iadd__, __isub__, __imul__, __itruediv__ = __add__, __sub__, __mul__, __truediv__
    __hash__ = object.__hash__


def make_view(t: Tensor, value: torch.Tensor) -> Tensor:
    """A new tensor over `t`'s buffer holding `value` (t's values in another shape): a view (device_sim.views)."""
    v = object.__new__(Tensor)
    v._value, v.dtype, v.layout, v.tile = value, t.dtype, t.layout, t.tile
    v._device, v._memory_config, v.memory_config_source = t.device(), t._memory_config, "inputs"
    v.buffer, v.tensor_id = t.buffer, next_tensor_id()
    views.share(t, v)
    return v


def reshaped(t, shape, memory_config=None) -> Tensor | None:
    """`t` reshaped as TT-NN's reshape does it without a copy: t itself for its own shape (reshape.cpp returns
    the tensor when nothing changes), a view for a shape views.is_view allows; None when TT-NN copies instead."""
    if type(t) is not Tensor or t.buffer is None or not views.is_view(t, shape, memory_config):
        return None
    shape = tuple(shape)
    if shape == tuple(t._value.shape):
        return t
    return make_view(t, t._value.reshape(shape))


def _allocate(device: Device, shape, dtype: DataType, layout: Layout, cfg: MemoryConfig, tile: Tile = DEFAULT_TILE):
    if not device.is_open:
        raise RuntimeError(f"device {device.device_id} is closed; open it again with ttnn.open_device()")
    pshape = padded(shape, layout, tile)
    if layout == Layout.TILE and tile != DEFAULT_TILE:  # a page is one (smaller) tile
        page = tile.get_tile_size(dtype)
        pages = math.prod(pshape[:-1]) // tile.height * (pshape[-1] // tile.width)
    else:
        page = dtypes.page_size(dtype, layout, pshape)
        pages = dtypes.num_pages(layout, pshape)
    if not cfg.is_sharded():
        return device.memory.allocate(cfg.buffer_type, cfg.memory_layout, page_size=page, num_pages=pages)
    return sharding.allocate(device, pshape, dtype, layout, cfg, tile.tile_shape, tile.get_tile_size(dtype))


class TensorSpec:
    """What a tensor is, without its values: TT-NN's `tensor.spec` and allocate_tensor_on_device's argument.

    TT-NN's constructor forms (ttnn-nanobind's TensorSpec):
        TensorSpec(shape, dtype, layout, buffer_type=DRAM, tile=None)                       interleaved
        TensorSpec(shape, dtype, layout, memory_layout, shard_spec=None, buffer_type=DRAM, tile=None)
        TensorSpec(shape, dtype, layout, nd_shard_spec, buffer_type=DRAM, tile=None)        ND sharded
    and device_sim's `memory_config=` keyword, which gives the whole config at once.
    """

    __slots__ = ("shape", "dtype", "layout", "memory_config", "tile")

    def __init__(self, shape, dtype, layout, *rest, memory_layout=None, shard_spec=None, nd_shard_spec=None,
                 buffer_type=None, tile=None, memory_config: MemoryConfig | None = None):
        rest = list(rest)
        if rest and isinstance(rest[0], TensorMemoryLayout):
            memory_layout = rest.pop(0)
            if rest and not isinstance(rest[0], (BufferType, Tile)):
                shard_spec = rest.pop(0)
        elif rest and isinstance(rest[0], NdShardSpec):
            nd_shard_spec = rest.pop(0)
        elif rest and isinstance(rest[0], MemoryConfig):
            memory_config = rest.pop(0)
        if rest and isinstance(rest[0], BufferType):
            buffer_type = rest.pop(0)
        if rest and (isinstance(rest[0], Tile) or rest[0] is None):
            tile = rest.pop(0)
        if rest:
            raise TypeError(f"TensorSpec: unexpected argument {rest[0]!r}; after shape, dtype and layout come "
                            f"buffer_type and tile, or memory_layout, shard_spec, buffer_type and tile")
        if memory_config is None:
            buffer_type = BufferType.DRAM if buffer_type is None else buffer_type
            if nd_shard_spec is not None:
                memory_config = MemoryConfig(buffer_type, nd_shard_spec)
            else:
                memory_config = MemoryConfig(memory_layout or TensorMemoryLayout.INTERLEAVED, buffer_type, shard_spec)
        self.shape = Shape(shape)
        self.dtype = DataType(dtype)
        self.layout = Layout(layout)
        self.memory_config = memory_config
        self.tile = as_tile(tile)

    @property
    def padded_shape(self) -> Shape:
        return Shape(padded(self.shape, self.layout, self.tile))

    # -- TT-NN's sharding builders (tt_metal/impl/tensor/spec/tensor_spec.cpp): a new spec, ND-sharded ------------
    def sharded_across_dims(self, dims, grid, orientation=ShardOrientation.ROW_MAJOR) -> TensorSpec:
        """Shards of the padded shape with 1 in each of `dims`, aligned as RECOMMENDED."""
        shard = list(self.padded_shape)
        for d in dims:
            shard[d] = 1
        return self.sharded(NdShardSpec(shard, grid, orientation), ShardShapeAlignment.RECOMMENDED)

    def sharded_across_dims_except(self, dims, grid, orientation=ShardOrientation.ROW_MAJOR) -> TensorSpec:
        """Shards of 1 in every dim but `dims`, which keep their padded size; aligned as RECOMMENDED."""
        full = list(self.padded_shape)
        shard = [1] * len(full)
        for d in dims:
            shard[d] = full[d]
        return self.sharded(NdShardSpec(shard, grid, orientation), ShardShapeAlignment.RECOMMENDED)

    def sharded(self, shard_shape_or_spec, grid=None, shard_alignment=None, orientation=ShardOrientation.ROW_MAJOR,
                shard_distribution_strategy=ShardDistributionStrategy.ROUND_ROBIN_1D) -> TensorSpec:
        """sharded(shard_shape, grid, shard_alignment=RECOMMENDED, orientation, shard_distribution_strategy) or
        sharded(nd_shard_spec, shard_alignment=RECOMMENDED): the last dims of the shard rounded up to the page
        config's alignment (TILE: the tile; ROW_MAJOR: 1 element REQUIRED, 64 bytes RECOMMENDED); buffer type kept."""
        if isinstance(shard_shape_or_spec, NdShardSpec):
            spec, shard_alignment = shard_shape_or_spec, grid if shard_alignment is None else shard_alignment
        else:
            spec = NdShardSpec(shard_shape_or_spec, grid, orientation, shard_distribution_strategy)
        alignment = ShardShapeAlignment.RECOMMENDED if shard_alignment is None else ShardShapeAlignment(shard_alignment)
        shard = list(spec.shard_shape)
        if alignment != ShardShapeAlignment.NONE:
            if self.layout == Layout.TILE:
                align = list(self.tile.tile_shape)
            elif alignment == ShardShapeAlignment.REQUIRED:
                align = [1]
            else:  # 64 bytes of row-major elements (a block float is held as float32 there)
                size = 4 if self.dtype.is_block_float else dtypes.ELEMENT_SIZE[self.dtype]
                align = [math.lcm(64, size) // size]
            for i in range(1, min(len(align), len(shard)) + 1):
                shard[-i] = -(-shard[-i] // align[-i]) * align[-i]
        nd = NdShardSpec(shard, spec.grid, spec.orientation, spec.shard_distribution_strategy)
        return TensorSpec(self.shape, self.dtype, self.layout, memory_config=MemoryConfig(
            self.memory_config.buffer_type, nd), tile=self.tile)

    def height_sharded(self, grid, orientation=ShardOrientation.ROW_MAJOR) -> TensorSpec:
        """The tensor as 2D [height, width] (its physical shape) cut along the height, one shard a core."""
        h, w = self._physical_2d()
        return self.sharded(NdShardSpec([-(-h // grid.num_cores()), w], grid, orientation),
                            ShardShapeAlignment.REQUIRED)

    def width_sharded(self, grid, orientation=ShardOrientation.ROW_MAJOR) -> TensorSpec:
        h, w = self._physical_2d()
        return self.sharded(NdShardSpec([h, -(-w // grid.num_cores())], grid, orientation),
                            ShardShapeAlignment.REQUIRED)

    def block_sharded(self, grid, orientation=ShardOrientation.ROW_MAJOR) -> TensorSpec:
        """2D blocks on a grid of one core range: rows over its y and columns over its x (ROW_MAJOR orientation)."""
        ranges = grid.ranges() if hasattr(grid, "ranges") else [grid]
        if len(ranges) != 1:
            raise RuntimeError("Block sharding requires a single CoreRange")
        r = ranges[0]
        gx, gy = r.end.x - r.start.x + 1, r.end.y - r.start.y + 1
        rows, cols = (gy, gx) if ShardOrientation(orientation) == ShardOrientation.ROW_MAJOR else (gx, gy)
        h, w = self._physical_2d()
        grid_set = grid if hasattr(grid, "ranges") else CoreRangeSet({r})
        return self.sharded(NdShardSpec([-(-h // rows), -(-w // cols)], grid_set, orientation,
                                        ShardDistributionStrategy.GRID_2D), ShardShapeAlignment.RECOMMENDED)

    def _physical_2d(self) -> tuple[int, int]:
        p = list(self.padded_shape) or [1]
        h = 1
        for d in p[:-1]:
            h *= d
        return h, p[-1]

    def _key(self) -> tuple:
        return (self.shape, self.dtype, self.layout, self.memory_config, self.tile)

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"TensorSpec(shape={self.shape!r}, dtype={self.dtype!r}, layout={self.layout!r}, "
                f"memory_config={self.memory_config!r}, tile={self.tile!r})")


class ShardShapeAlignment(enum.IntEnum):
    """TT-NN's TensorSpec.ShardShapeAlignment (ttnn.ShardShapeAlignment): how TensorSpec.sharded rounds a shard up."""

    NONE = 0  # as given
    REQUIRED = 1  # to the minimum the layout needs
    RECOMMENDED = 2  # to what performs best (TILE: the tile; ROW_MAJOR: 64 bytes)


TensorSpec.ShardShapeAlignment = ShardShapeAlignment


_NUMPY_INTS = {DataType.UINT8: "uint8", DataType.UINT16: "uint16", DataType.UINT32: "uint32", DataType.INT32: "int32"}


def buffer_type_of(t: Tensor) -> BufferType | None:
    return t._memory_config.buffer_type if t._memory_config is not None else None

