"""The writer process's close of a report: the late indexes (sorted on SQLite's threads), tensor_lifetime (worked
out beside them for a long capture), the checkpoint, and the steps' times it reports (Writer.close_parts).

Real captures with a real writer process; the module constants are set before its fork, which inherits them.
"""

import sqlite3

import pytest

import ttreport
from ttreport import schema_sql
from ttreport.capturing import writer


@pytest.mark.parametrize("aside", [True, False], ids=["lifetimes-aside", "lifetimes-inline"])
def test_the_close_sorts_on_sqlites_threads_and_leaves_every_index_and_lifetime(tmp_path, device, monkeypatch, aside):
    import device_sim as ttnn

    monkeypatch.setattr(writer, "SORT_THREADS", 2)
    monkeypatch.setattr(writer, "ASIDE_MIN_OPS", 1 if aside else 10**9)
    with ttreport.capture(tmp_path / "r") as cap:
        a = ttnn.ones((32, 32), device=device)
        for _ in range(300):
            a = a + 1
    result = cap._writer.result
    assert result["error"] is None and cap.status == "complete"
    parts = result["db_close_parts"]
    assert set(parts) == {"indexes", "lifetimes", "checkpoint", *(["lifetimes aside"] if aside else [])}
    assert all(wall >= 0 and cpu >= 0 for wall, cpu in parts.values())
    con = sqlite3.connect(cap.db_path)
    try:
        indexes = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert set(schema_sql.INDEXES) <= indexes
        assert con.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        # the rows the close wrote are those its query gives on the closed report
        for sql in writer._STACK_LINES:
            con.execute(sql)
        expected = con.execute(writer._LIFETIMES).fetchall()
        got = con.execute(f"SELECT {writer._LIFETIME_COLUMNS} FROM tensor_lifetime ORDER BY rowid").fetchall()
        assert got == expected and len(got) == 301  # a and the 300 sums
    finally:
        con.close()
