"""Device work of the op families beyond matmul/softmax/element-wise: layer_norm, data movement, reductions.

Each test builds a known shape and checks the device operation and its CBs against the program
factory's formula, worked out by hand in the comments (device_sim/programs/ cites the factories).
"""

from __future__ import annotations

import json

import pytest
import torch

import device_sim as ttnn
import ttreport
from device_sim.programs import data_movement, normalization, reduction

BF16, BF8, F32 = 2048, 1088, 4096  # bytes of one 32x32 tile


def tt(device, shape, dtype=ttnn.bfloat16, layout=ttnn.TILE, memory_config=None):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=layout, device=device,
                           memory_config=memory_config)


def cbs(program) -> list[tuple]:
    return [(cb.indices[0], cb.num_pages, cb.page_size) for cb in program.cbs]


def test_an_interleaved_layer_norm_with_gamma_and_beta_holds_whole_rows_of_tiles(device):
    # [1, 1, 64, 256]: Wt = 8, block = 8 (no fp32 destination). x, x-mean and (x-mean)^2 keep a row (8 tiles);
    # the output two blocks (16); gamma and beta a row each in their dtype; 2 rows of tiles on 2 cores (row-wise).
    x, w, b = tt(device, (1, 1, 64, 256)), tt(device, (1, 256)), tt(device, (1, 256), ttnn.bfloat8_b)
    p = normalization.layer_norm_program(x, ttnn.bfloat16, gamma=w, beta=b)
    assert p.name == "LayerNormDeviceOperation"
    assert cbs(p) == [(0, 8, BF16), (16, 16, BF16), (18, 2, BF16), (2, 2, BF16), (3, 2, BF16), (19, 2, BF16),
                      (24, 8, BF16), (20, 8, BF16), (21, 8, BF16), (22, 16, BF16), (5, 8, BF16), (6, 8, BF8)]
    assert p.ranges == ((0, 0, 1, 0),)


def test_rms_norm_with_a_residual_and_an_fp32_destination(device):
    # rms_norm drops c_18 and keeps c_24 only because of the residual (no c_23); the residual streams through
    # c_1 in two blocks. fp32_dest_acc_en: block = 4 (the largest divisor of 8 up to 4), float32 intermediates.
    x, res = tt(device, (1, 1, 32, 256)), tt(device, (1, 1, 32, 256))
    p = normalization.layer_norm_program(x, ttnn.bfloat16, rms=True, residual=res, fp32_dest_acc_en=True)
    assert cbs(p) == [(0, 8, BF16), (16, 8, BF16), (2, 2, BF16), (3, 2, BF16), (19, 2, F32), (24, 8, F32),
                      (20, 8, F32), (21, 8, F32), (1, 8, BF16)]


def test_a_layer_norm_too_wide_for_l1_takes_the_large_tensor_kernels_buffers(device):
    # Wt = 160: five 160-tile row buffers (counted even without gamma/beta) pass 95% of L1, so the factory
    # caps the row buffers at 120 tiles (no weights, bfloat16 input)
    x = tt(device, (1, 1, 32, 160 * 32))
    p = normalization.layer_norm_program(x, ttnn.bfloat16)
    assert [c for c in cbs(p) if c[0] in (0, 24, 20)] == [(0, 120, BF16), (24, 120, BF16), (20, 120, BF16)]


def test_a_block_sharded_layer_norm_backs_input_and_output_cbs_with_the_shards(device):
    # [256, 1024] on 8x8 cores: block_h = 1, block_w = 4 tiles; 8 blocks across (row-wise), so the partial
    # statistics from the other cores take ceil(32 / 4) = 8 tiles (c_10, c_13); one row per all-to-all worker
    cfg = ttnn.create_sharded_memory_config((1, 1, 256, 1024), core_grid=ttnn.CoreGrid(y=8, x=8),
                                            strategy=ttnn.ShardStrategy.BLOCK)
    x = ttnn.to_memory_config(tt(device, (1, 1, 256, 1024)), cfg)
    pc = ttnn.LayerNormShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(8, 8), subblock_w=4,
                                                     block_h=1, block_w=4, inplace=False)
    p = normalization.sharded_layer_norm_program(x, ttnn.bfloat16, pc)
    assert cbs(p) == [(0, 4, BF16), (2, 1, BF16), (4, 1, BF16), (3, 1, BF16), (24, 4, BF16), (18, 4, BF16),
                      (8, 1, BF16), (9, 1, BF16), (10, 8, BF16), (11, 1, BF16), (12, 1, BF16), (13, 8, BF16),
                      (15, 1, BF16), (20, 1, BF16), (16, 4, BF16)]
    assert [cb.globally_allocated for cb in p.cbs if cb.indices[0] in (0, 16)] == [True, True]
    assert p.cb_region_end == 33 * BF16 and p.ranges == ((0, 0, 7, 7),)
    y = ttnn.layer_norm(x, program_config=pc, memory_config=cfg)  # runs, launching that program
    assert y.is_sharded()


