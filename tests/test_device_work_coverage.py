"""Every registered op launches a device operation, or is declared with the reason it launches none.

Each op is called as tests/test_ops.py calls it (its CASES; the few ops without a golden case get one
below) with a listener on its devices' memory: the same seam ttreport's report hears programs through
(device_work.launch). An op that launches nothing must be declared so where it is registered, or listed here,
each with its reason in docs/device_work.md ("Ops that launch no device operation"):

- HOST_ONLY: the ops registered with Trait.HOST: TT-NN runs no program either (host conversions, transfers,
  allocation);
- VIEWS: the ops registered with Trait.VIEW: TT-NN returns a view of the same buffer (no program);
- NOT_MODELLED_YET: TT-NN runs a program that device_sim does not model yet. This list must only shrink:
  an entry whose op now launches a program fails the test until it is removed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from test_ops import CASES, x

import device_sim as ttnn
from device_sim.registry import Trait

DOC = Path(__file__).resolve().parents[1] / "docs" / "device_work.md"

HOST_ONLY = {name for name, op in ttnn.OPS.items() if Trait.HOST in op.traits}
VIEWS = {name for name, op in ttnn.OPS.items() if Trait.VIEW in op.traits}
# Ops TT-NN runs programs for that device_sim does not model yet (none left: every such op's representative call
# launches its programs; docs/device_work.md lists the forms each model leaves out).
NOT_MODELLED_YET: set[str] = set()


def _mesh_case(op):
    """A collective's call on a 1x2 mesh of chips 1 and 2 (the device fixture holds chip 0; the collectives have no
    golden case in test_ops.py)."""
    def call(device):
        mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2), physical_device_ids=[1, 2])
        parts = [x(chip, 1, 32, 64) for chip in mesh.get_devices()]
        t = ttnn.aggregate_as_tensor(parts)
        sem = ttnn.create_global_semaphore(mesh, ttnn.CoreRangeSet([]), 0)
        args = {
            "ttnn.all_gather": ((t,), dict(dim=2)), "ttnn.reduce_scatter": ((t,), dict(dim=2)),
            "ttnn.all_reduce": ((t,), {}), "ttnn.mesh_partition": ((t, 2), dict(cluster_axis=1)),
            "ttnn.point_to_point": ((t, ttnn.MeshCoordinate(0, 0), ttnn.MeshCoordinate(0, 1)), {}),
            "ttnn.experimental.all_gather_async": ((t, 2, [sem]), {}),
            "ttnn.experimental.reduce_scatter_minimal_async": ((t, None, 2, [sem, sem]), dict(cluster_axis=1)),
            "ttnn.experimental.all_reduce_async": ((t,), dict(cluster_axis=1, mesh_device=mesh,
                                                             math_op=ttnn.ReduceType.Sum)),
        }[op]
        return (*args, mesh)
    return call


def _on_one_chip(case):
    return lambda d: (*case(d), None)


def _cases() -> dict:
    cases = {name: _on_one_chip(case) for name, case in CASES.items()}
    cases["ttnn.deallocate"] = lambda d: ((x(d),), {}, None)
    cases["ttnn.rand"] = lambda d: (((64, 64),), dict(device=d, layout=ttnn.TILE), None)
    cases["ttnn.randn"] = lambda d: (((64, 64), d), {}, None)
    cases["ttnn.bernoulli"] = lambda d: ((x(d),), {}, None)
    cases["ttnn.manual_seed"] = lambda d: ((42,), dict(device=d), None)
    cases["ttnn.sampling"] = lambda d: ((x(d, 1, 1, 32, 64), ttnn.from_torch(
        torch.arange(64, dtype=torch.int32).expand(1, 1, 32, 64), dtype=ttnn.int32, device=d)), dict(
        k=ttnn.from_torch(torch.full((32,), 5), dtype=ttnn.uint32, device=d),
        p=ttnn.from_torch(torch.full((32,), 0.5), dtype=ttnn.bfloat16, device=d),
        temp=ttnn.from_torch(torch.ones(32), dtype=ttnn.bfloat16, device=d), seed=3), None)
    cases["ttnn.rand_like"] = lambda d: ((x(d),), {}, None)
    cases["ttnn.uniform"] = lambda d: ((x(d), 2.0, 3.0), {}, None)
    # test_ops.py moves a host tensor (its harness reuses inputs that these ops free), which TT-NN returns as is
    cases["ttnn.move"] = cases["ttnn.reallocate"] = lambda d: ((x(d),), {}, None)
    cases["ttnn.copy_host_to_device_tensor"] = lambda d: (
        (ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE),
         ttnn.allocate_tensor_on_device(ttnn.Shape([32, 32]), ttnn.bfloat16, ttnn.TILE, d)), {}, None)
    cases["ttnn.copy_device_to_host_tensor"] = lambda d: (
        (x(d), ttnn.allocate_tensor_on_host(ttnn.Shape([2, 32, 64]), ttnn.bfloat16, ttnn.TILE, d)), {}, None)
    cases["ttnn.copy_host_to_device_tensor_partial"] = lambda d: (
        (ttnn.from_torch(torch.ones(64, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE),
         ttnn.allocate_tensor_on_device(ttnn.Shape([64, 32]), ttnn.bfloat16, ttnn.TILE, d, ttnn.MemoryConfig(
             ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, ttnn.ShardSpec(
                 ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(0, 1))}), (32, 32)))),
         ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(0, 0))})), {}, None)
    for op in ("ttnn.all_gather", "ttnn.reduce_scatter", "ttnn.all_reduce", "ttnn.point_to_point",
               "ttnn.mesh_partition", "ttnn.experimental.all_gather_async",
               "ttnn.experimental.reduce_scatter_minimal_async", "ttnn.experimental.all_reduce_async"):
        cases[op] = _mesh_case(op)
    return cases


CALLS = _cases()


def launched_by(name: str, device) -> list[str]:
    """The device operations that `name`'s representative call launches, in order."""
    args, kwargs, mesh = CALLS[name](device)
    chips = mesh.get_devices() if mesh is not None else [device]
    seen, saved = [], [(chip.memory, chip.memory.listener) for chip in chips]

    def listener(kind, obj):
        if kind == "program":
            seen.append(obj.name)

    try:
        for memory, _ in saved:
            memory.listener = listener
        ttnn.OPS[name].wrapper(*args, **kwargs)
    finally:
        for memory, old in saved:
            memory.listener = old
        if mesh is not None:
            ttnn.close_mesh_device(mesh)
    return seen


