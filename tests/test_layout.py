"""The package layout: public API, old import paths, and the layering rules."""

import ast
import os
import subprocess
import sys
import warnings

import pytest

import hydro
from hydro import _compat

ROOT = os.path.join(os.path.dirname(__file__), "..")


def test_the_public_api_resolves_every_name():
    for name in hydro.__all__:
        assert getattr(hydro, name) is not None, name
    assert hydro.HydroelasticPipeline.__module__ == "hydro.contact.pipeline"
    assert hydro.load_usd.__module__ == "hydro.scene.usd_io"
    with pytest.raises(AttributeError):
        hydro.no_such_thing


@pytest.mark.parametrize("old", sorted(_compat.MOVED))
def test_an_old_import_path_is_the_new_module_with_a_deprecation_warning(old):
    new = __import__(f"hydro.{_compat.MOVED[old]}", fromlist=["_"])
    sys.modules.pop(f"hydro.{old}", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mod = __import__(f"hydro.{old}", fromlist=["_"])
    assert mod is new
    assert mod.__spec__.name == f"hydro.{_compat.MOVED[old]}"  # the alias leaves the real module's spec alone
    assert any(issubclass(w.category, DeprecationWarning) and _compat.MOVED[old] in str(w.message) for w in caught)


def _imports(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def _python_files(top):
    for d, _, files in os.walk(os.path.join(ROOT, top)):
        for f in files:
            if f.endswith(".py"):
                yield os.path.join(d, f)


def test_hydro_never_imports_the_viewer_and_only_usd_io_imports_pxr():
    for path in _python_files("hydro"):
        names = set(_imports(path))
        rel = os.path.relpath(path, ROOT)
        assert not any(n == "viz" or n.startswith("viz.") or n.startswith("polyscope") for n in names), rel
        if any(n == "pxr" or n.startswith("pxr.") for n in names):
            assert rel == os.path.join("hydro", "scene", "usd_io.py"), f"{rel} imports pxr"


def test_importing_hydro_does_not_load_numba_or_pxr():
    code = "import sys, hydro; print(any(m.split('.')[0] in ('numba', 'pxr', 'polyscope') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def _geometry_imports(path):
    """The hydro/geometry modules that ``path`` imports (top-level or inside functions)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if node.level == 1:  # from .x import ... / from . import x
                out |= {mod.split(".")[0]} if mod else {a.name for a in node.names}
            elif node.level == 0 and mod.startswith("hydro.geometry."):
                out.add(mod.split(".")[2])
    return out


def test_hydro_geometry_has_no_import_cycle():
    # every import counts, deferred ones too: a cycle hidden inside functions still ties the modules
    # together (issue 25: convex ↔ mesh_check ↔ mesh_distance ↔ mesh_winding ↔ shapes)
    folder = os.path.join(ROOT, "hydro", "geometry")
    mods = {f[:-3] for f in os.listdir(folder) if f.endswith(".py") and f != "__init__.py"}
    graph = {m: _geometry_imports(os.path.join(folder, m + ".py")) & mods for m in mods}
    state = {}

    def visit(m, path):
        if state.get(m) == "done":
            return
        assert state.get(m) != "open", "import cycle in hydro/geometry: " + " -> ".join(path[path.index(m):] + [m])
        state[m] = "open"
        for n in sorted(graph[m]):
            visit(n, path + [m])
        state[m] = "done"

    for m in sorted(mods):
        visit(m, [])
    assert {"shapes", "mesh_check", "mesh_distance", "mesh_winding", "convex"} <= mods
