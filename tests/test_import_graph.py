"""ttreport's and device_sim's layers point one way: each package's module import graph, read statically (ast), has
no cycle, and an import written inside a function is there only to defer a heavy dependency, saying so in a comment.

    .venv/bin/python -m pytest tests/test_import_graph.py -q
    .venv/bin/python tests/test_import_graph.py     # each package's cycles, and function-level imports with no reason

The graph counts every import: at module level and inside functions alike (a function-level import is still a
dependency; it only runs later), but not those under `if TYPE_CHECKING:`. `from ttreport.x import y` is an edge to
ttreport.x.y when that is a module, else to ttreport.x; importing a module first imports its packages, so an edge
to ttreport.a.b is an edge to ttreport.a too (unless the importer is inside ttreport.a already). A package named
itself (`from device_sim import add`, `import device_sim`) is an edge to it wherever the importer is: its
`__init__` must have run.

A function-level import of a package's module (or of the standard library) says why it is deferred with a comment
on its line, or on the comment lines just above it (or above the group of imports it is in), naming the heavy
dependency it defers: one of the package's DEFER_WORDS. One of a heavy or optional library itself (`import torch`)
names it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# What a deferred import may defer: the heavy imports (torch ~1.2 s with device_sim, SQLAlchemy and alembic
# ~0.3 s, numpy ~0.1 s, rich ~55 ms), the optional ones a user may not have installed (psycopg, plotly), and the
# reading side from the pytest plugin, which loads in every pytest run ("pytest run"), and from the capture's start
# ("capture start": read.report and its exporters, 19-29 ms of import a capture needs only at close; issue 33's
# cold start, `import ttreport` + a first capture, measured 0.25-0.33 s against its 0.3 s target).
DEFER_WORDS = ("torch", "device_sim", "sqlalchemy", "alembic", "numpy", "rich", "psycopg", "plotly", "optional",
               "pytest run", "capture start")
# Inside device_sim torch is no heavy dependency (the tensor and every op import it at the top) nor is device_sim
# itself: what a device_sim function may defer is a drawing or graph library (networkx ~0.2 s, graphviz), or a
# library a user may not have installed ("optional").
DEVICE_SIM_DEFER_WORDS = ("networkx", "graphviz", "optional")
PACKAGES = {"ttreport": DEFER_WORDS, "device_sim": DEVICE_SIM_DEFER_WORDS}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(package: str = "ttreport") -> dict[str, Path]:
    """The package's Python modules by name, and its C extensions (each `x.c` source is setup.py's extension module
    `x`, as device_sim/_native.c is device_sim._native): modules that import none of the package's."""
    found = {module_name(p): p for p in sorted((ROOT / package).rglob("*.c"))}
    return found | {module_name(p): p for p in sorted((ROOT / package).rglob("*.py"))}


def sources(package: str = "ttreport") -> dict[str, Path]:
    """The package's Python modules by name: those that import."""
    return {name: p for name, p in modules(package).items() if p.suffix == ".py"}


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, child.end_lineno + 1))
    return lines


def _function_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def imports(name: str, path: Path, known: dict[str, Path], package: str = "ttreport"):
    """(target module, line, at function level) for each module of `package` that module `name` imports."""
    tree = ast.parse(path.read_text(), str(path))
    skip, in_function = _type_checking_lines(tree), _function_lines(tree)
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]  # what a relative import starts from
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or node.lineno in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                parts = here.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        for target in targets:
            if target != package and not target.startswith(package + "."):
                continue
            while target not in known:  # `import ttreport.x.attr` style: the module that holds it
                target = target.rpartition(".")[0]
            # The packages above the target are imported first, unless the importer is inside them already; the
            # target itself is a dependency wherever the importer is.
            parts = target.split(".")
            for i in range(1, len(parts) + 1):
                dep = ".".join(parts[:i])
                if dep != name and (dep == target or not name.startswith(dep + ".")):
                    yield dep, node.lineno, node.lineno in in_function


