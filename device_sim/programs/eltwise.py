"""TernaryDeviceOperation (where, lerp, addcmul, addcdiv) as TT-NN's ternary program factory builds it;
BcastDeviceOperation (ttnn.bcast); UnaryDeviceOperation and BinaryNgDeviceOperation, interleaved (unary_program,
binary_program) and sharded.

tt-metal's ttnn/cpp/ttnn/operations/eltwise/ternary/device/ternary_program_factory.cpp: the first operand
(the predicate of where) streams through c_0, the second through c_1 and the third through c_2, two tiles
each in their own formats; a number in the second or third place is a kernel argument, not a CB (the TTS and
TST variants: the remaining tensor takes c_1). The output is c_3, two tiles. A TTT op with a row broadcast
(an operand one row high against taller ones) adds c_4, c_5 and c_6, two tiles each, for the broadcast rows.
The program runs on the device's whole worker grid. A sharded operand's CB is its shard; not modelled here
(interleaved operands only), nor the TSS variant (two numbers).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.eltwise import ternary_program
    >>> dev = ttnn.open_device()
    >>> a = ttnn.from_torch(torch.ones(64, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> p = ternary_program((a, a, 2.0), a)
    >>> p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs]
    ('TernaryDeviceOperation', [((0,), 2, 2048), ((1,), 2, 2048), ((3,), 2, 2048)])
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

from device_sim.device_work import (
    TILE_BYTES,
    CircularBuffer,
    Program,
    cached,
    cores_col_major,
    grid_of,
    make_program,
    split_work,
    tiles,
)
from device_sim.tensor import Tensor
from device_sim.types import DataType, Layout

NAME = "TernaryDeviceOperation"


def ternary_program(operands: tuple, out) -> Program | None:
    """The TernaryDeviceOperation of `operands` (three tensors or numbers; the first a tensor) into `out`; None
    when the factory's CBs are not modelled: a number first, two numbers, a ROW_MAJOR or sharded operand."""
    first, *rest = operands
    tensors = [t for t in rest if isinstance(t, Tensor)]
    if not isinstance(first, Tensor) or not tensors or out.layout != Layout.TILE:
        return None
    if any(t.layout != Layout.TILE or t.is_sharded() for t in (first, *tensors)) or out.is_sharded():
        return None
    shapes = tuple(tuple(t._value.shape) for t in (first, *tensors))
    key = (NAME, tuple(t.dtype for t in (first, *tensors)), out.dtype, shapes, grid_of(out.device()))
    return cached(key, lambda: _build(first, tensors, out, shapes))


def _build(first, tensors, out, shapes) -> Program:
    formats = [first.dtype, *(t.dtype for t in tensors)]
    cbs = [CircularBuffer((i,), 2, TILE_BYTES[dt]) for i, dt in enumerate(formats)]
    if len(tensors) == 2 and _row_broadcast(shapes):
        cbs += [CircularBuffer((4 + i,), 2, TILE_BYTES[dt]) for i, dt in enumerate(formats)]
    cbs.append(CircularBuffer((3,), 2, TILE_BYTES[out.dtype]))
    gx, gy = grid_of(out.device())
    return make_program(NAME, "TernaryProgramFactory", cbs, ((0, 0, gx - 1, gy - 1),))


def _row_broadcast(shapes) -> bool:
    """TernaryBroadcastType::ROW_BCAST: the same width everywhere and an operand one row high against taller."""
    if any(len(s) < 2 for s in shapes) or len({s[-1] for s in shapes}) != 1:
        return False
    heights = [s[-2] for s in shapes]
    return 1 in heights and max(heights) > 1


def bcast_program(a, b, out) -> Program | None:
    """BcastDeviceOperation (data_movement/bcast/device: the multi-core H, W and HW factories) for interleaved TILE
    tensors: c_0 two tiles of a, c_1 two tiles of b, c_16 two output tiles, each in its own format, created on the
    whole worker grid. Sharded inputs and outputs (the sharded H factories) are not modelled (None)."""
    if any(t.device() is None or t.layout != Layout.TILE or t.is_sharded() for t in (a, b, out)):
        return None
    key = ("BcastDeviceOperation", a.dtype, b.dtype, out.dtype, grid_of(out.device()))

    def build():
        gx, gy = grid_of(out.device())
        cbs = (CircularBuffer((0,), 2, TILE_BYTES[a.dtype]), CircularBuffer((1,), 2, TILE_BYTES[b.dtype]),
               CircularBuffer((16,), 2, TILE_BYTES[out.dtype]))
        return make_program("BcastDeviceOperation", "BcastMultiCoreProgramFactory", cbs, ((0, 0, gx - 1, gy - 1),))

    return cached(key, build)


