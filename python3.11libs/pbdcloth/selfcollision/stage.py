"""Cloth self-collision stage: velocity clamp, point-triangle and edge-edge contacts, fail-safe.

The cloth keeps a distance ``t`` (``self_thickness``) between every vertex and every triangle,
and between every two edges, that are not neighbours on the mesh. All of it is whole-array numpy
work on flat candidate lists: no loop over particles, pairs or cells.

Substep (called from the numpy backend; ``h`` the substep, ``c`` = ``self_clamp`` <= 1/2):

1. ``clamp_velocity`` (predict): each free particle's velocity *relative to the centre-of-mass
   velocity of the free particles* is limited to ``c t / h``, then all of them are shifted
   alike so that their linear momentum is what it was. This is Ten Minute Physics' clamp (Müller,
   "Self collisions", tenMinutePhysics 15), applied to relative motion so that a falling or
   flying cloth keeps its speed: within a substep's prediction no two particles close in by
   more than ``2 c t <= t``.
2. ``begin_substep`` (broad phase, on the predicted positions): the candidate pairs are Verlet
   lists (:class:`~.lists.CandidateLists`, whose module docstring has the method) holding every
   non-neighbour pair closer than ``r = (1 + c) t``, updated in part where the cloth moved.
3. ``project`` (narrow phase, last in every solver iteration, after the obstacles): bounding
   spheres cull the candidates to the pairs within the crossing band (``crossing_band t``), then
   up to ``passes`` Jacobi passes, each stopping early once no contact is deeper than
   ``resolved t``. After the first pass only the pairs whose particles have moved enough to
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
vertex, and any pair closer than ``rest_exclusion t = pi t / 2`` in the rest shape. The last rule
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

Names in ``code`` (``passes``, ``resolved``, ...) are fields of
:class:`~pbdcloth.selfcollision.tuning.SelfCollisionTuning`, passed to :class:`SelfCollision`;
timings and counters go to its recorder (:mod:`.stats`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..arrays import F, I
from ..cloth.model import ClothModel
from .geometry import (
    closest_point_triangle,
    closest_points_segments,
    columns,
    cross,
    dot,
    safe_div,
    sign,
    triangle_spheres,
    unit,
)
from .lists import CandidateLists, Exclusions
from .stats import SelfCollisionStats
from .tuning import DEFAULT_TUNING, SelfCollisionTuning

__all__ = ["SelfCollision", "SelfCollisionStats"]

Quad = tuple[I, I, I, I]


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
    band, its distance (or a lower bound, from bounding spheres) less the band. With
    ``skip_unchanged`` False every pair is evaluated in every pass (the same result).
    """

    pairs: Quad
    contact_slack: F
    """[m]; -inf: evaluate in the next pass."""
    cross_slack: F
    """[m], for the fail-safe's search for crossed pairs."""
    base: F
    """Least ``moved`` of the pair's particles at its last evaluation [m]."""
    skip_unchanged: bool
    """Evaluate only the pairs whose slack the motion can have used up (the tuning's)."""

    @staticmethod
    def of(pairs: Quad, bound: F, band: float, skip_unchanged: bool) -> _Tracked:
        """Pairs with a lower bound on their distances (K,) [m]: those within the band are
        evaluated in the first pass."""
        slack = np.where(bound < band, -np.inf, bound - band)
        return _Tracked(pairs=pairs, contact_slack=slack, cross_slack=slack.copy(),
                        base=np.zeros(slack.size), skip_unchanged=skip_unchanged)

    def evaluate(self, fn: ContactFn, P: F, X: F, band: float, t: float, moved: F,
                 crossing: bool) -> tuple[_Contacts, F, F] | None:
        """Evaluate (``fn``) the pairs that may be contacts (``crossing``: may be crossed),
        remember what was found, and return the geometry of those within the band with their
        contact normals and signed distances (:func:`_contact_normal`), in list order."""
        a, b, c, d = self.pairs
        if self.skip_unchanged:
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


