"""Tensor files with an op log: the model copies a stored tensor's bytes into the log with its op, and the
capture's tensor threads (storage.TensorStore, in the model's process) write the file from that same record.

    from ttreport.capturing.log_tensors import FileWriter, LogStorage
    storage = LogStorage(sink, tensor_store, report_dir)  # the capture's: Recorder(config, queue, storage)
    storage.put_with_op([(5, "tensors/5.pt", value, dtype, layout, memory_config)])  # the model's, before its OP
    files = FileWriter(report_dir)                        # the writer process
    batch = files.convert(batch)                          # VALUES records -> their rows (and a killed model's files)

Why both: the bytes in the op's own write cost the model ~3.6 µs (the log's page faults are most of it) and are
on disk (the page cache) once the op returns, so a SIGKILL of the model loses neither the op nor its file: the
writer process, or the next open, writes from the log the files that no row followed. And the files are written
beside the model, by threads whose open, write and rename let the GIL go, not by the writer process, which had
paced the model at its 90-350 µs of CPU a 2 KiB file on top of its SQLite (bench/README.md, issue 33: the loop
added 759-1,564 µs an op before, 76-169 after). A VALUES record is records.Values:

    (VALUES, tensor_id, path in the report, torch dtype text, shape, bytes, extra, device)

extra: () for a tensor's file, (operation_id,) for the values an op wrote into a stored tensor
(tensor_writes), (file name, device id) for a mesh shard; device: None for a .pt, or (device dtype,
layout, the MemoryConfig's fields: oplog.config_fields) for device_sim's .bin. The rows are the tensor
thread's (storage.py): tensor_files, tensor_writes, device_tensor_files, or FILE_LOST when the file
could not be written. The threads' row comes into the log after the record (LogStorage hands it over once the
log has it), so a record that no row follows by the log's end is a file not written yet.

A log may come from elsewhere (a report folder a reader rebuilds: DESIGN.md's trust boundary): a path
in it is only a name the recorder gives (tensors/<id>.pt, tensors/<id>@<op id>.bin, tensors/<id>/ and
<device id>.pt), of the record's own tensor, in the report's own tensors/ (no link followed out of it);
its config is made through MemoryConfig's own checks; any other is refused, and counted as lost.

What reaches the tensor threads without the log: values over LOG_VALUE_BYTES (the model would copy them, where
a thread writes them from the tensor's own memory: bench/README.md has the sizes where that pays), and every
value once the disk runs low (the threads find it low too and record the loss). A SIGKILL can lose those.
"""

from __future__ import annotations

import ctypes
import functools
import operator
import re
import time
from pathlib import Path

from ttreport.capturing.oplog import PACE_SLEEP_S, config_fields, memory_config
from ttreport.capturing.records import FILE_LOST, META, ROW, STOP, VALUES, Values
from ttreport.storage import TENSORS_DIR, DiskRoom, TensorFolder

# The largest value the model copies into the log; bigger ones go to the tensor thread (bench/README.md, issue 14
# round 6: up to 64 KiB the log costs the model less than the thread's handoffs, from 256 KiB more).
LOG_VALUE_BYTES = 64 << 10
_TEXT: dict = {}  # torch dtype -> its text ("torch.bfloat16"): a dict hit is half of str()
# How far the tensor threads may fall behind the model, in bytes of values (the writer process holds as many until
# their rows come): 32 MiB is ~16,000 files of 2 KiB, ~1 s of the threads' work on this 2-core VM.
LAG_BYTES = 32 << 20
CHECK_BYTES = 1 << 20  # values' bytes between two looks at the threads' lag and the free space (~500 2 KiB values)
BY_MODEL = "tensor_files_by_model"  # a META key: the capture's tensor threads write its files (FileWriter's)
_TAG = operator.itemgetter(0)
_ACTED_ON = frozenset((VALUES, META, STOP))  # the tags FileWriter.convert acts on; the others pass as they are
_ACTED_ON_WAITING = _ACTED_ON | {ROW, FILE_LOST}  # and these while VALUES records wait for their rows


