"""Every tensor loaded from a received folder goes through one bounded reader (issue 29, item 11).

A `.pt` is a zip archive holding a pickle and a data record; a `.bin` is device_sim's own format.
A crafted one must not make a reader allocate more than the file holds, compute over elements it
does not hold, read a file outside the report's tensors/ folder, or run any code: `diff-tensor`,
`tensor`, `compare` and `load_tensor` all read through storage.read_tensor_file, which refuses
compressed zip entries (torch.save never writes them), a shape larger than its data, a record
past the file's end, and more elements than TTREPORT_MAX_TENSOR_ELEMENTS allows, each with one
line naming the file. Each test here failed on the code before that reader; the CLI runs as a
real subprocess with a timeout wherever it could hang or grow, and the peak RSS is the kernel's.

    .venv/bin/python -m pytest tests/test_hardening_tensor_reads.py -q
"""

import ast
import io
import os
import pickle
import re
import shutil
import sqlite3
import struct
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
from device_sim import serialization
from ttreport import ptfile
from ttreport.cli import main
from ttreport.storage import MAX_ELEMENTS_ENV

ROOT = Path(__file__).resolve().parent.parent


# -- crafting files ------------------------------------------------------------------------------
def tensor_pickle(shape, stride, storage_numel: int, dtype=torch.float32) -> bytes:
    """torch.save's data.pkl of a `shape`/`stride` view over a storage of `storage_numel` elements.

    The storage is torch.empty's: untouched, so a pickle that names gigabytes costs no memory here."""

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            if isinstance(obj, torch.storage.TypedStorage):
                return "storage", getattr(torch, obj._pickle_storage_type()), "0", "cpu", storage_numel
            return None

    base = torch.empty(max(storage_numel, 1), dtype=dtype)
    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump(base.as_strided(shape, stride, 0))
    return buf.getvalue()


def zip_bytes(entries) -> bytes:
    """A zip of (name, bytes, method, CRC-32, uncompressed size[, compressed size]) entries, laid out as any zip
    writer does; the sizes are the caller's, so an entry can claim what its bytes are not."""
    local, central = [], []
    offset = 0
    for name, data, method, crc, size, *packed in entries:
        name, packed = name.encode(), packed[0] if packed else len(data)
        header = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0, crc, packed, size, len(name), 0)
        central.append(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc, packed,
                                   size, len(name), 0, 0, 0, 0, 0, offset) + name)
        local += [header, name, data]
        offset += len(header) + len(name) + len(data)
    cd = b"".join(central)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(entries), len(entries), len(cd), offset, 0)
    return b"".join(local) + cd + end


def stored(name: str, data: bytes) -> tuple:
    return name, data, 0, zlib.crc32(data), len(data)


def pt_file(pickled: bytes, record: tuple) -> bytes:
    """torch.save's records around `record` (the data/0 entry, as zip_bytes takes it)."""
    return zip_bytes([stored("archive/data.pkl", pickled), stored("archive/byteorder", b"little"), record,
                      stored("archive/version", b"3\n")])


