"""compare_tensors: every figure at once, and the policies a user relies on (see ttreport/metrics.py)."""

import math

import numpy as np
import pytest
import torch

import device_sim as ttnn
from ttreport.metrics import TOLERANCES, compare_tensors, format_fraction

nan, inf = math.nan, math.inf


def randn(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# -- PCC and the error figures ---------------------------------------------------------------

@pytest.mark.parametrize("case", ["close", "noisy", "independent", "anti", "offset"])
def test_pcc_agrees_with_numpy_corrcoef_in_float64(case):
    g = randn(300, 257)
    a = {
        "close": g + 1e-3 * randn(300, 257, seed=1),
        "noisy": g + 0.5 * randn(300, 257, seed=1),
        "independent": randn(300, 257, seed=1),
        "anti": -g + 0.1 * randn(300, 257, seed=1),
        # a mean a thousand times the spread: raw float32 sums would cancel
        "offset": 1000 + g + 0.01 * randn(300, 257, seed=1),
    }[case]
    g = g + 1000 if case == "offset" else g
    expected = np.corrcoef(a.double().flatten().numpy(), g.double().flatten().numpy())[0, 1]
    r = compare_tensors(a, g, chunk_size=4096)
    assert r.pcc == pytest.approx(expected, abs=1e-7)  # float32 products, float64 totals
    if case == "close":  # near 1, the error scales with 1 - PCC, not with float32 rounding
        assert 1 - r.pcc == pytest.approx(1 - expected, rel=1e-6)


def test_error_figures_match_a_float64_reference():
    g = randn(64, 100)
    a = (g + 0.01 * randn(64, 100, seed=1)).bfloat16()
    r = compare_tensors(a, g)
    diff = (a.double() - g.double()).abs()
    assert r.max_abs_error == pytest.approx(diff.max().item(), rel=1e-6)
    assert r.mean_abs_error == pytest.approx(diff.mean().item(), rel=1e-6)
    assert r.max_rel_error == pytest.approx((diff / g.double().abs()).max().item(), rel=1e-6)
    outside = diff > r.atol + r.rtol * g.double().abs()
    assert r.mismatched == int(outside.sum()) > 0
    assert r.mismatched_fraction == r.mismatched / g.numel()
    assert (r.rtol, r.atol) == (1.6e-2, 1e-5)  # the coarser dtype's defaults: bfloat16 next to float32


def test_worst_index_points_at_the_largest_error_with_both_values():
    g = randn(4, 50, 30)
    a = g.clone()
    a[2, 17, 5] += 3.0
    a[1, 0, 0] += 2.0
    r = compare_tensors(a, g, chunk_size=1000)
    assert r.worst_index == (2, 17, 5)
    assert (r.worst_actual, r.worst_golden) == (a[2, 17, 5].item(), g[2, 17, 5].item())
    assert r.max_abs_error == pytest.approx(3.0, rel=1e-6)
    assert r.mismatched == 2 and not r.passed


def test_chunked_result_equals_unchunked():
    g = randn(300, 33)
    a = g + 0.01 * randn(300, 33, seed=1)
    a[150, 3] = nan
    g[150, 3] = nan
    for size in (7, 100, 4096):
        whole = compare_tensors(a, g, chunk_size=10**9).to_dict()
        part = compare_tensors(a, g, chunk_size=size).to_dict()
        for key in ("pcc", "mean_abs_error", "max_rel_error", "max_ulp"):  # float32 or float64 sums
            assert part.pop(key) == pytest.approx(whole.pop(key), rel=1e-6), key
        assert part == whole


@pytest.mark.parametrize("threads", [1, 3])
def test_threads_share_the_chunks_without_changing_the_result(threads):
    g = randn(200, 50)
    a = g + 0.01 * randn(200, 50, seed=1)
    a[7, 7] += 1.0
    a[150, 3] = nan
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = compare_tensors(a, g, chunk_size=64).to_dict()
        torch.set_num_threads(threads)
        many = compare_tensors(a, g, chunk_size=64).to_dict()
        assert torch.get_num_threads() == threads  # the caller's setting survives
    finally:
        torch.set_num_threads(previous)
    assert many.pop("pcc") == pytest.approx(one.pop("pcc"), abs=1e-12)
    assert many.pop("mean_abs_error") == pytest.approx(one.pop("mean_abs_error"), rel=1e-12)
    assert repr(many) == repr(one)  # repr: NaN (the max error here) never equals itself
    assert math.isnan(one["max_abs_error"]) and one["worst_index"] == [150, 3]


def test_strided_input_gives_the_same_result_as_contiguous():
    g = randn(40, 300)
    a = g + 0.01 * randn(40, 300, seed=1)
    strided = compare_tensors(a.t(), g.t(), chunk_size=1000)
    dense = compare_tensors(a.t().contiguous(), g.t().contiguous(), chunk_size=1000)
    assert strided.pcc == pytest.approx(dense.pcc, abs=1e-12)
    assert (strided.worst_index, strided.max_abs_error, strided.mismatched) == (
        dense.worst_index, dense.max_abs_error, dense.mismatched)


def test_float32_values_whose_squares_overflow_are_compared_in_float64():
    g = randn(1000) * 1e30
    a = g * (1 + 1e-4 * randn(1000, seed=1))
    r = compare_tensors(a, g, chunk_size=100)
    expected = np.corrcoef(a.double().numpy(), g.double().numpy())[0, 1]
    assert r.pcc == pytest.approx(expected, abs=1e-9)
    assert math.isfinite(r.max_abs_error)


# -- the pass rule ---------------------------------------------------------------------------

def test_passes_only_when_close_and_correlated():
    g = randn(100, 100)
    assert compare_tensors(g.clone(), g).passed

    one_off = g.clone()
    one_off[3, 3] += 1.0  # PCC stays near 1, but one element is far outside tolerance
    r = compare_tensors(one_off, g)
    assert r.pcc > 0.9999 and r.pcc_ok and not r.close_ok and not r.passed
    assert r.mismatched == 1 and "1 of 10,000 (0.01%) outside" in r.reason

    tiny = 1e-7 * randn(100, 100, seed=1)  # every element within atol, but uncorrelated
    r = compare_tensors(tiny, 1e-7 * g)
    assert r.close_ok and not r.pcc_ok and not r.passed
    assert "PCC" in r.reason and "< 0.9999" in r.reason


def test_explicit_tolerances_and_pcc_override_the_defaults():
    g = randn(100, 100)
    a = g + 0.05 * randn(100, 100, seed=1)
    assert not compare_tensors(a, g).passed
    assert compare_tensors(a, g, rtol=0.0, atol=0.5, pcc=0.99).passed
    assert not compare_tensors(a, g, rtol=0.0, atol=0.5, pcc=0.99999).passed
    pcc_only = compare_tensors(a, g, rtol=math.inf, pcc=0.99)
    assert pcc_only.passed and pcc_only.mismatched == 0


# -- constant, NaN, inf, empty, shape and dtype --------------------------------------------

def test_constant_tensors_fall_back_to_closeness_and_never_report_a_fake_pcc():
    ones = torch.ones(8, 8)
    r = compare_tensors(ones.clone(), ones)
    assert r.passed and r.pcc == 1.0 and "PCC undefined" in r.reason

    r = compare_tensors(ones * 2, ones)
    assert not r.passed and math.isnan(r.pcc) and r.mismatched == 64
    assert "PCC undefined (a tensor is constant)" in r.reason

    noisy = ones + 1e-7 * randn(8, 8)  # golden constant, actual within tolerance
    r = compare_tensors(noisy, ones)
    assert r.passed and r.pcc == 1.0


@pytest.mark.parametrize("equal_nan", [True, False])
def test_nan_at_the_same_place(equal_nan):
    g = randn(10, 10)
    g[4, 4] = nan
    a = g.clone()
    r = compare_tensors(a, g, equal_nan=equal_nan)
    assert r.passed is equal_nan
    assert r.mismatched == (0 if equal_nan else 1)
    assert math.isfinite(r.pcc) and r.pcc > 0.9999  # the other 99 pairs


def test_nan_where_golden_is_finite_fails_and_is_not_zeroed():
    g = randn(10, 10)
    a = g.clone()
    a[7, 2] = nan
    r = compare_tensors(a, g)
    assert not r.passed and r.mismatched == 1
    assert math.isnan(r.max_abs_error)
    assert r.worst_index == (7, 2) and math.isnan(r.worst_actual)
    assert "1 NaN/inf mismatch (first at (7, 2)" in r.reason


def test_all_nan_mismatch_fails_and_all_nan_match_passes():
    g = randn(5, 5)
    r = compare_tensors(torch.full((5, 5), nan), g)
    assert not r.passed and r.mismatched == 25 and math.isnan(r.pcc) and math.isnan(r.max_abs_error)
    both = torch.full((5, 5), nan)
    assert compare_tensors(both, both.clone()).passed
    assert not compare_tensors(both, both.clone(), equal_nan=False).passed


def test_inf_matches_only_inf_of_the_same_sign():
    g = randn(10)
    g[3] = inf
    same = g.clone()
    assert compare_tensors(same, g).passed

    flipped = g.clone()
    flipped[3] = -inf
    r = compare_tensors(flipped, g)
    assert not r.passed and r.max_abs_error == inf and r.worst_index == (3,)

    finite = g.clone()
    finite[3] = 1e30
    assert not compare_tensors(finite, g).passed


def test_nan_and_largest_error_in_one_chunk_keep_the_right_index():
    g = randn(64)
    a = g.clone()
    a[10] = g[10] = nan
    a[40] += 5.0
    r = compare_tensors(a, g, chunk_size=64)
    assert r.worst_index == (40,) and r.max_abs_error == pytest.approx(5.0, rel=1e-6)


def test_empty_tensors():
    assert compare_tensors(torch.zeros(0, 3), torch.zeros(0, 3)).passed
    r = compare_tensors(torch.zeros(0, 3), torch.zeros(3, 0))
    assert not r.passed and "shape mismatch" in r.reason


def test_shape_mismatch_is_a_failed_result_not_an_exception():
    r = compare_tensors(torch.zeros(2, 3), torch.zeros(3, 2))
    assert not r.passed
    assert r.reason == "shape mismatch: actual [2, 3] vs golden [3, 2]"
    assert r.shapes == ((2, 3), (3, 2)) and math.isnan(r.pcc)


@pytest.mark.parametrize("other", [torch.zeros(4, dtype=torch.int32), torch.zeros(4, dtype=torch.bool)])
def test_dtype_category_mismatch_is_a_failed_result(other):
    r = compare_tensors(torch.zeros(4), other)
    assert not r.passed and r.reason.startswith("dtype mismatch: actual is float (float32), golden is ")


def test_complex_is_refused_with_a_reason():
    z = torch.zeros(4, dtype=torch.complex64)
    r = compare_tensors(z, z)
    assert not r.passed and "complex" in r.reason


def test_a_list_is_a_type_error_naming_the_fix():
    with pytest.raises(TypeError, match="torch.as_tensor"):
        compare_tensors([1.0, 2.0], torch.zeros(2))


# -- dtypes, tolerances, ULP ----------------------------------------------------------------

def test_integers_compare_exactly():
    g = torch.arange(100, dtype=torch.int64)
    a = g.clone()
    assert compare_tensors(a, g).passed
    a[50] += 1
    r = compare_tensors(a, g)
    assert not r.passed and r.mismatched == 1 and r.worst_index == (50,) and r.max_ulp is None


def test_default_tolerances_follow_the_dtype():
    g = randn(10)
    assert (compare_tensors(g, g).rtol, compare_tensors(g, g).atol) == (1.3e-6, 1e-5)
    h = g.half()
    assert compare_tensors(h, h).rtol == 1e-3
    b = g.bfloat16()
    assert compare_tensors(b, b).rtol == 1.6e-2
    assert compare_tensors(b, b, dtype="bfloat8_b").rtol == TOLERANCES["bfloat8_b"][0]
    assert compare_tensors(b, b, dtype=ttnn.bfloat4_b).rtol == TOLERANCES["bfloat4_b"][0]


def test_block_float_atol_scales_with_the_golden_and_correct_rounding_passes():
    g = randn(64, 64) * 100
    for dtype in (ttnn.bfloat8_b, ttnn.bfloat4_b):
        actual = ttnn.from_torch(g, dtype=dtype, layout=ttnn.TILE)  # the device dtype is inferred
        r = compare_tensors(actual, g, pcc=0.9)
        scale = TOLERANCES[dtype.name.lower()][2]
        assert r.atol == pytest.approx(1e-5 + scale * g.abs().max().item())
        assert r.close_ok and r.max_ulp is None
        assert r.dtypes == (dtype.name.lower(), "float32")
    bf8 = compare_tensors(ttnn.from_torch(g, dtype=ttnn.bfloat8_b, layout=ttnn.TILE), g).pcc
    bf4 = compare_tensors(ttnn.from_torch(g, dtype=ttnn.bfloat4_b, layout=ttnn.TILE), g).pcc
    assert 0.999 < bf8 < 1.0 and bf4 < bf8


def test_a_wrong_block_float_result_still_fails_on_closeness():
    g = randn(64, 64)
    wrong = g.clone()
    wrong[0, 0] += 10.0
    r = compare_tensors(wrong, g, dtype="bfloat8_b", pcc=0.9)
    assert not r.passed and r.mismatched == 1


def test_ulp_distance_in_the_actual_dtype():
    g = torch.tensor([1.0, 2.0, -4.0, 0.0]).bfloat16()
    a = g.clone()
    assert compare_tensors(a, g).max_ulp == 0.0
    a[1] = 2.0 + 2 * 2**-6  # two bfloat16 steps above 2.0 (a step is 2**-6 there)
    r = compare_tensors(a, g)
    assert r.max_ulp == pytest.approx(2.0)
    f = torch.tensor([1.0, 3.0])
    assert compare_tensors(f + torch.tensor([2**-23, 0.0]), f).max_ulp == pytest.approx(1.0)


def test_relative_error_is_inf_where_golden_is_zero_and_the_values_differ():
    g = torch.tensor([0.0, 1.0, 2.0, 0.0])
    assert compare_tensors(g.clone(), g).max_rel_error == 0.0  # 0/0 counts as 0
    a = g.clone()
    a[0] = 1e-3
    assert compare_tensors(a, g).max_rel_error == inf


def test_numpy_and_device_sim_inputs():
    g = randn(32, 32)
    dev = ttnn.from_torch(g, dtype=ttnn.bfloat16)
    r = compare_tensors(dev, g.numpy())
    assert r.passed and r.dtypes == ("bfloat16", "float32")
    assert r.pcc == pytest.approx(1.0, abs=1e-4)


# -- presenting the result ------------------------------------------------------------------

def test_fraction_never_rounds_a_real_mismatch_away():
    assert format_fraction(0, 10) == "0%"
    assert format_fraction(1, 10**8) == "<0.01%"
    assert format_fraction(10**8 - 1, 10**8) == ">99.99%"
    assert format_fraction(10, 10) == "100%"
    assert format_fraction(1, 3) == "33.33%"
    g = randn(10**5)
    a = g.clone()
    a[5] += 1
    assert compare_tensors(a, g).mismatched_text == "1 of 100,000 (<0.01%)"


def test_to_dict_holds_every_figure():
    g = randn(3, 4)
    d = compare_tensors(g + 1, g).to_dict()
    assert d["status"] == "fail" and d["shapes"] == [[3, 4], [3, 4]] and len(d["worst_index"]) == 2
    for key in ("passed", "reason", "pcc", "max_abs_error", "mean_abs_error", "max_rel_error", "mismatched",
                "mismatched_fraction", "numel", "max_ulp", "worst_index", "worst_actual", "worst_golden",
                "shapes", "dtypes", "rtol", "atol", "desired_pcc"):
        assert key in d


# -- the C pass (ttreport/_fold.c) against the numpy path it stands in for ------------------------

def _both_ways(monkeypatch, a, g, **kw):
    from ttreport import metrics
    monkeypatch.setattr(metrics, "NATIVE", True)
    native = compare_tensors(a, g, **kw)
    monkeypatch.setattr(metrics, "NATIVE", False)
    reference = compare_tensors(a, g, **kw)
    return native, reference


_FOLD_CASES = {
    # name: (actual, golden, compare_tensors keywords); sizes not a multiple of 8 or of a chunk, for the tails
    "bf16 close": (lambda g: (g.float() + 1e-2 * randn(*g.shape, seed=3)).to(torch.bfloat16), torch.bfloat16, {}),
    "bf16 vs float32 golden": (lambda g: (g.float() + 1e-2 * randn(*g.shape, seed=3)).to(torch.bfloat16),
                               torch.float32, {}),
    "float32 vs bf16 golden": (lambda g: g.float() + 1e-3 * randn(*g.shape, seed=3), torch.bfloat16, {}),
    "float32 noisy": (lambda g: g + 0.3 * randn(*g.shape, seed=3), torch.float32, {}),
    "zeros in the golden": (lambda g: g.masked_fill(g.abs() < 0.3, 0.5), torch.float32, {}),
    "rtol off": (lambda g: g + 0.3 * randn(*g.shape, seed=3), torch.float32, {"rtol": inf}),
    "block float atol": (lambda g: (g.float() + 1e-2 * randn(*g.shape, seed=3)).to(torch.bfloat16), torch.bfloat16,
                         {"dtype": "bfloat8_b"}),
    "a NaN and an inf in one chunk": (lambda g: g.clone().index_fill_(0, torch.tensor([7, 70_001]), nan)
                                      .index_fill_(0, torch.tensor([90_000]), inf), torch.float32, {}),
}


@pytest.mark.skipif(not __import__("ttreport.metrics").metrics.NATIVE, reason="ttreport._fold is not built")
@pytest.mark.parametrize("case", list(_FOLD_CASES))
@pytest.mark.parametrize("n", [1, 13, 100_003])
def test_the_c_pass_gives_the_numpy_paths_figures(monkeypatch, case, n):
    make, golden_dtype, kw = _FOLD_CASES[case]
    g = randn(max(n, 100_003), seed=2).to(golden_dtype)
    a = make(g)
    a, g = a[:n].contiguous(), g[:n].contiguous()
    native, reference = _both_ways(monkeypatch, a, g, chunk_size=4096, **kw)
    exact = ("passed", "mismatched", "worst_index", "worst_actual", "worst_golden", "max_abs_error", "max_rel_error",
             "max_ulp", "atol", "close_ok")
    for field in exact:
        got, want = getattr(native, field), getattr(reference, field)
        assert got == want or (got != got and want != want), (field, got, want)
    for field in ("pcc", "mean_abs_error"):
        got, want = getattr(native, field), getattr(reference, field)
        assert got == pytest.approx(want, rel=1e-6, abs=1e-12, nan_ok=True), (field, got, want)
    assert native.reason.split("; ")[0] == reference.reason.split("; ")[0]


# -- values read from tensor files with no torch (ttreport.ptfile.read_array), as `ttreport compare` reads them ---

_FILE_CASES = {
    # name: (actual, golden); chunk_size 4096 below, so the larger ones take several chunks and threads
    "bf16": lambda: ((randn(70, 130) + 1e-2 * randn(70, 130, seed=3)).to(torch.bfloat16), randn(70, 130)
                     .to(torch.bfloat16)),
    "bf16 against float32": lambda: ((randn(9000) + 0.1).to(torch.bfloat16), randn(9000) + 0.1),
    "float32 with NaN and inf": lambda: (randn(5000).index_fill_(0, torch.tensor([3, 4000]), nan),
                                         randn(5000).index_fill_(0, torch.tensor([4000]), inf)),
    "float16": lambda: (randn(300).half(), (randn(300) + 1e-3).half()),
    "a constant bf16": lambda: (torch.ones(64, 32, dtype=torch.bfloat16), torch.ones(64, 32, dtype=torch.bfloat16)),
    "int32": lambda: (torch.arange(100, dtype=torch.int32), torch.arange(100, dtype=torch.int32).flip(0)),
    "bool": lambda: (torch.tensor([True, False, True]), torch.tensor([True, True, True])),
    "non-contiguous": lambda: (randn(40, 50).t(), (randn(40, 50) + 0.5).t()),
}


@pytest.mark.parametrize("native", [True, False], ids=["C pass", "numpy path"])
@pytest.mark.parametrize("case", list(_FILE_CASES))
def test_values_read_from_files_without_torch_compare_as_the_tensors_do(tmp_path, monkeypatch, case, native):
    from ttreport import metrics, ptfile

    monkeypatch.setattr(metrics, "NATIVE", native and metrics.NATIVE)
    a, g = _FILE_CASES[case]()
    arrays = []
    for name, value in (("a", a), ("g", g)):
        torch.save(value, tmp_path / f"{name}.pt")
        with open(tmp_path / f"{name}.pt", "rb") as f:
            arrays.append(ptfile.read_array(f, ptfile.inspect_tensor(f, (tmp_path / f"{name}.pt").stat().st_size)))
    assert isinstance(arrays[0], ptfile.BFloat16Bits) == (a.dtype == torch.bfloat16)
    from_files = compare_tensors(*arrays, chunk_size=4096).to_dict()
    from_tensors = compare_tensors(a, g, chunk_size=4096).to_dict()
    assert from_files.keys() == from_tensors.keys()
    for key, want in from_tensors.items():
        got = from_files[key]
        assert got == want or (got != got and want != want), (key, got, want)  # NaN == NaN here
