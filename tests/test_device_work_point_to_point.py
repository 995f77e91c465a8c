"""Device work of ttnn.point_to_point: PointToPointOp's send program on the sender chip, its receive program on the
receiver chip, nothing on the others, and the one global semaphore its program holds.
"""

from __future__ import annotations

import torch

import device_sim as ttnn
from device_sim.programs.ccl import point_to_point_packets

BF16 = 2048  # bytes of a bfloat16 tile


def cbs(program) -> list[tuple]:
    return [(cb.indices, cb.num_pages, cb.page_size) for cb in program.cbs]


def test_packets_hold_whole_aligned_pages_up_to_the_fabric_channel_buffer():
    # the channel buffer is 4 bfloat8_b tiles + a 64 B header = 4416 B; bfloat16 packets take its power-of-two floor
    assert point_to_point_packets(BF16, 8, True) == (4096, 2)  # 2 bfloat16 tiles
    assert point_to_point_packets(BF16, 1, True) == (2048, 1)  # never more pages than the tensor has
    assert point_to_point_packets(1088, 8, False) == (4352, 4)  # 4 bfloat8_b tiles
    assert point_to_point_packets(100 * 4, 50, False) == (11 * 400, 11)  # float32 rows of 100: 400 B, 11 a packet
    assert point_to_point_packets(40, 200, False) == (92 * 48, 92)  # 40 B rows align to 48 B: 4416 / 48 = 92
    assert point_to_point_packets(8192, 4, True) == (4096, 1)  # a page bigger than a packet goes in segments


def test_point_to_point_sends_from_one_chip_and_receives_on_the_other_only():
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 4))
    try:
        # each chip holds [1, 1, 64, 64] bfloat16: 4 tiles; 2 tiles a 4096 B packet
        x = ttnn.from_torch(torch.randn(1, 1, 64, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                            mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
        chips = mesh.get_devices()
        seen, held = [], [len(c.memory.live_buffers()) for c in chips]
        for chip in chips:
            chip.memory.listener = (lambda i: lambda kind, obj: seen.append((i, obj)) if kind == "program" else None)(
                chip.device_id)
        out = ttnn.point_to_point(x, ttnn.MeshCoordinate(0, 0), ttnn.MeshCoordinate(0, 2))
        assert [(i, p.name, p.ranges) for i, p in seen] == [(chips[0].device_id, "PointToPointOp", ((0, 0, 0, 0),)),
                                                            (chips[2].device_id, "PointToPointOp", ((0, 0, 0, 0),))]
        # sender: c_0 two tiles, c_1 2 x 2 packet headers of 64 B, c_2 one packet; receiver: c_0 the headers,
        # c_1 one packet, c_2 three packets' pages (3 x 2 tiles)
        assert cbs(seen[0][1]) == [((0,), 2, BF16), ((1,), 4, 64), ((2,), 1, 4096)]
        assert cbs(seen[1][1]) == [((0,), 4, 64), ((1,), 1, 4096), ((2,), 6, BF16)]
        # every chip holds its output shard and the op's global semaphore; the same call again makes no new one
        assert [len(c.memory.live_buffers()) for c in chips] == [n + 2 for n in held]
        again = ttnn.point_to_point(x, ttnn.MeshCoordinate(0, 0), ttnn.MeshCoordinate(0, 2))
        assert [len(c.memory.live_buffers()) for c in chips] == [n + 3 for n in held]  # just the second output
        del out, again
    finally:
        for chip in mesh.get_devices():
            chip.memory.listener = None
        ttnn.close_mesh_device(mesh)
