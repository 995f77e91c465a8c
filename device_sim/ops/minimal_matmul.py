"""TT-NN's minimal matmuls: ttnn.experimental.minimal_matmul, minimal_matmul_split and
dit_minimal_matmul_addcmul_fused, one program each.

    import device_sim as ttnn
    y = ttnn.experimental.minimal_matmul(x, w, bias_tensor=b, fused_activation=(ttnn.UnaryOpType.GELU, False),
                                         config=ttnn.MinimalMatmulConfig(M_block_size=4, K_block_size=4,
                                                                         N_block_size=4, subblock_h=2, subblock_w=2,
                                                                         compute_with_storage_grid_size=(8, 8)))
    q, k, v = ttnn.experimental.minimal_matmul_split(x, w_qkv, chunks=3)
    h = ttnn.experimental.dit_minimal_matmul_addcmul_fused(x, w, 0.5, residual, gate)  # residual + 0.5 * (x @ w) * gate

A [..., M, K] input (its upper dims folded into M) times a [1.., K, N] weight, plus a [1.., N] bias, then the fused
activation, rounded once to the output dtype (minimal_matmul_nanobind.cpp; MinimalMatmulDeviceOperation). The split
form cuts the result into `chunks` equal tile-aligned slices of N, each its own output of the same one program; the
addcmul form (DiT's gated residual) computes a + scalar * (x @ w + bias) * gate in the same program, no activation.
With a compute_kernel_config the values are the matrix engine's (device_sim.numerics) under TT-NN's defaults for
this op (HiFi2, approx off, fp32 accumulation and packer L1 accumulation on: ttnn::prim::minimal_matmul).
"""

from __future__ import annotations

import torch

from device_sim import activations, device_work, numerics
from device_sim.compute_config import MathFidelity, resolve
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, output_dtype
from device_sim.program_config_checks import tt_fatal
from device_sim.program_configs import MinimalMatmulConfig
from device_sim.programs.minimal_matmul import minimal_matmul_program
from device_sim.registry import OWN_NAME, pending_output_target, register_op
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout

_WHERE = "device_sim/ops/minimal_matmul.py"
_DTYPES = (DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.BFLOAT4_B, DataType.FLOAT32)


def _product(a, b, bias, fused_activation, op_name, n=None, approx=False):
    y = numerics.matmul(a.float(), b.float(), n) if n is not None else torch.matmul(a.float(), b.float())
    if bias is not None:
        y = y + bias.float().reshape(-1)
    act = activations.resolve(op_name, fused_activation)
    return act(y, approx) if act is not None else y


def _golden(a, b, *_, bias_tensor=None, fused_activation=None, **__):
    return _product(a, b, bias_tensor, fused_activation, "ttnn.experimental.minimal_matmul")


def _split_golden(a, b, *_, chunks=3, bias_tensor=None, fused_activation=None, **__):
    y = _product(a, b, bias_tensor, fused_activation, "ttnn.experimental.minimal_matmul_split")
    return list(torch.chunk(y, chunks, dim=-1))


def _addcmul_golden(a, b, scalar, residual, gate, bias_tensor=None, *_, **__):
    y = _product(a, b, bias_tensor, None, "ttnn.experimental.dit_minimal_matmul_addcmul_fused")
    return residual.float() + scalar * y * gate.float()


def _check_addcmul(a: Tensor, w: Tensor, residual, gate) -> None:
    """validate's fused-ternary checks: a residual of the output's [M, N], a gate of [1, N] or [M, N], the residual
    in the weight's data format (its CB is read with in1's tile size: minimal_matmul_program_factory.cpp)."""
    for name, t in (("addcmul_input_tensor1", residual), ("addcmul_input_tensor2", gate)):
        if not isinstance(t, Tensor):
            raise TypeError(f"ttnn.experimental.dit_minimal_matmul_addcmul_fused: {name} must be a ttnn tensor, got "
                            f"{type(t).__name__}")
        if t.layout != Layout.TILE:
            raise tt_fatal("layout() == Layout::TILE", f"fused_ternary_input must be TILE layout ({name})", _WHERE)
        if t.dtype not in _DTYPES:
            raise tt_fatal("dtype_supported(dtype())", "fused_ternary tensors must have supported dtypes", _WHERE)
    M, N = a.shape[-2], w.shape[-1]
    if list(residual.shape[-2:]) != [M, N]:
        raise tt_fatal("ternary_a_logical[-2] == M && ternary_a_logical[-1] == N", f"fused_ternary_input_a shape must "
                       f"match output [M={M}, N={N}], got {list(residual.shape[-2:])}", _WHERE)
    if gate.shape[-2] not in (1, M) or gate.shape[-1] != N:
        raise tt_fatal("(ternary_b_logical[-2] == 1 || == M) && ternary_b_logical[-1] == N", f"fused_ternary_input_b "
                       f"shape must be [1, N={N}] (broadcast) or [M={M}, N={N}] (full), got {list(gate.shape[-2:])}",
                       _WHERE)
    if residual.dtype != w.dtype:
        raise tt_fatal("ternary_a_data_format == in1_data_format", "ternary_a_data_format must be equal to "
                       f"in1_data_format\nttnn.experimental.dit_minimal_matmul_addcmul_fused: give "
                       f"addcmul_input_tensor1 the weight's dtype, {w.dtype}", _WHERE)


