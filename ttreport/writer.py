"""The writer thread: queue records -> rows -> one SQLite transaction per batch.

A batch closes after `flush_ops` records or `flush_interval_s` seconds, whichever is first,
so a crash loses at most one batch. All formatting happens here, off the model's thread:
argument values, tensor specs, stack traces (deduplicated: one text per distinct stack).

A failing disk never stops the model: the batch is rolled back, a warning is given once,
the loss is counted, and later batches are still tried; close() notes it in report_metadata.
"""

from __future__ import annotations

import linecache
import queue as queue_module
import sqlite3
import threading
import time
import warnings

import torch

from device_sim.tensor import padded
from ttreport.errors import ReportIncompleteWarning
from ttreport.recorder import BUFFER, DEVICE, FILE_LOST, FLUSH, META, OP, ROW, STOP, TensorArg

MAX_VALUE_CHARS = 2000  # an argument's text beyond this is cut: reprs of big host arrays add nothing

_INSERT = {
    "operations": "INSERT INTO operations (operation_id, name, duration, start_ns, end_ns, parent_operation_id, "
                  "depth, status, thread, stack_trace_id, end_seq, l1_bytes, dram_bytes) "
                  "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
    "operation_arguments": "INSERT INTO operation_arguments (operation_id, name, value) VALUES (?,?,?)",
    "input_tensors": "INSERT INTO input_tensors (operation_id, input_index, tensor_id) VALUES (?,?,?)",
    "output_tensors": "INSERT INTO output_tensors (operation_id, output_index, tensor_id) VALUES (?,?,?)",
    "tensors": "INSERT OR IGNORE INTO tensors (tensor_id, shape, dtype, layout, memory_config, device_id, address, "
               "buffer_type, size, memory_config_source, producer_operation_id, file, padded_shape) "
               "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
    "stack_trace_texts": "INSERT INTO stack_trace_texts (stack_trace_id, stack_trace) VALUES (?,?)",
    "errors": "INSERT INTO errors (operation_id, operation_name, error_type, error_message, stack_trace, timestamp) "
              "VALUES (?,?,?,?,?,?)",
    "buffer_lifetimes": "INSERT OR IGNORE INTO buffer_lifetimes (buffer_id, device_id, address, max_size_per_bank, "
                        "buffer_type, buffer_layout, size, allocated_seq, freed_seq, allocated_by_operation_id) "
                        "VALUES (?,?,?,?,?,?,?,?,?,?)",
    "devices": None,  # built from the facts' keys
}


def connect(db_path) -> sqlite3.Connection:
    con = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    return con


