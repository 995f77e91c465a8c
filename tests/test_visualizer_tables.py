"""A report reads as a TT-NN 0.81 report does: real tables, id order, TT-NN's stack order and texts, config.json.

What ttnn-visualizer looks up (tables by type in sqlite_master, unsorted SELECTs, the first `File "...",
line N` of a stack, `report_name`, `capture_timestamp_ns`) is checked here on real captures and on an
upgraded 0004 report; tests/test_visualizer_api.py asks the visualizer itself.
"""

import json
import re
import shutil
import sqlite3
import time
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport import db

REPO = Path(__file__).resolve().parents[1]
V0004 = REPO / "tests" / "data" / "report_v0004" / "db.sqlite"
TT_NN_TABLES = ("operations", "operation_arguments", "tensors", "input_tensors", "output_tensors", "devices",
                "buffers", "buffer_pages", "buffer_chunks", "device_tensors", "stack_traces", "source_files",
                "tensor_lifetime", "captured_graph", "nodes", "edges", "errors", "report_metadata",
                "local_tensor_comparison_records", "global_tensor_comparison_records")


def rows(path, sql, *params):
    con = sqlite3.connect(path)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def block(x, w):
    h = ttnn.matmul(x, w, memory_config=ttnn.L1_MEMORY_CONFIG)  # marker: INNER
    r = ttnn.relu(h)
    ttnn.deallocate(h)  # marker: DEALLOC
    return r


@pytest.fixture
def report(tmp_path, device):
    torch.manual_seed(0)
    # flush_ops=2: the writer's batches split the run, so `buffers` is built across batches
    cfg = ttreport.Config(flush_ops=2, buffer_pages=True)
    with ttreport.capture(tmp_path / "run", config=cfg) as cap:
        x = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
        w = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
        for _ in range(3):
            r = block(x, w)  # marker: OUTER
            ttnn.to_torch(r)
            ttnn.deallocate(r)
        sharded = ttnn.create_sharded_memory_config((64, 64), ttnn.CoreGrid(y=2, x=1), ttnn.ShardStrategy.HEIGHT)
        ttnn.to_memory_config(x, sharded)
    return cap


def line_of(marker: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if f"marker: {marker}" in text and "line_of" not in text)


def test_every_table_the_visualizer_looks_up_is_a_real_table(report):
    kinds = dict(rows(report.db_path, "SELECT name, type FROM sqlite_master"))
    assert {t: kinds.get(t) for t in TT_NN_TABLES} == {t: "table" for t in TT_NN_TABLES}
    # and each is filled where the run had something for it
    for table in ("operation_arguments", "tensors", "buffers", "buffer_pages", "buffer_chunks", "stack_traces",
                  "source_files", "tensor_lifetime"):
        assert rows(report.db_path, f"SELECT COUNT(*) FROM {table}")[0][0] > 0, table


def test_unsorted_selects_come_back_in_id_order(report):
    # The visualizer's reads, without ORDER BY: the name index must not reorder them (ops repeat names).
    ops = rows(report.db_path, "SELECT operation_id, name, duration, rank FROM operations")
    assert [o[0] for o in ops] == sorted(o[0] for o in ops) and len({o[1] for o in ops}) < len(ops)
    assert [o[:2] for o in rows(report.db_path, "SELECT operation_id, name FROM operations")] == [o[:2] for o in ops]
    for table in ("buffers", "operation_arguments", "stack_traces", "buffer_chunks", "input_tensors"):
        ids = [r[0] for r in rows(report.db_path, f"SELECT operation_id FROM {table}")]
        assert ids == sorted(ids), table
    tids = [r[0] for r in rows(report.db_path, "SELECT tensor_id, producer_operation_id FROM tensors")]
    assert tids == sorted(tids)
    # a name's ops still come from the index
    plan = " ".join(r[3] for r in rows(report.db_path, "EXPLAIN QUERY PLAN SELECT operation_id FROM operations "
                                                      "WHERE name = 'ttnn.relu' ORDER BY duration DESC LIMIT 10"))
    assert "ix_operations_name_duration" in plan
    # and a page of a name's ops in id order reads one name's entries from the name index, unsorted (bench 4)
    plan = [r[3] for r in rows(report.db_path, "EXPLAIN QUERY PLAN SELECT operation_id, duration FROM operations "
                                               "WHERE name = 'ttnn.relu' AND operation_id > 3 ORDER BY operation_id "
                                               "LIMIT 100")]
    assert plan == ["SEARCH operations USING INDEX ix_operations_name (name=? AND rowid>?)"], plan


