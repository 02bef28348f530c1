"""Spring chains: the spring bone of VRM 1.0 (VRMC_springBone), with repeatable collision passes.

A chain of K joints hangs from a parent node. Node ``i`` is the head of joint ``i`` and node
``i + 1`` its tail. Every step, for each joint from the root out (the order VRM prescribes, so
that each joint sees its parent's new rotation), with ``h`` the joint's head, ``t`` its tail now
and ``t'`` its tail one step ago, ``a`` its rest direction, ``L`` its length and ``R_p`` the
current world rotation of its parent (the previous joint, or the parent matrix for joint 0):

1. inertia, stiffness and gravity (Verlet)::

       n = t + (1 - drag) (t - t') + dt stiffness R_p a + dt gravity gravity_direction

2. length:  ``n = h + L (n - h) / |n - h|``
3. collisions, ``collision_passes`` times: for each collider ``c`` in order, with
   ``e = phi_c(n) - radius`` (signed distance to the collider's surface less the hit radius)
   and ``m`` the collider's outward normal at ``n``: if ``e < 0`` then ``n = n - e m`` and the
   length is restored as in 2. One pass is exactly VRM; more passes settle deeper contacts.
4. rotation: ``R = R_p FromTo(a, R_p^T (n - h) / |n - h|)`` (the shortest arc), ``t' = t``,
   ``t = n``, and the next head is ``h + R (p_{i+1} - p_i)``.

References:
    VRM Consortium, "VRMC_springBone 1.0", section "SpringBone Algorithm" (vrm-c/vrm-specification).
    pixiv, three-vrm, ``VRMSpringBoneJoint.update`` and ``VRMSpringBoneColliderShapeSphere`` /
    ``...Capsule.calculateCollision`` (pixiv/three-vrm), the VRM reference runtime for the web.

Rest orientation: the nodes of a chain carry no rotation at rest (their frames are the parent's),
so the bone axis ``a`` is the world rest direction ``(p_{i+1} - p_i) / L``. VRM's update depends on
rotations only relative to the rest pose, so a rig whose nodes are rotated at rest moves the same.

Limitations:
    VRM's ``center`` space is not supported (inertia is always evaluated in world space). The
    parent matrix must be rigid (rotation and translation, no scale). The joint loop runs in
    Python: each joint needs its parent's rotation of the same step, so the joints of one chain
    cannot be solved at once.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .colliders.base import Collider
from .colliders.shapes import Capsule, Sphere
from .settings import SPRING_SETTINGS, SpringSettings

__all__ = ["SPRING_SETTINGS", "SpringChain", "SpringChainError", "SpringSettings",
           "quaternion_matrix"]

F = NDArray[np.float64]

#: Tolerance on the parent matrix being rigid: |R^T R - I| and |bottom row - (0, 0, 0, 1)|.
_RIGID_TOL = 1e-6
#: ``settle_contacts``: stop when the tail is no deeper than this inside a collider [m] ...
_SETTLE_TOL = 1e-12
#: ... or after this many Newton steps (quadratic convergence needs about four from 1 cm).
_SETTLE_MAX_STEPS = 32
#: Largest turn of one Newton step about the head [rad], so a far guess cannot overshoot wildly.
_SETTLE_MAX_TURN = 0.5


class SpringChainError(ValueError):
    """A spring chain's input (points, settings, colliders, time step, parent) is unusable."""


