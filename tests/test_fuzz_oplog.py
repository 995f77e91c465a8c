"""The op log a reader rebuilds a killed report from, fuzzed: it is data from elsewhere (issue 29).

A real log (a capture killed with its writer process, tests/test_hardening_oplog.py) is damaged or
added to as a sender could: bytes flipped, cut short, a length changed, a second segment that is a
link, a FIFO or a folder, and crafted writes put among the real ones (a pickle and a code object that
would create a marker file, containers claiming 2**31 values, nests thousands deep, records of every
tag with values of the wrong types, paths out of the folder, SQL in a table's name). Each folder is then
read by LogTail, by `ttreport summary` (which rebuilds the report from the log) and by ttreport.open,
in one worker process per batch with a deadline on each case: no code from the log runs (no marker),
no file outside the folder changes, nothing raises but ttreport's own one-line errors, no traceback is
printed, and no case takes more than CASE_S.

Under `make test` CASES folders (a few seconds); TTREPORT_STRESS=1 (make stress) runs 50 times as many.

    .venv/bin/python -m pytest tests/test_fuzz_oplog.py -q
"""

import json
import marshal
import os
import pickle
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from test_hardening_oplog import REPO, Touch, make_killed_report, plant, record_ends, writes

from ttreport.capturing import oplog
from ttreport.capturing.log_tensors import VALUES
from ttreport.capturing.oplog import CBS, CFG, CODE, DEVICE_PERF, OBJ, PROG, STACK
from ttreport.capturing.records import ALLOC, DEVICE, FILE_LOST, FLUSH, FREE, META, OP, PROGRAM, ROW, STOP, TENSOR

STRESS = os.environ.get("TTREPORT_STRESS") == "1"
CASES = 1200 if STRESS else 24
BATCH = 40  # folders a worker process reads: its imports (~2 s) paid once for them
CASE_S = 20  # the most one folder may take (the largest here rebuild in under 1 s; a hang is minutes)
_LEN = struct.Struct("<I")

WORKER = r"""
import json, signal, sys, traceback, warnings
from click.testing import CliRunner
import ttreport
from ttreport.capturing.oplog import LogTail
from ttreport.cli import main
from ttreport.errors import TTReportError

def alarm(signum, frame):
    raise TimeoutError("the case ran past its deadline")

signal.signal(signal.SIGALRM, alarm)
warnings.simplefilter("always")
for folder in json.loads(sys.argv[1]):
    out = {"folder": folder}
    signal.alarm(int(sys.argv[2]))
    try:
        tail = LogTail(folder + "/oplog")
        while tail.read(100_000)[1]:
            pass
        tail.close()
        result = CliRunner().invoke(main, ["summary", folder])
        out["exit"], out["output"] = result.exit_code, result.output[-2000:]
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            out["raised"] = "".join(traceback.format_exception(result.exception))[-3000:]
        try:
            with ttreport.open(folder) as r:
                r.count_operations()
        except TTReportError as e:
            out["open"] = str(e)
    except BaseException:
        out["raised"] = traceback.format_exc()[-3000:]
    finally:
        signal.alarm(0)
    print(json.dumps(out), flush=True)
"""


# -- what a sender can put in a log ----------------------------------------------------------------------------
def junk(rng: random.Random):
    return rng.choice([None, -1, 0, 7, 2**70, -(2**40), 1.5, float("nan"), "x", "", "../../outside/victim",
                       b"t1", b"o99", b"", (), [], {}, {"a) VALUES (1); --": 1}, (1, 2, 3), [b"t1", (None,)],
                       "\x00\n", "é" * 300])


KINDS = 16


