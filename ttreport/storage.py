"""Tensor files: a background thread writes them, and load_tensor() reads them back.

`tensors/<id>.pt` holds a plain torch.Tensor (detached, CPU, contiguous, logical shape, its
own storage), so `torch.load(path, weights_only=True)` reads it on any machine with torch and
neither device_sim nor ttreport. `tensors/<id>.bin` is device_sim's portable format. Each file
is written under a temporary name and renamed, so a crash never leaves half a file under the
final name.
"""

from __future__ import annotations

import errno
import os
import queue as queue_module
import threading
import time
from pathlib import Path

import torch

from ttreport.errors import LossWarner, TensorFileError
from ttreport.recorder import FILE_LOST

TENSORS_DIR = "tensors"
MAX_PENDING_BYTES = 1 << 30  # values waiting for the disk before the model waits (back-pressure, never loss)
# Tensor files stop while this much is still free, so the database (small, but it is the report) can
# keep committing and close: max(64 MiB, 2x the file), but at most three quarters of a small filesystem.
KEEP_FREE_BYTES = 64 << 20
KEEP_FREE_FRACTION = 0.75


class TensorStore(threading.Thread):
    """Writes queued (tensor_id, relative path, value, dtype, layout, memory config) items, once each."""

    def __init__(self, report_dir, writer_queue, warner: LossWarner | None = None):
        super().__init__(name="ttreport-tensors", daemon=True)
        self.report_dir = Path(report_dir)
        self.queue = queue_module.SimpleQueue()
        self.writer_queue = writer_queue  # failures become FILE_LOST records: the row's `file` is cleared
        self.error: BaseException | None = None
        self.files_lost = 0
        self.pending_bytes = 0
        self.warner = warner or LossWarner()
        self.disk_low: str | None = None  # why tensor files stopped, once the free space ran low
        self._lock = threading.Lock()

    def put_many(self, items) -> None:
        for item in items:
            with self._lock:
                self.pending_bytes += _nbytes(item[2])
            self.queue.put(item)
        while self.pending_bytes > MAX_PENDING_BYTES and self.is_alive():
            time.sleep(0.001)

    def stop(self) -> None:
        self.queue.put(None)
        self.join()

    def run(self) -> None:
        folder = self.report_dir / TENSORS_DIR
        while (item := self.queue.get()) is not None:
            tid, rel = item[0], item[1]
            try:
                folder.mkdir(exist_ok=True)
                self._keep_room(_nbytes(item[2]))
                write_tensor(self.report_dir / rel, *item[2:])
            except Exception as e:  # a full disk must not stop the model; the loss is recorded
                self.files_lost += 1
                self.writer_queue.put((FILE_LOST, tid))
                if self.error is None:
                    self.error = e
                    self.warner.warn(f"ttreport: could not write tensor file {rel} ({type(e).__name__}: {e})")
            finally:
                with self._lock:
                    self.pending_bytes -= _nbytes(item[2])


    def _keep_room(self, nbytes: int) -> None:
        """Raise ENOSPC (from now on) once writing `nbytes` would leave less than the margin free."""
        if self.disk_low is None:
            st = os.statvfs(self.report_dir)
            free, total = st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
            keep = min(max(KEEP_FREE_BYTES, 2 * nbytes), int(total * KEEP_FREE_FRACTION))
            if free - nbytes >= keep:
                return
            self.disk_low = (f"{free} bytes free on the filesystem of {self.report_dir}, and {keep} are kept for "
                             f"the database: tensor files stop here so that every op is still recorded")
        raise OSError(errno.ENOSPC, self.disk_low)


def _nbytes(value: torch.Tensor) -> int:
    return value.numel() * value.element_size()


def write_tensor(path: Path, value: torch.Tensor, dtype=None, layout=None, memory_config=None) -> None:
    if path.suffix == ".bin":
        from device_sim import serialization

        serialization.dump_tensor(path, _host_tensor(value, dtype, layout, memory_config))  # renames itself
        return
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        torch.save(plain(value), tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def plain(value: torch.Tensor) -> torch.Tensor:
    """A detached CPU tensor that owns exactly its elements (torch.save writes a view's whole storage)."""
    v = value.detach().cpu()
    if v.is_contiguous() and v.storage_offset() == 0 and v.untyped_storage().nbytes() == v.numel() * v.element_size():
        return v
    return v.contiguous().clone()


def _host_tensor(value, dtype, layout, memory_config):
    # dump_tensor takes a device_sim Tensor; queued items hold only values (keeping the Tensor would
    # delay its buffer's free), so a host-side stand-in is assembled without allocating or taking an id.
    from device_sim.tensor import Tensor

    t = Tensor.__new__(Tensor)
    t._value, t.dtype, t.layout, t._device, t.buffer = value, dtype, layout, None, None
    t._memory_config, t.memory_config_source, t.tensor_id = memory_config, None, -1
    return t


def tensor_path(report_dir, tensor_id: int) -> Path | None:
    """The stored file of `tensor_id` (.pt or .bin), or None when it was not stored."""
    for suffix in (".pt", ".bin"):
        p = Path(report_dir) / TENSORS_DIR / f"{tensor_id}{suffix}"
        if p.exists():
            return p
    return None


def load_tensor(report_dir, tensor_id: int) -> torch.Tensor:
    """The stored values of `tensor_id` as a plain CPU torch.Tensor in its logical shape; no device needed."""
    path = tensor_path(report_dir, tensor_id)
    if path is None:
        raise TensorFileError(
            f"tensor {tensor_id} has no stored file in {Path(report_dir) / TENSORS_DIR}; only tensors captured "
            f"with Config(tensors='outputs' or 'all') and within max_tensor_bytes are stored"
        )
    # A received report is untrusted: a link planted as a tensor file must not read a file elsewhere.
    real, folder = path.resolve(), Path(report_dir).resolve()
    if not real.is_relative_to(folder):
        raise TensorFileError(f"{path} leads to {real}, outside the report folder {folder}; ttreport reads only "
                              f"files inside the report (replace the link with the tensor file itself)")
    try:
        if path.suffix == ".pt":
            value = torch.load(path, weights_only=True, map_location="cpu")
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"holds a {type(value).__name__}, not a tensor")
            return value
        from device_sim import serialization

        return serialization.load_tensor(path).value
    except Exception as e:
        # The cause (chained) has the details; torch's own text would suggest weights_only=False, never wanted here.
        first_line = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
        raise TensorFileError(f"{path} cannot be read ({type(e).__name__}: {first_line}); the file is damaged or "
                              f"was not written by ttreport") from e
