"""The portable `.bin` tensor file: exact round trips, no device needed, and every bad file rejected."""

import contextlib
import json
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import device_sim as ttnn
from device_sim.serialization import FORMAT_VERSION, MAGIC, TensorFileError

ALL_DTYPES = [ttnn.bfloat16, ttnn.float32, ttnn.bfloat8_b, ttnn.bfloat4_b, ttnn.uint8, ttnn.uint16, ttnn.int32,
              ttnn.uint32]


def sample(dtype, shape=(2, 33, 40)):
    if dtype.is_float:
        return torch.randn(shape) * 50
    return torch.randint(0, 2**31 - 1, shape, dtype=torch.int64)  # clamped per dtype, range ends included


def written(tmp_path, tensor, name="t.bin"):
    path = tmp_path / name
    ttnn.dump_tensor(path, tensor)
    return path


def split(blob):
    """(version, header dict, data bytes) of a valid file."""
    _, version, n = struct.unpack_from("<8sII", blob)
    return version, json.loads(blob[16:16 + n]), blob[16 + n:-4]


def assemble(header, data, version=FORMAT_VERSION, magic=MAGIC):
    """A file with a correct checksum, so the reader's later checks are what reject it."""
    h = json.dumps(header).encode()
    body = struct.pack("<8sII", magic, version, len(h)) + h + data
    return body + struct.pack("<I", zlib.crc32(body))


# Every dtype in every layout it may use (block floats exist only in TILE).
@pytest.mark.parametrize("dtype, layout", [(d, lay) for d in ALL_DTYPES for lay in (ttnn.TILE, ttnn.ROW_MAJOR)
                                           if not (d.is_block_float and lay == ttnn.ROW_MAJOR)])
def test_round_trip_is_bit_exact_for_every_dtype_and_layout(dtype, layout, device, tmp_path):
    t = ttnn.from_torch(sample(dtype), dtype=dtype, layout=layout, device=device, memory=ttnn.L1)
    path = written(tmp_path, t)
    host = ttnn.load_tensor(path)
    assert (host.dtype, host.layout, host.shape, host.padded_shape) == (dtype, layout, t.shape, t.padded_shape)
    assert host.device() is None and host.memory_config() is None
    assert host.value.dtype == t.value.dtype
    # Compare the raw bits: block floats must come back exactly as the device held them.
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.value.element_size()]
    assert torch.equal(host.value.view(bits), t.value.view(bits))
    on_device = ttnn.load_tensor(path, device=device)
    assert on_device.memory_config() == ttnn.L1 and on_device.memory_config_source == "argument"


def test_round_trip_keeps_special_values(tmp_path):
    x = torch.tensor([[0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-40, 65504.0]])
    for dtype in (ttnn.bfloat16, ttnn.float32):
        back = ttnn.load_tensor(written(tmp_path, ttnn.from_torch(x, dtype=dtype))).value
        assert torch.equal(back.float().nan_to_num(), x.to(back.dtype).float().nan_to_num())
        assert torch.equal(torch.signbit(back), torch.signbit(x.to(back.dtype)))


@pytest.mark.parametrize("strategy, orientation", [
    (ttnn.ShardStrategy.HEIGHT, ttnn.ShardOrientation.ROW_MAJOR),
    (ttnn.ShardStrategy.BLOCK, ttnn.ShardOrientation.COL_MAJOR),
])
def test_sharded_memory_config_survives(strategy, orientation, device, tmp_path):
    cfg = ttnn.create_sharded_memory_config((1, 128, 128), ttnn.CoreGrid(y=2, x=2), strategy, orientation)
    t = ttnn.from_torch(torch.randn(1, 128, 128), dtype=ttnn.bfloat8_b, layout=ttnn.TILE, device=device,
                        memory=cfg)
    path = written(tmp_path, t)
    assert split(path.read_bytes())[1]["memory_config"]["memory_layout"] == cfg.memory_layout.name
    back = ttnn.load_tensor(path, device=device)
    assert back.memory_config() == cfg and back.buffer.num_banks == 4
    assert torch.equal(back.value, t.value)


def test_scalar_and_empty_tensors(tmp_path):
    for x in (torch.tensor(3.5), torch.zeros(0, 7)):
        back = ttnn.load_tensor(written(tmp_path, ttnn.from_torch(x, dtype=ttnn.bfloat16)))
        assert torch.equal(back.value, x.bfloat16())


def test_a_host_tensor_loaded_onto_a_device_follows_the_memory_rules(device, tmp_path):
    path = written(tmp_path, ttnn.from_torch(torch.randn(32, 32), dtype=ttnn.bfloat16))
    assert split(path.read_bytes())[1]["memory_config"] is None
    with ttnn.memory(ttnn.L1):
        t = ttnn.load_tensor(path, device=device)
    assert (t.memory_config(), t.memory_config_source) == (ttnn.L1, "context")


