"""matmul and linear on the emulated matrix engine: math fidelity, destination format, fused activation.

    import device_sim as ttnn
    y = ttnn.linear(x, w, bias=b, activation="gelu",
                    compute_kernel_config=ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.LoFi))

matmul is one op: its activation (or its program_config's fused_activation) is applied in the
same op, before the single rounding to the output dtype. With a compute_kernel_config its values
come from device_sim.numerics (fidelity, destination format, approx mode; docs/numerics.md);
without one they are exact products summed in float32, the fast default (device_sim/matmul_kernel.py
picks torch's bfloat16 kernel or its float32 one; numerics.tt_nn_default_kernels() switches ops without a
config to TT-NN's default kernel). A program_config is validated as
TT-NN validates it; core_grid only changes which cores run it (and TT-NN's default fidelity).
"""

from __future__ import annotations

import math
import threading

import torch

from device_sim import activations, device_work, matmul_kernel, numerics
from device_sim.compute_config import MathFidelity, Numerics, resolve
from device_sim.ops import core
from device_sim.ops.common import broadcasts, check_tt_nn_only, device_inputs, output, values
from device_sim.ops.eltwise import add_, mul, mul_
from device_sim.program_config_checks import tt_fatal, validate_matmul, validate_matmul_sharding
from device_sim.program_configs import (
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig,
)
from device_sim.programs import matmul as matmul_programs
from device_sim.registry import OWN_NAME, pending_output_target, register_op
from device_sim.sharding import num_cores_to_corerangeset
from device_sim.tensor import Tensor
from device_sim.types import (
    DRAM_MEMORY_CONFIG,
    DataType,
    Layout,
    MemoryConfig,
    ShardOrientation,
    ShardSpec,
    TensorMemoryLayout,
)

_F32, _BF16 = DataType.FLOAT32, DataType.BFLOAT16
# Operands of 256 KiB to 16 MiB as float32 are widened into a buffer kept per thread and operand (_float32):
# 2 x 16 MiB at most stays allocated between calls. Below 256 KiB malloc reuses its heap without page faults,
# and the buffer's three torch calls cost more than .float()'s one (a 32x32 matmul: 17 -> 22 us).
_SCRATCH_MIN_BYTES, _SCRATCH_BYTES = 256 << 10, 16 << 20


class _Scratch(threading.local):
    a: torch.Tensor | None = None
    b: torch.Tensor | None = None


_scratch = _Scratch()


def _float32(v: torch.Tensor, which: str) -> torch.Tensor:
    """values() for the product, from an operand's torch values `v`: floats widened to float32 (integers kept),
    a bfloat16 operand's (the same exact conversion as .float()) into this thread's buffer for operand `which`,
    "a" or "b", when their size is in the range above.

    A fresh float32 copy of each operand cost ~1,000 page faults per 4 MiB once glibc had trimmed its heap
    (3.3 ms of system time in a 15 ms 1024^3 matmul against a 10.3 ms float32 torch.matmul; bench/README.md
    section 6). The buffer lives only until the product is computed: nothing returned refers to it.
    """
    n = v.numel()
    if v.dtype is not torch.bfloat16 or not _SCRATCH_MIN_BYTES <= n * 4 <= _SCRATCH_BYTES:
        return v.float() if v.is_floating_point() else v
    buf = getattr(_scratch, which)
    if buf is None or buf.numel() < n:
        buf = torch.empty(n, dtype=torch.float32)
        setattr(_scratch, which, buf)
    return buf[:n].view(v.shape).copy_(v)


_WHERE = "device_sim/ops/matmul.py"  # named in a TT_FATAL, where TT-NN names its C++ file


def _operands(a: torch.Tensor, b: torch.Tensor, transpose_a: bool, transpose_b: bool):
    return (a.transpose(-2, -1) if transpose_a else a), (b.transpose(-2, -1) if transpose_b else b)


def _golden_activation(op_name: str, activation, program_config):
    act = activations.resolve(op_name, activation) or activations.resolve(
        op_name, getattr(program_config, "fused_activation", None))
    return act or (lambda y, approx=False: y)


def _matmul_golden(a, b, *_, transpose_a=False, transpose_b=False, activation=None, program_config=None, **__):
    out = torch.matmul(*_operands(a.float(), b.float(), transpose_a, transpose_b))
    return _golden_activation("ttnn.matmul", activation, program_config)(out)


