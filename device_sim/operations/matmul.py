"""`ttnn.operations.matmul`: the matmul program configs by the module TT-NN's ttnn/operations/matmul.py names them
from, which tt-metal's sweep helpers import (tests/tt_eager/python_api_testing/sweep_tests/tt_lib_ops.py).

    from ttnn.operations.matmul import MatmulMultiCoreReuseProgramConfig   # under install_as_ttnn()
"""

from device_sim.program_configs import (
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig,
    MatmulMultiCoreReuseMultiCastProgramConfig,
    MatmulMultiCoreReuseProgramConfig,
)

__all__ = ["MatmulMultiCoreReuseMultiCast1DProgramConfig", "MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig",
           "MatmulMultiCoreReuseMultiCastProgramConfig", "MatmulMultiCoreReuseProgramConfig"]
