"""Tensors on a mesh: one logical tensor with a shard per chip, and how torch tensors map onto it.

    import device_sim as ttnn
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(2, 4))
    w = ttnn.from_torch(torch.randn(64, 256), device=mesh, layout=ttnn.TILE,
                        mesh_mapper=ttnn.ShardTensor2dMesh(mesh, mesh_shape=(2, 4), dims=(0, 1)))
    w.shape                                   # Shape([32, 64]): each chip's shard, as in TT-NN
    y = ttnn.relu(w)                          # one op, run on every chip's shard
    full = ttnn.to_torch(y, mesh_composer=ttnn.ConcatMesh2dToTensor(mesh, mesh_shape=(2, 4), dims=(0, 1)))

Mappers split a torch tensor into one piece per chip (row-major over the mesh); composers
join the pieces back. An op given a mesh tensor (or a multi-chip mesh as its device) runs once
per chip on that chip's shards (per_device_runner, installed in the registry while a
multi-chip mesh is open); profilers see one op whose output is a MeshTensor.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import torch

from device_sim import mesh as mesh_module
from device_sim import registry
from device_sim.mesh import MeshDevice, MeshShape
from device_sim.tensor import Tensor, next_tensor_id


class MeshTensor(Tensor):
    """A tensor on a mesh: `shards[i]` lives on chip i of `mesh` (row-major).

    Its shape, dtype, layout and memory config are each shard's (all shards agree on dtype and
    layout), as TT-NN reports them for a multi-device tensor; `value` is shard 0's values.
    It owns no buffer itself: each shard holds its own on its chip.
    """

    __slots__ = ("shards", "mesh")

    @classmethod
    def _assemble(cls, shards: list[Tensor], mesh: MeshDevice) -> MeshTensor:
        if len(shards) != mesh.get_num_devices():
            raise ValueError(f"{mesh!r} has {mesh.get_num_devices()} chips but {len(shards)} shards were given")
        first = shards[0]
        for s in shards[1:]:
            if s.dtype != first.dtype or s.layout != first.layout:
                raise ValueError(f"mesh tensor shards disagree: {first.dtype!r}/{first.layout!r} and "
                                 f"{s.dtype!r}/{s.layout!r}; convert them to one dtype and layout first")
        t = cls.__new__(cls)
        t._value = first._value
        t.dtype, t.layout, t.tile = first.dtype, first.layout, first.tile
        on_device = first.device() is not None
        t._device = mesh if on_device else None
        t._memory_config = first._memory_config
        t.memory_config_source = first.memory_config_source
        t.buffer = None
        t.tensor_id = next_tensor_id()
        t.shards = list(shards)
        t.mesh = mesh
        return t

    def device_ids(self) -> list[int | None]:
        return [s.device().device_id if s.device() is not None else None for s in self.shards]

    def stacked_value(self) -> torch.Tensor:
        """Every shard's values stacked on a new leading (chip) axis; what a report stores for it."""
        return torch.stack([s._value_or_raise() for s in self.shards])

    def is_allocated(self) -> bool:
        return self._value is not None and all(s._value is not None for s in self.shards)

    def buffer_address(self) -> int:
        raise RuntimeError(f"mesh tensor {self.tensor_id} has one buffer per chip; "
                           f"use ttnn.get_device_tensors(tensor)[i].buffer_address()")

    def _free(self) -> None:
        for s in self.shards:
            s._free()
        self._value = None

    def __repr__(self) -> str:
        if self._value is None:
            return f"ttnn.Tensor(id={self.tensor_id}, deallocated)"
        where = f"mesh {'x'.join(map(str, self.mesh.shape))}" + (" (host)" if self._device is None else "")
        return (f"ttnn.Tensor(id={self.tensor_id}, shape={self.shape!r}, dtype={self.dtype!r}, "
                f"layout={self.layout!r}, {where}, {len(self.shards)} shards)")


# -- running an op once per chip ---------------------------------------------------------
def _mesh_of(x) -> MeshDevice | None:
    if isinstance(x, MeshTensor):
        return x.mesh
    if isinstance(x, MeshDevice) and len(x._chips) > 1:
        return x
    if type(x) in (list, tuple):
        for e in x:
            m = _mesh_of(e)
            if m is not None:
                return m
    return None


