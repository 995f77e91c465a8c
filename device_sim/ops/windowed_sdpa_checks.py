"""TT-NN 0.81's refusals of a windowed SDPA whose tensors its one program cannot read: the type, layout and placement
checks of WindowedScaledDotProductAttentionDeviceOperation::validate_on_program_cache_miss (tt-metal's
transformer/sdpa_windowed/device/sdpa_windowed_device_operation.cpp), in its order.

Each raises TT-NN's TT_FATAL (a RuntimeError: the condition, TT-NN's words, then device_sim's line with the fix)
before the op computes or allocates anything.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.ops.windowed_sdpa_checks import check_windowed_inputs
    >>> dev = ttnn.open_device()
    >>> q = ttnn.from_torch(torch.ones(1, 1, 32, 32), dtype=ttnn.float32, layout=ttnn.TILE, device=dev)
    >>> cu = ttnn.from_torch(torch.tensor([0, 32]), dtype=ttnn.int32, device=dev)
    >>> try:
    ...     check_windowed_inputs("windowed", q, q, q, cu)
    ... except RuntimeError as e:
    ...     print(str(e).splitlines()[2])
    Data type of input tensor must be BFLOAT16, BFLOAT8_B, or BFLOAT4_B and is DataType::FLOAT32
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.program_config_checks import tt_fatal
from device_sim.tensor import Tensor
from device_sim.types import BufferType, DataType, Layout

_WHERE = "device_sim/ops/windowed_sdpa_checks.py"
_QKV_DTYPES = (DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.BFLOAT4_B)


def _fail(condition: str, words: str, fix: str):
    raise tt_fatal(condition, f"{words}\n{fix}", where=_WHERE)


def check_windowed_inputs(op_name: str, q: Tensor, k: Tensor, v: Tensor, cu_window_seqlens: Tensor) -> None:
    """cu_window_seqlens a 1-D uint32 / int32 ROW_MAJOR tensor in DRAM; q, k, v TILE bfloat16 / bfloat8_b /
    bfloat4_b tensors in DRAM."""
    cu = cu_window_seqlens
    if len(cu.shape) != 1:
        _fail("cu_window_seqlens_shape.rank() == 1", "cu_window_seqlens must be a 1D tensor",
              f"{op_name}: cu_window_seqlens has shape {list(cu.shape)}; flatten it to [windows + 1]")
    if cu.shape[0] < 2:
        _fail("cu_window_seqlens_shape[0] >= 2", "cu_window_seqlens must have at least 2 elements",
              f"{op_name}: give the windows' bounds from 0 to S, e.g. [0, S]")
    if cu.dtype not in (DataType.UINT32, DataType.INT32):
        _fail("cu_window_seqlens.dtype() == DataType::UINT32 || cu_window_seqlens.dtype() == DataType::INT32",
              "cu_window_seqlens must be uint32 or int32",
              f"{op_name}: cu_window_seqlens is DataType::{cu.dtype.name}; make it with dtype=ttnn.int32")
    for t in (q, k, v):
        if t.memory_config().buffer_type != BufferType.DRAM:
            _fail("input_tensor->buffer()->buffer_type() == tt::tt_metal::BufferType::DRAM",
                  "Operands to windowed SDPA need to be in DRAM",
                  f"{op_name}: tensor {t.tensor_id} is in BufferType::{t.memory_config().buffer_type.name}; move it "
                  f"with ttnn.to_memory_config(x, ttnn.DRAM_MEMORY_CONFIG)")
        if t.layout != Layout.TILE:
            _fail("(input_tensor->layout() == Layout::TILE)", "Inputs to windowed SDPA must be tilized",
                  f"{op_name}: tensor {t.tensor_id} is Layout::{t.layout.name}; convert it with ttnn.to_layout")
        if t.dtype not in _QKV_DTYPES:
            _fail("input_tensor->dtype() == DataType::BFLOAT16 || input_tensor->dtype() == DataType::BFLOAT8_B || "
                  "input_tensor->dtype() == DataType::BFLOAT4_B",
                  f"Data type of input tensor must be BFLOAT16, BFLOAT8_B, or BFLOAT4_B and is "
                  f"DataType::{t.dtype.name}",
                  f"{op_name}: typecast tensor {t.tensor_id} to ttnn.bfloat16")
    if cu.memory_config().buffer_type != BufferType.DRAM:
        _fail("cu_window_seqlens.buffer()->buffer_type() == tt::tt_metal::BufferType::DRAM",
              "cu_window_seqlens must be in DRAM", f"{op_name}: move cu_window_seqlens to ttnn.DRAM_MEMORY_CONFIG")
    if cu.layout != Layout.ROW_MAJOR:
        _fail("(cu_window_seqlens.layout() == Layout::ROW_MAJOR)", "cu_window_seqlens must be in row-major layout",
              f"{op_name}: make cu_window_seqlens with layout=ttnn.ROW_MAJOR_LAYOUT")
