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

import math
import numbers

import torch
import torch.nn.functional as F

from device_sim import device_work
from device_sim.complex_tensor import ComplexTensor
from device_sim.complex_tensor import overload as complex_overload
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, values
from device_sim.program_config_checks import tt_fatal
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


def _as_compared(g: torch.Tensor) -> torch.Tensor:
    """A golden's gradient as TT-NN's goldens give it: a complex one (of a complex input) as its real and imaginary
    parts side by side in the last dim (ttnn/operations/complex_binary_backward.py, unary_backward.py)."""
    return torch.cat((g.real, g.imag), dim=-1) if g.is_complex() else g


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
    if grad.device() is not None and grad.layout == Layout.TILE and out.layout == Layout.TILE:
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


def _binary_bw(name: str, fn, fourth: str | None = None, default=None, example: str = _BINARY_BW_EXAMPLE):
    """ttnn.<name>: fn(a, b, **params) differentiated. `fourth`: the parameter TT-NN takes after the two inputs,
    positionally or by name (add_bw's and subalpha_bw's alpha, div_bw's rounding_mode), with its `default`.
    `example`: the docstring's example, when the shared one does not fit (concat_bw's gradient is wider)."""
    op_name = f"ttnn.{name}"

    def params_of(value) -> dict:
        if fourth is None:
            return {}
        value = default if value is None else value
        if fourth == "rounding_mode":
            _check_rounding_mode(op_name, value)
        return {fourth: value}

    def golden(grad_tensor, input_tensor_a, input_tensor_b, *rest, **kwargs):
        value = rest[0] if rest else kwargs.get(fourth) if fourth else None
        return [_as_compared(g) for g in _autograd(fn, grad_tensor, [input_tensor_a, input_tensor_b],
                                                   **params_of(value)) if g is not None]

    def op(grad_tensor: Tensor, input_tensor_a: Tensor, input_tensor_b, *rest, are_required_outputs=(True, True),
           memory_config=None, input_grad=None, other_grad=None, input_a_grad=None, input_b_grad=None,
           **kwargs) -> list:
        # addalpha_bw, concat_bw and assign_bw name the targets input_a_grad / input_b_grad (binary_backward_nanobind)
        if type(input_tensor_a) is ComplexTensor:  # TT-NN's overload (add_bw, sub_bw, mul_bw, div_bw)
            return complex_overload(op_name)(grad_tensor, input_tensor_a, input_tensor_b, *rest,
                                             memory_config=memory_config, **kwargs)
        input_grad = input_a_grad if input_grad is None else input_grad
        other_grad = input_b_grad if other_grad is None else other_grad
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
                  + example.format(op=op_name))
    return register_op(op_name, golden=golden)(op)


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_UNARY_BW_EXAMPLE = """

    >>> grad = ttnn.from_torch(torch.tensor([[1.0, -2.0]]), layout=ttnn.TILE, device=device)
    >>> x = ttnn.from_torch(torch.tensor([[0.25, 0.5]]), layout=ttnn.TILE, device=device)
    >>> [input_grad] = {op}(grad, x{args})
    >>> expected = {op}.golden_function(grad.to_torch(), x.to_torch(){args})[0]
    >>> torch.allclose(input_grad.to_torch(), expected, equal_nan=True)
    True
"""


_REQUIRED = object()


