"""4. Queries on the big report of benchmark 2, through ttreport.open(): p50 and p95 of each.

Each query runs on a fresh id each time (ids drawn with a fixed seed), so a repeat is not
served from a row the previous run just touched. "Ops by name" asks for the first page of
100, as a viewer does; fetching all 250,000 rows of one name is a bulk export, not a query.
"""

from __future__ import annotations

import random
import time

import ttreport
from bench.common import Figure, at_most, median, percentile

QUERIES = {
    "op by id": "SELECT * FROM operations WHERE operation_id = :op",
    "ops by name (first page of 100)":
        "SELECT operation_id, duration FROM operations WHERE name = 'ttnn.relu' "
        "AND operation_id > :op ORDER BY operation_id LIMIT 100",
    "an op's inputs and outputs": "SELECT * FROM op_tensors WHERE operation_id = :op",
    "a tensor's producer and consumers": """
        SELECT 'produced by' AS role, o.operation_id, o.name
        FROM tensors t JOIN operations o ON o.operation_id = t.producer_operation_id
        WHERE t.tensor_id = :tensor
        UNION ALL
        SELECT 'consumed by', o.operation_id, o.name
        FROM input_tensors i JOIN operations o ON o.operation_id = i.operation_id
        WHERE i.tensor_id = :tensor""",
    "10 slowest ops": "SELECT operation_id, name, duration FROM operations ORDER BY duration DESC LIMIT 10",
    "peak L1 with its op":
        "SELECT operation_id, name, l1_bytes FROM operations ORDER BY l1_bytes DESC, operation_id LIMIT 1",
    # docs/queries.md, "The 10 slowest matmuls and linears, with their shapes" (matmuls only here)
    "cookbook: 10 slowest matmuls with shapes": """
        SELECT o.operation_id, o.duration * 1e6 AS duration_us,
               a.shape AS a_shape, b.shape AS b_shape, y.shape AS output_shape
        FROM operations o
        JOIN input_tensors ia ON ia.operation_id = o.operation_id AND ia.input_index = 0
        JOIN tensors a ON a.tensor_id = ia.tensor_id
        JOIN input_tensors ib ON ib.operation_id = o.operation_id AND ib.input_index = 1
        JOIN tensors b ON b.tensor_id = ib.tensor_id
        JOIN output_tensors iy ON iy.operation_id = o.operation_id
        JOIN tensors y ON y.tensor_id = iy.tensor_id
        WHERE o.name = 'ttnn.matmul'
        ORDER BY o.duration DESC
        LIMIT 10""",
}


def run(report_path, *, repeats: int) -> list[Figure]:
    rng = random.Random(5)
    figures = []
    with ttreport.open(report_path) as report:
        n_ops = report.count_operations()
        low_tensor, high_tensor = report.execute("SELECT MIN(tensor_id), MAX(tensor_id) FROM tensors").fetchone()
        for name, sql in QUERIES.items():
            times, rows = [], 0
            for _ in range(repeats):
                params = {"op": rng.randint(1, n_ops), "tensor": rng.randint(low_tensor, high_tensor)}
                params = {k: v for k, v in params.items() if f":{k}" in sql}
                t = time.perf_counter()
                rows += len(report.execute(sql, params).fetchall())
                times.append((time.perf_counter() - t) * 1e3)
            if rows == 0:
                raise AssertionError(f"query {name!r} found nothing in {report_path}; the benchmark is broken")
            figures.append(at_most(f"{name}: p50", median(times), "ms", 20))
            figures.append(Figure(f"{name}: p95", percentile(times, 95), "ms"))
    return figures
