"""The one configuration of a capture: a keyword-only dataclass, costly features off by default.

    ttreport.Config(tensors="outputs", stack_depth=8)

`Config.from_env(base)` applies the TTREPORT_CONFIG environment variable, a JSON object of
field names to values, on top of `base`; capture() does this for every config it is given,
so a run can be reconfigured without touching its code:

    TTREPORT_CONFIG='{"tensors": "all", "buffer_pages": true}' python model.py
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from ttreport.errors import ConfigError

# Where reports go unless told: under the working directory when it has this folder, else under the project root
# (default_root), so `ttreport run` from a project's subfolder adds to the project's reports, not a new tree.
DEFAULT_ROOT = Path("generated/ttreport/reports")


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The folder a user's generated/ belongs to: the nearest of `start` (default: the working directory) and
    its parents that holds a pyproject.toml or a .git; `start` itself when none does."""
    here = Path(start if start is not None else os.getcwd()).absolute()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    return here


def default_root(root: Path = DEFAULT_ROOT) -> Path:
    """`root` (relative) under the working directory if it is there or the working directory is the project
    root (kept relative, as given), else under the project root (absolute)."""
    top = project_root()
    return root if root.is_dir() or top == Path.cwd().absolute() else top / root

ENV_VAR = "TTREPORT_CONFIG"
MIN_FLUSH_INTERVAL_S = 0.001
MAX_FLUSH_INTERVAL_S = 3600
TENSOR_MODES = ("none", "outputs", "all")
COMPARISON_MODES = ("off", "local", "global", "both")
WRITER_MODES = ("process",)  # "thread" was retired (issue 32): one writer route
DEVICE_GRAPH_MODES = ("distinct", True, False)


