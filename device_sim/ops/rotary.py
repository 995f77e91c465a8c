"""Rotary position embedding: `ttnn.experimental.rotary_embedding_llama` and `rotary_embedding`.

    import device_sim as ttnn
    from device_sim.ops.rotary import get_rot_transformation_mat
    mat = ttnn.from_torch(get_rot_transformation_mat(), layout=ttnn.TILE, device=device)
    q_rot = ttnn.experimental.rotary_embedding_llama(q, cos, sin, mat)   # q [B, H, S, D], cos/sin [1, 1, S, D]

rotary_embedding_llama computes x * cos + (x @ trans_mat) * sin, where the 32x32 trans_mat is
applied to each 32-wide tile of the head dim, as TT-NN's kernel does. With the usual matrix
(get_rot_transformation_mat) it rotates adjacent pairs (2k, 2k+1): Meta's Llama layout, with
cos/sin tables repeated per pair. Prefill: x [B, H, S, D], cos/sin [1, 1 or H, S, D]; decode
(is_decode_mode=True): x [1, B, H, D], cos/sin [1, B, 1, D]. rotary_embedding is the older
GPT-NeoX form: x * cos + rotate_half(x) * sin, with cos/sin caches [1, 1, max_seq, D].
"""

from __future__ import annotations

import torch

from device_sim import device_work
from device_sim.ops.common import broadcasts, check_tt_nn_only, device_inputs, output, values
from device_sim.ops.data_movement import tilize_with_val_padding
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import rotary as rotary_programs
from device_sim.programs import transformer as transformer_programs
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout, MemoryConfig, TensorMemoryLayout

TILE = 32


def get_rot_transformation_mat(dhead: int = TILE) -> torch.Tensor:
    """The [1, 1, 32, 32] matrix models pass as trans_mat: (x @ M)[2k] = -x[2k+1], (x @ M)[2k+1] = x[2k].

    The kernel works on one 32x32 tile, so the size is 32 whatever `dhead` is (as in TT-NN's models).
    """
    m = torch.zeros(1, 1, TILE, TILE)
    m[..., torch.arange(0, TILE, 2), torch.arange(1, TILE, 2)] = 1
    m[..., torch.arange(1, TILE, 2), torch.arange(0, TILE, 2)] = -1
    return m


def _llama_golden(x, cos, sin, trans_mat, *_, first_tile: int = 0, **__):
    """x * cos + (x @ M) * sin, M applied to each 32-wide tile of the head dim.

    A decode trans_mat may hold one 32x32 tile per core ([1, 1, 32 * n, 32], TT-NN's models repeat it per user):
    the sharded kernel multiplies user b's heads by the tile on its own core, taken here as tile
    (first_tile + b) % n (the trans_mat sharded over the users' cores in their order).
    """
    x = x.float()
    mats = trans_mat.float().reshape(-1, TILE, TILE)
    # one tile for all, or [1, B, 1, 32, 32]: a tile per user, over its heads (and the head dim's tiles)
    m = mats[0] if len(mats) == 1 else mats[(first_tile + torch.arange(x.shape[1])) % len(mats)][None, :, None]
    rotated = (x.unflatten(-1, (-1, TILE)) @ m).flatten(-2)
    return x * cos.float() + rotated * sin.float()


def _trans_mat_ok(shape, decode: bool) -> bool:
    """[1, 1, 32, 32]; in decode mode also [1, 1, 32 * n, 32], one tile a core (TT-NN checks the shard is a tile)."""
    shape = tuple(shape)
    return len(shape) == 4 and shape[:2] == (1, 1) and shape[-1] == TILE and (
        shape[2] == TILE or (decode and shape[2] % TILE == 0 and shape[2] > 0))


