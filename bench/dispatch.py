"""6. Dispatch: the registry against the op's body, and device_sim's ops against torch's own.

"torch's time" is the torch call a user would write for the same tensors: `torch.add(a, b)` and
`torch.matmul(a, b)` on bfloat16 torch tensors holding the same values, under the same torch thread
setting (open_device sets device_sim's host_threads, one by default, for both sides). Each pair is
timed back to back, alternating, and the median of the per-pair ratios is judged, so a neighbour's
burst on the shared cores hits both sides alike. The bfloat16 matmul runs torch's bfloat16 kernel
where it keeps device_sim's rule and is at least twice as fast as the float32 path (device_sim/matmul_kernel.py;
a figure says which ran: on a CPU without AMX or AVX512-BF16 torch's bfloat16 kernel is 50-110x slower, and
torch's side of the matmul and layer pairs is then that slow kernel), so its outputs are shown against the
float32 path's (the products summed by torch's float32 matmul, rounded once: device_sim's outputs
before issue 14's round 6), and both against float64-exact sums rounded once: elements that differ.
The encoder layer (_layer_ops) is the op mix a model runs: linears, head splits by reshape and permute,
attention matmuls, softmax, gelu, layer norms; torch's side is the same layer written in torch.
The chunked prefill (_chunked_prefill) is nightly sdpa/test_sdpa_chunked.py's op, chunk after chunk over a paged
KV cache; torch's side is the causal scaled_dot_product_attention of the whole sequence, that test's reference.
"""

from __future__ import annotations

import gc
import time

import torch

import device_sim as ttnn
from bench.common import Figure, at_most, info, median, small_inputs
from device_sim import matmul_kernel


def _pairs(ours, theirs, n: int, repeats: int) -> tuple[float, float, float]:
    """(median seconds per call of `ours`, of `theirs`, median of the per-pair ratios)."""

    def loop(fn):
        def calls():
            for _ in range(n):
                fn()  # each result is dropped at once, as a model drops its temporaries

        return calls

    ours_loop, theirs_loop = loop(ours), loop(theirs)
    ours_loop(), theirs_loop()
    ratios, o_times, t_times = [], [], []
    for _ in range(repeats):
        gc.collect()  # once a pair (a full collection takes ~0.1-0.4 s here): neither side pays for the other's garbage
        o, t = _seconds(ours_loop), _seconds(theirs_loop)
        ratios.append(o / t), o_times.append(o / n), t_times.append(t / n)
    return median(o_times), median(t_times), median(ratios)


