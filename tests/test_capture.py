"""Capturing real device_sim runs into a report: every table's rows, errors, threads, signals."""

import inspect
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import warnings
import weakref
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport import Config, db

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def exp_plus_one():
    """An op built from two ops, as TT-NN's composite ops are: its children are nested ops.

    Registered for one test only: the op table is global, and other tests check what it holds.
    """
    def body(x):
        return ttnn.add(ttnn.exp(x), 1.0)

    try:
        yield ttnn.register_op("test.exp_plus_one")(body)
    finally:
        del ttnn.OPS["test.exp_plus_one"]


def rows(report, sql, *params):
    con = sqlite3.connect(report.db_path)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(sql, params)]
    finally:
        con.close()


def one(report, sql, *params):
    found = rows(report, sql, *params)
    assert len(found) == 1, found
    return found[0]


def line_of(marker: str) -> int:
    """The line of this file holding `marker`, so stack-trace tests survive edits above them."""
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text and "line_of" not in text)


@pytest.fixture
def weight(device):
    return ttnn.from_torch(torch.randn(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)


def test_a_small_model_fills_operations_arguments_tensors_and_links(tmp_path, device, weight):
    with ttreport.capture(tmp_path / "r") as report:
        x = ttnn.from_torch(torch.randn(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                            memory=ttnn.L1)
        y = ttnn.mul(x, weight)
        z = ttnn.exp(y, memory_config=ttnn.DRAM)
        r = ttnn.reshape(z, (64, 32))
    assert report.status == "complete"

    ops = rows(report, "SELECT * FROM operations ORDER BY operation_id")
    assert [o["name"] for o in ops] == ["ttnn.from_torch", "ttnn.mul", "ttnn.exp", "ttnn.reshape"]
    assert [o["operation_id"] for o in ops] == sorted({o["operation_id"] for o in ops})
    assert all(o["status"] == "ok" and o["depth"] == 0 and o["parent_operation_id"] is None for o in ops)
    assert all(o["duration"] > 0 and o["end_ns"] > o["start_ns"] >= 0 for o in ops)
    assert all(o["thread"] == threading.current_thread().name for o in ops)
    mul_id, exp_id, reshape_id = (o["operation_id"] for o in ops[1:])

    args = rows(report, "SELECT name, value FROM operation_arguments WHERE operation_id = ? ORDER BY rowid", mul_id)
    assert args == [
        {"name": "0", "value": f"ttnn.Tensor(id={x.tensor_id}, shape=Shape([32, 64]), dtype=DataType.BFLOAT16, "
                               f"layout=Layout.TILE, L1 INTERLEAVED)"},
        {"name": "1", "value": f"ttnn.Tensor(id={weight.tensor_id}, shape=Shape([32, 64]), "
                               f"dtype=DataType.BFLOAT16, layout=Layout.TILE, DRAM INTERLEAVED)"},
    ]
    reshape_args = rows(report, "SELECT name, value FROM operation_arguments WHERE operation_id = ?", reshape_id)
    assert {"name": "1", "value": "(64, 32)"} in reshape_args
    exp_args = {a["name"]: a["value"] for a in rows(report, "SELECT * FROM operation_arguments WHERE "
                                                             "operation_id = ?", exp_id)}
    assert exp_args["memory_config"] == repr(ttnn.DRAM)

    tensors = {t["tensor_id"]: t for t in rows(report, "SELECT * FROM tensors")}
    assert set(tensors) == {weight.tensor_id, x.tensor_id, y.tensor_id, z.tensor_id, r.tensor_id}
    tx, tw, tz = tensors[x.tensor_id], tensors[weight.tensor_id], tensors[z.tensor_id]
    assert (tx["buffer_type"], tx["address"], tx["memory_config_source"]) == (1, x.buffer_address(), "argument")
    assert tx["memory_config"] == repr(ttnn.L1) and tx["device_id"] == device.device_id
    assert (tw["buffer_type"], tw["address"], tw["producer_operation_id"]) == (0, weight.buffer_address(), None)
    assert (tz["buffer_type"], tz["address"], tz["producer_operation_id"]) == (0, z.buffer_address(), exp_id)
    assert tensors[y.tensor_id]["memory_config_source"] == "default"  # L1 and DRAM inputs disagree
    assert tensors[r.tensor_id]["shape"] == "Shape([64, 32])" and tensors[r.tensor_id]["padded_shape"] == \
        "Shape([64, 32])"
    assert tx["dtype"] == "DataType.BFLOAT16" and tx["layout"] == "Layout.TILE"
    assert tx["size"] == x.buffer.size and tx["file"] is None

    links = rows(report, "SELECT 'in' AS d, operation_id, input_index AS i, tensor_id FROM input_tensors UNION ALL "
                         "SELECT 'out', operation_id, output_index, tensor_id FROM output_tensors ORDER BY 2, 1, 3")
    assert [(lk["d"], lk["operation_id"], lk["i"], lk["tensor_id"]) for lk in links] == [
        ("out", ops[0]["operation_id"], 0, x.tensor_id),
        ("in", mul_id, 0, x.tensor_id), ("in", mul_id, 1, weight.tensor_id), ("out", mul_id, 0, y.tensor_id),
        ("in", exp_id, 0, y.tensor_id), ("out", exp_id, 0, z.tensor_id),
        ("in", reshape_id, 0, z.tensor_id), ("out", reshape_id, 0, r.tensor_id),
    ]
    assert one(report, "SELECT * FROM devices") == device.facts()


def test_buffers_after_each_op_follow_allocations_and_frees(tmp_path, device, weight):
    with ttreport.capture(tmp_path / "r") as report:
        a = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=device, memory=ttnn.L1)
        b = ttnn.exp(a)
        ttnn.deallocate(a)
        c = ttnn.neg(b)
    ids = [o["operation_id"] for o in rows(report, "SELECT operation_id FROM operations ORDER BY 1")]

    def live_after(op_id):
        return {(r["address"], r["buffer_type"]) for r in rows(report, "SELECT * FROM buffers WHERE operation_id = ?",
                                                               op_id)}

    a_row = one(report, "SELECT * FROM tensors WHERE tensor_id = ?", a.tensor_id)  # a is freed: ask the report
    w_buf, a_buf, b_buf, c_buf = (weight.buffer_address(), 0), (a_row["address"], 1), (b.buffer_address(), 1), \
        (c.buffer_address(), 1)
    assert live_after(ids[0]) == {w_buf, a_buf}  # the weight was live before the capture began
    assert live_after(ids[1]) == {w_buf, a_buf, b_buf}
    assert live_after(ids[2]) == {w_buf, b_buf}  # deallocate freed a
    assert live_after(ids[3]) == {w_buf, b_buf, c_buf}
    mem = rows(report, "SELECT l1_bytes, dram_bytes FROM memory_after_op ORDER BY operation_id")
    assert mem[-1]["l1_bytes"] == device.memory.bytes_used(ttnn.BufferType.L1)
    assert mem[2]["l1_bytes"] < mem[1]["l1_bytes"]
    before = one(report, "SELECT * FROM buffer_lifetimes WHERE address = ? AND buffer_type = 0",
                 weight.buffer_address())
    assert before["allocated_seq"] == 0 and before["allocated_by_operation_id"] is None
    # c reuses a's freed address: two lifetimes at one address, the first one ended
    first, second = rows(report, "SELECT * FROM buffer_lifetimes WHERE address = ? AND buffer_type = 1 "
                                 "ORDER BY allocated_seq", a_row["address"])
    assert first["allocated_by_operation_id"] == ids[0] and first["freed_seq"] < second["allocated_seq"]
    assert second["allocated_by_operation_id"] == ids[3] and second["freed_seq"] is None


def test_buffer_pages_list_every_page_of_every_live_l1_buffer_when_asked(tmp_path, device):
    with ttreport.capture(tmp_path / "r", config=Config(buffer_pages=True)) as report:
        x = ttnn.from_torch(torch.ones(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                            memory=ttnn.L1)  # 4 tiles of 2 KiB, round-robin over the 64 L1 banks
        y = ttnn.exp(x, memory=ttnn.DRAM)  # DRAM pages are not listed, as in TT-NN
    first, second = (o["operation_id"] for o in rows(report, "SELECT operation_id FROM operations ORDER BY 1"))
    pages = rows(report, "SELECT * FROM buffer_pages WHERE operation_id = ? ORDER BY page_index", first)
    assert [(p["page_index"], p["bank_id"], p["core_y"], p["core_x"], p["page_address"], p["page_size"])
            for p in pages] == [(i, i, 0, i, x.buffer_address(), 2048) for i in range(4)]
    assert {(p["address"], p["buffer_type"], p["device_id"]) for p in pages} == {(x.buffer_address(), 1, 0)}
    assert len(rows(report, "SELECT * FROM buffer_pages WHERE operation_id = ?", second)) == 4
    assert y.buffer.buffer_type == ttnn.BufferType.DRAM
    with ttreport.capture(tmp_path / "off") as off:
        ttnn.exp(x)
    assert rows(off, "SELECT * FROM buffer_pages") == []


def test_nested_ops_have_parent_and_depth(tmp_path, device, weight, exp_plus_one):
    with ttreport.capture(tmp_path / "r") as report:
        exp_plus_one(weight)
    ops = rows(report, "SELECT operation_id, name, parent_operation_id, depth FROM operations ORDER BY 1")
    outer = ops[0]["operation_id"]
    assert [(o["name"], o["parent_operation_id"], o["depth"]) for o in ops] == [
        ("test.exp_plus_one", None, 0), ("ttnn.exp", outer, 1), ("ttnn.add", outer, 1)]
    # the outer op's output is the add's output tensor: produced by the innermost op
    out = one(report, "SELECT tensor_id FROM output_tensors WHERE operation_id = ?", outer)["tensor_id"]
    assert one(report, "SELECT producer_operation_id FROM tensors WHERE tensor_id = ?", out)[
        "producer_operation_id"] == ops[2]["operation_id"]


def test_stack_traces_show_the_users_line_not_the_library(tmp_path, device, weight):
    with ttreport.capture(tmp_path / "r") as report:
        for _ in range(3):
            weight + weight  # the op's call site (marker: STACK-LINE)
    traces = rows(report, "SELECT stack_trace FROM stack_traces")
    assert len(traces) == 3 and len({t["stack_trace"] for t in traces}) == 1
    assert len(rows(report, "SELECT * FROM stack_trace_texts")) == 1  # stored once
    text = traces[0]["stack_trace"]
    first = text.splitlines()[:2]  # innermost first, as TT-NN stores it: the visualizer labels the op with it
    assert first == [f'  File "{__file__}", line {line_of("marker: STACK-LINE")}, '
                    f"in {inspect.currentframe().f_code.co_name}",
                    "    weight + weight  # the op's call site (marker: STACK-LINE)"]
    assert "device_sim" not in text and "ttreport" + "/" not in text


def test_an_op_that_raises_is_recorded_and_its_exception_propagates_unchanged(tmp_path, device, weight):
    other = ttnn.from_torch(torch.ones(64, 32), layout=ttnn.TILE, device=device)
    with pytest.raises(RuntimeError) as caught, ttreport.capture(tmp_path / "r") as report:
        ok = ttnn.exp(weight)
        ttnn.add(ok, other)  # marker: RAISING-OP
    op = one(report, "SELECT * FROM operations WHERE name = 'ttnn.add'")
    assert op["status"] == "error"
    err = one(report, "SELECT * FROM errors")
    assert (err["operation_id"], err["operation_name"], err["error_type"]) == (op["operation_id"], "ttnn.add",
                                                                               "RuntimeError")
    assert err["error_message"] == str(caught.value)
    assert f'line {line_of("marker: RAISING-OP")}' in err["stack_trace"]
    assert err["stack_trace"].rstrip().endswith(f"RuntimeError: {caught.value}")
    assert err["timestamp"][:2] == "20"
    assert report.status == "error"
    assert one(report, "SELECT value FROM report_metadata WHERE key = 'status'")["value"] == "error"
    assert ttnn.get_hook() is None


def test_an_exception_from_the_models_own_code_is_recorded_with_its_traceback(tmp_path, device, weight):
    def model(x):
        ttnn.exp(x)
        raise KeyError("no layer named blocks.7")  # marker: MODEL-RAISES

    with pytest.raises(KeyError), ttreport.capture(tmp_path / "r") as report:
        model(weight)
    err = one(report, "SELECT * FROM errors")  # one row: no op raised it
    assert (err["operation_id"], err["operation_name"], err["error_type"]) == (None, None, "KeyError")
    assert err["error_message"] == "'no layer named blocks.7'"
    trace = err["stack_trace"]
    assert trace.startswith("Traceback (most recent call last):\n") and "ttreport" + os.sep + "capture.py" not in trace
    assert f'line {line_of("marker: MODEL-RAISES")}, in model' in trace
    assert trace.rstrip().endswith("KeyError: 'no layer named blocks.7'")
    assert report.status == "error"
    from click.testing import CliRunner

    from ttreport.cli import main

    shown = CliRunner().invoke(main, ["summary", str(report.path)]).output
    assert "errors    1\n  the model raised: KeyError: 'no layer named blocks.7'" in shown


def test_two_threads_ops_are_all_recorded_with_unique_ids(tmp_path, device, weight):
    n = 200

    def work():
        for _ in range(n):
            ttnn.neg(weight)

    with ttreport.capture(tmp_path / "r") as report:
        threads = [threading.Thread(target=work, name=f"worker-{i}") for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    ops = rows(report, "SELECT operation_id, thread, depth FROM operations")
    assert len(ops) == 2 * n and len({o["operation_id"] for o in ops}) == 2 * n
    assert {o["thread"] for o in ops} == {"worker-0", "worker-1"}
    assert all(o["depth"] == 0 for o in ops)
    assert len(rows(report, "SELECT * FROM output_tensors")) == 2 * n


def test_a_capture_inside_a_capture_is_an_error(tmp_path):
    with ttreport.capture(tmp_path / "outer") as outer:
        with pytest.raises(ttreport.CaptureActiveError, match="already running.*outer"):
            ttreport.capture(tmp_path / "inner").start()
        assert ttnn.get_hook() is outer.recorder
    assert not (tmp_path / "inner").exists()
    assert ttnn.get_hook() is None


def test_an_existing_report_is_never_overwritten_silently(tmp_path, device):
    with ttreport.capture(tmp_path / "r"):
        ttnn.ones((32, 32), device=device)
    with pytest.raises(ttreport.ReportExistsError, match=r"r exists already.*new name.*overwrite=True"):
        ttreport.capture(tmp_path / "r").start()
    with ttreport.capture(tmp_path / "r", config=Config(overwrite=True)) as again:
        pass
    assert rows(again, "SELECT * FROM operations") == []
    (tmp_path / "not-a-report").mkdir()
    (tmp_path / "not-a-report" / "notes.txt").write_text("keep me")
    with pytest.raises(ttreport.ReportExistsError, match="not a report folder"):
        ttreport.capture(tmp_path / "not-a-report", config=Config(overwrite=True)).start()
    assert (tmp_path / "not-a-report" / "notes.txt").exists()


def test_names_live_under_the_root_and_cannot_escape_it(tmp_path):
    with ttreport.capture("run-1", config=Config(root=tmp_path / "root")) as report:
        pass
    assert report.path == tmp_path / "root" / "run-1" and report.db_path == report.path / "db.sqlite"
    for bad in ("..", ".", ""):
        with pytest.raises(ValueError, match="plain folder name"):
            ttreport.capture(bad, config=Config(root=tmp_path / "root")).start()
    with ttreport.capture(config=Config(root=tmp_path / "root")) as unnamed:
        pass
    assert unnamed.path.parent == tmp_path / "root" and unnamed.path.name.startswith("report-")


def test_a_string_that_is_clearly_a_path_is_used_as_a_path(tmp_path, monkeypatch):
    root = tmp_path / "root"
    with ttreport.capture(str(tmp_path / "abs-run"), config=Config(root=root)) as absolute:
        pass
    assert absolute.path == tmp_path / "abs-run" and not root.exists()
    monkeypatch.chdir(tmp_path)
    with ttreport.capture("out/run-1", config=Config(root=root)) as relative:
        pass
    assert relative.path == Path("out/run-1") and (tmp_path / "out" / "run-1" / "db.sqlite").is_file()
    with ttreport.capture("plain", config=Config(root=root)) as plain:
        pass
    assert plain.path == root / "plain"


def test_profile_works_without_parentheses(tmp_path, device, weight, monkeypatch):
    monkeypatch.setenv("TTREPORT_CONFIG", json.dumps({"root": str(tmp_path)}))

    @ttreport.profile
    def step(t):
        return ttnn.exp(t)

    assert step(weight).shape == weight.shape
    assert step.profile.last.status == "complete" and step.profile.last.path.parent == tmp_path
    assert step.__name__ == "step"


def test_a_named_profile_called_in_a_loop_numbers_a_report_per_call(tmp_path, device, weight):
    @ttreport.profile(name="x", config=Config(root=tmp_path))
    def step(t):
        return ttnn.exp(t)

    paths = []
    for _ in range(3):
        step(weight)
        paths.append(step.profile.last.path)
    assert paths == [tmp_path / "x", tmp_path / "x-2", tmp_path / "x-3"]
    for p in paths:
        with ttreport.open(p) as r:
            assert r.status == "complete" and r.count_operations() == 1


def test_metadata_and_config_json_describe_the_run(tmp_path):
    cfg = Config(tensors="outputs", stack_depth=4)
    with ttreport.capture(tmp_path / "r", config=cfg) as report:
        pass
    meta = {r["key"]: r["value"] for r in rows(report, "SELECT * FROM report_metadata")}
    assert meta["schema_version"] == "2" and meta["ttreport_schema_revision"] == db.head_revision()
    assert meta["status"] == "complete" and meta["torch_version"] == torch.__version__
    assert meta["python_version"] == ".".join(map(str, sys.version_info[:3]))
    assert meta["started_at"] < meta["ended_at"]
    assert {"ttreport_version", "host"} <= set(meta)
    saved = json.loads((report.path / "config.json").read_text())
    assert saved["config"]["tensors"] == "outputs" and saved["config"]["stack_depth"] == 4
    assert saved["started_at"] == meta["started_at"]
    # closed: one plain file, checkpointed, every index in place
    assert not (report.path / "db.sqlite-wal").exists()
    names = {r["name"] for r in rows(report, "SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"ix_operations_name_duration", "ix_input_tensors_tensor"} <= names


def test_profile_decorator_makes_a_report_per_call(tmp_path, device, weight):
    @ttreport.profile(config=Config(root=tmp_path))
    def step(t):
        return ttnn.exp(t)

    step(weight)
    first = step.profile.last
    step(weight)
    second = step.profile.last
    assert first.path != second.path and first.path.name.startswith("step-")
    assert first.status == second.status == "complete"
    assert [r["name"] for r in rows(second, "SELECT name FROM operations")] == ["ttnn.exp"]


def test_emit_and_store_tensor_are_the_seam_for_golden_comparison(tmp_path):
    with ttreport.capture(tmp_path / "r") as report:
        golden = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        tid = report.recorder.store_tensor(golden, "DataType.FLOAT32", producer_operation_id=None)
        report.recorder.emit("local_tensor_comparison_records",
                             {"tensor_id": 1, "golden_tensor_id": tid, "matches": 1, "desired_pcc": 0.99,
                              "actual_pcc": 1.0})
        with pytest.raises(ValueError, match="no table 'nope'"):
            report.recorder.emit("nope", {})
        with pytest.raises(ValueError, match="no column"):
            report.recorder.emit("tensors", {"colour": 1})
    row = one(report, "SELECT * FROM tensors WHERE tensor_id = ?", tid)
    assert (row["shape"], row["dtype"], row["file"]) == ("Shape([2, 3])", "DataType.FLOAT32", f"tensors/{tid}.pt")
    assert torch.equal(ttreport.load_tensor(report.path, tid), golden)
    assert one(report, "SELECT golden_tensor_id FROM local_tensor_comparison_records")["golden_tensor_id"] == tid


def run_script(tmp_path, body: str, **popen) -> subprocess.Popen:
    script = textwrap.dedent(f"""
        from pathlib import Path
        import torch
        import device_sim as ttnn, ttreport
        dev = ttnn.open_device(0)
        x = ttnn.from_torch(torch.ones(32, 32), layout=ttnn.TILE, device=dev)
        report = Path({str(tmp_path / "r")!r})
    """) + textwrap.dedent(body)
    return subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True, **popen)


def report_state(path):
    con = sqlite3.connect(path / "db.sqlite")
    try:
        return dict(con.execute("SELECT key, value FROM report_metadata")), \
            con.execute("SELECT COUNT(*) FROM operations").fetchone()[0]
    finally:
        con.close()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_leaves_a_complete_report_marked_interrupted(tmp_path, signum):
    proc = run_script(tmp_path, """
        with ttreport.capture(report):
            for i in range(10**9):
                x = ttnn.neg(x)
                if i == 100:
                    print("running", flush=True)
    """)
    try:
        assert proc.stdout.readline().strip() == "running"
        proc.send_signal(signum)
        assert proc.wait(timeout=60) == -signum  # it still ends by the signal, as it would without ttreport
    finally:
        if proc.poll() is None:  # a lost signal: the loop (10**9 ops) would fill the disk; its writer then ends too
            proc.kill()
            proc.wait(timeout=60)
    meta, n_ops = report_state(tmp_path / "r")
    assert meta["status"] == "interrupted" and "ended_at" in meta
    assert n_ops > 100
    assert not (tmp_path / "r" / "db.sqlite-wal").exists()


def test_a_capture_leaves_an_ignored_sigint_ignored(tmp_path):
    # A background job or nohup starts with SIGINT ignored: the model runs on through a Ctrl-C, as without ttreport.
    proc = run_script(tmp_path, """
        import os, signal
        with ttreport.capture(report) as cap:
            x = ttnn.neg(x)
            os.kill(os.getpid(), signal.SIGINT)  # delivered before kill() returns: ignored
            for _ in range(10):
                x = ttnn.neg(x)
            print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN, flush=True)
    """, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert proc.stdout.readline().strip() == "True"
    assert proc.wait(timeout=60) == 0
    meta, n_ops = report_state(tmp_path / "r")
    assert (meta["status"], n_ops) == ("complete", 11)


def test_a_capture_left_open_is_closed_at_interpreter_exit(tmp_path):
    proc = run_script(tmp_path, """
        ttreport.capture(report).start()
        for _ in range(10):
            x = ttnn.neg(x)
    """)
    assert proc.wait(timeout=60) == 0
    meta, n_ops = report_state(tmp_path / "r")
    assert (meta["status"], n_ops) == ("complete", 10)


def test_the_hook_and_listeners_are_restored(tmp_path, device):
    sentinel = []
    device.memory.listener = lambda event, buf: sentinel.append(event)
    try:
        with ttreport.capture(tmp_path / "r"):
            assert device.memory.listener != sentinel.append
        assert ttnn.get_hook() is None
        ttnn.ones((32, 32), device=device)
        assert sentinel == ["alloc"] or sentinel[:1] == ["alloc"]
    finally:
        device.memory.listener = None


def test_no_warning_for_an_ordinary_capture(tmp_path, device, weight):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ttreport.capture(tmp_path / "r"):
            ttnn.exp(weight)


def test_ctrl_c_that_lands_in_a_finalizer_reaches_the_model_at_the_next_op(tmp_path, weight):
    # A tensor's __del__ runs between any two bytecodes; a KeyboardInterrupt raised there would be
    # printed and swallowed by Python, and the model would run on as if Ctrl-C never came.
    class FreedWhileCtrlC:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # the handler runs at a bytecode boundary: here, inside __del__
                pass

    ops_after = []
    with pytest.raises(KeyboardInterrupt), ttreport.capture(tmp_path / "r") as report:
        x = FreedWhileCtrlC()
        del x
        ops_after.append(ttnn.exp(weight))  # raises at its start, before running
    assert ops_after == []
    assert one(report, "SELECT value FROM report_metadata WHERE key = 'status'")["value"] == "interrupted"
    assert rows(report, "SELECT * FROM operations") == []


class _Target:
    pass


def _ctrl_c_in_a_weakref_callback():
    """A Ctrl-C whose handler runs in a weakref callback (no __del__ frame): Python reports the KeyboardInterrupt
    to sys.unraisablehook and drops it."""
    def callback(_ref):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs at a bytecode boundary: here, inside the callback
            pass

    target = _Target()
    ref = weakref.ref(target, callback)
    del target
    return ref


def _ctrl_c_deep_in_a_finalizer(depth=20):
    """A Ctrl-C whose handler runs `depth` calls below a __del__: further down than _on_signal's frame walk looks."""
    def nested(n):
        if n:
            return nested(n - 1)
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            pass

    class Freed:
        def __del__(self):
            nested(depth)

    x = Freed()
    del x


@pytest.mark.parametrize("lose_it", [_ctrl_c_in_a_weakref_callback, _ctrl_c_deep_in_a_finalizer])
def test_a_ctrl_c_python_drops_as_unraisable_reaches_the_model_at_the_next_op(tmp_path, weight, lose_it):
    seen = []
    previous = sys.unraisablehook
    sys.unraisablehook = seen.append  # a user's own hook: what is not ours to keep reaches it
    try:
        ops_after = []
        with pytest.raises(KeyboardInterrupt), ttreport.capture(tmp_path / "r") as report:
            ttnn.exp(weight)
            lose_it()
            ops_after.append(ttnn.exp(weight))  # raises at its start, before running
        assert sys.unraisablehook == seen.append  # given back at the close
    finally:
        sys.unraisablehook = previous
    assert ops_after == [] and seen == []
    assert one(report, "SELECT value FROM report_metadata WHERE key = 'status'")["value"] == "interrupted"
    assert len(rows(report, "SELECT * FROM operations")) == 1


def test_a_ctrl_c_dropped_after_the_last_op_ends_the_block(tmp_path, weight):
    with pytest.raises(KeyboardInterrupt), ttreport.capture(tmp_path / "r") as report:
        ttnn.exp(weight)
        _ctrl_c_in_a_weakref_callback()
        after = "the block's last statement ran"
    assert after  # the block ran to its end: the Ctrl-C is raised at its exit, after the report is closed
    assert one(report, "SELECT value FROM report_metadata WHERE key = 'status'")["value"] == "interrupted"
    assert len(rows(report, "SELECT * FROM operations")) == 1


def test_other_unraisable_exceptions_still_reach_the_previous_hook(tmp_path, weight):
    class Broken:
        def __del__(self):
            raise ValueError("broken finalizer")

    seen = []
    previous = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        with ttreport.capture(tmp_path / "r") as report:
            x = Broken()
            del x
            ttnn.exp(weight)
    finally:
        sys.unraisablehook = previous
    assert [u.exc_type for u in seen] == [ValueError]
    assert report.status == "complete"
