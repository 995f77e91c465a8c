"""install_as_ttnn: a script written for TT-NN, with its long names, runs unchanged in a real interpreter."""

import subprocess
import sys
import textwrap

TT_NN_SCRIPT = """
import torch
import ttnn
import ttnn.model_preprocessing
import ttnn.transformer
from ttnn.model_preprocessing import preprocess_linear_weight

device = ttnn.open_device(device_id=0, l1_small_size=8192)
torch_x = torch.randn(1, 32, 64)
torch_w = torch.randn(128, 64)  # torch.nn.Linear's [out, in]
x = ttnn.from_torch(torch_x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device,
                    memory_config=ttnn.L1_MEMORY_CONFIG)
w = preprocess_linear_weight(torch_w, dtype=ttnn.bfloat16)
w = ttnn.to_device(w, device, memory_config=ttnn.DRAM_MEMORY_CONFIG)
y = ttnn.linear(x, w, memory_config=ttnn.L1_MEMORY_CONFIG)
placed = (y.memory_config() == ttnn.L1_MEMORY_CONFIG, y.memory_config_source)
y = ttnn.to_layout(y, ttnn.ROW_MAJOR_LAYOUT)
out = ttnn.to_torch(y)
ttnn.deallocate(x)
ttnn.deallocate(y)
ttnn.close_device(device)

import device_sim
assert ttnn is device_sim and ttnn.model_preprocessing is device_sim.model_preprocessing
assert ttnn.transformer is device_sim.transformer
want = torch_x.bfloat16().float() @ torch_w.bfloat16().float().T
assert torch.allclose(out.float(), want, rtol=0.02, atol=0.1), (out - want).abs().max()
print("ok", tuple(out.shape), placed)
"""


def run(tmp_path, source):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(source))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=tmp_path, timeout=120)


def test_a_tt_nn_script_runs_unchanged(tmp_path):
    result = run(tmp_path, "import device_sim\ndevice_sim.install_as_ttnn()\n" + TT_NN_SCRIPT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok (1, 32, 128) (True, 'argument')"


def test_without_install_there_is_no_ttnn_and_the_error_says_how_to_have_it(tmp_path):
    result = run(tmp_path, "import device_sim as ttnn\nfrom ttnn.tracer import trace\n")
    assert result.returncode != 0 and "ModuleNotFoundError: No module named 'ttnn'" in result.stderr
    assert "device_sim.install_as_ttnn()" in result.stderr and "ttreport run" in result.stderr


def test_install_is_idempotent_and_touches_only_ttnn_names(tmp_path):
    result = run(tmp_path, """
        import sys
        import device_sim
        device_sim.install_as_ttnn()
        device_sim.install_as_ttnn()
        assert sum(type(f).__name__ == "_TtnnFinder" for f in sys.meta_path) == 1
        import ttnn.ops.core
        assert ttnn.ops.core is sys.modules["device_sim.ops.core"]
        assert device_sim.__spec__.name == "device_sim"  # device_sim keeps its own identity
        for missing in ("ttnn.no_such_module", "ttnn_extra", "ttnnx"):
            try:
                __import__(missing)
            except ModuleNotFoundError as e:
                assert repr(missing) in str(e), e
            else:
                raise AssertionError(missing)
        import json  # other imports are untouched
        print("ok")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_refuses_when_a_real_ttnn_is_already_imported(tmp_path):
    (tmp_path / "ttnn.py").write_text("REAL = True\n")  # stands in for the real library on sys.path
    result = run(tmp_path, """
        import ttnn
        import device_sim
        device_sim.install_as_ttnn()
    """)
    assert result.returncode != 0
    assert "RuntimeError: a real ttnn module is already imported" in result.stderr
    assert "ttnn.py" in result.stderr
