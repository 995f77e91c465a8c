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

The checkpoints and data are stand-ins made here (nothing downloads): under generated/peer/models, a 1-layer Llama
of tiny dimensions with random weights in HF's format (`HF_MODEL` points at it, as tt_transformers reads it), and in
an offline HF cache (`HF_HOME`) the Whisper config the Whisper test loads by name and a random-weight
openai/clip-vit-base-patch32 for the CLIP tutorial; under TT_METAL_HOME/data, MNIST and CIFAR-10 files of random
pixels in the real formats for the tutorials that read them (torchvision's datasets, from peer/stand_ins where no
real torchvision imports).
PCC is the lowest `PCC: x` the test logs (tt-metal's comp_pcc lines); the test's own assert decides the outcome.
Logs: generated/peer/models/<run>.log. Needs in the venv, none of them a dependency of the project: `transformers`
4.53.0 (tt-metal's tt_metal/python_env/requirements-dev.txt pin; from 4.54 a Llama decoder layer returns a tensor and
tt_transformers' reference wrapper's `result[0]` takes batch 0 only), `loguru`, `datasets` and
`opencv-python-headless` (the Whisper test's imports).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from peer.run import REPO, checked_home

OUT = REPO / "generated" / "peer" / "models"
TINY_LLAMA = OUT / "tiny-llama"
HF_HOME = OUT / "hf_home"
# Where no torchvision imports (no wheel matches this venv's torch), a stand-in holding what the runs call: the
# MNIST/CIFAR-10 tutorials' datasets and transforms; Whisper only imports it (common_demo_utils.py).
STAND_INS = Path(__file__).resolve().parent / "stand_ins"


@dataclass(frozen=True)
class Run:
    name: str
    path: str  # under TT_METAL_HOME
    select: str = ""  # pytest -k expression; "" for a script
    env: dict = field(default_factory=dict)


_DECODER = "models/tt_transformers/tests"
_WHISPER = "models/demos/audio/whisper/tests/test_whisper_modules.py"
RUNS = [
    # tt-metal's decoder tests, as its CI runs them for a Llama checkpoint: prefill of 128 tokens (the 4096
    # case is left out: 32x the emulated work for the same ops), then decode of 10 tokens at batch 1 and 32.
    # Both use a paged KV cache and bfloat8_b weights (the tests' own dtype).
    Run("decoder-prefill-128 1x1", f"{_DECODER}/test_decoder_prefill.py", "128", {"MESH_DEVICE": "N150"}),
    Run("decoder-decode 1x1", f"{_DECODER}/test_decoder.py", "", {"MESH_DEVICE": "N150"}),
    Run("decoder-prefill-128 1x8", f"{_DECODER}/test_decoder_prefill.py", "128", {"MESH_DEVICE": "T3K"}),
    Run("decoder-decode 1x8", f"{_DECODER}/test_decoder.py", "", {"MESH_DEVICE": "T3K"}),
    # Whisper (the optimized functional model; tt-metal a8c5af0f has no other): its module tests at batch 1 a chip,
    # on the mesh the plugin opens by default. test_ttnn_whisper (a LibriSpeech sample and real weights) and the
    # traced decoder (metal trace) are left out.
    *(Run(f"whisper {test}", _WHISPER, f"{test} and -1-distil{rest}") for test, rest in (
        ("test_whisper_attention", ""), ("test_encoder_layer", ""), ("test_encoder", " and not layer"),
        ("test_decoder_layer", ""), ("test_decoder", " and not layer"))),
    *(Run(f"tutorial {name}", f"ttnn/tutorials/basic_python/{name}.py") for name in (
        "ttnn_add_tensors", "ttnn_basic_operations", "ttnn_basic_matrix_multiplication", "ttnn_basic_conv",
        "ttnn_multihead_attention", "ttnn_mlp_inference_mnist", "ttnn_simplecnn_inference",
        # Stops at its image download (requests.get of a github URL; no network here): everything before it runs.
        "ttnn_clip_zero_shot_classification")),
]



def make_whisper_config(hf_home: Path = HF_HOME) -> Path:
    """HF_HOME holding a stand-in for the `distil-whisper/distil-large-v3` config the Whisper test loads by name.

    The real model's widths (d_model 1280, 20 heads, FFN 5120, 128 mel bins, 1500 audio positions, vocab 51866:
    the TT model's shard and program configs are sized for them) with 2 encoder layers instead of 32; the test
    makes its own random weights from the config. Laid out as the HF hub cache, read with HF_HUB_OFFLINE=1."""
    repo = hf_home / "hub" / "models--distil-whisper--distil-large-v3"
    snapshot = repo / "snapshots" / ("0" * 40)
    if (snapshot / "config.json").exists():
        return hf_home
    from transformers import WhisperConfig

    WhisperConfig(d_model=1280, encoder_attention_heads=20, decoder_attention_heads=20, encoder_ffn_dim=5120,
                  decoder_ffn_dim=5120, encoder_layers=2, decoder_layers=2, num_mel_bins=128,
                  max_source_positions=1500, max_target_positions=448, vocab_size=51866).save_pretrained(snapshot)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text("0" * 40)
    return hf_home


def make_clip(hf_home: Path = HF_HOME) -> Path:
    """HF_HOME also holding a stand-in for `openai/clip-vit-base-patch32`, which ttnn_clip_zero_shot_classification
    loads by name (CLIPModel and CLIPTokenizer.from_pretrained).

    The model: the real architecture (transformers' CLIPConfig defaults are "similar to openai/clip-vit-base-patch32":
    vision 12 layers of 768 with 32x32 patches at 224, text 12 layers of 512 over 77 positions and 49,408 tokens,
    projection 512; the real config.json differs only in text bos/eos ids 0/2, set here) with random weights (seed 0),
    saved in bfloat16 (289 MB, half of float32; from_pretrained loads them as float32). The tutorial hard-codes 12
    layers and 768 channels, so the widths cannot shrink. The tokenizer: CLIP's byte-level BPE with no merges (one
    token a byte; the real vocab.json/merges.txt are not here) and the real special ids, <|startoftext|> 49406 and
    <|endoftext|> 49407 (the tutorial finds each prompt's end with argmax over the ids)."""
    repo = hf_home / "hub" / "models--openai--clip-vit-base-patch32"
    snapshot = repo / "snapshots" / ("0" * 40)
    if (snapshot / "model.safetensors").exists():
        return hf_home
    import torch
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(0)
    CLIPModel(CLIPConfig(text_config={"bos_token_id": 0, "eos_token_id": 2})).to(torch.bfloat16).save_pretrained(
        snapshot)
    write_clip_tokenizer(snapshot)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text("0" * 40)
    return hf_home


def write_clip_tokenizer(folder: Path) -> None:
    """CLIPTokenizer's files with one token a byte: vocab.json holding the 256 byte characters (ids 0-255) and each
    as a word end, `c</w>` (256-511), no merges, and the special tokens at their real ids."""
    from transformers.models.clip.tokenization_clip import bytes_to_unicode

    chars = list(bytes_to_unicode().values())
    vocab = {**{c: i for i, c in enumerate(chars)}, **{f"{c}</w>": 256 + i for i, c in enumerate(chars)},
             "<|startoftext|>": 49406, "<|endoftext|>": 49407}
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 77}))


