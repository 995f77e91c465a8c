"""Shape and data-movement ops with TT-NN's real signatures: values against torch, output specs, report rows."""

from __future__ import annotations

import inspect
import sqlite3

import pytest
import torch

import device_sim as ttnn
import ttreport


def rnd(*shape, seed=0):
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)) * 4 - 2


def dev(t, device, dtype=ttnn.bfloat16, layout=ttnn.TILE, **kw):
    return ttnn.from_torch(t, dtype=dtype, layout=layout, device=device, **kw)


def held(t: torch.Tensor) -> torch.Tensor:
    """What a bfloat16 device tensor holds for `t`."""
    return t.bfloat16()


# -- slice, reshape, transpose: every call shape the models use -----------------------------------

def test_slice_takes_starts_and_ends_as_device_tensors_with_slice_dim_and_num_devices(device):
    # tt-metal's models call ttnn.slice(input_tensor=, starts=, ends=, slice_dim=, num_devices=) with 1-D
    # uint32 device tensors: a TILE input keeps 1/num_devices of dim slice_dim from each start (slice.cpp).
    v = rnd(1, 1, 64, 128)
    t = dev(v, device)
    idx = lambda xs: ttnn.from_torch(torch.tensor(xs), dtype=ttnn.uint32, device=device)  # noqa: E731
    out = ttnn.slice(input_tensor=t, starts=idx([0, 0, 32, 0]), ends=idx([1, 1, 64, 128]), slice_dim=2,
                     num_devices=2)
    assert torch.equal(out.value, held(v)[:, :, 32:64, :])
    assert (out.shape, out.dtype, out.layout, out.memory_config()) == ((1, 1, 32, 128), t.dtype, ttnn.TILE,
                                                                       t.memory_config())
    # A ROW_MAJOR input is read back and sliced from starts to ends, as TT-NN's host path does.
    rm = dev(v, device, layout=ttnn.ROW_MAJOR)
    assert torch.equal(ttnn.slice(rm, idx([0, 0, 8, 4]), idx([1, 1, 24, 100])).value, held(v)[:, :, 8:24, 4:100])
    with pytest.raises(ValueError, match="slice_dim and num_devices must be provided"):
        ttnn.slice(t, idx([0, 0, 0, 0]), idx([1, 1, 64, 128]))
    with pytest.raises(ValueError, match="must be evenly divisible by num_devices \\(3\\)"):
        ttnn.slice(t, idx([0, 0, 0, 0]), idx([1, 1, 64, 128]), slice_dim=2, num_devices=3)
    with pytest.raises(TypeError, match="slice_dim= and num_devices= belong to the form"):
        ttnn.slice(t, [0, 0, 0, 0], [1, 1, 64, 128], slice_dim=2, num_devices=2)


def test_slice_takes_starts_ends_and_steps_positionally_or_by_any_of_tt_nns_keywords(device):
    v = rnd(2, 32, 64)
    t = dev(v, device)
    want = held(v)[0:2, 1:31:2, 8:64:4]
    calls = [
        ttnn.slice(t, [0, 1, 8], [2, 31, 64], [1, 2, 4]),
        ttnn.slice(t, starts=[0, 1, 8], ends=[2, 31, 64], steps=[1, 2, 4]),
        ttnn.slice(t, slice_start=[0, 1, 8], slice_end=[2, 31, 64], slice_step=[1, 2, 4], memory_config=ttnn.L1),
    ]
    for out in calls:
        assert torch.equal(out.value, want)
        assert (out.shape, out.dtype, out.layout) == ((2, 15, 14), ttnn.bfloat16, ttnn.TILE)
    assert calls[2].memory_config() == ttnn.L1
    assert torch.equal(ttnn.slice(t, [0, 0, 0], [1, -1, 64]).value, held(v)[0:1, 0:31])


