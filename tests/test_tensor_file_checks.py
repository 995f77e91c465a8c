"""Stored tensor files are verified before their values are trusted.

The tensor thread records each file's size, CRC-32, shape and dtype in `tensor_files`
(schema 0004). Readers (Report.load_tensor, `ttreport tensor`, compare) and `check` refuse a
file whose bytes changed, a file swapped for another tensor's, a file larger than the db's
shape allows, a .pt whose zip entries are compressed (a small file that would expand to
gigabytes), and anything that is not a regular file (a FIFO would block the reader forever):
each is an error naming the tensor and the file, never a wrong value or a hang.
"""

import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport.cli import main
from ttreport.errors import TensorFileDamagedError


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """Two real reports, .pt (detached, the default) and .bin, of a model with two tensor shapes."""
    root = tmp_path_factory.mktemp("reports")
    device = ttnn.open_device(0)
    try:
        for name, detach in (("pt", True), ("bin", False)):
            cfg = ttreport.Config(root=root, tensors="all", detach_saved_tensors=detach)
            with ttreport.capture(name, config=cfg):
                a = ttnn.from_torch(torch.randn(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
                b = ttnn.from_torch(torch.randn(64, 32), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
                ttnn.matmul(a, b)
    finally:
        ttnn.close_device(device)
    return root


@pytest.fixture
def report(captured, tmp_path):
    """A fresh copy of the .pt report to damage."""
    return Path(shutil.copytree(captured / "pt", tmp_path / "pt"))


def stored(path: Path) -> list[tuple[int, Path, str]]:
    """(tensor id, file, shape text) of each stored tensor, in id order."""
    with ttreport.open(path) as r:
        return [(t.id, path / t.file, t.shape) for t in r.tensors() if t.file]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def assert_one_line(result, *words):
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    for w in words:
        assert str(w) in lines[0], (w, lines[0])


@pytest.mark.parametrize("kind", ["pt", "bin"])
def test_every_stored_file_has_its_size_crc_shape_and_dtype_recorded(captured, kind):
    path = captured / kind
    files = stored(path)
    assert len(files) == 3
    con = sqlite3.connect(path / "db.sqlite")
    rows = {r[0]: r[1:] for r in con.execute("SELECT tensor_id, file_bytes, crc32, shape, dtype FROM tensor_files")}
    con.close()
    with ttreport.open(path) as r:
        for tid, file, _ in files:
            blob = file.read_bytes()
            value = r.load_tensor(tid)
            assert rows[tid] == (len(blob), zlib.crc32(blob), json.dumps(list(value.shape)), str(value.dtype))
    assert ttreport.check(path) == []


def test_a_flipped_byte_is_refused_by_every_reader_naming_tensor_and_file(report):
    tid, file, _ = stored(report)[0]
    blob = bytearray(file.read_bytes())
    recorded = zlib.crc32(blob)
    blob[len(blob) // 2] ^= 0x01  # inside the values: torch would load it, one number wrong
    file.write_bytes(bytes(blob))
    assert torch.load(file, weights_only=True).shape == (32, 64)
    with ttreport.open(report) as r, pytest.raises(TensorFileDamagedError,
                                                   match=rf"tensor {tid}: {file} has changed since the capture"):
        r.load_tensor(tid)
    assert_one_line(invoke("tensor", report, tid), f"tensor {tid}", file, "has changed since the capture")
    assert [f for f in ttreport.check(report) if f.startswith(f"tensor {tid}: ")] == \
        [f"tensor {tid}: {file} has changed since the capture wrote it (CRC-32 {zlib.crc32(blob):08x}, recorded "
         f"{recorded:08x}): its values cannot be trusted; copy the file again from the source"]


def test_a_file_swapped_for_another_tensors_is_refused(report):
    (a, file_a, _), (b, file_b, _) = stored(report)[:2]  # [32, 64] and [64, 32]
    shutil.copy(file_b, file_a)
    assert_one_line(invoke("tensor", report, a), f"tensor {a}", "has changed since the capture")
    assert any(f.startswith(f"tensor {a}: ") for f in ttreport.check(report))


def test_without_tensor_files_rows_a_file_of_another_shape_is_still_refused(report):
    # A report upgraded from before schema 0004 has no rows: the db's own shape is checked.
    con = sqlite3.connect(report / "db.sqlite")
    with con:
        con.execute("DELETE FROM tensor_files")
    con.close()
    files = stored(report)
    (a, file_a, _), (_, _, _), (c, file_c, _) = files  # [32, 64] and the [32, 32] matmul output
    shutil.copy(file_c, file_a)
    assert_one_line(invoke("tensor", report, a), f"tensor {a}", "holds a [32, 32] tensor, but the report says",
                    "[32, 64]")
    assert any(f.startswith(f"tensor {a}: ") and "is not this tensor's" in f for f in ttreport.check(report))


def test_a_file_larger_than_the_db_shape_allows_is_refused_before_it_is_read(report):
    con = sqlite3.connect(report / "db.sqlite")
    with con:
        con.execute("DELETE FROM tensor_files")
    con.close()
    tid, file, _ = stored(report)[0]
    torch.save(torch.zeros(1024, 1024), file)  # 4 MiB where [32, 64] allows at most 8 B/element + 1.06 MiB
    assert_one_line(invoke("tensor", report, tid), f"tensor {tid}", f"{file} is {file.stat().st_size} bytes",
                    "shape [32, 64], which needs at most 1130496 bytes", "not this tensor's")


def deflated(value: torch.Tensor) -> bytes:
    """torch.save's zip with every entry deflated: what torch never writes, and a small file loads huge."""
    raw = io.BytesIO()
    torch.save(value, raw)
    out = io.BytesIO()
    with zipfile.ZipFile(raw) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    return out.getvalue()


def test_a_compressed_pt_that_would_expand_is_refused_unloaded(report, tmp_path):
    con = sqlite3.connect(report / "db.sqlite")
    with con:
        con.execute("DELETE FROM tensor_files")
        # the db claims a big tensor, so the file's size passes; its expansion must still be refused
        try:
            con.execute("UPDATE tensors SET shape = 'Shape([8192, 8192])'")
        except sqlite3.OperationalError:  # `tensors` is a view over tensor_specs (schema 0003-0004)
            con.execute("UPDATE tensor_specs SET shape = 'Shape([8192, 8192])'")
    con.close()
    tid, file, _ = stored(report)[0]
    bomb = deflated(torch.zeros(4096, 8192))  # 128 MiB of values in a file of ~130 KiB
    assert len(bomb) < 1 << 20
    file.write_bytes(bomb)
    assert torch.load(io.BytesIO(bomb), weights_only=True).numel() == 4096 * 8192  # torch itself loads it
    assert_one_line(invoke("tensor", report, tid), f"tensor {tid}", "compressed entries", "never writes")


def test_a_fifo_in_place_of_a_tensor_file_never_blocks_a_reader(report, tmp_path):
    tid, file, _ = stored(report)[0]
    file.unlink()
    os.mkfifo(file)
    for args in (["tensor", report, tid], ["compare", report, report], ["check", report]):
        # A reader that opened the FIFO would wait for a writer forever: the timeout is the failure.
        done = subprocess.run([sys.executable, "-m", "ttreport.cli", *map(str, args)], capture_output=True,
                              text=True, timeout=60)
        assert "Traceback" not in done.stderr, done.stderr
        assert f"{file} is not a regular file" in done.stdout + done.stderr, (args, done.stdout, done.stderr)
        assert done.returncode == (1 if args[0] == "check" else 2)


def test_a_big_tensor_is_checked_and_loaded_without_holding_its_file_in_memory(tmp_path):
    # The checksum reads the open file in chunks and torch.load fills the tensor from it: loading N bytes takes
    # about N of memory, where holding the file's bytes to check and load them took 2N (compare_reports kept a
    # third 64 MiB copy at its peak, bench 5). A real process: VmHWM, whole.
    script = f"""
import torch, device_sim as ttnn, ttreport
from pathlib import Path
with ttreport.capture(Path({str(tmp_path / "r")!r}), config=ttreport.Config(tensors="all")):
    t = ttnn.from_torch(torch.randn(16 << 20), dtype=ttnn.bfloat16)  # 32 MiB stored
tid = t.tensor_id
del t
def hwm():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) << 10
def rss():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:")) << 10
import gc; gc.collect()
ttreport.load_tensor(Path({str(tmp_path / "r")!r}), tid)  # warm: the db, the imports
gc.collect()
open("/proc/self/clear_refs", "w").write("5")  # VmHWM from here on (Linux): the capture's own peak is behind
base = rss()
value = ttreport.load_tensor(Path({str(tmp_path / "r")!r}), tid)
print(hwm() - base, value.numel() * value.element_size())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.returncode == 0, out.stderr
    peak, nbytes = map(int, out.stdout.split()[-2:])
    assert nbytes == 32 << 20
    assert peak < 1.5 * nbytes, f"loading a {nbytes >> 20} MiB tensor raised the peak by {peak >> 20} MiB"
