"""`ttnn.experimental`'s head-shuffling ops for LLMs, prefill and decode, each one fused op as in TT-NN.

    import device_sim as ttnn
    qkv = ttnn.from_torch(torch.randn(1, 1, 32, 8 * 64), layout=ttnn.TILE, device=device)  # H=4, KVH=2, D=64
    q, k, v = ttnn.experimental.nlp_create_qkv_heads(qkv, num_heads=4, num_kv_heads=2, transpose_k_heads=False)
    (q.shape, k.shape)                                   # ([1, 4, 32, 64], [1, 2, 32, 64])
    ttnn.experimental.nlp_concat_heads(q).shape          # [1, 1, 32, 256]

Shapes: B batch, S sequence, H query heads, KVH key/value heads, D head size. A fused QKV row
holds all query heads, then all key heads, then all value heads ([Q | K | V], D values each), the
layout of TT-NN's interleaved (non-sharded) kernels. Decode tensors put the batch where prefill
tensors put the sequence: [1, S=1, B, ...] in, [1, B, heads, D] out; TT-NN pads the heads dim to 32
rows of a tile, which device_sim keeps in the padded shape only.
"""

from __future__ import annotations

import torch

from device_sim import device_work, sharding
from device_sim.ops.common import check_tt_nn_only, device_inputs, four_d_input, held, output
from device_sim.program_config_checks import tt_fatal
from device_sim.programs import decode_heads, falcon_heads
from device_sim.programs import transformer as transformer_programs
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor
from device_sim.types import BufferType, DataType, Layout, MemoryConfig, ShardSpec, TensorMemoryLayout


def _split(x: torch.Tensor, n_q: int, n_kv: int, op_name: str):
    """A [..., (H + 2*KVH)*D] row split into q [..., H, D], k and v [..., KVH, D]."""
    n = n_q + 2 * n_kv
    if x.shape[-1] % n:
        raise ValueError(f"{op_name}: width {x.shape[-1]} of shape {list(x.shape)} is not a multiple of "
                         f"num_heads + 2 * num_kv_heads = {n}")
    d = x.shape[-1] // n
    q, k, v = torch.split(x, [n_q * d, n_kv * d, n_kv * d], -1)
    return (q.unflatten(-1, (n_q, d)), k.unflatten(-1, (n_kv, d)), v.unflatten(-1, (n_kv, d)))


def _create_heads_golden(t, kv=None, *_, num_heads, num_kv_heads=None, transpose_k_heads=True, **__):
    # num_kv_heads=0 is 0 key/value heads, not the default (nlp_create_qkv_heads.cpp: value_or(num_q_heads)):
    # Whisper's cross-attention splits K and V apart that way and takes [0].
    x = t if kv is None else torch.cat([t, kv], -1)
    n_kv = num_heads if num_kv_heads is None else num_kv_heads
    q, k, v = (y.squeeze(1).transpose(1, 2)
               for y in _split(x, num_heads, n_kv, "ttnn.experimental.nlp_create_qkv_heads"))
    return q, (k.transpose(-2, -1) if transpose_k_heads else k), v


