"""A trace capture frees what the model frees: intermediates dropped or deallocated inside a capture leave L1.

Issue 31: the trace used to hold every captured op's tensors, so Whisper's encoder filled L1 inside its capture.
"""

import pytest
import torch

import device_sim as ttnn


def rnd(*shape, seed=0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def l1_buffers(device) -> int:
    return sum(1 for b in device.memory.live_buffers() if b.buffer_type == ttnn.BufferType.L1)


def round_trips(x, steps: int = 3):
    """Whisper's `_linear_lofi_l1_roundtrip` pattern: L1 in, an op in L1, back to DRAM; the L1 tensors are only
    dropped (their last reference goes), not deallocated."""
    for _ in range(steps):
        x = ttnn.to_memory_config(ttnn.gelu(ttnn.to_memory_config(x, ttnn.L1_MEMORY_CONFIG),
                                            memory_config=ttnn.L1_MEMORY_CONFIG), ttnn.DRAM_MEMORY_CONFIG)
    return x


def two_layers(x, w1, w2):
    """Two linear+gelu layers whose L1 intermediates are deallocated or simply dropped."""
    for w in (w1, w2):
        h = ttnn.linear(x, w, memory_config=ttnn.L1_MEMORY_CONFIG)
        g = ttnn.gelu(h, memory_config=ttnn.L1_MEMORY_CONFIG)
        ttnn.deallocate(h)
        x = ttnn.to_memory_config(g, ttnn.DRAM_MEMORY_CONFIG)  # g is only dropped: its last reference goes
    return x


def reference(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    for w in (w1, w2):
        x = torch.nn.functional.gelu(x @ w)
    return x


def pcc(a: torch.Tensor, b: torch.Tensor) -> float:
    return torch.corrcoef(torch.stack([a.flatten().float(), b.flatten().float()]))[0, 1].item()


def dram(device, t: torch.Tensor) -> ttnn.Tensor:
    return ttnn.from_torch(t, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)


@pytest.mark.parametrize("traced", [False, True])
def test_l1_round_trips_leave_no_l1_buffer_live(device, traced):
    x = dram(device, rnd(64, 64))
    before = l1_buffers(device)
    tid = ttnn.begin_trace_capture(device) if traced else None
    try:
        y = round_trips(x)
        during = l1_buffers(device)
    finally:
        if traced:
            ttnn.end_trace_capture(device, tid)
    assert during == before  # during the capture too, before it ends
    if traced:
        ttnn.copy_host_to_device_tensor(ttnn.from_torch(rnd(64, 64, seed=1), dtype=ttnn.bfloat16,
                                                        layout=ttnn.TILE), x)
        address = y.buffer_address()
        ttnn.execute_trace(device, tid)
        assert l1_buffers(device) == before  # the replay's L1 scratch is freed again
        assert y.buffer_address() == address
        ttnn.release_trace(device, tid)
    want = rnd(64, 64, seed=1 if traced else 0)
    for _ in range(3):
        want = torch.nn.functional.gelu(want)
    assert pcc(ttnn.to_torch(y), want) > 0.999


def test_a_replayed_two_layer_model_matches_torch_and_leaks_nothing(device):
    w1, w2 = rnd(64, 128, seed=7) / 8, rnd(128, 64, seed=8) / 8
    tw1, tw2 = dram(device, w1), dram(device, w2)
    x = dram(device, rnd(32, 64))
    tid = ttnn.begin_trace_capture(device)
    l1 = l1_buffers(device)
    try:
        y = two_layers(x, tw1, tw2)
    finally:
        ttnn.end_trace_capture(device, tid)
    assert l1_buffers(device) == l1
    live = len(device.memory.live_buffers())
    assert pcc(ttnn.to_torch(y), reference(rnd(32, 64), w1, w2)) > 0.999
    for seed in (1, 2):
        ttnn.copy_host_to_device_tensor(ttnn.from_torch(rnd(32, 64, seed=seed), dtype=ttnn.bfloat16,
                                                        layout=ttnn.TILE), x)
        ttnn.execute_trace(device, tid)
        assert pcc(ttnn.to_torch(y), reference(rnd(32, 64, seed=seed), w1, w2)) > 0.999
        assert len(device.memory.live_buffers()) == live
    ttnn.release_trace(device, tid)


def test_a_replay_on_a_mesh_writes_each_chip_into_the_held_output():
    """A mesh op runs once per chip: the replay puts each chip's result into the held output's own shard."""
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 2))
    try:
        def on_mesh(t):
            return ttnn.from_torch(t, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                                   mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))

        w = rnd(64, 64, seed=7) / 8
        tw, x = on_mesh(w), on_mesh(rnd(32, 64))
        tid = ttnn.begin_trace_capture(mesh)
        try:
            y = ttnn.gelu(ttnn.linear(x, tw, memory_config=ttnn.L1_MEMORY_CONFIG))
        finally:
            ttnn.end_trace_capture(mesh, tid)
        addresses = [s.buffer_address() for s in y.shards]
        ttnn.copy_host_to_device_tensor(ttnn.from_torch(rnd(32, 64, seed=1), dtype=ttnn.bfloat16, layout=ttnn.TILE,
                                                        mesh_mapper=ttnn.ReplicateTensorToMesh(mesh)), x)
        ttnn.execute_trace(mesh, tid)
        got = ttnn.to_torch(y, mesh_composer=ttnn.ConcatMeshToTensor(mesh, dim=0))
        want = torch.nn.functional.gelu(rnd(32, 64, seed=1) @ w)
        assert [pcc(chip, want) > 0.999 for chip in got.split(32)] == [True, True]
        assert [s.buffer_address() for s in y.shards] == addresses
        ttnn.release_trace(mesh, tid)
    finally:
        ttnn.close_mesh_device(mesh)


def test_a_profiler_records_each_replayed_mesh_op_once(tmp_path):
    """The per-chip runner tells the hook of a mesh op itself; the replay told it too, so a capture recorded each
    replayed mesh op twice, one nested in the other."""
    import sqlite3

    import ttreport

    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 2))
    try:
        x = ttnn.from_torch(rnd(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                            mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))
        with ttreport.capture(tmp_path / "r"):
            tid = ttnn.begin_trace_capture(mesh)
            ttnn.relu(x)
            ttnn.end_trace_capture(mesh, tid)
            ttnn.execute_trace(mesh, tid)
        ttnn.release_trace(mesh, tid)
    finally:
        ttnn.close_mesh_device(mesh)
    con = sqlite3.connect(tmp_path / "r" / "db.sqlite")
    ops = con.execute("SELECT name, depth FROM operations ORDER BY operation_id").fetchall()
    con.close()
    assert ops == [("ttnn.relu", 0), ("ttnn.execute_trace", 0), ("ttnn.relu", 1)]
