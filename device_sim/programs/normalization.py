"""LayerNormDeviceOperation (layer_norm and rms_norm) as TT-NN's two program factories build it; and
SoftmaxDeviceOperation, interleaved (softmax_program) and sharded (sharded_softmax_program).

Interleaved input: layernorm_op_multi_core.cpp's layernorm_multi_core. Sharded input with a
LayerNormShardedMultiCoreProgramConfig: its layernorm_multi_core_sharded. Both are in
ttnn/cpp/ttnn/operations/normalization/layernorm/device/multi_core/ of tt-metal.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.normalization import layer_norm_program
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(32, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> [(cb.indices, cb.num_pages) for cb in layer_norm_program(x, ttnn.bfloat16, rms=True).cbs][:3]
    [((0,), 4), ((16,), 8), ((2,), 2)]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import (
    TILE,
    TILE_BYTES,
    CircularBuffer,
    Program,
    cached,
    grid_of,
    make_program,
    max_divisor,
    shape_of,
    split_work,
    tiles,
)
from device_sim.types import DataType, Layout, ShardOrientation

_F32, _BF16 = DataType.FLOAT32, DataType.BFLOAT16
NAME = "LayerNormDeviceOperation"


def layer_norm_program(x, out_dtype: DataType, *, rms: bool = False, gamma=None, beta=None, residual=None,
                       fp32_dest_acc_en: bool = False) -> Program:
    """layernorm_multi_core's CBs for an interleaved TILE input, on split_work_to_cores' rows of tiles (row-wise).

    Wt tiles per row; block = the largest divisor of Wt up to 8 (4 with an fp32 destination). c_0 the
    input (the whole row; two blocks with a residual), c_16 the output (two blocks), c_2 / c_3 the
    1/W scaler and epsilon (2 bfloat16 tiles each), c_19 (2), c_20 x-mean squared (Wt), c_21 (8),
    c_18 (2, layer_norm only), c_24 x-mean (Wt; not for an rms_norm without residual), c_22 (two
    blocks) with gamma or beta, c_5 / c_6 gamma / beta (Wt in their dtypes); a residual adds c_1 (two
    blocks) and c_23 (Wt, layer_norm only). Intermediates are float32 with an fp32 destination, else
    bfloat16. A layer_norm whose CBs pass 95% of L1 takes the large-tensor kernel: 60 tiles a row
    buffer with gamma, beta or a float32 input, else 120.
    """
    dev = x.device()
    key = (NAME, shape_of(x), x.dtype, out_dtype, rms, _dt(gamma), _dt(beta), _dt(residual), _layout(gamma),
           _layout(beta), fp32_dest_acc_en, grid_of(dev), dev.config.l1_size if dev is not None else 0)
    return cached(key, lambda: _interleaved(dev, tuple(x.padded_shape), x.dtype, out_dtype, rms, gamma, beta,
                                            residual, fp32_dest_acc_en))


def _dt(t):
    return t.dtype if t is not None else None


def _layout(t):
    return t.layout if t is not None else None


def _interleaved(dev, shape, in_dtype, out_dtype, rms, gamma, beta, residual, fp32) -> Program:
    sizes = TILE_BYTES
    Wt = shape[-1] // TILE
    rows = 1
    for d in shape[:-1]:
        rows *= d
    rows //= TILE
    block = max_divisor(Wt, 4 if fp32 else 8)
    in_t, out_t, cb_t, bf16 = sizes[in_dtype], sizes[out_dtype], sizes[_F32 if fp32 else _BF16], sizes[_BF16]
    gamma_t = sizes[gamma.dtype if gamma is not None else _BF16]  # bfloat16 when absent: the fit check counts it
    beta_t = sizes[beta.dtype if beta is not None else _BF16]
    b_t = sizes[residual.dtype] if residual is not None else 0
    WtB = -(-Wt // block) * block
    in0, in1, out0, im6 = WtB, 2 * block, 2 * block, 2 * block
    im0 = im3 = in5 = in6 = WtB
    if residual is not None:
        im6, in0 = WtB, 2 * block
    im5, im4, im1, in2, in3, im2 = 2 * block, 8, 2, 2, 2, 2
    total = (in0 * in_t + in1 * b_t + out0 * out_t + (im0 + im3 + im6 + im5 + im4 + im1 + im2) * cb_t
             + in5 * gamma_t + in6 * beta_t + (in2 + in3) * bf16)
    row_major_weights = Layout.ROW_MAJOR in (_layout(gamma), _layout(beta))
    l1 = dev.config.l1_size if dev is not None else 1_499_136
    if not rms and not row_major_weights and not total < l1 * 0.95:
        WtB = 60 if (gamma is not None or beta is not None or in_dtype == _F32) else 120
        in0 = im0 = im3 = in5 = in6 = WtB
        if residual is not None:
            im6, in0 = WtB, 2 * block
    cbs = [CircularBuffer((0,), in0, in_t), CircularBuffer((16,), out0, out_t)]
    if not rms:
        cbs.append(CircularBuffer((18,), im1, cb_t))
    cbs += [CircularBuffer((2,), in2, bf16), CircularBuffer((3,), in3, bf16), CircularBuffer((19,), im2, cb_t)]
    if not (rms and residual is None):
        cbs.append(CircularBuffer((24,), im0, cb_t))
    cbs += [CircularBuffer((20,), im3, cb_t), CircularBuffer((21,), im4, cb_t)]
    if gamma is not None or beta is not None:
        cbs.append(CircularBuffer((22,), im5, cb_t))
    if gamma is not None:
        cbs.append(CircularBuffer((5,), in5, gamma_t))
    if beta is not None:
        cbs.append(CircularBuffer((6,), in6, beta_t))
    if residual is not None:
        if not rms:
            cbs.append(CircularBuffer((23,), im6, cb_t))
        cbs.append(CircularBuffer((1,), in1, b_t))
    gx, gy = grid_of(dev)
    return make_program(NAME, "LayerNormMultiCoreProgramFactory", cbs, split_work(rows, gx, gy, row_wise=True))


def sharded_layer_norm_program(x, out_dtype: DataType, program_config, *, rms: bool = False, gamma=None,
                               beta=None, residual=None, fp32_dest_acc_en: bool = False) -> Program:
    """layernorm_multi_core_sharded's CBs on the input's shard grid, from the config's block_h x block_w tiles.

    c_0 (the input shard), c_1 (a residual's shard) and c_16 (the output shard) are backed by the
    tensors' own buffers (globally allocated). In the static region: c_2, c_4, c_3 one bfloat16 tile
    each (scalers, epsilon); c_5 / c_6 gamma / beta (block_w tiles); c_24 x and c_18 x-mean (the
    block); c_8, c_9 (block_h, layer_norm only), c_10 (layer_norm only) and c_13: the partial
    statistics gathered from the other cores (ceil(Kt / block_w) tiles, or first + second stage - 1 with
    the two-stage reduce); c_11, c_12, c_15 (block_h); c_20 the rows each all-to-all worker reduces.
    """
    dev = x.device()
    spec = x.memory_config().shard_spec
    key = (NAME, "sharded", shape_of(x), x.dtype, out_dtype, rms, _dt(gamma), _dt(beta), _dt(residual),
           program_config.block_h, program_config.block_w, spec.grid, spec.orientation, fp32_dest_acc_en,
           grid_of(dev))
    return cached(key, lambda: _sharded(dev, tuple(x.padded_shape), x.dtype, out_dtype, program_config, spec, rms,
                                        gamma, beta, residual, fp32_dest_acc_en))


def _sharded(dev, shape, in_dtype, out_dtype, cfg, spec, rms, gamma, beta, residual, fp32) -> Program:
    sizes = TILE_BYTES
    in_t, out_t, cb_t, bf16 = sizes[in_dtype], sizes[out_dtype], sizes[_F32 if fp32 else _BF16], sizes[_BF16]
    K = shape[-1]
    M = 1
    for d in shape[:-1]:
        M *= d
    Kt = K // TILE
    block_ht, block_wt = cfg.block_h, cfg.block_w
    mcast_1d = block_ht * TILE == M  # one row of blocks: width-sharded, a 1D multicast
    row_wise = spec.orientation == ShardOrientation.ROW_MAJOR
    box = spec.grid.bounding_box()
    gx, gy = box.end.x - box.start.x + 1, box.end.y - box.start.y + 1
    dev_gx, dev_gy = grid_of(dev)
    num_blocks = spec.grid.num_cores() if mcast_1d else (gx if row_wise else gy)
    two_stage = mcast_1d and ((row_wise and 1 < gx <= dev_gx and gy > 1) or
                              (not row_wise and gx > 1 and gy == dev_gy))
    rows_per_worker = -(-block_ht // num_blocks)
    ex_external = -(-Kt // block_wt)
    if two_stage:
        first, second = (gx, gy) if row_wise else (gy, gx)
        rows_per_worker = -(-block_ht // first)
        ex_external = first + second - 1
    block = block_ht * block_wt
    cbs = [CircularBuffer((0,), block, in_t, True)]
    if residual is not None:
        cbs.append(CircularBuffer((1,), block, in_t, True))
    cbs += [CircularBuffer((2,), 1, bf16), CircularBuffer((4,), 1, bf16), CircularBuffer((3,), 1, bf16)]
    if gamma is not None:
        cbs.append(CircularBuffer((5,), block_wt, sizes[gamma.dtype]))
    if beta is not None:
        cbs.append(CircularBuffer((6,), block_wt, sizes[beta.dtype]))
    cbs += [CircularBuffer((24,), block, cb_t), CircularBuffer((18,), block, cb_t)]
    if not rms:
        cbs += [CircularBuffer((8,), block_ht, cb_t), CircularBuffer((9,), block_ht, cb_t),
                CircularBuffer((10,), ex_external, cb_t)]
    cbs += [CircularBuffer((11,), block_ht, cb_t), CircularBuffer((12,), block_ht, cb_t),
            CircularBuffer((13,), ex_external, cb_t), CircularBuffer((15,), block_ht, cb_t),
            CircularBuffer((20,), rows_per_worker, cb_t), CircularBuffer((16,), block, out_t, True)]
    ranges = tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in spec.grid.ranges())
    return make_program(NAME, "LayerNormShardedProgramFactory", cbs, ranges)


def sharded_softmax_program(x, out_dtype: DataType, program_config, *, mask=None, causal_mask: bool = False,
                            numeric_stable: bool = True, fp32_dest_acc_en: bool = False,
                            hw_dims: bool = False) -> Program:
    """SoftmaxDeviceOperation's sharded factory (softmax_program_factory_attention_optimized_sharded.cpp) for a
    sharded input with a SoftmaxShardedMultiCoreProgramConfig, on the config's whole grid.

    Its buffers are named, not numbered, in that factory; device_sim numbers them in the order it creates them:
    the input block (block_w x block_h, the input's own shard: globally allocated), the max and sum scalers (one
    tile each, float32 for a float32 input / destination), with a mask the scaled mask (block_w intermediate
    tiles), the fused scale (one bfloat16 tile) and the mask (block_w tiles in its dtype; a causal interleaved
    mask double-buffered but for the hw-dims variant (scale_causal_mask_hw_dims_softmax_in_place), a causal
    sharded one the whole block), the output block (the output's shard), the
    exps (block_w), 1/sum (one tile) and, numeric_stable, the row max (one) and x - max (block_w).
    """
    gx, gy = (program_config.compute_with_storage_grid_size.x, program_config.compute_with_storage_grid_size.y) \
        if hasattr(program_config.compute_with_storage_grid_size, "x") else tuple(
            program_config.compute_with_storage_grid_size)
    bw, bh = program_config.block_w, program_config.block_h
    mask_sharded = mask is not None and mask.is_sharded()
    key = ("SoftmaxDeviceOperation", "sharded", x.dtype, out_dtype, bw, bh, gx, gy,
           mask.dtype if mask is not None else None, mask_sharded, causal_mask, numeric_stable, fp32_dest_acc_en,
           hw_dims)

    def build():
        sizes = TILE_BYTES
        im = _F32 if fp32_dest_acc_en else _BF16
        im_t = sizes[im]
        cbs = [CircularBuffer((0,), bw * bh, sizes[x.dtype], True),
               CircularBuffer((1,), 1, sizes[_F32 if x.dtype == _F32 else _BF16]), CircularBuffer((2,), 1, im_t)]
        if mask is not None:
            # the hw-dims variant single-buffers its interleaved causal mask ("~20% faster", the factory says)
            entries = (bw * bh if mask_sharded else (bw if hw_dims else 2 * bw)) if causal_mask else bw
            cbs += [CircularBuffer((3,), bw, im_t), CircularBuffer((4,), 1, sizes[_BF16]),
                    CircularBuffer((5,), entries, sizes[mask.dtype])]
        n = len(cbs)
        cbs += [CircularBuffer((n,), bw * bh, sizes[out_dtype], True), CircularBuffer((n + 1,), bw, im_t),
                CircularBuffer((n + 2,), 1, im_t)]
        if numeric_stable:
            cbs += [CircularBuffer((n + 3,), 1, im_t), CircularBuffer((n + 4,), bw, im_t)]
        return make_program("SoftmaxDeviceOperation", "SoftmaxShardedProgramFactoryAttentionOptimized", cbs,
                            ((0, 0, gx - 1, gy - 1),))

    return cached(key, build)


def softmax_program(x, out_dtype: DataType, *, fp32_dest_acc_en: bool = False, numeric_stable: bool = True,
                    mask_dtype: DataType | None = None) -> Program:
    """SoftmaxDeviceOperation over the last dim of an interleaved tensor, as
    softmax_program_factory_attention_optimized.cpp creates its CBs, on every core of the grid.

    Wt tiles per row; block = the largest divisor of Wt up to 8 (4 with an fp32 destination). c_0 the
    input (the whole row when numeric_stable, else two blocks), c_11 the output (two blocks), c_7 the
    1/sum tile, c_2 the reduce scaler, c_6 the row's exps, c_5 a mask tile; numeric_stable adds c_8
    (the row max) and c_10 (the row, Wt tiles). Intermediates are float32 with an fp32 destination,
    else bfloat16. When these pass 90% of L1 the factory switches to its large-tensor kernel, whose
    row CBs hold 80 tiles. A mask (scale_mask_softmax, attention_softmax; `mask_dtype` its dtype) adds
    c_9 (Wt + block tiles, the scaled and masked row), c_3 (the scale tile) and c_4 (the mask row, Wt
    tiles, in the mask's format, as c_5 then is), and counts them in the 90% estimate.
    """
    Wt = tiles(x._value.shape[-1]) if x._value.dim() else 1
    dev = x.device()
    # Built once per what the CBs read: a model's softmaxes repeat one shape, and a new program at every call was
    # a new PROG definition in a capture's op log at every launch (300 for 300 layers; oplog.LogSink.program)
    key = ("SoftmaxDeviceOperation", "interleaved", Wt, x.dtype, out_dtype, fp32_dest_acc_en, numeric_stable,
           mask_dtype, grid_of(dev), dev.config.l1_size if dev is not None else 0)
    return cached(key, lambda: _softmax(dev, Wt, x.dtype, out_dtype, fp32_dest_acc_en, numeric_stable, mask_dtype))


def _softmax(dev, Wt: int, in_dtype: DataType, out_dtype: DataType, fp32_dest_acc_en: bool, numeric_stable: bool,
             mask_dtype: DataType | None) -> Program:
    block = max_divisor(Wt, 4 if fp32_dest_acc_en else 8)
    sizes = TILE_BYTES
    in_tile, out_tile, im = sizes[in_dtype], sizes[out_dtype], sizes[_F32 if fp32_dest_acc_en else _BF16]
    scalar = mask = sizes[_BF16]
    in0_t = Wt if numeric_stable else 2 * block
    im0_t = im4_t = Wt
    im3_t = Wt + block
    estimate = in0_t * in_tile + im0_t * im + 2 * block * out_tile + 5 * im + (Wt * im if numeric_stable else 0)
    if mask_dtype is not None:
        mask = sizes[mask_dtype]
        estimate += im3_t * im + scalar + Wt * mask
    large = dev is not None and estimate > 0.9 * dev.config.l1_size
    if large:
        in0_t = im0_t = im4_t = im3_t = 80
    cbs = [CircularBuffer((0,), in0_t, in_tile), CircularBuffer((11,), 2 * block, out_tile),
           CircularBuffer((7,), 1, im)]
    if large:
        cbs += [CircularBuffer((12,), 1, im), CircularBuffer((15,), 1, im), CircularBuffer((16,), 1, im)]
    cbs += [CircularBuffer((2,), 1, scalar), CircularBuffer((6,), im0_t, im)]
    if mask_dtype is not None:
        cbs += [CircularBuffer((9,), im3_t, im), CircularBuffer((3,), 1, scalar), CircularBuffer((4,), Wt, mask)]
    cbs.append(CircularBuffer((5,), 1, mask))
    if numeric_stable:
        cbs.append(CircularBuffer((8,), 1, im))
    if numeric_stable or large:
        cbs.append(CircularBuffer((10,), im4_t, im))
    gx, gy = grid_of(dev)
    return make_program("SoftmaxDeviceOperation", "SoftmaxProgramFactoryAttentionOptimized", cbs,
                        ((0, 0, gx - 1, gy - 1),))
