"""Measured device times from a real TT-NN profiler run, set beside the performance model's estimates.

    import ttreport
    from ttreport.read import measured
    rows = measured.read_ops_perf("tests/data/ops_perf/wh_clip_encoder_2_first40.csv")   # TT-NN's ops_perf_results.csv
    print(len(rows), rows[0].op_code, rows[0].kernel_ns)      # 40 EmbeddingsDeviceOperation 10429
    with ttreport.open("sample_reports/demo") as r:
        m = measured.summary(r)          # None until `ttreport attach` has stored a file's rows in the report
        print(m and (m.measured_ns, m.modelled_ns, m.median_ratio))

`read_ops_perf` reads the file tt-metal's tools/tracy/process_ops_logs.py writes: one row per device operation
(OP CODE "MatmulDeviceOperation", DEVICE KERNEL DURATION [ns], its tensors, ATTRIBUTES), with signposts and host
ops among them. The file is input from elsewhere: every value is checked (a number a number in its range, a text
short and printable), and the first bad one is a MeasuredFileError naming the row, the column, the value and the
fix. `match` pairs a file's device operations, chip by chip, with a report's (ttreport.attach lists those and
stores the pairs); the rest of this module reads what is attached.

Ratios are estimate / measured, as bench/device_time.py reports them: below 1 the model is too fast.
"""

from __future__ import annotations

import csv
import difflib
import json
import math
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ttreport.errors import MeasuredFileError
from ttreport.read import device_time

# The columns a file must have: which operation, and how long its kernels ran on the device.
OP_CODE, KERNEL_NS = "OP CODE", "DEVICE KERNEL DURATION [ns]"
REQUIRED = (OP_CODE, KERNEL_NS)
# The longest a kernel may be said to run: an hour. A larger figure is a damaged file, not a measurement.
MAX_NS = 3_600 * 10**9
MAX_COUNT = 2**62  # GLOBAL CALL COUNT: an integer SQLite holds
MAX_DEVICE_ID = 65_535
MAX_CORES = 1 << 20
MAX_ROWS = 5_000_000  # a day of a large model's ops; past it a file is refused rather than held in memory
MAX_TEXT_BYTES = 1 << 30  # the rows' texts (attributes mostly, ~1 KiB a row) held at once: the same bound in bytes
MAX_CODE_CHARS = 256
MAX_TEXT_CHARS = 65_536  # ATTRIBUTES: a conv2d's are ~2,000 characters
MAX_TENSORS = 16  # INPUT_0 .. INPUT_15: a concat of many tensors; TT-NN writes as many as the widest op has
MAX_DIM = 1 << 31
_SPEC_WORD = re.compile(r"[A-Z0-9_]{1,64}")
_PRINTABLE = re.compile(r"[^\x00-\x1f\x7f]*")
FIX = "give the ops_perf_results.csv that TT-NN's device profiler wrote (tt-metal's tools/tracy/process_ops_logs.py)"


class MeasuredRow(NamedTuple):
    """One device operation of a profiler file, as measured_perf stores it (beside its position and op)."""
    op_code: str
    device_id: int | None
    global_call_count: int | None
    kernel_ns: int | None  # None: the profiler recorded no kernel time for it (a dropped zone)
    fw_ns: int | None
    core_count: int | None
    math_fidelity: str | None
    inputs: str  # "1x1x19x1280|TILE|BFLOAT16|DRAM_INTERLEAVED" each, ';' between; a sharded one adds "|cores"
    outputs: str
    attributes: str | None


