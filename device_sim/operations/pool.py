"""`ttnn.operations.pool`: TT-NN's pool golden functions by name (ttnn/operations/pool.py), which tt-metal's pool
tests import to build their references. Each is the golden of device_sim's op, in TT-NN's signature, and returns
the input's dtype as TT-NN's torch goldens do (tests compare it to the output with torch.equal / allclose):

    from device_sim.operations.pool import golden_maxpool2d
    y = golden_maxpool2d(x, n, h, w, c, [2, 2], [2, 2], [0, 0], [1, 1])  # [1, 1, N*OH*OW, C]
"""

from __future__ import annotations

import torch.nn.functional as F

from device_sim.ops import vision


def golden_maxpool2d(input_tensor, batch_size, input_h, input_w, channels, kernel_size, stride, padding, dilation,
                     ceil_mode=False, return_indices=False, **_):
    """Max over each window, padding as -inf; with return_indices also each max's flat h * input_w + w index in
    its (unpadded) image, as torch's max_pool2d gives it; both as [1, 1, N*OH*OW, C]."""
    out = vision._max_pool2d_golden(input_tensor, batch_size, input_h, input_w, channels, kernel_size, stride,
                                    padding, dilation, ceil_mode).to(input_tensor.dtype)  # a max: exact
    if not return_indices:
        return out
    op_name = "ttnn.max_pool2d"
    left, right, top, bottom = vision._padding(padding, op_name)
    x = F.pad(vision._nchw(input_tensor, batch_size, input_h, input_w, channels, op_name), (left, right, top, bottom),
              value=float("-inf"))
    _, idx = F.max_pool2d(x, vision._pair(kernel_size, "kernel_size", op_name), vision._pair(stride, "stride", op_name),
                          0, vision._pair(dilation, "dilation", op_name), ceil_mode=ceil_mode, return_indices=True)
    padded_w = input_w + left + right
    idx = (idx // padded_w - top) * input_w + (idx % padded_w - left)  # the padded image's index, unpadded
    return out, vision._flat(idx)


def golden_avg_pool2d(input_tensor, batch_size, input_h, input_w, channels, kernel_size, stride, padding,
                      ceil_mode=False, count_include_pad=True, divisor_override=None, **_):
    return vision._avg_pool2d_golden(input_tensor, batch_size, input_h, input_w, channels, kernel_size, stride,
                                     padding, ceil_mode, count_include_pad, divisor_override).to(input_tensor.dtype)


def golden_global_avg_pool2d(input_tensor, *_, **__):
    return vision._global_avg_pool2d_golden(input_tensor).to(input_tensor.dtype)


def golden_adaptive_avg_pool2d(input_tensor, batch_size, input_h, input_w, channels, output_size, **_):
    return vision._adaptive_avg_pool2d_golden(input_tensor, batch_size, input_h, input_w, channels,
                                              output_size).to(input_tensor.dtype)


def golden_adaptive_max_pool2d(input_tensor, batch_size, input_h, input_w, channels, output_size, **_):
    return vision._adaptive_max_pool2d_golden(input_tensor, batch_size, input_h, input_w, channels,
                                              output_size).to(input_tensor.dtype)


def golden_upsample(input_tensor, scale_factor, mode="nearest", **_):
    """TT-NN's: torch's interpolate of the NHWC input by scale_factor (a number or an (h, w) pair)."""
    if isinstance(scale_factor, (int, float)):
        scale_factor = (scale_factor, scale_factor)
    return F.interpolate(input_tensor.permute(0, 3, 1, 2), scale_factor=tuple(scale_factor),
                         mode=mode).permute(0, 2, 3, 1)


__all__ = ["golden_adaptive_avg_pool2d", "golden_adaptive_max_pool2d", "golden_avg_pool2d", "golden_global_avg_pool2d",
           "golden_maxpool2d", "golden_upsample"]


def golden_grid_sample(input_tensor, grid, mode="bilinear", padding_mode="zeros", align_corners=False,
                       batch_output_channels=False, grid_batching_factor=None, **_):
    """torch's grid_sample of the NHWC input at the grid's K coordinate pairs a point, [N, H_out, W_out*K, C] (or
    [N, H_out, W_out, C*K] with batch_output_channels), in the input's dtype; grid_batching_factor regroups the
    samples K at a time when the grid comes unbatched (TT-NN's keyword)."""
    out = vision._grid_sample_golden(input_tensor, grid, mode=mode, padding_mode=padding_mode,
                                     align_corners=align_corners)
    n, h_out, w, c = out.shape
    k = grid_batching_factor if grid_batching_factor is not None else grid.shape[-1] // 2
    return out.reshape(n, h_out, w // k, c * k) if batch_output_channels else out
