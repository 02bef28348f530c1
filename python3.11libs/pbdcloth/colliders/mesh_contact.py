"""The contact math of :class:`~pbdcloth.colliders.mesh.MeshCollider`, whole-array over pairs.

Arrays are component-major (3, K). Each function finds its candidate pairs with the substep's
:class:`~pbdcloth.colliders.broadphase.BoxGrid`, runs the continuous test (:mod:`.ccd`) and the
sided discrete test on all pairs at once, and writes the corrections into ``P`` (3, N) in place.

Friction (cloth vertices against triangles) is Coulomb in position form (Macklin et al. 2014,
"Unified Particle Physics for Real-Time Applications", eq. 23-24), as for every collider
(:mod:`.response`): the slip is the vertex's tangential motion over the substep relative to the
surface point it touches, whose motion is the barycentric interpolation of its triangle's vertex
displacements; the contact sticks while |slip| < mu_s d (d the push-out depth), else the slip is
cut by min(mu_k d / |slip|, 1).

Per-point contact scales (:mod:`pbdcloth.cloth.attributes`): ``thickness`` is one number [m] or
each cloth vertex's own (N,); a cloth vertex against the collider's triangles keeps its own
thickness and friction, a collider vertex against a cloth triangle the triangle's thickness
(the caller gives one per cloth triangle, the mean of its corners', :class:`.mesh.MeshCollider`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..arrays import F, I
from ..selfcollision.geometry import closest_point_triangle, columns, cross, dot, unit
from .broadphase import BoxGrid, PairList
from .ccd import INSIDE_TOLERANCE, barycentric, first_crossing

if TYPE_CHECKING:
    from .response import ContactBuffer

__all__ = ["EDGE_SLACK", "Substep", "project_cloth_vertices", "project_collider_vertices", "recheck"]

_NONE: I = np.zeros(0, dtype=np.intp)

#: At most this many suspects per substep get the winding-number test (the rest wait).
MAX_SUSPECTS = 256
#: Points per block of the winding-number sum (memory: block x triangles floats a term).
WINDING_BLOCK = 16

#: Barycentric slack of the collider-vertex test: a vertex just beyond a cloth triangle's edge
#: still counts for it, so one under a ridge of the cloth is held by both triangles there.
EDGE_SLACK = 0.02


@dataclass
class Substep:
    """The collider over one substep: vertices at its start and end, component-major."""

    alpha0: float
    alpha1: float
    thickness: float
    v0: F
    """(3, V) [m]."""
    v1: F
    """(3, V) [m]."""
    corners0: tuple[F, F, F]
    """Triangle corners a, b, c at the start, (3, T) each."""
    corners1: tuple[F, F, F]
    """Triangle corners at the end, (3, T) each."""
    lo: F
    """(3,) corner of the box around everything the collider sweeps, grown by the thickness."""
    hi: F
    normal0: F
    """Unit triangle normals at the start, (3, T) (zero for a degenerate triangle)."""
    normal1: F
    """Unit triangle normals at the end, (3, T)."""
    reach: F
    """The farthest any corner of each triangle moves over the substep, (T,) [m]."""
    orientation: float = 0.0
    """+1 (-1) for a closed mesh wound outward (inward), 0 for an open mesh: no rescue."""
    trapped: tuple[I, I] | None = None
    """Cloth vertices found inside a closed mesh at the substep's start, ascending, and the
    nearest triangle of each (see :func:`find_trapped`); None until looked for."""


def _pick(value: float | F, idx: I) -> float | F:
    """A per-point (or per-triangle) value's entries at ``idx``; a number stays a number."""
    return value if np.ndim(value) == 0 else value.take(idx)  # type: ignore[union-attr]


def _first_per_group(group: I, key: F) -> I:
    """Indices (into the pair arrays) of the pair with the smallest ``key`` in each ``group``,
    ordered by group (ties: the earlier pair)."""
    order = np.lexsort((key, group))
    g = group.take(order)
    first = np.ones(order.size, dtype=bool)
    first[1:] = g[1:] != g[:-1]
    return order[first]


