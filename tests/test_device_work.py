"""Device work: the programs an op launches, their circular buffers, the CB/L1 clash, and the captured graph."""

from __future__ import annotations

import json

import pytest
import torch

import device_sim as ttnn
import ttreport
from device_sim import device_work
from device_sim.programs import eltwise, matmul, normalization
from ttreport.capturing import device_graph

TILE_BF16 = 2048  # bytes of a 32x32 bfloat16 tile
TILE_BF8 = 1088  # 1024 mantissas + one shared exponent per 16 values


def tt(device, shape, dtype=ttnn.bfloat16, memory_config=None):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=ttnn.TILE, device=device,
                           memory_config=memory_config)


def cbs(program) -> list[tuple]:
    return [(cb.indices, cb.num_pages, cb.page_size) for cb in program.cbs]


def test_a_square_matmul_gets_the_2d_multicast_factorys_cbs(device):
    # 256x256 @ 256x256: Mt = Kt = Nt = 8 on an 8x8 grid -> per_core_M = per_core_N = 1, in0_block_w = 4,
    # two K blocks, so in0 and in1 are double-buffered; with packer L1 accumulation the intermediate is
    # bfloat16, the output's format, so c_4 and c_5 share one buffer.
    a, b = tt(device, (256, 256)), tt(device, (256, 256))
    p = matmul.matmul_program(a, b, None, ttnn.bfloat16, None)
    assert p.name == "MatmulDeviceOperation"
    assert p.factory == "MatmulMultiCoreReuseMultiCastProgramConfig"
    assert cbs(p) == [((0,), 8, TILE_BF16), ((1,), 8, TILE_BF16), ((4, 5), 1, TILE_BF16)]
    assert p.cores.num_cores() == 64
    assert p.l1_bytes_per_core == 17 * TILE_BF16


def test_a_wide_matmul_is_1d_and_its_cbs_follow_dtypes_and_fp32_accumulation(device):
    # 32x256 @ 256x1024 bfloat8_b -> float32: M is one tile, so a 1D config; N = 32 tiles over 64 cores
    # -> per_core_N = 1, K = 8 tiles -> in0_block_w = 1, eight K blocks; a float32 output accumulates in
    # float32 with no packer accumulation, so the intermediate is float32 too and c_4/c_5 still share.
    a, b = tt(device, (32, 256), ttnn.bfloat8_b), tt(device, (256, 1024), ttnn.bfloat8_b)
    p = matmul.matmul_program(a, b, None, ttnn.float32, None)
    assert p.factory == "MatmulMultiCoreReuseMultiCast1DProgramConfig"
    assert cbs(p) == [((0,), 2, TILE_BF8), ((1,), 2, TILE_BF8), ((4, 5), 1, 4096)]
    assert p.cores.num_cores() == 32
    # bfloat16 output with fp32 accumulation asked for: the intermediate is float32, so c_5 is its own CB
    p = matmul.matmul_program(a, b, None, ttnn.bfloat16, None, fp32_dest_acc_en=True)
    assert cbs(p)[2:] == [((4,), 1, TILE_BF16), ((5,), 1, 4096)]


def test_a_program_config_sets_the_blocking(device):
    a, b = tt(device, (2, 128, 256)), tt(device, (256, 512))
    cfg = ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), in0_block_w=2, out_subblock_h=1, out_subblock_w=2,
        per_core_M=1, per_core_N=2, transpose_mcast=False, fused_activation=None)
    p = matmul.matmul_program(a, b, None, ttnn.bfloat16, cfg)
    # in0: 1 x 2 tiles, in1: 2 x 2 tiles, both doubled (4 K blocks); 8 rows of M blocks x 8 columns of N blocks
    assert cbs(p) == [((0,), 4, TILE_BF16), ((1,), 8, TILE_BF16), ((4, 5), 2, TILE_BF16)]
    assert device_work.cores_text(p.ranges) == "{[0-0 - 7-7]}"


def test_a_linear_with_bias_is_one_matmul_program_with_a_bias_cb(device, tmp_path):
    x, w, bias = tt(device, (256, 256)), tt(device, (256, 256)), tt(device, (1, 256))
    with ttreport.capture("linear", config=ttreport.Config(root=tmp_path, device_graphs=True)) as handle:
        ttnn.linear(x, w, bias=bias)
    with ttreport.open(handle.path) as r:
        rows = r.sql("SELECT o.name, g.captured_graph FROM captured_graph g JOIN operations o USING (operation_id)")
    assert [row["name"] for row in rows] == ["ttnn.linear"]  # its nested matmul and add launch nothing
    graph = json.loads(rows[0]["captured_graph"])
    device_ops = [n["params"]["name"] for n in graph if n["node_type"] == "function_start"]
    assert device_ops == ["ttnn::linear", "MatmulDeviceOperation"]
    sizes = [int(n["params"]["size"]) for n in graph if n["node_type"] == "circular_buffer_allocate"]
    assert sizes == [8 * TILE_BF16, 8 * TILE_BF16, 1 * TILE_BF16, 1 * TILE_BF16]  # in0, in1, bias, out


