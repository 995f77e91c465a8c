"""The reading commands start without importing torch (or alembic): a user waits ~0.1 s, not ~2 s.

Wall times are measured by bench/startup.py (`python -m bench --only startup`), never here.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[1] / "sample_reports" / "demo"

# Runs one command in a fresh interpreter, then says which heavy modules it imported.
PROBE = """
import sys
from ttreport.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
print("HEAVY", sorted(m for m in ("torch", "device_sim", "alembic", "sqlalchemy", "numpy", "rich") if m in sys.modules),
      file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize("args", [["--version"], ["ls", str(SAMPLE.parent)], ["summary", str(SAMPLE)],
                                  ["summary", "--json", str(SAMPLE)], ["ops", str(SAMPLE)], ["op", str(SAMPLE), "12"],
                                  ["query", str(SAMPLE), "SELECT COUNT(*) FROM operations"]])
def test_reading_commands_import_neither_torch_nor_alembic(args):
    # Nor rich: output to a pipe is plain text, and rich (~55 ms to import) is loaded only to draw on a terminal.
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "HEAVY []", done.stderr


def test_the_package_still_offers_every_public_name():
    done = subprocess.run([sys.executable, "-c", "import sys, ttreport\n"
                          "assert 'torch' not in sys.modules\n"
                          "missing = [n for n in ttreport.__all__ if not hasattr(ttreport, n)]\n"
                          "assert callable(ttreport.capture) and callable(ttreport.check)\n"
                          "print(missing)"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_importing_a_capture_module_first_leaves_ttreport_capture_the_function():
    # The capture side's package (ttreport.capturing) has a name of its own: importing one of its modules first
    # (the writer process, a test) neither shadows the function ttreport.capture nor imports the session.
    done = subprocess.run([sys.executable, "-c", "import sys\n"
                          "from ttreport.capturing import oplog  # noqa: F401\n"
                          "import ttreport\n"
                          "assert 'ttreport.capturing.session' not in sys.modules, 'the session was imported eagerly'\n"
                          "assert callable(ttreport.capture), ttreport.capture\n"
                          "print(ttreport.capture.__module__, ttreport.check.__module__)"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ttreport.capturing.session", "ttreport.read.faults"]


def test_opening_and_checking_through_the_reading_side_import_neither_torch_nor_device_sim():
    # Opening and checking a report import neither (nor does comparing tensors: numpy, the test above).
    done = subprocess.run([sys.executable, "-c", "import sys\n"
                          "from ttreport.read import Report, check, open, terminal, device_time  # noqa: F401\n"
                          "print(sorted(m for m in ('torch', 'device_sim') if m in sys.modules))"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_compare_reads_the_tensor_files_with_numpy_alone():
    # torch's import (~2-3 s here) was ~90 % of a `ttreport compare`; the files are zip archives numpy reads.
    done = subprocess.run([sys.executable, "-c", PROBE, "compare", str(SAMPLE), str(SAMPLE)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "66 aligned ops: 66 match" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "HEAVY ['numpy']", done.stderr


def test_check_reads_the_tensor_files_with_numpy_alone():
    # `ttreport check` took 4-7 s on a loaded 2-core machine, ~3 s of it importing torch to read 68 .pt files.
    done = subprocess.run([sys.executable, "-c", PROBE, "check", str(SAMPLE)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout == "ok\n", (done.stdout, done.stderr)
    assert done.stderr.strip().splitlines()[-1] == "HEAVY ['numpy']", done.stderr


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_tensor_reads_its_stats_with_numpy_alone(json_flag):
    # `ttreport tensor` took 5-8 s on a loaded 2-core machine, ~3 s of it importing torch for four figures.
    import torch

    want = torch.load(SAMPLE / "tensors" / "34.pt", weights_only=True).double()
    done = subprocess.run([sys.executable, "-c", PROBE, "tensor", str(SAMPLE), "34", *json_flag], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "HEAVY ['numpy']", done.stderr
    if json_flag:
        got = json.loads(done.stdout)["stats"]
        assert got["numel"] == want.numel() and got["non_finite"] == 0
        assert got["min"] == want.min().item() and got["max"] == want.max().item()
        assert got["mean"] == pytest.approx(want.mean().item(), rel=1e-12)
        assert got["std"] == pytest.approx(want.std(unbiased=False).item(), rel=1e-12)
    else:
        assert f"numel {want.numel()}, min {want.min().item():.6g}, max {want.max().item():.6g}" in done.stdout


def test_diff_tensor_reads_two_pt_files_with_numpy_alone():
    # Two float32 32x96 tensors of the sample that differ: the values numpy read are held to torch's reading of them.
    import torch

    a, b = SAMPLE / "tensors" / "1000000000004.pt", SAMPLE / "tensors" / "1000000000016.pt"
    done = subprocess.run([sys.executable, "-c", PROBE, "diff-tensor", "--json", str(a), str(b)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stderr  # 1: the two tensors differ
    got = json.loads(done.stdout)
    want_a, want_b = torch.load(a, weights_only=True), torch.load(b, weights_only=True)
    assert got["shapes"] == [list(want_a.shape), list(want_b.shape)] and got["numel"] == want_a.numel()
    assert got["max_abs_error"] == pytest.approx((want_a - want_b).abs().max().item(), rel=1e-6)
    assert done.stderr.strip().splitlines()[-1] == "HEAVY ['numpy']", done.stderr
