"""The demo: a tiny GPT-style model on device_sim, run under capture (`ttreport demo` prints what it made).

It is written the way the concise TT-NN API reads (`import device_sim as ttnn`) and touches
each part of a report: fused ops (a bias-linear is one op, as in TT-NN), tensors in L1 and in DRAM
chosen by each of the four rules (argument, `with ttnn.memory`, inputs, default), a
bfloat8_b weight, an op that strict mode refuses (so the errors table has a row), and
stored tensors. Everything is seeded, so each run records the same
ops, shapes, addresses and values; only timings differ.

    ttreport demo                                # capture it, print its summary (ttreport.cli)
    python -m ttreport.demo --sample             # rewrite sample_reports/demo
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

import device_sim as ttnn
from ttreport.config import Config

SAMPLE_ROOT = Path(__file__).resolve().parent.parent / "sample_reports"

# The question `ttreport demo` answers in SQL after the summary (also in docs/queries.md).
DEMO_QUERY = """\
SELECT o.name, t.memory_config_source AS chosen_by, COUNT(*) AS outputs
FROM operations o
JOIN output_tensors x ON x.operation_id = o.operation_id
JOIN tensors t ON t.tensor_id = x.tensor_id
WHERE t.buffer_type = 1  -- L1
GROUP BY o.name, chosen_by
ORDER BY outputs DESC, o.name"""


@dataclass
class DemoConfig:
    vocab: int = 64  # token ids 0..63
    seq: int = 32  # S: one tile of rows
    n_embd: int = 32  # C
    n_head: int = 2  # H; head size D = C / H = 16, padded to a tile on the device as in TT-NN
    n_layer: int = 2
    seed: int = 0


class Weights:
    """Every parameter on the device, made from one seeded generator. Shapes are [in, out], as ttnn.linear takes."""

    def __init__(self, device, cfg: DemoConfig):
        g = torch.Generator().manual_seed(cfg.seed)
        C = cfg.n_embd

        def param(*shape, scale=0.02, dtype=ttnn.bfloat16, layout=ttnn.TILE):
            # No memory= here: weights land in DRAM by the process default, as most TT-NN models leave them.
            return ttnn.from_torch(torch.randn(*shape, generator=g) * scale, dtype=dtype, layout=layout,
                                   device=device)

        def ones(n):
            return ttnn.from_torch(torch.ones(1, n), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)

        def zeros(n):
            return ttnn.from_torch(torch.zeros(1, n), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)

        self.wte = param(cfg.vocab, C, scale=1.0, layout=ttnn.ROW_MAJOR)  # embedding rows
        self.wpe = param(1, cfg.seq, C, scale=0.1)
        self.layers = []
        for _ in range(cfg.n_layer):
            self.layers.append(dict(
                ln1_w=ones(C), ln1_b=zeros(C),
                qkv_w=param(C, 3 * C), qkv_b=zeros(3 * C),
                proj_w=param(C, C), proj_b=zeros(C),
                ln2_w=ones(C), ln2_b=zeros(C),
                fc1_w=param(C, 4 * C, dtype=ttnn.bfloat8_b), fc1_b=zeros(4 * C),  # the block-float weight
                fc2_w=param(4 * C, C), fc2_b=zeros(C),
            ))
        self.lnf_w, self.lnf_b = ones(C), zeros(C)
        self.lm_head = param(C, cfg.vocab)


def causal_mask(device, S: int):
    # Large and negative rather than -inf, so the scores stay finite for every comparison metric.
    mask = torch.full((S, S), -1e4).triu(1).reshape(1, 1, S, S)
    return ttnn.from_torch(mask, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, memory=ttnn.L1)


def block(x, p: dict, mask, cfg: DemoConfig):
    """One pre-norm transformer block; x is [1, S, C] in L1."""
    D = cfg.n_embd // cfg.n_head
    # No memory= here: x is in L1 but the norm's weights are in DRAM, the inputs disagree, and the output
    # falls to the process default, DRAM. A common accident; docs/queries.md's "default" query finds it.
    h = ttnn.layer_norm(x, weight=p["ln1_w"], bias=p["ln1_b"], epsilon=1e-5)
    qkv = ttnn.linear(h, p["qkv_w"], bias=p["qkv_b"], memory=ttnn.L1)  # [1, S, 3C]
    q, k, v = ttnn.transformer.split_query_key_value_and_split_heads(qkv, num_heads=cfg.n_head)  # k is [1, H, D, S]
    scores = q @ k  # [1, H, S, S]
    probs = ttnn.transformer.attention_softmax(scores, head_size=D, attention_mask=mask)
    attn = ttnn.transformer.concatenate_heads(probs @ v)  # [1, S, C]
    x = x + ttnn.linear(attn, p["proj_w"], bias=p["proj_b"], memory=ttnn.L1)
    h = ttnn.layer_norm(x, weight=p["ln2_w"], bias=p["ln2_b"], epsilon=1e-5)
    with ttnn.memory(ttnn.DRAM):  # the 4x-wide MLP activation is the biggest tensor: keep it out of L1
        h = ttnn.gelu(ttnn.linear(h, p["fc1_w"], bias=p["fc1_b"]))
    return x + ttnn.linear(h, p["fc2_w"], bias=p["fc2_b"], memory=ttnn.L1)


def forward(device, w: Weights, ids: torch.Tensor, cfg: DemoConfig):
    """Logits [1, S, vocab] for token ids [1, S], as a torch tensor."""
    tokens = ttnn.from_torch(ids, dtype=ttnn.uint32, device=device, memory=ttnn.L1)
    x = ttnn.embedding(tokens, w.wte, layout=ttnn.TILE, memory=ttnn.L1)  # [1, S, C]
    try:
        with ttnn.strict():  # refuse ops whose inputs live in different memory...
            x = x + w.wpe  # ...as here: x is in L1, the position table in DRAM. The report keeps the error.
    except ValueError:
        x = x + ttnn.to_memory_config(w.wpe, ttnn.L1)
    mask = causal_mask(device, cfg.seq)
    for p in w.layers:
        x = block(x, p, mask, cfg)
    x = ttnn.layer_norm(x, weight=w.lnf_w, bias=w.lnf_b, epsilon=1e-5)
    return ttnn.linear(x, w.lm_head).to_torch()  # DRAM, as both its inputs are (rule 3, "inputs")


def run_model(cfg: DemoConfig | None = None) -> torch.Tensor:
    """Open a device, make the weights and run one forward pass; returns the logits."""
    cfg = cfg or DemoConfig()
    device = ttnn.open_device(0)
    try:
        w = Weights(device, cfg)
        ids = torch.randint(0, cfg.vocab, (1, cfg.seq), generator=torch.Generator().manual_seed(cfg.seed + 1))
        return forward(device, w, ids, cfg)
    finally:
        ttnn.close_device(device)


def golden_logits(cfg: DemoConfig | None = None) -> torch.Tensor:
    """The same model in float32 torch, for checking the device's answer."""
    cfg = cfg or DemoConfig()
    g = torch.Generator().manual_seed(cfg.seed)
    C, S, H = cfg.n_embd, cfg.seq, cfg.n_head
    D = C // H
    rnd = lambda *shape, scale=0.02: torch.randn(*shape, generator=g) * scale  # noqa: E731
    wte, wpe = rnd(cfg.vocab, C, scale=1.0), rnd(1, S, C, scale=0.1)
    layers = [dict(qkv=rnd(C, 3 * C), proj=rnd(C, C), fc1=rnd(C, 4 * C), fc2=rnd(4 * C, C))
              for _ in range(cfg.n_layer)]
    lm_head = rnd(C, cfg.vocab)
    ids = torch.randint(0, cfg.vocab, (1, S), generator=torch.Generator().manual_seed(cfg.seed + 1))
    ln = lambda t: torch.nn.functional.layer_norm(t, (C,), eps=1e-5)  # noqa: E731
    x = wte[ids] + wpe
    mask = torch.full((S, S), -1e4).triu(1)
    for p in layers:
        q, k, v = (ln(x) @ p["qkv"]).split(C, -1)
        q, k, v = (t.reshape(1, S, H, D).transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(D) + mask, -1) @ v
        x = x + att.transpose(1, 2).reshape(1, S, C) @ p["proj"]
        x = x + torch.nn.functional.gelu(ln(x) @ p["fc1"]) @ p["fc2"]
    return ln(x) @ lm_head


