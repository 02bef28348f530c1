"""Analytic colliders: plane, sphere and capsule, movable once per frame.

Each shape keeps a start pose and an end pose for the current frame; ``move_to`` sets the end pose
for the coming frame, queries at ``alpha`` in [0, 1] interpolate linearly between them (so a fast
body sweeps through the substeps instead of teleporting), and ``end_frame`` (called by the solver)
makes the end pose the next start pose.

Signed distances (negative inside):
    plane:   phi(x) = (x - p) . n
    sphere:  phi(x) = |x - c| - r
    capsule: phi(x) = |x - (a + u (b - a))| - r,  u = clamp((x - a).(b - a) / |b - a|^2, 0, 1)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..portable import dot, norm
from .base import Collider, F, SolverInputError, as_length, as_point, lerp
from .continuous import swept_entry

#: Direction used as the normal when a point sits exactly on a sphere's centre or capsule's axis.
_FALLBACK_NORMAL = np.array([0.0, 1.0, 0.0])


def _unit_rows(d: F, length: F) -> F:
    """Rows of ``d`` divided by ``length``; the fallback normal where the length is zero."""
    out = np.empty_like(d)
    ok = length > 0.0
    out[ok] = d[ok] / length[ok, None]
    out[~ok] = _FALLBACK_NORMAL
    return out


class Plane(Collider):
    """An infinite plane through ``point`` with outward ``normal`` (the free side)."""

    def __init__(self, point: object, normal: object) -> None:
        self._p0 = self._p1 = as_point(point, "Plane point")
        self._n0 = self._n1 = self._unit(normal)

    @staticmethod
    def _unit(normal: object) -> F:
        n = as_point(normal, "Plane normal", limit=None)
        scale = float(np.abs(n).max())
        if scale == 0.0 or not np.isfinite(scale):
            raise SolverInputError(f"Plane normal must not be zero, got {n.tolist()}")
        n = n / scale  # |n| can overflow for huge components; the direction cannot
        return n / norm(n)

    @property
    def point(self) -> F:
        return self._p1

    @property
    def normal(self) -> F:
        return self._n1

    def move_to(self, point: object, normal: object | None = None) -> None:
        """Set the plane's pose for the end of the coming frame."""
        self._p1 = as_point(point, "Plane point")
        self._n1 = self._n1 if normal is None else self._unit(normal)

    def _pose(self, alpha: float) -> tuple[F, F]:
        n = lerp(self._n0, self._n1, alpha)
        return lerp(self._p0, self._p1, alpha), n / norm(n)

    def pose_at(self, alpha: float) -> tuple[F, F]:
        """(point, unit normal) at ``alpha`` in the frame, as :meth:`query` uses them."""
        return self._pose(alpha)

    def query(self, points: F, alpha: float = 1.0) -> tuple[F, F]:
        p, n = self._pose(alpha)
        phi = dot(points - p, n)
        return phi, np.broadcast_to(n, points.shape)

    def displacement(self, points: F, alpha0: float, alpha1: float) -> F:
        return np.broadcast_to(self._pose(alpha1)[0] - self._pose(alpha0)[0], points.shape)

    def end_frame(self) -> None:
        self._p0, self._n0 = self._p1, self._n1

    @property
    def is_moving(self) -> bool:
        return not (np.array_equal(self._p0, self._p1) and np.array_equal(self._n0, self._n1))

    def __repr__(self) -> str:
        return f"Plane(point={self._p1.tolist()}, normal={self._n1.tolist()})"


