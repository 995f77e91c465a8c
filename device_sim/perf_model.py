"""Estimated device kernel time of an op on the emulated chip: compute-bound, bandwidth-bound, their max.

    import torch
    import device_sim as ttnn
    from device_sim import perf_model
    dev = ttnn.open_device(device_id=0)
    a = ttnn.from_torch(torch.randn(1024, 1024), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=dev)
    c = ttnn.matmul(a, a)
    e = perf_model.estimate_op(ttnn.matmul, (a, a), {}, c)
    print(e.compute_ns, e.bandwidth_ns, e.bound)   # 16384 22711 bandwidth: three 2 MiB DRAM tensors

The model follows TT-NN's own (OpPerformanceModelGeneral in ttnn/api/ttnn/operation.hpp and
matmul's create_op_performance_model): compute cycles = multiply-accumulates over the grid's
matrix engines times the fidelity's passes, bandwidth = bytes over the memory they live in,
ideal = the larger. Where TT-NN's model stops (it counts L1 as 1 ns and element-wise compute as
1 cycle) this one goes on with the constants below; docs/perf_model.md gives each its source.
Everything here is arithmetic on shapes and dtypes: a few microseconds an op, no tensor values read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from device_sim.compute_config import MathFidelity
from device_sim.distributed import MeshTensor
from device_sim.dtypes import ELEMENT_SIZE, tile_size
from device_sim.tensor import Tensor
from device_sim.types import BufferType, DataType, Layout, TensorMemoryLayout

# -- constants (Wormhole B0; docs/perf_model.md cites each) --------------------------------------------
CLOCK_GHZ = 1.0  # OpPerformanceModelGeneral: clock_rate_ghz = 1.0 on WORMHOLE_B0
MUL_ADDS_PER_CYCLE_LOFI = 4096  # per core: 8x16 by 16x16 in one cycle, 2*8*16*16 (matmul's perf model)
DRAM_GIB_PER_S = 6 * 2 * 21.5  # 258: "21.5 GB/s * 6 channels * 2 banks", divided by 1024^3 as TT-NN does
NOC_BYTES_PER_CYCLE = 32  # one NoC link; the L1 bisection is sqrt(64) * 32 B/cycle * 2 = 512 B/cycle
L1_LOCAL_BYTES_PER_CYCLE = 64  # a core reading or writing its own L1 (assumed: two 32 B NoC ports' width)
PCIE_GB_PER_S = 32.0  # host <-> device, PCIe 4.0 x16 (Wormhole n150/n300 boards)
# One Wormhole ethernet link: "a theoretical 100Gbps per direction", 12.5 GB/s (tt-metal's
# tech_reports/EthernetMultichip/BasicEthernetGuide.md); a GB/s is a byte per ns.
ETH_GB_PER_S = 12.5
# Element-wise work per 32x32 tile on one core (not in TT-NN's model, which gives such ops 1 cycle):
# the FPU's 8x16 lanes take 1024 / 128 = 8 cycles a tile per pass; the SFPU's 32 lanes take 32 a pass,
# and a transcendental a few passes (assumed 4).
FPU_CYCLES_PER_TILE = 8
SFPU_CYCLES_PER_TILE = 128
FIDELITY_PASSES = {MathFidelity.LoFi: 1, MathFidelity.HiFi2: 2, MathFidelity.HiFi3: 3, MathFidelity.HiFi4: 4}

_FPU_BINARY = frozenset({"add", "sub", "mul", "add_", "sub_", "mul_", "rsub", "subtract", "multiply"})
_MOVES = frozenset({"to_memory_config", "interleaved_to_sharded", "sharded_to_interleaved", "reshard", "clone",
                    "copy", "move", "reallocate", "to_device", "from_device", "typecast", "to_layout", "tilize",
                    "untilize", "permute", "transpose", "reshape", "slice", "concat", "to_dtype"})
_FREE = frozenset({"deallocate", "view", "squeeze", "unsqueeze", "unsqueeze_to_4D"})
# Ops that cross PCIe: the device side's bytes go over it once more (from_torch only when given a device).
_HOST_MOVES = frozenset({"from_torch", "to_torch", "to_device", "from_device", "cpu"})
_MATMULS = frozenset({"matmul", "linear"})
# Collectives by what crosses the busiest link (collective_link_ns).
_COLLECTIVES = {"all_gather": "gather", "all_gather_async": "gather", "reduce_scatter": "reduce_scatter",
                "reduce_scatter_minimal_async": "reduce_scatter", "all_reduce": "all_reduce",
                "all_reduce_async": "all_reduce", "point_to_point": "point_to_point"}


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

    @classmethod
    def of(cls, device) -> PerfConfig:
        """The config of a device_sim Device (its grid; clock and bandwidths from its DeviceConfig if set)."""
        c = device.config
        return cls(c.grid_x, c.grid_y, getattr(c, "clock_ghz", CLOCK_GHZ),
                   getattr(c, "dram_gib_per_s", DRAM_GIB_PER_S), getattr(c, "pcie_gb_per_s", PCIE_GB_PER_S))


DEFAULT = PerfConfig()


@dataclass(frozen=True)
class Operand:
    """What the model needs of a tensor: its bytes on the device and where they live."""

    bytes: int
    location: str  # "dram" | "l1" | "l1_sharded" | "dram_sharded" | "host"
    shape: tuple = ()  # logical shape: a matmul's M, K, N and an element-wise op's tiles come from it


@dataclass(frozen=True)
class Estimate:
    compute_ns: int
    bandwidth_ns: int
    math_fidelity: str | None  # the fidelity the compute figure assumes ("HiFi2"), None for no FPU work

    @property
    def ideal_ns(self) -> int:
        return max(self.compute_ns, self.bandwidth_ns)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_ns > self.bandwidth_ns else "bandwidth"


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
    """Nanoseconds to read or write every operand once, each over the path its memory has.

    DRAM and host bytes share one channel each, so they add up; interleaved L1 pages cross the NoC
    (bisection 2 * sqrt(cores) * 32 B/cycle); a sharded L1 tensor is read locally by every core at once.
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
    ns = dram / (cfg.dram_gib_per_s * 2**30) * 1e9 + host / (cfg.pcie_gb_per_s * 1e9) * 1e9
    ns += noc / (2 * math.sqrt(cfg.cores) * NOC_BYTES_PER_CYCLE * cfg.clock_ghz)
    ns += local / (cfg.cores * L1_LOCAL_BYTES_PER_CYCLE * cfg.clock_ghz)
    return math.ceil(ns)


