"""ttnn.ComplexTensor: a complex tensor as TT-NN holds one, its real and imaginary parts two tensors of one shape.

    import torch, device_sim as ttnn
    device = ttnn.open_device(device_id=0)
    re, im = (ttnn.from_torch(torch.randn(32, 64), layout=ttnn.TILE, device=device) for _ in range(2))
    z = ttnn.complex_tensor(re, im)       # z.real is re, z[1] is im
    r = ttnn.abs(z)                       # |z|, a tensor: ttnn.hypot(re, im), as TT-NN composes it
    w = ttnn.multiply(z, ttnn.conj(z))    # a ComplexTensor

TT-NN's struct (ttnn/operations/eltwise/complex/complex.hpp) and its binding: built from a (real, imag) pair, with
`real`, `imag`, `[0]` / `[1]` and `deallocate()`. The ops that take one are TT-NN's composites of element-wise ops,
in device_sim.ops.complex; the ops TT-NN overloads for it (abs, reciprocal, add, subtract, multiply, divide and
their backward ops) hand a ComplexTensor to `overload(op_name)`, which finds the form ops.complex put in OVERLOADS.
"""

from __future__ import annotations

from collections.abc import Callable

from device_sim.tensor import Tensor


class ComplexTensor:
    """A (real, imag) pair of tensors of one shape: `ComplexTensor((re, im))`, as TT-NN's binding builds one."""

    __slots__ = ("_parts",)

    def __init__(self, real_imag):
        real, imag = real_imag
        self._parts = (real, imag)

    @property
    def real(self) -> Tensor:
        return self._parts[0]

    @property
    def imag(self) -> Tensor:
        return self._parts[1]

    def __getitem__(self, index: int) -> Tensor:
        return self._parts[index]  # 0 the real part, 1 the imaginary part (TT-NN's operator[])

    def deallocate(self) -> None:
        for part in self._parts:
            part.deallocate()

    def __repr__(self) -> str:
        # by tensor id, not values: a report keeps an argument's text, and two tensors' values were ~1 KB of it
        return f"ComplexTensor(real=tensor {self.real.tensor_id}, imag=tensor {self.imag.tensor_id})"


def complex_tensor(real: Tensor, imag: Tensor) -> ComplexTensor:
    """The complex tensor real + i imag (TT-NN's complex_tensor: the two parts as they are, no copy).

    >>> import torch, device_sim as ttnn
    >>> z = ttnn.complex_tensor(ttnn.from_torch(torch.ones(2, 2)), ttnn.from_torch(torch.zeros(2, 2)))
    >>> z.real.shape == z.imag.shape
    True
    """
    if not isinstance(real, Tensor) or not isinstance(imag, Tensor):
        raise TypeError(f"ttnn.complex_tensor takes two ttnn tensors (real, imag), got {type(real).__name__} and "
                        f"{type(imag).__name__}; convert them with ttnn.from_torch(t.real), ttnn.from_torch(t.imag)")
    if tuple(real.padded_shape) != tuple(imag.padded_shape):  # complex.cpp's TT_ASSERT
        raise ValueError(f"ttnn.complex_tensor: real has shape {list(real.shape)} and imag {list(imag.shape)}; "
                         f"Tensor shapes of real and imag should be identical")
    return ComplexTensor((real, imag))


# The ops registered for tensors whose bodies take a ComplexTensor (TT-NN's name -> its complex form): filled by
# device_sim.ops.complex, which composes those forms of the element-wise ops that call overload(), as it is imported
# (importing device_sim imports it), so that this floor under the ops imports none of them.
OVERLOADS: dict[str, Callable] = {}


def overload(op_name: str):
    """The ComplexTensor form of `op_name` (ttnn.abs, ttnn.add, ttnn.mul_bw, ...) that TT-NN binds beside the tensor
    one; a TypeError for an op TT-NN does not overload."""
    fn = OVERLOADS.get(op_name)
    if fn is None:
        raise TypeError(f"{op_name} takes no ttnn.ComplexTensor (TT-NN's complex forms: "
                        f"{', '.join(sorted(OVERLOADS))}); call it on z.real and z.imag")
    return fn
