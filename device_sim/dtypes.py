"""Device dtype numerics: what value the device holds for a given float, and how many bytes.

Block floats (bfloat8_b, bfloat4_b) share one 8-bit exponent per 16 values along a tile
row (a row of one 16x16 face); each value keeps a sign and a 7-bit (bfp8) or 3-bit (bfp4)
mantissa, the implicit one included, rounded to nearest even. Every such value is exactly
representable in bfloat16, so that is the torch dtype they are held and saved in.
"""

from __future__ import annotations

import torch

from device_sim.types import DataType, Layout

TILE_HEIGHT = TILE_WIDTH = 32
TILE_HW = TILE_HEIGHT * TILE_WIDTH
BLOCK = 16  # values sharing one exponent in a block float

# The torch dtype a device dtype's values are held in on the host.
TORCH_DTYPE = {
    DataType.BFLOAT16: torch.bfloat16,
    DataType.FLOAT32: torch.float32,
    DataType.BFLOAT8_B: torch.bfloat16,
    DataType.BFLOAT4_B: torch.bfloat16,
    DataType.UINT8: torch.uint8,
    DataType.UINT16: torch.int32,  # torch's uint16 lacks most kernels
    DataType.INT32: torch.int32,
    DataType.UINT32: torch.int64,
}

FROM_TORCH = {
    torch.bfloat16: DataType.BFLOAT16,
    torch.float32: DataType.FLOAT32,
    torch.float16: DataType.BFLOAT16,
    torch.float64: DataType.FLOAT32,
    torch.uint8: DataType.UINT8,
    torch.int16: DataType.INT32,
    torch.int32: DataType.INT32,
    torch.int64: DataType.INT32,
    torch.bool: DataType.UINT8,
    # tt-metal's tests/ttnn/utils_for_testing.py pairs ttnn.uint16 / uint32 with torch's own uint16 / uint32
    torch.uint16: DataType.UINT16,
    torch.uint32: DataType.UINT32,
}

INT_RANGE = {
    DataType.UINT8: (0, 2**8 - 1),
    DataType.UINT16: (0, 2**16 - 1),
    DataType.INT32: (-(2**31), 2**31 - 1),
    DataType.UINT32: (0, 2**32 - 1),
}

MANTISSA_BITS = {DataType.BFLOAT8_B: 7, DataType.BFLOAT4_B: 3}

ELEMENT_SIZE = {  # bytes per element of a row-major page
    DataType.BFLOAT16: 2,
    DataType.FLOAT32: 4,
    DataType.UINT8: 1,
    DataType.UINT16: 2,
    DataType.INT32: 4,
    DataType.UINT32: 4,
}


def tile_size(dtype: DataType) -> int:
    """Bytes of one 32x32 tile; block floats add one exponent byte per 16 values."""
    if dtype == DataType.BFLOAT8_B:
        return TILE_HW + TILE_HW // BLOCK
    if dtype == DataType.BFLOAT4_B:
        return TILE_HW // 2 + TILE_HW // BLOCK
    return TILE_HW * ELEMENT_SIZE[dtype]


def element_size(dtype: DataType) -> int:
    """ttnn.element_size: bytes of one element; a block float has none (its exponent is shared by 16 values), a
    RuntimeError as TT-NN's TT_FATAL."""
    if DataType(dtype).is_block_float:
        raise RuntimeError(f"TT_FATAL: element_size is undefined for block float dtype {DataType(dtype).name}: its "
                           f"16 values share an exponent; use ttnn.tile_size(dtype) for a tile's bytes")
    return ELEMENT_SIZE[DataType(dtype)]


def page_size(dtype: DataType, layout: Layout, padded_shape) -> int:
    if layout == Layout.TILE:
        return tile_size(dtype)
    return padded_shape[-1] * ELEMENT_SIZE[dtype] if len(padded_shape) else ELEMENT_SIZE[dtype]


def num_pages(layout: Layout, padded_shape) -> int:
    if not len(padded_shape):
        return 1
    rows = 1
    for d in padded_shape[:-1]:
        rows *= d
    if layout == Layout.TILE:
        return rows // TILE_HEIGHT * (padded_shape[-1] // TILE_WIDTH)
    return rows


def check_layout(dtype: DataType, layout: Layout) -> None:
    if dtype.is_block_float and layout != Layout.TILE:
        raise ValueError(
            f"{dtype!r} exists only in TILE layout, got {layout!r}; pass layout=ttnn.TILE "
            f"or use dtype=ttnn.bfloat16 for row-major tensors"
        )


def block_float(x: torch.Tensor, mantissa_bits: int) -> torch.Tensor:
    """Round x as a block float with `mantissa_bits` per value; returns float32 values.

    Non-finite values pass through unchanged and do not take part in their block's exponent.
    """
    x = x.float()
    if x.numel() == 0:
        return x
    shape = x.shape
    width = shape[-1] if x.dim() else 1
    x2 = x.reshape(-1, width)
    pad = (-width) % BLOCK
    if pad:
        x2 = torch.nn.functional.pad(x2, (0, pad))
    blocks = x2.reshape(x2.shape[0], -1, BLOCK)
    finite = torch.isfinite(blocks)
    amax = torch.where(finite, blocks.abs(), 0.0).amax(-1, keepdim=True)
    exponent = torch.frexp(amax).exponent  # amax = m * 2**exponent, m in [0.5, 1)
    scale = torch.ldexp(torch.ones_like(amax), exponent - mantissa_bits)
    limit = float(2**mantissa_bits - 1)
    q = torch.round(blocks / scale).clamp_(-limit, limit) * scale
    q = torch.where(finite, q, blocks)
    q = q.reshape(x2.shape)[:, :width]
    return q.reshape(shape)


def to_device_values(t: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """The values a tensor of `dtype` holds on the device, in that dtype's host torch dtype."""
    # Every op's output passes here: t.bfloat16() / t.float() are t.to(...) with 0.7 us less argument parsing.
    if dtype is DataType.BFLOAT16:
        return t.bfloat16()
    if dtype is DataType.FLOAT32:
        return t.float()
    target = TORCH_DTYPE.get(dtype)
    if target is None:
        raise ValueError(f"dtype={dtype!r} holds no values; pass a tensor dtype such as ttnn.bfloat16")
    if dtype.is_block_float:
        return block_float(t, MANTISSA_BITS[dtype]).to(target)
    if dtype.is_float:
        return t.to(target)
    lo, hi = INT_RANGE[dtype]
    if t.is_floating_point():
        # torch's float -> int cast of an out-of-range value is undefined, so floats keep the saturating clamp
        t = torch.nan_to_num(t.double().trunc(), nan=0.0).clamp(lo, hi)
    elif t.dtype == torch.bool:
        t = t.to(torch.int64)
    else:
        # Integers keep their low bits (two's complement): TT-NN's host conversion is torch's wrapping
        # .to(int32 / int16 / uint8) (pytensor.cpp, convert_py_tensor_to_host_buffer), so from_torch of -100 as
        # uint32 holds 2**32 - 100, and the device's integer add/sub/mul wrap modulo 2**32 (tt-metal's
        # test_binary_sub_uint32_underflow). int64 arithmetic stays right modulo 2**32 through its own wrap.
        t = (t.to(torch.int64) - lo).remainder(hi - lo + 1) + lo
    return t.to(target)
