"""TT-Metal's custom-kernel API is listed in NOT_EMULATED: present, and refusing with a reason where used."""

import subprocess
import sys

import pytest

import device_sim as ttnn


@pytest.mark.parametrize("name", ttnn.NOT_EMULATED)
def test_a_not_emulated_name_exists_and_refuses_with_its_name_and_the_reason(name):
    thing = getattr(ttnn, name)
    with pytest.raises(ttnn.NotEmulatedError, match=rf"ttnn\.{name} is not emulated: .*custom C\+\+ kernel"):
        thing()
    assert isinstance(ttnn.NotEmulatedError("x"), NotImplementedError)


def test_generic_op_is_not_emulated_and_not_counted_as_covered():
    assert "generic_op" in ttnn.NOT_EMULATED and "ProgramDescriptor" in ttnn.NOT_EMULATED
    assert not set(ttnn.NOT_EMULATED) & {op.short_name for op in ttnn.registered_ops()}  # no op pretends


def test_a_script_that_only_defines_descriptors_imports_and_fails_where_it_builds_one(tmp_path):
    script = tmp_path / "custom_kernel.py"
    script.write_text(
        "import device_sim\n"
        "device_sim.install_as_ttnn()\n"
        "import ttnn\n"
        "make = ttnn.ProgramDescriptor\n"
        "print('imported')\n"
        "make(kernels=[], semaphores=[], cbs=[])\n"
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and run.stdout.strip() == "imported"
    assert "ttnn.ProgramDescriptor is not emulated" in run.stderr


def test_every_not_emulated_name_is_exported():
    assert set(ttnn.NOT_EMULATED) <= set(ttnn.__all__)
