"""TT-NN's complex ops on ttnn.ComplexTensor, each composed of element-wise ops as TT-NN composes it.

    import torch, device_sim as ttnn
    device = ttnn.open_device(device_id=0)
    re, im = (ttnn.from_torch(torch.randn(32, 64), layout=ttnn.TILE, device=device) for _ in range(2))
    z = ttnn.complex_tensor(re, im)
    theta = ttnn.angle(z)                          # ttnn.atan2(im, re)
    [dz] = ttnn.angle_bw(theta, z, memory_config=ttnn.DRAM_MEMORY_CONFIG)   # a ComplexTensor gradient

The sources, at tt-metal's pinned commit (ttnn/cpp/ttnn/operations/eltwise/): complex_unary (real, imag, angle,
is_real, is_imag, conj, polar), complex_binary (add, subtract, multiply, divide), unary.cpp (abs, reciprocal),
complex_unary_backward (real_bw, imag_bw, angle_bw, conj_bw, polar_bw, abs_bw), binary_backward.cpp (add_bw,
sub_bw, mul_bw, div_bw) and unary_backward.cpp (reciprocal_bw). Each runs the same element-wise ops in the same
order, so a capture shows them nested under the op and the device runs their programs. The ops TT-NN overloads for
a ComplexTensor (ttnn.abs, ttnn.add, ttnn.mul_bw, ...) are registered once, with their tensor form; their bodies
hand a ComplexTensor to OVERLOADS (device_sim.complex_tensor's, filled here; complex_tensor.overload).

The golden functions take torch complex tensors, as TT-NN's (ttnn/operations/unary_complex.py,
complex_unary_backward.py): a backward golden gives each gradient as TT-NN's tests compare it, the real and
imaginary parts side by side in the last dim (torch.cat((g.real, g.imag), -1)).
"""

from __future__ import annotations

import torch

from device_sim.complex_tensor import OVERLOADS, ComplexTensor
from device_sim.ops import creation, eltwise
from device_sim.program_configs import UnaryOpType, UnaryWithParam
from device_sim.registry import OWN_NAME, Trait, register_op
from device_sim.tensor import Tensor


def _complex(op_name: str, *values) -> None:
    for v in values:
        if not isinstance(v, ComplexTensor):
            raise TypeError(f"{op_name} takes a ttnn.ComplexTensor, got {type(v).__name__}; make one with "
                            f"ttnn.complex_tensor(real, imag)")


# -- the overloads: ComplexTensor forms of ops registered for tensors ----------------------------------------------

def add(a: ComplexTensor, b: ComplexTensor, memory_config=None) -> ComplexTensor:
    return ComplexTensor((eltwise.add(a[0], b[0], memory_config=memory_config),
                          eltwise.add(a[1], b[1], memory_config=memory_config)))


def subtract(a: ComplexTensor, b: ComplexTensor, memory_config=None) -> ComplexTensor:
    return ComplexTensor((eltwise.subtract(a[0], b[0], memory_config=memory_config),
                          eltwise.subtract(a[1], b[1], memory_config=memory_config)))


def multiply(ab: ComplexTensor, cd: ComplexTensor, memory_config=None) -> ComplexTensor:
    """(a + ib)(c + id) = (ac - bd) + i(bc + ad)."""
    mc = memory_config
    re = eltwise.subtract(eltwise.multiply(ab[0], cd[0], memory_config=mc),
                          eltwise.multiply(ab[1], cd[1], memory_config=mc), memory_config=mc)
    im = eltwise.add(eltwise.multiply(ab[0], cd[1], memory_config=mc),
                     eltwise.multiply(ab[1], cd[0], memory_config=mc), memory_config=mc)
    return ComplexTensor((re, im))


def divide(a: ComplexTensor, b: ComplexTensor, memory_config=None) -> ComplexTensor:
    return multiply(a, reciprocal(b, memory_config), memory_config)


