"""The collider interface every obstacle implements, and the contact response they share.

A collider is queried in bulk: signed distances and outward normals of many points at once, at a
time ``alpha`` in [0, 1] inside the current frame (0 = the pose at the start of the frame, 1 = the
pose set for its end with ``move_to``). The solver calls :meth:`Collider.end_frame` after each
frame so the end pose becomes the next frame's start pose.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..arrays import MAX_COORDINATE, real_array

F = NDArray[np.float64]


class SolverInputError(ValueError):
    """A value given to the solver at run time (time step, targets, colliders) is unusable."""


class Collider(ABC):
    """An obstacle described by a signed distance: negative inside, positive outside [m]."""

    @abstractmethod
    def query(self, points: F, alpha: float = 1.0) -> tuple[F, F]:
        """Signed distance (M,) [m] and unit outward normal (M, 3) at ``points`` (M, 3).

        ``alpha`` in [0, 1] blends the pose from the start to the end of the current frame.
        A zero normal row means the collider knows no direction there (e.g. outside or deeper
        than a signed distance field's narrow band); the contact response skips such points.
        """

    def near(self, points: F, alpha: float, distance: float) -> tuple[NDArray[np.intp], F, F]:
        """The points closer than ``distance`` [m] to the surface: indices (K,) into ``points``
        (ascending), their signed distances (K,) [m] and normals (K, 3), equal to what
        :meth:`query` gives for them.

        The contact response asks only for these; colliders that can find them cheaper than a
        full query (e.g. by computing normals for near points only) override this.
        """
        phi, normal = self.query(points, alpha)
        idx = np.flatnonzero(phi < distance)
        return idx, phi[idx], normal[idx]

    @abstractmethod
    def displacement(self, points: F, alpha0: float, alpha1: float) -> F:
        """How far the collider's surface near ``points`` moves from ``alpha0`` to ``alpha1`` [m].

        Used for friction: slip is measured relative to the moving surface. Shape (M, 3).
        """

    def sweep(self, x_prev: F, p: F, alpha0: float, alpha1: float, thickness: float | F
              ) -> tuple[NDArray[np.intp], F]:
        """Continuous collision over one substep (``alpha0`` to ``alpha1``): the particles
        (indices (K,) into ``p``) that the collider would pass over or push out of its far
        side, and where they go instead (K, 3) [m] (see :mod:`.continuous`). ``thickness``
        is one number [m] or each particle's, (N,).

        The default finds none: a plane's inside is a whole half-space, so the end-of-substep
        projection already sends every particle back to the free side.
        """
        return np.zeros(0, dtype=np.intp), np.zeros((0, 3))

    @abstractmethod
    def end_frame(self) -> None:
        """Make the end-of-frame pose the start pose of the next frame."""

    @property
    def is_moving(self) -> bool:
        """True while the start and end poses of the current frame differ."""
        return False



class ClothContactCollider(Collider):
    """A collider that does its own contact response with the whole cloth, its triangles too
    (e.g. :class:`~pbdcloth.colliders.mesh.MeshCollider`: its vertices against the cloth's
    triangles). Backends call :meth:`project_cloth` in place of the shared per-particle
    response (:func:`pbdcloth.colliders.response.project_contacts`)."""

    @abstractmethod
    def project_cloth(self, P: F, X: F, inv_mass: F, triangles: NDArray[np.intp],
                      alpha0: float, alpha1: float, h: float, thickness: float,
                      mu_static: float, mu_kinetic: float, contacts: Any, *,
                      thickness_scale: F | None = None,
                      friction_scale: F | None = None) -> int:
        """One iteration of contacts in place on ``P`` (3, N) [m], the positions at the end of
        the substep ``alpha0`` -> ``alpha1``; ``X`` (3, N) at its start, ``inv_mass`` (N,),
        the cloth's ``triangles`` (3, T), the substep ``h`` [s]. Records contacts in
        ``contacts`` (a :class:`~pbdcloth.colliders.response.ContactBuffer`) and returns their
        number. ``thickness_scale``, ``friction_scale``: per-point contact scales (N,) or None
        (:mod:`pbdcloth.cloth.attributes`)."""


def min_distance(colliders: Iterable[Collider], positions: F) -> float:
    """Smallest signed distance from ``positions`` (N, 3) to the colliders' surfaces at their
    end-of-frame pose [m]; inf when there are no colliders."""
    best = float("inf")
    for c in colliders:
        phi, _ = c.query(positions, 1.0)
        best = min(best, float(phi.min()))
    return best


def lerp(a: F, b: F, t: float) -> F:
    """Linear interpolation a + t (b - a), exact at t = 0 and t = 1."""
    if t == 0.0:
        return a
    if t == 1.0:
        return b
    return a + t * (b - a)


def as_point(value: object, what: str, limit: float | None = MAX_COORDINATE) -> F:
    """Three finite real numbers within +-:data:`~pbdcloth.arrays.MAX_COORDINATE` [m], or a
    :class:`SolverInputError` naming ``what`` and the value."""
    if isinstance(value, (str, bytes, dict)):
        raise SolverInputError(f"{what} must be three finite numbers, got {value!r}")
    arr = real_array(value, what, SolverInputError, finite=False)
    if arr.shape != (3,) or not np.all(np.isfinite(arr)) \
            or (limit is not None and not np.all(np.abs(arr) <= limit)):
        within = f" within +-{limit:g} m" if limit is not None else ""
        raise SolverInputError(f"{what} must be three finite numbers{within}, "
                               f"got {value!r}"[:200])
    return arr.copy()


def as_length(value: object, what: str, allow_zero: bool = False) -> float:
    """A finite positive length up to :data:`~pbdcloth.arrays.MAX_COORDINATE` [m], or a
    :class:`SolverInputError` naming ``what`` and the value."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise SolverInputError(f"{what} must be a number, got {value!r}"[:200])
    try:
        x = float(value)
    except OverflowError:
        x = float("inf")
    if not np.isfinite(x) or x < 0.0 or (x == 0.0 and not allow_zero) or x > MAX_COORDINATE:
        raise SolverInputError(f"{what} must be a positive length up to {MAX_COORDINATE:g} m, "
                               f"got {value!r}"[:200])
    return x
