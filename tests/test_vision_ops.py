"""conv2d, pooling and upsample against torch, in TT-NN's flattened NHWC layout, and what a report records."""

import sqlite3

import pytest
import torch
import torch.nn.functional as F

import device_sim as ttnn
import ttreport


def randn(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def host(t):
    """Weights and biases as TT-NN's models hand them to conv2d: torch layout, row-major, on the host."""
    return ttnn.from_torch(t, dtype=ttnn.float32)


def nhwc(x_nchw, device, dtype=ttnn.float32):
    return ttnn.from_torch(x_nchw.permute(0, 2, 3, 1), dtype=dtype, layout=ttnn.ROW_MAJOR, device=device)


def as_nchw(out, n, h, w):
    """TT-NN's conv output [1, 1, N*H*W, C] back to torch's NCHW."""
    return out.value.float().reshape(n, h, w, -1).permute(0, 3, 1, 2)


def conv(x, w, b, device, *, n, h, wd, stride=1, padding=1, groups=1, dilation=1, **kw):
    return ttnn.conv2d(input_tensor=x, weight_tensor=host(w), bias_tensor=None if b is None else host(b),
                       device=device, in_channels=w.shape[1] * groups, out_channels=w.shape[0], batch_size=n,
                       input_height=h, input_width=wd, kernel_size=tuple(w.shape[2:]), stride=(stride, stride),
                       padding=(padding, padding), dilation=(dilation, dilation), groups=groups, **kw)


def test_a_resnet_basic_block_through_conv2d_matches_torch(device):
    N, C, H, W = 2, 16, 8, 8
    x = randn(N, C, H, W)
    w1, w2 = randn(C, C, 3, 3, seed=1) * 0.1, randn(C, C, 3, 3, seed=3) * 0.1
    b1, b2 = randn(C, seed=2), randn(C, seed=4)
    tx = nhwc(x, device)
    relu = ttnn.Conv2dConfig(activation="relu")
    y = conv(tx, w1, b1.reshape(1, 1, 1, C), device, n=N, h=H, wd=W, conv_config=relu)
    y = conv(y, w2, b2.reshape(1, 1, 1, C), device, n=N, h=H, wd=W)
    out = ttnn.relu(ttnn.add(y, ttnn.reshape(tx, (1, 1, N * H * W, C))))
    ref = F.relu(F.conv2d(F.relu(F.conv2d(x, w1, b1, padding=1)), w2, b2, padding=1) + x)
    assert out.shape == (1, 1, N * H * W, C)
    torch.testing.assert_close(as_nchw(out, N, H, W), ref, rtol=1e-4, atol=1e-4)


def test_a_vit_patch_embedding_is_a_strided_conv2d(device):
    N, C, P, E = 1, 3, 16, 64
    img, w, b = randn(N, C, 32, 32), randn(E, C, P, P, seed=1) * 0.05, randn(E, seed=2)
    out, (oh, ow) = conv(nhwc(img, device), w, b, device, n=N, h=32, wd=32, stride=P, padding=0,
                         return_output_dim=True)
    assert (oh, ow) == (2, 2) and out.shape == (1, 1, 4, E)  # four patches, one row each
    ref = F.conv2d(img, w, b, stride=P).flatten(2).transpose(1, 2)  # [N, patches, E], as ViT reads it
    torch.testing.assert_close(out.value.reshape(N, 4, E), ref, rtol=1e-4, atol=1e-4)


def test_depthwise_dilated_conv_with_uneven_padding_matches_torch(device):
    x, w = randn(1, 8, 9, 7), randn(8, 1, 3, 3, seed=1)
    out = ttnn.conv2d(input_tensor=nhwc(x, device), weight_tensor=host(w), device=device, in_channels=8,
                      out_channels=8, batch_size=1, input_height=9, input_width=7, kernel_size=(3, 3),
                      padding=(2, 1, 0, 3), dilation=(2, 1), groups=8)
    ref = F.conv2d(F.pad(x, (0, 3, 2, 1)), w, dilation=(2, 1), groups=8)
    torch.testing.assert_close(as_nchw(out, 1, ref.shape[2], ref.shape[3]), ref, rtol=1e-4, atol=1e-4)


def test_conv2d_output_spec_follows_dtype_and_conv_config(device):
    x, w = randn(1, 16, 8, 8), randn(32, 16, 3, 3, seed=1)
    tx = nhwc(x, device, dtype=ttnn.bfloat16)
    out = conv(tx, w, None, device, n=1, h=8, wd=8)
    assert (out.shape, out.dtype, out.layout, out.device()) == ((1, 1, 64, 32), ttnn.bfloat16, ttnn.TILE, device)
    rm = conv(tx, w, None, device, n=1, h=8, wd=8, conv_config=ttnn.Conv2dConfig(output_layout=ttnn.ROW_MAJOR),
              slice_config=ttnn.Conv2dL1FullSliceConfig)
    assert rm.layout == ttnn.ROW_MAJOR and torch.equal(rm.value, out.value)
    b8 = conv(tx, w, None, device, n=1, h=8, wd=8, dtype=ttnn.bfloat8_b, memory_config=ttnn.L1)
    assert (b8.dtype, b8.layout, b8.memory_config()) == (ttnn.bfloat8_b, ttnn.TILE, ttnn.L1)


def test_returned_and_prepared_weights_give_the_same_conv(device):
    x, w, b = randn(1, 16, 8, 8), randn(8, 16, 3, 3, seed=1), randn(1, 1, 1, 8, seed=2)
    tx = nhwc(x, device)
    first, (oh, ow), (w_dev, b_dev) = conv(tx, w, b, device, n=1, h=8, wd=8, return_output_dim=True,
                                           return_weights_and_bias=True)
    assert (w_dev.shape, w_dev.layout, w_dev.device()) == ((1, 1, 9 * 16, 8), ttnn.TILE, device)
    assert (b_dev.shape, b_dev.device()) == ((1, 1, 1, 8), device)
    again = ttnn.conv2d(input_tensor=tx, weight_tensor=w_dev, bias_tensor=b_dev, device=device, in_channels=16,
                        out_channels=8, batch_size=1, input_height=8, input_width=8, kernel_size=(3, 3),
                        padding=(1, 1))
    assert torch.equal(again.value, first.value)
    geometry = dict(input_memory_config=ttnn.DRAM, input_layout=ttnn.ROW_MAJOR, in_channels=16, out_channels=8,
                    batch_size=1, input_height=8, input_width=8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1),
                    dilation=(1, 1), groups=1, device=device, input_dtype=ttnn.float32)
    prepared = ttnn.prepare_conv_weights(weight_tensor=host(w), weights_format="OIHW", has_bias=True, **geometry)
    assert torch.equal(prepared.value, w_dev.value)
    assert torch.equal(ttnn.prepare_conv_bias(bias_tensor=host(b), **geometry).value, b_dev.value)