class Writer(threading.Thread):
    def __init__(self, db_path, q, recorder, config):
        super().__init__(name="ttreport-writer", daemon=True)
        self.db_path = db_path
        self.queue = q
        self.recorder = recorder
        self.flush_ops = config.flush_ops
        self.flush_interval_s = config.flush_interval_s
        self.error: BaseException | None = None  # the first failure, reported at close
        self.records_lost = 0
        self.records_written = 0
        self._stacks: dict[tuple, int] = {}  # frames key -> stack_trace_id
        self._tensor_text: dict[int, str] = {}  # tensor id -> its argument text
        self._arg_names = [str(i) for i in range(64)]

    # -- the loop --------------------------------------------------------------------------
    def run(self) -> None:
        self.con = connect(self.db_path)
        try:
            stop = False
            while not stop:
                batch, stop = self._next_batch()
                self._write(batch)
        finally:
            self._close()

    def _next_batch(self) -> tuple[list, bool]:
        q = self.queue
        batch = [q.get()]
        if batch[0][0] in (STOP, FLUSH):
            return batch, batch[0][0] == STOP
        deadline = time.monotonic() + self.flush_interval_s
        while len(batch) < self.flush_ops:
            try:
                item = q.get_nowait()
            except queue_module.Empty:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    item = q.get(timeout=remaining)
                except queue_module.Empty:
                    break
            batch.append(item)
            if item[0] in (STOP, FLUSH):
                return batch, item[0] == STOP
        return batch, False

    def _write(self, batch: list) -> None:
        rows = {name: [] for name in _INSERT}
        rows.update(updates=[], files=[], lost=[], meta=[], other={})
        self._pending: dict[int, list] = {}  # buffer id -> its row in this batch, to merge a free into
        new_stacks: list[tuple] = []
        try:
            for item in batch:
                tag = item[0]
                if tag == OP:
                    self._op(item, rows, new_stacks)
                elif tag == BUFFER:
                    self._buffer(item, rows)
                elif tag == DEVICE:
                    rows["devices"].append(item[1])
                elif tag == ROW:
                    rows["other"].setdefault((item[1], tuple(item[2])), []).append(tuple(item[2].values()))
                elif tag == META:
                    rows["meta"].append((item[1], str(item[2])))
                elif tag == FILE_LOST:
                    rows["lost"].append((item[1],))
            self._commit(rows)
            self.records_written += len(batch)
        except Exception as e:  # the disk, or a bug here: never the model's problem (see module docstring)
            for key in new_stacks:
                self._stacks.pop(key, None)
            self._fail(e, len(batch))
        for item in batch:
            if item[0] in (STOP, FLUSH) and item[1] is not None:
                item[1].set()  # whoever waits on a flush or stop

    def _commit(self, rows: dict) -> None:
        con = self.con
        con.execute("BEGIN")
        try:
            for name, sql in _INSERT.items():
                if rows[name] and sql is not None:
                    con.executemany(sql, rows[name])
            for facts in rows["devices"]:
                cols = ", ".join(facts)
                con.execute(f"INSERT OR IGNORE INTO devices ({cols}) VALUES ({', '.join('?' * len(facts))})",
                            tuple(facts.values()))
            if rows["updates"]:
                con.executemany("UPDATE buffer_lifetimes SET freed_seq = ? WHERE buffer_id = ?", rows["updates"])
            if rows["files"]:
                con.executemany("UPDATE tensors SET file = ? WHERE tensor_id = ?", rows["files"])
            if rows["lost"]:
                con.executemany("UPDATE tensors SET file = NULL WHERE tensor_id = ?", rows["lost"])
            for (table, cols), values in rows["other"].items():
                con.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                values)
            if rows["meta"]:
                con.executemany("INSERT OR REPLACE INTO report_metadata (key, value) VALUES (?, ?)", rows["meta"])
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise

    def _fail(self, e: Exception, n: int) -> None:
        self.records_lost += n
        if self.error is None:
            self.error = e
            warnings.warn(
                f"ttreport: could not write to {self.db_path} ({type(e).__name__}: {e}); the model keeps running, "
                f"what was written is kept, and the loss is noted in report_metadata",
                ReportIncompleteWarning, stacklevel=1,
            )

    def _close(self) -> None:
        try:
            self.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            # A closed report is one plain file: it can be copied alone and read from read-only media.
            self.con.execute("PRAGMA journal_mode=DELETE")
        except sqlite3.Error as e:
            self._fail(e, 0)
        finally:
            self.con.close()

    # -- records to rows ---------------------------------------------------------------------
    def _op(self, rec, rows, new_stacks) -> None:
        (_, name, op_id, start, end, parent, depth, thread, frames, args, kwargs, inputs, outputs, specs, files,
         end_seq, l1, dram, error) = rec
        stack_id = None
        if frames:
            stack_id = self._stacks.get(frames)
            if stack_id is None:
                stack_id = self._stacks[frames] = len(self._stacks) + 1
                new_stacks.append(frames)
                rows["stack_trace_texts"].append((stack_id, self.format_stack(frames)))
        rows["operations"].append((op_id, name, (end - start) * 1e-9, start, end, parent, depth,
                                   "ok" if error is None else "error", thread, stack_id, end_seq, l1, dram))
        if specs:
            file_of = {f[0]: f[1] for f in files}
            tensors = rows["tensors"]
            for spec in specs:
                tensors.append(self._tensor_row(spec, file_of.pop(spec[0], None)))
            for tid, rel in file_of.items():  # stored now, spec recorded by an earlier op
                rows["files"].append((rel, tid))
        elif files:
            for tid, rel, *_ in files:
                rows["files"].append((rel, tid))
        arg_rows = rows["operation_arguments"]
        names = self._arg_names
        for i, a in enumerate(args):
            arg_rows.append((op_id, names[i] if i < 64 else str(i), self.format_value(a)))
        if kwargs:
            for k, v in kwargs.items():
                arg_rows.append((op_id, k, self.format_value(v)))
        ins = rows["input_tensors"]
        for i, tid in enumerate(inputs):
            ins.append((op_id, i, tid))
        outs = rows["output_tensors"]
        for i, tid in enumerate(outputs):
            outs.append((op_id, i, tid))
        if error is not None:
            error_type, message, tb, timestamp = error
            text = f"Op called from (most recent call last):\n{self.format_stack(frames)}\n" if frames else ""
            text += "".join(tb.format())
            rows["errors"].append((op_id, name, error_type, message, text, timestamp))

    def _buffer(self, item, rows) -> None:
        _, event, buf, seq, op_id = item
        if event == "alloc":
            rows["buffer_lifetimes"].append([buf.buffer_id, buf.device_id, buf.address, buf.max_size_per_bank,
                                             int(buf.buffer_type), int(buf.buffer_layout), buf.size, seq, None, op_id])
            self._pending[buf.buffer_id] = rows["buffer_lifetimes"][-1]
            return
        row = self._pending.pop(buf.buffer_id, None)
        if row is not None:
            row[8] = seq
        else:
            rows["updates"].append((seq, buf.buffer_id))

    def _tensor_row(self, spec, file) -> tuple:
        tid, value, dtype, layout, cfg, source, device_id, buf, producer = spec
        shape = list(value.shape) if value is not None else None
        cfg_text = repr(cfg) if cfg is not None else None
        where = "host" if cfg is None else f"{cfg.buffer_type.name} {cfg.memory_layout.name}"
        self._tensor_text[tid] = (f"ttnn.Tensor(id={tid}, shape=Shape({shape}), dtype={dtype!r}, "
                                  f"layout={layout!r}, {where})")
        return (tid, f"Shape({shape})" if shape is not None else None, repr(dtype), repr(layout), cfg_text, device_id,
                buf.address if buf is not None else None, int(buf.buffer_type) if buf is not None else None,
                buf.size if buf is not None else None, source, producer, file,
                f"Shape({list(padded(shape, layout))})" if shape is not None else None)

    # -- formatting -------------------------------------------------------------------------
    def format_value(self, v) -> str:
        if isinstance(v, TensorArg):
            return self._tensor_text.get(v.id) or f"ttnn.Tensor(id={v.id})"
        if type(v) in (list, tuple):
            inner = ", ".join(self.format_value(e) for e in v)
            text = f"[{inner}]" if type(v) is list else f"({inner}{',' if len(v) == 1 else ''})"
        elif isinstance(v, torch.Tensor):
            text = f"torch.Tensor(shape={list(v.shape)}, dtype={v.dtype})"
        else:
            text = repr(v)
        return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + "..."

    def format_stack(self, frames: tuple) -> str:
        """Text like a Python traceback's, outermost frame first."""
        lines = []
        for i in range(len(frames) - 2, -1, -2):
            code = self.recorder.code(frames[i])
            lineno = frames[i + 1]
            lines.append(f'  File "{code.co_filename}", line {lineno}, in {code.co_name}')
            source = linecache.getline(code.co_filename, lineno).strip()
            if source:
                lines.append(f"    {source}")
        return "\n".join(lines)
