"""The collectives' device operations as each chip of the mesh runs them: all_gather's, reduce_scatter's and
point_to_point's programs.

tt-metal's build_all_gather_async_minimal_default_program_artifacts (ttnn/cpp/ttnn/operations/experimental/ccl/
all_gather_async/device/all_gather_async_default_program_factory.cpp), which both ttnn.all_gather
(AllGatherDeviceOperation, ccl/all_gather/device/all_gather_program_factory.cpp) and ttnn.experimental.all_gather_async
(AllGatherAsyncDeviceOperation, DefaultMeshWorkloadFactory) build on every chip. Per link and direction (forward,
backward) the program takes one fabric-mux core and `workers` sender cores, the first cores of the grid row by row
(ccl_common.cpp's choose_worker_cores); only the senders hold CBs. reduce_scatter (ReduceScatterDeviceOperation,
ccl/reduce_scatter/device/reduce_scatter_program_factory.cpp, and ReduceScatterMinimalAsyncDeviceOperation) builds
the ring or line minimal async artifacts (experimental/ccl/reduce_scatter_minimal_async/device/) the same way.

Example:
    >>> from device_sim.programs.ccl import all_gather_program
    >>> p = all_gather_program(2048, 4096, ring_size=2, num_links=1, ring=False, grid=(8, 8))  # bfloat16 tiles
    >>> p.name, [(cb.indices, cb.num_pages, cb.page_size) for cb in p.cbs], p.ranges  # 2 tiles a packet, x3
    ('AllGatherDeviceOperation', [((0,), 6, 2048)], ((1, 0, 1, 0), (3, 0, 3, 0)))
"""

from __future__ import annotations

from device_sim.device_work import TILE_BYTES, CircularBuffer, Program, cached, make_program
from device_sim.types import DataType

# A fabric packet: 4 bfloat8_b tiles of payload (FabricEriscDatamoverBuilder::default_packet_payload_size_bytes)
# and a 1D packet header, get_tt_fabric_channel_buffer_size_bytes(). The header is taken as 64 B: it changes the
# pages a packet holds only for row-major pages within 64 B of a divisor of the payload.
PACKET_BYTES = 4 * TILE_BYTES[DataType.BFLOAT8_B] + 64
MAX_PAGES_PER_PACKET = 4  # scatter writes reach at most 4 NoC addresses a packet
DIRECTIONS = 2  # forward and backward, each with its own mux core


def default_workers(output_bytes: int, ring_size: int, num_links: int, ring: bool, cores: int) -> int:
    """default_workers(): 1 sender per direction for at most one packet (4 KiB) a link, 4 above 256 KiB, else 2;
    fewer when the grid cannot hold (workers + 1 mux) x 2 directions x links cores."""
    per_link = output_bytes * (ring_size - 1) / ring_size / num_links / (2 if ring else 1)
    candidates = (4, 2, 1) if per_link > 256 * 1024 else (1,) if per_link <= 4 * 1024 else (2, 1)
    for workers in candidates:
        if cores >= num_links * (workers + 1) * DIRECTIONS:
            return workers
    raise RuntimeError(f"TT_THROW: Not enough cores available on the subdevice or device for the requested match "
                       f"the number of links {num_links}")


