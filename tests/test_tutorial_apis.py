"""TT-NN calls that tt-metal's tutorials make, in our own words: each must work unchanged on device_sim.

    .venv/bin/python -m pytest tests/test_tutorial_apis.py -q
"""

import pytest
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


def test_moreh_norm_turns_rows_into_unit_vectors_as_a_cosine_similarity_needs(device):
    g = torch.Generator().manual_seed(3)
    feats = torch.randn(4, 96, generator=g) * 5
    t = ttnn.from_torch(feats, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    norms = ttnn.operations.moreh.norm(t, p=2.0, dim=1, keepdim=True)
    assert norms.shape == (4, 1) and norms.dtype == ttnn.bfloat16
    want = torch.linalg.vector_norm(t.value.float(), dim=1, keepdim=True)
    torch.testing.assert_close(ttnn.to_torch(norms).float(), want, rtol=2 ** -8, atol=0)
    unit = ttnn.to_torch(ttnn.divide(t, norms)).float()
    torch.testing.assert_close(unit.norm(dim=1), torch.ones(4), rtol=0.02, atol=0)


def test_moreh_norm_takes_other_orders_every_dim_and_an_output_tensor(device):
    t = ttnn.from_torch(torch.tensor([[3.0, -4.0], [1.0, 2.0]]), dtype=ttnn.bfloat16, device=device)
    assert ttnn.to_torch(ttnn.moreh_norm(t, 1.0, dim=[0, 1])).item() == 10.0
    assert ttnn.to_torch(ttnn.moreh_norm(t, float("inf"))).item() == 4.0
    out = ttnn.from_torch(torch.zeros(2), dtype=ttnn.bfloat16, device=device)
    got = ttnn.moreh_norm(t, 2.0, dim=-1, output=out)
    want = torch.tensor([5.0, 5.0 ** 0.5]).bfloat16()  # rows [3, -4] and [1, 2]
    assert got is out and torch.equal(ttnn.to_torch(out), want)


def test_moreh_norm_names_a_bad_order_or_dim(device):
    t = ttnn.from_torch(torch.ones(2, 2), device=device)
    with pytest.raises(TypeError, match=r"ttnn.moreh_norm: p must be a number .*got 'fro'"):
        ttnn.moreh_norm(t, "fro")
    with pytest.raises(ValueError, match=r"ttnn.moreh_norm: dim 5 is not a dim .* rank-2 tensor"):
        ttnn.moreh_norm(t, 2.0, dim=5)


def test_open_device_takes_a_dispatch_core_config_from_ttnn_or_ttnn_device():
    cfg = ttnn.device.DispatchCoreConfig(ttnn.device.DispatchCoreType.ETH, ttnn.DispatchCoreAxis.ROW)
    assert (cfg.type, cfg.axis) == (ttnn.DispatchCoreType.ETH, ttnn.DispatchCoreAxis.ROW)
    assert cfg == ttnn.DispatchCoreConfig(type=ttnn.DispatchCoreType.ETH, axis=ttnn.DispatchCoreAxis.ROW)
    # TT-NN's ttnn/device.py: what is left None is the system's default (the default 2x4 system is a T3K: ETH, ROW)
    assert ttnn.DispatchCoreConfig() == ttnn.DispatchCoreConfig(None, None, None)
    assert (ttnn.DispatchCoreConfig().type, ttnn.DispatchCoreConfig().axis) == (ttnn.DispatchCoreType.ETH,
                                                                                 ttnn.DispatchCoreAxis.ROW)
    assert ttnn.DispatchCoreConfig(axis=ttnn.DispatchCoreAxis.COL).type == ttnn.DispatchCoreType.WORKER
    device = ttnn.open_device(device_id=0, l1_small_size=8192, dispatch_core_config=cfg)
    try:
        t = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE_LAYOUT, device=device)
        assert torch.equal(ttnn.to_torch(ttnn.add(t, t)).float(), torch.full((32, 32), 2.0))
    finally:
        ttnn.close_device(device)


def test_a_dispatch_core_config_names_a_wrong_type_or_axis():
    with pytest.raises(TypeError, match=r"type must be a ttnn.DispatchCoreType \(WORKER or ETH\), got 'eth'"):
        ttnn.DispatchCoreConfig("eth")
    with pytest.raises(TypeError, match=r"axis must be a ttnn.DispatchCoreAxis \(ROW or COL\) or None"):
        ttnn.DispatchCoreConfig(ttnn.DispatchCoreType.ETH, "row")


