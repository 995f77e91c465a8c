"""Tensor files: background threads write them (TensorStore), and load_tensor() reads them back.

`tensors/<id>.pt` holds a plain torch.Tensor (detached, CPU, contiguous, logical shape, its
own storage), so `torch.load(path, weights_only=True)` reads it on any machine with torch and
neither device_sim nor ttreport. `tensors/<id>.bin` is device_sim's portable format. Each file
is written under a temporary name and renamed, so a crash never leaves half a file under the
final name. The tensor threads then record the file's size, CRC-32, shape and dtype in
`tensor_files`, and load_tensor() checks a file against them before trusting it:

    value = ttreport.load_tensor("generated/ttreport/reports/demo", 3)   # TensorFileDamagedError if changed

A received folder is input: every tensor file read from one (load_tensor, compare, `ttreport tensor`,
`diff-tensor`) goes through read_tensor_file, which keeps to the report's tensors/ folder, unpickles
nothing, allocates no more than the file's data holds, and stops at TTREPORT_MAX_TENSOR_ELEMENTS.
Reading a .pt imports no torch when the caller asks for a numpy array (load_tensor(as_array=True), as compare does):
this module imports torch only inside the functions that make or take a torch.Tensor.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import queue as queue_module
import secrets
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from isal import isal_zlib

from ttreport import ptfile
from ttreport.capturing.records import FILE_LOST, ROW
from ttreport.errors import ConfigError, LossWarner, TensorFileDamagedError, TensorFileError, TensorTooLargeError
from ttreport.folder import TENSORS_DIR
from ttreport.ptfile import plain

MAX_PENDING_BYTES = 1 << 30  # values waiting for the disk before the model waits (back-pressure, never loss)
# Tensor files stop while this much is still free, so the database (small, but it is the report) can
# keep committing and close: max(64 MiB, 2x the file), but at most three quarters of a small filesystem.
KEEP_FREE_BYTES = 64 << 20
KEEP_FREE_FRACTION = 0.75
POOL_THREADS = 2  # the tensor threads (TensorStore's docstring)
CHECK_BYTES = 1 << 20  # files' bytes between two looks at the free space (DiskRoom: ~500 files of 2 KiB)

if TYPE_CHECKING:
    import torch


class TensorStore(threading.Thread):
    """Writes queued (tensor_id, relative path, value, dtype, layout, memory config) items, once each; a mesh
    shard's item adds (file name in the tensor's folder, device id), an op's write into a stored tensor
    (operation_id,). With an op log, a stored value's log record (records.Values: its bytes, which the log holds
    too) is queued as it is, and written by `write_values` (log_tensors.write_record); its row goes into the log
    after the record, which tells the writer process that the file is there (log_tensors.FileWriter).

    A pool of `threads` threads takes the queue: a file's open, write and rename let the GIL go, so a second thread
    builds the next file's zip records meanwhile (bench/README.md, issue 33: the figures for 1, 2 and 4)."""

    def __init__(self, report_dir, writer_queue, warner: LossWarner | None = None, *, threads: int | None = None):
        super().__init__(name="ttreport-tensors", daemon=True)
        self.report_dir = Path(report_dir)
        self.queue = queue_module.SimpleQueue()
        self.writer_queue = writer_queue  # failures become FILE_LOST records: the row's `file` is cleared
        self.error: BaseException | None = None
        self.files_lost = self.files_written = 0
        self.pending_bytes = 0
        self.values_done = 0  # bytes of the log's value records written (or lost): the op log's storage paces on it
        self.cpu_s = 0.0  # the threads' CPU in writing files: what bench/ calls the write time
        self.write_values = None  # a value record -> its row (log_tensors.write_record), set by the op log's storage
        self.warner = warner or LossWarner()
        self.room = DiskRoom(self.report_dir)
        self.folder = TensorFolder(self.report_dir)  # the value records' files are made in it
        # A row of plain values into the log with the next op (an op log's queue: LogQueue.event)
        self.row = writer_queue.event
        self._lock = threading.Lock()
        self.busy = threading.Lock()  # held while torch writes a file (a fork waits for it: capturing/session.py)
        self._helpers = [threading.Thread(target=self.run, name=f"ttreport-tensors-{i + 2}", daemon=True)
                         for i in range((POOL_THREADS if threads is None else threads) - 1)]

    def start(self) -> None:
        super().start()
        for thread in self._helpers:
            thread.start()

    def put_many(self, items) -> None:
        for item in items:
            with self._lock:
                self.pending_bytes += _nbytes(item[2])
            self.queue.put(item)
        while self.pending_bytes > MAX_PENDING_BYTES and self.is_alive():
            time.sleep(0.001)

    def stop(self) -> None:
        for _ in range(1 + len(self._helpers)):
            self.queue.put(None)
        self.join()
        for thread in self._helpers:
            thread.join()
        self.folder.close()

    def run(self) -> None:
        folder = self.report_dir / TENSORS_DIR
        get, lock = self.queue.get, self._lock
        while (item := get()) is not None:
            started = time.thread_time()
            if type(item[2]) is str:  # a log's value record (its path where an item has its value)
                self._write_record(item)
            else:
                self._write_item(item, folder)
            spent = time.thread_time() - started
            with lock:
                self.cpu_s += spent

    def _write_record(self, rec) -> None:
        try:
            if rec[7] is None:  # a .pt from bytes: ptfile's own writer, no torch call (nothing a fork must wait for)
                row = self.write_values(rec)
            else:  # a .bin: device_sim's writer, through torch
                with self.busy:
                    row = self.write_values(rec)
        except Exception as e:  # a full disk must not stop the model; the loss is recorded
            self._lose(rec[1], rec[2], e, write=len(rec[6]) == 1)
            with self._lock:
                self.values_done += len(rec[5])
            return
        with self._lock:
            self.files_written += 1
            self.values_done += len(rec[5])
        # The row goes into the log with the next op's write, as a ROW record would (LogSink.append); it is plain
        # values already, so without LogSink's walk over it (~4 µs a row).
        self.row(row)

    def _write_item(self, item, folder: Path) -> None:
        tid, rel = item[0], item[1]
        write = len(item) == 7  # (..., operation_id): the values an op wrote into a stored tensor
        try:
            folder.mkdir(exist_ok=True)
            path, shard = self.report_dir / rel, len(item) > 7  # a mesh tensor's device shard: see below
            if shard:  # (..., file name in the tensor's folder, device id)
                path.mkdir(exist_ok=True)
                path = path / item[6]
            self.room.check(_nbytes(item[2]))
            with self.busy:  # a fork waits for it: torch's state is whole in the child (capturing/session.py)
                # Here, off the model's thread: what a reader verifies the file against.
                facts = {"tensor_id": tid, **write_tensor(path, *item[2:6])}
            with self._lock:
                self.files_written += 1
            if shard:
                self.writer_queue.put((ROW, "device_tensor_files", {**facts, "device_id": item[7]}))
            elif write:
                self.writer_queue.put((ROW, "tensor_writes", {**facts, "operation_id": item[6], "file": rel}))
            else:
                self.writer_queue.put((ROW, "tensor_files", facts))
        except Exception as e:  # a full disk must not stop the model; the loss is recorded
            self._lose(tid, rel, e, write=write)
        finally:
            with self._lock:
                self.pending_bytes -= _nbytes(item[2])

    def _lose(self, tid, rel, e: Exception, *, write: bool) -> None:
        with self._lock:
            self.files_lost += 1
            first = self.error is None
            if first:
                self.error = e
        if not write:  # a lost write leaves the tensor's first file (and its row) as they were
            self.writer_queue.put((FILE_LOST, tid))
        if first:
            self.warner.warn(f"ttreport: could not write tensor file {rel} ({type(e).__name__}: {e})")

    @property
    def disk_low(self) -> str | None:
        return self.room.low


