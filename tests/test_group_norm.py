"""ttnn.group_norm on channels-last activations, with weights and masks laid out as TT-NN's helpers make them."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import device_sim as ttnn


def rnd(*shape, seed=0):
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)) * 4 - 2


def dev(t, device, dtype=ttnn.float32, layout=ttnn.TILE):
    return ttnn.from_torch(t, dtype=dtype, layout=layout, device=device)


def torch_group_norm(x, groups, weight=None, bias=None, eps=1e-5):
    """The reference on channels-first data: [N, 1, HW, C] -> [N, C, HW] and back."""
    N, _, HW, C = x.shape
    y = F.group_norm(x.reshape(N, HW, C).transpose(1, 2), groups, weight, bias, eps=eps)
    return y.transpose(1, 2).reshape(N, 1, HW, C)


@pytest.mark.parametrize(("channels", "groups", "cores"), [(64, 8, 1), (96, 8, 4), (320, 32, 2)])
def test_group_norm_matches_torch_with_tt_nns_padded_weights_and_mask(device, channels, groups, cores):
    x, g, b = rnd(2, 1, 64, channels), rnd(channels, seed=1), rnd(channels, seed=2)
    out = ttnn.group_norm(
        dev(x, device), num_groups=groups, epsilon=1e-5,
        input_mask=ttnn.to_device(ttnn.create_group_norm_input_mask(channels, groups, cores), device),
        weight=dev(ttnn.create_group_norm_weight_bias_rm(g, channels, cores), device, layout=ttnn.ROW_MAJOR),
        bias=dev(ttnn.create_group_norm_weight_bias_rm(b, channels, cores), device, layout=ttnn.ROW_MAJOR))
    torch.testing.assert_close(out.value, torch_group_norm(x, groups, g, b), rtol=1e-5, atol=1e-5)
    assert (out.shape, out.dtype, out.layout) == ((2, 1, 64, channels), ttnn.float32, ttnn.TILE)


def test_group_norm_takes_plain_weights_and_an_output_layout_and_dtype(device):
    x, g = rnd(1, 1, 32, 64), rnd(64, seed=1)
    out = ttnn.group_norm(dev(x, device), num_groups=4, weight=dev(g, device, layout=ttnn.ROW_MAJOR),
                          epsilon=1e-5, dtype=ttnn.bfloat16, output_layout=ttnn.ROW_MAJOR)
    assert (out.dtype, out.layout) == (ttnn.bfloat16, ttnn.ROW_MAJOR)
    torch.testing.assert_close(out.value.float(), torch_group_norm(x, 4, g).bfloat16().float())


def test_tt_nns_weight_layout_pads_each_core_chunk_to_32(device):
    laid = ttnn.create_group_norm_weight_bias_rm(torch.arange(1.0, 97.0), 96, 4)
    assert laid.shape == (1, 1, 4, 32)
    assert laid[0, 0, 1, :24].tolist() == list(range(25, 49)) and not laid[0, 0, :, 24:].any()


def test_tt_nns_input_mask_marks_each_groups_columns_in_the_tiles_it_spans():
    tensor = ttnn.create_group_norm_input_mask(96, 8, 1)  # 12 channels a group; group 2 spans columns 24..35
    assert (tensor.shape, tensor.dtype, tensor.layout) == ((1, 8, 32, 64), ttnn.bfloat16, ttnn.TILE)
    assert tensor.storage_type() == ttnn.StorageType.HOST
    assert ttnn.create_group_norm_input_mask(96, 8, 1, ttnn.bfloat8_b).dtype == ttnn.bfloat8_b
    mask = tensor.value
    assert mask[0, 2, 0].nonzero().flatten().tolist() == list(range(24, 36))
    assert bool((mask[0, 2] == mask[0, 2, :1]).all())  # every row of the tile alike


def test_group_norm_errors_name_the_channels_and_the_groups(device):
    with pytest.raises(ValueError, match=r"last dim of shape \[1, 1, 32, 60\] holds the channels and must divide "
                                         r"into num_groups=8"):
        ttnn.group_norm(dev(rnd(1, 1, 32, 60), device), num_groups=8)
    with pytest.raises(ValueError, match="weight has 50 values, which is neither the 64 channels"):
        ttnn.group_norm(dev(rnd(1, 1, 32, 64), device), num_groups=8, weight=dev(rnd(50), device))
