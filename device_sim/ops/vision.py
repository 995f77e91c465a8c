"""Vision ops on TT-NN's NHWC tensors: pooling, upsample, fold, rotate, and the helpers conv.py shares.

    import device_sim as ttnn
    x = ttnn.from_torch(torch.randn(1, 1, 64, 32), device=device)          # N=1, H=W=8, C=32, flattened
    p = ttnn.max_pool2d(x, 1, 8, 8, 32, [2, 2], [2, 2], [0, 0], [1, 1])
    p.shape   # [1, 1, 16, 32]: TT-NN's pool (and conv) outputs are [1, 1, N*OH*OW, C]

Inputs are NHWC, either [N, H, W, C] or already flattened to [1, 1, N*H*W, C]; the op is told N, H,
W and C, as in TT-NN. Each op is one recorded op with one output buffer. Approximate: the output
memory config follows the memory rules (DESIGN.md) rather than TT-NN's sharding heuristics.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from device_sim import device_work, dtypes, placement
from device_sim.ops.common import check_tt_nn_only, device_inputs, four_d_input, values
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import adaptive_pool as adaptive_pool_programs
from device_sim.programs import fold as fold_programs
from device_sim.programs import pool as pool_programs
from device_sim.programs import vision as vision_programs
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor
from device_sim.types import (
    BufferType,
    CoreCoord,
    CoreRange,
    CoreRangeSet,
    DataType,
    Layout,
    MemoryConfig,
    ShardOrientation,
    ShardSpec,
    TensorMemoryLayout,
)


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
    cfg, source = ((placement.resolve(memory_config, [t for t in inputs if t.device() is not None], op_name))
                   if device is not None else (None, None))
    return Tensor._create(dtypes.to_device_values(value, dtype), dtype, layout, device, cfg, source)


# -- pooling and resizing --------------------------------------------------------------------

def _max_pool2d_golden(input_tensor, batch_size, input_h, input_w, channels, kernel_size, stride, padding,
                       dilation=(1, 1), ceil_mode=False, *, return_indices=False, **_):
    """The max of each window (padding is -inf); with return_indices, TT-NN's golden's second result too: each
    max's flat h * input_w + w in its image (torch's max_pool2d indices), [1, 1, N*OH*OW, C] like the output."""
    op_name = "ttnn.max_pool2d"
    left, right, top, bottom = _padding(padding, op_name)
    x = F.pad(_nchw(input_tensor, batch_size, input_h, input_w, channels, op_name), (left, right, top, bottom),
              value=float("-inf"))
    y, at = F.max_pool2d(x, _pair(kernel_size, "kernel_size", op_name), _pair(stride, "stride", op_name), 0,
                         _pair(dilation, "dilation", op_name), ceil_mode=ceil_mode, return_indices=True)
    if not return_indices:
        return _flat(y)
    wide = input_w + left + right  # indices into the padded plane, back to the input's own
    return _flat(y), _flat((at // wide - top) * input_w + at % wide - left)


@register_op("ttnn.max_pool2d", golden=_max_pool2d_golden)
def max_pool2d(input_tensor: Tensor, batch_size: int, input_h: int, input_w: int, channels: int, kernel_size,
               stride, padding, dilation, ceil_mode: bool = False, *, memory_config: MemoryConfig | None = None,
               dram_slice_config=None, applied_shard_scheme=None, deallocate_input: bool = False,
               reallocate_halo_output: bool = True, dtype: DataType = DataType.BFLOAT16,
               output_layout: Layout = Layout.ROW_MAJOR, config_tensor_in_dram: bool = False,
               return_indices: bool = False, op_name: str = OWN_NAME, **tt_nn_only):
    """Max over each kernel window (padding counts as -inf); output [1, 1, N*OH*OW, C], ROW_MAJOR by default.

    deallocate_input=True frees the input's buffer after the op, as TT-NN does. return_indices=True returns
    (output, indices): each max's flat h * input_w + w in its image, uint16 (uint32 when input_h * input_w passes
    65535), in the output's layout. Its CBs (the index reader's) are not modelled: the pool's program is launched.

    >>> x = ttnn.from_torch(torch.arange(16.0).reshape(1, 1, 16, 1), ttnn.bfloat16, device=device)  # N*H*W, C
    >>> y = ttnn.max_pool2d(x, 1, 4, 4, 1, [2, 2], [2, 2], [0, 0], [1, 1])
    >>> y.shape, y.to_torch().flatten()
    (Shape([1, 1, 4, 1]), tensor([ 5.,  7., 13., 15.], dtype=torch.bfloat16))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    y = _max_pool2d_golden(values(input_tensor, op_name), batch_size, input_h, input_w, channels, kernel_size,
                           stride, padding, dilation, ceil_mode, return_indices=return_indices)
    y, at = y if return_indices else (y, None)
    out = _make(y, input_tensor.device(), ins, op_name=op_name, dtype=dtype, layout=output_layout,
                memory_config=memory_config)
    _launch_pool(out, input_tensor, op_name, avg=False, batch=batch_size, height=input_h, width=input_w,
                 channels=channels, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                 ceil_mode=ceil_mode, count_include_pad=True, divisor_override=None,
                 applied_shard_scheme=applied_shard_scheme, dram_slice_config=dram_slice_config,
                 reallocate_halo_output=reallocate_halo_output)
    if deallocate_input:
        input_tensor._free()
    if not return_indices:
        return out
    index_dtype = DataType.UINT16 if input_h * input_w <= 0xFFFF else DataType.UINT32
    return out, _make(at, out.device(), [out], op_name=op_name, dtype=index_dtype, layout=output_layout,
                      memory_config=out.memory_config())


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
               config_tensor_in_dram: bool = False, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Mean over each kernel window, as torch's avg_pool2d; output [1, 1, N*OH*OW, C], ROW_MAJOR by default.

    >>> x = ttnn.from_torch(torch.arange(16.0).reshape(1, 1, 16, 1), dtype=ttnn.bfloat16, device=device)
    >>> y = ttnn.avg_pool2d(x, 1, 4, 4, 1, [2, 2], [2, 2], [0, 0])
    >>> y.shape, y.to_torch().flatten()
    (Shape([1, 1, 4, 1]), tensor([ 2.5000,  4.5000, 10.5000, 12.5000], dtype=torch.bfloat16))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    y = _avg_pool2d_golden(values(input_tensor, op_name), batch_size, input_h, input_w, channels, kernel_size,
                           stride, padding, ceil_mode, count_include_pad, divisor_override)
    out = _make(y, input_tensor.device(), ins, op_name=op_name, dtype=dtype, layout=output_layout,
                memory_config=memory_config)
    _launch_pool(out, input_tensor, op_name, avg=True, batch=batch_size, height=input_h, width=input_w,
                 channels=channels, kernel_size=kernel_size, stride=stride, padding=padding, dilation=(1, 1),
                 ceil_mode=ceil_mode, count_include_pad=count_include_pad, divisor_override=divisor_override,
                 applied_shard_scheme=applied_shard_scheme, dram_slice_config=dram_slice_config,
                 reallocate_halo_output=reallocate_halo_output)
    if deallocate_input:
        input_tensor._free()
    return out


