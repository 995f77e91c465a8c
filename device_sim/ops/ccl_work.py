"""The collectives' device work: the programs each chip of a mesh runs, and the global semaphores they hold.

ops/ccl.py computes each collective's values; this module launches, on every chip, the device operations TT-NN
0.81 runs for it (the program models are device_sim.programs.ccl): all_gather's minimal default program
(ttnn.all_gather gathers a 2-D mesh along axis 1, then axis 0, without a cluster_axis), reduce_scatter's minimal
program, all_reduce as a reduce-scatter then an all-gather, mesh_partition as each chip's slice, and point_to_point
as a send program on the sender chip and a receive program on the receiver.
ttnn.all_gather and ttnn.reduce_scatter make their own global semaphores (3 and 4) when TT-NN builds their
program; TT-NN's program cache holds them, so they are made once per program and held by the mesh, and stay in
every chip's L1 after the op. The async forms use the caller's semaphores, which are L1 buffers already.
GlobalSemaphore is this module's (ops.ccl, above it, exports it as ttnn.GlobalSemaphore): the programs hold them.

    import device_sim as ttnn
    mesh = ttnn.open_mesh_device(mesh_shape=ttnn.MeshShape(1, 2))
    x = ttnn.from_torch(torch.randn(1, 1, 32, 256), layout=ttnn.TILE, device=mesh,
                        mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))
    ttnn.all_gather(x, dim=3)   # each chip: AllGatherDeviceOperation, and 3 semaphores held after it
"""

from __future__ import annotations

from device_sim import device_work
from device_sim.mesh import MeshDevice, rows_cols
from device_sim.programs import ccl as ccl_programs
from device_sim.programs import data_movement
from device_sim.types import BufferType, CoreCoord, CoreRange, CoreRangeSet, DataType, Layout, TensorMemoryLayout


class GlobalSemaphore:
    """A semaphore at one L1 address on every core of every chip; CCL ops take them to synchronise.

    As in TT-NN it occupies L1: one aligned word per core (an interleaved page in each L1 bank) on
    each chip, so it shows among the chips' buffers and its address is the same everywhere.
    """

    def __init__(self, mesh_device: MeshDevice, cores, initial_value: int, buffer_type: BufferType):
        self.mesh_device, self.cores, self.initial_value = mesh_device, cores, int(initial_value)
        self.value = self.initial_value
        self.buffers = []
        with mesh_device.lockstep():  # one address on every chip, as the mesh allocates it
            for chip in mesh_device.get_devices():
                banks = chip.memory.allocators[buffer_type].num_banks
                self.buffers.append(chip.memory.allocate(buffer_type, TensorMemoryLayout.INTERLEAVED,
                                                         page_size=chip.config.l1_alignment, num_pages=banks))

    def address(self) -> int:
        return self.buffers[0].address

    def __del__(self):
        for chip, buf in zip(self.mesh_device.get_devices(), getattr(self, "buffers", ())):
            chip.memory.free(buf)

    def __repr__(self) -> str:
        return f"GlobalSemaphore(value={self.value}, address={self.address():#x})"


def program_semaphores(mesh: MeshDevice, key: tuple, count: int) -> list:
    """The `count` global semaphores a collective makes when TT-NN builds its program, made once per program and
    held by the mesh as TT-NN's program cache holds them (on every worker core of every chip)."""
    held = vars(mesh).setdefault("_program_semaphores", {})
    if key not in held:
        cores = mesh.compute_with_storage_grid_size()
        grid = CoreRangeSet([CoreRange(CoreCoord(0, 0), CoreCoord(cores.x - 1, cores.y - 1))])
        held[key] = [GlobalSemaphore(mesh, grid, 0, BufferType.L1) for _ in range(count)]
    return held[key]


def line_size(mesh: MeshDevice, cluster_axis) -> int:
    """The chips a collective over `cluster_axis` spans (all of them without one)."""
    rows, cols = rows_cols(tuple(mesh.shape))
    if cluster_axis is None:
        return rows * cols
    return rows if cluster_axis == 0 and len(tuple(mesh.shape)) == 2 else cols


def _chip_facts(shard) -> tuple[int, int, tuple[int, int]]:
    """(page bytes, bytes the chip holds, worker grid) of one chip's shard."""
    buf, config = shard.buffer, shard.device().config
    return buf.page_size, buf.page_size * buf.num_pages, (config.grid_x, config.grid_y)


def launch_on_chips(out, programs) -> None:
    """Each program on every chip of the output, after the outputs exist; if one cannot launch, every chip's
    output is freed before the error goes on."""
    try:
        for shard in out.shards:
            for p in programs:
                device_work.launch(shard.device(), p)
    except RuntimeError:
        for shard in out.shards:
            shard._free()
        raise


def launch_gather(inp, out, cluster_axis, ring: bool, num_links, *, name: str) -> None:
    """all_gather's program on each chip (ring: the Ring topology; num_links None: one link)."""
    mesh = getattr(inp, "mesh", None)
    if mesh is None or len(inp.shards) < 2:
        return
    rows, cols = rows_cols(tuple(mesh.shape))
    two_steps = cluster_axis is None and rows > 1 and cols > 1 and name == "AllGatherDeviceOperation"
    steps = [cols, rows] if two_steps else [line_size(mesh, cluster_axis)]
    page, gathered, grid = _chip_facts(inp.shards[0])
    programs = []
    for step, size in enumerate(s for s in steps if s > 1):
        gathered *= size
        programs.append(ccl_programs.all_gather_program(page, gathered, ring_size=size, num_links=num_links or 1,
                                                        ring=ring, grid=grid, name=name))
        if name == "AllGatherDeviceOperation":  # one program cache entry per gather (its axis, sizes, cores)
            program_semaphores(mesh, (step, size, gathered, programs[-1], tuple(mesh.get_device_ids())), 3)
    launch_on_chips(out, programs)


