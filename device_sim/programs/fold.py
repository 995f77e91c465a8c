"""ttnn.fold's device work on an interleaved input, as TT-NN's fold.cpp runs it.

A DRAM input is padded first when asked (ttnn::pad: PadDeviceOperation's row-major factory, on the padded
shape), or untilized first when TILE with whole tiles of channels, then folded by the Fold device operation's
MultiCoreDRAMFold factory, whose row-major program
(fold_multi_core_row_major_interleaved in data_movement/fold/device/fold_multi_core_dram_program_factory.cpp)
streams one patch (stride_h x stride_w sticks) at a time. An L1-interleaved input goes to the same factory
(fold.cpp's fallback), which ignores padding.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.fold import fold_programs
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 4, 4, 16), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=dev)
    >>> [(p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs]) for p in fold_programs(x, 2, 2, (0,) * 4)]
    [('Fold', [((0,), 2, 128)])]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim import dtypes
from device_sim.device_work import TILE, CircularBuffer, cached, cores_row_major, grid_of, make_program
from device_sim.programs.conv import halo_cbs, max_out_sticks_per_core
from device_sim.programs.data_movement import untilize_program
from device_sim.programs.shape import pad_program
from device_sim.types import BufferType, DataType, Layout, TensorMemoryLayout

_DRAM_ALIGNMENT = 32  # hal::get_dram_alignment() on Wormhole: DRAM reads of a stick land 32 B-aligned
_L1_ALIGNMENT = 16  # hal::get_l1_alignment() on Wormhole


def fold_programs(x, stride_h: int, stride_w: int, padding: tuple[int, int, int, int]):
    """The programs of one fold of an interleaved NHWC input; `padding` is (top, bottom, left, right). A TILE input
    on DRAM whose channels are whole tiles is untilized first (fold.cpp's to_layout, UntilizeWithUnpadding when W
    is not whole tiles) and folded as row-major (the reshape after is a view of the same shape). None for what is
    not modelled: another TILE input (the tiled factory and the row-major reshape after it; a padded one), or
    padding on an L1 input (TT-NN's fallback drops it). A height-sharded input: _sharded_programs."""
    if x.device() is None or x._value.dim() != 4:
        return None
    if x.is_sharded():
        return _sharded_programs(x, stride_h, stride_w, padding)
    dram = x.memory_config().buffer_type == BufferType.DRAM
    n, h, w, c = x._value.shape
    if any(padding) and (not dram or x.layout != Layout.ROW_MAJOR):
        return None
    programs = []
    if x.layout == Layout.TILE:
        if not dram or c % TILE or x.dtype not in (DataType.BFLOAT16, DataType.FLOAT32):
            return None
        programs.append(untilize_program(x, x.dtype, name="UntilizeWithUnpaddingDeviceOperation" if w % TILE
                                         else "UntilizeDeviceOperation"))
    top, bottom, left, right = padding
    if any(padding):  # ttnn::pad with a PadSpecDim per dim, nothing before C: no front padding of the last dim
        programs.append(pad_program(x, None, 0, out_shape=(n, h + top + bottom, w + left + right, c)))
    programs.append(_fold_rm(x.device(), x.dtype, c, stride_h, stride_w))
    return tuple(p for p in programs if p is not None)


def _fold_rm(dev, dtype, channels: int, stride_h: int, stride_w: int):
    """fold_multi_core_row_major_interleaved: on the whole grid, c_0 two patches of stride_h * stride_w sticks,
    each stick rounded up to the DRAM alignment; when a stick is not aligned, c_1 one unaligned patch (the
    reader's L1 scratch)."""
    key = ("Fold", dtype, channels, stride_h, stride_w, grid_of(dev))

    def build():
        stick = channels * dtypes.ELEMENT_SIZE[dtype]
        aligned = -(-stick // _DRAM_ALIGNMENT) * _DRAM_ALIGNMENT
        patch = stride_h * stride_w
        cbs = [CircularBuffer((0,), 2, aligned * patch)]
        if stick != aligned:
            cbs.append(CircularBuffer((1,), 1, stick * patch))
        gx, gy = grid_of(dev)
        return make_program("Fold", "MultiCoreDRAMFold", cbs, ((0, 0, gx - 1, gy - 1),))

    return cached(key, build)


def _sharded_programs(x, stride_h: int, stride_w: int, padding):
    """fold.cpp's sharded path for a height-sharded input: H / W padding through the halo (a 1x1 sliding window
    over the padded input, one output stick a padded pixel, ceil(N*Hp*Wp / cores) a core), or a TILE input's
    to_layout (a sharded untilize); reshard_if_needed when a shard is not whole groups of stride_h rows of
    pixels (the fewest-rows split: the most cores, up to the grid, dividing those groups, row by row; the
    same-width reshard factory); then Fold's MultiCore factory. None for block or width sharding (TT-NN throws
    "fold op does not support non height-sharding!") and a padded TILE input."""
    cfg = x.memory_config()
    if cfg.memory_layout != TensorMemoryLayout.HEIGHT_SHARDED or (any(padding) and x.layout == Layout.TILE):
        return None
    spec = cfg.shard_spec
    key = ("fold", "sharded", tuple(x._value.shape), x.layout, x.dtype, spec, stride_h, stride_w, tuple(padding),
           grid_of(x.device()))
    return cached(key, lambda: _build_sharded(x, spec, stride_h, stride_w, tuple(padding)))


def _build_sharded(x, spec, stride_h, stride_w, padding):
    n, h, w, c = x._value.shape
    size = dtypes.ELEMENT_SIZE[x.dtype]
    ranges = tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in spec.grid.ranges())
    ncores = spec.grid.num_cores()
    shard_h = spec.shape[0]
    programs = []
    top, bottom, left, right = padding
    if any(padding):  # apply_halo_padding: the halo writes each core's padded pixels (1x1 windows)
        h, w = h + top + bottom, w + left + right
        out_shard = -(-n * h * w // ncores)
        sticks = max_out_sticks_per_core(n, h - top - bottom, w - left - right, h, w, (1, 1), (1, 1), padding, (1, 1),
                                         out_shard)
        programs.append(make_program("HaloDeviceOperation", "UntilizeWithHaloProgramFactory",
                                     halo_cbs(x.dtype, False, shard_h, c, sticks), ranges))
        shard_h = sticks
    elif x.layout == Layout.TILE:
        programs.append(untilize_program(x, x.dtype))
    group = stride_h * w  # pixels of stride_h input rows: one row of output pixels
    if shard_h % group:  # reshard_if_needed
        gx, gy = grid_of(x.device())
        rows = n * h * w // group
        cores = next(k for k in range(gx * gy, 0, -1) if rows % k == 0)
        new_h = -(-(n * h * w // cores) // group) * group
        new_ranges = cores_row_major(cores, gx)
        # ReshardSameWidthFactory (programs.data_movement.reshard_program): c_0 over the new shard, in pages of a
        # row, as many as the old shard's rows
        programs.append(make_program("ReshardDeviceOperation", "ReshardSameWidthFactory",
                                     (CircularBuffer((0,), shard_h, c * size, True),), new_ranges))
        shard_h, ranges = new_h, new_ranges
    pixel = c * size
    aligned = -(-pixel // _L1_ALIGNMENT) * _L1_ALIGNMENT
    dst = -(-stride_h * stride_w * pixel // _L1_ALIGNMENT) * _L1_ALIGNMENT
    programs.append(make_program("Fold", "MultiCore", (
        CircularBuffer((0,), shard_h, aligned, True),
        CircularBuffer((16,), shard_h // (stride_h * stride_w), dst, True)), ranges))
    return tuple(programs)
