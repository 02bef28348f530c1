"""Continuous collision against moving spheres and capsules: no collider passes through a particle.

The discrete contact test (:mod:`.response`) looks at where a particle is at the end of a
substep. A collider that moves farther than its own size in one substep can then jump over a
particle (it starts in front of the collider and ends behind it: no contact at all), or swallow
it past its middle so that the push-out sends it out of the far side.

The continuous test follows the particle's path relative to the collider. Over a substep the
shape moves by its surface displacement ``D`` near the particle (``Collider.displacement`` at the
particle's start; for a translating shape the exact motion), so in the frame of the shape's
start pose the particle moves along the segment ``y(t) = x0 + t (p - D - x0)``, t in [0, 1].
The distance from ``y(t)`` to the capsule's axis segment (a point for a sphere) is convex in t,
so the closest approach t* follows from the closest points of two segments (Ericson 2005,
"Real-Time Collision Detection", 5.1.9) and the first time the path comes within
``R = radius + thickness / 2`` by bisection on [0, t*] (:data:`BISECTIONS` halvings).

Where the particle started outside half the contact band (distance >= R), its path
came within R, and the end of the substep would either find no contact (the collider passed it)
or push it out of the wrong side (its outward direction at the end opposes the one at entry),
the particle is moved to the entry point carried along with the shape, ``y(t_entry) + D``: half
a thickness inside the contact band, so the ordinary projection then pushes it onto the surface
on the side it came from, with friction and a contact record. Every other particle keeps the
discrete result, bit for bit.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .base import F

#: Bisection steps for the entry time: the entry is found to 2^-BISECTIONS of the path.
BISECTIONS = 32


def _clamp01(x: F) -> F:
    return np.clip(x, 0.0, 1.0)


def segment_axis_distance(y: F, a: F, b: F) -> tuple[F, F]:
    """Distance (M,) from points ``y`` (M, 3) to the segment a-b, and the offset (M, 3) from
    its closest point to ``y``."""
    e = b - a
    ee = float(e @ e)
    u = np.zeros(y.shape[0]) if ee == 0.0 else _clamp01((y - a) @ e / ee)
    off = y - (a + u[:, None] * e)
    return np.sqrt(np.einsum("ij,ij->i", off, off)), off


def closest_time(y0: F, d: F, a: F, b: F) -> F:
    """The t in [0, 1] where the path y0 + t d (M, 3) comes closest to the segment a-b
    (Ericson 2005, 5.1.9, closest points of two segments)."""
    e = b - a
    r = y0 - a
    A = np.einsum("ij,ij->i", d, d)
    E = float(e @ e)
    F_ = r @ e
    C = np.einsum("ij,ij->i", d, r)
    moving = A > 0.0
    safe_a = np.where(moving, A, 1.0)
    if E == 0.0:
        return np.where(moving, _clamp01(-C / safe_a), 0.0)
    B = d @ e
    denom = A * E - B * B
    t = np.where(denom > 0.0, _clamp01((B * F_ - C * E) / np.where(denom > 0.0, denom, 1.0)),
                 0.0)
    s = (B * t + F_) / E
    t = np.where(s < 0.0, _clamp01(-C / safe_a), np.where(s > 1.0, _clamp01((B - C) / safe_a),
                                                         t))
    return np.where(moving, t, 0.0)


def swept_entry(x0: F, p: F, shift: F, a: F, b: F, radius: float, thickness: float
                ) -> tuple[NDArray[np.intp], F]:
    """The particles whose substep path x0 -> p (M, 3) the shape (segment a-b at its start
    pose, moving by ``shift`` (M, 3) over the substep) passes over or through, and where they
    go: indices (K,) and entry points carried to the shape's end pose (K, 3). See the module
    docstring for when a particle is moved."""
    outer = radius + thickness
    band = radius + 0.5 * thickness
    y1 = p - shift
    dist0, _ = segment_axis_distance(x0, a, b)
    cand = np.flatnonzero(dist0 >= band)
    if cand.size == 0:
        return cand, np.zeros((0, 3))
    y0, y1, sh = x0[cand], y1[cand], shift[cand]
    d = y1 - y0
    t_star = closest_time(y0, d, a, b)
    closest, _ = segment_axis_distance(y0 + t_star[:, None] * d, a, b)
    hit = np.flatnonzero(closest < band)
    if hit.size == 0:
        return hit, np.zeros((0, 3))
    y0, y1, d, sh, t_hi = y0[hit], y1[hit], d[hit], sh[hit], t_star[hit]
    t_lo = np.zeros(hit.size)
    for _ in range(BISECTIONS):
        mid = 0.5 * (t_lo + t_hi)
        inside = segment_axis_distance(y0 + mid[:, None] * d, a, b)[0] < band
        t_hi = np.where(inside, mid, t_hi)
        t_lo = np.where(inside, t_lo, mid)
    entry = y0 + t_hi[:, None] * d
    _, n_entry = segment_axis_distance(entry, a, b)
    dist1, n_end = segment_axis_distance(y1, a, b)
    flipped = np.einsum("ij,ij->i", n_entry, n_end) <= 0.0
    move = np.flatnonzero((dist1 >= outer) | flipped)
    return cand[hit[move]], entry[move] + sh[move]


__all__ = ["BISECTIONS", "closest_time", "segment_axis_distance", "swept_entry"]
