"""The contact math of :class:`~pbdcloth.colliders.mesh.MeshCollider`, whole-array over pairs.

Arrays are component-major (3, K). Each function finds its candidate pairs with the substep's
:class:`~pbdcloth.colliders.broadphase.BoxGrid`, runs the continuous test (:mod:`.ccd`) and the
sided discrete test on all pairs at once, and writes the corrections into ``P`` (3, N) in place.

Within a substep the pair lists rarely change (Verlet lists, :class:`.broadphase.PairList`), so
what depends only on the substep's start and the collider's poses is made once per pair list
and kept on the :class:`Substep` (:class:`_VertexPairs`, :class:`_TrianglePairs`): the pairs'
start-plane distances and sides, the triangles' end planes, the collider vertices' paths. The
iterations then only gather the moving cloth positions. Every cheap test in front of a costly
one (the continuous test's motion bounds before the cubic, the fail-safe's plane test before
the winding numbers, a bounding-sphere test before the closest point) only drops pairs the
costly test would reject, with margins far above rounding: the results are those of the full
tests, bit for bit (``tests/test_meshcollider_bits.py``).

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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..arrays import F, I
from ..selfcollision.geometry import (
    closest_point_triangle,
    columns,
    cross,
    dot,
    triangle_spheres,
    unit,
)
from .broadphase import BoxGrid, PairList
from .ccd import INSIDE_TOLERANCE, barycentric, first_crossing

if TYPE_CHECKING:
    from .response import ContactBuffer

__all__ = ["EDGE_SLACK", "Substep", "project_cloth_vertices", "project_collider_vertices", "recheck"]

_NONE: I = np.zeros(0, dtype=np.intp)
_EMPTY: F = np.zeros(0)

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
    vertex_pairs: _VertexPairs | None = None
    """The cloth-vertex pairs' per-substep quantities (:func:`_vertex_pairs`)."""
    triangle_pairs: _TrianglePairs | None = None
    """The collider-vertex pairs' per-substep quantities (:func:`_triangle_pairs`)."""
    _motion: tuple[F, F, F] | None = None

    _end_spheres: tuple[F, F, NDArray[np.bool_]] | None = None

    @property
    def end_spheres(self) -> tuple[F, F, NDArray[np.bool_]]:
        """Each triangle's bounding sphere at the end pose: centroid (3, T), radius grown by
        1e-6 of itself and by 1e-9 of the coordinates' size (T,) [m], and whether the
        triangle is thick enough for the sphere cull (sine of its angle at a >= 1e-2)."""
        if self._end_spheres is None:
            a, b, c = self.corners1
            centre, radius = triangle_spheres(a, b, c)
            size = 1.0 + max(float(np.abs(self.lo).max()), float(np.abs(self.hi).max()))
            ab, ac = b - a, c - a
            n = cross(ab, ac)
            thick = dot(n, n) >= 1e-4 * dot(ab, ab) * dot(ac, ac)
            self._end_spheres = (centre, radius * (1.0 + 1e-6) + 1e-9 * size, thick)
        return self._end_spheres

    @property
    def motion(self) -> tuple[F, F, F]:
        """Each triangle corner's motion over the substep, corners1 - corners0, (3, T) each."""
        if self._motion is None:
            self._motion = (self.corners1[0] - self.corners0[0],
                            self.corners1[1] - self.corners0[1],
                            self.corners1[2] - self.corners0[2])
        return self._motion


@dataclass
class _VertexPairs:
    """What the (cloth vertex i, collider triangle j) pairs keep over the iterations of a
    substep while the pair list stays the same (it depends only on the substep's start X and
    the collider's substep poses): the pairs without the trapped vertices' other triangles,
    each pair's start-plane distance (x0 - a0) . n0 and its side, the triangles' end planes."""

    source: tuple[I, I]
    """The pair list's own arrays (i, j) these were made from (compared by identity)."""
    X: F
    i: I
    j: I
    own: NDArray[np.bool_]
    plane0: F
    reach: F
    side: F
    zero: I
    n1: F
    a1: F
    free: tuple[I, I, F, F]
    """The pairs that are not a trapped vertex's own (the continuous test's): their i, j,
    plane0 and reach."""


