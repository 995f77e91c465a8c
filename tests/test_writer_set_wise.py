"""The writer fills the derived tables set-wise (issue 14): graphs once per distinct graph, tensor_lifetime in one pass.

Each distinct captured graph is kept once in temp tables and copied under every op's id in SQL; past
writer.MAX_GRAPHS distinct graphs they are dropped and defined again. tensor_lifetime is worked out at
close in one pass over input_tensors; here it is checked against its definition, written out as a
correlated query per tensor (the way the writer computed it before). A process writer's report has its
indexes from the start, but db.LATE_INDEXES (built at close); a thread writer's gets them all at close.

    .venv/bin/python -m pytest tests/test_writer_set_wise.py -q
"""

import json
import sqlite3
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport import db
from ttreport.capturing import writer


def rows(path, sql, *args) -> list:
    with sqlite3.connect(path) as con:
        return con.execute(sql, args).fetchall()


def model(device, n: int = 6) -> None:
    """Ops with different graphs (shapes, memory configs, op kinds), some repeated, a deallocate, a host op."""
    a = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    for i in range(n):
        x = ttnn.from_torch(torch.randn(32 * (1 + i % 3), 64), dtype=ttnn.bfloat16, layout=ttnn.TILE,
                            device=device)
        y = ttnn.matmul(x, a)
        z = ttnn.relu(y, memory_config=ttnn.L1_MEMORY_CONFIG if i % 2 else ttnn.DRAM_MEMORY_CONFIG)
        w = ttnn.add(z, z)
        ttnn.deallocate(z)
        ttnn.softmax(w, dim=-1)
        ttnn.to_torch(w)


def graph_tables(path) -> list:
    return [rows(path, f"SELECT * FROM {table} ORDER BY rowid") for table in ("captured_graph", "nodes", "edges")]


def run(path, **config) -> Path:
    device = ttnn.open_device(0)  # a fresh device: the same addresses in every run
    try:
        config = ttreport.Config(perf_files=False, **{"device_graphs": True, **config})
        with ttreport.capture(path, config=config) as cap:
            model(device)
    finally:
        ttnn.close_device(device)
    return cap.db_path


def test_nodes_and_edges_are_each_captured_graphs_rows_under_its_op(tmp_path):
    report = run(tmp_path / "run")
    graphs = rows(report, "SELECT operation_id, captured_graph FROM captured_graph ORDER BY rowid")
    assert [op for op, _ in graphs] == sorted(op for op, _ in graphs)  # in op order
    nodes, edges = [], []
    for op, text in graphs:
        graph = json.loads(text)
        nodes += [(op, n["counter"], op if n["node_type"] == "function_start" else None,
                   n.get("params", {}).get("name", n["node_type"])) for n in graph]
        edges += [(op, n["counter"], sink, i, 0, i) for n in graph for i, sink in enumerate(n["connections"])]
    assert rows(report, "SELECT operation_id, unique_id, node_operation_id, name FROM nodes ORDER BY rowid") == nodes
    assert rows(report, "SELECT operation_id, source_unique_id, sink_unique_id, source_output_index, "
                        "sink_input_index, key FROM edges ORDER BY rowid") == edges


def test_graphs_forgotten_between_batches_are_defined_again_when_seen_again(tmp_path, monkeypatch):
    expected = graph_tables(run(tmp_path / "kept", flush_ops=5))
    monkeypatch.setattr(writer, "MAX_GRAPHS", 2)  # the temp tables are emptied after nearly every batch
    forgetting = run(tmp_path / "forgotten", flush_ops=5)
    assert len({text for _, text, _ in expected[0]}) > 2 * writer.MAX_GRAPHS  # so some were dropped
    assert graph_tables(forgetting) == expected
    # each graph once, and each op's by id, whether forgotten between batches or not, with or without the per-op rows
    lean = run(tmp_path / "lean", flush_ops=5, device_graphs="distinct")
    distinct = [rows(report, f"SELECT * FROM {table} ORDER BY rowid")
                for table in ("distinct_graphs", "operation_graphs") for report in (forgetting, lean)]
    assert distinct[0] == distinct[1] and distinct[2] == distinct[3] and len(distinct[0]) < len(distinct[2])


# tensor_lifetime's definition, one correlated lookup per tensor (what the writer ran at close before issue 14).
_PATH = "substr(st.stack_trace, 9, instr(st.stack_trace, '\", line ') - 9)"
_LINE = ("CAST(substr(st.stack_trace, instr(st.stack_trace, '\", line ') + 8, "
         "instr(st.stack_trace, ', in ') - instr(st.stack_trace, '\", line ') - 8) AS INTEGER)")
