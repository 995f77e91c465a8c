"""Every op, one module per category. Importing this package registers them all."""

from device_sim.ops import transformer  # noqa: F401  (ttnn.transformer.*)
from device_sim.ops.core import (  # noqa: F401
    clone,
    deallocate,
    from_device,
    from_torch,
    permute,
    reshape,
    slice,
    to_device,
    to_layout,
    to_memory_config,
    to_torch,
    transpose,
    typecast,
)
from device_sim.ops.creation import (  # noqa: F401
    arange,
    concat,
    empty,
    empty_like,
    full,
    full_like,
    ones,
    ones_like,
    pad,
    rand,
    rand_like,
    repeat,
    split,
    zeros,
    zeros_like,
)
from device_sim.ops.eltwise import (  # noqa: F401
    abs,
    add,
    cos,
    div,
    divide,
    eq,
    exp,
    ge,
    gelu,
    gt,
    le,
    log,
    lt,
    maximum,
    minimum,
    mul,
    multiply,
    ne,
    neg,
    pow,
    reciprocal,
    relu,
    rsqrt,
    rsub,
    sigmoid,
    silu,
    sin,
    sqrt,
    square,
    sub,
    subtract,
    tanh,
)
from device_sim.ops.matmul import addmm, linear, matmul  # noqa: F401
from device_sim.ops.normalization import embedding, layer_norm, rms_norm, softmax  # noqa: F401
from device_sim.ops.reduction import argmax, max, mean, min, std, sum, var  # noqa: F401

__all__ = [
    "transformer",
    "arange", "concat", "empty", "empty_like", "full", "full_like", "ones", "ones_like", "pad", "rand",
    "rand_like", "repeat", "split", "zeros", "zeros_like",
    "addmm", "linear", "matmul",
    "embedding", "layer_norm", "rms_norm", "softmax",
    "argmax", "max", "mean", "min", "std", "sum", "var",
    "clone",
    "deallocate",
    "from_device",
    "from_torch",
    "permute",
    "reshape",
    "slice",
    "to_device",
    "to_layout",
    "to_memory_config",
    "to_torch",
    "transpose",
    "typecast",
    "abs",
    "add",
    "cos",
    "div",
    "divide",
    "eq",
    "exp",
    "ge",
    "gelu",
    "gt",
    "le",
    "log",
    "lt",
    "maximum",
    "minimum",
    "mul",
    "multiply",
    "ne",
    "neg",
    "pow",
    "reciprocal",
    "relu",
    "rsqrt",
    "rsub",
    "sigmoid",
    "silu",
    "sin",
    "sqrt",
    "square",
    "sub",
    "subtract",
    "tanh",
]

# Shape and data-movement ops (ops/data_movement.py).
from device_sim.ops.data_movement import (  # noqa: E402, F401
    chunk,
    expand,
    gather,
    move,
    reallocate,
    repeat_interleave,
    sort,
    squeeze,
    stack,
    tilize,
    tilize_with_val_padding,
    tilize_with_zero_padding,
    unsqueeze,
    unsqueeze_to_4D,
    untilize,
    untilize_with_unpadding,
    view,
)

__all__ += [
    "chunk", "expand", "gather", "move", "reallocate", "repeat_interleave", "sort", "squeeze", "stack", "tilize",
    "tilize_with_val_padding", "tilize_with_zero_padding", "unsqueeze", "unsqueeze_to_4D", "untilize",
    "untilize_with_unpadding", "view",
]

# Sharded data movement (ops/sharded.py).
from device_sim.ops.sharded import (  # noqa: E402, F401
    interleaved_to_sharded,
    interleaved_to_sharded_partial,
    reshard,
    sharded_to_interleaved,
    sharded_to_interleaved_partial,
)

__all__ += ["interleaved_to_sharded", "interleaved_to_sharded_partial", "reshard", "sharded_to_interleaved",
            "sharded_to_interleaved_partial"]

# Making tensors outside from_torch (ops/tensor_io.py); its `tensor` op is reached as ttnn.Tensor(...).
from device_sim.ops import tensor_io  # noqa: E402, F401
from device_sim.ops.tensor_io import allocate_tensor_on_device, as_tensor, copy_host_to_device_tensor  # noqa: E402, F401

