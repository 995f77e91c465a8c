"""Config(overwrite=True) replaces a report that ttreport made, and deletes nothing else.

A folder that only looks like a report (any file named db.sqlite) is refused, naming the folder and
what to do; a real report is replaced, and the user's own files beside it stay.
"""

import sqlite3

import pytest

import device_sim as ttnn
import ttreport
from ttreport import Config


def make_users_folder(folder):
    folder.mkdir()
    (folder / "db.sqlite").write_text("hi")  # 2 bytes, as in the report of the data loss
    (folder / "my_notes.txt").write_text("keep me")
    (folder / "subdir").mkdir()
    (folder / "subdir" / "deep.txt").write_text("keep me too")


def tree(folder) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_overwrite_refuses_a_folder_whose_db_sqlite_is_not_a_report(tmp_path):
    folder = tmp_path / "mine"
    make_users_folder(folder)
    before = tree(folder)
    with pytest.raises(ttreport.ReportExistsError) as e:
        ttreport.capture(folder, config=Config(overwrite=True)).start()
    assert str(folder) in str(e.value) and "not a SQLite database" in str(e.value)
    assert "capture into another folder" in str(e.value)
    assert tree(folder) == before


def test_overwrite_refuses_a_sqlite_database_that_ttreport_did_not_make(tmp_path):
    folder = tmp_path / "other-db"
    folder.mkdir()
    con = sqlite3.connect(folder / "db.sqlite")
    con.execute("CREATE TABLE accounts (id INTEGER, balance REAL)")
    con.execute("INSERT INTO accounts VALUES (1, 10.5)")
    con.commit()
    con.close()
    before = tree(folder)
    with pytest.raises(ttreport.ReportExistsError, match="no ttreport report_metadata"):
        ttreport.capture(folder, config=Config(overwrite=True)).start()
    assert tree(folder) == before


def test_overwrite_replaces_a_report_and_keeps_the_users_files_beside_it(tmp_path, device):
    folder = tmp_path / "r"
    with ttreport.capture(folder, config=Config(tensors="outputs")):
        ttnn.ones((32, 32), device=device) + 1
    assert list((folder / "tensors").iterdir())
    (folder / "notes.txt").write_text("keep me")
    (folder / "plots").mkdir()
    (folder / "plots" / "a.png").write_bytes(b"\x89PNG")
    (folder / "tensors" / "README").write_text("mine")
    with ttreport.capture(folder, config=Config(overwrite=True)) as again:
        pass
    with ttreport.open(again.path) as r:
        assert r.count_operations() == 0 and r.status == "complete"
    assert (folder / "notes.txt").read_text() == "keep me"
    assert (folder / "plots" / "a.png").read_bytes() == b"\x89PNG"
    assert [p.name for p in (folder / "tensors").iterdir()] == ["README"]  # the old tensor files are gone


def test_overwrite_replaces_a_report_left_by_a_killed_capture(tmp_path, device):
    folder = tmp_path / "killed"
    with ttreport.capture(folder) as cap:
        ttnn.ones((32, 32), device=device)
    # What SIGKILL leaves: the status never moved on from "running" (test_crash kills real processes).
    con = sqlite3.connect(cap.db_path)
    con.execute("UPDATE report_metadata SET value = 'running' WHERE key = 'status'")
    con.commit()
    con.close()
    with ttreport.capture(folder, config=Config(overwrite=True)):
        pass
    with ttreport.open(folder) as r:
        assert r.status == "complete" and r.count_operations() == 0


def test_a_root_that_cannot_be_written_is_one_line_naming_the_folder(tmp_path):
    with pytest.raises(ttreport.ReportPathError, match=r"cannot create the report folder /proc/x .*Config\(root="):
        ttreport.capture("x", config=Config(root="/proc")).start()
