"""device_sim's floors under the ops: Tensor calls its ops through the registry's op table, registry.TTNN, and the
registry, under the tensor, imports nothing of device_sim but its C extension.

    .venv/bin/python -m pytest tests/test_op_table.py -q
"""

from __future__ import annotations

import pytest
import torch
from test_import_graph import graph  # tests/test_import_graph.py: the package's import graph, read statically

import device_sim as ttnn
from device_sim import registry
from device_sim.registry import TTNN


def test_the_table_holds_each_ttnn_op_under_its_short_name_as_device_sim_ops_exports_it():
    assert vars(TTNN) == registry.public_functions("ttnn")
    assert TTNN.add is ttnn.add and TTNN.multiply is ttnn.mul  # an alias too
    assert TTNN.Tensor is registry.OPS["ttnn.Tensor"].wrapper  # ttnn.Tensor(...)'s op, not the class


def test_a_name_no_op_is_registered_under_is_a_one_line_attribute_error():
    with pytest.raises(AttributeError, match=r"^ttnn\.no_such_op is not a registered op; import device_sim"):
        TTNN.no_such_op  # noqa: B018


def test_tensor_operators_and_methods_call_the_op_the_table_holds_at_call_time(monkeypatch):
    device = ttnn.open_device(0)
    try:
        a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        calls = []
        for name in ("add", "matmul", "slice", "to_torch"):
            real = getattr(TTNN, name)
            monkeypatch.setattr(TTNN, name, lambda *args, _real=real, _name=name, **kw: calls.append(_name)
                                or _real(*args, **kw))
        (a + a, a @ a, a[0], a.to_torch())
        assert calls == ["add", "matmul", "slice", "to_torch"]
    finally:
        ttnn.close_device(device)


def test_the_registry_is_a_floor_under_the_tensor_and_the_tensor_under_the_ops():
    edges = graph("device_sim")
    assert edges["device_sim.registry"] == {"device_sim._native"}
    assert "device_sim.registry" in edges["device_sim.tensor"]
    assert not {d for d in edges["device_sim.tensor"] if d == "device_sim.ops" or d.startswith("device_sim.ops.")}
    # a device is a 1x1 MeshDevice: device.py holds both, and the meshes of several chips sit above it
    assert "device_sim.mesh" not in edges["device_sim.device"] and "device_sim.device" in edges["device_sim.mesh"]


def test_a_multi_chip_mesh_installs_the_runner_distributed_registered_and_its_close_removes_it():
    assert registry.mesh_runner() is ttnn.distributed.per_device_runner
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 2))
    try:
        assert registry._per_device is ttnn.distributed.per_device_runner
    finally:
        ttnn.close_mesh_device(mesh)
    assert registry._per_device is None
