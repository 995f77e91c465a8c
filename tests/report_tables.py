"""What the writer-equivalence tests share: every table of a report, less what differs between two equal runs.

    >>> tables("sample_reports/demo/db.sqlite")["operations"][0][:2]
    (1, 'ttnn.from_torch')
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

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
