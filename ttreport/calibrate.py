"""Fit the performance model's named constants to a team's own chips: `ttreport calibrate`.

    ttreport calibrate ops_perf_results.csv [more.csv | REPORT ...] -o constants.json
    DEVICE_SIM_PERF_CONSTANTS=constants.json ttreport run model.py     # its estimates use the fitted constants

    from ttreport.calibrate import calibrate
    c = calibrate(["tests/data/ops_perf/wh_clip_encoder_2_first40.csv"])
    print(c.held_out_before.median, c.held_out_after.median, c.constants["LAUNCH_NS"])

Each device operation of TT-NN's profiler files (or of reports with one attached: measured_perf keeps the same
columns) that the model prices becomes a case, as bench/data/wormhole_ops_perf/cases.csv's are made: the ttnn op
it runs (BinaryNgDeviceOperation with BinaryOpType::MUL: multiply; UnaryDeviceOperation's op: erf; a conv2d the
Halo, Move and OptimizedConvNew rows it runs, summed), its operands from the file's tensor columns, its math
fidelity, and the median measured DEVICE KERNEL DURATION [ns] of the rows with the same signature. The cases are
split once, before fitting: the second of every three signatures of a family, in the files' order, is held out.

FIT names the constants fitted (those of them perf_model has): the fixed launch cost, page latencies, DRAM and
NoC rates and per-tile compute cycles (docs/perf_model.md gives each one's source), and SFPU_OP_CYCLES' entry of
each unary op the cases run (SFPU_OP_CYCLES.erf). Each is fitted as a multiplier
of its current value, on a log grid from 1/4x to 4x then finer around the best, constant after constant, twice
over, minimising the mean absolute log of estimate / measured on the fit cases (the loss whose minimum is the
median, the figure judged) plus PULL times each constant's absolute log change, so that a constant moves only where
the data asks (a constant no case moves stays). On the whole public CLIP file (1,872 rows, 22 cases) a squared loss
with no pull moved 7 constants, CORE_DRAM_WRITE_B_PER_CYCLE 21 -> 100, and took the held-out median from 0.89 to
1.33; the absolute loss with PULL 0.01 moved 4 and reached 1.09. The figures judged are the held-out cases' median
estimate / measured and shares within 2x and 4x, before and after.
The constants are set through device_sim.perf_constants, the same seam the written file goes through, and are put
back before `calibrate` returns.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from device_sim import perf_constants, perf_model
from device_sim.compute_config import MathFidelity
from device_sim.types import DataType, Layout
from ttreport.errors import MeasuredFileError, ReportError
from ttreport.read import measured
from ttreport.read.report import Report

FIT = ("LAUNCH_NS", "LAUNCH_DM_ONLY_NS", "DRAM_PAGE_LATENCY_NS", "L1_PAGE_LATENCY_NS", "DRAM_ACHIEVED_GB_PER_S",
       "CORE_DRAM_READ_B_PER_CYCLE", "CORE_DRAM_WRITE_B_PER_CYCLE", "CORE_NOC_B_PER_CYCLE", "FPU_CYCLES_PER_TILE",
       "SFPU_CYCLES_PER_TILE", "UNPACK_BYTES_PER_CYCLE", "MATMUL_STEP_OVERHEAD_CYCLES", "NORM_PASS_CYCLES",
       "NORM_ROW_CYCLES", "SOFTMAX_CYCLES_PER_TILE", "TILIZE_CYCLES_PER_TILE")
COARSE = [2 ** (k / 4) for k in range(-8, 9)]  # 1/4x .. 4x in quarter octaves
FINE = [2 ** (k / 16) for k in range(-4, 5)]  # then +-1/4 octave in sixteenths around the best
ROUNDS = 2
PULL = 0.01  # the loss's weight on each constant's |log(new / old)|: see the module docstring
TABLE = "SFPU_OP_CYCLES"  # per-op cycles a tile: an entry is fitted for each unary op the fit cases run
GRID_CORES = 64  # a sharded operand whose file gives no core count spans an 8x8 grid

# device operation -> (ttnn op, family), as TT-NN's profiler names them across versions; binary and unary ones are
# named from their attributes (op_for)
OPS = {"LayerNorm": ("layer_norm", "norm"), "LayerNormDeviceOperation": ("layer_norm", "norm"),
       "Softmax": ("softmax", "softmax"), "SoftmaxDeviceOperation": ("softmax", "softmax"),
       "Transpose": ("transpose", "transpose"), "TransposeDeviceOperation": ("transpose", "transpose"),
       "ReshapeDeviceOperation": ("reshape", "reshape"),
       "EmbeddingsDeviceOperation": ("embedding", "embedding"),
       "Untilize": ("untilize", "untilize"), "UntilizeDeviceOperation": ("untilize", "untilize"),
       "Tilize": ("tilize", "tilize"), "TilizeDeviceOperation": ("tilize", "tilize"),
       "TilizeWithValPaddingDeviceOperation": ("tilize_with_val_padding", "tilize"),
       "TilizeWithValPadding": ("tilize_with_val_padding", "tilize"),
       "InterleavedToShardedDeviceOperation": ("interleaved_to_sharded", "shard_move"),
       "ShardedToInterleavedDeviceOperation": ("sharded_to_interleaved", "shard_move"),
       "ReshardDeviceOperation": ("reshard", "shard_move"), "MoveDeviceOperation": ("move", "move"),
       "NLPConcatHeadsDeviceOperation": ("nlp_concat_heads", "heads"),
       "NlpCreateHeadsSegformerDeviceOperation": ("nlp_create_qkv_heads", "heads"),
       "Matmul": ("matmul", "matmul"), "MatmulDeviceOperation": ("matmul", "matmul"),
       "MinimalMatmulOp": ("matmul", "matmul")}
BINARY = {"ADD": "add", "MUL": "multiply", "SUB": "subtract", "DIV": "divide"}


@dataclass(frozen=True)
class Case:
    op: str  # the ttnn op the model prices ("multiply")
    family: str
    inputs: tuple  # operand specs: "1x1x19x1280|TILE|BFLOAT16|DRAM_INTERLEAVED" (a sharded one: "|cores")
    output: str
    math_fidelity: str | None
    params: str  # what the operands do not say: "kernel_size=3x3;stride=1x1;in_channels=64"
    measured_ns: float  # the median of the rows with this signature
    rows: int  # how many rows that median is over


def cases_of(rows: list[measured.MeasuredRow]) -> tuple[list[Case], int]:
    """The cases of a file's device operations, in order of first appearance; and how many rows were left out
    (an operation the model does not price, or one with no kernel time)."""
    groups: dict[tuple, list[int]] = {}
    left_out = 0
    halo: list = []  # a conv2d's Halo and Move rows, until its OptimizedConvNew
    for row in rows:
        if not row.kernel_ns or not row.outputs:  # no kernel time (none, or 0: no ratio to it)
            left_out += 1
            continue
        inputs = tuple(s for s in row.inputs.split(";") if s)
        ns = row.kernel_ns
        if row.op_code == "HaloDeviceOperation":
            left_out += len(halo)
            halo = [row]
            continue
        if halo and row.op_code == "MoveDeviceOperation":
            halo.append(row)
            continue
        conv = conv_params(row.attributes or "") if row.op_code == "OptimizedConvNew" else None
        if conv and halo:
            key = ("conv2d", "conv2d", (halo[0].inputs.split(";")[0], *inputs[1:]), row.outputs.split(";")[0],
                   row.math_fidelity, conv)
            ns += sum(h.kernel_ns or 0 for h in halo)
            halo = []
        else:
            left_out += len(halo)
            halo = []
            named = op_for(row.op_code, row.attributes or "", inputs)
            if named is None:
                left_out += 1
                continue
            key = (*named[:2], inputs, row.outputs.split(";")[0], row.math_fidelity, named[2])
        groups.setdefault(key, []).append(ns)
    left_out += len(halo)
    return [Case(op, family, ins, out, fid, params, statistics.median(ns), len(ns))
            for (op, family, ins, out, fid, params), ns in groups.items()], left_out


def op_for(op_code: str, attrs: str, inputs) -> tuple[str, str, str] | None:
    """(ttnn op, family, params) of a device operation (its OP CODE, ATTRIBUTES and input specs); None for one the
    model is not fitted on. bench/data/wormhole_ops_perf/extract.py names cases.csv's cases with it too."""
    if op_code in ("BinaryDeviceOperation", "BinaryNgDeviceOperation"):
        op = BINARY.get(_attr(attrs, r"binary_op_type': 'BinaryOpType::(\w+)'") or "")
        scalar = _attr(attrs, r"'scalar': '([-\d.e]+)'")
        return (op, "eltwise_binary", f"scalar={scalar}" if scalar and len(inputs) == 1 else "") if op else None
    if op_code == "UnaryDeviceOperation":
        ops = re.findall(r"UnaryOpType::(\w+)", attrs)
        return (ops[0].lower(), "eltwise_unary", "") if len(ops) == 1 else None
    if op_code in OPS:
        op, family = OPS[op_code]
        if family == "matmul" and len(inputs) == 3:
            return "linear", family, "bias"  # a bias: ttnn.linear's fused matmul
        return op, family, ""
    return None