def _on_chip(x, i: int):
    if isinstance(x, MeshTensor):
        return x.shards[i]
    if isinstance(x, MeshDevice) and len(x._chips) > 1:
        return x._chips[i]
    if type(x) in (list, tuple):
        return type(x)(_on_chip(e, i) for e in x)
    return x


_chip = threading.local()  # `index`: the chip whose shards an op body is running on, during a per-chip run


def per_device_runner(op, function, args: tuple, kwargs: dict):
    """The registry's mesh seam: None for an ordinary call, else a callable that makes the call.

    An op given a mesh tensor (or a multi-chip mesh) runs once per chip on that chip's shards and is
    recorded once, its output a MeshTensor. An op its body calls (linear's matmul) runs per chip too;
    chip 0's call is recorded as the nested op, the other chips' are not, so the report nests it once.
    """
    if getattr(_chip, "index", None):
        return function
    mesh = None
    for a in args:
        mesh = _mesh_of(a)
        if mesh is not None:
            break
    else:
        for v in kwargs.values():
            mesh = _mesh_of(v)
            if mesh is not None:
                break
    if mesh is None:
        return None
    n = len(mesh._chips)
    for x in (*args, *kwargs.values()):
        if isinstance(x, MeshTensor) and len(x.shards) != n:
            raise ValueError(f"tensor {x.tensor_id} is on {x.mesh!r} but another argument is on {mesh!r}; "
                             f"an op's mesh tensors must share one mesh")

    def run(*args, **kwargs):
        hook = registry.get_hook()
        token = hook.begin(op, args, kwargs) if hook is not None else None
        try:
            outs = []
            with mesh.lockstep():  # each output is one mesh buffer: one address on every chip
                for i in range(n):
                    _chip.index = i
                    outs.append(function(*_on_chip(args, i), **{k: _on_chip(v, i) for k, v in kwargs.items()}))
            result = _assemble_outputs(outs, mesh)
        except BaseException as exc:
            if hook is not None:
                hook.end(token, None, exc)
            raise
        finally:
            _chip.index = None
        if hook is not None:
            hook.end(token, result, None)
        return result

    return run


registry.register_mesh_runner(per_device_runner)


def _assemble_outputs(outs: list, mesh: MeshDevice):
    first = outs[0]
    if isinstance(first, Tensor):
        return MeshTensor._assemble(outs, mesh)
    if first is None:
        return None
    if type(first) in (list, tuple):
        return type(first)(_assemble_outputs([o[k] for o in outs], mesh) for k in range(len(first)))
    return first if all(o == first for o in outs) else outs


# -- placements and mesh mappers (TT-NN's MeshMapperConfig) ------------------------------
@dataclass(frozen=True)
class PlacementReplicate:
    """The whole tensor on every chip along this mesh dimension."""


@dataclass(frozen=True)
class PlacementShard:
    """The tensor split along tensor dimension `dim` across this mesh dimension."""

    dim: int


@dataclass(frozen=True)
class MeshMapperConfig:
    placements: list
    mesh_shape_override: MeshShape | None = None


@dataclass(frozen=True)
class MeshComposerConfig:
    dims: list
    mesh_shape_override: MeshShape | None = None


