"""The writer's rows through a virtual table (ttreport/capturing/_rows.c) make the report that executemany makes.

writer.ROWS picks the route in the writer process (forked from the capture's: a test's setting reaches it);
executemany, one INSERT a row, is the specification (TTREPORT_PURE=1 runs it).

    .venv/bin/python -m pytest tests/test_writer_rows.py -q
"""

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from report_tables import tables

import ttreport
from ttreport import db
from ttreport.capturing import writer

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(writer._rows is None, reason="ttreport.capturing._rows is not built (no compiler "
                                                             "or no sqlite3.h): the writer uses executemany")


# Ops of every kind of staging row: one output and several (split), a list argument (concat), keyword arguments, an
# L1 output, a deallocate, an error, host ops. Each run in a fresh interpreter: the same tensor ids and addresses.
MODEL = r"""
import sys
import torch
import device_sim as ttnn
import ttreport
from ttreport.capturing import writer

writer.ROWS = sys.argv[2] == "rows"  # read by the writer process, forked from this one
torch.manual_seed(0)
device = ttnn.open_device(0)
with ttreport.capture(sys.argv[1], config=ttreport.Config(perf_files=False, buffer_pages=True)):
    a = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    for _ in range(3):
        c = ttnn.add(a, b, memory_config=ttnn.L1_MEMORY_CONFIG)
        d = ttnn.matmul(c, b)
        e = ttnn.softmax(d, dim=-1)
        f = ttnn.concat([e, a], dim=0)
        ttnn.split(f, 32, dim=0)
        ttnn.deallocate(c)
        ttnn.to_torch(e)
    try:
        ttnn.add(a, torch.zeros(3))
    except TypeError:
        pass
ttnn.close_device(device)
"""


def test_the_virtual_table_and_executemany_write_the_same_report(tmp_path):
    for route in ("executemany", "rows"):
        subprocess.run([sys.executable, "-c", MODEL, str(tmp_path / route), route], cwd=REPO, check=True,
                       capture_output=True, timeout=120)
    expected, got = tables(tmp_path / "executemany" / "db.sqlite"), tables(tmp_path / "rows" / "db.sqlite")
    assert got.keys() == expected.keys()
    for table in expected:
        assert got[table] == expected[table], table
    assert expected["errors"] and expected["buffer_pages"] and expected["device_perf"]
    assert len(expected["operations"]) > 20


def test_a_writer_stages_through_the_virtual_table_when_it_is_built(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "ROWS", True)
    path = tmp_path / "db.sqlite"
    w = writer.Writer(path, None, ttreport.Config())
    w.con = writer.connect(path)
    try:
        assert type(w._start_feeder()) is writer._rows.Feeder
        w._feeder = w._start_feeder()
        w._make_row_tables([2, 3, 2])
        w.con.execute("CREATE TABLE t (a, b)")
        w._insert("INSERT INTO t (b, a)", [(1, "x"), (2, None)])
        assert w.con.execute("SELECT * FROM t").fetchall() == [("x", 1), (None, 2)]
        assert w._row_tables == {2, 3}
        monkeypatch.setattr(writer, "ROWS", False)
        assert w._start_feeder() is False  # TTREPORT_PURE=1: executemany
    finally:
        w.con.close()


def test_fed_rows_read_back_as_each_value_was(tmp_path):
    path = tmp_path / "db.sqlite"
    con = sqlite3.connect(path, isolation_level=None)
    feeder = writer._rows.Feeder(con, str(path))
    con.execute("CREATE VIRTUAL TABLE temp.fed USING ttreport_rows(a, b, c)")
    rows = [(1, "x", None), (2 ** 63 - 1, 1.5, b"\x00z"), (True, "é\x00", -(2 ** 63)), (-0.0, "", b"")]
    feeder.feed(rows)
    assert con.execute("SELECT * FROM temp.fed").fetchall() == [(1, "x", None), (2 ** 63 - 1, 1.5, b"\x00z"),
                                                                 (1, "é\x00", -(2 ** 63)), (-0.0, "", b"")]
    assert con.execute("SELECT * FROM temp.fed").fetchall() == [tuple(map(lambda v: int(v) if v is True else v, r))
                                                                 for r in rows]  # read again: the same rows
    feeder.feed(None)
    assert con.execute("SELECT COUNT(*) FROM temp.fed").fetchone() == (0,)
    con.close()


def test_fed_rows_found_by_a_columns_value_are_those_a_scan_finds(tmp_path):
    # The writer's staging rows joined to themselves (a buffer's alloc to its free): `column = value` looks the value
    # up in the fed rows sorted by that column, once a feed; whatever is not an int is scanned (SQLite checks it).
    path = tmp_path / "db.sqlite"
    con = sqlite3.connect(path, isolation_level=None)
    feeder = writer._rows.Feeder(con, str(path))
    con.execute("CREATE VIRTUAL TABLE temp.fed USING ttreport_rows(a, b)")
    con.execute("CREATE TABLE probe (v)")
    con.executemany("INSERT INTO probe VALUES (?)", [(v,) for v in (5, 2, 7, 9, -1, 5.0, "5", None, 2 ** 63 - 1)])
    looked_up = "SELECT p.rowid, f.rowid, f.a, f.b FROM probe p CROSS JOIN temp.fed f ON f.a = p.v ORDER BY p.rowid"
    scanned = ("SELECT p.rowid, f.rowid, f.a, f.b FROM probe p CROSS JOIN temp.fed f ON +f.a = p.v "
               "ORDER BY p.rowid, f.rowid")
    assert "INDEX 1:" in " ".join(r[3] for r in con.execute(f"EXPLAIN QUERY PLAN {looked_up}"))
    for rows in ([(5, "x"), (2, "y"), (5, "z"), (None, "n"), (7, "w"), (-1, "m"), (2 ** 63 - 1, "big")],
                 [(5, "x"), (5.0, "f"), ("5", "t"), (2, "y")],  # not all ints: scanned
                 [(None, "n")], []):
        feeder.feed(rows)
        expected = con.execute(scanned).fetchall()
        assert con.execute(looked_up).fetchall() == expected
        assert con.execute(looked_up).fetchall() == expected  # the lookup made once a feed, read again
    feeder.feed([(5, "x"), (2, "y"), (5, "z")])
    assert con.execute(looked_up).fetchall() == [(1, 1, 5, "x"), (1, 3, 5, "z"), (2, 2, 2, "y"), (6, 1, 5, "x"),
                                                 (6, 3, 5, "z")]  # equal values in the rows' order
    con.close()


