"""Making tensors from nothing (zeros, full, arange, rand, *_like) and moving data between them.

Creation ops take dtype=, layout=, device=, memory_config= as TT-NN's do: with no device the
tensor stays on the host; the *_like ops default each of those to the input tensor's.
"""

from __future__ import annotations

import math

import torch

from device_sim import device_work, dtypes, placement
from device_sim.ops.common import check_tt_nn_only, device_inputs, held, output, values
from device_sim.ops.data_movement import untilize
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import creation as creation_programs
from device_sim.programs import data_movement as data_movement_programs
from device_sim.programs import eltwise as eltwise_programs
from device_sim.programs import repeat as repeat_programs
from device_sim.programs import shape as shape_programs
from device_sim.registry import OWN_NAME, Trait, pending_output_target, register_op
from device_sim.tensor import Tensor
from device_sim.types import DRAM_MEMORY_CONFIG, DataType, Layout, MemoryConfig


def _torch_dtype(dtype) -> torch.dtype:
    return dtypes.TORCH_DTYPE[DataType(dtype) if dtype is not None else DataType.BFLOAT16]


def _new(value: torch.Tensor, op_name: str, dtype, layout, device, memory_config, inputs=()) -> Tensor:
    """A tensor over `value` made by a creation op (no input to take dtype, layout or device from)."""
    dtype = DataType(dtype) if dtype is not None else DataType.BFLOAT16
    layout = Layout(layout) if layout is not None else Layout.ROW_MAJOR
    dtypes.check_layout(dtype, layout)
    cfg, source = (placement.resolve(memory_config, [t for t in inputs if t.device() is device], op_name)
                   if device is not None else (None, None))
    return Tensor._create(dtypes.to_device_values(value, dtype), dtype, layout, device, cfg, source)


def _shape(shape) -> tuple[int, ...]:
    return tuple(int(s) for s in shape)


# -- from nothing ------------------------------------------------------------------------------
# Positional order as in TT-NN: (shape, [fill_value,] dtype, layout, device, memory_config).

def _full_golden(shape, fill_value, dtype=None, *_, **__):
    return torch.full(_shape(shape), float(fill_value), dtype=_torch_dtype(dtype))


