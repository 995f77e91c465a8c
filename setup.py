"""Native accelerators, each optional: without a C compiler `pip install` still succeeds and the pure-Python
paths run (device_sim/allocator.py says which it uses). Everything else is declared in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        # device_sim's bank allocator and an op output's buffer (device_sim/_native.c).
        Extension("device_sim._native", ["device_sim/_native.c"], optional=True, extra_compile_args=["-O2"]),
        # the recorder's walk over an op's caller frames (ttreport/capture/_stacks.c; stacks.py says which runs).
        Extension("ttreport.capture._stacks", ["ttreport/capture/_stacks.c"], optional=True,
                  extra_compile_args=["-O2"]),
        # the recorder's begin, end and memory listener for an op log (ttreport/capture/_hook.c; recorder.NATIVE).
        Extension("ttreport.capture._hook", ["ttreport/capture/_hook.c"], optional=True, extra_compile_args=["-O2"]),
        # compare_tensors' one pass over a chunk of pairs (ttreport/_fold.c; metrics.NATIVE).
        Extension("ttreport._fold", ["ttreport/_fold.c"], optional=True,
                  extra_compile_args=["-O3", "-ffp-contract=off", "-Wno-psabi"]),
    ],
)
