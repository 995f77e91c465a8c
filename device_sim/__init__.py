"""device_sim: an emulated Tenstorrent-style device with a TT-NN-compatible API.

    import device_sim as ttnn
    device = ttnn.open_device(0)
    a = ttnn.from_torch(torch.randn(32, 64), layout=ttnn.TILE, device=device, memory=ttnn.L1)
    out = (a + a).to_torch()
"""

from device_sim import dtypes, model_preprocessing
from device_sim.allocator import Buffer, OutOfMemoryError
from device_sim.compat import install_as_ttnn
from device_sim.device import (
    Device,
    DeviceConfig,
    close_device,
    manage_device,
    open_device,
    open_devices,
    synchronize_device,
)
from device_sim.ops import *  # noqa: F403
from device_sim.ops import __all__ as _ops_all
from device_sim.placement import (
    get_default_memory_config,
    memory,
    set_default_memory_config,
    set_strict,
    strict,
)
from device_sim.registry import (
    OPS,
    get_fallback_function,
    get_golden_function,
    get_hook,
    register_op,
    registered_ops,
    set_hook,
)
from device_sim.serialization import TensorFileError, dump_tensor, load_tensor
from device_sim.sharding import create_sharded_memory_config
from device_sim.tensor import StorageType, Tensor
from device_sim.types import (
    DRAM_MEMORY_CONFIG,
    L1_MEMORY_CONFIG,
    BufferType,
    CoreCoord,
    CoreGrid,
    CoreRange,
    CoreRangeSet,
    DataType,
    Layout,
    MemoryConfig,
    Shape,
    ShardOrientation,
    ShardSpec,
    ShardStrategy,
    TensorMemoryLayout,
)

# TT-NN's long names, and the short ones of the concise API.
TILE_LAYOUT = TILE = Layout.TILE
ROW_MAJOR_LAYOUT = ROW_MAJOR = Layout.ROW_MAJOR
L1 = L1_MEMORY_CONFIG
DRAM = DRAM_MEMORY_CONFIG
bfloat16 = DataType.BFLOAT16
float32 = DataType.FLOAT32
bfloat8_b = DataType.BFLOAT8_B
bfloat4_b = DataType.BFLOAT4_B
uint8 = DataType.UINT8
uint16 = DataType.UINT16
int32 = DataType.INT32
uint32 = DataType.UINT32

__all__ = [
    *_ops_all,
    "dtypes", "Buffer", "OutOfMemoryError", "Device", "DeviceConfig", "close_device", "manage_device",
    "open_device", "open_devices", "synchronize_device", "get_default_memory_config", "memory",
    "set_default_memory_config", "model_preprocessing",
    "set_strict", "strict", "OPS", "get_fallback_function", "get_golden_function", "get_hook", "register_op",
    "registered_ops", "set_hook", "install_as_ttnn", "TensorFileError", "dump_tensor", "load_tensor",
    "create_sharded_memory_config", "StorageType", "Tensor", "DRAM_MEMORY_CONFIG", "L1_MEMORY_CONFIG",
    "BufferType", "CoreCoord", "CoreGrid", "CoreRange", "CoreRangeSet", "DataType", "Layout", "MemoryConfig",
    "Shape", "ShardOrientation", "ShardSpec", "ShardStrategy", "TensorMemoryLayout", "TILE_LAYOUT", "TILE",
    "ROW_MAJOR_LAYOUT", "ROW_MAJOR", "L1", "DRAM", "bfloat16", "float32", "bfloat8_b", "bfloat4_b", "uint8",
    "uint16", "int32", "uint32",
]

# Tiles and tensor specs (device_sim/tile.py, device_sim/tensor.py).
from device_sim.tensor import ShardShapeAlignment, TensorSpec  # noqa: E402
from device_sim.tile import TILE_SIZE, Tile  # noqa: E402

__all__ += ["ShardShapeAlignment", "TensorSpec", "TILE_SIZE", "Tile"]