@dataclass
class _TrianglePairs:
    """What the (cloth triangle f, collider vertex k) pairs keep over the iterations of a
    substep: the cloth triangles' start corners (from X) and normals, and while the pair list
    stays the same each collider vertex's path q0 -> q1, its start-plane distance and side."""

    source: tuple[I, I] | None
    """The pair list's own arrays (f, k) the pair quantities were made from (by identity)."""
    X: F
    triangles: I
    x0: tuple[F, F, F]
    active: I | None = None
    n0: F | None = None
    f: I = field(default_factory=lambda: _NONE)
    q0: F = field(default_factory=lambda: _EMPTY)
    q1: F = field(default_factory=lambda: _EMPTY)
    dq: F = field(default_factory=lambda: _EMPTY)
    dq_len: F = field(default_factory=lambda: _EMPTY)
    abs_plane0: F = field(default_factory=lambda: _EMPTY)
    side: F = field(default_factory=lambda: _EMPTY)
    zero: I = field(default_factory=lambda: _NONE)


def _pick(value: float | F, idx: I) -> float | F:
    """A per-point (or per-triangle) value's entries at ``idx``; a number stays a number."""
    return value if np.ndim(value) == 0 else value.take(idx)  # type: ignore[union-attr]


def _first_per_group(group: I, key: F) -> I:
    """Indices (into the pair arrays) of the pair with the smallest ``key`` in each ``group``,
    ordered by group (ties: the earlier pair).

    Pairs ordered by group (the pair lists are) take the runs' minima (``minimum.reduceat``)
    and the first pair of each run equal to its minimum: the same pairs as the stable sort by
    (group, key), without sorting. Otherwise, or with a NaN key, the stable sort itself."""
    if group.size > 1 and bool((group[1:] >= group[:-1]).all()):
        start = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
        low = np.minimum.reduceat(key, start)
        if not np.isnan(low).any():
            run = np.cumsum(np.concatenate(([False], group[1:] != group[:-1])))
            at = np.flatnonzero(key == low.take(run))
            r = run.take(at)
            return at[np.concatenate(([True], r[1:] != r[:-1]))]
    order = np.lexsort((key, group))
    g = group.take(order)
    first = np.ones(order.size, dtype=bool)
    first[1:] = g[1:] != g[:-1]
    return order[first]


def _continuous(P: F, X: F, i: I, j: I, sub: Substep, thickness: float | F, plane0: F,
                reach: F) -> I:
    """The continuous test on pairs (cloth vertex ``i``, triangle ``j``): a vertex whose path
    X -> P crossed a triangle goes to the first crossing point carried with the triangle to the
    end of the substep, a thickness out on its starting side. In place on ``P``; returns the
    vertices moved. ``plane0`` (K,): each pair's start-plane distance (x0 - a0) . n0 (its sign
    the side), ``reach`` (K,): the farthest its triangle's corners move, from the substep.

    A vertex can only cross a triangle whose plane it starts within max_k |dx - dc_k| <= |dx| +
    max_k |dc_k| of (the crossing point is a convex combination of the corners): the cubic runs
    on those."""
    d = P - X
    step = np.sqrt(dot(d, d))
    k = np.flatnonzero(np.abs(plane0) <= step.take(i) + reach + 1e-12)
    if k.size == 0:
        return k
    # Then the tight bound, max_k |dx - dc_k|, on the survivors (a vertex riding along with
    # the surface moves with it and skips the cubic).
    jk, ik = j.take(k), i.take(k)
    dxk = columns(d, ik)
    rel = np.zeros(k.size)
    for motion in sub.motion:
        r = dxk - columns(motion, jk)
        rel = np.maximum(rel, dot(r, r))
    tight = np.flatnonzero(np.abs(plane0.take(k)) <= np.sqrt(rel) + 1e-12)
    if tight.size == 0:
        return np.zeros(0, dtype=np.intp)
    jk, ik = jk.take(tight), ik.take(tight)
    corners = [columns(c, jk) for pair in zip(sub.corners0, sub.corners1) for c in pair]
    hit, t, u, v, w, side = first_crossing(columns(X, ik), columns(P, ik), *corners)
    if not hit.any():
        return np.zeros(0, dtype=np.intp)
    m = np.flatnonzero(hit)
    m = m.take(_first_per_group(ik.take(m), t.take(m)))
    jm = jk.take(m)
    at = (columns(sub.corners1[0], jm) * u[m] + columns(sub.corners1[1], jm) * v[m]
          + columns(sub.corners1[2], jm) * w[m])
    moved = ik.take(m)
    P[:, moved] = at + (side.take(m) * _pick(thickness, moved)) * columns(sub.normal1, jm)
    return moved


