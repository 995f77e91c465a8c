"""Program-factory models of TT-NN's op families, one module a family, on device_work.py's framework.

Each module models one family's device operations as TT-NN 0.81's program factories build them: the
device operation's name (as graph capture writes it), the circular buffers the factory creates (count,
page size from the dtypes' tile sizes, pages from the blocking and double buffering the factory picks)
and the cores they live on. Ops call them after making their output and launch the result with
device_work.launch_for, which checks the CBs against L1 (TT-Metal's clash error) and tells the report.

- matmul: MatmulDeviceOperation (matmul, linear, conv2d's matmul), its default program config as TT-NN picks it
- normalization: layer_norm / rms_norm, interleaved and sharded (LayerNormDeviceOperation); softmax, interleaved
  and sharded (SoftmaxDeviceOperation)
- distributed_norm: {layer,rms}_norm_pre_all_gather / _post_all_gather's factories
- group_norm: GroupNormDeviceOperation's DRAM-interleaved factories (multicast and not)
- data_movement: tilize / untilize (+ padding), transpose, concat, copy, typecast, the sharding moves
- reduction: sum / mean / max / min (ReduceDeviceOperation)
- embedding: EmbeddingsDeviceOperation (row-major and tilized outputs), EmbeddingBackwardDeviceOperation
- conv: conv2d's input sharding, HaloDeviceOperation and Conv2dDeviceOperation (height sharding)
- transformer: SDPAOperation (plain and chunked prefill), NlpCreateHeadsDeviceOperation, NLPConcatHeadsDeviceOperation
- sdpa_windowed: WindowedScaledDotProductAttentionDeviceOperation
- eltwise: UnaryDeviceOperation, BinaryNgDeviceOperation (interleaved and sharded), TernaryDeviceOperation (where,
  lerp, addcmul, addcdiv), BcastDeviceOperation
- shape: ReshapeDeviceOperation, PadDeviceOperation, MoveDeviceOperation, the row-major SliceDeviceOperation
- indexing: ArgMaxDeviceOperation (single core); reduction_nd: reductions over outer dims (reduce_nd_loop)
- creation: RandDeviceOperation; falcon_heads: NlpCreateHeadsFalcon7BDeviceOperation
- rotary: RotaryEmbeddingDeviceOperation (GPT-NeoX, prefill and decode), Llama's sharded decode and fused QK
- ccl: all_gather's and reduce_scatter's programs on each chip of a mesh (device_sim.ops.ccl_work launches them)
- kv_cache: UpdateKVCacheOperation and the paged fill / update / fused update
- decode_heads: NLPCreateQKVHeadsDecodeDeviceOperation, NLPConcatHeadsDecodeDeviceOperation
- vision: UpsampleOperation (nearest), global_avg_pool2d's ReduceDeviceOperation
- pool: max_pool2d / avg_pool2d (input sharding, halo, its move, Pool2D)
- moreh: moreh_norm's moreh_abs_pow / moreh_sum composite
- fold: ttnn.fold's pad and Fold (row-major DRAM factory)
- adaptive_pool: adaptive_avg_pool2d's derived kernel, stride and padding (then pool's programs)
- repeat: RepeatDeviceOperation per repeated dim (repeat, expand), tile-native or through ROW_MAJOR; the
  repeat_interleave composite (untilize, concat, tilize)
- topk: TopKDeviceOperation (its single-core factory) between topk's WH transposes, pad, fill and slices
- accumulation: cumsum's AccumulationDeviceOperation between the permutes to dim 0
- intermediate: stand-ins for the tensors a composite makes inside (its transposed, padded or sliced copies)
- gather: GatherDeviceOperation (single-row single- and multi-core factories) between gather's WH transposes
- fill_pad: FillPadDeviceOperation (fill_implicit_tile_padding, before gather / topk / sort)
- scatter: ScatterDeviceOperation in ROW_MAJOR, between untilizes and a tilize
- sort: SortDeviceOperation (its single-row single-core factory) between sort's WH transposes, fill, pad and slices
- prod: ProdAllDeviceOperation, and ProdNcDeviceOperation between the permutes to dim 0 and back

docs/device_work.md lists what is modelled, what is approximate and what is not yet.

Every builder is cached on the facts its CBs depend on, so a model's repeated op costs one dict lookup.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs import normalization
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(64, 256), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = normalization.layer_norm_program(x, ttnn.bfloat16)
    >>> p.name, len(p.cbs), p.l1_bytes_per_core
    ('LayerNormDeviceOperation', 9, 114688)
    >>> ttnn.close_device(dev)
"""
