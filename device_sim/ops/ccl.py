"""Collectives: ops that move data between the chips of a mesh (TT-NN 0.81's CCL ops).

    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(2, 4))
    x = ttnn.from_torch(torch.randn(1, 1, 32, 256), device=mesh, layout=ttnn.TILE,
                        mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))     # 32 columns per chip
    y = ttnn.all_gather(x, dim=3)                  # every chip: all 256 columns
    r = ttnn.reduce_scatter(y, dim=3, cluster_axis=1)  # sum along each row of 4 chips, a quarter each

A collective works on groups of chips: with `cluster_axis=None` every chip of the mesh, with
0 each column of chips (the chips that differ only in row), with 1 each row. Sums are taken
in float32 over the group's shards in group order and rounded to the output dtype once.
Fabric settings (topology, num_links, semaphores, ...) are checked for type; the emulator moves
the data in host memory. all_gather, reduce_scatter and all_reduce (and their async forms) launch
each chip's device programs (device_sim.ops.ccl_work), whose workers follow topology and num_links.
"""

from __future__ import annotations

import torch

from device_sim.distributed import MeshTensor
from device_sim.mesh import MeshCoordinate, MeshDevice, rows_cols
from device_sim.ops import ccl_work
from device_sim.ops.ccl_work import GlobalSemaphore
from device_sim.ops.common import check_tt_nn_only, output, values
from device_sim.registry import OWN_NAME, register_op
from device_sim.tensor import Tensor
from device_sim.types import BufferType, MemoryConfig, _TTEnum

# Why the collectives have no golden: a chip's result depends on the other chips' shards, which no golden of one
# shard's values sees; tests/test_ccl.py checks them against torch on whole meshes.
_ON_WHOLE_MESHES = "a chip's result depends on the other chips' shards: tests/test_ccl.py checks it on whole meshes"


class Topology(_TTEnum):
    """tt::tt_fabric::Topology."""

    Ring = 0
    Linear = 1
    Mesh = 2
    Torus = 3


class FabricConfig(_TTEnum):
    """tt::tt_fabric::FabricConfig (TT-NN 0.81's numbering)."""

    DISABLED = 0
    FABRIC_1D_NEIGHBOR_EXCHANGE = 1
    FABRIC_1D = 2
    FABRIC_1D_RING = 3
    FABRIC_2D = 4
    FABRIC_2D_TORUS_X = 5
    FABRIC_2D_TORUS_Y = 6
    FABRIC_2D_TORUS_XY = 7
    CUSTOM = 8


class ReduceType(_TTEnum):
    Sum = 0
    Mean = 1
    Max = 2
    Min = 3
    Std = 4
    Var = 5


_fabric = {"config": FabricConfig.DISABLED}


def set_fabric_config(config, reliability_mode=None, num_planes=None, *_, **__) -> None:
    """Record the fabric mode (TT-NN sets up the chips' ethernet routers here; the emulator needs none)."""
    _fabric["config"] = FabricConfig(config)


def get_fabric_config() -> FabricConfig:
    return _fabric["config"]


def create_global_semaphore(mesh_device, cores, initial_value: int, buffer_type=BufferType.L1) -> GlobalSemaphore:
    if not isinstance(mesh_device, MeshDevice):
        raise TypeError(f"create_global_semaphore takes a mesh device first, got {type(mesh_device).__name__}")
    if BufferType(buffer_type) not in (BufferType.L1, BufferType.L1_SMALL):
        raise ValueError(f"create_global_semaphore: buffer_type={buffer_type!r}; a semaphore lives in L1")
    # L1_SMALL is a reserved corner of L1 on real chips; the emulator's L1 allocator stands for both.
    return GlobalSemaphore(mesh_device, cores, initial_value, BufferType.L1)


def get_global_semaphore_address(semaphore: GlobalSemaphore) -> int:
    return semaphore.address()


