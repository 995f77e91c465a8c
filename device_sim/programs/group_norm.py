"""GroupNormDeviceOperation (ttnn.group_norm) as TT-NN's program factories build it.

A sharded input runs GroupNormShardedProgramFactory on its shard grid. For an interleaved one groupnorm.cpp
picks the core grid (core_grid=, else find_expected_dram_grid on the device's grid), and
GroupNormDeviceOperation::select_program_factory runs GroupNormNoMcastProgramFactory when the batch
fills the virtual rows (batch >= num_virtual_rows), else GroupNormMcastProgramFactory; both create the
same CBs (groupnorm_{sharded,mcast,no_mcast}_program_factory.cpp under
ttnn/cpp/ttnn/operations/normalization/groupnorm/device/ in tt-metal).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.group_norm import group_norm_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(2, 1, 64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = group_norm_program(x, 8)
    >>> p.factory, p.ranges, [(cb.indices, cb.num_pages) for cb in p.cbs][:3]
    ('GroupNormMcastProgramFactory', ((0, 0, 7, 0),), [((0,), 1), ((16,), 1), ((29,), 1)])
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, cached, cores_col_major, grid_of, make_program
from device_sim.types import DataType, Layout, TensorMemoryLayout

NAME = "GroupNormDeviceOperation"
_BF16 = DataType.BFLOAT16


def num_virtual_cols(grid_x: int, num_groups: int, channels: int) -> int:
    """The most columns of cores (<= grid_x, <= num_groups) that split the channels into whole tiles and the
    groups evenly (groupnorm_grid_utils' compute_num_virtual_cols); 0 when none does."""
    nvc = min(grid_x, num_groups)
    while nvc > 0 and ((channels // nvc) % TILE or num_groups % nvc):
        nvc -= 1
    return nvc


def dram_grid(max_x: int, max_y: int, channels: int, num_groups: int, nhw: int, batches: int):
    """groupnorm.cpp's grid for an interleaved input without core_grid= (find_expected_dram_grid): the widest,
    then tallest (x, y) whose virtual rows divide the Ht rows of tiles and the batches (validate_dram_grid's
    rule); None when none does."""
    ht = -(-nhw // TILE)
    for gx in range(max_x, 0, -1):
        nvc = num_virtual_cols(gx, num_groups, channels)
        if nvc == 0:
            continue
        rows_per_y = gx // nvc
        for gy in range(min(ht // rows_per_y, max_y), 0, -1):
            nvr = rows_per_y * gy
            if ht % nvr == 0 and (nvr < batches or nvr % batches == 0):
                return gx, gy
    return None


def max_tile_span(width: int, group_size: int) -> int:
    """The most tiles one group touches when groups of group_size channels lie end to end over `width`
    channels (groupnorm_program_utils' find_max_tile_span): the block width in tiles."""
    pos = span = 0
    while pos < width:
        end = pos + group_size
        span = max(span, (end - 1) // TILE - pos // TILE + 1)
        pos = end
    return span


def supported(x, num_groups: int, gamma, beta, out_dtype, out_layout) -> bool:
    """Whether TT-NN 0.81 runs its factories for this call (others it refuses, or device_sim takes a form TT-NN
    does not): a bfloat16 [N, 1, H*W, C] input with whole tiles of channels, TILE and interleaved with a TILE
    output, or height / block sharded (either layout, H*W whole tiles); the same dtype out; gamma / beta absent
    or ROW_MAJOR bfloat16 rows of 32 (create_group_norm_weight_bias_rm)."""
    shape = tuple(x.padded_shape)
    if (x.device() is None or x.dtype != _BF16 or len(shape) != 4 or shape[1] != 1 or shape[-1] % TILE
            or shape[-1] % num_groups or (shape[0] * shape[2]) % TILE or out_dtype != x.dtype):
        return False
    if x.is_sharded():
        layout = x.memory_config().memory_layout
        if layout not in (TensorMemoryLayout.HEIGHT_SHARDED, TensorMemoryLayout.BLOCK_SHARDED) or \
                x.shape[2] % TILE or len(x.memory_config().shard_spec.grid.ranges()) != 1:
            return False  # width sharding is refused; unaligned H*W adds pad-correction CBs (not modelled)
    elif x.layout != Layout.TILE or out_layout != Layout.TILE:
        return False
    return all(w is None or (w.layout == Layout.ROW_MAJOR and w.dtype == _BF16 and w.padded_shape[-1] == TILE)
               for w in (gamma, beta))


def group_norm_program(x, num_groups: int, *, gamma=None, beta=None, input_mask=None, core_grid=None,
                       num_out_blocks: int | None = None, use_welford: bool = False, reciprocals=None):
    """The interleaved factories' CBs for a TILE bfloat16 input [N, 1, H*W, C] (None where TT-NN finds no grid).

    nvc columns of cores take C/nvc channels each (per_core_Nt tiles), (grid_x // nvc) * grid_y virtual rows
    take Ht / rows rows of tiles (per_core_Mt); block_wt is the most tiles a group spans in a core's channels,
    block_ht the rows of tiles of one batch on a core, a block block_ht / num_out_blocks x block_wt tiles.
    CBs on num_cores_to_corerangeset's (grid_x // nvc) * nvc * grid_y cores, column by column: c_0 input,
    c_16 output and c_29 one block each; c_2, c_3, c_4 one tile (scalers, epsilon); c_5 / c_6 gamma / beta
    (per_core_Nt tiles); c_28 the mask (two blocks' widths); c_24, c_25, c_23, c_22 one block (x, x-mean,
    ...; Welford: 1 and 3 tiles for c_24 / c_25); c_8 (1, Welford 2) and c_21 (1) partial sums; c_10 two
    tiles for each core of a multicast group; c_15 / c_9 the global mean (1; Welford 2 a group), c_13 / c_14
    (1), c_27 (1; Welford one a group); c_18 the reciprocals' shard (globally allocated).
    """
    dev = x.device()
    shape = tuple(x.padded_shape)
    key = (NAME, shape, num_groups, gamma is not None, beta is not None,
           input_mask.dtype if input_mask is not None else None,
           tuple(input_mask.padded_shape) if input_mask is not None else None,
           (core_grid.x, core_grid.y) if core_grid is not None else None, num_out_blocks, use_welford,
           reciprocals is not None and reciprocals.is_sharded(), grid_of(dev))
    return cached(key, lambda: _interleaved(dev, shape, num_groups, gamma, beta, input_mask, core_grid,
                                            num_out_blocks, use_welford, reciprocals))


def _interleaved(dev, shape, G, gamma, beta, mask, core_grid, num_out_blocks, welford, reciprocals):
    N, C = shape[0], shape[3]
    H = shape[1] * shape[2] * N
    Ht = H // TILE
    if core_grid is not None:
        gx, gy = core_grid.x, core_grid.y
        blocks = 1 if num_out_blocks is None else num_out_blocks
    elif num_out_blocks is not None:
        return None  # TT_FATAL "num_out_blocks cannot be specified when core_grid is auto-selected"
    else:
        grid = dram_grid(*grid_of(dev), C, G, H, N)
        if grid is None:
            return None  # TT_FATAL "Could not determine a valid DRAM core grid": device_sim's output stands
        gx, gy = grid
        blocks = -1  # groupnorm.cpp defers to the factory's heuristic when it chose the grid
    nvc = num_virtual_cols(gx, G, C)
    nvr = (gx // nvc) * gy if nvc else 0
    if nvr == 0 or Ht < nvr or Ht % nvr or not (nvr < N or nvr % N == 0):
        return None  # validate_dram_grid's TT_THROW "Requested core_grid ... is invalid": device_sim's output stands
    num_cores = (gx // nvc) * nvc * gy
    factory = "GroupNormNoMcastProgramFactory" if nvr <= N else "GroupNormMcastProgramFactory"
    per_core_Mt = Ht // nvr
    per_core_N = C // nvc
    per_core_Nt = -(-per_core_N // TILE)
    shards_r, shards_c = H // (per_core_Mt * TILE), C // per_core_N
    cores_per_batch = 1 if shards_r < N else shards_r // N
    batches_per_core = N // shards_r if shards_r < N else 1
    groups_per_core = G // shards_c if shards_c < G else 1
    if blocks == -1:  # the factories' heuristic: powers of two up to H*W*C / (256*256 per core), at most 256
        want = max((shape[1] * shape[2] * shape[3]) // (256 * 256 * nvc * nvr), 1)
        blocks = 1
        while blocks < want and blocks < 256:
            blocks <<= 1
    block_wt = max_tile_span(per_core_N, C // G)
    block_ht = per_core_Mt // batches_per_core
    if shards_r <= N and N % shards_r:  # uneven batches: group 1 cores hold one batch more (the larger CBs)
        block_ht = Ht // N
    if mask is not None and mask.padded_shape[3] != block_wt * TILE:
        return None  # TT_FATAL "input mask width ... must have the same width as block_wt * TILE_WIDTH"
    # The multicast groups: a sender every cores_per_batch cores of a column and every nvr cores (one per
    # channel block), in the column-by-column core order; a group runs from its sender to the next.
    equal = not (shards_r <= N and N % shards_r)
    senders = sorted({i * cores_per_batch + j * nvr for i in range(N // batches_per_core if equal else nvr)
                      for j in range(G // groups_per_core)})
    group_cores = (senders[1] if len(senders) > 1 else num_cores) - senders[0]
    block = block_ht // blocks * block_wt
    tile = TILE_BYTES[_BF16]  # input, output and the statistics (im_data_format) are all bfloat16 here
    mask_tile = TILE_BYTES[mask.dtype if mask is not None else _BF16]
    gb_tile = TILE_BYTES[_BF16]  # ROW_MAJOR bfloat16 gamma / beta (validate_on_program_cache_miss)
    if welford and mask is not None:  # the whole mask (its volume's bytes), in pages of one tile
        m = mask.padded_shape
        mask_pages = m[0] * m[1] * m[2] * m[3] // (TILE * TILE)
    else:
        mask_pages = 2 * block_wt
    cbs = [CircularBuffer((0,), block, tile), CircularBuffer((16,), block, tile), CircularBuffer((29,), block, tile),
           CircularBuffer((2,), 1, tile), CircularBuffer((3,), 1, tile), CircularBuffer((4,), 1, tile)]
    if gamma is not None:
        cbs.append(CircularBuffer((5,), per_core_Nt, gb_tile))
    if beta is not None:
        cbs.append(CircularBuffer((6,), per_core_Nt, gb_tile))
    # TT-NN makes the mask itself when none is given (get_mask_tensor), so c_28 is always there.
    cbs.append(CircularBuffer((28,), mask_pages, mask_tile))
    # per_core_N is whole tiles by the choice of nvc, so the reader never repacks (no c_26 / c_31).
    cbs += [CircularBuffer((24,), 1 if welford else block, tile), CircularBuffer((25,), 3 if welford else block, tile),
            CircularBuffer((23,), block, tile), CircularBuffer((22,), block, tile),
            CircularBuffer((8,), 2 if welford else 1, tile)]
    if not welford:
        cbs.append(CircularBuffer((21,), 1, tile))
    cbs += [CircularBuffer((10,), 2 * group_cores, tile),
            CircularBuffer((15, 9), 2 * groups_per_core if welford else 1, tile)]
    if not welford:
        cbs.append(CircularBuffer((14, 13), 1, tile))
    cbs.append(CircularBuffer((27,), groups_per_core if welford else 1, tile))
    if reciprocals is not None and reciprocals.is_sharded():
        spec = reciprocals.memory_config().shard_spec
        per_bank = spec.shape[0] * spec.shape[1] * 4  # float32 (validate_on_program_cache_miss)
        cbs.append(CircularBuffer((18,), 1, per_bank, True))
    return make_program(NAME, factory, cbs, cores_col_major(num_cores, gx, gy))


def sharded_group_norm_program(x, num_groups: int, *, gamma=None, beta=None, input_mask=None, negative_mask=None,
                               out_layout=Layout.TILE, use_welford: bool = False):
    """GroupNormShardedProgramFactory on the input's shard grid (height or block sharded).

    A shard is per_core_M x per_core_N: per_core_Mt x per_core_Nt tiles; block_wt is the most tiles a group spans
    in a core's channels, block_ht the rows of tiles of one batch. c_0 the input's shard and c_16 the output's
    (globally allocated; device_sim's output is a new tensor, so not in place), c_1 the tilized input (the
    shard's tiles), c_30 for a ROW_MAJOR output (the same), c_2 (1; Welford 3), c_3 (1), c_4 (1, not Welford)
    scalers and epsilon; c_5 / c_6 gamma / beta (per_core_Nt tiles); c_7 the mask (2 x block_wt, Welford one
    block_wt a group); c_14 a negative mask (2 x block_wt); c_11 / c_12 a repack of two rows when the shard is
    not whole tiles wide; c_13 x (block_ht x block_wt, Welford 1); c_8 (1, Welford 2); c_10 (1, not Welford);
    c_15 / c_9 (1, Welford 2 a group); c_17 (1, Welford one a group); c_26 ones (1).
    """
    spec = x.memory_config().shard_spec
    key = (NAME, "sharded", tuple(x.padded_shape), x.layout, num_groups, spec.shape, spec.grid, gamma is not None,
           beta is not None, input_mask.dtype if input_mask is not None else None, negative_mask is not None,
           out_layout, use_welford)
    return cached(key, lambda: _sharded(x, num_groups, spec, gamma, beta, input_mask, negative_mask, out_layout,
                                        use_welford))


def _sharded(x, G, spec, gamma, beta, mask, negative_mask, out_layout, welford):
    shape = tuple(x.padded_shape)
    N, W = shape[0], shape[3]
    H = shape[2] * N
    per_core_M, per_core_N = spec.shape
    per_core_Mt, per_core_Nt = per_core_M // TILE, -(-per_core_N // TILE)
    shards_r, shards_c = H // per_core_M, W // per_core_N
    batches_per_core = N // shards_r if shards_r < N else 1
    groups_per_core = G // shards_c if shards_c < G else 1
    block_wt = max_tile_span(per_core_N, W // G)
    block_ht = per_core_Mt // batches_per_core
    if mask is not None and mask.padded_shape[3] != block_wt * TILE:
        return None  # TT_FATAL "input mask width ... must have the same width as block_wt * tile_width"
    tile = TILE_BYTES[_BF16]  # input, output and statistics: bfloat16 (validate_on_program_cache_miss)
    mask_tile = TILE_BYTES[mask.dtype if mask is not None else _BF16]
    block = per_core_Mt * per_core_Nt
    # c_0 is the input buffer's own shard (aligned_size_per_bank), in pages of one tile
    shard_pages = per_core_Mt * per_core_Nt if x.layout == Layout.TILE else -(-per_core_M * per_core_N * 2 // tile)
    cbs = [CircularBuffer((0,), shard_pages, tile, True), CircularBuffer((16,), block, tile, True),
           CircularBuffer((1,), block, tile)]
    if out_layout == Layout.ROW_MAJOR and negative_mask is None:
        cbs.append(CircularBuffer((30,), block, tile))
    cbs += [CircularBuffer((2,), 3 if welford else 1, tile), CircularBuffer((3,), 1, tile)]
    if not welford:
        cbs.append(CircularBuffer((4,), 1, tile))
    if gamma is not None:
        cbs.append(CircularBuffer((5,), per_core_Nt, tile))
    if beta is not None:
        cbs.append(CircularBuffer((6,), per_core_Nt, tile))
    # TT-NN makes the mask itself when neither mask is given (get_mask_tensor), so c_7 is there then too.
    if mask is not None or negative_mask is None:
        cbs.append(CircularBuffer((7,), block_wt * (groups_per_core if welford else 2), mask_tile))
    if negative_mask is not None:
        cbs.append(CircularBuffer((14,), 2 * block_wt, TILE_BYTES[negative_mask.dtype]))
    if per_core_N % TILE:
        cbs.append(CircularBuffer((11, 12), 2 * per_core_Nt, tile))
    cbs += [CircularBuffer((13,), 1 if welford else block_ht * block_wt, tile),
            CircularBuffer((8,), 2 if welford else 1, tile)]
    if not welford:
        cbs.append(CircularBuffer((10,), 1, tile))
    cbs += [CircularBuffer((15, 9), 2 * groups_per_core if welford else 1, tile),
            CircularBuffer((17,), groups_per_core if welford else 1, tile), CircularBuffer((26,), 1, tile)]
    r = spec.grid.ranges()[0]
    return make_program(NAME, "GroupNormShardedProgramFactory", cbs, ((r.start.x, r.start.y, r.end.x, r.end.y),))
