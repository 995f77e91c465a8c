"""Views: reshape, squeeze, unsqueeze and view share their input's buffer exactly where TT-NN 0.81 does.

TT-NN's rule (reshape.cpp): a device tensor is viewed, not copied, when its last dim stays, the output
is as sharded and as L1 as the input, and it is ROW_MAJOR or keeps its second-last dim or has no tile
padding in it. The buffer then lives as long as any tensor holding it (device_sim/views.py).
"""

from __future__ import annotations

import gc
import sqlite3

import pytest
import torch

import device_sim as ttnn
import ttreport


def rnd(*shape, seed=0):
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)) * 4 - 2


def dev(t, device, layout=ttnn.TILE, **kw):
    return ttnn.from_torch(t, dtype=ttnn.bfloat16, layout=layout, device=device, **kw)


def live(device) -> set[int]:
    return {b.address for b in device.memory.live_buffers()}


@pytest.mark.parametrize(("layout", "shape", "to"), [
    (ttnn.TILE, (1, 64, 32), (2, 32, 32)),  # no tile padding in the second-last dim
    (ttnn.TILE, (2, 30, 64), (1, 2, 30, 64)),  # the last two dims unchanged
    (ttnn.ROW_MAJOR, (4, 6, 10), (2, 12, 10)),  # row-major: only the last dim must stay
])
def test_a_reshape_tt_nn_views_shares_the_buffer(device, layout, shape, to):
    x = dev(rnd(*shape), device, layout)
    before = live(device)
    y = ttnn.reshape(x, to)
    assert y is not x and y.tensor_id != x.tensor_id and y.buffer_address() == x.buffer_address()
    assert live(device) == before  # no new allocation
    assert torch.equal(y.value, x.value.reshape(to)) and (y.shape, y.layout, y.dtype) == (to, layout, x.dtype)


@pytest.mark.parametrize(("layout", "shape", "to"), [
    (ttnn.TILE, (2, 32, 64), (2, 64, 32)),  # the last dim changes
    (ttnn.TILE, (1, 2, 16, 32), (1, 32, 32)),  # padding in the second-last dim moves
    (ttnn.ROW_MAJOR, (4, 6, 10), (4, 60)),
])
def test_a_reshape_tt_nn_copies_gets_its_own_buffer(device, layout, shape, to):
    x = dev(rnd(*shape), device, layout)
    y = ttnn.reshape(x, to)
    assert y.buffer_address() != x.buffer_address() and torch.equal(y.value, x.value.reshape(to))


def test_a_reshape_to_another_memory_kind_copies(device):
    x = dev(rnd(1, 64, 32), device)  # DRAM
    assert ttnn.reshape(x, (2, 32, 32), memory_config=ttnn.L1).buffer_address() != x.buffer_address()
    assert ttnn.reshape(x, (64, 32)).buffer_address() == x.buffer_address()


def test_reshape_to_its_own_shape_returns_the_tensor_itself(device):
    x = dev(rnd(2, 32, 64), device)
    assert ttnn.reshape(x, (2, 32, 64)) is x


def test_squeeze_and_unsqueeze_follow_reshape(device):
    x = dev(rnd(32, 64), device)
    up = ttnn.unsqueeze(x, 0)
    assert up.shape == (1, 32, 64) and up.buffer_address() == x.buffer_address()
    down = ttnn.squeeze(up, 0)
    assert down.shape == (32, 64) and down.buffer_address() == x.buffer_address()
    last = ttnn.unsqueeze(x, -1)  # [32, 64, 1]: the last dim changes, a copy
    assert last.buffer_address() != x.buffer_address() and torch.equal(last.value, x.value.unsqueeze(-1))


def test_unsqueeze_to_4d_is_a_view_and_gives_a_rank_4_tensor_back_itself(device):
    x = dev(rnd(30, 64), device)
    four = ttnn.unsqueeze_to_4D(x)
    assert four.shape == (1, 1, 30, 64) and four.buffer_address() == x.buffer_address()
    assert ttnn.unsqueeze_to_4D(four) is four


