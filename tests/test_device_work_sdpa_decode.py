"""Device work of scaled_dot_product_attention_decode and its paged form: SdpaDecodeDeviceOperation's CBs.

Each test builds a known shape and checks the CBs against sdpa_decode_program_factory.cpp's arithmetic
(device_sim/programs/sdpa_decode.py cites it), with the arithmetic in the comments.
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import cbs
from programs_heard import launched as heard  # tests/programs_heard.py

import device_sim as ttnn
from device_sim.programs.sdpa_decode import default_k_chunk_size

BF16, BF8, HALF = 2048, 1088, 1024  # bytes of a 32x32 bfloat16 / bfloat8_b tile and of a 16x32 bfloat16 half tile


def tt(device, shape, dtype=ttnn.bfloat16, layout=ttnn.TILE):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=layout, device=device)


def test_the_default_key_chunk_is_the_largest_power_of_two_dividing_the_cache_up_to_512():
    assert [default_k_chunk_size(s) for s in (64, 96, 256, 2048, 8192)] == [64, 32, 256, 512, 512]


def test_a_causal_decode_of_few_heads_uses_half_tiles_and_splits_each_head_over_the_users_cores(device):
    # 8 users, 8 query heads of 64 (PNHt = 1, DHt = 2), one KV head, caches [8, 1, 256, 64] in bfloat8_b.
    # k_chunk_size = 256 (S's largest power-of-two divisor): Sk_chunk_t = 8. The 64 cores split over 8 users:
    # 8 cores a head, so c_19 gathers 7 x (2 output + 2 statistics) tiles. Causal, 8 <= 16 bfloat16 heads: Q, mask,
    # scalars, intermediates and statistics in 16x32 half tiles (1024 B); K / V and the output in full tiles.
    q = tt(device, (1, 8, 8, 64))
    k = tt(device, (8, 1, 256, 64), ttnn.bfloat8_b)
    [p] = heard(device, lambda: ttnn.transformer.scaled_dot_product_attention_decode(q, k, k, cur_pos=[5] * 8))
    assert (p.name, p.factory, p.ranges) == ("SdpaDecodeDeviceOperation", "SdpaDecodeProgramFactory",
                                             ((0, 0, 7, 7),))
    assert cbs(p) == [(0, 2, HALF), (1, 8 * 2 * 2, BF8), (2, 8 * 2 * 2, BF8), (3, 8, HALF), (5, 1, HALF),
                      (6, 1, HALF), (7, 1, HALF), (10, 2, HALF), (11, 1, BF16), (12, 1, HALF), (24, 8, HALF),
                      (25, 2, HALF), (26, 2, HALF), (27, 1, HALF), (28, 1, HALF), (29, 1, HALF), (30, 1, HALF),
                      (31, 1, HALF), (21, 1, HALF), (22, 1, HALF), (23, 2, HALF), (16, 2, HALF), (17, 1, HALF),
                      (18, 1, HALF), (19, 28, HALF), (20, 2, BF16)]
    # per core: 2 x 32 bfloat8_b K / V tiles, c_11's identity and c_20's 2 output tiles in full bfloat16, and half
    # tiles: Q 2, mask 8, c_5..c_7 3, tilized Q 2, c_12 1, QK 8, c_25 / c_26 4, statistics 7, c_23 2, c_16 2,
    # c_17 / c_18 2, c_19 28 = 69
    assert p.cb_region_end - p.cb_base == 64 * BF8 + 3 * BF16 + 69 * HALF


def test_a_masked_decode_with_a_program_config_takes_its_grid_chunk_and_cores_per_head(device):
    # 2 users, 32 query heads (PNHt = 1), 4 KV heads of 32, S = 128; not causal, so full tiles and a bfloat8_b mask.
    # SDPAProgramConfig: a 4x2 grid, k_chunk_size 64 (Sk_chunk_t 2), max 16 cores a head: 8 cores / 2 users = 4 a
    # user, 1 a head: no c_19. fp32_dest_acc_en does not change a set chunk.
    q, k = tt(device, (1, 2, 32, 32)), tt(device, (2, 4, 128, 32))
    mask = tt(device, (1, 2, 32, 128), ttnn.bfloat8_b)
    config = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=ttnn.CoreCoord(4, 2), q_chunk_size=32,
                                    k_chunk_size=64)
    [p] = heard(device, lambda: ttnn.transformer.scaled_dot_product_attention_decode(
        q, k, k, is_causal=False, attn_mask=mask, program_config=config,
        compute_kernel_config=ttnn.WormholeComputeKernelConfig(fp32_dest_acc_en=True)))
    assert p.ranges == ((0, 0, 3, 1),)
    assert [i for i, *_ in cbs(p)] == [0, 1, 2, 3, 5, 6, 7, 10, 11, 12, 24, 25, 26, 27, 28, 29, 30, 31, 21, 22, 23,
                                       16, 17, 18, 20]
    assert cbs(p)[:4] == [(0, 1, BF16), (1, 2 * 1 * 2, BF16), (2, 4, BF16), (3, 2, BF8)]  # mask: PNHt x Sk_chunk_t


def test_a_paged_decode_sizes_key_chunks_at_run_time_and_reads_the_page_table_and_positions(device):
    # 2 users, 4 heads of 32 (half tiles: causal, bfloat16), 2 KV heads; blocks [4, 2, 32, 32], page table [2, 2]:
    # S = 2 blocks x 32. No program config: k_chunk_size 0, so K / V hold the destination's 8 tiles a chunk,
    # doubled: 16. The int32 position [2] and page-table [2, 2] rows are 8 B, 32 B in DRAM: c_8 and c_9.
    # 64 cores / 2 users = 32 a user, 16 a KV head: c_19 = 15 x (1 + 2) tiles.
    q, blocks = tt(device, (1, 2, 4, 32)), tt(device, (4, 2, 32, 32))
    table = ttnn.from_torch(torch.tensor([[0, 1], [3, 2]]), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR, device=device)
    pos = ttnn.from_torch(torch.tensor([5, 40]), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR, device=device)
    [p] = heard(device, lambda: ttnn.transformer.paged_scaled_dot_product_attention_decode(
        q, blocks, blocks, table, cur_pos_tensor=pos))
    got = {i: (n, size) for i, n, size in cbs(p)}
    assert (got[1], got[2], got[3], got[24]) == ((16, BF16), (16, BF16), (8, HALF), (8, HALF))
    assert (got[8], got[9], got[19]) == ((1, 32), (1, 32), (45, HALF))


def test_a_decode_whose_cbs_reach_an_l1_tensor_fails_with_tt_metals_clash_error():
    dev = ttnn.open_device(0, l1_size=98_304 + 262_144)  # 256 KiB above the CB base per core
    try:
        q, k = tt(dev, (1, 8, 8, 64)), tt(dev, (8, 1, 256, 64), ttnn.bfloat8_b)
        ttnn.transformer.scaled_dot_product_attention_decode(q, k, k, cur_pos=[5] * 8)  # 143 KiB of CBs: fits
        held = ttnn.from_torch(torch.zeros(32 * 64 * 64, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev,
                               memory_config=ttnn.L1_MEMORY_CONFIG)  # 64 tiles = 128 KiB per core: 128 KiB left
        live = len(dev.memory.live_buffers())
        with pytest.raises(RuntimeError, match="Statically allocated circular buffers in program .* clash with L1 "):
            ttnn.transformer.scaled_dot_product_attention_decode(q, k, k, cur_pos=[5] * 8)
        assert len(dev.memory.live_buffers()) == live  # the fresh output was freed
        ttnn.deallocate(held)
    finally:
        ttnn.close_device(dev)
