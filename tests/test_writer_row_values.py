"""A row by its columns and values (records.RowValues: every op's device_perf row from the writer process's LogPerf)
is written as the same row by its dict (records.Row) is; read from a log of a folder, its names are checked as a
Row's are.

    .venv/bin/python -m pytest tests/test_writer_row_values.py -q
"""

import sqlite3
from types import SimpleNamespace

import pytest

from ttreport import db
from ttreport.capturing import log_perf, oplog, records, writer
from ttreport.capturing.records import ROW


def written(path, batch) -> list:
    db.create(path, skip=db.LATE_INDEXES)
    w = writer.Writer(path, None, SimpleNamespace(buffer_pages=False, device_graphs=False))
    w.con = writer.connect(path)
    try:
        w._write(batch)
        assert w.error is None
    finally:
        w.con.close()
    with sqlite3.connect(path) as con:
        return con.execute("SELECT * FROM device_perf ORDER BY rowid").fetchall()


def test_a_rows_values_and_its_dict_write_the_same_device_perf_rows(tmp_path):
    values = [(1, 1500.0, 900.5, 1500.0, "compute", "HiFi4"), (2, 10.0, 20.0, 20.0, "memory", None)]
    as_dicts = [(ROW, "device_perf", dict(zip(log_perf.COLUMNS, v))) for v in values]
    as_values = [(ROW, "device_perf", log_perf.COLUMNS, v) for v in values]
    assert all(records.kind(r) is records.RowValues for r in as_values)
    expected = written(tmp_path / "dicts.sqlite", as_dicts)
    assert len(expected) == 2
    assert written(tmp_path / "values.sqlite", as_values) == expected
    # both kinds in one batch: one insert of the table's rows, in their order
    mixed = written(tmp_path / "mixed.sqlite", [as_values[0], as_dicts[1]])
    assert mixed == expected


@pytest.mark.parametrize("rec", [
    (ROW, "device_perf", ("operation_id) VALUES (1); --",), (1,)),  # SQL in a column's name
    (ROW, "device_perf; DROP TABLE operations", ("operation_id",), (1,)),  # ... or the table's
    (ROW, "device_perf", ("operation_id", "compute_ns"), (1,)),  # fewer values than columns
    (ROW, "device_perf", ["operation_id"], (1,)),  # columns not a tuple
    (ROW, "device_perf", (), ()),  # no column
    (ROW, "device_perf", ("operation_id", "operation_id"), (1, 2)),  # a column twice: the batch's insert would fail
    (ROW, "device_perf", (["operation_id"],), (1,)),  # a name not text
    (ROW, "device_perf", ("operation_id",), 1),  # values not a tuple
])
def test_a_logs_row_values_with_bad_names_or_widths_is_refused(rec):
    with pytest.raises(ValueError, match="a row of table"):
        oplog._check_records([rec])
    oplog._check_records([(ROW, "device_perf", log_perf.COLUMNS, (1, 2.0, 3.0, 3.0, "memory", None))])