def test_a_captured_matmul_shows_its_device_operation_cbs_and_addresses(device, tmp_path):
    a, b = tt(device, (256, 256)), tt(device, (256, 256))
    with ttreport.capture("mm", config=ttreport.Config(root=tmp_path, device_graphs=True)) as handle:
        ttnn.matmul(a, b)
        ttnn.to_torch(a)  # a host op: no device program, no captured graph
    with ttreport.open(handle.path) as r:
        rows = r.sql("SELECT o.name, g.captured_graph FROM captured_graph g JOIN operations o USING (operation_id)")
    assert [row["name"] for row in rows] == ["ttnn.matmul"]
    graph = json.loads(rows[0]["captured_graph"])
    assert [n["counter"] for n in graph] == list(range(len(graph)))
    cb_nodes = [n["params"] for n in graph if n["node_type"] == "circular_buffer_allocate"]
    base = device.config.l1_unreserved_base
    assert [(int(p["address"]), int(p["size"])) for p in cb_nodes] == [
        (base, 8 * TILE_BF16), (base + 8 * TILE_BF16, 8 * TILE_BF16), (base + 16 * TILE_BF16, TILE_BF16)]
    assert {p["core_range_set"] for p in cb_nodes} == {"{[0-0 - 7-7]}"}


@pytest.fixture
def small_l1():
    # 64 KiB of L1 above the reserved base per core, so one tensor and a matmul's CBs meet quickly
    dev = ttnn.open_device(0, l1_size=98_304 + 65_536)
    yield dev
    ttnn.close_device(dev)


def test_cbs_that_reach_an_l1_tensor_fail_with_tt_metals_clash_error(small_l1):
    a, b = tt(small_l1, (256, 256)), tt(small_l1, (256, 256))
    ttnn.matmul(a, b)  # fits while L1 is empty: the CBs (34 KiB per core) end below the top of L1
    # 48 KiB per core (3 MiB over 64 banks) at the top of L1 leaves 16 KiB above the CBs' base
    held = tt(small_l1, (49_152, 32), memory_config=ttnn.L1_MEMORY_CONFIG)
    addr = held.buffer_address()
    end = small_l1.config.l1_unreserved_base + 17 * TILE_BF16
    live = len(small_l1.memory.live_buffers())
    with pytest.raises(RuntimeError) as err:
        ttnn.matmul(a, b)
    assert ("Statically allocated circular buffers in program" in str(err.value)
            and f"clash with L1 buffers on core range [0-0 - 7-7]. L1 buffer allocated at {addr} and static "
                f"circular buffer region ends at {end}" in str(err.value))
    assert len(small_l1.memory.live_buffers()) == live  # the failed op's output was freed
    held.deallocate()
    ttnn.matmul(a, b)  # room again


def test_cbs_beyond_the_end_of_l1_fail_with_tt_metals_message(small_l1):
    # 1024x1024 @ 1024x1024 bfloat16 on 8x8 cores with a config of per_core_M = per_core_N = in0_block_w = 4
    # (a given config's blocks are used as they are): in0 and in1 hold 4x4 tiles each, doubled (64 KiB
    # apiece), and the output 4x4 tiles (32 KiB): 160 KiB from the base
    a, b = tt(small_l1, (1024, 1024)), tt(small_l1, (1024, 1024))
    cfg = ttnn.MatmulMultiCoreReuseMultiCastProgramConfig(
        compute_with_storage_grid_size=ttnn.CoreCoord(8, 8), in0_block_w=4, out_subblock_h=2, out_subblock_w=4,
        per_core_M=4, per_core_N=4, transpose_mcast=False, fused_activation=None)
    with pytest.raises(RuntimeError, match=r"Statically allocated circular buffers on core range \[0-0 - 7-7\] "
                                           r"grow to 262144 B which is beyond max L1 size of 163840 B"):
        ttnn.matmul(a, b, program_config=cfg)


