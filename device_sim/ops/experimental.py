"""`ttnn.experimental`: the namespace of TT-NN's experimental ops, importable and readable statically.

    import device_sim as ttnn
    q, k, v = ttnn.experimental.nlp_create_qkv_heads(qkv, num_heads=8, num_kv_heads=2)
    ttnn.experimental.rotary_embedding_llama(q, cos, sin, trans_mat)

How an op joins it: define the op in the module of its category, registered under its TT-NN name,
and import it here (one line, in the block of that module):

    # device_sim/ops/ccl.py
    @register_op("ttnn.experimental.all_gather_async", collective="gather", no_golden=_ON_WHOLE_MESHES)
    def all_gather_async(input_tensor, ...): ...

    # here
    from device_sim.ops.ccl import all_gather_async  # noqa: F401

The registered name is what a report records and what tests/test_ops.py keys its cases by; the
import is what makes `ttnn.experimental.all_gather_async` resolve. No run-time attribute setting:
everything in the namespace is listed in this file.
"""

# Collectives' asynchronous forms (ops/ccl.py, issue 11); the older typecast (ops/core.py).
from device_sim.ops.ccl import all_gather_async, all_reduce_async, reduce_scatter_minimal_async  # noqa: F401, E402
from device_sim.ops.core import experimental_typecast as typecast  # noqa: F401
from device_sim.ops.heads import (  # noqa: F401
    nlp_concat_heads,
    nlp_concat_heads_decode,
    nlp_create_qkv_heads,
    nlp_create_qkv_heads_decode,
    nlp_create_qkv_heads_falcon7b,
    split_query_key_value_and_split_heads,
)
from device_sim.ops.kv_cache import (  # noqa: F401
    nlp_kv_cache_load_slice,
    paged_fill_cache,
    paged_fused_update_cache,
    paged_update_cache,
)
from device_sim.ops.rotary import (  # noqa: F401
    rotary_embedding,
    rotary_embedding_llama,
    rotary_embedding_llama_fused_qk,
)