def _validate(op_name: str, a, w, bias, config, n_dest_tiles: int) -> None:
    """MinimalMatmulDeviceOperation::validate_on_program_cache_miss, in its words."""
    for name, t in (("input_tensor", a), ("weight_tensor", w), ("bias_tensor", bias)):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{op_name}: {name} must be a ttnn tensor, got {type(t).__name__}; convert it with "
                            f"ttnn.from_torch(tensor, layout=ttnn.TILE, device=device)")
    device_inputs(op_name, a, w, bias)
    if a.device() is None or w.device() is None or (bias is not None and bias.device() is None):
        raise tt_fatal("storage_type() == StorageType::DEVICE", f"minimal_matmul operands must be on device\n"
                       f"{op_name}: move them with ttnn.to_device(t, device)", _WHERE)
    if any(t is not None and t.layout != Layout.TILE for t in (a, w, bias)):
        raise tt_fatal("layout() == Layout::TILE", f"minimal_matmul requires TILE layout for activation, weight and "
                       f"bias\n{op_name}: convert them with ttnn.to_layout(t, ttnn.TILE)", _WHERE)
    if any(t is not None and t.dtype not in _DTYPES for t in (a, w, bias)):
        raise tt_fatal("dtype_supported(dtype())",
                       "minimal_matmul supports only BFLOAT16, BFLOAT8_B, BFLOAT4_B, and FLOAT32 for inputs", _WHERE)
    sa, sw = list(a.shape), list(w.shape)
    if len(sa) < 2 or len(sw) < 2:
        raise tt_fatal("a_logical.rank() >= 2 && w_logical.rank() >= 2", "minimal_matmul expects rank >= 2 tensors",
                       _WHERE)
    if any(d != 1 for d in sw[:-2]):
        raise tt_fatal("w_logical[i] == 1", f"minimal_matmul weight must have 1 in all dims < -2 (got {sw})", _WHERE)
    if sa[-1] != sw[-2]:
        raise tt_fatal("K == K_w", f"minimal_matmul inner dimensions must match, got K={sa[-1]} and K_w={sw[-2]}",
                       _WHERE)
    if bias is not None:
        sb = list(bias.shape)
        if any(d != 1 for d in sb[:-1]):
            raise tt_fatal("b_logical[i] == 1", "minimal_matmul bias must be 1 in all dims except the last", _WHERE)
        if sb[-1] != sw[-1]:
            raise tt_fatal("b_logical[-1] == N", f"minimal_matmul bias last dimension must equal N ({sw[-1]}), got "
                           f"{sb[-1]}", _WHERE)
    if config is None:
        return
    if not isinstance(config, MinimalMatmulConfig):
        raise TypeError(f"{op_name}: config must be a ttnn.MinimalMatmulConfig or None, got {type(config).__name__}")
    c, grid = config, config.compute_with_storage_grid_size
    if min(c.M_block_size, c.K_block_size, c.N_block_size) <= 0:
        raise tt_fatal("M_block_size > 0 && K_block_size > 0 && N_block_size > 0", "Block sizes must be > 0", _WHERE)
    if min(c.subblock_h, c.subblock_w) <= 0:
        raise tt_fatal("subblock_h > 0 && subblock_w > 0", "Subblock sizes must be > 0", _WHERE)
    if c.M_block_size % c.subblock_h:
        raise tt_fatal("M_block_size % subblock_h == 0", f"M_block_size ({c.M_block_size}) must be divisible by "
                       f"subblock_h ({c.subblock_h})", _WHERE)
    if c.N_block_size % c.subblock_w:
        raise tt_fatal("N_block_size % subblock_w == 0", f"N_block_size ({c.N_block_size}) must be divisible by "
                       f"subblock_w ({c.subblock_w})", _WHERE)
    if grid.x < 2 or grid.y < 2:
        raise tt_fatal("compute_with_storage_grid_size.x >= 2 && .y >= 2",
                       f"compute_with_storage_grid_size must be >= 2x2 (got {grid.x}x{grid.y})", _WHERE)
    dev_grid = a.device().compute_with_storage_grid_size()
    if grid.x > dev_grid.x or grid.y > dev_grid.y:
        raise tt_fatal("compute_with_storage_grid_size <= device grid",
                       f"compute_with_storage_grid_size must be <= device grid size ({dev_grid.x}x{dev_grid.y})",
                       _WHERE)
    if c.subblock_h * c.subblock_w > n_dest_tiles:
        raise tt_fatal("subblock_h * subblock_w <= max_dest_volume", f"subblock_h * subblock_w must be <= "
                       f"max_dest_volume ({n_dest_tiles})", _WHERE)


