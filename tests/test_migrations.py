"""The report schema's migrations: old reports upgrade and read the same; upgrade equals create_all."""

import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import ttreport
import ttreport.errors
from ttreport import NeedsUpgradeError, db

REPO = Path(__file__).resolve().parents[1]
OLD_REPORT = REPO / "tests" / "data" / "report_v0001" / "db.sqlite"

# What a TT-NN reader asks of a report; each must answer the same before and after the upgrade.
QUERIES = [
    "SELECT operation_id, name, duration FROM operations",
    "SELECT operation_id, name, value FROM operation_arguments",
    "SELECT tensor_id, shape, dtype, layout, memory_config, device_id, address, buffer_type, size FROM tensors",
    "SELECT operation_id, input_index, tensor_id FROM input_tensors",
    "SELECT operation_id, output_index, tensor_id FROM output_tensors",
    "SELECT * FROM devices",
    "SELECT operation_id, device_id, address, max_size_per_bank, buffer_type, buffer_layout FROM buffers",
    "SELECT operation_id, device_id, address, core_y, core_x, bank_id, page_index, page_address, page_size, "
    "buffer_type FROM buffer_pages",
    # Stack texts turn innermost-first in 0005 (TT-NN's order); the old report's are one frame each.
    "SELECT operation_id, rtrim(stack_trace, char(10)) FROM stack_traces",
    "SELECT operation_id, operation_name, error_type, error_message, stack_trace, timestamp FROM errors",
    "SELECT * FROM local_tensor_comparison_records",
]


def schema_of(path) -> dict:
    """Tables with their columns (name, type, not null, default, primary key), indexes, and views."""
    con = sqlite3.connect(path)
    try:
        out = {}
        for kind, name, sql in con.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"):
            if kind == "table":
                out[kind, name] = [c[1:] for c in con.execute(f"PRAGMA table_info({name})")]
            elif kind == "index":
                out[kind, name] = (sql, [c[2] for c in con.execute(f"PRAGMA index_info({name})")])
            else:
                out[kind, name] = " ".join(sql.split())
        return out
    finally:
        con.close()


def answers(path) -> dict:
    con = sqlite3.connect(path)
    try:
        return {q: sorted(con.execute(q).fetchall(), key=repr) for q in QUERIES}
    finally:
        con.close()


def test_upgrading_an_empty_database_gives_the_schema_create_all_gives(tmp_path):
    db.create(tmp_path / "created.sqlite")
    sqlite3.connect(tmp_path / "upgraded.sqlite").close()
    db.upgrade(tmp_path / "upgraded.sqlite")
    created, upgraded = schema_of(tmp_path / "created.sqlite"), schema_of(tmp_path / "upgraded.sqlite")
    assert created == upgraded
    # ttnn-visualizer looks TT-NN's tables up by type: none of them is a view.
    assert {k for k in created if k[0] == "view"} == {("view", "op_tensors"), ("view", "memory_after_op")}
    assert {("table", t) for t in ("stack_traces", "buffers", "tensors", "operation_arguments", "source_files",
                                   "tensor_lifetime", "buffer_chunks", "captured_graph", "nodes", "edges")
            } <= set(created)
    assert {k for k in created if k[0] == "trigger"} == {("trigger", "tensor_specs_update")}
    assert len([k for k in created if k[0] == "index"]) == 26  # 0009 added one, 0015 dropped one, 0016 made it again
    assert db.current_revision(tmp_path / "created.sqlite") == db.current_revision(tmp_path / "upgraded.sqlite") \
        == db.head_revision()


def test_a_capture_without_indexes_gets_them_at_close_or_on_upgrade(tmp_path):
    db.create(tmp_path / "lean.sqlite", indexes=False)
    assert not [k for k in schema_of(tmp_path / "lean.sqlite") if k[0] == "index"]
    db.upgrade(tmp_path / "lean.sqlite")  # what `ttreport upgrade` does to a report whose capture was killed
    db.create(tmp_path / "full.sqlite")
    assert schema_of(tmp_path / "lean.sqlite") == schema_of(tmp_path / "full.sqlite")


