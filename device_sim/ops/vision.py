"""Vision ops: conv2d and its weight preparation, pooling, upsample, with TT-NN's flattened NHWC layout.

    import device_sim as ttnn
    x = ttnn.from_torch(torch.randn(1, 8, 8, 16), dtype=ttnn.bfloat16, device=device)   # NHWC
    w = ttnn.from_torch(torch.randn(32, 16, 3, 3), dtype=ttnn.bfloat16)                  # OIHW, on the host
    y, (h, w_out) = ttnn.conv2d(input_tensor=x, weight_tensor=w, device=device, in_channels=16,
                                out_channels=32, batch_size=1, input_height=8, input_width=8,
                                kernel_size=(3, 3), padding=(1, 1), return_output_dim=True)
    y.shape   # [1, 1, 64, 32]: TT-NN's conv and pool outputs are [1, 1, N*H*W, C]

Inputs are NHWC, either [N, H, W, C] or already flattened to [1, 1, N*H*W, C]; the op is told N, H,
W and C, as in TT-NN. Each op is one recorded op with one output buffer. What is approximate: the
output memory config follows the memory rules (DESIGN.md) rather than TT-NN's sharding heuristics,
and conv2d's halo and weight-preparation buffers, which real hardware allocates and frees inside
the op, are not allocated unless the prepared weights are returned (return_weights_and_bias=True).
Prepared weights are [1, 1, KH*KW*C/groups, OC] in TILE, rows in (kh, kw, c) order.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from device_sim import dtypes, placement
from device_sim.conv_config import Conv2dConfig, Conv2dSliceConfig, activation_name
from device_sim.ops.common import check_tt_nn_only, device_inputs, values
from device_sim.registry import register_op
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout, MemoryConfig

_ACTIVATIONS = {"relu": torch.relu, "relu6": lambda y: y.clamp(0, 6), "silu": F.silu, "gelu": F.gelu,
                "sigmoid": torch.sigmoid, "tanh": torch.tanh}


def _pair(v, name: str, op_name: str) -> tuple[int, int]:
    v = (v, v) if isinstance(v, int) else tuple(v)
    if len(v) != 2 or not all(isinstance(e, int) for e in v):
        raise ValueError(f"{op_name}: {name}={v!r} must be an int or an (h, w) pair of ints")
    return v


def _padding(p, op_name: str) -> tuple[int, int, int, int]:
    """TT-NN's (h, w) or (top, bottom, left, right) padding as F.pad's (left, right, top, bottom)."""
    p = (p, p) if isinstance(p, int) else tuple(p)
    if len(p) == 2:
        return p[1], p[1], p[0], p[0]
    if len(p) == 4:
        return p[2], p[3], p[0], p[1]
    raise ValueError(f"{op_name}: padding={p!r} must be (pad_h, pad_w) or (top, bottom, left, right)")


def _nchw(x: torch.Tensor, n: int, h: int, w: int, c: int, op_name: str) -> torch.Tensor:
    """An NHWC input ([N, H, W, C] or TT-NN's flattened [1, 1, N*H*W, C]) as NCHW float32."""
    if x.numel() != n * h * w * c or x.shape[-1] != c:
        raise ValueError(
            f"{op_name}: input shape {list(x.shape)} does not hold batch_size={n} x input_height={h} x "
            f"input_width={w} x channels={c} in NHWC ([N, H, W, C] or [1, 1, N*H*W, C])"
        )
    return x.float().reshape(n, h, w, c).permute(0, 3, 1, 2)


def _flat(y: torch.Tensor) -> torch.Tensor:
    """NCHW to TT-NN's flattened NHWC output, [1, 1, N*H*W, C]."""
    n, c, h, w = y.shape
    return y.permute(0, 2, 3, 1).reshape(1, 1, n * h * w, c)


def _make(value: torch.Tensor, device, inputs, *, op_name: str, dtype, layout, memory_config) -> Tensor:
    """The op's output on `device` (the host when None), placed by the memory rules from `inputs`."""
    dtype, layout = DataType(dtype), Layout(layout)
    cfg, source = ((placement.resolve(memory_config, [t for t in inputs if t._device is not None], op_name))
                   if device is not None else (None, None))
    return Tensor._create(dtypes.to_device_values(value, dtype), dtype, layout, device, cfg, source)


# -- conv2d and its weights ------------------------------------------------------------------

def _conv_weight(w: torch.Tensor, in_channels: int, out_channels: int, kernel, groups: int, op_name: str):
    """The weights as OIHW, from either TT-NN's torch layout [OC, C/groups, KH, KW] or prepared [1, 1, K, OC]."""
    kh, kw = kernel
    cg = in_channels // groups
    if tuple(w.shape) == (out_channels, cg, kh, kw):
        return w.float()
    if tuple(w.shape) == (1, 1, kh * kw * cg, out_channels):
        return w.float().reshape(kh, kw, cg, out_channels).permute(3, 2, 0, 1)
    raise ValueError(
        f"{op_name}: weight shape {list(w.shape)} is neither [out_channels, in_channels/groups, KH, KW] = "
        f"{[out_channels, cg, kh, kw]} nor prepared [1, 1, KH*KW*in_channels/groups, out_channels] = "
        f"{[1, 1, kh * kw * cg, out_channels]}"
    )


def _prepared(w_oihw: torch.Tensor) -> torch.Tensor:
    oc, cg, kh, kw = w_oihw.shape
    return w_oihw.permute(2, 3, 1, 0).reshape(1, 1, kh * kw * cg, oc)


def _groups(groups: int) -> int:
    # TT-NN's own tutorials (ttnn_basic_conv.py, ttnn_simplecnn_inference.py) pass groups=0 meaning "no
    # groups", and run; device_sim reads 0 as 1 (not checked against TT-NN's C++, which was not run).
    return 1 if groups == 0 else groups


def _check_conv_args(in_channels, out_channels, groups, conv_config, slice_config, op_name):
    groups = _groups(groups)
    if groups < 1 or in_channels % groups or out_channels % groups:
        raise ValueError(f"{op_name}: groups={groups} must divide in_channels={in_channels} and "
                         f"out_channels={out_channels}")
    if conv_config is not None and not isinstance(conv_config, Conv2dConfig):
        raise TypeError(f"{op_name}: conv_config must be a ttnn.Conv2dConfig, got {conv_config!r}")
    if slice_config is not None and not isinstance(slice_config, Conv2dSliceConfig):
        raise TypeError(f"{op_name}: slice_config must be a ttnn.Conv2dSliceConfig (or ttnn.Conv2dL1FullSliceConfig), "
                        f"got {slice_config!r}")


def _conv2d_golden(*_, input_tensor, weight_tensor, in_channels, out_channels, batch_size, input_height,
                   input_width, kernel_size, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                   bias_tensor=None, conv_config=None, **__):
    op_name = "ttnn.conv2d"
    kernel, groups = _pair(kernel_size, "kernel_size", op_name), _groups(groups)
    x = _nchw(input_tensor, batch_size, input_height, input_width, in_channels, op_name)
    w = _conv_weight(weight_tensor, in_channels, out_channels, kernel, groups, op_name)
    b = bias_tensor.float().reshape(-1) if bias_tensor is not None else None
    x = F.pad(x, _padding(padding, op_name))
    y = F.conv2d(x, w, b, _pair(stride, "stride", op_name), 0, _pair(dilation, "dilation", op_name), groups)
    act = activation_name(conv_config.activation) if conv_config is not None else None
    return _flat(_ACTIVATIONS[act](y) if act else y)


@register_op("ttnn.conv2d", golden=_conv2d_golden)
def conv2d(*, input_tensor: Tensor, weight_tensor: Tensor, device=None, in_channels: int, out_channels: int,
           batch_size: int, input_height: int, input_width: int, kernel_size, stride=(1, 1), padding=(0, 0),
           dilation=(1, 1), groups: int = 1, dtype: DataType | None = None, bias_tensor: Tensor | None = None,
           conv_config: Conv2dConfig | None = None, compute_config=None, memory_config: MemoryConfig | None = None,
           slice_config: Conv2dSliceConfig | None = None, return_output_dim: bool = False,
           return_weights_and_bias: bool = False, **tt_nn_only):
    """2D convolution of an NHWC input; the output is [1, 1, N*OH*OW, out_channels] (TILE unless
    conv_config.output_layout says otherwise), in `dtype` (default: the input's).

    weight_tensor is [out_channels, in_channels/groups, KH, KW] (torch's layout, normally on the host)
    or prepared by ttnn.prepare_conv_weights / an earlier return_weights_and_bias=True. padding is
    (h, w) or (top, bottom, left, right). Returns the output, then (OH, OW) if return_output_dim, then
    (weights, bias) prepared on the device if return_weights_and_bias. device defaults to the input's.
    """
    op_name = "ttnn.conv2d"
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    device = device if device is not None else input_tensor.device()
    _check_conv_args(in_channels, out_channels, groups, conv_config, slice_config, op_name)
    device_inputs(op_name, *(t for t in (input_tensor, weight_tensor, bias_tensor)
                             if isinstance(t, Tensor) and t.device() is not None))
    args = dict(input_tensor=values(input_tensor, op_name), weight_tensor=values(weight_tensor, op_name),
                in_channels=in_channels, out_channels=out_channels, batch_size=batch_size,
                input_height=input_height, input_width=input_width, kernel_size=kernel_size, stride=stride,
                padding=padding, dilation=dilation, groups=groups, conv_config=conv_config,
                bias_tensor=values(bias_tensor, op_name) if bias_tensor is not None else None)
    y = _conv2d_golden(**args)
    n_out = y.shape[2] // batch_size
    kernel, st, dil = (_pair(v, n, op_name) for v, n in ((kernel_size, "kernel_size"), (stride, "stride"),
                                                          (dilation, "dilation")))
    pl, pr, pt, pb = _padding(padding, op_name)
    oh = (input_height + pt + pb - dil[0] * (kernel[0] - 1) - 1) // st[0] + 1
    ow = (input_width + pl + pr - dil[1] * (kernel[1] - 1) - 1) // st[1] + 1
    assert oh * ow == n_out, (oh, ow, n_out)
    layout = conv_config.output_layout if conv_config is not None else Layout.TILE
    out = _make(y, device, [input_tensor], op_name=op_name, dtype=dtype or input_tensor.dtype, layout=layout,
                memory_config=memory_config)
    result = [out]
    if return_output_dim:
        result.append((oh, ow))
    if return_weights_and_bias:
        result.append(_weights_on_device(weight_tensor, bias_tensor, args, device, conv_config, op_name))
    return out if len(result) == 1 else tuple(result)


def _weights_on_device(weight_tensor, bias_tensor, args, device, conv_config, op_name):
    """The prepared (weights, bias) conv2d returns: the given tensors when already prepared on the device."""
    kernel, groups = _pair(args["kernel_size"], "kernel_size", op_name), _groups(args["groups"])
    w_dtype = conv_config.weights_dtype if conv_config is not None and conv_config.weights_dtype else None
    if weight_tensor.device() is None:
        w = _prepared(_conv_weight(args["weight_tensor"], args["in_channels"], args["out_channels"], kernel,
                                   groups, op_name))
        weight_tensor = _make(w, device, [], op_name=op_name, dtype=w_dtype or weight_tensor.dtype,
                              layout=Layout.TILE, memory_config=placement.get_default_memory_config())
    if bias_tensor is not None and bias_tensor.device() is None:
        b = args["bias_tensor"].reshape(1, 1, 1, -1)
        bias_tensor = _make(b, device, [], op_name=op_name, dtype=w_dtype or bias_tensor.dtype,
                            layout=Layout.TILE, memory_config=placement.get_default_memory_config())
    return weight_tensor, bias_tensor


def _prepare_conv_weights_golden(*_, weight_tensor, in_channels, out_channels, kernel_size, groups, **__):
    kernel = _pair(kernel_size, "kernel_size", "ttnn.prepare_conv_weights")
    return _prepared(_conv_weight(weight_tensor, in_channels, out_channels, kernel, _groups(groups),
                                  "ttnn.prepare_conv_weights"))


@register_op("ttnn.prepare_conv_weights", golden=_prepare_conv_weights_golden)
def prepare_conv_weights(*, weight_tensor: Tensor, input_memory_config: MemoryConfig, input_layout: Layout,
                         weights_format: str, in_channels: int, out_channels: int, batch_size: int,
                         input_height: int, input_width: int, kernel_size, stride, padding, dilation,
                         has_bias: bool, groups: int, device, input_dtype: DataType,
                         output_dtype: DataType | None = None, conv_config: Conv2dConfig | None = None,
                         compute_config=None, slice_config: Conv2dSliceConfig | None = None) -> Tensor:
    """The weights conv2d uses, on `device`: [1, 1, KH*KW*in_channels/groups, out_channels] in TILE.

    weights_format names the given layout; only "OIHW" (torch's) exists in TT-NN.
    """
    op_name = "ttnn.prepare_conv_weights"
    if weights_format != "OIHW":
        raise ValueError(f"{op_name}: weights_format={weights_format!r}; TT-NN takes only 'OIHW'")
    _check_conv_args(in_channels, out_channels, groups, conv_config, slice_config, op_name)
    w = _prepare_conv_weights_golden(weight_tensor=values(weight_tensor, op_name), in_channels=in_channels,
                                     out_channels=out_channels, kernel_size=kernel_size, groups=groups)
    dtype = output_dtype or (conv_config.weights_dtype if conv_config is not None else None) or weight_tensor.dtype
    return _make(w, device, [], op_name=op_name, dtype=dtype, layout=Layout.TILE,
                 memory_config=placement.get_default_memory_config())


def _prepare_conv_bias_golden(*_, bias_tensor, out_channels, **__):
    if bias_tensor.numel() != out_channels:
        raise ValueError(f"ttnn.prepare_conv_bias: bias shape {list(bias_tensor.shape)} does not hold "
                         f"out_channels={out_channels} values")
    return bias_tensor.float().reshape(1, 1, 1, out_channels)


@register_op("ttnn.prepare_conv_bias", golden=_prepare_conv_bias_golden)
def prepare_conv_bias(*, bias_tensor: Tensor, input_memory_config: MemoryConfig, input_layout: Layout,
                      in_channels: int, out_channels: int, batch_size: int, input_height: int, input_width: int,
                      kernel_size, stride, padding, dilation, groups: int, device, input_dtype: DataType,
                      output_dtype: DataType | None = None, conv_config: Conv2dConfig | None = None,
                      compute_config=None, slice_config: Conv2dSliceConfig | None = None) -> Tensor:
    """The bias conv2d uses, on `device`: [1, 1, 1, out_channels] in TILE."""
    op_name = "ttnn.prepare_conv_bias"
    b = _prepare_conv_bias_golden(bias_tensor=values(bias_tensor, op_name), out_channels=out_channels)
    dtype = output_dtype or (conv_config.weights_dtype if conv_config is not None else None) or bias_tensor.dtype
    return _make(b, device, [], op_name=op_name, dtype=dtype, layout=Layout.TILE,
                 memory_config=placement.get_default_memory_config())


# -- pooling and resizing --------------------------------------------------------------------

def _max_pool2d_golden(input_tensor, batch_size, input_h, input_w, channels, kernel_size, stride, padding,
                       dilation=(1, 1), ceil_mode=False, **_):
    op_name = "ttnn.max_pool2d"
    x = F.pad(_nchw(input_tensor, batch_size, input_h, input_w, channels, op_name), _padding(padding, op_name),
              value=float("-inf"))
    return _flat(F.max_pool2d(x, _pair(kernel_size, "kernel_size", op_name), _pair(stride, "stride", op_name), 0,
                              _pair(dilation, "dilation", op_name), ceil_mode=ceil_mode))


@register_op("ttnn.max_pool2d", golden=_max_pool2d_golden)
def max_pool2d(input_tensor: Tensor, batch_size: int, input_h: int, input_w: int, channels: int, kernel_size,
               stride, padding, dilation, ceil_mode: bool = False, *, memory_config: MemoryConfig | None = None,
               dram_slice_config=None, applied_shard_scheme=None, deallocate_input: bool = False,
               reallocate_halo_output: bool = True, dtype: DataType = DataType.BFLOAT16,
               output_layout: Layout = Layout.ROW_MAJOR, config_tensor_in_dram: bool = False,
               **tt_nn_only) -> Tensor:
    """Max over each kernel window (padding counts as -inf); output [1, 1, N*OH*OW, C], ROW_MAJOR by default.

    deallocate_input=True frees the input's buffer after the op, as TT-NN does.
    """
    op_name = "ttnn.max_pool2d"
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    y = _max_pool2d_golden(values(input_tensor, op_name), batch_size, input_h, input_w, channels, kernel_size,
                           stride, padding, dilation, ceil_mode)
    out = _make(y, input_tensor.device(), ins, op_name=op_name, dtype=dtype, layout=output_layout,
                memory_config=memory_config)
    if deallocate_input:
        input_tensor._free()
    return out


def _avg_pool2d_golden(input_tensor, batch_size, input_h, input_w, channels, kernel_size, stride, padding,
                       ceil_mode=False, count_include_pad=True, divisor_override=None, **_):
    op_name = "ttnn.avg_pool2d"
    x = _nchw(input_tensor, batch_size, input_h, input_w, channels, op_name)
    left, right, top, bottom = _padding(padding, op_name)
    if left == right and top == bottom:
        pad = (top, left)
    elif count_include_pad:  # uneven zero padding that counts is the same as padding the input first
        x, pad = F.pad(x, (left, right, top, bottom)), (0, 0)
    else:
        raise ValueError(f"{op_name}: uneven padding {padding!r} with count_include_pad=False is not supported")
    return _flat(F.avg_pool2d(x, _pair(kernel_size, "kernel_size", op_name), _pair(stride, "stride", op_name), pad,
                              ceil_mode, count_include_pad, divisor_override))


@register_op("ttnn.avg_pool2d", golden=_avg_pool2d_golden)
def avg_pool2d(input_tensor: Tensor, batch_size: int, input_h: int, input_w: int, channels: int, kernel_size,
               stride, padding, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None, *, memory_config: MemoryConfig | None = None,
               dram_slice_config=None, applied_shard_scheme=None, compute_kernel_config=None,
               deallocate_input: bool = False, reallocate_halo_output: bool = True,
               dtype: DataType = DataType.BFLOAT16, output_layout: Layout = Layout.ROW_MAJOR,
               config_tensor_in_dram: bool = False, **tt_nn_only) -> Tensor:
    """Mean over each kernel window, as torch's avg_pool2d; output [1, 1, N*OH*OW, C], ROW_MAJOR by default."""
    op_name = "ttnn.avg_pool2d"
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    y = _avg_pool2d_golden(values(input_tensor, op_name), batch_size, input_h, input_w, channels, kernel_size,
                           stride, padding, ceil_mode, count_include_pad, divisor_override)
    out = _make(y, input_tensor.device(), ins, op_name=op_name, dtype=dtype, layout=output_layout,
                memory_config=memory_config)
    if deallocate_input:
        input_tensor._free()
    return out


def _global_avg_pool2d_golden(input_tensor, *_, **__):
    return input_tensor.float().mean(dim=(-3, -2), keepdim=True)


@register_op("ttnn.global_avg_pool2d", golden=_global_avg_pool2d_golden)
def global_avg_pool2d(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
                      dtype: DataType | None = None, **tt_nn_only) -> Tensor:
    """The mean over H and W of an NHWC [N, H, W, C] input: [N, 1, 1, C]."""
    op_name = "ttnn.global_avg_pool2d"
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    x = values(input_tensor, op_name)
    if x.dim() != 4:
        raise ValueError(f"{op_name}: input shape {list(x.shape)} must be NHWC [N, H, W, C]")
    ins = device_inputs(op_name, input_tensor)
    return _make(_global_avg_pool2d_golden(x), input_tensor.device(), ins, op_name=op_name,
                 dtype=dtype or input_tensor.dtype, layout=input_tensor.layout, memory_config=memory_config)


def _upsample_golden(input_tensor, scale_factor, *_, mode="nearest", **__):
    sh, sw = _pair(scale_factor, "scale_factor", "ttnn.upsample")
    x = input_tensor.float().permute(0, 3, 1, 2)
    if mode == "nearest":
        y = x.repeat_interleave(sh, -2).repeat_interleave(sw, -1)
    else:
        y = F.interpolate(x, scale_factor=(sh, sw), mode="bilinear", align_corners=False)
    return y.permute(0, 2, 3, 1)


@register_op("ttnn.upsample", golden=_upsample_golden)
def upsample(input_tensor: Tensor, scale_factor, *, mode: str = "nearest",
             memory_config: MemoryConfig | None = None, compute_kernel_config=None, **tt_nn_only) -> Tensor:
    """Repeat (mode="nearest") or interpolate (mode="bilinear", align_corners=False) an NHWC [N, H, W, C]
    input by an integer scale_factor (one int or (h, w)): [N, H*sh, W*sw, C]."""
    op_name = "ttnn.upsample"
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"{op_name}: mode={mode!r} must be 'nearest' or 'bilinear'")
    x = values(input_tensor, op_name)
    if x.dim() != 4:
        raise ValueError(f"{op_name}: input shape {list(x.shape)} must be NHWC [N, H, W, C]")
    ins = device_inputs(op_name, input_tensor)
    return _make(_upsample_golden(x, scale_factor, mode=mode), input_tensor.device(), ins, op_name=op_name,
                 dtype=input_tensor.dtype, layout=input_tensor.layout, memory_config=memory_config)


