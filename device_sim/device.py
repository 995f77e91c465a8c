"""The emulated device: a Wormhole-class chip by default (8x8 workers, ~1.5 MB L1 each, 12 DRAM banks).

As in TT-NN 0.81, where `ttnn.Device` is `MeshDevice`, open_device returns a 1x1 MeshDevice that is its own only
chip; so MeshDevice, MeshCoordinate and the bookkeeping of open multi-chip meshes (close_device closes a mesh too)
are this module's, and device_sim.mesh, above it, opens meshes of several chips and exports them. The system's
shape (how many chips, MeshShape) is device_sim.cluster's, below.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import weakref
from dataclasses import asdict, dataclass

import torch

from device_sim import allocator, registry
from device_sim.allocator import device_memory
from device_sim.cluster import MeshShape, get_num_devices, rows_cols
from device_sim.core_assignment import dram_bank_workers
from device_sim.dispatch_core import DispatchCoreAxis, DispatchCoreConfig, DispatchCoreType  # noqa: F401 (ttnn.device.*)
from device_sim.sub_device import SubDevice, SubDeviceId, SubDeviceManagement, SubDeviceManagerId  # noqa: F401 (same)
from device_sim.types import BufferType, CoreCoord, CoreGrid


class Arch(enum.IntEnum):
    """`ttnn.device.Arch`: the chip architecture (tt::ARCH's values). Every emulated chip is a WORMHOLE_B0."""

    GRAYSKULL = 1
    WORMHOLE_B0 = 2
    BLACKHOLE = 3
    QUASAR = 4
    Invalid = 0xFF


ARCH = Arch.WORMHOLE_B0


class NOC(enum.IntEnum):
    """`ttnn.NOC`: which of a core's two networks on chip (tt-metalium's NOC, kernel_types.hpp); the RISC-V
    defaults are aliases. Data movement kernels are not emulated; device queries (the DRAM banks' optimal worker
    cores) take it."""

    RISCV_0_default = 0
    RISCV_1_default = 1
    NOC_0 = 0
    NOC_1 = 1


class NOC_MODE(enum.IntEnum):  # noqa: N801 (TT-NN's name)
    """`ttnn.NOC_MODE`: a data movement kernel's NOC use (tt-metalium's NOC_MODE, kernel_types.hpp)."""

    DM_DEDICATED_NOC = 0
    DM_DYNAMIC_NOC = 1


@dataclass(frozen=True)
class DeviceConfig:
    grid_y: int = 8  # worker (compute-with-storage) cores
    grid_x: int = 8
    l1_size: int = 1_499_136  # bytes of L1 per worker core (1464 KiB)
    l1_unreserved_base: int = 98_304  # below this: firmware, kernels, mailboxes
    l1_alignment: int = 16
    dram_banks: int = 12
    dram_bank_size: int = 1 << 30  # 12 GiB in all
    dram_unreserved_base: int = 32
    dram_alignment: int = 32
    cb_limit: int = 1_499_136
    # The performance model's chip (device_sim/perf_model.py, docs/perf_model.md): Wormhole B0 as TT-NN's
    # OpPerformanceModel has it. Timing only: values and memory are unaffected.
    clock_ghz: float = 1.0
    dram_gib_per_s: float = 258.0  # 6 channels x 2 banks x 21.5
    pcie_gb_per_s: float = 32.0  # PCIe 4.0 x16
    # torch intra-op threads for the emulator's host math. One keeps small ops fast and their
    # durations steady: on a busy machine a 32x32 matmul on two threads was seen taking 47 ms
    # (threads waiting on each other) against 10 us on one. None leaves torch's setting alone.
    host_threads: int | None = 1


class Device(SubDeviceManagement):
    def __init__(self, device_id: int = 0, config: DeviceConfig | None = None):
        self.device_id = device_id
        self.config = c = config or DeviceConfig()
        self.memory = device_memory(device_id, {
            BufferType.DRAM: dict(num_banks=c.dram_banks, bank_size=c.dram_bank_size, base=c.dram_unreserved_base,
                                  alignment=c.dram_alignment, bottom_up=True),
            BufferType.L1: dict(num_banks=c.grid_x * c.grid_y, bank_size=c.l1_size, base=c.l1_unreserved_base,
                                alignment=c.l1_alignment, bottom_up=False),
        })
        self.is_open = True
        # TT-Metal's program cache, on by default: one entry per distinct program launched (device_work.launch
        # adds it), so running an op again with the same inputs' specs adds none. None while disabled.
        self.program_cache: set | None = set()
        # Each core's random number generator, by user (the core's index in ttnn.sampling's grid): a torch.Generator
        # that ttnn.manual_seed seeds and ttnn.sampling draws a tile from (device_sim/ops/sampling.py).
        self.core_generators: dict = {}

    def id(self) -> int:
        return self.device_id

    # -- the program cache (TT-NN's MeshDevice bindings) ----------------------------------------------
    def num_program_cache_entries(self) -> int:
        """How many distinct programs this device has launched since its cache was last cleared."""
        return len(self._cache_holder().program_cache or ())

    def enable_program_cache(self) -> None:
        for chip in self._cache_chips():
            if chip.program_cache is None:
                chip.program_cache = set()

    def clear_program_cache(self) -> None:
        for chip in self._cache_chips():
            if chip.program_cache is not None:
                chip.program_cache.clear()

    def disable_and_clear_program_cache(self) -> None:
        for chip in self._cache_chips():
            chip.program_cache = None

    def _cache_chips(self) -> list:
        return getattr(self, "_chips", None) or [self]

    def _cache_holder(self):
        return self._cache_chips()[0]  # a mesh runs the same programs on every chip: its first chip's count

    def arch(self) -> Arch:
        return ARCH

    def compute_with_storage_grid_size(self) -> CoreGrid:
        return CoreGrid(y=self.config.grid_y, x=self.config.grid_x)

    core_grid = property(compute_with_storage_grid_size)

    def get_optimal_dram_bank_to_logical_worker_assignment(self, noc: NOC = NOC.NOC_0) -> list:
        """The worker core next to each DRAM bank, in bank order (12 on a Wormhole): where a kernel that reads or
        writes that bank runs best (device_sim/core_assignment.py; the same cores for NOC_0 and NOC_1 on Wormhole)."""
        NOC(noc)  # a bad value is refused as TT-NN's enum refuses it
        return [CoreCoord(x, y) for x, y in dram_bank_workers(self.config.grid_x, self.config.grid_y)]

    def facts(self) -> dict:
        """The columns of the report's `devices` table."""
        c = self.config
        cores = c.grid_x * c.grid_y
        l1_for_tensors = c.l1_size - c.l1_unreserved_base
        return {
            "device_id": self.device_id,
            "num_y_cores": c.grid_y,
            "num_x_cores": c.grid_x,
            "num_y_compute_cores": c.grid_y,
            "num_x_compute_cores": c.grid_x,
            "worker_l1_size": c.l1_size,
            "l1_num_banks": cores,
            "l1_bank_size": c.l1_size,
            "address_at_first_l1_bank": c.l1_unreserved_base,
            "address_at_first_l1_cb_buffer": c.l1_unreserved_base,
            "num_banks_per_storage_core": 1,
            "num_compute_cores": cores,
            "num_storage_cores": 0,
            "total_l1_memory": c.l1_size * cores,
            "total_l1_for_tensors": l1_for_tensors * cores,
            "total_l1_for_interleaved_buffers": l1_for_tensors * cores,
            "total_l1_for_sharded_buffers": l1_for_tensors * cores,
            "cb_limit": c.cb_limit,
        }

    def __repr__(self) -> str:
        return f"Device(id={self.device_id}, grid={self.config.grid_y}x{self.config.grid_x})"

    def config_dict(self) -> dict:
        return asdict(self.config)


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


def _as_2d(coord) -> tuple[int, int]:
    """(row, col) of a coordinate; a 1-D one is in row 0."""
    return (0, coord[0]) if len(coord) == 1 else (coord[0], coord[1])


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


# Open meshes of several chips. Ops run once per chip only while there is one: the registry
# checks one global, installed here (registry.mesh_runner, device_sim.distributed's).
open_meshes: list[MeshDevice] = []


def mesh_holding(device_id: int) -> MeshDevice | None:
    """The open multi-chip mesh that has chip `device_id`, if any."""
    for mesh in open_meshes:
        if any(c.device_id == device_id for c in mesh._chips):
            return mesh
    return None


def _multi_chip_opened(mesh: MeshDevice) -> None:
    open_meshes.append(mesh)
    registry.set_per_device(registry.mesh_runner())


def _multi_chip_closed(mesh: MeshDevice) -> None:
    open_meshes.remove(mesh)
    if not open_meshes:
        registry.set_per_device(None)


def close_mesh_device(mesh_device: MeshDevice) -> None:
    """Close every chip of the mesh (and its submeshes)."""
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


_open_devices: dict[int, Device] = {}


def open_device(device_id: int = 0, *, config: DeviceConfig | None = None, **overrides) -> Device:
    """Open the emulated device `device_id`; keyword overrides set DeviceConfig fields (e.g. l1_size=...).

    TT-NN's own open_device keywords (l1_small_size, trace_region_size, dispatch_core_type, ...)
    are accepted and ignored, so existing scripts run unchanged.
    """
    fields = DeviceConfig.__dataclass_fields__
    known = {k: v for k, v in overrides.items() if k in fields}
    if known:
        config = DeviceConfig(**{**asdict(config or DeviceConfig()), **known})
    holder = mesh_holding(device_id)
    if holder is not None:
        raise RuntimeError(f"device {device_id} is a chip of the open {holder!r}; use mesh.get_devices() to reach "
                           f"it, or close the mesh (ttnn.close_mesh_device) first")
    # As in TT-NN 0.81 (ttnn.Device is MeshDevice): the device is a 1x1 mesh, and its own only chip.
    dev = MeshDevice(MeshShape(1, 1), None, device_id=device_id, config=config)
    _open_devices[device_id] = dev
    if dev.config.host_threads is not None:
        torch.set_num_threads(dev.config.host_threads)
    _warm_up_host_kernels()
    return dev


def CreateDevice(device_id: int, num_command_queues: int = 1, l1_small_size: int | None = None,  # noqa: N802
                 trace_region_size: int | None = None, dispatch_core_config=None, *,
                 worker_l1_size: int | None = None) -> Device:
    """TT-NN's older spelling of open_device (its positional order as TT-NN binds it); the queue count,
    region sizes and dispatch cores are TT-NN knobs the emulator takes and does not model."""
    return open_device(device_id)


def CloseDevice(device: Device) -> None:  # noqa: N802
    """TT-NN's older spelling of close_device."""
    close_device(device)


@functools.cache
def _warm_up_host_kernels() -> None:
    # torch initialises its matmul backend on first use (~1 s here). Paying that when the device
    # opens, as a real device pays for its firmware, keeps it out of the first op's duration,
    # where a profile would blame matmul for it.
    x = torch.ones(32, 32)
    torch.matmul(x, x)
    torch.nn.functional.gelu(x).exp().softmax(-1)


def get_dram_alignment() -> int:
    """ttnn.get_dram_alignment: bytes a DRAM buffer's pages align to on the emulated arch (Wormhole's HAL: 32)."""
    return DeviceConfig.dram_alignment


def get_l1_alignment() -> int:
    """ttnn.get_l1_alignment: bytes an L1 buffer's pages align to on the emulated arch (Wormhole's HAL: 16)."""
    return DeviceConfig.l1_alignment


def get_arch_name() -> str:
    """`ttnn.get_arch_name()`: the emulated system's architecture as TT-NN names it ("wormhole_b0")."""
    return ARCH.name.lower()


def _arch_of(device) -> Arch:
    return ARCH if device is None else device.arch()


def is_grayskull(device=None) -> bool:
    """Whether `device` (default: the emulated system) is a Grayskull chip: never here."""
    return _arch_of(device) == Arch.GRAYSKULL


def is_wormhole_b0(device=None) -> bool:
    """Whether `device` (default: the emulated system) is a Wormhole B0 chip: always here."""
    return _arch_of(device) == Arch.WORMHOLE_B0


def is_blackhole(device=None) -> bool:
    """Whether `device` (default: the emulated system) is a Blackhole chip: never here."""
    return _arch_of(device) == Arch.BLACKHOLE


def GetNumAvailableDevices() -> int:  # noqa: N802
    """How many chips the emulated system has (ttnn.get_num_devices(): DEVICE_SIM_SYSTEM_MESH)."""
    return get_num_devices()


GetNumPCIeDevices = GetNumAvailableDevices  # every emulated chip is reached as if over PCIe


def GetPCIeDeviceID(device_id: int) -> int:  # noqa: N802
    """The PCIe device that reaches chip `device_id`: the chip's own id, as each emulated chip is on PCIe."""
    if not isinstance(device_id, int) or not 0 <= device_id < GetNumAvailableDevices():
        raise ValueError(f"GetPCIeDeviceID({device_id!r}): the emulated system has chips 0 to "
                         f"{GetNumAvailableDevices() - 1} (DEVICE_SIM_SYSTEM_MESH)")
    return device_id


def ReadDeviceProfiler(device: Device) -> None:  # noqa: N802
    """`ttnn.ReadDeviceProfiler(device)`: TT-NN copies the device profiler's buffers to the host here, and does
    nothing when device profiling is off. device_sim has no device-side buffers: each op's device time is
    worked out on the host as it runs and a capture records it with the op (ttreport's profile_log_device.csv),
    so there is nothing left to read. It checks that `device` is an open device, as a read needs."""
    if not isinstance(device, Device):
        raise TypeError(f"ReadDeviceProfiler({device!r}): give the device (or mesh device) the model runs on")
    if not device.is_open:
        raise RuntimeError(f"ReadDeviceProfiler({device!r}): the device is closed; read it before closing it")


def DumpDeviceProfiler(device: Device, last_dump: bool = False) -> None:  # noqa: N802
    """TT-NN's older spelling of ReadDeviceProfiler."""
    ReadDeviceProfiler(device)


_default_device: Device | None = None


def SetDefaultDevice(device: Device | None) -> None:  # noqa: N802
    """TT-NN's default device for ops whose inputs are not on a device (its legacy auto-format). device_sim
    keeps it for GetDefaultDevice; its ops do not move host inputs there, so a script that relies on that must
    put its inputs on the device itself (ttnn.from_torch(..., device=device) or ttnn.to_device)."""
    global _default_device
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"SetDefaultDevice({device!r}): give a device from ttnn.open_device(...), or None")
    _default_device = device


