"""`ttnn.cluster`: what kind of system the chips form (TT-Metal's ClusterType, tt-metalium/cluster.hpp).

    import device_sim as ttnn
    ttnn.cluster.get_cluster_type()          # ClusterType.T3K for the default 2x4 emulated system
    print(ttnn.cluster.cluster_descriptor_yaml())       # UMD's cluster_descriptor.yaml of that system
    print(ttnn.cluster.mesh_coordinate_mapping_yaml())  # chips: {0: [0, 0], 1: [0, 1], ...}

The emulated system is DEVICE_SIM_SYSTEM_MESH's Wormhole B0 chips (rows x cols, default "2x4", a T3000); its type
is the Wormhole product with that many chips: 1 an N150, 2 an N300, 4 two N300s as 2x2, 8 a T3K, 32 a Galaxy.
The system's shape (system_mesh_shape, get_num_devices, MeshShape) is a fact of the system, so it is kept here, the
floor under the device (a device's mesh, device.MeshDevice) and the meshes opened over it (device_sim.mesh, which
exports these names as TT-NN's ttnn.MeshShape, ttnn.get_num_devices).
Reports carry the two YAML files as TT-NN's do; ttnn-visualizer's topology dialog draws them.

Chip ids are device_sim's own everywhere (a chip's row-major place in the system mesh), so a report's
device_id, the descriptor and the mapping name the same chip. UMD numbers a system's chips otherwise (a
T3K's 4 PCIe-attached chips first); the wiring below is UMD's, from tt-metal's own descriptors of a T3K
(2x4), an N300 2x2 and a 6U Galaxy (8x4, or 4x8 turned over), renumbered by the chips' mesh coordinates.
"""

from __future__ import annotations

import enum
import os

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


def rows_cols(shape) -> tuple[int, int]:
    """(rows, cols) of a mesh shape; a 1-D mesh of n chips is one row of n."""
    return (1, shape[0]) if len(shape) == 1 else (shape[0], shape[1])


def system_mesh_shape() -> MeshShape:
    text = os.environ.get("DEVICE_SIM_SYSTEM_MESH", DEFAULT_SYSTEM_MESH)
    try:
        return MeshShape(*(int(d) for d in text.lower().split("x")))
    except ValueError:
        raise ValueError(f"DEVICE_SIM_SYSTEM_MESH={text!r}: give rows x cols, e.g. '2x4' or '4x8'") from None


def get_num_devices() -> int:
    """How many chips the emulated system has (DEVICE_SIM_SYSTEM_MESH)."""
    return system_mesh_shape().mesh_size()


def get_device_ids() -> list[int]:
    return list(range(get_num_devices()))


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

    def __str__(self) -> str:  # as TT-NN's binding prints it; IntEnum's str is the bare number ("3")
        return f"ClusterType.{self.name}"


_WORMHOLE_BY_CHIPS = {1: ClusterType.N150, 2: ClusterType.N300, 4: ClusterType.N300_2x2, 8: ClusterType.T3K,
                      32: ClusterType.GALAXY}


def get_cluster_type() -> ClusterType:
    """The emulated system's cluster type; a chip count no Wormhole product has is CUSTOM."""
    return _WORMHOLE_BY_CHIPS.get(get_num_devices(), ClusterType.CUSTOM)


# A T3000 as UMD describes it: tt-metal's tests/tt_metal/tt_fabric/custom_mock_cluster_descriptors/
# t3k_cluster_desc.yaml. Four n300 cards; each is one PCIe-attached (MMIO) chip and the chip beside it,
# reached over that card's own ethernet (the MMIO chip's channels 8, 9 to the remote's 0, 1); two links
# between every pair of neighbours, 20 in all. Keys are UMD chip ids.
_T3K_UMD_LINKS = ((0, 6, 2, 6), (0, 7, 2, 7), (0, 8, 4, 0), (0, 9, 4, 1), (0, 14, 1, 14), (0, 15, 1, 15),
                  (1, 0, 3, 0), (1, 1, 3, 1), (1, 8, 5, 0), (1, 9, 5, 1), (2, 8, 6, 0), (2, 9, 6, 1),
                  (2, 14, 3, 14), (2, 15, 3, 15), (3, 8, 7, 0), (3, 9, 7, 1), (4, 6, 5, 6), (4, 7, 5, 7),
                  (6, 6, 7, 6), (6, 7, 7, 7))