def _seconds(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _layer_ops(device, seq: int = 128, hidden: int = 768, heads: int = 12):
    """One encoder layer's ops at BERT-base's sizes, as device_sim calls and as the torch calls on the same
    bfloat16 values: (ours, theirs). Its attention splits heads with reshape and permute, as tt-metal's
    functional BERT does; every op is one a model calls with a bfloat16 TILE tensor."""
    g = torch.Generator().manual_seed(1)
    d = hidden // heads

    def both(*shape, scale=1.0):
        x = (torch.randn(*shape, generator=g) * scale).bfloat16()
        return x, ttnn.from_torch(x, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)

    x, X = both(1, seq, hidden)
    wqkv, WQKV = both(hidden, 3 * hidden, scale=0.02)
    wo, WO = both(hidden, hidden, scale=0.02)
    w1, W1 = both(hidden, 4 * hidden, scale=0.02)
    w2, W2 = both(4 * hidden, hidden, scale=0.02)
    gamma, GAMMA = both(hidden)
    beta, BETA = both(hidden)
    F = torch.nn.functional

    def ours():
        qkv = ttnn.linear(X, WQKV)
        q, k, v = (ttnn.permute(ttnn.reshape(ttnn.slice(qkv, [0, 0, i * hidden], [1, seq, (i + 1) * hidden]),
                                             (1, seq, heads, d)), (0, 2, 1, 3)) for i in range(3))
        s = ttnn.softmax(ttnn.multiply(ttnn.matmul(q, ttnn.transpose(k, -2, -1)), d ** -0.5), dim=-1)
        ctx = ttnn.reshape(ttnn.permute(ttnn.matmul(s, v), (0, 2, 1, 3)), (1, seq, hidden))
        h = ttnn.layer_norm(ttnn.add(X, ttnn.linear(ctx, WO)), weight=GAMMA, bias=BETA)
        f = ttnn.linear(ttnn.gelu(ttnn.linear(h, W1)), W2)
        return ttnn.layer_norm(ttnn.add(h, f), weight=GAMMA, bias=BETA)

    def theirs():
        qkv = x @ wqkv
        q, k, v = (qkv[..., i * hidden:(i + 1) * hidden].reshape(1, seq, heads, d).permute(0, 2, 1, 3)
                   for i in range(3))
        s = torch.softmax(q @ k.transpose(-2, -1) * d ** -0.5, -1)
        ctx = (s @ v).permute(0, 2, 1, 3).reshape(1, seq, hidden)
        h = F.layer_norm(x + ctx @ wo, (hidden,), gamma, beta)
        f = F.gelu(h @ w1) @ w2
        return F.layer_norm(h + f, (hidden,), gamma, beta)

    return ours, theirs


def _chunked_prefill(device, seq: int, chunk: int, heads: int = 8, head_dim: int = 128):
    """A chunked prefill as nightly sdpa/test_sdpa_chunked.py runs it (Llama2-70B's 8 query heads on one KV head,
    bfloat8_b paged KV in blocks of 64, chunk_start_idx a tensor), chunk after chunk over a sequence of `seq`; and
    torch's causal scaled_dot_product_attention over the same sequence, the test's own reference."""
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, n, seq, head_dim, generator=g) for n in (heads, 1, 1))
    blocks = seq // 64
    paged = [ttnn.from_torch(t.reshape(1, blocks, 64, head_dim).transpose(0, 1), dtype=ttnn.bfloat8_b,
                             layout=ttnn.TILE, device=device) for t in (k, v)]
    table = ttnn.from_torch(torch.arange(blocks, dtype=torch.int32)[None], dtype=ttnn.int32, device=device)
    chunks = [(ttnn.from_torch(q[:, :, i: i + chunk], dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device),
               ttnn.from_torch(torch.tensor([i], dtype=torch.int32), dtype=ttnn.int32, device=device))
              for i in range(0, seq, chunk)]
    config = ttnn.SDPAProgramConfig(compute_with_storage_grid_size=(8, 8), q_chunk_size=128, k_chunk_size=128)

    def ours():
        for q_chunk, start in chunks:
            ttnn.transformer.chunked_scaled_dot_product_attention(q_chunk, *paged, table, chunk_start_idx_tensor=start,
                                                                  program_config=config)

    kk, vv = k.expand(1, heads, seq, head_dim), v.expand(1, heads, seq, head_dim)
    return ours, lambda: torch.nn.functional.scaled_dot_product_attention(q, kk, vv, is_causal=True)


