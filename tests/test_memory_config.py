"""Which memory config an op's output gets (DESIGN.md's four rules), strict mode, and sharded configs."""

import asyncio
import threading

import pytest
import torch

import device_sim as ttnn


def put(device, memory, shape=(32, 64)):
    return ttnn.from_torch(torch.randn(shape), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, memory=memory)


def placed(t):
    return t.memory_config(), t.memory_config_source


# -- the four rules, in order -----------------------------------------------------------------
@pytest.mark.parametrize("keyword", ["memory", "memory_config"])
def test_rule_1_an_explicit_argument_beats_everything(keyword, device):
    a, b = put(device, ttnn.DRAM), put(device, ttnn.DRAM)
    with ttnn.memory(ttnn.DRAM):
        assert placed(ttnn.add(a, b, **{keyword: ttnn.L1})) == (ttnn.L1, "argument")


def test_rule_2_the_context_beats_the_inputs(device):
    a, b = put(device, ttnn.DRAM), put(device, ttnn.DRAM)
    with ttnn.memory(ttnn.L1):
        assert placed(a + b) == (ttnn.L1, "context")
        assert placed(put(device, None)) == (ttnn.L1, "context")  # from_torch follows the rules too


def test_rule_3_inputs_that_agree_choose(device):
    a, b = put(device, ttnn.L1), put(device, ttnn.L1)
    assert placed(a * b) == (ttnn.L1, "inputs")
    assert placed(a * 2) == (ttnn.L1, "inputs")  # numbers are not inputs with a config


def test_rule_4_the_default_when_inputs_disagree(device):
    a, b = put(device, ttnn.L1), put(device, ttnn.DRAM)
    assert placed(a - b) == (ttnn.DRAM, "default")
    ttnn.set_default_memory_config(ttnn.L1)  # conftest restores the default afterwards
    assert placed(a - b) == (ttnn.L1, "default")
    assert placed(put(device, None)) == (ttnn.L1, "default")


def test_memory_blocks_nest_and_unwind(device):
    a = put(device, ttnn.DRAM)
    with ttnn.memory(ttnn.L1):
        with ttnn.memory(ttnn.DRAM):
            assert placed(-a) == (ttnn.DRAM, "context")
        assert placed(-a) == (ttnn.L1, "context")
    assert placed(-a) == (ttnn.DRAM, "inputs")


def test_memory_block_unwinds_on_exception(device):
    with pytest.raises(ZeroDivisionError), ttnn.memory(ttnn.L1):
        1 / 0  # noqa: B018
    assert placed(-put(device, ttnn.DRAM))[1] == "inputs"


def test_memory_block_rejects_a_non_config():
    with pytest.raises(TypeError, match="expected a MemoryConfig"), ttnn.memory("L1"):
        pass


def test_threads_do_not_see_each_others_memory_block(device):
    a = put(device, ttnn.DRAM)
    inside, done = threading.Event(), threading.Event()
    seen = {}

    def in_block():
        with ttnn.memory(ttnn.L1):
            inside.set()
            done.wait(5)
            seen["in_block"] = placed(-a)

    worker = threading.Thread(target=in_block)
    worker.start()
    inside.wait(5)
    seen["outside"] = placed(-a)  # while the other thread is inside its block
    done.set()
    worker.join()
    assert seen == {"in_block": (ttnn.L1, "context"), "outside": (ttnn.DRAM, "inputs")}


def test_asyncio_tasks_do_not_see_each_others_memory_block(device):
    a = put(device, ttnn.DRAM)

    async def in_block(entered, release):
        with ttnn.memory(ttnn.L1):
            entered.set()
            await release.wait()
            return placed(-a)

    async def outside(entered, release):
        await entered.wait()
        result = placed(-a)  # the other task is suspended inside its block
        release.set()
        return result

    async def main():
        entered, release = asyncio.Event(), asyncio.Event()
        return await asyncio.gather(in_block(entered, release), outside(entered, release))

    assert asyncio.run(main()) == [(ttnn.L1, "context"), (ttnn.DRAM, "inputs")]


# -- strict mode and argument spelling --------------------------------------------------------
def test_strict_mode_names_both_inputs(device):
    a, b = put(device, ttnn.L1), put(device, ttnn.DRAM)
    with ttnn.strict(), pytest.raises(ValueError) as info:
        ttnn.add(a, b)
    message = str(info.value)
    assert f"tensor {a.tensor_id}" in message and f"tensor {b.tensor_id}" in message
    assert "BufferType::L1" in message and "BufferType::DRAM" in message
    assert placed(a + b)[1] == "default"  # outside the block the same op is allowed


