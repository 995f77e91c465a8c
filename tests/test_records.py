"""The records that cross from the hook to the writer are declared once (ttreport/capturing/records.py), and the C hook
reads the same positions: its header is rendered from the module, and this fails while the committed one differs."""

import re
import subprocess
import sys
from pathlib import Path

from ttreport import schema
from ttreport.capturing import records

ROOT = Path(__file__).resolve().parents[1]
CAPTURE = ROOT / "ttreport" / "capturing"


def test_the_committed_c_header_is_the_one_records_py_renders():
    header = (CAPTURE / "_records.h").read_text()
    assert header == records.c_header(), (
        "ttreport/capturing/_records.h differs from records.py: run `python setup.py build_ext --inplace` (it writes "
        "the header) or `python -m ttreport.capturing.records > ttreport/capturing/_records.h`")


def test_the_c_hook_takes_its_tags_from_the_header_and_defines_none_itself():
    source = (CAPTURE / "_hook.c").read_text()
    assert '#include "_records.h"' in source
    assert not re.search(r"#define\s+(TAG|OP|TOKEN|SPEC|ALLOC|FREE|PROGRAM|VALUES)_", source)
    # Records are built by their macros' positions, never by a count written by hand
    assert not re.search(r"PyTuple_Pack\((3|6|8|10|11|15|19),", source)


def test_the_header_defines_each_tag_and_field_position_of_the_module():
    defines = dict(re.findall(r"#define (\w+) (\d+)", (CAPTURE / "_records.h").read_text()))
    for tag in records.Tag:
        assert int(defines[f"TAG_{tag.name}"]) == tag.value
    for i, field in enumerate(records.Op._fields[1:], start=1):
        assert int(defines[f"OP_{field.upper()}"]) == i
    assert int(defines["OP_WIDTH"]) == len(records.Op._fields)
    assert int(defines["TOKEN_WIDTH"]) == len(records.Token._fields)


def test_the_module_renders_the_header_as_a_script_with_the_standard_library_only():
    # setup.py loads records.py by its path, before anything is built: nothing of torch or device_sim is needed
    code = ("import importlib.util, sys; s = importlib.util.spec_from_file_location('r', sys.argv[1]); "
            "m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
            "assert not {'torch', 'device_sim', 'ttreport'} & set(sys.modules), sorted(sys.modules); "
            "sys.stdout.write(m.c_header())")
    out = subprocess.run([sys.executable, "-c", code, str(CAPTURE / "records.py")], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out == (CAPTURE / "_records.h").read_text()


def test_each_tag_has_its_kinds_and_a_plain_int_constant():
    assert set(records.KINDS) == {int(t) for t in records.Tag}
    for tag in records.Tag:
        constant = getattr(records, tag.name)
        assert type(constant) is int and constant == tag.value
        for kind in records.KINDS[tag]:
            assert kind._fields[0] == "tag"


def test_a_plain_record_reads_by_name_through_its_view():
    rec = (records.ALLOC, 5, 0, 1024, 2048, 1, 0, 4096, 9, 3)
    a = records.view(rec)
    assert type(a) is records.Alloc and a.buffer_id == 5 and a.allocated_by_operation_id == 3
    assert records.kind(rec + ("buffer",)) is records.AllocPages
    assert records.kind((records.ALLOC, 1)) is None  # no record ttreport writes


def test_an_op_record_field_named_as_an_operations_column_is_that_column():
    # writer.py copies these to the operations row as they are: a new column of an op is one field here
    columns = {c.name for c in schema.operations.columns}
    direct = [f for f in records.Op._fields if f in columns]
    assert {"operation_id", "name", "start_ns", "end_ns", "parent_operation_id", "depth", "thread", "end_seq",
            "l1_bytes", "dram_bytes"} <= set(direct)
    # ALLOC's fields after its tag are buffer_lifetimes' columns
    assert set(records.Alloc._fields[1:]) <= {c.name for c in schema.buffer_lifetimes.columns}
