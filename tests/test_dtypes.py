"""Device dtype numerics: block floats, integer clamping, and which layouts a dtype may use."""

import pytest
import torch

import device_sim as ttnn
from device_sim import dtypes

BLOCK_FLOATS = [(ttnn.bfloat8_b, 7), (ttnn.bfloat4_b, 3)]


def on_device(x, dtype, layout=ttnn.TILE):
    """The values a tensor of `dtype` holds, as float32."""
    return ttnn.from_torch(x, dtype=dtype, layout=layout).to_torch().float()


@pytest.mark.parametrize("dtype, mantissa_bits", BLOCK_FLOATS)
def test_block_float_shares_one_exponent_per_16_values_along_the_last_dim(dtype, mantissa_bits):
    x = torch.randn(4, 64) * torch.logspace(-3, 3, 4).unsqueeze(1)  # each row its own magnitude
    q = on_device(x, dtype)
    blocks, q_blocks = x.reshape(4, 4, 16), q.reshape(4, 4, 16)
    for b, qb in zip(blocks.reshape(-1, 16), q_blocks.reshape(-1, 16)):
        exponent = torch.frexp(b.abs().max()).exponent
        step = 2.0 ** (exponent - mantissa_bits)
        units = qb / step
        assert torch.equal(units, units.round()), "every value is a whole number of the block's step"
        assert units.abs().max() <= 2**mantissa_bits - 1


@pytest.mark.parametrize("dtype, mantissa_bits", BLOCK_FLOATS)
def test_block_float_blocks_are_independent(dtype, mantissa_bits):
    # A large value flushes the small ones of its own block, not of the next block along the row.
    x = torch.full((32, 32), 0.01)
    x[:, 0] = 1000.0
    q = on_device(x, dtype)
    assert torch.all(q[:, 1:16] == 0)
    assert torch.allclose(q[:, 16:], x[:, 16:], rtol=2.0**-mantissa_bits)


@pytest.mark.parametrize("dtype", [ttnn.bfloat8_b, ttnn.bfloat4_b, ttnn.bfloat16])
def test_quantizing_twice_changes_nothing(dtype):
    x = torch.randn(64, 96)
    once = on_device(x, dtype)
    assert torch.equal(on_device(once, dtype), once)
    assert torch.equal(dtypes.to_device_values(once, dtype).float(), once)


@pytest.mark.parametrize("dtype, mantissa_bits", BLOCK_FLOATS)
def test_block_float_values_are_exact_in_bfloat16(dtype, mantissa_bits):
    x = torch.randn(32, 64) * 37
    q = dtypes.block_float(x, mantissa_bits)  # float32
    assert torch.equal(q.bfloat16().float(), q)
    assert ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE).to_torch().dtype == torch.bfloat16


def test_error_grows_as_the_dtype_narrows():
    x = torch.randn(64, 64)
    error = {d: (on_device(x, d) - x).abs().mean().item()
             for d in (ttnn.float32, ttnn.bfloat16, ttnn.bfloat8_b, ttnn.bfloat4_b)}
    assert error[ttnn.float32] == 0
    assert 0 < error[ttnn.bfloat16] < error[ttnn.bfloat8_b] < error[ttnn.bfloat4_b]


def test_block_float_keeps_nonfinite_values_out_of_the_shared_exponent():
    x = torch.ones(32, 32)
    x[0, 0], x[0, 1] = float("inf"), float("nan")
    q = on_device(x, ttnn.bfloat8_b)
    assert q[0, 0] == float("inf") and torch.isnan(q[0, 1])
    assert torch.all(q[0, 2:] == 1)


@pytest.mark.parametrize("dtype, values, expected", [
    (ttnn.uint8, [-5.0, 3.7, 300.0, float("nan")], [0, 3, 255, 0]),
    (ttnn.uint16, [-1.0, 70000.0, 65535.0], [0, 65535, 65535]),
    (ttnn.int32, [-3e10, 3e10, -7.9], [-(2**31), 2**31 - 1, -7]),
    (ttnn.uint32, [-1.0, 5e9, 4294967295.0], [0, 2**32 - 1, 2**32 - 1]),
])
def test_integer_dtypes_truncate_and_clamp_to_their_range(dtype, values, expected):
    t = ttnn.from_torch(torch.tensor(values, dtype=torch.float64), dtype=dtype)
    assert t.to_torch().tolist() == expected


def test_integer_input_keeps_its_low_bits_as_tt_nn_does():
    # TT-NN casts with torch's wrapping .to(uint8) (pytensor.cpp); only float input is clamped
    t = ttnn.from_torch(torch.tensor([-1, 256, 7]), dtype=ttnn.uint8)
    assert t.to_torch().tolist() == [255, 0, 7]


@pytest.mark.parametrize("dtype", [ttnn.bfloat8_b, ttnn.bfloat4_b])
def test_block_float_in_row_major_is_a_clear_error(dtype, device):
    with pytest.raises(ValueError, match=r"exists only in TILE layout.*layout=ttnn.TILE"):
        ttnn.from_torch(torch.randn(32, 32), dtype=dtype, layout=ttnn.ROW_MAJOR, device=device)
    with pytest.raises(ValueError, match="exists only in TILE layout"):
        ttnn.Tensor(torch.randn(32, 32), dtype=dtype, layout=ttnn.ROW_MAJOR)  # without a layout, TILE (as TT-NN)
    tiled = ttnn.from_torch(torch.randn(32, 32), dtype=dtype, layout=ttnn.TILE, device=device)
    if dtype == ttnn.bfloat8_b:  # untilize_device_operation.cpp gives BFLOAT8_B's row-major form as BFLOAT16
        assert ttnn.to_layout(tiled, ttnn.ROW_MAJOR).dtype == ttnn.bfloat16
        return
    with pytest.raises(ValueError, match="exists only in TILE layout"):
        ttnn.to_layout(tiled, ttnn.ROW_MAJOR)


def test_torch_dtypes_map_to_device_dtypes():
    assert ttnn.from_torch(torch.zeros(2, dtype=torch.bfloat16)).dtype == ttnn.bfloat16
    assert ttnn.from_torch(torch.zeros(2)).dtype == ttnn.float32
    assert ttnn.from_torch(torch.zeros(2, dtype=torch.int64)).dtype == ttnn.uint32  # as TT-NN infers it
    with pytest.raises(TypeError, match="dtype=ttnn.bfloat16"):
        ttnn.from_torch(torch.zeros(2, dtype=torch.complex64))
