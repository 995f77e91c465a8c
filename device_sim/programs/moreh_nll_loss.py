"""moreh's NLL loss device operations: MorehNllLossStep1/Step2DeviceOperation, MorehNllLossBackwardDeviceOperation and
MorehNllLossUnreducedBackwardDeviceOperation.

tt-metal's ttnn/cpp/ttnn/operations/moreh/moreh_nll_loss/moreh_nll_loss_step{1,2}/device/*_program_factory.cpp,
moreh_nll_loss_backward/device/ and moreh_nll_loss_unreduced_backward/device/. Each splits its units of work over the
grid with split_work_to_cores; the weight's CB holds its ceil(C / 32) tiles (0 pages without a weight).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.moreh_nll_loss import step1_program
    >>> dev = ttnn.open_device()
    >>> target = ttnn.from_torch(torch.zeros(64, 64, dtype=torch.int32), ttnn.int32, layout=ttnn.TILE, device=dev)
    >>> p = step1_program(target, channels=10, weight=True, fp32_dest_acc_en=False)
    >>> [(cb.indices[0], cb.num_pages) for cb in p.cbs], p.ranges   # 4 target tiles: 4 cores, column by column
    ([(0, 1), (1, 1), (24, 1), (16, 1), (7, 1)], ((0, 0, 0, 3),))
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, Program, cached, grid_of, make_program, split_work
from device_sim.types import DataType

_BF16, _F32, _I32 = DataType.BFLOAT16, DataType.FLOAT32, DataType.INT32


def _tiles(shape) -> int:
    """A padded shape's tiles."""
    outer = 1
    for v in shape[:-2]:
        outer *= v
    return outer * shape[-2] // TILE * shape[-1] // TILE


def _program(name: str, cbs: list, units: int, device) -> Program:
    return make_program(name, name.replace("DeviceOperation", "Factory"),
                        [CircularBuffer((i,), n, size) for i, n, size in cbs], split_work(units, *grid_of(device)))


def step1_program(target, *, channels: int, weight: bool, fp32_dest_acc_en: bool) -> Program:
    """Step 1 (the weights each target takes, for a mean's divisor): c_0 a target tile (Int32), c_1 the weight's
    tiles, c_24 one intermediate tile (Float32 with an fp32 destination), c_16 one output tile, c_7 a scratch tile
    with a weight; one target tile a unit."""
    key = ("MorehNllLossStep1DeviceOperation", tuple(target.padded_shape), channels, weight, fp32_dest_acc_en,
           grid_of(target.device()))
    im = TILE_BYTES[_F32 if fp32_dest_acc_en else _BF16]

    def build():
        w_tiles = -(-channels // TILE) if weight else 0
        cbs = [(0, 1, TILE_BYTES[_I32]), (1, w_tiles, TILE_BYTES[_BF16]), (24, 1, im), (16, 1, TILE_BYTES[_BF16])]
        cbs += [(7, 1, TILE_BYTES[_BF16])] if weight else []
        return _program("MorehNllLossStep1DeviceOperation", cbs, _tiles(target.padded_shape), target.device())

    return cached(key, build)


def step2_program(x, target, *, weight: bool, divisor: bool, fp32_dest_acc_en: bool) -> Program:
    """Step 2 (each position's -input[target] * weight, / divisor for a mean): c_0 input, c_1 target (Int32), c_2
    the weight (one tile; the 4-D factory holds its ceil(C / 32)), c_3 the divisor, c_24-c_28 intermediates
    (Float32 with an fp32 destination), c_16 the output, c_7 a scratch tile with a weight; one target tile a unit."""
    key = ("MorehNllLossStep2DeviceOperation", tuple(x.padded_shape), weight, divisor, fp32_dest_acc_en,
           grid_of(x.device()))
    im = TILE_BYTES[_F32 if fp32_dest_acc_en else _BF16]

    def build():
        shape = x.padded_shape
        w_tiles = (-(-shape[1] // TILE) if len(shape) >= 4 else 1) if weight else 0
        bf16 = TILE_BYTES[x.dtype]
        cbs = [(0, 1, bf16), (1, 1, TILE_BYTES[_I32]), (2, w_tiles, bf16), (3, int(divisor), bf16)]
        cbs += [(i, 1, im) for i in (24, 25, 26, 27, 28)] + [(16, 1, bf16)] + ([(7, 1, bf16)] if weight else [])
        return _program("MorehNllLossStep2DeviceOperation", cbs, _tiles(target.padded_shape), x.device())

    return cached(key, build)


def backward_program(input_grad, *, channels: int, weight: bool, divisor: bool, fp32_dest_acc_en: bool) -> Program:
    """The reduced loss's backward: c_0 the output gradient, c_1 target (Int32), c_2 the weight's tiles, c_3 the
    divisor, c_24-c_26 intermediates, c_16 the input gradient, c_7 a scratch tile with a weight; one input-gradient
    tile a unit."""
    key = ("MorehNllLossBackwardDeviceOperation", tuple(input_grad.padded_shape), channels, weight, divisor,
           fp32_dest_acc_en, grid_of(input_grad.device()))
    im = TILE_BYTES[_F32 if fp32_dest_acc_en else _BF16]

    def build():
        bf16 = TILE_BYTES[_BF16]
        cbs = [(0, 1, bf16), (1, 1, TILE_BYTES[_I32]), (2, -(-channels // TILE) if weight else 0, bf16),
               (3, int(divisor), bf16)] + [(i, 1, im) for i in (24, 25, 26)] + [(16, 1, bf16)]
        cbs += [(7, 1, bf16)] if weight else []
        return _program("MorehNllLossBackwardDeviceOperation", cbs, _tiles(input_grad.padded_shape),
                        input_grad.device())

    return cached(key, build)


def unreduced_backward_program(input_grad, *, channels: int, weight: bool) -> Program:
    """The unreduced loss's backward: c_0 target (Int32), c_1 the output gradient's N tiles, c_2 the weight's
    tiles, c_16 the input gradient; one input-gradient tile a unit."""
    key = ("MorehNllLossUnreducedBackwardDeviceOperation", tuple(input_grad.padded_shape), channels, weight,
           grid_of(input_grad.device()))

    def build():
        bf16, shape = TILE_BYTES[_BF16], input_grad.padded_shape
        cbs = [(0, 1, TILE_BYTES[_I32]), (1, -(-shape[0] // TILE), bf16),
               (2, -(-channels // TILE) if weight else 0, bf16), (16, 1, bf16)]
        return _program("MorehNllLossUnreducedBackwardDeviceOperation", cbs, _tiles(shape), input_grad.device())

    return cached(key, build)
