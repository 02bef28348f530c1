"""Cloth self-collision: spatial hash grid, point-triangle and edge-edge contacts, no pass-through.

The cloth keeps a distance ``t`` (``self_thickness``) between every vertex and every triangle,
and between every two edges, that are not neighbours on the mesh. All of it is whole-array numpy
work on flat candidate lists: no loop over particles, pairs or cells.

Substep (called from the numpy backend; ``h`` the substep, ``c`` = ``self_clamp`` <= 1/2):

1. ``clamp_velocity`` (predict): each free particle's velocity *relative to the mean velocity of
   the free particles* is limited to ``c t / h``. This is Ten Minute Physics' clamp (Müller,
   "Self collisions", tenMinutePhysics 15), applied to relative motion so that a falling or
   flying cloth keeps its speed: within a substep's prediction no two particles close in by
   more than ``2 c t <= t``.
2. ``begin_substep`` (broad phase, on the predicted positions): candidate pairs are kept in
   Verlet lists (Verlet 1967, the neighbour lists of molecular dynamics), against reference
   positions ``R``: every pair that is not listed was at least ``r + skin`` apart at ``R``,
   ``r = (1 + c) t``. A pair's separation now differs from that by at most the sum of two of
   its particles' deviations ``|(P_k - R_k) - m|`` (``m`` the mean displacement), so while no
   particle deviates by more than ``skin / 2`` every pair closer than ``r`` is listed.
   Particles that do (*movers*) get new references ``P - m``, and only the pairs that involve
   a mover are dropped and searched again (a partial update, which gives exactly the list a
   full build at ``R`` would; more than ``PARTIAL_LIMIT`` movers, a full build). A cloth
   settling in folds moves in few places at a time: at 10k particles in the folded fold scene
   a few percent of the particles are movers in a substep.
   The skin keeps flat cloth out of the lists: the list radius ``r + skin`` is at least the
   rest exclusion radius ``REST_EXCLUSION t`` (skin >= (pi / 2 - 1 - c) t >= 0.07 t) and at
   most ``GAP_FRACTION`` times the rest gap, the smallest rest distance of a pair that is not
   excluded (``rest_gap``; capped at ``r + MAX_SKIN t``). A full build takes the larger skin
   when partial updates will follow, the smaller while the cloth crumples (more than
   ``PARTIAL_LIMIT`` of it moving more than half the larger skin per build): the lists are
   then built anew every substep, and the fewer pairs they hold the better. Pairs as far apart as at rest (or
   strained by less than 10 %) are then never listed, so a cloth that is flat or unstrained
   has no candidates at all and only folded or compressed regions have any. (A radius past
   the gap would list the ring of mesh neighbours at the gap on every flat patch, which at 10k
   particles is ~400k pairs, nearly all of the narrow phase's work.)
   A search joins boxes and points with :class:`SweepGrid`: point-triangle takes each
   triangle's box grown by the radius against the vertices (a partial update also each moving
   vertex against the other triangles' grown boxes), edge-edge each edge's box against the
   other edges' boxes (midpoints with their half extents). Then, cheapest test first:
   neighbours removed, bounding spheres within the radius, closest points within it, rest
   exclusions. Lists are kept in the order of their pair keys, so their order depends only on
   their content.
   Why not a hash built once per frame with a radius covering the frame's motion (Ten Minute
   Physics)? With ``n`` substeps that radius is ``t + 2 n c t``, about ``n`` times ``r``, and the
   candidates of a flat cloth grow with its square: at 10k particles and 30 substeps, tens of
   millions of pairs. Verlet lists are updated where the motion requires it.
3. ``project`` (narrow phase, last in every solver iteration, after the obstacles): bounding
   spheres cull the candidates to the pairs within the crossing band (``CROSSING_BAND t``), then
   up to ``PASSES`` Jacobi passes, each stopping early once no contact is deeper than
   ``RESOLVED t``. After the first pass only the pairs whose particles have moved enough to
   matter are evaluated again (:class:`_Tracked`; the result is that of evaluating all):

   * point-triangle: closest point ``q = u a + v b + w c`` of the triangle to the vertex ``p``
     (Ericson 2005, "Real-Time Collision Detection", 5.1.5: Voronoi regions in barycentrics);
   * edge-edge: closest points ``p1 + s (p2 - p1)`` and ``q1 + s' (q2 - q1)`` (Ericson 5.1.9), only
     when both lie inside their edges; a contact at an edge's end is a vertex contact and the
     point-triangle test has it.

   **Side.** A pair keeps the side it was on at the start of the substep. For a vertex over a
   triangle's face it is the sign of the signed volume ``(p - a) . ((b - a) x (c - a))``, for two
   edges that of ``(p1 - q1) . ((p2 - p1) x (q2 - q1))``, both on the start positions: the
   separation along the geometric normal, which sliding along the surface cannot change
   (the sign is corrected when the normal itself turned over). A vertex nearest to a triangle's
   edge or corner has no side: it may pass round the triangle (round the cloth's border), and if
   it goes through, it does so through the face of this or the neighbouring triangle. A pair
   found on the other side has crossed; its signed distance is negative.

   **Response.** Contacts (signed distance < ``t``) are projected with the constraint
   ``C = n . (x_A - x_B) - t >= 0``, ``n`` the unit normal on the start side, as PBD (Müller et
   al. 2006, eq. 9): ``lambda = -C / W`` with ``W = w_p + u^2 w_a + v^2 w_b + w^2 w_c``
   (edge-edge: ``(1 - s)^2 w_p1 + s^2 w_p2 + (1 - s')^2 w_q1 + s'^2 w_q2``), ``dp = w_p lambda n``,
   ``da = -u w_a lambda n``, and so on. The corrections are inverse-mass weighted, their linear
   momentum ``lambda n (1 - u - v - w)`` is zero and so is their angular momentum (they act
   along n through the contact points, whose difference is parallel to n). Friction between the
   layers is Coulomb friction in position form (Macklin et al. 2014, "Unified Particle Physics
   for Real-Time Applications", eq. 24): the tangential slip of the contact points over the
   substep is removed while it is below ``mu C`` and reduced by ``mu C`` otherwise, with the
   same weights.

   **Fail-safe.** Pairs still crossed after the passes (the cloth's own constraints can pull
   harder than the under-relaxed passes push) have their free particles put back where they were
   at the start of the substep, in a few rounds (:meth:`SelfCollision._revert_crossed`).

Determinism: contacts sharing particles are solved together (Jacobi). Each contact's
correction is divided by the largest number of contacts any of its movable particles takes part
in, so no particle receives more than the average of its corrections and each contact still
conserves momentum. Corrections are summed with ``np.bincount`` in the fixed order of the
candidate lists (stable sorts of integer and float keys), so reruns are bit-identical.

Neighbours, never tested: a vertex and a triangle it is a corner of, two edges that share a
vertex, and any pair closer than ``REST_EXCLUSION t = pi t / 2`` in the rest shape. The last rule
is the physical one: the two layers of a fold ``t`` apart lie on a half circle of diameter ``t``,
whose arc is ``pi t / 2`` long, so points closer than that along the cloth can never face each
other across a fold. Pairs merely joined by an edge (a vertex and a triangle next to it) are
tested when they are farther apart than that at rest: a hinge folded flat under a strong twist
brings them through each other, and only their contact stops it.

Guarantee. With ``self_clamp <= 1/2`` a substep's prediction moves no pair by more than ``t``
relative to each other, so a pair at least ``t`` apart at the start of a substep cannot reach
the other side of its partner by the prediction alone; a closer pair is judged by its start
side, so a crossing within the substep is undone (pushed back, or reverted by the fail-safe)
rather than pushed on through; the lists hold every pair closer than ``r = (1 + c) t`` (the
contact distance, plus a prediction's ``2 c t <= (1 + c) t`` for pairs that crossed), and the
crossing band ``2 t`` covers crossings the constraints make within an iteration. Measured: no
intersecting triangle pairs and no vertex closer than ``t / 2`` to a non-neighbour triangle at
any frame end of the fold scene and of the twist scene up to 180 degrees (tests).
Not guaranteed: a cloth that starts tangled stays tangled (start sides are kept); pinned
particles follow their targets and are neither clamped nor reverted; when pins force the cloth
to stretch far (the twist scene past about 250 degrees stretches edges by 60 to 100%), its
constraints can pull the cloth through itself faster than the contacts resolve.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from ..cloth.model import ClothModel
from .tuning import DEFAULT_TUNING, SelfCollisionTuning

F = NDArray[np.float64]
I = NDArray[np.intp]
Quad = tuple[I, I, I, I]
G = TypeVar("G", bound=np.generic)

#: Pairs closer than this times the thickness in the rest shape are never tested (see above).
REST_EXCLUSION = 0.5 * math.pi

#: Edge-edge contacts need both closest points this far inside their edges (as a fraction of
#: the edge); closer to an end the contact is a vertex contact, handled by point-triangle.
EDGE_INTERIOR = 1e-6

#: A pair is tested for having crossed (its closest points now on the other side than at the
#: start of the substep) up to this many thicknesses apart: the prediction moves a pair by at
#: most one thickness, the cloth's own constraints can pull a little further.
CROSSING_BAND = 1.5

#: Jacobi passes of the contact projection per solver iteration, at most; passes stop once no
#: contact is deeper than RESOLVED times the thickness.
PASSES = 4
RESOLVED = 0.01

#: Rounds of the fail-safe that reverts the particles of pairs left on the wrong side.
REVERT_ROUNDS = 8


#: Row size of the sweep grid as a multiple of the mean box extent (measured on the fold scene:
#: 1 to 2 cost the least; the sweep axis itself is exact, so rows can be coarse).
CELL_SCALE = 1.0


#: The candidate lists reach at most this many thicknesses beyond the contact reach ``r``
#: (more skin means fewer list updates but more listed pairs in folded regions).
MAX_SKIN = 0.25

#: ... and stay below this fraction of the rest gap (the smallest rest distance of a pair that
#: is not excluded), so that a cloth strained by less than 1 - GAP_FRACTION lists nothing.
GAP_FRACTION = 0.9

#: A list update refreshes only the particles that moved more than half the skin (and their
#: pairs) while they are at most this fraction of all particles; beyond it, a full build is
#: cheaper.
PARTIAL_LIMIT = 0.25


def list_radii(thickness: float, clamp: float, gap: float | None = None) -> tuple[float, float]:
    """(r, skin) of the candidate lists [m] (module docstring, step 2).

    ``r = (1 + c) t`` must be listed at every substep. The list radius ``r + skin`` is at least
    the rest exclusion radius ``REST_EXCLUSION t`` (so skin >= (pi / 2 - 1 - c) t >= 0.07 t);
    given the model's rest ``gap`` (:meth:`SelfCollision.rest_gap`) it grows to
    ``GAP_FRACTION gap``, at most ``r + MAX_SKIN t``: pairs that are as far apart as at rest
    (or strained by less than 10 %) are then still not listed.
    """
    r = (1.0 + clamp) * thickness
    radius = REST_EXCLUSION * thickness
    if gap is not None:
        radius = max(radius, min(GAP_FRACTION * gap, r + MAX_SKIN * thickness))
    return r, radius - r


# --- geometry ----------------------------------------------------------------------------------
def _dot(a: F, b: F) -> F:
    """Column-wise dot product of (3, K) arrays, shape (K,)."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _triangle_spheres(a: F, b: F, c: F) -> tuple[F, F]:
    """Centroid (3, T) and radius (T,) of a sphere around each triangle (corners (3, T))."""
    centre = (a + b + c) * (1.0 / 3.0)
    radius2 = np.maximum(np.maximum(_dot(a - centre, a - centre), _dot(b - centre, b - centre)),
                         _dot(c - centre, c - centre))
    return centre, np.sqrt(radius2)


