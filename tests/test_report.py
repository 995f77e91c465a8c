"""Reading a report: ttreport.open, the Operation / TensorInfo dataclasses, SQL, tensors, memory."""

import shutil
import sqlite3

import pytest
import torch
from sqlalchemy import create_engine

import device_sim as ttnn
import ttreport
from ttreport import db, schema
from ttreport.errors import NeedsUpgradeError, TensorFileError
from ttreport.read.report import Report, ReportError

L1_CFG = ("MemoryConfig(memory_layout=TensorMemoryLayout::INTERLEAVED,buffer_type=BufferType::L1,"
          "shard_spec=std::nullopt,nd_shard_spec=std::nullopt,created_with_nd_shard_spec=0)")
DRAM_CFG = L1_CFG.replace("BufferType::L1", "BufferType::DRAM")


def _write_report(folder):
    """A small report written row by row: what capture writes for `linear(x, w)` and a failing add.

    ops: 1 from_torch -> tensor 10 (DRAM); 2 linear(10, 11) -> 12 (L1), calling 3 matmul -> 12;
    4 add(12, 10) raises. Tensor 11 (a bfloat8_b weight) was made before the capture.
    """
    folder.mkdir()
    (folder / "tensors").mkdir()
    path = folder / "db.sqlite"
    db.create(path)
    engine = create_engine(f"sqlite:///{path}")
    t = schema
    with engine.begin() as connection:
        class conn:  # executemany needs every row to name the same columns
            @staticmethod
            def execute(insert, rows):
                connection.execute(insert, [{c.name: r.get(c.name) for c in insert.table.columns} for r in rows])

        conn.execute(t.report_metadata.insert(), [{"key": "status", "value": "complete"},
                                                  {"key": "started_at", "value": "2025-01-01T00:00:00.000+00:00"}])
        conn.execute(t.stack_trace_texts.insert(), [{"stack_trace_id": 1, "stack_trace": 'File "model.py", line 3'}])
        op = dict(thread="MainThread", stack_trace_id=1, status="ok")
        conn.execute(t.operations.insert(), [
            dict(op, operation_id=1, name="ttnn.from_torch", duration=1e-5, start_ns=0, end_ns=10_000,
                 depth=0, end_seq=2, l1_bytes=0, dram_bytes=2048),
            dict(op, operation_id=2, name="ttnn.linear", duration=3e-3, start_ns=20_000, end_ns=3_020_000,
                 depth=0, end_seq=7, l1_bytes=4096, dram_bytes=2048 + 1088),
            dict(op, operation_id=3, name="ttnn.matmul", duration=2e-3, start_ns=30_000, end_ns=2_030_000,
                 parent_operation_id=2, depth=1, end_seq=5, l1_bytes=4096, dram_bytes=2048 + 1088),
            dict(op, operation_id=4, name="ttnn.add", duration=5e-6, start_ns=4_000_000, end_ns=4_005_000,
                 depth=0, end_seq=8, l1_bytes=4096, dram_bytes=2048 + 1088, status="error"),
        ])
        conn.execute(t.operation_arguments.insert(), [
            {"operation_id": op_id, "name": name, "value": value} for op_id, name, value in
            [(2, "0", "tensor 10"), (2, "1", "tensor 11"), (2, "memory_config", L1_CFG), (3, "0", "tensor 10")]])
        tensor = dict(layout="Layout.TILE", device_id=0, dtype="DataType.BFLOAT16")
        conn.execute(t.tensors.insert(), [
            dict(tensor, tensor_id=10, shape="Shape([32, 32])", memory_config=DRAM_CFG, address=0, buffer_type=0,
                 size=2048, memory_config_source="default", producer_operation_id=1, file="tensors/10.pt"),
            dict(tensor, tensor_id=11, shape="Shape([32, 32])", dtype="DataType.BFLOAT8_B", memory_config=DRAM_CFG,
                 address=2048, buffer_type=0, size=1088, memory_config_source="argument"),
            dict(tensor, tensor_id=12, shape="Shape([32, 32])", memory_config=L1_CFG, address=1_400_000,
                 buffer_type=1, size=4096, memory_config_source="argument", producer_operation_id=2),
        ])
        conn.execute(t.input_tensors.insert(), [
            {"operation_id": op_id, "input_index": i, "tensor_id": tid}
            for op_id, i, tid in [(2, 0, 10), (2, 1, 11), (3, 0, 10), (3, 1, 11), (4, 0, 12), (4, 1, 10)]])
        conn.execute(t.output_tensors.insert(), [
            {"operation_id": op_id, "output_index": 0, "tensor_id": tid} for op_id, tid in [(1, 10), (2, 12), (3, 12)]])
        conn.execute(t.buffer_lifetimes.insert(), [
            dict(buffer_id=1, device_id=0, address=2048, max_size_per_bank=96, buffer_type=0, buffer_layout=0,
                 size=1088, allocated_seq=0),
            dict(buffer_id=2, device_id=0, address=0, max_size_per_bank=192, buffer_type=0, buffer_layout=0,
                 size=2048, allocated_seq=1),
            dict(buffer_id=3, device_id=0, address=1_400_000, max_size_per_bank=64, buffer_type=1, buffer_layout=0,
                 size=4096, allocated_seq=4, allocated_by_operation_id=3),
            dict(buffer_id=4, device_id=0, address=9000, max_size_per_bank=64, buffer_type=0, buffer_layout=0,
                 size=64, allocated_seq=3, freed_seq=6),  # a scratch buffer inside linear
        ])
        # TT-NN's buffers table lists what is live after each op, as a capture's writer fills it.
        connection.exec_driver_sql(
            "INSERT INTO buffers (operation_id, device_id, address, max_size_per_bank, buffer_type, buffer_layout) "
            "SELECT o.operation_id, b.device_id, b.address, b.max_size_per_bank, b.buffer_type, b.buffer_layout "
            "FROM operations o JOIN buffer_lifetimes b ON b.allocated_seq < o.end_seq "
            "AND (b.freed_seq IS NULL OR b.freed_seq > o.end_seq) ORDER BY o.operation_id, b.buffer_id")
        conn.execute(t.errors.insert(), [dict(operation_id=4, operation_name="ttnn.add", error_type="ValueError",
                                              error_message="shapes do not broadcast", stack_trace="...",
                                              timestamp="2025-01-01T00:00:01")])
        conn.execute(t.devices.insert(), [{"device_id": 0, "num_x_cores": 8, "num_y_cores": 8}])
    engine.dispose()
    torch.save(torch.arange(32 * 32, dtype=torch.bfloat16).reshape(32, 32), folder / "tensors" / "10.pt")
    return folder