def crafted(rng: random.Random, case: Path, kind: int | None = None) -> bytes:
    """One write a sender might plant (of `kind`, else one drawn): raw bytes, as a log's length frames them."""
    marker = case / "marker"
    outside = case / "outside"
    code = compile(f"open({str(marker)!r}, 'w')", "<log>", "exec")
    kind = rng.randrange(KINDS) if kind is None else kind
    if kind == 0:  # a pickle where a config goes
        return marshal.dumps([(CFG, rng.randrange(1, 5), pickle.dumps(Touch(marker)))], 2)
    if kind == 1:  # a pickle as a .bin value's config
        device = (0, 0, pickle.dumps(Touch(marker)))
        return marshal.dumps([(VALUES, 5, "tensors/5.bin", "torch.float32", (2,), bytes(8), (), device)], 2)
    if kind == 2:  # a code object, where text and arguments go
        return marshal.dumps(rng.choice([[(OBJ, 1, code)], [(CODE, 1, code, code)], [code], code,
                                         [(META, "status", code)]]))
    if kind == 3:  # containers claiming more than the write holds, one or nested
        claim = rng.choice([b"[", b"(", b"\xdb", b"\xa8"]) + struct.pack("<i", rng.choice([2**31 - 1, 2**24, -1]))
        return claim * rng.choice([1, 2, 50])
    if kind == 4:  # a nest deeper than marshal reads
        return b"(\x01\x00\x00\x00" * rng.choice([1000, 3000, 100_000]) + b"N"
    if kind == 5:  # other types marshal has
        return marshal.dumps(rng.choice([{1, 2}, frozenset({3}), 1j, ..., StopIteration, [(OP, {1})]]))
    if kind == 6:  # a record of a known tag, of its length or not, holding the wrong types
        tag = rng.choice([OP, ALLOC, FREE, TENSOR, DEVICE, ROW, META, FILE_LOST, FLUSH, STOP, PROGRAM, VALUES,
                          CODE, CFG, OBJ, DEVICE_PERF, STACK, CBS, PROG])
        length = rng.choice([1, 2, 3, 4, 6, 7, 8, 10, 11, 19])
        return marshal.dumps([(tag, *(junk(rng) for _ in range(length - 1)))], 2)
    if kind == 7:  # a tag no record has
        return marshal.dumps([(rng.choice([-1, 11, 18, 27, 2**40]), junk(rng))], 2)
    if kind == 8:  # a tensor's values whose path leads out of tensors/, or through a link there
        rel, extra = rng.choice([(str(outside / "victim"), ()), ("../../outside/victim", ()),
                                 ("tensors/../../outside/victim", ()), ("tensors/5/", ("../../../outside/x", 0)),
                                 ("tensors/5/", (str(outside / "victim"), 0)), ("tensors/6.pt", ()),
                                 ("tensors/link.pt", ()), ("tensors/5.pt\x00", ()), ("db.sqlite", ()),
                                 ("tensors/5@" + "9" * 5000 + ".pt", (1,))])
        shape, data = rng.choice([((2,), bytes(8)), ((2**40,), b""), ((3,), bytes(8))])
        dtype = rng.choice(["torch.float32", "torch.save", "os.system", "float32"])
        return marshal.dumps([(VALUES, 5, rel, dtype, shape, data, extra, None)], 2)
    if kind == 9:  # SQL in a row's table or column names, or a device's facts
        return marshal.dumps([rng.choice([(ROW, "operations (name) SELECT sqlite_version(); --", {"a": 1}),
                                          (ROW, "device_perf", {"operation_id) VALUES (1); --": 1}),
                                          (DEVICE, {"device_id) VALUES (1); DROP TABLE operations; --": 0}),
                                          (ROW, "sqlite_master", {"name": "x"})])], 2)
    if kind == 10:  # a config's fields out of range or of the wrong types
        spec = rng.choice([None, (((0, 0, 2**20, 2**20),), (32, 32), "ROW_MAJOR"), ((), (32, 32), "ROW_MAJOR"),
                           (((0, 0, 1, 1),) * 300, (32, 32), "ROW_MAJOR"), (((1, 1, 0, 0),), (32, 32), "ROW_MAJOR"),
                           (((0, 0, 1, 1), (1, 1, 2, 2)), (32, 32), "ROW_MAJOR"), (((0, 0, 1, 1),), (0, -1), "X")])
        return marshal.dumps([(CFG, 1, (rng.choice(["BLOCK_SHARDED", "INTERLEAVED", "__class__", 3]),
                                        rng.choice(["L1", "DRAM", "mro"]), spec, junk(rng)))], 2)
    if kind == 11:  # an int too long for text, as an id
        return marshal.dumps([(rng.choice([OP, STACK, OBJ, FREE]), 10**5000, b"o" + b"9" * 5000)], 2)
    if kind == 12:  # references to definitions the log never made
        return marshal.dumps([(OP, "ttnn.add", 1, 0, 1, None, 0, "MainThread", 999, (b"o12345", b"t1"), {"k": b"o7"},
                               (), (), ((1, (32, 32), 0, 1, 424242, None, 0, 0, 0, 0, None),), None, 1, 0, 0, None, 0),
                               (PROGRAM, 1, 77, 1, 0, 0)], 2)
    if kind == 13:  # a flush or stop whose token is not an int
        return marshal.dumps([(rng.choice([FLUSH, STOP]), rng.choice([7, "x", (1,), b"t"]))], 2)
    if kind == 14:  # a write cut short, or with bytes after it
        data = marshal.dumps([(META, "k", "v" * 100)], 2)
        return data[:rng.randrange(1, len(data))] if rng.random() < 0.5 else data + bytes(rng.randrange(1, 9))
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))  # noise