@register_op("ttnn.experimental.rotary_embedding_llama", golden=_llama_golden)
def rotary_embedding_llama(input_tensor: Tensor, cos_cache: Tensor, sin_cache: Tensor, trans_mat: Tensor, *,
                           is_decode_mode: bool = False, memory_config: MemoryConfig | None = None,
                           op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """x * cos + (x @ trans_mat, per 32-wide tile) * sin; the output has the input's shape.

    >>> from device_sim.ops.rotary import get_rot_transformation_mat
    >>> x = ttnn.from_torch(torch.ones(1, 1, 32, 32), layout=ttnn.TILE, device=device)
    >>> cos = ttnn.from_torch(torch.zeros(1, 1, 32, 32), layout=ttnn.TILE, device=device)  # angle pi/2 everywhere
    >>> sin = ttnn.from_torch(torch.ones(1, 1, 32, 32), layout=ttnn.TILE, device=device)
    >>> mat = ttnn.from_torch(get_rot_transformation_mat(), layout=ttnn.TILE, device=device)
    >>> ttnn.experimental.rotary_embedding_llama(x, cos, sin, mat).to_torch()[0, 0, 0, :4]  # pairs (a, b) -> (-b, a)
    tensor([-1.,  1., -1.,  1.])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    device_inputs(op_name, input_tensor, cos_cache, sin_cache, trans_mat)
    x, cos, sin, mat = (values(t, op_name) for t in (input_tensor, cos_cache, sin_cache, trans_mat))
    if x.dim() != 4 or x.shape[-1] % TILE:
        raise ValueError(f"{op_name}: input shape {list(x.shape)} must be 4D with a head dim that is a multiple "
                         f"of {TILE}")
    if not _trans_mat_ok(mat.shape, is_decode_mode):
        raise ValueError(f"{op_name}: trans_mat shape {list(mat.shape)} must be [1, 1, 32, 32] (see "
                         f"get_rot_transformation_mat; in decode mode also one such tile per core, [1, 1, 32 * n, 32])")
    if is_decode_mode and x.shape[0] != 1:
        raise ValueError(f"{op_name}: decode mode takes input [1, B, H, D] (one token); got {list(x.shape)}")
    want = "[1, B, 1, D]" if is_decode_mode else "[1, 1 or H, S, D]"
    if cos.shape != sin.shape or cos.dim() != 4 or not broadcasts(x.shape, cos.shape) or cos.shape[-1] != x.shape[-1]:
        raise ValueError(f"{op_name}: cos {list(cos.shape)} and sin {list(sin.shape)} must both be {want} for "
                         f"input {list(x.shape)}")
    if input_tensor.device() is not None:
        _layout_checks(op_name, input_tensor, cos_cache, sin_cache, trans_mat, memory_config, is_decode_mode)
    # TT-NN's default output config is the input's (rotary_embedding_llama.cpp), whatever cos / sin / trans_mat use
    out = output(_llama_golden(x, cos, sin, mat), input_tensor, [input_tensor], op_name=op_name,
                 memory_config=memory_config)
    interleaved = not any(t.is_sharded() for t in (input_tensor, cos_cache, sin_cache, trans_mat, out))
    if input_tensor.device() is not None and not is_decode_mode and interleaved:  # the prefill factory
        device_work.launch_after(out, True, input_tensor, transformer_programs.rotary_llama_program(
            input_tensor, cos_cache, sin_cache, trans_mat, out.dtype))
    elif input_tensor.device() is not None and is_decode_mode and all(  # decode: the sharded factory TT-NN requires
            t.is_sharded() for t in (input_tensor, cos_cache, sin_cache, trans_mat)):
        device_work.launch_after(out, True, input_tensor, rotary_programs.rotary_llama_decode_program(
            input_tensor, cos_cache, sin_cache, trans_mat, out.dtype))
    return out


def _layout_checks(op_name: str, x: Tensor, cos: Tensor, sin: Tensor, trans_mat: Tensor, memory_config,
                   decode: bool) -> None:
    """TT-NN 0.81's memory-layout checks (rotary_embedding_llama_device_operation.cpp), in its order, as TT_FATAL in
    TT-NN's words, then device_sim's fix: the output keeps the input's layout; decode mode has only the sharded
    factory, so every input is height-sharded; prefill only the interleaved one."""
    where = "device_sim/ops/rotary.py"
    layout = x.memory_config().memory_layout
    if memory_config is not None and memory_config.memory_layout != layout:
        raise tt_fatal("input_tensor.memory_config().memory_layout() == operation_attributes.output_mem_config."
                       "memory_layout()", f"Input tensor and output tensor must have same memory layout\n{op_name}: "
                       f"the input is {layout.name}, memory_config {memory_config.memory_layout.name}; drop "
                       f"memory_config or give one of the input's layout", where=where)
    if not decode:
        if layout != TensorMemoryLayout.INTERLEAVED:
            raise tt_fatal("input_tensor.memory_config().memory_layout() == TensorMemoryLayout::INTERLEAVED",
                           f"Input tensor must be interleaved in prefill mode\n{op_name}: the input is {layout.name}; "
                           f"move it with ttnn.sharded_to_interleaved (or pass is_decode_mode=True for one token a "
                           f"user)", where=where)
        for name, t in (("sin", sin), ("cos", cos)):
            if t.memory_config().memory_layout != layout:
                raise tt_fatal(f"input_tensor.memory_config().memory_layout() == {name}.memory_config()."
                               f"memory_layout()", f"Input tensor and {name} tensor must have same memory layout\n"
                               f"{op_name}: {name} is {t.memory_config().memory_layout.name}; make it interleaved too",
                               where=where)
        return
    for words, t, name in (("Sharded inputs", x, "input_tensor"), ("cos tensor", cos, "cos"),
                           ("sin tensor", sin, "sin"), ("transformation matrix", trans_mat, "trans_mat")):
        layout = t.memory_config().memory_layout
        if layout != TensorMemoryLayout.HEIGHT_SHARDED:
            raise tt_fatal(f"({name}.memory_config().memory_layout() == TensorMemoryLayout::HEIGHT_SHARDED)",
                           f"{words} for RoPE must be HEIGHT_SHARDED.\n{op_name}: {name} is {layout.name}; decode "
                           f"mode runs only on height-sharded L1 tensors: x and cos / sin one user's [32, D] a core, "
                           f"trans_mat one [32, 32] tile a core (or pass is_decode_mode=False)",
                           where="device_sim/ops/rotary.py")


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, -1)
    return torch.cat([-x2, x1], -1)


def _neox_golden(x, cos, sin, token_index=None, *_, **__):
    x = x.float()
    rows = slice(0, x.shape[-2]) if token_index is None else slice(token_index, token_index + 1)
    return x * cos.float()[..., rows, :] + _rotate_half(x) * sin.float()[..., rows, :]


def _rotate_half_golden(input, *_, **__):  # noqa: A002  (TT-NN's name)
    return _rotate_half(input)


@register_op("ttnn.experimental.rotate_half", golden=_rotate_half_golden)
def rotate_half(input: Tensor, *, memory_config: MemoryConfig | None = None,  # noqa: A002  (TT-NN's name)
                op_name: str = OWN_NAME) -> Tensor:
    """The last dim's halves (a, b) as (-b, a), GPT-NeoX's rotate_half, over the padded width (rotate_half.cpp's
    composite: a ROW_MAJOR input is tilized with zero padding first, then RotateHalfDeviceOperation on one core).

    >>> x = ttnn.from_torch(torch.arange(64.0).reshape(1, 1, 1, 64), layout=ttnn.TILE, device=device)
    >>> ttnn.experimental.rotate_half(x).to_torch()[0, 0, 0, [0, 31, 32, 63]]
    tensor([-32., -63.,   0.,  31.])
    """
    if input.device() is None:
        raise tt_fatal("input_tensor.storage_type() == StorageType::DEVICE", "Input tensor must be on device; "
                       f"{op_name}: move it with ttnn.to_device first", where="device_sim/ops/rotary.py")
    if input.padded_shape[-1] % 64:
        raise tt_fatal("input_tensor.padded_shape()[-1] % (TILE_WIDTH * 2) == 0", f"Input X dimension "
                       f"({input.padded_shape[-1]}) must be divisible by 64 for tiling",
                       where="device_sim/ops/rotary.py")
    if input.is_sharded() or (memory_config is not None and memory_config.memory_layout
                              != TensorMemoryLayout.INTERLEAVED):
        raise tt_fatal("memory_layout() == TensorMemoryLayout::INTERLEAVED",
                       "RotateHalf does not currently support sharding", where="device_sim/ops/rotary.py")
    if input.layout != Layout.TILE:  # rotate_half.cpp tilizes it first: tilize_with_val_padding to whole tiles, 0
        shape = list(input.padded_shape)
        shape[-2:] = [-(-d // 32) * 32 for d in shape[-2:]]
        input = tilize_with_val_padding(input, shape, 0.0, memory_config=input.memory_config())  # noqa: A001
    ins = device_inputs(op_name, input)
    x = values(input, op_name)
    width = input.padded_shape[-1]  # the halves of the padded width: padding (zeros) rotates with the values
    padded = torch.nn.functional.pad(x, (0, width - x.shape[-1]))
    out = output(_rotate_half(padded)[..., : x.shape[-1]], input, ins, op_name=op_name,
                 memory_config=memory_config if memory_config is not None else input.memory_config())
    device_work.launch_after(out, True, input, rotary_programs.rotate_half_program(input, out.dtype))
    return out


@register_op("ttnn.experimental.rotary_embedding", golden=_neox_golden)
def rotary_embedding(input_tensor: Tensor, cos_cache: Tensor, sin_cache: Tensor, token_index: int | None = None,
                     *, memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """x * cos + rotate_half(x) * sin, with cos/sin caches [1, 1, max_seq, D].

    Without token_index, x is [B, H, S, D] and uses cache rows 0..S-1; with it, x is one token
    per user, [1, 1, B, D], and every row uses cache row token_index.

    >>> x = ttnn.from_torch(torch.ones(1, 1, 32, 64), layout=ttnn.TILE, device=device)
    >>> cos = ttnn.from_torch(torch.zeros(1, 1, 32, 64), layout=ttnn.TILE, device=device)
    >>> sin = ttnn.from_torch(torch.ones(1, 1, 32, 64), layout=ttnn.TILE, device=device)
    >>> y = ttnn.experimental.rotary_embedding(x, cos, sin)  # halves (a, b) -> (-b, a), as GPT-NeoX rotates
    >>> y.to_torch()[0, 0, 0, [0, 32]]
    tensor([-1.,  1.])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor, cos_cache, sin_cache)
    x, cos, sin = (values(t, op_name) for t in (input_tensor, cos_cache, sin_cache))
    need = x.shape[-2] if token_index is None else token_index + 1
    if x.dim() != 4 or x.shape[-1] % 2 or cos.shape != sin.shape or cos.dim() != 4 or cos.shape[-1] != x.shape[-1]:
        raise ValueError(f"{op_name}: input {list(x.shape)} must be 4D with an even head dim, and cos {list(cos.shape)}"
                         f" and sin {list(sin.shape)} the same [1, 1, max_seq, D]")
    if cos.shape[-2] < need:
        raise IndexError(f"{op_name}: the cos/sin caches hold {cos.shape[-2]} positions; this call needs {need}")
    out = output(_neox_golden(x, cos, sin, token_index), input_tensor, ins, op_name=op_name,
                 memory_config=memory_config)
    if input_tensor.device() is not None and all(t.layout == Layout.TILE for t in (input_tensor, cos_cache, sin_cache)):
        out_spec = out.memory_config().shard_spec if out.is_sharded() else None
        device_work.launch_after(out, True, input_tensor, rotary_programs.rotary_embedding_program(
            input_tensor, cos_cache, sin_cache, out.dtype, token_index=token_index, out_spec=out_spec))
    return out


