"""Sharding as TT-NN does it: core ranges, sharded configs, per-core placement, the sharded ops, the report."""

import sqlite3

import numpy
import pytest
import torch

import device_sim as ttnn
import ttreport
from device_sim.types import ShardSpecError


def cr(x0, y0, x1, y1):
    return ttnn.CoreRange(ttnn.CoreCoord(x0, y0), ttnn.CoreCoord(x1, y1))


def tile(shape, device, **kw):
    g = torch.Generator().manual_seed(sum(shape))
    return ttnn.from_torch(torch.randn(shape, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, **kw)


# -- core ranges --------------------------------------------------------------------------------
def test_a_core_range_set_from_a_python_set_is_ordered_and_counts_its_cores():
    grid = ttnn.CoreRangeSet({cr(0, 2, 3, 2), cr(0, 0, 3, 1)})
    assert grid.ranges() == [cr(0, 0, 3, 1), cr(0, 2, 3, 2)]
    assert (grid.num_cores(), grid.size()) == (12, 2)
    assert grid.bounding_box() == cr(0, 0, 3, 2) and grid.bounding_box().grid_size() == ttnn.CoreCoord(4, 3)
    assert grid.contains(ttnn.CoreCoord(3, 2)) and not grid.contains(ttnn.CoreCoord(4, 0))
    assert grid.contains(cr(1, 1, 2, 2)) and not grid.contains(cr(3, 2, 4, 2))


def test_merging_core_range_sets_joins_adjacent_rows_into_one_range():
    merged = ttnn.CoreRangeSet([cr(0, 0, 3, 0)]).merge(ttnn.CoreRangeSet([cr(0, 1, 3, 1)]))
    assert merged.ranges() == [cr(0, 0, 3, 1)]
    ragged = ttnn.CoreRangeSet([cr(0, 0, 3, 0)]).merge(cr(0, 1, 1, 1))
    assert ragged.num_cores() == 6 and ragged.ranges() == [cr(0, 0, 3, 0), cr(0, 1, 1, 1)]


def test_overlapping_or_reversed_ranges_are_refused():
    with pytest.raises(ShardSpecError, match="overlap"):
        ttnn.CoreRangeSet([cr(0, 0, 2, 2), cr(2, 2, 3, 3)])
    with pytest.raises(RuntimeError, match="before start"):  # TT-NN raises RuntimeError; so does device_sim
        cr(3, 0, 1, 0)


@pytest.mark.parametrize("row_wise, ranges", [
    (True, [cr(0, 0, 7, 1), cr(0, 2, 3, 2)]),   # two full rows of 8, then 4
    (False, [cr(0, 0, 1, 7), cr(2, 0, 2, 3)]),  # two full columns of 8, then 4
])
def test_num_cores_to_corerangeset_fills_whole_rows_or_columns_first(row_wise, ranges):
    grid = ttnn.num_cores_to_corerangeset(20, ttnn.CoreCoord(8, 8), row_wise=row_wise)
    assert grid.ranges() == ranges and grid.num_cores() == 20
    with pytest.raises(ShardSpecError, match="target_num_cores 65 must be between 1 and the 64 cores"):
        ttnn.num_cores_to_corerangeset(65, ttnn.CoreCoord(8, 8))


def test_corerange_to_cores_walks_rows_or_columns():
    grid = ttnn.CoreRangeSet([cr(0, 0, 1, 1)])
    xy = lambda cs: [(c.x, c.y) for c in cs]  # noqa: E731
    assert xy(ttnn.corerange_to_cores(grid, row_wise=True)) == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert xy(ttnn.corerange_to_cores(grid)) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert len(ttnn.corerange_to_cores(grid, max_cores=3)) == 3


# -- configs ------------------------------------------------------------------------------------
def test_create_sharded_memory_config_takes_tt_nns_keywords():
    cfg = ttnn.create_sharded_memory_config(shape=(1, 1, 256, 128), core_grid=ttnn.CoreGrid(y=2, x=4),
                                            strategy=ttnn.ShardStrategy.BLOCK, orientation=None,
                                            use_height_and_width_as_shard_shape=False)
    assert cfg.shard_spec.shape == (128, 32) and cfg.shard_spec.orientation == ttnn.ShardOrientation.ROW_MAJOR
    assert cfg.memory_layout == ttnn.TensorMemoryLayout.BLOCK_SHARDED and cfg.is_l1() and cfg.is_sharded()
    # The fifth positional argument is use_height_and_width_as_shard_shape, as in TT-NN.
    direct = ttnn.create_sharded_memory_config((64, 96), ttnn.CoreGrid(y=1, x=2), ttnn.ShardStrategy.HEIGHT,
                                               ttnn.ShardOrientation.COL_MAJOR, True)
    assert direct.shard_spec.shape == (96, 64)  # swapped for COL_MAJOR, as TT-NN does


def test_a_core_range_set_needs_the_shard_shape_itself_as_in_tt_nn():
    with pytest.raises(RuntimeError, match="needs use_height_and_width_as_shard_shape=True"):
        ttnn.create_sharded_memory_config((256, 64), ttnn.CoreRangeSet([cr(0, 0, 3, 0)]), ttnn.ShardStrategy.HEIGHT)


def test_create_sharded_memory_config_underscore_rounds_uneven_shards_up():
    grid = ttnn.CoreRangeSet([cr(0, 0, 2, 0)])
    cfg = ttnn.create_sharded_memory_config_((1, 100, 64), grid, ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
                                             ttnn.ShardOrientation.ROW_MAJOR, tile_layout=True)
    assert cfg.shard_spec.shape == (64, 64)  # 100 rows over 3 cores: 34, rounded up to whole tiles


def test_shard_spec_has_tt_nns_fields():
    spec = ttnn.ShardSpec(ttnn.CoreRangeSet({cr(0, 0, 1, 0)}), [32, 64], ttnn.ShardOrientation.COL_MAJOR)
    assert (spec.shape, spec.orientation, spec.num_cores()) == ((32, 64), ttnn.ShardOrientation.COL_MAJOR, 2)
    assert ttnn.ShardSpec(spec.grid, (numpy.int64(64), 32)).shape == (64, 32)  # shapes computed with numpy
    with pytest.raises(ShardSpecError, match=r"ShardSpec shape \[32\] must be two positive ints"):
        ttnn.ShardSpec(spec.grid, [32], ttnn.ShardOrientation.ROW_MAJOR)


# -- placement ----------------------------------------------------------------------------------
def test_a_height_sharded_tensor_puts_one_shard_on_each_core_at_one_address(device):
    grid = ttnn.CoreRangeSet([cr(2, 1, 5, 1), cr(2, 2, 5, 2)])  # 8 cores, not starting at (0, 0)
    cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
                            ttnn.ShardSpec(grid, (32, 64), ttnn.ShardOrientation.ROW_MAJOR))
    t = tile((256, 64), device, memory_config=cfg)
    assert t.is_sharded() and ttnn.is_sharded(t) and t.memory_config().shard_spec.shape == (32, 64)
    assert t.buffer.cores == tuple((x, y) for y in (1, 2) for x in range(2, 6))
    assert t.buffer.max_size_per_bank == 2 * 2048  # two bfloat16 tiles per core


