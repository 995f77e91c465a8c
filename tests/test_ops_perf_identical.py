"""The perf files' exporter works each tensor spec out once, and writes the same bytes as the plain way.

ttreport/export/ops_perf.py caches each distinct (spec, buffer type, device)'s seven tensor columns
instead of parsing every tensor's texts, and writes rows in header order instead of through
DictWriter. `reference_export` below is the exporter as it was before (per-tensor parsing, one dict
per row): both must write byte-identical ops_perf_results.csv and profile_log_device.csv, on the
demo's report and on a run with host, sharded, mesh and many-input tensors.

    .venv/bin/python -m pytest tests/test_ops_perf_identical.py -q
"""

import csv
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport import db
from ttreport.export import ops_perf
from ttreport.export.ops_perf import DEVICE_LOG_FILE, PERF_FILE, TENSOR_FIELDS

SAMPLE = Path(__file__).resolve().parents[1] / "sample_reports" / "demo"


def reference_export(r, folder: Path) -> None:
    """The exporter before the cache: every tensor's texts parsed, every row a dict (the oracle)."""
    def fields(shape, layout, dtype, buffer_type, memory_config, device_id):
        dims = [int(n) for n in re.findall(r"\d+", shape or "")]
        dims = ([1] * (4 - len(dims)) + dims)[-4:] if len(dims) <= 4 else [
            torch.tensor(dims[:-3]).prod().item(), *dims[-3:]]
        if buffer_type is None:
            memory = "HOST"
        else:
            kind = re.search(r"TensorMemoryLayout::(\w+)", memory_config or "")
            place = "L1" if buffer_type == 1 else "DRAM"
            memory = f"DEV_{device_id}_{place}_{kind.group(1) if kind else 'INTERLEAVED'}"
        return [*dims, (layout or "").rsplit(".", 1)[-1], (dtype or "").rsplit(".", 1)[-1], memory]

    def device_of(ts):
        for f in ts:
            m = re.match(r"DEV_(\d+)_", f[-1])
            if m:
                return int(m.group(1))
        return 0

    folder.mkdir(parents=True, exist_ok=True)
    ops = r.execute("SELECT o.operation_id, o.name, o.start_ns, o.end_ns, p.compute_ns, p.bandwidth_ns, p.ideal_ns, "
                    "p.math_fidelity FROM operations o JOIN device_perf p USING (operation_id) "
                    "ORDER BY o.operation_id").fetchall()
    cores = r.execute("SELECT MAX(num_x_compute_cores * num_y_compute_cores) FROM devices").fetchone()[0] or 64
    tensors = {}
    for table, index, side in (("input_tensors", "input_index", 0), ("output_tensors", "output_index", 1)):
        for row in r.execute(f"SELECT x.operation_id, t.shape, t.layout, t.dtype, t.buffer_type, t.memory_config, "
                             f"t.device_id FROM {table} x JOIN tensors t USING (tensor_id) "
                             f"ORDER BY x.operation_id, x.{index}"):
            tensors.setdefault(row[0], ([], []))[side].append(fields(*row[1:]))
    n_in = max((len(v[0]) for v in tensors.values()), default=0)
    n_out = max((len(v[1]) for v in tensors.values()), default=0)
    io = [f"{side}_{i}_{f}" for side, n in (("INPUT", n_in), ("OUTPUT", n_out)) for i in range(n)
          for f in TENSOR_FIELDS]
    at = ops_perf.OPS_CSV_HEADER.index("INPUTS")
    cycle, log_rows = 0, []
    with open(folder / PERF_FILE, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=ops_perf.OPS_CSV_HEADER[:at] + io + ops_perf.OPS_CSV_HEADER[at + 2:])
        w.writeheader()
        for op_id, name, start, end, compute, bandwidth, ideal, fidelity in ops:
            ins, outs = tensors.get(op_id, ([], []))
            row = {"OP CODE": name.removeprefix("ttnn."), "OP TYPE": "tt_dnn_device", "GLOBAL CALL COUNT": op_id,
                   "DEVICE ID": device_of(ins + outs), "MATH FIDELITY": fidelity or "", "CORE COUNT": cores,
                   "HOST START TS": start, "HOST END TS": end,
                   "HOST DURATION [ns]": None if end is None else end - start,
                   "DEVICE FW START CYCLE": cycle, "DEVICE FW END CYCLE": cycle + ideal,
                   "DEVICE FW DURATION [ns]": ideal, "DEVICE KERNEL DURATION [ns]": ideal,
                   "PM IDEAL [ns]": ideal, "PM COMPUTE [ns]": compute, "PM BANDWIDTH [ns]": bandwidth}
            for side, ts in (("INPUT", ins), ("OUTPUT", outs)):
                for i, values in enumerate(ts):
                    row.update({f"{side}_{i}_{k}": v for k, v in zip(TENSOR_FIELDS, values)})
            w.writerow(row)
            for kind, t in (("ZONE_START", cycle), ("ZONE_END", cycle + ideal)):
                log_rows.append([0, 1, 1, "BRISC", 0, t, 0, op_id, op_id, "BRISC-FW", kind, 0, "device_sim"])
            cycle += ideal
    with open(folder / DEVICE_LOG_FILE, "w", newline="") as f:
        f.write("ARCH: wormhole_b0, CHIP_FREQ[MHz]: 1000\n")
        f.write(", ".join(ops_perf.DEVICE_LOG_HEADER) + "\n")
        csv.writer(f).writerows(log_rows)


