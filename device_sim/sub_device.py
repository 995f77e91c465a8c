"""Sub-devices: TT-Metal's partition of a chip's cores into groups that run programs apart (ttnn.SubDevice).

    sub = ttnn.SubDevice([ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 1), ttnn.CoreCoord(7, 7))])])
    manager = device.create_sub_device_manager([sub], 0)
    device.load_sub_device_manager(manager)
    ttnn.linear(a, b, sub_device_id=ttnn.SubDeviceId(0))   # runs on those cores on hardware
    device.clear_loaded_sub_device_manager()
    device.remove_sub_device_manager(manager)

device_sim keeps the managers and which one is loaded (the calls and their order are checked as MeshDevice's
are, in ttnn/core/distributed/distributed_nanobind.cpp); ops run on the emulated device as before, whatever
sub-device they name, since the cores a program runs on change no value.
"""

from __future__ import annotations

from device_sim.types import CoreRangeSet


class SubDevice:
    """A group of cores: one CoreRangeSet per core type, Tensix first, then Ethernet."""

    def __init__(self, cores: list[CoreRangeSet]):
        cores = list(cores)
        if not cores or not all(isinstance(c, CoreRangeSet) for c in cores):
            raise TypeError(f"ttnn.SubDevice takes a list of ttnn.CoreRangeSet (Tensix first), got {cores!r}")
        self.cores = cores

    def __repr__(self) -> str:
        return f"SubDevice(cores={self.cores!r})"


class SubDeviceId:
    """The index of a sub-device in the loaded manager's list."""

    def __init__(self, id: int):  # noqa: A002  (TT-NN's keyword)
        if not isinstance(id, int) or not 0 <= id < 256:
            raise TypeError(f"ttnn.SubDeviceId takes an int in 0..255 (a uint8_t), got {id!r}")
        self.id = id

    def __repr__(self) -> str:
        return f"SubDeviceId({self.id})"

    def __eq__(self, other) -> bool:
        return isinstance(other, SubDeviceId) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("SubDeviceId", self.id))


class SubDeviceManagerId:
    """What create_sub_device_manager returns: the handle load and remove take."""

    def __init__(self, id: int):  # noqa: A002
        self.id = id

    def __repr__(self) -> str:
        return f"SubDeviceManagerId({self.id})"


class SubDeviceManagement:
    """MeshDevice's sub-device calls, for device_sim's Device (a unit mesh)."""

    def _sub_devices(self) -> dict:
        state = self.__dict__.get("_sub_device_state")
        if state is None:
            state = self.__dict__["_sub_device_state"] = {"managers": {}, "loaded": None, "stall_group": None}
        return state

    def create_sub_device_manager(self, sub_devices: list[SubDevice], local_l1_size: int) -> SubDeviceManagerId:
        sub_devices = list(sub_devices)
        if not sub_devices or not all(isinstance(s, SubDevice) for s in sub_devices):
            raise TypeError(f"create_sub_device_manager takes a list of ttnn.SubDevice, got {sub_devices!r}")
        managers = self._sub_devices()["managers"]
        manager = SubDeviceManagerId(len(managers) + 1)  # 0 is the default manager, which every device has
        managers[manager.id] = (sub_devices, int(local_l1_size))
        return manager

    def load_sub_device_manager(self, sub_device_manager_id: SubDeviceManagerId) -> None:
        state = self._sub_devices()
        if getattr(sub_device_manager_id, "id", None) not in state["managers"]:
            raise RuntimeError(f"{sub_device_manager_id!r} was not created on this device (or was removed); "
                               f"create_sub_device_manager([...], local_l1_size) makes one")
        state["loaded"], state["stall_group"] = sub_device_manager_id.id, None

    def clear_loaded_sub_device_manager(self) -> None:
        state = self._sub_devices()
        state["loaded"], state["stall_group"] = None, None

    def remove_sub_device_manager(self, sub_device_manager_id: SubDeviceManagerId) -> None:
        state = self._sub_devices()
        key = getattr(sub_device_manager_id, "id", None)
        if key not in state["managers"]:
            raise RuntimeError(f"{sub_device_manager_id!r} was not created on this device (or was removed)")
        if state["loaded"] == key:
            raise RuntimeError(f"{sub_device_manager_id!r} is loaded; clear_loaded_sub_device_manager() first")
        del state["managers"][key]

    def set_sub_device_stall_group(self, sub_device_ids: list[SubDeviceId]) -> None:
        state = self._sub_devices()
        count = len(state["managers"][state["loaded"]][0]) if state["loaded"] is not None else 1
        ids = list(sub_device_ids)
        bad = [s for s in ids if not isinstance(s, SubDeviceId) or s.id >= count]
        if not ids or bad:
            raise ValueError(f"set_sub_device_stall_group: {bad or ids!r} name no sub-device of the loaded "
                             f"manager, which has {count}")
        state["stall_group"] = ids

    def reset_sub_device_stall_group(self) -> None:
        self._sub_devices()["stall_group"] = None