def capture_demo(target, *, root: Path | None = None, perf_files: bool = True) -> Path:
    """Run the model under a capture that stores every tensor and checks each op against torch.

    `target` is a name under `root` (default: Config's root) or a path; returns the report
    folder. The demo's own report is replaced on each run: it is an example, not a record.
    The capture writes TT-NN's perf files (ops_perf_results.csv, profile_log_device.csv, for
    ttnn-visualizer's Performance tab) into that folder at close unless `perf_files` is False.
    """
    from ttreport.capturing.session import Capture  # torch and device_sim: only a capture imports them

    # device_graphs=True: TT-NN's per-op graph tables, which the visualizer's device-operations view reads
    config = Config(tensors="all", comparison="local", overwrite=True, perf_files=perf_files, device_graphs=True,
                    **({"root": root} if root is not None else {}))
    _warm_up_torch()
    with Capture(target, config=config) as handle:
        run_model()
    return handle.path


def _warm_up_torch() -> None:
    # torch sets up its kernels on first use (a second or more for the first matmul); do that before
    # the capture, as any profiling run warms up first, so the report times the model, not torch.
    x = torch.ones(1, 32, 64)
    torch.nn.functional.gelu(torch.nn.functional.layer_norm(x @ torch.ones(64, 64), (64,))).softmax(-1)


