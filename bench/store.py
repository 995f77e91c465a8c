"""9. The PostgreSQL store: 1,000 runs of a 10,000-op model, then `history` for one op and `runs`.

The runs are generated in the server (generate_series), not captured: a `runs` row, operations
rows and the run_op_stats a push derives from them (aggregated from those operations rows with
the same grouping as push.py), so the store holds 10 million operations rows. 20 op names, each
called with 4 first-input shapes. Timed end to end through the public functions (connect
included): store.history(url, "ttnn.matmul") and store.runs(url). The server is a throwaway
cluster (ttreport.store.throwaway) unless $TTREPORT_BENCH_STORE names an empty database.
"""

from __future__ import annotations

import os
import time

from bench.common import Figure, at_most, info, median

NAMES = 20
SHAPES = 4


def _fill(url: str, runs: int, ops: int) -> float:
    import psycopg

    from ttreport.store.connection import connect, ensure_schema, split_url

    conn = connect(url)
    ensure_schema(conn)
    conn.close()
    t = time.perf_counter()
    with psycopg.connect(split_url(url)[0]) as conn:
        conn.execute(
            "INSERT INTO runs (run_id, report_uuid, name, model, host, git_commit, started_at, status, operations) "
            "SELECT r, gen_random_uuid()::text, 'nightly-' || r, 'bench-model', 'host-' || (r %% 8), md5(r::text), "
            "to_char(timestamp '2026-01-01' + r * interval '1 hour', 'YYYY-MM-DD\"T\"HH24:MI:SS'), 'complete', %s "
            "FROM generate_series(1, %s) r", (ops, runs))
        conn.execute(
            "INSERT INTO operations (run_id, operation_id, name, duration, depth, status, l1_bytes, dram_bytes) "
            "SELECT r, o, 'ttnn.op' || (o %% %s), 1e-5 * (1 + (o %% 7)) * (1 + (r %% 50) / 100.0), 0, 'ok', "
            "(o %% 97) * 4096, (o %% 13) * 65536 FROM generate_series(1, %s) r, generate_series(1, %s) o",
            (NAMES, runs, ops))
        conn.execute(
            "INSERT INTO run_op_stats (run_id, name, shape, count, total_s, max_s, peak_l1, min_pcc) "
            "SELECT run_id, CASE WHEN name = 'ttnn.op0' THEN 'ttnn.matmul' ELSE name END, "
            "'1x32x' || (32 * (1 + operation_id %% %s)), COUNT(*), SUM(duration), MAX(duration), MAX(l1_bytes), "
            "0.999 FROM operations GROUP BY 1, 2, 3", (SHAPES,))
        conn.execute("SELECT setval(pg_get_serial_sequence('runs', 'run_id'), %s)", (runs,))
        conn.commit()
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")
    return time.perf_counter() - t


def _p50(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return median(times)


def run(tmp, *, runs: int, ops: int, repeats: int) -> list[Figure]:
    from ttreport import store

    url, cluster = os.environ.get("TTREPORT_BENCH_STORE"), None
    if url is None:
        from ttreport.store import throwaway

        try:
            cluster = throwaway.start()
        except throwaway.Unavailable as e:
            print(f"  skipped: {e}")
            return []
        url = cluster.new_database()
    try:
        fill_s = _fill(url, runs, ops)
        rows = store.history(url, "ttnn.matmul")
        assert len(rows) == runs, f"history found {len(rows)} runs of {runs}"
        assert len(store.runs(url)) == runs
        return [
            info(f"store filled: {runs:,} runs x {ops:,} ops (server-side)", fill_s, "s"),
            at_most("history for one op (all runs): p50", 1e3 * _p50(lambda: store.history(url, "ttnn.matmul"),
                                                                      repeats), "ms", 100),
            at_most("history for one op and shape: p50",
                    1e3 * _p50(lambda: store.history(url, "ttnn.matmul", shape="1x32x64"), repeats), "ms", 100),
            at_most("runs (every run): p50", 1e3 * _p50(lambda: store.runs(url), repeats), "ms", 50),
        ]
    finally:
        if cluster is not None:
            cluster.stop()