def _fold_golden(input, stride_h, stride_w, *_, padding=(0, 0), output_shape=None, **__):  # noqa: A002
    op_name = "ttnn.fold"
    if isinstance(padding, (list, tuple)) and len(padding) not in (2, 4):
        raise ValueError(f"{op_name}: padding={padding!r} must be (pad_h, pad_w) or (top, bottom, left, right)")
    x = F.pad(input.float().permute(0, 3, 1, 2), _padding(padding, op_name)).permute(0, 2, 3, 1)
    N, H, W, C = x.shape
    if H % stride_h or W % stride_w:
        raise ValueError(f"{op_name}: the padded input's H={H} and W={W} must be multiples of stride_h={stride_h} "
                         f"and stride_w={stride_w}")
    # Each stride_h x stride_w block of pixels becomes one pixel with its channels side by side, row by row.
    y = x.reshape(N, H // stride_h, stride_h, W // stride_w, stride_w, C).permute(0, 1, 3, 2, 4, 5)
    y = y.reshape(N, H // stride_h, W // stride_w, C * stride_h * stride_w)
    if output_shape is not None:
        if y.numel() != torch.Size(tuple(output_shape)).numel():
            raise ValueError(f"{op_name}: output_shape {list(output_shape)} does not hold the folded {list(y.shape)}")
        y = y.reshape(tuple(output_shape))
    return y


@register_op("ttnn.fold", golden=_fold_golden)
def fold(input: Tensor, stride_h: int, stride_w: int, use_transpose_as_fold: bool = False,  # noqa: A002
         output_shape=None, padding=(0, 0), grid_size=None, override_memory_config: MemoryConfig | None = None,
         **tt_nn_only) -> Tensor:
    """Space to depth on NHWC [N, H, W, C] (after zero `padding` of H and W): [N, H/sh, W/sw, C*sh*sw], each
    block's pixels in row-major order; reshaped to output_shape when given. use_transpose_as_fold and grid_size
    only choose TT-NN's kernel."""
    op_name = "ttnn.fold"
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    x = values(input, op_name)
    if x.dim() != 4:
        raise ValueError(f"{op_name}: input shape {list(x.shape)} must be NHWC [N, H, W, C]")
    ins = device_inputs(op_name, input)
    y = _fold_golden(x, stride_h, stride_w, padding=padding, output_shape=output_shape)
    return _make(y, input.device(), ins, op_name=op_name, dtype=input.dtype, layout=input.layout,
                 memory_config=override_memory_config)


def _conv1d_golden(*_, input_tensor, weight_tensor, in_channels, out_channels, batch_size, input_length,
                   kernel_size, stride=1, padding=0, dilation=1, groups=1, bias_tensor=None, conv_config=None, **__):
    # A 1D conv is conv2d over [N, L, 1, C] with a [K, 1] kernel.
    w = weight_tensor if weight_tensor.dim() != 3 else weight_tensor.unsqueeze(-1)
    return _conv2d_golden(input_tensor=input_tensor, weight_tensor=w, in_channels=in_channels,
                          out_channels=out_channels, batch_size=batch_size, input_height=input_length, input_width=1,
                          kernel_size=(kernel_size, 1), stride=(stride, 1), padding=(padding, 0),
                          dilation=(dilation, 1), groups=groups, bias_tensor=bias_tensor, conv_config=conv_config)


@register_op("ttnn.conv1d", golden=_conv1d_golden)
def conv1d(*, input_tensor: Tensor, weight_tensor: Tensor, device=None, in_channels: int, out_channels: int,
           batch_size: int, input_length: int, kernel_size: int, stride: int = 1, padding: int = 0,
           dilation: int = 1, groups: int = 1, dtype: DataType | None = None, bias_tensor: Tensor | None = None,
           conv_config: Conv2dConfig | None = None, compute_config=None, memory_config: MemoryConfig | None = None,
           return_output_dim: bool = False, return_weights_and_bias: bool = False, **tt_nn_only):
    """1D convolution of an NLC input ([N, L, C] or [1, 1, N*L, C]) with weights [out_channels,
    in_channels/groups, K]: [1, 1, N*OL, out_channels]. Returns the output, then OL if return_output_dim, then
    the prepared (weights, bias) if return_weights_and_bias, as conv2d does."""
    op_name = "ttnn.conv1d"
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    device = device if device is not None else input_tensor.device()
    _check_conv_args(in_channels, out_channels, groups, conv_config, None, op_name)
    device_inputs(op_name, *(t for t in (input_tensor, weight_tensor, bias_tensor)
                             if isinstance(t, Tensor) and t.device() is not None))
    w = values(weight_tensor, op_name)
    args = dict(input_tensor=values(input_tensor, op_name), weight_tensor=w, in_channels=in_channels,
                out_channels=out_channels, batch_size=batch_size, input_length=input_length, kernel_size=kernel_size,
                stride=stride, padding=padding, dilation=dilation, groups=groups, conv_config=conv_config,
                bias_tensor=values(bias_tensor, op_name) if bias_tensor is not None else None)
    y = _conv1d_golden(**args)
    layout = conv_config.output_layout if conv_config is not None else Layout.TILE
    out = _make(y, device, [input_tensor], op_name=op_name, dtype=dtype or input_tensor.dtype, layout=layout,
                memory_config=memory_config)
    result = [out]
    if return_output_dim:
        result.append(y.shape[2] // batch_size)
    if return_weights_and_bias:
        args2d = dict(args, weight_tensor=w if w.dim() != 3 else w.unsqueeze(-1), kernel_size=(kernel_size, 1))
        result.append(_weights_on_device(weight_tensor, bias_tensor, args2d, device, conv_config, op_name))
    return out if len(result) == 1 else tuple(result)


def _conv_transpose2d_golden(*_, input_tensor, weight_tensor, in_channels, out_channels, batch_size, input_height,
                             input_width, kernel_size, stride=(1, 1), padding=(0, 0), output_padding=(0, 0),
                             dilation=(1, 1), groups=1, bias_tensor=None, conv_config=None, mirror_kernel=True, **__):
    op_name = "ttnn.conv_transpose2d"
    (kh, kw), groups = _pair(kernel_size, "kernel_size", op_name), _groups(groups)
    if tuple(weight_tensor.shape) != (in_channels, out_channels // groups, kh, kw):
        raise ValueError(f"{op_name}: weight shape {list(weight_tensor.shape)} must be [in_channels, "
                         f"out_channels/groups, KH, KW] = {[in_channels, out_channels // groups, kh, kw]}")
    x = _nchw(input_tensor, batch_size, input_height, input_width, in_channels, op_name)
    # mirror_kernel=False says the caller's kernel is mirrored already; torch's formula takes it unmirrored.
    w = weight_tensor.float() if mirror_kernel else weight_tensor.float().flip(-2, -1)
    b = bias_tensor.float().reshape(-1) if bias_tensor is not None else None
    left, right, top, bottom = _padding(padding, op_name)
    y = F.conv_transpose2d(x, w, b, _pair(stride, "stride", op_name), 0, _pair(output_padding, "output_padding",
                           op_name), groups, _pair(dilation, "dilation", op_name))
    y = y[..., top: y.shape[-2] - bottom, left: y.shape[-1] - right]  # padding crops the full output
    act = activation_name(conv_config.activation) if conv_config is not None else None
    return _flat(_ACTIVATIONS[act](y) if act else y)


@register_op("ttnn.conv_transpose2d", golden=_conv_transpose2d_golden)
def conv_transpose2d(*, input_tensor: Tensor, weight_tensor: Tensor, device=None, in_channels: int,
                     out_channels: int, batch_size: int, input_height: int, input_width: int, kernel_size,
                     stride=(1, 1), padding=(0, 0), output_padding=(0, 0), dilation=(1, 1), groups: int = 1,
                     dtype: DataType | None = None, bias_tensor: Tensor | None = None,
                     conv_config: Conv2dConfig | None = None, compute_config=None,
                     memory_config: MemoryConfig | None = None, dram_slice_config: Conv2dSliceConfig | None = None,
                     mirror_kernel: bool = True, return_output_dim: bool = False,
                     return_weights_and_bias: bool = False, **tt_nn_only):
    """Transposed convolution of an NHWC input with weights [in_channels, out_channels/groups, KH, KW], as
    torch's conv_transpose2d: [1, 1, N*OH*OW, out_channels]. Returns like conv2d; the weights and bias
    returned with return_weights_and_bias are the given ones on the device, in TILE, in the same layout."""
    op_name = "ttnn.conv_transpose2d"
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    device = device if device is not None else input_tensor.device()
    _check_conv_args(in_channels, out_channels, groups, conv_config, dram_slice_config, op_name)
    device_inputs(op_name, *(t for t in (input_tensor, weight_tensor, bias_tensor)
                             if isinstance(t, Tensor) and t.device() is not None))
    y = _conv_transpose2d_golden(
        input_tensor=values(input_tensor, op_name), weight_tensor=values(weight_tensor, op_name),
        in_channels=in_channels, out_channels=out_channels, batch_size=batch_size, input_height=input_height,
        input_width=input_width, kernel_size=kernel_size, stride=stride, padding=padding,
        output_padding=output_padding, dilation=dilation, groups=groups, conv_config=conv_config,
        bias_tensor=values(bias_tensor, op_name) if bias_tensor is not None else None, mirror_kernel=mirror_kernel)
    layout = conv_config.output_layout if conv_config is not None else Layout.TILE
    out = _make(y, device, [input_tensor], op_name=op_name, dtype=dtype or input_tensor.dtype, layout=layout,
                memory_config=memory_config)
    result = [out]
    if return_output_dim:
        pairs = ((kernel_size, "kernel_size"), (stride, "stride"), (dilation, "dilation"),
                 (output_padding, "output_padding"))
        (kh, kw), (sh, sw), (dh, dw), (oph, opw) = (_pair(v, n, op_name) for v, n in pairs)
        left, right, top, bottom = _padding(padding, op_name)
        result.append(((input_height - 1) * sh - top - bottom + dh * (kh - 1) + oph + 1,
                       (input_width - 1) * sw - left - right + dw * (kw - 1) + opw + 1))
    if return_weights_and_bias:
        w_dtype = conv_config.weights_dtype if conv_config is not None and conv_config.weights_dtype else None
        on_device = [t if t is None or t.device() is not None else
                     _make(values(t, op_name), device, [], op_name=op_name, dtype=w_dtype or t.dtype,
                           layout=Layout.TILE, memory_config=placement.get_default_memory_config())
                     for t in (weight_tensor, bias_tensor)]
        result.append(tuple(on_device))
    return out if len(result) == 1 else tuple(result)