def reset_global_semaphore_value(semaphore: GlobalSemaphore, value: int) -> None:
    semaphore.value = int(value)


# -- what every collective checks ----------------------------------------------------------
# The tuning keywords TT-NN's CCL ops take (subdevice_id, chunks_per_sync, num_workers_per_link, ...)
# are named in each signature, so a script's call binds as it does in TT-NN; they change how real
# fabric moves the data, never the result, and are not used here.
def _check_fabric_args(op_name: str, topology, num_links, tt_nn_only: dict, barrier_semaphore=None,
                       mesh_device=None, tensor=None) -> None:
    if topology is not None and not isinstance(topology, Topology):
        raise TypeError(f"{op_name}: topology={topology!r}; give ttnn.Topology.Linear or ttnn.Topology.Ring")
    if num_links is not None and (not isinstance(num_links, int) or num_links < 1):
        raise ValueError(f"{op_name}: num_links={num_links!r}; give a positive number of ethernet links")
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    if barrier_semaphore is not None:
        _check_semaphores(op_name, "barrier_semaphore", barrier_semaphore)
    if mesh_device is not None and isinstance(tensor, Tensor):
        chips = tensor.mesh.get_devices() if isinstance(tensor, MeshTensor) else [tensor.device()]
        if mesh_device.get_devices() != chips:
            raise ValueError(f"{op_name}: mesh_device={mesh_device!r} is not the mesh tensor {tensor.tensor_id} is on")


def _check_semaphores(op_name: str, name: str, sems) -> None:
    items = sems if isinstance(sems, (list, tuple)) else [sems]
    if sems is None or not items or not all(isinstance(s, GlobalSemaphore) for s in items):
        raise TypeError(f"{op_name}: {name}= must be a ttnn.GlobalSemaphore (or a list of them) from "
                        f"ttnn.create_global_semaphore(mesh_device, cores, 0); got {sems!r}")


def _shards(op_name: str, t) -> tuple[list[Tensor], MeshDevice | None]:
    if isinstance(t, MeshTensor):
        if t.device() is None:
            raise ValueError(f"{op_name}: tensor {t.tensor_id} is on the host; move it to the mesh with "
                             f"ttnn.to_device(tensor, mesh_device) first")
        return t.shards, t.mesh
    if not isinstance(t, Tensor):
        raise TypeError(f"{op_name} takes a ttnn tensor, got {type(t).__name__}")
    if t.device() is None:
        raise ValueError(f"{op_name}: tensor {t.tensor_id} is on the host; put it on a device first")
    return [t], None


def _groups(op_name: str, mesh: MeshDevice | None, cluster_axis) -> list[list[int]]:
    """Shard indices that act together: all chips, or the lines along `cluster_axis`."""
    shape = (1, 1) if mesh is None else tuple(mesh.shape)
    if cluster_axis is not None and (not isinstance(cluster_axis, int) or not 0 <= cluster_axis < len(shape)):
        raise ValueError(f"{op_name}: cluster_axis={cluster_axis!r}, but the mesh {list(shape)} has axes "
                         f"{list(range(len(shape)))} (0: along a column of chips, 1: along a row); or give None "
                         f"for all chips")
    rows, cols = rows_cols(shape)
    if cluster_axis is None:
        return [list(range(rows * cols))]
    if len(shape) == 1 or cluster_axis == 1:
        return [[r * cols + c for c in range(cols)] for r in range(rows)]
    return [[r * cols + c for r in range(rows)] for c in range(cols)]


def _check_dim(op_name: str, dim, rank: int) -> int:
    if not isinstance(dim, int) or not -rank <= dim < rank:
        raise ValueError(f"{op_name}: dim={dim!r} is not a dimension of a rank-{rank} tensor")
    return dim % rank