def sharded_unary_program(x, out) -> Program | None:
    """UnaryDeviceOperation's sharded factory (eltwise/unary/device/unary_sharded_program_factory.cpp), which TT-NN
    picks for a sharded input: c_0 is the input's shard and c_2 the output's (both globally allocated: no static
    CB region), a shard's tiles of the input's tile size rounded up to 32 B, on the shard grid. None unless the
    output is sharded too (TT-NN's factory requires it)."""
    spec = x.memory_config().shard_spec if x.is_sharded() else None
    if spec is None or not out.is_sharded() or x.layout != Layout.TILE:
        return None
    key = ("UnaryDeviceOperation", "sharded", x.dtype, out.dtype, spec)

    def build():
        h, w = spec.shape
        tiles = -(-h // 32) * -(-w // 32)
        page = -(-TILE_BYTES[x.dtype] // 32) * 32
        ranges = tuple((r.start.x, r.start.y, r.end.x, r.end.y) for r in spec.grid.ranges())
        return make_program("UnaryDeviceOperation", "UnaryShardedProgramFactory",
                            (CircularBuffer((0,), tiles, page, True), CircularBuffer((2,), tiles, page, True)), ranges)

    return cached(key, build)


def sharded_binary_program(a, b, out, *, lhs_activations: bool = False, rhs_activations: bool = False) \
        -> Program | None:
    """BinaryNgDeviceOperation when its operands are L1 shards of one spec (binary_ng_program_factory.cpp's native
    sharding): c_0 is a's shard, c_1 b's (a number: one tile in a's format) and c_2 the output's, each a shard's
    tiles and globally allocated, plus one-tile c_3 / c_4 for fused input activations; created on the whole
    worker grid as the factory creates them. None (the interleaved model applies) unless a and the output are
    sharded alike and b is a number or sharded alike too."""
    if not (a.is_sharded() and out.is_sharded()) or a.layout != Layout.TILE:
        return None
    spec = a.memory_config().shard_spec
    b_tensor = isinstance(b, Tensor)
    if spec is None or out.memory_config().shard_spec != spec or tuple(out._value.shape) != tuple(a._value.shape):
        return None
    if b_tensor and (not b.is_sharded() or b.memory_config().shard_spec != spec
                     or tuple(b._value.shape) != tuple(a._value.shape)):
        return None
    b_dtype = b.dtype if b_tensor else None
    key = ("BinaryNgDeviceOperation", "sharded", a.dtype, b_dtype, out.dtype, spec, lhs_activations, rhs_activations,
           grid_of(out.device()))

    def build():
        tiles = spec.shape[0] * spec.shape[1] // (32 * 32)
        cbs = [CircularBuffer((0,), tiles, TILE_BYTES[a.dtype], True)]
        if lhs_activations:
            cbs.append(CircularBuffer((3,), 1, TILE_BYTES[a.dtype]))
        cbs.append(CircularBuffer((1,), tiles, TILE_BYTES[b_dtype], True) if b_tensor
                   else CircularBuffer((1,), 1, TILE_BYTES[a.dtype]))
        if rhs_activations:
            cbs.append(CircularBuffer((4,), 1, TILE_BYTES[b_dtype if b_tensor else a.dtype]))
        cbs.append(CircularBuffer((2,), tiles, TILE_BYTES[out.dtype], True))
        gx, gy = grid_of(out.device())
        return make_program("BinaryNgDeviceOperation", "BinaryNgProgramFactory", cbs, ((0, 0, gx - 1, gy - 1),))

    return cached(key, build)


_eltwise_programs: dict[tuple, Program] = {}


def unary_program(x, out_dtype: DataType) -> Program:
    """UnaryDeviceOperation on a TILE tensor (unary_program_factory.cpp): c_0 and c_2 hold two tiles each
    (the input's and the output's formats), on the cores split_work_to_cores gives its tiles."""
    dev = x.device()
    gx, gy = (dev.config.grid_x, dev.config.grid_y) if dev is not None else (8, 8)
    shape = x._value.shape
    n_tiles = 1
    for d in shape[:-2]:
        n_tiles *= d
    n_tiles *= tiles(shape[-2]) * tiles(shape[-1]) if len(shape) >= 2 else tiles(shape[-1]) if shape else 1
    key = ("unary", x.dtype, out_dtype, min(n_tiles, gx * gy), gx, gy)
    program = _eltwise_programs.get(key)
    if program is None:
        sizes = TILE_BYTES
        program = make_program("UnaryDeviceOperation", "UnaryProgramFactory",
                               (CircularBuffer((0,), 2, sizes[x.dtype]), CircularBuffer((2,), 2, sizes[out_dtype])),
                               cores_col_major(n_tiles, gx, gy))
        _eltwise_programs[key] = program
    return program


def binary_program(a, b_dtype: DataType | None, out_dtype: DataType, *, lhs_activations: bool = False,
                   rhs_activations: bool = False) -> Program:
    """BinaryNgDeviceOperation (binary_ng_program_factory.cpp) on every core: c_0 a, c_2 the output and
    c_1 b, two tiles each (b a scalar: one tile in a's format; b_dtype None), plus one-tile c_3 / c_4 when
    a's / b's fused activations run before the op."""
    dev = a.device()
    gx, gy = (dev.config.grid_x, dev.config.grid_y) if dev is not None else (8, 8)
    key = ("binary", a.dtype, b_dtype, out_dtype, lhs_activations, rhs_activations, gx, gy)
    program = _eltwise_programs.get(key)
    if program is None:
        sizes = TILE_BYTES
        cbs = [CircularBuffer((0,), 2, sizes[a.dtype])]
        if lhs_activations:
            cbs.append(CircularBuffer((3,), 1, sizes[a.dtype]))
        cbs.append(CircularBuffer((2,), 2, sizes[out_dtype]))
        cbs.append(CircularBuffer((1,), 2, sizes[b_dtype]) if b_dtype is not None
                   else CircularBuffer((1,), 1, sizes[a.dtype]))
        if rhs_activations:
            cbs.append(CircularBuffer((4,), 1, sizes[b_dtype if b_dtype is not None else a.dtype]))
        program = _eltwise_programs[key] = make_program("BinaryNgDeviceOperation", "BinaryNgProgramFactory", cbs,
                                                        ((0, 0, gx - 1, gy - 1),))
    return program


def repeat_interleave_mul_program(a, b, out) -> Program:
    """RepeatAndInterleaveEltwiseMulDeviceOperation (experimental/ssm/repeat_and_interleave_eltwise_mul/device/
    repeat_and_interleave_eltwise_mul_program_factory.cpp): split_work_to_cores (column by column) over b's width in
    tiles; c_0, c_1 two tiles of a's and b's formats, c_16 two of the output's, c_24..c_27 (the transposed inputs, b's
    broadcast row, the transposed output) two bfloat16 tiles each."""
    dev = a.device()
    key = ("RepeatAndInterleaveEltwiseMul", a.dtype, b.dtype, out.dtype, tuple(a.padded_shape), tuple(b.padded_shape),
           grid_of(dev))
    interm = TILE_BYTES[DataType.BFLOAT16]
    return cached(key, lambda: make_program(
        "RepeatAndInterleaveEltwiseMulDeviceOperation", "RepeatAndInterleaveEltwiseMulProgramFactory",
        (CircularBuffer((0,), 2, TILE_BYTES[a.dtype]), CircularBuffer((1,), 2, TILE_BYTES[b.dtype]),
         CircularBuffer((16,), 2, TILE_BYTES[out.dtype]), *(CircularBuffer((i,), 2, interm) for i in range(24, 28))),
        split_work(int(b.padded_shape[-1]) // 32, *grid_of(dev))))