@register_op("ttnn.experimental.nlp_create_qkv_heads", golden=_create_heads_golden)
def nlp_create_qkv_heads(input: Tensor, input_kv: Tensor | None = None, *, num_heads: int,  # noqa: A002
                         num_kv_heads: int | None = None, transpose_k_heads: bool = True,
                         memory_config: MemoryConfig | None = None,
                         op_name: str = OWN_NAME, **tt_nn_only) -> tuple[Tensor, Tensor, Tensor]:
    """[B, 1, S, (H + 2*KVH)*D] (or input [B, 1, S, H*D] with input_kv [B, 1, S, 2*KVH*D]) to q [B, H, S, D],
    k [B, KVH, D, S] (or [B, KVH, S, D] with transpose_k_heads=False) and v [B, KVH, S, D].

    >>> qkv = ttnn.from_torch(torch.rand(1, 1, 32, 256), layout=ttnn.TILE, device=device)  # (4 + 2 * 2) heads of 32
    >>> q, k, v = ttnn.experimental.nlp_create_qkv_heads(qkv, num_heads=4, num_kv_heads=2)
    >>> q.shape, k.shape, v.shape  # k transposed
    (Shape([1, 4, 32, 32]), Shape([1, 2, 32, 32]), Shape([1, 2, 32, 32]))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input, input_kv)
    x = held(input, op_name)
    kv = held(input_kv, op_name) if input_kv is not None else None
    if x.dim() != 4 or x.shape[1] != 1 or (kv is not None and (kv.dim() != 4 or kv.shape[:-1] != x.shape[:-1])):
        shapes = [list(x.shape)] + ([list(kv.shape)] if kv is not None else [])
        raise ValueError(f"{op_name}: input shapes {shapes} must be [B, 1, S, width] (and input_kv the same B, S)")
    outs = _create_heads_golden(x, kv, num_heads=num_heads, num_kv_heads=num_kv_heads,
                                transpose_k_heads=transpose_k_heads)
    outs = tuple(output(o.contiguous(), input, ins, op_name=op_name, memory_config=memory_config) for o in outs)
    if input.device() is not None and input.layout == Layout.TILE and not input.is_sharded() and input_kv is None:
        try:  # the interleaved factory, one program for q, k and v (a separate input_kv is not modelled)
            device_work.launch(input.device(), transformer_programs.create_heads_program(
                input, transpose_k_heads=transpose_k_heads))
        except RuntimeError:
            for o in outs:
                o._free()
            raise
    return outs


def concat_heads_output(op_name: str, input_tensor: Tensor, golden, memory_config: MemoryConfig | None,
                        tt_nn_only: dict) -> Tensor:
    """The output of a concat-heads op (this module's and ttnn.transformer's): a [B, H, S, D] input
    checked, its heads joined by `golden`, placed as the op's one output."""
    x, ins = four_d_input(op_name, input_tensor, "[B, H, S, D]", tt_nn_only, moved=True)
    return output(golden(x).contiguous(), input_tensor, ins, op_name=op_name, memory_config=memory_config)


def _concat_heads_golden(t, *_, **__):
    return t.transpose(1, 2).flatten(-2).unsqueeze(1)