class DiskRoom:
    """Whether a tensor file of n bytes still leaves the database its room (KEEP_FREE_BYTES' reason)."""

    def __init__(self, report_dir):
        self.report_dir = Path(report_dir)
        self.low: str | None = None  # why tensor files stop, once the free space runs low
        self._budget = 0  # bytes the files may still take before the free space is looked at again
        self._lock = threading.Lock()  # the tensor threads share one

    def check(self, nbytes: int) -> None:
        """Raise ENOSPC (from now on) once writing `nbytes` would leave less than the margin free. The free space
        is read again after CHECK_BYTES of files, or half of what is free beyond the margin where that is less (a
        statvfs a file was one of a 2 KiB file's 15 system calls: bench/README.md, issue 33 round 2)."""
        if self.low is None:
            with self._lock:
                self._budget -= nbytes
                if self._budget >= 0:
                    return
                free, keep = self.free_and_kept(nbytes)
                if free - nbytes >= keep:
                    self._budget = min((free - nbytes - keep) // 2, CHECK_BYTES)
                    return
                self.low = (f"{free} bytes free on the filesystem of {self.report_dir}, and {keep} are kept for "
                            f"the database: tensor files stop here so that every op is still recorded")
        raise OSError(errno.ENOSPC, self.low)

    def free_and_kept(self, nbytes: int) -> tuple[int, int]:
        st = os.statvfs(self.report_dir)
        free, total = st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
        return free, min(max(KEEP_FREE_BYTES, 2 * nbytes), int(total * KEEP_FREE_FRACTION))


class TensorFolder:
    """A report's tensors/ folder, held open while value files are made in it: each file is made by its name in
    the open folder (openat, renameat), so its path is not looked up again a file, and neither the folder nor a
    file in it is ever a link followed out of the report. A value's file is made under a temporary name of the
    thread's (O_EXCL|O_NOFOLLOW: made new by the write itself, never through a link planted there), then renamed
    over its name: a live reader never finds half a file under the name its row gives.

    4 system calls a 2 KiB file, where the path route made 15 (a mkdir, two stats and a statvfs for the folder,
    open()'s own fstat, ioctl and lseek: bench/README.md, issue 33 round 2); torch.save makes 5."""

    def __init__(self, report_dir):
        self.report_dir = Path(report_dir)
        self._fd: int | None = None
        self._lock = threading.Lock()  # two tensor threads open it once
        # Folders opened before tensors/ was removed and made again: closed only by close(), once no thread writes
        # (another thread may still be in an openat on one; a number closed early could be another file's by then).
        self._stale: list[int] = []

    def close(self) -> None:
        """Once no thread writes into it (the tensor threads joined, a log's end)."""
        with self._lock:
            fds, self._fd, self._stale = [self._fd, *self._stale], None, []
        for fd in fds:
            if fd is not None:
                os.close(fd)

    def write_values(self, name: str, data, torch_dtype: str, shape, device: tuple | None = None,
                     sub: str | None = None) -> dict:
        """write_tensor from a tensor's bytes (an op log's copy) into the file `name` (in the tensor's own folder
        `sub`, a mesh shard's): `torch_dtype` is its text ("torch.bfloat16"); device: (device dtype, layout,
        MemoryConfig or None) for a .bin file. Returns its tensor_files facts.

        A log may come from elsewhere (a report folder rebuilt by a reader): the dtype must be one of torch's, and
        the shape that of the bytes (nothing larger is allocated)."""
        dtype = _TORCH_DTYPES.get(torch_dtype) if type(torch_dtype) is str else None
        if dtype is None:
            dtype = _torch_dtype(torch_dtype)
        if type(shape) is not tuple or not all(type(d) is int and d >= 0 for d in shape) or \
                math.prod(shape) * dtype.itemsize != len(data):
            raise ValueError(f"{len(data)} bytes are not a {dtype} tensor of shape {list(shape)!r:.80}")
        if device is not None or name.endswith(".bin") or len(data) >= ptfile.ZIP64_BYTES:
            # device_sim's .bin, or a .pt past 4 GiB (torch's own writer): through a path, checked as this route is
            return self._write_by_path(name, sub, data, dtype, shape, device)
        head, tail, written = ptfile.values_file(data, dtype, shape, name[:-3])
        folder = self._folder() if sub is None else self._sub(sub)
        try:
            _write_new(folder, name, (head, data, tail), written.file_bytes)
        except FileNotFoundError:
            if sub is not None:
                raise
            # tensors/ was removed since it was opened (a cleanup job): made again once, or its error is the loss
            with self._lock:
                if self._fd == folder:
                    self._stale.append(folder)
                    self._fd = None
            _write_new(self._folder(), name, (head, data, tail), written.file_bytes)
        finally:
            if sub is not None:
                os.close(folder)
        return {"file_bytes": written.file_bytes, "crc32": written.crc32, "shape": json.dumps(list(shape)),
                "dtype": torch_dtype}

    def _write_by_path(self, name: str, sub: str | None, data, dtype, shape, device) -> dict:
        import torch

        if sub is not None:
            os.close(self._sub(sub))  # made, and a folder
        else:
            self._folder()
        path = self.report_dir / TENSORS_DIR / (f"{sub}/{name}" if sub is not None else name)
        if device is None:
            tmp = path.with_name(f".{name}.{_thread_suffix()}.tmp")
            try:
                written = ptfile.save_values(data, dtype, shape, tmp, archive=path.stem, new=True)
                os.replace(tmp, path)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            return {"file_bytes": written.file_bytes, "crc32": written.crc32, "shape": json.dumps(list(shape)),
                    "dtype": str(dtype)}
        from device_sim.types import DataType, Layout

        value = torch.frombuffer(bytearray(data), dtype=dtype).reshape(shape) if len(data) else \
            torch.empty(shape, dtype=dtype)
        dt, layout, cfg = device
        return write_tensor(path, value, DataType(dt), Layout(layout), cfg)

    def _folder(self) -> int:
        fd = self._fd
        if fd is None:
            with self._lock:
                if self._fd is None:
                    self._fd = _open_folder(str(self.report_dir / TENSORS_DIR))
                fd = self._fd
        return fd

    def _sub(self, sub: str) -> int:
        return _open_folder(sub, self._folder())


def _open_folder(name: str, dir_fd: int | None = None) -> int:
    """The folder `name` (in the folder dir_fd), made if missing, opened: FileExistsError if what is there is not
    a folder but a file or a link (to somewhere out of the report)."""
    try:
        os.mkdir(name, dir_fd=dir_fd)
    except FileExistsError:  # a file or a link there: the open below refuses it
        pass
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            shown = name if dir_fd is None else f"{TENSORS_DIR}/{name}"
            raise FileExistsError(errno.EEXIST, f"{shown} is not a folder of the report's but a file or a link; "
                                                f"tensor files go only into the report's own folders") from None
        raise


def _write_new(folder: int, name: str, pieces: tuple, size: int) -> None:
    """The file `name` in the open folder, made new under a temporary name of this thread's, then renamed over it.
    One already there under that name (a killed writer's, or planted) gives way to a random name."""
    tmp = f".{name}.{_thread_suffix()}.tmp"  # folder._TENSOR_TEMP
    try:
        fd = os.open(tmp, os.O_WRONLY | ptfile.NEW_FILE, 0o644, dir_fd=folder)
    except FileExistsError:
        tmp = f".{name}.{secrets.token_hex(8)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | ptfile.NEW_FILE, 0o644, dir_fd=folder)
    try:
        try:
            ptfile.write_file(fd, *pieces, size)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise


_THREAD = threading.local()  # .suffix: this thread's part of a temporary file's name
os.register_at_fork(after_in_child=lambda: _THREAD.__dict__.clear())  # a forked writer process is another writer


def _thread_suffix() -> str:
    suffix = getattr(_THREAD, "suffix", None)
    if suffix is None:
        suffix = _THREAD.suffix = f"{os.getpid()}_{threading.get_ident()}"
    return suffix


_TORCH_DTYPES: dict = {}  # a dtype's text ("torch.bfloat16") -> the torch.dtype, once checked


def _torch_dtype(text) -> torch.dtype:
    import torch

    dtype = getattr(torch, text.removeprefix("torch."), None) if isinstance(text, str) else None
    if not isinstance(dtype, torch.dtype) or str(dtype) != text:  # "torch.float" is no dtype's text
        raise ValueError(f"{text!r:.80} is not a torch dtype's text (torch.float32, torch.bfloat16, ...)")
    _TORCH_DTYPES[text] = dtype
    return dtype


def _nbytes(value: torch.Tensor) -> int:
    return value.numel() * value.element_size()


def write_tensor(path: Path, value: torch.Tensor, dtype=None, layout=None, memory_config=None) -> dict:
    """Write the file; return its `tensor_files` facts: size, CRC-32, and the shape and dtype loading it gives."""
    if path.suffix == ".bin":
        import torch

        from device_sim import dtypes, serialization

        serialization.dump_tensor(path, _host_tensor(value, dtype, layout, memory_config))  # renames itself
        return file_facts(path, torch.empty(value.shape, dtype=dtypes.TORCH_DTYPE[dtype], device="meta"))
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        value = plain(value)
        # torch.save's own zip writer and CRC ran at a third of the disk's speed (bench/README.md, 3).
        written = ptfile.save_tensor(value, tmp, archive=path.stem)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return _facts(written.file_bytes, written.crc32, value)


def _host_tensor(value, dtype, layout, memory_config):
    # dump_tensor takes a device_sim Tensor; queued items hold only values (keeping the Tensor would
    # delay its buffer's free), so a host-side stand-in is made without allocating or taking an id.
    from device_sim.tensor import Tensor

    return Tensor.host_stand_in(value, dtype, layout, memory_config)


def tensor_path(report_dir, tensor_id: int, device: int | None = None) -> Path | None:
    """The stored file of `tensor_id` (.pt or .bin), or None when it was not stored. device: the file of
    that device's shard of a mesh tensor (tensors/<tensor_id>/<device>.pt)."""
    folder = Path(report_dir) / TENSORS_DIR
    stem = f"{tensor_id}" if device is None else f"{tensor_id}/{int(device)}"
    for suffix in (".pt", ".bin"):
        p = folder / f"{stem}{suffix}"
        if p.exists():
            return p
    return None


def is_mesh_tensor(report_dir, tensor_id: int) -> bool:
    """Whether `tensor_id` is stored as one file per device shard (a tensor on a mesh of devices)."""
    return (Path(report_dir) / TENSORS_DIR / f"{int(tensor_id)}").is_dir()


@dataclass(frozen=True)
class Expected:
    """What a report's database says a tensor file holds; load_tensor checks the file against it.

    shape and dtype come from the file's `tensor_files` row (None for reports made before it);
    db_shape is the logical shape in `tensors`, which bounds how large the file may be.
    """

    file_bytes: int | None = None
    crc32: int | None = None
    shape: list[int] | None = None
    dtype: str | None = None
    db_shape: tuple[int, ...] | None = None

    @property
    def max_file_bytes(self) -> int | None:
        """The most bytes the file may have: 8 per element of the db's shape (the widest dtype), plus
        room for the container (a .pt's pickle and zip records, a .bin's header of at most 1 MiB)."""
        if self.file_bytes is not None:
            return self.file_bytes
        if self.db_shape is None:
            return None
        return 8 * math.prod(max(d, 0) for d in self.db_shape) + FILE_OVERHEAD_BYTES


FILE_OVERHEAD_BYTES = (1 << 20) + (64 << 10)


def load_tensor(report_dir, tensor_id: int, expected: Expected | None = None, *, device: int | None = None,
                file: str | None = None, as_array: bool = False) -> torch.Tensor | np.ndarray:
    """The stored values of `tensor_id` as a plain CPU torch.Tensor in its logical shape; no device needed.

    The file is checked before it is trusted (read_tensor_file, the one reader): inside the report's
    tensors/ folder, a regular file (a FIFO would block), no larger than the db's shape allows, its
    CRC-32 the capture's, torch.save's form of one tensor read with nothing unpickled and nothing
    allocated beyond its data, at most TTREPORT_MAX_TENSOR_ELEMENTS elements, and its shape and dtype
    those the capture recorded (`expected`: the reader reads it from the report's database,
    read.report.load_tensor, which is ttreport.load_tensor; without it, what a file can show by itself).
    A tensor on a mesh is stored per device shard: `device` gives that device's shard (Report.load_tensor
    joins them). as_array: the values as a numpy array (ptfile.read_array's form: bfloat16 as its bits), a .pt
    read without importing torch.
    """
    if file is not None:  # a tensor_writes file (Report.load_tensor(after_operation=)), checked as any other
        return _load_path(report_dir, Path(report_dir) / file, tensor_id, expected or Expected(), as_array)
    if device is None and is_mesh_tensor(report_dir, tensor_id):
        raise TensorFileError(f"tensor {tensor_id} is a mesh tensor, stored per device: give device=, or load it "
                              f"with ttreport.load_tensor (Report.load_tensor), which joins its shards")
    expected = Expected() if expected is None else expected
    path = tensor_path(report_dir, tensor_id, device)
    if path is None:
        folder = Path(report_dir) / TENSORS_DIR
        if folder.is_symlink():  # a loop (tensors -> tensors) finds no file; "not stored" would send the user astray
            raise TensorFileError(f"tensor {tensor_id}: {folder} is a link (to {os.readlink(folder)}); ttreport reads "
                                  f"tensor files only inside their report's own tensors folder")
        where = folder / (f"{tensor_id}" if device is not None else "")
        raise TensorFileError(
            f"tensor {tensor_id} has no stored file" + (f" of device {device}'s shard" if device is not None else "")
            + f" in {where}; only tensors captured with Config(tensors='outputs' or 'all') and within "
            f"max_tensor_bytes are stored" + (", and only a mesh tensor per device" if device is not None else "")
        )
    return _load_path(report_dir, path, tensor_id, expected, as_array)


def _load_path(report_dir, path: Path, tensor_id: int, expected: Expected, as_array: bool):
    value = read_tensor_file(path, tensors_folder(report_dir), expected=expected, tensor_id=tensor_id,
                             as_array=as_array)
    if path.suffix == ".bin":  # device_sim's host Tensor: its torch values
        value = ptfile.array_of(value.value) if as_array else value.value
    _check_loaded(value, path, tensor_id, expected)
    return value


MAX_ELEMENTS_ENV = "TTREPORT_MAX_TENSOR_ELEMENTS"
# 1 Gi elements: the largest weight of common models loads (Llama 3's 128256 x 4096 embedding is 0.53 Gi), and a
# reader holds at most 4 GiB of float32 per tensor (diff-tensor and compare: two) until the user raises it.
DEFAULT_MAX_ELEMENTS = 1 << 30


def max_tensor_elements() -> int:
    """The most elements a reader loads from one tensor file: TTREPORT_MAX_TENSOR_ELEMENTS, else 1 Gi."""
    text = os.environ.get(MAX_ELEMENTS_ENV)
    if text is None:
        return DEFAULT_MAX_ELEMENTS
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{MAX_ELEMENTS_ENV}={text!r} is not a positive whole number of elements; set it to the "
                          f"most elements one tensor file may load (default {DEFAULT_MAX_ELEMENTS}), or unset it")
    return value