def test_the_header_names_everything_in_text(device, tmp_path):
    t = ttnn.from_torch(torch.randn(3, 40), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device, memory=ttnn.L1)
    blob = written(tmp_path, t).read_bytes()
    version, header, data = split(blob)
    assert blob[:8] == MAGIC and version == FORMAT_VERSION
    assert header == {
        "dtype": "BFLOAT16", "layout": "TILE", "shape": [3, 40], "padded_shape": [32, 64],
        "memory_config": {"memory_layout": "INTERLEAVED", "buffer_type": "L1", "shard_spec": None},
        "mesh": None, "tile": {"tile_shape": [32, 32], "transpose_tile": False},
        "data": {"encoding": "bfloat16", "byte_order": "little", "order": "C", "nbytes": 240},
    }
    assert data == t.value.view(torch.int16).numpy().astype("<i2").tobytes()


def test_load_needs_no_device_in_a_fresh_interpreter(device, tmp_path):
    path = written(tmp_path, ttnn.from_torch(torch.arange(6.0).reshape(2, 3), dtype=ttnn.float32, device=device))
    script = (f"import device_sim as ttnn; "
              f"print(ttnn.open_devices(), ttnn.load_tensor({str(path)!r}).to_torch().tolist())")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]"


def test_dump_refuses_what_it_cannot_store(device, tmp_path):
    with pytest.raises(TypeError, match="torch.save"):
        ttnn.dump_tensor(tmp_path / "t.bin", torch.zeros(2))
    t = ttnn.from_torch(torch.zeros(2), device=device)
    t.deallocate()
    with pytest.raises(RuntimeError, match="deallocated"):
        ttnn.dump_tensor(tmp_path / "t.bin", t)
    assert list(tmp_path.iterdir()) == []  # nothing half-written left behind


# -- rejection --------------------------------------------------------------------------------
@pytest.fixture
def valid(tmp_path):
    t = ttnn.from_torch(torch.randn(4, 40), dtype=ttnn.bfloat8_b, layout=ttnn.TILE)
    return written(tmp_path, t).read_bytes()


def rejects(tmp_path, blob, match):
    path = tmp_path / "bad.bin"
    path.write_bytes(blob)
    with pytest.raises(TensorFileError, match=match) as info:
        ttnn.load_tensor(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert isinstance(info.value, ValueError)


def test_rejects_a_file_that_is_not_a_tensor(tmp_path):
    rejects(tmp_path, b"PK\x03\x04 a zip file, say" * 4, "not a device_sim tensor file")
    rejects(tmp_path, MAGIC.replace(b"\r\n", b"\n") + b"\0" * 32, "bad magic")  # a text-mode transfer


def test_rejects_a_newer_version(tmp_path, valid):
    _, header, data = split(valid)
    rejects(tmp_path, assemble(header, data, version=FORMAT_VERSION + 1),
            f"format version {FORMAT_VERSION + 1}.*upgrade device_sim")


@pytest.mark.parametrize("keep", [0, 5, 12, 20, 100, -1])
def test_rejects_a_truncated_file(tmp_path, valid, keep):
    rejects(tmp_path, valid[:keep], "truncated|checksum")


def test_rejects_a_flipped_bit(tmp_path, valid):
    corrupt = bytearray(valid)
    corrupt[len(valid) // 2] ^= 0x10
    rejects(tmp_path, bytes(corrupt), "checksum mismatch")


def test_rejects_a_huge_header_length_without_allocating_it(tmp_path, valid):
    rejects(tmp_path, valid[:12] + struct.pack("<I", 2**32 - 1) + valid[16:], "header length 4294967295 exceeds")
    rejects(tmp_path, valid[:12] + struct.pack("<I", 100_000) + valid[16:], "truncated")


@pytest.mark.parametrize("change, match", [
    (lambda h: h.update(dtype="BFLOAT3"), "unknown DataType 'BFLOAT3'"),
    (lambda h: h.update(layout="ROW_MAJOR", padded_shape=h["shape"]), "exists only in TILE layout"),
    (lambda h: h.update(shape=[10**12, 10**12], padded_shape=[10**12, 10**12]), "data section holds"),
    (lambda h: h.update(shape=[-4, 40]), "non-negative ints"),
    (lambda h: h.update(padded_shape=[4, 40]), "does not match"),
    (lambda h: h["data"].update(byte_order="big"), "little-endian"),
    (lambda h: h.update(memory_config={"memory_layout": "HEIGHT_SHARDED", "buffer_type": "L1", "shard_spec": None}),
     "needs a shard_spec"),
    (lambda h: h.update(mesh={"shape": [2, 4]}), "mesh placement"),
    (lambda h: h.pop("dtype"), "bad header"),
])
def test_rejects_a_bad_header_even_with_a_good_checksum(tmp_path, valid, change, match):
    _, header, data = split(valid)
    change(header)
    rejects(tmp_path, assemble(header, data), match)


def test_rejects_a_header_that_is_not_json(tmp_path, valid):
    body = MAGIC + struct.pack("<II", FORMAT_VERSION, 3) + b"\xff{["
    rejects(tmp_path, body + struct.pack("<I", zlib.crc32(body)), "not valid JSON")




def _valid_file() -> bytes:
    # Hypothesis tests cannot share a function-scoped fixture across examples: build it once.
    with tempfile.TemporaryDirectory() as d:
        t = ttnn.from_torch(torch.randn(2, 40), dtype=ttnn.bfloat4_b, layout=ttnn.TILE)
        return written(Path(d), t).read_bytes()


VALID = _valid_file()
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def only_tensor_file_errors(tmp_path, blob):
    path = tmp_path / "fuzz.bin"
    path.write_bytes(blob)
    with contextlib.suppress(TensorFileError):  # the one exception a bad file may raise; any other fails
        ttnn.load_tensor(path)


@FUZZ
@given(blob=st.binary(max_size=400))
def test_random_bytes_raise_only_tensor_file_error(tmp_path, blob):
    only_tensor_file_errors(tmp_path, blob)
    only_tensor_file_errors(tmp_path, MAGIC + blob)


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=6),
       cut=st.integers(0, len(VALID)))