__all__ += ["as_tensor", "allocate_tensor_on_device", "copy_host_to_device_tensor"]

# Transformer and vision ops of real models (issue 9, part C): the ttnn.experimental and ttnn.kv_cache
# namespaces, KV caches, convolutions and pooling (ops/experimental.py, kv_cache.py, conv.py, vision.py).
from device_sim.ops import experimental, kv_cache  # noqa: E402, F401
from device_sim.ops.conv import (  # noqa: E402, F401
    conv1d,
    conv2d,
    conv_transpose2d,
    prepare_conv_bias,
    prepare_conv_weights,
)
from device_sim.ops.kv_cache import fill_cache, update_cache  # noqa: E402, F401
from device_sim.ops.vision import (  # noqa: E402, F401
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool2d,
    fold,
    global_avg_pool2d,
    max_pool2d,
    upsample,
)

__all__ += [
    "experimental", "kv_cache", "fill_cache", "update_cache", "avg_pool2d", "conv2d", "global_avg_pool2d",
    "max_pool2d", "prepare_conv_bias", "prepare_conv_weights", "upsample", "fold", "conv1d",
    "conv_transpose2d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
]

# Collectives between the chips of a mesh (ops/ccl.py, issue 11).
from device_sim.ops.ccl import all_gather, all_reduce, mesh_partition, point_to_point, reduce_scatter  # noqa: E402, F401
from device_sim.ops.distributed_norm import rms_norm_post_all_gather, rms_norm_pre_all_gather  # noqa: E402, F401

__all__ += ["all_gather", "all_reduce", "mesh_partition", "point_to_point", "reduce_scatter",
            "rms_norm_post_all_gather", "rms_norm_pre_all_gather"]

# More element-wise ops (ops/eltwise.py): unary, parameterised unary, binary, ternary, clamp.
from device_sim.ops.eltwise import (  # noqa: E402, F401
    acos,
    addcdiv,
    addcmul,
    asin,
    atan,
    atan2,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    ceil,
    celu,
    clamp,
    clip,
    elu,
    erf,
    erfc,
    exp2,
    expm1,
    floor,
    fmod,
    gcd,
    hardsigmoid,
    hardswish,
    hardtanh,
    heaviside,
    isfinite,
    isinf,
    isnan,
    lcm,
    leaky_relu,
    lerp,
    log1p,
    log2,
    log10,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    mac,
    mish,
    relu6,
    remainder,
    round,
    sign,
    softplus,
    squared_difference,
    swish,
    tan,
    trunc,
    where,
)

__all__ += [
    "acos", "addcdiv", "addcmul", "asin", "atan", "atan2", "bitwise_and", "bitwise_or", "bitwise_xor", "ceil",
    "celu", "clamp", "clip", "elu", "erf", "erfc", "exp2", "expm1", "floor", "fmod", "gcd", "hardsigmoid", "hardswish",
    "hardtanh", "heaviside", "isfinite", "isinf", "isnan", "lcm", "leaky_relu", "lerp", "log1p", "log2", "log10",
    "logical_and", "logical_not", "logical_or", "logical_xor", "mac", "mish", "relu6", "remainder", "round", "sign",
    "softplus", "squared_difference", "swish", "tan", "trunc", "where",
]

# More reductions (ops/reduction.py).
from device_sim.ops.reduction import cumprod, cumsum, prod, topk  # noqa: E402, F401

__all__ += ["cumprod", "cumsum", "prod", "topk"]

# In-place, indexing and fill ops (ops/eltwise.py, ops/data_movement.py, ops/creation.py).
from device_sim.ops.creation import fill  # noqa: E402, F401
from device_sim.ops.data_movement import (  # noqa: E402, F401
    copy,
    fill_implicit_tile_padding,
    narrow,
    reshape_on_device,
    scatter,
)
from device_sim.ops.eltwise import (  # noqa: E402, F401
    add_,
    div_,
    divide_,
    mul_,
    multiply_,
    plus_one,
    sub_,
    subtract_,
    tril,
    triu,
)