def _unary_bw(name: str, fn, positional=(), grad_fn=None, example="", listed=True, **defaults):
    """ttnn.<name>(grad_tensor, input_tensor, <positional>, *, <defaults>, memory_config=None, input_grad=None): fn
    differentiated. `positional`: (name, default) pairs TT-NN takes after the input, by position or name
    (_REQUIRED: no default); a ttnn tensor given for one (clamp_bw's min/max) is used by value. `grad_fn(g, x,
    **params)`: the gradient TT-NN's composite computes, where it departs from autograd (unary_backward.cpp).
    `example`: the arguments after the input in the docstring's example (", 2.0" for pow_bw's exponent).
    `listed`: the op returns a one-tensor list (False: the tensor, as ttnn.experimental.gelu_bw)."""
    op_name = f"ttnn.{name}"
    names = [n for n, _ in positional]

    def params_of(args: tuple, kwargs: dict) -> dict:
        if len(args) > len(positional):
            raise TypeError(f"{op_name}() takes {2 + len(positional)} positional arguments but {2 + len(args)} "
                            f"were given")
        params = dict(zip(names, args))
        for n, default in positional[len(args):]:
            if n in kwargs:
                params[n] = kwargs.pop(n)
            elif default is _REQUIRED:
                raise TypeError(f"{op_name}() missing required argument {n!r}: give it after input_tensor")
            else:
                params[n] = default
        params.update({k: kwargs.pop(k, v) for k, v in defaults.items()})
        return {k: values(v, op_name).float() if isinstance(v, Tensor) else v for k, v in params.items()}

    def gradient(g: torch.Tensor, x: torch.Tensor, params: dict) -> torch.Tensor:
        return grad_fn(g, x, **params) if grad_fn is not None else _autograd(fn, g, [x], **params)[0]

    def golden(grad_tensor, input_tensor, *args, **kwargs):
        # TT-NN's golden functions take the keyword-only parameters by position too (celu_bw's `alpha`)
        kwargs = {k: v for k, v in kwargs.items() if k in names or k in defaults}
        kwargs.update(zip(defaults, args[len(positional):]))
        args = args[:len(positional)]
        return [_as_compared(gradient(grad_tensor, input_tensor, params_of(args, kwargs)))]

    def op(grad_tensor: Tensor, input_tensor: Tensor, *args, memory_config=None, input_grad=None, **kwargs) -> list:
        if type(input_tensor) is ComplexTensor:  # TT-NN's overload (abs_bw, reciprocal_bw)
            return complex_overload(op_name)(grad_tensor, input_tensor, *args, memory_config=memory_config)
        params = params_of(args, kwargs)
        if kwargs:
            check_tt_nn_only(op_name, kwargs)
        device_inputs(op_name, grad_tensor, input_tensor)
        g = gradient(values(grad_tensor, op_name).float(), values(input_tensor, op_name).float(), params)
        out = _grad_output(g, input_tensor, grad_tensor, input_grad, op_name, memory_config)
        return [out] if listed else out

    op.__doc__ = f"The gradient of {name[:-3]} for grad_tensor, as a one-tensor list." + _UNARY_BW_EXAMPLE.format(
        op=op_name, args=example)
    if not listed:
        op.__doc__ = op.__doc__.replace("as a one-tensor list", "as a tensor").replace(
            "[input_grad] = ", "input_grad = ")
    return register_op(op_name, golden=golden)(op)


def _pow_grad(g, x, exponent):
    """pow_bw as unary_backward.cpp computes it: g * exponent * x^(exponent - 1), zeros for an exponent within 10 float
    epsilons of 0, and +inf wherever the input is <= 0 (its `where(lez(input), inf, ...)`)."""
    if exponent < 0:
        raise tt_fatal("exponent >= 0.0", "negative exponents are not supported; use recip(pow(input,abs(exponent)))",
                       where="device_sim/ops/backward.py")
    if abs(exponent) < torch.finfo(torch.float32).eps * 10:
        return torch.zeros_like(x)
    return torch.where(x <= 0, torch.inf, g * exponent * torch.pow(x, exponent - 1))


def _rdiv_grad(g, x, scalar, rounding_mode=None):
    """rdiv_bw (the gradient of scalar / x) as unary_backward.cpp computes it: -g * scalar / x^2, and at x == 0 NaN,
    or an infinity signed by -sign(g * scalar); zeros with a rounding mode."""
    _check_rounding_mode("ttnn.rdiv_bw", rounding_mode)
    if rounding_mode is not None:
        return torch.zeros_like(x)
    out = torch.where(x != 0, -g * (scalar / torch.square(x)), torch.nan)
    if scalar != 0:
        at_zero = (x == 0) & (g != 0)
        out = torch.where(at_zero, -torch.sign(g) * math.copysign(torch.inf, scalar), out)
    return out