def test_the_chip_is_a_wormhole_b0_by_every_way_a_model_asks(device):
    # Models pick core grids and dispatch axes by architecture: ttnn.get_arch_name() == "blackhole", or
    # device.arch() == ttnn.device.Arch.WORMHOLE_B0, or ttnn.device.is_blackhole() with no device.
    assert ttnn.get_arch_name() == "wormhole_b0"
    assert device.arch() == ttnn.device.Arch.WORMHOLE_B0 and device.arch() is not ttnn.device.Arch.BLACKHOLE
    assert ttnn.device.is_wormhole_b0(device) and ttnn.device.is_wormhole_b0()
    assert not ttnn.device.is_blackhole() and not ttnn.device.is_blackhole(device)
    assert not ttnn.device.is_grayskull(device)
    assert int(ttnn.device.Arch.BLACKHOLE) == 3 and ttnn.device.Arch.Invalid == 0xFF  # tt::ARCH's values


def test_a_mesh_and_each_of_its_chips_is_a_wormhole_b0():
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 2))
    try:
        assert mesh.arch() == ttnn.device.Arch.WORMHOLE_B0
        assert all(chip.arch() == ttnn.device.Arch.WORMHOLE_B0 for chip in mesh.get_devices())
    finally:
        ttnn.close_mesh_device(mesh)


def test_num_available_devices_counts_the_emulated_system(monkeypatch):
    assert ttnn.GetNumAvailableDevices() == ttnn.get_num_devices() == ttnn.GetNumPCIeDevices() == 8  # a 2x4 T3000
    monkeypatch.setenv("DEVICE_SIM_SYSTEM_MESH", "4x8")
    assert ttnn.GetNumAvailableDevices() == 32 and ttnn.device.GetNumAvailableDevices() == 32


def test_default_device_is_what_set_default_device_set_until_it_closes():
    assert ttnn.GetDefaultDevice() is None
    device = ttnn.open_device(0)
    try:
        ttnn.SetDefaultDevice(device)
        assert ttnn.GetDefaultDevice() is device
        ttnn.SetDefaultDevice(None)
        assert ttnn.GetDefaultDevice() is None
        ttnn.SetDefaultDevice(device)
    finally:
        ttnn.close_device(device)
    assert ttnn.GetDefaultDevice() is None  # a closed device is no default
    with pytest.raises(TypeError, match=r"SetDefaultDevice\(0\): give a device from ttnn.open_device"):
        ttnn.SetDefaultDevice(0)


def test_experimental_typecast_converts_as_typecast_does_and_is_recorded_under_its_own_name(device):
    t = ttnn.from_torch(torch.randn(2, 64) * 3, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    old = ttnn.experimental.typecast(t, ttnn.float32, memory_config=ttnn.L1_MEMORY_CONFIG)
    new = ttnn.typecast(t, ttnn.float32, memory_config=ttnn.L1_MEMORY_CONFIG)
    assert old.dtype == ttnn.float32 and old.memory_config() == ttnn.L1_MEMORY_CONFIG
    assert torch.equal(ttnn.to_torch(old), ttnn.to_torch(new))
    assert ttnn.experimental.typecast.op.name == "ttnn.experimental.typecast"
    typo = r"ttnn.experimental.typecast\(\) got an unexpected keyword argument 'memory_cfg'"
    with pytest.raises(TypeError, match=typo):
        ttnn.experimental.typecast(t, ttnn.float32, memory_cfg=ttnn.L1_MEMORY_CONFIG)


def test_read_device_profiler_leaves_every_op_timed_in_the_report(tmp_path):
    # Models call ttnn.ReadDeviceProfiler(device) between steps to pull device times to the host; device_sim's
    # are on the host already, so the capture's profile_log_device.csv times each op, before the call and after.
    import csv

    import ttreport

    device = ttnn.open_device(0)
    try:
        t = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE_LAYOUT, device=device)
        with ttreport.capture(tmp_path / "r"):
            ttnn.add(t, t)
            ttnn.ReadDeviceProfiler(device)
            ttnn.DumpDeviceProfiler(device, last_dump=True)
            ttnn.multiply(t, t)
        with pytest.raises(TypeError, match=r"ReadDeviceProfiler\(0\): give the device"):
            ttnn.ReadDeviceProfiler(0)
    finally:
        ttnn.close_device(device)
    with pytest.raises(RuntimeError, match="the device is closed"):
        ttnn.ReadDeviceProfiler(device)
    ops = [op.name for op in ttreport.Report(tmp_path / "r").operations()]
    assert ops == ["ttnn.add", "ttnn.mul"]  # TT-NN records multiply under its C++ name
    with open(tmp_path / "r" / "profile_log_device.csv") as f:
        text = f.read()
    zones = [row[10] for row in csv.reader(text.splitlines()[2:])]  # after the arch line and the header
    assert zones == ["ZONE_START", "ZONE_END"] * 2  # one firmware zone for each op