def test_tilize_and_untilize_hold_rows_of_tiles(device):
    # tilize [64, 320] row-major: 2 rows of 10 tiles on 2 cores; untilize [4096, 64]: 128 rows of 2 tiles over
    # 64 cores, two rows a core, so c_0 and c_16 double-buffer the row (4 tiles)
    rm = tt(device, (1, 1, 64, 320), layout=ttnn.ROW_MAJOR)
    p = data_movement.layout_program(rm, ttnn.to_layout(rm, ttnn.TILE))
    assert (p.name, cbs(p), p.ranges) == ("TilizeDeviceOperation", [(0, 10, BF16), (16, 10, BF16)], ((0, 0, 1, 0),))
    t = tt(device, (1, 1, 4096, 64))
    p = data_movement.layout_program(t, ttnn.to_layout(t, ttnn.ROW_MAJOR))
    assert (p.name, cbs(p), p.cores.num_cores()) == ("UntilizeDeviceOperation", [(0, 4, BF16), (16, 4, BF16)], 64)
    small = tt(device, (1, 1, 2048, 64))  # one row a core: no double buffering
    assert cbs(data_movement.untilize_program(small, ttnn.bfloat16)) == [(0, 2, BF16), (16, 2, BF16)]


def test_streaming_data_movement_ops_use_two_page_cbs(device):
    x = tt(device, (1, 1, 64, 320))  # 20 tiles: 20 cores, column by column (split_work_to_cores)
    tc = data_movement.typecast_program(x, ttnn.bfloat8_b)
    assert (tc.name, cbs(tc), tc.ranges) == ("TypecastDeviceOperation", [(0, 2, BF16), (2, 2, BF8)],
                                             ((0, 0, 1, 7), (2, 0, 2, 3)))
    assert cbs(data_movement.copy_program(x, ttnn.bfloat16)) == [(0, 2, BF16)]  # no dtype change: one CB
    assert cbs(data_movement.copy_program(x, ttnn.float32)) == [(0, 2, BF16), (16, 2, F32)]
    rm = tt(device, (1, 1, 4, 100), layout=ttnn.ROW_MAJOR)  # 200 B rows, rounded to 224 B pages
    assert cbs(data_movement.copy_program(rm, ttnn.bfloat16)) == [(0, 2, 224)]
    tr = data_movement.transpose_wh_program(x, ttnn.bfloat16)
    assert (tr.name, cbs(tr)) == ("TransposeDeviceOperation", [(0, 2, BF16), (16, 2, BF16)])


def test_moving_to_and_from_l1_shards(device):
    x = tt(device, (1, 1, 64, 256))
    cfg = ttnn.create_sharded_memory_config((64, 32), core_grid=ttnn.CoreGrid(y=1, x=8),
                                            strategy=ttnn.ShardStrategy.WIDTH, use_height_and_width_as_shard_shape=True)
    s = ttnn.to_memory_config(x, cfg)
    i2s = data_movement.memory_move_program(x, s)
    # no dtype change: the output CB c_0 is the 2-tile shard itself; c_1 the 4-page scratchpad of align(2048 + 32, 32)
    assert (i2s.name, cbs(i2s)) == ("InterleavedToShardedDeviceOperation", [(0, 2, BF16), (1, 4, 2080)])
    assert [cb.globally_allocated for cb in i2s.cbs] == [True, False] and i2s.ranges == ((0, 0, 7, 0),)
    # to bfloat8_b: the input streams through c_0 (its pages, DRAM-aligned) and the shard is c_16
    conv = data_movement.interleaved_to_sharded_program(x, ttnn.to_memory_config(x, cfg, dtype=ttnn.bfloat8_b))
    assert cbs(conv) == [(0, 2, BF16), (16, 2, BF8), (1, 4, 2080)]
    back = ttnn.to_memory_config(s, ttnn.DRAM_MEMORY_CONFIG)
    s2i = data_movement.memory_move_program(s, back)
    assert (s2i.name, cbs(s2i), s2i.cb_region_end) == ("ShardedToInterleavedDeviceOperation", [(0, 2, BF16)], 0)