def test_the_committed_old_report_upgrades_and_reads_the_same(tmp_path):
    path = shutil.copy(OLD_REPORT, tmp_path / "db.sqlite")
    before = answers(path)
    assert db.current_revision(path) == "0001"
    db.upgrade(path)
    assert db.current_revision(path) == db.head_revision()
    assert answers(path) == before
    db.check_current(path)  # readable now
    con = sqlite3.connect(path)
    assert con.execute("SELECT COUNT(*) FROM stack_trace_texts").fetchone() == (2,)  # four ops, two distinct texts
    assert dict(con.execute("SELECT key, value FROM report_metadata WHERE key LIKE '%schema%'")) == {
        "schema_version": "2", "ttreport_schema_revision": db.head_revision()}  # TT-NN's version; ttreport's own
    assert con.execute("SELECT start_ns, parent_operation_id, file FROM operations JOIN tensors "
                       "ON tensor_id = operation_id WHERE operation_id = 1").fetchone() == (None, None, None)
    con.close()
    # the upgraded report has the schema a new report has, data aside
    db.create(tmp_path / "new.sqlite")
    assert schema_of(path) == schema_of(tmp_path / "new.sqlite")
    db.upgrade(path)  # a second upgrade is a no-op
    assert answers(path) == before


def test_reading_an_old_report_without_upgrading_says_how(tmp_path):
    path = shutil.copy(OLD_REPORT, tmp_path / "db.sqlite")
    with pytest.raises(NeedsUpgradeError, match=rf"revision 0001 .* reads {db.head_revision()}; upgrade it in "
                                                r"place with `ttreport upgrade "):
        db.check_current(path)
    assert db.current_revision(path) == "0001"  # checking changed nothing