def _launch_pool(out: Tensor, x: Tensor, op_name: str, *, avg: bool, batch, height, width, channels, kernel_size,
                 stride, padding, dilation, ceil_mode, count_include_pad, divisor_override, applied_shard_scheme,
                 dram_slice_config, reallocate_halo_output) -> None:
    """The pool's device operations (device_sim.programs.pool), launched once its output exists: height sharding,
    from an interleaved input or a height-sharded one. Width or block sharding (asked for, or the input's) and
    DRAM slicing (dram_slice_config) run programs not modelled, so launch none."""
    if x.device() is None or dram_slice_config is not None:
        return
    if applied_shard_scheme not in (None, TensorMemoryLayout.HEIGHT_SHARDED):
        return
    in_shard = None
    if x.is_sharded():
        cfg = x.memory_config()
        if cfg.memory_layout != TensorMemoryLayout.HEIGHT_SHARDED:
            return
        spec = cfg.shard_spec
        in_shard = (spec.shape[0], spec.shape[1],
                    tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in spec.grid.ranges()))
    left, right, top, bottom = _padding(padding, op_name)
    programs = pool_programs.pool2d_programs(
        avg=avg, batch=batch, height=height, width=width, channels=channels,
        kernel=_pair(kernel_size, "kernel_size", op_name), stride=_pair(stride, "stride", op_name),
        padding=(top, bottom, left, right), dilation=_pair(dilation, "dilation", op_name), ceil_mode=bool(ceil_mode),
        count_include_pad=bool(count_include_pad), divisor_override=divisor_override, in_dtype=x.dtype,
        in_tile=x.layout == Layout.TILE, in_sharded=in_shard is not None, out_dtype=out.dtype,
        out_tile=out.layout == Layout.TILE, reallocate_halo=bool(reallocate_halo_output),
        grid=(x.device().config.grid_x, x.device().config.grid_y), in_shard=in_shard)
    device_work.launch_after(out, True, x, programs)


def _global_avg_pool2d_golden(input_tensor, *_, **__):
    return input_tensor.float().mean(dim=(-3, -2), keepdim=True)


