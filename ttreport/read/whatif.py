"""What if one tensor lived elsewhere, or had another dtype, or matmuls ran at another fidelity?

    import ttreport
    from ttreport.read import whatif
    with ttreport.open("sample_reports/demo") as r:
        w = whatif.whatif(r, tensor_id=45, memory="L1")
        print(w.before_ns, w.after_ns, w.peak_l1_before, w.peak_l1_after)
        for c in w.changed:                  # the ops whose estimate moved
            print(c.operation_id, c.name, c.before_ns, c.after_ns)

The report is not rerun: each op with an estimate (the `device_perf` table) is estimated again by
device_sim.perf_model from its tensors' rows (shape, dtype, layout, where, bytes) with the one
change applied. Without a change the figures are the stored ones (tests/test_whatif.py). An op whose
rows hold a value the model cannot read (a math fidelity, dtype or layout it does not know, text where
a number belongs: a damaged or crafted report) is left as stored and listed in `skipped`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from device_sim import perf_model
from device_sim.compute_config import MathFidelity
from device_sim.types import BufferType, DataType, Layout
from ttreport.errors import TTReportError

MEMORIES = ("L1", "DRAM")
DTYPES = ("bfloat16", "bfloat8_b", "bfloat4_b", "float32")
FIDELITIES = ("LoFi", "HiFi2", "HiFi3", "HiFi4")


@dataclass
class Change:
    operation_id: int
    name: str
    before_ns: int
    after_ns: int
    bound_after: str


@dataclass
class WhatIf:
    before_ns: int  # estimated device time of the top-level ops, as stored
    after_ns: int  # the same with the change
    peak_l1_before: int | None  # bytes, all banks
    peak_l1_after: int | None
    changed: list[Change] = field(default_factory=list)
    # (operation_id, what in its rows could not be read): left as stored; without a stored time, out of the totals
    skipped: list[tuple[int, str]] = field(default_factory=list)


class _Damaged(ValueError):
    """A stored value the estimate cannot be worked out from (the message names it)."""


def _shape(text) -> tuple:
    if text is not None and not isinstance(text, str):
        raise _Damaged(f"shape {text!r} is not a shape")
    return tuple(int(n) for n in re.findall(r"\d+", text or ""))


def _enum(enum, text, default):
    if not text:
        return default
    name = text.rsplit(".", 1)[-1] if isinstance(text, str) else None
    if name not in enum.__members__:
        raise _Damaged(f"{enum.__name__} {text!r} is not one of {', '.join(enum.__members__)}")
    return enum[name]


_NO_CHANGE: dict = {}  # _operand's change for a tensor as the report has it


def _operand(row, change) -> perf_model.Operand:
    tensor_id, size, buffer_type, memory_config, shape, dtype, layout = row
    shape = _shape(shape)
    dtype = _enum(DataType, dtype, DataType.BFLOAT16)
    layout = _enum(Layout, layout, Layout.TILE)
    if not (size is None or type(size) is int) or not (memory_config is None or isinstance(memory_config, str)):
        raise _Damaged(f"tensor {tensor_id}'s size {size!r} or memory config {memory_config!r} is not one")
    sharded = bool(memory_config) and "SHARDED" in memory_config
    where = perf_model.location(buffer_type, None) + ("_sharded" if sharded and buffer_type is not None else "")
    nbytes = size if size is not None else perf_model.operand_bytes(shape, dtype, layout)
    if change.get("tensor_id") == tensor_id:
        if change.get("memory"):
            where = change["memory"].lower()  # interleaved in the new memory
        if change.get("dtype"):
            nbytes = perf_model.operand_bytes(shape, DataType[change["dtype"].upper()], layout)
    return perf_model.Operand(nbytes, where, shape, layout == Layout.ROW_MAJOR)


def whatif(r, *, tensor_id: int | None = None, memory: str | None = None, dtype: str | None = None,
           math_fidelity: str | None = None) -> WhatIf:
    """Re-estimate report `r` with one change: tensor `tensor_id` in `memory` or as `dtype`, or every matmul
    (those reading `tensor_id`, if given) at `math_fidelity`."""
    given = [k for k, v in (("memory", memory), ("dtype", dtype), ("math_fidelity", math_fidelity)) if v]
    if len(given) != 1:
        raise TTReportError(f"give exactly one change (--memory, --dtype or --math-fidelity), got {len(given)}: "
                            f"{', '.join(given) or 'none'}")
    if memory and memory.upper() not in MEMORIES:
        raise TTReportError(f"memory {memory!r} is not one of {', '.join(MEMORIES)}")
    if dtype and dtype.lower() not in DTYPES:
        raise TTReportError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    if math_fidelity and math_fidelity not in FIDELITIES:
        raise TTReportError(f"math fidelity {math_fidelity!r} is not one of {', '.join(FIDELITIES)}")
    if (memory or dtype) and tensor_id is None:
        raise TTReportError("--memory and --dtype change one tensor: give its id with --tensor ID "
                            "(`ttreport ops REPORT` lists each op's output tensors as id:shape)")
    t = None
    if tensor_id is not None:
        t = r.execute("SELECT tensor_id, size, buffer_type, memory_config, shape, dtype, layout, producer_operation_id,"
                      " address, device_id FROM tensors WHERE tensor_id = ?", (tensor_id,)).fetchone()
        if t is None:
            raise TTReportError(f"tensor {tensor_id} is not in this report; `ttreport ops REPORT` lists tensor ids")
    change = {"tensor_id": tensor_id, "memory": memory and memory.upper(), "dtype": dtype and dtype.lower()}

    ops = r.execute("SELECT p.operation_id, o.name, p.ideal_ns, p.math_fidelity, o.depth FROM device_perf p "
                    "JOIN operations o USING (operation_id) ORDER BY p.operation_id").fetchall()
    tensors_of: dict[int, tuple[list, list]] = {}
    cols = "t.tensor_id, t.size, t.buffer_type, t.memory_config, t.shape, t.dtype, t.layout"
    for table, index, side in (("input_tensors", "input_index", 0), ("output_tensors", "output_index", 1)):
        for row in r.execute(f"SELECT x.operation_id, {cols} FROM {table} x JOIN tensors t USING (tensor_id) "
                             f"ORDER BY x.operation_id, x.{index}"):
            tensors_of.setdefault(row[0], ([], []))[side].append(row[1:])
    out = WhatIf(0, 0, None, None)
    for op_id, name, before, fidelity, depth in ops:
        if type(before) is not int or not isinstance(name, str):
            out.skipped.append((op_id, f"device_perf.ideal_ns {before!r} or its name is not one"))
            continue
        ins, outs = tensors_of.get(op_id, ([], []))
        touches = tensor_id is not None and any(row[0] == tensor_id for row in ins + outs)
        after = before
        if touches or (math_fidelity and fidelity and tensor_id is None):
            try:
                f = _enum(MathFidelity, fidelity, None)  # the stored one is read even when replaced: it says matmul
                if math_fidelity and fidelity:
                    f = MathFidelity[math_fidelity]
                e = perf_model.estimate(name, [_operand(x, change) for x in ins], [_operand(x, change) for x in outs],
                                        f)
                # The same op unchanged, from the same rows: what the capture knew beyond them (a core_grid or
                # program grid, an SFPU op's name) is not in them. Where that moved the estimate, the change's
                # effect is scaled onto the stored one instead of replacing it (a BERT bmm given a core_grid: 42 us
                # stored, 5.1 ms from its rows alone).
                base = perf_model.estimate(name, [_operand(x, _NO_CHANGE) for x in ins],
                                           [_operand(x, _NO_CHANGE) for x in outs], _enum(MathFidelity, fidelity, None))
            except _Damaged as damage:
                out.skipped.append((op_id, str(damage)))
                e = None
            if e is not None:
                after = e.ideal_ns if base is None or base.ideal_ns in (0, before) else \
                    round(before * e.ideal_ns / base.ideal_ns)
                if after != before:
                    out.changed.append(Change(op_id, name, before, after, e.bound))
        if depth in (0, None):
            out.before_ns += before
            out.after_ns += after
    try:
        out.peak_l1_before, out.peak_l1_after = _peak_l1(r, t, change)
    except _Damaged as damage:
        raise TTReportError(f"tensor {tensor_id}'s row cannot be read: {damage}; `ttreport check REPORT` lists the "
                            f"damage") from None
    return out


def _peak_l1(r, t, change) -> tuple:
    """Peak L1 (all banks) as stored, and with the tensor's buffer moved or resized over its lifetime."""
    # A damaged row (text or a BLOB for a number) is left out; `ttreport check` names it.
    rows = r.execute("SELECT end_seq, l1_bytes FROM operations WHERE typeof(l1_bytes) = 'integer' "
                     "AND typeof(end_seq) = 'integer'").fetchall()
    if not rows:
        return None, None
    before = max(b for _, b in rows)
    if t is None or t[2] is None or not (change["memory"] or change["dtype"]):
        return before, before
    _, size, buffer_type, _, shape, _, layout, producer, address, device_id = t
    life = r.execute("SELECT allocated_seq, freed_seq FROM buffer_lifetimes WHERE device_id = ? AND address = ? "
                     "AND buffer_type = ? AND allocated_by_operation_id IS ? ORDER BY allocated_seq LIMIT 1",
                     (device_id, address, buffer_type, producer)).fetchone()
    if life is None:
        return before, before
    if type(size) is not int or not all(v is None or type(v) is int for v in life):
        raise _Damaged(f"its size {size!r} or buffer lifetime {life!r} is not a number")
    in_l1 = buffer_type == int(BufferType.L1)
    new_size = size
    if change["dtype"]:
        new_size = perf_model.operand_bytes(_shape(shape), DataType[change["dtype"].upper()],
                                            _enum(Layout, layout, Layout.TILE))
    to_l1 = change["memory"] == "L1" if change["memory"] else in_l1
    delta = (new_size if to_l1 else 0) - (size if in_l1 else 0)
    lo, hi = life
    after = max(b + (delta if seq >= lo and (hi is None or seq < hi) else 0) for seq, b in rows)
    return before, after