def scatters_in_place(x, dim: int, size: int) -> bool:
    """Whether TT-NN scatters TILE tensor `x` over `size` chips along `dim` with its own program
    (composite_common's use_composite_reduce_scatter false): dims 1..3 of the 4-D view, a scattered H or W still
    whole tiles. A row-major tensor or another dim takes TT-NN's composite path (not modelled)."""
    shape = tuple(x.shape)
    rank = len(shape)
    if x.layout != Layout.TILE or rank < 2 or shape[dim] % size:
        return False
    normalized = dim + 2 if rank == 2 else (dim if dim < rank - 4 else dim - (rank - 4))
    if normalized not in (1, 2, 3):
        return False
    return dim < rank - 2 or (shape[dim] // size) % 32 == 0


def launch_reduce_scatter(inp, out, dim: int, cluster_axis, ring: bool, num_links, *, name: str) -> None:
    """reduce_scatter's program on each chip when TT-NN runs one; ttnn.reduce_scatter's holds 4 global
    semaphores (3 and a barrier). A 2-D mesh without a cluster_axis is not modelled."""
    mesh = getattr(inp, "mesh", None)
    if mesh is None or len(inp.shards) < 2:
        return
    rows, cols = rows_cols(tuple(mesh.shape))
    size = line_size(mesh, cluster_axis)
    x = inp.shards[0]
    d = dim % len(tuple(x.shape))
    if size < 2 or (cluster_axis is None and rows > 1 and cols > 1) or not scatters_in_place(x, d, size):
        return
    page, in_bytes, grid = _chip_facts(x)
    program = ccl_programs.reduce_scatter_program(page, in_bytes, ring_size=size, num_links=num_links or 1,
                                                  ring=ring, grid=grid, name=name)
    if name == "ReduceScatterDeviceOperation":
        program_semaphores(mesh, (program, size, in_bytes, tuple(mesh.get_device_ids())), 4)
    launch_on_chips(out, [program])


def launch_all_reduce(inp, out, cluster_axis, ring: bool, num_links) -> None:
    """all_reduce_async's reduce-scatter-then-gather path (ttnn.all_reduce calls it): a
    ReduceScatterMinimalAsyncDeviceOperation over the innermost dim that splits evenly (H and W counted in tiles:
    finding_scatter_dim), then an AllGatherAsyncDeviceOperation, on every chip. A tensor with no such dim, or a
    row-major one, takes the all-gather-and-sum composite (not modelled)."""
    mesh = getattr(inp, "mesh", None)
    if mesh is None or len(inp.shards) < 2:
        return
    size = line_size(mesh, cluster_axis)
    x = inp.shards[0]
    padded = list(x.padded_shape)
    rank = len(padded)
    counts = [n // 32 if i >= rank - 2 else n for i, n in enumerate(padded)]
    dim = next((i for i in range(rank - 1, -1, -1) if counts[i] % size == 0), None)
    if size < 2 or dim is None or not scatters_in_place(x, dim, size):
        return
    page, in_bytes, grid = _chip_facts(x)
    links = num_links or 1
    launch_on_chips(out, [
        ccl_programs.reduce_scatter_program(page, in_bytes, ring_size=size, num_links=links, ring=ring, grid=grid,
                                            name="ReduceScatterMinimalAsyncDeviceOperation"),
        ccl_programs.all_gather_program(page, in_bytes, ring_size=size, num_links=links, ring=ring, grid=grid,
                                        name="AllGatherAsyncDeviceOperation")])


def launch_partition(inp, out, dim: int, cluster_axis) -> None:
    """MeshPartitionDeviceOperation: each chip runs the slice factory on its part of its shard
    (mesh_partition_program_factory.cpp); modelled for an interleaved TILE tensor split into whole tiles (the
    tile factory: c_0 two tiles over the output's tiles)."""
    mesh = getattr(inp, "mesh", None)
    if mesh is None:
        return
    size = line_size(mesh, cluster_axis)
    x = inp.shards[0]
    shape = tuple(x.shape)
    if size < 2 or x.layout != Layout.TILE or x.is_sharded() or out.shards[0].is_sharded() or (
            dim >= len(shape) - 2 and (shape[dim] // size) % 32):
        return
    program = data_movement.slice_program(x, out.shards[0])
    launch_on_chips(out, [program._replace(name="MeshPartitionDeviceOperation")])


def launch_point_to_point(inp, out, src: int, dst: int) -> None:
    """PointToPointOp: the send program on the sender chip and the receive program on the receiver chip (the other
    chips run nothing), once the outputs exist; its one global semaphore (made with the program, on every chip) is
    held by the mesh as TT-NN's program cache holds it. TT-NN refuses a sharded input, so none is launched for one."""
    mesh = getattr(inp, "mesh", None)
    if mesh is None or src == dst:
        return
    x = inp.shards[src]
    if x.is_sharded():
        return
    send, receive = ccl_programs.point_to_point_programs(x.buffer.page_size, x.buffer.num_pages,
                                                         x.dtype == DataType.BFLOAT16)
    program_semaphores(mesh, (send, receive, tuple(mesh.get_device_ids())), 1)
    try:
        device_work.launch(out.shards[src].device(), send)
        device_work.launch(out.shards[dst].device(), receive)
    except RuntimeError:
        for shard in out.shards:
            shard._free()
        raise