def abs(x: ComplexTensor, memory_config=None) -> Tensor:  # noqa: A001  (TT-NN's name)
    return eltwise.hypot(x[0], x[1], memory_config=memory_config)


def reciprocal(x: ComplexTensor, memory_config=None) -> ComplexTensor:
    """conj(x) / |x|^2. TT-NN's unary.cpp also computes re + im and re - im first and never reads them: they are
    run here too, as the device runs them."""
    mc = memory_config
    eltwise.add(x[0], x[1], memory_config=mc)
    eltwise.subtract(x[0], x[1], memory_config=mc)
    inv = eltwise.reciprocal(eltwise.add(eltwise.square(x[0], memory_config=mc),
                                         eltwise.square(x[1], memory_config=mc), memory_config=mc), memory_config=mc)
    return ComplexTensor((eltwise.multiply(x[0], inv, memory_config=mc),
                          eltwise.multiply(eltwise.neg(x[1], memory_config=mc), inv, memory_config=mc)))


def _conj(x: ComplexTensor, mc) -> ComplexTensor:
    return ComplexTensor((x[0], eltwise.neg(x[1], memory_config=mc)))


def _where_zero(zero: Tensor, fill: float, x: ComplexTensor, mc) -> ComplexTensor:
    """x with `fill` where `zero` is 1.0 (TT-NN's where(condition, fill, part) on each part)."""
    return ComplexTensor(tuple(eltwise.where(zero, fill, part, memory_config=mc) for part in x))


def _both_zero(x: ComplexTensor, mc) -> Tensor:
    return eltwise.logical_and(eltwise.eqz(x[0], memory_config=mc), eltwise.eqz(x[1], memory_config=mc),
                               memory_config=mc)


def abs_bw(grad: Tensor, x: ComplexTensor, memory_config=None) -> list:
    """grad * x / |x|, 0 where |x| is 0 (complex_unary_backward_op.cpp's _complex_abs_bw)."""
    mc = memory_config
    r = abs(x, mc)
    inv, zero = eltwise.reciprocal(r, memory_config=mc), eltwise.eqz(r, memory_config=mc)
    parts = (eltwise.multiply(grad, eltwise.multiply(part, inv, memory_config=mc), memory_config=mc) for part in x)
    return [_where_zero(zero, 0.0, ComplexTensor(tuple(parts)), mc)]


def reciprocal_bw(grad: ComplexTensor, x: ComplexTensor, memory_config=None) -> list:
    """-grad * conj(1/x^2), NaN where x is 0 (unary_backward.cpp)."""
    mc = memory_config
    zero = _both_zero(x, mc)
    neg_grad = ComplexTensor(tuple(eltwise.neg(part, memory_config=mc) for part in grad))
    recip = reciprocal(x, mc)
    g = multiply(neg_grad, _conj(multiply(recip, recip, mc), mc), mc)
    return [_where_zero(zero, float("nan"), g, mc)]


def add_bw(grad: ComplexTensor, a: ComplexTensor, b: ComplexTensor, alpha: float = 1.0, memory_config=None) -> list:
    """[grad, alpha * grad] (binary_backward.cpp)."""
    return [grad, ComplexTensor(tuple(eltwise.multiply(part, alpha, memory_config=memory_config) for part in grad))]


def sub_bw(grad: ComplexTensor, a: ComplexTensor, b: ComplexTensor, alpha: float = 1.0, memory_config=None) -> list:
    """[grad, -alpha * grad]: TT-NN's unary_chain of NEG then MUL_UNARY_SFPU(alpha) on each part."""
    chain = [UnaryWithParam(UnaryOpType.NEG), UnaryWithParam(UnaryOpType.MUL_UNARY_SFPU, alpha)]
    return [grad, ComplexTensor(tuple(eltwise.unary_chain(part, chain, memory_config=memory_config)
                                      for part in grad))]