def _continuous(P: F, X: F, i: I, j: I, sub: Substep, thickness: float | F) -> I:
    """The continuous test on pairs (cloth vertex ``i``, triangle ``j``): a vertex whose path
    X -> P crossed a triangle goes to the first crossing point carried with the triangle to the
    end of the substep, a thickness out on its starting side. In place on ``P``; returns the
    vertices moved.

    Sides from the start: sign of the vertex's distance to the triangle's plane. A vertex can
    only cross a triangle whose plane it starts within max_k |dx - dc_k| <= |dx| + max_k |dc_k|
    of (the crossing point is a convex combination of the corners): the cubic runs on those."""
    x0 = columns(X, i)
    p = columns(P, i)
    plane0 = dot(x0 - columns(sub.corners0[0], j), columns(sub.normal0, j))
    dx = p - x0
    k = np.flatnonzero(np.abs(plane0) <= np.sqrt(dot(dx, dx)) + sub.reach.take(j) + 1e-12)
    if k.size == 0:
        return k
    # Then the tight bound, max_k |dx - dc_k|, on the survivors (a vertex riding along with
    # the surface moves with it and skips the cubic).
    jk = j.take(k)
    corners = [columns(c, jk) for pair in zip(sub.corners0, sub.corners1) for c in pair]
    xk, pk = columns(x0, k), columns(p, k)
    dxk = pk - xk
    rel = np.zeros(k.size)
    for c in range(3):
        r = dxk - (corners[2 * c + 1] - corners[2 * c])
        rel = np.maximum(rel, dot(r, r))
    tight = np.flatnonzero(np.abs(plane0.take(k)) <= np.sqrt(rel) + 1e-12)
    if tight.size == 0:
        return np.zeros(0, dtype=np.intp)
    if tight.size < k.size:
        k, jk = k.take(tight), jk.take(tight)
        corners = [columns(c, tight) for c in corners]
        xk, pk = columns(xk, tight), columns(pk, tight)
    hit, t, u, v, w, side = first_crossing(xk, pk, *corners)
    if not hit.any():
        return np.zeros(0, dtype=np.intp)
    m = np.flatnonzero(hit)
    m = m.take(_first_per_group(i.take(k.take(m)), t.take(m)))
    jm = j.take(k.take(m))
    at = (columns(sub.corners1[0], jm) * u[m] + columns(sub.corners1[1], jm) * v[m]
          + columns(sub.corners1[2], jm) * w[m])
    moved = i.take(k.take(m))
    P[:, moved] = at + (side.take(m) * _pick(thickness, moved)) * columns(sub.normal1, jm)
    return moved


def recheck(P: F, X: F, moved: I, free: I, sub: Substep, grid: BoxGrid, pairs: PairList,
            thickness: float | F) -> None:
    """The continuous test again for the cloth vertices ``moved`` since it last ran (by the
    discrete push or by collider vertices), so that no iteration ends with a vertex whose
    substep path crosses a triangle."""
    if moved.size == 0:
        return
    i, j = pairs.pairs(np.minimum(X, P), np.maximum(X, P), free, grid,
                       (sub.lo, sub.hi))
    i, j, own = _drop_trapped(i, j, sub)
    mask = np.zeros(P.shape[1], dtype=bool)
    mask[moved] = True
    keep = np.flatnonzero(mask.take(i) & ~own)
    if keep.size:
        _continuous(P, X, i.take(keep), j.take(keep), sub, thickness)


def winding_numbers(points: F, corners: tuple[F, F, F]) -> F:
    """Generalized winding number (Jacobson et al. 2013) of the triangles ``corners``
    ((3, T) each) at ``points`` (3, K): sum of the triangles' solid angles (Van Oosterom and
    Strackee 1983) over 4 pi; ~1 inside a closed outward mesh (more where shells overlap)."""
    out = np.zeros(points.shape[1])
    for lo in range(0, points.shape[1], WINDING_BLOCK):
        x = points[:, lo:lo + WINDING_BLOCK, None]
        a, b, c = (k[:, None, :] - x for k in corners)
        la, lb, lc = (np.sqrt((v * v).sum(axis=0)) for v in (a, b, c))
        det = (a[0] * (b[1] * c[2] - b[2] * c[1]) + a[1] * (b[2] * c[0] - b[0] * c[2])
               + a[2] * (b[0] * c[1] - b[1] * c[0]))
        den = (la * lb * lc + (a * b).sum(axis=0) * lc + (b * c).sum(axis=0) * la
               + (c * a).sum(axis=0) * lb)
        out[lo:lo + WINDING_BLOCK] = np.arctan2(det, den).sum(axis=1) / (2.0 * np.pi)
    return out


