"""IndexFillOperation: ttnn.index_fill's one program.

tt-metal's ttnn/cpp/ttnn/operations/index_fill/device/index_fill_multi_core_factory.cpp, over a ROW_MAJOR
interleaved input: c_0 of two input pages, c_1 holding the whole index tensor, c_2 of one page (an input row
filled with the value), on the cores split_work_to_cores gives the rows. Pages are the buffers' aligned pages
(the device's DRAM or L1 alignment: 32 B and 16 B on Wormhole).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.index_fill import index_fill_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.zeros(4, 12), device=dev)
    >>> i = ttnn.from_torch(torch.tensor([0, 2]), device=dev)
    >>> p = index_fill_program(x, i)
    >>> p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs], p.ranges
    ('IndexFillOperation', [((0,), 2, 64), ((1,), 1, 32), ((2,), 1, 64)], ((0, 0, 0, 3),))
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim import dtypes
from device_sim.device_work import (
    CircularBuffer,
    Program,
    aligned_page,
    cached,
    grid_of,
    make_program,
    shape_of,
    split_work,
)
from device_sim.types import Layout


def index_fill_program(x, index) -> Program:
    """The IndexFillOperation that fills rows of `x` (ROW_MAJOR, interleaved) picked by `index` (1-D UINT32)."""
    dev = x.device()
    key = ("IndexFillOperation", shape_of(x), x.dtype, shape_of(index), grid_of(dev))

    def build():
        shape = tuple(x.padded_shape)
        page = aligned_page(x, dtypes.page_size(x.dtype, Layout.ROW_MAJOR, shape))
        index_bytes = aligned_page(index, index.shape[0] * dtypes.ELEMENT_SIZE[index.dtype])
        return make_program("IndexFillOperation", "IndexFillMultiCoreFactory",
                            (CircularBuffer((0,), 2, page), CircularBuffer((1,), 1, index_bytes),
                             CircularBuffer((2,), 1, page)),
                            split_work(dtypes.num_pages(Layout.ROW_MAJOR, shape), *grid_of(dev)))

    return cached(key, build)
