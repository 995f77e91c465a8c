"""Views: a reshape that TT-NN makes without copying shares its input's device buffer.

    import device_sim as ttnn
    x = ttnn.from_torch(torch.randn(1, 64, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    y = ttnn.reshape(x, (2, 32, 32))       # a view: no new buffer
    y.buffer_address() == x.buffer_address()   # True
    del x                                  # the buffer lives on while y holds it

TT-NN 0.81's reshape (data_movement/reshape_view/reshape.cpp, ReshapeViewOperation::invoke) returns a
view, `ttnn::experimental::view`, of a device tensor when the last dim is unchanged, the output memory
config is as sharded and as L1 as the input's, and the tensor is ROW_MAJOR or keeps its second-last dim
or has no tile padding in it (both second-last dims multiples of 32); a zero-volume tensor is always a
view. Otherwise it runs a copy on the device. squeeze and unsqueeze call ttnn::reshape, so they follow
the same rule; ttnn.view is always a view.

A view is a new tensor (its own id, shape and Python object) over the same Buffer, as TT-NN's Tensor
shares its DeviceStorage. The buffer is freed when the last tensor holding it is garbage collected;
`ttnn.deallocate(t)` (force=True, the default) frees it at once for every holder; with force=False t
lets go of it and it is freed only if t was its sole holder (TT-NN's Tensor::deallocate_impl). A write
into one (an op's output_tensor=, an in-place op) is seen through every other.

This module is the buffer-sharing bookkeeping under Tensor (which calls release, propagate, drop_all); the tensors
a view is made of are made in device_sim.tensor (make_view, reshaped), above it.
"""

from __future__ import annotations

import threading
import weakref

import torch.nn.functional as F

from device_sim.types import BufferType, Layout

# buffer_id -> [number of live tensors holding it, weak references to them]; only buffers a view shares
# are here, so a tensor's __del__ costs one dict truthiness check while no view exists.
SHARED: dict[int, list] = {}
_lock = threading.RLock()  # re-entrant: the garbage collector may run a Tensor.__del__ (release) inside make_view
_L1_TYPES = (BufferType.L1, BufferType.L1_SMALL)


def is_view(t, shape, memory_config=None) -> bool:
    """Whether TT-NN reshapes device tensor `t` to `shape` as a view (reshape.cpp's rule, above)."""
    old, new = tuple(t._value.shape), tuple(shape)
    if t._value.numel() == 0:
        return True
    cfg, have = memory_config if memory_config is not None else t._memory_config, t._memory_config
    if (cfg.is_sharded() != have.is_sharded()) or ((cfg.buffer_type in _L1_TYPES) != (have.buffer_type in _L1_TYPES)):
        return False
    last, new_last = (old[-1] if old else 1), (new[-1] if new else 1)
    second, new_second = (old[-2] if len(old) >= 2 else 1), (new[-2] if len(new) >= 2 else 1)
    return last == new_last and (t.layout == Layout.ROW_MAJOR or second == new_second
                                 or (second % 32 == 0 and new_second % 32 == 0))


def share(t, v) -> None:
    """`v`, a new tensor over `t`'s buffer (tensor.make_view), holds that buffer too."""
    with _lock:
        entry = SHARED.get(t.buffer.buffer_id)
        if entry is None:
            entry = SHARED[t.buffer.buffer_id] = [1, [weakref.ref(t)]]
        entry[0] += 1
        if len(entry[1]) > 2 * entry[0] + 8:  # views made and dropped in a loop: forget the dead ones
            entry[1] = [r for r in entry[1] if r() is not None]
        entry[1].append(weakref.ref(v))
        SHARED[t.buffer.buffer_id] = entry  # again: a release run by the collector just now may have dropped it


def release(buf) -> bool:
    """One holder of `buf` is gone (Tensor.__del__): whether it was the last, so the buffer is to be freed."""
    with _lock:
        entry = SHARED.get(buf.buffer_id)
        if entry is None:
            return True
        entry[0] -= 1
        if entry[0] > 1:
            return False
        # One holder left (or none): the buffer is its own again, as if never shared; SHARED stays small.
        del SHARED[buf.buffer_id]
        return entry[0] == 0


def others(t) -> list:
    """The other live tensors that hold t's buffer."""
    entry = SHARED.get(t.buffer.buffer_id) if t.buffer is not None else None
    if entry is None:
        return []
    return [o for o in (r() for r in entry[1]) if o is not None and o is not t and o.buffer is t.buffer]


def drop_all(t, buf) -> None:
    """`buf` is being freed through `t` (deallocate, force): every other holder loses it too, as in TT-NN."""
    with _lock:
        entry = SHARED.pop(buf.buffer_id, None)
    if entry is not None:
        for o in (r() for r in entry[1]):
            if o is not None and o is not t and o.buffer is buf:
                o.buffer, o._value = None, None


def let_go(t) -> None:
    """deallocate(t, force=False) while others hold t's buffer: t lets go of it, the buffer stays theirs."""
    buf = t.buffer
    t.buffer, t._value = None, None
    release(buf)


def propagate(t) -> None:
    """t's values were replaced in place: each other holder of its buffer sees them, in its own shape."""
    for o in others(t):
        if o._value.numel() == t._value.numel():
            o._value = t._value.reshape(o._value.shape)
        else:  # a view that moved rows into or out of tile padding (reshape with a padded shape)
            o._value = through_padding(t._value, t.padded_shape, o.padded_shape, o._value.shape)


def through_padding(value, padded_from, padded_to, shape_to):
    """`value` laid out in its padded shape `padded_from` (zeros in the padding), read back as `padded_to` and
    cut to the logical `shape_to`: what a TILE view over the same pages holds when both padded shapes have the
    same last dim (tiles are stored row-major, so rows of tiles follow each other as rows of values do)."""
    pad = []
    for have, want in zip(reversed(value.shape), reversed(tuple(padded_from))):
        pad += [0, want - have]
    full = F.pad(value, pad).reshape(tuple(padded_to))
    return full[tuple(slice(0, n) for n in shape_to)].contiguous()
