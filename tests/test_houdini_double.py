"""The hou test double offers only real Houdini API: every class, method, function and enum value
it defines exists in the ``types-houdini`` stubs, with the same parameter names in the same order.

So a cook function that runs against the double calls methods Houdini has, with keywords Houdini
accepts. The stubs are read with ``ast`` (no import of the stub package needed).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
from pathlib import Path

import hou_double
import pytest

# Classes whose constructor the production code calls (hou.Geometry(geo), hou.BoundingBox(...));
# other constructors of the double are test-only and private by convention.
CONSTRUCTED = {"Geometry", "BoundingBox"}


def _stub_path() -> Path:
    spec = importlib.util.find_spec("hou-stubs") or importlib.util.find_spec("hou_stubs")
    if spec is None or not spec.submodule_search_locations:
        for base in map(Path, __import__("sys").path):
            candidate = base / "hou-stubs" / "__init__.pyi"
            if candidate.is_file():
                return candidate
        pytest.skip("types-houdini stubs not installed (pip install types-houdini)")
    return Path(list(spec.submodule_search_locations)[0]) / "__init__.pyi"


def _params(fn: ast.FunctionDef) -> list[tuple[str, bool]]:
    """(name, has_default) of each parameter after self."""
    args = fn.args.posonlyargs + fn.args.args
    defaults = [False] * (len(args) - len(fn.args.defaults)) + [True] * len(fn.args.defaults)
    out = list(zip([a.arg for a in args], defaults))
    if out and out[0][0] in ("self", "cls"):
        out = out[1:]
    return out


class Stubs:
    def __init__(self, path: Path) -> None:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
            elif isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node

    def mro(self, name: str) -> list[ast.ClassDef]:
        out, todo = [], [name]
        while todo:
            cls = self.classes.get(todo.pop(0))
            if cls is None or cls in out:
                continue
            out.append(cls)
            todo.extend(b.id for b in cls.bases if isinstance(b, ast.Name))
        return out

    def method(self, cls: str, name: str) -> ast.FunctionDef | None:
        for c in self.mro(cls):
            for node in c.body:
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    return node
        return None

    def attribute(self, cls: str, name: str) -> bool:
        for c in self.mro(cls):
            for node in c.body:
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                        and node.target.id == name:
                    return True
                if isinstance(node, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == name for t in node.targets):
                    return True
        return False


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return Stubs(_stub_path())


def _check_signature(double_fn: object, stub_fn: ast.FunctionDef, where: str) -> None:
    sig = inspect.signature(double_fn)  # type: ignore[arg-type]
    mine = [n for n in sig.parameters if n not in ("self", "cls")]
    theirs = _params(stub_fn)
    names = [n for n, _ in theirs]
    assert mine == names[:len(mine)], f"{where}: double takes {mine}, hou takes {names}"
    missing_required = [n for n, has_default in theirs[len(mine):] if not has_default]
    assert not missing_required, f"{where}: double omits required parameters {missing_required}"


def _double_classes() -> list[type]:
    return [obj for name, obj in vars(hou_double).items()
            if inspect.isclass(obj) and obj.__module__ == hou_double.__name__
            and not name.startswith("_")]


def test_every_class_of_the_double_is_a_hou_class(stubs: Stubs) -> None:
    missing = [c.__name__ for c in _double_classes() if c.__name__ not in stubs.classes]
    assert not missing, f"the double invents classes: {missing}"


def test_every_method_of_the_double_exists_in_hou_with_the_same_parameters(stubs: Stubs) -> None:
    checked = 0
    for cls in _double_classes():
        for name, member in vars(cls).items():
            if name.startswith("_") and not (name == "__init__" and cls.__name__ in CONSTRUCTED):
                continue
            if isinstance(member, staticmethod):  # hou.hda.installFile and the like
                member = member.__func__
            if not inspect.isfunction(member):
                continue
            stub = stubs.method(cls.__name__, name)
            assert stub is not None, f"hou.{cls.__name__} has no method {name}()"
            _check_signature(member, stub, f"hou.{cls.__name__}.{name}")
            checked += 1
    assert checked > 40  # the double really offers a Geometry, VDB, SopNode ... surface


def test_every_enum_value_of_the_double_exists_in_hou(stubs: Stubs) -> None:
    for cls in _double_classes():
        for name, member in vars(cls).items():
            if isinstance(member, hou_double.EnumValue) and not name.startswith("_"):
                assert stubs.attribute(cls.__name__, name), f"hou.{cls.__name__}.{name} unknown"


def test_every_module_function_of_the_double_exists_in_hou(stubs: Stubs) -> None:
    functions = [(n, f) for n, f in vars(hou_double).items()
                 if inspect.isfunction(f) and f.__module__ == hou_double.__name__
                 and not n.startswith("_") and n != "range_"]
    assert {n for n, _ in functions} >= {"pwd", "fps", "sopNodeTypeCategory"}
    for name, fn in functions:
        stub = stubs.functions.get(name)
        assert stub is not None, f"hou has no function {name}()"
        _check_signature(fn, stub, f"hou.{name}")


def test_the_check_catches_invented_api(stubs: Stubs) -> None:
    """Negative control: a misspelt method, a renamed parameter and a made-up class all fail."""

    class Geometry:  # noqa: D401 - a deliberately wrong double
        def pointFloatAttribValuesAsBytes(self, name: str) -> bytes:  # noqa: N802
            return b""

        def findPointAttrib(self, attrib_name: str) -> None:  # noqa: N802
            return None

    assert stubs.method("Geometry", "pointFloatAttribValuesAsBytes") is None
    stub = stubs.method("Geometry", "findPointAttrib")
    assert stub is not None
    with pytest.raises(AssertionError):
        _check_signature(Geometry.findPointAttrib, stub, "hou.Geometry.findPointAttrib")
    assert "MadeUpGeometry" not in stubs.classes
