"""Which cores run TT-Metal's dispatch firmware: TT-NN's DispatchCoreType, DispatchCoreAxis, DispatchCoreConfig.

    import device_sim as ttnn
    cfg = ttnn.DispatchCoreConfig(ttnn.DispatchCoreType.ETH, ttnn.DispatchCoreAxis.ROW)
    device = ttnn.open_device(device_id=0, dispatch_core_config=cfg)

Scripts pass these to open_device; device_sim keeps them so they read back as written, and models no
dispatch cores (its worker grid is DeviceConfig's grid whatever they say).
"""

from __future__ import annotations

import enum


class DispatchCoreType(enum.Enum):
    WORKER = 0
    ETH = 1


class DispatchCoreAxis(enum.Enum):
    ROW = 0
    COL = 1


class DispatchCoreConfig:
    """DispatchCoreConfig(type=DispatchCoreType.WORKER, axis=None), positional or by name, as TT-NN's."""

    def __init__(self, type: DispatchCoreType = DispatchCoreType.WORKER,  # noqa: A002 (TT-NN's name)
                 axis: DispatchCoreAxis | None = None) -> None:
        if not isinstance(type, DispatchCoreType):
            raise TypeError(f"DispatchCoreConfig: type must be a ttnn.DispatchCoreType (WORKER or ETH), got {type!r}")
        if axis is not None and not isinstance(axis, DispatchCoreAxis):
            raise TypeError(f"DispatchCoreConfig: axis must be a ttnn.DispatchCoreAxis (ROW or COL) or None, "
                            f"got {axis!r}")
        self.type, self.axis = type, axis

    def __eq__(self, other) -> bool:
        return isinstance(other, DispatchCoreConfig) and (self.type, self.axis) == (other.type, other.axis)

    def __hash__(self) -> int:
        return hash((self.type, self.axis))

    def __repr__(self) -> str:
        return f"DispatchCoreConfig(type={self.type}, axis={self.axis})"
