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
came within R, and the end of the substep would either find no contact although the path went
through the shape (distance < radius: the collider passed it) or push it out of the wrong side
(its outward direction at the end opposes the one at entry),
the particle is moved to the entry point carried along with the shape, ``y(t_entry) + D``: half
a thickness inside the contact band, so the ordinary projection then pushes it onto the surface
on the side it came from, with friction and a contact record. Every other particle keeps the
discrete result, bit for bit.

Rigidly moving level sets (:func:`field_entry`) follow the same rule with the field's own
distance: conservative advancement finds the entry, sampling the rest of the path tells whether
it went through the body.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ..portable import dot
from .base import F

#: Bisection steps for the entry time: the entry is found to 2^-BISECTIONS of the path.
BISECTIONS = 32
#: Most steps of the level-set march (advancement, then sampling) per particle and substep.
MARCH_STEPS = 256
#: A level set's normals at entry and end count as opposed below this cosine (120 degrees):
#: adjacent faces of a box (90 degrees) are not opposed, the two sides of a plate are.
OPPOSED = -0.5


def _clamp01(x: F) -> F:
    return np.clip(x, 0.0, 1.0)


def _pick(value: float | F, idx: NDArray[np.intp]) -> float | F:
    """A per-point value's entries at ``idx``; a number stays a number."""
    return value if np.ndim(value) == 0 else value[idx]  # type: ignore[index]


def segment_axis_distance(y: F, a: F, b: F) -> tuple[F, F]:
    """Distance (M,) from points ``y`` (M, 3) to the segment a-b, and the offset (M, 3) from
    its closest point to ``y``."""
    e = b - a
    ee = float(dot(e, e))
    u = np.zeros(y.shape[0]) if ee == 0.0 else _clamp01(dot(y - a, e) / ee)
    off = y - (a + u[:, None] * e)
    return np.sqrt(np.einsum("ij,ij->i", off, off)), off


def closest_time(y0: F, d: F, a: F, b: F) -> F:
    """The t in [0, 1] where the path y0 + t d (M, 3) comes closest to the segment a-b
    (Ericson 2005, 5.1.9, closest points of two segments)."""
    e = b - a
    r = y0 - a
    A = np.einsum("ij,ij->i", d, d)
    E = float(dot(e, e))
    F_ = dot(r, e)
    C = np.einsum("ij,ij->i", d, r)
    moving = A > 0.0
    safe_a = np.where(moving, A, 1.0)
    if E == 0.0:
        return np.where(moving, _clamp01(-C / safe_a), 0.0)
    B = dot(d, e)
    denom = A * E - B * B
    t = np.where(denom > 0.0, _clamp01((B * F_ - C * E) / np.where(denom > 0.0, denom, 1.0)),
                 0.0)
    s = (B * t + F_) / E
    t = np.where(s < 0.0, _clamp01(-C / safe_a), np.where(s > 1.0, _clamp01((B - C) / safe_a),
                                                         t))
    return np.where(moving, t, 0.0)


def swept_entry(x0: F, p: F, shift: F, a: F, b: F, radius: float, thickness: float | F
                ) -> tuple[NDArray[np.intp], F]:
    """The particles whose substep path x0 -> p (M, 3) the shape (segment a-b at its start
    pose, moving by ``shift`` (M, 3) over the substep) passes over or through, and where they
    go: indices (K,) and entry points carried to the shape's end pose (K, 3). See the module
    docstring for when a particle is moved. ``thickness``: one number [m], or each point's
    (M,)."""
    outer = radius + thickness
    band = radius + 0.5 * thickness
    y1 = p - shift
    dist0, _ = segment_axis_distance(x0, a, b)
    cand = np.flatnonzero(dist0 >= band)
    if cand.size == 0:
        return cand, np.zeros((0, 3))
    y0, y1, sh = x0[cand], y1[cand], shift[cand]
    band, outer = _pick(band, cand), _pick(outer, cand)
    d = y1 - y0
    t_star = closest_time(y0, d, a, b)
    closest, _ = segment_axis_distance(y0 + t_star[:, None] * d, a, b)
    hit = np.flatnonzero(closest < band)
    if hit.size == 0:
        return hit, np.zeros((0, 3))
    y0, y1, d, sh, t_hi = y0[hit], y1[hit], d[hit], sh[hit], t_star[hit]
    band, outer = _pick(band, hit), _pick(outer, hit)
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
    through = closest[hit] < radius
    move = np.flatnonzero((through & (dist1 >= outer)) | flipped)
    return cand[hit[move]], entry[move] + sh[move]


