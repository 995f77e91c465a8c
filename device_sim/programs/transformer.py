"""Attention's device operations: SDPAOperation, JointSDPADeviceOperation, NlpCreateHeads / NLPConcatHeads,
RotaryEmbeddingLlama.

Interleaved TILE inputs only. Sources in tt-metal: ttnn/cpp/ttnn/operations/transformer/sdpa/device/
{sdpa,joint_sdpa}_program_factory.cpp and ttnn/cpp/ttnn/operations/experimental/transformer/{nlp_create_qkv_heads,
nlp_concat_heads,rotary_embedding_llama}/device/*_program_factory.cpp.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.transformer import concat_heads_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 4, 128, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> [(cb.indices, cb.num_pages) for cb in concat_heads_program(x).cbs]  # 4 heads x 2 tiles, doubled
    [((0,), 16)]
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

_BF16, _BFP4 = DataType.BFLOAT16, DataType.BFLOAT4_B


def sdpa_program(q, k, v, out_dtype: DataType, *, is_causal: bool, mask=None, sink=None, program_config=None,
                 fp32_dest_acc_en: bool = False, page_table_page: int = 0,
                 start_tensor: bool = False) -> Program | None:
    """SDPAOperation (SDPAProgramFactory) over q [B, H, Sq, D], k, v [B, KVH, Sk, D], on every core of the grid.

    q_chunk_size / k_chunk_size from the program config (default 32): Sq_chunk_t, Sk_chunk_t tiles. c_0 Q
    (a chunk, doubled when a core takes two or more), c_1 K and c_2 V (a chunk, doubled), c_3 the mask
    (Sq_chunk_t x Sk_chunk_t, doubled; bfloat4_b unless a mask is given) when causal, masked or padded,
    c_4 the attention sink, c_5 and c_7 one bfloat16 scalar tile each, c_24 QK^T (a chunk pair), c_25 and
    c_26 the output accumulators, c_27..c_31 the running max/sum statistics (Sq_chunk_t each), c_16 the
    output chunk; intermediates bfloat16. None for the streaming kernel (a non-causal, unmasked SDPA with
    q chunks of 2+ tiles), which allocates other CBs and is not modelled.

    Chunked prefill (chunked_scaled_dot_product_attention: causal, K and V a paged cache) adds c_6, one page-table
    row of page_table_page bytes, after c_7; with the start position in a tensor (start_tensor) also c_8 and c_9,
    one 32 B int32 page each.
    """
    dev = q.device()
    q_chunk = program_config.q_chunk_size if program_config is not None else 32
    k_chunk = program_config.k_chunk_size if program_config is not None else 32
    gx, gy = _sdpa_grid(program_config, dev)
    key = ("SDPAOperation", q._value.shape, k._value.shape, q.dtype, k.dtype, v.dtype, out_dtype,
           is_causal, mask.dtype if mask is not None else None, sink.dtype if sink is not None else None, q_chunk,
           k_chunk, gx, gy, fp32_dest_acc_en, page_table_page, start_tensor)
    streaming = not is_causal and mask is None and sink is None and not fp32_dest_acc_en and q_chunk // TILE > 1
    if streaming:
        return None
    return cached(key, lambda: _sdpa(tuple(q._value.shape), tuple(k._value.shape), q.dtype, k.dtype, v.dtype,
                                     out_dtype, is_causal, mask, sink, q_chunk, k_chunk, gx, gy, page_table_page,
                                     start_tensor))


def _sdpa_grid(program_config, dev) -> tuple[int, int]:
    """The program config's compute_with_storage_grid_size (a CoreCoord or an (x, y) pair), else the device's grid."""
    grid = getattr(program_config, "compute_with_storage_grid_size", None)
    return (grid.x, grid.y) if grid is not None and hasattr(grid, "x") else (tuple(grid) if grid else grid_of(dev))


def _sdpa(q_shape, k_shape, q_dt, k_dt, v_dt, out_dt, is_causal, mask, sink, q_chunk, k_chunk, gx, gy,
          page_table_page=0, start_tensor=False) -> Program:
    B, NQH, Sq, DH = q_shape
    Sk = k_shape[2]
    padded_sq, padded_sk = -(-Sq // q_chunk) * q_chunk, -(-Sk // k_chunk) * k_chunk
    sq_t, sk_t, dht = q_chunk // TILE, k_chunk // TILE, DH // TILE
    q_chunks = padded_sq // q_chunk
    cores = gx * gy
    # parallelise over batch, then heads, then q chunks
    batch_pf = min(B, cores)
    nh_pf = min(cores // batch_pf, NQH)
    q_pf = min(cores // (batch_pf * nh_pf), q_chunks)
    q_per_core = -(-q_chunks // q_pf)
    padded_mask = not is_causal and (padded_sk != Sk or padded_sq != Sq)
    im, bf16 = TILE_BYTES[_BF16], TILE_BYTES[_BF16]
    cbs = [CircularBuffer((0,), sq_t * dht * (2 if q_per_core > 1 else 1), TILE_BYTES[q_dt]),
           CircularBuffer((1,), sk_t * dht * 2, TILE_BYTES[k_dt]),
           CircularBuffer((2,), sk_t * dht * 2, TILE_BYTES[v_dt])]
    if mask is not None or is_causal or padded_mask:
        cbs.append(CircularBuffer((3,), sq_t * sk_t * 2, TILE_BYTES[mask.dtype if mask is not None else _BFP4]))
    cbs += [CircularBuffer((5,), 1, bf16), CircularBuffer((7,), 1, bf16)]
    if page_table_page:  # chunked: one page-table row for the reader
        cbs.append(CircularBuffer((6,), 1, page_table_page))
    if start_tensor:  # the start position read on device, for the compute and the writer kernels
        cbs += [CircularBuffer((8,), 1, 32), CircularBuffer((9,), 1, 32)]
    if sink is not None:
        cbs.append(CircularBuffer((4,), sq_t, TILE_BYTES[sink.dtype]))
    cbs += [CircularBuffer((24,), sq_t * sk_t, im), CircularBuffer((25,), sq_t * dht, im),
            CircularBuffer((26,), sq_t * dht, im)]
    cbs += [CircularBuffer((i,), sq_t, im) for i in range(27, 32)]
    cbs.append(CircularBuffer((16,), sq_t * dht, TILE_BYTES[out_dt]))
    return make_program("SDPAOperation", "SDPAProgramFactory", cbs, ((0, 0, gx - 1, gy - 1),))


def joint_sdpa_program(q, joint_q, k, v, out_dtype: DataType, *, program_config=None) -> Program:
    """JointSDPADeviceOperation (joint_sdpa_program_factory.cpp): non-causal attention over the sequences of q
    [B, NH, N, D] and joint_q [B, NH, L, D], each padded to whole q chunks (and k chunks for the keys) and joined,
    on every core of the grid. As _sdpa: c_0 Q (a chunk, doubled when a core takes two or more), c_1 K and c_2 V (a
    chunk, doubled), c_3 the padding mask (Sq_chunk_t x Sk_chunk_t bfloat4_b tiles, single) only when N or L is not
    a whole number of k chunks, c_5 and c_7 one bfloat16 scalar tile each, c_24 QK^T, c_25 and c_26 the output
    accumulators, c_27..c_31 the statistics (Sq_chunk_t each), c_16 the output chunk; intermediates bfloat16."""
    q_chunk = program_config.q_chunk_size if program_config is not None else 32
    k_chunk = program_config.k_chunk_size if program_config is not None else 32
    gx, gy = _sdpa_grid(program_config, q.device())
    key = ("JointSDPADeviceOperation", tuple(q.shape), tuple(joint_q.shape), q.dtype, k.dtype, v.dtype, out_dtype,
           q_chunk, k_chunk, gx, gy)

    def build():
        B, NH, N, DH = q.shape
        L = joint_q.shape[2]
        up = lambda n, c: -(-n // c) * c  # noqa: E731
        q_chunks = (up(N, q_chunk) + up(L, q_chunk)) // q_chunk
        sq_t, sk_t, dht = q_chunk // TILE, k_chunk // TILE, DH // TILE
        cores = gx * gy
        # parallelise over batch, then heads, then q chunks (ceiling shares)
        batch_pf = min(B, cores)
        nh_pf = min(cores // batch_pf, NH)
        q_pf = min(cores // (batch_pf * nh_pf), q_chunks)
        q_per_core = -(-q_chunks // q_pf)
        im = TILE_BYTES[_BF16]
        cbs = [CircularBuffer((0,), sq_t * dht * (2 if q_per_core > 1 else 1), TILE_BYTES[q.dtype]),
               CircularBuffer((1,), sk_t * dht * 2, TILE_BYTES[k.dtype]),
               CircularBuffer((2,), sk_t * dht * 2, TILE_BYTES[v.dtype])]
        if up(N, k_chunk) != N or up(L, k_chunk) != L:
            cbs.append(CircularBuffer((3,), sq_t * sk_t, TILE_BYTES[_BFP4]))
        cbs += [CircularBuffer((5,), 1, im), CircularBuffer((7,), 1, im), CircularBuffer((24,), sq_t * sk_t, im),
                CircularBuffer((25,), sq_t * dht, im), CircularBuffer((26,), sq_t * dht, im)]
        cbs += [CircularBuffer((i,), sq_t, im) for i in range(27, 32)]
        cbs.append(CircularBuffer((16,), sq_t * dht, TILE_BYTES[out_dtype]))
        return make_program("JointSDPADeviceOperation", "JointSDPAProgramFactory", cbs, ((0, 0, gx - 1, gy - 1),))

    return cached(key, build)


def create_heads_program(x, *, transpose_k_heads: bool) -> Program:
    """NlpCreateHeadsDeviceOperation's interleaved factory on x [B, 1, S, width] (or [B, S, width], which
    ttnn.transformer.split_query_key_value_and_split_heads views as that): c_1 four tiles (reader to writer), and
    with transpose_k_heads c_0 and c_16 four tiles each around the transpose; split_work_to_cores over the
    B*S/32 rows of tiles."""
    dev = x.device()
    key = ("NlpCreateHeadsDeviceOperation", shape_of(x), x.dtype, transpose_k_heads, grid_of(dev))

    def build():
        shape = tuple(x.padded_shape)
        if len(shape) == 3:
            shape = (shape[0], 1, *shape[1:])
        tile = TILE_BYTES[x.dtype]
        cbs = [CircularBuffer((1,), 4, tile)]
        if transpose_k_heads:
            cbs += [CircularBuffer((0,), 4, tile), CircularBuffer((16,), 4, tile)]
        blocks = shape[0] * shape[1] * shape[2] // TILE
        return make_program("NlpCreateHeadsDeviceOperation", "NlpCreateHeadsInterleaved", cbs,
                            split_work(blocks, *grid_of(dev)))

    return cached(key, build)


def concat_heads_program(x, *, out_sharded: bool = False, name: str = "NLPConcatHeadsDeviceOperation") -> Program:
    """NLPConcatHeadsDeviceOperation's factory on x [B, H, S, D] (ttnn.transformer.concatenate_heads runs it as
    its own device operation, ConcatenateHeads). Interleaved: c_0 holds one row of tiles of every head
    (H*D/32), doubled; split_work_to_cores over the B*S/32 rows of tiles. Sharded: c_0 is the input shard and
    c_16 the output shard (when sharded), both globally allocated, on the input's shard grid."""
    dev = x.device()
    spec = x.memory_config().shard_spec if x.is_sharded() else None
    key = (name, shape_of(x), x.dtype, spec, out_sharded, grid_of(dev))

    def build():
        shape = tuple(x.padded_shape)
        tile = TILE_BYTES[x.dtype]
        if spec is not None:
            shard_tiles = spec.shape[0] * spec.shape[1] // (TILE * TILE)
            cbs = [CircularBuffer((0,), shard_tiles, tile, True)]
            if out_sharded:
                cbs.append(CircularBuffer((16,), shard_tiles, tile, True))
            ranges = tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in spec.grid.ranges())
            return make_program(name, "NLPConcatHeadsProgramFactory", cbs, ranges)
        per_row = shape[1] * shape[3] // TILE
        return make_program(name, "NLPConcatHeadsProgramFactory", (CircularBuffer((0,), 2 * per_row, tile),),
                            split_work(shape[0] * shape[2] // TILE, *grid_of(dev)))

    return cached(key, build)


def create_qkv_heads_program(x, *, num_q_heads: int, num_kv_heads: int, head_dim: int,
                             transpose_k_heads: bool, shape: tuple | None = None) -> Program | None:
    """CreateQKVHeadsDeviceOperation (create_qkv_heads_program_factory.cpp) on a block-sharded fused QKV
    [B, 1, S, width]: each core's block is block_ht = B*S/32 / (cores along height) rows of width/32 / (cores
    along width) tiles, its kv groups split across the width cores. c_0 is the input shard and c_16 / c_17 /
    c_18 the q / k / v shards (all globally allocated); with transpose_k_heads c_24 holds the k block for the
    transpose. None when the factory refuses the shape (its TT_FATALs: the kv groups must divide evenly over the
    width cores, the rows over the height cores): device_sim models no program for it."""
    spec = x.memory_config().shard_spec
    shape = tuple(shape if shape is not None else x.padded_shape)  # [B, 1, S, width], as TT-NN views the input
    key = ("CreateQKVHeadsDeviceOperation", shape, x.dtype, spec, num_q_heads, num_kv_heads, head_dim,
           transpose_k_heads)

    box = spec.grid.bounding_box()
    row_major = spec.orientation.name == "ROW_MAJOR"
    h_cores = (box.end.y if row_major else box.end.x) + 1
    w_cores = (box.end.x if row_major else box.end.y) + 1
    mt, kt = shape[0] * shape[2] // TILE, shape[3] // TILE
    if num_kv_heads % w_cores or mt % h_cores or kt % w_cores:
        return None

    def build():
        block_ht, block_wt = mt // h_cores, kt // w_cores
        groups_per_block = num_kv_heads // w_cores
        dt = head_dim // TILE
        q_tiles = block_ht * (num_q_heads // num_kv_heads) * dt * groups_per_block
        kv_tiles = block_ht * dt * groups_per_block
        tile = TILE_BYTES[x.dtype]
        cbs = [CircularBuffer((0,), block_ht * block_wt, tile, True), CircularBuffer((16,), q_tiles, tile, True),
               CircularBuffer((17,), kv_tiles, tile, True), CircularBuffer((18,), kv_tiles, tile, True)]
        if transpose_k_heads:
            cbs.append(CircularBuffer((24,), kv_tiles, tile))
        ranges = tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in spec.grid.ranges())
        return make_program("CreateQKVHeadsDeviceOperation", "CreateQKVHeadsShardedProgramFactory", cbs, ranges)

    return cached(key, build)


def rotary_llama_program(x, cos, sin, trans_mat, out_dtype: DataType) -> Program:
    """RotaryEmbeddingLlamaDeviceOperation's prefill factory (rotary_embedding_llama_multi_core_program_factory.cpp)
    for an interleaved x [B, H, S, D] with interleaved cos/sin [1, 1 or H, S, D], on every core of the grid.

    Each core takes ceil(St / min(cores / B, St)) rows of tiles of every head; c_0 the input (those rows of
    2*Dt tiles), c_1 cos and c_2 sin (2*Dt tiles a row), c_3 one trans_mat tile, c_24 / c_25 / c_26 the rotated
    input and the cos / sin products (Dt tiles each), c_16 the output (2*Dt). With more than 8 rows a core or
    cos/sin per head, the reload kernel keeps only 2*Dt tiles of input, cos and sin."""
    dev = x.device()
    cos_heads = cos._value.shape[1]
    key = ("RotaryEmbeddingLlamaDeviceOperation", shape_of(x), cos_heads, x.dtype, cos.dtype, sin.dtype,
           trans_mat.dtype, out_dtype, grid_of(dev))

    def build():
        shape = tuple(x.padded_shape)
        batch, heads, st, dt = shape[0], shape[1], shape[2] // TILE, shape[3] // TILE
        gx, gy = grid_of(dev)
        cores = gx * gy
        seq_pf = min(cores // min(batch, cores), st)
        rows = -(-st // seq_pf)
        reload = rows * heads > 8 or cos_heads == heads
        per_row = 2 * dt
        in_tiles, cos_sin_tiles = (per_row, per_row) if reload else (rows * per_row, rows * per_row)
        cbs = (CircularBuffer((0,), in_tiles, TILE_BYTES[x.dtype]),
               CircularBuffer((1,), cos_sin_tiles, TILE_BYTES[cos.dtype]),
               CircularBuffer((2,), cos_sin_tiles, TILE_BYTES[sin.dtype]),
               CircularBuffer((3,), 1, TILE_BYTES[trans_mat.dtype]), CircularBuffer((24,), dt, TILE_BYTES[x.dtype]),
               CircularBuffer((25,), dt, TILE_BYTES[cos.dtype]), CircularBuffer((26,), dt, TILE_BYTES[sin.dtype]),
               CircularBuffer((16,), per_row, TILE_BYTES[out_dtype]))
        return make_program("RotaryEmbeddingLlamaDeviceOperation", "RotaryEmbeddingLlamaMultiCore", cbs,
                            ((0, 0, gx - 1, gy - 1),))

    return cached(key, build)
