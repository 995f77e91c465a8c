"""A batch's common records made into rows in C (_rows.Items) give the rows the Python loop gives, record for record.

Writer._write hands each batch to _rows.Items.write when writer.ROWS is on: it does the common OP, ALLOC, FREE, ROW
and PROGRAM records itself, from the writer's caches, and hands every other record to Writer._item, the pure-Python
loop's body and the specification (TTREPORT_PURE=1 runs only it). These tests hold the two equal on batches that hit
every rare case (a new spec, stack or graph, a list holding a str or a tensor not kept, an error, files, an L1 buffer
kept for a graph; floats and lists of numbers and kept tensors, made each time, in C too), and on whole captures in
every device_graphs mode, with buffer pages and with tensors="outputs".

    .venv/bin/python -m pytest tests/test_writer_items.py -q
"""

import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from report_tables import tables

from device_sim.device_work import CircularBuffer, Program
from ttreport import db
from ttreport.capturing import records, writer
from ttreport.capturing.oplog import Definitions
from ttreport.capturing.records import ALLOC, FLUSH, FREE, META, OP, PROGRAM, ROW, TENSOR, TensorArg, Text
from ttreport.errors import ReportIncompleteWarning

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(writer._rows is None, reason="ttreport.capturing._rows is not built (no compiler "
                                                             "or no sqlite3.h): the writer runs the Python loop")

CBS = (CircularBuffer((0,), 2, 2048), CircularBuffer((16,), 2, 2048))  # one program's, held: the graph key's ids
RANGES = ((0, 0, 7, 7),)
DRAM = Text("MemoryConfig(DRAM)")  # an argument the log defined once (an OBJ): the same object each time
ODD = Text("Odd(\ud800)")  # an object's repr with a lone surrogate: no UTF-8 for SQLite


def spec(tid: int, shape=(32, 32)) -> tuple:
    """A bfloat16 TILE tensor's spec, on the host (no memory config)."""
    return tuple(records.Spec(tid, shape, 0, 1, None, "default", None, None, None, None, tid - 1 or None))


def op(op_id: int, args=(), kwargs=None, *, specs=(), stack=None, files=None, error=None, name="ttnn.add",
       parent=None) -> tuple:
    inputs = tuple(int(a) for a in args if type(a) is TensorArg)
    outputs = tuple(s[0] for s in specs)
    return tuple(records.Op(OP, name, op_id, op_id * 10, op_id * 10 + 5, parent, 0, "MainThread", stack, args,
                            kwargs, inputs, outputs, specs, files, op_id * 3, 0, 2048, error, 0))


def program(op_id: int) -> tuple:
    return (PROGRAM, op_id, Program("BinaryNgDeviceOperation", "BinaryNgProgramFactory", CBS, RANGES, program_id=op_id))


def alloc(buffer_id: int, op_id: int, buffer_type: int = 0, address: int | None = None) -> tuple:
    return tuple(records.Alloc(ALLOC, buffer_id, 0, 4096 * buffer_id if address is None else address, 2048,
                               buffer_type, 0, 2048, op_id * 3 - 1, op_id))


def device_perf(op_id: int) -> tuple:
    return (ROW, "device_perf", ("operation_id", "compute_ns"), (op_id, 32))


def add(op_id: int, *args, **kwargs) -> list:
    """An op's records as a capture logs them: its output's alloc, its program, the op, its perf row, a free."""
    return [alloc(op_id, op_id), program(op_id), op(op_id, args or (TensorArg(1), TensorArg(2)),
                                                     specs=(spec(op_id + 2),), **kwargs),
            device_perf(op_id), (FREE, op_id, op_id * 3 + 1)]


def deep(n: int) -> list:
    return [1] if n == 1 else [deep(n - 1)]


