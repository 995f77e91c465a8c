"""Writes one tensor as torch's `.pt` file, at the speed of the disk, and reads one back unpickling nothing.

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

Reading (inspect_tensor, then read_tensor) takes a received file as input, never as code: the zip's
directory, `data.pkl` and `byteorder` are read and checked first, the pickle is walked by a small
interpreter that knows only the opcodes and names torch.save writes for one tensor (nothing is
imported or called), and only then is the data record read, straight into the tensor's memory, so
reading takes the memory the file's data holds and no more (a deflated record, a record past the
file's end, a shape larger than its data are refused before anything is allocated):

    import os
    from ttreport.ptfile import inspect_tensor, read_tensor
    with open("/tmp/t.pt", "rb") as f:
        found = inspect_tensor(f, os.path.getsize("/tmp/t.pt"))   # ValueError if not torch.save's one tensor
        found.storage_numel, found.shape   # 6 elements to allocate, shape (2, 3): known before reading them
        assert torch.equal(read_tensor(f, found), torch.arange(6.0).reshape(2, 3))

Reading needs no torch: read_array gives the same values as a numpy array (bfloat16, which numpy has no dtype for,
as its uint16 bits in a BFloat16Bits array), so a reader that only compares values (`ttreport compare`) never pays
torch's import (~2-3 s here). This module imports torch only inside the functions that make or take a torch.Tensor.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import pickletools
import random
import struct
import sys
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from isal import isal_zlib

if TYPE_CHECKING:
    import torch

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
    import torch

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
    import torch

    value, path = plain(value), Path(path)
    storage = value.untyped_storage()
    nbytes = storage.nbytes()
    if nbytes >= ZIP64_BYTES:
        # zip64 local headers (sizes in an extra field, 24-byte descriptors): left to torch's own writer.
        (fallback or torch.save)(value, path)
        return checksum_file(path)
    data = memoryview(torch.empty(0, dtype=torch.uint8).set_(storage).numpy())  # the tensor's memory, no copy
    return _write(path, _pickle(value), data, nbytes, archive)


def save_values(data, dtype: torch.dtype, shape, path, *, archive: str | None = None, new: bool = False) -> Written:
    """Write the tensor whose contiguous bytes are `data` (bytes-like, native byte order) as save_tensor
    would, with no torch.Tensor made: the capture's writer process gets an output's bytes from the op log.

    Args:
        data: the elements' bytes, C order; len(data) must be prod(shape) times the dtype's size.
        dtype, shape: the tensor's torch dtype and shape.
        path, archive: as save_tensor's.
        new: the file is made here, never opened through a link or over a file (FileExistsError if anything is
            at `path`).
    """
    import torch

    path, shape = Path(path), tuple(shape)
    nbytes = len(data)
    if nbytes != math.prod(shape) * dtype.itemsize:
        raise ValueError(f"save_values: {nbytes} bytes do not hold a {list(shape)} {dtype} tensor "
                         f"({math.prod(shape) * dtype.itemsize} bytes); pass the tensor's own bytes")
    if nbytes >= ZIP64_BYTES:  # left to torch's writer, as save_tensor does
        if new:
            os.close(os.open(path, os.O_WRONLY | NEW_FILE, 0o644))  # made new here; torch.save writes it
        value = torch.frombuffer(bytearray(data), dtype=dtype).reshape(shape)
        return save_tensor(value, path, archive=archive)
    head, tail, written = values_file(data, dtype, shape, archive or path.stem or "archive")
    _write_path(path, head, data, tail, written.file_bytes, NEW_FILE if new else 0)
    return written


# Flags of a file made new: O_EXCL (nothing there before it, a link neither) and O_NOFOLLOW.
NEW_FILE = os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def values_file(data, dtype: torch.dtype, shape: tuple, archive: str) -> tuple[bytes, bytes, Written]:
    """(head, tail, written): the .pt file of the tensor whose contiguous bytes are `data` is head + data + tail,
    `written` its size and CRC-32. `shape` must be a tuple of ints whose product times the dtype's size is
    len(data) (the caller checks: a template is made for it). The records around the data are the same for every
    tensor of a dtype and shape, but for the archive's name, the data's CRC-32 and the serialization id: they are
    made once (_template) and filled in (a %-format, one C call each), where building them was ~60 % of a 2 KiB
    file's Python (bench/README.md, issue 33 round 2)."""
    key = (dtype, shape, len(archive))
    template = _TEMPLATES.get(key)
    if template is None:
        import torch

        if len(_TEMPLATES) >= MAX_TEMPLATES:
            _TEMPLATES.clear()
        # The pickle names the storage (its type and element count), never its bytes: an empty tensor of the
        # same dtype and shape pickles the same (torch.empty leaves the memory untouched).
        template = _TEMPLATES[key] = _template(_pickle(torch.empty(shape, dtype=dtype)), len(data), len(archive))
    return _fill(template, archive, isal_zlib.crc32(data))


