"""GPT-OSS's MoE router device operation: TopkRouterGptDeviceOperation.

tt-metal's ttnn/cpp/ttnn/operations/experimental/topk_router_gpt/device/topk_router_gpt_program_factory.cpp.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.router import topk_router_gpt_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.zeros(32, 2880), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = topk_router_gpt_program(x, 4)
    >>> len(p.ranges), p.cbs[0].num_pages   # the 12 DRAM-bank cores; 90 K tiles in thirds
    (12, 30)
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE_BYTES, CircularBuffer, Program, cached, make_program, shape_of
from device_sim.types import DataType

_CORES = 12  # 4 groups of 3 cores, one group a 32-expert tile of the 128
_BF16 = TILE_BYTES[DataType.BFLOAT16]


def topk_router_gpt_program(x, k: int) -> Program:
    """TopkRouterGptProgramFactory on the first 12 of get_optimal_dram_bank_to_logical_worker_assignment's cores
    (it refuses fewer). The collector's CBs, the most any core holds (senders have only c_0-c_3, workers c_0-c_9):
    c_0 / c_1 the weight's and input's K tiles of one core (a third of them, rounded up), c_2 the two senders'
    partials, c_3, c_4, c_5, c_6 one tile each, c_8 / c_9 the 4 groups' logits and indices, c_10 two tiles and
    c_11-c_15 one each (topk and softmax), c_16 two (weights and indices), all Float16_b; and c_19, the 2 x 32 rows
    of round_up(k, 8) uint16 / bfloat16 values the writer lays out."""
    dev = x.device()
    key = ("TopkRouterGptDeviceOperation", shape_of(x), k, dev.config.grid_x, dev.config.grid_y)

    def build():
        cores = dev.get_optimal_dram_bank_to_logical_worker_assignment()
        if len(cores) < _CORES:
            raise RuntimeError(f"topk_router_gpt requires at least {_CORES} DRAM-aligned cores, got {len(cores)}")
        k_tiles = -(-x.padded_shape[-1] // 32 // 3)
        tiles = [((0,), k_tiles), ((1,), k_tiles), ((2,), 2), ((3,), 1), ((4,), 1), ((5,), 1), ((6,), 1), ((8,), 4),
                 ((9,), 4), ((10,), 2), ((11,), 1), ((12,), 1), ((13,), 1), ((14,), 1), ((15,), 1), ((16,), 2)]
        k_padded = -(-k // 8) * 8
        cbs = [CircularBuffer(i, n, _BF16) for i, n in tiles] + [CircularBuffer((19,), 1, 2 * 32 * k_padded * 2)]
        return make_program("TopkRouterGptDeviceOperation", "TopkRouterGptProgramFactory", cbs,
                            tuple((c.x, c.y, c.x, c.y) for c in cores[:_CORES]))

    return cached(key, build)
