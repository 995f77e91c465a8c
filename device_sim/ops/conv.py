"""Convolutions: conv2d, conv1d, conv_transpose2d, ttnn.experimental.conv3d and their weight preparation, as TT-NN
runs them.

    import device_sim as ttnn
    x = ttnn.from_torch(torch.randn(1, 8, 8, 16), dtype=ttnn.bfloat16, device=device)   # NHWC
    w = ttnn.from_torch(torch.randn(32, 16, 3, 3), dtype=ttnn.bfloat16)                  # OIHW, on the host
    y, (h, w_out) = ttnn.conv2d(input_tensor=x, weight_tensor=w, device=device, in_channels=16,
                                out_channels=32, batch_size=1, input_height=8, input_width=8,
                                kernel_size=(3, 3), padding=(1, 1), return_output_dim=True)
    y.shape   # [1, 1, 64, 32]: [1, 1, N*OH*OW, OC], TILE unless conv_config.output_layout says otherwise

Each call is one recorded op with one output buffer (the fused activation included). Approximate:
the output memory config follows the memory rules, and the halo and weight-preparation buffers real
hardware allocates and frees inside the op are not allocated unless the prepared weights are
returned (return_weights_and_bias=True). Prepared weights are [1, 1, KH*KW*C/groups, OC] in TILE,
rows in (kh, kw, c) order; conv2d takes them back.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from device_sim import device_work, placement
from device_sim.conv_config import Conv2dConfig, Conv2dSliceConfig, Conv3dConfig, PaddingMode, activation_name
from device_sim.ops import core, creation
from device_sim.ops.common import check_tt_nn_only, device_inputs, values
from device_sim.ops.vision import _flat, _make, _nchw, _padding, _pair
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import conv as conv_programs
from device_sim.registry import OWN_NAME, Trait, register_op
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout, MemoryConfig, TensorMemoryLayout

_CONV_HERE = "device_sim/ops/conv.py"
_ACTIVATIONS = {"relu": torch.relu, "relu6": lambda y: y.clamp(0, 6), "silu": F.silu, "gelu": F.gelu,
                "sigmoid": torch.sigmoid, "tanh": torch.tanh}


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
    c = input_tensor.shape[-1]
    if c > in_channels and input_tensor.numel() == batch_size * input_height * input_width * c:
        # An input padded past in_channels (16 channels for in_channels=3, as tests/ttnn's test_graph_capture
        # passes): TT-NN pads the weights' input channels with zeros to match, so the extra channels add nothing.
        input_tensor = input_tensor[..., :in_channels]
    x = _nchw(input_tensor, batch_size, input_height, input_width, in_channels, op_name)
    w = _conv_weight(weight_tensor, in_channels, out_channels, kernel, groups, op_name)
    b = bias_tensor.float().reshape(-1) if bias_tensor is not None else None
    replicate = conv_config is not None and conv_config.padding_mode == PaddingMode.Replicate
    x = F.pad(x, _padding(padding, op_name), mode="replicate" if replicate else "constant")
    y = F.conv2d(x, w, b, _pair(stride, "stride", op_name), 0, _pair(dilation, "dilation", op_name), groups)
    act = activation_name(conv_config.activation) if conv_config is not None else None
    return _flat(_ACTIVATIONS[act](y) if act else y)


@register_op("ttnn.conv2d", kind="conv2d", golden=_conv2d_golden)
def conv2d(*, input_tensor: Tensor, weight_tensor: Tensor, device=None, in_channels: int, out_channels: int,
           batch_size: int, input_height: int, input_width: int, kernel_size, stride=(1, 1), padding=(0, 0),
           dilation=(1, 1), groups: int = 1, dtype: DataType | None = None, bias_tensor: Tensor | None = None,
           conv_config: Conv2dConfig | None = None, compute_config=None, memory_config: MemoryConfig | None = None,
           slice_config: Conv2dSliceConfig | None = None, return_output_dim: bool = False,
           return_weights_and_bias: bool = False, op_name: str = OWN_NAME, **tt_nn_only):
    """2D convolution of an NHWC input; the output is [1, 1, N*OH*OW, out_channels] (TILE unless
    conv_config.output_layout says otherwise), in `dtype` (default: the input's).

    weight_tensor is [out_channels, in_channels/groups, KH, KW] (torch's layout, normally on the host)
    or prepared by ttnn.prepare_conv_weights / an earlier return_weights_and_bias=True. padding is
    (h, w) or (top, bottom, left, right). Returns the output, then (OH, OW) if return_output_dim, then
    (weights, bias) prepared on the device if return_weights_and_bias. device defaults to the input's.

    >>> x = ttnn.from_torch(torch.ones(1, 4, 4, 2), ttnn.bfloat16, device=device)  # NHWC
    >>> w = ttnn.from_torch(torch.ones(3, 2, 3, 3), ttnn.bfloat16)  # OIHW, on the host
    >>> y = ttnn.conv2d(input_tensor=x, weight_tensor=w, device=device, in_channels=2, out_channels=3,
    ...                 batch_size=1, input_height=4, input_width=4, kernel_size=(3, 3), padding=(1, 1))
    >>> y.shape, y.to_torch()[0, 0, 5].tolist()  # [1, 1, N*H*W, C]; pixel (1, 1) sees 9 x 2 ones
    (Shape([1, 1, 16, 3]), [18.0, 18.0, 18.0])
    """
    device = _conv_inputs(op_name, tt_nn_only, (input_tensor, weight_tensor, bias_tensor), device, in_channels,
                          out_channels, groups, conv_config, slice_config)
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
    out = _conv_output(y, device, input_tensor, op_name, dtype, conv_config, memory_config)
    _launch_conv2d(out, input_tensor, weight_tensor, bias_tensor, conv_config, args, (pt, pb, pl, pr))
    return _returned(out, (oh, ow) if return_output_dim else None,
                     _weights_on_device(weight_tensor, bias_tensor, args, device, conv_config, op_name)
                     if return_weights_and_bias else None)


def _conv_inputs(op_name, tt_nn_only, tensors, device, in_channels, out_channels, groups, conv_config,
                 slice_config):
    """The checks every conv op makes before its math; returns the device the output goes to (default: the
    input's). tensors: (input, weight, bias); those already on a device are the op's device inputs."""
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    _check_conv_args(in_channels, out_channels, groups, conv_config, slice_config, op_name)
    device_inputs(op_name, *(t for t in tensors if isinstance(t, Tensor) and t.device() is not None))
    return device if device is not None else tensors[0].device()


def _conv_output(y, device, input_tensor, op_name, dtype, conv_config, memory_config) -> Tensor:
    """A conv's output tensor: TILE unless conv_config.output_layout says otherwise, in dtype, else
    conv_config.dtype (older TT-NN's field, still in model code), else the input's."""
    layout = conv_config.output_layout if conv_config is not None else Layout.TILE
    if dtype is None:  # (DataType.BFLOAT16 is 0: `or` would skip it)
        dtype = conv_config.dtype if conv_config is not None and conv_config.dtype is not None else input_tensor.dtype
    return _make(y, device, [input_tensor], op_name=op_name, dtype=dtype, layout=layout,
                 memory_config=memory_config)


def _returned(out: Tensor, *extras):
    """TT-NN's conv return: the output alone, or a tuple of it and each extra asked for (None: not asked)."""
    asked = [e for e in extras if e is not None]
    return (out, *asked) if asked else out


def _launch_conv2d(out: Tensor, x: Tensor, weight_tensor, bias_tensor, conv_config, args, padding) -> None:
    """conv2d's device operations (device_sim.programs.conv): a height-sharded, non-matmul conv on a device. A
    grouped conv runs the same programs: TT-NN expands its weights to [out, in, kh, kw], zero off the groups'
    blocks (convert_conv_weight_tensor_to_grouped_layout). A 1x1 matmul conv from an interleaved input without a
    shard_layout runs TT-NN's interleaved matmul (programs.conv.matmul_conv_programs). Other layouts, sharded 1x1
    matmul convs and the 1-D depthwise conv (a width-1 input and kernel: its own weight layout) run programs not
    modelled, so launch none."""
    if out.device() is None:
        return
    op_name = "ttnn.conv2d"
    kernel, st, dil = (_pair(args[k], k, op_name) for k in ("kernel_size", "stride", "dilation"))
    shard_layout = conv_config.shard_layout if conv_config is not None else None
    matmul_conv = kernel == (1, 1) and st == (1, 1) and dil == (1, 1) and not any(padding)
    groups = _groups(args["groups"])
    depthwise_1d = (groups > 1 and groups == args["in_channels"] == args["out_channels"] and args["input_width"] == 1
                    and kernel[1] == 1 and bias_tensor is None)  # conv2d_utils' is_1d_deptwise_conv
    cfg = conv_config if conv_config is not None else Conv2dConfig()
    if matmul_conv and shard_layout is None and not x.is_sharded():  # TT-NN's auto-sharded 1x1: an interleaved matmul
        programs = conv_programs.matmul_conv_programs(
            x, batch=args["batch_size"], height=args["input_height"], width=args["input_width"],
            in_channels=args["in_channels"], out_channels=args["out_channels"],
            weights_dtype=cfg.weights_dtype or weight_tensor.dtype,
            bias_dtype=(cfg.weights_dtype or bias_tensor.dtype) if bias_tensor is not None else None,
            out_dtype=out.dtype)
        device_work.launch_after(out, True, out, programs)
        return
    if depthwise_1d or matmul_conv or shard_layout not in (None, TensorMemoryLayout.HEIGHT_SHARDED):
        return
    programs = conv_programs.conv2d_programs(
        batch=args["batch_size"], height=args["input_height"], width=args["input_width"],
        in_channels=args["in_channels"], out_channels=args["out_channels"], kernel=kernel, stride=st,
        padding=padding, dilation=dil, in_dtype=x.dtype, in_tile=x.layout == Layout.TILE,
        in_sharded=x.device() is not None and x.is_sharded(), out_dtype=out.dtype,
        weights_dtype=cfg.weights_dtype or weight_tensor.dtype, bias=bias_tensor is not None,
        grid=(out.device().config.grid_x, out.device().config.grid_y), act_block_h_override=cfg.act_block_h_override,
        out_tile=out.layout == Layout.TILE, act_double_buffer=cfg.enable_act_double_buffer,
        weights_double_buffer=cfg.enable_weights_double_buffer)
    _launch_height_sharded(out, programs, auto=shard_layout is None and not x.is_sharded())


def _launch_height_sharded(out: Tensor, programs, *, auto: bool) -> None:
    """Launch a height-sharded conv's programs (the last is Conv2dDeviceOperation). auto: no shard_layout was given
    and the input is not sharded, so TT-NN picks height, block or width sharding by their estimated L1 use
    (determine_conv_config_for_auto_shard). Height sharding holds every input channel and the whole weight width on
    each core; when those CBs pass the end of L1 (512 channels of a 3x3 kernel: 1.87 MB of 1.43 MB), TT-NN's pick is
    block or width sharding, which split the channels and which device_sim does not model, so none is launched."""
    c = out.device().config
    if auto and c.l1_unreserved_base + programs[-1].cb_region_end > c.l1_size:
        return
    device_work.launch_after(out, True, out, programs)


def _launch_conv_transpose2d(out: Tensor, x: Tensor, weight_tensor, bias_tensor, conv_config, dram_slice_config,
                             args) -> None:
    """conv_transpose2d's device operations as conv_transpose2d.cpp runs them (conv_transpose2d_L1): the input
    sharded on the cores the output's rows pick, the halo that spreads it out (stride - 1 zeros between rows and
    columns, dilation * (kernel - 1) - padding around, output_padding more at the bottom and right), then
    Conv2dDeviceOperation with stride 1 and no padding over that full input. Height sharding only, as for conv2d.
    A 1x1, stride-1, unpadded one from an interleaved input without a shard_layout is conv2d's auto-sharded matmul
    (programs.conv.matmul_conv_programs); its sharded form, other shard layouts and DRAM slicing launch none."""
    if out.device() is None or dram_slice_config is not None:
        return
    op_name = "ttnn.conv_transpose2d"
    (kh, kw), (sh, sw), (dh, dw), (oph, opw) = (_pair(args[k], k, op_name) for k in (
        "kernel_size", "stride", "dilation", "output_padding"))
    left, right, top, bottom = _padding(args["padding"], op_name)
    pads = (dh * (kh - 1) - top, dh * (kh - 1) - bottom + oph, dw * (kw - 1) - left, dw * (kw - 1) - right + opw)
    shard_layout = conv_config.shard_layout if conv_config is not None else None
    mm_conv = (kh, kw) == (1, 1) and (sh, sw) == (1, 1) and not (top or bottom or left or right)
    h, w = args["input_height"], args["input_width"]
    cfg = conv_config if conv_config is not None else Conv2dConfig()
    if mm_conv and shard_layout is None and not x.is_sharded():  # use_matmul_for_1x1_conv, auto-sharded
        device_work.launch_after(out, True, out, conv_programs.matmul_conv_programs(
            x, batch=args["batch_size"], height=h, width=w, in_channels=args["in_channels"],
            out_channels=args["out_channels"], weights_dtype=cfg.weights_dtype or weight_tensor.dtype,
            bias_dtype=(cfg.weights_dtype or bias_tensor.dtype) if bias_tensor is not None else None,
            out_dtype=out.dtype))
        return
    if mm_conv or min(pads) < 0 or shard_layout not in (None, TensorMemoryLayout.HEIGHT_SHARDED):
        return
    programs = conv_programs.conv2d_programs(
        batch=args["batch_size"], height=(h - 1) * sh + 1 + pads[0] + pads[1],
        width=(w - 1) * sw + 1 + pads[2] + pads[3], in_channels=args["in_channels"],
        out_channels=args["out_channels"], kernel=(kh, kw), stride=(1, 1), padding=(0, 0, 0, 0), dilation=(dh, dw),
        in_dtype=x.dtype, in_tile=x.layout == Layout.TILE, in_sharded=x.device() is not None and x.is_sharded(),
        out_dtype=out.dtype, weights_dtype=cfg.weights_dtype or weight_tensor.dtype, bias=bias_tensor is not None,
        grid=(out.device().config.grid_x, out.device().config.grid_y), act_block_h_override=cfg.act_block_h_override,
        out_tile=out.layout == Layout.TILE, act_double_buffer=cfg.enable_act_double_buffer,
        weights_double_buffer=cfg.enable_weights_double_buffer, input_hw=(h, w))
    _launch_height_sharded(out, programs, auto=shard_layout is None and not x.is_sharded())


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


def _prepare_conv_weights_golden(*_, weight_tensor, in_channels, out_channels, kernel_size, groups,
                                 input_height=None, **__):
    kernel = _pair(kernel_size, "kernel_size", "ttnn.prepare_conv_weights")
    if weight_tensor.dim() == 3 and input_height == 1:
        # a conv1d's [OC, C/groups, K] weights, read as [OC, C/groups, 1, K] (prepare_conv2d_weights.cpp)
        weight_tensor = weight_tensor.unsqueeze(-2)
    return _prepared(_conv_weight(weight_tensor, in_channels, out_channels, kernel, _groups(groups),
                                  "ttnn.prepare_conv_weights"))


@register_op("ttnn.prepare_conv_weights", traits={Trait.HOST}, golden=_prepare_conv_weights_golden)
def prepare_conv_weights(*, weight_tensor: Tensor, input_memory_config: MemoryConfig, input_layout: Layout,
                         weights_format: str, in_channels: int, out_channels: int, batch_size: int,
                         input_height: int, input_width: int, kernel_size, stride, padding, dilation,
                         has_bias: bool, groups: int, device, input_dtype: DataType,
                         output_dtype: DataType | None = None, conv_config: Conv2dConfig | None = None,
                         compute_config=None, slice_config: Conv2dSliceConfig | None = None,
                         op_name: str = OWN_NAME) -> Tensor:
    """The weights conv2d uses, on `device`: [1, 1, KH*KW*in_channels/groups, out_channels] in TILE.

    weights_format names the given layout; only "OIHW" (torch's) exists in TT-NN.

    >>> w = ttnn.from_torch(torch.ones(3, 2, 3, 3), ttnn.bfloat16)
    >>> p = ttnn.prepare_conv_weights(weight_tensor=w, input_memory_config=ttnn.DRAM, input_layout=ttnn.ROW_MAJOR,
    ...     weights_format="OIHW", in_channels=2, out_channels=3, batch_size=1, input_height=4, input_width=4,
    ...     kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), dilation=(1, 1), has_bias=False, groups=1,
    ...     device=device, input_dtype=ttnn.bfloat16)
    >>> p.layout, p.storage_type()
    (Layout.TILE, <StorageType.DEVICE: 1>)
    """
    if weights_format != "OIHW":
        raise ValueError(f"{op_name}: weights_format={weights_format!r}; TT-NN takes only 'OIHW'")
    _check_conv_args(in_channels, out_channels, groups, conv_config, slice_config, op_name)
    w = _prepare_conv_weights_golden(weight_tensor=values(weight_tensor, op_name), in_channels=in_channels,
                                     out_channels=out_channels, kernel_size=kernel_size, groups=groups,
                                     input_height=input_height)
    dtype = output_dtype or (conv_config.weights_dtype if conv_config is not None else None) or weight_tensor.dtype
    return _make(w, device, [], op_name=op_name, dtype=dtype, layout=Layout.TILE,
                 memory_config=placement.get_default_memory_config())


def _prepare_conv_bias_golden(*_, bias_tensor, out_channels, **__):
    if bias_tensor.numel() != out_channels:
        raise ValueError(f"ttnn.prepare_conv_bias: bias shape {list(bias_tensor.shape)} does not hold "
                         f"out_channels={out_channels} values")
    return bias_tensor.float().reshape(1, 1, 1, out_channels)


@register_op("ttnn.prepare_conv_bias", traits={Trait.HOST}, golden=_prepare_conv_bias_golden)
def prepare_conv_bias(*, bias_tensor: Tensor, input_memory_config: MemoryConfig, input_layout: Layout,
                      in_channels: int, out_channels: int, batch_size: int, input_height: int, input_width: int,
                      kernel_size, stride, padding, dilation, groups: int, device, input_dtype: DataType,
                      output_dtype: DataType | None = None, conv_config: Conv2dConfig | None = None,
                      compute_config=None, slice_config: Conv2dSliceConfig | None = None,
                      op_name: str = OWN_NAME) -> Tensor:
    """The bias conv2d uses, on `device`: [1, 1, 1, out_channels] in TILE.

    >>> b = ttnn.from_torch(torch.ones(1, 1, 1, 3), ttnn.bfloat16)
    >>> p = ttnn.prepare_conv_bias(bias_tensor=b, input_memory_config=ttnn.DRAM, input_layout=ttnn.ROW_MAJOR,
    ...     in_channels=2, out_channels=3, batch_size=1, input_height=4, input_width=4, kernel_size=(3, 3),
    ...     stride=(1, 1), padding=(1, 1), dilation=(1, 1), groups=1, device=device, input_dtype=ttnn.bfloat16)
    >>> p.shape, p.layout
    (Shape([1, 1, 1, 3]), Layout.TILE)
    """
    b = _prepare_conv_bias_golden(bias_tensor=values(bias_tensor, op_name), out_channels=out_channels)
    dtype = output_dtype or (conv_config.weights_dtype if conv_config is not None else None) or bias_tensor.dtype
    return _make(b, device, [], op_name=op_name, dtype=dtype, layout=Layout.TILE,
                 memory_config=placement.get_default_memory_config())


def _conv1d_padding(padding) -> tuple[int, int]:
    """conv1d's padding, one int or TT-NN's (left, right) pair, as (left, right)."""
    return (padding, padding) if isinstance(padding, int) else tuple(padding)


def _conv1d_golden(*_, input_tensor, weight_tensor, in_channels, out_channels, batch_size, input_length,
                   kernel_size, stride=1, padding=0, dilation=1, groups=1, bias_tensor=None, conv_config=None, **__):
    # A 1D conv is conv2d over [N, L, 1, C] with a [K, 1] kernel; padding is one int or (left, right).
    w = weight_tensor if weight_tensor.dim() != 3 else weight_tensor.unsqueeze(-1)
    return _conv2d_golden(input_tensor=input_tensor, weight_tensor=w, in_channels=in_channels,
                          out_channels=out_channels, batch_size=batch_size, input_height=input_length, input_width=1,
                          kernel_size=(kernel_size, 1), stride=(stride, 1), padding=(*_conv1d_padding(padding), 0, 0),
                          dilation=(dilation, 1), groups=groups, bias_tensor=bias_tensor, conv_config=conv_config)


@register_op("ttnn.conv1d", golden=_conv1d_golden)
def conv1d(*, input_tensor: Tensor, weight_tensor: Tensor, device=None, in_channels: int, out_channels: int,
           batch_size: int, input_length: int, kernel_size: int, stride: int = 1, padding: int = 0,
           dilation: int = 1, groups: int = 1, dtype: DataType | None = None, bias_tensor: Tensor | None = None,
           conv_config: Conv2dConfig | None = None, compute_config=None, memory_config: MemoryConfig | None = None,
           return_output_dim: bool = False, return_weights_and_bias: bool = False,
           op_name: str = OWN_NAME, **tt_nn_only):
    """1D convolution of an NLC input ([N, L, C] or [1, 1, N*L, C]) with weights [out_channels,
    in_channels/groups, K]: [1, 1, N*OL, out_channels]. Returns the output, then OL if return_output_dim, then
    the prepared (weights, bias) if return_weights_and_bias, as conv2d does.

    >>> x = ttnn.from_torch(torch.ones(1, 8, 2), device=device)  # NLC
    >>> w = ttnn.from_torch(torch.ones(3, 2, 3))  # [out, in, kernel], on the host
    >>> y, length = ttnn.conv1d(input_tensor=x, weight_tensor=w, device=device, in_channels=2,
    ...     out_channels=3, batch_size=1, input_length=8, kernel_size=3, padding=1, return_output_dim=True)
    >>> y.shape, length
    (Shape([1, 1, 8, 3]), 8)
    """
    device = _conv_inputs(op_name, tt_nn_only, (input_tensor, weight_tensor, bias_tensor), device, in_channels,
                          out_channels, groups, conv_config, None)
    w = values(weight_tensor, op_name)
    args = dict(input_tensor=values(input_tensor, op_name), weight_tensor=w, in_channels=in_channels,
                out_channels=out_channels, batch_size=batch_size, input_length=input_length, kernel_size=kernel_size,
                stride=stride, padding=padding, dilation=dilation, groups=groups, conv_config=conv_config,
                bias_tensor=values(bias_tensor, op_name) if bias_tensor is not None else None)
    y = _conv1d_golden(**args)
    out = _conv_output(y, device, input_tensor, op_name, dtype, conv_config, memory_config)
    # TT-NN's conv1d is conv2d over [N, L, 1, C] with a (K, 1) kernel (conv1d.cpp): the same device operations
    top, bottom = _conv1d_padding(padding)
    _launch_conv2d(out, input_tensor, weight_tensor, bias_tensor, conv_config,
                   dict(kernel_size=(kernel_size, 1), stride=(stride, 1), dilation=(dilation, 1), groups=groups,
                        batch_size=batch_size, input_height=input_length, input_width=1, in_channels=in_channels,
                        out_channels=out_channels), (top, bottom, 0, 0))
    weights = None
    if return_weights_and_bias:
        args2d = dict(args, weight_tensor=w if w.dim() != 3 else w.unsqueeze(-1), kernel_size=(kernel_size, 1))
        weights = _weights_on_device(weight_tensor, bias_tensor, args2d, device, conv_config, op_name)
    return _returned(out, y.shape[2] // batch_size if return_output_dim else None, weights)


def _transpose_weight(w: torch.Tensor, in_channels: int, out_channels: int, kernel, groups: int,
                      mirror_kernel: bool, op_name: str) -> torch.Tensor:
    """conv_transpose2d's weights as torch's conv_transpose2d takes them for one group: [in, out, KH, KW], the
    groups' blocks spread over zeros as TT-NN runs a grouped one. From TT-NN's torch layout [in_channels,
    out_channels/groups, KH, KW], or prepared: conv2d's [1, 1, KH*KW*in_channels, out_channels] of that kernel
    transposed and mirrored (_prepared_transpose), so both run the same sums."""
    kh, kw = kernel
    if tuple(w.shape) == (in_channels, out_channels // groups, kh, kw):
        # mirror_kernel=False says the caller's kernel is mirrored already; torch's formula takes it unmirrored.
        return _grouped_full(w if mirror_kernel else w.flip(-2, -1), groups)
    if tuple(w.shape) == (1, 1, kh * kw * in_channels, out_channels):
        return _conv_weight(w, in_channels, out_channels, kernel, 1, op_name).flip(-2, -1).transpose(0, 1).contiguous()
    raise ValueError(
        f"{op_name}: weight shape {list(w.shape)} is neither [in_channels, out_channels/groups, KH, KW] = "
        f"{[in_channels, out_channels // groups, kh, kw]} nor prepared [1, 1, KH*KW*in_channels, out_channels] = "
        f"{[1, 1, kh * kw * in_channels, out_channels]}")


def _grouped_full(w_iohw: torch.Tensor, groups: int) -> torch.Tensor:
    """[in, out/groups, KH, KW] -> [in, out, KH, KW] with each group's block in place and zeros off them
    (convert_conv_weight_tensor_to_grouped_layout_for_conv_transpose2d)."""
    cin, og, kh, kw = w_iohw.shape
    full = torch.zeros(cin, og * groups, kh, kw, dtype=torch.float32)
    ig = cin // groups
    for g in range(groups):
        full[g * ig:(g + 1) * ig, g * og:(g + 1) * og] = w_iohw[g * ig:(g + 1) * ig].float()
    return full


def _prepared_transpose(w_iohw: torch.Tensor, groups: int, mirror_kernel: bool) -> torch.Tensor:
    """prepare_conv_transpose2d_weights' math: the groups spread over zeros (_grouped_full), then [out, in, KH, KW]
    with KH and KW reversed unless mirror_kernel=False (transform_weights_for_conv_transpose2d), then conv2d's
    prepared form: the conv over the halo's full input that TT-NN runs with stride 1 and one group."""
    oihw = _grouped_full(w_iohw, groups).transpose(0, 1)
    return _prepared(oihw.flip(-2, -1) if mirror_kernel else oihw)


def _prepare_conv_transpose2d_weights_golden(*_, weight_tensor, in_channels, out_channels, kernel_size, groups,
                                             mirror_kernel=True, **__):
    op_name = "ttnn.prepare_conv_transpose2d_weights"
    (kh, kw), groups = _pair(kernel_size, "kernel_size", op_name), _groups(groups)
    if tuple(weight_tensor.shape) != (in_channels, out_channels // groups, kh, kw):
        raise ValueError(f"{op_name}: weight shape {list(weight_tensor.shape)} must be [in_channels, "
                         f"out_channels/groups, KH, KW] = {[in_channels, out_channels // groups, kh, kw]} (IOHW)")
    return _prepared_transpose(weight_tensor, groups, mirror_kernel)


def _weights_dtype(conv_config, tensor: Tensor) -> DataType:
    """The prepared weights' dtype: conv_config.weights_dtype, else the tensor's (prepare_conv2d_weights.cpp;
    DataType.BFLOAT16 is 0, so `or` would skip it)."""
    w_dtype = conv_config.weights_dtype if conv_config is not None else None
    return w_dtype if w_dtype is not None else tensor.dtype


def _transpose_weight_on_device(weight_tensor: Tensor, *, in_channels, out_channels, kernel_size, groups,
                                mirror_kernel, device, conv_config, op_name) -> Tensor:
    """prepare_conv_transpose2d_weights' tensor: TILE, in conv_config.weights_dtype or the weight's, on `device`."""
    w = _prepare_conv_transpose2d_weights_golden(
        weight_tensor=values(weight_tensor, op_name), in_channels=in_channels, out_channels=out_channels,
        kernel_size=kernel_size, groups=groups, mirror_kernel=mirror_kernel)
    return _make(w, device, [], op_name=op_name, dtype=_weights_dtype(conv_config, weight_tensor), layout=Layout.TILE,
                 memory_config=placement.get_default_memory_config())


def _bias_on_device(bias_tensor: Tensor, out_channels: int, device, conv_config, op_name: str) -> Tensor:
    """prepare_conv_bias' tensor ([1, 1, 1, out_channels], TILE), for conv_transpose2d."""
    b = _prepare_conv_bias_golden(bias_tensor=values(bias_tensor, op_name), out_channels=out_channels)
    return _make(b, device, [], op_name=op_name, dtype=_weights_dtype(conv_config, bias_tensor), layout=Layout.TILE,
                 memory_config=placement.get_default_memory_config())


def _conv_transpose2d_golden(*_, input_tensor, weight_tensor, in_channels, out_channels, batch_size, input_height,
                             input_width, kernel_size, stride=(1, 1), padding=(0, 0), output_padding=(0, 0),
                             dilation=(1, 1), groups=1, bias_tensor=None, conv_config=None, mirror_kernel=True, **__):
    op_name = "ttnn.conv_transpose2d"
    kernel, groups = _pair(kernel_size, "kernel_size", op_name), _groups(groups)
    x = _nchw(input_tensor, batch_size, input_height, input_width, in_channels, op_name)
    w = _transpose_weight(weight_tensor, in_channels, out_channels, kernel, groups, mirror_kernel, op_name)
    b = bias_tensor.float().reshape(-1) if bias_tensor is not None else None
    left, right, top, bottom = _padding(padding, op_name)
    y = F.conv_transpose2d(x, w, b, _pair(stride, "stride", op_name), 0, _pair(output_padding, "output_padding",
                           op_name), 1, _pair(dilation, "dilation", op_name))  # w spreads the groups out
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
                     return_weights_and_bias: bool = False, op_name: str = OWN_NAME, **tt_nn_only):
    """Transposed convolution of an NHWC input with weights [in_channels, out_channels/groups, KH, KW] (or
    prepared by ttnn.prepare_conv_transpose2d_weights), as torch's conv_transpose2d: [1, 1, N*OH*OW, out_channels].
    Returns like conv2d; the weights and bias returned with return_weights_and_bias are those
    prepare_conv_transpose2d_weights / _bias make (given ones already on the device, as they are).

    >>> x = ttnn.from_torch(torch.ones(1, 2, 2, 4), ttnn.bfloat16, device=device)  # NHWC
    >>> w = ttnn.from_torch(torch.ones(4, 3, 2, 2), ttnn.bfloat16)  # [in, out, kh, kw], on the host
    >>> y, (h, w_out) = ttnn.conv_transpose2d(input_tensor=x, weight_tensor=w, device=device, in_channels=4,
    ...     out_channels=3, batch_size=1, input_height=2, input_width=2, kernel_size=(2, 2), stride=(2, 2),
    ...     return_output_dim=True)
    >>> y.shape, (h, w_out)
    (Shape([1, 1, 16, 3]), (4, 4))
    """
    device = _conv_inputs(op_name, tt_nn_only, (input_tensor, weight_tensor, bias_tensor), device, in_channels,
                          out_channels, groups, conv_config, dram_slice_config)
    y = _conv_transpose2d_golden(
        input_tensor=values(input_tensor, op_name), weight_tensor=values(weight_tensor, op_name),
        in_channels=in_channels, out_channels=out_channels, batch_size=batch_size, input_height=input_height,
        input_width=input_width, kernel_size=kernel_size, stride=stride, padding=padding,
        output_padding=output_padding, dilation=dilation, groups=groups, conv_config=conv_config,
        bias_tensor=values(bias_tensor, op_name) if bias_tensor is not None else None, mirror_kernel=mirror_kernel)
    out = _conv_output(y, device, input_tensor, op_name, dtype, conv_config, memory_config)
    _launch_conv_transpose2d(out, input_tensor, weight_tensor, bias_tensor, conv_config, dram_slice_config, dict(
        batch_size=batch_size, input_height=input_height, input_width=input_width, in_channels=in_channels,
        out_channels=out_channels, kernel_size=kernel_size, stride=stride, padding=padding,
        output_padding=output_padding, dilation=dilation))
    dims = weights = None
    if return_output_dim:
        pairs = ((kernel_size, "kernel_size"), (stride, "stride"), (dilation, "dilation"),
                 (output_padding, "output_padding"))
        (kh, kw), (sh, sw), (dh, dw), (oph, opw) = (_pair(v, n, op_name) for v, n in pairs)
        left, right, top, bottom = _padding(padding, op_name)
        dims = ((input_height - 1) * sh - top - bottom + dh * (kh - 1) + oph + 1,
                (input_width - 1) * sw - left - right + dw * (kw - 1) + opw + 1)
    if return_weights_and_bias:
        # host weights are prepared as prepare_conv_transpose2d_weights / _bias prepare them; device ones are already
        weights = (weight_tensor if weight_tensor.device() is not None else _transpose_weight_on_device(
            weight_tensor, in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size, groups=groups,
            mirror_kernel=mirror_kernel, device=device, conv_config=conv_config, op_name=op_name),
                   bias_tensor if bias_tensor is None or bias_tensor.device() is not None else
                   _bias_on_device(bias_tensor, out_channels, device, conv_config, op_name))
    return _returned(out, dims, weights)


@register_op("ttnn.prepare_conv_transpose2d_weights", traits={Trait.HOST},
             golden=_prepare_conv_transpose2d_weights_golden)
def prepare_conv_transpose2d_weights(*, weight_tensor: Tensor, input_memory_config: MemoryConfig,
                                     input_layout: Layout, weights_format: str, in_channels: int, out_channels: int,
                                     batch_size: int, input_height: int, input_width: int, kernel_size, stride,
                                     padding, dilation, has_bias: bool, groups: int, device, input_dtype: DataType,
                                     output_dtype: DataType | None = None, conv_config: Conv2dConfig | None = None,
                                     compute_config=None, dram_slice_config: Conv2dSliceConfig | None = None,
                                     mirror_kernel: bool = True, op_name: str = OWN_NAME) -> Tensor:
    """The weights conv_transpose2d uses, on `device`: conv2d's prepared [1, 1, KH*KW*in_channels, out_channels]
    (TILE, in conv_config.weights_dtype or the tensor's) of the kernel transposed to [out, in, KH, KW], its groups
    spread over zeros and KH, KW reversed unless mirror_kernel=False. The same tensor conv_transpose2d returns with
    return_weights_and_bias=True; conv_transpose2d takes it back. weights_format must be "IOHW" (torch's).

    >>> w = ttnn.from_torch(torch.ones(2, 3, 2, 2), ttnn.bfloat16)  # [in, out, kh, kw], on the host
    >>> p = ttnn.prepare_conv_transpose2d_weights(weight_tensor=w, input_memory_config=ttnn.L1,
    ...     input_layout=ttnn.ROW_MAJOR, weights_format="IOHW", in_channels=2, out_channels=3, batch_size=1,
    ...     input_height=4, input_width=4, kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1),
    ...     has_bias=False, groups=1, device=device, input_dtype=ttnn.bfloat16)
    >>> p.shape, p.layout
    (Shape([1, 1, 8, 3]), Layout.TILE)
    """
    if weights_format != "IOHW":  # prepare_conv_transpose2d_weights.cpp's TT_ASSERT
        raise ValueError(f"{op_name}: weights_format={weights_format!r}; PyTorch's ConvTranspose2D weights are "
                         f"'IOHW': pass weights_format='IOHW'")
    _check_conv_args(in_channels, out_channels, groups, conv_config, dram_slice_config, op_name)
    # a weight already on a device is read back and prepared the same (transform_weights_for_conv_transpose2d)
    return _transpose_weight_on_device(weight_tensor, in_channels=in_channels, out_channels=out_channels,
                                       kernel_size=kernel_size, groups=groups, mirror_kernel=mirror_kernel,
                                       device=device, conv_config=conv_config, op_name=op_name)


@register_op("ttnn.prepare_conv_transpose2d_bias", traits={Trait.HOST}, golden=_prepare_conv_bias_golden)
def prepare_conv_transpose2d_bias(*, bias_tensor: Tensor, input_memory_config: MemoryConfig, input_layout: Layout,
                                  in_channels: int, out_channels: int, batch_size: int, input_height: int,
                                  input_width: int, kernel_size, stride, padding, dilation, groups: int, device,
                                  input_dtype: DataType, output_dtype: DataType | None = None,
                                  conv_config: Conv2dConfig | None = None, compute_config=None,
                                  dram_slice_config: Conv2dSliceConfig | None = None,
                                  op_name: str = OWN_NAME) -> Tensor:
    """The bias conv_transpose2d uses, on `device`: prepare_conv_bias's [1, 1, 1, out_channels] in TILE (TT-NN
    prepares it as the bias of the stride-1 conv2d it runs).

    >>> b = ttnn.from_torch(torch.ones(1, 1, 1, 3), ttnn.bfloat16)
    >>> p = ttnn.prepare_conv_transpose2d_bias(bias_tensor=b, input_memory_config=ttnn.L1,
    ...     input_layout=ttnn.ROW_MAJOR, in_channels=2, out_channels=3, batch_size=1, input_height=4, input_width=4,
    ...     kernel_size=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1), groups=1, device=device,
    ...     input_dtype=ttnn.bfloat16)
    >>> p.shape, p.layout
    (Shape([1, 1, 1, 3]), Layout.TILE)
    """
    _check_conv_args(in_channels, out_channels, groups, conv_config, dram_slice_config, op_name)
    return _bias_on_device(bias_tensor, out_channels, device, conv_config, op_name)


# -- conv3d (ttnn.experimental) ---------------------------------------------------------------

def _triple(v, name: str, op_name: str) -> tuple[int, int, int]:
    t = tuple(v) if isinstance(v, (tuple, list)) else (v, v, v)
    if len(t) != 3:
        raise ValueError(f"{op_name}: {name} {v!r} must be 3 ints (depth, height, width)")
    return t


def _conv3d_grouped(w: torch.Tensor, groups: int) -> torch.Tensor:
    """convert_conv_weight_tensor_to_grouped_layout (on the host): C_in widened by the groups, zeros off each output
    channel's group."""
    if groups <= 1:
        return w
    c_out, per_group = w.shape[:2]
    full = w.new_zeros(c_out, per_group * groups, *w.shape[2:])
    size = c_out // groups
    for o in range(c_out):
        g = min(o // size, groups - 1)
        full[o, g * per_group:(g + 1) * per_group] = w[o]
    return full


def _conv3d_prepared(w: torch.Tensor, groups: int, c_in_block: int, alignment: int, op_name: str) -> torch.Tensor:
    """prepare_conv3d_weights.cpp: [C_out, C_in/groups, kD, kH, kW] -> [kD*kH*kW*C_in_aligned, C_out], rows in
    (C_in block, kd, kh, kw, c within the block) order. Groups widen C_in with zeros off each output channel's group
    (convert_conv_weight_tensor_to_grouped_layout); C_in is padded with zeros to `alignment`."""
    c_out, kd, kh, kw = w.shape[0], *w.shape[2:]
    w = _conv3d_grouped(w, groups).permute(2, 3, 4, 1, 0)  # kD, kH, kW, C_in, C_out
    if w.shape[3] % alignment:
        w = F.pad(w, (0, 0, 0, alignment - w.shape[3] % alignment))
    c_in = w.shape[3]
    block = c_in_block or c_in
    if c_in % block:
        raise tt_fatal("num_C_in_blocks * C_in_block == C_in_aligned",
                       f"{op_name}: C_in_aligned ({c_in}) must be divisible by C_in_block ({block})", _CONV_HERE)
    w = w.reshape(kd, kh, kw, c_in // block, block, c_out).permute(3, 0, 1, 2, 4, 5)
    return w.reshape(-1, c_out)


def _conv3d_unprepared(w: torch.Tensor, kernel, c_in: int, c_in_block: int) -> torch.Tensor:
    """The inverse of _conv3d_prepared for an input of c_in (aligned) channels: [C_out, C_in, kD, kH, kW]."""
    kd, kh, kw = kernel
    block = c_in_block or c_in
    w = w.reshape(c_in // block, kd, kh, kw, block, w.shape[-1]).permute(1, 2, 3, 0, 4, 5)
    return w.reshape(kd, kh, kw, c_in, -1).permute(4, 3, 0, 1, 2)


def _conv3d_default_config(kernel, dilation, device) -> Conv3dConfig:
    """conv3d.cpp's conservative default: one output row of each dim a block, C_out_block one tile, and the
    smallest C_in_block with kD*kH*kW*C_in_block a whole number of tiles and C_in_block a multiple of the L1
    alignment (16 bytes), on the device's whole grid."""
    vol = kernel[0] * kernel[1] * kernel[2]
    grid = device.compute_with_storage_grid_size() if device is not None else (1, 1)
    return Conv3dConfig(C_out_block=32, C_in_block=math.lcm(16, 32 // math.gcd(vol, 32)), dilation=dilation,
                        compute_with_storage_grid_size=grid)


def _conv3d_golden(*_, input_tensor, weight_tensor, bias_tensor=None, config=None, output_channels, kernel_size,
                   stride=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1), padding_mode="zeros", groups=1,
                   compute_kernel_config=None, **__):
    """Conv3dOp on an [N, D, H, W, C] input: the conv of each C_in block (C_in_block input channels at a time, as
    the cores split it) summed, a bfloat16 sum between blocks unless fp32_dest_acc_en (use_fp32_partials), plus the
    bias; [N, D_out, H_out, W_out, C_out]."""
    op_name = "ttnn.experimental.conv3d"
    kernel, st, pad, dil = (_triple(v, n, op_name) for v, n in ((kernel_size, "kernel_size"), (stride, "stride"),
                                                               (padding, "padding"), (dilation, "dilation")))
    x = input_tensor.float().permute(0, 4, 1, 2, 3)  # N, C, D, H, W
    c_in = x.shape[1]
    block = (config.C_in_block if config is not None else 0) or c_in
    w = weight_tensor.float()
    if w.dim() == 5:  # torch's layout: conv3d prepares it first (prepare_and_check_weight_tensor)
        w = _conv3d_prepared(w, groups, block, config.alignment if config is not None else 32, op_name)
    w = _conv3d_unprepared(w.reshape(-1, w.shape[-1]), kernel, c_in, block)
    pads = (pad[2], pad[2], pad[1], pad[1], pad[0], pad[0])
    x = F.pad(x, pads, mode="replicate") if padding_mode == "replicate" else F.pad(x, pads)
    fp32 = bool(getattr(compute_kernel_config, "fp32_dest_acc_en", False))
    y = None
    for b in range(c_in // block):
        part = F.conv3d(x[:, b * block:(b + 1) * block], w[:, b * block:(b + 1) * block], stride=st, dilation=dil)
        if not fp32 and c_in > block:  # the partials CB holds the input's format (bfloat16)
            part = part.bfloat16().float()
            y = part if y is None else (y + part).bfloat16().float()
        else:
            y = part if y is None else y + part
    y = y[:, :output_channels]
    if bias_tensor is not None:
        y = y + bias_tensor.float().reshape(-1)[:output_channels].reshape(1, -1, 1, 1, 1)
    return y.permute(0, 2, 3, 4, 1)


@register_op("ttnn.experimental.conv3d", kind="conv2d", golden=_conv3d_golden)
def conv3d(*, input_tensor: Tensor, weight_tensor: Tensor, device=None, bias_tensor: Tensor | None = None,
           config: Conv3dConfig | None = None, dtype: DataType = DataType.BFLOAT16, output_channels: int,
           kernel_size, stride=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1), padding_mode: str = "zeros",
           groups: int = 1, memory_config: MemoryConfig | None = None, compute_kernel_config=None,
           op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """3D convolution of an [N, D, H, W, C] ROW_MAJOR input (C padded to the config's alignment, 32); the output is
    [N, D_out, H_out, W_out, output_channels], ROW_MAJOR. weight_tensor is prepared by
    ttnn.experimental.prepare_conv3d_weights ([kD*kH*kW*C, C_out]) or torch's [C_out, C_in/groups, kD, kH, kW] on
    the host (prepared here); bias_tensor is [1, C_out] in TILE. Without a config, conv3d.cpp's default blocking.
    Emitted as conv2d's kind: a gather of windows (vol2col) and a matmul.

    >>> x = ttnn.from_torch(torch.ones(1, 3, 4, 4, 32), ttnn.bfloat16, device=device)  # N, D, H, W, C
    >>> w = ttnn.from_torch(torch.ones(32, 32, 3, 3, 3), ttnn.bfloat16)  # torch's layout, on the host
    >>> y = ttnn.experimental.conv3d(input_tensor=x, weight_tensor=w, device=device, dtype=ttnn.bfloat16,
    ...                              output_channels=32, kernel_size=(3, 3, 3), padding=(0, 1, 1))
    >>> y.shape, y.to_torch()[0, 0, 1, 1, 0].item()  # an inner voxel sees 27 x 32 ones
    (Shape([1, 1, 4, 4, 32]), 864.0)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    kernel, st, pad, dil = (_triple(v, n, op_name) for v, n in ((kernel_size, "kernel_size"), (stride, "stride"),
                                                               (padding, "padding"), (dilation, "dilation")))
    x_device = input_tensor.device()
    device = device if device is not None else x_device
    if config is None:
        config = _conv3d_default_config(kernel, dil, device)
    shape = tuple(input_tensor.shape)
    checks = ((len(shape) == 5, "input_tensor.logical_shape().size() == 5", f"the input must be [N, D, H, W, C], got "
                                                                             f"{list(shape)}"),
              (input_tensor.layout == Layout.ROW_MAJOR, "input_tensor.layout() == Layout::ROW_MAJOR",
               "the input must be ROW_MAJOR"),
              (padding_mode in ("zeros", "replicate"), "padding_mode == zeros || padding_mode == replicate",
               f"padding_mode must be 'zeros' or 'replicate', got {padding_mode!r}"),
              (not config.C_out_block or config.C_out_block % 32 == 0,
               "C_out_block % TILE_WIDTH == 0", f"C_out_block ({config.C_out_block}) must be a multiple of 32"))
    for ok, condition, message in checks:
        if not ok:
            raise tt_fatal(condition, f"{op_name}: {message}", _CONV_HERE)
    c_in = shape[4]
    if config.C_in_block and (c_in % config.C_in_block or config.C_in_block % 16):
        raise tt_fatal("C_in % C_in_block == 0 && C_in_block % l1_alignment == 0",
                       f"{op_name}: input channels ({c_in}) must be divisible by C_in_block ({config.C_in_block}), "
                       f"a multiple of 16", _CONV_HERE)
    w = weight_tensor
    if len(w.shape) == 5 and w.device() is not None:
        raise tt_fatal("weight_tensor.device() == nullptr", f"{op_name}: an unprepared (5D) weight tensor must be "
                       f"on the host; prepare it with ttnn.experimental.prepare_conv3d_weights", _CONV_HERE)
    device_inputs(op_name, input_tensor, bias_tensor)
    args = dict(input_tensor=values(input_tensor, op_name), weight_tensor=values(w, op_name),
                bias_tensor=values(bias_tensor, op_name) if bias_tensor is not None else None, config=config,
                output_channels=output_channels, kernel_size=kernel, stride=st, padding=pad, dilation=dil,
                padding_mode=padding_mode, groups=groups, compute_kernel_config=compute_kernel_config)
    rows = kernel[0] * kernel[1] * kernel[2] * c_in
    if len(w.shape) == 2 and tuple(w.shape) != (rows, output_channels):
        raise tt_fatal("weight_tensor.logical_shape() == {patch_size, output_channels}",
                       f"{op_name}: prepared weights {list(w.shape)} must be [kD*kH*kW*C_in, C_out] = "
                       f"[{rows}, {output_channels}]", _CONV_HERE)
    y = _conv3d_golden(**args)
    out = _make(y, device, [input_tensor], op_name=op_name, dtype=dtype, layout=Layout.ROW_MAJOR,
                memory_config=memory_config)
    if x_device is not None:
        device_work.launch_for(out, True, x_device, conv_programs.conv3d_program(
            x_device, shape, out_shape=tuple(out.shape), kernel=kernel, stride=st, dilation=dil,
            dtype=input_tensor.dtype, config=config, bias=bias_tensor is not None,
            fp32_dest_acc_en=bool(getattr(compute_kernel_config, "fp32_dest_acc_en", False))))
    return out


def _prepare_conv3d_weights_golden(*_, weight_tensor, groups=1, C_in_block=0, alignment=32, **__):
    return _conv3d_prepared(weight_tensor.float(), groups, C_in_block, alignment, "prepare_conv3d_weights")


@register_op("ttnn.experimental.prepare_conv3d_weights", kind="move", golden=_prepare_conv3d_weights_golden)
def prepare_conv3d_weights(*, weight_tensor: Tensor, groups: int = 1, C_in_block: int = 0, alignment: int = 32,  # noqa: N803
                           device=None, op_name: str = OWN_NAME) -> Tensor:
    """torch's [C_out, C_in/groups, kD, kH, kW] weights as ttnn.experimental.conv3d reads them: [kD*kH*kW*C_in, C_out]
    on `device`, ROW_MAJOR (conv3d tilizes them), C_in widened by the groups and padded to `alignment`, rows in
    (C_in block, kd, kh, kw, c) order (prepare_conv3d_weights.cpp: a grouped copy on the host, then to_device,
    permute, pad, reshape, permute, reshape on the device).

    >>> w = ttnn.from_torch(torch.ones(32, 8, 1, 1, 1), ttnn.bfloat16)
    >>> ttnn.experimental.prepare_conv3d_weights(weight_tensor=w, device=device).shape  # C_in 8 padded to 32
    Shape([32, 32])
    """
    device = device if device is not None else weight_tensor.device()
    w = weight_tensor
    if groups > 1 or w.device() is None:  # the grouped copy is made on the host, then written to the device
        w = core.from_torch(_conv3d_grouped(values(weight_tensor, op_name), groups), weight_tensor.dtype,
                            layout=weight_tensor.layout, device=device)
    w = core.permute(w, (2, 3, 4, 1, 0))  # kD, kH, kW, C_in, C_out
    c_in = w.shape[3]
    if c_in % alignment:
        w = creation.pad(w, [(0, 0), (0, 0), (0, 0), (0, alignment - c_in % alignment), (0, 0)], 0.0)
    kd, kh, kw, c_in, c_out = w.shape
    block = C_in_block or c_in
    if c_in % block:
        raise tt_fatal("num_C_in_blocks * C_in_block == C_in_aligned",
                       f"{op_name}: C_in_aligned ({c_in}) must be divisible by C_in_block ({block})", _CONV_HERE)
    w = core.reshape(w, (kd, kh, kw, c_in // block, block, c_out))
    return core.reshape(core.permute(w, (3, 0, 1, 2, 4, 5)), (-1, c_out))
