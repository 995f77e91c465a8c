"""Backward ops (`ttnn.<op>_bw`): the gradients of an element-wise op for an incoming gradient, as TT-NN's.

    import torch, device_sim as ttnn
    device = ttnn.open_device(0)
    g, a, b = (ttnn.from_torch(torch.randn(32, 32), layout=ttnn.TILE, device=device) for _ in range(3))
    grad_a, grad_b = ttnn.mul_bw(g, a, b)                 # [g * b, g * a]
    grad_a, = ttnn.mul_bw(g, a, 2.0)                      # a number: one gradient
    grad_a, grad_b = ttnn.add_bw(g, a, b, are_required_outputs=[True, False])   # grad_b is None

Each is declared once below with the torch function it differentiates; the gradients are torch's autograd of that
function on the float32 values the device holds (TT-NN's composites give the same values: division by zero as
inf, 0/0 as NaN, zeros for a rounded division), rounded to the input's dtype. A binary op takes
are_required_outputs, and input_grad= / other_grad= tensors it writes into (same buffer and tensor id) and returns.
The golden functions differentiate the same function on the torch tensors given, as TT-NN's do
(ttnn/operations/binary_backward.py, unary_backward.py). TT-NN runs each as a chain of element-wise ops; device_sim
records one op and launches, per gradient, the element-wise program that writes it.
"""

from __future__ import annotations

import numbers

import torch
import torch.nn.functional as F

from device_sim import device_work
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, values
from device_sim.programs import eltwise as eltwise_programs
from device_sim.registry import register_op
from device_sim.tensor import Tensor
from device_sim.types import Layout


