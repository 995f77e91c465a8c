"""TT-NN's perf files written by the writer process as its batches commit, instead of read back at close.

    perf = LivePerf(Path("run-1"), Path("run-1/oplog"))
    perf.add(batch, staging, rows, con)   # writer.Writer._write, after each committed batch
    perf.finish(con)                      # at the writer's close: True once both files are in place

ttreport.export.ops_perf reads the whole report back to write ops_perf_results.csv and
profile_log_device.csv: ~7 µs of CPU an op, most of a 1,000,000-op capture's close (8.6 s). The
writer process has every fact those rows need as it writes them (an op's name and clocks, its
estimate, its tensors' rows, the devices), so it renders the rows as ops commit, through the
exporter's own op_lines and _slots, into two files in the op log's folder; at close they are moved
beside db.sqlite. The bytes are the exporter's (tests/test_live_perf.py):
- rows are in op-id order while ops commit in the order they end (a parent after its children): an
  op waits until every lower id has come; an op whose estimate the model's thread makes (a matmul,
  log_perf.ON_MODEL_THREAD) waits one more batch for its device_perf row, which comes after it;
- the header counts the most inputs and outputs of any op, and each row is padded to them, as is
  the core count (the devices'): the first HOLD_ROWS rows are held unrendered, so a change of those
  early in a run (a model's first ops) costs nothing; a change after them, anything else this file
  cannot follow (a row another part of ttreport emitted into the tables it reads, a late estimate,
  a tensor row after the op that names it), or a count at close that disagrees with the db's,
  gives up: finish() says False and why (`why`), and the capture writes the files from the db at
  close, as before.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from ttreport.capturing import records
from ttreport.capturing.log_perf import ON_MODEL_THREAD
from ttreport.capturing.recorder import MADE_TENSOR_ID_BASE
from ttreport.capturing.records import OP, STOP
from ttreport.capturing.writer import STAGING_TENSOR
from ttreport.export import ops_perf

HOLD_ROWS = 4096  # rows kept unrendered at the start: a model's widest op and its devices come early
MAX_TENSORS = 1 << 17  # tensor ids -> row keys kept; older ones are read back from the db when named again
MAX_WAITING = 200_000  # ops held for a lower id (a parent still running): past it, give up (memory)
MAX_UNLINKED = 10_000  # tensor ids named without a `tensors` row (checked at close), past it give up
PARTS = (".ops_perf_results.csv.part", ".profile_log_device.csv.part")  # in the op log's folder while running
_TABLES_READ = frozenset({"operations", "tensors", "tensor_specs", "input_tensors", "output_tensors", "devices"})


class LivePerf:
    def __init__(self, folder: Path, log_folder: Path):
        self.folder = Path(folder)
        self.parts = tuple(Path(log_folder) / name for name in PARTS)
        self.why: str | None = None  # why it gave up (None: it has not)
        self.fields = ops_perf._Fields(None)  # (spec_id, buffer type, device id) -> the tensor columns' number
        self.specs: dict[int, tuple] = {}  # spec_id -> (shape, layout, dtype, memory_config) texts
        self.tensors: dict[int, int] = {}  # tensor id -> its number in fields (its first `tensors` row's)
        # The highest tensor id dropped from self.tensors, of device_sim's ids and of the ids the capture made
        # (golden tensors, from MADE_TENSOR_ID_BASE): an id at or below its range's is asked of the db.
        self.max_dropped = [0, MADE_TENSOR_ID_BASE - 1]
        self.unlinked: set[int] = set()  # tensor ids an op named with no `tensors` row then
        self.cores_of: dict[int, int | None] = {}  # device id -> compute cores (its first `devices` row's)
        self.cores = 64  # the exporter's MAX(num_x_compute_cores * num_y_compute_cores), 64 with none
        self.n_in = self.n_out = 0
        self.resolved: dict[int, tuple | None] = {}  # op id -> its row's facts (None: no row), until lower ids come
        self.waiting: dict[int, tuple] = {}  # op id -> facts, its estimate may still come from the model's thread
        self.early: dict[int, tuple] = {}  # op id -> an estimate that came before its op
        self.next_id = 1  # the lowest op id not written
        self.held: list[tuple] = []  # rows resolved in order, not rendered yet
        self.files = None  # the two open part files, once the first rows are rendered
        self.slots: dict[tuple, tuple] = {}
        self.heads: dict[tuple, tuple] = {}  # (op name, fidelity) -> a row's text before its id, and its middle
        self.cycle = 0  # the device log's clock, as the exporter's
        self.rows = 0  # rows written or held
        self.on_model_thread = _NamesOnModelThread()
        self.stopped = False  # the capture's STOP came: it closed (else it was killed, and nobody waits for them)
        self.finish_s = 0.0  # finish()'s wall time

    # -- as batches commit ------------------------------------------------------------------------
    def add(self, batch: list, staging: list, rows: dict, con) -> None:
        """Take a committed batch: its ops (batch), their staging rows (the first tensor row of each), the other
        rows it inserted (writer's `rows`); con reads back a tensor row this object no longer holds."""
        if self.why is not None:
            return
        self.stopped = self.stopped or any(item[0] == STOP for item in batch)
        try:
            self._add(batch, staging, rows, con)
        except Exception as e:  # noqa: BLE001 - the files are written from the db at close instead; `why` says so
            self._give_up(f"{type(e).__name__}: {e}")

    def _add(self, batch, staging, rows, con) -> None:
        for facts in rows["devices"]:
            self.cores_of.setdefault(facts["device_id"], _product(facts.get("num_x_compute_cores"),
                                                                   facts.get("num_y_compute_cores")))
        if rows["devices"]:
            self._widths(self.n_in, self.n_out, max((c for c in self.cores_of.values() if c), default=None) or 64)
        for spec in rows["tensor_specs"]:  # (spec_id, shape, dtype, layout, memory_config, padded_shape, placement)
            self.specs[spec[0]] = (spec[1], spec[3], spec[2], spec[4])
        # Tensor rows in the order the batch inserted them (INSERT OR IGNORE: the first of an id stays).
        note = self._note
        at = STAGING_TENSOR.start
        for row in staging:
            if row[at] is not None:
                note(row[STAGING_TENSOR])
        for row in rows["tensor_records"]:
            note(row)
        estimates: dict[int, tuple] = {}
        for (table, cols), values in rows["other"].items():
            if table == "device_perf":
                op, c, b, i, f = (cols.index(c) for c in ("operation_id", "compute_ns", "bandwidth_ns", "ideal_ns",
                                                          "math_fidelity"))
                for v in values:
                    est = (v[c], v[b], v[i], v[f])
                    if float in (type(est[0]), type(est[1]), type(est[2])):  # never from device_sim's model
                        est = (_integer(est[0]), _integer(est[1]), _integer(est[2]), est[3])
                    estimates[v[op]] = est
            elif table in _TABLES_READ:
                return self._give_up(f"a {table} row from outside the ops")
        still = self.waiting  # ops of the previous batch that may have waited for a model-thread estimate
        self.waiting = waiting = {}
        tensors, on_model_thread, resolved, early = self.tensors, self.on_model_thread, self.resolved, self.early
        for item in batch:
            if item[0] != OP:
                continue
            item = records.view(item)
            op_id = item.operation_id
            ins, outs = [], []
            for tids, numbers in ((item.inputs, ins), (item.outputs, outs)):
                for tid in tids:
                    n = tensors.get(tid)
                    if n is None:
                        n = self._key(tid, con)
                        if n is None:
                            continue
                    numbers.append(n)
            if len(ins) > self.n_in or len(outs) > self.n_out:
                self._widths(max(len(ins), self.n_in), max(len(outs), self.n_out), self.cores)
            est = estimates.pop(op_id, None)
            if est is None and early:
                est = early.pop(op_id, None)
            if est is not None:
                resolved[op_id] = (op_id, item.name, item.start_ns, item.end_ns, tuple(ins), tuple(outs), *est)
            elif item.error is None and on_model_thread[item.name]:
                # its estimate follows it in the log, maybe in the next batch
                waiting[op_id] = (op_id, item.name, item.start_ns, item.end_ns, tuple(ins), tuple(outs))
            else:
                resolved[op_id] = None
        for op_id, est in estimates.items():  # those of ops in an earlier batch, or of ops still to come
            facts = self.waiting.pop(op_id, None) or still.pop(op_id, None)
            if facts is not None:
                self.resolved[op_id] = facts + est
            elif op_id >= self.next_id and op_id not in self.resolved:
                self.early[op_id] = est
            else:
                return self._give_up(f"op {op_id}'s estimate came after its row was written")
        for op_id in still:  # a batch later: no estimate
            self.resolved[op_id] = None
        if self.why is None:
            self._advance()

    def _note(self, row) -> None:
        """A `tensors` row (tensor id, spec_id, device id, address, buffer type, ...) this batch inserted."""
        tid = row[0]
        if tid in self.tensors or tid <= self.max_dropped[tid >= MADE_TENSOR_ID_BASE]:
            return  # inserted before (the db keeps the first), or maybe: the db is asked when it is named
        self._keep(tid, self._number(row[1], row[4], row[2]))

    def _keep(self, tid: int, n: int) -> int:
        tensors = self.tensors
        if len(tensors) >= MAX_TENSORS:
            for old in list(tensors)[:len(tensors) // 2]:
                made = old >= MADE_TENSOR_ID_BASE
                self.max_dropped[made] = max(self.max_dropped[made], old)
                del tensors[old]
        tensors[tid] = n
        return n

    def _number(self, spec_id, buffer_type, device_id) -> int:
        key = (spec_id, buffer_type, device_id)
        n = self.fields.numbers.get(key)
        if n is None:
            shape, layout, dtype, memory_config = self.specs[spec_id]
            n = self.fields.add(key, (shape, layout, dtype, buffer_type, memory_config, device_id))
        return n

    def _key(self, tid, con) -> int | None:
        n = self.tensors.get(tid)
        if n is not None:
            return n
        row = con.execute("SELECT spec_id, buffer_type, device_id FROM main.tensors WHERE tensor_id = ?",
                          (tid,)).fetchone()
        if row is None:  # no row (yet): as the exporter's join, no tensor; one inserted later is found at close
            self.unlinked.add(tid)
            if len(self.unlinked) > MAX_UNLINKED:
                self._give_up(f"over {MAX_UNLINKED} tensors named without a row")
            return None
        if row[0] is None:
            raise ValueError(f"tensor {tid}'s row has no spec_id")
        return self._keep(tid, self._number(*row))  # newest again: a model's weights are named op after op

    def _widths(self, n_in: int, n_out: int, cores: int) -> None:
        """The header's tensor slots or the core count changed: fine while nothing is rendered."""
        if (n_in, n_out, cores) == (self.n_in, self.n_out, self.cores):
            return
        if self.files is not None:
            self._give_up(f"the widest op ({self.n_in}, {self.n_out} -> {n_in}, {n_out}) or the core count "
                          f"({self.cores} -> {cores}) changed after {HOLD_ROWS} rows")
        self.n_in, self.n_out, self.cores = n_in, n_out, cores
        self.slots.clear()
        self.heads.clear()

    def _advance(self) -> None:
        """Move every op whose lower ids have all come into `held`; render them once there are HOLD_ROWS."""
        resolved, held = self.resolved, self.held
        n = self.next_id
        while n in resolved:
            facts = resolved.pop(n)
            if facts is not None:
                held.append(facts)
                self.rows += 1
            n += 1
        self.next_id = n
        if len(resolved) + len(self.waiting) > MAX_WAITING:
            self._give_up(f"over {MAX_WAITING} ops waiting for op {n}")
        elif self.files is not None or len(held) >= HOLD_ROWS:
            self._render()

    def _render(self) -> None:
        if self.files is None:
            # Open across batches until finish() or giving up closes them (_close_parts).
            self.files = tuple(open(p, "w", newline="") for p in self.parts)  # noqa: SIM115
            self.files[0].write(ops_perf.header_text(self.n_in, self.n_out))
            self.files[1].write(ops_perf.DEVICE_LOG_START)
        slots, fields, n_in, n_out, cores = self.slots, self.fields, self.n_in, self.n_out, self.cores
        lines, zones = [], []
        cycle = self.cycle
        op_lines = ops_perf.op_lines
        heads = self.heads
        for op_id, name, start, end, ins, outs, compute, bandwidth, ideal, fidelity in self.held:
            key = (ins, outs)
            columns, device = slots.get(key) or slots.setdefault(key, ops_perf._slots(fields, ins, outs, n_in, n_out))
            end_cycle = cycle + ideal
            if type(start) is int and type(end) is int and type(ideal) is int and type(compute) is int \
                    and type(bandwidth) is int:
                # op_lines' row with the cells that repeat (the name, the fidelity, the cores) rendered once per op
                # name: the same text, 1.4 -> 0.9 µs a row (tests/test_live_perf.py holds the bytes to the exporter's)
                head = heads.get((name, fidelity)) or heads.setdefault(
                    (name, fidelity), (f"{ops_perf._cell(name.removeprefix('ttnn.'))},tt_dnn_device,",
                                       f",,{ops_perf._cell(fidelity)},{cores},,"))
                lines.append(f"{head[0]}{op_id},{device}{head[1]}{start},{end},{end - start},{cycle},{end_cycle},"
                             f"{ideal},{ideal},,,,,,,,{columns},,,,,{ideal},{compute},{bandwidth},,\r\n")
                zones.append(f"0,1,1,BRISC,0,{cycle},0,{op_id},{op_id},BRISC-FW,ZONE_START,0,device_sim\r\n"
                             f"0,1,1,BRISC,0,{end_cycle},0,{op_id},{op_id},BRISC-FW,ZONE_END,0,device_sim\r\n")
            else:
                line, zone = op_lines(op_id, name, start, end, compute, bandwidth, ideal, fidelity, columns, device,
                                      cores, cycle)
                lines.append(line)
                zones.append(zone)
            cycle = end_cycle
        self.cycle = cycle
        self.held.clear()
        self.files[0].writelines(lines)
        self.files[1].writelines(zones)

    def _give_up(self, why: str) -> None:
        if self.why is None:
            self.why = why
        for held in (self.resolved, self.waiting, self.held, self.tensors):
            held.clear()
        self._close_parts(remove=True)

    def _close_parts(self, remove: bool) -> None:
        files, self.files = self.files, None
        for f in files or ():
            f.close()
        if remove:
            for p in self.parts:
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()

    # -- at close ----------------------------------------------------------------------------------
    def finish(self, con) -> bool:
        """Write what is left, check the counts against the db, move both files beside it (True); False: the
        capture must write them from the db (`why` says why)."""
        started = time.perf_counter()
        if self.why is None and not self.stopped:
            self._give_up("the capture did not close (killed): no one writes them then, as before")
        if self.why is None:
            try:
                return self._finish(con)
            except Exception as e:  # noqa: BLE001 - an OSError (a full disk) or a bug: the exporter runs instead
                self._give_up(f"{type(e).__name__}: {e}")
            finally:
                self.finish_s = time.perf_counter() - started
        self._close_parts(remove=True)
        return False

    def _finish(self, con) -> bool:
        for op_id in self.waiting:  # the last batch has come: no estimate
            self.resolved[op_id] = None
        self.waiting = {}
        if self.early:
            self._give_up(f"estimates of {len(self.early)} ops that never came (op {min(self.early)})")
            return False
        for op_id in sorted(self.resolved):  # ids that never came (none in a whole log) are passed over
            self.next_id = max(self.next_id, op_id)
            self._advance()
        cores = con.execute("SELECT MAX(num_x_compute_cores * num_y_compute_cores) FROM devices").fetchone()[0] or 64
        rows = con.execute("SELECT COUNT(*) FROM device_perf").fetchone()[0]  # each row of an op this file saw
        linked = 0
        unlinked = list(self.unlinked)
        for i in range(0, len(unlinked), 500):
            chunk = unlinked[i:i + 500]
            linked += con.execute(f"SELECT COUNT(*) FROM tensors WHERE tensor_id IN ({','.join('?' * len(chunk))})",
                                  chunk).fetchone()[0]
        if (cores, rows, linked) != (self.cores, self.rows, 0):
            self._give_up(f"the db has {rows} estimated ops, {cores} cores and {linked} late tensor rows; this "
                          f"file {self.rows}, {self.cores} and 0")
            return False
        self._render()
        self._close_parts(remove=False)
        for part, name in zip(self.parts, (ops_perf.PERF_FILE, ops_perf.DEVICE_LOG_FILE)):
            os.replace(part, self.folder / name)
        return True


class _NamesOnModelThread(dict):
    """op name -> whether the model's thread makes its estimate (log_perf.ON_MODEL_THREAD), worked out once."""

    def __missing__(self, name: str) -> bool:
        here = self[name] = name.rsplit(".", 1)[-1] in ON_MODEL_THREAD
        return here


def _product(x, y):
    return None if x is None or y is None else x * y


def _integer(v):
    """A value as an INTEGER column gives it back (SQLite keeps a float that is a whole number as an int)."""
    return int(v) if type(v) is float and v.is_integer() else v
