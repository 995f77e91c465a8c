"""The real ttnn-visualizer, started on 127.0.0.1 for tests that ask its REST API what a user would see.

One server per test session (the `visualizer` fixture in conftest.py): starting it takes seconds
(gunicorn, its own app database). Each report is opened as its own instance, as a link from its
agent tools opens one (`POST /api/instance/local-paths`), and read through the same endpoints the
browser calls. Its app data goes to a temporary folder; no browser, no usage recording, no network.

Example (in a test):
    def test_x(visualizer, tmp_path):
        report = ...  # a capture's folder
        instance = visualizer.open(report)
        ops = visualizer.get("/api/operations", instance)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

START_TIMEOUT_S = 60.0


class Visualizer:
    def __init__(self, process: subprocess.Popen, base: str, log: Path):
        self.process, self.base, self.log = process, base, log

    def _request(self, path: str, data: dict | None = None, params: dict | None = None):
        query = "&".join(f"{k}={v}" for k, v in (params or {}).items())
        body = json.dumps(data).encode() if data is not None else None
        req = urllib.request.Request(self.base + path + (f"?{query}" if query else ""), data=body,
                                     headers={"Content-Type": "application/json"} if body else {},
                                     method="POST" if body is not None else "GET")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def open(self, report: Path, performance: bool = False) -> str:
        """Open a report folder (holding db.sqlite) as a new instance; returns its instance id. With
        `performance`, the same folder is its performance report too (ops_perf_results.csv beside db.sqlite)."""
        paths = {"profiler_path": str(report), **({"performance_path": str(report)} if performance else {})}
        return self._request("/api/instance/local-paths", paths)["instance_id"]

    def get(self, path: str, instance: str, **params):
        """GET an API path for the instance's report; the decoded JSON."""
        return self._request(path, params={"instanceId": instance, **params})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(workdir: Path) -> Visualizer:
    """Start `ttnn-visualizer` on 127.0.0.1 with its data under `workdir`; waits until it answers."""
    exe = shutil.which("ttnn-visualizer", path=str(Path(os.sys.executable).parent))
    if exe is None:
        raise FileNotFoundError("ttnn-visualizer is not installed in this environment; "
                                "install the dev extras: pip install -e '.[dev]'")
    port = _free_port()
    env = {**os.environ, "APP_DATA_DIRECTORY": str(workdir / "app"), "REPORT_DATA_DIRECTORY": str(workdir / "data"),
           "LAUNCH_BROWSER_ON_START": "false", "USAGE_RECORDING_DISABLED": "true", "FLASK_ENV": "production"}
    log = workdir / "visualizer.log"
    with open(log, "wb") as out:
        # Its own process group: the command starts gunicorn as a child, which stop() ends with it.
        process = subprocess.Popen([exe, "--host", "127.0.0.1", "--port", str(port)], env=env, stdout=out,
                                   stderr=subprocess.STDOUT, cwd=workdir, start_new_session=True)
    vis = Visualizer(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"ttnn-visualizer exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            vis._request("/api/system-capabilities")
            return vis
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                stop(vis)
                raise RuntimeError(f"ttnn-visualizer did not answer in {START_TIMEOUT_S} s:\n"
                                   f"{log.read_text()[-3000:]}") from None
            time.sleep(0.25)


def stop(vis: Visualizer) -> None:
    """End the visualizer and the gunicorn server it started (its process group): terminating the command alone
    left gunicorn serving after the tests, one server a run."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(vis.process.pid, signum)
        try:
            vis.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            continue
        deadline = time.monotonic() + 10
        while _group_alive(vis.process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not _group_alive(vis.process.pid):
            return


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


# -- the small model both visualizer test files capture ------------------------------------------
# Its ops' stack traces end at the tagged lines below, so a test can check the label the visualizer
# shows for each op (file and line) against this file: line_of("line B") is the line of ttnn.relu.
LABELLED_OPS = ["line A", "line B", "line C", "line D", "line B", "line C", "line D", "line E"]
LABELLED_FILE = __file__  # where those lines are: the file a label names


def labelled_model(device):
    """Eight ops (from_torch, relu, add, deallocate twice, a height-sharding to_memory_config), each on a
    line tagged `# line X`; returns the sharded result."""
    import torch

    import device_sim as ttnn

    x = ttnn.from_torch(torch.randn(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)  # line A
    for _ in range(2):
        y = ttnn.relu(x)  # line B
        x = ttnn.add(x, y)  # line C
        ttnn.deallocate(y)  # line D
    sharded = ttnn.create_sharded_memory_config((64, 64), ttnn.CoreGrid(y=2, x=1), ttnn.ShardStrategy.HEIGHT)
    return ttnn.to_memory_config(x, sharded)  # line E


def line_of(tag: str) -> int:
    """The line of this file that ends with `# <tag>`."""
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.endswith(f"# {tag}"))
