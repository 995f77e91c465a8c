"""print(tensor) shows its values in TT-NN's text (ttnn/cpp/ttnn/tensor/tensor_impl.cpp, default print options)."""

import torch

import device_sim as ttnn


def test_a_small_tensor_prints_every_value_with_four_decimals_under_the_opening_bracket():
    t = ttnn.from_torch(torch.tensor([[1.0, -2.5], [3.0, 4.0]]), dtype=ttnn.bfloat16)
    assert repr(t) == ("ttnn.Tensor([[ 1.0000, -2.5000],\n"
                       "             [ 3.0000,  4.0000]], shape=Shape([2, 2]), dtype=DataType::BFLOAT16, "
                       "layout=Layout::ROW_MAJOR)")
    assert str(t) == repr(t)


def test_long_dims_show_two_entries_from_each_end_around_an_ellipsis(device):
    # TT-NN writes the separator after an entry, then " ...," with its own leading space: two spaces before it.
    t = ttnn.from_torch(torch.arange(6.0).reshape(1, 6), dtype=ttnn.float32, layout=ttnn.TILE, device=device)
    assert repr(t) == ("ttnn.Tensor([[ 0.0000,  1.0000,  ...,  4.0000,  5.0000]], shape=Shape([1, 6]), "
                       "dtype=DataType::FLOAT32, layout=Layout::TILE)")


def test_rows_are_elided_and_higher_dims_separated_by_a_blank_line():
    t = ttnn.from_torch(torch.arange(12.0).reshape(2, 6, 1), dtype=ttnn.float32)
    text = repr(t)
    assert text.startswith("ttnn.Tensor([[[ 0.0000],\n              [ 1.0000],\n              ...,\n")
    assert "[ 5.0000]],\n\n             [[ 6.0000],\n" in text
    assert text.endswith("shape=Shape([2, 6, 1]), dtype=DataType::FLOAT32, layout=Layout::ROW_MAJOR)")


def test_integers_take_five_columns_and_a_wide_range_goes_scientific():
    assert repr(ttnn.from_torch(torch.tensor([1, 22, 333]), dtype=ttnn.int32)) == (
        "ttnn.Tensor([    1,    22,   333], shape=Shape([3]), dtype=DataType::INT32, layout=Layout::ROW_MAJOR)")
    wide = ttnn.from_torch(torch.tensor([1e-6, 1e3]), dtype=ttnn.float32)
    assert repr(wide).startswith("ttnn.Tensor([ 1.0000e-06,  1.0000e+03], ")


def test_a_scalar_prints_without_brackets_and_a_freed_tensor_says_so(device):
    scalar = ttnn.from_torch(torch.tensor(3.5), dtype=ttnn.float32)
    assert repr(scalar).startswith("ttnn.Tensor( 3.5000, shape=Shape([])")
    t = ttnn.from_torch(torch.ones(2, 2), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    t.deallocate()
    # the shape stays (tt-metal's base_functionality/test_print_tensor.py: TT-NN keeps a deallocated tensor's spec)
    assert repr(t) == ("ttnn.Tensor(<buffer is not allocated>, shape=Shape([2, 2]), dtype=DataType::BFLOAT16, "
                       "layout=Layout::TILE)")


def test_block_float_values_print_as_the_device_holds_them(device):
    x = torch.tensor([[0.1, 1.0, 2.0, 3.0]])
    t = ttnn.from_torch(x, dtype=ttnn.bfloat8_b, device=device)
    held = t.to_torch().float()[0]
    assert repr(t) == (f"ttnn.Tensor([[{held[0]:7.4f}, {held[1]:7.4f}, {held[2]:7.4f}, {held[3]:7.4f}]], "
                       f"shape=Shape([1, 4]), dtype=DataType::BFLOAT8_B, layout=Layout::TILE)")
    assert held[0] != 0.1  # rounded by the shared exponent, and the text shows the rounded value


def test_zeros_inf_and_nan_do_not_count_toward_scientific_notation():
    inf, nan = float("inf"), float("nan")
    plain = ttnn.from_torch(torch.tensor([0.0, inf, nan, 2.0, 3.0]), dtype=ttnn.float32)
    assert repr(plain).startswith("ttnn.Tensor([ 0.0000,     inf,  ...,  2.0000,  3.0000], ")
    tiny = ttnn.from_torch(torch.tensor([0.0, -inf, 2.0, 1e-6]), dtype=ttnn.float32)
    assert repr(tiny).startswith("ttnn.Tensor([ 0.0000e+00,        -inf,  2.0000e+00,  1.0000e-06], ")


def test_only_the_corner_entries_of_a_large_tensor_are_shown():
    t = ttnn.from_torch(torch.arange(7 * 9, dtype=torch.float32).reshape(7, 9), dtype=ttnn.float32)
    lines = repr(t).split("\n")
    assert lines[0] == "ttnn.Tensor([[ 0.0000,  1.0000,  ...,  7.0000,  8.0000],"
    assert lines[1] == "             [ 9.0000, 10.0000,  ..., 16.0000, 17.0000],"
    assert lines[2] == "             ...,"
    assert lines[4].startswith("             [54.0000, 55.0000,  ..., 61.0000, 62.0000]], shape=Shape([7, 9])")
