"""The decode head shuffles: NLPCreateQKVHeadsDecodeDeviceOperation and NLPConcatHeadsDecodeDeviceOperation.

tt-metal's ttnn/cpp/ttnn/operations/experimental/transformer/nlp_create_qkv_heads_decode/device/
nlp_create_qkv_heads_decode_interleaved_program_factory.cpp and nlp_concat_heads_decode/device/
nlp_concat_heads_decode_program_factory.cpp (and its sub-core-grid factory). Both write straight into their
outputs' L1 shards, so every CB is a shard (globally allocated): the programs hold no L1 of their own, and the
visualizer shows their device operation and the shards it writes.

Example:
    >>> from device_sim.programs.decode_heads import concat_heads_decode_program
    >>> from device_sim.types import DataType
    >>> p = concat_heads_decode_program(DataType.BFLOAT16, users=8, head_dim=64, num_heads=4, grid=(8, 8))
    >>> [(cb.indices, cb.num_pages, cb.globally_allocated) for cb in p.cbs], p.ranges  # [32, 64] a head
    ([((16,), 2, True)], ((0, 0, 3, 0),))
"""

from __future__ import annotations

from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, Program, cached, cores_row_major, make_program
from device_sim.types import DataType


def _first_cores(start: tuple[int, int], width: int, n: int) -> tuple:
    """n cores row by row from `start` in a grid `width` cores wide that starts at start's column (TT-NN's
    num_cores_to_corerangeset_in_subcoregrids on one rectangle), as ranges of whole or partial rows."""
    x0, y0 = start
    ranges, i = [], 0
    while i < n:
        take = min(width, n - i)
        ranges.append((x0, y0 + i // width, x0 + take - 1, y0 + i // width))
        i += take
    return tuple(ranges)


def create_qkv_heads_decode_program(dtype: DataType, *, users: int, num_heads: int, head_dim: int,
                                    grid: tuple[int, int, int, int]) -> Program:
    """NLPCreateQKVHeadsDecodeInterleavedProgramFactory for an interleaved fused QKV [1, 1, users, width]: q, k and
    v are height sharded one user a core, q on the first `users` cores of the output grid `grid` (x0, y0, x1, y1),
    where the program runs. Each shard is [num_heads padded to 32, head_dim] (TT-NN pads k's and v's shards by the
    q heads too): c_16 / c_17 / c_18 hold the q / k / v shard's tiles."""
    key = ("NLPCreateQKVHeadsDecodeDeviceOperation", dtype, users, num_heads, head_dim, grid)

    def build():
        tiles = -(-num_heads // TILE) * head_dim // TILE
        tile = TILE_BYTES[dtype]
        cbs = tuple(CircularBuffer((i,), tiles, tile, True) for i in (16, 17, 18))
        x0, y0, x1, _ = grid
        return make_program("NLPCreateQKVHeadsDecodeDeviceOperation",
                            "NLPCreateQKVHeadsDecodeInterleavedProgramFactory", cbs,
                            _first_cores((x0, y0), x1 - x0 + 1, users))

    return cached(key, build)


def concat_heads_decode_program(dtype: DataType, *, users: int, head_dim: int, num_heads: int,
                                grid: tuple[int, int]) -> Program:
    """NLPConcatHeadsDecodeProgramFactory: the output [1, 1, users (padded to 32), num_heads * head_dim] is width
    sharded one head a core on the first num_heads cores of the grid, row by row; c_16 is that [32, head_dim]
    shard."""
    key = ("NLPConcatHeadsDecodeDeviceOperation", dtype, users, head_dim, num_heads, grid)

    def build():
        tiles = -(-max(users, TILE) // TILE) * head_dim // TILE
        return make_program("NLPConcatHeadsDecodeDeviceOperation", "NLPConcatHeadsDecodeProgramFactory",
                            (CircularBuffer((16,), tiles, TILE_BYTES[dtype], True),),
                            cores_row_major(num_heads, grid[0]))

    return cached(key, build)


def concat_heads_decode_subcoregrids_program(dtype: DataType, *, users: int, head_dim: int,
                                             ranges: tuple) -> Program:
    """NLPConcatHeadsDecodeSubcoregridsProgramFactory (an input grid that does not start at core (0, 0), or
    sub_core_grids given): as the plain factory, c_16 the [max(users, 32), head_dim] output shard (globally
    allocated), on the output's shard grid `ranges` ((x0, y0, x1, y1) each)."""
    key = ("NLPConcatHeadsDecodeSubcoregrids", dtype, users, head_dim, ranges)

    def build():
        tiles = -(-max(users, TILE) // TILE) * head_dim // TILE
        return make_program("NLPConcatHeadsDecodeDeviceOperation", "NLPConcatHeadsDecodeSubcoregridsProgramFactory",
                            (CircularBuffer((16,), tiles, TILE_BYTES[dtype], True),), ranges)

    return cached(key, build)


def create_qkv_heads_decode_sharded_program(dtype: DataType, *, tiles: tuple[int, int, int],
                                            ranges: tuple) -> Program:
    """NLPCreateQKVHeadsDecodeShardedProgramFactory for a width-sharded fused QKV: c_16 / c_17 / c_18 are q's, k's
    and v's shards (`tiles` each, globally allocated), the program on q's cores and k's (`ranges`)."""
    key = ("NLPCreateQKVHeadsDecodeSharded", dtype, tiles, ranges)

    def build():
        tile = TILE_BYTES[dtype]
        cbs = tuple(CircularBuffer((i,), n, tile, True) for i, n in zip((16, 17, 18), tiles))
        return make_program("NLPCreateQKVHeadsDecodeDeviceOperation", "NLPCreateQKVHeadsDecodeShardedProgramFactory",
                            cbs, ranges)

    return cached(key, build)