def _prod_grad(g, x, dim=None):
    """prod_bw: TT-NN's incoming gradient has the input's shape with the product in its first place along `dim`
    (every place for dim=None: element 0); d prod / d x for that gradient."""
    if dim is None:
        return _autograd(torch.prod, g.reshape(-1)[0], [x])[0]
    if g.shape[dim] != 1:
        g = g.narrow(dim, 0, 1)
    return _autograd(lambda t: torch.prod(t, dim, keepdim=True), g, [x])[0]


def _check_rounding_mode(op_name: str, rounding_mode) -> None:
    if rounding_mode not in (None, "trunc", "floor"):
        raise RuntimeError(f"{op_name}: Incorrect rounding mode (expected None, 'trunc', or 'floor'), "
                           f"got {rounding_mode!r}")


def _div(a, b, rounding_mode=None):
    return torch.div(a, b, rounding_mode=rounding_mode)


add_bw = _binary_bw("add_bw", lambda a, b, alpha: a + alpha * b, "alpha", 1.0)  # add_bw(grad, a, b, alpha)
# sub_bw takes alpha as TT-NN's ComplexTensor overload does (sub_bw(grad, a, b, alpha), its golden too); the tensor
# one is subalpha_bw at alpha 1.0 (binary_backward.cpp), so an alpha gives subalpha_bw's gradients
sub_bw = _binary_bw("sub_bw", lambda a, b, alpha: a - alpha * b, "alpha", 1.0)
subalpha_bw = _binary_bw("subalpha_bw", lambda a, b, alpha: a - alpha * b, "alpha", 1.0)
rsub_bw = _binary_bw("rsub_bw", lambda a, b: b - a)
mul_bw = _binary_bw("mul_bw", torch.mul)
div_bw = _binary_bw("div_bw", _div, "rounding_mode")
addalpha_bw = _binary_bw("addalpha_bw", lambda a, b, alpha: a + alpha * b, "alpha", 1.0)
atan2_bw = _binary_bw("atan2_bw", torch.atan2)
xlogy_bw = _binary_bw("xlogy_bw", torch.xlogy)
hypot_bw = _binary_bw("hypot_bw", torch.hypot)
ldexp_bw = _binary_bw("ldexp_bw", torch.ldexp)
logaddexp_bw = _binary_bw("logaddexp_bw", torch.logaddexp)
logaddexp2_bw = _binary_bw("logaddexp2_bw", torch.logaddexp2)
squared_difference_bw = _binary_bw("squared_difference_bw", lambda a, b: torch.square(a - b))
# min/max: a tie gives each input half the gradient, as binary_backward.cpp's _min_or_max_bw and torch do
min_bw = _binary_bw("min_bw", torch.minimum)
max_bw = _binary_bw("max_bw", torch.maximum)
# a number for the second input: one gradient, the incoming one (binary_backward.cpp)
fmod_bw = _binary_bw("fmod_bw", torch.fmod)
remainder_bw = _binary_bw("remainder_bw", torch.remainder)
concat_bw = _binary_bw("concat_bw", lambda a, b, dim: torch.cat((a, b), dim), "dim", 0, example="""

    >>> a, b = (ttnn.from_torch(torch.ones(1, 2), layout=ttnn.TILE, device=device) for _ in range(2))
    >>> grad = ttnn.from_torch(torch.tensor([[1.0, 2.0, 3.0, 4.0]]), layout=ttnn.TILE, device=device)
    >>> [g.to_torch().tolist() for g in {op}(grad, a, b, 1)]
    [[[1.0, 2.0]], [[3.0, 4.0]]]
""")
bias_gelu_bw = _binary_bw("bias_gelu_bw", lambda a, b, approximate: F.gelu(a + b, approximate=approximate),
                          "approximate", "none")

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