class TensorToMesh:
    """Splits a torch tensor into one piece per chip of `mesh`; built by the mapper functions below."""

    def __init__(self, mesh: MeshDevice, config: MeshMapperConfig, name: str):
        self.mesh, self.config, self.name = mesh, config, name
        shape = MeshShape(config.mesh_shape_override) if config.mesh_shape_override else mesh.shape
        if shape.mesh_size() != mesh.get_num_devices():
            raise ValueError(f"{name}: mesh shape {tuple(shape)} has {shape.mesh_size()} chips but {mesh!r} has "
                             f"{mesh.get_num_devices()}; give the mesh's own shape {tuple(mesh.shape)}")
        if len(config.placements) not in (1, len(shape)):
            raise ValueError(f"{name}: {len(config.placements)} placements for a {len(shape)}-D mesh; give one per "
                             f"mesh dimension (ttnn.PlacementReplicate() or ttnn.PlacementShard(dim))")
        # One placement spreads over the chips as a line (TT-NN's 1-D mapping of a 2-D mesh).
        self.shape = shape if len(config.placements) == len(shape) else MeshShape(shape.mesh_size())

    def map(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        pieces = [tensor]
        for size, placement in zip(self.shape, self.config.placements):
            if isinstance(placement, PlacementShard):
                pieces = [p for whole in pieces for p in _split(whole, placement.dim, size, self.name)]
            elif isinstance(placement, PlacementReplicate):
                pieces = [whole for whole in pieces for _ in range(size)]
            else:
                raise TypeError(f"{self.name}: placement {placement!r} is neither ttnn.PlacementReplicate() nor "
                                f"ttnn.PlacementShard(dim)")
        return pieces

    def __repr__(self) -> str:
        return f"{self.name}({self.mesh!r}, {self.config!r})"


def _split(t: torch.Tensor, dim: int, n: int, name: str) -> list[torch.Tensor]:
    if not -t.dim() <= dim < t.dim():
        raise ValueError(f"{name}: tensor of shape {list(t.shape)} has no dim {dim} to shard")
    if t.shape[dim] % n:
        raise ValueError(f"{name}: dim {dim} of shape {list(t.shape)} ({t.shape[dim]}) does not split evenly into "
                         f"{n} shards; pad it to a multiple of {n}")
    return list(torch.chunk(t, n, dim))


class MeshToTensor:
    """Joins a mesh tensor's shards into one torch tensor; built by the composer functions below."""

    def __init__(self, mesh: MeshDevice, config: MeshComposerConfig, name: str):
        self.mesh, self.config, self.name = mesh, config, name
        shape = MeshShape(config.mesh_shape_override) if config.mesh_shape_override else mesh.shape
        if len(config.dims) not in (1, len(shape)):
            raise ValueError(f"{name}: {len(config.dims)} dims for a {len(shape)}-D mesh; give one per mesh dimension")
        self.shape = shape if len(config.dims) == len(shape) else MeshShape(shape.mesh_size())

    def compose(self, pieces: list[torch.Tensor]) -> torch.Tensor:
        if len(pieces) != self.shape.mesh_size():
            raise ValueError(f"{self.name}: {len(pieces)} shards for a mesh of {self.shape.mesh_size()} chips")
        # Join the last mesh dimension first: a 2x4 mesh gives 2 rows of 4, then one tensor.
        for size, dim in reversed(list(zip(self.shape, self.config.dims))):
            pieces = [torch.cat(pieces[k:k + size], dim) for k in range(0, len(pieces), size)]
        return pieces[0]


def replicate_tensor_to_mesh_mapper(mesh_device: MeshDevice) -> TensorToMesh:
    return TensorToMesh(mesh_device, MeshMapperConfig([PlacementReplicate()]), "replicate_tensor_to_mesh_mapper")


def shard_tensor_to_mesh_mapper(mesh_device: MeshDevice, dim: int) -> TensorToMesh:
    return TensorToMesh(mesh_device, MeshMapperConfig([PlacementShard(dim)]), "shard_tensor_to_mesh_mapper")


def create_mesh_mapper(mesh_device: MeshDevice, config: MeshMapperConfig) -> TensorToMesh:
    return TensorToMesh(mesh_device, config, "create_mesh_mapper")


def concat_mesh_to_tensor_composer(mesh_device: MeshDevice, dim: int) -> MeshToTensor:
    return MeshToTensor(mesh_device, MeshComposerConfig([dim]), "concat_mesh_to_tensor_composer")


def create_mesh_composer(mesh_device: MeshDevice, config: MeshComposerConfig) -> MeshToTensor:
    return MeshToTensor(mesh_device, config, "create_mesh_composer")


# TT-NN's older spellings, still what most models write.
def ReplicateTensorToMesh(mesh_device: MeshDevice) -> TensorToMesh:  # noqa: N802
    return replicate_tensor_to_mesh_mapper(mesh_device)


def ShardTensorToMesh(mesh_device: MeshDevice, dim: int) -> TensorToMesh:  # noqa: N802
    return shard_tensor_to_mesh_mapper(mesh_device, dim)


def ShardTensor2dMesh(mesh_device: MeshDevice, mesh_shape, dims) -> TensorToMesh:  # noqa: N802
    """dims[0] shards over mesh rows and dims[1] over columns; None replicates along that mesh dimension."""
    placements = [PlacementReplicate() if d is None else PlacementShard(d) for d in dims]
    return TensorToMesh(mesh_device, MeshMapperConfig(placements, MeshShape(mesh_shape)), "ShardTensor2dMesh")


def ConcatMeshToTensor(mesh_device: MeshDevice, dim: int) -> MeshToTensor:  # noqa: N802
    return concat_mesh_to_tensor_composer(mesh_device, dim)


def ConcatMesh2dToTensor(mesh_device: MeshDevice, mesh_shape, dims) -> MeshToTensor:  # noqa: N802
    return MeshToTensor(mesh_device, MeshComposerConfig(list(dims), MeshShape(mesh_shape)), "ConcatMesh2dToTensor")


# -- the from_torch / to_torch seams -----------------------------------------------------
def mesh_from_torch(make_one, tensor: torch.Tensor, mesh_mapper, device):
    """from_torch onto a mesh: `make_one(piece, chip)` makes each shard (chip None: on the host).

    No mapper with a multi-chip mesh replicates, as TT-NN does; one chip gives a plain tensor.
    """
    if mesh_mapper is None:
        mesh_mapper = replicate_tensor_to_mesh_mapper(device)
    if not isinstance(mesh_mapper, TensorToMesh):
        raise TypeError(f"mesh_mapper must come from ttnn.ShardTensorToMesh, ReplicateTensorToMesh, "
                        f"ShardTensor2dMesh or create_mesh_mapper; got {type(mesh_mapper).__name__}")
    mesh = mesh_mapper.mesh
    if device is not None and device is not mesh and _chips_of(device) != _chips_of(mesh):
        raise ValueError(f"mesh_mapper is for {mesh!r} but device= is {device!r}; build the mapper for that device")
    pieces = mesh_mapper.map(tensor)
    chips = mesh._chips if device is not None else [None] * len(pieces)
    with mesh.lockstep():  # one mesh buffer: one address on every chip
        shards = [make_one(p.contiguous(), c) for p, c in zip(pieces, chips)]
    return shards[0] if len(shards) == 1 else MeshTensor._assemble(shards, mesh)


def _chips_of(device) -> list:
    return getattr(device, "_chips", [device])


def mesh_to_torch(tensor: Tensor, mesh_composer) -> torch.Tensor:
    """to_torch of a mesh tensor: the composer joins the shards (needed when there are several)."""
    shards = get_device_tensors(tensor)
    if mesh_composer is None:
        if len(shards) > 1:
            raise ValueError(f"tensor {tensor.tensor_id} has {len(shards)} shards on {tensor.mesh!r}; pass "
                             f"mesh_composer=ttnn.ConcatMeshToTensor(mesh, dim) (or ConcatMesh2dToTensor) to join them")
        return shards[0]._value_or_raise().clone()
    if not isinstance(mesh_composer, MeshToTensor):
        raise TypeError(f"mesh_composer must come from ttnn.ConcatMeshToTensor, ConcatMesh2dToTensor or "
                        f"create_mesh_composer; got {type(mesh_composer).__name__}")
    return mesh_composer.compose([s._value_or_raise() for s in shards])


def get_device_tensors(tensor: Tensor) -> list[Tensor]:
    """The per-chip tensors of a mesh tensor, row-major (a single-chip tensor gives itself)."""
    if isinstance(tensor, MeshTensor):
        return list(tensor.shards)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"get_device_tensors takes a ttnn tensor, got {type(tensor).__name__}")
    return [tensor]


