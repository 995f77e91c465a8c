"""Tensor files through the op log: the model copies a stored tensor's bytes into the log with its op,
and the writer process writes the file from them (Config(writer="process"), the default).

    from ttreport.capturing.log_tensors import FileWriter, LogStorage
    storage = LogStorage(sink, tensor_store, report_dir)  # the capture's: Recorder(config, queue, storage)
    storage.put_with_op([(5, "tensors/5.pt", value, dtype, layout, memory_config)])  # the model's, before its OP
    files = FileWriter(report_dir)                        # the writer process
    batch = files.convert(batch)                          # VALUES records -> the files, and their rows

Why: with a tensor thread in the model's process, the model paid for each 2 KiB file in GIL handoffs
(bench/README.md, issue 14 round 5: ~150 µs of that thread's CPU a file, 13-16 % of it on the model's
thread). Copying 2 KiB into the op's own write costs it ~3.6 µs (the log's page faults are most of it),
and the bytes are on disk (the page cache) once the op returns: a SIGKILL of the model loses neither
the op nor its file, which the writer process, or the next open, writes from the log. A VALUES record is records.Values:

    (VALUES, tensor_id, path in the report, torch dtype text, shape, bytes, extra, device)

extra: () for a tensor's file, (operation_id,) for the values an op wrote into a stored tensor
(tensor_writes), (file name, device id) for a mesh shard; device: None for a .pt, or (device dtype,
layout, the MemoryConfig's fields: oplog.config_fields) for device_sim's .bin. The rows are the tensor
thread's (storage.py): tensor_files, tensor_writes, device_tensor_files, or FILE_LOST when the file
could not be written.

A log may come from elsewhere (a report folder a reader rebuilds: DESIGN.md's trust boundary): a path
in it is only a name the recorder gives (tensors/<id>.pt, tensors/<id>@<op id>.bin, tensors/<id>/ and
<device id>.pt), of the record's own tensor, in the report's own tensors/ (no link followed out of it);
its config is made through MemoryConfig's own checks; any other is refused, and counted as lost.

What stays with the tensor thread: values over LOG_VALUE_BYTES (the model would copy them, where the
thread writes them from the tensor's own memory: bench/README.md has the sizes where that pays), and
every value once the disk runs low (the thread finds it low too and records the loss).
"""

from __future__ import annotations

import ctypes
import os
import re
import stat
import time
from pathlib import Path

from ttreport.capturing.oplog import config_fields, memory_config
from ttreport.capturing.records import FILE_LOST, META, ROW, STOP, VALUES, Values
from ttreport.storage import TENSORS_DIR, DiskRoom, write_values

# The largest value the model copies into the log; bigger ones go to the tensor thread (bench/README.md, issue 14
# round 6: up to 64 KiB the log costs the model less than the thread's handoffs, from 256 KiB more).
LOG_VALUE_BYTES = 64 << 10
_TEXT: dict = {}  # torch dtype -> its text ("torch.bfloat16"): a dict hit is half of str()