def _tanh_grad(g, x):
    """g * sech^2(x) as tanh_bw's kernel computes it (tanh_derivative_tile: 4 exp(-2|x|) / (1 + exp(-2|x|))^2), which
    keeps the tail that 1 - tanh(x)^2 loses: 0 in float32 from |x| ~ 9, where sech^2(10) is 8.2e-9 (tt-metal's
    test_tanh_bw_ulp.py holds it to 2 bfloat16 ULPs of the exact value); the SFPU flushes denormals to zero."""
    e = torch.exp(-2 * x.abs())
    y = g * (4 * e / torch.square(1 + e))
    return torch.where(y.abs() < torch.finfo(torch.float32).tiny, 0.0, y)


def _gelu_grad(g, x, approximate="none"):
    """gelu_bw: for approximate="none" the derivative its kernel gives (eltwise_bw_gelu_poly.cpp: minimax polynomials
    within 1 ULP of the exact Phi(x) + x phi(x)), here in float64 with Phi from erfc, which keeps Phi's precision
    where it is tiny (x = -6: 9.9e-10 beside x phi(x) = -3.6e-8; float32's 1 + erf(x / sqrt 2) is 5 bfloat16 ULPs
    off, tt-metal's test_gelu_bw_ulp.py allows 2); "tanh" is TT-NN's composite, autograd of the tanh GELU."""
    if approximate != "none":
        return _autograd(lambda t: F.gelu(t, approximate=approximate), g, [x])[0]
    x64 = x.double()
    d = 0.5 * torch.special.erfc(-x64 / math.sqrt(2)) + x64 * torch.exp(-0.5 * x64 * x64) / math.sqrt(2 * math.pi)
    return (g.double() * d).to(torch.promote_types(g.dtype, x.dtype))


tanh_bw = _unary_bw("tanh_bw", torch.tanh, grad_fn=_tanh_grad)
silu_bw = _unary_bw("silu_bw", F.silu)
sin_bw = _unary_bw("sin_bw", torch.sin)
cos_bw = _unary_bw("cos_bw", torch.cos)
i0_bw = _unary_bw("i0_bw", torch.i0)
lgamma_bw = _unary_bw("lgamma_bw", torch.lgamma)
gelu_bw = _unary_bw("gelu_bw", lambda x, approximate="none": F.gelu(x, approximate=approximate), grad_fn=_gelu_grad,
                    approximate="none")
# ttnn.experimental.gelu_bw: the fused one-kernel gelu_bw (experimental/unary_backward/gelu_backward), same values
experimental_gelu_bw = _unary_bw("experimental.gelu_bw", lambda x, approximate: F.gelu(x, approximate=approximate),
                                 grad_fn=_gelu_grad, listed=False, approximate="none")

