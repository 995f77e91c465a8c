"""Multi-host runs: `merge` joins each rank's report into one report of the whole run.

A run split across processes (one per rank, as TT-NN's distributed runs launched by tt-run/mpirun)
captures one report per rank; every row of a TT-NN table carries that rank in its `rank` column
(written at close: ttreport/capturing/rank.py). `merge` copies
each rank's rows into a new report with its ids moved past the ones before it (operations, tensors,
stack traces, specs, buffers, sequence numbers), so nothing clashes and each row keeps its rank:

    from ttreport.read.merge import merge
    merge(["reports/rank0", "reports/rank1"], "reports/run")
    # SELECT rank, count(*) FROM operations GROUP BY rank  ->  (0, n0), (1, n1)

Device ids are each host's own (rank 1's device 0 is another chip than rank 0's): (rank, device_id)
names a chip; the `devices` table, which has no rank column, keeps one row per device id.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import uuid
import warnings
from pathlib import Path

from ttreport import db, outfile, schema
from ttreport.errors import MergeError
from ttreport.folder import TENSORS_DIR
from ttreport.read.report import Report

# Which id each column holds: a merged rank's ids of one kind move past all earlier ranks' ids of it.
_KINDS = {
    "operation_id": "op", "parent_operation_id": "op", "producer_operation_id": "op",
    "last_use_operation_id": "op", "deallocate_operation_id": "op", "allocated_by_operation_id": "op",
    "node_operation_id": "op",
    "tensor_id": "tensor", "golden_tensor_id": "tensor",
    "stack_trace_id": "stack", "spec_id": "spec", "buffer_id": "buffer",
    "end_seq": "seq", "allocated_seq": "seq", "freed_seq": "seq",
}
# report_metadata is merged on its own; measured_perf (`ttreport attach`) holds one hardware file's rows paired with one
# rank's ops, and its positions would collide: attach the merged report instead.
_SKIP = {"report_metadata", "measured_perf"}


def _db_path(report) -> Path:
    path = Path(report)
    return path / db.DB_FILE if path.is_dir() else path


def _read_only(path: Path) -> str:
    """A read-only SQLite URI of `path` (percent-encoded, so a '?' or '#' in a folder name stays a name)."""
    return f"{path.resolve().as_uri()}?mode=ro"


def _ranks(con: sqlite3.Connection) -> set[int]:
    ranks = {r[0] for r in con.execute("SELECT DISTINCT rank FROM operations")}
    if not ranks:  # a report without ops: its capture's rank
        row = con.execute("SELECT value FROM report_metadata WHERE key = 'rank'").fetchone()
        ranks = {int(row[0]) if row else 0}
    return ranks


def merge(reports, out, *, ranks: dict | None = None) -> Path:
    """Join the reports of one run's ranks into a new report folder `out`; returns its db.sqlite path.

    ranks: {report: rank} for reports whose rows hold the wrong rank. A rank taken from the environment
    is written into the rows when the capture closes, so a rank killed before that keeps rank 0 in every
    row; `ranks={"reports/rank1": 1}` merges it as rank 1 (the report must hold one rank).

    Raises MergeError when fewer than two reports are given, when they differ in schema revision, when
    two hold the same rank, when `ranks` names a report not merged or one holding several ranks, or when
    `out` exists.
    """
    sources = [_db_path(r) for r in reports]
    if len(sources) < 2:
        raise MergeError(f"merge needs two or more reports, got {len(sources)}: {[str(s) for s in sources]}")
    overrides = _rank_overrides(ranks or {}, sources)
    out = Path(out)
    if os.path.lexists(out):  # a link to nowhere too: mkdir would fail on it, or make the folder elsewhere
        raise MergeError(f"{out} exists; give a new folder for the merged report")
    revisions, seen = {}, {}
    for src in sources:
        db.check_is_report(src)
        revisions[src] = db.current_revision(src)
    if len(set(revisions.values())) > 1:
        listed = ", ".join(f"{s}: {r}" for s, r in revisions.items())
        raise MergeError(f"the reports have different schemas ({listed}); run `ttreport upgrade` on each first")
    db.check_current(sources[0])  # all at one revision: this one's, an older one's or a newer one's error
    for src in sources:  # each opened as a reader opens it: a view in a table's place (a recursive one never ended)
        Report(src).close()
    for src in sources:
        con = sqlite3.connect(_read_only(src), uri=True)
        try:
            held = _ranks(con)
        finally:
            con.close()
        if src in overrides:
            if len(held) > 1:
                raise MergeError(f"{src} holds ranks {sorted(held)} (a merged run): a rank can be given only to a "
                                 f"report of one rank; leave it out of --rank")
            held = {overrides[src]}
        for rank in held:
            if rank in seen:
                raise MergeError(f"rank {rank} is in both {seen[rank]} and {src}; each rank's report is merged "
                                 f"once (capture each rank with Config(rank=N) or under mpirun)")
            seen[rank] = src
    out.mkdir(parents=True)
    try:
        _write(sources, out, sorted(seen), overrides)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # the folder is ours, made above: no half-merged report stays
        raise
    return out / db.DB_FILE


def _rank_overrides(ranks: dict, sources: list[Path]) -> dict[Path, int]:
    """{source db path: rank} from {report as given: rank}, each report named by any path to it."""
    by_real = {s.resolve(): s for s in sources}
    out = {}
    for report, rank in ranks.items():
        src = by_real.get(_db_path(report).resolve())
        if src is None:
            raise MergeError(f"a rank is given for {report}, which is not among the reports merged "
                             f"({', '.join(str(s.parent) for s in sources)}); name it as one of them")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise MergeError(f"rank {rank!r} for {report} is not a rank (an integer >= 0)")
        out[src] = rank
    return out


def _write(sources: list[Path], out: Path, ranks: list[int], overrides: dict[Path, int]) -> None:
    (out / TENSORS_DIR).mkdir()
    target = out / db.DB_FILE
    db.create(target)
    con = sqlite3.connect(target.resolve().as_uri(), uri=True)  # uri: so that ATTACH reads _read_only's URIs
    con.create_function("remap_arguments", 2, _remap_arguments, deterministic=True)
    try:
        offsets = dict.fromkeys(set(_KINDS.values()), 0)
        metas = []
        for src in sources:
            con.execute("ATTACH DATABASE ? AS src", (_read_only(src),))
            try:
                with con:
                    _copy(con, offsets, overrides.get(src))
                    _copy_tensor_files(con, src.parent, out, offsets["tensor"])
                    _copy_tensor_writes(con, src.parent, out, offsets["tensor"], offsets["op"])
                    metas.append(dict(con.execute("SELECT key, value FROM src.report_metadata")))
                    for kind, top in _maxima(con).items():
                        offsets[kind] += top + 1
            finally:
                con.execute("DETACH DATABASE src")
        with con:
            con.executemany("INSERT OR REPLACE INTO report_metadata (key, value) VALUES (?, ?)",
                            _merged_metadata(metas, ranks).items())
    finally:
        con.close()
    config = sources[0].parent / "config.json"
    if config.is_file() and not config.is_symlink():
        try:
            data = json.loads(config.read_text())
        except (ValueError, UnicodeDecodeError):
            data = None
        if not isinstance(data, dict):  # a received report's file: the merged report goes without it
            warnings.warn(f"{config} is not a JSON object; the merged report has no config.json", stacklevel=2)
            return
        data.update(report_name=out.name, report_path=str(out))
        outfile.write_text(out / "config.json", json.dumps(data, indent=2))


def _copy(con: sqlite3.Connection, offsets: dict, rank: int | None = None) -> None:
    for table in schema.metadata.sorted_tables:
        if table.name in _SKIP:
            continue
        cols = [c.name for c in table.c]
        exprs = []
        for c in cols:
            kind = _KINDS.get(c)
            if table.name == "source_files" and c == "id":
                # one row per path: the same script on two ranks is one file
                exprs.append("(SELECT coalesce(max(id), -1) FROM main.source_files) + row_number() OVER ()")
            elif c == "source_file_id":
                exprs.append("(SELECT m.id FROM main.source_files m JOIN src.source_files s ON s.path = m.path "
                             f"WHERE s.id = t.{c})")
            elif kind == "seq":  # 0: live before the capture began, in every rank
                exprs.append(f"CASE WHEN t.{c} = 0 THEN 0 ELSE t.{c} + {offsets['seq']} END")
            elif kind is not None:
                exprs.append(f"t.{c} + {offsets[kind]}")
            elif c == "rank" and rank is not None:  # the rank the user gave this report (merge's ranks=)
                exprs.append(str(int(rank)))
            elif table.name == "operations" and c == "arguments":
                exprs.append(f"remap_arguments(t.{c}, {offsets['tensor']})")
            else:
                exprs.append(f"t.{c}")
        where = ""
        if table.name == "source_files":
            where = " WHERE t.path NOT IN (SELECT path FROM main.source_files)"
        # see the module docstring; a graph's id is its text's hash: the same graph on two ranks is one row
        verb = "INSERT OR IGNORE" if table.name in ("devices", "distinct_graphs") else "INSERT"
        con.execute(f"{verb} INTO main.{table.name} ({', '.join(cols)}) "
                    f"SELECT {', '.join(exprs)} FROM src.{table.name} t{where}")


def _maxima(con: sqlite3.Connection) -> dict:
    """The largest id of each kind in the attached report (-1 for none)."""
    top = dict.fromkeys(set(_KINDS.values()), -1)
    for table in schema.metadata.sorted_tables:
        for c in table.c:
            kind = _KINDS.get(c.name)
            if kind is not None:
                value = con.execute(f"SELECT max({c.name}) FROM src.{table.name}").fetchone()[0]
                if value is not None:
                    top[kind] = max(top[kind], value)
    return top


def _confined(src_folder: Path, file) -> Path:
    """The rank's tensor file `file`, which must lie in its report's tensors/ and be reached through no link: a
    report is input, and a row naming another path (or a link out, to ~/.ssh say) must not carry a file of this
    host into the merged report. Raises MergeError naming it."""
    root = src_folder.resolve() / TENSORS_DIR
    path = src_folder / str(file)
    if os.path.isabs(str(file)) or path.is_symlink() or not path.resolve().is_relative_to(root):
        raise MergeError(f"{src_folder}: tensor file {str(file)!r} is outside the report's {TENSORS_DIR}/ folder "
                         f"(a link, or another path); `ttreport check {src_folder}` it, then merge without it")
    return path


def _copy_tensor_files(con: sqlite3.Connection, src_folder: Path, out: Path, offset: int) -> None:
    """Copy each stored tensor under its new id, and point its row at the copy."""
    rows = con.execute("SELECT tensor_id, file FROM src.tensors WHERE file IS NOT NULL").fetchall()
    for tensor_id, file in rows:
        source = _confined(src_folder, file)
        if source.is_dir():  # a mesh tensor: tensors/<id>/<device>.pt, a file per shard
            name = f"tensors/{tensor_id + offset}/"
            (out / name).mkdir()
            for shard in sorted(source.iterdir()):
                if shard.is_file():  # and not a link out of it (_confined)
                    shutil.copyfile(_confined(src_folder, shard.relative_to(src_folder)), out / name / shard.name)
        elif source.is_file():
            name = f"tensors/{tensor_id + offset}{source.suffix}"
            shutil.copyfile(source, out / name)
        else:
            continue  # its row says a file that the rank's capture lost; `ttreport check` reports it
        con.execute("UPDATE main.tensors SET file = ? WHERE tensor_id = ?", (name, tensor_id + offset))


def _copy_tensor_writes(con: sqlite3.Connection, src_folder: Path, out: Path, offset: int, op_offset: int) -> None:
    """Copy each file an op wrote into a stored tensor (tensor_writes) under its new ids, and point its row at it."""
    for op_id, tensor_id, file in con.execute("SELECT operation_id, tensor_id, file FROM src.tensor_writes").fetchall():
        source = _confined(src_folder, file) if file else None
        if source is None or not source.is_file():
            continue  # a write the rank's capture could not keep: its row has no file to copy
        name = f"tensors/{tensor_id + offset}@{op_id + op_offset}{source.suffix}"
        shutil.copyfile(source, out / name)
        con.execute("UPDATE main.tensor_writes SET file = ? WHERE tensor_id = ? AND operation_id = ?",
                    (name, tensor_id + offset, op_id + op_offset))


def _remap_arguments(text, offset):
    """operations.arguments with its tensor ids (the JSON integers) moved by `offset`."""
    if text is None or offset == 0:
        return text
    value = json.loads(text)

    def move(v):
        return v + offset if isinstance(v, int) and not isinstance(v, bool) else v

    if isinstance(value, list):
        value = [move(v) for v in value]
    elif isinstance(value, dict):
        value = {k: move(v) for k, v in value.items()}
    return json.dumps(value)


def _merged_metadata(metas: list[dict], ranks: list[int]) -> dict:
    merged = dict(metas[0])
    statuses = [m.get("status", "complete") for m in metas]
    merged.update(
        report_id=str(uuid.uuid4()),
        ranks=json.dumps(ranks),
        merged_from=json.dumps([m.get("report_id") for m in metas]),
        status=next((s for s in statuses if s != "complete"), "complete"),
    )
    for key in ("ops_lost", "records_lost", "tensor_files_lost"):  # a loss in any rank is the run's
        if any(key in m for m in metas):
            merged[key] = str(sum(int(m.get(key) or 0) for m in metas))
    merged.pop("rank", None)
    return merged