def tensors_folder(report_dir) -> Path:
    """The folder every tensor file of the report at `report_dir` must lie in: its tensors/, the link-free path
    (a tensors/ that is itself a link leads out of the report, and its files with it)."""
    return Path(report_dir).resolve() / TENSORS_DIR


def named_tensors_folder(path) -> Path:
    """The folder a tensor file named by a user (`ttreport diff-tensor`) must lie in: the tensors/ of its report
    when it is named under one (run-a/tensors/12.pt, run-a/tensors/7/0.pt), else the folder it is named in."""
    path = Path(path).absolute()
    for folder in path.parents:
        if folder.name == TENSORS_DIR:
            return tensors_folder(folder.parent)
    return path.parent.resolve()


def read_tensor_file(path, inside: Path, *, expected: Expected | None = None, tensor_id: int | None = None,
                     as_array: bool = False):
    """The one reader of a tensor file from a folder (load_tensor, compare, `ttreport tensor`, `diff-tensor`).

    Before anything the size of its data is allocated, the file must resolve to a path in `inside` (no link out),
    be a regular file (a FIFO would block) no larger than `expected` allows, match `expected`'s CRC-32 when known,
    hold torch.save's form of one tensor (ptfile.inspect_tensor: stored zip records, nothing unpickled, a shape
    no larger than its data) or a .bin whose header fits its data, and hold at most max_tensor_elements().
    Returns a plain torch.Tensor, or for a .bin device_sim's host Tensor (its device dtype, bfloat8_b say,
    sets compare's tolerances; .value is the torch.Tensor); as_array: a .pt's values as ptfile.read_array gives
    them, with no torch imported. Raises TensorFileError (a TensorFileDamagedError for a
    file that is not what it claims, a TensorTooLargeError past the cap) naming the tensor and the file.
    """
    path, expected = Path(path), expected or Expected()
    who = f"tensor {tensor_id}: {path}" if tensor_id is not None else f"{path}"
    # A received report is untrusted: a link planted as a tensor file must not read a file elsewhere.
    real = path.resolve()
    if not real.is_relative_to(inside):
        raise TensorFileError(f"{who} leads to {real}, outside {inside}; ttreport reads tensor files only inside "
                              f"their report's tensors folder (replace the link with the tensor file itself)")
    cap = max_tensor_elements()  # a bad setting is said before any file is opened
    f, limit, size = _open_regular(who, real, expected)
    with f:
        if expected.crc32 is not None:
            # Read through the same open file as the tensor, a chunk at a time, never held whole beside it.
            crc = _checksum(f, limit, who, size)
            if crc != expected.crc32:
                raise TensorFileDamagedError(
                    f"{who} has changed since the capture wrote it (CRC-32 {crc:08x}, recorded {expected.crc32:08x}):"
                    f" its values cannot be trusted; copy the file again from the source")
        try:
            if path.suffix == ".pt":
                found = ptfile.inspect_tensor(f, size)
                _check_cap(who, found.storage_numel, found.nbytes, cap)
                return (ptfile.read_array if as_array else ptfile.read_tensor)(f, found)
            from device_sim import serialization  # a .bin needs device_sim's reader; a .pt never imports it

            f.seek(0)  # the checksum, if taken, left it at the end
            declared = _bin_elements(f)
            if declared is not None:
                _check_cap(who, *declared, cap)
            return serialization.load_tensor(real)  # bounded by the file: its shape must match its data's size
        except TensorFileError:
            raise
        except Exception as e:
            raise TensorFileDamagedError(f"{who} cannot be read ({_reason(e)}); the file is damaged or was not "
                                         f"written by ttreport") from e