class SpringChain:
    """A chain of VRM spring bones hanging from a parent node.

    Args:
        points: (K+1, 3) world positions of the chain's nodes at rest [m], given while the
            parent transform is the identity (i.e. in the parent's frame). Node 0 is fixed to the
            parent; node ``i + 1`` is the tail of joint ``i``. At least two nodes, no two
            consecutive ones equal.
        settings: one :class:`~pbdcloth.settings.SpringSettings` for every joint, a sequence of
            K (one per joint, root first), or ``None`` for the defaults.
        colliders: :class:`~pbdcloth.colliders.Collider` objects (``Sphere``, ``Capsule`` ...)
            shared with cloth if wished. They are queried at the pose set by their ``move_to``
            (``alpha = 1``); the chain never calls ``end_frame`` (the cloth solver or the caller
            does). Kept as the list :attr:`colliders`.
        collision_passes: how many times the colliders push each tail out (>= 1). 1 is exactly
            VRM; the seed's rigs use 4.
        settle_contacts: after the passes, turn any tail still inside a collider about its head
            (Newton's method on the bone's sphere) until it touches the collider's surface, to
            1e-12 m. Off by default (not part of VRM). With overlapping colliders the last one
            settled wins.

    Raises:
        SpringChainError: bad points, settings count or type, colliders or passes.

    The state starts at rest under the identity parent; call :meth:`reset` with the parent's
    first matrix when the chain starts elsewhere.
    """

    def __init__(
        self,
        points: ArrayLike,
        settings: SpringSettings | Sequence[SpringSettings] | None = None,
        colliders: Sequence[Collider] = (),
        collision_passes: int = 4,
        settle_contacts: bool = False,
    ) -> None:
        pts = _as_points(points)
        offsets = pts[1:] - pts[:-1]
        lengths = np.sqrt(np.einsum("ij,ij->i", offsets, offsets))
        short = np.flatnonzero(~(lengths > 0.0))
        if short.size:
            i = int(short[0])
            raise SpringChainError(
                f"bone {i} has zero length: nodes {i} and {i + 1} are both at {pts[i].tolist()}"
            )
        self._points = pts
        self._points.flags.writeable = False
        self._offsets = offsets
        """Rest bone vectors p_{i+1} - p_i (K, 3) [m]."""
        self._lengths = lengths
        """Bone lengths (K,) [m]."""
        self._axes = offsets / lengths[:, None]
        """Rest bone directions (K, 3), unit."""
        self.settings = settings  # the setter validates and expands
        self.colliders: list[Collider] = _as_colliders(colliders)
        self.collision_passes = collision_passes
        self.settle_contacts = bool(settle_contacts)
        self.reset()

    # --- settings, changeable between steps -------------------------------------------------
    @property
    def settings(self) -> tuple[SpringSettings, ...]:
        """The settings of each joint (K entries). Assign one SpringSettings, a sequence of K
        or None (defaults) to change them between steps; the chain keeps its motion."""
        return self._settings

    @settings.setter
    def settings(self, value: SpringSettings | Sequence[SpringSettings] | None) -> None:
        s = _per_joint(value, self.joint_count)
        self._settings = s
        self._stiffness = np.array([x.stiffness for x in s])
        """stiffness per joint (K,) [m/s]."""
        self._gravity = np.array([x.gravity for x in s])[:, None] * np.array(
            [x.gravity_direction for x in s])
        """gravity * gravity_direction per joint (K, 3) [m/s]."""
        self._keep = 1.0 - np.array([x.drag for x in s])
        """1 - drag per joint (K,)."""
        self._radius = np.array([x.radius for x in s])
        """hit radius per joint (K,) [m]."""

    @property
    def collision_passes(self) -> int:
        """How many times the colliders push each tail out per step (>= 1; 1 = VRM)."""
        return self._passes

    @collision_passes.setter
    def collision_passes(self, value: int) -> None:
        self._passes = _as_passes(value)

    # --- read-only views -------------------------------------------------------------------
    @property
    def joint_count(self) -> int:
        """Number of joints K (one fewer than nodes)."""
        return len(self._lengths)

    @property
    def rest_points(self) -> F:
        """The rest positions given at construction (K+1, 3) [m], read-only."""
        return self._points

    @property
    def bone_lengths(self) -> F:
        """Length of each bone (K,) [m] (a copy)."""
        return self._lengths.copy()

    @property
    def positions(self) -> F:
        """World positions of the nodes after the last step (K+1, 3) [m] (a new array)."""
        return self._nodes.copy()

    @property
    def rotations(self) -> F:
        """World rotation of each joint after the last step, as (K, 3, 3) matrices.

        Column-vector convention (``world = R @ local``). Relative to the rest pose, in which
        every node's frame is the parent's: joint ``i`` maps its rest bone direction onto its
        current one, ``R[i] @ a_i = (positions[i+1] - positions[i]) / L_i``. A new array.
        """
        return self._rot.copy()

    @property
    def tails(self) -> F:
        """The tails' current Verlet positions (K, 3) [m] (equal to ``positions[1:]`` up to
        rounding; a new array)."""
        return self._tail.copy()

    # --- state -----------------------------------------------------------------------------
    def reset(self, parent: ArrayLike | None = None) -> None:
        """Put the chain at rest under ``parent`` (4x4 world matrix, identity if None), still."""
        rot, trans = _as_rigid(parent)
        self._nodes = np.empty_like(self._points)
        self._nodes[0] = rot @ self._points[0] + trans
        self._nodes[1:] = self._nodes[0] + np.cumsum(self._offsets @ rot.T, axis=0)
        self._tail = self._nodes[1:].copy()
        self._prev = self._tail.copy()
        self._rot = np.broadcast_to(rot, (self.joint_count, 3, 3)).copy()

    def step(self, dt: float, parent: ArrayLike | None = None) -> None:
        """Advance the chain by ``dt`` seconds with its parent node at world matrix ``parent``.

        ``parent`` is a 4x4 numpy array (column vectors, translation in the last column) for this
        step; ``None`` means the identity. It must be rigid. See the module docstring for the
        update of each joint.
        """
        h = _as_dt(dt)
        rot_p, trans = _as_rigid(parent)
        colliders = _as_colliders(self.colliders)  # the list may have been edited
        bounds = _DistanceBounds(colliders) if colliders else None
        head = rot_p @ self._points[0] + trans
        self._nodes[0] = head
        for i in range(self.joint_count):
            length = self._lengths[i]
            axis = self._axes[i]
            tail = self._tail[i]
            # 1. Verlet inertia less drag, spring toward the rest direction turned with the
            #    parent, gravity; each of the last two times the step's length.
            nxt = (tail + self._keep[i] * (tail - self._prev[i])
                   + (h * self._stiffness[i]) * (rot_p @ axis) + h * self._gravity[i])
            # 2. back to the bone's length from the head.
            nxt = _at_length(head, nxt, length, rot_p @ axis)
            # 3. collisions: push out, back to length; VRM does this once.
            if bounds is not None:
                nxt = self._collide(colliders, bounds, head, nxt, length, self._radius[i],
                                    rot_p @ axis)
            # 4. turn the joint so its bone points at the tail.
            direction = (nxt - head) / length
            rot = rot_p @ _from_to(axis, rot_p.T @ direction)
            self._prev[i] = tail
            self._tail[i] = nxt
            self._rot[i] = rot
            head = head + rot @ self._offsets[i]
            self._nodes[i + 1] = head
            rot_p = rot

    def _collide(self, colliders: list[Collider], bounds: _DistanceBounds, head: F, tail: F,
                 length: float, radius: float, fallback: F) -> F:
        """VRM's collision response, ``collision_passes`` times, then the optional settle.

        ``bounds`` only skips the exact ``query`` of colliders that are certainly farther than
        ``radius`` from the point (they would not push); the result is the same as querying
        every collider in order.
        """
        point = tail[None, :].copy()
        for _ in range(self._passes):
            pushed = False
            near = bounds.near(point[0], radius)
            for j, collider in enumerate(colliders):
                if not near[j]:
                    continue
                phi, normal = collider.query(point, 1.0)
                depth = float(phi[0]) - radius
                if depth < 0.0:
                    point[0] = _at_length(head, point[0] - depth * normal[0], length, fallback)
                    pushed = True
                    near = bounds.near(point[0], radius)  # the point moved
            if not pushed:  # the next passes would see the same point and push nothing either
                break
        if self.settle_contacts:
            for j, collider in enumerate(colliders):
                if bounds.near(point[0], radius)[j]:
                    point[0] = _settle(collider, head, point[0], length, radius)
        return point[0]


