"""The core movement ops (slice, permute, transpose) launch the device operations TT-NN runs for them."""

from __future__ import annotations

import json

import torch

import device_sim as ttnn
import ttreport


def test_slice_permute_and_transpose_launch_their_device_operations(device, tmp_path):
    x = ttnn.from_torch(torch.randn(1, 12, 64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with ttreport.capture("moves", config=ttreport.Config(root=tmp_path, device_graphs=True)) as handle:
        ttnn.slice(x, [0, 0, 32, 0], [1, 12, 64, 64])  # tile-aligned: the tile factory
        ttnn.slice(x, [0, 0, 3, 0], [1, 12, 64, 64])  # not tile-aligned: through ROW_MAJOR and back
        ttnn.permute(x, (0, 2, 1, 3))  # an HC transpose in TT-NN
        ttnn.permute(x, (0, 1, 3, 2))  # a WH transpose
        ttnn.permute(x, (3, 2, 1, 0))  # PermuteDeviceOperation (its tiled generic factory)
        ttnn.transpose(x, 1, 2)
    with ttreport.open(handle.path) as r:
        rows = r.sql("SELECT o.name, g.captured_graph FROM operations o LEFT JOIN captured_graph g "
                     "USING (operation_id) WHERE o.parent_operation_id IS NULL ORDER BY o.operation_id")
    shown = [(row["name"], [n["params"]["name"] for n in json.loads(row["captured_graph"] or "[]")
                            if n["node_type"] == "function_start"][1:]) for row in rows]
    assert shown == [("ttnn.slice", ["SliceDeviceOperation"]),
                     ("ttnn.slice", ["UntilizeDeviceOperation", "SliceDeviceOperation",
                                     "TilizeWithValPaddingDeviceOperation"]),
                     ("ttnn.permute", ["TransposeDeviceOperation"]), ("ttnn.permute", ["TransposeDeviceOperation"]),
                     ("ttnn.permute", ["PermuteDeviceOperation"]), ("ttnn.transpose", ["TransposeDeviceOperation"])]
