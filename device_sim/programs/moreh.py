"""ttnn.moreh_norm's device work, as moreh_norm.cpp composes it.

A finite, non-zero p over one dim is |x|^p (MorehAbsPowOperation), a sum over the dim (MorehSumOperation) and
the 1/p-th power (MorehAbsPowOperation again); p of 0 or +-inf runs MorehNormOperation itself. The factories,
in tt-metal's ttnn/cpp/ttnn/operations/moreh/: moreh_abs_pow/device/moreh_abs_pow_program_factory.cpp,
moreh_sum/device/moreh_sum_{w,h}_program_factory.cpp and moreh_norm/device/ord_other/
moreh_norm_program_factory_{w,h}_other.cpp (select_program_factory: the last dim takes the W factory, the one
before it the H factory).

Example:
    >>> import torch, device_sim as ttnn
    >>> from device_sim.programs.moreh import moreh_norm_programs
    >>> dev = ttnn.open_device()
    >>> x = ttnn.from_torch(torch.ones(2, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=dev)
    >>> [(p.name, p.factory) for p in moreh_norm_programs(x, 2.0, (1,), True)]  # doctest: +NORMALIZE_WHITESPACE
    [('MorehAbsPowOperation', 'MorehAbsPowFactory'), ('MorehSumOperation', 'MorehSumHFactory'),
     ('MorehAbsPowOperation', 'MorehAbsPowFactory')]
    >>> ttnn.close_device(dev)
"""

from __future__ import annotations

import math

from device_sim.device_work import (
    TILE,
    TILE_BYTES,
    CircularBuffer,
    cached,
    cores_col_major,
    grid_of,
    make_program,
    split_work,
)
from device_sim.types import BufferType, DataType, Layout

_BF16 = DataType.BFLOAT16


def moreh_norm_programs(x, p: float, dims: tuple, keepdim: bool, *, fp32_dest_acc_en: bool = False):
    """The programs of a p-norm of a bfloat16 TILE interleaved input over its tile dims (moreh_sum takes bfloat16
    or int32), in launch order, as moreh_norm.cpp composes them:

    - p finite and not 0, one dim: |x|^p, the sum over the dim, the 1/p-th power;
    - p of +-inf: MorehNormOperation per dim, the last dim first (a max of |x|);
    - p of 0: MorehNormOperation over the last dim asked (a count of non-zeros), then the sum over the other.

    - p finite and not 0, several dims: |x|^p, moreh_sum over them (one MorehSumOperation a dim, as
      moreh_reduce_programs), the 1/p-th power of what is left.

    None for what is not modelled: p of 0 or +-inf over an outer dim (moreh_norm's NC factory).
    """
    if x.device() is None or x.is_sharded() or x.layout != Layout.TILE or x.dtype != _BF16:
        return None
    rank = x._value.dim()
    ds = tuple(sorted({d % rank for d in dims}, reverse=True))  # moreh_norm.cpp sorts them, largest first
    finite = p != 0 and not math.isinf(p)
    if rank < 2 or not ds or (ds[-1] < rank - 2 and not finite):
        return None
    shape = tuple(x.padded_shape)
    key = ("moreh_norm", tuple(x._value.shape), ds, keepdim, p == 0, math.isinf(p), fp32_dest_acc_en,
           grid_of(x.device()))

    def build():
        grid = grid_of(x.device())
        fp32 = fp32_dest_acc_en
        # every program's output keeps a reduced tile dim as one padded tile (32), with keepdim or without
        if math.isinf(p) or p == 0:
            programs, s = [], shape
            for i, d in enumerate(ds):
                if p == 0 and i:  # the count's other dim is summed (moreh_sum)
                    programs.append(_sum(s, d == rank - 1, fp32, grid))
                else:
                    programs.append(_norm(s, d == rank - 1, fp32, grid))
                s = s[:d] + (TILE,) + s[d + 1:]
            return tuple(programs)
        steps, left = reduce_steps(tuple(x._value.shape), ds, keepdim)
        sums = tuple(_reduce_step(s, d, False, fp32, grid) for s, d in steps)
        return (_abs_pow(shape, fp32, grid), *sums, _abs_pow(_padded(left), fp32, grid))

    return cached(key, build)