def test_block_sharding_col_major_maps_shard_rows_to_grid_columns(device):
    cfg = ttnn.create_sharded_memory_config((128, 64), ttnn.CoreGrid(y=2, x=4), ttnn.ShardStrategy.BLOCK,
                                            ttnn.ShardOrientation.COL_MAJOR)
    t = tile((128, 64), device, memory_config=cfg)
    # 4 shard rows go along x, 2 shard columns along y: shard (i, j) on core (x=i, y=j).
    assert cfg.shard_spec.shape == (32, 32)
    assert t.buffer.cores == ((0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1))


def test_a_sharded_config_without_a_spec_is_completed_by_the_op(device):
    t = tile((2, 128, 256), device)
    h = ttnn.to_memory_config(t, ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG)
    assert h.memory_config().shard_spec.shape == (32, 256) and h.memory_config().shard_spec.num_cores() == 8
    w = ttnn.to_memory_config(t, ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG)
    assert w.memory_config().shard_spec.shape == (256, 32)
    b = ttnn.to_memory_config(t, ttnn.L1_BLOCK_SHARDED_MEMORY_CONFIG)
    assert b.memory_config().shard_spec.shape == (32, 32) and len(b.buffer.cores) == 64
    torch.testing.assert_close(b.to_torch(), t.to_torch())


