"""The nodes and edges of each op's captured graph (schema 0008), each distinct graph once (0012), and older
reports upgraded to them.

edges are checked against TT-NN 0.81's rule in graph_report.py, written out here from the graph's JSON:
one row per connection, (op, source counter, sink counter, connection index, 0, connection index). nodes
hold every node of the op's graph, so that TT-NN's database.load_graph(report, op) (nodes and edges WHERE
operation_id = op, joined on the node counters) rebuilds it.

    .venv/bin/python -m pytest tests/test_graph_nodes_edges.py -q
"""

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport import db
from ttreport.capturing import device_graph
from ttreport.cli import main
from ttreport.errors import ConfigError

V0003 = Path(__file__).resolve().parent / "data" / "report_v0003" / "db.sqlite"


def rows(path, sql, *args) -> list:
    with sqlite3.connect(path) as con:
        return con.execute(sql, args).fetchall()


def graph_tables(path) -> tuple[list, list]:
    return (rows(path, "SELECT operation_id, unique_id, node_operation_id, name FROM nodes ORDER BY rowid"),
            rows(path, "SELECT operation_id, source_unique_id, sink_unique_id, source_output_index, sink_input_index, "
                       "key FROM edges ORDER BY rowid"))


@pytest.fixture
def report(tmp_path, device) -> Path:
    a = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with ttreport.capture(tmp_path / "run", config=ttreport.Config(device_graphs=True)) as cap:
        ttnn.matmul(a, a)
        ttnn.relu(a)
        ttnn.to_torch(a)  # runs no program: no graph, no nodes
    return cap.db_path


def test_edges_are_each_captured_graphs_connections_as_tt_nn_writes_them(report):
    graphs = rows(report, "SELECT operation_id, captured_graph FROM captured_graph ORDER BY operation_id")
    assert len(graphs) == 2
    expected = [(op, node["counter"], sink, i, 0, i)
                for op, text in graphs for node in json.loads(text) for i, sink in enumerate(node["connections"])]
    assert sorted(graph_tables(report)[1]) == sorted(expected)


def test_nodes_are_each_graphs_nodes_under_its_op(report):
    nodes, edges = graph_tables(report)
    for op, text in rows(report, "SELECT operation_id, captured_graph FROM captured_graph"):
        graph = json.loads(text)
        mine = [n for n in nodes if n[0] == op]
        assert [n[1] for n in mine] == [n["counter"] for n in graph]
        starts = [n[3] for n in mine if n[2] == op]  # function_starts: the op (C++ name) and its device operations
        assert starts[0] == rows(report, "SELECT name FROM operations WHERE operation_id = ?", op)[0][0].replace(
            ".", "::")
        assert len(starts) == sum(n["node_type"] == "function_start" for n in graph) >= 2
        # what load_graph joins: every edge of the op runs between two of its nodes
        counters = {n[1] for n in mine}
        assert all(e[1] in counters and e[2] in counters for e in edges if e[0] == op)
    to_torch = rows(report, "SELECT operation_id FROM operations WHERE name = 'ttnn.to_torch'")[0][0]
    assert not [n for n in nodes if n[0] == to_torch]


def per_op_graphs(path) -> list:
    """Each op's graph text as ttreport keeps it: by id, each distinct text once."""
    return rows(path, "SELECT o.operation_id, g.captured_graph FROM operation_graphs o JOIN distinct_graphs g "
                      "USING (graph_id) ORDER BY o.operation_id")