def GetDefaultDevice() -> Device | None:  # noqa: N802
    """The device SetDefaultDevice set (None until then, and after that device is closed)."""
    if _default_device is not None and not _default_device.is_open:
        return None
    return _default_device


def open_devices() -> list[Device]:
    """Every device opened and not yet closed."""
    return list(_open_devices.values())


def close_device(device: Device) -> None:
    if len(getattr(device, "_chips", ())) > 1:  # TT-NN closes a whole mesh this way too
        close_mesh_device(device)
        return
    device.is_open = False
    _open_devices.pop(device.device_id, None)


@contextlib.contextmanager
def manage_device(device_id: int = 0, **kwargs):
    dev = open_device(device_id, **kwargs)
    try:
        yield dev
    finally:
        close_device(dev)


def synchronize_device(device: Device, *_, **__) -> None:
    """Ops run synchronously on the emulator; kept so TT-NN scripts run unchanged."""


def get_max_worker_l1_unreserved_size() -> int:
    """tt-metal's hal::get_max_worker_l1_unreserved_size: a worker core's L1 above its reserved base (firmware,
    kernels, mailboxes), on the default chip 1,499,136 - 98,304 = 1,400,832 bytes."""
    c = DeviceConfig()
    return c.l1_size - c.l1_unreserved_base


