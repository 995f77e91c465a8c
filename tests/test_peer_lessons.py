"""What tt-metal's own tests/ttnn taught device_sim (`make peer`, peer/README.md), kept as small tests of ours.

Each test names the TT-NN behaviour a tt-metal unit test relied on and device_sim lacked or refused.

    .venv/bin/python -m pytest tests/test_peer_lessons.py -q
"""

import pytest
import torch

import device_sim as ttnn

# -- what tt-metal's device fixture calls (its conftest.py and tests/scripts/common.py) ---------------


def test_the_device_fixture_calls_run_get_pcie_device_id_cluster_type_and_a_dispatch_config_of_nones():
    assert ttnn.GetPCIeDeviceID(0) == 0
    with pytest.raises(ValueError, match="chips 0 to"):
        ttnn.GetPCIeDeviceID(ttnn.get_num_devices())
    # the default emulated system is 2x4 Wormhole chips: a T3K, whose dispatch cores are ethernet cores, ROW
    assert ttnn.cluster.get_cluster_type() == ttnn.cluster.ClusterType.T3K
    assert ttnn.cluster.ClusterType.TG == 5 and ttnn._ttnn.cluster is ttnn.cluster
    cfg = ttnn.DispatchCoreConfig(None, None, None)
    assert (cfg.type, cfg.axis) == (ttnn.DispatchCoreType.ETH, ttnn.DispatchCoreAxis.ROW)
    with pytest.raises(ValueError, match="COL axis is not supported for ETH"):
        ttnn.DispatchCoreConfig(ttnn.DispatchCoreType.ETH, ttnn.DispatchCoreAxis.COL)
    device = ttnn.CreateDevice(device_id=0, dispatch_core_config=cfg)
    ttnn.close_device(device)


def test_mesh_device_fixture_reads_the_system_mesh_through_ttnn_ttnn_multi_device():
    shape = ttnn._ttnn.multi_device.SystemMeshDescriptor().shape()
    assert shape.mesh_size() == ttnn.get_num_devices()
    assert ttnn._ttnn.multi_device.MeshDevice is ttnn.MeshDevice


# -- the program cache: tests count its entries around an op ----------------------------------------


def test_running_an_op_again_on_the_same_specs_adds_no_program_cache_entry(device):
    a = ttnn.from_torch(torch.ones(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    before = device.num_program_cache_entries()
    ttnn.add(a, a)
    once = device.num_program_cache_entries()
    ttnn.add(a, a)
    ttnn.add(a, a)
    assert once == before + 1 and device.num_program_cache_entries() == once
    ttnn.exp(a)  # another program
    assert device.num_program_cache_entries() == once + 1
    device.disable_and_clear_program_cache()
    ttnn.add(a, a)
    assert device.num_program_cache_entries() == 0
    device.enable_program_cache()
    ttnn.add(a, a)
    assert device.num_program_cache_entries() == 1


# -- ttnn._ttnn.reports: the backward tests count L1 pages before and after an op --------------------


def test_get_buffer_pages_lists_each_l1_page_round_robin_over_the_banks_and_no_dram_page(device):
    dram = ttnn.from_torch(torch.ones(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    l1 = ttnn.from_torch(torch.ones(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                         memory_config=ttnn.L1_MEMORY_CONFIG)
    pages = ttnn._ttnn.reports.get_buffer_pages(device)
    assert [p.page_index for p in pages] == [0, 1, 2, 3]
    assert [p.bank_id for p in pages] == [0, 1, 2, 3] and {p.address for p in pages} == {l1.buffer.address}
    assert all(p.page_size == 2048 and p.buffer_type == ttnn.BufferType.L1 for p in pages)
    assert {b.address for b in ttnn._ttnn.reports.get_buffers(device)} == {dram.buffer.address, l1.buffer.address}
    assert ttnn._ttnn.reports.get_device_info(device).l1_num_banks == 64
