"""The mechanical energy of a cloth state: kinetic, gravitational and elastic (XPBD) terms.

For particles of mass m_p (inverse mass 0: pinned, left out) at x_p with velocity v_p, under
gravity g, and XPBD constraints C_k of compliance alpha_k (Macklin et al. 2016, eq. 2: the
potential U = 1/2 C^T alpha^-1 C):

    kinetic  = sum_p 1/2 m_p |v_p|^2
    gravity  = -sum_p m_p g . (x_p - reference)
    bend     = sum_k s_k C_k^2 / (2 alpha_bend),    C_k = theta_k - theta0_k (wrapped)
    stretch  = sum_k s_k C_k^2 / (2 alpha_stretch), C_k = |x_i - x_j| - L_k   (shear alike)

with s_k the constraint's stiffness scale (point attributes; the compliance is alpha / s_k).

:attr:`Energy.mechanical` = kinetic + gravity + bend is what a cloth with near-inextensible
stretch and shear (their alpha / h^2 thousands of times below the constraints' generalised
inverse mass, as with the defaults) can exchange: such constraints act as hard ones, and what a
Gauss-Seidel pass leaves of them (strain ~1e-4) is the solver's error, not stored energy: with
alpha = 1e-6 m/N a residual of 0.1 mm on one edge would hold 5 mJ, more than a 1 m^2 sheet's
whole bending energy, and no such energy ever shows up as motion. :attr:`Energy.stretch` and
:attr:`Energy.shear` are given apart for soft materials. The PBD model has no compliance: its
elastic terms are 0 and only kinetic + gravity is defined.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..constraints.bend import dihedral_angle, wrap_angle
from ..portable import dot
from ..settings import ClothSettings, Model
from .mesh import FloatArray
from .model import ClothModel, DistanceFamily


@dataclass(frozen=True)
class Energy:
    """Energy terms of one cloth state [J] (see the module docstring)."""

    kinetic: float
    gravity: float
    bend: float
    stretch: float
    shear: float

    @property
    def mechanical(self) -> float:
        """kinetic + gravity + bend."""
        return self.kinetic + self.gravity + self.bend

    @property
    def total(self) -> float:
        """Every term: mechanical + stretch + shear."""
        return self.mechanical + self.stretch + self.shear


def _distance_potential(family: DistanceFamily, x: FloatArray, compliance: float) -> float:
    if compliance <= 0.0 or family.count == 0:
        return 0.0
    c = np.linalg.norm(x[family.i] - x[family.j], axis=1) - family.rest
    scale = 1.0 if family.scale is None else family.scale
    return float((scale * c * c).sum() / (2.0 * compliance))


def cloth_energy(model: ClothModel, positions: FloatArray, velocities: FloatArray,
                 settings: ClothSettings,
                 reference: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> Energy:
    """The energy terms of ``positions``, ``velocities`` (N, 3) of ``model`` under ``settings``
    (gravity, model, compliances); gravitational potential measured from ``reference`` [m]."""
    free = model.inv_mass > 0.0
    m = model.mass[free]
    x, v = positions[free], velocities[free]
    kinetic = float(0.5 * (m * np.einsum("ij,ij->i", v, v)).sum())
    g = np.asarray(settings.gravity, dtype=np.float64)
    gravity = float(-(m * dot(x - np.asarray(reference, dtype=np.float64), g)).sum())
    if settings.model != Model.XPBD:
        return Energy(kinetic, gravity, 0.0, 0.0, 0.0)
    bend = 0.0
    fam = model.bend
    if settings.bend_compliance > 0.0 and fam.count:
        q = fam.quads
        theta = dihedral_angle(*(np.ascontiguousarray(positions[q[:, k]].T) for k in range(4)))
        c = wrap_angle(theta - fam.rest_angle)
        scale = 1.0 if fam.scale is None else fam.scale
        bend = float((scale * c * c).sum() / (2.0 * settings.bend_compliance))
    return Energy(kinetic, gravity, bend,
                  _distance_potential(model.stretch, positions, settings.stretch_compliance),
                  _distance_potential(model.shear, positions, settings.shear_compliance))


__all__ = ["Energy", "cloth_energy"]
