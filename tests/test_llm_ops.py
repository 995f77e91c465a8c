"""The LLM ops of ttnn.experimental and ttnn.transformer against torch: heads, RoPE, KV caches, decode attention."""

import math
import sqlite3

import pytest
import torch
import torch.nn.functional as F

import device_sim as ttnn
import ttreport
from device_sim.ops.rotary import get_rot_transformation_mat


def dev(t, device, dtype=ttnn.float32, layout=ttnn.TILE):
    return ttnn.from_torch(t, dtype=dtype, layout=layout, device=device)


def height_sharded(t, grid: ttnn.CoreRangeSet, shard: tuple[int, int]):
    spec = ttnn.ShardSpec(grid, shard, ttnn.ShardOrientation.ROW_MAJOR)
    return ttnn.to_memory_config(t, ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, spec))


def row_of_cores(y: int, n: int) -> ttnn.CoreRangeSet:
    return ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, y), ttnn.CoreCoord(n - 1, y))])


def token(t, device, y: int = 0):
    """A decode token [1, B, heads, D] as TT-NN's paged cache updates take it: height-sharded in L1, one user's
    [heads padded to 32, D] a core on cores (0..B-1, y)."""
    return height_sharded(dev(t, device), row_of_cores(y, t.shape[1]), (32, t.shape[-1]))


def randn(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


# -- heads -------------------------------------------------------------------------------------

def test_nlp_create_qkv_heads_puts_each_head_where_tt_nn_does(device):
    B, S, H, KVH, D = 2, 32, 4, 2, 32
    # Feature f of token s of user b holds 10000*b + 1000*s + f: every output element says where it came from.
    qkv = (torch.arange(B)[:, None, None, None] * 10000.0 + torch.arange(S)[:, None] * 1000.0
           + torch.arange((H + 2 * KVH) * D))
    q, k, v = ttnn.experimental.nlp_create_qkv_heads(dev(qkv, device), num_heads=H, num_kv_heads=KVH)
    assert (q.shape, k.shape, v.shape) == ((B, H, S, D), (B, KVH, D, S), (B, KVH, S, D))
    assert all(t.layout == ttnn.TILE and t.dtype == ttnn.float32 for t in (q, k, v))
    assert q.value[1, 2, 5, 3] == 10000 + 5000 + 2 * D + 3
    assert k.value[0, 1, 3, 5] == 5000 + H * D + D + 3
    assert v.value[1, 1, 5, 3] == 10000 + 5000 + (H + KVH) * D + D + 3
    q2, k2, v2 = ttnn.experimental.nlp_create_qkv_heads(
        dev(qkv[..., : H * D], device), dev(qkv[..., H * D:], device), num_heads=H, num_kv_heads=KVH,
        transpose_k_heads=False)
    assert torch.equal(q2.value, q.value) and torch.equal(k2.value, k.value.transpose(-2, -1))
    assert torch.equal(v2.value, v.value)
    assert torch.equal(ttnn.experimental.nlp_concat_heads(q).value, qkv[..., : H * D])


def test_decode_heads_split_one_token_per_user_and_concat_back(device):
    B, H, KVH, D = 8, 4, 1, 32
    token = randn(1, 1, B, (H + 2 * KVH) * D)
    q, k, v = ttnn.experimental.nlp_create_qkv_heads_decode(dev(token, device), num_heads=H, num_kv_heads=KVH)
    assert (q.shape, k.shape, v.shape) == ((1, B, H, D), (1, B, KVH, D), (1, B, KVH, D))
    assert q.padded_shape == (1, B, 32, D)  # heads padded to a tile's 32 rows, as TT-NN's decode tensors are
    assert torch.equal(k.value[0, 3, 0], token[0, 0, 3, H * D: (H + 1) * D])
    # TT-NN concatenates only a height-sharded q, one user's [32 padded heads, D] a core from core (0, 0)
    back = ttnn.experimental.nlp_concat_heads_decode(height_sharded(q, row_of_cores(0, B), (32, D)), num_heads=H)
    assert back.shape == (1, 1, B, H * D) and torch.equal(back.value, token[..., : H * D])
    # its output is TT-NN's: width-sharded in L1, one head's [32 users padded, D] on each of the first H cores
    cfg = back.memory_config()
    assert (cfg.memory_layout, cfg.buffer_type) == (ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.L1)
    assert (cfg.shard_spec.grid, tuple(cfg.shard_spec.shape)) == (row_of_cores(0, H), (32, D))


def test_a_decode_step_keeps_tt_nns_sharded_tensors_from_the_heads_to_the_cache_update(device):
    # TT-NN's output configs: nlp_create_qkv_heads_decode puts q, k, v one user a core on the first B cores of the
    # memory_config's grid; rotary_embedding_llama's output takes its input's config (not cos / sin / trans_mat's),
    # so the rotated k goes to paged_update_cache sharded, as that op requires, with no to_memory_config between.
    B, H, KVH, D = 8, 8, 1, 64
    fused = dev(randn(1, 1, B, (H + 2 * KVH) * D), device, dtype=ttnn.bfloat16)
    grid = ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 3))])  # 32 cores
    cfg = ttnn.create_sharded_memory_config((32, D), grid, ttnn.ShardStrategy.HEIGHT,
                                            use_height_and_width_as_shard_shape=True)
    q, k, v = ttnn.experimental.nlp_create_qkv_heads_decode(fused, num_heads=H, num_kv_heads=KVH, memory_config=cfg)
    for t in (q, k, v):
        spec = t.memory_config().shard_spec
        assert (spec.grid, tuple(spec.shape)) == (row_of_cores(0, B), (32, D))
    _, k_apart, _ = ttnn.experimental.nlp_create_qkv_heads_decode(fused, num_heads=H, num_kv_heads=KVH,
                                                                   memory_config=cfg, overlap_qk_coregrid=False)
    # k on the B cores after q's and one more: from (0, 1)
    assert k_apart.memory_config().shard_spec.grid == row_of_cores(1, B)
    cos = height_sharded(dev(randn(1, B, 1, D, seed=1), device, dtype=ttnn.bfloat16), row_of_cores(2, B), (32, D))
    mat = height_sharded(dev(get_rot_transformation_mat(), device, dtype=ttnn.bfloat16), row_of_cores(3, 1), (32, 32))
    k_rot = ttnn.experimental.rotary_embedding_llama(k, cos, cos, mat, is_decode_mode=True)
    assert k_rot.memory_config() == k.memory_config()
    cache = dev(torch.zeros(B, KVH, 64, D), device, dtype=ttnn.bfloat16)
    ttnn.experimental.paged_update_cache(cache, k_rot, update_idxs=[5] * B)
    assert torch.equal(cache.value[:, 0, 5], k_rot.value[0, :, 0])


