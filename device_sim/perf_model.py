"""Estimated device kernel time of an op on the emulated chip, calibrated against real Wormhole runs.

    import torch
    import device_sim as ttnn
    from device_sim import perf_model
    dev = ttnn.open_device(device_id=0)
    a = ttnn.from_torch(torch.randn(1024, 1024), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=dev)
    c = ttnn.matmul(a, a)
    e = perf_model.estimate_op(ttnn.matmul, (a, a), {}, c)
    print(e.ideal_ns, e.compute_ns, e.bandwidth_ns, e.cores)   # 39703 23302 26552 64 (ns; tests/test_perf_model.py)

An op's time is built from the hardware up (docs/perf_model.md names every constant's source):

    ideal = launch + max(compute, data movement) + MATMUL_SERIAL_SHARE * min(the two)   (the last for matmuls)

- launch: a fixed cost every program pays (dispatch to the cores, kernel start, first tile in and last out);
- the cores the op's program really uses: work is split as TT-NN's program factories split it (tiles for
  element-wise ops, tile rows for norms, softmax, tilize and untilize, output blocks for matmuls, rows for
  embeddings, a sharded operand's shard grid);
- compute: per-tile cycles per op family on one core (the matrix engine's 16 cycles a tile-step a
  fidelity pass, fed by its unpacker; each SFPU op's cycles; a norm's per-row reductions and its passes);
- data movement: the larger of one core's reads or writes (a NoC request's latency per page, pages in
  flight one at a time as TT-NN's interleaved readers issue them, bytes at a core's DRAM rate) and the
  chip's achieved DRAM bandwidth for all bytes;
- what an op moves: a slice the bytes it keeps, an embedding the rows it looks up, a conv2d its halo
  and the matmul over its prepared weights.

compute_ns and bandwidth_ns are those two terms; TT-NN's own ideal-throughput relation (PM COMPUTE) is
kept in matmul_compute_ns. Everything is arithmetic on shapes: a few microseconds an op, no values read.
bench/device_time.py holds the model against public Wormhole profiler data (bench/data/wormhole_ops_perf).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import device_sim.ops  # noqa: F401  (registers every op: the kinds below are read from the table)
from device_sim import perf_constants, registry
from device_sim.compute_config import MathFidelity
from device_sim.distributed import MeshTensor
from device_sim.dtypes import ELEMENT_SIZE, tile_size
from device_sim.ops.matmul import kernel_numerics
from device_sim.tensor import Tensor
from device_sim.types import BufferType, DataType, Layout, TensorMemoryLayout

# -- constants (Wormhole B0); docs/perf_model.md gives each one's source ------------------------------------------
# The chip
CLOCK_GHZ = 1.0  # OpPerformanceModelGeneral: clock_rate_ghz = 1.0 on WORMHOLE_B0
MUL_ADDS_PER_CYCLE_LOFI = 4096  # per core: 8x16 by 16x16 in one cycle, 2*8*16*16 (tech_reports/GEMM_FLOPS)
DRAM_GIB_PER_S = 6 * 2 * 21.5  # 258: TT-NN's nominal figure (OpPerformanceModelGeneral), kept for PerfConfig
# What the chip's DRAM delivers to all cores reading at once: tt-metal's test_dram_read_all_core holds
# 260-270 GB/s at 1 GHz; Saturating_DRAM_bandwidth.md measures 267 GB/s (u-benchmark), 239-260 in Llama decode.
DRAM_ACHIEVED_GB_PER_S = 240.0
# One core: "DRAM Read 22, DRAM Write 21 B/cycle" (tt-metal tests/tt_metal/tt_metal/data_movement/documentation/
# ideal_performance.md); the same table's "One To One" 29 B/cycle for a core's reads over the NoC from L1.
CORE_DRAM_READ_B_PER_CYCLE = 22
CORE_DRAM_WRITE_B_PER_CYCLE = 21
CORE_NOC_B_PER_CYCLE = 29
L1_LOCAL_BYTES_PER_CYCLE = 64  # a core reading or writing its own L1 shard (assumed: two 32 B NoC-port widths)
# A NoC read or write of one page that the kernel waits for before the next (TT-NN's interleaved readers and
# writers barrier on every tile): fitted on the CLIP rows (bench/device_time.py), in line with the ~0.5 us
# round trip tt-metal's data movement tests show for a single 2 KiB read.
DRAM_PAGE_LATENCY_NS = 340
L1_PAGE_LATENCY_NS = 170  # an L1 page over the NoC: half DRAM's (assumed; no public Wormhole figure)
# Every program: dispatch's go signal to the cores, kernel start, the first page in and the last out.
# Fitted (bench/device_time.py); the smallest real ops measure 2-3 us (CLIP: a 40-tile add 2.8 us).
LAUNCH_NS = 1500
# Issuing one small NoC read without waiting for it (a 32 B face row of a tile that an HC transpose regathers):
# assumed ~60 cycles of the data-movement RISC's loop, in line with the CLIP HC transposes (6 us for 40 tiles).
NOC_SMALL_READ_ISSUE_NS = 60
# A program with no compute kernel (a shard move, a move): go signal and two data-movement kernels only. The smallest
# Segformer shard moves and moves measure 0.6-0.7 us (tt-metal's ttnn-visualizer demo report, bench/device_time.py).
LAUNCH_DM_ONLY_NS = 600
# A data-movement kernel that waits on each page's write to an interleaved buffer before the next (sharded_to_
# interleaved, an interleaved move, the attention heads' splits and concatenations): Segformer's take 300-600 ns a
# bfloat8_b page into L1 (2.4x an element-wise op writing the same pages); fitted there.
ACKED_WRITE_PAGE_NS = 450
# Tilize / untilize: the unpacker and packer reorder a tile's faces and rows: Segformer's untilizes take 0.7-1.1 us
# a tile on a core when their writes are not the bound (a 256x1024 bfloat8_b untilize on 8 cores: 27 us); fitted.
TILIZE_CYCLES_PER_TILE = 730
# A conv2d's halo copies a core's input sticks one by one: Segformer's 512x512x3 stem (4,096 sticks a core) spends
# 40 us in its Halo; fitted there. Its reader then gathers each output row's KH window runs: that stem's
# OptimizedConvNew, 256 output rows a core by 7 runs, takes 49 us against ~5 us of math; fitted there.
HALO_STICK_NS = 8
CONV_WINDOW_READ_NS = 25
EMBEDDING_ROWS_PER_BLOCK = 16  # rows an embedding core takes at a time (a face's height; the profiler's 2 cores for 19)
PCIE_GB_PER_S = 32.0  # host <-> device, PCIe 4.0 x16 (Wormhole n150/n300 boards)
# One Wormhole ethernet link: "a theoretical 100Gbps per direction", 12.5 GB/s (tt-metal's
# tech_reports/EthernetMultichip/BasicEthernetGuide.md); a GB/s is a byte per ns.
ETH_GB_PER_S = 12.5
# Compute, per 32x32 tile on one core
FIDELITY_PASSES = {MathFidelity.LoFi: 1, MathFidelity.HiFi2: 2, MathFidelity.HiFi3: 3, MathFidelity.HiFi4: 4}
MATMUL_CYCLES_PER_PASS = 16  # a 32x32x32 tile-step: 32^3 / (8*16*16) engine cycles a fidelity pass (GEMM_FLOPS)
# The matrix engine's operands come through the unpacker: bfloat16 tile-steps (two 2 KiB tiles) cap
# at ~45 cycles, so HiFi2 reaches 32/45 = 0.71 of its peak and HiFi4 ~0.92 (GEMM_FLOPS' N150 tables:
# 16k^3 at 71% and 91%); fitted there.
UNPACK_BYTES_PER_CYCLE = 90
MATMUL_STEP_OVERHEAD_CYCLES = 4  # per tile-step beyond the passes (fitted on GEMM_FLOPS: bfloat4_b LoFi at 82-86%)
# A matmul's reads and its math overlap only in part: this share of the smaller of the two adds to the
# larger (fitted on GEMM_FLOPS' DRAM rows, where time ~ compute + half the DRAM time).
MATMUL_SERIAL_SHARE = 0.5
# A linear's bias, added to each output tile after its last K step (unpack the bias row, a broadcast add, pack):
# Segformer's sharded linears with K = 32 take ~250 ns an output tile against ~40 for a matmul without; fitted there.
MATMUL_BIAS_CYCLES_PER_TILE = 200
# an element-wise FPU op (add, mul, bcast, reduce) a fidelity pass: assumed (4 faces, unpack and pack)
FPU_CYCLES_PER_TILE = 32
# A binary op of a tensor and a scalar: the writer fills a tile with the scalar element by element before the
# first result (CLIP's binary_ng add/multiply by a scalar: 4-6 us of BRISC for 1-3 tiles a core), then the SFPU
# applies it, ~540 cycles a tile (Segformer's scalar multiplies: 64 bfloat8_b tiles a core in 34 us of math);
# both fitted there.
BINARY_SCALAR_FILL_NS = 3000
BINARY_SCALAR_CYCLES_PER_TILE = 540
SFPU_CYCLES_PER_TILE = 128  # a simple SFPU op (relu, abs, neg ...): 32 lanes, a few instructions a row (assumed)
# SFPU ops that evaluate a polynomial or iterate, cycles a tile on one core.
SFPU_OP_CYCLES = {
    "gelu": 1650,  # Segformer's GELUs: 1,470-1,700 cycles a tile a core (issue 30's measurements: 1,300-1,700)
    "erf": 3900, "erfc": 3900, "erfinv": 3900,  # fitted on the CLIP encoder's erf (19x5120: 13.4 us)
    **dict.fromkeys(("exp", "log", "sigmoid", "tanh", "silu", "softplus", "mish", "recip", "reciprocal", "sqrt",
                     "rsqrt", "sin", "cos", "tan", "atan", "asin", "acos", "log1p", "expm1", "pow", "div",
                     "divide", "elu", "selu", "celu", "hardswish", "swish", "log_sigmoid"), 600),  # assumed
}
# Tile passes a norm's kernel makes over each input tile (count of the tile ops in TT-NN's kernels): layer norm
# mean, x - mean, square, variance, rsqrt, scale, gamma, beta; RMS norm drops the mean and its subtraction.
NORM_PASSES = {"layer_norm": 8, "rms_norm": 6, "group_norm": 10, "batch_norm": 6}
# One pass over a tile: unpack, the FPU op, pack and the circular-buffer hand-off to the next pass. Fidelity barely
# moves it (Segformer's LoFi and HiFi4 layer norms take alike per tile): fitted on the Segformer and CLIP norms.
NORM_PASS_CYCLES = 112
# Per tile row, a norm's reductions: the row's sum and its broadcast back, twice (mean, variance), and the rsqrt: a
# one-tile-wide layer norm row takes ~4.5 us (Segformer [256, 32] on 8 cores: 6.0 us), fitted there.
NORM_ROW_CYCLES = 3600
# Softmax over a tile of a row (max, x - max, exp, sum, 1/sum, scale in one kernel, the exp approximate):
# Segformer's [16384, 256] bfloat8_b softmax on 64 cores takes 46 us, 64 tiles a core; fitted there.
SOFTMAX_CYCLES_PER_TILE = 700

_TILE_BYTES = frozenset({4096, 2048, 1088, 576, 1024})  # float32/uint32, bfloat16, bfloat8_b, bfloat4_b, uint8
# How each op is priced is its kind, declared where it is registered (registry.KINDS) and read from there as each
# op is priced (registry.named: by short name as a report names ops, its aliases' too: "multiply" is ttnn.mul), so
# an op registered after this module was imported is priced by its kind too. TT-NN ops a report may name that
# device_sim does not register are priced as their kinds below.
_UNREGISTERED_KINDS = {"argmin": "rows", "cpu": "host_move"}


class _Kinds:
    """The short names of the ops priced as one of `kinds` (and the `names` given), as `name in` reads them: from
    the registry at each test, never a list taken when this module was imported."""

    def __init__(self, kinds, names=frozenset()):
        self.kinds, self.names = frozenset(kinds), frozenset(names)

    def __contains__(self, name) -> bool:
        return name in self.names or _family(name) in self.kinds


_FREE = _Kinds({"free"})
# The attention heads' splits and concatenations: split over the tile rows of their unsplit side
_HEADS = frozenset({"nlp_create_qkv_heads", "nlp_concat_heads", "concatenate_heads",
                    "split_query_key_value_and_split_heads"})
# Moves TT-NN runs without a compute kernel (LAUNCH_DM_ONLY_NS): its reader and writer only
_DM_ONLY = _HEADS | {"interleaved_to_sharded", "sharded_to_interleaved", "reshard", "move", "reallocate"}
# ... of which these wait on each interleaved page they write (ACKED_WRITE_PAGE_NS)
_ACKED_WRITES = _DM_ONLY - {"interleaved_to_sharded", "reshard"}
# Flash attention over [B, H, S, D] q, k, v (_sdpa); the decode variants read a KV cache for one row of q each and
# stay priced by their pages
_SDPA = frozenset({"scaled_dot_product_attention", "chunked_scaled_dot_product_attention",
                   "windowed_scaled_dot_product_attention", "joint_scaled_dot_product_attention"})
# Ops whose estimate needs the call's keywords, not only its tensors (estimate_op reads them): a matmul's fidelity
# and program grid, a conv's kernel, stride and padding (conv2d and conv3d, both of kind conv2d), an attention's
# causality and q chunk. A profiler that estimates ops away from the live call (ttreport's writer process) hands
# these to estimate_op instead.
NEEDS_CALL = _Kinds({"matmul", "conv2d"}, _SDPA)
# The fidelity an op family runs at when its call gives none (TT-NN's compute kernel config defaults).
_DEFAULT_FIDELITY = {"norm": MathFidelity.HiFi4, "softmax": MathFidelity.HiFi4, "conv2d": MathFidelity.HiFi4}


@dataclass(frozen=True)
class PerfConfig:
    """The chip the estimates are for; defaults are a Wormhole n150. Make one for another chip."""

    grid_x: int = 8
    grid_y: int = 8
    clock_ghz: float = CLOCK_GHZ
    dram_gib_per_s: float = DRAM_GIB_PER_S
    pcie_gb_per_s: float = PCIE_GB_PER_S

    def __post_init__(self):
        for name in ("grid_x", "grid_y", "clock_ghz", "dram_gib_per_s", "pcie_gb_per_s"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"PerfConfig.{name} must be a positive number, got {v!r}")

    @property
    def cores(self) -> int:
        return self.grid_x * self.grid_y

    @property
    def dram_achieved_gb_per_s(self) -> float:
        """The DRAM rate ops reach: the measured Wormhole figure, scaled when a config names another chip's."""
        return DRAM_ACHIEVED_GB_PER_S * self.dram_gib_per_s / DRAM_GIB_PER_S

    @classmethod
    def of(cls, device) -> PerfConfig:
        """The config of a device_sim Device (its grid; clock and bandwidths from its DeviceConfig if set)."""
        c = device.config
        return cls(c.grid_x, c.grid_y, getattr(c, "clock_ghz", CLOCK_GHZ),
                   getattr(c, "dram_gib_per_s", DRAM_GIB_PER_S), getattr(c, "pcie_gb_per_s", PCIE_GB_PER_S))