def find_trapped(X: F, i: I, j: I, sub: Substep) -> tuple[I, I]:
    """Fail-safe for closed meshes: the cloth vertices that start the substep inside the mesh
    (by whatever failure put them there) within the contact band of a triangle (the candidate
    pairs ``i``, ``j``; a vertex deeper inside has no candidates and is not found), and the
    nearest triangle of each.

    Suspects are the vertices behind (against the orientation) the plane of their nearest
    candidate triangle; at most :data:`MAX_SUSPECTS` of them (lowest indices first) get the
    exact test, their generalized winding number over every triangle at the substep's start
    (> 1/2: inside). A trapped vertex is then collided with its nearest triangle only, toward
    the outside, for the whole substep, and skips the continuous test (its path leaves the
    mesh on purpose)."""
    empty = (_NONE, _NONE)
    if sub.orientation == 0.0 or i.size == 0:
        return empty
    x0 = columns(X, i)
    a0, b0, c0 = (columns(c, j) for c in sub.corners0)
    u, v, w, _ = closest_point_triangle(x0, a0, b0, c0)
    diff = x0 - (a0 * u + b0 * v + c0 * w)
    nearest = _first_per_group(i, dot(diff, diff))
    plane = dot(columns(diff, nearest), columns(sub.normal0, j.take(nearest)))
    suspects = nearest[sub.orientation * plane < 0.0][:MAX_SUSPECTS]
    if suspects.size == 0:
        return empty
    inside = np.abs(winding_numbers(columns(x0, suspects), sub.corners0)) > 0.5
    pick = suspects[inside]
    return i.take(pick), j.take(pick)


def _drop_trapped(i: I, j: I, sub: Substep) -> tuple[I, I, NDArray[np.bool_]]:
    """The pairs without the trapped vertices' other triangles, and a mask of the trapped
    vertices' own (nearest) pairs among them."""
    if sub.trapped is None or sub.trapped[0].size == 0:
        return i, j, np.zeros(i.size, dtype=bool)
    tv, tj = sub.trapped
    slot = np.minimum(np.searchsorted(tv, i), tv.size - 1)
    is_trapped = tv.take(slot) == i
    own = is_trapped & (tj.take(slot) == j)
    keep = ~is_trapped | own
    return i[keep], j[keep], own[keep]


