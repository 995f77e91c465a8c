"""KV-cache ops, in place as in TT-NN: `ttnn.fill_cache`, `ttnn.update_cache`, `ttnn.kv_cache.*` and
`ttnn.experimental.paged_update_cache` / `paged_fill_cache`.

    import device_sim as ttnn
    cache = ttnn.zeros((B, KVH, max_seq, D), layout=ttnn.TILE, device=device)
    ttnn.fill_cache(cache, k_prefill, 0)                  # user 0's prefill keys, positions 0..S-1
    ttnn.experimental.paged_update_cache(cache, k_token, update_idxs=[S] * B)   # one decode token per user

Each op writes into the cache tensor it is given and returns that same tensor: the same tensor id
and the same buffer, with new values (Tensor._write). A profiler therefore sees the op with the cache
among its inputs and as its output, under one tensor id; a report that stores tensors keeps the
values the cache had when the capture first stored it, not every later version.

Shapes: B users, KVH key/value heads, S tokens, D head size. A plain cache is [B, KVH, max_seq, D];
a paged cache is [num_blocks, KVH, block_size, D] with a page table [B, blocks_per_user] of block
ids (a user's position p lives in block page_table[b, p // block_size], row p % block_size).
"""

from __future__ import annotations

import torch

from device_sim import device_work, sharding
from device_sim.mesh import mesh_holding
from device_sim.ops import paged_cache_checks
from device_sim.ops.common import check_tt_nn_only, device_inputs, output, values
from device_sim.programs import falcon_heads
from device_sim.programs import kv_cache as kv_programs
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor
from device_sim.types import BufferType, Layout, MemoryConfig, ShardSpec, TensorMemoryLayout


def _cache_dims(cache: torch.Tensor, op_name: str):
    if cache.dim() != 4:
        raise ValueError(f"{op_name}: cache shape {list(cache.shape)} must be [B, KVH, max_seq, D] (or paged "
                         f"[num_blocks, KVH, block_size, D])")
    return cache.shape


def _fill_golden(cache, input_tensor, batch_idx, *_, **__):
    op_name = "ttnn.fill_cache"
    B, KVH, max_seq, D = _cache_dims(cache, op_name)
    if input_tensor.dim() != 4 or input_tensor.shape[0] != 1 or input_tensor.shape[1] != KVH \
            or input_tensor.shape[3] != D or input_tensor.shape[2] > max_seq:
        raise ValueError(f"{op_name}: input shape {list(input_tensor.shape)} must be [1, {KVH}, S, {D}] with "
                         f"S <= {max_seq} for cache {list(cache.shape)}")
    if not 0 <= batch_idx < B:
        raise IndexError(f"{op_name}: batch_idx={batch_idx} is outside the cache's {B} users")
    out = cache.clone()
    out[batch_idx, :, : input_tensor.shape[2]] = input_tensor[0]
    return out


def _update_golden(cache, input_tensor, update_idx, batch_offset=0, *_, **__):
    op_name = "ttnn.update_cache"
    B, KVH, max_seq, D = _cache_dims(cache, op_name)
    if input_tensor.dim() != 4 or input_tensor.shape[:2] != (1, KVH) or input_tensor.shape[3] != D \
            or input_tensor.shape[2] < batch_offset + B:
        raise ValueError(f"{op_name}: input shape {list(input_tensor.shape)} must be [1, {KVH}, users, {D}] holding "
                         f"users batch_offset..batch_offset+{B} for cache {list(cache.shape)}")
    if not 0 <= update_idx < max_seq:
        raise IndexError(f"{op_name}: update_idx={update_idx} is outside the cache's {max_seq} positions")
    out = cache.clone()
    out[:, :, update_idx] = input_tensor[0, :, batch_offset: batch_offset + B].transpose(0, 1)
    return out


def _held(cache: Tensor) -> torch.Tensor:
    # The cache's values in its own host dtype: copying a bfloat16 cache as float32 would double the bytes
    # each write moves, and a cache is the biggest tensor a decode step touches.
    return cache._value_or_raise()


