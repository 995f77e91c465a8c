"""A buffer's free reaches its buffer_lifetimes row whichever batch, and whichever of an op's slots, holds it.

The writer inserts a buffer freed in the batch that allocated it with its freed_seq (the batch's staging rows joined to
themselves), and updates the rows of earlier batches; `buffers` (what is live after each op) reads the result. The
live set that the join of `buffers` starts from (temp.live_buffers) is the buffers not freed, after each batch with ops.

    .venv/bin/python -m pytest tests/test_writer_frees.py -q
"""

import sqlite3
from types import SimpleNamespace

import pytest

from ttreport import db
from ttreport.capturing import records, writer
from ttreport.capturing.records import ALLOC, FREE, OP


def alloc(buffer_id: int, seq: int) -> tuple:
    return tuple(records.Alloc(ALLOC, buffer_id, 0, 4096 * buffer_id, 2048, 0, 0, 2048, seq, None))


def op(op_id: int, end_seq: int) -> tuple:
    return tuple(records.Op(OP, "ttnn.add", op_id, op_id * 10, op_id * 10 + 5, None, 0, "MainThread", None, (), None,
                            (), (), (), None, end_seq, 0, 0, None, 0))


def test_frees_in_the_allocating_batch_a_later_one_and_beside_another_alloc(tmp_path):
    path = tmp_path / "db.sqlite"
    db.create(path, skip=db.LATE_INDEXES)
    w = writer.Writer(path, None, SimpleNamespace(buffer_pages=False, device_graphs=False))
    w.con = writer.connect(path)
    try:
        # buffer 1: freed in its own batch; 2: in the next; 3: never; 4: allocated beside 5 before one op (so not in
        # the op's own slot), freed in the same batch
        w._write([alloc(1, 1), op(1, 2), (FREE, 1, 3), alloc(2, 4), op(2, 5), alloc(3, 6), op(3, 7)])
        w._write([(FREE, 2, 8), op(4, 9), alloc(4, 10), alloc(5, 11), op(5, 12), (FREE, 4, 13), op(6, 14)])
        assert w.error is None
    finally:
        w.con.close()
    con = sqlite3.connect(path)
    try:
        assert con.execute("SELECT buffer_id, allocated_seq, freed_seq FROM buffer_lifetimes ORDER BY buffer_id"
                           ).fetchall() == [(1, 1, 3), (2, 4, 8), (3, 6, None), (4, 10, 13), (5, 11, None)]
        live = con.execute("SELECT operation_id, group_concat(address / 4096) FROM (SELECT * FROM buffers ORDER BY "
                           "rowid) GROUP BY operation_id ORDER BY operation_id").fetchall()
        assert live == [(1, "1"), (2, "2"), (3, "2,3"), (4, "3"), (5, "3,4,5"), (6, "3,5")]
    finally:
        con.close()


@pytest.mark.parametrize("route", ["python", "c", "c, joined", "c, executemany"])
def test_the_live_set_is_the_buffers_not_freed_whichever_batch_freed_them(tmp_path, monkeypatch, route):
    # "c, joined": buffers' rows by the join (_rows.Items.exact 0, as after a record out of seq order) with the rows
    # fed; "c, executemany": without the virtual table; "python": TTREPORT_PURE=1.
    path = tmp_path / "db.sqlite"
    db.create(path, skip=db.LATE_INDEXES)
    monkeypatch.setattr(writer, "ROWS", route != "python")
    w = writer.Writer(path, None, SimpleNamespace(buffer_pages=False, device_graphs=False))
    w.con = writer.connect(path)
    if route == "c, joined":
        w._items.exact = 0
    if route == "c, executemany":
        w._feeder = False
    live = []
    try:
        # 1 freed in its batch; a batch with no op frees 2 (of an earlier batch) and 4 (its own); 3 freed in the next
        for batch in ([alloc(1, 1), op(1, 2), (FREE, 1, 3), alloc(2, 4), op(2, 5)],
                      [alloc(3, 6), (FREE, 2, 7), alloc(4, 8), (FREE, 4, 9)],
                      [op(3, 10), alloc(5, 11), op(4, 12), (FREE, 3, 13), op(5, 14)]):
            w._write(batch)
            assert w.error is None
            if any(item[0] == OP for item in batch):
                live.append(sorted(b for (b,) in w.con.execute("SELECT buffer_id FROM temp.live_buffers")))
    finally:
        w.con.close()
    assert live == [[2], [5]]
    con = sqlite3.connect(path)
    try:
        assert con.execute("SELECT operation_id, address / 4096 FROM buffers ORDER BY rowid").fetchall() == [
            (1, 1), (2, 2), (3, 3), (4, 3), (4, 5), (5, 5)]
        assert con.execute("SELECT buffer_id, freed_seq FROM buffer_lifetimes ORDER BY buffer_id").fetchall() == [
            (1, 3), (2, 7), (3, 13), (4, 9), (5, None)]
    finally:
        con.close()
