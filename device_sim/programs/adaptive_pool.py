"""The kernel, stride and padding TT-NN's adaptive pools derive, and the configurations they refuse.

ttnn.adaptive_avg_pool2d runs avg_pool2d's programs (device_sim.programs.pool) with these parameters, as
experimental/adaptive_pool/adaptive_pools.cpp does (ceil_mode and count_include_pad off), after
adaptive_pool_utils.cpp's validate_adaptive_pool_feasibility.

Example:
    >>> from device_sim.programs.adaptive_pool import adaptive_pool_params
    >>> adaptive_pool_params(8, 6, 4, 3)  # (kernel, stride, (top, bottom, left, right))
    ((2, 2), (2, 2), (0, 0, 0, 0))
    >>> adaptive_pool_params(5, 7, 3, 4)  # torch's windows 2, 3, 2 and 2, 3, 3, 2: the borders padded up to 3
    ((3, 3), (2, 2), (1, 1, 1, 1))
"""

from __future__ import annotations


def kernel_pattern(size: int, out: int) -> list[int]:
    """torch's adaptive window lengths along one dim: floor(i * size / out) to ceil((i + 1) * size / out)."""
    return [-(-(i + 1) * size // out) - i * size // out for i in range(out)]


def _middle_uniform(k: list[int]) -> bool:
    return len(k) <= 2 or all(v == k[1] for v in k[1:-1])


def _borders_fit(k: list[int]) -> bool:
    return len(k) <= 2 or (k[0] <= k[1] and k[-1] <= k[1])


def adaptive_pool_params(in_h: int, in_w: int, out_h: int, out_w: int) -> tuple:
    """calculate_adaptive_pool_params: ((kernel_h, kernel_w), (stride_h, stride_w), (top, bottom, left, right)).

    Uniform windows: kernel ceil(size / out), stride floor(size / out), no padding. Otherwise the middle window
    is the kernel, the stride one less, and a smaller first / last window is padded up to it; if that does
    not give the asked output size, the uniform parameters stand.
    """
    hk, wk = kernel_pattern(in_h, out_h), kernel_pattern(in_w, out_w)
    base_stride = (in_h // out_h, in_w // out_w)
    base_kernel = (-(-in_h // out_h), -(-in_w // out_w))
    if all(v == hk[0] for v in hk) and all(v == wk[0] for v in wk):
        return base_kernel, base_stride, (0, 0, 0, 0)
    kernel, stride, pads = [], [], []
    for k, base_k, base_s in ((hk, base_kernel[0], base_stride[0]), (wk, base_kernel[1], base_stride[1])):
        mid = k[1] if len(k) >= 3 else base_k
        kernel.append(mid)
        before = after = 0
        s = base_s
        if len(k) >= 3 and (k[0] < mid or k[-1] < mid):
            s = mid - 1
            before = mid - k[0] if k[0] < mid else 0
            after = mid - k[-1] if k[-1] < mid else 0
        stride.append(s)
        pads += [before, after]
    out = ((in_h + pads[0] + pads[1] - kernel[0]) // stride[0] + 1, (in_w + pads[2] + pads[3] - kernel[1]) // stride[1]
           + 1)
    if out != (out_h, out_w):
        return base_kernel, base_stride, (0, 0, 0, 0)
    return tuple(kernel), tuple(stride), tuple(pads)


def check_feasible(in_h: int, in_w: int, out_h: int, out_w: int) -> None:
    """validate_adaptive_pool_feasibility: raise TT-NN's TT_THROW when torch's windows cannot be made uniform by
    padding the borders (middle windows differ, or a border window is longer than the middle ones)."""
    hk, wk = kernel_pattern(in_h, out_h), kernel_pattern(in_w, out_w)
    # The derived stride is applied uniformly (calculate_actual_stride_patterns steps by it), so TT-NN's
    # uniformity check on the parameters always holds; only the kernel patterns can fail.
    msg = "Adaptive pooling configuration not supported. "
    ok = True
    for name, k in (("Height", hk), ("Width", wk)):
        if _middle_uniform(k) and _borders_fit(k):
            continue
        ok = False
        msg += f"{name} kernel pattern [{','.join(map(str, k))}] - "
        if not _middle_uniform(k):
            msg += "middle elements not uniform, "
        if not _borders_fit(k):
            msg += "border elements larger than middle (padding won't help), "
    if ok:
        return
    msg += ("Correctable patterns require uniform middle kernels AND borders <= middle AND calculated pooling "
            f"parameters must produce uniform behavior. Input shape: ({in_h},{in_w}), Output shape: ({out_h},{out_w}).")
    raise RuntimeError(f"TT_THROW @ device_sim/programs/adaptive_pool.py: tt::exception\ninfo:\n{msg}")
