"""The attention matmuls' device operations: AttnMatmulDeviceOperation and GroupAttnMatmulDeviceOperation.

tt-metal's ttnn/cpp/ttnn/operations/experimental/matmul/attn_matmul/device/attn_matmul_program_factory.cpp and
group_attn_matmul/device/group_attn_matmul_program_factory.cpp. Both put their CBs and kernels on the device's
whole worker grid ("because we use cached program for input shapes with changing shapes") and hand each core its
q heads through runtime arguments.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.attn_matmul import attn_matmul_program
    >>> dev = ttnn.open_device()
    >>> a = ttnn.from_torch(torch.ones(1, 8, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = attn_matmul_program(a, a, ttnn.bfloat16, fp32_dest_acc_en=False)
    >>> [(cb.indices, cb.num_pages) for cb in p.cbs]  # Kt = 2: c_0 holds 2 * Kt tiles
    [((0,), 4), ((1,), 2), ((2,), 1), ((3,), 1), ((4,), 1), ((5,), 2)]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, Program, cached, grid_of, make_program, shape_of
from device_sim.types import DataType

_F32, _BF16 = DataType.FLOAT32, DataType.BFLOAT16
# The tiles group_attn_matmul's compute kernel keeps in half the destination register (HALF_DST_MAX in
# group_attn_matmul.cpp): 8, or 4 when it accumulates in float32; out_subblock_w is the smaller of this and Nt.
_HALF_DST, _HALF_DST_FP32 = 8, 4


def out_subblock_w(n_tiles: int, fp32_dest_acc_en: bool) -> int:
    """group_attn_matmul's out_subblock_w: the smaller of Nt and half the destination register."""
    return min(n_tiles, _HALF_DST_FP32 if fp32_dest_acc_en else _HALF_DST)


def _interm_bytes(a_dtype: DataType, fp32_dest_acc_en: bool) -> int:
    # The untilize/tilize intermediates are Float16_b unless the kernel accumulates in float32 on float32 inputs.
    return TILE_BYTES[_F32 if fp32_dest_acc_en and a_dtype is _F32 else _BF16]


def _tiles(spec) -> int:
    return spec.shape[0] * spec.shape[1] // (TILE * TILE)


def _whole_grid(device) -> tuple:
    gx, gy = grid_of(device)
    return ((0, 0, gx - 1, gy - 1),)


def attn_matmul_program(a, b, out_dtype: DataType, *, fp32_dest_acc_en: bool) -> Program:
    """AttnMatmulDeviceOperation's factory: c_0 two rows of in0's Kt tiles, c_1 two in1 tiles, c_2 / c_3 / c_4 one
    intermediate tile each, c_5 two output tiles, on every worker core."""
    dev = a.device()
    key = ("AttnMatmulDeviceOperation", shape_of(a), a.dtype, b.dtype, out_dtype, fp32_dest_acc_en, grid_of(dev))

    def build():
        kt = a.padded_shape[-1] // TILE
        interm = _interm_bytes(a.dtype, fp32_dest_acc_en)
        cbs = [CircularBuffer((0,), 2 * kt, TILE_BYTES[a.dtype]), CircularBuffer((1,), 2, TILE_BYTES[b.dtype]),
               CircularBuffer((2,), 1, interm), CircularBuffer((3,), 1, interm), CircularBuffer((4,), 1, interm),
               CircularBuffer((5,), 2, TILE_BYTES[out_dtype])]
        return make_program("AttnMatmulDeviceOperation", "AttnMatmulProgramFactory", cbs, _whole_grid(dev))

    return cached(key, build)


def group_attn_matmul_program(a, b, out, *, n_tiles: int, fp32_dest_acc_en: bool) -> Program:
    """GroupAttnMatmulDeviceOperation's factory for in0 [1, q_heads, batch, K], in1 [batch, kv_heads, K, N] and its
    output `out` (Nt = n_tiles), with Kt = K/32 and w = out_subblock_w:

    c_0 in0's Kt tiles (or its shard, globally allocated), c_1 two blocks of kv_heads * Kt * w in1 tiles (what the
    first 32 cores multicast), c_2 in1's shard when it is sharded, c_3 2 * w and c_4 Mt * Nt intermediate tiles,
    c_5 the output's Mt * Nt tiles (or its shard), on every worker core."""
    dev = a.device()
    a_spec = a.memory_config().shard_spec if a.is_sharded() else None
    b_spec = b.memory_config().shard_spec if b.is_sharded() else None
    o_spec = out.memory_config().shard_spec if out.is_sharded() else None
    key = ("GroupAttnMatmulDeviceOperation", shape_of(a), shape_of(b), a.dtype, b.dtype, out.dtype, n_tiles,
           fp32_dest_acc_en, a_spec, b_spec, o_spec, grid_of(dev))

    def build():
        kt, mt = a.padded_shape[-1] // TILE, a.padded_shape[-2] // TILE
        kv_heads = b.padded_shape[1]
        w = out_subblock_w(n_tiles, fp32_dest_acc_en)
        interm = _interm_bytes(a.dtype, fp32_dest_acc_en)
        a_t, b_t, o_t = TILE_BYTES[a.dtype], TILE_BYTES[b.dtype], TILE_BYTES[out.dtype]
        cbs = [CircularBuffer((0,), _tiles(a_spec), a_t, True) if a_spec is not None
               else CircularBuffer((0,), kt, a_t),
               CircularBuffer((1,), 2 * kv_heads * kt * w, b_t)]
        if b_spec is not None:
            cbs.append(CircularBuffer((2,), _tiles(b_spec), b_t, True))
        cbs += [CircularBuffer((3,), 2 * w, interm), CircularBuffer((4,), mt * n_tiles, interm),
                CircularBuffer((5,), _tiles(o_spec), o_t, True) if o_spec is not None
                else CircularBuffer((5,), mt * n_tiles, o_t)]
        return make_program("GroupAttnMatmulDeviceOperation", "GroupAttnMatmulProgramFactory", cbs,
                            _whole_grid(dev))

    return cached(key, build)
