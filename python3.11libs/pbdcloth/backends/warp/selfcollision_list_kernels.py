"""Device code of the Warp stage's candidate lists (see :mod:`.selfcollision_lists`).

The numpy stage's Verlet lists (:mod:`pbdcloth.selfcollision.lists`) per pair: reference
positions, movers, a full build or a partial update for the movers only, and a row grid on
sorted cell keys for the searches.

Row grid: the points' bounding box picks the sweep axis ``s`` (its longest side); the two
other axes are cut into square rows of size ``c`` and the sweep axis into short cells of
``c / 4``. A point's key is ``(hash(row) + sweep cell) mod B`` (``B`` a power of two), so the
cells of one row are consecutive keys and a counting sort of the keys puts the points of a
row's sweep range in one or two runs of the sorted entries: a box reads, for each row it
overlaps, the entries between two offsets (the numpy ``SweepGrid``'s two ``searchsorted``
calls, at the resolution of a sweep cell), and keeps those that pass the exact box test.
Different rows may share keys; the exact test removes their points. Entries within a key are
sorted by point index after the fill, so the grid does not depend on thread order.

Slots: each triangle (each edge) keeps its partners (vertices; edges ``j > i``) sorted in its
own ``S`` slots, between substeps too. A full build refills all of them; a partial update
drops the partners that moved from the slots of the triangles (edges) that did not, appends
the new pairs of the movers to the slots of their lower owner (atomic cursors), re-queries
the owners that moved, and sorts the slots again: the pairs a full build at the reference
positions gives, in the same order.
"""

# mypy: ignore-errors
# (kernel bodies and annotations are Warp's typed language, checked by Warp's code generator)
# No ``from __future__ import annotations``: Warp reads the annotations as objects.
# ruff: noqa: UP018, RUF046
import functools
from types import SimpleNamespace
from typing import Any

import warp as wp

from .selfcollision_kernels import STAT_PARTIAL, STAT_REBUILDS, STAT_REFRESHED, build_self_kernels

#: Slots of the list state array (int32).
LS_MODE = 0  # 0: lists unchanged, 1: partial update, 2: full build
LS_MOVERS = 1  # particles deviating by more than half the current skin
LS_FAST = 2  # ... by more than half the large skin
LS_SIZE = 4

#: Slots of a grid's float parameters.
GF_INV_ROW, GF_INV_SWEEP, GF_LO = 0, 1, 2  # GF_LO.. GF_LO + 2: the box's low corner
GF_SIZE = 8


