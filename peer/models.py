"""Run tt-metal's own model tests and basic_python tutorials, unchanged, against device_sim; print a table.

    .venv/bin/python -m peer.models                       # every run: outcome, lowest PCC, seconds
    .venv/bin/python -m peer.models --only decoder        # the runs whose name holds "decoder"
    .venv/bin/python -m peer.models --list

TT_METAL_HOME (default generated/tt-metal) must hold tt-metal at peer/TT_METAL_COMMIT, laid out by
peer/fetch_tt_metal.sh. Each run is one subprocess, as tt-metal's CI starts it:

- a model test file through pytest with peer/plugin.py in place of tt-metal's root conftest.py, and the
  conftest files below the root (models/tt_transformers/conftest.py and tests/conftest.py) loaded as they are
  (`--confcutdir`), with MESH_DEVICE choosing the mesh as tt-metal's model tests read it (N150: 1x1, T3K: 1x8);
- a tutorial as tests/ttnn/notebook_tests/test_tutorials.py runs one (`python3 <script>`, cwd TT_METAL_HOME),
  with `import ttnn` made device_sim first.

The checkpoints are stand-ins made here, under generated/peer/models (nothing downloads): a 1-layer Llama of
tiny dimensions with random weights in HF's format (`HF_MODEL` points at it, as tt_transformers reads it).
PCC is the lowest `PCC: x` the test logs (tt-metal's comp_pcc lines); the test's own assert decides the outcome.
Logs: generated/peer/models/<run>.log. Needs `transformers` (4.57, the version tt-metal's model demos pin) and
`loguru` in the venv; neither is a dependency of the project.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from peer.run import REPO, checked_home

OUT = REPO / "generated" / "peer" / "models"
TINY_LLAMA = OUT / "tiny-llama"


@dataclass(frozen=True)
class Run:
    name: str
    path: str  # under TT_METAL_HOME
    select: str = ""  # pytest -k expression; "" for a script
    env: dict = field(default_factory=dict)


_DECODER = "models/tt_transformers/tests"
RUNS = [
    # tt-metal's decoder tests, as its CI runs them for a Llama checkpoint: prefill of 128 tokens (the 4096
    # case is left out: 32x the emulated work for the same ops), then decode of 10 tokens at batch 1 and 32.
    # Both use a paged KV cache and bfloat8_b weights (the tests' own dtype).
    Run("decoder-prefill-128 1x1", f"{_DECODER}/test_decoder_prefill.py", "128", {"MESH_DEVICE": "N150"}),
    Run("decoder-decode 1x1", f"{_DECODER}/test_decoder.py", "", {"MESH_DEVICE": "N150"}),
    Run("decoder-prefill-128 1x8", f"{_DECODER}/test_decoder_prefill.py", "128", {"MESH_DEVICE": "T3K"}),
    Run("decoder-decode 1x8", f"{_DECODER}/test_decoder.py", "", {"MESH_DEVICE": "T3K"}),
    *(Run(f"tutorial {name}", f"ttnn/tutorials/basic_python/{name}.py") for name in (
        "ttnn_add_tensors", "ttnn_basic_operations", "ttnn_basic_matrix_multiplication", "ttnn_basic_conv",
        "ttnn_multihead_attention")),
]

# `python3 <script>` with `import ttnn` answered by device_sim, and nothing else changed (argv, __main__).
_SCRIPT = ("import runpy, sys, device_sim; device_sim.install_as_ttnn(); sys.argv = sys.argv[1:]; "
           "runpy.run_path(sys.argv[0], run_name='__main__')")


def make_tiny_llama(path: Path = TINY_LLAMA) -> Path:
    """A 1-layer Llama checkpoint with random weights, in HF's format, and a word-level tokenizer for it.

    dim 256 with 8 heads of 32 and 8 KV heads: the smallest shape that splits over a T3K's 8 chips one head
    each; the MLP's 512 is 2 tiles a chip. initializer_range 0.05 (HF's default is 0.02) makes the layer's own
    output about as large as the residual it adds to, so a PCC near 1 says the layer is right, not only the
    residual (at 0.02 a layer returning its input scores 0.99999)."""
    if (path / "model.safetensors").exists():
        return path
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=256, intermediate_size=512, num_attention_heads=8, num_key_value_heads=8,
                         head_dim=32, num_hidden_layers=1, vocab_size=512, max_position_embeddings=1024,
                         rope_theta=500000.0, initializer_range=0.05, torch_dtype="bfloat16")
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(path)
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"w{i}": i for i in range(3, config.vocab_size)}}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>",
                            eos_token="</s>").save_pretrained(path)
    return path


def command(run: Run, home: Path) -> list[str]:
    if not run.path.endswith(".py") or "/tests/" not in run.path:
        return [sys.executable, "-c", _SCRIPT, run.path]
    conftest_root = run.path.split("/tests/")[0]
    cmd = [sys.executable, "-m", "pytest", "-s", "-p", "peer.plugin", "-p", "no:ttreport", "-p", "no:cacheprovider",
           "--confcutdir", conftest_root, "--rootdir", str(home), "-c", os.devnull, "--import-mode=importlib",
           "-q", "--no-header", "-rN", "--tb=short", run.path]
    return [*cmd, "-k", run.select] if run.select else cmd


def outcome(returncode: int, log: str) -> tuple[str, str]:
    """("passed" | "failed", the first failure line: pytest's `E ...` or a script's last traceback line)."""
    if returncode == 0:
        return "passed", ""
    errors = [line[1:].strip() for line in log.splitlines() if line.startswith("E ")]
    if errors:
        return "failed", errors[0]
    lines = [line for line in log.strip().splitlines() if line.strip()]
    return "failed", lines[-1] if lines else f"exit {returncode}"


def lowest_pcc(log: str) -> float | None:
    values = [float(m) for m in re.findall(r"PCC:? (?:value: )?([01]\.\d+)", log)]
    return min(values) if values else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tt-metal-home", default=os.environ.get("TT_METAL_HOME", str(REPO / "generated" / "tt-metal")))
    p.add_argument("--only", action="append", help="run only the runs whose name holds this (repeatable)")
    p.add_argument("--list", action="store_true", help="print the runs and exit")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds before one run is stopped")
    args = p.parse_args(argv)
    runs = [r for r in RUNS if not args.only or any(o in r.name for o in args.only)]
    if args.list or not runs:
        print("\n".join(f"{r.name:40} {r.path} {r.select}" for r in RUNS))
        return 0 if runs else 2
    home = checked_home(Path(args.tt_metal_home).resolve())
    OUT.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TT_METAL_HOME": str(home), "CI": "true", "HF_HUB_OFFLINE": "1",
           "HF_MODEL": str(make_tiny_llama()), "TT_CACHE_PATH": str(OUT / "cache"),
           "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    print(f"{'run':32} {'outcome':8} {'lowest PCC':>11} {'s':>5}  first failure")
    for run in runs:
        start = time.monotonic()
        try:
            done = subprocess.run(command(run, home), cwd=home, env={**env, **run.env}, capture_output=True,
                                  text=True, timeout=args.timeout)
            log, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as e:  # its output comes back as bytes, text=True or not
            partial = b"".join(filter(None, [e.stdout, e.stderr])).decode(errors="replace")
            log, code = f"{partial}\nstopped after {args.timeout:g} s (--timeout)", -1
        log_name = re.sub(r"[^\w.-]+", "_", run.name)
        (OUT / f"{log_name}.log").write_text(log)
        result, why = outcome(code, log)
        pcc = lowest_pcc(log)
        print(f"{run.name:32} {result:8} {f'{pcc:.6f}' if pcc is not None else '-':>11} "
              f"{time.monotonic() - start:5.0f}  {why[:150]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