def test_decode_ops_refuse_interleaved_inputs_with_tt_nns_errors(device):
    # nlp_concat_heads_decode_device_operation.cpp and rotary_embedding_llama_fused_qk_device_operation.cpp
    # validate: TT_FATAL (a RuntimeError), raised before any output is allocated
    def refused(call, match):
        live = len(device.memory.live_buffers())
        with pytest.raises(RuntimeError, match=match):
            call()
        assert len(device.memory.live_buffers()) == live

    heads = dev(randn(1, 8, 4, 32), device, dtype=ttnn.bfloat16)
    refused(lambda: ttnn.experimental.nlp_concat_heads_decode(heads, num_heads=4),
            r"(?s)TT_FATAL .*input_tensor.is_sharded\(\).*Input tensor must be sharded\n.*HEIGHT_SHARDED")
    wide = dev(randn(1, 4, 40, 32), device, dtype=ttnn.bfloat16)  # 40 heads: padded to 64
    refused(lambda: ttnn.experimental.nlp_concat_heads_decode(wide, num_heads=4),
            "currently only support 32 padded heads")
    on_two = height_sharded(heads, row_of_cores(0, 2), (128, 32))  # 4 users a core
    refused(lambda: ttnn.experimental.nlp_concat_heads_decode(on_two, num_heads=4),
            "Input core grid num_cores must be equal to num users")
    q, k = dev(randn(1, 4, 8, 64), device, dtype=ttnn.bfloat16), dev(randn(1, 4, 8, 64), device, dtype=ttnn.bfloat16)
    cos = dev(randn(1, 4, 1, 64), device, dtype=ttnn.bfloat16)
    mat = dev(get_rot_transformation_mat(), device, dtype=ttnn.bfloat16)
    refused(lambda: ttnn.experimental.rotary_embedding_llama_fused_qk(q, k, cos, cos, mat),
            r"(?s)TT_FATAL .*Q input tensor must be HEIGHT_SHARDED\.\n.*INTERLEAVED")
    q32 = height_sharded(dev(randn(1, 4, 8, 64), device), row_of_cores(0, 4), (32, 64))  # float32
    refused(lambda: ttnn.experimental.rotary_embedding_llama_fused_qk(q32, k, cos, cos, mat),
            "Q input tensor must be bfloat16")


def test_head_ops_name_the_shape_they_need(device):
    with pytest.raises(ValueError, match=r"width 210 .* not a multiple of num_heads \+ 2 \* num_kv_heads = 8"):
        ttnn.experimental.nlp_create_qkv_heads(dev(randn(1, 1, 32, 210), device), num_heads=4, num_kv_heads=2)
    with pytest.raises(ValueError, match=r"\[\[1, 32, 256\]\] must be \[B, 1, S, width\]"):
        ttnn.experimental.nlp_create_qkv_heads(dev(randn(1, 32, 256), device), num_heads=4)
    with pytest.raises(ValueError, match="at least num_heads=8 heads"):
        ttnn.experimental.nlp_concat_heads_decode(dev(randn(1, 8, 4, 32), device), num_heads=8)


# -- rotary embeddings ------------------------------------------------------------------------

def _angles(positions, D, theta=10000.0):
    freqs = 1.0 / theta ** (torch.arange(0, D, 2).float() / D)
    return positions.float()[:, None] * freqs  # [S, D/2]


