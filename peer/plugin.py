"""pytest plugin: tt-metal's own `tests/ttnn` files, unchanged, with `import ttnn` resolving to device_sim.

    TT_METAL_HOME=generated/tt-metal .venv/bin/python -m pytest -p peer.plugin --noconftest \\
        --rootdir generated/tt-metal generated/tt-metal/tests/ttnn/unit_tests/operations/eltwise/test_add.py

(`make peer` runs the committed sample through peer/run.py, which builds this command.)

It gives the tests only what tt-metal's root conftest.py gives them: the fixtures (device, mesh_device,
device_params, reset_seeds, function_level_defaults, ...) and the silicon_arch_* parametrization, written as
tt-metal writes them at the pinned commit (peer/TT_METAL_COMMIT), calling the same ttnn functions, so a ttnn
call device_sim lacks fails the test as it would fail a user's script. tt-metal's own conftest.py files are
not loaded (`--noconftest`): they import tools (tracy, psutil, model downloads) that are not TT-NN.

The test helpers come from the checkout itself: `models.common.utility_functions` and
`tests.ttnn.utils_for_testing` (TT_METAL_HOME and its ttnn/ go first on sys.path).

It also records each test's outcome and, for a failure, the exception's last line, for peer/run.py's tables
(`--peer-json PATH`), and stops a test that runs past `--peer-timeout` seconds (tt-metal's pytest.ini gives
300 through pytest-timeout; 120 here by default: an emulated op taking that long is a hang or a huge case).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

TT_METAL_HOME = Path(os.environ.get("TT_METAL_HOME", "generated/tt-metal")).resolve()
if not (TT_METAL_HOME / "tests" / "ttnn").is_dir():
    raise pytest.UsageError(f"TT_METAL_HOME={TT_METAL_HOME} holds no tests/ttnn; peer/README.md says how to get it")
# tt-metal's install puts its ttnn/ folder on the path too (tt_lib lives there); the alias below still takes
# `ttnn` itself, and so the checkout's own ttnn/ttnn is never imported. Its setup.py also installs tools/tracy as
# `tracy` (32 tests/ttnn files import its signpost).
sys.path[:0] = [str(TT_METAL_HOME), str(TT_METAL_HOME / "ttnn"), str(TT_METAL_HOME / "tools")]

import device_sim  # noqa: E402

device_sim.install_as_ttnn()
import ttnn  # noqa: E402  (device_sim, through the alias)

ALL_ARCHS = {"grayskull", "wormhole_b0", "blackhole"}


def pytest_addoption(parser):
    # The options tt-metal's conftest.py adds that its fixtures read.
    parser.addoption("--tt-arch", choices=sorted(ALL_ARCHS), default=None, help="target arch (default: the device's)")
    parser.addoption("--device-id", type=int, default=0, help="target device id")
    parser.addoption("--peer-json", default=None, help="write each test's outcome and failure line to this JSON file")
    parser.addoption("--peer-timeout", type=float, default=120.0, help="seconds before a test is stopped")
    parser.addoption("--peer-max-per-file", type=int, default=0,
                     help="run at most this many cases of each file, spread evenly over its collection order (0: all)")


def pytest_configure(config):
    for marker in ("post_commit", "slow", "frequent", "skip_post_commit", "requires_fast_runtime_mode_off",
                   "requires_grid_size", "use_module_device", "t3k_compat", "frequently_hangs"):
        config.addinivalue_line("markers", f"{marker}: tt-metal's marker")


# -- fixtures, as tt-metal's conftest.py defines them --------------------------------------------------

@pytest.fixture(scope="function")
def reset_seeds():
    torch.manual_seed(213919)
    np.random.seed(213919)
    random.seed(213919)
    yield


@pytest.fixture(scope="function")
def function_level_defaults(reset_seeds):
    yield


@pytest.fixture(scope="function")
def is_ci_env():
    return os.getenv("CI") == "true"


@pytest.fixture(scope="function")
def device_params(request):
    return getattr(request, "param", {})


def _is_tg_cluster():
    return ttnn.cluster.get_cluster_type() == ttnn.cluster.ClusterType.TG


@pytest.fixture(scope="function")
def galaxy_type():
    # models/tt_transformers/conftest.py's device_params reads it (FABRIC_1D_RING on a 6U galaxy).
    if ttnn.cluster.get_cluster_type() == ttnn.cluster.ClusterType.GALAXY:
        return "6U"
    return "4U" if _is_tg_cluster() else None


def _updated_device_params(device_params):
    from tests.scripts.common import get_updated_device_params  # tt-metal's own helper, from the checkout

    return get_updated_device_params(device_params)


@pytest.fixture(scope="module")
def _device_module_impl(request):
    device_id = request.config.getoption("device_id")
    marker = request.node.get_closest_marker("use_module_device")
    if marker and marker.args:
        device_params = marker.args[0]
    elif marker and marker.kwargs:
        device_params = marker.kwargs.get("device_params", {})
    else:
        device_params = {}
    if _is_tg_cluster() and not device_id:
        device_id = 4
    original_default_device = ttnn.GetDefaultDevice()
    device = ttnn.CreateDevice(device_id=device_id, **_updated_device_params(device_params))
    request.node.pci_ids = [ttnn.GetPCIeDeviceID(device_id)]
    ttnn.SetDefaultDevice(device)
    yield device
    ttnn.SetDefaultDevice(original_default_device)
    ttnn.close_device(device)


@pytest.fixture(scope="function")
def device(request, device_params):
    if request.node.get_closest_marker("use_module_device"):
        if device_params:
            raise ValueError("Cannot use @pytest.mark.use_module_device with parametrized device_params")
        yield request.getfixturevalue("_device_module_impl")
        return
    device_id = request.config.getoption("device_id")
    request.node.pci_ids = [ttnn.GetPCIeDeviceID(device_id)]
    if _is_tg_cluster() and not device_id:
        device_id = 4
    original_default_device = ttnn.GetDefaultDevice()
    device = ttnn.CreateDevice(device_id=device_id, **_updated_device_params(device_params))
    ttnn.SetDefaultDevice(device)
    from tests.tests_common.cache_entries_counter import CacheEntriesCounter

    device.cache_entries_counter = CacheEntriesCounter(device)
    yield device
    ttnn.SetDefaultDevice(original_default_device)
    ttnn.close_device(device)


@pytest.fixture(scope="function")
def mesh_device(request, silicon_arch_name, device_params):
    request.node.pci_ids = ttnn.get_pcie_device_ids()
    try:
        param = request.param
    except (ValueError, AttributeError):
        param = ttnn._ttnn.multi_device.SystemMeshDescriptor().shape().mesh_size()
    if isinstance(param, tuple):
        if param[0] * param[1] > ttnn.get_num_devices():
            pytest.skip("Requested more devices than available. Test not applicable for machine")
        mesh_shape = ttnn.MeshShape(*param)
    else:
        if param > ttnn.get_num_devices():
            pytest.skip("Requested more devices than available. Test not applicable for machine")
        mesh_shape = ttnn.MeshShape(1, param)
    params = _updated_device_params(device_params)
    fabric_config = params.pop("fabric_config", None)
    for key in ("fabric_tensix_config", "reliability_mode", "fabric_manager", "fabric_router_config"):
        params.pop(key, None)
    if fabric_config:
        ttnn.set_fabric_config(fabric_config)
    mesh_device = ttnn.open_mesh_device(mesh_shape=mesh_shape, **params)
    from tests.tests_common.cache_entries_counter import CacheEntriesCounter

    mesh_device.cache_entries_counter = CacheEntriesCounter(mesh_device)
    yield mesh_device
    for submesh in mesh_device.get_submeshes():
        ttnn.close_mesh_device(submesh)
    ttnn.close_mesh_device(mesh_device)
    if fabric_config:
        ttnn.set_fabric_config(ttnn.FabricConfig.DISABLED)


@pytest.fixture(scope="function")
def pcie_mesh_device(request, silicon_arch_name, device_params):
    """tt-metal's: the 4 PCIe chips as a 2x2 mesh at offset (0, 1), reshaped to 1x4; skips for any other count."""
    device_ids = ttnn.get_pcie_device_ids()
    try:
        requested = min(request.param, len(device_ids))
    except (ValueError, AttributeError):
        requested = len(device_ids)
    if requested != 4:
        pytest.skip("Only 4 PCIe devices are supported for testing")
    request.node.pci_ids = device_ids[:requested]
    params = _updated_device_params(device_params)
    for key in ("fabric_config", "fabric_tensix_config", "reliability_mode"):
        params.pop(key, None)
    mesh_device = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(2, 2), **params, offset=ttnn.MeshCoordinate(0, 1))
    mesh_device.reshape(ttnn.MeshShape(1, 4))
    yield mesh_device
    for submesh in mesh_device.get_submeshes():
        ttnn.close_mesh_device(submesh)
    ttnn.close_mesh_device(mesh_device)


