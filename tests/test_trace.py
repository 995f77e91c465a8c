"""Traces and events: capture once, replay over the same tensors, and what a report shows of a replay."""

import sqlite3

import pytest
import torch

import device_sim as ttnn
import ttreport


def host(t: torch.Tensor) -> ttnn.Tensor:
    return ttnn.from_torch(t, dtype=ttnn.bfloat16, layout=ttnn.TILE)


def rnd(*shape, seed=0) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def model(x, w):
    """A small traced forward pass with an intermediate it frees, as tt-metal's models write them."""
    h = ttnn.linear(x, w)
    y = ttnn.gelu(h)
    ttnn.deallocate(h)
    return ttnn.add(y, x)


def expected(x: torch.Tensor, w: ttnn.Tensor) -> torch.Tensor:
    xb = x.bfloat16().float()
    h = (xb @ w.value.float()).bfloat16().float()
    return (torch.nn.functional.gelu(h).bfloat16().float() + xb).bfloat16()


@pytest.fixture
def traced(device):
    """(input tensor, weight, output tensor, trace id) of a captured `model`."""
    w = ttnn.from_torch(rnd(64, 64, seed=9), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    x = ttnn.from_torch(rnd(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        y = model(x, w)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    yield x, w, y, tid
    if int(tid) in ttnn.trace._traces:
        ttnn.release_trace(device, tid)


def test_a_replay_writes_the_new_result_into_the_captured_output(device, traced):
    x, w, y, tid = traced
    torch.testing.assert_close(y.to_torch(), expected(rnd(32, 64), w))
    out_id, out_address = y.tensor_id, y.buffer_address()
    for seed in (1, 2):
        ttnn.copy_host_to_device_tensor(host(rnd(32, 64, seed=seed)), x)
        ttnn.execute_trace(device, tid, cq_id=0, blocking=False)
        torch.testing.assert_close(y.to_torch(), expected(rnd(32, 64, seed=seed), w))
    assert (y.tensor_id, y.buffer_address()) == (out_id, out_address)


def test_a_replay_frees_every_scratch_tensor_it_allocates(device, traced):
    x, _, y, tid = traced
    events = []
    memory = x._device.memory
    memory.listener, previous = (lambda kind, buf: events.append(kind)), memory.listener
    try:
        ttnn.execute_trace(device, tid)
    finally:
        memory.listener = previous
    # Only the two intermediates the traced code dropped come and go (h by its replayed deallocate, gelu's output
    # after its last use); the output the model holds is written in place.
    assert events.count("alloc") == events.count("free") == 2


def test_moving_data_to_or_from_the_host_inside_a_capture_is_refused(device):
    x = ttnn.from_torch(rnd(32, 32), layout=ttnn.TILE, device=device)
    tid = ttnn.begin_trace_capture(device)
    try:
        with pytest.raises(RuntimeError, match="ttnn.to_torch moves data between the host and the device during "
                                               "trace capture"):
            ttnn.to_torch(x)
        with pytest.raises(RuntimeError, match="ttnn.from_torch moves data"):
            ttnn.from_torch(rnd(32, 32), layout=ttnn.TILE, device=device)
    finally:
        ttnn.end_trace_capture(device, tid)
    ttnn.release_trace(device, tid)


def test_trace_ids_are_checked_as_tt_nn_checks_them(device, traced):
    _, _, _, tid = traced
    other = ttnn.begin_trace_capture(device)
    with pytest.raises(RuntimeError, match="already in progress"):
        ttnn.begin_trace_capture(device)
    with pytest.raises(RuntimeError, match="is still being captured"):
        ttnn.execute_trace(device, other)
    ttnn.end_trace_capture(device, other)
    ttnn.release_trace(device, other)
    with pytest.raises(RuntimeError, match=f"trace {int(other)} was not captured on .* or was released"):
        ttnn.execute_trace(device, other)
    with pytest.raises(RuntimeError, match="no trace capture of trace"):
        ttnn.end_trace_capture(device, tid)


def test_a_report_shows_each_replayed_op_under_its_execute_trace(tmp_path, device):
    w = ttnn.from_torch(rnd(64, 64, seed=9), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    x = ttnn.from_torch(rnd(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with ttreport.capture(tmp_path / "r") as report:
        tid = ttnn.begin_trace_capture(device)
        y = model(x, w)
        ttnn.end_trace_capture(device, tid)
        ttnn.execute_trace(device, tid, blocking=True)
        ttnn.release_trace(device, tid)
    con = sqlite3.connect(report.db_path)
    try:
        ops = con.execute("SELECT operation_id, name, parent_operation_id FROM operations "
                          "ORDER BY operation_id").fetchall()
        (replay, _, _), = [o for o in ops if o[1] == "ttnn.execute_trace"]
        args = dict(con.execute("SELECT name, value FROM operation_arguments WHERE operation_id = ?", (replay,)))
        children = [(name, oid) for oid, name, parent in ops if parent == replay]
        outputs = dict(con.execute(f"SELECT operation_id, tensor_id FROM output_tensors WHERE operation_id IN "
                                   f"({','.join(str(o) for _, o in children)})"))
    finally:
        con.close()
    assert [name for name, _ in children] == ["ttnn.linear", "ttnn.gelu", "ttnn.deallocate", "ttnn.add"]
    assert args["trace_id"] == str(int(tid))
    assert outputs[children[-1][1]] == y.tensor_id  # the replay wrote into the tensor the capture made


def test_events_are_complete_when_recorded(device):
    event = ttnn.record_event(device, 0)
    assert isinstance(event, ttnn.MeshEvent) and event.cq_id == 0
    ttnn.wait_for_event(1, event)
    ttnn.event_synchronize(event)
    ttnn.synchronize_device(device)
    with pytest.raises(TypeError, match="takes the event ttnn.record_event returned"):
        ttnn.wait_for_event(0, 7)