def _check_cap(who: str, elements: int, nbytes: int, cap: int) -> None:
    if elements > cap:
        raise TensorTooLargeError(f"{who} holds {elements:,} elements ({nbytes:,} bytes), more than the {cap:,} "
                                  f"ttreport loads from one file; to load it, set {MAX_ELEMENTS_ENV}={elements}")


def _bin_elements(f) -> tuple[int, int] | None:
    """(elements, data bytes) a .bin's header declares, read from the layout device_sim's serialization documents
    (magic, version, header length, JSON header with shape, mesh and data nbytes); None for a file whose header does
    not read, which serialization.load_tensor refuses, saying why, before it decodes anything."""
    from device_sim import serialization

    prelude = f.read(16)
    if len(prelude) != 16 or prelude[:8] != serialization.MAGIC:
        return None
    length = int.from_bytes(prelude[12:], "little")
    if length > serialization.MAX_HEADER_BYTES:
        return None
    try:
        header = json.loads(f.read(length))
        shards = header["mesh"]["shards"] if header.get("mesh") else 1
        dims = [*header["shape"], shards]
        nbytes = header["data"]["nbytes"]
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    # Every factor an int before they are multiplied: a string among them ("67") made math.prod repeat it into a
    # 13 GB string (the .bin fuzz through a report found it), and a float could be a 1e308 or a NaN.
    if not all(type(d) is int for d in dims) or type(nbytes) is not int:
        return None
    return math.prod(dims), nbytes


