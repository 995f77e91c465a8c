"""Unary and binary element-wise ops, built from two primitives over a table of torch functions."""

from __future__ import annotations

import enum
import inspect
import time

import torch
import torch.nn.functional as F

from device_sim import activations as _activations
from device_sim import device_work, dtypes, numerics
from device_sim.complex_tensor import ComplexTensor
from device_sim.complex_tensor import overload as complex_overload
from device_sim.ops.common import (
    broadcast,
    check_output_shape,
    check_tt_nn_only,
    device_inputs,
    like_output,
    output,
    values,
)
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import eltwise as eltwise_programs
from device_sim.programs import indexing as indexing_programs
from device_sim.registry import OWN_NAME, TTNN, _writes, pending_output_target, register_op
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout, MemoryConfig, TensorMemoryLayout

_OUT = "output_tensor"  # every element-wise op takes it (TT-NN 0.81's unary and binary nanobind files)


def _unary_output(y: torch.Tensor, t: Tensor, ins: list, op_name: str, dtype, memory_config, *,
                  sub_core_grids=None) -> Tensor:
    """A unary op's output, then its UnaryDeviceOperation (a TILE tensor on a device: device_work)."""
    fresh = pending_output_target(op_name) is None  # a given output_tensor is the caller's, kept if the op fails
    out = output(y, t, ins, op_name=op_name, dtype=dtype, memory_config=memory_config)
    device = t.device()
    if device is not None and t.layout == Layout.TILE:
        if t._memory_config.shard_spec is None:
            # UnaryDeviceOperation::compute_program_hash reads the op chain and the memory configs beyond the CBs
            # (interleaved: their buffer types), and sub_core_grids (its cores not modelled): relu and sqrt, or a
            # DRAM and an L1 output, are two entries (tt-metal's test_unary_program_cache.py)
            # (the buffer types by their _value_: an int hashes in C, an enum member's __hash__ is Python's, 0.1 us)
            device_work.launch_for(out, fresh, device, eltwise_programs.unary_program(t, out.dtype), (
                op_name, t._memory_config.buffer_type._value_, out._memory_config.buffer_type._value_, sub_core_grids))
        else:  # TT-NN's sharded unary factory: the shards themselves are its CBs
            device_work.launch_after(out, fresh, t, eltwise_programs.sharded_unary_program(t, out))
    return out


def _binary_output(y: torch.Tensor, a: Tensor, b, ins: list, op_name: str, memory_config, dtype=None) -> Tensor:
    """A binary op's output in `a`'s layout, then its one interleaved BinaryDeviceOperation (a TILE `a` on a device;
    `b` a tensor or a number)."""
    fresh = pending_output_target(op_name) is None
    out = output(y, a, ins, op_name=op_name, dtype=dtype, memory_config=memory_config)
    device = a.device()
    if device is not None and a.layout == Layout.TILE:
        device_work.launch_for(out, fresh, device, eltwise_programs.binary_program(
            a, b.dtype if isinstance(b, Tensor) else None, out.dtype))
    return out


UNARY: dict = {}  # op name -> the torch function a unary op computes (_in_bfloat16 may run it on bfloat16)
# op name -> the torch function of a binary op with a plain() fast path. Its run() is plain()'s specification:
# tests/test_fast_paths.py holds each call plain() takes to run()'s output and device work; bench 13 (seams)
# gives what plain() saves (2.7-2.9x of a 32x32 bfloat16 add).
PLAIN: dict = {}


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_UNARY_EXAMPLE = """

    >>> x = ttnn.from_torch(torch.tensor([[0.25, 0.5, 0.75]]), layout=ttnn.TILE, device=device)
    >>> torch.allclose({op}(x).to_torch(), {op}.golden_function(x.to_torch()), equal_nan=True)
    True
"""


_INT_UNARY_EXAMPLE = """

    >>> x = ttnn.from_torch(torch.tensor([[0, 5, -7]], dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.TILE,
    ...                     device=device)
    >>> torch.equal({op}(x).to_torch(), {op}.golden_function(x.to_torch()))
    True
"""


def _truncated_bf16(y: torch.Tensor) -> torch.Tensor:
    """float32 values cut to bfloat16 by dropping the low 16 bits (rounding toward zero), as SFPSTORE does."""
    return (y.float().view(torch.int32) >> 16).to(torch.int16).view(torch.bfloat16)


def _unary(name: str, fn, *, truncated: bool = False):
    """Register ttnn.<name> computing `fn`; truncated: a 16-bit result is stored by SFPSTORE, which truncates the
    float32 value to bfloat16 instead of rounding it (hardmish_tile; TT-NN's golden models the same), so it stays out
    of UNARY, whose ops give the float32 result rounded (tests/test_fast_paths.py); so does an op whose `fn` is marked
    takes_integers (TT-NN binds it for INT32 only), which refuses a float input."""
    integers = getattr(fn, "takes_integers", False)
    if not truncated and not integers:
        UNARY[name] = fn

    def golden(x, *_, **__):
        y = fn(x)
        return _truncated_bf16(y) if truncated and x.dtype == torch.bfloat16 else y

    def op(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None, dtype: DataType | None = None,
           **tt_nn_only) -> Tensor:
        if tt_nn_only:
            check_tt_nn_only(f"ttnn.{name}", tt_nn_only)
        if type(input_tensor) is ComplexTensor:  # TT-NN's overload for one (abs, reciprocal)
            return complex_overload(f"ttnn.{name}")(input_tensor, memory_config)
        ins = device_inputs(f"ttnn.{name}", input_tensor)
        if integers and input_tensor.dtype not in (DataType.INT32, DataType.UINT32, DataType.UINT16):
            raise tt_fatal("input dtype is an integer type", f"ttnn.{name} takes an INT32 tensor, got "
                           f"{input_tensor.dtype!r}; convert it with ttnn.typecast(t, ttnn.int32)",
                           where="device_sim/ops/eltwise.py")
        y = None if truncated else _in_bfloat16(name, fn, input_tensor, dtype)
        if y is None:
            y = fn(values(input_tensor))
        if truncated and dtypes.TORCH_DTYPE[dtype or input_tensor.dtype] is torch.bfloat16:
            y = _truncated_bf16(y)
        return _unary_output(y, input_tensor, ins, f"ttnn.{name}", dtype, memory_config,
                             sub_core_grids=tt_nn_only.get("sub_core_grids"))

    example = _INT_UNARY_EXAMPLE if integers else _UNARY_EXAMPLE
    op.__doc__ = f"Element-wise {name}." + example.format(op=f"ttnn.{name}")
    return register_op(f"ttnn.{name}", output_keyword=_OUT, golden=golden)(op)


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_BINARY_EXAMPLE = """

    >>> a = ttnn.from_torch(torch.tensor([[0.25, 0.5, 0.75]]), layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.tensor([[2.0, 4.0, 8.0]]), layout=ttnn.TILE, device=device)
    >>> torch.allclose({op}(a, b).to_torch(), {op}.golden_function(a.to_torch(), b.to_torch()), equal_nan=True)
    True
"""
_INT_BINARY_EXAMPLE = """

    >>> a = ttnn.from_torch(torch.tensor([[12, 6, 5]]), dtype=ttnn.int32, layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.tensor([[8, 4, 3]]), dtype=ttnn.int32, layout=ttnn.TILE, device=device)
    >>> torch.equal({op}(a, b).to_torch(), {op}.golden_function(a.to_torch(), b.to_torch()))
    True
"""