acos_bw = _unary_bw("acos_bw", torch.acos)
acosh_bw = _unary_bw("acosh_bw", torch.acosh)
asin_bw = _unary_bw("asin_bw", torch.asin)
asinh_bw = _unary_bw("asinh_bw", torch.asinh)
atan_bw = _unary_bw("atan_bw", torch.atan)
atanh_bw = _unary_bw("atanh_bw", torch.atanh)
cosh_bw = _unary_bw("cosh_bw", torch.cosh)
sinh_bw = _unary_bw("sinh_bw", torch.sinh)
tan_bw = _unary_bw("tan_bw", torch.tan)
erf_bw = _unary_bw("erf_bw", torch.erf)
erfc_bw = _unary_bw("erfc_bw", torch.erfc)
erfinv_bw = _unary_bw("erfinv_bw", torch.erfinv)
exp2_bw = _unary_bw("exp2_bw", torch.exp2)
expm1_bw = _unary_bw("expm1_bw", torch.expm1)
log10_bw = _unary_bw("log10_bw", torch.log10)
log1p_bw = _unary_bw("log1p_bw", torch.log1p)
log2_bw = _unary_bw("log2_bw", torch.log2)
digamma_bw = _unary_bw("digamma_bw", torch.digamma)
# multigammaln is TT-NN's mvlgamma of order 4: the sum of lgamma(x - i/2), i < 4 (no domain check, unlike torch's)
multigammaln_bw = _unary_bw("multigammaln_bw", lambda x: sum(torch.lgamma(x - i / 2) for i in range(4)))
deg2rad_bw = _unary_bw("deg2rad_bw", torch.deg2rad)
rad2deg_bw = _unary_bw("rad2deg_bw", torch.rad2deg)
frac_bw = _unary_bw("frac_bw", torch.frac)
trunc_bw = _unary_bw("trunc_bw", torch.trunc)
floor_bw = _unary_bw("floor_bw", torch.floor)
ceil_bw = _unary_bw("ceil_bw", torch.ceil)
round_bw = _unary_bw("round_bw", torch.round)
sign_bw = _unary_bw("sign_bw", torch.sign)
log_sigmoid_bw = _unary_bw("log_sigmoid_bw", F.logsigmoid)
logit_bw = _unary_bw("logit_bw", torch.logit)
selu_bw = _unary_bw("selu_bw", F.selu)
hardswish_bw = _unary_bw("hardswish_bw", F.hardswish)
hardsigmoid_bw = _unary_bw("hardsigmoid_bw", F.hardsigmoid)
relu6_bw = _unary_bw("relu6_bw", F.relu6)
tanhshrink_bw = _unary_bw("tanhshrink_bw", F.tanhshrink)
softsign_bw = _unary_bw("softsign_bw", F.softsign)
fill_zero_bw = _unary_bw("fill_zero_bw", None, grad_fn=lambda g, x: torch.zeros_like(g))
fill_bw = _unary_bw("fill_bw", None, grad_fn=lambda g, x: torch.zeros_like(g))  # TT-NN: zeros_like(grad)
# keyword-only parameters with TT-NN's defaults (unary_backward_nanobind.cpp)
hardshrink_bw = _unary_bw("hardshrink_bw", lambda x, lambd: F.hardshrink(x, lambd), lambd=0.5)
softshrink_bw = _unary_bw("softshrink_bw", lambda x, lambd: F.softshrink(x, lambd), lambd=0.5)
leaky_relu_bw = _unary_bw("leaky_relu_bw", lambda x, negative_slope: F.leaky_relu(x, negative_slope),
                          negative_slope=0.01)
elu_bw = _unary_bw("elu_bw", lambda x, alpha: F.elu(x, alpha), alpha=1.0)
celu_bw = _unary_bw("celu_bw", lambda x, alpha: F.celu(x, alpha), alpha=1.0)
logiteps_bw = _unary_bw("logiteps_bw", lambda x, eps: torch.logit(x, eps), eps=0.0)
hardtanh_bw = _unary_bw("hardtanh_bw", lambda x, min, max: F.hardtanh(x, min, max), min=-1.0, max=1.0)
softplus_bw = _unary_bw("softplus_bw", lambda x, beta, threshold: F.softplus(x, beta, threshold), beta=1.0,
                        threshold=20.0)
prod_bw = _unary_bw("prod_bw", None, grad_fn=_prod_grad, dim=None)
# parameters by position or name
threshold_bw = _unary_bw("threshold_bw", F.threshold, (("threshold", _REQUIRED), ("value", _REQUIRED)),
                         example=", 0.3, 0.0")
clamp_bw = _unary_bw("clamp_bw", lambda x, min, max: torch.clamp(x, min, max), (("min", None), ("max", None)),
                     example=", 0.0, 0.3")
clip_bw = _unary_bw("clip_bw", lambda x, min, max: torch.clamp(x, min, max), (("min", None), ("max", None)),
                    example=", 0.0, 0.3")
polygamma_bw = _unary_bw("polygamma_bw", lambda x, n: torch.polygamma(n, x), (("n", _REQUIRED),), example=", 1")
repeat_bw = _unary_bw("repeat_bw", lambda x, shape: x.repeat(list(shape)), (("shape", _REQUIRED),),
                      example=", [1, 1]")
rpow_bw = _unary_bw("rpow_bw", None, (("exponent", _REQUIRED),), example=", 2.0",
                    grad_fn=lambda g, x, exponent: torch.zeros_like(x) if exponent == 0 else torch.where(
                        x < 0, torch.nan, g * exponent * torch.pow(x, exponent - 1)))
