"""A tensor as TT-NN prints it: `print(t)` shows the same text on device_sim as on hardware.

    >>> import torch, device_sim as ttnn
    >>> print(ttnn.from_torch(torch.tensor([[1.0, 2.0], [3.0, 4.0]]), dtype=ttnn.bfloat16))
    ttnn.Tensor([[ 1.0000,  2.0000],
                 [ 3.0000,  4.0000]], shape=Shape([2, 2]), dtype=DataType::BFLOAT16, layout=Layout::ROW_MAJOR)

The rules are TT-NN's print options (ttnn/cpp/ttnn/tensor/tensor_impl.cpp, `to_string`; PrintOptions in
tensor_impl.hpp), set by `ttnn.set_printoptions(profile=, sci_mode=, precision=)`: the "short" profile (the
default) shows at most 4 entries per dim (2 from each end around `...,`), "full" every entry, "empty" none (`...`);
floats are fixed with `precision` (4) decimals in precision + 3 columns, or scientific in precision + 7 when
sci_mode is True, or by default when the nonzero finite magnitudes span more than 1000x, exceed 1e8 or go below
1e-4; integers take 5 columns. Nested rows are indented under the opening bracket, and dims above the last two are
separated by a blank line.
"""

from __future__ import annotations

import math

import torch

from device_sim.types import DataType, Layout

_OPEN = "ttnn.Tensor("
_SHORT = 4  # entries per dim in the "short" profile
# TT-NN's TTNN_PRINT_OPTIONS, process-wide as there: PrintOptions' defaults (Short, SciMode::Default, 4)
_OPTIONS = {"profile": "short", "sci_mode": None, "precision": 4}


def set_printoptions(*, profile: str = "short", sci_mode: bool | None = None, precision: int = 4) -> None:
    """ttnn.set_printoptions: how print(tensor) shows values from now on, for the whole process (TT-NN's
    TTNN_PRINT_OPTIONS). profile "short" (4 entries per dim), "full" or "empty"; sci_mode True / False forces
    scientific or fixed notation, None chooses by the values; precision is the decimals shown.

    >>> import device_sim as ttnn
    >>> ttnn.set_printoptions(profile="full", precision=2)
    >>> str(ttnn.from_torch(torch.arange(5.0).reshape(1, 5))).split(", shape")[0]
    'ttnn.Tensor([[ 0.00,  1.00,  2.00,  3.00,  4.00]]'
    >>> ttnn.set_printoptions(profile="short")
    """
    profile = str(profile).lower()
    if profile not in ("short", "full", "empty"):
        raise ValueError(f"set_printoptions: profile {profile!r} is not one of 'short', 'full', 'empty'")
    _OPTIONS.update(profile=profile, sci_mode=None if sci_mode is None else bool(sci_mode), precision=int(precision))


def tensor_text(value: torch.Tensor | None, dtype: DataType, layout: Layout, shape=None) -> str:
    """`shape` names a deallocated tensor's shape (value None)."""
    tail = f"dtype=DataType::{dtype.name}, layout=Layout::{layout.name})"
    if value is None:  # deallocated: TT-NN's text for a tensor without a buffer
        dims = f"shape=Shape({list(shape)}), " if shape is not None else ""
        return f"{_OPEN}<buffer is not allocated>, {dims}{tail}"
    shape = list(value.shape)
    if _OPTIONS["profile"] == "empty":
        return f"{_OPEN}..., shape=Shape({shape}), {tail}"
    fmt = _datum_format(value)
    # Only the entries shown are read out of the tensor (at most 4 per dim in the short profile), so printing a
    # large weight costs about as much as printing a small one.
    shown = value
    short = _OPTIONS["profile"] == "short"
    for d, n in enumerate(shape):
        if short and n > _SHORT:
            keep = torch.tensor([0, 1, n - 2, n - 1])
            shown = shown.index_select(d, keep)
    out: list[str] = [_OPEN]
    _rows(out, shown.reshape(-1).tolist(), list(shown.shape), shape, fmt, offset=0, rank=len(shape), dim=0,
          outer_index=0, short=short)
    out.append(f", shape=Shape({shape}), {tail}")
    return "".join(out)


def _datum_format(value: torch.Tensor) -> str:
    if not value.is_floating_point():
        return "{:5d}"
    precision, sci = _OPTIONS["precision"], _OPTIONS["sci_mode"]
    fixed, scientific = f"{{:{precision + 3}.{precision}f}}", f"{{:{precision + 7}.{precision}e}}"
    if sci is not None:
        return scientific if sci else fixed
    # TT-NN looks at the nonzero finite magnitudes only. One aminmax pass in the tensor's own dtype decides
    # the usual case; zeros, inf or NaN cost a pass or two more (about 1 s for 64M bfloat16 values here).
    mags = value.abs()
    if not mags.numel():
        return fixed
    lo, hi = (m.item() for m in torch.aminmax(mags))
    if not math.isfinite(hi):  # inf or NaN present (NaN spreads through min and max): drop them
        finite = mags.nan_to_num(nan=0.0, posinf=0.0)
        lo, hi = (m.item() for m in torch.aminmax(finite))
        mags = finite
    if lo == 0 and hi > 0:  # zeros do not count: the smallest nonzero magnitude
        lo = mags.masked_fill(mags == 0, math.inf).min().item()
    if hi > 0 and (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4):
        return scientific
    return fixed


def _rows(out: list, flat: list, shown: list, shape: list, fmt: str, *, offset: int, rank: int, dim: int,
          outer_index: int, short: bool):
    """TT-NN's to_string_row_major over the shown entries; `shape` is the full one, `shown` what was kept."""
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
    size, elided = shown[dim], short and shape[dim] > _SHORT
    stride = math.prod(shown[dim + 1:])
    after_comma = " " if rank == 1 else "\n" if rank == 2 else after
    for index in range(size):
        if elided and index == _SHORT // 2:
            out.append(f"{before}...,{after}")
        if rank > 1:
            _rows(out, flat, shown, shape, fmt, offset=offset + index * stride, rank=rank - 1, dim=dim + 1,
                  outer_index=index, short=short)
        else:
            out.append(fmt.format(flat[offset + index]))
        if index < size - 1:
            out.append("," + after_comma)
    out.append("]")
