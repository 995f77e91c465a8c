"""Conv2dConfig, Conv3dConfig and the conv slice configs, with TT-NN 0.81's names, keywords and defaults.

    import device_sim as ttnn
    cfg = ttnn.Conv2dConfig(weights_dtype=ttnn.bfloat16, activation="relu", output_layout=ttnn.ROW_MAJOR)
    ttnn.conv2d(..., conv_config=cfg, slice_config=ttnn.Conv2dL1FullSliceConfig)

What device_sim does with each field: `activation` is applied to conv2d's output (one fused op,
as on hardware), `weights_dtype` rounds prepared weights and bias, `output_layout` is the output's
layout. Every other field tunes how real hardware blocks, shards and buffers the convolution
(circular buffer sizes, core grids, halo reallocation); it is kept so a model's config reads back
as written, and never changes a value. Slicing (Conv2dSliceConfig) splits a large conv into
passes through L1 on hardware; the result is the same, so device_sim only checks the config.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from device_sim.types import DataType, Layout, ShardOrientation, TensorMemoryLayout


class PaddingMode(enum.Enum):
    """ttnn.PaddingMode (sliding_window.hpp): what a conv's padding holds, zeros or the edge value repeated."""

    Zeros = 0
    Replicate = 1


# Activations conv2d can fuse, by TT-NN's lower-case name (UnaryOpType names, lower-cased).
CONV_ACTIVATIONS = ("relu", "relu6", "silu", "gelu", "sigmoid", "tanh")


def activation_name(activation) -> str | None:
    """A fused activation as a lower-case name: "relu", a ttnn.UnaryWithParam(UnaryOpType.RELU), or None/""."""
    if activation is None or activation == "":
        return None
    if isinstance(activation, str):
        name = activation.lower()
    else:  # UnaryWithParam-like: TT-NN's form is UnaryWithParam(UnaryOpType.RELU)
        op_type = getattr(activation, "op_type", activation)
        name = str(getattr(op_type, "name", op_type)).rsplit(".", 1)[-1].lower()
    if name not in CONV_ACTIVATIONS:
        raise ValueError(f"conv activation {activation!r} is not one of {', '.join(CONV_ACTIVATIONS)}")
    return name


@dataclass(kw_only=True)
class Conv2dConfig:
    """TT-NN's Conv2dConfig (ttnn.conv1d, conv2d and conv_transpose2d); defaults as in TT-NN 0.81."""

    weights_dtype: DataType | None = None  # dtype of prepared weights and bias; None keeps the weights'
    activation: object = None  # fused on the output: "relu" or ttnn.UnaryWithParam(ttnn.UnaryOpType.RELU)
    deallocate_activation: bool = False
    reallocate_halo_output: bool = True
    config_tensors_in_dram: bool = False
    act_block_h_override: int = 0
    act_block_w_div: int = 1
    reshard_if_not_optimal: bool = False
    override_sharding_config: bool = False
    shard_layout: TensorMemoryLayout | None = None
    core_grid: object = None
    transpose_shards: bool = False
    output_layout: Layout = Layout.TILE
    enable_act_double_buffer: bool = False
    enable_weights_double_buffer: bool = False
    full_inner_dim: bool = False
    enable_kernel_stride_folding: bool | None = None
    enable_activation_reuse: bool = False
    force_split_reader: bool | None = None
    override_output_sharding_config: bool = False
    padding_mode: PaddingMode = PaddingMode.Zeros  # Replicate pads with the edge values (as torch's "replicate")
    # The output's dtype when the conv call gives no dtype=. TT-NN 0.81 (and tt-metal a8c5af0f) moved it to the
    # conv call and refuse it here; tt-metal's model code still passes it here (optimized Whisper's Conv1dConfig,
    # ttnn_conv_test, simplecnn_inference_cifar), as TT-NN releases before the move took it, so device_sim
    # takes it (docs/design_departures.md). The call's dtype= wins when both are given.
    dtype: DataType | None = None

    def __post_init__(self):
        if self.weights_dtype is not None:
            self.weights_dtype = DataType(self.weights_dtype)
        if self.dtype is not None:
            self.dtype = DataType(self.dtype)
        if not isinstance(self.padding_mode, PaddingMode):
            raise TypeError(f"padding_mode {self.padding_mode!r} must be ttnn.PaddingMode.Zeros or "
                            f"ttnn.PaddingMode.Replicate")
        self.output_layout = Layout(self.output_layout)
        activation_name(self.activation)  # a misspelt activation is an error here, not at the first conv