def _vertex_pairs(P: F, X: F, free: I, sub: Substep, grid: BoxGrid, pairs: PairList
                  ) -> _VertexPairs | None:
    """The substep's cloth-vertex pairs (the pair list's, without the trapped vertices' other
    triangles; the fail-safe runs on the substep's first list), with their per-substep
    quantities, made again only when the pair list changes; None when there are none."""
    src = pairs.pairs(np.minimum(X, P), np.maximum(X, P), free, grid, (sub.lo, sub.hi))
    if src[0].size == 0:
        return None
    cache = sub.vertex_pairs
    if cache is not None and cache.source[0] is src[0] and cache.source[1] is src[1] \
            and cache.X is X:
        return cache
    i, j = src
    plane0 = dot(columns(X, i) - columns(sub.corners0[0], j), columns(sub.normal0, j))
    if sub.trapped is None:
        sub.trapped = find_trapped(X, i, j, sub, plane0)
    keep = _drop_trapped(i, j, sub)
    if keep is None:
        own = np.zeros(i.size, dtype=bool)
    else:
        i, j, plane0, own = i[keep[0]], j[keep[0]], plane0[keep[0]], keep[1][keep[0]]
    side = np.where(own, sub.orientation, np.sign(plane0))  # a trapped vertex goes out
    reach = sub.reach.take(j)
    free_pairs = (i, j, plane0, reach)
    if own.any():
        k = np.flatnonzero(~own)
        free_pairs = (i.take(k), j.take(k), plane0.take(k), reach.take(k))
    cache = _VertexPairs(src, X, i, j, own, plane0, reach, side, np.flatnonzero(side == 0.0),
                         columns(sub.normal1, j), columns(sub.corners1[0], j), free_pairs)
    sub.vertex_pairs = cache
    return cache


def recheck(P: F, X: F, moved: I, free: I, sub: Substep, grid: BoxGrid, pairs: PairList,
            thickness: float | F) -> None:
    """The continuous test again for the cloth vertices ``moved`` since it last ran (by the
    discrete push or by collider vertices), so that no iteration ends with a vertex whose
    substep path crosses a triangle."""
    if moved.size == 0:
        return
    vp = _vertex_pairs(P, X, free, sub, grid, pairs)
    if vp is None:
        return
    mask = np.zeros(P.shape[1], dtype=bool)
    mask[moved] = True
    keep = np.flatnonzero(mask.take(vp.i) & ~vp.own)
    if keep.size:
        _continuous(P, X, vp.i.take(keep), vp.j.take(keep), sub, thickness,
                    vp.plane0.take(keep), vp.reach.take(keep))


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


def find_trapped(X: F, i: I, j: I, sub: Substep, plane0: F | None = None) -> tuple[I, I]:
    """Fail-safe for closed meshes: the cloth vertices that start the substep inside the mesh
    (by whatever failure put them there) within the contact band of a triangle (the candidate
    pairs ``i``, ``j``; a vertex deeper inside has no candidates and is not found), and the
    nearest triangle of each.

    Suspects are the vertices behind (against the orientation) the plane of their nearest
    candidate triangle; at most :data:`MAX_SUSPECTS` of them (lowest indices first) get the
    exact test, their generalized winding number over every triangle at the substep's start
    (> 1/2: inside). A trapped vertex is then collided with its nearest triangle only, toward
    the outside, for the whole substep, and skips the continuous test (its path leaves the
    mesh on purpose).

    ``plane0`` (K,), each pair's start-plane distance (x0 - a0) . n0 when known: a vertex on
    the outer side of every candidate triangle's plane by more than the rounding of these
    distances (1e-9 of the coordinates' size, far above it) is on the outer side of its
    nearest one's too and cannot be a suspect: only the other vertices' pairs are measured."""
    empty = (_NONE, _NONE)
    if sub.orientation == 0.0 or i.size == 0:
        return empty
    if plane0 is not None:
        size = 1.0 + max(float(np.abs(X).max()), float(np.abs(sub.lo).max()),
                         float(np.abs(sub.hi).max()))
        behind = sub.orientation * plane0 < 1e-9 * size
        if not behind.any():
            return empty
        mask = np.zeros(X.shape[1], dtype=bool)
        mask[i[behind]] = True
        sel = np.flatnonzero(mask.take(i))
        i, j = i.take(sel), j.take(sel)
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


def _drop_trapped(i: I, j: I, sub: Substep
                  ) -> tuple[NDArray[np.bool_], NDArray[np.bool_]] | None:
    """Masks over the pairs: those to keep (all but the trapped vertices' other triangles), and
    the trapped vertices' own (nearest) pairs; None when no vertex is trapped."""
    if sub.trapped is None or sub.trapped[0].size == 0:
        return None
    tv, tj = sub.trapped
    slot = np.minimum(np.searchsorted(tv, i), tv.size - 1)
    is_trapped = tv.take(slot) == i
    own = is_trapped & (tj.take(slot) == j)
    return ~is_trapped | own, own


