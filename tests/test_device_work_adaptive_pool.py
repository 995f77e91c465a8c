"""adaptive_avg_pool2d runs avg_pool2d's programs with the kernel, stride and padding TT-NN derives from the sizes.

The derived parameters are worked out by hand from torch's adaptive windows (floor(i * in / out) to
ceil((i + 1) * in / out)) as adaptive_pool_utils.cpp pads them; the pool's CBs themselves are hand-checked in
tests/test_device_work_pools.py, so here the programs are compared with avg_pool2d's on the derived parameters.
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import launched as heard  # tests/programs_heard.py

import device_sim as ttnn
from device_sim.programs.adaptive_pool import adaptive_pool_params, kernel_pattern


def image(device, n, h, w, c):
    """TT-NN's flattened NHWC input, [1, 1, N*H*W, C], ROW_MAJOR bfloat16."""
    return ttnn.from_torch(torch.randn(1, 1, n * h * w, c), dtype=ttnn.bfloat16, layout=ttnn.ROW_MAJOR,
                           device=device)


def test_sizes_that_divide_give_a_plain_pool_and_uneven_ones_pad_the_short_border_windows():
    # 8 -> 4 rows: windows of 2 every 2; 6 -> 3 columns the same: kernel 2x2, stride 2, no padding
    assert adaptive_pool_params(8, 6, 4, 3) == ((2, 2), (2, 2), (0, 0, 0, 0))
    # 5 -> 3: windows [0, 2), [1, 4), [3, 5) = 2, 3, 2: kernel 3 (the middle), stride 3 - 1 = 2, one row padded on
    # each side; 7 -> 4: [0, 2), [1, 4), [3, 6), [5, 7) = 2, 3, 3, 2: the same. (5 + 2 - 3) / 2 + 1 = 3 and
    # (7 + 2 - 3) / 2 + 1 = 4 give the asked sizes back.
    assert (kernel_pattern(5, 3), kernel_pattern(7, 4)) == ([2, 3, 2], [2, 3, 3, 2])
    assert adaptive_pool_params(5, 7, 3, 4) == ((3, 3), (2, 2), (1, 1, 1, 1))
    assert adaptive_pool_params(6, 8, 1, 1) == ((6, 8), (6, 8), (0, 0, 0, 0))  # a global pool: one window


@pytest.mark.parametrize(("h", "w", "out", "kernel", "stride", "padding"), [
    (8, 6, [4, 3], [2, 2], [2, 2], [0, 0, 0, 0]),
    (5, 7, [3, 4], [3, 3], [2, 2], [1, 1, 1, 1]),
])
def test_adaptive_avg_pool2d_launches_avg_pool2ds_programs_on_the_derived_parameters(device, h, w, out, kernel,
                                                                                    stride, padding):
    x = image(device, 2, h, w, 32)
    adaptive = heard(device, lambda: ttnn.adaptive_avg_pool2d(x, 2, h, w, 32, out))
    plain = heard(device, lambda: ttnn.avg_pool2d(x, 2, h, w, 32, kernel, stride, padding, count_include_pad=False))
    assert [p.name for p in adaptive] == ["InterleavedToShardedDeviceOperation", "HaloDeviceOperation",
                                          "MoveDeviceOperation", "Pool2D"]
    assert [(p.name, p.factory, p.cbs, p.ranges) for p in adaptive] == [
        (p.name, p.factory, p.cbs, p.ranges) for p in plain]
    # padding left out of the average (count_include_pad off): the border windows divide by fewer pixels, so the
    # padded case carries the second scalar CB and the scalar config (9 CBs); the even case one divisor (7)
    assert len(adaptive[-1].cbs) == (9 if any(padding) else 7)


def test_a_size_padding_cannot_make_uniform_is_refused_with_tt_nns_message_before_any_output(device):
    # 10 -> 6: windows 2, 3, 2, 2, 3, 2: the middle ones differ, so no uniform kernel exists
    x = image(device, 1, 10, 10, 32)
    live = len(device.memory.live_buffers())
    with pytest.raises(RuntimeError, match=r"Adaptive pooling configuration not supported\. Height kernel pattern "
                                           r"\[2,3,2,2,3,2\] - middle elements not uniform, .*Input shape: \(10,10\), "
                                           r"Output shape: \(6,6\)\."):
        heard(device, lambda: ttnn.adaptive_avg_pool2d(x, 1, 10, 10, 32, [6, 6]))
    assert len(device.memory.live_buffers()) == live  # no output was made; the input stays
