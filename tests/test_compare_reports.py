"""Report against report: real captures of one model, changed in one place, and the op that diverged."""

import json
import math
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport.cli import main
from ttreport.read.compare import align, compare_reports


def model(device, *, matmul_dtype=None, weight_dtype=ttnn.bfloat16, extra_op=False):
    g = torch.Generator().manual_seed(0)
    x = ttnn.from_torch(torch.randn(64, 128, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    w = torch.randn(128, 128, generator=g) * 0.1
    w1 = ttnn.from_torch(w, dtype=weight_dtype, layout=ttnn.TILE, device=device)  # the weight conversion
    w2 = ttnn.from_torch(torch.randn(128, 64, generator=g) * 0.1, dtype=ttnn.bfloat16, layout=ttnn.TILE,
                         device=device)
    h = ttnn.matmul(x, w1, dtype=matmul_dtype)  # the first matmul
    if extra_op:
        h = ttnn.mul(h, 1.0)
    h = ttnn.relu(h)
    y = ttnn.matmul(h, w2)
    return ttnn.add(y, 1.0)


NAMES = ["ttnn.from_torch"] * 3 + ["ttnn.matmul", "ttnn.relu", "ttnn.matmul", "ttnn.add"]


@pytest.fixture
def run(tmp_path, device):
    def run(name, tensors="all", detach=True, **changes):
        config = ttreport.Config(tensors=tensors, detach_saved_tensors=detach)
        with ttreport.capture(tmp_path / name, config=config) as report:
            model(device, **changes)
        return report.path

    return run


def line_of(marker: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text and "line_of" not in text)


def test_identical_runs_match(run):
    result = compare_reports(run("a"), run("b"))
    assert [p.status for p in result.pairs] == ["match"] * 7
    assert [p.name for p in result.pairs] == NAMES
    assert result.root_cause is None and result.exit_code == 0
    assert all(c.max_abs_error == 0 for p in result.pairs for c in p.outputs)


def test_a_matmul_made_bfloat8_b_is_the_root_cause_and_later_ops_propagate(run):
    result = compare_reports(run("a"), run("b", matmul_dtype=ttnn.bfloat8_b))
    assert [p.status for p in result.pairs] == ["match"] * 3 + ["mismatch"] + ["propagated"] * 3
    rc = result.root_cause
    assert rc is result.pairs[3] and rc.name == "ttnn.matmul" and rc.inputs_matched is True
    assert "inputs match, outputs do not" in rc.reason and "outside atol" in rc.reason
    line = f"line {line_of('# the first matmul')}, in model"
    assert all(line in stack for stack in result.root_cause_stacks)
    assert result.exit_code == 1

    table = result.to_table()
    root_line = next(s for s in table.splitlines() if s.startswith("ROOT CAUSE:"))
    assert root_line.startswith(f"ROOT CAUSE: ttnn.matmul (A op {rc.a_id}, B op {rc.b_id}): inputs match")
    assert "1 mismatch, 3 propagated" in table


def test_a_weight_converted_to_bfloat8_b_names_the_conversion(run):
    result = compare_reports(run("a"), run("b", weight_dtype=ttnn.bfloat8_b))
    statuses = [p.status for p in result.pairs]
    assert statuses == ["match", "mismatch", "match", "propagated", "propagated", "propagated", "propagated"]
    assert result.root_cause.name == "ttnn.from_torch"
    assert result.root_cause.reason.startswith("no device inputs, outputs differ: ")
    assert f"line {line_of('# the weight conversion')}" in result.root_cause_stacks[1]
    consumer = result.pairs[3]
    assert consumer.name == "ttnn.matmul" and consumer.inputs_matched is False
    assert consumer.reason.startswith("an input already differed")


def test_an_inserted_op_leaves_every_other_op_paired(run):
    result = compare_reports(run("a"), run("b", extra_op=True))
    assert [p.name for p in result.pairs] == NAMES and all(p.status == "match" for p in result.pairs)
    assert result.only_a == [] and [name for _, name in result.only_b] == ["ttnn.mul"]
    assert [p.b_id - p.a_id for p in result.pairs] == [0, 0, 0, 0, 1, 1, 1]
    assert result.exit_code == 0
    assert "warning: 1 op(s) only in B, unaligned (not a failure without --strict)" in result.to_table()
    strict = compare_reports(result.a, result.b, strict=True)
    assert strict.exit_code == 1


def test_reports_with_bin_tensors_compare_like_pt(run):
    result = compare_reports(run("a", detach=False), run("b", matmul_dtype=ttnn.bfloat8_b))
    assert next(result.a.glob("tensors/*")).suffix == ".bin"
    assert result.root_cause is result.pairs[3]


def test_reports_without_tensors_say_so_before_aligning(run):
    a, b = run("a"), run("b", tensors="none")
    with pytest.raises(ttreport.TTReportError, match=rf"{b} has no stored tensors, so no op can be compared; "
                                                     r"capture both runs with Config\(tensors='all'\)"):
        compare_reports(a, b)
    result = invoke("compare", b, a)
    assert result.exit_code == 2 and "has no stored tensors" in result.output


def test_an_op_whose_outputs_were_lost_is_missing_not_a_mismatch(run):
    a, b = run("a"), run("b")
    with ttreport.open(b) as r:
        lost = r.operations()[3].output_tensors[0]
    (b / lost.file).unlink()  # the db still names the file
    result = compare_reports(a, b)
    assert result.pairs[3].status == "missing_tensor" and result.root_cause is None


def test_a_damaged_tensor_file_is_named_and_no_op_is_blamed(run):
    a, b = run("a"), run("b")
    with ttreport.open(b) as r:
        victim = r.operations()[3].output_tensors[0]  # the first matmul's output
    path = b / victim.file
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0x40  # one bit of one value: the file still loads, with a wrong number in it
    path.write_bytes(bytes(blob))
    with pytest.raises(ttreport.TensorFileError, match=rf"tensor {victim.id}: {path} has changed since the capture"):
        compare_reports(a, b)
    result = invoke("compare", a, b)
    assert result.exit_code == 2 and f"tensor {victim.id}" in result.output and "ROOT CAUSE" not in result.output


def test_a_tensor_file_swapped_for_another_tensors_is_named(run):
    a, b = run("a"), run("b")
    with ttreport.open(b) as r:
        ops = r.operations()
    victim, other = ops[3].output_tensors[0], ops[6].output_tensors[0]  # [64, 128] and [64, 64]
    (b / victim.file).write_bytes((b / other.file).read_bytes())
    with pytest.raises(ttreport.TensorFileError, match=rf"tensor {victim.id}: .* has changed since the capture"):
        compare_reports(a, b)


def test_a_report_compared_with_itself_says_identical(run):
    a = run("a")
    result = invoke("compare", a, a)
    assert result.exit_code == 0
    assert "identical: every one of the 7 aligned ops matches (A and B are the same report)" in result.output
    table = compare_reports(a, a).to_table(limit=3)  # more ops than the table shows: no empty table
    assert "identical" in table and "A op" not in table


def test_ops_pattern_and_tolerances(run):
    a, b = run("a"), run("b", matmul_dtype=ttnn.bfloat8_b)
    only_matmuls = compare_reports(a, b, ops="matmul")
    assert [p.name for p in only_matmuls.pairs] == ["ttnn.matmul", "ttnn.matmul"]
    assert [p.status for p in only_matmuls.pairs] == ["mismatch", "propagated"]
    # A PCC-only judgement at 0.999 lets the bfloat8_b rounding through.
    loose = compare_reports(a, b, rtol=math.inf, pcc=0.999)
    assert loose.exit_code == 0 and loose.settings["pcc"] == 0.999


def test_alignment_pairs_by_key_then_by_name():
    # keys: op names with shapes; an op whose shape changed (c -> c'), one removed (x), one added (y)
    ka = ["a", "b", "c", "x", "d"] + ["e", "f"] * 200
    kb = ["a", "b", "c'", "d", "y"] + ["e", "f"] * 200
    names = {"c'": "c"}
    na, nb = [names.get(k, k) for k in ka], [names.get(k, k) for k in kb]
    pairs, only_a, only_b = align(ka, kb, na, nb)
    assert pairs[:4] == [(0, 0), (1, 1), (2, 2), (4, 3)]
    assert only_a == [3] and only_b == [4]
    assert pairs[4:] == [(i, i) for i in range(5, 405)]  # a repeated block still aligns (no autojunk)


def test_alignment_of_long_runs_that_differ_far_apart():
    # 5,000 ops repeating a 7-op layer: an op inserted near the start, one removed in the middle and
    # one whose shapes changed near the end leave a differing stretch too long for difflib.
    ka = [f"op{i % 7}[{i % 7}]" for i in range(5000)]
    kb = ka[:100] + ["inserted[0]"] + ka[100:2500] + ka[2501:4900] + ["op0[changed]"] + ka[4901:]
    na, nb = ([k.split("[")[0] for k in keys] for keys in (ka, kb))
    pairs, only_a, only_b = align(ka, kb, na, nb)
    assert len(pairs) == 4999 and only_b == [100] and len(only_a) == 1 and ka[only_a[0]] == ka[2500]
    assert all(na[i] == nb[j] for i, j in pairs)
    assert (4900, 4900) in pairs  # paired by name: its shapes changed


def test_json_holds_every_figure(run, tmp_path):
    result = compare_reports(run("a"), run("b", matmul_dtype=ttnn.bfloat8_b))
    data = json.loads(result.to_json())
    assert data["exit_code"] == 1 and data["counts"]["mismatch"] == 1 and data["counts"]["propagated"] == 3
    assert data["root_cause"]["name"] == "ttnn.matmul" and "in model" in data["root_cause"]["stack_trace_b"]
    out = data["ops"][3]["outputs"][0]
    assert out["status"] == "fail" and out["mismatched"] > 0 and 0.999 < out["pcc"] < 1


# -- the command line ---------------------------------------------------------------------------

def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_cli_compare_exit_codes_and_json(run, tmp_path):
    a, same, changed = run("a"), run("same"), run("changed", matmul_dtype=ttnn.bfloat8_b)
    ok = invoke("compare", a, same)
    assert ok.exit_code == 0 and "7 match" in ok.output
    diff = invoke("compare", a, changed, "--json", tmp_path / "diff.json")
    assert diff.exit_code == 1
    assert any(line.startswith("ROOT CAUSE: ttnn.matmul") for line in diff.output.splitlines())
    assert json.loads((tmp_path / "diff.json").read_text())["root_cause"]["status"] == "mismatch"
    assert invoke("compare", a, changed, "--rtol", "inf", "--pcc", "0.999").exit_code == 0
    bad = invoke("compare", a, tmp_path / "no-such-report")
    assert bad.exit_code == 2 and bad.output.startswith("Error: no report at")


def test_cli_compare_strict_fails_on_an_unaligned_op(run):
    a, b = run("a"), run("b", extra_op=True)
    assert invoke("compare", a, b).exit_code == 0
    assert invoke("compare", a, b, "--strict").exit_code == 1


def test_cli_diff_tensor(tmp_path, device):
    t = torch.randn(32, 32)
    torch.save(t, tmp_path / "a.pt")
    torch.save(t.bfloat16().float(), tmp_path / "b.pt")
    torch.save(t + 1, tmp_path / "c.pt")
    from device_sim import serialization

    serialization.dump_tensor(tmp_path / "d.bin", ttnn.from_torch(t, dtype=ttnn.bfloat8_b, layout=ttnn.TILE))
    close = invoke("diff-tensor", tmp_path / "a.pt", tmp_path / "b.pt", "--rtol", "0.01")
    assert close.exit_code == 0 and close.output.startswith("status          pass")
    far = invoke("diff-tensor", tmp_path / "a.pt", tmp_path / "c.pt")
    assert far.exit_code == 1 and "1,024 of 1,024 (100%)" in far.output
    block = invoke("diff-tensor", tmp_path / "a.pt", tmp_path / "d.bin", "--json")
    assert block.exit_code == 0 and json.loads(block.output)["dtypes"] == ["bfloat8_b", "float32"]
    (tmp_path / "x.txt").write_text("not a tensor")
    assert invoke("diff-tensor", tmp_path / "a.pt", tmp_path / "x.txt").exit_code == 2
    (tmp_path / "bad.pt").write_text("not a tensor")
    bad = invoke("diff-tensor", tmp_path / "a.pt", tmp_path / "bad.pt")
    assert bad.exit_code == 2 and "cannot be read" in bad.output


def test_readme_and_compare_help_give_the_same_tensors_advice():
    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    helptext = " ".join(invoke("compare", "--help").output.split())
    for advice in ('Config(tensors="all")', 'tensors="outputs"` is the least that works'):
        assert advice in readme
        assert advice.replace("`", "") in helptext


def test_text_from_the_reports_reaches_the_terminal_with_its_control_characters_escaped(tmp_path):
    import shutil
    import sqlite3

    sample = Path(__file__).resolve().parents[1] / "sample_reports" / "demo"
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(sample, a)
    shutil.copytree(sample, b)
    con = sqlite3.connect(b / "db.sqlite")
    with con:  # an op renamed with a terminal title sequence: unaligned, so named on compare's warning line
        con.execute("UPDATE operations SET name = 'ttnn.\x1b]0;pwned\x07gelu' WHERE operation_id = "
                    "(SELECT MIN(operation_id) FROM operations WHERE name = 'ttnn.gelu')")
    con.close()
    result = CliRunner().invoke(main, ["compare", str(a), str(b)])
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "ttnn.\\x1b]0;pwned\\x07gelu" in result.output
