"""Reductions with TT-NN's keywords (sum's scalar=) and the along-one-dim ones: prod, cumsum, topk."""

from __future__ import annotations

import pytest
import torch

import device_sim as ttnn


def rnd(*shape, seed=0):
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)) * 4 - 2


def dev(t, device, dtype=ttnn.bfloat16, layout=ttnn.TILE, **kw):
    return ttnn.from_torch(t, dtype=dtype, layout=layout, device=device, **kw)


def test_sum_takes_dim_keepdim_and_a_scalar_that_scales_the_input(device):
    t = dev(rnd(2, 32, 64), device)
    out = ttnn.sum(t, dim=-1, keepdim=True, scalar=0.5)
    want = (t.value.float() * 0.5).sum(-1, keepdim=True)
    assert out.shape == (2, 32, 1)
    torch.testing.assert_close(out.value.float(), want.bfloat16().float())
    assert torch.equal(ttnn.mean(t, 1, True, scalar=2.0).value, (t.value.float() * 2).mean(1, keepdim=True).bfloat16())


def test_prod_multiplies_over_one_dim_or_all(device):
    v = rnd(2, 4, 8) / 2 + 1
    t = dev(v, device, dtype=ttnn.float32)
    torch.testing.assert_close(ttnn.prod(t, dim=1).value, t.value.prod(1))
    assert ttnn.prod(t, keepdim=True).shape == (1, 1, 1)
    with pytest.raises(ValueError, match=r"ttnn.prod multiplies over one dim"):
        ttnn.prod(t, dim=[0, 1])


def test_cumsum_runs_forward_or_in_reverse_and_casts_first(device):
    t = dev(rnd(2, 32, 64), device, dtype=ttnn.float32)
    torch.testing.assert_close(ttnn.cumsum(t, 2).value, t.value.cumsum(2))
    torch.testing.assert_close(ttnn.cumsum(t, dim=1, reverse_order=True).value, t.value.flip(1).cumsum(1).flip(1))
    out = ttnn.cumsum(t, 0, dtype=ttnn.bfloat16)
    assert out.dtype == ttnn.bfloat16
    torch.testing.assert_close(out.value, t.value.bfloat16().float().cumsum(0).bfloat16())
    with pytest.raises(RuntimeError, match=r"accumulation axis is 3, while the input tensor has rank 3"):  # TT_FATAL
        ttnn.cumsum(t, 3)


def test_topk_gives_sorted_values_and_uint16_indices(device):
    t = dev(rnd(2, 32, 64), device)
    values, indices = ttnn.topk(t, k=5, dim=-1)
    ref = torch.topk(t.value.float(), 5, dim=-1)
    assert torch.equal(values.value.float(), ref.values)
    assert (indices.dtype, indices.shape) == (ttnn.uint16, (2, 32, 5))
    assert torch.equal(torch.gather(t.value, -1, indices.value.long()), values.value)
    smallest, _ = ttnn.topk(t, 3, 1, largest=False)
    assert torch.equal(smallest.value.float(), torch.topk(t.value.float(), 3, 1, largest=False).values)


def test_topk_reads_given_indices_at_the_chosen_positions(device):
    v = rnd(1, 32, 64)
    ids = torch.arange(64).flip(0).expand(1, 32, 64) + 1000
    values, indices = ttnn.topk(dev(v, device), 4, indices_tensor=dev(ids, device, dtype=ttnn.uint32))
    # Ties (bfloat16 has few values) go to the earlier position, as a stable sort orders them.
    positions = torch.sort(v.bfloat16().float(), descending=True, stable=True).indices[..., :4]
    assert indices.dtype == ttnn.uint32 and torch.equal(indices.value, torch.gather(ids, -1, positions))
    with pytest.raises(ValueError, match=r"k=65 along dim -1 does not fit shape \[1, 32, 64\]"):
        ttnn.topk(dev(v, device), 65)