def _near_triangle(near: I, p: F, j: I, ahead: F, own: NDArray[np.bool_],
                   thickness: float | F, i: I, sub: Substep) -> I:
    """The pairs ``near`` (ahead of their triangle's plane by less than the thickness) that
    can be violated: a pair ahead of the plane (``ahead`` = side (p - a1) . n1 >= 0) whose
    vertex is farther than r + thickness from the centre of its triangle's end-pose bounding
    sphere (radius r) is farther than the thickness from every point of the triangle, so its
    gap (the distance, or on the face the plane distance, which there equals it) is above the
    thickness. Pairs behind the plane, a trapped vertex's own pairs and pairs of triangles too
    thin for a well-conditioned projection (the sine of the angle at a below 1e-2: rounding
    within 1e4 ulp) are all kept; the bound is padded by 1e-6 r (beyond the inside test's
    1e-7 slack) and 1e-9 of the coordinates' size, far above rounding."""
    spheres = sub.end_spheres
    jn = j.take(near)
    diff = columns(p, near) - columns(spheres[0], jn)
    reach = spheres[1].take(jn) + _pick(thickness, i.take(near))
    far = (dot(diff, diff) > reach * reach) & (ahead.take(near) >= 0.0) & spheres[2].take(jn)
    far &= ~own.take(near)
    return near if not far.any() else near[~far]


def project_cloth_vertices(P: F, X: F, free: I, sub: Substep, grid: BoxGrid, pairs: PairList,
                           h: float, thickness: float | F, mu_static: float,
                           mu_kinetic: float, contacts: ContactBuffer,
                           friction_scale: F | None = None) -> I:
    """Cloth vertices against the collider's triangles (continuous, then sided discrete, with
    friction), in place on ``P``; returns the vertices in contact (moved by the discrete
    push). ``thickness``: one number [m] or each cloth vertex's (N,); ``friction_scale``:
    each cloth vertex's scale on both coefficients (N,), or None."""
    vp = _vertex_pairs(P, X, free, sub, grid, pairs)
    if vp is None:
        return _NONE
    i, j, own, side, n1, a1 = vp.i, vp.j, vp.own, vp.side, vp.n1, vp.a1
    fi, fj, fplane0, freach = vp.free
    _continuous(P, X, fi, fj, sub, thickness, fplane0, freach)
    p = columns(P, i)
    # Discrete, on the pairs not already a thickness out on their side of the plane.
    plane1 = dot(p - a1, n1)
    zero = vp.zero
    if zero.size:  # exactly in the plane at the start: the side the triangle moves toward
        # (it carries the vertex along), else its front (outside for a closed mesh). Not
        # from the vertex's own motion: that changes with every push within the substep, and
        # each collider call would flip the side the one before chose.
        side = side.copy()
        jz = j.take(zero)
        m = sub.motion
        moved = (columns(m[0], jz) + columns(m[1], jz) + columns(m[2], jz)) / 3.0
        toward = np.sign(dot(moved, columns(sub.normal0, jz)))
        side[zero] = np.where(toward != 0.0, toward, sub.orientation or 1.0)
    ahead = side * plane1
    near = np.flatnonzero(ahead < _pick(thickness, i))
    if near.size == 0:
        return _NONE
    near = _near_triangle(near, p, j, ahead, own, thickness, i, sub)
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
    jb = j.take(bad)
    surface = (ub * columns(sub.motion[0], jb) + vb * columns(sub.motion[1], jb)
               + wb * columns(sub.motion[2], jb))
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


def _start_corners(X: F, triangles: I, sub: Substep) -> tuple[F, F, F]:
    """The cloth triangles' corners at the substep's start, (3, Tc) each (kept on the substep
    while ``X`` and ``triangles`` are the same arrays)."""
    tp = sub.triangle_pairs
    if tp is not None and tp.X is X and tp.triangles is triangles:
        return tp.x0
    x0 = (columns(X, triangles[0]), columns(X, triangles[1]), columns(X, triangles[2]))
    sub.triangle_pairs = _TrianglePairs(None, X, triangles, x0)
    return x0