def mul_bw(grad: ComplexTensor, a: ComplexTensor, b: ComplexTensor, memory_config=None) -> list:
    """[grad * conj(b), grad * conj(a)]."""
    mc = memory_config
    return [multiply(grad, _conj(b, mc), mc), multiply(grad, _conj(a, mc), mc)]


def div_bw(grad: ComplexTensor, a: ComplexTensor, b: ComplexTensor, memory_config=None) -> list:
    """[grad / conj(b), -grad * conj(a / b / b)], NaN where b is 0."""
    mc = memory_config
    zero = _both_zero(b, mc)
    grad_a = _where_zero(zero, float("nan"), divide(grad, _conj(b, mc), mc), mc)
    neg_grad = ComplexTensor(tuple(eltwise.neg(part, memory_config=mc) for part in grad))
    grad_b = multiply(neg_grad, _conj(divide(divide(a, b, mc), b, mc), mc), mc)
    return [grad_a, _where_zero(zero, float("nan"), grad_b, mc)]


# The ops registered for tensors whose bodies take a ComplexTensor here (complex_tensor.overload reads OVERLOADS,
# its table, which this module fills)
OVERLOADS.update({
    "ttnn.add": add, "ttnn.sub": subtract, "ttnn.mul": multiply, "ttnn.divide": divide, "ttnn.abs": abs,
    "ttnn.reciprocal": reciprocal, "ttnn.abs_bw": abs_bw, "ttnn.reciprocal_bw": reciprocal_bw,
    "ttnn.add_bw": add_bw, "ttnn.sub_bw": sub_bw, "ttnn.mul_bw": mul_bw, "ttnn.div_bw": div_bw,
})


# -- complex_unary: ops of a ComplexTensor ------------------------------------------------------------------------

_EXAMPLE = """

    >>> z = ttnn.complex_tensor(*(ttnn.from_torch(torch.tensor([[v, 0.0, -2.0]]), layout=ttnn.TILE, device=device)
    ...                           for v in (3.0, 4.0)))
    >>> want = {op}.golden_function(torch.complex(z.real.to_torch().float(), z.imag.to_torch().float()))
"""


def _example(op):
    """The op's docstring with its example: the op on a small ComplexTensor against its own golden function."""
    name = f"ttnn.{op.__name__}"
    check = (f"    >>> got = {name}(z)\n    >>> torch.allclose(torch.complex(got.real.to_torch().float(), "
             f"got.imag.to_torch().float()), want)\n    True\n" if op.__name__ in ("conj", "polar") else
             f"    >>> torch.allclose({name}(z).to_torch().float(), want.float(), atol=1e-2)\n    True\n")
    op.__doc__ = (op.__doc__ or f"{name} of a ttnn.ComplexTensor (complex_unary_op.cpp).") + _EXAMPLE.format(
        op=name) + check
    return op


def _golden_of(fn):
    return lambda input_tensor, *_, **__: fn(input_tensor)


@register_op("ttnn.real", kind="free", traits={Trait.VIEW}, golden=_golden_of(torch.real))
@_example
def real(input_tensor: ComplexTensor, *, memory_config=None, op_name: str = OWN_NAME) -> Tensor:
    _complex(op_name, input_tensor)
    return input_tensor.real  # TT-NN returns the part itself


@register_op("ttnn.imag", kind="free", traits={Trait.VIEW}, golden=_golden_of(torch.imag))
@_example
def imag(input_tensor: ComplexTensor, *, memory_config=None, op_name: str = OWN_NAME) -> Tensor:
    _complex(op_name, input_tensor)
    return input_tensor.imag


@register_op("ttnn.angle", kind="binary", golden=_golden_of(torch.angle))
@_example
def angle(input_tensor: ComplexTensor, *, memory_config=None, op_name: str = OWN_NAME) -> Tensor:
    _complex(op_name, input_tensor)
    return eltwise.atan2(input_tensor.imag, input_tensor.real, memory_config=memory_config)


