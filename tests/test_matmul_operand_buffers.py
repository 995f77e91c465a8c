"""matmul widens bfloat16 operands into a float32 buffer kept per thread (ops/matmul._float32): same values
as a fresh .float() copy, and nothing an op returns shares that buffer."""

from __future__ import annotations

import importlib
import threading

import pytest
import torch

import device_sim as ttnn
from device_sim import matmul_kernel

matmul_module = importlib.import_module("device_sim.ops.matmul")


@pytest.fixture(autouse=True)
def buffers_for_every_size(monkeypatch):
    """Every operand through the buffers (by default only 256 KiB to 16 MiB), starting from none; every product
    on the float32 path, whose operands these are (not torch's bfloat16 kernel: device_sim/matmul_kernel.py)."""
    monkeypatch.setattr(matmul_kernel, "MIN_MACS", float("inf"))
    monkeypatch.setattr(matmul_module, "_SCRATCH_MIN_BYTES", 0)
    monkeypatch.setattr(matmul_module, "_scratch", matmul_module._Scratch())


def _bf16(device, shape, seed, **kw):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(*shape, generator=g).bfloat16()
    return t, ttnn.from_torch(t, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, **kw)


def _expected(a: torch.Tensor, b: torch.Tensor, dtype=torch.bfloat16) -> torch.Tensor:
    return torch.matmul(a.float(), b.float()).to(dtype)


def test_products_of_growing_and_shrinking_shapes_equal_the_float32_product_rounded_once(device):
    kept = []
    shapes = [((64, 96), (96, 32)), ((256, 512), (512, 128)), ((32, 32), (32, 32)), ((2, 64, 128), (128, 64)),
              ((128, 64), (64, 256))]
    for i, (shape_a, shape_b) in enumerate(shapes):
        ta, a = _bf16(device, shape_a, 2 * i)
        tb, b = _bf16(device, shape_b, 2 * i + 1)
        y = ttnn.matmul(a, b)
        assert torch.equal(y.value.view(torch.int16), _expected(ta, tb).view(torch.int16))
        kept.append((y, y.value.clone()))
    for y, values in kept:  # later products (in the same buffers) changed no earlier output
        assert torch.equal(y.value, values)
    assert matmul_module._scratch.a.numel() == 256 * 512  # grown to the largest a, kept


def test_transposed_operands_and_a_float32_output_use_the_same_values(device):
    ta, a = _bf16(device, (96, 64), 1)
    tb, b = _bf16(device, (128, 96), 2)
    y = ttnn.matmul(a, b, transpose_a=True, transpose_b=True, dtype=ttnn.float32)
    expected = torch.matmul(ta.float().T, tb.float().T)
    assert torch.equal(y.value, expected)
    before = y.value.clone()
    ttnn.matmul(b, a)  # [128, 96] @ [96, 64] reuses both buffers
    assert torch.equal(y.value, before)


def test_an_operand_larger_than_the_buffer_limit_is_widened_in_a_fresh_tensor(device, monkeypatch):
    monkeypatch.setattr(matmul_module, "_SCRATCH_BYTES", 64 * 64 * 4)
    ta, a = _bf16(device, (64, 128), 3)  # 32 KiB of float32: over the limit
    tb, b = _bf16(device, (128, 64), 4)
    y = ttnn.matmul(a, b)
    assert torch.equal(y.value, _expected(ta, tb))
    assert matmul_module._scratch.a is None and matmul_module._scratch.b is None


def test_operands_under_the_lower_limit_are_widened_in_a_fresh_tensor(device, monkeypatch):
    monkeypatch.setattr(matmul_module, "_SCRATCH_MIN_BYTES", 256 << 10)
    ta, a = _bf16(device, (32, 64), 5)
    tb, b = _bf16(device, (64, 32), 6)
    assert torch.equal(ttnn.matmul(a, b).value, _expected(ta, tb))
    assert matmul_module._scratch.a is None and matmul_module._scratch.b is None
    ta, a = _bf16(device, (256, 256), 7)  # 256 KiB as float32: the buffer
    assert torch.equal(ttnn.matmul(a, a).value, _expected(ta, ta))
    assert matmul_module._scratch.a.numel() == matmul_module._scratch.b.numel() == 256 * 256


def test_threads_multiplying_at_once_each_get_their_own_products(device):
    cases = [_bf16(device, (128, 128), s) for s in range(8)]
    results, errors = {}, []

    def work(i):
        try:
            (ta, a), (tb, b) = cases[i], cases[(i + 1) % len(cases)]
            for _ in range(20):
                y = ttnn.matmul(a, b)
                if not torch.equal(y.value, _expected(ta, tb)):
                    raise AssertionError(f"thread {i}: wrong product")
            results[i] = True
        except BaseException as e:  # noqa: BLE001  (the main thread fails the test with it)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 4