def test_reductions_over_w_h_and_both(device):
    x = tt(device, (1, 1, 64, 256))  # Ht = 2, Wt = 8
    (w,) = reduction.reduce_programs(x, ttnn.bfloat16, (3,))
    assert (w.name, cbs(w), w.ranges) == ("ReduceDeviceOperation", [(0, 2, BF16), (2, 2, BF16), (3, 2, BF16),
                                                                    (4, 1, BF16)], ((0, 0, 0, 1),))
    (h,) = reduction.reduce_programs(x, ttnn.bfloat16, (2,))
    assert (cbs(h), h.cores.num_cores()) == ([(0, 2, BF16), (2, 1, BF16), (16, 2, BF16)], 8)  # one per column
    both = reduction.reduce_programs(x, ttnn.bfloat16, (0, 1, 2, 3))
    assert [p.factory for p in both] == ["ReduceMultiCoreWProgramFactory", "ReduceMultiCoreHProgramFactory"]
    assert both[1].cores.num_cores() == 1  # H reads W's one-tile-wide output
    assert reduction.reduce_programs(tt(device, (2, 3, 32, 32)), ttnn.bfloat16, (1,)) == ()  # not modelled


def test_every_op_of_a_small_model_launches_its_device_operations(device, tmp_path):
    x, w, b = tt(device, (1, 1, 64, 256)), tt(device, (256, 256)), tt(device, (1, 256))
    rm = tt(device, (1, 1, 64, 256), layout=ttnn.ROW_MAJOR)
    with ttreport.capture("model", config=ttreport.Config(root=tmp_path, device_graphs=True)) as handle:
        h = ttnn.layer_norm(x, weight=b, bias=b)
        h = ttnn.linear(h, w, bias=b)
        h = ttnn.gelu(h)
        h = ttnn.add(h, x)
        h = ttnn.softmax(h, dim=-1)
        h = ttnn.transpose(h, -2, -1)
        h = ttnn.to_memory_config(h, ttnn.L1_MEMORY_CONFIG)
        h = ttnn.typecast(h, ttnn.bfloat8_b)
        h = ttnn.concat([h, h], dim=-1)
        ttnn.sum(h, dim=-1)
        ttnn.to_layout(rm, ttnn.TILE)
    with ttreport.open(handle.path) as r:
        rows = r.sql("SELECT o.name, g.captured_graph FROM operations o LEFT JOIN captured_graph g "
                     "USING (operation_id) WHERE o.parent_operation_id IS NULL ORDER BY o.operation_id")
    names = {row["name"]: [n["params"]["name"] for n in json.loads(row["captured_graph"] or "[]")
                           if n["node_type"] == "function_start"][1:] for row in rows}
    assert names == {
        "ttnn.layer_norm": ["LayerNormDeviceOperation"], "ttnn.linear": ["MatmulDeviceOperation"],
        "ttnn.gelu": ["UnaryDeviceOperation"], "ttnn.add": ["BinaryNgDeviceOperation"],
        "ttnn.softmax": ["SoftmaxDeviceOperation"], "ttnn.transpose": ["TransposeDeviceOperation"],
        "ttnn.to_memory_config": ["CopyDeviceOperation"], "ttnn.typecast": ["TypecastDeviceOperation"],
        "ttnn.concat": ["ConcatDeviceOperation"], "ttnn.sum": ["ReduceDeviceOperation"],
        "ttnn.to_layout": ["TilizeDeviceOperation"]}