def write_file(fd: int, head: bytes, data, tail: bytes, file_bytes: int) -> None:
    """head + data + tail into the open file `fd`: one writev, continued where a short one stopped."""
    pieces = [head, data, tail]
    done = os.writev(fd, pieces)
    if done == file_bytes:
        return
    # A short write (a signal, a disk's last blocks; writev's 2 GiB cap): the rest, from where it stopped.
    views = [memoryview(p).cast("B") for p in pieces]
    while True:
        while views and done >= len(views[0]):
            done -= len(views.pop(0))
        if not views:
            return
        views[0] = views[0][done:]
        done = os.writev(fd, views)


def _write_path(path, head: bytes, data, tail: bytes, file_bytes: int, flags: int = 0) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0) | flags, 0o644)
    try:
        write_file(fd, head, data, tail, file_bytes)
    finally:
        os.close(fd)


_TEMPLATES: dict[tuple, _Template] = {}  # (dtype, shape, name length) -> its records: a model stores the same shapes
MAX_TEMPLATES = 4096


def _write(path: Path, pickled: bytes, data: memoryview, nbytes: int, archive: str | None) -> Written:
    archive = archive or path.stem or "archive"
    head, tail, written = _fill(_template(pickled, nbytes, len(archive)), archive, isal_zlib.crc32(data))
    _write_path(path, head, data, tail, written.file_bytes)
    return written


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
        import torch

        if isinstance(obj, torch.storage.TypedStorage):  # the dtypes with a legacy storage class (FloatStorage ...)
            return "storage", getattr(torch, obj._pickle_storage_type()), "0", "cpu", obj._size()
        if isinstance(obj, torch.UntypedStorage):  # newer dtypes (uint32, float8 ...): bytes and the dtype apart
            return "storage", torch.UntypedStorage, "0", "cpu", obj.nbytes()
        return None


def _pickle(value: torch.Tensor) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, protocol=PICKLE_PROTOCOL).dump(value)
    return buf.getvalue()


# What a template's holes take, in its tail (its head's are all _NAME): the archive's name and "/", the data's
# CRC-32, the serialization id (40 digits) and its CRC-32.
_NAME, _DATA_CRC, _ID, _ID_CRC = range(4)
_DATA = -1  # where the data go, between head and tail
_U32 = struct.Struct("<I")
# The serialization id's random half: torch's reader takes it as an opaque id, so Python's generator (seeded from
# os.urandom) serves, without secrets' system call a file.
_ids = random.Random()


class _Template(NamedTuple):
    """A .pt file's bytes around its data, for one dtype, shape and length of archive name, as %-formats."""

    head: bytes  # the records before the data; each %b the archive's name and "/"
    names: int  # how many %b the head has
    tail: bytes  # the data's descriptor, the last records, the central directory and the end records
    holes: tuple[int, ...]  # what each %b of the tail takes (_NAME, _DATA_CRC, _ID, _ID_CRC)
    size: int  # the whole file's bytes


def _template(pickled: bytes, nbytes: int, name_len: int) -> _Template:
    """The records as miniz lays them out for torch (_Zip), split at the data and made %-formats."""
    zip_ = _Zip(name_len + 1)
    for name, payload in ((b"data.pkl", pickled), (b".format_version", FORMAT_VERSION),
                          (b".storage_alignment", str(ALIGNMENT).encode()),
                          (b"byteorder", sys.byteorder.encode())):
        zip_.add(name, payload)
    zip_.add(b"data/0", _DATA, size=nbytes, crc=_DATA_CRC)
    zip_.add(b"version", FILE_VERSION)
    zip_.add(b".data/serialization_id", _ID, size=40, crc=_ID_CRC)
    pieces = zip_.finish()
    at = pieces.index(_DATA)
    head, tail = pieces[:at], pieces[at + 1:]
    assert set(p for p in head if type(p) is int) == {_NAME}

    def fmt(part: list) -> bytes:
        return b"".join(b"%b" if type(p) is int else p.replace(b"%", b"%%") for p in part)

    return _Template(fmt(head), head.count(_NAME), fmt(tail), tuple(p for p in tail if type(p) is int),
                     zip_.offset_end)


