"""Mamba's SSM ops: ttnn.experimental.hc_sum_reduce and ttnn.experimental.prefix_scan.

    import device_sim as ttnn
    y = ttnn.experimental.hc_sum_reduce(x)                       # [1, 1, users, W] -> [1, 1, users, W / 32]
    h = ttnn.experimental.prefix_scan(a, bx, h_prev)             # h[i] = a[i] * h[i - 1] + bx[i], h_prev updated

tt-metal's ttnn/cpp/ttnn/operations/experimental/ssm/ (the third, repeat_and_interleave_eltwise_mul, is in
eltwise.py). Their checks are the device operations' TT_FATALs, in their words.
"""

from __future__ import annotations

import torch

from device_sim import device_work
from device_sim.ops.common import device_inputs, output, values
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import ssm as programs
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout, MemoryConfig, ShardOrientation, TensorMemoryLayout

_WHERE = "device_sim/ops/ssm.py"
_LATENT = 32  # hc_sum_reduce_device_operation.cpp: the values summed into each output value
_BLOCK_FLOATS = (DataType.BFLOAT16, DataType.BFLOAT8_B)


def _check(checks, op_name: str) -> None:
    for ok, message in checks:
        if not ok:
            raise tt_fatal(message, f"{op_name}: {message}", _WHERE)


def _hc_sum_reduce_golden(input, *_, **__):
    return input.float().reshape(*input.shape[:-1], -1, _LATENT).sum(-1)


