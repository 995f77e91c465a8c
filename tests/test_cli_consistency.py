"""Issue 34: the reading commands behave alike. Every one takes --json; every output path whose folder is missing
is refused the same way; an empty result says why; `ls` finds the reports a user made; the store's history and
runs say what is true."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport import store
from ttreport.cli import main

TIMEOUT_S = 120  # a subprocess that imports torch and reads a small report takes ~5 s on 2 busy cores


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def cli(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "ttreport.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT_S, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """A small real capture with stored tensors: a matmul and an add."""
    root = tmp_path_factory.mktemp("reports")
    g = torch.Generator().manual_seed(0)
    device = ttnn.open_device(0)
    try:
        x = ttnn.from_torch(torch.randn(32, 64, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        w = ttnn.from_torch(torch.randn(64, 32, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        with ttreport.capture("small", config=ttreport.Config(root=root, tensors="all")) as handle:
            y = ttnn.matmul(x, w)
            ttnn.add(y, y)
    finally:
        ttnn.close_device(device)
    with ttreport.open(handle.path) as r:
        ops = {o.name: o.id for o in r.operations()}
    return {"path": handle.path, "root": root, "ops": ops, "tensor": y.tensor_id}


# -- --json on every reading command ------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["summary", "ops", "op", "tensor", "ls", "check", "whatif"])
def test_every_reading_command_prints_json_with_a_flag(captured, command):
    path = captured["path"]
    args = {"summary": [path], "ops": [path], "op": [path, captured["ops"]["ttnn.matmul"]],
            "tensor": [path, captured["tensor"]], "ls": [captured["root"]], "check": [path],
            "whatif": [path, "--tensor", captured["tensor"], "--memory", "L1"]}[command]
    result = invoke(command, *args, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)  # the whole of stdout is one JSON document
    assert data, f"`ttreport {command} --json` printed an empty document"


def test_compare_json_without_a_file_prints_to_stdout_and_with_one_still_writes_it(captured, tmp_path):
    path = captured["path"]
    result = invoke("compare", path, path, "--timing", "--json")
    assert result.exit_code == 0, result.output
    assert "totals" in json.loads(result.output)
    result = invoke("compare", path, path, "--timing", "--json", tmp_path / "t.json")
    assert result.exit_code == 0, result.output
    assert "totals" in json.loads((tmp_path / "t.json").read_text())


# -- output paths: a missing folder is refused the same way everywhere ----------------------------------------


def output_commands(path, missing: Path):
    return {
        "trace": ["trace", path, "-o", missing / "t.json"],
        "html": ["html", path, "-o", missing / "t.html"],
        "perf-csv": ["perf-csv", path, missing],
        "merge": ["merge", path, "-o", missing / "merged"],
        "compare --json": ["compare", path, path, "--json", missing / "c.json"],
        "compare --csv": ["compare", path, path, "--csv", missing / "c.csv"],
        "compare --timing --json": ["compare", path, path, "--timing", "--json", missing / "c.json"],
    }


@pytest.mark.parametrize("name", list(output_commands("r", Path("m"))))
def test_an_output_in_a_missing_folder_is_refused_in_one_line(captured, tmp_path, name):
    missing = tmp_path / "no" / "such"
    result = invoke(*output_commands(captured["path"], missing)[name])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert "does not exist" in lines[0] and "mkdir -p" in lines[0], lines[0]
    assert not (tmp_path / "no").exists(), f"`ttreport {name}` made the folder it was given"


@pytest.mark.parametrize("name", list(output_commands("r", Path("m"))))
def test_an_output_under_a_file_is_refused_without_offering_mkdir(captured, tmp_path, name):
    # "the folder a.txt is not a folder; make it first (mkdir -p a.txt)": a fix that fails as well.
    (tmp_path / "a.txt").write_text("mine\n")
    result = invoke(*output_commands(captured["path"], tmp_path / "a.txt")[name])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert "a.txt is a file, not a folder" in lines[0] and "mkdir" not in lines[0], lines[0]
    assert (tmp_path / "a.txt").read_text() == "mine\n"


# -- empty results say why ------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["ops", "{r}"], ["compare", "{r}", "{r}", "--timing"],
                                  ["whatif", "{r}", "--tensor", "{t}", "--memory", "L1"]])
def test_a_negative_limit_is_refused_as_htmls_is(captured, args):
    # `ops --limit -5` listed every op and `whatif --limit -2` said "-2 of 1 changed ops": Python's slice of -N.
    done = cli(*(a.format(r=captured["path"], t=captured["tensor"]) for a in args), "--limit", "-1")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "Invalid value for '--limit': -1 is not in the range x>=0" in done.stderr, done.stderr


def test_ops_with_a_name_that_matches_nothing_names_the_closest(captured):
    result = invoke("ops", captured["path"], "--name", "matmull")
    assert result.exit_code == 2, result.output
    assert "'matmull'" in result.output and "ttnn.matmul" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1


def test_ops_with_a_real_name_but_no_top_level_call_says_so(captured):
    # a name that matches, but no op at depth 0 under it: not a typo, an explained empty list
    result = invoke("ops", captured["path"], "--name", "matmul", "--sort", "duration")
    assert result.exit_code == 0 and "ttnn.matmul" in result.output


# -- ls finds every report a user made ----------------------------------------------------------------------


@pytest.fixture
def project(tmp_path, captured):
    """A project folder: a pyproject.toml, a ttreport report and a TT-NN logging report under generated/."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    shutil.copytree(captured["path"], tmp_path / "generated" / "ttreport" / "reports" / "mine")
    shutil.copytree(captured["path"], tmp_path / "generated" / "ttnn" / "reports" / "1234")
    (tmp_path / "src").mkdir()
    return tmp_path


