"""max_pool2d's and avg_pool2d's device operations: the input sharded into L1, HaloDeviceOperation, the halo's
MoveDeviceOperation (reallocate_halo_output), then Pool2D.

As generic_pools.cpp's pool2d_invoke runs them (tt-metal's ttnn/cpp/ttnn/operations/pool/generic/), height sharded:
the cores from conv2d_utils' determine_parallel_config over the output's rows (whole rows of tiles only for a TILE
output), the input's channels aligned to 8 (ROW_MAJOR) or 32 (TILE). Pool2D's CBs follow
pool_multi_core_program_factory.cpp (pool2d_multi_core_sharded_with_halo_v2_impl_new) and pool_utils.cpp's
get_factory_parameters, in creation order (CB indices counted up from c_0):

- the reduction scalar, two tiles in the input's format (bfloat8_b reads as bfloat16); an avg pool whose divisor
  changes from window to window (padding left out by count_include_pad=False, or ceil_mode's extra padding) has a
  second one for the split reader, and a per-core config of scalars (globally allocated, its own L1 tensor);
- the clear value, one tile;
- the halo output as the raw input (globally allocated), one page of C elements a stick;
- the reader indices (globally allocated, their own L1 tensor);
- two reader CBs (the split reader is always on), each two pages of the rows one reduction tilizes;
- a TILE output: a pre-tilize CB of 32 rows of the channels' tiles;
- the output shard (globally allocated): 16-element pages (ROW_MAJOR), or its tiles.

Which tt-metal version: the stored history holds hundreds of versions of the factory. device_sim follows the one
whose signature matches TT-NN 0.81's max_pool2d (output_layout, config_tensor_in_dram, reallocate_halo_output,
return_indices): the factory at commit 002a3f412aeb6ef4694a16b4a0b4cea32d60281e with its 9-argument
get_factory_parameters. return_indices' CBs are not modelled (device_sim's max_pool2d does not take it).
docs/device_work.md lists what is approximate.

Example:
    >>> from device_sim.programs.pool import pool2d_programs
    >>> from device_sim.types import DataType
    >>> ps = pool2d_programs(avg=False, batch=1, height=16, width=16, channels=32, kernel=(2, 2), stride=(2, 2),
    ...                      padding=(0, 0, 0, 0), dilation=(1, 1), ceil_mode=False, count_include_pad=True,
    ...                      divisor_override=None, in_dtype=DataType.BFLOAT16, in_tile=False, in_sharded=False,
    ...                      out_dtype=DataType.BFLOAT16, out_tile=False, reallocate_halo=True, grid=(8, 8))
    >>> [p.name for p in ps]
    ['InterleavedToShardedDeviceOperation', 'HaloDeviceOperation', 'MoveDeviceOperation', 'Pool2D']
"""

from __future__ import annotations

from device_sim import dtypes
from device_sim.device_work import (
    TILE,
    TILE_BYTES,
    CircularBuffer,
    Program,
    cached,
    cores_row_major,
    make_program,
    round_up,
    split_work,
)
from device_sim.programs.conv import closest_divisor_with_padding, halo_cbs, max_out_sticks_per_core
from device_sim.programs.data_movement import i2s_cbs
from device_sim.types import DataType

FACE = 16  # a tile face's width: a ROW_MAJOR pool output's page holds 16 channels


