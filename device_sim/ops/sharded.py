"""Moving a tensor into, out of and between sharded layouts: TT-NN's sharded data-movement ops.

    import device_sim as ttnn
    t = ttnn.from_torch(torch.randn(256, 64), layout=ttnn.TILE, device=device)            # DRAM interleaved
    s = ttnn.interleaved_to_sharded(t, ttnn.CoreGrid(y=2, x=4), [32, 64],
                                    ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.ShardOrientation.ROW_MAJOR)
    r = ttnn.reshard(s, ttnn.create_sharded_memory_config((256, 64), ttnn.CoreGrid(y=1, x=2),
                                                          ttnn.ShardStrategy.HEIGHT))
    back = ttnn.sharded_to_interleaved(r, ttnn.DRAM_MEMORY_CONFIG)

Each is one op with one output buffer, as on the device; the values do not change (only an
output_dtype rounds them). ttnn.to_memory_config moves between any two configs as well.
"""

from __future__ import annotations

import math

from device_sim import device_work
from device_sim.ops.common import check_tt_nn_only, held, output, values
from device_sim.programs import data_movement as programs
from device_sim.programs import shape as shape_programs
from device_sim.registry import OWN_NAME, register_op
from device_sim.sharding import num_cores_to_corerangeset
from device_sim.tensor import Tensor
from device_sim.types import (
    DRAM_MEMORY_CONFIG,
    BufferType,
    CoreCoord,
    CoreGrid,
    CoreRangeSet,
    DataType,
    MemoryConfig,
    ShardOrientation,
    ShardSpec,
    ShardSpecError,
    TensorMemoryLayout,
)


def _identity(t, *_, output_dtype=None, **__):
    return t


def _on_device(op_name: str, tensor) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op_name} takes a ttnn tensor, got {type(tensor).__name__}")
    if tensor.device() is None:
        raise ValueError(f"{op_name}: tensor {tensor.tensor_id} is on the host; move it with ttnn.to_device first")
    return tensor