def _within(x: F, y: F, reach: F) -> NDArray[np.bool_]:
    """Mask of columns with |x - y| <= reach ((3, K), (3, K), (K,))."""
    d = x - y
    return _dot(d, d) <= reach * reach


def _sign(x: F) -> F:
    """+1 where x >= 0, else -1."""
    return np.where(x >= 0.0, 1.0, -1.0)


def _unit(m: F) -> F:
    """Columns of m scaled to unit length (zero columns stay zero)."""
    length = np.sqrt(_dot(m, m))
    return m * _safe_div(np.ones_like(length), length)


def _col(a: NDArray[G], idx: NDArray[np.integer[Any]]) -> NDArray[G]:
    """Columns ``idx`` of a (k, M) array, shape (k, K) (``take`` is several times faster than
    ``a[:, idx]``)."""
    return np.take(a, idx, axis=1)


def _cross(a: F, b: F) -> F:
    return np.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def _safe_div(num: F, den: F) -> F:
    """num / den where den != 0, else 0."""
    ok = den != 0.0
    return np.where(ok, num / np.where(ok, den, 1.0), 0.0)


def closest_point_triangle(p: F, a: F, b: F, c: F) -> tuple[F, F, F, NDArray[np.bool_]]:
    """Barycentric coordinates (u, v, w) of the point of triangle abc closest to p, and
    whether that point lies inside the face (not on an edge or at a corner).

    Ericson 2005, "Real-Time Collision Detection", section 5.1.5: the Voronoi region of p (a
    corner, an edge or the face) is found from six dot products. Inputs are (3, K) columns;
    outputs (K,) each, with u + v + w = 1 and all >= 0. Degenerate triangles give a point on an
    edge or a corner, never NaN.
    """
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = _dot(ab, ap)
    d2 = _dot(ac, ap)
    aa = _dot(ab, ab)
    cc = _dot(ac, ac)
    bc_ = _dot(ab, ac)
    d3 = d1 - aa  # ab . (p - b)
    d4 = d2 - bc_  # ac . (p - b)
    d5 = d1 - bc_  # ab . (p - c)
    d6 = d2 - cc  # ac . (p - c)
    vc = d1 * d4 - d3 * d2
    vb = d5 * d2 - d1 * d6
    va = d3 * d6 - d5 * d4
    # Face region (lowest priority), then the regions in reverse order of Ericson's tests, so
    # that where several apply the first of his tests wins.
    den = va + vb + vc
    v = _safe_div(vb, den)
    w = _safe_div(vc, den)
    d43: F = d4 - d3
    d56: F = d5 - d6
    e_bc = (va <= 0.0) & (d43 >= 0.0) & (d56 >= 0.0)
    w_bc = _safe_div(d43, d43 + d56)
    v = np.where(e_bc, 1.0 - w_bc, v)
    w = np.where(e_bc, w_bc, w)
    e_ac = (vb <= 0.0) & (d2 >= 0.0) & (d6 <= 0.0)
    w_ac = _safe_div(d2, d2 - d6)
    v = np.where(e_ac, 0.0, v)
    w = np.where(e_ac, w_ac, w)
    r_c = (d6 >= 0.0) & (d5 <= d6)
    v = np.where(r_c, 0.0, v)
    w = np.where(r_c, 1.0, w)
    e_ab = (vc <= 0.0) & (d1 >= 0.0) & (d3 <= 0.0)
    v_ab = _safe_div(d1, d1 - d3)
    v = np.where(e_ab, v_ab, v)
    w = np.where(e_ab, 0.0, w)
    r_b = (d3 >= 0.0) & (d4 <= d3)
    v = np.where(r_b, 1.0, v)
    w = np.where(r_b, 0.0, w)
    r_a = (d1 <= 0.0) & (d2 <= 0.0)
    v = np.where(r_a, 0.0, v)
    w = np.where(r_a, 0.0, w)
    # A degenerate (zero-area) triangle can leave the face formula outside [0, 1]: clamp.
    v = np.clip(v, 0.0, 1.0)
    w = np.clip(w, 0.0, 1.0 - v)
    face = ~(e_bc | e_ac | r_c | e_ab | r_b | r_a) & (den > 0.0)
    return 1.0 - v - w, v, w, face


