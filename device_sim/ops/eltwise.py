"""Unary and binary element-wise ops, built from two primitives over a table of torch functions."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from device_sim import activations as _activations
from device_sim import numerics
from device_sim.ops.common import broadcast, check_tt_nn_only, device_inputs, output, values
from device_sim.registry import register_op
from device_sim.tensor import Tensor
from device_sim.types import DataType, MemoryConfig


def _unary(name: str, fn):
    def golden(x, *_, **__):
        return fn(x)

    def op(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None, dtype: DataType | None = None,
           **tt_nn_only) -> Tensor:
        if tt_nn_only:
            check_tt_nn_only(f"ttnn.{name}", tt_nn_only)
        ins = device_inputs(f"ttnn.{name}", input_tensor)
        return output(fn(values(input_tensor)), input_tensor, ins, op_name=f"ttnn.{name}", dtype=dtype,
                      memory_config=memory_config)

    op.__doc__ = f"Element-wise {name}."
    return register_op(f"ttnn.{name}", golden=golden)(op)


def _binary(name: str, fn, *, result_dtype: DataType | None = None):
    def golden(a, b, *_, activations=None, input_tensor_a_activations=None, input_tensor_b_activations=None, **__):
        a, b = _pre(name, input_tensor_a_activations, a), _pre(name, input_tensor_b_activations, b)
        return _pre(name, activations, fn(a, b))

    def op(input_tensor_a, input_tensor_b, *, memory_config: MemoryConfig | None = None,
           dtype: DataType | None = None, activations=None, input_tensor_a_activations=None,
           input_tensor_b_activations=None, **tt_nn_only) -> Tensor:
        op_name = f"ttnn.{name}"
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        post = _activations.resolve_all(op_name, activations)
        if not isinstance(input_tensor_a, Tensor):
            raise TypeError(f"{op_name}: the first argument must be a ttnn tensor, got {type(input_tensor_a).__name__}")
        ins = device_inputs(op_name, input_tensor_a, input_tensor_b)
        a, b = values(input_tensor_a, op_name), values(input_tensor_b, op_name)
        # Fused activations run in the same kernel, on the inputs as read and on the result before rounding.
        a, b = _pre(op_name, input_tensor_a_activations, a), _pre(op_name, input_tensor_b_activations, b)
        # DataType.BFLOAT16 is 0, so `dtype or result_dtype` would drop an explicit bfloat16.
        dtype = dtype if dtype is not None else result_dtype
        y = broadcast(op_name, fn, a, b)
        return output(y if post is None else post(y.float()), input_tensor_a, ins, op_name=op_name, dtype=dtype,
                      memory_config=memory_config)

    op.__doc__ = f"Element-wise {name} with broadcasting; the second argument may be a Python number."
    return register_op(f"ttnn.{name}", golden=golden)(op)


def _float_cmp(fn):
    # Comparisons give 1.0 / 0.0 in the input's dtype, as TT-NN's do.
    return lambda a, b: fn(a, b).float()


def _pre(op_name: str, acts, x):
    """x after a binary op's fused activations (a list of names or ttnn.UnaryWithParam); numbers pass."""
    f = _activations.resolve_all(op_name, acts)
    return x if f is None or not isinstance(x, torch.Tensor) else f(x.float())


def _approximable_unary(name: str, fn):
    """A unary op with TT-NN's fast_and_approximate_mode: the SFPU approximation (device_sim.numerics)."""
    approx = numerics.APPROX[name]

    def golden(x, *_, **__):
        return fn(x)

    def op(input_tensor: Tensor, *, fast_and_approximate_mode: bool = False,
           memory_config: MemoryConfig | None = None, dtype: DataType | None = None, **tt_nn_only) -> Tensor:
        if tt_nn_only:
            check_tt_nn_only(f"ttnn.{name}", tt_nn_only)
        ins = device_inputs(f"ttnn.{name}", input_tensor)
        f = approx if fast_and_approximate_mode else fn
        return output(f(values(input_tensor)), input_tensor, ins, op_name=f"ttnn.{name}", dtype=dtype,
                      memory_config=memory_config)

    op.__doc__ = (f"Element-wise {name}; fast_and_approximate_mode=True uses the SFPU's approximation "
                  f"(docs/numerics.md gives its error).")
    return register_op(f"ttnn.{name}", golden=golden)(op)


exp = _approximable_unary("exp", torch.exp)
log = _unary("log", torch.log)
sqrt = _unary("sqrt", torch.sqrt)
rsqrt = _unary("rsqrt", torch.rsqrt)
reciprocal = _unary("reciprocal", torch.reciprocal)
neg = _unary("neg", torch.neg)
abs = _unary("abs", torch.abs)  # noqa: A001
square = _unary("square", torch.square)
relu = _unary("relu", torch.relu)
gelu = _approximable_unary("gelu", F.gelu)
silu = _unary("silu", F.silu)
sigmoid = _approximable_unary("sigmoid", torch.sigmoid)
tanh = _approximable_unary("tanh", torch.tanh)
sin = _unary("sin", torch.sin)
cos = _unary("cos", torch.cos)

add = _binary("add", torch.add)
sub = _binary("sub", torch.sub)
rsub = _binary("rsub", lambda a, b: torch.sub(b, a))
mul = _binary("mul", torch.mul)
div = _binary("div", torch.div)
pow = _binary("pow", torch.pow)  # noqa: A001
maximum = _binary("maximum", lambda a, b: torch.maximum(a, torch.as_tensor(b, dtype=a.dtype)))
minimum = _binary("minimum", lambda a, b: torch.minimum(a, torch.as_tensor(b, dtype=a.dtype)))
eq = _binary("eq", _float_cmp(torch.eq))
ne = _binary("ne", _float_cmp(torch.ne))
gt = _binary("gt", _float_cmp(torch.gt))
ge = _binary("ge", _float_cmp(torch.ge))
lt = _binary("lt", _float_cmp(torch.lt))
le = _binary("le", _float_cmp(torch.le))

subtract, multiply, divide = sub, mul, div
