"""ArgMaxDeviceOperation as TT-NN's argmax device operation picks and builds it, and PlusOneDeviceOperation.

tt-metal's ttnn/cpp/ttnn/operations/reduction/argmax/device/: argmax_device_operation.cpp sends a
ROW_MAJOR input reduced over its last dim (or over everything) to the multi-core factory and every other
case, a TILE input reduced over W or H among them, to argmax_single_core_program_factory.cpp, whose one
core (0, 0) holds one input page in c_0 (a tile, or a row of the reduced dim) and one output page in c_1
(the uint32 output is ROW_MAJOR: a row of its last dim). The multi-core factory is not modelled (None).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.indexing import argmax_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(2, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = argmax_program(x, -1, False)
    >>> p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs], p.ranges
    ('ArgMaxDeviceOperation', [((0,), 1, 2048), ((1,), 1, 128)], ((0, 0, 0, 0),))
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim import dtypes
from device_sim.device_work import TILE_BYTES, CircularBuffer, Program, cached, make_program, shape_of
from device_sim.types import Layout

_UINT32_BYTES = 4


def argmax_program(x, dim: int | None, keepdim: bool) -> Program | None:
    """The single-core ArgMaxDeviceOperation of `x` over `dim` (None: every dim); None where TT-NN takes the
    multi-core factory (a ROW_MAJOR input over its last dim or everything) or refuses (a TILE input over another
    dim, or over everything), or for a sharded input."""
    if x.device() is None or x.is_sharded():
        return None
    shape = tuple(x._value.shape)
    rank = len(shape)
    red = None if dim is None else dim % max(rank, 1)
    if x.layout == Layout.ROW_MAJOR or red is None or red < rank - 2:
        return None  # the multi-core factory, or a call TT-NN refuses for a TILE input
    key = ("ArgMaxDeviceOperation", shape_of(x), x.dtype, red, keepdim)

    def build():
        out_shape = [1 if d == red else n for d, n in enumerate(shape) if d != red or keepdim]
        out_row = (out_shape[-1] if out_shape else 1) * _UINT32_BYTES
        cbs = (CircularBuffer((0,), 1, TILE_BYTES[x.dtype]), CircularBuffer((1,), 1, out_row))
        return make_program("ArgMaxDeviceOperation", "ArgMaxSingleCoreProgramFactory", cbs, ((0, 0, 0, 0),))

    return cached(key, build)


def plus_one_program(x) -> Program | None:
    """PlusOneDeviceOperation (experimental/plusone/device/plusone_program_factory.cpp): one core, (0, 0), holds
    one row of the last dim (padded width x element size, rounded up to 32 B) in c_0 and steps through the rows;
    a sharded input's CB is its own buffer (globally allocated)."""
    if x.device() is None:
        return None
    key = ("PlusOneDeviceOperation", shape_of(x), x.dtype, x.is_sharded())

    def build():
        width = tuple(x.padded_shape)[-1] if x._value.dim() else 1
        row = -(-width * dtypes.ELEMENT_SIZE[x.dtype] // 32) * 32
        return make_program("PlusOneDeviceOperation", "PlusOneProgramFactory",
                            (CircularBuffer((0,), 1, row, x.is_sharded()),), ((0, 0, 0, 0),))

    return cached(key, build)
