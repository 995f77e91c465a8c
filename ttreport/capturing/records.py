"""The records that cross from the hook to the writer: their tags and fields, declared once.

Every producer (recorder.py, the C hook _hook.c, oplog.py's definitions, log_tensors.py) and every consumer
(oplog.LogTail, writer.Writer, log_perf) takes the tags and field positions from here. A record is
a plain tuple whose first item is its tag: marshal (the op log) writes exact tuples and ints only, and a
plain tuple costs the model's thread nothing to build that a NamedTuple's Python __new__ would (~0.3 us).
The NamedTuple of each kind is its declaration, and a reader's named view of a plain tuple:

    >>> from ttreport.capturing import records
    >>> rec = (records.FREE, 7, 42)               # what the buffer listener appends
    >>> records.view(rec).freed_seq
    42
    >>> records.Tag(rec[0]).name, records.FreeField.BUFFER_ID
    ('FREE', <FreeField.BUFFER_ID: 1>)

The C hook reads the same positions from `_records.h`, rendered from this module (`c_header()`; setup.py
writes it before building, and tests/test_records.py fails when the committed file differs).

Standard library only: the writer process, the readers' recovery and setup.py import it without torch.
"""

from __future__ import annotations

import enum
import sys
from typing import Any, NamedTuple


class Tag(enum.IntEnum):
    """A record's first item. 0-10: the recorder's records; 19 and up: only in an op log (oplog.py)."""

    OP = 0  # an op, at its end (Op)
    ALLOC = 1  # a buffer allocated (Alloc; AllocPages when buffer pages are recorded)
    FREE = 2  # a buffer freed (Free)
    TENSOR = 3  # a host tensor the capture made itself, a golden (HostTensor)
    DEVICE = 4  # a device's facts, its `devices` row (Device)
    ROW = 5  # one row of any table (Row; RowValues)
    META = 6  # a report_metadata key and value (Meta)
    FILE_LOST = 7  # a tensor's file could not be written (FileLost)
    FLUSH = 8  # commit what came before, then tell the waiter (Flush)
    STOP = 9  # the last record of a capture (Stop)
    PROGRAM = 10  # a device program an op launched (ProgramLaunch in a log; ProgramRun for the writer)
    VALUES = 19  # a stored tensor's bytes, for the writer process to write its file (Values)
    CODE = 20  # a stack's code object: its file and name (Code)
    CFG = 21  # a MemoryConfig, by its fields (Cfg)
    OBJ = 22  # an argument value's text (Obj)
    DEVICE_PERF = 23  # a chip's perf_model.PerfConfig fields (DevicePerf)
    STACK = 24  # a stack: code ids and line numbers (Stack)
    CBS = 25  # a program's circular buffers, in a log written before PROG (Cbs)
    PROG = 26  # a program's static part (Prog)


# The tags as plain ints: marshal refuses an IntEnum member, and the hot paths compare exact ints.
OP, ALLOC, FREE, TENSOR, DEVICE, ROW, META, FILE_LOST, FLUSH, STOP, PROGRAM = map(int, list(Tag)[:11])
VALUES, CODE, CFG, OBJ, DEVICE_PERF, STACK, CBS, PROG = map(int, list(Tag)[11:])


class Op(NamedTuple):
    """An op, made at its end. In an op log: `stack` is the number a STACK record defined, a tensor argument
    b"t<id>", another value b"o<n>" (an OBJ record's), `error` (type, message, traceback text, timestamp);
    LogTail hands the writer the frames, TensorArg and texts. Fields named as `operations` columns are copied
    to that column as they are (writer.py), so a new column of the op's is a field here of the same name."""

    tag: int
    name: str
    operation_id: int
    start_ns: int  # perf_counter_ns, from the capture's start
    end_ns: int
    parent_operation_id: int | None
    depth: int
    thread: str
    stack: Any  # a STACK number (the log), the interned frames (code id, line, ...) for the writer, or None
    args: tuple
    kwargs: dict | None
    inputs: tuple  # tensor ids of the tensor arguments, in order
    outputs: tuple  # tensor ids of the outputs
    specs: tuple  # a Spec of each tensor seen for the first time
    files: tuple | None  # (tensor_id, path in the report) of each stored tensor
    end_seq: int
    l1_bytes: int
    dram_bytes: int
    error: tuple | None  # an Error, or None
    step: int  # the run's step() calls when the op began (Token.step)


