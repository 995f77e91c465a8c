"""Report against report: align two runs' ops, compare their stored tensors, name the first divergence.

    result = ttreport.compare_reports("run-a", "run-b")
    print(result.to_table())          # the root cause on a line of its own
    sys.exit(result.exit_code)        # 0: every aligned op matches; 1: one does not

A is the reference: each B tensor is compared with its A counterpart by compare_tensors, at
the tolerances of the finer of the two device dtypes (a run that lowered a dtype is caught),
or at rtol/atol/pcc when given.

Alignment: ops are keyed by (name, input shapes, output shapes). The common prefix and suffix
pair up directly; the differing middle is aligned with difflib (no autojunk, so repeated ops
align) when it is short, and greedily when it is long (at each difference, the nearest point
where the runs agree again); each gap left over is aligned again by name alone (an op whose
shapes changed).
What still has no partner is listed as unaligned, never dropped. Only top-level ops (depth 0)
take part unless top_level=False. Swapping A and B gives the mirrored pairs. When fewer than half
of the ops pair up by name and shapes, the runs are said to look like different models (a line
at the top of the table, `unrelated` in JSON).

Each aligned op is classified from its outputs and inputs:
  match           every output matches
  mismatch        an output differs while its inputs matched (or were not stored): a root cause
  propagated      an output differs and an input already differed: an effect of an earlier cause
                  (unless that input was made before the capture: then this op is the mismatch, and
                  its reason names the input, since no op in the report can be its cause)
  missing_tensor  an output was not stored in one of the reports, so nothing can be said
The root cause is the first mismatch, with its stack trace from both reports.

A tensor on a mesh is stored per device shard and compared shard by shard (device by device, as its
op ran); an output's figures are those of its first differing device (else its lowest PCC), and the
devices that differ are named: the root cause says "on rank N, device D" in a merged multi-host run.

Memory: one pair of tensors is loaded at a time and dropped after its comparison; what is kept
per op is its comparison figures, and per compared tensor one boolean (to judge later inputs).
"""

from __future__ import annotations

import csv
import difflib
import fnmatch
import io
import json
import math
import os
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from ttreport.errors import TensorFileDamagedError, TensorFileError, TensorTooLargeError
from ttreport.metrics import Comparison, compare_tensors, dtype_name, finer_dtype
from ttreport.read import terminal
from ttreport.read.report import Report, ReportError
from ttreport.read.terminal import json_safe

MATCH, MISMATCH, PROPAGATED, MISSING = "match", "mismatch", "propagated", "missing_tensor"

_OPS_SQL = """
SELECT o.operation_id, o.name,
  (SELECT group_concat(shape, ';') FROM (SELECT t.shape AS shape FROM input_tensors i
     JOIN tensors t ON t.tensor_id = i.tensor_id WHERE i.operation_id = o.operation_id ORDER BY i.input_index)),
  (SELECT group_concat(shape, ';') FROM (SELECT t.shape AS shape FROM output_tensors x
     JOIN tensors t ON t.tensor_id = x.tensor_id WHERE x.operation_id = o.operation_id ORDER BY x.output_index)),
  o.rank
FROM operations o {where} ORDER BY o.operation_id"""

_TENSORS_SQL = """
SELECT t.tensor_id, t.dtype, t.file, t.producer_operation_id FROM {table} x JOIN tensors t ON t.tensor_id = x.tensor_id
WHERE x.operation_id = ? ORDER BY x.{index}"""