@register_op("ttnn.experimental.hc_sum_reduce", kind="rows", golden=_hc_sum_reduce_golden)
def hc_sum_reduce(input: Tensor, *, memory_config: MemoryConfig | None = None, dtype: DataType | None = None,
                  math_fidelity=None, op_name: str = OWN_NAME) -> Tensor:
    """The sum of each run of 32 neighbouring values along the width of a [1, 1, users, W] TILE tensor: [1, 1, users,
    W / 32], in `dtype` and `memory_config` (the input's unless given); W must be a multiple of 32 * 32.

    >>> x = ttnn.from_torch(torch.ones(1, 1, 32, 1024), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> y = ttnn.experimental.hc_sum_reduce(x)
    >>> y.shape, y.to_torch()[0, 0, 0, :2].tolist()
    (Shape([1, 1, 32, 32]), [32.0, 32.0])
    """
    cfg = memory_config if memory_config is not None else input.memory_config()
    out_dtype = DataType(dtype) if dtype is not None else input.dtype
    shape = input.padded_shape
    _check(((input.layout == Layout.TILE, "Inputs to ssm_1d_sum_reduce must be tilized"),
            (input.device() is not None, "Operands to ssm_1d_sum_reduce need to be on device!"),
            (input.memory_config().memory_layout == TensorMemoryLayout.INTERLEAVED,
             "Unsupported memory layout for input a!"),
            (input.dtype in _BLOCK_FLOATS, "Unsupported data format for input a!"),
            (cfg.memory_layout == TensorMemoryLayout.INTERLEAVED, "Unsupported memory layout for output!"),
            (out_dtype in _BLOCK_FLOATS, "Unsupported data format for output!"),
            (len(shape) == 4 and shape[0] == 1 and shape[1] == 1, "Dim 1 and 2 are expected to be 1 in input a!"),
            (shape[2] % 32 == 0, "Batch size must be divisible by 32 for input a!"),
            (shape[3] % 32 == 0, "Final dim must be a multiple of 32!"),
            (shape[3] // 32 % _LATENT == 0, "Final dim/TILE_SIZE must be a multiple of latent size!")), op_name)
    ins = device_inputs(op_name, input)
    out = output(_hc_sum_reduce_golden(values(input, op_name)), input, ins, op_name=op_name, dtype=out_dtype,
                 memory_config=cfg)
    device_work.launch_after(out, True, input, programs.hc_sum_reduce_program(input))
    return out


def _scan(a: torch.Tensor, bx: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """h[i] = a[i] * h[i - 1] + bx[i] down the rows (the sequence) of [1, 1, L, EN] a and bx from h_prev [EN], each
    step's h rounded to bfloat16, as the kernel keeps it in its Float16_b CBs (prefix_scan_program_factory.cpp)."""
    a, bx = a.float(), bx.float()
    rows = torch.empty_like(a)
    h = h.reshape(-1).float()
    for i in range(a.shape[-2]):
        h = (a[..., i, :].reshape(-1) * h + bx[..., i, :].reshape(-1)).bfloat16().float()
        rows[..., i, :] = h.reshape(rows[..., i, :].shape)
    return rows


def _prefix_scan_golden(a, bx, h_prev, *_, **__):
    return _scan(a, bx, h_prev)


@register_op("ttnn.experimental.prefix_scan", kind="rows", golden=_prefix_scan_golden)
def prefix_scan(a: Tensor, bx: Tensor, h_prev: Tensor, *, memory_config: MemoryConfig | None = None,
                dtype: DataType | None = None, math_fidelity=None, op_name: str = OWN_NAME) -> Tensor:
    """Mamba's selective scan: h[i] = a[i] * h[i - 1] + bx[i] for each row i of the [1, 1, L, E*N] TILE tensors a
    and bx, from the ROW_MAJOR bfloat16 [1, 1, 1, E*N] h_prev, which is overwritten with the last row (the state the
    next chunk starts from). All three sharded on one grid in ROW_MAJOR orientation, as TT-NN requires; the result
    is in `dtype` and `memory_config` (a's unless given).

    >>> cfg = lambda w: ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.L1, ttnn.ShardSpec(
    ...     ttnn.num_cores_to_corerangeset(1, ttnn.CoreCoord(8, 8), True), [w, 64], ttnn.ShardOrientation.ROW_MAJOR))
    >>> a = ttnn.from_torch(torch.full((1, 1, 32, 64), 0.5), ttnn.bfloat16, layout=ttnn.TILE, device=device,
    ...                     memory_config=cfg(32))
    >>> bx = ttnn.from_torch(torch.ones(1, 1, 32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device,
    ...                      memory_config=cfg(32))
    >>> h = ttnn.from_torch(torch.zeros(1, 1, 1, 64), ttnn.bfloat16, layout=ttnn.ROW_MAJOR, device=device,
    ...                     memory_config=cfg(1))
    >>> ttnn.experimental.prefix_scan(a, bx, h).to_torch()[0, 0, :3, 0].tolist()  # 1, 1.5, 1.75, ...
    [1.0, 1.5, 1.75]
    """
    for name, t in (("a", a), ("bx", bx), ("h_prev", h_prev)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op_name}: {name} must be a ttnn tensor, got {type(t).__name__}")
    shape = a.padded_shape
    sharded = a.is_sharded() and bx.is_sharded() and h_prev.is_sharded()
    specs = [t.memory_config().shard_spec for t in (a, bx, h_prev)] if sharded else []
    _check(((a.dtype == bx.dtype, "Expected input tensors to have the same data type"),
            (a.layout == Layout.TILE and bx.layout == Layout.TILE, "Expected input tensors to be tile layout"),
            (a.padded_shape == bx.padded_shape, "Expected input tensors to have the same shape"),
            (len(shape) == 4, "Expected input tensors to be rank 4"),
            (len(shape) == 4 and shape[0] == 1 and shape[1] == 1, "Dimension 0 and 1 should be size 1"),
            (len(shape) == 4 and shape[2] >= 32 and shape[2] % 32 == 0, "Sequence length should be a multiple of 32"),
            (h_prev.dtype == DataType.BFLOAT16, "Expected initial hidden state to be bfloat16"),
            (h_prev.layout == Layout.ROW_MAJOR, "Expected initial hidden state to be row-major"),
            (sharded and all(s is not None for s in specs), "Expected input tensors to be sharded"),
            *((spec.orientation == ShardOrientation.ROW_MAJOR, f"Expected {name} tensor to be row major orientation")
              for spec, name in zip(specs, ("A", "Bx", "h")))), op_name)
    ins = device_inputs(op_name, a, bx, h_prev)
    hidden = _scan(values(a, op_name), values(bx, op_name), values(h_prev, op_name))
    out = output(hidden, a, ins, op_name=op_name, dtype=DataType(dtype) if dtype is not None else a.dtype,
                 memory_config=memory_config if memory_config is not None else a.memory_config())
    # the writer puts the last hidden state back into h_prev's shards, in its bfloat16 rows
    h_prev._write(hidden[..., -1:, :])
    device_work.launch_after(out, True, a, programs.prefix_scan_program(a, out))
    return out
