"""Sharp collider edges against cloth edges: the edge-edge test of a MeshCollider.

A sharp collider edge (a blade, the ridge of a thin box, a wire, a finger's side) can cut
through the cloth between two cloth vertices with no vertex of either mesh crossing a face,
which the vertex-triangle tests of :mod:`.mesh_contact` cannot see. Only *sharp* edges need
the test: an edge whose two faces meet at more than :data:`SHARP_ANGLE` (their normals'
angle, in the collider's start pose), or that bounds one face only. Across a flatter edge a
cloth edge whose vertices the faces hold dips below the ridge by at most the sagitta
L^2 (angle) / 8 of its length L, under a tenth of a 1 cm cloth edge at 30 degrees.

For each pair (cloth edge a-b, sharp collider edge c-d) whose boxes meet over the substep
(sided, as every contact of the mesh collider; Ericson 2005, 5.1.9 for the closest points):

* at the substep's start, with the closest points p0 = a0 + s0 (b0 - a0), q0 = c0 + t0 (d0 - c0)
  and n0 = (b0 - a0) x (d0 - c0) / |...|, the side is sigma = sign(n0 . (p0 - q0));
* now, with the closest points p, q at parameters s, t strictly inside both edges (the
  endpoints are the vertex tests' business) and n = (b - a) x (d - c) / |...| turned to agree
  with n0, the gap is g = sigma n . (p - q);
* a pair with g < thickness pushes the cloth edge's ends along sigma n, by its barycentric
  weights and inverse masses (a point-edge constraint whose other end does not move, Müller et
  al. 2006, section 3.3): lambda = (thickness - g) / (w_a (1 - s)^2 + w_b s^2),
  dx_a = lambda w_a (1 - s) sigma n, dx_b = lambda w_b s sigma n.

Each cloth vertex takes the largest push of its edges (pushes under one collider edge move the
vertex the same way: summing them would overshoot). Near-parallel edges (|n| below
:data:`PARALLEL` of the edges' lengths' product) are left to the vertex tests. The test is
discrete with sides kept from the start: a cloth edge that passes a sharp edge within one
substep and ends farther than the contact band beyond it is not brought back.
"""

from __future__ import annotations

import math

import numpy as np

from ..arrays import F, I
from ..cloth.topology import edge_use
from ..selfcollision.geometry import closest_points_segments, columns, cross, dot
from .broadphase import BoxGrid, PairList
from .mesh_contact import _first_per_group, _pick

__all__ = ["PARALLEL", "SHARP_ANGLE", "cloth_edges", "project_collider_edges", "sharp_edges"]

#: Collider edges whose faces' normals differ by more than this [rad] (or with one face) are
#: tested against the cloth's edges.
SHARP_ANGLE = math.radians(30.0)
#: |(b - a) x (d - c)| below this fraction of |b - a| |d - c|: parallel edges, not tested.
PARALLEL = 1e-6

_NONE: I = np.zeros(0, dtype=np.intp)


def sharp_edges(vertices: F, triangles: I) -> I:
    """The sharp edges (E, 2) of a triangle mesh, each once (lower vertex first), ascending:
    edges of one face, and edges whose faces' unit normals make more than SHARP_ANGLE (a
    degenerate face's zero normal counts as sharp)."""
    tri = np.asarray(triangles, dtype=np.intp)
    edges, count, inverse = edge_use(tri)
    n = np.cross(vertices[tri[:, 1]] - vertices[tri[:, 0]], vertices[tri[:, 2]] - vertices[tri[:, 0]])
    length = np.linalg.norm(n, axis=1)
    n = n / np.where(length > 0.0, length, 1.0)[:, None]
    # The faces of each edge, in edge order: directed edge k belongs to face k // 3.
    face = np.argsort(inverse, kind="stable") // 3
    start = np.concatenate(([0], np.cumsum(count)[:-1]))
    sharp = count != 2
    two = np.flatnonzero(count == 2)
    cosine = np.einsum("ij,ij->i", n[face[start[two]]], n[face[start[two] + 1]])
    sharp[two] = ~(cosine >= math.cos(SHARP_ANGLE))
    return np.ascontiguousarray(edges[sharp], dtype=np.intp)