@register_op("ttnn.global_avg_pool2d", golden=_global_avg_pool2d_golden)
def global_avg_pool2d(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
                      dtype: DataType | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """The mean over H and W of an NHWC [N, H, W, C] input: [N, 1, 1, C].

    >>> x = ttnn.from_torch(torch.arange(8.0).reshape(1, 2, 2, 2), layout=ttnn.TILE, device=device)
    >>> ttnn.global_avg_pool2d(x).to_torch()
    tensor([[[[3., 4.]]]])
    """
    x, ins = four_d_input(op_name, input_tensor, "NHWC [N, H, W, C]", tt_nn_only)
    out = _make(_global_avg_pool2d_golden(x), input_tensor.device(), ins, op_name=op_name,
                dtype=dtype or input_tensor.dtype, layout=input_tensor.layout, memory_config=memory_config)
    if input_tensor.layout == Layout.TILE and not input_tensor.is_sharded():  # TT-NN's reduction (a TILE op)
        device_work.launch_after(out, True, input_tensor, vision_programs.global_avg_pool_program(input_tensor))
    return out


_UPSAMPLE_WHERE = "ttnn/cpp/ttnn/operations/pool/upsample/device/upsample_device_operation.cpp"


def _scales(scale_factor, op_name: str) -> tuple[float, float]:
    """TT-NN's scale_factor, an int, a float or an (h, w) pair of either (upsample.cpp's variant), as (h, w)."""
    s = (scale_factor, scale_factor) if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
    if len(s) != 2 or not all(isinstance(e, (int, float)) for e in s):
        raise ValueError(f"{op_name}: scale_factor={scale_factor!r} must be a number or an (h, w) pair of numbers")
    for name, v in zip(("scale_factor_h", "scale_factor_w"), s):
        if v <= 0:  # upsample_device_operation.cpp's validate
            raise tt_fatal(f"args.{name} > 0.0f", f"{name} must be positive, got {v}", where=_UPSAMPLE_WHERE)
    return float(s[0]), float(s[1])


def _upsample_golden(input_tensor, scale_factor, *_, mode="nearest", **__):
    """TT-NN's golden_upsample: torch's interpolate of the NHWC input (nearest's source index floor(dst / scale))."""
    x = input_tensor.float().permute(0, 3, 1, 2)
    align = None if mode == "nearest" else False
    y = F.interpolate(x, scale_factor=_scales(scale_factor, "ttnn.upsample"), mode=mode, align_corners=align)
    return y.permute(0, 2, 3, 1)


def _upsample_path(t: Tensor, scale: tuple[float, float], mode: str) -> str:
    """select_upsample_path (upsample_common.cpp): "integer" for the integer factories (integer scales, ROW_MAJOR
    interleaved, height or block sharded, or TILE interleaved; bilinear always), "float" for
    UpsampleNearestFloatProgramFactory (any other ROW_MAJOR input); a TILE input the float path would take is
    refused, as TT-NN refuses it."""
    integer = all(s == math.floor(s) for s in scale)
    if mode == "bilinear":
        if not integer:
            raise tt_fatal("is_integer_scale(args.scale_factor_h) && is_integer_scale(args.scale_factor_w)",
                           f"bilinear mode requires integer scale factors, got ({scale[0]}, {scale[1]})",
                           where=_UPSAMPLE_WHERE)
        return "integer"
    cfg = t.memory_config()
    nd = cfg.nd_shard_spec is not None
    if integer and not nd and (cfg.memory_layout == TensorMemoryLayout.INTERLEAVED or (
            t.layout == Layout.ROW_MAJOR and cfg.memory_layout in (TensorMemoryLayout.HEIGHT_SHARDED,
                                                                   TensorMemoryLayout.BLOCK_SHARDED))):
        return "integer"
    if t.layout != Layout.ROW_MAJOR:
        raise tt_fatal("path != UpsamplePath::UNSUPPORTED",
                       f"Unsupported upsample configuration: scales {scale[0]} x {scale[1]} of a TILE "
                       f"{cfg.memory_layout.name} input; float scales (or a sharded input) need ROW_MAJOR: "
                       f"ttnn.to_layout(x, ttnn.ROW_MAJOR_LAYOUT) first", where=_UPSAMPLE_WHERE)
    return "float"


def _nearest_float(x: torch.Tensor, scale: tuple[float, float]) -> torch.Tensor:
    """reader_upsample_nearest_float.cpp on NHWC x: output size floor(in * scale) in float32, each output pixel the
    input's at floor(dst * r) >> 16 (clamped to the input), r = ceil(65536 / scale) the factory's Q16.16
    reciprocal rounded up so that an integer scale's boundaries land exactly."""
    index = []
    for size, s in zip(x.shape[1:3], scale):
        s32 = torch.tensor(s, dtype=torch.float32)
        out = int(torch.floor(size * s32))
        r = int(torch.ceil(torch.tensor(1.0, dtype=torch.float32) / s32 * (1 << 16)))
        index.append(((torch.arange(out, dtype=torch.int64) * r) >> 16).clamp(max=size - 1))
    return x[:, index[0]][:, :, index[1]]


@register_op("ttnn.upsample", golden=_upsample_golden)
def upsample(input_tensor: Tensor, scale_factor, *, mode: str = "nearest",
             memory_config: MemoryConfig | None = None, compute_kernel_config=None,
             op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Repeat (mode="nearest") or interpolate (mode="bilinear", align_corners=False) an NHWC [N, H, W, C]
    input by scale_factor (a number or (h, w); nearest takes float scales, bilinear integers):
    [N, floor(H*sh), floor(W*sw), C], ROW_MAJOR (bfloat8_b comes out bfloat16), as TT-NN's UpsampleOperation.

    >>> x = ttnn.from_torch(torch.tensor([[[[1.0], [2.0]]]]), dtype=ttnn.bfloat16, device=device)  # NHWC
    >>> ttnn.upsample(x, 2).to_torch().flatten()
    tensor([1., 1., 2., 2., 1., 1., 2., 2.], dtype=torch.bfloat16)
    >>> ttnn.upsample(x, (1.0, 1.5)).to_torch().flatten()
    tensor([1., 1., 2.], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"{op_name}: mode={mode!r} must be 'nearest' or 'bilinear'")
    x = values(input_tensor, op_name)
    if x.dim() != 4:
        raise ValueError(f"{op_name}: input shape {list(x.shape)} must be NHWC [N, H, W, C]")
    ins = device_inputs(op_name, input_tensor)
    scale = _scales(scale_factor, op_name)
    path = _upsample_path(input_tensor, scale, mode)
    # bilinear validates its haloed (row-major) tensor, not this one
    if mode == "nearest" and input_tensor.layout == Layout.TILE and input_tensor.padded_shape != input_tensor.shape:
        raise tt_fatal("input.padded_shape() == input.logical_shape()",
                       f"Tiled input must be tile-aligned (no padding difference): {list(input_tensor.shape)} pads "
                       f"to {list(input_tensor.padded_shape)}; pass it ROW_MAJOR", where=_UPSAMPLE_WHERE)
    if path == "float":
        y = _nearest_float(x, scale)
    elif mode == "nearest":  # the integer factories write each input stick scale_h x scale_w times
        y = x.repeat_interleave(int(scale[0]), 1).repeat_interleave(int(scale[1]), 2)
    else:
        y = _upsample_golden(x, scale, mode=mode)
    memory_config = _upsample_output_config(input_tensor, memory_config, mode, path, y.shape, scale)
    # compute_output_specs: the output is always ROW_MAJOR, and bfloat16 where the input is bfloat8_b
    dtype = DataType.BFLOAT16 if input_tensor.dtype == DataType.BFLOAT8_B else input_tensor.dtype
    out = _make(y, input_tensor.device(), ins, op_name=op_name, dtype=dtype, layout=Layout.ROW_MAJOR,
                memory_config=memory_config)
    if path == "float":
        device_work.launch_after(out, True, input_tensor, vision_programs.upsample_nearest_float_program(out))
    elif mode == "nearest" and not input_tensor.is_sharded() and not out.is_sharded():  # the interleaved factory
        device_work.launch_after(out, True, input_tensor, vision_programs.upsample_program(input_tensor, out.dtype))
    elif mode == "bilinear":
        _launch_bilinear(out, input_tensor, (int(scale[0]), int(scale[1])))
    return out


def _upsample_output_config(t: Tensor, cfg: MemoryConfig | None, mode: str, path: str, out_shape,
                            scale: tuple[float, float]) -> MemoryConfig | None:
    """The output config as compute_output_specs (upsample_device_operation.cpp) derives a sharded one from the
    output config (the input's when none is given); None leaves an interleaved input's output to the memory rules."""
    if not t.is_sharded():
        if mode == "nearest" and cfg is not None and cfg.is_sharded():
            raise tt_fatal("input_mc.is_sharded()", "Output memory config is sharded but input memory config is not "
                           "sharded; shard the input first (ttnn.to_memory_config)", where=_UPSAMPLE_WHERE)
        return cfg
    in_cfg = t.memory_config()
    cfg = in_cfg if cfg is None else cfg
    if not cfg.is_sharded() or cfg.shard_spec is None or in_cfg.shard_spec is None or in_cfg.nd_shard_spec is not None:
        return cfg
    spec, rows, width = cfg.shard_spec, in_cfg.shard_spec.shape[0], in_cfg.shard_spec.shape[1]
    total = out_shape[0] * out_shape[1] * out_shape[2]
    if path == "float":  # compute_float_output_mem_config: the input's grid and layout, its NHW rows over the cores
        spec = in_cfg.shard_spec
        if in_cfg.memory_layout == TensorMemoryLayout.HEIGHT_SHARDED:
            cores = spec.num_cores()
        elif in_cfg.memory_layout == TensorMemoryLayout.WIDTH_SHARDED:
            cores = 1
        else:  # BLOCK_SHARDED: the rows of the grid along the orientation
            size = spec.grid.bounding_box().grid_size()
            cores = size.y if spec.orientation == ShardOrientation.ROW_MAJOR else size.x
        return MemoryConfig(in_cfg.memory_layout, in_cfg.buffer_type,
                            ShardSpec(spec.grid, (-(-total // cores), width), spec.orientation))
    # compute_integer_output_mem_config: bilinear, the output's N*H*W rows spread evenly over the spec's cores;
    # nearest, each shard scale_h * scale_w times the input's rows
    height = -(-total // spec.num_cores()) if mode == "bilinear" else rows * int(scale[0]) * int(scale[1])
    return MemoryConfig(cfg.memory_layout, cfg.buffer_type, ShardSpec(spec.grid, (height, width), spec.orientation))


def _launch_bilinear(out: Tensor, x: Tensor, scale: tuple[int, int]) -> None:
    """Bilinear upsample's programs (device_sim.programs.vision) for the inputs TT-NN's bilinear path takes: bfloat16,
    ROW_MAJOR, channels a multiple of 32, interleaved (sharded by the op) or height sharded. Others launch none."""
    if x.device() is None or x.dtype != DataType.BFLOAT16 or x.layout != Layout.ROW_MAJOR or x.shape[-1] % 32:
        return
    in_shard = None
    if x.is_sharded():
        cfg = x.memory_config()
        if cfg.memory_layout != TensorMemoryLayout.HEIGHT_SHARDED:
            return
        in_shard = (cfg.shard_spec.shape[0],
                    tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in cfg.shard_spec.grid.ranges()))
    n, h, w, c = x.shape
    programs = vision_programs.upsample_bilinear_programs(batch=n, height=h, width=w, channels=c, scale=scale,
                                                          grid=(x.device().config.grid_x, x.device().config.grid_y),
                                                          in_shard=in_shard)
    device_work.launch_after(out, True, x, programs)


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


@register_op("ttnn.fold", kind="move", golden=_fold_golden)
def fold(input: Tensor, stride_h: int, stride_w: int, use_transpose_as_fold: bool = False,  # noqa: A002
         output_shape=None, padding=(0, 0), grid_size=None, override_memory_config: MemoryConfig | None = None,
         *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Space to depth on NHWC [N, H, W, C] (after zero `padding` of H and W): [N, H/sh, W/sw, C*sh*sw], each
    block's pixels in row-major order; reshaped to output_shape when given. use_transpose_as_fold and grid_size
    only choose TT-NN's kernel.

    >>> x = ttnn.from_torch(torch.arange(16.0).reshape(1, 4, 4, 1), ttnn.bfloat16, device=device)  # NHWC
    >>> ttnn.fold(x, 2, 2).shape
    Shape([1, 2, 2, 4])
    """
    x, ins = four_d_input(op_name, input, "NHWC [N, H, W, C]", tt_nn_only)
    y = _fold_golden(x, stride_h, stride_w, padding=padding, output_shape=output_shape)
    programs = None
    if not use_transpose_as_fold:  # the legacy transpose-based fold (pads, permutes, reshapes): not modelled
        left, right, top, bottom = _padding(padding, op_name)
        programs = fold_programs.fold_programs(input, stride_h, stride_w, (top, bottom, left, right))
    memory_config = override_memory_config
    if memory_config is None and input.is_sharded():
        memory_config = _folded_shards(input, stride_h * stride_w, programs)
    out = _make(y, input.device(), ins, op_name=op_name, dtype=input.dtype, layout=input.layout,
                memory_config=memory_config)
    if programs is not None:
        device_work.launch_after(out, True, input, programs)
    return out


def _folded_shards(input: Tensor, patch: int, programs) -> MemoryConfig | None:  # noqa: A002
    """The output memory config TT-NN's Fold gives a sharded input (fold_device_op.cpp compute_output_specs): the
    input's config with each shard patch times shorter and wider (patch = stride_h * stride_w); after a halo or a
    reshard, on the grid and shard the Fold program runs (its c_16 is the output shard). The input's own shard
    spec would not fit the folded shape. None (the memory rules) for what TT-NN refuses (not height-sharded)."""
    cfg = input.memory_config()
    if cfg.memory_layout != TensorMemoryLayout.HEIGHT_SHARDED:
        return None
    spec, width = cfg.shard_spec, cfg.shard_spec.shape[1] * patch
    fold = programs[-1] if programs else None
    rows = next((cb.num_pages for cb in fold.cbs if cb.indices[0] == 16), None) if fold else None
    if rows is not None:
        grid = CoreRangeSet([CoreRange(CoreCoord(x0, y0), CoreCoord(x1, y1)) for x0, y0, x1, y1 in fold.ranges])
        return MemoryConfig(cfg.memory_layout, cfg.buffer_type, ShardSpec(grid, (rows, width), spec.orientation))
    return MemoryConfig(cfg.memory_layout, cfg.buffer_type,
                        ShardSpec(spec.grid, (-(-spec.shape[0] // patch), width), spec.orientation))


def _adaptive_avg_pool2d_golden(input_tensor, batch_size, input_h, input_w, channels, output_size, *_, **__):
    x = _nchw(input_tensor, batch_size, input_h, input_w, channels, "ttnn.adaptive_avg_pool2d")
    return _flat(F.adaptive_avg_pool2d(x, _pair(tuple(output_size), "output_size", "ttnn.adaptive_avg_pool2d")))


@register_op("ttnn.adaptive_avg_pool2d", golden=_adaptive_avg_pool2d_golden)
def adaptive_avg_pool2d(input_tensor: Tensor, batch_size: int, input_h: int, input_w: int, channels: int,
                        output_size, *, memory_config: MemoryConfig | None = None, applied_shard_scheme=None,
                        in_place_halo: bool = False, deallocate_input: bool = False, reallocate_output: bool = True,
                        dram_slice_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Average pooling to a given (OH, OW) over torch's adaptive regions (the same as a plain pool when the
    sizes divide); output [1, 1, N*OH*OW, C] in ROW_MAJOR bfloat16, as TT-NN's pools.

    >>> x = ttnn.from_torch(torch.arange(16.0).reshape(1, 1, 16, 1), dtype=ttnn.bfloat16, device=device)
    >>> ttnn.adaptive_avg_pool2d(x, 1, 4, 4, 1, [2, 2]).to_torch().flatten()
    tensor([ 2.5000,  4.5000, 10.5000, 12.5000], dtype=torch.bfloat16)
    """
    return _adaptive_pool(op_name, _adaptive_avg_pool2d_golden, input_tensor, batch_size, input_h,
                          input_w, channels, output_size, memory_config, applied_shard_scheme, deallocate_input,
                          reallocate_output, dram_slice_config, tt_nn_only)


def _adaptive_max_pool2d_golden(input_tensor, batch_size, input_h, input_w, channels, output_size, *_, **__):
    x = _nchw(input_tensor, batch_size, input_h, input_w, channels, "ttnn.adaptive_max_pool2d")
    return _flat(F.adaptive_max_pool2d(x, _pair(tuple(output_size), "output_size", "ttnn.adaptive_max_pool2d")))


@register_op("ttnn.adaptive_max_pool2d", golden=_adaptive_max_pool2d_golden)
def adaptive_max_pool2d(input_tensor: Tensor, batch_size: int, input_h: int, input_w: int, channels: int,
                        output_size, *, memory_config: MemoryConfig | None = None, dram_slice_config=None,
                        applied_shard_scheme=None, deallocate_input: bool = False, reallocate_output: bool = True,
                        op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Max pooling to a given (OH, OW) over torch's adaptive regions; output [1, 1, N*OH*OW, C] ROW_MAJOR bfloat16.
    TT-NN's adaptive_pools.cpp runs max_pool2d with the kernel, stride and padding it derives (the same check of
    what padding can fix as adaptive_avg_pool2d).

    >>> x = ttnn.from_torch(torch.arange(16.0).reshape(1, 1, 16, 1), dtype=ttnn.bfloat16, device=device)
    >>> ttnn.adaptive_max_pool2d(x, 1, 4, 4, 1, [2, 2]).to_torch().flatten()
    tensor([ 5.,  7., 13., 15.], dtype=torch.bfloat16)
    """
    return _adaptive_pool(op_name, _adaptive_max_pool2d_golden, input_tensor, batch_size, input_h,
                          input_w, channels, output_size, memory_config, applied_shard_scheme, deallocate_input,
                          reallocate_output, dram_slice_config, tt_nn_only)


def _adaptive_pool(op_name, golden, input_tensor, batch_size, input_h, input_w, channels, output_size, memory_config,
                   applied_shard_scheme, deallocate_input, reallocate_output, dram_slice_config, tt_nn_only):
    """Both adaptive pools: the golden's values, then the program adaptive_pools.cpp runs (avg_pool2d or max_pool2d
    with the kernel, stride and padding it derives, after checking what padding can fix)."""
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    out_h, out_w = _pair(tuple(output_size), "output_size", op_name)
    adaptive_pool_programs.check_feasible(input_h, input_w, out_h, out_w)  # TT-NN refuses what padding can't fix
    y = golden(values(input_tensor, op_name), batch_size, input_h, input_w, channels, output_size)
    out = _make(y, input_tensor.device(), ins, op_name=op_name, dtype=DataType.BFLOAT16, layout=Layout.ROW_MAJOR,
                memory_config=memory_config)
    avg = golden is _adaptive_avg_pool2d_golden
    kernel, stride, padding = adaptive_pool_programs.adaptive_pool_params(input_h, input_w, out_h, out_w)
    _launch_pool(out, input_tensor, op_name, avg=avg, batch=batch_size, height=input_h, width=input_w,
                 channels=channels, kernel_size=kernel, stride=stride, padding=padding, dilation=(1, 1),
                 ceil_mode=False, count_include_pad=not avg, divisor_override=None,
                 applied_shard_scheme=applied_shard_scheme, dram_slice_config=dram_slice_config,
                 reallocate_halo_output=reallocate_output)
    if deallocate_input:
        input_tensor._free()
    return out


# -- rotate ---------------------------------------------------------------------------------------

def _rotate_golden(input_tensor, angle, *_, center=None, fill=0.0, expand=False, interpolation_mode="nearest", **__):
    """TT-NN's golden (ttnn/operations/pool.py): torchvision's rotate of the NHWC tensor, without torchvision:
    _get_inverse_affine_matrix(center - size/2, -angle) sampled by _gen_affine_grid and _apply_grid_transform's
    grid_sample (zeros padding, align_corners=False, a mask channel that fills what falls outside)."""
    x = input_tensor.permute(0, 3, 1, 2).float()
    n, _c, h, w = x.shape
    cx, cy = (0.0, 0.0) if center is None else (center[0] - w * 0.5, center[1] - h * 0.5)
    rot = math.radians(-float(angle))
    m = [math.cos(rot), math.sin(rot), 0.0, -math.sin(rot), math.cos(rot), 0.0]  # inverse rotation, no shear
    m[2] += m[0] * -cx + m[1] * -cy + cx
    m[5] += m[3] * -cx + m[4] * -cy + cy
    theta = torch.tensor(m).reshape(1, 2, 3)
    base = torch.empty(1, h, w, 3)
    base[..., 0] = torch.linspace(-w * 0.5 + 0.5, w * 0.5 - 0.5, w)
    base[..., 1] = torch.linspace(-h * 0.5 + 0.5, h * 0.5 - 0.5, h).unsqueeze(-1)
    base[..., 2] = 1
    grid = base.view(1, h * w, 3).bmm(theta.transpose(1, 2) / torch.tensor([0.5 * w, 0.5 * h])).view(1, h, w, 2)
    img = torch.cat((x, torch.ones(n, 1, h, w)), 1)
    img = F.grid_sample(img, grid.expand(n, h, w, 2), mode=interpolation_mode, padding_mode="zeros",
                        align_corners=False)
    img, mask = img[:, :-1], img[:, -1:].expand(n, _c, h, w)
    if interpolation_mode == "nearest":
        img = torch.where(mask < 0.5, torch.full_like(img, float(fill)), img)
    else:
        img = img * mask + (1.0 - mask) * float(fill)
    return img.permute(0, 2, 3, 1).to(input_tensor.dtype)


@register_op("ttnn.rotate", kind="move", golden=_rotate_golden)
def rotate(input_tensor: Tensor, angle: float, *, center=None, fill: float = 0.0, expand: bool = False,
           interpolation_mode: str = "nearest", memory_config: MemoryConfig | None = None,
           op_name: str = OWN_NAME) -> Tensor:
    """An [N, H, W, C] ROW_MAJOR tensor rotated `angle` degrees counter-clockwise about `center` ((x, y) in pixels;
    default the image's centre), what falls outside filled with `fill`; the same shape, dtype and layout. As
    RotateDeviceOperation checks: 4D, ROW_MAJOR, bfloat16 or float32, on a device, expand=False, "nearest" or
    "bilinear". The result is TT-NN's golden (torchvision's rotate); the device's Q16.16 coordinates can pick a
    neighbouring pixel where a source falls on a pixel edge.

    >>> x = ttnn.from_torch(torch.arange(16.0).reshape(1, 4, 4, 1), layout=ttnn.ROW_MAJOR, device=device)
    >>> ttnn.rotate(x, 90.0).to_torch()[0, :, :, 0]
    tensor([[ 3.,  7., 11., 15.],
            [ 2.,  6., 10., 14.],
            [ 1.,  5.,  9., 13.],
            [ 0.,  4.,  8., 12.]])
    """
    shape = tuple(input_tensor.shape)
    checks = ((len(shape) == 4, "input.logical_shape().rank() == 4",
               f"Input tensor must be 4D (N, H, W, C), got rank {len(shape)}"),
              (input_tensor.layout == Layout.ROW_MAJOR, "input.layout() == Layout::ROW_MAJOR",
               "Input tensor must be in ROW_MAJOR layout"),
              (input_tensor.dtype in (DataType.BFLOAT16, DataType.FLOAT32),
               "input.dtype() == BFLOAT16 || input.dtype() == FLOAT32",
               f"Input tensor dtype must be bfloat16 or float32, got {input_tensor.dtype}"),
              (input_tensor.device() is not None, "input.storage_type() == StorageType::DEVICE",
               "Input tensor must be on device"),
              (not expand, "!expand", "expand=True is not supported. Only same-size rotation (expand=False) is "
                                      "implemented"),
              (interpolation_mode in ("nearest", "bilinear"), "interpolation_mode == nearest || bilinear",
               f"Only 'nearest' and 'bilinear' interpolation_mode are supported, got '{interpolation_mode}'"))
    for ok, condition, message in checks:
        if not ok:
            raise tt_fatal(condition, message, "device_sim/ops/vision.py")
    ins = device_inputs(op_name, input_tensor)
    y = _rotate_golden(values(input_tensor, op_name), angle, center=center, fill=fill,
                       interpolation_mode=interpolation_mode)
    cfg = memory_config if memory_config is not None else input_tensor.memory_config()
    out = _make(y, input_tensor.device(), ins, op_name=op_name, dtype=input_tensor.dtype, layout=Layout.ROW_MAJOR,
                memory_config=cfg)
    if not input_tensor.is_sharded():  # the interleaved factories; the sharded ones are not modelled
        device_work.launch_after(out, True, input_tensor, pool_programs.rotate_program(
            input_tensor.device(), shape, input_tensor.dtype, bilinear=interpolation_mode == "bilinear",
            dram=input_tensor.memory_config().buffer_type == BufferType.DRAM))
    return out


# -- grid_sample ----------------------------------------------------------------------------------

def _grid_sample_golden(input_tensor, grid, *_, mode="bilinear", padding_mode="zeros", align_corners=False,
                        batch_output_channels=False, **__):
    """TT-NN's golden (ttnn/operations/pool.py's golden_grid_sample): torch's grid_sample of the NHWC input at the
    grid's K coordinate pairs a point (its last dim, 2*K), laid along W ([N, H_out, W_out*K, C]) or, with
    batch_output_channels, along C ([N, H_out, W_out, C*K]); in the input's dtype."""
    n, h_out, w_out, last = grid.shape
    k, c = last // 2, input_tensor.shape[-1]
    y = F.grid_sample(input_tensor.permute(0, 3, 1, 2).float(), grid.reshape(n, h_out, w_out * k, 2).float(),
                      mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    y = y.permute(0, 2, 3, 1).to(input_tensor.dtype)
    return y.reshape(n, h_out, w_out, c * k) if batch_output_channels else y


def _grid_sample_bilinear(x: torch.Tensor, grid: torch.Tensor, align_corners: bool, weight_dtype: DataType):
    """The bilinear kernel: each grid pair (x, y) in [-1, 1] becomes image coordinates in float32 (grid_sample's
    reader: (c + 1) * size / 2 - 0.5, or (c + 1) * (size - 1) / 2 with align_corners), its four neighbours' weights
    (0 for a neighbour outside the image: zeros padding) go to the scalar tiles in the input's format, and the
    compute kernel sums the four weighted sticks. x: [N, H, W, C]; grid: [N, H_out, W', 2]; -> [N, H_out, W', C]."""
    n, h, w, c = x.shape
    gxy = grid.float()
    if align_corners:
        iw = (gxy[..., 0] + 1) * ((w - 1) * 0.5)
        ih = (gxy[..., 1] + 1) * ((h - 1) * 0.5)
    else:
        iw = (gxy[..., 0] + 1) * (w * 0.5) - 0.5
        ih = (gxy[..., 1] + 1) * (h * 0.5) - 0.5
    h0, w0 = ih.floor(), iw.floor()
    hf, wf = ih - h0, iw - w0
    batch = torch.arange(n).view(n, 1, 1)
    out = torch.zeros(*grid.shape[:3], c)
    for dh, dw, weight in ((0, 0, (1 - hf) * (1 - wf)), (0, 1, (1 - hf) * wf), (1, 0, hf * (1 - wf)), (1, 1, hf * wf)):
        hh, ww = (h0 + dh).long(), (w0 + dw).long()
        inside = (hh >= 0) & (hh < h) & (ww >= 0) & (ww < w)
        weight = dtypes.to_device_values(torch.where(inside, weight, torch.zeros_like(weight)), weight_dtype)
        out += weight.unsqueeze(-1) * x[batch, hh.clamp(0, h - 1), ww.clamp(0, w - 1)].float()
    return out


@register_op("ttnn.grid_sample", kind="move", golden=_grid_sample_golden)
def grid_sample(input_tensor: Tensor, grid: Tensor, *, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool = False, use_precomputed_grid: bool = False, batch_output_channels: bool = False,
                memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME) -> Tensor:
    """Sample an [N, H, W, C] ROW_MAJOR input at a grid of normalised (x, y) points ([N, H_out, W_out, 2*K], -1 the
    left or top edge, 1 the right or bottom), bilinearly, zeros outside: [N, H_out, W_out*K, C] (batch_output_channels:
    [N, H_out, W_out, C*K]), ROW_MAJOR, in the input's dtype and the grid's memory config unless memory_config says.
    As GridSampleOperation checks: both 4D, ROW_MAJOR, on a device, bfloat16 or float32; C a multiple of 32 and at
    most 256; padding_mode "zeros"; "nearest" only with a precomputed grid. The weights are rounded to the input's
    dtype, as the kernel's scalar tiles hold them. A grid precomputed by prepare_grid_sample_grid (use_precomputed_grid)
    is not emulated.

    >>> x = ttnn.from_torch(torch.arange(64.0).reshape(1, 2, 1, 32), layout=ttnn.ROW_MAJOR, device=device)
    >>> g = ttnn.from_torch(torch.tensor([[[[0.0, 0.0]]]]), layout=ttnn.ROW_MAJOR, device=device)  # the centre
    >>> ttnn.grid_sample(x, g).to_torch()[0, 0, 0, :3]  # halfway between the two rows
    tensor([16., 17., 18.])
    """
    if use_precomputed_grid:
        raise NotImplementedError(f"{op_name}: use_precomputed_grid=True (a grid from ttnn.prepare_grid_sample_grid) "
                                  f"is not emulated; pass the normalised [N, H_out, W_out, 2] grid with "
                                  f"use_precomputed_grid=False")
    shape, gshape = tuple(input_tensor.shape), tuple(grid.shape)
    checks = ((input_tensor.device() is not None and grid.device() is not None,
               "input_tensor.storage_type() == StorageType::DEVICE", "Input and grid tensors must be on device!"),
              (len(shape) == 4, "input_tensor.logical_shape().rank() == 4",
               f"Input tensor must be 4D (N, H, W, C), but got shape {list(shape)}"),
              (len(gshape) == 4, "grid_tensor.logical_shape().rank() == 4",
               f"Grid tensor must be 4D (N, H_out, W_out, coords), but got shape {list(gshape)}"),
              (len(gshape) == 4 and gshape[-1] % 2 == 0 and gshape[-1] >= 2, "grid_last_dim % 2 == 0",
               f"Standard grid tensor last dimension must be a multiple of 2 (for x, y coordinates), but got shape "
               f"{list(gshape)}"),
              (shape[:1] == gshape[:1], "input_tensor.logical_shape()[0] == grid_tensor.logical_shape()[0]",
               f"Batch size mismatch: input tensor shape {list(shape)}, grid tensor shape {list(gshape)}"),
              (not batch_output_channels or gshape[-1] > 2, "grid_batching_factor > 1",
               "batch_output_channels=True requires grid batching factor K > 1. Use a batched grid with multiple "
               "coordinate sets per row of grid."),
              (input_tensor.dtype in (DataType.BFLOAT16, DataType.FLOAT32),
               "input_tensor.dtype() == BFLOAT16 || FLOAT32", "Input tensor must be BFLOAT16 or FLOAT32"),
              (grid.dtype in (DataType.BFLOAT16, DataType.FLOAT32), "grid_tensor.dtype() == BFLOAT16 || FLOAT32",
               "Grid tensor must be BFLOAT16 or FLOAT32"),
              (input_tensor.layout == Layout.ROW_MAJOR, "input_tensor.layout() == Layout::ROW_MAJOR",
               "Input tensor must be ROW_MAJOR layout"),
              (grid.layout == Layout.ROW_MAJOR, "grid_tensor.layout() == Layout::ROW_MAJOR",
               "Grid tensor must be ROW_MAJOR layout"),
              (padding_mode == "zeros", "padding_mode == zeros", "Only zeros padding mode is currently supported"),
              (mode == "bilinear", "!(mode == nearest && !use_precomputed_grid)",
               "use_precomputed_grid = false is not supported with mode = 'nearest'. Please use precomputed grid with "
               "nearest mode." if mode == "nearest" else f"mode {mode!r}: grid_sample takes 'bilinear' or 'nearest'"),
              (shape[-1] % 32 == 0, "input_tensor.padded_shape()[-1] % TILE_WIDTH == 0",
               f"Input tensor last dimension must be divisible by TILE_WIDTH (32), but got {shape[-1]}"),
              (shape[-1] <= 256, "input_tensor.padded_shape()[-1] <= TILE_WIDTH * max_tiles_per_reduction",
               f"Wide reduction not supported: input tensor width {shape[-1]} exceeds maximum 256"))
    for ok, condition, message in checks:
        if not ok:
            raise tt_fatal(condition, message, "device_sim/ops/vision.py")
    cfg = memory_config if memory_config is not None else grid.memory_config()
    for t, what in ((input_tensor, "Input"), (grid, "Grid")):
        if t.memory_config().memory_layout not in (TensorMemoryLayout.INTERLEAVED, TensorMemoryLayout.HEIGHT_SHARDED):
            raise tt_fatal("memory_layout == INTERLEAVED || HEIGHT_SHARDED",
                           f"{what} tensor must have INTERLEAVED or HEIGHT_SHARDED memory layout",
                           "device_sim/ops/vision.py")
    ins = device_inputs(op_name, input_tensor, grid)
    n, h_out, w_out, last = gshape
    k, c = last // 2, shape[-1]
    y = _grid_sample_bilinear(values(input_tensor, op_name), values(grid, op_name).reshape(n, h_out, w_out * k, 2),
                              align_corners, input_tensor.dtype)
    if batch_output_channels:
        y = y.reshape(n, h_out, w_out, c * k)
    out = _make(y, input_tensor.device(), ins, op_name=op_name, dtype=input_tensor.dtype, layout=Layout.ROW_MAJOR,
                memory_config=cfg)
    if not (input_tensor.is_sharded() or grid.is_sharded() or out.is_sharded()):  # sharded factories: not modelled
        device_work.launch_after(out, True, input_tensor, pool_programs.grid_sample_program(
            input_tensor.device(), gshape, c, input_tensor.dtype, grid.dtype, out_channels=out.shape[-1],
            grid_dram=grid.memory_config().buffer_type == BufferType.DRAM))
    return out
