"""Rigid transforms for moving colliders: validation, composition and interpolation in time.

A rigid transform maps a body's local coordinates y to world coordinates x = R y + t, with R a
proper rotation (R^T R = I, det R = +1) and t a translation [m]. Matrices follow the column-vector
convention: a 4 x 4 matrix [[R, t], [0 0 0 1]] with the translation in the last column.

Between two key poses a body moves by "lerp and slerp" about a pivot point c (a point fixed in the
body, e.g. its centre): the pivot's world position moves linearly, the rotation turns at constant
angular speed along the shortest arc (Shoemake 1985, "Animating rotation with quaternion curves",
SIGGRAPH, the slerp formula q(a) = sin((1 - a) W) / sin W q0 + sin(a W) / sin W q1, cos W = q0.q1).
Interpolating about the body's own centre keeps a spinning wheel's hub in place, which interpolating
the matrix's translation column (a rotation about the world origin) would not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..arrays import F
from ..portable import dot, matmul, norm, rotate, rotate_t
from .base import SolverInputError

#: Tolerance on |R^T R - I| (largest entry) for a matrix to count as a rotation. Houdini and DCC
#: exports carry float32 round-off (about 1e-7); 1e-5 accepts that and refuses any real scale or
#: shear (a 0.001 % scale is already 2e-5).
ROTATION_TOLERANCE = 1e-5


class RigidTransformError(SolverInputError):
    """A matrix given as a rigid transform has the wrong shape, NaNs, scale, shear or a mirror."""


@dataclass(frozen=True)
class Rigid:
    """x = rotation @ y + translation.

    Attributes:
        rotation: proper rotation matrix, shape (3, 3).
        translation: shape (3,) [m].
        quaternion: the same rotation as a unit quaternion (w, x, y, z) with w >= 0, shape (4,).
    """

    rotation: F
    translation: F
    quaternion: F

    @staticmethod
    def identity() -> Rigid:
        return Rigid(np.eye(3), np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]))

    @staticmethod
    def from_parts(rotation: F, translation: F) -> Rigid:
        """From an (already checked) rotation matrix and translation; the matrix is re-derived
        from its quaternion so that it is orthonormal to round-off."""
        q = quaternion_from_matrix(rotation)
        return Rigid(matrix_from_quaternion(q), np.array(translation, dtype=np.float64), q)

    def matrix(self) -> F:
        """The 4 x 4 matrix [[R, t], [0, 0, 0, 1]] (column vectors)."""
        m = np.eye(4)
        m[:3, :3] = self.rotation
        m[:3, 3] = self.translation
        return m

    def compose(self, inner: Rigid) -> Rigid:
        """self after inner: x = R_s (R_i y + t_i) + t_s."""
        return Rigid.from_parts(matmul(self.rotation, inner.rotation),
                                rotate(self.rotation, inner.translation) + self.translation)

    def to_local(self, points: F) -> F:
        """y = R^T (x - t) for world points (M, 3) -> local points (M, 3)."""
        return rotate_t(self.rotation, points - self.translation)

    def to_world(self, points: F) -> F:
        """x = R y + t for local points (M, 3) -> world points (M, 3)."""
        return rotate(self.rotation, points) + self.translation

    def same_as(self, other: Rigid) -> bool:
        return bool(np.array_equal(self.rotation, other.rotation)
                    and np.array_equal(self.translation, other.translation))


def rigid_from_matrix(matrix: object, what: str = "transform") -> Rigid:
    """Check a 4 x 4 column-vector matrix is rigid (rotation + translation) and convert it.

    Raises :class:`RigidTransformError` naming ``what`` for a wrong shape, non-finite entries,
    a last row other than (0, 0, 0, 1) (a row-vector matrix such as Houdini's needs transposing),
    scale, shear or reflection.
    """
    try:
        m = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError):
        raise RigidTransformError(f"{what} must be a 4 x 4 matrix of numbers, got {matrix!r}") \
            from None
    if m.shape != (4, 4):
        raise RigidTransformError(f"{what} must be a 4 x 4 matrix, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise RigidTransformError(f"{what} contains NaN or infinity: {m.tolist()}")
    if not np.allclose(m[3], (0.0, 0.0, 0.0, 1.0), rtol=0.0, atol=1e-9):
        raise RigidTransformError(
            f"{what} must have last row (0, 0, 0, 1) with the translation in the last column "
            f"(column vectors); got last row {m[3].tolist()} (transpose a row-vector matrix such "
            "as Houdini's hou.Matrix4)"
        )
    r = m[:3, :3]
    err = float(np.abs(r.T @ r - np.eye(3)).max())
    if err > ROTATION_TOLERANCE:
        scales = np.linalg.norm(r, axis=0)
        raise RigidTransformError(
            f"{what} is not rigid: its 3 x 3 part has scale or shear (column lengths "
            f"{scales.round(6).tolist()}, |R^T R - I| = {err:.2e}); colliders move rigidly, "
            "bake scale into the level set instead"
        )
    if np.linalg.det(r) < 0.0:
        raise RigidTransformError(f"{what} mirrors space (determinant < 0); use a rotation")
    return Rigid.from_parts(r, m[:3, 3])


def quaternion_from_matrix(r: F) -> F:
    """Unit quaternion (w, x, y, z), w >= 0, of a rotation matrix (3, 3).

    Shepperd's method (1978): take the square root of the largest of 1 + trace and
    1 + 2 R_kk - trace, so that the division below is by a number >= 1/2.
    """
    t = r[0, 0] + r[1, 1] + r[2, 2]
    cand = (t, r[0, 0], r[1, 1], r[2, 2])
    k = int(np.argmax(cand))
    if k == 0:
        s = 2.0 * math.sqrt(max(1.0 + t, 0.0))
        q = (0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s)
    elif k == 1:
        s = 2.0 * math.sqrt(max(1.0 + 2.0 * r[0, 0] - t, 0.0))
        q = ((r[2, 1] - r[1, 2]) / s, 0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s)
    elif k == 2:
        s = 2.0 * math.sqrt(max(1.0 + 2.0 * r[1, 1] - t, 0.0))
        q = ((r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s)
    else:
        s = 2.0 * math.sqrt(max(1.0 + 2.0 * r[2, 2] - t, 0.0))
        q = ((r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s)
    out = np.array(q, dtype=np.float64)
    out /= norm(out)
    return -out if out[0] < 0.0 else out


def matrix_from_quaternion(q: F) -> F:
    """Rotation matrix (3, 3) of a unit quaternion (w, x, y, z)."""
    w, x, y, z = (float(c) for c in q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def slerp(q0: F, q1: F, alpha: float) -> F:
    """Spherical linear interpolation of unit quaternions along the shorter arc (Shoemake 1985).

    Exact at alpha = 0 and 1 (returns q0 or +-q1, the same rotation). Nearly equal quaternions
    (cos W > 1 - 1e-12, W below 1.5e-6 rad) fall back to normalized linear interpolation, where
    slerp's sin W denominators lose precision and the two agree to round-off.
    """
    if alpha == 0.0:
        return q0
    c = float(dot(q0, q1))
    if c < 0.0:
        q1, c = -q1, -c
    if alpha == 1.0:
        return q1
    if c > 1.0 - 1e-12:
        q = q0 + alpha * (q1 - q0)
        return q / norm(q)
    omega = math.acos(min(c, 1.0))
    s = math.sin(omega)
    q = (math.sin((1.0 - alpha) * omega) / s) * q0 + (math.sin(alpha * omega) / s) * q1
    return q / norm(q)


def interpolate(pose0: Rigid, pose1: Rigid, alpha: float, pivot: F) -> Rigid:
    """The pose at ``alpha`` in [0, 1] between two poses, moving about ``pivot`` (local, (3,)).

    The pivot's world position is interpolated linearly, the rotation by slerp; exact at the
    ends (returns the key poses themselves).
    """
    if alpha == 0.0:
        return pose0
    if alpha == 1.0:
        return pose1
    q = slerp(pose0.quaternion, pose1.quaternion, alpha)
    r = matrix_from_quaternion(q)
    c0 = rotate(pose0.rotation, pivot) + pose0.translation
    c1 = rotate(pose1.rotation, pivot) + pose1.translation
    c = c0 + alpha * (c1 - c0)
    return Rigid(r, c - rotate(r, pivot), q)
