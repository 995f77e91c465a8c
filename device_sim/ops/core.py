"""Moving tensors between torch, the host and the device, and changing how they are held."""

from __future__ import annotations

import builtins
import enum
import math

import torch

from device_sim import device_work, dtypes, placement, views
from device_sim.distributed import mesh_from_torch, mesh_to_torch
from device_sim.ops.common import check_tt_nn_only, device_inputs, held, output, values
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import data_movement as programs
from device_sim.programs import shape as shape_programs
from device_sim.registry import OWN_NAME, Trait, pending_output_target, register_op
from device_sim.tensor import Tensor, make_view, reshaped
from device_sim.tile import as_tile
from device_sim.types import DataType, Layout, MemoryConfig, Shape, TensorMemoryLayout


def _identity(t, *_, **__):
    return t


# The device dtype TT-NN infers from a torch dtype (ttnn-nanobind/ttnn_dtype_traits.hpp): int64 becomes
# uint32 and int16 uint16. float64 (which TT-NN rejects) is kept as float32, device_sim's long-standing rule.
TORCH_TO_DEVICE_DTYPE = {**dtypes.FROM_TORCH, torch.int64: DataType.UINT32, torch.int16: DataType.UINT16}


def torch_values(data, op_name: str) -> torch.Tensor:
    """A detached torch tensor from a torch tensor, a numpy array or nested lists."""
    if isinstance(data, Tensor):
        raise TypeError(f"{op_name} got a ttnn tensor (id {data.tensor_id}); it is already converted")
    t = data if isinstance(data, torch.Tensor) else torch.as_tensor(data)
    return t.detach()


def device_dtype(t: torch.Tensor, dtype, op_name: str) -> DataType:
    if dtype is not None:
        return DataType(dtype)
    if t.dtype not in TORCH_TO_DEVICE_DTYPE:
        raise TypeError(f"{op_name}: no device dtype for torch dtype {t.dtype}; pass dtype=ttnn.bfloat16 (or another)")
    return TORCH_TO_DEVICE_DTYPE[t.dtype]


def place(t: torch.Tensor, dtype: DataType, layout, device, memory_config, tile, mesh_mapper, op_name: str) -> Tensor:
    """The tensor from_torch, ttnn.Tensor and as_tensor make: `t` rounded to `dtype`, on `device` if given.

    A layout of None is TT-NN's default: TILE for a block-float dtype (it exists only in tiles), else ROW_MAJOR.
    This is the seam for mesh devices: `mesh_mapper` says how `t` is spread over a mesh's devices. On one
    device (or the host) every mapper puts the whole tensor there, so it is accepted and changes nothing here.
    """
    if mesh_mapper is not None or len(getattr(device, "_chips", ())) > 1:  # several chips: a shard on each
        return mesh_from_torch(lambda piece, chip: place(piece, dtype, layout, chip, memory_config, tile, None,
                                                         op_name), t, mesh_mapper, device)
    layout = Layout(layout) if layout is not None else (Layout.TILE if dtype.is_block_float else Layout.ROW_MAJOR)
    dtypes.check_layout(dtype, layout)
    tile = as_tile(tile)
    cfg, source = placement.resolve(memory_config, [], op_name) if device is not None else (None, None)
    v = dtypes.to_device_values(t, dtype)
    if v.data_ptr() == t.data_ptr() and v.numel():
        # TT-NN copies the values (to the device, or into its host buffer): a torch tensor the caller updates in
        # place afterwards (an optimizer's step on the parameter it was made from) must not change this one
        v = v.clone()
    return Tensor._create(v, dtype, layout, device, cfg, source, tile)