def write_sample() -> Path:
    """Regenerate sample_reports/demo, the committed report the docs and tests read.

    Its stack traces, source files and config.json name paths relative to the repository, so the
    committed report carries no path of the machine that made it.
    """
    # Without the perf CSVs: the committed sample never carried them (`ttreport perf-csv` writes them from
    # the db), and regenerating it would leave them untracked beside it.
    path = capture_demo(SAMPLE_ROOT / "demo", perf_files=False)
    repo = Path(__file__).resolve().parents[1]
    prefix = str(repo) + os.sep
    con = sqlite3.connect(path / "db.sqlite")
    with con:
        for table, column in (("stack_trace_texts", "stack_trace"), ("stack_traces", "stack_trace"),
                              ("errors", "stack_trace"), ("source_files", "path"),
                              ("tensor_lifetime", "producer_source_file"), ("tensor_lifetime", "last_use_source_file")):
            con.execute(f"UPDATE {table} SET {column} = replace({column}, ?, '')", (prefix,))
    con.execute("VACUUM")
    con.close()
    config = json.loads((path / "config.json").read_text())
    for key in ("report_path", "root_report_path"):
        config[key] = os.path.relpath(config[key], repo)
    (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return path


def cli_name() -> str:
    """The CLI as this shell reaches it: `ttreport` when it is on PATH, else the venv's own script (`make demo` runs
    .venv/bin/ttreport without activating the venv, where a bare `ttreport` is "command not found")."""
    script = Path(sys.executable).with_name("ttreport")
    if shutil.which("ttreport") or not script.is_file():
        return "ttreport"
    return os.path.relpath(script)


def export_paths(path: Path) -> tuple[Path, Path]:
    """The demo's trace and HTML page, beside its report folder `path`."""
    return path.with_name(path.name + ".trace.json"), path.with_name(path.name + ".html")


def report_path(root: Path | None = None) -> Path:
    """The folder `ttreport demo` captures into: <root>/demo."""
    return _demo_root(root) / "demo"


def _demo_root(root: Path | None) -> Path:
    """The root the demo's capture writes under (TTREPORT_CONFIG's, else `root`'s or Config's default)."""
    return Config.from_env(Config(**({"root": root} if root is not None else {}))).root


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--sample"]:
        sys.exit("usage: python -m ttreport.demo --sample (rewrites sample_reports/demo); `ttreport demo` runs it")
    print(f"wrote {write_sample()}")