def read_ops_perf(path) -> list[MeasuredRow]:
    """The device operations of TT-NN's ops_perf_results.csv at `path`, in the file's order (signposts and host
    ops left out). Raises MeasuredFileError naming the first value that is not what TT-NN writes."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            return _rows(path, csv.reader(f))
    except OSError as e:
        raise MeasuredFileError(f"{path}: cannot be read ({e.strerror or e}); {FIX}") from None
    except UnicodeDecodeError:
        raise MeasuredFileError(f"{path}: is not UTF-8 text; {FIX}") from None
    except csv.Error as e:
        raise MeasuredFileError(f"{path}: is not CSV ({e}); {FIX}") from None


def _rows(path: Path, reader) -> list[MeasuredRow]:
    header = next(reader, None)
    if not header:
        raise MeasuredFileError(f"{path}: is empty; {FIX}")
    col = {name.strip(): i for i, name in enumerate(header)}
    missing = [c for c in REQUIRED if c not in col]
    if missing:
        seen = ", ".join(repr(h[:40]) for h in header[:4])
        raise MeasuredFileError(f"{path}: has no {' or '.join(repr(c) for c in missing)} column (its header starts "
                                f"{seen}); {FIX}")
    tensors = [(prefix, _tensor_columns(col, prefix)) for prefix in
               [f"INPUT_{i}" for i in range(MAX_TENSORS)] + [f"OUTPUT_{i}" for i in range(MAX_TENSORS)]]
    tensors = [(p, c) for p, c in tensors if c is not None]
    out: list[MeasuredRow] = []
    held = 0
    for line, row in enumerate(reader, start=2):
        if len(out) >= MAX_ROWS or held > MAX_TEXT_BYTES:
            raise MeasuredFileError(f"{path}: holds more than {MAX_ROWS:,} device operations or {MAX_TEXT_BYTES:,} "
                                    "bytes of them; attach a part of it (one run of the model)")
        cell = _Cells(path, line, row, col)
        kind = cell.text("OP TYPE", 64)
        if kind is not None and kind != "tt_dnn_device":
            continue  # a signpost, or an op that ran on the host: not a device operation
        code = cell.text(OP_CODE, MAX_CODE_CHARS)
        if not code:
            if not any(v.strip() for v in row):
                continue  # a blank line
            raise MeasuredFileError(f"{path}: line {line} has no {OP_CODE}; {FIX}")
        cores = cell.number("CORE COUNT", MAX_CORES)
        specs = {prefix: cell.tensor(columns, cores) for prefix, columns in tensors}
        out.append(MeasuredRow(
            code, cell.number("DEVICE ID", MAX_DEVICE_ID), cell.number("GLOBAL CALL COUNT", MAX_COUNT),
            cell.number(KERNEL_NS, MAX_NS), cell.number("DEVICE FW DURATION [ns]", MAX_NS), cores,
            cell.text("MATH FIDELITY", 16),
            ";".join(s for p, s in specs.items() if s and p.startswith("INPUT")),
            ";".join(s for p, s in specs.items() if s and p.startswith("OUTPUT")),
            cell.text("ATTRIBUTES", MAX_TEXT_CHARS)))
        held += sum(len(v) for v in row)
    if not out:
        raise MeasuredFileError(f"{path}: holds no device operation (no row of OP TYPE tt_dnn_device); {FIX}")
    return out


def _tensor_columns(col: dict, prefix: str) -> tuple | None:
    """The columns of one tensor: (W, Z, Y, X, LAYOUT, DATATYPE, MEMORY) indexes; None if the file has none.
    Newer files name the dims W_PAD[LOGICAL] ('32[19]': padded, then logical), older ones W."""
    for dims in ([f"{prefix}_{d}_PAD[LOGICAL]" for d in "WZYX"], [f"{prefix}_{d}" for d in "WZYX"]):
        names = [*dims, f"{prefix}_LAYOUT", f"{prefix}_DATATYPE", f"{prefix}_MEMORY"]
        if all(n in col for n in names):
            return tuple((n, col[n]) for n in names)
    return None


class _Cells:
    """One row's values, each checked as it is read; the error names the line, the column and the value."""

    def __init__(self, path: Path, line: int, row: list, col: dict):
        self.path, self.line, self.row, self.col = path, line, row, col

    def raw(self, name: str, i: int | None = None) -> str:
        i = self.col.get(name) if i is None else i
        return self.row[i].strip() if i is not None and i < len(self.row) else ""

    def bad(self, name: str, value: str, want: str) -> MeasuredFileError:
        shown = value if len(value) <= 40 else value[:40] + "..."
        return MeasuredFileError(f"{self.path}: line {self.line}, {name} = {shown!r} is not {want}; {FIX}")

    def text(self, name: str, limit: int) -> str | None:
        value = self.raw(name)
        if not value:
            return None
        if len(value) > limit or not _PRINTABLE.fullmatch(value):
            raise self.bad(name, value, f"a printable text of at most {limit:,} characters")
        return value

    def number(self, name: str, limit: int) -> int | None:
        value = self.raw(name)
        if not value:
            return None
        try:
            x = float(value) if len(value) <= 32 else math.inf
        except ValueError:
            x = math.nan
        if not (math.isfinite(x) and 0 <= x <= limit and x == int(x)):
            raise self.bad(name, value, f"a whole number from 0 to {limit:,}")
        return int(x)

    def tensor(self, columns: tuple, cores: int | None) -> str | None:
        """'1x1x19x1280|TILE|BFLOAT16|DRAM_INTERLEAVED' (logical dims; a sharded one adds '|cores'), or None."""
        values = [(name, self.raw("", i)) for name, i in columns]
        if not any(v for _, v in values):
            return None
        dims = []
        for name, v in values[:4]:
            logical = v.rsplit("[", 1)[-1].rstrip("]") if v.endswith("]") else v
            if not logical.isdigit() or int(logical) > MAX_DIM:
                raise self.bad(name, v, f"a tensor dimension (a whole number up to {MAX_DIM:,}, or padded[logical] "
                                        "as '32[19]')")
            dims.append(str(int(logical)))
        words = []
        for name, v in values[4:]:
            v = re.sub(r"^DEV_\d+_", "", v) if name.endswith("MEMORY") else v
            if not _SPEC_WORD.fullmatch(v):
                raise self.bad(name, v, "a TT-NN name in capitals (TILE, BFLOAT16, DRAM_INTERLEAVED)")
            words.append(v)
        spec = "|".join(["x".join(dims), *words])
        return spec + f"|{cores}" if "SHARDED" in words[-1] and cores else spec