def _fused_qk_golden(q, k, cos, sin, trans_mat, *_, **__):
    # cos / sin hold q's users' rows, then k's (TT-NN repeats them for Q and K); so do trans_mat's tiles
    b = q.shape[1]
    return (_llama_golden(q, cos[:, :b], sin[:, :b], trans_mat),
            _llama_golden(k, cos[:, b:], sin[:, b:], trans_mat, first_tile=b))


def _fused_qk_checks(op_name: str, tensors) -> None:
    """TT-NN 0.81's RotaryEmbeddingLlamaFusedQKDeviceOperation::validate_on_program_cache_miss (tt-metal
    9538e8d8f2b4's rotary_embedding_llama_fused_qk_device_operation.cpp): every input height-sharded and
    bfloat16, checked tensor by tensor in its order, as TT_FATAL; then device_sim's line with the fix."""
    for name, t in zip(("Q input", "K input", "Cos", "Sin", "Trans mat"), tensors):
        layout = t.memory_config().memory_layout
        if layout != TensorMemoryLayout.HEIGHT_SHARDED:
            raise tt_fatal("tensor.memory_config().memory_layout() == TensorMemoryLayout::HEIGHT_SHARDED",
                           f"{name} tensor must be HEIGHT_SHARDED.\n{op_name}: the {name.lower()} tensor is "
                           f"{layout.name}; height-shard it in L1 (ttnn.to_memory_config with a HEIGHT_SHARDED "
                           f"MemoryConfig: q and k one user a core on disjoint grids, trans_mat one tile a core)",
                           where="device_sim/ops/rotary.py")
        if t.dtype != DataType.BFLOAT16:
            raise tt_fatal("tensor.dtype() == DataType::BFLOAT16", f"{name} tensor must be bfloat16\n{op_name}: "
                           f"the {name.lower()} tensor is {t.dtype}; typecast it to ttnn.bfloat16",
                           where="device_sim/ops/rotary.py")