def _results(op_name: str, shards: list[Tensor], mesh, new_values: list[torch.Tensor], memory_config, dtype=None):
    if mesh is None:
        return output(new_values[0], like=shards[0], inputs=[shards[0]], op_name=op_name,
                      memory_config=memory_config, dtype=dtype)
    with mesh.lockstep():  # one mesh buffer: one address on every chip
        outs = [output(v, like=s, inputs=[s], op_name=op_name, memory_config=memory_config, dtype=dtype)
                for s, v in zip(shards, new_values)]
    return MeshTensor._assemble(outs, mesh)


def _no_output_tensor(op_name: str, given) -> None:
    if given is not None:
        raise TypeError(f"{op_name}: device_sim does not write collectives into a given tensor "
                        f"(output_tensor / persistent buffers); drop it and use the returned tensor")


# -- the collectives -------------------------------------------------------------------------
def _gather(op_name, input_tensor, dim, cluster_axis, memory_config):
    shards, mesh = _shards(op_name, input_tensor)
    d = _check_dim(op_name, dim, len(shards[0].shape))
    new = [None] * len(shards)
    for group in _groups(op_name, mesh, cluster_axis):
        joined = torch.cat([values(shards[i]) for i in group], d)
        for i in group:
            new[i] = joined
    return _results(op_name, shards, mesh, new, memory_config)


def _is_ring(topology) -> bool:
    """TT-NN's topology for a collective: the one given, else Ring on a FABRIC_1D_RING fabric, else Linear
    (get_usable_topology)."""
    if topology is None:
        return _fabric["config"] == FabricConfig.FABRIC_1D_RING
    return topology == Topology.Ring


def _reduce_scatter(op_name, input_tensor, dim, cluster_axis, memory_config):
    shards, mesh = _shards(op_name, input_tensor)
    d = _check_dim(op_name, dim, len(shards[0].shape))
    new = [None] * len(shards)
    for group in _groups(op_name, mesh, cluster_axis):
        total = _sum([values(shards[i]) for i in group])
        if total.shape[d] % len(group):
            raise ValueError(f"{op_name}: dim {dim} of shape {list(total.shape)} does not split evenly over the "
                             f"{len(group)} chips of the group; pad it to a multiple of {len(group)}")
        for i, piece in zip(group, torch.chunk(total, len(group), d)):
            new[i] = piece
    return _results(op_name, shards, mesh, new, memory_config)


def _all_reduce(op_name, input_tensor, cluster_axis, memory_config, dtype=None):
    shards, mesh = _shards(op_name, input_tensor)
    new = [None] * len(shards)
    for group in _groups(op_name, mesh, cluster_axis):
        total = _sum([values(shards[i]) for i in group])
        for i in group:
            new[i] = total
    return _results(op_name, shards, mesh, new, memory_config, dtype)


def _sum(parts: list[torch.Tensor]) -> torch.Tensor:
    shapes = {tuple(p.shape) for p in parts}
    if len(shapes) > 1:
        raise ValueError(f"cannot reduce shards of different shapes {sorted(shapes)} across chips")
    total = parts[0].clone()
    for p in parts[1:]:
        total += p
    return total


@register_op("ttnn.all_gather", collective="gather", no_golden=_ON_WHOLE_MESHES, mesh_aware=True)
def all_gather(input_tensor, dim: int, *, cluster_axis: int | None = None, memory_config: MemoryConfig | None = None,
               output_tensor=None, subdevice_id=None, sub_core_grids=None, num_links: int | None = None,
               topology: Topology | None = None, chunks_per_sync=None, num_workers_per_link=None,
               num_buffers_per_channel=None, use_l1_small_for_semaphores: bool = False, mesh_device=None,
               op_name: str = OWN_NAME, **tt_nn_only):
    """Every chip gets the shards of its group joined along `dim` (shape[dim] x group size).

    mesh_device= is the older TT-NN spelling's; when given it must be the tensor's mesh.

    >>> mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    >>> t = ttnn.from_torch(torch.arange(64.0).reshape(1, 1, 1, 64), layout=ttnn.TILE, device=mesh,
    ...                      mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
    >>> [s.shape for s in ttnn.get_device_tensors(ttnn.all_gather(t, dim=3))]
    [Shape([1, 1, 1, 64]), Shape([1, 1, 1, 64])]
    >>> ttnn.close_mesh_device(mesh)
    """
    _check_fabric_args(op_name, topology, num_links, tt_nn_only, mesh_device=mesh_device,
                       tensor=input_tensor)
    _no_output_tensor(op_name, output_tensor)
    out = _gather(op_name, input_tensor, dim, cluster_axis, memory_config)
    ccl_work.launch_gather(input_tensor, out, cluster_axis, _is_ring(topology), num_links,
                           name="AllGatherDeviceOperation")
    return out