class _DistanceBounds:
    """Signed distances of one point to all spheres and capsules at once, to skip far colliders.

    Evaluates the same formulas as :mod:`pbdcloth.colliders.shapes` at the colliders' end poses
    (``alpha = 1``) in one array operation; rounding may differ from the colliders' own
    ``query`` by ~1e-16 m per metre of coordinates, so a collider counts as near unless it is
    farther than the hit radius by more than ``margin`` (1e-9 m). Colliders of other types are
    always near (always queried).
    """

    margin = 1e-9

    def __init__(self, colliders: Sequence[Collider]) -> None:
        count = len(colliders)
        self._sphere = np.array([j for j, c in enumerate(colliders) if type(c) is Sphere],
                                dtype=np.int64)
        self._capsule = np.array([j for j, c in enumerate(colliders) if type(c) is Capsule],
                                 dtype=np.int64)
        spheres = [colliders[j] for j in self._sphere]
        capsules = [colliders[j] for j in self._capsule]
        self._centers = np.array([s.center for s in spheres]).reshape(-1, 3)
        self._sphere_r = np.array([s.radius for s in spheres])
        self._a = np.array([c.a for c in capsules]).reshape(-1, 3)
        self._ab = np.array([c.b for c in capsules]).reshape(-1, 3) - self._a
        self._ab2 = np.einsum("ij,ij->i", self._ab, self._ab)
        self._ab2_safe = np.where(self._ab2 > 0.0, self._ab2, 1.0)
        self._capsule_r = np.array([c.radius for c in capsules])
        self._phi = np.full(count, -np.inf)

    def near(self, point: F, radius: float) -> NDArray[np.bool_]:
        """(N,) True for each collider the point may be within ``radius`` of (or inside)."""
        phi = self._phi
        if self._sphere.size:
            d = point - self._centers
            phi[self._sphere] = np.sqrt(np.einsum("ij,ij->i", d, d)) - self._sphere_r
        if self._capsule.size:
            ap = point - self._a
            u = np.clip(np.einsum("ij,ij->i", ap, self._ab) / self._ab2_safe, 0.0, 1.0)
            u = np.where(self._ab2 > 0.0, u, 0.0)
            d = ap - u[:, None] * self._ab
            phi[self._capsule] = np.sqrt(np.einsum("ij,ij->i", d, d)) - self._capsule_r
        return phi <= radius + self.margin


