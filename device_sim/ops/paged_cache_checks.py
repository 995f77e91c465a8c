"""TT-NN 0.81's refusals of a paged KV-cache update that hardware cannot run: the layout, index and sharding checks of
PagedUpdateCacheDeviceOperation and PagedFusedUpdateCacheDeviceOperation (tt-metal's experimental/paged_cache/
device/{update_cache,fused_update_cache}/*_device_operation.cpp, validate_on_program_cache_miss).

Each raises TT-NN's TT_FATAL (a RuntimeError: the condition, TT-NN's words, then device_sim's line with the
fix) before the op computes or writes anything, so a refused call leaves the caches as they were.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.ops.paged_cache_checks import check_update_input
    >>> dev = ttnn.open_device()
    >>> token = ttnn.from_torch(torch.ones(1, 2, 1, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> try:
    ...     check_update_input("ttnn.experimental.paged_update_cache", token, token, update_idxs=[0, 0])
    ... except RuntimeError as e:
    ...     print(str(e).splitlines()[2])
    Expect input_tensor to be sharded
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.program_config_checks import tt_fatal
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout, ShardOrientation, TensorMemoryLayout

_WHERE = "device_sim/ops/paged_cache_checks.py"


def _fix(op_name: str, x: Tensor) -> str:
    users, d = x._value.shape[1], tuple(x.padded_shape)[-1]
    return (f"{op_name}: height-shard the input [1, B, heads, D] in L1 one user a core, e.g. "
            f"ttnn.to_memory_config(x, ttnn.MemoryConfig(ttnn.TensorMemoryLayout.HEIGHT_SHARDED, ttnn.BufferType.L1, "
            f"ttnn.ShardSpec(<{users} cores>, ({tuple(x.padded_shape)[-2]}, {d}), ttnn.ShardOrientation.ROW_MAJOR)))")


def _check_cache(cache: Tensor) -> None:
    if cache.layout != Layout.TILE:
        raise tt_fatal("cache_tensor.layout() == Layout::TILE", "Cache tensor in update_cache must be tilized\n"
                       "convert the cache with ttnn.to_layout(cache, ttnn.TILE_LAYOUT) once, before decoding",
                       where=_WHERE)


def _check_indices(op_name: str, x: Tensor, update_idxs, update_idxs_tensor, page_table, share_cache) -> None:
    """The paged-cache and update-index checks, in TT-NN's order (both device operations make them)."""
    if page_table is not None:
        if share_cache:
            raise tt_fatal("!operation_attributes.share_cache", f"share_cache not supported with paged cache\n"
                           f"{op_name}: drop share_cache or page_table", where=_WHERE)
        if update_idxs_tensor is None:
            raise tt_fatal("update_idxs_tensor.has_value()", f"Paged cache requires update_idxs tensor\n{op_name}: "
                           f"give the positions as update_idxs_tensor=ttnn.from_torch(torch.tensor(update_idxs, "
                           f"dtype=torch.int32), dtype=ttnn.int32, device=device)", where=_WHERE)
        want = DataType.UINT16 if page_table.is_sharded() else DataType.INT32
        if page_table.dtype != want:
            raise tt_fatal(f"page_table_val.dtype() == DataType::{want.name}", f"Expect page table to have datatype "
                           f"{want.name}\n{op_name}: the page table is DataType::{page_table.dtype.name}",
                           where=_WHERE)
        if page_table.layout != Layout.ROW_MAJOR:
            raise tt_fatal("page_table_val.layout() == Layout::ROW_MAJOR", f"Expect page table to have memory layout "
                           f"in ROW MAJOR\n{op_name}: make the page table with layout=ttnn.ROW_MAJOR_LAYOUT",
                           where=_WHERE)
    if update_idxs_tensor is not None:
        if update_idxs_tensor.dtype != DataType.INT32:
            raise tt_fatal("update_idxs_tensor_val.dtype() == DataType::INT32", f"Expected update_idxs to have "
                           f"datatype INT32\n{op_name}: update_idxs_tensor is "
                           f"DataType::{update_idxs_tensor.dtype.name}", where=_WHERE)
        if update_idxs_tensor.layout != Layout.ROW_MAJOR:
            raise tt_fatal("update_idxs_tensor_val.layout() == Layout::ROW_MAJOR", f"Expected update_idxs to have "
                           f"memory layout in ROW MAJOR\n{op_name}: make update_idxs_tensor with "
                           f"layout=ttnn.ROW_MAJOR_LAYOUT", where=_WHERE)
    if update_idxs_tensor is None or not update_idxs_tensor.is_sharded():
        count = len(update_idxs) if update_idxs_tensor is None else tuple(update_idxs_tensor.padded_shape)[0]
        batch = tuple(x.padded_shape)[1]
        if count != batch:
            raise tt_fatal("input_tensor.padded_shape()[1] == num_indices", f"Number of update_idxs ({count}) should "
                           f"match batch size ({batch})\n{op_name}: give one position a user (-1 skips a user)",
                           where=_WHERE)