class Spec(NamedTuple):
    """A tensor's facts, the first time an op sees it. `layout` is int(layout), or (int(layout), tile height,
    tile width) for a tile other than 32x32; `config_id` an id the log defined by a CFG record."""

    tensor_id: int
    shape: tuple | None
    dtype: int
    layout: Any
    config_id: int | None
    memory_config_source: str | None
    device_id: int | None
    address: int | None
    buffer_type: int | None
    size: int | None
    producer_operation_id: int | None


class Error(NamedTuple):
    """An op's exception: its traceback a traceback.TracebackException on the model's thread, text in a log."""

    error_type: str
    message: str
    traceback: Any
    timestamp: str


class Token(NamedTuple):
    """What begin() returns and end() takes (the C and Python hooks make and read each other's)."""

    op: Any  # device_sim's registered op
    operation_id: int
    start_ns: int  # perf_counter_ns (not yet from the capture's start)
    parent_operation_id: int | None
    depth: int
    thread: str
    stack: Any
    args: tuple  # as recorded (Op.args)
    kwargs: dict | None
    inputs: list
    specs: list
    files: list  # of the inputs stored (tensors="all")
    golden_args: Any  # the golden checker's snapshot, or None
    op_args: tuple  # the op's own arguments, for the estimate and the golden
    op_kwargs: dict
    step: int  # Recorder.steps at begin


class Alloc(NamedTuple):
    """A buffer allocated. Its fields after the tag are buffer_lifetimes' columns of the same names."""

    tag: int
    buffer_id: int
    device_id: int
    address: int
    max_size_per_bank: int
    buffer_type: int
    buffer_layout: int
    size: int
    allocated_seq: int
    allocated_by_operation_id: int | None  # the op running on the thread, or None


# Alloc's fields and then the Buffer, derived from Alloc so that the two cannot drift: AllocField (of
# AllocPages) gives the positions of both, and the C hook writes Alloc's.
AllocPages = NamedTuple("AllocPages", [*Alloc.__annotations__.items(), ("buffer", Any)])
AllocPages.__doc__ = "Alloc with the Buffer (the recorder's), or its attributes by name (a log's), for buffer_pages."


class Free(NamedTuple):
    tag: int
    buffer_id: int
    freed_seq: int


class HostTensor(NamedTuple):
    tag: int
    tensor_id: int
    shape: tuple
    dtype: str  # its text
    producer_operation_id: int | None
    file: str | None


class Device(NamedTuple):
    tag: int
    facts: dict  # the devices row, by column


class Row(NamedTuple):
    tag: int
    table: str
    row: dict  # by column


class RowValues(NamedTuple):
    """One row by its columns and values: device_perf's row of every op as the writer process makes it (log_perf). The
    columns are one tuple for every such row, so the writer groups rows by it as they are, where a Row's dict is made
    and turned back into columns and values an op (2.3-2.9 -> 0.8 µs an op, timeit)."""

    tag: int
    table: str
    columns: tuple  # of str
    values: tuple  # one a column


class Meta(NamedTuple):
    tag: int
    key: str
    value: Any


class FileLost(NamedTuple):
    tag: int
    tensor_id: int


class Flush(NamedTuple):
    tag: int
    waiter: Any  # an int token in a log; an object with set() for the writer


class Stop(NamedTuple):
    tag: int
    waiter: Any  # as Flush's, or None


class ProgramRun(NamedTuple):
    """A launch as the writer reads it (device_sim.device_work.Program), and as a log before PROG held it."""

    tag: int
    operation_id: int | None
    program: Any


class ProgramLaunch(NamedTuple):
    """A launch in a log: its static part by a PROG record's number."""

    tag: int
    operation_id: int | None
    program_number: int
    program_id: int
    device_id: int
    cb_base: int


class Values(NamedTuple):
    tag: int
    tensor_id: int
    path: str  # in the report
    dtype: str  # torch dtype text
    shape: tuple
    data: bytes
    extra: tuple  # () | (operation_id,) a write into a stored tensor | (file name, device_id) a mesh shard
    device: tuple | None  # (dtype, layout, memory config fields) of a .bin, or None


class Code(NamedTuple):
    tag: int
    code_id: int
    filename: str
    name: str


class Cfg(NamedTuple):
    tag: int
    config_id: int
    fields: Any  # oplog.config_fields


