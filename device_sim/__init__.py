"""device_sim: an emulated Tenstorrent-style device with a TT-NN-compatible API.

    import device_sim as ttnn
    device = ttnn.open_device(0)
    a = ttnn.from_torch(torch.randn(32, 64), layout=ttnn.TILE, device=device, memory=ttnn.L1)
    out = (a + a).to_torch()

The public names (__all__) are every function, class and constant imported or set here, and TT-NN's namespaces
in _NAMESPACES; each name is written once. The ops come from device_sim.ops, which reads them from the op
registry. tests/test_exports.py holds every op reachable by its TT-NN name and no public name lost.
"""
# ruff: noqa: F401  (every name imported here is public: __all__ below is read from them)

from types import ModuleType as _ModuleType

# TT-NN's namespaces (ttnn.core, ttnn.operations.moreh.norm, ttnn.tracer, ...), and ttnn._ttnn, its compiled module's
# name for its submodules (ttnn._ttnn.reports.get_buffer_pages, ttnn._ttnn.multi_device.SystemMeshDescriptor).
from device_sim import (
    _ttnn,
    cluster,
    core,
    dtypes,
    graph,
    model_preprocessing,
    operations,
    reports,
    tracer,
)
from device_sim import config as _config
from device_sim.activations import SigmoidMode
from device_sim.allocator import Buffer, OutOfMemoryError
from device_sim.comparison import pearson_correlation_coefficient
from device_sim.compat import install_as_ttnn
from device_sim.compat import missing_attribute as _missing_attribute
from device_sim.complex_tensor import ComplexTensor, complex_tensor
from device_sim.compute_config import (
    BlackholeComputeKernelConfig,
    DeviceComputeKernelConfig,
    GrayskullComputeKernelConfig,
    MathFidelity,
    ThrottleLevel,
    UnpackToDestMode,
    WormholeComputeKernelConfig,
    init_device_compute_kernel_config,
)
from device_sim.config import CONFIG, Config, load_config_from_dictionary, manage_config
from device_sim.conv_config import (
    Conv1dConfig,
    Conv2dConfig,
    Conv2dDRAMSliceHeight,
    Conv2dDRAMSliceWidth,
    Conv2dL1Full,
    Conv2dL1FullSliceConfig,
    Conv2dSliceConfig,
    Conv3dConfig,
    Op2DDRAMSliceHeight,
    Op2DDRAMSliceWidth,
    Op2DL1Full,
    Op2DL1FullSliceConfig,
    Op2DSliceConfig,
    PaddingMode,
    SlidingWindowParallelConfig,
    get_conv_output_dim,
)
from device_sim.core import (
    get_memory_config,
    has_storage_type_of,
    has_tile_padding,
    is_tensor_storage_on_device,
    num_cores_to_corerangeset_in_subcoregrids,
)
from device_sim.device import (  # TT-NN's older device spellings (CreateDevice, ...) too
    NOC,
    NOC_MODE,
    CloseDevice,
    CreateDevice,
    Device,
    DeviceConfig,
    DumpDeviceProfiler,
    GetDefaultDevice,
    GetNumAvailableDevices,
    GetNumPCIeDevices,
    GetPCIeDeviceID,
    ReadDeviceProfiler,
    SetDefaultDevice,
    close_device,
    disable_asynchronous_slow_dispatch,
    enable_asynchronous_slow_dispatch,
    get_arch_name,
    get_dram_alignment,
    get_l1_alignment,
    get_max_worker_l1_unreserved_size,
    is_asynchronous_slow_dispatch_enabled,
    manage_device,
    open_device,
    open_devices,
    synchronize_device,
)
from device_sim.dispatch_core import DispatchCoreAxis, DispatchCoreConfig, DispatchCoreType
from device_sim.distributed import (
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
    visualize_tensor,
)
from device_sim.dtypes import element_size, tile_size
from device_sim.mesh import (
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

# TT-Metal's custom-kernel API: present so scripts import, refusing with a reason where used.
from device_sim.not_emulated import (
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
from device_sim.ops import *  # noqa: F403  (every op, by the name the registry gives it)
from device_sim.ops.ccl import (
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
from device_sim.ops.core import TileReshapeMapMode
from device_sim.ops.reduction import LossReductionMode
from device_sim.placement import get_default_memory_config, memory, set_default_memory_config, set_strict, strict
from device_sim.profiler import start_tracy_zone, stop_tracy_zone, tracy_frame, tracy_message
from device_sim.program_configs import (
    LayerNormDefaultProgramConfig,
    LayerNormShardedMultiCoreProgramConfig,
    MatmulMultiCoreReuseMultiCast1DProgramConfig,
    MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig,
    MatmulMultiCoreReuseMultiCastProgramConfig,
    MatmulMultiCoreReuseProgramConfig,
    MinimalMatmulConfig,
    SDPAProgramConfig,
    SoftmaxDefaultProgramConfig,
    SoftmaxShardedMultiCoreProgramConfig,
    UnaryOpType,
    UnaryWithParam,
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
from device_sim.serialization import DumpTensorMode, TensorFileError, dump_tensor, load_tensor
from device_sim.sharding import (
    corerange_to_cores,
    create_sharded_memory_config,
    create_sharded_memory_config_,
    get_optimal_worker_cores_for_sharded_tensor,
    grid_to_cores,
    is_sharded,
    num_cores_to_corerangeset,
)
from device_sim.sub_device import SubDevice, SubDeviceId, SubDeviceManagerId
from device_sim.tensor import ShardShapeAlignment, StorageType, Tensor, TensorSpec
from device_sim.tensor_text import set_printoptions
from device_sim.tile import TILE_SIZE, Tile
from device_sim.trace import (
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
from device_sim.types import (
    DRAM_MEMORY_CONFIG,
    L1_BLOCK_SHARDED_MEMORY_CONFIG,
    L1_HEIGHT_SHARDED_MEMORY_CONFIG,
    L1_MEMORY_CONFIG,
    L1_WIDTH_SHARDED_MEMORY_CONFIG,
    BufferType,
    CoreCoord,
    CoreGrid,
    CoreRange,
    CoreRangeSet,
    DataType,
    Layout,
    MemoryConfig,
    NdShardSpec,
    Shape,
    ShardDistributionStrategy,
    ShardOrientation,
    ShardSpec,
    ShardSpecError,
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
DEVICE_STORAGE_TYPE = StorageType.DEVICE  # TT-NN's ttnn/types.py

# TT-NN's namespaces among the modules above (the others, device_sim's own, are reachable but not in __all__).
_NAMESPACES = ("cluster", "core", "dtypes", "experimental", "graph", "kv_cache", "model_preprocessing", "operations",
               "tracer", "transformer")
__all__ = [name for name, value in globals().items()
           if not name.startswith("_") and (not isinstance(value, _ModuleType) or name in _NAMESPACES)]


def __getattr__(name: str):
    # A name device_sim lacks: under install_as_ttnn() the error says `module 'ttnn'`, as the script wrote it.
    raise _missing_attribute(__name__, name)


# Last: reading TTNN_CONFIG_OVERRIDES may start a report, whose writer (found by entry point) imports device_sim
# and needs every name above.
_config.apply_environment()