DEFINITION = f"""
    SELECT l.tensor_id, l.producer, l.last_use, l.dealloc,
           (SELECT {_PATH} FROM stack_traces st WHERE st.operation_id = l.producer),
           (SELECT {_LINE} FROM stack_traces st WHERE st.operation_id = l.producer),
           (SELECT {_PATH} FROM stack_traces st WHERE st.operation_id = l.last_use),
           (SELECT {_LINE} FROM stack_traces st WHERE st.operation_id = l.last_use)
    FROM (SELECT t.tensor_id, t.producer_operation_id AS producer,
                 (SELECT MAX(i.operation_id) FROM input_tensors i JOIN operations o USING (operation_id)
                  WHERE i.tensor_id = t.tensor_id AND o.name != 'ttnn.deallocate') AS last_use,
                 (SELECT MIN(i.operation_id) FROM input_tensors i JOIN operations o USING (operation_id)
                  WHERE i.tensor_id = t.tensor_id AND o.name = 'ttnn.deallocate') AS dealloc
          FROM tensors t) l
    ORDER BY l.tensor_id"""


def test_operations_arguments_keep_a_tensor_as_its_id_and_operation_arguments_its_rows_text(tmp_path):
    path = run(tmp_path / "r", device_graphs=False)
    pairs = rows(path, f"SELECT a.value, {writer._TENSOR_TEXT} FROM operation_arguments a "
                       f"JOIN tensors r ON r.tensor_id = CAST(substr(a.value, 16) AS INTEGER) "
                       f"LEFT JOIN tensor_specs s ON s.spec_id = r.spec_id WHERE a.value LIKE 'ttnn.Tensor(id=%'")
    assert len(pairs) >= 30 and {"L1 INTERLEAVED)", "DRAM INTERLEAVED)"} <= {p[0].rsplit(", ", 1)[1] for p in pairs}
    assert [a for a, _ in pairs] == [sql for _, sql in pairs]
    ids = rows(path, "SELECT a.value, j.value, j.type FROM operation_arguments a JOIN operations o USING "
                     "(operation_id), json_each(o.arguments) j WHERE CAST(j.key AS TEXT) = a.name AND a.value "
                     "LIKE 'ttnn.Tensor(id=%'")
    assert len(ids) == len(pairs)
    assert all(t == "integer" and a.startswith(f"ttnn.Tensor(id={v},") for a, v, t in ids)


@pytest.mark.parametrize("aside", ["in the writer", "aside", "aside fails"])
def test_tensor_lifetime_is_each_tensors_producer_last_use_and_deallocation_with_their_lines(
        tmp_path, device, aside, monkeypatch):
    # A long capture's close works the rows out on a second connection beside the late indexes (writer.
    # _LifetimesAside; a forked writer process inherits the patched threshold); if that fails (here: its scratch
    # file's name is taken by a folder), the writer works them out itself, as a short capture's does.
    monkeypatch.setattr(writer, "ASIDE_MIN_OPS", 10**9 if aside == "in the writer" else 0)
    told = tmp_path / "copied.txt"  # what each copy_into said, from whichever process the writer runs in
    copy_into = writer._LifetimesAside.copy_into

    def noting(self, con):
        copied = copy_into(self, con)
        with open(told, "a") as f:
            f.write(f"{copied}\n")
        return copied

    monkeypatch.setattr(writer._LifetimesAside, "copy_into", noting)
    with ttreport.capture(tmp_path / "run", config=ttreport.Config(perf_files=False)) as cap:
        if aside == "aside fails":
            (tmp_path / "run" / writer.LIFETIMES_FILE).mkdir()
        model(device)
    got = rows(cap.db_path, "SELECT * FROM tensor_lifetime ORDER BY rowid")
    assert got == rows(cap.db_path, DEFINITION)
    assert cap.status == "complete" and not (tmp_path / "run" / writer.LIFETIMES_FILE).is_file()
    said = told.read_text().split() if told.exists() else []
    assert said == {"in the writer": [], "aside": ["True"], "aside fails": ["False"]}[aside]
    assert any(r[3] is not None for r in got) and any(r[2] is not None for r in got)  # deallocations and uses
    assert all(r[4] and r[4].endswith(".py") and r[5] > 0 for r in got if r[1] is not None)  # producers' lines


def test_a_process_writers_report_has_its_indexes_while_the_capture_runs(tmp_path):
    wanted = db._index_names()
    device = ttnn.open_device(0)
    try:
        with ttreport.capture(tmp_path / "r", config=ttreport.Config(perf_files=False)) as cap:
            model(device, 2)
            cap.flush(timeout=60)
            running = {name for (name,) in rows(cap.db_path, "SELECT name FROM sqlite_master WHERE type = "
                                                             "'index' AND name NOT LIKE 'sqlite_autoindex%'")}
    finally:
        ttnn.close_device(device)
    assert wanted <= {name for (name,) in rows(cap.db_path, "SELECT name FROM sqlite_master")}
    # the writer process keeps them current as it goes, but those on keys in no order (its close builds them)
    assert running == wanted - db.LATE_INDEXES and wanted > db.LATE_INDEXES
    # a plain SELECT reads the ops in id order, whichever index the planner picks
    ids = [op_id for op_id, _ in rows(cap.db_path, "SELECT operation_id, l1_bytes FROM operations")]
    assert ids == sorted(ids) and len(ids) > 10
