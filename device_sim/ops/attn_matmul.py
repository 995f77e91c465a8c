"""TT-NN's decode-attention matmuls: ttnn.experimental.attn_matmul, attn_matmul_from_cache and group_attn_matmul.

    import device_sim as ttnn
    scores = ttnn.experimental.attn_matmul(q, k_t, compute_with_storage_grid_size=ttnn.CoreCoord(8, 8))

Each user's q heads meet that user's keys (or values): in0 [1, q_heads, batch, K] and in1 [batch, kv_heads, K, N]
give [1, q_heads, batch, N], which torch writes (a.transpose(0, 2) @ b).transpose(0, 2) (the ops' own docs, in
attn_matmul_nanobind.cpp). attn_matmul takes one kv head; group_attn_matmul shares each of kv_heads among
q_heads / kv_heads q heads (batch 32 only); attn_matmul_from_cache reads in1 from a KV cache, the first num_tokens
(rounded up to 32) positions, transposed for the pre-softmax product (transpose_hw=True).

The values are exact float32 products rounded once to the output dtype, as ttnn.matmul's without a
compute_kernel_config; with one they are the matrix engine's under its fidelity (device_sim.numerics).
"""

from __future__ import annotations

import torch

from device_sim import device_work, numerics
from device_sim.compute_config import MathFidelity, resolve
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, output_dtype
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import attn_matmul as programs
from device_sim.registry import OWN_NAME, pending_output_target, register_op
from device_sim.sharding import num_cores_to_corerangeset
from device_sim.tensor import Tensor
from device_sim.types import DRAM_MEMORY_CONFIG, Layout, MemoryConfig, ShardOrientation, ShardSpec, TensorMemoryLayout

_WHERE = "device_sim/ops/attn_matmul.py"


def _product(a: torch.Tensor, b: torch.Tensor, n) -> torch.Tensor:
    """[1, H, B, K] x [B, H, K, N] -> [1, H, B, N], each user's rows against its own in1 (b broadcast over heads)."""
    a, b = a.float().transpose(0, 2), b.float()
    y = numerics.matmul(a, b, n) if n is not None else torch.matmul(a, b)
    return y.transpose(0, 2)


def _from_cache(b: torch.Tensor, num_tokens: int, transpose_hw: bool) -> torch.Tensor:
    """The part of KV cache `b` [batch, 1, max_len, D] the kernel reads: num_tokens rounded up to 32 positions."""
    part = b[:, :, :_round_tokens(num_tokens), :]
    return part.transpose(-2, -1) if transpose_hw else part


def _round_tokens(num_tokens: int) -> int:
    return (num_tokens - 1) // 32 * 32 + 32


def _attn_golden(a, b, *_, **__):
    return _product(a, b, None)


def _attn_from_cache_golden(a, b, *_, num_tokens, transpose_hw, **__):
    return _product(a, _from_cache(b, num_tokens, transpose_hw), None)


