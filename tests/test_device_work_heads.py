"""The head-splitting ops outside the decode family launch TT-NN's device operations for them.

CBs are hand-checked against the factories device_sim/programs/falcon_heads.py cites.
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import launched  # tests/programs_heard.py

import device_sim as ttnn

BF16 = 2048  # bytes of one bfloat16 tile


def test_falcon7b_heads_double_buffer_one_row_of_tiles_per_block(device):
    x = ttnn.from_torch(torch.randn(2, 1, 96, 4672), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    [p] = launched(device, lambda: ttnn.experimental.nlp_create_qkv_heads_falcon7b(x))
    # 4672 / 32 = 146 tiles a block, twice; 2 x 96 / 32 = 6 blocks on 6 cores, column by column
    assert (p.name, [(cb.indices[0], cb.num_pages, cb.page_size) for cb in p.cbs], p.ranges) == (
        "NlpCreateHeadsFalcon7BDeviceOperation", [(0, 292, BF16)], ((0, 0, 0, 5),))


def test_falcon7b_heads_whose_cbs_clash_free_q_k_and_v(device):
    c = device.config
    rows = (c.l1_size - c.l1_unreserved_base - 64 * 1024) * 64 // 64 // 32 * 32  # leaves 64 KiB a core
    blocker = ttnn.from_torch(torch.zeros(rows, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                              memory_config=ttnn.L1_MEMORY_CONFIG)
    x = ttnn.from_torch(torch.randn(1, 1, 32, 4672), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    live = len(device.memory.live_buffers())
    with pytest.raises(RuntimeError, match="clash with L1 buffers"):  # 292 tiles of 2 KiB pass 64 KiB
        ttnn.experimental.nlp_create_qkv_heads_falcon7b(x)
    assert len(device.memory.live_buffers()) == live  # q, k and v were freed
    ttnn.deallocate(blocker)


def test_a_kv_cache_slice_load_writes_straight_into_its_sharded_output(device):
    cache = ttnn.from_torch(torch.randn(2, 2, 128, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    [p] = launched(device, lambda: ttnn.experimental.nlp_kv_cache_load_slice(cache, seq_len_start=32, seq_len_end=96))
    # one [64, 32] shard per user and head (B * KVH = 4 cores, row by row): 2 tiles, the output's own buffer
    assert (p.name, [(cb.indices[0], cb.num_pages, cb.page_size, cb.globally_allocated) for cb in p.cbs],
            p.ranges) == ("NlpKVCacheLoadSliceDeviceOperation", [(0, 2, BF16, True)], ((0, 0, 3, 0),))


def test_bert_fused_qkv_split_takes_a_core_per_row_of_tiles(device):
    x = ttnn.from_torch(torch.randn(2, 1, 32, 384), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    [p] = launched(device, lambda: ttnn.experimental.split_query_key_value_and_split_heads(
        x, ttnn.CoreCoord(4, 2), num_heads=2))
    # 384 / 32 = 12 tiles a row, 4 a tensor: c_0 8 (K, double-buffered), c_1 16 (Q and V, double-buffered), c_16 4;
    # S / 32 = 1 core along x, B = 2 along y
    assert (p.name, [(cb.indices[0], cb.num_pages, cb.page_size) for cb in p.cbs], p.ranges) == (
        "SplitFusedQKVAndSplitHeadsDeviceOperation", [(0, 8, BF16), (1, 16, BF16), (16, 4, BF16)], ((0, 0, 0, 1),))


def test_bert_fused_qkv_split_past_the_given_grid_launches_nothing(device):
    x = ttnn.from_torch(torch.randn(3, 1, 32, 384), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert launched(device, lambda: ttnn.experimental.split_query_key_value_and_split_heads(
        x, ttnn.CoreCoord(4, 2), num_heads=2)) == []  # B = 3 rows of cores on a grid 2 high: TT-NN asserts