@dataclass(slots=True)
class OpPair:
    """One aligned op: A's and B's operation ids, and what comparing their tensors found."""

    status: str
    name: str  # paired ops have equal names
    a_id: int
    b_id: int
    reason: str
    outputs: list[Comparison | None] = field(default_factory=list)  # None: not stored
    inputs_matched: bool | None = None  # None: an input was not stored in one report
    # Per output of a mesh tensor: (device_id, Comparison) for each device shard; None for a one-device tensor.
    shards: list[list[tuple[int, Comparison]] | None] = field(default_factory=list)
    rank: int | None = None  # B's rank of the op in a merged multi-host run; None: one rank

    @property
    def worst(self) -> Comparison | None:
        """The output comparison that decided the status (the first failing one, else the first)."""
        k = self._worst_output()
        return None if k is None else self.outputs[k]

    @property
    def devices(self) -> list[int]:
        """The devices whose shard of the deciding output differs (the device the output's figures are from,
        when none differs); [] for a one-device output."""
        k = self._worst_output()
        shards = self.shards[k] if k is not None and k < len(self.shards) else None
        if not shards:
            return []
        failing = [d for d, c in shards if not c.passed]
        return failing or [d for d, c in shards if c is self.outputs[k]]

    def _worst_output(self) -> int | None:
        found = [k for k, c in enumerate(self.outputs) if c is not None]
        return next((k for k in found if not self.outputs[k].passed), found[0] if found else None)

    def to_dict(self) -> dict:
        outputs = []
        for k, c in enumerate(self.outputs):
            shards = self.shards[k] if k < len(self.shards) else None
            d = None if c is None else c.to_dict()
            if d is not None and shards:
                d["device_id"] = next(dev for dev, x in shards if x is c)
                d["devices"] = [{"device_id": dev, **x.to_dict()} for dev, x in shards]
            outputs.append(d)
        return {"status": self.status, "name": self.name, "a_operation_id": self.a_id, "b_operation_id": self.b_id,
                "reason": self.reason, "inputs_matched": self.inputs_matched, "rank": self.rank,
                "devices": self.devices, "outputs": outputs}


