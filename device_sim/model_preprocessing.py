"""`ttnn.model_preprocessing`: torch weights into the shapes ttnn.linear takes.

These are conversions, not device ops: the one op each runs (from_torch) is what a profiler sees.
"""

from __future__ import annotations

import torch

from device_sim.ops.core import from_torch
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout


def preprocess_linear_weight(weight: torch.Tensor, *, dtype: DataType, layout: Layout = Layout.TILE) -> Tensor:
    """torch.nn.Linear's [out, in] weight as the [in, out] host tensor that ttnn.linear multiplies by."""
    if weight.dim() != 2:
        raise ValueError(f"preprocess_linear_weight: weight shape {list(weight.shape)} must be [out, in]")
    return from_torch(weight.T.contiguous(), dtype=dtype, layout=layout)


def preprocess_linear_bias(bias: torch.Tensor, *, dtype: DataType, layout: Layout = Layout.TILE) -> Tensor:
    """torch.nn.Linear's [out] bias as the [1, out] host tensor that ttnn.linear adds."""
    return from_torch(bias.reshape(1, -1), dtype=dtype, layout=layout)