def test_a_default_report_keeps_each_distinct_graph_once_and_names_each_ops(report, tmp_path, device):
    a = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with ttreport.capture(tmp_path / "default") as cap:  # the same ops as the report fixture's, and 20 more relus
        ttnn.matmul(a, a)
        for _ in range(21):
            ttnn.relu(a)
        ttnn.to_torch(a)
    full = rows(report, "SELECT operation_id, captured_graph FROM captured_graph ORDER BY operation_id")
    assert per_op_graphs(report) == full  # device_graphs=True: the per-op rows and the distinct ones agree
    lean = per_op_graphs(cap.db_path)
    assert lean[:2] == full and {text for _, text in lean[2:]} == {full[1][1]}
    distinct = rows(cap.db_path, "SELECT graph_id, captured_graph FROM distinct_graphs")
    assert sorted(distinct) == sorted((device_graph.graph_id(text), text) for _, text in full)
    # TT-NN's per-op tables stay empty, as TT-NN's own default report (enable_graph_report off) leaves them
    assert rows(cap.db_path, "SELECT (SELECT COUNT(*) FROM captured_graph) + (SELECT COUNT(*) FROM nodes) + "
                             "(SELECT COUNT(*) FROM edges)") == [(0,)]


def test_upgrading_a_0011_report_gathers_its_graphs_once_each(report, tmp_path):
    expected = per_op_graphs(report)
    old = shutil.copy(report, tmp_path / "db.sqlite")
    with sqlite3.connect(old) as con:  # a report from before 0012: per-op graphs only
        con.executescript("DROP TABLE distinct_graphs; DROP TABLE operation_graphs; "
                          "ALTER TABLE operations DROP COLUMN step; DROP TABLE measured_perf; "  # 0013's, 0014's
                          "UPDATE alembic_version SET version_num = '0011'; "
                          "UPDATE report_metadata SET value = '0011' WHERE key = 'schema_version';")
    db.upgrade(old)
    assert db.current_revision(old) == db.head_revision()
    assert per_op_graphs(old) == expected and len(expected) == 2
    assert rows(old, "SELECT COUNT(*) FROM distinct_graphs") == [(2,)]


@pytest.mark.parametrize("value", ["tables", 1, None])
def test_device_graphs_takes_distinct_true_or_false_only(value):
    with pytest.raises(ConfigError, match=r"device_graphs=.* is not allowed; use 'distinct' \| true \| false"):
        ttreport.Config(device_graphs=value)


def test_upgrading_a_0007_report_fills_nodes_and_edges_from_its_graphs(report, tmp_path):
    expected = graph_tables(report)
    old = shutil.copy(report, tmp_path / "db.sqlite")
    with sqlite3.connect(old) as con:  # a report from before 0008: its graphs, but no nodes, edges or tensor_writes
        con.executescript("DELETE FROM nodes; DELETE FROM edges; DROP INDEX ix_nodes_op; DROP INDEX ix_edges_op; "
                          "DROP TABLE tensor_writes; "
                          "ALTER TABLE operations DROP COLUMN step; DROP TABLE measured_perf; "  # 0013's, 0014's
                          "UPDATE alembic_version SET version_num = '0007'; "
                          "UPDATE report_metadata SET value = '0007' WHERE key = 'schema_version';")
    db.upgrade(old)
    assert db.current_revision(old) == db.head_revision()
    assert graph_tables(old) == expected
    db.upgrade(old)  # a second upgrade adds nothing
    assert graph_tables(old) == expected


def test_a_damaged_graph_adds_no_rows_and_does_not_stop_the_upgrade(report, tmp_path):
    old = shutil.copy(report, tmp_path / "db.sqlite")
    with sqlite3.connect(old) as con:
        con.executescript("DELETE FROM nodes; DELETE FROM edges; DROP INDEX ix_nodes_op; DROP INDEX ix_edges_op; "
                          "DROP TABLE tensor_writes; ALTER TABLE operations DROP COLUMN step; "
                          "DROP TABLE measured_perf; "
                          "UPDATE alembic_version SET version_num = '0007'; "
                          "UPDATE captured_graph SET captured_graph = '[{\"counter\": 0' "
                          "WHERE operation_id = (SELECT MIN(operation_id) FROM captured_graph);")
    db.upgrade(old)
    damaged = rows(old, "SELECT MIN(operation_id) FROM captured_graph")[0][0]
    nodes, edges = graph_tables(old)
    assert nodes and edges and damaged not in {n[0] for n in nodes} | {e[0] for e in edges}


