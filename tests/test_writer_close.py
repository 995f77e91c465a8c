"""The writer process's close of a report: the late indexes (sorted on SQLite's threads), tensor_lifetime (worked
out beside them for a long capture), the checkpoint, and the steps' times it reports (Writer.close_parts).

Real captures with a real writer process; the module constants are set before its fork, which inherits them.
"""

import sqlite3

import pytest
from report_tables import tensor_lifetime_checked

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
        for i in range(300):
            b = a + 1
            c = b * 2 if i % 2 else a - b
            if i % 3 == 0:
                ttnn.deallocate(b)  # a tensor's lifetime ends at its deallocate, its last use before
            a = c if i % 5 == 0 else a
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
        # the rows the close wrote are those its query gives on the closed report, and those worked out by hand
        got = tensor_lifetime_checked(con)
        assert sum(row[3] is not None for row in got) == 100
    finally:
        con.close()


def test_a_temp_folder_too_full_for_the_threaded_sorts_falls_back_to_the_sort_in_memory(tmp_path, device, monkeypatch):
    """The threaded sorts spill to SQLite's temp folder; a full one ("database or disk is full", injected here where
    the real close would meet it: in create_indexes with temp_store FILE) must not cost the report its indexes."""
    import device_sim as ttnn

    real, tries = writer.db.create_indexes, []

    def create_indexes(con, **kw):
        temp_store = con.execute("PRAGMA temp_store").fetchone()[0]  # 1 FILE, 2 MEMORY
        tries.append(temp_store)
        if temp_store == 1:
            con.execute("BEGIN")  # as the real one fails: inside its transaction, rolled back
            con.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")
        return real(con, **kw)

    monkeypatch.setattr(writer, "SORT_THREADS", 2)
    monkeypatch.setattr(writer.db, "create_indexes", create_indexes)  # the forked writer inherits it
    with ttreport.capture(tmp_path / "r") as cap:
        a = ttnn.ones((32, 32), device=device)
        for _ in range(20):
            a = a + 1
    assert cap._writer.result["error"] is None and cap.status == "complete"
    con = sqlite3.connect(cap.db_path)
    try:
        indexes = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert set(schema_sql.INDEXES) <= indexes
        assert con.execute("SELECT count(*) FROM tensor_lifetime").fetchone()[0] > 0
    finally:
        con.close()