def zeros_deflated(mib: int) -> tuple[bytes, int]:
    """A raw deflate stream of `mib` MiB of zeros, and their CRC-32, without holding them: one fully
    flushed MiB (a byte-aligned run that needs no history) repeated, then an empty final block."""
    chunk = bytes(1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    piece = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(chunk, crc)
    return piece * mib + b"\x03\x00", crc


def bomb(mib: int) -> bytes:
    """A .pt of a [mib MiB / 4] float32 tensor of zeros whose data record is deflated: ~1 KiB per MiB."""
    stream, crc = zeros_deflated(mib)
    n = (mib << 20) // 4
    return pt_file(tensor_pickle((n,), (1,), n), ("archive/data/0", stream, 8, crc, mib << 20))


def expanded(numel: int) -> bytes:
    """A .pt of a [numel] float32 view with stride 0 over one stored element: 600 bytes that claim numel."""
    return pt_file(tensor_pickle((numel,), (0,), 1), stored("archive/data/0", bytes(4)))


# -- running the CLI -----------------------------------------------------------------------------
def cli(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "ttreport.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})})


# The CLI as the only child of a small wrapper, so RUSAGE_CHILDREN's ru_maxrss is that process's peak RSS alone.
# The wrapper's own timeout kills the CLI (an outer timeout would leave it running, holding its memory).
WRAPPER = """import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "ttreport.cli", *sys.argv[2:]], timeout=100)
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss << 10))
sys.exit(done.returncode)
"""


def peak_rss(tmp_path, *args):
    """(the CLI's completed process, its peak RSS in bytes)."""
    out = tmp_path / "rss.txt"
    done = subprocess.run([sys.executable, "-c", WRAPPER, str(out), *map(str, args)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    return done, int(out.read_text())


def invoke(*args, env=None):
    """The CLI in this process (click's runner, `env` set for the call): for what cannot hang or grow."""
    result = CliRunner().invoke(main, [str(a) for a in args], env=env)
    return subprocess.CompletedProcess(args, result.exit_code, result.output, "")


def assert_one_line(done, *words):
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), lines
    for w in words:
        assert str(w) in lines[0], (w, lines[0])


# -- reports -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """Two real reports, .pt (the default) and .bin, of three stored tensors: [32, 64], [64, 32] and their
    [32, 32] matmul."""
    root = tmp_path_factory.mktemp("reports")
    device = ttnn.open_device(0)
    try:
        for name, detach in (("pt", True), ("bin", False)):
            with ttreport.capture(name, config=ttreport.Config(root=root, tensors="all", detach_saved_tensors=detach)):
                a = ttnn.from_torch(torch.randn(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
                b = ttnn.from_torch(torch.randn(64, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
                ttnn.matmul(a, b)
    finally:
        ttnn.close_device(device)
    return root


@pytest.fixture
def report(captured, tmp_path):
    return Path(shutil.copytree(captured / "pt", tmp_path / "r"))


def first_file(report: Path) -> tuple[int, Path]:
    with ttreport.open(report) as r:
        t = next(t for t in r.tensors() if t.file)
        return t.id, report / t.file


def claim_shape(report: Path, tid: int, shape: list[int]) -> None:
    """Make the report's database say tensor `tid` has `shape`, with no tensor_files row: what a crafted
    report can say, so the db's own facts cannot be what bounds the reader."""
    con = sqlite3.connect(report / "db.sqlite")
    with con:
        con.execute("DELETE FROM tensor_files")
        text = f"Shape({shape})"
        try:
            con.execute("UPDATE tensors SET shape = ? WHERE tensor_id = ?", (text, tid))
        except sqlite3.OperationalError:  # `tensors` is a view over tensor_specs (schema 0003-0004)
            con.execute("UPDATE tensor_specs SET shape = ? WHERE tensor_id = ?", (text, tid))
    con.close()


# -- the zip bomb --------------------------------------------------------------------------------
def test_a_deflated_zip_bomb_pair_is_refused_by_diff_tensor_in_bounded_memory(tmp_path):
    # 384 MiB of values each in files of ~400 KiB: torch.load inflated both (the 3 MB pair reached 6.5 GB).
    data = bomb(384)
    assert len(data) < 1 << 20
    for name in ("a", "b"):
        (tmp_path / f"{name}.pt").write_bytes(data)
    done, rss = peak_rss(tmp_path, "diff-tensor", tmp_path / "a.pt", tmp_path / "b.pt")
    assert_one_line(done, tmp_path / "b.pt", "compressed entries", "archive/data/0", "never writes")
    assert rss < 600 << 20, f"peak RSS {rss >> 20} MiB"


def test_a_view_claiming_more_elements_than_its_data_is_refused_before_any_work(tmp_path):
    # Stride 0 over one float: torch.load made it without allocating, then diff-tensor folded 2**36 elements
    # (hours; 2**28 took 14 s) and `ttreport tensor` asked for 512 GiB to convert it to float64.
    (tmp_path / "a.pt").write_bytes(expanded(1 << 36))
    done = cli("diff-tensor", tmp_path / "a.pt", tmp_path / "a.pt", timeout=60)
    assert_one_line(done, tmp_path / "a.pt", "68,719,476,736 elements", "holds 1")


def test_ttreport_tensor_refuses_a_view_larger_than_its_data_even_when_the_db_agrees(report):
    tid, file = first_file(report)
    claim_shape(report, tid, [1 << 36])
    file.write_bytes(expanded(1 << 36))
    assert_one_line(cli("tensor", report, tid, timeout=60), f"tensor {tid}", file, "68,719,476,736 elements")


def test_a_record_marked_as_a_folder_is_refused_not_read_as_uninitialized_memory(tmp_path):
    # torch's zip reader takes the DOS folder bit as "no data" and hands back an allocation it never filled: a
    # comparison of heap bytes, or worse, a report showing them.
    torch.save(torch.arange(64.0), tmp_path / "a.pt")
    (tmp_path / "b.pt").write_bytes(folder_marked(torch.arange(64.0)))
    assert_one_line(invoke("diff-tensor", tmp_path / "a.pt", tmp_path / "b.pt"), tmp_path / "b.pt",
                    "marked as folders (archive/data/0)")


# -- paths ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("link", ["file", "tensors folder"])
def test_diff_tensor_refuses_a_tensor_file_that_leads_out_of_its_reports_tensors_folder(tmp_path, link):
    outside = tmp_path / "outside"
    outside.mkdir()
    torch.save(torch.arange(6.0), outside / "5.pt")  # a real tensor: read through the link, it compared
    tensors = tmp_path / "run" / "tensors"
    if link == "file":
        tensors.mkdir(parents=True)
        (tensors / "5.pt").symlink_to(outside / "5.pt")
    else:
        tensors.parent.mkdir()
        tensors.symlink_to(outside)
    torch.save(torch.arange(6.0), tmp_path / "a.pt")
    assert_one_line(cli("diff-tensor", tmp_path / "a.pt", tensors / "5.pt"), tensors / "5.pt", outside / "5.pt",
                    "outside")


def test_a_tensor_file_linked_elsewhere_in_the_report_is_refused(report):
    # Inside the report folder but outside tensors/: its db, config.json, or a planted file beside them.
    tid, file = first_file(report)
    shutil.copy(file, report / "planted.pt")
    file.unlink()
    file.symlink_to(report / "planted.pt")
    assert_one_line(cli("tensor", report, tid), f"tensor {tid}", file, "outside", "tensors")


# -- the element cap -----------------------------------------------------------------------------
def test_the_element_cap_names_the_file_its_size_and_the_knob_in_every_reader(report, captured, tmp_path):
    tid, file = first_file(report)
    bin_tid, bin_file = first_file(captured / "bin")  # its CRC-32 is checked first, then its header read
    n = torch.load(file, weights_only=True).numel()
    env = {MAX_ELEMENTS_ENV: "1000"}
    serialization.dump_tensor(tmp_path / "t.bin", ttnn.from_torch(torch.randn(32, 64), dtype=ttnn.bfloat16))
    for args, named in ((["diff-tensor", file, file], file), (["diff-tensor", file, tmp_path / "t.bin"], "t.bin"),
                        (["tensor", report, tid], f"tensor {tid}: {file}"), (["compare", report, report], file),
                        (["tensor", captured / "bin", bin_tid], f"tensor {bin_tid}: {bin_file}")):
        assert_one_line(invoke(*args, env=env), named, f"{n:,} elements", "1,000", f"{MAX_ELEMENTS_ENV}={n}")
    assert invoke("tensor", report, tid, env={MAX_ELEMENTS_ENV: str(n)}).returncode == 0


@pytest.mark.parametrize("value", ["lots", "0", "-5"])
def test_a_bad_element_cap_is_a_one_line_error(tmp_path, value):
    torch.save(torch.arange(6.0), tmp_path / "a.pt")
    assert_one_line(invoke("diff-tensor", tmp_path / "a.pt", tmp_path / "a.pt", env={MAX_ELEMENTS_ENV: value}),
                    MAX_ELEMENTS_ENV, repr(value))


# -- the reader itself ---------------------------------------------------------------------------
def bits(t: torch.Tensor) -> bytes:
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


CASES = {
    "float32": lambda: torch.randn(5, 7),
    "bfloat16": lambda: torch.randn(3, 32, 32).to(torch.bfloat16),
    "int32": lambda: torch.randint(-2**31, 2**31 - 1, (40,), dtype=torch.int32),
    "uint32 (rebuild v3)": lambda: torch.randint(0, 2**31, (6,), dtype=torch.int64).to(torch.uint32),
    "bool": lambda: torch.tensor([True, False, True]),
    "complex64": lambda: torch.randn(4, dtype=torch.complex64),
    "0-d": lambda: torch.tensor(-0.0),
    "empty": lambda: torch.empty(0, 4, dtype=torch.bfloat16),
    "non-contiguous": lambda: torch.randn(8, 6).t(),
    "a view into a larger storage": lambda: torch.randn(100)[10:30:2],
    "a parameter": lambda: torch.nn.Parameter(torch.randn(3, 2)),
}


def read(data: bytes) -> torch.Tensor:
    f = io.BytesIO(data)
    return ptfile.read_tensor(f, ptfile.inspect_tensor(f, len(data)))


@pytest.mark.parametrize("make", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("writer", ["torch.save", "ptfile"])
def test_the_bounded_reader_gives_what_torch_load_gives(tmp_path, make, writer):
    x = make()
    path = tmp_path / "t.pt"
    torch.save(x, path) if writer == "torch.save" else ptfile.save_tensor(x, path)
    want, got = torch.load(path, weights_only=True), read(path.read_bytes())
    assert type(got) is torch.Tensor
    assert (got.dtype, got.shape, got.stride()) == (want.dtype, want.shape, want.stride())
    assert bits(got) == bits(want)


def test_a_big_endian_file_is_read_in_this_hosts_order(tmp_path):
    x = torch.randn(3, 5, dtype=torch.complex64)
    swapped = x.view(torch.float32).numpy().byteswap().tobytes()  # each float's bytes, as a big-endian host wrote
    data = zip_bytes([stored("archive/data.pkl", tensor_pickle((3, 5), (5, 1), 15, torch.complex64)),
                      stored("archive/byteorder", b"big"), stored("archive/data/0", swapped),
                      stored("archive/version", b"3\n")])
    assert bits(read(data)) == bits(x)
    assert bits(torch.load(io.BytesIO(data), weights_only=True)) == bits(x)  # as torch reads it


def folder_marked(value: torch.Tensor) -> bytes:
    """torch.save's file of `value` with its data record marked a DOS folder (external attribute 0x10): miniz then
    reads no data, and torch.load gave a tensor of uninitialized memory."""
    raw, out = io.BytesIO(), io.BytesIO()
    torch.save(value, raw)
    with zipfile.ZipFile(raw) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            mark = zipfile.ZipInfo(info.filename)
            mark.external_attr = 0x10 if info.filename.endswith("/data/0") else 0
            dst.writestr(mark, src.read(info.filename))
    return out.getvalue()


class Shell:
    def __reduce__(self):
        return os.system, ("touch /tmp/ttreport-pwned",)


REFUSED = {
    "not a zip": (b"not a tensor", "not a torch zip file"),
    "a deflated record": (bomb(1), "compressed entries"),
    "a record past the file's end": (
        pt_file(tensor_pickle((1 << 28,), (1,), 1 << 28), ("archive/data/0", b"", 0, 0, 1 << 30, 1 << 30)),
        "claims 1,073,741,824 bytes"),
    "a shape larger than its storage": (expanded(1 << 36), "holds 1"),
    "a storage larger than its record": (
        pt_file(tensor_pickle((1000,), (1,), 1000), stored("archive/data/0", bytes(8))), "declares 4,000 bytes"),
    "two records of one name": (
        zip_bytes([stored("archive/data.pkl", tensor_pickle((2,), (1,), 2)), stored("archive/data/0", bytes(8)),
                   stored("archive/data/0", bytes(8))]), "two entries named archive/data/0"),
    "a pickled callable": (pt_file(pickle.dumps(Shell(), protocol=2), stored("archive/data/0", b"")),
                           "posix.system"),
    "an opcode torch.save never writes": (pt_file(pickle.dumps(set(), protocol=4), stored("archive/data/0", b"")),
                                          "opcode EMPTY_SET"),
    "a directory of 20,000 entries": (zip_bytes([stored(f"archive/x{i}", b"") for i in range(20_000)]),
                                      "zip directory is"),
    "a record marked as a folder": (folder_marked(torch.arange(64.0)), "marked as folders (archive/data/0)"),
    "a dict of tensors": (pt_file(pickle.dumps({}, protocol=2), stored("archive/data/0", b"")), "holds a dict"),
    "a damaged record": (pt_file(tensor_pickle((2,), (1,), 2), ("archive/data/0", bytes(8), 0, 1, 8)), "CRC-32"),
}


@pytest.mark.parametrize("data, words", REFUSED.values(), ids=REFUSED.keys())
def test_the_bounded_reader_refuses_what_torch_save_never_writes(data, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        read(data)
    assert not Path("/tmp/ttreport-pwned").exists()


def test_read_tensor_file_is_the_only_tensor_loader():
    # One helper: no other module of ttreport calls torch.load or device_sim's .bin loader on a folder's file.
    calls = []
    for path in (ROOT / "ttreport").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name):
                name = f"{node.func.value.id}.{node.func.attr}"
                if name in ("torch.load", "serialization.load_tensor"):
                    calls.append(f"{path.relative_to(ROOT)}: {name}")
    assert calls == ["ttreport/storage.py: serialization.load_tensor"]


# torch warns of the odd pickle protocols flips make, pickletools of odd escapes in a protocol-0 string it decodes
@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")
def test_flipped_bytes_give_a_refusal_or_what_torch_load_gives():
    # 3,000 files: bytes flipped anywhere in a real .pt, and in its pickle alone (its CRC-32 made good, so the
    # pickle is walked). The reader raises only ValueError, and what it reads torch.load reads the same.
    import random

    rng = random.Random(29)
    saved = io.BytesIO()
    torch.save(torch.randn(4, 5), saved)
    pickles = [(tensor_pickle((4, 5), (5, 1), 20), 80), (tensor_pickle((2, 3), (1, 2), 6, torch.bfloat16), 12)]
    read_back = 0
    for i in range(3000):
        if i % 2:
            data = bytearray(saved.getvalue())
        else:
            pickled, nbytes = rng.choice(pickles)
            data = bytearray(pickled)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if not i % 2:
            data = pt_file(bytes(data), stored("archive/data/0", bytes(range(nbytes))))
        try:
            value = read(bytes(data))
        except ValueError:
            continue
        try:
            want = torch.load(io.BytesIO(bytes(data)), weights_only=True, map_location="cpu")
        except Exception:  # torch also parses what the reader has no use for (`version`, the location's text)
            continue
        read_back += 1
        assert (value.dtype, value.shape, value.stride(), bits(value)) == \
            (want.dtype, want.shape, want.stride(), bits(want))
    assert read_back > 100  # flips in padding, ids and timestamps leave a file whole: both readers agree on those


def test_a_bin_header_whose_shape_holds_a_string_is_refused_without_multiplying_it(tmp_path):
    # The cap's look at a .bin header multiplied its dims as they came: [2147483646, "67", ...] repeated the string
    # into 13 GB (found by tests/test_fuzz_bin.py's fuzz through a report). Refused now, as the .bin reader refuses it.
    import json
    import resource

    header = json.dumps({"dtype": "INT32", "layout": "TILE", "shape": [2147483646, "67", 2796860876],
                         "padded_shape": [2147483646, 96, 2796860896], "memory_config": None, "mesh": None,
                         "data": {"encoding": "int32", "byte_order": "little", "order": "C", "nbytes": 5}}).encode()
    body = struct.pack("<8sII", serialization.MAGIC, 2, len(header)) + header
    (tmp_path / "tensors").mkdir()
    (tmp_path / "tensors" / "7.bin").write_bytes(body + struct.pack("<I", zlib.crc32(body)))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ttreport.TensorFileError, match="7.bin"):
        ttreport.load_tensor(tmp_path, 7)
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) << 10 < 64 << 20
