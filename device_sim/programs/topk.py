"""TopKDeviceOperation as TT-NN's topk composite runs it, with the transposes around it.

tt-metal's ttnn/cpp/ttnn/operations/reduction/topk/: topk.cpp moves the reduced dim last (ttnn::transpose(dim, -1)
unless it is last already), views the tensor as 4-D, pads the last dim up to min_dim_per_core (64) with -inf
(+inf for the smallest), fills the tile padding the same way, runs TopKDeviceOperation with k rounded up to whole
tiles, slices the results back to k and transposes both back. TopKDeviceOperation picks its multi-core factory for
a last dim of at least multi_core_min_width (8192) that is a power of two with k <= 64 (when
find_topk_core_config finds a core split), else its "single-core" factory
(device/topk_single_core_program_factory.cpp), which splits the Ht rows of tiles over the grid row by row
(split_work_to_cores, row_wise) and creates, in the indices' format (UINT16 while the dim fits, else UINT32):

    c_0 2 input tiles, c_1 2 index tiles, c_2 4 and c_4 2 x Kt tiles in the compute format (bfloat16 for a
    bfloat8_b input, else the input's), c_3 4 and c_5 2 x Kt index tiles, c_6 Kt value tiles, c_7 Kt index tiles

Modelled: an interleaved bfloat16 / bfloat8_b TILE input of rank <= 4 reduced over its last or second-to-last dim,
both of its last two dims whole tiles, the reduced dim at least 64 long (no pad, no padding fill) and k a multiple
of 32 (no slice); the single-core factory. Anything else launches nothing (None): see docs/device_work.md.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.topk import topk_programs
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> [(p.name, p.ranges) for p in topk_programs(x, 32, -1)]
    [('TopKDeviceOperation', ((0, 0, 1, 0),))]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, Program, cached, grid_of, make_program, split_work
from device_sim.programs import data_movement
from device_sim.types import DataType, Layout

NAME = "TopKDeviceOperation"
_MULTI_CORE_MIN_WIDTH = 8192  # topk_constants.hpp
_MIN_DIM_PER_CORE = 64
_DTYPES = {DataType.BFLOAT16, DataType.BFLOAT8_B}  # validate: "Input tensor must be BFLOAT16, or BFLOAT8_B"


def index_dtype(width: int) -> DataType:
    """compute_output_specs' index dtype: UINT16 while the reduced dim is at most 65535 long, else UINT32."""
    return DataType.UINT16 if width <= 65535 else DataType.UINT32


def topk_programs(x, k: int, dim: int) -> tuple[Program, ...] | None:
    """The programs TT-NN's topk runs for the k best of `x` along `dim`, in order (a transpose first and two after
    when `dim` is the second-to-last); None where not modelled (see the module docstring)."""
    if x._device is None or x.is_sharded() or x.layout != Layout.TILE or x.dtype not in _DTYPES:
        return None
    shape = tuple(x._value.shape)
    rank = len(shape)
    if not 2 <= rank <= 4 or dim % rank < rank - 2 or shape[-1] % TILE or shape[-2] % TILE or k % TILE:
        return None
    last = dim % rank == rank - 1
    width = shape[-1] if last else shape[-2]
    if width < _MIN_DIM_PER_CORE:
        return None  # TT-NN pads the dim to 64 first (not modelled)
    if width >= _MULTI_CORE_MIN_WIDTH and width & (width - 1) == 0 and k <= 64:
        return None  # the multi-core factory (not modelled)
    dev = x._device
    key = (NAME, shape, x.dtype, k, last, grid_of(dev))
    return cached(key, lambda: _build(dev, shape, x.dtype, k, last))


def _build(dev, shape, dtype, k, last) -> tuple[Program, ...]:
    moved = shape if last else (*shape[:-2], shape[-1], shape[-2])  # the reduced dim last
    rows = 1
    for d in moved[:-1]:
        rows *= d
    ht, kt = rows // TILE, k // TILE
    idx = index_dtype(moved[-1])
    value, index = TILE_BYTES[dtype], TILE_BYTES[idx]
    compute = TILE_BYTES[DataType.BFLOAT16] if dtype == DataType.BFLOAT8_B else value
    cbs = (CircularBuffer((0,), 2, value), CircularBuffer((1,), 2, index), CircularBuffer((2,), 4, compute),
           CircularBuffer((3,), 4, index), CircularBuffer((4,), 2 * kt, compute), CircularBuffer((5,), 2 * kt, index),
           CircularBuffer((6,), kt, value), CircularBuffer((7,), kt, index))
    topk = make_program(NAME, "TopKSingleCoreProgramFactory", cbs, split_work(ht, *grid_of(dev), row_wise=True))
    if last:
        return (topk,)
    result = (*moved[:-1], k)  # TopK's outputs, transposed back: values, then indices
    return (data_movement.transpose_wh_shape_program(dev, shape, dtype), topk,
            data_movement.transpose_wh_shape_program(dev, result, dtype),
            data_movement.transpose_wh_shape_program(dev, result, idx))