@pytest.fixture
def small_l1():
    dev = ttnn.open_device(0, l1_size=98_304 + 65_536)  # 64 KiB above the CB base per core
    yield dev
    ttnn.close_device(dev)


def test_a_layer_norm_whose_cbs_reach_an_l1_tensor_fails_with_tt_metals_clash_error(small_l1):
    # [32, 64]: Wt = 2, block = 2; c_0 2, c_16 4, c_18 2, c_2 2, c_3 2, c_19 2, c_24 2, c_20 2, c_21 8 = 26 tiles
    x = tt(small_l1, (1, 1, 32, 64))
    ttnn.layer_norm(x)  # fits while L1 is empty
    held = tt(small_l1, (32 * 64 * 16, 32), memory_config=ttnn.L1_MEMORY_CONFIG)  # 32 KiB per core at the top
    end = small_l1.config.l1_unreserved_base + 26 * BF16
    live = len(small_l1.memory.live_buffers())
    with pytest.raises(RuntimeError, match=rf"Statically allocated circular buffers in program \d+ clash with L1 "
                                           rf"buffers on core range \[0-0 - 0-0\]. L1 buffer allocated at "
                                           rf"{held.buffer_address()} and static circular buffer region ends at "
                                           rf"{end}"):
        ttnn.layer_norm(x)
    assert len(small_l1.memory.live_buffers()) == live  # the failed op's output was freed
    held.deallocate()
    ttnn.layer_norm(x)


def test_a_height_sharded_conv2d_shards_its_input_gathers_the_halo_and_runs_the_conv_program(device):
    from device_sim.programs import conv

    # 1x16x16x32 -> 64 channels, 3x3, padding 1: 256 output rows = 8 tiles over 8 cores (the largest divisor of 8
    # up to 64 cores wasting less than a share), a 32-row shard each, channels kept at 32 (a tiled input)
    shard, halo, conv_p = conv.conv2d_programs(
        batch=1, height=16, width=16, in_channels=32, out_channels=64, kernel=(3, 3), stride=(1, 1),
        padding=(1, 1, 1, 1), dilation=(1, 1), in_dtype=ttnn.bfloat16, in_tile=True, in_sharded=False,
        out_dtype=ttnn.bfloat16, weights_dtype=ttnn.bfloat16, bias=True, grid=(8, 8))
    assert shard.name == "InterleavedToShardedDeviceOperation" and shard.ranges == ((0, 0, 7, 0),)
    # each core's 32 outputs (two output rows) read 72 padded input rows: (32 - 1) + 2 rows of 18 + 2 columns + 1
    assert (halo.name, cbs(halo)) == ("HaloDeviceOperation", [(0, 1, BF16), (1, 72, 64), (2, 1, 64), (3, 1, 64),
                                                             (4, 2, BF16), (5, 2, BF16)])
    # weights: 2 output tiles wide x act_block_w 3 (32 channels x 3 columns); partials and output 1 x 2 tiles;
    # activation and its tilized copy 1 x 3; bias 2; reader indices 32 rows x 2 B; 64 B scratch; the halo'd shard
    assert (conv_p.name, cbs(conv_p)) == ("Conv2dDeviceOperation", [
        (0, 6, BF16), (1, 2, BF16), (2, 3, BF16), (3, 3, BF16), (4, 2, BF16), (5, 2, BF16), (6, 1, 64), (7, 1, 64),
        (8, 72, 64)])
    assert [cb.globally_allocated for cb in conv_p.cbs] == [False, True, False, False, False, True, True, False,
                                                            True]
    assert conv_p.cb_region_end == 14 * BF16 + 64


def test_a_conv2d_whose_cbs_reach_an_l1_tensor_fails_with_tt_metals_clash_error(small_l1):
    image = tt(small_l1, (1, 16, 16, 32))
    w = ttnn.from_torch(torch.randn(64, 32, 3, 3), dtype=ttnn.bfloat16)
    kw = dict(input_tensor=image, weight_tensor=w, device=small_l1, in_channels=32, out_channels=64, batch_size=1,
              input_height=16, input_width=16, kernel_size=(3, 3), padding=(1, 1))
    ttnn.conv2d(**kw)
    held = tt(small_l1, (32 * 64 * 28, 32), memory_config=ttnn.L1_MEMORY_CONFIG)  # 56 KiB per core: 8 KiB left
    with pytest.raises(RuntimeError, match="Statically allocated circular buffers in program .* clash with L1 "
                                           r"buffers on core range \[0-0 - 7-0\]"):
        ttnn.conv2d(**kw)  # sharding the input needs 8,320 B of scratch CB, the conv program itself 24,640 B
    held.deallocate()