# Sharding (issue 10): shard specs, core ranges and the configs TT-NN's models build from them.
from device_sim.sharding import (  # noqa: E402
    corerange_to_cores,
    create_sharded_memory_config_,
    is_sharded,
    num_cores_to_corerangeset,
)
from device_sim.types import (  # noqa: E402
    L1_BLOCK_SHARDED_MEMORY_CONFIG,
    L1_HEIGHT_SHARDED_MEMORY_CONFIG,
    L1_WIDTH_SHARDED_MEMORY_CONFIG,
    NdShardSpec,
    ShardDistributionStrategy,
    ShardSpecError,
)

__all__ += [
    "corerange_to_cores", "create_sharded_memory_config_", "is_sharded", "num_cores_to_corerangeset",
    "L1_BLOCK_SHARDED_MEMORY_CONFIG", "L1_HEIGHT_SHARDED_MEMORY_CONFIG", "L1_WIDTH_SHARDED_MEMORY_CONFIG",
    "NdShardSpec", "ShardDistributionStrategy", "ShardSpecError",
]
from device_sim import core  # noqa: E402  (ttnn.core, TT-NN's helpers module)
from device_sim.core import (  # noqa: E402
    get_memory_config,
    has_storage_type_of,
    has_tile_padding,
    is_tensor_storage_on_device,
    num_cores_to_corerangeset_in_subcoregrids,
)

__all__ += ["core", "get_memory_config", "has_storage_type_of", "has_tile_padding", "is_tensor_storage_on_device",
            "num_cores_to_corerangeset_in_subcoregrids"]

# Compute kernel configs, program configs and fused activations (issue 10: configs and numerics).
from device_sim.activations import SigmoidMode  # noqa: E402
from device_sim.compute_config import (  # noqa: E402
    BlackholeComputeKernelConfig,
    DeviceComputeKernelConfig,
    GrayskullComputeKernelConfig,
    MathFidelity,
    ThrottleLevel,
    WormholeComputeKernelConfig,
    init_device_compute_kernel_config,
)
from device_sim.program_configs import (  # noqa: E402
    LayerNormDefaultProgramConfig,
    LayerNormShardedMultiCoreProgramConfig,
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig,
    MatmulMultiCoreReuseMultiCastProgramConfig,
    MatmulMultiCoreReuseProgramConfig,
    SDPAProgramConfig,
    SoftmaxDefaultProgramConfig,
    SoftmaxShardedMultiCoreProgramConfig,
    UnaryOpType,
    UnaryWithParam,
)

__all__ += [
    "BlackholeComputeKernelConfig", "DeviceComputeKernelConfig", "GrayskullComputeKernelConfig", "MathFidelity",
    "ThrottleLevel", "WormholeComputeKernelConfig", "init_device_compute_kernel_config",
    "LayerNormDefaultProgramConfig", "LayerNormShardedMultiCoreProgramConfig",
    "MatmulMultiCoreReuseMultiCast1DProgramConfig",
    "MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig", "MatmulMultiCoreReuseMultiCastProgramConfig",
    "MatmulMultiCoreReuseProgramConfig", "SDPAProgramConfig", "SoftmaxDefaultProgramConfig",
    "SoftmaxShardedMultiCoreProgramConfig", "UnaryOpType", "UnaryWithParam", "SigmoidMode",
]

# Conv configs (issue 9, part C: device_sim/conv_config.py).
from device_sim.conv_config import (  # noqa: E402
    Conv1dConfig,
    Conv2dConfig,
    Conv2dDRAMSliceHeight,
    Conv2dDRAMSliceWidth,
    Conv2dL1Full,
    Conv2dL1FullSliceConfig,
    Conv2dSliceConfig,
    Op2DDRAMSliceHeight,
    Op2DDRAMSliceWidth,
    Op2DL1Full,
    Op2DL1FullSliceConfig,
    Op2DSliceConfig,
    PaddingMode,
    get_conv_output_dim,
)