def _in_place(op_name: str, cache: Tensor, inputs, golden, *args, program=None) -> Tensor:
    """Run `golden` on the tensors' values and write the result into `cache`: the op's output is `cache`.

    `program()` gives the op's device program (device_sim.programs.kv_cache), launched after the values are
    checked and before the cache is written, so a program whose CBs clash leaves the cache as it was.
    """
    device_inputs(op_name, cache, *inputs)
    new = golden(_held(cache), *(values(t, op_name) for t in inputs), *args)
    if program is not None and cache.device() is not None and cache.layout == Layout.TILE \
            and all(t.layout == Layout.TILE for t in inputs) and not cache.is_sharded():
        device_work.launch(cache.device(), program())
    cache._write(new)
    return cache


@register_op("ttnn.fill_cache", kind="move", golden=_fill_golden)
def fill_cache(cache_tensor: Tensor, input_tensor: Tensor, batch_idx: int, *, op_name: str = OWN_NAME) -> Tensor:
    """Write a user's prefill keys or values, input [1, KVH, S, D], into cache positions 0..S-1 of user
    batch_idx, in place; returns the cache.

    >>> cache = ttnn.from_torch(torch.zeros(2, 1, 64, 32), layout=ttnn.TILE, device=device)  # [users, heads, seq, D]
    >>> prompt = ttnn.from_torch(torch.ones(1, 1, 32, 32), layout=ttnn.TILE, device=device)
    >>> ttnn.fill_cache(cache, prompt, 1) is cache, cache.to_torch()[:, 0, :33, 0].sum(-1)
    (True, tensor([ 0., 32.]))
    """
    return _in_place(op_name, cache_tensor, [input_tensor], _fill_golden, batch_idx,
                     program=lambda: kv_programs.fill_cache_program(input_tensor))