@dataclass
class ReportComparison:
    a: Path
    b: Path
    pairs: list[OpPair]
    only_a: list[tuple[int, str]]  # (operation_id, name) of ops with no partner in B
    only_b: list[tuple[int, str]]
    root_cause: OpPair | None
    root_cause_stacks: tuple[str | None, str | None]  # A's and B's stack traces of the root cause
    settings: dict
    strict: bool = False
    root_cause_rank: int | None = None  # B's rank of the root cause in a merged multi-host run; None: one rank
    keyed: int | None = None  # aligned pairs whose name and shapes both agree (None: not counted)
    ops_a: int = 0  # ops that took part in the alignment, per side
    ops_b: int = 0

    @property
    def unrelated(self) -> str | None:
        """One line when A and B look like different models (see unrelated_runs); None when they do not."""
        return None if self.keyed is None else unrelated_runs(self.keyed, self.ops_a, self.ops_b)

    @property
    def counts(self) -> dict[str, int]:
        counts = {s: 0 for s in (MATCH, MISMATCH, PROPAGATED, MISSING)}
        for p in self.pairs:
            counts[p.status] += 1
        counts["unaligned"] = len(self.only_a) + len(self.only_b)
        return counts

    @property
    def exit_code(self) -> int:
        """0 when every aligned op matches (and, with strict, every op aligned); else 1."""
        if any(p.status != MATCH for p in self.pairs):
            return 1
        return 1 if self.strict and (self.only_a or self.only_b) else 0

    def to_dict(self) -> dict:
        rc = self.root_cause
        return json_safe({
            "a": str(self.a), "b": str(self.b), "settings": self.settings, "strict": self.strict,
            "exit_code": self.exit_code, "counts": self.counts, "unrelated": self.unrelated,
            "root_cause": None if rc is None else {**rc.to_dict(), "stack_trace_a": self.root_cause_stacks[0],
                                                   "stack_trace_b": self.root_cause_stacks[1],
                                                   "rank": self.root_cause_rank,
                                                   "device": rc.devices[0] if rc.devices else None},
            "ops": [p.to_dict() for p in self.pairs],
            "unaligned": {"a": [{"operation_id": i, "name": n} for i, n in self.only_a],
                          "b": [{"operation_id": i, "name": n} for i, n in self.only_b]},
        })

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_csv(self) -> str:
        """One row per aligned op: its ids, name, status, rank and differing devices (space-separated), the
        deciding output's figures, and the reason."""
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["a_operation_id", "b_operation_id", "name", "status", "rank", "devices", "pcc", "max_abs_error",
                    "mismatched", "reason"])
        for p in self.pairs:
            c = p.worst
            w.writerow([p.a_id, p.b_id, p.name, p.status, "" if p.rank is None else p.rank,
                        " ".join(map(str, p.devices)), "" if c is None else _num(c.pcc, ".9g"),
                        "" if c is None else _num(c.max_abs_error, ".9g"), "" if c is None else c.mismatched,
                        p.reason])
        return out.getvalue()

    def to_table(self, limit: int = 100, *, table=None) -> str:
        """A readable table: every op when there are at most `limit`, else the ones that do not match.
        `table(columns, rows)` draws the op table as text (ttreport.read.terminal.table_text on a terminal)."""
        shown = self.pairs if len(self.pairs) <= limit else [p for p in self.pairs if p.status != MATCH]
        lines = [f"A: {terminal.printable(str(self.a))}", f"B: {terminal.printable(str(self.b))}"]
        if self.unrelated:
            lines.insert(0, f"warning: {self.unrelated}")
        rows = []
        mesh = any(p.shards and any(p.shards) for p in shown[:limit])  # a device column only when a tensor has shards
        for p in shown[:limit]:
            w = p.worst
            rows.append([str(p.a_id), str(p.b_id), terminal.cell(p.name), p.status,
                         "" if w is None else _num(w.pcc, ".6f"), "" if w is None else _num(w.max_abs_error, ".4g"),
                         "" if w is None else w.mismatched_text] + ([_devices_text(p.devices)] if mesh else []))
        c = self.counts
        if c[MATCH] == len(self.pairs) and not c["unaligned"]:
            lines.append(f"identical: every one of the {len(self.pairs):,} aligned ops matches"
                         + (" (A and B are the same report)" if Path(self.a).resolve() == Path(self.b).resolve()
                            else ""))
            rows = rows if len(self.pairs) <= limit else []
        if rows:
            columns = ["A op", "B op", "name", "status", "PCC", "max abs err", "mismatched"] + (["device"] * mesh)
            lines += _table(columns, rows) if table is None else [table(columns, rows)]
        if rows and (len(shown) > limit or len(shown) < len(self.pairs)):
            hidden = len(self.pairs) - min(len(shown), limit)
            lines.append(f"... {hidden:,} more aligned ops not shown (--json FILE writes them all)")
        for side, ops in (("A", self.only_a), ("B", self.only_b)):
            if ops:
                listed = ", ".join(f"{i} {terminal.cell(n)}" for i, n in ops[:20]) + (" ..." if len(ops) > 20 else "")
                note = "fails the comparison (--strict)" if self.strict else "not a failure without --strict"
                lines.append(f"warning: {len(ops)} op(s) only in {side}, unaligned ({note}): {listed}")
        rc = self.root_cause
        if rc is not None:
            lines.append("")
            where = [] if self.root_cause_rank is None else [f"rank {self.root_cause_rank}"]
            where += [_devices_text(rc.devices, word=True)] if rc.devices else []
            where = f" on {', '.join(where)}" if where else ""
            # Names, reasons and stacks come from the reports: shown with their control characters escaped.
            lines.append(f"ROOT CAUSE: {terminal.cell(rc.name)}{where} (A op {rc.a_id}, B op {rc.b_id}): "
                         f"{terminal.cell(rc.reason)}")
            for side, stack in zip("AB", self.root_cause_stacks):
                lines.append(f"  stack trace in {side}:")
                lines += ["    " + s for s in terminal.cell(stack or "(not recorded)", 20_000).splitlines()]
        lines.append("")
        lines.append(f"{len(self.pairs)} aligned ops: {c[MATCH]} match, {c[MISMATCH]} mismatch, "
                     f"{c[PROPAGATED]} propagated, {c[MISSING]} missing tensors; {c['unaligned']} unaligned")
        return "\n".join(lines)


