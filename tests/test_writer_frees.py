"""A buffer's free reaches its buffer_lifetimes row whichever batch, and whichever of an op's slots, holds it.

The writer inserts a buffer freed in the batch that allocated it with its freed_seq (op_staging joined to itself), and
updates the rows of earlier batches; `buffers` (what is live after each op) reads the result.

    .venv/bin/python -m pytest tests/test_writer_frees.py -q
"""

import sqlite3
from types import SimpleNamespace

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