def _grid(grid, t: Tensor, shard_shape, shard_scheme, row_wise: bool, slices: int = 1) -> CoreRangeSet:
    """TT-NN's grid argument: a grid size (a CoreCoord, or the CoreGrid that device_sim's
    compute_with_storage_grid_size() returns) or a CoreRangeSet. An (x, y) pair is a CoreCoord, as TT-NN's binding
    takes it (tt-metal's test_reduce.py and test_matmul_1d_2d.py pass one). Within a grid size the shards take only
    the cores they need, the first ones row by row (ROW_MAJOR) or column by column: interleaved_to_sharded.cpp's
    (and _partial's, over one of `slices` slices of the rows) num_cores_to_corerangeset of the padded shape's
    shard count."""
    if isinstance(grid, (tuple, list)) and len(grid) == 2 and all(isinstance(v, int) for v in grid):
        grid = CoreCoord(*grid)
    if isinstance(grid, CoreRangeSet):
        return grid
    if not isinstance(grid, (CoreCoord, CoreGrid)):
        raise TypeError(f"grid must be a ttnn.CoreCoord (grid size), ttnn.CoreGrid or ttnn.CoreRangeSet, got {grid!r}")
    padded = t.padded_shape
    width = padded[-1]
    height = math.prod(padded) // width // slices if width else 0
    rows, cols = -(-height // shard_shape[0]), -(-width // shard_shape[1])
    layout = TensorMemoryLayout(shard_scheme)
    if layout == TensorMemoryLayout.HEIGHT_SHARDED:
        n = rows
    elif layout == TensorMemoryLayout.WIDTH_SHARDED:
        n = cols
    elif layout == TensorMemoryLayout.BLOCK_SHARDED:
        n = rows * cols
    else:
        raise ShardSpecError(f"interleaved_to_sharded: shard_scheme {layout} is not a sharding scheme (Unsupported "
                             f"sharding scheme); give HEIGHT_SHARDED, WIDTH_SHARDED or BLOCK_SHARDED")
    return num_cores_to_corerangeset(n, CoreCoord(grid.x, grid.y), row_wise=row_wise)


@register_op("ttnn.interleaved_to_sharded", kind="move", golden=_identity)
def interleaved_to_sharded(input_tensor: Tensor, grid=None, shard_shape=None, shard_scheme=None,
                           shard_orientation=None, output_dtype: DataType | None = None, *,
                           sharded_memory_config: MemoryConfig | None = None, keep_l1_aligned: bool = False,
                           op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """An interleaved tensor as a sharded one, in TT-NN's two forms:

        interleaved_to_sharded(t, sharded_memory_config, output_dtype=None)
        interleaved_to_sharded(t, grid, shard_shape, shard_scheme, shard_orientation, output_dtype=None)

    >>> x = ttnn.from_torch(torch.rand(64, 64), layout=ttnn.TILE, device=device)
    >>> cfg = ttnn.create_sharded_memory_config((32, 64), ttnn.CoreGrid(y=1, x=2), ttnn.ShardStrategy.HEIGHT,
    ...                                         use_height_and_width_as_shard_shape=True)
    >>> ttnn.interleaved_to_sharded(x, sharded_memory_config=cfg).memory_config().memory_layout
    TensorMemoryLayout.HEIGHT_SHARDED
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    t = _on_device(op_name, input_tensor)
    if isinstance(grid, MemoryConfig):  # the first form: the third positional is output_dtype
        sharded_memory_config, output_dtype = grid, output_dtype if output_dtype is not None else shard_shape
    elif sharded_memory_config is None:
        if grid is None or shard_shape is None or shard_scheme is None:
            raise TypeError(f"{op_name} takes (tensor, sharded_memory_config) or "
                            "(tensor, grid, shard_shape, shard_scheme, shard_orientation)")
        orientation = ShardOrientation.ROW_MAJOR if shard_orientation is None else shard_orientation
        cores = _grid(grid, t, shard_shape, shard_scheme, orientation == ShardOrientation.ROW_MAJOR)
        sharded_memory_config = MemoryConfig(shard_scheme, BufferType.L1, ShardSpec(cores, shard_shape, orientation))
    if t.is_sharded():
        raise ShardSpecError(f"{op_name}: input tensor {t.tensor_id} must be interleaved, it is "
                             f"{t._memory_config!r}; use ttnn.reshard to move between sharded configs")
    if not sharded_memory_config.is_sharded():
        raise ShardSpecError(f"{op_name}: sharded_memory_config must be sharded, got "
                             f"{sharded_memory_config!r}; ttnn.to_memory_config moves between interleaved configs")
    out = output(held(t), t, [t], op_name=op_name, dtype=output_dtype,
                 memory_config=sharded_memory_config)
    device_work.launch_after(out, True, t, programs.interleaved_to_sharded_program(t, out))
    return out


@register_op("ttnn.sharded_to_interleaved", kind="move", golden=_identity)
def sharded_to_interleaved(input_tensor: Tensor, memory_config: MemoryConfig | None = None,
                           output_dtype: DataType | None = None, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """A sharded tensor as an interleaved one (DRAM interleaved when no memory_config is given, as TT-NN's).

    An interleaved input comes back as it is, memory_config and output_dtype unread (sharded_to_interleaved.cpp:
    no shard spec, no work; Whisper's encoder calls it on a conv1d output either way).

    >>> cfg = ttnn.create_sharded_memory_config((32, 64), ttnn.CoreGrid(y=1, x=2), ttnn.ShardStrategy.HEIGHT,
    ...                                         use_height_and_width_as_shard_shape=True)
    >>> x = ttnn.from_torch(torch.rand(64, 64), layout=ttnn.TILE, device=device, memory_config=cfg)
    >>> ttnn.sharded_to_interleaved(x, ttnn.DRAM).memory_config().memory_layout
    TensorMemoryLayout.INTERLEAVED
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    t = _on_device(op_name, input_tensor)
    cfg = DRAM_MEMORY_CONFIG if memory_config is None else memory_config
    if not t.is_sharded():
        return t
    if cfg.memory_layout != TensorMemoryLayout.INTERLEAVED:
        raise ShardSpecError(f"{op_name}: memory_config must be interleaved, got {cfg!r}")
    out = output(held(t), t, [t], op_name=op_name, dtype=output_dtype, memory_config=cfg)
    device_work.launch_after(out, True, t, programs.sharded_to_interleaved_program(t, out))
    return out


@register_op("ttnn.reshard", kind="move", golden=_identity)
def reshard(input_tensor: Tensor, output_memory_config: MemoryConfig, output_tensor: Tensor | None = None,
            *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """A sharded tensor in another sharded config (another grid, shard shape or strategy).

    With `output_tensor` (a sharded tensor of the same shape) the values are written into it, in place.

    >>> rows = ttnn.create_sharded_memory_config((32, 64), ttnn.CoreGrid(y=1, x=2), ttnn.ShardStrategy.HEIGHT,
    ...                                          use_height_and_width_as_shard_shape=True)
    >>> cols = ttnn.create_sharded_memory_config((64, 32), ttnn.CoreGrid(y=1, x=2), ttnn.ShardStrategy.WIDTH,
    ...                                          use_height_and_width_as_shard_shape=True)
    >>> x = ttnn.from_torch(torch.rand(64, 64), layout=ttnn.TILE, device=device, memory_config=rows)
    >>> ttnn.reshard(x, cols).memory_config().memory_layout
    TensorMemoryLayout.WIDTH_SHARDED
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    t = _on_device(op_name, input_tensor)
    if not t.is_sharded():
        raise ShardSpecError(f"{op_name}: input tensor {t.tensor_id} must be sharded, it is {t._memory_config!r}; "
                             f"use ttnn.interleaved_to_sharded")
    if not isinstance(output_memory_config, MemoryConfig) or not output_memory_config.is_sharded():
        raise ShardSpecError(f"{op_name}: output_memory_config must be a sharded MemoryConfig, got "
                             f"{output_memory_config!r}; use ttnn.sharded_to_interleaved")
    if output_tensor is not None:
        out = _on_device(op_name, output_tensor)
        if not out.is_sharded():
            raise ShardSpecError(f"{op_name}: output_tensor {out.tensor_id} must be sharded, it is "
                                 f"{out._memory_config!r}")
        device_work.launch(t.device(), programs.reshard_program(t, out))  # before the write: a clash keeps it
        out._write(held(t))
        return out
    out = output(held(t), t, [t], op_name=op_name, memory_config=output_memory_config)
    device_work.launch_after(out, True, t, programs.reshard_program(t, out))
    return out


# -- the partial forms: one slice of a tall tensor at a time (how tt-metal's conv models stream activations) --
def _rows(op_name: str, t: Tensor, num_slices: int, slice_index: int) -> tuple[int, int]:
    """(rows per slice, first row) of slice `slice_index` of `num_slices` over t's flattened height."""
    v = t._value_or_raise()
    rows = v.numel() // v.shape[-1]
    if not 0 <= slice_index < num_slices or rows % num_slices:
        raise ShardSpecError(f"{op_name}: slice_index {slice_index} of num_slices {num_slices} must pick one of "
                             f"{num_slices} equal slices of the tensor's {rows} rows")
    per = rows // num_slices
    return per, slice_index * per


def _i2s_partial_golden(t, grid, shard_shape, num_slices, slice_index, *_, **__):
    flat = t.reshape(-1, t.shape[-1])
    per = flat.shape[0] // num_slices
    return flat[slice_index * per:(slice_index + 1) * per].reshape(*(1,) * (t.dim() - 2), per, t.shape[-1])


@register_op("ttnn.interleaved_to_sharded_partial", golden=_i2s_partial_golden)
def interleaved_to_sharded_partial(input_tensor: Tensor, grid, shard_shape, num_slices: int, slice_index: int,
                                   shard_scheme: TensorMemoryLayout, shard_orientation: ShardOrientation,
                                   output_dtype: DataType | None = None,
                                   *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Slice `slice_index` of `num_slices` equal slices of an interleaved tensor's rows, sharded.

    >>> x = ttnn.from_torch(torch.rand(1, 1, 128, 64), layout=ttnn.TILE, device=device)
    >>> part = ttnn.interleaved_to_sharded_partial(x, ttnn.CoreGrid(y=1, x=2), (32, 64), 2, 1,
    ...     ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.ShardOrientation.ROW_MAJOR)  # the second of 2 slices
    >>> part.shape, part.memory_config().memory_layout
    (Shape([1, 1, 64, 64]), TensorMemoryLayout.HEIGHT_SHARDED)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    t = _on_device(op_name, input_tensor)
    per, first = _rows(op_name, t, num_slices, slice_index)
    v = values(t)
    part = v.reshape(-1, v.shape[-1])[first:first + per].reshape(*(1,) * (v.dim() - 2), per, v.shape[-1])
    cores = _grid(grid, t, shard_shape, shard_scheme, shard_orientation == ShardOrientation.ROW_MAJOR, num_slices)
    cfg = MemoryConfig(shard_scheme, BufferType.L1, ShardSpec(cores, shard_shape, shard_orientation))
    out = output(part, t, [t], op_name=op_name, dtype=output_dtype, memory_config=cfg)
    device_work.launch_after(out, True, t, shape_programs.i2s_partial_program(t, out))
    return out


def _s2i_partial_golden(t, cache, num_slices, slice_index, *_, **__):
    out = cache.clone().reshape(-1, cache.shape[-1])
    per = out.shape[0] // num_slices
    out[slice_index * per:(slice_index + 1) * per] = t.reshape(-1, t.shape[-1])
    return out.reshape(cache.shape)


@register_op("ttnn.sharded_to_interleaved_partial", golden=_s2i_partial_golden)
def sharded_to_interleaved_partial(input_tensor: Tensor, cache_tensor: Tensor, num_slices: int, slice_index: int, *,
                                   memory_config: MemoryConfig | None = None, output_dtype: DataType | None = None,
                                   op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Write a sharded slice back into rows `slice_index` of `num_slices` of `cache_tensor`, in place; returns it.

    >>> x = ttnn.from_torch(torch.rand(1, 1, 128, 64), layout=ttnn.TILE, device=device)
    >>> part = ttnn.interleaved_to_sharded_partial(x, ttnn.CoreGrid(y=1, x=2), (32, 64), 2, 1,
    ...     ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.ShardOrientation.ROW_MAJOR)
    >>> out = ttnn.from_torch(torch.zeros(1, 1, 128, 64), layout=ttnn.TILE, device=device)
    >>> _ = ttnn.sharded_to_interleaved_partial(part, out, 2, 1)  # back into rows 64..127
    >>> torch.equal(out.to_torch()[..., 64:, :], x.to_torch()[..., 64:, :])
    True
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    t = _on_device(op_name, input_tensor)
    cache = _on_device(op_name, cache_tensor)
    per, first = _rows(op_name, cache, num_slices, slice_index)
    v, c = values(t), values(cache).clone()
    if v.numel() != per * c.shape[-1]:
        raise ShardSpecError(f"{op_name}: input shape {list(v.shape)} is not one of "
                             f"{num_slices} slices of cache_tensor shape {list(c.shape)}")
    flat = c.reshape(-1, c.shape[-1])
    flat[first:first + per] = v.reshape(per, -1)
    program = shape_programs.s2i_partial_program(t, cache)
    if program is not None:  # into the cache's own buffer, before the write: a CB clash keeps the cache
        device_work.launch(t.device(), program)
    cache._write(flat.reshape(c.shape))
    return cache