def test_bad_shard_specs_name_the_field_and_the_fix(device):
    grid = ttnn.CoreRangeSet([cr(0, 0, 1, 0)])
    odd = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, ttnn.ShardSpec(grid, (48, 64)))
    with pytest.raises(ShardSpecError, match=r"ShardSpec shape \[48, 64\] must be whole 32x32 tiles"):
        tile((96, 64), device, memory_config=odd)
    ttnn.from_torch(torch.ones(96, 64), layout=ttnn.ROW_MAJOR, device=device, memory_config=odd)  # fine row-major
    far = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
                            ttnn.ShardSpec(ttnn.CoreRangeSet([cr(0, 0, 0, 8)]), (32, 64)))
    with pytest.raises(RuntimeError, match=r"reaches past the device's 8x8 worker grid"):
        tile((64, 64), device, memory_config=far)
    narrow = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1,
                               ttnn.ShardSpec(grid, (32, 32)))
    with pytest.raises(ValueError, match="width 32 must be at least the tensor's padded width 64"):
        tile((64, 64), device, memory_config=narrow)


def test_a_shard_too_big_for_a_cores_l1_is_out_of_memory_naming_the_core(device):
    grid = ttnn.CoreRangeSet([cr(3, 4, 4, 4)])
    cfg = ttnn.create_sharded_memory_config((1024, 1024), grid, ttnn.ShardStrategy.HEIGHT,
                                            use_height_and_width_as_shard_shape=True)  # 2 MiB a core in bfloat16
    with pytest.raises(ttnn.OutOfMemoryError, match=r"Out of L1 memory on device 0: core \(x=3,y=4\)"):
        tile((2048, 1024), device, memory_config=cfg)


def test_an_nd_shard_spec_deals_shards_round_robin_over_the_grid(device):
    spec = ttnn.NdShardSpec([1, 32, 64], ttnn.CoreRangeSet([cr(0, 0, 2, 0)]))
    t = tile((4, 64, 64), device, memory_config=ttnn.MemoryConfig(ttnn.BufferType.L1, spec))
    # 8 shards of 2 tiles over 3 cores: 3 shards (6 tiles) on the busiest core.
    assert t.buffer.cores == ((0, 0), (1, 0), (2, 0)) and t.buffer.max_size_per_bank == 6 * 2048


# -- the sharded ops ----------------------------------------------------------------------------
def test_interleaved_to_sharded_reshard_and_back_keep_the_values(device):
    t = tile((256, 64), device)
    s = ttnn.interleaved_to_sharded(t, ttnn.CoreCoord(4, 2), [32, 64], ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
                                    ttnn.ShardOrientation.ROW_MAJOR)
    assert s.memory_config().shard_spec.grid.ranges() == [cr(0, 0, 3, 1)]
    r = ttnn.reshard(s, ttnn.create_sharded_memory_config((256, 64), ttnn.CoreGrid(y=1, x=4),
                                                          ttnn.ShardStrategy.HEIGHT))
    assert r.memory_config().shard_spec.shape == (64, 64) and len(r.buffer.cores) == 4
    back = ttnn.sharded_to_interleaved(r)
    assert back.memory_config() == ttnn.DRAM_MEMORY_CONFIG and not back.is_sharded()
    torch.testing.assert_close(back.to_torch(), t.to_torch())
    small = ttnn.interleaved_to_sharded(t, ttnn.L1_BLOCK_SHARDED_MEMORY_CONFIG, ttnn.bfloat8_b)
    assert small.dtype == ttnn.bfloat8_b and small.memory_config().shard_spec is not None