def field_entry(distance: Callable[[F], F], normal: Callable[[F], F], x0: F, y1: F,
                thickness: float | F, voxel: float) -> tuple[NDArray[np.intp], F]:
    """Continuous test against a signed distance field, by conservative advancement.

    ``distance`` and ``normal`` evaluate the field (at the substep's start pose) at points
    (M, 3); ``x0`` -> ``y1`` are the particles' paths relative to the field. Starting outside
    R = thickness / 2, t advances by 0.9 (phi(y(t)) - R) / |y1 - x0| (phi is a distance: the
    path cannot reach the surface sooner) until phi comes within tol = min(voxel / 100,
    thickness / 10) of R (the entry) or t passes 1, at most :data:`MARCH_STEPS` steps. From the
    entry the rest of the path is sampled every half voxel (at most :data:`MARCH_STEPS`
    samples): it went through the body when some sample has phi < 0. A particle moves to its
    entry when its normals at entry and end oppose (cosine below :data:`OPPOSED`), or when its
    path went through the body and
    the end is beyond the discrete test's reach (phi >= thickness or no normal: outside the
    band on the far side or deeper than the band). Returns the indices (K,) and entries (K, 3).
    ``thickness``: one number [m], or each point's (M,).
    """
    empty = (np.zeros(0, dtype=np.intp), np.zeros((0, 3)))
    d = y1 - x0
    length = np.sqrt(np.einsum("ij,ij->i", d, d))
    R = 0.5 * thickness
    tol: float | F
    if np.ndim(thickness) == 0:
        tol = max(min(0.01 * voxel, 0.1 * thickness), 1e-9)
    else:
        tol = np.maximum(np.minimum(0.01 * voxel, 0.1 * thickness), 1e-9)
    cand = np.flatnonzero(length > tol)
    if cand.size == 0:
        return empty
    R, tol, thickness = _pick(R, cand), _pick(tol, cand), _pick(thickness, cand)
    ahead = np.flatnonzero(distance(x0[cand]) >= R)
    cand = cand[ahead]
    R, tol, thickness = _pick(R, ahead), _pick(tol, ahead), _pick(thickness, ahead)
    y0, dd, L = x0[cand], d[cand], length[cand]
    t = np.zeros(cand.size)
    hit = np.zeros(cand.size, dtype=bool)
    live = np.arange(cand.size)
    for _ in range(MARCH_STEPS):
        if live.size == 0:
            break
        gap = distance(y0[live] + t[live, None] * dd[live]) - _pick(R, live)
        close = gap <= _pick(tol, live)
        hit[live[close]] = True
        t[live] += np.where(close, 0.0, 0.9 * gap / L[live])
        live = live[~close & (t[live] <= 1.0)]
    idx = np.flatnonzero(hit)
    if idx.size == 0:
        return empty
    y0, dd, L, t = y0[idx], dd[idx], L[idx], t[idx]
    thickness = _pick(thickness, idx)
    entry = y0 + t[:, None] * dd
    end = y1[cand[idx]]
    samples = np.minimum(np.ceil((1.0 - t) * L / (0.5 * voxel)), MARCH_STEPS)
    through = np.zeros(idx.size, dtype=bool)
    for k in range(1, int(samples.max(initial=0)) + 1):
        live = np.flatnonzero(~through & (k <= samples))
        if live.size == 0:
            break
        s = t[live] + (1.0 - t[live]) * (k / samples[live])
        through[live] = distance(y0[live] + s[:, None] * dd[live]) < 0.0
    n_end, n_entry = normal(end), normal(entry)
    has_normal = np.einsum("ij,ij->i", n_end, n_end) > 0.0
    flipped = has_normal & (np.einsum("ij,ij->i", n_entry, n_end) < OPPOSED)
    beyond = (distance(end) >= thickness) | ~has_normal
    move = np.flatnonzero(flipped | (through & beyond))
    return cand[idx[move]], entry[move]


__all__ = ["BISECTIONS", "MARCH_STEPS", "OPPOSED", "closest_time", "field_entry",
           "segment_axis_distance", "swept_entry"]
