"""ttnn.Tile: a tiny tile changes a TILE tensor's padding and buffer size, as on the device."""

import pytest
import torch

import device_sim as ttnn


def test_the_default_tile_is_32_by_32():
    assert ttnn.TILE_SIZE == 32 and ttnn.Tile().tile_shape == [32, 32]
    t = ttnn.from_torch(torch.ones(16, 40), dtype=ttnn.bfloat16, layout=ttnn.TILE)
    assert t.tile == ttnn.Tile((32, 32)) and t.get_tile() is t.tile and t.padded_shape == (32, 64)


@pytest.mark.parametrize("tile, padded", [((16, 32), (16, 64)), ((1, 32), (16, 64)), ((32, 16), (32, 48)),
                                          ((8, 16), (16, 48))])
def test_a_tiny_tile_pads_to_its_own_shape(device, tile, padded):
    t = ttnn.from_torch(torch.randn(16, 40), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                        tile=ttnn.Tile(tile))
    assert t.padded_shape == padded and t.spec.padded_shape == padded
    h, w = tile
    assert (t.buffer.page_size, t.buffer.num_pages) == (h * w * 2, padded[0] // h * padded[1] // w)
    assert t.buffer.size == padded[0] * padded[1] * 2  # no padding beyond the tile's own


def test_a_16_row_tile_halves_the_buffer_of_a_16_row_tensor(device):
    x = torch.randn(1, 16, 256)
    full = ttnn.from_torch(x, dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
    half = ttnn.from_torch(x, dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device, tile=ttnn.Tile((16, 32)))
    assert full.buffer.size == 8 * (1024 + 64) and half.buffer.size == 8 * (512 + 32)
    assert torch.equal(full.to_torch(), half.to_torch())  # the values are the logical ones either way


def test_ops_keep_their_inputs_tile(device):
    t = ttnn.from_torch(torch.randn(16, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                        tile=ttnn.Tile((16, 32)))
    out = ttnn.exp(t)
    assert out.tile == ttnn.Tile((16, 32)) and out.padded_shape == (16, 64)


def test_a_tile_the_device_has_no_faces_for_is_an_error():
    with pytest.raises(ValueError, match=r"Tile\(\[24, 32\]\) is not a tile the device has"):
        ttnn.Tile((24, 32))
    with pytest.raises(TypeError, match=r"Tile takes a \(height, width\) pair"):
        ttnn.Tile(16)
    with pytest.raises(ValueError, match="a transposed tile must be 16 or 32 rows high"):
        ttnn.Tile((8, 32), transpose_tile=True)


def test_pad_to_tile_and_unpad_from_tile_use_the_tensors_tile():
    t = ttnn.from_torch(torch.ones(3, 5), dtype=ttnn.float32, layout=ttnn.TILE, tile=ttnn.Tile((16, 16)))
    p = t.pad_to_tile(-1.0)  # TT-NN's host pad: the logical shape stays, the padding holds the value
    padded = p.to_torch_with_padded_shape()
    assert p.shape == (3, 5) and padded.shape == (16, 16) and padded[3:, :].eq(-1).all() and padded[:3, :5].eq(1).all()
    assert torch.equal(p.unpad_from_tile([3, 5]).to_torch(), torch.ones(3, 5))
    with pytest.raises(ValueError, match=r"shape \[17, 5\] does not fit inside"):
        p.unpad_from_tile([17, 5])


def test_a_tile_describes_its_faces_and_prints_as_tt_nn():
    tiny = ttnn.Tile((8, 16))
    assert (tiny.face_shape, tiny.num_faces, tiny.partial_face, tiny.narrow_tile) == ([8, 16], 1, True, True)
    assert (ttnn.Tile().face_shape, ttnn.Tile().num_faces) == ([16, 16], 4)
    assert repr(ttnn.Tile((16, 32))) == "Tile with shape: [16, 32]"
    assert tiny.get_tile_size(ttnn.bfloat16) == 8 * 16 * 2 and ttnn.Tile().get_tile_size(ttnn.bfloat8_b) == 1088


def test_a_tiny_tile_shows_its_own_padded_shape_in_the_report(tmp_path, device):
    import ttreport

    x = torch.randn(1, 16, 40)
    with ttreport.capture(tmp_path / "r") as report:
        tiny = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, tile=ttnn.Tile((16, 32)))
        full = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    rows = {t.id: t for t in ttreport.open(report.path).tensors()}
    assert rows[tiny.tensor_id].padded_shape_text == "Shape([1, 16, 64])" == f"Shape({list(tiny.padded_shape)})"
    assert rows[full.tensor_id].padded_shape_text == "Shape([1, 32, 64])"
    assert rows[tiny.tensor_id].padded_shape == (1, 16, 64)
    assert rows[tiny.tensor_id].size == tiny.buffer.size == full.buffer.size // 2


@pytest.mark.parametrize("tile", [ttnn.Tile((16, 32)), ttnn.Tile((32, 16), transpose_tile=True), ttnn.Tile()])
def test_dump_and_load_tensor_keep_the_tile(tmp_path, device, tile):
    # TT-NN's tensor file keeps it too (tensor_spec.fbs: Tile {tile_shape_h, tile_shape_w, transpose_tile}).
    t = ttnn.from_torch(torch.randn(2, 16, 40), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device, tile=tile)
    ttnn.dump_tensor(tmp_path / "t.bin", t)
    for back in (ttnn.load_tensor(tmp_path / "t.bin"), ttnn.load_tensor(tmp_path / "t.bin", device=device)):
        assert back.tile == tile and back.padded_shape == t.padded_shape and torch.equal(back.value, t.value)
    assert ttnn.load_tensor(tmp_path / "t.bin", device=device).buffer.size == t.buffer.size
