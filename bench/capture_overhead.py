"""1. Capture overhead: the same loop of small ops bare, under ttreport, under torch.profiler,
and its records written the way TT-NN's original report writer did (a commit per INSERT).

Model-thread time is the loop's wall time inside the capture; closing (draining the queues)
is timed on its own and shown, not judged.

torch.profiler is run over the same device_sim loop (the per-op overhead a TT-NN user pays
to profile this model with it, and what the 3x target is judged against) and over a plain
torch loop of the same 32x32 adds. The plain loop has no Python frames per op, so
with_stack records next to nothing there: shown, not judged.
"""

from __future__ import annotations

import sqlite3
import time

import torch
import torch.profiler

import device_sim as ttnn
import ttreport
from bench.common import Figure, at_least, at_most, info, median, small_inputs, timed


def run(tmp, *, n_ops: int, repeats: int, commit_ops: int) -> list[Figure]:
    device = ttnn.open_device(0)
    try:
        return _run(tmp, device, n_ops, repeats, commit_ops)
    finally:
        ttnn.close_device(device)


def _run(tmp, device, n_ops, repeats, commit_ops) -> list[Figure]:
    a, b = small_inputs(device)
    x, y = a.value.clone(), b.value.clone()  # the same 32x32 bfloat16 values, as plain torch tensors

    def device_loop():
        for _ in range(n_ops):
            ttnn.add(a, b)

    def torch_loop():
        for _ in range(n_ops):
            torch.add(x, y)

    def captured(name, tensors):
        cap = ttreport.capture(tmp / name, config=ttreport.Config(tensors=tensors, stack_traces=True))
        cap.start()
        try:
            loop = timed(device_loop)
        finally:
            t = time.perf_counter()
            cap.stop()
        return loop, time.perf_counter() - t

    def profiled(loop_fn):
        with torch.profiler.profile(record_shapes=True, with_stack=True) as prof:
            loop = timed(loop_fn)
        del prof  # its post-processing on exit is not counted: only the time the model saw
        return loop

    device_loop(), torch_loop()  # warm-up: first calls, caches
    bare, meta, meta_close, full, full_close, dprof, tbare, tprof = ([] for _ in range(8))
    for r in range(repeats):
        bare.append(timed(device_loop))
        loop, close = captured(f"meta-{r}", "none")
        meta.append(loop), meta_close.append(close)
        loop, close = captured(f"tensors-{r}", "outputs")
        full.append(loop), full_close.append(close)
        dprof.append(profiled(device_loop))
        tbare.append(timed(torch_loop))
        tprof.append(profiled(torch_loop))

    us = 1e6 / n_ops
    bare_us, meta_us, full_us = median(bare) * us, median(meta) * us, median(full) * us
    added, added_full = meta_us - bare_us, full_us - bare_us
    prof_added = (median(dprof) - median(bare)) * us
    torch_prof_added = (median(tprof) - median(tbare)) * us
    commit_us = _commit_per_insert_us(tmp / "meta-0" / "db.sqlite", tmp / "commit-per-insert.sqlite", commit_ops)
    floor = 0.05  # µs: a ratio against an overhead measured as ~0 would be noise over noise
    return [
        info("device_sim add 32x32 bf16, uncaptured", bare_us, "µs/op"),
        at_most("ttreport metadata+stacks: added on model thread", added, "µs/op", 10),
        info("ttreport metadata+stacks: close (drain) per op", median(meta_close) * us, "µs/op"),
        info("ttreport with tensors: added on model thread", added_full, "µs/op"),
        info("ttreport with tensors: close (drain) per op", median(full_close) * us, "µs/op"),
        info("torch.profiler(record_shapes, with_stack) on the same loop: added", prof_added, "µs/op"),
        info("torch.add 32x32 bf16 (plain torch loop), uncaptured", median(tbare) * us, "µs/op"),
        info("torch.profiler on the plain torch loop: added", torch_prof_added, "µs/op"),
        info(f"commit-per-insert writer ({commit_ops} ops): per op", commit_us, "µs/op"),
        at_least("torch.profiler added / ttreport added", prof_added / max(added, floor), "x", 3),
        at_least("commit-per-insert / ttreport added", commit_us / max(added, floor), "x", 100),
    ]


# TT-NN's original report writer: plain tables, default journal (DELETE, synchronous FULL),
# and `conn.commit()` after every INSERT, on the model's thread.
_TT_NN_TABLES = [
    "CREATE TABLE operations (operation_id int UNIQUE, name text, duration float)",
    "CREATE TABLE operation_arguments (operation_id int, name text, value text)",
    "CREATE TABLE input_tensors (operation_id int, input_index int, tensor_id int)",
    "CREATE TABLE output_tensors (operation_id int, output_index int, tensor_id int)",
    "CREATE TABLE tensors (tensor_id int UNIQUE, shape text, dtype text, layout text, memory_config text, "
    "device_id int, address int, buffer_type int)",
    "CREATE TABLE stack_traces (operation_id int, stack_trace text)",
]


def _commit_per_insert_us(report_db, out_db, n_ops: int) -> float:
    """µs per op to write the first `n_ops` ops' records of `report_db` with a commit per INSERT."""
    src = sqlite3.connect(f"file:{report_db}?mode=ro", uri=True)
    ops = src.execute("SELECT operation_id, name, duration FROM operations ORDER BY operation_id LIMIT ?",
                      (n_ops,)).fetchall()
    per_op = []
    for op in ops:
        op_id = op[0]
        inserts = [("operations", op)]
        inserts += [("operation_arguments", r) for r in src.execute(
            "SELECT operation_id, name, value FROM operation_arguments WHERE operation_id = ?", (op_id,))]
        for table in ("input_tensors", "output_tensors"):
            index = "input_index" if table == "input_tensors" else "output_index"
            inserts += [(table, r) for r in src.execute(
                f"SELECT operation_id, {index}, tensor_id FROM {table} WHERE operation_id = ?", (op_id,))]
        inserts += [("tensors", r) for r in src.execute(
            "SELECT t.tensor_id, shape, dtype, layout, memory_config, device_id, address, buffer_type "
            "FROM output_tensors x JOIN tensors t USING (tensor_id) WHERE x.operation_id = ?", (op_id,))]
        inserts += [("stack_traces", r) for r in src.execute(
            "SELECT operation_id, stack_trace FROM stack_traces WHERE operation_id = ?", (op_id,))]
        per_op.append(inserts)
    src.close()

    con = sqlite3.connect(out_db)
    for ddl in _TT_NN_TABLES:
        con.execute(ddl)
    con.commit()
    t = time.perf_counter()
    for inserts in per_op:
        for table, row in inserts:
            con.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})", row)
            con.commit()
    elapsed = time.perf_counter() - t
    con.close()
    return elapsed / len(per_op) * 1e6
