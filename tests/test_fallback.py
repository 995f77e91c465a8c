"""get_fallback_function: an op's golden run on the host with ttnn tensors in and out, as TT-NN wraps it."""

import sqlite3

import pytest
import torch

import device_sim as ttnn
import ttreport


def test_the_fallback_takes_and_returns_ttnn_tensors_like_its_first_input(device):
    x = torch.randn(2, 32, 64)
    a = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    out = ttnn.get_fallback_function(ttnn.softmax)(a, -1)
    assert isinstance(out, ttnn.Tensor)
    assert (out.dtype, out.layout, out.device(), out.shape) == (ttnn.bfloat16, ttnn.TILE, device, (2, 32, 64))
    torch.testing.assert_close(out.to_torch().float(), torch.softmax(a.to_torch().float(), -1), rtol=1e-2,
                               atol=1e-2)


def test_the_fallback_converts_tensors_inside_lists_and_returns_lists(device):
    parts = [ttnn.from_torch(torch.full((2, 4), float(i)), dtype=ttnn.float32, device=device) for i in range(2)]
    joined = ttnn.get_fallback_function("ttnn.concat")(parts, 0)
    assert torch.equal(joined.to_torch(), torch.tensor([[0.0] * 4] * 2 + [[1.0] * 4] * 2))


def test_the_fallbacks_conversions_are_recorded_as_ops(tmp_path, device):
    a = ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with ttreport.capture(tmp_path / "r") as report:
        ttnn.get_fallback_function(ttnn.exp)(a)
    con = sqlite3.connect(report.db_path)
    try:
        names = [n for (n,) in con.execute("SELECT name FROM operations ORDER BY operation_id")]
    finally:
        con.close()
    assert names == ["ttnn.to_torch", "ttnn.from_torch"]


def test_an_op_without_a_golden_has_no_fallback():
    with pytest.raises(RuntimeError, match="ttnn.deallocate has no golden function"):
        ttnn.get_fallback_function(ttnn.deallocate)