@dataclass(kw_only=True)
class Config:
    """How a capture records, and what each choice costs (keyword-only; all values are checked).

    Args:
        root: where a report given by plain name is made: <root>/<name>/. Default
            generated/ttreport/reports, in the working directory if it has one, else at the project root
            (the nearest folder above with a pyproject.toml or .git), where every reader looks for it too.
            Must be a folder the process can create and write.
        tensors: which tensors' values are written to tensors/. "none" (default: only their specs
            go in the db; free), "outputs" (every op output once, and disk space: with the writer
            process, a value of up to 64 KiB is copied into the op log, ~9 us of the model's thread
            for 2 KiB, and that process writes the file; bigger ones are written by a thread), "all"
            (inputs too, so weights made before the capture are kept: more disk).
        detach_saved_tensors: True (default) writes plain torch .pt files readable anywhere;
            False writes device_sim's .bin. Same cost.
        max_tensor_bytes: total bytes of tensor files (default 8 GiB); past it storage stops
            with one warning and the run goes on.
        stack_traces: record the user's call site of each op (default True): about 1-3 us per op
            on the model's thread.
        stack_depth: user frames kept per stack trace, innermost first (default 16); deeper
            costs a little more per op.
        buffers: record buffer allocations and frees (default True): one queue put per event.
        buffer_pages: record every page of every live L1 buffer after each op (default False):
            large and slow (rows per page per op); for memory debugging only.
        device_graphs: record each op's device operations and circular buffers as TT-NN's captured
            graph (needs buffers). "distinct" (default): each distinct graph once (`distinct_graphs`)
            and each op's by id (`operation_graphs`), ~10 B an op, as TT-NN's default report
            (enable_graph_report off) leaves its per-op graph tables empty. True: TT-NN's per-op
            `captured_graph`, `nodes` and `edges` too, which ttnn-visualizer shows with the op's peak
            L1 per core (TT-NN's enable_graph_report; ~2.8 KB of report per element-wise op). False:
            none. Nothing extra on the model's thread either way.
        perf_files: write TT-NN's performance report files (ops_perf_results.csv, profile_log_device.csv:
            ttnn-visualizer's Performance tab) into the report folder at close (default True): read back
            from the db after the model's last op, about 40 ms per 1,000 ops at close, nothing per op.
        comparison: golden comparison during capture: "off" (default), "local", "global",
            "both". Runs each op's torch golden too on a background thread: roughly doubles the
            CPU a run needs (op durations are not inflated).
        comparison_pcc: the PCC a golden comparison must reach (default 0.9999).
        comparison_rtol, comparison_atol: tolerances (default None: by the output's dtype).
        raise_on_mismatch: raise ComparisonError from the failing op (default False); runs the
            checks on the model's thread, so every op waits for its golden.
        flush_interval_s: the writer process commits a batch at least this often (default 0.05 s,
            between 0.001 and 3600); a kill loses nothing (the op log holds every op). Shorter costs more
            commits.
        flush_ops: ... or after this many records (default 2000), whichever is first.
        overwrite: replace an existing report of the same name (default False); only a folder
            holding a report that ttreport made, and only what a capture writes there.
        gc_freeze: gc.freeze() what exists when the capture starts, unfreeze at close (default
            True): saves 10-20 us per op of full collections; garbage cycles made before the
            capture are collected only after it ends.
        rank: this process's rank in a multi-host run, written to every row's `rank` column (default
            None: OMPI_COMM_WORLD_RANK, as mpirun sets it, else 0); `ttreport merge` joins the ranks' reports.
        writer: "process", the one writer route: the model's threads append each record to an op log in
            the report folder (on disk when the op returns) and a forked writer process writes SQLite from
            it, so a SIGKILL loses no recorded op (ttreport.capturing.writer_process); costs the log's
            disk (~330 B an op) until close and a second core's CPU while it runs. "thread" (a writer
            thread in the model's process: ~3x the added time per op, and a kill lost the last batch) was
            retired by issue 32 and is refused, naming the fix.

    TTREPORT_CONFIG='{"tensors": "all"}' overrides any of them from the environment.
    """

    # Where a report given by name is created: <root>/<name>/.
    root: Path = DEFAULT_ROOT
    # Which tensors' values are written to tensors/: "none" (only their specs go in the db),
    # "outputs" (every op output once; costs a copy to disk per output, off the model's
    # thread), or "all" (inputs too, so weights made before the capture are kept).
    tensors: str = "none"
    # Store tensors as plain torch .pt files readable anywhere; False writes device_sim's .bin.
    detach_saved_tensors: bool = True
    # Total bytes of tensor files; once reached, storage stops with a warning, the run goes on.
    max_tensor_bytes: int = 8 << 30
    # Record the user's call site of each op: about 1-3 us per op on the model's thread.
    stack_traces: bool = True
    # User frames kept per stack trace, innermost first.
    stack_depth: int = 16
    # Record buffer allocations and frees (the `buffers` view): one queue put per event.
    buffers: bool = True
    # Record every page of every live buffer after each op: large, slow; for memory debugging.
    buffer_pages: bool = False
    # Each op's device operations and CBs as TT-NN's captured graph (ttreport.capturing.device_graph): "distinct"
    # stores each distinct graph once (~10 B an op); True adds TT-NN's per-op tables the visualizer reads (~2.8 KB).
    device_graphs: bool | str = "distinct"
    # TT-NN's ops_perf_results.csv and profile_log_device.csv, written from the db at close (not per op):
    # about 40 ms per 1,000 ops (bench/README.md, `python -m bench --only exports`), so on by default.
    perf_files: bool = True
    # Golden comparison during capture (ttreport.capturing.golden): runs each op's torch golden too, on
    # one background thread in op order, so op durations are not inflated; it roughly doubles
    # the CPU a run needs. raise_on_mismatch=True runs the checks on the model's thread, so the
    # exception comes from the failing op.
    comparison: str = "off"
    comparison_pcc: float = 0.9999
    comparison_rtol: float | None = None  # None: the default for the output's dtype
    comparison_atol: float | None = None
    raise_on_mismatch: bool = False
    # The writer commits a batch after this many seconds or this many records, whichever is
    # first: what a crash can lose at most.
    flush_interval_s: float = 0.05
    flush_ops: int = 2000
    # Replace an existing report of the same name (only a folder holding a report).
    overwrite: bool = False
    # gc.freeze() the objects that exist when the capture starts, and unfreeze them at close.
    # Queued records outlive the collector's young generations, and every ~10k of them set off a
    # full pass over the whole heap (torch's included): 10-20 us per op. The cost of freezing:
    # garbage cycles made before the capture are collected only after it ends.
    gc_freeze: bool = True
    # This process's rank in a multi-host run (None: OMPI_COMM_WORLD_RANK, else 0): capturing/rank.py.
    rank: int | None = None
    # Who writes SQLite: a writer process fed by the op log (kill -9 safe; off the model's GIL). The one route:
    # kept as an option so that config.json and TTREPORT_CONFIG giving "process" still read.
    writer: str = "process"

    def __post_init__(self):
        if isinstance(self.root, bool) or not isinstance(self.root, (str, os.PathLike)):
            _fail("root", self.root, "a folder path (a string)")
        self.root = Path(self.root)
        if self.root == DEFAULT_ROOT:  # the default's place: the project's (default_root), whoever made the Config
            self.root = default_root()
        _choice("tensors", self.tensors, TENSOR_MODES)
        _choice("comparison", self.comparison, COMPARISON_MODES)
        if self.writer == "thread":  # a ConfigError, not an alias: the knob would silently do nothing
            raise ConfigError("Config writer='thread' is retired (issue 32): the op log and writer process is "
                              "ttreport's one writer route; leave writer out (it is 'process')")
        _choice("writer", self.writer, WRITER_MODES)
        if self.device_graphs not in DEVICE_GRAPH_MODES or type(self.device_graphs) not in (bool, str):  # 1 == True
            _fail("device_graphs", self.device_graphs, "'distinct' | true | false")
        for name in ("detach_saved_tensors", "stack_traces", "buffers", "buffer_pages",
                     "perf_files", "raise_on_mismatch", "overwrite", "gc_freeze"):
            if not isinstance(getattr(self, name), bool):
                _fail(name, getattr(self, name), "true or false")
        for name, low in (("max_tensor_bytes", 0), ("stack_depth", 1), ("flush_ops", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                _fail(name, value, f"an integer >= {low}")
        # Below 1 ms the writer spins (NaN did: the model ran 3x slower); past an hour, a crash loses too much.
        interval = self.flush_interval_s
        if not _number(interval) or not MIN_FLUSH_INTERVAL_S <= interval <= MAX_FLUSH_INTERVAL_S:
            _fail("flush_interval_s", self.flush_interval_s,
                  f"a number of seconds from {MIN_FLUSH_INTERVAL_S} to {MAX_FLUSH_INTERVAL_S}")
        if not _number(self.comparison_pcc) or not 0 <= self.comparison_pcc <= 1:
            _fail("comparison_pcc", self.comparison_pcc, "a number between 0 and 1")
        if self.rank is not None and (isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 0):
            _fail("rank", self.rank, "null or an integer >= 0")
        for name in ("comparison_rtol", "comparison_atol"):
            value = getattr(self, name)
            if value is not None and (not _number(value) or not 0 <= value < math.inf):
                _fail(name, value, "null or a finite number >= 0")

    @classmethod
    def from_env(cls, base: Config | None = None, environ=None) -> Config:
        """`base` (or the defaults) with the TTREPORT_CONFIG JSON object applied on top."""
        base = base if base is not None else cls()
        text = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
        if not text:
            return base
        try:
            overrides = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{ENV_VAR} is not valid JSON ({e}): {text!r}; "
                              f'give an object such as {{"tensors": "all"}}') from None
        if not isinstance(overrides, dict):
            raise ConfigError(f'{ENV_VAR} must be a JSON object such as {{"tensors": "all"}}, got {text!r}')
        names = [f.name for f in dataclasses.fields(cls)]
        for key in overrides:
            if key not in names:
                raise ConfigError(f"{ENV_VAR} has unknown key {key!r}; the keys are: {', '.join(names)}")
        try:
            return dataclasses.replace(base, **overrides)
        except ConfigError as e:
            raise ConfigError(f"{ENV_VAR}: {e}") from None

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["root"] = str(self.root)
        return d

    @classmethod
    def read_back(cls, saved) -> tuple[Config, dict]:
        """The config a report folder's config.json records (`saved`: its "config" object), each option checked
        as Config checks it; and {name: value} of the options it refused, which take their defaults.

        A folder is data from elsewhere: a value Config would refuse must not drive a reader (flush_ops 0 made
        the rebuild of a killed capture's log spin forever). Keys this version does not know are ignored (a
        newer ttreport's options)."""
        names = {f.name for f in dataclasses.fields(cls)}
        good, bad = {}, {}
        for name, value in (saved.items() if isinstance(saved, dict) else ()):
            if name not in names:
                continue
            try:
                cls(**{name: value})  # each alone: a bad one does not take the good ones with it
                good[name] = value
            except (ConfigError, TypeError, ValueError):
                bad[name] = value
        return cls(**good), bad


def _number(value) -> bool:
    """A real number: not a bool, not NaN (every comparison with NaN is False, so range checks pass it)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def _choice(name: str, value, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        _fail(name, value, " | ".join(repr(a) for a in allowed))


def _fail(name: str, value, allowed: str):
    raise ConfigError(f"Config {name}={value!r} is not allowed; use {allowed}")
