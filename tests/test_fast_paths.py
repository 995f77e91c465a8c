"""device_sim's fast paths (issue 14) give the values, buffers and records of the general path, bit for bit.

The element-wise fast path computes bfloat16 add/sub/mul/div in torch's bfloat16 kernels
(float32 math, rounded once) instead of converting to float32 and rounding back, and builds the output from
its input's spec. Held to: the outputs saved before it existed (tests/data/sim_corpus.pt), the float32
formula it replaces over many random shapes and values and over every bfloat16 bit pattern, and the
general path's buffers and placement. Bits are compared, except a NaN's sign and payload (NaN stays NaN).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import torch

import device_sim as ttnn
from device_sim import dtypes
from device_sim.allocator import OutOfMemoryError
from device_sim.ops import common, eltwise

DATA = Path(__file__).parent / "data"
NATIVE = {  # op -> the float32 formula the general path computes before rounding to bfloat16
    "add": torch.add, "sub": torch.sub, "rsub": lambda a, b: torch.sub(b, a), "mul": torch.mul,
    "div": lambda a, b: _bfloat16_quotient(torch.div(a, b)), "divide": lambda a, b: _bfloat16_quotient(torch.div(a, b)),
}


def _bfloat16_quotient(q: torch.Tensor) -> torch.Tensor:
    """A bfloat16 division stores 0/0's NaN as +inf (eltwise._stored_nan; tt-metal's test_binary_fp32.py)."""
    return torch.nan_to_num(q, nan=float("inf"), posinf=float("inf"), neginf=float("-inf"))


def _corpus_module():
    spec = importlib.util.spec_from_file_location("make_sim_corpus", DATA / "make_sim_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bits of a tensor, so that -0.0 != 0.0."""
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.view(torch.int16)
    if t.dtype == torch.float32:
        return t.view(torch.int32)
    return t


def assert_same_bits(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    """Every value the same bits (so -0.0 != 0.0), and NaN where the other is NaN.

    A NaN's sign and payload bits are not compared: torch's own bfloat16 kernels write 0x7FC0 in their
    scalar loops (broadcasts, a vector's tail) and 0xFFFF in vector lanes, so they are not a value either path
    keeps (docs: bench/README.md, "What the fast paths keep").
    """
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, want.dtype, got.shape, want.shape)
    diff = bits(got) != bits(want)
    if got.is_floating_point():
        diff &= ~(got.isnan() & want.isnan())
    if diff.any():
        i = diff.nonzero()[0].tolist()
        raise AssertionError(f"{what}: {int(diff.sum())} of {diff.numel()} values differ; first at {i}: "
                             f"{got[tuple(i)].item()!r} against {want[tuple(i)].item()!r}")


# Ops whose values are torch's float32 exp, sqrt, erf, tanh or pow: those differ by a few ulps, and at inf, between
# torch's kernels for one instruction set and another (AVX2 against AVX512: sqrt 1 ulp in 94 of 1,024 corpus
# values, gelu(inf) inf against NaN). The corpus was saved on one machine; on another such an op's output must
# be, value by value, the corpus's or the general path's on this machine (the float32 function, rounded once).
LIBM = frozenset({"pow", "exp", "sqrt", "gelu", "silu", "sigmoid", "tanh"})


def test_outputs_match_those_saved_before_the_fast_paths(device, monkeypatch):
    corpus = torch.load(DATA / "sim_corpus.pt", weights_only=True)
    make = _corpus_module()
    assert len(corpus["cases"]) > 200
    assert {op for op, *_ in corpus["cases"]} >= LIBM
    for op, args, kwargs, want in corpus["cases"]:
        got = make.run((op, args, kwargs), device)
        what = f"ttnn.{op} on {[a[1] if isinstance(a, tuple) else a for a in args]} {kwargs}"
        if op in ("div", "divide") and want.dtype == torch.bfloat16:  # saved before 0/0 was stored as +inf
            want = _bfloat16_quotient(want)
        if op in LIBM:
            with monkeypatch.context() as m:
                m.setattr(eltwise, "_TAKEN", dict.fromkeys(eltwise.UNARY, False))  # the general path: float32
                general = make.run((op, args, kwargs), device)
            want = torch.where(bits(got) == bits(want), want, general)
        assert_same_bits(got, want, what)


def awkward(shape, g: torch.Generator) -> torch.Tensor:
    return _corpus_module().awkward(shape, g)


