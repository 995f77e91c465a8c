"""ttreport's own .pt writer: torch.load(weights_only=True) reads its files unchanged, bit for bit.

ttreport/ptfile.py lays out torch.save's zip records itself (64-byte aligned, stored, ISA-L's
CRC-32) and writes the tensor's bytes straight from its memory. Each file must load as the tensor
that was saved, in every dtype and shape class device_sim stores, be torch.save's byte for byte but
for the random serialization id, and report its own size and CRC-32 truly, since the capture records
those in `tensor_files` without reading the file back.

    .venv/bin/python -m pytest tests/test_ptfile.py -q
"""

import io
import struct
import zipfile
import zlib

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport import ptfile
from ttreport.errors import TensorFileDamagedError
from ttreport.ptfile import save_tensor


def bits(t: torch.Tensor) -> bytes:
    """The tensor's element bytes in logical order, so NaNs and -0.0 compare exactly."""
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


def block_float() -> torch.Tensor:
    """bfloat8_b values as device_sim holds them: bfloat16 storage of block-float numbers."""
    return ttnn.from_torch(torch.randn(32, 64), dtype=ttnn.bfloat8_b, layout=ttnn.TILE).value


CASES = {
    "float32": lambda: torch.randn(5, 7),
    "bfloat16": lambda: torch.randn(3, 32, 32).to(torch.bfloat16),
    "bfloat8_b as stored": block_float,
    "int32": lambda: torch.randint(-2**31, 2**31 - 1, (40,), dtype=torch.int32),
    "uint8": lambda: torch.randint(0, 256, (3, 5), dtype=torch.uint8),
    "int64 (uint32 as stored)": lambda: torch.randint(0, 2**32 - 1, (2, 3), dtype=torch.int64),
    "torch.uint32": lambda: torch.randint(0, 2**31, (6,), dtype=torch.int64).to(torch.uint32),
    "0-d": lambda: torch.tensor(-0.0),
    "empty": lambda: torch.empty(0, 4, dtype=torch.bfloat16),
    "non-contiguous": lambda: torch.randn(8, 6).t(),
    "a view into a larger storage": lambda: torch.randn(100)[10:30:2],
    "nan and inf": lambda: torch.tensor([float("nan"), float("inf"), -float("inf"), 1e-40]),
}


@pytest.mark.parametrize("make", CASES.values(), ids=CASES.keys())
def test_every_dtype_and_shape_class_loads_back_bit_identical(tmp_path, make):
    x = make()
    path = tmp_path / "7.pt"
    save_tensor(x, path)
    for loaded in (torch.load(path, weights_only=True), torch.load(path, weights_only=True, mmap=True)):
        assert (loaded.dtype, loaded.shape) == (x.dtype, x.shape)
        assert loaded.is_contiguous() and loaded.untyped_storage().nbytes() == x.numel() * x.element_size()
        assert bits(loaded) == bits(x)


@pytest.mark.parametrize("make", CASES.values(), ids=CASES.keys())
def test_the_file_is_torch_saves_byte_for_byte_but_for_its_serialization_id(tmp_path, make):
    x = make()
    (tmp_path / "ours").mkdir(), (tmp_path / "torch").mkdir()
    save_tensor(x, tmp_path / "ours" / "3.pt")
    torch.save(x.contiguous().clone(), tmp_path / "torch" / "3.pt")
    ours, theirs = (tmp_path / "ours" / "3.pt").read_bytes(), (tmp_path / "torch" / "3.pt").read_bytes()
    assert len(ours) == len(theirs)
    entries = [zipfile.ZipFile(io.BytesIO(b)).infolist() for b in (ours, theirs)]
    assert [e.filename for e in entries[0]][-1] == "3/.data/serialization_id"
    facts = [[(e.filename, e.header_offset, e.flag_bits, e.compress_type, e.CRC, e.file_size) for e in es[:-1]]
             for es in entries]
    assert facts[0] == facts[1]
    last = entries[0][-1].header_offset  # every byte before the id's record is the same
    assert ours[:last] == theirs[:last]
    assert zipfile.ZipFile(io.BytesIO(ours)).testzip() is None  # every entry's CRC-32 is right
    assert bits(torch.load(io.BytesIO(ours), weights_only=True)) == bits(torch.load(io.BytesIO(theirs),
                                                                                    weights_only=True))


@pytest.mark.parametrize("make", CASES.values(), ids=CASES.keys())
def test_a_file_written_from_the_tensors_bytes_alone_is_the_same_file(tmp_path, make):
    # The capture's writer process has only the bytes an op log carried (ttreport/capturing/log_tensors.py).
    x = make()
    (tmp_path / "bytes").mkdir(), (tmp_path / "tensor").mkdir()
    from_bytes = ptfile.save_values(bits(x), x.dtype, x.shape, tmp_path / "bytes" / "4.pt")
    from_tensor = save_tensor(x, tmp_path / "tensor" / "4.pt")
    ours, theirs = (tmp_path / "bytes" / "4.pt").read_bytes(), (tmp_path / "tensor" / "4.pt").read_bytes()
    assert (from_bytes.file_bytes, from_bytes.crc32) == (len(ours), zlib.crc32(ours))
    last = zipfile.ZipFile(io.BytesIO(ours)).infolist()[-1].header_offset  # but for the serialization id
    assert len(ours) == from_tensor.file_bytes and ours[:last] == theirs[:last]
    loaded = torch.load(tmp_path / "bytes" / "4.pt", weights_only=True)
    assert (loaded.dtype, loaded.shape, bits(loaded)) == (x.dtype, x.shape, bits(x))