def damage(rng: random.Random, case: Path) -> str:
    """Change case/r's log as a sender or a bad disk could; what was done, for a failure's message."""
    log = case / "r" / "oplog"
    seg = oplog.segment_path(log, 1)
    real = writes(seg)
    kind = rng.randrange(6)
    if kind == 0:
        blob = bytearray(seg.read_bytes())
        for _ in range(rng.choice([1, 4, 16])):
            blob[rng.randrange(len(blob) - 4)] = rng.randrange(256)
        seg.write_bytes(bytes(blob))
        return "flipped bytes"
    if kind == 1:
        blob = seg.read_bytes()
        seg.write_bytes(blob[:rng.randrange(len(blob))] + bytes(4))
        return "cut short"
    if kind == 2:
        blob = bytearray(seg.read_bytes())
        at = rng.choice([0, *record_ends(seg)[:-1]])
        blob[at:at + 4] = _LEN.pack(rng.choice([1, 5, 2**31, oplog.END - 1, oplog.END, len(blob)]))
        seg.write_bytes(bytes(blob))
        return "a length changed"
    if kind == 3:  # an END, then a second segment that is no plain file of the folder
        blob = seg.read_bytes()
        seg.write_bytes(blob[:-4] + _LEN.pack(oplog.END))
        second = oplog.segment_path(log, 2)
        how = rng.choice(["link", "fifo", "folder", "empty"])
        if how == "link":
            os.symlink(case / "outside" / "victim", second)
        elif how == "fifo":
            os.mkfifo(second)
        elif how == "folder":
            second.mkdir()
        else:
            second.write_bytes(b"")
        return f"a second segment: {how}"
    writes_ = [marshal.dumps(w, 2) for w in real]
    planted = [crafted(rng, case) for _ in range(rng.choice([1, 1, 3]))]
    for p in planted:
        at = rng.randrange(len(writes_) + 1)
        if kind == 4:
            writes_.insert(at, p)
        else:
            writes_[min(at, len(writes_) - 1)] = p
    plant(log, *writes_)
    return f"{'put among' if kind == 4 else 'replacing'} the real writes: {[p[:40] for p in planted]}"


def outside_state(case: Path) -> dict:
    """Every file under `case` but the report folder's, with its bytes: what no reader may change."""
    report = case / "r"
    return {str(p): p.read_bytes() for p in sorted(case.rglob("*"))
            if p.is_file() and not p.is_symlink() and report not in p.parents}


@pytest.fixture(scope="module")
def killed(tmp_path_factory) -> Path:
    return make_killed_report(tmp_path_factory.mktemp("killed"))


def make_case(killed: Path, root: Path, seed: int) -> tuple[Path, str, dict]:
    case = root / f"case{seed}"
    shutil.copytree(killed, case / "r", symlinks=True)
    (case / "outside").mkdir()
    (case / "outside" / "victim").write_bytes(b"keep me")
    tensors = case / "r" / "tensors"
    tensors.mkdir()
    os.symlink(case / "outside" / "victim", tensors / "link.pt")  # a planted link a value could be written through
    os.symlink(case / "outside", tensors / "6")
    what = damage(random.Random(seed), case)
    return case, what, outside_state(case)


def read_in_worker(folders: list[Path]) -> list[dict]:
    proc = subprocess.run([sys.executable, "-c", WORKER, json.dumps([str(f / "r") for f in folders]), str(CASE_S)],
                          cwd=REPO, capture_output=True, text=True, timeout=60 + CASE_S * len(folders))
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(folders), f"the worker stopped after {len(results)} cases:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return results


@pytest.mark.parametrize("batch", range(-(-CASES // BATCH)))
def test_a_damaged_or_crafted_log_runs_nothing_writes_nothing_outside_and_reads_in_one_line(killed, tmp_path, batch):
    seeds = range(batch * BATCH, min(CASES, (batch + 1) * BATCH))
    cases = [make_case(killed, tmp_path, seed) for seed in seeds]
    for seed, (case, what, before), out in zip(seeds, cases, read_in_worker([c[0] for c in cases])):
        where = f"seed {seed} ({what})"
        assert "raised" not in out, f"{where}:\n{out['raised']}"
        assert not (case / "marker").exists(), f"{where}: code from the log ran"
        assert outside_state(case) == before, f"{where}: a file outside the report changed"
        assert out["exit"] in (0, 2) and "Traceback" not in out["output"], f"{where}:\n{out['output']}"


def test_ttreport_summary_in_its_own_process_reads_a_crafted_log_in_one_line(killed, tmp_path):
    # The worker above runs the CLI in-process; here the real command, on the log with a crafted write of each
    # kind after it: the first ends what is read (a pickle where a config goes, which must not run).
    case = tmp_path / "case"
    shutil.copytree(killed, case / "r", symlinks=True)
    (case / "outside").mkdir()
    (case / "outside" / "victim").write_bytes(b"keep me")
    rng = random.Random(0)
    plant(case / "r" / "oplog", *(marshal.dumps(w, 2) for w in writes(oplog.segment_path(case / "r" / "oplog", 1))),
          *(crafted(rng, case, kind) for kind in range(KINDS)))
    before = outside_state(case)
    out = subprocess.run([sys.executable, "-m", "ttreport.cli", "summary", str(case / "r")], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 2) and "Traceback" not in out.stdout + out.stderr, out.stderr[-3000:]
    assert not (case / "marker").exists() and outside_state(case) == before
