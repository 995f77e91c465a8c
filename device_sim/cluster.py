"""`ttnn.cluster`: what kind of system the chips form (TT-Metal's ClusterType, tt-metalium/cluster.hpp).

    import device_sim as ttnn
    ttnn.cluster.get_cluster_type()          # ClusterType.T3K for the default 2x4 emulated system

The emulated system is DEVICE_SIM_SYSTEM_MESH's Wormhole B0 chips (device_sim.mesh); its type is the
Wormhole product with that many chips: 1 an N150, 2 an N300, 4 two N300s as 2x2, 8 a T3K, 32 a Galaxy.
"""

from __future__ import annotations

import enum


class ClusterType(enum.IntEnum):
    """TT-Metal's ClusterType, with its values (tt_metal/api/tt-metalium/cluster.hpp)."""

    INVALID = 0
    N150 = 1
    N300 = 2
    T3K = 3
    GALAXY = 4
    TG = 5
    P100 = 6
    P150 = 7
    P150_X2 = 8
    P150_X4 = 9
    SIMULATOR_WORMHOLE_B0 = 10
    SIMULATOR_BLACKHOLE = 11
    N300_2x2 = 12
    P150_X8 = 13
    P300 = 14
    SIMULATOR_QUASAR = 15
    BLACKHOLE_GALAXY = 16
    P300_X2 = 17
    CUSTOM = 18


_WORMHOLE_BY_CHIPS = {1: ClusterType.N150, 2: ClusterType.N300, 4: ClusterType.N300_2x2, 8: ClusterType.T3K,
                      32: ClusterType.GALAXY}


def get_cluster_type() -> ClusterType:
    """The emulated system's cluster type; a chip count no Wormhole product has is CUSTOM."""
    from device_sim.mesh import get_num_devices  # mesh builds on the device module, which imports this one

    return _WORMHOLE_BY_CHIPS.get(get_num_devices(), ClusterType.CUSTOM)


__all__ = ["ClusterType", "get_cluster_type"]
