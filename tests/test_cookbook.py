"""Every SQL block in docs/queries.md runs on the sample report and answers its question."""

import re
from pathlib import Path

import pytest

import ttreport
from ttreport.demo import DEMO_QUERY, SAMPLE_ROOT

COOKBOOK = Path(__file__).resolve().parent.parent / "docs" / "queries.md"

# Question -> (the columns its answer must have, rows the demo model guarantees at least).
EXPECTED = {
    "Which ops wrote their output to L1?":
        (["operation_id", "name", "tensor_id", "shape", "address", "memory_config_source"], 10),
    "Which ops put their output in L1, and which rule chose L1?": (["name", "chosen_by", "outputs"], 3),
    "The 10 slowest matmuls and linears, with their shapes":
        (["operation_id", "duration_us", "a_shape", "b_shape", "output_shape"], 10),
    "Who produced tensor N, and who consumed it?": (["role", "operation_id", "name"], 2),
    "Peak L1, and the op at which it happened": (["operation_id", "name", "l1_bytes", "dram_bytes"], 1),
    "Which ops got their memory config from the default rather than by choice?":
        (["operation_id", "name", "tensor_id", "shape", "memory_config"], 5),
    "Which ops mixed L1 and DRAM inputs?": (["operation_id", "name", "inputs"], 5),
    "Where does the time go? Time by op name": (["name", "count", "total_s", "self_s"], 10),
    "Which ops lost the most accuracy against torch?":
        (["operation_id", "name", "mode", "status", "pcc", "max_abs_error", "mismatched_fraction", "dtype"], 10),
    "Which ops raised, and with what message?":
        (["operation_id", "operation_name", "error_type", "error_message", "stack_trace"], 1),
    "Which tensors are block floats (bfloat8_b, bfloat4_b), and who made them?":
        (["tensor_id", "dtype", "shape", "size", "producer_operation_id", "producer"], 2),
    # Every op the demo calls is one TT-NN op (a bias-linear included): nothing nests in the sample, whose deepest
    # ops are top-level ones, each under itself.
    "The deepest nested ops, and the top-level op each runs under": (["top_level_id", "operation_id", "name", "depth"],
                                                                      10),
    "Which buffers were live after op N, and which op allocated each?":
        (["buffer_id", "buffer_type", "address", "size", "allocated_by_operation_id"], 10),
    "How many bytes went from the host to the device?": (["transfers", "bytes"], 1),
    "How did L1 and DRAM use change over the run?": (["operation_id", "name", "l1_bytes", "dram_bytes"], 40),
    "Where in my code is the slowest op called?": (["operation_id", "name", "duration_us", "stack_trace"], 1),
    "Which tensors' values were stored, and where?": (["tensor_id", "shape", "dtype", "file"], 50),
    "Each chip's L1 after every op (on a mesh, one row per chip)": (["operation_id", "name", "device_id",
                                                                    "l1_bytes"], 35),
    "Where does each shard of a mesh tensor live?": (["tensor_id", "shape", "device_id", "address"], 0),
}


def cookbook_queries() -> list[tuple[str, str]]:
    """(question, sql) for each ```sql block, the question being the ## heading above it."""
    found, question = [], None
    for part in re.split(r"^(## .*)$", COOKBOOK.read_text(), flags=re.M):
        if part.startswith("## "):
            question = part[3:].strip()
        else:
            found += [(question, sql.strip()) for sql in re.findall(r"```sql\n(.*?)```", part, flags=re.S)]
    return found


@pytest.fixture(scope="module")
def sample():
    with ttreport.open(SAMPLE_ROOT / "demo") as report:
        yield report


def params_for(report, sql: str) -> dict:
    """Values for the :names a query asks for, picked from the report the way a user would."""
    params = {}
    if ":tensor_id" in sql:  # a tensor some op made and others used
        params["tensor_id"] = report.sql(
            "SELECT tensor_id FROM tensors WHERE producer_operation_id IS NOT NULL AND tensor_id IN "
            "(SELECT tensor_id FROM input_tensors) ORDER BY tensor_id LIMIT 1")[0]["tensor_id"]
    if ":operation_id" in sql:  # the op at peak L1
        params["operation_id"] = report.summary().peak_l1["operation_id"]
    return params


def test_the_cookbook_answers_at_least_ten_questions():
    questions = [q for q, _ in cookbook_queries()]
    assert len(questions) >= 10
    assert len(set(questions)) == len(questions), "one query per question"
    assert set(questions) == set(EXPECTED), "a query was added or renamed: give it its expected columns here"


@pytest.mark.parametrize("question, sql", cookbook_queries(), ids=[q for q, _ in cookbook_queries()])
def test_each_query_runs_on_the_sample_report(sample, question, sql):
    columns, min_rows = EXPECTED[question]
    cur = sample.execute(sql, params_for(sample, sql))
    assert [d[0] for d in cur.description] == columns
    rows = cur.fetchall()
    assert len(rows) >= min_rows, f"{question}: {len(rows)} rows"


def test_the_answers_are_right_where_the_model_fixes_them(sample):
    by_question = dict(cookbook_queries())
    peak = sample.execute(by_question["Peak L1, and the op at which it happened"]).fetchone()
    assert peak[2] == max(r["l1_bytes"] for r in sample.sql("SELECT l1_bytes FROM operations"))
    floats = sample.sql(by_question["Which tensors are block floats (bfloat8_b, bfloat4_b), and who made them?"])
    assert {r["producer"] for r in floats} == {"ttnn.from_torch"}  # the two fc1 weights
    errors = sample.sql(by_question["Which ops raised, and with what message?"])
    assert [(e["operation_name"], e["error_type"]) for e in errors] == [("ttnn.add", "ValueError")]
    assert "strict mode" in errors[0]["error_message"]
    defaults = sample.sql(by_question["Which ops got their memory config from the default rather than by choice?"])
    assert {r["name"] for r in defaults} == {"ttnn.layer_norm", "ttnn.from_torch"}  # weights and norms


def test_the_demo_query_is_in_the_cookbook():
    assert DEMO_QUERY.strip() in COOKBOOK.read_text()
