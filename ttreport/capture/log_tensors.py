"""Tensor files through the op log: the model copies a stored tensor's bytes into the log with its op,
and the writer process writes the file from them (Config(writer="process"), the default).

    from ttreport.capture.log_tensors import FileWriter, LogStorage
    storage = LogStorage(sink, tensor_store, report_dir)  # the capture's: Recorder(config, queue, storage)
    storage.put_with_op([(5, "tensors/5.pt", value, dtype, layout, memory_config)])  # the model's, before its OP
    files = FileWriter(report_dir)                        # the writer process
    batch = files.convert(batch)                          # VALUES records -> the files, and their rows

Why: with a tensor thread in the model's process, the model paid for each 2 KiB file in GIL handoffs
(bench/README.md, issue 14 round 5: ~150 µs of that thread's CPU a file, 13-16 % of it on the model's
thread). Copying 2 KiB into the op's own write costs it ~3.6 µs (the log's page faults are most of it),
and the bytes are on disk (the page cache) once the op returns: a SIGKILL of the model loses neither
the op nor its file, which the writer process, or the next open, writes from the log. A VALUES record is

    (VALUES, tensor_id, path in the report, torch dtype text, shape, bytes, extra, device)

extra: () for a tensor's file, (operation_id,) for the values an op wrote into a stored tensor
(tensor_writes), (file name, device id) for a mesh shard; device: None for a .pt, or (device dtype,
layout, MemoryConfig pickled) for device_sim's .bin. The rows are the tensor thread's (storage.py):
tensor_files, tensor_writes, device_tensor_files, or FILE_LOST when the file could not be written.

What stays with the tensor thread: values over LOG_VALUE_BYTES (the model would copy them, where the
thread writes them from the tensor's own memory: bench/README.md has the sizes where that pays), and
every value once the disk runs low (the thread finds it low too and records the loss).
"""

from __future__ import annotations

import ctypes
import pickle
import time
from pathlib import Path

from ttreport.capture.recorder import FILE_LOST, META, ROW, STOP
from ttreport.storage import TENSORS_DIR, DiskRoom, write_values

VALUES = 19  # a tag of the log only: under oplog's definitions (20-26), above the recorder's (0-10)
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
        self._configs: dict[int, tuple] = {}  # id(MemoryConfig) -> (it, pickled): a .bin's header names it

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
        """A .bin's (device dtype, layout, pickled MemoryConfig or None)."""
        cfg = item[5]
        hit = self._configs.get(id(cfg))
        if hit is None or hit[0] is not cfg:
            hit = self._configs[id(cfg)] = (cfg, None if cfg is None else pickle.dumps(cfg))
        return int(item[3]), int(item[4]), hit[1]


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
                out.append((META, rec[1], int(rec[2]) + self.files_lost))
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
        _, tid, rel, dtype, shape, data, extra, device = rec
        started = time.thread_time()
        try:
            (self.report_dir / TENSORS_DIR).mkdir(exist_ok=True)
            path = self.report_dir / rel
            if len(extra) == 2:  # a mesh tensor's device shard: tensors/<id>/<device id>.pt
                path.mkdir(exist_ok=True)
                path = path / extra[0]
            self.room.check(len(data))
            facts = {"tensor_id": tid, **write_values(path, data, dtype, shape, device)}
            self.files_written += 1
        except Exception as e:  # a full disk must not stop the report; the loss is recorded
            self.files_lost += 1
            if self.error is None:
                self.error = f"ttreport: could not write tensor file {rel} ({type(e).__name__}: {e})"
            return None if len(extra) == 1 else (FILE_LOST, tid)
        finally:
            self.cpu_s += time.thread_time() - started
        if len(extra) == 2:
            return ROW, "device_tensor_files", {**facts, "device_id": extra[1]}
        if len(extra) == 1:
            return ROW, "tensor_writes", {**facts, "operation_id": extra[0], "file": rel}
        return ROW, "tensor_files", facts