def _run(op_name: str, a: Tensor, w: Tensor, bias, fused_activation, config, memory_config, dtype,
         compute_kernel_config, chunks: int = 1, dim: int = -1, addcmul=None) -> list[Tensor]:
    """The device operation; `addcmul` is (scalar, residual, gate) for the fused addcmul form."""
    # ttnn::prim::minimal_matmul's kernel defaults: HiFi2, approx off, fp32 accumulation, packer L1 accumulation
    n = resolve(op_name, compute_kernel_config, math_fidelity=MathFidelity.HiFi2, math_approx_mode=False,
                fp32_dest_acc_en=True, packer_l1_acc=True)
    _validate(op_name, a, w, bias, config, n.dest_tiles)
    if chunks < 1:
        raise tt_fatal("chunks >= 1", f"minimal_matmul requires chunks >= 1, got chunks={chunks}", _WHERE)
    if dim != -1:
        raise tt_fatal("dim == -1", f"minimal_matmul currently only supports dim=-1, got dim={dim}", _WHERE)
    N = w.shape[-1]
    if chunks > 1 and N % chunks:
        raise tt_fatal("N % chunks == 0", f"Output width N={N} must be divisible by chunks={chunks}", _WHERE)
    if chunks > 1 and (N // chunks) % 32:
        raise tt_fatal("(N / chunks) % TILE_WIDTH == 0", f"Output width per chunk N/chunks={N // chunks} must be "
                       f"tile-aligned (a multiple of 32)", _WHERE)
    emulate = numerics.emulating(compute_kernel_config)
    if fused_activation is not None:
        activations.resolve(op_name, fused_activation)  # a bad activation is refused before any math
    if addcmul is not None:
        _check_addcmul(a, w, addcmul[1], addcmul[2])
    y = _product(a._value_or_raise(), w._value_or_raise(), None if bias is None else bias._value_or_raise(),
                 fused_activation, op_name, n if emulate else None, emulate and n.math_approx_mode)
    if addcmul is not None:  # in the kernel, on the float32 product before the output's rounding
        scalar, residual, gate = addcmul
        y = residual._value_or_raise().float() + float(scalar) * y * gate._value_or_raise().float()
    out_dtype = output_dtype(op_name, dtype, a)
    fresh = pending_output_target(op_name) is None
    cfg = memory_config if memory_config is not None else a.memory_config()
    ins = [t for t in (a, w, bias, *(addcmul or ())[1:]) if t is not None]
    outs = [output(part.contiguous(), a, ins, op_name=op_name, dtype=out_dtype, layout=Layout.TILE,
                   memory_config=cfg) for part in torch.chunk(y, chunks, dim=-1)]
    program = minimal_matmul_program(a, w, bias, outs[0].dtype, config, fp32_dest_acc_en=n.fp32_dest_acc_en,
                                     addcmul=None if addcmul is None else addcmul[1:])
    device_work.launch_for(outs[0], fresh, a.device(), program)
    return outs


@register_op("ttnn.experimental.minimal_matmul", kind="matmul", golden=_golden)
def minimal_matmul(input_tensor: Tensor, weight_tensor: Tensor, bias_tensor: Tensor | None = None, *,
                   fused_activation=None, config: MinimalMatmulConfig | None = None, memory_config=None,
                   dtype: DataType | None = None, compute_kernel_config=None,
                   op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """input_tensor @ weight_tensor (+ bias_tensor), then fused_activation: one op, one output.

    Args:
        bias_tensor: [1.., N], added to every row before the activation.
        fused_activation: a ttnn.UnaryWithParam, a ttnn.UnaryOpType or a (UnaryOpType, param) pair.
        config: a ttnn.MinimalMatmulConfig (blocks in tiles and the core grid); None: 8x8x8 blocks on the
            device's grid.
        memory_config, dtype: the output's; input_tensor's by default.
        compute_kernel_config: the kernel's numerics (HiFi2 with fp32 accumulation by default).

    float32 operands overflow L1 with the default 8x8x8-tile blocks (1.9 MB of CBs a core, as in TT-NN): give them
    a config with smaller blocks.

    >>> x = ttnn.from_torch(torch.ones(32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> w = ttnn.from_torch(torch.full((64, 32), 0.5), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.full((1, 32), -40.0), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> y = ttnn.experimental.minimal_matmul(x, w, bias_tensor=b, fused_activation=ttnn.UnaryOpType.RELU)
    >>> y.shape, y.to_torch()[0, 0].item()
    (Shape([32, 32]), 0.0)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return _run(op_name, input_tensor, weight_tensor, bias_tensor, fused_activation, config, memory_config, dtype,
                compute_kernel_config)[0]


@register_op("ttnn.experimental.minimal_matmul_split", kind="matmul", golden=_split_golden)
def minimal_matmul_split(input_tensor: Tensor, weight_tensor: Tensor, *, chunks: int = 3, dim: int = -1,
                         bias_tensor: Tensor | None = None, fused_activation=None,
                         config: MinimalMatmulConfig | None = None, memory_config=None, dtype: DataType | None = None,
                         compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> list[Tensor]:
    """minimal_matmul's result cut into `chunks` equal slices of its last dim (only dim=-1), each its own output;
    N / chunks must be a multiple of 32. Other arguments as ttnn.experimental.minimal_matmul.

    >>> x = ttnn.from_torch(torch.ones(32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> w = ttnn.from_torch(torch.cat([torch.full((64, 32), float(i)) for i in range(3)], -1), ttnn.bfloat16,
    ...                     layout=ttnn.TILE, device=device)
    >>> q, k, v = ttnn.experimental.minimal_matmul_split(x, w, chunks=3)
    >>> q.shape, k.to_torch()[0, 0].item(), v.to_torch()[0, 0].item()
    (Shape([32, 32]), 64.0, 128.0)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return _run(op_name, input_tensor, weight_tensor, bias_tensor, fused_activation, config, memory_config, dtype,
                compute_kernel_config, int(chunks), int(dim))


@register_op("ttnn.experimental.dit_minimal_matmul_addcmul_fused", kind="matmul", golden=_addcmul_golden)
def dit_minimal_matmul_addcmul_fused(matmul_input_tensor: Tensor, matmul_weight_tensor: Tensor, scalar: float,
                                     addcmul_input_tensor1: Tensor, addcmul_input_tensor2: Tensor,
                                     bias_tensor: Tensor | None = None, *, config: MinimalMatmulConfig | None = None,
                                     memory_config=None, dtype: DataType | None = None, compute_kernel_config=None,
                                     op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """addcmul_input_tensor1 + scalar * (matmul_input_tensor @ matmul_weight_tensor + bias) * addcmul_input_tensor2,
    in minimal_matmul's one program (dit_minimal_matmul_addcmul_fused.cpp): the residual is [M, N] in the weight's
    dtype, the gate [1, N] (broadcast over rows) or [M, N]. Other arguments as ttnn.experimental.minimal_matmul.

    >>> x = ttnn.from_torch(torch.ones(32, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> w = ttnn.from_torch(torch.full((64, 32), 0.5), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> res = ttnn.from_torch(torch.ones(32, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> gate = ttnn.from_torch(torch.full((1, 32), 2.0), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.experimental.dit_minimal_matmul_addcmul_fused(x, w, 0.5, res, gate).to_torch()[3, 0].item()
    33.0
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return _run(op_name, matmul_input_tensor, matmul_weight_tensor, bias_tensor, None, config, memory_config, dtype,
                compute_kernel_config, addcmul=(scalar, addcmul_input_tensor1, addcmul_input_tensor2))[0]
