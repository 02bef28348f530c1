"""Device code of the Warp backend's :class:`~pbdcloth.colliders.mesh.MeshCollider`.

The per-pair form of :mod:`pbdcloth.colliders.mesh_contact`, :mod:`pbdcloth.colliders.ccd` and
:mod:`pbdcloth.colliders.mesh_edges` (see their docstrings for the method): cloth vertices
against the collider's triangles (continuous, then sided discrete with Coulomb friction
relative to the surface), collider vertices against the cloth's triangles, sharp collider edges
against the cloth's edges, the continuous re-check of moved vertices and the winding-number
fail-safe of closed meshes.

Broad phase: a hashed uniform grid per substep (:func:`build_mesh_kernels`'s ``grid_*``
kernels): every box (a collider triangle swept over the substep, or a collider vertex's path,
grown by the contact band) is entered in each cell it overlaps, by a counting sort on the
cells' hashed keys (count, scan, fill). A query box reads the entries of the cells it
overlaps; an entry is taken in the first cell that the query and the entry share (per axis
the larger of the two ranges' low ends), so it is seen once, and only when the two boxes
overlap exactly. (Entering each box once, in its low corner's cell, and reading one more
cell per axis measured 1.4x slower on the skirt: more cells per query.) A box over more than
:data:`BIG_CELLS` cells (a huge triangle, a very fast vertex) is kept out of the cells, in
a list every query reads; a query box that big reads every box directly. The grid is built anew each substep (a counting sort is linear in the boxes,
so refitting and rebuilding cost the same). Entries within a cell are in thread order, which
varies on a GPU: every choice among pairs (the earliest crossing, the most violated pair, the
largest push) breaks ties by the lower index, so results never depend on that order.

Candidate lists are Verlet lists over the iterations of a substep, as the numpy
:class:`~pbdcloth.colliders.broadphase.PairList`: the substep's first query of a cloth vertex
(a cloth triangle) searches its box grown by a margin and remembers the grown box; later
queries search again only where the box has left the remembered one. Each cloth vertex keeps
up to ``slots`` candidate triangles, each cloth triangle up to ``slots`` collider vertices (a
frame that needs more is run again with more, as are grids whose entries overflow their
capacity).
"""

# mypy: ignore-errors
# (kernel bodies and annotations are Warp's typed language, checked by Warp's code generator)
# No ``from __future__ import annotations``: Warp reads the annotations as objects.
# ruff: noqa: UP018, RUF046
import functools
from types import SimpleNamespace
from typing import Any

import warp as wp

from ...colliders.ccd import BISECTIONS, INSIDE_TOLERANCE
from ...colliders.mesh_contact import EDGE_SLACK
from ...colliders.mesh_edges import PARALLEL
from .kernels import build_kernels
from .selfcollision_kernels import build_self_kernels

#: Slots of the overflow flags and the sizes they need (int32 arrays of this length).
OVER_TRIANGLES = 0  # the triangle grid's entries
OVER_VERTICES = 1  # the collider-vertex grid's entries
OVER_CANDIDATES = 2  # a cloth vertex's candidate triangles
OVER_TRIANGLE_CANDIDATES = 3  # a cloth triangle's candidate collider vertices
OVER_EDGES = 4  # the sharp-edge grid's entries
OVER_EDGE_CANDIDATES = 5  # a cloth edge's candidate sharp edges
OVER_SIZE = 6

#: A box over more cells than this is *big*: kept out of the cells, in a list that every query
#: reads (a big query reads every box instead of the cells).
BIG_CELLS = 1024

#: Slots of a grid's parameters (scalar array): 1 / cell [1/m], the region's corners [m].
GP_INV = 0
GP_LO = 1  # .. GP_LO + 2
GP_HI = 4  # .. GP_HI + 2
GP_SIZE = 8


