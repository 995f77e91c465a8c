"""TT-NN calls that tt-metal's tutorials make, in our own words: each must work unchanged on device_sim.

    .venv/bin/python -m pytest tests/test_tutorial_apis.py -q
"""

import torch

import device_sim as ttnn


def test_create_device_opens_a_device_that_runs_ops_and_close_device_closes_it():
    # TT-NN's older spelling, with its queue count and L1 region knobs given positionally and by name.
    device = ttnn.CreateDevice(0, 1, l1_small_size=16384, trace_region_size=0)
    try:
        assert device.is_open and device in ttnn.open_devices()
        t = ttnn.from_torch(torch.full((32, 32), 2.0), layout=ttnn.TILE_LAYOUT, device=device)
        assert torch.equal(ttnn.to_torch(ttnn.add(t, t)).float(), torch.full((32, 32), 4.0))
    finally:
        ttnn.CloseDevice(device)
    assert not device.is_open and device not in ttnn.open_devices()
