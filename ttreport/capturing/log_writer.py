"""Writing an op log's records into a report db: the loop the writer process runs, and a rebuild from a killed
capture's log runs too (ttreport.recovery); and the deletion of a log the db holds all of.

    writer = open_writer(folder / "db.sqlite", tail, options)  # tail: an oplog.LogTail; options: OPTIONS' values
    pump(writer, tail, options, lambda: False)  # True: the log's STOP was written; False: its end

The records are the recorder's tuples, turned into rows by writer.Writer's own code; what they refer to by id, the
log defines (tail.defs).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace

from ttreport.capturing.oplog import LogTail, write_count
from ttreport.capturing.records import FLUSH, META, STOP
from ttreport.capturing.writer import Writer, connect
from ttreport.errors import LossWarner
from ttreport.folder import OPLOG_DONE_DIR, remove_log, segment_path

OPTIONS = ("flush_ops", "flush_interval_s", "buffer_pages", "device_graphs")  # Config's, for Writer
IDLE_SLEEP_S = 0.0005  # between looks at an idle log: a few hundred µs of latency, ~nothing of CPU


def open_writer(db_path: Path, tail: LogTail, options: dict):
    """A Writer for `db_path` that takes the records of `tail`'s log, connected (or failed, when the folder cannot
    be written: the log is read to its end all the same, its losses counted)."""
    writer = Writer(db_path, tail.defs, SimpleNamespace(**options), LossWarner())
    try:
        writer.con = connect(db_path)
    except (sqlite3.Error, OSError) as e:  # an unwritable folder: the log is read to its end all the same
        writer.con = None
        writer._fail(e)
    return writer


def pump(writer, tail: LogTail, options: dict, parent_alive, *, freeze: bool = False, progress=None,
         files=None, held: list | None = None) -> bool:
    """Write the log's records in batches until its STOP (True) or, once `parent_alive()` is False, its end.

    freeze=True (the writer process only, never a reader's process, whose own objects it would freeze too):
    gc.freeze() after each batch. progress: the capture's LogSink.progress, told the bytes written after each
    batch (its back-pressure). files: a log_tensors.FileWriter, which writes the tensor files the batch carries.
    held: the capture's status note goes there instead of into the db (the writer process commits it once the
    db is closed: writer_process._finish)."""
    flush_ops, interval = options["flush_ops"], options["flush_interval_s"]
    while True:
        batch: list = []
        started = time.monotonic()
        dead = False
        while len(batch) < flush_ops:
            records, more = tail.read(flush_ops - len(batch))
            batch += records
            if records and records[-1][0] in (FLUSH, STOP):  # someone waits for it: commit now
                break
            if not more:
                if not parent_alive():
                    dead = True  # the next round reads what it appended before it died, to the end
                    break
                if batch and time.monotonic() - started >= interval:
                    break
                time.sleep(IDLE_SLEEP_S)
        if batch:
            if files is not None:
                batch = files.convert(batch)
            if held is not None:
                batch = _hold_status(batch, held)
            stopped = writer._write(batch)
            if progress is not None:
                write_count(progress, tail)
            if freeze:
                # What is left of the batch is the writer's caches: out of the cyclic collector's sight from now
                # on (refcounting still frees them). Its full collections walked every cached tuple again and
                # again: 12 % of this process's CPU over a 200,000-op log. The writer's rows hold no cycles.
                gc.freeze()
            if stopped:
                return True
        if dead and not batch:
            return False


def _hold_status(batch: list, held: list) -> list:
    """`batch` less the capture's status note, which goes to `held`: one pass over the tags (~0.1 % of the
    writer's time for a 2,000-record batch)."""
    kept = [r for r in batch if r[0] != META or r[1] != "status"]
    if len(kept) != len(batch):
        held += [r for r in batch if r[0] == META and r[1] == "status"]
    return kept


def remove_finished_log(log: Path, step=lambda: None) -> None:
    """Delete a log whose report holds every op it does: renamed oplog.done first (atomic), so a kill from then
    on leaves a name that says the db is complete (a reader finishes the deletion: recovery.finish_from_log), never a
    half-deleted log that a reader would rebuild a smaller report from."""
    done = log.with_name(OPLOG_DONE_DIR)
    # OSError: a folder that cannot be written (read-only media), or oplog.done a file or someone else's folder:
    # what is left stays, whole or marked done, for `ttreport check` to name.
    with contextlib.suppress(OSError):
        remove_log(done)  # one an earlier kill left: out of the rename's way
        os.rename(log, done)
        step()  # 3: renamed
        n = 1
        while os.path.lexists(segment_path(done, n)):
            os.unlink(segment_path(done, n))
            step()  # 4, 5, ...: each segment
            n += 1
        remove_log(done)  # its progress note, and the folder
        if os.path.lexists(done):  # files of someone else's were in it: they stay where they were
            os.rename(done, log)
