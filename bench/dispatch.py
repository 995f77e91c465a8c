"""6. Dispatch: a registered op with no hook installed against its body called directly."""

from __future__ import annotations

import device_sim as ttnn
from bench.common import Figure, at_most, info, median, small_inputs, timed


def run(tmp, *, n_ops: int, repeats: int) -> list[Figure]:
    device = ttnn.open_device(0)
    try:
        a, b = small_inputs(device)
        body = ttnn.add.op.function
        assert ttnn.get_hook() is None

        def wrapped():
            for _ in range(n_ops):
                ttnn.add(a, b)

        def direct():
            for _ in range(n_ops):
                body(a, b)

        wrapped(), direct()
        # Alternated, so that a neighbour's burst on the shared cores hits both sides alike.
        ratios, w_times, d_times = [], [], []
        for _ in range(repeats):
            w, d = timed(wrapped), timed(direct)
            ratios.append(w / d), w_times.append(w), d_times.append(d)
    finally:
        ttnn.close_device(device)
    us = 1e6 / n_ops
    return [
        info("ttnn.add through the registry, no hook", median(w_times) * us, "µs/op"),
        info("the op's body called directly", median(d_times) * us, "µs/op"),
        at_most("registry dispatch / direct body (median of pairs)", median(ratios), "x", 1.1),
    ]
