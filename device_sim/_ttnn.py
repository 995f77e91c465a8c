"""`ttnn._ttnn`: the name of TT-NN's compiled module, whose submodules scripts and tests reach through it
(`ttnn._ttnn.reports.get_buffer_pages(device)`, `ttnn._ttnn.multi_device.SystemMeshDescriptor()`,
`-> ttnn._ttnn.tensor.MemoryConfig` in tt_transformers' annotations).

Each is device_sim's module for the same thing:

    import device_sim as ttnn
    ttnn._ttnn.cluster.get_cluster_type()        # device_sim.cluster
    ttnn._ttnn.tensor.MemoryConfig               # device_sim.MemoryConfig
"""

import sys
from types import ModuleType, SimpleNamespace

from device_sim import cluster, device, reports, types
from device_sim import mesh as multi_device
from device_sim.ops import ccl
from device_sim.tensor import Tensor

# TT-NN's `_ttnn.tensor` submodule holds the tensor class and the types that describe a tensor; device_sim keeps
# them in types.py and tensor.py, so this names the same objects (no module is made at run time).
tensor = SimpleNamespace(
    Tensor=Tensor, MemoryConfig=types.MemoryConfig, DataType=types.DataType, Layout=types.Layout,
    BufferType=types.BufferType, TensorMemoryLayout=types.TensorMemoryLayout, ShardSpec=types.ShardSpec,
    ShardOrientation=types.ShardOrientation, CoreCoord=types.CoreCoord, CoreRange=types.CoreRange,
    CoreRangeSet=types.CoreRangeSet, Shape=types.Shape,
)

# `from ttnn._ttnn.deprecated import operations` (tt-metal's ttnn/tt_lib/__init__.py, which tests/ttnn files import
# through tests/tt_eager's helpers): TT-NN's nanobind module defines deprecated.operations.primary and binds
# nothing in them (ttnn/cpp/ttnn-nanobind/__init__.cpp). An empty __path__ lets the import system look the
# submodules up, in sys.modules.
__path__: list[str] = []
deprecated = ModuleType(f"{__name__}.deprecated", "Deprecated tt_lib bindings")
deprecated.operations = ModuleType(f"{__name__}.deprecated.operations", "Submodule for experimental operations")
deprecated.operations.primary = ModuleType(f"{__name__}.deprecated.operations.primary", "Primary operations")
for _m in (deprecated, deprecated.operations, deprecated.operations.primary):
    _m.__path__ = []
    sys.modules[_m.__name__] = _m

# Names model code writes in annotations (models/demos/deepseek_v3/utils/config_dataclass.py, which tests/ttnn's
# test_avgpool2d imports): the CCL topology, the global semaphore class by its binding's name, and the
# experimental CCL ops' semaphore argument (a GlobalSemaphore, or a list of them, in TT-NN).
operations = SimpleNamespace(
    ccl=SimpleNamespace(Topology=ccl.Topology),
    experimental=SimpleNamespace(ccl_experimental=SimpleNamespace(GlobalSemaphoreArg=ccl.GlobalSemaphore)),
)
global_semaphore = SimpleNamespace(global_semaphore=ccl.GlobalSemaphore)

__all__ = ["cluster", "deprecated", "device", "global_semaphore", "multi_device", "operations", "reports", "tensor"]
