"""MinimalMatmulDeviceOperation (ttnn.experimental.minimal_matmul and minimal_matmul_split) as TT-NN's
minimal_matmul_program_factory.cpp builds it.

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.minimal_matmul import minimal_matmul_program
    >>> dev = ttnn.open_device()
    >>> a = ttnn.from_torch(torch.ones(64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> b = ttnn.from_torch(torch.ones(128, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = minimal_matmul_program(a, b, None, ttnn.bfloat16, None, fp32_dest_acc_en=True)
    >>> p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs]
    ('MinimalMatmulDeviceOperation', [((0,), 128, 2048), ((1,), 128, 2048), ((2,), 128, 2048), ((3,), 64, 4096)])
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import TILE_BYTES, CircularBuffer, Program, cached, grid_of, make_program
from device_sim.types import DataType

# determine_default_block_sizes (minimal_matmul_program_factory.cpp): 8x8x8-tile blocks whatever the shapes
_DEFAULT_BLOCK_TILES = 8


def minimal_matmul_program(a, b, bias, out_dtype: DataType, config, *, fp32_dest_acc_en: bool,
                           addcmul: tuple | None = None) -> Program:
    """The factory's CBs, on the whole config grid (or the device's compute grid without a config):
    c_0 in0 M_block x K_block tiles and c_1 in1 K_block x N_block, each double-buffered; c_2 the output
    M_block x N_block, double-buffered; c_3 the intermediate, one output block in the destination's format
    (Float32 with fp32_dest_acc_en, else Float16_b); c_4 the bias, N_block tiles, when there is one; with the fused
    addcmul (`addcmul`: its residual and gate tensors), c_5 the residual, one output block, and c_6 the gate,
    N_block tiles."""
    if config is not None:
        m, k, n = config.M_block_size, config.K_block_size, config.N_block_size
        gx, gy = config.compute_with_storage_grid_size.x, config.compute_with_storage_grid_size.y
    else:
        m = k = n = _DEFAULT_BLOCK_TILES
        gx, gy = grid_of(a.device())
    # Built once per what the CBs read (a new program at every call was a new PROG definition in a capture's op log)
    formats = (a.dtype, b.dtype, out_dtype, bias.dtype if bias is not None else None,
               tuple(t.dtype for t in addcmul) if addcmul is not None else None)
    return cached(("MinimalMatmulDeviceOperation", m, k, n, gx, gy, fp32_dest_acc_en, formats),
                  lambda: _build(m, k, n, gx, gy, fp32_dest_acc_en, *formats))


def _build(m: int, k: int, n: int, gx: int, gy: int, fp32_dest_acc_en: bool, a_dtype: DataType, b_dtype: DataType,
           out_dtype: DataType, bias_dtype: DataType | None, addcmul_dtypes: tuple | None) -> Program:
    interm = DataType.FLOAT32 if fp32_dest_acc_en else DataType.BFLOAT16
    cbs = [CircularBuffer((0,), m * k * 2, TILE_BYTES[a_dtype]), CircularBuffer((1,), k * n * 2, TILE_BYTES[b_dtype]),
           CircularBuffer((2,), m * n * 2, TILE_BYTES[out_dtype]), CircularBuffer((3,), m * n, TILE_BYTES[interm])]
    if bias_dtype is not None:
        cbs.append(CircularBuffer((4,), n, TILE_BYTES[bias_dtype]))
    if addcmul_dtypes is not None:
        residual, gate = addcmul_dtypes
        cbs += [CircularBuffer((5,), m * n, TILE_BYTES[residual]), CircularBuffer((6,), n, TILE_BYTES[gate])]
    return make_program("MinimalMatmulDeviceOperation", "MinimalMatmulProgramFactory", cbs, ((0, 0, gx - 1, gy - 1),))
