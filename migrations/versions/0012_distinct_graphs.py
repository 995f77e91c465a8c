"""Each distinct captured graph once (distinct_graphs), and each op's graph by id (operation_graphs).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05

From this revision a capture stores a graph's text once, keyed by its hash, and TT-NN's per-op captured_graph,
nodes and edges only with Config(device_graphs=True). An older report keeps its per-op rows; its graphs are
gathered here into the new tables too (the same ids a capture gives them: the text's hash), so that ttreport's
readers find every report's graphs in one place.

Frozen like 0001: the tables are written here, not read from ttreport.schema.
"""

import hashlib

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def _graph_id(text: str) -> int:
    """As ttreport.capturing.device_graph.graph_id (frozen here): the text's BLAKE2b-64 as a signed integer."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def upgrade() -> None:
    bind = op.get_bind()
    bind.exec_driver_sql("CREATE TABLE IF NOT EXISTS distinct_graphs (\n\tgraph_id INTEGER NOT NULL, \n\t"
                         "captured_graph TEXT, \n\tPRIMARY KEY (graph_id)\n)")
    bind.exec_driver_sql("CREATE TABLE IF NOT EXISTS operation_graphs (\n\toperation_id INTEGER NOT NULL, \n\t"
                         "graph_id INTEGER, \n\tPRIMARY KEY (operation_id)\n)")
    ids = {}
    for (text,) in bind.exec_driver_sql("SELECT DISTINCT captured_graph FROM captured_graph "
                                        "WHERE captured_graph IS NOT NULL"):
        ids[text] = _graph_id(text)
    if not ids:
        return
    bind.exec_driver_sql("CREATE TEMP TABLE graph_ids (captured_graph TEXT PRIMARY KEY, graph_id INTEGER)")
    bind.exec_driver_sql("INSERT INTO graph_ids VALUES (?, ?)", list(ids.items()))
    bind.exec_driver_sql("INSERT OR IGNORE INTO distinct_graphs SELECT graph_id, captured_graph FROM graph_ids")
    bind.exec_driver_sql("INSERT OR IGNORE INTO operation_graphs SELECT c.operation_id, g.graph_id "
                         "FROM captured_graph c JOIN graph_ids g USING (captured_graph) ORDER BY c.operation_id")
    bind.exec_driver_sql("DROP TABLE temp.graph_ids")


def downgrade() -> None:
    raise NotImplementedError("reports are upgraded only; keep a copy of the folder to go back")
