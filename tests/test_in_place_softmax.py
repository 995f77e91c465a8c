"""softmax_in_place and scale_mask_softmax_in_place write over their input, as TT-NN's kernels do."""

from __future__ import annotations

import pytest
import torch

import device_sim as ttnn


def dev(t, device, dtype=ttnn.bfloat16):
    return ttnn.from_torch(t, dtype=dtype, layout=ttnn.TILE, device=device)


def test_softmax_in_place_overwrites_and_returns_its_input(device):
    v = torch.randn(2, 4, 32, 64, generator=torch.Generator().manual_seed(0))
    t = dev(v, device)
    tensor_id, address, before = t.tensor_id, t.buffer_address(), t.value.float()
    out = ttnn.softmax_in_place(t)
    assert out is t and (t.tensor_id, t.buffer_address()) == (tensor_id, address)
    torch.testing.assert_close(t.value.float(), torch.softmax(before, -1).bfloat16().float())


def test_scale_mask_softmax_in_place_scales_adds_the_mask_then_normalises(device):
    g = torch.Generator().manual_seed(1)
    v, mask = torch.randn(2, 4, 32, 32, generator=g), torch.where(torch.rand(2, 1, 1, 32, generator=g) > 0.5, 0.0, -1e4)
    t, m = dev(v, device), dev(mask, device)
    before = t.value.float()
    ttnn.scale_mask_softmax_in_place(t, 0.125, m)
    want = torch.softmax(before * 0.125 + m.value.float(), -1)
    torch.testing.assert_close(t.value.float(), want.bfloat16().float())
    assert float(t.value.float()[0, 0, 0][mask[0, 0, 0] < 0].max()) == 0.0  # masked columns get nothing
    with pytest.raises(ValueError, match=r"mask of shape \[1, 1, 1, 16\] does not broadcast"):
        ttnn.scale_mask_softmax_in_place(t, 1.0, dev(torch.zeros(1, 1, 1, 16), device))