# -- the report's side ---------------------------------------------------------------------------------------------
class DeviceOp(NamedTuple):
    operation_id: int
    op_name: str  # the report op's name (ttnn.linear)
    device_op: str  # the device operation's name as TT-NN's graph names it (MatmulDeviceOperation), or op_name


# A device operation's name compared across TT-NN versions and device_sim: lower case, no '_', without the
# suffix its class carries ("LayerNormDeviceOperation", "LayerNorm", "MinimalMatmulOp"), and these aliases for an op
# named by its TT-NN call (ttnn.embedding runs EmbeddingsDeviceOperation; ttnn.linear a matmul).
_SUFFIXES = ("deviceoperation", "operation", "op")
_ALIASES = {"minimalmatmul": "matmul", "linear": "matmul", "embedding": "embeddings", "binaryng": "binary",
            "attentionsoftmax": "softmax", "tilizewithvalpadding": "tilize", "untilizewithunpadding": "untilize"}


def name_key(name: str) -> str:
    """'ttnn.layer_norm', 'LayerNormDeviceOperation' and 'LayerNorm' -> 'layernorm' (see _ALIASES)."""
    key = re.split(r"::|\.", name)[-1].lower().replace("_", "")
    for suffix in _SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            key = key[:-len(suffix)]
            break
    return _ALIASES.get(key, key)


@dataclass
class Match:
    """How a file's device operations paired with a report's."""
    pairs: dict[int, DeviceOp]  # measured row index -> the report's device operation it measures
    by_name: int  # of the pairs, how many name the same operation
    first_mismatch: str | None  # the first place the two sequences part, in words; None: they agree throughout
    devices: list = field(default_factory=list)  # the file's device ids, in order of first appearance


# difflib's cost grows with the product of the two lengths on a model's repetitive sequences (ttreport.read.compare
# keeps the same bound): past it, the sequences are paired place by place.
_DIFFLIB_LIMIT = 4_000_000


def match(rows: list[MeasuredRow], chips: dict[int, list[DeviceOp]]) -> Match:
    """Pair each chip's measured rows with that chip's device operations of the report, in order (a one-chip report's
    with every chip of the file: a file's DEVICE ID need not be the emulator's). Runs of equal names pair; between
    them, a run of as many rows as ops pairs place by place (the same op named otherwise, as TT-NN versions do); the
    rest stays unpaired. `pairs` maps a row's index to its DeviceOp."""
    pairs: dict[int, DeviceOp] = {}
    by_name = 0
    first = None
    devices = list(dict.fromkeys(row.device_id for row in rows))
    for device in devices:
        ops = chips.get(device, next(iter(chips.values())) if len(chips) == 1 else [])
        keys = [name_key(o.device_op) for o in ops]
        idx = [i for i, row in enumerate(rows) if row.device_id == device]
        mine = [name_key(rows[i].op_code) for i in idx]
        for tag, i1, i2, j1, j2 in _opcodes(mine, keys):
            same = tag == "equal"
            if same or i2 - i1 == j2 - j1:
                for k in range(i2 - i1):
                    pairs[idx[i1 + k]] = ops[j1 + k]
                by_name += (i2 - i1) if same else 0
            if not same and first is None:
                first = _mismatch(rows, ops, idx, i1, i2, j1, j2, device)
    return Match(pairs, by_name, first, devices)