# How many images each stand-in dataset file holds: the tutorials read the first 5 of the test set (the real files
# hold 60,000/10,000 MNIST and 5x10,000 + 10,000 CIFAR-10 images; the formats take any count).
IMAGES_A_FILE = 100


def make_mnist(root: Path, seed: int = 0) -> None:
    """MNIST as torchvision reads it, random pixels: root/MNIST/raw/{train,t10k}-images-idx3-ubyte (magic 2051,
    count, 28, 28, big-endian int32s, then the uint8 pixels) and -labels-idx1-ubyte (magic 2049, count, uint8
    labels 0..9). A folder already holding any of them (a real download) is left as it is."""
    raw = root / "MNIST" / "raw"
    if raw.exists() and any(raw.glob("*-ubyte")):
        return
    raw.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    n = IMAGES_A_FILE
    for split in ("train", "t10k"):
        header = b"".join(v.to_bytes(4, "big") for v in (2051, n, 28, 28))
        (raw / f"{split}-images-idx3-ubyte").write_bytes(header + rng.integers(0, 256, (n, 28, 28), np.uint8).tobytes())
        header = b"".join(v.to_bytes(4, "big") for v in (2049, n))
        (raw / f"{split}-labels-idx1-ubyte").write_bytes(header + rng.integers(0, 10, n, np.uint8).tobytes())