# --- geometry helpers ---------------------------------------------------------------------------
def _at_length(head: F, point: F, length: float, fallback: F) -> F:
    """``head + length * unit(point - head)``; along ``fallback`` if the point is the head."""
    d = point - head
    norm = math.sqrt(float(d @ d))
    if norm == 0.0:
        return head + length * fallback
    return head + (length / norm) * d


def _from_to(a: F, b: F) -> F:
    """The shortest-arc rotation matrix taking unit vector ``a`` onto unit vector ``b``.

    Built as the quaternion (w, v) = (1 + a.b, a x b), normalised; for opposite vectors
    (1 + a.b ~ 0) a half turn about an axis perpendicular to ``a`` (as three.js
    ``Quaternion.setFromUnitVectors`` does).
    """
    w = 1.0 + float(a @ b)
    if w < 1e-12:
        if abs(a[0]) > abs(a[2]):
            v = np.array([-a[1], a[0], 0.0])
        else:
            v = np.array([0.0, -a[2], a[1]])
        w = 0.0
    else:  # a x b, written out: np.cross costs ~10x more on 3-vectors
        v = np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                      a[0] * b[1] - a[1] * b[0]])
    q = np.array([w, v[0], v[1], v[2]])
    q /= math.sqrt(float(q @ q))
    return quaternion_matrix(q)


def quaternion_matrix(q: ArrayLike) -> F:
    """The 3x3 rotation matrix of the unit quaternion ``(w, x, y, z)``."""
    w, x, y, z = (float(c) for c in np.asarray(q, dtype=np.float64))
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def _settle(collider: Collider, head: F, tail: F, length: float, radius: float) -> F:
    """Turn ``tail`` about ``head`` (keeping ``length``) until ``phi - radius >= -1e-12``.

    Newton's method on the great circle through the tail along the collider normal's tangential
    part ``m_t``: the signed depth changes at rate ``|m_t|`` per metre of arc, so an arc of
    ``-depth / |m_t|`` reaches the surface to first order. Stops unchanged where the normal
    points along the bone (no turn helps) or the head itself is too deep to escape.
    """
    point = tail[None, :].copy()
    for _ in range(_SETTLE_MAX_STEPS):
        phi, normal = collider.query(point, 1.0)
        depth = float(phi[0]) - radius
        if depth >= -_SETTLE_TOL:
            break
        u = (point[0] - head) / length
        m = normal[0]
        tangent = m - float(m @ u) * u
        rate = math.sqrt(float(tangent @ tangent))
        if rate < 1e-9:
            break
        turn = min(-depth / rate / length, _SETTLE_MAX_TURN)
        point[0] = head + length * (math.cos(turn) * u + math.sin(turn) * (tangent / rate))
    return point[0]


