"""The writer thread: queue records -> rows -> one SQLite transaction per batch.

A batch closes after `flush_ops` records or `flush_interval_s` seconds, whichever is first,
so a crash loses at most one batch. All formatting happens here, off the model's thread:
argument values, tensor specs, stack traces (deduplicated: one text per distinct stack).

A failing disk never stops the model: the batch is rolled back, a warning is given once,
the loss is counted, and later batches are still tried; close() notes it in report_metadata.
"""

from __future__ import annotations

import itertools
import linecache
import sqlite3
import threading
from json.encoder import encode_basestring_ascii as _json_str

import torch

from device_sim.tensor import padded
from device_sim.types import BufferType, DataType, Layout, TensorMemoryLayout
from ttreport import db
from ttreport.errors import LossWarner
from ttreport.recorder import BUFFER, DEVICE, FILE_LOST, FLUSH, META, OP, ROW, STOP, TensorArg

MAX_VALUE_CHARS = 2000  # an argument's text beyond this is cut: reprs of big host arrays add nothing
MAX_TENSOR_TEXTS = 200_000  # argument texts of tensors kept in memory

# One staging row per op holds its arguments and tensor ids as JSON; SQLite spreads them into
# operation_arguments / input_tensors / output_tensors itself, without holding the GIL, which
# costs the model's thread far less than binding each of those rows from Python.
_OP_COLUMNS = ("operation_id, name, duration, start_ns, end_ns, parent_operation_id, depth, status, thread, "
               "stack_trace_id, end_seq, l1_bytes, dram_bytes")
_STAGING = f"CREATE TEMP TABLE op_staging ({_OP_COLUMNS}, arguments, inputs, outputs)"
_SPREAD = [
    f"INSERT INTO main.operations ({_OP_COLUMNS}) SELECT {_OP_COLUMNS} FROM op_staging",
    "INSERT INTO main.operation_arguments (operation_id, name, value) "
    "SELECT s.operation_id, j.key, j.value FROM op_staging s, json_each(s.arguments) j",
    "INSERT INTO main.input_tensors (operation_id, input_index, tensor_id) "
    "SELECT s.operation_id, j.key, j.value FROM op_staging s, json_each(s.inputs) j",
    "INSERT INTO main.output_tensors (operation_id, output_index, tensor_id) "
    "SELECT s.operation_id, j.key, j.value FROM op_staging s, json_each(s.outputs) j",
    "DELETE FROM op_staging",
]

_INSERT = {
    "op_staging": f"INSERT INTO op_staging VALUES ({', '.join('?' * 16)})",
    "tensors": "INSERT OR IGNORE INTO tensors (tensor_id, shape, dtype, layout, memory_config, device_id, address, "
               "buffer_type, size, memory_config_source, producer_operation_id, file, padded_shape) "
               "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
    "stack_trace_texts": "INSERT INTO stack_trace_texts (stack_trace_id, stack_trace) VALUES (?,?)",
    "errors": "INSERT INTO errors (operation_id, operation_name, error_type, error_message, stack_trace, timestamp) "
              "VALUES (?,?,?,?,?,?)",
    "buffer_lifetimes": "INSERT OR IGNORE INTO buffer_lifetimes (buffer_id, device_id, address, max_size_per_bank, "
                        "buffer_type, buffer_layout, size, allocated_seq, freed_seq, allocated_by_operation_id) "
                        "VALUES (?,?,?,?,?,?,?,?,?,?)",
    "buffer_pages": "INSERT INTO buffer_pages (operation_id, device_id, address, core_y, core_x, bank_id, page_index, "
                    "page_address, page_size, buffer_type) VALUES (?,?,?,?,?,?,?,?,?,?)",
    "devices": None,  # built from the facts' keys
}


def connect(db_path) -> sqlite3.Connection:
    con = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.execute("PRAGMA temp_store=MEMORY")
    con.execute(_STAGING)
    return con