def test_mutated_files_raise_only_tensor_file_error(tmp_path, edits, cut):
    blob = bytearray(VALID)
    for i, b in edits:
        blob[i] = b
    only_tensor_file_errors(tmp_path, bytes(blob))
    only_tensor_file_errors(tmp_path, bytes(blob[:cut]))


@FUZZ
@given(text=st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                         lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                      max_size=4)),
       key=st.sampled_from(["dtype", "layout", "shape", "padded_shape", "memory_config", "mesh", "data"]))
def test_mutated_headers_with_good_checksums_raise_only_tensor_file_error(tmp_path, text, key):
    _, header, data = split(VALID)
    header[key] = text
    only_tensor_file_errors(tmp_path, assemble(header, data))


def test_a_version_1_file_has_no_tile_and_reads_with_the_32_by_32_one(device, tmp_path):
    t = ttnn.from_torch(torch.randn(3, 40), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    _, header, data = split(written(tmp_path, t).read_bytes())
    del header["tile"]
    (tmp_path / "v1.bin").write_bytes(assemble(header, data, version=1))
    back = ttnn.load_tensor(tmp_path / "v1.bin")
    assert back.tile == ttnn.Tile() and torch.equal(back.value, t.value)


def test_a_tile_that_disagrees_with_the_padded_shape_is_rejected(device, tmp_path):
    t = ttnn.from_torch(torch.randn(3, 40), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    _, header, data = split(written(tmp_path, t).read_bytes())
    header["tile"] = {"tile_shape": [16, 32], "transpose_tile": False}  # pads 3 rows to 16, not 32
    rejects(tmp_path, assemble(header, data),
            r"padded_shape \[32, 64\] does not match .* with Tile with shape: \[16, 32\]")
    header["tile"] = {"tile_shape": [3, 32], "transpose_tile": False}
    rejects(tmp_path, assemble(header, data), r"Tile\(\[3, 32\]\) is not a tile the device has")


@pytest.mark.parametrize("mode", [ttnn.DumpTensorMode.LOCAL, ttnn.DumpTensorMode.DISTRIBUTED_GATHER])
def test_dump_tensor_takes_tt_nns_mode_keyword(device, tmp_path, mode):
    # Models write ttnn.dump_tensor(path, t, mode=ttnn.DumpTensorMode.LOCAL); on one host both modes write alike.
    t = ttnn.from_torch(torch.randn(3, 40), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    ttnn.dump_tensor(tmp_path / "t.bin", t, mode=mode)
    assert torch.equal(ttnn.load_tensor(tmp_path / "t.bin").value, t.value)
    with pytest.raises(TypeError, match="mode must be a ttnn.DumpTensorMode"):
        ttnn.dump_tensor(tmp_path / "u.bin", t, mode="local")


def test_an_empty_shape_too_large_to_stride_is_a_tensor_file_error(tmp_path):
    # Found by tests/test_fuzz_bin.py: zero elements, but torch cannot compute strides for the other dims.
    shape = [0, 2147483646, 4294967301]
    header = {"dtype": "BFLOAT16", "layout": "ROW_MAJOR", "shape": shape, "padded_shape": shape, "memory_config": None,
              "mesh": None, "data": {"encoding": "bfloat16", "byte_order": "little", "order": "C", "nbytes": 0}}
    rejects(tmp_path, assemble(header, b""), r"shape \[0, 2147483646, 4294967301\] cannot be held")