def test_view_never_copies_and_refuses_what_would_scramble_the_device_data(device):
    x = dev(rnd(2, 32, 64), device)
    assert ttnn.view(x, (1, 64, 64)).buffer_address() == x.buffer_address()
    with pytest.raises(RuntimeError, match=r"ttnn.view: viewing Layout.TILE tensor \d+ of shape \[2, 32, 64\] as "
                                         r"\[2, 64, 32\] would scramble it.*use ttnn.reshape"):
        ttnn.view(x, (2, 64, 32))


def test_the_buffer_lives_while_any_view_of_it_does(device):
    x = dev(rnd(1, 64, 32), device)
    address = x.buffer_address()
    y = ttnn.reshape(x, (2, 32, 32))
    del x
    gc.collect()
    assert address in live(device) and torch.equal(y.value.reshape(64, 32), y.value.reshape(64, 32))
    del y
    gc.collect()
    assert address not in live(device)


def test_deallocate_frees_a_shared_buffer_for_every_holder_and_force_false_only_lets_go(device):
    x = dev(rnd(1, 64, 32), device)
    y, z = ttnn.reshape(x, (2, 32, 32)), ttnn.reshape(x, (64, 32))
    address = x.buffer_address()
    ttnn.deallocate(y, force=False)  # TT-NN: y drops its hold; x and z still hold the buffer
    assert not y.is_allocated() and x.is_allocated() and address in live(device)
    ttnn.deallocate(x)  # force=True: the buffer goes, for z too
    assert not x.is_allocated() and not z.is_allocated() and address not in live(device)
    with pytest.raises(RuntimeError):
        ttnn.to_torch(z)


def test_a_write_into_a_view_is_seen_through_its_input(device):
    x = dev(rnd(1, 64, 32), device)
    y = ttnn.reshape(x, (2, 32, 32))
    ttnn.add_(y, dev(torch.ones(2, 32, 32), device))
    assert torch.equal(x.value, y.value.reshape(1, 64, 32))
    ttnn.multiply(x, 2.0, output_tensor=x)
    assert torch.equal(y.value, x.value.reshape(2, 32, 32))


def test_the_report_shows_a_view_at_its_inputs_address_with_no_new_buffer(tmp_path, device):
    x = dev(rnd(1, 64, 32), device)
    with ttreport.capture(tmp_path / "r") as report:
        y = ttnn.reshape(x, (2, 32, 32))
        z = ttnn.reshape(x, (2, 64, 16))  # a copy
    con = sqlite3.connect(report.db_path)
    try:
        ops = con.execute("SELECT operation_id FROM operations ORDER BY operation_id").fetchall()
        (view_op,), (copy_op,) = ops
        row = lambda tid: con.execute("SELECT address, buffer_type FROM tensors WHERE tensor_id = ?",  # noqa: E731
                                      (tid,)).fetchone()
        buffers = {op: sorted(a for (a,) in con.execute("SELECT address FROM buffers WHERE operation_id = ?", (op,)))
                   for (op,) in ops}
        out = con.execute("SELECT tensor_id FROM output_tensors WHERE operation_id = ?", (view_op,)).fetchall()
        rows = row(y.tensor_id), row(x.tensor_id)
    finally:
        con.close()
    assert out == [(y.tensor_id,)]
    assert rows == ((x.buffer_address(), 0), (x.buffer_address(), 0))
    assert buffers[view_op] == [x.buffer_address()]  # still one live buffer: the view added none
    assert buffers[copy_op] == sorted([x.buffer_address(), z.buffer_address()])


def test_views_made_and_dropped_in_a_loop_leave_no_bookkeeping_behind(device):
    from device_sim import views

    x = dev(rnd(1, 64, 32), device)
    for _ in range(50):
        y = ttnn.reshape(x, (2, 32, 32))
        del y
    gc.collect()
    assert x.buffer.buffer_id not in views.SHARED and x.is_allocated()
