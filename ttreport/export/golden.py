"""The golden checks a capture made, per op, and the first op whose check failed.

    from ttreport.export.golden import golden_checks, first_divergence
    with ttreport.open("generated/ttreport/reports/demo") as r:
        checks = golden_checks(r)          # {operation_id: [{"mode", "tensor_id", "status", "pcc", "desired_pcc"}]}
        print(first_divergence(checks))    # (operation_id, check) of the first failure in call order, or None

Only a golden-mode capture has checks, at most a few per op; they are read at once and the exporters'
op streams look each op up by id.
"""

from __future__ import annotations


def golden_checks(report) -> dict:
    found: dict = {}
    for op_id, mode, tid, status, pcc, desired in report.execute(
            "SELECT operation_id, mode, tensor_id, status, pcc, desired_pcc FROM tensor_comparisons "
            "ORDER BY operation_id, mode, tensor_id"):
        pcc = pcc if isinstance(pcc, float) and pcc == pcc else None  # NaN is no JSON number
        found.setdefault(op_id, []).append({"mode": mode, "tensor_id": tid, "status": status, "pcc": pcc,
                                            "desired_pcc": desired})
    return found


def first_divergence(checks: dict):
    """(operation_id, check) of the first op, in call order, with a failed check; None when all passed."""
    for op_id in sorted(i for i in checks if isinstance(i, int)):
        for c in checks[op_id]:
            if c["status"] == "fail":
                return op_id, c
    return None
