"""A received report is input (issue 29, DESIGN.md "Trust boundary"): what the reading commands write, the SQL
they run and what they print stay safe whatever the folder holds.

- every file a reader writes replaces a symbolic link at its path, never its target (ttreport.outfile);
- read-only SQL calls only reading functions: fts3_tokenizer (a pointer out, a crash in), load_extension and
  functions SQLite does not list as reading are refused in one line; a virtual table in a report is refused;
- a damaged device_perf row costs `whatif` that op, not a traceback;
- control characters in a report reach no terminal raw, and no value prints at more than a screenful;
- `ttreport html` of a large report writes a page a browser opens.
"""

import hashlib
import json
import os
import pty
import select
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from received import cli, demo_copy, execute, one_line_error

import ttreport
from ttreport import db
from ttreport.read.merge import _KINDS

MINE = "a file of the user's, not to be overwritten\n"


@pytest.fixture
def demo(tmp_path) -> Path:
    return demo_copy(tmp_path)


def link_to_victim(path: Path, victim: Path) -> None:
    victim.write_text(MINE)
    path.symlink_to(victim)


def assert_replaced(path: Path, victim: Path) -> None:
    assert victim.read_text() == MINE, f"{victim} was written through the link at {path}"
    assert path.is_file() and not path.is_symlink() and path.stat().st_size > 0
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


# -- files a reader writes ---------------------------------------------------------------------------------

def test_perf_csv_replaces_links_in_the_report_folder_and_leaves_their_targets(demo):
    for name in ("ops_perf_results.csv", "profile_log_device.csv"):
        link_to_victim(demo / name, demo / f"{name}.mine")
    done = cli("perf-csv", demo)
    assert done.returncode == 0, done.stderr
    for name in ("ops_perf_results.csv", "profile_log_device.csv"):
        assert_replaced(demo / name, demo / f"{name}.mine")
    assert (demo / "ops_perf_results.csv").read_text().startswith("OP CODE,")


@pytest.mark.parametrize("args, out", [
    (["html", "{r}", "-o", "{o}"], "page.html"),
    (["trace", "{r}", "-o", "{o}"], "trace.json"),
    (["trace", "{r}", "-o", "{o}"], "trace.json.gz"),
    (["compare", "{r}", "{r}", "--json", "{o}"], "diff.json"),
    (["compare", "{r}", "{r}", "--csv", "{o}"], "diff.csv"),
    (["compare", "{r}", "{r}", "--timing", "--json", "{o}"], "timing.json"),
])
def test_every_export_replaces_a_link_at_its_output_and_leaves_the_target(demo, tmp_path, args, out):
    link_to_victim(tmp_path / out, tmp_path / "victim.txt")
    done = cli(*[a.format(r=demo, o=tmp_path / out) for a in args])
    assert done.returncode == 0, done.stderr
    assert_replaced(tmp_path / out, tmp_path / "victim.txt")


def test_an_output_in_a_missing_folder_is_one_line(demo, tmp_path):
    err = one_line_error(cli("trace", demo, "-o", tmp_path / "no" / "such" / "trace.json"))
    assert f"cannot write {tmp_path / 'no' / 'such' / 'trace.json'}" in err


def test_upgrade_replaces_a_linked_temporary_config_and_leaves_its_target(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    shutil.copy(Path(__file__).parent / "data" / "report_v0003" / "db.sqlite", folder / "db.sqlite")
    (folder / "config.json").write_text(json.dumps({"report_name": "old", "schema_version": "0003"}))
    link_to_victim(folder / "config.json.tmp", tmp_path / "victim.txt")  # the name upgrade wrote through
    done = cli("upgrade", folder)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "victim.txt").read_text() == MINE
    assert json.loads((folder / "config.json").read_text())["schema_version"] == db.head_revision()


def test_merge_into_a_dangling_link_is_one_line_and_writes_nothing(demo, tmp_path):
    other = shutil.copytree(demo, tmp_path / "rank1")
    (tmp_path / "out").symlink_to(tmp_path / "elsewhere")
    err = one_line_error(cli("merge", demo, other, "-o", tmp_path / "out", "--rank", f"{other}=1"))
    assert "exists" in err and not (tmp_path / "elsewhere").exists()


# -- SQL -----------------------------------------------------------------------------------------------

