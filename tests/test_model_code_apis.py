"""What tt-metal's current model code calls that device_sim refused (issue 31, item 2), kept as small tests.

Each test names the model or tt-metal test that makes the call, and which TT-NN version the behaviour
follows where versions disagree (docs/design_departures.md, "TT-NN versions").

    .venv/bin/python -m pytest tests/test_model_code_apis.py -q
"""

import gc
import pickle
import weakref

import pytest
import torch
import torch.nn.functional as F

import device_sim as ttnn

# -- convolutions: optimized Whisper, ttnn_conv_test, simplecnn_inference_cifar, tests/ttnn's test_conv1d ------


def _conv1d(device, x, w, conv_config, **kw):
    n, length, c = x.shape
    return ttnn.conv1d(
        input_tensor=ttnn.from_torch(x, dtype=ttnn.bfloat16, device=device),
        weight_tensor=ttnn.from_torch(w, dtype=ttnn.bfloat16), device=device, in_channels=c,
        out_channels=w.shape[0], batch_size=n, input_length=length, kernel_size=w.shape[-1],
        conv_config=conv_config, **kw)


def test_a_conv_config_takes_the_output_dtype_as_optimized_whisper_passes_it(device):
    # Whisper's encoder: ttnn.Conv1dConfig(dtype=ttnn.bfloat16, weights_dtype=...); the call's dtype= wins
    x, w = torch.randn(1, 16, 32), torch.randn(32, 32, 3)
    out = _conv1d(device, x, w, ttnn.Conv1dConfig(dtype=ttnn.bfloat8_b, weights_dtype=ttnn.bfloat16), padding=1)
    assert out.dtype == ttnn.bfloat8_b
    out = _conv1d(device, x, w, ttnn.Conv1dConfig(dtype=ttnn.bfloat8_b), padding=1, dtype=ttnn.bfloat16)
    assert out.dtype == ttnn.bfloat16
    assert ttnn.Conv2dConfig(dtype=ttnn.bfloat16).dtype == ttnn.bfloat16


def test_conv1d_pads_with_the_edge_values_under_padding_mode_replicate(device):
    # test_conv1d.py::test_conv1d_replicate_pad, with (left, right) padding
    x, w = torch.randn(1, 64, 32), torch.randn(32, 32, 3)
    x[:, 0], x[:, -1] = 10.0, -10.0
    cfg = ttnn.Conv1dConfig(padding_mode=ttnn.PaddingMode.Replicate)
    out = _conv1d(device, x, w, cfg, padding=(1, 2))
    xb, wb = x.bfloat16().float(), w.bfloat16().float()
    want = F.conv1d(F.pad(xb.permute(0, 2, 1), (1, 2), mode="replicate"), wb).permute(0, 2, 1).reshape(1, 1, -1, 32)
    got = ttnn.to_torch(out).float()
    assert got.shape == want.shape == (1, 1, 65, 32)
    assert torch.corrcoef(torch.stack([got.flatten(), want.flatten()]))[0, 1] > 0.999
    assert ttnn.Conv1dConfig().padding_mode == ttnn.PaddingMode.Zeros


def test_prepare_conv_weights_reads_a_conv1d_weight_of_three_dims(device):
    # test_conv1d.py (prepare_weights=True): [OC, C, K] weights, input_height=1, kernel_size=(1, K)
    w = torch.randn(32, 16, 3)
    prepared = ttnn.prepare_conv_weights(
        weight_tensor=ttnn.from_torch(w, dtype=ttnn.bfloat16), input_memory_config=ttnn.DRAM_MEMORY_CONFIG,
        input_layout=ttnn.ROW_MAJOR_LAYOUT, weights_format="OIHW", in_channels=16, out_channels=32, batch_size=1,
        input_height=1, input_width=64, kernel_size=(1, 3), stride=(1, 1), padding=(0, 1), dilation=(1, 1),
        has_bias=False, groups=1, device=device, input_dtype=ttnn.bfloat16)
    assert list(prepared.shape) == [1, 1, 48, 32]
    x = torch.randn(1, 64, 16)
    out = _conv1d(device, x, w, None, padding=1)
    again = ttnn.conv1d(input_tensor=ttnn.from_torch(x, dtype=ttnn.bfloat16, device=device), weight_tensor=prepared,
                        device=device, in_channels=16, out_channels=32, batch_size=1, input_length=64, kernel_size=3,
                        padding=1)
    assert torch.equal(ttnn.to_torch(out), ttnn.to_torch(again))