SHAPES = [((32, 32), (32, 32)), ((1, 1), (1, 1)), ((7, 45), (7, 45)), ((3, 33, 65), (3, 33, 65)),
          ((2, 64, 96), (1, 96)), ((1, 3, 32, 32), (1, 1, 32, 1)), ((5, 1), (5, 70)), ((4, 31, 17), (4, 31, 17)),
          ((1, 1, 1024), (1, 1, 1024)), ((2, 2, 40, 40), (2, 2, 40, 40)),
          ((7, 45), (1, 1)), ((3, 33, 65), (1,)), ((1, 1), (33, 65))]  # one-element operands: torch's scalar loops


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_bfloat16_ops_equal_the_float32_result_rounded_over_random_shapes_and_values(device, name):
    g = torch.Generator().manual_seed(sorted(NATIVE).index(name))
    op = getattr(ttnn, name)
    for layout in (ttnn.TILE, ttnn.ROW_MAJOR):
        for sa, sb in SHAPES:
            for _ in range(3):
                a = ttnn.from_torch(awkward(sa, g), dtype=ttnn.bfloat16, layout=layout, device=device)
                b = ttnn.from_torch(awkward(sb, g), dtype=ttnn.bfloat16, layout=layout, device=device)
                want = NATIVE[name](a.value.float(), b.value.float()).to(torch.bfloat16)
                assert_same_bits(op(a, b).value, want, f"ttnn.{name} {sa} {sb} {layout!r}")