def project_cloth_vertices(P: F, X: F, free: I, sub: Substep, grid: BoxGrid, pairs: PairList,
                           h: float, thickness: float | F, mu_static: float,
                           mu_kinetic: float, contacts: ContactBuffer,
                           friction_scale: F | None = None) -> I:
    """Cloth vertices against the collider's triangles (continuous, then sided discrete, with
    friction), in place on ``P``; returns the vertices in contact (moved by the discrete
    push). ``thickness``: one number [m] or each cloth vertex's (N,); ``friction_scale``:
    each cloth vertex's scale on both coefficients (N,), or None."""
    i, j = pairs.pairs(np.minimum(X, P), np.maximum(X, P), free, grid,
                       (sub.lo, sub.hi))
    if i.size == 0:
        return _NONE
    if sub.trapped is None:
        sub.trapped = find_trapped(X, i, j, sub)
    i, j, own = _drop_trapped(i, j, sub)
    free_pairs = np.flatnonzero(~own)
    _continuous(P, X, i.take(free_pairs), j.take(free_pairs), sub, thickness)
    p = columns(P, i)
    side = np.sign(dot(columns(X, i) - columns(sub.corners0[0], j), columns(sub.normal0, j)))
    side = np.where(own, sub.orientation, side)  # a trapped vertex goes out
    # Discrete, on the pairs not already a thickness out on their side of the plane.
    n1 = columns(sub.normal1, j)
    a1 = columns(sub.corners1[0], j)
    plane1 = dot(p - a1, n1)
    zero = np.flatnonzero(side == 0.0)
    if zero.size:  # exactly in the plane at the start: the side it moves away from
        jz = j.take(zero)
        moved = sum(columns(c1, jz) - columns(c0, jz) for c0, c1 in zip(sub.corners0,
                                                                        sub.corners1)) / 3.0
        rel = (columns(p, zero) - columns(X, i.take(zero))) - moved
        away = -np.sign(dot(rel, columns(sub.normal0, jz)))
        side[zero] = np.where(away != 0.0, away, sub.orientation or 1.0)
    near = np.flatnonzero(side * plane1 < _pick(thickness, i))
    if near.size == 0:
        return _NONE
    i, j, p, n1, a1, side, own = (i.take(near), j.take(near), columns(p, near),
                                  columns(n1, near), columns(a1, near), side.take(near),
                                  own.take(near))
    pair_thickness = _pick(thickness, i)
    b1, c1 = columns(sub.corners1[1], j), columns(sub.corners1[2], j)
    u, v, w, face = closest_point_triangle(p, a1, b1, c1)
    q = a1 * u + b1 * v + c1 * w
    diff = p - q
    dist = np.sqrt(dot(diff, diff))
    plane = side * dot(diff, n1)
    # Along the normal: on the face, for a trapped vertex, and on the face's border (a shared
    # edge: closest point on the edge, projection on it) when the vertex has crossed to the
    # other side of the plane (away from the closest point would push it on through).
    behind = np.flatnonzero(~face & (plane < 0.0))
    if behind.size:
        bu, bv, bw = barycentric(columns(p, behind), columns(a1, behind), columns(b1, behind),
                                 columns(c1, behind))
        face[behind[(bu >= -INSIDE_TOLERANCE) & (bv >= -INSIDE_TOLERANCE)
                    & (bw >= -INSIDE_TOLERANCE)]] = True
    face |= own
    gap = np.where(face, plane, dist)
    normal = np.where(face | (dist == 0.0), side * n1, diff / np.where(dist > 0.0, dist, 1.0))
    bad = np.flatnonzero(gap < pair_thickness)
    if bad.size == 0:
        return _NONE
    bad = bad.take(_first_per_group(i.take(bad), gap.take(bad)))
    idx = i.take(bad)
    n = columns(normal, bad)
    depth = _pick(pair_thickness, bad) - gap.take(bad)
    target = columns(p, bad) + depth * n
    ub, vb, wb = u.take(bad), v.take(bad), w.take(bad)
    disp0 = (columns(sub.corners1[0], j.take(bad)) - columns(sub.corners0[0], j.take(bad)))
    disp1 = (columns(sub.corners1[1], j.take(bad)) - columns(sub.corners0[1], j.take(bad)))
    disp2 = (columns(sub.corners1[2], j.take(bad)) - columns(sub.corners0[2], j.take(bad)))
    surface = ub * disp0 + vb * disp1 + wb * disp2
    if mu_static > 0.0 or mu_kinetic > 0.0:
        mu_s: float | F = mu_static
        mu_k: float | F = mu_kinetic
        if friction_scale is not None:
            scale_i = friction_scale.take(idx)
            mu_s, mu_k = mu_static * scale_i, mu_kinetic * scale_i
        slip = (target - columns(X, idx)) - surface
        slip -= dot(slip, n) * n
        slip_len = np.sqrt(dot(slip, slip))
        stick = slip_len < mu_s * depth
        with np.errstate(divide="ignore", invalid="ignore"):
            slide = np.minimum(mu_k * depth / slip_len, 1.0)
        scale = np.where(stick, 1.0, np.where(slip_len > 0.0, slide, 0.0))
        target -= scale * slip
    P[:, idx] = target
    contacts.active[idx] = True
    contacts.normal[idx] = n.T
    contacts.surface_velocity[idx] = surface.T / h
    return idx


