"""Writes one tensor as torch's `.pt` file, at the speed of the disk.

torch.save spends most of a big tensor's time in its zip writer's CRC-32 (about 1 GB/s here);
this module writes the same zip records, in torch's order and with torch's 64-byte alignment,
with ISA-L's CRC-32 (isal, about 25 GB/s) and the tensor's bytes passed to write() straight from
its memory. `torch.load(path, weights_only=True)` reads the file unchanged (mmap=True too), and
the file is torch.save's byte for byte but for `.data/serialization_id`, an opaque random id.
It also returns the whole file's size and CRC-32 (the `tensor_files` row), combined from the
pieces, so nobody reads the file back to checksum it:

    import torch
    from ttreport.ptfile import save_tensor, save_values
    written = save_tensor(torch.arange(6.0).reshape(2, 3), "/tmp/t.pt")
    assert torch.equal(torch.load("/tmp/t.pt", weights_only=True), torch.arange(6.0).reshape(2, 3))
    written.file_bytes, written.crc32   # == len and zlib.crc32 of the file's bytes
    save_values(bytes(4 * 6), torch.float32, (2, 3), "/tmp/z.pt")   # from a tensor's bytes (the op log's copy)

Layout, as torch 2.x's PyTorchStreamWriter (miniz) writes it: for each record a local header
with flags 0x0808 (sizes in a data descriptor, UTF-8 name), no CRC or sizes, and an extra field
"FB" padded with "Z" so the record's data starts at a multiple of 64; the data; a 16-byte data
descriptor. Then the central directory, a zip64 end record and locator, and the end record.
No fsync, as torch.save: the report's `tensor_files` row (size, CRC-32) is what proves a file whole.
"""

from __future__ import annotations

import io
import math
import pickle
import secrets
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from isal import isal_zlib

ALIGNMENT = 64  # torch's storage alignment (torch.utils.serialization.config.save.storage_alignment)
PICKLE_PROTOCOL = 2  # torch.serialization.DEFAULT_PROTOCOL
FORMAT_VERSION = b"1"  # storages in numeric key order
FILE_VERSION = b"3\n"  # what torch 2.x's writer puts in the `version` record
# Sizes or offsets at or past 4 GiB need zip64 fields (miniz adds them to any record whose size or start
# reaches 0xFFFFFFFF, so also to the small records after a tensor just under 4 GiB); torch.save writes
# those files. 1 MiB of margin covers the records and the directory after the data.
ZIP64_BYTES = 0xFFFFFFFF - (1 << 20)

_LOCAL = struct.Struct("<4sHHHHHIIIHH")  # signature, version, flags, method, time, date, crc, sizes, name, extra
_DESCRIPTOR = struct.Struct("<4sIII")  # signature, crc, compressed and uncompressed size
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
_END64 = struct.Struct("<4sQHHIIQQQQ")
_LOCATOR = struct.Struct("<4sIQI")
_END = struct.Struct("<4sHHHHIIH")
_UTF8 = 0x0800  # flag bit 11: the name is UTF-8
_FLAGS = 0x0808  # bit 3 too: the CRC and sizes follow the data, in a data descriptor


@dataclass(frozen=True)
class Written:
    """What was written: the file's size and the CRC-32 of all its bytes (zlib.crc32 of the file)."""

    file_bytes: int
    crc32: int


def plain(value: torch.Tensor) -> torch.Tensor:
    """A detached CPU tensor that owns exactly its elements (torch.save writes a view's whole storage)."""
    v = value.detach().cpu()
    if type(v) is not torch.Tensor:
        v = v.as_subclass(torch.Tensor)  # a subclass would pickle its class, which weights_only refuses
    if v.is_contiguous() and v.storage_offset() == 0 and v.untyped_storage().nbytes() == v.numel() * v.element_size():
        return v
    return v.contiguous().clone()


def save_tensor(value: torch.Tensor, path, *, archive: str | None = None, fallback: Callable | None = None) -> Written:
    """Write `value` (made plain first) to `path` as torch.save would; returns the file's size and CRC-32.

    Args:
        value: any torch.Tensor; a view, a non-contiguous or a device tensor is copied to a plain one first.
        path: the file to write (replaced if it exists; the caller renames a temporary into place).
        archive: the folder name inside the zip (default: the file's stem, as torch.save names it);
            torch.load ignores it.
        fallback: for a tensor of 4 GiB or more (less 1 MiB), called as fallback(value, path) to write it
            (default torch.save); the file is then read once to checksum it.
    """
    value, path = plain(value), Path(path)
    storage = value.untyped_storage()
    nbytes = storage.nbytes()
    if nbytes >= ZIP64_BYTES:
        # zip64 local headers (sizes in an extra field, 24-byte descriptors): left to torch's own writer.
        (fallback or torch.save)(value, path)
        return checksum_file(path)
    data = memoryview(torch.empty(0, dtype=torch.uint8).set_(storage).numpy())  # the tensor's memory, no copy
    return _write(path, _pickle(value), data, nbytes, archive)


