"""Queries on a report: refused writes leave no transaction, parameters keep their type, a runaway
query stops (timeout, Ctrl-C), and `query` and `ops` stream their rows in bounded memory."""

import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

import ttreport
from ttreport import db
from ttreport.cli import main
from ttreport.read.report import QueryTimeoutError, ReportError

RUNAWAY = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT MAX(x) FROM c"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def make_report(folder, n_ops: int, *, wal: bool = False):
    """A report of `n_ops` ops with arguments and stack traces, written with SQL (no capture needed)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "db.sqlite"
    db.create(path)
    con = sqlite3.connect(path)
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
    with con:
        con.execute("INSERT INTO stack_trace_texts (stack_trace_id, stack_trace) VALUES (1, ?)",
                    ('  File "model.py", line 12\n    y = x + w',))
        con.execute(f"""WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {n_ops - 1})
            INSERT INTO operations (operation_id, name, duration, depth, status, stack_trace_id, arguments)
            SELECT i, 'ttnn.add', 1e-5, 0, 'ok', 1,
                   json_array('ttnn.Tensor(shape=Shape([1, 32, 64]), dtype=DataType.BFLOAT16) number ' || i,
                              'memory_config=MemoryConfig(memory_layout=TensorMemoryLayout::INTERLEAVED)')
            FROM n""")
        con.execute("INSERT INTO report_metadata VALUES ('status', 'complete')")
    con.close()
    return folder


def test_a_refused_write_leaves_no_transaction_so_a_live_report_reads_new_rows(tmp_path):
    folder = make_report(tmp_path / "live", 10, wal=True)
    writer = sqlite3.connect(folder / "db.sqlite")  # a capture still writing
    with ttreport.open(folder) as r:
        assert r.count_operations() == 10
        with pytest.raises(ReportError, match="reports are read-only"):
            r.sql("DELETE FROM operations")
        with writer:
            writer.execute("INSERT INTO operations (operation_id, name) VALUES (10, 'ttnn.relu')")
        assert r.count_operations() == 11  # not the snapshot from before the refused DELETE
        assert [o.name for o in r.operations(limit=1, offset=10)] == ["ttnn.relu"]
    writer.close()


def test_query_parameters_that_are_numbers_are_bound_as_numbers(tmp_path):
    folder = make_report(tmp_path / "r", 3)
    result = invoke("query", folder, "SELECT max(:a, :b) AS m, typeof(:a) AS ta, :c AS name, typeof(:d) AS td",
                    "-p", "a", "10", "-p", "b", "9", "-p", "c", "ttnn.add", "-p", "d", "2.5", "--json")
    assert result.exit_code == 0, result.output
    assert '"m": 10' in result.output and '"ta": "integer"' in result.output
    assert '"name": "ttnn.add"' in result.output and '"td": "real"' in result.output
    ids = invoke("query", folder, "SELECT operation_id FROM operations WHERE operation_id >= :x", "-p", "x", "1",
                 "--csv")
    assert ids.output.split() == ["operation_id", "1", "2"]  # as text, '1' >= every integer: all three rows


def test_a_runaway_query_stops_at_its_timeout_and_the_report_reads_on(tmp_path):
    folder = make_report(tmp_path / "r", 3)
    with ttreport.open(folder) as r:
        start = time.monotonic()
        with pytest.raises(QueryTimeoutError, match="ran past its timeout of 0.5 s"):
            r.sql(RUNAWAY, timeout_s=0.5)
        assert time.monotonic() - start < 10
        assert r.count_operations() == 3  # the timeout was that query's, not the connection's
    result = invoke("query", folder, RUNAWAY, "--timeout", "0.5")
    assert result.exit_code == 2 and "ttreport query --timeout SECONDS" in result.output


def test_ctrl_c_stops_a_runaway_query(tmp_path):
    folder = make_report(tmp_path / "r", 3)
    proc = subprocess.Popen([sys.executable, "-m", "ttreport.cli", "query", str(folder), RUNAWAY],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2)  # well inside the query (the CLI starts in ~0.2 s)
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("Ctrl-C did not stop the query")
    assert proc.returncode != 0 and "Aborted!" in err and "Traceback" not in err


# VmHWM, the peak RSS of this process image (ru_maxrss would carry the forking test process's over exec).
PEAK_RSS = """
import re, sys
from ttreport.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
hwm = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)
print(int(hwm) // 1024, file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize("args", [["query", "{r}", "SELECT * FROM operations", "--json"],
                                  ["query", "{r}", "SELECT * FROM operation_arguments"],
                                  ["ops", "{r}", "--limit", "0"]])
def test_query_and_ops_stream_a_large_report_in_bounded_memory(tmp_path_factory, big_report, args):
    done = subprocess.run([sys.executable, "-c", PEAK_RSS, *[a.format(r=big_report) for a in args]],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    peak_mib = int(done.stderr.split()[-1])
    # Held whole, 200,000 rows take 300-900 MiB (rows, their dicts, the JSON text); streamed, the
    # process stays near its ~40 MiB start. The bound is generous: it checks streaming, not a figure.
    assert peak_mib < 200, f"peak RSS {peak_mib} MiB"


@pytest.fixture(scope="module")
def big_report(tmp_path_factory):
    return make_report(tmp_path_factory.mktemp("big") / "r", 200_000)
