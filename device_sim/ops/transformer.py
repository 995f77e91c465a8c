"""`ttnn.transformer`: the attention helpers, each one fused op as in TT-NN.

    import device_sim as ttnn
    out = ttnn.transformer.scaled_dot_product_attention(q, k, v, is_causal=True)    # prefill
    tok = ttnn.transformer.scaled_dot_product_attention_decode(q1, k_cache, v_cache, cur_pos=[7, 3])

Shapes: B batch, S sequence, H query heads, KVH key/value heads, D head size. Decode tensors put
the users where prefill puts the sequence: q [1, B, H, D] against caches [B, KVH, max_seq, D].

attention_softmax_ is in place as in TT-NN: it writes the result into its input tensor (same
tensor id, same buffer) and returns it. A profiler sees one op whose input and output are that
one tensor id; stored tensor files keep the values the tensor had when first stored.
"""

from __future__ import annotations

import math

import torch

from device_sim import device_work, dtypes
from device_sim.ops import windowed_sdpa_checks
from device_sim.ops.common import broadcasts, check_tt_nn_only, device_inputs, held, output, values
from device_sim.ops.heads import concat_heads_output
from device_sim.ops.normalization import in_place_softmax_program
from device_sim.program_config_checks import tt_fatal, validate_sdpa
from device_sim.program_configs import SoftmaxShardedMultiCoreProgramConfig
from device_sim.programs import normalization as normalization_programs
from device_sim.programs import sdpa_decode as sdpa_programs
from device_sim.programs import sdpa_windowed
from device_sim.programs import transformer as transformer_programs
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor
from device_sim.types import DRAM_MEMORY_CONFIG, DataType, Layout, MemoryConfig


def _split_qkv_golden(t, kv=None, *_, num_heads, num_kv_heads=None, transpose_key=True, **__):
    kvh = num_kv_heads or num_heads
    x = t if kv is None else torch.cat([t, kv], -1)
    B, S, hidden = x.shape
    D = hidden // (num_heads + 2 * kvh)
    q, k, v = torch.split(x, [num_heads * D, kvh * D, kvh * D], -1)
    heads = lambda y, n: y.reshape(B, S, n, D).permute(0, 2, 1, 3)  # noqa: E731
    k = heads(k, kvh)
    return heads(q, num_heads), (k.transpose(-2, -1) if transpose_key else k), heads(v, kvh)


@register_op("ttnn.transformer.split_query_key_value_and_split_heads", golden=_split_qkv_golden)
def split_query_key_value_and_split_heads(input_tensor: Tensor, kv_input_tensor: Tensor | None = None, *,
                                          num_heads: int, num_kv_heads: int | None = None,
                                          transpose_key: bool = True, memory_config: MemoryConfig | None = None,
                                          use_falcon7b_backend: bool = False,
                                          op_name: str = OWN_NAME, **tt_nn_only) -> tuple[Tensor, Tensor, Tensor]:
    """[B, S, (H + 2*KVH)*D] (or q [B, S, H*D] and kv_input_tensor [B, S, 2*KVH*D]) to
    q [B, H, S, D], k [B, KVH, D, S] (or [B, KVH, S, D] with transpose_key=False), v [B, KVH, S, D].

    use_falcon7b_backend picks TT-NN's Falcon-7B kernel for the same split (its binding's keyword): same values.

    >>> x = ttnn.from_torch(torch.rand(1, 32, 3 * 64), layout=ttnn.TILE, device=device)
    >>> q, k, v = ttnn.transformer.split_query_key_value_and_split_heads(x, num_heads=2)
    >>> q.shape, k.shape, v.shape  # k transposed
    (Shape([1, 2, 32, 32]), Shape([1, 2, 32, 32]), Shape([1, 2, 32, 32]))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if not isinstance(use_falcon7b_backend, bool):
        raise TypeError(f"{op_name}: use_falcon7b_backend must be True or False, got {use_falcon7b_backend!r}")
    ins = device_inputs(op_name, input_tensor, kv_input_tensor)
    x = held(input_tensor, op_name)
    kv = held(kv_input_tensor, op_name) if kv_input_tensor is not None else None
    hidden = x.shape[-1] + (kv.shape[-1] if kv is not None else 0)
    n = num_heads + 2 * (num_kv_heads or num_heads)
    if x.dim() != 3 or hidden % n or (kv is not None and kv.shape[:-1] != x.shape[:-1]):
        shapes = [list(x.shape)] + ([list(kv.shape)] if kv is not None else [])
        raise ValueError(
            f"{op_name}: input shapes {shapes} must be [B, S, hidden] with the hidden sizes adding up to a "
            f"multiple of num_heads + 2 * num_kv_heads = {n}"
        )
    outs = _split_qkv_golden(x, kv, num_heads=num_heads, num_kv_heads=num_kv_heads, transpose_key=transpose_key)
    outs = tuple(output(o.contiguous(), input_tensor, ins, op_name=op_name, memory_config=memory_config)
                 for o in outs)
    _launch_split(input_tensor, kv_input_tensor, outs, num_heads, num_kv_heads, transpose_key, hidden)
    return outs


def _launch_split(x: Tensor, kv, outs, num_heads: int, num_kv_heads, transpose_key: bool, hidden: int) -> None:
    """TT-NN views the [B, S, width] input as [B, 1, S, width] and runs create_qkv_heads on a sharded input,
    nlp_create_qkv_heads on an interleaved one (device_sim.programs.transformer); a separate kv input or
    num_kv_heads (the Falcon-7B kernel) runs programs not modelled."""
    if x.device() is None or x.layout != Layout.TILE or kv is not None or num_kv_heads is not None:
        return
    if x.is_sharded():
        B, S, width = x.padded_shape
        program = transformer_programs.create_qkv_heads_program(
            x, num_q_heads=num_heads, num_kv_heads=num_heads, head_dim=hidden // (3 * num_heads),
            transpose_k_heads=transpose_key, shape=(B, 1, S, width))
    else:
        program = transformer_programs.create_heads_program(x, transpose_k_heads=transpose_key)
    if program is None:  # a sharded shape create_qkv_heads' factory refuses
        return
    try:
        device_work.launch(x.device(), program)
    except RuntimeError:
        for o in outs:
            o._free()
        raise


def _concatenate_heads_golden(t, *_, **__):
    B, H, S, D = t.shape
    return t.permute(0, 2, 1, 3).reshape(B, S, H * D)


@register_op("ttnn.transformer.concatenate_heads", golden=_concatenate_heads_golden)
def concatenate_heads(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
                      op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """[B, H, S, D] to [B, S, H*D].

    >>> heads = ttnn.from_torch(torch.rand(1, 2, 32, 32), layout=ttnn.TILE, device=device)
    >>> ttnn.transformer.concatenate_heads(heads).shape
    Shape([1, 32, 64])
    """
    out = concat_heads_output(op_name, input_tensor, _concatenate_heads_golden,
                              memory_config, tt_nn_only)
    if input_tensor.device() is not None and input_tensor.layout == Layout.TILE:
        # TT-NN's ConcatenateHeads is NLPConcatHeadsDeviceOperation's program under its own name
        device_work.launch_after(out, True, input_tensor, transformer_programs.concat_heads_program(
            input_tensor, out_sharded=out.is_sharded(), name="ConcatenateHeads"))
    return out


def _attention_softmax_golden(t, *_, head_size=None, attention_mask=None, **__):
    x = t.float() * (1 / math.sqrt(head_size) if head_size is not None else 1.0)
    return torch.softmax(x if attention_mask is None else x + attention_mask.float(), -1)


# The example each op's docstring ends with (tests/test_doctests.py runs it, with torch, ttnn and an open device
# given): the op on a small tensor, against its own golden function.
_ATTENTION_SOFTMAX_EXAMPLE = """

    >>> x = ttnn.from_torch(torch.rand(1, 2, 32, 32), layout=ttnn.TILE, device=device)
    >>> expected = {op}.golden_function(x.to_torch(), head_size=64)
    >>> torch.allclose({op}(x, head_size=64).to_torch(), expected, atol=1e-6)
    True
