"""conv2d's device operations: the input sharded into L1, HaloDeviceOperation, then Conv2dDeviceOperation.

Height sharding only (TT-NN's conv2d picks height, block or width sharding by estimated L1 use when
conv_config.shard_layout is unset; device_sim takes height sharding then, and models no other layout).
A 1x1, stride-1, unpadded conv runs as a matmul in TT-NN: matmul_conv_programs models its auto-sharded form (an
interleaved matmul); its sharded form (a matmul with a sharded in0) is not modelled. Sources in tt-metal:

- sharding: ttnn/cpp/ttnn/operations/conv/conv2d/conv2d_utils.cpp (determine_parallel_config,
  determine_input_memory_config, create_sharded_memory_config_from_parallel_config,
  determine_per_core_conv_block_config, get_input_channels_alignment)
- halo: ttnn/cpp/ttnn/operations/sliding_window/halo/device/untilize_with_halo_program_factory.cpp
  (UNTILIZE_BLOCK_SIZE = 32, double-buffered untilize CBs)
- conv: ttnn/cpp/ttnn/operations/conv/conv2d/conv2d_op_program_factory_common.cpp (get_cb_info,
  allocate_cbs: CB indices in order, zero-page CBs skipped)

Approximate: split reader and activation reuse are taken as off; the halo's four config CBs (backed
by their own L1 tensors, sized by the gather schedule) are left out; conv2d's default compute config
(packer_l1_acc off) makes the partials the output's format.

Example:
    >>> from device_sim.programs.conv import conv2d_programs
    >>> from device_sim.types import DataType
    >>> bf16 = DataType.BFLOAT16
    >>> ps = conv2d_programs(batch=1, height=16, width=16, in_channels=32, out_channels=64, kernel=(3, 3),
    ...                      stride=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), in_dtype=bf16, in_tile=True,
    ...                      in_sharded=False, out_dtype=bf16, weights_dtype=bf16, bias=False, grid=(8, 8))
    >>> [p.name for p in ps]
    ['InterleavedToShardedDeviceOperation', 'HaloDeviceOperation', 'Conv2dDeviceOperation']
"""

from __future__ import annotations

import math
from typing import NamedTuple

from device_sim import dtypes
from device_sim.device_work import (
    TILE,
    TILE_BYTES,
    CircularBuffer,
    Program,
    cached,
    cores_row_major,
    make_program,
)
from device_sim.programs.data_movement import i2s_cbs, tilize_shape_program
from device_sim.programs.matmul import matmul_program
from device_sim.types import DataType, Layout

_F32, _BF16 = DataType.FLOAT32, DataType.BFLOAT16
L1_ALIGNMENT = 16  # bytes (hal::get_l1_alignment on Wormhole): a row-major input's channels align to 8 bf16
UNTILIZE_BLOCK_SIZE = 32  # halo's untilize block height in rows
L1_SCRATCHPAD = 64  # conv's L1_ARRAY CB, bytes


