"""The per-row ops of a transformer layer: softmax, layer_norm, rms_norm, and embedding lookup (and its backward)."""

from __future__ import annotations

import enum

import torch
import torch.nn.functional as F

from device_sim import activations, device_work, dtypes, numerics
from device_sim.compute_config import MathFidelity, resolve
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, values
from device_sim.ops.core import from_torch
from device_sim.program_config_checks import tt_fatal, validate_layer_norm
from device_sim.program_configs import LayerNormShardedMultiCoreProgramConfig
from device_sim.programs import normalization
from device_sim.programs.embedding import embedding_backward_program, embedding_program
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor
from device_sim.types import BufferType, DataType, Layout, MemoryConfig, ShardOrientation, ShardSpec, TensorMemoryLayout


def _softmax_golden(t, dim=-1, *_, **__):
    return torch.softmax(t.float(), dim)


def _softmax_on_the_engine(x: torch.Tensor, dim: int, config) -> torch.Tensor:
    """softmax as TT-NN's kernel computes it under `config` (docs/numerics.md).

    exp and the reciprocal of the row sum on the SFPU (approximate with math_approx_mode), the
    exps held in the destination format, the row sum on the matrix engine at the config's
    fidelity (TT-NN's default HiFi4). The row max is subtracted first, as numeric_stable=True does;
    without it an approximate exp overflows sooner than torch's.
    """
    n = resolve("ttnn.softmax", config, math_fidelity=MathFidelity.HiFi4, math_approx_mode=True,
                fp32_dest_acc_en=False)
    x = x.movedim(dim, -1)
    shifted = x - x.amax(-1, keepdim=True)
    e = numerics.exp_approx(shifted) if n.math_approx_mode else torch.exp(shifted)
    e = e if n.fp32_dest_acc_en else numerics.to_bf16(e)
    total = numerics.reduce_sum(e, (e.dim() - 1,), True, n, mean=False)
    r = numerics.reciprocal_approx(total) if n.math_approx_mode else torch.reciprocal(total)
    return (e * r).movedim(-1, dim)


@register_op("ttnn.softmax", kind="softmax", golden=_softmax_golden)
def softmax(input_tensor: Tensor, dim: int = -1, *, memory_config: MemoryConfig | None = None,
            compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """softmax over `dim`; with a compute_kernel_config, as TT-NN's kernel computes it (approx exp and
    reciprocal with math_approx_mode, the row sum at the config's fidelity and destination format).

    >>> x = ttnn.from_torch(torch.tensor([[0.0, 0.0, 0.0, 0.0]]), layout=ttnn.TILE, device=device)
    >>> ttnn.softmax(x, dim=-1).to_torch()
    tensor([[0.2500, 0.2500, 0.2500, 0.2500]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor)
    x = values(input_tensor)
    emulate = numerics.emulating(compute_kernel_config)
    y = _softmax_on_the_engine(x.float(), dim, compute_kernel_config) if emulate else _softmax_golden(x, dim)
    out = output(y, input_tensor, ins, op_name=op_name, memory_config=memory_config)
    if input_tensor.device() is not None and dim in (-1, x.dim() - 1) and not input_tensor.is_sharded():
        # The last-dim, interleaved case: one SoftmaxDeviceOperation (other dims and sharded inputs run
        # programs device_sim does not model yet, so they launch none).
        program = normalization.softmax_program(
            input_tensor, out.dtype, fp32_dest_acc_en=bool(getattr(compute_kernel_config, "fp32_dest_acc_en", False)),
            numeric_stable=tt_nn_only.get("numeric_stable", True))
        # compute_program_hash's fields beyond the CBs: dim, the input's shape and memory config, the output's
        device_work.launch_for(out, True, input_tensor.device(), program,  # softmax takes no output_tensor
                               (op_name, dim, tuple(x.shape), input_tensor.memory_config(), out.memory_config()))
    return out


def _row(op_name: str, name: str, w, width: int):
    """A weight or bias as a [width] row; TT-NN passes them as [width], [1, width] or padded to [k, 32]."""
    if w is None:
        return None
    padded = -(-width // 32) * 32
    if w.dim() >= 2 and w.shape[-2] == 32 and w.shape[-1] in (width, padded) and w.numel() == 32 * w.shape[-1]:
        # A TILE gamma one tile high ([1, 1, 32, W], tt-metal's pad_weight; or zero-padded to the input's padded
        # width, as pad_by_zero makes it: [1, 1, 32, 64] for a 42-wide input): the kernel reads each tile's first
        # row (layernorm_device_operation.cpp checks padded_shape()[-2] == tile_height) up to the input's width.
        w = w[..., 0, :width]
    if w.numel() != width:
        raise ValueError(
            f"{op_name}: {name} has shape {list(w.shape)} ({w.numel()} values) but the input's last dim is "
            f"{width}; give one value per element of the last dim"
        )
    return w.reshape(width).float()


def _layer_norm_golden(t, *_, weight=None, bias=None, epsilon=1e-12, residual_input_tensor=None, **__):
    x = t.float() if residual_input_tensor is None else t.float() + residual_input_tensor.float()
    n = x.shape[-1]
    return F.layer_norm(x, (n,), _row("layer_norm", "weight", weight, n), _row("layer_norm", "bias", bias, n),
                        epsilon)


def _rms_norm_golden(t, weight=None, *_, bias=None, epsilon=1e-12, residual_input_tensor=None, **__):
    """As TT-NN's golden (ttnn/operations/normalization.py): weight may come second, positionally (tt-metal's
    tests call golden(x, w)); the normalised values are rounded to a bfloat16 / float16 weight's dtype before
    the weight multiplies them."""
    x = t.float() if residual_input_tensor is None else t.float() + residual_input_tensor.float()
    n = x.shape[-1]
    y = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + epsilon)
    w, b = _row("rms_norm", "weight", weight, n), _row("rms_norm", "bias", bias, n)
    if w is not None:
        dt = weight.dtype if weight.dtype in (torch.float16, torch.bfloat16) else torch.float32
        y = y.to(dt) * w.to(dt)  # in the weight's dtype, as TT-NN's golden returns it
    return y.float() + b if b is not None else y


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_NORM_EXAMPLE = """

    >>> x = ttnn.from_torch(torch.tensor([[1.0, 2.0, 4.0, 8.0]]), layout=ttnn.TILE, device=device)
    >>> expected = {op}.golden_function(x.to_torch(), epsilon=1e-5)
    >>> torch.allclose({op}(x, epsilon=1e-5).to_torch(), expected, atol=1e-5)
    True
