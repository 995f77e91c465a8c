"""The few primitives every op is built from: read inputs, check devices, make the output."""

from __future__ import annotations

import difflib
import functools
import inspect
import itertools

import torch

from device_sim import allocator, dtypes, placement, sharding, views
from device_sim.program_config_checks import tt_fatal
from device_sim.registry import OPS, output_target, pending_output_target
from device_sim.tensor import Tensor, _tensor_ids
from device_sim.tile import DEFAULT_TILE
from device_sim.types import DataType, Layout, MemoryConfig, TensorMemoryLayout

# TT-NN keywords that every op accepts and ignores. Each one tunes how real hardware runs the op
# (kernels, cores, queues, devices, tile padding), never the values or logical shape of the result,
# so a TT-NN script runs unchanged. Keywords that do change the result are left out: a binary op's
# activations= (ignoring it would be wrong), and output_tensor= / optional_output_tensor=, which the
# registry handles for the ops TT-NN takes them on (register_op's output_keyword).
TT_NN_ONLY = frozenset({
    "program_config", "compute_kernel_config", "core_grid",  # kernel choice and parallelism
    "sub_core_grids", "sub_device_id", "sub_device_ids", "global_cb", "use_multicore",  # which cores run it
    "queue_id", "cq_id", "blocking",  # command queues; device_sim runs every op synchronously
    "use_legacy",  # binary ops: legacy kernel or binary_ng (binary_nanobind: "use legacy implementation")
    "mesh_mapper", "mesh_composer",  # spreading over a mesh of devices; device_sim tensors live on one
    "tile", "output_tile", "pad_value",  # tile shape and the value in tile padding, outside the logical shape
    "numeric_stable",  # softmax; device_sim's float32 torch softmax is already the stable one
})
_INTERLEAVED = TensorMemoryLayout.INTERLEAVED
_TILE = Layout.TILE  # a module name: an enum member read through its class costs 0.06 us a time
# like_output's tensor is made in C on a device whose memory is the C one (allocator.NATIVE).
_NATIVE_MEMORY = getattr(allocator, "NativeDeviceMemory", None)
if _NATIVE_MEMORY is not None:
    allocator._native.configure_tensor(Tensor, DEFAULT_TILE, _TILE, _tensor_ids)
    if allocator.NATIVE:  # every op's output is dropped through it: Tensor._python_del's steps in C
        Tensor.__del__ = allocator._native.tensor_finalizer(views.SHARED, views.release)
_BF16, _F32 = DataType.BFLOAT16, DataType.FLOAT32
_TORCH_BF16, _TORCH_F32 = torch.bfloat16, torch.float32
_NOT_SIMULATED = {
    "output_tensor": "TT-NN's op takes no output tensor; drop it and use the returned tensor",
    "optional_output_tensor": "TT-NN's op takes no output tensor; drop it and use the returned tensor",
}


@functools.cache
def _parameter_names(op_name: str) -> tuple[str, ...]:
    # Only the error path needs these, so they are worked out on the first bad call, once per op.
    params = inspect.signature(OPS[op_name].function).parameters.values()
    # op_name is the registry's (register_op fills it in), not a keyword for callers
    return tuple(p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name != "op_name")


def check_tt_nn_only(op_name: str, kwargs: dict) -> None:
    """Raise TypeError for a keyword in `kwargs` (an op's **tt_nn_only) that TT_NN_ONLY does not name.

    Ops call it as `if tt_nn_only: check_tt_nn_only(...)`, so the usual call with no extra
    keywords costs one truthiness check.
    """
    if kwargs.keys() <= TT_NN_ONLY:
        return
    k = next(k for k in kwargs if k not in TT_NN_ONLY)
    head = f"{op_name}() got an unexpected keyword argument {k!r}"
    if k in _NOT_SIMULATED:
        raise TypeError(f"{head}: {_NOT_SIMULATED[k]}")
    names = _parameter_names(op_name)
    out_kw = OPS[op_name].output_keyword
    own = [*names, *([out_kw] if out_kw else [])]
    closest = difflib.get_close_matches(k, [*own, *sorted(TT_NN_ONLY)], n=1)
    if closest:
        raise TypeError(f"{head}; did you mean {closest[0]!r}?")
    # The op's own keywords only: the TT-NN tuning knobs every op ignores would bury them.
    raise TypeError(f"{head}; it takes {', '.join(own)}")


def device_inputs(op_name: str, *tensors) -> list[Tensor]:
    """The Tensor arguments of an op, checked to live on one device (or all on the host)."""
    ts = [t for t in tensors if isinstance(t, Tensor)]
    if len(ts) > 1:
        dev0 = ts[0].device()
        for t in ts[1:]:
            if t.device() is not dev0:
                where = lambda x: f"device {x.device().device_id}" if x.device() is not None else "the host"  # noqa: E731
                raise ValueError(
                    f"{op_name}: tensor {ts[0].tensor_id} is on {where(ts[0])} but tensor {t.tensor_id} is on "
                    f"{where(t)}; move both to one device with ttnn.to_device(tensor, device)"
                )
    return ts