# Registers a tokenizer whose module pointer is 0x4141414141414141, then reads an FTS table: SQLite calls
# through the pointer (a segfault, exit 139, before the authorizer refused fts3_tokenizer).
FTS3_ATTACK = """
import sys, ttreport
r = ttreport.open(sys.argv[1])
try:
    r.sql("SELECT fts3_tokenizer('simple', x'4141414141414141')")
    r.sql("SELECT * FROM notes WHERE notes MATCH 'hello'")
except ttreport.TTReportError as e:
    print(e)
"""


def test_a_crafted_fts3_tokenizer_is_refused_not_a_crash(demo):
    execute(demo, "CREATE VIRTUAL TABLE notes USING fts3(body)", "INSERT INTO notes VALUES ('hello world')")
    done = subprocess.run([sys.executable, "-c", FTS3_ATTACK, str(demo)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "fts3_tokenizer" in done.stdout and len(done.stdout.splitlines()) == 1, done.stdout


@pytest.mark.parametrize("sql, name", [
    ("SELECT hex(fts3_tokenizer('simple')) AS pointer", "fts3_tokenizer"),
    ("SELECT load_extension('/tmp/evil.so')", "load_extension"),
    ("SELECT rtreenode(2, x'00')", "rtreenode"),
    ("SELECT fts5(NULL)", "fts5"),
])
def test_query_refuses_functions_that_are_not_reading_ones_in_one_line(demo, sql, name):
    err = one_line_error(cli("query", demo, sql))
    assert f"{name}()" in err and "reading functions" in err


def test_a_virtual_table_in_a_report_is_refused(demo):
    execute(demo, "CREATE VIRTUAL TABLE notes USING fts3(body)", "INSERT INTO notes VALUES ('hello world')")
    err = one_line_error(cli("query", demo, "SELECT * FROM notes"))
    assert "notes" in err and "virtual table" in err


def test_reading_functions_still_answer(demo):
    with ttreport.open(demo) as r:
        row = r.sql("SELECT count(*) AS n, json_extract('{\"a\": 2}', '$.a') AS j, sqrt(16.0) AS s, "
                    "date('2024-01-02') AS d, printf('%05d', 7) AS p, group_concat(DISTINCT typeof(name)) AS t, "
                    "max(length(substr(name, 1, 3))) AS l FROM operations")[0]
        ranked = r.sql("SELECT name, row_number() OVER (ORDER BY operation_id) AS k FROM operations LIMIT 2")
        keys = r.sql("SELECT key FROM json_each('{\"x\": 1}')")
        views = r.sql("SELECT COUNT(*) AS n FROM op_tensors")
    assert row == {"n": 66, "j": 2, "s": 4.0, "d": "2024-01-02", "p": "00007", "t": "text", "l": 3}
    assert [x["k"] for x in ranked] == [1, 2] and keys == [{"key": "x"}] and views[0]["n"] > 0


# A view under a table's name runs SQL the folder brings on every reader's own statements: a recursive one read
# forever (summary, ops, op and ls of its parent hung); another called load_extension() on every read.
ENDLESS = ("ALTER TABLE {t} RENAME TO {t}_kept",
           "CREATE VIEW {t} AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
           "SELECT k.* FROM {t}_kept k, n")


@pytest.mark.parametrize("table", ["operations", "report_metadata", "alembic_version"])
def test_a_view_in_place_of_a_table_is_refused_in_one_line_never_read(demo, table):
    execute(demo, *(s.format(t=table) for s in ENDLESS))
    for args in (["summary", demo], ["ops", demo], ["op", demo, 2], ["query", demo, "SELECT 1"]):
        err = one_line_error(cli(*args, timeout=60))
        assert f"{table} is a view" in err, err
    done = cli("ls", demo.parent, timeout=60)
    assert done.returncode == 0 and "unreadable" in done.stdout.decode(), done.stdout.decode()
    done = cli("check", demo, timeout=60)
    assert done.returncode == 1 and f"{table} is a view" in done.stdout.decode(), done.stdout.decode()


def test_a_view_in_place_of_operations_beside_a_left_over_wal_is_refused_not_counted(demo):
    # wal.fold counts the ops of db.sqlite alone and with the WAL before folding (6549c07): it counted the view, and
    # `ttreport summary` of such a folder never ended.
    execute(demo, *(s.format(t="operations") for s in ENDLESS))
    (demo / "db.sqlite-wal").write_bytes(bytes(100))  # any left-over WAL: the fold looks before it reads one
    err = one_line_error(cli("summary", demo, timeout=60))
    assert "operations is a view" in err, err


@pytest.mark.parametrize("table", ["device_perf", "devices", "input_tensors"])
def test_check_names_a_table_the_report_lacks(demo, table):
    # summary failed on a report without device_perf ("no such table") while check said "ok".
    execute(demo, f"DROP TABLE {table}")
    done = cli("check", demo)
    out = done.stdout.decode()
    assert done.returncode == 1 and f"the table {table} is missing" in out, (out, done.stderr.decode()[-2000:])
    if table == "device_perf":  # and a reader that needs it says so, and where to look
        err = one_line_error(cli("summary", demo))
        assert f"no such table: {table}" in err and f"ttreport check {demo}" in err, err


def test_a_planted_wal_that_would_leave_fewer_ops_is_refused_and_the_db_kept(demo, tmp_path):
    # `ttreport summary` folded a db.sqlite-wal from another copy (all but 3 ops deleted) into a complete 66-op
    # report: db.sqlite held 3 ops after a reading command.
    other = Path(shutil.copytree(demo, tmp_path / "other"))
    code = ("import os, shutil, sqlite3, sys\n"
            "con = sqlite3.connect(sys.argv[1] + '/db.sqlite', isolation_level=None)\n"
            "con.execute('PRAGMA journal_mode=WAL'); con.execute('PRAGMA wal_autocheckpoint=0')\n"
            "con.execute('DELETE FROM operations WHERE operation_id > 3')\n"
            "shutil.copy(sys.argv[1] + '/db.sqlite-wal', sys.argv[2] + '/db.sqlite-wal')\n"
            "os._exit(0)  # no close: the WAL is not checkpointed\n")
    subprocess.run([sys.executable, "-c", code, str(other), str(demo)], check=True, timeout=60)
    before = hashlib.sha256((demo / "db.sqlite").read_bytes()).hexdigest()
    for args in (["summary", demo], ["ops", demo], ["tensor", demo, 34]):
        err = one_line_error(cli(*args))
        assert "would leave 3 ops of the 66" in err, err
    done = cli("check", demo)
    assert done.returncode == 1 and "would leave 3 ops of the 66" in done.stdout.decode(), done.stdout.decode()
    assert hashlib.sha256((demo / "db.sqlite").read_bytes()).hexdigest() == before
    assert (demo / "db.sqlite-wal").exists()


def test_a_planted_hot_journal_is_refused_by_readers_and_rolled_back_only_by_repair(demo, tmp_path):
    # `ttreport summary` rolled a db.sqlite-journal from another copy into a complete report: its op names changed.
    other = Path(shutil.copytree(demo, tmp_path / "other"))
    code = ("import os, shutil, sqlite3, sys\n"
            "con = sqlite3.connect(sys.argv[1] + '/db.sqlite', isolation_level=None)\n"
            "con.execute('PRAGMA journal_mode=DELETE'); con.execute('PRAGMA cache_size=1')\n"
            "con.execute(\"UPDATE operations SET name = 'EVIL'\")\n"
            "con.execute('BEGIN'); con.execute('DELETE FROM operations WHERE operation_id > 3')\n"
            "con.execute('UPDATE stack_traces SET stack_trace = hex(randomblob(2000))')  # spills: the journal is hot\n"
            "shutil.copy(sys.argv[1] + '/db.sqlite-journal', sys.argv[2] + '/db.sqlite-journal')\n"
            "os._exit(0)  # the transaction never ends: its journal stays hot\n")
    subprocess.run([sys.executable, "-c", code, str(other), str(demo)], check=True, timeout=60)
    before = hashlib.sha256((demo / "db.sqlite").read_bytes()).hexdigest()
    for args in (["summary", demo], ["ops", demo], ["query", demo, "SELECT 1"]):
        err = one_line_error(cli(*args))
        assert "db.sqlite-journal holds a write" in err and "check --repair" in err, err
    done = cli("check", demo)
    assert done.returncode == 1 and "db.sqlite-journal holds a write" in done.stdout.decode(), done.stdout.decode()
    assert hashlib.sha256((demo / "db.sqlite").read_bytes()).hexdigest() == before
    done = cli("check", "--repair", demo)
    assert "repaired: rolled back" in done.stdout.decode(), (done.stdout.decode(), done.stderr.decode())
    assert not (demo / "db.sqlite-journal").exists()


# Values of the wrong type or out of range, as `ttreport check` lists them: the exports and --json place what they
# can (a time that is not a number is a time not recorded) and never end in a traceback.
CRAFTED = {"types": ["UPDATE operations SET start_ns = 'x', end_ns = X'FF00' WHERE operation_id % 3 = 0",
                     "UPDATE operations SET name = X'00FF' WHERE operation_id % 5 = 0",
                     "UPDATE tensors SET dtype = X'FF', layout = 7, shape = 'x' WHERE tensor_id % 2 = 0",
                     "UPDATE input_tensors SET tensor_id = 'q' WHERE rowid % 2 = 0"],
           "huge": ["UPDATE operations SET duration = 1e308, end_ns = NULL WHERE operation_id % 3 = 1"]}


@pytest.mark.parametrize("crafted", CRAFTED)
@pytest.mark.parametrize("args", [["trace", "{r}", "-o", "{out}/t.json"], ["html", "{r}", "-o", "{out}/t.html"],
                                  ["perf-csv", "{r}", "{out}"], ["summary", "{r}", "--json"],
                                  ["ops", "{r}", "--json"], ["op", "{r}", "5", "--json"]])
def test_values_of_the_wrong_type_are_placed_or_refused_in_one_line_never_a_traceback(demo, tmp_path, args, crafted):
    execute(demo, *CRAFTED[crafted])
    done = cli(*(a.format(r=demo, out=tmp_path) for a in args))
    if done.returncode != 0:
        one_line_error(done)
    assert "Traceback" not in done.stderr.decode(), done.stderr.decode()[-3000:]


# -- whatif ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("statement", [
    "UPDATE device_perf SET math_fidelity = 'Turbo' WHERE operation_id = (SELECT MIN(operation_id) FROM device_perf "
    "WHERE math_fidelity IS NOT NULL)",
    "UPDATE tensors SET dtype = 'DataType.FLOAT64' WHERE tensor_id = (SELECT MIN(i.tensor_id) FROM input_tensors i "
    "JOIN device_perf p USING (operation_id) WHERE p.math_fidelity IS NOT NULL)",
])
def test_whatif_skips_an_op_with_a_damaged_row_and_says_so(demo, statement):
    execute(demo, statement)
    done = cli("whatif", demo, "--math-fidelity", "LoFi")
    out = done.stdout.decode()
    assert done.returncode == 0 and "Traceback" not in done.stderr.decode(), done.stderr.decode()[-2000:]
    assert "skipped" in out and "ttreport check" in out and "device time (top-level ops)" in out