def save_values(data, dtype: torch.dtype, shape, path, *, archive: str | None = None) -> Written:
    """Write the tensor whose contiguous bytes are `data` (bytes-like, native byte order) as save_tensor
    would, with no torch.Tensor made: the capture's writer process gets an output's bytes from the op log.

    Args:
        data: the elements' bytes, C order; len(data) must be prod(shape) times the dtype's size.
        dtype, shape: the tensor's torch dtype and shape.
        path, archive: as save_tensor's.
    """
    path, shape = Path(path), tuple(shape)
    nbytes = len(data)
    if nbytes != math.prod(shape) * dtype.itemsize:
        raise ValueError(f"save_values: {nbytes} bytes do not hold a {list(shape)} {dtype} tensor "
                         f"({math.prod(shape) * dtype.itemsize} bytes); pass the tensor's own bytes")
    if nbytes >= ZIP64_BYTES:  # left to torch's writer, as save_tensor does
        value = torch.frombuffer(bytearray(data), dtype=dtype).reshape(shape)
        return save_tensor(value, path, archive=archive)
    key = (dtype, shape)
    pickled = _PICKLES.get(key)
    if pickled is None:
        if len(_PICKLES) >= MAX_PICKLES:
            _PICKLES.clear()
        # The pickle names the storage (its type and element count), never its bytes: an empty tensor of the
        # same dtype and shape pickles the same (torch.empty leaves the memory untouched).
        pickled = _PICKLES[key] = _pickle(torch.empty(shape, dtype=dtype))
    return _write(path, pickled, memoryview(data), nbytes, archive)


_PICKLES: dict[tuple, bytes] = {}  # (dtype, shape) -> data.pkl: a model stores the same shapes again and again
MAX_PICKLES = 4096


def _write(path: Path, pickled: bytes, data: memoryview, nbytes: int, archive: str | None) -> Written:
    data_crc = isal_zlib.crc32(data)
    zip_ = _Zip(archive or path.stem or "archive")
    for name, payload in ((b"data.pkl", pickled), (b".format_version", FORMAT_VERSION),
                          (b".storage_alignment", str(ALIGNMENT).encode()),
                          (b"byteorder", sys.byteorder.encode())):
        zip_.add(name, payload)
    zip_.add(b"data/0", None, size=nbytes, crc=data_crc)  # header now; the bytes go straight to write()
    head = zip_.take()
    zip_.add(b"version", FILE_VERSION)
    zip_.add(b".data/serialization_id", b"%020d%020d" % (secrets.randbits(64), data_crc))
    tail = zip_.finish()
    with open(path, "wb") as f:
        f.write(head)
        f.write(data)  # BufferedWriter hands a large buffer to the OS directly, looping over short writes
        f.write(tail)
    crc = isal_zlib.crc32_combine(isal_zlib.crc32(head), data_crc, nbytes)
    return Written(len(head) + nbytes + len(tail), isal_zlib.crc32(tail, crc))


def checksum_file(path) -> Written:
    """Size and CRC-32 of a file already on disk, read a MiB at a time."""
    crc, size = 0, 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            crc, size = isal_zlib.crc32(chunk, crc), size + len(chunk)
    return Written(size, crc)


class _Pickler(pickle.Pickler):
    """torch's pickler for one tensor: its storage is the persistent id ("storage", type, key, location, numel)."""

    def persistent_id(self, obj):
        if isinstance(obj, torch.storage.TypedStorage):  # the dtypes with a legacy storage class (FloatStorage ...)
            return "storage", getattr(torch, obj._pickle_storage_type()), "0", "cpu", obj._size()
        if isinstance(obj, torch.UntypedStorage):  # newer dtypes (uint32, float8 ...): bytes and the dtype apart
            return "storage", torch.UntypedStorage, "0", "cpu", obj.nbytes()
        return None


def _pickle(value: torch.Tensor) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, protocol=PICKLE_PROTOCOL).dump(value)
    return buf.getvalue()


class _Zip:
    """Zip records laid out as miniz lays them out for torch; the bytes are built, not written."""

    def __init__(self, archive: str):
        self.prefix = archive.encode() + b"/"
        self.offset = 0  # of the next local header in the file
        self.pending: list[bytes] = []
        self.central: list[bytes] = []
        self._after_data = b""  # the data descriptor of a record whose bytes the caller writes

    def add(self, name: bytes, payload: bytes | None, *, size: int = 0, crc: int = 0) -> None:
        """A record; with payload None only its header is added and `size` bytes must follow it."""
        name = self.prefix + name
        if payload is not None:
            size, crc = len(payload), isal_zlib.crc32(payload)
        start = self.offset + _LOCAL.size + len(name) + 4  # where the data would start with no padding
        pad = -start % ALIGNMENT
        flags = _FLAGS if size else _UTF8  # miniz writes an empty record with no data descriptor
        header = _LOCAL.pack(b"PK\x03\x04", 0, flags, 0, 0, 0, 0, 0, 0, len(name), 4 + pad)
        self.pending += [header, name, b"FB", struct.pack("<H", pad), b"Z" * pad]
        descriptor = _DESCRIPTOR.pack(b"PK\x07\x08", crc, size, size) if size else b""
        if payload is not None:
            self.pending += [payload, descriptor]
        self.central.append(_CENTRAL.pack(b"PK\x01\x02", 0, 0, flags, 0, 0, 0, crc, size, size, len(name), 0, 0,
                                          0, 0, 0, self.offset) + name)
        self.offset = start + pad + size + len(descriptor)
        self._after_data = b"" if payload is not None else descriptor

    def take(self) -> bytes:
        """The bytes added so far; the descriptor of a record added with no payload goes first in what follows."""
        out = b"".join(self.pending)
        self.pending, self._after_data = [self._after_data], b""
        return out

    def finish(self) -> bytes:
        """The rest of the file: pending records, the central directory and the end records."""
        cd = b"".join(self.central)
        cd_at, n = self.offset, len(self.central)
        end64_at = cd_at + len(cd)
        # Fields as miniz writes them: "made by" 0x031e (Unix, 3.0), "needed" 45 (zip64).
        end64 = _END64.pack(b"PK\x06\x06", _END64.size - 12, 0x031E, 45, 0, 0, n, n, len(cd), cd_at)
        locator = _LOCATOR.pack(b"PK\x06\x07", 0, end64_at, 1)
        end = _END.pack(b"PK\x05\x06", 0, 0, n, n, len(cd), cd_at, 0)
        return self.take() + cd + end64 + locator + end