@register_op("ttnn.reduce_scatter", collective="reduce_scatter", no_golden=_ON_WHOLE_MESHES, mesh_aware=True)
def reduce_scatter(input_tensor, dim: int, *, cluster_axis: int | None = None, subdevice_id=None,
                   memory_config: MemoryConfig | None = None, intermediate_memory_config=None, output_tensor=None,
                   num_links: int | None = None, topology: Topology | None = None, chunks_per_sync=None,
                   num_workers_per_link=None, num_buffers_per_channel=None, compute_kernel_config=None,
                   use_l1_small_for_semaphores: bool = False, op_name: str = OWN_NAME, **tt_nn_only):
    """The group's shards summed, then split along `dim`: the k-th chip of the group keeps the k-th part.

    >>> mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    >>> t = ttnn.from_torch(torch.arange(64.0).reshape(1, 1, 1, 64), layout=ttnn.TILE, device=mesh,
    ...                      mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
    >>> [s.shape for s in ttnn.get_device_tensors(ttnn.reduce_scatter(t, dim=3))]
    [Shape([1, 1, 1, 16]), Shape([1, 1, 1, 16])]
    >>> ttnn.close_mesh_device(mesh)
    """
    _check_fabric_args(op_name, topology, num_links, tt_nn_only)
    _no_output_tensor(op_name, output_tensor)
    out = _reduce_scatter(op_name, input_tensor, dim, cluster_axis, memory_config)
    ccl_work.launch_reduce_scatter(input_tensor, out, dim, cluster_axis, _is_ring(topology), num_links,
                                   name="ReduceScatterDeviceOperation")
    return out


@register_op("ttnn.all_reduce", collective="all_reduce", no_golden=_ON_WHOLE_MESHES, mesh_aware=True)
def all_reduce(input_tensor, *, cluster_axis: int | None = None, subdevice_id=None,
               memory_config: MemoryConfig | None = None, num_links: int | None = None,
               topology: Topology | None = None, compute_kernel_config=None, op_name: str = OWN_NAME, **tt_nn_only):
    """Every chip gets the sum of its group's shards.

    >>> mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    >>> t = ttnn.from_torch(torch.arange(64.0).reshape(1, 1, 1, 64), layout=ttnn.TILE, device=mesh,
    ...                      mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
    >>> [s.to_torch()[0, 0, 0, 0].item() for s in ttnn.get_device_tensors(ttnn.all_reduce(t))]
    [32.0, 32.0]
    >>> ttnn.close_mesh_device(mesh)
    """
    _check_fabric_args(op_name, topology, num_links, tt_nn_only)
    out = _all_reduce(op_name, input_tensor, cluster_axis, memory_config)
    ccl_work.launch_all_reduce(input_tensor, out, cluster_axis, _is_ring(topology), num_links)
    return out


