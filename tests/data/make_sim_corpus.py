"""How tests/data/sim_corpus.pt was made: device_sim's outputs before its fast paths (issue 14), saved
so that tests/test_fast_paths.py holds every later implementation to them bit for bit.

    .venv/bin/python tests/data/make_sim_corpus.py tests/data/sim_corpus.pt

Made at commit b9afa71 (before the fast paths). Each case is an op, its inputs (torch values and the
ttnn dtype each is placed in, or a Python number) and keywords, and the output's device values. The
inputs mix ordinary values with the awkward ones: NaN, +-inf, +-0, bfloat16 denormals, values near
bfloat16's largest, and pairs whose float32 sum needs more bits than bfloat16 holds (double rounding).
matmul cases use values whose float32 sums are exact (small multiples of a power of two), so their
outputs do not depend on the BLAS's summation order and the file holds on any machine.
Regenerate it only when device_sim's numerics change on purpose, and say so in the commit.
"""

from __future__ import annotations

import sys

import torch

import device_sim as ttnn

SEED = 1414


def awkward(shape, g: torch.Generator) -> torch.Tensor:
    """float32 values: normal ones with a sprinkling of every special kind of bfloat16 value."""
    x = torch.randn(shape, generator=g) * torch.exp2(torch.randint(-20, 20, shape, generator=g).float())
    flat = x.view(-1)
    n = flat.numel()
    specials = torch.tensor([float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-39, -5e-40, 9.2e-41,
                             3.3e38, -3.3e38, 1.0 + 2**-9, 1.0 + 2**-8 + 2**-20, 65504.0, 2**-126])
    where = torch.randint(0, n, (max(1, n // 8),), generator=g)
    flat[where] = specials[torch.randint(0, len(specials), where.shape, generator=g)]
    return x


def exact_ints(shape, g: torch.Generator, scale: float = 0.25) -> torch.Tensor:
    """Small integers times `scale`: every float32 sum of their products is exact."""
    return torch.randint(-6, 7, shape, generator=g).float() * scale


def cases():
    """(op name, [(torch values, ttnn dtype name) or a number], keywords) for every case of the corpus."""
    g = torch.Generator().manual_seed(SEED)
    bf, f32, b8 = "bfloat16", "float32", "bfloat8_b"  # by name: the file loads with weights_only=True
    out = []
    shapes = (((32, 32), (32, 32)), ((2, 8, 40), (2, 8, 40)), ((1, 1, 32, 48), (1, 1, 1, 48)), ((40, 32), (1, 32)))
    pairs = ((bf, bf), (bf, f32), (f32, f32), (b8, bf))
    for op in ("add", "sub", "mul", "div", "rsub", "maximum", "minimum", "eq", "lt", "pow"):
        main = op in ("add", "sub", "mul", "div")  # every shape and dtype pair; the others fewer
        for shape_a, shape_b in shapes if main else shapes[::2]:
            for da, db in pairs if main else pairs[::2]:
                out.append((op, [(awkward(shape_a, g), da), (awkward(shape_b, g), db)], {}))
        out.append((op, [(awkward((16, 64), g), bf), 0.1], {}))
        out.append((op, [(awkward((16, 64), g), bf), 3], {}))
        out.append((op, [2.5, (awkward((16, 64), g), bf)], {}))
        for dtype in (f32, b8, bf):
            out.append((op, [(awkward((16, 64), g), bf), (awkward((16, 64), g), bf)], {"dtype": dtype}))
    for op in ("exp", "relu", "neg", "abs", "sqrt", "reciprocal", "gelu", "silu", "sigmoid", "tanh"):
        for dt in (bf, f32, b8):
            out.append((op, [(awkward((16, 64), g), dt)], {}))
    for sa, sb in (((32, 32), (32, 32)), ((32, 96), (96, 64)), ((2, 1, 32, 64), (64, 32)), ((3, 32, 32), (3, 32, 32)),
                   ((1, 1, 7, 40), (40, 9))):
        for da, db in ((bf, bf), (bf, f32), (f32, f32), (b8, bf), (b8, b8)):
            out.append(("matmul", [(exact_ints(sa, g), da), (exact_ints(sb, g), db)], {}))
        out.append(("matmul", [(exact_ints(sa, g), bf), (exact_ints(sb, g), bf)], {"dtype": f32}))
        a, b = exact_ints(sa, g), exact_ints(sb, g)
        a.view(-1)[3], b.view(-1)[5] = float("nan"), float("inf")
        out.append(("matmul", [(a, bf), (b, bf)], {}))
        out.append(("linear", [(exact_ints(sa, g), bf), (exact_ints(sb, g), bf)],
                    {"bias": (exact_ints((1, sb[-1]), g), bf)}))
        out.append(("matmul", [(exact_ints(sa, g, 2.0**-130), bf), (exact_ints(sb, g, 2.0**5), bf)], {}))
    return out


def stored(values: torch.Tensor, dtype: str) -> torch.Tensor:
    # bfloat16 and block-float inputs are kept as bfloat16 (half the bytes; from_torch rounds them the same).
    return values if dtype == "float32" else values.bfloat16()


def place(v, device):
    if isinstance(v, tuple):
        values, dtype = v
        return ttnn.from_torch(values, dtype=getattr(ttnn, dtype), layout=ttnn.TILE, device=device)
    return v


def run(case, device) -> torch.Tensor:
    """The case's output values, as the device holds them."""
    op, args, kwargs = case
    kwargs = {k: getattr(ttnn, v) if k == "dtype" else place(v, device) for k, v in kwargs.items()}
    return getattr(ttnn, op)(*[place(a, device) for a in args], **kwargs).value


if __name__ == "__main__":
    device = ttnn.open_device(0)
    all_cases = cases()
    small = lambda v: (stored(*v), v[1]) if isinstance(v, tuple) else v  # noqa: E731
    all_cases = [(op, [small(a) for a in args], {k: small(v) for k, v in kwargs.items()})
                 for op, args, kwargs in all_cases]
    saved = [(op, args, kwargs, run((op, args, kwargs), device)) for op, args, kwargs in all_cases]
    ttnn.close_device(device)
    torch.save({"seed": SEED, "cases": saved}, sys.argv[1])
    print(f"{len(saved)} cases -> {sys.argv[1]}")
