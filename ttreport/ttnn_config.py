"""ttreport as device_sim's reporter: `ttnn.CONFIG.enable_logging` (or TTNN_CONFIG_OVERRIDES) starts a capture.

    TTNN_CONFIG_OVERRIDES='{"enable_logging": true, "report_name": "run1",
                            "enable_detailed_buffer_report": true}' python model.py
    ttreport ls generated/ttnn/reports

device_sim finds `start` through the `device_sim.reporters` entry point (pyproject.toml) and
calls it with ttnn.CONFIG; it returns the running Capture, which device_sim stops when
logging is switched off, and which closes itself at interpreter exit otherwise.
TT-NN's fields map onto ttreport.Config as below; TTREPORT_CONFIG still applies on top.
"""

from __future__ import annotations

from ttreport.capturing.session import Capture
from ttreport.config import Config


def config_for(ttnn_config) -> Config:
    """The ttreport.Config that matches TT-NN's settings."""
    return Config(
        root=ttnn_config.root_report_path,
        # TT-NN's detailed buffer report lists every page of every buffer after each op.
        buffer_pages=ttnn_config.enable_detailed_buffer_report,
        # TT-NN's detailed tensor report stores the values of every op's inputs and outputs.
        tensors="all" if ttnn_config.enable_detailed_tensor_report else "none",
        # TT-NN's comparison mode checks each op against its golden on the same inputs: local.
        comparison="local" if ttnn_config.enable_comparison_mode else "off",
        comparison_pcc=ttnn_config.comparison_mode_pcc,
        raise_on_mismatch=ttnn_config.comparison_mode_should_raise_exception,
        # TT-NN's graph report writes each op's captured graph, nodes and edges (else each distinct graph once).
        device_graphs=True if ttnn_config.enable_graph_report else "distinct",
    )


def start(ttnn_config) -> Capture:
    """Start capturing the whole process into TT-NN's report path (a new folder if that one is taken)."""
    config = config_for(ttnn_config)
    path = ttnn_config.report_path
    target = None
    if path is not None:
        target, n = path, 2
        while target.exists():  # a second run in the same minute: TT-NN's name is per minute
            target, n = path.with_name(f"{path.name}_{n}"), n + 1
    return Capture(target, config=config, base_name="ttnn").start()