def _fill(t: _Template, archive: str, data_crc: int) -> tuple[bytes, bytes, Written]:
    prefix = archive.encode() + b"/"
    serial = b"%020d%020d" % (_ids.getrandbits(64), data_crc)
    values = (prefix, _U32.pack(data_crc), serial, _U32.pack(isal_zlib.crc32(serial)))
    head = t.head % ((prefix,) * t.names)
    tail = t.tail % tuple([values[k] for k in t.holes])
    nbytes = t.size - len(head) - len(tail)
    crc = isal_zlib.crc32(tail, isal_zlib.crc32_combine(isal_zlib.crc32(head), data_crc, nbytes))
    return head, tail, Written(t.size, crc)


class _Zip:
    """Zip records laid out as miniz lays them out for torch, as pieces: bytes, and holes (ints) for what changes
    from file to file (_NAME, _DATA, _DATA_CRC, _ID, _ID_CRC)."""

    def __init__(self, prefix_len: int):
        self.prefix_len = prefix_len  # the archive's name and "/", before each record's name
        self.offset = 0  # of the next local header in the file
        self.pieces: list = []
        self.central: list = []
        self.offset_end = 0  # the file's size, once finished

    def add(self, name: bytes, payload, *, size: int = 0, crc: int | None = None) -> None:
        """A record: its payload bytes, or a hole (_DATA, _ID) of `size` bytes whose CRC-32 is the hole `crc`."""
        if type(payload) is bytes:
            size, crc = len(payload), _U32.pack(isal_zlib.crc32(payload))
        name_len = self.prefix_len + len(name)
        start = self.offset + _LOCAL.size + name_len + 4  # where the data would start with no padding
        pad = -start % ALIGNMENT
        flags = _FLAGS if size else _UTF8  # miniz writes an empty record with no data descriptor
        self.pieces += [_LOCAL.pack(b"PK\x03\x04", 0, flags, 0, 0, 0, 0, 0, 0, name_len, 4 + pad), _NAME,
                        name + b"FB" + struct.pack("<H", pad) + b"Z" * pad, payload]
        if size:
            self.pieces += [b"PK\x07\x08", crc, struct.pack("<II", size, size)]  # the data descriptor
        entry = _CENTRAL.pack(b"PK\x01\x02", 0, 0, flags, 0, 0, 0, 0, size, size, name_len, 0, 0, 0, 0, 0,
                              self.offset)
        self.central += [entry[:16], crc if size else b"\0\0\0\0", entry[20:], _NAME, name]
        self.offset = start + pad + size + (_DESCRIPTOR.size if size else 0)

    def finish(self) -> list:
        """Every piece of the file: the records, the central directory and the end records."""
        cd_at, n = self.offset, len(self.central) // 5
        cd_bytes = sum(len(p) if type(p) is bytes else self.prefix_len if p == _NAME else 4 for p in self.central)
        end64_at = cd_at + cd_bytes
        # Fields as miniz writes them: "made by" 0x031e (Unix, 3.0), "needed" 45 (zip64).
        end64 = _END64.pack(b"PK\x06\x06", _END64.size - 12, 0x031E, 45, 0, 0, n, n, cd_bytes, cd_at)
        locator = _LOCATOR.pack(b"PK\x06\x07", 0, end64_at, 1)
        end = _END.pack(b"PK\x05\x06", 0, 0, n, n, cd_bytes, cd_at, 0)
        self.offset_end = end64_at + len(end64) + len(locator) + len(end)
        return self.pieces + self.central + [end64 + locator + end]



