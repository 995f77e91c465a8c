"""The op log: what the model's threads append to, on disk the moment an op returns, for the writer process.

    from ttreport.capturing.oplog import LogSink, LogTail
    sink = LogSink(Path("run/oplog"))                                 # the capturing process
    sink.append((META, "status", "complete"))                         # a recorder record, as recorder.py makes it
    tail = LogTail(Path("run/oplog"))                                 # the writer process
    records, more = tail.read(2000)                                   # the same records, for writer.Writer

Records are the recorder's tuples (recorder.py), made by it as they are written here: ints,
strings, bytes and tuples only, marshalled (version 2: no reference table to build). What a record
refers to by id or number is defined once, before the first record that uses it, when the recorder
first sees it (define_stack, define_config, define_device, wire): a code object of a stack trace as
(CODE, id, filename, name), a stack (the recorder's code ids and lines) as (STACK, n, frames), a
MemoryConfig as (CFG, id, its fields by name and number: config_fields), a device's performance
config as (DEVICE_PERF, id, ...), any other argument value as (OBJ, n, its text), a program's static
part as (PROG, n, name, factory, CBs, core ranges, CB bytes). In an OP record a stack is its number, a tensor argument
b"t<id>", another object b"o<n>"; a launch is (PROGRAM, op_id, n, program_id, device_id, cb_base).
Values are never sent twice. An op is one write: its record with the definitions, buffer events,
programs and rows that came before it (and after the op before it). Those wait in a list that any
thread appends to without a lock (list.append is atomic); the op's write takes what is there.
LogTail.read hands writer.Writer the recorder's thread-writer form: frames as code ids and lines,
TensorArg, argument texts, Program objects. (It still reads a log written before PROG: (CBS, n,
CBs) and (PROGRAM, op_id, (name, factory, cbs n, ranges, cb_bytes, program_id, device_id, cb_base)).)

The log is a folder of segment files (`000001.seg`, ...), each created at its full size (zeros) and
mmap'ed shared: a record's bytes are in the page cache as soon as they are copied in, so SIGKILL of
the model loses nothing it appended. A record is 4 bytes of length then its payload; the payload is
copied first and the length last, so a record whose length reads 0 is not written yet, and a tail
torn by a kill (a length with half a payload) fails to unmarshal and ends the log. END in a length
slot means "continued in the next segment".

The whole log is kept until the report is closed: the writer process, or a reader after it was
killed too, can always rebuild the report from it (ttreport.capturing.writer_process.finish_from_log).
A reader's log may come from elsewhere (a report folder is data: DESIGN.md), so nothing in it is ever
unpickled, and LogTail checks each write before marshal reads it (LogTail's docstring).
"""

from __future__ import annotations

import itertools
import marshal
import mmap
import os
import re
import stat
import struct
import sys
import threading
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

from device_sim.device_work import CircularBuffer, Program
from device_sim.types import (
    BufferType,
    CoreRange,
    CoreRangeSet,
    MemoryConfig,
    NdShardSpec,
    ShardDistributionStrategy,
    ShardOrientation,
    ShardSpec,
    TensorMemoryLayout,
)
from ttreport.capturing import records
from ttreport.capturing.log_perf import COLUMNS as PERF_COLUMNS
from ttreport.capturing.log_perf import MAX_TENSORS, LogPerf, device_fields
from ttreport.capturing.records import (
    ALLOC,
    CBS,
    CFG,
    CODE,
    DEVICE,
    DEVICE_PERF,
    FLUSH,
    FREE,
    META,
    OBJ,
    OP,
    PROG,
    PROGRAM,
    ROW,
    STACK,
    STOP,
    AllocField,
    OpField,
    TensorArg,
    Text,
)
from ttreport.capturing.writer import MAX_VALUE_CHARS
from ttreport.errors import LossWarner, ReportIncompleteWarning
from ttreport.folder import segment_path

try:
    from ttreport.capturing import _logread
except ImportError:  # built without a C compiler: the Python read
    _logread = None

# The writer process's read of its own log in C (_logread.c: the writes' marshal and LogTail._decode's common
# records, every other record by the Python below, which stays the specification: TTREPORT_PURE=1 runs it, and
# tests/test_logread.py holds the two equal record for record). A log from a folder is always read in Python.
NATIVE = _logread is not None and os.environ.get("TTREPORT_PURE", "") in ("", "0")

# An OP record's fields that the log writes otherwise than the recorder makes them (records.Op)
_STACK, _ARGS, _KWARGS, _SPECS, _ERROR = (int(f) for f in (OpField.STACK, OpField.ARGS, OpField.KWARGS, OpField.SPECS,
                                                          OpField.ERROR))
