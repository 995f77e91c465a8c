"""Tensor.host_stand_in: the public way for a profiler to hand values it holds to dump_tensor (ttreport's tensor
writer), instead of building a Tensor through __new__ and its private fields."""

import torch

import device_sim as ttnn
from device_sim.tensor import next_tensor_id


def test_a_stand_in_takes_no_id_allocates_nothing_and_round_trips_through_a_bin_file(tmp_path, device):
    original = ttnn.from_torch(torch.arange(64.0).reshape(2, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE,
                               device=device, memory=ttnn.L1)
    l1 = device.memory.allocators[ttnn.BufferType.L1]
    lowest = l1.lowest_occupied_address()
    before = next_tensor_id()
    t = ttnn.Tensor.host_stand_in(original._value, original.dtype, original.layout, original.memory_config())
    assert next_tensor_id() == before + 1  # only the probe above took an id
    assert (t.tensor_id, t.device(), t.buffer) == (-1, None, None)
    assert l1.lowest_occupied_address() == lowest
    ttnn.dump_tensor(tmp_path / "t.bin", t)
    back = ttnn.load_tensor(tmp_path / "t.bin")
    assert back.dtype == ttnn.bfloat16 and back.layout == ttnn.TILE
    assert torch.equal(ttnn.to_torch(back), ttnn.to_torch(original))
