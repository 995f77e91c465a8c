"""The writer process's read of its own op log in C (ttreport/capturing/_logread.c) gives what the Python gives.

oplog.LogTail._writes and _decode (with _op, LogPerf.note and LogPerf.row) are the specification: TTREPORT_PURE=1
runs them alone, and the C reader hands every record or part of an op it does not do itself back to them. Here a
kept log of a model with the rare records (errors, keyword and list arguments, mesh tensors and their
device_tensors rows, programs, stored outputs) is read by both routes, record for record, and the reports the
writer process makes by each are compared table by table.

    .venv/bin/python -m pytest tests/test_logread.py -q
"""

import gc
import marshal
import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import pytest
import report_tables
from report_tables import tables

from ttreport.capturing import log_perf, oplog
from ttreport.capturing.records import ALLOC, FREE, OP, PROGRAM, ROW, STOP, VALUES, Text
from ttreport.folder import DB_FILE, OPLOG_DIR

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(oplog._logread is None, reason="ttreport.capturing._logread is not built (no "
                                                               "compiler): the log is read in Python")

# Each run in a fresh interpreter (the same tensor ids and addresses). The writer process is forked from it, so the
# route set here is the one it reads its log by; its log is copied aside before the writer removes it.
MODEL = r"""
import shutil, sys
import torch
import device_sim as ttnn
import ttreport
from ttreport.capturing import oplog, writer_process

folder, route, keep = sys.argv[1:4]
oplog.NATIVE = route == "native"
remove = writer_process.remove_finished_log

def kept(log, step):
    shutil.copytree(log, keep)
    remove(log, step)

writer_process.remove_finished_log = kept
torch.manual_seed(0)
mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 2))
device = ttnn.open_device(device_id=2)
with ttreport.capture(folder, config=ttreport.Config(perf_files=False, tensors="outputs")):
    a = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    x = ttnn.from_torch(torch.ones(1, 1, 32, 64), layout=ttnn.TILE, device=mesh,
                        mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
    for _ in range(3):
        c = ttnn.add(a, b, memory_config=ttnn.L1_MEMORY_CONFIG)
        d = ttnn.matmul(c, b, transpose_a=True)
        e = ttnn.softmax(d, dim=-1)
        f = ttnn.concat([e, a], dim=0)
        ttnn.split(f, 32, dim=0)
        ttnn.permute(e, (1, 0))
        ttnn.deallocate(c)
        ttnn.add(a, b)
        ttnn.all_gather(ttnn.add(x, x), dim=3)
    try:
        ttnn.add(a, torch.zeros(3))
    except TypeError:
        pass
ttnn.close_mesh_device(mesh)
ttnn.close_device(device)
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same model captured with the log read in C and in Python: {route: its report folder, its kept log}."""
    root = tmp_path_factory.mktemp("logread")
    out = {}
    for route in ("native", "pure"):
        folder, keep = root / route, root / f"{route}-log"
        subprocess.run([sys.executable, "-c", MODEL, str(folder), route, str(keep)], cwd=REPO, check=True,
                       capture_output=True, timeout=180)
        out[route] = SimpleNamespace(folder=folder, log=keep)
    return out


def _plain(x):
    """A record as comparable values, each with its type's name: a TensorArg is not an int, a Program not a tuple,
    and Text, tracebacks and waiters (which compare by identity) by what they hold."""
    t = type(x)
    if isinstance(x, (tuple, list)):
        return t.__name__, tuple(_plain(v) for v in x)
    if t is dict:
        return "dict", tuple((k, _plain(v)) for k, v in x.items())
    if isinstance(x, Text):
        return t.__name__, x.text
    if t is SimpleNamespace:
        return "namespace", tuple(sorted((k, _plain(v)) for k, v in vars(x).items()))
    if t is oplog._Traceback:
        return "traceback", x.text
    if t is oplog._Waiter:
        return "waiter", x.token
    return t.__name__, x


def _tail(log: Path, native: bool) -> oplog.LogTail:
    """A trusted LogTail of `log` that reads by the C reader or the Python (whatever TTREPORT_PURE says)."""
    saved, oplog.NATIVE = oplog.NATIVE, native
    try:
        tail = oplog.LogTail(log, trusted=True)
    finally:
        oplog.NATIVE = saved
    assert (tail._native is not None) is native
    return tail


def _read(log: Path, native: bool, n: int) -> tuple[list, SimpleNamespace]:
    """Every record of `log` read by LogTail(trusted=True), n at a time, by the C reader or the Python."""
    tail = _tail(log, native)
    batches = []
    while True:
        recs, more = tail.read(n)
        batches.append([_plain(r) for r in recs])
        if not recs:
            break
    end = SimpleNamespace(segment=tail.segment, off=tail.off, done=tail.done, torn=tail.torn,
                          tensors=list(tail.perf.tensors.items()), mesh=tail.perf.mesh, wired=len(tail._wired))
    tail.close()
    return batches, end