@register_op("ttnn.full", traits={Trait.HOST}, golden=_full_golden)
def full(shape, fill_value: float, dtype: DataType | None = None, layout: Layout | None = None, device=None,
         memory_config: MemoryConfig | None = None, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """A tensor of `shape` filled with `fill_value`.

    >>> ttnn.full((2, 3), 7.0, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device).to_torch()
    tensor([[7., 7., 7.],
            [7., 7., 7.]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    value = torch.full(_shape(shape), float(fill_value))
    return _new(value, op_name, dtype, layout, device, memory_config)


def _from_buffer_golden(buffer, shape, dtype, *_, **__):
    return torch.tensor(list(buffer), dtype=_torch_dtype(dtype)).reshape(_shape(shape))


@register_op("ttnn.from_buffer", traits={Trait.HOST}, golden=_from_buffer_golden)
def from_buffer(buffer, shape, dtype: DataType, device, layout: Layout | None = None,
                memory_config: MemoryConfig | None = None, *, op_name: str = OWN_NAME) -> Tensor:
    """A tensor of `shape` holding a flat list's values (creation.cpp's from_buffer: Tensor::from_vector of the list,
    in ROW_MAJOR unless `layout` says otherwise, written to `device`).

    >>> ttnn.from_buffer(buffer=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], dtype=ttnn.bfloat16,
    ...                  layout=ttnn.ROW_MAJOR_LAYOUT, device=device).to_torch()
    tensor([[1., 2., 3.],
            [4., 5., 6.]], dtype=torch.bfloat16)
    """
    dtype = DataType(dtype)
    if dtype.is_block_float:  # creation_nanobind.cpp's from_buffer_impl takes no block-float dtype (TT_THROW)
        raise RuntimeError(f"{op_name}: dtype {dtype!r} is not taken; give ttnn.bfloat16 or ttnn.float32, then "
                           f"ttnn.typecast the tensor")
    values = list(buffer)
    count = 1
    for s in _shape(shape):
        count *= s
    if len(values) != count:  # Tensor::from_vector's TT_FATAL
        raise RuntimeError(f"{op_name}: the buffer holds {len(values)} values but shape {list(shape)} takes {count}; "
                           f"give a buffer of {count} values")
    value = torch.tensor(values, dtype=torch.float64 if dtype.is_float else torch.int64).reshape(_shape(shape))
    return _new(value, op_name, dtype, layout, device, memory_config)


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_CONSTANT_EXAMPLE = """

    >>> t = {op}((2, 3), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> t.shape, t.padded_shape, torch.equal(t.to_torch(), {op}.golden_function((2, 3), ttnn.bfloat16))
    (Shape([2, 3]), Shape([32, 32]), True)
"""


def _constant(name: str, fill: float):
    # Made on the host and moved to the device, as TT-NN's creation ops are: no program (Trait.HOST).
    def golden(shape, dtype=None, *_, **__):
        return _full_golden(shape, fill, dtype)

    def op(shape, dtype: DataType | None = None, layout: Layout | None = None, device=None,
           memory_config: MemoryConfig | None = None, **tt_nn_only) -> Tensor:
        if tt_nn_only:
            check_tt_nn_only(f"ttnn.{name}", tt_nn_only)
        return _new(torch.full(_shape(shape), fill), f"ttnn.{name}", dtype, layout, device, memory_config)

    op.__doc__ = f"A tensor of `shape` filled with {fill:g}." + _CONSTANT_EXAMPLE.format(op=f"ttnn.{name}")
    return register_op(f"ttnn.{name}", traits={Trait.HOST}, golden=golden)(op)


zeros = _constant("zeros", 0.0)
ones = _constant("ones", 1.0)
# device_sim's empty tensors hold zeros, so that a report of the same script is the same every run.
empty = _constant("empty", 0.0)


def _arange_bounds(start, end, step):
    return (0, start, step) if end is None else (start, end, step)


def _arange_golden(start=0, end=None, step=1, dtype=None, *_, **__):
    return torch.arange(*_arange_bounds(start, end, step), dtype=torch.float32).to(_torch_dtype(dtype))


@register_op("ttnn.arange", traits={Trait.HOST}, golden=_arange_golden)
def arange(start=0, end=None, step=1, dtype: DataType | None = None, device=None, *, layout: Layout | None = None,
           memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """[start, end) by step, as a 1-D tensor; `arange(n)` counts from 0 as in torch.

    >>> ttnn.arange(0, 5, 1, device=device).to_torch()
    tensor([0., 1., 2., 3., 4.], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    value = torch.arange(*_arange_bounds(start, end, step), dtype=torch.float32)
    return _new(value, op_name, dtype, layout, device, memory_config)


def _uniform(shape, low: float, high: float, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed) if seed else None
    return torch.rand(_shape(shape), generator=generator) * (high - low) + low


# Random values have no golden: nothing else can draw the same numbers.
@register_op("ttnn.rand", no_golden="no golden can draw the same random numbers")
def rand(shape, *, dtype: DataType | None = None, layout: Layout | None = None, device=None,
         memory_config: MemoryConfig | None = None, low: float = 0.0, high: float = 1.0, seed: int = 0,
         op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Uniform values in [low, high): from `seed`, or with seed=0 from torch's global generator
    (so torch.manual_seed repeats them).

    >>> x = ttnn.rand((2, 3), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, seed=1)
    >>> x.shape, bool(((x.to_torch() >= 0) & (x.to_torch() < 1)).all())
    (Shape([2, 3]), True)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    out = _new(_uniform(shape, low, high, seed), op_name, dtype, layout, device, memory_config)
    device_work.launch_after(out, True, out, creation_programs.rand_program(out))  # RandDeviceOperation
    return out


@register_op("ttnn.randn", no_golden="no golden can draw the same random numbers")
def randn(shape, device, *, dtype: DataType = DataType.BFLOAT16, layout: Layout = Layout.TILE,
          memory_config: MemoryConfig | None = None, compute_kernel_config=None, seed: int | None = None,
          op_name: str = OWN_NAME) -> Tensor:
    """Standard normal values of `shape` on `device`, in DRAM unless `memory_config` says otherwise: from `seed`, or
    without one from torch's global generator. As randn.cpp: RandnDeviceOperation makes a TILE tensor (bfloat16 or
    float32), untilized afterwards for a ROW_MAJOR layout.

    >>> x = ttnn.randn((64, 64), device, seed=3)
    >>> x.shape, x.dtype, x.layout, abs(float(x.to_torch().float().mean())) < 0.3
    (Shape([64, 64]), DataType.BFLOAT16, Layout.TILE, True)
    """
    # nanobind converts each argument or raises TypeError: shape to ttnn.Shape (unsigned dims), the enums and
    # MemoryConfig only from themselves, device only from a device
    bound = ((isinstance(shape, (list, tuple)) and all(isinstance(n, int) and n >= 0 for n in shape), "shape"),
             (isinstance(dtype, DataType), "dtype"), (isinstance(layout, Layout), "layout"),
             (memory_config is None or isinstance(memory_config, MemoryConfig), "memory_config"),
             (hasattr(device, "compute_with_storage_grid_size"), "device"))
    for ok, name in bound:
        if not ok:
            raise TypeError(f"{op_name}(): incompatible function arguments: {name}={locals()[name]!r}")
    if DataType(dtype) not in (DataType.BFLOAT16, DataType.FLOAT32):
        raise tt_fatal("dtype == DataType::FLOAT32 || dtype == DataType::BFLOAT16",
                       f"{op_name}: Randn: Output tensor must be Float32 or Bfloat16, got {DataType(dtype).name}",
                       where="device_sim/ops/creation.py")
    generator = torch.Generator().manual_seed(seed) if seed is not None else None
    cfg = memory_config if memory_config is not None else DRAM_MEMORY_CONFIG
    out = _new(torch.randn(_shape(shape), generator=generator), op_name, dtype, Layout.TILE, device, cfg)
    device_work.launch_after(out, True, out, creation_programs.randn_program(out))
    if Layout(layout) == Layout.ROW_MAJOR:
        out = untilize(out, memory_config=cfg)
    return out


@register_op("ttnn.bernoulli", output_keyword="output", no_golden="no golden can draw the same random numbers")
def bernoulli(input: Tensor, seed: int = 0, *, dtype: DataType | None = None,  # noqa: A002 (TT-NN's name)
              memory_config: MemoryConfig | None = None, compute_kernel_config=None, op_name: str = OWN_NAME) -> Tensor:
    """1 with probability input, else 0, in a TILE tensor of `dtype` (float32 unless given) and the input's memory
    config; from `seed`, or with seed=0 from torch's global generator. `output=` draws into a tensor. As
    BernoulliDeviceOperation checks: a TILE bfloat16 / float32 input on a device (and such an output, of the same
    volume).

    >>> p = ttnn.from_torch(torch.tensor([[0.0, 1.0, 0.0, 1.0]]), layout=ttnn.TILE, device=device)
    >>> ttnn.bernoulli(p, 7).to_torch()
    tensor([[0., 1., 0., 1.]])
    """
    target = pending_output_target(op_name)
    for name, t in (("Input", input),) + ((("Output", target),) if target is not None else ()):
        for ok, what in ((isinstance(t, Tensor) and t.device() is not None, "need to be on device"),
                         (t.layout == Layout.TILE, "must be tilized"),
                         (t.dtype in (DataType.BFLOAT16, DataType.FLOAT32), "must be Float32 or Bfloat16")):
            if not ok:
                raise tt_fatal(what, f"{op_name}: Bernoulli: {name} tensor {what}", where="device_sim/ops/creation.py")
    if target is not None and target.shape.volume() != input.shape.volume():
        raise tt_fatal("input.logical_volume() == output.logical_volume()", f"{op_name}: Bernoulli: Output and input "
                       f"tensor shape must be equal ({list(target.shape)} vs {list(input.shape)})",
                       where="device_sim/ops/creation.py")
    generator = torch.Generator().manual_seed(seed) if seed else None
    ins = device_inputs(op_name, input)
    draws = torch.bernoulli(values(input).float().clamp(0, 1), generator=generator)
    out_dtype = target.dtype if target is not None else (dtype if dtype is not None else DataType.FLOAT32)
    out = output(draws, input, ins, op_name=op_name, dtype=out_dtype, layout=Layout.TILE,
                 memory_config=memory_config if memory_config is not None else input.memory_config())
    device_work.launch_after(out, True, input, creation_programs.bernoulli_program(input, out))
    return out


def _fill_rm_golden(N, C, H, W, hOnes, wOnes, any, val_hi=1.0, val_lo=0.0, *_, **__):  # noqa: N803, A002
    out = torch.full((N, C, H, W), float(val_lo))
    out[:, :, :hOnes, :wOnes] = float(val_hi)
    return out


@register_op("ttnn.fill_rm", golden=_fill_rm_golden)
def fill_rm(N: int, C: int, H: int, W: int, hOnes: int, wOnes: int, any: Tensor, val_hi: float,  # noqa: N803, A002
            val_lo: float, *, memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME) -> Tensor:
    """A new ROW_MAJOR [N, C, H, W] tensor of val_lo with val_hi in each [:hOnes, :wOnes] corner, on `any`'s device
    in its dtype (bfloat16) and memory config unless one is given: FillRMDeviceOperation on core (0, 0), with its
    TT_FATALs (positive dims, the fill inside the tensor, bfloat16, interleaved, W < 16384).

    >>> t = ttnn.from_torch(torch.zeros(1, 1, 32, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.fill_rm(1, 1, 2, 3, 1, 2, t, 5.0, 0.5).to_torch()[0, 0]
    tensor([[5.0000, 5.0000, 0.5000],
            [0.5000, 0.5000, 0.5000]], dtype=torch.bfloat16)
    """
    return _fill_rm(op_name, N, C, H, W, hOnes, wOnes, any, val_hi, val_lo, memory_config)


def _fill_rm(op_name: str, N, C, H, W, hOnes, wOnes, any: Tensor, val_hi, val_lo, memory_config) -> Tensor:  # noqa: N803, A002
    """prim::fill_rm, which fill_rm and fill_ones_rm call (fill_rm.cpp)."""
    cfg = memory_config if memory_config is not None else any.memory_config()
    for ok, condition, message in (
            (min(N, C, H, W) > 0, "N > 0 && C > 0 && H > 0 && W > 0",
             f"All dimensions must be positive: N={N}, C={C}, H={H}, W={W}"),
            (hOnes <= H and wOnes <= W, "hFill <= H && wFill <= W",
             f"Fill dimensions must be <= tensor dimensions: hFill={hOnes} <= H={H}, wFill={wOnes} <= W={W}"),
            (any.dtype == DataType.BFLOAT16, "dtype == BFLOAT16",
             f"Input tensor dtype must be BFLOAT16 but got {any.dtype.name}"),
            (not any.memory_config().is_sharded() and not cfg.is_sharded(), "INTERLEAVED",
             "FillRM does not currently support sharding"),
            (W < 1024 * 16, "W < 1024 * num_cb_tiles", f"Width (W) must be less than 16384 for kernel "
                                                       f"simplification. Got W={W}, num_cb_tiles=16")):
        if not ok:
            raise tt_fatal(condition, f"{op_name}: {message}", where="device_sim/ops/creation.py")
    ins = device_inputs(op_name, any)
    out = output(_fill_rm_golden(N, C, H, W, hOnes, wOnes, None, val_hi, val_lo), any, ins, op_name=op_name,
                 layout=Layout.ROW_MAJOR, memory_config=cfg)
    device_work.launch_after(out, True, any, creation_programs.fill_rm_program(out))
    return out


def _fill_ones_rm_golden(N, C, H, W, hOnes, wOnes, any, *_, **__):  # noqa: N803, A002
    return _fill_rm_golden(N, C, H, W, hOnes, wOnes, any)


@register_op("ttnn.fill_ones_rm", golden=_fill_ones_rm_golden)
def fill_ones_rm(N: int, C: int, H: int, W: int, hOnes: int, wOnes: int, any: Tensor, *,  # noqa: N803, A002
                 memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME) -> Tensor:
    """fill_rm with val_hi 1 and val_lo 0 (fill_rm.cpp's fill_ones_rm).

    >>> t = ttnn.from_torch(torch.zeros(1, 1, 32, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.fill_ones_rm(1, 1, 2, 2, 1, 1, t).to_torch()[0, 0]
    tensor([[1., 0.],
            [0., 0.]], dtype=torch.bfloat16)
    """
    return _fill_rm(op_name, N, C, H, W, hOnes, wOnes, any, 1.0, 0.0, memory_config)


@register_op("ttnn.uniform", no_golden="no golden can draw the same random numbers")
def uniform(input: Tensor, from_: float = 0.0, to: float = 1.0, seed: int = 0, *,  # noqa: A002 (TT-NN's name)
            memory_config: MemoryConfig | None = None, compute_kernel_config=None, op_name: str = OWN_NAME,
            **tt_nn_only) -> Tensor:
    """Fills `input` in place with values uniform in [from, to) and returns it (TT-NN names the bounds `from` and
    `to`: give `from` by position or as from_=). From `seed`, or with seed=0 from torch's global generator. As
    TT-NN's writer kernel (uniform/device/kernels/writer_uniform.cpp), a bfloat16 tensor keeps each float32 draw's
    upper 16 bits: truncated, so no draw rounds up to `to`.

    >>> x = ttnn.from_torch(torch.zeros(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> y = ttnn.uniform(x, 2.0, 3.0, 7)
    >>> y is x, bool(((x.to_torch() >= 2) & (x.to_torch() < 3)).all())
    (True, True)
    """
    from_ = tt_nn_only.pop("from", from_)
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if not isinstance(input, Tensor) or input.device() is None:
        raise RuntimeError(f"{op_name}: Uniform: Input tensor needs to be on device")
    if input.layout != Layout.TILE:
        raise RuntimeError(f"{op_name}: Uniform: Input tensor must be tilized")
    if input.dtype not in (DataType.BFLOAT16, DataType.FLOAT32):
        raise RuntimeError(f"{op_name}: Uniform: Input tensor must be Float32 or Bfloat16")
    if not from_ < to:
        raise RuntimeError(f"{op_name}: Uniform: from param must be < to (got from={from_}, to={to})")
    v = _uniform(tuple(input.shape), float(from_), float(to), seed)
    if input.dtype == DataType.BFLOAT16:
        v = (v.view(torch.int32) & -65536).view(torch.float32)  # the upper 16 bits: bfloat16, truncated
    input._write(v)
    device_work.launch_after(input, False, input, creation_programs.uniform_program(input))
    return input


# -- like another tensor ---------------------------------------------------------------------
# dtype, layout, device and memory config default to the input's (the memory rules' "inputs").

def _like(op_name: str, input_tensor: Tensor, value: torch.Tensor, dtype, layout, device, memory_config, *,
          fills: bool = True) -> Tensor:
    ins = device_inputs(op_name, input_tensor)
    # DataType.BFLOAT16 and Layout.ROW_MAJOR are 0, so `or` would drop them: compare with None.
    dtype = dtype if dtype is not None else input_tensor.dtype
    layout = layout if layout is not None else input_tensor.layout
    device = device if device is not None else input_tensor.device()
    out = _new(value, op_name, dtype, layout, device, memory_config, ins)
    # TT-NN's full_like_impl: a TILE device tensor to a TILE bfloat8_b / bfloat16 / float32 result runs ttnn::fill
    # (one UnaryDeviceOperation); otherwise the values are made on the host and written (no program)
    if fills and input_tensor.device() is not None and input_tensor.device() is device and input_tensor.layout == \
            Layout.TILE and out.layout == Layout.TILE and out.dtype in _FILL_DTYPES:
        device_work.launch_for(out, True, device, eltwise_programs.unary_program(input_tensor, out.dtype))
    return out


_FILL_DTYPES = frozenset({DataType.BFLOAT8_B, DataType.BFLOAT16, DataType.FLOAT32})


def _full_like_golden(t, fill_value, dtype=None, *_, **__):
    return torch.full(t.shape, float(fill_value), dtype=_torch_dtype(dtype) if dtype is not None else t.dtype)


@register_op("ttnn.full_like", golden=_full_like_golden)
def full_like(tensor: Tensor, fill_value: float, dtype: DataType | None = None, layout: Layout | None = None,
              device=None, memory_config: MemoryConfig | None = None,
              *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    # TT-NN names the template `tensor` in full_like, zeros_like, ones_like and empty_like (creation_nanobind).
    """A tensor shaped like `tensor`, filled with `fill_value`.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.full_like(x, 2.0).to_torch()
    tensor([[2., 2., 2.],
            [2., 2., 2.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    value = torch.full(tuple(tensor.shape), float(fill_value))
    return _like(op_name, tensor, value, dtype, layout, device, memory_config)


def _fill_golden(t, fill_value, *_, **__):
    if t.dtype.is_floating_point:
        return torch.full(t.shape, float(fill_value), dtype=t.dtype)
    # an integer tensor takes the value truncated and wrapped to its bits (-29 in uint32 is 2**32 - 29), as TT-NN's
    # golden, torch.full_like, gives under tt-metal's torch (2.7); this torch refuses the overflow instead
    return torch.full(t.shape, math.trunc(float(fill_value)), dtype=torch.int64).to(t.dtype)


@register_op("ttnn.fill", output_keyword="output_tensor", golden=_fill_golden)
def fill(input_tensor: Tensor, fill_value: float, *, memory_config: MemoryConfig | None = None,
         op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """A tensor like `input_tensor` (shape, dtype, layout, device) holding `fill_value` everywhere.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.fill(x, 3.0).to_torch()
    tensor([[3., 3., 3.],
            [3., 3., 3.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    fresh = pending_output_target(op_name) is None
    # An integer tensor takes the value whole, truncated, its bits wrapped to the dtype (the golden's): float32 would
    # round uint32's 4294967293 up to 2**32 (test_fill.py), a float's clamp would make -29 in uint32 0, not 2**32 - 29
    value = torch.full(tuple(input_tensor.shape), float(fill_value)) if input_tensor.dtype.is_float else \
        torch.full(tuple(input_tensor.shape), math.trunc(float(fill_value)), dtype=torch.int64)
    out = output(value, input_tensor, ins, op_name=op_name, memory_config=memory_config)
    if input_tensor.device() is not None and input_tensor.layout == Layout.TILE:  # TT-NN's FILL unary op type
        program = eltwise_programs.unary_program(input_tensor, out.dtype)
        device_work.launch_for(out, fresh, input_tensor.device(), program)
    return out


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_CONSTANT_LIKE_EXAMPLE = """

    >>> x = ttnn.from_torch(torch.rand(2, 3), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> y = {op}(x)
    >>> y.shape, y.dtype, torch.equal(y.to_torch(), {op}.golden_function(x.to_torch()))
    (Shape([2, 3]), DataType.BFLOAT16, True)
"""


def _constant_like(name: str, fill: float, *, only_allocates: bool = False):
    # only_allocates: empty_like allocates its output (create_device_tensor) and launches no fill program.
    def golden(t, dtype=None, *_, **__):
        return _full_like_golden(t, fill, dtype)

    def op(tensor: Tensor, dtype: DataType | None = None, layout: Layout | None = None, device=None,
           memory_config: MemoryConfig | None = None, **tt_nn_only) -> Tensor:
        if tt_nn_only:
            check_tt_nn_only(f"ttnn.{name}", tt_nn_only)
        value = torch.full(tuple(tensor.shape), fill)
        return _like(f"ttnn.{name}", tensor, value, dtype, layout, device, memory_config, fills=not only_allocates)

    op.__doc__ = (f"A tensor shaped like `tensor`, filled with {fill:g}."
                  + _CONSTANT_LIKE_EXAMPLE.format(op=f"ttnn.{name}"))
    return register_op(f"ttnn.{name}", traits={Trait.HOST} if only_allocates else (), golden=golden)(op)


zeros_like = _constant_like("zeros_like", 0.0)
ones_like = _constant_like("ones_like", 1.0)
empty_like = _constant_like("empty_like", 0.0, only_allocates=True)


@register_op("ttnn.rand_like", no_golden="no golden can draw the same random numbers")
def rand_like(input_tensor: Tensor, *, dtype: DataType | None = None, layout: Layout | None = None, device=None,
              memory_config: MemoryConfig | None = None, low: float = 0.0, high: float = 1.0, seed: int = 0,
              op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """A tensor shaped like `input_tensor` of uniform random values in [low, high), drawn from `seed`.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> y = ttnn.rand_like(x, seed=1)
    >>> y.shape, bool(((y.to_torch() >= 0) & (y.to_torch() < 1)).all())
    (Shape([2, 3]), True)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    value = _uniform(input_tensor.shape, low, high, seed)
    out = _like(op_name, input_tensor, value, dtype, layout, device, memory_config, fills=False)
    device_work.launch_after(out, True, out, creation_programs.rand_program(out))  # as ttnn.rand of its shape
    return out


# -- movement --------------------------------------------------------------------------------

def _concat_golden(tensors, dim=0, groups=1, *_, **__):
    # groups third, as TT-NN's golden takes it (data_movement.py): test_concat.py calls golden_function(ts, dim, groups)
    if groups == 1:
        return torch.cat(list(tensors), dim)
    parts = [torch.tensor_split(t, groups, dim) for t in tensors]
    if any(t.shape[dim] % groups for t in tensors):
        raise ValueError(f"ttnn.concat: each input's dim {dim} must divide into groups={groups}, got shapes "
                         f"{[list(t.shape) for t in tensors]}")
    return torch.cat([p[g] for g in range(groups) for p in parts], dim)


@register_op("ttnn.concat", kind="move", golden=_concat_golden)
def concat(tensors, dim: int = 0, *, memory_config: MemoryConfig | None = None, groups: int = 1,
           op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Join tensors along `dim`. groups=g splits each input into g parts along `dim` and interleaves them
    (a0 b0 a1 b1 ... for two inputs), as TT-NN recombines grouped-convolution outputs.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.concat([x, x], dim=1).to_torch()
    tensor([[0., 1., 2., 0., 1., 2.],
            [3., 4., 5., 3., 4., 5.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{op_name} needs at least one tensor")
    ins = device_inputs(op_name, *tensors)
    vs = [held(t, op_name) for t in tensors]
    try:
        r = _concat_golden(vs, dim, groups=groups)
    except (RuntimeError, IndexError):
        shapes = [list(v.shape) for v in vs]
        rank = len(shapes[0])
        if all(len(sh) == rank for sh in shapes) and -rank <= dim < rank:
            # TT-NN's concat checks the other dims with TT_FATAL (a RuntimeError), in these words (its spelling).
            raise tt_fatal("shapes_match", f"All dimensions must be the same size except for the dimension along "
                           f"which the contenation is taking place.\n{op_name}: shapes {shapes} cannot be joined "
                           f"along dim {dim}; every other dim must match", where="device_sim/ops/creation.py") from None
        raise ValueError(f"{op_name}: shapes {shapes} cannot be joined along dim {dim}; every other dim must "
                         f"match and dim must be within the rank") from None
    out = output(r, tensors[0], ins, op_name=op_name, memory_config=memory_config)
    interleaved_tiles = all(t.layout == Layout.TILE and not t.is_sharded() for t in (*tensors, out))
    if out.device() is not None and interleaved_tiles:  # the interleaved factory; sharded concat is not modelled
        device_work.launch_after(out, True, out, data_movement_programs.concat_program(out))
    return out


def _split_golden(t, split_size, dim=0, *_, **__):
    return list(torch.split(t, split_size, dim))


@register_op("ttnn.split", golden=_split_golden)
def split(tensor: Tensor, split_size, dim: int = 0, *, memory_config: MemoryConfig | None = None,
          op_name: str = OWN_NAME, **tt_nn_only) -> list[Tensor]:
    """Pieces of `split_size` along `dim` (the last may be smaller), or of each size in a list.

    >>> x = ttnn.from_torch(torch.zeros(4, 64), layout=ttnn.TILE, device=device)
    >>> [t.shape for t in ttnn.split(x, 32, dim=1)]
    [Shape([4, 32]), Shape([4, 32])]
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, tensor)
    v = held(tensor)
    try:
        pieces = torch.split(v, split_size, dim)
    except (RuntimeError, IndexError):
        raise ValueError(
            f"{op_name}: cannot split shape {list(v.shape)} into {split_size} along dim {dim}; "
            f"a list of sizes must add up to that dim's size"
        ) from None
    outs = [output(p.contiguous(), tensor, ins, op_name=op_name, memory_config=memory_config) for p in pieces]
    for out, piece in zip(outs, shape_programs.split_programs(tensor, outs, dim, split_op=True) or ()):
        device_work.launch_after(out, True, tensor, piece)  # one slice per piece, as split.cpp runs them
    return outs


def _torch_padding(padding) -> list[int]:
    # TT-NN gives (before, after) per dim from the first padded dim; F.pad wants them from the last.
    return [int(p) for pair in reversed(list(padding)) for p in pair]


def _is_pairs(x) -> bool:
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(p, (list, tuple)) for p in x)


def _pad_form(args, padding, value, output_padded_shape, input_tensor_start):
    """(padding pairs or None, output_padded_shape, input_tensor_start, value) from TT-NN's two pad forms:
    pad(t, padding, value) and pad(t, output_padded_shape, input_tensor_start, value), positional or by keyword."""
    names = (("padding", "value") if args and _is_pairs(args[0]) or padding is not None
             else ("output_padded_shape", "input_tensor_start", "value"))
    given = {"padding": padding, "value": value, "output_padded_shape": output_padded_shape,
             "input_tensor_start": input_tensor_start}
    if len(args) > len(names):
        raise TypeError(f"ttnn.pad takes at most {len(names)} arguments after the tensor in the form "
                        f"({', '.join(names)}), got {len(args)}")
    for name, arg in zip(names, args):
        if given[name] is not None:
            raise TypeError(f"ttnn.pad got {name} both by position and by keyword")
        given[name] = arg
    return given["padding"], given["output_padded_shape"], given["input_tensor_start"], given["value"]


def _pad_golden(t, *args, padding=None, value=None, output_padded_shape=None, input_tensor_start=None, **__):
    padding, shape, start, value = _pad_form(args, padding, value, output_padded_shape, input_tensor_start)
    value = 0.0 if value is None else float(value)
    if padding is not None:
        return torch.nn.functional.pad(t, _torch_padding(padding), value=value)
    out = torch.full(tuple(int(s) for s in shape), value, dtype=t.dtype)
    out[tuple(slice(int(b), int(b) + n) for b, n in zip(start, t.shape))] = t
    return out


@register_op("ttnn.pad", kind="move", golden=_pad_golden)
def pad(input_tensor: Tensor, *args, padding=None, value: float | None = None, output_padded_shape=None,
        input_tensor_start=None, memory_config: MemoryConfig | None = None, use_multicore: bool = True,
        op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Pad with `value` (0 when not given), in either of TT-NN's two forms (its two overloads):

        ttnn.pad(t, padding, value)       padding: one (before, after) pair per dim, for the last len(padding) dims
        ttnn.pad(t, output_padded_shape, input_tensor_start, value)
                                          the output has output_padded_shape, the input sits at input_tensor_start

    Each argument may be given by position or by its name. use_multicore splits TT-NN's work and changes no value.

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), device=device)
    >>> ttnn.pad(x, [(0, 1), (0, 1)], value=9.0).to_torch()
    tensor([[0., 1., 2., 9.],
            [3., 4., 5., 9.],
            [9., 9., 9., 9.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
        if tt_nn_only.get("sub_core_grids") is not None and not use_multicore:  # pad_device_operation.cpp
            raise tt_fatal("operation_attributes.use_multicore", "ttnn.pad: sub_core_grids is only supported when "
                           "use_multicore is true", where="device_sim/ops/creation.py")
    v = values(input_tensor)
    pairs, shape, start, value = _pad_form(args, padding, value, output_padded_shape, input_tensor_start)
    if pairs is not None:
        pairs = [tuple(p) for p in pairs]
        if len(pairs) > v.dim() or any(len(p) != 2 or min(p) < 0 for p in pairs):
            raise ValueError(
                f"{op_name}: padding {pairs} must be at most {v.dim()} (before, after) pairs of "
                f"non-negative ints for shape {list(v.shape)}"
            )
    elif (shape is None or start is None or not len(shape) == len(start) == v.dim()
          or any(int(b) < 0 or int(b) + n > int(s) for s, b, n in zip(shape, start, v.shape))):
        raise ValueError(
            f"{op_name}: output_padded_shape {shape} and input_tensor_start {start} must give one entry per dim "
            f"of shape {list(v.shape)}, with the input fitting inside the output from its start"
        )
    ins = device_inputs(op_name, input_tensor)
    r = _pad_golden(v, padding=pairs, value=value, output_padded_shape=shape, input_tensor_start=start)
    out = output(r, input_tensor, ins, op_name=op_name, memory_config=memory_config)
    front = [int(p[0]) for p in pairs] if pairs is not None else [int(b) for b in start]
    # TT-NN's tiled pad pads only after the input in each dim; a front-padded TILE tensor is not modelled
    if input_tensor.layout != Layout.TILE or not any(front):
        device_work.launch_after(out, True, input_tensor, shape_programs.pad_program(
            input_tensor, out, front[-1]))  # the last pair (or start) is the last dim's
    return out


def _repeat_golden(t, repeat_dims, *_, **__):
    return t.repeat(_shape(repeat_dims))


@register_op("ttnn.repeat", kind="move", golden=_repeat_golden)
def repeat(input_tensor: Tensor, repeat_dims, *, memory_config: MemoryConfig | None = None,
           op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Tile the tensor `repeat_dims[i]` times along dim i (torch.Tensor.repeat).

    >>> x = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), layout=ttnn.TILE, device=device)
    >>> ttnn.repeat(x, (1, 2)).to_torch()
    tensor([[0., 1., 2., 0., 1., 2.],
            [3., 4., 5., 3., 4., 5.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    v = held(input_tensor)
    reps = _shape(repeat_dims)
    if len(reps) < v.dim():
        raise ValueError(
            f"{op_name}: repeat_dims {list(reps)} need one entry per dim of shape {list(v.shape)}"
        )
    ins = device_inputs(op_name, input_tensor)
    out = output(v.repeat(reps), input_tensor, ins, op_name=op_name, memory_config=memory_config)
    # RepeatDeviceOperation per repeated dim (tile-native, or through ROW_MAJOR: device_sim.programs.repeat)
    device_work.launch_after(out, True, input_tensor, repeat_programs.repeat_programs(input_tensor, reps, out))
    return out
