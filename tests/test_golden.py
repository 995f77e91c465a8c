"""Golden mode: each op's golden runs during a real capture, and its comparison lands in the report."""

import gc
import sqlite3
import threading
import time
from types import SimpleNamespace

import pytest
import torch

import device_sim as ttnn
import ttreport
from device_sim.ops.common import device_inputs, output, values
from ttreport import Config, demo
from ttreport.capturing import recorder


def _double(x):
    return output(values(x) * 2, x, device_inputs("test_golden.double", x), op_name="test_golden.double")


def _raise(*_, **__):
    raise ZeroDivisionError("this golden is broken on purpose")


@pytest.fixture
def broken():
    """Test ops with the same body (x * 2) and goldens broken in each way a golden can be.

    Registered for one test at a time: the op table is global, and other tests check what it holds.
    """
    goldens = {"raising": _raise, "wrong": lambda x, **_: x * 3, "not_a_tensor": lambda x, **_: 2.0,
               "no_golden": None}
    try:
        yield SimpleNamespace(**{kind: ttnn.register_op(f"test_golden.double_{kind}", golden=golden)(_double)
                                 for kind, golden in goldens.items()})
    finally:
        for kind in goldens:
            ttnn.OPS.pop(f"test_golden.double_{kind}", None)


@pytest.fixture
def register():
    """register(name, golden) -> an op doubling its input, registered for this test only."""
    names = []

    def register(name, golden, body=None):
        names.append(name)

        def double(x):
            return output(values(x) * 2, x, device_inputs(name, x), op_name=name)

        return ttnn.register_op(name, golden=golden)(body or double)

    try:
        yield register
    finally:
        for name in names:
            ttnn.OPS.pop(name, None)


def rows(path, sql, *params):
    con = sqlite3.connect(path / "db.sqlite")
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(sql, params)]
    finally:
        con.close()


def comparisons(path, mode):
    return rows(path, "SELECT c.*, o.name, t.dtype FROM tensor_comparisons c JOIN operations o USING (operation_id) "
                      "JOIN tensors t USING (tensor_id) WHERE mode = ? ORDER BY c.rowid", mode)


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_the_demo_model_fills_both_record_tables(tmp_path):
    with ttreport.capture(tmp_path / "r", config=Config(comparison="both")) as report:
        demo.run_model()
    local, global_ = comparisons(report.path, "local"), comparisons(report.path, "global")
    assert len(local) == len(global_) > 50
    for table in ("local_tensor_comparison_records", "global_tensor_comparison_records"):
        records = rows(report.path, f"SELECT * FROM {table}")
        assert len(records) == len(local)
        assert all(r["desired_pcc"] == 0.9999 and r["matches"] == 1 for r in records)
    assert all(c["status"] == "pass" for c in local + global_)
    bf16 = [c["pcc"] for c in local if c["dtype"] == "DataType.BFLOAT16" and c["pcc"] is not None]
    bfp8 = [c["pcc"] for c in local if c["dtype"] == "DataType.BFLOAT8_B"]
    assert min(bf16) > 0.99999 and bfp8 and max(bfp8) < min(bf16)
    # Accumulated drift: the last op's global PCC is below its local one, and still far above chance.
    assert 0.999 < global_[-1]["pcc"] < local[-1]["pcc"]


def test_local_pcc_falls_with_the_output_dtype(tmp_path, device):
    x = randn(64, 64)
    with ttreport.capture(tmp_path / "r", config=Config(comparison="local")) as report:
        a = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        for dtype in (ttnn.bfloat16, ttnn.bfloat8_b, ttnn.bfloat4_b):
            ttnn.add(a, a, dtype=dtype)
    adds = [c for c in comparisons(report.path, "local") if c["name"] == "ttnn.add"]
    pcc = {c["dtype"]: c["pcc"] for c in adds}
    assert pcc["DataType.BFLOAT16"] > 0.99999 > pcc["DataType.BFLOAT8_B"] > 0.999 > pcc["DataType.BFLOAT4_B"]
    status = {c["dtype"]: c["status"] for c in adds}
    assert status == {"DataType.BFLOAT16": "pass", "DataType.BFLOAT8_B": "pass", "DataType.BFLOAT4_B": "fail"}
    failed = next(c for c in adds if c["status"] == "fail")
    assert failed["reason"].startswith("PCC 0.9") and "< 0.9999" in failed["reason"]