@pytest.mark.parametrize("n", [1, 7, 2000])
@pytest.mark.parametrize("caches", ["kept", "small"])
def test_the_c_reader_decodes_each_record_as_the_python_does(runs, monkeypatch, n, caches):
    if caches == "small":  # LogPerf's tensors halved, and the references forgotten, every few ops: both routes' misses
        monkeypatch.setattr(log_perf, "MAX_TENSORS", 4)
        monkeypatch.setattr(oplog, "MAX_TENSORS", 4)
        monkeypatch.setattr(oplog, "MAX_OBJECTS", 3)
    log = runs["native"].log
    native, native_end = _read(log, True, n)
    pure, pure_end = _read(log, False, n)
    assert [len(b) for b in native] == [len(b) for b in pure]
    for i, (got, expected) in enumerate(zip(native, pure)):
        assert got == expected, i
    assert native_end == pure_end
    records = [r for b in pure for r in b]
    tags = {r[1][0][1] for r in records}
    assert {OP, ALLOC, FREE, PROGRAM, ROW, VALUES, STOP} <= tags
    ops = [r[1] for r in records if r[1][0][1] == OP]
    assert any(op[oplog._ERROR] != ("NoneType", None) for op in ops)  # an op that raised
    assert any(op[oplog._KWARGS][0] == "dict" for op in ops)
    assert any(a[0] == "list" for op in ops for a in op[oplog._ARGS][1])  # concat's list of tensors
    assert any(r[1][1] == ("str", "device_tensors") for r in records if r[1][0][1] == ROW)


def test_a_torn_write_ends_both_routes_reads_at_the_same_record(runs, tmp_path):
    log = tmp_path / OPLOG_DIR
    shutil.copytree(runs["native"].log, log)
    segment = sorted(log.glob("*.seg"))[0]
    data = bytearray(segment.read_bytes())
    tail = _tail(log, False)
    tail.read(40)
    off = tail.off  # a write in the middle of the log: its payload's first byte made one marshal does not know
    tail.close()
    data[off + 4] = ord("?")
    segment.write_bytes(bytes(data))
    native, native_end = _read(log, True, 2000)
    pure, pure_end = _read(log, False, 2000)
    assert native == pure and native_end == pure_end
    assert pure_end.torn and pure_end.off == off and 40 <= sum(map(len, pure)) < 200


def _writes(log: Path) -> list:
    """The writes of a one-segment log, each its list of records (as LogSink marshalled it)."""
    data, writes, off = (log / "000001.seg").read_bytes(), [], 0
    while (length := int.from_bytes(data[off:off + 4], "little")) not in (0, oplog.END):
        writes.append(marshal.loads(data[off + 4:off + 4 + length]))
        off += 4 + length
    return writes


def test_two_segments_and_every_spec_sent_again_read_alike(runs, tmp_path):
    # The log's writes, then its first half again in a second segment, which defines the same things again and
    # sends the specs of the tensors noted first again (as the recorder does once it forgot one): LogPerf moves
    # them to the newest end of its tensors.
    writes = _writes(runs["native"].log)
    log = tmp_path / OPLOG_DIR
    log.mkdir()
    for number, part, end in ((1, writes, oplog.END), (2, writes[:len(writes) // 2], 0)):
        data = b"".join(len(w).to_bytes(4, "little") + w for w in (marshal.dumps(w, 2) for w in part))
        (log / f"{number:06d}.seg").write_bytes(data + end.to_bytes(4, "little") + bytes(64))
    for n in (1, 2000):
        native, native_end = _read(log, True, n)
        pure, pure_end = _read(log, False, n)
        assert native == pure and native_end == pure_end
        assert pure_end.segment == 2 and pure_end.done > 0 and sum(map(len, pure)) > 1.5 * len(writes)


def test_the_c_reader_and_the_python_make_the_same_report(runs, monkeypatch):
    # a mesh shard's .pt holds torch's random serialization ids too, as tensor_files' do (report_tables.VOLATILE)
    monkeypatch.setitem(report_tables.VOLATILE, "device_tensor_files", {"crc32"})
    expected, got = tables(runs["pure"].folder / DB_FILE), tables(runs["native"].folder / DB_FILE)
    assert got.keys() == expected.keys()
    for table in expected:
        assert got[table] == expected[table], table
    assert expected["errors"] and expected["device_perf"] and expected["device_tensors"]
    assert len(expected["operations"]) > 30


def test_the_c_reader_keeps_no_object_once_its_records_are_gone(runs):
    # Every route of _logread.c at least once (hits, misses handed to the Python, rows, launches): a reference it
    # failed to drop stays allocated, once a read, which tracemalloc sees as growth from one read to the next, where
    # the reader allocated it: the C's objects are traced at the line of oplog.py or log_perf.py that called it.
    # (Not the whole process's memory: in the whole suite caches elsewhere, warmed by the traced reads, held 280 and
    # then 336 bytes.)
    def read_all():
        tail = _tail(runs["native"].log, True)
        while tail.read(50)[0]:
            pass
        tail.close()

    readers = [tracemalloc.Filter(True, oplog.__file__), tracemalloc.Filter(True, log_perf.__file__)]

    def held():
        gc.collect()
        return tracemalloc.take_snapshot().filter_traces(readers)

    read_all()
    gc.collect()
    tracemalloc.start()
    try:
        read_all()
        after_one = held()
        for _ in range(2):
            read_all()
        grown = [d for d in held().compare_to(after_one, "lineno") if d.size_diff > 0]
        assert not grown, grown[:5]
    finally:
        tracemalloc.stop()


def test_ttreport_pure_reads_the_log_in_python(tmp_path):
    code = "from ttreport.capturing import oplog; print(oplog.NATIVE, oplog.LogTail('x', trusted=True)._native)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "TTREPORT_PURE": "1"}, check=True).stdout
    assert out.split() == ["False", "None"]
