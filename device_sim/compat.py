"""Run an existing TT-NN script unchanged: after install_as_ttnn(), `import ttnn` is device_sim.

    import device_sim
    device_sim.install_as_ttnn()
    import ttnn                                   # device_sim
    from ttnn.model_preprocessing import preprocess_linear_weight

An import hook, not a module written into sys.modules up front: `ttnn.X` resolves to the
module `device_sim.X` only when a script imports it, and only names under `ttnn` are touched.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types


class _AliasLoader(importlib.abc.Loader):
    """Hands out the already-imported device_sim module under its ttnn name."""

    def __init__(self, target: str):
        self.target = target
        self._spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module):
        # The import system stamps the alias spec on the module; give device_sim its own back
        # so that reloading or importing device_sim's submodules by their real names still works.
        module.__spec__ = self._spec


class _TtnnFinder(importlib.abc.MetaPathFinder):
    """Maps `ttnn` and `ttnn.<sub>` to `device_sim` and `device_sim.<sub>`."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "ttnn" and not fullname.startswith("ttnn."):
            return None
        real = _device_sim_module("device_sim" + fullname[len("ttnn"):])
        if real is None:
            return None  # so `import ttnn.nonexistent` fails as a plain ModuleNotFoundError
        return importlib.util.spec_from_loader(fullname, _AliasLoader(real))


class _NoTtnnFinder(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: reached only when no real ttnn is installed and install_as_ttnn() was not called, it
    turns Python's bare "No module named 'ttnn'" into one that names both ways to have device_sim as ttnn (a
    doc snippet that said `import ttnn` under plain python failed with no hint: issue 34)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "ttnn":
            return None
        raise ModuleNotFoundError(
            "No module named 'ttnn': device_sim answers to that name after device_sim.install_as_ttnn(), or in a "
            "script run by `ttreport run script.py`; `import device_sim as ttnn` names no module ttnn (import "
            "its submodules as device_sim.tracer and so on)", name="ttnn")


# Appended when device_sim is imported, after the path finders, so a real ttnn installed is still found first.
if not any(isinstance(f, _NoTtnnFinder) for f in sys.meta_path):
    sys.meta_path.append(_NoTtnnFinder())


def _device_sim_module(name: str) -> str | None:
    """The real module name behind `name`: a device_sim module, or a module that device_sim
    exports as an attribute (such as a namespace kept in device_sim.ops)."""
    try:
        if name in sys.modules or importlib.util.find_spec(name) is not None:
            return name
    except ModuleNotFoundError:  # a parent that is not a package
        return None
    parent, _, attr = name.rpartition(".")
    obj = getattr(sys.modules.get(parent), attr, None)
    return obj.__name__ if isinstance(obj, types.ModuleType) else None


def install_as_ttnn() -> None:
    """Make `import ttnn` (and its submodules) resolve to device_sim from now on. Idempotent.

    Raises RuntimeError if a real `ttnn` is already imported: modules holding it would mix
    two libraries' tensors.
    """
    current = sys.modules.get("ttnn")
    if current is not None and current is not sys.modules["device_sim"]:
        where = getattr(current, "__file__", None) or repr(current)
        raise RuntimeError(
            f"a real ttnn module is already imported (from {where}); call device_sim.install_as_ttnn() "
            f"before anything imports ttnn, or run the script in a fresh interpreter"
        )
    if not any(isinstance(f, _TtnnFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _TtnnFinder())
    _name_errors_as_ttnn(sys.modules["device_sim"])


def _name_errors_as_ttnn(package) -> None:
    """device_sim's exported exceptions print as `ttnn.OutOfMemoryError`, the name the script can catch them by.

    A traceback's last line (and a report's errors.error_type) is the class's module and name; under the
    alias the script knows no `device_sim`. Each is exported at the top, so `ttnn.<Name>` resolves to it.
    """
    for name in getattr(package, "__all__", ()):
        obj = getattr(package, name, None)
        if isinstance(obj, type) and issubclass(obj, BaseException) and obj.__module__.startswith("device_sim"):
            obj.__module__ = "ttnn"


def is_installed() -> bool:
    return any(isinstance(f, _TtnnFinder) for f in sys.meta_path)


def public_name(module_name: str) -> str:
    """`device_sim.x` as the user's script spells it: `ttnn.x` once install_as_ttnn() has run."""
    if is_installed() and (module_name == "device_sim" or module_name.startswith("device_sim.")):
        return "ttnn" + module_name[len("device_sim"):]
    return module_name


def missing_attribute(module_name: str, name: str) -> AttributeError:
    """The error for `ttnn.<name>` that device_sim does not have, naming the module as the script does."""
    where = public_name(module_name)
    if name.startswith("__"):  # Python's own probes (__path__, __wrapped__, ...): the plain message
        return AttributeError(f"module {where!r} has no attribute {name!r}")
    return AttributeError(
        f"module {where!r} has no attribute {name!r}: device_sim does not provide {where}.{name} "
        f"(device_sim.registered_ops() and README.md list what it emulates)"
    )


__all__ = ["install_as_ttnn", "is_installed", "missing_attribute", "public_name"]
