"""Damaged report databases, fuzzed: every reader gives one line and exit 2, and `check` lists the damage.

Copies of the committed sample report are damaged in two ways: random bytes flipped anywhere
in db.sqlite (pages, b-tree headers, record headers, the schema's own text), and crafted
values written with SQL into every column of every table (text where a number belongs, a
BLOB, text that is not UTF-8). Each copy is then read by `summary`, `ops`, `op`, `tensor`,
`query`, `ls`, `check` and `upgrade`: each must end with its output or a one-line error and
exit 2 (`check`: a list of faults and exit 1), never a traceback; `ttreport.check()` must
return its faults, never raise.

Stored tensor files get the same treatment: bytes flipped in a .pt must make `tensor` and `check`
name the tensor and its file, and `compare` must never blame an op for it.

Under `make test` 48 seeded flips of the db, 16 of a tensor file and one crafted value per column
run (about a minute on 2 busy cores); `make stress` (TTREPORT_STRESS=1) runs 600 and 300 flips and
six values per column.
"""

import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

import ttreport
from ttreport.cli import main

STRESS = os.environ.get("TTREPORT_STRESS") == "1"
SAMPLE = Path(__file__).resolve().parents[1] / "sample_reports" / "demo"
FLIPS = 600 if STRESS else 48
OP_ID, TENSOR_ID = 40, 40  # an op with inputs and outputs, and a tensor with a stored file
NOT_UTF8 = "CAST(X'6164FF' AS TEXT)"
VALUES = ["'x'", "X'FF00'", NOT_UTF8, "NULL", "-1", "1e308"] if STRESS else [NOT_UTF8]


def readers(report: Path) -> list[list[str]]:
    r = str(report)
    return [["summary", r], ["ops", r, "--limit", "0"], ["op", r, str(OP_ID)], ["tensor", r, str(TENSOR_ID)],
            ["query", r, "SELECT * FROM operation_arguments"], ["ls", str(report.parent)], ["check", r],
            ["upgrade", r]]  # last: it may rewrite the copy


def read_everything(report: Path) -> list[str]:
    """Run every reader on `report`, asserting the one-line contract; the faults `ttreport.check` lists."""
    faults = ttreport.check(report)
    assert isinstance(faults, list) and all(isinstance(f, str) for f in faults)
    for args in readers(report):
        result = CliRunner().invoke(main, args)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"ttreport {' '.join(args)} raised") from result.exception
        assert "Traceback" not in result.output, (args, result.output)
        if args[0] == "check":
            assert result.exit_code in (0, 1), (args, result.output)
        elif result.exit_code != 0:
            lines = result.output.strip().splitlines()
            assert result.exit_code == 2 and lines[-1].startswith("Error: "), (args, result.output)
            assert not lines[-1].startswith("Error: Got unexpected"), (args, result.output)
    return faults


@pytest.fixture
def copy(tmp_path):
    def copy() -> Path:
        folder = tmp_path / "reports" / "r"
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(SAMPLE, folder)
        return folder

    return copy


def test_the_sample_reads_cleanly_so_that_every_fault_below_is_the_damage(copy):
    assert read_everything(copy()) == []


@pytest.mark.parametrize("seed", range(FLIPS))
def test_flipped_bytes_in_the_database_never_crash_a_reader(copy, seed):
    folder = copy()
    rng = random.Random(seed)
    db = folder / "db.sqlite"
    blob = bytearray(db.read_bytes())
    for _ in range(rng.choice([1, 4, 16])):
        blob[rng.randrange(len(blob))] = rng.randrange(256)
    db.write_bytes(bytes(blob))
    read_everything(folder)


def _columns() -> list[tuple[str, str]]:
    con = sqlite3.connect(f"file:{SAMPLE / 'db.sqlite'}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                            "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return [(t, c[1]) for t in tables for c in con.execute(f'PRAGMA table_info("{t}")')
                if con.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0]]
    finally:
        con.close()


def _rowid_alias(con, table: str, column: str) -> bool:
    """SQLite's rule: the table's only primary-key column, declared exactly INTEGER, in a rowid table."""
    info = con.execute(f'PRAGMA table_info("{table}")').fetchall()
    pk = [c for c in info if c[5]]
    without_rowid = "WITHOUT ROWID" in con.execute("SELECT upper(sql) FROM sqlite_master WHERE name = ?",
                                                   (table,)).fetchone()[0]
    return len(pk) == 1 and pk[0][1] == column and pk[0][2].upper() == "INTEGER" and not without_rowid


