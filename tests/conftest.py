"""Fixtures shared by every test file: a fresh device, no hook left behind, the real ttnn-visualizer, a
throwaway PostgreSQL cluster."""

import signal
import warnings

import pytest

import device_sim as ttnn
from device_sim import mesh

# pytester runs small suites in a subprocess (tests/test_pytest_plugin.py: ttreport's pytest plugin).
pytest_plugins = ["pytester"]


def pytest_configure(config):
    # A shell's background job (`make test &`, `(bash .ci/run > log &)`) starts with SIGINT ignored, as does
    # every process it starts, and a capture leaves an ignored SIGINT ignored (test_capture has that case):
    # the Ctrl-C tests need SIGINT as a terminal's run has it. (Last round's "lost Ctrl-C" in two CI runs
    # started that way was this.)
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def device():
    dev = ttnn.open_device(0)
    try:
        yield dev
    finally:
        ttnn.close_device(dev)


@pytest.fixture(autouse=True)
def _no_leaked_state(request):
    """A test that leaves a hook installed, a device open or the default memory config changed would skew
    the next: a report lists every live buffer of every open device after each op, so one device left open
    with 50 tensors made a later test's report 25x larger (and its 4 MiB disk too small to fold the WAL)."""
    default = ttnn.get_default_memory_config()
    opened = {id(d) for d in [*ttnn.open_devices(), *mesh.open_meshes]}
    yield
    left_open = [d for d in [*mesh.open_meshes, *ttnn.open_devices()] if id(d) not in opened and d.is_open]
    for d in left_open:
        if d.is_open:  # a mesh's chips close with it
            ttnn.close_device(d)
    if left_open:
        warnings.warn(f"{request.node.nodeid} left {left_open} open; closed after it", stacklevel=1)
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


@pytest.fixture(scope="session")
def postgres_cluster():
    """A throwaway PostgreSQL cluster (ttreport.store.throwaway), one for the session; each test makes its own
    database with .new_database(). Skips, saying why, where no server can be started."""
    from ttreport.store import throwaway

    try:
        cluster = throwaway.start()
    except throwaway.Unavailable as e:
        pytest.skip(f"no PostgreSQL server for the store tests: {e}")
    yield cluster
    cluster.stop()