def test_embedding_row_major_and_tiled_factories(device):
    from device_sim.programs.embedding import embedding_program

    ids = ttnn.from_torch(torch.zeros(2, 64, dtype=torch.int32), dtype=ttnn.uint32, device=device)
    w = ttnn.from_torch(torch.ones(512, 256), dtype=ttnn.bfloat16, device=device)
    # ROW_MAJOR: 128 rows over 64 cores, two each, so the 512 B weights row (DRAM-aligned to 32 B) is doubled;
    # the ids CB holds 32 B / 4 B = 8 ids, each rounded to 32 B
    rm = embedding_program(ids, w, ttnn.bfloat16, ttnn.ROW_MAJOR)
    assert (rm.name, cbs(rm), rm.cores.num_cores()) == ("EmbeddingsDeviceOperation", [(0, 2, 512), (1, 1, 256)], 64)
    # TILE: blocks of 32 rows (4, on 4 cores); 8 tiles a row, double-buffered in the weights' and the output's
    # format, and 32 ids of 4 B
    tile = embedding_program(ids, w, ttnn.bfloat16, ttnn.TILE, padded=True)
    assert cbs(tile) == [(0, 16, BF16), (1, 1, 128), (2, 16, BF16), (3, 1, 512)]  # c_3 caches the pad row
    assert tile.cores.num_cores() == 4


def test_attention_heads_and_sdpa(device):
    from device_sim.programs import transformer

    x = tt(device, (1, 1, 128, 3 * 4 * 64))
    heads = transformer.create_heads_program(x, transpose_k_heads=True)  # four tiles around the transpose
    assert (heads.name, cbs(heads)) == ("NlpCreateHeadsDeviceOperation", [(1, 4, BF16), (0, 4, BF16),
                                                                          (16, 4, BF16)])
    q, k, v = tt(device, (1, 4, 128, 64)), tt(device, (1, 4, 128, 64)), tt(device, (1, 4, 128, 64))
    # chunks of 32: one tile of rows, D = 2 tiles; 4 q chunks per head, one a core (1 batch x 4 heads x 4), so
    # Q is not doubled; K and V are; a causal mask chunk pair in bfloat4_b (576 B), doubled
    p = transformer.sdpa_program(q, k, v, ttnn.bfloat16, is_causal=True)
    assert (p.name, p.ranges) == ("SDPAOperation", ((0, 0, 7, 7),))
    assert cbs(p) == [(0, 2, BF16), (1, 4, BF16), (2, 4, BF16), (3, 2, 576), (5, 1, BF16), (7, 1, BF16),
                      (24, 1, BF16), (25, 2, BF16), (26, 2, BF16), (27, 1, BF16), (28, 1, BF16), (29, 1, BF16),
                      (30, 1, BF16), (31, 1, BF16), (16, 2, BF16)]
    cat = transformer.concat_heads_program(q)  # a row of tiles of all 4 heads (4 x 2), doubled
    assert (cat.name, cbs(cat), cat.cores.num_cores()) == ("NLPConcatHeadsDeviceOperation", [(0, 16, BF16)], 4)


def test_kv_cache_fill_and_update_programs(device):
    from device_sim.programs import kv_cache

    cache, x = tt(device, (4, 2, 256, 64)), tt(device, (1, 2, 32, 64))
    # Wt = 2, g = min(2, 4 users) = 2: cache rows 2*2*2 = 8 tiles; input 2*Wt = 4; c_24/c_25 share one CB; c_16 holds
    # all 32 (padded) users' tiles of one head: 32 * 2; 2 heads x 1 row of users = 2 batched heads on 2 cores
    p = kv_cache.update_cache_program(cache, x)
    assert (p.name, cbs(p), p.ranges) == ("UpdateKVCacheOperation", [(0, 8, BF16), (1, 4, BF16), (24, 8, BF16),
                                                                     (26, 8, BF16), (16, 64, BF16)], ((0, 0, 1, 0),))
    assert p.cbs[2].indices == (24, 25)
    fill = kv_cache.fill_cache_program(tt(device, (1, 2, 128, 64)))  # 2 heads x 4 rows of tiles, row by row
    assert (cbs(fill), fill.ranges) == ([(0, 2, BF16)], ((0, 0, 7, 0),))