__all__ += [
    "Conv2dConfig", "Conv2dDRAMSliceHeight", "Conv2dDRAMSliceWidth", "Conv2dL1Full", "Conv2dL1FullSliceConfig",
    "Conv2dSliceConfig", "Op2DSliceConfig", "get_conv_output_dim", "Conv1dConfig", "Op2DDRAMSliceHeight",
    "Op2DDRAMSliceWidth", "Op2DL1Full", "Op2DL1FullSliceConfig", "PaddingMode",
]

# Mesh devices, mesh tensors and fabric settings (issue 11: device_sim/mesh.py, distributed.py, ops/ccl.py).
from device_sim.distributed import (  # noqa: E402
    ConcatMesh2dToTensor,
    ConcatMeshToTensor,
    MeshComposerConfig,
    MeshMapperConfig,
    MeshTensor,
    MeshToTensor,
    PlacementReplicate,
    PlacementShard,
    ReplicateTensorToMesh,
    ShardTensor2dMesh,
    ShardTensorToMesh,
    TensorToMesh,
    aggregate_as_tensor,
    combine_device_tensors,
    concat_mesh_to_tensor_composer,
    create_mesh_composer,
    create_mesh_mapper,
    distributed_context_barrier,
    distributed_context_get_rank,
    distributed_context_get_size,
    from_host_shards,
    get_device_tensors,
    init_distributed_context,
    replicate_tensor_to_mesh_mapper,
    shard_tensor_to_mesh_mapper,
    using_distributed_env,
)
from device_sim.mesh import (  # noqa: E402
    MeshCoordinate,
    MeshCoordinateRange,
    MeshDevice,
    MeshShape,
    close_mesh_device,
    create_mesh_device,
    get_device_ids,
    get_num_devices,
    get_num_pcie_devices,
    get_pcie_device_ids,
    open_mesh_device,
    visualize_mesh_device,
)
from device_sim.ops.ccl import (  # noqa: E402
    FabricConfig,
    GlobalSemaphore,
    ReduceType,
    Topology,
    create_global_semaphore,
    get_fabric_config,
    get_global_semaphore_address,
    reset_global_semaphore_value,
    set_fabric_config,
)

__all__ += [
    "ConcatMesh2dToTensor", "ConcatMeshToTensor", "MeshComposerConfig", "MeshMapperConfig", "MeshTensor",
    "MeshToTensor", "PlacementReplicate", "PlacementShard", "ReplicateTensorToMesh", "ShardTensor2dMesh",
    "ShardTensorToMesh", "TensorToMesh", "aggregate_as_tensor", "concat_mesh_to_tensor_composer",
    "create_mesh_composer", "create_mesh_mapper", "get_device_tensors", "replicate_tensor_to_mesh_mapper",
    "shard_tensor_to_mesh_mapper", "MeshCoordinate", "MeshCoordinateRange", "MeshDevice", "MeshShape",
    "close_mesh_device", "create_mesh_device", "get_device_ids", "get_num_devices", "get_num_pcie_devices",
    "get_pcie_device_ids", "open_mesh_device", "FabricConfig", "GlobalSemaphore", "ReduceType", "Topology",
    "create_global_semaphore", "get_fabric_config", "reset_global_semaphore_value", "set_fabric_config",
    "get_global_semaphore_address", "visualize_mesh_device", "combine_device_tensors",
    "distributed_context_barrier", "distributed_context_get_rank", "distributed_context_get_size", "from_host_shards",
    "init_distributed_context", "using_distributed_env",
]

# Traces and events (issue 10).
from device_sim.trace import (  # noqa: E402
    MeshEvent,
    MeshTraceId,
    begin_trace_capture,
    end_trace_capture,
    event_synchronize,
    execute_trace,
    record_event,
    release_trace,
    wait_for_event,
)

__all__ += [
    "MeshEvent", "MeshTraceId", "begin_trace_capture", "end_trace_capture", "event_synchronize", "execute_trace",
    "record_event", "release_trace", "wait_for_event",
]


