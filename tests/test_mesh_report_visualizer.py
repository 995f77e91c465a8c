"""A mesh report as ttnn-visualizer shows it: mesh tensors' addresses, a collective's L1 per core, a T3000.

The real visualizer (tests/visualizer.py) reads a 2x4 run through the REST API its pages call: each mesh
tensor has the one address its buffer has on every chip (TT-NN allocates a mesh in lock-step), so the
memory views name its buffers; the all_gather's "Peak L1 memory load per core" counts one chip's buffers,
not all eight chips' summed; and the topology dialog's two files describe a T3000 (4 PCIe-attached chips,
each with its remote chip on one n300 card, two ethernet links between neighbours) with each chip's mesh
coordinate.
"""

import sqlite3

import pytest
import torch
from test_visualizer_device_ops import peak_l1_per_core

import device_sim as ttnn
import ttreport
from ttreport.folder import MESH_MAPPING_FILE

INTERLEAVED_CORES = 64  # the visualizer's share of an interleaved L1 buffer: its size over 64 cores


@pytest.fixture
def mesh_run(tmp_path):
    """A 2x4 (T3000) run: an L1 tensor sharded over the chips, a relu of it, an all_gather of that."""
    path = tmp_path / "t3k"
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(2, 4))
    try:
        with ttreport.capture(path, config=ttreport.Config(device_graphs=True)):
            x = ttnn.from_torch(torch.randn(1, 1, 64, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                                memory_config=ttnn.L1,
                                mesh_mapper=ttnn.ShardTensor2dMesh(mesh, mesh_shape=(2, 4), dims=(2, 3)))
            y = ttnn.relu(x)
            ttnn.all_gather(y, dim=3)
    finally:
        ttnn.close_mesh_device(mesh)
    return path


def test_every_mesh_tensor_has_the_address_its_buffer_has_on_every_chip(visualizer, mesh_run):
    instance = visualizer.open(mesh_run)
    ops = visualizer.get("/api/operations", instance)
    assert [o["name"] for o in ops] == ["ttnn.from_torch", "ttnn.relu", "ttnn.all_gather"]
    for op in ops:
        (out,) = op["outputs"]
        assert out["address"] is not None, f"{op['name']}'s output shows Address: NULL"
        assert out["device_addresses"] == [out["address"]] * 8  # one per chip, all the same
    # The memory views name a buffer by the tensor at its address (the frontend's buildTensorMaps): each
    # tensor's buffer is live after the all_gather on all eight chips, at that one address.
    detail = visualizer.get(f"/api/operations/{ops[-1]['id']}", instance)
    for op in ops:
        chips = {b["device_id"] for b in detail["buffers"]
                 if b["buffer_type"] == 1 and b["address"] == op["outputs"][0]["address"]}
        assert chips == set(range(8)), op["name"]


def test_the_all_gathers_peak_l1_per_core_counts_one_chips_buffers(visualizer, mesh_run):
    instance = visualizer.open(mesh_run)
    gather = visualizer.get("/api/operations", instance)[-1]
    graph = visualizer.get(f"/api/operations/{gather['id']}", instance)["device_operations"]
    nodes = [n["params"] for n in graph if n["node_type"] == "buffer_allocate"]
    # What the op allocated in L1, per chip, from the writer's own record of every buffer (buffer_lifetimes)
    with sqlite3.connect(mesh_run / "db.sqlite") as db:
        per_chip = dict(db.execute("SELECT device_id, SUM(size) FROM buffer_lifetimes WHERE buffer_type = 1 "
                                   "AND allocated_by_operation_id = ? GROUP BY device_id", (gather["id"],)))
    assert sorted(per_chip) == list(range(8)) and len(set(per_chip.values())) == 1
    assert {p["device_id"] for p in nodes} == {"0"}
    assert sum(int(p["size"]) for p in nodes) == per_chip[0]  # one chip's, not eight chips' summed
    cb_peak = peak_l1_per_core([n for n in graph if n["node_type"] != "buffer_allocate"])
    assert peak_l1_per_core(graph) <= cb_peak + per_chip[0] / INTERLEAVED_CORES


def test_the_topology_dialog_reads_a_t3000_and_each_chips_mesh_coordinate(visualizer, mesh_run):
    instance = visualizer.open(mesh_run)
    cluster = visualizer.get("/api/cluster-descriptor", instance)
    chips = {int(c): xy for c, xy in cluster["chips"].items()}
    assert sorted(chips) == list(range(8))
    mmio = {int(c) for entry in cluster["chips_with_mmio"] for c in entry}
    assert len(mmio) == 4
    links: dict[frozenset, int] = {}
    for a, b in cluster["ethernet_connections"]:
        pair = frozenset((a["chip"], b["chip"]))
        links[pair] = links.get(pair, 0) + 1
    neighbours = {frozenset((i, j)) for i in chips for j in chips
                  if abs(chips[i][0] - chips[j][0]) + abs(chips[i][1] - chips[j][1]) == 1}
    assert links == {pair: 2 for pair in neighbours} and len(neighbours) == 10  # a 2x4 grid, two links each
    boards = [entry[2]["chips"] for entry in cluster["boards"]]
    assert len(boards) == 4 and all(len(b) == 2 and len(mmio & set(b)) == 1 for b in boards)  # n300: MMIO + remote
    assert all(frozenset(b) in links for b in boards)  # a remote chip is reached over its card's ethernet
    assert set(cluster["chip_to_boardtype"].values()) == {"n300"}

    mapping = visualizer.get("/api/mesh-descriptor", instance)["chips"]
    assert {int(c): rc for c, rc in mapping.items()} == {c: [y, x] for c, (x, y, _, _) in chips.items()}


@pytest.fixture
def diverged_run(tmp_path):
    """A 2x4 run where chip 5 alone holds an L1 tensor before the mesh's ops: the chips' own first fits differ."""
    path = tmp_path / "diverged"
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(2, 4))
    try:
        with ttreport.capture(path):
            alone = ttnn.from_torch(torch.ones(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE,
                                    device=mesh.get_devices()[5], memory_config=ttnn.L1)
            x = ttnn.from_torch(torch.randn(1, 1, 64, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                                memory_config=ttnn.L1,
                                mesh_mapper=ttnn.ShardTensor2dMesh(mesh, mesh_shape=(2, 4), dims=(2, 3)))
            y = ttnn.relu(x)
            z = ttnn.add(x, y, memory_config=ttnn.DRAM)
            ttnn.all_gather(z, dim=3)
            del alone
    finally:
        ttnn.close_mesh_device(mesh)
    return path


def test_mesh_tensors_keep_one_address_and_the_chips_buffers_agree_after_a_chip_allocated_alone(visualizer,
                                                                                               diverged_run):
    instance = visualizer.open(diverged_run)
    ops = visualizer.get("/api/operations", instance)
    assert [o["name"] for o in ops] == ["ttnn.from_torch", "ttnn.from_torch", "ttnn.relu", "ttnn.add",
                                        "ttnn.all_gather"]
    (alone,) = ops[0]["outputs"]
    assert alone["address"] is not None and alone["device_addresses"] == []  # a one-chip tensor: its own row
    mesh_outputs = [op["outputs"][0] for op in ops[1:]]
    for out in mesh_outputs:  # TT-NN's lock-step mesh allocator: one address for all eight chips
        assert out["address"] is not None and out["device_addresses"] == [out["address"]] * 8
    assert mesh_outputs[0]["address"] != alone["address"]  # clear of chip 5's own tensor, on every chip
    for op in ops[1:]:
        detail = visualizer.get(f"/api/operations/{op['id']}", instance)
        per_chip: dict[int, set] = {}
        for b in detail["buffers"]:
            per_chip.setdefault(b["device_id"], set()).add((b["address"], b["buffer_type"], b["max_size_per_bank"]))
        assert sorted(per_chip) == list(range(8)), op["name"]
        chip5_alone = {(a, t, size) for a, t, size in per_chip[5] if a == alone["address"] and t == 1}
        assert len(chip5_alone) == 1, op["name"]  # chip 5's own tensor, live to the end
        # every chip holds the same mesh buffers at the same addresses, chip 5 its own tensor besides
        assert all(per_chip[chip] == per_chip[0] for chip in range(8) if chip != 5), op["name"]
        assert per_chip[5] - chip5_alone == per_chip[0], op["name"]
        for out in mesh_outputs[:ops.index(op)]:  # each mesh tensor made so far names a buffer on every chip
            assert all(any(a == out["address"] for a, _, _ in held) for held in per_chip.values()), op["name"]


def _run_on_the_whole_system(path, monkeypatch, system: str):
    monkeypatch.setenv("DEVICE_SIM_SYSTEM_MESH", system)
    mesh = ttnn.open_mesh_device()  # every chip of the system
    try:
        with ttreport.capture(path):
            ttnn.relu(ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=mesh))
    finally:
        ttnn.close_mesh_device(mesh)
    return path


def _neighbours(chips: dict, rows: int, cols: int, torus: bool) -> set[frozenset]:
    """Chip pairs one step apart in the grid of the chips' [x, y]; on a torus the ends of each row and column too."""
    def step(d: int, n: int) -> bool:
        return d == 1 or (torus and d == n - 1)

    return {frozenset((i, j)) for i in chips for j in chips if i < j and (
        (chips[i][1] == chips[j][1] and step(abs(chips[i][0] - chips[j][0]), cols))
        or (chips[i][0] == chips[j][0] and step(abs(chips[i][1] - chips[j][1]), rows)))}


@pytest.mark.parametrize(("system", "links_per_pair", "mmio_chips", "board_type", "chips_per_board"), [
    ("2x2", 2, 2, "n300", [2, 2]),  # two n300 cards (tt-metal's 2x2_n300_cluster_desc.yaml)
    ("4x8", 4, 32, "ubb", [8, 24]),  # a 6U Galaxy (6u_cluster_desc.yaml): a torus, every chip on PCIe
])
def test_the_topology_dialog_reads_the_system_tt_metal_describes(visualizer, tmp_path, monkeypatch, system,
                                                                  links_per_pair, mmio_chips, board_type,
                                                                  chips_per_board):
    path = _run_on_the_whole_system(tmp_path / system, monkeypatch, system)
    instance = visualizer.open(path)
    cluster = visualizer.get("/api/cluster-descriptor", instance)
    rows, cols = map(int, system.split("x"))
    chips = {int(c): xy for c, xy in cluster["chips"].items()}
    assert sorted(chips) == list(range(rows * cols))
    assert len({int(c) for entry in cluster["chips_with_mmio"] for c in entry}) == mmio_chips
    links: dict[frozenset, int] = {}
    for a, b in cluster["ethernet_connections"]:
        pair = frozenset((a["chip"], b["chip"]))
        links[pair] = links.get(pair, 0) + 1
    # neighbours in the grid, and on a Galaxy the ends of every row and every column too (a torus)
    neighbours = _neighbours(chips, rows, cols, torus=rows * cols == 32)
    assert links == {pair: links_per_pair for pair in neighbours}
    assert sorted(len(entry[2]["chips"]) for entry in cluster["boards"]) == chips_per_board
    assert set(cluster["chip_to_boardtype"].values()) == {board_type}
    mapping = visualizer.get("/api/mesh-descriptor", instance)["chips"]
    assert {int(c): rc for c, rc in mapping.items()} == {c: [y, x] for c, (x, y, _, _) in chips.items()}
    assert {int(c): rc for c, rc in mapping.items()} == {i: list(divmod(i, cols)) for i in range(rows * cols)}


def test_a_single_chip_report_has_no_mesh_mapping_and_its_tensors_keep_their_device(tmp_path, device):
    with ttreport.capture(tmp_path / "one"):
        t = ttnn.relu(ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=device, memory_config=ttnn.L1))
    assert not (tmp_path / "one" / MESH_MAPPING_FILE).exists()
    with sqlite3.connect(tmp_path / "one" / "db.sqlite") as db:
        row = db.execute("SELECT device_id, address FROM tensors WHERE tensor_id = ?", (t.tensor_id,)).fetchone()
    assert row == (0, t.buffer_address())
