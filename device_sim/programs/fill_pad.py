"""FillPadDeviceOperation: the program TT-NN's fill_implicit_tile_padding runs to write a value into a TILE tensor's
tile padding (topk, sort and gather fill it before their device operations).

tt-metal's ttnn/cpp/ttnn/operations/data_movement/fill_pad/: fill_pad.cpp returns the tensor as it is when its
last two dims are whole tiles; otherwise it views a tensor of rank over 3 as [upper dims, H, W] and runs
FillPadDeviceOperation in place (a bfloat8_b tensor is typecast to bfloat16 and back around it: not modelled).
device/fill_pad_program_factory.cpp: c_0 holds two pages of one face row (16 values) plus 2 B, in the tensor's
format, on the cores split_work_to_cores (column by column) gives the [H, W] matrices.

Example:
    >>> import device_sim as ttnn
    >>> from device_sim.programs.fill_pad import fill_pad_program
    >>> dev = ttnn.open_device()
    >>> p = fill_pad_program(dev, (1, 2, 32, 8), ttnn.uint32)
    >>> p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs], p.ranges
    ('FillPadDeviceOperation', [((0,), 2, 66)], ((0, 0, 0, 1),))
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim import dtypes
from device_sim.device_work import TILE, CircularBuffer, Program, cached, grid_of, make_program, split_work
from device_sim.types import DataType

NAME = "FillPadDeviceOperation"
_FACE_HEIGHT = 16


def needs_fill(shape) -> bool:
    """Whether fill_implicit_tile_padding runs a program for a tensor of logical `shape`: its last two dims are not
    whole tiles."""
    return bool(shape[-1] % TILE or (len(shape) > 1 and shape[-2] % TILE))


def fill_pad_program(dev, shape, dtype: DataType) -> Program | None:
    """The FillPad program over a TILE tensor of logical `shape` (rank >= 3, or its 3-D view) and `dtype`; None for
    a block-float dtype (TT-NN typecasts around it: not modelled)."""
    if dtype.is_block_float:
        return None
    key = (NAME, tuple(shape), dtype, grid_of(dev))

    def build():
        matrices = 1
        for d in shape[:-2]:
            matrices *= d
        page = dtypes.ELEMENT_SIZE[dtype] * _FACE_HEIGHT + 2  # + sizeof(uint16_t), as the factory sizes it
        return make_program(NAME, "FillPadProgramFactory", (CircularBuffer((0,), 2, page),),
                            split_work(matrices, *grid_of(dev)))

    return cached(key, build)