@functools.cache
def build_mesh_kernels(precision: str = "float32") -> SimpleNamespace:
    """The mesh-collider kernels for scalars of ``precision`` ("float32" or "float64")."""
    base = build_kernels(precision)
    selfk = build_self_kernels(precision)
    scalar: Any = base.scalar
    vec3: Any = base.vec3
    module = f"pbdcloth_warp_mesh_{precision}"
    wp.set_module_options({"enable_backward": False}, module=module)
    zero = scalar(0.0)
    one = scalar(1.0)
    third = scalar(1.0 / 3.0)
    half_ = scalar(0.5)
    tiny = scalar(1e-12)
    inside_tol = scalar(INSIDE_TOLERANCE)
    edge_slack = scalar(EDGE_SLACK)
    four_pi = scalar(4.0 * 3.141592653589793)
    bisections = BISECTIONS
    closest_point_triangle = selfk.closest_point_triangle
    closest_points_segments = selfk.closest_points_segments
    parallel = scalar(PARALLEL)
    unit = selfk.unit
    safe_div = selfk.safe_div
    contact_friction = base.contact_friction

    # --- helpers ------------------------------------------------------------------------------
    @wp.func(module=module)
    def sgn(x: scalar) -> scalar:
        """np.sign: -1, 0 or 1."""
        if x > zero:
            return one
        if x < zero:
            return -one
        return zero

    @wp.func(module=module)
    def lerp3(a: vec3, b: vec3, t: scalar) -> vec3:
        """a + t (b - a), exact at t = 0 and 1 (pbdcloth.colliders.base.lerp)."""
        if t == zero:
            return a
        if t == one:
            return b
        return a + (b - a) * t

    @wp.func(module=module)
    def barycentric(p: vec3, a: vec3, b: vec3, c: vec3):
        """Unclamped barycentrics of p's projection on abc's plane (Ericson 2005, 3.4);
        (1, 0, 0) for a degenerate triangle. Mirrors pbdcloth.colliders.ccd.barycentric."""
        v0 = b - a
        v1 = c - a
        v2 = p - a
        d00 = wp.dot(v0, v0)
        d01 = wp.dot(v0, v1)
        d11 = wp.dot(v1, v1)
        d20 = wp.dot(v2, v0)
        d21 = wp.dot(v2, v1)
        den = d00 * d11 - d01 * d01
        v = safe_div(d11 * d20 - d01 * d21, den)
        w = safe_div(d00 * d21 - d01 * d20, den)
        return one - v - w, v, w

    @wp.func(module=module)
    def cubic(c0: scalar, c1: scalar, c2: scalar, c3: scalar, t: scalar) -> scalar:
        return ((c3 * t + c2) * t + c1) * t + c0

    @wp.func(module=module)
    def first_crossing(x0: vec3, x1: vec3, a0: vec3, a1: vec3, b0: vec3, b1: vec3, c0: vec3,
                       c1: vec3):
        """(hit, t, u, v, w, side) of the earliest time the path x0 -> x1 crosses the moving
        triangle (a, b, c): the roots of the vertex-face cubic on its monotone pieces, by
        bisection. Mirrors pbdcloth.colliders.ccd.first_crossing."""
        e0 = x0 - a0
        de = (x1 - x0) - (a1 - a0)
        ab0 = b0 - a0
        dab = (b1 - b0) - (a1 - a0)
        ac0 = c0 - a0
        dac = (c1 - c0) - (a1 - a0)
        n0 = wp.cross(ab0, ac0)
        n1 = wp.cross(ab0, dac) + wp.cross(dab, ac0)
        n2 = wp.cross(dab, dac)
        k0 = wp.dot(e0, n0)
        k1 = wp.dot(e0, n1) + wp.dot(de, n0)
        k2 = wp.dot(e0, n2) + wp.dot(de, n1)
        k3 = wp.dot(de, n2)
        side = sgn(k0)
        hit = int(0)
        t_hit = one
        bu = one
        bv = zero
        bw = zero
        if side == zero:
            return hit, t_hit, bu, bv, bw, side
        qa = scalar(3.0) * k3
        qb = scalar(2.0) * k2
        qc = k1
        disc = qb * qb - scalar(4.0) * qa * qc
        sq = wp.sqrt(wp.max(disc, zero))
        r1 = zero
        r2 = zero
        if wp.abs(qa) > zero:
            if disc >= zero:
                r1 = (-qb - sq) / (scalar(2.0) * qa)
                r2 = (-qb + sq) / (scalar(2.0) * qa)
        else:
            r1 = safe_div(-qc, qb)
            r2 = r1
        lo_r = wp.clamp(wp.min(r1, r2), zero, one)
        hi_r = wp.clamp(wp.max(r1, r2), zero, one)
        if not wp.isfinite(lo_r):
            lo_r = zero
        if not wp.isfinite(hi_r):
            hi_r = zero
        f_lo = cubic(k0, k1, k2, k3, zero)
        for piece in range(3):
            lo = zero
            hi = one
            if piece == 0:
                hi = lo_r
            elif piece == 1:
                lo = lo_r
                hi = hi_r
            else:
                lo = hi_r
            f_hi = cubic(k0, k1, k2, k3, hi)
            live = hi > lo and sgn(f_lo) * sgn(f_hi) <= zero
            f_lo = f_hi
            if live:
                t0 = lo
                t1 = hi
                s0 = sgn(cubic(k0, k1, k2, k3, t0))
                for _ in range(bisections):
                    mid = half_ * (t0 + t1)
                    if sgn(cubic(k0, k1, k2, k3, mid)) == s0:
                        t0 = mid
                    else:
                        t1 = mid
                xt = x0 + (x1 - x0) * t1
                at = a0 + (a1 - a0) * t1
                bt = b0 + (b1 - b0) * t1
                ct = c0 + (c1 - c0) * t1
                u, v, w = barycentric(xt, at, bt, ct)
                if u >= -inside_tol and v >= -inside_tol and w >= -inside_tol:
                    return 1, t1, u, v, w, side
        return hit, t_hit, bu, bv, bw, side

    @wp.func(module=module)
    def may_cross(plane0: scalar, dx: vec3, a0: vec3, a1: vec3, b0: vec3, b1: vec3, c0: vec3,
                  c1: vec3) -> int:
        """1 when a point moving by dx can cross the moving triangle at all: its start lies
        within max_k |dx - dc_k| of the plane (the crossing point is a convex combination of
        the corners)."""
        ra = dx - (a1 - a0)
        rb = dx - (b1 - b0)
        rc = dx - (c1 - c0)
        rel = wp.max(wp.max(wp.dot(ra, ra), wp.dot(rb, rb)), wp.dot(rc, rc))
        if wp.abs(plane0) <= wp.sqrt(rel) + tiny:
            return 1
        return 0

    @wp.func(module=module)
    def cell_of(x: vec3, inv: scalar) -> wp.vec3i:
        return wp.vec3i(int(wp.floor(x[0] * inv)), int(wp.floor(x[1] * inv)),
                        int(wp.floor(x[2] * inv)))

    @wp.func(module=module)
    def bucket(cx: int, cy: int, cz: int, mask: int) -> int:
        """The hashed key of a cell: the three coordinates' products with large primes,
        XORed (Teschner et al. 2003, "Optimized spatial hashing for collision detection of
        deformable objects"), then mixed so that the low bits that the mask keeps depend on
        every bit (a 32-bit finalizer: xor-shift, multiply, xor-shift)."""
        h = (wp.uint32(cx) * wp.uint32(73856093)) ^ (wp.uint32(cy) * wp.uint32(19349663)) ^ (
            wp.uint32(cz) * wp.uint32(83492791))
        h = h ^ (h >> wp.uint32(16))
        h = h * wp.uint32(0x45D9F3B)
        h = h ^ (h >> wp.uint32(16))
        return int(h & wp.uint32(mask))

    @wp.func(module=module)
    def in_region(lo: vec3, hi: vec3, gp: wp.array(dtype=scalar)) -> int:
        """1 when the box [lo, hi] meets the grid's region (everything it holds)."""
        if hi[0] < gp[GP_LO] or hi[1] < gp[GP_LO + 1] or hi[2] < gp[GP_LO + 2]:
            return 0
        if lo[0] > gp[GP_HI] or lo[1] > gp[GP_HI + 1] or lo[2] > gp[GP_HI + 2]:
            return 0
        return 1

    @wp.func(module=module)
    def overlap(lo: vec3, hi: vec3, blo: vec3, bhi: vec3) -> int:
        if hi[0] < blo[0] or hi[1] < blo[1] or hi[2] < blo[2]:
            return 0
        if lo[0] > bhi[0] or lo[1] > bhi[1] or lo[2] > bhi[2]:
            return 0
        return 1

    @wp.func(module=module)
    def is_big(a: wp.vec3i, b: wp.vec3i) -> int:
        """1 when the cell range a..b holds more than BIG_CELLS cells."""
        dx = b[0] - a[0] + 1
        dy = b[1] - a[1] + 1
        dz = b[2] - a[2] + 1
        if dx > BIG_CELLS or dy > BIG_CELLS or dz > BIG_CELLS:
            return 1
        if dx * dy * dz > BIG_CELLS:
            return 1
        return 0

    @wp.func(module=module)
    def first_shared(c: wp.vec3i, qlo: wp.vec3i, elo: wp.vec3i) -> int:
        """1 when cell c is the first cell that a query from qlo and an entry from elo share."""
        if c[0] != wp.max(qlo[0], elo[0]) or c[1] != wp.max(qlo[1], elo[1]):
            return 0
        if c[2] != wp.max(qlo[2], elo[2]):
            return 0
        return 1

    # --- the substep's collider ---------------------------------------------------------------
    @wp.kernel(module=module)
    def mesh_pose(v_start: wp.array(dtype=vec3), v_end: wp.array(dtype=vec3), alpha0: scalar,
                  alpha1: scalar, band: scalar, v0: wp.array(dtype=vec3),
                  v1: wp.array(dtype=vec3), lo: wp.array(dtype=vec3),
                  hi: wp.array(dtype=vec3)):
        """The collider's vertices at the substep's start and end (linear in the frame) and
        each vertex path's box grown by ``band``."""
        k = wp.tid()
        a = lerp3(v_start[k], v_end[k], alpha0)
        b = lerp3(v_start[k], v_end[k], alpha1)
        v0[k] = a
        v1[k] = b
        g = vec3(band, band, band)
        lo[k] = wp.min(a, b) - g
        hi[k] = wp.max(a, b) + g

    @wp.kernel(module=module)
    def mesh_triangles(v0: wp.array(dtype=vec3), v1: wp.array(dtype=vec3),
                       tris: wp.array(dtype=wp.vec3i), band: scalar,
                       lo: wp.array(dtype=vec3), hi: wp.array(dtype=vec3),
                       n0: wp.array(dtype=vec3), n1: wp.array(dtype=vec3)):
        """Each collider triangle's box over the substep, grown by ``band``, and its unit
        normals at the substep's start and end (zero for a degenerate triangle)."""
        j = wp.tid()
        t = tris[j]
        a0 = v0[t[0]]
        b0 = v0[t[1]]
        c0 = v0[t[2]]
        a1 = v1[t[0]]
        b1 = v1[t[1]]
        c1 = v1[t[2]]
        g = vec3(band, band, band)
        lo[j] = wp.min(wp.min(wp.min(a0, b0), wp.min(c0, a1)), wp.min(b1, c1)) - g
        hi[j] = wp.max(wp.max(wp.max(a0, b0), wp.max(c0, a1)), wp.max(b1, c1)) + g
        n0[j] = unit(wp.cross(b0 - a0, c0 - a0))
        n1[j] = unit(wp.cross(b1 - a1, c1 - a1))

    # --- the grid -----------------------------------------------------------------------------
    @wp.kernel(module=module)
    def grid_clear(count: wp.array(dtype=wp.int32), cursor: wp.array(dtype=wp.int32),
                   big_count: wp.array(dtype=wp.int32)):
        b = wp.tid()
        count[b] = 0
        cursor[b] = 0
        if b == 0:
            big_count[0] = 0

    @wp.kernel(module=module)
    def grid_count(lo: wp.array(dtype=vec3), hi: wp.array(dtype=vec3),
                   gp: wp.array(dtype=scalar), mask: int, count: wp.array(dtype=wp.int32),
                   clo: wp.array(dtype=wp.vec3i), chi: wp.array(dtype=wp.vec3i),
                   big: wp.array(dtype=wp.int32), big_count: wp.array(dtype=wp.int32)):
        """Each box's cell range, and one count in the bucket of every cell it overlaps; a big
        box goes to the big list instead (its range left empty)."""
        m = wp.tid()
        inv = gp[GP_INV]
        a = cell_of(lo[m], inv)
        b = cell_of(hi[m], inv)
        clo[m] = a
        if is_big(a, b) != 0:
            big[wp.atomic_add(big_count, 0, 1)] = m
            b = a - wp.vec3i(1, 1, 1)
        chi[m] = b
        for cx in range(a[0], b[0] + 1):
            for cy in range(a[1], b[1] + 1):
                for cz in range(a[2], b[2] + 1):
                    wp.atomic_add(count, bucket(cx, cy, cz, mask), 1)

    @wp.kernel(module=module)
    def scan_blocks(count: wp.array(dtype=wp.int32), n: int, block: int,
                    start: wp.array(dtype=wp.int32), sums: wp.array(dtype=wp.int32)):
        """Exclusive prefix sum within each block of ``count``; block totals to ``sums``."""
        k = wp.tid()
        acc = int(0)
        for i in range(k * block, wp.min(n, (k + 1) * block)):
            start[i] = acc
            acc += count[i]
        sums[k] = acc

    @wp.kernel(module=module)
    def scan_top(sums: wp.array(dtype=wp.int32), offsets: wp.array(dtype=wp.int32)):
        """Exclusive prefix sum of the block totals (offsets has one more: the total)."""
        acc = int(0)
        for k in range(sums.shape[0]):
            offsets[k] = acc
            acc += sums[k]
        offsets[sums.shape[0]] = acc

    @wp.kernel(module=module)
    def scan_add(start: wp.array(dtype=wp.int32), n: int, block: int,
                 offsets: wp.array(dtype=wp.int32)):
        """start[i] += its block's offset; start[n] = the total."""
        i = wp.tid()
        if i < n:
            start[i] = start[i] + offsets[i // block]
        else:
            start[n] = offsets[offsets.shape[0] - 1]

    @wp.kernel(module=module)
    def grid_fill(clo: wp.array(dtype=wp.vec3i), chi: wp.array(dtype=wp.vec3i), mask: int,
                  start: wp.array(dtype=wp.int32), cursor: wp.array(dtype=wp.int32),
                  entries: wp.array(dtype=wp.int32), over: wp.array(dtype=wp.int32),
                  slot: int):
        """Each box's index in the buckets of its cells; past the capacity, the overflow flag
        ``over[slot]`` and the size needed ``over[OVER_SIZE + slot]``."""
        m = wp.tid()
        a = clo[m]
        b = chi[m]
        cap = entries.shape[0]
        for cx in range(a[0], b[0] + 1):
            for cy in range(a[1], b[1] + 1):
                for cz in range(a[2], b[2] + 1):
                    key = bucket(cx, cy, cz, mask)
                    e = start[key] + wp.atomic_add(cursor, key, 1)
                    if e < cap:
                        entries[e] = m
                    else:
                        over[slot] = 1
                        wp.atomic_max(over, OVER_SIZE + slot, start[start.shape[0] - 1])

    # --- cloth vertices against the triangles -------------------------------------------------
    @wp.func(module=module)
    def inside_box(lo: vec3, hi: vec3, rlo: vec3, rhi: vec3) -> int:
        """1 when [lo, hi] lies within [rlo, rhi]."""
        if lo[0] < rlo[0] or lo[1] < rlo[1] or lo[2] < rlo[2]:
            return 0
        if hi[0] > rhi[0] or hi[1] > rhi[1] or hi[2] > rhi[2]:
            return 0
        return 1

    @wp.func(module=module)
    def search(i: int, lo: vec3, hi: vec3, gp: wp.array(dtype=scalar), mask: int,
               start: wp.array(dtype=wp.int32), entries: wp.array(dtype=wp.int32),
               clo: wp.array(dtype=wp.vec3i), big: wp.array(dtype=wp.int32),
               big_count: wp.array(dtype=wp.int32), blo: wp.array(dtype=vec3),
               bhi: wp.array(dtype=vec3), slots: int, cand: wp.array(dtype=wp.int32),
               over: wp.array(dtype=wp.int32), what: int) -> int:
        """The grid's boxes that overlap [lo, hi], into query i's slots; returns their count
        (at most ``slots``; more sets the overflow flag ``what``)."""
        n = int(0)
        if in_region(lo, hi, gp) == 0:
            return n
        lo = wp.max(lo, vec3(gp[GP_LO], gp[GP_LO + 1], gp[GP_LO + 2]))
        hi = wp.min(hi, vec3(gp[GP_HI], gp[GP_HI + 1], gp[GP_HI + 2]))
        inv = gp[GP_INV]
        qa = cell_of(lo, inv)
        qb = cell_of(hi, inv)
        if is_big(qa, qb) != 0:  # read every box
            for j in range(blo.shape[0]):
                if overlap(lo, hi, blo[j], bhi[j]) != 0:
                    if n < slots:
                        cand[i * slots + n] = j
                    n += 1
        else:
            for s in range(big_count[0]):
                j = big[s]
                if overlap(lo, hi, blo[j], bhi[j]) != 0:
                    if n < slots:
                        cand[i * slots + n] = j
                    n += 1
            cap = entries.shape[0]
            for cx in range(qa[0], qb[0] + 1):
                for cy in range(qa[1], qb[1] + 1):
                    for cz in range(qa[2], qb[2] + 1):
                        key = bucket(cx, cy, cz, mask)
                        # a box in the bucket for several of its cells (their hashes
                        # equal), its entries next to each other where the bucket was
                        # filled in box order (one thread): taken once
                        last = int(-1)
                        for e in range(start[key], wp.min(start[key + 1], cap)):
                            j = entries[e]
                            if first_shared(wp.vec3i(cx, cy, cz), qa, clo[j]) == 0:
                                continue
                            if overlap(lo, hi, blo[j], bhi[j]) == 0 or j == last:
                                continue
                            last = j
                            if n < slots:
                                cand[i * slots + n] = j
                            n += 1
        if n > slots:
            over[what] = 1
            wp.atomic_max(over, OVER_SIZE + what, n)
            n = slots
        return n

    @wp.func(module=module)
    def verlet_search(q: int, lo: vec3, hi: vec3, fresh: int, margin: scalar,
                      ref_lo: wp.array(dtype=vec3), ref_hi: wp.array(dtype=vec3),
                      gp: wp.array(dtype=scalar), mask: int, start: wp.array(dtype=wp.int32),
                      entries: wp.array(dtype=wp.int32), clo: wp.array(dtype=wp.vec3i),
                      big: wp.array(dtype=wp.int32), big_count: wp.array(dtype=wp.int32),
                      blo: wp.array(dtype=vec3), bhi: wp.array(dtype=vec3), slots: int,
                      cand: wp.array(dtype=wp.int32), ncand: wp.array(dtype=wp.int32),
                      over: wp.array(dtype=wp.int32), what: int):
        """Query q's list (a Verlet list): searched for [lo, hi] grown by ``margin``, which
        is remembered, when ``fresh`` or when [lo, hi] has left the remembered box; else kept."""
        if fresh == 0 and inside_box(lo, hi, ref_lo[q], ref_hi[q]) != 0:
            return
        g = vec3(margin, margin, margin)
        ref_lo[q] = lo - g
        ref_hi[q] = hi + g
        ncand[q] = search(q, lo - g, hi + g, gp, mask, start, entries, clo, big, big_count,
                          blo, bhi, slots, cand, over, what)

    @wp.kernel(module=module)
    def candidates(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                   inv_mass: wp.array(dtype=scalar), fresh: int, margin: scalar,
                   ref_lo: wp.array(dtype=vec3), ref_hi: wp.array(dtype=vec3),
                   gp: wp.array(dtype=scalar), mask: int, start: wp.array(dtype=wp.int32),
                   entries: wp.array(dtype=wp.int32), clo: wp.array(dtype=wp.vec3i),
                   big: wp.array(dtype=wp.int32), big_count: wp.array(dtype=wp.int32),
                   tlo: wp.array(dtype=vec3), thi: wp.array(dtype=vec3), slots: int,
                   cand: wp.array(dtype=wp.int32), ncand: wp.array(dtype=wp.int32),
                   over: wp.array(dtype=wp.int32)):
        """A free cloth vertex's candidate triangles: those whose boxes overlap its path's box
        [min(x, p), max(x, p)] grown by ``margin``; with ``fresh`` = 0 only where the path's
        box has left the box of the last search (the list stays a superset)."""
        i = wp.tid()
        if inv_mass[i] <= zero:
            return
        x0 = x_prev[i]
        xi = p[i]
        lo = wp.min(x0, xi)
        hi = wp.max(x0, xi)
        verlet_search(i, lo, hi, fresh, margin, ref_lo, ref_hi, gp, mask, start, entries, clo,
                      big, big_count, tlo, thi, slots, cand, ncand, over, OVER_CANDIDATES)

    @wp.kernel(module=module)
    def triangle_candidates(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                            cloth_tris: wp.array(dtype=wp.vec3i), fresh: int, margin: scalar,
                            ref_lo: wp.array(dtype=vec3), ref_hi: wp.array(dtype=vec3),
                            gp: wp.array(dtype=scalar), mask: int,
                            start: wp.array(dtype=wp.int32), entries: wp.array(dtype=wp.int32),
                            clo: wp.array(dtype=wp.vec3i), big: wp.array(dtype=wp.int32),
                            big_count: wp.array(dtype=wp.int32), vlo: wp.array(dtype=vec3),
                            vhi: wp.array(dtype=vec3), slots: int,
                            cand: wp.array(dtype=wp.int32), ncand: wp.array(dtype=wp.int32),
                            over: wp.array(dtype=wp.int32)):
        """A cloth triangle's candidate collider vertices: those whose paths' boxes overlap
        the box of its corners' paths grown by ``margin`` (with ``fresh`` = 0 only where that
        box has left the last search's)."""
        f = wp.tid()
        tri = cloth_tris[f]
        xa0 = x_prev[tri[0]]
        xb0 = x_prev[tri[1]]
        xc0 = x_prev[tri[2]]
        xa1 = p[tri[0]]
        xb1 = p[tri[1]]
        xc1 = p[tri[2]]
        lo = wp.min(wp.min(wp.min(xa0, xb0), wp.min(xc0, xa1)), wp.min(xb1, xc1))
        hi = wp.max(wp.max(wp.max(xa0, xb0), wp.max(xc0, xa1)), wp.max(xb1, xc1))
        verlet_search(f, lo, hi, fresh, margin, ref_lo, ref_hi, gp, mask, start, entries, clo,
                      big, big_count, vlo, vhi, slots, cand, ncand, over,
                      OVER_TRIANGLE_CANDIDATES)

    @wp.kernel(module=module)
    def narrow(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
               inv_mass: wp.array(dtype=scalar), margin: scalar,
               ref_lo: wp.array(dtype=vec3), ref_hi: wp.array(dtype=vec3),
               tlo: wp.array(dtype=vec3), thi: wp.array(dtype=vec3), slots: int,
               cand: wp.array(dtype=wp.int32), ncand: wp.array(dtype=wp.int32)):
        """A free cloth vertex's candidate triangles cut to those whose boxes overlap its path's
        box grown by ``margin`` (a smaller margin than the search's, which is remembered: the
        list a search with it would find, as every box it lies in lay in the wider one's and
        the grid's region holds every box)."""
        i = wp.tid()
        if inv_mass[i] <= zero:
            return
        x0 = x_prev[i]
        xi = p[i]
        g = vec3(margin, margin, margin)
        lo = wp.min(x0, xi) - g
        hi = wp.max(x0, xi) + g
        ref_lo[i] = lo
        ref_hi[i] = hi
        n = int(0)
        for s in range(ncand[i]):
            j = cand[i * slots + s]
            if overlap(lo, hi, tlo[j], thi[j]) != 0:
                cand[i * slots + n] = j
                n += 1
        ncand[i] = n

    @wp.func(module=module)
    def winding(x: vec3, v0: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i)) -> scalar:
        """Generalized winding number of the collider at x (Jacobson et al. 2013; solid angles
        after Van Oosterom and Strackee 1983). Mirrors mesh_contact.winding_numbers."""
        total = zero
        for j in range(tris.shape[0]):
            t = tris[j]
            a = v0[t[0]] - x
            b = v0[t[1]] - x
            c = v0[t[2]] - x
            la = wp.length(a)
            lb = wp.length(b)
            lc = wp.length(c)
            det = wp.dot(a, wp.cross(b, c))
            den = la * lb * lc + wp.dot(a, b) * lc + wp.dot(b, c) * la + wp.dot(c, a) * lb
            total += wp.atan2(det, den)
        return scalar(2.0) * total / four_pi

    @wp.kernel(module=module)
    def find_trapped(x_prev: wp.array(dtype=vec3), inv_mass: wp.array(dtype=scalar),
                     v0: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                     n0: wp.array(dtype=vec3), orientation: wp.array(dtype=scalar), step: int,
                     slots: int, cand: wp.array(dtype=wp.int32),
                     ncand: wp.array(dtype=wp.int32), trapped: wp.array(dtype=wp.int32)):
        """The fail-safe of closed meshes: a cloth vertex behind its nearest candidate
        triangles at the substep's start, with winding number > 1/2 there, is trapped (kept
        with the nearest triangle only, pushed outward). Mirrors mesh_contact.find_trapped,
        except for who gets the exact test: where several triangles are nearest (a shared
        edge or corner), the vertex is behind them when it is behind the sum of their normals
        (the edge's or corner's pseudo-normal up to weights, Baerentzen and Aanaes 2005), so
        points outside a ridge are not tested; and there is no cap on the suspects."""
        i = wp.tid()
        trapped[i] = -1
        orient = orientation[step]
        if inv_mass[i] <= zero or orient == zero or ncand[i] == 0:
            return
        x0 = x_prev[i]
        behind = int(0)  # behind some candidate's plane: else it cannot be behind the nearest
        for s in range(ncand[i]):
            j = cand[i * slots + s]
            if orient * wp.dot(x0 - v0[tris[j][0]], n0[j]) < zero:
                behind = 1
        if behind == 0:
            return
        best = int(-1)
        best_d2 = zero
        best_diff = vec3(zero, zero, zero)
        for s in range(ncand[i]):
            j = cand[i * slots + s]
            t = tris[j]
            a = v0[t[0]]
            b = v0[t[1]]
            c = v0[t[2]]
            u, v, w, face = closest_point_triangle(x0, a, b, c)
            diff = x0 - (a * u + b * v + c * w)
            d2 = wp.dot(diff, diff)
            if best < 0 or d2 < best_d2 or (d2 == best_d2 and j < best):
                best = j
                best_d2 = d2
                best_diff = diff
        near = best_d2 * scalar(1.0 + 1e-4) + tiny * tiny
        pseudo = vec3(zero, zero, zero)
        for s in range(ncand[i]):
            j = cand[i * slots + s]
            t = tris[j]
            a = v0[t[0]]
            b = v0[t[1]]
            c = v0[t[2]]
            u, v, w, face = closest_point_triangle(x0, a, b, c)
            diff = x0 - (a * u + b * v + c * w)
            if wp.dot(diff, diff) <= near:
                pseudo = pseudo + n0[j]
        if orient * wp.dot(best_diff, pseudo) >= zero:
            return
        if wp.abs(winding(x0, v0, tris)) > half_:
            trapped[i] = best

    @wp.func(module=module)
    def continuous_pass(i: int, xi: vec3, x0: vec3, v0: wp.array(dtype=vec3),
                        v1: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                        n0: wp.array(dtype=vec3), n1: wp.array(dtype=vec3), own: scalar,
                        slots: int, cand: wp.array(dtype=wp.int32),
                        ncand: wp.array(dtype=wp.int32)) -> vec3:
        """The vertex after the continuous test: at its path's earliest crossing of a
        candidate triangle, carried with the triangle to the substep's end, ``own`` out on
        its starting side; unchanged without a crossing. Mirrors mesh_contact._continuous."""
        best = int(-1)
        best_t = one
        bu = one
        bv = zero
        bw = zero
        best_side = zero
        dx = xi - x0
        for s in range(ncand[i]):
            j = cand[i * slots + s]
            t = tris[j]
            a0 = v0[t[0]]
            b0 = v0[t[1]]
            c0 = v0[t[2]]
            a1 = v1[t[0]]
            b1 = v1[t[1]]
            c1 = v1[t[2]]
            plane0 = wp.dot(x0 - a0, n0[j])
            if may_cross(plane0, dx, a0, a1, b0, b1, c0, c1) == 0:
                continue
            hit, th, u, v, w, side = first_crossing(x0, xi, a0, a1, b0, b1, c0, c1)
            if hit != 0 and (best < 0 or th < best_t or (th == best_t and j < best)):
                best = j
                best_t = th
                bu = u
                bv = v
                bw = w
                best_side = side
        if best < 0:
            return xi
        t = tris[best]
        at = v1[t[0]] * bu + v1[t[1]] * bv + v1[t[2]] * bw
        return at + n1[best] * (best_side * own)

    @wp.kernel(module=module)
    def cloth_vertices(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                       inv_mass: wp.array(dtype=scalar),
                       thickness_scale: wp.array(dtype=scalar),
                       friction_scale: wp.array(dtype=scalar), v0: wp.array(dtype=vec3),
                       v1: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                       n0: wp.array(dtype=vec3), n1: wp.array(dtype=vec3),
                       orientation: wp.array(dtype=scalar), step: int, slots: int,
                       cand: wp.array(dtype=wp.int32), ncand: wp.array(dtype=wp.int32),
                       trapped: wp.array(dtype=wp.int32), moved: wp.array(dtype=wp.int32),
                       thickness: scalar, mu_s: scalar, mu_k: scalar, h: scalar,
                       contact: wp.array(dtype=wp.int32),
                       contact_normal: wp.array(dtype=vec3),
                       surface_velocity: wp.array(dtype=vec3)):
        """A free cloth vertex against its candidate triangles: the continuous test, then the
        sided discrete push to the thickness on the side it started on from its most violated
        pair, with Coulomb friction relative to the surface point's motion. ``moved[i]`` is 1
        where the discrete push acted. Mirrors mesh_contact.project_cloth_vertices."""
        i = wp.tid()
        moved[i] = 0
        if inv_mass[i] <= zero or ncand[i] == 0:
            return
        x0 = x_prev[i]
        own = thickness * thickness_scale[i]
        mine = trapped[i]
        orient = orientation[step]
        xi = p[i]
        if mine < 0:
            xi = continuous_pass(i, xi, x0, v0, v1, tris, n0, n1, own, slots, cand, ncand)
        best = int(-1)
        best_gap = zero
        best_n = vec3(zero, zero, zero)
        bu = zero
        bv = zero
        bw = zero
        for s in range(ncand[i]):
            j = cand[i * slots + s]
            if mine >= 0 and j != mine:
                continue
            t = tris[j]
            a0 = v0[t[0]]
            a1 = v1[t[0]]
            b1 = v1[t[1]]
            c1 = v1[t[2]]
            nj0 = n0[j]
            nj1 = n1[j]
            side = sgn(wp.dot(x0 - a0, nj0))
            if mine >= 0:
                side = orient
            if side == zero:  # in the plane at the start: the side the triangle moves toward
                shift = ((a1 - a0) + (b1 - v0[t[1]]) + (c1 - v0[t[2]])) * third
                toward = sgn(wp.dot(shift, nj0))
                side = toward
                if toward == zero:
                    side = orient
                    if orient == zero:
                        side = one
            if side * wp.dot(xi - a1, nj1) >= own:
                continue
            u, v, w, face = closest_point_triangle(xi, a1, b1, c1)
            diff = xi - (a1 * u + b1 * v + c1 * w)
            dist = wp.length(diff)
            plane = side * wp.dot(diff, nj1)
            if face == 0 and plane < zero:
                pu, pv, pw = barycentric(xi, a1, b1, c1)
                if pu >= -inside_tol and pv >= -inside_tol and pw >= -inside_tol:
                    face = 1
            if mine >= 0:
                face = 1
            gap = dist
            nrm = nj1 * side
            if face != 0:
                gap = plane
            elif dist > zero:
                nrm = diff / dist
            if gap < own and (best < 0 or gap < best_gap or (gap == best_gap and j < best)):
                best = j
                best_gap = gap
                best_n = nrm
                bu = u
                bv = v
                bw = w
        if best < 0:
            p[i] = xi
            return
        t = tris[best]
        depth = own - best_gap
        target = xi + best_n * depth
        surface = ((v1[t[0]] - v0[t[0]]) * bu + (v1[t[1]] - v0[t[1]]) * bv
                   + (v1[t[2]] - v0[t[2]]) * bw)
        fs = friction_scale[i]
        target = contact_friction(target, x0, surface, best_n, depth, mu_s * fs, mu_k * fs)
        p[i] = target
        moved[i] = 1
        contact[i] = 1
        contact_normal[i] = best_n
        surface_velocity[i] = surface / h

    @wp.kernel(module=module)
    def recheck(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                inv_mass: wp.array(dtype=scalar), thickness_scale: wp.array(dtype=scalar),
                v0: wp.array(dtype=vec3), v1: wp.array(dtype=vec3),
                tris: wp.array(dtype=wp.vec3i), n0: wp.array(dtype=vec3),
                n1: wp.array(dtype=vec3), slots: int, cand: wp.array(dtype=wp.int32),
                ncand: wp.array(dtype=wp.int32), trapped: wp.array(dtype=wp.int32),
                moved: wp.array(dtype=wp.int32), thickness: scalar):
        """The continuous test again for the vertices moved since it last ran (their
        candidates queried anew). Mirrors mesh_contact.recheck."""
        i = wp.tid()
        if moved[i] == 0 or inv_mass[i] <= zero or trapped[i] >= 0:
            return
        p[i] = continuous_pass(i, p[i], x_prev[i], v0, v1, tris, n0, n1,
                               thickness * thickness_scale[i], slots, cand, ncand)

    # --- collider vertices against the cloth's triangles --------------------------------------
    @wp.kernel(module=module)
    def collider_vertices(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                          inv_mass: wp.array(dtype=scalar),
                          thickness_scale: wp.array(dtype=scalar),
                          cloth_tris: wp.array(dtype=wp.vec3i), v0: wp.array(dtype=vec3),
                          v1: wp.array(dtype=vec3), slots: int,
                          cand: wp.array(dtype=wp.int32), ncand: wp.array(dtype=wp.int32),
                          thickness: scalar,
                          push_len: wp.array(dtype=scalar), push_dir: wp.array(dtype=vec3)):
        """A cloth triangle against its candidate collider vertices: a
        vertex that crosses it, or ends within its thickness above or below it, pushes its
        corners away along its normal, each by its barycentric weight and inverse mass.
        Per corner the largest push (``push_len[3 f + m]`` along ``push_dir``) is kept for
        :func:`apply_pushes`. Mirrors mesh_contact.project_collider_vertices."""
        f = wp.tid()
        tri = cloth_tris[f]
        ia = tri[0]
        ib = tri[1]
        ic = tri[2]
        xa0 = x_prev[ia]
        xb0 = x_prev[ib]
        xc0 = x_prev[ic]
        xa1 = p[ia]
        xb1 = p[ib]
        xc1 = p[ic]
        best0 = zero
        best1 = zero
        best2 = zero
        dir0 = vec3(zero, zero, zero)
        dir1 = dir0
        dir2 = dir0
        from0 = int(-1)
        from1 = int(-1)
        from2 = int(-1)
        if ncand[f] > 0:
            own = thickness * (thickness_scale[ia] + thickness_scale[ib]
                               + thickness_scale[ic]) / scalar(3.0)
            nrm0 = unit(wp.cross(xb0 - xa0, xc0 - xa0))
            nrm1 = unit(wp.cross(xb1 - xa1, xc1 - xa1))
            wa = inv_mass[ia]
            wb = inv_mass[ib]
            wc = inv_mass[ic]
            for s in range(ncand[f]):
                k = cand[f * slots + s]
                q0 = v0[k]
                q1 = v1[k]
                dq = q1 - q0
                plane0 = wp.dot(q0 - xa0, nrm0)
                side = sgn(plane0)
                hit = int(0)
                if may_cross(plane0, dq, xa0, xa1, xb0, xb1, xc0, xc1) != 0:
                    hit, th, hu, hv, hw, hs = first_crossing(
                        q0, q1, xa0, xa1, xb0, xb1, xc0, xc1)
                plane1 = wp.dot(q1 - xa1, nrm1)
                if side == zero:  # the side its own path moves away from
                    side = -sgn(wp.dot(dq, nrm0))
                    if side == zero:
                        side = one
                if hit == 0 and wp.abs(plane1) >= own:
                    continue
                u, v, w = barycentric(q1, xa1, xb1, xc1)
                gap = side * plane1
                inside = u >= -edge_slack and v >= -edge_slack and w >= -edge_slack
                if hit == 0 and not (inside and gap < own and gap > -own):
                    continue
                u = wp.max(u, zero)
                v = wp.max(v, zero)
                w = wp.max(w, zero)
                total = wp.max(u + v + w, tiny)
                u = u / total
                v = v / total
                w = w / total
                den = wa * u * u + wb * v * v + wc * w * w
                if den <= zero:
                    continue
                g = side * wp.dot(q1 - (xa1 * u + xb1 * v + xc1 * w), nrm1)
                c = wp.min(g - own, zero)
                scale = c * side / den
                la = scale * wa * u
                lb = scale * wb * v
                lc = scale * wc * w
                if la != zero and (wp.abs(la) > wp.abs(best0) or (
                        wp.abs(la) == wp.abs(best0) and k < from0)):
                    best0 = la
                    dir0 = nrm1
                    from0 = k
                if lb != zero and (wp.abs(lb) > wp.abs(best1) or (
                        wp.abs(lb) == wp.abs(best1) and k < from1)):
                    best1 = lb
                    dir1 = nrm1
                    from1 = k
                if lc != zero and (wp.abs(lc) > wp.abs(best2) or (
                        wp.abs(lc) == wp.abs(best2) and k < from2)):
                    best2 = lc
                    dir2 = nrm1
                    from2 = k
        push_len[3 * f] = best0
        push_len[3 * f + 1] = best1
        push_len[3 * f + 2] = best2
        push_dir[3 * f] = dir0
        push_dir[3 * f + 1] = dir1
        push_dir[3 * f + 2] = dir2

    @wp.kernel(module=module)
    def apply_pushes(p: wp.array(dtype=vec3), cloth_tris: wp.array(dtype=wp.vec3i),
                     tri_start: wp.array(dtype=wp.int32), tri_list: wp.array(dtype=wp.int32),
                     push_len: wp.array(dtype=scalar), push_dir: wp.array(dtype=vec3),
                     moved: wp.array(dtype=wp.int32)):
        """Each cloth vertex takes the largest push of its triangles' corners (pushes under
        one triangle move its corners the same way: summing them would overshoot); ``moved``
        gains the vertices pushed."""
        i = wp.tid()
        best = zero
        best_dir = vec3(zero, zero, zero)
        for s in range(tri_start[i], tri_start[i + 1]):
            f = tri_list[s]
            tri = cloth_tris[f]
            m = int(0)
            if tri[1] == i:
                m = 1
            elif tri[2] == i:
                m = 2
            length = push_len[3 * f + m]
            if wp.abs(length) > wp.abs(best):
                best = length
                best_dir = push_dir[3 * f + m]
        if best != zero:
            p[i] = p[i] + best_dir * best
            moved[i] = 1

    # --- sharp collider edges against the cloth's edges -----------------------------------------
    @wp.kernel(module=module)
    def edge_boxes(v0: wp.array(dtype=vec3), v1: wp.array(dtype=vec3),
                   sharp: wp.array(dtype=wp.vec2i), band: scalar, lo: wp.array(dtype=vec3),
                   hi: wp.array(dtype=vec3)):
        """Each sharp edge's box over the substep, grown by ``band``."""
        k = wp.tid()
        e = sharp[k]
        c0 = v0[e[0]]
        d0 = v0[e[1]]
        c1 = v1[e[0]]
        d1 = v1[e[1]]
        g = vec3(band, band, band)
        lo[k] = wp.min(wp.min(c0, d0), wp.min(c1, d1)) - g
        hi[k] = wp.max(wp.max(c0, d0), wp.max(c1, d1)) + g

    @wp.kernel(module=module)
    def edge_candidates(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                        cloth_edges: wp.array(dtype=wp.vec2i), fresh: int, margin: scalar,
                        ref_lo: wp.array(dtype=vec3), ref_hi: wp.array(dtype=vec3),
                        gp: wp.array(dtype=scalar), mask: int,
                        start: wp.array(dtype=wp.int32), entries: wp.array(dtype=wp.int32),
                        clo: wp.array(dtype=wp.vec3i), big: wp.array(dtype=wp.int32),
                        big_count: wp.array(dtype=wp.int32), elo: wp.array(dtype=vec3),
                        ehi: wp.array(dtype=vec3), slots: int,
                        cand: wp.array(dtype=wp.int32), ncand: wp.array(dtype=wp.int32),
                        over: wp.array(dtype=wp.int32)):
        """A cloth edge's candidate sharp edges: those whose boxes overlap the box of its
        ends' paths grown by ``margin`` (a Verlet list, as the others)."""
        f = wp.tid()
        e = cloth_edges[f]
        a0 = x_prev[e[0]]
        b0 = x_prev[e[1]]
        a1 = p[e[0]]
        b1 = p[e[1]]
        lo = wp.min(wp.min(a0, b0), wp.min(a1, b1))
        hi = wp.max(wp.max(a0, b0), wp.max(a1, b1))
        verlet_search(f, lo, hi, fresh, margin, ref_lo, ref_hi, gp, mask, start, entries, clo,
                      big, big_count, elo, ehi, slots, cand, ncand, over, OVER_EDGE_CANDIDATES)

    @wp.kernel(module=module)
    def collider_edges(p: wp.array(dtype=vec3), x_prev: wp.array(dtype=vec3),
                       inv_mass: wp.array(dtype=scalar),
                       thickness_scale: wp.array(dtype=scalar),
                       cloth_edges: wp.array(dtype=wp.vec2i), sharp: wp.array(dtype=wp.vec2i),
                       v0: wp.array(dtype=vec3), v1: wp.array(dtype=vec3), slots: int,
                       cand: wp.array(dtype=wp.int32), ncand: wp.array(dtype=wp.int32),
                       thickness: scalar, push_len: wp.array(dtype=scalar),
                       push_dir: wp.array(dtype=vec3)):
        """A cloth edge against its candidate sharp edges: at closest points inside both, a
        gap below the thickness on the side it started on pushes its ends along the edges'
        normal by their weights and inverse masses; per end the largest push is kept
        (``push_len[2 f + m]`` along ``push_dir``). Mirrors
        pbdcloth.colliders.mesh_edges.project_collider_edges."""
        f = wp.tid()
        e = cloth_edges[f]
        best0 = zero
        best1 = zero
        dir0 = vec3(zero, zero, zero)
        dir1 = dir0
        if ncand[f] > 0:
            a0 = x_prev[e[0]]
            b0 = x_prev[e[1]]
            a1 = p[e[0]]
            b1 = p[e[1]]
            wa = inv_mass[e[0]]
            wb = inv_mass[e[1]]
            own = thickness * half_ * (thickness_scale[e[0]] + thickness_scale[e[1]])
            ab = b1 - a1
            for s in range(ncand[f]):
                k = cand[f * slots + s]
                c = sharp[k]
                c0 = v0[c[0]]
                d0 = v0[c[1]]
                c1 = v1[c[0]]
                d1 = v1[c[1]]
                m0 = wp.cross(b0 - a0, d0 - c0)
                s0, t0 = closest_points_segments(a0, b0, c0, d0)
                side = sgn(wp.dot(m0, (a0 + (b0 - a0) * s0) - (c0 + (d0 - c0) * t0)))
                cd = d1 - c1
                m1 = wp.cross(ab, cd)
                len1 = wp.length(m1)
                lens = wp.sqrt(wp.dot(ab, ab) * wp.dot(cd, cd))
                sp, tp = closest_points_segments(a1, b1, c1, d1)
                if not (sp > zero and sp < one and tp > zero and tp < one):
                    continue
                if side == zero or not (len1 > parallel * lens) or not (
                        wp.dot(m0, m0) > zero):
                    continue
                n = m1 / len1
                if wp.dot(n, m0) < zero:
                    n = -n
                gap = side * wp.dot(n, (a1 + ab * sp) - (c1 + cd * tp))
                if not (gap < own):
                    continue
                den = wa * (one - sp) * (one - sp) + wb * sp * sp
                if not (den > zero):
                    continue
                lam = (own - gap) / den
                la = lam * wa * (one - sp)
                lb = lam * wb * sp
                if la > zero and la > best0:
                    best0 = la
                    dir0 = n * side
                if lb > zero and lb > best1:
                    best1 = lb
                    dir1 = n * side
        push_len[2 * f] = best0
        push_len[2 * f + 1] = best1
        push_dir[2 * f] = dir0
        push_dir[2 * f + 1] = dir1

    @wp.kernel(module=module)
    def apply_edge_pushes(p: wp.array(dtype=vec3), cloth_edges: wp.array(dtype=wp.vec2i),
                          edge_start: wp.array(dtype=wp.int32),
                          edge_list: wp.array(dtype=wp.int32),
                          push_len: wp.array(dtype=scalar), push_dir: wp.array(dtype=vec3),
                          moved: wp.array(dtype=wp.int32)):
        """Each cloth vertex takes the largest push of its edges' ends; ``moved`` gains the
        vertices pushed."""
        i = wp.tid()
        best = zero
        best_dir = vec3(zero, zero, zero)
        for s in range(edge_start[i], edge_start[i + 1]):
            f = edge_list[s]
            m = int(0)
            if cloth_edges[f][1] == i:
                m = 1
            length = push_len[2 * f + m]
            if length > best:
                best = length
                best_dir = push_dir[2 * f + m]
        if best > zero:
            p[i] = p[i] + best_dir * best
            moved[i] = 1

    return SimpleNamespace(
        edge_boxes=edge_boxes, edge_candidates=edge_candidates, collider_edges=collider_edges,
        apply_edge_pushes=apply_edge_pushes,
        module=module, scalar=scalar, vec3=vec3, mesh_pose=mesh_pose,
        mesh_triangles=mesh_triangles, grid_clear=grid_clear, grid_count=grid_count,
        scan_blocks=scan_blocks, scan_top=scan_top, scan_add=scan_add, grid_fill=grid_fill,
        candidates=candidates, triangle_candidates=triangle_candidates, narrow=narrow,
        find_trapped=find_trapped, cloth_vertices=cloth_vertices,
        recheck=recheck, collider_vertices=collider_vertices, apply_pushes=apply_pushes)
