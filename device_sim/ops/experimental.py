"""`ttnn.experimental`: the namespace of TT-NN's experimental ops, importable and readable statically.

    import device_sim as ttnn
    q, k, v = ttnn.experimental.nlp_create_qkv_heads(qkv, num_heads=8, num_kv_heads=2)
    ttnn.experimental.rotary_embedding_llama(q, cos, sin, trans_mat)

How an op joins it: define the op in the module of its category, registered under its TT-NN name; the
namespace is read from the registry (every op registered as ttnn.experimental.<name>), and the module that
defines it is imported here first:

    # device_sim/ops/ccl.py
    @register_op("ttnn.experimental.all_gather_async", collective="gather", no_golden=_ON_WHOLE_MESHES)
    def all_gather_async(input_tensor, ...): ...

The registered name is what a report records, what tests/test_ops.py keys its cases by and what makes
`ttnn.experimental.all_gather_async` resolve (tests/test_exports.py holds every op to its TT-NN path).
"""

# The modules that register ttnn.experimental.* ops: the decode-attention matmuls (attn_matmul), the DiT LayerNorm's
# stages (dit_layernorm), collectives' asynchronous forms (ccl), conv3d and its weight preparation (conv), the older
# typecast and padded_slice (core), view, broadcast_to, convert_to_hwc, slice_write, isin and deepseek_prefill
# (data_movement), repeat_and_interleave_eltwise_mul (eltwise), the head splits (heads), the paged caches (kv_cache),
# minimal_matmul and minimal_matmul_split (minimal_matmul),
# dit_rms_norm_unary_fused (normalization), fast_reduce_nc (reduction), the rotary embeddings (rotary), GPT-OSS's MoE
# router topk_router_gpt (router), Mamba's hc_sum_reduce and prefix_scan (ssm).
from types import SimpleNamespace as _SimpleNamespace

from device_sim.ops import (  # noqa: F401
    attn_matmul,
    ccl,
    conv,
    core,
    data_movement,
    dit_layernorm,
    eltwise,
    heads,
    kv_cache,
    minimal_matmul,
    normalization,
    reduction,
    rotary,
    router,
    ssm,
)
from device_sim.registry import public_functions as _public_functions

_by_name = _public_functions("ttnn.experimental")
globals().update(_by_name)
__all__ = list(_by_name)
# ttnn.experimental.deepseek_prefill: the MoE row moves (extract, insert), registered in data_movement
deepseek_prefill = _SimpleNamespace(**_public_functions("ttnn.experimental.deepseek_prefill"))
