"""A tensor inside a list argument (concat's inputs) reads as the same tensor as a plain argument does.

A plain tensor argument's text is rendered in SQL from the tensor's row (writer._TENSOR_TEXT); one inside a list is
rendered by Writer._tensor_text from the spec texts it remembers, this batch's rows, or the db. The two agree: a
tensor whose row is in the same batch is named by its spec, not by its id alone, and one whose spec has no layout (a
host tensor's: a TENSOR record) by its id alone, as SQL's NULL makes it.

    .venv/bin/python -m pytest tests/test_writer_tensor_texts.py -q
"""

import sqlite3
from types import SimpleNamespace

from ttreport import db
from ttreport.capturing import records, writer
from ttreport.capturing.records import OP, TENSOR, TensorArg


def open_writer(path):
    db.create(path, skip=db.LATE_INDEXES)
    w = writer.Writer(path, None, SimpleNamespace(buffer_pages=False, device_graphs=False))
    w.con = writer.connect(path)
    return w


def spec(tid: int) -> tuple:
    """A 32x32 bfloat16 TILE tensor's spec, on the host (no memory config: no defs needed)."""
    return tuple(records.Spec(tid, (32, 32), 0, 1, None, "default", None, None, None, None, None))


def op(op_id: int, args: tuple, specs: tuple = (), outputs: tuple = ()) -> tuple:
    inputs = tuple(int(a) for a in args if type(a) is TensorArg)
    return tuple(records.Op(OP, "ttnn.concat", op_id, op_id * 10, op_id * 10 + 5, None, 0, "MainThread", None, args,
                            None, inputs, outputs, specs, None, op_id, 0, 0, None, 0))


def arguments(path, op_id: int) -> list:
    with sqlite3.connect(path) as con:
        return [v for (v,) in con.execute("SELECT value FROM operation_arguments WHERE operation_id = ? ORDER BY "
                                          "rowid", (op_id,))]


def test_a_tensor_in_a_list_made_in_the_same_batch_reads_as_a_plain_argument(tmp_path, monkeypatch):
    # The bounded spec cache drops the older half past MAX_SPEC_OF: tensor 1, made by op 1, is gone by op 2's
    # arguments, while its row is still this batch's, not the db's.
    monkeypatch.setattr(writer, "MAX_SPEC_OF", 2)
    path = tmp_path / "db.sqlite"
    w = open_writer(path)
    try:
        w._write([op(1, (), specs=(spec(1), spec(2), spec(3)), outputs=(1, 2, 3)),
                  op(2, ([TensorArg(1), 7], TensorArg(1)))])
    finally:
        w.con.close()
    listed, plain = arguments(path, 2)
    assert plain == "ttnn.Tensor(id=1, shape=Shape([32, 32]), dtype=DataType.BFLOAT16, layout=Layout.TILE, host)"
    assert listed == f"[{plain}, 7]"


def test_a_host_tensor_in_a_list_reads_by_its_id_as_a_plain_argument_does(tmp_path):
    path = tmp_path / "db.sqlite"
    w = open_writer(path)
    try:
        w._write([tuple(records.HostTensor(TENSOR, 5, (2, 2), "torch.float32", None, None))])
        w._write([op(1, ([TensorArg(5)], TensorArg(5)))])  # a later batch: the tensor's row is read from the db
    finally:
        w.con.close()
    listed, plain = arguments(path, 1)
    assert plain == "ttnn.Tensor(id=5)"
    assert listed == f"[{plain}]"