# -- reading ---------------------------------------------------------------------------------------
MAX_DIRECTORY_BYTES = 1 << 20  # torch.save's zip directory of one tensor: 7 entries, ~600 bytes
MAX_PICKLE_BYTES = 1 << 20  # a tensor's data.pkl is 150-300 bytes; a megabyte of it is no tensor torch.save wrote
MAX_RANK = 64  # dims of a shape read back; torch's own tensors stop well short of it
READ_CHUNK = 4 << 20  # bytes read (and CRC-32 checked) at a time, straight into the tensor's memory

# The names torch.save's pickle of one tensor uses, each mapped to what it stands for here: nothing is imported.
_REBUILDS = {("torch._utils", "_rebuild_tensor_v2"): "v2", ("torch._utils", "_rebuild_tensor_v3"): "v3",
             ("torch._utils", "_rebuild_parameter"): "parameter", ("collections", "OrderedDict"): "OrderedDict"}
_TYPED_STORAGES = {"ByteStorage": "uint8", "CharStorage": "int8", "ShortStorage": "int16", "IntStorage": "int32",
                   "LongStorage": "int64", "HalfStorage": "float16", "FloatStorage": "float32",
                   "DoubleStorage": "float64", "BFloat16Storage": "bfloat16", "BoolStorage": "bool",
                   "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128"}
# torch's dtypes by the name its pickles give them (_rebuild_tensor_v3's dtype argument: uint16/32/64, float8 ...)
# -> (bytes an element, numpy's dtype; None where numpy has none). Named here, not read from torch, so that reading
# imports no torch; quantized dtypes need torch's own rebuild. bfloat16's numpy form is its bits (BFloat16Bits).
_DTYPES = {"bool": (1, "bool"), "uint8": (1, "uint8"), "int8": (1, "int8"), "int16": (2, "int16"),
           "int32": (4, "int32"), "int64": (8, "int64"), "uint16": (2, "uint16"), "uint32": (4, "uint32"),
           "uint64": (8, "uint64"), "float16": (2, "float16"), "float32": (4, "float32"), "float64": (8, "float64"),
           "bfloat16": (2, "uint16"), "complex32": (4, None), "complex64": (8, "complex64"),
           "complex128": (16, "complex128"), "float8_e4m3fn": (1, None), "float8_e5m2": (1, None),
           "float8_e4m3fnuz": (1, None), "float8_e5m2fnuz": (1, None), "float8_e8m0fnu": (1, None)}