class CfgText(NamedTuple):
    """A MemoryConfig as an earlier ttreport wrote it: its text and names."""

    tag: int
    config_id: int
    text: str
    buffer_type: str
    memory_layout: str


class Text:
    """A value by its text (its repr is the text): what the recorder wires in place of an object it must not hold,
    and what the log's reader gives back for an object it recorded (an Obj)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


class Obj(NamedTuple):
    tag: int
    number: int
    text: str


class DevicePerf(NamedTuple):
    tag: int
    device_id: int
    fields: tuple


class Stack(NamedTuple):
    tag: int
    number: int
    frames: tuple  # code id, line, code id, line, ...


class Cbs(NamedTuple):
    tag: int
    number: int
    cbs: tuple


class Prog(NamedTuple):
    tag: int
    number: int
    name: str
    factory: str
    cbs: tuple
    ranges: tuple
    cb_bytes: int


class TensorArg(int):
    """A tensor argument as the writer reads it (oplog.LogTail makes it of the log's b"t<id>"): its id only."""

    __slots__ = ()


# Each tag's kinds, the current one first: a log may hold an earlier form of the same tag (a capture killed
# under an earlier ttreport, finished by this one), told apart by its number of fields. ROW has two current kinds.
KINDS: dict[int, tuple[type, ...]] = {
    OP: (Op,), ALLOC: (Alloc, AllocPages), FREE: (Free,), TENSOR: (HostTensor,), DEVICE: (Device,),
    ROW: (Row, RowValues), META: (Meta,), FILE_LOST: (FileLost,), FLUSH: (Flush,), STOP: (Stop,),
    PROGRAM: (ProgramLaunch, ProgramRun),
    VALUES: (Values,), CODE: (Code,), CFG: (Cfg, CfgText), OBJ: (Obj,), DEVICE_PERF: (DevicePerf,),
    STACK: (Stack,), CBS: (Cbs,), PROG: (Prog,),
}
_BY_SHAPE = {(tag, len(kind._fields)): kind for tag, kinds in KINDS.items() for kind in kinds}
WIDTHS = {tag: frozenset(len(kind._fields) for kind in kinds) for tag, kinds in KINDS.items()}


def kind(rec: tuple) -> type | None:
    """The NamedTuple that `rec` (a plain tuple, tag first) is one of, or None for no record ttreport writes."""
    return _BY_SHAPE.get((rec[0], len(rec)))


def view(rec: tuple):
    """`rec` as its NamedTuple (no copy of its items; C-speed attribute reads), for readers off the hot path."""
    return tuple.__new__(_BY_SHAPE[(rec[0], len(rec))], rec)


def _fields(kind_: type) -> type[enum.IntEnum]:
    """An IntEnum of a kind's field positions: OpField.SPECS == 13."""
    return enum.IntEnum(f"{kind_.__name__}Field", [(f.upper(), i) for i, f in enumerate(kind_._fields)])


OpField = _fields(Op)
SpecField = _fields(Spec)
TokenField = _fields(Token)
AllocField = _fields(AllocPages)  # Alloc's positions, and the Buffer's after them
FreeField = _fields(Free)
ProgramLaunchField = _fields(ProgramLaunch)
ValuesField = _fields(Values)

# What the C hook reads and writes, by the prefix of its macros.
_C_KINDS = {"OP": Op, "SPEC": Spec, "TOKEN": Token, "ALLOC": Alloc, "FREE": Free, "PROGRAM": ProgramLaunch,
            "VALUES": Values}


def c_header() -> str:
    """_records.h: the tags and, per kind, each field's position and the width, as macros."""
    lines = ["/* Generated from ttreport/capturing/records.py by c_header() (setup.py writes it before building). Do",
             " * not edit: change records.py; tests/test_records.py fails while this differs from it. */",
             "#ifndef TTREPORT_RECORDS_H", "#define TTREPORT_RECORDS_H", ""]
    lines += [f"#define TAG_{t.name} {t.value}" for t in Tag]
    for prefix, kind_ in _C_KINDS.items():
        lines.append("")
        lines += [f"#define {prefix}_{f.upper()} {i}" for i, f in enumerate(kind_._fields) if f != "tag"]
        lines.append(f"#define {prefix}_WIDTH {len(kind_._fields)}")
    lines += ["", "#endif", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(c_header())