def compare_reports(a, b, *, rtol: float | None = None, atol: float | None = None, pcc: float | None = None,
                    ops: str | None = None, strict: bool = False, progress: bool = False,
                    top_level: bool = True) -> ReportComparison:
    """Compare report B with report A (the reference), op by op; see the module docstring.

    a, b: report folders (or their db.sqlite). ops: compare only ops whose name matches (exact,
    its last dotted part, or a glob); the others are still aligned. progress: a bar on stderr
    (ttreport.read.terminal.progress; True draws it only when stderr is a terminal).
    """
    with Report(report_path(a, "compare_reports")) as ra, Report(report_path(b, "compare_reports")) as rb:
        for r in (ra, rb):  # said at once, not after aligning and visiting every op
            if not r.execute("SELECT 1 FROM tensors WHERE file IS NOT NULL LIMIT 1").fetchone():
                raise ReportError(f"{r.path} has no stored tensors, so no op can be compared; capture both runs "
                                  f"with Config(tensors='all') (or 'outputs', the least that works)")
        keys: dict[tuple, int] = {}  # (name, input shapes, output shapes) -> key id, shared by both
        names: dict[str, int] = {}
        ids_a, ka, na, _ = _ops(ra, top_level, keys, names)
        ids_b, kb, nb, ranks_b = _ops(rb, top_level, keys, names)
        several_ranks = len(set(ranks_b)) > 1  # a merged multi-host run: each op says its rank
        name_of = list(names)
        aligned, only_a, only_b = align(ka, kb, na, nb, key_of=list(keys))
        settings = {"rtol": rtol, "atol": atol, "pcc": pcc, "ops": ops, "top_level": top_level}
        checker = _Checker(ra, rb, dict(rtol=rtol, atol=atol, pcc=pcc))
        pairs = []
        shown = None if progress else False  # None: drawn when stderr is a terminal
        with terminal.progress("comparing ops", total=len(aligned), unit="ops", enabled=shown) as advance:
            for i, j in aligned:
                name = name_of[na[i]]
                if ops is None or _name_matches(name, ops):
                    pairs.append(checker.pair(name, ids_a[i], ids_b[j]))
                    if several_ranks:
                        pairs[-1].rank = ranks_b[j]
                advance()
        root = next((p for p in pairs if p.status == MISMATCH), None)
        stacks = (None, None) if root is None else (_stack(ra, root.a_id), _stack(rb, root.b_id))
        return ReportComparison(ra.path, rb.path, pairs, [(ids_a[i], name_of[na[i]]) for i in only_a],
                                [(ids_b[j], name_of[nb[j]]) for j in only_b], root, stacks, settings, strict,
                                None if root is None else _rank(rb, root.b_id),
                                sum(ka[i] == kb[j] for i, j in aligned), len(ka), len(kb))


def report_path(report, caller: str):
    """What a reader opens for `report`: a folder or db path as given, or an open Report's folder."""
    if isinstance(report, Report):
        return report.path
    if isinstance(report, (str, os.PathLike)):
        return report
    raise TypeError(f"{caller}() takes a report folder (str or pathlib.Path) or a ttreport.Report, got "
                    f"{type(report).__name__} {terminal.cell(repr(report), 80)}")


# Two runs of one model pair up most ops by name and shapes (a changed layer, a lowered dtype: a few percent
# apart); fewer than half doing so is what comparing two different models looks like (1 in 2,048 in the issue).
UNRELATED_BELOW = 0.5


def unrelated_runs(keyed: int, ops_a: int, ops_b: int) -> str | None:
    """The line saying that A and B look like different models, when fewer than UNRELATED_BELOW of the longer
    run's ops pair up by name and shapes; None otherwise."""
    longest = max(ops_a, ops_b)
    if not longest or keyed >= UNRELATED_BELOW * longest:
        return None
    return (f"A and B look like different models: only {keyed:,} of {longest:,} ops pair up by name and shapes "
            f"(A has {ops_a:,} ops, B {ops_b:,}); compare two runs of one model, or read the pairs below as "
            f"ops of the same name only")