def out_of_table_order(path) -> list:
    """(table, index) for each index whose columns, selected without ORDER BY, come back in another order
    than the table's own (NOT INDEXED): SQLite answers such a SELECT from a covering index when it can."""
    found = []
    tables = [r[0] for r in rows(path, "SELECT name FROM sqlite_master WHERE type = 'table' "
                                       "AND name NOT LIKE 'sqlite_%'")]
    for table in tables:
        for _, index, _unique, origin, _ in rows(path, f"PRAGMA index_list('{table}')"):
            if origin == "pk":  # a TEXT or composite primary key: its order is the table's id order
                continue
            columns = ", ".join(f'"{c[2]}"' for c in rows(path, f"PRAGMA index_info('{index}')") if c[2])
            plain = rows(path, f'SELECT {columns} FROM "{table}"')
            if plain != rows(path, f'SELECT {columns} FROM "{table}" NOT INDEXED'):
                found.append((table, index))
    return found


def test_no_index_reorders_an_unsorted_select(report, tmp_path):
    # `SELECT operation_id FROM operations` used to come back in l1_bytes order (the covering index)
    assert out_of_table_order(report.db_path) == []
    sample = shutil.copytree(REPO / "sample_reports" / "demo", tmp_path / "sample")
    assert out_of_table_order(sample / "db.sqlite") == []
    old = shutil.copy(V0004, tmp_path / "db.sqlite")
    db.upgrade(old)
    assert out_of_table_order(old) == []
    # the lookups and sorts still use them, the plain sorts too (bench's queries: no WHERE, no sort of the table)
    for path in (report.db_path, sample / "db.sqlite", old):
        plans = {sql: " ".join(r[3] for r in rows(path, "EXPLAIN QUERY PLAN " + sql)) for sql in (
            "SELECT operation_id, name, l1_bytes FROM operations ORDER BY l1_bytes DESC, operation_id LIMIT 1",
            "SELECT operation_id, name, duration FROM operations ORDER BY duration DESC LIMIT 10",
            "SELECT operation_id FROM operations WHERE duration IS NOT NULL ORDER BY duration DESC LIMIT 1",
            "SELECT operation_id FROM input_tensors WHERE tensor_id = 3")}
        assert [("USING INDEX ix_" in p or "USING COVERING INDEX ix_" in p) and "FOR ORDER BY" not in p
                for p in plans.values()] == [True] * 4, (path, plans)


def test_the_slowest_ops_come_first_and_untimed_ones_last_in_id_order(report):
    with ttreport.open(report.path) as r:
        every = r.operations(sort="duration")
        ids = [o.id for o in r.operations()]
    con = sqlite3.connect(report.db_path)
    con.execute("UPDATE operations SET duration = NULL WHERE operation_id IN (?, ?)", (ids[1], ids[3]))
    con.commit()
    con.close()
    with ttreport.open(report.path) as r:
        by_duration = [o.id for o in r.operations(sort="duration")]
        timed = [o for o in every if o.id not in (ids[1], ids[3])]
        assert by_duration == [o.id for o in timed] + [ids[1], ids[3]]
        assert [o.duration for o in timed] == sorted((o.duration for o in timed), reverse=True)
        # every window of the order is that slice of it
        for offset, limit in ((0, 2), (len(timed) - 1, 2), (len(timed), 1), (len(timed) + 1, 5), (3, None)):
            window = [o.id for o in r.operations(sort="duration", offset=offset, limit=limit)]
            assert window == by_duration[offset:None if limit is None else offset + limit], (offset, limit)


def test_buffers_lists_what_is_live_after_each_op(report):
    with ttreport.open(report.path) as r:
        for op in r.operations():
            table = rows(report.db_path, "SELECT device_id, address, max_size_per_bank FROM buffers "
                                         "WHERE operation_id = ? ORDER BY device_id, buffer_type, address", op.id)
            live = [(b.device_id, b.address, b.max_size_per_bank) for b in r.buffers(op.id)]
            assert sorted(table) == sorted(live), op.name