def test_an_update_cache_whose_cbs_clash_leaves_the_cache_unchanged():
    dev = ttnn.open_device(0, l1_size=98_304 + 262_144)  # 256 KiB above the CB base per core
    try:
        cache, x = tt(dev, (4, 2, 256, 64)), tt(dev, (1, 2, 32, 64))
        before = ttnn.to_torch(cache).clone()
        held = tt(dev, (32 * 64 * 64, 32), memory_config=ttnn.L1_MEMORY_CONFIG)  # 128 KiB per core at the top
        with pytest.raises(RuntimeError, match="clash with L1 buffers"):
            ttnn.update_cache(cache, x, 5)  # its CBs take 92 tiles (184 KiB)
        assert torch.equal(ttnn.to_torch(cache), before)
        held.deallocate()
        ttnn.update_cache(cache, x, 5)
        assert not torch.equal(ttnn.to_torch(cache), before)
    finally:
        ttnn.close_device(dev)


def test_rotary_embedding_llama_prefill_program(device):
    from device_sim.programs import transformer

    x, cos, sin, mat = tt(device, (1, 8, 128, 64)), tt(device, (1, 1, 128, 64)), tt(device, (1, 1, 128, 64)), \
        tt(device, (1, 1, 32, 32))
    # St = 4 rows of tiles over min(64, 4) cores: one row each, x 8 heads = 8 rows a core (not over 8), cos/sin
    # broadcast over heads: the fast kernel keeps a row of 2 * Dt = 4 tiles of input, cos and sin
    p = transformer.rotary_llama_program(x, cos, sin, mat, ttnn.bfloat16)
    assert (p.name, cbs(p), p.ranges) == ("RotaryEmbeddingLlamaDeviceOperation", [
        (0, 4, BF16), (1, 4, BF16), (2, 4, BF16), (3, 1, BF16), (24, 2, BF16), (25, 2, BF16), (26, 2, BF16),
        (16, 4, BF16)], ((0, 0, 7, 7),))
    long = tt(device, (1, 8, 32 * 128, 64))  # 128 rows of tiles over 64 cores: 2 x 8 heads > 8 rows: reload kernel
    assert cbs(transformer.rotary_llama_program(long, cos, sin, mat, ttnn.bfloat16))[:3] == [
        (0, 4, BF16), (1, 4, BF16), (2, 4, BF16)]