def _opcodes(a: list, b: list) -> list[tuple]:
    if a and b and len(a) * len(b) <= _DIFFLIB_LIMIT:
        return difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    n = min(len(a), len(b))
    codes = [("equal" if a[k] == b[k] else "replace", k, k + 1, k, k + 1) for k in range(n)]
    if len(a) != len(b):
        codes.append(("replace", n, len(a), n, len(b)))
    return codes


def _mismatch(rows, ops, idx, i1, i2, j1, j2, device) -> str:
    """The first place a chip's rows and the report's device operations part, in words."""
    chip = f" of device {device}" if device is not None else ""
    left = ", ".join(f"{n:,} {what}{'s' if n != 1 else ''}" for n, what in ((i2 - i1, "row"), (j2 - j1, "op"))
                     if n > 0) + " left unpaired"
    if j1 < j2:
        o = ops[j1]
        op = f"op {o.operation_id} {o.op_name}" + (f" ({o.device_op})" if o.device_op != o.op_name else "")
    if i1 == i2:  # ops of the report with no row in the file
        where = f"after the file's last row{chip}" if i1 >= len(idx) else f"before row {idx[i1] + 1}{chip}"
        return f"{op} has no row in the file {where} ({left})"
    at = f"row {idx[i1] + 1}{chip}, {rows[idx[i1]].op_code}"
    if j1 == j2:  # rows with no op in the report
        where = "after its last op" if j1 >= len(ops) else f"before op {ops[j1].operation_id}"
        return f"{at}, has no op in the report {where} ({left})"
    if i2 - i1 == j2 - j1:
        return f"{at}, sits where the report has {op}: paired in place"
    return f"{at}, meets {op} ({left})"


# -- what is attached ------------------------------------------------------------------------------------------
def attached(r) -> bool:
    """Whether measured times are attached to report `r` (`ttreport attach`)."""
    return r._has_table("measured_perf") and r.execute("SELECT 1 FROM measured_perf LIMIT 1").fetchone() is not None


# An op's measured time: its device operations' kernel ns summed on each chip, the slowest chip's (a mesh op ends
# when its last chip does).
_BY_OP = ("SELECT operation_id, MAX(ns) FROM (SELECT operation_id, device_id, SUM(kernel_ns) AS ns FROM measured_perf "
          "WHERE operation_id {} AND typeof(kernel_ns) = 'integer' GROUP BY operation_id, device_id) "
          "GROUP BY operation_id")


# A stored operand spec as _Cells.tensor writes it: logical dims, layout, dtype, memory, and a sharded one's cores.
_SPEC = re.compile(r"\d{1,10}(x\d{1,10}){3}(\|[A-Z0-9_]{1,64}){3}(\|\d{1,7})?")


def stored_rows(r) -> list[MeasuredRow]:
    """The attached file's rows as measured_perf holds them, in the file's order, each value checked as
    read_ops_perf checks the file's (the report is input too): a value attach never writes is a MeasuredFileError."""
    out = []
    for position, *row in r.execute(
            "SELECT position, op_code, device_id, global_call_count, kernel_ns, fw_ns, core_count, math_fidelity, "
            "inputs, outputs, attributes FROM measured_perf ORDER BY position"):
        m = MeasuredRow(*row)
        whole = (m.device_id, MAX_DEVICE_ID), (m.global_call_count, MAX_COUNT), (m.kernel_ns, MAX_NS), \
            (m.fw_ns, MAX_NS), (m.core_count, MAX_CORES)
        texts = (m.op_code, MAX_CODE_CHARS, False), (m.math_fidelity, 16, True), (m.attributes, MAX_TEXT_CHARS, True)
        if not (all(x is None or type(x) is int and 0 <= x <= limit for x, limit in whole)
                and all(x is None and optional or isinstance(x, str) and len(x) <= limit and _PRINTABLE.fullmatch(x)
                        for x, limit, optional in texts)
                and all(isinstance(x, str) and all(_SPEC.fullmatch(s) for s in x.split(";") if s)
                        for x in (m.inputs, m.outputs))):
            raise MeasuredFileError(f"{r.path}: measured_perf row {position!r} holds a value `ttreport attach` never "
                                    f"writes; attach the ops_perf_results.csv again (`ttreport attach {r.path} "
                                    "FILE`)")
        out.append(m)
    return out