def _linear_golden(a, b, *_, bias=None, activation=None, transpose_a=False, transpose_b=False,
                   program_config=None, **__):
    out = torch.matmul(*_operands(a.float(), b.float(), transpose_a, transpose_b))
    out = out if bias is None else out + bias.float()
    return _golden_activation("ttnn.linear", activation, program_config)(out)


def _check_shapes(op_name: str, a: torch.Tensor, b: torch.Tensor) -> None:
    # TT-NN's MatmulDeviceOperation checks these with TT_FATAL (a RuntimeError) and these conditions and
    # words (matmul_device_operation.cpp, 0.81); the last line is device_sim's: the shapes and the fix.
    k_a = a.shape[-1] if a.dim() else None
    k_b = b.shape[-2 if b.dim() > 1 else -1] if b.dim() else None
    if k_a is None or k_a != k_b:
        raise tt_fatal("a_shape[-1] == b_shape[-2]",
                       f"The width of the first tensor must be equal to the height of the second tensor. "
                       f"Mismatch: width={k_a} height={k_b}\n{op_name}: shapes {list(a.shape)} and {list(b.shape)} "
                       f"cannot be multiplied; transpose or reshape one of them", where=_WHERE)
    if not broadcasts(a.shape[:-2], b.shape[:-2]):
        raise tt_fatal("a_shape[i] == b_shape[i]",
                       f"bmm (non-bcast matmul) expects input tensors of shapes BCMK*BCKN=BCMN or equivalent\n"
                       f"{op_name}: shapes {list(a.shape)} and {list(b.shape)} have batch dims that do not broadcast; "
                       f"make the second's batch dims equal the first's, or 1", where=_WHERE)


def _check_block_sharded_1d(b: Tensor, memory_config) -> None:
    """create_simple_matmul_program_config's refusal (matmul_program_config.cpp, issue #32306): a BLOCK_SHARDED output
    on one row or one column of cores (not a single core) with a batched B needs the 2D multicast program, which does
    not handle such a grid."""
    spec = memory_config.shard_spec if memory_config is not None and memory_config.is_sharded() else None
    if spec is None or memory_config.memory_layout != TensorMemoryLayout.BLOCK_SHARDED:
        return
    box = spec.grid.bounding_box()
    one_column, one_row = box.start.x == box.end.x, box.start.y == box.end.y
    if (one_column != one_row) and math.prod(b.padded_shape[:-2]) > 1:
        raise tt_fatal("!(block_sharded_on_1d_grid && b_is_batched)", "BLOCK_SHARDED output on a 1D grid (single row "
                       "or column of cores) is not supported when both input tensors are batched. Either use "
                       "HEIGHT_SHARDED/WIDTH_SHARDED explicitly, use a 2D core grid for BLOCK_SHARDED, or ensure the "
                       "second input tensor (B) has batch size 1. See GitHub issue #32306 for details.", where=_WHERE)


def kernel_numerics(op_name: str, in_a: Tensor, in_b: Tensor, out_dtype: DataType, compute_kernel_config,
                    program_config, core_grid) -> Numerics:
    """The numerics TT-NN's matmul runs with (create_matmul_attributes in matmul_device_operation.cpp).

    Fidelity HiFi2, or LoFi when a program config or core grid is given or both inputs are block
    floats, HiFi4 when both are float32; approx off; fp32 destination iff the output is float32;
    packer L1 accumulation otherwise. A given compute_kernel_config replaces all of these.
    """
    both_block = in_a.dtype.is_block_float and in_b.dtype.is_block_float
    fidelity = MathFidelity.HiFi2 if program_config is None and core_grid is None and not both_block \
        else MathFidelity.LoFi
    if in_a.dtype == _F32 and in_b.dtype == _F32:
        fidelity = MathFidelity.HiFi4
    fp32 = out_dtype == _F32
    return resolve(op_name, compute_kernel_config, math_fidelity=fidelity, math_approx_mode=False,
                   fp32_dest_acc_en=fp32, packer_l1_acc=not fp32)


