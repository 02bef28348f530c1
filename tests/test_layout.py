"""The package's import graph: no circles, and no import from a lower layer up to a higher one.

Layers, highest first (a module may import its own layer and the ones below it):

    cli, houdini                     the command line and Houdini: the only callers of pipeline
    pipeline                         scene files, the one run loop, checkpoints, post-processing
    scenes, preview, docs            built-in scenes (recipes), pictures, generated docs
    io                               OBJ, USD, .geo, VRM
    solver, springs                  ClothSolver and SpringChain
    backends                         numpy, reference, warp
    colliders, selfcollision         obstacles and the cloth against itself
    cloth                            mesh, topology, coloring, model, state
    constraints                      pure projections (the model computes rest data with them)
    settings, presets, arrays, portable, atomic, version  the ground

The package's ``__init__`` is the public facade and may import anything; nothing imports it.
Every import counts, also those inside functions (lazy imports are still dependencies).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[1] / "python3.11libs" / "pbdcloth"

LAYERS: list[set[str]] = [
    {"cli", "houdini"},
    {"pipeline"},
    {"scenes", "preview", "docs"},
    {"io"},
    {"solver", "springs"},
    {"backends"},
    {"colliders", "selfcollision"},
    {"cloth"},
    {"constraints"},
    {"settings", "presets", "arrays", "portable", "atomic", "version"},
]


def _modules() -> dict[str, Path]:
    mods = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def _imports(module: str, path: Path) -> set[str]:
    """The pbdcloth modules ``module`` imports (a name imported from a package that is itself
    a module counts as that module)."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "pbdcloth")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "pbdcloth":
                continue
            subs = {f"{target}.{a.name}" for a in node.names} & MODULES.keys()
            found.update(subs if subs else {target})
    found.discard(module)
    return found


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(module: str) -> int:
    room = _room(module)
    for k, rooms in enumerate(LAYERS):
        if room in rooms:
            return k
    raise AssertionError(f"{module} is in no layer: add its room to LAYERS (and the README)")


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        if module != "pbdcloth":
            _layer(module)


def test_no_module_imports_a_higher_layer() -> None:
    upward = [
        f"{m} (layer {_room(m)}) imports {t} (layer {_room(t)})"
        for m, targets in GRAPH.items() if m != "pbdcloth"
        for t in sorted(targets)
        if t == "pbdcloth" or _layer(t) < _layer(m)
    ]
    assert not upward, "\n".join(upward)


def test_the_import_graph_has_no_circle() -> None:
    state: dict[str, int] = {}
    stack: list[str] = []
    circles: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(GRAPH.get(m, ())):
            if t not in GRAPH:
                continue
            if state.get(t) == 1:
                circles.append(" -> ".join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state:
            visit(m)
    assert not circles, "\n".join(circles)


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The walker resolves relative imports: a settings module importing the solver is caught."""
    fake = tmp_path / "settings.py"
    fake.write_text("from .solver import ClothSolver\nfrom . import arrays\n", encoding="utf-8")
    assert _imports("pbdcloth.settings", fake) == {"pbdcloth.solver", "pbdcloth.arrays"}
    assert _layer("pbdcloth.solver") < _layer("pbdcloth.settings")