pow_bw = _unary_bw("pow_bw", None, (("exponent", _REQUIRED),), grad_fn=_pow_grad, example=", 2.0")
div_no_nan_bw = _unary_bw("div_no_nan_bw", None, (("scalar", _REQUIRED),), example=", 2.0",
                          grad_fn=lambda g, x, scalar: torch.zeros_like(g) if scalar == 0 else g * (1 / scalar))
rdiv_bw = _unary_bw("rdiv_bw", None, (("scalar", _REQUIRED),), grad_fn=_rdiv_grad, example=", 2.0",
                    rounding_mode=None)


def _assign_golden(grad_tensor, input_tensor_a, input_tensor_b=None, *_, **__):
    return [grad_tensor] if input_tensor_b is None else [grad_tensor, grad_tensor]


@register_op("ttnn.assign_bw", golden=_assign_golden)
def assign_bw(grad_tensor: Tensor, input_tensor_a: Tensor, input_tensor_b: Tensor | None = None, *,
              are_required_outputs=(True, True), memory_config=None, input_a_grad=None, input_b_grad=None,
              **tt_nn_only) -> list:
    """The gradient of assign (a copy) for grad_tensor: [grad] for one input, [grad, grad] for two, as TT-NN's.

    >>> grad = ttnn.from_torch(torch.tensor([[1.0, -2.0]]), layout=ttnn.TILE, device=device)
    >>> x = ttnn.from_torch(torch.tensor([[0.25, 0.5]]), layout=ttnn.TILE, device=device)
    >>> [g.to_torch().tolist() for g in ttnn.assign_bw(grad, x, x)]
    [[[1.0, -2.0]], [[1.0, -2.0]]]
    """
    op_name = "ttnn.assign_bw"
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    device_inputs(op_name, grad_tensor, input_tensor_a, input_tensor_b)
    g = values(grad_tensor, op_name).float()
    if input_tensor_b is None:
        return [_grad_output(g, input_tensor_a, grad_tensor, input_a_grad, op_name, memory_config)]
    return [_grad_output(g, like, grad_tensor, target, op_name, memory_config) if want else None
            for like, target, want in zip((input_tensor_a, input_tensor_b), (input_a_grad, input_b_grad),
                                          are_required_outputs)]


# The example each ternary op's docstring ends with: the op on small tensors, against its own golden function.
_TERNARY_BW_EXAMPLE = """

    >>> grad, a, b, c = (ttnn.from_torch(torch.tensor([[v, 0.5]]), layout=ttnn.TILE, device=device)
    ...                  for v in (1.0, 2.0, 3.0, 4.0))
    >>> outs = {op}(grad, a, b, c{args})
    >>> expected = {op}.golden_function(grad.to_torch(), a.to_torch(), b.to_torch(), c.to_torch(){args})
    >>> [torch.allclose(o.to_torch(), e) for o, e in zip(outs, expected)]
    {result}
"""


def _ternary_bw(name: str, fn, wrt: tuple[int, ...], last: str | None = None, example: str = "", result=""):
    """ttnn.<name>(grad_tensor, a, b, c[, last], *, memory_config=None, ...): fn(a, b, c[, last]) differentiated with
    respect to the inputs at positions `wrt` (a number among them gets no gradient: lerp_bw's weight)."""
    op_name = f"ttnn.{name}"

    def gradients(g, inputs: list, params: dict) -> list:
        wanted = [x if i in wrt and isinstance(x, torch.Tensor) else None for i, x in enumerate(inputs)]

        def f(*leaves):
            it = iter(leaves)
            return fn(*[x if w is None else next(it) for x, w in zip(inputs, wanted)], **params)
        leaves = [x for x in wanted if x is not None]
        grads = iter(_autograd(f, g, leaves))
        return [next(grads) if x is not None else None for x in wanted]

    def split(rest: tuple, kwargs: dict) -> dict:
        if last is None:
            return {}
        return {last: rest[0] if rest else kwargs.pop(last)}

    def golden(grad_tensor, a, b, c, *rest, **kwargs):
        return [g for g in gradients(grad_tensor, [a, b, c], split(rest, kwargs)) if g is not None]

    def op(grad_tensor: Tensor, a: Tensor, b: Tensor, c, *rest, memory_config=None, are_required_outputs=None,
           input_a_grad=None, input_b_grad=None, **kwargs) -> list:
        params = split(rest, kwargs)
        if kwargs:
            check_tt_nn_only(op_name, kwargs)
        device_inputs(op_name, grad_tensor, a, b, c)
        inputs = [values(x, op_name).float() if isinstance(x, Tensor) else x for x in (a, b, c)]
        grads = gradients(values(grad_tensor, op_name).float(), inputs, params)
        pairs = [(gr, like) for gr, like in zip(grads, (a, b, c)) if gr is not None and isinstance(like, Tensor)]
        required = list(are_required_outputs) if are_required_outputs is not None else [True] * len(pairs)
        targets = [input_a_grad, input_b_grad, None]
        return [_grad_output(gr, like, grad_tensor, target, op_name, memory_config) if want else None
                for (gr, like), target, want in zip(pairs, targets, required)]

    op.__doc__ = (f"The gradients of {name[:-3]} for grad_tensor, one per differentiated input."
                  + _TERNARY_BW_EXAMPLE.format(op=op_name, args=example, result=result))
    return register_op(op_name, golden=golden)(op)


