"""ttnn.group_norm on channels-last activations, and TT-NN's two helpers that lay out its weights and mask.

    import torch, device_sim as ttnn
    device = ttnn.open_device(0)
    N, HW, C, G = 1, 64, 64, 8
    x = ttnn.from_torch(torch.randn(N, 1, HW, C), layout=ttnn.TILE, device=device)       # [N, 1, H*W, C]
    gamma = ttnn.create_group_norm_weight_bias_rm(torch.ones(C), C, 1)                   # TT-NN's [1, 1, -1, 32]
    mask = ttnn.to_device(ttnn.create_group_norm_input_mask(C, G, 1), device)            # a host tensor, as TT-NN's
    y = ttnn.group_norm(x, num_groups=G, input_mask=mask,
                        weight=ttnn.from_torch(gamma, device=device), epsilon=1e-5)

As TT-NN's models use it, the input holds channels last ([N, 1, H*W, C], or any [N, ..., C]);
each group's statistics run over its C/G channels and every other non-batch position, as
torch.nn.functional.group_norm does on the same data with channels first.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from device_sim import device_work, dtypes
from device_sim.distributed import ShardTensor2dMesh
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, values
from device_sim.ops.core import from_torch, to_device
from device_sim.programs import group_norm as group_norm_programs
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor
from device_sim.types import (
    BufferType,
    CoreCoord,
    CoreGrid,
    CoreRange,
    CoreRangeSet,
    DataType,
    Layout,
    MemoryConfig,
    ShardOrientation,
    ShardSpec,
    TensorMemoryLayout,
)


def _ceil32(n: int) -> int:
    return -(-n // 32) * 32


def create_group_norm_weight_bias_rm(input_tensor: torch.Tensor, num_channels: int, num_cores_x: int) -> torch.Tensor:
    """A gamma or beta of `num_channels` values in TT-NN's row-major layout for group_norm: split into
    `num_cores_x` equal chunks, each zero-padded to a multiple of 32, as [1, 1, rows, 32]. A torch tensor."""
    per_chunk = num_channels // num_cores_x
    if num_channels % num_cores_x or input_tensor.numel() != num_channels:
        raise ValueError(f"create_group_norm_weight_bias_rm: {input_tensor.numel()} values for num_channels="
                         f"{num_channels} split over num_cores_x={num_cores_x}; need num_channels values and "
                         f"num_channels divisible by num_cores_x")
    chunks = F.pad(input_tensor.reshape(num_cores_x, per_chunk), (0, _ceil32(per_chunk) - per_chunk))
    return chunks.reshape(1, 1, -1, 32)


def create_group_norm_input_mask(num_channel: int, num_groups: int, num_cores_across_channel: int,
                                 data_type: DataType = DataType.BFLOAT16, tile_height: int = 32,
                                 tile_width: int = 32) -> Tensor:
    """TT-NN's group_norm input mask: [1, num_groups, 32, 32 * tiles a group can span], ones over each
    group's columns within the tiles it spans on its core. A host tensor in TILE layout, as TT-NN's
    (move it with ttnn.to_device). tile_height / tile_width: TT-NN's binding takes them; only 32 x 32 is made."""
    return _group_norm_mask(num_channel, num_groups, num_cores_across_channel, data_type, (tile_height, tile_width),
                            negative=False)


def create_group_norm_input_negative_mask(num_channel: int, num_groups: int, num_cores_across_channel: int,
                                          data_type: DataType = DataType.BFLOAT16, tile_height: int = 32,
                                          tile_width: int = 32) -> Tensor:
    """create_group_norm_input_mask's complement (groupnorm_input_mask.cpp, is_negative_mask): zeros over each
    group's columns, ones elsewhere; group_norm's negative_mask= (test_group_norm.py's negative-mask cases)."""
    return _group_norm_mask(num_channel, num_groups, num_cores_across_channel, data_type, (tile_height, tile_width),
                            negative=True)


