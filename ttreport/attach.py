"""Attach a real profiler run's device times to a report: `ttreport attach REPORT ops_perf_results.csv`.

    from ttreport.attach import attach
    result = attach("generated/ttreport/reports/demo", "ops_perf_results.csv")
    print(result.line())   # 'attached 20 device operations of ops_perf_results.csv to ...: 20 matched an op of the
                           # report's 33 device operations (20 by name); first mismatch: op 31 ttnn.embedding ...'

The file is TT-NN's device profiler output from a hardware run of the same model (ttreport.read.measured reads
it, checking every value). Its device operations are paired in order with the report's (read.measured.match) and
stored in the report's `measured_perf` table, with the file's name under report_metadata.measured_perf_source;
then `summary`, `compare --timing --measured` and the HTML report set measured beside modelled. Attaching
again replaces what was attached, in one transaction: a file that fails its checks changes nothing.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ttreport import db
from ttreport.errors import ReportError, ReportInUseError
from ttreport.export import ops_perf
from ttreport.folder import capture_holds
from ttreport.read import device_time, measured
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
        chips = device_operations(r)
    folder = db_path.parent
    if capture_holds(folder):
        raise ReportInUseError(f"{folder}: a capture is writing it; attach once it has closed")
    if os.path.islink(db_path):
        raise ReportError(f"{db_path} is a symbolic link; attach to the report folder that holds the file itself")
    db.check_writable_report(db_path)  # a trigger the folder brings would run on attach's writes
    m = measured.match(rows, chips)
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
                ((i + 1, m.pairs[i].operation_id if i in m.pairs else None, *row) for i, row in enumerate(rows)))
            con.execute("INSERT OR REPLACE INTO report_metadata (key, value) VALUES (?, ?)",
                        (measured.SOURCE_KEY, json.dumps({"file": source.name, "rows": len(rows),
                                                           "matched": len(m.pairs), "by_name": m.by_name})))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        con.close()
    return Attached(folder, source, len(rows), sum(map(len, chips.values())), len(m.pairs), m.by_name,
                    m.first_mismatch)


def device_operations(r) -> dict[int, list[measured.DeviceOp]]:
    """The report's device operations on each chip, in order, as its own ops_perf_results.csv lists them
    (export.ops_perf.device_operations: the programs of each op's captured graph), and, for an op with an estimate
    but no program model (its device_perf row, no graph), the op itself on every chip it ran on: the real file has a
    row for it (a layer_norm's LayerNormDeviceOperation). Host transfers are none, as TT-NN's profiler sees none."""
    graphs = r._has_table("operation_graphs") and r._has_table("distinct_graphs")
    estimates = r._has_table("device_perf")
    programs = {g: _programs(text) for g, text in r.execute("SELECT graph_id, captured_graph FROM distinct_graphs")
                if isinstance(text, str)} if graphs else {}
    graph_sql = "(SELECT g.graph_id FROM operation_graphs g WHERE g.operation_id = o.operation_id)" if graphs else \
        "NULL"
    # an op with an estimate but no program model is one device operation when no op nested in it is one (a
    # composite's estimate holds its parts': they are the device operations)
    estimate_sql = "EXISTS (SELECT 1 FROM device_perf p WHERE p.operation_id = o.operation_id) AND NOT EXISTS " \
        "(SELECT 1 FROM operations c WHERE c.parent_operation_id = o.operation_id)" if estimates else "0"
    chips: dict[int, list[measured.DeviceOp]] = {}
    ran_on = None  # op id -> the chips its tensors live on, read once if an op without a program model needs it
    for op_id, name, graph_id, estimated in r.execute(
            f"SELECT o.operation_id, o.name, {graph_sql}, {estimate_sql} FROM operations o ORDER BY o.operation_id"):
        if not isinstance(op_id, int) or not isinstance(name, str) or device_time.is_transfer(name):
            continue
        launched = programs.get(graph_id)
        if launched:
            for p in launched:
                chips.setdefault(p.device_id, []).append(measured.DeviceOp(op_id, name, p.name))
        elif estimated:
            if ran_on is None:
                ran_on = {}
                for op, device in r.execute(device_time.CHIPS_SQL):
                    if isinstance(device, int):
                        ran_on.setdefault(op, []).append(device)
            for chip in ran_on.get(op_id) or [0]:
                chips.setdefault(chip, []).append(measured.DeviceOp(op_id, name, name))
    return chips


def _programs(text: str) -> list:
    """A captured graph's device operations; none for a graph that is not what a capture writes (a report is input)."""
    try:
        return [p for p in ops_perf.device_operations(text) if isinstance(p.name, str)]
    except ValueError:
        return []