@register_op("ttnn.update_cache", kind="move", golden=_update_golden)
def update_cache(cache: Tensor, input: Tensor, update_idx: int, *, batch_offset: int = 0,  # noqa: A002
                 op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Write one token per user, input [1, KVH, users, D] (users padded to 32 as on hardware; users
    batch_offset.. are used), at position update_idx of every user's cache, in place; returns the cache.

    >>> cache = ttnn.from_torch(torch.zeros(2, 1, 64, 32), layout=ttnn.TILE, device=device)
    >>> token = ttnn.from_torch(torch.ones(1, 1, 32, 32), layout=ttnn.TILE, device=device)  # users padded to 32
    >>> _ = ttnn.update_cache(cache, token, 7)
    >>> cache.to_torch()[:, 0, 6:9, 0]
    tensor([[0., 1., 0.],
            [0., 1., 0.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return _in_place(op_name, cache, [input], _update_golden, update_idx, batch_offset,
                     program=lambda: _update_program(cache, input, tt_nn_only))


@register_op("ttnn.kv_cache.fill_cache_for_user_", golden=_fill_golden)
def fill_cache_for_user_(cache: Tensor, input: Tensor, batch_index: int, *, op_name: str = OWN_NAME) -> Tensor:  # noqa: A002
    """ttnn.fill_cache under its in-place name: TT-NN's ttnn.kv_cache.fill_cache_for_user_.

    >>> cache = ttnn.from_torch(torch.zeros(2, 1, 64, 32), layout=ttnn.TILE, device=device)
    >>> prompt = ttnn.from_torch(torch.ones(1, 1, 32, 32), layout=ttnn.TILE, device=device)
    >>> _ = ttnn.kv_cache.fill_cache_for_user_(cache, prompt, 0)
    >>> cache.to_torch()[:, 0, :33, 0].sum(-1)
    tensor([32.,  0.])
    """
    return _in_place(op_name, cache, [input], _fill_golden, batch_index,
                     program=lambda: kv_programs.fill_cache_program(input))


@register_op("ttnn.kv_cache.update_cache_for_token_", golden=_update_golden)
def update_cache_for_token_(cache: Tensor, input: Tensor, update_index: int, batch_offset: int = 0,  # noqa: A002
                            *, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """ttnn.update_cache under its in-place name: TT-NN's ttnn.kv_cache.update_cache_for_token_.

    >>> cache = ttnn.from_torch(torch.zeros(2, 1, 64, 32), layout=ttnn.TILE, device=device)
    >>> token = ttnn.from_torch(torch.ones(1, 1, 32, 32), layout=ttnn.TILE, device=device)
    >>> _ = ttnn.kv_cache.update_cache_for_token_(cache, token, 3)
    >>> cache.to_torch()[:, 0, 2:5, 0]
    tensor([[0., 1., 0.],
            [0., 1., 0.]])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return _in_place(op_name, cache, [input], _update_golden, update_index,
                     batch_offset, program=lambda: _update_program(cache, input, tt_nn_only))


def _update_program(cache: Tensor, x: Tensor, tt_nn_only: dict):
    config = tt_nn_only.get("compute_kernel_config")
    return kv_programs.update_cache_program(cache, x, fp32_dest_acc_en=bool(getattr(config, "fp32_dest_acc_en",
                                                                                     False)))


# -- paged caches (vLLM-style): ttnn.experimental ----------------------------------------------

def _slot(page_table, b: int, pos: int, block_size: int, op_name: str):
    """(block, row) holding user b's position pos: the cache's own (b, pos) without a page table."""
    if page_table is None:
        return b, pos
    blocks = page_table.shape[-1]
    if pos // block_size >= blocks:
        raise IndexError(f"{op_name}: position {pos} is past user {b}'s {blocks} blocks of {block_size}")
    return int(page_table[b, pos // block_size]), pos % block_size


def _paged_update_golden(cache, input_tensor, *_, update_idxs=(), update_idxs_tensor=None, share_cache=None,
                         page_table=None, batch_offset=0, **__):
    op_name = "ttnn.experimental.paged_update_cache"
    n, KVH, rows, D = _cache_dims(cache, op_name)
    idxs = [int(i) for i in (update_idxs_tensor.reshape(-1).tolist() if update_idxs_tensor is not None
                             else update_idxs)]
    if input_tensor.dim() != 4 or input_tensor.shape[0] != 1 or input_tensor.shape[2] < KVH \
            or input_tensor.shape[3] != D or input_tensor.shape[1] < len(idxs):
        raise ValueError(f"{op_name}: input shape {list(input_tensor.shape)} must be [1, B, heads >= {KVH}, {D}] "
                         f"with one row per update index ({len(idxs)}) for cache {list(cache.shape)}")
    out = cache.clone()
    for b, pos in enumerate(idxs):
        if pos < 0:  # TT-NN skips a user whose position is -1
            continue
        user = 0 if share_cache else b + batch_offset
        block, row = _slot(page_table, user, pos, rows, op_name)
        if not (0 <= block < n and row < rows):
            raise IndexError(f"{op_name}: user {user}'s position {pos} is outside cache {list(cache.shape)}")
        out[block, :, row] = input_tensor[0, b, :KVH]
    return out


def _runs_here(op_name: str, cache: Tensor, mesh_coords) -> bool:
    """Whether the chip holding `cache` is among `mesh_coords` (TT-NN: the mesh coordinates to run on)."""
    if mesh_coords is None:
        return True
    chip = cache.device()
    chips = getattr(chip, "_chips", None)
    if chips is None or len(chips) != 1:
        raise NotImplementedError(f"{op_name}: mesh_coords= on a multi-chip mesh is not emulated; drop it to "
                                  f"update the cache on every chip")
    # an op on a mesh runs once per chip on its shard: the chip's place in its open mesh (a lone chip is (0, 0))
    mesh = mesh_holding(chip.device_id)
    here = (0, 0) if mesh is None else tuple(mesh.coordinate_of(mesh.get_device_ids().index(chip.device_id)))
    return here in {tuple(c) for c in mesh_coords}


@register_op("ttnn.experimental.paged_update_cache", golden=_paged_update_golden)
def paged_update_cache(cache_tensor: Tensor, input_tensor: Tensor, *, update_idxs=(), update_idxs_tensor=None,
                       share_cache: bool | None = None, page_table: Tensor | None = None, batch_offset: int = 0,
                       mesh_coords=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Write one decode token per user, input [1, B, KVH (padded to 32 on hardware), D], at user b's
    position update_idxs[b] (or update_idxs_tensor[b]; -1 skips the user), in place; returns the cache.

    mesh_coords (a set of ttnn.MeshCoordinate) limits the write to those chips.

    >>> cache = ttnn.from_torch(torch.zeros(8, 1, 64, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> token = ttnn.from_torch(torch.ones(1, 1, 8, 96), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> cfg = ttnn.create_sharded_memory_config((32, 32), ttnn.CoreGrid(y=1, x=8), ttnn.ShardStrategy.HEIGHT,
    ...                                         use_height_and_width_as_shard_shape=True)  # a user a core
    >>> _, k, _ = ttnn.experimental.nlp_create_qkv_heads_decode(token, num_heads=1, num_kv_heads=1, memory_config=cfg)
    >>> _ = ttnn.experimental.paged_update_cache(cache, k, update_idxs=list(range(8)))  # user b at position b
    >>> cache.to_torch()[:, 0, :8, 0].diagonal()
    tensor([1., 1., 1., 1., 1., 1., 1., 1.], dtype=torch.bfloat16)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if (update_idxs_tensor is None) == (not update_idxs):
        raise ValueError(f"{op_name}: give exactly one of update_idxs (a list) and update_idxs_tensor")
    device_inputs(op_name, cache_tensor, input_tensor, update_idxs_tensor, page_table)
    if cache_tensor.device() is not None:
        paged_cache_checks.check_update_input(op_name, input_tensor, cache_tensor, update_idxs=update_idxs,
                                              update_idxs_tensor=update_idxs_tensor, page_table=page_table,
                                              share_cache=share_cache, batch_offset=batch_offset)
    if not _runs_here(op_name, cache_tensor, mesh_coords):
        return cache_tensor
    new = _paged_update_golden(
        _held(cache_tensor), values(input_tensor, op_name), update_idxs=update_idxs,
        update_idxs_tensor=values(update_idxs_tensor, op_name) if update_idxs_tensor is not None else None,
        share_cache=share_cache, page_table=values(page_table, op_name) if page_table is not None else None,
        batch_offset=batch_offset)
    if cache_tensor.device() is not None:
        # the sharded-input factory TT-NN requires; launched before the write, so a CB clash leaves the cache
        config = tt_nn_only.get("compute_kernel_config")
        device_work.launch(cache_tensor.device(), kv_programs.paged_update_cache_program(
            cache_tensor, input_tensor, index=update_idxs_tensor, page_table=page_table,
            fp32_dest_acc_en=bool(getattr(config, "fp32_dest_acc_en", False))))
    cache_tensor._write(new)
    return cache_tensor


def _paged_fill_golden(cache, input_tensor, page_table, *_, batch_idx_tensor=None, batch_idx=0, **__):
    op_name = "ttnn.experimental.paged_fill_cache"
    n, KVH, block_size, D = _cache_dims(cache, op_name)
    if input_tensor.dim() != 4 or input_tensor.shape[1] != KVH or input_tensor.shape[3] != D:
        raise ValueError(f"{op_name}: input shape {list(input_tensor.shape)} must be [users, {KVH}, S, {D}] for "
                         f"cache {list(cache.shape)}")
    users = batch_idx_tensor.reshape(-1).tolist() if batch_idx_tensor is not None else [batch_idx]
    if len(users) != input_tensor.shape[0]:
        raise ValueError(f"{op_name}: input holds {input_tensor.shape[0]} users but {len(users)} batch index(es) "
                         f"were given; without batch_idx_tensor the input must be [1, {KVH}, S, {D}]")
    S = input_tensor.shape[2]
    if page_table.shape[-1] * block_size < S:
        raise IndexError(f"{op_name}: {S} positions do not fit a user's {page_table.shape[-1]} blocks of {block_size}")
    out = cache.clone()
    pos = torch.arange(S)
    for i, user in enumerate(int(u) for u in users):
        blocks = page_table[user, pos // block_size].long()
        if blocks.numel() and not 0 <= int(blocks.min()) <= int(blocks.max()) < n:
            raise IndexError(f"{op_name}: user {user}'s page table names blocks outside the cache's {n}")
        out[blocks, :, pos % block_size] = input_tensor[i].transpose(0, 1).to(out.dtype)  # [S, KVH, D]
    return out


@register_op("ttnn.experimental.paged_fill_cache", golden=_paged_fill_golden)
def paged_fill_cache(cache_tensor: Tensor, input_tensor: Tensor, page_table: Tensor, *,
                     batch_idx_tensor: Tensor | None = None, batch_idx: int = 0, mesh_coords=None,
                     op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Write a user's prefill keys or values, input [1, KVH, S, D], into the blocks page_table gives
    user batch_idx (or one user per input row from batch_idx_tensor), in place; returns the cache.

    mesh_coords (a set of ttnn.MeshCoordinate) limits the write to those chips.

    >>> cache = ttnn.from_torch(torch.zeros(4, 1, 32, 32), layout=ttnn.TILE, device=device)  # 4 blocks of 32
    >>> table = ttnn.from_torch(torch.tensor([[3, 0], [1, 2]], dtype=torch.int32), ttnn.int32, device=device)
    >>> prompt = ttnn.from_torch(torch.ones(1, 1, 40, 32), layout=ttnn.TILE, device=device)
    >>> _ = ttnn.experimental.paged_fill_cache(cache, prompt, table, batch_idx=0)  # user 0: blocks 3, then 0
    >>> cache.to_torch()[:, 0, :, 0].sum(-1)
    tensor([ 8.,  0.,  0., 32.])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    device_inputs(op_name, cache_tensor, input_tensor, page_table, batch_idx_tensor)
    if not _runs_here(op_name, cache_tensor, mesh_coords):
        return cache_tensor
    new = _paged_fill_golden(
        _held(cache_tensor), values(input_tensor, op_name), values(page_table, op_name),
        batch_idx_tensor=values(batch_idx_tensor, op_name) if batch_idx_tensor is not None else None,
        batch_idx=batch_idx)
    if cache_tensor.device() is not None and cache_tensor.layout == Layout.TILE and input_tensor.layout == Layout.TILE:
        # launched before the write, so a CB clash leaves the cache as it was
        device_work.launch(cache_tensor.device(), kv_programs.paged_fill_cache_program(
            input_tensor, page_table, batch_idx_tensor))
    cache_tensor._write(new)
    return cache_tensor


def _paged_fused_update_golden(cache1, input1, cache2, input2, *_, **kwargs):
    return _paged_update_golden(cache1, input1, **kwargs), _paged_update_golden(cache2, input2, **kwargs)


@register_op("ttnn.experimental.paged_fused_update_cache", golden=_paged_fused_update_golden)
def paged_fused_update_cache(cache_tensor1: Tensor, input_tensor1: Tensor, cache_tensor2: Tensor,
                             input_tensor2: Tensor, *, update_idxs=(), update_idxs_tensor=None,
                             share_cache: bool | None = None, page_table: Tensor | None = None,
                             batch_offset: int = 0, mesh_coords=None,
                             op_name: str = OWN_NAME, **tt_nn_only) -> tuple[Tensor, Tensor]:
    """paged_update_cache of the keys and the values cache in one fused op; returns both caches.

    >>> rows = [ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, y), ttnn.CoreCoord(3, y))]) for y in (0, 1)]
    >>> k, v = (ttnn.from_torch(torch.ones(1, 4, 1, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device,
    ...         memory_config=ttnn.create_sharded_memory_config((32, 32), r, ttnn.ShardStrategy.HEIGHT,
    ...                                                         use_height_and_width_as_shard_shape=True))
    ...         for r in rows)  # a user a core: k's on cores (0..3, 0), v's on (0..3, 1)
    >>> k_cache, v_cache = (ttnn.from_torch(torch.zeros(4, 1, 64, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    ...                     for _ in range(2))
    >>> _ = ttnn.experimental.paged_fused_update_cache(k_cache, k, v_cache, v, update_idxs=[3, 3, 3, 3])
    >>> k_cache.to_torch()[:, 0, 3, 0], v_cache.to_torch()[:, 0, 3, 0]
    (tensor([1., 1., 1., 1.], dtype=torch.bfloat16), tensor([1., 1., 1., 1.], dtype=torch.bfloat16))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if (update_idxs_tensor is None) == (not update_idxs):
        raise ValueError(f"{op_name}: give exactly one of update_idxs (a list) and update_idxs_tensor")
    device_inputs(op_name, cache_tensor1, input_tensor1, cache_tensor2, input_tensor2, update_idxs_tensor, page_table)
    if cache_tensor1.device() is not None:
        paged_cache_checks.check_fused_inputs(op_name, cache_tensor1, input_tensor1, cache_tensor2, input_tensor2,
                                              update_idxs=update_idxs, update_idxs_tensor=update_idxs_tensor,
                                              page_table=page_table, share_cache=share_cache,
                                              batch_offset=batch_offset)
    if _runs_here(op_name, cache_tensor1, mesh_coords):
        kw = dict(update_idxs=update_idxs, share_cache=share_cache, batch_offset=batch_offset,
                  update_idxs_tensor=values(update_idxs_tensor, op_name) if update_idxs_tensor is not None else None,
                  page_table=values(page_table, op_name) if page_table is not None else None)
        new1, new2 = _paged_fused_update_golden(_held(cache_tensor1), values(input_tensor1, op_name),
                                                _held(cache_tensor2), values(input_tensor2, op_name), **kw)
        if cache_tensor1.device() is not None:
            # the tiled or the row-major factory (sharded inputs, as TT-NN requires); before the writes, as above
            config = tt_nn_only.get("compute_kernel_config")
            device_work.launch(cache_tensor1.device(), kv_programs.paged_fused_update_cache_program(
                cache_tensor1, input_tensor1, input_tensor2, index=update_idxs_tensor, page_table=page_table,
                fp32_dest_acc_en=bool(getattr(config, "fp32_dest_acc_en", False))))
        cache_tensor1._write(new1)
        cache_tensor2._write(new2)
    return cache_tensor1, cache_tensor2


def _load_slice_golden(t, *_, seq_len_start, seq_len_end, **__):
    return t[:, :, seq_len_start:seq_len_end]


@register_op("ttnn.experimental.nlp_kv_cache_load_slice", golden=_load_slice_golden)
def nlp_kv_cache_load_slice(input_tensor: Tensor, *, seq_len_start: int, seq_len_end: int,
                            memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Positions seq_len_start..seq_len_end - 1 (multiples of 32) of a cache [B, KVH, max_seq, D]: [B, KVH, S, D].

    As TT-NN, the output is height-sharded in L1 over B*KVH cores, one [S, D] shard each, unless
    memory_config says otherwise.

    >>> cache = ttnn.from_torch(torch.arange(128.0).reshape(1, 1, 128, 1).expand(1, 1, 128, 32).contiguous(),
    ...                         layout=ttnn.TILE, device=device)
    >>> s = ttnn.experimental.nlp_kv_cache_load_slice(cache, seq_len_start=32, seq_len_end=96)
    >>> s.shape, s.to_torch()[0, 0, [0, -1], 0]
    (Shape([1, 1, 64, 32]), tensor([32., 95.]))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    x = values(input_tensor, op_name)
    B, KVH, max_seq, D = _cache_dims(x, op_name)
    if seq_len_start % 32 or seq_len_end % 32 or not 0 <= seq_len_start < seq_len_end <= max_seq:
        raise ValueError(f"{op_name}: seq_len_start={seq_len_start} and seq_len_end={seq_len_end} must be multiples "
                         f"of 32 with 0 <= start < end <= {max_seq}")
    ins = device_inputs(op_name, input_tensor)
    if memory_config is None and input_tensor.device() is not None:
        grid = sharding.num_cores_to_corerangeset(B * KVH, input_tensor.device().compute_with_storage_grid_size(),
                                                  row_wise=True)
        memory_config = MemoryConfig(TensorMemoryLayout.HEIGHT_SHARDED, BufferType.L1,
                                     ShardSpec(grid, (seq_len_end - seq_len_start, D)))
    out = output(_load_slice_golden(x, seq_len_start=seq_len_start, seq_len_end=seq_len_end).contiguous(),
                 input_tensor, ins, op_name=op_name, memory_config=memory_config)
    device_work.launch_after(out, True, input_tensor, falcon_heads.kv_cache_load_slice_program(input_tensor, out))
    return out
