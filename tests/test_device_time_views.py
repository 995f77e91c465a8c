"""Device time where a user looks (issue 30, item 3): the summary's total with host transfers apart and its
by-name table slowest on the device first; the reading API's per-op figures and each chip's timeline."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ttreport
from ttreport import db
from ttreport.read import device_time


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    folder = tmp_path_factory.mktemp("views") / "demo"
    shutil.copytree(Path(__file__).resolve().parents[1] / "sample_reports" / "demo", folder)
    db.upgrade(folder / "db.sqlite")  # a no-op unless the schema moved on since the sample was made
    return folder


def _summary(path) -> str:
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "summary", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_summary_splits_kernels_from_host_transfers_and_ranks_names_by_device_time(sample):
    out = _summary(sample)
    with ttreport.open(sample) as r:
        total = device_time.total(r)
        by_name = device_time.by_name(r)
        uploads = sum(ns for (name, ns) in r.execute(
            "SELECT o.name, p.ideal_ns FROM device_perf p JOIN operations o USING (operation_id) WHERE o.depth = 0")
            if name in ("ttnn.from_torch", "ttnn.to_torch"))
    assert total.transfer_ns == uploads > 0 and total.kernel_ns == total.ideal_ns - uploads
    assert f"kernels {device_time.human_ns(total.kernel_ns)}, host transfers {device_time.human_ns(uploads)}" in out
    assert "of emulator host time in top-level ops" in out
    with ttreport.open(sample) as r:
        top = r.execute("SELECT o.operation_id, o.name, p.ideal_ns FROM device_perf p JOIN operations o "
                        "USING (operation_id) WHERE o.depth = 0 ORDER BY p.ideal_ns DESC, o.operation_id LIMIT 3")
        assert "        slowest: " + ", ".join(f"op {i} {n} {device_time.human_ns(ns)}" for i, n, ns in top) in out
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("time by op name")) + 3
    names = [line.split()[0] for line in lines[start:start + len(by_name)]]
    assert names == sorted(by_name, key=lambda n: -by_name[n])  # slowest on the device first
    assert lines[start].split()[2:4] == device_time.human_ns(by_name[names[0]]).split()  # the column after count


def test_the_timeline_puts_each_chips_ops_back_to_back(sample):
    with ttreport.open(sample) as r:
        slices = list(device_time.timeline(r))
        estimated = dict(r.execute("SELECT p.operation_id, p.ideal_ns FROM device_perf p JOIN operations o "
                                   "USING (operation_id) WHERE o.depth = 0"))
        assert slices[0].start_ns == r.operations(limit=1)[0].start_ns
    assert [s.operation_id for s in slices] == sorted(estimated) and {s.device_id for s in slices} == {0}
    assert all(b.start_ns == a.end_ns for a, b in zip(slices, slices[1:]))
    assert all(s.end_ns - s.start_ns == estimated[s.operation_id] for s in slices)


def test_a_mesh_op_is_on_every_chips_device_track(tmp_path):
    import torch

    import device_sim as ttnn

    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(2, 4))
    try:
        with ttreport.capture(tmp_path / "mesh") as cap:
            x = ttnn.from_torch(torch.randn(1, 1, 32, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                                mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
            ttnn.relu(x)
    finally:
        ttnn.close_mesh_device(mesh)
    with ttreport.open(cap.path) as r:
        slices = list(device_time.timeline(r))
        relu = r.operations(name="ttnn.relu")[0]
        estimate = device_time.of_op(r, relu.id).ideal_ns
        path = r.export_chrome_trace(tmp_path / "mesh.json")
    on = sorted(s.device_id for s in slices if s.operation_id == relu.id)
    assert on == list(range(8)) and all(s.end_ns - s.start_ns == estimate for s in slices if s.name == "ttnn.relu")

    tracks = {e["args"]["name"] for e in json.loads(path.read_text())["traceEvents"]
              if e["ph"] == "M" and e["name"] == "thread_name" and e["args"]["name"].startswith("device ")}
    assert tracks == {f"device {d} (estimated)" for d in range(8)}


def test_ops_sort_device_lists_the_slowest_on_the_device_first(sample):
    done = subprocess.run([sys.executable, "-m", "ttreport.cli", "ops", str(sample), "--sort", "device", "--limit",
                           "0", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    listed = [op["id"] for op in json.loads(done.stdout)]
    with ttreport.open(sample) as r:
        estimated = dict(r.execute("SELECT operation_id, ideal_ns FROM device_perf"))
        assert len(listed) == r.count_operations()
    timed = [i for i in listed if i in estimated]
    assert timed == sorted(estimated, key=lambda i: (-estimated[i], i))  # slowest first, ties in call order
    assert listed[len(timed):] == sorted(set(listed) - set(estimated))  # ops without an estimate last
