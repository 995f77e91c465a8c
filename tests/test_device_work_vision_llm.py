"""Device work of the LLM decode ops, the paged caches, the vision ops and the collectives on a mesh.

Each test builds a known shape and checks the device operation and its CBs against the program factory's
formula (device_sim/programs/ cites the factories), with the arithmetic in the comments.
"""

from __future__ import annotations

import torch

import device_sim as ttnn
from device_sim.programs import kv_cache, rotary

BF16, BF8, F32 = 2048, 1088, 4096  # bytes of one 32x32 tile


def tt(device, shape, dtype=ttnn.bfloat16, layout=ttnn.TILE, memory_config=None):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=layout, device=device,
                           memory_config=memory_config)


def cbs(program) -> list[tuple]:
    return [(cb.indices, cb.num_pages, cb.page_size, cb.globally_allocated) for cb in program.cbs]


def heard(device, call) -> list:
    """The programs `call()` launches on `device`, through the memory listener ttreport's report hears."""
    seen, old = [], device.memory.listener
    device.memory.listener = lambda kind, obj: seen.append(obj) if kind == "program" else None
    try:
        call()
    finally:
        device.memory.listener = old
    return seen


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
