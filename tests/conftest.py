"""Fixtures shared by every test file: a fresh device, no hook left behind, the real ttnn-visualizer."""

import pytest

import device_sim as ttnn

# pytester runs small suites in a subprocess (tests/test_pytest_plugin.py: ttreport's pytest plugin).
pytest_plugins = ["pytester"]


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


@pytest.fixture(scope="session")
def visualizer(tmp_path_factory):
    """The real ttnn-visualizer on 127.0.0.1, one server for the session (tests/visualizer.py)."""
    import visualizer as _visualizer  # tests/ is on sys.path, as for every test module here

    try:
        vis = _visualizer.start(tmp_path_factory.mktemp("visualizer"))
    except FileNotFoundError as e:  # not installed: the dev extras bring it
        pytest.skip(str(e))
    yield vis
    _visualizer.stop(vis)
