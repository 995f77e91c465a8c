"""A received report folder's op log is data, never code (issue 29): reading or rebuilding from it runs
nothing it holds, writes nowhere outside the folder's tensors/, and a model never waits forever for a
writer process that cannot make progress.

    .venv/bin/python -m pytest tests/test_hardening_oplog.py -q

The folders here are real: a capture in a subprocess whose model and writer process were both SIGKILLed
(its db holds no op yet, its op log every one), then a segment planted or altered as a sender could.
"""

import contextlib
import json
import marshal
import os
import pickle
import select
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

import device_sim as ttnn
import ttreport
from ttreport.capturing import oplog
from ttreport.capturing.log_tensors import VALUES
from ttreport.capturing.oplog import CFG, LogTail
from ttreport.capturing.records import META, OP

REPO = Path(__file__).resolve().parent.parent
_LEN = struct.Struct("<I")

# A capture whose writer process commits nothing before it is killed (flush_ops and flush_interval_s far off):
# every op is in the log alone, so a rebuild from a planted log is never refused for holding fewer ops. Its tensor
# threads write no file either (held back): the rebuild writes every file from the log (log_tensors.py).
KILLED = r"""
import json, os, pathlib, signal, sys, threading, time
import torch
import device_sim as ttnn
import ttreport

report = pathlib.Path(sys.argv[1])
dev = ttnn.open_device(0)
cfg = ttreport.Config(writer="process", tensors="all", flush_ops=1_000_000, flush_interval_s=3600)
with ttreport.capture(report, config=cfg) as cap:
    held = threading.Event()
    cap._storage.write_values = lambda rec: held.wait()
    a = ttnn.from_torch(torch.ones(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    sharded = ttnn.create_sharded_memory_config((64, 64), ttnn.CoreGrid(y=2, x=2), ttnn.ShardStrategy.BLOCK)
    for i in range(int(sys.argv[2])):
        b = ttnn.add(a, a, memory_config=ttnn.L1_MEMORY_CONFIG)
        c = ttnn.to_memory_config(b, sharded)
        a = ttnn.relu(ttnn.to_memory_config(c, ttnn.DRAM_MEMORY_CONFIG))
    os.kill(cap._writer.pid, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def make_killed_report(folder: Path, ops: int = 10) -> Path:
    """A report folder as a capture killed with its writer process leaves it: the db, and the op log."""
    report = folder / "r"
    proc = subprocess.run([sys.executable, "-c", KILLED, str(report), str(ops)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    assert (report / "oplog" / "000001.seg").is_file()
    trim_segments(report / "oplog")
    return report


def record_ends(segment: Path) -> list[int]:
    """The offset after each record of a segment (its used part ends at the last)."""
    data, off, ends = segment.read_bytes(), 0, []
    while off + 4 <= len(data):
        n = _LEN.unpack_from(data, off)[0]
        if n in (0, oplog.END):
            break
        off += 4 + n
        ends.append(off)
    return ends


def trim_segments(log: Path) -> None:
    # A segment is made at its full size (32 MiB, zeros past its records): cut to what it holds, and a zero
    # length after it (not written yet), so that copies of the folder are small. LogTail reads it the same.
    for seg in sorted(log.glob("*.seg")):
        ends = record_ends(seg)
        with open(seg, "r+b") as f:
            f.truncate((ends[-1] if ends else 0) + 4)


def writes(segment: Path) -> list[list]:
    """Each write in a segment: the list of records marshal made of it."""
    data, out, off = segment.read_bytes(), [], 0
    for end in record_ends(segment):
        out.append(marshal.loads(data[off + 4:end]))
        off = end
    return out


def plant(log: Path, *payloads) -> None:
    """A log of one segment of these writes (each a list of records, or raw bytes), as a sender can make one."""
    shutil.rmtree(log, ignore_errors=True)
    log.mkdir()
    blob = b"".join(_LEN.pack(len(p)) + p for p in (x if type(x) is bytes else marshal.dumps(x, 2)
                                                     for x in payloads))
    oplog.segment_path(log, 1).write_bytes(blob + bytes(4))


def summary(report: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ttreport.cli", "summary", str(report)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def assert_one_line_at_most(out: subprocess.CompletedProcess) -> None:
    text = out.stdout + out.stderr
    assert "Traceback" not in text, text[-3000:]
    assert out.returncode in (0, 2), text[-3000:]


class Touch:
    """Unpickled, it creates `path`: the proof that a pickle in a log was run."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