_T3K_UMD_MMIO = {0: 0, 1: 1, 2: 3, 3: 2}  # MMIO chip -> its PCIe device number
_T3K_UMD_BOARDS = ((4, 0), (5, 1), (6, 2), (7, 3))  # each n300 card: (remote chip, MMIO chip)
# Where each UMD chip sits in the 2x4 mesh: the control plane's mapping for that descriptor (tt-metal's
# golden_mapping_files/T3kCustomMeshGraph_TestT3kControlPlaneInit_t3k_mesh_graph_descriptor_0.yaml, fabric
# chip r*4+c -> umd_chip_id); UMD's own [x, y] of each chip is the same place (x the column, y the row).
_T3K_UMD_AT = {4: (0, 0), 0: (0, 1), 2: (0, 2), 6: (0, 3), 5: (1, 0), 1: (1, 1), 3: (1, 2), 7: (1, 3)}


# An N300 2x2 (two n300 cards, ClusterType.N300_2x2) as UMD describes it: tt-metal's tests/tt_metal/tt_fabric/
# custom_mock_cluster_descriptors/2x2_n300_cluster_desc.yaml. Each card is an MMIO chip and its remote chip;
# two links between every pair of neighbours, 8 in all. Where each UMD chip sits in the 2x2 mesh: the control
# plane's mapping for that descriptor (golden_mapping_files/ControlPlaneFixture_Custom2x2.yaml, fabric chip
# r*2+c -> umd_chip_id; the asic ids match the descriptor's chip_unique_ids).
_N300_2X2_UMD_LINKS = ((0, 6, 3, 6), (0, 7, 3, 7), (0, 14, 1, 14), (0, 15, 1, 15), (1, 0, 2, 0), (1, 1, 2, 1),
                       (2, 14, 3, 14), (2, 15, 3, 15))
_N300_2X2_UMD_MMIO = {0: 0, 2: 2}
_N300_2X2_UMD_BOARDS = ((1, 0), (2, 3))
_N300_2X2_UMD_AT = {0: (0, 0), 1: (0, 1), 3: (1, 0), 2: (1, 1)}

# A Wormhole 6U Galaxy (ClusterType.GALAXY) as UMD describes it: custom_mock_cluster_descriptors/
# 6u_cluster_desc.yaml. 32 chips, every one PCIe-attached (chips_with_mmio lists all 32), on "ubb" boards; four
# links between every pair of neighbours in an 8x4 torus (the rows and the columns wrap), 256 in all. Each entry
# below is one neighbour pair (chip, first chan, chip, first chan): its four links take four channels in a row.
_GALAXY_UMD_LINK_QUADS = (
    (0, 0, 3, 0), (0, 4, 2, 4), (0, 8, 4, 4), (0, 12, 16, 0), (1, 0, 2, 0), (1, 4, 3, 4), (1, 8, 5, 4),
    (1, 12, 17, 0), (2, 8, 6, 4), (2, 12, 18, 0), (3, 8, 7, 4), (3, 12, 19, 0), (4, 0, 7, 0), (4, 8, 8, 4),
    (4, 12, 20, 0), (5, 0, 6, 0), (5, 8, 9, 4), (5, 12, 21, 0), (6, 8, 10, 4), (6, 12, 22, 0), (7, 8, 11, 4),
    (7, 12, 23, 0), (8, 0, 11, 0), (8, 8, 12, 4), (8, 12, 24, 0), (9, 0, 10, 0), (9, 8, 13, 4), (9, 12, 25, 0),
    (10, 8, 14, 4), (10, 12, 26, 0), (11, 8, 15, 4), (11, 12, 27, 0), (12, 0, 15, 0), (12, 8, 14, 8),
    (12, 12, 28, 0), (13, 0, 14, 0), (13, 8, 15, 8), (13, 12, 29, 0), (14, 12, 30, 0), (15, 12, 31, 0),
    (16, 4, 18, 4), (16, 8, 20, 4), (16, 12, 19, 12), (17, 4, 19, 4), (17, 8, 21, 4), (17, 12, 18, 12),
    (18, 8, 22, 4), (19, 8, 23, 4), (20, 8, 24, 4), (20, 12, 23, 12), (21, 8, 25, 4), (21, 12, 22, 12),
    (22, 8, 26, 4), (23, 8, 27, 4), (24, 8, 28, 4), (24, 12, 27, 12), (25, 8, 29, 4), (25, 12, 26, 12),
    (26, 8, 30, 4), (27, 8, 31, 4), (28, 8, 30, 8), (28, 12, 31, 12), (29, 8, 31, 8), (29, 12, 30, 12))