def _group_golden(a, b, *_, **__):
    return _product(a, torch.repeat_interleave(b, a.shape[1] // b.shape[1], dim=1), None)


def _numerics(op_name: str, compute_kernel_config):
    # init_device_compute_kernel_config's defaults (compute_kernel_config.hpp): LoFi, approx on, no fp32 accumulation
    if not numerics.emulating(compute_kernel_config):
        return None
    return resolve(op_name, compute_kernel_config, math_fidelity=MathFidelity.LoFi, math_approx_mode=True,
                   fp32_dest_acc_en=False)


def _check_inputs(op_name: str, a: Tensor, b: Tensor) -> None:
    """The checks both device operations open with (attn_matmul_device_operation.cpp and group_attn_matmul's)."""
    for name, t in (("input_tensor_a", a), ("input_tensor_b", b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op_name}: {name} must be a ttnn tensor, got {type(t).__name__}; convert it with "
                            f"ttnn.from_torch(tensor, layout=ttnn.TILE, device=device)")
    if a.layout != Layout.TILE or b.layout != Layout.TILE:
        raise tt_fatal("input_tensor_a.layout() == Layout::TILE && input_tensor_b.layout() == Layout::TILE",
                       f"Inputs to matmul must be tilized\n{op_name}: convert them with ttnn.to_layout(t, ttnn.TILE)",
                       _WHERE)
    device_inputs(op_name, a, b)
    if a.device() is None or b.device() is None:
        raise tt_fatal("storage_type() == StorageType::DEVICE", f"Operands to matmul need to be on device!\n{op_name}: "
                       f"move them with ttnn.to_device(t, device)", _WHERE)
    if len(a.padded_shape) != 4 or len(b.padded_shape) != 4:
        raise ValueError(f"{op_name}: input_tensor_a {list(a.shape)} and input_tensor_b {list(b.shape)} must both be "
                         f"4-D: [1, q_heads, batch, K] and [batch, kv_heads, K, N]")
    if a.padded_shape[0] != 1:
        raise tt_fatal("ashape[0] == 1", "Input q_len must be 1!", _WHERE)


def _check_k(a: Tensor, b: Tensor, num_tokens: int | None, transpose_hw: bool | None) -> None:
    ashape, bshape = a.padded_shape, b.padded_shape
    if num_tokens is None:
        if ashape[3] != bshape[2]:
            raise tt_fatal("ashape[3] == bshape[2]", f"Dimension K (A.shape[3]and B.shape[2]) must match for A shape: "
                           f"{ashape} and B shape: {bshape} in attn_matmul op", _WHERE)
    elif transpose_hw and ashape[3] != bshape[3]:
        raise tt_fatal("ashape[3] == bshape[3]", "For pre-attention matmul, dimension K for B is in B.shape[3], so "
                       "A.shape[3] must match B.shape[3]", _WHERE)
    elif not transpose_hw and ashape[3] != num_tokens:
        raise tt_fatal("ashape[3] == num_tokens", "For post-attention matmul, dimension K (A.shape[3]) is the "
                       "kv_seq_len in this case and must match the length of the cache we read", _WHERE)


def _attn(op_name: str, a: Tensor, b: Tensor, num_tokens: int | None, transpose_hw: bool | None, *, memory_config,
          dtype, compute_kernel_config) -> Tensor:
    _check_inputs(op_name, a, b)
    if b.padded_shape[1] != 1:
        raise tt_fatal("bshape[1] == 1", f"Number of kv_heads must be 1!\n{op_name}: in1 has {b.padded_shape[1]}; "
                       f"ttnn.experimental.group_attn_matmul shares several", _WHERE)
    if a.padded_shape[2] != b.padded_shape[0]:
        raise tt_fatal("ashape[2] == bshape[0]", "Num of users must match!", _WHERE)
    _check_k(a, b, num_tokens, transpose_hw)
    n = _numerics(op_name, compute_kernel_config)
    vb = b._value_or_raise()
    if num_tokens is not None:
        vb = _from_cache(vb, num_tokens, transpose_hw)
    y = _product(a._value_or_raise(), vb, n)
    out_dtype = output_dtype(op_name, dtype, a)
    fresh = pending_output_target(op_name) is None
    out = output(y, a, [a, b], op_name=op_name, dtype=out_dtype,
                 memory_config=memory_config if memory_config is not None else a.memory_config())
    program = programs.attn_matmul_program(a, b, out.dtype, fp32_dest_acc_en=n is not None and n.fp32_dest_acc_en)
    device_work.launch_for(out, fresh, a.device(), program)
    return out


def _grid(compute_with_storage_grid_size) -> tuple[int, int]:
    g = compute_with_storage_grid_size
    return (g.x, g.y) if hasattr(g, "x") else (int(g[0]), int(g[1]))


@register_op("ttnn.experimental.attn_matmul", kind="matmul", output_keyword="output_tensor", golden=_attn_golden)
def attn_matmul(input_tensor_a: Tensor, input_tensor_b: Tensor, *, compute_with_storage_grid_size, dtype=None,
                compute_kernel_config=None, memory_config: MemoryConfig | None = None,
                op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """in0 [1, q_heads, batch, K] times in1 [batch, 1, K, N], user by user: [1, q_heads, batch, N].

    Args:
        compute_with_storage_grid_size: the grid TT-NN splits the q heads over (its kernels and CBs sit on the
            whole worker grid either way).
        dtype, memory_config: the output's; in0's by default.
        compute_kernel_config: the kernel's numerics (LoFi with approx on by default in TT-NN).

    >>> q = ttnn.from_torch(torch.ones(1, 2, 32, 64), layout=ttnn.TILE, device=device)
    >>> k = ttnn.from_torch(torch.full((32, 1, 64, 32), 0.5), layout=ttnn.TILE, device=device)
    >>> y = ttnn.experimental.attn_matmul(q, k, compute_with_storage_grid_size=ttnn.CoreCoord(8, 8))
    >>> y.shape, y.to_torch()[0, 1, 5, 0].item()
    (Shape([1, 2, 32, 32]), 32.0)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return _attn(op_name, input_tensor_a, input_tensor_b, None, None, memory_config=memory_config, dtype=dtype,
                 compute_kernel_config=compute_kernel_config)


@register_op("ttnn.experimental.attn_matmul_from_cache", kind="matmul", output_keyword="output_tensor",
             golden=_attn_from_cache_golden)
def attn_matmul_from_cache(input_tensor_a: Tensor, input_tensor_b: Tensor, *, num_tokens: int, transpose_hw: bool,
                           compute_with_storage_grid_size, memory_config: MemoryConfig | None = None, dtype=None,
                           compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """attn_matmul with in1 read from a KV cache [batch, 1, max_len, D]: its first num_tokens positions, rounded up
    to 32. transpose_hw=True is the pre-softmax product (in0's K is D, the output has the rounded num_tokens
    columns); False the post-softmax one (in0's K is the rounded num_tokens, the output has D columns).

    >>> q = ttnn.from_torch(torch.ones(1, 2, 32, 64), layout=ttnn.TILE, device=device)
    >>> cache = ttnn.from_torch(torch.ones(32, 1, 128, 64), layout=ttnn.TILE, device=device)
    >>> y = ttnn.experimental.attn_matmul_from_cache(q, cache, num_tokens=40, transpose_hw=True,
    ...                                              compute_with_storage_grid_size=ttnn.CoreCoord(8, 8))
    >>> y.shape, y.to_torch()[0, 0, 0, 0].item()  # 40 tokens read as 64
    (Shape([1, 2, 32, 64]), 64.0)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if num_tokens <= 0:
        raise tt_fatal("num_tokens > 0", f"Number of tokens must be at least 1!\n{op_name}: got num_tokens="
                       f"{num_tokens}", _WHERE)
    if isinstance(input_tensor_b, Tensor) and num_tokens > input_tensor_b.padded_shape[2]:
        raise tt_fatal("num_tokens <= input_tensor_b.padded_shape()[2]", f"Number of tokens must be smaller or equal "
                       f"to the max cache length (B.shape[2])!\n{op_name}: num_tokens={num_tokens}, cache length "
                       f"{input_tensor_b.padded_shape[2]}", _WHERE)
    return _attn(op_name, input_tensor_a, input_tensor_b, _round_tokens(num_tokens), bool(transpose_hw),
                 memory_config=memory_config, dtype=dtype, compute_kernel_config=compute_kernel_config)


def _row_major(a: Tensor, b: Tensor, mem: MemoryConfig) -> bool:
    # group_attn_matmul.cpp: the first sharded one of in0, in1 and the output's shard spec decides; COL_MAJOR else
    for cfg in (a.memory_config(), b.memory_config(), mem):
        if cfg.is_sharded() and cfg.shard_spec is not None:
            return cfg.shard_spec.orientation == ShardOrientation.ROW_MAJOR
    return False


def _check_group_shards(a: Tensor, b: Tensor, orientation: ShardOrientation) -> None:
    """GroupAttnMatmulDeviceOperation's checks of sharded inputs: HEIGHT_SHARDED, one orientation, in0 a shard a
    q head of [batch, K], in1 a shard a user of [kv_heads * K, N]."""
    ashape, bshape = a.padded_shape, b.padded_shape
    for name, t, cores, shard in (("A", a, ashape[1], (ashape[2], ashape[3])),
                                  ("B", b, bshape[0], (bshape[1] * bshape[2], bshape[3]))):
        if not t.is_sharded():
            continue
        cfg = t.memory_config()
        if cfg.memory_layout != TensorMemoryLayout.HEIGHT_SHARDED:
            raise tt_fatal(f"input_tensor_{name.lower()}.memory_config().memory_layout() == HEIGHT_SHARDED",
                           f"Input tensor {name} memory layout must be HEIGHT_SHARDED but got {cfg.memory_layout}",
                           _WHERE)
        spec = cfg.shard_spec
        if spec.orientation != orientation:
            raise tt_fatal("shard_spec().orientation == shard_orientation",
                           "Any sharded memory configs must have the same shard orientation as one another!", _WHERE)
        if spec.num_cores() != cores:
            raise tt_fatal("shard_spec().num_cores() == " + ("ashape[1]" if name == "A" else "bshape[0]"),
                           "Q heads must be sharded on number of q heads!" if name == "A"
                           else "KV heads must be sharded on batch!", _WHERE)
        if tuple(spec.shape) != shard:
            raise tt_fatal(f"shard_shape == {list(shard)}", f"Input tensor {name} shard shape {list(spec.shape)} must "
                           f"be {list(shard)}", _WHERE)


def _group_output_config(mem: MemoryConfig, shape: tuple[int, int, int, int], grid, row_major: bool) -> MemoryConfig:
    """The output's memory config: a HEIGHT_SHARDED one without a shard spec gets a [batch, N] shard a q head on
    the first q_heads cores of the compute grid (compute_output_specs); one with a spec must equal that."""
    if not mem.is_sharded():
        return mem
    if mem.memory_layout != TensorMemoryLayout.HEIGHT_SHARDED:
        raise tt_fatal("output_mem_config.memory_layout() == TensorMemoryLayout::HEIGHT_SHARDED",
                       f"Output memory config layout must be HEIGHT_SHARDED but got {mem.memory_layout}", _WHERE)
    orientation = ShardOrientation.ROW_MAJOR if row_major else ShardOrientation.COL_MAJOR
    cores = num_cores_to_corerangeset(shape[1], grid, row_wise=row_major)
    spec = mem.shard_spec
    if spec is None:
        return MemoryConfig(mem.memory_layout, mem.buffer_type, ShardSpec(cores, (shape[2], shape[3]), orientation))
    if spec.grid != cores or spec.orientation != orientation or tuple(spec.shape) != (shape[2], shape[3]):
        raise tt_fatal("output_mem_config.shard_spec() == the computed one", "Shard spec in output mem config must "
                       f"match shard spec calculated in GroupAttnMatmulDeviceOperation::create_output_tensors!\n"
                       f"give no shard spec, or [{shape[2]}, {shape[3]}] shards on {cores} ({orientation})", _WHERE)
    return mem


@register_op("ttnn.experimental.group_attn_matmul", kind="matmul", output_keyword="optional_output_tensor",
             golden=_group_golden)
def group_attn_matmul(input_tensor_a: Tensor, input_tensor_b: Tensor, *, compute_with_storage_grid_size,
                      memory_config: MemoryConfig = DRAM_MEMORY_CONFIG, dtype=None, compute_kernel_config=None,
                      op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """in0 [1, q_heads, batch, K] times in1 [batch, kv_heads, K, N]: q head h meets kv head h // (q_heads /
    kv_heads); [1, q_heads, batch, N]. Batch must be 32 and the grid hold max(q_heads, 32) cores. A HEIGHT_SHARDED
    output without a shard spec gets one q head a core; sharded inputs must be height-sharded a q head (in0) and a
    user (in1) a core, all in one orientation.

    >>> q = ttnn.from_torch(torch.ones(1, 4, 32, 32), layout=ttnn.TILE, device=device)
    >>> kv = ttnn.from_torch(torch.arange(2.0).reshape(1, 2, 1, 1).expand(32, 2, 32, 32), layout=ttnn.TILE,
    ...                      device=device)
    >>> y = ttnn.experimental.group_attn_matmul(q, kv, compute_with_storage_grid_size=ttnn.CoreCoord(8, 8))
    >>> y.to_torch()[0, :, 0, 0].tolist()  # q heads 0-1 share kv head 0, 2-3 kv head 1
    [0.0, 0.0, 32.0, 32.0]
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    a, b = input_tensor_a, input_tensor_b
    _check_inputs(op_name, a, b)
    ashape, bshape = tuple(a.padded_shape), tuple(b.padded_shape)
    if ashape[1] % bshape[1]:
        raise tt_fatal("ashape[1] % bshape[1] == 0", f"Number of q_heads must be divisible by kv_heads!\n{op_name}: "
                       f"{ashape[1]} q heads, {bshape[1]} kv heads", _WHERE)
    if ashape[2] != bshape[0]:
        raise tt_fatal("ashape[2] == bshape[0]", "Num of users must match!", _WHERE)
    if bshape[0] != 32:
        raise tt_fatal("bshape[0] == 32", "Only batch 32 is supported for group attention matmul!", _WHERE)
    gx, gy = _grid(compute_with_storage_grid_size)
    if max(ashape[1], 32) > gx * gy:  # at least 32 cores, to multicast the KV heads
        raise tt_fatal("num_cores_used <= compute_with_storage_grid_size.x * y", "Compute grid size is too small for "
                       "group attention matmul! For now, we require at most 1 q_heads per core.", _WHERE)
    mem = memory_config if memory_config is not None else DRAM_MEMORY_CONFIG
    row_major = _row_major(a, b, mem)
    _check_group_shards(a, b, ShardOrientation.ROW_MAJOR if row_major else ShardOrientation.COL_MAJOR)
    _check_k(a, b, None, None)
    n = _numerics(op_name, compute_kernel_config)
    vb = b._value_or_raise()
    y = _product(a._value_or_raise(), torch.repeat_interleave(vb, a.shape[1] // vb.shape[1], dim=1), n)
    out_shape = (1, ashape[1], ashape[2], bshape[3])
    fresh = pending_output_target(op_name) is None
    out = output(y, a, [a, b], op_name=op_name, dtype=output_dtype(op_name, dtype, a),
                 memory_config=_group_output_config(mem, out_shape, (gx, gy), row_major))
    fp32 = n is not None and n.fp32_dest_acc_en
    program = programs.group_attn_matmul_program(a, b, out, n_tiles=bshape[3] // 32, fp32_dest_acc_en=fp32)
    # compute_program_hash reads no shape: on a hit TT-NN resizes the CBs (override_runtime_arguments)
    am, bm = a.memory_config(), b.memory_config()
    key = device_work.ProgramHash(("GroupAttnMatmulDeviceOperation", programs.out_subblock_w(bshape[3] // 32, fp32),
                                   (gx, gy), mem.memory_layout, mem.buffer_type, out.dtype, row_major, n,
                                   am.memory_layout, am.buffer_type, a.dtype, bm.memory_layout, bm.buffer_type,
                                   b.dtype, a.device().device_id))
    device_work.launch_for(out, fresh, a.device(), program, key)
    return out
