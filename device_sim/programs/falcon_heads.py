"""NlpCreateHeadsFalcon7BDeviceOperation (Falcon-7B's fused QKV split into heads), BERT's fused QKV split
(SplitFusedQKVAndSplitHeadsDeviceOperation, interleaved) and the KV-cache slice load.

tt-metal's ttnn/cpp/ttnn/operations/experimental/transformer/nlp_create_qkv_heads_falcon7b/device/
nlp_create_qkv_heads_falcon7b_program_factory.cpp: a block is one row of tiles of the [B, 1, S, 4672] input
(146 tiles: 142 of the 71 query heads, 2 each of the key and value heads); c_0 double-buffers a block (2 x 146
tiles in the input's format), on the cores split_work_to_cores gives the B * S / 32 blocks. Interleaved TILE
input only.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.falcon_heads import falcon7b_heads_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 1, 64, 4672), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = falcon7b_heads_program(x)
    >>> p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs], p.ranges
    ('NlpCreateHeadsFalcon7BDeviceOperation', [((0,), 292, 2048)], ((0, 0, 0, 1),))
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, Program, cached, grid_of, make_program, split_work
from device_sim.types import Layout


def falcon7b_heads_program(x) -> Program | None:
    """The factory's program for input `x` ([B, 1, S, 4672], interleaved TILE); None otherwise."""
    if x.device() is None or x.layout != Layout.TILE or x.is_sharded():
        return None
    shape = tuple(x._value.shape)
    dev = x.device()
    key = ("NlpCreateHeadsFalcon7BDeviceOperation", shape, x.dtype, grid_of(dev))

    def build():
        per_block = -(-shape[-1] // TILE)  # 146 tiles a row of tiles
        blocks = shape[0] * shape[1] * -(-shape[2] // TILE)
        return make_program("NlpCreateHeadsFalcon7BDeviceOperation", "NlpCreateQkvHeadsFalcon7BProgramFactory",
                            (CircularBuffer((0,), 2 * per_block, TILE_BYTES[x.dtype]),),
                            split_work(blocks, *grid_of(dev)))

    return cached(key, build)


def split_fused_qkv_program(x, grid=None) -> Program | None:
    """SplitFusedQKVAndSplitHeadsDeviceOperation's interleaved factory (experimental/transformer/
    split_query_key_value_and_split_heads/device/split_query_key_value_and_split_heads_program_factory.cpp) for
    input `x` [B, 1, S, W]: one core a row of tiles, S / 32 cores along x and B along y from (0, 0); a tensor's share
    of the row is n = W / 32 / 3 tiles; c_0 double-buffers n (the K heads, which the compute kernel transposes into
    c_16, n tiles), c_1 holds 4 n (Q and V, double-buffered), all in the input's format. None for a sharded or
    ROW_MAJOR input (the sharded factory is not modelled) or where the cores pass `grid`
    (compute_with_storage_grid_size, the device's grid by default), which TT-NN's factory asserts against."""
    if x.device() is None or x.layout != Layout.TILE or x.is_sharded():
        return None
    shape = tuple(x.padded_shape)
    gx, gy = grid if grid is not None else grid_of(x.device())
    cores_x, cores_y = shape[2] // TILE, shape[0]
    if not 0 < cores_x <= gx or not 0 < cores_y <= gy:
        return None
    key = ("SplitFusedQKVAndSplitHeadsDeviceOperation", shape, x.dtype)

    def build():
        n = shape[-1] // TILE // 3  # tiles of one tensor in a core's row
        size = TILE_BYTES[x.dtype]
        return make_program("SplitFusedQKVAndSplitHeadsDeviceOperation", "SplitFusedQKVAndSplitHeadsProgramFactory",
                            (CircularBuffer((0,), 2 * n, size), CircularBuffer((1,), 4 * n, size),
                             CircularBuffer((16,), n, size)),
                            ((0, 0, cores_x - 1, cores_y - 1),))

    return cached(key, build)


def kv_cache_load_slice_program(x, out) -> Program | None:
    """NlpKVCacheLoadSliceDeviceOperation (experimental/transformer/nlp_kv_cache_load_slice/device/
    nlp_kv_cache_load_slice_program_factory.cpp): its one CB, c_0, is the sharded output itself (a shard's tiles in
    the input's format, globally allocated), on the output's shard grid. None for an output that is not sharded
    (TT-NN's factory requires a sharded one)."""
    spec = out.memory_config().shard_spec if out.is_sharded() else None
    if x.device() is None or spec is None or x.layout != Layout.TILE:
        return None
    key = ("NlpKVCacheLoadSliceDeviceOperation", x.dtype, spec)

    def build():
        tiles = (spec.shape[0] // TILE) * (spec.shape[1] // TILE)
        ranges = tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in spec.grid.ranges())
        return make_program("NlpKVCacheLoadSliceDeviceOperation", "NlpKVCacheLoadSliceProgramFactory",
                            (CircularBuffer((0,), tiles, TILE_BYTES[x.dtype], True),), ranges)

    return cached(key, build)
