"""The distributed LayerNorm's and RMSNorm's device operations, as TT-NN's program factories build them.

{layer,rms}_norm_pre_all_gather run LayerNormPreAllGatherDeviceOperation, {layer,rms}_norm_post_all_gather
LayerNormPostAllGatherDeviceOperation for an interleaved input; their CBs follow
layernorm_distributed/device/layernorm_{pre,post}_all_gather_program_factory.cpp in tt-metal, in their
CreateCircularBuffer form (ttnn::prim, before the dataflow-buffer rewrite). A sharded input goes to
LayerNormDeviceOperation's distributed stages (layernorm_op_multi_core_sharded.cpp), modelled with the plain
sharded factory's CBs (sharded_stage_program).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.distributed_norm import pre_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(1, 1, 64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = pre_program(x, ttnn.bfloat16, rms=True)
    >>> p.name, p.ranges, [(cb.indices, cb.num_pages) for cb in p.cbs]
    ('LayerNormPreAllGatherDeviceOperation', ((0, 0, 1, 0),), [((0,), 8), ((1,), 1), ((6,), 8), ((14,), 1)])
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, cached, grid_of, make_program, shape_of, split_work
from device_sim.programs import normalization
from device_sim.types import DataType, Layout

_BF16, _F32 = DataType.BFLOAT16, DataType.FLOAT32


def supported(x) -> bool:
    """An interleaved TILE input on a device: what the interleaved factories take."""
    return x.device() is not None and x.layout == Layout.TILE and not x.is_sharded()


def _rows_and_wt(shape) -> tuple[int, int]:
    rows = 1
    for d in shape[:-1]:
        rows *= d
    return rows // TILE, shape[-1] // TILE


def _divisor_up_to(n: int, cap: int) -> int:
    """The 2-D factories' core count along one side: min(cap, n), lowered until it divides n."""
    d = min(cap, n)
    while n % d and d > 1:
        d -= 1
    return d