class Sphere(Collider):
    """A sphere of ``radius`` [m] around ``center``."""

    def __init__(self, center: object, radius: float) -> None:
        self._c0 = self._c1 = as_point(center, "Sphere center")
        self.radius = as_length(radius, "Sphere radius")

    @property
    def center(self) -> F:
        return self._c1

    def move_to(self, center: object) -> None:
        """Set the centre for the end of the coming frame."""
        self._c1 = as_point(center, "Sphere center")

    def pose_at(self, alpha: float) -> tuple[F]:
        """(centre,) at ``alpha`` in the frame, as :meth:`query` uses it."""
        return (lerp(self._c0, self._c1, alpha),)

    def query(self, points: F, alpha: float = 1.0) -> tuple[F, F]:
        d = points - lerp(self._c0, self._c1, alpha)
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        return length - self.radius, _unit_rows(d, length)

    def displacement(self, points: F, alpha0: float, alpha1: float) -> F:
        shift = lerp(self._c0, self._c1, alpha1) - lerp(self._c0, self._c1, alpha0)
        return np.broadcast_to(shift, points.shape)

    def sweep(self, x_prev: F, p: F, alpha0: float, alpha1: float, thickness: float | F
              ) -> tuple[NDArray[np.intp], F]:
        c = lerp(self._c0, self._c1, alpha0)
        return swept_entry(x_prev, p, self.displacement(x_prev, alpha0, alpha1), c, c,
                           self.radius, thickness)

    def end_frame(self) -> None:
        self._c0 = self._c1

    @property
    def is_moving(self) -> bool:
        return not np.array_equal(self._c0, self._c1)

    def __repr__(self) -> str:
        return f"Sphere(center={self._c1.tolist()}, radius={self.radius})"


class Capsule(Collider):
    """The points within ``radius`` [m] of the segment from ``a`` to ``b``."""

    def __init__(self, a: object, b: object, radius: float) -> None:
        self._a0 = self._a1 = as_point(a, "Capsule end a")
        self._b0 = self._b1 = as_point(b, "Capsule end b")
        self.radius = as_length(radius, "Capsule radius")

    @property
    def a(self) -> F:
        return self._a1

    @property
    def b(self) -> F:
        return self._b1

    def move_to(self, a: object, b: object) -> None:
        """Set both ends for the end of the coming frame (the radius stays)."""
        self._a1 = as_point(a, "Capsule end a")
        self._b1 = as_point(b, "Capsule end b")

    def _axis_param(self, points: F, a: F, b: F) -> F:
        ab = b - a
        denom = float(dot(ab, ab))
        if denom == 0.0:
            return np.zeros(points.shape[0])
        return np.clip(dot(points - a, ab) / denom, 0.0, 1.0)

    def pose_at(self, alpha: float) -> tuple[F, F]:
        """(end a, end b) at ``alpha`` in the frame, as :meth:`query` uses them."""
        return lerp(self._a0, self._a1, alpha), lerp(self._b0, self._b1, alpha)

    def query(self, points: F, alpha: float = 1.0) -> tuple[F, F]:
        a = lerp(self._a0, self._a1, alpha)
        b = lerp(self._b0, self._b1, alpha)
        u = self._axis_param(points, a, b)
        d = points - (a + u[:, None] * (b - a))
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        return length - self.radius, _unit_rows(d, length)

    def displacement(self, points: F, alpha0: float, alpha1: float) -> F:
        a0, b0 = lerp(self._a0, self._a1, alpha0), lerp(self._b0, self._b1, alpha0)
        a1, b1 = lerp(self._a0, self._a1, alpha1), lerp(self._b0, self._b1, alpha1)
        u: F = self._axis_param(points, a0, b0)[:, None]
        return np.asarray((1.0 - u) * (a1 - a0) + u * (b1 - b0), dtype=np.float64)

    def sweep(self, x_prev: F, p: F, alpha0: float, alpha1: float, thickness: float | F
              ) -> tuple[NDArray[np.intp], F]:
        a, b = lerp(self._a0, self._a1, alpha0), lerp(self._b0, self._b1, alpha0)
        return swept_entry(x_prev, p, self.displacement(x_prev, alpha0, alpha1), a, b,
                           self.radius, thickness)

    def end_frame(self) -> None:
        self._a0, self._b0 = self._a1, self._b1

    @property
    def is_moving(self) -> bool:
        return not (np.array_equal(self._a0, self._a1) and np.array_equal(self._b0, self._b1))

    def __repr__(self) -> str:
        return f"Capsule(a={self._a1.tolist()}, b={self._b1.tolist()}, radius={self.radius})"
