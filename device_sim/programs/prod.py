"""ProdAllDeviceOperation and ProdNcDeviceOperation as TT-NN's prod runs them.

tt-metal's ttnn/cpp/ttnn/operations/reduction/prod/: prod.cpp multiplies everything (dim=None) with ProdAll, one
core (0, 0) streaming the input through c_0 (two input tiles) into c_3 (two output tiles), the last step on the
host (prod_result_computation_WH_B0: no program). Over one dim of a tensor of rank <= 4 it views the input as 4-D;
dims 0 and 1 of that view go straight to ProdNc (device/prod_nc_program_factory.cpp: c_0 two, c_1 one, c_2 one and
c_3 two tiles in the output's format, over the output's tiles with split_work_to_cores, column by column), while
dims 2 and 3 are permuted to the front, multiplied, permuted back and sliced (not modelled: None).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.prod import prod_programs
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(4, 2, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> [(p.name, [cb.indices[0] for cb in p.cbs], p.ranges) for p in prod_programs(x, 0)]
    [('ProdNcDeviceOperation', [0, 1, 2, 3], ((0, 0, 0, 3),))]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE_BYTES, CircularBuffer, Program, cached, grid_of, make_program, split_work, tiles
from device_sim.types import Layout


def prod_programs(x, dim: int | None) -> tuple[Program, ...] | None:
    """The programs TT-NN's prod runs over `dim` of `x` (None: every dim); None where not modelled: a host,
    sharded or ROW_MAJOR tensor (TT-NN's AutoFormat tilizes it first), rank over 4, or a dim that is 2 or 3 of the
    4-D view (its permutes and slice)."""
    if x._device is None or x.is_sharded() or x.layout != Layout.TILE:
        return None
    shape = tuple(x._value.shape)
    rank = len(shape)
    if dim is None:
        key = ("ProdAllDeviceOperation", x.dtype)
        return cached(key, lambda: (make_program("ProdAllDeviceOperation", "ProdAllProgramFactory", (
            CircularBuffer((0,), 2, TILE_BYTES[x.dtype]), CircularBuffer((3,), 2, TILE_BYTES[x.dtype])),
            ((0, 0, 0, 0),)),))
    if not 1 <= rank <= 4:
        return None
    dim4 = dim % rank + 4 - rank
    if dim4 > 1:
        return None
    shape4 = (1,) * (4 - rank) + shape
    out = (shape4[0] if dim4 == 1 else 1, 1 if dim4 == 1 else shape4[1], shape4[2], shape4[3])  # prod.cpp's zeros
    dev = x._device
    key = ("ProdNcDeviceOperation", out, x.dtype, grid_of(dev))

    def build():
        n_tiles = out[0] * out[1] * tiles(out[2]) * tiles(out[3])
        page = TILE_BYTES[x.dtype]
        cbs = (CircularBuffer((0,), 2, page), CircularBuffer((1,), 1, page), CircularBuffer((2,), 1, page),
               CircularBuffer((3,), 2, page))
        return (make_program("ProdNcDeviceOperation", "ProdNcProgramFactory", cbs, split_work(n_tiles, *grid_of(dev))),)

    return cached(key, build)