_GALAXY_UMD_MMIO = {0: 3, 1: 26, 2: 21, 3: 8, 4: 6, 5: 30, 6: 18, 7: 12, 8: 0, 9: 24, 10: 16, 11: 14, 12: 5,
                    13: 27, 14: 17, 15: 10, 16: 1, 17: 28, 18: 20, 19: 13, 20: 9, 21: 31, 22: 23, 23: 15, 24: 4,
                    25: 25, 26: 22, 27: 11, 28: 2, 29: 29, 30: 19, 31: 7}
_GALAXY_UMD_BOARDS = ((30, 28, 27, 26, 24, 23, 22, 20, 19, 18, 0, 31, 2, 15, 3, 16, 4, 6, 7, 8, 10, 11, 12, 14),
                      (29, 25, 21, 17, 13, 9, 5, 1))
# Each UMD chip's fabric chip in the 8x4 mesh (r*4+c): golden_mapping_files/ControlPlaneFixture_SingleGalaxy.yaml
_GALAXY_UMD_FABRIC = {0: 0, 1: 31, 2: 28, 3: 3, 4: 4, 5: 27, 6: 24, 7: 7, 8: 8, 9: 23, 10: 20, 11: 11, 12: 12,
                      13: 19, 14: 16, 15: 15, 16: 1, 17: 30, 18: 29, 19: 2, 20: 5, 21: 26, 22: 25, 23: 6, 24: 9,
                      25: 22, 26: 21, 27: 10, 28: 13, 29: 18, 30: 17, 31: 14}


def _system() -> tuple[int, int]:
    return rows_cols(system_mesh_shape())


def _in_sim_ids(at: dict, cols: int, links, mmio: dict, boards, board_type: str) -> tuple[list, dict, list, str]:
    """UMD's wiring renumbered to device_sim's chip ids, `at` giving each UMD chip's (row, col) in the mesh."""
    sim = {u: r * cols + c for u, (r, c) in at.items()}
    links = sorted((sim[a], ca, sim[b], cb) if sim[a] < sim[b] else (sim[b], cb, sim[a], ca) for a, ca, b, cb in links)
    boards = [tuple(sorted(sim[u] for u in board)) for board in boards]
    return links, {sim[u]: pcie for u, pcie in mmio.items()}, boards, board_type


