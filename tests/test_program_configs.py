"""Program configs: TT-NN's fields, checks against the shapes and grid, fused activations, and the report."""

from __future__ import annotations

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport.cli import main

# a [2, 128, 256] x [256, 512] matmul: M = 4 tiles per batch (8 fused), K = 8, N = 16
M_TILES, K_TILES, N_TILES = 4, 8, 16


@pytest.fixture
def ab(device):
    g = torch.Generator().manual_seed(0)
    a = ttnn.from_torch(torch.randn(2, 128, 256, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.randn(256, 512, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    return a, b


def mcast(**kw):
    fields = dict(compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), in0_block_w=2, out_subblock_h=1,
                  out_subblock_w=2, per_core_M=1, per_core_N=2, transpose_mcast=False, fused_activation=None)
    return ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(**{**fields, **kw})


def test_a_valid_config_runs_and_changes_where_not_what(ab):
    a, b = ab
    cfg = mcast()
    assert (cfg.out_block_h, cfg.out_block_w, cfg.fuse_batch) == (1, 2, True)  # TT-NN's binding fills these
    assert torch.equal(ttnn.matmul(a, b, program_config=cfg).value, ttnn.matmul(a, b).value)


@pytest.mark.parametrize(("fields", "named"), [
    (dict(in0_block_w=3), "in0_block_w"),
    (dict(out_subblock_w=3), "out_subblock_w"),
    (dict(compute_with_storage_grid_size=ttnn.CoreCoord(9, 8)), "compute_with_storage_grid_size"),
    (dict(per_core_N=1, out_subblock_w=1), "per_core_N"),  # 16 blocks of N for 8 columns
    (dict(in0_block_w=0), "in0_block_w is 0"),
])
def test_a_bad_2d_config_raises_tt_nns_kind_of_error_naming_the_field(ab, fields, named):
    a, b = ab
    with pytest.raises(RuntimeError, match=r"(?s)TT_FATAL.*info:.*" + named):
        ttnn.matmul(a, b, program_config=mcast(**fields))


def test_subblocks_must_fit_the_destination_register_8_tiles_or_4_with_fp32(ab):
    a, b = ab
    cfg = mcast(per_core_M=2, per_core_N=4, out_subblock_h=2, out_subblock_w=4)  # 8 tiles
    ttnn.matmul(a, b, program_config=cfg)
    fp32 = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.HiFi4, fp32_dest_acc_en=True)
    with pytest.raises(RuntimeError, match=r"2 \* 4 = 8 tiles does not fit the destination register \(4 tiles"):
        ttnn.matmul(a, b, program_config=cfg, compute_kernel_config=fp32)


def test_1d_config_puts_all_of_m_on_each_core_when_it_multicasts_in0(ab):
    a, b = ab
    one_d = dict(compute_with_storage_grid_size=ttnn.CoreCoord(8, 2), in0_block_w=4, out_subblock_h=1,
                 out_subblock_w=2, per_core_M=2 * M_TILES, per_core_N=2, fuse_batch=True, fused_activation=None,
                 mcast_in0=True)
    config_1d = ttnn.MatmulMultiCoreReuseMultiCast1DProgramConfig
    ttnn.matmul(a, b, program_config=config_1d(**one_d))
    with pytest.raises(RuntimeError, match="per_core_M .* must be at least M"):
        ttnn.matmul(a, b, program_config=config_1d(**{**one_d, "per_core_M": 4}))
    with pytest.raises(RuntimeError, match="mcast_in0 and gather_in0"):
        ttnn.matmul(a, b, program_config=config_1d(**{**one_d, "gather_in0": True}))


def test_reuse_config_needs_all_of_n_per_core_and_a_fused_batch_needs_an_unbatched_b(ab, device):
    a, b = ab
    reuse = dict(compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), in0_block_w=2, out_subblock_h=1,
                 out_subblock_w=4, per_core_M=M_TILES, per_core_N=N_TILES)
    ttnn.matmul(a, b, program_config=ttnn.MatmulMultiCoreReuseProgramConfig(**reuse))
    with pytest.raises(RuntimeError, match="N, 16, is not equal to per_core_N, 8"):
        ttnn.matmul(a, b, program_config=ttnn.MatmulMultiCoreReuseProgramConfig(**{**reuse, "per_core_N": 8}))
    b3 = ttnn.from_torch(torch.randn(2, 256, 512), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with pytest.raises(RuntimeError, match="fused batch requires"):
        ttnn.matmul(a, b3, program_config=mcast(per_core_M=1))


def test_constructors_are_keyword_only_and_refuse_floats_as_pybind_noconvert_does():
    with pytest.raises(TypeError):
        ttnn.MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig(2, 1, 4, None)  # noqa
    with pytest.raises(TypeError, match="in0_block_w must be an int"):
        mcast(in0_block_w=2.0)
    with pytest.raises(TypeError, match="fused_activation must be a ttnn.UnaryWithParam"):
        mcast(fused_activation="relu")
    ln = ttnn.LayerNormShardedMultiCoreProgramConfig(compute_with_storage_grid_size=(8, 8), subblock_w=2, block_h=1,
                                                     block_w=4, inplace=False)
    assert (ln.legacy_reduction, ln.legacy_rsqrt, ln.use_welford) == (False, False, False)
    # model code of TT-NN 0.81 leaves fused_activation out of the 1D and DRAM-sharded configs
    assert ttnn.MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig(in0_block_w=2, per_core_M=1,
                                                                     per_core_N=4).fused_activation is None
    sdpa = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=64, k_chunk_size=64)
    assert (sdpa.exp_approx_mode, sdpa.max_cores_per_head_batch) == (None, 16)


