"""`ttnn.operations`: the Python modules TT-NN keeps under ttnn/operations/ that scripts and tests import from.

    import device_sim as ttnn
    ttnn.operations.moreh.norm(t, p=2.0, dim=1)                        # an op by its Python name
    from ttnn.operations.pool import golden_maxpool2d                   # under install_as_ttnn()
    from ttnn.operations.activations import get_golden_function_for_activation

Only the modules tt-metal's tests import are here: activations, conv2d, matmul, pool, reduction, and moreh
(device_sim.ops.moreh).
"""

from device_sim.operations import activations, conv2d, matmul, pool, reduction
from device_sim.ops import moreh

__all__ = ["activations", "conv2d", "matmul", "moreh", "pool", "reduction"]
