"""ttreport's two sides: capture/ (what runs while a model runs) and read/ (what opens a finished report).

The reading side opens a report without torch or device_sim, so it never imports the capture side;
shared modules (config, errors, schema, db, wal, storage, metrics...) stay at the top of ttreport/.
Every package folder ships in the wheel only if pyproject.toml's explicit `packages` list names it.
"""

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "ttreport"


def _imports(path: Path, *, module_level: bool = False) -> set[str]:
    """The modules `path` imports (and `from X import y` as X.y too); only its top-level statements if asked."""
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for node in tree.body if module_level else ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return found


def _is_capture(module: str) -> bool:
    return module == "ttreport.capturing" or module.startswith("ttreport.capturing.")


def test_the_reading_side_never_imports_the_capture_side():
    found = sorted(f"{p.relative_to(REPO)} imports {m}" for p in (PACKAGE / "read").rglob("*.py")
                   for m in _imports(p) if _is_capture(m))
    assert found == []


def test_the_import_check_sees_a_capture_import_wherever_it_is(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from ttreport import capturing\n    from ttreport.capturing.recorder import OP\n")
    assert sorted(m for m in _imports(probe) if _is_capture(m)) == ["ttreport.capturing",
                                                                   "ttreport.capturing.recorder",
                                                                   "ttreport.capturing.recorder.OP"]
    assert _imports(probe, module_level=True) == set()


def test_every_package_folder_is_in_pyprojects_packages_list():
    text = (REPO / "pyproject.toml").read_text()  # tomllib is not in Python 3.10
    listed = set(re.findall(r'"([\w.]+)"', re.search(r"^packages = \[(.*?)\]", text, re.M | re.S).group(1)))
    folders = {".".join(p.parent.relative_to(REPO).parts)
               for top in ("ttreport", "device_sim") for p in (REPO / top).rglob("__init__.py")}
    assert {"ttreport.capturing", "ttreport.read"} <= folders
    assert sorted(folders - listed) == []


def test_the_capture_side_imports_the_reading_side_only_inside_a_function():
    # A capture's close reads its own committed db once (TT-NN's perf files, through Report); nothing of
    # the reading side is loaded when a capture starts.
    found = sorted(f"{p.relative_to(REPO)} imports {m}" for p in (PACKAGE / "capturing").rglob("*.py")
                   for m in _imports(p, module_level=True) if m == "ttreport.read" or m.startswith("ttreport.read."))
    assert found == []