"""


def _attention_softmax(name: str, in_place: bool):
    def op(input_tensor: Tensor, *, head_size: int | None = None, attention_mask: Tensor | None = None,
           causal_mask: bool = False, memory_config: MemoryConfig | None = None, **tt_nn_only) -> Tensor:
        op_name = f"ttnn.transformer.{name}"
        if tt_nn_only:
            check_tt_nn_only(op_name, tt_nn_only)
        ins = device_inputs(op_name, input_tensor, attention_mask)
        x = values(input_tensor, op_name)
        mask = values(attention_mask, op_name) if attention_mask is not None else None
        if mask is not None and not broadcasts(x.shape, mask.shape):
            raise ValueError(f"{op_name}: attention_mask shape {list(mask.shape)} does not broadcast to the "
                             f"scores' {list(x.shape)}")
        r = _attention_softmax_golden(x, head_size=head_size, attention_mask=mask)
        if in_place and memory_config is not None and memory_config != input_tensor.memory_config():
            raise ValueError(f"{op_name} writes into its input, which is in {input_tensor.memory_config()!r}; "
                             f"drop memory_config= or use ttnn.transformer.attention_softmax")
        program_config = tt_nn_only.get("program_config")
        if in_place and isinstance(program_config, SoftmaxShardedMultiCoreProgramConfig) \
                and input_tensor.is_sharded() and attention_mask is not None:
            # scale_mask_softmax_in_place's sharded factory, numeric_stable as attention_softmax_ asks
            config = tt_nn_only.get("compute_kernel_config")
            program = normalization_programs.sharded_softmax_program(
                input_tensor, input_tensor.dtype, program_config, mask=attention_mask, causal_mask=causal_mask,
                fp32_dest_acc_en=bool(getattr(config, "fp32_dest_acc_en", False)))
        elif not input_tensor.is_sharded():
            # TT-NN's attention_softmax is scale_mask_softmax(_in_place): the interleaved factory, with the mask's
            # CBs when a mask is given
            program = in_place_softmax_program(input_tensor, attention_mask, tt_nn_only)
        else:
            program = None  # a sharded input without a sharded program config: not modelled
        if in_place:
            if program is not None:  # launched before the write, so CBs that clash leave the scores as they were
                device_work.launch(input_tensor.device(), program)
            input_tensor._write(r)
            return input_tensor
        out = output(r, input_tensor, ins, op_name=op_name, memory_config=memory_config)
        device_work.launch_after(out, True, input_tensor, program)
        return out

    # causal_mask says the mask is a full [.., S, S] one rather than one row per key; either is added.
    op.__doc__ = "softmax(scores / sqrt(head_size) + attention_mask) over the last dim" + (
        ", written into the input tensor, which it returns." if in_place else ".") + _ATTENTION_SOFTMAX_EXAMPLE.format(
        op=f"ttnn.transformer.{name}")
    return register_op(f"ttnn.transformer.{name}", golden=_attention_softmax_golden)(op)


attention_softmax = _attention_softmax("attention_softmax", in_place=False)
attention_softmax_ = _attention_softmax("attention_softmax_", in_place=True)


# torch's CPU flash attention, the kernel F.scaled_dot_product_attention runs, called for its log-sum-exp as well:
# two key ranges' results then merge as the kernel's online softmax merges its k chunks, and a sink joins the
# normalisation, with no [L, S] score matrix. A chunked prefill's last 2048 queries against 16K keys (8 heads,
# D 128) took 12.7 s through the score matrix, 3.6 s so (bench/README.md, "sdpa").
_flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu


def _attend(q, k, v, scale, *, is_causal=False, mask=None) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q @ k^T * scale + mask) @ v and its log-sum-exp, q [B, H, L, D], k, v [B, KVH, S, D] in float32;
    is_causal lets query i see keys 0..i. A query that sees no key gives 0."""
    B, H, L, _ = q.shape
    KVH, S = k.shape[1], k.shape[2]
    if not L or not S:  # the flash kernel stops the process on an empty sequence
        return q.new_zeros(B, H, L, v.shape[-1]), q.new_full((B, H, L), float("-inf"))
    G = H // KVH  # grouped-query attention: each key/value head serves G query heads
    if G > 1 and not is_causal:
        # the G heads' rows join their key/value head's rows, K and V read as they are: a copy of them for each
        # query head took 0.26 s a tensor in a 4096-key decode of 8 users, 16 heads on 4 (cProfile of nightly
        # test_sdpa_decode.py's paged llama3.1-a case: its decode took 1.85 s a call, 0.20 s now)
        q = q.reshape(B, KVH, G * L, q.shape[-1])
        if mask is not None:
            mask = torch.broadcast_to(mask, (B, H, L, S)).reshape(B, KVH, G * L, S)
        out, lse = _flash(q, k, v, attn_mask=mask, scale=scale)[:2]
        return out.reshape(B, H, L, out.shape[-1]), lse.reshape(B, H, L)
    if G == 1:
        return tuple(_flash(q, k, v, is_causal=is_causal, attn_mask=mask, scale=scale)[:2])
    # causal: a query row's place in its head is its position, so the heads keep their rows; a key/value head's G
    # query heads read it as a stride-0 view, one flash call a key/value head. For 2 users' 64 heads on one of
    # 1024 x 256 (unit sdpa/test_mla_prefill.py's MLA shape, halved) a copy of K and V for each head took 773 MB
    # more and 1.42 s, the views 261 MB and 1.17 s
    parts = []
    for j in range(KVH):
        heads = slice(j * G, (j + 1) * G)
        m = mask[..., heads, :, :] if mask is not None and mask.dim() > 2 and mask.shape[-3] == H else mask
        parts.append(_flash(q[:, heads], k[:, j: j + 1].expand(B, G, S, -1), v[:, j: j + 1].expand(B, G, S, -1),
                            is_causal=is_causal, attn_mask=m, scale=scale)[:2])
    if KVH == 1:
        return parts[0]
    return torch.cat([o for o, _ in parts], 1), torch.cat([lse for _, lse in parts], 1)


def _with_sink(out: torch.Tensor, lse: torch.Tensor, sink) -> torch.Tensor:
    """An attention sink (one logit per query head) joins the normalisation as an extra key whose weight is then
    dropped (gpt-oss's sinks): each row's weights shrink by Z / (Z + e^sink), Z = e^lse."""
    if sink is None:
        return out
    return out * torch.sigmoid(lse - sink.float().reshape(1, -1, 1))[..., None]


def _sdpa_golden(q, k, v, *_, attn_mask=None, is_causal=True, scale=None, sliding_window_size=None,
                 attention_sink=None, **__):
    q, k, v = q.float(), k.float(), v.float()
    scale = scale if scale is not None else 1 / math.sqrt(q.shape[-1])
    mask = attn_mask.float() if attn_mask is not None else None
    if is_causal and sliding_window_size is not None:  # query i sees keys i - window + 1 .. i
        L, S = q.shape[-2], k.shape[-2]
        hidden = torch.ones(L, S, dtype=torch.bool)
        hidden = hidden.triu(1) | hidden.tril(-sliding_window_size)
        mask, is_causal = torch.zeros(L, S).masked_fill(hidden, float("-inf")), False
    out, lse = _attend(q, k, v, scale, is_causal=is_causal, mask=mask)
    return _with_sink(out, lse, attention_sink)