def test_conv2d_errors_name_the_value_and_the_fix(device):
    tx = nhwc(randn(1, 16, 8, 8), device)
    with pytest.raises(ValueError, match=r"input shape \[1, 8, 8, 16\] does not hold batch_size=2"):
        conv(tx, randn(8, 16, 3, 3), None, device, n=2, h=8, wd=8)
    with pytest.raises(ValueError, match=r"weight shape \[8, 4, 3, 3\] is neither"):
        ttnn.conv2d(input_tensor=tx, weight_tensor=host(randn(8, 4, 3, 3)), device=device, in_channels=16,
                    out_channels=8, batch_size=1, input_height=8, input_width=8, kernel_size=(3, 3))
    with pytest.raises(ValueError, match="'relu7' is not one of relu"):
        ttnn.Conv2dConfig(activation="relu7")
    with pytest.raises(TypeError, match="act_block_h"):
        ttnn.Conv2dConfig(act_block_h=32)
    with pytest.raises(TypeError, match="did you mean 'memory_config'"):
        conv(tx, randn(8, 16, 3, 3), None, device, n=1, h=8, wd=8, memory_confg=ttnn.L1)


def test_conv_config_takes_tt_nn_fields_and_unary_with_param_activations(device):
    cfg = ttnn.Conv2dConfig(weights_dtype=ttnn.bfloat8_b, shard_layout=ttnn.TensorMemoryLayout.HEIGHT_SHARDED,
                            act_block_h_override=64, deallocate_activation=True, reshard_if_not_optimal=True,
                            enable_act_double_buffer=True, activation=ttnn.UnaryWithParam(ttnn.UnaryOpType.SILU))
    x, w = randn(1, 4, 4, 4), randn(4, 4, 1, 1, seed=1)
    out = conv(nhwc(x, device), w, None, device, n=1, h=4, wd=4, padding=0, conv_config=cfg)
    torch.testing.assert_close(as_nchw(out, 1, 4, 4), F.silu(F.conv2d(x, w)), rtol=1e-4, atol=1e-4)
    assert ttnn.get_conv_output_dim(224, 7, stride=2, pad=3) == 112
    assert ttnn.Conv2dSliceConfig(slice_type=ttnn.Conv2dDRAMSliceHeight, num_slices=4).num_slices == 4