def _triangle_pairs(X: F, triangles: I, x0: tuple[F, F, F], lo: F, hi: F, sub: Substep,
                    grid: BoxGrid, pairs: PairList) -> _TrianglePairs | None:
    """The substep's (cloth triangle, collider vertex) pairs for the cloth triangles' boxes
    [lo, hi] (3, Tc), with their per-substep quantities, made again only when the pair list
    changes; None when there are none."""
    tp = sub.triangle_pairs
    assert tp is not None and tp.X is X and tp.triangles is triangles
    if tp.active is None or tp.active.size != lo.shape[1]:
        tp.active = np.arange(lo.shape[1], dtype=np.intp)
    src = pairs.pairs(lo, hi, tp.active, grid, (sub.lo, sub.hi))
    if src[0].size == 0:
        return None
    if tp.source is not None and tp.source[0] is src[0] and tp.source[1] is src[1]:
        return tp
    f, k = src
    if tp.n0 is None:
        tp.n0 = unit(cross(x0[1] - x0[0], x0[2] - x0[0]))
    q0, q1 = columns(sub.v0, k), columns(sub.v1, k)
    plane0 = dot(q0 - columns(x0[0], f), columns(tp.n0, f))
    dq = q1 - q0
    side = np.sign(plane0)
    tp.source, tp.f, tp.q0, tp.q1, tp.dq = src, f, q0, q1, dq
    tp.dq_len, tp.abs_plane0 = np.sqrt(dot(dq, dq)), np.abs(plane0)
    tp.side, tp.zero = side, np.flatnonzero(side == 0.0)
    return tp


def project_collider_vertices(P: F, X: F, inv_mass: F, triangles: I, sub: Substep,
                              grid: BoxGrid, pairs: PairList, thickness: float | F) -> I:
    """Collider vertices against the cloth's triangles ``triangles`` (3, Tc): a violated pair
    moves the triangle's corners away from the vertex (module docstring of :mod:`.mesh`), in
    place on ``P``; returns the cloth vertices moved. ``thickness``: one number [m] or each
    cloth triangle's (Tc,)."""
    if triangles.shape[1] == 0:
        return _NONE
    ta, tb, tc = triangles
    x0 = _start_corners(X, triangles, sub)
    x1 = (columns(P, ta), columns(P, tb), columns(P, tc))
    lo = np.minimum(np.minimum(np.minimum(x0[0], x0[1]), np.minimum(x0[2], x1[0])),
                    np.minimum(x1[1], x1[2]))
    hi = np.maximum(np.maximum(np.maximum(x0[0], x0[1]), np.maximum(x0[2], x1[0])),
                    np.maximum(x1[1], x1[2]))
    tp = _triangle_pairs(X, triangles, x0, lo, hi, sub, grid, pairs)
    if tp is None:
        return _NONE
    f, q1, side = tp.f, tp.q1, tp.side
    # Cloth normals at the end and how far each triangle's corners move this substep (so far).
    n1_all = unit(cross(x1[1] - x1[0], x1[2] - x1[0]))
    d = P - X
    step = np.sqrt(dot(d, d))
    reach = np.maximum(np.maximum(step.take(ta), step.take(tb)), step.take(tc))
    # As for cloth vertices: only a vertex within |dq| + max_k |dx_k| of the plane can cross.
    hit = np.zeros(f.size, dtype=bool)
    cand = np.flatnonzero(tp.abs_plane0 <= tp.dq_len + reach.take(f) + 1e-12)
    if cand.size:
        fc = f.take(cand)
        dqc = columns(tp.dq, cand)
        rel = np.zeros(cand.size)
        for corner in triangles:
            r = dqc - columns(d, corner.take(fc))
            rel = np.maximum(rel, dot(r, r))
        tight = np.flatnonzero(tp.abs_plane0.take(cand) <= np.sqrt(rel) + 1e-12)
        if tight.size:
            ft, ct = fc.take(tight), cand.take(tight)
            hit[ct] = first_crossing(columns(tp.q0, ct), columns(q1, ct),
                                     *(columns(c, ft) for pair in zip(x0, x1) for c in pair))[0]
    n1 = columns(n1_all, f)
    A1 = columns(x1[0], f)
    plane1 = dot(q1 - A1, n1)
    zero = tp.zero
    if zero.size:  # exactly in the cloth's plane at the start: the side it moves away from
        # (its own path, fixed over the substep; not relative to the cloth triangle, whose
        # motion changes with every push, so that each call would choose anew)
        assert tp.n0 is not None
        side = side.copy()
        fz = f.take(zero)
        away = -np.sign(dot(columns(tp.dq, zero), columns(tp.n0, fz)))
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