def test_a_fused_activation_in_the_config_is_applied_in_the_same_op(ab):
    a, b = ab
    relu = mcast(fused_activation=ttnn.UnaryWithParam(ttnn.UnaryOpType.RELU))
    out = ttnn.matmul(a, b, program_config=relu)
    assert torch.equal(out.value, ttnn.matmul(a, b, activation="relu").value)
    assert float(out.value.min()) == 0.0
    with pytest.raises(RuntimeError, match="give one of them"):
        ttnn.matmul(a, b, program_config=relu, activation="gelu")


def test_a_fused_activation_given_as_a_pair_converts_as_tt_nns_binding_does(ab):
    # tt-metal's models write fused_activation=(ttnn.UnaryOpType.GELU, True): nanobind makes it
    # UnaryWithParam(GELU, 1.0), GELU's fast-approximation flag; a bare UnaryOpType converts too.
    a, b = ab
    pair = mcast(fused_activation=(ttnn.UnaryOpType.GELU, True))
    assert pair.fused_activation == ttnn.UnaryWithParam(ttnn.UnaryOpType.GELU, 1.0)
    assert mcast(fused_activation=ttnn.UnaryOpType.RELU).fused_activation == ttnn.UnaryWithParam(ttnn.UnaryOpType.RELU)
    out = ttnn.matmul(a, b, program_config=pair, dtype=ttnn.float32).value
    exact = ttnn.matmul(a, b, dtype=ttnn.float32).value
    torch.testing.assert_close(out, ttnn.numerics.APPROX["gelu"](exact))
    assert not torch.equal(out, torch.nn.functional.gelu(exact))  # the flag picks the approximation
    plain = ttnn.matmul(a, b, program_config=mcast(fused_activation=(ttnn.UnaryOpType.GELU, False)),
                        dtype=ttnn.float32).value
    torch.testing.assert_close(plain, torch.nn.functional.gelu(exact))
    with pytest.raises(TypeError, match=r"pair \(ttnn.UnaryOpType, number\)"):
        mcast(fused_activation=(ttnn.UnaryOpType.GELU, "fast"))


def test_activations_take_names_or_unary_with_param_and_parameters(ab, device):
    a, b = ab
    leaky = ttnn.UnaryWithParam(ttnn.UnaryOpType.LEAKY_RELU, 0.1)
    y = ttnn.matmul(a, b, activation=leaky, dtype=ttnn.float32).value
    exact = ttnn.matmul(a, b, dtype=ttnn.float32).value
    torch.testing.assert_close(y, torch.nn.functional.leaky_relu(exact, 0.1))
    with pytest.raises(ValueError, match="takes 1 parameter"):
        ttnn.matmul(a, b, activation=ttnn.UnaryWithParam(ttnn.UnaryOpType.LEAKY_RELU))
    with pytest.raises(NotImplementedError, match="does not emulate fused UnaryOpType.BITWISE_AND"):
        ttnn.matmul(a, b, activation=ttnn.UnaryWithParam(ttnn.UnaryOpType.BITWISE_AND))


def test_binary_ops_apply_their_fused_activations_in_one_op(device):
    g = torch.Generator().manual_seed(3)
    x = ttnn.from_torch(torch.randn(32, 64, generator=g), layout=ttnn.TILE, device=device)
    y = ttnn.from_torch(torch.randn(32, 64, generator=g), layout=ttnn.TILE, device=device)
    relu = [ttnn.UnaryWithParam(ttnn.UnaryOpType.RELU)]
    out = ttnn.add(x, y, activations=relu)
    torch.testing.assert_close(out.value, torch.relu(x.value + y.value))
    out = ttnn.mul(x, y, input_tensor_a_activations=relu, input_tensor_b_activations=["sigmoid"])
    torch.testing.assert_close(out.value, torch.relu(x.value) * torch.sigmoid(y.value))
    golden = ttnn.get_golden_function(ttnn.add)(x.value, y.value, activations=relu)
    torch.testing.assert_close(golden, torch.relu(x.value + y.value))


