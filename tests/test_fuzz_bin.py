"""The .bin reader fuzzed past tests/test_serialization.py's random bytes and one-key header swaps.

Here whole headers are built from near-valid values (huge, negative or mismatched shapes, wrong
nbytes, odd shard grids, every dtype/layout) with a correct checksum, so inputs reach the
decoder rather than dying at the magic or the CRC; and the prelude's length fields are drawn
over all of uint32. Every input must end in TensorFileError (device_sim's; ttreport's when read
through a report), within a per-example deadline, and without a large allocation: the process's
peak RSS may not grow by more than RSS_BUDGET while one input is read, which an allocation sized
by an unchecked length (one shape claims up to 2**62 elements) would blow. (Measured per input:
over a whole module, other threads' and earlier tests' memory made the figure noisy.)

Under `make test` the tests run about 1,200 inputs in a few seconds; TTREPORT_STRESS=1 runs about
33 times as many.
"""

import contextlib
import json
import os
import resource
import struct
import tempfile
import zlib
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import device_sim as ttnn
import ttreport
from device_sim.serialization import ENCODING, FORMAT_VERSION, MAGIC, TensorFileError

STRESS = os.environ.get("TTREPORT_STRESS") == "1"
FUZZ_EXAMPLES = 20_000 if STRESS else 600
RSS_BUDGET = 64 << 20
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=1000, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SHORT = settings(FUZZ, max_examples=FUZZ_EXAMPLES // 4)  # for inputs that die at the prelude: less to explore

DIR = Path(tempfile.mkdtemp(prefix="fuzz-bin-"))  # hypothesis examples cannot share tmp_path
DTYPES = [d.name for d in ENCODING]
LAYOUTS = ["TILE", "ROW_MAJOR"]


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def assemble(header, data: bytes, *, version=FORMAT_VERSION, header_len=None) -> bytes:
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    body = struct.pack("<8sII", MAGIC, version, len(h) if header_len is None else header_len) + h + data
    return body + struct.pack("<I", zlib.crc32(body))


def only_tensor_file_errors(blob: bytes) -> None:
    path = DIR / "fuzz.bin"
    path.write_bytes(blob)
    before = peak_rss()
    with contextlib.suppress(TensorFileError):  # the one documented exception; anything else fails the test
        ttnn.load_tensor(path)
    grown = peak_rss() - before
    assert grown < RSS_BUDGET, f"reading one fuzzed file raised the peak RSS by {grown >> 20} MiB"


dims = st.one_of(st.integers(0, 70), st.integers(-3, -1), st.integers(2**31 - 2, 2**62), st.just(True),
                 st.floats(allow_nan=True), st.text(max_size=3))
shapes = st.lists(dims, max_size=10) | st.none() | st.text(max_size=4)
grids = st.lists(st.fixed_dictionaries({"start": st.lists(dims, max_size=3), "end": st.lists(dims, max_size=3)}),
                 max_size=3)
memory_configs = st.none() | st.fixed_dictionaries({
    "memory_layout": st.sampled_from(["INTERLEAVED", "HEIGHT_SHARDED", "WIDTH_SHARDED", "BLOCK_SHARDED", "X"]),
    "buffer_type": st.sampled_from(["DRAM", "L1", "TRACE", "nope"]),
    "shard_spec": st.none() | st.fixed_dictionaries({
        "grid": grids, "shape": st.lists(dims, max_size=3),
        "orientation": st.sampled_from(["ROW_MAJOR", "COL_MAJOR", 3])}),
})


@st.composite
def near_valid_files(draw) -> bytes:
    dtype, layout = draw(st.sampled_from(DTYPES)), draw(st.sampled_from(LAYOUTS))
    shape = draw(shapes)
    try:
        numel = 1
        for d in shape:
            numel *= int(d)
        claimed = numel * {"u1": 1, "<u2": 2, "<f4": 4, "<i4": 4, "<u4": 4}[ENCODING[ttnn.DataType[dtype]][1]]
    except (TypeError, ValueError, OverflowError):
        claimed = draw(st.integers(0, 4096))
    padded = shape
    if draw(st.booleans()):
        padded = draw(shapes)
    elif layout == "TILE" and isinstance(shape, list) and len(shape) >= 2:
        with contextlib.suppress(TypeError, ValueError, OverflowError):
            padded = [*shape[:-2], *(-(-int(d) // 32) * 32 for d in shape[-2:])]
    header = {
        "dtype": dtype, "layout": layout, "shape": shape, "padded_shape": padded,
        "memory_config": draw(memory_configs), "mesh": draw(st.none() | st.just({"shape": [1, 2]})),
        "data": {"encoding": draw(st.sampled_from(["bfloat16", "float32", "uint8", "int32", "x"])),
                 "byte_order": draw(st.sampled_from(["little", "big"])), "order": "C",
                 "nbytes": draw(st.sampled_from([claimed, claimed + 1, -1, 2**63]))},
    }
    for key in draw(st.lists(st.sampled_from(list(header)), max_size=2, unique=True)):
        del header[key]
    data_len = draw(st.sampled_from([min(claimed, 4096) if isinstance(claimed, int) and claimed >= 0 else 0,
                                     draw(st.integers(0, 256))]))
    return assemble(header, bytes(data_len))


@FUZZ
@given(blob=near_valid_files())
def test_near_valid_headers_raise_only_tensor_file_error(blob):
    only_tensor_file_errors(blob)


@SHORT
@given(version=st.integers(0, 2**32 - 1), header_len=st.integers(0, 2**32 - 1), tail=st.binary(max_size=64))
def test_any_version_and_header_length_raise_only_tensor_file_error(version, header_len, tail):
    only_tensor_file_errors(assemble(b'{"dtype": "FLOAT32"}', tail, version=version, header_len=header_len))


@SHORT
@given(depth=st.integers(1, 20_000), opener=st.sampled_from(["[", '{"a":']))
def test_deeply_nested_headers_raise_only_tensor_file_error(depth, opener):
    only_tensor_file_errors(assemble((opener * depth).encode(), b""))


@pytest.mark.parametrize("shape", [[2**31, 2**31], [2**62], [65536] * 8, [0, 2**62]])
def test_a_shape_claiming_more_than_the_file_holds_is_refused_before_allocating(shape):
    before = peak_rss()
    n = 1
    for d in shape:
        n *= d
    blob = assemble({"dtype": "FLOAT32", "layout": "ROW_MAJOR", "shape": shape, "padded_shape": shape,
                     "memory_config": None, "mesh": None,
                     "data": {"encoding": "float32", "byte_order": "little", "order": "C", "nbytes": n * 4}}, b"")
    path = DIR / "big.bin"
    path.write_bytes(blob)
    if n == 0:
        assert ttnn.load_tensor(path).value.numel() == 0  # an empty tensor is a real tensor
    else:
        with pytest.raises(TensorFileError, match="needs"):
            ttnn.load_tensor(path)
    assert peak_rss() - before < RSS_BUDGET


@SHORT
@given(blob=near_valid_files() | st.binary(max_size=300))
def test_through_a_report_only_ttreports_tensor_file_error(blob):
    # A report's .bin is read by ttreport.load_tensor, which names the file in ttreport's own error class.
    folder = DIR / "report"
    (folder / "tensors").mkdir(parents=True, exist_ok=True)
    (folder / "tensors" / "7.bin").write_bytes(blob)
    before = peak_rss()
    try:
        ttreport.load_tensor(folder, 7)
    except ttreport.TensorFileError as e:
        assert "7.bin" in str(e)
    assert peak_rss() - before < RSS_BUDGET


def test_the_fuzzer_reaches_the_decoder():
    # A near-valid file with the right sizes must load: otherwise the strategies only test the early checks.
    t = ttnn.from_torch(torch.arange(6.0).reshape(2, 3), dtype=ttnn.float32, layout=ttnn.ROW_MAJOR)
    path = DIR / "ok.bin"
    ttnn.dump_tensor(path, t)
    blob = path.read_bytes()
    (n,) = struct.unpack_from("<I", blob, 12)
    header = json.loads(blob[16:16 + n])
    only_tensor_file_errors(assemble(header, blob[16 + n:-4]))
    assert torch.equal(ttnn.load_tensor(DIR / "fuzz.bin").value, t.value)
