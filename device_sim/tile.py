"""The tile a TILE-layout tensor is cut into: 32x32 by default, smaller ones (16x32, 1x32, ...) on request.

    import device_sim as ttnn
    t = ttnn.from_torch(torch.randn(16, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, tile=ttnn.Tile((16, 32)))
    t.padded_shape        # Shape([16, 64]): a 16-row tile pads 16 rows to 16, not to 32
    t.tile.tile_shape     # [16, 32]

A tile's height and width decide the tensor's padding and its page (one tile) size, so a
tiny tile saves device memory on a tensor with few rows. TT-NN's tiles are built from 16x16
faces (or narrower ones for 1..8-row tiles); device_sim keeps the shapes TT-NN accepts and
computes sizes from the tile's element count.
"""

from __future__ import annotations

from device_sim import dtypes

TILE_SIZE = 32  # the default tile's height and width, as ttnn.TILE_SIZE

# Tile shapes TT-NN's Tile accepts (TILE_FACE_HW_CHOICES in tt_metal/impl/data_format/tile.cpp): every
# height 1, 2, 4, 8, 16, 32 with width 16 or 32; any other shape has no face layout on the device.
_HEIGHTS = (1, 2, 4, 8, 16, 32)
_WIDTHS = (16, 32)


class Tile:
    """`ttnn.Tile((height, width), transpose_tile=False)`: the tile of a TILE-layout tensor."""

    __slots__ = ("tile_shape", "transpose_tile")

    def __init__(self, tile_shape=(TILE_SIZE, TILE_SIZE), transpose_tile: bool = False):
        try:
            h, w = (int(d) for d in tile_shape)
        except (TypeError, ValueError):
            raise TypeError(f"Tile takes a (height, width) pair such as (16, 32), got {tile_shape!r}") from None
        if h not in _HEIGHTS or w not in _WIDTHS:
            raise ValueError(
                f"Tile({[h, w]}) is not a tile the device has; use a height in {list(_HEIGHTS)} and a width in "
                f"{list(_WIDTHS)}, e.g. ttnn.Tile((16, 32))"
            )
        if transpose_tile and h not in (16, 32):
            raise ValueError(f"a transposed tile must be 16 or 32 rows high, got Tile({[h, w]})")
        self.tile_shape = [h, w]
        self.transpose_tile = bool(transpose_tile)

    @property
    def height(self) -> int:
        return self.tile_shape[0]

    @property
    def width(self) -> int:
        return self.tile_shape[1]

    @property
    def face_shape(self) -> list[int]:
        """A tile is made of faces 16 wide, 16 high (or the tile's own height when it is under 16)."""
        return [min(self.height, 16), 16]

    @property
    def num_faces(self) -> int:
        fh, fw = self.face_shape
        return self.height * self.width // (fh * fw)

    @property
    def partial_face(self) -> bool:
        return self.height < 16

    @property
    def narrow_tile(self) -> bool:
        return self.width < 32

    @property
    def transpose_within_face(self) -> bool:
        return self.transpose_tile

    transpose_of_faces = transpose_within_face

    def get_tile_size(self, dtype) -> int:
        """Bytes of one tile of `dtype`; block floats add one shared exponent byte per 16 values."""
        hw = self.height * self.width
        if dtype.is_block_float:  # a byte (bfp8) or half a byte (bfp4) per value, plus the exponents
            per_value = 1 if dtype.name == "BFLOAT8_B" else 0.5
            return int(hw * per_value) + hw // dtypes.BLOCK
        return hw * dtypes.ELEMENT_SIZE[dtype]

    def __eq__(self, other) -> bool:
        return isinstance(other, Tile) and (self.tile_shape, self.transpose_tile) == (other.tile_shape,
                                                                                      other.transpose_tile)

    def __hash__(self) -> int:
        return hash((tuple(self.tile_shape), self.transpose_tile))

    def __repr__(self) -> str:
        return f"Tile with shape: [{self.height}, {self.width}]"  # TT-NN's text


DEFAULT_TILE = Tile()


def as_tile(tile) -> Tile:
    """A Tile from a Tile, a (height, width) pair, or None (the 32x32 default)."""
    if tile is None:
        return DEFAULT_TILE
    return tile if isinstance(tile, Tile) else Tile(tile)