def make_cifar10(root: Path, seed: int = 0) -> None:
    """CIFAR-10 as torchvision reads it, random pixels: root/cifar-10-batches-py/data_batch_1..5 and test_batch, each
    a pickled dict as the real ones (`batch_label`, `labels`, `data`: N x 3072 uint8, the 32x32 R, G and B planes of
    one image a row, `filenames`), and batches.meta (`label_names` as the real ten, `num_cases_per_batch`,
    `num_vis`). They are pickles because that is the format; made here and read back by the stand-in's
    arrays-only unpickler. A folder already holding any of them is left as it is."""
    folder = root / "cifar-10-batches-py"
    if folder.exists() and any(folder.iterdir()):
        return
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    n = IMAGES_A_FILE
    names = [(f"data_batch_{i}", f"training batch {i} of 5") for i in range(1, 6)]
    for name, batch_label in [*names, ("test_batch", "testing batch 1 of 1")]:
        batch = {"batch_label": batch_label, "labels": rng.integers(0, 10, n).tolist(),
                 "data": rng.integers(0, 256, (n, 3 * 32 * 32), np.uint8),
                 "filenames": [f"stand_in_{name}_{i}.png" for i in range(n)]}
        (folder / name).write_bytes(pickle.dumps(batch, protocol=4))
    meta = {"num_cases_per_batch": n, "num_vis": 3 * 32 * 32,
            "label_names": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]}
    (folder / "batches.meta").write_bytes(pickle.dumps(meta, protocol=4))


def real_torchvision_imports() -> bool:
    """Whether `import torchvision` works: a wheel built for another torch is found, then fails at import
    (`operator torchvision::nms does not exist`), so finding the module is not enough. A subprocess, so a failed
    import leaves nothing registered in this one."""
    done = subprocess.run([sys.executable, "-c", "import torchvision"], capture_output=True, timeout=120)
    return done.returncode == 0


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


def command(run: Run, home: Path, timeout_s: float) -> list[str]:
    if not run.path.endswith(".py") or "/tests/" not in run.path:
        return [sys.executable, "-c", _SCRIPT, run.path]
    conftest_root = run.path.split("/tests/")[0]
    cmd = [sys.executable, "-m", "pytest", "-s", "-p", "peer.plugin", "-p", "no:ttreport", "-p", "no:cacheprovider",
           "--confcutdir", conftest_root, "--rootdir", str(home), "-c", os.devnull, "--import-mode=importlib",
           "-q", "--no-header", "-rN", "--tb=short", f"--peer-timeout={timeout_s}", run.path]
    return [*cmd, "-k", run.select] if run.select else cmd


def outcome(returncode: int, log: str) -> tuple[str, str]:
    """("passed" | "failed", the first failure line: pytest's `E ...` or a script's last traceback line)."""
    if returncode == 0:
        return "passed", ""
    lines = log.splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("E ")), None)
    if first is not None:  # the first `E` block, whose later lines hold a TT_THROW's info
        block = []
        for line in lines[first:first + 4]:
            if not line.startswith("E "):
                break
            block.append(line[1:].strip())
        return "failed", " ".join(block)
    lines = [line for line in lines if line.strip()]
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
           "HF_HOME": str(make_clip(make_whisper_config())),
           "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    if not real_torchvision_imports():
        env["PYTHONPATH"] += os.pathsep + str(STAND_INS)
    # The MNIST and CIFAR-10 tutorials read root="./data" in TT_METAL_HOME, as tt-metal's test_tutorials.py
    # links it; their files are laid out there.
    make_mnist(home / "data")
    make_cifar10(home / "data")
    print(f"{'run':32} {'outcome':8} {'lowest PCC':>11} {'s':>5}  first failure")
    for run in runs:
        start = time.monotonic()
        try:
            done = subprocess.run(command(run, home, args.timeout), cwd=home, env={**env, **run.env},
                                  capture_output=True, text=True, timeout=args.timeout)
            log, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as e:  # its output comes back as bytes, text=True or not
            partial = b"".join(filter(None, [e.stdout, e.stderr])).decode(errors="replace")
            log, code = f"{partial}\nstopped after {args.timeout:g} s (--timeout)", -1
        log_name = re.sub(r"[^\w.-]+", "_", run.name)
        (OUT / f"{log_name}.log").write_text(log)
        result, why = outcome(code, log)
        pcc = lowest_pcc(log)
        print(f"{run.name:32} {result:8} {f'{pcc:.6f}' if pcc is not None else '-':>11} "
              f"{time.monotonic() - start:5.0f}  {why[:300]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