def batches() -> list:
    t1, t2 = TensorArg(1), TensorArg(2)
    error = ("TypeError", "bad", "Traceback (most recent call last):\n", "2026-01-01T00:00:00")
    first = [(META, "k", 1),
             alloc(1, 1), program(1), op(1, (t1, t2), specs=(spec(1), spec(2), spec(3))), device_perf(1),
             *add(2), *add(3),  # hits: spec, argument texts, graph
             *add(4, t1, 1.5),  # a float: never cached
             *add(5, t1, t2, kwargs={"memory_config": DRAM, "dim": -1}),  # new texts
             *add(6, t1, t2, kwargs={"memory_config": DRAM, "dim": -1}),  # the same, cached
             *add(7, [t1, t2], 0, name="ttnn.concat"),  # a list
             *add(8, error=error),
             *add(9, files=((11, "tensors/11.pt"),)),
             *add(10, t1, t2, stack=(1, 10)), *add(11, t1, t2, stack=(1, 10)),  # a new stack, then its hit
             *add(12, t1, 'a"b\\ü'), *add(13, t1, 'a"b\\ü'),  # a str to escape, then its cached text
             *add(21, t1, ODD), *add(22, t1, ODD),  # a text with no UTF-8
             # numbers in lists and tuples (a reshape's shape, a slice's bounds), made each time: in C
             *add(23, t1, (1, 32, 2, 32)), *add(24, t1, [0, -1, -2 ** 63], kwargs={"ends": [1, 32, 64], "step": (1,)}),
             *add(25, t1, ([1.5, -0.0, 1e-05], (None, True, False)), float("inf"), float("nan"), kwargs={"eps": 1e-12}),
             # ... and in Python: an int past 64 bits, a text cut at MAX_VALUE_CHARS, a str inside, 10 lists deep
             *add(26, t1, [2 ** 70]), *add(27, t1, [0] * 1000), *add(28, t1, (1, "a")), *add(29, t1, deep(10)),
             # tensors in lists: the op's own output and a tensor with no spec kept in Python, a kept one in C
             *add(30, [TensorArg(32)]), *add(31, [TensorArg(999)]), *add(32, (t1, [t2, 1.5])),
             (FLUSH, None)]
    later = [*add(14), (TENSOR, 40, (2, 2), "torch.float32", None, None),
             alloc(15, 15, buffer_type=1), program(15), op(15, (t1, t2), specs=(spec(17),)),  # an L1 buffer
             device_perf(15), (FREE, 15, 46),
             alloc(16, 16), program(16), op(16, (t1,), specs=(spec(18, (64, 32)),)),  # a new spec mid-run
             alloc(17, 17), program(17), op(17, (t1,), specs=(spec(19, (64, 32)),)),
             op(18, (t1, t2)), op(19, ()),  # no program, no output
             (ROW, "device_perf", {"operation_id": 18, "compute_ns": 64}),  # a Row by its dict (a matmul's)
             *add(20, t2, t1, kwargs={"memory_config": DRAM, "dim": -1}),
             alloc(33, 33), program(33), op(33, ([t1],), specs=(spec(1, (64, 32)),)),  # t1 in a list, its spec anew
             # L1 buffers for a graph: op 15's placement again (its key hit), a nested op's with no program (moved to
             # its caller, whose key is new), a host op's (no program), one freed before its op's end
             alloc(34, 34, buffer_type=1, address=4096 * 15), program(34), op(34, (t1, t2), specs=(spec(36),)),
             alloc(35, 35, buffer_type=1), op(35, (t1,), specs=(spec(37),), parent=36),
             program(36), op(36, (t1, t2), specs=(spec(38),)),
             alloc(37, 37, buffer_type=1), op(37, (t1,), specs=(spec(39),)), (FREE, 37, 200),
             alloc(38, 38, buffer_type=1), program(38), (FREE, 38, 201), op(38, (t1, t2), specs=(spec(40),))]
    return [first, later]


def written(tmp_path: Path, monkeypatch, c_route: bool, graphs) -> tuple:
    """Each batch's staging rows and rows by table as Writer._commit got them, the ids of the ops Python made, and the
    report's tables."""
    path = tmp_path / ("c" if c_route else "python") / "db.sqlite"
    path.parent.mkdir()
    db.create(path, skip=db.LATE_INDEXES)
    defs = Definitions()
    defs.codes[1] = SimpleNamespace(co_filename="model.py", co_name="main")
    w = writer.Writer(path, defs, SimpleNamespace(buffer_pages=False, device_graphs=graphs))
    w.con = writer.connect(path)
    committed, by_python = [], []
    commit, item = w._commit, w._item

    def seen_commit(staging, rows):
        committed.append((list(staging), {name: v if v is None else list(v) if type(v) is list else dict(v)
                                          for name, v in rows.items()}))
        commit(staging, rows)

    def seen_item(rec, b):
        if rec[0] == OP or (rec[0] == ROW and len(rec) == 3):
            by_python.append(rec[2] if rec[0] == OP else "row")
        item(rec, b)

    w._commit, w._item = seen_commit, seen_item
    monkeypatch.setattr(writer, "ROWS", c_route)
    try:
        for batch in batches():
            assert w._write(batch) is False
    finally:
        w.con.close()
    assert w.error is None
    assert not w._l1_allocs and not w._l1_owner  # every op has ended: none of its L1 buffers is pending
    return committed, by_python, tables(path)