class LogStorage:
    """The recorder's storage with an op log, items as the recorder plans them (tensor_id, path, value, dtype,
    layout, memory config[, operation_id | file name, device id]): put_with_op(items) just before the op's
    record (they go into its one write), put_many(items) as TensorStore's (written at once)."""

    def __init__(self, sink, store, report_dir, *, pt: bool = True, max_bytes: int | None = None):
        self.sink = sink
        self.store = store  # storage.TensorStore: the bigger values, and all of them once the disk runs low
        self.pt = pt  # .pt files (Config.detach_saved_tensors), else device_sim's .bin; a capture's own are .pt
        self.max_bytes = LOG_VALUE_BYTES if max_bytes is None else max_bytes
        self.room = DiskRoom(report_dir)
        self._budget = 0  # bytes the log may still take before the free space is looked at again
        self._configs: dict[int, tuple] = {}  # id(MemoryConfig) -> (it, its fields): a .bin's header names it

    def put_with_op(self, items) -> None:
        """Values of the op whose record the caller appends next: they wait with its pending records."""
        event = self.sink.event
        for record in self._records(items):
            event(record)

    def put_many(self, items) -> None:
        records = self._records(items)
        if records:
            self.sink.append_now(records)

    def _records(self, items) -> list:
        records, later = [], None
        for item in items:
            value = item[2]
            n = value.nbytes
            if n > self.max_bytes or not value.is_cpu or not self._room(n):
                later = later or []
                later.append(item)
                continue
            if not value.is_contiguous():
                value = value.contiguous()
            data = ctypes.string_at(value.data_ptr(), n) if n else b""  # one copy; marshal takes bytes as they are
            dtype = _TEXT.get(value.dtype) or _TEXT.setdefault(value.dtype, str(value.dtype))
            records.append((VALUES, item[0], item[1], dtype, tuple(value.shape), data, item[6:],
                            None if self.pt or item[3] is None else self._device(item)))
        if later:
            self.store.put_many(later)
        return records

    def _room(self, n: int) -> bool:
        # statvfs now and then, not per value: the log may take half of what is free beyond the database's margin
        # before looking again (the log, the db and the files it turns into share the rest).
        self._budget -= n
        if self._budget >= 0:
            return True
        if self.room.low is not None:
            return False
        try:
            free, keep = self.room.free_and_kept(n)
        except OSError as e:  # the report's folder is gone: the tensor thread meets it too, and records the loss
            self.room.low = f"the free space cannot be read ({e})"
            return False
        self._budget = (free - n - keep) // 2
        if self._budget >= 0:
            return True
        self.room.low = f"{free} bytes free, {keep} kept for the database"  # the tensor thread says the rest
        return False

    def _device(self, item) -> tuple:
        """A .bin's (device dtype, layout, its MemoryConfig's fields or None)."""
        cfg = item[5]
        hit = self._configs.get(id(cfg))
        if hit is None or hit[0] is not cfg:
            hit = self._configs[id(cfg)] = (cfg, None if cfg is None else config_fields(cfg))
        return int(item[3]), int(item[4]), hit[1]


# The names the recorder gives a stored tensor's files (recorder.Recorder._plan_*), all a log's path may be.
_FILE = re.compile(r"tensors/([0-9]+)(@[0-9]+)?\.(pt|bin)")  # a tensor's file, or an op's write into it (@op)
_MESH = re.compile(r"tensors/([0-9]+)/")  # a mesh tensor's folder of shards
_SHARD = re.compile(r"[0-9]+\.(pt|bin)")  # a shard's file in it: <device id>.pt