class SelfCollision:
    """Self-collision of one cloth model: velocity clamp, candidate lists per substep,
    contacts and fail-safe per iteration (module docstring).

    Built once from the static :class:`~pbdcloth.cloth.model.ClothModel`; positions are passed
    in component-major (3, N) [m], as the numpy backend holds them, and modified in place.

    Args:
        model: the cloth model (topology, inverse masses, rest shape).
        tuning: the method's constants.
        stats: the recorder of counters and timings (default: a new
            :class:`~.stats.SelfCollisionStats`).
    """

    def __init__(self, model: ClothModel, tuning: SelfCollisionTuning = DEFAULT_TUNING,
                 stats: SelfCollisionStats | None = None) -> None:
        self.tuning = tuning
        """The method's constants (:class:`~pbdcloth.selfcollision.tuning.SelfCollisionTuning`)."""
        self.stats = SelfCollisionStats() if stats is None else stats
        """The recorder (:mod:`.stats`): counters and timings since its last ``reset``."""
        self.lists = CandidateLists(model, tuning, self.stats)
        """The candidate lists (:class:`~.lists.CandidateLists`)."""
        self.particle_count = model.particle_count
        self.triangles: I = self.lists.triangles
        """Corner indices, (3, T)."""
        self.edges: I = self.lists.edges
        """End indices, (2, E)."""
        self.inv_mass: F = model.inv_mass
        """Inverse masses [1/kg], (N,); 0 on pins."""
        self._free_idx: I = np.flatnonzero(model.inv_mass > 0.0).astype(np.intp)
        self._free_mass: F = np.ascontiguousarray(model.mass[self._free_idx])
        self._free_mass_sum = float(self._free_mass.sum())
        self.rest: F = self.lists.rest
        """Rest positions [m], (3, N)."""
        self._narrow: tuple[_Tracked, _Tracked, F, F] | None = None
        """The substep's narrow-phase state: tracked pairs of both families, ``moved`` and the
        positions at the end of the last narrow phase (None until the substep's first)."""

    # --- predict ---------------------------------------------------------------------------
    def clamp_velocity(self, V: F, h: float, thickness: float, clamp: float) -> int:
        """Limit every free particle's velocity relative to the free particles' centre-of-mass
        velocity to ``clamp * thickness / h`` (V (3, N), modified in place), keeping their
        linear momentum.

        With masses m_i, the centre-of-mass velocity ``vbar = sum m_i v_i / sum m_i``; each
        deviation ``d_i = v_i - vbar`` longer than ``vmax`` is scaled to ``vmax``, giving v'_i;
        then every free particle gets the same shift ``-(sum m_i v'_i / sum m_i - vbar)``, so the
        clamp's corrections sum to zero momentum. The shift changes no velocity difference:
        two particles still close in on each other by at most ``2 clamp thickness`` per
        substep, while the cloth as a whole falls, flies or turns slowly at any speed. Returns
        how many particles were clamped.
        """
        free = self._free_idx
        if free.size == 0:
            return 0
        vmax = clamp * thickness / h
        Vf = columns(V, free)
        m = self._free_mass
        mean = (Vf * m).sum(axis=1)[:, None] / self._free_mass_sum
        dev = Vf - mean
        speed2 = dot(dev, dev)
        over = np.flatnonzero(speed2 > vmax * vmax)
        if over.size:
            Vf[:, over] = mean + columns(dev, over) * (vmax / np.sqrt(speed2[over]))
            shift = (Vf * m).sum(axis=1)[:, None] / self._free_mass_sum - mean
            V[:, free] = Vf - shift
        self.stats.on_clamp(int(over.size))
        return int(over.size)

    # --- broad phase -----------------------------------------------------------------------
    def list_radii(self, thickness: float, clamp: float) -> tuple[float, float]:
        """(r, skin) of this model's candidate lists [m] (:meth:`CandidateLists.radii`)."""
        return self.lists.radii(thickness, clamp)

    def begin_substep(self, P: F, thickness: float, clamp: float) -> bool:
        """Candidate pairs for the coming substep from the predicted positions P (3, N)
        (:meth:`CandidateLists.update`: a partial update or a full build). Returns True when
        the lists changed."""
        self.stats.on_substep()
        self._narrow = None
        return self.lists.update(P, thickness, clamp)

    def exclusions(self, thickness: float) -> Exclusions:
        """Non-incident pairs closer than ``rest_exclusion * thickness`` at rest (cached)."""
        return self.lists.exclusions(thickness)

    def rest_gap(self, thickness: float) -> float:
        """The smallest rest distance [m] of a pair that is not excluded
        (:meth:`CandidateLists.rest_gap`)."""
        return self.lists.rest_gap(thickness)

    # --- narrow phase ----------------------------------------------------------------------
    def project(self, P: F, X: F, thickness: float, friction: float) -> int:
        """Push contacts of P (3, N, modified in place) apart to ``thickness``, with friction.

        ``X`` (3, N) are the positions at the start of the substep (they fix each pair's side and
        the slip for friction). Up to ``passes`` Jacobi passes over the pairs within the
        crossing band ``crossing_band * thickness``, stopping once no contact is deeper than
        ``resolved * thickness``; pairs still on the wrong side after that are undone by the
        fail-safe (:meth:`_revert_crossed`). Returns the number of contacts projected (summed
        over passes).

        A pass evaluates only the pairs that can have changed (:class:`_Tracked`, kept from one
        iteration of the substep to the next): at the substep's first call the pairs whose
        bounding spheres come within the band; then those whose particles have moved by at
        least half their slack since their last evaluation. The contacts found, and so the
        result, are those of evaluating every pair (tested).
        """
        if self.lists.point_triangle is None or self.lists.edge_edge is None:
            raise RuntimeError("SelfCollision.project called before begin_substep")
        tune = self.tuning
        t = thickness
        band = tune.crossing_band * t
        st = self.stats
        if self._narrow is None:  # the substep's first narrow phase
            with st.phase("point_triangle"):
                pt = self._tracked_point_triangle(P, band)
            with st.phase("edge_edge"):
                ee = self._tracked_edge_edge(P, band)
            moved = np.zeros(self.particle_count)
        else:  # later iterations: add what the solver's constraints moved since
            with st.phase("point_triangle"):
                pt, ee, moved, last = self._narrow
                step = P - last
                moved += np.sqrt(dot(step, step))
        total = 0
        for _ in range(tune.passes):
            with st.phase("point_triangle"):
                found = pt.evaluate(self._point_triangle_contacts, P, X, band, t, moved, False)
                n_pt, deep_pt = self._respond(P, found, t, friction, moved)
            with st.phase("edge_edge"):
                found = ee.evaluate(self._edge_edge_contacts, P, X, band, t, moved, False)
                n_ee, deep_ee = self._respond(P, found, t, friction, moved)
            st.on_contacts(n_pt, n_ee)
            total += n_pt + n_ee
            if max(deep_pt, deep_ee) <= tune.resolved * t:
                break
        if total:  # some pair may still be on the wrong side
            with st.phase("point_triangle"):
                st.on_revert(self._revert_crossed(P, X, pt, ee, band, t, moved))
        self._narrow = (pt, ee, moved, P.copy())
        return total

    def _revert_crossed(self, P: F, X: F, pt: _Tracked, ee: _Tracked, band: float, t: float,
                        moved: F) -> int:
        """Fail-safe: put the free particles of every pair still on the wrong side back where
        they were at the start of the substep, and repeat (a reverted particle can leave its
        other pairs crossed) up to ``revert_rounds`` times.

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
        for _ in range(self.tuning.revert_rounds):
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
            back = columns(X, idx) - columns(P, idx)
            moved[idx] += np.sqrt(dot(back, back))
            P[:, idx] = columns(X, idx)
            reverted[idx] = True
        return int(np.count_nonzero(reverted))

    def _tracked_point_triangle(self, P: F, band: float) -> _Tracked:
        """The listed (vertex, corners a, b, c) with a lower bound on their distances, the
        vertex's distance to the triangle's bounding sphere."""
        assert self.lists.point_triangle is not None
        v, tri = self.lists.point_triangle
        T = self.triangles
        centre, radius = triangle_spheres(columns(P, T[0]), columns(P, T[1]), columns(P, T[2]))
        gap = columns(P, v) - columns(centre, tri)
        bound = np.sqrt(dot(gap, gap)) - radius.take(tri)
        pairs = (v, T[0].take(tri), T[1].take(tri), T[2].take(tri))
        return _Tracked.of(pairs, bound, band, self.tuning.skip_unchanged)

    def _tracked_edge_edge(self, P: F, band: float) -> _Tracked:
        """The listed edge pairs (p1, p2, q1, q2) with a lower bound on their distances, that
        of their bounding spheres."""
        assert self.lists.edge_edge is not None
        i, j = self.lists.edge_edge
        E = self.edges
        p, q = columns(P, E[0]), columns(P, E[1])
        mid = 0.5 * (p + q)
        d = p - q
        half = 0.5 * np.sqrt(dot(d, d))
        gap = columns(mid, i) - columns(mid, j)
        bound = np.sqrt(dot(gap, gap)) - half.take(i) - half.take(j)
        pairs = (E[0].take(i), E[1].take(i), E[0].take(j), E[1].take(j))
        return _Tracked.of(pairs, bound, band, self.tuning.skip_unchanged)

    def _point_triangle_contacts(self, P: F, X: F, pairs: Quad, band: float
                                 ) -> tuple[I, F, _Contacts | None]:
        """Closest points of vertex-triangle pairs: (indices of the pairs within the band, the
        squared distances of all pairs, the geometry of the former; its ``rows`` index them)."""
        v, ia, ib, ic = pairs
        self.stats.on_evaluate(int(v.size))
        none = np.zeros(0, dtype=np.intp)
        if v.size == 0:
            return none, np.zeros(0), None
        p, a, b, c = columns(P, v), columns(P, ia), columns(P, ib), columns(P, ic)
        u, vv, w, face = closest_point_triangle(p, a, b, c)
        diff = p - (u * a + vv * b + w * c)
        dist2 = dot(diff, diff)
        near = np.flatnonzero(dist2 < band * band)
        if near.size == 0:
            return near, dist2, None
        v, ia, ib, ic = v.take(near), ia.take(near), ib.take(near), ic.take(near)
        u, vv, w, face = u.take(near), vv.take(near), w.take(near), face.take(near)
        a, b, c = columns(a, near), columns(b, near), columns(c, near)
        p0, a0, b0, c0 = columns(X, v), columns(X, ia), columns(X, ib), columns(X, ic)
        diff0 = p0 - (u * a0 + vv * b0 + w * c0)
        # The side is the sign of the signed volume (p - a) . ((b - a) x (c - a)) at the start,
        # which sliding within the plane cannot change; it exists only where the closest point
        # is inside the face (near an edge or corner a vertex can pass round the triangle).
        m = cross(b - a, c - a)
        m0 = cross(b0 - a0, c0 - a0)
        side0 = sign(dot(p0 - a0, m0)) * sign(dot(m0, m))
        side0 = np.where(face, side0, 0.0)
        return near, dist2, _Contacts(
            idx=np.stack([v, ia, ib, ic]), coef=np.stack([np.ones_like(u), -u, -vv, -w]),
            diff=columns(diff, near), dist2=dist2.take(near), diff0=diff0, normal=unit(m),
            side0=side0, rows=np.arange(near.size))

    def _edge_edge_contacts(self, P: F, X: F, pairs: Quad, band: float
                            ) -> tuple[I, F, _Contacts | None]:
        """Closest points of edge pairs: (indices of the pairs within the band, the squared
        distances of all pairs, the geometry of those near pairs whose closest points are inside
        both edges; its ``rows`` index the near pairs)."""
        a1, a2, b1, b2 = pairs
        self.stats.on_evaluate(int(a1.size))
        none = np.zeros(0, dtype=np.intp)
        if a1.size == 0:
            return none, np.zeros(0), None
        p1, p2, q1, q2 = columns(P, a1), columns(P, a2), columns(P, b1), columns(P, b2)
        s, s2 = closest_points_segments(p1, p2, q1, q2)
        diff = (p1 + s * (p2 - p1)) - (q1 + s2 * (q2 - q1))
        dist2 = dot(diff, diff)
        near = np.flatnonzero(dist2 < band * band)
        a1, a2, b1, b2 = a1.take(near), a2.take(near), b1.take(near), b2.take(near)
        s, s2 = s.take(near), s2.take(near)
        lo, hi = self.tuning.edge_interior, 1.0 - self.tuning.edge_interior
        inner = np.flatnonzero((s > lo) & (s < hi) & (s2 > lo) & (s2 < hi))
        if inner.size == 0:
            return near, dist2, None
        k = near.take(inner)
        c1, c2, d1, d2 = a1.take(inner), a2.take(inner), b1.take(inner), b2.take(inner)
        s, s2 = s.take(inner), s2.take(inner)
        x1, x2 = columns(X, c1), columns(X, c2)
        y1, y2 = columns(X, d1), columns(X, d2)
        diff0 = (x1 + s * (x2 - x1)) - (y1 + s2 * (y2 - y1))
        # The side is the sign of the signed volume (p1 - q1) . ((p2 - p1) x (q2 - q1)) at the
        # start: the edges' separation along their common normal, which sliding along each
        # other cannot change (corrected when the edges turned past parallel).
        m = cross(columns(p2 - p1, k), columns(q2 - q1, k))
        m0 = cross(x2 - x1, y2 - y1)
        side0 = sign(dot(x1 - y1, m0)) * sign(dot(m0, m))
        return near, dist2, _Contacts(
            idx=np.stack([c1, c2, d1, d2]), coef=np.stack([1.0 - s, s, s2 - 1.0, -s2]),
            diff=columns(diff, k), dist2=dist2.take(k), diff0=diff0, normal=unit(m), side0=side0,
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
        idx, coef = columns(contacts.idx, contact), columns(contacts.coef, contact)
        diff, diff0 = columns(contacts.diff, contact), columns(contacts.diff0, contact)
        n, signed = columns(n, contact), signed.take(contact)
        depth = t - signed  # > 0
        wc = self.inv_mass.take(idx) * coef
        W = (wc * coef).sum(axis=0)
        movable = (W > 0.0) & (dot(n, n) > 0.0)
        if not movable.all():
            keep = np.flatnonzero(movable)
            if keep.size == 0:
                return 0, 0.0
            idx, wc, W = columns(idx, keep), columns(wc, keep), W.take(keep)
            n, depth, diff, diff0 = columns(n, keep), depth.take(keep), columns(diff, keep), columns(
                diff0, keep)
        # Wanted change of x_A - x_B: the push-out along n, minus the friction-removed slip.
        delta = n * depth
        if mu > 0.0:
            slip = diff - diff0
            slip -= dot(slip, n) * n
            slip_len = np.sqrt(dot(slip, slip))
            delta -= slip * np.minimum(safe_div(mu * depth, slip_len), 1.0)
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
            moved += np.sqrt(dot(corr, corr))
        return int(W.size), float(depth.max())


def _contact_normal(c: _Contacts, t: float) -> tuple[F, F]:
    """Unit contact normal (3, K), pointing from B to A on A's start side, and the signed
    distance of A from B along it (K,) [m]; negative when the pair has crossed.

    Pairs with a side (``side0`` != 0) use the geometric normal turned to the start side; the
    others the direction of ``diff`` (their distance is never negative).
    """
    dist = np.sqrt(c.dist2)
    ok = dist > 1e-9 * t
    plain = c.diff * safe_div(np.ones_like(dist), dist)
    plain = np.where(ok, plain, c.normal)
    sided = c.side0 != 0.0
    n = np.where(sided, c.normal * c.side0, plain)
    return n, dot(n, c.diff)