@register_op("ttnn.transformer.scaled_dot_product_attention", golden=_sdpa_golden)
def scaled_dot_product_attention(input_tensor_q: Tensor, input_tensor_k: Tensor, input_tensor_v: Tensor, *,
                                 attn_mask: Tensor | None = None, is_causal: bool = True, scale: float | None = None,
                                 sliding_window_size: int | None = None, attention_sink: Tensor | None = None,
                                 memory_config: MemoryConfig | None = None, program_config=None,
                                 op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v with q [B, H, S, D], k and v [B, KVH, S, D].

    is_causal defaults to True, as in TT-NN (torch's default is False); pass is_causal=False
    with attn_mask. scale defaults to 1/sqrt(D). sliding_window_size=W (causal only) lets each
    query see itself and the W - 1 keys before it. attention_sink [1, H, 1, 1] adds one logit per
    head to each softmax's normalisation (gpt-oss).

    >>> q, k, v = (ttnn.from_torch(torch.rand(1, 2, 64, 32), layout=ttnn.TILE, device=device) for _ in range(3))
    >>> ttnn.transformer.scaled_dot_product_attention(q, k, v, is_causal=True).shape
    Shape([1, 2, 64, 32])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if program_config is not None:  # chunking changes where, not what, is computed: checked, then exact
        validate_sdpa(program_config, op_name)
    ins = device_inputs(op_name, input_tensor_q, input_tensor_k, input_tensor_v, attn_mask, attention_sink)
    q, k, v = (values(t, op_name) for t in (input_tensor_q, input_tensor_k, input_tensor_v))
    sink = _sink(op_name, attention_sink, q.shape[1])
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op_name}: give either is_causal=True or attn_mask, not both; pass is_causal=False")
    if (q.dim() != 4 or k.shape != v.shape or k.dim() != 4 or q.shape[0] != k.shape[0]
            or q.shape[-1] != k.shape[-1] or q.shape[1] % k.shape[1]):
        raise ValueError(
            f"{op_name}: shapes q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)} must be q [B, H, S, D] "
            f"and k, v [B, KVH, S, D] with H a multiple of KVH"
        )
    _check_window(op_name, sliding_window_size, is_causal)
    mask = values(attn_mask, op_name) if attn_mask is not None else None
    r = _sdpa_golden(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale, sliding_window_size=sliding_window_size,
                     attention_sink=sink)
    out = output(r, input_tensor_q, ins, op_name=op_name, memory_config=memory_config)
    if input_tensor_q.device() is not None and input_tensor_q.layout == Layout.TILE and not input_tensor_q.is_sharded():
        config = tt_nn_only.get("compute_kernel_config")
        device_work.launch_after(out, True, input_tensor_q, transformer_programs.sdpa_program(
            input_tensor_q, input_tensor_k, input_tensor_v, out.dtype, is_causal=is_causal, mask=attn_mask,
            sink=attention_sink, program_config=program_config,
            fp32_dest_acc_en=bool(getattr(config, "fp32_dest_acc_en", False))))
    return out


def _sink(op_name: str, attention_sink, n_heads: int):
    if attention_sink is None:
        return None
    sink = values(attention_sink, op_name)
    if sink.numel() != n_heads:
        raise ValueError(f"{op_name}: attention_sink shape {list(sink.shape)} must hold one value per query head "
                         f"([1, {n_heads}, 1, 1])")
    return sink


def _decode_sink(op_name: str, attention_sink, q: torch.Tensor, scale):
    """A decode's sink logits, one per query head. TT-NN's form is a [padded heads, 32] bfloat16 tile whose column 0
    holds each head's logit (sdpa_decode_device_operation.cpp's checks; nightly test_sdpa_decode_sink.py pads it so),
    and the kernel applies the softmax scale to it as to the scores (sdpa_flash_decode.cpp's
    sub_exp_block<scale_fp32>(cb_attention_sink, ...)): the logit that joins the softmax is sink * scale. Another
    shape is read as the prefill's [1, H, 1, 1] logits, unscaled, as device_sim took it before."""
    if attention_sink is None or len(attention_sink.shape) != 2 or attention_sink.shape[-1] != 32:
        return _sink(op_name, attention_sink, q.shape[2])
    sink = values(attention_sink, op_name)
    heads = q.shape[2]
    if attention_sink.padded_shape[0] != -(-heads // 32) * 32 and sink.shape[0] != heads:
        raise ValueError(f"{op_name}: attention_sink {list(sink.shape)} must have the same padded num heads as Q "
                         f"({heads}); give a [{heads}, 32] tensor with each head's logit in column 0")
    return sink[:heads, 0].float() * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))


def _check_window(op_name: str, window, is_causal: bool) -> None:
    if window is not None and (not is_causal or window < 1):
        raise ValueError(f"{op_name}: sliding_window_size={window} needs is_causal=True and a window >= 1")



# -- decode: one new token per user against its KV cache ----------------------------------------

def _positions(cur_pos, cur_pos_tensor, B: int, op_name: str) -> torch.Tensor:
    pos = cur_pos_tensor.reshape(-1).long() if cur_pos_tensor is not None else torch.tensor(list(cur_pos)).long()
    if pos.numel() != B:
        raise ValueError(f"{op_name}: {pos.numel()} positions given for {B} users; give cur_pos (a list) or "
                         f"cur_pos_tensor with one position per user")
    return pos


def _sdpa_decode_golden(q, k, v, *_, is_causal=True, attn_mask=None, cur_pos=(), cur_pos_tensor=None, scale=None,
                        sliding_window_size=None, attention_sink=None, share_cache=None, **__):
    # q [1, B, H, D]; k, v [B, KVH, S, D] (share_cache: [1, KVH, S, D]) -> [1, B, H, D]: each user's heads are
    # one query row against its cache
    q, k, v = q[0].float()[:, :, None], k.float(), v.float()
    B, H, _, D = q.shape
    if share_cache:
        k, v = k.expand(B, *k.shape[1:]), v.expand(B, *v.shape[1:])
    if is_causal:
        pos = _positions(cur_pos, cur_pos_tensor, B, "ttnn.transformer.scaled_dot_product_attention_decode")
        # the keys past every user's position are masked for all: the attention stops at the furthest one
        k, v = k[:, :, : int(pos.max()) + 1], v[:, :, : int(pos.max()) + 1]
        s = torch.arange(k.shape[2])
        seen = s[None] <= pos[:, None]
        if sliding_window_size is not None:
            seen &= s[None] > pos[:, None] - sliding_window_size
        # TT-NN skips a user at position -1: it sees no key, and its output rows are left as zeros here
        mask = torch.zeros(seen.shape).masked_fill(~seen, float("-inf"))[:, None, None]
    else:
        mask = attn_mask.float().reshape(-1, H, 1, attn_mask.shape[-1])
    out, lse = _attend(q, k, v, scale if scale is not None else 1 / math.sqrt(D), mask=mask)
    return _with_sink(out, lse, attention_sink)[:, :, 0].unsqueeze(0)


def _decode_checks(op_name, q, k, v, is_causal, attn_mask, cur_pos, cur_pos_tensor, window):
    if (q.dim() != 4 or q.shape[0] != 1 or k.dim() != 4 or k.shape != v.shape or k.shape[0] != q.shape[1]
            or k.shape[-1] != q.shape[-1] or q.shape[2] % k.shape[1]):
        raise ValueError(f"{op_name}: shapes q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)} must be "
                         f"q [1, B, H, D] and k, v [B, KVH, S, D] with H a multiple of KVH")
    _check_window(op_name, window, is_causal)
    if is_causal:
        if attn_mask is not None:
            raise ValueError(f"{op_name}: give either is_causal=True or attn_mask, not both; pass is_causal=False")
        if (cur_pos_tensor is None) == (not cur_pos):
            raise ValueError(f"{op_name}: with is_causal=True give exactly one of cur_pos (a list) and cur_pos_tensor")
    elif (attn_mask is None or tuple(attn_mask.shape[-2:]) != (q.shape[2], k.shape[2])
          or attn_mask.shape[-3] not in (1, q.shape[1])):
        # sdpa_decode_device_operation.cpp checks the mask's heads and length only; a batch of 1 serves every user
        # (test_sdpa_decode.py's broadcast_mask_batch)
        raise ValueError(f"{op_name}: with is_causal=False give attn_mask [1, B, H, S] = "
                         f"{[1, q.shape[1], q.shape[2], k.shape[2]]} (or [1, 1, H, S] for every user), got "
                         f"{None if attn_mask is None else list(attn_mask.shape)}")