from device_sim.device import (  # noqa: E402  (TT-NN's older device spellings, and the chip's architecture)
    CloseDevice,
    CreateDevice,
    DumpDeviceProfiler,
    GetDefaultDevice,
    GetNumAvailableDevices,
    GetNumPCIeDevices,
    GetPCIeDeviceID,
    ReadDeviceProfiler,
    SetDefaultDevice,
    get_arch_name,
)

__all__ += ["CreateDevice", "CloseDevice", "DumpDeviceProfiler", "GetDefaultDevice", "GetNumAvailableDevices",
            "GetNumPCIeDevices", "GetPCIeDeviceID", "ReadDeviceProfiler", "SetDefaultDevice", "get_arch_name"]

# ttnn.operations: TT-NN's Python modules by their names (ttnn.operations.moreh.norm, ttnn.operations.pool's goldens).
from device_sim import operations  # noqa: E402

__all__ += ["operations"]

from device_sim.dispatch_core import DispatchCoreAxis, DispatchCoreConfig, DispatchCoreType  # noqa: E402

__all__ += ["DispatchCoreAxis", "DispatchCoreConfig", "DispatchCoreType"]

# ttnn.cluster (the system's ClusterType) and ttnn._ttnn, TT-NN's compiled module's name for its submodules
# (ttnn._ttnn.reports.get_buffer_pages, ttnn._ttnn.multi_device.SystemMeshDescriptor).
from device_sim import _ttnn, cluster, reports  # noqa: E402, F401

__all__ += ["cluster"]

DEVICE_STORAGE_TYPE = StorageType.DEVICE  # TT-NN's ttnn/types.py
__all__ += ["DEVICE_STORAGE_TYPE"]

from device_sim.comparison import pearson_correlation_coefficient  # noqa: E402

__all__ += ["pearson_correlation_coefficient"]


# TT-Metal's custom-kernel API: present so scripts import, refusing with a reason where used.
from device_sim.not_emulated import (  # noqa: E402
    NOC,
    NOC_MODE,
    NOT_EMULATED,
    CBDescriptor,
    CBFormatDescriptor,
    ComputeConfigDescriptor,
    DataMovementConfigDescriptor,
    KernelDescriptor,
    MeshProgramDescriptor,
    NotEmulatedError,
    ProgramDescriptor,
    ReaderConfigDescriptor,
    SemaphoreDescriptor,
    TileDescriptor,
    WriterConfigDescriptor,
    cb_descriptor_from_sharded_tensor,
    generic_op,
)

__all__ += [
    "NOT_EMULATED", "NotEmulatedError", "generic_op", "ProgramDescriptor", "MeshProgramDescriptor", "KernelDescriptor",
    "CBDescriptor", "CBFormatDescriptor", "SemaphoreDescriptor", "ComputeConfigDescriptor", "ReaderConfigDescriptor",
    "WriterConfigDescriptor", "DataMovementConfigDescriptor", "TileDescriptor", "cb_descriptor_from_sharded_tensor",
    "NOC", "NOC_MODE",
]


def __getattr__(name: str):
    # A name device_sim lacks: under install_as_ttnn() the error says `module 'ttnn'`, as the script wrote it.
    from device_sim.compat import missing_attribute

    raise missing_attribute(__name__, name)


# ttnn.tracer: TT-NN's graph of what a `with trace():` block ran (networkx is imported only when one starts).
from device_sim import tracer  # noqa: E402

__all__ += ["tracer"]


# dump_tensor's mode= (TT-NN's DumpTensorMode).
from device_sim.serialization import DumpTensorMode  # noqa: E402

__all__ += ["DumpTensorMode"]


# ttnn.CONFIG (issue 10). Keep this block last: reading TTNN_CONFIG_OVERRIDES may start a report,
# whose writer (found by entry point) imports device_sim and needs every name above.
from device_sim import config as _config  # noqa: E402
from device_sim.config import CONFIG, Config, load_config_from_dictionary, manage_config  # noqa: E402

__all__ += ["CONFIG", "Config", "load_config_from_dictionary", "manage_config"]
_config.apply_environment()
