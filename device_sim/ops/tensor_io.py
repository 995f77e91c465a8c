"""Making tensors outside from_torch: `ttnn.Tensor(...)`, `as_tensor` (with its on-disk cache),
`allocate_tensor_on_device` and `copy_host_to_device_tensor`.

    import device_sim as ttnn
    w = ttnn.as_tensor(torch_w, dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device,
                       memory_config=ttnn.DRAM_MEMORY_CONFIG, cache_file_name="cache/w")
    # first run: converts and writes cache/w_dtype_BFLOAT8_B_layout_TILE.tensorbin
    # later runs: load that file (no conversion, no preprocess call) and put it on the device

    out = ttnn.allocate_tensor_on_device(ttnn.Shape([1, 32, 64]), ttnn.bfloat16, ttnn.TILE, device)
    ttnn.copy_host_to_device_tensor(ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE), out)

Each is a registered op, so a capture records the tensor it makes, its buffer and its producer.
"""

from __future__ import annotations

import pathlib

import torch

from device_sim import dtypes, placement, serialization, sharding
from device_sim.device import Device
from device_sim.ops.common import check_tt_nn_only
from device_sim.ops.core import device_dtype, from_torch, place, torch_values
from device_sim.registry import OWN_NAME, Trait, register_op
from device_sim.tensor import Tensor, TensorSpec
from device_sim.tile import Tile
from device_sim.types import DataType, Layout, MemoryConfig, Shape


def _tensor_golden(data=None, *args, tensor=None, **_):
    data = tensor if data is None else data
    if args and isinstance(args[0], (list, tuple, Shape, torch.Size)):
        return torch.as_tensor(data).reshape(tuple(args[0]))
    return data if isinstance(data, torch.Tensor) else torch.as_tensor(data)


