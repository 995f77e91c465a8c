"""A registered op's public function in C (device_sim/_native.c's Dispatch): a call goes straight to the op's
body, through the hook's begin and end when one is installed; a call whose keywords the wrapper changes
(`memory=`, an op's output keyword), one on a mesh, and every attribute are registry's Python wrapper's.

DEVICE_SIM_PURE=1 (or a build without a C compiler) makes the Python wrapper itself the public function.
"""

from __future__ import annotations

import copy
import inspect
import os
import pickle
import subprocess
import sys
import types
import weakref

import pytest
import torch

import device_sim as ttnn
from device_sim import registry

native = pytest.mark.skipif(registry._native is None, reason="device_sim._native was not built, or DEVICE_SIM_PURE")


class _Recorder:
    """A hook that notes each op it sees begin and end."""

    def __init__(self):
        self.seen = []

    def begin(self, op, args, kwargs):
        self.seen.append(("begin", op.name, len(args), sorted(kwargs)))
        return op.name

    def end(self, token, output, exception):
        self.seen.append(("end", token, type(exception).__name__ if exception else None))


@pytest.fixture
def inputs(device):
    g = torch.Generator().manual_seed(0)
    x = ttnn.from_torch(torch.randn(32, 32, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)
    return x, ttnn.from_torch(torch.randn(32, 32, generator=g), dtype=ttnn.bfloat16, layout=ttnn.TILE, device=device)


@native
def test_every_registered_op_is_dispatched_by_the_c_function():
    for op in registry.registered_ops():
        assert type(op.wrapper).__name__ == "Dispatch", op.name
    assert ttnn.add is registry.OPS["ttnn.add"].wrapper


@native
def test_a_call_with_a_hook_installed_goes_through_the_hook_with_and_without_keywords(inputs):
    a, b = inputs
    hook = _Recorder()
    previous = ttnn.set_hook(hook)
    try:
        plain = ttnn.add(a, b)
        keyworded = ttnn.add(a, b, memory_config=ttnn.DRAM_MEMORY_CONFIG)
        with pytest.raises(TypeError):
            ttnn.add(a, torch.ones(32, 32))
    finally:
        ttnn.set_hook(previous)
    assert hook.seen == [
        ("begin", "ttnn.add", 2, []), ("end", "ttnn.add", None),
        ("begin", "ttnn.add", 2, ["memory_config"]), ("end", "ttnn.add", None),
        ("begin", "ttnn.add", 2, []), ("end", "ttnn.add", "TypeError"),
    ]
    assert torch.equal(plain.value, keyworded.value)
    # With the hook gone, the same calls reach no hook at all.
    ttnn.add(a, b)
    assert len(hook.seen) == 6


@native
def test_the_direct_call_and_the_wrappers_call_give_the_same_values_and_errors(inputs):
    a, b = inputs
    direct = ttnn.mul(a, b)  # no keywords: the body at once
    wrapped = ttnn.mul(a, b, memory=None)  # a keyword: registry's Python wrapper
    assert torch.equal(direct.value.view(torch.int16), wrapped.value.view(torch.int16))
    messages = []
    for call in (lambda: ttnn.mul(a, torch.ones(2)), lambda: ttnn.mul(a, torch.ones(2), memory=None)):
        with pytest.raises(TypeError) as e:
            call()
        messages.append(str(e.value))
    assert messages[0] == messages[1] and "convert it first with ttnn.from_torch" in messages[0]


@native
def test_the_public_function_shows_the_wrappers_name_doc_signature_and_attributes():
    op = registry.OPS["ttnn.add"]
    assert (ttnn.add.__name__, ttnn.add.__qualname__, ttnn.add.__module__) == ("add", "add", "device_sim.ops.eltwise")
    assert ttnn.add.__doc__ == op.function.__doc__ and ttnn.add.__doc__.startswith("Element-wise add")
    assert ttnn.add.__wrapped__ is op.function
    assert ttnn.add.op is op and ttnn.add.golden_function is op.golden_function
    assert str(inspect.signature(ttnn.add)) == str(registry._public_signature(op.function, "output_tensor"))
    assert "output_tensor=None" in str(inspect.signature(ttnn.add))
    assert repr(ttnn.add).startswith("<function add at ")
    ttnn.add.note_for_this_test = 1  # attributes are set on (and read from) the wrapper
    try:
        assert ttnn.add.note_for_this_test == 1
    finally:
        del ttnn.add.note_for_this_test


@native
def test_an_op_pickles_copies_weakrefs_and_binds_as_a_function_does(inputs):
    assert pickle.loads(pickle.dumps(ttnn.add)) is ttnn.add
    assert copy.copy(ttnn.add) is ttnn.add and copy.deepcopy(ttnn.add) is ttnn.add
    assert weakref.ref(ttnn.add)() is ttnn.add

    class Holder:
        plus = ttnn.add

    a, b = inputs
    bound = Holder().plus
    assert isinstance(bound, types.MethodType) and bound.__func__ is ttnn.add
    assert Holder.plus is ttnn.add
    with pytest.raises(TypeError, match="one of the first two arguments must be a ttnn tensor"):
        bound(3)  # the Holder instance went in as the first argument, as a function's would


def test_device_sim_pure_makes_the_python_wrapper_the_public_function():
    code = "import device_sim as ttnn, types; print(isinstance(ttnn.add, types.FunctionType), type(ttnn.add).__name__)"
    env = {**os.environ, "DEVICE_SIM_PURE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "function"]


@native
def test_a_binary_ops_plain_path_runs_from_the_dispatcher_and_declines_to_the_body(device, inputs):
    a, b = inputs
    calls = []
    add = registry.OPS["ttnn.add"]
    cells = dict(zip(add.function.__code__.co_freevars, add.function.__closure__))
    plain = cells["plain"].cell_contents  # eltwise._binary's fast path, as register_op was given it

    def counting(x, y):
        calls.append((type(x).__name__, type(y).__name__))
        return plain(x, y)

    public = registry._native.Dispatch(add.function, add.wrapper, vars(registry), counting, add)
    same = public(a, b)
    assert torch.equal(same.value, ttnn.add(a, b, memory=None).value)
    assert public(a, 2.5).value.dtype == torch.bfloat16 and public(a, 2).shape == a.shape
    assert calls == [("Tensor", "Tensor"), ("Tensor", "float"), ("Tensor", "int")]
    # Not a plain call (a bool, a number first, a host tensor's values, keywords): the body alone decides.
    host = ttnn.from_torch(torch.ones(32, 32), dtype=ttnn.bfloat16)
    assert torch.equal(public(a, True).value, ttnn.add(a, 1.0).value)
    assert torch.equal(public(1.0, a).value, ttnn.add(a, 1.0).value)
    public(a, b, memory_config=None)
    assert len(calls) == 3
    with pytest.raises(ValueError, match="is on device 0 but tensor"):
        public(a, host)  # plain declines (two places): the body's run() names both
    assert calls[-1] == ("Tensor", "Tensor")
    hook = _Recorder()
    previous = ttnn.set_hook(hook)
    try:
        public(a, b)  # a hook: its begin and end around plain, in C
        public(a, b, memory_config=None)  # keywords: begin and end around the body, in C too
        public(a, b, memory=None)  # a keyword the wrapper renames: its begin and end around the body
    finally:
        ttnn.set_hook(previous)
    assert len(calls) == 5 and [s[0] for s in hook.seen] == ["begin", "end"] * 3



class _Failing(_Recorder):
    """A hook whose begin or end raises, or that takes itself off in begin."""

    def __init__(self, fail_in=None, uninstall=False):
        super().__init__()
        self.fail_in, self.uninstall, self.exceptions = fail_in, uninstall, []

    def begin(self, op, args, kwargs):
        token = super().begin(op, args, kwargs)
        if self.uninstall:
            ttnn.set_hook(None)
        if self.fail_in == "begin":
            raise LookupError("begin failed")
        return token

    def end(self, token, output, exception):
        super().end(token, output, exception)
        self.exceptions.append(exception)
        if self.fail_in == "end":
            raise RuntimeError("end failed")


def _hooked(hook, call):
    previous = ttnn.set_hook(hook)
    try:
        return call()
    finally:
        ttnn.set_hook(previous)


_PATHS = {"positional, in C": {}, "keywords, in C": {"memory_config": None}, "the wrapper": {"memory": None}}


@pytest.mark.parametrize("path", list(_PATHS))
def test_a_hooked_call_fails_as_the_python_wrapper_does(inputs, path):
    """The op's error reaches end (as the instance raised, its traceback on it) and then the caller; an error of
    end's own goes on with the op's as its context; an error of begin runs neither the body nor end."""
    a, _ = inputs
    kw = _PATHS[path]
    hook = _Failing()
    with pytest.raises(TypeError, match="convert it first") as e:
        _hooked(hook, lambda: ttnn.add(a, torch.ones(32, 32), **kw))
    assert hook.exceptions == [e.value] and e.value.__traceback__ is not None
    assert [s[0] for s in hook.seen] == ["begin", "end"]

    hook = _Failing(fail_in="end")
    with pytest.raises(RuntimeError, match="end failed") as e:
        _hooked(hook, lambda: ttnn.add(a, torch.ones(32, 32), **kw))
    assert isinstance(e.value.__context__, TypeError) and e.value.__context__ is hook.exceptions[0]
    with pytest.raises(RuntimeError, match="end failed") as e:
        _hooked(hook, lambda: ttnn.add(a, a, **kw))  # after a good op
    assert e.value.__context__ is None

    hook = _Failing(fail_in="begin")
    with pytest.raises(LookupError, match="begin failed"):
        _hooked(hook, lambda: ttnn.add(a, a, **kw))
    assert [s[0] for s in hook.seen] == ["begin"] and hook.exceptions == []


@pytest.mark.parametrize("path", list(_PATHS))
def test_a_hook_taken_off_during_a_call_still_ends_it(inputs, path):
    a, b = inputs
    kw = _PATHS[path]
    hook = _Failing(uninstall=True)
    previous = ttnn.set_hook(hook)
    try:
        out = ttnn.add(a, b, **kw)
        assert ttnn.get_hook() is None
        ttnn.add(a, b, **kw)  # no hook now
    finally:
        ttnn.set_hook(previous)
    assert [s[0] for s in hook.seen] == ["begin", "end"] and hook.exceptions == [None]
    assert torch.equal(out.value, ttnn.add(a, b).value)


def test_a_hooked_call_gives_begin_a_tuple_and_a_dict_it_may_keep(inputs):
    """trace.py's capture hook keeps args and dict(kwargs) to replay them: both are plain and the call's own."""
    a, b = inputs
    kept = []

    class Keeping(_Recorder):
        def begin(self, op, args, kwargs):
            kept.append((args, kwargs))
            return super().begin(op, args, kwargs)

    config = ttnn.L1_MEMORY_CONFIG
    _hooked(Keeping(), lambda: (ttnn.add(a, b), ttnn.add(a, b), ttnn.add(a, input_tensor_b=b, memory_config=config)))
    (args1, kw1), (args2, kw2), (args3, kw3) = kept
    assert type(args1) is tuple and args1[0] is a and args1[1] is b and kw1 == {} and type(kw1) is dict
    assert kw1 is not kw2
    assert args3 == (a,) and type(kw3) is dict and kw3 == {"input_tensor_b": b, "memory_config": config}
