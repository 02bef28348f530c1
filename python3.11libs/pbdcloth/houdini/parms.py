"""Reading a node's parameters by their declarations.

Every value a cook uses comes through :func:`evaluate`, one ``hou.Parm`` (or ``hou.ParmTuple`` for
vectors) per declared parameter, converted to the declaration's kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from ..settings import (
    CLOTH_SETTINGS,
    KIND_BOOL,
    KIND_CHOICE,
    KIND_FLOAT,
    KIND_INT,
    KIND_STRING,
    KIND_VEC3,
    ClothSettings,
    Setting,
)

if TYPE_CHECKING:
    import hou


class ParameterError(ValueError):
    """The node lacks a parameter the cook needs (the asset is older than the package)."""


def evaluate(node: "hou.OpNode", decl: Setting) -> Any:
    """The current value of the parameter declared by ``decl``, in the declaration's kind.

    Raises:
        ParameterError: the node has no such parameter.
    """
    if decl.kind == KIND_VEC3:
        parm_tuple = node.parmTuple(decl.name)
        if parm_tuple is None:
            raise _missing(node, decl.name)
        return tuple(float(c) for c in parm_tuple.evalAsFloats())
    parm = node.parm(decl.name)
    if parm is None:
        raise _missing(node, decl.name)
    if decl.kind == KIND_FLOAT:
        return float(parm.evalAsFloat())
    if decl.kind == KIND_INT:
        return int(parm.evalAsInt())
    if decl.kind == KIND_BOOL:
        return bool(parm.evalAsInt())
    if decl.kind in (KIND_CHOICE, KIND_STRING):
        return str(parm.evalAsString())
    raise ParameterError(f"parameter {decl.name!r} has unknown kind {decl.kind!r}")


def evaluate_all(node: "hou.OpNode", decls: Iterable[Setting]) -> dict[str, Any]:
    """``{name: value}`` of several declared parameters."""
    return {d.name: evaluate(node, d) for d in decls}


def cloth_settings(node: "hou.OpNode") -> ClothSettings:
    """The :class:`ClothSettings` set on a solver node (validated; raises SettingsError)."""
    return ClothSettings(**evaluate_all(node, CLOTH_SETTINGS))


def _missing(node: "hou.OpNode", name: str) -> ParameterError:
    return ParameterError(
        f"node {node.path()} has no parameter {name!r}: its asset definition is older than the "
        "installed pbdcloth package; reinstall hda/pbdcloth.hda from the same version"
    )
