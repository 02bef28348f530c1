"""Per-point attributes of a cloth, declared once: mass, stiffness and contact scales, pin weights.

Every setting of :class:`~pbdcloth.settings.ClothSettings` is one number for the whole cloth;
a point attribute varies it point by point, the way Vellum's ``stretchstiffness`` /
``bendstiffness`` scale attributes do. :data:`POINT_ATTRIBUTES` declares each one (Python name,
meaning, range, default, the Houdini point attribute and the USD primvar it is read from);
``ClothSolver(..., point_attributes={"bend_scale": (N,) array, ...})``, the scene file's
``[attributes]`` table, the USD reader and the HDA's help card all go by this one table.

How a scale reaches the constraints (:func:`constraint_scale`): a constraint takes the mean of
its points' values (a stretch or shear edge: 2 points, a bend hinge: its 4 points). Then, with
the constraint's scale s:

* PBD: the per-iteration stiffness k' = 1 - (1 - k)^(1/n) becomes min(1, s k');
* XPBD: the compliance alpha becomes alpha / s (stiffness times s); the constraint damping beta
  is left as it is. Written without dividing (numerator and denominator times s) the
  multiplier update is

      dlambda = (-s C - alpha~ lambda - gamma grad C . dx) / ((s + gamma) |grad C|^2_W + alpha~),

  which is Macklin et al. 2016, eq. 26, with alpha~ / s and gamma / s, and switches the
  constraint off at s = 0 (alpha~ > 0) instead of dividing by zero.

Contact scales (:func:`contact_scales`) act on the obstacle colliders only, per point: the
point's collision thickness is ``settings.thickness * thickness_scale`` and its Coulomb
coefficients ``mu_static * friction_scale``, ``friction * friction_scale``
(:mod:`pbdcloth.colliders.response`; a mesh collider's vertex against a cloth triangle takes the
mean of the triangle's three corners, :mod:`pbdcloth.colliders.mesh_contact`). Self-collision
keeps the uniform ``self_thickness`` and ``self_friction``.

A scale of exactly 1 multiplies by 1.0 and changes no bit of the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..arrays import F, real_array
from .mesh import MeshError


class PointAttributeError(MeshError):
    """A per-point attribute is unknown, of the wrong length, not finite or out of range."""


@dataclass(frozen=True)
class PointAttribute:
    """Declaration of one per-point attribute.

    Attributes:
        name: the key in ``point_attributes`` and in a scene file's ``[attributes]`` table.
        meaning: one line for the help card and the docs.
        minimum, maximum: inclusive range of each point's value (``minimum_open``: the
            minimum itself is refused).
        default: the value of a point when the attribute is not given.
        houdini: the Houdini point attribute read from the HDA's cloth input.
        usd: the USD primvar read from a cloth mesh prim.
    """

    name: str
    meaning: str
    minimum: float
    maximum: float
    default: float
    houdini: str
    usd: str
    minimum_open: bool = False

    def range_text(self) -> str:
        low = "(" if self.minimum_open else "["
        return f"{low}{self.minimum:g}, {self.maximum:g}]"


#: Largest stiffness or mass scale accepted: beyond it the scaled values leave the settings'
#: own ranges by orders of magnitude.
MAX_SCALE = 1e6

#: Largest contact scale (thickness or friction) accepted: a point's thickness stays within
#: 100 x the setting's (at most 1 km with the setting's own maximum, far past any scene), and a
#: friction coefficient past 100 x the setting's sticks as firmly as any.
MAX_CONTACT_SCALE = 100.0

POINT_ATTRIBUTES: tuple[PointAttribute, ...] = (
    PointAttribute(
        "mass_scale", "areal density scale: each point's lumped mass is density x area x scale",
        0.0, MAX_SCALE, 1.0, "mass_scale", "massScale", minimum_open=True),
    PointAttribute(
        "stretch_scale", "stretch stiffness scale of the mesh edges at the point (mean of the "
        "edge's two points; XPBD: compliance / scale)", 0.0, MAX_SCALE, 1.0,
        "stretchstiffness_scale", "stretchScale"),
    PointAttribute(
        "shear_scale", "shear stiffness scale of the diagonals across the point's quads (mean "
        "of the diagonal's two points)", 0.0, MAX_SCALE, 1.0, "shearstiffness_scale",
        "shearScale"),
    PointAttribute(
        "bend_scale", "bend stiffness scale of the hinges at the point (mean of the hinge's "
        "four points); 0 bends freely", 0.0, MAX_SCALE, 1.0, "bendstiffness_scale",
        "bendScale"),
    PointAttribute(
        "pin_weight", "pin to target: 0 free, 1 a hard pin, between a soft pin pulled toward "
        "its target each substep (see pbdcloth.constraints.softpin)", 0.0, 1.0, 0.0,
        "pinweight", "pinWeight"),
    PointAttribute(
        "thickness_scale", "collision thickness scale against colliders: the point keeps "
        "thickness x scale from their surfaces (a mesh collider's vertex against a cloth "
        "triangle: the mean of its corners'); 0 touches them; self-collision keeps "
        "self_thickness", 0.0, MAX_CONTACT_SCALE, 1.0, "thickness_scale", "thicknessScale"),
    PointAttribute(
        "friction_scale", "friction scale against colliders: the point's static and kinetic "
        "coefficients (max(static_friction, friction) and friction) times the scale; 0 slides "
        "freely; self-collision keeps self_friction", 0.0, MAX_CONTACT_SCALE, 1.0,
        "friction_scale", "frictionScale"),
)

#: The declarations by name.
ATTRIBUTES_BY_NAME: dict[str, PointAttribute] = {a.name: a for a in POINT_ATTRIBUTES}
#: The stiffness scale attribute of each constraint family.
FAMILY_SCALES = {"stretch": "stretch_scale", "shear": "shear_scale", "bend": "bend_scale"}


def validate_point_attributes(attributes: object, particle_count: int) -> dict[str, F]:
    """The given attributes as float64 (N,) arrays, or a :class:`PointAttributeError` naming the
    attribute and its first bad point.

    ``attributes`` is ``None`` or a mapping of declared names to (N,) arrays (or one number,
    the same at every point). Attributes equal to their default everywhere are kept (they
    change nothing).
    """
    if attributes is None:
        return {}
    if not isinstance(attributes, Mapping):
        raise PointAttributeError(f"point_attributes must be a mapping of attribute name to "
                                  f"(N,) array, got {type(attributes).__name__}")
    out: dict[str, F] = {}
    for name, value in attributes.items():
        decl = ATTRIBUTES_BY_NAME.get(name) if isinstance(name, str) else None
        if decl is None:
            raise PointAttributeError(f"unknown point attribute {name!r}; the attributes are "
                                      f"{', '.join(ATTRIBUTES_BY_NAME)}")
        arr = real_array(value, f"point attribute '{name}'", PointAttributeError, finite=False)
        if arr.ndim == 0:
            arr = np.full(particle_count, float(arr))
        if arr.shape != (particle_count,):
            raise PointAttributeError(f"point attribute '{name}' must have one value per point "
                                      f"({particle_count},), got shape {arr.shape}")
        with np.errstate(invalid="ignore"):
            low_bad = arr <= decl.minimum if decl.minimum_open else arr < decl.minimum
            bad = np.flatnonzero(~np.isfinite(arr) | low_bad | (arr > decl.maximum))
        if bad.size:
            p = int(bad[0])
            raise PointAttributeError(
                f"point attribute '{name}' must be finite and within {decl.range_text()}; "
                f"point {p} is {arr[p]!r} ({bad.size} bad point(s))")
        out[name] = arr
    return out


def contact_scales(attributes: Mapping[str, F]) -> tuple[F | None, F | None]:
    """The (thickness, friction) contact scales of a model's validated attributes, (N,) each,
    or ``None`` where not given (every point at scale 1)."""
    return attributes.get("thickness_scale"), attributes.get("friction_scale")


def constraint_scale(point_values: F | None, members: np.ndarray) -> F | None:
    """Each constraint's value: the mean of its points' values, shape (M,); ``None`` when the
    attribute is not given (every constraint at scale 1).

    ``members`` (M, K) are the constraints' point indices (K = 2 for distances, 4 for hinges).
    The mean of K ones is exactly 1.
    """
    if point_values is None:
        return None
    if members.shape[0] == 0:
        return np.zeros(0)
    return np.ascontiguousarray(point_values[members].mean(axis=1))


__all__ = ["ATTRIBUTES_BY_NAME", "FAMILY_SCALES", "MAX_CONTACT_SCALE", "MAX_SCALE",
           "POINT_ATTRIBUTES", "PointAttribute", "PointAttributeError", "constraint_scale",
           "contact_scales", "validate_point_attributes"]