_LITERALS = {"BININT", "BININT1", "BININT2", "LONG1", "BINUNICODE", "SHORT_BINUNICODE", "BINFLOAT"}
_CONSTANTS = {"NEWTRUE": True, "NEWFALSE": False, "NONE": None}
_TUPLES = {"EMPTY_TUPLE": 0, "TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}


@dataclass(frozen=True)
class StoredTensor:
    """What a .pt holds, found before reading its data: the tensor's dtype and view, and its data record."""

    dtype: str  # torch's name for it: "float32", "bfloat16" (getattr(torch, dtype) is the torch.dtype)
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int  # the view's first element in the storage
    storage_numel: int  # elements of `dtype` in the data record: what reading it allocates
    record: str  # the record's name in the zip
    data_at: int  # the record's first byte in the file
    crc32: int  # the record's CRC-32, from the zip's directory
    swap: bool  # written on a host of the other byte order

    @property
    def itemsize(self) -> int:
        return _DTYPES[self.dtype][0]

    @property
    def nbytes(self) -> int:
        return self.storage_numel * self.itemsize


class _Rebuild(NamedTuple):
    kind: str


class _StorageType(NamedTuple):
    dtype: str | None  # None: torch.UntypedStorage (bytes; the dtype comes with _rebuild_tensor_v3)


class _Storage(NamedTuple):
    dtype: str | None
    key: str
    count: int  # elements of dtype, bytes when untyped


class _Dtype(NamedTuple):
    name: str  # a key of _DTYPES


class _Tensor(NamedTuple):
    storage: _Storage
    offset: int
    shape: tuple
    stride: tuple
    dtype: str


def inspect_tensor(f, size: int) -> StoredTensor:
    """What the .pt in the open binary file `f` (`size` bytes) holds, from its zip directory, data.pkl and byteorder
    records alone: nothing the size of its data is read or allocated.

    Raises ValueError, saying why, for anything but torch.save's form of one tensor: not a zip; a compressed,
    encrypted or doubled entry; a record that claims more bytes than the file holds after it; a pickle that names
    anything but torch's tensor rebuild functions, storages and dtypes, or holds no tensor; a storage whose
    declared size is not its record's; a view reaching past its storage or claiming more elements than it holds.
    """
    directory = _directory_bytes(f, size)
    if directory > MAX_DIRECTORY_BYTES:  # zipfile holds a ZipInfo (~10x its bytes) per entry
        raise ValueError(f"its zip directory is {directory:,} bytes; torch.save's for one tensor is under 1 KiB, "
                         f"and ttreport reads at most {MAX_DIRECTORY_BYTES:,}")
    try:
        archive = zipfile.ZipFile(f)
    except (zipfile.BadZipFile, ValueError, EOFError, NotImplementedError, OverflowError, struct.error) as e:
        raise ValueError(f"not a torch zip file ({e})") from None
    entries = archive.infolist()
    names = [i.filename for i in entries]
    doubled = sorted(n for n, k in Counter(names).items() if k > 1)
    if doubled:  # which of the two a reader takes is the reader's choice: torch's and Python's differ
        raise ValueError(f"two entries named {doubled[0]}, which torch.save never writes")
    packed = [i.filename for i in entries if i.compress_type != zipfile.ZIP_STORED]
    if packed:  # a deflated record of a few MB inflates to GB; torch.save stores every record as it is
        raise ValueError(f"compressed entries ({', '.join(packed[:3])}), which torch.save never writes")
    if any(i.flag_bits & 0x1 for i in entries):
        raise ValueError("encrypted entries, which torch.save never writes")
    folders = [i.filename for i in entries if i.filename.endswith("/") or i.external_attr & 0x10]
    if folders:  # miniz takes the DOS folder bit as "no data": torch.load then gave a tensor of uninitialized memory
        raise ValueError(f"entries marked as folders ({', '.join(folders[:3])}), which torch.save never writes")
    if not names:
        raise ValueError("an empty zip, not a torch file")
    top = names[0].split("/", 1)[0]  # torch.save's records all sit in one folder, named after the file
    pickled = _small_record(f, archive, f"{top}/data.pkl", size, MAX_PICKLE_BYTES)
    order = b"little"  # what torch.load takes for a file with no byteorder record
    if f"{top}/byteorder" in names:
        order = _small_record(f, archive, f"{top}/byteorder", size, 16)
        if order not in (b"little", b"big"):
            raise ValueError(f"byteorder {order[:16]!r} is neither little nor big")
    found = _unpickle(pickled)
    if not isinstance(found, _Tensor):
        raise ValueError(f"it holds {_what(found)}, not a tensor")
    storage, dtype = found.storage, found.dtype
    record = f"{top}/data/{storage.key}"
    if record not in names:
        raise ValueError(f"its pickle names storage {storage.key!r}, which has no record {record}")
    info = archive.getinfo(record)
    data_at = _record_start(f, info, size)
    itemsize = _DTYPES[dtype][0]
    stored_bytes = storage.count * _DTYPES[storage.dtype or "uint8"][0]
    if info.file_size != stored_bytes or stored_bytes % itemsize:
        raise ValueError(f"its pickle declares {stored_bytes:,} bytes of {dtype} in "
                         f"storage {storage.key!r}, but its record {record} holds {info.file_size:,}")
    storage_numel = stored_bytes // itemsize
    numel = math.prod(found.shape)
    reach = found.offset + sum((d - 1) * s for d, s in zip(found.shape, found.stride)) + 1 if numel else 0
    if reach > storage_numel:
        raise ValueError(f"its {list(found.shape)} view (strides {list(found.stride)}, offset {found.offset}) "
                         f"reaches element {reach:,}, but its data holds {storage_numel:,}")
    if numel > storage_numel:  # stride 0: torch makes it without memory, then every computation walks each element
        raise ValueError(f"its view claims {numel:,} elements, but its data holds {storage_numel:,} (an expanded "
                         f"view, which a stored tensor never is)")
    return StoredTensor(dtype, found.shape, found.stride, found.offset, storage_numel, record, data_at, info.CRC,
                        itemsize > 1 and order.decode() != sys.byteorder)


def read_tensor(f, found: StoredTensor) -> torch.Tensor:
    """The tensor `found` (inspect_tensor's answer on the same open file) describes, its data read straight into
    its memory and checked against the record's CRC-32; a plain CPU torch.Tensor (requires_grad off)."""
    import torch

    raw = _read_data(f, found)
    data = torch.from_numpy(raw) if raw.size else torch.empty(0, dtype=torch.uint8)  # from_numpy's empty: stride 0
    return data.view(getattr(torch, found.dtype)).as_strided(found.shape, found.stride, found.offset)


class BFloat16Bits(np.ndarray):
    """bfloat16 values as their uint16 bits, numpy having no bfloat16: read_array's form of a bfloat16 tensor.
    Slices and reshapes stay BFloat16Bits; .float32() widens the values exactly."""

    def float32(self) -> np.ndarray:
        return (np.asarray(self).astype(np.uint32) << 16).view(np.float32)


def read_array(f, found: StoredTensor) -> np.ndarray:
    """read_tensor's values as a numpy array, with no torch imported: its dtype numpy's of the same name, a
    bfloat16 tensor as BFloat16Bits. Raises ValueError for a dtype numpy has none of (float8, complex32)."""
    numpy_dtype = _DTYPES[found.dtype][1]
    if numpy_dtype is None:
        raise ValueError(f"it holds {found.dtype} values, which numpy has no dtype for; read it with torch "
                         f"(ttreport.load_tensor)")
    values = _read_data(f, found).view(numpy_dtype)
    itemsize = found.itemsize
    values = np.lib.stride_tricks.as_strided(values[found.offset:], found.shape, [s * itemsize for s in found.stride])
    return values.view(BFloat16Bits) if found.dtype == "bfloat16" else values


def array_of(value: torch.Tensor) -> np.ndarray:
    """A torch.Tensor's values as read_array gives a stored one's: numpy's array over its memory (a CPU tensor's
    is not copied), a bfloat16 tensor as BFloat16Bits."""
    import torch

    value = value.detach().cpu().resolve_conj().resolve_neg()
    if value.dtype == torch.bfloat16:
        return value.view(torch.int16).numpy().view(np.uint16).view(BFloat16Bits)
    return value.numpy()


def array_dtype(values: np.ndarray) -> str:
    """torch's name for the dtype of an array read_array or array_of gave: "bfloat16", "float32", "int64" ..."""
    return "bfloat16" if isinstance(values, BFloat16Bits) else values.dtype.name


def _read_data(f, found: StoredTensor) -> np.ndarray:
    """The record's bytes (uint8), read straight into their memory, checked against its CRC-32, in this host's
    byte order."""
    data = np.empty(found.nbytes, dtype=np.uint8)
    if found.nbytes:
        view = memoryview(data)
        f.seek(found.data_at)
        got = crc = 0
        while got < found.nbytes:
            n = f.readinto(view[got:got + READ_CHUNK])
            if not n:
                raise ValueError(f"its record {found.record} ends after {got:,} of its {found.nbytes:,} bytes")
            crc = isal_zlib.crc32(view[got:got + n], crc)
            got += n
        if crc != found.crc32:
            raise ValueError(f"its record {found.record} has CRC-32 {crc:08x} where the zip records "
                             f"{found.crc32:08x}: the file is damaged")
    if found.swap:  # each element's bytes reversed (a complex number's two halves each on their own, as torch does)
        unit = found.itemsize // (2 if found.dtype.startswith("complex") else 1)
        data = np.ascontiguousarray(data.reshape(-1, unit)[:, ::-1]).reshape(-1)
    return data


def _directory_bytes(f, size: int) -> int:
    """The size of the zip's central directory, from its end record (and zip64 end record): read before zipfile
    parses the directory whole."""
    tail_at = max(size - _END.size - 0xFFFF, 0)  # the end record, then a comment of at most 64 KiB
    f.seek(tail_at)
    tail = f.read(size - tail_at)
    at = tail.rfind(b"PK\x05\x06")  # where zipfile looks too: the last end record
    if at < 0 or at + _END.size > len(tail):
        raise ValueError("not a torch zip file (it has no zip end record)")
    directory = _END.unpack_from(tail, at)[5]
    locator_at = at - _LOCATOR.size
    if locator_at >= 0 and tail[locator_at:locator_at + 4] == b"PK\x06\x07":  # zipfile then takes zip64's sizes
        end64_at = tail_at + locator_at - _END64.size  # where zipfile reads it: just before the locator
        f.seek(max(end64_at, 0))
        end64 = f.read(_END64.size)
        if end64_at < 0 or len(end64) != _END64.size or end64[:4] != b"PK\x06\x06":
            raise ValueError("not a torch zip file (its zip64 end record is missing)")
        directory = _END64.unpack(end64)[8]
    return directory


def _record_start(f, info: zipfile.ZipInfo, size: int) -> int:
    """Where a stored record's bytes start, from its local header, once they are known to fit in the file."""
    if not 0 <= info.header_offset <= size - _LOCAL.size:
        raise ValueError(f"the entry {info.filename}'s header lies at {info.header_offset:,}, outside the file")
    f.seek(info.header_offset)
    local = f.read(_LOCAL.size)
    if len(local) != _LOCAL.size or local[:4] != b"PK\x03\x04":
        raise ValueError(f"the entry {info.filename} has no local header")
    name_len, extra_len = struct.unpack_from("<HH", local, 26)
    encoding = "utf-8" if info.flag_bits & _UTF8 else "cp437"
    if f.read(name_len) != info.orig_filename.encode(encoding) or struct.unpack_from("<H", local, 8)[0] != 0:
        raise ValueError(f"the entry {info.filename}'s local header does not match the zip's directory")
    start = info.header_offset + _LOCAL.size + name_len + extra_len
    if info.compress_size != info.file_size or start + info.file_size > size:
        raise ValueError(f"the entry {info.filename} claims {info.file_size:,} bytes, but the file holds "
                         f"{max(size - start, 0):,} after its header")
    return start


def _small_record(f, archive: zipfile.ZipFile, name: str, size: int, most: int) -> bytes:
    if name not in archive.NameToInfo:
        raise ValueError(f"no record {name}, which torch.save always writes")
    info = archive.getinfo(name)
    if info.file_size > most:
        raise ValueError(f"its record {name} is {info.file_size:,} bytes; torch.save writes at most {most:,}")
    f.seek(_record_start(f, info, size))
    data = f.read(info.file_size)
    if zlib.crc32(data) != info.CRC:
        raise ValueError(f"its record {name} does not match its CRC-32: the file is damaged")
    return data


def _unpickle(data: bytes):
    """The object torch.save's pickle of one tensor describes, as _Tensor and plain values. A walk over the opcodes
    (pickletools parses them) that builds tuples, lists, dicts, numbers and strings, and knows the names in
    _REBUILDS, _TYPED_STORAGES and _DTYPES: every other opcode or name is refused, so nothing is imported or run."""
    stack, marks, memo = [], [], {}
    try:
        for op, arg, _ in pickletools.genops(data):
            name = op.name
            if name in ("PROTO", "FRAME"):
                continue
            if name == "GLOBAL":
                stack.append(_global(*arg.split(" ", 1)))
            elif name == "STACK_GLOBAL":
                attr, module = stack.pop(), stack.pop()
                stack.append(_global(module, attr))
            elif name in ("BINPUT", "LONG_BINPUT"):
                memo[arg] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("BINGET", "LONG_BINGET"):
                stack.append(memo[arg])
            elif name == "MARK":
                marks.append(len(stack))
            elif name == "TUPLE":
                at = marks.pop()
                stack[at:] = [tuple(stack[at:])]
            elif name in _TUPLES:
                at = len(stack) - _TUPLES[name]
                if at < 0:
                    raise IndexError("stack underflow")
                stack[at:] = [tuple(stack[at:])]
            elif name in _LITERALS:
                stack.append(arg)
            elif name in _CONSTANTS:
                stack.append(_CONSTANTS[name])
            elif name in ("EMPTY_DICT", "EMPTY_LIST"):
                stack.append({} if name == "EMPTY_DICT" else [])
            elif name in ("SETITEM", "SETITEMS"):
                at = marks.pop() if name == "SETITEMS" else len(stack) - 2
                items = stack[at:]
                del stack[at:]
                stack[-1].update(zip(items[::2], items[1::2]))
            elif name in ("APPEND", "APPENDS"):
                at = marks.pop() if name == "APPENDS" else len(stack) - 1
                items = stack[at:]
                del stack[at:]
                stack[-1].extend(items)
            elif name == "BINPERSID":
                stack.append(_storage(stack.pop()))
            elif name == "REDUCE":
                args = stack.pop()
                stack.append(_call(stack.pop(), args))
            elif name == "STOP":
                return stack.pop()
            else:
                raise ValueError(f"its pickle holds opcode {name}, which torch.save never writes for a tensor")
    except (IndexError, KeyError, TypeError, AttributeError) as e:  # a stack or memo that the opcodes misuse
        raise ValueError(f"its pickle is malformed ({type(e).__name__}: {e})") from None
    raise ValueError("its pickle has no STOP")  # genops raises first; kept so a change there cannot fall through


def _global(module: str, attr: str):
    if (module, attr) in _REBUILDS:
        return _Rebuild(_REBUILDS[module, attr])
    if module == "torch" and attr in _TYPED_STORAGES:
        return _StorageType(_TYPED_STORAGES[attr])
    if module in ("torch", "torch.storage") and attr == "UntypedStorage":
        return _StorageType(None)
    if module == "torch" and attr in _DTYPES:
        return _Dtype(attr)
    raise ValueError(f"it holds pickled objects besides tensor data, and ttreport never loads those (loading them "
                     f"could run arbitrary code): GLOBAL {module}.{attr}")


def _storage(pid):
    """A persistent id: torch.save's ("storage", storage type, key, location, size) tuple."""
    if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _StorageType)
            and isinstance(pid[2], str) and _is_count(pid[4])):
        raise ValueError(f"its pickle refers to {_what(pid)}, not a storage")
    return _Storage(pid[1].dtype, pid[2], pid[4])


