"""`ttnn.operations.conv2d`: the conv configs by the names TT-NN's ttnn/operations/conv2d.py gives them.

    from ttnn.operations.conv2d import Conv2dConfig      # tests/ttnn's test_graph_capture.py

They are device_sim.conv_config's, the objects `ttnn.Conv2dConfig` and the others name.
"""

from device_sim.conv_config import (
    Conv2dConfig,
    Conv2dDRAMSliceHeight,
    Conv2dDRAMSliceWidth,
    Conv2dL1Full,
    Conv2dL1FullSliceConfig,
    Conv2dSliceConfig,
    Op2DDRAMSliceHeight,
    Op2DDRAMSliceWidth,
    Op2DL1Full,
    Op2DL1FullSliceConfig,
    Op2DSliceConfig,
    PaddingMode,
    get_conv_output_dim,
)

__all__ = [
    "Conv2dConfig", "Conv2dDRAMSliceHeight", "Conv2dDRAMSliceWidth", "Conv2dL1Full", "Conv2dL1FullSliceConfig",
    "Conv2dSliceConfig", "Op2DDRAMSliceHeight", "Op2DDRAMSliceWidth", "Op2DL1Full", "Op2DL1FullSliceConfig",
    "Op2DSliceConfig", "PaddingMode", "get_conv_output_dim",
]
