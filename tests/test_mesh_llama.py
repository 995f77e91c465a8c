"""A Llama-style decoder layer written the way tt-metal's T3000 models write it, on 2x4, 1x8 and 1x1 meshes.

Weights are sharded with ShardTensor2dMesh (attention heads and MLP columns over the mesh's
columns, the same on both rows), activations replicated; each chip computes on its heads, an
all_gather along the row rebuilds the attention output, and the MLP's partial sums meet in a
reduce_scatter (then an all_gather) along the row. The result must match torch within bfloat16's
tolerance, and the report must show every chip's buffers and the collectives as ops.
"""

from __future__ import annotations

import pathlib

import pytest
import torch

import device_sim as ttnn
import ttreport

S, D, H, F = 32, 256, 8, 512  # sequence, hidden, heads, MLP hidden
HD = D // H  # head dim
EPS = 1e-5


def weights(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    w = {name: torch.randn(shape, generator=g) * 0.08 for name, shape in
         {"wq": (D, D), "wk": (D, D), "wv": (D, D), "wo": (D, D), "w1": (D, F), "w3": (D, F), "w2": (F, D)}.items()}
    w["attn_norm"] = 1 + 0.1 * torch.randn(D, generator=g)
    w["ffn_norm"] = 1 + 0.1 * torch.randn(D, generator=g)
    return {k: v.bfloat16().float() for k, v in w.items()}  # the values the device holds


def reference(x: torch.Tensor, w: dict) -> torch.Tensor:
    def rms(t, g):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + EPS) * g

    h = rms(x, w["attn_norm"])
    q, k, v = (h @ w[n] for n in ("wq", "wk", "wv"))
    split = lambda t: t.view(1, S, H, HD).transpose(1, 2)  # noqa: E731
    a = torch.nn.functional.scaled_dot_product_attention(split(q), split(k), split(v), is_causal=True)
    x = x + a.transpose(1, 2).reshape(1, 1, S, D) @ w["wo"]
    h = rms(x, w["ffn_norm"])
    return x + (torch.nn.functional.silu(h @ w["w1"]) * (h @ w["w3"])) @ w["w2"]


class TtDecoder:
    """The layer on a mesh of rows x cols chips; tensor parallel along each row (cluster_axis=1)."""

    def __init__(self, mesh, w: dict):
        self.mesh = mesh
        rows, cols = mesh.shape
        self.cols = cols
        put = lambda t, dims: ttnn.from_torch(  # noqa: E731
            t, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh, memory_config=ttnn.DRAM_MEMORY_CONFIG,
            mesh_mapper=ttnn.ShardTensor2dMesh(mesh, mesh_shape=(rows, cols), dims=dims))
        # Heads and MLP columns split over a row's chips; each row holds the same shards.
        self.wq, self.wk, self.wv = (put(w[n], (None, -1)) for n in ("wq", "wk", "wv"))
        self.w1, self.w3 = put(w["w1"], (None, -1)), put(w["w3"], (None, -1))
        self.w2 = put(w["w2"], (None, -2))  # rows of w2 follow w1's columns: partial sums per chip
        self.wo = ttnn.from_torch(w["wo"], dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                                  mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))
        norm = lambda g: ttnn.from_torch(g.view(1, 1, 1, D), dtype=ttnn.bfloat16, layout=ttnn.TILE,  # noqa: E731
                                         device=mesh, mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))
        self.attn_norm, self.ffn_norm = norm(w["attn_norm"]), norm(w["ffn_norm"])
        self.heads = H // cols

    def heads_of(self, t):
        return ttnn.permute(ttnn.reshape(t, (1, S, self.heads, HD)), (0, 2, 1, 3))

    def __call__(self, x):
        h = ttnn.rms_norm(x, weight=self.attn_norm, epsilon=EPS)
        q, k, v = (self.heads_of(ttnn.linear(h, w)) for w in (self.wq, self.wk, self.wv))
        a = ttnn.transformer.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = ttnn.reshape(ttnn.permute(a, (0, 2, 1, 3)), (1, 1, S, D // self.cols))
        a = ttnn.all_gather(a, dim=3, cluster_axis=1, topology=ttnn.Topology.Linear)  # every head, every chip
        x = ttnn.add(x, ttnn.linear(a, self.wo))
        h = ttnn.rms_norm(x, weight=self.ffn_norm, epsilon=EPS)
        m = ttnn.mul(ttnn.silu(ttnn.linear(h, self.w1)), ttnn.linear(h, self.w3))
        partial = ttnn.linear(m, self.w2)  # this chip's share of the sum over F
        y = ttnn.reduce_scatter(partial, dim=3, cluster_axis=1, topology=ttnn.Topology.Linear)
        y = ttnn.all_gather(y, dim=3, cluster_axis=1, topology=ttnn.Topology.Linear)
        return ttnn.add(x, y)


def run(mesh_shape, report_path=None):
    w = weights()
    x = torch.randn(1, 1, S, D, generator=torch.Generator().manual_seed(1)).bfloat16().float()
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(*mesh_shape))
    try:
        model = TtDecoder(mesh, w)
        tx = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                             mesh_mapper=ttnn.ReplicateTensorToMesh(mesh))
        if report_path is None:
            out = model(tx)
        else:
            with ttreport.capture(report_path):
                out = model(tx)
        got = ttnn.to_torch(out, mesh_composer=ttnn.ConcatMeshToTensor(mesh, dim=0)).float()
    finally:
        ttnn.close_mesh_device(mesh)
    return got.view(-1, 1, S, D), reference(x, w)