def _group_norm_mask(num_channel: int, num_groups: int, num_cores_across_channel: int, data_type, tile_hw: tuple,
                     *, negative: bool) -> Tensor:
    if tuple(tile_hw) != (32, 32):
        raise ValueError(f"create_group_norm_input_mask: tile {list(tile_hw)} is not emulated; pass the default "
                         f"tile_height=32, tile_width=32")
    if num_channel % num_groups or num_groups % num_cores_across_channel:
        raise ValueError(f"create_group_norm_input_mask: num_channel={num_channel} must divide into "
                         f"num_groups={num_groups}, and those over num_cores_across_channel="
                         f"{num_cores_across_channel}")
    width = num_channel // num_groups
    # The most 32-wide tiles one group touches, over the groups laid end to end.
    span = max((g * width + width - 1) // 32 - (g * width) // 32 + 1 for g in range(num_groups))
    mask = torch.zeros((1, num_groups, 32, 32 * span))
    per_core = num_groups // num_cores_across_channel
    for g in range(num_groups):
        start = (g % per_core) * width % 32  # where the group starts inside its first tile, on its core
        mask[:, g, :, start:min(start + width, mask.shape[3])] = 1
    dtype = DataType(data_type)
    return Tensor._create(dtypes.to_device_values(1 - mask if negative else mask, dtype), dtype, Layout.TILE, None,
                          None, None)


def determine_expected_group_norm_sharded_config_and_grid_size(*, device, num_channels: int, num_groups: int,
                                                                input_nhw: int, is_height_sharded: bool,
                                                                is_row_major: bool = False):
    """`ttnn.determine_expected_group_norm_sharded_config_and_grid_size`: (the L1 sharded MemoryConfig, the
    CoreGrid) for a [N, 1, H*W, C] group_norm input on `device`'s grid, as groupnorm_grid_utils.cpp derives them:
    the rows split over the largest divisor of the tile rows up to the grid's x (every core when height-sharded),
    the channels (block sharding) over the most grid rows that keep whole groups, 32 channels or more, and C / 8
    divisible; is_row_major swaps the grid's axes and the shard orientation."""
    def need(ok: bool, message: str) -> None:
        if not ok:
            raise RuntimeError(f"TT_FATAL @ device_sim/ops/group_norm.py: {message}")

    need(num_groups > 0, "num_groups needs to be greater than 0")
    need(num_channels > 0, "num_channels needs to be greater than 0")
    need(num_channels % num_groups == 0, f"group_norm: num_channels ({num_channels}) must be divisible by num_groups "
                                         f"({num_groups}).")
    need(num_channels % 32 == 0, f"group_norm: num_channels ({num_channels}) must be divisible by tile width (32).")
    group_size = num_channels // num_groups
    grid = device.compute_with_storage_grid_size()
    dg0, dg1 = (grid.y, grid.x) if is_row_major else (grid.x, grid.y)
    ht = -(-input_nhw // 32)
    cores_nhw = dg0 * dg1 if is_height_sharded else dg0
    while cores_nhw > 0 and ht % cores_nhw:
        cores_nhw -= 1
    need(cores_nhw > 0, f"group_norm: Could not find num_cores_nhw for sharded config (Ht_padded={ht}).")
    cores_channels = 1
    if not is_height_sharded:
        cores_channels = dg1
        while cores_channels > 0 and ((num_channels // 8) % cores_channels or (num_channels // cores_channels)
                                      % group_size or num_channels // cores_channels < 32):
            cores_channels -= 1
        need(cores_channels > 0, f"group_norm: Could not find num_cores_channels for block-sharded group norm "
                                 f"(C={num_channels}, G={num_groups}).")
    channels_per_core = num_channels // cores_channels
    need(channels_per_core % 8 == 0, f"group_norm: gn_in_channels_per_core ({channels_per_core}) must be divisible "
                                     f"by 8.")
    nhw_per_core = -(-input_nhw // (cores_nhw * 32)) * 32
    if is_height_sharded:
        grid_x, grid_y = min(cores_nhw, dg0), -(-cores_nhw // dg0)
    else:
        grid_x, grid_y = (cores_channels, cores_nhw) if is_row_major else (cores_nhw, cores_channels)
    row_major = is_height_sharded or is_row_major
    spec = ShardSpec(CoreRangeSet({CoreRange(CoreCoord(0, 0), CoreCoord(grid_x - 1, grid_y - 1))}),
                     [nhw_per_core, channels_per_core] if row_major else [channels_per_core, nhw_per_core],
                     ShardOrientation.ROW_MAJOR if row_major else ShardOrientation.COL_MAJOR)
    layout = TensorMemoryLayout.HEIGHT_SHARDED if is_height_sharded else TensorMemoryLayout.BLOCK_SHARDED
    return MemoryConfig(layout, BufferType.L1, spec), CoreGrid(x=grid_x, y=grid_y)


def get_group_norm_cores_across_channel(memory_layout, core_grid, shard_orientation=None) -> int:
    """`ttnn.get_group_norm_cores_across_channel`: how many cores split the channels (ttnn/operations/
    normalization.py): a block-sharded grid's y (its x when ROW_MAJOR), 1 height-sharded, every core otherwise."""
    if memory_layout == TensorMemoryLayout.BLOCK_SHARDED:
        return core_grid.x if shard_orientation == ShardOrientation.ROW_MAJOR else core_grid.y
    if memory_layout == TensorMemoryLayout.HEIGHT_SHARDED:
        return 1
    return core_grid.x * core_grid.y


def dram_group_norm_virtual_columns(core_grid, num_channels: int, num_groups: int) -> int:
    """How many columns of cores split the channels of a DRAM group_norm: the most, up to core_grid.x and
    num_groups, that divide num_groups and leave each a multiple of 32 channels (groupnorm_grid_utils.cpp's
    compute_num_virtual_cols, which TT-NN's Python asserts is > 0)."""
    nvc = min(core_grid.x, num_groups)
    while nvc > 0 and ((num_channels // nvc) % 32 or num_groups % nvc):
        nvc -= 1
    if nvc == 0:
        raise ValueError(f"dram_group_norm_virtual_columns: no column count up to grid_x={core_grid.x} splits "
                         f"num_channels={num_channels} into multiples of 32 and divides num_groups={num_groups}; "
                         f"use a channel count with num_channels / num_groups groups of 32")
    return nvc


def dram_group_norm_params_from_torch(torch_params, channels_per_device: int, groups_per_device: int, device,
                                      mesh_axis: int | None = None, core_grid=None, return_mask: bool = True,
                                      dtype: DataType = DataType.BFLOAT16):
    """group_norm's gamma and/or beta for a DRAM (interleaved) input, as TT-NN's Python helper makes them: each
    torch tensor laid out by create_group_norm_weight_bias_rm over the virtual columns, as a ROW_MAJOR tensor on
    `device` (sharded over mesh_axis when given), and the input mask if return_mask. Returns the params in
    torch_params' form (one tensor or a list), then the mask if asked for."""
    if core_grid is None and device is None:
        raise ValueError("dram_group_norm_params_from_torch: give device or core_grid (the grid decides the "
                         "virtual columns)")
    if channels_per_device % 32 or channels_per_device % groups_per_device:
        raise ValueError(f"dram_group_norm_params_from_torch: channels_per_device {channels_per_device} must be "
                         f"divisible by 32 and groups_per_device {groups_per_device}")
    num_devices, dims = 1, [None, None]
    if mesh_axis is not None:
        num_devices = tuple(device.shape)[mesh_axis]
        dims[mesh_axis] = 0  # each device gets its channels
    num_virtual_cols = dram_group_norm_virtual_columns(core_grid or device.core_grid, channels_per_device,
                                                       groups_per_device)
    params = []
    for t in [torch_params] if isinstance(torch_params, torch.Tensor) else torch_params:
        if t.numel() // num_devices != channels_per_device:
            raise ValueError(f"dram_group_norm_params_from_torch: {t.numel()} values over {num_devices} devices "
                             f"is not channels_per_device={channels_per_device} a device")
        laid_out = torch.cat([create_group_norm_weight_bias_rm(chunk, channels_per_device, num_virtual_cols)
                              for chunk in t.chunk(num_devices)], dim=0)
        mapper = ShardTensor2dMesh(device, mesh_shape=tuple(device.shape), dims=dims) if device is not None else None
        params.append(from_torch(laid_out, dtype=dtype, device=device, mesh_mapper=mapper))
    params = params[0] if isinstance(torch_params, torch.Tensor) else params
    if not return_mask:
        return params
    mask = create_group_norm_input_mask(channels_per_device, groups_per_device, num_virtual_cols, dtype)
    return params, to_device(mask, device)


def create_group_norm_reciprocals(N: int, C: int, H: int, W: int, num_groups: int, core_grid) -> torch.Tensor:  # noqa: N803
    """The reciprocals group_norm's Welford kernel reads (use_welford=True, reciprocals=): 1/1, 1/2, ... 1/n for
    the most values one core accumulates, one row a core of core_grid (so each core's L1 shard holds them all).
    A float32 torch tensor, as TT-NN's Python helper returns it."""
    num_virtual_cols = dram_group_norm_virtual_columns(core_grid, C, num_groups)
    num_virtual_rows = (core_grid.x // num_virtual_cols) * core_grid.y
    rows_per_group = 1 if num_virtual_rows <= N else num_virtual_rows // N
    per_group = C // num_groups * -(-H * W // 32)
    n = per_group // rows_per_group
    return (1.0 / torch.arange(1, n + 1, dtype=torch.float32)).repeat(core_grid.x * core_grid.y, 1)


def _affine(op_name: str, name: str, w, channels: int):
    """gamma/beta as `channels` values: given plainly, or in create_group_norm_weight_bias_rm's padded layout."""
    if w is None:
        return None
    flat = w.reshape(-1).float()
    if flat.numel() == channels:
        return flat
    # Padded chunks: the chunk width whose 32-padding gives this many values and whose padding holds zeros.
    # Several widths can give the same count (96 channels: 4 x 24 and 2 x 48 both pad to 128), the zeros decide.
    fits = [c for c in range(1, channels + 1) if channels % c == 0 and channels // c * _ceil32(c) == flat.numel()
            and not flat.reshape(channels // c, _ceil32(c))[:, c:].any()]
    if len(fits) != 1:
        raise ValueError(f"{op_name}: {name} has {flat.numel()} values, which is neither the {channels} channels "
                         f"nor one padded layout of them (ttnn.create_group_norm_weight_bias_rm); "
                         f"pass the {channels} values as they are")
    c = fits[0]
    return flat.reshape(channels // c, _ceil32(c))[:, :c].reshape(-1)


def _group_norm(x, num_groups, epsilon, weight, bias):
    shape = x.shape
    channels_first = x.reshape(shape[0], -1, shape[-1]).transpose(1, 2)  # [N, C, positions]
    y = F.group_norm(channels_first.float(), num_groups, weight, bias, eps=epsilon)
    return y.transpose(1, 2).reshape(shape)


def _group_norm_golden(input_tensor, *_, num_groups, epsilon=1e-12, weight=None, bias=None, **__):
    c = input_tensor.shape[-1]
    return _group_norm(input_tensor, num_groups, epsilon, _affine("ttnn.group_norm", "weight", weight, c),
                       _affine("ttnn.group_norm", "bias", bias, c))


@register_op("ttnn.group_norm", kind="norm", golden=_group_norm_golden)
def group_norm(input_tensor: Tensor, *, num_groups: int, epsilon: float = 1e-12, input_mask: Tensor | None = None,
               weight: Tensor | None = None, bias: Tensor | None = None, reciprocals: Tensor | None = None,
               memory_config: MemoryConfig | None = None, dtype: DataType | None = None, inplace: bool = True,
               output_layout: Layout | None = None, num_out_blocks: int | None = None,
               negative_mask: Tensor | None = None, use_welford: bool = False,
               op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Normalise each of `num_groups` channel groups of a channels-last input, then scale and shift.

    Args:
        input_tensor: [N, 1, H*W, C] (or [N, ..., C]); C must divide into num_groups.
        weight, bias: C values, plainly or as ttnn.create_group_norm_weight_bias_rm lays them out.
        input_mask, negative_mask, reciprocals: the tiles TT-NN's kernel reads to find each group and
            its statistics; device_sim finds the groups from num_groups and checks only that they are
            tensors on the same device.
        inplace, num_out_blocks, use_welford: how TT-NN's kernel runs; the output is a new tensor here.
        output_layout, dtype: the output's layout and dtype (the input's by default).

    >>> x = ttnn.from_torch(torch.rand(1, 1, 32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> y = ttnn.group_norm(x, num_groups=2, epsilon=1e-5)  # [N, 1, H*W, C]
    >>> y.shape, abs(y.to_torch()[..., :32].float().mean().item()) < 0.01  # group 0 (channels 0..31)
    (Shape([1, 1, 32, 64]), True)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor, input_mask, weight, bias, reciprocals, negative_mask)
    x = values(input_tensor, op_name).float()
    c = x.shape[-1]
    if x.dim() < 2 or num_groups < 1 or c % num_groups:
        raise ValueError(f"{op_name}: the last dim of shape {list(x.shape)} holds the channels and must "
                         f"divide into num_groups={num_groups}")
    w = _affine(op_name, "weight", values(weight, op_name) if weight is not None else None, c)
    b = _affine(op_name, "bias", values(bias, op_name) if bias is not None else None, c)
    out = output(_group_norm(x, num_groups, epsilon, w, b), input_tensor, ins, op_name=op_name,
                 dtype=dtype, layout=output_layout, memory_config=memory_config)
    if not group_norm_programs.supported(input_tensor, num_groups, weight, bias, out.dtype, out.layout):
        return out
    if input_tensor.is_sharded():
        program = group_norm_programs.sharded_group_norm_program(
            input_tensor, num_groups, gamma=weight, beta=bias, input_mask=input_mask, negative_mask=negative_mask,
            out_layout=out.layout, use_welford=use_welford)
    else:
        program = group_norm_programs.group_norm_program(
            input_tensor, num_groups, gamma=weight, beta=bias, input_mask=input_mask,
            core_grid=tt_nn_only.get("core_grid"), num_out_blocks=num_out_blocks, use_welford=use_welford,
            reciprocals=reciprocals)
    device_work.launch_after(out, True, input_tensor, program)
    return out
