"""`ttnn.pearson_correlation_coefficient(expected, actual)`: TT-NN's host-side PCC (ttnn/operations/comparison.py),
which tt-metal's unit tests assert on.

    import torch, device_sim as ttnn
    ttnn.pearson_correlation_coefficient(torch.arange(4.0), torch.arange(4.0) * 2)   # 1.0

It follows TT-NN's rules: a ttnn tensor is read back first; both all-NaN is 1.0, one all-NaN 0.0; one all-zero
and the other not is 0.0; NaN and inf count as 0; equal tensors are 1.0; otherwise numpy's masked corrcoef of the
flattened values (1.0 when it is undefined, as for a constant tensor). ttreport's metrics (DESIGN.md, "Tensor
comparison") are the project's own comparison; this one is TT-NN's, kept for its tests.
"""

from __future__ import annotations

import numpy as np
import torch

from device_sim.ops import to_torch
from device_sim.tensor import Tensor


def _finite_or_zero(t: torch.Tensor) -> torch.Tensor:
    t = t.clone()
    t[torch.isnan(t) | torch.isinf(t)] = 0
    return t


def pearson_correlation_coefficient(expected, actual) -> float:
    if isinstance(actual, Tensor):
        actual = to_torch(actual)
    if not isinstance(expected, torch.Tensor):
        raise ValueError("Expected tensor is not a torch.Tensor")
    expected, actual = torch.Tensor(expected), torch.Tensor(actual)
    if expected.dtype != actual.dtype:
        actual = actual.type(expected.dtype)
    nan_e, nan_a = bool(torch.all(torch.isnan(expected))), bool(torch.all(torch.isnan(actual)))
    if nan_e and nan_a:
        return 1.0
    if nan_e or nan_a:
        return 0.0
    if bool(torch.any(expected.bool())) != bool(torch.any(actual.bool())):
        return 0.0  # one all zero, the other not
    expected, actual = _finite_or_zero(expected), _finite_or_zero(actual)
    if torch.equal(expected, actual):
        return 1.0
    if expected.dtype == torch.bfloat16:
        expected, actual = expected.float(), actual.float()
    out = np.min(np.ma.corrcoef(np.ma.masked_invalid(torch.squeeze(expected).detach().numpy()).flatten(),
                                np.ma.masked_invalid(torch.squeeze(actual).detach().numpy()).flatten()))
    return 1.0 if isinstance(out, np.ma.core.MaskedConstant) else out


__all__ = ["pearson_correlation_coefficient"]
