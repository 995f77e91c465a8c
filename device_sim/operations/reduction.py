"""`ttnn.operations.reduction`: TT-NN's ttnn/operations/reduction.py, whose one public name is ReduceType, which
tt-metal's sweep helpers import the module for (tests/tt_eager/python_api_testing/sweep_tests/tt_lib_ops.py).

    from ttnn.operations.reduction import ReduceType                        # under install_as_ttnn()
"""

from device_sim.ops.ccl import ReduceType

__all__ = ["ReduceType"]