def _binary(name: str, fn, *, result_dtype: DataType | None = None, rounding: bool = False, kind: str = "unary",
            aliases: tuple[str, ...] = (), approx=None, native_bf16: str | None = None, division: bool = False,
            nan16: float | None = None, golden_fn=None):
    """Register ttnn.<name>; `rounding`: it also takes TT-NN div's rounding_mode (None, "trunc" or "floor");
    `approx`: what fast_and_approximate_mode=True computes instead of `fn`; `native_bf16`: "tensors" (or
    "numbers" too) when torch's bfloat16 kernel of `fn` gives the float32 result rounded once (below);
    `division`: TT-NN's DIV, whose float32 operands take the SFPU's precise kernel under fast_and_approximate_mode
    too (binary_ng_device_operation.cpp's is_binary_sfpu_op); `nan16`: the infinity a NaN result is stored as in a
    16-bit output (_stored_nan); `golden_fn`: TT-NN's golden where it is not `fn` on the golden's inputs."""
    def golden(a, b, *rest, activations=None, input_tensor_a_activations=None, input_tensor_b_activations=None,
               rounding_mode=None, **__):
        if rounding and rest:  # TT-NN's div golden takes rounding_mode third, by position (test_binary_fp32.py)
            rounding_mode = rest[0]
        a, b = _pre(name, input_tensor_a_activations, a), _pre(name, input_tensor_b_activations, b)
        return _pre(name, activations, _rounded(name, (golden_fn or getattr(fn, "golden", fn))(a, b), rounding_mode))

    def run(input_tensor_a, input_tensor_b, memory_config, dtype, activations, input_tensor_a_activations,
            input_tensor_b_activations, fast_and_approximate_mode, rounding_mode, tt_nn_only) -> Tensor:
        op_name = f"ttnn.{name}"
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        if type(input_tensor_a) is ComplexTensor:  # TT-NN's overload for two (add, subtract, multiply, divide)
            return complex_overload(op_name)(input_tensor_a, input_tensor_b, memory_config)
        post = _activations.resolve_all(op_name, activations)
        # TT-NN takes a number on either side: ttnn.subtract(1.0, t) is 1 - t.
        like = input_tensor_a if isinstance(input_tensor_a, Tensor) else input_tensor_b
        if not isinstance(like, Tensor):
            raise TypeError(f"{op_name}: one of the first two arguments must be a ttnn tensor, got "
                            f"{type(input_tensor_a).__name__} and {type(input_tensor_b).__name__}")
        ins = device_inputs(op_name, input_tensor_a, input_tensor_b)
        fresh = pending_output_target(op_name) is None
        if not fresh and like is input_tensor_a:
            check_output_shape(op_name, input_tensor_a.shape,
                               input_tensor_b.shape if isinstance(input_tensor_b, Tensor) else (),
                               pending_output_target(op_name))
        a, b = values(input_tensor_a, op_name), values(input_tensor_b, op_name)
        # Fused activations run in the same kernel, on the inputs as read and on the result before its rounding; in a
        # 16-bit destination register each step is rounded before the next (_dst16)
        dst16 = _dst16(input_tensor_a, input_tensor_b, dtype if dtype is not None else result_dtype)
        if dst16 is not None and activations:
            post = _activations.resolve_all(op_name, activations, between=dst16)
        a = _pre(op_name, input_tensor_a_activations, a, dst16)
        b = _pre(op_name, input_tensor_b_activations, b, dst16)
        if like is input_tensor_b:
            a = torch.as_tensor(a, dtype=torch.float32)  # torch's binary functions want a tensor first
        # DataType.BFLOAT16 is 0, so `dtype or result_dtype` would drop an explicit bfloat16.
        dtype = dtype if dtype is not None else result_dtype
        if division and rounding_mode is None and _int32_division(input_tensor_a, input_tensor_b):
            # binary_ng_device_operation.cpp: "Integer division results in FP32 outputs" (DIV of INT32 by INT32 or a
            # number); binary_composite_op.cpp's div refuses another output dtype. trunc / floor stay INT32.
            if dtype not in (None, DataType.FLOAT32):
                raise tt_fatal("!output_dtype.has_value() || output_dtype == DataType::FLOAT32",
                               "Incorrect output_dtype value for Integer Division(rounding_mode=None) ; valid input "
                               "values are None or ttnn.float32", "device_sim/ops/eltwise.py")
            dtype = DataType.FLOAT32
        # fast_and_approximate_mode changes only the ops the SFPU approximates (divide: a * approximate 1/b).
        fast = fast_and_approximate_mode and not (division and _float32(input_tensor_a) and _float32(input_tensor_b))
        y = broadcast(op_name, (approx or fn) if fast else fn, a, b)
        y = _rounded(op_name, y, rounding_mode)
        if nan16 is not None:
            y = _stored_nan(y, dtype if dtype is not None else like.dtype, nan16)
        if post is not None:
            y = post(y.float() if dst16 is None else dst16(y.float()))
        out = output(y, like, ins, op_name=op_name, dtype=dtype, memory_config=memory_config)
        device = like.device()
        if device is not None and like.layout == Layout.TILE:
            other = input_tensor_b if like is input_tensor_a else input_tensor_a
            program = eltwise_programs.sharded_binary_program(  # operands sharded alike: the shards are the CBs
                like, other, out, lhs_activations=bool(input_tensor_a_activations),
                rhs_activations=bool(input_tensor_b_activations)) if like._memory_config.shard_spec else None
            key = None
            if program is None:
                program = eltwise_programs.binary_program(
                    like, other.dtype if isinstance(other, Tensor) else None, out.dtype,
                    lhs_activations=bool(input_tensor_a_activations),
                    rhs_activations=bool(input_tensor_b_activations))
                bcast = _subtile_broadcast(like._value.shape, other._value.shape) if type(other) is Tensor else None
                key = _ng_entry(op_name, like, other, out, bcast, tt_nn_only.get("sub_core_grids"),
                                bool(input_tensor_a_activations), bool(input_tensor_b_activations))
            device_work.launch_for(out, fresh, device, program, key)
        return out

    op_name = f"ttnn.{name}"
    native = native_bf16 is not None and result_dtype is None
    number_native = native and native_bf16 == "numbers"
    # plain()'s BinaryNg programs and program-cache entries by (a's dtype, b's or None, grid, the buffer types of a,
    # b and the output, the subtile broadcast): binary_program's own key and lookup cost 0.25 us a call; the
    # output's dtype is a's here.
    programs: dict[tuple, tuple[device_work.Program, device_work.ProgramHash]] = {}

    def plain(a: Tensor, b, memory_config: MemoryConfig | None = None) -> Tensor | None:
        """The plain call (a tensor and a tensor or a Python number, no keywords but memory_config) with the
        same values and device work as run(), fewer steps; None when it is not one (host tensors, a deallocated
        one, two devices): run() works it out. A model passes memory_config= on most calls: run() computed
        those in float32 and rounded (4x plain's time on a 32x32 add), for the same bfloat16 values."""
        # The slots, as Tensor's own code reads them: device() costs 30 ns a call against the slot's 9, ~2 % of
        # this path's 4.3 us add (bench seams).
        av, device = a._value, a._device
        if av is None or device is None or _writes.target is not None or (division and a.dtype is _INT32):
            return None  # (an INT32 division's output is FLOAT32: run())
        bf16 = native and a.dtype is _BF16 and av.dtype is _TORCH_BF16
        if type(b) is Tensor:
            bv = b._value
            if bv is None or b._device is not device:
                return None
            b_dtype, inputs = b.dtype, [a, b]
            if not (bf16 and bv.dtype is _TORCH_BF16):
                bf16, bv = False, bv.float() if bv.is_floating_point() else bv
        else:  # a number: only mul and div take it as float32 in their bfloat16 kernels (add rounds it to bf16,
            # which changes nothing where bfloat16 holds it exactly); _scalar's tensor saves torch's wrapping of it
            held, exact = _scalar(b) if bf16 else _NO_SCALAR
            b_dtype, inputs, bf16 = None, [a], bf16 and (number_native or exact)
            bv = held if bf16 and held is not None else b
        if not bf16:
            av = av.float() if av.is_floating_point() else av
        try:
            y = fn(av, bv)  # bf16: torch's bfloat16 kernel, float32 math rounded once
        except RuntimeError:
            return None  # run() says what is wrong (shapes that do not broadcast)
        if nan16 is not None:
            y = _stored_nan(y, a.dtype, nan16)
        out = like_output(y, a, inputs) if memory_config is None else None
        alike = out is not None  # like_output's: y has a's shape
        if out is None:  # a broadcast result, a config the "inputs" rule does not give, or one asked for
            out = output(y, a, inputs, op_name=op_name, memory_config=memory_config)
            if a._memory_config.shard_spec is not None and a.layout == _TILE:  # operands sharded alike: the shards
                sharded = eltwise_programs.sharded_binary_program(a, b, out)  # are binary_ng's CBs
                if sharded is not None:
                    device_work.launch_for(out, True, device, sharded)
                    return out
        if a.layout == _TILE:
            c = device.config
            bcast = None
            if b_dtype is not None:
                # No subtile broadcast when b, a and the result hold as many elements (not none): each broadcasts to
                # the result, so their [-2] and [-1] agree. Two numel() cost 0.13 us of thread CPU where comparing
                # the shapes costs 0.18 (each read builds a torch.Size)
                n = av.numel()
                if not (n and bv.numel() == n and (alike or y.numel() == n)):
                    bcast = _subtile_broadcast(av.shape, bv.shape)
            # the buffer types as ints (see _unary_output), one read when a, b and out share one config object (as
            # like_output's do, and a DRAM tensor's with memory_config=ttnn.DRAM_MEMORY_CONFIG)
            cfg = a._memory_config
            bt = cfg.buffer_type._value_
            key = ((a.dtype, b_dtype, c.grid_x, c.grid_y, bt, bt if b_dtype is not None else None, bt, bcast)
                   if out._memory_config is cfg and (b_dtype is None or b._memory_config is cfg)
                   else (a.dtype, b_dtype, c.grid_x, c.grid_y, bt,
                         b._memory_config.buffer_type._value_ if b_dtype is not None else None,
                         out._memory_config.buffer_type._value_, bcast))
            entry = programs.get(key)
            if entry is None:
                entry = programs[key] = (eltwise_programs.binary_program(a, b_dtype, out.dtype),
                                         _ng_entry(op_name, a, b, out, bcast))
            program, cache_key = entry
            try:  # launch_for(), a call less
                device_work.launch(device, program, cache_key)
            except RuntimeError:
                out._free()
                raise
        return out

    if rounding:
        def op(input_tensor_a, input_tensor_b, *, fast_and_approximate_mode: bool = False, rounding_mode=None,
               memory_config: MemoryConfig | None = None, dtype: DataType | None = None, activations=None,
               input_tensor_a_activations=None, input_tensor_b_activations=None, **tt_nn_only) -> Tensor:
            if (type(input_tensor_a) is Tensor and type(input_tensor_b) in _PLAIN and rounding_mode is None
                    and dtype is None and result_dtype is None and activations is None
                    and input_tensor_a_activations is None and input_tensor_b_activations is None
                    and not fast_and_approximate_mode and not tt_nn_only):
                out = plain(input_tensor_a, input_tensor_b, memory_config)
                if out is not None:
                    return out
            return run(input_tensor_a, input_tensor_b, memory_config, dtype, activations, input_tensor_a_activations,
                       input_tensor_b_activations, fast_and_approximate_mode, rounding_mode, tt_nn_only)
    else:
        def op(input_tensor_a, input_tensor_b, *, memory_config: MemoryConfig | None = None,
               dtype: DataType | None = None, activations=None, input_tensor_a_activations=None,
               input_tensor_b_activations=None, fast_and_approximate_mode: bool = False, **tt_nn_only) -> Tensor:
            if (type(input_tensor_a) is Tensor and type(input_tensor_b) in _PLAIN
                    and dtype is None and result_dtype is None and activations is None
                    and input_tensor_a_activations is None and input_tensor_b_activations is None
                    and not fast_and_approximate_mode and not tt_nn_only):
                out = plain(input_tensor_a, input_tensor_b, memory_config)
                if out is not None:
                    return out
            return run(input_tensor_a, input_tensor_b, memory_config, dtype, activations, input_tensor_a_activations,
                       input_tensor_b_activations, fast_and_approximate_mode, None, tt_nn_only)

    op.__doc__ = f"Element-wise {name} with broadcasting; either argument may be a Python number."
    if rounding:
        op.__doc__ += ' rounding_mode="trunc" or "floor" rounds the quotient toward zero or down (None: exact).'
    example = _INT_BINARY_EXAMPLE if getattr(fn, "takes_integers", False) else _BINARY_EXAMPLE
    if hasattr(fn, "golden"):  # a comparison: 1.0 / 0.0 on the device, torch's bool from its golden
        example = example.replace(".to_torch(), {op}.golden", ".to_torch().bool(), {op}.golden").replace(
            "torch.allclose(", "torch.equal(").replace(", equal_nan=True)", ")")
    op.__doc__ += example.format(op=f"ttnn.{name}")
    # The dispatcher may call plain() itself for ttnn.add(a, b) (registry.register_op), as op() would.
    if result_dtype is None:
        PLAIN[name] = fn
    return register_op(f"ttnn.{name}", kind=kind, aliases=aliases, output_keyword=_OUT, golden=golden,
                       plain=plain if result_dtype is None else None)(op)


_ROUNDING = {None: None, "trunc": torch.trunc, "floor": torch.floor}


def _float32(x) -> bool:
    """A float32 tensor, or a number (TT-NN takes a scalar operand in the tensor's format)."""
    return not isinstance(x, Tensor) or x.dtype is DataType.FLOAT32


def _stored_nan(y: torch.Tensor, dtype: DataType, inf: float) -> torch.Tensor:
    """A result as a 16-bit output holds it: a NaN is packed as an infinity in bfloat16 ("returns nan for fp32 and
    inf for bf16", ckernel_sfpu_log.h; "NaN is packed as inf for ttnn.bfloat16", test_remainder.py). tt-metal's
    tests pin the sign: div's 0/0 +inf (test_binary_fp32.py), remainder by 0 -inf (test_remainder.py)."""
    if dtypes.TORCH_DTYPE.get(dtype) is not torch.bfloat16 or not y.is_floating_point():
        return y
    return torch.where(torch.isnan(y), torch.tensor(inf, dtype=y.dtype), y)


def _rounded(op_name: str, y, rounding_mode):
    """y rounded as ttnn.div's rounding_mode says; the other binary ops pass None."""
    if rounding_mode is None:
        return y
    if rounding_mode not in _ROUNDING:
        raise ValueError(f"{op_name}: rounding_mode={rounding_mode!r} is not one of None, 'trunc', 'floor'")
    return _ROUNDING[rounding_mode](y)


# native_bf16: binary ops whose torch bfloat16 kernel gives exactly the float32 result rounded to bfloat16 (it
# computes in float32 and rounds once): on two bfloat16 inputs with a bfloat16 output they skip both conversions
# to float32 and the rounding back, the same values (tests/test_fast_paths.py holds them to it, NaN and
# denormals included); "numbers": also with a Python number (float32 in the kernel). Not pow and the
# transcendental ones: their bfloat16 kernels need not match; not maximum/minimum: the sign of max(-0.0, 0.0)
# differs between torch's vector and scalar loops.
_BF16, _TORCH_BF16, _INT32 = DataType.BFLOAT16, torch.bfloat16, DataType.INT32


def _int32_division(a, b) -> bool:
    """Whether a DIV is binary_ng's integer division: an INT32 tensor by an INT32 tensor or a number."""
    return isinstance(a, Tensor) and a.dtype is _INT32 and (not isinstance(b, Tensor) or b.dtype is _INT32)
_TILE = Layout.TILE  # plain()'s test: an enum member read through its class costs 0.06 us a time
_PLAIN = frozenset({Tensor, float, int})  # a binary op's second argument on its fast path (not bool: int's subclass)
_SCALARS: dict = {}  # plain()'s numbers: each one's (0-dim tensor, whether bfloat16 holds it exactly)
_NO_SCALAR = (None, False)


def _scalar(b) -> tuple:
    """(number `b` as a 0-dim tensor, whether bfloat16 holds `b` exactly), made once a number: torch wraps a Python
    number anew at every call, 1.6 us of a 32x32 bfloat16 add's 3.2 in torch (1.5 with a bfloat16 tensor made
    once; 2.6 with a float64 one, which the kernel casts). A number bfloat16 holds is held in bfloat16, any other
    as torch wraps it (float64, int64): the kernels read either as the wrapped number. _NO_SCALAR for 0 (-0.0 and
    0.0 are one key, and a sign that a product keeps), NaN (no key finds it) and an int that no int64 holds."""
    hit = _SCALARS.get(b)
    if hit is None:
        if not b or b != b:
            return _NO_SCALAR
        try:
            held = torch.tensor(b, dtype=torch.float64 if type(b) is float else torch.int64)
        except (OverflowError, ValueError):  # an int past int64's range: "Overflow when unpacking long long"
            return _NO_SCALAR
        rounded = held.to(torch.bfloat16)
        exact = float(rounded) == b
        if len(_SCALARS) >= 1024:  # a model's constants are a few; a loop over many numbers starts again
            _SCALARS.clear()
        hit = _SCALARS[b] = (rounded if exact else held, exact)
    return hit


def _subtile_broadcast(sa, sb) -> tuple | None:
    """binary_ng's subtile broadcast of two logical shapes (get_subtile_broadcast_type of their [-2] and [-1]): None
    when they agree, else which of the four are 1, which decides the type."""
    ha, wa = (sa[-2] if len(sa) > 1 else 1), (sa[-1] if len(sa) else 1)
    hb, wb = (sb[-2] if len(sb) > 1 else 1), (sb[-1] if len(sb) else 1)
    return None if ha == hb and wa == wb else (ha == 1, wa == 1, hb == 1, wb == 1)


_NG_ENTRIES: dict[tuple, device_work.ProgramHash] = {}  # _ng_entry's, by what it reads (a few per op)


def _ng_entry(op_name: str, a: Tensor, b, out: Tensor, bcast, sub_core_grids=None, lhs_activations: bool = False,
              rhs_activations: bool = False) -> device_work.ProgramHash:
    """BinaryNgDeviceOperation's whole program-cache entry: what its compute_program_hash reads (binary_ng_device_
    operation.cpp: the op type, the dtypes, the memory configs (interleaved: their buffer types), the fused input
    activations, the subtile broadcast and sub_core_grids (its cores not modelled); no shape, as binary_program's
    CBs read none), so add and mul of one shape, or a DRAM and an L1 output, are two entries (tt-metal's
    test_binary_ng_program_cache.py). The device's grid, binary_program's other input, is the cache's own.
    One string, made once: Python keeps its hash, where a Program's (0.14 us) is worked out on every launch;
    its text costs 2.6 us of thread CPU, the lookup by what it reads 0.3."""
    tensor_b = type(b) is Tensor
    key = (op_name, a.dtype, b.dtype if tensor_b else None, out.dtype, a._memory_config.buffer_type,
           b._memory_config.buffer_type if tensor_b else None, out._memory_config.buffer_type, bcast, lhs_activations,
           rhs_activations, repr(sub_core_grids))
    entry = _NG_ENTRIES.get(key)
    if entry is None:
        entry = _NG_ENTRIES[key] = device_work.ProgramHash(("|".join(map(str, key)),))
    return entry


