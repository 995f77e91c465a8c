"""SdpaDecodeDeviceOperation: scaled_dot_product_attention_decode and its paged form, one query token a user.

As sdpa_decode.cpp and sdpa_decode_program_factory.cpp (tt-metal's ttnn/cpp/ttnn/operations/transformer/
sdpa_decode/) build it, at commit 007f92d03cc4f892fffcec8072cbf29d32aadf3d (docs/device_work.md says why that one).
q [1, B, H, D] against k, v [B, KVH, S, D] (paged: [blocks, KVH, block_size, D] and a page table [B, blocks a user]).

- k_chunk_size: the program config's when it sets one, else the largest power-of-two divisor of S up to 512; the
  paged form leaves it 0 (the kernels size chunks at run time) and its K / V CBs hold the destination register's
  8 tiles (4 with fp32_dest_acc_en) a chunk.
- Every CB lives on every core of the grid (the program config's compute_with_storage_grid_size, else the device's).
- A causal decode of at most 16 bfloat16 query heads uses 16x32 half tiles for Q, the mask, the scalars, the
  intermediates and the statistics (use_half_tile); the output stays in full tiles.
- The cores a head's keys are split over (num_cores_per_head) hand partial results to a reducer: c_19 holds
  (out + 2 statistics) tiles from each of the others, and is left out when a head has one core (0 tiles).

Example:
    >>> from device_sim.programs.sdpa_decode import sdpa_decode_program
    >>> from device_sim.types import DataType
    >>> bf16 = DataType.BFLOAT16
    >>> p = sdpa_decode_program(batch=8, q_heads=8, head_dim=64, kv_heads=1, seq_len=256, q_dtype=bf16, k_dtype=bf16,
    ...                         v_dtype=bf16, out_dtype=bf16, grid=(8, 8), is_causal=True)
    >>> p.name, p.cbs[1].num_pages  # K: a 256-row chunk (8 tiles) x 2 tiles of D, double-buffered
    ('SdpaDecodeDeviceOperation', 32)
"""

from __future__ import annotations

from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, Program, cached, make_program
from device_sim.types import DataType

_BF16 = DataType.BFLOAT16
MAX_K_CHUNK = 512  # get_chunk_size's cap, in rows


def default_k_chunk_size(seq_len: int) -> int:
    """sdpa_decode.cpp's get_chunk_size: the largest power-of-two divisor of seq_len (from 2), at most 512."""
    i = 1
    while i < seq_len and seq_len % (1 << (i + 1)) == 0:
        i += 1
    return min(MAX_K_CHUNK, 1 << i)


def sdpa_decode_program(*, batch: int, q_heads: int, head_dim: int, kv_heads: int, seq_len: int, q_dtype, k_dtype,
                        v_dtype, out_dtype, grid: tuple[int, int], is_causal: bool, k_chunk_size: int | None = None,
                        max_cores_per_head_batch: int | None = None, fp32_dest_acc_en: bool = False,
                        mask_dtype=None, sink: bool = False, cur_pos_page: int = 0, cur_pos_sharded: bool = False,
                        page_table_page: int = 0, page_table_sharded: bool = False, sliding_window: int = 0,
                        out_sharded: bool = False, head_dim_v: int = 0, q_heads_parallel_factor: int = 1) -> Program:
    """The decode's one program. `seq_len` is S (paged: blocks a user x block_size); `k_chunk_size` None takes
    sdpa_decode.cpp's default, 0 the paged form's run-time chunks; `max_cores_per_head_batch` None means no program
    config (every core may take a head); `cur_pos_page` / `page_table_page` are those tensors' aligned page bytes (0:
    not given). Multi-latent attention gives `head_dim_v`, V's (and the output's) head size (0: head_dim), and a
    sharded Q's `q_heads_parallel_factor`: its heads split over that many core groups, each a user of its own."""
    key = ("SdpaDecodeDeviceOperation", batch, q_heads, head_dim, kv_heads, seq_len, q_dtype, k_dtype, v_dtype,
           out_dtype, grid, is_causal, k_chunk_size, max_cores_per_head_batch, fp32_dest_acc_en, mask_dtype, sink,
           cur_pos_page, cur_pos_sharded, page_table_page, page_table_sharded, sliding_window, out_sharded,
           head_dim_v, q_heads_parallel_factor)

    def build():
        chunk = default_k_chunk_size(seq_len) if k_chunk_size is None else k_chunk_size
        cores = grid[0] * grid[1]
        # core allocation: the users split the grid, then each user's KV heads split its share
        per_head_cap = max_cores_per_head_batch if max_cores_per_head_batch is not None else cores
        users = batch * q_heads_parallel_factor  # sdpa_decode_program_factory.cpp: B *= q_heads_parallel_factor
        per_batch = min(cores, per_head_cap * users * kv_heads) // users
        per_head = max(1, per_batch // kv_heads)
        pnht = max(1, -(-q_heads // TILE) // q_heads_parallel_factor)  # query heads padded to a tile's rows, a group's
        dht, vdht = head_dim // TILE, (head_dim_v or head_dim) // TILE
        dst = 4 if fp32_dest_acc_en else 8  # tiles the destination register holds
        sk = chunk // TILE or dst  # K / V chunk tiles; 0 (paged, no config): sized at run time, up to dst
        half = is_causal and q_heads <= 16 and q_dtype == _BF16
        f16 = TILE_BYTES[_BF16] // 2 if half else TILE_BYTES[_BF16]  # a Float16_b (half) tile
        q_tile = TILE_BYTES[q_dtype] // 2 if half else TILE_BYTES[q_dtype]
        mask_tile = (TILE_BYTES[mask_dtype] if mask_dtype is not None and not half else f16)
        q_tiles, qk, out_tiles, stats = pnht * dht, pnht * sk, pnht * vdht, pnht
        cbs = [(0, q_tiles, q_tile), (1, sk * dht * 2, TILE_BYTES[k_dtype]), (2, sk * vdht * 2, TILE_BYTES[v_dtype]),
               (3, qk, mask_tile)]
        if sink:
            cbs.append((4, stats, f16))
        cbs += [(5, 1, f16), (6, stats, f16), (7, stats, f16)]
        if cur_pos_page:
            cbs.append((8, 1, cur_pos_page, cur_pos_sharded))
        if page_table_page:
            cbs.append((9, batch if page_table_sharded else 1, page_table_page, page_table_sharded))
        cbs += [(10, q_tiles, q_tile), (11, 1, TILE_BYTES[_BF16]), (12, 1, f16)]
        if sliding_window:
            cbs.append((13, qk, mask_tile))
        cbs += [(24, qk, f16), (25, out_tiles, f16), (26, out_tiles, f16)]
        cbs += [(i, stats, f16) for i in (27, 28, 29, 30, 31, 21, 22)]
        cbs += [(23, out_tiles, f16), (16, out_tiles, f16), (17, stats, f16), (18, stats, f16)]
        if per_head > 1:  # the other cores' partial outputs and statistics, gathered on the reducer
            cbs.append((19, (out_tiles + 2 * stats) * (per_head - 1), f16))
        cbs.append((20, out_tiles, TILE_BYTES[out_dtype], out_sharded))
        return make_program("SdpaDecodeDeviceOperation", "SdpaDecodeProgramFactory",
                            [CircularBuffer((c[0],), c[1], c[2], c[3] if len(c) > 3 else False) for c in cbs],
                            ((0, 0, grid[0] - 1, grid[1] - 1),))

    return cached(key, build)
