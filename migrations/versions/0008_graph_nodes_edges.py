"""The nodes and edges of each op's captured graph, as TT-NN's report tables hold them.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02

`nodes` and `edges` (TT-NN's tables since its first report schema) stayed empty until now. From this
revision the writer fills them from each op's captured graph (ttreport/capturing/device_graph.py graph_rows),
and this upgrade fills them the same way for the captured graphs an older report already holds: edges
as TT-NN 0.81's graph_report.py writes them (one row per connection: source and sink counters, the
connection's index as source_output_index and key, sink_input_index 0), nodes one row per node of the
graph under the op's id. A graph whose JSON is damaged adds no rows. Both
tables get an index on operation_id, the column TT-NN's database.load_graph looks them up by.

Frozen like 0001: the SQL is written here, not read from ttreport.schema. SQLite's JSON functions do the
reading, in the database, so a large report is not loaded into Python.
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_NODES = """
    INSERT INTO nodes (operation_id, unique_id, node_operation_id, name, rank)
    SELECT g.operation_id, json_extract(n.value, '$.counter'),
           CASE WHEN json_extract(n.value, '$.node_type') = 'function_start' THEN g.operation_id END,
           COALESCE(json_extract(n.value, '$.params.name'), json_extract(n.value, '$.node_type')), g.rank
    FROM captured_graph g, json_each(g.captured_graph) n
    WHERE json_valid(g.captured_graph) AND json_type(g.captured_graph) = 'array' AND n.type = 'object'
      AND NOT EXISTS (SELECT 1 FROM nodes x WHERE x.operation_id = g.operation_id)
    ORDER BY g.rowid, n.key"""

_EDGES = """
    INSERT INTO edges (operation_id, source_unique_id, sink_unique_id, source_output_index, sink_input_index, key, rank)
    SELECT g.operation_id, json_extract(n.value, '$.counter'), c.value, c.key, 0, c.key, g.rank
    FROM captured_graph g, json_each(g.captured_graph) n, json_each(n.value, '$.connections') c
    WHERE json_valid(g.captured_graph) AND json_type(g.captured_graph) = 'array' AND n.type = 'object'
      AND json_type(n.value, '$.connections') = 'array'
      AND NOT EXISTS (SELECT 1 FROM edges x WHERE x.operation_id = g.operation_id)
    ORDER BY g.rowid, n.key, c.key"""


def upgrade() -> None:
    op.create_index("ix_nodes_op", "nodes", ["operation_id"])
    op.create_index("ix_edges_op", "edges", ["operation_id"])
    op.execute(_NODES)
    op.execute(_EDGES)


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