"""


def _norm(name: str, golden, *, rms: bool):
    # rms: RMS norm (no mean taken off; TT-NN's rms_norm), else layer norm
    def op(input_tensor: Tensor, *, epsilon: float = 1e-12, weight: Tensor | None = None,
           bias: Tensor | None = None, residual_input_tensor: Tensor | None = None,
           memory_config: MemoryConfig | None = None, program_config=None, compute_kernel_config=None,
           recip_tensor: Tensor | None = None, **tt_nn_only) -> Tensor:
        # recip_tensor: the Welford kernel's table of 1/1 .. 1/W (create_layer_norm_reciprocals), read on the
        # device; device_sim computes the statistics in float32 without it. Only layer_norm takes it (TT-NN's
        # layernorm_nanobind.cpp).
        op_name = f"ttnn.{name}"
        if recip_tensor is not None and rms:
            raise TypeError(f"{op_name}() got an unexpected keyword argument 'recip_tensor' (ttnn.layer_norm takes it)")
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        if program_config is not None:  # checked as TT-NN checks it; it changes where, not what, is computed
            validate_layer_norm(program_config, op_name, tuple(input_tensor.padded_shape), input_tensor.memory_config(),
                                memory_config, residual_input_tensor.memory_config() if residual_input_tensor else None)
        ins = device_inputs(op_name, input_tensor, weight, bias, residual_input_tensor)
        device_inputs(op_name, input_tensor, recip_tensor)
        if residual_input_tensor is not None and residual_input_tensor.shape != input_tensor.shape:
            raise ValueError(f"{op_name}: residual_input_tensor has shape {residual_input_tensor.shape}, the input "
                             f"{input_tensor.shape}; they are added element by element and must match")
        return _normalized(name, golden, rms, op_name, ins, input_tensor, epsilon, weight, bias,
                           residual_input_tensor, memory_config, program_config, compute_kernel_config)

    op.__doc__ = (f"{name} over the last dim: (input + residual_input_tensor, if given), normalized, "
                  f"times weight plus bias; with a compute_kernel_config, as TT-NN's kernel computes it."
                  + _NORM_EXAMPLE.format(op=f"ttnn.{name}"))
    return register_op(f"ttnn.{name}", kind="norm", golden=golden)(op)


def _normalized(name: str, golden, rms: bool, op_name: str, ins, input_tensor: Tensor, epsilon: float, weight, bias,
                residual, memory_config, program_config, compute_kernel_config, activation=None) -> Tensor:
    """A norm's output and its LayerNormDeviceOperation: TT-NN's kernel's numerics under a compute config, else the
    golden; `activation` (f(x, approx)) applied to the result in the same program (the kernel's fused unary)."""
    v = lambda t: values(t, op_name) if t is not None else None  # noqa: E731
    if numerics.emulating(compute_kernel_config):
        # The sharded (non-Welford) factory splits each row's statistics across the cores holding its width
        sharded = isinstance(program_config, LayerNormShardedMultiCoreProgramConfig) and input_tensor.is_sharded()
        block_w = program_config.block_w * 32 if sharded and not program_config.use_welford else None
        r = _norm_on_the_engine(name, rms, v(input_tensor), v(weight), v(bias), epsilon, v(residual),
                                compute_kernel_config, block_w=block_w)
    else:
        r = golden(v(input_tensor), weight=v(weight), bias=v(bias), epsilon=epsilon, residual_input_tensor=v(residual))
    if activation is not None:
        r = activation(r.float(), True)  # dit_rms_norm_unary_fused.cpp: math_approx_mode on
    if memory_config is not None and isinstance(program_config, LayerNormShardedMultiCoreProgramConfig) \
            and input_tensor.is_sharded():
        # LayerNormDeviceOperation::compute_output_specs: inplace gives the input's spec; an output config without a
        # shard spec takes the input's (device_sim derived one of its own: 8 cores of 1015808 B for a 992-wide input).
        # inplace still writes a fresh buffer here, where TT-NN's create_output_tensors returns the input itself.
        spec = input_tensor.memory_config().shard_spec
        memory_config = input_tensor.memory_config() if program_config.inplace else \
            MemoryConfig(memory_config.memory_layout, memory_config.buffer_type, memory_config.shard_spec or spec)
    out = output(r, input_tensor, ins, op_name=op_name, memory_config=memory_config)
    if input_tensor.device() is not None and input_tensor.layout == Layout.TILE:
        _launch_norm(rms, out, input_tensor, weight, bias, residual, program_config, compute_kernel_config)
    return out


def _launch_norm(rms: bool, out: Tensor, x: Tensor, weight, bias, residual, program_config, config) -> None:
    """The op's LayerNormDeviceOperation (device_sim.programs.normalization): the sharded factory for a
    sharded input with its sharded program config, else the interleaved one (an interleaved input)."""
    kw = dict(rms=rms, gamma=weight, beta=bias, residual=residual,
              fp32_dest_acc_en=bool(getattr(config, "fp32_dest_acc_en", False)))
    if x.is_sharded():
        if not isinstance(program_config, LayerNormShardedMultiCoreProgramConfig) or not out.is_sharded():
            return  # validate_layer_norm names what a sharded input needs; other mixes run no modelled program
        program = normalization.sharded_layer_norm_program(x, out.dtype, program_config, **kw)
    else:
        program = normalization.layer_norm_program(x, out.dtype, **kw)
    device_work.launch_for(out, True, x.device(), program)  # layer_norm takes no output_tensor


def _norm_on_the_engine(name: str, rms: bool, x, weight, bias, epsilon: float, residual, config, *,
                        block_w: int | None = None) -> torch.Tensor:
    """layer_norm / rms_norm as TT-NN's kernel computes it under `config` (docs/numerics.md).

    The row statistics are means on the matrix engine (input in srcA, 1/N in srcB) at the config's
    fidelity (TT-NN's default HiFi4), accumulated in the destination format; the centred values and
    squares are held in that format too (bfloat16 unless fp32_dest_acc_en). 1/sqrt stays precise.
    `block_w`: the values a core holds of each row, for the sharded program's two-stage mean (_split_mean).
    """
    n = resolve(f"ttnn.{name}", config, math_fidelity=MathFidelity.HiFi4, math_approx_mode=True,
                fp32_dest_acc_en=False)
    held = (lambda t: t) if n.fp32_dest_acc_en else numerics.to_bf16  # noqa: E731
    last = (x.dim() - 1,)

    def mean(t):
        if block_w is None or block_w >= t.shape[-1]:
            return numerics.reduce_sum(t, last, True, n, mean=True)
        return _split_mean(t, block_w, n, held)

    x = x.float() if residual is None else held(x.float() + residual.float())
    xc = x if rms else held(x - mean(x))
    var = mean(held(xc * xc))
    y = held(xc * torch.rsqrt(var + epsilon))
    width = x.shape[-1]
    w, b = _row(name, "weight", weight, width), _row(name, "bias", bias, width)
    y = y * w if w is not None else y
    return y + b if b is not None else y


def _split_mean(t: torch.Tensor, block_w: int, n, held) -> torch.Tensor:
    """A row mean as the sharded layernorm kernel (layernorm_sharded.cpp) takes it: each core reduces its block_w
    values with the scaler 1/block_w and packs that partial in the intermediate format; the gathering core then adds
    the partials one reduce_tile at a time, each times 1/num_blocks, in the destination register (the scalers as
    bfloat16: layernorm_op_multi_core_sharded.cpp's winv / cinv). A short last block keeps 1/block_w, as the kernel
    skips only its padding tiles. One sequential bfloat16 sum instead stops growing once the total is 2**8 of its
    16-value steps (bfloat16's 8-bit mantissa): over 8192 values the variance came out 0.252 for 0.327, a Frobenius
    error of 0.137 where TT-NN's test allows 0.016 (0.0065 split). Not modelled: the two-stage gather's
    (use_two_stage_reduce) one more bfloat16 rounding of each group of partials."""
    last = (t.dim() - 1,)
    winv, cinv = (numerics.to_bf16(torch.tensor(1.0 / k)).item() for k in (block_w, -(-t.shape[-1] // block_w)))
    total = None
    for block in t.split(block_w, -1):
        partial = held(numerics.reduce_sum(block, last, True, n, mean=False, scaler=winv))
        step = numerics.reduce_sum(partial, last, True, n, mean=False, scaler=cinv)
        total = step if total is None else held(total + step)
    return total


layer_norm = _norm("layer_norm", _layer_norm_golden, rms=False)
rms_norm = _norm("rms_norm", _rms_norm_golden, rms=True)


def _dit_rms_norm_golden(t, *_, epsilon=1e-5, weight=None, bias=None, residual_input_tensor=None, activation=None,
                         **__):
    y = _rms_norm_golden(t, weight=weight, bias=bias, epsilon=epsilon, residual_input_tensor=residual_input_tensor)
    f = activations.resolve("ttnn.experimental.dit_rms_norm_unary_fused", activation)
    return f(y.float(), True) if f is not None else y


@register_op("ttnn.experimental.dit_rms_norm_unary_fused", kind="norm", golden=_dit_rms_norm_golden)
def dit_rms_norm_unary_fused(input_tensor: Tensor, *, epsilon: float = 1e-5, weight: Tensor | None = None,
                             bias: Tensor | None = None, residual_input_tensor: Tensor | None = None,
                             memory_config: MemoryConfig | None = None, program_config=None,
                             compute_kernel_config=None, activation=None, op_name: str = OWN_NAME) -> Tensor:
    """rms_norm with a unary activation (a name like "silu", a ttnn.UnaryOpType or a ttnn.UnaryWithParam) applied in
    the same LayerNormDeviceOperation (dit_rms_norm_unary_fused.cpp: prim::layer_norm, RMSNORM, with the activation),
    in the input's layout and memory config unless one is given.

    >>> x = ttnn.from_torch(torch.tensor([[1.0, -2.0, 4.0, -8.0]]), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.experimental.dit_rms_norm_unary_fused(x, activation="relu").to_torch()
    tensor([[0.2168, 0.0000, 0.8672, 0.0000]], dtype=torch.bfloat16)
    """
    if len(input_tensor.shape) == 0:
        raise tt_fatal("rank > 0", f"{op_name}: Input tensor must have rank > 0 and logical volume >= 0",
                       where="device_sim/ops/normalization.py")
    if program_config is not None:
        validate_layer_norm(program_config, op_name, tuple(input_tensor.padded_shape), input_tensor.memory_config(),
                            memory_config, residual_input_tensor.memory_config() if residual_input_tensor else None)
    ins = device_inputs(op_name, input_tensor, weight, bias, residual_input_tensor)
    return _normalized("rms_norm", _rms_norm_golden, True, op_name, ins, input_tensor, epsilon, weight, bias,
                       residual_input_tensor, memory_config, program_config, compute_kernel_config,
                       activations.resolve(op_name, activation))


def _embedding_golden(input_ids, weight, *_, **__):
    return F.embedding(input_ids.long(), weight.reshape(-1, weight.shape[-1]).float())


class EmbeddingsType(enum.IntEnum):
    """How TT-NN's embedding kernel fetches rows; the values are the same for all three."""
    GENERIC = 0
    PADDED = 1  # the padding_idx row is served from a cached copy (given padding_idx, TT-NN picks this)
    BINARY = 2  # a two-row table, both rows cached


@register_op("ttnn.embedding", kind="embedding", golden=_embedding_golden)
def embedding(input_tensor: Tensor, weight: Tensor, *, padding_idx: int | None = None,
              layout: Layout = Layout.ROW_MAJOR, embeddings_type: EmbeddingsType = EmbeddingsType.GENERIC,
              dtype: DataType | None = None, memory_config: MemoryConfig | None = None,
              op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Rows of `weight` ([vocab, hidden]) picked by the integer ids; output [*ids.shape, hidden].

    padding_idx and embeddings_type choose how TT-NN's kernel reads rows (a padding id still gets
    its row, as in torch's forward); BINARY needs a two-row table.

    >>> ids = ttnn.from_torch(torch.tensor([[2, 0]]), dtype=ttnn.uint32, device=device)
    >>> w = ttnn.from_torch(torch.arange(12.0).reshape(3, 4), dtype=ttnn.bfloat16, device=device)
    >>> ttnn.embedding(ids, w).to_torch()
    tensor([[[ 8.,  9., 10., 11.],
             [ 0.,  1.,  2.,  3.]]], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    rows = weight.shape[0] if weight.rank == 2 else None
    if EmbeddingsType(embeddings_type) == EmbeddingsType.BINARY and rows not in (None, 2):
        raise ValueError(f"{op_name}: embeddings_type=BINARY takes a two-row weight, got {rows} rows")
    ins = device_inputs(op_name, input_tensor, weight)
    ids, w = values(input_tensor, op_name), values(weight, op_name)
    if ids.is_floating_point():
        raise TypeError(f"{op_name}: ids are {input_tensor.dtype!r}; make them with dtype=ttnn.uint32")
    vocab = w.reshape(-1, w.shape[-1]).shape[0]
    if padding_idx is not None and not 0 <= padding_idx < vocab:
        raise IndexError(f"{op_name}: padding_idx {padding_idx} is outside the table's {vocab} rows")
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        bad = int(ids.max()) if int(ids.max()) >= vocab else int(ids.min())
        raise IndexError(f"{op_name}: id {bad} is outside the table's {vocab} rows (0..{vocab - 1})")
    out = output(_embedding_golden(ids, w), weight, ins, op_name=op_name, dtype=dtype, layout=layout,
                 memory_config=memory_config)
    if input_tensor.device() is not None and not out.is_sharded():  # a sharded output's factory is not modelled
        kind = EmbeddingsType(embeddings_type)
        padded = kind == EmbeddingsType.PADDED or padding_idx is not None  # TT-NN picks PADDED for a padding_idx
        device_work.launch_after(out, True, input_tensor, embedding_program(
            input_tensor, weight, out.dtype, out.layout, padded=padded, binary=kind == EmbeddingsType.BINARY))
    return out



def _embedding_bw_golden(input_tensor, weight, output_gradient_tensor, *_, **__):
    """torch's embedding weight gradient: each id's gradient row summed into its table row; [1, 1, rows, hidden]."""
    rows, g = weight.shape[-2], output_gradient_tensor.reshape(-1, output_gradient_tensor.shape[-1]).float()
    return torch.zeros(rows, g.shape[-1]).index_add_(0, input_tensor.reshape(-1).long(), g).reshape(1, 1, rows, -1)


def _embedding_bw_kernel(ids: torch.Tensor, grad: torch.Tensor, rows: int, dtype: DataType) -> torch.Tensor:
    """The weight gradient as TT-NN's kernel sums it: 32 ids (one gradient tile row) at a time, the rows they hit
    read back from the output, their gradient rows added on the SFPU (reshuffle_rows), packed through the 16-bit
    destination into the output's format before the next 32. bfloat8_b's shared exponents are 16 values of one row,
    so rounding only the rows hit is the tile's rounding."""
    out, g = torch.zeros(rows, grad.shape[-1]), grad.float()
    for start in range(0, ids.numel(), _EMBEDDING_BW_BLOCK):
        hit, where = ids[start:start + _EMBEDDING_BW_BLOCK].unique(return_inverse=True)
        summed = torch.zeros(len(hit), g.shape[-1]).index_add_(0, where, g[start:start + _EMBEDDING_BW_BLOCK])
        out[hit] = dtypes.to_device_values(numerics.to_bf16(out[hit] + summed), dtype).float()
    return out.reshape(1, 1, rows, -1)


_EMBEDDING_BW_BLOCK = 32  # ids a pass: the reader's INPUT_SIZE, one tile row of the gradient


@register_op("ttnn.embedding_bw", kind="embedding", golden=_embedding_bw_golden, output_keyword="output_tensor")
def embedding_bw(input_tensor: Tensor, weight_tensor: Tensor, output_gradient_tensor: Tensor, *,
                 dtype: DataType | None = None, memory_config: MemoryConfig | None = None,
                 op_name: str = OWN_NAME) -> Tensor:
    """The gradient of ttnn.embedding's table: ids [batch, seq] (ROW_MAJOR, uint32 or bfloat16), the output's
    gradient [1, 1, batch * seq, hidden] (TILE, bfloat16 or bfloat8_b, as `dtype`); [1, 1, rows, hidden] with
    `weight_tensor`'s rows (only its shape is read), summed 32 ids at a time as the kernel sums them. The output takes
    the gradient's dtype and memory config unless told. EmbeddingBackwardDeviceOperation's TT_FATALs.

    >>> ids = ttnn.from_torch(torch.tensor([[1] * 16 + [2] * 16]), dtype=ttnn.uint32, device=device)
    >>> w = ttnn.from_torch(torch.zeros(4, 32), layout=ttnn.TILE, device=device)
    >>> g = ttnn.from_torch(torch.ones(1, 1, 32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> ttnn.embedding_bw(ids, w, g).to_torch()[0, 0, :, 0]
    tensor([ 0., 16., 16.,  0.], dtype=torch.bfloat16)
    """
    ins = device_inputs(op_name, input_tensor, weight_tensor, output_gradient_tensor)
    grad, shape = output_gradient_tensor, tuple(input_tensor.shape)
    out_dtype = DataType(dtype) if dtype is not None else grad.dtype
    ids_shape = (shape[0], 1, 1, shape[-1]) if shape else ()  # embedding_bw reshapes the ids to [batch, 1, 1, seq]
    g_shape = tuple(grad.padded_shape)
    interleaved = [t.memory_config() for t in (input_tensor, grad)] + [memory_config or grad.memory_config()]
    checks = ((input_tensor.layout == Layout.ROW_MAJOR, "index_tensor.layout() == Layout::ROW_MAJOR",
               f"Index tensor layout must be ROW_MAJOR but got {input_tensor.layout}"),
              (input_tensor.dtype in (DataType.UINT32, DataType.BFLOAT16),
               "index_tensor.dtype() == DataType::UINT32 or index_tensor.dtype() == DataType::BFLOAT16",
               "Index tensor must be UINT32 or BFLOAT16"),
              (len(ids_shape) == 4 and ids_shape[-1] % 32 == 0, "index_tensor_shape[-1] % TILE_WIDTH == 0",
               "Number of columns in the index tensor must be divisible by tile width"),
              (grad.layout == Layout.TILE, "grad_tensor.layout() == Layout::TILE",
               f"Gradient tensor layout must be TILE but got {grad.layout}"),
              (grad.dtype in (DataType.BFLOAT16, DataType.BFLOAT8_B),
               "grad_tensor.dtype() == DataType::BFLOAT16 or grad_tensor.dtype() == DataType::BFLOAT8_B",
               "Output gradient tensor must be BFLOAT16 or BFLOAT8_B"),
              (grad.dtype == out_dtype, "grad_tensor.dtype() == operation_attributes.output_dtype",
               "Output and input gradient tensors must have the same dtype"),
              (any(not c.is_sharded() for c in interleaved), "memory_layout() == TensorMemoryLayout::INTERLEAVED",
               "Embedding b/w does not currently support sharding"),
              (len(g_shape) == 4 and g_shape[:2] == (1, 1), "grad_tensor_shape[0] == 1 && grad_tensor_shape[1] == 1",
               f"First two dimensions for the gradient tensor must be 1, but found {g_shape[:2]}."),
              (g_shape[-2:-1] == (ids_shape[0] * ids_shape[-1],) if ids_shape else False,
               "grad_tensor_shape[2] == index_tensor_shape[0] * index_tensor_shape[-1]",
               "Number of rows in gradient tensor must be equal to number of indices in index tensor"))
    for ok, condition, message in checks:
        if not ok:
            raise tt_fatal(condition, message, "device_sim/ops/normalization.py")
    rows = weight_tensor.shape[-2]
    ids = values(input_tensor, op_name).reshape(-1).long()
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= rows):
        bad = int(ids.max()) if int(ids.max()) >= rows else int(ids.min())
        raise IndexError(f"{op_name}: id {bad} is outside the table's {rows} rows (0..{rows - 1})")
    y = _embedding_bw_kernel(ids, values(grad, op_name).reshape(-1, grad.shape[-1]), rows, out_dtype)
    out = output(y, grad, ins, op_name=op_name, dtype=out_dtype, layout=Layout.TILE,
                 memory_config=memory_config or grad.memory_config())
    device_work.launch_after(out, True, grad, embedding_backward_program(
        grad.device(), g_shape[-1], grad.dtype, input_tensor.dtype, out.dtype))
    return out

# -- in-place softmax: TT-NN's kernels write the result over the input and return it -------------

def _scale_mask_softmax_golden(t, scale=None, mask=None, *_, **__):
    x = t.float() if scale is None else t.float() * scale
    return torch.softmax(x if mask is None else x + mask.float(), -1)  # an additive mask, as TT-NN's


def _in_place(op_name: str, input_tensor: Tensor, value: torch.Tensor, program=None) -> Tensor:
    """Write `value` over the input; `program` (a Program or None) is launched first, so CBs that clash leave
    the input as it was."""
    device_inputs(op_name, input_tensor)
    if program is not None:
        device_work.launch(input_tensor.device(), program)
    input_tensor._write(value)
    return input_tensor


def in_place_softmax_program(x: Tensor, mask: Tensor | None, tt_nn_only: dict, *, causal_mask: bool = False,
                             hw_dims: bool = False):
    """The SoftmaxDeviceOperation an in-place softmax over the last dim runs (scale_mask_softmax_in_place,
    attention_softmax_): the sharded factory for a sharded input with a SoftmaxShardedMultiCoreProgramConfig,
    the interleaved attention-optimized one for an interleaved TILE input; None otherwise (not modelled).
    numeric_stable defaults to True, as ttnn.softmax's does here."""
    if x.device() is None or x.layout != Layout.TILE:
        return None
    config = tt_nn_only.get("compute_kernel_config")
    fp32 = bool(getattr(config, "fp32_dest_acc_en", False))
    stable = tt_nn_only.get("numeric_stable", True)
    program_config = tt_nn_only.get("program_config")
    if x.is_sharded():
        if type(program_config).__name__ != "SoftmaxShardedMultiCoreProgramConfig":
            return None
        return normalization.sharded_softmax_program(x, x.dtype, program_config, mask=mask, causal_mask=causal_mask,
                                                     numeric_stable=stable, fp32_dest_acc_en=fp32, hw_dims=hw_dims)
    if mask is not None and mask.is_sharded():
        return None
    return normalization.softmax_program(x, x.dtype, fp32_dest_acc_en=fp32, numeric_stable=stable,
                                       mask_dtype=mask.dtype if mask is not None else None)


@register_op("ttnn.softmax_in_place", kind="softmax", golden=_softmax_golden)
def softmax_in_place(input_tensor: Tensor, dim: int = -1, *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Softmax over `dim`, written over the input (same buffer and tensor id), which is returned.

    >>> x = ttnn.from_torch(torch.zeros(1, 1, 32, 32), layout=ttnn.TILE, device=device)
    >>> ttnn.softmax_in_place(x) is x, x.to_torch()[0, 0, 0, 0].item()
    (True, 0.03125)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    x = values(input_tensor, op_name)
    last = dim in (-1, x.dim() - 1)
    return _in_place(op_name, input_tensor, _softmax_golden(x, dim),
                     in_place_softmax_program(input_tensor, None, tt_nn_only) if last else None)


def _mask_as_read(m, mask: Tensor | None, x, is_causal_mask: bool):
    """A TILE mask of another height as the interleaved softmax kernel reads it (softmax_program_factory_attention_
    optimized.cpp): without is_causal_mask one tile row per batch, whose first row each row of the input adds;
    with it, mask_H rows that repeat down the input's height (mask tile row = input tile row % mask_Ht). A ROW_MAJOR
    mask is TT-NN's [batch, 1, W / 32, 32] (softmax_device_operation.cpp's expected shape): one row of W per batch,
    in rows of 32."""
    if m is not None and mask.layout == Layout.ROW_MAJOR and m.dim() == 4 and m.shape[1] == 1 \
            and m.shape[-1] == 32 and m.shape[-2] * 32 == x.shape[-1]:
        return m.reshape(m.shape[0], 1, 1, x.shape[-1])
    if m is None or mask.layout != Layout.TILE or m.dim() < 2 or m.shape[-1] != x.shape[-1]:
        return m
    h, mask_h = x.shape[-2], m.shape[-2]
    if mask_h == h:
        return m
    if not is_causal_mask and mask_h == 32:
        return m[..., :1, :]
    if is_causal_mask and h % mask_h == 0:
        return m.repeat(*([1] * (m.dim() - 2)), h // mask_h, 1)
    return m


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_SCALE_MASK_EXAMPLE = """

    >>> x = ttnn.from_torch(torch.rand(1, 1, 32, 32), layout=ttnn.TILE, device=device)
    >>> expected = torch.softmax(x.to_torch() * 0.5, -1)
    >>> {op}(x, 0.5) is x and torch.allclose(x.to_torch(), expected, atol=1e-6)
    True
"""


def _scale_mask(name: str, *, causal: bool):
    # causal: the hw-dims variant, which builds its causal mask itself (TT-NN runs it only sharded)
    op_name = f"ttnn.{name}"

    def op(input_tensor: Tensor, scale: float | None = None, mask: Tensor | None = None, *, program_config=None,
           is_causal_mask: bool = False, **tt_nn_only) -> Tensor:
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        device_inputs(op_name, input_tensor, mask)
        x, m = values(input_tensor, op_name), values(mask, op_name) if mask is not None else None
        m = _mask_as_read(m, mask, x, is_causal_mask)
        try:
            y = _scale_mask_softmax_golden(x, scale, m)
        except RuntimeError:
            raise ValueError(f"{op_name}: mask of shape {list(m.shape)} does not broadcast to the input's "
                             f"{list(x.shape)}") from None
        if causal:  # TT-NN runs the hw-dims variant only sharded, with a sharded program config
            _check_hw_dims(input_tensor, scale, mask, program_config)
        program = in_place_softmax_program(input_tensor, mask, {**tt_nn_only, "program_config": program_config},
                                           causal_mask=is_causal_mask or causal, hw_dims=causal)
        return _in_place(op_name, input_tensor, y, program)

    op.__doc__ = ("softmax(input * scale + mask) over the last dim, written over the input and returned; "
                  "is_causal_mask says how TT-NN's kernel reads the mask and changes no value."
                  + _SCALE_MASK_EXAMPLE.format(op=op_name))
    return register_op(op_name, kind="softmax", golden=_scale_mask_softmax_golden)(op)


def _check_hw_dims(x: Tensor, scale, mask: Tensor | None, program_config) -> None:
    """SoftmaxDeviceOperation::validate_on_program_cache_miss for scale_causal_mask_hw_dims_softmax_in_place (with
    a mask): the default program config refuses it; the sharded one wants a ROW_MAJOR-sharded TILE input, an
    interleaved TILE mask and a scale. Raised before anything is written, so the input keeps its values."""
    if mask is None:
        return
    sharded_config = type(program_config).__name__ == "SoftmaxShardedMultiCoreProgramConfig"
    where = "device_sim/ops/normalization.py"
    if not mask.is_sharded() and not sharded_config:
        raise tt_fatal("!attributes.is_scale_causal_mask_hw_dims_softmax",
                       "Scale causal mask HW dims softmax not supported in default program config\n"
                       "ttnn.scale_causal_mask_hw_dims_softmax_in_place: shard the input (ROW_MAJOR orientation) and "
                       "pass program_config=ttnn.SoftmaxShardedMultiCoreProgramConfig(...)", where)
    if not sharded_config:
        return
    checks = [
        (x.is_sharded(), "input_tensor.is_sharded() && input_tensor.shard_spec().has_value()",
         "Input tensor must be sharded when using SoftmaxShardedMultiCoreProgramConfig"),
        (mask.layout == Layout.TILE, "mask.layout() == Layout::TILE",
         "Mask must have TILE layout for scale causal mask HW dims softmax"),
        (not mask.is_sharded(), "mask.is_sharded() == false",
         "Mask must not be sharded for scale causal mask HW dims softmax"),
        (not x.is_sharded() or x.memory_config().shard_spec.orientation.name == "ROW_MAJOR",
         "input_tensor.shard_spec()->orientation == tt::tt_metal::ShardOrientation::ROW_MAJOR",
         "Input must have ROW_MAJOR shard orientation for scale causal mask HW dims softmax"),
        (scale is not None, "attributes.scale.has_value()",
         "Scale value is required for scale causal mask HW dims softmax"),
    ]
    for ok, condition, message in checks:
        if not ok:
            raise tt_fatal(condition, message, where)


scale_mask_softmax_in_place = _scale_mask("scale_mask_softmax_in_place", causal=False)
scale_causal_mask_hw_dims_softmax_in_place = _scale_mask("scale_causal_mask_hw_dims_softmax_in_place", causal=True)


@register_op("ttnn.scale_mask_softmax", kind="softmax", golden=_scale_mask_softmax_golden)
def scale_mask_softmax(input_tensor: Tensor, scale: float | None = None, mask: Tensor | None = None, *,
                       memory_config: MemoryConfig | None = None, is_causal_mask: bool = False,
                       compute_kernel_config=None, numeric_stable: bool = True,
                       op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """softmax(input * scale + mask) over the last dim into a new tensor (TT-NN's softmax_nanobind.cpp; its
    in-place form is scale_mask_softmax_in_place). is_causal_mask says how the kernel reads the mask and changes
    no value.

    >>> x = ttnn.from_torch(torch.zeros(1, 1, 32, 32), layout=ttnn.TILE, device=device)
    >>> ttnn.scale_mask_softmax(x, 0.5).to_torch()[0, 0, 0, 0].item()
    0.03125
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor, mask)
    x, m = values(input_tensor, op_name), values(mask, op_name) if mask is not None else None
    m = _mask_as_read(m, mask, x, is_causal_mask)
    try:
        y = _scale_mask_softmax_golden(x, scale, m)
    except RuntimeError:
        raise ValueError(f"{op_name}: mask of shape {list(m.shape)} does not broadcast to the input's "
                         f"{list(x.shape)}") from None
    out = output(y, input_tensor, ins, op_name=op_name, memory_config=memory_config)
    if input_tensor.device() is not None and input_tensor.layout == Layout.TILE and not input_tensor.is_sharded() \
            and (mask is None or not mask.is_sharded()):
        program = normalization.softmax_program(
            input_tensor, out.dtype, fp32_dest_acc_en=bool(getattr(compute_kernel_config, "fp32_dest_acc_en", False)),
            numeric_stable=numeric_stable, mask_dtype=mask.dtype if mask is not None else None)
        # compute_program_hash's fields beyond the CBs: scale, shapes, the mask's and the outputs' memory configs
        device_work.launch_for(out, True, input_tensor.device(), program, (
            op_name, scale, is_causal_mask, tuple(x.shape), input_tensor.memory_config(), out.memory_config(),
            mask.memory_config() if mask is not None else None))
    return out


def create_layer_norm_reciprocals(device, core_range_set, width: int) -> Tensor:
    """TT-NN's ttnn/operations/normalization.py helper for the Welford layer_norm: 1/1, 1/2, ..., 1/width in float32,
    one row per core of `core_range_set`, HEIGHT_SHARDED in L1 one row a core (ROW_MAJOR)."""
    n = core_range_set.num_cores()
    table = torch.tensor([1.0 / (i + 1) for i in range(width)] * n, dtype=torch.float32).reshape(n, width)
    cfg = MemoryConfig(TensorMemoryLayout.HEIGHT_SHARDED, BufferType.L1,
                       ShardSpec(core_range_set, (1, width), ShardOrientation.ROW_MAJOR))
    return from_torch(table, dtype=DataType.FLOAT32, layout=Layout.ROW_MAJOR, device=device, memory_config=cfg)