# A unary op on a bfloat16 tensor computes in float32 and rounds the result to bfloat16 once. torch's bfloat16
# kernel for most functions does just that inside (each value widened, the float32 function, rounded), without
# the two passes over the tensor that widening it first and rounding the result take (exp on [1, 12, 128, 128]:
# 236-261 us -> 111). Whether a kernel gives the same bits depends on the machine's and torch's build (their
# vectorized and element-by-element loops may call different float32 functions: gelu's erf does), and some
# bfloat16 kernels are slower than widening (tanh's: 257 -> 392 us). So each function is tried once per process,
# over every bfloat16 value: taken when it gives the same bits in both loops as both float32 loops, and is not
# the slower way. Either way the values are the float32 result rounded; only the time differs.
_EVERY_BF16 = None
_TAKEN: dict[str, bool] = {}  # op name -> its bfloat16 kernel is exact and not slower: computed in bfloat16


def _every_bfloat16() -> torch.Tensor:
    global _EVERY_BF16
    if _EVERY_BF16 is None:
        _EVERY_BF16 = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    return _EVERY_BF16


def bfloat16_kernel_exact(fn) -> bool:
    """Whether fn on bfloat16 values gives the bits of fn on their float32 values rounded to bfloat16, for every
    bfloat16 value (NaN for NaN, whatever its bits), in torch's vectorized and element-by-element loops alike."""
    every = _every_bfloat16()
    strided = torch.empty(2 * every.numel(), dtype=torch.bfloat16)[::2]  # a stride: the element loop
    strided.copy_(every)
    want = fn(every.float()).bfloat16()
    got = (fn(every), fn(strided), fn(strided.float()).bfloat16())
    return all(g.dtype is torch.bfloat16 and _same_bits(g.contiguous(), want) for g in got)  # a bool is not


def _bfloat16_not_slower(fn) -> bool:
    every = _every_bfloat16()

    def best(f) -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            f()
            times.append(time.perf_counter() - start)
        return min(times)

    return best(lambda: fn(every)) <= best(lambda: fn(every.float()).bfloat16())


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    differ = (a.view(torch.int16) != b.view(torch.int16)) & ~(a.isnan() & b.isnan())
    return not bool(differ.any())


def _in_bfloat16(name: str, fn, t, dtype) -> torch.Tensor | None:
    """fn on a bfloat16 tensor's values in torch's bfloat16 kernel, when that gives the float32 result rounded
    (bfloat16_kernel_exact) and the output is bfloat16 too; None otherwise (the caller computes in float32)."""
    if (dtype is not None and dtype is not _BF16) or type(t) is not Tensor or t.dtype is not _BF16:
        return None
    v = t._value
    if v is None or v.dtype is not _TORCH_BF16:
        return None
    taken = _TAKEN.get(name)
    if taken is None:
        taken = _TAKEN[name] = bfloat16_kernel_exact(fn) and _bfloat16_not_slower(fn)
    return fn(v) if taken else None


def _float_cmp(fn):
    # Comparisons give 1.0 / 0.0 in the input's dtype, as TT-NN's do; their goldens give torch's bool, as TT-NN's
    # (ttnn/operations/binary.py: torch.eq(a, b); test_binary_comp_fp32.py asserts golden.dtype == torch.bool).
    def cmp(a, b):
        return fn(a, b).float()
    cmp.golden = fn
    return cmp


def _pre(op_name: str, acts, x, between=None):
    """x after a binary op's fused activations (a list of names or ttnn.UnaryWithParam); numbers pass. `between`:
    each step's rounding (_dst16)."""
    f = _activations.resolve_all(op_name, acts, between)
    return x if f is None or not isinstance(x, torch.Tensor) else f(x.float())


_DST32 = (DataType.FLOAT32, DataType.INT32, DataType.UINT32)


def _dst16(a, b, out_dtype):
    """The bfloat16 rounding of binary_ng's 16-bit destination register, where the FPU result and each fused unary
    step are held (binary_ng_program_factory.cpp: fp32_dest_acc_en for a 32-bit output, or both inputs FLOAT32, INT32
    or UINT32); None when it is 32-bit. tt-metal's test_binary_bcast_ext.py rounds its goldens there: add with a
    fused ERFINV reads a + b as bfloat16 (a float32 a + b scored PCC 0.981 against 0.99)."""
    dtypes_in = [t.dtype for t in (a, b) if isinstance(t, Tensor)]
    out = out_dtype if out_dtype is not None else dtypes_in[0]
    if out in _DST32 or (len(dtypes_in) == 2 and dtypes_in[0] == dtypes_in[1] and dtypes_in[0] in _DST32):
        return None
    return lambda v: v.bfloat16().float() if v.is_floating_point() else v


def _approx_div(a, b):
    """div under fast_and_approximate_mode: a times the SFPU's approximate reciprocal of b."""
    return a * numerics.reciprocal_approx(torch.as_tensor(b, dtype=torch.float32))


def _approximable_unary(name: str, fn):
    """A unary op with TT-NN's fast_and_approximate_mode: the SFPU approximation (device_sim.numerics)."""
    approx = numerics.APPROX[name]
    UNARY[name] = fn

    def golden(x, *_, **__):
        return fn(x)

    def op(input_tensor: Tensor, *, fast_and_approximate_mode: bool = False,
           memory_config: MemoryConfig | None = None, dtype: DataType | None = None, **tt_nn_only) -> Tensor:
        if tt_nn_only:
            check_tt_nn_only(f"ttnn.{name}", tt_nn_only)
        ins = device_inputs(f"ttnn.{name}", input_tensor)
        y = None if fast_and_approximate_mode else _in_bfloat16(name, fn, input_tensor, dtype)
        if y is None:
            y = (approx if fast_and_approximate_mode else fn)(values(input_tensor))
        return _unary_output(y, input_tensor, ins, f"ttnn.{name}", dtype, memory_config)

    op.__doc__ = (f"Element-wise {name}; fast_and_approximate_mode=True uses the SFPU's approximation "
                  f"(docs/numerics.md gives its error)." + _UNARY_EXAMPLE.format(op=f"ttnn.{name}"))
    return register_op(f"ttnn.{name}", output_keyword=_OUT, golden=golden)(op)


exp = _approximable_unary("exp", torch.exp)
log = _approximable_unary("log", torch.log)
sqrt = _approximable_unary("sqrt", torch.sqrt)
rsqrt = _approximable_unary("rsqrt", torch.rsqrt)
reciprocal = _unary("reciprocal", torch.reciprocal)
neg = _unary("neg", torch.neg)
abs = _unary("abs", torch.abs)  # noqa: A001
square = _unary("square", torch.square)
relu = _unary("relu", torch.relu)
gelu = _approximable_unary("gelu", F.gelu)
silu = _unary("silu", F.silu)


def _sigmoid_golden(x, *_, **__):
    return torch.sigmoid(x)


UNARY["sigmoid"] = torch.sigmoid