def closest_points_segments(p1: F, p2: F, q1: F, q2: F) -> tuple[F, F]:
    """Parameters (s, t) of the closest points p1 + s (p2 - p1), q1 + t (q2 - q1).

    Ericson 2005, section 5.1.9, on (3, K) columns; s, t in [0, 1], shape (K,). Parallel edges get
    s = 0 (one of the closest pairs); zero-length edges are handled as points.
    """
    d1 = p2 - p1
    d2 = q2 - q1
    r = p1 - q1
    a = _dot(d1, d1)
    e = _dot(d2, d2)
    f = _dot(d2, r)
    c = _dot(d1, r)
    b = _dot(d1, d2)
    den = a * e - b * b
    s = np.where(den > 1e-12 * a * e, np.clip(_safe_div(b * f - c * e, den), 0.0, 1.0), 0.0)
    t = _safe_div(b * s + f, e)
    low = t < 0.0
    high = t > 1.0
    s = np.where(low, np.clip(_safe_div(-c, a), 0.0, 1.0), s)
    s = np.where(high, np.clip(_safe_div(b - c, a), 0.0, 1.0), s)
    t = np.clip(t, 0.0, 1.0)
    return s, t


# --- broad phase -------------------------------------------------------------------------------
class SweepGrid:
    """Points hashed into rows of a uniform grid, sorted along the remaining axis.

    The sweep axis ``s`` is the axis along which the points spread most; the two other axes are
    cut into square cells of size ``cell``, and each (u, w) cell column is a *row*. Points are
    sorted once by the composite key ``row * W + (x_s - origin_s)`` (``W`` more than twice the
    spread, so rows never interleave; a dense row index, so there are no hash collisions). A
    box then finds the points of each row it overlaps with two ``searchsorted`` calls, exact
    along the sweep axis. (Rounding of the composite key is monotone in ``x_s``, so it can add
    a point at the very edge of a range but never drop one; the exact test removes it.)
    """

    def __init__(self, points: F, cell: float) -> None:
        """``points`` (3, M) [m]; ``cell`` the cell size of the rows [m] (> 0)."""
        self.points = points
        lo = points.min(axis=1)
        ext = points.max(axis=1) - lo
        s = int(np.argmax(ext))
        u, w = [k for k in range(3) if k != s]
        self.axes = (s, u, w)
        # At most 2^20 rows: keeps the composite key's rounding below 1e-9 of the spread.
        cell = max(cell, math.sqrt(float(ext[u] * ext[w]) / (1 << 20)), 1e-9)
        self.cell = cell
        self.inv = 1.0 / cell
        self.origin = lo
        iu = ((points[u] - lo[u]) * self.inv).astype(np.int64)
        iw = ((points[w] - lo[w]) * self.inv).astype(np.int64)
        self.nu = int(iu.max()) + 1
        self.nw = int(iw.max()) + 1
        self.width = 2.0 * float(ext[s]) + 1.0
        comp = (iu * self.nw + iw) * self.width + (points[s] - lo[s])
        self.order: I = np.argsort(comp, kind="stable").astype(np.intp)
        """Point indices in sorted order, (M,)."""
        self.comp = comp[self.order]
        self.sorted_points: F = np.take(points, self.order, axis=1)
        """The points in sorted order, (3, M)."""
        self.rank: I = np.empty_like(self.order)
        """Position of each point in the sorted order, (M,)."""
        self.rank[self.order] = np.arange(self.order.size, dtype=np.intp)

    def query(self, lo: F, hi: F, pad: F | None = None, symmetric: bool = False
              ) -> tuple[I, I]:
        """All (box, point) pairs where the point's box overlaps ``[lo, hi]`` ((3, B), [m]).

        A point's box is the point grown by ``pad`` (3, M) [m] (a point when ``None``). Each box
        enumerates the rows it overlaps, takes each row's run of points within its extent along
        the sweep axis, expands the runs into pairs with ``repeat``/``arange`` and keeps the
        pairs that pass the exact overlap test. Pairs come ordered by box, then row, then sweep
        coordinate: a fixed order for a given input. Returns (box (K,), point (K,)).

        ``symmetric``: box ``i`` belongs to the grid's own point ``i`` and the overlap relation
        is symmetric, so each pair is wanted once: box ``i`` only takes points after its own
        point in the sorted order (halving the work).
        """
        s, u, w = self.axes
        o = self.origin
        reach = np.zeros(3) if pad is None else pad.max(axis=1)
        qlo = lo - reach[:, None]
        qhi = hi + reach[:, None]
        cu0 = np.clip(np.floor((qlo[u] - o[u]) * self.inv), 0, self.nu - 1).astype(np.int64)
        cu1 = np.clip(np.floor((qhi[u] - o[u]) * self.inv), -1, self.nu - 1).astype(np.int64)
        cw0 = np.clip(np.floor((qlo[w] - o[w]) * self.inv), 0, self.nw - 1).astype(np.int64)
        cw1 = np.clip(np.floor((qhi[w] - o[w]) * self.inv), -1, self.nw - 1).astype(np.int64)
        nw = np.maximum(cw1 - cw0 + 1, 0)
        per_box = np.maximum(cu1 - cu0 + 1, 0) * nw
        box = np.repeat(np.arange(lo.shape[1], dtype=np.intp), per_box)
        local = np.arange(box.size, dtype=np.int64) - np.repeat(np.cumsum(per_box) - per_box,
                                                                per_box)
        nwb = nw.take(box)
        base = ((cu0.take(box) + local // nwb) * self.nw + (cw0.take(box) + local % nwb)
                ) * self.width
        x0 = np.maximum(qlo[s] - o[s], 0.0).take(box)
        x1 = np.minimum(qhi[s] - o[s], self.width - 1.0).take(box)
        start = np.searchsorted(self.comp, base + x0, "left")
        stop = np.searchsorted(self.comp, base + x1, "right")
        if symmetric:
            start = np.maximum(start, self.rank.take(box) + 1)
        count = np.maximum(stop - start, 0)
        pair_box = np.repeat(box, count)
        # Positions in the sorted order: runs of consecutive entries, read in sequence.
        offs = np.arange(pair_box.size, dtype=np.int64) - np.repeat(
            np.cumsum(count) - count - start, count)
        pad_sorted = None if pad is None else np.take(pad, self.order, axis=1)
        for k in (u, w, s):  # exact overlap test, one axis at a time on the survivors
            x = self.sorted_points[k].take(offs)
            if pad_sorted is None:
                keep = (x >= lo[k].take(pair_box)) & (x <= hi[k].take(pair_box))
            else:
                p = pad_sorted[k].take(offs)
                keep = (x + p >= lo[k].take(pair_box)) & (x - p <= hi[k].take(pair_box))
            pair_box, offs = pair_box[keep], offs[keep]
        return pair_box, self.order.take(offs)


def _not_in(keys: NDArray[np.int64], table: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Mask of ``keys`` absent from the sorted ``table``."""
    if table.size == 0:
        return np.ones(keys.shape, dtype=bool)
    slot = np.minimum(np.searchsorted(table, keys), table.size - 1)
    return table[slot] != keys


def _sorted_pairs(a: I, b: I, width: int) -> tuple[I, I]:
    """Pairs (a, b) in the order of the key ``a * width + b``: a list's order then depends only
    on its content, whether it was built at once or updated in parts."""
    order = np.argsort(a.astype(np.int64) * width + b, kind="stable")
    return a.take(order), b.take(order)


@dataclass(frozen=True)
class _TriangleBoxes:
    """Corners (3, T) each, boxes grown by a radius (3, T) and bounding spheres of triangles."""

    a: F
    b: F
    c: F
    lo: F
    hi: F
    centre: F
    radius: F

    @staticmethod
    def of(P: F, tri: I, grow: float) -> _TriangleBoxes:
        a, b, c = _col(P, tri[0]), _col(P, tri[1]), _col(P, tri[2])
        centre, radius = _triangle_spheres(a, b, c)
        return _TriangleBoxes(a=a, b=b, c=c, lo=np.minimum(np.minimum(a, b), c) - grow,
                              hi=np.maximum(np.maximum(a, b), c) + grow, centre=centre,
                              radius=radius)

    def cell(self) -> float:
        """Row size of a :class:`SweepGrid` searched with these boxes [m]."""
        return CELL_SCALE * float((self.hi - self.lo).mean())


@dataclass(frozen=True)
class _EdgeBoxes:
    """Midpoints (3, E) and half extents (3, E) of edges."""

    mid: F
    half: F

    @staticmethod
    def of(P: F, e: I) -> _EdgeBoxes:
        p, q = _col(P, e[0]), _col(P, e[1])
        return _EdgeBoxes(mid=0.5 * (p + q), half=0.5 * np.abs(p - q))

    def cell(self, grow: float) -> float:
        """Row size of a :class:`SweepGrid` of these midpoints searched with the boxes grown
        by ``grow`` [m]."""
        return CELL_SCALE * float((2.0 * (self.half + grow)).mean())


# --- the self-collision stage ------------------------------------------------------------------
@dataclass
class SelfCollisionStats:
    """Counters and timings of the self-collision stage, summed since the last ``reset``."""

    substeps: int = 0
    rebuilds: int = 0
    """Full builds of the candidate lists (at most one per substep)."""
    partial_rebuilds: int = 0
    """Partial updates of the lists (the movers' pairs only; at most one per substep)."""
    refreshed: int = 0
    """Particles whose pairs a partial update searched again (summed)."""
    point_triangle_candidates: int = 0
    edge_edge_candidates: int = 0
    point_triangle_contacts: int = 0
    """Point-triangle contacts projected, summed over iterations and substeps."""
    edge_edge_contacts: int = 0
    clamped: int = 0
    """Particle speeds clamped (summed over substeps)."""
    reverted: int = 0
    """Particles put back to their substep start by the fail-safe (summed over calls)."""
    seconds: dict[str, float] = field(default_factory=lambda: {
        "hash": 0.0, "candidates": 0.0, "point_triangle": 0.0, "edge_edge": 0.0})

    def reset(self) -> None:
        fresh = SelfCollisionStats()
        self.__dict__.update(fresh.__dict__)

    def frame_extra(self) -> dict[str, float]:
        """Per-frame numbers for :attr:`FrameStats.extra` (candidates are per substep)."""
        n = max(self.substeps, 1)
        return {
            "self_pt_candidates": self.point_triangle_candidates / n,
            "self_ee_candidates": self.edge_edge_candidates / n,
            "self_pt_contacts": float(self.point_triangle_contacts),
            "self_ee_contacts": float(self.edge_edge_contacts),
            "self_clamped": float(self.clamped),
            "self_rebuilds": float(self.rebuilds),
            "self_partial_rebuilds": float(self.partial_rebuilds),
            "self_reverted": float(self.reverted),
        }


@dataclass(frozen=True)
class _Contacts:
    """Geometry of K pairs for the contact response (all arrays column-wise)."""

    idx: I
    """The four particles of each pair, (4, K): vertex and corners, or the two edges' ends."""
    coef: F
    """Gradient coefficients, (4, K): x_A - x_B = sum_k coef_k x_k (1, -u, -v, -w for a vertex
    and triangle; 1 - s, s, s' - 1, -s' for two edges)."""
    diff: F
    """x_A - x_B now, (3, K) [m]."""
    dist2: F
    """|diff|^2, (K,) [m^2]."""
    diff0: F
    """x_A - x_B at the start of the substep with the same parameters, (3, K) [m] (for the
    slip of friction)."""
    normal: F
    """Unit geometric normal now, (3, K): the face normal, or the edges' cross product."""
    side0: F
    """+1 or -1: the side of the geometric normal that A was on at the start of the substep,
    (K,); 0 where the pair has no side (a vertex nearest to an edge or corner of the
    triangle)."""
    rows: I
    """Index of each pair among the pairs within the band that it was found in, (K,)."""


#: Skip pairs whose particles have not moved enough since their last evaluation to matter
#: (:class:`_Tracked`); False evaluates every pair in every pass (same result, for tests).
SKIP_UNCHANGED = True

ContactFn = Callable[[F, F, Quad, float], tuple[I, F, "_Contacts | None"]]


@dataclass
class _Tracked:
    """One family's candidate pairs during a substep's narrow phases, with what their last
    evaluation found, so that a pass evaluates only the pairs that can have changed.

    ``moved`` (N,) sums the length of every move a particle made since the substep's first
    narrow phase (contact corrections, fail-safe reverts, the solver's constraints between
    iterations), so a pair's relative displacement since its last evaluation is at most
    ``2 (max_k moved_k - base)``, ``base`` the least ``moved`` of its particles then. Its
    distance, and a sided pair's signed distance (the side cannot change without the pair
    passing through zero distance), have changed by no more than that. A pair is evaluated
    again once that bound reaches its *slack*: for a pair within the crossing band, its signed
    distance less the thickness (the fail-safe: its distance; crossed: always); outside the
    band, its distance (or a lower bound, from bounding spheres) less the band.
    """

    pairs: Quad
    contact_slack: F
    """[m]; -inf: evaluate in the next pass."""
    cross_slack: F
    """[m], for the fail-safe's search for crossed pairs."""
    base: F
    """Least ``moved`` of the pair's particles at its last evaluation [m]."""

    @staticmethod
    def of(pairs: Quad, bound: F, band: float) -> _Tracked:
        """Pairs with a lower bound on their distances (K,) [m]: those within the band are
        evaluated in the first pass."""
        slack = np.where(bound < band, -np.inf, bound - band)
        return _Tracked(pairs=pairs, contact_slack=slack, cross_slack=slack.copy(),
                        base=np.zeros(slack.size))

    def evaluate(self, fn: ContactFn, P: F, X: F, band: float, t: float, moved: F,
                 crossing: bool) -> tuple[_Contacts, F, F] | None:
        """Evaluate (``fn``) the pairs that may be contacts (``crossing``: may be crossed),
        remember what was found, and return the geometry of those within the band with their
        contact normals and signed distances (:func:`_contact_normal`), in list order."""
        a, b, c, d = self.pairs
        if SKIP_UNCHANGED:
            reach = np.maximum(np.maximum(moved.take(a), moved.take(b)),
                               np.maximum(moved.take(c), moved.take(d))) - self.base
            idx = np.flatnonzero(2.0 * reach >= (self.cross_slack if crossing
                                                 else self.contact_slack))
        else:
            idx = np.arange(a.size)
        ea, eb, ec, ed = a.take(idx), b.take(idx), c.take(idx), d.take(idx)
        near, dist2, contacts = fn(P, X, (ea, eb, ec, ed), band)
        unsigned = np.sqrt(dist2)
        self.contact_slack[idx] = unsigned - band
        self.cross_slack[idx] = unsigned - band
        self.base[idx] = np.minimum(np.minimum(moved.take(ea), moved.take(eb)),
                                    np.minimum(moved.take(ec), moved.take(ed)))
        found = None
        if near.size:
            k = idx.take(near)
            u = unsigned.take(near)
            signed = u.copy()
            if contacts is not None:
                normal, their_signed = _contact_normal(contacts, t)
                signed[contacts.rows] = their_signed
                found = (contacts, normal, their_signed)
            self.contact_slack[k] = signed - t
            self.cross_slack[k] = np.where(signed < 0.0, -np.inf, u)
        return found


@dataclass(frozen=True)
class _Exclusions:
    """Non-incident pairs closer than ``REST_EXCLUSION t`` in the rest shape, as sorted keys."""

    point_triangle: NDArray[np.int64]
    """vertex * T + triangle."""
    edge_edge: NDArray[np.int64]
    """edge_i * E + edge_j, i < j."""


class SelfCollision:
    """Self-collision of one cloth model: broad phase per substep, contacts per iteration.

    Built once from the static :class:`~pbdcloth.model.ClothModel`; positions are passed in
    component-major (3, N) [m], as the numpy backend holds them, and modified in place.
    """

    def __init__(self, model: ClothModel, tuning: SelfCollisionTuning = DEFAULT_TUNING) -> None:
        self.tuning = tuning
        """The method's constants (:class:`~pbdcloth.selfcollision.tuning.SelfCollisionTuning`)."""
        self.particle_count = model.particle_count
        tris = model.topology.triangles.astype(np.intp)
        edges = model.topology.edges.astype(np.intp)
        self.triangles: I = np.ascontiguousarray(tris.T)
        """Corner indices, (3, T)."""
        self.edges: I = np.ascontiguousarray(edges.T)
        """End indices, (2, E)."""
        self.inv_mass: F = model.inv_mass
        """Inverse masses [1/kg], (N,); 0 on pins."""
        self._free_idx: I = np.flatnonzero(model.inv_mass > 0.0).astype(np.intp)
        self.rest: F = np.ascontiguousarray(model.mesh.positions.T)
        """Rest positions [m], (3, N)."""
        self._exclusions: dict[float, _Exclusions] = {}
        self.stats = SelfCollisionStats()
        self._pt: tuple[I, I] | None = None
        self._ee: tuple[I, I] | None = None
        self._ref: F | None = None
        """Reference positions of the Verlet lists [m], (3, N)."""
        self._built_with: tuple[float, float] = (0.0, 0.0)
        self._skin = 0.0
        """Skin of the current lists [m]."""
        self._gaps: dict[float, float] = {}
        self._narrow: tuple[_Tracked, _Tracked, F, F] | None = None
        """The substep's narrow-phase state: tracked pairs of both families, ``moved`` and the
        positions at the end of the last narrow phase (None until the substep's first)."""

    # --- predict ---------------------------------------------------------------------------
    def clamp_velocity(self, V: F, h: float, thickness: float, clamp: float) -> int:
        """Limit every free particle's velocity relative to the mean velocity of the free
        particles to ``clamp * thickness / h`` (V (3, N), modified in place).

        Two particles then close in on each other by at most ``2 clamp thickness`` per substep,
        while the cloth as a whole still falls, flies or turns slowly at any speed. Returns how
        many particles were clamped.
        """
        free = self._free_idx
        if free.size == 0:
            return 0
        vmax = clamp * thickness / h
        Vf = _col(V, free)
        mean = Vf.mean(axis=1, keepdims=True)
        dev = Vf - mean
        speed2 = _dot(dev, dev)
        over = np.flatnonzero(speed2 > vmax * vmax)
        if over.size:
            idx = free[over]
            V[:, idx] = mean + _col(dev, over) * (vmax / np.sqrt(speed2[over]))
        self.stats.clamped += int(over.size)
        return int(over.size)

    # --- broad phase -----------------------------------------------------------------------
    def list_radii(self, thickness: float, clamp: float) -> tuple[float, float]:
        """(r, skin) of this model's candidate lists [m]: :func:`list_radii` with the rest gap."""
        return list_radii(thickness, clamp, self.rest_gap(thickness))

    def begin_substep(self, P: F, thickness: float, clamp: float) -> bool:
        """Candidate pairs for the coming substep from the predicted positions P (3, N).

        The lists are Verlet lists kept against per-particle reference positions ``R``: every
        pair that is not listed was at least ``r + skin`` apart at the reference positions
        (module docstring, step 2). A pair's separation differs from that by at most the sum
        of two of its particles' deviations ``|(P_k - R_k) - m|``, for any common ``m`` (here
        the mean displacement). Particles that deviate by more than ``skin / 2`` are
        *movers*: their references become ``P - m`` and exactly their pairs are searched again
        (a partial update); when they are more than ``PARTIAL_LIMIT`` of all particles, or on
        the first substep, all lists are built anew.

        The skin of a full build follows the motion: the large skin of :meth:`list_radii` while
        at most ``PARTIAL_LIMIT`` of the particles deviate by more than half of it (partial
        updates will follow, and a larger skin means fewer of them), else the smallest skin,
        the rest exclusion radius (the cloth is crumpling and the lists will be built anew at
        the next substep anyway: the fewer pairs they hold the better). Returns True when the
        lists changed.
        """
        st = self.stats
        st.substeps += 1
        self._narrow = None
        r, large = self.list_radii(thickness, clamp)
        small = list_radii(thickness, clamp)[1]
        n = self.particle_count
        t0 = time.perf_counter()
        full = (self._pt is None or self._built_with != (thickness, clamp)
                or self._ref is None)
        skin = large
        movers = np.zeros(0, dtype=bool)
        if not full:
            assert self._ref is not None
            d = P - self._ref
            m = d.mean(axis=1, keepdims=True)
            d -= m
            dev2 = _dot(d, d)
            movers = dev2 > 0.25 * self._skin * self._skin
            moved = int(np.count_nonzero(movers))
            full = moved > PARTIAL_LIMIT * n
            if full:
                fast = np.count_nonzero(dev2 > 0.25 * large * large) > PARTIAL_LIMIT * n
                skin = small if fast else large
            elif moved:
                self._ref[:, movers] = _col(P, np.flatnonzero(movers)) - m
        st.seconds["candidates"] += time.perf_counter() - t0
        excl = self.exclusions(thickness)
        if full:
            self._ref = P.copy()
            self._built_with = (thickness, clamp)
            self._skin = skin
            v, t, _ = self._pt_pairs(P, r + skin, excl.point_triangle)
            i, j, _ = self._ee_pairs(P, r + skin, excl.edge_edge)
            self._pt = _sorted_pairs(v, t, self.triangles.shape[1])
            self._ee = _sorted_pairs(i, j, self.edges.shape[1])
            st.rebuilds += 1
        elif movers.any():
            assert self._ref is not None
            self._update_lists(self._ref, movers, r + self._skin, excl)
            st.partial_rebuilds += 1
            st.refreshed += int(np.count_nonzero(movers))
        assert self._pt is not None and self._ee is not None
        st.point_triangle_candidates += int(self._pt[0].size)
        st.edge_edge_candidates += int(self._ee[0].size)
        return full or bool(movers.any())

    def _update_lists(self, R: F, movers: NDArray[np.bool_], radius: float,
                      excl: _Exclusions) -> None:
        """Partial update at the reference positions R (3, N): drop every listed pair that
        involves a mover, then list again every pair that involves one and is closer than
        ``radius``. The result is the list a full build at R would give (tested)."""
        assert self._pt is not None and self._ee is not None
        sec = self.stats.seconds
        t0 = time.perf_counter()
        built = 0.0  # seconds spent sorting points into grids ("hash"); the rest: "candidates"
        tri, e = self.triangles, self.edges
        # Point-triangle: triangles with a moving corner against all vertices, moving vertices
        # against the other triangles (their grown boxes as padded points).
        tri_mv = movers.take(tri[0]) | movers.take(tri[1]) | movers.take(tri[2])
        v_old, t_old = self._pt
        keep = np.flatnonzero(~(movers.take(v_old) | tri_mv.take(t_old)))
        geo = _TriangleBoxes.of(R, tri, radius)
        tm = np.flatnonzero(tri_mv)
        vm = np.flatnonzero(movers)
        tn = np.flatnonzero(~tri_mv)
        cell = geo.cell()
        found_t, found_v = [], []
        if tm.size:
            tg = time.perf_counter()
            grid = SweepGrid(R, cell)
            built += time.perf_counter() - tg
            k, v = grid.query(_col(geo.lo, tm), _col(geo.hi, tm))
            found_t.append(tm.take(k))
            found_v.append(v)
        if vm.size and tn.size:
            lo, hi = _col(geo.lo, tn), _col(geo.hi, tn)
            tg = time.perf_counter()
            grid = SweepGrid(0.5 * (lo + hi), cell)
            built += time.perf_counter() - tg
            k, m = grid.query(_col(R, vm), _col(R, vm), pad=0.5 * (hi - lo))
            found_t.append(tn.take(m))
            found_v.append(vm.take(k))
        empty = np.zeros(0, dtype=np.intp)
        t_new = np.concatenate(found_t) if found_t else empty
        v_new = np.concatenate(found_v) if found_v else empty
        v_new, t_new, _ = self._pt_filter(R, geo, t_new, v_new, radius, excl.point_triangle)
        self._pt = _sorted_pairs(np.concatenate([v_old.take(keep), v_new]),
                                 np.concatenate([t_old.take(keep), t_new]), tri.shape[1])
        # Edge-edge: edges with a moving end against all edges (each pair of two such edges
        # once).
        edge_mv = movers.take(e[0]) | movers.take(e[1])
        i_old, j_old = self._ee
        keep = np.flatnonzero(~(edge_mv.take(i_old) | edge_mv.take(j_old)))
        me = np.flatnonzero(edge_mv)
        i_new = j_new = empty
        eg = _EdgeBoxes.of(R, e)
        if me.size:
            tg = time.perf_counter()
            grid = SweepGrid(eg.mid, eg.cell(radius))
            built += time.perf_counter() - tg
            mid, half = _col(eg.mid, me), _col(eg.half, me)
            k, j = grid.query(mid - half - radius, mid + half + radius, pad=eg.half)
            i = me.take(k)
            ok = (j != i) & (~edge_mv.take(j) | (i < j))
            i_new, j_new = i[ok], j[ok]
        i_new, j_new, _ = self._ee_filter(R, eg, i_new, j_new, radius, excl.edge_edge)
        self._ee = _sorted_pairs(np.concatenate([i_old.take(keep), i_new]),
                                 np.concatenate([j_old.take(keep), j_new]), e.shape[1])
        sec["hash"] += built
        sec["candidates"] += time.perf_counter() - t0 - built

    def _point_triangle_candidates(self, P: F, r: float, excluded: NDArray[np.int64]
                                   ) -> tuple[I, I]:
        """(vertex, triangle) pairs closer than r, neighbours excluded (a full build)."""
        v, t, _ = self._pt_pairs(P, r, excluded)
        return v, t

    def _edge_edge_candidates(self, P: F, r: float, excluded: NDArray[np.int64]
                              ) -> tuple[I, I]:
        """(edge i, edge j), i < j, closer than r, neighbours excluded (a full build)."""
        i, j, _ = self._ee_pairs(P, r, excluded)
        return i, j

    def _pt_pairs(self, P: F, r: float, excluded: NDArray[np.int64]) -> tuple[I, I, F]:
        """(vertex, triangle, squared distance) of the pairs closer than r: each triangle's
        box grown by r queries the vertices (:class:`SweepGrid`), then :meth:`_pt_filter`."""
        sec = self.stats.seconds
        t0 = time.perf_counter()
        geo = _TriangleBoxes.of(P, self.triangles, r)
        grid = SweepGrid(P, geo.cell())
        t1 = time.perf_counter()
        t_idx, v_idx = grid.query(geo.lo, geo.hi)
        out = self._pt_filter(P, geo, t_idx, v_idx, r, excluded)
        sec["hash"] += t1 - t0
        sec["candidates"] += time.perf_counter() - t1
        return out

    def _pt_filter(self, P: F, geo: _TriangleBoxes, t_idx: I, v_idx: I, r: float,
                   excluded: NDArray[np.int64]) -> tuple[I, I, F]:
        """Of the (triangle, vertex) pairs found in the grid, cheapest test first: not a
        corner, within r of the triangle's bounding sphere, closest point within r, not in the
        rest-shape exclusions. Returns (vertex, triangle, squared distance)."""
        tri = self.triangles
        corners = _col(tri, t_idx)
        keep = (corners[0] != v_idx) & (corners[1] != v_idx) & (corners[2] != v_idx)
        t_idx, v_idx = t_idx[keep], v_idx[keep]
        keep = _within(_col(P, v_idx), _col(geo.centre, t_idx), geo.radius.take(t_idx) + r)
        t_idx, v_idx = t_idx[keep], v_idx[keep]
        p, a, b, c = _col(P, v_idx), _col(geo.a, t_idx), _col(geo.b, t_idx), _col(geo.c, t_idx)
        u, vv, w, _ = closest_point_triangle(p, a, b, c)
        d = p - (u * a + vv * b + w * c)
        d2 = _dot(d, d)
        keep = d2 < r * r
        t_idx, v_idx, d2 = t_idx[keep], v_idx[keep], d2[keep]
        if excluded.size:
            keep = _not_in(v_idx.astype(np.int64) * tri.shape[1] + t_idx, excluded)
            t_idx, v_idx, d2 = t_idx[keep], v_idx[keep], d2[keep]
        return v_idx, t_idx, d2

    def _ee_pairs(self, P: F, r: float, excluded: NDArray[np.int64]) -> tuple[I, I, F]:
        """(edge i, edge j, squared distance), i < j, of the edge pairs closer than r.

        Edge midpoints go into the grid with their half extents as pads; each edge's box grown
        by r finds the edges whose own boxes overlap it (each pair once), then
        :meth:`_ee_filter`.
        """
        sec = self.stats.seconds
        t0 = time.perf_counter()
        eg = _EdgeBoxes.of(P, self.edges)
        grid = SweepGrid(eg.mid, eg.cell(r))
        t1 = time.perf_counter()
        i, j = grid.query(eg.mid - eg.half - r, eg.mid + eg.half + r, pad=eg.half,
                          symmetric=True)
        out = self._ee_filter(P, eg, i, j, r, excluded)
        sec["hash"] += t1 - t0
        sec["candidates"] += time.perf_counter() - t1
        return out

    def _ee_filter(self, P: F, eg: _EdgeBoxes, i: I, j: I, r: float,
                   excluded: NDArray[np.int64]) -> tuple[I, I, F]:
        """Of the edge pairs found in the grid (ordered to i < j here), cheapest test first:
        no shared vertex, bounding spheres within r, closest points within r, not in the
        rest-shape exclusions. Returns (i, j, squared distance)."""
        e = self.edges
        i, j = np.minimum(i, j), np.maximum(i, j)
        ei, ej = _col(e, i), _col(e, j)
        keep = (ei[0] != ej[0]) & (ei[0] != ej[1]) & (ei[1] != ej[0]) & (ei[1] != ej[1])
        i, j = i[keep], j[keep]
        reach = np.sqrt(_dot(eg.half, eg.half))
        keep = _within(_col(eg.mid, i), _col(eg.mid, j), reach.take(i) + reach.take(j) + r)
        i, j = i[keep], j[keep]
        p1, p2, q1, q2 = (_col(P, e[k].take(m)) for m in (i, j) for k in (0, 1))
        s, s2 = closest_points_segments(p1, p2, q1, q2)
        d = (p1 + s * (p2 - p1)) - (q1 + s2 * (q2 - q1))
        d2 = _dot(d, d)
        keep = d2 < r * r
        i, j, d2 = i[keep], j[keep], d2[keep]
        if excluded.size:
            keep = _not_in(i.astype(np.int64) * e.shape[1] + j, excluded)
            i, j, d2 = i[keep], j[keep], d2[keep]
        return i, j, d2

    # --- rest shape --------------------------------------------------------------------------
    def exclusions(self, thickness: float) -> _Exclusions:
        """Non-incident pairs closer than ``REST_EXCLUSION * thickness`` at rest (cached)."""
        found = self._exclusions.get(thickness)
        if found is not None:
            return found
        seconds = dict(self.stats.seconds)  # a one-off cost, kept out of the per-phase timings
        r = REST_EXCLUSION * thickness
        none = np.zeros(0, dtype=np.int64)
        v, t, _ = self._pt_pairs(self.rest, r, none)
        pt_keys = np.unique(v.astype(np.int64) * self.triangles.shape[1] + t)
        i, j, _ = self._ee_pairs(self.rest, r, none)
        ee_keys = np.unique(i.astype(np.int64) * self.edges.shape[1] + j)
        found = _Exclusions(point_triangle=pt_keys, edge_edge=ee_keys)
        self._exclusions[thickness] = found
        self.stats.seconds.update(seconds)
        return found

    def rest_gap(self, thickness: float) -> float:
        """The smallest rest distance [m] of a pair that is not excluded (cached per
        thickness), looked for up to the distance beyond which :func:`list_radii` no longer
        uses it, ``(3 / 2 + MAX_SKIN) t / GAP_FRACTION`` (returned when nothing is closer)."""
        found = self._gaps.get(thickness)
        if found is not None:
            return found
        excl = self.exclusions(thickness)
        seconds = dict(self.stats.seconds)
        reach = (1.5 + MAX_SKIN) * thickness / GAP_FRACTION
        d2 = np.concatenate([self._pt_pairs(self.rest, reach, excl.point_triangle)[2],
                             self._ee_pairs(self.rest, reach, excl.edge_edge)[2]])
        gap = float(np.sqrt(d2.min())) if d2.size else reach
        self._gaps[thickness] = gap
        self.stats.seconds.update(seconds)
        return gap

    # --- narrow phase ----------------------------------------------------------------------
    def project(self, P: F, X: F, thickness: float, friction: float) -> int:
        """Push contacts of P (3, N, modified in place) apart to ``thickness``, with friction.

        ``X`` (3, N) are the positions at the start of the substep (they fix each pair's side and
        the slip for friction). Up to ``PASSES`` Jacobi passes over the pairs within the
        crossing band ``CROSSING_BAND * thickness``, stopping once no contact is deeper than
        ``RESOLVED * thickness``; pairs still on the wrong side after that are undone by the
        fail-safe (:meth:`_revert_crossed`). Returns the number of contacts projected (summed
        over passes).

        A pass evaluates only the pairs that can have changed (:class:`_Tracked`, kept from one
        iteration of the substep to the next): at the substep's first call the pairs whose
        bounding spheres come within the band; then those whose particles have moved by at
        least half their slack since their last evaluation. The contacts found, and so the
        result, are those of evaluating every pair (tested).
        """
        if self._pt is None or self._ee is None:
            raise RuntimeError("SelfCollision.project called before begin_substep")
        t = thickness
        band = CROSSING_BAND * t
        st = self.stats
        t0 = time.perf_counter()
        if self._narrow is None:  # the substep's first narrow phase
            pt = self._tracked_point_triangle(P, band)
            t1 = time.perf_counter()
            ee = self._tracked_edge_edge(P, band)
            moved = np.zeros(self.particle_count)
        else:  # later iterations: add what the solver's constraints moved since
            pt, ee, moved, last = self._narrow
            step = P - last
            moved += np.sqrt(_dot(step, step))
            t1 = time.perf_counter()
        st.seconds["point_triangle"] += t1 - t0
        st.seconds["edge_edge"] += time.perf_counter() - t1
        total = 0
        for _ in range(PASSES):
            t0 = time.perf_counter()
            found = pt.evaluate(self._point_triangle_contacts, P, X, band, t, moved, False)
            n_pt, deep_pt = self._respond(P, found, t, friction, moved)
            t1 = time.perf_counter()
            found = ee.evaluate(self._edge_edge_contacts, P, X, band, t, moved, False)
            n_ee, deep_ee = self._respond(P, found, t, friction, moved)
            st.seconds["point_triangle"] += t1 - t0
            st.seconds["edge_edge"] += time.perf_counter() - t1
            st.point_triangle_contacts += n_pt
            st.edge_edge_contacts += n_ee
            total += n_pt + n_ee
            if max(deep_pt, deep_ee) <= RESOLVED * t:
                break
        if total:  # some pair may still be on the wrong side
            t0 = time.perf_counter()
            st.reverted += self._revert_crossed(P, X, pt, ee, band, t, moved)
            st.seconds["point_triangle"] += time.perf_counter() - t0
        self._narrow = (pt, ee, moved, P.copy())
        return total

    def _revert_crossed(self, P: F, X: F, pt: _Tracked, ee: _Tracked, band: float, t: float,
                        moved: F) -> int:
        """Fail-safe: put the free particles of every pair still on the wrong side back where
        they were at the start of the substep, and repeat (a reverted particle can leave its
        other pairs crossed) up to ``REVERT_ROUNDS`` times.

        The start of the substep had no crossed pair, so reverting every particle would restore
        a valid state; reverting only those involved restores one in a few rounds. Reverted
        particles lose this substep's motion (their velocity becomes zero): an inelastic stop
        where the solver's constraints would otherwise pull the cloth through itself.
        Pairs are evaluated as in :meth:`project`, here skipped while they cannot have reached
        the other side (moved by less than half their unsigned distance). Returns the number of
        particles reverted.
        """
        free = self.inv_mass > 0.0
        reverted = np.zeros(self.particle_count, dtype=bool)
        for _ in range(REVERT_ROUNDS):
            bad = []
            for fam, fn in ((pt, self._point_triangle_contacts), (ee, self._edge_edge_contacts)):
                found = fam.evaluate(fn, P, X, band, t, moved, True)
                if found is not None:
                    contacts, _, signed = found
                    bad.append(contacts.idx[:, signed < 0.0].reshape(-1))
            idx = np.unique(np.concatenate(bad)) if bad else np.zeros(0, dtype=np.intp)
            idx = idx[free.take(idx) & ~reverted.take(idx)]
            if idx.size == 0:
                break
            back = _col(X, idx) - _col(P, idx)
            moved[idx] += np.sqrt(_dot(back, back))
            P[:, idx] = _col(X, idx)
            reverted[idx] = True
        return int(np.count_nonzero(reverted))

    def _tracked_point_triangle(self, P: F, band: float) -> _Tracked:
        """The listed (vertex, corners a, b, c) with a lower bound on their distances, the
        vertex's distance to the triangle's bounding sphere."""
        assert self._pt is not None
        v, tri = self._pt
        T = self.triangles
        centre, radius = _triangle_spheres(_col(P, T[0]), _col(P, T[1]), _col(P, T[2]))
        gap = _col(P, v) - _col(centre, tri)
        bound = np.sqrt(_dot(gap, gap)) - radius.take(tri)
        pairs = (v, T[0].take(tri), T[1].take(tri), T[2].take(tri))
        return _Tracked.of(pairs, bound, band)

    def _tracked_edge_edge(self, P: F, band: float) -> _Tracked:
        """The listed edge pairs (p1, p2, q1, q2) with a lower bound on their distances, that
        of their bounding spheres."""
        assert self._ee is not None
        i, j = self._ee
        E = self.edges
        p, q = _col(P, E[0]), _col(P, E[1])
        mid = 0.5 * (p + q)
        d = p - q
        half = 0.5 * np.sqrt(_dot(d, d))
        gap = _col(mid, i) - _col(mid, j)
        bound = np.sqrt(_dot(gap, gap)) - half.take(i) - half.take(j)
        pairs = (E[0].take(i), E[1].take(i), E[0].take(j), E[1].take(j))
        return _Tracked.of(pairs, bound, band)

    def _point_triangle_contacts(self, P: F, X: F, pairs: Quad, band: float
                                 ) -> tuple[I, F, _Contacts | None]:
        """Closest points of vertex-triangle pairs: (indices of the pairs within the band, the
        squared distances of all pairs, the geometry of the former; its ``rows`` index them)."""
        v, ia, ib, ic = pairs
        none = np.zeros(0, dtype=np.intp)
        if v.size == 0:
            return none, np.zeros(0), None
        p, a, b, c = _col(P, v), _col(P, ia), _col(P, ib), _col(P, ic)
        u, vv, w, face = closest_point_triangle(p, a, b, c)
        diff = p - (u * a + vv * b + w * c)
        dist2 = _dot(diff, diff)
        near = np.flatnonzero(dist2 < band * band)
        if near.size == 0:
            return near, dist2, None
        v, ia, ib, ic = v.take(near), ia.take(near), ib.take(near), ic.take(near)
        u, vv, w, face = u.take(near), vv.take(near), w.take(near), face.take(near)
        a, b, c = _col(a, near), _col(b, near), _col(c, near)
        p0, a0, b0, c0 = _col(X, v), _col(X, ia), _col(X, ib), _col(X, ic)
        diff0 = p0 - (u * a0 + vv * b0 + w * c0)
        # The side is the sign of the signed volume (p - a) . ((b - a) x (c - a)) at the start,
        # which sliding within the plane cannot change; it exists only where the closest point
        # is inside the face (near an edge or corner a vertex can pass round the triangle).
        m = _cross(b - a, c - a)
        m0 = _cross(b0 - a0, c0 - a0)
        side0 = _sign(_dot(p0 - a0, m0)) * _sign(_dot(m0, m))
        side0 = np.where(face, side0, 0.0)
        return near, dist2, _Contacts(
            idx=np.stack([v, ia, ib, ic]), coef=np.stack([np.ones_like(u), -u, -vv, -w]),
            diff=_col(diff, near), dist2=dist2.take(near), diff0=diff0, normal=_unit(m),
            side0=side0, rows=np.arange(near.size))

    def _edge_edge_contacts(self, P: F, X: F, pairs: Quad, band: float
                            ) -> tuple[I, F, _Contacts | None]:
        """Closest points of edge pairs: (indices of the pairs within the band, the squared
        distances of all pairs, the geometry of those near pairs whose closest points are inside
        both edges; its ``rows`` index the near pairs)."""
        a1, a2, b1, b2 = pairs
        none = np.zeros(0, dtype=np.intp)
        if a1.size == 0:
            return none, np.zeros(0), None
        p1, p2, q1, q2 = _col(P, a1), _col(P, a2), _col(P, b1), _col(P, b2)
        s, s2 = closest_points_segments(p1, p2, q1, q2)
        diff = (p1 + s * (p2 - p1)) - (q1 + s2 * (q2 - q1))
        dist2 = _dot(diff, diff)
        near = np.flatnonzero(dist2 < band * band)
        a1, a2, b1, b2 = a1.take(near), a2.take(near), b1.take(near), b2.take(near)
        s, s2 = s.take(near), s2.take(near)
        lo, hi = EDGE_INTERIOR, 1.0 - EDGE_INTERIOR
        inner = np.flatnonzero((s > lo) & (s < hi) & (s2 > lo) & (s2 < hi))
        if inner.size == 0:
            return near, dist2, None
        k = near.take(inner)
        c1, c2, d1, d2 = a1.take(inner), a2.take(inner), b1.take(inner), b2.take(inner)
        s, s2 = s.take(inner), s2.take(inner)
        x1, x2 = _col(X, c1), _col(X, c2)
        y1, y2 = _col(X, d1), _col(X, d2)
        diff0 = (x1 + s * (x2 - x1)) - (y1 + s2 * (y2 - y1))
        # The side is the sign of the signed volume (p1 - q1) . ((p2 - p1) x (q2 - q1)) at the
        # start: the edges' separation along their common normal, which sliding along each
        # other cannot change (corrected when the edges turned past parallel).
        m = _cross(_col(p2 - p1, k), _col(q2 - q1, k))
        m0 = _cross(x2 - x1, y2 - y1)
        side0 = _sign(_dot(x1 - y1, m0)) * _sign(_dot(m0, m))
        return near, dist2, _Contacts(
            idx=np.stack([c1, c2, d1, d2]), coef=np.stack([1.0 - s, s, s2 - 1.0, -s2]),
            diff=_col(diff, k), dist2=dist2.take(k), diff0=diff0, normal=_unit(m), side0=side0,
            rows=inner)

    def _respond(self, P: F, found: tuple[_Contacts, F, F] | None, t: float, mu: float,
                 moved: F | None = None) -> tuple[int, float]:
        """Project the contacts among ``found`` (pairs, their unit normals n (3, K) and signed
        distances (K,), from :meth:`_Tracked.evaluate`): ``C = n . (x_A - x_B) - t >= 0``.

        ``contacts.idx`` (4, K) are the particles and ``contacts.coef`` (4, K) their gradient
        coefficients (x_A - x_B = sum coef_k x_k); ``diff`` = x_A - x_B now, ``diff0`` the same
        at the substep start. Corrections are summed with ``bincount``; their lengths are added
        to ``moved``. Returns (contacts projected, deepest penetration t - signed distance [m]).
        """
        if found is None:
            return 0, 0.0
        contacts, n, signed = found
        contact = np.flatnonzero(signed < t)
        if contact.size == 0:
            return 0, 0.0
        idx, coef = _col(contacts.idx, contact), _col(contacts.coef, contact)
        diff, diff0 = _col(contacts.diff, contact), _col(contacts.diff0, contact)
        n, signed = _col(n, contact), signed.take(contact)
        depth = t - signed  # > 0
        wc = self.inv_mass.take(idx) * coef
        W = (wc * coef).sum(axis=0)
        movable = (W > 0.0) & (_dot(n, n) > 0.0)
        if not movable.all():
            keep = np.flatnonzero(movable)
            if keep.size == 0:
                return 0, 0.0
            idx, wc, W = _col(idx, keep), _col(wc, keep), W.take(keep)
            n, depth, diff, diff0 = _col(n, keep), depth.take(keep), _col(diff, keep), _col(
                diff0, keep)
        # Wanted change of x_A - x_B: the push-out along n, minus the friction-removed slip.
        delta = n * depth
        if mu > 0.0:
            slip = diff - diff0
            slip -= _dot(slip, n) * n
            slip_len = np.sqrt(_dot(slip, slip))
            delta -= slip * np.minimum(_safe_div(mu * depth, slip_len), 1.0)
        # Under-relaxation: divide by the largest contact count of the contact's movable particles.
        n_part = self.particle_count
        flat = idx.reshape(-1)
        moves = wc != 0.0
        count = np.bincount(flat[moves.reshape(-1)], minlength=n_part)
        relax = 1.0 / np.maximum(np.where(moves, count.take(idx), 0).max(axis=0), 1)
        lam = delta * (relax / W)
        corr: F = np.stack([np.bincount(flat, weights=(wc * lam[k]).reshape(-1), minlength=n_part)
                         for k in range(3)])
        P += corr
        if moved is not None:  # the length of each particle's correction, for _Tracked
            moved += np.sqrt(_dot(corr, corr))
        return int(W.size), float(depth.max())


def _contact_normal(c: _Contacts, t: float) -> tuple[F, F]:
    """Unit contact normal (3, K), pointing from B to A on A's start side, and the signed
    distance of A from B along it (K,) [m]; negative when the pair has crossed.

    Pairs with a side (``side0`` != 0) use the geometric normal turned to the start side; the
    others the direction of ``diff`` (their distance is never negative).
    """
    dist = np.sqrt(c.dist2)
    ok = dist > 1e-9 * t
    plain = c.diff * _safe_div(np.ones_like(dist), dist)
    plain = np.where(ok, plain, c.normal)
    sided = c.side0 != 0.0
    n = np.where(sided, c.normal * c.side0, plain)
    return n, _dot(n, c.diff)