def test_bytes_that_do_not_fill_the_shape_are_refused_naming_both(tmp_path):
    with pytest.raises(ValueError, match=r"6 bytes do not hold a \[2, 2\] torch.float32 tensor \(16 bytes\)"):
        ptfile.save_values(b"x" * 6, torch.float32, (2, 2), tmp_path / "a.pt")
    assert not (tmp_path / "a.pt").exists()


def test_the_size_and_crc_it_returns_are_the_files(tmp_path):
    for i, make in enumerate(CASES.values()):
        written = save_tensor(make(), tmp_path / f"{i}.pt")
        blob = (tmp_path / f"{i}.pt").read_bytes()
        assert (written.file_bytes, written.crc32) == (len(blob), zlib.crc32(blob))
        assert ptfile.checksum_file(tmp_path / f"{i}.pt") == written


def test_data_starts_on_torchs_64_byte_alignment_so_offsets_can_be_computed(tmp_path):
    from torch.utils.serialization import config

    x = torch.randn(1000)
    save_tensor(x, tmp_path / "a.pt")
    blob, at = (tmp_path / "a.pt").read_bytes(), zipfile.ZipFile(tmp_path / "a.pt").getinfo("a/data/0").header_offset
    name_len, extra_len = struct.unpack_from("<HH", blob, at + 26)  # the local header's own lengths
    data_at = at + 30 + name_len + extra_len
    assert data_at % 64 == 0 and blob[data_at:data_at + 4000] == bits(x)
    # torch's reader can also place storages without reading the zip's directory, from miniz's layout alone
    before = config.load.calculate_storage_offsets
    config.load.calculate_storage_offsets = True
    try:
        assert torch.equal(torch.load(tmp_path / "a.pt", weights_only=True, mmap=True), x)
    finally:
        config.load.calculate_storage_offsets = before


def test_a_tensor_of_4_gib_or_more_is_left_to_torch_save_and_checksummed_from_disk(tmp_path, monkeypatch):
    # zip64 entries (sizes in an extra field) are torch's own writer's to lay out; the limit is lowered
    # here so a small tensor takes that path.
    monkeypatch.setattr(ptfile, "ZIP64_BYTES", 64)
    used = []
    x = torch.randn(32)
    written = save_tensor(x, tmp_path / "big.pt", fallback=lambda v, p: (used.append(p), torch.save(v, p)))
    assert used == [tmp_path / "big.pt"]
    blob = (tmp_path / "big.pt").read_bytes()
    assert (written.file_bytes, written.crc32) == (len(blob), zlib.crc32(blob))
    assert torch.equal(torch.load(tmp_path / "big.pt", weights_only=True), x)


@pytest.fixture
def captured(tmp_path):
    device = ttnn.open_device(0)
    try:
        with ttreport.capture(tmp_path / "r", config=ttreport.Config(tensors="all")) as cap:
            a = ttnn.from_torch(torch.randn(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
            b = ttnn.from_torch(torch.randn(64, 32), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
            c = ttnn.matmul(a, b)
            i = ttnn.from_torch(torch.arange(12, dtype=torch.int32).reshape(3, 4), dtype=ttnn.uint32)
        values = {t.tensor_id: t.value for t in (a, b, c, i)}
    finally:
        ttnn.close_device(device)
    return cap.path, values


def test_a_captures_files_are_read_by_the_reports_tensor_api_with_their_recorded_checksums(captured):
    path, values = captured
    with ttreport.open(path) as r:
        for tid, value in values.items():
            file = path / r.tensor(tid).file
            assert zipfile.ZipFile(file).namelist()[0] == f"{tid}/data.pkl"  # written by ptfile, as torch names it
            blob = file.read_bytes()
            assert r.execute("SELECT file_bytes, crc32 FROM tensor_files WHERE tensor_id = ?", (tid,)).fetchone() \
                == (len(blob), zlib.crc32(blob))
            assert torch.equal(r.load_tensor(tid), value)
    assert ttreport.check(path) == []


def test_a_corrupted_file_is_refused_by_the_existing_checks(captured):
    path, values = captured
    tid = next(iter(values))
    file = path / "tensors" / f"{tid}.pt"
    blob = bytearray(file.read_bytes())
    blob[-200] ^= 0x10  # in the central directory: torch may still load it, the CRC-32 does not match
    file.write_bytes(bytes(blob))
    with ttreport.open(path) as r, pytest.raises(TensorFileDamagedError, match=f"tensor {tid}: .* has changed"):
        r.load_tensor(tid)
    assert any(f.startswith(f"tensor {tid}: ") for f in ttreport.check(path))
