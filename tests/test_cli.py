"""The ttreport command: every command on a real captured report, its help, and its errors."""

import csv
import io
import json
import subprocess
import sys
import textwrap

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport import db
from ttreport.cli import main


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """A small real capture: weights made before it, an L1 linear, a default-placed add, a failing reshape."""
    root = tmp_path_factory.mktemp("reports")
    g = torch.Generator().manual_seed(0)
    device = ttnn.open_device(0)
    try:
        x = ttnn.from_torch(torch.randn(32, 32, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        w = ttnn.from_torch(torch.randn(32, 32, generator=g), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device)
        with ttreport.capture("small", config=ttreport.Config(root=root, tensors="all")) as handle:
            y = ttnn.linear(x, w, memory=ttnn.L1)
            z = y + x  # L1 + DRAM: the inputs disagree, so the default (DRAM) places it
            with pytest.raises(RuntimeError, match="Invalid arguments to reshape"):
                ttnn.reshape(z, (3, 7))
        ids = {"x": x.tensor_id, "w": w.tensor_id, "y": y.tensor_id, "z": z.tensor_id}
    finally:
        ttnn.close_device(device)
    with ttreport.open(handle.path) as r:
        ops = {o.name: o.id for o in r.operations()}
    return {"path": handle.path, "root": root, "tensors": ids, "ops": ops}


@pytest.mark.parametrize("name", sorted(main.commands))
def test_every_command_has_help_with_an_example(name):
    command = main.commands[name]
    assert command.help and len(command.help.split()) > 5, f"`ttreport {name}` has no help text"
    result = invoke(name, "--help")
    assert result.exit_code == 0
    assert "Example: ttreport " in result.output, f"`ttreport {name} --help` shows no Example: line"


def test_ls_lists_reports_under_a_root(captured):
    result = invoke("ls", captured["root"])
    assert result.exit_code == 0
    header, _, row = result.output.splitlines()[:3]
    assert header.split() == ["name", "ops", "status", "size", "started"]
    assert row.split()[:3] == ["small", "3", "complete"]


def test_ops_shows_ids_names_durations_and_where_outputs_live(captured):
    result = invoke("ops", captured["path"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split()[1] for line in lines[2:]] == ["ttnn.linear", "ttnn.add", "ttnn.reshape"]  # linear: one op
    linear = lines[2]
    assert f"{captured['tensors']['y']}:[32, 32] BFLOAT16 L1@0x" in linear


def test_ops_indents_an_op_under_the_op_that_called_it(tmp_path):
    from test_report import _write_report  # its linear (op 2) calls a matmul (op 3), as a composite op does

    lines = invoke("ops", _write_report(tmp_path / "r")).output.splitlines()
    assert [line.split()[1] for line in lines[2:]] == ["ttnn.from_torch", "ttnn.linear", "ttnn.matmul", "ttnn.add"]
    assert "    ttnn.matmul" in lines[4] and "    ttnn.linear" not in lines[3]


def test_ops_filters_sorts_and_limits(captured):
    lines = invoke("ops", captured["path"], "--name", "add").output.splitlines()
    assert len(lines) == 3 and lines[2].split()[:2] == ["2", "ttnn.add"]
    lines = invoke("ops", captured["path"], "--sort", "duration", "--limit", "2").output.splitlines()
    assert len(lines) == 5 and lines[4] == "(2 of 3 ops; --limit 0 shows all)"
    with ttreport.open(captured["path"]) as r:
        slowest = r.sql("SELECT operation_id FROM operations ORDER BY duration DESC LIMIT 2")
    assert [int(line.split()[0]) for line in lines[2:4]] == [row["operation_id"] for row in slowest]


def test_op_shows_arguments_tensors_memory_and_stack_trace(captured):
    result = invoke("op", captured["path"], captured["ops"]["ttnn.linear"])
    out = result.output
    assert result.exit_code == 0, out
    assert "op 1: ttnn.linear" in out
    assert "calls " not in out  # one op, as TT-NN's linear: no nested matmul or add
    assert "memory_config = " in out
    assert "BFLOAT8_B" in out and "L1 at 0x" in out and "(chosen by: argument)" in out
    assert "made before the capture" in out  # the weight
    assert "test_cli.py" in out  # the user's frame, not the library's


def test_op_shows_the_error_of_an_op_that_raised(captured):
    out = invoke("op", captured["path"], captured["ops"]["ttnn.reshape"]).output
    assert "status    error" in out
    assert "error: RuntimeError: TT_FATAL @ device_sim/ops/core.py: new_volume == old_volume" in out


def test_query_prints_a_table_json_or_csv(captured):
    sql = "SELECT operation_id, name FROM operations WHERE depth = 0 ORDER BY operation_id"
    table = invoke("query", captured["path"], sql).output.splitlines()
    assert table[0].split() == ["operation_id", "name"]
    assert table[2].split() == ["1", "ttnn.linear"]
    rows = json.loads(invoke("query", captured["path"], sql, "--json").output)
    assert rows[0] == {"operation_id": 1, "name": "ttnn.linear"}
    assert list(csv.reader(io.StringIO(invoke("query", captured["path"], sql, "--csv").output)))[:2] == [
        ["operation_id", "name"], ["1", "ttnn.linear"]]
    named = invoke("query", captured["path"], "SELECT name FROM operations WHERE operation_id = :id", "-p", "id", "2")
    assert named.output.splitlines()[2] == "ttnn.add"


@pytest.mark.parametrize("sql", ["DELETE FROM operations", "DROP TABLE devices", "INSERT INTO errors DEFAULT VALUES"])
def test_query_refuses_writes_with_one_line_and_exit_2(captured, sql):
    result = invoke("query", captured["path"], sql)
    assert result.exit_code == 2
    assert result.output.startswith("Error: reports are read-only") and result.output.count("\n") == 1
    assert "Traceback" not in result.output


def test_summary_shows_time_by_name_peaks_errors_and_status(captured):
    out = invoke("summary", captured["path"]).output
    assert "status  complete" in out
    assert "ops     3" in out
    for name in ("ttnn.linear", "ttnn.add", "ttnn.reshape"):
        assert name in out
    assert "peak L1 allocated (bank-rounded, all banks)  " in out and "peak DRAM in buffers (their own sizes)  " in out
    # A long error line is cut in its middle (the fix at its end stays): its start and its end are shown, whatever
    # the tensor id's digits (a 5-digit id in a full run made the line long enough to cut).
    assert "errors    1" in out and "RuntimeError: TT_FATAL: Invalid arguments to reshape" in out
    assert "of shape [32, 32] (1024 elements) to [3, 7]" in out


def test_tensor_shows_spec_users_and_stats(captured):
    y = captured["tensors"]["y"]
    out = invoke("tensor", captured["path"], y).output
    assert f"tensor {y}: Shape([32, 32]) DataType.BFLOAT16 Layout.TILE" in out
    assert "L1 at 0x" in out
    assert "made by op 1" in out  # the linear
    assert "used by op 2 (ttnn.add)" in out
    with ttreport.open(captured["path"]) as r:
        v = r.load_tensor(y).double()
    assert f"numel 1024, min {v.min().item():.6g}, max {v.max().item():.6g}, mean {v.mean().item():.6g}" in out


def test_a_small_tensor_in_interleaved_memory_names_its_bank_rounding(captured):
    # x is [32, 32] bfloat16 in DRAM: one 2 KiB tile, and an interleaved buffer takes a page in each bank.
    x = captured["tensors"]["x"]
    with ttreport.open(captured["path"]) as r:
        t = r.tensor(x)
        per_bank, banks = r.per_bank_bytes(t), r.banks("DRAM")
    assert (t.size, per_bank, banks) == (2048, 2048, 12)  # device_sim's 12 DRAM banks, found from the report
    out = invoke("tensor", captured["path"], x).output
    assert ("DRAM at 0x" in out and "2.0 KiB; allocated 24.0 KiB (bank rounding: an interleaved buffer takes "
            "2.0 KiB in each of 12 banks)") in out
    op = invoke("op", captured["path"], captured["ops"]["ttnn.add"]).output
    assert "allocated (bank rounding: each buffer takes whole pages in each of its banks)" in op


@pytest.mark.parametrize("args, message", [
    (["ops", "no/such/report"], "no report at no/such/report"),
    (["ls", "no/such/root"], "no/such/root does not exist"),
    (["op", "{path}", "999"], "no operation 999"),
    (["tensor", "{path}", "999999"], "no tensor 999999"),
    (["query", "{path}", "SELECT * FROM nope"], "no such table: nope"),
    (["query", "{path}", "SELECT :x"], "-p NAME VALUE"),
    (["ops", "{path}", "--sort", "size"], "Invalid value for '--sort'"),
])
def test_bad_input_is_one_clear_line_and_exit_2(captured, args, message):
    result = invoke(*[a.format(path=captured["path"]) for a in args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_an_old_report_asks_for_upgrade_and_upgrade_fixes_it(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    db.upgrade(old / "db.sqlite", "0001")  # TT-NN's tables only: what the first revision made
    result = invoke("summary", old)
    assert result.exit_code == 2 and f"ttreport upgrade {old}" in result.output
    assert "needs upgrade" in invoke("ls", tmp_path).output
    result = invoke("upgrade", old)
    assert result.exit_code == 0 and f"upgraded {old}: schema 0001 -> {db.head_revision()}" in result.output
    assert invoke("summary", old).exit_code == 0
    assert "already at schema" in invoke("upgrade", old).output


def test_run_captures_an_existing_ttnn_script(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(textwrap.dedent("""
        import sys
        import torch
        import ttnn

        device = ttnn.open_device(device_id=0)
        a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE_LAYOUT, device=device,
                            memory_config=ttnn.L1_MEMORY_CONFIG)
        b = ttnn.relu(ttnn.add(a, a))
        print("ran with", sys.argv[1:], ttnn.to_torch(b)[0, 0].item())
        ttnn.close_device(device)
    """))
    result = subprocess.run(
        [sys.executable, "-m", "ttreport.cli", "run", "--name", str(tmp_path / "out"), str(script), "--flag", "x"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "ran with ['--flag', 'x'] 2.0" in result.stdout
    assert f"report: {tmp_path / 'out'}" in result.stdout
    with ttreport.open(tmp_path / "out") as r:
        assert [o.name for o in r.operations(depth=0)] == ["ttnn.from_torch", "ttnn.add", "ttnn.relu",
                                                          "ttnn.to_torch"]


def test_run_passes_on_the_scripts_failure(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("import ttnn\nraise SystemExit(3)\n")
    result = subprocess.run([sys.executable, "-m", "ttreport.cli", "run", "--name", str(tmp_path / "b"), str(script)],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 3
    assert f"report: {tmp_path / 'b'}" in result.stderr


def test_run_prints_the_message_a_script_exits_with_as_python_does(tmp_path):
    script = tmp_path / "usage.py"
    script.write_text("import ttnn\nimport sys\nsys.exit('usage: model.py --batch N')\n")
    result = subprocess.run([sys.executable, "-m", "ttreport.cli", "run", "--name", str(tmp_path / "u"), str(script)],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == "usage: model.py --batch N", result.stderr


def test_run_shows_the_scripts_traceback_and_keeps_its_error_in_the_report(tmp_path):
    script = tmp_path / "raises.py"
    script.write_text("import torch\nimport ttnn\nd = ttnn.open_device(0)\n"
                      "a = ttnn.from_torch(torch.ones(4, 4), device=d)\nttnn.reshape(a, (3, 3))\n")
    result = subprocess.run([sys.executable, "-m", "ttreport.cli", "run", "--name", str(tmp_path / "r"), str(script)],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1].startswith(f'  File "{script}", line 5')  # the script's frame first, not ttreport's
    assert "ttnn.reshape: cannot reshape" in result.stderr and "RuntimeError: TT_FATAL" in result.stderr
    with ttreport.open(tmp_path / "r") as r:
        assert r.status == "error"
        assert [(e.operation_name, e.error_type) for e in r.errors()] == [("ttnn.reshape", "RuntimeError")]


def test_run_overwrite_replaces_the_named_report_and_traces_start_at_the_script(tmp_path):
    script = tmp_path / "model.py"
    script.write_text("import torch\nimport ttnn\n\n\ndef block(a):\n    return ttnn.relu(a)  # the op's line\n\n\n"
                      "d = ttnn.open_device(0)\nx = ttnn.from_torch(torch.ones(4, 4), device=d)\nblock(x)\n"
                      "raise RuntimeError('the model broke')\n")

    def run(*options):
        return subprocess.run([sys.executable, "-m", "ttreport.cli", "run", "--name", str(tmp_path / "r"), *options,
                               str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)

    assert run().returncode == 1
    again = run()
    assert again.returncode == 2 and "--overwrite" in again.stderr and "Traceback" not in again.stderr
    assert run("--overwrite").returncode == 1  # the script's own failure, in a new report
    with ttreport.open(tmp_path / "r") as r:
        relu = r.operations("relu")[0]
        frames = [line for line in relu.stack_trace.splitlines() if line.lstrip().startswith("File ")]
        # The script's frames only: not click's, the console script's, runpy's or ttreport's.
        assert sorted(frames) == sorted([f'  File "{script}", line 11, in <module>',
                                         f'  File "{script}", line 6, in block']), frames  # either order
        [error] = [e for e in r.errors() if e.operation_id is None]
        assert error.error_type == "RuntimeError" and error.message == "the model broke"
        assert error.stack_trace.splitlines()[1] == f'  File "{script}", line 12, in <module>'


@pytest.mark.parametrize("folder", ["run?1", "a#b", "50% done"])
def test_a_report_whose_path_holds_uri_characters_reads_and_upgrades(captured, tmp_path, folder):
    import shutil

    copy = tmp_path / folder
    shutil.copytree(captured["path"], copy)
    summary = invoke("summary", copy)
    assert summary.exit_code == 0 and "ttnn.linear" in summary.output, summary.output
    result = invoke("upgrade", copy)
    assert result.exit_code == 0, result.output
    assert db.is_current(copy / "db.sqlite")


def test_every_command_that_reads_a_report_takes_run_and_a_run_needs_a_store_url(captured):
    # --run is each reading command's own click option (ttreport.store.cli.takes_runs): in its help, and a --run
    # with no store URL for it is a one-line error naming both counts (the URLs themselves need a server:
    # tests/test_store.py).
    readers = sorted(n for n, c in main.commands.items() if any(p.name == "runs" for p in c.params))
    assert {"summary", "ops", "op", "query", "compare", "html", "merge"} <= set(readers), readers
    assert not {"push", "runs", "history", "run", "ls", "import", "demo", "diff-tensor"} & set(readers), readers
    assert "--run NAME" in invoke("summary", "--help").output
    result = CliRunner().invoke(main, ["summary", str(captured["path"]), "--run", "nightly-1"])
    assert result.exit_code == 2
    assert "0 store URL(s) and 1 --run: give one --run NAME after each store URL" in result.output, result.output


def test_upgrade_takes_no_run_and_refuses_a_store_in_one_line_with_its_password_hidden():
    # A store's run folder is a cache built at this version's schema: upgrading it would reach neither the store nor
    # a later read (as attach), and the help says why instead of offering --run.
    assert "runs" not in {p.name for p in main.commands["upgrade"].params}
    assert "never a store's run" in " ".join(invoke("upgrade", "--help").output.split())
    result = invoke("upgrade", "postgresql://me:hunter2@db/ttreport")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "is a store" in result.output and "hunter2" not in result.output
    assert "No such option '--run'" in invoke("upgrade", "postgresql://db/ttreport", "--run", "nightly-1").output
    assert "nothing to repair" in " ".join(invoke("check", "--help").output.split())
