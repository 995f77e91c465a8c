"""The recorder's stack walk (ttreport.capturing.stacks): the C walk and the Python one give the same frames.

The C walk (_stacks.c) is built by `pip install`; the Python walk is the fallback. Both run here on the
same real stacks: nested calls, recursion, a generator, library frames left out, a stop frame, depth limits.
"""

import os
import subprocess
import sys

import pytest
import torch

import device_sim as ttnn
import ttreport
from ttreport.capturing import stacks

native = pytest.mark.skipif(stacks._stacks is None, reason="the C walk was not built (no compiler at install)")


def _classifier(library_names=()):
    cache = {}

    def classify(code):
        cache[id(code)] = entry = (code, code.co_name in library_names)
        return entry

    return cache, classify


def _both(skip, stop, n, library_names=()):
    """(C result, Python result, C cache, Python cache) of the walk from the caller's frame."""
    c_cache, c_classify = _classifier(library_names)
    py_cache, py_classify = _classifier(library_names)
    # One line: with skip=0 the walks start at this frame, whose line is the call's.
    c, py = stacks._stacks.user_frames(skip, stop, n, c_cache, c_classify), stacks.walk_py(skip, stop, n, py_cache, py_classify)  # noqa: E501
    return c, py, c_cache, py_cache


def _nested(depth, then):
    return then() if depth == 0 else _nested(depth - 1, then)


@native
@pytest.mark.parametrize("skip", [0, 1, 3])
@pytest.mark.parametrize("n", [0, 2, 6, 32, 1024])
def test_the_c_walk_gives_the_python_walks_frames(skip, n):
    c, py, c_cache, py_cache = _nested(5, lambda: _both(skip, None, n))
    assert c == py and len(c) >= 2
    assert len(c) <= max(n, 2) and len(c) % 2 == 0
    assert {k: v[1] for k, v in c_cache.items()} == {k: v[1] for k, v in py_cache.items()}
    lines = c[1::2]
    assert all(type(x) is int and x > 0 for x in lines)


@native
def test_library_frames_are_left_out_and_the_walk_stops_at_the_stop_frame():
    def lib_frame():
        return _both(0, stop_code, 100, library_names=("lib_frame", "_nested"))

    def user_frame():
        return lib_frame()

    def outer():
        return _nested(3, user_frame)

    stop_code = outer.__code__
    c, py, _, _ = outer()
    assert c == py
    codes = c[0::2]
    assert id(user_frame.__code__) in codes and id(lib_frame.__code__) not in codes
    assert id(_nested.__code__) not in codes and id(outer.__code__) not in codes
    assert codes[-1] != id(outer.__code__)


@native
def test_the_walk_agrees_inside_a_generator_and_a_comprehension():
    def gen():
        yield _both(0, None, 64)

    c, py, _, _ = next(gen())
    assert c == py
    [(c, py, _, _)] = [_both(0, None, 64) for _ in range(1)]
    assert c == py


@native
def test_a_skip_past_the_outermost_frame_gives_an_empty_stack():
    c, py, _, _ = _both(10_000, None, 32)
    assert c == py == ()


@native
def test_the_c_walk_refuses_more_items_than_it_holds_and_the_walker_picks_python_for_them():
    cache, classify = _classifier()
    with pytest.raises(ValueError, match="at most 1024 items"):
        stacks._stacks.user_frames(0, None, 2000, cache, classify)
    assert stacks.walker(1000) is stacks.walk_py
    assert stacks.walker(16) is (stacks._stacks.user_frames if stacks.NATIVE else stacks.walk_py)


@native
def test_an_error_in_classify_comes_out_of_the_c_walk():
    def classify(code):
        raise RuntimeError("classify failed")

    with pytest.raises(RuntimeError, match="classify failed"):
        stacks._stacks.user_frames(0, None, 32, {}, classify)


def test_ttreport_pure_selects_the_python_walk():
    code = "from ttreport.capturing import stacks; print(stacks.NATIVE, stacks.walker(16).__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "TTREPORT_PURE": "1"}).stdout.split()
    assert out == ["False", "walk_py"]


def _model(device):
    a = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    for _ in range(3):
        b = ttnn.add(a, a)
    return _nested(4, lambda: ttnn.relu(b))


@native
def test_a_report_has_the_same_stack_traces_with_either_walk(tmp_path, device, monkeypatch):
    texts = {}
    for native_walk in (True, False):
        monkeypatch.setattr(stacks, "NATIVE", native_walk)
        with ttreport.capture(tmp_path / str(native_walk), config=ttreport.Config(writer="process")) as cap:
            assert (cap.recorder._walk is stacks.walk_py) is not native_walk
            _model(device)
        with ttreport.open(tmp_path / str(native_walk)) as r:
            texts[native_walk] = r.execute("SELECT operation_id, stack_trace FROM stack_traces").fetchall()
    assert texts[True] == texts[False] and len(texts[True]) == 5  # from_torch, 3 adds, relu
    assert "in _nested" in texts[True][-1][1] and "in _model" in texts[True][0][1]



@native
def test_the_c_walk_remembers_frames_per_cache_and_tells_a_new_cache_of_every_code():
    # The C walk keeps what it learnt of each (code, instruction) between walks; a walk with another cache (the
    # next capture's) must still classify each code into it, or the log could not name the stack's code objects.
    first_cache, first_classify = _classifier()

    def both():  # one line: both walks start at this frame, whose line is the call's
        return stacks._stacks.user_frames(0, None, 32, first_cache, first_classify), stacks.walk_py(0, None, 32, *_classifier())  # noqa: E501

    walks = []
    for _ in range(3):  # the same places walked again, with the same cache: the Python walk's frames each time
        walks.append(_nested(3, both))
        walks.append(_nested(1, both))
    for c, py in walks:
        assert c == py
    assert walks[0] == walks[2] and walks[1] == walks[3] and walks[0] != walks[1]
    again_cache, again_classify = _classifier()
    again, py = stacks._stacks.user_frames(0, None, 32, again_cache, again_classify), stacks.walk_py(0, None, 32, *_classifier())  # noqa: E501
    assert again == py and again and set(again[::2]) <= set(again_cache)
