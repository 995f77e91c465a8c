"""Writes tests/data/report_v0001/: a report at schema revision 0001 (TT-NN's tables only).

It stands for a report written before ttreport's additions existed, so that tests can check
that upgrading keeps what it holds. Rerun only if 0001 itself changes (it must not):

    .venv/bin/python tests/data/make_v0001_report.py
"""

import sqlite3
from pathlib import Path

from ttreport import db

HERE = Path(__file__).parent / "report_v0001"
DRAM = "MemoryConfig(memory_layout=TensorMemoryLayout.INTERLEAVED,buffer_type=BufferType.DRAM,shard_spec=None)"
L1 = DRAM.replace("BufferType.DRAM", "BufferType.L1")
TRACE_A = '  File "model.py", line 12, in forward\n    h = ttnn.add(x, w)'
TRACE_B = '  File "model.py", line 13, in forward\n    return ttnn.exp(h)'


def main() -> None:
    HERE.mkdir(exist_ok=True)
    path = HERE / "db.sqlite"
    path.unlink(missing_ok=True)
    sqlite3.connect(path).close()
    db.upgrade(path, "0001")
    con = sqlite3.connect(path)
    with con:
        con.executemany("INSERT INTO operations VALUES (?, ?, ?)",
                        [(0, "ttnn.from_torch", 0.001), (1, "ttnn.add", 0.002), (2, "ttnn.exp", 0.003),
                         (3, "ttnn.add", 0.002), (4, "ttnn.exp", 0.004)])
        con.executemany("INSERT INTO operation_arguments VALUES (?, ?, ?)",
                        [(1, "0", "ttnn.Tensor(id=0)"), (1, "1", "ttnn.Tensor(id=9)"), (2, "0", "ttnn.Tensor(id=1)"),
                         (3, "0", "ttnn.Tensor(id=2)"), (3, "1", "ttnn.Tensor(id=9)"), (4, "0", "ttnn.Tensor(id=3)")])
        con.executemany("INSERT INTO tensors VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [(9, "Shape([32, 32])", "DataType.BFLOAT16", "Layout.TILE", DRAM, 0, 32, 0, 2048),
                         (0, "Shape([32, 32])", "DataType.BFLOAT16", "Layout.TILE", L1, 0, 1495040, 1, 2048),
                         (1, "Shape([32, 32])", "DataType.BFLOAT16", "Layout.TILE", L1, 0, 1492992, 1, 2048),
                         (2, "Shape([32, 32])", "DataType.BFLOAT16", "Layout.TILE", DRAM, 0, 2080, 0, 2048),
                         (3, "Shape([32, 32])", "DataType.BFLOAT16", "Layout.TILE", DRAM, 0, 4128, 0, 2048),
                         (4, "Shape([32, 32])", "DataType.BFLOAT16", "Layout.TILE", DRAM, 0, 6176, 0, 2048)])
        con.executemany("INSERT INTO input_tensors VALUES (?, ?, ?)",
                        [(1, 0, 0), (1, 1, 9), (2, 0, 1), (3, 0, 2), (3, 1, 9), (4, 0, 3)])
        con.executemany("INSERT INTO output_tensors VALUES (?, ?, ?)",
                        [(0, 0, 0), (1, 0, 1), (2, 0, 2), (3, 0, 3), (4, 0, 4)])
        con.execute("INSERT INTO devices VALUES (0, 8, 8, 8, 8, 1499136, 64, 1499136, 98304, 98304, 1, 64, 0, "
                    "95944704, 89653248, 89653248, 89653248, 1499136)")
        # every buffer live after each op, as TT-NN writes them (the same buffer repeats op after op)
        buffers = {0: [(32, 0), (1495040, 1)], 1: [(32, 0), (1495040, 1), (1492992, 1)],
                   2: [(32, 0), (1492992, 1), (2080, 0)], 3: [(32, 0), (2080, 0), (4128, 0)],
                   4: [(32, 0), (4128, 0), (6176, 0)]}
        con.executemany("INSERT INTO buffers VALUES (?, 0, ?, ?, ?, 0)",
                        [(op, addr, 2048 if kind else 192, kind)
                         for op, live in buffers.items() for addr, kind in live])
        con.executemany("INSERT INTO buffer_pages VALUES (?, 0, ?, 0, 0, 0, 0, ?, 2048, 1)",
                        [(1, 1492992, 1492992)])
        con.executemany("INSERT INTO stack_traces VALUES (?, ?)",
                        [(1, TRACE_A), (2, TRACE_B), (3, TRACE_A), (4, TRACE_B)])  # a loop: two texts, four ops
        con.execute("INSERT INTO errors VALUES (4, 'ttnn.exp', 'RuntimeError', 'boom', 'Traceback ...', "
                    "'2025-01-01T00:00:00')")
        con.execute("INSERT INTO local_tensor_comparison_records VALUES (2, 100, 1, 0.99, 0.999)")
        con.execute("INSERT INTO report_metadata VALUES ('status', 'complete')")
    con.execute("VACUUM")
    con.close()


if __name__ == "__main__":
    main()