@pytest.fixture(autouse=True)
def check_requires_grid_size(request):
    marker = request.node.get_closest_marker("requires_grid_size")
    if marker is None or not marker.args:
        return
    for name in ("mesh_device", "device"):
        if name in request.fixturenames:
            grid = request.getfixturevalue(name).compute_with_storage_grid_size()
            required = marker.args[0]
            if isinstance(required, tuple):
                if grid.x < required[0] or grid.y < required[1]:
                    pytest.skip(f"Test requires device worker grid at least {required[0]}x{required[1]} but got "
                                f"{grid.x}x{grid.y} ({grid.x * grid.y} cores)")
            elif grid.x * grid.y < int(required):
                pytest.skip(f"Test requires at least {required} worker cores but got {grid.x * grid.y}")
            return
    pytest.skip("requires_grid_size mark requires one of: device, mesh_device (none requested by test)")


@pytest.fixture(autouse=True)
def reset_default_device(request):
    if "no_reset_default_device" in request.keywords:
        yield
        return
    try:
        device = ttnn.GetDefaultDevice()
    except Exception:
        device = None
    yield
    if device is not None:
        ttnn.SetDefaultDevice(device)
    elif "device" in request.fixturenames:
        ttnn.SetDefaultDevice(None)


def pytest_generate_tests(metafunc):
    """silicon_arch_name and silicon_arch_<arch>, as tt-metal's conftest.py parametrizes them."""
    tt_arch = metafunc.config.getoption("--tt-arch") or ttnn.get_arch_name()
    specific = {"silicon_arch_grayskull": {"grayskull"}, "silicon_arch_wormhole_b0": {"wormhole_b0"},
                "silicon_arch_blackhole": {"blackhole"}}
    requested = [f for f in metafunc.fixturenames if f in specific]
    archs = set(ALL_ARCHS).intersection(*(specific[f] for f in requested)) if requested else set(ALL_ARCHS)
    if "silicon_arch_name" in metafunc.fixturenames:
        metafunc.parametrize("silicon_arch_name", [a for a in sorted(archs) if a == tt_arch], scope="session")
        for f in requested:
            metafunc.parametrize(f, [True], scope="session")


