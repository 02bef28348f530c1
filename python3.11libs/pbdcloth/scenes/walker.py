"""A deforming body mesh that walks: closed skinned shells around a pelvis and two legs.

The mesh is the lower body of :class:`pbdcloth.scenes.body.Body`'s proportions (Y up, facing
+Z, feet at y = 0), three closed triangle shells that overlap where they meet (their union is
the body; a :class:`~pbdcloth.colliders.mesh.MeshCollider` needs no single surface):

* the trunk, from below the hip joints to the chest: elliptic rings, capped at both ends,
  skinned to a pelvis bone (below the waist) and a chest bone (above it);
* each leg, a tube from a cap around the hip joint (inside the trunk) down to a cap below the
  ankle, its radius tapering from the thigh to the ankle, skinned to a thigh bone and a shin
  bone with weights blended over a band around the knee, so that the knee bends smoothly.

Linear blend skinning (Magnenat-Thalmann et al. 1988): a vertex with rest position r and bone
weights w_b moves to sum_b w_b (R_b (r - o_b) + c_b), o_b the bone's rest origin, R_b and c_b
its rotation and world origin at the pose. The walk: the body moves forward at ``speed`` with a
vertical bob; each hip swings about the x axis by A sin(phase) (the legs in opposition), each
knee flexes by K max(0, sin(phase + 1)) during the forward swing, and the pelvis turns about
the vertical by a tenth of the hip swing with the chest turning back half as much (the trunk
twists: a deforming, not a rigid, shell).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..arrays import I64, F
from ..portable import matmul, rotate

__all__ = ["WalkingBody", "ring_tube"]


def _rot_x(a: float) -> F:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _rot_y(a: float) -> F:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def ring_tube(rings: F, bottom: F, top: F) -> tuple[F, I64]:
    """A closed triangle mesh from ``rings`` (R, S, 3) of S points each, listed bottom to top
    and counter-clockwise seen from above, and the two poles ``bottom``, ``top`` (3,).
    Triangles wind outward. Returns vertices (R S + 2, 3) and triangles (2 S R, 3)."""
    r, s = rings.shape[:2]
    verts = np.concatenate([rings.reshape(-1, 3), bottom[None], top[None]])
    cur = np.arange(s)
    nxt = (cur + 1) % s
    tris = []
    for k in range(r - 1):
        lo, hi = k * s, (k + 1) * s
        tris.append(np.stack([lo + cur, lo + nxt, hi + nxt], axis=1))
        tris.append(np.stack([lo + cur, hi + nxt, hi + cur], axis=1))
    south, north = r * s, r * s + 1
    tris.append(np.stack([np.full(s, south), nxt, cur], axis=1))
    top_ring = (r - 1) * s
    tris.append(np.stack([np.full(s, north), top_ring + cur, top_ring + nxt], axis=1))
    return verts, np.concatenate(tris).astype(np.int64)


def _ellipse(centre: F, rx: float, rz: float, segments: int) -> F:
    ang = 2.0 * np.pi * np.arange(segments) / segments
    return centre + np.stack([rx * np.cos(ang), np.zeros(segments), -rz * np.sin(ang)], axis=1)


@dataclass
class WalkingBody:
    """The walking lower-body mesh (module docstring).

    Args:
        height: stature [m].
        segments: points around each ring (more: a finer mesh).
        rings: rings along each leg (the trunk gets 3/4 as many).
        speed: walking speed [m/s]; stride: half a step cycle's length [m].
        swing: hip swing amplitude [rad]; knee: knee flexion amplitude [rad].
    """

    height: float = 1.75
    segments: int = 32
    rings: int = 24
    speed: float = 0.8
    stride: float = 0.35
    swing: float = 0.4
    knee: float = 0.6

    def __post_init__(self) -> None:
        if not (math.isfinite(self.height) and 0.3 <= self.height <= 3.0):
            raise ValueError(f"body height must be within [0.3, 3] m, got {self.height!r}")
        if self.segments < 6 or self.rings < 6:
            raise ValueError("a walking body needs at least 6 segments and 6 rings")
        h = self.height
        self.hip_y, self.knee_y, self.ankle_y = 0.53 * h, 0.285 * h, 0.045 * h
        self.waist_y, self.chest_y = 0.61 * h, 0.73 * h
        self.hip_x = 0.055 * h
        parts, weights = [self._trunk()], [self._trunk_weights]
        for side in (1.0, -1.0):
            parts.append(self._leg(side))
            weights.append(self._leg_weights)
        verts, tris, w, offset = [], [], [], 0
        for (v, t), wt in zip(parts, weights):
            verts.append(v)
            tris.append(t + offset)
            w.append(wt)
            offset += v.shape[0]
        self.rest: F = np.concatenate(verts)
        """Rest vertices (V, 3) [m]."""
        self.triangles: I64 = np.concatenate(tris)
        """Triangles (T, 3), outward."""
        self.weights: F = np.concatenate(w)
        """Bone weights (V, 6): pelvis, chest, thigh l, shin l, thigh r, shin r."""
        self.origins = np.array([
            [0.0, self.hip_y, 0.0], [0.0, self.waist_y, 0.0],
            [self.hip_x, self.hip_y, 0.0], [self.hip_x, self.knee_y, 0.0],
            [-self.hip_x, self.hip_y, 0.0], [-self.hip_x, self.knee_y, 0.0]])

    # --- rest shells ---------------------------------------------------------------------------
    def _trunk(self) -> tuple[F, I64]:
        h, s = self.height, self.segments
        bottom, top = self.hip_y - 0.07 * h, self.chest_y + 0.02 * h
        n = max(6, (3 * self.rings) // 4)
        ys = np.linspace(bottom + 0.02 * h, top - 0.02 * h, n)
        # Half-widths along x and z through the crotch, hips, waist and chest.
        key_y = np.array([bottom, self.hip_y, self.waist_y, self.chest_y, top])
        rx = np.interp(ys, key_y, [0.09 * h, 0.115 * h, 0.10 * h, 0.12 * h, 0.09 * h])
        rz = np.interp(ys, key_y, [0.06 * h, 0.08 * h, 0.07 * h, 0.075 * h, 0.06 * h])
        rings = np.stack([_ellipse(np.array([0.0, y, 0.0]), a, b, s)
                          for y, a, b in zip(ys, rx, rz)])
        u = np.clip((ys - (self.waist_y - 0.04 * h)) / (0.08 * h), 0.0, 1.0)
        chest = u * u * (3.0 - 2.0 * u)
        w = np.zeros((n * s + 2, 6))
        w[:n * s, 0] = np.repeat(1.0 - chest, s)
        w[:n * s, 1] = np.repeat(chest, s)
        w[n * s, 0] = 1.0
        w[n * s + 1, 1] = 1.0
        self._trunk_weights = w
        return ring_tube(rings, np.array([0.0, bottom, 0.0]), np.array([0.0, top, 0.0]))

    def _leg(self, side: float) -> tuple[F, I64]:
        h, s, n = self.height, self.segments, self.rings
        x = side * self.hip_x
        r_hip = 0.05 * h
        top, bottom = self.hip_y + 0.6 * r_hip, self.ankle_y - 0.02 * h
        ys = np.linspace(bottom + 0.015 * h, top - 0.25 * r_hip, n)[::-1]
        key_y = np.array([self.hip_y + r_hip, self.hip_y, self.knee_y, self.ankle_y, bottom])
        r = np.interp(ys[::-1], key_y[::-1], [0.02 * h, 0.028 * h, 0.036 * h, 0.047 * h,
                                              0.03 * h])[::-1]
        rings = np.stack([_ellipse(np.array([x, y, 0.0]), a, a, s)
                          for y, a in zip(ys[::-1], r[::-1])])
        band = 0.04 * h
        u = np.clip((ys[::-1] - (self.knee_y - band)) / (2.0 * band), 0.0, 1.0)
        thigh = u * u * (3.0 - 2.0 * u)
        col = 2 if side > 0 else 4
        w = np.zeros((n * s + 2, 6))
        w[:n * s, col] = np.repeat(thigh, s)
        w[:n * s, col + 1] = np.repeat(1.0 - thigh, s)
        w[n * s, col + 1] = 1.0
        w[n * s + 1, col] = 1.0
        self._leg_weights = w
        return ring_tube(rings, np.array([x, bottom, 0.0]), np.array([x, top, 0.0]))

    # --- the walk ------------------------------------------------------------------------------
    def bones(self, time: float) -> tuple[F, F]:
        """Rotations (6, 3, 3) and world origins (6, 3) [m] of the bones at ``time`` [s]."""
        h = self.height
        phase = 2.0 * math.pi * self.speed / (2.0 * self.stride) * time
        root = np.array([0.0, 0.01 * h * math.cos(2.0 * phase), self.speed * time])
        yaw = 0.1 * self.swing * math.sin(phase)
        pelvis = _rot_y(yaw)
        rots = [pelvis, _rot_y(-0.5 * yaw)]
        origins = [self.origins[0] + root,
                   rotate(pelvis, self.origins[1] - self.origins[0]) + self.origins[0] + root]
        for k, sgn in ((2, 1.0), (4, -1.0)):
            a = sgn * self.swing * math.sin(phase)
            flex = self.knee * max(0.0, math.sin(phase * sgn + 1.0))
            thigh = matmul(pelvis, _rot_x(-a))
            shin = matmul(thigh, _rot_x(flex))
            hip = rotate(pelvis, self.origins[k] - self.origins[0]) + self.origins[0] + root
            knee = hip + rotate(thigh, self.origins[k + 1] - self.origins[k])
            rots += [thigh, shin]
            origins += [hip, knee]
        return np.stack(rots), np.stack(origins)

    def vertices(self, time: float) -> F:
        """The skinned vertices (V, 3) [m] at ``time`` [s]."""
        rots, origins = self.bones(time)
        out = np.zeros_like(self.rest)
        for b in range(6):
            w = self.weights[:, b]
            on = np.flatnonzero(w > 0.0)
            moved = rotate(rots[b], self.rest[on] - self.origins[b]) + origins[b]
            out[on] += w[on, None] * moved
        return out

    def pelvis(self, time: float) -> tuple[F, F]:
        """The pelvis bone's rotation (3, 3) and the world position (3,) of its rest origin."""
        rots, origins = self.bones(time)
        return rots[0], origins[0]