def test_slice_keeps_the_rank_and_names_a_bound_that_does_not_fit(device):
    t = dev(rnd(2, 32, 64), device)
    assert ttnn.slice(t, (1, 0, 0), (2, 32, 64)).shape == (1, 32, 64)
    with pytest.raises(ValueError, match=r"dim 2 of shape \[2, 32, 64\] cannot be sliced from 0 to 65"):
        ttnn.slice(t, [0, 0, 0], [2, 32, 65])
    with pytest.raises(ValueError, match="one entry per dim"):
        ttnn.slice(t, [0, 0], [2, 32])
    with pytest.raises(TypeError, match="ttnn.slice takes"):
        ttnn.slice(t, [0, 0, 0], slice_end=[2, 32, 64], ends=[2, 32, 64])


def test_indexing_a_tensor_slices_then_squeezes_the_int_indexed_dims(device):
    v = rnd(2, 32, 64)
    t = dev(v, device)
    assert torch.equal(t[1].value, held(v)[1])
    assert torch.equal(t[:, 3:19].value, held(v)[:, 3:19])
    assert torch.equal(t[..., -5:].value, held(v)[..., -5:])
    assert torch.equal(t[0, :, 7].value, held(v)[0, :, 7])
    with pytest.raises(IndexError, match="index 2 is out of range for dim 0 of size 2"):
        t[2]


def test_reshape_takes_a_logical_and_a_padded_shape(device):
    v = rnd(2, 32, 64)
    t = dev(v, device)
    out = ttnn.reshape(t, ttnn.Shape([1, 64, 64]), ttnn.Shape([1, 64, 64]))
    assert torch.equal(out.value, held(v).reshape(1, 64, 64)) and out.padded_shape == (1, 64, 64)
    assert ttnn.reshape(t, (4, -1)).shape == (4, 1024)
    with pytest.raises(ValueError, match=r"padded_shape \[1, 32, 64\] must have the rank"):
        ttnn.reshape(t, (1, 64, 64), (1, 32, 64))


def test_transpose_names_its_dims_dim1_and_dim2(device):
    v = rnd(2, 32, 64)
    out = ttnn.transpose(dev(v, device), dim1=0, dim2=-1)
    assert torch.equal(out.value, held(v).transpose(0, -1))
    assert list(inspect.signature(ttnn.transpose).parameters)[:3] == ["input_tensor", "dim1", "dim2"]


def test_pad_takes_an_output_shape_and_a_start_as_its_second_form(device):
    t = dev(torch.ones(2, 3), device, layout=ttnn.ROW_MAJOR)
    out = ttnn.pad(t, [3, 5], [1, 2], -1.0)
    want = torch.full((3, 5), -1.0)
    want[1:3, 2:5] = 1
    assert torch.equal(out.value.float(), want)
    with pytest.raises(ValueError, match="with the input fitting inside the output"):
        ttnn.pad(t, [3, 5], [2, 2], 0.0)


def test_repeat_names_its_argument_repeat_dims(device):
    v = rnd(1, 32, 32)
    out = ttnn.repeat(dev(v, device), repeat_dims=(2, 1, 3))
    assert torch.equal(out.value, held(v).repeat(2, 1, 3))


# -- rank changes ---------------------------------------------------------------------------------

def test_squeeze_and_unsqueeze_match_torch(device):
    v = rnd(1, 32, 1, 64)
    t = dev(v, device)
    assert ttnn.squeeze(t).shape == (32, 64)
    assert ttnn.squeeze(t, 0).shape == (32, 1, 64)
    assert ttnn.squeeze(t, [0, 2]).shape == (32, 64)
    assert ttnn.squeeze(t, 1).shape == (1, 32, 1, 64)  # a dim of another size stays, as in TT-NN and torch
    assert torch.equal(ttnn.unsqueeze(t, -1).value, held(v).unsqueeze(-1))
    with pytest.raises(RuntimeError, match=r"expected to be in range of \[-5,4\], but got 5"):
        ttnn.unsqueeze(t, 5)  # unsqueeze.cpp's TT_FATAL


def test_unsqueeze_to_4D_prepends_ones_and_refuses_rank_5(device):
    out = ttnn.unsqueeze_to_4D(dev(rnd(32, 64), device))
    assert (out.shape, out.layout) == ((1, 1, 32, 64), ttnn.TILE)
    with pytest.raises(ValueError, match="rank 5 > 4"):
        ttnn.unsqueeze_to_4D(dev(rnd(1, 1, 1, 2, 32), device))