def pytest_collection_modifyitems(config, items):
    """Keep at most --peer-max-per-file cases of each file: every k-th of its collection order, so a file of
    thousands of parametrized cases is sampled across its parameters, the same cases on every run.

    Before that, the one rule of tests/ttnn/conftest.py kept here: in fast runtime mode (TT-NN's default) a case
    marked requires_fast_runtime_mode_off (tracing, validation, logging) or slow (no --runslow) is skipped, as it
    is when tt-metal's own pytest run collects it (11 files, e.g. unit_tests/operations/matmul/test_experimental.py,
    whose cases trace: ttnn.tracer raises in fast runtime mode, in TT-NN as in device_sim)."""
    skips = {"requires_fast_runtime_mode_off": "Skipping test with requires_fast_runtime_mode_off",
             "slow": "need --runslow option to run"}  # tests/ttnn/conftest.py's reasons
    if ttnn.CONFIG.enable_fast_runtime_mode:
        for item in items:
            for marker in skips.keys() & item.keywords.keys():
                item.add_marker(pytest.mark.skip(reason=skips[marker]))
    cap = config.getoption("--peer-max-per-file")
    if cap <= 0:
        return
    by_file: dict[str, list] = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::")[0], []).append(item)
    keep = set()
    for group in by_file.values():
        n = len(group)
        k = min(cap, n)  # spread k picks over the n cases (over cap, a file with fewer than cap kept only n**2 // cap)
        keep.update(id(group[i * n // k]) for i in range(k))
    deselected = [item for item in items if id(item) not in keep]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if id(item) in keep]


# -- a per-test time limit and the outcome record --------------------------------------------------

_RESULTS: list[dict] = []  # one row per test, for --peer-json


class PeerTimeout(Exception):
    """A test ran past --peer-timeout."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    limit = item.config.getoption("--peer-timeout")

    def stop(signum, frame):
        raise PeerTimeout(f"stopped after {limit:g} s (--peer-timeout)")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _failure_line(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    text = str(report.longrepr)
    return text.strip().splitlines()[-1] if text.strip() else ""


def pytest_runtest_logreport(report):
    # One row per test: its call outcome, or the setup/teardown phase that failed or skipped it.
    results = _RESULTS
    if report.when == "call" or report.failed or (report.when == "setup" and report.skipped):
        outcome = report.outcome if report.when == "call" else ("error" if report.failed else "skipped")
        if report.when == "call" and hasattr(report, "wasxfail"):
            outcome = "xfailed" if report.skipped else "xpassed"
        line = _failure_line(report) if report.failed else ""
        if report.skipped and isinstance(report.longrepr, tuple):
            line = str(report.longrepr[2])
        results.append({"nodeid": report.nodeid, "when": report.when, "outcome": outcome,
                        "message": line[:2000], "duration_s": round(report.duration, 3)})


def pytest_collectreport(report):
    if report.failed:  # a file that does not import: one error row for it
        _RESULTS.append({"nodeid": report.nodeid, "when": "collect", "outcome": "error",
                                      "message": _failure_line(report)[:2000], "duration_s": 0.0})


def pytest_sessionfinish(session):
    path = session.config.getoption("--peer-json")
    if path:
        Path(path).write_text(json.dumps({"tt_metal_home": str(TT_METAL_HOME),
                                          "results": _RESULTS}, indent=1))