SCALARS = [0.1, 3, -2.5, 7, 0, -0.0, 1e-40, 3.4e38, 1e39, float("nan"), float("inf"), -float("inf"), 2**40, 1 / 3]


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_bfloat16_ops_with_a_python_number_equal_the_float32_result_rounded(device, name):
    g = torch.Generator().manual_seed(99)
    op = getattr(ttnn, name)
    for shape in [(32, 32), (3, 7, 45), (1,)]:
        a = ttnn.from_torch(awkward(shape, g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        for number in SCALARS:
            want = NATIVE[name](a.value.float(), number).to(torch.bfloat16)
            out = op(a, number)
            assert_same_bits(out.value, want, f"ttnn.{name}(a {shape}, {number!r})")
            assert out.memory_config_source == "inputs" and out.buffer.num_pages == a.buffer.num_pages


def test_every_bfloat16_pair_adds_and_multiplies_as_float32_rounded(device):
    # Every bfloat16 bit pattern against a spread of others: all exponents, denormals, NaNs and infinities.
    every = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16).reshape(256, 256)
    for shift in (1, 97, 255, 4096, 30001):
        other = every.reshape(-1).roll(shift).reshape(256, 256)
        a = ttnn.from_torch(every, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        b = ttnn.from_torch(other, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        for name in sorted(NATIVE):
            want = NATIVE[name](a.value.float(), b.value.float()).to(torch.bfloat16)
            assert_same_bits(getattr(ttnn, name)(a, b).value, want, f"ttnn.{name}, roll {shift}")


def test_every_bfloat16_value_with_a_number_is_the_float32_result_rounded(device):
    # A number goes into the bfloat16 kernels as a 0-dim tensor made once (eltwise._scalar): in bfloat16 where that
    # holds it exactly (add and sub read it so), else as torch wraps it (mul and div read it as float32). Every bit
    # pattern, in vector lanes and in a scalar loop's tail (7 columns), against the float32 formula rounded once.
    every = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    for values in (every.reshape(256, 256), every[:-2].reshape(-1, 7)):
        a = ttnn.from_torch(values, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        for number in (2.0, -0.375, 3, 2**40, float("inf"), 0.1, 1 / 3, 257, 1e-40):
            for name in sorted(NATIVE):
                want = NATIVE[name](a.value.float(), number).to(torch.bfloat16)
                assert_same_bits(getattr(ttnn, name)(a, number).value, want, f"ttnn.{name}(a, {number!r})")


def _spec(t):
    b = t.buffer
    return (t.dtype, t.layout, t.tile, t.memory_config(), tuple(t.shape), b.buffer_type, b.buffer_layout,
            b.max_size_per_bank, b.page_size, b.num_pages, b.num_banks, b.cores)


@pytest.mark.parametrize("memory", [ttnn.DRAM_MEMORY_CONFIG, ttnn.L1_MEMORY_CONFIG], ids=["dram", "l1"])
@pytest.mark.parametrize("dtype", [ttnn.bfloat16, ttnn.float32, ttnn.bfloat8_b, ttnn.int32])
def test_an_element_wise_output_gets_the_buffer_its_spec_allocates(device, memory, dtype):
    for shape in [(32, 32), (1, 1), (3, 5, 70), (2, 1, 33, 100), (1, 1, 32, 2048)]:
        layouts = [ttnn.TILE] if dtype == ttnn.bfloat8_b else [ttnn.TILE, ttnn.ROW_MAJOR]
        for layout in layouts:
            values = torch.randint(-3, 4, shape).float()
            a = ttnn.from_torch(values, dtype=dtype, layout=layout, device=device, memory_config=memory)
            b = ttnn.from_torch(values, dtype=dtype, layout=layout, device=device, memory_config=memory)
            fast = ttnn.add(a, b)
            asked = ttnn.add(a, b, memory_config=memory)  # the inputs' config, asked for: the fast path too
            general = ttnn.add(a, b, memory_config=memory, dtype=dtype)  # an explicit dtype: the general path
            assert _spec(fast) == _spec(general) == _spec(asked), (shape, layout)
            assert fast.memory_config_source == "inputs"
            assert general.memory_config_source == asked.memory_config_source == "argument"
            assert_same_bits(fast.value, general.value, f"{shape} {layout!r}")
            assert_same_bits(asked.value, general.value, f"{shape} {layout!r}, memory_config=")
            assert len({fast.buffer.address, asked.buffer.address, general.buffer.address}) == 3


def _programs(device, op, *args, **kwargs):
    """The output of op(*args, **kwargs) and the programs it launched, less their ids (a count over the process)."""
    heard = []
    memory = device.memory
    previous, memory.listener = memory.listener, lambda event, what: heard.append(
        what._replace(program_id=0) if event == "program" else event)
    try:
        return op(*args, **kwargs), [h for h in heard if not isinstance(h, str)]
    finally:
        memory.listener = previous


@pytest.mark.parametrize("name", sorted(NATIVE))
def test_a_memory_config_keyword_gives_the_general_paths_output_and_device_work(device, name):
    """A model passes memory_config= on most calls: the fast path takes those too, as the general path (an
    explicit dtype takes that) would make them: the config asked for, its rule, the bits, the same programs."""
    g = torch.Generator().manual_seed(7)
    dram, l1 = ttnn.DRAM_MEMORY_CONFIG, ttnn.L1_MEMORY_CONFIG
    sharded = ttnn.create_sharded_memory_config((64, 64), ttnn.CoreGrid(y=1, x=2), ttnn.ShardStrategy.HEIGHT)
    op = getattr(ttnn, name)

    def tensor(shape, memory):
        return ttnn.from_torch(torch.randn(shape, generator=g) + 3, dtype=ttnn.bfloat16, layout=ttnn.TILE,
                               device=device, memory_config=memory)

    cases = [  # (a, b, memory_config asked for)
        (tensor((64, 64), dram), tensor((64, 64), dram), dram),  # the inputs' own: the "inputs" tensor
        (tensor((64, 64), dram), tensor((64, 64), dram), l1),  # another config
        (tensor((64, 64), l1), tensor((64, 64), dram), l1),  # the inputs disagree
        (tensor((64, 64), sharded), tensor((64, 64), sharded), sharded),  # sharded alike: the shards are the CBs
        (tensor((1, 64), dram), tensor((64, 64), dram), dram),  # a broadcast
        (tensor((64, 64), dram), 2.5, l1),  # a number
    ]
    for i, (a, b, memory) in enumerate(cases):
        asked, heard = _programs(device, op, a, b, memory_config=memory)
        general, want = _programs(device, op, a, b, memory_config=memory, dtype=ttnn.bfloat16)
        assert _spec(asked) == _spec(general) and asked.memory_config_source == general.memory_config_source, i
        assert_same_bits(asked.value, general.value, f"ttnn.{name}, case {i}")
        assert heard == want and heard, i
    with ttnn.memory(l1):  # an explicit config overrides the block's
        inside = op(cases[0][0], cases[0][1], memory_config=dram)
    assert inside.memory_config() == dram and inside.memory_config_source == "argument"
    a, b = tensor((32, 32), dram), tensor((32, 32), l1)
    with ttnn.strict(), pytest.raises(ValueError, match="strict mode: inputs differ"):
        op(a, b, memory_config=dram)


@pytest.mark.parametrize("name", ["relu", "exp", "gelu", "softmax", "matmul", "linear", "multiply"])
def test_any_ops_memory_config_keyword_gives_the_general_paths_output(device, name, monkeypatch):
    """ops.common.output() gives an op whose memory_config= is its first input's config (by identity or equal)
    the tensor the "inputs" rule builds, named "argument": the general path's spec, bits and programs."""
    g = torch.Generator().manual_seed(3)
    x, y = (ttnn.from_torch(torch.randn(64, 64, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
            for _ in range(2))
    equal = ttnn.MemoryConfig(ttnn.TensorMemoryLayout.INTERLEAVED, ttnn.BufferType.DRAM)
    assert equal == x.memory_config() and equal is not x.memory_config()
    op = getattr(ttnn, name)
    args, kwargs = ((x, y) if name in ("matmul", "linear", "multiply") else (x,)), (
        {"dim": -1} if name == "softmax" else {})
    real = common.like_output
    for memory in (x.memory_config(), equal, ttnn.L1_MEMORY_CONFIG):
        built = []  # what like_output gave: a tensor when the fast path made the output

        def noting(*a, built=built):
            built.append(real(*a))
            return built[-1]

        with monkeypatch.context() as m:
            m.setattr(common, "like_output", noting)
            fast, heard = _programs(device, op, *args, memory_config=memory, **kwargs)
        assert any(t is not None for t in built) == (memory is not ttnn.L1_MEMORY_CONFIG), memory
        with monkeypatch.context() as m:
            m.setattr(common, "like_output", lambda *_: None)  # Tensor._create's own way, every time
            general, want = _programs(device, op, *args, memory_config=memory, **kwargs)
        assert _spec(fast) == _spec(general) and fast.memory_config_source == general.memory_config_source == "argument"
        assert_same_bits(fast.value, general.value, f"ttnn.{name}, {memory!r}")
        assert heard == want


def test_the_fast_path_keeps_the_placement_rules(device):
    a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device,
                        memory_config=ttnn.L1_MEMORY_CONFIG)
    with ttnn.memory(ttnn.L1_MEMORY_CONFIG):
        inside = ttnn.add(a, a)
    assert inside.memory_config() == ttnn.L1_MEMORY_CONFIG and inside.memory_config_source == "context"
    mixed = ttnn.add(a, b)  # inputs disagree: the process default
    assert mixed.memory_config_source == "default"
    with ttnn.strict(), pytest.raises(ValueError, match="strict mode: inputs differ"):
        ttnn.add(a, b)
    assert ttnn.add(b, b).memory_config() == ttnn.L1_MEMORY_CONFIG


def test_the_fast_path_keeps_the_errors_and_output_tensor(device):
    a = ttnn.from_torch(torch.ones(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    with pytest.raises(RuntimeError, match=r"shapes \[32, 64\] and \[32, 32\] do not broadcast"):
        ttnn.add(a, b)
    target = ttnn.from_torch(torch.zeros(32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    address = target.buffer.address
    assert ttnn.add(a, a, output_tensor=target) is target
    assert target.buffer.address == address and torch.equal(target.value, torch.full((32, 64), 2.0).bfloat16())
    c = ttnn.add(a, a)
    c.deallocate()
    with pytest.raises(RuntimeError, match="was deallocated"):
        ttnn.add(c, a)


def test_a_broadcast_result_shaped_unlike_its_first_input_takes_the_general_path(device):
    a = ttnn.from_torch(torch.ones(1, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    b = ttnn.from_torch(torch.ones(64, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    out = ttnn.add(a, b)
    assert tuple(out.shape) == (64, 32) and out.buffer.num_pages == dtypes.num_pages(ttnn.TILE, (64, 32))


def test_an_output_that_does_not_fit_says_so_and_leaves_memory_as_it_was(device):
    # L1 holds 1,400,832 B per bank over 64 banks; two inputs of ~40 % each leave no room for the sum.
    big = torch.ones(32 * 64, 32 * 340)
    a = ttnn.from_torch(big, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, memory_config=ttnn.L1_MEMORY_CONFIG)
    b = ttnn.from_torch(big, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, memory_config=ttnn.L1_MEMORY_CONFIG)
    live = sorted(buf.buffer_id for buf in device.memory.live_buffers())
    with pytest.raises(OutOfMemoryError, match=r"Out of L1 memory on device 0: requested \d+ B per bank"):
        ttnn.add(a, b)
    assert sorted(buf.buffer_id for buf in device.memory.live_buffers()) == live


@pytest.mark.parametrize("name", sorted(eltwise.UNARY))
def test_unary_ops_on_bfloat16_equal_the_float32_result_rounded_for_every_bit_pattern(device, name):
    """A unary op runs in torch's bfloat16 kernel where that kernel gives the float32 result rounded
    (eltwise.bfloat16_kernel_exact, tried once per process) and is not slower, in float32 elsewhere: the bits of
    the float32 result rounded either way, for every input, contiguous or not."""
    every = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    fn = eltwise.UNARY[name]
    for shape in [(256, 256), (1, 65536), (8192, 8), (100, 7)]:  # tile-aligned rows, one long row, short rows, tails
        x = every[: shape[0] * shape[1]].reshape(shape)
        for layout in (ttnn.TILE, ttnn.ROW_MAJOR):
            a = ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=layout, device=device)
            want = fn(a.value.float()).to(torch.bfloat16)
            assert_same_bits(getattr(ttnn, name)(a).value, want, f"ttnn.{name} {shape} {layout!r}")
        t = ttnn.from_torch(x.t(), dtype=ttnn.bfloat16, device=device)  # a transposed view: torch's element loop
        assert_same_bits(getattr(ttnn, name)(t).value, fn(x.t().float()).to(torch.bfloat16), f"ttnn.{name} {shape}.t()")


def test_the_kernel_check_tells_a_bfloat16_kernel_that_rounds_twice():
    """A function whose bfloat16 kernel rounds between two steps is not taken for the float32 result rounded."""
    assert not eltwise.bfloat16_kernel_exact(lambda x: (x * 3) * 0.3)
    assert eltwise.bfloat16_kernel_exact(torch.relu)
    assert not eltwise.bfloat16_kernel_exact(torch.isnan)


# Ops that only move values (common.held): the op -> (the call, the same move on torch values).
MOVES = {
    "reshape": (lambda t: ttnn.reshape(t, (1, 2, 32, 48)), lambda v: v.reshape(1, 2, 32, 48)),
    "permute": (lambda t: ttnn.permute(t, (0, 1, 3, 2)), lambda v: v.permute(0, 1, 3, 2)),
    "transpose": (lambda t: ttnn.transpose(t, 1, 2), lambda v: v.transpose(1, 2)),
    "transpose WH": (lambda t: ttnn.transpose(t, -2, -1), lambda v: v.transpose(-2, -1)),
    "slice": (lambda t: ttnn.slice(t, [0, 0, 32, 0], [1, 1, 64, 32]), lambda v: v[:, :, 32:, :32]),
    "slice unaligned": (lambda t: ttnn.slice(t, [0, 0, 0, 0], [1, 1, 32, 16]), lambda v: v[:, :, :32, :16]),
    "concat": (lambda t: ttnn.concat([t, t], dim=-1), lambda v: torch.cat([v, v], -1)),
    "split": (lambda t: ttnn.split(t, 32, dim=2)[1], lambda v: v[:, :, 32:]),
    "repeat": (lambda t: ttnn.repeat(t, (1, 2, 1, 1)), lambda v: v.repeat(1, 2, 1, 1)),
    "squeeze": (lambda t: ttnn.squeeze(t, 0), lambda v: v.squeeze(0)),
    "to_memory_config": (lambda t: ttnn.to_memory_config(t, ttnn.L1_MEMORY_CONFIG), lambda v: v),
    "to_layout": (lambda t: ttnn.to_layout(t, ttnn.ROW_MAJOR_LAYOUT), lambda v: v),
    "clone": (lambda t: ttnn.clone(t), lambda v: v),
    "typecast float32": (lambda t: ttnn.typecast(t, ttnn.float32), lambda v: v),
    "typecast bfloat8_b": (lambda t: ttnn.typecast(t, ttnn.bfloat8_b), lambda v: v),
    "nlp_concat_heads": (lambda t: ttnn.experimental.nlp_concat_heads(t),
                         lambda v: v.transpose(1, 2).flatten(-2).unsqueeze(1)),
    "interleaved_to_sharded": (
        lambda t: ttnn.interleaved_to_sharded(t, ttnn.create_sharded_memory_config(
            (1, 1, 64, 64), ttnn.CoreGrid(y=2, x=1), ttnn.ShardStrategy.HEIGHT)), lambda v: v),
}


@pytest.mark.parametrize(("name", "dtype"), [
    (name, dtype) for name in sorted(MOVES) for dtype in ("bfloat16", "float32", "bfloat8_b")
    if not (dtype == "bfloat8_b" and name == "to_layout")])  # a block float has no ROW_MAJOR form
def test_a_move_gives_the_values_of_the_float32_round_trip(device, name, dtype):
    """A move takes its input's values as held (bfloat16 stays bfloat16) where it took them widened to float32 and
    rounded the result back: the same bits, for each dtype (a block float's blocks re-formed where a move changes
    them, as before)."""
    call, move = MOVES[name]
    torch.manual_seed(0)
    x = torch.randn(1, 1, 64, 48) * torch.logspace(-3, 3, 48)  # values across magnitudes, -0.0 among them
    x[0, 0, 0, :8] = -0.0
    t = ttnn.from_torch(x, dtype=getattr(ttnn, dtype), layout=ttnn.TILE, device=device)
    out = call(t)
    want = dtypes.to_device_values(move(t.value.float()), out.dtype)
    assert_same_bits(out.value, want.contiguous(), f"ttnn.{name} on {dtype}")



@pytest.mark.parametrize("name", sorted(eltwise.PLAIN))
def test_every_call_plain_takes_gives_run_s_output_and_device_work(device, name):
    """A binary op's plain() (the call with two operands and no keyword but memory_config=) is a second copy of
    its run(), kept for what bench 13 measures it saves; run() is its specification. The same call with the
    output's own dtype given takes run(): the same spec, memory rule, bits and programs, for each placement
    plain() handles (inputs alike, a broadcast, a number, ROW_MAJOR, L1, inputs that disagree, sharded alike), and
    the same program-cache entry (TT-NN's compute_program_hash reads no path)."""
    integers = getattr(eltwise.PLAIN[name], "takes_integers", False)
    dtypes_ = [ttnn.int32] if integers else [ttnn.bfloat16, ttnn.float32]
    g = torch.Generator().manual_seed(sorted(eltwise.PLAIN).index(name))
    op = getattr(ttnn, name)
    dram, l1 = ttnn.DRAM_MEMORY_CONFIG, ttnn.L1_MEMORY_CONFIG
    sharded = ttnn.create_sharded_memory_config((64, 64), ttnn.CoreGrid(y=1, x=2), ttnn.ShardStrategy.HEIGHT)

    def tensor(shape, dtype, memory=dram, layout=ttnn.TILE):
        values = torch.randint(1, 50, shape, generator=g) if integers else torch.randn(shape, generator=g) + 3
        return ttnn.from_torch(values, dtype=dtype, layout=layout, device=device, memory_config=memory)

    for dtype in dtypes_:
        number = 3 if integers else 2.5
        cases = [(tensor((64, 64), dtype), tensor((64, 64), dtype)),
                 (tensor((64, 64), dtype), tensor((1, 64), dtype)),
                 (tensor((64, 1), dtype), tensor((1, 64), dtype)),  # as many elements, each broadcast
                 (tensor((64, 64), dtype), number),
                 (tensor((3, 40), dtype, layout=ttnn.ROW_MAJOR), tensor((3, 40), dtype, layout=ttnn.ROW_MAJOR)),
                 (tensor((64, 64), dtype, l1), tensor((64, 64), dtype, l1)),
                 (tensor((64, 64), dtype, dram), tensor((64, 64), dtype, l1)),
                 (tensor((64, 64), dtype, sharded), tensor((64, 64), dtype, sharded))]
        for i, (a, b) in enumerate(cases):
            what = f"ttnn.{name} {dtype!r}, case {i}"
            device.clear_program_cache()
            try:
                fast, heard = _programs(device, op, a, b)
            except Exception as e:  # the op refuses the operands (logical_and of a number): run() says the same
                with pytest.raises(type(e), match=re.escape(str(e))):
                    op(a, b, dtype=a.dtype)
                continue
            entries = device.num_program_cache_entries()
            general, want = _programs(device, op, a, b, dtype=fast.dtype)
            assert device.num_program_cache_entries() == entries, f"{what}: run()'s cache entry is not plain()'s"
            assert _spec(fast) == _spec(general) and fast.memory_config_source == general.memory_config_source, what
            assert_same_bits(fast.value, general.value, what)
            assert heard == want, what