# -- shapes: functional Whisper, tt_transformers ----------------------------------------------------------------


def test_a_tensor_shape_gives_its_tile_padded_shape_through_with_tile_padding(device):
    t = ttnn.from_torch(torch.randn(1, 1, 7, 40), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    assert t.shape.with_tile_padding() == [1, 1, 32, 64] and t.shape == [1, 1, 7, 40]
    r = ttnn.from_torch(torch.randn(7, 40), dtype=ttnn.bfloat16)
    assert r.shape.with_tile_padding() == [7, 40]


def test_a_shape_is_made_from_a_logical_and_a_padded_shape():
    s = ttnn.Shape([1, 2, 3], [1, 32, 32])
    assert s == [1, 2, 3] and s.with_tile_padding() == [1, 32, 32]
    assert ttnn.Shape([4, 5]).with_tile_padding() == [4, 5]


def test_reshape_with_a_padded_shape_moves_rows_into_the_tile_padding(device):
    # tt_transformers: ttnn.reshape(t, (1, 1, 1, N), (1, 1, 32, N)) keeps row 0 of a [1, 1, 32, N] tile row
    x = torch.randn(1, 1, 32, 64)
    t = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    y = ttnn.reshape(t, (1, 1, 1, 64), (1, 1, 32, 64))
    assert y.shape == [1, 1, 1, 64] and y.padded_shape == [1, 1, 32, 64]
    assert torch.equal(ttnn.to_torch(y), ttnn.to_torch(t)[:, :, :1])
    assert y.buffer_address() == t.buffer_address()  # a view, as reshape.cpp makes it


# -- names model code reaches through ttnn._ttnn --------------------------------------------------------------


def test_tt_transformers_annotations_name_ttnn_ttnn_tensor_memory_config_and_multi_device_mesh_device():
    assert ttnn._ttnn.tensor.MemoryConfig is ttnn.MemoryConfig
    assert ttnn._ttnn.tensor.Tensor is ttnn.Tensor
    assert ttnn._ttnn.multi_device.MeshDevice is ttnn.MeshDevice
    assert ttnn.cluster.get_cluster_type() == ttnn.cluster.ClusterType.T3K


# -- eltwise: tt_transformers' MLP --------------------------------------------------------------------------


def test_mul_takes_a_bare_unary_op_type_as_an_input_activation(device):
    # tt_transformers' MLP: ttnn.mul(w1_out, w3_out, input_tensor_a_activations=[ttnn.UnaryOpType.SILU])
    a, b = torch.randn(1, 1, 32, 64), torch.randn(1, 1, 32, 64)
    ta, tb = (ttnn.from_torch(v, dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device) for v in (a, b))
    got = ttnn.to_torch(ttnn.mul(ta, tb, input_tensor_a_activations=[ttnn.UnaryOpType.SILU])).float()
    want = ttnn.to_torch(ttnn.mul(ta, tb, input_tensor_a_activations=[ttnn.UnaryWithParam(ttnn.UnaryOpType.SILU)]))
    assert torch.equal(got, want.float())
    assert torch.allclose(got, F.silu(a.bfloat16().float()) * b.bfloat16().float(), atol=0.1, rtol=0.05)


# -- program configs: tt_transformers' attention ---------------------------------------------------------------


def test_a_program_config_keeps_a_grid_given_as_a_tuple_as_a_core_coord(device):
    # tt_transformers: SDPAProgramConfig(compute_with_storage_grid_size=(8, 8)) into paged SDPA decode
    cfg = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=32, k_chunk_size=32)
    assert (cfg.compute_with_storage_grid_size.x, cfg.compute_with_storage_grid_size.y) == (8, 8)
    B, NH, NKV, D, S, block = 1, 8, 1, 64, 64, 32
    q = ttnn.from_torch(torch.randn(1, B, NH, D), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    k, v = (ttnn.from_torch(torch.randn(S // block, NKV, block, D), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT,
                            device=device) for _ in range(2))
    table = ttnn.from_torch(torch.arange(S // block, dtype=torch.int32).reshape(B, -1), dtype=ttnn.int32,
                            device=device)
    pos = ttnn.from_torch(torch.tensor([S - 1], dtype=torch.int32), dtype=ttnn.int32, device=device)
    out = ttnn.transformer.paged_scaled_dot_product_attention_decode(
        q, k, v, page_table_tensor=table, cur_pos_tensor=pos, program_config=cfg)
    assert out.shape == [1, B, NH, D]


def test_a_dram_sharded_linear_puts_a_spec_less_sharded_output_on_worker_cores_not_the_dram_banks(device):
    # tt_transformers' decode MLP: weights width-sharded over the 12 DRAM banks, output
    # L1_WIDTH_SHARDED_MEMORY_CONFIG; TT-NN 0.81 (matmul_device_operation.cpp) puts it on the first
    # ceil(M/per_core_M) * ceil(N/per_core_N) worker cores in [per_core_M, per_core_N]-tile shards
    M, K, N, banks = 32, 256, 1152, 12
    x_cfg = ttnn.create_sharded_memory_config((M, K // 8), ttnn.CoreGrid(y=1, x=8), ttnn.ShardStrategy.WIDTH,
                                              ttnn.ShardOrientation.ROW_MAJOR, use_height_and_width_as_shard_shape=True)
    x = ttnn.from_torch(torch.randn(1, 1, M, K), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device,
                        memory_config=x_cfg)
    dram_grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(banks - 1, 0))})
    w_cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.DRAM,
                              ttnn.ShardSpec(dram_grid, (K, N // banks), ttnn.ShardOrientation.ROW_MAJOR))
    w = ttnn.from_torch(torch.randn(1, 1, K, N), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device,
                        memory_config=w_cfg)
    pc = ttnn.MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig(in0_block_w=1, per_core_M=1, per_core_N=5,
                                                                     fused_activation=None)
    y = ttnn.linear(x, w, program_config=pc, memory_config=ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG)
    spec = y.memory_config().shard_spec
    assert spec.num_cores() == 8 and tuple(spec.shape) == (32, 160)  # ceil(36 tiles / 5) cores
    torch.testing.assert_close(ttnn.to_torch(y).float(), x.value.float() @ w.value.float(), rtol=0.02, atol=0.5)


# -- batch_norm: tests/ttnn's test_batch_norm.py ----------------------------------------------------------------


def _bn_inputs(device, shape=(2, 4, 24, 40), dtype=ttnn.bfloat16):
    torch.manual_seed(0)
    c = shape[1]
    x = torch.rand(shape) * 5 + 5
    stats = [torch.rand(c) * 6 + 4 for _ in range(4)]  # running mean, running var, weight, bias

    def tt(v):
        return ttnn.from_torch(v.reshape(1, c, 1, 1), dtype=dtype, layout=ttnn.TILE_LAYOUT, device=device)

    return x, ttnn.from_torch(x, dtype=dtype, layout=ttnn.TILE_LAYOUT, device=device), stats, [tt(v) for v in stats]


def test_batch_norm_in_training_normalizes_by_the_batch_and_updates_the_running_statistics_in_place(device):
    x, tx, (m, v, w, b), (tm, tv, tw, tb) = _bn_inputs(device, dtype=ttnn.float32)
    y = ttnn.batch_norm(tx, running_mean=tm, running_var=tv, training=True, eps=1e-5, momentum=0.1, weight=tw,
                        bias=tb)
    want = F.batch_norm(x, m, v, w, b, training=True, momentum=0.1, eps=1e-5)  # updates m and v in place
    torch.testing.assert_close(ttnn.to_torch(y), want, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(ttnn.to_torch(tm).reshape(-1), m, rtol=1e-4, atol=1e-4)
    # the running var takes the biased batch var (batch_norm.cpp: mean(x^2) - mean(x)^2); torch's the unbiased
    batch_var = x.permute(1, 0, 2, 3).reshape(x.shape[1], -1).var(1, unbiased=False)
    v0 = _bn_inputs(device, dtype=ttnn.float32)[2][1]  # the same seed: the running var before the update
    torch.testing.assert_close(ttnn.to_torch(tv).reshape(-1), 0.9 * v0 + 0.1 * batch_var, rtol=1e-3, atol=1e-3)


def test_batch_norm_out_of_training_uses_the_running_statistics_and_refuses_without_them(device):
    x, tx, (m, v, w, b), (tm, tv, tw, tb) = _bn_inputs(device)
    y = ttnn.batch_norm(tx, running_mean=tm, running_var=tv, weight=tw, bias=tb)
    want = F.batch_norm(x, m.bfloat16().float(), v.bfloat16().float(), w.bfloat16().float(), b.bfloat16().float())
    assert torch.corrcoef(torch.stack([ttnn.to_torch(y).float().flatten(), want.flatten()]))[0, 1] > 0.999
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined in evaluation mode"):
        ttnn.batch_norm(tx, running_mean=tm)
    out = ttnn.from_torch(torch.zeros(x.shape), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    assert ttnn.batch_norm(tx, running_mean=tm, running_var=tv, output=out) is out


def test_batch_norm_rounds_its_steps_to_bfloat16_without_fp32_dest_acc_en(device):
    x, tx, _, (tm, tv, tw, tb) = _bn_inputs(device, dtype=ttnn.float32)
    want = F.batch_norm(x, *(ttnn.to_torch(t).reshape(-1) for t in (tm, tv, tw, tb)))

    def err(fp32):
        cfg = ttnn.init_device_compute_kernel_config(device.arch(), math_fidelity=ttnn.MathFidelity.HiFi4,
                                                     fp32_dest_acc_en=fp32)
        y = ttnn.batch_norm(tx, running_mean=tm, running_var=tv, weight=tw, bias=tb, compute_kernel_config=cfg)
        return (ttnn.to_torch(y) - want).abs().max().item()

    assert err(True) < err(False)


def test_an_interleaved_memory_config_given_a_shard_spec_is_the_interleaved_config(device):
    # tests/ttnn's test_batch_norm_program_cache_and_default: MemoryConfig(INTERLEAVED, L1, shard_spec) as an op's
    # memory_config; TT-NN 0.81 keeps the spec unread, device_sim drops it
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(7, 0))})
    spec = ttnn.ShardSpec(grid, (64, 32), ttnn.ShardOrientation.COL_MAJOR)
    cfg = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.INTERLEAVED, ttnn.BufferType.L1, spec)
    assert cfg == ttnn.L1_MEMORY_CONFIG and not cfg.is_sharded()
    x = ttnn.from_torch(torch.randn(1, 1, 64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    assert ttnn.relu(x, memory_config=cfg).memory_config() == ttnn.L1_MEMORY_CONFIG


def test_a_kept_shape_does_not_keep_its_tensors_buffer_alive(device):
    t = ttnn.from_torch(torch.randn(1, 1, 7, 40), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)
    ref = weakref.ref(t)
    shape = t.shape
    del t
    gc.collect()
    assert ref() is None and shape.with_tile_padding() == [1, 1, 32, 64]
    assert pickle.loads(pickle.dumps(shape)).with_tile_padding() == [1, 1, 32, 64]


def test_model_code_annotates_a_compute_kernel_config_as_ttnn_device_compute_kernel_config(device):
    # deepseek_v3's config_dataclass.py: `compute_kernel_config: ttnn.DeviceComputeKernelConfig | None = None`
    annotation = ttnn.DeviceComputeKernelConfig | None
    cfg = ttnn.init_device_compute_kernel_config(device.arch(), math_fidelity=ttnn.MathFidelity.HiFi2)
    assert isinstance(cfg, ttnn.DeviceComputeKernelConfig) and isinstance(None, annotation)
