"""RepeatDeviceOperation as TT-NN's repeat (and expand, which is repeat) runs it: one program per repeated dim.

tt-metal's ttnn/cpp/ttnn/operations/data_movement/repeat/: repeat.cpp pads the repetitions to the input's rank
(or views the input up to theirs), returns the input itself when every repetition is 1, and otherwise repeats
one dim at a time, the last dim first. A TILE input whose last two dims are whole tiles takes the tile-native
path: RepeatDeviceOperation in tile mode per repeated dim, whose factory is always the higher-dim one
(device/repeat_program_factory_higher_dim.cpp with m_tile_page_size_bytes > 0). Any other input goes through
ROW_MAJOR: a TILE input is untilized first and tilized back after; the last dim is the last-dim factory over
the input viewed as [rows, W], an upper dim the higher-dim factory over [upper, dim, lower, W].

Both factories create c_0 and c_1, one page each, on the whole grid (READ_ALIGNMENT is 64 B):
- higher dim: 2 x 64 B + the page (a tile in tile mode, else a row of W values);
- last dim: sized by the alignment of the row's bytes s, as the factory's ternary chain evaluates: its first
  test, `READ_ALIGNMENT * 2 + (s & 0xF) == 0`, parses as `(128 + (s & 0xF)) == 0` and never holds, so a row
  that is a multiple of 8 B gives 2s, of 4 B 4s, of 2 B 8s, else 16s.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.repeat import repeat_programs
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(2, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> [(p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs]) for p in repeat_programs(x, (1, 2))]
    [('RepeatDeviceOperation', [((0,), 1, 2176), ((1,), 1, 2176)])]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim import dtypes
from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, Program, cached, grid_of, make_program, shape_of
from device_sim.programs import data_movement
from device_sim.programs.intermediate import Intermediate
from device_sim.types import BufferType, DataType, Layout

NAME = "RepeatDeviceOperation"
_READ_ALIGNMENT = 64  # repeat_program_factory_common.hpp
# RepeatDeviceOperation's row-major validation: "Can only work with UINT16, BFLOAT16, UINT32, INT32, FLOAT32 ..."
_ROW_MAJOR_DTYPES = {DataType.UINT16, DataType.BFLOAT16, DataType.UINT32, DataType.INT32, DataType.FLOAT32}


def repeat_programs(x, reps, out=None) -> tuple[Program, ...] | None:
    """The programs TT-NN's repeat runs to repeat `x` by `reps` (one count per dim, or more dims than x has);
    () when every count is 1 (TT-NN returns the input) or one is 0 (TT-NN fills zeros on the host). `out`, the
    result, sizes the tilize after a ROW_MAJOR trip. None where not modelled: a sharded input (TT-NN's sharded
    factories and its re-sharding), a host tensor, or a block-float input that is not whole tiles (TT-NN cannot
    lay it out ROW_MAJOR)."""
    if x.device() is None or x.is_sharded():
        return None
    reps = tuple(int(r) for r in reps)
    key = (NAME, shape_of(x), x.dtype, reps, grid_of(x.device()), shape_of(out) if out is not None else None)
    return cached(key, lambda: _programs(x, reps, out))


def _programs(x, reps, out) -> tuple[Program, ...] | None:
    if all(r == 1 for r in reps) or any(r == 0 for r in reps):
        return ()
    shape = (1,) * (len(reps) - x._value.dim()) + tuple(x._value.shape)  # match_input_rank's view
    reps = (1,) * (len(shape) - len(reps)) + reps
    tile_native = (x.layout == Layout.TILE and len(shape) >= 2 and shape[-1] % TILE == 0
                   and shape[-2] % TILE == 0)  # is_tile_repeat_eligible
    if not tile_native and x.dtype not in _ROW_MAJOR_DTYPES:
        return None
    rm = _build(grid_of(x.device()), shape, x.dtype, reps, tile_native)
    if tile_native or x.layout == Layout.ROW_MAJOR:
        return rm

    padded_in = tuple(x._value.shape[-2:]) != tuple(x.padded_shape[-2:])
    untilize = data_movement.untilize_program(
        x, x.dtype, name="UntilizeWithUnpaddingDeviceOperation" if padded_in else "UntilizeDeviceOperation")
    target = out if out is not None else x
    padded_out = tuple(target._value.shape[-2:]) != tuple(target.padded_shape[-2:])
    tilize = data_movement.tilize_program(x, x.dtype, out=out, name="TilizeWithValPaddingDeviceOperation"
                                          if padded_out else "TilizeDeviceOperation")
    return (untilize, *rm, tilize)


def repeat_interleave_programs(x, repeats: int, dim: int, out) -> tuple[Program, ...] | None:
    """The programs of TT-NN's repeat_interleave composite (repeat_interleave.cpp) repeating each entry of `x`
    `repeats` times along `dim` into `out`: over the last dim, a WH transpose before and after the rest, which is
    to_layout ROW_MAJOR (an untilize, with unpadding when x is not whole tiles), the input unsqueezed after `dim`
    (a view) and concatenated `repeats` times there, 32 copies a ConcatDeviceOperation (then one more joining the
    batches; ttnn::concat's output is DRAM, and a batch of one is its to_memory_config to DRAM: a copy from L1),
    reshaped (a view), tilized back and moved to the output's memory config (a copy when that is L1). One repeat
    is that last move alone. None where not modelled: a host or sharded tensor, rank 1, a dtype TT-NN typecasts
    to bfloat16 first (bfloat8_b, bfloat4_b, uint8), a ROW_MAJOR input over its last dim (the row-major
    transpose)."""
    if x.device() is None or x.is_sharded() or out.is_sharded() or x._value.dim() < 2:
        return None
    rank = x._value.dim()
    d = dim % rank
    tile = x.layout == Layout.TILE
    if x.dtype not in _ROW_MAJOR_DTYPES or (d == rank - 1 and not tile):
        return None
    in_l1 = x.memory_config().buffer_type == BufferType.L1
    out_l1 = out.memory_config().buffer_type == BufferType.L1
    if repeats == 1:  # to_memory_config(input, the output's config): a copy when the buffer type changes
        if in_l1 == out_l1:
            return ()
        return (data_movement.copy_program(x, out.dtype),)
    key = ("repeat_interleave", shape_of(x), x.dtype, repeats, d, in_l1, out_l1, grid_of(x.device()))
    return cached(key, lambda: _interleave(x, repeats, d, in_l1, out_l1))


def _interleave(x, repeats, d, in_l1, out_l1) -> tuple[Program, ...]:
    def padded(s):
        return s[-1] % TILE or s[-2] % TILE

    dev, shape, dtype, tile = x.device(), tuple(x._value.shape), x.dtype, x.layout == Layout.TILE
    programs = []
    last = d == len(shape) - 1
    if last:  # transpose(-1, -2), then the composite over -2
        programs.append(data_movement.transpose_wh_shape_program(dev, shape, dtype))
        shape, d = (*shape[:-2], shape[-1], shape[-2]), d - 1
        in_l1 = out_l1  # the transpose writes into the output's memory config
    if tile:
        programs.append(data_movement.untilize_shape_program(
            dev, shape, dtype, name="UntilizeWithUnpaddingDeviceOperation" if padded(shape) else
            "UntilizeDeviceOperation"))
    unsqueezed = (*shape[:d + 1], 1, *shape[d + 1:])
    batches = [min(32, repeats - i) for i in range(0, repeats, 32)]
    for b in batches:
        if b > 1:
            programs.append(data_movement.concat_shape_program(
                dev, (*unsqueezed[:d + 1], b, *unsqueezed[d + 2:]), dtype, Layout.ROW_MAJOR))
        elif in_l1:  # a batch of one: concat's to_memory_config of the unsqueezed input to DRAM
            programs.append(data_movement.copy_program(Intermediate(x, unsqueezed, dtype, Layout.ROW_MAJOR), dtype))
    if len(batches) > 1:
        programs.append(data_movement.concat_shape_program(
            dev, (*unsqueezed[:d + 1], repeats, *unsqueezed[d + 2:]), dtype, Layout.ROW_MAJOR))
    final = (*shape[:d], shape[d] * repeats, *shape[d + 1:])
    if tile:
        programs.append(data_movement.tilize_shape_program(
            dev, final, dtype, dtype, name="TilizeWithValPaddingDeviceOperation" if padded(final) else
            "TilizeDeviceOperation"))
    if out_l1:  # to_memory_config from concat's DRAM to the output's L1
        programs.append(data_movement.copy_program(Intermediate(x, final, dtype), dtype))
    if last:
        programs.append(data_movement.transpose_wh_shape_program(dev, final, dtype))
    return tuple(programs)


def _build(grid, shape, dtype, reps, tile_native) -> tuple[Program, ...]:
    gx, gy = grid
    whole = ((0, 0, gx - 1, gy - 1),)
    width = 0 if tile_native else shape[-1] * dtypes.ELEMENT_SIZE[dtype]  # a row's bytes; grows with the last dim
    programs = []
    for dim in range(len(shape) - 1, -1, -1):  # repeat.cpp walks the repetitions from the last dim
        r = reps[dim]
        if r == 1:
            continue
        if tile_native:
            size, factory = 2 * _READ_ALIGNMENT + TILE_BYTES[dtype], "RepeatProgramFactoryHigherDim"
        elif dim == len(shape) - 1:
            size, factory = _last_dim_cb(width), "RepeatProgramFactoryLastDim"
            width *= r
        else:
            size, factory = 2 * _READ_ALIGNMENT + width, "RepeatProgramFactoryHigherDim"
        programs.append(make_program(NAME, factory, (CircularBuffer((0,), 1, size), CircularBuffer((1,), 1, size)),
                                     whole))
    return tuple(programs)


def _last_dim_cb(row: int) -> int:
    """The last-dim factory's CB bytes for rows of `row` bytes (its ternary chain; see the module docstring)."""
    if row % 8 == 0:
        return 2 * row
    if row % 4 == 0:
        return 4 * row
    return 8 * row if row % 2 == 0 else 16 * row
