"""device_sim's portable tensor file (`.bin`): readable on any host, with or without a device.

It fixes each portability fault of TT-NN's own `.bin` (DESIGN.md): nothing in it is a raw
enum, struct or `size_t`, every integer is little-endian, and device tensors are read back
and stored as host data with their memory config named in text.

    offset  size  field
    0       8     MAGIC
    8       4     format version, uint32 LE
    12      4     header length H, uint32 LE (at most MAX_HEADER_BYTES)
    16      H     header: UTF-8 JSON object (see _header)
    16+H    N     data: the logical-shape values in C order, little-endian, encoded per ENCODING
    16+H+N  4     CRC-32 (zlib) of every byte before it, uint32 LE

Block floats (bfloat8_b, bfloat4_b) are stored as the bfloat16 bits of the values the
device holds, which represent them exactly. Tile padding is not stored: it is implied by
the layout, and `padded_shape` is recorded only so readers need not know the tile rules.
"""

from __future__ import annotations

import enum
import json
import math
import os
import struct
import tempfile
import zlib
from pathlib import Path

import numpy as np
import torch

from device_sim import dtypes, placement
from device_sim.distributed import MeshTensor
from device_sim.tensor import Tensor, padded
from device_sim.tile import DEFAULT_TILE, Tile
from device_sim.types import (
    BufferType,
    CoreCoord,
    CoreRange,
    CoreRangeSet,
    DataType,
    Layout,
    MemoryConfig,
    NdShardSpec,
    ShardDistributionStrategy,
    ShardOrientation,
    ShardSpec,
    TensorMemoryLayout,
)

# The first byte is non-ASCII and CR LF follow, as in PNG's magic, so a file mangled by a
# text-mode transfer is caught as "not a device_sim tensor" rather than read as garbage.
MAGIC = b"\x89TTSIM\r\n"
# Version 2 adds the header's "tile" (a tile other than 32x32 changes the padded shape); version 1 files,
# which have none, are read with the 32x32 tile they were written with.
FORMAT_VERSION = 2
MAX_HEADER_BYTES = 1 << 20
MAX_RANK = 8
_PRELUDE = struct.Struct("<8sII")  # magic, version, header length
_CRC = struct.Struct("<I")

# How each device dtype's values are encoded in the data section: (name in the header, numpy dtype).
ENCODING = {
    DataType.BFLOAT16: ("bfloat16", "<u2"),
    DataType.BFLOAT8_B: ("bfloat16", "<u2"),
    DataType.BFLOAT4_B: ("bfloat16", "<u2"),
    DataType.FLOAT32: ("float32", "<f4"),
    DataType.UINT8: ("uint8", "u1"),
    DataType.UINT16: ("uint16", "<u2"),
    DataType.INT32: ("int32", "<i4"),
    DataType.UINT32: ("uint32", "<u4"),
}


_NUMPY_HOST = {torch.float32: np.float32, torch.uint8: np.uint8, torch.int32: np.int32, torch.int64: np.int64}


class TensorFileError(ValueError):
    """A `.bin` tensor file that cannot be read: not one, from a newer device_sim, truncated or corrupt."""

    def __init__(self, path, problem: str):
        if len(problem) > 300:  # a header value quoted in full could run to a megabyte
            problem = problem[:297] + "..."
        super().__init__(f"{path}: {problem}")
        self.path = path


# -- writing ----------------------------------------------------------------------------------
class DumpTensorMode(enum.Enum):
    """TT-NN's dump_tensor(mode=) (serialization.hpp): DISTRIBUTED_GATHER writes from rank 0 after gathering
    every host's shards, LOCAL writes each host's own. device_sim runs one host, so both write the same file."""

    DISTRIBUTED_GATHER = 0
    LOCAL = 1