def test_sharded_ops_refuse_the_wrong_direction(device):
    t, s = tile((64, 64), device), tile((64, 64), device, memory_config=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG)
    with pytest.raises(ShardSpecError, match="must be interleaved"):
        ttnn.interleaved_to_sharded(s, ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG)
    assert ttnn.sharded_to_interleaved(t) is t  # TT-NN's sharded_to_interleaved.cpp: no shard spec, no work
    with pytest.raises(ShardSpecError, match="output_memory_config must be a sharded MemoryConfig"):
        ttnn.reshard(s, ttnn.L1_MEMORY_CONFIG)


# -- the report ---------------------------------------------------------------------------------
def test_the_reports_buffer_pages_show_each_shard_on_its_core(tmp_path, device):
    grid = ttnn.CoreRangeSet([cr(5, 6, 6, 7)])
    cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.BLOCK_SHARDED, ttnn.BufferType.L1, ttnn.ShardSpec(grid, (64, 32)))
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(buffer_pages=True)) as report:
        t = tile((128, 64), device, memory_config=cfg)
    con = sqlite3.connect(report.db_path)
    pages = con.execute("SELECT core_x, core_y, bank_id, page_address FROM buffer_pages WHERE address = ? "
                        "ORDER BY page_index", (t.buffer_address(),)).fetchall()
    con.close()
    a = t.buffer_address()
    # 2x2 shards of 2x1 tiles: shard (i, j) on core (5 + j, 6 + i), its two tiles one after the other.
    assert pages == [(x, y, y * 8 + x, a + k * 2048) for y in (6, 7) for x in (5, 6) for k in (0, 1)]


def test_reshard_into_a_given_tensor_writes_in_place(device):
    s = tile((128, 64), device, memory_config=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG)
    target = tile((128, 64), device, memory_config=ttnn.L1_BLOCK_SHARDED_MEMORY_CONFIG)
    address = target.buffer_address()
    out = ttnn.reshard(s, target.memory_config(), target)  # TT-NN's three positional arguments
    assert out is target and target.buffer_address() == address
    torch.testing.assert_close(target.to_torch(), s.to_torch())


