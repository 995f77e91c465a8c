"""An op's call stack as the recorder keeps it: the innermost user frames, as code ids and line numbers.

    import sys
    from ttreport.capturing import stacks
    cache = {}  # id(code) -> (code, is_library): held, so an id stays its code's
    def classify(code):
        cache[id(code)] = entry = (code, code.co_filename.endswith("runpy.py"))
        return entry
    walk = stacks.walker(depth=16)
    walk(0, None, 32, cache, classify)   # (id(code), line, ...) of the calling frame and those outside it

`walk(skip, stop, n, cache, classify)` starts `skip` frames outside its caller, leaves out library
frames (`cache[id(code)][1]` true; `classify(code)` fills a missing entry and returns it), stops before
the frame running `stop` (a code object, or None) and after n items (two a frame). The walk runs on the
model's thread for every op, so it is in C (ttreport/capturing/_stacks.c, built by `pip install` as an
optional extension) when that was built; `walk_py` below is the same walk in Python, kept as the
fallback (no compiler, TTREPORT_PURE=1, or a stack_depth over the C walk's 512 frames) and held equal
to the C one by tests/test_stacks.py.
"""

from __future__ import annotations

import os
import sys

try:
    from ttreport.capturing import _stacks
except ImportError:  # built without a C compiler: the Python walk
    _stacks = None

NATIVE = _stacks is not None and os.environ.get("TTREPORT_PURE", "") in ("", "0")
MAX_NATIVE_ITEMS = 1024  # _stacks.c's MAX_ITEMS


def walk_py(skip: int, stop, n: int, cache: dict, classify) -> tuple:
    """The C walk's result, in Python (see the module docstring)."""
    out = []
    try:
        f = sys._getframe(skip + 1)  # + this function's own frame: the C function has none
    except ValueError:  # fewer frames than skip: the C walk finds none either
        return ()
    while f is not None:
        code = f.f_code
        if code is stop:
            break
        entry = cache.get(id(code))
        if entry is None:
            entry = classify(code)
        if not entry[1]:
            out.append(id(code))
            out.append(f.f_lineno)
            if len(out) >= n:
                break
        f = f.f_back
    return tuple(out)


def walker(depth: int):
    """The walk for stacks of up to `depth` user frames: the C one when built and deep enough."""
    if NATIVE and depth * 2 <= MAX_NATIVE_ITEMS:
        return _stacks.user_frames
    return walk_py
