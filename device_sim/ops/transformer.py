"""`ttnn.transformer`: the attention helpers, each one fused op as in TT-NN.

Shapes: B batch, S sequence, H query heads, KVH key/value heads, D head size.
"""

from __future__ import annotations

import math

import torch

from device_sim.ops.common import broadcasts, check_tt_nn_only, device_inputs, output, values
from device_sim.registry import register_op
from device_sim.tensor import Tensor
from device_sim.types import MemoryConfig


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
                                          **tt_nn_only) -> tuple[Tensor, Tensor, Tensor]:
    """[B, S, (H + 2*KVH)*D] (or q [B, S, H*D] and kv_input_tensor [B, S, 2*KVH*D]) to
    q [B, H, S, D], k [B, KVH, D, S] (or [B, KVH, S, D] with transpose_key=False), v [B, KVH, S, D]."""
    op_name = "ttnn.transformer.split_query_key_value_and_split_heads"
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor, kv_input_tensor)
    x = values(input_tensor, op_name)
    kv = values(kv_input_tensor, op_name) if kv_input_tensor is not None else None
    hidden = x.shape[-1] + (kv.shape[-1] if kv is not None else 0)
    n = num_heads + 2 * (num_kv_heads or num_heads)
    if x.dim() != 3 or hidden % n or (kv is not None and kv.shape[:-1] != x.shape[:-1]):
        shapes = [list(x.shape)] + ([list(kv.shape)] if kv is not None else [])
        raise ValueError(
            f"{op_name}: input shapes {shapes} must be [B, S, hidden] with the hidden sizes adding up to a "
            f"multiple of num_heads + 2 * num_kv_heads = {n}"
        )
    outs = _split_qkv_golden(x, kv, num_heads=num_heads, num_kv_heads=num_kv_heads, transpose_key=transpose_key)
    return tuple(output(o.contiguous(), input_tensor, ins, op_name=op_name, memory_config=memory_config)
                 for o in outs)


def _concatenate_heads_golden(t, *_, **__):
    B, H, S, D = t.shape
    return t.permute(0, 2, 1, 3).reshape(B, S, H * D)


@register_op("ttnn.transformer.concatenate_heads", golden=_concatenate_heads_golden)
def concatenate_heads(input_tensor: Tensor, *, memory_config: MemoryConfig | None = None,
                      **tt_nn_only) -> Tensor:
    """[B, H, S, D] to [B, S, H*D]."""
    op_name = "ttnn.transformer.concatenate_heads"
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    x = values(input_tensor, op_name)
    if x.dim() != 4:
        raise ValueError(f"{op_name}: input shape {list(x.shape)} must be [B, H, S, D]")
    ins = device_inputs(op_name, input_tensor)
    return output(_concatenate_heads_golden(x).contiguous(), input_tensor, ins, op_name=op_name,
                  memory_config=memory_config)


def _attention_softmax_golden(t, *_, head_size=None, attention_mask=None, **__):
    x = t.float() * (1 / math.sqrt(head_size) if head_size is not None else 1.0)
    return torch.softmax(x if attention_mask is None else x + attention_mask.float(), -1)


def _attention_softmax(name: str):
    def op(input_tensor: Tensor, *, head_size: int | None = None, attention_mask: Tensor | None = None,
           memory_config: MemoryConfig | None = None, **tt_nn_only) -> Tensor:
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
        return output(r, input_tensor, ins, op_name=op_name, memory_config=memory_config)

    op.__doc__ = "softmax(scores / sqrt(head_size) + attention_mask) over the last dim."
    return register_op(f"ttnn.transformer.{name}", golden=_attention_softmax_golden)(op)


attention_softmax = _attention_softmax("attention_softmax")
# TT-NN's in-place spelling. Here it returns a new tensor and leaves the input as it was: a tensor id
# names one set of values for its whole life, which a report relies on. Use the returned tensor.
attention_softmax_ = _attention_softmax("attention_softmax_")


def _sdpa_golden(q, k, v, *_, attn_mask=None, is_causal=True, scale=None, **__):
    q, k, v = q.float(), k.float(), v.float()
    # Grouped-query attention: each key/value head serves H / KVH query heads.
    k = k.repeat_interleave(q.shape[-3] // k.shape[-3], -3)
    v = v.repeat_interleave(q.shape[-3] // v.shape[-3], -3)
    scores = q @ k.transpose(-2, -1) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if is_causal:
        L, S = scores.shape[-2:]
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    if attn_mask is not None:
        scores = scores + attn_mask.float()
    return torch.softmax(scores, -1) @ v


@register_op("ttnn.transformer.scaled_dot_product_attention", golden=_sdpa_golden)
def scaled_dot_product_attention(input_tensor_q: Tensor, input_tensor_k: Tensor, input_tensor_v: Tensor, *,
                                 attn_mask: Tensor | None = None, is_causal: bool = True, scale: float | None = None,
                                 memory_config: MemoryConfig | None = None, **tt_nn_only) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v with q [B, H, S, D], k and v [B, KVH, S, D].

    is_causal defaults to True, as in TT-NN (torch's default is False); pass is_causal=False
    with attn_mask. scale defaults to 1/sqrt(D).
    """
    op_name = "ttnn.transformer.scaled_dot_product_attention"
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    ins = device_inputs(op_name, input_tensor_q, input_tensor_k, input_tensor_v, attn_mask)
    q, k, v = (values(t, op_name) for t in (input_tensor_q, input_tensor_k, input_tensor_v))
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op_name}: give either is_causal=True or attn_mask, not both; pass is_causal=False")
    if (q.dim() != 4 or k.shape != v.shape or k.dim() != 4 or q.shape[0] != k.shape[0]
            or q.shape[-1] != k.shape[-1] or q.shape[1] % k.shape[1]):
        raise ValueError(
            f"{op_name}: shapes q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)} must be q [B, H, S, D] "
            f"and k, v [B, KVH, S, D] with H a multiple of KVH"
        )
    mask = values(attn_mask, op_name) if attn_mask is not None else None
    r = _sdpa_golden(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)
    return output(r, input_tensor_q, ins, op_name=op_name, memory_config=memory_config)