DEFAULT = PerfConfig()


@dataclass(frozen=True)
class Operand:
    """What the model needs of a tensor: its bytes on the device, where they live, its shape and layout."""

    bytes: int
    location: str  # "dram" | "l1" | "l1_sharded" | "dram_sharded" | "host"
    shape: tuple = ()  # logical shape: a matmul's M, K, N and an element-wise op's tiles come from it
    # ROW_MAJOR layout: one page a row instead of one a 32x32 tile. None: not known (a what-if from a report's
    # rows): taken from the bytes, tiled when they are whole tiles of a tile size TT-NN has.
    row_major: bool | None = None
    shard_cores: int = 0  # the cores a sharded buffer spans (0: not known, the whole grid)
    height_sharded: bool = False  # sharded by rows only (HEIGHT_SHARDED): each core holds whole rows

    def __post_init__(self):
        # worked out once: an estimate asks for an operand's pages several times
        tiles = tiles_of(self.shape)
        rm = self.row_major
        if rm is None:
            rm = not (tiles and self.bytes % tiles == 0 and self.bytes // tiles in _TILE_BYTES)
        rows = math.prod(self.shape[:-1]) if len(self.shape) > 1 else 1
        pages = max(1, rows if rm else tiles)
        _set(self, "tiles", tiles)
        _set(self, "is_row_major", rm)
        _set(self, "pages", pages)  # pages the buffer holds: rows when row-major, else tiles
        _set(self, "page_bytes", self.bytes / pages)


_set = object.__setattr__  # a frozen dataclass's derived fields, set once in __post_init__


@dataclass(frozen=True)
class Estimate:
    compute_ns: int  # the op's math on its busiest core
    bandwidth_ns: int  # its data movement: a core's pages or the chip's DRAM, whichever is longer
    math_fidelity: str | None  # the fidelity the compute figure assumes ("HiFi2"), None for no FPU work
    fixed_ns: int = 0  # launch: what every program pays whatever its size
    cores: int = 0  # the cores the op's program uses (0: not worked out)
    overlap_ns: int = 0  # the part of compute and data movement that does not overlap (matmuls)

    @property
    def ideal_ns(self) -> int:
        return self.fixed_ns + max(self.compute_ns, self.bandwidth_ns) + self.overlap_ns

    @property
    def bound(self) -> str:
        return "compute" if self.compute_ns > self.bandwidth_ns else "bandwidth"


def tiles_of(shape) -> int:
    """32x32 tiles a tensor of this logical shape occupies (its last two dims padded to 32)."""
    if not shape:
        return 1
    h = shape[-2] if len(shape) > 1 else 1
    return math.prod(shape[:-2]) * math.ceil(h / 32) * math.ceil(shape[-1] / 32)


def operand_bytes(shape, dtype: DataType, layout: Layout) -> int:
    """Bytes a tensor occupies on the device: whole tiles in TILE layout (block floats' exponents included)."""
    if layout == Layout.TILE:
        rows = math.prod(shape[:-1]) if len(shape) > 1 else 1
        h = shape[-2] if len(shape) > 1 else 1
        w = shape[-1] if len(shape) else 1
        tiles = (rows // max(h, 1)) * math.ceil(h / 32) * math.ceil(w / 32)
        return tiles * tile_size(dtype)
    return math.prod(shape) * ELEMENT_SIZE[dtype]


def location(buffer_type, memory_layout) -> str:
    if buffer_type is None:
        return "host"
    sharded = memory_layout is not None and memory_layout != TensorMemoryLayout.INTERLEAVED
    kind = "l1" if buffer_type == BufferType.L1 else "dram"
    return kind + "_sharded" if sharded else kind


def bandwidth_ns(operands, cfg: PerfConfig = DEFAULT) -> int:
    """The ideal-throughput time to move every operand once (TT-NN's PM BANDWIDTH kind of figure).

    DRAM bytes at the chip's achieved rate, host bytes over PCIe, interleaved L1 pages over the NoC
    bisection (2 * sqrt(cores) * 32 B/cycle), a sharded L1 tensor locally by every core at once.
    """
    dram = host = noc = local = 0
    for o in operands:
        if o.location in ("dram", "dram_sharded"):
            dram += o.bytes
        elif o.location == "host":
            host += o.bytes
        elif o.location == "l1":
            noc += o.bytes
        else:
            local += o.bytes
    ns = dram / cfg.dram_achieved_gb_per_s + host / cfg.pcie_gb_per_s
    ns += noc / (2 * math.sqrt(cfg.cores) * 32 * cfg.clock_ghz)
    ns += local / (cfg.cores * L1_LOCAL_BYTES_PER_CYCLE * cfg.clock_ghz)
    return math.ceil(ns)


def matmul_compute_ns(m: int, k: int, n: int, batch: int, fidelity: MathFidelity, cfg: PerfConfig = DEFAULT) -> int:
    """TT-NN's ideal matmul relation (its PM COMPUTE): ceil(2*K*M*N*batch / (cores * 4096) * passes) cycles."""
    mul_adds = 2 * k * m * n * batch
    cycles = math.ceil(mul_adds / (cfg.cores * MUL_ADDS_PER_CYCLE_LOFI) * FIDELITY_PASSES[fidelity])
    return math.ceil(cycles / cfg.clock_ghz)


def eltwise_compute_ns(tiles: int, cycles_per_tile: int, cfg: PerfConfig = DEFAULT, passes: int = 1) -> int:
    """Tiles spread over the grid's cores, each taking cycles_per_tile per pass."""
    return math.ceil(math.ceil(tiles / cfg.cores) * cycles_per_tile * passes / cfg.clock_ghz)


def collective_link_ns(kind: str, shard_bytes: int, group: int, *, ring: bool = False, num_links: int = 1,
                       eth_gb_per_s: float = ETH_GB_PER_S) -> int:
    """Nanoseconds the busiest ethernet link direction of a collective over `group` chips is busy.

    shard_bytes is one chip's input. On a line the end chip's one link carries the most: an all_gather
    brings it the other group - 1 shards; a reduce_scatter's partial sums for the group - 1 slices of
    the other chips pass it ((group - 1) / group of a shard); an all_reduce is both, of a 1/group slice
    gathered; point_to_point sends the shard once. A ring has two links at every chip: half as much.
    """
    if group <= 1:
        return 0
    per_direction = {"gather": (group - 1) * shard_bytes,
                     "reduce_scatter": (group - 1) * shard_bytes / group,
                     "all_reduce": 2 * (group - 1) * shard_bytes / group,
                     "point_to_point": shard_bytes}[kind]
    if ring and kind != "point_to_point":
        per_direction /= 2
    return math.ceil(per_direction / (num_links * eth_gb_per_s))


# -- the pieces an estimate is built from ------------------------------------------------------------------------
def _page_ns(o: Operand, pages: float, cfg: PerfConfig, *, write: bool = False, per_request: float = 1,
             latency_ns: float | None = None) -> float:
    """One core moving `pages` of operand o: a request's latency per `per_request` pages, bytes at a core's rate."""
    if pages <= 0:
        return 0.0
    if o.location == "l1_sharded" or o.location == "host":
        return pages * o.page_bytes / (L1_LOCAL_BYTES_PER_CYCLE * cfg.clock_ghz)  # its own L1: no NoC request
    if o.location == "l1":
        # row-major sticks in L1 are issued back to back, a barrier per block, not per stick (Segformer: a 64 B stick
        # of an interleaved_to_sharded every ~55 ns, an untilize's every ~70)
        latency, rate = NOC_SMALL_READ_ISSUE_NS if o.is_row_major else L1_PAGE_LATENCY_NS, CORE_NOC_B_PER_CYCLE
    else:
        latency = DRAM_PAGE_LATENCY_NS
        rate = CORE_DRAM_WRITE_B_PER_CYCLE if write else CORE_DRAM_READ_B_PER_CYCLE
    if latency_ns is not None:
        latency = latency_ns
    return math.ceil(pages / per_request) * latency + pages * o.page_bytes / (rate * cfg.clock_ghz)


def _dram_ns(operands, cfg: PerfConfig, scale: dict | None = None) -> float:
    """The chip's DRAM busy time for every DRAM byte the op moves (scale: the share of an operand moved)."""
    total = 0.0
    for o in operands:
        if o.location in ("dram", "dram_sharded"):
            total += o.bytes * (scale.get(id(o), 1.0) if scale else 1.0)
    return total / cfg.dram_achieved_gb_per_s


def _cores_for(units: int, cfg: PerfConfig, operands=()) -> int:
    """Cores a program splits `units` of work over: a sharded operand's own grid, else one a unit up to the grid."""
    for o in operands:
        if o.location.endswith("_sharded") and o.shard_cores:
            return o.shard_cores
    return max(1, min(units, cfg.cores))


def _family(name: str) -> str:
    """How op `name` (a short name) is priced: its declared kind (registry.KINDS)."""
    op = registry.named(name)
    return op.kind if op is not None else _UNREGISTERED_KINDS.get(name, "unary")


def _streaming(ins, outs, units: int, cycles_per_unit: float, cfg: PerfConfig, *, read_pages=None,
               write_pages=None, per_request: float = 1, serial: bool = False, dram_scale=None,
               write_latency_ns: float | None = None) -> Estimate:
    """An op that streams its operands through `units` of work split over its cores, reader and writer
    on their own RISCs beside the compute one (serial: one kernel reads and writes in turn)."""
    cores = _cores_for(units, cfg, [*ins, *outs])
    share = 1 / cores
    read = sum(_page_ns(o, (read_pages or {}).get(id(o), o.pages) * share, cfg, per_request=per_request)
               for o in ins)
    write = sum(_page_ns(o, (write_pages or {}).get(id(o), o.pages) * share, cfg, write=True,
                         per_request=per_request, latency_ns=write_latency_ns) for o in outs)
    move = read + write if serial else max(read, write)
    move = max(move, _dram_ns([*ins, *outs], cfg, dram_scale))
    compute = math.ceil(units / cores) * cycles_per_unit / cfg.clock_ghz
    return Estimate(math.ceil(compute), math.ceil(move), None, LAUNCH_NS, cores)


def _matmul(ins, outs, fidelity: MathFidelity, cfg: PerfConfig, *, transpose_a: bool = False, grid=None,
            k: int | None = None, core_grid=None) -> Estimate:
    """Output blocks over the grid as TT-NN's 2D multicast matmul splits them; per core its tile-steps at the
    engine's rate for the fidelity, capped by the unpacker; its in0 and in1 blocks over the NoC; the chip's DRAM."""
    a, b, out = ins[0], ins[1], outs[0]
    shape = out.shape or (1,)
    ash = a.shape or (1,)
    k = k or (ash[-2] if transpose_a and len(ash) > 1 else ash[-1])
    m = shape[-2] if len(shape) > 1 else 1
    n = shape[-1]
    batch = math.prod(shape[:-2]) if len(shape) > 2 else 1
    mt, nt, kt = batch * math.ceil(m / 32), math.ceil(n / 32), math.ceil(k / 32)
    gx, gy = grid or (cfg.grid_x, cfg.grid_y)
    b_batched = len(b.shape) > 2 and math.prod(b.shape[:-2]) > 1
    a_tile, b_tile = a.bytes / max(1, a.tiles), b.bytes / max(1, b.tiles)
    step = max(MATMUL_CYCLES_PER_PASS * FIDELITY_PASSES[fidelity] + MATMUL_STEP_OVERHEAD_CYCLES,
               (a_tile + b_tile) / UNPACK_BYTES_PER_CYCLE)
    if b_batched and core_grid is not None:
        # A bmm given a core_grid (BERT's attention matmuls): TT-NN's create_matmul_program_config makes a
        # MatmulMultiCoreReuseProgramConfig (matmul_program_config.cpp): per core a batch's whole output, per_core_M =
        # Mt, per_core_N = Nt, in0_block_w 1, the batches spread over the grid (the user's when it fits the device's).
        ux, uy = core_grid
        cores = min(batch, ux * uy if ux <= cfg.grid_x and uy <= cfg.grid_y else cfg.cores)
        blocks = math.ceil(batch / cores)
        per_m, per_n = math.ceil(m / 32), nt
        read = _page_ns(a, blocks * per_m * kt, cfg, per_request=per_m) + \
            _page_ns(b, blocks * per_n * kt, cfg, per_request=per_n)
        write = _page_ns(out, blocks * per_m * per_n, cfg, write=True, per_request=per_m * per_n)
        compute = blocks * per_m * per_n * kt * step / cfg.clock_ghz
        move = max(read, write, _dram_ns([a, b, out], cfg))
        return Estimate(math.ceil(compute), math.ceil(move), fidelity.name, LAUNCH_NS, cores,
                        math.ceil(MATMUL_SERIAL_SHARE * min(compute, move)))
    if a.location == "l1_sharded" and a.shard_cores and grid is None:
        # in0 sharded (TT-NN's 1D height-sharded or 2D block-sharded programs): the output split over in0's shard
        # grid, rows first; each core's in0 is its own shard; in1 comes over the NoC a tile at a time (Segformer's
        # sharded linears: 2.1 us for K = 32 to 7.5 us for K = 1024 on 64 cores, whatever their N).
        # A height-sharded in0 puts every core down M, each with all of N (a height-sharded conv reads all its
        # weights on every core); otherwise the grid's rows x columns (within the shard grid) that leave a core the
        # fewest output tiles, then the fewest in0 and in1 tiles to take in (GEMM_FLOPS' 8x8 block-sharded).
        def load(r: int) -> tuple[int, int]:
            pm, pn = math.ceil(mt / r), math.ceil(nt / max(1, min(nt, a.shard_cores // r)))
            return pm * pn, pm + pn

        r = min(mt, a.shard_cores) if a.height_sharded else min(range(1, min(mt, a.shard_cores) + 1), key=load)
        per_m, per_n = math.ceil(mt / r), math.ceil(nt / max(1, min(nt, a.shard_cores // r)))
        batches = math.ceil(per_m / max(1, math.ceil(m / 32))) if b_batched else 1
        read = max(_page_ns(a, per_m * kt, cfg), _page_ns(b, batches * kt * per_n, cfg, per_request=per_n))
        write = _page_ns(out, per_m * per_n, cfg, write=True, per_request=per_m * per_n)
        bias = MATMUL_BIAS_CYCLES_PER_TILE if len(ins) > 2 else 0
        compute = per_m * per_n * (kt * step + bias) / cfg.clock_ghz
        move = max(read, write, _dram_ns([a, b, out], cfg))
        cores = math.ceil(mt / per_m) * math.ceil(nt / per_n)
        return Estimate(math.ceil(compute), math.ceil(move), fidelity.name, LAUNCH_NS, cores,
                        math.ceil(MATMUL_SERIAL_SHARE * min(compute, move)))
    if mt <= 1 or b_batched:
        # One tile row of output (or a batched in1, a bmm): TT-NN splits the output's columns over the cores,
        # each core taking every row of its columns and reading its tiles one at a time.
        per_m, per_n = mt, math.ceil(nt / (gx * gy))
        b_tiles = (batch if b_batched else 1) * kt * per_n
        read = _page_ns(a, per_m * kt, cfg) + _page_ns(b, b_tiles, cfg)
        write = _page_ns(out, per_m * per_n, cfg, write=True)
    else:
        # TT-NN's 2D multicast matmul: output blocks of per_m x per_n tiles on a grid; a core takes in its in0
        # rows and in1 columns block by block (in0_block_w tiles of K at a time), one request a block, the first
        # core of each row and column reading them from memory and multicasting them.
        per_m, per_n = math.ceil(mt / gy), math.ceil(nt / gx)
        block_w = max(1, min(kt, 8))
        read = _page_ns(a, per_m * kt, cfg, per_request=per_m * block_w) + \
            _page_ns(b, per_n * kt, cfg, per_request=per_n * block_w)
        write = _page_ns(out, per_m * per_n, cfg, write=True, per_request=per_m * per_n)
    cores = math.ceil(mt / per_m) * math.ceil(nt / per_n)
    compute = per_m * per_n * kt * step / cfg.clock_ghz
    move = max(read, write, _dram_ns([a, b, out], cfg))
    overlap = MATMUL_SERIAL_SHARE * min(compute, move)
    return Estimate(math.ceil(compute), math.ceil(move), fidelity.name, LAUNCH_NS, cores, math.ceil(overlap))


def _conv2d(ins, outs, fidelity: MathFidelity, cfg: PerfConfig, params: dict) -> Estimate:
    """TT-NN runs a conv2d as a halo (each core's input window rows gathered into its L1) and a matmul
    of the windows, [N*OH*OW, KH*KW*C/groups], by the prepared weights [KH*KW*C/groups, OC]."""
    x, out = ins[0], outs[0]
    kh, kw = params.get("kernel_size") or (1, 1)
    groups = params.get("groups") or 1
    cin = params.get("in_channels") or (x.shape[-1] if x.shape else 1)
    k = kh * kw * max(1, cin // groups) * (groups if groups > 1 else 1) // max(1, groups if groups > 1 else 1)
    if groups > 1:  # depthwise / grouped: TT-NN widens the weights to a block-diagonal [KH*KW*C, OC] matrix
        k = kh * kw * cin
    rows = math.prod(out.shape[:-1]) if len(out.shape) > 1 else 1
    # A 1x1 conv of stride 1 and no padding is a matmul of the input itself (TT-NN's use_matmul_for_1x1_conv): no
    # halo, no window gathers. Otherwise the windows stay on the cores the halo gathered them to: the input's
    # shard grid (its cores, else the grid's).
    padding = params.get("padding") or (0,)
    mm_conv = (kh, kw) == (1, 1) and tuple(params.get("stride") or (1, 1)) == (1, 1) and not any(padding)
    windows = Operand(math.ceil(rows / 32) * math.ceil(k / 32) * 2048,
                      x.location if mm_conv and x.location != "host" else "l1_sharded", (rows, k),
                      shard_cores=x.shard_cores or (0 if mm_conv else cfg.cores), height_sharded=x.height_sharded)
    weights = ins[1] if len(ins) > 1 else Operand(math.ceil(k / 32) * math.ceil(out.shape[-1] / 32) * 2048, "dram",
                                                  (k, out.shape[-1]))
    # prepared weights keep their tiles' size; torch-layout ones (on the host, [OC, C, KH, KW]) are prepared as
    # bfloat16 tiles in DRAM
    tile_bytes = 2048 if weights.location == "host" or weights.is_row_major else weights.bytes / max(1, weights.tiles)
    weights = Operand(math.ceil(k / 32) * math.ceil(out.shape[-1] / 32) * tile_bytes,
                      "dram" if weights.location == "host" else weights.location, (k, out.shape[-1]))
    mm = _matmul([windows, weights], [out], fidelity, cfg, k=k)
    if mm_conv:
        return mm
    halo = _streaming([x], [Operand(x.bytes, "l1_sharded", x.shape, x.is_row_major)], max(1, x.pages), 0, cfg,
                      per_request=8)
    # The halo program copies each core's input sticks (and their neighbours' edge rows) into its window buffer,
    # a stick at a time; the conv's reader then gathers, per output row, KH runs of KW*C contiguous window bytes.
    halo_ns = math.ceil(x.pages / halo.cores) * HALO_STICK_NS
    gather_ns = math.ceil(rows / max(1, mm.cores)) * kh * CONV_WINDOW_READ_NS
    return Estimate(mm.compute_ns, max(mm.bandwidth_ns, gather_ns) + halo.bandwidth_ns + halo_ns, fidelity.name,
                    LAUNCH_NS + halo.fixed_ns, mm.cores, mm.overlap_ns)


def _joined(a: Operand, b: Operand) -> Operand:
    """Two [.., S, D] operands as one of their sequences end to end."""
    shape = (*a.shape[:-2], a.shape[-2] + b.shape[-2], a.shape[-1]) if len(a.shape) > 1 else a.shape
    return Operand(a.bytes + b.bytes, a.location, shape, a.row_major, a.shard_cores)


def _sdpa(ins, outs, fidelity: MathFidelity, cfg: PerfConfig, params: dict) -> Estimate:
    """TT-NN's flash attention (sdpa_program_factory.cpp): the q chunks of every batch and head over the cores;
    each streams all of its head's K and V chunks (half of them, causal), running q @ k^T and p @ v on the matrix
    engine and the softmax of each score tile, at HiFi2 unless told (sdpa.cpp's default). The joint form (six
    inputs) is one non-causal pass over each pair of sequences joined, as joint_sdpa_device_operation.cpp prices it."""
    joint = len(ins) >= 6
    q, k, v = (_joined(ins[0], ins[3]), _joined(ins[1], ins[4]), _joined(ins[2], ins[5])) if joint else ins[:3]
    d_t = math.ceil(q.shape[-1] / 32) if q.shape else 1
    sq_t = math.ceil(q.shape[-2] / 32) if len(q.shape) > 1 else 1
    skv_t = math.ceil(k.shape[-2] / 32) if len(k.shape) > 1 else 1
    heads = math.prod(q.shape[:-2]) if len(q.shape) > 2 else 1
    chunk_t = max(1, math.ceil((params.get("q_chunk_size") or 32) / 32))  # program_config's q_chunk_size, else 32
    units = heads * math.ceil(sq_t / chunk_t)
    cores = _cores_for(units, cfg)
    # causal: the chunks above the diagonal are skipped
    share = 0.5 if params.get("is_causal", True) and not joint else 1.0
    step = max(MATMUL_CYCLES_PER_PASS * FIDELITY_PASSES[fidelity] + MATMUL_STEP_OVERHEAD_CYCLES,
               (q.bytes / max(1, q.tiles) + k.bytes / max(1, k.tiles)) / UNPACK_BYTES_PER_CYCLE)
    per_unit = chunk_t * skv_t * share * (2 * d_t * step + SOFTMAX_CYCLES_PER_TILE)
    # K and V are read again for every q chunk: a head's KV tiles per unit, a request a chunk row of d_t tiles
    kv_tiles = 2 * skv_t * d_t * share
    e = _streaming([q], outs, units, per_unit, cfg)
    reread = math.ceil(units / cores) * _page_ns(k, kv_tiles, cfg, per_request=d_t)
    kv_dram = k.bytes + v.bytes if k.location in ("dram", "dram_sharded") else 0
    dram = _dram_ns([q, *outs], cfg) + kv_dram * share * math.ceil(sq_t / chunk_t) / cfg.dram_achieved_gb_per_s
    return Estimate(e.compute_ns, math.ceil(max(e.bandwidth_ns + reread, dram)), fidelity.name, LAUNCH_NS, cores)


def _move(name: str, ins, outs, cfg: PerfConfig) -> Estimate:
    """Data movement ops, by the pages they touch and how TT-NN's kernels request them."""
    src, dst = ins[0], outs[0]
    if name == "slice":  # reads only what it keeps
        kept = Operand(dst.bytes, src.location, dst.shape, src.is_row_major, src.shard_cores)
        return _streaming([kept], [dst], max(dst.pages, 1), 0, cfg)
    if name == "embedding":  # each looked-up row: one read, then one write, in the same kernel
        ids, table = src, (ins[1] if len(ins) > 1 else src)
        rows = max(1, math.prod(ids.shape)) if ids.shape else 1
        looked_up = Operand(rows * table.page_bytes, table.location, (rows, table.shape[-1] if table.shape else 1),
                            True)
        out_rows = Operand(dst.bytes, dst.location, (rows, dst.shape[-1] if dst.shape else 1), True, dst.shard_cores)
        # TT-NN's kernel takes the output rows a face (16 rows) at a time: a block of rows a unit of work
        return _streaming([looked_up], [out_rows], math.ceil(rows / EMBEDDING_ROWS_PER_BLOCK), 0, cfg, serial=True)
    if name == "transpose" and src.shape and dst.shape and src.shape[-1] == dst.shape[-1] and \
            tuple(src.shape) != tuple(dst.shape) and not src.is_row_major:
        # HC: rows of every tile regathered across tiles (a face row, 16 elements, a request)
        faces = 2 if dst.shape[-1] > 16 else 1
        rows = min(32, dst.shape[-2]) if len(dst.shape) > 1 else 1
        e = _streaming([src], [dst], dst.pages, 0, cfg)  # a tile's worth of reads and writes, then the gather:
        gather = math.ceil(dst.pages / e.cores) * rows * faces * NOC_SMALL_READ_ISSUE_NS  # face rows, in flight
        return Estimate(e.compute_ns, e.bandwidth_ns + gather, None, e.fixed_ns, e.cores)
    if name in ("reshape", "view") and src.shape and dst.shape and src.shape[-1] != dst.shape[-1] \
            and not src.is_row_major and not dst.is_row_major:
        # a tiled reshape that changes the last dim regathers each output tile's rows
        rows = min(32, dst.shape[-2]) if len(dst.shape) > 1 else 1
        faces = 2 if dst.shape[-1] > 16 else 1
        return _streaming([src], [dst], dst.pages, 0, cfg, read_pages={id(src): dst.pages * rows * faces},
                          per_request=1)
    if src.is_row_major != dst.is_row_major:  # tilize / untilize: row sticks in or out, through the unpacker
        rm = src if src.is_row_major else dst
        tiled = dst if src.is_row_major else src
        h = max(1, rm.shape[-2]) if len(rm.shape) > 1 else 1  # at least one of each: an empty tensor's estimate
        wt = max(1, math.ceil((rm.shape[-1] if rm.shape else 1) / 32))
        tile_rows = max(1, tiled.tiles // wt)
        # TT-NN's multi-core tilize and untilize give each core whole tile rows (32 sticks of the full width); a
        # tensor of one tile row is split by its tile columns instead (CLIP's [19, 1280] tilize: 40 cores)
        units, tiles_per_unit = (tile_rows, wt) if tile_rows > 1 else (wt, 1)
        sticks = units * min(32, h)
        stick = Operand(rm.bytes, rm.location, (sticks, rm.bytes / sticks / 2), True, rm.shard_cores)
        cycles = TILIZE_CYCLES_PER_TILE * tiles_per_unit
        if src.is_row_major:
            return _streaming([stick], [dst], units, cycles, cfg)
        return _streaming([src], [stick], units, cycles, cfg)
    if name in ("move", "reallocate") and src.location == "l1_sharded":
        # a sharded buffer moved within its cores: each core copies its shard through the NoC to itself
        # (reader_unary_local_l1_copy_backwards; Segformer's take a shard's bytes at 28-32 B a cycle)
        cores = src.shard_cores or cfg.cores
        return Estimate(0, math.ceil(src.bytes / cores / (CORE_NOC_B_PER_CYCLE * cfg.clock_ghz)), None,
                        LAUNCH_DM_ONLY_NS, cores)
    if name in _DM_ONLY:
        units = max(dst.pages, src.pages)
        if name in _HEADS:  # split over the tile rows of the unsplit [..., seq, hidden] side
            wide = src if src.shape and dst.shape and src.shape[-1] >= dst.shape[-1] else dst
            units = max(1, wide.tiles // max(1, math.ceil(wide.shape[-1] / 32))) if wide.shape else 1
        e = _streaming(ins[:1], outs, units, 0, cfg,
                       write_latency_ns=ACKED_WRITE_PAGE_NS if name in _ACKED_WRITES else None)
        # a shard move that changes the dtype (bfloat8_b to bfloat16) runs a compute kernel to convert the tiles
        converts = not src.is_row_major and not dst.is_row_major and src.page_bytes != dst.page_bytes
        return Estimate(e.compute_ns, e.bandwidth_ns, None, LAUNCH_NS if converts else LAUNCH_DM_ONLY_NS, e.cores)
    return _streaming(ins, outs, max(dst.pages, src.pages), 0, cfg)


def estimate(name: str, inputs: list, outputs: list, fidelity: MathFidelity | None, cfg: PerfConfig = DEFAULT, *,
             transpose_a: bool = False, params: dict | None = None) -> Estimate | None:
    """The estimate for op `name` ("matmul") from its operands; what estimate_op and a report's what-if call.

    `fidelity` is the one the op's math runs at (None: the family's default). `params` carries what the
    operands do not say: a conv2d's kernel_size, groups and in_channels, an SFPU op's name, a program grid.
    """
    name = name.rsplit(".", 1)[-1]
    params = params or {}
    family = _family(name)
    if family in ("free", "collective") or (not outputs and family != "host_move"):
        return None  # a collective's links need its mesh and settings: estimate_op costs it
    if family == "host_move":  # cross PCIe (from_torch: given a device)
        # The device tensor's bytes cross PCIe once, and its pages the NoC. Its host side (a torch tensor, or a host
        # ttnn tensor) is not always an operand here, so it is counted from the device side, in the device's format.
        on_device = [o for o in [*inputs, *outputs] if o.location != "host"]
        if not on_device:
            return None
        dev = _streaming([], on_device, max(o.pages for o in on_device), 0, cfg)
        pcie = math.ceil(sum(o.bytes for o in on_device) / cfg.pcie_gb_per_s)
        return Estimate(0, max(dev.bandwidth_ns, pcie), None, LAUNCH_NS, dev.cores)
    if fidelity is None:
        fidelity = _DEFAULT_FIDELITY.get(family)
    if family == "matmul" and len(inputs) >= 2 and fidelity is not None:
        return _matmul(inputs, outputs, fidelity, cfg, transpose_a=transpose_a, grid=params.get("grid"),
                       core_grid=params.get("core_grid"))
    if family == "conv2d" and inputs:
        return _conv2d(inputs, outputs, fidelity or MathFidelity.HiFi4, cfg, params)
    if name in _SDPA and len(inputs) >= 3 and outputs:
        return _sdpa(inputs, outputs, fidelity or MathFidelity.HiFi2, cfg, params)
    if not inputs and name in ("move", "reallocate"):
        inputs = outputs  # a move frees its input as it runs: the output is its twin, in the same layout
    if not inputs:
        return _streaming([], outputs, outputs[0].pages, 0, cfg)  # creation ops: writes only
    if family in ("move", "embedding") or name in _DM_ONLY:
        return _move(name, inputs, outputs, cfg)
    if family in ("norm", "softmax", "rows"):
        # one tile row (the last dim's tiles) a unit of work; a norm passes over it several times and reduces it
        x = max(inputs, key=lambda o: o.tiles)
        wt = math.ceil(x.shape[-1] / 32) if x.shape else 1
        rows = max(1, x.tiles // max(1, wt))
        if family == "norm":
            cycles = NORM_ROW_CYCLES + wt * NORM_PASSES.get(name, 8) * NORM_PASS_CYCLES
        elif family == "softmax":
            cycles = wt * SOFTMAX_CYCLES_PER_TILE
        else:
            cycles = wt * 2 * FPU_CYCLES_PER_TILE * (FIDELITY_PASSES[fidelity] if fidelity is not None else 1)
        e = _streaming(inputs, outputs, rows, cycles, cfg)
        return Estimate(e.compute_ns, e.bandwidth_ns, fidelity.name if fidelity is not None else None, e.fixed_ns,
                        e.cores)
    tiles = max(o.pages for o in [*inputs, *outputs])
    if family == "binary":
        if len(inputs) == 1:
            # a tensor and a scalar: the scalar's tile filled on the writer core, then the op on the SFPU
            e = _streaming(inputs, outputs, tiles, BINARY_SCALAR_CYCLES_PER_TILE, cfg)
            return Estimate(e.compute_ns + BINARY_SCALAR_FILL_NS, e.bandwidth_ns, None, e.fixed_ns, e.cores)
        fid = FIDELITY_PASSES[fidelity] if fidelity is not None and name in ("mul", "multiply", "mul_") else 1
        return _streaming(inputs, outputs, tiles, FPU_CYCLES_PER_TILE * fid, cfg)
    op = params.get("sfpu_op", name)
    return _streaming(inputs, outputs, tiles, SFPU_OP_CYCLES.get(op, SFPU_CYCLES_PER_TILE), cfg)


_config_of: dict[int, tuple] = {}  # id(device) -> (its DeviceConfig, its PerfConfig): made once per device

# -- from live device_sim tensors (what the profiler's hook calls) --------------------------------------------
def _operand(t) -> Operand | None:
    value = t._value
    if value is None:
        return None
    shape = tuple(value.shape)
    buf = t.buffer
    row_major = t.layout != Layout.TILE
    if buf is not None:
        cfg = t.memory_config()
        spec = cfg.shard_spec if cfg is not None else None
        return Operand(buf.page_size * buf.num_pages, location(buf.buffer_type, cfg.memory_layout if cfg else None),
                       shape, row_major, spec.num_cores() if spec is not None else 0,
                       cfg is not None and cfg.memory_layout == TensorMemoryLayout.HEIGHT_SHARDED)
    return Operand(operand_bytes(shape, t.dtype, t.layout), "host", shape, row_major)


def _tensors(x, out: list) -> None:
    if isinstance(x, Tensor):
        out.append(x)
    elif type(x) in (list, tuple):
        for e in x:
            _tensors(e, out)


def estimate_op(op, args, kwargs, output, cfg: PerfConfig | None = None) -> Estimate | None:
    """The estimate for one call of `op` (a registry Op or its public function); None for ops with no device work.

    An op on a mesh runs on every chip at once, each on its shard (equal shards: the mappers split
    evenly), so its estimate is one chip's on its shards; a collective's adds its ethernet links'
    time (collective_link_ns) to the chip's own memory traffic.
    """
    name = getattr(op, "name", getattr(op, "__name__", "")).rsplit(".", 1)[-1]
    family = _family(name)
    if family == "free":
        return None
    ins: list = []
    outs: list = []
    for a in args:
        if type(a) is Tensor:  # the common case, without the walk
            ins.append(a)
        else:
            _tensors(a, ins)
    if kwargs:
        _tensors(tuple(kwargs.values()), ins)
    if type(output) is Tensor:
        outs.append(output)
    else:
        _tensors(output, outs)
    mesh = next((t for t in ins + outs if type(t) is MeshTensor), None)
    if mesh is not None:
        ins = [t.shards[0] if type(t) is MeshTensor else t for t in ins]
        outs = [t.shards[0] if type(t) is MeshTensor else t for t in outs]
    device = next((t._device for t in outs + ins if t._device is not None), None)
    if device is None:
        return None
    if cfg is None:
        cfg = _config_of.get(id(device))
        if cfg is None or cfg[0] is not device.config:
            cfg = _config_of[id(device)] = (device.config, PerfConfig.of(device))
        cfg = cfg[1]
    fidelity = None
    params = None
    if family == "matmul" and len(ins) >= 2 and outs:
        ckc = kwargs.get("compute_kernel_config")
        if ckc is None and "minimal_matmul" in name:
            fidelity = MathFidelity.HiFi2  # ttnn::prim::minimal_matmul's default, whatever the dtypes
        else:
            fidelity = kernel_numerics("ttnn." + name, ins[0], ins[1], outs[0].dtype, ckc,
                                       kwargs.get("program_config"), kwargs.get("core_grid")).math_fidelity
        # a program config's grid, or a minimal_matmul's MinimalMatmulConfig (its `config`)
        grid = getattr(kwargs.get("program_config") or kwargs.get("config"), "compute_with_storage_grid_size", None)
        if grid is not None:
            params = {"grid": (grid.x, grid.y) if hasattr(grid, "x") else tuple(grid)}
        core_grid = kwargs.get("core_grid")
        if grid is None and hasattr(core_grid, "x"):
            params = {"core_grid": (core_grid.x, core_grid.y)}
    elif kwargs:
        # a norm's or conv's compute_kernel_config (or conv2d's compute_config) names the fidelity it runs at
        ckc = kwargs.get("compute_kernel_config") or kwargs.get("compute_config")
        fidelity = getattr(ckc, "math_fidelity", None) if ckc is not None else None
        if name in _SDPA:
            chunk = getattr(kwargs.get("program_config"), "q_chunk_size", None)
            params = {"is_causal": kwargs.get("is_causal", True), "q_chunk_size": chunk}
        if name == "conv2d":
            ks = kwargs.get("kernel_size")
            params = {"kernel_size": _pair(ks, (1, 1)), "stride": _pair(kwargs.get("stride"), (1, 1)),
                      "padding": _pair(kwargs.get("padding"), (0, 0)), "groups": kwargs.get("groups") or 1,
                      "in_channels": kwargs.get("in_channels")}
        elif name == "conv3d":
            # vol2col gathers kD*kH runs of kW*C contiguous bytes a patch: conv2d's windows of kD*kH rows, against
            # weights already widened over the groups (K = kD*kH*kW*C). Conv3d reads them from DRAM with no halo
            # program, which conv2d's price includes: an upper bound by that halo.
            kd, kh, kw = kwargs.get("kernel_size") or (1, 1, 1)
            params = {"kernel_size": (kd * kh, kw), "stride": tuple(kwargs.get("stride") or (1, 1, 1))[1:],
                      "padding": tuple(kwargs.get("padding") or (0, 0, 0)), "groups": 1, "in_channels": None}
    in_ops = [o for o in map(_operand, ins) if o is not None]
    out_ops = [o for o in map(_operand, outs) if o is not None]
    kind = registry.named(name).collective if family == "collective" else None  # what crosses the busiest link
    if kind is not None and mesh is not None and in_ops:
        return Estimate(0, max(bandwidth_ns([*in_ops, *out_ops], cfg), _link_ns(kind, in_ops[0].bytes, mesh.mesh,
                                                                              name, kwargs)), None)
    return estimate(name, in_ops, out_ops, fidelity, cfg, transpose_a=bool(kwargs.get("transpose_a")), params=params)


def _pair(v, default: tuple) -> tuple:
    """A conv2d argument as TT-NN takes it (an int, or a pair or four of ints) as a tuple."""
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v) if v else default


def _link_ns(kind: str, shard_bytes: int, mesh, name: str, kwargs: dict) -> int:
    # The group: the chips along cluster_axis (a row for 1, a column for 0), else the whole mesh. Only
    # keyword settings are read; a missing topology is the async ops' default Ring, else Linear (the
    # slower of the two, so an estimate is never flattering), and num_links defaults to one link.
    axis = kwargs.get("cluster_axis")
    shape = tuple(mesh.shape)
    group = shape[axis] if isinstance(axis, int) and 0 <= axis < len(shape) else math.prod(shape)
    topology = kwargs.get("topology")
    ring = getattr(topology, "name", None) == "Ring" if topology is not None else name.endswith("_async")
    links = kwargs.get("num_links")
    return collective_link_ns(kind, shard_bytes, group, ring=ring, num_links=links if isinstance(links, int) and
                              links > 0 else 1)


# A team's own fit of the constants above (`ttreport calibrate`): the file that DEVICE_SIM_PERF_CONSTANTS names
# replaces them as the model is imported (device_sim/perf_constants.py; docs/perf_model.md).
perf_constants.apply_environment(sys.modules[__name__])