# The devices (or meshes) put in asynchronous slow dispatch. Only the flag: the emulator runs every op
# synchronously whatever the dispatch mode, so a script that switches modes runs unchanged.
_async_slow_dispatch: weakref.WeakSet = weakref.WeakSet()


def enable_asynchronous_slow_dispatch(device) -> None:
    """Put `device` in asynchronous slow dispatch (a flag; ops run as before)."""
    _async_slow_dispatch.add(device)


def disable_asynchronous_slow_dispatch(device) -> None:
    """Take `device` out of asynchronous slow dispatch."""
    _async_slow_dispatch.discard(device)


def is_asynchronous_slow_dispatch_enabled(device) -> bool:
    return device in _async_slow_dispatch


def initialize_fast_dispatch(device) -> None:
    """Start fast dispatch on a device opened in slow dispatch: nothing to start on the emulator, whose dispatch
    is a Python call; the slow-dispatch flag stays, as TT-Metal keeps it across fast dispatch."""


def terminate_fast_dispatch(device) -> None:
    """End fast dispatch (see initialize_fast_dispatch)."""


@contextlib.contextmanager
def setup_fast_dispatch(device):
    """`with ttnn.device.setup_fast_dispatch(device):` fast dispatch for the block, slow dispatch after it
    (TT-NN's ttnn/device.py)."""
    initialize_fast_dispatch(device)
    try:
        yield
    finally:
        terminate_fast_dispatch(device)