def _norm(shape, over_w: bool, fp32: bool, grid):
    """MorehNormOperation's ProgramFactoryWOther / ProgramFactoryHOther (ord_other/): c_0 the input, c_1 one,
    c_2 the mask, c_16 the output, c_24..c_26 (f(x), its reduction over the dim, the running result) one tile each,
    the intermediates float32 with an fp32 destination; the rows (W) or columns (H) of tiles column by column."""
    bf16, im = TILE_BYTES[_BF16], TILE_BYTES[DataType.FLOAT32 if fp32 else _BF16]
    cbs = [CircularBuffer((i,), 1, bf16) for i in (0, 1, 2, 16)] + [CircularBuffer((i,), 1, im) for i in (24, 25, 26)]
    units = _outer(shape) * (shape[-2] if over_w else shape[-1]) // TILE
    factory = "ProgramFactoryWOther" if over_w else "ProgramFactoryHOther"
    return make_program("MorehNormOperation", factory, cbs, cores_col_major(units, *grid))


def _outer(shape) -> int:
    n = 1
    for v in shape[:-2]:
        n *= v
    return n


def _abs_pow(shape, fp32: bool, grid):
    """MorehAbsPowFactory: c_0..c_3 (input, one, 1/p's decimal, the W mask), c_16 the output and c_24..c_27 (|x|,
    log|x|, the decimal power, |x|^p) one tile each, the intermediates float32 with an fp32 destination; on
    split_work_to_cores' cores (column by column) for the rows of tiles."""
    bf16, im = TILE_BYTES[_BF16], TILE_BYTES[DataType.FLOAT32 if fp32 else _BF16]
    cbs = [CircularBuffer((i,), 1, bf16) for i in (0, 1, 2, 3, 16)] + [CircularBuffer((i,), 1, im)
                                                                        for i in (24, 25, 26, 27)]
    rows = _outer(shape) * shape[-2] // TILE
    return make_program("MorehAbsPowOperation", "MorehAbsPowFactory", cbs, cores_col_major(rows, *grid))


def _sum(shape, over_w: bool, fp32: bool, grid):
    """MorehSumWFactory / MorehSumHFactory: c_0 two input tiles, c_2 the bfloat16 scaler (two tiles over W, one
    over H), c_3 the mask (one bfloat16 tile), c_24 the accumulator (float32 with an fp32 destination), c_25 one
    tile (sized as c_24 over W), c_16 two output tiles; the work is the rows of tiles (W) or the columns (H),
    split column by column over the grid."""
    bf16, im = TILE_BYTES[_BF16], TILE_BYTES[DataType.FLOAT32 if fp32 else _BF16]
    cbs = [CircularBuffer((0,), 2, bf16), CircularBuffer((2,), 2 if over_w else 1, bf16),
           CircularBuffer((3,), 1, bf16), CircularBuffer((24,), 1, im),
           CircularBuffer((25,), 1, im if over_w else bf16), CircularBuffer((16,), 2, bf16)]
    units = _outer(shape) * (shape[-2] if over_w else shape[-1]) // TILE
    factory = "MorehSumWFactory" if over_w else "MorehSumHFactory"
    return make_program("MorehSumOperation", factory, cbs, cores_col_major(units, *grid))