def _check_sharded(op_name: str, x: Tensor) -> None:
    """The sharding checks both device operations make of each input, in their order."""
    if not x.is_sharded():
        raise tt_fatal("input_tensor.is_sharded()", f"Expect input_tensor to be sharded\n{_fix(op_name, x)}",
                       where=_WHERE)
    cfg = x.memory_config()
    if cfg.memory_layout == TensorMemoryLayout.WIDTH_SHARDED:
        raise tt_fatal("input_tensor.memory_config().memory_layout() != TensorMemoryLayout::WIDTH_SHARDED",
                       f"Expect input_tensor to NOT have memory layout WIDTH SHARDED\n{_fix(op_name, x)}", where=_WHERE)
    if cfg.shard_spec.orientation != ShardOrientation.ROW_MAJOR:
        raise tt_fatal("input_tensor.shard_spec().value().orientation == ShardOrientation::ROW_MAJOR",
                       f"Only ROW_MAJOR sharding is supported\n{_fix(op_name, x)}", where=_WHERE)


def _check_tail(op_name: str, x: Tensor, batch_offset: int) -> None:
    if x.dtype not in (DataType.FLOAT32, DataType.BFLOAT16):
        raise tt_fatal("input_tensor.dtype() == DataType::FLOAT32 || input_tensor.dtype() == DataType::BFLOAT16",
                       f"Data type of input tensor for update cache must be FLOAT32 or BFLOAT16\n{op_name}: the input "
                       f"is DataType::{x.dtype.name}; typecast it", where=_WHERE)
    if batch_offset != 0:
        raise tt_fatal("operation_attributes.batch_offset == 0", f"batch_offset must be 0\n{op_name}: give the "
                       f"cache's own users' tokens (input [1, B, heads, D] for a cache of B users) or a page table",
                       where=_WHERE)


def check_update_input(op_name: str, x: Tensor, cache: Tensor, *, update_idxs=(), update_idxs_tensor=None,
                       page_table=None, share_cache=None, batch_offset: int = 0) -> None:
    """paged_update_cache: a TILE input and cache; the page table with an index tensor; one index a user; the input
    sharded (not width-sharded, ROW_MAJOR orientation), float32 or bfloat16; batch_offset 0."""
    if x.layout != Layout.TILE:
        raise tt_fatal("input_tensor.layout() == Layout::TILE", f"Input tensor in non-fused update_cache must be "
                       f"tilized\n{op_name}: convert the input with ttnn.to_layout(x, ttnn.TILE_LAYOUT), or use "
                       f"ttnn.experimental.paged_fused_update_cache, which takes ROW_MAJOR inputs", where=_WHERE)
    _check_cache(cache)
    _check_indices(op_name, x, update_idxs, update_idxs_tensor, page_table, share_cache)
    _check_sharded(op_name, x)
    _check_tail(op_name, x, batch_offset)


def check_fused_inputs(op_name: str, cache1: Tensor, x1: Tensor, cache2: Tensor, x2: Tensor, *, update_idxs=(),
                       update_idxs_tensor=None, page_table=None, share_cache=None, batch_offset: int = 0) -> None:
    """paged_fused_update_cache: per pair as paged_update_cache (but for the input's layout); then both inputs TILE
    or both ROW_MAJOR (row-major only for Llama-70B's [.., 8, 128] shards), on disjoint grids of as many cores."""
    for cache, x in ((cache1, x1), (cache2, x2)):
        _check_cache(cache)
        _check_indices(op_name, x, update_idxs, update_idxs_tensor, page_table, share_cache)
        _check_sharded(op_name, x)
        _check_tail(op_name, x, batch_offset)
    tiled = x1.layout == Layout.TILE and x2.layout == Layout.TILE
    row_major = x1.layout == Layout.ROW_MAJOR and x2.layout == Layout.ROW_MAJOR
    if not (tiled or row_major):
        raise tt_fatal("is_tiled || is_row_major", f"input_tensor1 and input_tensor2 must be either both tiled or both "
                       f"row-major\n{op_name}: input_tensor1 is {x1.layout.name}, input_tensor2 {x2.layout.name}; "
                       f"convert one with ttnn.to_layout", where=_WHERE)
    if row_major and (tuple(x1.padded_shape)[-1] != 128 or tuple(x2.padded_shape)[-2] != 8):
        raise tt_fatal("input_tensor1.padded_shape()[-1] == 128 && input_tensor2.padded_shape()[-2] == 8",
                       f"when input_tensor1 and input_tensor2 are row major, only Llama70b tensor shapes are "
                       f"supported\n{op_name}: inputs {list(x1.padded_shape)} and {list(x2.padded_shape)}; give "
                       f"TILE inputs for other shapes", where=_WHERE)
    g1, g2 = x1.memory_config().shard_spec.grid, x2.memory_config().shard_spec.grid
    c1, c2 = ({(c.x, c.y) for r in g.ranges() for c in r.cores()} for g in (g1, g2))
    if c1 & c2:
        raise tt_fatal("!is_overlap", f"input_tensor1 ({g1}) and input_tensor2 ({g2}) must not overlap\n{op_name}: "
                       f"shard the keys and the values on different cores", where=_WHERE)
    if len(c1) != len(c2):
        raise tt_fatal("input1_cores.num_cores() == input2_cores.num_cores()", f"input_tensor1 ({g1}) and "
                       f"input_tensor2 ({g2}) must have same number of cores\n{op_name}: shard both one user a core",
                       where=_WHERE)
