"""BatchNormOperation and RunningStatistics (ttnn.batch_norm's two device operations) as TT-NN builds them.

tt-metal's ttnn/cpp/ttnn/operations/normalization/batch_norm/device/batch_norm_program_factory.cpp and
running_statistics_program_factory.cpp: both create their CBs on the device's whole worker grid, two tiles
each. BatchNorm: c_0 input, c_1 batch mean, c_2 output, c_3 batch var, c_4 eps, c_5 weight, c_6 bias (bfloat16
when absent), c_7 1/sqrt(var + eps) and c_8 a temporary in the intermediate format (float32 when any operand is,
else the input's); a float32 intermediate with another output format stages the output in c_2 and adds c_9.
RunningStatistics: c_0 batch mean, c_1 batch var, c_2 its output, c_3/c_4 the old running mean/var, c_5
momentum, c_6 one, c_7/c_8 the updated mean/var, c_9/c_10 temporaries; float32 staging adds c_12/c_13.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.batch_norm import batch_norm_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 2, 32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> m = ttnn.from_torch(torch.ones(1, 2, 1, 1), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = batch_norm_program(x, m, m, None, None, x.dtype)
    >>> p.name, [cb.indices[0] for cb in p.cbs]
    ('BatchNormOperation', [0, 1, 2, 3, 4, 5, 6, 7, 8])
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE_BYTES, CircularBuffer, Program, cached, grid_of, make_program
from device_sim.types import DataType

_BF16, _F32 = DataType.BFLOAT16, DataType.FLOAT32


def _dtype(t) -> DataType:
    return t.dtype if t is not None else _BF16


def batch_norm_program(x, mean, var, weight, bias, out_dtype: DataType) -> Program:
    """BatchNormFactory's CBs for input x, the batch (or running) mean and var, optional weight and bias."""
    formats = (x.dtype, mean.dtype, out_dtype, var.dtype, _dtype(weight), _dtype(bias))
    grid = grid_of(x.device())

    def build():
        a, b, c, d, e, f = formats
        interm = _F32 if _F32 in formats else a
        staged = interm == _F32 and c != _F32
        cbs = [CircularBuffer((0,), 2, TILE_BYTES[a]), CircularBuffer((1,), 2, TILE_BYTES[b]),
               CircularBuffer((2,), 2, TILE_BYTES[interm if staged else c])]
        if staged:
            cbs.append(CircularBuffer((9,), 2, TILE_BYTES[c]))
        cbs += [CircularBuffer((3,), 2, TILE_BYTES[d]), CircularBuffer((4,), 2, TILE_BYTES[interm]),
                CircularBuffer((5,), 2, TILE_BYTES[e]), CircularBuffer((6,), 2, TILE_BYTES[f]),
                CircularBuffer((7,), 2, TILE_BYTES[interm]), CircularBuffer((8,), 2, TILE_BYTES[interm])]
        return make_program("BatchNormOperation", "BatchNormFactory", cbs, ((0, 0, grid[0] - 1, grid[1] - 1),))

    return cached(("BatchNormOperation", formats, grid), build)


def running_statistics_program(mean, var, running_mean, running_var) -> Program:
    """RunningStatisticsProgramFactory's CBs: the batch statistics and the running ones they update."""
    formats = (mean.dtype, var.dtype, mean.dtype, _dtype(running_mean), _dtype(running_var))
    grid = grid_of(mean.device())

    def build():
        a, b, c, d, e = formats
        interm = _F32 if _F32 in formats else a
        m_staged, v_staged = interm == _F32 and d != _F32, interm == _F32 and e != _F32
        cbs = [CircularBuffer((0,), 2, TILE_BYTES[a]), CircularBuffer((1,), 2, TILE_BYTES[b]),
               CircularBuffer((2,), 2, TILE_BYTES[c]), CircularBuffer((3,), 2, TILE_BYTES[d]),
               CircularBuffer((4,), 2, TILE_BYTES[e]), CircularBuffer((5,), 2, TILE_BYTES[interm]),
               CircularBuffer((6,), 2, TILE_BYTES[interm]),
               CircularBuffer((7,), 2, TILE_BYTES[interm if m_staged else d]),
               CircularBuffer((8,), 2, TILE_BYTES[interm if v_staged else e])]
        cbs += [CircularBuffer((12,), 2, TILE_BYTES[d])] if m_staged else []
        cbs += [CircularBuffer((13,), 2, TILE_BYTES[e])] if v_staged else []
        cbs += [CircularBuffer((9,), 2, TILE_BYTES[interm]), CircularBuffer((10,), 2, TILE_BYTES[interm])]
        return make_program("RunningStatistics", "RunningStatisticsProgramFactory", cbs,
                            ((0, 0, grid[0] - 1, grid[1] - 1),))

    return cached(("RunningStatistics", formats, grid), build)