def _call(fn, args):
    if not isinstance(fn, _Rebuild) or not isinstance(args, tuple):
        raise ValueError(f"its pickle calls {_what(fn)}, which torch.save never calls")
    if fn.kind == "OrderedDict":  # a tensor's backward hooks: none in a saved one
        if args:
            raise ValueError("its pickle fills an OrderedDict, which a saved tensor never has")
        return {}
    if fn.kind == "parameter":  # (data, requires_grad, hooks): the data are what is read
        if len(args) != 3 or not isinstance(args[0], _Tensor):
            raise ValueError("its pickle rebuilds a parameter from something other than a tensor")
        return args[0]
    # v2: (storage, offset, shape, stride, requires_grad, hooks[, metadata]); v3 adds the dtype after the hooks
    n = 6 if fn.kind == "v2" else 7
    if len(args) not in (n, n + 1):
        raise ValueError(f"its pickle rebuilds a tensor from {len(args)} arguments, not {n}")
    storage, offset, shape, stride = args[:4]
    if not isinstance(storage, _Storage):
        raise ValueError(f"its pickle rebuilds a tensor from {_what(storage)}, not a storage")
    dtype = args[6] if fn.kind == "v3" else _Dtype(storage.dtype or "uint8")  # v2 of an untyped storage: bytes
    if not isinstance(dtype, _Dtype):
        raise ValueError(f"its pickle rebuilds a tensor of dtype {_what(dtype)}")
    if not (_is_count(offset) and _is_shape(shape) and _is_shape(stride) and len(shape) == len(stride)):
        raise ValueError(f"its pickle gives a tensor shape {_what(shape)}, strides {_what(stride)} and offset "
                         f"{_what(offset)}, not counts")
    if not isinstance(args[4], bool) or not isinstance(args[5], dict):  # torch refuses these too
        raise ValueError(f"its pickle gives a tensor requires_grad {_what(args[4])} and hooks {_what(args[5])}")
    return _Tensor(storage, offset, shape, stride, dtype.name)


def _is_count(x) -> bool:
    return type(x) is int and x >= 0


def _is_shape(x) -> bool:
    return isinstance(x, tuple) and len(x) <= MAX_RANK and all(_is_count(d) for d in x)


def _what(x) -> str:
    """A short name for a value the pickle built, for an error message."""
    if isinstance(x, _Tensor):
        return "a tensor"
    if isinstance(x, (_Storage, _StorageType)):
        return "a storage"
    if isinstance(x, _Rebuild):
        return x.kind
    text = repr(x) if isinstance(x, (int, float, str, bool, type(None))) else f"a {type(x).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."
