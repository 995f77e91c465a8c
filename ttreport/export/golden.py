"""The golden checks a capture made, per op, and the first op whose check failed.

    from ttreport.export.golden import golden_checks, first_divergence
    with ttreport.open("generated/ttreport/reports/demo") as r:
        checks = golden_checks(r)  # {op id: [{"mode", "tensor_id", "status", "pcc", "desired_pcc", "device_id"}]}
        print(first_divergence(checks))    # (operation_id, check) of the first failure in call order, or None

Only a golden-mode capture has checks, at most a few per op. golden_checks reads them all (the HTML
draws them all); GoldenStream reads them in id order beside an op stream in the same order, so the
trace's memory stays bounded however many ops were checked.
"""

from __future__ import annotations

# device_id: the device shard a check judged, on a mesh (one check per device); None for a one-device tensor.
_SQL = ("SELECT operation_id, mode, tensor_id, status, pcc, desired_pcc, device_id FROM tensor_comparisons "
        "WHERE typeof(operation_id) = 'integer' ORDER BY operation_id, mode, tensor_id, device_id")


def _check(mode, tid, status, pcc, desired, device) -> dict:
    # NaN (undefined PCC, or a damaged value) is no JSON number: None
    pcc = float(pcc) if isinstance(pcc, (int, float)) and pcc == pcc else None
    desired = desired if isinstance(desired, (int, float)) and desired == desired else None
    device = device if isinstance(device, int) else None
    return {"mode": mode, "tensor_id": tid, "status": status, "pcc": pcc, "desired_pcc": desired, "device_id": device}


def golden_checks(report) -> dict:
    found: dict = {}
    for op_id, *rest in report.execute(_SQL):
        found.setdefault(op_id, []).append(_check(*rest))
    return found


class GoldenStream:
    """stream.get(op_id) -> that op's checks, for op ids asked in increasing order (one cursor, read once)."""

    def __init__(self, report):
        self._cur = report.execute(_SQL)
        self._row = self._cur.fetchone()

    def get(self, op_id: int) -> list:
        found = []
        while self._row is not None and self._row[0] <= op_id:
            if self._row[0] == op_id:
                found.append(_check(*self._row[1:]))
            self._row = self._cur.fetchone()
        return found


def first_divergence(checks: dict):
    """(operation_id, check) of the first op, in call order, with a failed check; None when all passed."""
    for op_id in sorted(i for i in checks if isinstance(i, int)):
        for c in checks[op_id]:
            if c["status"] == "fail":
                return op_id, c
    return None
