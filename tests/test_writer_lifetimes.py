"""tensor_lifetime kept as a long capture goes (writer._LifetimesAside's passes in the writer process), then finished
by the close's pass: the same rows as the close's whole query (writer._LIFETIMES) and as worked out here by hand.

Real captures with a real writer process; the module constants are set before its fork, which inherits them.
"""

import sqlite3
import time

import pytest
import torch
from report_tables import tensor_lifetime_checked

import ttreport
from ttreport.capturing import writer


@pytest.mark.parametrize("starved", [False, True], ids=["followed", "stopped-after-one-pass"])
def test_passes_during_the_capture_leave_the_rows_the_close_would_work_out_whole(tmp_path, device, monkeypatch,
                                                                               starved):
    import device_sim as ttnn

    if starved:  # every pass counts as one that waited for a core: the follower stops after its first
        monkeypatch.setattr(writer, "STARVED", -10**9)
    monkeypatch.setattr(writer, "ASIDE_MIN_OPS", 1)
    monkeypatch.setattr(writer, "PASS_OPS", 40)
    monkeypatch.setattr(writer, "FOLLOW_S", 0.01)
    monkeypatch.setattr(writer, "AT_CLOSE", ["SELECT no_such_function()"])  # the rows worked out inline: an error
    early = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with ttreport.capture(tmp_path / "r") as cap:
        a = ttnn.ones((32, 32), device=device)
        kept = a * 3  # used in one pass's ops, deallocated in a later one's: its last use is the earlier pass's
        for i in range(240):
            if i == 50:
                ttnn.relu(kept)
            if i == 130:
                ttnn.deallocate(kept)
            b = a + 1
            c = b * 2 if i % 2 else a - b
            if i % 3 == 0:
                ttnn.deallocate(b)  # a tensor's lifetime ends at its deallocate, its last use before
            a = c if i % 5 == 0 else a
            if i % 40 == 39:
                cap.flush()  # committed: a pass follows
                time.sleep(0.05)
        late = early + a  # a tensor made before the capture, first seen at its end: its row after higher ids'
        ttnn.deallocate(late)
    result = cap._writer.result
    assert result["error"] is None and cap.status == "complete"
    parts = result["db_close_parts"]
    assert parts["lifetimes passes during the capture"][1] > 0 and "lifetimes aside" in parts
    con = sqlite3.connect(cap.db_path)
    try:
        got = tensor_lifetime_checked(con)
        assert sum(row[3] is not None for row in got) == 82
        assert all(row[4] and row[5] for row in got if row[1] is not None)  # each producer's file and line
    finally:
        con.close()
    assert not (tmp_path / "r" / writer.LIFETIMES_FILE).exists()


def test_a_short_capture_followed_for_a_while_still_closes_to_one_plain_file(tmp_path, device, monkeypatch):
    """Below ASIDE_MIN_OPS no pass is made, but the follower has looked at the report: its connection must be gone
    before the close leaves WAL mode (another connection keeps the report in WAL, beside a -wal file)."""
    import device_sim as ttnn

    monkeypatch.setattr(writer, "FOLLOW_S", 0.01)
    with ttreport.capture(tmp_path / "r") as cap:
        a = ttnn.ones((32, 32), device=device)
        for _ in range(5):
            a = a + 1
            cap.flush()
            time.sleep(0.05)  # the follower looks at the report meanwhile
    assert cap._writer.result["error"] is None and cap.status == "complete"
    con = sqlite3.connect(cap.db_path)
    try:
        assert con.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert "lifetimes aside" not in cap._writer.result["db_close_parts"]
    finally:
        con.close()
    assert not (tmp_path / "r" / "db.sqlite-wal").exists()