def of_ops(r, operation_id: int | None = None) -> dict[int, int]:
    """Each matched op's measured kernel ns, by operation id (empty: nothing attached); only op `operation_id`'s
    when given (absent: no kernel time of it was measured)."""
    if not r._has_table("measured_perf"):
        return {}
    sql, args = (_BY_OP.format("IS NOT NULL"), ()) if operation_id is None else (_BY_OP.format("= ?"), (operation_id,))
    return {i: ns for i, ns in r.execute(sql, args) if isinstance(i, int) and isinstance(ns, int)}


class Measured(NamedTuple):
    """One measured device operation of an op (a row of measured_perf)."""
    op_code: str | None
    device_id: int | None
    kernel_ns: int | None
    core_count: int | None


def of_op(r, operation_id: int) -> list[Measured]:
    """The measured device operations paired with op `operation_id`, in the file's order (empty: none)."""
    if not r._has_table("measured_perf"):
        return []
    return [Measured(*row) for row in r.execute(
        "SELECT op_code, device_id, kernel_ns, core_count FROM measured_perf WHERE operation_id = ? ORDER BY position",
        (operation_id,))]


def _ratio(row) -> float:
    """estimate / measured (inf: nothing measured)"""
    return row.modelled_ns / row.measured_ns if row.measured_ns else math.inf


class OpRatio(NamedTuple):
    operation_id: int
    name: str
    modelled_ns: int
    measured_ns: int
    ratio = property(_ratio)


class NameRatio(NamedTuple):
    name: str
    ops: int
    modelled_ns: int
    measured_ns: int
    ratio = property(_ratio)


@dataclass
class MeasuredSummary:
    rows: int  # the attached file's device operations
    matched_rows: int  # of them, paired with an op of the report
    ops: int  # report ops with both a measured time and an estimate
    measured_ns: int  # over those ops
    modelled_ns: int
    median_ratio: float | None  # of the ops' estimate / measured
    within_2x: float | None  # share of those ops whose estimate is within 2x of the measured time
    within_4x: float | None
    by_name: list[NameRatio]  # per op name, most measured time first
    worst: list[OpRatio]  # the ops the model is furthest from (either way), worst first
    source: str | None = None  # the attached file's name

    @property
    def ratio(self) -> float | None:
        return self.modelled_ns / self.measured_ns if self.measured_ns else None


def summary(r, *, worst: int = 5) -> MeasuredSummary | None:
    """Measured beside modelled over the report's matched ops; None when nothing is attached."""
    if not attached(r):
        return None
    total, matched = r.execute("SELECT COUNT(*), COUNT(operation_id) FROM measured_perf").fetchone()
    measured = of_ops(r)
    modelled = device_time.of_ops(r) if r._has_table("device_perf") else {}
    names = dict(r.execute("SELECT operation_id, name FROM operations WHERE operation_id IN "
                           "(SELECT operation_id FROM measured_perf)"))
    both = [OpRatio(i, str(names.get(i)), modelled[i], ns) for i, ns in sorted(measured.items())
            if i in modelled and ns > 0]
    ratios = [o.ratio for o in both]
    spread = [max(x, 1 / x) if x > 0 else math.inf for x in ratios]
    grouped: dict[str, list[OpRatio]] = {}
    for o in both:
        grouped.setdefault(o.name, []).append(o)
    by_name = sorted((NameRatio(n, len(os), sum(o.modelled_ns for o in os), sum(o.measured_ns for o in os))
                      for n, os in grouped.items()), key=lambda x: (-x.measured_ns, x.name))
    far = sorted(both, key=lambda o: (-abs(math.log(o.ratio)) if 0 < o.ratio < math.inf else -math.inf,
                                      o.operation_id))
    source = _source(r.metadata.get(SOURCE_KEY))
    return MeasuredSummary(total, matched, len(both), sum(o.measured_ns for o in both),
                           sum(o.modelled_ns for o in both), statistics.median(ratios) if ratios else None,
                           _share(spread, 2), _share(spread, 4), by_name, far[:worst], source)


def _source(text) -> str | None:
    """The attached file's name from report_metadata (written by ttreport.attach; checked: it is read back)."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    name = value.get("file") if isinstance(value, dict) else None
    return name if isinstance(name, str) else None


def _share(spread: Iterable[float], within: float) -> float | None:
    spread = list(spread)
    return sum(s <= within for s in spread) / len(spread) if spread else None


SOURCE_KEY = "measured_perf_source"  # report_metadata: the attached file's name, its rows and how many matched
