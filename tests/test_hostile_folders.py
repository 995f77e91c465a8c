"""Issue 29 (hardening), received report folders as hostile input, as a new user meets them: each command that is
given the wrong thing, or a tampered copy of the sample report, answers in one line naming the value and the fix,
never a traceback or a hang, and changes nothing in the folder it refuses.

Each command runs as a user runs it: `python -m ttreport.cli` in a subprocess, with a timeout.
"""

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import received
from received import REPO, demo_copy, execute, one_line_error


def cli(*args, timeout=60) -> subprocess.CompletedProcess:
    return received.cli(*args, timeout=timeout, text=True)


@pytest.fixture
def demo(tmp_path) -> Path:
    return demo_copy(tmp_path)


# -- the store's commands given a folder ------------------------------------------------------------------------

@pytest.mark.parametrize("args, said", [
    (["history", "{r}", "--op", "ttnn.add"], "it is a folder: to read one report, `ttreport summary {r}`"),
    (["runs", "{r}"], "it is a folder"),
    (["runs", "{r}/db.sqlite"], "it is a file"),
    (["runs", "{r}/nothing-here"], "write it as postgresql://"),
])
def test_a_folder_or_file_given_for_a_store_url_is_named_with_the_fix(demo, args, said):
    # libpq's own words came out: `missing "=" after "<folder>" in connection info string`.
    err = one_line_error(cli(*(a.format(r=demo) for a in args)))
    assert "is not a store URL" in err and said.format(r=demo) in err and "connection info" not in err, err


# -- a refused folder is left as it was ---------------------------------------------------------------------

ENDLESS = ("ALTER TABLE operations RENAME TO operations_kept",
           "CREATE VIEW operations AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
           "SELECT k.* FROM operations_kept k, n")


def plant(folder: Path, kind: str, scratch: Path) -> str:
    """Put beside `folder`'s db what another copy of it left (`kind`: a WAL that deletes all but 3 ops, a hot journal
    of the same), or make its operations an endless view beside a left-over WAL; the words of its refusal."""
    if kind == "view beside a WAL":
        execute(folder, *ENDLESS)
        (folder / "db.sqlite-wal").write_bytes(bytes(100))  # any left-over WAL: the fold looks before it reads one
        return "operations is a view"
    other = Path(shutil.copytree(folder, scratch / "other"))
    mode, writes = ("WAL", "") if kind == "WAL" else \
        ("DELETE", "con.execute('UPDATE stack_traces SET stack_trace = hex(randomblob(2000))')\n")  # spills: hot
    code = ("import os, shutil, sqlite3, sys\n"
            "con = sqlite3.connect(sys.argv[1] + '/db.sqlite', isolation_level=None)\n"
            f"con.execute('PRAGMA journal_mode={mode}'); con.execute('PRAGMA wal_autocheckpoint=0')\n"
            "con.execute('PRAGMA cache_size=1'); con.execute('BEGIN')\n"
            "con.execute('DELETE FROM operations WHERE operation_id > 3')\n" + writes +
            ("con.execute('COMMIT')\n" if kind == "WAL" else "") +
            f"shutil.copy(sys.argv[1] + '/db.sqlite-{kind.lower()}', sys.argv[2] + '/db.sqlite-{kind.lower()}')\n"
            "os._exit(0)  # no close: the WAL is not checkpointed, the journal stays hot\n")
    subprocess.run([sys.executable, "-c", code, str(other), str(folder)], check=True, timeout=60)
    return "would leave 3 ops of the 66" if kind == "WAL" else "db.sqlite-journal holds a write"