def test_configs_are_recorded_as_arguments_and_readable_in_ttreport_op(ab, tmp_path):
    a, b = ab
    cfg = mcast(fused_activation=ttnn.UnaryWithParam(ttnn.UnaryOpType.GELU))
    ckc = ttnn.WormholeComputeKernelConfig(math_fidelity=ttnn.MathFidelity.LoFi)
    with ttreport.capture("configs", config=ttreport.Config(root=tmp_path)) as handle:
        ttnn.matmul(a, b, program_config=cfg, compute_kernel_config=ckc)
    with ttreport.open(handle.path) as r:
        op_id = next(o.id for o in r.operations() if o.name == "ttnn.matmul")
        args = {row["name"]: row["value"] for row in r.sql(
            "SELECT name, value FROM operation_arguments WHERE operation_id = ?", [op_id])}
    assert args["program_config"].startswith("MatmulMultiCoreReuseMultiCastProgramConfig(")
    assert "fused_activation=UnaryWithParam(op_type=UnaryOpType.GELU,params=[])" in args["program_config"]
    assert "math_fidelity=MathFidelity.LoFi" in args["compute_kernel_config"]
    out = CliRunner().invoke(main, ["op", str(handle.path), str(op_id)], catch_exceptions=False).output
    assert "program_config = MatmulMultiCoreReuseMultiCastProgramConfig(compute_with_storage_grid_size=" in out
    assert "compute_kernel_config = WormholeComputeKernelConfig(math_fidelity=MathFidelity.LoFi" in out