_BUFFER = int(AllocField.BUFFER)  # records.AllocPages' Buffer
_ALLOC_WIDTH = len(records.Alloc._fields)  # an ALLOC record without its Buffer's attributes (records.AllocPages')
_LAUNCH_WIDTH = len(records.ProgramLaunch._fields)
assert records.ProgramLaunch._fields[3:] == Program._fields[-3:], "LogTail._decode makes a Program of a launch so"
assert _ARGS == _STACK + 1 and _KWARGS == _ARGS + 1 and _ERROR > _KWARGS, "LogTail._op rebuilds an op in this order"
SEGMENT_BYTES = 32 << 20  # a 1M-op capture of small ops fills ~9 of them (~280 B an op)
END = 0xFFFFFFFF
_LEN = struct.Struct("<I")
MAX_OBJECTS = 200_000  # argument objects whose text is remembered by id (the writer's cache bound)
_PRIMITIVE = (int, float, bool, str, type(None))
_WIRED = (bytes, list, tuple)  # what may hold a tensor or an object by reference
# Buffer events, programs and rows between ops wait for the next op's record (one write an op). A kill can
# lose those of the ops after the last one (a free), never an op; anything else is written at once.
_WITH_NEXT_OP = frozenset({ALLOC, FREE, PROGRAM, ROW})
_PLAIN_TAGS = frozenset({ALLOC, FREE})  # ints only: marshalled as they are
_CLOSING = frozenset({META, FLUSH, STOP})  # may go into a segment's reserve
MIN_SEGMENT_BYTES = 256 << 10
RESERVE_BYTES = 64 << 10  # the end of each segment kept for the closing notes (capture.RESERVE_BYTES' reason)
RETRY_EVERY = 1000  # records lost between two tries to make a new segment on a full disk
# Back-pressure by bytes: the model waits while the writer process has more than LAG_BYTES of the log still to
# write. What it has not written when the loop ends is the close: ~330 B an op of small ops at 15-25k ops per
# writer CPU second, so 16 MiB (~50,000 ops, as many as the thread writer's queue_max of records holds) is
# 2-3.5 s of close. Without it, a writer slower than the model fell 4 segments (~400,000 ops) behind, and a
# 1,000,000-op capture's close took 36-67 s. A 20,000-op loop's log (~6.6 MB) never waits.
LAG_BYTES = 16 << 20
# Past the first LAG_SHRINK_BYTES of log (~100,000 small ops) a capture waits for its writer whatever the bound: the
# writer writes fewer ops a second than the model makes, so the bound decides only how much of the writer's work is
# left for the close, not how much the loop waits in all. From there the model waits while LATE_LAG_BYTES (~12,000
# small ops) is unwritten: 1,000,000 adds at load 8 ended 6,400 ops behind against 34,500, the close 15.8 s against
# 20.1 (loop 126 s against 142); a bound of 4 MiB from the start took 100,000 adds' close 3.83 -> 1.63 s, loop and
# close 13.0 -> 11.0 s, but a 20,000-add loop (~6 MB of log) slept 0.5-0.8 s of its 1.0-1.4 s (bench/README.md,
# issue 33, start33).
LAG_SHRINK_BYTES = 32 << 20
LATE_LAG_BYTES = 4 << 20
PACE_BYTES = 1 << 20  # how often (bytes of log written) the writer's progress is looked at: an int compare an op
# The log's pages are faulted in ahead of the writes, PACE_BYTES at a time, up to PREFAULT_BYTES past the offset:
# Linux 5.14's madvise(MADV_POPULATE_WRITE), one call where each 4 KiB page was a fault on the model's thread
# (bench/README.md, issue 14 round 7: ~0.5 µs an op less with 2 KiB stored outputs). Only what the next few
# thousand ops write is made dirty, not the whole segment. Elsewhere (an older kernel: EINVAL) it is left off.
PREFAULT_BYTES = 2 * PACE_BYTES
# The first segment only as big as its prefault: a short capture's log (a test's: ~10-100 KB) paid for 32 MiB of
# blocks and 2 MiB of pages, 9-22 ms of each start against ~1 ms for 2 MiB (load 6; bench/README.md, the plugin).
FIRST_SEGMENT_BYTES = PREFAULT_BYTES
_MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23 if sys.platform == "linux" else None)
PACE_SLEEP_S = 0.01  # between looks while the model waits (a 1 ms poll cost 3-5 µs an op of stored outputs)
# The model waits for its writer process only while that process moves: once its count of bytes written has not
# changed for WRITER_STALL_S, the model goes on (the log keeps every op: only the close is longer), and waits again
# only once the count moves. A working writer moves it once a batch: 30,000 steps of add and matmul on 2 busy cores
# (load 2.6) saw a median of 0.05 s between moves and at most 0.1 s, 0.28 s with every tensor stored; 10 s is 35
# times that. A writer stopped (SIGSTOP) or stuck never moves it, and the model waited for ever (issue 29: 2 of 9
# runs of 30,000 ops storing every tensor on a 6 MiB disk, where the segment note it waited on went stale).
WRITER_STALL_S = 10.0
_COUNT = struct.Struct("<Q")  # the writer process's count of log bytes written to SQLite, in shared memory
_new_tuple = tuple.__new__  # a PROGRAM record's Program, without the NamedTuple's Python __new__
_FULL, _WAIT, _NEXT = 0, 1, 2  # where LogTail._writes stopped: n records read, a write not there yet, segment's end