def test_without_a_config_the_output_blocks_shrink_until_the_cbs_fit_below_l1_tensors(small_l1):
    # TT-NN's create_matmul_program_config keeps per_core_M = per_core_N = 4 but picks out_block_h x out_block_w
    # with get_multi_dim_per_core_factor: the biggest, squarest block whose CB estimate (in0, in1 doubled; out
    # and intermediate; in0's tile size for the output) fits below the lowest L1 tensor. 64 KiB of room:
    # 4x4 needs 192 KiB and 2x2 80 KiB; 2x1 (the later of 2x1 / 1x2, as TT-NN's map keeps it) needs 56 KiB.
    a, b = tt(small_l1, (1024, 1024)), tt(small_l1, (1024, 1024))
    p = matmul.matmul_program(a, b, None, ttnn.bfloat16, None)
    assert cbs(p) == [((0,), 2 * 4 * 2, TILE_BF16), ((1,), 1 * 4 * 2, TILE_BF16), ((4, 5), 2, TILE_BF16)]
    ttnn.matmul(a, b)  # so it launches
    # Less room, smaller blocks: a tensor holding 32 KiB per core at the top of L1 leaves 32 KiB, where even a
    # 1x1 block (36 KiB) does not fit: TT-NN then takes 1x1, and the launch clashes.
    held = tt(small_l1, (32_768, 32), memory_config=ttnn.L1_MEMORY_CONFIG)
    assert cbs(matmul.matmul_program(a, b, None, ttnn.bfloat16, None))[-1] == ((4, 5), 1, TILE_BF16)
    with pytest.raises(RuntimeError, match="clash with L1 buffers"):
        ttnn.matmul(a, b)
    held.deallocate()
    assert cbs(matmul.matmul_program(a, b, None, ttnn.bfloat16, None)) == cbs(p)


def test_a_report_shows_the_cbs_and_the_tensor_that_clashed(small_l1, tmp_path):
    a, b = tt(small_l1, (256, 256)), tt(small_l1, (256, 256))
    with ttreport.capture("clash", config=ttreport.Config(root=tmp_path, device_graphs=True)) as handle:
        held = ttnn.to_memory_config(tt(small_l1, (49_152, 32)), ttnn.L1_MEMORY_CONFIG)
        with pytest.raises(RuntimeError, match="clash with L1 buffers"):
            ttnn.matmul(a, b)
    with ttreport.open(handle.path) as r:
        op = r.sql("SELECT operation_id FROM operations WHERE name = 'ttnn.matmul'")[0]["operation_id"]
        error = r.sql("SELECT error_message FROM errors WHERE operation_id = ?", [op])[0]["error_message"]
        graph = json.loads(r.sql("SELECT captured_graph FROM captured_graph WHERE operation_id = ?",
                                 [op])[0]["captured_graph"])
        clashed = r.sql("SELECT tensor_id FROM tensors WHERE address = ? AND buffer_type = 1",
                        [held.buffer_address()])
    assert f"L1 buffer allocated at {held.buffer_address()}" in error
    assert [int(n["params"]["size"]) for n in graph if n["node_type"] == "circular_buffer_allocate"] == [
        8 * TILE_BF16, 8 * TILE_BF16, TILE_BF16]
    assert [row["tensor_id"] for row in clashed] == [held.tensor_id]


def test_a_softmax_over_the_last_dim_is_one_softmax_program_on_every_core(device):
    # [1, 1, 64, 256] bfloat16: Wt = 8, block = 8; numeric_stable (TT-NN's default) keeps the whole row in c_0
    # and c_10, the exps in c_6; bfloat16 intermediates without an fp32 destination
    x = tt(device, (1, 1, 64, 256))
    p = normalization.softmax_program(x, ttnn.bfloat16)
    assert p.name == "SoftmaxDeviceOperation"
    assert cbs(p) == [((0,), 8, TILE_BF16), ((11,), 16, TILE_BF16), ((7,), 1, TILE_BF16), ((2,), 1, TILE_BF16),
                      ((6,), 8, TILE_BF16), ((5,), 1, TILE_BF16), ((8,), 1, TILE_BF16), ((10,), 8, TILE_BF16)]
    assert p.ranges == ((0, 0, 7, 7),)
    # an fp32 destination: blocks of at most 4 tiles, float32 intermediates; without numeric_stable c_0 is two blocks
    p = normalization.softmax_program(x, ttnn.bfloat16, fp32_dest_acc_en=True, numeric_stable=False)
    assert cbs(p) == [((0,), 8, TILE_BF16), ((11,), 8, TILE_BF16), ((7,), 1, 4096), ((2,), 1, TILE_BF16),
                      ((6,), 8, 4096), ((5,), 1, TILE_BF16)]


def test_a_captured_softmax_shows_its_device_operation(device, tmp_path):
    x = tt(device, (1, 1, 64, 256))
    with ttreport.capture("sm", config=ttreport.Config(root=tmp_path, device_graphs=True)) as handle:
        ttnn.softmax(x, dim=-1)
        ttnn.softmax(x, dim=2)  # not the last dim: a program device_sim does not model, so no graph
    with ttreport.open(handle.path) as r:
        rows = r.sql("SELECT operation_id, captured_graph FROM captured_graph")
    assert [row["operation_id"] for row in rows] == [1]
    graph = json.loads(rows[0]["captured_graph"])
    assert [n["params"]["name"] for n in graph if n["node_type"] == "function_start"] == [
        "ttnn::softmax", "SoftmaxDeviceOperation"]