def test_nearest_upsample_streams_rows_or_rows_of_tiles(device):
    from device_sim.programs.vision import upsample_program

    # ROW_MAJOR [1, 16, 16, 64]: 256 rows of 128 B (DRAM-aligned) over 64 cores, four each: doubled
    rm = ttnn.from_torch(torch.randn(1, 16, 16, 64), dtype=ttnn.bfloat16, device=device)
    p = upsample_program(rm, ttnn.bfloat16)
    assert (p.name, cbs(p), p.cores.num_cores()) == ("UpsampleOperation", [(0, 2, 128)], 64)
    # TILE [1, 4, 8, 64]: 32 rows = one row of 2 tiles on one core: untilized from c_0 into c_1, not doubled
    tile = ttnn.from_torch(torch.randn(1, 4, 8, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert cbs(upsample_program(tile, ttnn.bfloat16)) == [(0, 2, BF16), (1, 2, BF16)]
    ttnn.upsample(rm, 2)  # launches it


def test_sharded_attention_programs(device):
    from device_sim.programs import normalization, transformer

    # fused QKV [2, 128, 3 * 8 * 64] block-sharded COL_MAJOR on x 0..1 (height) by y 0..7 (width): 4 rows of 6
    # tiles a core, one kv group a width core: q, k, v shards of 4 x 2 tiles; the transpose of k needs c_24
    qkv = ttnn.to_memory_config(tt(device, (2, 128, 1536)), ttnn.create_sharded_memory_config(
        (2, 128, 1536), core_grid=ttnn.CoreGrid(y=8, x=2), strategy=ttnn.ShardStrategy.BLOCK,
        orientation=ttnn.ShardOrientation.COL_MAJOR))
    p = transformer.create_qkv_heads_program(qkv, num_q_heads=8, num_kv_heads=8, head_dim=64, transpose_k_heads=True,
                                             shape=(2, 1, 128, 1536))
    assert (p.name, cbs(p)) == ("CreateQKVHeadsDeviceOperation", [(0, 24, BF16), (16, 8, BF16), (17, 8, BF16),
                                                                  (18, 8, BF16), (24, 8, BF16)])
    assert [cb.globally_allocated for cb in p.cbs] == [True, True, True, True, False]
    assert transformer.create_qkv_heads_program(qkv, num_q_heads=4, num_kv_heads=4, head_dim=128,
                                                transpose_k_heads=True, shape=(2, 1, 128, 1536)) is None  # 4 % 8
    # scores [2, 8, 128, 128] height-sharded over 16 cores (8 x 2): 128 x 128 a core, block_h = block_w = 4; a mask,
    # numeric_stable
    scores = ttnn.to_memory_config(tt(device, (2, 8, 128, 128)), ttnn.create_sharded_memory_config(
        (2, 8, 128, 128), core_grid=ttnn.CoreGrid(y=8, x=2), strategy=ttnn.ShardStrategy.HEIGHT))
    mask = tt(device, (2, 1, 1, 128))
    cfg = ttnn.SoftmaxShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(2, 8), subblock_w=4, block_h=4,
                                                    block_w=4)
    sm = normalization.sharded_softmax_program(scores, ttnn.bfloat16, cfg, mask=mask)
    # in0 16 (the shard), 2 scalers, scaled mask 4, fused scale 1, mask 4, out 16 (the shard), exps 4, 1/sum 1,
    # max 1, x - max 4
    assert [c[1] for c in cbs(sm)] == [16, 1, 1, 4, 1, 4, 16, 4, 1, 1, 4]
    assert sm.cb_region_end == (1 + 1 + 4 + 1 + 4 + 4 + 1 + 1 + 4) * BF16 and sm.ranges == ((0, 0, 1, 7),)
    # concat of height-sharded heads: input and output shards back c_0 and c_16
    cat = transformer.concat_heads_program(scores, out_sharded=True, name="ConcatenateHeads")
    assert (cat.name, cbs(cat), cat.cb_region_end) == ("ConcatenateHeads", [(0, 16, BF16), (16, 16, BF16)], 0)


def test_permute_runs_the_transpose_tt_nn_composes_it_from(device):
    x = tt(device, (1, 12, 64, 64))
    # (0, 2, 1, 3): an HC transpose; 12 channels are not whole tiles, so a 16x16 bfloat16 padding CB (512 B) joins
    # the two input tiles; output [1, 64, 32 (12 padded), 64]: 128 padded tile rows beat 48 input tiles: 64 cores
    hc = data_movement.permute_program(x, ttnn.permute(x, (0, 2, 1, 3)), (0, 2, 1, 3))
    assert (hc.name, hc.factory, cbs(hc), hc.cores.num_cores()) == (
        "TransposeDeviceOperation", "TransposeHCTiledInterleavedProgramFactory", [(0, 2, BF16), (1, 1, 512)], 64)
    wh = data_movement.permute_program(x, ttnn.permute(x, (0, 1, 3, 2)), (0, 1, 3, 2))
    assert wh.factory == "TransposeWHProgramFactory"
    assert data_movement.permute_program(x, ttnn.permute(x, (3, 2, 1, 0)), (3, 2, 1, 0)) is None  # not modelled
    three = tt(device, (12, 64, 64))  # rank 3: TT-NN takes it to 4D, (0, 2, 1) -> (0, 1, 3, 2): WH
    assert data_movement.permute_program(three, ttnn.permute(three, (0, 2, 1)), (0, 2, 1)).factory == \
        "TransposeWHProgramFactory"


def test_a_paged_update_cache_runs_its_sharded_factory(device):
    from device_sim.programs import kv_cache

    cache = tt(device, (8, 1, 128, 64))  # 8 users, 1 kv head, 128 positions, head dim 64
    # one token per user, [1, 8, 32 (heads padded), 64], one user's [32, 64] on each of 8 cores
    token = ttnn.to_memory_config(tt(device, (1, 8, 32, 64)), ttnn.create_sharded_memory_config(
        (32, 64), core_grid=ttnn.CoreGrid(y=1, x=8), strategy=ttnn.ShardStrategy.HEIGHT,
        use_height_and_width_as_shard_shape=True))
    idx = ttnn.from_torch(torch.arange(8, dtype=torch.int32), dtype=ttnn.int32, device=device)
    p = kv_cache.paged_update_cache_program(cache, token, index=idx)
    # Wt = 2: cache rows 2*2, the input shard (2 tiles, its own buffer), c_24/c_25 and c_26 2*2 bfloat16, c_16 8 users
    # x 2 tiles, one int32 index tile
    assert (p.name, cbs(p), p.ranges) == ("PagedUpdateCacheDeviceOperation", [
        (0, 4, BF16), (1, 2, BF16), (24, 4, BF16), (26, 4, BF16), (16, 16, BF16), (2, 1, F32)], ((0, 0, 7, 0),))
    ttnn.experimental.paged_update_cache(cache, token, update_idxs_tensor=idx)  # launches it


def test_the_explicit_sharding_ops_launch_the_sharding_programs(device, tmp_path):
    x = tt(device, (1, 1, 64, 256))
    cfg = ttnn.create_sharded_memory_config((64, 32), core_grid=ttnn.CoreGrid(y=1, x=8),
                                            strategy=ttnn.ShardStrategy.WIDTH, use_height_and_width_as_shard_shape=True)
    with ttreport.capture("shard", config=ttreport.Config(root=tmp_path, device_graphs=True)) as handle:
        s = ttnn.interleaved_to_sharded(x, cfg)
        ttnn.sharded_to_interleaved(s, ttnn.DRAM_MEMORY_CONFIG)
    with ttreport.open(handle.path) as r:
        graphs = [json.loads(row["captured_graph"])
                  for row in r.sql("SELECT captured_graph FROM captured_graph ORDER BY operation_id")]
    assert [[n["params"]["name"] for n in g if n["node_type"] == "function_start"][1:] for g in graphs] == [
        ["InterleavedToShardedDeviceOperation"], ["ShardedToInterleavedDeviceOperation"]]


def test_reshard_between_sharded_layouts(device):
    x = tt(device, (1, 1, 256, 64))
    rows8 = ttnn.create_sharded_memory_config((32, 64), core_grid=ttnn.CoreGrid(y=1, x=8),
                                              strategy=ttnn.ShardStrategy.HEIGHT,
                                              use_height_and_width_as_shard_shape=True)
    rows4 = ttnn.create_sharded_memory_config((64, 64), core_grid=ttnn.CoreGrid(y=1, x=4),
                                              strategy=ttnn.ShardStrategy.HEIGHT,
                                              use_height_and_width_as_shard_shape=True)
    a = ttnn.to_memory_config(x, rows8)
    b = ttnn.reshard(a, rows4)
    # height to height, output in L1: the same-width factory's c_0 over the output's shard, sized by the input's
    # shard (2 tiles), on the output's 4 cores
    p = data_movement.reshard_program(a, b)
    assert (p.name, p.factory, cbs(p), p.ranges) == ("ReshardDeviceOperation", "ReshardSameWidthFactory",
                                                     [(0, 2, BF16)], ((0, 0, 3, 0),))
    cols = ttnn.create_sharded_memory_config((256, 32), core_grid=ttnn.CoreGrid(y=1, x=2),
                                             strategy=ttnn.ShardStrategy.WIDTH,
                                             use_height_and_width_as_shard_shape=True)
    c = ttnn.to_memory_config(a, cols)  # to_memory_config between sharded configs reshards
    g = data_movement.memory_move_program(a, c)
    assert (g.factory, cbs(g), g.cb_region_end) == ("ReshardGenericFactory", [(16, 8, BF16)], 0)