def test_ttreport_upgrade_brings_a_0003_report_to_the_new_schema_and_the_visualizer_reads_it(tmp_path, visualizer):
    folder = tmp_path / "old"
    folder.mkdir()
    shutil.copy(V0003, folder / "db.sqlite")
    (folder / "config.json").write_text(json.dumps({"report_name": "old", "schema_version": "0003"}))
    assert db.current_revision(folder / "db.sqlite") == "0003"
    result = CliRunner().invoke(main, ["upgrade", str(folder)])
    assert result.exit_code == 0, result.output
    assert db.current_revision(folder / "db.sqlite") == db.head_revision()
    # config.json's schema_version follows; the rest of it is kept
    assert json.loads((folder / "config.json").read_text()) == {"report_name": "old",
                                                               "schema_version": db.head_revision()}
    kinds = dict(rows(folder / "db.sqlite", "SELECT name, type FROM sqlite_master WHERE name IN "
                                            "('tensors', 'operation_arguments', 'nodes', 'edges')"))
    assert kinds == dict.fromkeys(("tensors", "operation_arguments", "nodes", "edges"), "table")
    instance = visualizer.open(folder)
    ops = visualizer.get("/api/operations", instance)
    assert [o["name"] for o in ops] == ["ttnn.from_torch", "ttnn.from_torch", "ttnn.matmul", "ttnn.relu",
                                        "ttnn.deallocate", "ttnn.to_torch"]
    matmul = next(o for o in ops if o["name"] == "ttnn.matmul")
    assert matmul["inputs"] and matmul["outputs"]


def per_op_tables(path) -> tuple[list, list, list]:
    return (rows(path, "SELECT operation_id, captured_graph FROM captured_graph ORDER BY rowid"), *graph_tables(path))


def test_upgrade_device_graphs_fills_the_per_op_tables_a_device_graphs_true_capture_writes(report, tmp_path):
    expected = per_op_tables(report)
    folder = shutil.copytree(report.parent, tmp_path / "default")  # as the default ("distinct") capture leaves it
    with sqlite3.connect(folder / "db.sqlite") as con:
        con.executescript("DELETE FROM captured_graph; DELETE FROM nodes; DELETE FROM edges;")
    out = CliRunner().invoke(main, ["upgrade", str(folder), "--device-graphs"])
    assert out.exit_code == 0 and "filled TT-NN's captured_graph, nodes and edges of 2 ops" in out.output
    assert per_op_tables(folder / "db.sqlite") == expected and len(expected[1]) > 2
    out = CliRunner().invoke(main, ["upgrade", str(folder), "--device-graphs"])  # a second time adds nothing
    assert "has its rows already" in out.output and per_op_tables(folder / "db.sqlite") == expected


def test_upgrade_device_graphs_skips_a_graph_that_is_not_json(report, tmp_path):
    folder = shutil.copytree(report.parent, tmp_path / "damaged")
    with sqlite3.connect(folder / "db.sqlite") as con:
        con.executescript("DELETE FROM captured_graph; DELETE FROM nodes; DELETE FROM edges; "
                          "UPDATE distinct_graphs SET captured_graph = '[{\"counter\": 0' "
                          "WHERE graph_id = (SELECT MIN(graph_id) FROM distinct_graphs);")
    out = CliRunner().invoke(main, ["upgrade", str(folder), "--device-graphs"])
    assert out.exit_code == 0, out.output
    damaged = rows(folder / "db.sqlite", "SELECT operation_id FROM operation_graphs WHERE graph_id = "
                                         "(SELECT MIN(graph_id) FROM distinct_graphs)")[0][0]
    nodes, edges = graph_tables(folder / "db.sqlite")
    assert nodes and damaged not in {n[0] for n in nodes} | {e[0] for e in edges}