def _run(op_name: str, input_tensor_a: Tensor, input_tensor_b: Tensor, bias, *, transpose_a, transpose_b,
         activation, memory_config, dtype, program_config, compute_kernel_config, core_grid) -> Tensor:
    for name, t in (("input_tensor_a", input_tensor_a), ("input_tensor_b", input_tensor_b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op_name}: {name} must be a ttnn tensor, got {type(t).__name__}; "
                            f"convert it with ttnn.from_torch(tensor, layout=ttnn.TILE, device=device)")
    ins = device_inputs(op_name, input_tensor_a, input_tensor_b, bias)
    out_dtype = DataType(dtype) if dtype is not None else input_tensor_a.dtype
    va, vb = input_tensor_a._value_or_raise(), input_tensor_b._value_or_raise()
    a, b = _operands(va, vb, transpose_a, transpose_b)  # views: the shapes and the checks before any widening
    _check_shapes(op_name, a, b)
    # Without a compute_kernel_config (and outside numerics.tt_nn_default_kernels()) the values are exact
    # float32 products, torch's matmul: the fast default, which skips working out the kernel's numerics.
    emulate = numerics.emulating(compute_kernel_config)
    n = kernel_numerics(op_name, input_tensor_a, input_tensor_b, out_dtype, compute_kernel_config, program_config,
                        core_grid) if emulate or program_config is not None else None
    fused = None
    if program_config is None:
        _check_block_sharded_1d(input_tensor_b, memory_config)
    if program_config is not None:
        dev = input_tensor_a.device()
        grid = (dev.config.grid_x, dev.config.grid_y) if dev is not None else None
        validate_matmul(program_config, tuple(a.shape), tuple(b.shape), dest_tiles=n.dest_tiles, device_grid=grid)
        validate_matmul_sharding(program_config, tuple(a.shape), tuple(b.shape), input_tensor_a.memory_config(),
                                 input_tensor_b.memory_config(), memory_config)
        fused = getattr(program_config, "fused_activation", None)
        if fused is not None and activation is not None:
            raise tt_fatal("!(activation && program_config.fused_activation)",
                           f"{op_name}: activation={activation!r} and program_config.fused_activation={fused!r} "
                           f"both ask for an activation; give one of them")
    act = activations.resolve(op_name, activation if activation is not None else fused)
    target = pending_output_target(op_name)
    y = None
    # bfloat16 in (a bias too), bfloat16 out, nothing between the sum and its rounding but the bias (no emulation,
    # activation or float32 output tensor): torch's bfloat16 kernel where it keeps the rule (matmul_kernel.py).
    if (not emulate and act is None and out_dtype is _BF16 and input_tensor_a.dtype is _BF16
            and input_tensor_b.dtype is _BF16 and (bias is None or bias.dtype is _BF16)
            and (target is None or target.dtype is _BF16)):
        y = matmul_kernel.bf16_product(va, vb, transpose_a, transpose_b,
                                       None if bias is None else bias._value_or_raise())
    biased = y is not None and bias is not None
    if y is None:
        a, b = _operands(_float32(va, "a"), _float32(vb, "b"), transpose_a, transpose_b)
        y = numerics.matmul(a, b, n) if emulate else torch.matmul(a, b)
    if bias is not None and not biased:
        bv = values(bias, op_name)
        if not broadcasts(y.shape, bv.shape):
            # TT-NN's bias checks (matmul_device_operation.cpp): TT_FATAL on the last dim, then on the batch.
            n_bias = bv.shape[-1] if bv.dim() else 1
            condition, words = ("bias_batch_size == 1", "Unsupported bias shape: batch size not equal to 1.")
            if n_bias not in (1, y.shape[-1]):
                condition, words = ("bias_shape[-1] >= b_shape[-1]",
                                    f"Unsupported bias shape: last dimension of bias, {n_bias}, not equal to or "
                                    f"greater than second input's last dimension, {y.shape[-1]}.")
            raise tt_fatal(condition, f"{words}\n{op_name}: bias shape {list(bv.shape)} does not broadcast to the "
                                      f"product's shape {list(y.shape)}; give a bias of shape [1, {y.shape[-1]}]",
                           where=_WHERE)
        if y.dtype is torch.float32 and bv.dtype is torch.float32 and bv.dim() <= y.dim() and all(
                d in (1, e) for d, e in zip(bv.shape[::-1], y.shape[::-1])):
            # y is this op's own fresh product: the same sums in place, without a second float32 result (a new
            # 4 MiB one cost ~1,000 page faults once glibc had trimmed its heap: 1024^3 linear 16.7 -> 13.9 ms)
            y.add_(bv)
        else:  # a bias that widens the result, or integer products
            y = y + bv
    if act is not None:
        y = act(y, emulate and n.math_approx_mode)
    fresh = target is None
    if isinstance(program_config, MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig) and target is None:
        memory_config = _dram_sharded_output(input_tensor_a, input_tensor_b, memory_config, program_config)
    out = output(y, input_tensor_a, ins, op_name=op_name, dtype=out_dtype, memory_config=memory_config)
    _launch(out, fresh, input_tensor_a, input_tensor_b, bias, out.dtype, program_config, n, (a.shape, b.shape))
    return out