# -- joining, repeating, broadcasting -------------------------------------------------------------

def test_stack_expand_repeat_interleave_and_chunk_match_torch(device):
    a, b = rnd(32, 64), rnd(32, 64, seed=1)
    ta, tb = dev(a, device), dev(b, device)
    assert torch.equal(ttnn.stack([ta, tb], dim=1).value, torch.stack([held(a), held(b)], 1))
    with pytest.raises(ValueError, match="same shape"):
        ttnn.stack([ta, dev(rnd(32, 32), device)], 0)
    e = dev(rnd(1, 64), device)
    assert torch.equal(ttnn.expand(e, [32, -1]).value, e.value.expand(32, 64))
    with pytest.raises(ValueError, match=r"cannot expand shape \[1, 64\] to \[32, 32\]"):
        ttnn.expand(e, [32, 32])
    assert torch.equal(ttnn.repeat_interleave(ta, 2, dim=0).value, held(a).repeat_interleave(2, 0))
    pieces = ttnn.chunk(ta, 3, dim=1)
    assert [p.shape[1] for p in pieces] == [22, 22, 20]
    assert torch.equal(torch.cat([p.value for p in pieces], 1), held(a))


# -- layout changes ------------------------------------------------------------------------------

def test_tilize_and_untilize_change_only_the_layout_and_its_padding(device):
    v = rnd(3, 40)
    rm = dev(v, device, layout=ttnn.ROW_MAJOR)
    tiled = ttnn.tilize(rm, dtype=ttnn.bfloat8_b)
    assert (tiled.layout, tiled.dtype, tiled.padded_shape) == (ttnn.TILE, ttnn.bfloat8_b, (32, 64))
    back = ttnn.untilize(ttnn.tilize(rm))
    assert (back.layout, back.padded_shape) == (ttnn.ROW_MAJOR, (3, 40)) and torch.equal(back.value, held(v))
    assert back.buffer.size < ttnn.tilize(rm).buffer.size


def test_tilize_with_padding_fills_the_tile_padding_and_untilize_with_unpadding_takes_inclusive_ends(device):
    # TT-NN's tilize_with_val_padding keeps the input's logical shape (compute_output_specs): the pad value
    # lives in the tile padding, which to_torch_with_padded_shape shows
    v = rnd(3, 40)
    rm = dev(v, device, layout=ttnn.ROW_MAJOR)
    padded = ttnn.tilize_with_val_padding(rm, [32, 64], 7.0)
    assert (padded.shape, padded.padded_shape, padded.layout) == ((3, 40), (32, 64), ttnn.TILE)
    full = padded.to_torch_with_padded_shape()
    assert torch.equal(full[:3, :40], held(v)) and bool((full[3:] == 7).all()) and bool((full[:, 40:] == 7).all())
    zero = ttnn.tilize_with_zero_padding(rm)
    assert zero.shape == (3, 40) and float(zero.to_torch_with_padded_shape()[3:].abs().sum()) == 0.0
    back = ttnn.untilize_with_unpadding(padded, output_tensor_end=[2, 39])
    assert (back.shape, back.layout) == ((3, 40), ttnn.ROW_MAJOR) and torch.equal(back.value, held(v))
    with pytest.raises(ValueError, match="no dim smaller"):
        ttnn.tilize_with_val_padding(rm, [2, 64], 0.0)


# -- sorting and indexing ------------------------------------------------------------------------

def test_sort_gives_values_and_uint16_indices_like_torch(device):
    v = rnd(2, 32, 64)
    values, indices = ttnn.sort(dev(v, device), dim=-1, descending=True)
    ref = torch.sort(held(v), dim=-1, descending=True, stable=True)
    assert torch.equal(values.value, ref.values)
    assert indices.dtype == ttnn.uint16 and torch.equal(indices.value.long(), ref.indices)