@pytest.fixture
def report(tmp_path):
    with ttreport.open(_write_report(tmp_path / "r")) as r:
        yield r


def test_open_takes_the_folder_or_its_db_file(tmp_path):
    folder = _write_report(tmp_path / "r")
    for path in (folder, folder / "db.sqlite", str(folder)):
        with ttreport.open(path) as r:
            assert r.path == folder
            assert r.count_operations() == 4


def test_operations_carry_arguments_tensors_trace_and_error(report):
    ops = report.operations()
    assert [o.id for o in ops] == [1, 2, 3, 4]
    linear = ops[1]
    assert (linear.name, linear.duration, linear.depth, linear.parent, linear.status) == ("ttnn.linear", 3e-3, 0,
                                                                                         None, "ok")
    assert linear.arguments == [("0", "tensor 10"), ("1", "tensor 11"), ("memory_config", L1_CFG)]
    assert [t.id for t in linear.input_tensors] == [10, 11]
    assert linear.input_tensors[1].dtype == "DataType.BFLOAT8_B"
    out = linear.output_tensors[0]
    assert (out.id, out.buffer_type, out.address, out.dims, out.producer) == (12, "L1", 1_400_000, (32, 32), 2)
    assert linear.stack_trace == 'File "model.py", line 3'
    assert linear.error is None
    add = ops[3]
    assert add.status == "error" and add.error.error_type == "ValueError"
    assert add.error.message == "shapes do not broadcast"
    assert add.output_tensors == []


