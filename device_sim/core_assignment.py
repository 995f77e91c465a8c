"""Which worker core sits next to each DRAM bank: `device.get_optimal_dram_bank_to_logical_worker_assignment(noc)`.

    import device_sim as ttnn
    device = ttnn.open_device(device_id=0)
    cores = device.get_optimal_dram_bank_to_logical_worker_assignment(ttnn.NOC.NOC_0)   # 12 CoreCoords, bank order

tt-metal works it out from the chip's physical (NOC0) grid: Device::get_optimal_dram_bank_to_logical_worker_assignment
(tt_metal/impl/device/device.cpp) takes each DRAM view's worker endpoint (soc_descriptors/wormhole_b0_80_arch.yaml),
places a worker to its right, moves the ones on harvested or doubled rows (reassign_dram_interface_cores_for_wormhole,
tt_metal/common/core_assignment.cpp) and translates them to logical coordinates. The answer depends on which tensix
rows the chip has harvested; device_sim's 8x8-worker chip is a Wormhole B0 with its last two tensix rows (NOC0 y 10
and 11) harvested, so logical rows 0-7 are NOC0 rows 1-5 and 7-9.
"""

from __future__ import annotations

import functools

# wormhole_b0_80_arch.yaml: each DRAM channel's three NOC0 endpoints (x-y), and each of the 12 DRAM views (banks) as
# (channel, worker endpoint) — its worker_endpoint is the same subchannel for NOC0 and NOC1 in every view.
_DRAM_CHANNELS = (((0, 0), (0, 1), (0, 11)), ((0, 5), (0, 6), (0, 7)), ((5, 0), (5, 1), (5, 11)),
                  ((5, 2), (5, 9), (5, 10)), ((5, 3), (5, 4), (5, 8)), ((5, 5), (5, 6), (5, 7)))
_DRAM_VIEWS = ((0, 2), (0, 1), (1, 0), (1, 2), (2, 1), (2, 2), (3, 0), (3, 1), (4, 2), (4, 0), (5, 0), (5, 2))
_GRID_Y = 12  # the full NOC grid's rows (grid: y_size)
_WORKER_X = (1, 2, 3, 4, 6, 7, 8, 9)  # functional_workers' columns; column 5 is DRAM
_WORKER_Y = (1, 2, 3, 4, 5, 7, 8, 9)  # the tensix rows left after harvesting rows 10 and 11 (row 6 is ethernet)


def _reassign_for_wormhole(non_worker_rows: list[int], workers: list[list[int]], num_banks: int,
                           max_y: int, min_y: int) -> list[tuple[int, int]]:
    """reassign_dram_interface_cores_for_wormhole: the workers in two groups by column, each sorted by row with its
    bottom-most first; a worker on a harvested row, or on a row two of its group share, moves to the first free
    worker row (from the top, or from the bottom for the last banks' rows) and 3, 2, 1 columns right."""
    groups = [[w for w in workers if w[0] == workers[0][0]], [w for w in workers if w[0] != workers[0][0]]]
    merged = []
    for group in groups:
        order = sorted(range(len(group)), key=lambda i: group[i][1])  # std::sort of the indices: ties keep order
        order = order[-1:] + order[:-1]
        cores = [list(group[i]) for i in order]
        ys = [c[1] for c in cores]
        x_step = 3
        for core in cores:
            y = core[1]
            if y not in non_worker_rows and ys.count(y) < 2:
                continue
            rows = range(max_y, min_y - 1, -1) if y >= num_banks - 1 else range(min_y, max_y + 1)
            free = [j for j in rows if j not in non_worker_rows]
            j = next((j for j in free if ys.count(j) == 0), free[0] if free else None)
            if j is not None:
                core[1], core[0] = j, core[0] + x_step
                x_step -= 1
        position = {original: new for new, original in enumerate(order)}
        merged += [tuple(cores[position[i]]) for i in range(len(group))]
    return merged


@functools.cache
def dram_bank_workers(grid_x: int, grid_y: int) -> tuple[tuple[int, int], ...]:
    """Each DRAM bank's worker, as logical (x, y), for a chip of grid_x x grid_y workers (its first rows and columns
    of device_sim's 8x8 Wormhole)."""
    worker_x, worker_y = _WORKER_X[:grid_x], _WORKER_Y[:grid_y]
    workers = []
    for channel, endpoint in _DRAM_VIEWS:
        x, y = _DRAM_CHANNELS[channel][endpoint]
        workers.append([x + 1, y + 1 if y in (0, 6) else y])  # right of the controller, below an ethernet row
    non_worker_rows = [y for y in range(_GRID_Y) if y not in worker_y]
    # core_assignment.cpp takes min and max over every row of the grid, not only the worker rows
    physical = _reassign_for_wormhole(non_worker_rows, workers, len(_DRAM_VIEWS), _GRID_Y - 1, 0)
    missing = [(x, y) for x, y in physical if x not in worker_x or y not in worker_y]
    if missing:
        raise RuntimeError(f"DRAM bank workers {missing} (NOC0 x-y) fall outside the {grid_x}x{grid_y} worker grid")
    return tuple((worker_x.index(x), worker_y.index(y)) for x, y in physical)
