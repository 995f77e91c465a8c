"""7. Upgrading an old report (the reading commands' start-up: bench/startup.py).

    python -m bench --only upgrade

Upgrade: a TT-NN-style report at revision 0001 with N ops (each with a stack trace out of 100
distinct texts, two arguments, an input and an output tensor, two live buffers) is made with
SQL, then `ttreport.db.upgrade` takes it to the head. Linear time is the target: the time per
op at the largest size is at most twice that at the smallest.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from bench.common import Figure, at_most, info


def make_v0001(path: Path, n_ops: int) -> None:
    """A revision-0001 report of `n_ops` ops, written in a few INSERT ... SELECT statements. Every fourth
    tensor has a new shape, so that specs are many (n/4), as in a model whose shapes vary."""
    from ttreport import db

    db.upgrade(path, "0001")
    con = sqlite3.connect(path)
    with con:
        seq = f"WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {n_ops - 1})"
        con.execute(f"{seq} INSERT INTO operations SELECT i, 'ttnn.add', 1e-5 FROM n")
        con.execute(f"{seq} INSERT INTO stack_traces SELECT i, '  File \"model.py\", line ' || (i % 100) || "
                    f"', in forward\n    y = ttnn.add(x, w)' FROM n")
        con.execute(f"{seq} INSERT INTO operation_arguments SELECT i, '0', 'ttnn.Tensor(id=' || i || ')' FROM n "
                    f"UNION ALL SELECT i, '1', 'ttnn.Tensor(id=' || (i + 1) || ')' FROM n")
        con.execute(f"{seq} INSERT INTO tensors SELECT i, 'Shape([32, ' || (32 * (i / 4)) || '])', "
                    f"'DataType.BFLOAT16', 'Layout.TILE', "
                    f"'MemoryConfig(memory_layout=TensorMemoryLayout::INTERLEAVED,buffer_type=BufferType::DRAM)', "
                    f"0, 32 + 2048 * (i % 64), 0, 2048 FROM n")
        con.execute(f"{seq} INSERT INTO input_tensors SELECT i, 0, i FROM n")
        con.execute(f"{seq} INSERT INTO output_tensors SELECT i, 0, i FROM n")
        con.execute(f"{seq} INSERT INTO buffers SELECT i, 0, 32 + 2048 * (i % 64), 2048, 0, 0 FROM n "
                    f"UNION ALL SELECT i, 0, 32 + 2048 * ((i + 1) % 64), 2048, 0, 0 FROM n")
    con.close()


def upgrade_seconds(tmp: Path, n_ops: int) -> float:
    from ttreport import db

    path = tmp / f"v0001-{n_ops}.sqlite"
    path.unlink(missing_ok=True)
    make_v0001(path, n_ops)
    start = time.perf_counter()
    db.upgrade(path)
    seconds = time.perf_counter() - start
    path.unlink()
    return seconds


def run(tmp: Path, sizes: list[int]) -> list[Figure]:
    figures = []
    per_op = {}
    for n in sizes:
        seconds = upgrade_seconds(tmp, n)
        per_op[n] = seconds / n
        figures.append(info(f"upgrade 0001 -> head, {n:,} ops", seconds, "s"))
    small, large = min(sizes), max(sizes)
    figures.append(at_most(f"time per op at {large:,} / at {small:,} (linear: ~1)", per_op[large] / per_op[small],
                           "x", 2.0))
    return figures