def test_the_lists_name_registered_ops_once_each():
    lists = [HOST_ONLY, VIEWS, NOT_MODELLED_YET]
    assert set(CALLS) == set(ttnn.OPS), "give each new op a case in tests/test_ops.py's CASES"
    assert set().union(*lists) <= set(ttnn.OPS), sorted(set().union(*lists) - set(ttnn.OPS))
    assert sum(map(len, lists)) == len(set().union(*lists)), "an op is in two lists"


@pytest.mark.parametrize("name", sorted(ttnn.OPS))
def test_each_op_launches_a_device_operation_or_is_listed_with_its_reason(name, device):
    launched = launched_by(name, device)
    if name in HOST_ONLY or name in VIEWS:
        assert launched == [], f"{name} is listed as launching nothing, but launched {launched}"
    elif name in NOT_MODELLED_YET:
        assert launched == [], f"{name} launches {launched} now: remove it from NOT_MODELLED_YET and docs"
    else:
        assert launched, (f"{name} launches no device operation: model its program (device_sim/programs/) or "
                          f"list it here and in docs/device_work.md with the reason")


def test_docs_give_the_reason_for_every_op_that_launches_nothing():
    text = DOC.read_text()
    section = text.split("## Ops that launch no device operation", 1)[1]
    named = set(re.findall(r"`(ttnn\.[\w.]+)`", section))
    listed = HOST_ONLY | VIEWS | NOT_MODELLED_YET
    assert sorted(listed - named) == [], "docs/device_work.md does not say why these launch nothing"
    assert sorted(named - listed) == [], "docs/device_work.md lists these as launching nothing, but they do"