def dump_tensor(file_name, tensor: Tensor, *, mode: DumpTensorMode = DumpTensorMode.DISTRIBUTED_GATHER) -> None:
    """Write `tensor` to `file_name` in the portable format; a device tensor is read back first.

    The file appears complete or not at all: it is written beside the target and renamed.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"dump_tensor takes a ttnn tensor, got {type(tensor).__name__}; "
            f"save a torch.Tensor with torch.save instead"
        )
    if not isinstance(mode, DumpTensorMode):
        raise TypeError(f"dump_tensor: mode must be a ttnn.DumpTensorMode (LOCAL or DISTRIBUTED_GATHER), got {mode!r}")
    value = tensor.value  # raises if deallocated; reading it is no op, so profilers may call this
    shards = getattr(tensor, "shards", None)  # a mesh tensor: every chip's shard, back to back, in chip order
    if shards is not None and any(tuple(s.value.shape) != tuple(value.shape) for s in shards):
        raise ValueError(f"dump_tensor: tensor {tensor.tensor_id}'s shards differ in shape; the format holds "
                         f"equal shards")
    data = b"".join(_encode(s.value, tensor.dtype) for s in shards) if shards is not None else \
        _encode(value, tensor.dtype)
    header = json.dumps(_header(tensor, value, len(data)), separators=(",", ":")).encode()
    body = _PRELUDE.pack(MAGIC, FORMAT_VERSION, len(header)) + header + data
    blob = body + _CRC.pack(zlib.crc32(body))
    path = Path(file_name)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _encode(value: torch.Tensor, dtype: DataType) -> bytes:
    _, np_dtype = ENCODING[dtype]
    v = value.detach().cpu().contiguous()
    if v.dtype == torch.bfloat16:
        v = v.view(torch.int16)  # the raw bits; numpy has no bfloat16
        return v.numpy().view(np.uint16).astype(np_dtype).tobytes()
    return v.numpy().astype(np_dtype).tobytes()


def _header(t: Tensor, value: torch.Tensor, nbytes: int) -> dict:
    # ttreport's stand-in for a stored tensor (storage._host_tensor) has no tile: it is written as 32x32.
    tile = getattr(t, "tile", None) or DEFAULT_TILE
    return {
        "dtype": t.dtype.name,
        "layout": t.layout.name,
        "shape": list(value.shape),
        "padded_shape": list(padded(value.shape, t.layout, tile)),
        # As TT-NN's TensorSpec flatbuffer (tensor_spec.fbs: Tile {tile_shape_h, tile_shape_w, transpose_tile}).
        "tile": None if t.layout != Layout.TILE else {"tile_shape": list(tile.tile_shape),
                                                       "transpose_tile": tile.transpose_tile},
        "memory_config": _memory_config_to_json(t.memory_config()),  # null: it was a host tensor
        # A mesh tensor's shards follow each other in the data, chip by chip (row-major); `shape` is one shard's.
        "mesh": None if getattr(t, "shards", None) is None else {"shape": list(t.mesh.shape),
                                                                 "shards": len(t.shards)},
        "data": {"encoding": ENCODING[t.dtype][0], "byte_order": "little", "order": "C", "nbytes": nbytes},
    }


def _memory_config_to_json(cfg: MemoryConfig | None):
    if cfg is None:
        return None
    spec, nd = cfg.shard_spec, cfg.nd_shard_spec
    out = {
        "memory_layout": cfg.memory_layout.name,
        "buffer_type": cfg.buffer_type.name,
        "shard_spec": None if spec is None else {
            "grid": _grid_to_json(spec.grid),
            "shape": list(spec.shape),
            "orientation": spec.orientation.name,
        },
    }
    if nd is not None:  # an ND-sharded config (TensorSpec.sharded..., MemoryConfig(buffer_type, nd_shard_spec))
        out["nd_shard_spec"] = {"grid": _grid_to_json(nd.grid), "shard_shape": list(nd.shard_shape),
                                "orientation": nd.orientation.name,
                                "shard_distribution_strategy": nd.shard_distribution_strategy.name}
    return out


def _grid_to_json(grid: CoreRangeSet) -> list[dict]:
    return [{"start": [r.start.x, r.start.y], "end": [r.end.x, r.end.y]} for r in grid.ranges()]


# -- reading ----------------------------------------------------------------------------------
def load_tensor(file_name, device=None) -> Tensor:
    """Read a tensor written by dump_tensor. No device is needed: without `device=` it is a host
    tensor; with one it is placed there in the memory config it was written with."""
    path = Path(file_name)
    try:
        blob = path.read_bytes()  # bounded by the real file size, never by a length read from it
    except IsADirectoryError:
        raise TensorFileError(path, "is a directory, not a tensor file") from None
    value, dtype, layout, cfg, mesh, tile = _parse(path, blob)
    if mesh is not None:
        return _load_mesh_tensor(path, value, dtype, layout, cfg, mesh, device, tile)
    if device is None:
        return Tensor._create(value, dtype, layout, None, None, None, tile)
    if cfg is None:
        cfg, source = placement.resolve(None, [], "ttnn.load_tensor")
    else:
        source = "argument"  # the file names its memory config as a caller would
    return Tensor._create(value, dtype, layout, device, cfg, source, tile)


def _load_mesh_tensor(path, values: torch.Tensor, dtype, layout, cfg, mesh: dict, device, tile) -> Tensor:
    chips = getattr(device, "_chips", None)
    if chips is None or len(chips) != mesh["shards"]:
        raise ValueError(f"{path} holds a tensor of {mesh['shards']} shards from a {mesh['shape']} mesh; load it "
                         f"with device= an open mesh of {mesh['shards']} chips")
    cfg, source = (cfg, "argument") if cfg is not None else placement.resolve(None, [], "ttnn.load_tensor")
    with device.lockstep():  # one mesh buffer: one address on every chip
        shards = [Tensor._create(v, dtype, layout, c, cfg, source, tile) for v, c in zip(values, chips)]
    return MeshTensor._assemble(shards, device)


def _parse(path: Path, blob: bytes):
    def fail(problem: str):
        return TensorFileError(path, problem)

    size = len(blob)
    if size < _PRELUDE.size or blob[:8] != MAGIC:
        if blob[:8] != MAGIC[:size]:
            raise fail(f"not a device_sim tensor file (bad magic {blob[:8]!r}, expected {MAGIC!r})")
        raise fail(f"truncated: {size} bytes, shorter than the {_PRELUDE.size}-byte prelude")
    _, version, header_len = _PRELUDE.unpack_from(blob)
    if version > FORMAT_VERSION:
        raise fail(f"written in .bin format version {version}, but this device_sim reads up to version "
                   f"{FORMAT_VERSION}; upgrade device_sim to read it")
    if version < 1:
        raise fail(f"unknown .bin format version {version}")
    if header_len > MAX_HEADER_BYTES:
        raise fail(f"header length {header_len} exceeds the {MAX_HEADER_BYTES}-byte limit; the file is corrupt")
    data_start = _PRELUDE.size + header_len
    if data_start + _CRC.size > size:
        raise fail(f"truncated: {size} bytes, but its header alone needs {data_start + _CRC.size}")
    (crc,) = _CRC.unpack_from(blob, size - _CRC.size)
    if zlib.crc32(memoryview(blob)[: size - _CRC.size]) != crc:
        raise fail("checksum mismatch: the file is corrupt or truncated")
    try:
        header = json.loads(blob[_PRELUDE.size:data_start].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise fail(f"header is not valid JSON: {e}") from None
    try:
        dtype, layout, shape, cfg, mesh, tile = _read_header(header)
    except (KeyError, TypeError, ValueError) as e:
        raise fail(f"bad header: {e}") from None
    _, np_dtype = ENCODING[dtype]
    if mesh is not None:
        shape = [mesh["shards"], *shape]  # the shards, stacked
    nbytes = math.prod(shape) * np.dtype(np_dtype).itemsize
    available = size - _CRC.size - data_start
    if header["data"].get("nbytes") != nbytes or nbytes != available:
        raise fail(f"data section holds {available} bytes, but shape {shape} of {dtype.name} needs {nbytes}")
    try:
        value = _decode(blob[data_start:data_start + nbytes], dtype, shape)
    except RuntimeError as e:  # an empty tensor whose other dims are too large to stride ("Stride ... overflowed")
        raise fail(f"shape {shape} cannot be held: {e}") from None
    return value, dtype, layout, cfg, mesh, tile


def _read_header(h) -> tuple[DataType, Layout, list[int], MemoryConfig | None, dict | None, Tile | None]:
    if not isinstance(h, dict):
        raise TypeError("header must be a JSON object")
    dtype, layout = _by_name(DataType, h["dtype"]), _by_name(Layout, h["layout"])
    dtypes.check_layout(dtype, layout)
    shape = h["shape"]
    if not isinstance(shape, list) or len(shape) > MAX_RANK or not all(_is_count(d) for d in shape):
        raise ValueError(f"shape {shape!r} must be a list of at most {MAX_RANK} non-negative ints")
    tile = _tile_from_json(h.get("tile"), layout)  # absent in version 1: the 32x32 tile
    if h["padded_shape"] != list(padded(shape, layout, tile)):
        raise ValueError(f"padded_shape {h['padded_shape']!r} does not match shape {shape} in {layout!r}"
                         + ("" if tile is None else f" with {tile!r}"))
    data = h["data"]
    if not isinstance(data, dict) or data.get("encoding") != ENCODING[dtype][0] or data.get("byte_order") != "little":
        raise ValueError(f"data {data!r} is not {ENCODING[dtype][0]} little-endian, as {dtype!r} is stored")
    mesh = h.get("mesh")
    if mesh is not None:
        mesh_shape, shards = (mesh.get("shape"), mesh.get("shards")) if isinstance(mesh, dict) else (None, None)
        if (not isinstance(mesh_shape, list) or not all(_is_count(d) and d > 0 for d in mesh_shape) or
                not _is_count(shards) or shards != math.prod(mesh_shape) or len(mesh_shape) > 2):
            raise ValueError(f"mesh placement {mesh!r} must name a mesh shape [rows, cols] and its number of shards")
    return dtype, layout, shape, _memory_config_from_json(h["memory_config"]), mesh, tile


def _tile_from_json(j, layout: Layout) -> Tile | None:
    if j is None:
        return None
    if layout != Layout.TILE or not isinstance(j, dict):
        raise ValueError(f"tile {j!r} must be an object naming tile_shape and transpose_tile, on a TILE tensor")
    transpose = j.get("transpose_tile")
    if not isinstance(transpose, bool):
        raise ValueError(f"tile's transpose_tile {transpose!r} must be true or false")
    return Tile(_pair(j.get("tile_shape")), transpose)  # Tile raises ValueError for a shape the device lacks


def _memory_config_from_json(j) -> MemoryConfig | None:
    if j is None:
        return None
    spec, nd = j["shard_spec"], j.get("nd_shard_spec")  # nd_shard_spec: absent in files before it was written
    if spec is not None:
        spec = ShardSpec(_grid_from_json(spec["grid"], "shard_spec"), _pair(spec["shape"]),
                         _by_name(ShardOrientation, spec["orientation"]))
    if nd is not None:
        shape = nd["shard_shape"]
        if not isinstance(shape, list) or not 0 < len(shape) <= MAX_RANK or not all(_is_count(d) for d in shape):
            raise ValueError(f"nd_shard_spec shard_shape {shape!r} must be a list of at most {MAX_RANK} ints")
        nd = NdShardSpec(shape, _grid_from_json(nd["grid"], "nd_shard_spec"), _by_name(ShardOrientation,
                         nd["orientation"]), _by_name(ShardDistributionStrategy, nd["shard_distribution_strategy"]))
    if spec is None and nd is None and j["memory_layout"] != "INTERLEAVED":  # a stored tensor's config was completed
        raise ValueError(f"memory_config {j['memory_layout']} needs a shard_spec; this file has none")
    return MemoryConfig(_by_name(TensorMemoryLayout, j["memory_layout"]), _by_name(BufferType, j["buffer_type"]), spec,
                        nd)


def _grid_from_json(j, what: str) -> CoreRangeSet:
    ranges = [CoreRange(_coord(r["start"]), _coord(r["end"])) for r in j] if isinstance(j, list) else []
    if not ranges:
        raise ValueError(f"{what} grid has no core ranges")
    return CoreRangeSet(ranges)


def _decode(raw: bytes, dtype: DataType, shape: list[int]) -> torch.Tensor:
    _, np_dtype = ENCODING[dtype]
    host = dtypes.TORCH_DTYPE[dtype]
    arr = np.frombuffer(raw, dtype=np_dtype)
    if host == torch.bfloat16:
        t = torch.from_numpy(arr.astype(np.uint16).view(np.int16)).view(torch.bfloat16)  # the stored bits
    else:
        t = torch.from_numpy(arr.astype(_NUMPY_HOST[host]))  # native byte order, widened as held
    return t.reshape(shape)


def _by_name(enum_type, name):
    if not isinstance(name, str) or name not in enum_type.__members__:
        raise ValueError(f"unknown {enum_type.__name__} {name!r}; expected one of {list(enum_type.__members__)}")
    return enum_type[name]


def _is_count(d) -> bool:
    return isinstance(d, int) and not isinstance(d, bool) and d >= 0


def _coord(xy) -> CoreCoord:
    x, y = _pair(xy)
    return CoreCoord(x, y)


def _pair(v) -> tuple[int, int]:
    if not isinstance(v, list) or len(v) != 2 or not all(_is_count(d) for d in v):
        raise ValueError(f"expected two non-negative ints, got {v!r}")
    return v[0], v[1]