def test_partial_sharding_streams_slices_of_a_tall_tensor_through_l1(device):
    full = tile((1, 1, 256, 64), device)
    cache = ttnn.from_torch(torch.zeros(1, 1, 256, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    for i in range(4):  # 4 slices of 64 rows, each height-sharded over 2 cores
        part = ttnn.interleaved_to_sharded_partial(full, ttnn.CoreGrid(y=1, x=2), [32, 64], 4, i,
                                                   ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
                                                   ttnn.ShardOrientation.ROW_MAJOR)
        assert part.shape == (1, 1, 64, 64) and part.is_sharded() and len(part.buffer.cores) == 2
        assert ttnn.sharded_to_interleaved_partial(ttnn.neg(part), cache, 4, i) is cache
    torch.testing.assert_close(cache.to_torch(), -full.to_torch())
    with pytest.raises(ShardSpecError, match="slice_index 4 of num_slices 4 must pick one of 4 equal slices"):
        ttnn.interleaved_to_sharded_partial(full, ttnn.CoreGrid(y=1, x=2), [32, 64], 4, 4,
                                            ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.ShardOrientation.ROW_MAJOR)


def test_to_memory_config_moves_between_any_two_configs(device):
    t = tile((2, 64, 128), device)
    cfgs = [ttnn.L1_MEMORY_CONFIG, ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG,
            ttnn.create_sharded_memory_config((2, 64, 128), ttnn.CoreGrid(y=2, x=2), ttnn.ShardStrategy.BLOCK),
            ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG, ttnn.DRAM_MEMORY_CONFIG]
    for cfg in cfgs:
        t = ttnn.to_memory_config(t, cfg)
        assert t.memory_config().memory_layout == cfg.memory_layout and t.is_sharded() == cfg.is_sharded()
    torch.testing.assert_close(t.to_torch(), tile((2, 64, 128), device).to_torch())


def test_tt_nns_core_helpers(device):
    t = tile((2, 30, 40), device)
    assert (ttnn.core.roundup(100, 32), ttnn.core.divup(100, 32)) == (128, 4)
    assert ttnn.is_tensor_storage_on_device(t) and ttnn.get_memory_config(t) == ttnn.DRAM_MEMORY_CONFIG
    assert ttnn.get_memory_config(t.cpu()) is None and not ttnn.is_tensor_storage_on_device(t.cpu())
    assert ttnn.has_tile_padding(t) and not ttnn.has_tile_padding(t, dim=0)
    grid = ttnn.CoreRangeSet([cr(1, 0, 3, 1), cr(5, 0, 6, 1)])
    got = ttnn.num_cores_to_corerangeset_in_subcoregrids(ttnn.CoreCoord(2, 0), 5, grid, row_wise=True)
    assert got.ranges() == [cr(2, 0, 3, 0), cr(1, 1, 3, 1)]


def test_a_spec_less_sharded_output_lands_on_its_sharded_inputs_cores(device):
    cfg = ttnn.create_sharded_memory_config((64, 128), ttnn.CoreGrid(y=2, x=2), ttnn.ShardStrategy.BLOCK,
                                            ttnn.ShardOrientation.COL_MAJOR)
    t = tile((64, 128), device, memory_config=cfg)
    assert ttnn.exp(t, memory_config=ttnn.L1_BLOCK_SHARDED_MEMORY_CONFIG).memory_config() == cfg
    # 2 tile rows do not divide over the input's 4 cores: the device grid is used instead (2 cores).
    h = ttnn.exp(t, memory_config=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG).memory_config().shard_spec
    assert h.num_cores() == 2 and h.shape == (32, 128)


def test_dram_sharding_puts_one_shard_in_each_dram_bank(device):
    banks = ttnn.CoreRangeSet([cr(0, 0, 11, 0)])  # a DRAM shard grid numbers the 12 DRAM banks along x
    cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.DRAM,
                            ttnn.ShardSpec(banks, (32, 64)))
    w = tile((32, 768), device, memory_config=cfg)
    assert w.buffer.buffer_type == ttnn.BufferType.DRAM and w.buffer.cores == tuple((x, 0) for x in range(12))
    too_many = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.DRAM,
                                 ttnn.ShardSpec(ttnn.CoreRangeSet([cr(0, 0, 12, 0)]), (32, 64)))
    with pytest.raises(ShardSpecError, match="reaches past the device's 12 DRAM banks"):
        tile((32, 832), device, memory_config=too_many)


def test_a_core_coord_is_made_from_x_and_y_or_from_a_pair_as_in_tt_nn():
    # TT-NN's CoreCoord binding has an (x, y) constructor and a tuple one: models write CoreCoord((8, 8)).
    assert ttnn.CoreCoord((8, 4)) == ttnn.CoreCoord(8, 4) == ttnn.CoreCoord(x=8, y=4)
    assert hash(ttnn.CoreCoord((1, 2))) == hash(ttnn.CoreCoord(1, 2)) and repr(ttnn.CoreCoord((1, 2))) == "(x=1,y=2)"
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord((0, 0)), ttnn.CoreCoord((3, 1)))])
    assert grid.num_cores() == 8
    with pytest.raises(TypeError, match=r"CoreCoord takes x and y, or a pair \(x, y\); got 8"):
        ttnn.CoreCoord(8)