def test_rotary_embedding_llama_rotates_adjacent_pairs_as_meta_llama_does(device):
    B, H, S, D = 1, 2, 32, 64
    x = randn(B, H, S, D)
    ang = _angles(torch.arange(S), D)
    # TT-NN's models give cos/sin with each pair's value repeated: [c0, c0, c1, c1, ...]
    cos, sin = (f(ang).repeat_interleave(2, -1)[None, None] for f in (torch.cos, torch.sin))
    out = ttnn.experimental.rotary_embedding_llama(dev(x, device), dev(cos, device), dev(sin, device),
                                                   dev(get_rot_transformation_mat(), device))
    ref = torch.view_as_real(torch.view_as_complex(x.reshape(B, H, S, D // 2, 2)) * torch.polar(torch.ones_like(ang),
                                                                                             ang)).reshape(B, H, S, D)
    assert out.shape == (B, H, S, D) and out.dtype == ttnn.float32
    torch.testing.assert_close(out.value, ref, rtol=1e-5, atol=1e-5)


def test_rotary_embedding_llama_prefill_refuses_sharded_tensors_with_tt_nns_errors(device):
    # rotary_embedding_llama_device_operation.cpp: prefill runs the interleaved factory only, and the output keeps
    # the input's layout; TT_FATAL before any output is made
    x, cos = dev(randn(1, 2, 64, 32), device), dev(randn(1, 1, 64, 32, seed=1), device)
    mat = dev(get_rot_transformation_mat(), device)
    sharded_x = height_sharded(x, row_of_cores(0, 4), (32, 32))
    sharded_cos = height_sharded(cos, row_of_cores(1, 2), (32, 32))
    live = len(device.memory.live_buffers())
    with pytest.raises(RuntimeError, match=r"(?s)TT_FATAL .*Input tensor must be interleaved in prefill mode\n"):
        ttnn.experimental.rotary_embedding_llama(sharded_x, cos, cos, mat)
    with pytest.raises(RuntimeError, match="Input tensor and sin tensor must have same memory layout"):
        ttnn.experimental.rotary_embedding_llama(x, sharded_cos, sharded_cos, mat)
    with pytest.raises(RuntimeError, match="Input tensor and output tensor must have same memory layout"):
        ttnn.experimental.rotary_embedding_llama(x, cos, cos, mat, memory_config=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG)
    assert len(device.memory.live_buffers()) == live


def test_rotary_embedding_llama_decode_mode_takes_one_position_per_user(device):
    B, H, D = 4, 8, 32
    x, pos = randn(1, B, H, D), torch.tensor([0, 3, 17, 9])
    ang = _angles(pos, D)  # [B, D/2]
    cos, sin = (f(ang).repeat_interleave(2, -1)[None, :, None] for f in (torch.cos, torch.sin))  # [1, B, 1, D]
    # decode mode runs TT-NN's sharded factory only: one user's [heads padded to 32, D] a core, trans_mat a tile
    users = lambda t: height_sharded(dev(t, device), row_of_cores(0, B), (32, D))  # noqa: E731
    mat = height_sharded(dev(get_rot_transformation_mat(), device), row_of_cores(1, 1), (32, 32))
    out = ttnn.experimental.rotary_embedding_llama(users(x), users(cos), users(sin), mat, is_decode_mode=True)
    ref = torch.view_as_real(torch.view_as_complex(x.reshape(1, B, H, D // 2, 2))
                             * torch.polar(torch.ones_like(ang), ang)[None, :, None]).reshape(1, B, H, D)
    torch.testing.assert_close(out.value, ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"trans_mat shape \[1, 1, 64, 64\] must be \[1, 1, 32, 32\]"):
        ttnn.experimental.rotary_embedding_llama(dev(x, device), dev(cos, device), dev(sin, device),
                                                 dev(torch.eye(64)[None, None], device))
    # TT-NN's models shard trans_mat one tile a core ([1, 1, 32 * B, 32]); user b's heads meet its own core's tile
    scaled = torch.cat([get_rot_transformation_mat() * (b + 1) for b in range(B)], 2)
    per_user = ttnn.experimental.rotary_embedding_llama(
        users(x), users(cos), users(sin), height_sharded(dev(scaled, device), row_of_cores(1, B), (32, 32)),
        is_decode_mode=True)
    rotated = (x.unflatten(-1, (-1, 32)) @ get_rot_transformation_mat()[0, 0]).flatten(-2)
    torch.testing.assert_close(per_user.value, x * cos + rotated * sin * torch.arange(1., B + 1)[None, :, None, None],
                               rtol=1e-5, atol=1e-5)
    # interleaved inputs: TT-NN's TT_FATAL, input first, then cos, sin, trans_mat; nothing is allocated
    flat_x, flat_mat, xs, coss, sins = (dev(x, device), dev(get_rot_transformation_mat(), device), users(x),
                                        users(cos), users(sin))
    live = len(device.memory.live_buffers())
    with pytest.raises(RuntimeError, match=r"(?s)TT_FATAL .*Sharded inputs for RoPE must be HEIGHT_SHARDED\.\n"):
        ttnn.experimental.rotary_embedding_llama(flat_x, coss, sins, mat, is_decode_mode=True)
    with pytest.raises(RuntimeError, match=r"transformation matrix for RoPE must be HEIGHT_SHARDED\."):
        ttnn.experimental.rotary_embedding_llama(xs, coss, sins, flat_mat, is_decode_mode=True)
    assert len(device.memory.live_buffers()) == live


def test_rotary_embedding_rotates_halves_as_gpt_neox_does(device):
    H, S, D, max_seq = 2, 32, 64, 128
    x = randn(1, H, S, D)
    ang = _angles(torch.arange(max_seq), D)
    cos, sin = (f(torch.cat([ang, ang], -1))[None, None] for f in (torch.cos, torch.sin))  # [1, 1, max_seq, D]
    out = ttnn.experimental.rotary_embedding(dev(x, device), dev(cos, device), dev(sin, device))
    z = torch.complex(x[..., : D // 2], x[..., D // 2:]) * torch.polar(torch.ones_like(ang[:S]), ang[:S])
    torch.testing.assert_close(out.value, torch.cat([z.real, z.imag], -1), rtol=1e-5, atol=1e-5)
    one = ttnn.experimental.rotary_embedding(dev(x[:, :1, :1], device), dev(cos, device), dev(sin, device), 100)
    z = torch.complex(x[0, 0, 0, : D // 2], x[0, 0, 0, D // 2:]) * torch.polar(torch.ones(D // 2), ang[100])
    torch.testing.assert_close(one.value[0, 0, 0], torch.cat([z.real, z.imag]), rtol=1e-5, atol=1e-5)


# -- attention: prefill windows, decode against a KV cache --------------------------------------

def test_sliding_window_prefill_attention_matches_torch_with_a_band_mask(device):
    q, k, v = randn(1, 4, 64, 32), randn(1, 2, 64, 32, seed=1), randn(1, 2, 64, 32, seed=2)
    out = ttnn.transformer.scaled_dot_product_attention(dev(q, device), dev(k, device), dev(v, device),
                                                        is_causal=True, sliding_window_size=8)
    i = torch.arange(64)
    band = (i[None] <= i[:, None]) & (i[None] > i[:, None] - 8)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=band, enable_gqa=True)
    torch.testing.assert_close(out.value, ref, rtol=1e-4, atol=1e-5)


def _attention(q, k, v):
    """Torch's attention of one new token per user: q [B, H, D], k and v [B, KVH, T, D] -> [B, H, D]."""
    return F.scaled_dot_product_attention(q[:, :, None], k, v, enable_gqa=True)[:, :, 0]


def test_a_decode_step_with_a_kv_cache_matches_torch_attention_over_all_tokens(device):
    B, H, KVH, D, S, max_seq = 2, 4, 2, 32, 40, 128
    k_prompt, v_prompt = randn(B, KVH, S, D), randn(B, KVH, S, D, seed=1)
    k_cache = dev(torch.zeros(B, KVH, max_seq, D), device)
    v_cache = dev(torch.zeros(B, KVH, max_seq, D), device)
    for b in range(B):  # prefill: one user at a time, as models do
        ttnn.fill_cache(k_cache, dev(k_prompt[b: b + 1], device), b)
        ttnn.fill_cache(v_cache, dev(v_prompt[b: b + 1], device), b)
    # decode: the new token's k/v at position S, then its query attends to positions 0..S
    q_new, k_new, v_new = randn(1, B, H, D, seed=2), randn(1, B, KVH, D, seed=3), randn(1, B, KVH, D, seed=4)
    ttnn.experimental.paged_update_cache(k_cache, token(k_new, device), update_idxs=[S] * B)
    ttnn.experimental.paged_update_cache(v_cache, token(v_new, device), update_idxs=[S] * B)
    out = ttnn.transformer.scaled_dot_product_attention_decode(dev(q_new, device), k_cache, v_cache,
                                                               cur_pos=[S] * B)
    k_all = torch.cat([k_prompt, k_new[0][:, :, None]], 2)
    v_all = torch.cat([v_prompt, v_new[0][:, :, None]], 2)
    assert out.shape == (1, B, H, D)
    torch.testing.assert_close(out.value[0], _attention(q_new[0], k_all, v_all), rtol=1e-4, atol=1e-5)
    # cur_pos_tensor and scale as TT-NN takes them; positions past cur_pos (zeros here) are never seen
    pos = dev(torch.tensor([S, S], dtype=torch.int32), device, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR)
    again = ttnn.transformer.scaled_dot_product_attention_decode(dev(q_new, device), k_cache, v_cache,
                                                                 cur_pos_tensor=pos, scale=1 / math.sqrt(D))
    torch.testing.assert_close(again.value, out.value)


def test_a_paged_cache_gives_the_same_attention_as_a_plain_one(device):
    B, KVH, D, block, S = 2, 1, 32, 32, 50
    k, v, q = randn(B, KVH, S, D), randn(B, KVH, S, D, seed=1), randn(1, B, 8, D, seed=2)
    table = torch.tensor([[3, 0], [1, 2]])  # user 0 holds blocks 3 then 0; user 1 blocks 1 then 2
    page_table = dev(table, device, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR)
    k_paged, v_paged = (dev(torch.zeros(4, KVH, block, D), device) for _ in range(2))
    for b in range(B):
        ttnn.experimental.paged_fill_cache(k_paged, dev(k[b: b + 1, :, : S - 1], device), page_table, batch_idx=b)
        ttnn.experimental.paged_fill_cache(v_paged, dev(v[b: b + 1, :, : S - 1], device), page_table, batch_idx=b)
    idx = dev(torch.tensor([S - 1, S - 1], dtype=torch.int32), device, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR)
    ttnn.experimental.paged_update_cache(k_paged, token(k[:, :, S - 1][None], device), update_idxs_tensor=idx,
                                         page_table=page_table)
    ttnn.experimental.paged_update_cache(v_paged, token(v[:, :, S - 1][None], device), update_idxs_tensor=idx,
                                         page_table=page_table)
    assert torch.equal(k_paged.value[0, :, S - 1 - block], k[0, :, S - 1])  # user 0's position 49: block 0, row 17
    out = ttnn.transformer.paged_scaled_dot_product_attention_decode(dev(q, device), k_paged, v_paged, page_table,
                                                                     cur_pos_tensor=idx)
    torch.testing.assert_close(out.value[0], _attention(q[0], k, v), rtol=1e-4, atol=1e-5)


def test_decode_attention_skips_users_at_minus_one_and_keeps_a_sliding_window(device):
    B, H, D, T = 2, 2, 32, 64
    q, k, v = randn(1, B, H, D), randn(B, 1, T, D, seed=1), randn(B, 1, T, D, seed=2)
    out = ttnn.transformer.scaled_dot_product_attention_decode(dev(q, device), dev(k, device), dev(v, device),
                                                               cur_pos=[-1, 40], sliding_window_size=16)
    assert torch.equal(out.value[0, 0], torch.zeros(H, D))
    window = slice(40 - 15, 41)
    torch.testing.assert_close(out.value[0, 1], _attention(q[0, 1:], k[1:, :, window], v[1:, :, window])[0],
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="exactly one of cur_pos"):
        ttnn.transformer.scaled_dot_product_attention_decode(dev(q, device), dev(k, device), dev(v, device))


def test_update_cache_writes_one_position_from_a_padded_batch(device):
    B, KVH, D = 2, 2, 32
    cache = dev(torch.zeros(B, KVH, 64, D), device)
    token = randn(1, KVH, 32, D)  # users padded to 32, as on hardware; users 4 and 5 are ours
    ttnn.update_cache(cache, dev(token, device), 7, batch_offset=4)
    assert torch.equal(cache.value[:, :, 7], token[0, :, 4:6].transpose(0, 1))
    assert int(torch.count_nonzero(cache.value[:, :, :7])) == 0
    with pytest.raises(IndexError, match="update_idx=64 is outside the cache's 64 positions"):
        ttnn.update_cache(cache, dev(token, device), 64)


# -- in place: one tensor id, one buffer, and what a report records ------------------------------

def test_cache_ops_write_into_the_cache_and_a_report_shows_it_as_their_output(tmp_path, device):
    cache = dev(torch.zeros(2, 1, 64, 32), device, dtype=ttnn.bfloat16)
    tensor_id, address = cache.tensor_id, cache.buffer_address()
    with ttreport.capture(tmp_path / "r") as report:
        prompt = dev(randn(1, 1, 32, 32), device, dtype=ttnn.bfloat16)
        live = len(device.memory.live_buffers())
        out = ttnn.fill_cache(cache, prompt, 1)
        assert len(device.memory.live_buffers()) == live  # no new buffer: the op writes into the cache's
    assert out is cache and (cache.tensor_id, cache.buffer_address()) == (tensor_id, address)
    assert torch.equal(cache.value[1, :, :32], prompt.value[0]) and not cache.value[0].any()
    con = sqlite3.connect(report.db_path)
    try:
        op_id, name = con.execute("SELECT operation_id, name FROM operations ORDER BY operation_id DESC").fetchone()
        ins = con.execute("SELECT tensor_id FROM input_tensors WHERE operation_id = ? ORDER BY input_index",
                          (op_id,)).fetchall()
        outs = con.execute("SELECT tensor_id FROM output_tensors WHERE operation_id = ?", (op_id,)).fetchall()
    finally:
        con.close()
    assert name == "ttnn.fill_cache"
    assert ins == [(tensor_id,), (prompt.tensor_id,)] and outs == [(tensor_id,)]


def test_paged_cache_ops_write_only_on_the_mesh_coordinates_given(device):
    cache = dev(torch.zeros(2, 1, 32, 32), device)
    ones = token(torch.ones(1, 2, 1, 32), device)
    ttnn.experimental.paged_update_cache(cache, ones, update_idxs=[1, 2], mesh_coords={ttnn.MeshCoordinate(0, 1)})
    assert not cache.value.any()  # this device is the single chip at (0, 0)
    ttnn.experimental.paged_update_cache(cache, ones, update_idxs=[1, 2], mesh_coords={ttnn.MeshCoordinate(0, 0)})
    assert cache.value[0, 0, 1].eq(1).all() and cache.value[1, 0, 2].eq(1).all() and cache.value.sum() == 64


def test_paged_cache_updates_refuse_interleaved_tokens_with_tt_nns_errors_and_keep_the_cache(device):
    # paged_update_cache_device_operation.cpp / paged_fused_update_cache_device_operation.cpp validate: TT_FATAL
    caches = [dev(torch.zeros(2, 1, 32, 32), device) for _ in range(2)]
    interleaved = dev(torch.ones(1, 2, 1, 32), device)
    with pytest.raises(RuntimeError, match=r"(?s)TT_FATAL .*input_tensor.is_sharded\(\).*Expect input_tensor to be "
                                           r"sharded\n.*HEIGHT_SHARDED"):
        ttnn.experimental.paged_update_cache(caches[0], interleaved, update_idxs=[1, 2])
    rows = token(torch.ones(1, 2, 1, 32), device)
    with pytest.raises(RuntimeError, match="Input tensor in non-fused update_cache must be tilized"):
        ttnn.experimental.paged_update_cache(caches[0], ttnn.to_layout(rows, ttnn.ROW_MAJOR), update_idxs=[1, 2])
    with pytest.raises(RuntimeError, match="Expect input_tensor to be sharded"):
        ttnn.experimental.paged_fused_update_cache(caches[0], interleaved, caches[1], interleaved, update_idxs=[1, 2])
    with pytest.raises(RuntimeError, match=r"input_tensor1 \(.*\) and input_tensor2 \(.*\) must not overlap"):
        ttnn.experimental.paged_fused_update_cache(caches[0], rows, caches[1], token(torch.ones(1, 2, 1, 32), device),
                                                   update_idxs=[1, 2])
    # row-major tokens: only Llama-70B's [.., 8, 128]
    rm = [height_sharded(dev(torch.ones(1, 2, 4, 32), device, layout=ttnn.ROW_MAJOR), row_of_cores(y, 2), (4, 32))
          for y in (0, 1)]
    with pytest.raises(RuntimeError, match="only Llama70b tensor shapes are supported"):
        ttnn.experimental.paged_fused_update_cache(caches[0], rm[0], caches[1], rm[1], update_idxs=[1, 2])
    # a page table needs an index tensor; one index a user; batch_offset 0 (TT-NN's order: indices, then sharding)
    table = dev(torch.tensor([[0], [1]]), device, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR)
    with pytest.raises(RuntimeError, match="Paged cache requires update_idxs tensor"):
        ttnn.experimental.paged_update_cache(caches[0], interleaved, update_idxs=[1, 2], page_table=table)
    with pytest.raises(RuntimeError, match=r"Number of update_idxs \(3\) should match batch size \(2\)"):
        ttnn.experimental.paged_update_cache(caches[0], rows, update_idxs=[1, 2, 3])
    with pytest.raises(RuntimeError, match="batch_offset must be 0"):
        ttnn.experimental.paged_update_cache(caches[0], rows, update_idxs=[1, 2], batch_offset=1)
    assert not any(c.value.any() for c in caches)  # no refused call wrote anything


def test_chunked_prefill_attention_matches_full_causal_attention_for_its_rows(device):
    H, KVH, D, block, S, start = 4, 2, 32, 32, 96, 32
    q, k, v = randn(1, H, S, D), randn(1, KVH, S, D, seed=1), randn(1, KVH, S, D, seed=2)
    table = torch.tensor([[2, 0, 1]])  # the user's positions 0-31 in block 2, 32-63 in block 0, 64-95 in block 1
    pages = dev(table, device, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR)
    k_paged, v_paged = (dev(torch.zeros(3, KVH, block, D), device) for _ in range(2))
    ttnn.experimental.paged_fill_cache(k_paged, dev(k, device), pages)
    ttnn.experimental.paged_fill_cache(v_paged, dev(v, device), pages)
    chunk = q[:, :, start: start + 32]
    out = ttnn.transformer.chunked_scaled_dot_product_attention(dev(chunk, device), k_paged, v_paged, pages, start)
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert out.shape == (1, H, 32, D)
    torch.testing.assert_close(out.value, full[:, :, start: start + 32], rtol=1e-4, atol=1e-5)
    with pytest.raises(IndexError, match=r"positions 96..127 do not fit a user's 3 blocks of 32"):
        ttnn.transformer.chunked_scaled_dot_product_attention(dev(chunk, device), k_paged, v_paged, pages, 96)


def test_fused_qk_rope_and_fused_cache_update_equal_their_single_forms(device):
    B, D = 4, 64

    def sharded(t, y, shard=(32, D)):  # TT-NN's fused RoPE takes only height-sharded bfloat16 inputs
        return height_sharded(dev(t, device, dtype=ttnn.bfloat16), row_of_cores(y, t.shape[1]), shard)

    q, k = sharded(randn(1, B, 8, D), 0), sharded(randn(1, B, 2, D, seed=1), 1)
    # TT-NN's fused form: cos / sin hold q's users' rows, then k's ([1, 2B, 1, D]); trans_mat one tile a core
    cos_t, sin_t = randn(1, 2 * B, 1, D, seed=2), randn(1, 2 * B, 1, D, seed=3)
    cos, sin = sharded(cos_t, 2), sharded(sin_t, 3)
    mat = height_sharded(dev(get_rot_transformation_mat().repeat(1, 1, 2 * B, 1), device, dtype=ttnn.bfloat16),
                         row_of_cores(4, 2 * B), (32, 32))
    q_rot, k_rot = ttnn.experimental.rotary_embedding_llama_fused_qk(q, k, cos, sin, mat)
    # TT-NN's outputs take q's and k's own configs
    assert (q_rot.memory_config(), k_rot.memory_config()) == (q.memory_config(), k.memory_config())
    one_tile = sharded(get_rot_transformation_mat(), 5, (32, 32))
    for fused, x, rows in ((q_rot, q, slice(0, B)), (k_rot, k, slice(B, 2 * B))):
        single = ttnn.experimental.rotary_embedding_llama(x, sharded(cos_t[:, rows], 6), sharded(sin_t[:, rows], 7),
                                                          one_tile, is_decode_mode=True)
        assert fused.shape == x.shape and torch.equal(fused.value, single.value)
    with pytest.raises(RuntimeError, match="Cos and Sin are repeated for Q and K, so they must have the same batch "
                                           "size as the sum of Q and K batch sizes"):
        ttnn.experimental.rotary_embedding_llama_fused_qk(q, k, sharded(cos_t[:, :B], 6), sharded(sin_t[:, :B], 7),
                                                          mat)
    caches = [dev(torch.zeros(B, 2, 32, D), device) for _ in range(4)]
    # keys one user a core on row 0, values on row 1 (TT-NN's fused update takes disjoint shard grids)
    tokens = token(randn(1, B, 2, D, seed=4), device, y=0), token(randn(1, B, 2, D, seed=5), device, y=1)
    both = ttnn.experimental.paged_fused_update_cache(caches[0], tokens[0], caches[1], tokens[1],
                                                      update_idxs=[0, 5, 9, 31])
    assert both[0] is caches[0] and both[1] is caches[1]
    for cache, t in zip(caches[2:], tokens):
        ttnn.experimental.paged_update_cache(cache, t, update_idxs=[0, 5, 9, 31])
    assert torch.equal(caches[0].value, caches[2].value) and torch.equal(caches[1].value, caches[3].value)


def test_attention_sinks_join_the_softmax_as_gpt_oss_computes_them(device):
    H, S, D = 4, 32, 32
    q, k, v, sink = randn(1, H, S, D), randn(1, H, S, D, seed=1), randn(1, H, S, D, seed=2), randn(1, H, 1, 1, seed=3)
    out = ttnn.transformer.scaled_dot_product_attention(dev(q, device), dev(k, device), dev(v, device),
                                                        attention_sink=dev(sink, device))
    scores = (q @ k.transpose(-2, -1) / math.sqrt(D)).masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1),
                                                                   float("-inf"))
    weights = torch.softmax(torch.cat([scores, sink.expand(1, H, S, 1)], -1), -1)[..., :-1]
    torch.testing.assert_close(out.value, weights @ v, rtol=1e-4, atol=1e-5)
    # decode: the last query row, against the cache through position S - 1
    dec = ttnn.transformer.scaled_dot_product_attention_decode(
        dev(q[:, :, -1][None], device), dev(k, device), dev(v, device), cur_pos=[S - 1],
        attention_sink=dev(sink, device))
    torch.testing.assert_close(dec.value[0, 0], (weights @ v)[0, :, -1], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"attention_sink shape \[1, 2, 1, 1\] must hold one value per query head"):
        ttnn.transformer.scaled_dot_product_attention(dev(q, device), dev(k, device), dev(v, device),
                                                      attention_sink=dev(sink[:, :2], device))


def test_golden_checks_of_in_place_ops_see_their_inputs_as_they_were_before(tmp_path, device):
    # The golden runs on the arguments snapshotted before the op: an in-place op has replaced them by then.
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(comparison="both")) as report:
        scores = dev(randn(1, 2, 32, 32), device, dtype=ttnn.bfloat16)
        ttnn.transformer.attention_softmax_(scores, head_size=16)
        cache = dev(torch.zeros(2, 1, 64, 32), device, dtype=ttnn.bfloat16)
        ttnn.update_cache(cache, dev(randn(1, 1, 32, 32), device, dtype=ttnn.bfloat16), 3)
    con = sqlite3.connect(report.db_path)
    try:
        rows = con.execute("SELECT o.name, c.mode, c.status FROM tensor_comparisons c JOIN operations o "
                           "USING (operation_id) WHERE o.name NOT LIKE '%from_torch'").fetchall()
    finally:
        con.close()
    assert sorted(rows) == [("ttnn.transformer.attention_softmax_", "global", "pass"),
                            ("ttnn.transformer.attention_softmax_", "local", "pass"),
                            ("ttnn.update_cache", "global", "pass"), ("ttnn.update_cache", "local", "pass")]


def test_berts_split_heads_reads_interleaved_and_block_sharded_fused_qkv_as_tt_nn_does(device):
    B, S, H, D = 2, 64, 4, 32
    a = randn(B, 1, S, 3 * H * D)
    q, k, v = ttnn.experimental.split_query_key_value_and_split_heads(dev(a, device), ttnn.CoreCoord(4, 2),
                                                                      num_heads=H)
    # TT-NN's unit test reference for an interleaved input: [Q | K | V]
    ref_q, ref_k, ref_v = (t.reshape(B, S, H, D).transpose(1, 2) for t in torch.split(a[:, 0], H * D, -1))
    assert (q.shape, k.shape, v.shape) == ((B, H, S, D), (B, H, D, S), (B, H, S, D))
    assert torch.equal(q.value, ref_q) and torch.equal(k.value, ref_k.transpose(-2, -1)) and torch.equal(v.value, ref_v)
    # block sharded over 4 core columns: each column's 96 values are [Q | K | V] of one head
    sharded = ttnn.create_sharded_memory_config((B * S, 3 * H * D), core_grid=ttnn.CoreGrid(y=2, x=4),
                                                strategy=ttnn.ShardStrategy.BLOCK)
    qs, ks, vs = ttnn.experimental.split_query_key_value_and_split_heads(
        ttnn.from_torch(a, dtype=ttnn.float32, layout=ttnn.TILE, device=device, memory_config=sharded),
        ttnn.CoreCoord(4, 2), num_heads=H, memory_config=ttnn.L1_HEIGHT_SHARDED_MEMORY_CONFIG)
    cols = [torch.chunk(c, 3, -1) for c in torch.chunk(a, 4, -1)]
    heads = lambda i: torch.cat([c[i] for c in cols], -1).reshape(B, S, H, D).transpose(1, 2)  # noqa: E731
    assert torch.equal(qs.value, heads(0)) and torch.equal(ks.value, heads(1).transpose(-2, -1))
    assert torch.equal(vs.value, heads(2))


def test_falcon7b_heads_split_71_query_heads_and_one_key_value_head(device):
    fused = randn(2, 1, 32, 73 * 64)
    q, k, v = ttnn.experimental.nlp_create_qkv_heads_falcon7b(dev(fused, device))
    assert (q.shape, k.shape, v.shape) == ((2, 71, 32, 64), (2, 1, 32, 64), (2, 1, 32, 64))
    # HF Falcon's multi-query split: view(B, S, 73, 64); q = heads 0..70, k = head 71, v = head 72
    heads = fused[:, 0].reshape(2, 32, 73, 64).transpose(1, 2)
    assert torch.equal(q.value, heads[:, :71]) and torch.equal(k.value, heads[:, 71:72])
    assert torch.equal(v.value, heads[:, 72:])


def test_kv_cache_load_slice_gives_positions_height_sharded_one_shard_per_user_head(device):
    cache = randn(2, 4, 128, 64)
    out = ttnn.experimental.nlp_kv_cache_load_slice(dev(cache, device), seq_len_start=32, seq_len_end=96)
    assert out.shape == (2, 4, 64, 64) and torch.equal(out.value, cache[:, :, 32:96])
    cfg = out.memory_config()
    assert cfg.memory_layout == ttnn.TensorMemoryLayout.HEIGHT_SHARDED and cfg.buffer_type == ttnn.BufferType.L1
    assert cfg.shard_spec.shape == (64, 64) and cfg.shard_spec.num_cores() == 8
    with pytest.raises(ValueError, match="seq_len_start=10 and seq_len_end=96 must be multiples of 32"):
        ttnn.experimental.nlp_kv_cache_load_slice(dev(cache, device), seq_len_start=10, seq_len_end=96)


def test_windowed_attention_is_attention_inside_each_window(device):
    # bfloat16 q, k, v (TT-NN's windowed SDPA takes bfloat16 / bfloat8_b / bfloat4_b): against torch on the same
    # rounded inputs, to bfloat16's precision
    q, k, v = (randn(1, 2, 64, 32, seed=s).bfloat16().float() for s in (0, 1, 2))
    bounds = [0, 16, 40, 64]
    bf16 = lambda t: dev(t, device, dtype=ttnn.bfloat16)  # noqa: E731
    out = ttnn.transformer.windowed_scaled_dot_product_attention(
        bf16(q), bf16(k), bf16(v), dev(torch.tensor(bounds), device, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR))
    for lo, hi in zip(bounds, bounds[1:]):
        ref = F.scaled_dot_product_attention(q[:, :, lo:hi], k[:, :, lo:hi], v[:, :, lo:hi])
        torch.testing.assert_close(out.value[:, :, lo:hi].float(), ref, rtol=2**-7, atol=2**-7)
    with pytest.raises(ValueError, match=r"an increasing integer list from 0 to S \(got \[0, 16, 60\]\)"):
        ttnn.transformer.windowed_scaled_dot_product_attention(
            bf16(q), bf16(k), bf16(v), dev(torch.tensor([0, 16, 60]), device, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR))
    # what TT-NN's validate refuses, as its TT_FATAL, before any output is made
    cu = dev(torch.tensor(bounds), device, dtype=ttnn.int32, layout=ttnn.ROW_MAJOR)
    f32, in_l1 = dev(q, device), ttnn.from_torch(q, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                                                  memory_config=ttnn.L1_MEMORY_CONFIG)
    tiled_cu = dev(torch.tensor(bounds), device, dtype=ttnn.int32)
    qb, kb, vb = bf16(q), bf16(k), bf16(v)
    live = len(device.memory.live_buffers())
    for args, words in (((f32, kb, vb, cu), "BFLOAT4_B and is DataType::FLOAT32"),
                        ((in_l1, kb, vb, cu), "Operands to windowed SDPA need to be in DRAM"),
                        ((qb, kb, vb, tiled_cu), "cu_window_seqlens must be in row-major layout")):
        with pytest.raises(RuntimeError, match=rf"(?s)TT_FATAL .*{words}"):
            ttnn.transformer.windowed_scaled_dot_product_attention(*args)
    assert len(device.memory.live_buffers()) == live
