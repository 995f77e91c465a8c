"""Rotary embeddings' device operations: GPT-NeoX (RotaryEmbeddingDeviceOperation) and Llama's decode forms.

tt-metal's ttnn/cpp/ttnn/operations/experimental/transformer/rotary_embedding/device/
rotary_embedding_program_factory.cpp (RotaryEmbeddingProgramFactory), prefill and decode (token_idx) alike, and
rotary_embedding_llama's sharded decode factory and rotary_embedding_llama_fused_qk's factory. The Llama prefill
factory lives in transformer.py.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.rotary import rotary_embedding_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 2, 64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> c = ttnn.from_torch(torch.ones(1, 1, 64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = rotary_embedding_program(x, c, c, ttnn.bfloat16)
    >>> [(cb.indices, cb.num_pages) for cb in p.cbs][:3], p.cores.num_cores()  # Wt = 2; 2 heads x 2 rows
    ([((0,), 4), ((1,), 4), ((2,), 4)], 4)
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import (
    TILE,
    TILE_BYTES,
    CircularBuffer,
    Program,
    cached,
    grid_of,
    make_program,
    shape_of,
    split_work,
)
from device_sim.types import DataType

NAME = "RotaryEmbeddingDeviceOperation"
_BF16 = DataType.BFLOAT16


def _ranges(spec) -> tuple:
    return tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in spec.grid.ranges())


def rotary_embedding_program(x, cos, sin, out_dtype: DataType, *, token_index: int | None = None,
                             out_spec=None) -> Program:
    """RotaryEmbeddingProgramFactory for a TILE x [..., S, D] (Wt = D/32 tiles a row).

    c_0 the input and c_1 its rotated half (2*Wt tiles each; c_0 is the input shard when x is sharded), c_2 cos
    and c_3 sin (2*Wt, or Wt in decode), c_4 one bfloat16 tile holding the -1 scalar, c_24 / c_25 / c_26 one
    tile each (input, cos, sin formats), c_16 the output (2*Wt, or its shard). Decode (a token_index) adds c_29
    / c_30, the retilized cos / sin row (Wt each), and the untilized cos / sin rows, c_27 sharing its buffer
    with c_5 and c_28 with c_6 (Wt bfloat16 tiles each). Interleaved, split_work_to_cores gives the rows of
    tiles row by row; sharded, the shard grid runs it (the input's shard spec, else the output's)."""
    dev = x.device()
    in_spec = x.memory_config().shard_spec if x.is_sharded() else None
    spec = in_spec if in_spec is not None else out_spec
    decode = token_index is not None
    key = (NAME, shape_of(x), x.dtype, cos.dtype, sin.dtype, out_dtype, decode, in_spec, out_spec, grid_of(dev))

    def build():
        shape = tuple(x.padded_shape)
        wt = shape[-1] // TILE
        rows = 1
        for d in shape[:-1]:
            rows *= d
        rows //= TILE
        in_t, cos_t, sin_t, out_t = (TILE_BYTES[d] for d in (x.dtype, cos.dtype, sin.dtype, out_dtype))
        shard_tiles = spec.shape[0] * spec.shape[1] // (TILE * TILE) if spec is not None else 0
        cos_sin = wt if decode else 2 * wt
        cbs = [CircularBuffer((0,), shard_tiles if in_spec is not None else 2 * wt, in_t, in_spec is not None),
               CircularBuffer((1,), 2 * wt, in_t), CircularBuffer((2,), cos_sin, cos_t),
               CircularBuffer((3,), cos_sin, sin_t), CircularBuffer((4,), 1, TILE_BYTES[_BF16]),
               CircularBuffer((24,), 1, in_t), CircularBuffer((25,), 1, cos_t), CircularBuffer((26,), 1, sin_t),
               CircularBuffer((16,), shard_tiles if out_spec is not None else 2 * wt, out_t, out_spec is not None)]
        if decode:
            bf16 = TILE_BYTES[_BF16]
            cbs += [CircularBuffer((29,), wt, cos_t), CircularBuffer((30,), wt, sin_t),
                    CircularBuffer((27, 5), wt, bf16), CircularBuffer((28, 6), wt, bf16)]
        ranges = _ranges(spec) if spec is not None else split_work(rows, *grid_of(dev), row_wise=True)
        return make_program(NAME, "RotaryEmbeddingProgramFactory", cbs, ranges)

    return cached(key, build)


def rotary_llama_decode_program(x, cos, sin, trans_mat, out_dtype: DataType) -> Program:
    """RotaryEmbeddingLlamaDeviceOperation in decode mode: RotaryEmbeddingLlamaMultiCoreSharded
    (rotary_embedding_llama_sharded_program_factory.cpp) for a height-sharded x [1, B, heads, D], one user's
    [heads (padded to 32), D] shard a core, with sharded cos / sin [1, B, 32, D] and trans_mat.

    Every CB but the three intermediates is a tensor's own shard (globally allocated): c_0 the input (Ht x Wt
    tiles of its shard), c_1 cos and c_2 sin (Wt tiles for each of ceil(B / cores) users a core), c_3 one trans_mat
    tile, c_16 the output (as c_0); c_24 / c_25 / c_26 hold Wt tiles each in the input / cos / sin formats. It runs
    on the bounding box of the input's shard grid."""
    spec = x.memory_config().shard_spec
    key = ("RotaryEmbeddingLlamaDeviceOperation", "decode", shape_of(x), x.dtype, cos.dtype, sin.dtype,
           trans_mat.dtype, out_dtype, spec)

    def build():
        users = tuple(x.padded_shape)[1]
        ht, wt = spec.shape[0] // TILE, spec.shape[1] // TILE
        box = spec.grid.bounding_box()
        cores = (box.end.x - box.start.x + 1) * (box.end.y - box.start.y + 1)
        per_core = -(-users // min(users, cores))
        in_t, cos_t, sin_t = TILE_BYTES[x.dtype], TILE_BYTES[cos.dtype], TILE_BYTES[sin.dtype]
        cbs = (CircularBuffer((0,), ht * wt, in_t, True), CircularBuffer((1,), wt * per_core, cos_t, True),
               CircularBuffer((2,), wt * per_core, sin_t, True),
               CircularBuffer((3,), 1, TILE_BYTES[trans_mat.dtype], True), CircularBuffer((24,), wt, in_t),
               CircularBuffer((25,), wt, cos_t), CircularBuffer((26,), wt, sin_t),
               CircularBuffer((16,), ht * wt, TILE_BYTES[out_dtype], True))
        return make_program("RotaryEmbeddingLlamaDeviceOperation", "RotaryEmbeddingLlamaMultiCoreSharded", cbs,
                            ((box.start.x, box.start.y, box.end.x, box.end.y),))

    return cached(key, build)


def rotary_llama_fused_qk_program(q, k, cos, sin, trans_mat, out_dtype: DataType) -> Program:
    """RotaryEmbeddingLlamaFusedQKDeviceOperation (rotary_embedding_llama_fused_qk_program_factory.cpp): q [1, B, H,
    D] and k [1, B, KVH, D] height sharded on two disjoint grids, one user a core, cos / sin sharded on both.

    On the bounding box of cos's shard grid: c_0 / c_1 the q / k shards, c_2 / c_3 cos / sin (Wt tiles: one user a
    core), c_4 one trans_mat tile, c_16 / c_17 the q / k outputs, all globally allocated; c_24 / c_25 / c_26 Wt
    tiles each, sized in the input's tile (the factory sizes all three so; c_25 / c_26 page in cos / sin)."""
    sq, sk, sc = (t.memory_config().shard_spec for t in (q, k, cos))
    key = ("RotaryEmbeddingLlamaFusedQKDeviceOperation", q.dtype, cos.dtype, sin.dtype, trans_mat.dtype, out_dtype,
           sq, sk, sc)

    def build():
        wt = sq.shape[1] // TILE
        q_tiles, k_tiles = sq.shape[0] // TILE * wt, sk.shape[0] // TILE * wt
        in_t, out_t = TILE_BYTES[q.dtype], TILE_BYTES[out_dtype]
        box = sc.grid.bounding_box()
        cbs = (CircularBuffer((0,), q_tiles, in_t, True), CircularBuffer((1,), k_tiles, in_t, True),
               CircularBuffer((2,), wt, TILE_BYTES[cos.dtype], True),
               CircularBuffer((3,), wt, TILE_BYTES[sin.dtype], True),
               CircularBuffer((4,), 1, TILE_BYTES[trans_mat.dtype], True), CircularBuffer((24,), wt, in_t),
               CircularBuffer((25,), wt, in_t), CircularBuffer((26,), wt, in_t),
               CircularBuffer((16,), q_tiles, out_t, True), CircularBuffer((17,), k_tiles, out_t, True))
        return make_program("RotaryEmbeddingLlamaFusedQKDeviceOperation", "RotaryEmbeddingLlamaFusedQKProgramFactory",
                            cbs, ((box.start.x, box.start.y, box.end.x, box.end.y),))

    return cached(key, build)


def rotate_half_program(x, out_dtype: DataType) -> Program:
    """RotateHalfProgramFactory (experimental/transformer/rotate_half/device/rotate_half_program_factory.cpp) for a
    TILE interleaved x: one core, (0, 0). c_0 the half multiplied by -1 and c_2 the half copied (2 tiles each, the
    input's format; the copied half is written from c_2 itself), c_1 the -1 scalar (one tile, bfloat16-sized in the
    input's format), c_16 the negated half (2 tiles)."""
    key = ("RotateHalfDeviceOperation", shape_of(x), x.dtype, out_dtype)

    def build():
        tile = TILE_BYTES[x.dtype]
        cbs = (CircularBuffer((0,), 2, tile), CircularBuffer((1,), 1, TILE_BYTES[_BF16]),
               CircularBuffer((2,), 2, tile), CircularBuffer((16,), 2, TILE_BYTES[out_dtype]))
        return make_program("RotateHalfDeviceOperation", "RotateHalfProgramFactory", cbs, ((0, 0, 0, 0),))

    return cached(key, build)