class LogSink:
    """The capturing process's end: append(record) from any thread; len() is 0 (nothing waits in memory)."""

    def __init__(self, folder: Path, *, lag_segments: int = 4, lag_bytes: int | None = None):
        self.folder = Path(folder)
        self.folder.mkdir(exist_ok=True)
        self._code = None  # id -> code object: the recorder's code(), for CODE definitions (set by the capture)
        # Re-entrant: the capture's SIGTERM handler (session.py) closes the report in the thread the signal lands
        # in, possibly between the bytecodes of an append holding this lock; its closing notes and STOP are then
        # written over the unfinished op (which had not returned) and the process ends by the signal. A plain
        # Lock hung there: 1 SIGTERM in 30 at a random time, none with the thread writer's lock-free queue.
        self._lock = threading.RLock()
        self._sent_codes: set[int] = set()
        self._programs: dict[tuple, tuple] = {}  # a program's static part (see program()) -> (number, CBs, ranges)
        self._objects: dict[int, tuple] = {}  # id(value) -> (n, value): held, so the id stays unique
        self._numbers = itertools.count(1)  # of stacks, programs and objects: next() is atomic, no lock needed
        # Records that go into the log with the next op's (buffer events, rows). Appended without the lock (one
        # list.append, atomic), taken under it by slicing what is there: an append meanwhile lands after it.
        self._pending: list = []
        self._segment = 0
        self._mm = None
        self._off = 0
        self._done = 0  # bytes of the segments before this one: with _off, what the log holds in all
        self._check_at = PACE_BYTES  # the offset in this segment at which the writer's progress is read next
        self._prefaulted = 0  # the offset in this segment up to which its pages are faulted in
        self.lag_segments = lag_segments
        self.lag_bytes = LAG_BYTES if lag_bytes is None else lag_bytes
        self._behind = False  # a new segment found the writer lag_segments behind: the next op waits for it
        self._starts = [0]  # where each segment begins, in bytes of the whole log: segment n's is _starts[n - 1]
        self._pacing = threading.Lock()  # one thread at a time looks at the writer (is_alive reaps it)
        # Shared memory: the writer process writes its count of log bytes written into it after each batch
        # (writer_process.pump); in RAM, so a full disk cannot freeze it. A memfd, so that a writer process forked
        # before this capture (writer_process.Spare) can be handed it; anonymous memory where there is none.
        self.progress_fd = os.memfd_create("ttreport-progress", os.MFD_CLOEXEC) if hasattr(os, "memfd_create") \
            else None
        if self.progress_fd is not None:
            os.ftruncate(self.progress_fd, _COUNT.size)
        self.progress = mmap.mmap(-1 if self.progress_fd is None else self.progress_fd, _COUNT.size)
        self._stalled_at = -1  # the writer's count when the model last stopped waiting for it (WRITER_STALL_S)
        self.waiting = False  # a thread waits for the writer process now (the perf rows' Chase works meanwhile)
        self.on_wait = lambda: None  # called as a wait begins (the capture starts its Chase then, not at its start)
        self.writer_alive = lambda: False  # set by the capture: back-pressure waits only while it runs
        self.warner = LossWarner()  # the capture's, shared with the tensor thread: one warning a capture
        self.error: OSError | None = None  # why the log could not grow (a full disk)
        self.records_lost = self.ops_lost = 0
        self.stop_lost = False
        self._new_segment(0)

    def __len__(self) -> int:
        return 0  # the recorder's queue checks: nothing is held in memory, so it never wakes or waits

    def close(self) -> None:
        with self._lock:
            if self._mm is not None:
                self._mm.close()
                self._mm = None
            if self.progress_fd is not None:
                os.close(self.progress_fd)  # (the mapping stays: it holds the memory)
                self.progress_fd = None

    # -- writing -------------------------------------------------------------------------
    def append(self, record) -> None:
        tag = record[0]
        if tag == OP:
            e = record[_ERROR]
            if e is not None:  # an error (records.Error): its traceback as text
                record = record[:_ERROR] + ((e[0], e[1], "".join(e[2].format()), e[3]),) + record[_ERROR + 1:]
            with self._lock:  # the definitions before it (appended when first seen) and the op: one write
                pending = self._pending  # _take_pending() and _write(), inlined: this runs for every op
                k = len(pending)
                out = pending[:k]
                del pending[:k]
                out.append(record)
                data = marshal.dumps(out, 2)
                n, off = len(data), self._off
                if off + n + 8 > self._room:  # past the segment, less its reserve: roll or lose it there
                    self._write(data)
                    return
                mm = self._mm
                mm[off + 4:off + 4 + n] = data
                _LEN.pack_into(mm, off, n)  # last: the record is whole once its length is there
                self._off = off + 4 + n
            # Waits happen here, never holding the lock: a SIGTERM handler that closes the capture (session.py)
            # runs in this thread during the sleep, and appends the closing notes itself.
            if self._off >= self._check_at:
                self._pace()
            if self._behind:
                self._behind = False
                self._back_pressure()
            return
        if tag == ALLOC and records.kind(record) is records.AllocPages:  # the Buffer for buffer_pages: by name
            b = record[_BUFFER]
            record = record[:_BUFFER] + ({"device_id": b.device_id, "max_size_per_bank": b.max_size_per_bank,
                                     "page_size": b.page_size, "buffer_layout": int(b.buffer_layout),
                                     "cores": _plain(getattr(b, "cores", None)), "num_pages": b.num_pages,
                                     "num_banks": b.num_banks, "address": b.address,
                                     "buffer_type": int(b.buffer_type)},)
        elif tag == PROGRAM:
            record = records.view(record)  # a ProgramRun: the recorder's Program
            self.program(record.operation_id, record.program)
            return
        elif tag in (FLUSH, STOP):
            record = (tag, record[1] if type(record[1]) is int else None)
        elif tag not in _PLAIN_TAGS:
            record = _plain(record)  # a torch.Size, an enum or a numpy number in a row: as plain values
        if tag in _WITH_NEXT_OP:
            self._pending.append(record)
            return
        with self._lock:
            out = self._take_pending()
            out.append(record)
            self._write(marshal.dumps(out, 2), closing=tag in _CLOSING)

    def event(self, record: tuple) -> None:
        """A buffer event of ints only (ALLOC without pages, FREE): it goes into the log with the next op."""
        self._pending.append(record)

    def append_now(self, records: list) -> None:
        """Records of plain values (ints, strings, bytes, tuples: log_tensors.py's tensor values), written at
        once with what is pending: one write, on disk when this returns."""
        with self._lock:
            out = self._take_pending()
            out += records
            self._write(marshal.dumps(out, 2))

    def program(self, op_id, p) -> None:
        """A device program op `op_id` launched: its static part (name, factory, CBs, core ranges, CB bytes) is
        defined once as (PROG, n, ...), each launch is (PROGRAM, op_id, n, program_id, device_id, cb_base)."""
        cbs, ranges = p.cbs, p.ranges
        key = (id(cbs), id(ranges), p.name, p.factory, p.cb_bytes)
        hit = self._programs.get(key)
        if hit is None or hit[1] is not cbs or hit[2] is not ranges:
            if len(self._programs) >= MAX_OBJECTS:
                self._programs.clear()  # redefined under new numbers when launched again
            n = next(self._numbers)
            plain = ranges if type(ranges) is tuple and all(type(r) is tuple for r in ranges) else \
                tuple(tuple(r) for r in ranges)
            self._pending.append((PROG, n, p.name, p.factory, tuple(tuple(c) for c in cbs), plain, p.cb_bytes))
            hit = self._programs[key] = (n, cbs, ranges)  # held: their ids stay theirs
        self._pending.append((PROGRAM, op_id, hit[0], p.program_id, p.device_id, p.cb_base))

    def _take_pending(self) -> list:
        # Holding the lock. Two atomic steps: what another thread appends in between stays for the next write.
        pending = self._pending
        n = len(pending)
        out = pending[:n]
        del pending[:n]
        return out

    def _write(self, data: bytes, closing: bool = False) -> None:
        # Holding the lock. One write an op: its record with the buffer events, programs and rows before it.
        # The last RESERVE_BYTES of a segment are kept for the closing notes, flushes and STOP: when the disk
        # is full and no next segment can be made, the report can still be closed and say what it lost.
        n = len(data)
        mm, off = self._mm, self._off
        if off + 4 + n + 4 > len(mm) - (0 if closing else RESERVE_BYTES):
            if not self._roll(n):
                if closing and off + 4 + n + 4 <= len(mm):
                    pass  # into the reserve
                else:
                    self._lose(data)
                    return
            mm, off = self._mm, self._off
        mm[off + 4:off + 4 + n] = data
        _LEN.pack_into(mm, off, n)  # last: the record is whole once its length is there
        self._off = off + 4 + n

    def _roll(self, n: int) -> bool:
        """Continue in a new segment; False (nothing changed) when the disk has no room for one."""
        if self.error is not None and self.records_lost % RETRY_EVERY:
            return False  # the disk was full: tried again every RETRY_EVERY lost records, not every one
        old, old_off = self._mm, self._off
        try:
            self._new_segment(n + 8 + RESERVE_BYTES)
        except OSError as e:
            if self.error is None:
                self.error = e
                self.warner.warn(f"ttreport: the op log in {self.folder} cannot grow ({type(e).__name__}: {e}); "
                                 f"ops from here on are not recorded, and are counted")
            return False
        _LEN.pack_into(old, old_off, END)  # after the next segment exists: a reader finds it
        old.close()
        self._done += old_off  # as LogTail counts it: up to the END mark
        self._starts.append(self._done)
        self._behind = True  # the next op looks at the writer's progress, once the lock is let go
        return True

    def _lose(self, data: bytes) -> None:
        recs = marshal.loads(data)
        self.records_lost += len(recs)
        self.ops_lost += sum(1 for r in recs if r[0] == OP)
        self.stop_lost = self.stop_lost or recs[-1][0] == STOP  # the writer process must be told otherwise

    def _new_segment(self, needed: int) -> None:
        # On a small or nearly full disk, segments of an eighth of what is free (at least MIN_SEGMENT_BYTES):
        # the db the writer process makes from them needs room too.
        st = os.statvfs(self.folder)
        full = min(SEGMENT_BYTES, FIRST_SEGMENT_BYTES) if self._segment == 0 else SEGMENT_BYTES
        size = max(min(full, st.f_bavail * st.f_frsize // 8), MIN_SEGMENT_BYTES, needed)
        path = segment_path(self.folder, self._segment + 1)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            # Its blocks taken now: a page of a sparse file written through mmap on a full disk is SIGBUS.
            os.posix_fallocate(fd, 0, size)
            mm = mmap.mmap(fd, size)
        except OSError:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(tmp, path)  # appears whole, at its full size
        self._segment += 1
        self._mm, self._off = mm, 0
        self._check_at = PACE_BYTES
        self._room = size - RESERVE_BYTES  # where an op's write stops (the rest is the closing notes')
        self._prefaulted = 0
        self._prefault()

    def _prefault(self) -> None:
        global _MADV_POPULATE_WRITE
        mm, start = self._mm, self._prefaulted  # start: a multiple of PACE_BYTES, so of the page size
        if _MADV_POPULATE_WRITE is None or mm is None:
            return
        end = min((self._off + PREFAULT_BYTES) // mmap.PAGESIZE * mmap.PAGESIZE, len(mm))
        if end <= start:
            return
        try:
            mm.madvise(_MADV_POPULATE_WRITE, start, end - start)
        except OSError:  # a kernel without it: the pages fault one by one, as before
            _MADV_POPULATE_WRITE = None
            return
        self._prefaulted = end

    def _pace(self) -> None:
        # Not holding the lock (each thread that appends waits on its own). Never loss: only a wait, and only
        # while the writer process runs and moves. Read and written without the lock: a look more or less is
        # harmless.
        with self._lock:  # the segment may not roll meanwhile
            self._prefault()
        with self._pacing:
            self._check_at = self._off + PACE_BYTES
            written = self._done + self._off
            lag = self.lag_bytes if written < LAG_SHRINK_BYTES else min(self.lag_bytes, LATE_LAG_BYTES)
            # Once behind, until half as far behind, looking every PACE_SLEEP_S: each look costs the model's
            # thread ~25 µs of CPU on a loaded machine, and the writer moves its count once a batch (~50 ms).
            if written - self._count() > lag:
                self._wait_for_writer(written - lag // 2)

    def _back_pressure(self) -> None:
        # Never loss: the model waits while the writer is more than lag_segments behind (a few ms per segment
        # of small ops normally; only a writer that cannot keep up at all makes it wait): until its count of
        # bytes written reaches the segment lag_segments before this one.
        n = self._segment - self.lag_segments
        if n >= 1:
            with self._pacing:
                self._wait_for_writer(self._starts[n - 1])

    def _count(self) -> int:
        return _COUNT.unpack_from(self.progress)[0]

    def written(self) -> int:
        """Bytes of this log the writer process has written into the db so far (shared memory: no system call)."""
        return self._count()

    def unwritten(self) -> int:
        """Bytes of this log the writer process has still to write into the db (read without the lock: a look)."""
        return self._done + self._off - self._count()

    def _wait_for_writer(self, until: int) -> None:
        """Sleep until the writer process has written `until` bytes of the log, it has ended, or it has not moved
        for WRITER_STALL_S (then not again until it moves)."""
        count = self._count()
        moved = time.monotonic()
        self.waiting = True
        try:
            self.on_wait()
            while count < until and count != self._stalled_at and self.writer_alive():
                time.sleep(PACE_SLEEP_S)
                now = self._count()
                if now != count:
                    count, moved = now, time.monotonic()
                elif time.monotonic() - moved > WRITER_STALL_S:
                    self._stalled_at = count
        finally:
            self.waiting = False

    # -- what a record refers to -------------------------------------------------------------
    def define_stack(self, frames: tuple) -> int:
        """The number records carry for a stack (the recorder's code ids and lines): defined here, once."""
        code, sent, out = self._code, self._sent_codes, []
        for code_id in frames[::2]:
            if code_id not in sent:
                c = code(code_id)
                sent.add(code_id)
                out.append((CODE, code_id, c.co_filename, c.co_name))
        n = next(self._numbers)
        out.append((STACK, n, frames))
        self._pending.extend(out)  # one call: the code objects and the stack stay together
        return n

    def define_config(self, config_id: int, cfg) -> None:
        """A MemoryConfig the recorder's specs name by id: its fields (config_fields), from which the writer
        makes the config again (it may ask it anything: its text for a placed tensor)."""
        self._pending.append((CFG, config_id, config_fields(cfg)))

    def define_device(self, device) -> None:
        """A chip's PerfConfig, for the estimates the writer process makes (ttreport.capturing.log_perf)."""
        self._pending.append((DEVICE_PERF, device.device_id, device_fields(device)))

    def wire(self, v):
        """An argument value that is not an int, float, bool, str, None or tensor, as b"o<n>" (its text defined
        once), or a list or tuple of values so."""
        return self._wire(v, self._pending)

    def _wire(self, v, out: list):
        """An argument as marshal holds it: a tensor as b"t<id>", a value that is not a plain int, float, bool,
        str or None (nor a list or tuple of such) as b"o<n>" with its text defined once."""
        t = type(v)
        if t in _PRIMITIVE:
            return v
        if t is list or t is tuple:
            return t(self._wire(e, out) for e in v)
        hit = self._objects.get(id(v))
        if hit is None or hit[1] is not v:
            if len(self._objects) >= MAX_OBJECTS:
                self._objects.clear()  # redefined under new numbers when seen again
            n = next(self._numbers)
            out.append((OBJ, n, value_text(v)))  # before the number is known to other threads
            hit = self._objects[id(v)] = (n, v)
        return b"o%d" % hit[0]


class LogQueue:
    """The recorder's and the tensor thread's queue over a LogSink: every put goes to the log, which the writer
    process polls (nothing waits in memory, so nothing is counted or woken)."""

    def __init__(self, sink: LogSink):
        self.items = sink
        self.event, self.program = sink.event, sink.program
        self.define_stack, self.define_config, self.define_device, self.wire = (
            sink.define_stack, sink.define_config, sink.define_device, sink.wire)

    def put(self, record) -> None:
        self.items.append(record)

    put_now = put


def value_text(v) -> str:
    """An argument value's text, as writer.Writer.format_value makes it for a value that is not a tensor, list
    or tuple (the writer process formats it no further: its repr is this text)."""
    text = f"torch.Tensor(shape={list(v.shape)}, dtype={v.dtype})" if _is_torch_tensor(v) else repr(v)
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "..."


def _is_torch_tensor(v) -> bool:
    import torch

    return isinstance(v, torch.Tensor)


def _plain(x):
    """`x` with tuple and list subclasses (torch.Size, named tuples) made plain, and other values that marshal
    cannot hold (an enum, a numpy number) made their int/float/str."""
    t = type(x)
    if t in _PRIMITIVE or t is bytes:
        return x
    if isinstance(x, (list, tuple)):
        return (list if isinstance(x, list) else tuple)(_plain(e) for e in x)
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    for kind in (bool, int, float, str):
        if isinstance(x, kind):
            return kind(x)
    item = getattr(x, "item", None)
    return item() if callable(item) else str(x)


# -- a MemoryConfig in the log: by name and number, never pickled (a report folder is data: DESIGN.md) ------------
# A config's grid, as its fields may give it: at most one range a core of a grid of up to 32 x 32 (device_sim's is
# 8 x 8 unless a DeviceConfig says otherwise), each x and y below 1,024. CoreRangeSet checks each pair of ranges for
# overlap: 523,776 checks, ~0.3 s, at most, where a log from elsewhere could have asked for 2**31 ranges.
MAX_CORE_RANGES = 1024
MAX_CORE_COORD = 1023


def config_fields(cfg: MemoryConfig) -> tuple:
    """`cfg` as the log holds it: (memory layout name, buffer type name, shard spec, nd shard spec), a spec None
    or (its grid's ranges as (x0, y0, x1, y1), its shape, its orientation name[, its distribution's name])."""
    spec, nd = cfg.shard_spec, cfg.nd_shard_spec
    return (cfg.memory_layout.name, cfg.buffer_type.name,
            None if spec is None else (_ranges(spec.grid), tuple(spec.shape), spec.orientation.name),
            None if nd is None else (_ranges(nd.grid), tuple(nd.shard_shape), nd.orientation.name,
                                     nd.shard_distribution_strategy.name))


def memory_config(fields) -> MemoryConfig:
    """The MemoryConfig config_fields made `fields` of, through device_sim's own constructors and their checks;
    ValueError (or the constructors' TypeError) names a field that is not what config_fields writes."""
    if type(fields) is not tuple or len(fields) != 4:
        raise ValueError(f"a MemoryConfig's fields {_short(fields)} are not (layout, buffer type, shard spec, "
                         f"nd shard spec)")
    layout, buffer_type, spec, nd = fields
    if spec is not None:
        if type(spec) is not tuple or len(spec) != 3:
            raise ValueError(f"a shard spec {_short(spec)} is not (grid, shape, orientation)")
        spec = ShardSpec(_grid(spec[0]), _dims(spec[1]), _named(ShardOrientation, spec[2]))
    if nd is not None:
        if type(nd) is not tuple or len(nd) != 4:
            raise ValueError(f"an nd shard spec {_short(nd)} is not (grid, shape, orientation, distribution)")
        nd = NdShardSpec(_dims(nd[1]), _grid(nd[0]), _named(ShardOrientation, nd[2]),
                         _named(ShardDistributionStrategy, nd[3]))
    return MemoryConfig(_named(TensorMemoryLayout, layout), _named(BufferType, buffer_type), spec, nd)


def _ranges(grid: CoreRangeSet) -> tuple:
    return tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in grid.ranges())


def _grid(ranges) -> CoreRangeSet:
    if type(ranges) is not tuple or not 1 <= len(ranges) <= MAX_CORE_RANGES or not all(
            type(r) is tuple and len(r) == 4 and all(type(c) is int and 0 <= c <= MAX_CORE_COORD for c in r)
            for r in ranges):
        raise ValueError(f"a grid {_short(ranges)} is not 1 to {MAX_CORE_RANGES} core ranges (x0, y0, x1, y1) of "
                         f"coordinates 0 to {MAX_CORE_COORD}")
    return CoreRangeSet([CoreRange(r[:2], r[2:]) for r in ranges])


def _dims(shape) -> tuple:
    if type(shape) is not tuple or not all(type(d) is int for d in shape):
        raise ValueError(f"a shard shape {_short(shape)} is not a tuple of ints")
    return shape


def _named(enum_type, name):
    if type(name) is not str or name not in enum_type.__members__:
        raise ValueError(f"{_short(name)} is no {enum_type.__name__} (one of {', '.join(enum_type.__members__)})")
    return enum_type[name]


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "..."


def write_count(progress, tail: LogTail) -> None:
    """Tell the capture (LogSink.progress, shared memory) how many bytes of the log are written to SQLite now."""
    _COUNT.pack_into(progress, 0, tail.done + tail.off)


# -- reading ------------------------------------------------------------------------------------
class _Config(Text):
    """A MemoryConfig as the writer reads it: its repr and the names of its buffer type and layout."""

    __slots__ = ("buffer_type", "memory_layout")

    def __init__(self, text: str, buffer_type: str, memory_layout: str):
        super().__init__(text)
        self.buffer_type, self.memory_layout = SimpleNamespace(name=buffer_type), SimpleNamespace(name=memory_layout)

    def is_sharded(self) -> bool:
        return self.memory_layout.name != "INTERLEAVED"

    def tensor_text(self, padded_shape) -> str:
        return self.text


class _Traceback:
    """An op's formatted traceback, as the writer calls it (tb.format())."""

    def __init__(self, text: str):
        self.text = text

    def format(self):
        return [self.text]


# -- checking a log from elsewhere (LogTail(trusted=False)) -------------------------------------------------------
_I32 = struct.Struct("<i")
# Runs of the marshal values records are mostly made of, matched at C speed: None, True, False, a dict's start and
# end ("{", "0"), an int32, a float, a tuple or list of fewer than 65,536 values, an int of up to 5 15-bit digits (a
# clock in ns). What the run stops at is looked at in Python: a str or bytes (its length), a larger container, the
# forms of marshal's later versions (a hand-made log's: a small tuple, a short str, a reference), or a type that no
# record holds (refused).
_RUN = re.compile(rb"(?:[NTF{0]|i....|g........|[(\[]..\x00\x00" + b"".join(
    b"|l" + re.escape(_I32.pack(k)) + b"." * (2 * abs(k)) for k in (1, 2, 3, 4, 5, -1, -2, -3, -4, -5)) + b")*",
    re.DOTALL)
_SIZED = frozenset(b"sutaA")  # bytes, str, an interned str, an ASCII str: an int32 length, then the bytes
_SHORT = frozenset(b"zZf")  # a short ASCII str, a float as text (version 1): a 1-byte length, then the bytes
_COUNTED = frozenset(b"([")  # tuple, list: an int32 count, then the values
_LONG = ord("l")  # an int past 32 bits: an int32 count of 15-bit digits, 2 bytes each
_SMALL_TUPLE, _REF, _FLAG_REF = ord(")"), ord("r"), 0x80  # ")": a 1-byte count; "r": an int32 index; a flag bit
_FIXED = {c: size for size, codes in ((0, b"NTF{0"), (4, b"i"), (8, b"g")) for c in codes}  # _RUN's, flagged
_INT32_AFTER = _SIZED | _COUNTED | {_LONG, _REF}
# The records a log holds, by tag, with their lengths: records.KINDS' (PROGRAM: 3 in a log written before PROG; CFG:
# 5, the text and names of a config an earlier ttreport could not pickle).
_LENGTHS = records.WIDTHS
_WARNED: dict = {}  # warnings.warn_explicit's registry: a log's damage is said once a process (counted, rebuilt)


def _check_plain(data: bytes) -> None:
    """Raise ValueError unless `data` is marshal of what records hold (None, bools, ints, floats, bytes, str, and
    tuples, lists and dicts of them), and no container of 65,536 values or more in fewer bytes. marshal.loads makes
    any type it has (a code object among them) and sizes a list by its count before reading it: a 5-byte claim of
    2**31 values took 6 s to free, and a nest of them hours (65,535: ~0.1 ms). The values are read in order, as
    marshal reads them; which container holds which is marshal's to check."""
    n, i = len(data), 0
    match, unpack = _RUN.match, _I32.unpack_from
    while i < n:
        i = match(data, i).end()
        if i == n:
            break
        code = data[i] & ~_FLAG_REF  # the flag: marshal keeps the value for later references to it
        size = _FIXED.get(code)
        if size is not None:
            i += 1 + size
        elif code == _SMALL_TUPLE:  # at most 255 values: nothing large is allocated
            i += 2
        elif code in _SHORT:
            i += 2 + (data[i + 1] if i + 1 < n else 0)
        elif code in _INT32_AFTER:
            if i + 5 > n:
                break  # cut short: said below
            count = unpack(data, i + 1)[0]
            i += 5
            if code in _SIZED or code in _COUNTED:
                if not 0 <= count <= n - i:
                    raise ValueError(f"a length or count of {count} at byte {i - 5}, with {n - i} bytes after it")
                i += count if code in _SIZED else 0
            elif code == _LONG:
                i += 2 * abs(count)
        else:
            raise ValueError(f"marshal type {chr(code)!r} at byte {i}, which no record holds")
    if i != n:
        raise ValueError("the write ends inside its last value")


def _check_records(recs) -> None:
    """Raise ValueError unless `records` is a write as LogSink makes one: a list of records of the tags it writes
    and their lengths, the names a ROW or DEVICE record puts into SQL (a table, its columns) plain identifiers."""
    if type(recs) is not list:
        raise ValueError(f"a write of {type(recs).__name__}, not a list of records")
    for rec in recs:
        if type(rec) is not tuple or not rec or type(rec[0]) is not int or len(rec) not in _LENGTHS.get(rec[0], ()):
            raise ValueError(f"{_short(rec)} is no record ttreport writes")
        tag = rec[0]
        if tag == ROW:
            r = records.view(rec)
            if type(r) is records.RowValues:
                columns = r.columns
                # as a dict's keys are: names, each once (a second would fail the batch's insert, its ops with it)
                ok = (type(columns) is tuple and type(r.values) is tuple
                      and all(type(c) is str and c.isidentifier() for c in columns)
                      and len(set(columns)) == len(columns) == len(r.values) > 0)
            else:
                columns, ok = r.row, _columns(r.row)
            if type(r.table) is not str or not r.table.isidentifier() or not ok:
                raise ValueError(f"a row of table {_short(r.table)} with columns {_short(columns)}")
        elif tag == DEVICE:
            if not _columns(records.view(rec).facts):
                raise ValueError(f"a device's facts {_short(rec[1])} are not named by column")
        elif tag == CFG:
            d = records.view(rec)
            if type(d) is records.Cfg and type(d.fields) is bytes:
                raise ValueError("a MemoryConfig pickled (by an earlier ttreport): not read, as a pickle can "
                                 "run code")
            if type(d) is records.CfgText and not all(type(v) is str for v in d[2:]):
                raise ValueError(f"a MemoryConfig's text and names {_short(d[2:])} are not text")
        elif tag == META and type(records.view(rec).key) is not str:
            raise ValueError(f"a note named {_short(rec[1])}")


def _columns(facts) -> bool:
    return type(facts) is dict and all(type(k) is str and k.isidentifier() for k in facts)


class Definitions:
    """What the log defined, for writer.Writer in place of the recorder: code(id), memory_config(id)."""

    def __init__(self):
        self.codes: dict[int, SimpleNamespace] = {}
        self.configs: dict[int, _Config] = {}
        self.objects: dict[int, Text] = {}
        self.stacks: dict[int, tuple] = {}  # number -> (code id, line, ...): the recorder's frames
        self.cbs: dict[int, tuple] = {}  # number -> a program's CircularBuffers
        self.programs: dict[int, tuple] = {}  # number -> a program's (name, factory, CBs, ranges, cb_bytes)
        # Whether the writer may read the source files the log's code records name (stack lines, source_files):
        # only for this process's own capture's log. A log from a folder names any path on the reader's machine
        # (a planted one would copy ~/.ssh/id_rsa into the report, or hang the reader on a FIFO).
        self.read_sources = False

    def code(self, code_id: int):
        return self.codes[code_id]

    def memory_config(self, config_id: int):
        return self.configs[config_id]


class LogTail:
    """The writer process's end: read(n) -> (up to n records for writer.Writer, whether more may follow now).

    trusted=False (a reader's rebuild from a folder, or its count of a log's ops): the log is data from elsewhere.
    A segment must be a plain file; each write is checked before marshal reads it (_check_plain: no type that
    records do not hold, no container claiming far more values than its bytes) and its records before they are
    decoded (_check_records); the first that fails ends the log there, as a torn write does, and `damage` says
    where and why (so does one warning). ~1.3x the time of trusted=True: the log of this process's own capture
    (the writer process), read at full speed, where a record it cannot decode is a bug, and raised. A trusted log
    is read by _logread.Reader where it is built (NATIVE): 5.8 -> 2.4 µs of CPU an op of a 20,000-add log.
    """

    def __init__(self, folder: Path, on_flush=None, *, trusted: bool = False):
        self.folder = Path(folder)
        self.trusted = trusted
        self.defs = Definitions()
        self.defs.read_sources = trusted
        self.perf = LogPerf()  # device_perf rows of the ops not estimated on the model's thread
        self._wired: dict[bytes, object] = {}  # a reference in an OP record (b"t<id>", b"o<n>") -> its value
        self.on_flush = on_flush or (lambda token: None)  # a FLUSH record's waiter is told through this
        self.segment = 1
        self.off = 0
        self.done = 0  # bytes of the segments read before this one: with off, as LogSink counts what it wrote
        self._mm = None
        self.torn = False  # a record that could not be read: the log ends there
        self.damage: str | None = None  # where and why a log read untrusted ended before its end
        self._native = None  # _writes in C: it holds these dicts (never rebound, only cleared) and calls back on a miss
        if trusted and NATIVE:
            p = self.perf
            d = self.defs
            self._native = _logread.Reader(d.stacks, d.programs, d.configs, d.objects, self._wired, p.tensors, p.mesh,
                                           p._operands, p._estimates, p._skip, MAX_TENSORS, MAX_OBJECTS, TensorArg,
                                           Program, PERF_COLUMNS)

    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None

    def _open(self) -> bool:
        path = segment_path(self.folder, self.segment)
        if not self.trusted and self.folder.is_symlink():
            raise ValueError("the log's folder is a link, which would read from outside the report")
        try:
            # No link followed, no FIFO waited on (opening one blocks until a writer comes): a plain file, or no log.
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ValueError(f"{path.name} is not a plain file")
            self._mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        return True

    def read(self, n: int) -> tuple[list, bool]:
        out: list = []
        while len(out) < n:
            if self.torn:
                return out, False
            if self._mm is None:
                try:
                    if not self._open():
                        return out, False
                except (OSError, ValueError) as e:
                    if self.trusted:
                        raise
                    self._end(0, e)
                    return out, False
            if self._native is not None:
                stop = self._native.writes(self, self._mm, out, n)
            else:
                stop = self._writes(self._mm, out, n)
            if stop == _WAIT:
                return out, False
            if stop == _NEXT:
                if not os.path.exists(segment_path(self.folder, self.segment + 1)):
                    return out, False
                self.close()
                self.segment += 1
                self.done += self.off
                self.off = 0
            elif stop != _FULL:
                self._end(*stop)  # a kill tore it: nothing after it was recorded either
                return out, False
        return out, True

    def _writes(self, mm, out: list, n: int):
        """Decode the writes of segment `mm` from self.off into `out` until it holds n records (_FULL), a length
        reads 0 (_WAIT: not written yet) or END (_NEXT: continued in the next segment), or a write does not read:
        (its offset, the error). self.off is past the last write decoded. _logread.Reader.writes is this function
        in C for a trusted log (the writer process's), held equal to it by tests/test_logread.py."""
        off, size = self.off, len(mm)
        while len(out) < n:
            length = _LEN.unpack_from(mm, off)[0] if off + 4 <= size else END
            if length == 0:
                return _WAIT
            if length == END:
                return _NEXT
            end = off + 4 + length
            try:
                if end > size:
                    raise ValueError("a record runs past its segment")
                data = mm[off + 4:end]
                if not self.trusted:
                    _check_plain(data)
                records = marshal.loads(data)
            except (ValueError, EOFError, TypeError) as e:
                return off, e
            if self.trusted:
                self._decode(records, out)
            else:
                decoded: list = []
                try:
                    _check_records(records)
                    self._decode(records, decoded)
                except Exception as e:  # noqa: BLE001 - what a record ttreport did not write breaks: noted, the end
                    return off, e
                out += decoded
            self.off = off = end
        return _FULL

    def _end(self, off: int, e: Exception) -> None:
        """The log ends at byte `off` of this segment, which does not read (`e`); a log read untrusted says where
        and why (self.damage, and one warning)."""
        self.torn = True
        if self.trusted:
            return  # a write torn by a kill (its length before its bytes): what it held was never recorded
        name = segment_path(self.folder, self.segment).name
        self.damage = (f"the op log is read up to {name} byte {off}, which does not read ({type(e).__name__}: "
                       f"{str(e)[:200]}): torn, or not written by ttreport")
        warnings.warn_explicit(f"{self.damage}; what follows it is not read", ReportIncompleteWarning,
                               str(self.folder), 0, registry=_WARNED)

    def _decode(self, recs: list, out: list) -> None:
        defs, perf = self.defs, self.perf
        for rec in recs:
            tag = rec[0]
            if tag == OP:
                out.append(self._op(rec))
                if rec[_SPECS]:
                    for spec in rec[_SPECS]:
                        perf.note(spec, defs.configs)
                if rec[_ERROR] is None:
                    row = perf.row(rec)
                    if row is not None:
                        out.append((ROW, "device_perf", PERF_COLUMNS, row))  # records.RowValues
            elif tag == FREE or (tag == ALLOC and len(rec) == _ALLOC_WIDTH):  # as they are: an op's, every op
                out.append(rec)
            elif tag == PROGRAM and len(rec) == _LAUNCH_WIDTH:  # records.ProgramLaunch, by position: every op
                out.append((PROGRAM, rec[1], _new_tuple(Program, (*defs.programs[rec[2]], *rec[3:]))))
            elif tag == ROW and rec[1] == "device_tensors" and len(rec) == 3:  # records.Row: a mesh tensor's shard
                self.perf.mesh.add(rec[2]["tensor_id"])
                out.append(rec)
            elif tag >= CODE:
                d = records.view(rec)
                if tag == STACK:
                    defs.stacks[d.number] = d.frames
                elif tag == PROG:
                    defs.programs[d.number] = (d.name, d.factory, tuple(CircularBuffer(*c) for c in d.cbs), d.ranges,
                                               d.cb_bytes)
                elif tag == CBS:  # a log written before PROG (a report killed then, finished by this version)
                    defs.cbs[d.number] = tuple(CircularBuffer(*c) for c in d.cbs)
                elif tag == DEVICE_PERF:
                    self.perf.add_device(d.device_id, d.fields)
                elif tag == CODE:
                    defs.codes[d.code_id] = SimpleNamespace(co_filename=d.filename, co_name=d.name)
                elif type(d) is records.Cfg:
                    defs.configs[d.config_id] = memory_config(d.fields)
                elif type(d) is records.CfgText:
                    defs.configs[d.config_id] = _Config(*d[2:])
                else:
                    defs.objects[d.number] = Text(d.text)
            elif tag == FLUSH:
                out.append((FLUSH, _Waiter(self.on_flush, rec[1])))
            elif tag == STOP:
                out.append((STOP, None if rec[1] is None else _Waiter(self.on_flush, rec[1])))
            elif tag == PROGRAM:  # a log written before PROG: the launch held the whole program, its CBs by number
                p = records.view(rec)
                name, factory, cbs, ranges, cb_bytes, program_id, device_id, cb_base = p.program
                program = Program(name, factory, defs.cbs[cbs], ranges, cb_bytes, program_id, device_id, cb_base)
                out.append((PROGRAM, p.operation_id, program))  # records.ProgramRun
            elif tag == ALLOC and records.kind(rec) is records.AllocPages:
                out.append(rec[:_BUFFER] + (SimpleNamespace(**rec[_BUFFER]),))
            else:
                out.append(rec)

    def _op(self, r) -> tuple:
        # One tuple built from slices of the record, not a list of it made back into a tuple: ~0.5-1 µs an op of
        # the writer's log read (8.3-8.9 -> 7.4-8.1 µs, a 20,000-add log, bench/README.md issue 33).
        stack, args, kwargs, error = r[_STACK], r[_ARGS], r[_KWARGS], r[_ERROR]
        if stack is not None:
            stack = self.defs.stacks[stack]
        unwire, wired = self._unwire, self._wired.get
        if args:
            # A tensor's or an object's reference (bytes) by the dict of those read (_unwire's): 0.87 -> 0.36 µs for
            # two tensor arguments (timeit); a list or tuple, which may hold one, unwired each time.
            args = tuple([w if type(a) is bytes and (w := wired(a)) is not None else unwire(a) if type(a) in _WIRED
                          else a for a in args])
        if kwargs:
            kwargs = {k: w if type(v) is bytes and (w := wired(v)) is not None else unwire(v)
                      for k, v in kwargs.items()}
        if error is not None:
            error = (error[0], error[1], _Traceback(error[2]), error[3])
        return (*r[:_STACK], stack, args, kwargs, *r[_KWARGS + 1:_ERROR], error, *r[_ERROR + 1:])

    def _unwire(self, v):
        t = type(v)
        if t is bytes:
            value = TensorArg(int(v[1:])) if v[0] == 0x74 else self.defs.objects[int(v[1:])]  # b"t<id>", b"o<n>"
            if len(self._wired) >= MAX_OBJECTS:
                self._wired.clear()
            self._wired[v] = value
            return value
        if t is list or t is tuple:
            return t(self._unwire(e) for e in v)
        return v


class _Waiter:
    """A FLUSH record's waiter in the writer process: set() tells the capture its token is committed."""

    def __init__(self, tell, token):
        self.tell, self.token = tell, token

    def set(self) -> None:
        self.tell(self.token)