# -- pooling and upsample ---------------------------------------------------------------------

@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_and_avg_pool2d_match_torch_on_flattened_input(device, ceil_mode):
    N, C, H, W = 2, 32, 9, 9
    x = randn(N, C, H, W)
    flat = ttnn.from_torch(x.permute(0, 2, 3, 1).reshape(1, 1, N * H * W, C), dtype=ttnn.float32,
                           layout=ttnn.ROW_MAJOR, device=device)
    geometry = dict(batch_size=N, input_h=H, input_w=W, channels=C, kernel_size=[3, 3], stride=[2, 2],
                    padding=[1, 1], ceil_mode=ceil_mode)
    mx = ttnn.max_pool2d(flat, dilation=[1, 1], dtype=ttnn.float32, **geometry)
    ref = F.max_pool2d(x, 3, 2, 1, ceil_mode=ceil_mode)
    oh, ow = ref.shape[2:]
    assert (mx.shape, mx.layout) == ((1, 1, N * oh * ow, C), ttnn.ROW_MAJOR)
    torch.testing.assert_close(as_nchw(mx, N, oh, ow), ref)
    av = ttnn.avg_pool2d(flat, count_include_pad=False, dtype=ttnn.float32, **geometry)
    torch.testing.assert_close(as_nchw(av, N, oh, ow), F.avg_pool2d(x, 3, 2, 1, ceil_mode, False))
    assert ttnn.max_pool2d(flat, dilation=[1, 1], **geometry).dtype == ttnn.bfloat16  # TT-NN's default


def test_global_avg_pool_and_upsample_match_torch(device):
    x = randn(2, 8, 6, 32)  # NHWC
    g = ttnn.global_avg_pool2d(ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.TILE, device=device))
    assert g.shape == (2, 1, 1, 32)
    torch.testing.assert_close(g.value, x.mean((1, 2), keepdim=True))
    t = ttnn.from_torch(x, dtype=ttnn.float32, layout=ttnn.ROW_MAJOR, device=device)
    near = ttnn.upsample(t, (2, 3))
    ref = F.interpolate(x.permute(0, 3, 1, 2), scale_factor=(2, 3), mode="nearest").permute(0, 2, 3, 1)
    assert near.shape == (2, 16, 18, 32) and torch.equal(near.value, ref)
    lin = ttnn.upsample(t, 2, mode="bilinear")
    ref = F.interpolate(x.permute(0, 3, 1, 2), scale_factor=2, mode="bilinear").permute(0, 2, 3, 1)
    torch.testing.assert_close(lin.value, ref)
    with pytest.raises(ValueError, match="mode='bicubic' must be 'nearest' or 'bilinear'"):
        ttnn.upsample(t, 2, mode="bicubic")


def test_max_pool2d_deallocate_input_frees_it(device):
    t = ttnn.from_torch(randn(1, 1, 64, 32), layout=ttnn.ROW_MAJOR, device=device)
    ttnn.max_pool2d(t, 1, 8, 8, 32, [2, 2], [2, 2], [0, 0], [1, 1], deallocate_input=True)
    assert not t.is_allocated()


# -- what a report records ---------------------------------------------------------------------

