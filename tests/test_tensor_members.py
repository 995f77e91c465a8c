"""The Tensor members models call: spec, is_sharded, item, to_list, .to(layout) / .to(device, config), shape."""

import pytest
import torch

import device_sim as ttnn


def test_spec_says_what_the_tensor_is(device):
    t = ttnn.from_torch(torch.ones(2, 40), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, memory=ttnn.L1)
    spec = t.spec
    assert (spec.shape, spec.dtype, spec.layout, spec.memory_config, spec.tile) == ((2, 40), ttnn.bfloat16, ttnn.TILE,
                                                                                   ttnn.L1, ttnn.Tile())
    assert spec.padded_shape == t.padded_shape == (32, 64)


def test_is_sharded_follows_the_memory_config(device):
    interleaved = ttnn.from_torch(torch.ones(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    assert not interleaved.is_sharded()
    cfg = ttnn.create_sharded_memory_config((64, 64), ttnn.CoreGrid(y=2, x=1), ttnn.ShardStrategy.HEIGHT)
    assert ttnn.to_memory_config(interleaved, cfg).is_sharded()
    assert not ttnn.from_torch(torch.ones(2, 2)).is_sharded()


def test_item_and_to_list_read_values_back(device):
    assert ttnn.from_torch(torch.tensor([[2.5]]), dtype=ttnn.float32, device=device).item() == 2.5
    t = ttnn.from_torch(torch.tensor([[1, 2], [3, 4]]), dtype=ttnn.int32, device=device)
    assert t.to_list() == t.tolist() == [[1, 2], [3, 4]]
    with pytest.raises(ValueError, match=r"item\(\) needs a tensor with one element; .* has shape \[2, 2\]"):
        t.item()


def test_to_takes_a_layout_or_a_device_and_memory_config(device):
    host = ttnn.from_torch(torch.ones(3, 5), dtype=ttnn.bfloat16)
    tiled = host.to(ttnn.TILE)
    assert tiled.layout == ttnn.TILE and tiled.device() is None
    on = host.to(device, ttnn.L1)
    assert on.device() is device and on.memory_config() == ttnn.L1


def test_shape_indexes_and_slices_like_a_tuple(device):
    t = ttnn.from_torch(torch.ones(2, 3, 4), dtype=ttnn.bfloat16, device=device)
    assert (t.shape[0], t.shape[-1], t.shape[1:]) == (2, 4, ttnn.Shape([3, 4]))
    assert t.shape.rank == 3 and list(t.shape) == [2, 3, 4]


def test_cpu_takes_tt_nns_blocking_and_queue_arguments(device):
    t = ttnn.from_torch(torch.ones(2, 2), dtype=ttnn.bfloat16, device=device)
    host = t.cpu(blocking=False, cq_id=0)
    assert host.device() is None and torch.equal(host.to_torch(), t.to_torch())


def test_tensor_spec_takes_tt_nns_constructor_forms():
    plain = ttnn.TensorSpec(ttnn.Shape([2, 64]), ttnn.bfloat16, ttnn.TILE)
    assert plain.memory_config == ttnn.DRAM and plain.tile == ttnn.Tile() and plain.padded_shape == (32, 64)
    l1 = ttnn.TensorSpec([2, 64], ttnn.bfloat16, ttnn.TILE, ttnn.BufferType.L1, ttnn.Tile((16, 32)))
    assert l1.memory_config == ttnn.L1 and l1.padded_shape == (16, 64)
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(0, 1))])
    shard = ttnn.ShardSpec(grid, (32, 64), ttnn.ShardOrientation.ROW_MAJOR)
    sharded = ttnn.TensorSpec([64, 64], ttnn.bfloat16, ttnn.TILE, ttnn.TensorMemoryLayout.HEIGHT_SHARDED, shard,
                              ttnn.BufferType.L1)
    assert sharded.memory_config.is_sharded() and sharded.memory_config.shard_spec == shard
    with pytest.raises(TypeError, match="TensorSpec: unexpected argument 'x'"):
        ttnn.TensorSpec([2], ttnn.bfloat16, ttnn.TILE, "x")