def _round(n: int, m: int) -> int:
    return -(-n // m) * m


def closest_divisor_with_padding(num: int, start: int) -> int:
    """find_closest_largest_divisor_with_num_padding_and_mult(num, start, 1): the largest divisor d <= start
    for which padding num up to a multiple of d wastes less than one share."""
    d = start
    padded = _round(num, d)
    while padded - num >= padded // d and d > 1:
        d -= 1
        padded = _round(num, d)
    return d


def max_out_sticks_per_core(batch, height, width, out_h, out_w, kernel, stride, padding, dilation,
                            sticks_per_core: int) -> int:
    """The most input rows (sticks) any core's halo gathers: from the first window of its output rows to the
    end of the last one, in the padded input (the span sliding_window's shard boundaries give each core)."""
    top, bottom, left, right = padding
    hp, wp = height + top + bottom, width + left + right
    total = batch * out_h * out_w
    extent = (kernel[0] - 1) * dilation[0] * wp + (kernel[1] - 1) * dilation[1]

    def start(o: int) -> int:
        n, r = divmod(o, out_h * out_w)
        oh, ow = divmod(r, out_w)
        return n * hp * wp + oh * stride[0] * wp + ow * stride[1]

    most = 0
    for first in range(0, total, sticks_per_core):
        last = min(first + sticks_per_core, total) - 1
        most = max(most, start(last) + extent - start(first) + 1)
    return most


def conv2d_programs(*, batch, height, width, in_channels, out_channels, kernel, stride, padding, dilation,
                    in_dtype, in_tile, in_sharded, out_dtype, weights_dtype, bias, grid, act_block_h_override=0,
                    out_tile=True, act_double_buffer=False, weights_double_buffer=False,
                    input_hw: tuple | None = None) -> tuple[Program, ...]:
    """The programs of one height-sharded conv2d, in launch order. `padding` is (top, bottom, left, right).
    `input_hw` is the tensor's own (H, W) when the conv reads a larger virtual input (conv_transpose2d: the halo
    inserts zeros between rows and columns and pads, so `height` / `width` are that full input's, stride 1)."""
    key = ("conv2d", batch, height, width, in_channels, out_channels, kernel, stride, padding, dilation, in_dtype,
           in_tile, in_sharded, out_dtype, weights_dtype, bias, grid, act_block_h_override, out_tile,
           act_double_buffer, weights_double_buffer, input_hw)
    return cached(key, lambda: _build(batch, height, width, in_channels, out_channels, kernel, stride, padding,
                                      dilation, in_dtype, in_tile, in_sharded, out_dtype, weights_dtype, bias, grid,
                                      act_block_h_override, out_tile, act_double_buffer, weights_double_buffer,
                                      input_hw or (height, width)))


def _build(batch, height, width, in_channels, out_channels, kernel, stride, padding, dilation, in_dtype, in_tile,
           in_sharded, out_dtype, weights_dtype, bias, grid, act_block_h_override, out_tile, act_double_buffer,
           weights_double_buffer, input_hw) -> tuple[Program, ...]:
    top, bottom, left, right = padding
    out_h = (height + top + bottom - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    out_w = (width + left + right - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    gx, gy = grid
    # determine_parallel_config(HEIGHT_SHARDED): cores over the output's rows of tiles, row by row
    out_nhw = batch * out_h * out_w
    ncores = closest_divisor_with_padding(-(-out_nhw // TILE), gx * gy)
    ranges = cores_row_major(ncores, gx)
    # get_input_channels_alignment: a row-major input's channels align to 8 (16 B of bfloat16), a tiled one to 32
    channels = _round(in_channels, TILE if in_tile else L1_ALIGNMENT // 2)
    in_shard_h = _round(batch * input_hw[0] * input_hw[1], ncores * TILE) // ncores
    out_shard_h = _round(out_nhw, ncores * TILE) // ncores
    out_w_ntiles = -(-out_channels // TILE)
    per_core_h_ntiles = out_shard_h // TILE
    programs = []
    if not in_sharded:
        programs.append(_interleaved_to_sharded(in_dtype, in_tile, in_shard_h, channels, ranges))
    halo_dtype = _F32 if in_dtype == _F32 else _BF16  # halo rows are bfloat16 (float32 stays), one an input stick
    stick = channels * (4 if halo_dtype == _F32 else 2)
    sticks = max_out_sticks_per_core(batch, height, width, out_h, out_w, kernel, stride, padding, dilation,
                                     out_shard_h)
    programs.append(make_program("HaloDeviceOperation", "UntilizeWithHaloProgramFactory",
                                 halo_cbs(in_dtype, in_tile, in_shard_h, channels, sticks), ranges))
    # Conv2dDeviceOperation (get_cb_info, HEIGHT_SHARDED)
    act_h = per_core_h_ntiles
    if act_block_h_override:
        want = act_block_h_override // TILE
        act_h = want if per_core_h_ntiles % want == 0 else next(d for d in range(want, 0, -1)
                                                                if per_core_h_ntiles % d == 0)
    act_w = _round(channels * kernel[1], TILE) // TILE
    in_t, out_t, w_t = TILE_BYTES[halo_dtype], TILE_BYTES[out_dtype], TILE_BYTES[weights_dtype]
    weights = out_w_ntiles * act_w
    if per_core_h_ntiles // act_h > 1:
        weights *= kernel[0]  # fully buffered weights: every kernel row stays while act blocks go by
    elif weights_double_buffer:
        weights *= 2
    out_ntiles = per_core_h_ntiles * out_w_ntiles
    act = act_h * act_w * (2 if act_double_buffer else 1)
    infos = [(weights, w_t, False), (out_ntiles, out_t, out_tile),  # partials share the output when it is tiled
             (act, in_t, False), (act_h * act_w, out_t, False), (out_w_ntiles if bias else 0, w_t, False),
             (out_ntiles, out_t, True), (1, per_core_h_ntiles * TILE * 2, True), (1, L1_SCRATCHPAD, False),
             (sticks, stick, True)]
    cbs, index = [], 0
    for pages, page, global_ in infos:
        if pages:
            cbs.append(CircularBuffer((index,), pages, page, global_))
            index += 1
    programs.append(make_program("Conv2dDeviceOperation", "Conv2dShardedProgramFactory", cbs, ranges))
    return tuple(programs)


class _Prepared(NamedTuple):
    """The prepared weights or bias TT-NN makes inside conv2d (no device_sim tensor): matmul_program reads only
    their dtype, the shapes coming from `shapes`."""

    dtype: DataType


def matmul_conv_programs(x, *, batch, height, width, in_channels, out_channels, weights_dtype, bias_dtype,
                         out_dtype) -> tuple[Program, ...]:
    """A 1x1, stride-1, unpadded conv from an interleaved input without conv_config.shard_layout: TT-NN's
    auto-sharded matmul path (shard_or_reshard_tensor_if_required: "run the matmul out of interleaved tensor").
    A ROW_MAJOR input is tilized first, as [1, 1, N*H*W, C] (TilizeWithValPadding when that is not whole tiles),
    then ttnn.linear of [1, 1, N*H*W, C] by the prepared [1, 1, C, OC padded to 32] weights runs
    MatmulDeviceOperation with the default program config (programs.matmul.matmul_program) and conv2d's compute
    config (packer_l1_acc and fp32_dest_acc_en off)."""
    rows = batch * height * width
    programs = []
    if x.layout != Layout.TILE:
        padded = rows % TILE or in_channels % TILE
        programs.append(tilize_shape_program(x.device(), (1, 1, rows, in_channels), x.dtype, x.dtype,
                                             name="TilizeWithValPaddingDeviceOperation" if padded
                                             else "TilizeDeviceOperation"))
    shapes = ((1, 1, _round(rows, TILE), _round(in_channels, TILE)),
              (1, 1, _round(in_channels, TILE), _round(out_channels, TILE)))
    bias = _Prepared(bias_dtype) if bias_dtype is not None else None
    programs.append(matmul_program(x, _Prepared(weights_dtype), bias, out_dtype, None, shapes=shapes,
                                   fp32_dest_acc_en=False, packer_l1_acc=False))
    return tuple(programs)


def halo_cbs(in_dtype, in_tile: bool, in_shard_h: int, channels: int, sticks: int) -> list:
    """HaloDeviceOperation's CBs: c_0 the input shard, c_1 the `sticks` rows of the halo output (both globally
    allocated), c_2 / c_3 a pad row each; a tiled input adds c_4 / c_5, 32 rows of tiles untilized at a time,
    double-buffered, one CB per reader. Rows are bfloat16 (float32 stays), `channels` (aligned) wide."""
    halo_dtype = _F32 if in_dtype == _F32 else _BF16
    stick = channels * (4 if halo_dtype == _F32 else 2)
    ntiles_w = -(-channels // TILE)
    cbs = [CircularBuffer((0,), ntiles_w * -(-in_shard_h // TILE) if in_tile else in_shard_h,
                          TILE_BYTES[in_dtype] if in_tile else stick, True),
           CircularBuffer((1,), sticks, stick, True),
           CircularBuffer((2,), 1, stick), CircularBuffer((3,), 1, stick)]
    if in_tile:
        block = UNTILIZE_BLOCK_SIZE // TILE * ntiles_w * 2
        cbs += [CircularBuffer((i,), block, TILE_BYTES[halo_dtype]) for i in (4, 5)]
    return cbs


def _interleaved_to_sharded(dtype, tile: bool, shard_h: int, channels: int, ranges) -> Program:
    """The input's to_memory_config into its height shards (programs.data_movement's model of the factory)."""
    return make_program("InterleavedToShardedDeviceOperation", "InterleavedToShardedProgramFactory",
                        i2s_cbs(dtype, dtype, tile, shard_h, channels), ranges)


def conv3d_program(dev, in_shape: tuple, *, out_shape: tuple, kernel: tuple, stride: tuple, dilation: tuple,
                   dtype: DataType, config, bias: bool, fp32_dest_acc_en: bool) -> Program:
    """Conv3dProgramFactory (experimental/conv3d/device/conv3d_program_factory.cpp) on the config's grid from (0, 0).

    In CB index order: vol2col_rm (min(patches, 64) patch rows, each padded to whole tiles), vol2col_tiled (K_t
    tiles: one tile row), the weights (K_t x N_t), the matmul partials (M_t x N_t; float32 when fp32_dest_acc_en and
    more than one C_in block), the untilized result (M_t x N_t tiles); a zero tile with float32 partials; the
    reduction (M_t x N_t) and the worker ack (1) with more than one C_in block; the bias (N_t); and, for a kernel
    larger than 1x1x1 without dilation, the L1 prefetch of one block's receptive field (C_in_block bytes a position)
    when it fits min(free L1 - 200 KB for kernel code - the other CBs, 500 KB). M_t, K_t, N_t: the block's patches
    (T x H x W out blocks), kD*kH*kW*C_in_block and C_out_block, in tiles.
    """
    gx, gy = (config.compute_with_storage_grid_size.x, config.compute_with_storage_grid_size.y) if hasattr(
        config.compute_with_storage_grid_size, "x") else tuple(config.compute_with_storage_grid_size)
    key = ("Conv3dDeviceOperation", in_shape, out_shape, kernel, stride, dilation, dtype, config.T_out_block,
           config.H_out_block, config.W_out_block, config.C_in_block, config.C_out_block, gx, gy, bias,
           fp32_dest_acc_en, dev.config.l1_size, dev.config.l1_unreserved_base)

    def build():
        c_in, c_out = in_shape[-1], out_shape[-1]
        tile, esize = TILE_BYTES[dtype], dtypes.ELEMENT_SIZE[dtype]
        c_out_block = config.C_out_block or _round(c_out, TILE)
        c_in_block = config.C_in_block or c_in
        patch = kernel[0] * kernel[1] * kernel[2] * c_in_block
        patches = config.T_out_block * config.H_out_block * config.W_out_block
        m_t, k_t, n_t = -(-patches // TILE), -(-patch // TILE), -(-c_out_block // TILE)
        blocks = c_in // c_in_block
        fp32_partials = fp32_dest_acc_en and blocks > 1
        partial = TILE_BYTES[_F32] if fp32_partials else tile
        cbs = [CircularBuffer((0,), min(patches, 2 * TILE), _round(patch, TILE) * esize),
               CircularBuffer((1,), k_t, tile), CircularBuffer((2,), k_t * n_t, tile),
               CircularBuffer((3,), m_t * n_t, partial), CircularBuffer((4,), m_t * n_t, tile)]
        if fp32_partials:
            cbs.append(CircularBuffer((len(cbs),), 1, tile))
        if blocks > 1:
            cbs += [CircularBuffer((len(cbs),), m_t * n_t, partial), CircularBuffer((len(cbs) + 1,), 1, tile)]
        if bias:
            cbs.append(CircularBuffer((len(cbs),), n_t, tile))
        if max(kernel) > 1 and dilation == (1, 1, 1):
            others = sum(cb.size for cb in cbs)
            usable = dev.config.l1_size - dev.config.l1_unreserved_base - 200 * 1024
            budget = min(usable - others, 500 * 1024) if others < usable else 0
            positions = math.prod((b - 1) * s + k for b, s, k in zip(
                (config.T_out_block, config.H_out_block, config.W_out_block), stride, kernel))
            if positions * c_in_block * esize <= budget:
                cbs.append(CircularBuffer((len(cbs),), positions, c_in_block * esize))
        return make_program("Conv3dDeviceOperation", "Conv3dProgramFactory", cbs, ((0, 0, gx - 1, gy - 1),))

    return cached(key, build)