@register_op("ttnn.experimental.nlp_concat_heads", golden=_concat_heads_golden)
def nlp_concat_heads(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
                     op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """[B, H, S, D] to [B, 1, S, H*D].

    >>> heads = ttnn.from_torch(torch.rand(1, 4, 32, 32), layout=ttnn.TILE, device=device)
    >>> ttnn.experimental.nlp_concat_heads(heads).shape
    Shape([1, 1, 32, 128])
    """
    out = concat_heads_output(op_name, input_tensor, _concat_heads_golden,
                              memory_config, tt_nn_only)
    if input_tensor.device() is not None and input_tensor.layout == Layout.TILE and not input_tensor.is_sharded():
        device_work.launch_after(out, True, input_tensor, transformer_programs.concat_heads_program(input_tensor))
    return out


def _create_heads_decode_golden(t, *_, num_heads, num_kv_heads=None, **__):
    # [1, 1, B, width] -> [1, 1, B, heads, D] -> [1, B, heads, D]: the token dim (S=1) goes.
    return tuple(y.squeeze(1) for y in
                 _split(t, num_heads, num_kv_heads or num_heads, "ttnn.experimental.nlp_create_qkv_heads_decode"))


@register_op("ttnn.experimental.nlp_create_qkv_heads_decode", golden=_create_heads_decode_golden)
def nlp_create_qkv_heads_decode(input_tensor: Tensor, *, num_heads: int, num_kv_heads: int | None = None,
                                overlap_qk_coregrid: bool = True, memory_config: MemoryConfig | None = None,
                                op_name: str = OWN_NAME, **tt_nn_only) -> tuple[Tensor, Tensor, Tensor]:
    """One decode token per user: [1, 1, B, (H + 2*KVH)*D] to q [1, B, H, D], k and v [1, B, KVH, D].

    overlap_qk_coregrid only chooses which cores hold q and k on hardware.

    >>> token = ttnn.from_torch(torch.rand(1, 1, 8, 192), layout=ttnn.TILE, device=device)  # 8 users, (4 + 2) x 32
    >>> q, k, v = ttnn.experimental.nlp_create_qkv_heads_decode(token, num_heads=4, num_kv_heads=1)
    >>> q.shape, k.shape, q.memory_config().memory_layout
    (Shape([1, 8, 4, 32]), Shape([1, 8, 1, 32]), TensorMemoryLayout.INTERLEAVED)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    x = held(input_tensor, op_name)
    if x.dim() != 4 or x.shape[:2] != (1, 1):
        raise ValueError(f"{op_name}: input shape {list(x.shape)} must be [1, 1, B, width] (one token per user)")
    ins = device_inputs(op_name, input_tensor)
    outs = _create_heads_decode_golden(x, num_heads=num_heads, num_kv_heads=num_kv_heads)
    configs = (_create_heads_decode_output_configs(memory_config, users=x.shape[2], num_heads=num_heads,
                                                   head_dim=outs[0].shape[-1], overlap_qk_coregrid=overlap_qk_coregrid)
               if memory_config is not None and memory_config.is_sharded() and memory_config.shard_spec is not None
               else (memory_config,) * 3)
    outs = tuple(output(o.contiguous(), input_tensor, ins, op_name=op_name, memory_config=cfg)
                 for o, cfg in zip(outs, configs))
    dev = input_tensor.device()
    program = None
    if dev is not None and input_tensor.layout == Layout.TILE and not input_tensor.is_sharded():
        # the interleaved-input factory, on the first B cores of TT-NN's output shard grid (memory_config's, or
        # the whole grid)
        spec = memory_config.shard_spec if memory_config is not None and memory_config.is_sharded() else None
        ranges = spec.grid.ranges() if spec is not None else []
        grid = ((ranges[0].start.x, ranges[0].start.y, ranges[0].end.x, ranges[0].end.y) if len(ranges) == 1
                else (0, 0, dev.config.grid_x - 1, dev.config.grid_y - 1))
        program = decode_heads.create_qkv_heads_decode_program(
            input_tensor.dtype, users=x.shape[2], num_heads=num_heads, head_dim=outs[0].shape[-1], grid=grid)
    elif dev is not None and _sharded_input_factory_runs(input_tensor, configs):
        # the width-sharded-input factory: each core gathers its user's heads from the input's shards straight into
        # q's, k's and v's shards, on q's cores (and k's, when apart)
        grids = [cfg.shard_spec.grid for cfg in configs[:2]]
        ranges = tuple(dict.fromkeys((r.start.x, r.start.y, r.end.x, r.end.y) for g in grids for r in g.ranges()))
        tiles = tuple(cfg.shard_spec.shape[0] * cfg.shard_spec.shape[1] // (32 * 32) for cfg in configs)
        program = decode_heads.create_qkv_heads_decode_sharded_program(input_tensor.dtype, tiles=tiles,
                                                                       ranges=ranges)
    if program is not None:
        try:
            device_work.launch(dev, program)
        except RuntimeError:  # the three outputs are fresh: free them before the error goes on
            for o in outs:
                o._free()
            raise
    return outs


def _sharded_input_factory_runs(x: Tensor, configs) -> bool:
    """NLPCreateQKVHeadsDecodeShardedProgramFactory's case: a TILE input width-sharded (the only sharding TT-NN's
    validate takes) on a grid from core (0, 0), ROW_MAJOR, into sharded outputs; an input grid elsewhere runs the
    sub-core-grid variant, not modelled."""
    cfg = x.memory_config()
    if x.layout != Layout.TILE or cfg.memory_layout != TensorMemoryLayout.WIDTH_SHARDED:
        return False
    ranges = cfg.shard_spec.grid.ranges()
    return (len(ranges) == 1 and (ranges[0].start.x, ranges[0].start.y) == (0, 0)
            and cfg.shard_spec.orientation.name == "ROW_MAJOR" and all(c is not None and c.is_sharded()
                                                                        for c in configs))


def _create_heads_decode_output_configs(cfg: MemoryConfig, *, users: int, num_heads: int, head_dim: int,
                                        overlap_qk_coregrid: bool) -> tuple[MemoryConfig, MemoryConfig, MemoryConfig]:
    """q's, k's and v's configs as TT-NN's compute_output_specs makes them from a sharded memory_config: one user's
    [heads padded to 32, D] a core on the first B cores of its grid, row by row from the grid's first core (k on
    the B cores after q's when overlap_qk_coregrid is False); TT-NN pads the kv shards by the q heads too."""
    grid = cfg.shard_spec.grid
    start = grid.ranges()[0].start
    q_grid = sharding.num_cores_to_corerangeset_in_subcoregrids(start, users, grid, row_wise=True)
    k_grid = q_grid
    if not overlap_qk_coregrid:
        k_start = sharding.num_cores_to_corerangeset_in_subcoregrids(start, users + 1, grid, row_wise=True)
        k_grid = sharding.num_cores_to_corerangeset_in_subcoregrids(k_start.ranges()[-1].end, users, grid,
                                                                    row_wise=True)
    shard = (-(-num_heads // 32) * 32, head_dim)
    return tuple(MemoryConfig(cfg.memory_layout, cfg.buffer_type, ShardSpec(g, shard))
                 for g in (q_grid, k_grid, q_grid))


def _concat_heads_decode_golden(t, *_, num_heads, **__):
    return t[:, :, :num_heads].flatten(-2).unsqueeze(1)


def _concat_heads_decode_checks(op_name: str, t: Tensor, *, users: int) -> None:
    """TT-NN 0.81's NLPConcatHeadsDecodeDeviceOperation::validate_on_program_cache_miss, in its order (the
    TT_FATAL conditions and words of nlp_concat_heads_decode_device_operation.cpp), then device_sim's line with
    the fix. Checked before the output exists, so a refusal allocates nothing."""
    where = "device_sim/ops/heads.py"
    if t.dtype not in (DataType.FLOAT32, DataType.BFLOAT16):
        raise tt_fatal("input_tensor.dtype() == tt::tt_metal::DataType::FLOAT32 || input_tensor.dtype() == "
                       "tt::tt_metal::DataType::BFLOAT16", f"Unsupported data format\n{op_name}: input dtype "
                       f"{t.dtype}; typecast it to bfloat16 or float32 first", where=where)
    if t.layout != Layout.TILE:
        raise tt_fatal("input_tensor.layout() == tt::tt_metal::Layout::TILE", f"Input tensor layout must be TILE but "
                       f"got {t.layout.name}\n{op_name}: convert it with ttnn.to_layout(x, ttnn.TILE_LAYOUT)",
                       where=where)
    shape = tuple(t.padded_shape)
    if shape[1] > 32:
        raise tt_fatal("input_shape[1] <= 32", f"currently only support less than 32 users\n{op_name}: the input "
                       f"holds {shape[1]} users; split the batch into groups of at most 32", where=where)
    if shape[2] != 32:
        raise tt_fatal("input_shape[2] == 32", f"currently only support 32 padded heads\n{op_name}: the input's "
                       f"heads dim is padded to {shape[2]}; give at most 32 heads a user", where=where)
    fix = (f"{op_name}: shard the input [1, B, heads, D] one user a core, e.g. ttnn.to_memory_config(x, "
           f"ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, ttnn.ShardSpec(<{users} "
           f"cores from (0, 0)>, (32, D), ttnn.ShardOrientation.ROW_MAJOR)))")
    if not t.is_sharded():
        raise tt_fatal("input_tensor.is_sharded()", f"Input tensor must be sharded\n{fix}", where=where)
    layout = t.memory_config().memory_layout
    if layout != TensorMemoryLayout.HEIGHT_SHARDED:
        raise tt_fatal("input_tensor.memory_config().memory_layout() == tt::tt_metal::TensorMemoryLayout::"
                       "HEIGHT_SHARDED", f"Input tensor memory layout must be HEIGHT_SHARDED but got {layout.name}"
                       f"\n{fix}", where=where)
    cores = t.memory_config().shard_spec.grid.num_cores()
    if cores != users:
        raise tt_fatal("num_cores == input_shape[1]", f"Input core grid num_cores must be equal to num users\n"
                       f"{fix} (its shard grid has {cores} cores for {users} users)", where=where)


def _concat_heads_decode_output_config(op_name: str, t: Tensor, num_heads: int, sub_core_grids) -> MemoryConfig:
    """TT-NN's own output config (compute_output_specs): [1, 1, B, num_heads*D] width-sharded in L1, one head's
    [max(B, 32), D] a core, on the first num_heads cores of the grid (row by row), or of sub_core_grids from the
    input's first core when the input's grid does not start at (0, 0) or sub_core_grids is given."""
    ranges = t.memory_config().shard_spec.grid.ranges()
    users, head_dim = t._value.shape[1], tuple(t.padded_shape)[-1]
    start = ranges[0].start
    if len(ranges) > 1 or (start.x, start.y) != (0, 0) or sub_core_grids is not None:
        if sub_core_grids is None:
            raise tt_fatal("args.sub_core_grids.has_value()", f"Subcoregrids must be provided if on_subcoregrids is "
                           f"true\n{op_name}: the input's shard grid does not start at core (0, 0); pass "
                           f"sub_core_grids= (a CoreRangeSet), or shard the input from (0, 0)",
                           where="device_sim/ops/heads.py")
        grid = sharding.num_cores_to_corerangeset_in_subcoregrids(start, num_heads, sub_core_grids, row_wise=True)
    else:
        grid = sharding.num_cores_to_corerangeset(num_heads, t.device().compute_with_storage_grid_size(),
                                                  row_wise=True)
    return MemoryConfig(TensorMemoryLayout.WIDTH_SHARDED, BufferType.L1, ShardSpec(grid, (max(users, 32), head_dim)))


@register_op("ttnn.experimental.nlp_concat_heads_decode", golden=_concat_heads_decode_golden)
def nlp_concat_heads_decode(input_tensor: Tensor, *, num_heads: int, memory_config: MemoryConfig | None = None,
                            op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """[1, B, heads, D] (heads >= num_heads, e.g. padded to 32) to [1, 1, B, num_heads*D].

    >>> token = ttnn.from_torch(torch.rand(1, 1, 8, 192), layout=ttnn.TILE, device=device)
    >>> cfg = ttnn.create_sharded_memory_config((32, 32), ttnn.CoreGrid(y=1, x=8), ttnn.ShardStrategy.HEIGHT,
    ...                                         use_height_and_width_as_shard_shape=True)  # a user a core
    >>> q, k, v = ttnn.experimental.nlp_create_qkv_heads_decode(token, num_heads=4, num_kv_heads=1, memory_config=cfg)
    >>> ttnn.experimental.nlp_concat_heads_decode(q, num_heads=4).shape
    Shape([1, 1, 8, 128])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    x = held(input_tensor, op_name)
    if x.dim() != 4 or x.shape[0] != 1 or x.shape[2] < num_heads:
        raise ValueError(f"{op_name}: input shape {list(x.shape)} must be [1, B, heads, D] with at least "
                         f"num_heads={num_heads} heads")
    ins = device_inputs(op_name, input_tensor)
    tt_nn_config = None
    if input_tensor.device() is not None:
        _concat_heads_decode_checks(op_name, input_tensor, users=x.shape[1])
        tt_nn_config = _concat_heads_decode_output_config(op_name, input_tensor, num_heads,
                                                          tt_nn_only.get("sub_core_grids"))
    out = output(_concat_heads_decode_golden(x, num_heads=num_heads).contiguous(), input_tensor, ins,
                 op_name=op_name, memory_config=memory_config if memory_config is not None else tt_nn_config)
    if input_tensor.device() is None:
        return out
    ranges = input_tensor.memory_config().shard_spec.grid.ranges()
    head_dim = tuple(input_tensor.padded_shape)[-1]
    if len(ranges) == 1 and (ranges[0].start.x, ranges[0].start.y) == (0, 0) and not tt_nn_only.get("sub_core_grids"):
        # TT-NN's factory for a height-sharded input on a grid from (0, 0)
        dev = input_tensor.device()
        program = decode_heads.concat_heads_decode_program(input_tensor.dtype, users=x.shape[1], head_dim=head_dim,
                                                           num_heads=num_heads,
                                                           grid=(dev.config.grid_x, dev.config.grid_y))
    else:  # its sub-core-grid factory: on the output's cores, TT-NN's own (memory_config does not move them)
        program = decode_heads.concat_heads_decode_subcoregrids_program(
            input_tensor.dtype, users=x.shape[1], head_dim=head_dim,
            ranges=tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in tt_nn_config.shard_spec.grid.ranges()))
    device_work.launch_after(out, True, input_tensor, program)
    return out


def _split_qkv_sharded_golden(t, *_, num_heads=16, shard_columns=1, **__):
    # The fused width holds `shard_columns` groups, each [Q part | K part | V part] of its heads: with a
    # block-sharded input each core column holds one group (TT-NN's unit test builds its reference so).
    groups = [torch.chunk(g, 3, -1) for g in torch.chunk(t, shard_columns, -1)]
    q, k, v = (torch.cat([g[i] for g in groups], -1) for i in range(3))
    heads = lambda y: y.squeeze(1).unflatten(-1, (num_heads, -1)).transpose(1, 2)  # noqa: E731  [B, H, S, D]
    return heads(q), heads(k).transpose(-2, -1), heads(v)


@register_op("ttnn.experimental.split_query_key_value_and_split_heads", golden=_split_qkv_sharded_golden)
def split_query_key_value_and_split_heads(input_tensor: Tensor, compute_with_storage_grid_size=None, *,
                                          memory_config: MemoryConfig | None = None, num_heads: int = 16,
                                          op_name: str = OWN_NAME, **tt_nn_only) -> tuple[Tensor, Tensor, Tensor]:
    """BERT's fused QKV [B, 1, S, 3*H*D] to q [B, H, S, D], k [B, H, D, S], v [B, H, S, D].

    Interleaved input: the width is [Q | K | V]. Block-sharded input: each shard column holds
    [Q | K | V] of its share of the heads, as TT-NN's sharded kernel reads it. (A golden check
    sees only values, so it assumes the interleaved layout.)

    >>> x = ttnn.from_torch(torch.rand(1, 1, 32, 3 * 64), layout=ttnn.TILE, device=device)
    >>> q, k, v = ttnn.experimental.split_query_key_value_and_split_heads(x, num_heads=2)
    >>> q.shape, k.shape, v.shape
    (Shape([1, 2, 32, 32]), Shape([1, 2, 32, 32]), Shape([1, 2, 32, 32]))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    x = held(input_tensor, op_name)
    cfg = input_tensor.memory_config()
    shard = cfg.shard_spec if cfg is not None and cfg.is_sharded() else None
    columns = x.shape[-1] // shard.shape[1] if shard is not None and x.shape[-1] % shard.shape[1] == 0 else 1
    if x.dim() != 4 or x.shape[1] != 1 or x.shape[-1] % (3 * columns) or (x.shape[-1] // 3) % num_heads:
        raise ValueError(f"{op_name}: input shape {list(x.shape)} must be [B, 1, S, 3 * num_heads * D] with "
                         f"num_heads={num_heads}")
    ins = device_inputs(op_name, input_tensor)
    outs = tuple(output(o.contiguous(), input_tensor, ins, op_name=op_name, memory_config=memory_config)
                 for o in _split_qkv_sharded_golden(x, num_heads=num_heads, shard_columns=columns))
    grid = compute_with_storage_grid_size
    grid = (grid.x, grid.y) if hasattr(grid, "x") else tuple(grid) if grid is not None else None
    program = falcon_heads.split_fused_qkv_program(input_tensor, grid)
    if program is not None:  # after q, k and v exist, as TT-NN allocates its outputs first
        try:
            device_work.launch(input_tensor.device(), program)
        except RuntimeError:
            for o in outs:
                o._free()
            raise
    return outs


def _falcon7b_golden(t, *_, **__):
    return _create_heads_golden(t, num_heads=71, num_kv_heads=1, transpose_k_heads=False)


@register_op("ttnn.experimental.nlp_create_qkv_heads_falcon7b", golden=_falcon7b_golden)
def nlp_create_qkv_heads_falcon7b(input: Tensor, *, memory_config: MemoryConfig | None = None,  # noqa: A002
                                  op_name: str = OWN_NAME, **tt_nn_only) -> tuple[Tensor, Tensor, Tensor]:
    """Falcon-7B's fused QKV [B, 1, S, 4672] ([71 query heads | 1 key head | 1 value head] of 64) to
    q [B, 71, S, 64], k [B, 1, S, 64], v [B, 1, S, 64]: the shape TT-NN hard-codes for this op.

    >>> x = ttnn.from_torch(torch.rand(1, 1, 32, 73 * 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> q, k, v = ttnn.experimental.nlp_create_qkv_heads_falcon7b(x)  # 71 query heads, one k and one v
    >>> q.shape, k.shape, v.shape
    (Shape([1, 71, 32, 64]), Shape([1, 1, 32, 64]), Shape([1, 1, 32, 64]))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    x = held(input, op_name)
    if x.dim() != 4 or x.shape[1] != 1 or x.shape[-1] != 73 * 64:
        raise ValueError(f"{op_name}: input shape {list(x.shape)} must be [B, 1, S, 4672] (Falcon-7B's fused QKV)")
    ins = device_inputs(op_name, input)
    outs = tuple(output(o.contiguous(), input, ins, op_name=op_name, memory_config=memory_config)
                 for o in _falcon7b_golden(x))
    program = falcon_heads.falcon7b_heads_program(input)
    if program is not None:  # after q, k and v exist, as TT-NN allocates its outputs first
        try:
            device_work.launch(input.device(), program)
        except RuntimeError:
            for o in outs:
                o._free()
            raise
    return outs
