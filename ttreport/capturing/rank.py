"""This process's rank in a multi-host run, and the rank column a capture fills at close.

    from ttreport.capturing.rank import host_rank
    host_rank(None, environ={"OMPI_COMM_WORLD_RANK": "1"})  # 1

A run split across processes (one per rank, as TT-NN's distributed runs launched by tt-run/mpirun)
captures one report per rank; every row of a TT-NN table carries that rank in its `rank` column.
The rank is `Config(rank=)`, else the MPI launcher's OMPI_COMM_WORLD_RANK, else 0. Joining the
ranks' reports afterwards is the reading side's (ttreport/read/merge.py).
"""

from __future__ import annotations

import os
import sqlite3

from ttreport import schema_sql
from ttreport.errors import MergeError

RANK_ENV_VAR = "OMPI_COMM_WORLD_RANK"  # set by mpirun, which TT-NN's tt-run launches ranks with
RANK_TABLES = tuple(name for name, columns in schema_sql.COLUMNS.items() if "rank" in columns)


def host_rank(rank: int | None = None, environ=None) -> int:
    """`rank` when given, else the MPI launcher's OMPI_COMM_WORLD_RANK, else 0 (a one-process run)."""
    if rank is not None:
        return rank
    text = (os.environ if environ is None else environ).get(RANK_ENV_VAR, "").strip()
    if not text:
        return 0
    if not text.isdigit():
        raise MergeError(f"{RANK_ENV_VAR}={text!r} is not a rank (an integer >= 0); unset it or pass Config(rank=N)")
    return int(text)


def set_rank(db_path, rank: int) -> None:
    """Write `rank` into every row of every table with a rank column (once, when a capture closes)."""
    con = sqlite3.connect(db_path)
    try:
        with con:
            for table in RANK_TABLES:
                con.execute(f"UPDATE {table} SET rank = ?", (rank,))
    finally:
        con.close()