def values(x, op_name: str = "op") -> torch.Tensor:
    """The float32 (or integer) torch values an op computes on."""
    if isinstance(x, Tensor):
        v = x._value_or_raise()
        return v.float() if v.is_floating_point() else v
    if isinstance(x, torch.Tensor):
        raise TypeError(f"{op_name}: got a torch.Tensor; convert it first with ttnn.from_torch(tensor, device=device)")
    return x


def held(x, op_name: str = "op"):
    """values() for an op that only moves, copies or picks values (reshape, permute, slice, concat, a memory
    move): a tensor's torch values in the torch dtype it holds them in, a bfloat16 tensor's still bfloat16.

    values() widens floats to float32 for the ops that compute on them; a move computes nothing, and output()
    takes a bfloat16 value for a bfloat16 output as it is, so the result is the same but for the two passes
    over the data (float32 out, bfloat16 back), which cost a [1, 1, 128, 768] reshape 55 of its 81 us.
    """
    if isinstance(x, Tensor):
        return x._value_or_raise()
    return values(x, op_name)


def four_d_input(op_name: str, tensor: Tensor, form: str, tt_nn_only: dict, *,
                 moved: bool = False) -> tuple[torch.Tensor, list[Tensor]]:
    """An op's one 4D input checked (`form` names its dims in the error: "[B, H, S, D]"): its values (held(), for
    an op that only `moved` them) and device inputs, after the op's keywords are checked."""
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    x = held(tensor, op_name) if moved else values(tensor, op_name)
    if x.dim() != 4:
        raise ValueError(f"{op_name}: input shape {list(x.shape)} must be {form}")
    return x, device_inputs(op_name, tensor)


def output(value: torch.Tensor, like: Tensor, inputs: list[Tensor], *, op_name: str,
           dtype: DataType | None = None, layout: Layout | None = None,
           memory_config: MemoryConfig | None = None) -> Tensor:
    """The op's output tensor: `value` rounded to the output dtype, placed by the memory rules.

    `like` supplies the defaults (dtype, layout, device, tile) — normally the first input. When the
    call gave an output_tensor= (registry.output_target), `value` is written into that tensor instead.
    """
    target = output_target(op_name)
    if target is not None:
        return _write_into(target, value, like, op_name)
    if (dtype is None or dtype is like.dtype) and layout is None:
        if memory_config is None:
            out = like_output(value, like, inputs)
            if out is not None:
                return out
        elif memory_config is like._memory_config or memory_config == like._memory_config:
            # `like`'s own config asked for (a model passes memory_config= on most calls): the tensor the
            # "inputs" rule gives, named as placement.resolve names an explicit config (4-6 us less an op)
            out = like_output(value, like, inputs)
            if out is not None:
                out.memory_config_source = "argument"
                return out
    dtype = DataType(dtype) if dtype is not None else like.dtype
    # An inherited layout gives way to a block-float dtype; an asked-for ROW_MAJOR one is an error later.
    inherited = Layout.TILE if dtype.is_block_float else like.layout
    layout = Layout(layout) if layout is not None else inherited
    # Here and in like_output, which build the op's output Tensor, its slots are read as Tensor's own code does.
    device = like._device
    cfg, source = (placement.resolve(memory_config, [t for t in inputs if t._device is not None], op_name)
                   if device is not None else (None, None))
    tile = like.tile if layout == Layout.TILE and like.layout == Layout.TILE else None
    if cfg is not None and cfg.shard_spec is None and cfg.is_sharded():  # L1_*_SHARDED_MEMORY_CONFIG: inputs' cores
        cfg = sharding.complete_from_inputs(cfg, value.shape, layout, inputs, tile.tile_shape if tile else (32, 32))
    return Tensor._create(dtypes.to_device_values(value, dtype), dtype, layout, device, cfg, source, tile)


def like_output(value: torch.Tensor, like: Tensor, inputs: list[Tensor]) -> Tensor | None:
    """output()'s usual case, in a few checks: an element-wise result with `like`'s spec (dtype, layout, tile,
    shape, interleaved memory config) placed by the "inputs" rule; None when it is not that case.

    For output() and for ops' fast paths that have checked that no output_tensor= is pending.
    """
    buf = like.buffer
    if (buf is None or not inputs or inputs[0] is not like or value.shape != like._value.shape
            or like._memory_config.memory_layout is not _INTERLEAVED or placement.inputs_config(inputs) is None
            or (views.SHARED and buf.buffer_id in views.SHARED)):  # a view's buffer may be sized for another shape
        return None
    device = like._device
    if not device.is_open:
        return None  # Tensor._create says so
    # bfloat16 or float32 values already in that torch dtype (a bfloat16 kernel's result) are what
    # to_device_values would return; every other dtype rounds (block floats) or clamps (integers) as ever.
    d, held = like.dtype, value.dtype
    if not ((d is _BF16 and held is _TORCH_BF16) or (d is _F32 and held is _TORCH_F32)):
        value = dtypes.to_device_values(value, d)
    # Built as Tensor._create would build it from like's spec, which passed _create's checks already; the
    # buffer is a copy of like's geometry, without the page arithmetic (allocator.allocate_like).
    memory = device.memory
    if type(memory) is _NATIVE_MEMORY:
        return memory.tensor_like(value, like)  # the lines below in C, one call (0.2 us less)
    t = object.__new__(Tensor)
    layout = like.layout
    t._value, t.dtype, t.layout, t.tile = value, d, layout, like.tile if layout == _TILE else DEFAULT_TILE
    t._device, t._memory_config, t.memory_config_source = device, like._memory_config, "inputs"
    t.buffer, t.tensor_id = None, next(_tensor_ids)  # next_tensor_id(), a call less
    t.buffer = memory.allocate_like(buf)
    return t