def test_local_uses_the_device_inputs_and_global_the_model_inputs(tmp_path, device):
    x, w = randn(32, 64), randn(64, 32, seed=1)
    config = Config(comparison="both", tensors="outputs")
    with ttreport.capture(tmp_path / "r", config=config) as report:
        a = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        b = ttnn.from_torch(w, dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
        m = ttnn.matmul(a, b)
        y = ttnn.relu(m)

    def goldens(t):
        found = rows(report.path, "SELECT mode, golden_tensor_id, pcc FROM tensor_comparisons WHERE tensor_id = ?",
                     t.tensor_id)
        with ttreport.open(report.path) as r:
            return {c["mode"]: (r.load_tensor(c["golden_tensor_id"]), c["pcc"]) for c in found}

    (local_m, _), (global_m, _) = goldens(m)["local"], goldens(m)["global"]
    torch.testing.assert_close(local_m, a.value.float() @ b.value.float())  # the inputs as the device held them
    torch.testing.assert_close(global_m, x @ w)  # the model's float32 tensors, never rounded
    y_goldens = goldens(y)
    torch.testing.assert_close(y_goldens["local"][0], torch.relu(m.value.float()))
    torch.testing.assert_close(y_goldens["global"][0], torch.relu(x @ w))
    assert y_goldens["global"][1] < y_goldens["local"][1]


def test_a_golden_that_raises_is_an_error_never_a_skip(tmp_path, device, broken):
    with ttreport.capture(tmp_path / "r", config=Config(comparison="both")) as report:
        a = ttnn.from_torch(randn(32, 32), dtype=ttnn.bfloat16, device=device)
        out = broken.raising(a)
    assert report.status == "complete"
    found = rows(report.path, "SELECT * FROM tensor_comparisons WHERE tensor_id = ?", out.tensor_id)
    assert sorted(c["mode"] for c in found) == ["global", "local"]
    assert all(c["status"] == "golden_error" and c["pcc"] is None for c in found)
    assert all("raised ZeroDivisionError: this golden is broken on purpose" in c["reason"] for c in found)
    errors = rows(report.path, "SELECT * FROM errors")
    assert {e["error_type"] for e in errors} == {"golden_error"} and len(errors) == 2
    assert all(e["operation_name"] == "test_golden.double_raising" for e in errors)
    assert all("ZeroDivisionError" in e["stack_trace"] and "_raise" in e["stack_trace"] for e in errors)
    op = rows(report.path, "SELECT status FROM operations WHERE name = 'test_golden.double_raising'")
    assert op == [{"status": "ok"}]  # the op itself ran fine
    assert rows(report.path, "SELECT * FROM local_tensor_comparison_records WHERE tensor_id = ?", out.tensor_id) == []


def test_a_golden_that_returns_no_tensor_is_an_error(tmp_path, device, broken):
    with ttreport.capture(tmp_path / "r", config=Config(comparison="local")) as report:
        out = broken.not_a_tensor(ttnn.from_torch(randn(8, 8), device=device))
    c = rows(report.path, "SELECT * FROM tensor_comparisons WHERE tensor_id = ?", out.tensor_id)[0]
    assert c["status"] == "golden_error" and "returned (float) for 1 output tensor(s)" in c["reason"]


def test_a_wrong_golden_is_a_mismatch_with_its_figures(tmp_path, device, broken):
    with ttreport.capture(tmp_path / "r", config=Config(comparison="local")) as report:
        out = broken.wrong(ttnn.from_torch(randn(32, 32), dtype=ttnn.bfloat16, device=device))
    c = rows(report.path, "SELECT * FROM tensor_comparisons WHERE tensor_id = ?", out.tensor_id)[0]
    assert c["status"] == "fail" and c["mismatched"] > 900 and c["max_abs_error"] > 1
    assert "outside atol" in c["reason"]
    record = rows(report.path, "SELECT * FROM local_tensor_comparison_records WHERE tensor_id = ?", out.tensor_id)
    assert record[0]["matches"] == 0 and record[0]["actual_pcc"] == pytest.approx(1.0)  # 2x vs 3x: correlated


def test_an_op_without_a_golden_is_reported_as_such(tmp_path, device, broken):
    with ttreport.capture(tmp_path / "r", config=Config(comparison="both")) as report:
        out = broken.no_golden(ttnn.from_torch(randn(8, 8), device=device))
    found = rows(report.path, "SELECT mode, status, reason FROM tensor_comparisons WHERE tensor_id = ?",
                 out.tensor_id)
    assert found == [{"mode": m, "status": "no_golden", "reason": "test_golden.double_no_golden has no golden function"}
                     for m in ("local", "global")]


def test_raise_on_mismatch_stops_at_the_first_failing_op(tmp_path, device, broken):
    config = Config(comparison="local", raise_on_mismatch=True)
    with pytest.raises(ttreport.ComparisonError) as info, ttreport.capture(tmp_path / "r", config=config) as report:
        a = ttnn.from_torch(randn(32, 32), dtype=ttnn.bfloat16, device=device)
        ttnn.exp(a)
        broken.wrong(a)
        ttnn.exp(a)  # never runs
    err = info.value
    assert "test_golden.double_wrong" in str(err) and "outside atol" in str(err)
    assert not err.comparison.passed and err.comparison.mismatched > 0
    assert report.status == "error"
    names = [o["name"] for o in rows(report.path, "SELECT name FROM operations ORDER BY operation_id")]
    assert names == ["ttnn.from_torch", "ttnn.exp", "test_golden.double_wrong"]
    failing = rows(report.path, "SELECT status FROM tensor_comparisons WHERE operation_id = ?", err.operation_id)
    assert failing == [{"status": "fail"}]  # recorded before raising


def test_goldens_are_stored_with_their_own_ids_only_when_tensors_are(tmp_path, device):
    for tensors, stored in (("outputs", True), ("none", False)):
        with ttreport.capture(tmp_path / tensors, config=Config(comparison="local", tensors=tensors)) as report:
            a = ttnn.from_torch(randn(8, 8), device=device)
            out = ttnn.exp(a)
        c = rows(report.path, "SELECT * FROM tensor_comparisons WHERE tensor_id = ?", out.tensor_id)[0]
        assert (c["golden_tensor_id"] is not None) is stored
        if stored:
            t = rows(report.path, "SELECT * FROM tensors WHERE tensor_id = ?", c["golden_tensor_id"])[0]
            assert t["file"] == f"tensors/{c['golden_tensor_id']}.pt"
            assert t["producer_operation_id"] == c["operation_id"]
            assert c["golden_tensor_id"] not in (a.tensor_id, out.tensor_id)
            with ttreport.open(report.path) as r:
                torch.testing.assert_close(r.load_tensor(c["golden_tensor_id"]), torch.exp(a.value.float()))


def test_golden_ids_never_take_the_models_tensor_ids(tmp_path, device):
    # The checker runs on its own thread: ids drawn from device_sim's counter would interleave
    # with the model's, and the same model would get other tensor ids in every run.
    with ttreport.capture(tmp_path / "r", config=Config(comparison="both", tensors="outputs")):
        first = ttnn.from_torch(randn(8, 8), device=device)
        x = first
        for _ in range(20):
            x = ttnn.exp(ttnn.neg(x))
    goldens = [r["golden_tensor_id"] for r in rows(tmp_path / "r", "SELECT golden_tensor_id FROM tensor_comparisons")]
    assert goldens and min(goldens) >= recorder.MADE_TENSOR_ID_BASE
    model_ids = [r["tensor_id"] for r in rows(tmp_path / "r", "SELECT tensor_id FROM output_tensors")]
    assert model_ids == list(range(first.tensor_id, x.tensor_id + 1))  # consecutive: nothing else took one


def test_carried_goldens_are_dropped_with_their_tensors(tmp_path, device):
    with ttreport.capture(tmp_path / "r", config=Config(comparison="global")) as report:
        checker = report.recorder.golden
        carried = checker.carried
        a = ttnn.from_torch(randn(32, 32), dtype=ttnn.bfloat16, device=device)
        b = ttnn.exp(a)
        checker.flush()  # the checks run on the checker's thread, behind the ops
        assert {a.tensor_id, b.tensor_id} <= set(carried)
        ttnn.deallocate(b)
        checker.flush()
        assert b.tensor_id not in carried
        a_id = a.tensor_id
        del a
        gc.collect()
        checker.flush()
        assert a_id not in carried


def test_carried_goldens_stay_under_their_byte_limit(tmp_path, device):
    with ttreport.capture(tmp_path / "r", config=Config(comparison="global")) as report:
        checker = report.recorder.golden
        checker.max_carried_bytes = 3 * 32 * 32 * 4  # three float32 goldens of 32x32
        kept = [ttnn.exp(ttnn.from_torch(randn(32, 32, seed=i), device=device)) for i in range(5)]
        checker.flush()
        assert 0 < checker.carried_bytes <= checker.max_carried_bytes
        assert kept[-1].tensor_id in checker.carried and kept[0].tensor_id not in checker.carried  # oldest go first


def _sleepy_double(x):
    time.sleep(0.05)
    return x * 2


def test_a_parent_op_is_not_timed_with_its_childrens_golden_checks(tmp_path, device, register):
    inner = register("test_golden.sleepy_inner", _sleepy_double)
    outer = register("test_golden.sleepy_outer", lambda x: x * 4, body=lambda x: inner(inner(x)))
    durations = {}
    for on_thread in (False, True):  # raise_on_mismatch=True checks each op on the model's thread
        config = Config(comparison="local", raise_on_mismatch=on_thread)
        with ttreport.capture(tmp_path / str(on_thread), config=config) as report:
            outer(ttnn.from_torch(randn(8, 8), device=device))
        (duration,) = [r["duration"] for r in rows(report.path, "SELECT duration FROM operations WHERE name = ?",
                                                   "test_golden.sleepy_outer")]
        durations[on_thread] = duration
        checks = rows(report.path, "SELECT c.status FROM tensor_comparisons c JOIN operations o USING (operation_id) "
                                   "WHERE o.name = 'test_golden.sleepy_inner'")
        assert checks == [{"status": "pass"}] * 2
    assert durations[False] < 0.05 <= 0.1 <= durations[True]


def _comparison_figures(path):
    # Tensor ids are process-wide, so two captures differ in them; operation ids start at 1 in each.
    return rows(path, "SELECT operation_id, mode, status, reason, pcc, max_abs_error, mean_abs_error, max_rel_error, "
                      "mismatched, max_ulp, worst_index, worst_actual, worst_golden FROM tensor_comparisons "
                      "ORDER BY operation_id, mode, rowid")


def test_background_checks_match_checks_on_the_models_thread(tmp_path):
    found = {}
    for on_thread in (False, True):
        config = Config(comparison="both", raise_on_mismatch=on_thread)
        with ttreport.capture(tmp_path / str(on_thread), config=config) as report:
            demo.run_model()
        found[on_thread] = _comparison_figures(report.path)
    assert len(found[False]) > 100 and {c["mode"] for c in found[False]} == {"local", "global"}
    assert found[False] == found[True]


def test_a_model_changing_its_torch_input_later_does_not_change_the_golden(tmp_path, device, register):
    gate = threading.Event()  # holds the checker back until the model has changed x

    def held(x):
        assert gate.wait(10)
        return x * 2

    x = randn(8, 8)
    with ttreport.capture(tmp_path / "r", config=Config(comparison="global", tensors="outputs")) as report:
        register("test_golden.held", held)(ttnn.from_torch(randn(8, 8, seed=1), device=device))
        before = x.clone()
        y = ttnn.exp(ttnn.from_torch(x, device=device))
        x.add_(100)  # before the checker has seen from_torch
        gate.set()
    x_golden = rows(report.path, "SELECT golden_tensor_id FROM tensor_comparisons WHERE tensor_id = ?", y.tensor_id)
    with ttreport.open(report.path) as r:
        torch.testing.assert_close(r.load_tensor(x_golden[0]["golden_tensor_id"]), torch.exp(before))


def test_an_error_inside_the_checker_is_recorded_and_warned_about(tmp_path, device, register):
    on_meta = register("test_golden.on_meta", lambda x: torch.empty(x.shape, device="meta"))
    with pytest.warns(ttreport.ReportIncompleteWarning, match="1 golden check.* failed inside ttreport"), \
            ttreport.capture(tmp_path / "r", config=Config(comparison="local")) as report:
        a = ttnn.from_torch(randn(8, 8), device=device)
        on_meta(a)  # the model goes on: the check fails on the checker's thread
        after = ttnn.exp(a)
    (error,) = rows(report.path, "SELECT * FROM errors")
    assert error["error_type"] == "golden_checker_error" and error["operation_name"] == "test_golden.on_meta"
    assert "meta" in error["error_message"] and "Traceback" in error["stack_trace"]
    meta = rows(report.path, "SELECT value FROM report_metadata WHERE key = 'golden_checker_errors'")
    assert meta == [{"value": "1"}]
    later = rows(report.path, "SELECT status FROM tensor_comparisons WHERE tensor_id = ?", after.tensor_id)
    assert later == [{"status": "pass"}]  # the checker went on with the next op


def test_the_model_waits_for_a_checker_that_falls_behind_and_no_check_is_lost(tmp_path, device, register):
    gate = threading.Event()
    held = register("test_golden.held_back", lambda x: gate.wait(10) and x * 2)
    with ttreport.capture(tmp_path / "r", config=Config(comparison="local")) as report:
        report.recorder.golden.max_pending_bytes = 1  # any queued op is too much
        a = ttnn.from_torch(randn(8, 8), device=device)
        threading.Timer(0.2, gate.set).start()
        start = time.perf_counter()
        outs = [held(a)] + [ttnn.exp(a) for _ in range(3)]
        waited = time.perf_counter() - start
    assert waited >= 0.15  # the model's thread waited for the held-back check
    found = rows(report.path, "SELECT tensor_id, status FROM tensor_comparisons")
    assert {(r["tensor_id"], r["status"]) for r in found} >= {(t.tensor_id, "pass") for t in outs}