# --- input checks -------------------------------------------------------------------------------
def _as_points(points: ArrayLike) -> F:
    try:
        pts = np.array(points, dtype=np.float64)
    except (TypeError, ValueError):
        raise SpringChainError(f"points must be a (K+1, 3) array of numbers, got {points!r}"
                               ) from None
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise SpringChainError(f"points must have shape (K+1, 3), got {pts.shape}")
    if pts.shape[0] < 2:
        raise SpringChainError(
            f"a spring chain needs at least two nodes (one joint), got {pts.shape[0]}")
    bad = np.flatnonzero(~np.all(np.isfinite(pts), axis=1))
    if bad.size:
        raise SpringChainError(f"point {int(bad[0])} is not finite: {pts[bad[0]].tolist()}")
    return pts


def _per_joint(settings: SpringSettings | Sequence[SpringSettings] | None,
               joints: int) -> tuple[SpringSettings, ...]:
    if settings is None:
        return (SpringSettings(),) * joints
    if isinstance(settings, SpringSettings):
        return (settings,) * joints
    try:
        items = list(settings)
    except TypeError:
        raise SpringChainError(
            f"settings must be a SpringSettings or a list of them, got {settings!r}") from None
    if len(items) != joints:
        raise SpringChainError(
            f"settings has {len(items)} entries but the chain has {joints} joints "
            f"({joints + 1} points): give one SpringSettings per joint, or one for all")
    for i, item in enumerate(items):
        if not isinstance(item, SpringSettings):
            raise SpringChainError(f"settings[{i}] is not a SpringSettings: {item!r}")
    return tuple(items)


def _as_colliders(colliders: Sequence[Collider]) -> list[Collider]:
    try:
        items = list(colliders)
    except TypeError:
        raise SpringChainError(f"colliders must be a list of colliders, got {colliders!r}"
                               ) from None
    for i, c in enumerate(items):
        if not isinstance(c, Collider):
            raise SpringChainError(
                f"colliders[{i}] is not a pbdcloth collider (Sphere, Capsule, ...): {c!r}")
    return items


def _as_passes(passes: int) -> int:
    if isinstance(passes, bool) or not isinstance(passes, (int, np.integer)) or passes < 1:
        raise SpringChainError(f"collision_passes must be a whole number >= 1, got {passes!r}")
    return int(passes)


def _as_dt(dt: float) -> float:
    try:
        h = float(dt)
    except (TypeError, ValueError):
        raise SpringChainError(f"time step dt must be a number, got {dt!r}") from None
    if not (math.isfinite(h) and h > 0.0):
        raise SpringChainError(f"time step dt must be finite and > 0 s, got {dt!r}")
    return h


def _as_rigid(parent: ArrayLike | None) -> tuple[F, F]:
    """(rotation (3, 3), translation (3,)) of a rigid 4x4 matrix; the identity for None."""
    if parent is None:
        return np.eye(3), np.zeros(3)
    try:
        m = np.array(parent, dtype=np.float64)
    except (TypeError, ValueError):
        raise SpringChainError(f"parent must be a 4x4 matrix of numbers, got {parent!r}"
                               ) from None
    if m.shape != (4, 4):
        raise SpringChainError(f"parent must be a 4x4 matrix, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise SpringChainError(f"parent matrix is not finite: {m.tolist()}")
    if np.abs(m[3] - (0.0, 0.0, 0.0, 1.0)).max() > _RIGID_TOL:
        raise SpringChainError(
            f"parent matrix's bottom row must be (0, 0, 0, 1) (column vectors, translation in "
            f"the last column), got {m[3].tolist()}")
    rot = m[:3, :3]
    error = float(np.abs(rot.T @ rot - np.eye(3)).max())
    if error > _RIGID_TOL or np.linalg.det(rot) < 0.0:
        raise SpringChainError(
            f"parent matrix must be rigid (a rotation and a translation, no scale or mirror); "
            f"its 3x3 part is off orthonormal by {error:.3g}")
    return rot.copy(), m[:3, 3].copy()