def all_gather_program(page_size: int, output_bytes: int, *, ring_size: int, num_links: int, ring: bool,
                       grid: tuple[int, int], name: str = "AllGatherDeviceOperation") -> Program:
    """One chip's all_gather program for an input of `page_size`-byte pages (a tile, or a row-major row) and an
    output of `output_bytes` on that chip.

    c_0 (reader to writer, on the sender cores) holds 3 packets' worth of pages (triple buffering), a packet
    min(4, PACKET_BYTES // page_size) pages, in the input's data format (its page size says which)."""
    key = ("ccl", name, page_size, output_bytes, ring_size, num_links, ring, grid)

    def build():
        gx, gy = grid
        workers = default_workers(output_bytes, ring_size, num_links, ring, gx * gy)
        per_packet = min(MAX_PAGES_PER_PACKET, PACKET_BYTES // page_size)
        # cores in choose_worker_cores' row-major order: per link and direction, a mux core, then the senders
        order = [(i % gx, i // gx) for i in range(num_links * DIRECTIONS * (workers + 1))]
        senders = tuple((x, y, x, y) for i, (x, y) in enumerate(order) if i % (workers + 1))
        factory = "AllGatherProgram" if name == "AllGatherDeviceOperation" else "DefaultMeshWorkloadFactory"
        return make_program(name, factory, (CircularBuffer((0,), 3 * per_packet, page_size),), senders)

    return cached(key, build)


def reduce_scatter_workers(input_bytes: int, ring_size: int, num_links: int, ring: bool, cores: int) -> int:
    """reduce_scatter_minimal_async_program_common.cpp's default_workers, as written: it compares the bytes a link
    moves against thresholds named in MB but given as plain numbers (ring 50 and 1, line 4 and 0.5), so any real
    tensor takes 8 senders a direction, fewer when (senders + 1 mux) x 2 directions x links cores do not fit."""
    per_link = input_bytes * (ring_size - 1) / ring_size / num_links / (2 if ring else 1)
    high, low = (50.0, 1.0) if ring else (4.0, 0.5)
    candidates = (8, 4, 2, 1) if per_link > high else (2, 1) if per_link < low else (4, 2, 1)
    for workers in candidates:
        if cores >= num_links * (workers + 1) * DIRECTIONS:
            return workers
    raise RuntimeError(f"TT_THROW: Not enough cores available on the subdevice or device for the requested match "
                       f"the number of links {num_links}")


def reduce_scatter_program(page_size: int, input_bytes: int, *, ring_size: int, num_links: int, ring: bool,
                           grid: tuple[int, int], name: str = "ReduceScatterDeviceOperation") -> Program:
    """One chip's reduce_scatter program (the ring or line minimal async factory; both size their CBs alike) for an
    input of `page_size`-byte pages and `input_bytes` on that chip.

    A packet holds n = min(2, PACKET_BYTES // page_size) pages and a chunk tile_granularity = 4n pages (8 at most);
    c_0 the input, c_1 the intermediate (the partial from the neighbour), c_2 the reader's output and c_3 the
    reduction's output each hold 3 chunks (triple buffering), on the sender cores."""
    key = ("ccl", name, page_size, input_bytes, ring_size, num_links, ring, grid)

    def build():
        gx, gy = grid
        workers = reduce_scatter_workers(input_bytes, ring_size, num_links, ring, gx * gy)
        per_packet = min(2, PACKET_BYTES // page_size)
        granularity = 4 * per_packet if per_packet < 4 else 8
        order = [(i % gx, i // gx) for i in range(num_links * DIRECTIONS * (workers + 1))]
        senders = tuple((x, y, x, y) for i, (x, y) in enumerate(order) if i % (workers + 1))
        factory = "ReduceScatterProgram" if name == "ReduceScatterDeviceOperation" else (
            "RingReduceScatterMeshWorkloadFactory" if ring else "LineReduceScatterMeshWorkloadFactory")
        return make_program(name, factory, [CircularBuffer((i,), 3 * granularity, page_size) for i in range(4)],
                            senders)

    return cached(key, build)


PACKET_HEADER_BYTES = 64  # get_tt_fabric_packet_header_size_bytes(), taken as PACKET_BYTES takes it
L1_ALIGNMENT = 16  # hal::get_l1_alignment on Wormhole


def point_to_point_packets(page_size: int, num_pages: int, bfloat16: bool) -> tuple[int, int]:
    """compute_aligned_packet_dims: (packet bytes, pages a packet). A bfloat16 packet is the largest power of two
    within the fabric's channel buffer; a page bigger than a packet goes in segments of one packet each."""
    most = 1 << (PACKET_BYTES.bit_length() - 1) if bfloat16 else PACKET_BYTES
    page = -(-page_size // L1_ALIGNMENT) * L1_ALIGNMENT
    if page > most:
        return most, 1
    per_packet = min(most // page, num_pages)
    return page * per_packet, per_packet


def point_to_point_programs(page_size: int, num_pages: int, bfloat16: bool) -> tuple[Program, Program]:
    """PointToPointOp's (sender's, receiver's) programs (point_to_point/device/host/send_program_factory.cpp and
    receive_program_factory.cpp), each on core (0, 0) alone (use_cores {1, 1}). The sender: c_0 two input pages
    (aligned to L1's 16 B), c_1 four packet headers (two, double-buffered), c_2 one packet to coalesce pages into;
    the receiver: c_0 four packet headers, c_1 one packet, c_2 three packets' worth of output pages."""
    key = ("PointToPointOp", page_size, num_pages, bfloat16)

    def build():
        packet, per_packet = point_to_point_packets(page_size, num_pages, bfloat16)
        page = -(-page_size // L1_ALIGNMENT) * L1_ALIGNMENT
        headers = CircularBuffer((1,), 2 * 2, PACKET_HEADER_BYTES)
        send = make_program("PointToPointOp", "SendReceive", (
            CircularBuffer((0,), 2, page), headers, CircularBuffer((2,), 1, packet)), ((0, 0, 0, 0),))
        receive = make_program("PointToPointOp", "SendReceive", (
            headers._replace(indices=(0,)), CircularBuffer((1,), 1, packet),
            CircularBuffer((2,), 3 * per_packet, page_size)), ((0, 0, 0, 0),))
        return send, receive

    return cached(key, build)