def matmul_compute_ns(m: int, k: int, n: int, batch: int, fidelity: MathFidelity, cfg: PerfConfig = DEFAULT) -> int:
    """TT-NN's matmul relation: ceil(2*K*M*N*batch / (cores * 4096) * passes) cycles, over the clock."""
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


_config_of: dict[int, tuple] = {}  # id(device) -> (its DeviceConfig, its PerfConfig): made once per device

# -- from live device_sim tensors (what the profiler's hook calls) --------------------------------------------
def _operand(t) -> Operand | None:
    value = t._value
    if value is None:
        return None
    shape = tuple(value.shape)
    buf = t.buffer
    if buf is not None:
        cfg = t.memory_config()
        return Operand(buf.page_size * buf.num_pages, location(buf.buffer_type, cfg.memory_layout if cfg else None),
                       shape)
    return Operand(operand_bytes(shape, t.dtype, t.layout), "host", shape)


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
    if name in _FREE:
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
    if name in _MATMULS and len(ins) >= 2 and outs:
        from device_sim.ops.matmul import kernel_numerics

        fidelity = kernel_numerics("ttnn." + name, ins[0], ins[1], outs[0].dtype, kwargs.get("compute_kernel_config"),
                                   kwargs.get("program_config"), kwargs.get("core_grid")).math_fidelity
    in_ops = [o for o in map(_operand, ins) if o is not None]
    out_ops = [o for o in map(_operand, outs) if o is not None]
    kind = _COLLECTIVES.get(name)
    if kind is not None and mesh is not None and in_ops:
        return Estimate(0, max(bandwidth_ns([*in_ops, *out_ops], cfg), _link_ns(kind, in_ops[0].bytes, mesh.mesh,
                                                                              name, kwargs)), None)
    return estimate(name, in_ops, out_ops, fidelity, cfg, transpose_a=bool(kwargs.get("transpose_a")))


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


def estimate(name: str, inputs: list, outputs: list, fidelity: MathFidelity | None, cfg: PerfConfig = DEFAULT, *,
             transpose_a: bool = False) -> Estimate | None:
    """The estimate for op `name` ("matmul") from its operands; what estimate_op and a report's what-if call.

    `fidelity` is the one a matmul runs with (None elsewhere: it has no matrix work).
    """
    name = name.rsplit(".", 1)[-1]
    if name in _FREE or name in _COLLECTIVES or (not outputs and name not in _HOST_MOVES):
        return None  # a collective's links need its mesh and settings: estimate_op costs it
    operands = [*inputs, *outputs]
    if name in _HOST_MOVES:
        # The device tensor's bytes cross PCIe once. Its host side (a torch tensor, or a host ttnn tensor)
        # is not always an operand here, so it is counted from the device side, in the device's format.
        on_device = [o for o in operands if o.location != "host"]
        if not on_device:
            return None
        operands = on_device + [Operand(o.bytes, "host") for o in on_device]
    bw = bandwidth_ns(operands, cfg)
    if name in _MATMULS and len(inputs) >= 2 and outputs and fidelity is not None:
        shape = outputs[0].shape or (1,)  # a dot product of two vectors is a scalar
        a = inputs[0].shape or (1,)
        k = a[-2] if transpose_a else a[-1]
        batch = math.prod(shape[:-2]) if len(shape) > 2 else 1
        m = shape[-2] if len(shape) > 1 else 1
        return Estimate(matmul_compute_ns(m, k, shape[-1], batch, fidelity, cfg), bw, fidelity.name)
    if name in _MOVES or name in _HOST_MOVES:
        return Estimate(0, bw, None)
    tiles = math.ceil(math.prod(outputs[0].shape) / 1024)
    if name in _FPU_BINARY:
        return Estimate(eltwise_compute_ns(tiles, FPU_CYCLES_PER_TILE, cfg), bw, None)
    # Everything else (unary, reductions, softmax, norms, ...): SFPU work per tile of its largest operand.
    tiles = max([tiles] + [math.ceil(math.prod(o.shape) / 1024) for o in inputs])
    return Estimate(eltwise_compute_ns(tiles, SFPU_CYCLES_PER_TILE, cfg), bw, None)