@register_op("ttnn.sigmoid", output_keyword=_OUT, golden=_sigmoid_golden)
def sigmoid(input_tensor: Tensor, *, vector_mode: int = 4, mode=_activations.SigmoidMode.Accurate,
            fast_and_approximate_mode: bool = False, memory_config: MemoryConfig | None = None,
            dtype: DataType | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Element-wise sigmoid; mode=ttnn.SigmoidMode.FastApproximate (or AccurateWithFastExp, or
    fast_and_approximate_mode=True) uses the SFPU's approximation (docs/numerics.md). vector_mode=4
    (all faces of each tile) is the only one emulated.

    >>> x = ttnn.from_torch(torch.tensor([[-2.0, 0.0, 2.0]]), layout=ttnn.TILE, device=device)
    >>> ttnn.sigmoid(x).to_torch()
    tensor([[0.1192, 0.5000, 0.8808]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if vector_mode != 4:
        raise NotImplementedError(f"{op_name}: vector_mode={vector_mode!r} (part of each tile) is not emulated; "
                                  f"device_sim applies it to whole tiles (vector_mode=4)")
    mode = _activations.SigmoidMode(mode)
    ins = device_inputs(op_name, input_tensor)
    approx = fast_and_approximate_mode or mode != _activations.SigmoidMode.Accurate
    return _unary_output(_sigmoid_values(input_tensor, approx, dtype), input_tensor, ins, op_name, dtype, memory_config)


def _sigmoid_values(input_tensor: Tensor, approx: bool, dtype) -> torch.Tensor:
    """The SFPU's sigmoid of the tensor: accurate, or its approximation (docs/numerics.md)."""
    y = None if approx else _in_bfloat16("sigmoid", torch.sigmoid, input_tensor, dtype)
    return y if y is not None else (numerics.sigmoid_approx if approx else torch.sigmoid)(values(input_tensor))


@register_op("ttnn.sigmoid_accurate", output_keyword=_OUT, golden=_sigmoid_golden)
def sigmoid_accurate(input_tensor: Tensor, fast_and_approximate_mode: bool = False, *,
                     memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """ttnn.sigmoid under its deprecated name (unary.cpp's sigmoid_accurate: the accurate SIGMOID, or with
    fast_and_approximate_mode the approximate chain neg, exp, +1, recip); one UnaryDeviceOperation.

    >>> x = ttnn.from_torch(torch.tensor([[-2.0, 0.0, 2.0]]), layout=ttnn.TILE, device=device)
    >>> ttnn.sigmoid_accurate(x).to_torch()
    tensor([[0.1192, 0.5000, 0.8808]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    return _unary_output(_sigmoid_values(input_tensor, fast_and_approximate_mode, None), input_tensor, ins, op_name,
                         None, memory_config)


tanh = _approximable_unary("tanh", torch.tanh)
sin = _unary("sin", torch.sin)
cos = _unary("cos", torch.cos)

add = _binary("add", torch.add, kind="binary", native_bf16="tensors")
sub = _binary("sub", torch.sub, kind="binary", aliases=("ttnn.subtract",), native_bf16="tensors")
rsub = _binary("rsub", lambda a, b: torch.sub(b, a), kind="binary", native_bf16="tensors")
mul = _binary("mul", torch.mul, kind="binary", aliases=("ttnn.multiply",), native_bf16="numbers")
# TT-NN 0.81 registers both: ttnn.divide (binary.hpp, BinaryOpType DIV) and ttnn.div (binary_composite.hpp,
# which adds rounding_mode); a report names the one the user called.
div = _binary("div", torch.div, rounding=True, approx=_approx_div, native_bf16="numbers", division=True,
              nan16=float("inf"))
divide = _binary("divide", torch.div, approx=_approx_div, native_bf16="numbers", division=True, nan16=float("inf"))
pow = _binary("pow", torch.pow)  # noqa: A001
maximum = _binary("maximum", lambda a, b: torch.maximum(a, torch.as_tensor(b, dtype=a.dtype)), kind="binary")
minimum = _binary("minimum", lambda a, b: torch.minimum(a, torch.as_tensor(b, dtype=a.dtype)), kind="binary")
eq = _binary("eq", _float_cmp(torch.eq), kind="binary")
ne = _binary("ne", _float_cmp(torch.ne), kind="binary")
gt = _binary("gt", _float_cmp(torch.gt), kind="binary")
ge = _binary("ge", _float_cmp(torch.ge), kind="binary")
lt = _binary("lt", _float_cmp(torch.lt), kind="binary")
le = _binary("le", _float_cmp(torch.le), kind="binary")

subtract, multiply = sub, mul


# -- more unary ops -----------------------------------------------------------------------------

def _flag(fn):
    # Predicates (isnan, logical_not, ...) give 1.0 / 0.0 in the input's dtype, as comparisons do.
    return lambda x: fn(x).float()


floor = _unary("floor", torch.floor)
ceil = _unary("ceil", torch.ceil)
trunc = _unary("trunc", torch.trunc)
erf = _approximable_unary("erf", torch.erf)
erfc = _unary("erfc", torch.erfc)
exp2 = _unary("exp2", torch.exp2)
expm1 = _unary("expm1", torch.expm1)
log1p = _approximable_unary("log1p", torch.log1p)
log2 = _approximable_unary("log2", torch.log2)
log10 = _approximable_unary("log10", torch.log10)
sign = _unary("sign", torch.sign)
mish = _unary("mish", F.mish)

def _bitwise_not(x: torch.Tensor) -> torch.Tensor:
    return torch.bitwise_not(x)


_bitwise_not.takes_integers = True  # unary_nanobind.cpp binds bitwise_not for INT32
bitwise_not = _unary("bitwise_not", _bitwise_not)

def _alt_complex_rotate90_golden(input_tensor, *_, **__):
    """TT-NN's golden (ttnn/operations/unary.py): each (re, im) pair of the last dim becomes (-im, re)."""
    x = input_tensor.reshape(*input_tensor.shape[:-1], -1, 2)
    real, imag = x.chunk(2, dim=-1)
    return torch.cat([-imag, real], dim=-1).flatten(-2)


@register_op("ttnn.alt_complex_rotate90", output_keyword=_OUT, golden=_alt_complex_rotate90_golden)
def alt_complex_rotate90(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
                         op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Multiply each complex number stored as an adjacent (re, im) pair of the last dim by i: (-im, re), in one
    UnaryDeviceOperation. The kernel pairs the values of the padded tile row, so an odd last value pairs with the
    padding (0): it becomes -0.0. Not one value in, one value out, so it is not in eltwise.UNARY.

    >>> x = ttnn.from_torch(torch.tensor([[1.0, 2.0, 3.0, 4.0]]), layout=ttnn.TILE, device=device)
    >>> ttnn.alt_complex_rotate90(x).to_torch()
    tensor([[-2.,  1., -4.,  3.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    v = values(input_tensor, op_name)
    w = v.shape[-1] if v.dim() else 1
    padded = torch.nn.functional.pad(v.reshape(*v.shape[:-1], w) if v.dim() else v.reshape(1), (0, w % 2))
    y = _alt_complex_rotate90_golden(padded)[..., :w].reshape(v.shape)
    return _unary_output(y, input_tensor, ins, op_name, None, memory_config)


# x * clamp(x / 2 + 1, 0, 1), in float32 (hardmish_tile; ttnn/operations/unary.py's golden)
hardmish = _unary("hardmish", lambda x: x.float() * torch.clamp(x.float() * 0.5 + 1.0, min=0.0, max=1.0),
                  truncated=True)


# bitcast's dtype pairs (unary_nanobind.cpp: "UINT16 <-> BFLOAT16, UINT32 <-> FLOAT32, UINT32 <-> INT32"), each with
# the torch dtype of the same width the bits are read as (device_sim holds uint16 in int32, uint32 in int64)
_BITS = {DataType.BFLOAT16: torch.int16, DataType.UINT16: torch.int16, DataType.FLOAT32: torch.int32,
         DataType.INT32: torch.int32, DataType.UINT32: torch.int32}
_BITCASTS = {(DataType.UINT16, DataType.BFLOAT16), (DataType.BFLOAT16, DataType.UINT16),
             (DataType.UINT32, DataType.FLOAT32), (DataType.FLOAT32, DataType.UINT32),
             (DataType.UINT32, DataType.INT32), (DataType.INT32, DataType.UINT32)}


def _bitcast_values(v: torch.Tensor, from_dtype: DataType, to_dtype: DataType) -> torch.Tensor:
    """`v` (held as `from_dtype` is: torch.bfloat16, float32, int32 or int64) with its bits read as `to_dtype`."""
    bits = _BITS[from_dtype]
    raw = v.view(bits) if v.is_floating_point() else v.to(bits)  # an integer narrows with wrap-around
    if to_dtype.is_float:
        return raw.view(torch.bfloat16 if bits is torch.int16 else torch.float32)
    mask = (1 << (8 * raw.element_size())) - 1  # a uint16 / uint32 reading of the bits: unsigned
    return raw.to(torch.int64) & mask if to_dtype in (DataType.UINT16, DataType.UINT32) else raw


def _bitcast_golden(input_tensor, dtype, *_, **__):
    """TT-NN's golden reads the bits of the torch tensor (torch.Tensor.view) in the dtype of the same width."""
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[input_tensor.element_size()]
    target = {DataType.BFLOAT16: torch.bfloat16, DataType.FLOAT32: torch.float32, DataType.INT32: torch.int32}
    out = input_tensor.view(bits)
    return out.view(target[dtype]) if dtype in target else out.to(torch.int64) & ((1 << 8 * out.element_size()) - 1)


def _chain_dtype(ops_chain) -> DataType | None:
    """unary_impl's output dtype: a chain that ends in TYPECAST (or BITCAST) gives its second parameter's dtype."""
    last = ops_chain[-1] if isinstance(ops_chain, (list, tuple)) and ops_chain else None
    if getattr(last, "op_type", None) in (_activations.T.TYPECAST, _activations.T.BITCAST) and len(last.params) > 1:
        return DataType(int(last.params[1]))
    return None


def _unary_chain_golden(input_tensor, ops_chain, *_, **__):
    return _activations.resolve_all("ttnn.unary_chain", ops_chain)(input_tensor.float())


@register_op("ttnn.unary_chain", output_keyword=_OUT, golden=_unary_chain_golden)
def unary_chain(input_tensor: Tensor, ops_chain, *, memory_config: MemoryConfig | None = None,
                op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The unary ops of `ops_chain` (a list of ttnn.UnaryWithParam) one after another in one UnaryDeviceOperation,
    as TT-NN fuses them; a chain ending in TYPECAST(from, to) writes dtype `to`.

    >>> x = ttnn.from_torch(torch.tensor([[-1.0, 0.5, 2.0]]), layout=ttnn.TILE, device=device)
    >>> ttnn.unary_chain(x, [ttnn.UnaryWithParam(ttnn.UnaryOpType.RELU),
    ...                      ttnn.UnaryWithParam(ttnn.UnaryOpType.POWER, 2)]).to_torch()
    tensor([[0.0000, 0.2500, 4.0000]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if not ops_chain:
        raise tt_fatal("!op_chain.empty()", "Op chain cannot be empty", where="device_sim/ops/eltwise.py")
    ins = device_inputs(op_name, input_tensor)
    y = _activations.resolve_all(op_name, ops_chain)(values(input_tensor))
    return _unary_output(y, input_tensor, ins, op_name, _chain_dtype(ops_chain), memory_config)


@register_op("ttnn.bitcast", output_keyword=_OUT, golden=_bitcast_golden)
def bitcast(input_tensor: Tensor, dtype: DataType, *, memory_config: MemoryConfig | None = None,
            op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The input's bits read as `dtype` of the same width (uint16 <-> bfloat16, uint32 <-> float32, uint32 <->
    int32), no value converted: UnaryDeviceOperation's identity kernel with the output's data format on both CBs.

    >>> x = ttnn.from_torch(torch.tensor([[16256, 49152]], dtype=torch.uint16), layout=ttnn.TILE, device=device)
    >>> ttnn.bitcast(x, ttnn.bfloat16).to_torch()
    tensor([[ 1., -2.]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    dtype = DataType(dtype)
    if (input_tensor.dtype, dtype) not in _BITCASTS:
        raise tt_fatal("bitcast dtypes of one width", f"bitcast from {input_tensor.dtype!r} to {dtype!r} is not "
                       "supported; supported pairs: UINT16 <-> BFLOAT16, UINT32 <-> FLOAT32, UINT32 <-> INT32",
                       where="device_sim/ops/eltwise.py")
    y = _bitcast_values(input_tensor._value_or_raise(), input_tensor.dtype, dtype)
    return _unary_output(y, input_tensor, ins, op_name, dtype, memory_config)
hardswish = _unary("hardswish", F.hardswish)
hardsigmoid = _unary("hardsigmoid", F.hardsigmoid)
relu6 = _unary("relu6", F.relu6)
swish = _unary("swish", F.silu)
tan = _unary("tan", torch.tan)
atan = _unary("atan", torch.atan)
asin = _unary("asin", torch.asin)
acos = _unary("acos", torch.acos)
logical_not = _unary("logical_not", _flag(torch.logical_not))
isfinite = _unary("isfinite", _flag(torch.isfinite))
isnan = _unary("isnan", _flag(torch.isnan))
isinf = _unary("isinf", _flag(torch.isinf))


def _logical_not_inplace_golden(input_tensor, *_, **__):
    return torch.logical_not(input_tensor).to(input_tensor.dtype)  # TT-NN's: input_tensor_a.logical_not_()


@register_op("ttnn.logical_not_", golden=_logical_not_inplace_golden)
def logical_not_(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
                 op_name: str = OWN_NAME) -> Tensor:
    """logical_not written into the input itself (unary_composite_op.cpp: logical_not(x, memory_config, x)).

    >>> x = ttnn.from_torch(torch.tensor([[0.0, 2.0, -1.0]]), layout=ttnn.TILE, device=device)
    >>> ttnn.logical_not_(x) is x, x.to_torch()
    (True, tensor([[1., 0., 0.]]))
    """
    return logical_not(input_tensor, memory_config=memory_config, output_tensor=input_tensor)


# More of TT-NN's unary ops, with the torch functions its goldens use (ttnn/operations/unary.py).
def _cbrt(x):
    return torch.sgn(x) * torch.pow(torch.abs(x), 1.0 / 3)


def _multigammaln(x):  # the multivariate log-gamma of order 4, as TT-NN's golden sums it
    return torch.lgamma(x) + torch.lgamma(x - 0.5) + torch.lgamma(x - 1.0) + torch.lgamma(x - 1.5) + 3.434189657547


i0 = _unary("i0", torch.i0)
i1 = _unary("i1", torch.special.i1)
lgamma = _unary("lgamma", torch.lgamma)
digamma = _unary("digamma", torch.digamma)
erfinv = _unary("erfinv", torch.erfinv)
cbrt = _unary("cbrt", _cbrt)
rad2deg = _unary("rad2deg", torch.rad2deg)
deg2rad = _unary("deg2rad", torch.deg2rad)
sinh = _unary("sinh", torch.sinh)
cosh = _unary("cosh", torch.cosh)
asinh = _unary("asinh", torch.asinh)
acosh = _unary("acosh", torch.acosh)
atanh = _unary("atanh", torch.atanh)
log_sigmoid = _unary("log_sigmoid", F.logsigmoid)
softsign = _unary("softsign", F.softsign)
tanhshrink = _unary("tanhshrink", F.tanhshrink)
multigammaln = _unary("multigammaln", _multigammaln)
signbit = _unary("signbit", _flag(torch.signbit))
isneginf = _unary("isneginf", _flag(torch.isneginf))
isposinf = _unary("isposinf", _flag(torch.isposinf))
# Comparisons with zero (TT-NN's eqz, nez, gtz, ltz, gez, lez): 1 / 0 in the input's dtype.
eqz = _unary("eqz", _flag(lambda x: torch.eq(x, 0)))
nez = _unary("nez", _flag(lambda x: torch.ne(x, 0)))
gtz = _unary("gtz", _flag(lambda x: torch.gt(x, 0)))
ltz = _unary("ltz", _flag(lambda x: torch.lt(x, 0)))
gez = _unary("gez", _flag(lambda x: torch.ge(x, 0)))
lez = _unary("lez", _flag(lambda x: torch.le(x, 0)))


_REQUIRED = inspect.Parameter.empty


def _binder(op_name: str, positional: list[tuple[str, object]], keyword: dict[str, object]):
    """(signature, bind) for an op built at run time: `positional` (name, default or _REQUIRED) pairs, then
    keyword-only `keyword` defaults, then **tt_nn_only. bind(args, kwargs) gives (arguments, extra keywords)
    in about a microsecond (inspect.Signature.bind takes ~10 us, too slow for every op call)."""
    P = inspect.Parameter
    sig = inspect.Signature(
        [P(n, P.POSITIONAL_OR_KEYWORD, default=d) for n, d in positional]
        + [P(n, P.KEYWORD_ONLY, default=d) for n, d in keyword.items()] + [P("tt_nn_only", P.VAR_KEYWORD)])
    names = [n for n, _ in positional]
    defaults = {**{n: d for n, d in positional}, **keyword}

    def bind(args, kwargs):
        if len(args) > len(names):
            raise TypeError(f"{op_name}() takes {len(names)} positional arguments but {len(args)} were given")
        a = dict(defaults)
        a.update(zip(names, args))
        extra = {}
        for k, v in kwargs.items():
            if k not in defaults:
                extra[k] = v
            elif k in names[:len(args)]:
                raise TypeError(f"{op_name}() got multiple values for argument {k!r}")
            else:
                a[k] = v
        missing = [n for n in names if a[n] is _REQUIRED]
        if missing:
            raise TypeError(f"{op_name}() missing required argument {missing[0]!r}")
        return a, extra

    return sig, bind


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_UNARY_WITH_EXAMPLE = """

    >>> x = ttnn.from_torch(torch.tensor([[-0.75, 0.25, 1.5]]), layout=ttnn.TILE, device=device)
    >>> torch.allclose({op}(x, {kw}).to_torch(), {op}.golden_function(x.to_torch(), {kw}), equal_nan=True)
    True
"""


def _unary_with(name: str, fn, *params: tuple[str, float | None]):
    """A unary op with TT-NN's numeric parameters after the input, e.g. leaky_relu(t, negative_slope=0.01).

    `fn(x, *params)` computes it; `params` are (name, default) pairs in TT-NN's order.
    """
    op_name = f"ttnn.{name}"
    names = [p for p, _ in params]
    sig, bind = _binder(op_name, [("input_tensor", _REQUIRED), *params], {"memory_config": None, "dtype": None})

    def golden(*args, **kwargs):
        a, _ = bind(args, kwargs)
        return fn(a["input_tensor"], *(a[p] for p in names))

    def op(*args, **kwargs):
        a, extra = bind(args, kwargs)
        if extra:
            check_tt_nn_only(op_name, extra)
        t = a["input_tensor"]
        ins = device_inputs(op_name, t)
        return _unary_output(fn(values(t, op_name), *(a[p] for p in names)), t, ins, op_name, a["dtype"],
                             a["memory_config"])

    op.__signature__ = sig
    kw = ", ".join(f"{p}={1 if d is _REQUIRED else d!r}" for p, d in params)  # a required one's example: 1
    op.__doc__ = (f"Element-wise {name}({', '.join(f'{p}={d}' for p, d in params)})."
                  + _UNARY_WITH_EXAMPLE.format(op=op_name, kw=kw))
    return register_op(op_name, output_keyword=_OUT, golden=golden)(op)


leaky_relu = _unary_with("leaky_relu", F.leaky_relu, ("negative_slope", 0.01))
elu = _unary_with("elu", F.elu, ("alpha", 1.0))
celu = _unary_with("celu", F.celu, ("alpha", 1.0))
# scale * elu(x, alpha) with unary_nanobind.cpp's float defaults (TT-NN's SELU kernel takes both; its golden is torch's
# F.selu, whose constants these round)
selu = _unary_with("selu", lambda x, scale, alpha: scale * F.elu(x.float(), alpha), ("scale", 1.0507),
                   ("alpha", 1.67326))
softplus = _unary_with("softplus", lambda x, b, t: F.softplus(x, beta=b, threshold=t), ("beta", 1.0),
                       ("threshold", 20.0))
hardtanh = _unary_with("hardtanh", torch.clamp, ("min_val", -1.0), ("max_val", 1.0))
heaviside = _unary_with("heaviside", lambda x, v: torch.heaviside(x, torch.tensor(float(v))), ("value", 0.0))
round = _unary_with("round", lambda x, d: torch.round(x, decimals=int(d)), ("decimals", 0))  # noqa: A001
hardshrink = _unary_with("hardshrink", lambda x, lambd: F.hardshrink(x, lambd), ("lambd", 0.5))
softshrink = _unary_with("softshrink", lambda x, lambd: F.softshrink(x, lambd), ("lambd", 0.5))
polygamma = _unary_with("polygamma", lambda x, k: torch.special.polygamma(int(k), x), ("k", _REQUIRED))
threshold = _unary_with("threshold", torch.threshold, ("threshold", _REQUIRED), ("value", _REQUIRED))
# As TT-NN's goldens (ttnn/operations/unary.py): value / x with torch.div's rounding_mode; relu(min(x, upper_limit))
rdiv = _unary_with("rdiv", lambda x, v, mode: torch.div(torch.full_like(x, v), x, rounding_mode=mode),
                   ("value", _REQUIRED), ("rounding_mode", None))
relu_max = _unary_with("relu_max", lambda x, u: torch.relu(torch.minimum(x, torch.as_tensor(u, dtype=x.dtype))),
                       ("upper_limit", _REQUIRED))
relu_min = _unary_with("relu_min", lambda x, lo: torch.maximum(x, torch.as_tensor(lo, dtype=x.dtype)),
                       ("lower_limit", _REQUIRED))  # max(x, lower_limit), as TT-NN's golden
frac = _unary("frac", torch.frac)
identity = _unary("identity", torch.clone)  # UnaryOpType::IDENTITY: a copy


def _logit(x, eps):
    """TT-NN's logit golden: torch's, but eps > 0.5 clamps to [1 - eps, eps] by hand (torch's clamp with lo > hi
    is undefined there)."""
    if eps is not None and eps > 0.5:
        x = torch.clamp(x, 1.0 - eps, eps)
        return torch.log(x / (1.0 - x))
    return torch.special.logit(x, eps=eps)


logit = _unary_with("logit", _logit, ("eps", None))
# exponent ** x, as TT-NN's golden (ttnn/operations/unary.py); unary_nanobind.cpp names the scalar `exponent`
rpow = _unary_with("rpow", lambda x, e: torch.pow(torch.as_tensor(float(e), dtype=x.dtype), x), ("exponent", _REQUIRED))


def _xielu(x, alpha_p, alpha_n):
    """xIELU as TT-NN's golden: alpha_p x^2 + x/2 for x > 0, else alpha_n expm1(min(x, -1e-6)) - alpha_n x + x/2."""
    neg = alpha_n * torch.expm1(torch.clamp(x, max=-1e-6)) - alpha_n * x + 0.5 * x
    return torch.where(x > 0, alpha_p * x * x + 0.5 * x, neg)


xielu = _unary_with("xielu", _xielu, ("alpha_p", 0.8), ("alpha_n", 0.8))


def _clamp(x, lo, hi):
    if lo is None and hi is None:  # unary_composite_op.cpp's TT_FATAL (test_composite.py matches its text)
        raise tt_fatal("(max.has_value() || min.has_value())",
                       "Only one of 'min' or 'max' can be None. Please provide one value",
                       where="device_sim/ops/eltwise.py")
    return torch.clamp(x, min=lo, max=hi)


# -- more binary ops ----------------------------------------------------------------------------

def _int_binary(fn):
    # Bitwise ops work on the integers the device holds; a float tensor is an error, as on TT-NN.
    def f(a, b):
        if a.is_floating_point() or (isinstance(b, torch.Tensor) and b.is_floating_point()):
            raise TypeError("bitwise ops take integer tensors (ttnn.int32, ttnn.uint32, ...); typecast first")
        return fn(a, torch.as_tensor(b))
    f.takes_integers = True  # _binary's docstring example gives it int32 tensors
    return f


logical_and = _binary("logical_and", _float_cmp(torch.logical_and), kind="binary")
logical_or = _binary("logical_or", _float_cmp(torch.logical_or), kind="binary")
logical_xor = _binary("logical_xor", _float_cmp(torch.logical_xor))
atan2 = _binary("atan2", lambda a, b: torch.atan2(a, torch.as_tensor(b, dtype=a.dtype)))


def _number_in_float32(fn):
    """TT-NN's golden of remainder and fmod (ttnn/operations/binary.py): a bfloat16 tensor and a number are taken in
    float32, the result rounded back, so the number is not first rounded to bfloat16 (remainder by 0.002, not
    0.00200653; fmod(-0.75, -0.0029) is -0.0018, not -0.0020, which test_div_ops.py's atol of 0.001 tells apart)."""
    def golden(a, b):
        if not isinstance(b, torch.Tensor) and a.dtype == torch.bfloat16:
            return fn(a.float(), b).bfloat16()
        return fn(a, b)
    return golden


remainder = _binary("remainder", torch.remainder, nan16=float("-inf"), golden_fn=_number_in_float32(torch.remainder))
fmod = _binary("fmod", torch.fmod, golden_fn=_number_in_float32(torch.fmod))
# The functions of the binary ops that also have an in-place form (bind_inplace_operation in binary_nanobind.cpp)
_BINARY_FNS = {
    "squared_difference": lambda a, b: torch.square(a - b),
    "bias_gelu": lambda a, b: F.gelu(a + b),  # BinaryOpType::BIAS_GELU, as TT-NN's golden (ttnn/operations/binary.py)
    # binary_composite ops, with the torch functions TT-NN's goldens use (ttnn/operations/binary.py)
    "ldexp": lambda a, b: torch.ldexp(a, torch.as_tensor(b, dtype=a.dtype)),
    "logaddexp": lambda a, b: torch.logaddexp(a, torch.as_tensor(b, dtype=a.dtype)),
    "logaddexp2": lambda a, b: torch.logaddexp2(a, torch.as_tensor(b, dtype=a.dtype)),
}
squared_difference = _binary("squared_difference", _BINARY_FNS["squared_difference"], kind="binary")
bias_gelu = _binary("bias_gelu", _BINARY_FNS["bias_gelu"], kind="binary")
ldexp = _binary("ldexp", _BINARY_FNS["ldexp"])
logaddexp = _binary("logaddexp", _BINARY_FNS["logaddexp"])
logaddexp2 = _binary("logaddexp2", _BINARY_FNS["logaddexp2"])
hypot = _binary("hypot", lambda a, b: torch.hypot(a, torch.as_tensor(b, dtype=a.dtype)))
xlogy = _binary("xlogy", torch.xlogy)
floor_div = _binary("floor_div", lambda a, b: torch.floor_divide(a, torch.as_tensor(b, dtype=a.dtype)))
div_no_nan = _binary("div_no_nan", lambda a, b: torch.where(torch.as_tensor(b) == 0, 0.0, a / b))


def _with_alpha(name: str, sign: float):
    """ttnn.addalpha / ttnn.subalpha(input_tensor_a, input_tensor_b, alpha, *, memory_config, output_tensor):
    a + sign * alpha * b (binary_nanobind.cpp's bind_binary_with_float_param; goldens torch.add / torch.sub with
    alpha), one binary program."""
    op_name = f"ttnn.{name}"

    def golden(input_tensor_a, input_tensor_b, alpha, *_, **__):
        return input_tensor_a + sign * alpha * input_tensor_b

    def op(input_tensor_a: Tensor, input_tensor_b: Tensor, alpha: float, *, memory_config: MemoryConfig | None = None,
           **tt_nn_only) -> Tensor:
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        ins = device_inputs(op_name, input_tensor_a, input_tensor_b)
        a, b = values(input_tensor_a, op_name), values(input_tensor_b, op_name)
        return _binary_output(broadcast(op_name, lambda x, y: x + sign * alpha * y, a, b), input_tensor_a,
                              input_tensor_b, ins, op_name, memory_config)

    op.__doc__ = (f"input_tensor_a {'+' if sign > 0 else '-'} alpha * input_tensor_b, with broadcasting."
                  + _BINARY_EXAMPLE.format(op=op_name).replace("(a, b)", "(a, b, 0.5)").replace(
                      "b.to_torch())", "b.to_torch(), 0.5)"))
    return register_op(op_name, kind="binary", output_keyword=_OUT, golden=golden)(op)


def _isclose_golden(input_tensor_a, input_tensor_b, *_, rtol=1e-05, atol=1e-08, equal_nan=False, **__):
    return torch.isclose(input_tensor_a, input_tensor_b, rtol=rtol, atol=atol, equal_nan=equal_nan)


@register_op("ttnn.isclose", kind="binary", golden=_isclose_golden)
def isclose(input_tensor_a: Tensor, input_tensor_b: Tensor, *, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False, memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME,
            **tt_nn_only) -> Tensor:
    """1.0 where |a - b| <= atol + rtol * |b| (NaNs equal when equal_nan), else 0.0, as torch.isclose
    (binary_nanobind.cpp's bind_binary_composite_with_rtol_atol); its golden gives torch's bool. One binary
    program.

    >>> a = ttnn.from_torch(torch.tensor([[1.0, 2.0]]), layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.tensor([[1.0, 2.5]]), layout=ttnn.TILE, device=device)
    >>> ttnn.isclose(a, b, rtol=0.1, atol=0.0).to_torch()
    tensor([[1., 0.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor_a, input_tensor_b)
    a, b = values(input_tensor_a, op_name), values(input_tensor_b, op_name)
    y = broadcast(op_name, lambda x, z: _isclose_golden(x, z, rtol=rtol, atol=atol, equal_nan=equal_nan).float(),
                  a, b)
    return _binary_output(y, input_tensor_a, input_tensor_b, ins, op_name, memory_config)


def _polyval_golden(input_tensor, coeffs, *_, **__):
    result = 0.0  # Horner's rule, highest power first, as TT-NN's golden
    for c in coeffs:
        result = result * input_tensor + c
    return result if isinstance(result, torch.Tensor) else torch.full_like(input_tensor, float(result))


@register_op("ttnn.polyval", golden=_polyval_golden)
def polyval(input_tensor: Tensor, coeffs, *, memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME,
            **tt_nn_only) -> Tensor:
    """The polynomial with `coeffs` (highest power first) at each element, by Horner's rule (binary_nanobind.cpp's
    bind_polyval); one element-wise program.

    >>> x = ttnn.from_torch(torch.tensor([[1.0, 2.0]]), layout=ttnn.TILE, device=device)
    >>> ttnn.polyval(x, [2.0, 0.0, 1.0]).to_torch()
    tensor([[3., 9.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    return _unary_output(_polyval_golden(values(input_tensor, op_name), [float(c) for c in coeffs]), input_tensor,
                         ins, op_name, None, memory_config)


@register_op("ttnn.nextafter", kind="binary", golden=lambda a, b, *_, **__: torch.nextafter(a, b))
def nextafter(input_tensor_a: Tensor, input_tensor_b: Tensor, *, memory_config: MemoryConfig | None = None,
              op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The next value after a toward b in a's own dtype (a bfloat16 tensor steps one bfloat16 ULP), as TT-NN's golden
    torch.nextafter on its tensors; one binary program.

    >>> a = ttnn.from_torch(torch.tensor([[1.0, 2.0]]), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.tensor([[2.0, 0.0]]), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.nextafter(a, b).to_torch()
    tensor([[1.0078, 1.9922]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor_a, input_tensor_b)
    a, b = input_tensor_a._value_or_raise(), values(input_tensor_b, op_name)
    y = broadcast(op_name, lambda x, z: torch.nextafter(x, torch.as_tensor(z).to(x.dtype)), a, b)
    return _binary_output(y, input_tensor_a, input_tensor_b, ins, op_name, memory_config)


addalpha = _with_alpha("addalpha", 1.0)
subalpha = _with_alpha("subalpha", -1.0)
bitwise_and = _binary("bitwise_and", _int_binary(torch.bitwise_and))
bitwise_or = _binary("bitwise_or", _int_binary(torch.bitwise_or))
bitwise_xor = _binary("bitwise_xor", _int_binary(torch.bitwise_xor))
bitwise_left_shift = _binary("bitwise_left_shift", _int_binary(torch.bitwise_left_shift))


def _arithmetic_right_shift(a, b):
    # RIGHT_SHIFT: the 32 bits read signed, the sign shifted in, for uint32 too (held as int64 here; .to(int32)
    # keeps the low 32 bits): tt-metal's test_binary_int32.py test_bitwise_right_shift wants uint32 4294967292 >> 1
    # as int32 -4 >> 1, i.e. 4294967294
    return torch.bitwise_right_shift(a.to(torch.int32) if a.dtype == torch.int64 else a, torch.as_tensor(b))


bitwise_right_shift = _binary("bitwise_right_shift", _int_binary(_arithmetic_right_shift))
# BinaryOpType::LEFT_SHIFT, bitwise_left_shift's (binary.cpp; TT-NN attaches bitwise_left_shift's golden to it)
logical_left_shift = _binary("logical_left_shift", _int_binary(torch.bitwise_left_shift))


def _logical_right_shift(a, b):
    # LOGICAL_RIGHT_SHIFT: the 32 bits read unsigned, zeros shifted in; TT-NN's golden (ttnn/operations/binary.py):
    # ((a & 0xFFFFFFFF) >> b) in int64, back to the tensor's dtype
    return ((a.to(torch.int64) & 0xFFFFFFFF) >> torch.as_tensor(b).to(torch.int64)).to(a.dtype)


logical_right_shift = _binary("logical_right_shift", _int_binary(_logical_right_shift))


def _int32_only(name: str, fn):
    # TT-NN's gcd and lcm take INT32 tensors (binary_nanobind.cpp); lcm's range is |x| < 2**15 there.
    def f(a, b):
        if a.is_floating_point() or (isinstance(b, torch.Tensor) and b.is_floating_point()):
            raise TypeError(f"ttnn.{name} takes ttnn.int32 tensors; typecast first")
        return fn(a, torch.as_tensor(b, dtype=a.dtype))
    f.takes_integers = True  # _binary's docstring example gives it int32 tensors
    return f


gcd = _binary("gcd", _int32_only("gcd", torch.gcd))
lcm = _binary("lcm", _int32_only("lcm", torch.lcm))


# -- ternary ops and clamp ----------------------------------------------------------------------
# The first tensor argument gives the output's dtype, layout and device; any argument may be a number.

# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_TERNARY_EXAMPLE = """

    >>> a, b, c = (ttnn.from_torch(torch.tensor([[v, 0.5, 0.25]]), layout=ttnn.TILE, device=device) for v in (1, 2, 3))
    >>> torch.allclose({op}(a, b, c).to_torch(), {op}.golden_function(a.to_torch(), b.to_torch(), c.to_torch()))
    True
"""


def _ternary(name: str, fn, params: tuple[str, str, str], *, kind: str = "unary", programs=None, out_dtype=None,
             nan16: float | None = None, **scalars):
    """An op of three tensors-or-numbers (where, lerp, addcmul, ...) with TT-NN's parameter names.

    `scalars` are its keyword-only numbers with defaults (addcmul's value=1.0), passed to `fn` by name.
    `out_dtype(*xs)`: the output's dtype when no dtype= is given and it is not the first tensor's (None: it is).
    `nan16`: the infinity a NaN result is stored as in a 16-bit output (_stored_nan).
    """
    op_name = f"ttnn.{name}"
    sig, bind = _binder(op_name, [(p, _REQUIRED) for p in params],
                        {**scalars, "memory_config": None, "dtype": None})

    def golden(*args, **kwargs):
        a, _ = bind(args, kwargs)
        return fn(*(a[p] for p in params), **{k: a[k] for k in scalars})

    def op(*args, **kwargs):
        a, extra = bind(args, kwargs)
        if extra:
            check_tt_nn_only(op_name, extra)
        xs = [a[p] for p in params]
        like = next((t for t in xs if isinstance(t, Tensor)), None)
        if like is None:
            raise TypeError(f"{op_name}: at least one of {', '.join(params)} must be a ttnn tensor")
        ins = device_inputs(op_name, *xs)
        vs = [values(v, op_name) for v in xs]
        try:
            r = fn(*vs, **{k: a[k] for k in scalars})
        except RuntimeError:
            shapes = [list(v.shape) if isinstance(v, torch.Tensor) else v for v in vs]
            # TT-NN's ternary ops check broadcasting with TT_FATAL (a RuntimeError), in these words.
            raise tt_fatal("compatible", f"Broadcasting rule violation: dims of a, b, c: {shapes}\n{op_name}: "
                           f"{', '.join(params)} of shapes {shapes} do not broadcast together; reshape them so that "
                           f"each dimension matches or is 1", where="device_sim/ops/eltwise.py") from None
        fresh = pending_output_target(op_name) is None
        dtype = a["dtype"] if a["dtype"] is not None or out_dtype is None else out_dtype(*xs)
        if nan16 is not None:
            r = _stored_nan(r, dtype if dtype is not None else like.dtype, nan16)
        out = output(r, like, ins, op_name=op_name, dtype=dtype, memory_config=a["memory_config"])
        if like.device() is not None:
            device_work.launch_after(out, fresh, like, (programs or _one_ternary_program)(xs, out))
        return out

    op.__signature__ = sig
    op.__doc__ = (f"Element-wise {name} of {', '.join(params)} (tensors or numbers), with broadcasting."
                  + _TERNARY_EXAMPLE.format(op=op_name))
    return register_op(op_name, kind=kind, output_keyword=_OUT, golden=golden)(op)


def _one_ternary_program(xs: list, out: Tensor):
    """where, lerp, addcmul and addcdiv are one TernaryDeviceOperation in TT-NN."""
    return eltwise_programs.ternary_program(tuple(xs), out)


def _mac_programs(xs: list, out: Tensor):
    """mac is TT-NN's composite add(multiply(a, b), c): two BinaryNgDeviceOperations. None (nothing modelled) for
    other operand kinds."""
    a, b, _ = xs
    if not (isinstance(a, Tensor) and a.layout == Layout.TILE and out.layout == Layout.TILE):
        return None
    product = eltwise_programs.binary_program(a, b.dtype if isinstance(b, Tensor) else None, a.dtype)
    return (product, eltwise_programs.binary_program(a, xs[2].dtype if isinstance(xs[2], Tensor) else None, out.dtype))


def _num(x, like):
    return x if isinstance(x, torch.Tensor) else torch.tensor(float(x), dtype=like.dtype)


def _where_branch(x):
    # float values as float32, as every op computes; integers as they are (int64), so that INT32 / UINT32 extremes
    # (2147483647, 3294967295: test_where.py's TSS int cases) keep every bit that float32's 24 would drop
    if isinstance(x, torch.Tensor):
        return x.float() if x.is_floating_point() else x.long()
    return x if isinstance(x, int) else float(x)


def _where(p, t, f):
    cond = p != 0 if isinstance(p, torch.Tensor) else torch.tensor(bool(p))
    return torch.where(cond, _where_branch(t), _where_branch(f))


def _where_dtype(p, t, f):
    """The dtype TT-NN's where gives (ternary.cpp's invoke_impl): an integer predicate meeting a float value is first
    typecast to that value's dtype; then TTT gives the true value's dtype, TTS and TST the (typecast) predicate's, and
    TSS (unary.cpp's where_tss) FLOAT32 for an INT32 / UINT32 predicate and a float scalar, else the predicate's."""
    integer = not p.dtype.is_float
    if isinstance(t, Tensor) and isinstance(f, Tensor):
        return t.dtype
    other = t if isinstance(t, Tensor) else f if isinstance(f, Tensor) else None
    if other is not None:
        return other.dtype if integer and other.dtype.is_float else p.dtype
    return DataType.FLOAT32 if integer and (isinstance(t, float) or isinstance(f, float)) else p.dtype


# a NaN value is stored as +inf in a bfloat16 output (test_where.py's TSS golden: torch.where(isnan, inf, ...))
where = _ternary("where", _where, ("predicate", "true_value", "false_value"), kind="binary", out_dtype=_where_dtype,
                 nan16=float("inf"))
lerp = _ternary("lerp", lambda a, b, w: torch.lerp(a.float(), _num(b, a).float(), _num(w, a).float()),
                ("input", "end", "weight"), kind="binary")


def _torch3(fn):
    # torch's addcmul/addcdiv want three tensors; TT-NN takes numbers too. Computed in float32, the result in the first
    # tensor's dtype: TT-NN's golden is torch's op on the tensors as given (ttnn/operations/ternary.py), whose bfloat16
    # result is the float32 one rounded once (test_ternary.py's scalar broadcast sums near -36600, where a bfloat16
    # step is 256, scored PCC 0.935 against a float32 golden)
    def f(a, b, c, **kw):
        like = next(v for v in (a, b, c) if isinstance(v, torch.Tensor))
        return fn(*(_num(v, like).float() for v in (a, b, c)), **kw).to(like.dtype)
    return f


addcmul = _ternary("addcmul", _torch3(torch.addcmul), ("input_tensor_a", "input_tensor_b", "input_tensor_c"),
                   value=1.0, kind="binary")
addcdiv = _ternary("addcdiv", _torch3(torch.addcdiv), ("input_tensor_a", "input_tensor_b", "input_tensor_c"),
                   value=1.0, kind="binary")
mac = _ternary("mac", lambda a, b, c: a * b + c, ("input_tensor_a", "input_tensor_b", "input_tensor_c"),
               programs=_mac_programs)


def _clamp_golden(t, min=None, max=None, *_, **__):  # noqa: A002  (TT-NN's names)
    return _clamp(t, min, max)


def _bound(x, op_name):
    return values(x, op_name) if isinstance(x, Tensor) else x


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_CLAMP_EXAMPLE = """

    >>> x = ttnn.from_torch(torch.tensor([[0.25, 0.5, 0.75]]), layout=ttnn.TILE, device=device)
    >>> {op}(x, min=0.3, max=0.6).to_torch()
    tensor([[0.3000, 0.5000, 0.6000]])
"""


def _clamp_op(name: str):
    op_name = f"ttnn.{name}"

    def op(input_tensor: Tensor, min=None, max=None, *, memory_config: MemoryConfig | None = None,  # noqa: A002
           **tt_nn_only) -> Tensor:
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        ins = device_inputs(op_name, input_tensor, min, max)
        x = values(input_tensor, op_name)
        lo, hi = _bound(min, op_name), _bound(max, op_name)
        if isinstance(lo, torch.Tensor) != isinstance(hi, torch.Tensor) and lo is not None and hi is not None:
            raise TypeError(f"{op_name}: give min and max both as numbers or both as tensors")
        r = _clamp(x, lo, hi)
        if isinstance(lo, torch.Tensor) or isinstance(hi, torch.Tensor):  # TT-NN's composite of tensor bounds
            return output(r, input_tensor, ins, op_name=op_name, memory_config=memory_config)
        # number bounds: one UnaryDeviceOperation (TT-NN's clamp unary op type)
        return _unary_output(r, input_tensor, ins, op_name, None, memory_config)

    op.__doc__ = (f"Limit each value to [min, max]; either bound may be None, a number or a tensor ({name})."
                  + _CLAMP_EXAMPLE.format(op=op_name))
    return register_op(op_name, output_keyword=_OUT, golden=_clamp_golden)(op)


clamp = _clamp_op("clamp")
clip = _clamp_op("clip")


# -- in place -----------------------------------------------------------------------------------
# TT-NN's add_, mul_, ... write the result into input_tensor_a (same buffer, same tensor id) and return it.

# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_INPLACE_EXAMPLE = """

    >>> a = ttnn.from_torch(torch.tensor([[0.25, 0.5, 0.75]]), layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.tensor([[2.0, 4.0, 8.0]]), layout=ttnn.TILE, device=device)
    >>> expected = {op}.golden_function(a.to_torch(), b.to_torch())
    >>> {op}(a, b) is a and torch.allclose(a.to_torch(), expected)
    True
"""


def _inplace(name: str, fn, *, kind: str = "unary", aliases: tuple[str, ...] = (), approx=None):
    op_name = f"ttnn.{name}"

    def golden(a, b, *_, activations=None, input_tensor_a_activations=None, input_tensor_b_activations=None, **__):
        dtype = a.dtype  # the result is a's, as torch's a.add_(b), a.eq_(b) (TT-NN's goldens) keep it
        a, b = _pre(op_name, input_tensor_a_activations, a), _pre(op_name, input_tensor_b_activations, b)
        return _pre(op_name, activations, fn(a, b)).to(dtype)

    def op(input_tensor_a: Tensor, input_tensor_b, *, activations=None, input_tensor_a_activations=None,
           input_tensor_b_activations=None, fast_and_approximate_mode: bool = False, **tt_nn_only) -> Tensor:
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        if not isinstance(input_tensor_a, Tensor):
            raise TypeError(f"{op_name}: input_tensor_a must be a ttnn tensor (it takes the result), "
                            f"got {type(input_tensor_a).__name__}")
        device_inputs(op_name, input_tensor_a, input_tensor_b)
        # fast_and_approximate_mode: div_ multiplies by the SFPU's approximate reciprocal; the others are exact.
        a = _pre(op_name, input_tensor_a_activations, values(input_tensor_a, op_name))
        b = _pre(op_name, input_tensor_b_activations, values(input_tensor_b, op_name))
        y = _pre(op_name, activations, ((approx or fn) if fast_and_approximate_mode else fn)(a, b))
        if tuple(y.shape) != tuple(input_tensor_a.shape):
            raise ValueError(f"{op_name}: the result has shape {list(y.shape)} but input_tensor_a, which takes it in "
                             f"place, has {list(input_tensor_a.shape)}; broadcast only input_tensor_b")
        if input_tensor_a.device() is not None and input_tensor_a.layout == Layout.TILE:
            # binary_ng writing into input_tensor_a's own buffer; launched before the write, so a CB clash keeps
            # the tensor's values
            device_work.launch(input_tensor_a.device(), eltwise_programs.binary_program(
                input_tensor_a, input_tensor_b.dtype if isinstance(input_tensor_b, Tensor) else None,
                input_tensor_a.dtype, lhs_activations=bool(input_tensor_a_activations),
                rhs_activations=bool(input_tensor_b_activations)))
        input_tensor_a._write(y)
        return input_tensor_a

    op.__doc__ = (f"input_tensor_a = {name[:-1]}(input_tensor_a, input_tensor_b), in place (same buffer and tensor "
                  f"id)." + _INPLACE_EXAMPLE.format(op=op_name))
    return register_op(op_name, kind=kind, aliases=aliases, output_keyword=_OUT, golden=golden)(op)


add_ = _inplace("add_", torch.add, kind="binary")
sub_ = _inplace("sub_", torch.sub, kind="binary", aliases=("ttnn.subtract_",))
mul_ = _inplace("mul_", torch.mul, kind="binary", aliases=("ttnn.multiply_",))
div_ = _inplace("div_", torch.div, aliases=("ttnn.divide_",), approx=_approx_div)
subtract_, multiply_, divide_ = sub_, mul_, div_
# In-place comparisons: 1.0 / 0.0 written into input_tensor_a, as TT-NN's goldens (a.eq_(b), a.logical_and_(b), ...)
eq_, ne_, gt_, ge_, lt_, le_ = (_inplace(f"{n}_", _float_cmp(getattr(torch, n)), kind="binary")
                                for n in ("eq", "ne", "gt", "ge", "lt", "le"))
logical_and_, logical_or_, logical_xor_ = (_inplace(f"{n}_", _float_cmp(getattr(torch, n)), kind="binary")
                                           for n in ("logical_and", "logical_or", "logical_xor"))
squared_difference_, bias_gelu_ = (_inplace(f"{n}_", _BINARY_FNS[n], kind="binary")
                                   for n in ("squared_difference", "bias_gelu"))
ldexp_, logaddexp_, logaddexp2_ = (_inplace(f"{n}_", _BINARY_FNS[n]) for n in ("ldexp", "logaddexp", "logaddexp2"))
rsub_ = _inplace("rsub_", lambda a, b: torch.sub(b, a), kind="binary")


def _plus_one(x, *_, skip_negative_entries=False, **__):
    return torch.where(x < 0, x, x + 1) if skip_negative_entries else x + 1


@register_op("ttnn.plus_one", output_keyword=_OUT, golden=_plus_one)
def plus_one(input_tensor: Tensor, *, skip_negative_entries: bool = False,
             op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Add 1 to every entry in place (decode loops step their position tensor with it); negatives stay
    when skip_negative_entries=True.

    >>> x = ttnn.from_torch(torch.tensor([[1, 5, 9]]), dtype=ttnn.int32, layout=ttnn.TILE, device=device)
    >>> ttnn.plus_one(x) is x, x.to_torch()
    (True, tensor([[ 2,  6, 10]], dtype=torch.int32))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    device_inputs(op_name, input_tensor)
    y = _plus_one(values(input_tensor, op_name), skip_negative_entries=skip_negative_entries)
    program = indexing_programs.plus_one_program(input_tensor)
    if program is not None:  # before the write: a CB clash keeps the tensor's values
        device_work.launch(input_tensor.device(), program)
    input_tensor._write(y)
    return input_tensor


tril = _unary_with("tril", lambda x, d: torch.tril(x, int(d)), ("diagonal", 0))
triu = _unary_with("triu", lambda x, d: torch.triu(x, int(d)), ("diagonal", 0))


# -- bcast: TT-NN's older broadcast op, b's first row / column / element against all of a --------

class BcastOpMath(enum.IntEnum):
    ADD = 0
    SUB = 1
    MUL = 2


class BcastOpDim(enum.IntEnum):
    H = 0  # b holds one row (its first), broadcast down a's rows
    W = 1  # b holds one column, broadcast across a's columns
    HW = 2  # b holds one value


_BCAST_MATH = {BcastOpMath.ADD: torch.add, BcastOpMath.SUB: torch.sub, BcastOpMath.MUL: torch.mul}
_BCAST_TAKE = {BcastOpDim.H: (slice(0, 1), slice(None)), BcastOpDim.W: (slice(None), slice(0, 1)),
               BcastOpDim.HW: (slice(0, 1), slice(0, 1))}


def _bcast_golden(input_a, input_b, math_op, dim, *_, **__):
    rows, cols = _BCAST_TAKE[BcastOpDim(dim)]
    return _BCAST_MATH[BcastOpMath(math_op)](input_a, input_b[..., rows, cols])


@register_op("ttnn.bcast", output_keyword=_OUT, golden=_bcast_golden)
def bcast(input_a: Tensor, input_b: Tensor, math_op: BcastOpMath, dim: BcastOpDim, *,
          memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """input_a (+ - *) input_b's first row (dim=H), first column (W) or first value (HW), broadcast over a.

    >>> a = ttnn.from_torch(torch.ones(1, 1, 32, 32), layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.full((1, 1, 1, 32), 2.0), layout=ttnn.TILE, device=device)
    >>> ttnn.bcast(a, b, ttnn.BcastOpMath.ADD, ttnn.BcastOpDim.H).to_torch()[0, 0, :2, :3]
    tensor([[3., 3., 3.],
            [3., 3., 3.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_a, input_b)
    a, b = values(input_a, op_name), values(input_b, op_name)
    if a.dim() < 2 or b.dim() < 2:
        raise ValueError(f"{op_name} works on the last two dims; got shapes {list(a.shape)} and {list(b.shape)}")
    y = broadcast(op_name, lambda x, z: _bcast_golden(x, z, math_op, dim), a, b)
    out = output(y, input_a, ins, op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, True, input_a, eltwise_programs.bcast_program(input_a, input_b, out))
    return out


# -- prelu: x where x >= 0, else x times a weight per channel (dim 1), one weight, or a number --------------------

def _prelu_golden(input_tensor_a, input_tensor_b, *_, **__):  # TT-NN's (ttnn/operations/binary.py)
    if not torch.is_tensor(input_tensor_b):
        input_tensor_b = torch.tensor(input_tensor_b, dtype=input_tensor_a.dtype)
    return F.prelu(input_tensor_a, weight=input_tensor_b)


@register_op("ttnn.prelu", output_keyword=_OUT, golden=_prelu_golden)
def prelu(input_tensor_a: Tensor, input_tensor_b, *, memory_config: MemoryConfig | None = None,
          dtype: DataType | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """torch's prelu: input_tensor_b is a tensor of one weight per channel (the input's dim 1) or of one weight, a
    number, or a one-number list. A number runs as one unary op (TT-NN's PRELU_SFPU); a tensor weight as TT-NN's
    element-wise composite, modelled by its last binary program.

    >>> x = ttnn.from_torch(torch.tensor([[-2.0, 0.5, 3.0]]), layout=ttnn.TILE, device=device)
    >>> ttnn.prelu(x, 0.25).to_torch()
    tensor([[-0.5000,  0.5000,  3.0000]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor_a, input_tensor_b)
    x = values(input_tensor_a, op_name)
    number = not isinstance(input_tensor_b, Tensor)
    w = torch.as_tensor(input_tensor_b, dtype=torch.float32) if number else values(input_tensor_b, op_name).float()
    channels = x.shape[1] if x.dim() > 1 else 1
    if w.numel() not in (1, channels):
        raise ValueError(f"{op_name}: the weight has {w.numel()} values; give one, or one per channel "
                         f"({channels}: dim 1 of the input's shape {list(x.shape)})")
    y = F.prelu(x.float(), w.reshape(-1))
    if number:
        return _unary_output(y, input_tensor_a, ins, op_name, dtype, memory_config)
    return _binary_output(y, input_tensor_a, input_tensor_b, ins, op_name, memory_config, dtype)


# -- glu, reglu, geglu, swiglu: TT-NN's composites (unary_composite_op.cpp), whose ops a capture shows nested ------

def _halves(x, dim):
    a, b = torch.split(x, x.size(-1) // 2, dim=dim)
    return a, b


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_GLU_EXAMPLE = """

    >>> x = ttnn.from_torch(torch.rand(1, 1, 32, 64), layout=ttnn.TILE, device=device)
    >>> y = {op}(x)
    >>> y.shape, torch.allclose(y.to_torch(), {op}.golden_function(x.to_torch()), atol=1e-2)
    (Shape([1, 1, 32, 32]), True)
"""


def _glu_family(name: str, gate, activation):
    """ttnn.<name>(input_tensor, dim=-1): the last dim's first half times `activation` of its second, as TT-NN runs
    it: two slices (split_tensor_for_glu), the activation, a multiply. `gate` is the torch function of the golden."""
    op_name = f"ttnn.{name}"

    def golden(input_tensor_a, dim=-1, *_, **__):
        a, b = _halves(input_tensor_a, dim)
        return a * gate(b)

    def op(input_tensor: Tensor, dim: int = -1, *, memory_config: MemoryConfig | None = None,
           **tt_nn_only) -> Tensor:
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        if dim not in (-1, 3):
            raise RuntimeError(f"TT_ASSERT: last dim {name.upper()} only supported at this time\n{op_name}: dim must "
                               f"be -1 or 3, got {dim}")
        shape = list(input_tensor.shape)
        if len(shape) != 4:
            raise ValueError(f"{op_name}: the input must be 4-D ([N, C, H, W]), got shape {shape}")
        width = list(input_tensor.padded_shape)[3]
        if (width // 2) % 32:
            raise tt_fatal("((inshape[dim] / 2) % tt::constants::TILE_WIDTH == 0)", f"Split tensor dimension should "
                           f"be in full tile\n{op_name}: the last dim ({width} padded) must split into two halves of "
                           f"whole 32-wide tiles", where="device_sim/ops/eltwise.py")

        half = width // 2
        # ttnn.slice through the registry's table: importing ops.core here would register its ops before this
        # module's, changing registered_ops()'s order
        a = TTNN.slice(input_tensor, [0, 0, 0, 0], [*shape[:3], half], [1, 1, 1, 1], memory_config=memory_config)
        b = TTNN.slice(input_tensor, [0, 0, 0, half], shape, [1, 1, 1, 1], memory_config=memory_config)
        return multiply(a, activation(b, memory_config), memory_config=memory_config)

    op.__doc__ = (f"The last dim's first half times {name[:-3] or 'sigmoid'}-gated second half (TT-NN's {name})."
                  + _GLU_EXAMPLE.format(op=op_name))
    return register_op(op_name, output_keyword=_OUT, golden=golden)(op)


glu = _glu_family("glu", torch.sigmoid, lambda b, mc: sigmoid(b, memory_config=mc))
reglu = _glu_family("reglu", F.relu, lambda b, mc: relu(b, memory_config=mc))
geglu = _glu_family("geglu", F.gelu, lambda b, mc: gelu(b, fast_and_approximate_mode=True, memory_config=mc))
swiglu = _glu_family("swiglu", F.silu, lambda b, mc: swish(b, memory_config=mc))


# -- quantization: ttnn.quantize, dequantize, requantize (eltwise/quantization/quantization.cpp) ----------------------
# A scale or zero-point is a number, a scalar tensor (volume 1, any rank: per-tensor) or, with axis=, a 1D tensor of
# the input's size along that axis (per-channel). Values are computed in float32 and rounded to the nearest integer
# (torch's quantize_per_tensor's rounding), as the QUANT/REQUANT LLKs convert; quantize's default output is int32,
# dequantize's bfloat16.

def _quant_arg(v, x_shape, axis, *, scale: bool, op_name: str):
    """A scale or zero-point as a number or a torch tensor that broadcasts over the input, checked as
    check_per_tensor_scale / check_scale_tensor_args check it."""
    what = "scale" if scale else "zero-point"
    if not isinstance(v, Tensor):
        if axis is not None and scale:
            raise tt_fatal("std::holds_alternative<Tensor>(scale)", f"{op_name}: Per-channel quantization expects 1D "
                           f"scale tensors", where="device_sim/ops/eltwise.py")
        return float(v) if scale else int(v)
    if scale and (not v.dtype.is_float or v.dtype.is_block_float):
        raise tt_fatal("is_floating_point(scale_dtype)", f"{op_name}: Quantization only takes floating-point number "
                       f"scales (not {v.dtype.name})", where="device_sim/ops/eltwise.py")
    if not scale and v.dtype != DataType.INT32:
        raise tt_fatal("zero_point_dtype == DataType::INT32", f"{op_name}: Quantization only takes int32 zero-points "
                       f"for now (got {v.dtype.name})", where="device_sim/ops/eltwise.py")
    t = values(v, op_name)
    if axis is None:
        if t.numel() != 1:
            raise tt_fatal("logical_volume() == 1", f"{op_name}: Per-tensor quantization only takes scalar-tensor "
                           f"{what}s; got shape {list(v.shape)}", where="device_sim/ops/eltwise.py")
        return t.reshape(())
    rank = len(x_shape)
    if not -rank <= axis < rank:
        raise tt_fatal("axis >= -rank && axis < rank", f"{op_name}: Axis {axis} is outside the range "
                       f"[{-rank}, {rank - 1}]", where="device_sim/ops/eltwise.py")
    if t.dim() != 1 or t.numel() != x_shape[axis]:
        raise tt_fatal("input_tensor.logical_shape()[axis] == logical_volume()", f"{op_name}: Per-channel "
                       f"quantization expects a 1D {what} tensor of {x_shape[axis]} values (the input's size along "
                       f"axis {axis}); got shape {list(v.shape)}", where="device_sim/ops/eltwise.py")
    return t.reshape([-1 if d == axis % rank else 1 for d in range(rank)])


def _to_int(y: torch.Tensor) -> torch.Tensor:
    lo, hi = -(2**31), 2**31 - 1
    return torch.round(y).clamp(lo, hi).to(torch.int32)


def _quantize_golden(input_tensor, scale, zero_point, *_, **__):
    return _to_int(input_tensor.float() / scale + zero_point)


def _dequantize_golden(input_tensor, scale, zero_point, *_, **__):
    return (input_tensor.float() - zero_point) * scale


def _requantize_golden(input_tensor, in_scale, in_zero_point, out_scale, out_zero_point, *_, **__):
    ratio = in_scale / out_scale
    return _to_int(input_tensor.float() * ratio + (out_zero_point - in_zero_point * ratio))


def _quant_output(y, x: Tensor, b, ins, op_name: str, dtype: DataType, memory_config) -> Tensor:
    """The op's output and its BinaryNgDeviceOperation (b: the scale tensor, or None for a number); the reciprocal,
    typecast and composite steps TT-NN adds for tensor arguments are not modelled."""
    fresh = pending_output_target(op_name) is None
    out = output(y, x, ins, op_name=op_name, dtype=dtype, memory_config=memory_config)
    if x.device() is not None and x.layout == Layout.TILE and not x.is_sharded():
        device_work.launch_for(out, fresh, x.device(), eltwise_programs.binary_program(
            x, b.dtype if isinstance(b, Tensor) else None, out.dtype))
    return out


@register_op("ttnn.quantize", kind="binary", output_keyword=_OUT, golden=_quantize_golden)
def quantize(input_tensor: Tensor, scale, zero_point, *, axis: int | None = None, dtype: DataType | None = None,
             memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME) -> Tensor:
    """input / scale + zero_point, rounded to the nearest integer: int32 (dtype= may name int32 only here).

    >>> x = ttnn.from_torch(torch.tensor([[0.1, 0.2], [0.3, 0.4]]), layout=ttnn.TILE, device=device)
    >>> ttnn.quantize(x, 0.1, -2).to_torch().tolist()
    [[-1, 0], [1, 2]]
    """
    out_dtype = DataType.INT32 if dtype is None else DataType(dtype)
    if not input_tensor.dtype.is_float:
        raise tt_fatal("is_floating_point(a_dtype)", f"{op_name}: Quantize only takes floating-point number inputs, "
                       f"got {input_tensor.dtype.name}", where="device_sim/ops/eltwise.py")
    if out_dtype != DataType.INT32:
        raise tt_fatal("c_dtype == DataType::INT32", f"{op_name}: device_sim's quantize supports int32 outputs, got "
                       f"{out_dtype.name}", where="device_sim/ops/eltwise.py")
    shape = tuple(input_tensor.shape)
    s = _quant_arg(scale, shape, axis, scale=True, op_name=op_name)
    z = _quant_arg(zero_point, shape, axis, scale=False, op_name=op_name)
    ins = device_inputs(op_name, *(t for t in (input_tensor, scale, zero_point) if isinstance(t, Tensor)))
    y = _quantize_golden(values(input_tensor, op_name), s, z)
    return _quant_output(y, input_tensor, scale, ins, op_name, out_dtype, memory_config)


@register_op("ttnn.dequantize", kind="binary", output_keyword=_OUT, golden=_dequantize_golden)
def dequantize(input_tensor: Tensor, scale, zero_point, *, axis: int | None = None, dtype: DataType | None = None,
               memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME) -> Tensor:
    """(input - zero_point) * scale of an int32 input, in bfloat16 unless dtype= says float32.

    >>> q = ttnn.from_torch(torch.tensor([[-1, 0], [1, 2]], dtype=torch.int32), layout=ttnn.TILE, device=device)
    >>> ttnn.dequantize(q, 0.5, -2, dtype=ttnn.float32).to_torch().tolist()
    [[0.5, 1.0], [1.5, 2.0]]
    """
    out_dtype = DataType.BFLOAT16 if dtype is None else DataType(dtype)
    if input_tensor.dtype != DataType.INT32:
        raise tt_fatal("is_supported_quantized_dtype(a_dtype)", f"{op_name}: Dequantize only supports int32 inputs "
                       f"here, got {input_tensor.dtype.name}", where="device_sim/ops/eltwise.py")
    if out_dtype not in (DataType.FLOAT32, DataType.BFLOAT16):
        raise tt_fatal("c_dtype == FLOAT32 || c_dtype == BFLOAT16", f"{op_name}: Dequantize only supports bf16/f32 "
                       f"outputs for now, got {out_dtype.name}", where="device_sim/ops/eltwise.py")
    shape = tuple(input_tensor.shape)
    s = _quant_arg(scale, shape, axis, scale=True, op_name=op_name)
    z = _quant_arg(zero_point, shape, axis, scale=False, op_name=op_name)
    ins = device_inputs(op_name, *(t for t in (input_tensor, scale, zero_point) if isinstance(t, Tensor)))
    y = _dequantize_golden(values(input_tensor, op_name), s, z)
    return _quant_output(y, input_tensor, scale, ins, op_name, out_dtype, memory_config)


@register_op("ttnn.requantize", kind="binary", output_keyword=_OUT, golden=_requantize_golden)
def requantize(input_tensor: Tensor, in_scale, in_zero_point, out_scale, out_zero_point, *, axis: int | None = None,
               dtype: DataType | None = None, memory_config: MemoryConfig | None = None,
               op_name: str = OWN_NAME) -> Tensor:
    """An int32 tensor quantized by (in_scale, in_zero_point) requantized by (out_scale, out_zero_point): with four
    numbers, or four tensors and an axis, q * (s_in / s_out) + (z_out - z_in * s_in / s_out) in float32, rounded;
    a mix of numbers and tensors is TT-NN's composite, a dequantize to bfloat16 then a quantize.

    >>> q = ttnn.from_torch(torch.tensor([[-1, 0], [1, 2]], dtype=torch.int32), layout=ttnn.TILE, device=device)
    >>> ttnn.requantize(q, 0.5, -2, 0.25, 0).to_torch().tolist()
    [[2, 4], [6, 8]]
    """
    out_dtype = DataType.INT32 if dtype is None else DataType(dtype)
    if input_tensor.dtype != DataType.INT32 or out_dtype != DataType.INT32:
        raise tt_fatal("is_supported_quantized_dtype(a_dtype) && is_supported_quantized_dtype(c_dtype)",
                       f"{op_name}: requantize takes and gives int32 here, got {input_tensor.dtype.name} -> "
                       f"{out_dtype.name}", where="device_sim/ops/eltwise.py")
    params = (in_scale, in_zero_point, out_scale, out_zero_point)
    tensors = [isinstance(p, Tensor) for p in params]
    shape = tuple(input_tensor.shape)
    ins = device_inputs(op_name, input_tensor, *(p for p in params if isinstance(p, Tensor)))
    x = values(input_tensor, op_name)
    if not any(tensors) or (axis is not None and all(tensors)):
        # quantization.cpp's fused paths; with an axis each of the four may be per-channel or a scalar tensor
        args = [_quant_arg(p, shape, axis if isinstance(p, Tensor) and p.logical_volume() > 1 else None,
                           scale=i % 2 == 0, op_name=op_name) for i, p in enumerate(params)]
        y = _requantize_golden(x, *args)
    else:  # the composite: dequantize (bfloat16, its default) then quantize, each with its own arguments' axis
        s_in = _quant_arg(in_scale, shape, axis if tensors[0] else None, scale=True, op_name=op_name)
        z_in = _quant_arg(in_zero_point, shape, axis if tensors[0] else None, scale=False, op_name=op_name)
        s_out = _quant_arg(out_scale, shape, axis if tensors[2] else None, scale=True, op_name=op_name)
        z_out = _quant_arg(out_zero_point, shape, axis if tensors[2] else None, scale=False, op_name=op_name)
        y = _quantize_golden(dtypes.to_device_values(_dequantize_golden(x, s_in, z_in), DataType.BFLOAT16).float(),
                             s_out, z_out)
    return _quant_output(y, input_tensor, out_scale, ins, op_name, out_dtype, memory_config)


# -- Mamba's SSM product (tt-metal's experimental/ssm/repeat_and_interleave_eltwise_mul) -------------------------------

_SSM_HIDDEN = 5120  # repeat_and_interleave_eltwise_mul_device_operation_types.hpp's HIDDEN_SIZE
_SSM_HERE = "device_sim/ops/eltwise.py"


def _repeat_interleave_mul_golden(a, b, *_, **__):
    a = a.repeat(1, 1, 1, _SSM_HIDDEN) if a.shape[-1] == 32 else a
    b = b.repeat_interleave(32, dim=-1) if b.shape[-1] == _SSM_HIDDEN else b
    return a.float() * b.float()


@register_op("ttnn.experimental.repeat_and_interleave_eltwise_mul", kind="binary",
             golden=_repeat_interleave_mul_golden)
def repeat_and_interleave_eltwise_mul(a: Tensor, b: Tensor, *, memory_config: MemoryConfig | None = None,
                                      dtype: DataType | None = None, math_fidelity=None,
                                      op_name: str = OWN_NAME) -> Tensor:
    """Mamba's SSM product of [1, 1, users, 32] or [.., 32 * 5120] `a` and [1, 1, users, 5120] or [.., 32 * 5120]
    `b`: a repeated 5120 times along the width times b's values each repeated 32 times (the side already 32 * 5120
    wide is taken as is), a [1, 1, users, 32 * 5120] TILE result in `dtype` (a's unless given) and `memory_config`
    (a's unless given), with RepeatAndInterleaveEltwiseMulDeviceOperation's checks.

    >>> a = ttnn.from_torch(torch.full((1, 1, 32, 32), 2.0), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.ones(1, 1, 32, 5120), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> y = ttnn.experimental.repeat_and_interleave_eltwise_mul(a, b)
    >>> y.shape, y.to_torch()[0, 0, 0, :3].tolist()
    (Shape([1, 1, 32, 163840]), [2.0, 2.0, 2.0])
    """
    out_dtype = dtype if dtype is not None else a.dtype
    cfg = memory_config if memory_config is not None else a.memory_config()
    ashape, bshape = a.padded_shape, b.padded_shape
    wide = 32 * _SSM_HIDDEN
    checks = (
        (a.layout == Layout.TILE and b.layout == Layout.TILE, "Inputs to ssm_eltwise_mul must be tilized"),
        (a.device() is not None and b.device() is not None, "Operands to ssm_eltwise_mul need to be on device!"),
        (a.memory_config().memory_layout == TensorMemoryLayout.INTERLEAVED, "Unsupported memory layout for input a!"),
        (b.memory_config().memory_layout == TensorMemoryLayout.INTERLEAVED, "Unsupported memory layout for input b!"),
        (a.dtype in (DataType.BFLOAT16, DataType.BFLOAT8_B), "Unsupported data format for input a!"),
        (b.dtype in (DataType.BFLOAT16, DataType.BFLOAT8_B), "Unsupported data format for input b!"),
        (cfg.memory_layout == TensorMemoryLayout.INTERLEAVED, "Unsupported memory layout for output!"),
        (out_dtype in (DataType.BFLOAT16, DataType.BFLOAT8_B), "Unsupported data format for output!"),
        (len(ashape) == 4 and ashape[0] == 1 and ashape[1] == 1, "Batch not supported for input a!"),
        (len(bshape) == 4 and bshape[0] == 1 and bshape[1] == 1, "Batch not supported for input b!"),
        (ashape[-2] % 32 == 0, "Num of users must be multiple of 32 for input a!"),
        (bshape[-2] % 32 == 0, "Num of users must be multiple of 32 for input b!"),
        (ashape[-2] == bshape[-2], "Num of users must match in both of the input!"),
        (ashape[-1] != bshape[-1], "Use eltwise mul for same size inputs!"),
        (ashape[-1] in (32, wide), "Input a width must be 32 or 32*5120!"),
        (bshape[-1] in (_SSM_HIDDEN, wide), "Input b width must be 32 or 32*5120!"))
    for ok, message in checks:
        if not ok:
            raise tt_fatal(message, f"{op_name}: {message}", where=_SSM_HERE)
    ins = device_inputs(op_name, a, b)
    y = _repeat_interleave_mul_golden(values(a, op_name), values(b, op_name))
    out = output(y, a, ins, op_name=op_name, dtype=out_dtype, layout=Layout.TILE, memory_config=cfg)
    device_work.launch_after(out, True, a, eltwise_programs.repeat_interleave_mul_program(a, b, out))
    return out