# mesh_aware: place() spreads it over a mesh
@register_op("ttnn.Tensor", traits={Trait.HOST}, golden=_tensor_golden, mesh_aware=True)
def tensor(data=None, *args, tensor=None, data_type: DataType | None = None, dtype: DataType | None = None, device=None,
           layout: Layout | None = None, mem_config: MemoryConfig | None = None,
           memory_config: MemoryConfig | None = None, tile: Tile | None = None, pad_value=None, cq_id=None,
           mesh_mapper=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """`ttnn.Tensor(...)` in TT-NN's two forms (ttnn-nanobind/pytensor.cpp):

        Tensor(array, data_type=None, device=None, layout=None, mem_config=None, tile=None, ...)
            array: a torch tensor or numpy array; the dtype follows it unless given; the layout
            defaults to TILE for a block-float dtype, else ROW_MAJOR.
        Tensor(flat_values, shape, data_type, layout[, device[, memory_config]], tile=None, pad_value=0)
            flat_values: a flat list of numbers, laid out in `shape`.

    The array may be given as `tensor=`, as TT-NN names it. `dtype=` and `memory_config=` (device_sim's
    names) are accepted beside `data_type=` / `mem_config=`.

    >>> t = ttnn.Tensor([1.0, 2.0, 3.0, 4.0], [2, 2], ttnn.bfloat16, ttnn.ROW_MAJOR)
    >>> t.to_torch()
    tensor([[1., 2.],
            [3., 4.]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if (data is None) == (tensor is None):
        raise TypeError(f"{op_name} takes its values once: as the first argument or as tensor=")
    data = tensor if data is None else data
    for a, b, name in ((data_type, dtype, "data_type"), (mem_config, memory_config, "mem_config")):
        if a is not None and b is not None:
            raise TypeError(f"{op_name}: give {name}= or its alias, not both")
    dtype = data_type if data_type is not None else dtype
    cfg = mem_config if mem_config is not None else memory_config
    if args and isinstance(args[0], (list, tuple, Shape, torch.Size)):  # the (values, shape, dtype, layout, ...) form
        shape, *rest = args
        if len(rest) < 2 and (dtype is None or layout is None):
            raise TypeError(f"{op_name}(values, shape, data_type, layout[, device[, memory_config]]): "
                            "data_type and layout are required in this form")
        if rest:
            dtype = rest.pop(0)
        if rest:
            layout = rest.pop(0)
        device, cfg, tile = _by_type(rest, device, cfg, tile)
        t = torch_values(data, op_name)
        if t.numel() != Shape(shape).volume():
            raise ValueError(f"{op_name}: {t.numel()} values do not fill shape {list(shape)} "
                             f"({Shape(shape).volume()} elements)")
        t = t.reshape(tuple(int(d) for d in shape))
    else:  # the (array, data_type, device, layout, mem_config, tile) form
        names = ("dtype", "device", "layout", "cfg", "tile")
        if len(args) > len(names):
            raise TypeError(f"{op_name} takes at most {len(names) + 1} positional arguments in the array form, "
                            f"got {len(args) + 1}")
        given = dict(zip(names, args))
        dtype = given.get("dtype", dtype)
        device, layout = given.get("device", device), given.get("layout", layout)
        cfg, tile = given.get("cfg", cfg), given.get("tile", tile)
        t = torch_values(data, op_name)
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"{op_name}: device must be a ttnn device from ttnn.open_device, got {device!r}")
    return place(t, device_dtype(t, dtype, op_name), layout, device, cfg, tile, mesh_mapper, op_name)


def _by_type(rest: list, device, cfg, tile):
    """The optional trailing positionals of the values form, told apart by type as TT-NN's overloads are."""
    for v in rest:
        if isinstance(v, Device) or v is None:
            device = v if v is not None else device
        elif isinstance(v, MemoryConfig):
            cfg = v
        elif isinstance(v, Tile):
            tile = v
        elif not isinstance(v, (int, float)):  # a trailing number is the pad value, which is not materialised
            raise TypeError(f"ttnn.Tensor: unexpected positional argument {v!r}; after data, shape, data_type "
                            f"and layout come device, memory_config, tile and pad_value")
    return device, cfg, tile


# -- as_tensor ---------------------------------------------------------------------------------------------------
def cache_path(cache_file_name, dtype: DataType | None, layout: Layout | None) -> pathlib.Path:
    """TT-NN's cache file for `cache_file_name`: `<name>_dtype_<DTYPE>_layout_<LAYOUT>.tensorbin`."""
    dtype_name = DataType(dtype).name if dtype is not None else "None"
    layout_name = Layout(layout).name if layout is not None else "None"
    return pathlib.Path(f"{cache_file_name}_dtype_{dtype_name}_layout_{layout_name}.tensorbin")


def _as_tensor_golden(tensor, dtype=None, *, preprocess=None, **_):
    if tensor is None:  # a run that loads the cache need not have the weights: nothing to compare against
        raise ValueError("ttnn.as_tensor's golden needs the torch tensor; this call passed None and loaded its cache")
    return preprocess(tensor) if preprocess is not None else tensor


@register_op("ttnn.as_tensor", traits={Trait.HOST}, golden=_as_tensor_golden, mesh_aware=True)
def as_tensor(tensor, dtype: DataType | None = None, *, layout: Layout | None = Layout.ROW_MAJOR, device=None,
              memory_config: MemoryConfig | None = None, cache_file_name=None, preprocess=None, mesh_mapper=None,
              use_device_tilizer: bool = False, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """from_torch with an on-disk cache, as TT-NN's as_tensor.

    Args:
        tensor: the torch tensor (it may be None on a run where the cache file exists).
        dtype, layout, device, memory_config, mesh_mapper: as from_torch; memory_config is required with a device.
        cache_file_name: the cache's stem. The first call converts (preprocess, then from_torch on the host),
            writes the host tensor to cache_path(cache_file_name, dtype, layout) in device_sim's portable
            format, then moves it to the device. Later calls (this run or the next) load that file instead,
            so neither the conversion nor `preprocess` runs again. A file that cannot be read is rebuilt.
        preprocess: a function torch -> torch applied before conversion (e.g. a transpose of weights).
        use_device_tilizer: TT-NN tilizes on the device instead of the host; the values are the same here.

    >>> w = ttnn.as_tensor(torch.ones(2, 3), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
    ...                    memory_config=ttnn.DRAM)
    >>> w.shape, w.dtype, w.layout
    (Shape([2, 3]), DataType.BFLOAT16, Layout.TILE)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if device is not None and memory_config is None:
        raise ValueError(f"{op_name}: memory_config must be given when device is (as in TT-NN), "
                         "e.g. memory_config=ttnn.DRAM_MEMORY_CONFIG")
    if use_device_tilizer and (device is None or layout != Layout.TILE):
        raise ValueError(f"{op_name}: use_device_tilizer=True needs a device and layout=ttnn.TILE")

    def convert(on_device, mapper) -> Tensor:
        t = preprocess(tensor) if preprocess is not None else tensor
        # The hooked from_torch, so a capture shows it nested in as_tensor, as TT-NN's as_tensor calls it.
        return from_torch(t, dtype, layout=layout, device=on_device, memory_config=memory_config, mesh_mapper=mapper)

    if cache_file_name is None:
        return convert(device, mesh_mapper)
    path = cache_path(cache_file_name, dtype, layout)
    host = None
    if path.is_file():
        try:
            host = serialization.load_tensor(path)
        except serialization.TensorFileError:
            host = None  # unreadable (a newer format, a damaged file): rebuilt below
    if host is None:
        if tensor is None:
            raise FileNotFoundError(f"{op_name}: no cache file {path} and no tensor to build it from")
        # The whole tensor, unsharded, so one cache file serves any mesh (TT-NN caches a replicated one so).
        host = convert(None, None)
        path.parent.mkdir(parents=True, exist_ok=True)
        serialization.dump_tensor(path, host)
    if device is None and mesh_mapper is None:
        return host
    # The values are already the device's (rounding them again changes nothing); place() spreads them
    # over a mesh when there is one.
    return place(host.value, host.dtype, host.layout, device, memory_config, host.tile, mesh_mapper,
                 op_name)


# -- allocate and copy ---------------------------------------------------------------------------------------------
def _allocate_golden(shape_or_spec, dtype=None, *_, **__):
    if isinstance(shape_or_spec, TensorSpec):
        shape_or_spec, dtype = shape_or_spec.shape, shape_or_spec.dtype

    return torch.zeros(tuple(shape_or_spec), dtype=dtypes.TORCH_DTYPE[DataType(dtype or DataType.BFLOAT16)])


@register_op("ttnn.allocate_tensor_on_device", traits={Trait.HOST}, golden=_allocate_golden)
def allocate_tensor_on_device(shape_or_spec, dtype_or_device=None, layout: Layout | None = None, device=None,
                              memory_config: MemoryConfig | None = None,
                              *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """A device tensor with a buffer and no values written yet, in TT-NN's two forms:

        allocate_tensor_on_device(tensor_spec, device)
        allocate_tensor_on_device(shape, dtype, layout, device, memory_config=None)

    Its values read as zeros until copy_host_to_device_tensor (or an op's output_tensor=) fills them.

    >>> t = ttnn.allocate_tensor_on_device(ttnn.Shape([2, 32]), ttnn.bfloat16, ttnn.TILE, device)
    >>> t.shape, t.is_allocated()
    (Shape([2, 32]), True)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if isinstance(shape_or_spec, TensorSpec):
        spec, device = shape_or_spec, dtype_or_device if device is None else device
        memory_config = spec.memory_config
    else:
        if dtype_or_device is None or layout is None:
            raise TypeError(f"{op_name}(shape, dtype, layout, device, memory_config=None): "
                            "dtype and layout are required; or pass (ttnn.TensorSpec, device)")
        spec = TensorSpec(Shape(shape_or_spec), dtype_or_device, layout)
    if not isinstance(device, Device):
        raise TypeError(f"{op_name}: needs a device, got {device!r}")
    # Without a memory_config the usual rules choose one (a `with ttnn.memory(...)` block, then the default).
    cfg, source = placement.resolve(memory_config, [], op_name)

    zeros = torch.zeros(tuple(spec.shape), dtype=dtypes.TORCH_DTYPE[spec.dtype])
    return Tensor._create(zeros, spec.dtype, spec.layout, device, cfg, source, spec.tile)


def _check_copy(op_name: str, host_tensor, device_tensor, tt_nn_only) -> None:
    """A host-to-device copy's arguments: a host tensor and an allocated device tensor of its shape, dtype and
    layout."""
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    for t, where in ((host_tensor, "host_tensor"), (device_tensor, "device_tensor")):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op_name}: {where} must be a ttnn tensor, got {type(t).__name__}")
    if host_tensor.device() is not None:
        raise ValueError(f"{op_name}: host_tensor {host_tensor.tensor_id} is on a device; "
                         f"bring it to the host first (ttnn.from_device)")
    if device_tensor.device() is None:
        raise ValueError(f"{op_name}: device_tensor {device_tensor.tensor_id} is on the host; "
                         f"make it with ttnn.allocate_tensor_on_device")
    h, d = host_tensor, device_tensor
    if (tuple(h.shape), h.dtype, h.layout) != (tuple(d.shape), d.dtype, d.layout):
        raise ValueError(
            f"{op_name}: host tensor is {list(h.shape)} {h.dtype!r} {h.layout!r} but the "
            f"device tensor is {list(d.shape)} {d.dtype!r} {d.layout!r}; they must match"
        )


@register_op("ttnn.copy_host_to_device_tensor", traits={Trait.HOST},
             no_golden="it writes into its second argument and returns None, as in TT-NN")
def copy_host_to_device_tensor(host_tensor: Tensor, device_tensor: Tensor, cq_id=None,
                               *, op_name: str = OWN_NAME, **tt_nn_only) -> None:
    """Write a host tensor's values into an allocated device tensor (same shape, dtype and layout), in place.

    The device tensor keeps its buffer and id, as a trace's input tensor must. Returns None, as in TT-NN.

    >>> dst = ttnn.allocate_tensor_on_device(ttnn.Shape([1, 3]), ttnn.float32, ttnn.ROW_MAJOR, device)
    >>> ttnn.copy_host_to_device_tensor(ttnn.from_torch(torch.tensor([[1.0, 2.0, 3.0]])), dst)
    >>> dst.to_torch()
    tensor([[1., 2., 3.]])
    """
    _check_copy(op_name, host_tensor, device_tensor, tt_nn_only)
    device_tensor._write(host_tensor.value)


@register_op("ttnn.allocate_tensor_on_host", traits={Trait.HOST}, golden=_allocate_golden)
def allocate_tensor_on_host(shape_or_spec, dtype_or_device=None, layout: Layout | None = None, mesh_device=None,
                            memory_config: MemoryConfig | None = None,
                            *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """A host tensor to copy a device tensor into (copy_device_to_host_tensor), in TT-NN's two forms:

        allocate_tensor_on_host(tensor_spec, mesh_device)
        allocate_tensor_on_host(shape, dtype, layout, mesh_device, memory_config=None)

    Its values read as zeros until a copy fills them (tt-metal a8c5af0f's pytensor bindings).

    >>> t = ttnn.allocate_tensor_on_host(ttnn.Shape([2, 32]), ttnn.bfloat16, ttnn.TILE, device)
    >>> t.shape, t.storage_type() == ttnn.StorageType.HOST
    (Shape([2, 32]), True)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if isinstance(shape_or_spec, TensorSpec):
        spec, mesh_device = shape_or_spec, dtype_or_device if mesh_device is None else mesh_device
    else:
        if dtype_or_device is None or layout is None:
            raise TypeError(f"{op_name}(shape, dtype, layout, mesh_device, memory_config=None): "
                            "dtype and layout are required; or pass (ttnn.TensorSpec, mesh_device)")
        spec = TensorSpec(Shape(shape_or_spec), dtype_or_device, layout)
    if mesh_device is None:
        raise TypeError(f"{op_name}: needs the device the tensor will be copied from, got None")

    zeros = torch.zeros(tuple(spec.shape), dtype=dtypes.TORCH_DTYPE[spec.dtype])
    return Tensor._create(zeros, spec.dtype, spec.layout, None, None, None, spec.tile)


@register_op("ttnn.copy_device_to_host_tensor", traits={Trait.HOST},
             no_golden="it writes into its second argument and returns None, as in TT-NN")
def copy_device_to_host_tensor(device_tensor: Tensor, host_tensor: Tensor, blocking: bool = True, cq_id=None,
                               *, op_name: str = OWN_NAME, **tt_nn_only) -> None:
    """Read a device tensor's values into a host tensor of its shape, dtype and layout (allocate_tensor_on_host), in
    place; blocking=False returns at once in TT-NN, and here too, as device_sim's reads finish before they return.

    >>> src = ttnn.from_torch(torch.tensor([[1.0, 2.0]]), ttnn.float32, device=device)
    >>> dst = ttnn.allocate_tensor_on_host(src.spec, device)
    >>> ttnn.copy_device_to_host_tensor(src, dst)
    >>> dst.to_torch()
    tensor([[1., 2.]])
    """
    _check_copy(op_name, host_tensor, device_tensor, tt_nn_only)
    host_tensor._write(device_tensor._value_or_raise())


@register_op("ttnn.copy_host_to_device_tensor_partial", traits={Trait.HOST},
             no_golden="it writes into its second argument and returns None, as in TT-NN")
def copy_host_to_device_tensor_partial(host_tensor: Tensor, device_tensor: Tensor, core_filter, cq_id=None,
                                       *, op_name: str = OWN_NAME, **tt_nn_only) -> None:
    """copy_host_to_device_tensor for the shards on the cores of `core_filter` (a CoreRangeSet; DRAM shards'
    cores are (bank, 0)): those shards take the host tensor's values, the others keep theirs. A sharded device
    tensor with a 2D shard spec only; TT-NN refuses an interleaved one.

    >>> cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, ttnn.ShardSpec(
    ...     ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(0, 1))}), (2, 4)))
    >>> dst = ttnn.allocate_tensor_on_device(ttnn.Shape([4, 4]), ttnn.float32, ttnn.ROW_MAJOR, device, cfg)
    >>> first = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(0, 0))})
    >>> ttnn.copy_host_to_device_tensor_partial(ttnn.from_torch(torch.ones(4, 4)), dst, first)
    >>> dst.to_torch()[:, 0]
    tensor([1., 1., 0., 0.])
    """
    _check_copy(op_name, host_tensor, device_tensor, tt_nn_only)
    if not device_tensor.is_sharded():
        raise RuntimeError(f"{op_name}: device_tensor {device_tensor.tensor_id} is interleaved; a partial copy "
                           f"writes the shards on the filter's cores, so it needs a sharded tensor")
    on = sharding.shards_on(device_tensor, core_filter)
    device_tensor._write(torch.where(on, host_tensor.value, device_tensor.value))