def test_operations_filter_sort_and_page(report):
    assert [o.id for o in report.operations(name="matmul")] == [3]
    assert [o.id for o in report.operations(name="ttnn.matmul")] == [3]
    assert [o.id for o in report.operations(name="ttnn.*a*")] == [2, 3, 4]
    assert [o.id for o in report.operations(sort="duration", limit=2)] == [2, 3]
    assert [o.id for o in report.operations(limit=2, offset=2)] == [3, 4]
    assert [o.id for o in report.operations(depth=0)] == [1, 2, 4]
    assert [o.id for o in report.children(2)] == [3]
    with pytest.raises(ReportError, match="sort must be one of"):
        report.operations(sort="name")


def test_listing_many_ops_costs_a_few_queries_not_one_per_op(report):
    statements = []
    report._conn.set_trace_callback(statements.append)
    report.operations()
    assert len(statements) <= 6  # ops, arguments, inputs, outputs, errors


def test_unknown_operation_names_the_id_range(report):
    with pytest.raises(ReportError, match=r"no operation 99 .* ids run from 1 to 4"):
        report.operation(99)


def test_tensors_producer_and_consumers(report):
    assert [t.id for t in report.tensors()] == [10, 11, 12]
    assert report.tensor(11).producer is None  # a weight made before the capture
    assert report.producer(12).id == 2
    assert report.producer(11) is None
    assert [o.id for o in report.consumers(10)] == [2, 3, 4]
    with pytest.raises(ReportError, match="no tensor 5"):
        report.tensor(5)


def test_load_tensor_gives_plain_torch_and_says_why_when_not_stored(report):
    value = report.load_tensor(10)
    assert type(value) is torch.Tensor and value.dtype == torch.bfloat16
    assert torch.equal(value, torch.arange(1024, dtype=torch.bfloat16).reshape(32, 32))
    with pytest.raises(TensorFileError, match="tensor 11 has no stored file.*tensors="):
        report.load_tensor(11)
    with pytest.raises(ReportError, match="no tensor 13"):
        report.load_tensor(13)


def test_buffers_live_after_an_op_match_the_buffers_view(report):
    live = report.buffers(3)
    assert [(b.address, b.buffer_type) for b in live] == [(0, "DRAM"), (2048, "DRAM"), (9000, "DRAM"),
                                                          (1_400_000, "L1")]
    assert [(b.address, b.buffer_type) for b in report.buffers(2)] == [(0, "DRAM"), (2048, "DRAM"),
                                                                        (1_400_000, "L1")]
    for op_id in (1, 2, 3, 4):
        view = report.sql("SELECT address FROM buffers WHERE operation_id = ? ORDER BY buffer_type, address",
                          (op_id,))
        assert [r["address"] for r in view] == [b.address for b in report.buffers(op_id)]


def test_sql_is_read_only(report):
    assert report.sql("SELECT name FROM operations WHERE operation_id = ?", (3,)) == [{"name": "ttnn.matmul"}]
    cur = report.execute("SELECT operation_id AS id, name FROM operations LIMIT 1")
    assert [d[0] for d in cur.description] == ["id", "name"]
    for statement in ("DELETE FROM operations", "CREATE TABLE x (a)", "CREATE TEMP TABLE y (a)",
                      "UPDATE tensors SET file = NULL"):
        with pytest.raises(ReportError, match="read-only"):
            report.sql(statement)
    assert report.count_operations() == 4
    with pytest.raises(ReportError, match="SQL error: no such table: nope"):
        report.sql("SELECT * FROM nope")


def test_summary_splits_time_by_name_into_self_time(report):
    s = report.summary()
    assert s.status == "complete" and s.operations == 4
    assert s.top_level_seconds == pytest.approx(1e-5 + 3e-3 + 5e-6)
    by = {r["name"]: r for r in s.by_name}
    assert by["ttnn.linear"]["total_s"] == pytest.approx(3e-3)
    assert by["ttnn.linear"]["self_s"] == pytest.approx(1e-3)  # its matmul took the other 2 ms
    assert sum(r["percent"] for r in s.by_name) == pytest.approx(100)
    assert s.peak_l1 == {"operation_id": 2, "name": "ttnn.linear", "bytes": 4096}
    assert s.peak_dram["bytes"] == 2048 + 1088
    assert [e.operation_id for e in s.errors] == [4]