def cloth_edges(triangles: I) -> I:
    """The cloth's unique edges (2, E) from its triangles (3, T), lower vertex first."""
    return np.ascontiguousarray(edge_use(np.asarray(triangles, dtype=np.intp).T)[0].T,
                                dtype=np.intp)


def project_collider_edges(P: F, X: F, inv_mass: F, edges: I, c0: F, d0: F, c1: F, d1: F,
                           grid: BoxGrid, pairs: PairList, region: tuple[F, F],
                           thickness: float | F) -> I:
    """Sharp collider edges (their ends c, d at the substep's start ``c0``, ``d0`` and end
    ``c1``, ``d1``, (3, S) each; their swept boxes in ``grid``) against the cloth's ``edges``
    (2, E), in place on ``P`` (3, N) (module docstring). ``thickness``: one number [m] or each
    cloth edge's (E,). Returns the cloth vertices moved."""
    if edges.shape[1] == 0 or c0.shape[1] == 0:
        return _NONE
    ia, ib = edges
    xa, xb, pa, pb = columns(X, ia), columns(X, ib), columns(P, ia), columns(P, ib)
    lo = np.minimum(np.minimum(xa, xb), np.minimum(pa, pb))
    hi = np.maximum(np.maximum(xa, xb), np.maximum(pa, pb))
    e, k = pairs.pairs(lo, hi, np.arange(edges.shape[1], dtype=np.intp), grid, region)
    if e.size == 0:
        return _NONE
    a0, b0, a1, b1 = columns(xa, e), columns(xb, e), columns(pa, e), columns(pb, e)
    q00, q01, q10, q11 = columns(c0, k), columns(d0, k), columns(c1, k), columns(d1, k)
    # The side at the start.
    m0 = cross(b0 - a0, q01 - q00)
    s0, t0 = closest_points_segments(a0, b0, q00, q01)
    side = np.sign(dot(m0, (a0 + s0 * (b0 - a0)) - (q00 + t0 * (q01 - q00))))
    # The gap now, at closest points inside both edges.
    ab, cd = b1 - a1, q11 - q10
    m1 = cross(ab, cd)
    len1 = np.sqrt(dot(m1, m1))
    lens = np.sqrt(dot(ab, ab) * dot(cd, cd))
    s, t = closest_points_segments(a1, b1, q10, q11)
    inner = (s > 0.0) & (s < 1.0) & (t > 0.0) & (t < 1.0)
    live = np.flatnonzero(inner & (side != 0.0) & (len1 > PARALLEL * lens)
                          & (dot(m0, m0) > 0.0))
    if live.size == 0:
        return _NONE
    n = columns(m1, live) / len1.take(live)
    n *= np.where(dot(n, columns(m0, live)) < 0.0, -1.0, 1.0)
    sl, tl, sg = s.take(live), t.take(live), side.take(live)
    p = columns(a1, live) + sl * columns(ab, live)
    q = columns(q10, live) + tl * columns(cd, live)
    gap = sg * dot(n, p - q)
    own = _pick(thickness, e.take(live))
    bad = np.flatnonzero(gap < own)
    if bad.size == 0:
        return _NONE
    el = e.take(live.take(bad))
    wa, wb = inv_mass.take(ia.take(el)), inv_mass.take(ib.take(el))
    sb = sl.take(bad)
    den = wa * (1.0 - sb) ** 2 + wb * sb * sb
    ok = np.flatnonzero(den > 0.0)
    if ok.size == 0:
        return _NONE
    bad, el, wa, wb, sb, den = bad[ok], el[ok], wa[ok], wb[ok], sb[ok], den[ok]
    depth = _pick(own, bad) - gap.take(bad)
    lam = depth / den
    direction = columns(n, bad) * sg.take(bad)
    vert = np.concatenate([ia.take(el), ib.take(el)])
    length = np.concatenate([lam * wa * (1.0 - sb), lam * wb * sb])
    normal = np.concatenate([direction, direction], axis=1)
    live_push = np.flatnonzero(length > 0.0)
    if live_push.size == 0:
        return _NONE
    pick = live_push.take(_first_per_group(vert.take(live_push), -length.take(live_push)))
    moved = vert.take(pick)
    P[:, moved] += length.take(pick) * columns(normal, pick)
    return moved