def _attr(text: str, pattern: str) -> str | None:
    m = re.search(pattern, text)
    return m.group(1) if m else None


def conv_params(attrs: str) -> str | None:
    """kernel, stride and input channels of an OptimizedConvNew, from its ATTRIBUTES' sliding window config."""
    window, stride = _attr(attrs, r"window_hw=\((\d+;\d+)\)"), _attr(attrs, r"stride_hw=\((\d+;\d+)\)")
    cin = _attr(attrs, r"input_tensor_shape': '\{\d+; \d+; \d+; (\d+)\}'")
    if not (window and stride and cin):
        return None
    return f"kernel_size={window.replace(';', 'x')};stride={stride.replace(';', 'x')};in_channels={cin}"


def operand(spec: str) -> perf_model.Operand:
    """'1x1x19x1280|TILE|BFLOAT16|DRAM_INTERLEAVED' as the model's operand (as estimate_op would make it of a live
    tensor with that shape, dtype, layout and memory); a sharded one may name the cores its shards span as a fifth
    field ('...|L1_HEIGHT_SHARDED|40'). bench/device_time.py prices cases.csv's cases through this too."""
    shape_text, layout, dtype, memory, *shard = spec.split("|")
    shape = tuple(int(d) for d in shape_text.split("x"))
    lay = Layout.TILE if layout == "TILE" else Layout.ROW_MAJOR
    nbytes = perf_model.operand_bytes(shape, DataType[dtype], lay)
    sharded = "SHARDED" in memory
    kind = ("l1" if memory.startswith("L1") else "dram") + ("_sharded" if sharded else "")
    cores = int(shard[0]) if shard else GRID_CORES
    return perf_model.Operand(nbytes, kind, shape, lay != Layout.TILE, cores if sharded else 0,
                              "HEIGHT_SHARDED" in memory)


