"""Attach a real profiler run's device times to a report: `ttreport attach REPORT ops_perf_results.csv`.

    from ttreport.attach import attach
    result = attach("generated/ttreport/reports/demo", "ops_perf_results.csv")
    print(result.line())   # 'attached 31 device operations ...: 31 matched an op (31 by name) ...'

The file is TT-NN's device profiler output from a hardware run of the same model (ttreport.read.measured reads
it, checking every value). Its device operations are paired in order with the report's (read.measured.match) and
stored in the report's `measured_perf` table, with the file's name under report_metadata.measured_perf_source;
then `summary`, `compare --timing --clock measured` and the HTML report set measured beside modelled. Attaching
again replaces what was attached, in one transaction: a file that fails its checks changes nothing.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ttreport.errors import ReportError, ReportInUseError
from ttreport.folder import capture_holds
from ttreport.read import measured
from ttreport.read.report import Report


@dataclass
class Attached:
    report: Path  # the report's folder
    source: Path  # the file attached
    rows: int  # its device operations
    device_ops: int  # the report's device operations
    matched: int  # rows paired with an op of the report
    by_name: int  # of them, with the same operation's name
    first_mismatch: str | None

    def line(self) -> str:
        text = (f"attached {self.rows:,} device operations of {self.source.name} to {self.report}: {self.matched:,} "
                f"matched an op of the report's {self.device_ops:,} device operations ({self.by_name:,} by name)")
        if self.first_mismatch:
            text += f"; first mismatch: {self.first_mismatch}"
        return text


def attach(report, csv_path) -> Attached:
    """Store the device operations of TT-NN's ops_perf_results.csv at `csv_path` in `report`, each paired with the
    report op it measures; replaces anything attached before. Raises MeasuredFileError (the file), ReportError."""
    rows = measured.read_ops_perf(csv_path)  # every check first: a bad file leaves the report as it was
    with Report(report) as r:
        db_path = r.db_path
        ops = measured.device_operations(r)
    folder = db_path.parent
    if capture_holds(folder):
        raise ReportInUseError(f"{folder}: a capture is writing it; attach once it has closed")
    if os.path.islink(db_path):
        raise ReportError(f"{db_path} is a symbolic link; attach to the report folder that holds the file itself")
    m = measured.match(rows, ops)
    source = Path(csv_path)
    con = sqlite3.connect(db_path, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        try:
            con.execute("DELETE FROM measured_perf")
            con.executemany(
                "INSERT INTO measured_perf (position, operation_id, op_code, device_id, global_call_count, kernel_ns, "
                "fw_ns, core_count, math_fidelity, inputs, outputs, attributes) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                ((i + 1, ops[m.pairs[i]].operation_id if i in m.pairs else None, *row) for i, row in enumerate(rows)))
            con.execute("INSERT OR REPLACE INTO report_metadata (key, value) VALUES (?, ?)",
                        (measured.SOURCE_KEY, json.dumps({"file": source.name, "rows": len(rows),
                                                           "matched": len(m.pairs), "by_name": m.by_name})))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.close()
    return Attached(folder, source, len(rows), len(ops), len(m.pairs), m.by_name, m.first_mismatch)