@pytest.mark.parametrize("graphs", [True, "distinct", False])
def test_the_c_loop_makes_the_rows_the_python_loop_makes(tmp_path, monkeypatch, graphs):
    committed, by_python, report = written(tmp_path, monkeypatch, False, graphs)
    got, c_by_python, c_report = written(tmp_path, monkeypatch, True, graphs)
    assert len(got) == len(committed) == 2
    for (staging, rows), (expected_staging, expected_rows) in zip(got, committed):
        assert staging == expected_staging
        assert rows.keys() == expected_rows.keys()
        for name in expected_rows.keys() - {"buffers"}:
            assert rows[name] == expected_rows[name], name
        assert expected_rows["buffers"] is None  # buffers' rows: the join's
    # made in C while the records come in seq order: the first batch (the second's start at op 14's seqs after op 22's)
    assert got[0][1]["buffers"] and got[1][1]["buffers"] is None
    assert c_report == report
    assert by_python == [*range(1, 14), *range(21, 33), *range(14, 20), "row", 20, *range(33, 39)]
    # Python makes the op only where a cache misses or the case is rare: the first op (its specs, texts and graph),
    # the new texts, the concat (its new int's text), the error, the files, the new stack, the str, the lists C leaves,
    # the L1 buffer's op (kept for a graph: only when graphs are wanted), the new spec, a tensor in a list whose spec
    # the op sends again, the nested op with L1 buffers and its caller (its graph new).
    rare = [1, 5, 7, 8, 9, 10, 12, 21, 26, 27, 28, 29, 30, 31, *([15] if graphs else []), 16, 33,
            *([35, 36] if graphs else [])]
    assert c_by_python == rare
    shown = {(op_id, name): v for op_id, name, v, *_ in report["operation_arguments"] if op_id in (7, 24, 25, 27, 32)}
    assert shown[24, "step"] == "(1,)" and shown[25, "1"] == "([1.5, -0.0, 1e-05], (None, True, False))"
    assert shown[7, "0"].startswith("[ttnn.Tensor(id=1, shape=Shape([32, 32]), dtype=DataType.BFLOAT16, layout=")
    assert shown[32, "0"].startswith("(ttnn.Tensor(id=1, shape=") and shown[32, "0"].endswith(", 1.5])")
    assert shown[25, "2"] == "inf" and shown[27, "1"] == str([0] * 1000)[:writer.MAX_VALUE_CHARS] + "..."
    assert report["operation_arguments"] and report["errors"] and report["stack_traces"]
    assert [v for _, name, v, *_ in report["operation_arguments"] if v.startswith("Odd")] == ["Odd(?)", "Odd(?)"]


