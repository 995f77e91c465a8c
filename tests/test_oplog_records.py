"""The op log's records as the recorder makes them (ttreport.capturing.oplog's docstring is the format).

What a record names (a stack, a program's static part, a memory config, an argument object) is defined
in the log once, when the recorder first sees it, and before the first record that uses it, from any
thread. These tests read the raw log of a live capture (Config(writer="process")) and the reports the
writer process makes from it.
"""

import marshal
import threading

import torch

import device_sim as ttnn
import ttreport
from ttreport.capturing import oplog
from ttreport.capturing.oplog import CFG, CODE, OBJ, PROG, STACK, LogSink, LogTail
from ttreport.capturing.records import OP, PROGRAM, STOP, TensorArg, view
from ttreport.folder import OPLOG_DIR


def _raw_records(folder) -> list:
    """Every record in a log's first segment, as marshalled: nothing decoded."""
    data = oplog.segment_path(folder, 1).read_bytes()
    out, off = [], 0
    while True:
        n = int.from_bytes(data[off:off + 4], "little")
        if n == 0:
            return out
        out.extend(marshal.loads(data[off + 4:off + 4 + n]))
        off += 4 + n


def _add_loop(a, b, n):
    for _ in range(n):
        ttnn.add(a, b, memory_config=ttnn.L1_MEMORY_CONFIG)  # one line: one stack


def test_a_loop_of_the_same_op_defines_its_stack_program_and_objects_once(tmp_path, device):
    a = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(writer="process", device_graphs=True)):
        _add_loop(a, b, 50)
        ttnn.add(a, b)  # the op whose write carries the 50th add's free
        records = _raw_records(tmp_path / "r" / OPLOG_DIR)
    ops = [r for r in records if r[0] == OP]
    assert len(ops) == 51
    tags = [r[0] for r in records]
    assert tags.count(STACK) == 2 and tags.count(PROG) == 1  # the loop's line and the last add's
    assert tags.count(OBJ) == 1  # L1_MEMORY_CONFIG, named by number in every record after
    cfgs = [r[1] for r in records if r[0] == CFG]  # the inputs' and the outputs' configs: specs name them by id
    assert 2 <= len(cfgs) == len(set(cfgs)) <= 3
    assert len({r[1] for r in records if r[0] == CODE}) == tags.count(CODE)
    loop_ops = ops[:50]
    assert len({r[8] for r in loop_ops}) == 1 and type(loop_ops[0][8]) is int
    assert all(r[9] == (b"t%d" % a.tensor_id, b"t%d" % b.tensor_id) for r in loop_ops)
    assert len({r[10]["memory_config"] for r in loop_ops}) == 1
    launches = [r for r in records if r[0] == PROGRAM]
    assert len(launches) == 51 and all(type(r[2]) is int for r in launches)
    # Every number is defined before the first record that uses it.
    defined = set()
    for r in records:
        if r[0] in (STACK, PROG, OBJ):
            defined.add(r[1])
        elif r[0] == OP:
            assert r[8] in defined
            assert all(int(v[1:]) in defined for v in (r[10] or {}).values())
        elif r[0] == PROGRAM:
            assert r[2] in defined
    with ttreport.open(tmp_path / "r") as rep:
        assert rep.execute("SELECT COUNT(DISTINCT stack_trace) FROM stack_traces").fetchone()[0] == 2
        assert rep.execute("SELECT COUNT(*) FROM captured_graph").fetchone()[0] == 51
        arg = rep.execute("SELECT value FROM operation_arguments WHERE name = 'memory_config'").fetchone()[0]
        assert arg.startswith("MemoryConfig(")


def test_ops_from_several_threads_find_their_definitions_in_the_log(tmp_path, device):
    a = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)

    def one():
        for _ in range(300):
            ttnn.add(a, b)

    def two():
        for _ in range(300):
            ttnn.mul(a, b)

    with ttreport.capture(tmp_path / "r", config=ttreport.Config(writer="process", device_graphs=True)):
        threads = [threading.Thread(target=f) for f in (one, two, one, two)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    with ttreport.open(tmp_path / "r") as rep:
        assert rep.count_operations() == 1200
        by_name = dict(rep.execute(
            "SELECT o.name, GROUP_CONCAT(DISTINCT s.stack_trace) FROM operations o "
            "JOIN stack_traces s USING (operation_id) GROUP BY o.name").fetchall())
        assert set(by_name) == {"ttnn.add", "ttnn.mul"}
        assert "in one" in by_name["ttnn.add"] and "in two" not in by_name["ttnn.add"]
        assert "in two" in by_name["ttnn.mul"] and "in one" not in by_name["ttnn.mul"]
        assert rep.execute("SELECT COUNT(*) FROM captured_graph").fetchone()[0] == 1200


def test_a_log_written_before_program_definitions_still_reads(tmp_path):
    # (CBS, n, CBs) and a PROGRAM record carrying its whole program: what a report killed before this
    # version left in its log, finished by this one.
    sink = LogSink(tmp_path / "log")
    cbs = ((0,), 2, 2048, False), ((16,), 2, 2048, False)
    sink._write(marshal.dumps([(oplog.CBS, 7, cbs),
                               (PROGRAM, 3, ("BinaryNgDeviceOperation", "BinaryNgProgramFactory", 7,
                                             ((0, 0, 7, 7),), 8192, 11, 0, 98304)),
                               (STOP, None)]))
    sink.close()
    records, _ = LogTail(tmp_path / "log").read(10)
    program = records[0][2]
    assert records[0][:2] == (PROGRAM, 3)
    assert (program.name, program.cb_bytes, program.program_id, program.cb_base) == (
        "BinaryNgDeviceOperation", 8192, 11, 98304)
    assert [tuple(c) for c in program.cbs] == [((0,), 2, 2048, False), ((16,), 2, 2048, False)]


def test_the_log_hands_the_writer_the_thread_writers_forms(tmp_path, device):
    a = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with ttreport.capture(tmp_path / "r", config=ttreport.Config(writer="process", device_graphs=True)):
        ttnn.relu(a)
        records, _ = LogTail(tmp_path / "r" / OPLOG_DIR).read(1000)
    op = view(next(r for r in records if r[0] == OP))
    frames = op.stack
    assert type(frames) is tuple and len(frames) % 2 == 0 and all(type(x) is int for x in frames)
    assert op.args == (a.tensor_id,) and type(op.args[0]) is TensorArg
    program = next(r for r in records if r[0] == PROGRAM)[2]
    assert program.name == "UnaryDeviceOperation" and program.cbs