# -- terminal views ---------------------------------------------------------------------------------------

# An OSC that retitles the terminal, a CSI that clears it, a carriage return that overwrites the line, C1's CSI.
HOSTILE = "ttnn.add\x1b]0;pwned\x07\x1b[2J\rX\x9b31m"
SHOWN = r"ttnn.add\x1b]0;pwned\x07\x1b[2J\rX\x9b31m"


def hostile(demo: Path) -> int:
    """Put HOSTILE in the demo's first op name and status and in its errors; returns the op's id."""
    execute(demo, "UPDATE operations SET name = ?1, status = ?1 WHERE operation_id = (SELECT MIN(operation_id) "
            "FROM operations)", params=(HOSTILE,))
    execute(demo, "UPDATE errors SET error_message = ?1, error_type = ?1", params=(HOSTILE,))
    with ttreport.open(demo) as r:
        return r.sql("SELECT MIN(operation_id) AS id FROM operations")[0]["id"]


@pytest.mark.parametrize("args", [["summary", "{r}"], ["ops", "{r}"], ["op", "{r}", "{id}"],
                                  ["query", "{r}", "SELECT name, status FROM operations"]])
def test_control_characters_in_a_report_reach_no_terminal(demo, args):
    first = hostile(demo)
    done = cli(*[a.format(r=demo, id=first) for a in args])
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr
    assert not any(c in out for c in "\x1b\x07\r\x9b"), repr(out[:2000])
    assert SHOWN in out