def project_collider_vertices(P: F, X: F, inv_mass: F, triangles: I, sub: Substep,
                              grid: BoxGrid, pairs: PairList, thickness: float | F) -> I:
    """Collider vertices against the cloth's triangles ``triangles`` (3, Tc): a violated pair
    moves the triangle's corners away from the vertex (module docstring of :mod:`.mesh`), in
    place on ``P``; returns the cloth vertices moved. ``thickness``: one number [m] or each
    cloth triangle's (Tc,)."""
    if triangles.shape[1] == 0:
        return _NONE
    ta, tb, tc = triangles
    x0 = (columns(X, ta), columns(X, tb), columns(X, tc))
    x1 = (columns(P, ta), columns(P, tb), columns(P, tc))
    lo = np.minimum(np.minimum(np.minimum(x0[0], x0[1]), np.minimum(x0[2], x1[0])),
                    np.minimum(x1[1], x1[2]))
    hi = np.maximum(np.maximum(np.maximum(x0[0], x0[1]), np.maximum(x0[2], x1[0])),
                    np.maximum(x1[1], x1[2]))
    f, k = pairs.pairs(lo, hi, np.arange(lo.shape[1], dtype=np.intp), grid, (sub.lo, sub.hi))
    if f.size == 0:
        return _NONE
    # Cloth normals and how far each triangle's corners move this substep (so far).
    n0_all = unit(cross(x0[1] - x0[0], x0[2] - x0[0]))
    n1_all = unit(cross(x1[1] - x1[0], x1[2] - x1[0]))
    d = P - X
    step = np.sqrt(dot(d, d))
    reach = np.maximum(np.maximum(step.take(ta), step.take(tb)), step.take(tc))
    q0, q1 = columns(sub.v0, k), columns(sub.v1, k)
    plane0 = dot(q0 - columns(x0[0], f), columns(n0_all, f))
    side = np.sign(plane0)
    dq = q1 - q0
    # As for cloth vertices: only a vertex within |dq| + max_k |dx_k| of the plane can cross.
    hit = np.zeros(f.size, dtype=bool)
    cand = np.flatnonzero(np.abs(plane0) <= np.sqrt(dot(dq, dq)) + reach.take(f) + 1e-12)
    if cand.size:
        fc = f.take(cand)
        corners = [columns(c, fc) for pair in zip(x0, x1) for c in pair]
        qa, qb = columns(q0, cand), columns(q1, cand)
        rel = np.zeros(cand.size)
        for c in range(3):
            r = (qb - qa) - (corners[2 * c + 1] - corners[2 * c])
            rel = np.maximum(rel, dot(r, r))
        tight = np.flatnonzero(np.abs(plane0.take(cand)) <= np.sqrt(rel) + 1e-12)
        if tight.size:
            hit[cand.take(tight)] = first_crossing(
                columns(qa, tight), columns(qb, tight),
                *(columns(c, tight) for c in corners))[0]
    n1 = columns(n1_all, f)
    A1 = columns(x1[0], f)
    plane1 = dot(q1 - A1, n1)
    zero = np.flatnonzero(side == 0.0)
    if zero.size:  # exactly in the cloth's plane at the start: the side it moves away from
        fz = f.take(zero)
        moved = sum(columns(c1, fz) - columns(c0, fz) for c0, c1 in zip(x0, x1)) / 3.0
        away = -np.sign(dot(columns(dq, zero) - moved, columns(n0_all, fz)))
        side[zero] = np.where(away != 0.0, away, 1.0)
    near = np.flatnonzero(hit | (np.abs(plane1) < _pick(thickness, f)))
    if near.size == 0:
        return _NONE
    f, q1, n1, A1, side, hit, plane1 = (f.take(near), columns(q1, near), columns(n1, near),
                                        columns(A1, near), side.take(near), hit.take(near),
                                        plane1.take(near))
    pair_thickness = _pick(thickness, f)
    B1, C1 = columns(x1[1], f), columns(x1[2], f)
    u, v, w = barycentric(q1, A1, B1, C1)
    inside = (u >= -EDGE_SLACK) & (v >= -EDGE_SLACK) & (w >= -EDGE_SLACK)
    gap = side * plane1
    bad = np.flatnonzero(hit | (inside & (gap < pair_thickness) & (gap > -pair_thickness)))
    if bad.size == 0:
        return _NONE
    bary = np.clip(np.stack([u.take(bad), v.take(bad), w.take(bad)]), 0.0, None)
    bary /= np.maximum(bary.sum(axis=0), 1e-300)
    corners = np.stack([ta.take(f.take(bad)), tb.take(f.take(bad)), tc.take(f.take(bad))])
    wk = inv_mass.take(corners)  # (3, K)
    den = (wk * bary * bary).sum(axis=0)
    ok = den > 0.0
    if not ok.any():
        return _NONE
    corners, bary, wk, den = corners[:, ok], bary[:, ok], wk[:, ok], den[ok]
    bad = bad[ok]
    pair_thickness = _pick(pair_thickness, bad)
    nb = columns(n1, bad)
    sb = side.take(bad)
    # Re-measure the gap with the clamped weights: g = s n . (q1 - sum b_k x_k).
    plane_pt = sum(bary[m] * columns(P, corners[m]) for m in range(3))
    g = sb * dot(columns(q1, bad) - plane_pt, nb)
    c = np.minimum(g - pair_thickness, 0.0)
    # Each cloth vertex takes the largest step any of its pairs asks of it (pairs under one
    # triangle push its corners the same way: summing them would overshoot, averaging would
    # leave the deepest pair unresolved).
    step = (c * sb / den)[None] * wk * bary  # (3 corners, K): signed length along n
    vert = corners.reshape(-1)
    length = step.reshape(-1)
    normal_k = np.tile(nb, 3)  # (3, 3 K): corner-major like ``vert``
    live = np.flatnonzero(length != 0.0)
    if live.size == 0:
        return _NONE
    pick = live.take(_first_per_group(vert.take(live), -np.abs(length.take(live))))
    moved = vert.take(pick)
    P[:, moved] += length.take(pick) * columns(normal_k, pick)
    return moved
