"""argmax and the other reductions past W/H launch the device operations TT-NN runs for them.

CBs are hand-checked against the factories device_sim/programs/indexing.py and reduction.py cite.
"""

from __future__ import annotations

import torch
from programs_heard import cbs, launched  # tests/programs_heard.py

import device_sim as ttnn

BF16 = 2048  # bytes of one bfloat16 tile


def tt(device, shape, dtype=ttnn.bfloat16, layout=ttnn.TILE):
    return ttnn.from_torch(torch.randn(*shape), dtype=dtype, layout=layout, device=device)


def test_a_tiled_argmax_runs_the_single_core_factory_one_page_each_way(device):
    x = tt(device, (2, 32, 64))
    [p] = launched(device, lambda: ttnn.argmax(x, dim=-1))
    # one input tile in c_0; the uint32 ROW_MAJOR output [2, 32] pages by its last dim: 32 x 4 B
    assert (p.name, p.factory, cbs(p), p.ranges) == (
        "ArgMaxDeviceOperation", "ArgMaxSingleCoreProgramFactory", [(0, 1, BF16), (1, 1, 128)], ((0, 0, 0, 0),))
    [h] = launched(device, lambda: ttnn.argmax(x, dim=1, keepdim=True))
    assert cbs(h) == [(0, 1, BF16), (1, 1, 64 * 4)]  # output [2, 1, 64]


def test_argmax_where_tt_nn_takes_the_multi_core_factory_launches_nothing_modelled(device):
    rm = tt(device, (2, 32, 64), layout=ttnn.ROW_MAJOR)
    assert launched(device, lambda: ttnn.argmax(rm, dim=-1)) == []


def test_a_mean_over_every_dim_reduces_w_then_h_then_the_outer_dim_through_hc_transposes(device):
    x = tt(device, (2, 32, 64))  # as [1, 2, 32, 64]
    programs = launched(device, lambda: ttnn.mean(x))
    assert [(p.name, p.factory) for p in programs] == [
        ("ReduceDeviceOperation", "ReduceMultiCoreWProgramFactory"),
        ("ReduceDeviceOperation", "ReduceMultiCoreHProgramFactory"),
        ("TransposeDeviceOperation", "TransposeHCTiledInterleavedProgramFactory"),
        ("ReduceDeviceOperation", "ReduceMultiCoreHProgramFactory"),
        ("TransposeDeviceOperation", "TransposeHCTiledInterleavedProgramFactory")]
    w, h, to_h, outer, back = programs
    assert cbs(w) == [(0, 2, BF16), (2, 2, BF16), (3, 2, BF16), (4, 1, BF16)] and w.ranges == ((0, 0, 0, 1),)
    assert cbs(h) == [(0, 2, BF16), (2, 1, BF16), (16, 2, BF16)] and h.ranges == ((0, 0, 0, 1),)
    # [1, 2, 1, 1] -> [1, 1, 2, 1]: two input tiles; C = 2 is no whole tile, so the 16x16 padding CB (512 B)
    assert cbs(to_h) == [(0, 2, BF16), (1, 1, 512)] and to_h.ranges == ((0, 0, 0, 1),)
    assert outer.ranges == back.ranges == ((0, 0, 0, 0),)  # one tile left


def test_min_over_an_outer_and_the_last_dim(device):
    x = tt(device, (2, 32, 64))
    names = [p.name for p in launched(device, lambda: ttnn.min(x, [0, 2]))]
    assert names == ["ReduceDeviceOperation", "TransposeDeviceOperation", "ReduceDeviceOperation",
                     "TransposeDeviceOperation"]


def test_outer_reductions_tt_nn_runs_otherwise_launch_nothing_modelled(device):
    x = tt(device, (2, 3, 32, 64))
    assert launched(device, lambda: ttnn.mean(x, 0)) == []  # dim 0 of rank 4: not an HC transpose
    assert launched(device, lambda: ttnn.sum(x, 1)) == []  # a bfloat16 sum: fast_reduce_nc
    f32 = tt(device, (2, 3, 32, 64), ttnn.float32)
    assert [p.name for p in launched(device, lambda: ttnn.sum(f32, 1))] == [
        "TransposeDeviceOperation", "ReduceDeviceOperation", "TransposeDeviceOperation"]


def test_plus_one_steps_through_rows_of_its_last_dim_on_one_core(device):
    pos = ttnn.from_torch(torch.zeros(1, 7, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.ROW_MAJOR, device=device)
    [p] = launched(device, lambda: ttnn.plus_one(pos))
    # a row of 7 int32 values (28 B) rounded up to 32 B, on core (0, 0)
    assert (p.name, cbs(p), p.ranges) == ("PlusOneDeviceOperation", [(0, 1, 32)], ((0, 0, 0, 0),))
    tiled = ttnn.from_torch(torch.zeros(2, 40, dtype=torch.int32), dtype=ttnn.int32, layout=ttnn.TILE, device=device)
    assert cbs(launched(device, lambda: ttnn.plus_one(tiled))[0]) == [(0, 1, 64 * 4)]  # padded to 64 wide


def test_var_and_std_over_one_dim_run_the_welford_reduction(device):
    x = tt(device, (2, 64, 96))  # NC = 2, Ht = 2, Wt = 3
    [w] = launched(device, lambda: ttnn.var(x, dim=-1, keepdim=True))
    # over W: the destination scratch c_19 (bfloat16 without fp32_dest_acc_en); 4 rows of tiles on 4 cores
    assert (w.name, cbs(w), w.ranges) == ("WelfordReduceDeviceOperation",
                                          [(0, 2, BF16), (2, 1, BF16), (16, 2, BF16), (19, 1, BF16)], ((0, 0, 0, 3),))
    [h] = launched(device, lambda: ttnn.std(x, dim=1, scalar=2.0))
    # over H: no c_19; a scalar other than 1 adds the scaled-input tile c_20; 6 columns of tiles on 6 cores
    assert (cbs(h), h.ranges) == ([(0, 2, BF16), (2, 1, BF16), (16, 2, BF16), (20, 1, BF16)], ((0, 0, 0, 5),))
    assert launched(device, lambda: ttnn.var(x, dim=0)) == []  # permuted to H first in TT-NN: not modelled
