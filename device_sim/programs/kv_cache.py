"""UpdateKVCacheOperation: fill_cache and update_cache as TT-NN's two KV-cache factories build them.

tt-metal's ttnn/cpp/ttnn/operations/kv_cache/device/fill_cache_multi_core_program_factory.cpp and
update_cache_multi_core_program_factory.cpp, and the paged fill, update and fused update (experimental/paged_cache:
the fused update's tiled and row-major factories).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.kv_cache import fill_cache_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 2, 128, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = fill_cache_program(x)
    >>> [(cb.indices, cb.num_pages) for cb in p.cbs], p.cores.num_cores()  # 2 heads x 4 rows of tiles
    ([((0,), 2)], 8)
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim import dtypes
from device_sim.device_work import (
    TILE,
    TILE_BYTES,
    CircularBuffer,
    Program,
    aligned_page,
    cached,
    grid_of,
    make_program,
    shape_of,
    split_work,
)
from device_sim.types import DataType, Layout

NAME = "UpdateKVCacheOperation"


def _ranges(spec) -> tuple:
    return tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in spec.grid.ranges())


def fill_cache_program(x) -> Program:
    """FillCacheMultiCoreProgramFactory for input x [1, KVH, S, D]: c_0 two tiles (the input shard itself, when
    sharded), split_work_to_cores row by row over the KVH * S/32 rows of tiles."""
    dev = x.device()
    spec = x.memory_config().shard_spec if x.is_sharded() else None
    key = (NAME, "fill", shape_of(x), x.dtype, spec, grid_of(dev))

    def build():
        shape = tuple(x.padded_shape)
        tile = TILE_BYTES[x.dtype]
        if spec is not None:
            h, w = spec.shape
            return make_program(NAME, "FillCacheMultiCoreProgramFactory",
                                (CircularBuffer((0,), h * w // (TILE * TILE), tile, True),), _ranges(spec))
        blocks = shape[1] * shape[-2] // TILE
        return make_program(NAME, "FillCacheMultiCoreProgramFactory", (CircularBuffer((0,), 2, tile),),
                            split_work(blocks, *grid_of(dev), row_wise=True))

    return cached(key, build)


def update_cache_program(cache, x, *, fp32_dest_acc_en: bool = False) -> Program:
    """UpdateCacheMultiCoreProgramFactory for cache [B, KVH, max_seq, D] and input x [1, KVH, users, D].

    Wt = D/32 tiles a row, g = min(2, B) users at a time: c_0 the cache rows (2*g*Wt, the cache's format),
    c_1 the input (2*Wt; the shard itself when sharded), c_24/c_25 one shared CB and c_26 the untilized rows
    (2*g*Wt each, float32 with an fp32 destination, else bfloat16), c_16 a head's tiles for all users
    (users * Wt); split_work_to_cores row by row over the KVH * users/32 batched heads."""
    dev = x.device()
    spec = x.memory_config().shard_spec if x.is_sharded() else None
    key = (NAME, "update", shape_of(x), shape_of(cache), x.dtype, cache.dtype, spec, fp32_dest_acc_en, grid_of(dev))

    def build():
        shape, cache_shape = tuple(x.padded_shape), tuple(cache.padded_shape)
        wt = cache_shape[-1] // TILE
        g = min(2, cache_shape[0])
        users = shape[-2]
        c_t, in_t = TILE_BYTES[cache.dtype], TILE_BYTES[x.dtype]
        im_t = TILE_BYTES[DataType.FLOAT32 if fp32_dest_acc_en else DataType.BFLOAT16]
        if spec is not None:
            h, w = spec.shape
            src1, ranges = CircularBuffer((1,), h * w // (TILE * TILE), in_t, True), _ranges(spec)
        else:
            src1 = CircularBuffer((1,), 2 * wt, in_t)
            ranges = split_work(shape[1] * users // TILE, *grid_of(dev), row_wise=True)
        cbs = (CircularBuffer((0,), 2 * g * wt, c_t), src1, CircularBuffer((24, 25), 2 * g * wt, im_t),
               CircularBuffer((26,), 2 * g * wt, im_t), CircularBuffer((16,), users * wt, c_t))
        return make_program(NAME, "UpdateCacheMultiCoreProgramFactory", cbs, ranges)

    return cached(key, build)


def paged_update_cache_program(cache, x, *, index=None, page_table=None, fp32_dest_acc_en: bool = False) -> Program:
    """PagedUpdateCacheDeviceOperation (experimental/paged_cache/device/update_cache/
    paged_update_cache_program_factory.cpp) for a sharded input x [1, B, heads, D], on the input's shard grid.

    Wt = D/32: c_0 the cache rows (2*Wt, the cache's format), c_1 the input shard (globally allocated),
    c_24/c_25 one shared CB and c_26 the untilized rows (2*Wt each, float32 with an fp32 destination, else
    bfloat16), c_16 B*Wt cache tiles; c_2 one index tile with update_idxs_tensor, c_3 one page-table row (its
    padded width x element size) with a page table."""
    spec = x.memory_config().shard_spec
    key = (NAME, "paged", shape_of(x), shape_of(cache), x.dtype, cache.dtype, spec, fp32_dest_acc_en,
           index.dtype if index is not None else None, shape_of(page_table) if page_table is not None else None,
           page_table.dtype if page_table is not None else None)

    def build():
        shape = tuple(x.padded_shape)
        wt, users = shape[-1] // TILE, shape[1]
        c_t, in_t = TILE_BYTES[cache.dtype], TILE_BYTES[x.dtype]
        im_t = TILE_BYTES[DataType.FLOAT32 if fp32_dest_acc_en else DataType.BFLOAT16]
        h, w = spec.shape
        cbs = [CircularBuffer((0,), 2 * wt, c_t), CircularBuffer((1,), h * w // (TILE * TILE), in_t, True),
               CircularBuffer((24, 25), 2 * wt, im_t), CircularBuffer((26,), 2 * wt, im_t),
               CircularBuffer((16,), users * wt, c_t)]
        if index is not None:
            cbs.append(CircularBuffer((2,), 1, TILE_BYTES[index.dtype]))
        if page_table is not None:
            width = tuple(page_table.padded_shape)[-1]
            cbs.append(CircularBuffer((3,), 1, width * dtypes.ELEMENT_SIZE[page_table.dtype]))
        return make_program("PagedUpdateCacheDeviceOperation", "PagedUpdateCacheProgramFactory", cbs, _ranges(spec))

    return cached(key, build)


def paged_fill_cache_program(x, page_table, batch_idx_tensor=None) -> Program:
    """PagedFillCacheDeviceOperation (experimental/paged_cache/device/fill_cache/paged_fill_cache_program_factory.cpp)
    for input x [users, KVH, S, D]: c_0 the input rows (2*Wt tiles, Wt = D/32), c_1 one page-table row (the page
    table's aligned page), c_2 the batch indices (one element each) with a batch_idx_tensor; split_work_to_cores
    row by row over the KVH * S/32 rows of tiles of each user."""
    dev = x.device()
    key = ("PagedFillCacheDeviceOperation", shape_of(x), x.dtype, shape_of(page_table), page_table.dtype,
           page_table.buffer.buffer_type, None if batch_idx_tensor is None else
           (shape_of(batch_idx_tensor), batch_idx_tensor.dtype), grid_of(dev))

    def build():
        shape = tuple(x.padded_shape)
        wt = shape[-1] // TILE
        cbs = [CircularBuffer((0,), 2 * wt, TILE_BYTES[x.dtype]), CircularBuffer((1,), 1, aligned_page(page_table))]
        if batch_idx_tensor is not None:
            cbs.append(CircularBuffer((2,), batch_idx_tensor._value.numel(),
                                      dtypes.ELEMENT_SIZE[batch_idx_tensor.dtype]))
        return make_program("PagedFillCacheDeviceOperation", "PagedFillCacheProgramFactory", cbs,
                            split_work(shape[0] * shape[1] * shape[2] // TILE, *grid_of(dev), row_wise=True))

    return cached(key, build)


def paged_fused_update_cache_program(cache, x1, x2, *, index=None, page_table=None,
                                     fp32_dest_acc_en: bool = False) -> Program:
    """PagedFusedUpdateCacheDeviceOperation for sharded inputs x1 (keys) and x2 (values) [1, B, heads, D] on two
    disjoint shard grids, run on the bounding box of both: the tiled factory
    (paged_tiled_fused_update_cache_program_factory.cpp) for TILE inputs, the row-major one
    (paged_row_major_fused_update_cache_program_factory.cpp, tt-metal 5c2587a0770b) for ROW_MAJOR inputs.

    Wt = D/32: c_0 the cache rows (2*Wt, the cache's format), c_1 / c_2 the x1 / x2 shards (globally allocated;
    TT-Metal creates each on its own input's cores; shard elements / 1024 pages of the input's tile size), one
    shared intermediate CB of 2*Wt tiles (float32 with an fp32 destination, else bfloat16), then the output,
    B*Wt cache tiles. Tiled: the shared CB is c_24/c_25, c_26 the untilized rows (2*Wt) and c_16 the output;
    row-major (its input is already rows): c_5/c_6 the shared CB and c_7 the output. Then c_3 one index row
    (the index tensor's aligned page; its own buffer when sharded) with update_idxs_tensor, c_4 the page table's
    rows (one, or B when the page table is sharded and backs the CB) with a page table."""
    s1, s2 = x1.memory_config().shard_spec, x2.memory_config().shard_spec
    row_major = x1.layout == Layout.ROW_MAJOR
    key = ("PagedFusedUpdateCacheDeviceOperation", shape_of(x1), shape_of(cache), x1.dtype, cache.dtype, s1, s2,
           row_major, fp32_dest_acc_en,
           None if index is None else (shape_of(index), index.dtype, index.is_sharded()),
           None if page_table is None else (shape_of(page_table), page_table.dtype, page_table.is_sharded()))

    def build():
        shape = tuple(x1.padded_shape)
        wt, users = tuple(cache.padded_shape)[-1] // TILE, shape[1]
        c_t, in_t = TILE_BYTES[cache.dtype], TILE_BYTES[x1.dtype]
        im_t = TILE_BYTES[DataType.FLOAT32 if fp32_dest_acc_en else DataType.BFLOAT16]
        shard_tiles = s1.shape[0] * s1.shape[1] // (TILE * TILE)
        cbs = [CircularBuffer((0,), 2 * wt, c_t), CircularBuffer((1,), shard_tiles, in_t, True),
               CircularBuffer((2,), shard_tiles, in_t, True)]
        if row_major:
            cbs += [CircularBuffer((5, 6), 2 * wt, im_t), CircularBuffer((7,), users * wt, c_t)]
        else:
            cbs += [CircularBuffer((24, 25), 2 * wt, im_t), CircularBuffer((26,), 2 * wt, im_t),
                    CircularBuffer((16,), users * wt, c_t)]
        if index is not None:
            cbs.append(CircularBuffer((3,), 1, aligned_page(index), index.is_sharded()))
        if page_table is not None:
            sharded = page_table.is_sharded()
            cbs.append(CircularBuffer((4,), users if sharded else 1, aligned_page(page_table), sharded))
        box = [*_ranges(s1), *_ranges(s2)]
        bbox = (min(r[0] for r in box), min(r[1] for r in box), max(r[2] for r in box), max(r[3] for r in box))
        factory = "PagedRowMajorFusedUpdateCacheProgramFactory" if row_major else \
            "PagedTiledFusedUpdateCacheProgramFactory"
        return make_program("PagedFusedUpdateCacheDeviceOperation", factory, cbs, (bbox,))

    return cached(key, build)
