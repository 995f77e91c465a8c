"""One CLIP text encoder layer's device operations in the order TT-NN's profiler lists them
(tests/data/ops_perf/wh_clip_encoder_2_first40.csv, rows 5-40), at a small width: hidden 64, 2 heads."""
import torch
import ttnn

device = ttnn.open_device(device_id=0)
T, H, D = 19, 2, 32


def t(*shape):
    return ttnn.from_torch(torch.randn(*shape), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device)


x, pos, mask = t(1, 1, T, H * D), t(1, 1, T, H * D), t(1, H, T, T)
w, b, g = t(H * D, H * D), t(1, H * D), t(1, H * D)
w1, b1, w2 = t(H * D, 4 * H * D), t(1, 4 * H * D), t(4 * H * D, H * D)
x = ttnn.add(x, pos)
h = ttnn.layer_norm(x, weight=g, bias=b)
q, k, v = (ttnn.linear(h, w, bias=b) for _ in range(3))
q = ttnn.multiply(q, 0.125)
q, k, v = (ttnn.reshape(y, (1, T, H, D)) for y in (q, k, v))
q, k, v = (ttnn.transpose(y, 1, 2) for y in (q, k, v))
s = ttnn.add(ttnn.matmul(q, ttnn.transpose(k, -2, -1)), mask)
o = ttnn.matmul(ttnn.softmax(s, dim=-1), v)
o = ttnn.reshape(ttnn.transpose(o, 1, 2), (1, 1, T, H * D))
x = ttnn.add(x, ttnn.linear(o, w, bias=b))
h = ttnn.linear(ttnn.layer_norm(x, weight=g, bias=b), w1, bias=b1)
x = ttnn.multiply(x, 0.125)
h = ttnn.multiply(h, ttnn.add(ttnn.erf(h), 1.0))
x = ttnn.multiply(x, 0.125)
x = ttnn.add(x, ttnn.linear(h, w2, bias=b))
h = ttnn.layer_norm(x, weight=g, bias=b)
q, k, v = (ttnn.linear(h, w, bias=b) for _ in range(3))
q = ttnn.reshape(ttnn.multiply(q, 0.125), (1, T, H, D))
ttnn.close_device(device)
