"""from_torch / to_torch with TT-NN 0.81's defaults and keywords."""

import numpy as np
import pytest
import torch

import device_sim as ttnn


@pytest.mark.parametrize("torch_dtype, device_dtype", [(torch.int64, ttnn.uint32), (torch.int32, ttnn.int32),
                                                       (torch.int16, ttnn.uint16), (torch.uint8, ttnn.uint8),
                                                       (torch.bool, ttnn.uint8), (torch.float16, ttnn.bfloat16),
                                                       (torch.bfloat16, ttnn.bfloat16), (torch.float32, ttnn.float32)])
def test_the_device_dtype_follows_the_torch_dtype_as_in_tt_nn(torch_dtype, device_dtype):
    assert ttnn.from_torch(torch.ones(2, 2, dtype=torch_dtype)).dtype == device_dtype


def test_a_block_float_without_a_layout_is_tiled_and_others_stay_row_major():
    assert ttnn.from_torch(torch.ones(2, 2), dtype=ttnn.bfloat8_b).layout == ttnn.TILE
    assert ttnn.from_torch(torch.ones(2, 2), dtype=ttnn.bfloat4_b).layout == ttnn.TILE
    assert ttnn.from_torch(torch.ones(2, 2), dtype=ttnn.bfloat16).layout == ttnn.ROW_MAJOR
    with pytest.raises(ValueError, match="exists only in TILE layout"):
        ttnn.from_torch(torch.ones(2, 2), dtype=ttnn.bfloat8_b, layout=ttnn.ROW_MAJOR)


def test_from_torch_takes_numpy_none_and_a_spec(device):
    assert ttnn.from_torch(None) is None
    assert torch.equal(ttnn.from_torch(np.arange(4, dtype=np.float32)).to_torch(), torch.arange(4.0))
    spec = ttnn.TensorSpec([2, 32], ttnn.bfloat16, ttnn.TILE, ttnn.L1)
    t = ttnn.from_torch(torch.ones(2, 32), spec=spec, device=device)
    assert t.spec == spec
    with pytest.raises(TypeError, match="give either spec= or dtype=, not both"):
        ttnn.from_torch(torch.ones(2, 32), ttnn.bfloat16, spec=spec)
    with pytest.raises(ValueError, match=r"spec shape \[2, 32\] differs from the tensor's \[4, 32\]"):
        ttnn.from_torch(torch.ones(4, 32), spec=spec)


def test_from_torch_accepts_tt_nns_other_keywords(device):
    t = ttnn.from_torch(torch.ones(2, 40), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, pad_value=0.0,
                        cq_id=0, mesh_mapper=None, tile=ttnn.Tile((16, 32)))
    assert t.padded_shape == (16, 64)


def test_to_torch_squeezes_to_a_rank_and_casts(device):
    t = ttnn.from_torch(torch.arange(6.0).reshape(1, 1, 2, 3), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    got = ttnn.to_torch(t, torch.float32, torch_rank=2, device=device, mesh_composer=None, cq_id=0)
    assert got.dtype == torch.float32 and torch.equal(got, torch.arange(6.0).reshape(2, 3))
    with pytest.raises(ValueError, match=r"cannot squeeze shape \[2, 3\] to rank 1: the leading dim is 2"):
        ttnn.to_torch(t, torch_rank=1)


def test_col_tilize_packs_the_transpose_so_exponents_run_down_columns():
    x = torch.ones(32, 64)
    x[:, 0] = 1000.0  # one large column: sharing exponents along rows would flush the ones in those rows
    t = ttnn.from_torch(x, dtype=ttnn.bfloat8_b, col_tilize=True)
    assert t.shape == (64, 32) and t.layout == ttnn.TILE
    assert torch.equal(t.to_torch().float(), x.T)  # each packed row is one original column: nothing lost
    assert not torch.equal(ttnn.from_torch(x, dtype=ttnn.bfloat8_b).to_torch().float(), x)
    with pytest.raises(ValueError, match="col_tilize=True needs dtype bfloat8_b or bfloat4_b"):
        ttnn.from_torch(x, dtype=ttnn.bfloat16, col_tilize=True)
