"""`ttreport demo`: the model runs right, the report it makes is full, and the committed sample is current."""

import re

import pytest
import torch
from click.testing import CliRunner

import device_sim as ttnn
import ttreport
from ttreport import demo
from ttreport.cli import main

SAMPLE = demo.SAMPLE_ROOT / "demo"
# The model's own tensors, not the goldens the comparison stores beside them.
OP_TENSORS = "SELECT tensor_id FROM input_tensors UNION SELECT tensor_id FROM output_tensors"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(main, ["demo", "--root", str(root)], catch_exceptions=False)
    return result, root / "demo"


def test_demo_prints_a_summary_a_query_answer_and_where_the_report_is(demo_run):
    result, path = demo_run
    assert result.exit_code == 0, result.output
    out = result.output
    assert "status  complete" in out and "time by op name" in out and "peak L1" in out
    assert "errors    1" in out and "strict mode" in out
    assert demo.DEMO_QUERY in out
    assert "ttnn.linear                                             argument" in out  # a row of its answer
    assert f"report: {path}" in out
    assert "estimated on the device in top-level ops" in out  # the performance model's device time
    assert (path / "ops_perf_results.csv").is_file() and (path / "profile_log_device.csv").is_file()


def test_demo_ends_with_its_trace_and_html_report_and_how_to_open_them(demo_run):
    result, path = demo_run
    trace, page = path.with_name("demo.trace.json"), path.with_name("demo.html")
    lines = result.output.splitlines()
    assert lines[-2] == f"trace:  {trace}   # drag onto https://ui.perfetto.dev or chrome://tracing"
    assert lines[-1] == f"html:   {page.resolve().as_uri()}   # open in a browser; needs no network"
    assert trace.stat().st_size > 10_000 and page.stat().st_size > 3_000_000


def test_demo_model_matches_torch():
    logits, golden = demo.run_model(), demo.golden_logits()
    assert logits.shape == golden.shape == (1, 32, 64)
    pcc = torch.corrcoef(torch.stack([logits.float().flatten(), golden.flatten()]))[0, 1]
    assert pcc > 0.999


def test_demo_report_fills_every_table_the_model_touches(demo_run):
    _, path = demo_run
    with ttreport.open(path) as r:
        counts = {t: r.sql(f"SELECT COUNT(*) AS n FROM {t}")[0]["n"] for t in (
            "operations", "operation_arguments", "tensors", "input_tensors", "output_tensors", "devices",
            "buffers", "stack_traces", "errors", "report_metadata", "tensor_comparisons",
            "local_tensor_comparison_records", "device_perf")}
        assert all(counts.values()), counts
        sources = {row["memory_config_source"] for row in r.sql("SELECT DISTINCT memory_config_source FROM tensors")}
        assert sources >= {"argument", "context", "inputs", "default"}
        assert {row["buffer_type"] for row in r.sql("SELECT DISTINCT buffer_type FROM tensors")} >= {0, 1}
        assert r.sql("SELECT COUNT(*) AS n FROM tensors WHERE dtype = 'DataType.BFLOAT8_B'")[0]["n"] == 2
        # Every op the model calls is one row, as in TT-NN: a bias-linear records no nested matmul or add.
        assert r.sql("SELECT MAX(depth) AS d FROM operations")[0]["d"] == 0
        assert r.sql("SELECT COUNT(*) AS n FROM tensors WHERE file IS NULL")[0]["n"] == 0
        misnamed = r.sql(f"SELECT tensor_id, dtype, layout FROM tensors WHERE tensor_id IN ({OP_TENSORS}) "
                         f"AND (dtype NOT LIKE 'DataType.%' OR layout NOT LIKE 'Layout.%')")
        assert misnamed == []
        failed = r.sql("SELECT operation_id, status FROM tensor_comparisons WHERE status != 'pass'")
        assert failed == []  # each op matches its torch golden on its own inputs


def _shape_of_run(report):
    """What must not change between two runs of the demo: ops, their outputs' specs, addresses and values."""
    ops = report.operations()
    return [(o.name, o.depth, o.status, [(t.shape, t.dtype, t.layout, t.memory_config, t.memory_config_source,
                                         t.address, t.size) for t in o.output_tensors]) for o in ops], ops


def test_the_committed_sample_is_what_the_demo_makes_now(demo_run):
    """If this fails, the demo changed: regenerate with `python -m ttreport.demo --sample` and commit."""
    _, path = demo_run
    with ttreport.open(path) as fresh, ttreport.open(SAMPLE) as sample:
        (fresh_shape, fresh_ops), (sample_shape, sample_ops) = _shape_of_run(fresh), _shape_of_run(sample)
        assert sample_shape == fresh_shape
        for f, s in zip(fresh_ops, sample_ops):
            for ft, st in zip(f.output_tensors, s.output_tensors):
                assert torch.equal(fresh.load_tensor(ft.id), sample.load_tensor(st.id)), (f.name, ft.id)
        assert sample.status == "complete"
        assert sample.sql(f"SELECT COUNT(*) AS n FROM tensors WHERE tensor_id IN ({OP_TENSORS}) "
                          f"AND dtype NOT LIKE 'DataType.%'")[0]["n"] == 0


def test_the_sample_stays_small():
    size = sum(f.stat().st_size for f in demo.SAMPLE_ROOT.rglob("*") if f.is_file())
    assert 0 < size < 2 * 1024 * 1024


def test_the_readme_examples_run_as_written(tmp_path, monkeypatch):
    """A newcomer pastes the README's Python blocks in order, in a fresh folder; they must work."""
    readme = (demo.SAMPLE_ROOT.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    try:
        for block in blocks:
            exec(compile(block, "README.md", "exec"), namespace)
        assert (tmp_path / "generated/ttreport/reports/first/db.sqlite").is_file()
        assert namespace["values"].shape == namespace["op"].output_tensors[0].dims
    finally:  # a pasted script ends with its process; here the test closes what the README opened
        if "report" in namespace:
            namespace["report"].close()
        if "device" in namespace:
            ttnn.close_device(namespace["device"])


def test_a_regenerated_sample_has_the_committed_samples_files_and_no_more(tmp_path):
    # write_sample captures with perf_files=False: the CSVs would be left untracked beside the sample
    path = demo.capture_demo(tmp_path / "sample", perf_files=False)
    files = lambda root: {p.name for p in root.iterdir()}  # noqa: E731
    assert files(path) == files(SAMPLE) == {"cluster_descriptor.yaml", "config.json", "db.sqlite", "tensors"}
    # tensor ids count on from the process's earlier tensors, so only the number of files is the sample's
    assert len(list((path / "tensors").iterdir())) == len(list((SAMPLE / "tensors").iterdir()))