def output_dtype(op_name: str, dtype, like: Tensor) -> DataType:
    """The dtype op `op_name`'s result will have: its output_tensor's when it was given one, else `dtype`
    (None: `like`'s). An op whose math depends on it (a matmul accumulating in float32 for a float32
    output) asks this before computing, so writing into a float32 tensor computes as a float32 output."""
    target = pending_output_target(op_name)
    if target is not None:
        return target.dtype
    return DataType(dtype) if dtype is not None else like.dtype


def _write_into(target: Tensor, value: torch.Tensor, like: Tensor, op_name: str) -> Tensor:
    if target.device() is not like.device():
        where = lambda t: "the host" if t.device() is None else f"device {t.device().device_id}"  # noqa: E731
        raise ValueError(f"{op_name}: output_tensor {target.tensor_id} is on {where(target)} but the inputs are on "
                         f"{where(like)}; give an output tensor on the inputs' device")
    # The result takes the output tensor's dtype, as TT-NN's kernels write in the given buffer's format;
    # `dtype` (which ops pass resolved, so an explicit one cannot be told from the default) is not checked.
    try:
        target._write(value)
    except ValueError as e:
        raise ValueError(f"{op_name}: {e}") from None
    return target


def broadcasts(*shapes) -> bool:
    """Whether the shapes broadcast together (torch.broadcast_shapes imports sympy: ~0.7 s, then ~15 us a call)."""
    for dims in itertools.zip_longest(*(reversed(tuple(s)) for s in shapes), fillvalue=1):
        if len({d for d in dims if d != 1}) > 1:
            return False
    return True


def broadcast(op_name: str, fn, a: torch.Tensor, b):
    """fn(a, b), with a shape error that names both shapes (checked only on failure: it is the slow path)."""
    try:
        return fn(a, b)
    except RuntimeError:
        if isinstance(b, torch.Tensor) and not broadcasts(a.shape, b.shape):
            raise broadcast_error(op_name, a.shape, b.shape) from None
        raise


def broadcast_error(op_name: str, shape_a, shape_b) -> RuntimeError:
    """TT-NN's binary_ng check (TT_FATAL, a RuntimeError) for the first dim from the right that does not
    broadcast, in its words, then device_sim's line naming both shapes and the fix."""
    rank = max(len(shape_a), len(shape_b))
    for i in range(-1, -rank - 1, -1):
        dim_a = shape_a[i] if i >= -len(shape_a) else 1
        dim_b = shape_b[i] if i >= -len(shape_b) else 1
        if dim_a != dim_b and 1 not in (dim_a, dim_b):
            break
    return tt_fatal("a_dim == b_dim || a_dim == 1 || b_dim == 1",
                    f"Broadcasting rule violation for rank {i}, dim a: {dim_a}, dim b: {dim_b}\n{op_name}: shapes "
                    f"{list(shape_a)} and {list(shape_b)} do not broadcast; reshape one so that each dimension "
                    f"matches or is 1", where="device_sim/ops/common.py")


def check_output_shape(op_name: str, shape_a, shape_b, out: Tensor) -> None:
    """binary_ng's check of an interleaved output_tensor= (compute_output_specs), made before the inputs' own
    broadcast check as TT-NN makes it: its shape, right-aligned with leading 1s, is compute_broadcasted_output's,
    which takes a's dim where neither is 1 (so [5, 2, 64, 1] with [1, 3, 1, 128] is [5, 2, 64, 128])."""
    if out._memory_config is None or out._memory_config.shard_spec is not None:
        return
    rank = max(len(shape_a), len(shape_b))
    dims = [(shape_a[i] if i >= -len(shape_a) else 1, shape_b[i] if i >= -len(shape_b) else 1)
            for i in range(-rank, 0)]
    expected = [a if 1 not in (a, b) else a + b - 1 for a, b in dims]
    shape = list(out.shape)
    n = min(len(shape), rank)  # shapes_equal: the trailing dims, then the broadcast shape's extra ones are 1
    if shape[len(shape) - n:] != expected[rank - n:] or any(d != 1 for d in expected[:rank - n]):
        raise tt_fatal("shapes_equal(shape, output_shape)",
                       f"Shape of Output tensor Shape({shape}) provided does not match the broadcasted output shape "
                       f"Shape({expected})\n{op_name}: pass an output_tensor of shape {expected}, or none",
                       where="device_sim/ops/common.py")
