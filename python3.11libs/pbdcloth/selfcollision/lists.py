"""Self-collision candidate lists: sweep grid, rest exclusions, Verlet lists with partial updates.

Candidate pairs (a vertex and a triangle, two edges) are kept in Verlet lists (Verlet 1967, the
neighbour lists of molecular dynamics), against reference positions ``R``: every pair that is
not listed was at least ``r + skin`` apart at ``R``, ``r = (1 + c) t`` (``t`` the thickness,
``c`` the clamp). A pair's separation now differs from that by at most the sum of two of its
particles' deviations ``|(P_k - R_k) - m|`` (``m`` the mean displacement), so while no particle
deviates by more than ``skin / 2`` every pair closer than ``r`` is listed. Particles that do
(*movers*) get new references ``P - m``, and only the pairs that involve a mover are dropped
and searched again (a partial update, which gives exactly the list a full build at ``R`` would;
more than ``partial_limit`` movers, a full build). A cloth settling in folds moves in few
places at a time: at 10k particles in the folded fold scene a few percent of the particles are
movers in a substep.

The skin keeps flat cloth out of the lists: the list radius ``r + skin`` is at least the rest
exclusion radius ``rest_exclusion t`` (skin >= (pi / 2 - 1 - c) t >= 0.07 t) and at most
``gap_fraction`` times the rest gap, the smallest rest distance of a pair that is not excluded
(:meth:`CandidateLists.rest_gap`; capped at ``r + max_skin t``). A full build takes the larger
skin when partial updates will follow, the smaller while the cloth crumples (more than
``partial_limit`` of it moving more than half the larger skin per build): the lists are then
built anew every substep, and the fewer pairs they hold the better. Pairs as far apart as at
rest (or strained by less than 10 %) are then never listed, so a cloth that is flat or
unstrained has no candidates at all and only folded or compressed regions have any. (A radius
past the gap would list the ring of mesh neighbours at the gap on every flat patch, which at
10k particles is ~400k pairs, nearly all of the narrow phase's work.)

A search joins boxes and points with :class:`SweepGrid`: point-triangle takes each triangle's
box grown by the radius against the vertices (a partial update also each moving vertex against
the other triangles' grown boxes), edge-edge each edge's box against the other edges' boxes
(midpoints with their half extents). Then, cheapest test first: neighbours removed, bounding
spheres within the radius, closest points within it, rest exclusions. Lists are kept in the
order of their pair keys, so their order depends only on their content.

Why not a hash built once per frame with a radius covering the frame's motion (Ten Minute
Physics)? With ``n`` substeps that radius is ``t + 2 n c t``, about ``n`` times ``r``, and the
candidates of a flat cloth grow with its square: at 10k particles and 30 substeps, tens of
millions of pairs. Verlet lists are updated where the motion requires it.

Neighbours, never listed: a vertex and a triangle it is a corner of, two edges that share a
vertex, and any pair closer than ``rest_exclusion t = pi t / 2`` in the rest shape
(:meth:`CandidateLists.exclusions`; why, in :mod:`.stage`). Names in ``code`` are fields of
:class:`~pbdcloth.selfcollision.tuning.SelfCollisionTuning`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..arrays import I64, B, F, I
from ..cloth.model import ClothModel
from .geometry import (
    closest_point_triangle,
    closest_points_segments,
    columns,
    dot,
    triangle_spheres,
    within,
)
from .stats import SelfCollisionStats
from .tuning import SelfCollisionTuning

__all__ = ["CandidateLists", "EdgeBoxes", "Exclusions", "RowBounds", "SortedRows",
           "SweepGrid", "TriangleBoxes", "list_radii", "row_runs"]


def list_radii(thickness: float, clamp: float, tuning: SelfCollisionTuning,
               gap: float | None = None) -> tuple[float, float]:
    """(r, skin) of the candidate lists [m] (module docstring).

    ``r = (1 + c) t`` must be listed at every substep. The list radius ``r + skin`` is at least
    the rest exclusion radius ``rest_exclusion t`` (so skin >= (pi / 2 - 1 - c) t >= 0.07 t);
    given the model's rest ``gap`` (:meth:`CandidateLists.rest_gap`) it grows to
    ``gap_fraction gap``, at most ``r + max_skin t``: pairs that are as far apart as at rest
    (or strained by less than 10 %) are then still not listed.
    """
    r = (1.0 + clamp) * thickness
    radius = tuning.rest_exclusion * thickness
    if gap is not None:
        radius = max(radius, min(tuning.gap_fraction * gap, r + tuning.max_skin * thickness))
    return r, radius - r


class SortedRows(Protocol):
    """A grid of rows of sorted composite keys (:class:`SweepGrid`, and the colliders' box
    grid): sweep and row axes, origin [m], 1 / cell size [1/m], rows along u and w, the key
    width W and the keys ``row * W + (x_s - origin_s)`` in sorted order."""

    @property
    def axes(self) -> tuple[int, int, int] | None: ...
    origin: F
    inv: float
    nu: int
    nw: int
    width: float
    comp: F


class RowBounds:
    """The extent of a :class:`SortedRows` grid's boxes row by row: per row (index ``iu nw +
    iw``), the smallest low and largest high corner of its boxes on each axis, (3, R) [m]
    (+inf / -inf for an empty row), and its largest half extent along the sweep axis plus a
    pad, (R,) [m]."""

    def __init__(self, row: I64, lo: F, hi: F, half_s: F, rows: int,
                 pad: float) -> None:
        """``row`` (M,): each box's row, ascending; ``lo``, ``hi`` (3, M): the boxes' corners
        (computed as the exact test computes them); ``half_s`` (M,); ``rows``: the row count;
        ``pad`` [m]."""
        self.lo = np.full((3, rows), np.inf)
        self.hi = np.full((3, rows), -np.inf)
        self.half_s = np.zeros(rows)
        if row.size:
            start = np.flatnonzero(np.concatenate(([True], row[1:] != row[:-1])))
            at = row.take(start)
            self.lo[:, at] = np.minimum.reduceat(lo, start, axis=1)
            self.hi[:, at] = np.maximum.reduceat(hi, start, axis=1)
            self.half_s[at] = np.maximum.reduceat(half_s, start) + pad


def row_runs(grid: SortedRows, lo: F, hi: F, reach: F, bounds: RowBounds | None = None
             ) -> tuple[I, I, I]:
    """The rows each box ``[lo - reach, hi + reach]`` ((3, B) [m], ``reach`` (3,)) overlaps,
    and in each the run of the grid's sorted keys within its extent along the sweep axis:
    (box (R,), start (R,), stop (R,)), a run being ``comp[start:stop]`` (empty where stop <=
    start), ordered by box, then row.

    ``bounds``: the grid's boxes' extents per row (:class:`RowBounds`), when known: rows whose
    boxes all miss the box on some axis are left out, and each row's sweep extent is grown by
    that row's largest half extent along the sweep axis (plus a pad far above rounding) where
    it is below ``reach``. Every run is then within the run without ``bounds`` and holds
    every box of it that overlaps the box: the same pairs survive an exact overlap test."""
    assert grid.axes is not None
    s, u, w = grid.axes
    o = grid.origin
    qlo = lo - reach[:, None]
    qhi = hi + reach[:, None]
    cu0 = np.clip(np.floor((qlo[u] - o[u]) * grid.inv), 0, grid.nu - 1).astype(np.int64)
    cu1 = np.clip(np.floor((qhi[u] - o[u]) * grid.inv), -1, grid.nu - 1).astype(np.int64)
    cw0 = np.clip(np.floor((qlo[w] - o[w]) * grid.inv), 0, grid.nw - 1).astype(np.int64)
    cw1 = np.clip(np.floor((qhi[w] - o[w]) * grid.inv), -1, grid.nw - 1).astype(np.int64)
    # Each box's rows, (cu0 + du) nw + cw0 + dw for du < nu_b, dw < nw_b, du then dw: first
    # one entry per (box, du), then one per (box, du, dw).
    nu_b = np.maximum(cu1 - cu0 + 1, 0)
    nw_b = np.maximum(cw1 - cw0 + 1, 0)
    strip = np.repeat(np.arange(lo.shape[1], dtype=np.intp), nu_b)
    du = np.arange(strip.size, dtype=np.int64) - np.repeat(np.cumsum(nu_b) - nu_b, nu_b)
    first = (cu0.take(strip) + du) * grid.nw + cw0.take(strip)
    per_strip = nw_b.take(strip)
    box = np.repeat(strip, per_strip)
    row = np.repeat(first - (np.cumsum(per_strip) - per_strip), per_strip) + np.arange(
        box.size, dtype=np.int64)
    if bounds is None:
        x0 = np.maximum(qlo[s] - o[s], 0.0).take(box)
        x1 = np.minimum(qhi[s] - o[s], grid.width - 1.0).take(box)
    else:
        keep = np.ones(row.size, dtype=bool)
        for k in (u, w, s):
            keep &= (bounds.hi[k].take(row) >= lo[k].take(box)) & (
                bounds.lo[k].take(row) <= hi[k].take(box))
        box, row = box[keep], row[keep]
        grow = np.minimum(bounds.half_s.take(row), reach[s])
        x0 = np.maximum((lo[s].take(box) - grow) - o[s], 0.0)
        x1 = np.minimum((hi[s].take(box) + grow) - o[s], grid.width - 1.0)
    base = row * grid.width
    start = np.searchsorted(grid.comp, base + x0, "left")
    stop = np.searchsorted(grid.comp, base + x1, "right")
    return box, start, stop


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
        reach = np.zeros(3) if pad is None else pad.max(axis=1)
        box, start, stop = row_runs(self, lo, hi, reach)
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


def _not_in(keys: I64, table: I64) -> B:
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
class TriangleBoxes:
    """Corners (3, T) each, boxes grown by a radius (3, T) and bounding spheres of triangles."""

    a: F
    b: F
    c: F
    lo: F
    hi: F
    centre: F
    radius: F

    @staticmethod
    def of(P: F, tri: I, grow: float) -> TriangleBoxes:
        """Boxes of triangles ``tri`` (3, T) at positions P (3, N), grown by ``grow`` [m]."""
        a, b, c = columns(P, tri[0]), columns(P, tri[1]), columns(P, tri[2])
        centre, radius = triangle_spheres(a, b, c)
        return TriangleBoxes(a=a, b=b, c=c, lo=np.minimum(np.minimum(a, b), c) - grow,
                              hi=np.maximum(np.maximum(a, b), c) + grow, centre=centre,
                              radius=radius)

    def cell(self, scale: float) -> float:
        """Row size of a :class:`SweepGrid` searched with these boxes [m]: ``scale`` times
        their mean extent (``cell_scale`` of the tuning)."""
        return scale * float((self.hi - self.lo).mean())


@dataclass(frozen=True)
class EdgeBoxes:
    """Midpoints (3, E) and half extents (3, E) of edges."""

    mid: F
    half: F

    @staticmethod
    def of(P: F, e: I) -> EdgeBoxes:
        """Boxes of edges ``e`` (2, E) at positions P (3, N)."""
        p, q = columns(P, e[0]), columns(P, e[1])
        return EdgeBoxes(mid=0.5 * (p + q), half=0.5 * np.abs(p - q))

    def cell(self, grow: float, scale: float) -> float:
        """Row size of a :class:`SweepGrid` of these midpoints searched with the boxes grown
        by ``grow`` [m]: ``scale`` times their mean extent (``cell_scale`` of the tuning)."""
        return scale * float((2.0 * (self.half + grow)).mean())



@dataclass(frozen=True)
class Exclusions:
    """Non-incident pairs closer than ``rest_exclusion t`` in the rest shape, as sorted keys."""

    point_triangle: I64
    """vertex * T + triangle."""
    edge_edge: I64
    """edge_i * E + edge_j, i < j."""


class CandidateLists:
    """The Verlet candidate lists of one cloth model (module docstring): point-triangle and
    edge-edge pairs, kept against reference positions, updated in part or built anew.

    Positions are component-major (3, N) [m]. Timings and counters go to ``stats``.
    """

    def __init__(self, model: ClothModel, tuning: SelfCollisionTuning,
                 stats: SelfCollisionStats | None = None) -> None:
        self.tuning = tuning
        """The method's constants (:class:`~pbdcloth.selfcollision.tuning.SelfCollisionTuning`)."""
        self.stats = SelfCollisionStats() if stats is None else stats
        """The recorder (:mod:`.stats`)."""
        self.particle_count = model.particle_count
        self.triangles: I = np.ascontiguousarray(model.topology.triangles.astype(np.intp).T)
        """Corner indices, (3, T)."""
        self.edges: I = np.ascontiguousarray(model.topology.edges.astype(np.intp).T)
        """End indices, (2, E)."""
        self.rest: F = np.ascontiguousarray(model.mesh.positions.T)
        """Rest positions [m], (3, N)."""
        self.point_triangle: tuple[I, I] | None = None
        """Listed (vertex (K,), triangle (K,)) pairs, in the order of ``vertex * T + triangle``
        (None before the first :meth:`update`)."""
        self.edge_edge: tuple[I, I] | None = None
        """Listed (edge i (K,), edge j (K,)) pairs, i < j, in the order of ``i * E + j``."""
        self.reference: F | None = None
        """Reference positions of the lists [m], (3, N)."""
        self.skin = 0.0
        """Skin of the current lists [m]."""
        self._built_with: tuple[float, float] = (0.0, 0.0)
        self._exclusions: dict[float, Exclusions] = {}
        self._gaps: dict[float, float] = {}

    def radii(self, thickness: float, clamp: float) -> tuple[float, float]:
        """(r, skin) of this model's lists [m]: :func:`list_radii` with the rest gap."""
        return list_radii(thickness, clamp, self.tuning, self.rest_gap(thickness))

    def update(self, P: F, thickness: float, clamp: float) -> bool:
        """Lists for the predicted positions P (3, N); True when they changed.

        Particles that deviate from their references by more than ``skin / 2`` (after the
        mean displacement is taken out) are *movers*: their references become ``P - m`` and
        exactly their pairs are searched again (a partial update); when they are more than
        ``partial_limit`` of all particles, on the first call or with another thickness or
        clamp, all lists are built anew. The skin of a full build follows the motion: the
        large skin of :meth:`radii` while at most ``partial_limit`` of the particles deviate
        by more than half of it (partial updates will follow, and a larger skin means fewer of
        them), else the smallest skin, the rest exclusion radius (the cloth is crumpling and
        the lists will be built anew at the next call anyway: the fewer pairs they hold the
        better).
        """
        st = self.stats
        limit = self.tuning.partial_limit
        r, large = self.radii(thickness, clamp)
        small = list_radii(thickness, clamp, self.tuning)[1]
        n = self.particle_count
        with st.phase("candidates"):
            full = (self.point_triangle is None or self._built_with != (thickness, clamp)
                    or self.reference is None)
            skin = large
            movers = np.zeros(0, dtype=bool)
            if not full:
                assert self.reference is not None
                d = P - self.reference
                m = d.mean(axis=1, keepdims=True)
                d -= m
                dev2 = dot(d, d)
                movers = dev2 > 0.25 * self.skin * self.skin
                moved = int(np.count_nonzero(movers))
                full = moved > limit * n
                if full:
                    fast = np.count_nonzero(dev2 > 0.25 * large * large) > limit * n
                    skin = small if fast else large
                elif moved:
                    self.reference[:, movers] = columns(P, np.flatnonzero(movers)) - m
        excl = self.exclusions(thickness)
        if full:
            self.reference = P.copy()
            self._built_with = (thickness, clamp)
            self.skin = skin
            v, t, _ = self.point_triangle_pairs(P, r + skin, excl.point_triangle)
            i, j, _ = self.edge_edge_pairs(P, r + skin, excl.edge_edge)
            self.point_triangle = _sorted_pairs(v, t, self.triangles.shape[1])
            self.edge_edge = _sorted_pairs(i, j, self.edges.shape[1])
            st.on_full_build()
        elif movers.any():
            assert self.reference is not None
            self._update_partial(self.reference, movers, r + self.skin, excl)
            st.on_partial_update(int(np.count_nonzero(movers)))
        assert self.point_triangle is not None and self.edge_edge is not None
        st.on_lists(int(self.point_triangle[0].size), int(self.edge_edge[0].size))
        return full or bool(movers.any())

    def _update_partial(self, R: F, movers: B, radius: float, excl: Exclusions) -> None:
        """Partial update at the reference positions R (3, N): drop every listed pair that
        involves a mover, then list again every pair that involves one and is closer than
        ``radius``. The result is the list a full build at R would give (tested)."""
        assert self.point_triangle is not None and self.edge_edge is not None
        st = self.stats
        scale = self.tuning.cell_scale
        with st.phase("candidates"):
            tri, e = self.triangles, self.edges
            # Point-triangle: triangles with a moving corner against all vertices, moving
            # vertices against the other triangles (their grown boxes as padded points).
            tri_mv = movers.take(tri[0]) | movers.take(tri[1]) | movers.take(tri[2])
            v_old, t_old = self.point_triangle
            keep = np.flatnonzero(~(movers.take(v_old) | tri_mv.take(t_old)))
            geo = TriangleBoxes.of(R, tri, radius)
            tm = np.flatnonzero(tri_mv)
            vm = np.flatnonzero(movers)
            tn = np.flatnonzero(~tri_mv)
            cell = geo.cell(scale)
            found_t, found_v = [], []
            if tm.size:
                with st.phase("hash"):
                    grid = SweepGrid(R, cell)
                k, v = grid.query(columns(geo.lo, tm), columns(geo.hi, tm))
                found_t.append(tm.take(k))
                found_v.append(v)
            if vm.size and tn.size:
                lo, hi = columns(geo.lo, tn), columns(geo.hi, tn)
                with st.phase("hash"):
                    grid = SweepGrid(0.5 * (lo + hi), cell)
                k, m = grid.query(columns(R, vm), columns(R, vm), pad=0.5 * (hi - lo))
                found_t.append(tn.take(m))
                found_v.append(vm.take(k))
            empty = np.zeros(0, dtype=np.intp)
            t_new = np.concatenate(found_t) if found_t else empty
            v_new = np.concatenate(found_v) if found_v else empty
            v_new, t_new, _ = self._pt_filter(R, geo, t_new, v_new, radius,
                                              excl.point_triangle)
            self.point_triangle = _sorted_pairs(np.concatenate([v_old.take(keep), v_new]),
                                                np.concatenate([t_old.take(keep), t_new]),
                                                tri.shape[1])
            # Edge-edge: edges with a moving end against all edges (each pair of two such
            # edges once).
            edge_mv = movers.take(e[0]) | movers.take(e[1])
            i_old, j_old = self.edge_edge
            keep = np.flatnonzero(~(edge_mv.take(i_old) | edge_mv.take(j_old)))
            me = np.flatnonzero(edge_mv)
            i_new = j_new = empty
            eg = EdgeBoxes.of(R, e)
            if me.size:
                with st.phase("hash"):
                    grid = SweepGrid(eg.mid, eg.cell(radius, scale))
                mid, half = columns(eg.mid, me), columns(eg.half, me)
                k, j = grid.query(mid - half - radius, mid + half + radius, pad=eg.half)
                i = me.take(k)
                ok = (j != i) & (~edge_mv.take(j) | (i < j))
                i_new, j_new = i[ok], j[ok]
            i_new, j_new, _ = self._ee_filter(R, eg, i_new, j_new, radius, excl.edge_edge)
            self.edge_edge = _sorted_pairs(np.concatenate([i_old.take(keep), i_new]),
                                           np.concatenate([j_old.take(keep), j_new]),
                                           e.shape[1])

    # --- searches ------------------------------------------------------------------------------
    def point_triangle_pairs(self, P: F, r: float, excluded: I64) -> tuple[I, I, F]:
        """(vertex, triangle, squared distance [m^2]) of every pair closer than r at P (3, N)
        that is not a neighbour (a full search, not the lists): each triangle's box grown by
        r queries the vertices (:class:`SweepGrid`), then the filters, cheapest first.
        ``excluded``: sorted keys ``vertex * T + triangle`` left out (:meth:`exclusions`)."""
        st = self.stats
        with st.phase("hash"):
            geo = TriangleBoxes.of(P, self.triangles, r)
            grid = SweepGrid(P, geo.cell(self.tuning.cell_scale))
        with st.phase("candidates"):
            t_idx, v_idx = grid.query(geo.lo, geo.hi)
            return self._pt_filter(P, geo, t_idx, v_idx, r, excluded)

    def _pt_filter(self, P: F, geo: TriangleBoxes, t_idx: I, v_idx: I, r: float,
                   excluded: I64) -> tuple[I, I, F]:
        """Of the (triangle, vertex) pairs found in the grid, cheapest test first: not a
        corner, within r of the triangle's bounding sphere, closest point within r, not in the
        rest-shape exclusions. Returns (vertex, triangle, squared distance)."""
        tri = self.triangles
        corners = columns(tri, t_idx)
        keep = (corners[0] != v_idx) & (corners[1] != v_idx) & (corners[2] != v_idx)
        t_idx, v_idx = t_idx[keep], v_idx[keep]
        keep = within(columns(P, v_idx), columns(geo.centre, t_idx),
                      geo.radius.take(t_idx) + r)
        t_idx, v_idx = t_idx[keep], v_idx[keep]
        p, a, b, c = (columns(P, v_idx), columns(geo.a, t_idx), columns(geo.b, t_idx),
                      columns(geo.c, t_idx))
        u, vv, w, _ = closest_point_triangle(p, a, b, c)
        d = p - (u * a + vv * b + w * c)
        d2 = dot(d, d)
        keep = d2 < r * r
        t_idx, v_idx, d2 = t_idx[keep], v_idx[keep], d2[keep]
        if excluded.size:
            keep = _not_in(v_idx.astype(np.int64) * tri.shape[1] + t_idx, excluded)
            t_idx, v_idx, d2 = t_idx[keep], v_idx[keep], d2[keep]
        return v_idx, t_idx, d2

    def edge_edge_pairs(self, P: F, r: float, excluded: I64) -> tuple[I, I, F]:
        """(edge i, edge j, squared distance [m^2]), i < j, of every edge pair closer than r at
        P (3, N) that shares no vertex (a full search, not the lists).

        Edge midpoints go into the grid with their half extents as pads; each edge's box grown
        by r finds the edges whose own boxes overlap it (each pair once), then the filters,
        cheapest first. ``excluded``: sorted keys ``i * E + j`` left out (:meth:`exclusions`).
        """
        st = self.stats
        with st.phase("hash"):
            eg = EdgeBoxes.of(P, self.edges)
            grid = SweepGrid(eg.mid, eg.cell(r, self.tuning.cell_scale))
        with st.phase("candidates"):
            i, j = grid.query(eg.mid - eg.half - r, eg.mid + eg.half + r, pad=eg.half,
                              symmetric=True)
            return self._ee_filter(P, eg, i, j, r, excluded)

    def _ee_filter(self, P: F, eg: EdgeBoxes, i: I, j: I, r: float,
                   excluded: I64) -> tuple[I, I, F]:
        """Of the edge pairs found in the grid (ordered to i < j here), cheapest test first:
        no shared vertex, bounding spheres within r, closest points within r, not in the
        rest-shape exclusions. Returns (i, j, squared distance)."""
        e = self.edges
        i, j = np.minimum(i, j), np.maximum(i, j)
        ei, ej = columns(e, i), columns(e, j)
        keep = (ei[0] != ej[0]) & (ei[0] != ej[1]) & (ei[1] != ej[0]) & (ei[1] != ej[1])
        i, j = i[keep], j[keep]
        reach = np.sqrt(dot(eg.half, eg.half))
        keep = within(columns(eg.mid, i), columns(eg.mid, j), reach.take(i) + reach.take(j) + r)
        i, j = i[keep], j[keep]
        p1, p2, q1, q2 = (columns(P, e[k].take(m)) for m in (i, j) for k in (0, 1))
        s, s2 = closest_points_segments(p1, p2, q1, q2)
        d = (p1 + s * (p2 - p1)) - (q1 + s2 * (q2 - q1))
        d2 = dot(d, d)
        keep = d2 < r * r
        i, j, d2 = i[keep], j[keep], d2[keep]
        if excluded.size:
            keep = _not_in(i.astype(np.int64) * e.shape[1] + j, excluded)
            i, j, d2 = i[keep], j[keep], d2[keep]
        return i, j, d2

    # --- rest shape ----------------------------------------------------------------------------
    def exclusions(self, thickness: float) -> Exclusions:
        """Non-incident pairs closer than ``rest_exclusion * thickness`` at rest (cached per
        thickness; a one-off cost, kept out of the phase timings)."""
        found = self._exclusions.get(thickness)
        if found is not None:
            return found
        with self.stats.phase(None):
            r = self.tuning.rest_exclusion * thickness
            none = np.zeros(0, dtype=np.int64)
            v, t, _ = self.point_triangle_pairs(self.rest, r, none)
            pt_keys = np.unique(v.astype(np.int64) * self.triangles.shape[1] + t)
            i, j, _ = self.edge_edge_pairs(self.rest, r, none)
            ee_keys = np.unique(i.astype(np.int64) * self.edges.shape[1] + j)
        found = Exclusions(point_triangle=pt_keys, edge_edge=ee_keys)
        self._exclusions[thickness] = found
        return found

    def rest_gap(self, thickness: float) -> float:
        """The smallest rest distance [m] of a pair that is not excluded (cached per
        thickness), looked for up to the distance beyond which :func:`list_radii` no longer
        uses it, ``(3 / 2 + max_skin) t / gap_fraction`` (returned when nothing is closer)."""
        found = self._gaps.get(thickness)
        if found is not None:
            return found
        excl = self.exclusions(thickness)
        with self.stats.phase(None):
            reach = (1.5 + self.tuning.max_skin) * thickness / self.tuning.gap_fraction
            d2 = np.concatenate([
                self.point_triangle_pairs(self.rest, reach, excl.point_triangle)[2],
                self.edge_edge_pairs(self.rest, reach, excl.edge_edge)[2]])
        gap = float(np.sqrt(d2.min())) if d2.size else reach
        self._gaps[thickness] = gap
        return gap