def output_hw(height, width, kernel, stride, padding, dilation, ceil_mode) -> tuple[int, int, int, int]:
    """SlidingWindowConfig's output (out_h, out_w) and ceil_mode's extra bottom / right padding: in ceil mode the
    last window is dropped when it would start in the bottom or right padding, as torch does."""
    top, bottom, left, right = padding
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
    span = (height + top + bottom - eff[0], width + left + right - eff[1])
    if not ceil_mode:
        return span[0] // stride[0] + 1, span[1] // stride[1] + 1, 0, 0
    out_h, out_w = -(-span[0] // stride[0]) + 1, -(-span[1] // stride[1]) + 1
    out_h -= (out_h - 1) * stride[0] >= height + top
    out_w -= (out_w - 1) * stride[1] >= width + left
    ceil_h = max(0, stride[0] * (out_h - 1) + eff[0] - height - top - bottom)
    ceil_w = max(0, stride[1] * (out_w - 1) + eff[1] - width - left - right)
    return out_h, out_w, ceil_h, ceil_w


def one_scalar_per_core(avg, ceil_mode, ceil_h, ceil_w, count_include_pad, pad_h, pad_w, divisor_override) -> bool:
    """pool_utils' is_pool_op_one_scalar_per_core: one divisor serves every window unless an avg pool without a
    divisor_override has windows of different sizes (ceil_mode's extra padding, or padding not counted)."""
    same_area = (not ceil_mode or (ceil_h == 0 and ceil_w == 0)) and (count_include_pad or (pad_h == 0 and pad_w == 0))
    return not avg or divisor_override is not None or same_area


def avg_scalars_per_core(height, width, out_h, out_w, kernel, stride, padding, count_include_pad, batch: int,
                         ncores: int, sticks_per_core: int) -> int:
    """The most (start, value, end) scalar entries any core's avg-pool config holds (the factory's
    get_bf16_avg_pool_config_scalars): a new entry each time the window's counted area changes along a core's
    output sticks, which run row by row from where the previous core stopped."""
    top, bottom, left, _ = padding
    most, linear = 0, 0
    for _ in range(ncores):
        oh, ow = (linear // out_w) % out_h, linear % out_w
        count, last = 0, None
        for _ in range(sticks_per_core):
            h0, w0 = oh * stride[0] - top, ow * stride[1] - left
            h1, w1 = min(h0 + kernel[0], height + bottom), min(w0 + kernel[1], width + padding[3])
            if count_include_pad:
                area = (h1 - h0) * (w1 - w0)
            else:
                eh, ew = min(h1, height) - max(h0, 0), min(w1, width) - max(w0, 0)
                area = eh * ew if eh > 0 and ew > 0 else 0
            count += area != last
            last = area
            ow = (ow + 1) % out_w
            if ow == 0:
                oh = (oh + 1) % out_h
        most = max(most, count)
        linear += sticks_per_core
        if linear // (out_w * out_h) == batch:
            linear -= batch * out_w * out_h
    return most


def pool2d_programs(*, avg: bool, batch, height, width, channels, kernel, stride, padding, dilation, ceil_mode,
                    count_include_pad, divisor_override, in_dtype, in_tile, in_sharded, out_dtype, out_tile,
                    reallocate_halo, grid, in_shard=None) -> tuple[Program, ...]:
    """The programs of one height-sharded max or avg pool, in launch order. `padding` is (top, bottom, left, right);
    `in_shard` is a height-sharded input's (shard height, shard width, core ranges), else the input is sharded
    first on the cores determine_parallel_config picks from `grid`."""
    key = ("pool2d", avg, batch, height, width, channels, kernel, stride, padding, dilation, ceil_mode,
           count_include_pad, divisor_override, in_dtype, in_tile, in_sharded, out_dtype, out_tile, reallocate_halo,
           grid, in_shard)
    return cached(key, lambda: _build(avg, batch, height, width, channels, kernel, stride, padding, dilation,
                                      ceil_mode, count_include_pad, divisor_override, in_dtype, in_tile, in_sharded,
                                      out_dtype, out_tile, reallocate_halo, grid, in_shard))


def _build(avg, batch, height, width, channels, kernel, stride, padding, dilation, ceil_mode, count_include_pad,
           divisor_override, in_dtype, in_tile, in_sharded, out_dtype, out_tile, reallocate_halo, grid,
           in_shard) -> tuple[Program, ...]:
    top, bottom, left, right = padding
    out_h, out_w, ceil_h, ceil_w = output_hw(height, width, kernel, stride, padding, dilation, ceil_mode)
    out_nhw = batch * out_h * out_w
    out_rows = TILE if out_tile else 1  # a TILE output's shards hold whole rows of tiles
    programs = []
    if in_shard is None:
        # determine_parallel_config(HEIGHT_SHARDED): cores over the output's rows (or rows of tiles), row by row
        ncores = closest_divisor_with_padding(-(-out_nhw // out_rows), grid[0] * grid[1])
        ranges = cores_row_major(ncores, grid[0])
        shard_w = round_up(channels, TILE if in_tile else 8)  # pool2d_invoke's input_channels_alignment
        shard_h = round_up(batch * height * width, ncores * (TILE if in_tile else 1)) // ncores
        programs.append(make_program("InterleavedToShardedDeviceOperation", "InterleavedToShardedProgramFactory",
                                     i2s_cbs(in_dtype, in_dtype, in_tile, shard_h, shard_w), ranges))
    else:
        shard_h, shard_w, ranges = in_shard
        ncores = sum((r[2] - r[0] + 1) * (r[3] - r[1] + 1) for r in ranges)
    out_shard_h = round_up(out_nhw, ncores * out_rows) // ncores
    # the halo gathers each core's windows, ceil_mode's extra padding included, as bfloat16 rows
    sticks = max_out_sticks_per_core(batch, height, width, out_h, out_w, kernel, stride,
                                     (top, bottom + ceil_h, left, right + ceil_w), dilation, out_shard_h)
    programs.append(make_program("HaloDeviceOperation", "UntilizeWithHaloProgramFactory",
                                 halo_cbs(in_dtype, in_tile, shard_h, shard_w, sticks), ranges))
    nbytes = 4 if in_dtype == DataType.FLOAT32 else 2  # get_factory_parameters: block floats read as bfloat16
    if reallocate_halo:  # ttnn::move of the sharded halo output (programs.shape.move_program's sharded CBs)
        whole_tiles = sticks * shard_w % (TILE * TILE) == 0
        page = TILE_BYTES[DataType.FLOAT32 if nbytes == 4 else DataType.BFLOAT16] if whole_tiles else shard_w * nbytes
        pages = sticks * shard_w // (TILE * TILE) if whole_tiles else sticks
        programs.append(make_program("MoveDeviceOperation", "MoveShardedProgramFactory",
                                     (CircularBuffer((0,), pages, page, True), CircularBuffer((1,), pages, page, True)),
                                     ranges))
    programs.append(make_program("Pool2D", "Pool2D::MultiCore", _pool_cbs(
        avg, batch, height, width, channels, kernel, stride, padding, count_include_pad, divisor_override, ceil_mode,
        ceil_h, ceil_w, out_h, out_w, nbytes, out_dtype, out_tile, sticks, out_shard_h, ncores), ranges))
    return tuple(programs)


def _pool_cbs(avg, batch, height, width, channels, kernel, stride, padding, count_include_pad, divisor_override,
              ceil_mode, ceil_h, ceil_w, out_h, out_w, nbytes, out_dtype, out_tile, sticks, out_shard_h, ncores):
    df_tile = TILE_BYTES[DataType.FLOAT32 if nbytes == 4 else DataType.BFLOAT16]
    window = kernel[0] * kernel[1]
    # get_factory_parameters (one channel shard: height sharding)
    in_ntiles_c = -(-channels // TILE)
    tilized_rows = window if window <= FACE else TILE
    partial = channels % TILE != 0 and channels % TILE <= FACE
    large_kernel = window > (TILE // 2 if partial else TILE)
    max_tiles = 4 if avg and large_kernel else 8
    in_cb_elems = (max_tiles if in_ntiles_c > max_tiles else in_ntiles_c) * TILE * tilized_rows
    pad_h, pad_w = padding[0] + padding[1], padding[2] + padding[3]
    one_scalar = one_scalar_per_core(avg, ceil_mode, ceil_h, ceil_w, count_include_pad, pad_h, pad_w,
                                     divisor_override)
    pages = [(2, df_tile, False)]  # the reduction scalar, multi_buffering_factor 2
    if avg and not one_scalar:
        pages.append((2, df_tile, False))  # the split reader's own scalars
    pages += [(1, df_tile, False),  # the clear value (-inf, or 0)
              (sticks, channels * nbytes, True),  # the halo output
              # reader indices: one uint16 top-left index per output stick, the page rounded up to 4
              (1, round_up(out_shard_h, 4), True),
              (2, nbytes * round_up(in_cb_elems, TILE * TILE), False),  # reader 0
              (2, nbytes * round_up(in_cb_elems, TILE * TILE), False)]  # reader 1 (split_reader is always on)
    if out_tile:
        pages.append((TILE * in_ntiles_c, TILE * nbytes, False))  # pre-tilize: 32 rows of the channels' tiles
        out_w_shard = round_up(channels, TILE)
        pages.append((out_shard_h * out_w_shard // (TILE * TILE), TILE_BYTES[out_dtype], True))
    else:
        out_w_shard = round_up(channels, FACE)
        pages.append((out_shard_h * -(-out_w_shard // FACE), min(FACE, out_w_shard) * nbytes, True))
    if not one_scalar:  # the avg pool's scalar config: its widest core's entries of 3 uint16 each, in one page
        most = avg_scalars_per_core(height, width, out_h, out_w, kernel, stride, padding, count_include_pad, batch,
                                    ncores, out_shard_h)
        pages.append((1, 3 * most * 2, True))
    return [CircularBuffer((i,), n, size, g) for i, (n, size, g) in enumerate(pages)]


def rotate_program(dev, shape: tuple, dtype: DataType, *, dram: bool, bilinear: bool = False) -> Program:
    """RotateDeviceOperation's NearestProgramFactory (pool/rotate/device/rotate_nearest_program_factory.cpp) for an
    interleaved [N, H, W, C] ROW_MAJOR input: split_work_to_cores over the N*H*W output sticks; c_0 one fill stick,
    c_1 the output sticks, num_cb_pages x 2 (double buffered), num_cb_pages = min(the most sticks a core takes,
    (8 tiles of the input's elements / 2) / stick bytes) rounded down to the burst (at most 5). A stick is C elements
    rounded up to the buffer's alignment (pool_utils' get_aligned_stick_size: DRAM 32 bytes, L1 16).

    `bilinear`: its BilinearProgramFactory (rotate_bilinear_program_factory.cpp), interleaved, on the same cores:
    c_0 one fill stick of C elements, c_1 2 pages of ceil(C / 32) tiles (the four neighbours), c_2 2 scalar tiles,
    c_3 2 x ceil(C / 16) output pages of 16 elements."""
    gx, gy = dev.config.grid_x, dev.config.grid_y
    key = ("RotateDeviceOperation", shape, dtype, dram, bilinear, gx, gy, dev.config.dram_alignment,
           dev.config.l1_alignment)

    def build():
        esize = dtypes.ELEMENT_SIZE[dtype]
        if bilinear:
            c = shape[-1]
            cbs = (CircularBuffer((0,), 1, c * esize), CircularBuffer((1,), 2, -(-c // TILE) * TILE * TILE * esize),
                   CircularBuffer((2,), 2, dtypes.tile_size(dtype)), CircularBuffer((3,), 2 * -(-c // 16), 16 * esize))
            return make_program("RotateDeviceOperation", "BilinearProgramFactory", cbs,
                                split_work(shape[0] * shape[1] * shape[2], gx, gy))
        stick = round_up(shape[-1] * esize, dev.config.dram_alignment if dram else dev.config.l1_alignment)
        sticks = shape[0] * shape[1] * shape[2]
        ranges = split_work(sticks, gx, gy)
        cores = sum((r[2] - r[0] + 1) * (r[3] - r[1] + 1) for r in ranges)
        per_core = -(-sticks // cores)
        pages = min(per_core, 8 * TILE * TILE * esize // 2 // stick)
        if pages == 0:
            raise RuntimeError(f"TT_FATAL @ device_sim/programs/pool.py: num_cb_pages > 0\ninfo:\nNot enough L1 for "
                               f"even a single CB page: aligned_input_stick_nbytes={stick}")
        burst = min(pages, 5)
        pages -= pages % burst
        cbs = (CircularBuffer((0,), 1, stick), CircularBuffer((1,), pages * 2, stick))
        return make_program("RotateDeviceOperation", "NearestProgramFactory", cbs, ranges)

    return cached(key, build)


def grid_sample_program(dev, grid_shape: tuple, channels: int, dtype: DataType, grid_dtype: DataType, *,
                        grid_dram: bool, out_channels: int) -> Program:
    """GridSampleOperation's bilinear factory (pool/grid_sample/device/grid_sample_bilinear_program_factory.cpp)
    for interleaved tensors: split_work_to_cores over the grid's sticks (N*H_out*W_out); c_0 one grid stick (its
    last dim, rounded up to the buffer's alignment: get_aligned_stick_size), c_1 2 pages of the four neighbours'
    ceil(C / 32) tiles, c_2 2 scalar tiles (the weights, in the input's format), c_3 2 x ceil(C_out / 16) output
    pages of 16 elements (BUFFERING_FACTOR = 2)."""
    gx, gy = dev.config.grid_x, dev.config.grid_y
    key = ("GridSampleOperation", grid_shape, channels, dtype, grid_dtype, grid_dram, out_channels, gx, gy,
           dev.config.dram_alignment, dev.config.l1_alignment)

    def build():
        esize = dtypes.ELEMENT_SIZE[dtype]
        alignment = dev.config.dram_alignment if grid_dram else dev.config.l1_alignment
        sticks = grid_shape[0] * grid_shape[1] * grid_shape[2]
        cbs = (CircularBuffer((0,), 1, round_up(grid_shape[-1] * dtypes.ELEMENT_SIZE[grid_dtype], alignment)),
               CircularBuffer((1,), 2, -(-channels // TILE) * TILE * TILE * esize),
               CircularBuffer((2,), 2, dtypes.tile_size(dtype)),
               CircularBuffer((3,), 2 * -(-out_channels // FACE), FACE * esize))
        return make_program("GridSampleOperation", "GridSampleBilinearProgramFactory", cbs,
                            split_work(sticks, gx, gy))

    return cached(key, build)