class Writer(threading.Thread):
    def __init__(self, db_path, q, recorder, config, warner: LossWarner | None = None):
        super().__init__(name="ttreport-writer", daemon=True)
        self.warner = warner or LossWarner()  # shared with the tensor thread: one warning per capture
        self.db_path = db_path
        self.queue = q
        self.recorder = recorder
        self.flush_ops = config.flush_ops
        self.flush_interval_s = config.flush_interval_s
        self._live: dict | None = {} if config.buffer_pages else None  # buffer id -> Buffer, for buffer_pages
        self._grid_x: dict[int, int] = {}  # device id -> worker columns, to place L1 banks on cores
        self.error: BaseException | None = None  # the first failure, reported at close
        self.records_lost = 0
        self.records_written = 0
        self._stacks: dict[tuple, int] = {}  # frames key -> stack_trace_id
        self._tensor_text: dict[int, str] = {}  # tensor id -> its argument text
        self._shape_text: dict[tuple, tuple[str, str]] = {}  # (torch.Size, Layout) -> shape, padded shape
        self._cfgs: dict[int, tuple] = {}  # id(MemoryConfig) -> (it, repr, "L1 INTERLEAVED")
        # One dict per enum: IntEnum members of different enums compare equal (BFLOAT16 == ROW_MAJOR == 0).
        self._dtype_text = {e: repr(e) for e in DataType}
        self._layout_text = {e: repr(e) for e in Layout}

    # -- the loop --------------------------------------------------------------------------
    def run(self) -> None:
        try:
            self.con = connect(self.db_path)
        except Exception as e:  # an unwritable folder: keep draining, so the queue never grows without bound
            self.con = None
            self._fail(e, 0)
        try:
            while not self._write(self._next_batch()):
                pass
        finally:
            if self.con is not None:
                self._close()

    def _next_batch(self) -> list:
        q = self.queue
        if len(q) < self.flush_ops:
            q.wake.wait(self.flush_interval_s)
        q.wake.clear()
        popleft = q.items.popleft
        return [popleft() for _ in range(min(len(q), self.flush_ops))]

    def _write(self, batch: list) -> bool:
        """Commit `batch` in one transaction; True once the stop record is among it."""
        if not batch:
            return False
        if self.con is None:
            self.records_lost += len(batch)
            return self._release([item for item in batch if item[0] in (FLUSH, STOP)])
        rows = {name: [] for name in _INSERT}
        rows.update(updates=[], files=[], lost=[], meta=[], other={})
        self._pending: dict[int, list] = {}  # buffer id -> its row in this batch, to merge a free into
        new_stacks: list[tuple] = []
        waiters = []
        try:
            for item in batch:
                tag = item[0]
                if tag == OP:
                    self._op(item, rows, new_stacks)
                elif tag == BUFFER:
                    self._buffer(item, rows)
                elif tag == DEVICE:
                    rows["devices"].append(item[1])
                    self._grid_x[item[1]["device_id"]] = item[1]["num_x_cores"]
                elif tag == ROW:
                    rows["other"].setdefault((item[1], tuple(item[2])), []).append(tuple(item[2].values()))
                elif tag == META:
                    rows["meta"].append((item[1], str(item[2])))
                elif tag == FILE_LOST:
                    rows["lost"].append((item[1],))
                else:
                    waiters.append(item)  # FLUSH or STOP
            self._commit(rows)
            self.records_written += len(batch)
        except Exception as e:  # the disk, or a bug here: never the model's problem (see module docstring)
            for key in new_stacks:
                self._stacks.pop(key, None)
            self._fail(e, len(batch))
            waiters = [item for item in batch if item[0] in (FLUSH, STOP)]
        return self._release(waiters)

    @staticmethod
    def _release(waiters: list) -> bool:
        """Wake whoever waits on a flush or stop; True when the stop has come."""
        for _, done in waiters:
            if done is not None:
                done.set()
        return any(tag == STOP for tag, _ in waiters)

    def _commit(self, rows: dict) -> None:
        con = self.con
        con.execute("BEGIN")
        try:
            for name, sql in _INSERT.items():
                if rows[name] and sql is not None:
                    con.executemany(sql, rows[name])
            if rows["op_staging"]:
                for sql in _SPREAD:
                    con.execute(sql)
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
            self.warner.warn(f"ttreport: could not write to {self.db_path} ({type(e).__name__}: {e}); what was "
                             f"committed is kept")

    def _close(self) -> None:
        try:
            db.create_indexes(self.con)
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
        if specs:
            file_of = {f[0]: f[1] for f in files} if files else None
            tensors = rows["tensors"]
            for spec in specs:
                tensors.append(self._tensor_row(spec, file_of.pop(spec[0], None) if file_of else None))
            if file_of:  # stored now, spec recorded by an earlier op
                rows["files"].extend((rel, tid) for tid, rel in file_of.items())
        elif files:
            rows["files"].extend((f[1], f[0]) for f in files)
        arguments = None
        if args or kwargs:
            # A JSON object of name -> text, built from json's C string encoder: json.dumps costs 3x more.
            fmt = self.format_value
            parts = [f'"{i}":{_json_str(fmt(a))}' for i, a in enumerate(args)]
            if kwargs:
                parts.extend(f"{_json_str(k)}:{_json_str(fmt(v))}" for k, v in kwargs.items())
            arguments = "{" + ",".join(parts) + "}"
        # str() of a list of ints is its JSON
        rows["op_staging"].append((op_id, name, (end - start) * 1e-9, start, end, parent, depth,
                                   "ok" if error is None else "error", thread, stack_id, end_seq, l1, dram,
                                   arguments, str(inputs) if inputs else None, str(outputs) if outputs else None))
        if self._live is not None:
            for buf in self._live.values():
                if buf.buffer_type == BufferType.L1:
                    rows["buffer_pages"].extend(self._pages(op_id, buf))
        if error is not None:
            error_type, message, tb, timestamp = error
            text = f"Op called from (most recent call last):\n{self.format_stack(frames)}\n" if frames else ""
            text += "".join(tb.format())
            rows["errors"].append((op_id, name, error_type, message, text, timestamp))

    def _buffer(self, item, rows) -> None:
        _, event, buf, seq, op_id = item
        if self._live is not None:
            if event == "alloc":
                self._live[buf.buffer_id] = buf
            else:
                self._live.pop(buf.buffer_id, None)
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

    def _pages(self, op_id: int, buf):
        """Each page of an L1 buffer, where it lies: interleaved round-robin over the banks, or one shard
        of consecutive pages per bank (core), banks numbered row-major over the worker grid."""
        grid_x = self._grid_x.get(buf.device_id, 1)
        per_bank = max(buf.max_size_per_bank // buf.page_size, 1)
        sharded = buf.buffer_layout != TensorMemoryLayout.INTERLEAVED
        for i in range(buf.num_pages):
            bank, slot = (i // per_bank, i % per_bank) if sharded else (i % buf.num_banks, i // buf.num_banks)
            yield (op_id, buf.device_id, buf.address, bank // grid_x, bank % grid_x, bank, i,
                   buf.address + slot * buf.page_size, buf.page_size, int(buf.buffer_type))

    def _tensor_row(self, spec, file) -> tuple:
        tid, value, dtype, layout, cfg, source, device_id, buf, producer = spec
        cfg_text, where = self._cfg_text(cfg)
        if value is None:
            shape = pshape = None
        else:
            key = (value.shape, layout)  # a model's shapes repeat: format each (shape, layout) once
            hit = self._shape_text.get(key)
            if hit is None:
                dims = list(value.shape)
                hit = self._shape_text[key] = (f"Shape({dims})", f"Shape({list(padded(dims, layout))})")
            shape, pshape = hit
        dtype_text, layout_text = self._dtype_text[dtype], self._layout_text[layout]
        text = f"ttnn.Tensor(id={tid}, shape={shape}, dtype={dtype_text}, layout={layout_text}, {where})"
        self._remember_text(tid, text)
        if buf is None:
            return (tid, shape, dtype_text, layout_text, cfg_text, device_id, None, None, None, source, producer, file,
                    pshape)
        return (tid, shape, dtype_text, layout_text, cfg_text, device_id, buf.address, int(buf.buffer_type), buf.size,
                source, producer, file, pshape)

    def _cfg_text(self, cfg) -> tuple[str | None, str]:
        if cfg is None:
            return None, "host"
        hit = self._cfgs.get(id(cfg))  # by id: hashing a MemoryConfig costs more than formatting it once
        if hit is None or hit[0] is not cfg:
            hit = self._cfgs[id(cfg)] = (cfg, repr(cfg), f"{cfg.buffer_type.name} {cfg.memory_layout.name}")
        return hit[1], hit[2]

    def _remember_text(self, tid: int, text: str) -> None:
        texts = self._tensor_text
        if len(texts) >= MAX_TENSOR_TEXTS:  # bounded: the oldest half goes; a miss is looked up in the db
            for key in list(itertools.islice(texts, len(texts) // 2)):
                del texts[key]
        texts[tid] = text

    def _tensor_text_of(self, tid: int) -> str:
        tid = int(tid)
        text = self._tensor_text.get(tid)
        if text is not None:
            return text
        row = self.con.execute("SELECT shape, dtype, layout, memory_config FROM tensors WHERE tensor_id = ?",
                               (tid,)).fetchone()
        if row is None:
            return f"ttnn.Tensor(id={tid})"
        where = "host" if row[3] is None else row[3]
        return f"ttnn.Tensor(id={tid}, shape={row[0]}, dtype={row[1]}, layout={row[2]}, {where})"

    # -- formatting -------------------------------------------------------------------------
    def format_value(self, v) -> str:
        t = type(v)
        if t is int or t is float or t is bool or v is None:
            return repr(v)
        if t is TensorArg:
            return self._tensor_text_of(v)
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