def test_stack_traces_are_innermost_first_with_the_source_file(report):
    matmul = rows(report.db_path, "SELECT s.stack_trace, f.path, f.contents FROM stack_traces s "
                                  "JOIN operations o USING (operation_id) "
                                  "JOIN source_files f ON f.id = s.source_file_id "
                                  "WHERE o.name = 'ttnn.matmul' LIMIT 1")[0]
    text, path, contents = matmul
    first, second = re.findall(r'File "([^"]+)", line (\d+)', text)[:2]
    # the line that called the op comes first (the visualizer's label), then its caller
    assert first == (__file__, str(line_of("INNER"))) and second == (__file__, str(line_of("OUTER")))
    assert text.startswith(f'  File "{__file__}", line {line_of("INNER")}, in block\n    h = ttnn.matmul(')
    assert "\n\n  File " in text  # TT-NN joins format_stack()'s entries (each ending in a newline) by newlines
    assert path == __file__ and contents == Path(__file__).read_text()


def test_tensor_lifetime_names_the_producer_last_use_and_deallocate(report):
    (tid,) = rows(report.db_path, "SELECT t.tensor_id FROM tensors t JOIN operations o "
                                  "ON o.operation_id = t.producer_operation_id WHERE o.name = 'ttnn.matmul' "
                                  "ORDER BY t.tensor_id LIMIT 1")[0]
    life = rows(report.db_path, "SELECT o1.name, o2.name, o3.name, l.producer_source_line, l.last_use_source_line "
                                "FROM tensor_lifetime l "
                                "JOIN operations o1 ON o1.operation_id = l.producer_operation_id "
                                "JOIN operations o2 ON o2.operation_id = l.last_use_operation_id "
                                "JOIN operations o3 ON o3.operation_id = l.deallocate_operation_id "
                                "WHERE l.tensor_id = ?", tid)
    assert life == [("ttnn.matmul", "ttnn.relu", "ttnn.deallocate", line_of("INNER"), line_of("INNER") + 1)]


def test_tensors_store_tt_nn_texts(report):
    texts = rows(report.db_path, "SELECT shape, dtype, layout, memory_config, storage_type FROM tensors "
                                 "WHERE memory_config LIKE '%HEIGHT_SHARDED%'")
    assert texts and texts[0][:3] == ("Shape([64, 64])", "DataType.BFLOAT16", "Layout.TILE")
    assert texts[0][3].startswith("MemoryConfig(memory_layout=TensorMemoryLayout::HEIGHT_SHARDED,"
                                  "buffer_type=BufferType::L1,shard_spec=ShardSpec(grid={[(x=0,y=0) - (x=0,y=1)]},"
                                  "shape={32, 64},orientation=ShardOrientation::ROW_MAJOR")
    assert texts[0][4] == "StorageType.DEVICE"


def test_buffer_chunks_are_the_pages_per_core(report):
    # The visualizer's own aggregation of buffer_pages (queries.py), which the table stands in for.
    expected = rows(report.db_path, """
        SELECT operation_id, device_id, address, bank_id, core_x, core_y, MIN(page_address),
               MAX(page_address + page_size) - MIN(page_address), MAX(page_size), COUNT(*), buffer_type
        FROM buffer_pages GROUP BY operation_id, device_id, address, bank_id, core_x, core_y, buffer_type""")
    got = rows(report.db_path, "SELECT operation_id, device_id, address, bank_id, core_x, core_y, chunk_address, "
                               "chunk_size, page_size, num_pages, buffer_type FROM buffer_chunks")
    assert sorted(got) == sorted(expected) and len(got) > 0