def moreh_arange_program(out):
    """MorehArangeOperation (moreh_arange_program_factory.cpp): c_16 of one tile in the output's format on the cores
    split_work_to_cores gives the output's last-dim tiles; its writer fills each tile itself."""
    dev = out.device()
    wt = -(-int(out._value.shape[-1]) // TILE)
    return cached(("MorehArangeOperation", wt, out.dtype, out.layout, grid_of(dev)), lambda: make_program(
        "MorehArangeOperation", "MorehArangeProgramFactory", (CircularBuffer((16,), 1, TILE_BYTES[out.dtype]),),
        split_work(wt, *grid_of(dev))))


def moreh_dot_program(a):
    """MorehDotOperation (moreh_dot_program_factory.cpp): on core (0, 0), in the input's format, c_0 and c_1 of two
    tiles (a, b), c_2 of one (the scaler), c_16 of two (out), c_24 and c_25 of one (intermediates)."""
    page = TILE_BYTES[a.dtype]
    return cached(("MorehDotOperation", a.dtype), lambda: make_program(
        "MorehDotOperation", "MorehDotProgramFactory",
        tuple(CircularBuffer((i,), n, page) for i, n in ((0, 2), (1, 2), (2, 1), (16, 2), (24, 1), (25, 1))),
        ((0, 0, 0, 0),)))


def moreh_reduce_programs(x, steps: tuple, *, mean: bool, fp32_dest_acc_en: bool = False):
    """The programs of ttnn.moreh_sum / moreh_mean of a bfloat16 TILE interleaved input: one MorehSumOperation or
    MorehMeanOperation a dim, the largest dim first (moreh_sum.cpp / moreh_mean.cpp), each on the padded shape the
    step before left. `steps` is (padded shape, dim) of each step. select_program_factory: the last dim takes the W
    factory, the one before it the H factory, any other the NC factory. None for an int32 sum (the Int factories,
    not modelled) or another input."""
    if x.device() is None or x.is_sharded() or x.layout != Layout.TILE or x.dtype != _BF16:
        return None
    key = ("moreh_reduce", steps, mean, fp32_dest_acc_en, grid_of(x.device()))

    def build():
        grid = grid_of(x.device())
        return tuple(_reduce_step(shape, d, mean, fp32_dest_acc_en, grid) for shape, d in steps)

    return cached(key, build)


def reduce_steps(shape: tuple, dims, keepdim: bool) -> tuple[tuple, tuple]:
    """moreh_sum.cpp's / moreh_mean.cpp's steps over `dims` of a logical `shape`: one device operation a dim, the
    largest first, each as (its input's padded shape, dim), and the logical shape left. compute_output_specs: a
    reduced dim becomes 1 with keepdim or when it is one of the last two (a tile dim, kept as one padded tile),
    and is dropped otherwise."""
    steps = []
    for d in sorted(dims, reverse=True):
        steps.append((_padded(shape), d))
        shape = shape[:d] + (1,) + shape[d + 1:] if keepdim or d >= len(shape) - 2 else shape[:d] + shape[d + 1:]
    return tuple(steps), shape


def _padded(shape: tuple) -> tuple:
    return shape[:-2] + tuple(-(-v // TILE) * TILE for v in shape[-2:])


def _reduce_step(shape: tuple, d: int, mean: bool, fp32: bool, grid):
    """One MorehSum/MorehMeanOperation over dim d of a padded shape: the W factory for the last dim, H for the one
    before it, NC (over the output's tiles) for any other (select_program_factory)."""
    rank = len(shape)
    if d >= rank - 2:
        over_w = d == rank - 1
        return _mean(shape, over_w, fp32, grid) if mean else _sum(shape, over_w, fp32, grid)
    return _reduce_nc(_outer(shape) // shape[d] * shape[-2] * shape[-1] // (TILE * TILE), mean, fp32, grid)


def _mean(shape, over_w: bool, fp32: bool, grid):
    """MorehMeanWFactory / MorehMeanHFactory (moreh_mean_{w,h}_program_factory.cpp): c_0 two input tiles, c_2 the
    scaler, c_3 the mask, c_24 (float32 with an fp32 destination) and c_25 one tile each, c_16 one output tile; the
    rows of tiles (W) or the columns (H) split column by column over the grid."""
    bf16, im = TILE_BYTES[_BF16], TILE_BYTES[DataType.FLOAT32 if fp32 else _BF16]
    cbs = [CircularBuffer((0,), 2, bf16), CircularBuffer((2,), 1, bf16), CircularBuffer((3,), 1, bf16),
           CircularBuffer((24,), 1, im), CircularBuffer((25,), 1, bf16), CircularBuffer((16,), 1, bf16)]
    units = _outer(shape) * (shape[-2] if over_w else shape[-1]) // TILE
    factory = "MorehMeanWFactory" if over_w else "MorehMeanHFactory"
    return make_program("MorehMeanOperation", factory, cbs, cores_col_major(units, *grid))


def _reduce_nc(out_tiles: int, mean: bool, fp32: bool, grid):
    """MorehSumNCFactory (c_0 two input tiles, c_1 a zero tile, c_24 the running sum, float32 with an fp32
    destination, c_16 two output tiles) or MorehMeanNCFactory (the same and c_2 the scaler, c_24 in bfloat16);
    split_work_to_cores over the output's tiles, column by column."""
    bf16 = TILE_BYTES[_BF16]
    im = TILE_BYTES[DataType.FLOAT32 if fp32 and not mean else _BF16]
    cbs = [CircularBuffer((0,), 2, bf16), CircularBuffer((1,), 1, bf16)]
    if mean:
        cbs.append(CircularBuffer((2,), 1, bf16))
    cbs += [CircularBuffer((24,), 1, im), CircularBuffer((16,), 2, bf16)]
    name = "MorehMeanOperation" if mean else "MorehSumOperation"
    factory = "MorehMeanNCFactory" if mean else "MorehSumNCFactory"
    return make_program(name, factory, cbs, cores_col_major(out_tiles, *grid))


def moreh_reduce_backward_program(grad, *, mean: bool):
    """MorehSumBackwardOperation / MorehMeanBackwardOperation (moreh_{sum,mean}_backward_program_factory.cpp):
    output_grad's tiles broadcast over the reduced dims into input_grad, c_0 two tiles, c_1 a zero tile, (mean:
    c_2 the scaler, c_24 one tile), c_16 two output tiles, in input_grad's format; split_work_to_cores over
    input_grad's tiles, column by column."""
    dev = grad.device()
    key = ("moreh_reduce_backward", mean, tuple(grad.padded_shape), grad.dtype, grid_of(dev))

    def build():
        page = TILE_BYTES[grad.dtype]
        cbs = [CircularBuffer((0,), 2, page), CircularBuffer((1,), 1, page)]
        if mean:
            cbs += [CircularBuffer((2,), 1, page), CircularBuffer((24,), 1, page)]
        cbs.append(CircularBuffer((16,), 2, page))
        shape = tuple(grad.padded_shape)
        tiles = _outer(shape) * shape[-2] * shape[-1] // (TILE * TILE)
        name = "MorehMeanBackwardOperation" if mean else "MorehSumBackwardOperation"
        factory = "MorehMeanBackwardFactory" if mean else "ProgramFactory"
        return make_program(name, factory, cbs, cores_col_major(tiles, *grid_of(dev)))

    return cached(key, build)


def moreh_matmul_program(out, *, fp32_dest_acc_en: bool = False):
    """MorehMatmulOperation (moreh_matmul_program_factory.cpp), in the output's format: c_0 / c_1 two tiles of
    input and other, c_2 / c_3 three mask tiles each, c_4 two bias tiles, c_24 the running sum and c_27 the
    bias add's (float32 with an fp32 destination), c_25 / c_26 two transposed tiles each, c_16 two output tiles;
    split_work_to_cores over the output's tiles, column by column."""
    dev = out.device()
    key = ("MorehMatmulOperation", tuple(out.padded_shape), out.dtype, fp32_dest_acc_en, grid_of(dev))

    def build():
        page = TILE_BYTES[out.dtype]
        im = TILE_BYTES[DataType.FLOAT32] if fp32_dest_acc_en else page
        cbs = [CircularBuffer((i,), n, page) for i, n in ((0, 2), (1, 2), (2, 3), (3, 3), (4, 2))]
        cbs += [CircularBuffer((24,), 1, im), CircularBuffer((25,), 2, page), CircularBuffer((26,), 2, page),
                CircularBuffer((27,), 1, im), CircularBuffer((16,), 2, page)]
        shape = tuple(out.padded_shape)
        tiles = _outer(shape) * shape[-2] * shape[-1] // (TILE * TILE)
        return make_program("MorehMatmulOperation", "MultiCoreProgramFactory", cbs,
                            cores_col_major(tiles, *grid_of(dev)))

    return cached(key, build)


def moreh_bias_add_backward_program(output_grad, bias_grad, *, fp32_dest_acc_en: bool = False):
    """MorehBiasAddBackwardOperation (moreh_linear_backward_{single,multi}_core_program_factory.cpp): a scalar
    bias_grad sums output_grad on core (0, 0) (SingleCoreProgramFactory, c_2 the h/w mask only when output_grad
    is not whole tiles), a [1, N] one column by column (MultiCoreProgramFactory, split_work_to_cores over N's
    tiles); c_0 two output_grad tiles, c_1 the scaler, c_16 one output tile, c_24 and c_25 one each (c_25 float32
    with an fp32 destination)."""
    dev = output_grad.device()
    scalar = bias_grad.shape[-1] == 1
    logical = tuple(output_grad.shape)
    masked = logical[-1] % TILE != 0 or (len(logical) > 1 and logical[-2] % TILE != 0)
    key = ("MorehBiasAddBackwardOperation", scalar, masked, tuple(bias_grad.padded_shape), output_grad.dtype,
           fp32_dest_acc_en, grid_of(dev))

    def build():
        page = TILE_BYTES[output_grad.dtype]
        im = TILE_BYTES[DataType.FLOAT32] if fp32_dest_acc_en else page
        cbs = [CircularBuffer((0,), 2, page), CircularBuffer((1,), 1, page)]
        if not scalar or masked:
            cbs.append(CircularBuffer((2,), 2, page))
        cbs += [CircularBuffer((16,), 1, page), CircularBuffer((24,), 1, page), CircularBuffer((25,), 1, im)]
        if scalar:
            return make_program("MorehBiasAddBackwardOperation", "SingleCoreProgramFactory", cbs, ((0, 0, 0, 0),))
        wt = tuple(bias_grad.padded_shape)[-1] // TILE
        return make_program("MorehBiasAddBackwardOperation", "MultiCoreProgramFactory", cbs,
                            cores_col_major(wt, *grid_of(dev)))

    return cached(key, build)


def moreh_norm_backward_program(grad, *, fp32_dest_acc_en: bool = False):
    """MorehNormBackwardOperation (moreh_norm_backward_program_factory.cpp), in input_grad's format: c_0..c_3 (x,
    y, dy, the decimal) and c_16 one tile each, c_24..c_31 one intermediate tile each (float32 with an fp32
    destination); split_work_to_cores over input_grad's tiles, column by column."""
    dev = grad.device()
    key = ("MorehNormBackwardOperation", tuple(grad.padded_shape), grad.dtype, fp32_dest_acc_en, grid_of(dev))

    def build():
        page = TILE_BYTES[grad.dtype]
        im = TILE_BYTES[DataType.FLOAT32] if fp32_dest_acc_en else page
        cbs = [CircularBuffer((i,), 1, page) for i in (0, 1, 2, 3, 16)]
        cbs += [CircularBuffer((i,), 1, im) for i in range(24, 32)]
        shape = tuple(grad.padded_shape)
        tiles = _outer(shape) * shape[-2] * shape[-1] // (TILE * TILE)
        return make_program("MorehNormBackwardOperation", "ProgramFactory", cbs, cores_col_major(tiles, *grid_of(dev)))

    return cached(key, build)


def moreh_dot_backward_program(output_grad):
    """MorehDotBackwardOperation (moreh_dot_backward_program_factory.cpp): on core (0, 0), in output_grad's format,
    c_0 / c_1 / c_2 (output_grad, input, other) and c_16 / c_17 (the two gradients) of two tiles each."""
    page = TILE_BYTES[output_grad.dtype]
    return cached(("MorehDotBackwardOperation", output_grad.dtype), lambda: make_program(
        "MorehDotBackwardOperation", "SingleCore", tuple(CircularBuffer((i,), 2, page) for i in (0, 1, 2, 16, 17)),
        ((0, 0, 0, 0),)))


def moreh_getitem_program(x, out, dims: list, index_layout: Layout):
    """MorehGetItemOperation, on the 5-D views of input and output (moreh_getitem_{rm,tilized}_factory.cpp), split
    column by column over the grid. ROW_MAJOR (MorehGetItemRmFactory): c_0 and c_16 one row (W x element size,
    rounded up to 32 B), one 32 B page per index tensor at c_(1 + its 5-D dim), the output's rows. TILE
    (MorehGetItemTilizedFactory), index pages of 4 KiB: with a W index, c_0 / c_16 / c_17 one element (32 B) over
    the output's 32 B units; else c_0 / c_16 16 elements (32 B) over its 16-element units."""
    dev = x.device()
    rank = len(x.shape)
    key = ("MorehGetItemOperation", tuple(x.shape), tuple(out.shape), x.dtype, tuple(dims), x.layout, index_layout,
           grid_of(dev))

    def build():
        size = TILE_BYTES[x.dtype] // (TILE * TILE)  # bfloat16 or int32: bytes an element
        dims5 = [d + 5 - rank for d in dims]
        out5 = [1] * (5 - rank) + list(out.shape)
        if x.layout == Layout.ROW_MAJOR:
            row = -(-x.shape[-1] * size // 32) * 32
            cbs = ([CircularBuffer((0,), 1, row)] + [CircularBuffer((1 + d,), 1, 32) for d in dims5]
                   + [CircularBuffer((16,), 1, row)])
            return make_program("MorehGetItemOperation", "MorehGetItemRmFactory", cbs,
                                cores_col_major(_outer(out5) * out5[-2], *grid_of(dev)))
        per_unit = 32 // size if 4 in dims5 else 16
        units = _outer(out5) * out5[-2] * -(-out5[-1] // per_unit)
        page = -(-(size if 4 in dims5 else 16 * size) // 32) * 32
        cbs = ([CircularBuffer((0,), 1, page)] + [CircularBuffer((1 + d,), 1, 4096) for d in dims5]
               + [CircularBuffer((16,), 1, page)] + ([CircularBuffer((17,), 1, page)] if 4 in dims5 else []))
        return make_program("MorehGetItemOperation", "MorehGetItemTilizedFactory", cbs,
                            cores_col_major(units, *grid_of(dev)))

    return cached(key, build)


def moreh_sgd_program(param, *, fp32_dest_acc_en: bool = False):
    """MorehSgdOperation (moreh_sgd_program_factory.cpp), in the parameter's format: c_0 / c_1 / c_2 (param_in, grad,
    momentum_in) and c_16 / c_17 (param_out, momentum_out) of two tiles, c_24 five scalar tiles (lr, momentum,
    dampening, weight_decay, one) and c_25..c_28 one each, the intermediates float32 with an fp32 destination;
    split_work_to_cores over the parameter's tiles, column by column."""
    dev = param.device()
    key = ("MorehSgdOperation", tuple(param.padded_shape), param.dtype, fp32_dest_acc_en, grid_of(dev))

    def build():
        page = TILE_BYTES[param.dtype]
        im = TILE_BYTES[DataType.FLOAT32] if fp32_dest_acc_en else page
        cbs = [CircularBuffer((i,), 2, page) for i in (0, 1, 2, 16, 17)]
        cbs += [CircularBuffer((24,), 5, im)] + [CircularBuffer((i,), 1, im) for i in (25, 26, 27, 28)]
        shape = tuple(param.padded_shape)
        tiles = _outer(shape) * shape[-2] * shape[-1] // (TILE * TILE)
        return make_program("MorehSgdOperation", "ProgramFactory", cbs, cores_col_major(tiles, *grid_of(dev)))

    return cached(key, build)


def moreh_adam_program(param, amsgrad: bool, *, decoupled: bool, fp32_dest_acc_en: bool = False):
    """MorehAdamOperation's ProgramFactory / MorehAdamWDeviceOperation's MultiCore (moreh_adam_program_factory.cpp,
    moreh_adamw/device/multi_core_program_factory.cpp), the same CBs: c_0..c_4 one input tile each (param, grad,
    exp_avg, exp_avg_sq, max_exp_avg_sq), c_5 the five scalars, c_6 one, c_24..c_31 one intermediate each (float32
    with an fp32 destination), c_16..c_19 one output tile each; split_work_to_cores over the parameter's tiles."""
    dev = param.device()
    key = ("MorehAdam", decoupled, tuple(param.padded_shape), param.dtype, amsgrad, fp32_dest_acc_en, grid_of(dev))

    def build():
        page = TILE_BYTES[param.dtype]
        im = TILE_BYTES[DataType.FLOAT32] if fp32_dest_acc_en else page
        cbs = [CircularBuffer((i,), 1, page) for i in range(5)] + [CircularBuffer((5,), 5, im),
                                                                    CircularBuffer((6,), 1, im)]
        cbs += [CircularBuffer((i,), 1, im) for i in range(24, 32)] + [CircularBuffer((i,), 1, page)
                                                                        for i in range(16, 20)]
        shape = tuple(param.padded_shape)
        tiles = _outer(shape) * shape[-2] * shape[-1] // (TILE * TILE)
        name, factory = (("MorehAdamWDeviceOperation", "MultiCore") if decoupled
                         else ("MorehAdamOperation", "ProgramFactory"))
        return make_program(name, factory, cbs, cores_col_major(tiles, *grid_of(dev)))

    return cached(key, build)


def moreh_clip_grad_norm_programs(inputs: list):
    """moreh_clip_grad_norm.cpp's device operations, in the gradients' format, for as many groups of gradients as
    the grid has cores (a gradient a core): MorehClipGradNormStep1Operation (c_0..c_2 one tile, c_3 two mask tiles,
    c_16, c_24..c_29 one each), MorehClipGradNormStep2Operation once on core (0, 0) (c_0, c_1, c_16, c_24..c_27
    one each), then MorehClipGradNormStep3Operation (c_0, c_1, c_16 one each)."""
    dev = inputs[0].device()
    gx, gy = grid_of(dev)
    page = TILE_BYTES[inputs[0].dtype]
    groups = [min(gx * gy, len(inputs) - i) for i in range(0, len(inputs), gx * gy)]

    def step(n: int, k: int):
        if k == 1:
            cbs = [CircularBuffer((i,), 1, page) for i in (0, 1, 2)] + [CircularBuffer((3,), 2, page)]
            cbs += [CircularBuffer((i,), 1, page) for i in (16, 24, 25, 26, 27, 28, 29)]
        elif k == 2:
            cbs = [CircularBuffer((i,), 1, page) for i in (0, 1, 16, 24, 25, 26, 27)]
        else:
            cbs = [CircularBuffer((i,), 1, page) for i in (0, 1, 16)]
        ranges = ((0, 0, 0, 0),) if k == 2 else cores_col_major(n, gx, gy)
        return cached(("MorehClipGradNormStep", k, n, inputs[0].dtype, (gx, gy)), lambda: make_program(
            f"MorehClipGradNormStep{k}Operation", "ProgramFactory", cbs, ranges))

    return (*(step(n, 1) for n in groups), step(1, 2), *(step(n, 3) for n in groups))


def moreh_fold_program(x, out):
    """MorehFoldOperation's row-major factory (moreh_fold/device/fold_program_factory_rm.cpp): c_0 two input rows and
    c_16 two output rows (each rounded up to 32 B), c_1 four DRAM-aligned scratch rows when a DRAM input's row is
    not DRAM-aligned; split_work_to_cores over the output's rows, column by column."""
    dev = x.device()
    key = ("MorehFoldOperation", tuple(x.shape), tuple(out.shape), x.dtype, x.memory_config().buffer_type,
           grid_of(dev))

    def build():
        size = TILE_BYTES[x.dtype] // (TILE * TILE)
        in_row, out_row = x.shape[-1] * size, out.shape[-1] * size
        cbs = [CircularBuffer((0,), 2, -(-in_row // 32) * 32)]
        dram = dev.config.dram_alignment
        if x.memory_config().buffer_type == BufferType.DRAM and in_row % dram:
            cbs.append(CircularBuffer((1,), 4, -(-in_row // dram) * dram))
        cbs.append(CircularBuffer((16,), 2, -(-out_row // 32) * 32))
        rows = 1
        for d in out.shape[:-1]:
            rows *= d
        return make_program("MorehFoldOperation", "ProgramFactory", cbs, cores_col_major(rows, *grid_of(dev)))

    return cached(key, build)


# The CB lists of moreh_softmax's and moreh_softmax_backward's factories (moreh_softmax/device/softmax_*/ and
# moreh_softmax_backward/device/softmax_backward_*/), as (index, tiles, intermediate): a SMALL factory holds the whole
# dim (n tiles) where a LARGE one streams it two tiles at a time. An intermediate CB is float32 with an fp32
# destination, the others in the input's format.
_SOFTMAX_CBS = {
    "SMALL": lambda n: ((0, n, False), (1, 1, False), (2, 1, False), (3, 1, False), (16, n, False), (24, n, True),
                        (25, 1, True), (26, 1, True), (27, n, True), (28, 1, True)),
    "LARGE": lambda n: ((0, 2, False), (1, 1, False), (2, 1, False), (3, 1, False), (16, 2, False), (24, 2, True),
                        (25, 1, True), (26, 1, True), (27, 1, True), (28, 1, True)),
    "LARGE_C": lambda n: ((0, 2, False), (16, 2, False), (24, 1, True), (25, 1, True), (26, 2, True), (27, 1, False),
                          (28, 1, True)),
}
_SOFTMAX_BACKWARD_CBS = {
    "SMALL": lambda n: ((0, n, False), (1, n, False), (2, 1, False), (3, 1, False), (16, 2, False), (24, n, True),
                        (25, 1, True), (26, 1, True)),
    "LARGE": lambda n: ((0, 2, False), (1, 2, False), (2, 1, False), (3, 1, False), (16, 2, False), (24, 1, True),
                        (25, 1, True), (26, 1, True), (27, 2, True)),
    "LARGE_C": lambda n: ((0, 2, False), (1, 2, False), (16, 2, False), (24, 1, True), (25, 2, True), (26, 1, True)),
}
_FACTORY = {"SMALL_W": "WSmall", "SMALL_H": "HSmall", "LARGE_W": "WLarge", "LARGE_H": "HLarge", "LARGE_C": "CLarge"}


def moreh_softmax_program(x, dim: int, strategy: str, *, backward: bool, fp32_dest_acc_en: bool):
    """MorehSoftmaxOperation's (or MorehSoftmaxBackwardOperation's) program for TILE input `x` over `dim` under
    `strategy` ("SMALL_W", "LARGE_H", "LARGE_C", ...). The work, split_work_to_cores_wt_core_range's column by
    column over the grid: the rows of tiles (W), the columns of tiles (H), or every tile of the other dims (C)."""
    dev = x.device()
    key = ("MorehSoftmax", backward, tuple(x.padded_shape), x.dtype, dim, strategy, fp32_dest_acc_en, grid_of(dev))

    def build():
        shape = tuple(x.padded_shape)
        ht, wt = shape[-2] // TILE, shape[-1] // TILE
        tiles = math.prod(shape) // (TILE * TILE)
        kind = "LARGE_C" if strategy == "LARGE_C" else strategy.split("_")[0]
        cbs_of = (_SOFTMAX_BACKWARD_CBS if backward else _SOFTMAX_CBS)[kind]
        page, im = TILE_BYTES[x.dtype], TILE_BYTES[DataType.FLOAT32 if fp32_dest_acc_en else x.dtype]
        cbs = [CircularBuffer((i,), n, im if inter else page) for i, n, inter in cbs_of(wt if "W" in strategy else ht)]
        units = tiles // wt if strategy.endswith("W") else tiles // ht if strategy.endswith("H") else \
            tiles // shape[dim]
        name = "MorehSoftmaxBackwardOperation" if backward else "MorehSoftmaxOperation"
        factory = f"MorehSoftmax{'Backward' if backward else ''}{_FACTORY[strategy]}Factory"
        return make_program(name, factory, cbs, cores_col_major(units, *grid_of(dev)))

    return cached(key, build)
