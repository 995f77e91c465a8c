"""What the store answers across runs: `runs` (the runs, in push order) and `history` (one op, run by run).

history reads run_op_stats (filled at push: per run, op name and first input shape, the count, device and
host time, peak L1 after the op and lowest golden PCC), so its cost grows with the number of runs, not ops.
A run is flagged where its mean time or peak L1 moved more than `threshold` (relative) from the
previous run that had the op, or its lowest PCC fell by more than `pcc_drop`. The time compared is the
device time by default (the performance model's estimate: the same for the same ops, run after run);
clock="host" compares the emulator's host time, which moves with warm-up and load. A run captured in steps
(ttreport.steps) counts its active steps' calls alone; the means are per call, so runs of different step
counts compare.

    from ttreport.store import history
    for row in history("postgresql:///ttreport", "ttnn.matmul", shape="1x32x64"):
        print(row["run"], row["mean_device_ns"], row["mean_s"], row["flags"])
"""

from __future__ import annotations

from ttreport.store.connection import reading
from ttreport.store.push import shape_key

RUN_COLUMNS = ("run_id", "name", "model", "host", "git_commit", "started_at", "status", "operations", "report_uuid")


def runs(url: str, *, limit: int | None = None) -> list[dict]:
    """The store's runs in the order they were pushed (run id; the last `limit` when given), with their metadata.
    Push order, not start time: a run pushed late may have started before the runs pushed ahead of it."""
    with reading(url) as conn:
        sql = f"SELECT {', '.join(RUN_COLUMNS)} FROM runs ORDER BY run_id DESC"
        rows = conn.execute(sql + (" LIMIT %s" if limit else ""), (limit,) if limit else ()).fetchall()
    return [dict(zip(RUN_COLUMNS, r)) for r in reversed(rows)]


def op_shapes(url: str, op: str | None = None) -> dict[str, list[str]]:
    """The op names in the store's runs, each with the first-input shapes it was called with ("1x32x64"),
    most calls first; only op `op`'s when given. What `ttreport history` lists when its --op or --shape
    matches nothing."""
    with reading(url) as conn:
        rows = conn.execute("SELECT name, shape FROM run_op_stats" + (" WHERE name = %s" if op is not None else "")
                            + " GROUP BY name, shape ORDER BY name, SUM(count) DESC, shape",
                            (op,) if op is not None else ()).fetchall()
    out: dict[str, list[str]] = {}
    for name, shape in rows:
        out.setdefault(name, []).append(shape)
    return out


CLOCKS = {"device": ("mean_device_ns", "device"), "host": ("mean_s", "host time")}  # clock -> (figure, its flag)


def history(url: str, op: str, *, shape: str | None = None, threshold: float = 0.10,
            pcc_drop: float = 1e-3, clock: str = "device") -> list[dict]:
    """Op `op`'s figures run by run (only runs that called it), oldest first, each with its change flags; the time
    flagged is `clock`'s ("device", the model's estimate, or "host")."""
    if not threshold > 0:
        raise ValueError(f"threshold {threshold!r} must be above 0 (0.1 flags a 10% change)")
    if clock not in CLOCKS:
        raise ValueError(f"clock={clock!r}: give one of {', '.join(CLOCKS)}")
    with reading(url) as conn:
        where, params = "s.name = %s", [op]
        if shape is not None:
            where += " AND s.shape = %s"
            params.append(shape_key(shape))
        rows = conn.execute(
            f"""SELECT r.run_id, r.name, r.started_at, r.git_commit, SUM(s.count)::bigint, SUM(s.total_s),
                       MAX(s.max_s), MAX(s.peak_l1), MIN(s.min_pcc), SUM(s.device_count)::bigint,
                       SUM(s.total_device_ns)::bigint, MAX(s.max_device_ns)
                FROM run_op_stats s JOIN runs r ON r.run_id = s.run_id
                WHERE {where} GROUP BY r.run_id ORDER BY r.run_id""", params).fetchall()
    out, before = [], None
    for run_id, name, started, commit, count, total, longest, l1, pcc, timed, device, device_max in rows:
        row = {"run_id": run_id, "run": name, "started_at": started, "git_commit": commit, "count": count,
               "mean_device_ns": device / timed if device is not None and timed else None,
               "max_device_ns": device_max,
               "mean_s": total / count if total is not None and count else None, "max_s": longest,
               "peak_l1": l1, "min_pcc": pcc, "flags": []}
        if before is not None:
            for key, label in (CLOCKS[clock], ("peak_l1", "L1")):
                a, b = before[key], row[key]
                if a and b is not None and abs(b - a) / abs(a) > threshold:
                    row["flags"].append(f"{label} {'+' if b > a else ''}{(b - a) / abs(a):.0%}")
            if before["min_pcc"] is not None and pcc is not None and before["min_pcc"] - pcc > pcc_drop:
                row["flags"].append(f"PCC {before['min_pcc']:.6f} -> {pcc:.6f}")
        out.append(row)
        before = row
    return out