def params(op: str, text: str) -> dict:
    """What the model is told beside the operands: an SFPU op's name; a conv2d's kernel, stride and channels from
    a case's params ("kernel_size=3x3;stride=1x1;in_channels=64")."""
    out: dict = {"sfpu_op": op}
    for item in filter(None, text.split(";")):
        key, _, value = item.partition("=")
        if key in ("kernel_size", "stride"):
            out[key] = tuple(int(v) for v in value.split("x"))
        elif key == "in_channels":
            out[key] = int(value)
    return out


def estimate(op: str, inputs, output: str, math_fidelity: str | None, params_text: str) -> perf_model.Estimate | None:
    """The model's estimate of a case given as specs (operand's form), with the constants as they are now."""
    fidelity = MathFidelity[math_fidelity] if math_fidelity else None
    return perf_model.estimate(op, [operand(s) for s in inputs], [operand(output)], fidelity,
                               params=params(op, params_text))


def estimate_ns(case: Case) -> int | None:
    """A case's estimate in ns; None when the model prices no device work (a dtype or fidelity it does not know is
    none either, nor a shape it cannot price: the file is input, and a zero dim divides by zero)."""
    try:
        e = estimate(case.op, case.inputs, case.output, case.math_fidelity, case.params)
    except (KeyError, ValueError, ArithmeticError):
        return None
    return e.ideal_ns if e is not None and e.ideal_ns > 0 else None


@dataclass
class Fit:
    """How close the model is on a set of cases: estimate / measured."""
    cases: int
    median: float | None
    within_2x: float | None
    within_4x: float | None

    def text(self) -> str:
        if not self.cases:
            return "no cases"
        return (f"median {self.median:.2f}x, {100 * self.within_2x:.0f}% within 2x, "
                f"{100 * self.within_4x:.0f}% within 4x")


@dataclass
class Calibration:
    sources: list[str]
    cases: int
    left_out: int  # device operations the model is not fitted on (or with no kernel time)
    fit_before: Fit
    fit_after: Fit
    held_out_before: Fit
    held_out_after: Fit
    constants: dict  # the constants the fit moved, their new values (the rest stay the model's, unpinned)
    before: dict  # their values before
    families: dict  # family -> (Fit before, Fit after) over all its cases, fitted and held out

    def to_json(self) -> str:
        """The constants file (device_sim.perf_constants reads "constants"), with what it was fitted on."""
        return json.dumps({"constants": self.constants, "before": self.before, "sources": self.sources,
                           "cases": self.cases, "left_out": self.left_out,
                           "families": {f: [asdict(b), asdict(a)] for f, (b, a) in self.families.items()},
                           **{k: asdict(getattr(self, k)) for k in ("fit_before", "fit_after", "held_out_before",
                                                                    "held_out_after")}}, indent=2) + "\n"