@pytest.fixture
def block_sharded(device):
    """[1, 256, 512] block-sharded on 8x8 cores (shards of [32, 64]) and an interleaved [512, 512] weight."""
    g = torch.Generator().manual_seed(1)
    cfg = ttnn.create_sharded_memory_config((1, 256, 512), core_grid=ttnn.CoreGrid(y=8, x=8),
                                            strategy=ttnn.ShardStrategy.BLOCK)
    a = ttnn.from_torch(torch.randn(1, 256, 512, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                        memory_config=cfg)
    b = ttnn.from_torch(torch.randn(512, 512, generator=g), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
    return a, b


def test_a_2d_config_must_match_the_block_shards_of_its_input(block_sharded):
    a, b = block_sharded
    ok = mcast(per_core_M=1, per_core_N=2)
    out = ttnn.matmul(a, b, program_config=ok, memory_config=ttnn.L1_BLOCK_SHARDED_MEMORY_CONFIG)
    assert out.memory_config().memory_layout == ttnn.TensorMemoryLayout.BLOCK_SHARDED
    with pytest.raises(RuntimeError, match=r"per_core_M \(2\) must equal shard_shape\[0\] / in0_tile.get_height\(\) "
                                           r"\(1\) of input_tensor_a's shard \[32, 64\]"):
        ttnn.matmul(a, b, program_config=mcast(per_core_M=2, per_core_N=2))
    with pytest.raises(RuntimeError, match="must have COL_MAJOR shard orientation for transpose MCAST"):
        ttnn.matmul(a, b, program_config=mcast(per_core_M=1, per_core_N=2, transpose_mcast=True))
    with pytest.raises(RuntimeError, match="Output memory layout must be BLOCK_SHARDED"):
        ttnn.matmul(a, b, program_config=ok, memory_config=ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG)
    with pytest.raises(RuntimeError, match="Tensor shard spec grid must be within config grid"):
        ttnn.matmul(a, b, program_config=mcast(per_core_M=1, per_core_N=4,
                                               compute_with_storage_grid_size=ttnn.CoreCoord(4, 8)))


def test_a_1d_or_dram_sharded_config_names_the_layout_its_input_needs(block_sharded):
    a, b = block_sharded
    one_d = ttnn.MatmulMultiCoreReuseMultiCast1DProgramConfig(
        compute_with_storage_grid_size=(8, 8), in0_block_w=2, out_subblock_h=1, out_subblock_w=1, per_core_M=8,
        per_core_N=1, fuse_batch=True, mcast_in0=True)
    with pytest.raises(RuntimeError, match="input_tensor_a must be width sharded with mcast_in0=True"):
        ttnn.matmul(a, b, program_config=one_d)
    dram = ttnn.MatmulMultiCoreReuseMultiCastDRAMShardedProgramConfig(in0_block_w=2, per_core_M=8, per_core_N=1)
    with pytest.raises(RuntimeError, match="Output memory config must be sharded for DRAM sharded program config"):
        ttnn.matmul(a, b, program_config=dram)


def layer_norm_config(**kw):
    fields = dict(compute_with_storage_grid_size=(8, 8), subblock_w=2, block_h=1, block_w=2, inplace=False)
    return ttnn.LayerNormShardedMultiCoreProgramConfig(**{**fields, **kw})


def test_a_sharded_layer_norm_config_must_match_its_inputs_shards(block_sharded):
    a, _ = block_sharded  # [1, 256, 512] in [32, 64] shards on 8x8: block_h 1, block_w 2
    out = ttnn.layer_norm(a, program_config=layer_norm_config(), memory_config=ttnn.L1_BLOCK_SHARDED_MEMORY_CONFIG)
    torch.testing.assert_close(out.value.float(), torch.nn.functional.layer_norm(a.value.float(), (512,), eps=1e-12),
                               rtol=2**-7, atol=2**-6)
    with pytest.raises(RuntimeError, match=r"block_w \(4\) must equal to K \(in tiles\) / num_cores_c \(2\)"):
        ttnn.layer_norm(a, program_config=layer_norm_config(block_w=4))
    with pytest.raises(RuntimeError, match=r"block_w must be divisible by subblock_w \(2 % 4\)"):
        ttnn.layer_norm(a, program_config=layer_norm_config(subblock_w=4))
    with pytest.raises(RuntimeError, match="Input and output memory layouts must match"):
        ttnn.layer_norm(a, program_config=layer_norm_config(), memory_config=ttnn.L1_WIDTH_SHARDED_MEMORY_CONFIG)
    with pytest.raises(RuntimeError, match="Welford's algorithm is not supported for RMSNorm"):
        ttnn.rms_norm(a, program_config=layer_norm_config(use_welford=True))


def test_a_sharded_layer_norm_config_on_an_interleaved_input_says_how_to_shard_it(device):
    x = ttnn.from_torch(torch.randn(1, 256, 512), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with pytest.raises(RuntimeError, match="needs a sharded input .* shard it first"):
        ttnn.layer_norm(x, program_config=layer_norm_config())
    ttnn.layer_norm(x, program_config=ttnn.LayerNormDefaultProgramConfig())


def test_linear_applies_a_configs_fused_activation_after_its_bias(ab, device):
    a, b = ab
    bias = ttnn.from_torch(torch.full((1, 512), -50.0), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    relu = mcast(fused_activation=ttnn.UnaryWithParam(ttnn.UnaryOpType.RELU))
    out = ttnn.linear(a, b, bias=bias, program_config=relu, dtype=ttnn.float32).value
    exact = a.value.float() @ b.value.float() + bias.value.float()
    torch.testing.assert_close(out, torch.relu(exact), rtol=2**-8, atol=2**-6)  # not relu(x @ w) - 50
    leaky = ttnn.linear(a, b, bias=bias, activation=ttnn.UnaryWithParam(ttnn.UnaryOpType.LEAKY_RELU, 0.1),
                        dtype=ttnn.float32).value
    torch.testing.assert_close(leaky, torch.nn.functional.leaky_relu(exact, 0.1), rtol=2**-8, atol=2**-6)


def test_sdpa_chunk_sizes_must_be_whole_tiles(device):
    q = ttnn.from_torch(torch.randn(1, 2, 64, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    sdpa = ttnn.transformer.scaled_dot_product_attention
    ok = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=32, k_chunk_size=64)
    assert torch.equal(sdpa(q, q, q, program_config=ok).value, sdpa(q, q, q).value)
    bad = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=48, k_chunk_size=64)
    with pytest.raises(RuntimeError, match="q_chunk_size must be divisible by TILE_SIZE. Got q_chunk_size: 48"):
        sdpa(q, q, q, program_config=bad)



def test_a_core_grid_wider_than_the_device_runs_on_the_device_grid_as_tt_nn_does(ab):
    # create_matmul_program_config (matmul_program_config.cpp) takes a user core grid only when it fits the
    # device and otherwise uses the device's: tt-metal's multi-head attention tutorial passes CoreGrid(x=12),
    # Grayskull's width, and runs on 8x8 Wormholes.
    a, b = ab
    wide = ttnn.linear(a, b, core_grid=ttnn.CoreGrid(y=8, x=12))
    fitting = ttnn.linear(a, b, core_grid=ttnn.CoreGrid(y=8, x=8))
    assert torch.equal(ttnn.to_torch(wide), ttnn.to_torch(fitting))