addcmul_bw = _ternary_bw("addcmul_bw", lambda a, b, c, alpha: torch.addcmul(a, b, c, value=alpha), (0, 1, 2),
                         "alpha", ", 0.5", "[True, True, True]")
addcdiv_bw = _ternary_bw("addcdiv_bw", lambda a, b, c, alpha: torch.addcdiv(a, b, c, value=alpha), (0, 1, 2),
                         "alpha", ", 0.5", "[True, True, True]")
# where_bw(grad, condition, a, b): the gradients of a and b; lerp_bw's weight is differentiated only as a tensor
where_bw = _ternary_bw("where_bw", lambda cond, a, b: torch.where(cond != 0, a, b), (1, 2), result="[True, True]")
lerp_bw = _ternary_bw("lerp_bw", torch.lerp, (0, 1, 2), result="[True, True, True]")

__all__ = ["abs_bw", "acos_bw", "acosh_bw", "add_bw", "addalpha_bw", "addcdiv_bw", "addcmul_bw", "asin_bw",
           "asinh_bw", "assign_bw", "atan2_bw", "atan_bw", "atanh_bw", "bias_gelu_bw", "ceil_bw", "celu_bw",
           "clamp_bw", "clip_bw", "concat_bw", "cos_bw", "cosh_bw", "deg2rad_bw", "digamma_bw", "div_bw",
           "div_no_nan_bw", "elu_bw", "erf_bw", "erfc_bw", "erfinv_bw", "exp2_bw", "exp_bw", "expm1_bw", "fill_bw",
           "fill_zero_bw", "floor_bw", "fmod_bw", "frac_bw", "gelu_bw", "hardshrink_bw", "hardsigmoid_bw",
           "hardswish_bw", "hardtanh_bw", "hypot_bw", "i0_bw", "ldexp_bw", "leaky_relu_bw", "lerp_bw", "lgamma_bw",
           "log10_bw", "log1p_bw", "log2_bw", "log_bw", "log_sigmoid_bw", "logaddexp2_bw", "logaddexp_bw", "logit_bw",
           "logiteps_bw", "max_bw", "min_bw", "mul_bw", "multigammaln_bw", "neg_bw", "polygamma_bw", "pow_bw",
           "prod_bw", "rad2deg_bw", "rdiv_bw", "reciprocal_bw", "relu6_bw", "relu_bw", "remainder_bw", "repeat_bw",
           "round_bw", "rpow_bw", "rsqrt_bw", "rsub_bw", "selu_bw", "sigmoid_bw", "sign_bw", "silu_bw", "sin_bw",
           "sinh_bw", "softplus_bw", "softshrink_bw", "softsign_bw", "sqrt_bw", "square_bw", "squared_difference_bw",
           "sub_bw", "subalpha_bw", "tan_bw", "tanh_bw", "tanhshrink_bw", "threshold_bw", "trunc_bw", "where_bw",
           "xlogy_bw"]