def test_a_conv_block_is_one_recorded_op_per_call(tmp_path, device):
    w = host(randn(8, 16, 3, 3, seed=1))
    with ttreport.capture(tmp_path / "r") as report:
        x = nhwc(randn(1, 16, 8, 8), device, dtype=ttnn.bfloat16)
        y = ttnn.conv2d(input_tensor=x, weight_tensor=w, device=device, in_channels=16, out_channels=8,
                        batch_size=1, input_height=8, input_width=8, kernel_size=(3, 3), padding=(1, 1),
                        conv_config=ttnn.Conv2dConfig(activation="relu"))
        p = ttnn.max_pool2d(y, 1, 8, 8, 8, [2, 2], [2, 2], [0, 0], [1, 1])
    con = sqlite3.connect(report.db_path)
    try:
        ops = con.execute("SELECT name, depth FROM operations ORDER BY operation_id").fetchall()
        spec = con.execute("SELECT shape, dtype, layout FROM tensors WHERE tensor_id = ?", (y.tensor_id,)).fetchone()
        pooled = con.execute("SELECT o.name FROM output_tensors t JOIN operations o USING (operation_id) "
                             "WHERE t.tensor_id = ?", (p.tensor_id,)).fetchone()
    finally:
        con.close()
    assert ops == [("ttnn.from_torch", 0), ("ttnn.conv2d", 0), ("ttnn.max_pool2d", 0)]
    assert spec == ("Shape([1, 1, 64, 8])", "DataType.BFLOAT16", "Layout.TILE")
    assert pooled == ("ttnn.max_pool2d",)


def test_fold_moves_each_stride_block_into_channels(device):
    x = randn(2, 6, 8, 3)  # NHWC
    out = ttnn.fold(ttnn.from_torch(x, dtype=ttnn.float32, device=device), 2, 4)
    assert out.shape == (2, 3, 2, 24) and out.layout == ttnn.ROW_MAJOR
    # pixel (i, j) of the output holds input rows 2i..2i+1, columns 4j..4j+3, in row-major order
    assert torch.equal(out.value[1, 2, 1], x[1, 4:6, 4:8].reshape(-1))
    padded = ttnn.fold(ttnn.from_torch(x, dtype=ttnn.float32, device=device), 4, 2, padding=(1, 1, 0, 0),
                       output_shape=(2, 2, 4, 24))
    assert padded.shape == (2, 2, 4, 24) and torch.equal(padded.value[0, 0, 0, :3], torch.zeros(3))
    with pytest.raises(ValueError, match="H=6 and W=8 must be multiples of stride_h=4"):
        ttnn.fold(ttnn.from_torch(x, dtype=ttnn.float32, device=device), 4, 2)


def test_conv1d_matches_torch_and_returns_its_output_length(device):
    x, w, b = randn(2, 8, 20), randn(4, 8, 3, seed=1), randn(4, seed=2)  # NCL, torch's layout
    t = ttnn.from_torch(x.transpose(1, 2), dtype=ttnn.float32, device=device)  # NLC, as TT-NN takes it
    out, length = ttnn.conv1d(input_tensor=t, weight_tensor=host(w), bias_tensor=host(b.reshape(1, 1, 1, 4)),
                              device=device, in_channels=8, out_channels=4, batch_size=2, input_length=20,
                              kernel_size=3, stride=2, padding=1, conv_config=ttnn.Conv1dConfig(),
                              return_output_dim=True)
    ref = F.conv1d(x, w, b, stride=2, padding=1)  # [N, OC, OL]
    assert length == ref.shape[2] == 10 and out.shape == (1, 1, 2 * 10, 4)
    torch.testing.assert_close(out.value.reshape(2, 10, 4).transpose(1, 2), ref, rtol=1e-4, atol=1e-4)