def _reason(e: Exception) -> str:
    """Why a file did not load, in one line (the chained cause has the rest). A ValueError is the readers' own
    account of the file; anything else is named by its type."""
    text = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
    return text if text and isinstance(e, ValueError) else f"{type(e).__name__}: {text}".rstrip(": ")


def _open_regular(who: str, real: Path, expected: Expected):
    """(The file opened for reading, the bytes it may hold, its size), only if it is a regular file no larger than
    `expected` allows."""
    try:
        st = os.stat(real)
        if not stat.S_ISREG(st.st_mode):
            raise TensorFileDamagedError(f"{who} is not a regular file (a folder, FIFO or device); ttreport reads "
                                         f"only regular files")
        limit = expected.max_file_bytes
        if limit is not None and st.st_size > limit:
            raise TensorFileDamagedError(
                f"{who} is {st.st_size} bytes, but the report records "
                + (f"{expected.file_bytes} bytes for it" if expected.file_bytes is not None else
                   f"shape {list(expected.db_shape)}, which needs at most {limit} bytes")
                + "; the file is not this tensor's")
        # O_NONBLOCK: should the file be swapped for a FIFO after the check, open() must not wait for a writer.
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        f = os.fdopen(fd, "rb")
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or (limit is not None and st.st_size > limit):
            f.close()
            raise TensorFileDamagedError(f"{who} is not a regular file of at most {limit} bytes")
    except OSError as e:
        raise TensorFileError(f"{who} cannot be read ({e.strerror or e})") from None
    # The size of the file opened: its records are read within it, so one that grows later is read as it was.
    return f, limit, st.st_size


