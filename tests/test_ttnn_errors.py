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


def _device_tensor(device, *shape):
    return ttnn.from_torch(torch.ones(*shape), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)


def test_a_matmul_of_mismatched_inner_dims_is_tt_nns_tt_fatal_runtime_error(device):
    # TT-NN 0.81: MatmulDeviceOperation's TT_FATAL(a_shape[-1] == b_shape[-2], "The width of the first tensor ...")
    for op in (ttnn.matmul, ttnn.linear):
        with pytest.raises(RuntimeError) as caught:
            op(_device_tensor(device, 2, 32, 64), _device_tensor(device, 32, 96))
        lines = str(caught.value).splitlines()
        assert lines[0] == "TT_FATAL @ device_sim/ops/matmul.py: a_shape[-1] == b_shape[-2]" and lines[1] == "info:"
        assert lines[2] == ("The width of the first tensor must be equal to the height of the second tensor. "
                            "Mismatch: width=64 height=32")
        assert lines[3] == (f"ttnn.{op.__name__.rsplit('.', 1)[-1]}: shapes [2, 32, 64] and [32, 96] cannot be "
                            f"multiplied; transpose or reshape one of them")


def test_a_matmul_whose_batch_dims_differ_is_tt_nns_bmm_error(device):
    with pytest.raises(RuntimeError, match=r"a_shape\[i\] == b_shape\[i\]\ninfo:\nbmm \(non-bcast matmul\) expects "
                                           r"input tensors of shapes BCMK\*BCKN=BCMN or equivalent\n"):
        ttnn.matmul(_device_tensor(device, 2, 32, 64), _device_tensor(device, 3, 64, 32))


def test_a_linear_bias_of_the_wrong_width_is_tt_nns_bias_error(device):
    with pytest.raises(RuntimeError, match=r"bias_shape\[-1\] >= b_shape\[-1\]\ninfo:\nUnsupported bias shape: last "
                                           r"dimension of bias, 48, not equal to or greater than second input's last "
                                           r"dimension, 96\.\n.*give a bias of shape \[1, 96\]"):
        ttnn.linear(_device_tensor(device, 32, 64), _device_tensor(device, 64, 96), bias=_device_tensor(device, 1, 48))


def test_a_binary_op_of_shapes_that_do_not_broadcast_is_tt_nns_broadcasting_rule_violation(device):
    # TT-NN 0.81: BinaryNgDeviceOperation's TT_FATAL(a_dim == b_dim || a_dim == 1 || b_dim == 1, "Broadcasting ...")
    with pytest.raises(RuntimeError) as caught:
        ttnn.add(_device_tensor(device, 2, 32, 64), _device_tensor(device, 3, 32, 64))
    assert str(caught.value).splitlines()[1:] == [
        "info:", "Broadcasting rule violation for rank -3, dim a: 2, dim b: 3",
        "ttnn.add: shapes [2, 32, 64] and [3, 32, 64] do not broadcast; reshape one so that each dimension matches "
        "or is 1"]
    with pytest.raises(RuntimeError, match=r"(?s)^TT_FATAL @ .*\ninfo:\nBroadcasting rule violation: .*\nttnn.where: "):
        ttnn.where(_device_tensor(device, 2, 32, 64), _device_tensor(device, 2, 32, 32), 0.0)


def test_a_refused_matmul_is_recorded_with_tt_nns_error_type(device, tmp_path):
    import ttreport

    a, b = _device_tensor(device, 32, 64), _device_tensor(device, 32, 96)
    with ttreport.capture(tmp_path / "bad"), pytest.raises(RuntimeError):
        ttnn.matmul(a, b)
    error = ttreport.open(tmp_path / "bad").errors()[0]
    assert error.error_type == "RuntimeError" and "The width of the first tensor" in error.message


def test_a_reshape_to_another_volume_is_tt_nns_invalid_arguments_error(device):
    # TT-NN 0.81: infer_dims_for_reshape's TT_FATAL(new_volume == old_volume, "Invalid arguments to reshape")
    t = _device_tensor(device, 2, 32, 64)
    with pytest.raises(RuntimeError, match=r"new_volume == old_volume\ninfo:\nInvalid arguments to reshape\n"
                                           rf"ttnn.reshape: cannot reshape tensor {t.tensor_id} of shape \[2, 32, 64\] "
                                           r"\(4096 elements\) to \[3, 64\]"):
        ttnn.reshape(t, (3, 64))
    with pytest.raises(RuntimeError, match=r"old_volume % new_volume == 0\ninfo:\nInvalid arguments to reshape"):
        ttnn.reshape(t, (-1, 3, 64))


def test_a_concat_of_tensors_whose_other_dims_differ_is_tt_nns_shapes_match_error(device):
    with pytest.raises(RuntimeError, match=r"shapes_match\ninfo:\nAll dimensions must be the same size except for the "
                                           r"dimension along which the contenation is taking place\.\nttnn.concat: "
                                           r"shapes \[\[2, 32, 64\], \[2, 16, 32\]\] cannot be joined along dim 1"):
        ttnn.concat([_device_tensor(device, 2, 32, 64), _device_tensor(device, 2, 16, 32)], dim=1)
    with pytest.raises(ValueError, match="dim must be within the rank"):  # a dim past the rank: not TT_FATAL's case
        ttnn.concat([_device_tensor(device, 2, 32, 64), _device_tensor(device, 2, 32, 64)], dim=3)
