"""The schema as SQL (ttreport/schema_sql.py): what db.create runs is what schema.py's metadata and alembic make."""

import sqlite3
import subprocess
import sys
from pathlib import Path

from ttreport import db, schema_sql

REPO = Path(__file__).resolve().parents[1]


def test_the_schema_script_is_what_schema_py_creates():
    # Fails after a change to schema.py until `.venv/bin/python -m ttreport.db > ttreport/schema_sql.py` is run.
    assert Path(schema_sql.__file__).read_text() == db.schema_sql_text()


def test_creating_a_report_imports_neither_sqlalchemy_nor_alembic(tmp_path):
    code = ("import sys; from ttreport import db; db.create(sys.argv[1]); "
            "print(sorted(m for m in ('sqlalchemy', 'alembic') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "db.sqlite")], cwd=REPO, capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.strip() == "[]"
    assert db.current_revision(tmp_path / "db.sqlite") == db.head_revision()
    assert db.is_current(tmp_path / "db.sqlite")


def test_a_capture_imports_neither_sqlalchemy_nor_alembic(tmp_path):
    # schema.py's metadata imports SQLAlchemy (0.2-0.7 s of a cold start): the capture reads schema_sql instead
    code = ("import sys, ttreport; cap = ttreport.capture(sys.argv[1]).start(); "
            "print(sorted(m for m in ('sqlalchemy', 'alembic') if m in sys.modules)); cap.stop()")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r")], cwd=REPO, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert out.splitlines()[-1] == "[]"


def test_the_schema_scripts_columns_are_schema_pys():
    from ttreport import schema

    assert {t.name: tuple(c.name for c in t.c) for t in schema.metadata.sorted_tables} == schema_sql.COLUMNS


def test_a_second_create_on_the_same_file_keeps_one_revision_row(tmp_path):
    db.create(tmp_path / "db.sqlite", indexes=False)
    db.create(tmp_path / "db.sqlite")
    con = sqlite3.connect(tmp_path / "db.sqlite")
    try:
        assert con.execute("SELECT version_num FROM alembic_version").fetchall() == [(db.head_revision(),)]
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    finally:
        con.close()
    assert set(schema_sql.INDEXES) <= names


def test_a_new_report_is_a_whole_database_with_the_indexes_asked_for(tmp_path):
    db.create(tmp_path / "lean.sqlite", indexes=True, skip=db.LATE_INDEXES)
    con = sqlite3.connect(tmp_path / "lean.sqlite")
    try:
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert con.execute("PRAGMA journal_mode").fetchone() == ("delete",)  # the writer turns WAL on itself
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
    finally:
        con.close()
    assert names == {n for n in schema_sql.INDEXES if n not in db.LATE_INDEXES}
    db.create(tmp_path / "full.sqlite")
    db.create(tmp_path / "again.sqlite")  # the same bytes as the first (made once per process)
    assert (tmp_path / "full.sqlite").read_bytes() == (tmp_path / "again.sqlite").read_bytes()
    assert db.is_current(tmp_path / "full.sqlite") and not db.is_current(tmp_path / "lean.sqlite")


def test_create_writes_the_metadata_it_is_given_as_text(tmp_path):
    facts = {"status": "running", "rank": 0, "started_at": "2026-12-05T04:00:00"}
    for name in ("new.sqlite", "again.sqlite"):
        db.create(tmp_path / name, metadata=facts)
    db.create(tmp_path / "again.sqlite", metadata={"status": "complete"})  # there already: the statements route
    for name, status in (("new.sqlite", "running"), ("again.sqlite", "complete")):
        con = sqlite3.connect(tmp_path / name)
        try:
            rows = dict(con.execute("SELECT key, value FROM report_metadata WHERE key IN ('status', 'rank')"))
        finally:
            con.close()
        assert rows == {"status": status, "rank": "0"}
    assert db.is_current(tmp_path / "new.sqlite")
