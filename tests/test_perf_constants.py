"""The performance model's constants from a file (device_sim/perf_constants.py): what `ttreport calibrate` writes.

    .venv/bin/python -m pytest tests/test_perf_constants.py -q
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from device_sim import perf_constants, perf_model

ESTIMATE = ("import json; from device_sim import perf_model as m; "
            "o = m.Operand(2048, 'dram', (32, 32), False); "
            "print(json.dumps([m.LAUNCH_NS, m.estimate('relu', [o], [o], None).ideal_ns]))")


def run(env_file=None) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin"} | ({perf_constants.ENV_VAR: str(env_file)} if env_file else {})
    return subprocess.run([sys.executable, "-c", ESTIMATE], capture_output=True, text=True, timeout=120, env=env)


def test_a_file_named_by_the_environment_sets_the_constants_every_estimate_uses(tmp_path):
    base_launch, base = json.loads(run().stdout)
    path = tmp_path / "constants.json"
    path.write_text(json.dumps({"constants": {"LAUNCH_NS": base_launch + 1000}, "fitted_on": "anything"}))
    launch, ns = json.loads(run(path).stdout)
    assert launch == base_launch + 1000 and ns == base + 1000  # launch adds to every op's estimate


@pytest.mark.parametrize("text, says", [
    ('{"constants": {"CLOCK_GHZ": 2}}', "'CLOCK_GHZ' is not a constant of the performance model that can be set"),
    ('{"constants": {"LAUNCH_NS": -3}}', "LAUNCH_NS = '-3' is not a positive number"),
    ('{"constants": {"SFPU_OP_CYCLES": {"gelu": "fast"}}}', "is not a positive number per op name"),
    ('{"LAUNCH_NS": 1}', "is not a constants file"),
    ("not json", "is not a constants file"),
])
def test_a_bad_file_stops_the_import_with_its_value_and_the_fix(tmp_path, text, says):
    path = tmp_path / "constants.json"
    path.write_text(text)
    done = run(path)
    assert done.returncode != 0 and says in done.stderr.splitlines()[-1] and str(path) in done.stderr


def test_use_returns_what_it_replaced_and_a_table_is_merged():
    old = perf_constants.use(perf_model, {"SFPU_OP_CYCLES": {"gelu": 111}, "LAUNCH_NS": 7})
    try:
        assert perf_model.SFPU_OP_CYCLES["gelu"] == 111 and perf_model.LAUNCH_NS == 7
        assert perf_model.SFPU_OP_CYCLES["erf"] == old["SFPU_OP_CYCLES"]["erf"]  # the rest of the table kept
    finally:
        perf_constants.use(perf_model, old)
    assert old["SFPU_OP_CYCLES"] == perf_model.SFPU_OP_CYCLES and old["LAUNCH_NS"] == perf_model.LAUNCH_NS
