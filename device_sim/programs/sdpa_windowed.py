"""WindowedScaledDotProductAttentionDeviceOperation: ttnn.transformer.windowed_scaled_dot_product_attention's program.

tt-metal's ttnn/cpp/ttnn/operations/transformer/sdpa_windowed/device/sdpa_windowed_program_factory.cpp
(WindowedSDPAProgramFactory, commit 6f29f13c3c2c): the SDPA multi-core factory's blocking with the windows' bounds
read into a CB and the block-diagonal mask made on the cores, never a mask tensor.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.sdpa_windowed import windowed_sdpa_program
    >>> dev = ttnn.open_device()
    >>> q = ttnn.from_torch(torch.ones(1, 2, 64, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> cu = ttnn.from_torch(torch.tensor([0, 16, 64]), dtype=ttnn.int32, device=dev)
    >>> p = windowed_sdpa_program(q, q, q, cu, ttnn.bfloat16)
    >>> [(cb.indices, cb.num_pages) for cb in p.cbs][:5]  # Q, K, V chunks, the bounds, the mask
    [((0,), 1), ((1,), 2), ((2,), 2), ((3,), 1), ((4,), 2)]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, Program, cached, grid_of, make_program
from device_sim.types import DataType

NAME = "WindowedScaledDotProductAttentionDeviceOperation"
_BF16, _BFP4 = DataType.BFLOAT16, DataType.BFLOAT4_B


def windowed_sdpa_program(q, k, v, cu_window_seqlens, out_dtype: DataType, *, program_config=None) -> Program:
    """WindowedSDPAProgramFactory over q [B, H, S, D], k, v [B, KVH, S, D], on every core of the grid (the program
    config's, else the device's).

    Sq_chunk_t, Sk_chunk_t = q_chunk_size / 32, k_chunk_size / 32 (default 32 each), DHt = D / 32. The work is
    split over batch, then heads, then q chunks; a core with two or more q chunks double-buffers Q. c_0 Q
    (Sq_chunk_t * DHt, doubled so), c_1 K and c_2 V (Sk_chunk_t * DHt, doubled), c_3 the window bounds (one tile
    of their int32 / uint32 format: the factory reads the whole small tensor at once), c_4 the mask it builds
    (Sq_chunk_t * Sk_chunk_t bfloat4_b, doubled), c_5 and c_7 one bfloat16 scalar tile each, c_24 Q K^T
    (Sq_chunk_t * Sk_chunk_t), c_25 / c_26 the output accumulators (Sq_chunk_t * DHt), c_27..c_31 the running max
    and sum (Sq_chunk_t each), c_16 the output chunk in the output's format; intermediates bfloat16 (the factory
    keeps them so even with an fp32 destination).
    """
    dev = q.device()
    q_chunk = program_config.q_chunk_size if program_config is not None else 32
    k_chunk = program_config.k_chunk_size if program_config is not None else 32
    grid = getattr(program_config, "compute_with_storage_grid_size", None)
    gx, gy = (grid.x, grid.y) if grid is not None and hasattr(grid, "x") else (tuple(grid) if grid else grid_of(dev))
    key = (NAME, q._value.shape, q.dtype, k.dtype, v.dtype, cu_window_seqlens.dtype, out_dtype, q_chunk, k_chunk,
           gx, gy)

    def build():
        B, NQH, Sq, DH = q._value.shape
        sq_t, sk_t, dht = q_chunk // TILE, k_chunk // TILE, DH // TILE
        q_chunks = -(-Sq // q_chunk)
        cores = gx * gy
        batch_pf = min(B, cores)
        nh_pf = min(cores // batch_pf, NQH)
        q_pf = min(cores // (batch_pf * nh_pf), q_chunks)
        q_per_core = -(-q_chunks // q_pf)
        im = TILE_BYTES[_BF16]
        cbs = [CircularBuffer((0,), sq_t * dht * (2 if q_per_core > 1 else 1), TILE_BYTES[q.dtype]),
               CircularBuffer((1,), sk_t * dht * 2, TILE_BYTES[k.dtype]),
               CircularBuffer((2,), sk_t * dht * 2, TILE_BYTES[v.dtype]),
               CircularBuffer((3,), 1, TILE_BYTES[cu_window_seqlens.dtype]),
               CircularBuffer((4,), sq_t * sk_t * 2, TILE_BYTES[_BFP4]),
               CircularBuffer((5,), 1, im), CircularBuffer((7,), 1, im),
               CircularBuffer((24,), sq_t * sk_t, im), CircularBuffer((25,), sq_t * dht, im),
               CircularBuffer((26,), sq_t * dht, im)]
        cbs += [CircularBuffer((i,), sq_t, im) for i in range(27, 32)]
        cbs.append(CircularBuffer((16,), sq_t * dht, TILE_BYTES[out_dtype]))
        return make_program(NAME, "WindowedSDPAProgramFactory", cbs, ((0, 0, gx - 1, gy - 1),))

    return cached(key, build)