def test_gather_picks_along_a_dim_at_uint32_indices(device):
    v = rnd(4, 32)
    idx = torch.randint(0, 32, (4, 8), generator=torch.Generator().manual_seed(0))
    out = ttnn.gather(dev(v, device), -1, index=dev(idx, device, dtype=ttnn.uint32))
    assert out.shape == (4, 8) and torch.equal(out.value, held(v).gather(-1, idx))
    with pytest.raises(TypeError, match="index must hold integers"):
        ttnn.gather(dev(v, device), 1, dev(idx.float(), device))


# -- reallocate ----------------------------------------------------------------------------------

def test_reallocate_moves_a_dram_tensor_down_into_the_space_freed_below_it(device):
    first = dev(rnd(64, 64), device)
    second = dev(rnd(64, 64, seed=1), device)
    low = first.buffer_address()
    assert second.buffer_address() > low
    kept = second.value.clone()
    first.deallocate()
    moved = ttnn.reallocate(second)
    assert moved.buffer_address() == low and torch.equal(moved.value, kept)
    assert moved.tensor_id != second.tensor_id and not second.is_allocated()


def test_reallocate_moves_an_l1_tensor_up_into_the_space_freed_above_it(device):
    # L1 is allocated top-down, so TT-NN's move lands L1 tensors at the highest free address.
    first = dev(rnd(64, 64), device, memory_config=ttnn.L1)
    second = dev(rnd(64, 64, seed=1), device, memory_config=ttnn.L1)
    high = first.buffer_address()
    assert second.buffer_address() < high
    first.deallocate()
    moved = ttnn.reallocate(second)
    assert moved.buffer_address() == high and moved.memory_config() == ttnn.L1


def test_reallocate_is_one_recorded_op_that_frees_its_input_and_makes_one_buffer(tmp_path, device):
    a = dev(rnd(64, 64), device)
    b = dev(rnd(64, 64, seed=1), device)
    with ttreport.capture(tmp_path / "r") as report:
        a.deallocate()
        b = ttnn.reallocate(b)
    con = sqlite3.connect(report.db_path)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM operations ORDER BY operation_id")]
        (op_id,) = con.execute("SELECT operation_id FROM operations WHERE name = 'ttnn.reallocate'").fetchone()
        (out_id,) = con.execute("SELECT tensor_id FROM output_tensors WHERE operation_id = ?", (op_id,)).fetchone()
        (address,) = con.execute("SELECT address FROM tensors WHERE tensor_id = ?", (out_id,)).fetchone()
        live = con.execute("SELECT address FROM buffers WHERE operation_id = ?", (op_id,)).fetchall()
    finally:
        con.close()
    assert names == ["ttnn.deallocate", "ttnn.reallocate"]
    assert out_id == b.tensor_id and address == b.buffer_address()
    assert live == [(b.buffer_address(),)]  # the input's buffer is gone, no temporary was made


# -- writing and picking values ------------------------------------------------------------------

def test_copy_writes_input_a_into_input_b_in_b_dtype(device):
    a = dev(rnd(32, 64), device, dtype=ttnn.float32)
    b = dev(torch.zeros(32, 64), device)
    tensor_id, address = b.tensor_id, b.buffer_address()
    assert ttnn.copy(a, b) is b and (b.tensor_id, b.buffer_address(), b.dtype) == (tensor_id, address, ttnn.bfloat16)
    assert torch.equal(b.value, a.value.bfloat16())
    with pytest.raises(ValueError, match=r"input_a has shape \[32, 64\] but input_b has \[32, 32\]"):
        ttnn.copy(a, dev(torch.zeros(32, 32), device))


def test_fill_makes_a_tensor_like_its_input_holding_one_value(device):
    t = dev(rnd(2, 32, 64), device, memory_config=ttnn.L1)
    out = ttnn.fill(t, 1.5)
    assert (out.shape, out.dtype, out.layout, out.memory_config()) == (t.shape, t.dtype, t.layout, ttnn.L1)
    assert bool((out.value == 1.5).all()) and out.tensor_id != t.tensor_id


