"""A mesh of emulated chips: TT-NN's MeshDevice, MeshShape and MeshCoordinate.

    import device_sim as ttnn
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(2, 4))
    mesh.get_device_ids()            # [0, 1, ..., 7]: one chip each, with its own L1 and DRAM
    row = mesh.create_submesh(ttnn.MeshShape(1, 4))
    ttnn.close_mesh_device(mesh)

Every chip of a mesh is a `Device` with its own allocators and buffers; a mesh tensor's buffers are
allocated in lock step, one address on every chip (MeshDevice.lockstep), as TT-NN's MeshDevice allocates
a MeshBuffer once for all its chips. A mesh of one chip IS that chip (a MeshDevice
with its own memory): in TT-NN 0.81 `ttnn.Device` is `MeshDevice` and `open_device` returns a
1x1 mesh, and tensors on it are ordinary single-device tensors, so single-chip scripts pay
nothing for the mesh. A mesh of several chips holds no memory itself; its tensors keep one
shard per chip (device_sim.distributed.MeshTensor).

The emulated system has DEVICE_SIM_SYSTEM_MESH chips (rows x cols, default "2x4", a T3000);
`ttnn.get_num_devices()` counts them and `open_mesh_device()` with no shape opens all.
"""

from __future__ import annotations

import contextlib
import os

from device_sim import allocator, registry
from device_sim.device import Device, DeviceConfig, _open_devices, open_device

DEFAULT_SYSTEM_MESH = "2x4"


