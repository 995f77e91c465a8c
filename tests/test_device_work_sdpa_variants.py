"""Device work of the prefill SDPA variants: chunked prefill over a paged cache and windowed attention.

Each test builds a known shape and checks the device operation and its CBs against the program factory's formula
(sdpa_program_factory.cpp in chunked mode, sdpa_windowed_program_factory.cpp), with the arithmetic in the comments.
"""

from __future__ import annotations

import pytest
import torch
from programs_heard import launched as heard  # tests/programs_heard.py

import device_sim as ttnn
from device_sim.programs import transformer
from device_sim.programs.sdpa_windowed import windowed_sdpa_program

BF16, BF8, BFP4, INT32_TILE = 2048, 1088, 576, 4096  # bytes of one 32x32 tile


def tt(device, shape, dtype=ttnn.bfloat16):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=ttnn.TILE, device=device)


def rows(device, values):
    return ttnn.from_torch(torch.tensor(values, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR,
                           device=device)


def cbs(program) -> list[tuple]:
    return [(cb.indices, cb.num_pages, cb.page_size) for cb in program.cbs]


def test_chunked_prefill_runs_the_causal_sdpa_program_with_a_page_table_row(device):
    # q [1, 8 heads, 64, 64] at positions 64..127 of a paged cache [4 blocks, 2 KV heads, 64, 64] bfloat8_b whose
    # page table [1, 4] int32 sits in DRAM: a row is 16 B, aligned to DRAM's 32 B. Default chunks of 32:
    # Sq_chunk_t = Sk_chunk_t = 1, DHt = 2; 2 q chunks over 64 cores: batch 1, heads 8, q 2 a head, one chunk a core.
    q, k, v = tt(device, (1, 8, 64, 64)), tt(device, (4, 2, 64, 64), ttnn.bfloat8_b), tt(device, (4, 2, 64, 64),
                                                                                           ttnn.bfloat8_b)
    pages = rows(device, [[2, 0, 3, 1]])
    [p] = heard(device, lambda: ttnn.transformer.chunked_scaled_dot_product_attention(q, k, v, pages, 64))
    assert (p.name, p.factory, p.ranges) == ("SDPAOperation", "SDPAProgramFactory", ((0, 0, 7, 7),))
    # c_0 Q 1 x 2 (one chunk a core: single); c_1 / c_2 K, V 1 x 2 doubled = 4 bfloat8_b; c_3 the causal mask
    # 1 x 1 doubled in bfloat4_b; c_5 / c_7 scalars; c_6 the page-table row; c_24 QK^T 1; c_25 / c_26 1 x 2;
    # c_27..c_31 1 each; c_16 1 x 2 in the output's bfloat16
    assert cbs(p) == [((0,), 2, BF16), ((1,), 4, BF8), ((2,), 4, BF8), ((3,), 2, BFP4), ((5,), 1, BF16),
                      ((7,), 1, BF16), ((6,), 1, 32), ((24,), 1, BF16), ((25,), 2, BF16), ((26,), 2, BF16),
                      ((27,), 1, BF16), ((28,), 1, BF16), ((29,), 1, BF16), ((30,), 1, BF16), ((31,), 1, BF16),
                      ((16,), 2, BF16)]
    assert p.l1_bytes_per_core == 16 * BF16 + 8 * BF8 + 2 * BFP4 + 32
    # A 4-core grid with 64-wide K chunks: 8 heads over 4 cores leaves both q chunks on one core, so Q doubles
    # (2 tiles x 2); K / V 2 x 2 doubled = 8; the mask 1 x 2 doubled = 4; QK^T 2.
    config = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(4, 1), q_chunk_size=32, k_chunk_size=64)
    wide = transformer.sdpa_program(q, k, v, ttnn.bfloat16, is_causal=True, program_config=config, page_table_page=32)
    assert wide.ranges == ((0, 0, 3, 0),)
    assert cbs(wide)[:4] == [((0,), 4, BF16), ((1,), 8, BF8), ((2,), 8, BF8), ((3,), 4, BFP4)]
    assert cbs(wide)[7] == ((24,), 2, BF16)
    [launched] = heard(device, lambda: ttnn.transformer.chunked_scaled_dot_product_attention(
        q, k, v, pages, 64, program_config=config))
    assert launched.cbs == wide.cbs


def test_chunked_prefill_from_a_start_tensor_adds_two_start_cbs_and_needs_32_byte_table_rows(device):
    # chunk_start_idx_tensor: the page-table CB holds blocks_per_user int32 (8 x 4 = 32 B), and c_8 / c_9 one
    # 32 B int32 page each for the compute and the writer kernels
    q, k, v = tt(device, (1, 8, 64, 64)), tt(device, (8, 2, 64, 64)), tt(device, (8, 2, 64, 64))
    start = rows(device, [64])
    [p] = heard(device, lambda: ttnn.transformer.chunked_scaled_dot_product_attention(
        q, k, v, rows(device, [list(range(8))]), chunk_start_idx_tensor=start))
    assert cbs(p)[6:9] == [((6,), 1, 32), ((8,), 1, 32), ((9,), 1, 32)]
    # 4 blocks a user: 16 B rows, which TT-NN's factory refuses; nothing is left allocated
    short = rows(device, [[0, 1, 2, 3]])
    live = len(device.memory.live_buffers())
    with pytest.raises(RuntimeError, match=r"(?s)TT_FATAL .*page table stick size must be a multiple of 32"):
        ttnn.transformer.chunked_scaled_dot_product_attention(q, k, v, short, chunk_start_idx_tensor=start)
    assert len(device.memory.live_buffers()) == live