@register_op("ttnn.transformer.scaled_dot_product_attention_decode", golden=_sdpa_decode_golden)
def scaled_dot_product_attention_decode(input_tensor_q: Tensor, input_tensor_k: Tensor, input_tensor_v: Tensor, *,
                                        is_causal: bool = True, attn_mask: Tensor | None = None, cur_pos=(),
                                        cur_pos_tensor: Tensor | None = None, scale: float | None = None,
                                        sliding_window_size: int | None = None, attention_sink: Tensor | None = None,
                                        memory_config: MemoryConfig | None = None, share_cache: bool | None = None,
                                        op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """One query token per user, q [1, B, H, D], against caches k, v [B, KVH, S, D]: [1, B, H, D].
    share_cache=True: every user reads one cache, k, v [1, KVH, S, D].

    Causal (the default): user b sees cache positions 0..cur_pos[b] (cur_pos a list, or cur_pos_tensor
    an int32 tensor [B]); -1 skips the user; sliding_window_size=W keeps the last W of them.
    is_causal=False takes an additive attn_mask [1, B, H, S] instead. attention_sink [1, H, 1, 1] as in
    scaled_dot_product_attention.

    >>> q = ttnn.from_torch(torch.rand(1, 2, 4, 32), layout=ttnn.TILE, device=device)  # [1, users, heads, D]
    >>> k, v = (ttnn.from_torch(torch.rand(2, 1, 64, 32), layout=ttnn.TILE, device=device) for _ in range(2))
    >>> ttnn.transformer.scaled_dot_product_attention_decode(q, k, v, cur_pos=[10, 40]).shape
    Shape([1, 2, 4, 32])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor_q, input_tensor_k, input_tensor_v, attn_mask, cur_pos_tensor,
                        attention_sink)
    q, k, v = (values(t, op_name) for t in (input_tensor_q, input_tensor_k, input_tensor_v))
    if share_cache:
        for name, t in (("K", k), ("V", v)):
            if t.shape[0] != 1:
                raise tt_fatal(f"{name.lower()}_shape[0] == 1", f"Share cache expects {name} to have batch size of 1, "
                               f"but got {t.shape[0]}\n{op_name}: give one cache [1, KVH, S, D] with share_cache=True",
                               where="device_sim/ops/transformer.py")
        k, v = (t.expand(q.shape[1], *t.shape[1:]) for t in (k, v))
    sink = _decode_sink(op_name, attention_sink, q, scale)
    mask = values(attn_mask, op_name) if attn_mask is not None else None
    pos_t = values(cur_pos_tensor, op_name) if cur_pos_tensor is not None else None
    _decode_checks(op_name, q, k, v, is_causal, mask, cur_pos, pos_t, sliding_window_size)
    r = _sdpa_decode_golden(q, k, v, is_causal=is_causal, attn_mask=mask, cur_pos=cur_pos, cur_pos_tensor=pos_t,
                            scale=scale, sliding_window_size=sliding_window_size, attention_sink=sink)
    out = output(r, input_tensor_q, ins, op_name=op_name, memory_config=memory_config)
    _launch_decode(out, input_tensor_q, input_tensor_k, input_tensor_v, None, is_causal=is_causal,
                   attn_mask=attn_mask, cur_pos_tensor=cur_pos_tensor, attention_sink=attention_sink,
                   sliding_window_size=sliding_window_size, tt_nn_only=tt_nn_only,
                   hashed=(scale, tuple(cur_pos), share_cache, None))
    return out


def _aligned_page(t: Tensor) -> int:
    """A ROW_MAJOR tensor's page (one row) in bytes, aligned as its buffer aligns pages (L1 16 B, DRAM 32 B)."""
    return device_work.aligned_page(t, t.shape[-1] * dtypes.ELEMENT_SIZE[t.dtype])


def _launch_decode(out: Tensor, q: Tensor, k: Tensor, v: Tensor, page_table: Tensor | None, *, is_causal, attn_mask,
                   cur_pos_tensor, attention_sink, sliding_window_size, tt_nn_only, hashed: tuple,
                   head_dim_v: int = 0) -> None:
    """SdpaDecodeDeviceOperation (device_sim.programs.sdpa_decode) for TILE caches on a device; others launch none
    (TT-NN refuses ROW_MAJOR caches). `hashed` is what its compute_program_hash reads beyond the program's CBs:
    (scale, the cur_pos list, share_cache, head_dim_v), to which the cur_pos tensor's logical shape is added (a [B]
    and a [B, 1] one take two entries); nightly test_sdpa_decode_cache.py holds each to a second entry. head_dim_v:
    multi-latent attention's V head size."""
    if q.device() is None or k.layout != Layout.TILE or v.layout != Layout.TILE:
        return
    config = tt_nn_only.get("program_config")
    kernel = tt_nn_only.get("compute_kernel_config")
    grid = getattr(config, "compute_with_storage_grid_size", None)
    grid = (grid.x, grid.y) if grid is not None else (q.device().config.grid_x, q.device().config.grid_y)
    _, batch, heads, head_dim = q.shape
    kv_heads, rows = k.padded_shape[1], k.padded_shape[2]
    factor = 1
    if head_dim_v and q.is_sharded():  # the factory splits a sharded Q's heads by its shard height (MLA only)
        factor = max(1, -(-heads // q.memory_config().shard_spec.shape[0]))
    chunk = getattr(config, "k_chunk_size", 0) or None  # None: sdpa_decode.cpp's default
    if page_table is not None:
        rows *= page_table.padded_shape[-1]  # blocks a user x block_size
        chunk = chunk or 0  # the paged form sizes chunks in its kernels
    program = sdpa_programs.sdpa_decode_program(
        batch=batch, q_heads=heads, head_dim=head_dim, kv_heads=kv_heads, seq_len=rows, q_dtype=q.dtype,
        k_dtype=k.dtype, v_dtype=v.dtype, out_dtype=out.dtype, grid=grid, is_causal=bool(is_causal),
        k_chunk_size=chunk, max_cores_per_head_batch=getattr(config, "max_cores_per_head_batch", None),
        fp32_dest_acc_en=bool(getattr(kernel, "fp32_dest_acc_en", False)),
        mask_dtype=attn_mask.dtype if attn_mask is not None else None, sink=attention_sink is not None,
        cur_pos_page=_aligned_page(cur_pos_tensor) if cur_pos_tensor is not None else 0,
        cur_pos_sharded=cur_pos_tensor is not None and cur_pos_tensor.is_sharded(),
        page_table_page=_aligned_page(page_table) if page_table is not None else 0,
        page_table_sharded=page_table is not None and page_table.is_sharded(),
        sliding_window=sliding_window_size or 0, out_sharded=out.is_sharded(), head_dim_v=head_dim_v,
        q_heads_parallel_factor=factor)
    pos_shape = tuple(cur_pos_tensor.shape) if cur_pos_tensor is not None else None
    device_work.launch_after(out, True, q, program, (*hashed, pos_shape))


def _unpage(cache: torch.Tensor, page_table: torch.Tensor) -> torch.Tensor:
    """A paged cache [num_blocks, KVH, block_size, D] as one [B, KVH, blocks_per_user * block_size, D]."""
    blocks = cache[page_table.long()]  # [B, blocks_per_user, KVH, block_size, D]
    return blocks.permute(0, 2, 1, 3, 4).flatten(2, 3)


def _paged_sdpa_decode_golden(q, k, v, page_table_tensor, *_, **kwargs):
    return _sdpa_decode_golden(q, _unpage(k, page_table_tensor), _unpage(v, page_table_tensor), **kwargs)


@register_op("ttnn.transformer.paged_scaled_dot_product_attention_decode", golden=_paged_sdpa_decode_golden)
def paged_scaled_dot_product_attention_decode(input_tensor_q: Tensor, input_tensor_k: Tensor,
                                              input_tensor_v: Tensor, page_table_tensor: Tensor, *,
                                              is_causal: bool = True, attn_mask: Tensor | None = None,
                                              cur_pos_tensor: Tensor | None = None, scale: float | None = None,
                                              sliding_window_size: int | None = None,
                                              attention_sink: Tensor | None = None,
                                              memory_config: MemoryConfig | None = None,
                                              op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """scaled_dot_product_attention_decode over paged caches k, v [num_blocks, KVH, block_size, D], user b's
    position p living in block page_table_tensor[b, p // block_size] (see ttnn.experimental.paged_update_cache).

    >>> q = ttnn.from_torch(torch.rand(1, 2, 4, 32), layout=ttnn.TILE, device=device)
    >>> k, v = (ttnn.from_torch(torch.rand(4, 1, 32, 32), layout=ttnn.TILE, device=device) for _ in range(2))
    >>> table = ttnn.from_torch(torch.tensor([[3, 0], [1, 2]], dtype=torch.int32), ttnn.int32, device=device)
    >>> pos = ttnn.from_torch(torch.tensor([40, 7], dtype=torch.int32), ttnn.int32, device=device)
    >>> ttnn.transformer.paged_scaled_dot_product_attention_decode(q, k, v, table, cur_pos_tensor=pos).shape
    Shape([1, 2, 4, 32])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor_q, input_tensor_k, input_tensor_v, page_table_tensor, attn_mask,
                        cur_pos_tensor, attention_sink)
    q, table = values(input_tensor_q, op_name), values(page_table_tensor, op_name)
    k, v = held(input_tensor_k, op_name), held(input_tensor_v, op_name)  # widened below, once gathered
    if table.dim() != 2 or table.shape[0] != q.shape[1] or k.dim() != 4 or table.is_floating_point() \
            or (table.numel() and not 0 <= int(table.min()) <= int(table.max()) < k.shape[0]):
        raise ValueError(f"{op_name}: page_table_tensor {list(table.shape)} must be an integer [B, blocks_per_user] "
                         f"table of block ids below {k.shape[0] if k.dim() else '?'} for q {list(q.shape)}")
    mask = values(attn_mask, op_name) if attn_mask is not None else None
    pos_t = values(cur_pos_tensor, op_name) if cur_pos_tensor is not None else None
    if is_causal and pos_t is not None and pos_t.numel() == table.shape[0]:
        # only the blocks up to the furthest user's position are read (the rest are masked for every user)
        table = table[:, : max(1, -(-(int(pos_t.max()) + 1) // k.shape[2]))]
    k, v = _unpage(k, table).float(), _unpage(v, table).float()
    _decode_checks(op_name, q, k, v, is_causal, mask, (), pos_t, sliding_window_size)
    r = _sdpa_decode_golden(q, k, v, is_causal=is_causal, attn_mask=mask, cur_pos_tensor=pos_t, scale=scale,
                            sliding_window_size=sliding_window_size,
                            attention_sink=_decode_sink(op_name, attention_sink, q, scale))
    out = output(r, input_tensor_q, ins, op_name=op_name, memory_config=memory_config)
    _launch_decode(out, input_tensor_q, input_tensor_k, input_tensor_v, page_table_tensor, is_causal=is_causal,
                   attn_mask=attn_mask, cur_pos_tensor=cur_pos_tensor, attention_sink=attention_sink,
                   sliding_window_size=sliding_window_size, tt_nn_only=tt_nn_only, hashed=(scale, (), None, None))
    return out


# -- chunked prefill: a chunk of the prompt against the paged cache that holds everything before it --------

def _chunked_sdpa_golden(q, k, v, page_table_tensor, chunk_start_idx=None, *_, chunk_start_idx_tensor=None,
                         scale=None, **__):
    start = int(chunk_start_idx_tensor.reshape(-1)[0]) if chunk_start_idx_tensor is not None else chunk_start_idx
    L = q.shape[-2]
    q, k, v = q.float(), _unpage(k, page_table_tensor).float(), _unpage(v, page_table_tensor).float()
    scale = scale if scale is not None else 1 / math.sqrt(q.shape[-1])
    # Query i sits at position start + i: it sees every key before the chunk, and the chunk's keys causally. The
    # two ranges merge by their log-sum-exps, as the kernel's online softmax merges k chunks.
    out, lse = _attend(q, k[..., start: start + L, :], v[..., start: start + L, :], scale, is_causal=True)
    if start:
        before, lse_before = _attend(q, k[..., :start, :], v[..., :start, :], scale)
        total = torch.logaddexp(lse, lse_before)
        out = out * (lse - total).exp()[..., None] + before * (lse_before - total).exp()[..., None]
    return out


@register_op("ttnn.transformer.chunked_scaled_dot_product_attention", golden=_chunked_sdpa_golden)
def chunked_scaled_dot_product_attention(input_tensor_q: Tensor, input_tensor_k: Tensor, input_tensor_v: Tensor,
                                         page_table_tensor: Tensor, chunk_start_idx: int | None = None, *,
                                         chunk_start_idx_tensor: Tensor | None = None, scale: float | None = None,
                                         memory_config: MemoryConfig | None = None, program_config=None,
                                         op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Causal attention of a prompt chunk q [B, H, L, D] at positions chunk_start_idx.. against paged caches
    k, v [num_blocks, KVH, block_size, D] that already hold positions 0..chunk_start_idx + L - 1: [B, H, L, D].

    >>> q = ttnn.from_torch(torch.rand(1, 2, 64, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> k, v = (ttnn.from_torch(torch.rand(8, 1, 32, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    ...         for _ in range(2))  # 8 blocks of 32 tokens
    >>> table = ttnn.from_torch(torch.arange(8, dtype=torch.int32)[None], ttnn.int32, device=device)
    >>> ttnn.transformer.chunked_scaled_dot_product_attention(q, k, v, table, 64).shape  # q is tokens 64..127
    Shape([1, 2, 64, 32])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    return _chunked(op_name, input_tensor_q, input_tensor_k, input_tensor_v, page_table_tensor, chunk_start_idx,
                    chunk_start_idx_tensor, scale, memory_config, program_config, tt_nn_only)


def _chunked(op_name, input_tensor_q, input_tensor_k, input_tensor_v, page_table_tensor, chunk_start_idx,
             chunk_start_idx_tensor, scale, memory_config, program_config, tt_nn_only, head_dim_v=None) -> Tensor:
    """chunked_scaled_dot_product_attention's checks, math and program; head_dim_v keeps V's first columns (MLA)."""
    ins = device_inputs(op_name, input_tensor_q, input_tensor_k, input_tensor_v, page_table_tensor,
                        chunk_start_idx_tensor)
    q, k, v, table = (values(t, op_name) for t in (input_tensor_q, input_tensor_k, input_tensor_v, page_table_tensor))
    start_t = values(chunk_start_idx_tensor, op_name) if chunk_start_idx_tensor is not None else None
    if (chunk_start_idx is None) == (start_t is None):
        raise ValueError(f"{op_name}: give exactly one of chunk_start_idx (an int) and chunk_start_idx_tensor")
    start = int(start_t.reshape(-1)[0]) if start_t is not None else chunk_start_idx
    if (q.dim() != 4 or k.dim() != 4 or k.shape != v.shape or table.dim() != 2 or table.shape[0] != q.shape[0]
            or q.shape[1] % k.shape[1] or q.shape[-1] != k.shape[-1]):
        raise ValueError(f"{op_name}: shapes q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)}, page table "
                         f"{list(table.shape)} must be q [B, H, L, D], k, v [num_blocks, KVH, block_size, D] and "
                         f"page_table_tensor [B, blocks_per_user]")
    if start < 0 or start + q.shape[-2] > table.shape[1] * k.shape[2]:
        raise IndexError(f"{op_name}: positions {start}..{start + q.shape[-2] - 1} do not fit a user's "
                         f"{table.shape[1]} blocks of {k.shape[2]}")
    if program_config is not None:
        validate_sdpa(program_config, op_name)
    q_chunk = program_config.q_chunk_size if program_config is not None else 32
    if start_t is None and start % q_chunk:
        # sdpa_device_operation.cpp: the kernels place the chunk in whole q chunks (chunk_start_idx / q_chunk_size)
        raise tt_fatal("operation_attributes.chunk_start_idx.value() % q_chunk_size == 0",
                       f"chunk_start_idx must be a multiple of q_chunk_size. Got chunk_start_idx: {start}, "
                       f"q_chunk_size: {q_chunk}\n{op_name}: start the chunk at a multiple of {q_chunk}, or give "
                       f"an SDPAProgramConfig whose q_chunk_size divides {start}",
                       where="device_sim/ops/transformer.py")
    launch = input_tensor_q.device() is not None and input_tensor_q.layout == Layout.TILE \
        and not input_tensor_q.is_sharded()
    if launch:  # the page-table CB holds one row: the buffer's aligned page, or blocks_per_user int32 for a start
        # tensor, which the factory requires to be a multiple of 32 B (checked before the output exists)
        page = _aligned_page(page_table_tensor) if start_t is None else 4 * tuple(page_table_tensor.padded_shape)[-1]
        if page % 32:
            raise tt_fatal("page_table_stick_size % 32 == 0", f"page table stick size must be a multiple of 32\n"
                           f"{op_name}: a page table of {table.shape[1]} int32 blocks a user is {page} B a row; pad "
                           f"it to a multiple of 8 blocks", where="device_sim/ops/transformer.py")
    r = _chunked_sdpa_golden(q, k, v, table, start, scale=scale)[..., :head_dim_v]
    out = output(r, input_tensor_q, ins, op_name=op_name, memory_config=memory_config)
    if launch:  # SDPAOperation's factory in chunked mode: causal over the cache's first start + L positions
        config = tt_nn_only.get("compute_kernel_config")
        device_work.launch_after(out, True, input_tensor_q, transformer_programs.sdpa_program(
            input_tensor_q, input_tensor_k, input_tensor_v, out.dtype, is_causal=True, program_config=program_config,
            fp32_dest_acc_en=bool(getattr(config, "fp32_dest_acc_en", False)), page_table_page=page,
            start_tensor=start_t is not None),
            # compute_program_hash reads the scale, and a scalar chunk_start_idx (it sets the keys' length), not a
            # start tensor's value: one entry for every start then (nightly test_sdpa_chunked.py)
            (scale, start if start_t is None else None))
    return out


# -- joint: attention over two sequences joined (the image and text tokens of an MM-DiT) -----------------------

def _joint_sdpa_golden(q, k, v, joint_q, joint_k, joint_v, *_, scale=None, **__):
    n = q.shape[-2]
    out = _sdpa_golden(*(torch.cat(pair, -2) for pair in ((q, joint_q), (k, joint_k), (v, joint_v))),
                       is_causal=False, scale=scale)
    return out[..., :n, :], out[..., n:, :]


def _joint_checks(op_name: str, tensors: tuple, joint_strategy, program_config) -> None:
    """joint_sdpa_device_operation.cpp's validate, in its words: "rear", one dtype, tilized bfloat16 / bfloat8_b
    inputs in DRAM, matching batch, heads and head size, unpadded but for the sequence."""
    def need(ok: bool, condition: str, message: str) -> None:
        if not ok:
            raise tt_fatal(condition, f"{message}\n{op_name}", where="device_sim/ops/transformer.py")

    need(joint_strategy == "rear", 'args.joint_strategy == "rear"', f"Joint strategy must be 'rear'. Got: "
         f"{joint_strategy}")
    dtype = tensors[0].dtype
    for t in tensors:
        need(t.dtype == dtype, "tensor.dtype() == dtype", f"All tensors must have the same dtype. Expected {dtype}, "
             f"got {t.dtype}")
    for t in tensors:
        need(t.device() is not None, "tensor.storage_type() == StorageType::DEVICE",
             "Operands to Joint SDPA need to be on device")
        need(t.layout == Layout.TILE, "tensor.layout() == Layout::TILE", "Inputs to Joint SDPA must be tilized")
        need(t.dtype in (DataType.BFLOAT16, DataType.BFLOAT8_B), "tensor.dtype() == DataType::BFLOAT16 || ...",
             "Inputs to Joint SDPA must be BF16 or BF8")
        need(t.memory_config().buffer_type.name == "DRAM", "buffer_type == BufferType::DRAM",
             "Operands to Joint SDPA need to be in DRAM")
    shapes = [tuple(t.shape) for t in tensors]
    need(all(len(s) == 4 for s in shapes), "rank == 4", f"Joint SDPA takes [b, nh, seq, dh] tensors, got {shapes}")
    q, k, v, jq, jk, jv = shapes
    need(k[0] == q[0] == v[0] and jk[0] == jq[0] == jv[0] and q[0] == jq[0], "k_shape[0] == q_shape[0] && ...",
         f"Batch sizes must match. Got Q: {q[0]}, K: {k[0]}, V: {v[0]}, joint Q: {jq[0]}, K: {jk[0]}, V: {jv[0]}")
    need(len({q[3], k[3], v[3], jq[3], jk[3], jv[3]}) == 1, "k_shape[3] == q_shape[3] && ...",
         f"Head dimensions must match. Got Q: {q[3]}, K: {k[3]}, V: {v[3]}, joint Q: {jq[3]}, K: {jk[3]}, V: {jv[3]}")
    need(q[1] == k[1] == v[1] == jq[1] == jk[1] == jv[1], "nqh == nkv && joint_nkv == nkv",
         f"Q num_heads must be equal to K num_heads. Got Q: {q[1]}, K: {k[1]}, V: {v[1]}, joint Q: {jq[1]}, "
         f"K: {jk[1]}, V: {jv[1]}")
    need(k[2] == v[2] and jk[2] == jv[2], "k_shape[2] == v_shape[2]",
         f"K and V must have the same sequence length. Got K: {k[2]}, V: {v[2]}, joint K: {jk[2]}, V: {jv[2]}")
    for t in tensors:
        need(tuple(t.padded_shape)[:2] == tuple(t.shape)[:2] and t.padded_shape[3] == t.shape[3],
             "logical_shape[i] == padded_shape[i]", "Padding is not supported on the batch, num_heads or head_dim "
             f"dimension (got {list(t.shape)}, padded {list(t.padded_shape)})")


@register_op("ttnn.transformer.joint_scaled_dot_product_attention", golden=_joint_sdpa_golden)
def joint_scaled_dot_product_attention(input_tensor_q: Tensor, input_tensor_k: Tensor, input_tensor_v: Tensor,
                                       joint_tensor_q: Tensor, joint_tensor_k: Tensor, joint_tensor_v: Tensor, *,
                                       joint_strategy: str, program_config, scale: float | None = None,
                                       op_name: str = OWN_NAME, **tt_nn_only) -> tuple[Tensor, Tensor]:
    """Non-causal attention over two sequences joined (joint_strategy="rear": the joint tokens after the others):
    q, k, v [b, nh, N, dh] and joint_q, joint_k, joint_v [b, nh, L, dh] attend as one sequence of N + L, and the
    output comes back split, [b, nh, N, dh] and [b, nh, L, dh], in DRAM. A sequence's tile padding is masked out.

    >>> x, j = (ttnn.from_torch(torch.rand(1, 2, n, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    ...         for n in (64, 15))
    >>> config = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=32, k_chunk_size=32)
    >>> out, joint_out = ttnn.transformer.joint_scaled_dot_product_attention(x, x, x, j, j, j, joint_strategy="rear",
    ...                                                                      program_config=config)
    >>> out.shape, joint_out.shape
    (Shape([1, 2, 64, 32]), Shape([1, 2, 15, 32]))
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    tensors = (input_tensor_q, input_tensor_k, input_tensor_v, joint_tensor_q, joint_tensor_k, joint_tensor_v)
    ins = device_inputs(op_name, *tensors)
    _joint_checks(op_name, tensors, joint_strategy, program_config)
    validate_sdpa(program_config, op_name)
    r, joint_r = _joint_sdpa_golden(*(values(t, op_name) for t in tensors), scale=scale)
    # both outputs take the op's DEFAULT_OUTPUT_MEMORY_CONFIG (DRAM interleaved), as joint_sdpa.cpp gives them
    out = output(r, input_tensor_q, ins, op_name=op_name, memory_config=DRAM_MEMORY_CONFIG)
    joint_out = output(joint_r, joint_tensor_q, ins, op_name=op_name, memory_config=DRAM_MEMORY_CONFIG)
    program = transformer_programs.joint_sdpa_program(input_tensor_q, joint_tensor_q, input_tensor_k,
                                                      input_tensor_v, out.dtype, program_config=program_config)
    try:
        device_work.launch(input_tensor_q.device(), program, scale)
    except RuntimeError:
        out._free()
        joint_out._free()
        raise
    return out, joint_out


# -- windowed: block-diagonal attention inside windows (vision transformers' window attention) -------------

def _windowed_sdpa_golden(q, k, v, cu_window_seqlens, *_, scale=None, **__):
    bounds = [int(b) for b in cu_window_seqlens.reshape(-1).tolist()]
    window = torch.zeros(k.shape[-2], dtype=torch.long)
    for i, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        window[lo:hi] = i
    mask = torch.zeros(q.shape[-2], k.shape[-2]).masked_fill(window[: q.shape[-2], None] != window[None], float("-inf"))
    return _sdpa_golden(q, k, v, attn_mask=mask, is_causal=False, scale=scale)


@register_op("ttnn.transformer.windowed_scaled_dot_product_attention", golden=_windowed_sdpa_golden)
def windowed_scaled_dot_product_attention(input_tensor_q: Tensor, input_tensor_k: Tensor, input_tensor_v: Tensor,
                                          cu_window_seqlens: Tensor, *, scale: float | None = None,
                                          memory_config: MemoryConfig | None = None, program_config=None,
                                          op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Each token attends only to the tokens of its own window, windows given by their cumulative bounds
    cu_window_seqlens [0, w1, w1 + w2, ..., S] (an integer tensor); not causal. q [B, H, S, D], k, v [B, KVH, S, D].

    >>> q = ttnn.from_torch(torch.rand(1, 2, 64, 32), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> windows = ttnn.from_torch(torch.tensor([0, 16, 40, 64], dtype=torch.int32), ttnn.int32, device=device)
    >>> ttnn.transformer.windowed_scaled_dot_product_attention(q, q, q, windows).shape
    Shape([1, 2, 64, 32])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor_q, input_tensor_k, input_tensor_v, cu_window_seqlens)
    if input_tensor_q.device() is not None:
        windowed_sdpa_checks.check_windowed_inputs(op_name, input_tensor_q, input_tensor_k, input_tensor_v,
                                                   cu_window_seqlens)
    q, k, v, cu = (values(t, op_name) for t in (input_tensor_q, input_tensor_k, input_tensor_v, cu_window_seqlens))
    bounds = cu.reshape(-1).tolist()
    if (q.dim() != 4 or k.shape != v.shape or k.dim() != 4 or q.shape[1] % k.shape[1] or q.shape[-2] != k.shape[-2]
            or cu.is_floating_point() or len(bounds) < 2 or bounds[0] != 0 or bounds[-1] != k.shape[-2]
            or any(a >= b for a, b in zip(bounds, bounds[1:]))):
        raise ValueError(f"{op_name}: q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)} must be [B, H, S, D] "
                         f"and [B, KVH, S, D], and cu_window_seqlens an increasing integer list from 0 to S "
                         f"(got {bounds})")
    if program_config is not None:
        validate_sdpa(program_config, op_name)
    r = _windowed_sdpa_golden(q, k, v, cu, scale=scale)
    out = output(r, input_tensor_q, ins, op_name=op_name, memory_config=memory_config)
    if input_tensor_q.device() is not None:  # the inputs TT-NN's validate takes (checked above)
        device_work.launch_after(out, True, input_tensor_q, sdpa_windowed.windowed_sdpa_program(
            input_tensor_q, input_tensor_k, input_tensor_v, cu_window_seqlens, out.dtype,
            program_config=program_config))
    return out


# -- multi-latent attention (DeepSeek's MLA): V is the first head_dim_v columns of K ----------------------------
# sdpa.cpp / sdpa_decode.cpp run the same device operations with use_mla and head_dim_v: with no V tensor the kernels
# read V from K's buffer. softmax(q k^T) @ K's first head_dim_v columns is the first head_dim_v columns of
# softmax(q k^T) @ K, so the attentions below run with V = K and keep those columns (torch's flash kernel, which
# they call, wants Q, K and V of one head size). A V tensor of another width is padded with zero columns to K's.

def _mla_v(op_name: str, k: torch.Tensor, v: torch.Tensor | None, head_dim_v: int) -> torch.Tensor:
    if v is None:
        return k
    if v.shape[-1] != head_dim_v or v.shape[:-1] != k.shape[:-1]:
        raise tt_fatal("v_shape[3] == head_dim_v", f"Head dimension of V must be equal to head_dim_v, got "
                       f"{v.shape[-1]} and {head_dim_v}\n{op_name}: give V as K's shape with head_dim_v columns "
                       f"(K {list(k.shape)}), or no V", where="device_sim/ops/transformer.py")
    return torch.nn.functional.pad(v, (0, k.shape[-1] - head_dim_v))


def _mla_checks(op_name: str, q: Tensor, k: Tensor, v: Tensor | None, head_dim_v, is_causal: bool, decode: bool):
    """sdpa(_decode)_device_operation.cpp's use_mla TT_FATALs, in their words."""
    def need(ok: bool, condition: str, message: str) -> None:
        if not ok:
            raise tt_fatal(condition, f"{message}\n{op_name}", where="device_sim/ops/transformer.py")

    if head_dim_v is None:
        raise TypeError(f"{op_name}() missing required argument 'head_dim_v' (V's head size, at most Q's)")
    if decode:
        need(is_causal, "operation_attributes.is_causal", "Multi-latent attention decode only tested for causal!")
    for t in (q, k, v):
        if t is not None:
            need(t.dtype in (DataType.BFLOAT16, DataType.BFLOAT8_B, DataType.BFLOAT4_B),
                 "input_tensor.dtype() == DataType::BFLOAT16 || ...", f"Unsupported data type {t.dtype}.")
    for t in (k, v):
        if t is not None:
            need(t.layout == Layout.TILE, "input_tensor.layout() == Layout::TILE",
                 "Inputs to SDPA must be tilized except for Q")
    dq, dk = q.padded_shape[-1], k.padded_shape[-1]
    need(dq == dk, "q_shape[3] == k_shape[3]", f"Head dimension of Q must be equal to head dim of K, got {dq} and {dk}")
    need(int(head_dim_v) <= dq, "head_dim_v <= q_shape[3]",
         f"Head dimension of V must be less than or equal to head dim of Q, got {head_dim_v} and {dq}")


def _mla_decode_golden(q, k, v=None, head_dim_v=None, *_, **kwargs):
    return _sdpa_decode_golden(q, k, _mla_v("ttnn.transformer.flash_multi_latent_attention_decode", k, v,
                                            head_dim_v), **kwargs)[..., :head_dim_v]


def _paged_mla_decode_golden(q, k, v=None, head_dim_v=None, page_table_tensor=None, *_, **kwargs):
    k = _unpage(k, page_table_tensor)
    return _mla_decode_golden(q, k, None if v is None else _unpage(v, page_table_tensor), head_dim_v, **kwargs)


def _mla_decode(op_name, q_t, k_t, v_t, head_dim_v, table_t, is_causal, cur_pos, cur_pos_t, sink_t, scale, window,
                memory_config, tt_nn_only) -> Tensor:
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    _mla_checks(op_name, q_t, k_t, v_t, head_dim_v, is_causal, decode=True)
    head_dim_v = int(head_dim_v)
    ins = device_inputs(op_name, q_t, k_t, v_t, table_t, cur_pos_t, sink_t)
    q, k = values(q_t, op_name), values(k_t, op_name)
    v = values(v_t, op_name) if v_t is not None else None
    if table_t is not None:
        table = values(table_t, op_name)
        k, v = _unpage(k, table), None if v is None else _unpage(v, table)
    v = _mla_v(op_name, k, v, head_dim_v)
    pos_t = values(cur_pos_t, op_name) if cur_pos_t is not None else None
    _decode_checks(op_name, q, k, v, is_causal, None, cur_pos, pos_t, window)
    r = _sdpa_decode_golden(q, k, v, cur_pos=cur_pos, cur_pos_tensor=pos_t, scale=scale, sliding_window_size=window,
                            attention_sink=_decode_sink(op_name, sink_t, q, scale))[..., :head_dim_v]
    # the output spec's memory config: the given one, else DEFAULT_OUTPUT_MEMORY_CONFIG (DRAM interleaved)
    out = output(r, q_t, ins, op_name=op_name, memory_config=memory_config or DRAM_MEMORY_CONFIG)
    _launch_decode(out, q_t, k_t, v_t if v_t is not None else k_t, table_t, is_causal=is_causal, attn_mask=None,
                   cur_pos_tensor=cur_pos_t, attention_sink=sink_t, sliding_window_size=window,
                   tt_nn_only=tt_nn_only, hashed=(scale, tuple(cur_pos), None, head_dim_v), head_dim_v=head_dim_v)
    return out


@register_op("ttnn.transformer.flash_multi_latent_attention_decode", golden=_mla_decode_golden)
def flash_multi_latent_attention_decode(input_tensor_q: Tensor, input_tensor_k: Tensor,
                                        input_tensor_v: Tensor | None = None, head_dim_v: int | None = None, *,
                                        is_causal: bool = True, cur_pos=(), cur_pos_tensor: Tensor | None = None,
                                        attention_sink: Tensor | None = None, scale: float | None = None,
                                        sliding_window_size: int | None = None,
                                        memory_config: MemoryConfig | None = None,
                                        op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """scaled_dot_product_attention_decode with V the first head_dim_v columns of K (no V tensor), or a V of
    head_dim_v columns: q [1, B, H, D], k [B, KVH, S, D] -> [1, B, H, head_dim_v], causal only; in DRAM unless
    memory_config says otherwise.

    >>> q = ttnn.from_torch(torch.rand(1, 2, 4, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> k = ttnn.from_torch(torch.rand(2, 1, 64, 64), ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
    >>> ttnn.transformer.flash_multi_latent_attention_decode(q, k, head_dim_v=32, cur_pos=[10, 40]).shape
    Shape([1, 2, 4, 32])
    """
    return _mla_decode(op_name, input_tensor_q, input_tensor_k, input_tensor_v, head_dim_v, None, is_causal, cur_pos,
                       cur_pos_tensor, attention_sink, scale, sliding_window_size, memory_config, tt_nn_only)


@register_op("ttnn.transformer.paged_flash_multi_latent_attention_decode", golden=_paged_mla_decode_golden)
def paged_flash_multi_latent_attention_decode(input_tensor_q: Tensor, input_tensor_k: Tensor,
                                              input_tensor_v: Tensor | None = None, head_dim_v: int | None = None,
                                              page_table_tensor: Tensor | None = None, *, is_causal: bool = True,
                                              cur_pos_tensor: Tensor | None = None,
                                              attention_sink: Tensor | None = None, scale: float | None = None,
                                              sliding_window_size: int | None = None,
                                              memory_config: MemoryConfig | None = None,
                                              op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """flash_multi_latent_attention_decode over a paged cache k [num_blocks, KVH, block_size, D], as
    paged_scaled_dot_product_attention_decode reads one.

    >>> q = ttnn.from_torch(torch.rand(1, 2, 4, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> k = ttnn.from_torch(torch.rand(4, 1, 32, 64), ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
    >>> table = ttnn.from_torch(torch.tensor([[3, 0], [1, 2]], dtype=torch.int32), ttnn.int32, device=device)
    >>> pos = ttnn.from_torch(torch.tensor([40, 7], dtype=torch.int32), ttnn.int32, device=device)
    >>> ttnn.transformer.paged_flash_multi_latent_attention_decode(q, k, None, 32, table, cur_pos_tensor=pos).shape
    Shape([1, 2, 4, 32])
    """
    if page_table_tensor is None:
        raise TypeError(f"{op_name}() missing required argument 'page_table_tensor'")
    return _mla_decode(op_name, input_tensor_q, input_tensor_k, input_tensor_v, head_dim_v, page_table_tensor,
                       is_causal, (), cur_pos_tensor, attention_sink, scale, sliding_window_size, memory_config,
                       tt_nn_only)


def _mla_prefill_golden(q, k, head_dim_v, *_, attn_mask=None, is_causal=True, scale=None, **__):
    v = None if isinstance(head_dim_v, (int, float)) else head_dim_v
    width = int(head_dim_v) if v is None else v.shape[-1]
    return _sdpa_golden(q, k, _mla_v("ttnn.transformer.flash_mla_prefill", k, v, width), attn_mask=attn_mask,
                        is_causal=is_causal, scale=scale)[..., :width]


@register_op("ttnn.transformer.flash_mla_prefill", golden=_mla_prefill_golden)
def flash_mla_prefill(input_tensor_q: Tensor, input_tensor_k: Tensor, head_dim_v, *, attn_mask: Tensor | None = None,
                      is_causal: bool = True, scale: float | None = None, memory_config: MemoryConfig | None = None,
                      program_config=None, op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """Causal MLA prefill: scaled_dot_product_attention with V the first head_dim_v columns of K, q [B, H, S, D],
    k [B, KVH, S, D] -> [B, H, S, head_dim_v]. head_dim_v may be a V tensor instead (TT-NN's second overload, V in
    embedding space), of K's shape with its own width. In DRAM unless memory_config says otherwise.

    >>> q = ttnn.from_torch(torch.rand(1, 4, 64, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> k = ttnn.from_torch(torch.rand(1, 1, 64, 64), ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
    >>> ttnn.transformer.flash_mla_prefill(q, k, 32).shape
    Shape([1, 4, 64, 32])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    v_t = head_dim_v if isinstance(head_dim_v, Tensor) else None
    width = v_t.shape[-1] if v_t is not None else head_dim_v
    _mla_checks(op_name, input_tensor_q, input_tensor_k, v_t, width, is_causal, decode=False)
    if program_config is not None:
        validate_sdpa(program_config, op_name)
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op_name}: give either is_causal=True or attn_mask, not both; pass is_causal=False")
    ins = device_inputs(op_name, input_tensor_q, input_tensor_k, v_t, attn_mask)
    q, k = values(input_tensor_q, op_name), values(input_tensor_k, op_name)
    if q.dim() != 4 or k.dim() != 4 or q.shape[0] != k.shape[0] or q.shape[1] % k.shape[1]:
        raise ValueError(f"{op_name}: shapes q {list(q.shape)}, k {list(k.shape)} must be q [B, H, S, D] and "
                         f"k [B, KVH, S, D] with H a multiple of KVH")
    mask = values(attn_mask, op_name) if attn_mask is not None else None
    r = _mla_prefill_golden(q, k, values(v_t, op_name) if v_t is not None else int(width), attn_mask=mask,
                            is_causal=is_causal, scale=scale)
    out = output(r, input_tensor_q, ins, op_name=op_name, memory_config=memory_config or DRAM_MEMORY_CONFIG)
    if input_tensor_q.device() is not None and input_tensor_q.layout == Layout.TILE and not input_tensor_q.is_sharded():
        config = tt_nn_only.get("compute_kernel_config")
        device_work.launch_after(out, True, input_tensor_q, transformer_programs.sdpa_program(
            input_tensor_q, input_tensor_k, v_t if v_t is not None else input_tensor_k, out.dtype, is_causal=is_causal,
            mask=attn_mask, program_config=program_config,
            fp32_dest_acc_en=bool(getattr(config, "fp32_dest_acc_en", False))))
    return out


def _chunked_mla_golden(q, k, head_dim_v, page_table_tensor, chunk_start_idx=0, *_, scale=None, **__):
    return _chunked_sdpa_golden(q, k, k, page_table_tensor, chunk_start_idx, scale=scale)[..., :head_dim_v]


@register_op("ttnn.transformer.chunked_flash_mla_prefill", golden=_chunked_mla_golden)
def chunked_flash_mla_prefill(input_tensor_q: Tensor, input_tensor_k: Tensor, head_dim_v: int,
                              page_table_tensor: Tensor, chunk_start_idx: int, *, scale: float | None = None,
                              memory_config: MemoryConfig | None = None, program_config=None,
                              op_name: str = OWN_NAME, **tt_nn_only) -> Tensor:
    """chunked_scaled_dot_product_attention with V the first head_dim_v columns of the paged K cache
    [num_blocks, KVH, block_size, D]: a prompt chunk q [B, H, L, D] at positions chunk_start_idx.. ->
    [B, H, L, head_dim_v]. In DRAM unless memory_config says otherwise.

    >>> q = ttnn.from_torch(torch.rand(1, 2, 64, 64), ttnn.bfloat16, layout=ttnn.TILE, device=device)
    >>> k = ttnn.from_torch(torch.rand(4, 1, 32, 64), ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
    >>> table = ttnn.from_torch(torch.arange(4, dtype=torch.int32)[None], ttnn.int32, device=device)
    >>> ttnn.transformer.chunked_flash_mla_prefill(q, k, 32, table, 64).shape  # q is tokens 64..127
    Shape([1, 2, 64, 32])
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    _mla_checks(op_name, input_tensor_q, input_tensor_k, None, head_dim_v, True, decode=False)
    return _chunked(op_name, input_tensor_q, input_tensor_k, input_tensor_k, page_table_tensor, chunk_start_idx, None,
                    scale, memory_config or DRAM_MEMORY_CONFIG, program_config, tt_nn_only, int(head_dim_v))