@register_op("ttnn.experimental.rotary_embedding_llama_fused_qk", golden=_fused_qk_golden)
def rotary_embedding_llama_fused_qk(q_input_tensor: Tensor, k_input_tensor: Tensor, cos_cache: Tensor,
                                    sin_cache: Tensor, trans_mat: Tensor,
                                    *, op_name: str = OWN_NAME, **tt_nn_only) -> tuple[Tensor, Tensor]:
    """rotary_embedding_llama in decode mode on q [1, B, H, D] and k [1, B, KVH, D] at once (one fused op).

    >>> from device_sim.ops.rotary import get_rot_transformation_mat
    >>> def sharded(t, cores, shard):  # one shard a core, in L1, as TT-NN's decode tensors are
    ...     cfg = ttnn.create_sharded_memory_config(shard, cores, ttnn.ShardStrategy.HEIGHT,
    ...                                             use_height_and_width_as_shard_shape=True)
    ...     return ttnn.from_torch(t, ttnn.bfloat16, layout=ttnn.TILE, device=device, memory_config=cfg)
    ...
    >>> row = lambda y: ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, y), ttnn.CoreCoord(3, y))])
    >>> q = sharded(torch.ones(1, 4, 32, 64), row(0), (32, 64))  # a user a core
    >>> k = sharded(torch.ones(1, 4, 32, 64), row(1), (32, 64))
    >>> cos = sharded(torch.zeros(1, 8, 32, 64), ttnn.CoreGrid(y=2, x=4), (32, 64))  # q's 4 users, then k's
    >>> sin = sharded(torch.ones(1, 8, 32, 64), ttnn.CoreGrid(y=2, x=4), (32, 64))
    >>> mat = sharded(get_rot_transformation_mat(), ttnn.CoreGrid(y=1, x=1), (32, 32))
    >>> q2, k2 = ttnn.experimental.rotary_embedding_llama_fused_qk(q, k, cos, sin, mat)
    >>> q2.to_torch()[0, 0, 0, :4], k2.memory_config() == k.memory_config()
    (tensor([-1.,  1., -1.,  1.], dtype=torch.bfloat16), True)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    device_inputs(op_name, q_input_tensor, k_input_tensor, cos_cache, sin_cache, trans_mat)
    tensors = (q_input_tensor, k_input_tensor, cos_cache, sin_cache, trans_mat)
    if q_input_tensor.device() is not None:
        _fused_qk_checks(op_name, tensors)
    q, k, cos, sin, mat = (values(t, op_name) for t in tensors)
    for name, x in (("q", q), ("k", k)):
        if x.dim() != 4 or x.shape[0] != 1 or x.shape[-1] % TILE or x.shape[1] != q.shape[1]:
            raise ValueError(f"{op_name}: {name} {list(x.shape)} must be [1, B, heads, D] (D a multiple of {TILE}, "
                             f"B as q's)")
    if cos.shape != sin.shape or not _trans_mat_ok(mat.shape, True):
        raise ValueError(f"{op_name}: cos {list(cos.shape)} and sin {list(sin.shape)} must match and trans_mat "
                         f"{list(mat.shape)} be [1, 1, 32 * n, 32]")
    users = q.shape[1] + k.shape[1]
    if cos.dim() != 4 or cos.shape[1] != users or not broadcasts(q.shape[2:], cos.shape[2:]) \
            or cos.shape[-1] != q.shape[-1]:
        raise tt_fatal("cos_sin_batch_size == (q_batch_size + k_batch_size)", f"Cos and Sin are repeated for Q and "
                       f"K, so they must have the same batch size as the sum of Q and K batch sizes\n{op_name}: cos "
                       f"{list(cos.shape)} for q {list(q.shape)} and k {list(k.shape)}; give cos / sin "
                       f"[1, {users}, 1, {q.shape[-1]}], q's users' rows then k's", where="device_sim/ops/rotary.py")
    q_new, k_new = _fused_qk_golden(q, k, cos, sin, mat)
    # TT-NN's outputs take q's and k's own memory configs (rotary_embedding_llama_fused_qk.cpp)
    q_out = output(q_new, q_input_tensor, [q_input_tensor], op_name=op_name)
    k_out = output(k_new, k_input_tensor, [k_input_tensor], op_name=op_name)
    # The sharded factory TT-NN requires (its outputs take q's and k's shard specs; device_sim's follow the memory
    # rules, and the program is TT-NN's either way)
    if q_input_tensor.device() is not None:
        program = rotary_programs.rotary_llama_fused_qk_program(q_input_tensor, k_input_tensor, cos_cache,
                                                                sin_cache, trans_mat, q_out.dtype)
        try:
            device_work.launch(q_input_tensor.device(), program)
        except RuntimeError:  # both outputs are fresh: free them before the error goes on
            q_out._free()
            k_out._free()
            raise
    return q_out, k_out
