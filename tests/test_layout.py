"""Layouts: tile padding, padded_shape, round trips through to_layout, and what a page is."""

import pytest
import torch

import device_sim as ttnn


@pytest.mark.parametrize("shape, padded", [
    ((32, 32), (32, 32)),
    ((3, 40), (32, 64)),
    ((1, 1, 33, 65), (1, 1, 64, 96)),
    ((2, 5, 7), (2, 32, 32)),
])
def test_tile_layout_pads_the_last_two_dims_to_32(shape, padded, device):
    t = ttnn.from_torch(torch.randn(shape), layout=ttnn.TILE, device=device)
    assert t.shape == shape and t.padded_shape == padded
    assert repr(t.padded_shape) == f"Shape({list(padded)})"
    rm = ttnn.from_torch(torch.randn(shape), layout=ttnn.ROW_MAJOR, device=device)
    assert rm.padded_shape == rm.shape == shape


@pytest.mark.parametrize("shape", [(3, 40), (1, 2, 33, 65), (64, 64)])
@pytest.mark.parametrize("dtype", [ttnn.bfloat16, ttnn.float32, ttnn.int32])
def test_to_layout_round_trip_keeps_shape_and_values(shape, dtype, device):
    x = torch.randint(-100, 100, shape).float()
    rm = ttnn.from_torch(x, dtype=dtype, layout=ttnn.ROW_MAJOR, device=device)
    tiled = ttnn.to_layout(rm, ttnn.TILE)
    back = tiled.to_layout(ttnn.ROW_MAJOR)
    assert (tiled.layout, back.layout) == (ttnn.TILE, ttnn.ROW_MAJOR)
    assert tiled.shape == back.shape == shape
    assert torch.equal(back.to_torch().float(), x)
    assert torch.equal(tiled.to_torch().float(), x)  # padding never shows in the values


def test_to_layout_to_the_same_layout_is_the_same_tensor(device):
    t = ttnn.from_torch(torch.randn(32, 32), layout=ttnn.TILE, device=device)
    assert ttnn.to_layout(t, ttnn.TILE) is t


@pytest.mark.parametrize("dtype, page_size", [
    (ttnn.bfloat16, 2048), (ttnn.float32, 4096), (ttnn.bfloat8_b, 1088), (ttnn.bfloat4_b, 576),
    (ttnn.int32, 4096), (ttnn.uint32, 4096), (ttnn.uint16, 2048), (ttnn.uint8, 1024),
])
def test_a_tile_page_is_one_32x32_tile(dtype, page_size, device):
    # Block floats add one shared-exponent byte per 16 values to their packed mantissas.
    t = ttnn.from_torch(torch.zeros(2, 40, 70), dtype=dtype, layout=ttnn.TILE, device=device)
    assert t.buffer.page_size == page_size
    assert t.buffer.num_pages == 2 * 2 * 3  # padded to (2, 64, 96): 2 x 2 x 3 tiles


@pytest.mark.parametrize("dtype, element_size", [(ttnn.bfloat16, 2), (ttnn.float32, 4), (ttnn.uint8, 1)])
def test_a_row_major_page_is_one_row(dtype, element_size, device):
    t = ttnn.from_torch(torch.zeros(2, 3, 50), dtype=dtype, layout=ttnn.ROW_MAJOR, device=device)
    assert t.buffer.page_size == 50 * element_size
    assert t.buffer.num_pages == 6


def test_reshape_keeps_the_layout_and_repads(device):
    t = ttnn.from_torch(torch.randn(4, 40), layout=ttnn.TILE, device=device)
    r = t.reshape(2, 80)
    assert (r.layout, r.shape, r.padded_shape) == (ttnn.TILE, (2, 80), (32, 96))
    assert torch.equal(r.to_torch(), t.to_torch().reshape(2, 80))