class LogStorage:
    """The recorder's storage with an op log, items as the recorder plans them (tensor_id, path, value, dtype,
    layout, memory config[, operation_id | file name, device id]): put_with_op(items) just before the op's
    record (they go into its one write), put_many(items) as TensorStore's (written at once)."""

    def __init__(self, sink, store, report_dir, *, pt: bool = True, max_bytes: int | None = None):
        self.sink = sink
        self.store = store  # storage.TensorStore: writes every file; the bigger values reach it without the log
        self.pt = pt  # .pt files (Config.detach_saved_tensors), else device_sim's .bin; a capture's own are .pt
        self.max_bytes = LOG_VALUE_BYTES if max_bytes is None else max_bytes
        self.room = DiskRoom(report_dir)
        self._budget = 0  # bytes the log may still take before the free space and the threads are looked at again
        self._granted = 0  # the budget last given (the C hook takes its values' bytes from it too)
        self._sent = 0  # bytes of values handed to the tensor threads, as of the last look
        self._configs: dict[int, tuple] = {}  # id(MemoryConfig) -> (it, its fields): a .bin's header names it
        # The tensor threads write each value's file from its log record (the C hook hands them over too), and the
        # log says so first: the writer process then writes only the files no row follows (a killed model's).
        store.write_values = functools.partial(write_record, store.folder, store.room)
        self.handoff = store.queue.put
        sink.append((META, BY_MODEL, 1))

    def put_with_op(self, items) -> None:
        """Values of the op whose record the caller appends next: they wait with its pending records."""
        event, handoff = self.sink.event, self.handoff
        records = self._records(items)
        for record in records:
            event(record)
        for record in records:  # once the log has them: their rows come after them
            handoff(record)

    def put_many(self, items) -> None:
        records = self._records(items)
        if records:
            self.sink.append_now(records)
            for record in records:
                self.handoff(record)

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
        # statvfs now and then, not per value: the log may take half of what is free beyond the database's margin,
        # and at most CHECK_BYTES, before looking again (the log, the db and the files it turns into share the rest).
        self._budget -= n
        if self._budget >= 0:
            return True
        self._sent += self._granted - self._budget - n  # the values since the last look, the C hook's among them
        self._budget = self._granted = 0
        self._wait_for_threads()
        if self.room.low is not None:
            return False
        try:
            free, keep = self.room.free_and_kept(n)
        except OSError as e:  # the report's folder is gone: the tensor thread meets it too, and records the loss
            self.room.low = f"the free space cannot be read ({e})"
            return False
        grant = (free - n - keep) // 2
        if grant >= 0:
            self._sent += n
            self._budget = self._granted = min(grant, CHECK_BYTES)
            return True
        self.room.low = f"{free} bytes free, {keep} kept for the database"  # the tensor thread says the rest
        return False

    def _wait_for_threads(self) -> None:
        """Back-pressure, never loss: while the tensor threads are more than LAG_BYTES of values behind, the model
        waits until they are half as far (the writer process holds the values no row has followed yet)."""
        store = self.store
        if self._sent - store.values_done <= LAG_BYTES:
            return
        while self._sent - store.values_done > LAG_BYTES // 2 and store.is_alive():
            time.sleep(PACE_SLEEP_S)

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
    """The writer process's end (and a rebuild's): convert(batch) puts the rows of its VALUES records' files (or
    FILE_LOST) in their place; its losses join the capture's tensor threads' in report_metadata.

    Once the log says the capture's tensor threads write the files (BY_MODEL), a VALUES record waits here until the
    row its threads wrote for it comes (its file is there), and only the files of records that no row followed are
    written here, at the log's end: a killed model's last few. A log without it (an earlier ttreport's) has its
    files written here as they come."""

    def __init__(self, report_dir):
        self.report_dir = Path(report_dir)
        self.room = DiskRoom(self.report_dir)
        self.folder = TensorFolder(self.report_dir)  # held open until the log's end (notes)
        self.files_written = self.files_lost = 0
        self.error: str | None = None  # the first failure, as the tensor thread words its warning
        self.cpu_s = 0.0  # this thread's CPU in writing the files: what bench/ calls the write time
        self._noted = False  # the losses are in the batch's closing notes
        self._captures_lost = 0  # the tensor threads' losses, as the capture's closing notes gave them
        self._lost: list[tuple] = []  # this batch's FILE_LOST records, repeated at the end of the next one
        self._waiting: dict | None = None  # (kind, tensor id, op or device) -> its VALUES record, after BY_MODEL

    def convert(self, batch: list) -> list:
        lost, self._lost = self._lost, []
        waiting = self._waiting
        # A batch with none of the records the walk below acts on (every batch of a capture without stored
        # tensors but its first and last) is the batch as it is: 0.68-0.76 -> 0.27-0.30 µs of CPU an op (min of 15,
        # a 20,000-add log, 3 alternating pairs: bench/README.md issue 33, round 3b).
        if set(map(_TAG, batch)).isdisjoint(_ACTED_ON_WAITING if waiting else _ACTED_ON):
            return batch + lost if lost else batch
        out: list = []
        for rec in batch:
            tag = rec[0]
            if tag == VALUES:
                if waiting is not None and (key := _values_key(rec)) is not None:
                    waiting[key] = rec
                    continue
                self._convert(rec, out, self._lost)
            elif tag == ROW and waiting and rec[1] in _FILE_TABLES:
                key = _row_key(rec)
                if key is not None:
                    waiting.pop(key, None)
                out.append(rec)
            elif tag == FILE_LOST and waiting:
                for key in [k for k in waiting if k[1] == rec[1] and k[0] != "w"]:  # the file, or a mesh's shards
                    del waiting[key]
                out.append(rec)
            elif tag == META and rec[1] == BY_MODEL:
                waiting = self._waiting = {} if waiting is None else waiting
            elif tag == META and rec[1] == "tensor_files_lost":  # the tensor thread's, noted at close: both counted
                self._captures_lost = _count(rec[2])
                out.append((META, rec[1], self._captures_lost + self.files_lost))
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
        """At the log's end: the files of the VALUES records no row followed (written now), then the closing notes
        of this process's losses (again, if the capture's notes came before some of them)."""
        out: list = []
        waiting, self._waiting = self._waiting or {}, None if self._waiting is None else {}
        lost_before = self.files_lost
        for rec in waiting.values():  # after every op of the log: a lost file's FILE_LOST goes with its row
            self._convert(rec, out, out)
        self.folder.close()  # opened again should more come
        if self._noted and self.files_lost > lost_before:
            self._noted = False  # said again, with these
        if not self.files_lost or self._noted:
            return out
        self._noted = True
        return out + [(META, "tensor_files_lost", self._captures_lost + self.files_lost),
                      (META, "tensor_file_error", self.error)]

    def result(self) -> dict:
        return {"tensor_files_written": self.files_written, "tensor_files_lost": self.files_lost,
                "tensor_file_error": self.error, "tensor_write_cpu_s": self.cpu_s}

    def _convert(self, rec, out: list, lost: list) -> None:
        row = self._write(rec)
        if row is None:
            pass  # a lost write: the tensor's first file (and its row) stay as they were
        elif row[0] == FILE_LOST:
            lost.append(row)
        else:
            out.append(row)

    def _write(self, rec) -> tuple | None:
        started = time.thread_time()
        try:
            row = write_record(self.folder, self.room, rec)
            self.files_written += 1
            return row
        except Exception as e:  # a full disk must not stop the report, nor a record not of ttreport's making: counted
            self.files_lost += 1
            if self.error is None:
                self.error = f"ttreport: could not write tensor file {_shown(rec[2])} ({type(e).__name__}: {e})"
            extra = rec[6]
            return None if type(extra) is tuple and len(extra) == 1 else (FILE_LOST, rec[1])
        finally:
            self.cpu_s += time.thread_time() - started


