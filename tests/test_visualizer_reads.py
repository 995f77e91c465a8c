"""ttnn-visualizer's own queries and parsers (its package, a dev dependency) read a fresh report as a user sees it.

In process, on the report's SQLite file: ops in id order, every op labelled with the file and line
that called it, memory layouts parsed from TT-NN's MemoryConfig text, buffers in op order, the
report's name from config.json, a run fingerprint with its timestamp. The REST server is asked the
same in tests that start it (tests/visualizer.py).
"""

import re
import sqlite3

import pytest

# Imported, not skipped when missing: `pip install -e .[dev]` installs it, and a report the
# visualizer cannot read is what these tests are for.
from ttnn_visualizer.models import Tensor as VisualizerTensor
from ttnn_visualizer.queries import DatabaseQueries
from ttnn_visualizer.report_fingerprint import profiler_run_fingerprint
from ttnn_visualizer.utils import read_profiler_report_name
from visualizer import LABELLED_FILE, LABELLED_OPS, labelled_model, line_of  # tests/visualizer.py

import ttreport

FIRST_FRAME = re.compile(r'File "([^"]+)", line (\d+)')  # the visualizer's label: the first frame named


@pytest.fixture
def queries(tmp_path, device):
    with ttreport.capture(tmp_path / "visualized") as cap:
        labelled_model(device)
    con = sqlite3.connect(cap.db_path)
    yield DatabaseQueries(connection=con), cap
    con.close()


def test_ops_come_in_id_order_each_labelled_with_the_line_that_called_it(queries):
    q, _ = queries
    ops = list(q.query_operations())
    assert [o.operation_id for o in ops] == sorted(o.operation_id for o in ops)
    assert [o.name for o in ops] == ["ttnn.from_torch", "ttnn.relu", "ttnn.add", "ttnn.deallocate", "ttnn.relu",
                                     "ttnn.add", "ttnn.deallocate", "ttnn.to_memory_config"]
    stacks = {s.operation_id: s for s in q.query_stack_traces()}
    labels = [FIRST_FRAME.search(stacks[o.operation_id].stack_trace).groups() for o in ops]
    assert labels == [(LABELLED_FILE, str(line_of(tag))) for tag in LABELLED_OPS]
    # the Source button: the file behind the label is in the report
    (source,) = q.query_source_files()
    assert source.path == LABELLED_FILE and {s.source_file_id for s in stacks.values()} == {source.id}


def test_memory_layouts_parse_from_tt_nns_text(queries):
    q, _ = queries
    tensors = {t.tensor_id: t for t in q.query_tensors()}
    assert all(isinstance(t, VisualizerTensor) for t in tensors.values())
    layouts = {t.memory_config["memory_layout"] for t in tensors.values() if t.memory_config}
    assert layouts == {"TensorMemoryLayout::INTERLEAVED", "TensorMemoryLayout::HEIGHT_SHARDED"}


def test_buffers_come_in_op_order(queries):
    q, _ = queries
    ids = [b.operation_id for b in q.query_buffers()]
    assert ids and ids == sorted(ids)


def test_the_report_has_a_name_and_a_fingerprint_with_its_time(queries):
    _, cap = queries
    assert read_profiler_report_name(cap.path) == "visualized"
    fingerprint = profiler_run_fingerprint(cap.path)
    stamp = sqlite3.connect(cap.db_path).execute(
        "SELECT value FROM report_metadata WHERE key = 'capture_timestamp_ns'").fetchone()[0]
    assert fingerprint.endswith(f":8:{stamp}")  # op count, then the capture's timestamp