@register_op("ttnn.point_to_point", collective="point_to_point", no_golden=_ON_WHOLE_MESHES, mesh_aware=True)
def point_to_point(input_tensor, sender_coord, receiver_coord, *, output_tensor=None, intermediate_tensor=None,
                   topology: Topology = Topology.Linear, op_name: str = OWN_NAME):
    """The sender chip's shard delivered to the receiver chip; every other chip keeps its own shard.

    >>> mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    >>> t = ttnn.from_torch(torch.arange(64.0).reshape(1, 1, 1, 64), layout=ttnn.TILE, device=mesh,
    ...                      mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
    >>> y = ttnn.point_to_point(t, ttnn.MeshCoordinate(0, 0), ttnn.MeshCoordinate(0, 1))
    >>> [s.to_torch()[0, 0, 0, 0].item() for s in ttnn.get_device_tensors(y)]  # chip 1 held 32..63
    [0.0, 0.0]
    >>> ttnn.close_mesh_device(mesh)
    """
    _check_fabric_args(op_name, topology, None, {})
    _no_output_tensor(op_name, output_tensor if output_tensor is not None else intermediate_tensor)
    shards, mesh = _shards(op_name, input_tensor)
    if mesh is None:
        raise ValueError(f"{op_name}: tensor {input_tensor.tensor_id} is on one device; it needs a mesh tensor")
    src, dst = mesh.index_of(MeshCoordinate(sender_coord)), mesh.index_of(MeshCoordinate(receiver_coord))
    new = [values(s) for s in shards]
    new[dst] = new[src]
    out = _results(op_name, shards, mesh, new, None)
    ccl_work.launch_point_to_point(input_tensor, out, src, dst)
    return out


@register_op("ttnn.mesh_partition", no_golden=_ON_WHOLE_MESHES, mesh_aware=True)
def mesh_partition(input_tensor, dim: int, cluster_axis: int | None = None, *,
                   memory_config: MemoryConfig | None = None, op_name: str = OWN_NAME, **tt_nn_only):
    """The inverse of all_gather: the k-th chip of each group keeps the k-th part of its shard along `dim`.

    >>> mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    >>> t = ttnn.from_torch(torch.zeros(1, 1, 1, 64), layout=ttnn.TILE, device=mesh)
    >>> [s.shape for s in ttnn.get_device_tensors(ttnn.mesh_partition(t, 3, cluster_axis=1))]
    [Shape([1, 1, 1, 32]), Shape([1, 1, 1, 32])]
    >>> ttnn.close_mesh_device(mesh)
    """
    if tt_nn_only:
        check_tt_nn_only(op_name, tt_nn_only)
    shards, mesh = _shards(op_name, input_tensor)
    d = _check_dim(op_name, dim, len(shards[0].shape))
    new = [None] * len(shards)
    for group in _groups(op_name, mesh, cluster_axis):
        for k, i in enumerate(group):
            v = values(shards[i])
            if v.shape[d] % len(group):
                raise ValueError(f"{op_name}: dim {dim} of shape {list(v.shape)} does not split evenly over the "
                                 f"{len(group)} chips of the group; pad it to a multiple of {len(group)}")
            new[i] = torch.chunk(v, len(group), d)[k]
    out = _results(op_name, shards, mesh, new, memory_config)
    ccl_work.launch_partition(input_tensor, out, d, cluster_axis)
    return out


# -- ttnn.experimental's asynchronous forms (same results; the overloads TT-NN binds) ---------
@register_op("ttnn.experimental.all_gather_async", collective="gather", no_golden=_ON_WHOLE_MESHES,
             mesh_aware=True)