def assert_same_files(report: Path, tmp_path: Path) -> str:
    with ttreport.open(report) as r:
        ops_perf.export_ops_perf(r, tmp_path / "now")
        reference_export(r, tmp_path / "reference")
    for name in (PERF_FILE, DEVICE_LOG_FILE):
        assert (tmp_path / "now" / name).read_bytes() == (tmp_path / "reference" / name).read_bytes(), name
    return (tmp_path / "now" / PERF_FILE).read_text()


@pytest.fixture(scope="module")
def varied(tmp_path_factory):
    """A run whose ops read host, DRAM, L1-sharded and mesh tensors, up to four inputs an op, and some
    ops (deallocate) with no device time estimate."""
    path = tmp_path_factory.mktemp("perf") / "varied"
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    device = mesh.get_devices()[0]
    try:
        with ttreport.capture(path):
            a = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
            b = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device,
                                memory_config=ttnn.L1)
            sharded = ttnn.create_sharded_memory_config((64, 64), ttnn.CoreGrid(y=2, x=1), ttnn.ShardStrategy.HEIGHT)
            s = ttnn.to_memory_config(a, sharded)
            c = ttnn.add(s, b, memory_config=ttnn.DRAM)
            ttnn.concat([a, b, c, a], dim=1)
            ttnn.deallocate(c)
            host = ttnn.from_torch(torch.randn(3, 5, 7))  # no device: a HOST tensor
            ttnn.to_torch(host)
            m = ttnn.from_torch(torch.randn(1, 2, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,
                                mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
            ttnn.relu(m)
            other = mesh.get_devices()[1]  # a's spec on another chip: the same spec_id, another DEVICE ID
            ttnn.relu(ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=other))
            ttnn.matmul(a, ttnn.from_torch(torch.randn(2, 1, 64, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE,
                                           device=device))
    finally:
        ttnn.close_mesh_device(mesh)
    return path


def test_the_demo_reports_perf_files_are_byte_identical_to_the_plain_exporters(tmp_path):
    demo = Path(shutil.copytree(SAMPLE, tmp_path / "demo"))
    db.upgrade(demo / "db.sqlite")
    text = assert_same_files(demo, tmp_path)
    assert "DEV_0_L1_INTERLEAVED" in text and "DEV_0_DRAM_INTERLEAVED" in text


def test_host_sharded_mesh_and_many_input_tensors_give_byte_identical_files(varied, tmp_path):
    text = assert_same_files(varied, tmp_path)
    header = text.splitlines()[0].split(",")
    assert "INPUT_3_MEMORY" in header  # the concat of four
    assert "DEV_0_L1_HEIGHT_SHARDED" in text and ",HOST" in text and "DEV_1_DRAM_INTERLEAVED" in text


def test_tensor_rows_without_a_spec_id_are_exported_from_their_own_texts(varied, tmp_path):
    # Rows written by other tools may lack the link to tensor_specs; their own texts are then read.
    report = Path(shutil.copytree(varied, tmp_path / "nospec"))
    con = sqlite3.connect(report / "db.sqlite")
    with con:
        con.execute("UPDATE tensors SET spec_id = NULL WHERE tensor_id % 2 = 0")
    con.close()
    assert_same_files(report, tmp_path)