def calibrate(sources) -> Calibration:
    """Fit FIT's constants to the measured device operations of `sources` (TT-NN ops_perf_results.csv files, or
    report folders with one attached) and judge them on held-out cases; the model's constants are put back after."""
    rows: list[measured.MeasuredRow] = []
    for source in sources:
        rows += _rows_of(Path(source))
    cases, left_out = cases_of(rows)
    split: dict[str, list[Case]] = {"fit": [], "holdout": []}
    seen: dict[str, int] = defaultdict(int)
    for case in cases:
        split["holdout" if seen[case.family] % 3 == 1 else "fit"].append(case)
        seen[case.family] += 1
    priced = {k: [c for c in v if estimate_ns(c) is not None] for k, v in split.items()}
    left_out += sum(c.rows for v in split.values() for c in v) - sum(c.rows for v in priced.values() for c in v)
    if not priced["fit"]:
        raise MeasuredFileError(f"{', '.join(map(str, sources))}: no device operation the model is fitted on "
                                f"({', '.join(sorted(OPS)[:4])}, binary and unary ops ...); give a profile of a model "
                                "that runs such ops")
    settable = perf_constants.settable(perf_model)
    # the named constants, and each SFPU op's own cycles (SFPU_OP_CYCLES.erf) for the unary ops the cases run
    keys = [n for n in FIT if n in settable] + sorted({f"{TABLE}.{c.op}" for c in priced["fit"] if
                                                       c.family == "eltwise_unary" and c.op in settable.get(TABLE, {})})
    start = {k: _get(k) for k in keys}
    every: dict[str, list[Case]] = defaultdict(list)
    for c in priced["fit"] + priced["holdout"]:
        every[c.family].append(c)
    fit_before, held_before = _fit(priced["fit"]), _fit(priced["holdout"])
    families = {f: _fit(cs) for f, cs in sorted(every.items())}
    try:
        best = _coordinate_descent(priced["fit"], start)
        perf_constants.use(perf_model, _grouped(best))
        fit_after, held_after = _fit(priced["fit"]), _fit(priced["holdout"])
        families = {f: (families[f], _fit(cs)) for f, cs in sorted(every.items())}
    finally:
        perf_constants.use(perf_model, _grouped(start))
    moved = {k: v for k, v in best.items() if v != start[k]}
    return Calibration([str(s) for s in sources], len(priced["fit"]) + len(priced["holdout"]), left_out,
                       fit_before, fit_after, held_before, held_after, _grouped(moved),
                       _grouped({k: start[k] for k in moved}), families)


def _get(key: str):
    """A fitted value: a constant ("LAUNCH_NS") or an entry of a table of them ("SFPU_OP_CYCLES.erf")."""
    name, _, entry = key.partition(".")
    value = getattr(perf_model, name)
    return value[entry] if entry else value


def _grouped(values: dict) -> dict:
    """{key: value} as perf_constants.use takes it: a table's entries as {"SFPU_OP_CYCLES": {"erf": 3500}}."""
    out: dict = {}
    for key, value in values.items():
        name, _, entry = key.partition(".")
        if entry:
            out.setdefault(name, {})[entry] = value
        else:
            out[name] = value
    return out


def _rows_of(path: Path) -> list[measured.MeasuredRow]:
    if path.is_file() and path.name != "db.sqlite":
        return measured.read_ops_perf(path)
    with Report(path) as r:
        if not measured.attached(r):
            raise ReportError(f"{path} has no measured times attached; `ttreport attach {path} ops_perf_results.csv` "
                              "first, or give the CSV itself")
        return measured.stored_rows(r)


def _loss(cases: list[Case], start: dict) -> float:
    """Mean absolute log of estimate / measured (a case the constants make unpriceable counts as 10x off), plus
    PULL times each constant's absolute log change from `start`."""
    total = 0.0
    for c in cases:
        ns = estimate_ns(c)
        total += abs(math.log(ns / c.measured_ns)) if ns else math.log(10)
    return total / len(cases) + PULL * sum(abs(math.log(_get(k) / v)) for k, v in start.items())


def _coordinate_descent(cases: list[Case], start: dict) -> dict:
    best = dict(start)
    loss = _loss(cases, start)
    for grid in [COARSE] * (ROUNDS - 1) + [FINE]:
        for name in best:
            here = best[name]
            for m in grid:
                value = _like(start[name], here * m)
                if value == best[name]:
                    continue
                perf_constants.use(perf_model, _grouped({name: value}))
                trial = _loss(cases, start)
                if trial < loss - 1e-12:  # strictly better: a constant no case moves stays where it was
                    loss, best[name] = trial, value
            perf_constants.use(perf_model, _grouped({name: best[name]}))
    return best


def _like(original, value: float):
    """`value` in the type of the constant it replaces: an integer one stays an integer (at least 1)."""
    return max(1, round(value)) if isinstance(original, int) else round(value, 4)


def _fit(cases: list[Case]) -> Fit:
    ratios = [ns / c.measured_ns for c in cases if (ns := estimate_ns(c))]
    if not ratios:
        return Fit(0, None, None, None)
    spread = [max(x, 1 / x) for x in ratios]
    return Fit(len(ratios), statistics.median(ratios), sum(s <= 2 for s in spread) / len(spread),
               sum(s <= 4 for s in spread) / len(spread))
