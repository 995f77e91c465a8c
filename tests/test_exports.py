"""device_sim's public names are read from the op registry: every op is reachable by its TT-NN name, and no
public name is lost.

tests/data/device_sim_public_names.json holds the public names device_sim had when its exports were first derived
from the registry (issue 32); a name may be added, never dropped without a reason. To record a name dropped on
purpose, regenerate it with `.venv/bin/python tests/test_exports.py` and say why in the commit.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

import device_sim as ttnn
from device_sim import registry

SNAPSHOT = Path(__file__).resolve().parent / "data" / "device_sim_public_names.json"
# TT-NN's namespaces whose functions, classes and constants are public (each a module of device_sim).
NAMESPACES = ("cluster", "core", "dtypes", "model_preprocessing", "operations", "tracer")
OP_NAMESPACES = ("experimental", "kv_cache", "transformer")  # ttnn.experimental.<op>, ...


def public_names() -> dict[str, list[str]]:
    """{namespace: its public names}: device_sim's and device_sim.ops' __all__, the ops of TT-NN's op namespaces,
    and each TT-NN module namespace's own names (operations' submodules too), imports from torch and such left out."""
    names = {"ttnn": sorted(ttnn.__all__), "ttnn.ops": sorted(ttnn.ops.__all__)}
    wrappers = {id(op.wrapper) for op in registry.OPS.values()}
    for ns in OP_NAMESPACES:
        module = getattr(ttnn, ns)
        names[f"ttnn.{ns}"] = sorted(n for n in dir(module) if id(getattr(module, n)) in wrappers)

    def own(module: types.ModuleType, path: str) -> None:
        found = []
        for n in dir(module):
            v = getattr(module, n)
            if n.startswith("_") and n != "_ttnn":
                continue
            if isinstance(v, types.ModuleType):
                if v.__name__.startswith(module.__name__ + "."):
                    own(v, f"{path}.{n}")
                continue
            if str(getattr(v, "__module__", "device_sim")).startswith("device_sim"):
                found.append(n)
        names[path] = sorted(found)

    for ns in NAMESPACES:
        own(getattr(ttnn, ns), f"ttnn.{ns}")
    return names


def resolve(dotted: str):
    obj = ttnn
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", sorted(registry.OPS))
def test_every_registered_op_is_reachable_by_its_tt_nn_name_and_aliases(name):
    op = registry.OPS[name]
    for path in (name, *op.aliases):
        found = resolve(path)
        if path == "ttnn.Tensor":  # the class, whose constructor runs the op
            assert found is ttnn.Tensor
        else:
            assert found is op.wrapper, f"{path} is not {name}'s public function"


def test_no_public_name_is_lost():
    before = json.loads(SNAPSHOT.read_text())
    now = public_names()
    lost = {ns: sorted(set(names) - set(now.get(ns, ()))) for ns, names in before.items()}
    assert {ns: names for ns, names in lost.items() if names} == {}


def test_the_public_names_are_the_ops_and_a_short_list_of_others():
    # every op named ttnn.<name> (and alias) is in __all__, and every name in __all__ resolves
    tops = {p.rpartition(".")[2] for op in registry.OPS.values() for p in (op.name, *op.aliases)
            if p.rpartition(".")[0] == "ttnn"}
    assert tops <= set(ttnn.__all__)
    assert [n for n in ttnn.__all__ if not hasattr(ttnn, n)] == []
    assert len(ttnn.__all__) == len(set(ttnn.__all__))


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(public_names(), indent=0, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT}", file=sys.stderr)
