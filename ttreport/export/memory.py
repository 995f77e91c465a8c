"""Device memory over a run: L1 and DRAM bytes in use on each device after every op.

    from ttreport.export.memory import memory_timeline
    with ttreport.open("generated/ttreport/reports/demo") as r:
        for point in memory_timeline(r):       # in the order the ops ended
            print(point.operation_id, point.end_ns, point.bytes)   # {(device_id, "L1"): 4096, ...}

One pass over buffer_lifetimes' alloc and free events, merged with the ops in end order (the same
walk as Report.peak_l1_by_device), so a report of many ops costs two streamed reads, not a query per
op. A report with no buffer_lifetimes rows (one TT-NN wrote, upgraded) falls back to the ops' own
l1_bytes and dram_bytes, as one device named None ("all devices").
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = {1: "L1", 0: "DRAM"}  # TT-NN's buffer type numbers (DESIGN.md) drawn as memory tracks


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
            yield MemoryPoint(op_id, name, end_ns if isinstance(end_ns, int) else None, dict(live))


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