def all_gather_async(input_tensor, *args, dim: int | None = None, multi_device_global_semaphore=None,
                     cluster_axis: int | None = None, mesh_device=None, topology: Topology = Topology.Ring,
                     persistent_output_buffer=None, persistent_output_tensor=None, num_links: int | None = 1,
                     memory_config: MemoryConfig | None = None, subdevice_id=None, use_optimal_ccl_for_llama=False,
                     barrier_semaphore=None, chunks_per_sync=None, num_workers_per_link=None,
                     num_buffers_per_channel=None, sub_core_grids=None, op_name: str = OWN_NAME, **tt_nn_only):
    """TT-NN's three overloads: (t, dim, sems), (t, persistent_output_buffer, dim, sems) and
    (t, dim, cluster_axis, mesh_device, topology, sems); the rest by keyword.

    >>> mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    >>> t = ttnn.from_torch(torch.arange(64.0).reshape(1, 1, 1, 64), layout=ttnn.TILE, device=mesh,
    ...                      mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
    >>> sem = ttnn.create_global_semaphore(mesh, ttnn.CoreRangeSet([]), 0)
    >>> [s.shape for s in ttnn.get_device_tensors(ttnn.experimental.all_gather_async(t, 3, [sem]))]
    [Shape([1, 1, 1, 64]), Shape([1, 1, 1, 64])]
    >>> ttnn.close_mesh_device(mesh)
    """
    if args and (args[0] is None or isinstance(args[0], Tensor)):
        persistent_output_buffer, args = args[0], args[1:]
    names = ("dim", "cluster_axis", "mesh_device", "topology", "multi_device_global_semaphore") \
        if len(args) > 2 else ("dim", "multi_device_global_semaphore")
    given = dict(zip(names, args))
    dim = given.get("dim", dim)
    cluster_axis = given.get("cluster_axis", cluster_axis)
    topology = given.get("topology", topology)
    sems = given.get("multi_device_global_semaphore", multi_device_global_semaphore)
    if dim is None:
        raise TypeError(f"{op_name}() missing the dim to gather along")
    _check_semaphores(op_name, "multi_device_global_semaphore", sems)
    _check_fabric_args(op_name, topology, num_links, tt_nn_only, barrier_semaphore,
                       given.get("mesh_device", mesh_device), input_tensor)
    _no_output_tensor(op_name, persistent_output_buffer if persistent_output_buffer is not None
                      else persistent_output_tensor)
    out = _gather(op_name, input_tensor, dim, cluster_axis, memory_config)
    if not use_optimal_ccl_for_llama:  # the Llama variant runs its own sharded factory (not modelled)
        ccl_work.launch_gather(input_tensor, out, cluster_axis, _is_ring(topology), num_links,
                               name="AllGatherAsyncDeviceOperation")
    return out


@register_op("ttnn.experimental.reduce_scatter_minimal_async", collective="reduce_scatter",
             no_golden=_ON_WHOLE_MESHES, mesh_aware=True)
def reduce_scatter_minimal_async(input_tensor, persistent_output_buffers=None, dim: int | None = None,
                                 multi_device_global_semaphore=None, *, barrier_semaphore=None,
                                 num_links: int | None = 1, memory_config: MemoryConfig | None = None,
                                 intermediate_memory_config=None, topology: Topology = Topology.Ring,
                                 subdevice_id=None, cluster_axis: int | None = None, chunks_per_sync=None,
                                 num_workers_per_link=None, num_buffers_per_channel=None, compute_kernel_config=None,
                                 op_name: str = OWN_NAME, **tt_nn_only):
    """ttnn.reduce_scatter's result; TT-NN's persistent buffers and semaphores are taken.

    >>> mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    >>> t = ttnn.from_torch(torch.arange(64.0).reshape(1, 1, 1, 64), layout=ttnn.TILE, device=mesh,
    ...                      mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
    >>> sem = ttnn.create_global_semaphore(mesh, ttnn.CoreRangeSet([]), 0)
    >>> y = ttnn.experimental.reduce_scatter_minimal_async(t, None, 3, [sem, sem])
    >>> [s.shape for s in ttnn.get_device_tensors(y)]
    [Shape([1, 1, 1, 16]), Shape([1, 1, 1, 16])]
    >>> ttnn.close_mesh_device(mesh)
    """
    if dim is None:
        raise TypeError(f"{op_name}() missing the dim to scatter along")
    _check_semaphores(op_name, "multi_device_global_semaphore", multi_device_global_semaphore)
    _check_fabric_args(op_name, topology, num_links, tt_nn_only, barrier_semaphore)
    _no_output_tensor(op_name, persistent_output_buffers if persistent_output_buffers else None)
    out = _reduce_scatter(op_name, input_tensor, dim, cluster_axis, memory_config)
    ccl_work.launch_reduce_scatter(input_tensor, out, dim, cluster_axis, _is_ring(topology), num_links,
                                   name="ReduceScatterMinimalAsyncDeviceOperation")
    return out