def test_metadata_and_devices(report):
    assert report.metadata["status"] == "complete"
    assert report.devices[0]["num_x_cores"] == 8


def test_missing_or_foreign_paths_say_what_to_give(tmp_path):
    with pytest.raises(ReportError, match="no report at"):
        ttreport.open(tmp_path / "nothing")
    with pytest.raises(ReportError, match="holds no db.sqlite"):
        ttreport.open(tmp_path)
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(ReportError, match="not a SQLite database"):
        ttreport.open(tmp_path / "junk.sqlite")
    sqlite3.connect(tmp_path / "other.sqlite").execute("CREATE TABLE t (a)").connection.commit()
    with pytest.raises(ReportError, match="not a ttreport report"):
        ttreport.open(tmp_path / "other.sqlite")


def test_an_older_report_must_be_upgraded_first(tmp_path):
    folder = _write_report(tmp_path / "r")
    con = sqlite3.connect(folder / "db.sqlite")
    con.execute("UPDATE alembic_version SET version_num = '0001'")
    con.commit()
    con.close()
    with pytest.raises(NeedsUpgradeError, match="ttreport upgrade"):
        ttreport.open(folder)


def test_reading_leaves_the_report_unchanged(tmp_path):
    folder = _write_report(tmp_path / "r")
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    with Report(folder) as r:
        r.operations()
        r.summary()
    after = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert after == before


def test_a_real_capture_reads_back_as_it_ran(tmp_path):
    device = ttnn.open_device(0)
    try:
        g = torch.Generator().manual_seed(0)
        w = ttnn.from_torch(torch.randn(64, 32, generator=g), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
        with ttreport.capture(tmp_path / "run", config=ttreport.Config(tensors="outputs")) as handle:
            x = ttnn.from_torch(torch.randn(32, 64, generator=g), layout=ttnn.TILE, device=device, memory=ttnn.L1)
            y = ttnn.linear(x, w, memory=ttnn.L1)
            with ttnn.memory(ttnn.DRAM):
                z = ttnn.gelu(y)
    finally:
        ttnn.close_device(device)
    with ttreport.open(handle.path) as r:
        assert r.status == "complete"
        ops = r.operations()
        assert [(o.name, o.depth, o.parent) for o in ops] == [
            ("ttnn.from_torch", 0, None), ("ttnn.linear", 0, None), ("ttnn.gelu", 0, None)]
        linear = ops[1]
        assert [t.id for t in linear.input_tensors] == [x.tensor_id, w.tensor_id]
        assert linear.input_tensors[1].dtype == "DataType.BFLOAT8_B" and linear.input_tensors[1].producer is None
        assert [t.id for t in linear.output_tensors] == [y.tensor_id]
        assert dict(linear.arguments)["memory_config"].startswith("MemoryConfig(")
        assert "test_report.py" in linear.stack_trace
        out = r.tensor(y.tensor_id)
        assert (out.buffer_type, out.address, out.memory_config_source) == ("L1", y.buffer.address, "argument")
        assert r.tensor(z.tensor_id).memory_config_source == "context"
        assert r.tensor(z.tensor_id).buffer_type == "DRAM"
        assert torch.equal(r.load_tensor(z.tensor_id), z.value)
        assert r.producer(y.tensor_id).name == "ttnn.linear"
        assert [o.name for o in r.consumers(y.tensor_id)] == ["ttnn.gelu"]
        live = r.buffers(ops[2].id)
        assert {(b.buffer_type, b.address) for b in live} >= {("L1", y.buffer.address), ("DRAM", z.buffer.address)}
        assert r.summary().peak_l1["bytes"] > 0


def test_a_report_copied_elsewhere_opens(tmp_path):
    folder = _write_report(tmp_path / "r")
    copy = tmp_path / "elsewhere" / "copied"
    shutil.copytree(folder, copy)
    shutil.rmtree(folder)
    with ttreport.open(copy) as r:
        assert r.path == copy
        assert r.count_operations() == 4
        assert r.load_tensor(10).shape == (32, 32)
