"""Whole blocks: the short-API examples against torch, and the same attention in TT-NN's long names."""

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
from device_sim.examples import attention, linear_parameters, mlp

B, S, C, H = 2, 64, 128, 4
LONG_NAMES_SCRIPT = Path(__file__).parent / "tt_nn_scripts" / "attention_long_names.py"


def bf16(t):
    return t.detach().bfloat16().float()  # what the device starts from


def torch_attention(x, qkv, out, num_heads, mask=None):
    D = x.shape[-1] // num_heads
    heads = lambda t: t.reshape(*t.shape[:2], num_heads, D).transpose(1, 2)  # noqa: E731  [B, S, C] -> [B, H, S, D]
    q, k, v = (heads(t) for t in (bf16(x) @ bf16(qkv.weight).T + bf16(qkv.bias)).chunk(3, -1))
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    probs = torch.softmax(scores if mask is None else scores + mask, -1)
    context = (probs @ v).transpose(1, 2).reshape(x.shape)
    return context @ bf16(out.weight).T + bf16(out.bias)


def assert_close_in_bfloat16(got, want):
    # A few bfloat16 roundings in a row: relative to the output's scale, about 1% at most.
    got = got.float()
    assert got.shape == want.shape
    assert (got - want).abs().max() <= 0.02 * want.abs().max(), (got - want).abs().max()
    assert torch.corrcoef(torch.stack([got.flatten(), want.flatten()]))[0, 1] > 0.999


@pytest.fixture
def linears():
    torch.manual_seed(0)
    return torch.nn.Linear(C, 3 * C), torch.nn.Linear(C, C)


def run_attention(device, x, qkv, out, mask=None):
    tx = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    tmask = ttnn.from_torch(mask, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device) if mask is not None else None
    y = attention(tx, linear_parameters(qkv, device), linear_parameters(out, device), num_heads=H,
                  attention_mask=tmask)
    assert (y.memory_config(), y.memory_config_source) == (ttnn.DRAM, "argument")
    return y.to_torch()


def test_attention_matches_torch(linears, device):
    x = torch.randn(B, S, C)
    assert_close_in_bfloat16(run_attention(device, x, *linears), torch_attention(x, *linears, H))


def test_attention_with_a_padding_mask(linears, device):
    x = torch.randn(B, S, C)
    mask = torch.zeros(B, 1, 1, S)
    mask[1, ..., S // 2:] = -1e9  # the second sequence is half padding
    got = run_attention(device, x, *linears, mask=mask)
    assert_close_in_bfloat16(got, torch_attention(x, *linears, H, mask=mask))
    assert not torch.allclose(got, run_attention(device, x, *linears))


def test_mlp_matches_torch(device):
    torch.manual_seed(0)
    up, down = torch.nn.Linear(C, 4 * C), torch.nn.Linear(4 * C, C)
    x = torch.randn(B, S, C)
    tx = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    y = mlp(tx, linear_parameters(up, device), linear_parameters(down, device))
    assert y.shape == (B, S, C) and y.layout == ttnn.TILE
    want = torch.nn.functional.gelu(bf16(x) @ bf16(up.weight).T + bf16(up.bias)) @ bf16(down.weight).T
    assert_close_in_bfloat16(y.to_torch(), want + bf16(down.bias))


def test_the_long_names_script_runs_unchanged_and_matches_the_short_api(tmp_path, device):
    saved = tmp_path / "attention.pt"
    # Runs the script as `python script.py OUT` would, with ttnn installed first.
    runner = ("import sys, runpy, device_sim; device_sim.install_as_ttnn(); sys.argv = sys.argv[1:]; "
              "runpy.run_path(sys.argv[0], run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", runner, str(LONG_NAMES_SCRIPT), str(saved)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    r = torch.load(saved, weights_only=True)
    qkv, out = torch.nn.Linear(C, 3 * C), torch.nn.Linear(C, C)
    qkv.load_state_dict(r["qkv"])
    out.load_state_dict(r["output"])
    x = r["hidden_states"]
    assert_close_in_bfloat16(r["result"], torch_attention(x, qkv, out, r["num_heads"]))
    # Same ops in the same order on the same values: the two spellings agree to the bit.
    assert torch.equal(r["result"], run_attention(device, x, qkv, out))
