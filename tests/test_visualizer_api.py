"""What a user sees of a fresh report in the real ttnn-visualizer (its REST API, tests/visualizer.py).

Each op is labelled with the file and line that called it, layouts read INTERLEAVED and
HEIGHT_SHARDED, the Buffers page gets its ops in id order, and the report has its name.
"""

import re

import pytest
from visualizer import LABELLED_FILE, LABELLED_OPS, labelled_model, line_of  # tests/visualizer.py

import ttreport


@pytest.fixture
def opened(tmp_path, device, visualizer):
    with ttreport.capture(tmp_path / "as-a-user-sees-it") as cap:
        labelled_model(device)
    return visualizer, visualizer.open(cap.path)


def test_each_op_is_labelled_with_the_line_that_called_it(opened):
    vis, instance = opened
    ops = vis.get("/api/operations", instance)
    assert [o["id"] for o in ops] == list(range(1, 9))
    labels = [re.search(r'File "([^"]+)", line (\d+)', o["stack_trace"]).groups() for o in ops]
    assert labels == [(LABELLED_FILE, str(line_of(t))) for t in LABELLED_OPS]
    assert all(o["stack_trace_source_file_id"] == ops[0]["stack_trace_source_file_id"] is not None for o in ops)


def test_layouts_read_interleaved_and_height_sharded(opened):
    vis, instance = opened
    layouts = {t["memory_config"]["memory_layout"] for t in vis.get("/api/tensors", instance) if t["memory_config"]}
    assert layouts == {"TensorMemoryLayout::INTERLEAVED", "TensorMemoryLayout::HEIGHT_SHARDED"}


def test_the_buffers_page_gets_its_ops_in_id_order(opened):
    # /api/operation-buffers lists ops as its unsorted SELECT returns them: the Buffers page's order
    vis, instance = opened
    pages = vis.get("/api/operation-buffers", instance)
    assert [p["id"] for p in pages] == list(range(1, 9))
    assert [p["name"] for p in pages][:4] == ["ttnn.from_torch", "ttnn.relu", "ttnn.add", "ttnn.deallocate"]
    # after the relu: x and its output; after the deallocate: only the add's output (the old x was dropped)
    assert [len(p["buffers"]) for p in pages[:4]] == [1, 2, 3, 1]


def test_the_report_has_its_name(opened):
    vis, instance = opened
    assert vis.get("/api/config", instance)["report_name"] == "as-a-user-sees-it"