def test_the_batchs_statements_over_its_staging_rows_sort_nothing_and_scan_them_once(tmp_path, monkeypatch):
    # Each op's rows go in op order without a sort (ORDER BY rowid, consumed by the virtual table; the per-op graph
    # tables' two-level order from temp.op_staging), and a buffer's alloc finds its free by a lookup, not a scan.
    monkeypatch.setattr(writer, "ROWS", True)
    path = tmp_path / "db.sqlite"
    db.create(path, skip=db.LATE_INDEXES)
    w = writer.Writer(path, None, ttreport.Config())
    w.con = writer.connect(path)
    try:
        assert w._start_feeder()
        plans = {sql: " / ".join(r[3] for r in w.con.execute(f"EXPLAIN QUERY PLAN {sql}")) for sql in [
            *(sql.format(src=src) for src in (writer._FED_STAGING, writer._STAGED)
              for sql in (*writer._SPREAD, writer._STACK_TRACES, writer._OPERATION_GRAPHS, writer._FREES)),
            *writer._PER_OP_GRAPHS, writer._NARROW]}
    finally:
        w.con.close()
    assert not [plan for plan in plans.values() if "TEMP B-TREE" in plan], plans
    lifetimes = [plan for sql, plan in plans.items() if "buffer_lifetimes (" in sql]
    assert len(lifetimes) == 2 and all("SEARCH f USING INDEX" in plan or re.search(r"SCAN f VIRTUAL TABLE INDEX [1-9]",
                                                                                plan) for plan in lifetimes), lifetimes


def test_a_feeder_refuses_what_sqlite3_would_not_bind_and_a_width_not_the_tables(tmp_path):
    path = tmp_path / "db.sqlite"
    con = sqlite3.connect(path, isolation_level=None)
    feeder = writer._rows.Feeder(con, str(path))
    con.execute("CREATE VIRTUAL TABLE temp.fed USING ttreport_rows(a, b)")
    with pytest.raises(TypeError, match="a value of type object"):
        feeder.feed([(1, object())])
    with pytest.raises(OverflowError):
        feeder.feed([(2 ** 63, 1)])
    with pytest.raises(ValueError, match="row 1 is not a tuple of 2 values"):
        feeder.feed([(1, 2), (1, 2, 3)])
    feeder.feed([(1, 2, 3)])
    with pytest.raises(sqlite3.OperationalError, match="rows of 3 values fed to a table of 2 columns"):
        con.execute("SELECT * FROM temp.fed").fetchall()
    con.close()
    with pytest.raises(ValueError, match="the connection is closed"):
        feeder.feed(None)


def test_spread_pairs_read_back_as_their_rows_numbered_from_zero(tmp_path):
    # An op's input_tensors and output_tensors rows: (operation_id, tensor ids) pairs, as executemany writes them.
    path = tmp_path / "db.sqlite"
    con = sqlite3.connect(path, isolation_level=None)
    feeder = writer._rows.Feeder(con, str(path))
    con.execute("CREATE VIRTUAL TABLE temp.fed USING ttreport_rows(a, b, c)")
    feeder.feed_spread([(7, (3, 4)), (8, ()), (9, (5,)), ("k", (None, 2 ** 63 - 1, "x"))])
    assert con.execute("SELECT * FROM temp.fed").fetchall() == [(7, 0, 3), (7, 1, 4), (9, 0, 5), ("k", 0, None),
                                                                 ("k", 1, 2 ** 63 - 1), ("k", 2, "x")]
    feeder.feed_spread([(1, ())])
    assert con.execute("SELECT COUNT(*) FROM temp.fed").fetchone() == (0,)
    for bad in ([(1, [2])], [(1,)], [[1, (2,)]]):
        with pytest.raises(ValueError, match="is not a \\(key, tuple of values\\) pair"):
            feeder.feed_spread(bad)
    with pytest.raises(TypeError, match="a value of type object"):
        feeder.feed_spread([(1, (2, object()))])
    with pytest.raises(TypeError, match="a list of"):
        feeder.feed_spread(((1, (2,)),))
    con.close()


def test_a_feeder_is_only_made_for_the_connection_to_the_file_named(tmp_path):
    path, other = tmp_path / "db.sqlite", tmp_path / "other.sqlite"
    other.touch()
    con = sqlite3.connect(path)
    try:
        with pytest.raises(ValueError, match="the connection's database is"):
            writer._rows.Feeder(con, str(other))
        with pytest.raises(TypeError, match="a sqlite3.Connection itself"):
            writer._rows.Feeder(object(), str(path))
    finally:
        con.close()