def files(folder: Path) -> dict[str, str]:
    """Each file in `folder` (its subfolders too) with its bytes' hash."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("kind", ["WAL", "journal", "view beside a WAL"])
def test_a_refused_folder_is_left_as_it_was_by_every_command_that_refuses_it(demo, tmp_path, kind):
    # A refused planted WAL left a db.sqlite-shm behind (wal.fold's count of the ops with the WAL read it through
    # one), and `ttreport upgrade` read past the planted WAL into its 3 ops ("already at schema") leaving one too;
    # a view beside a left-over WAL had the WAL folded (removed) before the view was refused.
    said = plant(demo, kind, tmp_path)
    before = files(demo)
    for args in (["summary", demo], ["ops", demo], ["query", demo, "SELECT 1"], ["upgrade", demo]):
        err = one_line_error(cli(*args))
        assert said in err, (args, err)
        assert files(demo) == before, (args, sorted(set(files(demo)) ^ set(before)))
    for args in (["check", demo], ["ls", demo.parent]):
        done = cli(*args)
        assert "Traceback" not in done.stderr and files(demo) == before, (args, done.stderr[-2000:])


# -- upgrade of an older report runs none of the folder's SQL ------------------------------------------------

V0004 = REPO / "tests" / "data" / "report_v0004"  # 6 ops; its tensors, operation_arguments, ... are views
LOOP = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)"
OLD_CRAFTED = {
    # 0005 reads this view to make the table: the upgrade never ended
    "operation_arguments": ["CREATE TABLE args_kept AS SELECT * FROM operation_arguments",
                            "DROP VIEW operation_arguments",
                            f"CREATE VIEW operation_arguments AS {LOOP} SELECT a.* FROM args_kept a, n ORDER BY 1"],
    # fired by the upgrade's stamp of its versions: the upgraded report held no op
    "trigger": ["CREATE TRIGGER t AFTER INSERT ON report_metadata BEGIN DELETE FROM operations; END"],
    "operations": ["ALTER TABLE operations RENAME TO operations_kept",
                   f"CREATE VIEW operations AS {LOOP} SELECT k.* FROM operations_kept k, n"],
    "alembic_version": ["ALTER TABLE alembic_version RENAME TO alembic_kept",
                        f"CREATE VIEW alembic_version AS {LOOP} SELECT k.* FROM alembic_kept k, n ORDER BY 1"],
}
OLD_SAID = {"operation_arguments": "its view operation_arguments is not the one ttreport's migrations made",
            "trigger": "t is a trigger that ttreport's migrations did not make",
            "operations": "operations is a view where a report holds a table",
            "alembic_version": "alembic_version is a view where a report holds a table"}


@pytest.mark.parametrize("crafted", OLD_CRAFTED)
def test_upgrade_of_an_older_report_refuses_sql_its_migrations_did_not_make(tmp_path, crafted):
    folder = Path(shutil.copytree(V0004, tmp_path / "old"))
    execute(folder, *OLD_CRAFTED[crafted])
    before = files(folder)
    err = one_line_error(cli("upgrade", folder, timeout=60))
    assert OLD_SAID[crafted] in err, err
    assert files(folder) == before


def test_upgrade_of_the_older_reports_as_their_captures_wrote_them_goes_on(tmp_path):
    # The check compares with what the migrations make; a report the old ttreport wrote is upgraded as before, and
    # a user's own view under a name no migration uses stays.
    folder = Path(shutil.copytree(V0004, tmp_path / "old"))
    execute(folder, "CREATE VIEW my_matmuls AS SELECT * FROM operations WHERE name LIKE '%matmul%'")
    done = cli("upgrade", folder)
    assert done.returncode == 0 and "upgraded" in done.stdout, done.stderr[-2000:]
    con = sqlite3.connect(folder / "db.sqlite")
    assert con.execute("SELECT COUNT(*) FROM operations").fetchone()[0] == 6
    assert con.execute("SELECT COUNT(*) FROM my_matmuls").fetchone()[0] == 1
    con.close()


# -- links among SQLite's own files ---------------------------------------------------------------------------

def leave_a_wal(folder: Path) -> None:
    """A killed capture's WAL beside `folder`'s db: one op more, committed, never folded."""
    code = ("import os, sqlite3, sys\n"
            "con = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "con.execute('PRAGMA journal_mode=WAL'); con.execute('PRAGMA wal_autocheckpoint=0')\n"
            "con.execute(\"INSERT INTO operations (operation_id, name) VALUES (1000, 'ttnn.extra')\")\n"
            "os._exit(0)  # no close: the WAL is not folded\n")
    subprocess.run([sys.executable, "-c", code, str(folder / "db.sqlite")], check=True, timeout=60)


@pytest.mark.parametrize("sidecar", ["db.sqlite-wal", "db.sqlite-shm"])
def test_a_wal_or_wal_index_that_is_a_link_is_refused_and_its_target_left(demo, tmp_path, sidecar):
    # SQLite writes both in place (a fold truncates the WAL; the index is mapped and written): through a link, to a
    # file outside the folder. A linked -shm said "unable to open database file", a linked -wal that its ops were gone.
    leave_a_wal(demo)
    victim = tmp_path / "victim"
    if sidecar == "db.sqlite-wal":
        os.replace(demo / sidecar, victim)
    else:
        victim.write_bytes(b"a file of the user's" * 2000)
    (demo / "db.sqlite-shm").unlink(missing_ok=True)
    (demo / sidecar).symlink_to(victim)
    before, kept = files(demo), victim.read_bytes()
    for args in (["summary", demo], ["upgrade", demo]):
        err = one_line_error(cli(*args))
        assert f"{sidecar} is a link (to {victim})" in err and "move it out of the folder" in err, err
    done = cli("check", demo)
    assert done.returncode == 1 and f"{sidecar} is a link" in done.stdout, done.stdout
    assert files(demo) == before and victim.read_bytes() == kept


def test_a_left_over_wal_beside_a_db_that_is_a_link_is_not_folded_into_the_links_target(demo, tmp_path):
    # `ttreport ls` folded it: switching the journal mode back wrote the header of the file the link leads to.
    leave_a_wal(demo)
    os.replace(demo / "db.sqlite", tmp_path / "elsewhere.sqlite")
    (demo / "db.sqlite").symlink_to(tmp_path / "elsewhere.sqlite")
    kept = (tmp_path / "elsewhere.sqlite").read_bytes()
    done = cli("ls", demo.parent)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert (tmp_path / "elsewhere.sqlite").read_bytes() == kept
    assert (demo / "db.sqlite-wal").exists()  # the capture's last batch stays where it was


# -- damaged values a new user met -------------------------------------------------------------------------------

def test_a_schedule_nested_past_pythons_stack_is_one_line_and_check_names_it(demo):
    # summary, html and summary --json ended in a RecursionError traceback; check said ok.
    execute(demo, "INSERT OR REPLACE INTO report_metadata (key, value) VALUES ('schedule', '" + "[" * 100_000 + "')")
    for args in (["summary", demo], ["summary", demo, "--json"]):
        err = one_line_error(cli(*args))
        assert "report_metadata.schedule" in err and "is not JSON" in err, err
    done = cli("check", demo)
    assert done.returncode == 1 and "report_metadata.schedule" in done.stdout, (done.stdout, done.stderr[-2000:])


def test_check_and_tensor_name_a_tensors_folder_that_links_to_itself(demo):
    # check ended in "RuntimeError: Symlink loop" (pathlib's resolve), a traceback; `tensor` said the tensor was not
    # stored, and to capture with Config(tensors='outputs').
    shutil.rmtree(demo / "tensors")
    (demo / "tensors").symlink_to(demo / "tensors")
    done = cli("check", demo)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "is reached through a loop of links" in done.stdout, done.stdout[-2000:]
    err = one_line_error(cli("tensor", demo, 3))
    assert f"{demo / 'tensors'} is a link (to {demo / 'tensors'})" in err and "Config(" not in err, err


def test_a_device_estimate_that_is_not_a_number_shows_as_unknown(demo):
    # ops ended in "TypeError: '>=' not supported between instances of 'str' and 'float'".
    execute(demo, "UPDATE device_perf SET ideal_ns = 'x'")
    done = cli("ops", demo, "--limit", "3")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "? bw" in done.stdout or "? cmp" in done.stdout, done.stdout


def test_upgrade_never_writes_through_a_db_that_is_a_link(tmp_path):
    # `ttreport upgrade FOLDER` upgraded the file FOLDER/db.sqlite leads to, outside the folder, in place.
    elsewhere = tmp_path / "elsewhere.sqlite"
    shutil.copy(V0004 / "db.sqlite", elsewhere)
    folder = tmp_path / "received"
    folder.mkdir()
    (folder / "db.sqlite").symlink_to(elsewhere)
    kept = elsewhere.read_bytes()
    err = one_line_error(cli("upgrade", folder))
    assert f"db.sqlite is a link (to {elsewhere})" in err, err
    assert elsewhere.read_bytes() == kept and sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere.sqlite",
                                                                                              "received"]


@pytest.mark.parametrize("sidecar", ["db.sqlite-journal", "db.sqlite-wal", "db.sqlite-shm"])
def test_a_fifo_beside_the_db_is_refused_never_waited_on(demo, sidecar):
    # SQLite opens these with the db; a db.sqlite-journal that was a FIFO made every reading command, ls and check
    # wait for ever (a -wal that was one, ls folded away).
    os.mkfifo(demo / sidecar)
    before = files(demo)
    for args in (["summary", demo], ["upgrade", demo]):
        err = one_line_error(cli(*args, timeout=30))
        assert f"{sidecar} is not a regular file" in err, err
    done = cli("check", demo, timeout=30)
    assert done.returncode == 1 and f"{sidecar} is not a regular file" in done.stdout, done.stdout
    done = cli("ls", demo.parent, timeout=30)
    assert done.returncode == 0 and "unreadable" in done.stdout, done.stdout
    assert files(demo) == before and os.path.lexists(demo / sidecar)


@pytest.mark.parametrize("args, said", [
    (["diff-tensor", "{r}/tensors/no-such.pt", "{r}/tensors/3.pt"], "File '{r}/tensors/no-such.pt' does not exist"),
    (["op", "{r}", "abc"], "'abc' is not a valid integer"),
    (["no-such-command"], "No such command 'no-such-command'"),
])
def test_a_usage_error_is_one_line_naming_the_value_and_where_the_usage_is(demo, args, said):
    # click printed the usage and a "Try ... --help" line above the error: three lines.
    err = one_line_error(cli(*(a.format(r=demo) for a in args)))
    assert said.format(r=demo) in err and "--help` shows its usage" in err, err


def test_attach_refuses_a_report_with_a_trigger_its_migrations_did_not_make(demo):
    # attach's INSERT into measured_perf fired it: the report was left with no op, and attach said it had attached.
    execute(demo, "CREATE TRIGGER t AFTER INSERT ON measured_perf BEGIN DELETE FROM operations; END")
    before = files(demo)
    err = one_line_error(cli("attach", demo, REPO / "tests" / "data" / "ops_perf" / "wh_clip_encoder_2_first40.csv"))
    assert "t is a trigger that ttreport's migrations did not make" in err, err
    assert files(demo) == before


def test_merge_refuses_a_rank_whose_table_is_a_view_never_reading_it(demo, tmp_path):
    # merge read the view as it copied the rank's rows: a recursive one never ended (its half-made output stayed).
    other = Path(shutil.copytree(demo, tmp_path / "rank1"))
    execute(other, "ALTER TABLE input_tensors RENAME TO input_tensors_kept",
            f"CREATE VIEW input_tensors AS {LOOP} SELECT k.* FROM input_tensors_kept k, n")
    err = one_line_error(cli("merge", demo, other, "-o", tmp_path / "run", "--rank", f"{other}=1", timeout=60))
    assert "input_tensors is a view where a report holds a table" in err, err
    assert not (tmp_path / "run").exists()


def test_push_refuses_a_report_whose_table_is_a_view_before_reaching_any_store(demo):
    # push read report_metadata with its own connection: a recursive view in its place never ended.
    execute(demo, "ALTER TABLE report_metadata RENAME TO report_metadata_kept",
            f"CREATE VIEW report_metadata AS {LOOP} SELECT k.* FROM report_metadata_kept k, n")
    err = one_line_error(cli("push", demo, "--to", "postgresql://ci@/ttreport?host=/nonexistent-socket-dir",
                             timeout=60))
    assert "report_metadata is a view where a report holds a table" in err, err


def test_a_folder_name_with_terminal_escapes_reaches_no_terminal(demo, tmp_path):
    # summary's "report" line and compare --timing's A:/B: printed the folder's name raw: an OSC sequence in it
    # retitled the terminal (compare's value table, ls and every error escaped it already).
    named = demo.rename(tmp_path / "evil\x1b]0;retitled\x07name")
    for args in (["summary", named], ["compare", named, named, "--timing"]):
        done = cli(*args)
        assert done.returncode == 0 and "\x1b" not in done.stdout + done.stderr, (args, done.stderr[-2000:])
        assert "evil\\x1b]0;retitled\\x07name" in done.stdout, done.stdout[:500]


def test_check_quotes_a_huge_value_capped_with_its_length(demo):
    # a 4 MB status and ops_lost made `ttreport check` print 8 MB.
    execute(demo, "UPDATE report_metadata SET value = hex(zeroblob(2000000)) WHERE key = 'status'",
            "INSERT OR REPLACE INTO report_metadata (key, value) VALUES ('ops_lost', hex(zeroblob(2000000)))")
    done = cli("check", demo)
    assert done.returncode == 1 and len(done.stdout) < 10_000, len(done.stdout)
    assert "status is '000" in done.stdout and "(4,000,002 characters)" in done.stdout, done.stdout[:2000]
