"""ProdAllDeviceOperation and ProdNcDeviceOperation as TT-NN's prod runs them.

tt-metal's ttnn/cpp/ttnn/operations/reduction/prod/: prod.cpp multiplies everything (dim=None) with ProdAll, one
core (0, 0) streaming the input through c_0 (two input tiles) into c_3 (two output tiles), the last step on the
host (prod_result_computation_WH_B0: no program). Over one dim of a tensor of rank <= 4 it views the input as 4-D;
dims 0 and 1 of that view go straight to ProdNc (device/prod_nc_program_factory.cpp: c_0 two, c_1 one, c_2 one and
c_3 two tiles in the output's format, over the output's tiles with split_work_to_cores, column by column), while
dims 2 and 3 are permuted to the front (2, 0, 1, 3 / 3, 0, 1, 2), multiplied over dim 0, permuted back
(1, 2, 0, 3), sliced (the whole result: no program) and, for dim 3, permuted once more (0, 1, 3, 2); the permutes
are device_sim.programs.shape's, on stand-ins for the intermediate tensors.

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
from device_sim.programs import shape as shape_programs
from device_sim.programs.intermediate import Intermediate
from device_sim.types import Layout


def prod_programs(x, dim: int | None) -> tuple[Program, ...] | None:
    """The programs TT-NN's prod runs over `dim` of `x` (None: every dim), in order; None where not modelled: a
    host, sharded or ROW_MAJOR tensor (TT-NN's AutoFormat tilizes it first), rank over 4, or a permute
    device_sim.programs.shape does not model."""
    if x.device() is None or x.is_sharded() or x.layout != Layout.TILE:
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
    shape4 = (1,) * (4 - rank) + shape
    dev = x.device()
    key = ("ProdNcDeviceOperation", shape4, dim4, x.dtype, x.memory_config().buffer_type, grid_of(dev))
    return cached(key, lambda: _over_one_dim(x, shape4, dim4))


def _prod_nc(dev, out, dtype) -> Program:
    n_tiles = out[0] * out[1] * tiles(out[2]) * tiles(out[3])
    page = TILE_BYTES[dtype]
    cbs = (CircularBuffer((0,), 2, page), CircularBuffer((1,), 1, page), CircularBuffer((2,), 1, page),
           CircularBuffer((3,), 2, page))
    return make_program("ProdNcDeviceOperation", "ProdNcProgramFactory", cbs, split_work(n_tiles, *grid_of(dev)))


def _over_one_dim(x, shape4, dim4) -> tuple[Program, ...] | None:
    dev, dtype = x.device(), x.dtype
    if dim4 <= 1:  # prod_nc straight on the 4-D view; its output is prod.cpp's zeros of the reduced shape
        out = (shape4[0] if dim4 == 1 else 1, 1 if dim4 == 1 else shape4[1], shape4[2], shape4[3])
        return (_prod_nc(dev, out, dtype),)
    # dims 2 / 3: permuted to the front, prod_nc over dim 0, permuted back by (1, 2, 0, 3); the slice that follows
    # keeps the whole result (no program), and dim 3 is permuted back once more by (0, 1, 3, 2)
    order = (2, 0, 1, 3) if dim4 == 2 else (3, 0, 1, 2)
    moved = tuple(shape4[d] for d in order)
    out = (1, *moved[1:])
    back = (out[1], out[2], 1, out[3])
    steps = [(shape4, moved, order), None, (out, back, (1, 2, 0, 3))]
    if dim4 == 3:
        steps.append((back, (back[0], back[1], back[3], 1), (0, 1, 3, 2)))
    programs = []
    for step in steps:
        if step is None:
            programs.append(_prod_nc(dev, out, dtype))
            continue
        src, dst, dims = step
        permute = shape_programs.permute_programs(Intermediate(x, src, dtype), Intermediate(x, dst, dtype), dims)
        if permute is None:
            return None
        programs += permute
    return tuple(programs)