@pytest.mark.parametrize("kept", [4, 1 << 16])
def test_a_tensor_arguments_text_is_the_one_sql_renders_from_its_row(tmp_path, monkeypatch, kept):
    # The writer renders a tensor argument's text from the first spec it kept of the tensor (the one its row keeps:
    # INSERT OR IGNORE), and leaves to SQL a tensor it may have forgotten (past MAX_SPEC_OF) or whose batch was lost.
    monkeypatch.setattr(writer, "MAX_SPEC_OF", kept)
    t = TensorArg
    lost = [op(20, (t(1),), specs=(spec(20),)), (ALLOC, 1)]  # a short record: the whole batch is rolled back
    again = (spec(1, None),)  # tensor 1 seen again, deallocated by then: its row keeps its first spec
    first = [op(i, (t(1), t(i - 1)), specs=(spec(i + 1),)) for i in range(2, 9)]  # past `kept` specs
    batches = [[op(1, (), specs=(spec(1), spec(2))), *first],
               [op(30, (t(1), t(5)), specs=again), op(31, (t(1), t(9), t(3)), specs=again)],
               lost,
               [op(32, (t(1), t(20), t(40), [t(1), t(2)]))]]
    reports = []
    for c_route in (False, True):
        path = tmp_path / f"{c_route}.sqlite"
        db.create(path, skip=db.LATE_INDEXES)
        w = writer.Writer(path, Definitions(), SimpleNamespace(buffer_pages=False, device_graphs="distinct"))
        w.con = writer.connect(path)
        monkeypatch.setattr(writer, "ROWS", c_route)
        try:
            with pytest.warns(ReportIncompleteWarning):
                for batch in batches:
                    w._write(batch)
            shown = w.con.execute(
                "SELECT a.value, COALESCE((SELECT " + writer._TENSOR_TEXT + " FROM tensors r LEFT JOIN tensor_specs s "
                "ON s.spec_id = r.spec_id WHERE r.tensor_id = a.tid), 'ttnn.Tensor(id=' || a.tid || ')') FROM "
                "(SELECT value, CAST(substr(value, 16) AS INTEGER) AS tid FROM operation_arguments "
                "WHERE value LIKE 'ttnn.Tensor(id=%') a").fetchall()
        finally:
            w.con.close()
        assert w.ops_lost == 1
        assert len(shown) == 2 * 7 + 2 + 3 + 3 and all(got == rendered for got, rendered in shown), shown
        assert "ttnn.Tensor(id=20)" in dict(shown) and "ttnn.Tensor(id=40)" in dict(shown)  # no row: lost, or never
        reports.append(tables(path))
    assert reports[0] == reports[1]


def test_buffers_rows_are_the_joins_and_made_by_it_once_the_records_leave_seq_order(tmp_path, monkeypatch):
    # An op's buffers rows list the buffers live after it: allocated before its end, freed after. The C loop keeps them
    # while each record's seq is the next (threads can interleave a seq and its place in the log), and from the
    # first that is not, the join over buffer_lifetimes makes them, for good.
    t = TensorArg
    start = [tuple(records.Alloc(ALLOC, i, 0, 4096 * i, 2048, 0, 0, 2048, 0, None)) for i in (3, 2)]  # seq 0
    in_order = [alloc(11, 1), op(1, (), specs=(spec(1),)), alloc(12, 2), op(2, (t(1),), specs=(spec(2),)),
                (FREE, 11, 7), alloc(13, 3), op(3, (t(2),), specs=(spec(3),))]
    late = [alloc(14, 4), (FREE, 12, 10), op(4, (t(3),), specs=(spec(4),)),  # the free's seq 10 after the alloc's 11
            alloc(15, 5), op(5, (t(4),), specs=(spec(5),)), (FREE, 15, 16)]
    reports, fed = [], []
    for route in ("python", "c", "c, executemany"):  # the last: no virtual table (the C's rows bound one by one)
        path = tmp_path / f"{route}.sqlite"
        db.create(path, skip=db.LATE_INDEXES)
        w = writer.Writer(path, Definitions(), SimpleNamespace(buffer_pages=False, device_graphs="distinct"))
        w.con = writer.connect(path)
        w._commit = lambda staging, rows, commit=w._commit: (fed.append(rows["buffers"]), commit(staging, rows))
        if route == "c, executemany":
            w._feeder = False
        monkeypatch.setattr(writer, "ROWS", route != "python")
        try:
            for batch in (start, in_order, late, [op(6, (t(5),))]):
                w._write(batch)
        finally:
            w.con.close()
        reports.append(tables(path))
    assert reports[0] == reports[1] == reports[2]
    assert [r is None for r in fed] == [True] * 4 + [False, False, True, True] * 2  # made in C until a free came late
    lives = {2: (0, 99), 3: (0, 99), 11: (2, 7), 12: (5, 10), 13: (8, 99), 14: (11, 99), 15: (14, 16)}  # seqs
    ends = {1: 3, 2: 6, 3: 9, 4: 12, 5: 15, 6: 18}
    assert [(op_id, address) for op_id, _, address, *_ in reports[0]["buffers"]] == [
        (op_id, 4096 * i) for op_id, end in ends.items() for i in sorted(lives) if lives[i][0] < end < lives[i][1]]