__all__ += ["fill", "copy", "fill_implicit_tile_padding", "narrow", "reshape_on_device", "scatter",
            "add_", "div_", "divide_", "mul_", "multiply_",
            "plus_one", "sub_", "subtract_", "tril", "triu"]

# Batch norm (ops/batch_norm.py).
from device_sim.ops.batch_norm import batch_norm  # noqa: E402, F401

__all__ += ["batch_norm"]

# Group norm and TT-NN's helpers for its weights and mask (ops/group_norm.py).
from device_sim.ops.group_norm import (  # noqa: E402, F401
    create_group_norm_input_mask,
    create_group_norm_weight_bias_rm,
    group_norm,
)

__all__ += ["create_group_norm_input_mask", "create_group_norm_weight_bias_rm", "group_norm"]

# In-place softmax (ops/normalization.py) and host dtype conversion (ops/data_movement.py).
from device_sim.ops.data_movement import to_dtype  # noqa: E402, F401
from device_sim.ops.normalization import (  # noqa: E402, F401
    scale_causal_mask_hw_dims_softmax_in_place,
    scale_mask_softmax,
    scale_mask_softmax_in_place,
    softmax_in_place,
)

__all__ += ["to_dtype", "scale_causal_mask_hw_dims_softmax_in_place", "scale_mask_softmax",
            "scale_mask_softmax_in_place", "softmax_in_place"]

# TT-NN's older broadcast op and its enums (ops/eltwise.py).
from device_sim.ops.eltwise import BcastOpDim, BcastOpMath, bcast  # noqa: E402, F401

__all__ += ["BcastOpDim", "BcastOpMath", "bcast"]

# Embedding's kernel choice (ops/normalization.py).
from device_sim.ops.normalization import EmbeddingsType, create_layer_norm_reciprocals  # noqa: E402, F401

__all__ += ["EmbeddingsType", "create_layer_norm_reciprocals"]

# TT-NN's moreh norm (ops/moreh.py); ttnn.operations.moreh.norm is device_sim.operations.moreh.norm.
from device_sim.ops import moreh  # noqa: E402, F401
from device_sim.ops.moreh import (  # noqa: E402, F401
    moreh_arange,
    moreh_cumsum,
    moreh_cumsum_backward,
    moreh_dot,
    moreh_full,
    moreh_full_like,
    moreh_norm,
)

__all__ += ["moreh_arange", "moreh_cumsum", "moreh_cumsum_backward", "moreh_dot", "moreh_full", "moreh_full_like",
            "moreh_norm"]

# Backward ops, ttnn.<op>_bw (ops/backward.py).
from device_sim.ops import backward as _backward  # noqa: E402
from device_sim.ops.backward import *  # noqa: E402, F401, F403

__all__ += _backward.__all__

# More unary ops TT-NN has (ops/eltwise.py): special functions, hyperbolics, shrinks, comparisons with zero.
from device_sim.ops.eltwise import (  # noqa: E402, F401
    acosh,
    asinh,
    atanh,
    cbrt,
    cosh,
    deg2rad,
    digamma,
    eqz,
    erfinv,
    geglu,
    gez,
    glu,
    gtz,
    hardshrink,
    i0,
    i1,
    isneginf,
    isposinf,
    lez,
    lgamma,
    log_sigmoid,
    ltz,
    multigammaln,
    nez,
    polygamma,
    prelu,
    rad2deg,
    reglu,
    selu,
    signbit,
    sinh,
    softshrink,
    softsign,
    swiglu,
    tanhshrink,
    threshold,
)

__all__ += [
    "acosh", "asinh", "atanh", "cbrt", "cosh", "deg2rad", "digamma", "eqz", "erfinv", "gez", "gtz", "hardshrink",
    "i0", "i1", "isneginf", "isposinf", "lez", "lgamma", "log_sigmoid", "ltz", "multigammaln", "nez",
    "polygamma", "prelu", "rad2deg", "selu", "signbit", "sinh", "softshrink", "softsign", "tanhshrink", "threshold",
    "geglu", "glu", "reglu", "swiglu",
]
