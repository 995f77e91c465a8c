"""Errors a TT-NN script meets under device_sim name `ttnn`, and an unknown keyword lists the op's own keywords."""

import subprocess
import sys
import textwrap

import pytest
import torch

import device_sim as ttnn


def run(tmp_path, source: str) -> subprocess.CompletedProcess:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(source))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)


def test_a_missing_name_is_reported_on_the_ttnn_module_the_script_imported(tmp_path):
    result = run(tmp_path, """
        import device_sim
        device_sim.install_as_ttnn()
        import ttnn
        assert not hasattr(ttnn, "no_such_op")
        ttnn.no_such_op
    """)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("AttributeError: module 'ttnn' has no attribute 'no_such_op': device_sim does not "
                           "provide ttnn.no_such_op"), last


def test_without_the_ttnn_alias_the_module_keeps_its_own_name(tmp_path):
    # In a fresh interpreter: another test may have installed the alias in this one.
    result = run(tmp_path, """
        import device_sim
        device_sim.no_such_op
    """)
    assert "AttributeError: module 'device_sim' has no attribute 'no_such_op'" in result.stderr


def test_an_unknown_keyword_lists_only_the_ops_own_keywords():
    a = ttnn.from_torch(torch.ones(2, 2), dtype=ttnn.bfloat16)
    with pytest.raises(TypeError) as caught:
        ttnn.relu(a, zzz=1)
    message = str(caught.value)
    assert message == ("ttnn.relu() got an unexpected keyword argument 'zzz'; it takes "
                       + message.split("it takes ", 1)[1])
    takes = message.split("it takes ", 1)[1].split(", ")
    assert takes[0] == "input_tensor" and "output_tensor" in takes
    assert "program_config" not in takes and "queue_id" not in takes  # the ignored TT-NN knobs are not listed


def test_device_sims_exceptions_print_as_ttnn_names_under_the_alias(tmp_path):
    result = run(tmp_path, """
        import torch
        import device_sim
        device_sim.install_as_ttnn()
        import ttnn
        device = ttnn.open_device(0)
        try:
            ttnn.from_torch(torch.zeros(1 << 20, 1024), dtype=ttnn.float32, layout=ttnn.TILE, device=device,
                            memory_config=ttnn.L1_MEMORY_CONFIG)
        except ttnn.OutOfMemoryError as e:
            print(type(e).__module__ + "." + type(e).__qualname__)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ttnn.OutOfMemoryError"
