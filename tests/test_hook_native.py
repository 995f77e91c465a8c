"""The recorder's per-op path in C (ttreport/capturing/_hook.c) records what the Python methods record.

With the extension built, Recorder.begin, Recorder.end and the memory listener are the C hook's;
TTREPORT_PURE=1 (or no compiler) keeps the Python ones, which are its specification. The same model, run in
real subprocesses both ways, must give reports equal row for row.
"""

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest
from report_tables import tables

from ttreport.capturing import recorder

REPO = Path(__file__).resolve().parent.parent

# Every case the C hook takes or hands back: positional and keyword tensors, lists of tensors, plain values and
# objects as arguments, new and seen outputs, a tuple output, an op estimated on the model's thread (matmul),
# a deallocation, a host tensor, an error, ops from a second thread (its first op sets up its stack in Python),
# a ComplexTensor argument and output (the C hook hands both to Python, which lists the real and imag tensors).
MODEL = r"""
import json, pathlib, sys, threading
import torch
import device_sim as ttnn
import ttreport
from ttreport.capturing import recorder

job = json.loads(sys.argv[1])
torch.manual_seed(0)
dev = ttnn.open_device(0)
cfg = ttreport.Config(tensors=job["tensors"], **job["config"])
with ttreport.capture(pathlib.Path(job["report"]), config=cfg) as cap:
    print("native", cap.recorder.begin.__class__.__name__ == "builtin_function_or_method", recorder.NATIVE)
    a = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    b = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    host = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16)
    wide = ttnn.from_torch(torch.randn(256, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    for i in range(5):
        w = ttnn.add(wide, wide)  # a stored output over 64 KiB: the tensor thread's file
        c = ttnn.add(a, b, memory_config=ttnn.L1_MEMORY_CONFIG)
        d = ttnn.matmul(c, b)
        e = ttnn.mul(d, 0.5)
        f = ttnn.concat([e, a], dim=0)
        g = ttnn.reshape(f, (2, 64, 64))
        h = ttnn.add(a, b, output_tensor=c)
        s = ttnn.split(g, 1, dim=0)
        ttnn.deallocate(c)
    t = ttnn.to_device(host, dev)
    ttnn.abs(ttnn.multiply(ttnn.complex_tensor(a, b), ttnn.complex_tensor(b, a)))
    worker = threading.Thread(target=lambda: [ttnn.relu(a) for _ in range(3)], name="worker")
    worker.start()
    worker.join()
    try:
        ttnn.add(a, torch.zeros(3))
    except TypeError:
        pass
ttnn.close_device(dev)
"""



def _run(tmp_path: Path, name: str, *, tensors: str = "none", pure: bool = False,
         config: dict | None = None) -> str:
    script = tmp_path / "model.py"
    script.write_text(MODEL)
    job = {"report": str(tmp_path / name), "tensors": tensors, "config": config or {}}
    env = {k: v for k, v in os.environ.items() if k != "TTREPORT_PURE"}
    if pure:
        env["TTREPORT_PURE"] = "1"
    out = subprocess.run([sys.executable, str(script), json.dumps(job)], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return out.stdout


native = pytest.mark.skipif(not recorder.NATIVE, reason="ttreport.capturing._hook is not built")


@native
# Stored outputs: the C end stores a new output's values itself; views, an output written in place, values over
# 64 KiB, a dtype not met before and max_tensor_bytes reached (its warning) are the Python end's.
@pytest.mark.parametrize("tensors, config", [("none", {}), ("outputs", {}),
                                             ("outputs", {"max_tensor_bytes": 150_000})],
                         ids=["none", "outputs", "outputs-capped"])
def test_the_c_hook_writes_the_same_report_as_the_python_recorder(tmp_path, tensors, config):
    assert "native True True" in _run(tmp_path, "c", tensors=tensors, config=config)
    assert "native False False" in _run(tmp_path, "py", tensors=tensors, pure=True, config=config)
    c, py = (tables(tmp_path / name / "db.sqlite") for name in ("c", "py"))
    assert c.keys() == py.keys()
    for table in c:
        assert c[table] == py[table], table
    names = [row[1] for row in c["operations"]]
    assert names.count("ttnn.add") >= 10 and "ttnn.relu" in names and "ttnn.matmul" in names
    assert c["errors"] and c["stack_traces"] and c["buffers"] and c["device_perf"]


def test_ttreport_pure_keeps_the_python_methods(tmp_path):
    assert "native False False" in _run(tmp_path, "pure", pure=True)


@native
def test_the_c_hook_writes_the_log_bytes_marshal_writes():
    # What records hold, at the edges of marshal's int forms (int32, then 15-bit digits) and in str and bytes.
    values = [None, True, False, 0, -1, 2**31 - 1, 2**31, -2**31, -2**31 - 1, 2**40 + 12345, -2**62, 2**63 - 1,
              -2**63, b"t12", b"", "ttnn.add", "é∂ü", (1, (2, None, b"x"), [3, "y"]), [], (),
              [(0, "ttnn.add", 1, 123456789012, None, (7, (32, 32), 0, 1))], 0.5, -0.0, float("inf"), 1e300,
              {"operation_id": 3, "compute_ns": 12.5, "bound": "compute", "x": None}, {}, [{"a": (1, [2.5])}]]
    for value in values:
        assert recorder._hook.dumps(value) == marshal.dumps(value, 2), value
    for value in (2**64, -2**64, [1, (2, {3})], {"a": 2**70}, MemoryError):  # left to marshal: those records
        assert recorder._hook.dumps(value) is None  # are written its way


@native
def test_a_pending_record_only_marshal_can_write_goes_into_the_log_before_the_op(tmp_path, device):
    import torch

    import device_sim as ttnn
    from device_sim.registry import OPS
    from ttreport import Config
    from ttreport.capturing import log_perf
    from ttreport.capturing.oplog import LogQueue, LogSink, LogTail

    sink = LogSink(tmp_path / "oplog")
    rec = recorder.Recorder(Config(), LogQueue(sink))
    sink._code = rec.code
    rec.estimate = log_perf.estimate_on_model_thread  # as a capture sets it: the C end records an add itself
    assert type(rec.begin).__name__ == "builtin_function_or_method" and not rec._estimates(OPS["ttnn.add"])
    a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    add = OPS["ttnn.add"]
    for big in (2**70, 2**71):  # the thread's first op goes through the Python begin, the second is the C hook's
        sink.event((recorder.FREE, big, 1))  # an int past 64 bits: the C writer leaves the whole write to marshal
        token = rec.begin(add, (a, a), {})
        rec.end(token, add.function(a, a), None)
    sink.close()
    records, _ = LogTail(tmp_path / "oplog").read(1000)
    tags = [(r[0], r[1]) if r[0] == recorder.FREE else (r[0], r[2]) for r in records
            if r[0] == recorder.OP or r[0] == recorder.FREE and r[1] > 2**64]
    assert tags == [(recorder.FREE, 2**70), (recorder.OP, 1), (recorder.FREE, 2**71), (recorder.OP, 2)]