def align(ka, kb, na, nb, *, key_of=None) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Pairs (i, j) of positions with equal keys (ka, kb), then equal names (na, nb) in the gaps; and the rest.

    key_of (key id -> the key itself) makes the alignment symmetric: the two runs are aligned in an order that
    does not depend on which is A, so swapping A and B gives the mirrored pairs (difflib's is not symmetric)."""
    if key_of is not None and not _goes_first(ka, kb, key_of):
        pairs, only_b, only_a = align(kb, ka, nb, na)
        return sorted((i, j) for j, i in pairs), only_a, only_b
    n = min(len(ka), len(kb))
    p = 0
    while p < n and ka[p] == kb[p]:
        p += 1
    s = 0
    while s < n - p and ka[len(ka) - 1 - s] == kb[len(kb) - 1 - s]:
        s += 1
    pairs = [(i, i) for i in range(p)]
    only_a, only_b = [], []
    a_end, b_end = len(ka) - s, len(kb) - s
    for tag, i1, i2, j1, j2 in _opcodes(ka[p:a_end], kb[p:b_end]):
        if tag == "equal":
            pairs += [(p + i1 + k, p + j1 + k) for k in range(i2 - i1)]
            continue
        # A gap: pair what has the same name (an op whose shapes changed); the rest is unaligned.
        for tag2, x1, x2, y1, y2 in _opcodes(na[p + i1:p + i2], nb[p + j1:p + j2]):
            if tag2 == "equal":
                pairs += [(p + i1 + x1 + k, p + j1 + y1 + k) for k in range(x2 - x1)]
            else:
                only_a += range(p + i1 + x1, p + i1 + x2)
                only_b += range(p + j1 + y1, p + j1 + y2)
    pairs += [(a_end + k, b_end + k) for k in range(s)]
    pairs.sort()
    return pairs, sorted(only_a), sorted(only_b)


def _goes_first(ka, kb, key_of) -> bool:
    """Whether run `ka` is the first of the two in an order that does not depend on A and B's labels: the
    shorter; of equal length, the one whose first differing key sorts first."""
    if len(ka) != len(kb):
        return len(ka) < len(kb)
    x, y = next(((x, y) for x, y in zip(ka, kb) if x != y), (None, None))
    return x is None or [v or "" for v in key_of[x]] <= [v or "" for v in key_of[y]]


def _opcodes(a, b) -> list[tuple]:
    """difflib-style opcodes ("equal" or "replace" blocks) that turn a into b."""
    if not a or not b:
        return [("replace", 0, len(a), 0, len(b))] if a or b else []
    if len(a) * len(b) <= _DIFFLIB_LIMIT:
        return difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return _resync_opcodes(a, b)


_DIFFLIB_LIMIT = 4_000_000  # difflib's cost grows with len(a) * len(b) on repetitive op sequences
_WINDOW = 256  # how far ahead the greedy alignment looks for the sequences to agree again
_RUN = 4  # and for how many ops they must agree


def _resync_opcodes(a, b) -> list[tuple]:
    """Greedy alignment for long differing stretches: walk both; where they differ, take the nearest
    point (fewest ops skipped on both sides, within _WINDOW) where _RUN ops agree again."""
    codes, i, j, la, lb = [], 0, 0, len(a), len(b)

    def agree(x: int, y: int) -> bool:
        n = min(_RUN, la - x, lb - y)
        return all(a[x + k] == b[y + k] for k in range(n))

    while i < la and j < lb:
        if a[i] == b[j]:
            i0, j0 = i, j
            while i < la and j < lb and a[i] == b[j]:
                i, j = i + 1, j + 1
            codes.append(("equal", i0, i, j0, j))
            continue
        steps = ((x, d - x) for d in range(1, 2 * _WINDOW + 1) for x in range(max(0, d - _WINDOW), min(d, _WINDOW) + 1))
        skip = next(((x, y) for x, y in steps if i + x < la and j + y < lb and agree(i + x, j + y)), (1, 1))
        codes.append(("replace", i, i + skip[0], j, j + skip[1]))
        i, j = i + skip[0], j + skip[1]
    if i < la or j < lb:
        codes.append(("replace", i, la, j, lb))
    return codes


def _ops(report: Report, top_level: bool, keys: dict, names: dict, only: str = "") -> tuple[array, array, array, array]:
    """Each op's id, key id, name id and rank, in call order: compact arrays, whatever the report's size. `only`:
    SQL ANDed onto the filter over `operations o` (the timing comparison's active steps)."""
    ids, key_ids, name_ids, ranks = array("q"), array("q"), array("q"), array("q")
    where = "WHERE 1" + (" AND COALESCE(o.depth, 0) = 0" if top_level else "") + only  # TT-NN records no depth
    for op_id, name, ins, outs, rank in report.execute(_OPS_SQL.format(where=where)):
        ids.append(op_id)
        key_ids.append(keys.setdefault((name, ins, outs), len(keys)))
        name_ids.append(names.setdefault(name, len(names)))
        ranks.append(rank or 0)
    return ids, key_ids, name_ids, ranks


def _name_matches(name: str, pattern: str) -> bool:
    # As `ttreport ops --name`: a glob, an exact name, or the last dotted part (matmul).
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(name, pattern)
    return name == pattern or name.endswith("." + pattern)


def _rank(report: Report, operation_id: int) -> int | None:
    """The op's rank when the report holds more than one rank (a merged multi-host run, ttreport.read.merge)."""
    if len(report.execute("SELECT DISTINCT rank FROM operations LIMIT 2").fetchall()) < 2:
        return None
    return report.execute("SELECT rank FROM operations WHERE operation_id = ?", (operation_id,)).fetchone()[0]


def _stack(report: Report, operation_id: int) -> str | None:
    row = report.execute("SELECT stack_trace FROM stack_traces WHERE operation_id = ?", (operation_id,)).fetchone()
    return row[0] if row else None


class _Checker:
    """Compares aligned ops' tensors one pair at a time, remembering which tensor pairs matched."""

    def __init__(self, ra: Report, rb: Report, tolerances: dict):
        self.ra, self.rb, self.tolerances = ra, rb, tolerances
        self.matched: dict[int, tuple[int, bool]] = {}  # A tensor id -> (B tensor id, matched)

    def pair(self, name: str, a_id: int, b_id: int) -> OpPair:
        outs_a, outs_b = self._tensors(self.ra, "output_tensors", "output_index", a_id), \
            self._tensors(self.rb, "output_tensors", "output_index", b_id)
        ins_a, ins_b = self._tensors(self.ra, "input_tensors", "input_index", a_id), \
            self._tensors(self.rb, "input_tensors", "input_index", b_id)
        if len(outs_a) != len(outs_b):
            return OpPair(MISMATCH, name, a_id, b_id, f"A has {len(outs_a)} output(s), B has {len(outs_b)}",
                          inputs_matched=self._inputs(ins_a, ins_b)[0])
        compared = [self._compare(ta, tb) for ta, tb in zip(outs_a, outs_b)]
        outputs, shards = [c for c, _ in compared], [sh for _, sh in compared]
        if any(c is None for c in outputs):
            missing = sum(c is None for c in outputs)
            return OpPair(MISSING, name, a_id, b_id, f"{missing} output tensor(s) not stored in both reports; "
                          f"capture with Config(tensors='outputs') to compare them", outputs, shards=shards)
        k = next((k for k, c in enumerate(outputs) if not c.passed), None)
        if k is None:
            return OpPair(MATCH, name, a_id, b_id, "all outputs match", outputs, shards=shards)
        failing = outputs[k].reason
        if shards[k]:
            failing = f"{_devices_text([d for d, c in shards[k] if not c.passed], word=True)}: {failing}"
        inputs, first = self._inputs(ins_a, ins_b)
        # An input no op of the capture made (its tensors row has no producer) that differs, or was not stored:
        # nothing earlier in the report can be its cause, so this op is where the divergence enters.
        outside = next((k for k, (ta, tb) in enumerate(zip(ins_a, ins_b)) if (ta[3] is None or tb[3] is None)
                        and (k == first if inputs is False else inputs is None and None in (ta[2], tb[2]))), None)
        if inputs is False and outside is None:
            return OpPair(PROPAGATED, name, a_id, b_id, f"an input already differed; {failing}", outputs,
                          inputs, shards)
        if outside is not None:
            state = "differs" if inputs is False else "was not stored"
            what = (f"the divergence enters through input tensor {outside} (made before the capture; it {state}): "
                    f"seed the RNG, or capture from_torch too")
        elif not ins_a:
            what = "no device inputs, outputs differ"  # from_torch and other ops that make tensors
        elif inputs:
            what = "inputs match, outputs do not"
        else:
            what = "outputs differ and inputs were not stored (an earlier cause is not ruled out)"
        return OpPair(MISMATCH, name, a_id, b_id, f"{what}: {failing}", outputs, inputs, shards)

    def _inputs(self, ins_a, ins_b) -> tuple[bool | None, int | None]:
        """Whether the inputs matched (None: one was not stored), and the index of the first that differs."""
        if len(ins_a) != len(ins_b):
            return False, None
        known = True
        for k, (ta, tb) in enumerate(zip(ins_a, ins_b)):
            seen = self.matched.get(ta[0])
            ok = seen[1] if seen is not None and seen[0] == tb[0] else self._passed(ta, tb)
            if ok is False:
                return False, k
            known = known and ok is not None
        return (True if known else None), None

    def _passed(self, ta, tb) -> bool | None:
        c, _ = self._compare(ta, tb)
        return None if c is None else c.passed

    def _compare(self, ta, tb) -> tuple[Comparison | None, list[tuple[int, Comparison]] | None]:
        """The pair's comparison (None: not stored in both), and for mesh tensors each device shard's."""
        (a_tid, a_dtype, a_file, _), (b_tid, b_dtype, b_file, _) = ta, tb
        if a_file is None or b_file is None:
            return None, None
        devices = self.ra.tensor_devices(a_tid)
        if devices != self.rb.tensor_devices(b_tid):
            return None, None  # on other devices (or a mesh tensor against a one-device one): no shard pairs up
        dtype = _finer(a_dtype, b_dtype)
        shards = []
        try:
            for device in devices or [None]:  # one pair of shards in memory at a time
                va = self.ra.load_array(a_tid, device=device)  # numpy: a compare never imports torch
                vb = self.rb.load_array(b_tid, device=device)
                shards.append((device, compare_tensors(vb, va, dtype=dtype, **self.tolerances)))
                del va, vb
        except (TensorFileDamagedError, TensorTooLargeError):
            # A changed or swapped file: its values would blame an innocent op. One past the element cap: "not
            # stored" would hide that raising the cap compares it. Either way the error names the file.
            raise
        except TensorFileError:
            return None, None  # not stored after all (the file was lost): nothing can be said of this pair
        passed = all(c.passed for _, c in shards)
        self.matched[a_tid] = (b_tid, passed)
        if not devices:
            return shards[0][1], None
        # The figures shown: the first differing device's, else the lowest PCC's (NaN last).
        deciding = next((c for _, c in shards if not c.passed), None) or \
            min((c for _, c in shards), key=lambda c: (math.isnan(c.pcc), c.pcc))
        return deciding, shards

    @staticmethod
    def _tensors(report: Report, table: str, index: str, op_id: int) -> list[tuple]:
        return report.execute(_TENSORS_SQL.format(table=table, index=index), (op_id,)).fetchall()


def _devices_text(devices: list[int], *, word: bool = False) -> str:
    """"3" or "3, 5" (word: "device 3", "devices 3, 5"); "" for none."""
    text = ", ".join(str(d) for d in devices)
    if not word or not devices:
        return text
    return f"device {text}" if len(devices) == 1 else f"devices {text}"


def _finer(a: str | None, b: str | None) -> str | None:
    try:
        names = [dtype_name(d) for d in (a, b) if d]
    except (TypeError, ValueError):
        return None  # an unknown dtype text: compare_tensors then uses the tensors' own dtypes
    if not names:
        return None
    return names[0] if len(names) == 1 else finer_dtype(*names)


def _num(x, spec: str) -> str:
    if x is None:
        return ""
    return f"{x:{spec}}" if math.isfinite(x) else str(x)


def _table(columns: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return [fmt(columns), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]

