"""Device memory over a run: L1 and DRAM bytes in use on each device after every op, and the run's peaks.

    from ttreport.export.memory import memory_peaks, memory_timeline
    with ttreport.open("generated/ttreport/reports/demo") as r:
        for point in memory_timeline(r):       # in the order the ops ended
            print(point.operation_id, point.end_ns, point.bytes)   # {(device_id, "L1"): 4096, ...}
        for label, peak in memory_peaks(r).labelled():
            print(label, peak.bytes, peak.operation_id)   # "peak L1 allocated (bank-rounded, all banks)" ...

A run's memory has two figures, and every view (summary, HTML, trace) shows both under the same names:
- allocated (bank-rounded, all banks): what the allocator holds, each buffer rounded up to whole pages in
  every bank it is interleaved over (the ops' l1_bytes and dram_bytes): what decides whether L1 runs out;
- in buffers (their own sizes): the sum of the live buffers' own sizes (buffer_lifetimes.size), the bytes
  the tensors need, per device.
In the demo they are 1.5 MiB and 38.1 KiB of L1: a one-tile (2 KiB) buffer takes a 2 KiB page in each of
the device's 64 L1 banks.

One pass over buffer_lifetimes' alloc and free events, merged with the ops in end order (the same
walk as Report.peak_l1_by_device), so a report of many ops costs two streamed reads, not a query per
op. A report with no buffer_lifetimes rows (one TT-NN wrote, upgraded) falls back to the ops' own
l1_bytes and dram_bytes, as one device named None ("all devices").
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = {1: "L1", 0: "DRAM"}  # TT-NN's buffer type numbers (DESIGN.md) drawn as memory tracks
ALLOCATED = "allocated (bank-rounded, all banks)"
IN_BUFFERS = "in buffers (their own sizes)"


def label(kind: str, figure: str) -> str:
    """A peak's name in every view: label("L1", ALLOCATED) is "peak L1 allocated (bank-rounded, all banks)"."""
    return f"peak {kind} {figure}"


@dataclass(slots=True)
class Peak:
    bytes: int
    operation_id: int  # the op after which it was reached (the first such op)
    name: str
    device_id: int | None = None  # for a peak in buffers: the device; None for the allocated figure


@dataclass(slots=True)
class MemoryPeaks:
    """Both figures of a run's memory, by kind ("L1", "DRAM"); a kind the report does not record is absent."""

    allocated: dict  # kind -> Peak: the highest of the ops' l1_bytes / dram_bytes
    in_buffers: dict  # kind -> Peak: the highest device's peak of its live buffers' own sizes
    by_device: dict  # (device_id, kind) -> Peak: each device's peak in buffers

    def labelled(self) -> list[tuple[str, Peak]]:
        """(label, Peak) in the order every view shows them: L1 allocated, L1 in buffers, then DRAM's."""
        return [(label(kind, figure), peaks[kind]) for kind in ("L1", "DRAM")
                for figure, peaks in ((ALLOCATED, self.allocated), (IN_BUFFERS, self.in_buffers)) if kind in peaks]


def memory_peaks(report) -> MemoryPeaks:
    """The run's peaks, both figures: the one function the summary, the HTML and the trace take them from."""
    allocated = {}
    for kind, column in (("L1", "l1_bytes"), ("DRAM", "dram_bytes")):
        row = report.execute(f"SELECT {column}, operation_id, name FROM operations WHERE typeof({column}) = "
                             f"'integer' ORDER BY {column} DESC, operation_id LIMIT 1").fetchone()
        if row is not None:
            allocated[kind] = Peak(*row)
    by_device: dict = {}
    if report.execute("SELECT 1 FROM buffer_lifetimes LIMIT 1").fetchone() is not None:
        # Without buffer_lifetimes (a TT-NN report) the timeline falls back to l1_bytes: no second figure.
        for op_id, name, _, live in _walk(report):  # the live dict itself: no copy per op (2x faster)
            for (device, kind), n in live.items():
                best = by_device.get((device, kind))
                if best is None or n > best.bytes:
                    by_device[(device, kind)] = Peak(n, op_id, name, device)
    in_buffers = {}
    for (_, kind), peak in sorted(by_device.items(), key=lambda kv: (kv[1].bytes, -(kv[0][0] or 0))):
        in_buffers[kind] = peak  # sorted ascending: the highest (the lowest device on a tie) is written last
    return MemoryPeaks(allocated, in_buffers, by_device)


@dataclass(slots=True)
class MemoryPoint:
    operation_id: int
    name: str
    end_ns: int | None
    bytes: dict  # (device_id, "L1" | "DRAM") -> bytes live after the op; every key seen so far


def memory_timeline(report):
    """MemoryPoints, one per op in end order (a generator; the dict is a fresh copy each time)."""
    has_lifetimes = report.execute("SELECT 1 FROM buffer_lifetimes LIMIT 1").fetchone() is not None
    if not has_lifetimes:
        yield from _from_operations(report)
        return
    for op_id, name, end_ns, live in _walk(report):
        yield MemoryPoint(op_id, name, end_ns, dict(live))


def _walk(report):
    """(operation_id, name, end_ns, live) per op in end order from buffer_lifetimes; `live` is one dict,
    updated in place as the walk goes on."""
    # A damaged row (text or a BLOB for a number) is left out; `ttreport check` names it.
    events = report.execute(
        "SELECT seq, device_id, buffer_type, delta FROM ("
        " SELECT COALESCE(allocated_seq, 0) AS seq, device_id, buffer_type, COALESCE(size, 0) AS delta"
        " FROM buffer_lifetimes WHERE buffer_type IN (0, 1) AND typeof(size) IN ('integer', 'null')"
        " AND typeof(allocated_seq) IN ('integer', 'null')"
        " UNION ALL SELECT freed_seq, device_id, buffer_type, -COALESCE(size, 0) FROM buffer_lifetimes"
        " WHERE buffer_type IN (0, 1) AND typeof(freed_seq) = 'integer' AND typeof(size) IN ('integer', 'null'))"
        " ORDER BY seq")
    live: dict = {}
    pending = events.fetchone()
    ops = report.execute("SELECT operation_id, name, end_ns, end_seq FROM operations "
                         "WHERE typeof(end_seq) = 'integer' ORDER BY end_seq")
    while batch := ops.fetchmany(1000):
        for op_id, name, end_ns, end_seq in batch:
            while pending is not None and pending[0] < end_seq:
                key = (pending[1], KINDS[pending[2]])
                live[key] = live.get(key, 0) + pending[3]
                pending = events.fetchone()
            yield op_id, name, end_ns if isinstance(end_ns, int) else None, live


def _from_operations(report):
    ops = report.execute("SELECT operation_id, name, end_ns, l1_bytes, dram_bytes FROM operations ORDER BY "
                         "COALESCE(end_ns, 0), operation_id")
    while batch := ops.fetchmany(1000):
        for op_id, name, end_ns, l1, dram in batch:
            live = {}
            if isinstance(l1, int):
                live[(None, "L1")] = l1
            if isinstance(dram, int):
                live[(None, "DRAM")] = dram
            yield MemoryPoint(op_id, name, end_ns if isinstance(end_ns, int) else None, live)
