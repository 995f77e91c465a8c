"""13. Each native fast path against its pure-Python specification, side by side in one run (issue 32).

    python -m bench --only seams

Issue 32 asks that a second copy of logic earn its keep with a recorded figure. Each C path below has a Python
path that is its specification (tests hold them equal) and its fallback (no compiler), chosen by one switch; this
bench runs the same loop in fresh interpreters with the switch off and on, alternating, and prints what the C
path saves:
- DEVICE_SIM_PURE=1: device_sim's op dispatch (_native.c's Dispatch, against registry's wrapper), its bank
  allocator and output buffers (_native.c's Banks/Memory, against allocator.py) and the bfloat16 matmul kernel
  choice: a loop of 32x32 bfloat16 adds, uncaptured.
- TTREPORT_PURE=1: the capture's hook (_hook.c, against recorder.py's Recorder) and its stack walk (_stacks.c,
  against stacks.py): the same loop under ttreport.capture, model-thread CPU per op.
- eltwise's plain() against run() (device_sim/ops/eltwise.py): a binary op's call with no keyword but
  memory_config= takes plain(), every other call run(), the general path and plain()'s specification (tests hold
  them equal: test_fast_paths.py). Here the same 32x32 bfloat16 add, both calls carrying one keyword so that the
  dispatch is the same: `dtype=None` takes plain(), `dtype=ttnn.bfloat16` (the output's own dtype) run(); and
  again with memory_config=, as a model passes it on most calls. No switch: the keyword picks the route.
A ratio near 1 would say the fast copy does not pay for itself and should go.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.common import Figure, info

REPO = Path(__file__).resolve().parent.parent

# One loop, timed by thread CPU (the shared machine's other load stays out of it): µs an op.
LOOP = """
import sys, time, torch
import device_sim as ttnn
import ttreport
n, captured, folder = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3]
device = ttnn.open_device(device_id=0)
a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
DRAM = ttnn.DRAM_MEMORY_CONFIG
for _ in range(200):
    {call}  # warm
run = ttreport.capture(folder, config=ttreport.Config(overwrite=True)) if captured else None
if run is not None:
    run.__enter__()
start = time.thread_time()
for _ in range(n):
    {call}
spent = time.thread_time() - start
if run is not None:
    run.__exit__(None, None, None)
print(spent / n * 1e6)
"""


def _per_op_us(ops: int, captured: bool, pure: str | None, folder: Path, call: str = "ttnn.add(a, a)") -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("DEVICE_SIM_PURE", "TTREPORT_PURE")}
    if pure:
        env[pure] = "1"
    done = subprocess.run([sys.executable, "-c", LOOP.format(call=call), str(ops), "1" if captured else "0",
                           str(folder)], capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the seams loop failed ({pure or call}): {done.stderr.strip().splitlines()[-1:]}")
    return float(done.stdout.strip().splitlines()[-1])


# eltwise's two routes for the same add: (what, the call plain() takes, the same call run() takes).
ELTWISE = (("eltwise add 32x32", "ttnn.add(a, a, dtype=None)", "ttnn.add(a, a, dtype=ttnn.bfloat16)"),
           ("eltwise add 32x32, memory_config=", "ttnn.add(a, a, memory_config=DRAM)",
            "ttnn.add(a, a, memory_config=DRAM, dtype=ttnn.bfloat16)"))


def run(tmp: Path, ops: int = 20_000, repeats: int = 3) -> list[Figure]:
    figures = []
    for switch, captured, what in (("DEVICE_SIM_PURE", False, "device_sim dispatch + allocator (add 32x32)"),
                                   ("TTREPORT_PURE", True, "ttreport hook + stack walk (captured add 32x32)")):
        native, pure = [], []
        for _ in range(repeats):  # alternating, so both see the same spells of the machine's load
            native.append(_per_op_us(ops, captured, None, tmp / "seams"))
            pure.append(_per_op_us(ops, captured, switch, tmp / "seams"))
        n, p = min(native), min(pure)
        figures += [info(f"{what}: C path", n, "µs/op"), info(f"{what}: {switch}=1", p, "µs/op"),
                    info(f"{what}: pure / C", p / n, "x")]
    for what, fast, general in ELTWISE:
        plain, run_ = [], []
        for _ in range(repeats):
            plain.append(_per_op_us(ops, False, None, tmp / "seams", fast))
            run_.append(_per_op_us(ops, False, None, tmp / "seams", general))
        p, r = min(plain), min(run_)
        figures += [info(f"{what}: plain()", p, "µs/op"), info(f"{what}: run()", r, "µs/op"),
                    info(f"{what}: run() / plain()", r / p, "x")]
    return figures
