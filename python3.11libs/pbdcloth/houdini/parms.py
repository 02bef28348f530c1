"""Reading a node's parameters by their declarations.

Every value a cook uses comes through :func:`evaluate`, one ``hou.Parm`` (or ``hou.ParmTuple`` for
vectors) per declared parameter, converted to the declaration's kind, at the cooking time or at a
given frame (``evalAs...AtFrame``: a simulation samples animated parameters frame by frame).

:func:`definitions` tells a parameter's *definition* (its keyframes with their values, slopes and
expressions, or its raw value) apart from its animation playing: the definition digest changes
when a key, an expression or a static value is edited, never when time moves on, and it names the
time-dependent parameters the simulation must sample at each frame.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
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


def evaluate(node: "hou.OpNode", decl: Setting, frame: float | None = None) -> Any:
    """The value of the parameter declared by ``decl`` at the cooking time (``frame`` None) or
    at ``frame``, in the declaration's kind.

    Raises:
        ParameterError: the node has no such parameter.
    """
    if decl.kind == KIND_VEC3:
        parm_tuple = node.parmTuple(decl.name)
        if parm_tuple is None:
            raise _missing(node, decl.name)
        values = parm_tuple.evalAsFloats() if frame is None \
            else parm_tuple.evalAsFloatsAtFrame(frame)
        return tuple(float(c) for c in values)
    parm = node.parm(decl.name)
    if parm is None:
        raise _missing(node, decl.name)
    if decl.kind == KIND_FLOAT:
        return float(parm.evalAsFloat() if frame is None else parm.evalAsFloatAtFrame(frame))
    if decl.kind in (KIND_INT, KIND_BOOL):
        value = int(parm.evalAsInt() if frame is None else parm.evalAsIntAtFrame(frame))
        return bool(value) if decl.kind == KIND_BOOL else value
    if decl.kind in (KIND_CHOICE, KIND_STRING):
        return str(parm.evalAsString() if frame is None else parm.evalAsStringAtFrame(frame))
    raise ParameterError(f"parameter {decl.name!r} has unknown kind {decl.kind!r}")


def evaluate_all(node: "hou.OpNode", decls: Iterable[Setting],
                 frame: float | None = None) -> dict[str, Any]:
    """``{name: value}`` of several declared parameters (at ``frame`` when given)."""
    return {d.name: evaluate(node, d, frame) for d in decls}


def cloth_settings(node: "hou.OpNode", frame: float | None = None) -> ClothSettings:
    """The :class:`ClothSettings` set on a solver node (validated; raises SettingsError)."""
    return ClothSettings(**evaluate_all(node, CLOTH_SETTINGS, frame))


@dataclass(frozen=True)
class Definitions:
    """What the parameters of a simulation are defined as.

    Attributes:
        digest: changes when a keyframe, an expression or a static value changes.
        animated: names of the time-dependent parameters, sampled at each simulated frame.
    """

    digest: str
    animated: frozenset[str]


def _components(node: "hou.OpNode", decl: Setting) -> list["hou.Parm"]:
    if decl.kind == KIND_VEC3:
        parm_tuple = node.parmTuple(decl.name)
        if parm_tuple is None:
            raise _missing(node, decl.name)
        return list(parm_tuple)
    parm = node.parm(decl.name)
    if parm is None:
        raise _missing(node, decl.name)
    return [parm]


def _definition(parm: "hou.Parm", start: float) -> str:
    """A parameter's keyframes (each key's code: frame, value, slopes, expression) or its raw
    value, and its value at the start frame (which catches a static ``ch()`` reference)."""
    keys = parm.keyframes()
    body = "|".join(k.asCode(brief=True) for k in keys) if keys else parm.rawValue()
    return f"{body}@{parm.evalAtFrame(start)!r}"


def definitions(node: "hou.OpNode", decls: Iterable[Setting], start: float) -> Definitions:
    """The :class:`Definitions` of ``decls`` on ``node``; values are read at ``start`` only."""
    h = hashlib.blake2b(digest_size=16)
    animated: set[str] = set()
    for decl in decls:
        for parm in _components(node, decl):
            h.update(f"{decl.name}={_definition(parm, start)};".encode())
            if parm.isTimeDependent():
                animated.add(decl.name)
    return Definitions(h.hexdigest(), frozenset(animated))


def _missing(node: "hou.OpNode", name: str) -> ParameterError:
    return ParameterError(
        f"node {node.path()} has no parameter {name!r}: its asset definition is older than the "
        "installed pbdcloth package; reinstall hda/pbdcloth.hda from the same version"
    )
