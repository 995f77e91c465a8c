"""What the writer-equivalence tests share: every table of a report, less what differs between two equal runs.

    >>> tables("sample_reports/demo/db.sqlite")["operations"][0][:2]
    (1, 'ttnn.from_torch')
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ttreport.capturing import writer

# clocks, and torch zip files' random serialization ids (the .pt bytes of two equal tensors differ there)
VOLATILE = {"operations": {"duration", "start_ns", "end_ns"}, "errors": {"timestamp"}, "tensor_files": {"crc32"},
            "tensor_writes": {"crc32"}}
# rows the tensor threads add in the order they finish writing files (two threads: either may finish first)
THREAD_ORDERED = {"tensor_files", "tensor_writes", "device_tensor_files"}


def tables(db: str | Path) -> dict:
    """Every table but report_metadata, as lists of row tuples in their default order (THREAD_ORDERED ones sorted),
    VOLATILE columns left out."""
    con = sqlite3.connect(db)
    try:
        out = {}
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                    "AND name != 'report_metadata'"):
            cur = con.execute(f"SELECT * FROM {table}")
            keep = [i for i, d in enumerate(cur.description) if d[0] not in VOLATILE.get(table, ())]
            rows = [tuple(row[i] for i in keep) for row in cur]
            out[table] = sorted(rows, key=repr) if table in THREAD_ORDERED else rows
        return out
    finally:
        con.close()


def tensor_lifetime_checked(con: sqlite3.Connection) -> list:
    """A closed report's tensor_lifetime rows, once checked equal to the close's whole query run again on it and to
    each tensor's producer, last use (not a deallocate) and first deallocate worked out here by hand."""
    for sql in writer._LIFETIME_TEMPS:
        con.execute(sql)
    expected = con.execute(writer._LIFETIMES).fetchall()
    got = con.execute(f"SELECT {writer._LIFETIME_COLUMNS} FROM tensor_lifetime ORDER BY rowid").fetchall()
    assert got == expected
    name = dict(con.execute("SELECT operation_id, name FROM operations"))
    uses: dict[int, list[int]] = {}
    for op, tid in con.execute("SELECT operation_id, tensor_id FROM input_tensors"):
        uses.setdefault(tid, []).append(op)
    by_hand = []
    for tid, producer in con.execute("SELECT tensor_id, producer_operation_id FROM tensors ORDER BY tensor_id"):
        ops = uses.get(tid, [])
        kept = [op for op in ops if name[op] != "ttnn.deallocate"]
        freed = [op for op in ops if name[op] == "ttnn.deallocate"]
        by_hand.append((tid, producer, max(kept, default=None), min(freed, default=None)))
    assert [row[:4] for row in got] == by_hand
    return got