class MeshShape(tuple):
    """`ttnn.MeshShape(2, 4)` (or `MeshShape([2, 4])`): rows and columns of chips."""

    def __new__(cls, *dims):
        if len(dims) == 1 and not isinstance(dims[0], int):
            dims = tuple(dims[0])
        if not dims or any(not isinstance(d, int) or d < 1 for d in dims):
            raise ValueError(f"MeshShape{dims!r}: give positive integer sizes, e.g. ttnn.MeshShape(2, 4)")
        return super().__new__(cls, dims)

    def dims(self) -> int:
        return len(self)

    def mesh_size(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n

    def __repr__(self) -> str:
        return f"MeshShape([{', '.join(map(str, self))}])"


class MeshCoordinate(tuple):
    """`ttnn.MeshCoordinate(row, col)`: where a chip sits in its mesh."""

    def __new__(cls, *coords):
        if len(coords) == 1 and not isinstance(coords[0], int):
            coords = tuple(coords[0])
        if not coords or any(not isinstance(c, int) or c < 0 for c in coords):
            raise ValueError(f"MeshCoordinate{coords!r}: give non-negative integers, e.g. ttnn.MeshCoordinate(0, 1)")
        return super().__new__(cls, coords)

    def dims(self) -> int:
        return len(self)

    def coords(self) -> list[int]:
        return list(self)

    def __repr__(self) -> str:
        return f"MeshCoordinate([{', '.join(map(str, self))}])"


class MeshCoordinateRange:
    """Every coordinate from `start` to `end` inclusive (row-major), or of a whole MeshShape."""

    def __init__(self, start, end=None):
        if end is None:
            shape = MeshShape(start)
            start, end = MeshCoordinate([0] * len(shape)), MeshCoordinate([d - 1 for d in shape])
        self.start, self.end = MeshCoordinate(start), MeshCoordinate(end)
        if len(self.start) != len(self.end) or any(s > e for s, e in zip(self.start, self.end)):
            raise ValueError(f"MeshCoordinateRange({self.start!r}, {self.end!r}): start must not pass end")

    def __iter__(self):
        (r0, c0), (r1, c1) = _as_2d(self.start), _as_2d(self.end)
        for r in range(r0, r1 + 1):
            for c in range(c0, c1 + 1):
                yield MeshCoordinate(r, c) if len(self.start) == 2 else MeshCoordinate(c)

    def __len__(self) -> int:
        n = 1
        for s, e in zip(self.start, self.end):
            n *= e - s + 1
        return n

    def contains(self, coord) -> bool:
        return all(s <= c <= e for s, c, e in zip(self.start, MeshCoordinate(coord), self.end))

    __contains__ = contains

    def __repr__(self) -> str:
        return f"MeshCoordinateRange(start={self.start!r}, end={self.end!r})"


def _as_2d(coord) -> tuple[int, int]:
    """(row, col) of a coordinate; a 1-D one is in row 0."""
    return (0, coord[0]) if len(coord) == 1 else (coord[0], coord[1])


def rows_cols(shape) -> tuple[int, int]:
    """(rows, cols) of a mesh shape; a 1-D mesh of n chips is one row of n."""
    return (1, shape[0]) if len(shape) == 1 else (shape[0], shape[1])


class _NoMemory(AttributeError):
    """A multi-chip mesh has no allocator of its own (an AttributeError, so getattr(mesh, 'memory', None) works)."""


class MeshDevice(Device):
    """Chips in rows and columns. Built by open_mesh_device / open_device, not directly."""

    def __init__(self, shape: MeshShape, chips: list[Device] | None, *, device_id: int = 0,
                 config: DeviceConfig | None = None, parent: MeshDevice | None = None):
        shape = MeshShape(shape)
        if chips is None:  # a unit mesh: this object is the chip
            Device.__init__(self, device_id, config)
            chips = [self]
        else:
            self.device_id = None if len(chips) > 1 else chips[0].device_id
            self.config = chips[0].config
            self.is_open = True
            # a mesh's programs launch on its chips, which count them (Device.num_program_cache_entries)
            self.program_cache = chips[0].program_cache if len(chips) == 1 else None
            if len(chips) == 1:
                self.memory = chips[0].memory
        if shape.mesh_size() != len(chips):
            raise ValueError(f"a {shape!r} mesh needs {shape.mesh_size()} chips, got {len(chips)}")
        self._shape = shape
        self._chips = list(chips)
        self._parent = parent
        self._submeshes: list[MeshDevice] = []

    def __getattr__(self, name):
        # Only reached when normal lookup fails: the unit mesh's own `memory` costs nothing extra.
        if name == "memory":
            raise _NoMemory(
                f"{self!r} has {len(self._chips)} chips and no memory of its own; each chip has its "
                f"allocator: mesh.get_devices()[i].memory"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- what it is ------------------------------------------------------------------------
    @property
    def shape(self) -> MeshShape:
        return self._shape

    def get_num_devices(self) -> int:
        return len(self._chips)

    def get_device_ids(self) -> list[int]:
        return [c.device_id for c in self._chips]

    def get_devices(self) -> list[Device]:
        """The chips, row-major: chip i holds shard i of a mesh tensor."""
        return list(self._chips)

    def get_device(self, device_id: int) -> Device:
        for c in self._chips:
            if c.device_id == device_id:
                return c
        raise ValueError(f"device {device_id} is not in this mesh; its devices are {self.get_device_ids()}")

    def get_device_id(self, coord) -> int:
        return self._chips[self.index_of(coord)].device_id

    def index_of(self, coord) -> int:
        """Row-major index of `coord` (its chip and its shard)."""
        coord = MeshCoordinate(coord)
        if len(coord) != len(self._shape) or any(c >= d for c, d in zip(coord, self._shape)):
            raise ValueError(f"{coord!r} is outside this {self._shape!r} mesh")
        index = 0
        for c, d in zip(coord, self._shape):
            index = index * d + c
        return index

    def coordinate_of(self, index: int) -> MeshCoordinate:
        rows, cols = rows_cols(self._shape)
        return MeshCoordinate(divmod(index, cols)) if len(self._shape) == 2 else MeshCoordinate(index)

    @property
    def num_rows(self) -> int:
        return rows_cols(self._shape)[0]

    @property
    def num_cols(self) -> int:
        return rows_cols(self._shape)[1]

    def id(self) -> int:
        return self._chips[0].device_id

    def dram_grid_size(self):
        from device_sim.types import CoreCoord
        return CoreCoord(self.config.dram_banks, 1)

    # -- reshaping and submeshes -----------------------------------------------------------
    def reshape(self, shape) -> None:
        """Arrange the same chips as `shape` (row-major order kept)."""
        shape = MeshShape(shape)
        if shape.mesh_size() != len(self._chips):
            raise ValueError(f"cannot reshape a {self._shape!r} mesh of {len(self._chips)} chips to {shape!r}")
        self._shape = shape

    def create_submesh(self, submesh_shape, offset=None) -> MeshDevice:
        """The chips of `submesh_shape` starting at `offset` (default the origin), as a mesh of their own."""
        shape = MeshShape(submesh_shape)
        rows, cols = rows_cols(self._shape)
        sr, sc = rows_cols(shape)
        r0, c0 = _as_2d(MeshCoordinate(offset)) if offset is not None else (0, 0)
        if len(shape) != len(self._shape) or r0 + sr > rows or c0 + sc > cols:
            raise ValueError(f"a {shape!r} submesh at {offset!r} does not fit in this {self._shape!r} mesh")
        chips = [self._chips[r * cols + c] for r in range(r0, r0 + sr) for c in range(c0, c0 + sc)]
        sub = MeshDevice(shape, chips, parent=self)
        self._submeshes.append(sub)
        if len(chips) > 1:
            _multi_chip_opened(sub)
        return sub

    def create_submeshes(self, submesh_shape) -> list[MeshDevice]:
        """Tile the mesh with submeshes of `submesh_shape` (row-major); it must divide the mesh."""
        shape = MeshShape(submesh_shape)
        rows, cols = rows_cols(self._shape)
        sr, sc = rows_cols(shape)
        if rows % sr or cols % sc:
            raise ValueError(f"{shape!r} does not tile this {self._shape!r} mesh evenly")
        offsets = [(r, c) for r in range(0, rows, sr) for c in range(0, cols, sc)]
        return [self.create_submesh(shape, MeshCoordinate(o) if len(self._shape) == 2 else MeshCoordinate(o[1]))
                for o in offsets]

    def get_submeshes(self) -> list[MeshDevice]:
        return list(self._submeshes)

    def lockstep(self):
        """A block whose allocations on this mesh's chips are the mesh's: each buffer of a mesh tensor made in
        it has one address on every chip, as TT-NN's mesh allocator gives it (allocator.LockStep). Every
        mesh-wide action opens one: an op run per chip, a tensor sent to the mesh, a collective's outputs."""
        return allocator.lockstep(c.memory for c in self._chips)

    def __repr__(self) -> str:  # TT-NN's text, which reports store for a device argument
        rows, cols = rows_cols(self._shape)
        return f"MeshDevice({rows}x{cols} grid, {len(self._chips)} devices)"

    __hash__ = object.__hash__


# -- the emulated system ----------------------------------------------------------------
def system_mesh_shape() -> MeshShape:
    text = os.environ.get("DEVICE_SIM_SYSTEM_MESH", DEFAULT_SYSTEM_MESH)
    try:
        return MeshShape(*(int(d) for d in text.lower().split("x")))
    except ValueError:
        raise ValueError(f"DEVICE_SIM_SYSTEM_MESH={text!r}: give rows x cols, e.g. '2x4' or '4x8'") from None


class SystemMeshDescriptor:
    """`ttnn._ttnn.multi_device.SystemMeshDescriptor()`: the emulated system's mesh (DEVICE_SIM_SYSTEM_MESH);
    tt-metal's mesh_device fixture opens a mesh of its shape().mesh_size() chips when a test names none."""

    def shape(self) -> MeshShape:
        return system_mesh_shape()

    def __repr__(self) -> str:
        return f"SystemMeshDescriptor(shape={self.shape()!r})"


def get_num_devices() -> int:
    """How many chips the emulated system has (DEVICE_SIM_SYSTEM_MESH)."""
    return system_mesh_shape().mesh_size()


def get_device_ids() -> list[int]:
    return list(range(get_num_devices()))


get_num_pcie_devices = get_num_devices
get_pcie_device_ids = get_device_ids


# Open meshes of several chips. Ops run once per chip only while there is one: the registry
# checks one global, installed here.
open_meshes: list[MeshDevice] = []


def mesh_holding(device_id: int) -> MeshDevice | None:
    """The open multi-chip mesh that has chip `device_id`, if any."""
    for mesh in open_meshes:
        if any(c.device_id == device_id for c in mesh._chips):
            return mesh
    return None


def _multi_chip_opened(mesh: MeshDevice) -> None:
    from device_sim import distributed
    open_meshes.append(mesh)
    registry.set_per_device(distributed.per_device_runner)


def _multi_chip_closed(mesh: MeshDevice) -> None:
    open_meshes.remove(mesh)
    if not open_meshes:
        registry.set_per_device(None)


def open_mesh_device(mesh_shape=None, l1_small_size=None, trace_region_size=None, num_command_queues=1,
                     dispatch_core_config=None, offset=None, physical_device_ids=(), worker_l1_size=None,
                     *, config: DeviceConfig | None = None, **overrides) -> MeshDevice:
    """Open `mesh_shape` chips (default: the whole system) as one MeshDevice.

    TT-NN's keywords (l1_small_size, trace_region_size, dispatch_core_config, ...) are accepted
    and have no effect; DeviceConfig fields (l1_size=...) set every chip's config.
    `physical_device_ids` picks the chips' ids; by default they are 0..n-1 from `offset`.
    """
    shape = MeshShape(mesh_shape) if mesh_shape is not None else system_mesh_shape()
    n = shape.mesh_size()
    system = get_num_devices()
    if physical_device_ids:
        ids = list(physical_device_ids)
        if len(ids) != n:
            raise ValueError(f"physical_device_ids has {len(ids)} ids for a {shape!r} mesh of {n} chips")
    elif offset is None:  # chips 0..n-1: a 1x8 line over a 2x4 system is fine, as TT-NN maps lines onto rings
        ids = list(range(n))
    else:  # the rectangle of system chips under this mesh, placed at `offset`
        _, sys_cols = rows_cols(system_mesh_shape())
        (rows, cols), (r0, c0) = rows_cols(shape), _as_2d(MeshCoordinate(offset))
        if c0 + cols > sys_cols:
            raise ValueError(f"a {shape!r} mesh at offset {offset!r} reaches past the system's {sys_cols} columns")
        ids = [(r0 + r) * sys_cols + c0 + c for r in range(rows) for c in range(cols)]
    if max(ids) >= system or len(set(ids)) != n:
        raise ValueError(
            f"a {shape!r} mesh needs chips {ids}, but the emulated system has {system} (ids 0..{system - 1}); "
            f"set DEVICE_SIM_SYSTEM_MESH (e.g. '4x8') for a larger system"
        )
    busy = [i for i in ids if i in _open_devices]
    if busy:
        raise RuntimeError(f"device(s) {busy} are already open; close them (ttnn.close_device) before opening a mesh")
    if n == 1:
        return open_device(ids[0], config=config, **overrides)
    chips = [open_device(i, config=config, **overrides) for i in ids]
    mesh = MeshDevice(shape, chips)
    _multi_chip_opened(mesh)
    return mesh


def close_mesh_device(mesh_device: MeshDevice) -> None:
    """Close every chip of the mesh (and its submeshes)."""
    from device_sim.device import close_device
    if not mesh_device.is_open:
        return
    for sub in mesh_device._submeshes:
        close_mesh_device(sub)
    mesh_device.is_open = False
    if len(mesh_device._chips) > 1:
        _multi_chip_closed(mesh_device)
    if mesh_device._parent is None:
        for chip in mesh_device._chips:
            close_device(chip)


@contextlib.contextmanager
def create_mesh_device(*args, **kwargs):
    mesh = open_mesh_device(*args, **kwargs)
    try:
        yield mesh
    finally:
        close_mesh_device(mesh)


def visualize_mesh_device(mesh_device: MeshDevice) -> None:
    """Print the mesh as a grid of its chips: coordinates and device ids."""
    rows, cols = rows_cols(mesh_device.shape)
    ids = mesh_device.get_device_ids()
    print_grid(f"MeshDevice(rows={rows}, cols={cols})", mesh_device.shape,
               lambda r, c: [f"({r}, {c}) dev {ids[r * cols + c]}"])


def print_grid(title: str, shape, cell) -> None:
    """Print `title`, then a box per chip of a mesh of `shape`, row-major, holding the lines `cell(row, col)`."""
    rows, cols = rows_cols(shape)
    cells = [[cell(r, c) for c in range(cols)] for r in range(rows)]
    width = max(len(line) for row in cells for lines in row for line in lines)
    rule = "+" + "+".join("-" * (width + 2) for _ in range(cols)) + "+"
    print(title)
    print(rule)
    for row in cells:
        for i in range(max(len(lines) for lines in row)):
            print("| " + " | ".join((lines[i] if i < len(lines) else "").ljust(width) for lines in row) + " |")
        print(rule)