# torch has no is_imag (TT-NN's golden calls it); the real part being 0, as the op computes it
@register_op("ttnn.is_imag", golden=_golden_of(lambda z: z.real == 0))
@_example
def is_imag(input_tensor: ComplexTensor, *, memory_config=None, op_name: str = OWN_NAME) -> Tensor:
    _complex(op_name, input_tensor)
    return eltwise.eqz(input_tensor.real, memory_config=memory_config)


@register_op("ttnn.is_real", golden=_golden_of(lambda z: z.imag == 0))
@_example
def is_real(input_tensor: ComplexTensor, *, memory_config=None, op_name: str = OWN_NAME) -> Tensor:
    _complex(op_name, input_tensor)
    return eltwise.eqz(input_tensor.imag, memory_config=memory_config)


@register_op("ttnn.conj", golden=_golden_of(lambda z: torch.conj(z).resolve_conj()))
@_example
def conj(input_tensor: ComplexTensor, *, memory_config=None, op_name: str = OWN_NAME) -> ComplexTensor:
    _complex(op_name, input_tensor)
    return _conj(input_tensor, memory_config)


# TT-NN's golden calls torch.polar(z), which takes two tensors: the magnitude in the real part, the angle in the imag
@register_op("ttnn.polar", kind="binary", golden=_golden_of(lambda z: torch.polar(z.real, z.imag)))
@_example
def polar(input_tensor: ComplexTensor, *, memory_config=None, op_name: str = OWN_NAME) -> ComplexTensor:
    """The real part taken as a magnitude and the imaginary part as an angle: r cos(theta) + i r sin(theta)."""
    _complex(op_name, input_tensor)
    mc, (r, theta) = memory_config, input_tensor
    return ComplexTensor((eltwise.multiply(r, eltwise.cos(theta, memory_config=mc), memory_config=mc),
                          eltwise.multiply(r, eltwise.sin(theta, memory_config=mc), memory_config=mc)))


# -- complex_unary_backward ------------------------------------------------------------------------------------------

_BW_EXAMPLE = """

    >>> z = ttnn.complex_tensor(*(ttnn.from_torch(torch.tensor([[v, 1.0]]), layout=ttnn.TILE, device=device)
    ...                           for v in (3.0, 4.0)))
    >>> grad = {grad}
    >>> [dz] = {op}(grad, z, memory_config=ttnn.DRAM_MEMORY_CONFIG)
    >>> want = {op}.golden_function({torch_grad}, torch.complex(z.real.to_torch().float(), z.imag.to_torch().float()))
    >>> torch.allclose(torch.cat((dz.real.to_torch(), dz.imag.to_torch()), -1).float(), want[0], atol=0.05)
    True
"""


def _bw_example(op):
    """The op's docstring with its example: the op against its own golden function."""
    complex_grad = op.__name__ in ("conj_bw", "polar_bw")
    op.__doc__ = (f"The gradient of {op.__name__[:-3]} for grad_tensor, as a one-ComplexTensor list: {op.__doc__}"
                  + _BW_EXAMPLE.format(
                      op=f"ttnn.{op.__name__}",
                      grad="ttnn.complex_tensor(z.imag, z.real)" if complex_grad else "z.imag",
                      torch_grad=("torch.complex(z.imag.to_torch().float(), z.real.to_torch().float())"
                                  if complex_grad else "z.imag.to_torch().float()")))
    return op


def _bw_golden(fn):
    """TT-NN's golden: autograd of fn at the complex input, each gradient as [real | imag] in the last dim."""
    def golden(grad_tensor, input_tensor, *_, **__):
        z = input_tensor.detach().clone().requires_grad_(True)
        with torch.enable_grad():
            fn(z).backward(gradient=grad_tensor)
        return [torch.cat((z.grad.real, z.grad.imag), dim=-1)]
    return golden


def _bw_checked(op_name: str, grad, input_tensor, grad_is_complex: bool) -> None:
    _complex(op_name, input_tensor)
    if grad_is_complex:
        _complex(op_name, grad)
    elif not isinstance(grad, Tensor):
        raise TypeError(f"{op_name}: grad_tensor is a ttnn tensor (the gradient of a real result), got "
                        f"{type(grad).__name__}")