def graph(package: str = "ttreport") -> dict[str, set[str]]:
    known = modules(package)
    return {name: {dep for dep, _, _ in imports(name, path, known, package)} if path.suffix == ".py" else set()
            for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted: every import ring."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            ring = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                ring.append(w)
                if w == v:
                    break
            if len(ring) > 1:
                found.append(sorted(ring))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _reason(lines: list[str], lineno: int) -> str:
    """The comment that says why the import on `lineno` (1-based) is deferred: on its line, or on the comment
    lines just above it or above the run of import lines it belongs to."""
    said = [lines[lineno - 1].partition("#")[2]]
    i = lineno - 2
    while i >= 0 and (lines[i].strip().startswith(("from ", "import ")) or lines[i].strip().startswith("#")):
        said.append(lines[i].partition("#")[2])
        i -= 1
    return " ".join(said).lower()


def _heavy(node: ast.Import | ast.ImportFrom, words: tuple[str, ...] = DEFER_WORDS) -> bool:
    """Whether the import brings in one of the heavy or optional libraries itself (not a module of the package)."""
    names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    return not getattr(node, "level", 0) and all(n.split(".")[0] in words for n in names)


def unexplained_function_imports(package: str = "ttreport") -> list[str]:
    """`path:line: import` for each function-level import of a module of `package` (or any library that is not one
    of its heavy ones) that gives no reason naming what it defers."""
    words = PACKAGES[package]
    out = []
    for path in sources(package).values():
        text = path.read_text()
        lines = text.splitlines()
        tree = ast.parse(text, str(path))
        skip, in_function = _type_checking_lines(tree), _function_lines(tree)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if node.lineno in in_function and node.lineno not in skip:
                if _heavy(node, words):
                    continue  # `import torch` in a function says itself what it defers
                reason = _reason(lines, node.lineno)
                if not any(word in reason for word in words):
                    out.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return out


def function_imports(package: str = "ttreport") -> int:
    """How many import statements are written inside functions (TYPE_CHECKING blocks aside)."""
    count = 0
    for path in sources(package).values():
        tree = ast.parse(path.read_text(), str(path))
        skip, in_function = _type_checking_lines(tree), _function_lines(tree)
        count += sum(1 for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                     and n.lineno in in_function and n.lineno not in skip)
    return count


@pytest.mark.parametrize("package", PACKAGES)
def test_package_has_no_import_cycle(package):
    rings = cycles(graph(package))
    assert rings == [], "import rings (a layer importing one above it):\n" + "\n".join(" <-> ".join(r) for r in rings)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_function_level_import_says_what_heavy_dependency_it_defers(package):
    over = unexplained_function_imports(package)
    assert over == [], (f"imports inside functions with no reason naming what they defer "
                        f"({', '.join(PACKAGES[package])}); move each to the module's top, or say what it defers:\n"
                        + "\n".join(over))


@pytest.mark.parametrize("package", PACKAGES)
def test_the_graph_sees_a_ring_and_a_function_level_import(package, tmp_path, monkeypatch):
    # The checks above can fail for each package: a real package in tmp_path with a two-module ring, one side
    # imported inside a function with no reason (and one with a reason that names none of the package's heavy
    # dependencies), and a module that imports the package's __init__ while the __init__ imports it, is found.
    words = PACKAGES[package]
    pkg = tmp_path / package
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"from {package} import c\n")
    (pkg / "a.py").write_text(f"from {package}.b import x\n")
    (pkg / "b.py").write_text(f"x = 1\n\n\ndef f():\n    from {package} import a\n\n\n"
                              f"def g():\n    from {package} import a  # deferred: the layer above\n\n\n"
                              f"def h():\n    import {words[0]}  # itself\n\n\n"
                              f"def k():\n    from {package}.a import y  # deferred: {words[0]}\n")
    (pkg / "c.py").write_text(f"from {package} import d\n")
    (pkg / "d.py").write_text(f"from {package} import something_the_init_exports\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    rings = sorted(cycles(graph(package)))
    assert rings == [[package, f"{package}.c", f"{package}.d"], [f"{package}.a", f"{package}.b"]]
    assert unexplained_function_imports(package) == [f"{package}/b.py:5: from {package} import a",
                                                     f"{package}/b.py:9: from {package} import a  # deferred: the "
                                                     f"layer above"]
    assert function_imports(package) == 4


if __name__ == "__main__":
    for package in (sys.argv[1:] or PACKAGES):
        rings = cycles(graph(package))
        print(f"{package}: {len(rings)} import rings" + "".join(f"\n  {len(r)} modules: {' '.join(r)}" for r in rings))
        print(f"{package}: {function_imports(package)} import statements inside functions")
        missing = unexplained_function_imports(package)
        print(f"{package}: {len(missing)} function-level imports with no reason naming what they defer")
        for line in missing:
            print("  " + line)
