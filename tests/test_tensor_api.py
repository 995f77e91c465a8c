"""The Tensor object: its methods and operators (the concise API), and the errors a user can cause."""

import numpy as np
import pytest
import torch

import device_sim as ttnn


@pytest.fixture
def x():
    return torch.randn(2, 32, 64)


def put(values, device, **kwargs):
    kwargs.setdefault("layout", ttnn.TILE)
    return ttnn.from_torch(values, dtype=ttnn.float32, device=device, **kwargs)


def test_what_a_tensor_knows(x, device):
    t = put(x, device, memory=ttnn.L1)
    assert (t.shape, t.dtype, t.layout) == ((2, 32, 64), ttnn.float32, ttnn.TILE)
    assert t.memory_config() == ttnn.L1 and t.device() is device
    assert t.storage_type() == ttnn.StorageType.DEVICE and t.buffer_address() == t.buffer.address
    assert isinstance(t.tensor_id, int) and t.tensor_id != put(x, device).tensor_id
    assert len(t) == 2 and t.rank == 3 and t.volume() == x.numel()


def test_methods_match_torch(x, device):
    t = put(x, device)
    assert torch.equal(t.reshape(4, 16, 64).to_torch(), x.reshape(4, 16, 64))
    assert torch.equal(t.reshape((64, 64)).to_torch(), x.reshape(64, 64))
    assert torch.equal(t.permute(2, 0, 1).to_torch(), x.permute(2, 0, 1))
    assert torch.equal(t.transpose(-2, -1).to_torch(), x.transpose(-2, -1))
    assert torch.equal(t[1, :4].to_torch(), x[1, :4])
    assert torch.equal(t.to_layout(ttnn.ROW_MAJOR).to_torch(), x)


def test_moving_between_host_and_device(x, device):
    host = ttnn.from_torch(x, dtype=ttnn.float32)
    assert host.device() is None and host.storage_type() == ttnn.StorageType.HOST
    on_device = host.to_device(device, memory_config=ttnn.L1)
    assert on_device.memory_config() == ttnn.L1 and on_device.device() is device
    assert host.to(device).device() is device
    back = on_device.cpu()
    assert back.device() is None and back.memory_config() is None
    assert torch.equal(on_device.from_device().to_torch(), x)
    with pytest.raises(RuntimeError, match="is on the host and has no buffer address"):
        back.buffer_address()


def test_operators_match_torch(x, device):
    a, b = put(x, device), put(x.flip(-1), device)
    y = x.flip(-1)
    for got, want in [(a + b, x + y), (a - b, x - y), (a * b, x * y), (a / b, x / y), (-a, -x), (abs(a), x.abs()),
                      (a ** 2, x**2)]:
        assert torch.allclose(got.to_torch(), want, rtol=1e-6), (got, want)


def test_matmul_operator(device):
    a, b = torch.randn(2, 32, 64), torch.randn(64, 96)
    got = (put(a, device) @ put(b, device)).to_torch()
    assert got.shape == (2, 32, 96) and torch.allclose(got, a @ b, atol=1e-4)


def test_reflected_operators_with_numbers(x, device):
    a = put(x, device)
    assert torch.allclose((2 + a).to_torch(), 2 + x)
    assert torch.allclose((2 - a).to_torch(), 2 - x)
    assert torch.allclose((2 * a).to_torch(), 2 * x)
    assert torch.allclose((2 / a).to_torch(), 2 / x, rtol=1e-5)
    assert torch.allclose((a - 2).to_torch(), x - 2)
    assert torch.allclose((a / 2).to_torch(), x / 2)


def test_augmented_assignment_rebinds_to_a_new_tensor(x, device):
    a = put(x, device)
    original = a
    a += 1
    a *= 3
    assert a is not original
    assert torch.equal(original.to_torch(), x)  # TT-NN ops are not in place: the old tensor is untouched
    assert torch.allclose(a.to_torch(), (x + 1) * 3)


def test_comparisons_are_element_wise_ones_and_zeros(x, device):
    a, zero = put(x, device), put(torch.zeros_like(x), device)
    for got, want in [(a > 0, x > 0), (a >= 0, x >= 0), (a < 0, x < 0), (a <= 0, x <= 0),
                      (a == a, x == x), (a != zero, x != 0)]:
        assert got.dtype == ttnn.float32 and torch.equal(got.to_torch(), want.float())


def test_use_after_deallocate_is_an_error(x, device):
    a = put(x, device)
    a.deallocate()
    assert not a.is_allocated()
    assert repr(a) == ("ttnn.Tensor(<buffer is not allocated>, shape=Shape([2, 32, 64]), dtype=DataType::FLOAT32, "
                       "layout=Layout::TILE)")  # TT-NN keeps a deallocated tensor's spec (tt-metal's test_print_tensor)
    for use in (lambda: a + 1, lambda: a.shape, lambda: a.to_torch(), lambda: ttnn.exp(a)):
        with pytest.raises(RuntimeError, match=f"tensor {a.tensor_id} was deallocated"):
            use()


def test_host_and_device_tensors_do_not_mix(x, device):
    a, host = put(x, device), ttnn.from_torch(x, dtype=ttnn.float32)
    with pytest.raises(ValueError, match=r"is on device 0 but tensor \d+ is on the host.*ttnn.to_device"):
        a + host


def test_tensors_on_two_devices_do_not_mix(x, device):
    other = ttnn.open_device(1)
    try:
        a, b = put(x, device), put(x, other)
        with pytest.raises(ValueError, match=r"is on device 0 but tensor \d+ is on device 1"):
            a * b
    finally:
        ttnn.close_device(other)


def test_torch_tensors_must_be_converted_first(x, device):
    with pytest.raises(TypeError, match="convert it first with ttnn.from_torch"):
        put(x, device) + x


def test_tensor_from_a_numpy_array(device):
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ttnn.Tensor(array, device=device, layout=ttnn.TILE, dtype=ttnn.bfloat16)
    assert (t.shape, t.dtype, t.layout, t.padded_shape) == ((3, 4), ttnn.bfloat16, ttnn.TILE, (32, 32))
    assert t.memory_config_source == "default"
    assert torch.equal(t.to_torch().float(), torch.from_numpy(array))
    host = ttnn.Tensor(array)
    assert host.dtype == ttnn.float32 and host.layout == ttnn.ROW_MAJOR and host.device() is None