class FileWriter:
    """The writer process's end: convert(batch) writes the files of its VALUES records and puts their rows
    (or FILE_LOST) in their place; its losses join the capture's tensor thread's in report_metadata."""

    def __init__(self, report_dir):
        self.report_dir = Path(report_dir)
        self.room = DiskRoom(self.report_dir)
        self.files_written = self.files_lost = 0
        self.error: str | None = None  # the first failure, as the tensor thread words its warning
        self.cpu_s = 0.0  # this thread's CPU in writing the files: what bench/ calls the write time
        self._noted = False  # the losses are in the batch's closing notes
        self._lost: list[tuple] = []  # this batch's FILE_LOST records, repeated at the end of the next one

    def convert(self, batch: list) -> list:
        out: list = []
        lost, self._lost = self._lost, []
        for rec in batch:
            tag = rec[0]
            if tag == VALUES:
                row = self._write(rec)
                if row is None:
                    pass  # a lost write: the tensor's first file (and its row) stay as they were
                elif row[0] == FILE_LOST:
                    self._lost.append(row)
                else:
                    out.append(row)
            elif tag == META and rec[1] == "tensor_files_lost":  # the tensor thread's, noted at close: both counted
                out.append((META, rec[1], _count(rec[2]) + self.files_lost))
                self._noted = True
            elif tag == STOP:
                out += self.notes()
                out.append(rec)
            else:
                out.append(rec)
        # A lost file's `file` is cleared after the op that names it: its values come just before its record, in
        # the same write, or (another thread's op took them with its own) in an earlier one, at most a batch back.
        return out + lost + self._lost

    def notes(self) -> list:
        """The closing notes of this process's losses, unless the capture's notes had them already."""
        if not self.files_lost or self._noted:
            return []
        self._noted = True
        return [(META, "tensor_files_lost", self.files_lost), (META, "tensor_file_error", self.error)]

    def result(self) -> dict:
        return {"tensor_files_written": self.files_written, "tensor_files_lost": self.files_lost,
                "tensor_file_error": self.error, "tensor_write_cpu_s": self.cpu_s}

    def _write(self, rec) -> tuple | None:
        rec = tuple.__new__(Values, rec)
        tid, rel, dtype, shape, data, extra, device = rec.tensor_id, rec.path, rec.dtype, rec.shape, rec.data, \
            rec.extra, rec.device
        started = time.thread_time()
        try:
            path = self._path(tid, rel, extra)
            if type(data) is not bytes or type(shape) is not tuple:
                raise ValueError(f"values of {type(data).__name__} in a shape of {type(shape).__name__}")
            if device is not None:  # a .bin: its config made again through MemoryConfig's own checks
                if type(device) is not tuple or len(device) != 3:
                    raise ValueError(f"device placement {device!r:.80} is not (dtype, layout, memory config)")
                device = device[:2] + (None if device[2] is None else memory_config(device[2]),)
            self.room.check(len(data))
            facts = {"tensor_id": tid, **write_values(path, data, dtype, shape, device)}
            self.files_written += 1
        except Exception as e:  # a full disk must not stop the report, nor a record not of ttreport's making: counted
            self.files_lost += 1
            if self.error is None:
                self.error = f"ttreport: could not write tensor file {_shown(rel)} ({type(e).__name__}: {e})"
            return None if type(extra) is tuple and len(extra) == 1 else (FILE_LOST, tid)
        finally:
            self.cpu_s += time.thread_time() - started
        if len(extra) == 2:
            return ROW, "device_tensor_files", {**facts, "device_id": extra[1]}
        if len(extra) == 1:
            return ROW, "tensor_writes", {**facts, "operation_id": extra[0], "file": rel}
        return ROW, "tensor_files", facts

    def _path(self, tid, rel, extra) -> Path:
        """Where a VALUES record's file goes: a name the recorder gives tensor `tid`'s files, in the report's own
        tensors/ (made here if missing; refused if it, or a mesh tensor's folder in it, is not a folder but a
        link or a file). ValueError for any other path: an absolute one, a `..`, another tensor's."""
        if type(extra) is not tuple or type(tid) is not int or type(rel) is not str:
            raise ValueError("a record of another form than the recorder's (tensor id, path, extra)")
        if len(extra) == 2:  # a mesh tensor's device shard: tensors/<id>/<device id>.pt
            m, name = _MESH.fullmatch(rel), extra[0]
            ok = type(name) is str and _SHARD.fullmatch(name) is not None and type(extra[1]) is int
        else:
            m, name = _FILE.fullmatch(rel), rel[len(TENSORS_DIR) + 1:]
            ok = len(extra) == 0 or len(extra) == 1 and type(extra[0]) is int
        if m is None or not ok or int(m[1]) != tid:
            raise ValueError(f"not a name ttreport gives tensor {tid}'s file in {TENSORS_DIR}/ "
                             f"({TENSORS_DIR}/{tid}.pt, {TENSORS_DIR}/{tid}/<device id>.pt, ...)")
        folder = _own_folder(self.report_dir / TENSORS_DIR)
        if len(extra) == 2:
            folder = _own_folder(folder / str(tid))
        return folder / name


def _own_folder(path: Path) -> Path:
    """`path`, made if missing, once it is a folder itself: not a link (to somewhere out of the report)."""
    path.mkdir(exist_ok=True)  # a file there raises; a link to a folder passes here, and not below
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        raise NotADirectoryError(f"{path} is not a folder of the report's (a link, or a file)")
    return path


def _shown(rel) -> str:
    """A path from a log as a message shows it: as it is when it is one short line of text, else its repr, cut."""
    return rel if type(rel) is str and rel.isprintable() and len(rel) <= 200 else repr(rel)[:200]


def _count(value) -> int:
    """A count a log notes (an int, or its text), 0 for a value that is none (a log not of ttreport's making)."""
    try:
        return max(int(value), 0)
    except (TypeError, ValueError, OverflowError):
        return 0