def test_strict_mode_checks_layout_too(device):
    a = put(device, ttnn.L1)
    rm = ttnn.from_torch(torch.randn(32, 64), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=device,
                         memory=ttnn.L1)
    with ttnn.strict(), pytest.raises(ValueError, match="Layout.TILE.*Layout.ROW_MAJOR"):
        a + rm  # noqa: B018


def test_memory_and_memory_config_together_is_a_type_error(device):
    a = put(device, ttnn.L1)
    with pytest.raises(TypeError, match="either memory= or memory_config="):
        ttnn.add(a, a, memory=ttnn.L1, memory_config=ttnn.L1)
    with pytest.raises(TypeError, match="either memory= or memory_config="):
        ttnn.from_torch(torch.randn(4), device=device, memory=ttnn.L1, memory_config=ttnn.DRAM)
    with pytest.raises(TypeError, match="either memory= or memory_config="):
        ttnn.Tensor(torch.randn(4), device=device, memory=ttnn.L1, memory_config=ttnn.DRAM)


# -- sharded configs --------------------------------------------------------------------------
@pytest.mark.parametrize("strategy, orientation, shard, cores", [
    (ttnn.ShardStrategy.HEIGHT, ttnn.ShardOrientation.ROW_MAJOR, (32, 256), 8),
    (ttnn.ShardStrategy.WIDTH, ttnn.ShardOrientation.ROW_MAJOR, (256, 32), 8),
    (ttnn.ShardStrategy.BLOCK, ttnn.ShardOrientation.ROW_MAJOR, (128, 64), 8),
    (ttnn.ShardStrategy.BLOCK, ttnn.ShardOrientation.COL_MAJOR, (64, 128), 8),
])
def test_sharded_configs_that_fit(strategy, orientation, shard, cores, device):
    cfg = ttnn.create_sharded_memory_config((1, 256, 256), ttnn.CoreGrid(y=2, x=4), strategy, orientation)
    assert cfg.is_sharded() and cfg.buffer_type == ttnn.BufferType.L1
    assert cfg.shard_spec.shape == shard and cfg.shard_spec.orientation == orientation
    t = put(device, cfg, shape=(1, 256, 256))
    assert placed(t) == (cfg, "argument")
    assert t.buffer.num_banks == cores and t.buffer.buffer_layout == cfg.memory_layout
    assert t.buffer.max_size_per_bank == shard[0] * shard[1] * 2  # bfloat16 tiles, no waste
    assert placed(t + t) == (cfg, "inputs")


def test_shard_shape_given_directly(device):
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(2, 3), ttnn.CoreCoord(2, 6))])
    cfg = ttnn.create_sharded_memory_config((64, 96), grid, ttnn.ShardStrategy.HEIGHT,
                                            use_height_and_width_as_shard_shape=True)
    assert cfg.shard_spec.shape == (64, 96) and cfg.shard_spec.num_cores() == 4
    assert put(device, cfg, shape=(4, 64, 96)).buffer.num_banks == 4


def test_a_sharded_config_that_does_not_fit_is_a_clear_error(device):
    cfg = ttnn.create_sharded_memory_config((64, 64), ttnn.CoreGrid(y=1, x=2), ttnn.ShardStrategy.HEIGHT)
    with pytest.raises(ValueError, match=r"cannot hold a tensor of padded shape \[128, 64\].*needs 4x1 shards"):
        put(device, cfg, shape=(128, 64))


def test_a_shard_grid_beyond_the_device_is_a_clear_error(device):
    cfg = ttnn.create_sharded_memory_config((32, 32), ttnn.CoreGrid(y=9, x=1), ttnn.ShardStrategy.HEIGHT,
                                            use_height_and_width_as_shard_shape=True)
    with pytest.raises(ValueError, match="reaches past the device's 8x8 worker grid"):
        put(device, cfg, shape=(9 * 32, 32))


def test_a_tensor_that_does_not_divide_over_the_grid_is_a_clear_error():
    with pytest.raises(ValueError, match="tensor height 96 does not divide evenly over 64 cores"):
        ttnn.create_sharded_memory_config((96, 64), ttnn.CoreGrid(y=8, x=8), ttnn.ShardStrategy.HEIGHT)