CHECK_CHUNK = 4 << 20  # bytes read at a time for the checksum: the file is never held whole


def _checksum(f, limit: int | None, who: str, size: int) -> int:
    """CRC-32 of the open file's bytes (`size` when opened), read in chunks (ISA-L's CRC-32, zlib's value)."""
    # A buffer no larger than the file (and a byte, to see it grow): a 4 MiB one zero-filled for each 3 KiB file
    # was half of a compare's time (1.2 ms a file; the sample report's 136 files: 0.16 s of 0.87, cProfile).
    buf = bytearray(min(CHECK_CHUNK, size + 1))
    read, crc = 0, 0
    view = memoryview(buf)
    try:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            read += n
            if limit is not None and read > limit:
                raise TensorFileDamagedError(f"{who} grew past the {limit} bytes the report allows for it while it "
                                             f"was read; the file is not this tensor's")
            crc = isal_zlib.crc32(view[:n], crc)
    except OSError as e:
        raise TensorFileError(f"{who} cannot be read ({e.strerror or e})") from None
    return crc


def _check_loaded(value, path: Path, tensor_id: int, expected: Expected) -> None:
    shape = list(value.shape)
    dtype = f"torch.{ptfile.array_dtype(value)}" if isinstance(value, np.ndarray) else str(value.dtype)
    if expected.shape is not None and (shape != expected.shape or dtype != expected.dtype):
        raise TensorFileDamagedError(
            f"tensor {tensor_id}: {path} holds a {shape} {dtype} tensor, but the capture stored a "
            f"{expected.shape} {expected.dtype} one: the file is not this tensor's")
    if expected.db_shape is not None and math.prod(shape) != math.prod(expected.db_shape):
        raise TensorFileDamagedError(
            f"tensor {tensor_id}: {path} holds a {shape} tensor, but the report says tensor {tensor_id} is "
            f"{list(expected.db_shape)}: the file is not this tensor's")


def file_facts(path: Path, value: torch.Tensor) -> dict:
    """The tensor_files row of a file just written, read back for its size and CRC-32, and what loading it gives."""
    written = ptfile.checksum_file(path)
    return _facts(written.file_bytes, written.crc32, value)


def _facts(file_bytes: int, crc32: int, value: torch.Tensor) -> dict:
    return {"file_bytes": file_bytes, "crc32": crc32, "shape": json.dumps(list(value.shape)), "dtype": str(value.dtype)}
