"""EmbeddingsDeviceOperation as TT-NN's two interleaved embedding factories build it, and embedding_bw's
EmbeddingBackwardDeviceOperation.

A ROW_MAJOR output is embeddings_rm_program_factory.cpp, a TILE output embeddings_fused_program_factory.cpp
(tt-metal's ttnn/cpp/ttnn/operations/embedding/device/); sharded outputs are not modelled. The backward op has one
factory (embedding_backward/device/), interleaved only.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.embedding import embedding_program
    >>> dev = ttnn.open_device()
    >>> ids = ttnn.from_torch(torch.zeros(2, 64, dtype=torch.int32), dtype=ttnn.uint32, device=dev)
    >>> w = ttnn.from_torch(torch.ones(512, 256), dtype=ttnn.bfloat16, device=dev)
    >>> [(cb.indices, cb.num_pages, cb.page_size) for cb in embedding_program(ids, w, ttnn.bfloat16, ttnn.TILE).cbs]
    [((0,), 16, 2048), ((1,), 1, 128), ((2,), 16, 2048)]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim import dtypes
from device_sim.device_work import TILE, TILE_BYTES, CircularBuffer, Program, cached, grid_of, make_program, split_work
from device_sim.types import BufferType, DataType, Layout

NAME = "EmbeddingsDeviceOperation"
_L1_BUDGET = 1024 * 1024  # bytes: both factories chunk a row that would take more
_MAX_DOUBLE_BUFFER_TILES = 64  # the fused factory single-buffers a wider row


def _round32(n: int) -> int:
    return -(-n // 32) * 32


def embedding_program(ids, weight, out_dtype: DataType, out_layout: Layout, *, padded: bool = False,
                      binary: bool = False) -> Program | None:
    """The program for ids [batch, seq] into a table of hidden `weight.shape[-1]`; None when TT-NN runs a
    factory not modelled (a TILE output whose rows are not whole tiles). `padded` / `binary`: the
    embeddings_type PADDED / BINARY cache the pad row / both rows in one more CB."""
    dev = ids.device()
    # padded shapes, read cheaply: a row-major tensor's is its logical shape (Tensor.padded_shape costs ~4 us)
    shape = ids._value.shape if ids.layout == Layout.ROW_MAJOR else tuple(ids.padded_shape)
    rows = shape[-1] * (shape[0] if len(shape) > 1 else 1)
    width = weight._value.shape[-1]
    hidden = width if weight.layout == Layout.ROW_MAJOR else -(-width // TILE) * TILE
    ids_in_l1 = ids.memory_config() is not None and ids.memory_config().buffer_type == BufferType.L1
    key = (NAME, rows, hidden, ids.dtype, weight.dtype, out_dtype, out_layout, padded, binary, ids_in_l1,
           grid_of(dev))
    if out_layout == Layout.TILE and rows % TILE:
        return None
    return cached(key, lambda: _build(dev, rows, hidden, ids.dtype, weight.dtype, out_dtype, out_layout, padded,
                                      binary, ids_in_l1))


def _build(dev, rows, hidden, ids_dtype, w_dtype, out_dtype, out_layout, padded, binary, ids_in_l1) -> Program:
    gx, gy = grid_of(dev)
    ids_size = dtypes.ELEMENT_SIZE[ids_dtype]
    row_bytes = hidden * dtypes.ELEMENT_SIZE[w_dtype]
    cache = [CircularBuffer((3 if out_layout == Layout.TILE else 2,), 2 if binary else 1, _round32(row_bytes))] \
        if padded or binary else []
    if out_layout == Layout.TILE:
        # a block is 32 rows; the weights' row, in tiles, double-buffered unless wider than 64 tiles
        tpb, w_tile = hidden // TILE, TILE_BYTES[w_dtype]
        if 2 * tpb * w_tile > _L1_BUDGET:
            per_chunk = min(max(min(_L1_BUDGET // w_tile, tpb), 1), _MAX_DOUBLE_BUFFER_TILES)
            buffering = 2
        else:
            per_chunk, buffering = tpb, 1 if tpb > _MAX_DOUBLE_BUFFER_TILES else 2
        cbs = [CircularBuffer((0,), buffering * per_chunk, w_tile), CircularBuffer((1,), 1, TILE * ids_size),
               CircularBuffer((2,), buffering * per_chunk, TILE_BYTES[out_dtype]), *cache]
        return make_program(NAME, "EmbeddingsFusedProgramFactory", cbs, split_work(rows // TILE, gx, gy))
    # ROW_MAJOR: a weights row a page (aligned as the ids' buffer), doubled when a core takes two rows or more
    alignment = dev.config.l1_alignment if ids_in_l1 else dev.config.dram_alignment
    page = -(-row_bytes // alignment) * alignment
    if page > _L1_BUDGET:
        page = (_L1_BUDGET // alignment) * alignment
    per_core = -(-rows // (gx * gy))
    block_height = alignment // ids_size
    cbs = [CircularBuffer((0,), 2 if per_core > 1 else 1, page),
           CircularBuffer((1,), 1, block_height * _round32(ids_size)), *cache]
    return make_program(NAME, "EmbeddingsRMProgramFactory", cbs, split_work(rows, gx, gy))


BACKWARD_NAME = "EmbeddingBackwardDeviceOperation"
_INDICES_A_BLOCK = 32  # the factory's INPUT_SIZE: the reader takes 32 ids (one grad tile row) at a time


def embedding_backward_program(dev, hidden: int, grad_dtype: DataType, ids_dtype: DataType,
                               out_dtype: DataType) -> Program:
    """EmbeddingBackwardProgramFactory (embedding_backward/device/embedding_backward_program_factory.cpp):
    split_work_to_cores over the gradient's `hidden` // 32 tile columns, every core walking all the ids; c_0 (grad),
    c_2 (the output tiles read back) and c_16 (the output tiles written) hold a core's most tile columns, c_1 32 ids,
    c_24 their 32-byte UInt8 row mask, c_25 the 16-byte chunk count the reader hands the compute kernel."""
    gx, gy = grid_of(dev)
    key = (BACKWARD_NAME, hidden, grad_dtype, ids_dtype, out_dtype, gx, gy)

    def build():
        columns = max(hidden // TILE, 1)
        per_core = -(-columns // min(columns, gx * gy))
        out_tile = TILE_BYTES[out_dtype]
        cbs = (CircularBuffer((0,), per_core, TILE_BYTES[grad_dtype]),
               CircularBuffer((1,), 1, _INDICES_A_BLOCK * dtypes.ELEMENT_SIZE[ids_dtype]),
               CircularBuffer((2,), per_core, out_tile),
               CircularBuffer((24,), 1, _INDICES_A_BLOCK),
               CircularBuffer((25,), 1, 16),
               CircularBuffer((16,), per_core, out_tile))
        return make_program(BACKWARD_NAME, "EmbeddingBackwardProgramFactory", cbs, split_work(columns, gx, gy))

    return cached(key, build)
