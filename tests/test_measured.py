"""Measured beside modelled: `ttreport attach` stores a real TT-NN profiler file's device times in a report.

    .venv/bin/python -m pytest tests/test_measured.py -q

The files are real TT-NN output (tests/data/ops_perf/README.md): a CLIP text encoder's first 40 device operations
on a Wormhole n150, and an OFT model's first rows in an older column set, signposts among them. The report is
tests/data/ops_perf/clip_layer.py, one CLIP encoder layer at a small width, run by `ttreport run` as a TT-NN script:
its device operations are the file's rows 5-40 in order.
"""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ttreport.read import device_time, measured

DATA = Path(__file__).resolve().parent / "data" / "ops_perf"
CLIP = DATA / "wh_clip_encoder_2_first40.csv"
OFT = DATA / "ops_perf_results_2025_09_18_11_39_20_first30.csv"
LAYER_ROWS = slice(4, 40)  # the file's rows 5-40: what clip_layer.py runs (rows 1-4 are its embeddings)


def cli(*args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ttreport.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def file_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def stored(report: Path) -> list[tuple]:
    con = sqlite3.connect(f"{(report / 'db.sqlite').as_uri()}?mode=ro", uri=True)
    try:
        return con.execute("SELECT position, operation_id, op_code, kernel_ns FROM measured_perf ORDER BY 1").fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def layer_run(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("measured") / "clip_layer"
    done = cli("run", "--name", path, DATA / "clip_layer.py", timeout=300)
    assert done.returncode == 0, done.stderr
    return path


@pytest.fixture
def report(layer_run, tmp_path) -> Path:
    shutil.copytree(layer_run, tmp_path / "clip_layer")
    return tmp_path / "clip_layer"


def test_a_tt_nn_profile_of_the_same_layer_matches_every_op_in_order(report):
    done = cli("attach", report, CLIP, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    rows = file_rows(CLIP)
    layer = rows[LAYER_ROWS]
    assert (out["rows"], out["device_operations"]) == (len(rows), len(layer))
    assert out["matched"] == out["by_name"] == len(layer)
    # the file's embeddings (rows 1-4) have no op in the report: the first place the two part
    assert out["first_mismatch"].startswith(f"row 1 of device 0, {rows[0]['OP CODE']}, has no op in the report "
                                            "before op ")
    assert out["first_mismatch"].endswith("(4 rows left unpaired)")
    kept = stored(report)
    assert [code for _, _, code, _ in kept] == [r["OP CODE"] for r in rows]
    assert [op for _, op, _, _ in kept[:4]] == [None] * 4 and all(op is not None for _, op, _, _ in kept[4:])
    # summary sets the measured time of the matched ops beside the model's estimate of them
    summary = json.loads(cli("summary", report, "--json").stdout)["measured"]
    assert summary["ops"] == len(layer) and summary["matched_rows"] == len(layer)
    assert summary["measured_ns"] == sum(int(r["DEVICE KERNEL DURATION [ns]"]) for r in layer)
    assert summary["source"] == CLIP.name
    text = cli("summary", report).stdout
    assert f"{len(layer)} of its {len(rows)} device operations matched" in text
    assert "measured beside modelled by op name" in text


def test_an_op_shows_the_device_operations_measured_for_it(report):
    assert cli("attach", report, CLIP).returncode == 0
    rows = file_rows(CLIP)
    for position, op_id, code, ns in stored(report)[4:7]:  # the layer's add, layer_norm and first linear
        row = rows[position - 1]
        shown = json.loads(cli("op", report, op_id, "--json").stdout)
        assert shown["measured"] == [{"op_code": code, "device_id": int(row["DEVICE ID"]), "kernel_ns": ns,
                                      "core_count": int(row["CORE COUNT"])}]
        text = cli("op", report, op_id).stdout
        estimate = shown["device"]["ideal_ns"]
        assert f"on real hardware ({code} on {row['CORE COUNT']} cores): estimate / measured " \
            f"{estimate / ns:.2f}x" in text
    # an op whose rows hold no kernel time says so, and a row's text reaches the terminal escaped (a report is input)
    position, op_id, code, ns = stored(report)[4]
    with sqlite3.connect(report / "db.sqlite") as con:
        con.execute("UPDATE measured_perf SET kernel_ns = NULL, core_count = '8\x1b[2J' WHERE position = ?",
                    (position,))
    text = cli("op", report, op_id).stdout
    assert f"measured  no kernel time on real hardware ({code} on 8\\x1b[2J cores)\n" in text


def test_the_first_op_that_differs_is_named_and_paired_in_place(tmp_path, report):
    rows = file_rows(CLIP)[LAYER_ROWS]
    rows[1]["OP CODE"] = "GroupNormDeviceOperation"  # where the report has its layer_norm
    changed = write(tmp_path / "changed.csv", rows)
    out = json.loads(cli("attach", report, changed, "--json").stdout)
    assert out["matched"] == len(rows) and out["by_name"] == len(rows) - 1
    assert "row 2 of device 0, GroupNormDeviceOperation, sits where the report has op " in out["first_mismatch"]
    assert "ttnn.layer_norm (LayerNormDeviceOperation): paired in place" in out["first_mismatch"]


def test_compare_timing_sets_each_runs_measured_time_beside_its_estimate(tmp_path, report, layer_run):
    assert cli("attach", report, CLIP).returncode == 0
    other = tmp_path / "other"
    shutil.copytree(report, other)
    layer = file_rows(CLIP)[LAYER_ROWS]
    t = json.loads(cli("compare", report, other, "--timing", "--json").stdout)
    timed = sorted((op for op in t["ops"] if op["a_measured_ns"] is not None), key=lambda op: op["a_id"])
    assert [op["a_measured_ns"] for op in timed] == [int(r["DEVICE KERNEL DURATION [ns]"]) for r in layer]
    assert t["totals"]["a"]["measured_ns"] == t["totals"]["b"]["measured_ns"] == sum(op["a_measured_ns"]
                                                                                      for op in timed)
    text = cli("compare", report, other, "--timing", "--limit", "0").stdout
    assert "A measured" in text and "est. / meas. (A / B)" in text
    # --measured compares the real run's times: every measured op's delta is the two runs' measured difference
    t = json.loads(cli("compare", report, other, "--timing", "--measured", "--json").stdout)
    assert t["clock"] == "measured"
    assert all(op["delta_ns"] == 0 for op in t["ops"] if op["a_measured_ns"] is not None)
    assert all(op["delta_ns"] is None for op in t["ops"] if op["a_measured_ns"] is None)
    # and says so in one line where a report has none to compare, rather than a table of blank times
    done = cli("compare", report, layer_run, "--timing", "--measured")
    assert done.returncode == 2 and done.stderr.strip() == f"Error: {layer_run} has no measured device time for " \
        f"any aligned op: `ttreport attach {layer_run} ops_perf_results.csv` first, or leave out --measured"


def test_the_html_report_has_a_section_setting_measured_beside_modelled(tmp_path, report, layer_run):
    named = tmp_path / "<b>run.csv"  # a file name is text from elsewhere too: escaped on the page
    shutil.copy(CLIP, named)
    assert cli("attach", report, named).returncode == 0
    assert cli("html", report, "-o", tmp_path / "run.html").returncode == 0
    page = (tmp_path / "run.html").read_text()
    section = page[page.index("<h2 id='measured'>"):page.index("<h2 id='pcc'>")]
    assert "href='#measured'" in page and "&lt;b&gt;run.csv" in section and "<b>run" not in page
    summary = json.loads(cli("summary", report, "--json").stdout)["measured"]
    for n in summary["by_name"]:  # one row per op name, its name and op count
        assert f"<tr><td>{n['name']}</td><td class='num'>{n['ops']:,}</td>" in section
    for o in summary["worst"]:  # the furthest ops, each linked to its row in the op table
        assert f"<a href='#op-{o['operation_id']}'>" in section
    # the op table's device cell has each matched op's measured time under its estimate
    for _, op_id, _, ns in stored(report)[4:]:
        row = page[page.index(f"<tr id='op-{op_id}'"):]
        assert f"<br>measured {device_time.human_ns(ns)}</td>" in row[:row.index("</tr>")]
    # without an attached run the page has no such section
    assert cli("html", layer_run, "-o", tmp_path / "plain.html").returncode == 0
    assert "id='measured'" not in (tmp_path / "plain.html").read_text()


def test_attaching_again_replaces_what_was_attached(tmp_path, report):
    assert cli("attach", report, CLIP).returncode == 0
    part = write(tmp_path / "part.csv", file_rows(CLIP)[4:10])
    done = cli("attach", report, part)
    assert done.returncode == 0, done.stderr
    assert "attached 6 device operations of part.csv" in done.stdout and "6 matched" in done.stdout
    assert len(stored(report)) == 6


def test_an_older_column_set_with_signposts_reads_its_device_operations(tmp_path):
    rows = file_rows(OFT)
    device = [r for r in rows if r["OP TYPE"] == "tt_dnn_device"]
    assert len(device) < len(rows)  # signposts ("OftNet module started") are among them
    got = measured.read_ops_perf(OFT)
    assert [g.op_code for g in got] == [r["OP CODE"] for r in device]
    assert [g.kernel_ns for g in got] == [int(r["DEVICE KERNEL DURATION [ns]"]) for r in device]
    # '32[19]'-style dims give the logical size; a sharded tensor names the cores its shards span
    sharded = next(g for g, r in zip(got, device) if "SHARDED" in r["INPUT_0_MEMORY"])
    r = device[got.index(sharded)]
    logical = "x".join(r[f"INPUT_0_{d}_PAD[LOGICAL]"].split("[")[-1].rstrip("]") for d in "WZYX")
    assert sharded.inputs.split(";")[0].startswith(logical + "|") and sharded.inputs.endswith(f"|{r['CORE COUNT']}")


def write(path: Path, rows: list[dict], header=None) -> Path:
    header = header or list(file_rows(CLIP)[0].keys())
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, header)
        w.writeheader()
        w.writerows(rows)
    return path


def _with(column: str, value: str):
    def make(path: Path) -> Path:
        rows = file_rows(CLIP)
        rows[7][column] = value
        return write(path, rows)
    return make


def _text(text: str | bytes):
    def make(path: Path) -> Path:
        (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
        return path
    return make


def _header_of_another_file(path: Path) -> Path:
    return write(path, [{"name": "x", "duration": "1"}], header=["name", "duration"])


def _field_too_large(path: Path) -> Path:
    return _with("ATTRIBUTES", "a" * 200_000)(path)


BAD = {
    "huge duration": (_with("DEVICE KERNEL DURATION [ns]", "1e30"), "DEVICE KERNEL DURATION [ns] = '1e30'"),
    "negative duration": (_with("DEVICE KERNEL DURATION [ns]", "-5"), "'-5' is not a whole number"),
    "text for a number": (_with("CORE COUNT", "sixty-four"), "CORE COUNT = 'sixty-four'"),
    "infinite": (_with("DEVICE FW DURATION [ns]", "inf"), "DEVICE FW DURATION [ns] = 'inf'"),
    "control characters": (_with("OP CODE", "Matmul\x1b[2J"), "OP CODE = 'Matmul\\x1b[2J'"),
    "bad dimension": (_with("INPUT_0_Y_PAD[LOGICAL]", "32[nineteen]"), "INPUT_0_Y_PAD[LOGICAL] = '32[nineteen]'"),
    "bad layout": (_with("INPUT_0_LAYOUT", "tile; DROP TABLE"), "INPUT_0_LAYOUT = 'tile; DROP TABLE'"),
    "wrong columns": (_header_of_another_file, "has no 'OP CODE' or 'DEVICE KERNEL DURATION [ns]' column"),
    "empty": (_text(""), "is empty"),
    "not utf-8": (_text(b"OP CODE,DEVICE KERNEL DURATION [ns]\n\xff\xfe,1\n"), "is not UTF-8 text"),
    "no device rows": (_text("OP CODE,OP TYPE,DEVICE KERNEL DURATION [ns]\nstart,signpost,\n"),
                       "holds no device operation"),
    "a field too large": (_field_too_large, "is not CSV (field larger than field limit"),
}


@pytest.mark.parametrize("kind", BAD)
def test_a_bad_file_is_one_line_naming_the_value_and_changes_nothing(tmp_path, report, kind):
    assert cli("attach", report, CLIP).returncode == 0
    before = stored(report)
    make, says = BAD[kind]
    bad = make(tmp_path / "ops_perf_results.csv")
    done = cli("attach", report, bad)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert says in done.stderr and "ops_perf_results.csv that TT-NN's device profiler wrote" in done.stderr
    assert stored(report) == before


def test_a_missing_file_and_a_report_that_is_not_one_are_one_line_errors(tmp_path, report):
    done = cli("attach", report, tmp_path / "nothing.csv")
    assert done.returncode == 2 and "nothing.csv: cannot be read" in done.stderr
    done = cli("attach", tmp_path / "no-report", CLIP)
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_attach_takes_no_store_run_as_the_reading_commands_do():
    # a store's run is a pulled, read-only cache: attach writes into a report folder only
    assert "--run" not in cli("attach", "--help").stdout and "--run NAME" in cli("summary", "--help").stdout
    done = cli("attach", "postgresql:///ttreport", CLIP, "--run", "nightly-1")
    assert done.returncode == 2 and "No such option '--run'" in done.stderr
    done = cli("attach", "postgresql:///ttreport", CLIP)
    assert done.returncode == 2 and "no report at" in done.stderr.splitlines()[-1] and "Traceback" not in done.stderr


def test_check_names_measured_rows_paired_with_ops_the_report_does_not_have(report):
    assert cli("attach", report, CLIP).returncode == 0 and cli("check", report).stdout.strip() == "ok"
    con = sqlite3.connect(report / "db.sqlite")
    with con:
        con.execute("UPDATE measured_perf SET operation_id = 999999 WHERE position IN (5, 6)")
    con.close()
    done = cli("check", report)
    assert done.returncode == 1
    assert "measured_perf rows (by position) name operations that do not exist: 2 in all: 5, 6" in done.stdout


def test_merging_ranks_with_measured_times_attached_leaves_them_to_attach_again(tmp_path, report):
    assert cli("attach", report, CLIP).returncode == 0
    other = tmp_path / "rank1"
    shutil.copytree(report, other)
    done = cli("merge", report, other, "--rank", f"{report}=0", "--rank", f"{other}=1", "-o", tmp_path / "merged")
    assert done.returncode == 0, done.stderr
    assert stored(tmp_path / "merged") == []
    assert cli("attach", tmp_path / "merged", CLIP).returncode == 0


def test_a_report_of_an_older_schema_is_told_to_upgrade_first(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(Path(__file__).resolve().parent / "data" / "report_v0004", old)
    done = cli("attach", old, CLIP)
    assert done.returncode == 2 and "ttreport upgrade" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_mesh_runs_own_perf_file_attaches_chip_by_chip(tmp_path):
    # ttreport's own ops_perf_results.csv has TT-NN's rows: one per device operation per chip, each the model's
    # estimate shared by the op's programs on that chip; attached to its own report every row pairs by name
    script = tmp_path / "mesh.py"
    script.write_text(
        "import sys, torch, ttreport, device_sim as ttnn\n"
        "mesh = ttnn.open_mesh_device(ttnn.MeshShape(1, 2))\n"
        "with ttreport.capture(sys.argv[1]):\n"
        "    x = ttnn.from_torch(torch.randn(1, 1, 64, 128), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=mesh,\n"
        "                        mesh_mapper=ttnn.ShardTensorToMesh(mesh, dim=3))\n"
        "    ttnn.add(ttnn.relu(x), x)\n"
        "ttnn.close_mesh_device(mesh)\n")
    report = tmp_path / "mesh"
    subprocess.run([sys.executable, str(script), str(report)], check=True, timeout=300, capture_output=True)
    rows = file_rows(report / "ops_perf_results.csv")
    assert {r["DEVICE ID"] for r in rows} == {"0", "1"}
    out = json.loads(cli("attach", report, report / "ops_perf_results.csv", "--json").stdout)
    assert out["matched"] == out["by_name"] == out["rows"] == len(rows) and out["first_mismatch"] is None
    summary = json.loads(cli("summary", report, "--json").stdout)["measured"]
    assert summary["ops"] == 2 and summary["median_ratio"] == pytest.approx(1.0, abs=0.01)


def test_names_compare_across_tt_nn_versions_and_device_sim():
    assert {measured.name_key(n) for n in ("LayerNormDeviceOperation", "LayerNorm", "ttnn.layer_norm")} == \
        {"layernorm"}
    assert {measured.name_key(n) for n in ("MinimalMatmulOp", "Matmul", "MatmulDeviceOperation", "ttnn.linear")} == \
        {"matmul"}
    assert measured.name_key("EmbeddingsDeviceOperation") == measured.name_key("ttnn.embedding")


def test_each_chip_of_a_mesh_run_pairs_with_the_same_ops():
    rows = [measured.MeasuredRow(code, device, None, 1000 * (device + 1), None, None, None, "", "", None)
            for device in (0, 1) for code in ("BinaryNgDeviceOperation", "SoftmaxDeviceOperation")]
    add, softmax = (measured.DeviceOp(7, "ttnn.add", "BinaryNgDeviceOperation"),
                    measured.DeviceOp(8, "ttnn.softmax", "SoftmaxDeviceOperation"))
    m = measured.match(rows, {0: [add, softmax], 1: [add, softmax]})
    assert m.pairs == {0: add, 1: softmax, 2: add, 3: softmax} and m.by_name == 4 and m.first_mismatch is None
    assert m.devices == [0, 1]
    # a one-chip report pairs with every chip of the file; a chip a mesh report does not have pairs with nothing
    assert measured.match(rows, {0: [add, softmax]}).pairs == m.pairs
    m = measured.match(rows, {0: [add, softmax], 2: [add, softmax]})
    assert set(m.pairs) == {0, 1}
    assert m.first_mismatch.startswith("row 3 of device 1, BinaryNgDeviceOperation, has no op")


def test_a_captured_graph_nested_past_the_parser_s_depth_is_a_graph_with_no_device_operation(report):
    with sqlite3.connect(report / "db.sqlite") as con:  # the report is input: its graphs' text is not trusted
        con.execute("UPDATE distinct_graphs SET captured_graph = ? WHERE graph_id = "
                    "(SELECT MIN(graph_id) FROM distinct_graphs)", ("[" * 200_000,))
    done = cli("attach", report, CLIP, "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["matched"] > 0