def on_a_terminal(*args) -> str:
    """What `ttreport ARGS` writes to a terminal (a pseudo-terminal: rich draws, is_terminal() is true)."""
    env = {k: v for k, v in os.environ.items() if k != "TTREPORT_PLAIN"} | {"COLUMNS": "250"}
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ttreport.cli", *map(str, args)], stdout=child,
                            stderr=subprocess.PIPE, env=env)
    os.close(child)
    out = b""
    try:
        while select.select([main], [], [], 60)[0]:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the command ended and closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(main)
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    return out.decode()


@pytest.mark.parametrize("args", [["query", "{r}", "SELECT name FROM operations"],
                                  ["query", "{r}", "SELECT name FROM operations", "--csv"],
                                  ["summary", "{r}"]])
def test_rich_tables_and_csv_on_a_terminal_escape_control_characters_too(demo, args):
    hostile(demo)
    out = on_a_terminal(*[a.format(r=demo) for a in args])
    # rich colours with its own escapes, and the terminal ends lines with CR LF: look for the report's
    assert not any(c in out for c in ("\x1b]0;pwned", "\x1b[2J", "\rX", "\x9b")), repr(out[:2000])
    assert SHOWN in out


HUGE = 4 * 1024 * 1024  # characters: large enough that a view printing it whole, or padding rows to it, shows