def test_ls_without_a_folder_lists_ttreport_and_ttnn_reports_from_the_project_root(project):
    result = cli("ls", cwd=project / "src")  # from a subfolder: the project root's generated/ is found
    assert result.returncode == 0, result.stderr
    assert "mine" in result.stdout and "1234" in result.stdout, result.stdout


def test_ls_of_a_folder_looks_into_its_subfolders(project):
    result = cli("ls", ".", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "generated/ttreport/reports/mine" in result.stdout, result.stdout
    assert "generated/ttnn/reports/1234" in result.stdout, result.stdout


def test_summary_of_a_folder_without_a_report_points_at_an_ls_that_finds_them(project):
    result = cli("summary", ".", cwd=project)
    assert result.returncode == 2
    suggested = result.stderr.split("`")[1]  # the command the error suggests, between backticks
    assert suggested.startswith("ttreport ls"), result.stderr
    listed = cli(*suggested.split()[1:], cwd=project)
    assert "mine" in listed.stdout, listed.stdout


# -- the store: history names what is unknown, runs' help is true -------------------------------------------


@pytest.fixture
def url(postgres_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("TTREPORT_STORE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "tensor-store").mkdir()
    return f"{postgres_cluster.new_database()}&tensors={tmp_path / 'tensor-store'}"


def test_history_with_an_unknown_shape_blames_the_shape_and_lists_the_valid_ones(url, captured):
    store.push(captured["path"], url)
    result = invoke("history", url, "--op", "ttnn.matmul", "--shape", "1x32x64")
    assert result.exit_code == 2, result.output
    assert "shape 1x32x64" in result.output and "shapes: 32x64" in result.output, result.output
    assert "op names are" not in result.output, result.output  # the op is known: not its name's fault
    result = invoke("history", url, "--op", "ttnn.matmull")
    assert result.exit_code == 2 and "ttnn.matmul" in result.output, result.output


def test_runs_help_says_the_order_it_lists_in():
    # runs lists by run id, which is push order; a run pushed late may have started first
    help_text = " ".join(invoke("runs", "--help").output.split())
    assert "oldest first" not in help_text and "pushed" in help_text, help_text


# -- the reading API: shapes as ints, durations as whole nanoseconds -----------------------------------------


def test_a_tensors_shape_is_a_tuple_of_ints_with_the_text_beside_it(captured):
    with ttreport.open(captured["path"]) as r:
        t = r.tensor(captured["tensor"])
        assert t.shape == (32, 32) and t.shape_text == "Shape([32, 32])", (t.shape, t.shape_text)
        assert all(type(d) is int for d in t.shape)
    data = json.loads(invoke("tensor", captured["path"], captured["tensor"], "--json").output)
    assert data["shape"] == [32, 32] and data["shape_text"] == "Shape([32, 32])"


def test_an_ops_duration_in_whole_nanoseconds_is_its_clock_difference(captured):
    with ttreport.open(captured["path"]) as r:
        for o in r.operations():
            assert type(o.duration_ns) is int and o.duration_ns == o.end_ns - o.start_ns > 0
            assert o.duration_ns == pytest.approx(o.duration * 1e9, abs=1)
    rows = json.loads(invoke("ops", captured["path"], "--json").output)
    assert all(type(row["duration_ns"]) is int for row in rows)


def test_run_from_a_subfolder_writes_under_the_project_roots_generated(project):
    (project / "src" / "model.py").write_text("print('ran')\n")
    result = cli("run", "--name", "from-src", "model.py", cwd=project / "src")
    assert result.returncode == 0, result.stderr
    assert (project / "generated" / "ttreport" / "reports" / "from-src" / "db.sqlite").is_file(), result.stdout
    assert not (project / "src" / "generated").exists()
    listed = cli("ls", cwd=project / "src")  # and every reader finds it from there, by name too
    assert "from-src" in listed.stdout, listed.stdout
    assert cli("summary", "from-src", cwd=project / "src").returncode == 0


def test_compare_with_an_ops_pattern_that_matches_nothing_names_the_closest(captured):
    result = invoke("compare", captured["path"], captured["path"], "--timing", "--ops", "matmull")
    assert result.exit_code == 2 and "--ops 'matmull'" in result.output and "ttnn.matmul" in result.output, \
        result.output


def test_ops_top_level_that_hides_every_op_of_the_name_says_so(tmp_path):
    device = ttnn.open_device(0)
    try:
        x = ttnn.from_torch(torch.randn(1, 1, 32, 64), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
        with ttreport.capture(tmp_path / "glu") as handle:
            ttnn.glu(x)  # TT-NN's composite: its slices and multiply are nested under it
    finally:
        ttnn.close_device(device)
    with ttreport.open(handle.path) as r:
        nested = [row["name"] for row in r.sql("SELECT name FROM operations GROUP BY name HAVING MIN(depth) > 0")]
    assert nested, "ttnn.glu recorded no nested op"
    result = invoke("ops", handle.path, "--name", nested[0], "--top-level")
    assert result.exit_code == 0 and "no top-level op" in result.output and "--top-level" in result.output, \
        result.output


def test_the_summarys_durations_in_whole_nanoseconds_add_up_exactly(captured):
    with ttreport.open(captured["path"]) as r:
        ops = r.operations()
        s = r.summary()
    for row in s.by_name:
        assert type(row["total_ns"]) is int
        assert row["total_ns"] == sum(o.duration_ns for o in ops if o.name == row["name"])
    assert s.top_level_ns == sum(o.duration_ns for o in ops if o.depth == 0)
    data = json.loads(invoke("summary", captured["path"], "--json").output)
    assert data["top_level_ns"] == s.top_level_ns


def test_ls_enters_no_link_so_a_loop_or_a_link_out_lists_nothing_twice(tmp_path, captured):
    shutil.copytree(captured["path"], tmp_path / "here" / "mine")
    (tmp_path / "here" / "loop").symlink_to(tmp_path / "here")  # a loop back to the folder itself
    (tmp_path / "here" / "elsewhere").symlink_to(captured["root"])  # a link out of it, to other reports
    result = invoke("ls", tmp_path / "here", "--json")
    assert result.exit_code == 0, result.output
    assert [row["path"] for row in json.loads(result.output)] == ["mine"]
