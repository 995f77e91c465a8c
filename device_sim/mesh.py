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

Floors: the system's shape (MeshShape, get_num_devices) is device_sim.cluster's; MeshDevice, MeshCoordinate and
the open meshes are device_sim.device's, as open_device makes a 1x1 MeshDevice (TT-NN 0.81's ttnn.Device) and
close_device closes a mesh; this module opens meshes of several chips over them and exports all of those names.
"""

from __future__ import annotations

import contextlib

from device_sim.cluster import (  # noqa: F401  (the system's shape: TT-NN's ttnn.MeshShape, ttnn.get_num_devices)
    DEFAULT_SYSTEM_MESH,
    MeshShape,
    get_device_ids,
    get_num_devices,
    rows_cols,
    system_mesh_shape,
)
from device_sim.device import (  # noqa: F401  (a device is a 1x1 MeshDevice: ttnn.MeshDevice, ttnn.close_mesh_device)
    Device,
    DeviceConfig,
    MeshCoordinate,
    MeshDevice,
    _as_2d,
    _multi_chip_opened,
    _open_devices,
    close_mesh_device,
    mesh_holding,
    open_device,
    open_meshes,
)


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


# -- the emulated system ----------------------------------------------------------------
class SystemMeshDescriptor:
    """`ttnn._ttnn.multi_device.SystemMeshDescriptor()`: the emulated system's mesh (DEVICE_SIM_SYSTEM_MESH);
    tt-metal's mesh_device fixture opens a mesh of its shape().mesh_size() chips when a test names none."""

    def shape(self) -> MeshShape:
        return system_mesh_shape()

    def __repr__(self) -> str:
        return f"SystemMeshDescriptor(shape={self.shape()!r})"


get_num_pcie_devices = get_num_devices
get_pcie_device_ids = get_device_ids


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