def test_joined_pairs_read_back_as_their_key_before_each_row(tmp_path):
    # An op's buffers rows: (operation_id, the live buffers' tuples) pairs, the tuples shared by the ops they outlive.
    path = tmp_path / "db.sqlite"
    con = sqlite3.connect(path, isolation_level=None)
    feeder = writer._rows.Feeder(con, str(path))
    con.execute("CREATE VIRTUAL TABLE temp.fed USING ttreport_rows(a, b, c)")
    live = ((1, "x"), (2, None))
    feeder.feed_joined([(7, live), (8, ()), (9, live[1:])])
    assert con.execute("SELECT * FROM temp.fed").fetchall() == [(7, 1, "x"), (7, 2, None), (9, 2, None)]
    feeder.feed_joined([(1, ())])
    assert con.execute("SELECT COUNT(*) FROM temp.fed").fetchone() == (0,)
    for bad in ([(1, [(2, 3)])], [(1,)], [(1, ((2, 3), (4,)))], [(1, ((2, 3),)), (5, ((6,),))], [(1, (2,))]):
        with pytest.raises(ValueError, match="is not a"):
            feeder.feed_joined(bad)
    with pytest.raises(TypeError, match="a value of type object"):
        feeder.feed_joined([(1, ((2, object()),))])
    with pytest.raises(TypeError, match="a list of"):
        feeder.feed_joined(((1, ((2, 3),)),))
    con.close()


def test_an_item_that_is_not_a_known_record_goes_to_python(tmp_path, monkeypatch):
    # A record C does not know (a tag past the known ones, a short ALLOC) is Writer._item's to take or refuse: the
    # batch is lost and counted as the Python loop would, never half-made by C.
    for c_route in (False, True):
        path = tmp_path / f"{c_route}.sqlite"
        db.create(path, skip=db.LATE_INDEXES)
        w = writer.Writer(path, Definitions(), SimpleNamespace(buffer_pages=False, device_graphs="distinct"))
        w.con = writer.connect(path)
        monkeypatch.setattr(writer, "ROWS", c_route)
        try:
            with pytest.warns(ReportIncompleteWarning, match="IndexError"):
                assert w._write([(ALLOC, 1)]) is False
        finally:
            w.con.close()
        assert w.records_lost == 1 and type(w.error) is IndexError


# Whole captures, each route in a fresh interpreter (the same tensor ids and addresses): every device_graphs mode,
# buffer pages, stored outputs, and ops that hit each rare case more than once.
MODEL = r"""
import sys
import torch
import device_sim as ttnn
import ttreport
from ttreport.capturing import writer

writer.ROWS = sys.argv[2] == "c"  # read by the writer process, forked from this one
configs = [dict(device_graphs=True, buffer_pages=True), dict(device_graphs="distinct", tensors="outputs"),
           dict(device_graphs=False, stack_traces=False)]
device = ttnn.open_device(0)
for i, config in enumerate(configs):
    torch.manual_seed(0)
    with ttreport.capture(f"{sys.argv[1]}/{i}", config=ttreport.Config(perf_files=False, **config)):
        a = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        b = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        for step in range(4):
            c = ttnn.add(a, b, memory_config=ttnn.L1_MEMORY_CONFIG)
            d = ttnn.multiply(c, 0.5)
            e = ttnn.softmax(d, dim=-1)
            f = ttnn.concat([e, a], dim=0)
            ttnn.deallocate(c)
            g = ttnn.add(a, b)
            if step == 2:
                h = ttnn.from_torch(torch.randn(32, 96), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
                ttnn.relu(h)
            try:
                ttnn.add(a, torch.zeros(3))
            except TypeError:
                pass
ttnn.close_device(device)
"""


def test_the_c_loop_and_the_python_loop_write_the_same_captures(tmp_path):
    for route in ("python", "c"):
        subprocess.run([sys.executable, "-c", MODEL, str(tmp_path / route), route], cwd=REPO, check=True,
                       capture_output=True, timeout=180)
    for i in range(3):
        expected, got = (tables(tmp_path / route / str(i) / "db.sqlite") for route in ("python", "c"))
        assert got.keys() == expected.keys()
        for table in expected:
            assert got[table] == expected[table], (i, table)
        assert expected["errors"] and len(expected["operations"]) > 30
    assert tables(tmp_path / "python" / "0" / "db.sqlite")["buffer_pages"]
    assert tables(tmp_path / "python" / "1" / "db.sqlite")["tensor_files"]