@pytest.mark.parametrize("args", [["summary", "{r}"], ["ops", "{r}"], ["query", "{r}", "SELECT * FROM operations"],
                                  ["op", "{r}", "{id}"]])
def test_a_huge_value_prints_capped_with_its_length(demo, args):
    execute(demo, f"UPDATE operations SET name = 'ttnn.' || hex(zeroblob({HUGE // 2})) WHERE operation_id = "
            f"(SELECT MIN(operation_id) FROM operations)")
    with ttreport.open(demo) as r:
        first = r.sql("SELECT MIN(operation_id) AS id FROM operations")[0]["id"]
    start = time.monotonic()
    done = cli(*[a.format(r=demo, id=first) for a in args], timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert len(done.stdout) < 256 * 1024, f"{len(done.stdout):,} bytes printed"
    assert f"{HUGE + 5:,} characters" in done.stdout.decode()
    assert time.monotonic() - start < 30


# -- html ---------------------------------------------------------------------------------------------------

REPLICATED = ("operations", "device_perf", "input_tensors", "output_tensors", "tensors", "buffer_lifetimes",
              "errors", "stack_traces", "tensor_comparisons", "operation_arguments")


def multiply(folder: Path, times: int) -> None:
    """Make the report `times` runs of its ops, laid end to end: ids, sequence numbers and clocks moved past the
    previous copy's (merge's _KINDS says which column holds which id); tensor files are not copied."""
    con = sqlite3.connect(folder / "db.sqlite")
    stride = {kind: con.execute(f"SELECT max({col}) + 1 FROM {table}").fetchone()[0] for kind, table, col in (
        ("op", "operations", "operation_id"), ("tensor", "tensors", "tensor_id"),
        ("buffer", "buffer_lifetimes", "buffer_id"), ("time", "operations", "end_ns"))}
    stride["seq"] = con.execute("SELECT max((SELECT max(end_seq) FROM operations), (SELECT max(max(allocated_seq), "
                                "coalesce(freed_seq, 0)) FROM buffer_lifetimes)) + 1").fetchone()[0]
    with con:
        for table in REPLICATED:
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
            kinds = [("time" if c in ("start_ns", "end_ns") else _KINDS.get(c)) for c in cols]
            exprs = [f"{c} + k.i * {stride[k]}" if k in stride else "NULL" if (table, c) == ("tensors", "file") else c
                     for c, k in zip(cols, kinds)]
            con.execute(f"WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {times - 1}) "
                        f"INSERT INTO {table} ({', '.join(cols)}) SELECT {', '.join(exprs)} FROM {table}, k")
    con.close()


def test_html_of_a_large_report_is_bounded_and_says_what_it_left_out(demo, tmp_path):
    from ttreport.export import html

    multiply(demo, 160)  # 10,560 ops: past the page's default of 10,000
    execute(demo, "UPDATE stack_trace_texts SET stack_trace = stack_trace || hex(zeroblob(1000000)) "
            "WHERE stack_trace_id = (SELECT MIN(stack_trace_id) FROM stack_trace_texts)")
    with ttreport.open(demo) as r:
        total = r.count_operations()
        tensors = r.sql("SELECT COUNT(*) AS n FROM tensors")[0]["n"]
    done = cli("html", demo, "-o", tmp_path / "big.html", timeout=300)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "big.html").read_text()
    rows = page.count("<tr id='op-")
    assert rows == html.MAX_OPS < total
    assert f"(the first {html.MAX_OPS:,} of {total:,}; `ttreport html --limit N`" in page
    assert page.count("<tr id='tensor-") < tensors
    assert "characters; `ttreport op" in page and "0" * 100_000 not in page
    # 1,000 of the demo's ops make ~2.5 MB of op table and ~0.6 MB of tensors, and plotly is 4.8 MB; the device
    # timeline (0.39 MB for 10,000 bars) and each op's device column (~28 B a row) take ~0.7 MB more
    assert len(page) < 41_000_000, f"{len(page):,} characters"
