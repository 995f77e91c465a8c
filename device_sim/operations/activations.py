"""`ttnn.operations.activations.get_golden_function_for_activation`: the torch function for a fused activation, as
TT-NN's ttnn/operations/activations.py gives it (tt-metal's matmul and linear tests build their references with it).

    import device_sim as ttnn
    from device_sim.operations.activations import get_golden_function_for_activation
    get_golden_function_for_activation("relu6")                              # ttnn.relu6's golden
    get_golden_function_for_activation(ttnn.UnaryWithParam(ttnn.UnaryOpType.SILU))   # torch.nn.functional.silu
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from device_sim.program_configs import UnaryOpType
from device_sim.registry import TTNN, get_golden_function

# TT-NN's _get_golden_map_for_unary_op: the UnaryOpTypes it maps, and to what.
_BY_OP_TYPE = {
    UnaryOpType.RELU: F.relu,
    UnaryOpType.RELU6: F.relu6,
    UnaryOpType.SILU: F.silu,
    UnaryOpType.MISH: F.mish,
    UnaryOpType.SIGMOID: F.sigmoid,
    UnaryOpType.HARDSIGMOID: F.hardsigmoid,
    UnaryOpType.TANH: F.tanh,
    UnaryOpType.LOG: torch.log,
    UnaryOpType.SOFTPLUS: F.softplus,
    UnaryOpType.GELU: F.gelu,
    UnaryOpType.SQRT: torch.sqrt,
}


def get_golden_function_for_activation(activation):
    """None for None; for a name ("relu6", "gelu_approx": the "_approx" suffix dropped) the golden of the ttnn op of
    that name; for a ttnn.UnaryWithParam or ttnn.UnaryOpType the torch function TT-NN maps it to. Anything else is a
    RuntimeError, as in TT-NN."""
    if activation is None:
        return None
    if isinstance(activation, str):
        name = activation[:-7] if activation.endswith("_approx") else activation
        op = getattr(TTNN, name, None)  # the op ttnn.<name> (the registry's table: this module sits below the ops)
        if op is None:
            raise RuntimeError(f"Unsupported activation: {activation}")
        return get_golden_function(op)
    activation = getattr(activation, "op_type", activation)  # a UnaryWithParam: its op type
    if not isinstance(activation, UnaryOpType):
        raise RuntimeError(f"{activation} is not supported as activation function")
    if activation not in _BY_OP_TYPE:
        raise RuntimeError(f"{activation} is not supported as activation function")
    return _BY_OP_TYPE[activation]


__all__ = ["get_golden_function_for_activation"]