def test_migrations_are_found_from_an_installed_wheel(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src)
    for name in ("device_sim", "ttreport", "migrations"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", str(src), "-w", str(tmp_path / "dist")],
                   check=True, cwd=tmp_path, timeout=300, capture_output=True)
    wheel = next((tmp_path / "dist").glob("ttreport-*.whl"))
    site = tmp_path / "site"
    subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)], check=True, timeout=300,
                   capture_output=True)
    report = shutil.copy(OLD_REPORT, tmp_path / "db.sqlite")
    script = (
        "import ttreport, ttreport.db, ttreport.migrations, sys\n"
        f"assert ttreport.migrations.__file__.startswith({str(site)!r}), ttreport.migrations.__file__\n"
        f"assert {str(REPO)!r} not in sys.path and not any('editable' in m for m in sys.modules)\n"
        f"ttreport.db.upgrade({str(report)!r})\n"
        f"print(ttreport.db.current_revision({str(report)!r}))\n"
    )
    # -S: the venv's .pth files (among them the editable install of this repo) are not run; its
    # packages (alembic, torch, ...) come after the wheel's on the path.
    path = os.pathsep.join([str(site), sysconfig.get_paths()["purelib"]])
    done = subprocess.run([sys.executable, "-S", "-c", script], cwd=tmp_path, env={"PYTHONPATH": path},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == db.head_revision()


SAMPLE = REPO / "sample_reports" / "demo" / "db.sqlite"


def sha256(path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_upgrade_leaves_a_current_report_byte_identical(tmp_path):
    committed = sha256(SAMPLE)
    path = shutil.copy(SAMPLE, tmp_path / "db.sqlite")
    db.upgrade(path)
    assert sha256(path) == committed
    from click.testing import CliRunner

    from ttreport.cli import main

    result = CliRunner().invoke(main, ["upgrade", str(tmp_path)])
    assert result.exit_code == 0 and "is already at schema" in result.output
    assert sha256(path) == committed and sha256(SAMPLE) == committed  # nor did anything touch the sample


@pytest.mark.parametrize("kind", ["empty", "other sqlite", "text"])
def test_upgrade_refuses_what_is_not_a_report(tmp_path, kind):
    path = tmp_path / "db.sqlite"
    if kind == "empty":
        path.touch()
    elif kind == "other sqlite":
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE notes (body TEXT)")
        con.commit()
        con.close()
    else:
        path.write_text("my notes\n")
    before = path.read_bytes()
    from click.testing import CliRunner

    from ttreport.cli import main

    result = CliRunner().invoke(main, ["upgrade", str(path)])
    assert result.exit_code == 2, result.output
    assert {"empty": "is empty (0 bytes), not a report", "other sqlite": "is a SQLite database but not a report",
            "text": "is not a SQLite database"}[kind] in result.output
    assert path.read_bytes() == before  # not one table added
    if kind == "other sqlite":
        with pytest.raises(ttreport.errors.NotAReportError):
            db.upgrade(path)  # the library refuses it too
        assert path.read_bytes() == before


def test_an_upgraded_tt_nn_report_reads_well(tmp_path):
    from click.testing import CliRunner

    from ttreport.cli import main

    shutil.copytree(OLD_REPORT.parent, tmp_path / "old")
    db.upgrade(tmp_path / "old" / "db.sqlite")
    summary = CliRunner().invoke(main, ["summary", str(tmp_path / "old")]).output
    # its ops record no depth: all count
    assert "ops     5 (12.00 ms of emulator host time in top-level ops)" in summary
    op = CliRunner().invoke(main, ["op", str(tmp_path / "old"), "2"]).output
    assert [line for line in op.splitlines() if "None" in line and "shard_spec=None" not in line] == []
    assert "duration  3.00 ms" in op and "status" not in op and "chosen by" not in op
    with ttreport.open(tmp_path / "old") as r:
        assert [o.id for o in r.operations(depth=0)] == [0, 1, 2, 3, 4]


def test_revisions_read_from_the_files_are_alembics(tmp_path):
    from alembic.script import ScriptDirectory

    walked = [s.revision for s in ScriptDirectory.from_config(db._alembic_config()).walk_revisions()]
    assert list(db.revisions()) == walked[::-1]


def test_a_newer_report_advises_a_source_checkout_too(tmp_path):
    path = shutil.copy(SAMPLE, tmp_path / "db.sqlite")
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE alembic_version SET version_num = '9999'")
    con.close()
    with pytest.raises(ttreport.NewerSchemaError, match=r"`git pull` then `pip install -e \.` in a source "
                                                        r"checkout, else `pip install --upgrade ttreport`"):
        db.check_current(path)


def test_upgrading_a_large_old_report_prints_each_step(tmp_path):
    from bench.upgrade import make_v0001

    path = tmp_path / "db.sqlite"
    make_v0001(path, 2000)
    lines = []
    db.upgrade(path, progress=lines.append)
    revs = db.revisions()
    assert [line.split(":")[0] for line in lines] == [f"{a} -> {b}" for a, b in zip(revs, revs[1:])]
    assert db.is_current(path)


def test_a_report_tt_nn_wrote_without_an_alembic_revision_upgrades(tmp_path):
    path = shutil.copy(OLD_REPORT, tmp_path / "db.sqlite")
    con = sqlite3.connect(path)
    with con:
        con.execute("DROP TABLE alembic_version")  # TT-NN's own reports have none: only its tables
    con.close()
    before = answers(path)
    assert db.current_revision(path) is None
    db.upgrade(path)
    assert db.current_revision(path) == db.head_revision()
    assert answers(path) == before


def test_schema_version_is_tt_nns_and_the_revision_has_its_own_key(tmp_path):
    """report_metadata.schema_version is TT-NN's database version (ttnn/graph_report.py's DATABASE_SCHEMA_VERSION,
    2), which ttnn-visualizer checks; ttreport's alembic revision is ttreport_schema_revision. A report from before
    (its schema_version the revision, no revision key) still opens, and its upgrade writes both."""
    db.create(tmp_path / "new.sqlite")
    con = sqlite3.connect(tmp_path / "new.sqlite")
    meta = dict(con.execute("SELECT key, value FROM report_metadata"))
    con.close()
    assert meta == {"schema_version": "2", "ttreport_schema_revision": db.head_revision()}
    assert db.is_current(tmp_path / "new.sqlite")
    old = shutil.copy(tmp_path / "new.sqlite", tmp_path / "old.sqlite")
    con = sqlite3.connect(old)
    with con:  # as every report before this key was written
        con.execute("DELETE FROM report_metadata WHERE key = 'ttreport_schema_revision'")
        con.execute("UPDATE report_metadata SET value = ? WHERE key = 'schema_version'", (db.head_revision(),))
    con.close()
    db.check_current(old)  # readable as it is: the revision readers check is alembic's own
    assert not db.is_current(old)
    db.upgrade(old)
    con = sqlite3.connect(old)
    assert dict(con.execute("SELECT key, value FROM report_metadata")) == meta
    con.close()
    assert db.is_current(old)
