"""Every op, one module per category. Importing this package registers them all.

Its public names are read from the registry, not listed by hand: each op whose TT-NN name has one part after
`ttnn.` under that part (ttnn.add as `add`), and under each of its aliases (ttnn.mul's `multiply`); the ops of
ttnn.experimental, ttnn.transformer and ttnn.kv_cache live in those modules. tests/test_exports.py holds every
registered op reachable by its TT-NN name and no public name lost.

    import device_sim as ttnn
    assert ttnn.ops.add is ttnn.OPS["ttnn.add"].wrapper and "multiply" in ttnn.ops.__all__
"""

from device_sim.ops import (  # noqa: F401  (each registers its ops on import)
    backward,
    batch_norm,
    ccl,
    complex,
    conv,
    core,
    creation,
    data_movement,
    distributed_norm,
    eltwise,
    experimental,
    group_norm,
    heads,
    kv_cache,
    matmul,
    moreh,
    normalization,
    reduction,
    rotary,
    sampling,
    sharded,
    tensor_io,
    transformer,
    vision,
)

# The enums and helpers the ops' callers need: public beside the ops (__all__ below takes every name imported here).
from device_sim.ops.eltwise import BcastOpDim, BcastOpMath  # noqa: F401
from device_sim.ops.group_norm import (  # noqa: F401
    create_group_norm_input_mask,
    create_group_norm_input_negative_mask,
    create_group_norm_reciprocals,
    create_group_norm_weight_bias_rm,
    determine_expected_group_norm_sharded_config_and_grid_size,
    dram_group_norm_params_from_torch,
    dram_group_norm_virtual_columns,
    get_group_norm_cores_across_channel,
)
from device_sim.ops.normalization import EmbeddingsType, create_layer_norm_reciprocals  # noqa: F401
from device_sim.registry import public_functions as _public_functions

_NAMESPACES = ("experimental", "kv_cache", "transformer")  # TT-NN's namespaces of ops: ttnn.experimental.*, ...
_helpers = [n for n, v in globals().items() if not n.startswith("_") and not isinstance(v, type(backward))]
_by_name = _public_functions("ttnn")
del _by_name["Tensor"]  # ttnn.Tensor is the class (device_sim.tensor), whose constructor runs the op
globals().update(_by_name)
__all__ = [*_by_name, *_NAMESPACES, *_helpers]