@pytest.fixture(scope="module")
def killed(tmp_path_factory) -> Path:
    return make_killed_report(tmp_path_factory.mktemp("killed"))


@pytest.fixture
def report(killed, tmp_path) -> Path:
    copy = tmp_path / "reports" / "r"
    shutil.copytree(killed, copy, symlinks=True)
    return copy


def test_the_killed_report_is_rebuilt_whole_from_its_log(report):
    # The base of every case below: its log alone holds the ops, and a reader rebuilds them with their files.
    ops = sum(1 for w in writes(report / "oplog" / "000001.seg") for r in w if r[0] == OP)
    out = summary(report)
    assert out.returncode == 0, out.stderr[-3000:]
    with ttreport.open(report) as r:
        assert r.count_operations() == ops > 30
        assert r.sql("SELECT COUNT(*) AS n FROM tensors WHERE file IS NOT NULL")[0]["n"] > 30
        sharded = r.sql("SELECT s.memory_config FROM tensors t JOIN tensor_specs s USING (spec_id) "
                        "WHERE s.memory_config LIKE '%BLOCK_SHARDED%'")
        assert sharded and "nd_shard_spec={" in sharded[0]["memory_config"]  # the config's own text, placed
    assert not (report / "oplog").exists()


def test_a_rebuild_that_stops_at_a_damaged_write_says_so_and_keeps_the_log(report):
    # A write past the middle of the log made unreadable (a code object planted in it): the rebuild keeps what is
    # before it, says where it stopped in report_metadata, and leaves the log (what follows may be more ops).
    seg = report / "oplog" / "000001.seg"
    ends = record_ends(seg)
    data = bytearray(seg.read_bytes())
    cut = ends[len(ends) // 2]
    crafted = marshal.dumps([(oplog.OBJ, 1, compile("0", "<log>", "eval"))], 2)
    data[cut + 4:cut + 4 + len(crafted)] = crafted  # the next write's payload start, its length kept
    seg.write_bytes(bytes(data))
    before = sum(1 for w in writes(seg)[:len(ends) // 2 + 1] for r in w if r[0] == OP)
    out = summary(report)
    assert_one_line_at_most(out)
    with ttreport.open(report) as r:
        assert 0 < r.count_operations() <= before
        assert "000001.seg byte" in r.metadata["log_damaged"]
        assert "the ops after it are not here" in r.metadata["log_finished"]
    assert seg.is_file()  # kept: before, the log was deleted and the report said every op was here


# -- 1. no pickle: a log's configs are their fields, read back through MemoryConfig's own checks ------------
def test_a_pickle_planted_as_a_config_in_the_log_never_runs(report, tmp_path):
    marker = tmp_path / "ran"
    first = writes(report / "oplog" / "000001.seg")
    plant(report / "oplog", [(CFG, 1, pickle.dumps(Touch(marker)))], *first)
    out = summary(report)
    assert not marker.exists(), "a pickle in the op log ran"
    assert_one_line_at_most(out)


def test_a_pickle_planted_as_a_bin_files_config_never_runs(report, tmp_path):
    marker = tmp_path / "ran"
    device = (0, 0, pickle.dumps(Touch(marker)))  # bfloat16, ROW_MAJOR, and the "MemoryConfig"
    value = (VALUES, 5, "tensors/5.bin", "torch.float32", (2, 2), bytes(16), (), device)
    plant(report / "oplog", *writes(report / "oplog" / "000001.seg"), [value, (META, "x", "y")])
    out = summary(report)
    assert not marker.exists(), "a pickle in a .bin value's config ran"
    assert_one_line_at_most(out)
    with ttreport.open(report) as r:
        assert int(r.metadata.get("tensor_files_lost", 0)) >= 1  # refused, and counted


@pytest.mark.parametrize("cfg", [
    ttnn.DRAM_MEMORY_CONFIG, ttnn.L1_MEMORY_CONFIG, ttnn.L1_BLOCK_SHARDED_MEMORY_CONFIG,
    ttnn.create_sharded_memory_config((64, 128), ttnn.CoreGrid(y=2, x=4), ttnn.ShardStrategy.HEIGHT,
                                      ttnn.ShardOrientation.COL_MAJOR),
    ttnn.MemoryConfig(ttnn.BufferType.L1, ttnn.NdShardSpec((1, 32, 64), ttnn.CoreRangeSet(
        [ttnn.CoreRange((0, 0), (1, 1)), ttnn.CoreRange((3, 0), (3, 2))]))),
])
def test_a_config_goes_through_the_log_as_its_fields_and_comes_back_equal(cfg):
    fields = oplog.config_fields(cfg)
    assert marshal.loads(marshal.dumps(fields, 2)) == fields  # plain values: what marshal holds, no object
    back = oplog.memory_config(fields)
    assert back == cfg and repr(back) == repr(cfg) and back.tensor_text([1, 64, 128]) == cfg.tensor_text([1, 64, 128])


@pytest.mark.parametrize("fields", [
    # MemoryConfig's and ShardSpec's own checks (an INTERLEAVED config with a shard spec is TT-NN's: taken)
    ("INTERLEAVED", "L1", None, (((0, 0, 1, 1),), (1, 32, 32), "ROW_MAJOR", "ROUND_ROBIN_1D")),
    ("HEIGHT_SHARDED", "L1", (((0, 0, 1, 1),), (0, 32), "ROW_MAJOR"), None),
    ("__class__", "L1", None, None), ("INTERLEAVED", "mro", None, None),
    ("HEIGHT_SHARDED", "L1", (((0, 0, 4096, 4096),), (32, 32), "ROW_MAJOR"), None),
    ("HEIGHT_SHARDED", "L1", (((0, 0, 0, 0),) * 2000, (32, 32), "ROW_MAJOR"), None),
    ("HEIGHT_SHARDED", "L1", (((0, 0, 1, 1), (1, 1, 2, 2)), (32, 32), "ROW_MAJOR"), None),
    ("HEIGHT_SHARDED", "L1", (((0, 0, 1, 1),), (32, "32"), "ROW_MAJOR"), None),
    b"\x80\x04N.", ("INTERLEAVED", "L1", None), None,
])
def test_fields_that_are_no_configs_are_refused(fields):
    with pytest.raises((ValueError, TypeError)):
        oplog.memory_config(fields)


def test_a_code_object_or_a_container_claiming_2_31_values_ends_the_log_at_once(tmp_path):
    # marshal makes code objects (nothing here would call one) and sizes a list by its claim before reading it:
    # a nest of 50 claims of 2**31 values took minutes to free before the write was checked.
    code = compile("open('x', 'w')", "<log>", "exec")
    for write in (marshal.dumps([(META, "k", "v"), (oplog.OBJ, 1, code)], 2), b"[\xff\xff\xff\x7f" * 50,
                  b"(\x01\x00\x00\x00" * 100_000 + b"N"):
        plant(tmp_path / "log", [(META, "first", 1)], write, [(META, "after", 2)])
        tail = LogTail(tmp_path / "log")
        started = time.monotonic()
        with pytest.warns(ttreport.ReportIncompleteWarning, match="000001.seg byte"):
            records, more = tail.read(100)
        assert time.monotonic() - started < 2
        assert records == [(META, "first", 1)] and not more and "000001.seg byte" in tail.damage


def test_the_log_code_never_imports_pickle():
    for path in ("ttreport/capturing/oplog.py", "ttreport/capturing/log_tensors.py"):
        assert "import pickle" not in (REPO / path).read_text(), path
    storage = (REPO / "ttreport/storage.py").read_text()
    assert "pickle.loads" not in storage


# -- 2. writes nowhere else: a path from the log is a tensor file's name in tensors/, never followed out ------
def value(tid: int, rel: str, extra=()) -> tuple:
    return VALUES, tid, rel, "torch.float32", (2,), b"\x00\x00\x80?" * 2, extra, None  # [1.0, 1.0]


def outside_files(root: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def test_values_whose_path_leads_out_of_tensors_are_refused_and_counted(report, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_bytes(b"keep me")
    tensors = report / "tensors"
    tensors.mkdir()  # the writer process was killed before its first batch: no file yet
    os.symlink(outside / "victim", tensors / ".900.pt.tmp")  # a .pt's temporary name, planted as a link
    os.symlink(outside / "victim", tensors / "901.pt")  # a file's own name as a link: replaced, never written through
    os.symlink(outside, tensors / "902")  # a mesh tensor's folder as a link
    first = writes(report / "oplog" / "000001.seg")
    plant(report / "oplog", *first, [
        value(900, "tensors/900.pt"), value(901, "tensors/901.pt"), value(902, "tensors/902/", ("0.pt", 0)),
        value(903, "../../escaped.pt"), value(904, str(tmp_path / "absolute.pt")),
        value(905, "tensors/../../escaped2.pt"), value(906, "tensors/906/", ("../../../escaped3.pt", 0)),
        value(907, "db.sqlite"), (META, "x", "y")])
    before = outside_files(tmp_path / "outside")
    out = summary(report)
    assert_one_line_at_most(out)
    assert outside_files(tmp_path / "outside") == before
    assert not [p for p in tmp_path.rglob("escaped*")] and not (tmp_path / "absolute.pt").exists()
    assert not (tensors / "901.pt").is_symlink()  # the link itself replaced by the file
    with ttreport.open(report) as r:
        assert r.count_operations() > 30  # the rebuild kept every op
        assert int(r.metadata["tensor_files_lost"]) == 6  # 902 and 903-907
        assert "tensor file" in r.metadata["tensor_file_error"]


def test_a_tensors_folder_that_is_a_link_out_of_the_report_is_never_written_through(report, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_bytes(b"keep me")
    os.symlink(outside, report / "tensors")
    out = summary(report)
    assert_one_line_at_most(out)
    assert outside_files(outside) == {outside / "victim": b"keep me"}
    with ttreport.open(report) as r:
        assert r.count_operations() > 30 and int(r.metadata["tensor_files_lost"]) > 30


# -- 5. a writer that makes no progress never holds the model: it waits at most WRITER_STALL_S, then goes on -----
STALLED = r"""
import os, pathlib, sys, time
import torch
import device_sim as ttnn
import ttreport
from ttreport.capturing import oplog
oplog.SEGMENT_BYTES = oplog.MIN_SEGMENT_BYTES  # a new segment every ~800 ops: the segment back-pressure acts too
oplog.LAG_BYTES, oplog.PACE_BYTES = 128 << 10, 32 << 10  # and the byte back-pressure after a few hundred ops
oplog.WRITER_STALL_S = float(sys.argv[3])
report, how = pathlib.Path(sys.argv[1]), sys.argv[2]
dev = ttnn.open_device(0)
a = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=dev)
with ttreport.capture(report, config=ttreport.Config(writer="process")) as cap:
    if how == "progress-unwritable":  # as on a full disk: the writer's segment note can no longer be replaced
        note = report / "oplog" / ".progress"
        note.unlink(missing_ok=True)
        note.mkdir()
    print("pids", os.getpid(), cap._writer.pid, flush=True)
    sys.stdin.readline()  # the test has stopped the writer (or not)
    started = time.monotonic()
    for i in range(int(sys.argv[4])):
        ttnn.add(a, a)
    print("loop", round(time.monotonic() - started, 2), flush=True)
    sys.stdin.readline()  # the writer may go on now
"""


def run_stalled(tmp_path: Path, how: str, ops: int, stall_s: float) -> tuple[float, Path]:
    """Run the model against a writer stopped (SIGSTOP) or unable to note its progress; the loop's seconds."""
    report = tmp_path / "r"
    proc = subprocess.Popen([sys.executable, "-c", STALLED, str(report), how, str(stall_s), str(ops)], cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    writer = None
    try:
        model, writer = map(int, proc.stdout.readline().split()[1:])
        if how.startswith("sigstop"):
            os.kill(writer, signal.SIGSTOP)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        done = _line_within(proc, 90)
        assert done is not None, f"the model's loop of {ops} ops did not end in 90 s: it waits for its writer"
        if how == "sigstop":  # "sigstop-through-close" leaves it stopped: the close must not wait for ever either
            os.kill(writer, signal.SIGCONT)
        proc.stdin.write("close\n")
        proc.stdin.flush()
        assert proc.wait(120) == 0
    finally:
        if writer is not None and how.startswith("sigstop"):
            with contextlib.suppress(ProcessLookupError):  # it ended
                os.kill(writer, signal.SIGCONT)
        proc.kill()
        proc.wait(10)
    return float(done.split()[1]), report


def _line_within(proc: subprocess.Popen, timeout_s: float) -> str | None:
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    return proc.stdout.readline() if ready else None


def test_a_stopped_writer_process_holds_the_model_at_most_the_stall_bound_and_loses_nothing(tmp_path):
    seconds, report = run_stalled(tmp_path, "sigstop", 20_000, stall_s=1.0)
    # Held once per kind of back-pressure for the bound (the writer never moves while stopped), then not again.
    assert seconds < 20, seconds
    with ttreport.open(report) as r:
        assert r.count_operations() == 20_000 and r.status == "complete"


def test_a_writer_process_stopped_through_the_close_is_killed_and_the_capture_rebuilds_every_op(tmp_path):
    started = time.monotonic()
    seconds, report = run_stalled(tmp_path, "sigstop-through-close", 5_000, stall_s=1.0)
    # Before: the close waited for the stopped writer for ever (proc.wait's 120 s ran out). Now join kills it after
    # WRITER_STALL_S without progress, and the capture rebuilds the report from the log, which holds every op.
    assert time.monotonic() - started < 110
    with ttreport.open(report) as r:
        assert r.count_operations() == 5_000 and r.status == "complete"
    assert not (report / "oplog").exists()


def test_a_writer_that_cannot_note_its_segment_as_on_a_full_disk_never_holds_the_model(tmp_path):
    # The writer moves on (its byte count, in shared memory, cannot fail), but its .progress file stays stale:
    # the model waited on that file for ever once five segments ahead of it.
    seconds, report = run_stalled(tmp_path, "progress-unwritable", 20_000, stall_s=60.0)
    assert seconds < 30, seconds  # far under the stall bound: the model never waited on the stale note
    with ttreport.open(report) as r:
        assert r.count_operations() == 20_000 and r.status == "complete"


FULL = r"""
import json, pathlib, sys, time
import torch
import device_sim as ttnn
import ttreport
dev = ttnn.open_device(0)
a = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=dev)
started = time.monotonic()
with ttreport.capture(pathlib.Path(sys.argv[1]), config=ttreport.Config(writer="process", tensors="all")) as cap:
    for i in range(int(sys.argv[2])):
        ttnn.add(a, a)
    print(json.dumps({"loop_s": time.monotonic() - started}), flush=True)
print(json.dumps({"closed_s": time.monotonic() - started, "status": cap.status}), flush=True)
"""
FULL_RUNS, FULL_OPS = (9, 30_000) if os.environ.get("TTREPORT_STRESS") == "1" else (1, 10_000)


def test_a_model_storing_every_tensor_on_a_full_disk_runs_to_its_end_and_counts_what_it_lost(tmp_path):
    # The case, end to end on a real 6 MiB filesystem: 2 runs in 9 of 30,000 ops hung. A writer that
    # cannot replace its segment note there (the test above makes it stale every time) left the model waiting
    # on it for ever. TTREPORT_STRESS=1 runs those 9.
    from test_crash import tmpfs

    with tmpfs(tmp_path / "6m", "6m") as disk:
        for run in range(FULL_RUNS):
            report = disk / f"r{run}"
            out = subprocess.run([sys.executable, "-c", FULL, str(report), str(FULL_OPS)], cwd=REPO,
                                 capture_output=True, text=True, timeout=300)
            assert out.returncode == 0, out.stderr[-3000:]
            closed = json.loads(out.stdout.splitlines()[-1])
            assert closed["status"] == "complete"
            with ttreport.open(report) as r:
                kept, meta = r.count_operations(), r.metadata
            assert kept + int(meta.get("ops_lost", 0)) == FULL_OPS, (run, kept, meta)
            shutil.rmtree(report)  # room for the next run