class SliceType(enum.Enum):
    """Conv2dSliceConfig.SliceTypeEnum: how a conv too big for L1 is split on hardware."""

    DRAMSliceHeight = 0
    DRAMSliceWidth = 1
    L1Full = 2


@dataclass(kw_only=True)
class Conv2dSliceConfig:
    """TT-NN's Op2DSliceConfig: `slice_type` and, for the DRAM slice types, `num_slices` (0: chosen by the op)."""

    SliceTypeEnum = SliceType

    slice_type: SliceType = field(default=SliceType.L1Full)
    num_slices: int = 0

    def __post_init__(self):
        if not isinstance(self.slice_type, SliceType):
            raise TypeError(f"slice_type {self.slice_type!r} must be one of ttnn.Conv2dDRAMSliceHeight, "
                            f"ttnn.Conv2dDRAMSliceWidth, ttnn.Conv2dL1Full")
        if self.num_slices < 0:
            raise ValueError(f"num_slices={self.num_slices} must be >= 0 (0 lets the op choose)")


Conv2dDRAMSliceHeight = SliceType.DRAMSliceHeight
Conv2dDRAMSliceWidth = SliceType.DRAMSliceWidth
Conv2dL1Full = SliceType.L1Full
Conv2dL1FullSliceConfig = Conv2dSliceConfig(slice_type=Conv2dL1Full)
Op2DSliceConfig = Conv2dSliceConfig
# TT-NN's names for the same slice types and config in the pool ops' dram_slice_config (ttnn/operations/conv2d.py)
Op2DDRAMSliceHeight, Op2DDRAMSliceWidth, Op2DL1Full = Conv2dDRAMSliceHeight, Conv2dDRAMSliceWidth, Conv2dL1Full
Op2DL1FullSliceConfig = Conv2dL1FullSliceConfig


def get_conv_output_dim(input, window, stride=1, pad=0, dilation=1) -> int:  # noqa: A002  (TT-NN's names)
    """The output size of a convolution along one dimension, as TT-NN's helper computes it."""
    return (input + 2 * pad - dilation * (window - 1) - 1) // stride + 1


# TT-NN's conv1d takes the same config (ttnn.Conv1dConfig is Conv2dConfig).
Conv1dConfig = Conv2dConfig


@dataclass(kw_only=True)
class SlidingWindowParallelConfig:
    """TT-NN's sliding-window ParallelConfig (ttnn.SlidingWindowParallelConfig, sliding_window_nanobind.cpp): the
    cores, sharding and orientation a conv-style [1, 1, N*H*W, C] tensor is spread with (tt-metal's
    test_slice_for_conv.py builds its padded_slice / slice_write memory configs from it)."""

    grid: object  # a ttnn.CoreRangeSet
    shard_scheme: TensorMemoryLayout
    shard_orientation: ShardOrientation


@dataclass(kw_only=True)
class Conv3dConfig:
    """TT-NN's Conv3dConfig (ttnn.experimental.conv3d; conv3d_nanobind.cpp's keywords and defaults). The blocks
    say how the program splits the work over the grid: C_in_block (0: every input channel) also sets the order of
    ttnn.experimental.prepare_conv3d_weights' rows and how many partial sums the cores reduce; the others change
    no value."""

    weights_dtype: DataType = DataType.BFLOAT16
    output_layout: Layout = Layout.ROW_MAJOR
    T_out_block: int = 1
    W_out_block: int = 1
    H_out_block: int = 1
    C_out_block: int = 0  # 0: every output channel (padded to a tile)
    C_in_block: int = 0  # 0: every input channel
    dilation: tuple = (1, 1, 1)
    alignment: int = 32  # the input's channels are padded to it (conv3d.cpp's default config)
    compute_with_storage_grid_size: object = (1, 1)

    def __post_init__(self):
        self.weights_dtype = DataType(self.weights_dtype)
        self.output_layout = Layout(self.output_layout)
        self.dilation = tuple(self.dilation)
