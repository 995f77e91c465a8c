"""A bfloat8_b model at LoFi against the same model at HiFi4: golden mode shows the PCC drop per op,
and `ttreport compare` names the first op below the threshold."""

from __future__ import annotations

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport.cli import main

PCC = 0.9999  # TT-NN's usual per-op check; the LoFi ops land just under it


def mlp(device, fidelity, fp32_dest_acc_en):
    """x @ w1 -> gelu -> @ w2 -> sum, weights in bfloat8_b, every kernel at `fidelity`."""
    cfg = ttnn.WormholeComputeKernelConfig(math_fidelity=fidelity, math_approx_mode=False,
                                           fp32_dest_acc_en=fp32_dest_acc_en)
    g = torch.Generator().manual_seed(0)
    x = ttnn.from_torch(torch.randn(1, 64, 512, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    w1 = ttnn.from_torch(torch.randn(512, 256, generator=g) / 22.6, dtype=ttnn.bfloat8_b, layout=ttnn.TILE,
                         device=device)
    w2 = ttnn.from_torch(torch.randn(256, 128, generator=g) / 16, dtype=ttnn.bfloat8_b, layout=ttnn.TILE,
                         device=device)
    h = ttnn.gelu(ttnn.matmul(x, w1, compute_kernel_config=cfg))
    return ttnn.sum(ttnn.matmul(h, w2, compute_kernel_config=cfg), -1, compute_kernel_config=cfg)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("fidelity")
    paths = {}
    for name, fidelity, fp32 in (("hifi4", ttnn.MathFidelity.HiFi4, True), ("lofi", ttnn.MathFidelity.LoFi, False)):
        device = ttnn.open_device(0)
        try:
            config = ttreport.Config(root=root, comparison="both", comparison_pcc=PCC, tensors="all")
            with ttreport.capture(name, config=config) as handle:
                mlp(device, fidelity, fp32)
        finally:
            ttnn.close_device(device)
        paths[name] = handle.path
    return paths


def local_pcc(path) -> dict[tuple[int, str], float]:
    with ttreport.open(path) as r:
        rows = r.sql("SELECT c.operation_id, o.name, c.pcc FROM tensor_comparisons c "
                     "JOIN operations o USING (operation_id) WHERE c.mode = 'local' ORDER BY 1")
    return {(row["operation_id"], row["name"]): row["pcc"] for row in rows}


def test_golden_mode_reports_the_pcc_drop_of_each_lofi_op(runs):
    hifi4, lofi = local_pcc(runs["hifi4"]), local_pcc(runs["lofi"])
    assert hifi4.keys() == lofi.keys()
    computing = [k for k in hifi4 if k[1] in ("ttnn.matmul", "ttnn.sum")]
    assert [k[1] for k in computing] == ["ttnn.matmul", "ttnn.matmul", "ttnn.sum"]
    for k in computing:
        assert hifi4[k] >= PCC > lofi[k] > 0.999, k  # a drop a 0.9999 check catches, and no collapse
    gelu = next(k for k in hifi4 if k[1] == "ttnn.gelu")
    assert lofi[gelu] >= PCC  # the SFPU op itself is exact in both: its own (local) inputs are the device's


def test_compare_names_the_first_lofi_matmul_as_the_root_cause(runs):
    result = CliRunner().invoke(main, ["compare", str(runs["hifi4"]), str(runs["lofi"]), "--pcc", str(PCC)],
                                catch_exceptions=False)
    assert result.exit_code == 1, result.output
    root = next(line for line in result.output.splitlines() if line.startswith("ROOT CAUSE"))
    assert root.startswith("ROOT CAUSE: ttnn.matmul (A op 4, B op 4): inputs match, outputs do not")
    assert "PCC 0.9998" in root
    assert "h = ttnn.gelu(ttnn.matmul(x, w1, compute_kernel_config=cfg))" in result.output  # its stack trace