def test_conv2d_runs_tt_nn_tutorial_calls_without_device_and_with_groups_0(device):
    # ttnn/tutorials/basic_python/ttnn_basic_conv.py: device-resident weights, no device=, groups=0, a 1 x N*H*W image
    x, w = randn(1, 4, 3), randn(4, 3, 3, 3, seed=1)
    out = ttnn.conv2d(input_tensor=ttnn.from_torch(x.reshape(1, 1, 4, 3), device=device),
                      weight_tensor=ttnn.from_torch(w, device=device),
                      bias_tensor=ttnn.zeros((1, 1, 1, 4), device=device), in_channels=3, out_channels=4,
                      kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), batch_size=1, input_height=1, input_width=4,
                      conv_config=ttnn.Conv2dConfig(weights_dtype=ttnn.bfloat16), groups=0)
    ref = F.conv2d(x.permute(2, 0, 1)[None], w, padding=1)  # [1, 4, 1, 4]
    assert out.device() == device and out.shape == (1, 1, 4, 4)
    torch.testing.assert_close(out.value.float().reshape(1, 1, 4, 4).permute(0, 3, 1, 2), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("padding", [(1, 1), (0, 2, 1, 0)])
def test_conv_transpose2d_matches_torch(device, padding):
    x, w, b = randn(2, 8, 5, 6), randn(8, 2, 3, 3, seed=1), randn(4, seed=2)  # weights [C, O/groups, KH, KW]
    out, (oh, ow), (w_dev, b_dev) = ttnn.conv_transpose2d(
        input_tensor=nhwc(x, device), weight_tensor=host(w), bias_tensor=host(b), device=device, in_channels=8,
        out_channels=4, batch_size=2, input_height=5, input_width=6, kernel_size=(3, 3), stride=(2, 2),
        padding=padding, output_padding=(1, 1), groups=2, return_output_dim=True, return_weights_and_bias=True)
    if len(padding) == 2:
        ref = F.conv_transpose2d(x, w, b, stride=2, padding=padding, output_padding=1, groups=2)
    else:  # uneven (top, bottom, left, right) padding crops torch's unpadded output
        top, bottom, left, right = padding
        full = F.conv_transpose2d(x, w, b, stride=2, output_padding=1, groups=2)
        ref = full[..., top: full.shape[-2] - bottom, left: full.shape[-1] - right]
    assert (oh, ow) == tuple(ref.shape[2:]) and out.shape == (1, 1, 2 * oh * ow, 4)
    torch.testing.assert_close(as_nchw(out, 2, oh, ow), ref, rtol=1e-4, atol=1e-4)
    again = ttnn.conv_transpose2d(input_tensor=nhwc(x, device), weight_tensor=w_dev, bias_tensor=b_dev, device=device,
                                  in_channels=8, out_channels=4, batch_size=2, input_height=5, input_width=6,
                                  kernel_size=(3, 3), stride=(2, 2), padding=padding, output_padding=(1, 1), groups=2)
    assert torch.equal(again.value, out.value)


def test_a_report_records_the_weights_conv2d_returns_as_its_outputs(tmp_path, device):
    w, b = host(randn(8, 16, 3, 3, seed=1)), host(randn(1, 1, 1, 8, seed=2))
    with ttreport.capture(tmp_path / "r") as report:
        x = nhwc(randn(1, 16, 8, 8), device)
        out, _, (w_dev, b_dev) = ttnn.conv2d(input_tensor=x, weight_tensor=w, bias_tensor=b, device=device,
                                             in_channels=16, out_channels=8, batch_size=1, input_height=8,
                                             input_width=8, kernel_size=(3, 3), padding=(1, 1),
                                             return_output_dim=True, return_weights_and_bias=True)
    con = sqlite3.connect(report.db_path)
    try:
        outs = con.execute("SELECT tensor_id FROM output_tensors JOIN operations USING (operation_id) "
                           "WHERE name = 'ttnn.conv2d' ORDER BY output_index").fetchall()
        producer = con.execute("SELECT producer_operation_id FROM tensors WHERE tensor_id = ?",
                               (w_dev.tensor_id,)).fetchone()
        conv_id = con.execute("SELECT operation_id FROM operations WHERE name = 'ttnn.conv2d'").fetchone()
    finally:
        con.close()
    assert outs == [(out.tensor_id,), (w_dev.tensor_id,), (b_dev.tensor_id,)]
    assert producer == conv_id


@pytest.mark.parametrize("output_size", [[1, 1], [2, 3], [3, 4]])
def test_adaptive_avg_pool2d_matches_torch_in_tt_nns_flattened_layout(device, output_size):
    x = randn(2, 16, 6, 8)
    flat = ttnn.from_torch(x.permute(0, 2, 3, 1).reshape(1, 1, 2 * 6 * 8, 16), dtype=ttnn.float32, device=device)
    out = ttnn.adaptive_avg_pool2d(input_tensor=flat, batch_size=2, input_h=6, input_w=8, channels=16,
                                   output_size=output_size)
    oh, ow = output_size
    assert (out.shape, out.dtype, out.layout) == ((1, 1, 2 * oh * ow, 16), ttnn.bfloat16, ttnn.ROW_MAJOR)
    ref = F.adaptive_avg_pool2d(x, output_size)
    torch.testing.assert_close(as_nchw(out, 2, oh, ow), ref.bfloat16().float())