def _dram_sharded_output(a: Tensor, b: Tensor, memory_config, cfg):
    """The output config of a DRAM-sharded matmul: TT-NN 0.81's compute_output_specs (matmul_device_operation.cpp)
    puts the output on the first ceil(M/per_core_M) * ceil(N/per_core_N) worker cores, row by row, in
    [per_core_M, per_core_N]-tile shards, whatever shard spec the given config has; never on the weight's DRAM
    banks (tt_transformers passes L1_WIDTH_SHARDED_MEMORY_CONFIG without a spec)."""
    if memory_config is None or not memory_config.is_sharded() or a.device() is None:
        return memory_config
    th = a.tile.tile_shape[0] if a.tile is not None else 32
    tw = b.tile.tile_shape[1] if b.tile is not None else 32
    pa, pb = a.padded_shape, b.padded_shape
    m_tiles, n_tiles = math.prod(pa[:-1]) // th, pb[-1] // tw
    n_cores = -(-m_tiles // cfg.per_core_M) * -(-n_tiles // cfg.per_core_N)
    cores = num_cores_to_corerangeset(n_cores, a.device().compute_with_storage_grid_size(), row_wise=True)
    spec = ShardSpec(cores, (cfg.per_core_M * th, cfg.per_core_N * tw), ShardOrientation.ROW_MAJOR)
    return MemoryConfig(memory_config.memory_layout, memory_config.buffer_type, spec)


def _launch(out: Tensor, fresh: bool, a: Tensor, b: Tensor, bias, out_dtype, program_config, n,
            shapes=None) -> None:
    """Launch the matmul program on a's device once the output exists (its L1 counts against the CBs)."""
    if a.device() is None:
        return
    program = matmul_programs.matmul_program(
        a, b, bias, out_dtype, program_config, shapes=shapes, out_sharded=out.is_sharded(),
        fp32_dest_acc_en=n.fp32_dest_acc_en if n is not None else None,
        packer_l1_acc=n.packer_l1_acc if n is not None else None)
    device_work.launch_for(out, fresh, a.device(), program)


@register_op("ttnn.matmul", kind="matmul", output_keyword="optional_output_tensor", golden=_matmul_golden)
def matmul(input_tensor_a: Tensor, input_tensor_b: Tensor, *, transpose_a: bool = False, transpose_b: bool = False,
           memory_config: MemoryConfig | None = None, dtype: DataType | None = None, program_config=None,
           activation=None, compute_kernel_config=None, core_grid=None,
           op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """a @ b with torch's batch broadcasting, then the fused activation; the output dtype defaults to a's.

    Args:
        activation: "relu", "gelu", "silu", ... or a ttnn.UnaryWithParam, applied in the kernel.
        program_config: a ttnn.Matmul*ProgramConfig; validated against the shapes and the grid.
        compute_kernel_config: a ttnn.WormholeComputeKernelConfig; its fidelity, destination format and
            approx mode set the values (docs/numerics.md). core_grid only picks the default fidelity.

    >>> a = ttnn.from_torch(torch.ones(32, 64), layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.full((64, 32), 0.5), layout=ttnn.TILE, device=device)
    >>> y = ttnn.matmul(a, b)
    >>> y.shape, y.to_torch()[0, 0].item()
    (Shape([32, 32]), 32.0)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return _run(op_name, input_tensor_a, input_tensor_b, None, transpose_a=transpose_a,
                transpose_b=transpose_b, activation=activation, memory_config=memory_config, dtype=dtype,
                program_config=program_config, compute_kernel_config=compute_kernel_config, core_grid=core_grid)


@register_op("ttnn.linear", kind="matmul", output_keyword="optional_output_tensor", golden=_linear_golden)
def linear(input_tensor_a: Tensor, input_tensor_b: Tensor, *, bias: Tensor | None = None,
           transpose_a: bool = False, transpose_b: bool = False, memory_config: MemoryConfig | None = None,
           dtype: DataType | None = None, program_config=None, activation=None, compute_kernel_config=None,
           core_grid=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """a @ b + bias, then the activation; other arguments as ttnn.matmul.

    b is [in, out] (ttnn.model_preprocessing.preprocess_linear_weight makes it from torch's
    [out, in]); bias is [1, out]. One op, as TT-NN's fused kernel: the bias is added to the
    float32 products in the destination and the activation follows it, so only the final value is
    rounded to `dtype`, into the one output buffer; the program reads the bias through its c_3 CB.

    >>> x = ttnn.from_torch(torch.ones(32, 64), layout=ttnn.TILE, device=device)
    >>> w = ttnn.from_torch(torch.full((64, 32), 0.5), layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.full((1, 32), -40.0), layout=ttnn.TILE, device=device)
    >>> y = ttnn.linear(x, w, bias=b, activation="relu")  # one op, as in TT-NN: -8 + relu
    >>> y.shape, y.to_torch()[0, 0].item()
    (Shape([32, 32]), 0.0)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"{op_name}: bias must be a ttnn tensor or None, got {type(bias).__name__}")
    return _run(op_name, input_tensor_a, input_tensor_b, bias, transpose_a=transpose_a,
                transpose_b=transpose_b, activation=activation, memory_config=memory_config, dtype=dtype,
                program_config=program_config, compute_kernel_config=compute_kernel_config, core_grid=core_grid)


# -- addmm: TT-NN's composite of matmul, multiply_ and add_ (matmul.cpp), whose ops a capture shows nested --------

_ADDMM_DTYPES = (DataType.BFLOAT16, DataType.FLOAT32, DataType.BFLOAT8_B)


def _addmm_golden(input_tensor, mat1_tensor, mat2_tensor, alpha=1.0, beta=1.0, *_, **__):
    return torch.addmm(input_tensor, mat1_tensor, mat2_tensor, alpha=alpha, beta=beta)  # TT-NN's golden


def _addmm_checks(input_tensor: Tensor, mat1: Tensor, mat2: Tensor, alpha: float, beta: float) -> None:
    """addmm_validate (matmul.cpp), in its words."""
    where = "device_sim/ops/matmul.py"
    if alpha == 0.0:
        raise tt_fatal("alpha != 0.0", "alpha parameter cannot be 0", where)
    if beta != 0.0:
        shape, s1, s2 = list(input_tensor.shape), list(mat1.shape), list(mat2.shape)
        if not (shape[0] == s1[0] and shape[1] == s2[1]):
            raise tt_fatal("input_shape[0] == mat1_shape[0] && input_shape[1] == mat2_shape[1]",
                           f"input_tensor must have shape matching one of result of mat1_tensor @ mat2_tensor\n"
                           f"ttnn.addmm: input_tensor is {shape}, mat1 @ mat2 is [{s1[0]}, {s2[1]}]", where)
        if input_tensor.dtype not in _ADDMM_DTYPES:
            raise tt_fatal("idtype == BFLOAT16 || idtype == FLOAT32 || idtype == BFLOAT8_B", "only ttnn.bfloat16, "
                           "ttnn.float32 and ttnn.bfloat8_b types are supported for input_tensor", where)
    for name, t in (("mat1_tensor", mat1), ("mat2_tensor", mat2)):
        if t.dtype not in _ADDMM_DTYPES:
            raise tt_fatal(f"{name}.dtype() in (BFLOAT16, FLOAT32, BFLOAT8_B)", f"only ttnn.bfloat16, ttnn.float32 and "
                           f"ttnn.bfloat8_b types are supported for {name}", where)


@register_op("ttnn.addmm", output_keyword="optional_output_tensor", golden=_addmm_golden)
def addmm(input_tensor: Tensor, mat1_tensor: Tensor, mat2_tensor: Tensor, *, alpha: float = 1.0, beta: float = 1.0,
          memory_config: MemoryConfig | None = None, dtype: DataType | None = None, program_config=None,
          compute_kernel_config=None, core_grid=None, output_tile=None,
          op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """beta * input_tensor + alpha * (mat1_tensor @ mat2_tensor), as TT-NN runs it: matmul (into DRAM unless
    memory_config says otherwise), then multiply_ by alpha unless it is 1, then add_ of input_tensor (times beta
    unless it is 1) unless beta is 0; optional_output_tensor= receives the result.

    >>> c = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=device)
    >>> a = ttnn.from_torch(torch.ones(32, 64), layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.ones(64, 32), layout=ttnn.TILE, device=device)
    >>> ttnn.addmm(c, a, b, alpha=0.5, beta=2.0).to_torch()[0, 0].item()
    34.0
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if output_tile is not None:
        raise tt_fatal("!output_tile.has_value()", "output_tile must not be provided", "device_sim/ops/matmul.py")
    _addmm_checks(input_tensor, mat1_tensor, mat2_tensor, float(alpha), float(beta))
    out = matmul(mat1_tensor, mat2_tensor, memory_config=memory_config if memory_config is not None
                 else DRAM_MEMORY_CONFIG, dtype=dtype, program_config=program_config,
                 compute_kernel_config=compute_kernel_config, core_grid=core_grid)
    if alpha != 1.0:
        mul_(out, float(alpha))
    if beta != 0.0:
        add_(out, mul(input_tensor, float(beta)) if beta != 1.0 else input_tensor)
    return out


# -- the outer product (tt-metal's binary_composite_op.cpp: outer) -----------------------------------------------------


def _sparse_products(a: torch.Tensor, b: torch.Tensor, sparsity: torch.Tensor, a_sparse: bool, b_sparse: bool):
    """compute_sparse_matmul_output_shape's output with the products whose sparsity entry is not 0 (zeros elsewhere:
    TT-NN's kernel skips those blocks and writes nothing there, which the tests never read)."""
    m, n = a.shape[-2], b.shape[-1]
    a_batch, b_batch = tuple(a.shape[:-2]), tuple(b.shape[:-2])
    aa, bb = a.float().reshape(-1, m, a.shape[-1]), b.float().reshape(-1, b.shape[-2], n)
    keep = sparsity.reshape(-1) != 0
    if a_sparse and b_sparse:  # [1, E, M, K] x [1, E, K, N], sparsity over E: [1, E, M, N]
        pairs, shape = [(i, i) for i in range(bb.shape[0])], (*b_batch, m, n)
    elif a_sparse:  # [A, E, M, K] x [1, E, K, N], sparsity over A x E: [A, E, M, N]
        pairs, shape = [(i, i % bb.shape[0]) for i in range(aa.shape[0])], (*a_batch, m, n)
    else:  # [A, B, M, K] x [1, E, K, N], sparsity over A x B x E: [A, B, 1, E, M, N]
        pairs = [(i, j) for i in range(aa.shape[0]) for j in range(bb.shape[0])]
        shape = (*a_batch, *b_batch, m, n)
    out = torch.zeros(len(pairs), m, n)
    for k, (i, j) in enumerate(pairs):
        if keep[k]:
            out[k] = aa[i] @ bb[j]
    return out.reshape(shape)


def _sparse_matmul_golden(input_tensor_a, input_tensor_b, *_, sparsity=None, is_input_a_sparse=False,
                          is_input_b_sparse=True, **__):
    return _sparse_products(input_tensor_a, input_tensor_b, sparsity, is_input_a_sparse, is_input_b_sparse)


def _sparse_checks(op_name: str, a: Tensor, b: Tensor, sparsity: Tensor, program_config, nnz, a_sparse: bool,
                   b_sparse: bool) -> tuple[int, int]:
    """SparseMatmulDeviceOperation's validate_on_program_cache_miss and its factory's TT_FATALs, in their order and
    words; (batchA, batchB) as the factory loops them."""
    pa, pb = a.padded_shape, b.padded_shape
    (th0, tw0), (th1, tw1) = a.tile.tile_shape, b.tile.tile_shape
    batch_a, batch_b = math.prod(pa[:-2]), math.prod(pb[:-2])
    batch = batch_b if a_sparse and b_sparse else batch_a if a_sparse else batch_a * batch_b
    checks = (
        (a_sparse or b_sparse, "is_input_a_sparse || is_input_b_sparse",
         "sparse_matmul needs is_input_a_sparse, is_input_b_sparse or both (the modes table has no False, False)"),
        (pa[-1] == pb[-2], "a_shape_padded[-1] == b_shape_padded[-2]",
         f"Dimension K (A.shape[-1] {pa[-1]}) and B.shape[-2] ({pb[-2]}) must match for A and B"),
        (pa[-2] % th0 == 0, "a_shape_padded[-2] % in0_tile.get_height() == 0",
         f"a_shape_padded[-2] (A's rows: {pa[-2]}) must be divisible by in0_tile.get_height() ({th0})"),
        (pa[-1] % tw0 == 0, "a_shape_padded[-1] % in0_tile.get_width() == 0",
         f"a_shape_padded[-1] (A's cols: {pa[-1]}) must be divisible by in0_tile.get_width() ({tw0})"),
        (pb[-2] % th1 == 0, "b_shape_padded[-2] % in1_tile.get_height() == 0",
         f"b_shape_padded[-2] (B's rows: {pb[-2]}) must be divisible by in1_tile.get_height() ({th1})"),
        (pb[-1] % tw1 == 0, "b_shape_padded[-1] % in1_tile.get_width() == 0",
         f"b_shape_padded[-1] (B's cols: {pb[-1]}) must be divisible by in1_tile_shape[1] ({tw1})"),
        ((nnz if nnz is not None else 1) > 0, "nnz.value_or(1) > 0", f"nnz ({nnz}) must be greater than 0"),
        (math.prod(sparsity.shape) == batch, "sparsity.logical_volume() == batch_length",
         f"sparsity.logical_volume() ({math.prod(sparsity.shape)}) must be equal to the product of all batch "
         f"dimensions ({batch})"),
        ((nnz if nnz is not None else 1) <= batch, "nnz.value_or(1) <= batch_length",
         f"nnz ({nnz}) must be less than or equal to the length of all batch dimensions ({batch})"),
        (isinstance(program_config, MatmulMultiCoreReuseMultiCast1DProgramConfig),
         "MatmulMultiCoreReuseMultiCast1DProgramConfig", f"sparse_matmul runs the 1D multicast program config only, "
         f"got {type(program_config).__name__}"),
        (getattr(program_config, "mcast_in0", False), "mcast_in0", "Only mcast_in0 is supported for sparse matmul"),
        ((pa[-1] // tw0) % program_config.in0_block_w == 0, "Kt % in0_block_w == 0",
         f"Kt ({pa[-1] // tw0}) must be divisible by in0_block_w ({program_config.in0_block_w})"),
    )
    for ok, condition, message in checks:
        if not ok:
            raise tt_fatal(condition, f"{message}\n{op_name}", where=_WHERE)
    return (1 if a_sparse and b_sparse else batch_a // batch_b if a_sparse else batch_a), batch_b


@register_op("ttnn.sparse_matmul", kind="matmul", output_keyword="optional_output_tensor", golden=_sparse_matmul_golden)
def sparse_matmul(input_tensor_a: Tensor, input_tensor_b: Tensor, *, sparsity: Tensor, program_config, nnz=None,
                  is_input_a_sparse: bool = False, is_input_b_sparse: bool = True,
                  memory_config: MemoryConfig | None = None, dtype: DataType | None = None,
                  compute_kernel_config=None, core_grid=None, output_tile=None, op_name: str = OWN_NAME,
                  **tt_nn_only) -> Tensor:
    """The matmuls of a mixture of experts, only those whose `sparsity` entry is not 0 (matmul.cpp's sparse_matmul):
    b sparse, a [A, B, M, K] by b [1, E, K, N] gives [A, B, 1, E, M, N]; a sparse, a [A, E, M, K] gives [A, E, M, N];
    both, a [1, E, M, K] gives [1, E, M, N]. The skipped blocks are not computed (zeros here); `nnz` (how many are
    not 0) is checked, not needed. Values are float32 sums rounded to the output dtype, as ttnn.matmul's without a
    compute_kernel_config; SparseMatmulMultiCoreReuseMcast1DProgramFactory runs it.

    >>> cfg = ttnn.MatmulMultiCoreReuseMultiCast1DProgramConfig(compute_with_storage_grid_size=(1, 2),
    ...     in0_block_w=1, out_subblock_h=1, out_subblock_w=1, out_block_h=1, out_block_w=1, per_core_M=1,
    ...     per_core_N=1, fuse_batch=False, fused_activation=None, mcast_in0=True)
    >>> a = ttnn.from_torch(torch.ones(1, 2, 32, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.ones(1, 2, 32, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> s = ttnn.from_torch(torch.tensor([[[[1.0, 0.0]]]]), ttnn.bfloat16, device=device)
    >>> y = ttnn.sparse_matmul(a, b, sparsity=s, program_config=cfg, is_input_a_sparse=True)
    >>> y.shape, y.to_torch()[0, :, 0, 0]
    (Shape([1, 2, 32, 32]), tensor([32.,  0.], dtype=torch.bfloat16))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor_a, input_tensor_b, sparsity)
    batch_a, batch_b = _sparse_checks(op_name, input_tensor_a, input_tensor_b, sparsity, program_config, nnz,
                                      is_input_a_sparse, is_input_b_sparse)
    out_dtype = DataType(dtype) if dtype is not None else input_tensor_a.dtype
    # get_output_tile: the given output_tile, else in0's height by in1's width; the output takes a's tile here
    tile = output_tile.tile_shape if output_tile is not None else (input_tensor_a.tile.tile_shape[0],
                                                                   input_tensor_b.tile.tile_shape[1])
    if tuple(tile) != tuple(input_tensor_a.tile.tile_shape):
        raise NotImplementedError(f"{op_name}: an output tile {list(tile)} other than input_tensor_a's "
                                  f"{list(input_tensor_a.tile.tile_shape)} is not emulated; give tiles of one shape")
    y = _sparse_products(values(input_tensor_a, op_name), values(input_tensor_b, op_name),
                         values(sparsity, op_name), is_input_a_sparse, is_input_b_sparse)
    fresh = pending_output_target(op_name) is None
    out = output(y, input_tensor_a, ins, op_name=op_name, dtype=out_dtype, memory_config=memory_config)
    n = kernel_numerics(op_name, input_tensor_a, input_tensor_b, out.dtype, compute_kernel_config, program_config,
                        core_grid)
    device_work.launch_for(out, fresh, input_tensor_a.device(), matmul_programs.sparse_matmul_program(
        input_tensor_a, input_tensor_b, sparsity, out, program_config, batch_a=batch_a, batch_b=batch_b,
        fp32_dest_acc_en=n.fp32_dest_acc_en, packer_l1_acc=n.packer_l1_acc))
    return out


def _outer_golden(input_a, input_b, *_, **__):
    return torch.outer(input_a.reshape(-1).float(), input_b.reshape(-1).float()).reshape(1, 1, input_a.numel(), -1)


@register_op("ttnn.outer", kind="matmul", golden=_outer_golden)
def outer(input_a: Tensor, input_b: Tensor, *, memory_config: MemoryConfig | None = None,
          op_name: str = OWN_NAME) -> Tensor:
    """The outer product of two 4-D tensors with at most one dim above 1 each: a [1, 1, M, N] tensor. TT-NN's
    composite (binary_composite_op.cpp): a reshaped to [1, 1, M, 1] and b to [1, 1, 1, N] unless already so, both
    tilized, then ttnn.matmul (memory_config is taken and, as in TT-NN, not used).

    >>> a = ttnn.from_torch(torch.tensor([[[[1.0], [2.0]]]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> b = ttnn.from_torch(torch.tensor([[[[3.0, 4.0, 5.0]]]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.outer(a, b).to_torch()[0, 0]
    tensor([[ 3.,  4.,  5.],
            [ 6.,  8., 10.]], dtype=torch.bfloat16)
    """
    sa, sb = list(input_a.shape), list(input_b.shape)
    for s in (sa, sb):
        if len(s) != 4 or s.count(1) < 3:
            raise tt_fatal("num_ones(shape) >= 3", f"{op_name}: 3 dimensions are required to be 1 for use with outer "
                           f"product (got shapes {sa} and {sb})", where="device_sim/ops/matmul.py")
    a = input_a if sa[:2] == [1, 1] and sa[3] == 1 else core.reshape(input_a, [1, 1, math.prod(sa), 1])
    b = input_b if sb[:3] == [1, 1, 1] else core.reshape(input_b, [1, 1, 1, math.prod(sb)])
    a = core.to_layout(a, Layout.TILE) if a.layout != Layout.TILE else a
    b = core.to_layout(b, Layout.TILE) if b.layout != Layout.TILE else b
    return matmul(a, b)