@functools.cache
def build_list_kernels(precision: str = "float32") -> SimpleNamespace:
    """The candidate-list kernels for scalars of ``precision`` ("float32" or "float64")."""
    base = build_self_kernels(precision)
    scalar: Any = base.scalar
    vec3: Any = base.vec3
    module = f"pbdcloth_warp_selflists_{precision}"
    wp.set_module_options({"enable_backward": False}, module=module)
    zero = scalar(0.0)
    half_ = scalar(0.5)
    closest_point_triangle = base.closest_point_triangle
    closest_points_segments = base.closest_points_segments
    listed = base.listed

    # --- reference positions and movers -------------------------------------------------------
    @wp.kernel(module=module)
    def deviation(p: wp.array(dtype=vec3), ref: wp.array(dtype=vec3),
                  mean: wp.array(dtype=vec3), skin: wp.array(dtype=scalar), large: scalar,
                  state: wp.array(dtype=wp.int32), mover: wp.array(dtype=wp.int32)):
        """mover[i] = |(p - ref) - mean| > skin / 2; counts of those and of the particles past
        half the large skin (integer atomics: order-free)."""
        i = wp.tid()
        d = (p[i] - ref[i]) - mean[0]
        dev2 = wp.dot(d, d)
        s = skin[0]
        m = 0
        if dev2 > scalar(0.25) * s * s:
            m = 1
            wp.atomic_add(state, LS_MOVERS, 1)
        if dev2 > scalar(0.25) * large * large:
            wp.atomic_add(state, LS_FAST, 1)
        mover[i] = m

    @wp.kernel(module=module)
    def decide(state: wp.array(dtype=wp.int32), force: wp.array(dtype=wp.int32), limit: scalar,
               r: scalar, small: scalar, large: scalar, skin: wp.array(dtype=scalar),
               radius: wp.array(dtype=scalar), gate: wp.array(dtype=wp.int32),
               stats: wp.array(dtype=wp.int32)):
        """CandidateLists.update's choice: a full build (forced, or more than ``limit``
        particles moved; skin: the small one when more than ``limit`` moved past half the
        large one), a partial update (some moved) or nothing. gate[0] = lists change."""
        mode = 0
        moved = state[LS_MOVERS]
        if force[0] != 0:
            mode = 2
            skin[0] = large
        elif scalar(moved) > limit:
            mode = 2
            if scalar(state[LS_FAST]) > limit:
                skin[0] = small
            else:
                skin[0] = large
        elif moved > 0:
            mode = 1
            wp.atomic_add(stats, STAT_PARTIAL, 1)
            wp.atomic_add(stats, STAT_REFRESHED, moved)
        if mode == 2:
            wp.atomic_add(stats, STAT_REBUILDS, 1)
        state[LS_MODE] = mode
        force[0] = 0
        state[LS_MOVERS] = 0
        state[LS_FAST] = 0
        radius[0] = r + skin[0]
        gate[0] = wp.min(mode, 1)

    @wp.kernel(module=module)
    def refresh(p: wp.array(dtype=vec3), mean: wp.array(dtype=vec3),
                state: wp.array(dtype=wp.int32), ref: wp.array(dtype=vec3),
                mover: wp.array(dtype=wp.int32)):
        """Full build: ref = p, everyone a mover; partial: the movers' ref = p - mean."""
        i = wp.tid()
        mode = state[LS_MODE]
        if mode == 2:
            ref[i] = p[i]
            mover[i] = 1
        elif mode == 1:
            if mover[i] != 0:
                ref[i] = p[i] - mean[0]
        else:
            mover[i] = 0

    # --- row grid -----------------------------------------------------------------------------
    @wp.kernel(module=module)
    def bounds_reset(lo: wp.array(dtype=scalar), hi: wp.array(dtype=scalar),
                     gate: wp.array(dtype=wp.int32)):
        if gate[0] == 0:
            return
        for k in range(3):
            lo[k] = scalar(1e30)
            hi[k] = scalar(-1e30)

    @wp.kernel(module=module)
    def bounds(points: wp.array(dtype=vec3), gate: wp.array(dtype=wp.int32),
               lo: wp.array(dtype=scalar), hi: wp.array(dtype=scalar)):
        """Bounding box of the points (atomic min / max: order-free)."""
        if gate[0] == 0:
            return
        x = points[wp.tid()]
        for k in range(3):
            wp.atomic_min(lo, k, x[k])
            wp.atomic_max(hi, k, x[k])

    @wp.kernel(module=module)
    def grid_setup(lo: wp.array(dtype=scalar), hi: wp.array(dtype=scalar),
                   radius: wp.array(dtype=scalar), extent: scalar, scale: scalar,
                   gate: wp.array(dtype=wp.int32), gf: wp.array(dtype=scalar),
                   gi: wp.array(dtype=wp.int32)):
        """Sweep axis (the longest side of the box), row size ``scale (extent + 2 radius)``
        (the mean extent of a box grown by the radius), sweep cells of a quarter of it."""
        if gate[0] == 0:
            return
        s = int(0)
        best = hi[0] - lo[0]
        for k in range(1, 3):
            if hi[k] - lo[k] > best:
                best = hi[k] - lo[k]
                s = k
        gi[0] = s
        gi[1] = (s + 1) % 3
        gi[2] = (s + 2) % 3
        cell = wp.max(scale * (extent + scalar(2.0) * radius[0]), scalar(1e-9))
        gf[GF_INV_ROW] = scalar(1.0) / cell
        gf[GF_INV_SWEEP] = scalar(4.0) / cell
        for k in range(3):
            gf[GF_LO + k] = lo[k]

    @wp.func(module=module)
    def row_hash(iu: int, iw: int, mask: int) -> int:
        h = (wp.int64(iu) * wp.int64(73856093)) ^ (wp.int64(iw) * wp.int64(19349663))
        return int(h & wp.int64(mask))

    @wp.func(module=module)
    def cell_index(x: scalar, lo: scalar, inv: scalar) -> int:
        return int(wp.floor((x - lo) * inv))

    @wp.kernel(module=module)
    def grid_keys(points: wp.array(dtype=vec3), gf: wp.array(dtype=scalar),
                  gi: wp.array(dtype=wp.int32), mask: int, gate: wp.array(dtype=wp.int32),
                  key: wp.array(dtype=wp.int32), key_count: wp.array(dtype=wp.int32)):
        if gate[0] == 0:
            return
        i = wp.tid()
        x = points[i]
        s = gi[0]
        u = gi[1]
        w = gi[2]
        inv = gf[GF_INV_ROW]
        iu = cell_index(x[u], gf[GF_LO + u], inv)
        iw = cell_index(x[w], gf[GF_LO + w], inv)
        i_s = cell_index(x[s], gf[GF_LO + s], gf[GF_INV_SWEEP])
        k = (row_hash(iu, iw, mask) + i_s) & mask
        key[i] = k
        wp.atomic_add(key_count, k, 1)

    @wp.kernel(module=module)
    def grid_fill(key: wp.array(dtype=wp.int32), start: wp.array(dtype=wp.int32),
                  points: wp.array(dtype=vec3), halves: wp.array(dtype=vec3), boxes: int,
                  gate: wp.array(dtype=wp.int32), cursor: wp.array(dtype=wp.int32),
                  entries: wp.array(dtype=wp.int32), spos: wp.array(dtype=vec3),
                  shalf: wp.array(dtype=vec3)):
        """Counting sort of the keys: each point's index, position (and, with ``boxes``, its
        box's half extent) at its slot of the sorted entries, so that a search reads the
        points of a key run in memory order (:mod:`.selfcollision_native`)."""
        if gate[0] == 0:
            return
        i = wp.tid()
        b = key[i]
        at = start[b] + wp.atomic_add(cursor, b, 1)
        entries[at] = i
        spos[at] = points[i]
        if boxes != 0:
            shalf[at] = halves[i]

    @wp.func(module=module)
    def run(start: wp.array(dtype=wp.int32), k0: int, nk: int, buckets: int, part: int):
        """Entries [begin, end) of keys k0 .. k0 + nk - 1 (mod buckets): part 0 up to the end
        of the table, part 1 what wraps round to its start."""
        if part == 0:
            return start[k0], start[wp.min(k0 + nk, buckets)]
        if k0 + nk > buckets:
            return start[0], start[wp.min(k0 + nk - buckets, k0)]
        return 0, 0

    # --- point-triangle -----------------------------------------------------------------------
    @wp.func(module=module)
    def tri_moving(mover: wp.array(dtype=wp.int32), tri: wp.vec3i) -> int:
        return wp.max(mover[tri[0]], wp.max(mover[tri[1]], mover[tri[2]]))

    @wp.func(module=module)
    def pt_accept(x: vec3, v: int, t: int, tri: wp.vec3i, a: vec3, b: vec3, c: vec3,
                  radius: scalar, excl_start: wp.array(dtype=wp.int32),
                  excluded: wp.array(dtype=wp.int32)) -> int:
        """The numpy stage's _pt_filter for one pair already in the grown box: not a corner,
        within the bounding sphere grown by radius, closest point within radius, not
        excluded at rest."""
        if v == tri[0] or v == tri[1] or v == tri[2]:
            return 0
        centre = (a + b + c) * (scalar(1.0) / scalar(3.0))
        da = a - centre
        db = b - centre
        dc = c - centre
        rad = wp.sqrt(wp.max(wp.max(wp.dot(da, da), wp.dot(db, db)), wp.dot(dc, dc)))
        g = x - centre
        reach = rad + radius
        if wp.dot(g, g) > reach * reach:
            return 0
        u, vv, w, _face = closest_point_triangle(x, a, b, c)
        d = x - (a * u + b * vv + c * w)
        if wp.dot(d, d) >= radius * radius:
            return 0
        if listed(excl_start, excluded, t, v) != 0:
            return 0
        return 1

    @wp.func(module=module)
    def push(owner: int, partner: int, slots: int, cnt: wp.array(dtype=wp.int32),
             keys: wp.array(dtype=wp.int32), need: wp.array(dtype=wp.int32)):
        """partner into owner's next slot (counted past the end: the frame runs again)."""
        f = wp.atomic_add(cnt, owner, 1)
        if f < slots:
            keys[owner * slots + f] = partner
        else:
            wp.atomic_max(need, 0, f + 1)

    @wp.kernel(module=module)
    def compact(owners: wp.array(dtype=wp.vec3i), mover: wp.array(dtype=wp.int32),
                partner_ends: wp.array(dtype=wp.vec2i), family: int,
                state: wp.array(dtype=wp.int32), slots: int, cnt: wp.array(dtype=wp.int32),
                keys: wp.array(dtype=wp.int32)):
        """Partial update, owners that did not move: drop the partners that did (kept in
        order). family 0: owners triangles, partners vertices; 1: both edges (``owners``
        unused, ``partner_ends`` the edges). Owners that moved are emptied (re-queried)."""
        if state[LS_MODE] == 0:
            return
        o = wp.tid()
        moving = int(1)
        if state[LS_MODE] == 1:
            if family == 0:
                moving = tri_moving(mover, owners[o])
            else:
                e = partner_ends[o]
                moving = wp.max(mover[e[0]], mover[e[1]])
        if moving != 0:
            cnt[o] = 0
            return
        m = wp.min(cnt[o], slots)
        j = int(0)
        for k in range(m):
            q = keys[o * slots + k]
            gone = int(0)
            if family == 0:
                gone = mover[q]
            else:
                e = partner_ends[q]
                gone = wp.max(mover[e[0]], mover[e[1]])
            if gone == 0:
                keys[o * slots + j] = q
                j += 1
        cnt[o] = j

    @wp.kernel(module=module)
    def pt_triangles(ref: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                     mover: wp.array(dtype=wp.int32), radius_a: wp.array(dtype=scalar),
                     gf: wp.array(dtype=scalar), gi: wp.array(dtype=wp.int32), mask: int,
                     start: wp.array(dtype=wp.int32), entries: wp.array(dtype=wp.int32),
                     excl_start: wp.array(dtype=wp.int32), excluded: wp.array(dtype=wp.int32),
                     state: wp.array(dtype=wp.int32), slots: int,
                     cnt: wp.array(dtype=wp.int32), keys: wp.array(dtype=wp.int32),
                     need: wp.array(dtype=wp.int32)):
        """Every triangle that moved (all at a full build) against every vertex: those in
        its box grown by the radius that pass :func:`pt_accept`, into its slots."""
        mode = state[LS_MODE]
        if mode == 0:
            return
        t = wp.tid()
        tri = tris[t]
        if mode == 1 and tri_moving(mover, tri) == 0:
            return
        radius = radius_a[0]
        a = ref[tri[0]]
        b = ref[tri[1]]
        c = ref[tri[2]]
        grow = vec3(radius, radius, radius)
        lo = wp.min(wp.min(a, b), c) - grow
        hi = wp.max(wp.max(a, b), c) + grow
        s = gi[0]
        u = gi[1]
        w = gi[2]
        inv = gf[GF_INV_ROW]
        inv_s = gf[GF_INV_SWEEP]
        buckets = mask + 1
        u0 = wp.max(cell_index(lo[u], gf[GF_LO + u], inv), 0)
        u1 = cell_index(hi[u], gf[GF_LO + u], inv)
        w0 = wp.max(cell_index(lo[w], gf[GF_LO + w], inv), 0)
        w1 = cell_index(hi[w], gf[GF_LO + w], inv)
        s0 = wp.max(cell_index(lo[s], gf[GF_LO + s], inv_s), 0)
        nk = wp.min(cell_index(hi[s], gf[GF_LO + s], inv_s) - s0 + 1, buckets)
        if nk <= 0:
            return
        for iu in range(u0, u1 + 1):
            for iw in range(w0, w1 + 1):
                k0 = (row_hash(iu, iw, mask) + s0) & mask
                for part in range(2):
                    e0, e1 = run(start, k0, nk, buckets, part)
                    for k in range(e0, e1):
                        v = entries[k]
                        x = ref[v]
                        if x[0] < lo[0] or x[1] < lo[1] or x[2] < lo[2]:
                            continue
                        if x[0] > hi[0] or x[1] > hi[1] or x[2] > hi[2]:
                            continue
                        if pt_accept(x, v, t, tri, a, b, c, radius, excl_start,
                                     excluded) != 0:
                            push(t, v, slots, cnt, keys, need)

    @wp.kernel(module=module)
    def tri_boxes(ref: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                  state: wp.array(dtype=wp.int32), mid: wp.array(dtype=vec3),
                  half: wp.array(dtype=vec3), maxhalf: wp.array(dtype=scalar)):
        """Centre and half extent of each triangle's box (partial updates only); maxhalf[0]
        the largest half extent component."""
        if state[LS_MODE] != 1:
            return
        t = wp.tid()
        tri = tris[t]
        a = ref[tri[0]]
        b = ref[tri[1]]
        c = ref[tri[2]]
        lo = wp.min(wp.min(a, b), c)
        hi = wp.max(wp.max(a, b), c)
        mid[t] = (lo + hi) * half_
        h = (hi - lo) * half_
        half[t] = h
        wp.atomic_max(maxhalf, 0, wp.max(h[0], wp.max(h[1], h[2])))

    @wp.kernel(module=module)
    def pt_movers(ref: wp.array(dtype=vec3), tris: wp.array(dtype=wp.vec3i),
                  mover: wp.array(dtype=wp.int32), radius_a: wp.array(dtype=scalar),
                  mid: wp.array(dtype=vec3), half: wp.array(dtype=vec3),
                  maxhalf: wp.array(dtype=scalar), gf: wp.array(dtype=scalar),
                  gi: wp.array(dtype=wp.int32), mask: int, start: wp.array(dtype=wp.int32),
                  entries: wp.array(dtype=wp.int32), excl_start: wp.array(dtype=wp.int32),
                  excluded: wp.array(dtype=wp.int32), state: wp.array(dtype=wp.int32),
                  slots: int, cnt: wp.array(dtype=wp.int32), keys: wp.array(dtype=wp.int32),
                  need: wp.array(dtype=wp.int32)):
        """Partial update: each moving vertex against the triangles that did not move (their
        box centres in the grid), into those triangles' slots."""
        if state[LS_MODE] != 1:
            return
        v = wp.tid()
        if mover[v] == 0:
            return
        radius = radius_a[0]
        x = ref[v]
        g = maxhalf[0] + radius
        grow = vec3(g, g, g)
        lo = x - grow
        hi = x + grow
        s = gi[0]
        u = gi[1]
        w = gi[2]
        inv = gf[GF_INV_ROW]
        inv_s = gf[GF_INV_SWEEP]
        buckets = mask + 1
        u0 = wp.max(cell_index(lo[u], gf[GF_LO + u], inv), 0)
        u1 = cell_index(hi[u], gf[GF_LO + u], inv)
        w0 = wp.max(cell_index(lo[w], gf[GF_LO + w], inv), 0)
        w1 = cell_index(hi[w], gf[GF_LO + w], inv)
        s0 = wp.max(cell_index(lo[s], gf[GF_LO + s], inv_s), 0)
        nk = wp.min(cell_index(hi[s], gf[GF_LO + s], inv_s) - s0 + 1, buckets)
        if nk <= 0:
            return
        for iu in range(u0, u1 + 1):
            for iw in range(w0, w1 + 1):
                k0 = (row_hash(iu, iw, mask) + s0) & mask
                for part in range(2):
                    e0, e1 = run(start, k0, nk, buckets, part)
                    for k in range(e0, e1):
                        t = entries[k]
                        tri = tris[t]
                        if tri_moving(mover, tri) != 0:
                            continue
                        d = x - mid[t]
                        h = half[t]
                        if wp.abs(d[0]) > h[0] + radius or wp.abs(d[1]) > h[1] + radius:
                            continue
                        if wp.abs(d[2]) > h[2] + radius:
                            continue
                        if pt_accept(x, v, t, tri, ref[tri[0]], ref[tri[1]], ref[tri[2]],
                                     radius, excl_start, excluded) != 0:
                            push(t, v, slots, cnt, keys, need)

    # --- edge-edge ----------------------------------------------------------------------------
    @wp.kernel(module=module)
    def edge_boxes(ref: wp.array(dtype=vec3), edges: wp.array(dtype=wp.vec2i),
                   state: wp.array(dtype=wp.int32), mid: wp.array(dtype=vec3),
                   half: wp.array(dtype=vec3), maxhalf: wp.array(dtype=scalar)):
        if state[LS_MODE] == 0:
            return
        e = wp.tid()
        a = ref[edges[e][0]]
        b = ref[edges[e][1]]
        mid[e] = (a + b) * half_
        h = vec3(wp.abs(a[0] - b[0]), wp.abs(a[1] - b[1]), wp.abs(a[2] - b[2])) * half_
        half[e] = h
        wp.atomic_max(maxhalf, 0, wp.max(h[0], wp.max(h[1], h[2])))

    @wp.kernel(module=module)
    def ee_edges(ref: wp.array(dtype=vec3), edges: wp.array(dtype=wp.vec2i),
                 mover: wp.array(dtype=wp.int32), radius_a: wp.array(dtype=scalar),
                 mid: wp.array(dtype=vec3), half: wp.array(dtype=vec3),
                 maxhalf: wp.array(dtype=scalar), gf: wp.array(dtype=scalar),
                 gi: wp.array(dtype=wp.int32), mask: int, start: wp.array(dtype=wp.int32),
                 entries: wp.array(dtype=wp.int32), excl_start: wp.array(dtype=wp.int32),
                 excluded: wp.array(dtype=wp.int32), state: wp.array(dtype=wp.int32),
                 slots: int, cnt: wp.array(dtype=wp.int32), keys: wp.array(dtype=wp.int32),
                 need: wp.array(dtype=wp.int32)):
        """Every edge i that moved (all at a full build) against every edge j: the box of i
        grown by the radius overlaps j's, then the numpy stage's _ee_filter. The pair goes to
        the slots of the lower edge; a pair of two moving edges is taken by the lower one."""
        mode = state[LS_MODE]
        if mode == 0:
            return
        i = wp.tid()
        ei = edges[i]
        if mode == 1 and wp.max(mover[ei[0]], mover[ei[1]]) == 0:
            return
        radius = radius_a[0]
        mi = mid[i]
        hi_ = half[i]
        g = maxhalf[0] + radius
        lo = mi - hi_ - vec3(g, g, g)
        hi = mi + hi_ + vec3(g, g, g)
        s = gi[0]
        u = gi[1]
        w = gi[2]
        inv = gf[GF_INV_ROW]
        inv_s = gf[GF_INV_SWEEP]
        buckets = mask + 1
        u0 = wp.max(cell_index(lo[u], gf[GF_LO + u], inv), 0)
        u1 = cell_index(hi[u], gf[GF_LO + u], inv)
        w0 = wp.max(cell_index(lo[w], gf[GF_LO + w], inv), 0)
        w1 = cell_index(hi[w], gf[GF_LO + w], inv)
        s0 = wp.max(cell_index(lo[s], gf[GF_LO + s], inv_s), 0)
        nk = wp.min(cell_index(hi[s], gf[GF_LO + s], inv_s) - s0 + 1, buckets)
        if nk <= 0:
            return
        reach_i = wp.length(hi_)
        r2 = radius * radius
        for iu in range(u0, u1 + 1):
            for iw in range(w0, w1 + 1):
                k0 = (row_hash(iu, iw, mask) + s0) & mask
                for part in range(2):
                    e0, e1 = run(start, k0, nk, buckets, part)
                    for k in range(e0, e1):
                        j = entries[k]
                        if j == i or (mode == 2 and j < i):
                            continue
                        dm = mid[j] - mi
                        hj = half[j]
                        if wp.abs(dm[0]) > hi_[0] + hj[0] + radius:
                            continue
                        if wp.abs(dm[1]) > hi_[1] + hj[1] + radius:
                            continue
                        if wp.abs(dm[2]) > hi_[2] + hj[2] + radius:
                            continue
                        ej = edges[j]
                        if j < i and wp.max(mover[ej[0]], mover[ej[1]]) != 0:
                            continue
                        if ei[0] == ej[0] or ei[0] == ej[1] or ei[1] == ej[0] or ei[1] == ej[1]:
                            continue
                        reach = reach_i + wp.length(hj) + radius
                        if wp.dot(dm, dm) > reach * reach:
                            continue
                        lo_e = wp.min(i, j)
                        hi_e = wp.max(i, j)
                        a1 = edges[lo_e]
                        b1 = edges[hi_e]
                        q1 = ref[a1[0]]
                        q2 = ref[a1[1]]
                        r1 = ref[b1[0]]
                        r3 = ref[b1[1]]
                        sa, sb = closest_points_segments(q1, q2, r1, r3)
                        d = (q1 + (q2 - q1) * sa) - (r1 + (r3 - r1) * sb)
                        if wp.dot(d, d) >= r2:
                            continue
                        if listed(excl_start, excluded, lo_e, hi_e) != 0:
                            continue
                        push(lo_e, hi_e, slots, cnt, keys, need)

    # --- slots to the flat list ---------------------------------------------------------------
    @wp.kernel(module=module)
    def sort_slots(state: wp.array(dtype=wp.int32), slots: int, cnt: wp.array(dtype=wp.int32),
                   keys: wp.array(dtype=wp.int32), kept: wp.array(dtype=wp.int32)):
        """Each owner's partners sorted (insertion sort: short and nearly sorted), and its
        count clamped to the slots."""
        if state[LS_MODE] == 0:
            return
        o = wp.tid()
        m = wp.min(cnt[o], slots)
        base_ = o * slots
        for a in range(base_ + 1, base_ + m):
            key = keys[a]
            b = a - 1
            while b >= base_ and keys[b] > key:
                keys[b + 1] = keys[b]
                b -= 1
            keys[b + 1] = key
        kept[o] = m

    @wp.kernel(module=module)
    def gather(state: wp.array(dtype=wp.int32), family: int, tris: wp.array(dtype=wp.vec3i),
               edges: wp.array(dtype=wp.vec2i), slots: int, kept: wp.array(dtype=wp.int32),
               offsets: wp.array(dtype=wp.int32), keys: wp.array(dtype=wp.int32),
               out: wp.array(dtype=wp.vec4i)):
        """Owner o's pairs as particle quads at out[offsets[o]:] (family 0: (vertex, corners);
        1: (ends of i, ends of j)); those past the capacity are dropped (counted elsewhere)."""
        if state[LS_MODE] == 0:
            return
        o = wp.tid()
        cap = out.shape[0]
        at = offsets[o]
        for f in range(kept[o]):
            if at + f >= cap:
                return
            q = keys[o * slots + f]
            if family == 0:
                tri = tris[o]
                out[at + f] = wp.vec4i(q, tri[0], tri[1], tri[2])
            else:
                a = edges[o]
                b = edges[q]
                out[at + f] = wp.vec4i(a[0], a[1], b[0], b[1])

    @wp.kernel(module=module)
    def list_gate(state: wp.array(dtype=wp.int32), gate: wp.array(dtype=wp.int32)):
        gate[0] = wp.min(state[LS_MODE], 1)

    @wp.kernel(module=module)
    def partial_gate(state: wp.array(dtype=wp.int32), gate: wp.array(dtype=wp.int32)):
        gate[0] = 0
        if state[LS_MODE] == 1:
            gate[0] = 1

    @wp.kernel(module=module)
    def zero_scalar(a: wp.array(dtype=scalar), gate: wp.array(dtype=wp.int32)):
        if gate[0] != 0:
            a[0] = zero

    return SimpleNamespace(**{k: v for k, v in locals().items()
                              if not k.startswith("_") and k not in ("precision", "base")})