@register_op("ttnn.real_bw", golden=_bw_golden(torch.real))
@_bw_example
def real_bw(grad_tensor: Tensor, input_tensor: ComplexTensor, *, memory_config, op_name: str = OWN_NAME):
    """[grad + i0]."""
    _bw_checked(op_name, grad_tensor, input_tensor, False)
    zeros = creation.zeros_like(input_tensor.real, memory_config=memory_config)
    return [ComplexTensor((grad_tensor, zeros))]


@register_op("ttnn.imag_bw", golden=_bw_golden(torch.imag))
@_bw_example
def imag_bw(grad_tensor: Tensor, input_tensor: ComplexTensor, *, memory_config, op_name: str = OWN_NAME):
    """[0 + i grad]."""
    _bw_checked(op_name, grad_tensor, input_tensor, False)
    zeros = creation.zeros_like(input_tensor.real, memory_config=memory_config)
    return [ComplexTensor((zeros, grad_tensor))]


@register_op("ttnn.angle_bw", golden=_bw_golden(torch.angle))
@_bw_example
def angle_bw(grad_tensor: Tensor, input_tensor: ComplexTensor, *, memory_config, op_name: str = OWN_NAME):
    """grad * (-im + i re) / |z|^2, 0 where z is 0."""
    _bw_checked(op_name, grad_tensor, input_tensor, False)
    mc, (re, im) = memory_config, input_tensor
    zero = _both_zero(input_tensor, mc)
    inv = eltwise.reciprocal(eltwise.add(eltwise.square(re, memory_config=mc), eltwise.square(im, memory_config=mc),
                                         memory_config=mc), memory_config=mc)
    parts = (eltwise.multiply(grad_tensor, eltwise.multiply(eltwise.neg(im, memory_config=mc), inv, memory_config=mc),
                              memory_config=mc),
             eltwise.multiply(grad_tensor, eltwise.multiply(re, inv, memory_config=mc), memory_config=mc))
    return [_where_zero(zero, 0.0, ComplexTensor(parts), mc)]


@register_op("ttnn.conj_bw", golden=_bw_golden(lambda z: torch.conj(z).resolve_conj()))
@_bw_example
def conj_bw(grad_tensor: ComplexTensor, input_tensor: ComplexTensor, *, memory_config,
            op_name: str = OWN_NAME):
    """[conj(grad)]."""
    _bw_checked(op_name, grad_tensor, input_tensor, True)
    return [_conj(grad_tensor, memory_config)]


@register_op("ttnn.polar_bw", kind="binary", golden=_bw_golden(lambda z: torch.polar(z.real, z.imag)))
@_bw_example
def polar_bw(grad_tensor: ComplexTensor, input_tensor: ComplexTensor, *, memory_config,
             op_name: str = OWN_NAME):
    """[Re(conj(grad) sgn(p)) + i Re(conj(grad) p i)] for p = polar(input): the gradients of the magnitude and the
    angle, as _polar_bw composes them."""
    _bw_checked(op_name, grad_tensor, input_tensor, True)
    mc = memory_config
    p = polar(input_tensor, memory_config=mc)
    r = abs(p, mc)
    zero, inv = eltwise.eqz(r, memory_config=mc), eltwise.reciprocal(r, memory_config=mc)
    sgn = _where_zero(zero, 0.0, ComplexTensor(tuple(eltwise.multiply(part, inv, memory_config=mc) for part in p)), mc)
    grad_abs = multiply(_conj(grad_tensor, mc), sgn, mc).real
    flip = ComplexTensor((creation.zeros_like(input_tensor.real, memory_config=mc),
                          creation.ones_like(input_tensor.imag)))
    grad_angle = multiply(_conj(grad_tensor, mc), multiply(p, flip, mc), mc).real
    return [ComplexTensor((grad_abs, grad_angle))]