def run(tmp, *, n_ops: int, repeats: int, big_ops: int = 40, matmul_ops: int = 8, big: int = 1024,
        layers: int = 10, seq: int = 128, prefill: int = 4096, prefill_chunk: int = 1024) -> list[Figure]:
    device = ttnn.open_device(0)
    try:
        a, b = small_inputs(device)
        body = ttnn.add.op.function
        assert ttnn.get_hook() is None
        w, d, dispatch_ratio = _pairs(lambda: ttnn.add(a, b), lambda: body(a, b), n_ops, repeats)
        ta, tb = a.value, b.value  # bfloat16 torch tensors with the same values
        small_ours, small_torch, small_ratio = _pairs(lambda: ttnn.add(a, b), lambda: torch.add(ta, tb), n_ops, repeats)
        g = torch.Generator().manual_seed(0)
        xa, xb = torch.randn(big, big, generator=g).bfloat16(), torch.randn(big, big, generator=g).bfloat16()
        A = ttnn.from_torch(xa, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        B = ttnn.from_torch(xb, dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        add_ours, add_torch, add_ratio = _pairs(lambda: ttnn.add(A, B), lambda: torch.add(xa, xb), big_ops, repeats)
        mm_ours, mm_torch, mm_ratio = _pairs(lambda: ttnn.matmul(A, B), lambda: torch.matmul(xa, xb),
                                             matmul_ops, repeats)
        fa, fb = xa.float(), xb.float()
        _, mm_f32, mm_f32_ratio = _pairs(lambda: ttnn.matmul(A, B), lambda: torch.matmul(fa, fb), matmul_ops, repeats)
        ours, float32_path = ttnn.to_torch(ttnn.matmul(A, B)), torch.matmul(fa, fb).bfloat16()
        exact = torch.matmul(xa.double(), xb.double()).float().bfloat16()
        differ = [int((ours != float32_path).sum()), int((ours != exact).sum()), int((float32_path != exact).sum())]
        layer_ours, layer_torch, layer_ratio = _pairs(*_layer_ops(device, seq), layers, repeats)
        prefill_ours, prefill_torch, prefill_ratio = _pairs(*_chunked_prefill(device, prefill, prefill_chunk), 1,
                                                            repeats)
    finally:
        ttnn.close_device(device)
    us, ms = 1e6, 1e3
    return [
        info("ttnn.add through the registry, no hook", w * us, "µs/op"),
        info("the op's body called directly", d * us, "µs/op"),
        at_most("registry dispatch / direct body (median of pairs)", dispatch_ratio, "x", 1.1),
        info(f"ttnn.add 32x32 bf16 / torch.add bf16 ({small_torch * us:.2g} µs)", small_ours * us, "µs/op"),
        at_most("ttnn.add 32x32 bf16 / torch.add (median of pairs)", small_ratio, "x", 3),
        info(f"ttnn.add {big}x{big} bf16 / torch.add bf16 ({add_torch * ms:.3g} ms)", add_ours * ms, "ms/op"),
        at_most(f"ttnn.add {big}x{big} bf16 / torch.add (median of pairs)", add_ratio, "x", 1.5),
        info(f"ttnn.matmul {big}^3 bf16 / torch.matmul bf16 ({mm_torch * ms:.3g} ms)", mm_ours * ms, "ms/op"),
        at_most(f"ttnn.matmul {big}^3 bf16 / torch.matmul bf16 (median of pairs)", mm_ratio, "x", 1.5),
        info(f"ttnn.matmul / torch.matmul float32, same values ({mm_f32 * ms:.3g} ms)", mm_f32_ratio, "x"),
        info("bf16 matmul kernel here: torch's bfloat16 (1), float32 path (0)",
             int(matmul_kernel.kernel_taken()), ""),
        info(f"ttnn.matmul {big}^3 outputs != float32 path's (of {big * big:,})", differ[0], "elements"),
        info(f"... != exact-then-rounded: ours / float32 path ({differ[1]} / {differ[2]})",
             differ[1] / max(differ[2], 1), "x"),
        info(f"an encoder layer's 25 ops, [1, {seq}, 768] bf16 (torch: {layer_torch * ms:.3g} ms)", layer_ours * ms,
             "ms"),
        info("... / the same layer in torch (median of pairs)", layer_ratio, "x"),
        info(f"chunked prefill, {prefill // prefill_chunk} x {prefill_chunk} tokens (torch: "
             f"{prefill_torch * ms:.3g} ms)", prefill_ours * ms, "ms"),
        info("... / torch's causal SDPA of them (median of pairs)", prefill_ratio, "x"),
    ]