def pcc(a: torch.Tensor, b: torch.Tensor) -> float:
    return torch.corrcoef(torch.stack([a.flatten(), b.flatten()]))[0, 1].item()


@pytest.mark.parametrize("mesh_shape", [(2, 4), (1, 8), (1, 1)])
def test_decoder_layer_matches_torch_on_every_chip(mesh_shape):
    got, want = run(mesh_shape)
    assert got.shape[0] == mesh_shape[0] * mesh_shape[1]  # one replica of the output per chip
    for replica in got:
        assert pcc(replica, want) > 0.999
        torch.testing.assert_close(replica, want[0], atol=0.1, rtol=0.05)


def test_the_report_of_a_2x4_run_has_every_chips_buffers_and_the_collectives_as_ops(tmp_path):
    path = pathlib.Path(tmp_path) / "llama-2x4"
    run((2, 4), path)
    report = ttreport.Report(path)
    names = [r["name"] for r in report.sql("SELECT name FROM operations ORDER BY operation_id")]
    assert names.count("ttnn.all_gather") == 2 and names.count("ttnn.reduce_scatter") == 1
    assert names.count("ttnn.linear") == 7  # each op recorded once, not once per chip
    run((1, 1), pathlib.Path(tmp_path) / "llama-1x1")  # ops nested in an op (linear's matmul, if any) too:
    one_chip = ttreport.Report(pathlib.Path(tmp_path) / "llama-1x1")
    assert names == [r["name"] for r in one_chip.sql("SELECT name FROM operations ORDER BY operation_id")]
    assert [r["device_id"] for r in report.sql("SELECT device_id FROM devices ORDER BY device_id")] == list(range(8))
    per_device = report.sql("SELECT device_id, COUNT(*) AS n FROM buffers WHERE operation_id = "
                            "(SELECT MAX(operation_id) FROM operations) GROUP BY device_id")
    assert [r["device_id"] for r in per_device] == list(range(8))
    assert len({r["n"] for r in per_device}) == 1  # the same buffers on every chip
    gather = report.sql("SELECT t.tensor_id FROM operations o JOIN output_tensors x USING (operation_id) "
                        "JOIN tensors t USING (tensor_id) WHERE o.name = 'ttnn.all_gather' LIMIT 1")[0]["tensor_id"]
    shards = report.sql("SELECT device_id, address FROM device_tensors WHERE tensor_id = ? ORDER BY device_id",
                        (gather,))
    assert [s["device_id"] for s in shards] == list(range(8))
