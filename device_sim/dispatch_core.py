"""Which cores run TT-Metal's dispatch firmware: TT-NN's DispatchCoreType, DispatchCoreAxis, DispatchCoreConfig.

    import device_sim as ttnn
    cfg = ttnn.DispatchCoreConfig(ttnn.DispatchCoreType.ETH, ttnn.DispatchCoreAxis.ROW)
    device = ttnn.open_device(device_id=0, dispatch_core_config=cfg)

Scripts pass these to open_device; device_sim keeps them so they read back as written, and models no
dispatch cores (its worker grid is DeviceConfig's grid whatever they say).
"""

from __future__ import annotations

import enum

from device_sim.cluster import get_cluster_type


class DispatchCoreType(enum.Enum):
    WORKER = 0
    ETH = 1


class DispatchCoreAxis(enum.Enum):
    ROW = 0
    COL = 1


# TT-NN's get_default_dispatch_core_type (ttnn/device.py): these systems dispatch from ethernet cores.
_ETH_DISPATCH_CLUSTERS = ("N300", "T3K", "N300_2x2")


def default_type():
    """The dispatch core type TT-NN picks for this system: ETH on an N300, a T3K or two N300s, else WORKER."""
    return DispatchCoreType.ETH if get_cluster_type().name in _ETH_DISPATCH_CLUSTERS else DispatchCoreType.WORKER


def default_axis(fabric_tensix_config=None):
    """TT-NN's get_default_dispatch_core_axis: ROW on every architecture but Blackhole (which device_sim is not)."""
    return DispatchCoreAxis.ROW


class DispatchCoreConfig:
    """DispatchCoreConfig(type=None, axis=None, fabric_tensix_config=None), positional or by name, as TT-NN's
    ttnn/device.py: a type or axis left None is the system's default (default_type(), default_axis()); axis COL
    alone means WORKER (ETH cores take no COL axis). tt-metal's device fixture passes all three, often None."""

    def __init__(self, type: DispatchCoreType | None = None,  # noqa: A002 (TT-NN's name)
                 axis: DispatchCoreAxis | None = None, fabric_tensix_config=None) -> None:
        if type is not None and not isinstance(type, DispatchCoreType):
            raise TypeError(f"DispatchCoreConfig: type must be a ttnn.DispatchCoreType (WORKER or ETH), got {type!r}")
        if axis is not None and not isinstance(axis, DispatchCoreAxis):
            raise TypeError(f"DispatchCoreConfig: axis must be a ttnn.DispatchCoreAxis (ROW or COL) or None, "
                            f"got {axis!r}")
        if type == DispatchCoreType.ETH and axis == DispatchCoreAxis.COL:
            raise ValueError("COL axis is not supported for ETH dispatch core type")
        if type is None:
            type = DispatchCoreType.WORKER if axis == DispatchCoreAxis.COL else default_type()  # noqa: A001
        self.type = type
        self.axis = axis if axis is not None else default_axis(fabric_tensix_config)

    def __eq__(self, other) -> bool:
        return isinstance(other, DispatchCoreConfig) and (self.type, self.axis) == (other.type, other.axis)

    def __hash__(self) -> int:
        return hash((self.type, self.axis))

    def __repr__(self) -> str:
        return f"DispatchCoreConfig(type={self.type}, axis={self.axis})"