@register_op("ttnn.experimental.all_reduce_async", collective="all_reduce", no_golden=_ON_WHOLE_MESHES,
             mesh_aware=True)
def all_reduce_async(input_tensor, *args, cluster_axis: int | None = None, mesh_device=None, math_op=None,
                     memory_config: MemoryConfig | None = None, topology: Topology = Topology.Linear,
                     num_links: int | None = None, dtype=None, multi_device_global_semaphore=None,
                     barrier_semaphores=None, rs_global_semaphores=None, ag_global_semaphores=None, subdevice_id=None,
                     use_noc1_only: bool = False, use_optimal_ccl_for_llama: bool = False,
                     op_name: str = OWN_NAME, **tt_nn_only):
    """TT-NN's overloads: (t, num_devices, barrier_sems, rs_sems, ag_sems, math_op),
    (t, cluster_axis, mesh_device, barrier_sems, rs_sems, ag_sems, math_op) and
    (t, buffer_tensor, cluster_axis, mesh_device, sem).

    >>> mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    >>> t = ttnn.from_torch(torch.arange(64.0).reshape(1, 1, 1, 64), layout=ttnn.TILE, device=mesh,
    ...                      mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
    >>> y = ttnn.experimental.all_reduce_async(t, cluster_axis=1, mesh_device=mesh, math_op=ttnn.ReduceType.Sum)
    >>> [s.to_torch()[0, 0, 0, 0].item() for s in ttnn.get_device_tensors(y)]
    [32.0, 32.0]
    >>> ttnn.close_mesh_device(mesh)
    """
    num_devices = None
    if args and isinstance(args[0], Tensor):  # (buffer_tensor, cluster_axis, mesh_device, semaphore)
        given = dict(zip(("buffer_tensor", "cluster_axis", "mesh_device", "multi_device_global_semaphore"), args))
        _check_semaphores(op_name, "multi_device_global_semaphore",
                          given.get("multi_device_global_semaphore", multi_device_global_semaphore))
    elif len(args) > 1 and isinstance(args[1], MeshDevice):
        given = dict(zip(("cluster_axis", "mesh_device", "barrier_semaphores", "rs_global_semaphores",
                          "ag_global_semaphores", "math_op"), args))
    else:
        given = dict(zip(("num_devices", "barrier_semaphores", "rs_global_semaphores", "ag_global_semaphores",
                          "math_op"), args))
        num_devices = given.get("num_devices")
    cluster_axis = given.get("cluster_axis", cluster_axis)
    math_op = given.get("math_op", math_op)
    if math_op is not None and ReduceType(math_op) != ReduceType.Sum:
        raise ValueError(f"{op_name}: math_op={math_op!r}; TT-NN's all_reduce_async sums (ttnn.ReduceType.Sum)")
    _check_fabric_args(op_name, topology, num_links, tt_nn_only, mesh_device=given.get("mesh_device", mesh_device),
                       tensor=input_tensor)
    shards, mesh = _shards(op_name, input_tensor)
    if num_devices is not None and num_devices != len(shards):
        raise ValueError(f"{op_name}: num_devices={num_devices} but the tensor has {len(shards)} shards")
    out = _all_reduce(op_name, input_tensor, cluster_axis, memory_config, dtype)
    if "buffer_tensor" not in given and not use_optimal_ccl_for_llama:  # the Llama-sharded forms: not modelled
        ccl_work.launch_all_reduce(input_tensor, out, cluster_axis, _is_ring(topology), num_links)
    return out