@register_op("ttnn.from_torch", kind="host_move", traits={Trait.HOST}, golden=_identity, mesh_aware=True)
def from_torch(tensor, dtype: DataType | None = None, *, spec=None, tile=None, pad_value: float | None = None,
               layout: Layout | None = None, device=None, memory_config: MemoryConfig | None = None,
               mesh_mapper=None, cq_id=None, preserve_nan_values: bool = False, col_tilize: bool = False,
               enable_bfloat_opt: bool = False, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor | None:
    """A ttnn tensor from a torch tensor (or a numpy array, or nested lists); None stays None, as in TT-NN.

    Args:
        tensor: the values. Without dtype=, the device dtype follows the torch dtype (int64 becomes uint32).
        dtype: the device dtype (ttnn.bfloat16, ttnn.bfloat8_b, ...).
        spec: a ttnn.TensorSpec giving dtype, layout, memory config and tile at once (then give none of those).
        tile: the tile of a TILE tensor, e.g. ttnn.Tile((16, 32)); it sets the padding and the page size.
        pad_value: the value TT-NN writes into tile padding; device_sim does not materialise padding.
        layout: ttnn.TILE or ttnn.ROW_MAJOR; None means TILE for bfloat8_b/bfloat4_b, else ROW_MAJOR.
        device, memory_config: where to put it (the host when device is None).
        mesh_mapper: how to spread it over a mesh device (see place()); cq_id: TT-NN's command queue.
        preserve_nan_values: keep NaN through block-float packing; device_sim always does.
        col_tilize: for bfloat8_b/bfloat4_b, pack the transpose of the last two dims, so the shared
            exponents run down columns; the result's shape is (..., N, K), as in TT-NN.
        enable_bfloat_opt: TT-NN's faster on-device block-float conversion, which rounds differently;
            device_sim rounds as the host conversion does (nearest even), so values may differ in the last bit.

    >>> x = ttnn.from_torch(torch.ones(2, 3), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> x.shape, x.padded_shape, x.dtype, x.layout
    (Shape([2, 3]), Shape([32, 32]), DataType.BFLOAT16, Layout.TILE)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if tensor is None:
        return None
    if spec is not None:
        given = {k: v for k, v in dict(dtype=dtype, layout=layout, memory_config=memory_config, tile=tile).items()
                 if v is not None}
        if given:
            raise TypeError(f"{op_name}: give either spec= or {', '.join(given)}=, not both")
        dtype, layout, memory_config, tile = spec.dtype, spec.layout, spec.memory_config, spec.tile
    t = torch_values(tensor, op_name)
    if spec is not None and tuple(spec.shape) != tuple(t.shape):
        raise ValueError(f"{op_name}: spec shape {list(spec.shape)} differs from the tensor's {list(t.shape)}")
    if col_tilize:
        if spec is not None or dtype is None or not DataType(dtype).is_block_float or t.dim() < 2 \
                or layout not in (None, Layout.TILE):
            raise ValueError(f"{op_name}: col_tilize=True needs dtype bfloat8_b or bfloat4_b, a tensor of rank "
                             "2 or more, layout None or TILE, and no spec")
        t = t.transpose(-2, -1).contiguous()
    return place(t, device_dtype(t, dtype, op_name), layout, device, memory_config, tile, mesh_mapper,
                 op_name)


def _to_torch_golden(tensor, dtype=None, *, torch_rank=None, **_):
    return _squeeze_to_rank(tensor, torch_rank, "ttnn.to_torch").to(dtype) if dtype is not None else \
        _squeeze_to_rank(tensor, torch_rank, "ttnn.to_torch")


def _squeeze_to_rank(v: torch.Tensor, torch_rank, op_name: str) -> torch.Tensor:
    if torch_rank is None:
        return v
    while v.dim() > torch_rank:
        if v.shape[0] != 1:
            raise ValueError(f"{op_name}: cannot squeeze shape {list(v.shape)} to rank {torch_rank}: "
                             f"the leading dim is {v.shape[0]}, not 1")
        v = v.squeeze(0)
    return v


# to_torch's dtype where it is not the one the values are held in: TT-NN's Tensor.to_torch hands torch the host
# buffer as it is (pytensor.cpp, get_dtype_from_ttnn_datatype), so uint16 and uint32 come back as torch's own
# unsigned dtypes, which device_sim holds as int32 / int64 for torch's kernels.
_TO_TORCH = {DataType.UINT16: torch.uint16, DataType.UINT32: torch.uint32}


@register_op("ttnn.to_torch", kind="host_move", traits={Trait.HOST}, golden=_to_torch_golden, mesh_aware=True)
def to_torch(tensor: Tensor, dtype: torch.dtype | None = None, *, torch_rank: int | None = None,
             mesh_composer=None, device=None, cq_id=None, op_name: str = OWN_NAME, **tt_nn_only) -> torch.Tensor:
    """The tensor's values as a new torch tensor in its logical shape (tile padding removed).

    Args:
        dtype: the torch dtype to return (default: the one the device dtype is held in).
        torch_rank: squeeze leading dims of size 1 until the result has this rank.
        mesh_composer: how a mesh tensor's per-device parts join into one (the mesh seam); on one
            device there is one part, so it changes nothing here. device, cq_id: TT-NN's, no effect here.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.to_torch(x)
    tensor([[0., 1., 2.],
            [3., 4., 5.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if isinstance(tensor, torch.Tensor):
        return tensor
    if mesh_composer is not None or hasattr(tensor, "shards"):  # a mesh tensor: join its shards
        v = _squeeze_to_rank(mesh_to_torch(tensor, mesh_composer), torch_rank, op_name)
        return v.to(dtype if dtype is not None else _TO_TORCH.get(getattr(tensor, "dtype", None), v.dtype))
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op_name} takes a ttnn tensor, got {type(tensor).__name__}")
    v = _squeeze_to_rank(tensor._value_or_raise().clone(), torch_rank, op_name)
    return v.to(dtype if dtype is not None else _TO_TORCH.get(tensor.dtype, v.dtype))


@register_op("ttnn.to_device", kind="host_move", traits={Trait.HOST}, golden=_identity)
def to_device(tensor: Tensor, device, memory_config: MemoryConfig | None = None,
              *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The host tensor on `device`, in DRAM unless `memory_config` says otherwise; the same values.

    >>> x = ttnn.from_torch(torch.ones(2, 3))
    >>> ttnn.to_device(x, device, memory_config=ttnn.L1).memory_config().buffer_type
    BufferType.L1
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if tensor.device() is device:
        return tensor
    if tensor.device() is not None:
        raise ValueError(
            f"tensor {tensor.tensor_id} is on device {tensor.device().device_id}; "
            f"bring it to the host first (tensor.cpu()) to move it to device {device.device_id}"
        )
    cfg, source = placement.resolve(memory_config, [], op_name)
    out = Tensor._create(tensor._value_or_raise(), tensor.dtype, tensor.layout, device, cfg, source)
    _keep_pad_fill(tensor, out)
    return out


def _keep_pad_fill(src: Tensor, out: Tensor) -> None:
    """A copy between host and device carries the tile padding as it is (fill_implicit_tile_padding's fill)."""
    fill = getattr(src, "_pad_fill", None)
    if fill is not None:
        out._pad_fill = fill


@register_op("ttnn.from_device", kind="host_move", traits={Trait.HOST}, golden=_identity)
def from_device(tensor: Tensor, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The device tensor read back into a host tensor; the device buffer stays.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.from_device(x).storage_type()
    <StorageType.HOST: 0>
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if tensor.device() is None:
        return tensor
    out = Tensor._create(tensor._value_or_raise(), tensor.dtype, tensor.layout, None, None, None)
    _keep_pad_fill(tensor, out)
    return out


def untilized_dtype(dtype: DataType) -> DataType:
    """An untilize's output dtype: BFLOAT8_B comes out as BFLOAT16 (untilize_device_operation.cpp and
    untilize_with_unpadding's compute_output_specs), the rest as they are."""
    return DataType.BFLOAT16 if dtype == DataType.BFLOAT8_B else dtype


@register_op("ttnn.to_layout", kind="move", golden=_identity)
def to_layout(tensor: Tensor, layout: Layout, dtype: DataType | None = None,
              memory_config: MemoryConfig | None = None, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Tilize or untilize; the logical shape survives, the padding comes and goes.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), device=device)
    >>> y = ttnn.to_layout(x, ttnn.TILE)
    >>> y.layout, y.padded_shape
    (Layout.TILE, Shape([32, 32]))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    layout = Layout(layout)
    if layout == tensor.layout and dtype in (None, tensor.dtype) and memory_config is None:
        return tensor
    ins = device_inputs(op_name, tensor)
    if layout == Layout.ROW_MAJOR and dtype is None and tensor.device() is not None:
        dtype = untilized_dtype(tensor.dtype)
    out = output(held(tensor), tensor, ins, op_name=op_name, dtype=dtype, layout=layout,
                 memory_config=memory_config)
    _keep_pad_fill(tensor, out)  # a padded row-major tensor tilizes with its pad value in the tile padding
    if layout == Layout.TILE and tt_nn_only.get("pad_value") is not None:  # to_layout's own pad_value= fills it
        out._pad_fill = float(tt_nn_only["pad_value"])
    device_work.launch_after(out, True, tensor, programs.layout_program(tensor, out))  # tilize / untilize
    return out


@register_op("ttnn.to_memory_config", kind="move", output_keyword="output_tensor", golden=_identity)
def to_memory_config(tensor: Tensor, memory_config: MemoryConfig, dtype: DataType | None = None,
                     *, op_name: str = OWN_NAME) -> Tensor:
    """The tensor in another memory config (DRAM or L1, interleaved or sharded), values unchanged.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.to_memory_config(x, ttnn.L1).memory_config().buffer_type
    BufferType.L1
    """
    if tensor.device() is None:
        raise ValueError(
            f"tensor {tensor.tensor_id} is on the host; ttnn.to_device(tensor, device, memory_config) places it"
        )
    if memory_config is None:
        raise TypeError("to_memory_config needs a memory config, e.g. ttnn.L1 or ttnn.DRAM")
    fresh = pending_output_target(op_name) is None
    out = output(held(tensor), tensor, [tensor], op_name=op_name, dtype=dtype,
                 memory_config=memory_config)
    device_work.launch_after(out, fresh, tensor, programs.memory_move_program(tensor, out))
    return out


def _typecast_golden(t, dtype, output_dtype=None, **_):
    return t.to(dtypes.TORCH_DTYPE[DataType(dtype if output_dtype is None else output_dtype)])


def _wrapped_to_uint8(v: torch.Tensor) -> torch.Tensor:
    """A typecast's uint8 values: the integer part modulo 256, as Wormhole's typecast kernels keep the low byte
    (ckernel_sfpu_typecast.h: fp32_to_uint8 takes a negative's two's complement + 256, uint_to_uint8 adds 256, both
    AND 0xFF), where the host's conversion would clamp; tt-metal's test_eltwise_typecast.py expects -257..257 so."""
    if v.is_floating_point():
        v = torch.nan_to_num(v.double().trunc(), nan=0.0)
    return v.to(torch.int64).remainder(256)


def _typecast(name: str, tensor: Tensor, dtype: DataType, memory_config: MemoryConfig | None, tt_nn_only) -> Tensor:
    if tt_nn_only:
        check_tt_nn_only(name, tt_nn_only)
    ins = device_inputs(name, tensor)
    fresh = pending_output_target(name) is None
    v = held(tensor)
    if DataType(dtype) is DataType.UINT8 and tensor.dtype is not DataType.UINT8:
        v = _wrapped_to_uint8(v)
    out = output(v, tensor, ins, op_name=name, dtype=dtype, memory_config=memory_config)
    if tensor.device() is not None and not tensor.is_sharded():
        device_work.launch_after(out, fresh, tensor, programs.typecast_program(tensor, out.dtype))
    return out


@register_op("ttnn.typecast", kind="move", output_keyword="output_tensor", golden=_typecast_golden)
def typecast(tensor: Tensor, dtype: DataType, output_dtype: DataType | None = None, *,
             memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The tensor converted to `dtype` on the device, each value rounded as that dtype holds it. TT-NN's other
    overload, typecast(tensor, input_dtype, output_dtype), names the tensor's own dtype first (copy/typecast.hpp).

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.typecast(x, ttnn.bfloat16).dtype, ttnn.typecast(x, ttnn.float32, ttnn.bfloat16).dtype
    (DataType.BFLOAT16, DataType.BFLOAT16)
    """
    if output_dtype is not None:
        if DataType(dtype) != tensor.dtype:
            raise tt_fatal("tt_input_dtype == input_tensor.dtype()",
                           "input dtype and input tensor's dtype provided should match",
                           where="device_sim/ops/core.py")
        dtype = output_dtype
    return _typecast(op_name, tensor, dtype, memory_config, tt_nn_only)


@register_op("ttnn.experimental.typecast", kind="move", golden=_typecast_golden)
def experimental_typecast(tensor: Tensor, dtype: DataType, *, memory_config: MemoryConfig | None = None,
                          op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """TT-NN's older typecast (ttnn::experimental::typecast): the same conversion, recorded under its own name.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.experimental.typecast(x, ttnn.bfloat16).dtype
    DataType.BFLOAT16
    """
    return _typecast(op_name, tensor, dtype, memory_config, tt_nn_only)


@register_op("ttnn.clone", kind="move", golden=lambda t, *_, **__: t.clone())
def clone(tensor: Tensor, *, memory_config: MemoryConfig | None = None, dtype: DataType | None = None,
          op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """A copy in a new buffer, in another memory config or dtype if given.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> y = ttnn.clone(x, memory_config=ttnn.L1)
    >>> y.to_torch(), y.memory_config().buffer_type
    (tensor([[0., 1., 2.],
            [3., 4., 5.]]), BufferType.L1)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, tensor)
    out = output(held(tensor), tensor, ins, op_name=op_name, dtype=dtype, memory_config=memory_config)
    if tensor.device() is not None and not tensor.is_sharded() and out.layout == tensor.layout:
        device_work.launch_after(out, True, tensor, programs.copy_program(tensor, out.dtype))
    return out


def _reshape_golden(t, shape, padded_shape=None, *_, **__):
    if padded_shape is None and isinstance(shape, Shape):  # reshape's ttnn::Shape overload (its comment below)
        padded_shape = tuple(shape[:-2]) + tuple(-(-int(n) // 32) * 32 for n in tuple(shape)[-2:])
    shape = tuple(int(s) for s in shape)
    if padded_shape is not None and math.prod(shape) != t.numel() and -1 not in shape:  # rows into tile padding
        have = tuple(t.shape[:-2]) + tuple(-(-n // 32) * 32 for n in t.shape[-2:])
        return views.through_padding(t, have, tuple(int(s) for s in padded_shape), shape)
    return t.reshape(shape)


def _reshape_into_padding(t: Tensor, shape, padded_shape, memory_config):
    """reshape(t, shape, padded_shape) where the logical volumes differ: rows move into (or out of) the tile
    padding, e.g. [1, 1, 32, N] to (1, 1, 1, N) padded (1, 1, 32, N), keeping row 0. TT-NN's reshape.cpp makes
    this a view ("This case has been allowed in the past though it means introducing padding values"): for a
    host tensor always, for a device TILE tensor when the padded shape is whole tiles and keeps the padded last
    dim. None when that does not apply (the caller raises TT-NN's volume error)."""
    if padded_shape is None or len(shape) < 2 or t.layout != Layout.TILE:
        return None
    padded_shape = tuple(int(s) for s in padded_shape)
    th, tw = t.tile.tile_shape if t.tile is not None else (dtypes.TILE_HEIGHT, dtypes.TILE_WIDTH)
    have = tuple(t.padded_shape)
    if (len(padded_shape) != len(shape) or any(p < s for p, s in zip(padded_shape, shape))
            or padded_shape[-2] % th or padded_shape[-1] % tw or padded_shape[-1] != have[-1]
            or math.prod(padded_shape) != math.prod(have)):
        return None
    cfg = memory_config if memory_config is not None else t._memory_config
    if t.device() is not None and (cfg is not None and (cfg.is_sharded() != t._memory_config.is_sharded()
                                                       or cfg.buffer_type != t._memory_config.buffer_type)):
        return None
    value = views.through_padding(held(t), have, padded_shape, shape)
    if t.buffer is None:  # a host tensor: a new tensor with the values
        return output(value, t, [], op_name="ttnn.reshape")
    return make_view(t, value)


class TileReshapeMapMode(enum.IntEnum):
    """reshape's reshape_tile_mode= (reshape_view/reshape.hpp): CACHE keeps the TILE reshape's mapping tensor,
    RECREATE rebuilds it each call. The values come out the same either way."""

    CACHE = 0
    RECREATE = 1


@register_op("ttnn.reshape", kind="move", golden=_reshape_golden)
def reshape(input_tensor: Tensor, shape, padded_shape=None, *, memory_config: MemoryConfig | None = None,
            reshape_tile_mode=None, skip_padding_fill: bool = False, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The same values in `shape` (one -1 allowed), as TT-NN's reshape(input_tensor, shape).

    The (logical_shape, padded_shape) form is accepted: `padded_shape` must hold the logical shape
    (same rank, no dim smaller). device_sim sizes the buffer from the logical shape's own tile
    padding, so a padded shape larger than that is not modelled. reshape_tile_mode and
    skip_padding_fill choose how TT-NN fills tile padding and change no value.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.reshape(x, (3, 2)).to_torch()
    tensor([[0., 1.],
            [2., 3.],
            [4., 5.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    v = held(input_tensor)
    if padded_shape is None and isinstance(shape, Shape) and input_tensor.layout == Layout.TILE:
        # reshape.cpp's ttnn::Shape overload passes the shape as its own padded shape (no volume check, unlike a
        # list's infer_dims_for_reshape): in tiles, rows within the tile padding, as the two-shape form
        padded_shape = tuple(shape[:-2]) + tuple(-(-int(n) // 32) * 32 for n in tuple(shape)[-2:])
    shape = tuple(int(s) for s in shape)
    try:
        r = v.reshape(shape)
    except RuntimeError:
        moved = _reshape_into_padding(input_tensor, shape, padded_shape, memory_config)
        if moved is not None:
            return moved
        # TT-NN's infer_dims_for_reshape (reshape_common.cpp): TT_FATAL, "Invalid arguments to reshape"; then
        # device_sim's line with the shapes.
        raise tt_fatal("new_volume == old_volume" if -1 not in shape else "old_volume % new_volume == 0",
                       f"Invalid arguments to reshape\n{op_name}: cannot reshape tensor {input_tensor.tensor_id} "
                       f"of shape {list(v.shape)} ({v.numel()} elements) to {list(shape)}",
                       where="device_sim/ops/core.py") from None
    if padded_shape is not None:
        ps = [int(s) for s in padded_shape]
        if len(ps) != r.dim() or any(p < s for p, s in zip(ps, r.shape)):
            raise ValueError(f"{op_name}: padded_shape {ps} must have the rank of the logical shape "
                             f"{list(r.shape)} and no dim smaller than it")
    # Where TT-NN's reshape is a view (device_sim.views.is_view) the result shares the input's buffer.
    view = reshaped(input_tensor, r.shape, memory_config)
    if view is not None:
        return view
    ins = device_inputs(op_name, input_tensor)
    out = output(r, input_tensor, ins, op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, True, input_tensor, shape_programs.reshape_program(input_tensor, out))  # a copy
    return out


def _permute_golden(t, dims, *_, **__):
    return t.permute(tuple(dims))


@register_op("ttnn.permute", kind="move", golden=_permute_golden)
def permute(input_tensor: Tensor, dims, *, memory_config: MemoryConfig | None = None,
            op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The dims reordered as `dims` says, as torch.permute.

    >>> x = ttnn.from_torch(torch.zeros(1, 2, 3, 4), layout=ttnn.TILE, device=device)
    >>> ttnn.permute(x, (0, 3, 1, 2)).shape
    Shape([1, 4, 2, 3])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    v = held(input_tensor)
    dims = tuple(int(d) for d in dims)
    if sorted(d % max(v.dim(), 1) for d in dims) != list(range(v.dim())):
        raise ValueError(
            f"{op_name}: {list(dims)} is not a permutation of the {v.dim()} dims of shape {list(v.shape)}"
        )
    ins = device_inputs(op_name, input_tensor)
    out = output(v.permute(dims).contiguous(), input_tensor, ins, op_name=op_name,
                 memory_config=memory_config)
    if input_tensor.device() is not None:  # permute.cpp's transposes or PermuteDeviceOperation (programs.shape)
        device_work.launch_after(out, True, input_tensor, shape_programs.permute_programs(input_tensor, out, dims))
    return out


def _transpose_golden(t, dim1, dim2, *_, **__):
    return t.transpose(dim1, dim2)


@register_op("ttnn.transpose", kind="move", golden=_transpose_golden)
def transpose(input_tensor: Tensor, dim1: int, dim2: int, *, memory_config: MemoryConfig | None = None,
              op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Swap dims `dim1` and `dim2` (TT-NN's names; torch calls them dim0, dim1).

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.transpose(x, 0, 1).to_torch()
    tensor([[0., 3.],
            [1., 4.],
            [2., 5.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    v = held(input_tensor)
    try:
        r = v.transpose(dim1, dim2)
    except IndexError:
        raise IndexError(f"{op_name}: dims {dim1} and {dim2} do not both fit shape {list(v.shape)} "
                         f"(rank {v.dim()})") from None
    if (input_tensor.device() is not None and input_tensor.layout == Layout.ROW_MAJOR
            and not input_tensor.is_sharded() and dim1 % v.dim() != dim2 % v.dim()
            and (v.shape[dim1], v.shape[dim2]) != (1, 1)):
        # transpose.cpp: an interleaved ROW_MAJOR tensor's transpose is a permute (prim::permute for HC, CN and
        # WH, ttnn::permute for the others), recorded nested with its dims, as TT-NN's graph shows it
        dims = list(range(v.dim()))
        dims[dim1], dims[dim2] = dims[dim2], dims[dim1]
        return permute(input_tensor, dims, memory_config=memory_config)
    ins = device_inputs(op_name, input_tensor)
    out = output(r.contiguous(), input_tensor, ins, op_name=op_name, memory_config=memory_config)
    if (input_tensor.device() is not None and input_tensor.layout == Layout.TILE and not input_tensor.is_sharded()
            and v.dim() >= 2):
        swapped = {dim1 % v.dim(), dim2 % v.dim()}
        if swapped == {v.dim() - 2, v.dim() - 1}:  # WH, the case models transpose most
            device_work.launch_after(out, True, input_tensor, programs.transpose_wh_program(input_tensor, out.dtype))
        elif v.dim() == 4 and swapped == {1, 2} and not out.is_sharded():  # HC
            device_work.launch_after(out, True, input_tensor, programs.transpose_hc_program(input_tensor, out))
        elif v.dim() == 4 and swapped == {0, 1} and not out.is_sharded():  # CN
            device_work.launch_after(out, True, input_tensor, shape_programs.transpose_cn_program(input_tensor))
        elif v.dim() == 3 and swapped == {0, 1} and not out.is_sharded():  # HC of the 4-D view
            device_work.launch_after(out, True, input_tensor, shape_programs.transpose_hc_shape_program(
                input_tensor.device(), [1, *v.shape], input_tensor.dtype))
    return out


def _slice_args(shape, starts, ends, slice_step, steps, slice_start, slice_end) -> list:
    """One python slice per dim from any of TT-NN's three slice forms; an error names what is wrong."""
    given = [n for n, v in (("starts", starts), ("slice_start", slice_start)) if v is not None]
    if len(given) != 1 or (ends is None) == (slice_end is None) or (slice_step is not None and steps is not None):
        raise TypeError("ttnn.slice takes (input_tensor, starts, ends, slice_step=None) — or the keywords "
                        "slice_start=/slice_end=/slice_step= or starts=/ends=/steps= — once each")
    starts = starts if starts is not None else slice_start
    ends = ends if ends is not None else slice_end
    step = slice_step if slice_step is not None else steps
    rank = len(shape)
    step = [1] * rank if step is None else list(step)
    if not len(starts) == len(ends) == len(step) == rank:
        raise ValueError(f"ttnn.slice: starts {list(starts)}, ends {list(ends)} and steps {step} need one entry "
                         f"per dim of shape {list(shape)}")
    out = []
    for d, (b, e, s, n) in enumerate(zip(starts, ends, step, shape)):
        b, e, s = int(b) + n * (int(b) < 0), int(e) + n * (int(e) < 0), int(s)
        if not (0 <= b <= e <= n and s >= 1):
            raise ValueError(f"ttnn.slice: dim {d} of shape {list(shape)} cannot be sliced from {b} to {e} by "
                             f"step {s}; need 0 <= start <= end <= {n} and step >= 1")
        out.append(builtins.slice(b, e, s))
    return out


def _tensor_slice_args(shape, starts, ends, step, slice_dim, num_devices, on_device: bool) -> list:
    """Python slices for TT-NN's tensor-args slice: `starts`/`ends` are 1-D integer tensors (torch values here).

    TT-NN (slice.cpp) runs a TILE tensor with unit steps on the device: the output keeps the input's shape
    but for dim `slice_dim`, divided by `num_devices`, and each dim starts at its entry of `starts` (each
    device of a mesh reads its own); otherwise the two tensors are read back and it is an ordinary slice.
    """
    for name, t in (("start", starts), ("end", ends)):
        if t.dim() != 1:
            raise ValueError(f"ttnn.slice: the {name} tensor for slicing must be in 1D shape, but got {t.dim()}D "
                             f"(shape {list(t.shape)})")
    b, e = [int(x) for x in starts.tolist()], [int(x) for x in ends.tolist()]
    if not on_device:
        return _slice_args(shape, b, e, step, None, None, None)
    if slice_dim is None or num_devices is None:
        raise ValueError("ttnn.slice: slice_dim and num_devices must be provided for device-only tensor args slice "
                         "(a TILE input with unit steps); give slice_dim=<dim> and num_devices=<parts>")
    rank = len(shape)
    if not 0 <= int(slice_dim) < rank or int(num_devices) < 1 or shape[int(slice_dim)] % int(num_devices):
        raise ValueError(f"ttnn.slice: input dimension {slice_dim} of shape {list(shape)} must be evenly divisible "
                         f"by num_devices ({num_devices}), and slice_dim less than the rank ({rank})")
    if len(b) != rank:
        raise ValueError(f"ttnn.slice: the start tensor {b} needs one entry per dim of shape {list(shape)}")
    size = [n // int(num_devices) if d == int(slice_dim) else n for d, n in enumerate(shape)]
    out = []
    for d, (first, n, total) in enumerate(zip(b, size, shape)):
        if not 0 <= first <= total - n:
            raise ValueError(f"ttnn.slice: dim {d} of shape {list(shape)} cannot take {n} from start {first}")
        out.append(builtins.slice(first, first + n))
    return out


def _slice_golden(t, starts=None, ends=None, slice_step=None, *_, steps=None, slice_start=None, slice_end=None,
                  slice_dim=None, num_devices=None, **__):
    if isinstance(starts, torch.Tensor):
        on_device = slice_dim is not None and num_devices is not None  # the golden sees no layout: its keywords
        return t[tuple(_tensor_slice_args(t.shape, starts, ends, slice_step, slice_dim, num_devices, on_device))]
    return t[tuple(_slice_args(t.shape, starts, ends, slice_step, steps, slice_start, slice_end))]


@register_op("ttnn.slice", kind="move", golden=_slice_golden)
def slice(input_tensor: Tensor, starts=None, ends=None, slice_step=None, *,  # noqa: A001
          memory_config: MemoryConfig | None = None, steps=None, slice_start=None, slice_end=None,
          slice_dim: int | None = None, num_devices: int | None = None,
          op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """input_tensor[starts[i]:ends[i]:step[i] for each dim]; the rank stays.

    TT-NN's forms all work: `slice(t, starts, ends[, slice_step])`, `slice(t, slice_start=, slice_end=,
    slice_step=)` and `slice(t, starts=, ends=, steps=)`; ends are exclusive, negatives count from the end.
    `tensor[...]` (Tensor.__getitem__) is built on it. `starts` and `ends` may also be 1-D ttnn tensors
    (TT-NN's tensor-args form): a TILE input with unit steps then takes `slice_dim=` and `num_devices=`
    and keeps 1/num_devices of dim slice_dim from each start (_tensor_slice_args).

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.slice(x, [0, 1], [2, 3]).to_torch()
    tensor([[1., 2.],
            [4., 5.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    v = held(input_tensor)
    if isinstance(starts, Tensor) or isinstance(ends, Tensor):
        if not (isinstance(starts, Tensor) and isinstance(ends, Tensor)) or steps is not None:
            raise TypeError(f"{op_name}: the tensor-args form takes starts and ends both as ttnn tensors, and "
                            "slice_step= (not steps=)")
        if input_tensor.device() is None:
            raise ValueError(f"{op_name}: input tensor must be on device for tensor args slice; "
                             "move it with ttnn.to_device(tensor, device)")
        unit = slice_step is None or all(int(s) == 1 for s in slice_step)
        on_device = input_tensor.layout == Layout.TILE and unit
        index = _tensor_slice_args(v.shape, values(starts), values(ends), slice_step, slice_dim, num_devices,
                                   on_device)
    elif slice_dim is not None or num_devices is not None:
        raise TypeError(f"{op_name}: slice_dim= and num_devices= belong to the form whose starts and ends are "
                        "ttnn tensors; with lists, give starts, ends (and slice_step) only")
    else:
        index = _slice_args(v.shape, starts, ends, slice_step, steps, slice_start, slice_end)
    ins = device_inputs(op_name, input_tensor)
    out = output(v[tuple(index)].contiguous(), input_tensor, ins, op_name=op_name, memory_config=memory_config)
    if out.logical_volume() == 0:  # slice.cpp returns ttnn::empty for an empty result: no slice program runs
        return out
    # TT-NN's tile factory takes a step-1 slice whose last two dims start and end on tile edges (or at the end)
    aligned = all(i.step == 1 for i in index) and all(
        i.start % 32 == 0 and (i.stop % 32 == 0 or i.stop == n) for i, n in zip(index[-2:], v.shape[-2:]))
    if input_tensor.device() is not None and input_tensor.layout == Layout.TILE and not input_tensor.is_sharded() \
            and not out.is_sharded() and aligned and v.dim() >= 2:
        device_work.launch_after(out, True, input_tensor, programs.slice_program(input_tensor, out))
    elif input_tensor.device() is not None and v.dim() >= 2 and not isinstance(starts, Tensor):
        # strided, unaligned or ROW_MAJOR: the row-major factories (a TILE input goes through ROW_MAJOR and back)
        device_work.launch_after(out, True, input_tensor, shape_programs.slice_programs(input_tensor, out, index))
    return out


def _padded_slice_golden(t, padded_slice_start, padded_slice_end, padded_slice_step=None, *_, memory_config=None,
                         **__):
    """padded_slice_device_operation.cpp's compute_output_specs: the 4D slice flattened to [1, 1, N*H*W, C]; a
    HEIGHT_SHARDED output's width is its shard width (channels past the slice's are zeros, as the padded writer
    leaves them), a WIDTH_SHARDED output's height its shard height."""
    index = _slice_args(t.shape, padded_slice_start, padded_slice_end, padded_slice_step, None, None, None)
    x = t[tuple(index)]
    y = x.reshape(1, 1, -1, x.shape[-1])
    layout = memory_config.memory_layout if memory_config is not None else None
    spec = memory_config.shard_spec if memory_config is not None else None
    if layout == TensorMemoryLayout.HEIGHT_SHARDED and spec is not None:
        y = torch.nn.functional.pad(y, (0, spec.shape[1] - y.shape[-1]))
    elif layout == TensorMemoryLayout.WIDTH_SHARDED and spec is not None:
        y = torch.nn.functional.pad(y, (0, 0, 0, spec.shape[0] - y.shape[-2]))
    return y


@register_op("ttnn.experimental.padded_slice", kind="move", golden=_padded_slice_golden)
def padded_slice(input_tensor: Tensor, padded_slice_start, padded_slice_end, padded_slice_step=None, *,
                 memory_config: MemoryConfig, pad_value: float | None = None, op_name: str = OWN_NAME) -> Tensor:
    """A slice of a 4D [N, H, W, C] tensor as conv2d's DRAM slicing takes it: flattened to [1, 1, N*H*W, C] in
    ROW_MAJOR (bfloat8_b comes out bfloat16), straight into the sharded `memory_config`, its channels padded with
    zeros to a height-sharded output's shard width (padded_slice.cpp: unit steps only, a sharded output, an
    interleaved input; TT-NN takes pad_value and ignores it). Its device program: the RM factory's (the tile
    factory, for a TILE input, is not modelled).

    >>> x = ttnn.from_torch(torch.arange(48.0).reshape(1, 4, 4, 3), device=device)
    >>> grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(1, 0))])
    >>> cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
    ...                         ttnn.ShardSpec(grid, (4, 8), ttnn.ShardOrientation.ROW_MAJOR))
    >>> y = ttnn.experimental.padded_slice(x, [0, 1, 0, 0], [1, 3, 4, 3], [1, 1, 1, 1], memory_config=cfg)
    >>> y.shape, y.to_torch()[0, 0, 0].tolist()
    (Shape([1, 1, 8, 8]), [12.0, 13.0, 14.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    """
    shape = list(input_tensor.shape)
    step = list(padded_slice_step) if padded_slice_step is not None else [1] * len(shape)
    checks = ((len(shape) == 4, "input_rank == 4", "Only 4D tensors are supported for padded_slice"),
              (all(int(s) == 1 for s in step), "no_step", "Steps != 1 are not supported for padded_slice."),
              (memory_config is not None and memory_config.is_sharded(), "memory_config.is_sharded()",
               "Output Memory Config must be sharded. Use slice for non-sharded outputs."),
              (not input_tensor.is_sharded(), "!input_tensor.memory_config().is_sharded()",
               "padded_slice does not support sharded inputs."))
    for ok, condition, message in checks:
        if not ok:
            raise tt_fatal(condition, f"{op_name}: {message}", "device_sim/ops/core.py")
    ins = device_inputs(op_name, input_tensor)
    y = _padded_slice_golden(held(input_tensor), padded_slice_start, padded_slice_end, step,
                             memory_config=memory_config)
    dtype = DataType.BFLOAT16 if input_tensor.dtype == DataType.BFLOAT8_B else input_tensor.dtype
    out = output(y.contiguous(), input_tensor, ins, op_name=op_name, dtype=dtype, layout=Layout.ROW_MAJOR,
                 memory_config=memory_config)
    device_work.launch_after(out, True, input_tensor, programs.padded_slice_program(input_tensor, out))
    return out


# mesh_aware: a mesh tensor frees every shard
@register_op("ttnn.deallocate", kind="free", traits={Trait.HOST}, no_golden="it returns nothing", mesh_aware=True)
def deallocate(tensor: Tensor, force: bool = True, *, op_name: str = OWN_NAME) -> None:
    """Free the tensor's device buffer now; using it afterwards is an error.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.deallocate(x)
    >>> x.is_allocated()
    False
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{op_name} takes a ttnn tensor, got {type(tensor).__name__}")
    if not force and views.SHARED and views.others(tensor):
        views.let_go(tensor)  # TT-NN frees a shared buffer only when forced; this tensor drops its hold
        return
    tensor._free()