def test_scatter_writes_src_at_index_along_a_dim(device):
    v, src = rnd(4, 16), rnd(4, 3, seed=1)
    idx = torch.argsort(rnd(4, 16, seed=2), -1)[:, :3]
    out = ttnn.scatter(dev(v, device), 1, dev(idx, device, dtype=ttnn.uint32), dev(src, device))
    assert torch.equal(out.value, held(v).scatter(1, idx, held(src)))
    summed = ttnn.scatter(dev(v, device), 1, dev(idx, device, dtype=ttnn.uint32), dev(src, device), reduce="add")
    torch.testing.assert_close(summed.value.float(), held(v).float().scatter_add(1, idx, held(src).float()).bfloat16()
                               .float())


def test_narrow_and_reshape_on_device_match_torch(device):
    v = rnd(2, 32, 64)
    t = dev(v, device)
    assert torch.equal(ttnn.narrow(t, -1, 8, 16).value, held(v).narrow(-1, 8, 16))
    with pytest.raises(ValueError, match=r"\[60, 70\) does not fit dim 2"):
        ttnn.narrow(t, 2, 60, 10)
    assert torch.equal(ttnn.reshape_on_device(t, 1, 2, 32, 64).value, held(v).reshape(1, 2, 32, 64))


def test_to_dtype_converts_host_tensors_and_sends_device_ones_to_typecast(device):
    host = ttnn.from_torch(torch.linspace(-1, 1, 64).reshape(2, 32))
    out = ttnn.to_dtype(host, ttnn.bfloat8_b)
    assert (out.dtype, out.layout, out.storage_type()) == (ttnn.bfloat8_b, ttnn.TILE, ttnn.StorageType.HOST)
    assert ttnn.to_dtype(host, ttnn.float32).value.dtype == torch.float32
    with pytest.raises(ValueError, match="use ttnn.typecast"):
        ttnn.to_dtype(dev(rnd(32, 32), device), ttnn.float32)


def test_pad_takes_its_second_form_with_the_value_by_keyword(device):
    t = dev(torch.ones(2, 3), device, layout=ttnn.ROW_MAJOR)
    out = ttnn.pad(t, [3, 4], [1, 0], value=5.0)
    assert out.value.tolist() == [[5] * 4, [1, 1, 1, 5], [1, 1, 1, 5]]
    assert ttnn.pad(t, [(0, 1)], value=2.0).value.tolist() == [[1, 1, 1, 2], [1, 1, 1, 2]]
    with pytest.raises(TypeError, match="ttnn.pad got value both by position and by keyword"):
        ttnn.pad(t, [(0, 1)], 1.0, value=2.0)


def test_concat_groups_interleaves_each_inputs_parts(device):
    a = dev(torch.arange(4.0).reshape(1, 4), device, layout=ttnn.ROW_MAJOR)
    b = dev(torch.arange(10.0, 14.0).reshape(1, 4), device, layout=ttnn.ROW_MAJOR)
    assert ttnn.concat([a, b], dim=1, groups=2).value.tolist() == [[0, 1, 10, 11, 2, 3, 12, 13]]
    assert ttnn.concat([a, b], 1).value.tolist() == [[0, 1, 2, 3, 10, 11, 12, 13]]
    with pytest.raises(ValueError, match="must divide into groups=3"):
        ttnn.concat([a, b], dim=1, groups=3)


def test_the_like_ops_name_their_template_tensor_as_tt_nn_does(device):
    # creation_nanobind: ones_like(tensor, dtype, layout, device, memory_config), as models call it by keyword.
    t = dev(rnd(2, 30, 40), device, layout=ttnn.ROW_MAJOR)
    out = ttnn.ones_like(tensor=t, dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device, memory_config=ttnn.L1)
    assert torch.equal(out.value.float(), torch.ones(2, 30, 40))
    assert (out.dtype, out.layout, out.memory_config(), out.padded_shape) == (ttnn.bfloat8_b, ttnn.TILE, ttnn.L1,
                                                                             (2, 32, 64))
    assert torch.equal(ttnn.full_like(tensor=t, fill_value=-1.5).value.float(), torch.full((2, 30, 40), -1.5))
    for op in (ttnn.zeros_like, ttnn.ones_like, ttnn.empty_like, ttnn.full_like):
        assert next(iter(inspect.signature(op).parameters)) == "tensor"