def _unique(con, table: str, column: str) -> bool:
    """Whether the column alone is a primary key or has a unique index (all rows cannot take one value)."""
    info = con.execute(f'PRAGMA table_info("{table}")').fetchall()
    if [c[1] for c in info if c[5]] == [column]:
        return True
    return any(u and [r[2] for r in con.execute(f'PRAGMA index_info("{name}")')] == [column]
               for _, name, u, *_ in con.execute(f'PRAGMA index_list("{table}")'))


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize(("table", "column"), _columns())
def test_a_crafted_value_in_any_column_never_crashes_a_reader_and_check_names_it(copy, table, column, value):
    folder = copy()
    con = sqlite3.connect(folder / "db.sqlite")
    try:
        if _rowid_alias(con, table, column):  # SQLite keeps integers only there: nothing else can be written
            pytest.skip(f"{table}.{column} is a rowid alias (INTEGER PRIMARY KEY)")
        notnull = any(c[1] == column and c[3] for c in con.execute(f'PRAGMA table_info("{table}")'))
        if value == "NULL" and notnull:
            pytest.skip(f"{table}.{column} is NOT NULL: SQLite refuses a NULL there")
        # A unique column cannot hold one value in every row: the crafted value goes into its first row.
        where = f' WHERE rowid = (SELECT MIN(rowid) FROM "{table}")' if _unique(con, table, column) else ""
        with con:
            con.execute(f'UPDATE "{table}" SET "{column}" = {value}{where}')
    finally:
        con.close()
    faults = read_everything(folder)
    if value in ("X'FF00'", NOT_UTF8):  # a BLOB, and undecodable text: wrong in any column of ttreport's
        assert any(f"{table}.{column} holds" in f for f in faults), faults


def test_undecodable_text_is_one_line_from_every_reader_and_named_by_check(copy):
    folder = copy()
    con = sqlite3.connect(folder / "db.sqlite")
    with con:
        con.execute(f"UPDATE operations SET name = {NOT_UTF8} WHERE operation_id = 3")
    con.close()
    for args in (["summary", folder], ["ops", folder], ["op", folder, 3]):
        result = CliRunner().invoke(main, [str(a) for a in args])
        assert result.exit_code == 2, result.output
        assert result.output.strip() == (f"Error: {folder} cannot be read: its database is damaged (Could not "
                                         f"decode to UTF-8 column 'name' with text 'ad\ufffd'); `ttreport check "
                                         f"{folder}` lists the damage")
    faults = ttreport.check(folder)
    assert f"{folder / 'db.sqlite'}: operations.name holds text that is not UTF-8, rowids 1 in all: 3" in faults


def test_a_damaged_page_is_one_line_and_check_lists_it(copy):
    folder = copy()
    db = folder / "db.sqlite"
    con = sqlite3.connect(db)
    page, root = con.execute("PRAGMA page_size").fetchone()[0], \
        con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'operations'").fetchone()[0]
    con.close()
    blob = bytearray(db.read_bytes())
    blob[(root - 1) * page:root * page] = bytes(range(256)) * (page // 256)  # the operations table's root page
    db.write_bytes(bytes(blob))
    results = [CliRunner().invoke(main, ["ops", str(folder), "--limit", "0"]),
               CliRunner().invoke(main, ["summary", str(folder)])]
    assert any(r.exit_code == 2 and "its database is damaged" in r.output for r in results), \
        [r.output for r in results]
    faults = ttreport.check(folder)
    assert any("integrity_check" in f or "malformed" in f for f in faults), faults


TENSOR_FLIPS = 300 if STRESS else 16


@pytest.mark.parametrize("seed", range(TENSOR_FLIPS))
def test_flipped_bytes_in_a_tensor_file_are_named_by_every_reader(copy, seed):
    folder = copy()
    rng = random.Random(seed)
    file = folder / "tensors" / f"{TENSOR_ID}.pt"
    blob = bytearray(file.read_bytes())
    for _ in range(rng.choice([1, 2, 8])):
        blob[rng.randrange(len(blob))] ^= rng.randrange(1, 256)  # always a change
    file.write_bytes(bytes(blob))
    result = CliRunner().invoke(main, ["tensor", str(folder), str(TENSOR_ID)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"Error: tensor {TENSOR_ID}: {file}") and len(result.output.splitlines()) == 1
    assert any(f.startswith(f"tensor {TENSOR_ID}: {file}") for f in ttreport.check(folder))
    if seed >= 16:
        return  # a compare reads all 160 tensors (~2 s): 16 seeds show it, the rest fuzz the file reader
    compared = CliRunner().invoke(main, ["compare", str(SAMPLE), str(folder)])
    assert compared.exception is None or isinstance(compared.exception, SystemExit), compared.output
    assert compared.exit_code in (0, 2) and "ROOT CAUSE" not in compared.output  # never an op blamed for it
