"""Fixtures shared by every test file: a fresh device, and no hook left behind."""

import pytest

import device_sim as ttnn


@pytest.fixture
def device():
    dev = ttnn.open_device(0)
    try:
        yield dev
    finally:
        ttnn.close_device(dev)


@pytest.fixture(autouse=True)
def _no_leaked_state():
    """A test that leaves a hook installed or changes the default memory config would skew the next."""
    default = ttnn.get_default_memory_config()
    yield
    leaked = ttnn.get_hook()
    ttnn.set_hook(None)
    ttnn.set_default_memory_config(default)
    assert leaked is None, f"test left a device_sim hook installed: {leaked!r}"