def visualize_tensor(tensor: Tensor) -> None:
    """Print how a tensor lies over its mesh, as TT-NN's ttnn.visualize_tensor (ttnn/distributed/distributed.py)
    does: a box per chip with its device id and its shard's shape, and shards that hold the same values (replicas)
    numbered alike. A host tensor made with a mesh_mapper shows where each shard will go."""
    shards = get_device_tensors(tensor)
    mesh = tensor.mesh if isinstance(tensor, MeshTensor) else None
    shape = mesh.shape if mesh is not None else MeshShape(1, 1)
    ids = mesh.get_device_ids() if mesh is not None else [getattr(tensor.device(), "device_id", 0)]
    # Replica groups by value: TT-NN colours replicas alike from the tensor's placements; device_sim keeps no
    # placements on a MeshTensor, so equal shards are what a replicated placement gives.
    groups: list[int] = []
    for i, s in enumerate(shards):
        same = next((groups[j] for j in range(i) if torch.equal(shards[j]._value_or_raise(), s._value_or_raise())),
                    None)
        groups.append(same if same is not None else len(set(groups)))
    where = "host" if tensor.device() is None else "device"
    cols = mesh_module.rows_cols(shape)[1]

    def cell(r: int, c: int) -> list[str]:
        i = r * cols + c
        return [f"Dev. ID: {ids[i]}", f"({r}, {c})", f"shard {list(shards[i].shape)}", f"replica group {groups[i]}"]

    mesh_module.print_grid(f"Tensor {tensor.tensor_id} ({tensor.dtype!r}, {tensor.layout!r}) on {where}, "
                           f"{len(shards)} shards", shape, cell)