def pre_program(x, out_dtype: DataType, *, rms: bool, use_2d_core_grid: bool = False):
    """LayerNormPreAllGatherProgramFactory, on split_work_to_cores' rows of tiles (row by row).

    c_0 the input (two rows of Wt tiles), c_1 the reduce scaler (one bfloat16 tile), c_6 x**2 (two rows,
    bfloat16), c_14 the output (a row's statistics: one tile for an RMSNorm, the sum of squares in column 0;
    two for a LayerNorm, out0_tiles = 2, the sum of squares and the sum). With use_2d_core_grid,
    LayerNormPreAllGather2DProgramFactory: cores_x (rows, up to grid_y) by cores_y (Wt, up to grid_y) from
    (0, 0), each core Wt / cores_y tiles of a row; c_0, c_1, c_6 as above, c_15 the core's partial sums
    (Wt / cores_y tiles), c_16 and c_13 one bfloat16 tile each, c_14 the output tile (on the merge cores, y = 0).
    """
    dev = x.device()
    key = ("LayerNormPreAllGatherDeviceOperation", shape_of(x), x.dtype, out_dtype, rms, use_2d_core_grid,
           grid_of(dev))

    def build():
        rows, Wt = _rows_and_wt(tuple(x.padded_shape))
        bf16 = TILE_BYTES[_BF16]
        cbs = [CircularBuffer((0,), 2 * Wt, TILE_BYTES[x.dtype]), CircularBuffer((1,), 1, bf16),
               CircularBuffer((6,), 2 * Wt, bf16)]
        gx, gy = grid_of(dev)
        if use_2d_core_grid:
            cores_x, cores_y = _divisor_up_to(rows, gy), _divisor_up_to(Wt, gy)
            cbs += [CircularBuffer((15,), Wt // cores_y, bf16), CircularBuffer((16,), 1, bf16),
                    CircularBuffer((13,), 1, bf16), CircularBuffer((14,), 1, TILE_BYTES[out_dtype])]
            return make_program("LayerNormPreAllGatherDeviceOperation", "LayerNormPreAllGather2DProgramFactory", cbs,
                                ((0, 0, cores_x - 1, cores_y - 1),))
        cbs.append(CircularBuffer((14,), 1 if rms else 2, TILE_BYTES[out_dtype]))
        return make_program("LayerNormPreAllGatherDeviceOperation", "LayerNormPreAllGatherProgramFactory", cbs,
                            split_work(rows, gx, gy, row_wise=True))

    return cached(key, build)


def post_program(x, stats, out_dtype: DataType, *, rms: bool, weight=None, bias=None, use_2d_core_grid: bool = False,
                 fp32_dest_acc_en: bool = False):
    """LayerNormPostAllGatherProgramFactory.

    Cores: split_work_to_cores' rows of tiles (row by row); with use_2d_core_grid, cores_x (the largest
    divisor of the rows up to grid_y) by cores_y (of Wt, up to grid_y) from (0, 0), each core Wt / cores_y
    tiles of a row. A core's row length L is those tiles, cut to (free L1 / input tile) * 0.95 / 7 when
    one row would pass 95% of free L1 (1D only). c_0 input, c_2 / c_3 gamma / beta, c_12 and c_14 (the
    output) L tiles; c_1 the gathered stats (their width in tiles); c_4 epsilon and c_5 the scaler (one
    bfloat16 tile each); c_6 the per-device sums (1), c_8, c_9, c_10 (1 each). A LayerNorm adds c_7 (E(x)**2,
    1 tile), c_11 (x - E(x), L tiles) and, with a bias, c_13 (the normed values times gamma, L tiles), as
    layernorm_post_allgather.cpp names them. Intermediates are float32 with an fp32 destination, else bfloat16.
    """
    dev = x.device()
    key = ("LayerNormPostAllGatherDeviceOperation", shape_of(x), x.dtype, stats.dtype, tuple(stats.padded_shape),
           out_dtype, weight.dtype if weight is not None else None, bias.dtype if bias is not None else None,
           rms, use_2d_core_grid, fp32_dest_acc_en, grid_of(dev), dev.config.l1_size, dev.config.l1_unreserved_base)

    def build():
        rows, Wt = _rows_and_wt(tuple(x.padded_shape))
        gx, gy = grid_of(dev)
        in_t = TILE_BYTES[x.dtype]
        if use_2d_core_grid:
            cores_x, cores_y = _divisor_up_to(rows, gy), _divisor_up_to(Wt, gy)
            length = Wt // cores_y
            ranges = ((0, 0, cores_x - 1, cores_y - 1),)
        else:
            length = Wt
            free = dev.config.l1_size - dev.config.l1_unreserved_base
            if length * in_t > free * 0.95:  # the factory's double arithmetic, truncated to whole tiles
                length = int(free / in_t * 0.95 / 7)
            ranges = split_work(rows, gx, gy, row_wise=True)
        cb_t, bf16 = TILE_BYTES[_F32 if fp32_dest_acc_en else _BF16], TILE_BYTES[_BF16]
        cbs = [CircularBuffer((0,), length, in_t),
               CircularBuffer((1,), stats.padded_shape[-1] // TILE, TILE_BYTES[stats.dtype])]
        if weight is not None:
            cbs.append(CircularBuffer((2,), length, TILE_BYTES[weight.dtype]))
        if bias is not None:
            cbs.append(CircularBuffer((3,), length, TILE_BYTES[bias.dtype]))
        cbs += [CircularBuffer((4,), 1, bf16), CircularBuffer((5,), 1, bf16), CircularBuffer((6,), 1, cb_t),
                CircularBuffer((8,), 1, cb_t), CircularBuffer((9,), 1, cb_t), CircularBuffer((10,), 1, cb_t),
                CircularBuffer((12,), length, cb_t), CircularBuffer((14,), length, TILE_BYTES[out_dtype])]
        if not rms:
            cbs += [CircularBuffer((7,), 1, cb_t), CircularBuffer((11,), length, cb_t)]
            if bias is not None:
                cbs.append(CircularBuffer((13,), length, cb_t))
        factory = "LayerNormPostAllGatherProgramFactory"
        return make_program("LayerNormPostAllGatherDeviceOperation", factory, cbs, ranges)

    return cached(key, build)


def sharded_stage_program(x, out, program_config, *, rms: bool, stage: str, gamma=None, beta=None, residual=None,
                          fp32_dest_acc_en: bool = False):
    """LayerNormDeviceOperation's sharded factory running a distributed stage ("pre" or "post"), for a sharded input
    with its LayerNormShardedMultiCoreProgramConfig. The factory is layernorm_op_multi_core_sharded.cpp, the same
    one a sharded layer_norm runs with the stage's kernels swapped in; device_sim models it with that factory's
    CBs (normalization.sharded_layer_norm_program's), the stage in the cache key (TT-NN caches the two stages
    apart from the plain norm: their attributes differ)."""
    dev = x.device()
    spec = x.memory_config().shard_spec
    dt = lambda t: t.dtype if t is not None else None  # noqa: E731
    key = ("LayerNormDeviceOperation", stage, shape_of(x), x.dtype, out.dtype, rms, dt(gamma), dt(beta), dt(residual),
           program_config.block_h, program_config.block_w, spec.grid, spec.orientation, fp32_dest_acc_en, grid_of(dev))
    # normalization._sharded is that factory's model; calling it keeps one copy of its CB arithmetic.
    return cached(key, lambda: normalization._sharded(dev, tuple(x.padded_shape), x.dtype, out.dtype, program_config,
                                                      spec, rms, gamma, beta, residual, fp32_dest_acc_en))