_FILE_TABLES = frozenset({"tensor_files", "tensor_writes", "device_tensor_files"})


def _values_key(rec) -> tuple | None:
    """What a VALUES record's file is, as its row says it: ("f", tensor id), ("w", tensor id, op id) for an op's
    write into it, ("d", tensor id, device id) for a mesh shard; None for a record not of the recorder's form."""
    tid, extra = rec[1], rec[6]
    if type(tid) is not int or type(extra) is not tuple:
        return None
    if not extra:
        return "f", tid
    if type(extra[-1]) is not int or len(extra) > 2:
        return None
    return ("w" if len(extra) == 1 else "d"), tid, extra[-1]


def _row_key(rec) -> tuple | None:
    """_values_key of the file a tensor_files, tensor_writes or device_tensor_files row is of (None: not a row)."""
    facts = rec[2] if len(rec) > 2 else None
    if type(facts) is not dict or type(facts.get("tensor_id")) is not int:
        return None
    table = rec[1]
    if table == "tensor_files":
        return "f", facts["tensor_id"]
    other = facts.get("operation_id" if table == "tensor_writes" else "device_id")
    return (("w" if table == "tensor_writes" else "d"), facts["tensor_id"], other) if type(other) is int else None


def write_record(folder: TensorFolder, room: DiskRoom, rec) -> tuple:
    """Write a VALUES record's file into the report's tensors/ folder; its row (ROW, table, facts). Raises for a file
    that cannot be written, and (ValueError) for a record of another form than the recorder's: a log may come from
    elsewhere."""
    if len(rec) != len(Values._fields):
        raise ValueError(f"a VALUES record of {len(rec)} fields, not records.Values' {len(Values._fields)}")
    _, tid, rel, dtype, shape, data, extra, device = rec
    name, sub = _name(tid, rel, extra)
    if type(data) is not bytes or type(shape) is not tuple:
        raise ValueError(f"values of {type(data).__name__} in a shape of {type(shape).__name__}")
    if device is not None:  # a .bin: its config made again through MemoryConfig's own checks
        if type(device) is not tuple or len(device) != 3:
            raise ValueError(f"device placement {device!r:.80} is not (dtype, layout, memory config)")
        device = device[:2] + (None if device[2] is None else memory_config(device[2]),)
    room.check(len(data))
    facts = folder.write_values(name, data, dtype, shape, device, sub)
    facts["tensor_id"] = tid
    if len(extra) == 2:
        facts["device_id"] = extra[1]
        return ROW, "device_tensor_files", facts
    if len(extra) == 1:
        facts["operation_id"], facts["file"] = extra[0], rel
        return ROW, "tensor_writes", facts
    return ROW, "tensor_files", facts


def _name(tid, rel, extra) -> tuple[str, str | None]:
    """A VALUES record's file: its name in the report's tensors/, and the mesh tensor's folder there it is in (None
    for a tensor's own file), once it is a name the recorder gives tensor `tid`'s files. ValueError for any other
    path: an absolute one, a `..`, another tensor's."""
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
    return name, (m[1] if len(extra) == 2 else None)


def _shown(rel) -> str:
    """A path from a log as a message shows it: as it is when it is one short line of text, else its repr, cut."""
    return rel if type(rel) is str and rel.isprintable() and len(rel) <= 200 else repr(rel)[:200]


def _count(value) -> int:
    """A count a log notes (an int, or its text), 0 for a value that is none (a log not of ttreport's making)."""
    try:
        return max(int(value), 0)
    except (TypeError, ValueError, OverflowError):
        return 0