def _autograd(fn, grad: torch.Tensor, inputs: list, **params) -> list:
    """d fn(*inputs) / d input, for each tensor input (a number gets None), for the incoming gradient `grad`."""
    leaves = [x.detach().clone().requires_grad_(True) if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.enable_grad():
        y = fn(*leaves, **params)
        wrt = [x for x in leaves if isinstance(x, torch.Tensor)]
        grads = torch.autograd.grad(y, wrt, grad_outputs=grad.to(y.dtype), allow_unused=True)
    it = iter(grads)
    return [(lambda g, x: torch.zeros_like(x) if g is None else g)(next(it), x) if isinstance(x, torch.Tensor)
            else None for x in leaves]


def _grad_output(value: torch.Tensor, like: Tensor, grad: Tensor, target: Tensor | None, op_name: str,
                 memory_config) -> Tensor:
    """One gradient: written into `target` when given (input_grad= / other_grad=), else a new tensor like the input;
    then the element-wise program that writes it."""
    if target is not None:
        if not isinstance(target, Tensor):
            raise TypeError(f"{op_name}: input_grad / other_grad must be ttnn tensors, got {type(target).__name__}")
        target._write(value)
        out = target
    else:
        out = output(value, like, device_inputs(op_name, like, grad), op_name=op_name, memory_config=memory_config)
    if grad._device is not None and grad.layout == Layout.TILE and out.layout == Layout.TILE:
        device_work.launch_after(out, target is None, grad,
                                 eltwise_programs.binary_program(grad, like.dtype, out.dtype))
    return out


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_BINARY_BW_EXAMPLE = """

    >>> grad, a, b = (ttnn.from_torch(torch.tensor([[v, 0.5]]), layout=ttnn.TILE, device=device) for v in (1, 2, 3))
    >>> expected = {op}.golden_function(grad.to_torch(), a.to_torch(), b.to_torch())
    >>> [torch.allclose(g.to_torch(), e) for g, e in zip({op}(grad, a, b), expected)]
    [True, True]
"""


def _binary_bw(name: str, fn, fourth: str | None = None, default=None):
    """ttnn.<name>: fn(a, b, **params) differentiated. `fourth`: the parameter TT-NN takes after the two inputs,
    positionally or by name (add_bw's and subalpha_bw's alpha, div_bw's rounding_mode), with its `default`."""
    op_name = f"ttnn.{name}"

    def params_of(value) -> dict:
        if fourth is None:
            return {}
        value = default if value is None else value
        if fourth == "rounding_mode" and value not in (None, "trunc", "floor"):
            raise RuntimeError(f"{op_name}: Incorrect rounding mode (expected None, 'trunc', or 'floor'), "
                               f"got {value!r}")
        return {fourth: value}

    def golden(grad_tensor, input_tensor_a, input_tensor_b, *rest, **kwargs):
        value = rest[0] if rest else kwargs.get(fourth) if fourth else None
        return [g for g in _autograd(fn, grad_tensor, [input_tensor_a, input_tensor_b], **params_of(value))
                if g is not None]

    def op(grad_tensor: Tensor, input_tensor_a: Tensor, input_tensor_b, *rest, are_required_outputs=(True, True),
           memory_config=None, input_grad=None, other_grad=None, **kwargs) -> list:
        value = kwargs.pop(fourth, None) if fourth else None
        if kwargs:
            check_tt_nn_only(op_name, kwargs)
        if len(rest) > (1 if fourth else 0):
            raise TypeError(f"{op_name}() takes {3 + bool(fourth)} positional arguments but {3 + len(rest)} were given")
        if rest:
            value = rest[0]
        device_inputs(op_name, grad_tensor, input_tensor_a, input_tensor_b)
        number = isinstance(input_tensor_b, numbers.Real)
        b = float(input_tensor_b) if number else values(input_tensor_b, op_name).float()
        grads = _autograd(fn, values(grad_tensor, op_name).float(), [values(input_tensor_a, op_name).float(), b],
                          **params_of(value))
        required = [True, False] if number else list(are_required_outputs)
        outs = [_grad_output(g, like, grad_tensor, target, op_name, memory_config) if want else None
                for g, like, target, want in zip(grads, (input_tensor_a, input_tensor_b), (input_grad, other_grad),
                                                 required)]
        return outs[:1] if number else outs

    op.__doc__ = (f"The gradients of {name[:-3]} for grad_tensor: [input_grad, other_grad] (one for a number)."
                  + _BINARY_BW_EXAMPLE.format(op=op_name))
    return register_op(op_name, golden=golden)(op)


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_UNARY_BW_EXAMPLE = """

    >>> grad = ttnn.from_torch(torch.tensor([[1.0, -2.0]]), layout=ttnn.TILE, device=device)
    >>> x = ttnn.from_torch(torch.tensor([[0.25, 0.5]]), layout=ttnn.TILE, device=device)
    >>> [input_grad] = {op}(grad, x)
    >>> expected = {op}.golden_function(grad.to_torch(), x.to_torch())[0]
    >>> torch.allclose(input_grad.to_torch(), expected, equal_nan=True)
    True
"""


def _unary_bw(name: str, fn, **defaults):
    """ttnn.<name>(grad_tensor, input_tensor, *, <defaults>, memory_config=None, input_grad=None): fn differentiated."""
    op_name = f"ttnn.{name}"

    def golden(grad_tensor, input_tensor, *_, **kwargs):
        params = {k: kwargs.get(k, v) for k, v in defaults.items()}
        return [_autograd(fn, grad_tensor, [input_tensor], **params)[0]]

    def op(grad_tensor: Tensor, input_tensor: Tensor, *, memory_config=None, input_grad=None, **kwargs) -> list:
        params = {k: kwargs.pop(k, v) for k, v in defaults.items()}
        if kwargs:
            check_tt_nn_only(op_name, kwargs)
        device_inputs(op_name, grad_tensor, input_tensor)
        g = _autograd(fn, values(grad_tensor, op_name).float(), [values(input_tensor, op_name).float()], **params)[0]
        return [_grad_output(g, input_tensor, grad_tensor, input_grad, op_name, memory_config)]

    op.__doc__ = f"The gradient of {name[:-3]} for grad_tensor, as a one-tensor list." + _UNARY_BW_EXAMPLE.format(
        op=op_name)
    return register_op(op_name, golden=golden)(op)


def _div(a, b, rounding_mode=None):
    return torch.div(a, b, rounding_mode=rounding_mode)


add_bw = _binary_bw("add_bw", lambda a, b, alpha: a + alpha * b, "alpha", 1.0)  # add_bw(grad, a, b, alpha)
sub_bw = _binary_bw("sub_bw", torch.sub)
subalpha_bw = _binary_bw("subalpha_bw", lambda a, b, alpha: a - alpha * b, "alpha", 1.0)
rsub_bw = _binary_bw("rsub_bw", lambda a, b: b - a)
mul_bw = _binary_bw("mul_bw", torch.mul)
div_bw = _binary_bw("div_bw", _div, "rounding_mode")

neg_bw = _unary_bw("neg_bw", torch.neg)
abs_bw = _unary_bw("abs_bw", torch.abs)
exp_bw = _unary_bw("exp_bw", torch.exp)
log_bw = _unary_bw("log_bw", torch.log)
sqrt_bw = _unary_bw("sqrt_bw", torch.sqrt)
rsqrt_bw = _unary_bw("rsqrt_bw", torch.rsqrt)
square_bw = _unary_bw("square_bw", torch.square)
reciprocal_bw = _unary_bw("reciprocal_bw", torch.reciprocal)
relu_bw = _unary_bw("relu_bw", torch.relu)
sigmoid_bw = _unary_bw("sigmoid_bw", torch.sigmoid)
tanh_bw = _unary_bw("tanh_bw", torch.tanh)
silu_bw = _unary_bw("silu_bw", F.silu)
sin_bw = _unary_bw("sin_bw", torch.sin)
cos_bw = _unary_bw("cos_bw", torch.cos)
i0_bw = _unary_bw("i0_bw", torch.i0)
lgamma_bw = _unary_bw("lgamma_bw", torch.lgamma)
gelu_bw = _unary_bw("gelu_bw", lambda x, approximate="none": F.gelu(x, approximate=approximate), approximate="none")

__all__ = ["abs_bw", "add_bw", "cos_bw", "div_bw", "exp_bw", "gelu_bw", "i0_bw", "lgamma_bw", "log_bw", "mul_bw",
           "neg_bw", "reciprocal_bw", "relu_bw", "rsqrt_bw", "rsub_bw", "sigmoid_bw", "silu_bw", "sin_bw", "sqrt_bw",
           "square_bw", "sub_bw", "subalpha_bw", "tanh_bw"]
