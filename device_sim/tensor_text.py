"""A tensor as TT-NN prints it: `print(t)` shows the same text on device_sim as on hardware.

    >>> import torch, device_sim as ttnn
    >>> print(ttnn.from_torch(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), dtype=ttnn.bfloat16))
    ttnn.Tensor([[ 1.0000,  2.0000],
                 [ 3.0000,  4.0000]], shape=Shape([2, 2]), dtype=DataType::BFLOAT16, layout=Layout::ROW_MAJOR)

The rules are TT-NN's default print options (ttnn/cpp/ttnn/tensor/tensor_impl.cpp, `to_string`):
the "short" profile shows at most 4 entries per dim (2 from each end around `...,`); floats are
fixed with 4 decimals in 7 columns, or scientific in 11 when the nonzero finite magnitudes span
more than 1000x, exceed 1e8 or go below 1e-4; integers take 5 columns. Nested rows are indented
under the opening bracket, and dims above the last two are separated by a blank line.
"""

from __future__ import annotations

import math

import torch

from device_sim.types import DataType, Layout

_OPEN = "ttnn.Tensor("
_SHORT = 4  # entries per dim in the "short" profile
_PRECISION = 4


def tensor_text(value: torch.Tensor | None, dtype: DataType, layout: Layout) -> str:
    if value is None:  # deallocated: TT-NN's text for a tensor without a buffer
        return f"{_OPEN}<buffer is not allocated>, dtype=DataType::{dtype.name}, layout=Layout::{layout.name})"
    shape = list(value.shape)
    flat = value.reshape(-1).tolist()
    fmt = _datum_format(flat, value.is_floating_point())
    out: list[str] = [_OPEN]
    _rows(out, flat, shape, fmt, offset=0, rank=len(shape), dim=0, outer_index=0)
    out.append(f", shape=Shape({shape}), dtype=DataType::{dtype.name}, layout=Layout::{layout.name})")
    return "".join(out)


def _datum_format(flat: list, is_float: bool) -> str:
    if not is_float:
        return "{:5d}"
    mags = [abs(v) for v in flat if v != 0 and math.isfinite(v)]
    if mags and (max(mags) / min(mags) > 1000.0 or max(mags) > 1.0e8 or min(mags) < 1.0e-4):
        return f"{{:{_PRECISION + 7}.{_PRECISION}e}}"
    return f"{{:{_PRECISION + 3}.{_PRECISION}f}}"


def _rows(out: list, flat: list, shape: list, fmt: str, *, offset: int, rank: int, dim: int, outer_index: int):
    spaces = " " * (len(_OPEN) + dim)
    if rank == 1:
        before, after = " ", " "
    else:
        before, after = spaces + " ", "\n" if rank == 2 else "\n\n"
    if dim > 0 and outer_index > 0:
        out.append(spaces)
    if rank == 0:
        out.append(fmt.format(flat[offset]))
        return
    out.append("[")
    size = shape[-rank]
    stride = math.prod(shape[len(shape) - rank + 1:])
    after_comma = " " if rank == 1 else "\n" if rank == 2 else after
    index = 0
    while index < size:
        if size > _SHORT and index == _SHORT // 2:
            out.append(f"{before}...,{after}")
            index = size - _SHORT // 2
        if rank > 1:
            _rows(out, flat, shape, fmt, offset=offset + index * stride, rank=rank - 1, dim=dim + 1,
                  outer_index=index)
        else:
            out.append(fmt.format(flat[offset + index]))
        if index < size - 1:
            out.append("," + after_comma)
        index += 1
    out.append("]")