def _wiring(rows: int, cols: int) -> tuple[list, dict, list, str]:
    """(links (chip, chan, chip, chan), MMIO chip -> PCIe device, boards (chips...), board type) in device_sim ids."""
    if (rows, cols) == (2, 4):
        return _in_sim_ids(_T3K_UMD_AT, cols, _T3K_UMD_LINKS, _T3K_UMD_MMIO, _T3K_UMD_BOARDS, "n300")
    if (rows, cols) == (2, 2):
        return _in_sim_ids(_N300_2X2_UMD_AT, cols, _N300_2X2_UMD_LINKS, _N300_2X2_UMD_MMIO, _N300_2X2_UMD_BOARDS,
                           "n300")
    if (rows, cols) in ((8, 4), (4, 8)):  # TT-NN's Galaxy mesh is 8x4; a 4x8 system is the same torus turned over
        at = {u: divmod(f, 4) for u, f in _GALAXY_UMD_FABRIC.items()}
        if rows == 4:
            at = {u: (c, r) for u, (r, c) in at.items()}
        links = [(a, ca + k, b, cb + k) for a, ca, b, cb in _GALAXY_UMD_LINK_QUADS for k in range(4)]
        return _in_sim_ids(at, cols, links, _GALAXY_UMD_MMIO, _GALAXY_UMD_BOARDS, "ubb")
    if rows * cols == 1:  # an N150: one chip on PCIe, no ethernet (tt-umd's wormhole_N150.yaml)
        return [], {0: 0}, [(0,)], "n150"
    if rows * cols == 2:  # an N300: chip 0 on PCIe, chip 1 over the card's ethernet (tt-umd's wormhole_N300.yaml)
        return [(0, 8, 1, 0), (0, 9, 1, 1)], {0: 0}, [(0, 1)], "n300"
    # Any other grid: no descriptor of it was looked up, so every chip is its own PCIe n300 chip, two links to
    # each east and south neighbour (the east pair on channels 8, 9 -> 0, 1, the south pair 14, 15 -> 6, 7).
    links = []
    for i in range(rows * cols):
        r, c = divmod(i, cols)
        if c + 1 < cols:
            links += [(i, 8 + k, i + 1, k) for k in range(2)]
        if r + 1 < rows:
            links += [(i, 14 + k, i + cols, 6 + k) for k in range(2)]
    return links, {i: i for i in range(rows * cols)}, [(i,) for i in range(rows * cols)], "n300"


def _ids(chips) -> str:
    return ",".join(map(str, chips))


def cluster_descriptor_yaml() -> str:
    """The emulated system as UMD's cluster_descriptor.yaml, in UMD's own text form (what TT-NN's reports carry).

    chips are [x, y, rack, shelf]: a chip's column and row in the system mesh. The default 2x4 system is a
    T3000: 4 MMIO chips (chips_with_mmio), each with its remote chip on one n300 card (boards).
    """
    rows, cols = _system()
    ids = range(rows * cols)
    links, mmio, boards, board_type = _wiring(rows, cols)
    lines = ["arch: {", *(f"   {i}: Wormhole," for i in ids), "}", "",
             "chips: {", *(f"   {i}: [{i % cols},{i // cols},0,0]," for i in ids), "}", "",
             "ethernet_connections: [",
             *(f"   [{{chip: {a}, chan: {ca}}}, {{chip: {b}, chan: {cb}}}]," for a, ca, b, cb in links), "]", "",
             "chips_with_mmio: [", *(f"   {chip}: {pcie}," for chip, pcie in sorted(mmio.items())), "]", "",
             "harvesting: {", *(f"   {i}: {{noc_translation: true, harvest_mask: 0}}," for i in ids), "}", "",
             "chip_to_boardtype: {", *(f"   {i}: {board_type}," for i in ids), "}", "",
             # board_id: the card's index (UMD writes the card's 64-bit serial, which an emulator has none of)
             "boards: [", *(f"   [{{board_id: {n}}}, {{board_type: {board_type}}}, {{chips: [{_ids(chips)}]}}],"
                            for n, chips in enumerate(boards)), "]", ""]
    return "\n".join(lines)


def mesh_coordinate_mapping_yaml() -> str:
    """physical_chip_mesh_coordinate_mapping_1_of_1.yaml: each chip's [row, col] in the system mesh, in the form
    tt-metal's serialize_mesh_coordinates_to_file writes it (a `chips` map, each coordinate a flow sequence)."""
    rows, cols = _system()
    return "\n".join(["chips:", *(f"  {i}: [{i // cols}, {i % cols}]" for i in range(rows * cols))]) + "\n"


__all__ = ["ClusterType", "cluster_descriptor_yaml", "get_cluster_type", "mesh_coordinate_mapping_yaml"]