def test_config_json_and_metadata_identify_the_run(tmp_path, device):
    before = time.time_ns()
    with ttreport.capture(tmp_path / "my-run", config=ttreport.Config(buffer_pages=True)) as cap:
        ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE_LAYOUT, device=device)
    saved = json.loads((cap.path / "config.json").read_text())
    assert saved["report_name"] == "my-run" and saved["report_path"] == str(cap.path)
    assert saved["enable_logging"] is True and saved["enable_detailed_buffer_report"] is True
    assert saved["enable_comparison_mode"] is False and saved["config"]["buffer_pages"] is True
    (stamp,) = rows(cap.db_path, "SELECT value FROM report_metadata WHERE key = 'capture_timestamp_ns'")[0]
    assert before <= int(stamp) <= time.time_ns()


def test_a_0004_report_upgrades_to_the_same_rows_in_tt_nns_forms(tmp_path):
    path = shutil.copy(V0004, tmp_path / "db.sqlite")
    assert db.current_revision(path) == "0004"
    kinds = dict(rows(path, "SELECT name, type FROM sqlite_master"))
    assert kinds["stack_traces"] == kinds["tensors"] == kinds["buffers"] == "view"
    old = {q: rows(path, q) for q in (
        "SELECT operation_id, name, value FROM operation_arguments",
        "SELECT tensor_id, shape, dtype, layout, memory_config, device_id, address, buffer_type, size, file "
        "FROM tensors ORDER BY tensor_id",
        "SELECT operation_id, device_id, address, max_size_per_bank, buffer_type, buffer_layout FROM buffers "
        "ORDER BY operation_id, device_id, address")}
    old_stacks = dict(rows(path, "SELECT operation_id, stack_trace FROM stack_traces"))
    select = "SELECT operation_id, name, duration FROM operations"  # the visualizer's, unsorted
    assert [r[0] for r in rows(path, select)] == [5, 2, 1, 3, 4, 6]  # 0004's covering (name, duration) index
    db.upgrade(path)
    assert db.is_current(path)
    assert [r[0] for r in rows(path, select)] == [1, 2, 3, 4, 5, 6]
    kinds = dict(rows(path, "SELECT name, type FROM sqlite_master"))
    assert {t: kinds.get(t) for t in TT_NN_TABLES} == {t: "table" for t in TT_NN_TABLES}
    assert {q: rows(path, q) for q in old} == old
    new_stacks = dict(rows(path, "SELECT operation_id, stack_trace FROM stack_traces"))
    assert new_stacks.keys() == old_stacks.keys()
    for op_id, text in old_stacks.items():  # the same frames, innermost first
        frames = re.findall(r'File "[^"]+", line \d+', text)
        assert re.findall(r'File "[^"]+", line \d+', new_stacks[op_id]) == frames[::-1]
    matmul = new_stacks[3]  # called in block(), line 15 of make_v0004_report.py, from line 27
    assert matmul == ('  File "/tmp/w12a/make_v0004.py", line 15, in block\n'
                      '    h = ttnn.matmul(x, w, memory_config=ttnn.L1_MEMORY_CONFIG)\n'
                      '\n'
                      '  File "/tmp/w12a/make_v0004.py", line 27, in <module>\n'
                      '    r = block(x, w)\n')
    # worked out from the history: the matmul's output lives from the matmul to the relu, freed by deallocate
    assert rows(path, "SELECT o1.name, o2.name, o3.name FROM tensor_lifetime l "
                      "JOIN operations o1 ON o1.operation_id = l.producer_operation_id "
                      "JOIN operations o2 ON o2.operation_id = l.last_use_operation_id "
                      "JOIN operations o3 ON o3.operation_id = l.deallocate_operation_id") == \
        [("ttnn.matmul", "ttnn.relu", "ttnn.deallocate")]
    assert rows(path, "SELECT COUNT(*) FROM buffer_chunks")[0][0] > 0
    # upgrading reads no file the report's stacks name (the report may come from elsewhere)
    assert rows(path, "SELECT COUNT(*) FROM source_files")[0][0] == 0
    assert rows(path, "SELECT COUNT(*) FROM stack_traces WHERE source_file_id IS NOT NULL")[0][0] == 0
    # and a new report has the schema the upgraded one has
    db.create(tmp_path / "new.sqlite")
    assert columns(path) == columns(tmp_path / "new.sqlite")


def columns(path) -> dict:
    tables = [r[0] for r in rows(path, "SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {t: rows(path, f"PRAGMA table_info({t})") for t in tables}
