"""Device work of the LLM decode ops, the paged caches, the vision ops and the collectives on a mesh.

Each test builds a known shape and checks the device operation and its CBs against the program factory's
formula (device_sim/programs/ cites the factories), with the arithmetic in the comments.
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import launched as heard  # tests/programs_heard.py

import device_sim as ttnn
from device_sim.programs import kv_cache, rotary

BF16, BF8, F32 = 2048, 1088, 4096  # bytes of one 32x32 tile


def tt(device, shape, dtype=ttnn.bfloat16, layout=ttnn.TILE, memory_config=None):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=layout, device=device,
                           memory_config=memory_config)


def cbs(program) -> list[tuple]:
    return [(cb.indices, cb.num_pages, cb.page_size, cb.globally_allocated) for cb in program.cbs]


def height_sharded(device, t, grid: ttnn.CoreRangeSet, shard: tuple[int, int]):
    spec = ttnn.ShardSpec(grid, shard, ttnn.ShardOrientation.ROW_MAJOR)
    return ttnn.to_memory_config(t, ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec))


def row_of_cores(y: int, n: int) -> ttnn.CoreRangeSet:
    return ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, y), ttnn.CoreCoord(n - 1, y))])


# -- rotary_embedding (GPT-NeoX) ----------------------------------------------------------------
def test_a_neox_rotary_embedding_streams_two_rows_of_tiles_through_each_cb(device):
    # x [1, 4, 64, 128]: Wt = 4, 4 heads x 2 = 8 rows of tiles, one a core, row by row on the 8-wide grid.
    # c_0 / c_1 / c_2 / c_3 / c_16 hold 2*Wt = 8 tiles; c_4 the -1 scalar and c_24..c_26 one tile each.
    # cos is bfloat8_b: c_2 and c_25 take its tile size.
    x, cos, sin = tt(device, (1, 4, 64, 128)), tt(device, (1, 1, 64, 128), ttnn.bfloat8_b), tt(device, (1, 1, 64, 128))
    p = rotary.rotary_embedding_program(x, cos, sin, ttnn.bfloat16)
    assert (p.name, p.factory, p.ranges) == ("RotaryEmbeddingDeviceOperation", "RotaryEmbeddingProgramFactory",
                                             ((0, 0, 7, 0),))
    assert cbs(p) == [((0,), 8, BF16, False), ((1,), 8, BF16, False), ((2,), 8, BF8, False), ((3,), 8, BF16, False),
                      ((4,), 1, BF16, False), ((24,), 1, BF16, False), ((25,), 1, BF8, False),
                      ((26,), 1, BF16, False), ((16,), 8, BF16, False)]
    # per core: c_0, c_1, c_3, c_16 (4 x 8) and c_4, c_24, c_26 (3) bfloat16 tiles; c_2 (8) and c_25 (1) bfloat8_b
    assert p.l1_bytes_per_core == (4 * 8 + 3) * BF16 + (8 + 1) * BF8
    [launched] = heard(device, lambda: ttnn.experimental.rotary_embedding(x, cos, sin))
    assert launched.cbs == p.cbs


def test_a_decode_rotary_embedding_adds_the_retilized_and_untilized_cos_sin_rows(device):
    # One token for 32 users, x [1, 1, 32, 64], token_index 40: Wt = 2, one row of tiles on core (0, 0).
    # Decode halves cos/sin (Wt = 2 tiles) and adds c_29 / c_30 (Wt each, cos / sin formats) and the bfloat16
    # untilized rows c_27 (sharing c_5) and c_28 (sharing c_6), Wt tiles each.
    x, cos = tt(device, (1, 1, 32, 64)), tt(device, (1, 1, 64, 64))
    p = rotary.rotary_embedding_program(x, cos, cos, ttnn.bfloat16, token_index=40)
    assert p.ranges == ((0, 0, 0, 0),)
    assert cbs(p) == [((0,), 4, BF16, False), ((1,), 4, BF16, False), ((2,), 2, BF16, False), ((3,), 2, BF16, False),
                      ((4,), 1, BF16, False), ((24,), 1, BF16, False), ((25,), 1, BF16, False),
                      ((26,), 1, BF16, False), ((16,), 4, BF16, False), ((29,), 2, BF16, False),
                      ((30,), 2, BF16, False), ((27, 5), 2, BF16, False), ((28, 6), 2, BF16, False)]
    [launched] = heard(device, lambda: ttnn.experimental.rotary_embedding(x, cos, cos, 40))
    assert launched.cbs == p.cbs


def test_a_height_sharded_rotary_embedding_backs_input_and_output_with_their_shards(device):
    # x [1, 1, 128, 64] height sharded on 4 cores, [32, 64] each: the shard grid runs it; c_0 is the input shard
    # (32*64 / 1024 = 2 tiles, globally allocated), and so is c_16 when the output is sharded too.
    x = height_sharded(device, tt(device, (1, 1, 128, 64)), row_of_cores(0, 4), (32, 64))
    cos = tt(device, (1, 1, 128, 64))
    p = rotary.rotary_embedding_program(x, cos, cos, ttnn.bfloat16, out_spec=x.memory_config().shard_spec)
    assert p.ranges == ((0, 0, 3, 0),)
    assert cbs(p)[0] == ((0,), 2, BF16, True) and cbs(p)[8] == ((16,), 2, BF16, True)


def test_a_decode_rotary_embedding_llama_runs_the_sharded_factory_on_the_users_cores(device):
    # 8 users, one a core on (0..7, 0): x [1, 8, 32 (heads padded), 64] in [32, 64] shards, Ht = 1, Wt = 2.
    # c_0 / c_16 the shards (2 tiles), c_1 / c_2 cos / sin (Wt x ceil(8 users / 8 cores) = 2 tiles), c_3 one
    # trans_mat tile, all globally allocated; c_24 / c_25 / c_26 Wt = 2 tiles each (cos in bfloat8_b).
    grid = row_of_cores(0, 8)
    x = height_sharded(device, tt(device, (1, 8, 32, 64)), grid, (32, 64))
    cos = height_sharded(device, tt(device, (1, 8, 32, 64), ttnn.bfloat8_b), grid, (32, 64))
    sin = height_sharded(device, tt(device, (1, 8, 32, 64)), grid, (32, 64))
    mat = height_sharded(device, tt(device, (1, 1, 32, 32)), row_of_cores(0, 1), (32, 32))
    p = rotary.rotary_llama_decode_program(x, cos, sin, mat, ttnn.bfloat16)
    assert (p.name, p.factory, p.ranges) == ("RotaryEmbeddingLlamaDeviceOperation",
                                             "RotaryEmbeddingLlamaMultiCoreSharded", ((0, 0, 7, 0),))
    assert cbs(p) == [((0,), 2, BF16, True), ((1,), 2, BF8, True), ((2,), 2, BF16, True), ((3,), 1, BF16, True),
                      ((24,), 2, BF16, False), ((25,), 2, BF8, False), ((26,), 2, BF16, False),
                      ((16,), 2, BF16, True)]
    assert p.l1_bytes_per_core - sum(cb.size for cb in p.cbs if cb.globally_allocated) == 4 * BF16 + 2 * BF8
    [launched] = heard(device, lambda: ttnn.experimental.rotary_embedding_llama(
        x, cos, sin, mat, is_decode_mode=True, memory_config=x.memory_config()))
    assert launched.cbs == p.cbs


def test_a_fused_qk_rotary_embedding_holds_q_and_k_shards_and_three_intermediates(device):
    # 4 users: q [1, 4, 32, 64] on (0..3, 0), k [1, 4, 32, 64] on (0..3, 1), cos / sin on all 8 cores (one user a
    # core): the bounding box (0, 0)-(3, 1) runs it. Wt = 2: every CB but c_24..c_26 is a tensor's own shard.
    q = height_sharded(device, tt(device, (1, 4, 32, 64)), row_of_cores(0, 4), (32, 64))
    k = height_sharded(device, tt(device, (1, 4, 32, 64)), row_of_cores(1, 4), (32, 64))
    both = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(3, 1))])
    cos = height_sharded(device, tt(device, (1, 8, 32, 64)), both, (32, 64))
    mat = height_sharded(device, tt(device, (1, 1, 32, 32)), row_of_cores(0, 1), (32, 32))
    p = rotary.rotary_llama_fused_qk_program(q, k, cos, cos, mat, ttnn.bfloat16)
    assert (p.name, p.ranges) == ("RotaryEmbeddingLlamaFusedQKDeviceOperation", ((0, 0, 3, 1),))
    assert cbs(p) == [((0,), 2, BF16, True), ((1,), 2, BF16, True), ((2,), 2, BF16, True), ((3,), 2, BF16, True),
                      ((4,), 1, BF16, True), ((24,), 2, BF16, False), ((25,), 2, BF16, False),
                      ((26,), 2, BF16, False), ((16,), 2, BF16, True), ((17,), 2, BF16, True)]
    # the op itself launches it (cos / sin hold q's 4 users' rows, then k's: TT-NN's [1, 8, ., 64])
    [launched] = heard(device, lambda: ttnn.experimental.rotary_embedding_llama_fused_qk(q, k, cos, cos, mat))
    assert launched.cbs == p.cbs and launched.ranges == p.ranges


def test_the_decode_head_shuffles_write_straight_into_their_output_shards(device):
    # create: fused QKV [1, 1, 8 users, (4 + 2 x 4) x 32]: q, k, v one user a core on the first 8 cores of the grid,
    # each shard [4 heads padded to 32, 32] = 1 tile; c_16 / c_17 / c_18 are those shards (globally allocated)
    fused = tt(device, (1, 1, 8, 12 * 32))
    [create] = heard(device, lambda: ttnn.experimental.nlp_create_qkv_heads_decode(fused, num_heads=4))
    assert (create.name, create.factory, create.ranges) == (
        "NLPCreateQKVHeadsDecodeDeviceOperation", "NLPCreateQKVHeadsDecodeInterleavedProgramFactory", ((0, 0, 7, 0),))
    assert cbs(create) == [((16,), 1, BF16, True), ((17,), 1, BF16, True), ((18,), 1, BF16, True)]
    assert create.cb_region_end == create.cb_base  # no L1 of its own
    # an output grid from memory_config: 12 users on a 5-wide grid from (1, 2) fill (1..5, 2), (1..5, 3), (1..2, 4)
    from device_sim.programs.decode_heads import create_qkv_heads_decode_program

    assert create_qkv_heads_decode_program(ttnn.bfloat16, users=12, num_heads=4, head_dim=32,
                                           grid=(1, 2, 5, 6)).ranges == ((1, 2, 5, 2), (1, 3, 5, 3), (1, 4, 2, 4))
    # concat: 8 users' [32 heads, 64] shards on (0..7, 0) to [1, 1, 32, 4 x 64] width sharded one head a core:
    # c_16 the [32, 64] output shard, 2 tiles, on the first 4 cores
    heads = height_sharded(device, tt(device, (1, 8, 32, 64)), row_of_cores(0, 8), (32, 64))
    [concat] = heard(device, lambda: ttnn.experimental.nlp_concat_heads_decode(heads, num_heads=4,
                                                                                memory_config=ttnn.L1_MEMORY_CONFIG))
    assert (concat.name, cbs(concat), concat.ranges) == ("NLPConcatHeadsDecodeDeviceOperation",
                                                         [((16,), 2, BF16, True)], ((0, 0, 3, 0),))


def test_a_width_sharded_fused_qkv_runs_the_sharded_input_create_heads_factory(device):
    # fused QKV [1, 1, 8 users, (8 + 2) x 64] width-sharded in [32, 128] shards on (0..4, 0); the outputs one user's
    # [32 heads padded, 64] (2 tiles) a core on the first 8 cores of the memory_config's 8 x 4 grid: c_16 / c_17 /
    # c_18 are q's, k's and v's shards, globally allocated, on q's cores (0..7, 0)
    fused = ttnn.to_memory_config(tt(device, (1, 1, 8, 640)), ttnn.MemoryConfig(
        ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.L1,
        ttnn.ShardSpec(row_of_cores(0, 5), (32, 128), ttnn.ShardOrientation.ROW_MAJOR)))
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 3))])
    cfg = ttnn.create_sharded_memory_config((32, 64), grid, ttnn.ShardStrategy.HEIGHT,
                                            use_height_and_width_as_shard_shape=True)
    [p] = heard(device, lambda: ttnn.experimental.nlp_create_qkv_heads_decode(fused, num_heads=8, num_kv_heads=1,
                                                                               memory_config=cfg))
    assert (p.name, p.factory, p.ranges) == ("NLPCreateQKVHeadsDecodeDeviceOperation",
                                             "NLPCreateQKVHeadsDecodeShardedProgramFactory", ((0, 0, 7, 0),))
    assert cbs(p) == [((16,), 2, BF16, True), ((17,), 2, BF16, True), ((18,), 2, BF16, True)]
    assert p.cb_region_end == p.cb_base  # no L1 of its own
    # k apart from q (overlap_qk_coregrid=False): k's shards on the 8 cores after q's and one more, (0..7, 1)
    [apart] = heard(device, lambda: ttnn.experimental.nlp_create_qkv_heads_decode(
        fused, num_heads=8, num_kv_heads=1, memory_config=cfg, overlap_qk_coregrid=False))
    assert apart.ranges == ((0, 0, 7, 0), (0, 1, 7, 1))


def test_a_decode_concat_off_core_0_0_runs_the_sub_core_grid_factory_on_its_own_output_cores(device):
    # 8 users' [32 heads, 64] shards on (0..7, 1): the grid does not start at (0, 0), so TT-NN takes the
    # sub-core-grid factory and needs sub_core_grids; its output [1, 1, 32, 4 x 64] is one head's [32, 64] (2 tiles)
    # a core on the first 4 cores of sub_core_grids from the input's first core, (0..3, 1); c_16 is that shard
    heads = height_sharded(device, tt(device, (1, 8, 32, 64)), row_of_cores(1, 8), (32, 64))
    sub = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 1), ttnn.CoreCoord(7, 2))])
    out = []
    [concat] = heard(device, lambda: out.append(ttnn.experimental.nlp_concat_heads_decode(heads, num_heads=4,
                                                                                          sub_core_grids=sub)))
    assert (concat.name, concat.factory, concat.ranges) == (
        "NLPConcatHeadsDecodeDeviceOperation", "NLPConcatHeadsDecodeSubcoregridsProgramFactory", ((0, 1, 3, 1),))
    assert cbs(concat) == [((16,), 2, BF16, True)]
    assert out[0].memory_config().shard_spec.grid == row_of_cores(1, 4)
    # without sub_core_grids TT-NN refuses such an input
    with pytest.raises(RuntimeError, match="Subcoregrids must be provided if on_subcoregrids is true"):
        ttnn.experimental.nlp_concat_heads_decode(heads, num_heads=4)


# -- paged caches --------------------------------------------------------------------------------
def test_a_paged_fill_cache_holds_two_rows_of_input_tiles_and_one_page_table_row(device):
    # input [1, 2, 128, 64]: Wt = 2, c_0 2*Wt = 4 tiles; 2 heads x 4 rows of tiles = 8 blocks of work, one a core
    # row by row. The page table [4, 4] int32 in DRAM has 16 B pages, aligned to DRAM's 32 B: c_1 one 32 B page.
    cache, x = tt(device, (8, 2, 64, 64)), tt(device, (1, 2, 128, 64))
    page_table = ttnn.from_torch(torch.arange(16, dtype=torch.int32).reshape(4, 4) % 8, dtype=ttnn.int32,
                                 device=device)
    p = kv_cache.paged_fill_cache_program(x, page_table)
    assert (p.name, p.ranges) == ("PagedFillCacheDeviceOperation", ((0, 0, 7, 0),))
    assert cbs(p) == [((0,), 4, BF16, False), ((1,), 1, 32, False)]
    # a batch_idx_tensor adds c_2: one uint32 element
    batch = ttnn.from_torch(torch.tensor([1], dtype=torch.int32), dtype=ttnn.uint32, device=device)
    assert cbs(kv_cache.paged_fill_cache_program(x, page_table, batch))[2] == ((2,), 1, 4, False)
    [launched] = heard(device, lambda: ttnn.experimental.paged_fill_cache(cache, x, page_table, batch_idx=1))
    assert launched.cbs == p.cbs


def test_a_paged_fused_update_cache_runs_on_the_bounding_box_of_both_inputs_shard_grids(device):
    # keys on cores (0..3, 0), values on (0..3, 1), one user's [32 heads padded, 64] each: Wt = 2.
    # c_0 2*Wt cache tiles; c_1 / c_2 the two shards (2 tiles each, globally allocated); c_24/c_25 and c_26
    # 2*Wt bfloat16; c_16 4 users x Wt = 8 cache tiles; c_3 one index page (4 int32 = 16 B -> 32 B in DRAM).
    k = height_sharded(device, tt(device, (1, 4, 32, 64)), row_of_cores(0, 4), (32, 64))
    v = height_sharded(device, tt(device, (1, 4, 32, 64)), row_of_cores(1, 4), (32, 64))
    c1, c2 = tt(device, (4, 2, 64, 64), ttnn.bfloat8_b), tt(device, (4, 2, 64, 64), ttnn.bfloat8_b)
    idx = ttnn.from_torch(torch.arange(4, dtype=torch.int32), dtype=ttnn.int32, device=device)
    p = kv_cache.paged_fused_update_cache_program(c1, k, v, index=idx)
    assert (p.name, p.factory, p.ranges) == ("PagedFusedUpdateCacheDeviceOperation",
                                             "PagedTiledFusedUpdateCacheProgramFactory", ((0, 0, 3, 1),))
    assert cbs(p) == [((0,), 4, BF8, False), ((1,), 2, BF16, True), ((2,), 2, BF16, True),
                      ((24, 25), 4, BF16, False), ((26,), 4, BF16, False), ((16,), 8, BF8, False),
                      ((3,), 1, 32, False)]
    [launched] = heard(device, lambda: ttnn.experimental.paged_fused_update_cache(c1, k, c2, v,
                                                                                   update_idxs_tensor=idx))
    assert launched.cbs == p.cbs


def test_a_row_major_paged_fused_update_cache_runs_the_row_major_factory(device):
    # Llama-70B's row-major tokens [1, 4 users, 8 heads, 128]: keys one user's [8, 128] shard a core on (0..3, 0),
    # values on (0..3, 1); caches [4, 8, 64, 128] bfloat8_b. Wt = 128/32 = 4. c_0 2*Wt = 8 cache tiles; c_1 / c_2
    # the shards, 8 x 128 / 1024 = 1 bfloat16 tile each (globally allocated); c_5/c_6 one shared CB of 2*Wt = 8
    # bfloat16 tiles (no c_26: the input is rows already); c_7 4 users x Wt = 16 cache tiles.
    def rows(y):
        t = ttnn.from_torch(torch.randn(1, 4, 8, 128), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=device)
        return height_sharded(device, t, row_of_cores(y, 4), (8, 128))

    k, v = rows(0), rows(1)
    c1, c2 = tt(device, (4, 8, 64, 128), ttnn.bfloat8_b), tt(device, (4, 8, 64, 128), ttnn.bfloat8_b)
    p = kv_cache.paged_fused_update_cache_program(c1, k, v)
    assert (p.name, p.factory, p.ranges) == ("PagedFusedUpdateCacheDeviceOperation",
                                             "PagedRowMajorFusedUpdateCacheProgramFactory", ((0, 0, 3, 1),))
    assert cbs(p) == [((0,), 8, BF8, False), ((1,), 1, BF16, True), ((2,), 1, BF16, True),
                      ((5, 6), 8, BF16, False), ((7,), 16, BF8, False)]
    assert p.l1_bytes_per_core - sum(cb.size for cb in p.cbs if cb.globally_allocated) == 8 * BF8 + 8 * BF16 + 16 * BF8
    [launched] = heard(device, lambda: ttnn.experimental.paged_fused_update_cache(c1, k, c2, v,
                                                                                   update_idxs=[0, 5, 9, 63]))
    assert (launched.factory, launched.cbs) == (p.factory, p.cbs)
    # user 3's position 63 now holds its keys (to bfloat8_b's precision)
    torch.testing.assert_close(c1.value[3, :, 63].float(), k.value[0, 3].float(), atol=0.07, rtol=0.02)


# -- vision ---------------------------------------------------------------------------------------
def test_global_avg_pool2d_is_one_reduction_over_the_viewed_rows(device):
    # x [2, 8, 8, 64] (TILE: padded [2, 8, 32, 64]) viewed as [2, 1, 8 x 32, 64] and summed over H: reduce H over
    # N x C/32 = 2 x 2 = 4 columns of tiles, split_work_to_cores column by column: cores (0, 0)-(0, 3).
    # c_0 two bfloat8_b input tiles, c_2 one bfloat16 scaler tile, c_16 two output tiles in the input's format.
    x = tt(device, (2, 8, 8, 64), ttnn.bfloat8_b)
    from device_sim.programs.vision import global_avg_pool_program

    p = global_avg_pool_program(x)
    assert (p.name, p.factory, p.ranges) == ("ReduceDeviceOperation", "ReduceMultiCoreHProgramFactory",
                                             ((0, 0, 0, 3),))
    assert cbs(p) == [((0,), 2, BF8, False), ((2,), 1, BF16, False), ((16,), 2, BF8, False)]
    [launched] = heard(device, lambda: ttnn.global_avg_pool2d(x, dtype=ttnn.bfloat16))
    assert launched.cbs == p.cbs  # the dtype asked for does not change TT-NN's program


def test_a_grouped_conv2d_runs_the_programs_of_the_dense_conv_tt_nn_expands_it_to(device):
    # groups=2: TT-NN zero-pads the [64, 16, 3, 3] weights to [64, 32, 3, 3] and runs the ordinary height-sharded
    # conv, so its programs are those of a 32 -> 64 channel 3x3 conv (device_sim.programs.conv's own tests check them)
    from device_sim.programs.conv import conv2d_programs

    image = tt(device, (1, 16, 16, 32))
    w = ttnn.from_torch(torch.randn(64, 16, 3, 3), dtype=ttnn.bfloat16)
    launched = heard(device, lambda: ttnn.conv2d(
        input_tensor=image, weight_tensor=w, device=device, in_channels=32, out_channels=64, batch_size=1,
        input_height=16, input_width=16, kernel_size=(3, 3), padding=(1, 1), groups=2))
    dense = conv2d_programs(batch=1, height=16, width=16, in_channels=32, out_channels=64, kernel=(3, 3),
                            stride=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), in_dtype=ttnn.bfloat16,
                            in_tile=True, in_sharded=False, out_dtype=ttnn.bfloat16, weights_dtype=ttnn.bfloat16,
                            bias=False, grid=(8, 8))
    assert [(p.name, p.cbs, p.ranges) for p in launched] == [(p.name, p.cbs, p.ranges) for p in dense]
    assert [p.name for p in launched] == ["InterleavedToShardedDeviceOperation", "HaloDeviceOperation",
                                          "Conv2dDeviceOperation"]
    # a 1-D depthwise conv (width-1 input and kernel, groups = channels, no bias) has its own weight layout: none
    column = tt(device, (1, 16, 1, 32))
    dw = ttnn.from_torch(torch.randn(32, 1, 3, 1), dtype=ttnn.bfloat16)
    assert heard(device, lambda: ttnn.conv2d(
        input_tensor=column, weight_tensor=dw, device=device, in_channels=32, out_channels=32, batch_size=1,
        input_height=16, input_width=1, kernel_size=(3, 1), padding=(1, 0), groups=32)) == []


def test_conv1d_runs_the_conv2d_programs_of_its_length_by_one_image(device):
    # conv1d.cpp calls conv2d on [N, L, 1, C] with a (K, 1) kernel, (stride, 1) and padding (p, p, 0, 0)
    from device_sim.programs.conv import conv2d_programs

    x = tt(device, (2, 16, 8))
    w = ttnn.from_torch(torch.randn(4, 8, 3), dtype=ttnn.bfloat16)
    launched = heard(device, lambda: ttnn.conv1d(
        input_tensor=x, weight_tensor=w, device=device, in_channels=8, out_channels=4, batch_size=2, input_length=16,
        kernel_size=3, stride=2, padding=1))
    as_2d = conv2d_programs(batch=2, height=16, width=1, in_channels=8, out_channels=4, kernel=(3, 1), stride=(2, 1),
                            padding=(1, 1, 0, 0), dilation=(1, 1), in_dtype=ttnn.bfloat16, in_tile=True,
                            in_sharded=False, out_dtype=ttnn.bfloat16, weights_dtype=ttnn.bfloat16, bias=False,
                            grid=(8, 8))
    assert [(p.name, p.cbs, p.ranges) for p in launched] == [(p.name, p.cbs, p.ranges) for p in as_2d]
    assert [p.name for p in launched][-1] == "Conv2dDeviceOperation"


# -- collectives on a mesh -------------------------------------------------------------------------
def test_an_all_gather_program_holds_three_packets_of_pages_on_its_sender_cores():
    from device_sim.programs.ccl import all_gather_program

    # A packet is 4 bfloat8_b tiles of payload + a 64 B header = 4 x 1088 + 64 = 4416 B, at most 4 pages:
    # bfloat16 tiles 4416 // 2048 = 2 a packet, bfloat8_b 4, float32 1; c_0 holds 3 packets.
    def pages(page_size):
        return cbs(all_gather_program(page_size, 4096, ring_size=2, num_links=1, ring=False, grid=(8, 8)))

    assert [pages(BF16), pages(BF8), pages(F32)] == [[((0,), 6, BF16, False)], [((0,), 12, BF8, False)],
                                                     [((0,), 3, F32, False)]]
    # 4 KiB out over 2 chips moves 2 KiB a link: one sender a direction, after each direction's mux core
    small = all_gather_program(BF16, 4096, ring_size=2, num_links=1, ring=False, grid=(8, 8))
    assert small.ranges == ((1, 0, 1, 0), (3, 0, 3, 0))
    # 1 MiB out over 8 chips on a line moves 1 MiB x 7/8 = 896 KiB a link (> 256 KiB): 4 senders a direction,
    # 2 x (4 + 1) = 10 cores from (0, 0) row by row, the muxes at 0 and 5
    big = all_gather_program(BF16, 1 << 20, ring_size=8, num_links=1, ring=False, grid=(8, 8))
    assert big.ranges == ((1, 0, 1, 0), (2, 0, 2, 0), (3, 0, 3, 0), (4, 0, 4, 0), (6, 0, 6, 0), (7, 0, 7, 0),
                          (0, 1, 0, 1), (1, 1, 1, 1))
    # on a ring each direction carries half: 448 KiB, still 4 senders; 64 KiB over 2 chips on a ring is 16 KiB: 2
    assert len(all_gather_program(BF16, 1 << 16, ring_size=2, num_links=1, ring=True, grid=(8, 8)).ranges) == 4


def _mesh_input(mesh, shape=(1, 1, 32, 256)):
    return ttnn.from_torch(torch.randn(*shape), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                           mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))


def test_each_chips_report_rows_carry_the_all_gathers_cbs_and_semaphores_under_its_device_id(tmp_path):
    import json

    import ttreport

    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    try:
        x = _mesh_input(mesh)  # [1, 1, 32, 128] a chip
        with ttreport.capture(tmp_path / "ag", config=ttreport.Config(device_graphs=True)) as handle:
            ttnn.all_gather(x, dim=3)
    finally:
        ttnn.close_mesh_device(mesh)
    report = ttreport.open(handle.path)
    [row] = report.sql("SELECT captured_graph FROM captured_graph")
    graph = json.loads(row["captured_graph"])
    device_ops = [n["params"]["device_id"] for n in graph
                  if n["node_type"] == "function_start" and n["params"]["name"] == "AllGatherDeviceOperation"]
    assert device_ops == ["0", "1"]  # one program on each chip
    # each chip gathers 2 x 4 bfloat16 tiles = 16 KiB, 8 KiB a link (> 4 KiB): 2 senders a direction, each with
    # c_0 of 3 packets x 2 tiles = 6 x 2048 = 12288 B, on cores (1, 0), (2, 0), (4, 0), (5, 0)
    per_chip = {}
    for n in graph:
        if n["node_type"] == "circular_buffer_allocate":
            per_chip.setdefault(n["params"]["device_id"], []).append(
                (n["params"]["size"], n["params"]["core_range_set"]))
    cores = "{[1-0 - 1-0], [2-0 - 2-0], [4-0 - 4-0], [5-0 - 5-0]}"
    assert per_chip == {"0": [("12288", cores)], "1": [("12288", cores)]}
    # the 3 global semaphores TT-NN's all_gather makes with its program stay in each chip's L1 after the op
    l1 = report.sql("SELECT device_id, COUNT(*) AS n FROM buffers WHERE operation_id = 1 AND buffer_type = 1 "
                    "GROUP BY device_id ORDER BY device_id")
    assert [(r["device_id"], r["n"]) for r in l1] == [(0, 3), (1, 3)]


def test_all_gather_without_a_cluster_axis_on_a_2d_mesh_gathers_rows_then_columns(tmp_path):
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(2, 2))
    try:
        x = _mesh_input(mesh, (1, 1, 32, 128))  # one tile a chip
        chip = mesh.get_devices()[3]
        held = len(chip.memory.live_buffers())  # x's shard
        seen = heard(chip, lambda: ttnn.all_gather(x, dim=3))
        # TT-NN's all_gather calls itself along axis 1 (2 chips: 2 tiles out, 2 KiB a link), then axis 0 (4 tiles
        # out, 4 KiB a link): one sender a direction each, c_0 6 bfloat16 tiles
        assert [(p.name, p.device_id, cbs(p), p.ranges) for p in seen] == [
            ("AllGatherDeviceOperation", chip.device_id, [((0,), 6, BF16, False)], ((1, 0, 1, 0), (3, 0, 3, 0)))] * 2
        # each gather's program holds 3 global semaphores; the output is freed with the tensor, they stay
        assert len(chip.memory.live_buffers()) == held + 2 * 3
        ttnn.all_gather(x, dim=3)  # the same programs again: no new semaphores
        assert len(chip.memory.live_buffers()) == held + 2 * 3
        async_ = heard(chip, lambda: ttnn.experimental.all_gather_async(
            x, 3, [ttnn.create_global_semaphore(mesh, ttnn.CoreRangeSet([]), 0)] * 2, cluster_axis=1))
        assert [p.name for p in async_] == ["AllGatherAsyncDeviceOperation"]
    finally:
        ttnn.close_mesh_device(mesh)


def test_a_reduce_scatter_program_holds_four_triple_buffered_chunks_on_eight_senders_a_direction():
    from device_sim.programs.ccl import reduce_scatter_program

    # bfloat16 tiles: a packet holds n = min(2, 4416 // 2048) = 2 pages, a chunk 4n = 8; c_0..c_3 hold 3 chunks =
    # 24 tiles each (4 x 24 x 2048 = 192 KiB a core). float32 tiles: n = 1, chunks of 4, 12 tiles.
    bf16 = reduce_scatter_program(BF16, 8 * BF16, ring_size=2, num_links=1, ring=False, grid=(8, 8))
    assert (bf16.name, cbs(bf16)) == ("ReduceScatterDeviceOperation", [((i,), 24, BF16, False) for i in range(4)])
    assert bf16.l1_bytes_per_core == 4 * 24 * BF16
    f32 = reduce_scatter_program(F32, 8 * F32, ring_size=2, num_links=1, ring=True, grid=(8, 8))
    assert cbs(f32) == [((i,), 12, F32, False) for i in range(4)]
    # TT-NN's default_workers compares bytes with thresholds named in MB (line: above 4): 8 senders a direction,
    # 2 x (1 mux + 8) = 18 cores row by row from (0, 0), the muxes at 0 and 9
    senders = [i for i in range(18) if i % 9]
    assert bf16.ranges == tuple((i % 8, i // 8, i % 8, i // 8) for i in senders)


def test_reduce_scatter_and_all_reduce_run_their_programs_on_every_chip():
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    try:
        x = _mesh_input(mesh)  # [1, 1, 32, 128] a chip
        chip = mesh.get_devices()[1]
        held = len(chip.memory.live_buffers())
        rs = heard(chip, lambda: ttnn.reduce_scatter(x, dim=3))  # 128 wide over 2 chips: 64, whole tiles
        assert [(p.name, p.device_id, cbs(p)[0]) for p in rs] == [
            ("ReduceScatterDeviceOperation", chip.device_id, ((0,), 24, BF16, False))]
        assert len(chip.memory.live_buffers()) == held + 4  # its program's 3 semaphores and barrier stay
        # all_reduce: reduce-scatter over W (4 tiles split over 2 chips), then gather the pieces back
        ar = heard(chip, lambda: ttnn.all_reduce(x))
        assert [(p.name, p.factory) for p in ar] == [
            ("ReduceScatterMinimalAsyncDeviceOperation", "LineReduceScatterMeshWorkloadFactory"),
            ("AllGatherAsyncDeviceOperation", "DefaultMeshWorkloadFactory")]
        # a W of 48 splits into 24 columns, not whole tiles: TT-NN's composite path, not modelled
        odd = _mesh_input(mesh, (1, 1, 32, 96))
        assert heard(chip, lambda: ttnn.reduce_scatter(odd, dim=3)) == []
    finally:
        ttnn.close_mesh_device(mesh)


def test_mesh_partition_runs_the_slice_factory_on_each_chip():
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    try:
        x = ttnn.from_torch(torch.randn(1, 1, 64, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                            mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))
        chip = mesh.get_devices()[0]
        # each chip keeps [64, 128] of its [64, 256]: 2 x 4 = 8 output tiles, split_work_to_cores column by column,
        # c_0 two tiles (slice_program_factory_tile.cpp, which mesh_partition_program_factory.cpp runs)
        [p] = heard(chip, lambda: ttnn.mesh_partition(x, 3, cluster_axis=1))
        assert (p.name, p.factory, cbs(p), p.ranges) == ("MeshPartitionDeviceOperation", "SliceTileProgramFactory",
                                                         [((0,), 2, BF16, False)], ((0, 0, 0, 7),))
    finally:
        ttnn.close_mesh_device(mesh)