def test_element_wise_ops_are_unary_and_binary_ng_programs(device, tmp_path):
    a, b = tt(device, (1, 1, 64, 320)), tt(device, (1, 1, 64, 320), ttnn.bfloat8_b)
    # 2 x 10 = 20 tiles: split_work_to_cores fills columns of 8 cores first
    u = eltwise.unary_program(a, ttnn.bfloat16)
    assert (u.name, cbs(u), u.ranges) == ("UnaryDeviceOperation", [((0,), 2, TILE_BF16), ((2,), 2, TILE_BF16)],
                                          ((0, 0, 1, 7), (2, 0, 2, 3)))
    with ttreport.capture("eltwise", config=ttreport.Config(root=tmp_path, device_graphs=True)) as handle:
        ttnn.add(a, b)
        ttnn.mul(a, 2.0, input_tensor_a_activations=[ttnn.UnaryWithParam(ttnn.UnaryOpType.RELU)])
        ttnn.exp(a)
    with ttreport.open(handle.path) as r:
        graphs = [json.loads(row["captured_graph"]) for row in r.sql("SELECT captured_graph FROM captured_graph")]
    names = [[n["params"]["name"] for n in g if n["node_type"] == "function_start"] for g in graphs]
    assert names == [["ttnn::add", "BinaryNgDeviceOperation"], ["ttnn::mul", "BinaryNgDeviceOperation"],
                     ["ttnn::exp", "UnaryDeviceOperation"]]
    sizes = [[int(n["params"]["size"]) for n in g if n["node_type"] == "circular_buffer_allocate"] for g in graphs]
    # add: c_0 a, c_2 out, c_1 b (bfloat8_b tiles); mul by a scalar with a's activation: c_0, c_3 the
    # activated a, c_2, and one tile of the scalar in c_1
    assert sizes == [[2 * TILE_BF16, 2 * TILE_BF16, 2 * TILE_BF8], [2 * TILE_BF16, TILE_BF16, 2 * TILE_BF16, TILE_BF16],
                     [2 * TILE_BF16, 2 * TILE_BF16]]


def test_an_element_wise_op_writing_into_a_given_tensor_keeps_it_when_its_cbs_clash(small_l1):
    a = tt(small_l1, (64, 64))
    target = tt(small_l1, (64, 64))
    held = tt(small_l1, (32 * 64 * 31, 32), memory_config=ttnn.L1_MEMORY_CONFIG)  # 62 KiB per core: 2 KiB left
    with pytest.raises(RuntimeError, match="clash with L1 buffers"):
        ttnn.add(a, a, output_tensor=target)  # c_0, c_2, c_1: 12 KiB
    assert target.is_allocated()  # the caller's tensor, not the op's to free
    held.deallocate()
    ttnn.add(a, a, output_tensor=target)


def test_device_graphs_can_be_left_out_of_a_report_but_the_device_still_checks_its_cbs(small_l1, tmp_path):
    a = tt(small_l1, (256, 256))
    with ttreport.capture("nographs", config=ttreport.Config(root=tmp_path, device_graphs=False)) as handle:
        ttnn.matmul(a, a)
        held = tt(small_l1, (49_152, 32), memory_config=ttnn.L1_MEMORY_CONFIG)
        with pytest.raises(RuntimeError, match="clash with L1 buffers"):
            ttnn.matmul(a, a)
        held.deallocate()
    with ttreport.open(handle.path) as r:
        assert r.sql("SELECT COUNT(*) AS n FROM captured_graph")[0]["n"] == 0
        assert r.sql("SELECT COUNT(*) AS n FROM errors")[0]["n"] == 1


def test_a_sharded_output_backs_the_output_cb_outside_the_static_region(device):
    a, b = tt(device, (256, 256)), tt(device, (256, 256))
    p = device_work.make_program(*matmul.matmul_program(a, b, None, ttnn.bfloat16, None, out_sharded=True)[:4])
    assert cbs(p) == [((0,), 8, TILE_BF16), ((1,), 8, TILE_BF16), ((4, 5), 1, TILE_BF16)]
    assert [cb.globally_allocated for cb in p.cbs] == [False, False, True]
    assert p.cb_region_end == 16 * TILE_BF16  # cb_base 0 here: in0 and in1 only
    graph = json.loads(device_graph.captured_graph("ttnn.matmul", [p]))
    assert [n["params"]["globally_allocated"] for n in graph if n["node_type"] == "circular_buffer_allocate"] == [
        "0", "0", "1"]