def aggregate_as_tensor(tensors: list[Tensor]) -> Tensor:
    """One mesh tensor from per-chip tensors (one per chip of their mesh, row-major)."""
    tensors = list(tensors)
    if not tensors or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError("aggregate_as_tensor takes a non-empty list of ttnn tensors, one per chip")
    if len(tensors) == 1:
        return tensors[0]
    devices = [t.device() for t in tensors]
    if any(d is None for d in devices):
        raise ValueError("aggregate_as_tensor: give device tensors (one per chip), not host tensors")
    mesh = _mesh_holding(devices)
    return MeshTensor._assemble(tensors, mesh)


def _mesh_holding(devices: list) -> MeshDevice:
    """The open mesh whose chips are exactly `devices`, in order."""
    for mesh in reversed(mesh_module.open_meshes):
        if len(mesh._chips) == len(devices) and all(a is b for a, b in zip(mesh._chips, devices)):
            return mesh
    ids = [d.device_id for d in devices]
    raise ValueError(f"aggregate_as_tensor: no open mesh has exactly the chips {ids} in this order; give one "
                     f"tensor per chip of the mesh, row-major (as ttnn.get_device_tensors returns them)")


def combine_device_tensors(*, tensors: list[Tensor]) -> Tensor:
    """TT-NN's other name for aggregate_as_tensor: one mesh tensor from one device tensor per chip."""
    return aggregate_as_tensor(tensors)


def from_host_shards(tensors: list[Tensor], mesh_shape) -> Tensor:
    """A host mesh tensor from one host tensor per chip of an open mesh of `mesh_shape` (row-major)."""
    tensors, shape = list(tensors), MeshShape(mesh_shape)
    if any(not isinstance(t, Tensor) or t.device() is not None for t in tensors):
        raise TypeError("from_host_shards takes host ttnn tensors (from_torch without device=), one per chip")
    if len(tensors) != shape.mesh_size():
        raise ValueError(f"from_host_shards: {len(tensors)} tensors for a {shape!r} mesh of {shape.mesh_size()}")
    for mesh in reversed(mesh_module.open_meshes):
        if tuple(mesh.shape) == tuple(shape):
            return MeshTensor._assemble(tensors, mesh)
    raise ValueError(f"from_host_shards: no open mesh has shape {tuple(shape)}; open it first with "
                     f"ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape{tuple(shape)})")


# -- the multi-host context. device_sim is one process on one host: rank 0 of 1. -----------------
def using_distributed_env() -> bool:
    """Whether the run is one of several processes (TT-NN's tt-run / MPI): never, for device_sim."""
    return False


def init_distributed_context() -> None:
    """Nothing to set up for a single process."""


def distributed_context_get_rank() -> int:
    return 0


def distributed_context_get_size() -> int:
    return 1


def distributed_context_barrier() -> None:
    """Every process of one has arrived."""