def test_chunked_prefill_refuses_a_start_between_q_chunks_before_making_an_output(device):
    q, k, v = tt(device, (1, 8, 64, 64)), tt(device, (4, 2, 64, 64)), tt(device, (4, 2, 64, 64))
    pages = rows(device, [[0, 1, 2, 3]])
    live = len(device.memory.live_buffers())
    with pytest.raises(RuntimeError, match=r"(?s)TT_FATAL .*chunk_start_idx must be a multiple of q_chunk_size\. Got "
                                           r"chunk_start_idx: 48, q_chunk_size: 32"):
        ttnn.transformer.chunked_scaled_dot_product_attention(q, k, v, pages, 48)
    assert len(device.memory.live_buffers()) == live


def test_windowed_attention_reads_the_window_bounds_into_a_cb_and_builds_its_mask(device):
    # q [1, 2 heads, 64, 32], k, v bfloat8_b, windows [0, 16, 40, 64] int32: Sq_chunk_t = Sk_chunk_t = DHt = 1,
    # 2 q chunks; 64 cores: batch 1, heads 2, q 2: one chunk a core.
    q, k, v = tt(device, (1, 2, 64, 32)), tt(device, (1, 2, 64, 32), ttnn.bfloat8_b), tt(device, (1, 2, 64, 32),
                                                                                            ttnn.bfloat8_b)
    cu = rows(device, [0, 16, 40, 64])
    p = windowed_sdpa_program(q, k, v, cu, ttnn.bfloat16)
    assert (p.name, p.factory, p.ranges) == ("WindowedScaledDotProductAttentionDeviceOperation",
                                             "WindowedSDPAProgramFactory", ((0, 0, 7, 7),))
    # c_0 Q 1; c_1 / c_2 K, V 1 doubled; c_3 one int32 tile of bounds; c_4 the mask 1 doubled in bfloat4_b;
    # c_5 / c_7 scalars; c_24 1; c_25 / c_26 1; c_27..c_31 1 each; c_16 1
    assert cbs(p) == [((0,), 1, BF16), ((1,), 2, BF8), ((2,), 2, BF8), ((3,), 1, INT32_TILE), ((4,), 2, BFP4),
                      ((5,), 1, BF16), ((7,), 1, BF16), ((24,), 1, BF16), ((25,), 1, BF16), ((26,), 1, BF16),
                      ((27,), 1, BF16), ((28,), 1, BF16), ((29,), 1, BF16), ((30,), 1, BF16), ((31,), 1, BF16),
                      ((16,), 1, BF16)]
    assert p.l1_bytes_per_core == 12 * BF16 + 4 * BF8 + INT32_TILE + 2 * BFP4
    [launched] = heard(device, lambda: ttnn.transformer.windowed_scaled_dot_product_attention(q, k, v, cu))
    assert launched.cbs == p.cbs
    # q chunks of 64 on a 2-core grid: one core a head, one chunk each: Q 2 x 1 single, the mask 2 x 1 doubled
    config = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(2, 1), q_chunk_size=64, k_chunk_size=32)
    wide = windowed_sdpa_program(q, k, v, cu, ttnn.bfloat16, program_config=config)
    assert (wide.ranges, cbs(wide)[0], cbs(wide)[4]) == (((0, 0, 1, 0),), ((0,), 2, BF16), ((4,), 4, BFP4))


def test_a_windowed_attention_whose_cbs_reach_an_l1_tensor_fails_with_tt_metals_clash_error():
    dev = ttnn.open_device(0, l1_size=98_304 + 65_536)  # 64 KiB of L1 above the CB base per core
    try:
        q = tt(dev, (1, 2, 64, 32))
        cu = rows(dev, [0, 16, 40, 64])
        # the CBs: 16 bfloat16 tiles, one int32 tile and 2 bfloat4_b tiles, 38 KiB: they fit while L1 is empty
        assert windowed_sdpa_program(q, q, q, cu, ttnn.bfloat16).l1_bytes_per_core == 16 * BF16 + INT32_TILE + 2 * BFP4
        ttnn.transformer.windowed_scaled_dot_product_attention(q, q, q, cu)
        # 48 KiB per core (3 MiB over 64 banks) at the top of L1 leaves 16 KiB above the CB base
        held = ttnn.from_torch(torch.zeros(49_152, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev,
                               memory_config=ttnn.L1_MEMORY_CONFIG)
        live = len(dev.memory.live_buffers())
        with pytest.raises(RuntimeError, match=rf"Statically allocated circular buffers in program \d+ clash with L1 "
                                               rf"buffers .* L1 buffer allocated at {held.buffer_address()}"):
            ttnn.transformer.windowed_scaled_dot_product_attention(q, q, q, cu)
        assert len(dev.memory.live_buffers()) == live  # the failed op's output was freed
    finally:
        ttnn.close_device(dev)
