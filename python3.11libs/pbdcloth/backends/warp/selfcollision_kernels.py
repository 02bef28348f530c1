"""Device code of the Warp self-collision stage (see :mod:`.selfcollision`).

The per-pair form of :mod:`pbdcloth.selfcollision.stage`: the same closest points (Ericson
2005, "Real-Time Collision Detection", 5.1.5 and 5.1.9), sides from signed volumes at the start
of the substep, the constraint ``C = n . (x_A - x_B) - t >= 0`` projected as PBD (Müller et al.
2006, eq. 9) with Coulomb friction in position form (Macklin et al. 2014, eq. 24), Jacobi
averaging and the fail-safe revert.

Order independence: no kernel here sums floating-point values in an order that depends on
thread scheduling. Integer counters are added atomically (their values do not depend on order);
float maxima use ``atomic_max`` (order-free); slots filled through atomic cursors (grid cells,
per-particle contact lists) are sorted afterwards by a fixed key; corrections are summed per
particle over its contact list in that sorted order. So a run is bit-identical on the CPU and
(by construction, untested) on CUDA.
"""

# mypy: ignore-errors
# (kernel bodies and annotations are Warp's typed language, checked by Warp's code generator)
# No ``from __future__ import annotations``: Warp reads the annotations as objects.
# ruff: noqa: UP018, RUF046, RUF059
# (Warp needs ``int(0)`` to declare an integer local that loops modify, and ``int(x)`` to
# convert its floats; tuple results are unpacked whole.)
import functools
from types import SimpleNamespace
from typing import Any

import warp as wp

#: Slots of the per-frame statistics array (int32).
STAT_CLAMPED = 0
STAT_REBUILDS = 1
STAT_PT_CANDIDATES = 2
STAT_EE_CANDIDATES = 3
STAT_PT_CONTACTS = 4
STAT_EE_CONTACTS = 5
STAT_REVERTED = 6
STAT_PARTIAL = 7
STAT_REFRESHED = 8
STAT_EVALUATED = 9
STAT_SIZE = 10

#: Slots of the narrow phase's state array (int32).
ST_DONE = 0  # the passes of this iteration stopped (no contact deeper than resolved t)
ST_PROJECTED = 1  # some contact was projected in this iteration (the fail-safe runs)
ST_EPOCH = 2  # count of iterations so far (marks of the fail-safe rounds of this one)
ST_STOP = 3  # the fail-safe rounds of this iteration stopped (no pair left crossed)
ST_ANY = 4  # some pair was found crossed in this round
ST_PASS = 5  # count of passes so far (marks the particles of this pass's contacts)
ST_PASS_ANY = 6  # some contact in this pass (else the per-particle kernels have nothing to do)
ST_SIZE = 8


@functools.cache
def build_self_kernels(precision: str = "float32") -> SimpleNamespace:
    """The self-collision kernels for scalars of ``precision`` ("float32" or "float64")."""
    scalar: Any = wp.float32 if precision == "float32" else wp.float64
    vec3: Any = wp.types.vector(3, scalar)
    vec4: Any = wp.types.vector(4, scalar)
    module = f"pbdcloth_warp_self_{precision}"
    wp.set_module_options({"enable_backward": False}, module=module)
    zero = scalar(0.0)
    one = scalar(1.0)
    tiny = scalar(1e-12)

    # --- helpers ------------------------------------------------------------------------------
    @wp.func(module=module)
    def listed(start: wp.array(dtype=wp.int32), partners: wp.array(dtype=wp.int32), q: int,
               x: int) -> int:
        """1 when ``x`` is among query q's partners ``partners[start[q] : start[q + 1]]`` (a
        short list: the rest exclusions of one triangle or edge), else 0."""
        for k in range(start[q], start[q + 1]):
            if partners[k] == x:
                return 1
        return 0

    @wp.func(module=module)
    def sign(x: scalar) -> scalar:
        if x >= zero:
            return one
        return -one

    @wp.func(module=module)
    def unit(m: vec3) -> vec3:
        length = wp.length(m)
        if length > zero:
            return m / length
        return vec3(zero, zero, zero)

    @wp.func(module=module)
    def safe_div(num: scalar, den: scalar) -> scalar:
        if den != zero:
            return num / den
        return zero

    @wp.func(module=module)
    def closest_point_triangle(p: vec3, a: vec3, b: vec3, c: vec3):
        """Barycentrics (u, v, w) of the closest point of abc to p and whether it is inside
        the face (Ericson 2005, 5.1.5; the regions in his order, as the numpy version)."""
        ab = b - a
        ac = c - a
        ap = p - a
        d1 = wp.dot(ab, ap)
        d2 = wp.dot(ac, ap)
        aa = wp.dot(ab, ab)
        cc = wp.dot(ac, ac)
        bc_ = wp.dot(ab, ac)
        d3 = d1 - aa
        d4 = d2 - bc_
        d5 = d1 - bc_
        d6 = d2 - cc
        vc = d1 * d4 - d3 * d2
        vb = d5 * d2 - d1 * d6
        va = d3 * d6 - d5 * d4
        den = va + vb + vc
        v = zero
        w = zero
        face = 0
        d43 = d4 - d3
        d56 = d5 - d6
        if d1 <= zero and d2 <= zero:
            v = zero
            w = zero
        elif d3 >= zero and d4 <= d3:
            v = one
            w = zero
        elif vc <= zero and d1 >= zero and d3 <= zero:
            v = safe_div(d1, d1 - d3)
            w = zero
        elif d6 >= zero and d5 <= d6:
            v = zero
            w = one
        elif vb <= zero and d2 >= zero and d6 <= zero:
            v = zero
            w = safe_div(d2, d2 - d6)
        elif va <= zero and d43 >= zero and d56 >= zero:
            w = safe_div(d43, d43 + d56)
            v = one - w
        else:
            v = safe_div(vb, den)
            w = safe_div(vc, den)
            if den > zero:
                face = 1
        v = wp.clamp(v, zero, one)
        w = wp.clamp(w, zero, one - v)
        return one - v - w, v, w, face

    @wp.func(module=module)
    def closest_points_segments(p1: vec3, p2: vec3, q1: vec3, q2: vec3):
        """Parameters (s, t) of the closest points of two segments (Ericson 2005, 5.1.9)."""
        d1 = p2 - p1
        d2 = q2 - q1
        r = p1 - q1
        a = wp.dot(d1, d1)
        e = wp.dot(d2, d2)
        f = wp.dot(d2, r)
        c = wp.dot(d1, r)
        b = wp.dot(d1, d2)
        den = a * e - b * b
        s = zero
        if den > tiny * a * e:
            s = wp.clamp(safe_div(b * f - c * e, den), zero, one)
        t = safe_div(b * s + f, e)
        if t < zero:
            s = wp.clamp(safe_div(-c, a), zero, one)
        elif t > one:
            s = wp.clamp(safe_div(b - c, a), zero, one)
        t = wp.clamp(t, zero, one)
        return s, t

    # --- generic: zeroing, deterministic sums and scans --------------------------------------
    @wp.kernel(module=module)
    def zero_ints(a: wp.array(dtype=wp.int32), gate: wp.array(dtype=wp.int32)):
        if gate[0] == 0:
            return
        a[wp.tid()] = 0

    @wp.kernel(module=module)
    def sum_blocks(a: wp.array(dtype=vec3), b: wp.array(dtype=vec3), use_b: int,
                   inv_mass: wp.array(dtype=scalar), free_only: int, block: int,
                   out: wp.array(dtype=vec3)):
        """out[k] = sum of a[i] (- b[i]) over block k, in index order (free particles only if
        ``free_only``): the first level of a fixed-order sum."""
        k = wp.tid()
        n = a.shape[0]
        acc = vec3(zero, zero, zero)
        for i in range(k * block, wp.min(n, (k + 1) * block)):
            if free_only == 0 or inv_mass[i] > zero:
                d = a[i]
                if use_b != 0:
                    d = d - b[i]
                acc = acc + d
        out[k] = acc

    @wp.kernel(module=module)
    def sum_final(blocks: wp.array(dtype=vec3), scale: scalar, out: wp.array(dtype=vec3)):
        """out[0] = scale * (sum of the block sums in order)."""
        acc = vec3(zero, zero, zero)
        for k in range(blocks.shape[0]):
            acc = acc + blocks[k]
        out[0] = acc * scale

    @wp.kernel(module=module)
    def scan_blocks(counts: wp.array(dtype=wp.int32), n: int, block: int,
                    gate: wp.array(dtype=wp.int32), offsets: wp.array(dtype=wp.int32),
                    block_sums: wp.array(dtype=wp.int32)):
        """Exclusive scan within each block of ``counts[:n]``; block totals to block_sums."""
        if gate[0] == 0:
            return
        k = wp.tid()
        acc = int(0)
        for i in range(k * block, wp.min(n, (k + 1) * block)):
            offsets[i] = acc
            acc += counts[i]
        block_sums[k] = acc

    @wp.kernel(module=module)
    def scan_top(block_sums: wp.array(dtype=wp.int32), gate: wp.array(dtype=wp.int32),
                 block_offsets: wp.array(dtype=wp.int32), total: wp.array(dtype=wp.int32)):
        """Exclusive scan of the block totals; the grand total to total[0]."""
        if gate[0] == 0:
            return
        acc = int(0)
        for k in range(block_sums.shape[0]):
            block_offsets[k] = acc
            acc += block_sums[k]
        total[0] = acc

    @wp.kernel(module=module)
    def scan_add(offsets: wp.array(dtype=wp.int32), n: int, block: int,
                 block_offsets: wp.array(dtype=wp.int32), gate: wp.array(dtype=wp.int32),
                 total: wp.array(dtype=wp.int32)):
        """offsets[i] += offset of its block; offsets[n] = the total."""
        if gate[0] == 0:
            return
        i = wp.tid()
        if i < n:
            offsets[i] = offsets[i] + block_offsets[i // block]
        else:
            offsets[n] = total[0]

    # --- predict: velocity clamp and the Verlet-list check ------------------------------------
    @wp.kernel(module=module)
    def momentum_blocks(v: wp.array(dtype=vec3), mass: wp.array(dtype=scalar),
                        inv_mass: wp.array(dtype=scalar), block: int,
                        out: wp.array(dtype=vec3)):
        """out[k] = sum of m_i v_i over the free particles of block k, in index order."""
        k = wp.tid()
        n = v.shape[0]
        acc = vec3(zero, zero, zero)
        for i in range(k * block, wp.min(n, (k + 1) * block)):
            if inv_mass[i] > zero:
                acc = acc + v[i] * mass[i]
        out[k] = acc

    @wp.kernel(module=module)
    def clamp_velocity(v: wp.array(dtype=vec3), inv_mass: wp.array(dtype=scalar),
                       mean: wp.array(dtype=vec3), vmax: scalar,
                       stats: wp.array(dtype=wp.int32)):
        """SelfCollision.clamp_velocity, first half: free particles' velocity relative to the
        centre-of-mass velocity ``mean[0]`` limited to vmax."""
        i = wp.tid()
        if inv_mass[i] <= zero:
            return
        m = mean[0]
        dev = v[i] - m
        speed2 = wp.dot(dev, dev)
        if speed2 > vmax * vmax:
            v[i] = m + dev * (vmax / wp.sqrt(speed2))
            wp.atomic_add(stats, STAT_CLAMPED, 1)

    @wp.kernel(module=module)
    def shift_velocity(v: wp.array(dtype=vec3), v_pred: wp.array(dtype=vec3),
                       x: wp.array(dtype=vec3), p: wp.array(dtype=vec3),
                       inv_mass: wp.array(dtype=scalar), mean: wp.array(dtype=vec3),
                       mean_after: wp.array(dtype=vec3), h: scalar):
        """SelfCollision.clamp_velocity, second half: every free particle's velocity shifted by
        -(mean_after - mean) (the clamped centre-of-mass velocity back to the original one),
        then p = x + h v. Nothing changes when no particle was clamped."""
        i = wp.tid()
        if inv_mass[i] <= zero:
            return
        shift = mean_after[0] - mean[0]
        if shift[0] == zero and shift[1] == zero and shift[2] == zero:
            return
        vi = v[i] - shift
        v[i] = vi
        v_pred[i] = vi
        p[i] = x[i] + vi * h

    # --- counting sorts and the flat candidate lists ------------------------------------------
    @wp.kernel(module=module)
    def sort_segments(start: wp.array(dtype=wp.int32), gate: wp.array(dtype=wp.int32),
                      values: wp.array(dtype=wp.int32)):
        """Insertion sort of values[start[k] : start[k + 1]] (short segments): fixes the order
        that atomic cursors left."""
        if gate[0] == 0:
            return
        k = wp.tid()
        lo = start[k]
        hi = start[k + 1]
        for i in range(lo + 1, hi):
            key = values[i]
            j = i - 1
            while j >= lo and values[j] > key:
                values[j + 1] = values[j]
                j -= 1
            values[j + 1] = key

    @wp.kernel(module=module)
    def finish_candidates(total: wp.array(dtype=wp.int32), cap: int,
                          gate: wp.array(dtype=wp.int32), count: wp.array(dtype=wp.int32),
                          need: wp.array(dtype=wp.int32)):
        """count = the candidates kept (at most the capacity); need = the largest total seen."""
        if gate[0] == 0:
            return
        count[0] = wp.min(total[0], cap)
        need[0] = wp.max(need[0], total[0])

    @wp.kernel(module=module)
    def add_stat(count: wp.array(dtype=wp.int32), slot: int, stats: wp.array(dtype=wp.int32)):
        stats[slot] = stats[slot] + count[0]

    @wp.kernel(module=module)
    def incidence_count(idx: wp.array(dtype=wp.vec4i), count: wp.array(dtype=wp.int32),
                        gate: wp.array(dtype=wp.int32), per_particle: wp.array(dtype=wp.int32),
                        stride: int):
        if gate[0] == 0:
            return
        for c in range(wp.tid(), count[0], stride):
            q = idx[c]
            for k in range(4):
                wp.atomic_add(per_particle, q[k], 1)

    @wp.kernel(module=module)
    def incidence_fill(idx: wp.array(dtype=wp.vec4i), count: wp.array(dtype=wp.int32),
                       start: wp.array(dtype=wp.int32), gate: wp.array(dtype=wp.int32),
                       cursor: wp.array(dtype=wp.int32), entries: wp.array(dtype=wp.int32),
                       stride: int):
        """Each particle's list of (candidate * 4 + corner); sorted afterwards."""
        if gate[0] == 0:
            return
        for c in range(wp.tid(), count[0], stride):
            q = idx[c]
            for k in range(4):
                entries[start[q[k]] + wp.atomic_add(cursor, q[k], 1)] = c * 4 + k

    # --- narrow phase -------------------------------------------------------------------------
    @wp.kernel(module=module)
    def project_begin(state: wp.array(dtype=wp.int32), deep: wp.array(dtype=scalar)):
        state[ST_DONE] = 0
        state[ST_PROJECTED] = 0
        state[ST_EPOCH] = state[ST_EPOCH] + 1
        state[ST_STOP] = 0
        state[ST_ANY] = 0
        state[ST_PASS] = state[ST_PASS] + 1
        state[ST_PASS_ANY] = 0
        deep[0] = zero

    @wp.func(module=module)
    def pt_geometry(p: wp.array(dtype=vec3), x0: wp.array(dtype=vec3), q: wp.vec4i,
                    band2: scalar):
        """Point-triangle pair q = (vertex, a, b, c): near (within the band), coefficients,
        x_A - x_B now and at the start, unit geometric normal, start side (0: none)."""
        xp = p[q[0]]
        a = p[q[1]]
        b = p[q[2]]
        c = p[q[3]]
        u, v, w, face = closest_point_triangle(xp, a, b, c)
        diff = xp - (a * u + b * v + c * w)
        dist2 = wp.dot(diff, diff)
        coef = vec4(one, -u, -v, -w)
        z = vec3(zero, zero, zero)
        if dist2 >= band2:
            return 0, coef, diff, dist2, z, z, zero
        p0 = x0[q[0]]
        a0 = x0[q[1]]
        b0 = x0[q[2]]
        c0 = x0[q[3]]
        diff0 = p0 - (a0 * u + b0 * v + c0 * w)
        m = wp.cross(b - a, c - a)
        m0 = wp.cross(b0 - a0, c0 - a0)
        side0 = zero
        if face != 0:
            side0 = sign(wp.dot(p0 - a0, m0)) * sign(wp.dot(m0, m))
        return 1, coef, diff, dist2, diff0, unit(m), side0

    @wp.func(module=module)
    def ee_geometry(p: wp.array(dtype=vec3), x0: wp.array(dtype=vec3), q: wp.vec4i,
                    band2: scalar, interior: scalar):
        """Edge-edge pair q = (p1, p2, q1, q2): as pt_geometry, but near = 2 when the pair is
        within the band and both closest points are inside their edges (a possible contact),
        1 when it is only within the band."""
        p1 = p[q[0]]
        p2 = p[q[1]]
        q1 = p[q[2]]
        q2 = p[q[3]]
        s, s2 = closest_points_segments(p1, p2, q1, q2)
        diff = (p1 + (p2 - p1) * s) - (q1 + (q2 - q1) * s2)
        dist2 = wp.dot(diff, diff)
        coef = vec4(one - s, s, s2 - one, -s2)
        z = vec3(zero, zero, zero)
        hi = one - interior
        if dist2 >= band2:
            return 0, coef, diff, dist2, z, z, zero
        if s <= interior or s >= hi or s2 <= interior or s2 >= hi:
            return 1, coef, diff, dist2, z, z, zero
        x1 = x0[q[0]]
        x2 = x0[q[1]]
        y1 = x0[q[2]]
        y2 = x0[q[3]]
        diff0 = (x1 + (x2 - x1) * s) - (y1 + (y2 - y1) * s2)
        m = wp.cross(p2 - p1, q2 - q1)
        m0 = wp.cross(x2 - x1, y2 - y1)
        side0 = sign(wp.dot(x1 - y1, m0)) * sign(wp.dot(m0, m))
        return 2, coef, diff, dist2, diff0, unit(m), side0

    @wp.func(module=module)
    def contact_normal(diff: vec3, dist2: scalar, normal: vec3, side0: scalar, t: scalar):
        """Unit normal on A's start side and the signed distance along it."""
        n = normal * side0
        if side0 == zero:
            dist = wp.sqrt(dist2)
            n = normal
            if dist > scalar(1e-9) * t:
                n = diff / dist
        return n, wp.dot(n, diff)

    @wp.func(module=module)
    def respond(inv_mass: wp.array(dtype=scalar), q: wp.vec4i, coef: vec4, diff: vec3,
                diff0: vec3, n: vec3, signed: scalar, t: scalar, mu: scalar, c: int,
                act: wp.array(dtype=wp.int32), corr: wp.array(dtype=vec3),
                wc_out: wp.array(dtype=vec4), deep: wp.array(dtype=scalar),
                touch: wp.array(dtype=wp.int32), pass_id: int,
                cnt: wp.array(dtype=wp.int32)) -> int:
        """Contact c's correction direction: act[c] = 1 and corr[c] = (push-out minus
        friction) / W, wc_out[c] = w_k coef_k, when the pair (unit normal n on A's start side,
        signed distance along it) is a contact, and each particle that it moves counts it in
        cnt (integer atomics: the counts do not depend on order); else act[c] = 0."""
        act[c] = 0
        if signed >= t:
            return 0
        wc = vec4(inv_mass[q[0]] * coef[0], inv_mass[q[1]] * coef[1],
                  inv_mass[q[2]] * coef[2], inv_mass[q[3]] * coef[3])
        big_w = wc[0] * coef[0] + wc[1] * coef[1] + wc[2] * coef[2] + wc[3] * coef[3]
        if big_w <= zero or wp.dot(n, n) <= zero:
            return 0
        depth = t - signed
        delta = n * depth
        if mu > zero:
            slip = diff - diff0
            slip = slip - n * wp.dot(slip, n)
            slip_len = wp.length(slip)
            delta = delta - slip * wp.min(safe_div(mu * depth, slip_len), one)
        act[c] = 1
        corr[c] = delta / big_w
        wc_out[c] = wc
        wp.atomic_max(deep, 0, depth)
        for k in range(4):
            if wc[k] != zero:
                touch[q[k]] = pass_id
                wp.atomic_add(cnt, q[k], 1)
        return 1

    @wp.func(module=module)
    def most_moved(moved: wp.array(dtype=scalar), q: wp.vec4i) -> scalar:
        return wp.max(wp.max(moved[q[0]], moved[q[1]]), wp.max(moved[q[2]], moved[q[3]]))

    @wp.func(module=module)
    def least_moved(moved: wp.array(dtype=scalar), q: wp.vec4i) -> scalar:
        return wp.min(wp.min(moved[q[0]], moved[q[1]]), wp.min(moved[q[2]], moved[q[3]]))

    @wp.func(module=module)
    def unchanged(moved: wp.array(dtype=scalar), base: wp.array(dtype=scalar),
                  slack: wp.array(dtype=scalar), q: wp.vec4i, c: int, margin: scalar,
                  skip: int) -> int:
        """1 when pair c cannot have used up its slack since its last evaluation: its
        particles moved by at most ``most_moved - base`` each, so its distance changed by at
        most twice that (``margin`` covers the round-off of the distances)."""
        if skip == 0:
            return 0
        if scalar(2.0) * (most_moved(moved, q) - base[c]) + margin < slack[c]:
            return 1
        return 0

    @wp.func(module=module)
    def geometry(p: wp.array(dtype=vec3), x0: wp.array(dtype=vec3), q: wp.vec4i,
                 edge_pairs: int, band2: scalar, interior: scalar):
        """pt_geometry or ee_geometry; near 2 for a point-triangle pair within the band (so
        that ``near == 2`` means "may be a contact" for both families)."""
        if edge_pairs != 0:
            return ee_geometry(p, x0, q, band2, interior)
        near, coef, diff, dist2, diff0, normal, side0 = pt_geometry(p, x0, q, band2)
        return near * 2, coef, diff, dist2, diff0, normal, side0

    @wp.func(module=module)
    def track(moved: wp.array(dtype=scalar), base: wp.array(dtype=scalar),
              slack_c: wp.array(dtype=scalar), slack_x: wp.array(dtype=scalar), q: wp.vec4i,
              c: int, near: int, dist2: scalar, signed: scalar, band: scalar, t: scalar):
        """What an evaluation found (the numpy stage's _Tracked.evaluate): slack of a pair
        outside the band its distance less the band; a possible contact its signed distance
        less the thickness (fail-safe: its distance, or -inf once crossed); a pair within the
        band that cannot be a contact (edges meeting near an end) its distance less t."""
        u = wp.sqrt(dist2)
        sc = u - band
        sx = u - band
        if near == 2:
            sc = signed - t
            sx = u
            if signed < zero:
                sx = scalar(-1e30)
        elif near == 1:
            sc = u - t
            sx = u
        slack_c[c] = sc
        slack_x[c] = sx
        base[c] = least_moved(moved, q)

    @wp.kernel(module=module)
    def track_begin(p: wp.array(dtype=vec3), idx: wp.array(dtype=wp.vec4i),
                    count: wp.array(dtype=wp.int32), edge_pairs: int, band: scalar,
                    slack_c: wp.array(dtype=scalar), slack_x: wp.array(dtype=scalar),
                    base: wp.array(dtype=scalar), stride: int):
        """The substep's first narrow phase: each pair's slack from a lower bound on its
        distance (bounding spheres: the triangle's about its centroid, the edges' about their
        midpoints); pairs within the band are evaluated in the first pass (slack -inf)."""
        for c in range(wp.tid(), count[0], stride):
            q = idx[c]
            bound = zero
            if edge_pairs != 0:
                m1 = (p[q[0]] + p[q[1]]) * scalar(0.5)
                m2 = (p[q[2]] + p[q[3]]) * scalar(0.5)
                bound = (wp.length(m1 - m2) - scalar(0.5) * wp.length(p[q[0]] - p[q[1]])
                         - scalar(0.5) * wp.length(p[q[2]] - p[q[3]]))
            else:
                a = p[q[1]]
                b = p[q[2]]
                cc = p[q[3]]
                centre = (a + b + cc) * (one / scalar(3.0))
                rad2 = wp.max(wp.max(wp.dot(a - centre, a - centre),
                                     wp.dot(b - centre, b - centre)),
                              wp.dot(cc - centre, cc - centre))
                bound = wp.length(p[q[0]] - centre) - wp.sqrt(rad2)
            s = bound - band
            if bound < band:
                s = scalar(-1e30)
            slack_c[c] = s
            slack_x[c] = s
            base[c] = zero

    @wp.kernel(module=module)
    def moved_since(p: wp.array(dtype=vec3), last: wp.array(dtype=vec3),
                    moved: wp.array(dtype=scalar)):
        """moved += |p - last|: what the solver's constraints moved each particle since the
        last narrow phase."""
        i = wp.tid()
        moved[i] = moved[i] + wp.length(p[i] - last[i])

    @wp.kernel(module=module)
    def copy_vec3(src: wp.array(dtype=vec3), dst: wp.array(dtype=vec3)):
        i = wp.tid()
        dst[i] = src[i]

    @wp.kernel(module=module)
    def zero_scalars(a: wp.array(dtype=scalar)):
        a[wp.tid()] = zero

    @wp.kernel(module=module)
    def pair_eval(p: wp.array(dtype=vec3), x0: wp.array(dtype=vec3),
                  inv_mass: wp.array(dtype=scalar), idx: wp.array(dtype=wp.vec4i),
                  count: wp.array(dtype=wp.int32), edge_pairs: int,
                  state: wp.array(dtype=wp.int32), t: scalar, band: scalar, mu: scalar,
                  interior: scalar, moved: wp.array(dtype=scalar),
                  base: wp.array(dtype=scalar), slack_c: wp.array(dtype=scalar),
                  slack_x: wp.array(dtype=scalar), margin: scalar, skip: int,
                  act: wp.array(dtype=wp.int32), corr: wp.array(dtype=vec3),
                  wc: wp.array(dtype=vec4), deep: wp.array(dtype=scalar),
                  touch: wp.array(dtype=wp.int32), cnt: wp.array(dtype=wp.int32),
                  stats: wp.array(dtype=wp.int32), stride: int):
        """One pass over one family's pairs: those whose slack the motion since their last
        evaluation can have used up are evaluated (closest points, side, contact and its
        correction); the others are no contact, as an evaluation would find."""
        if state[ST_DONE] != 0:
            return
        band2 = band * band
        evaluated = int(0)
        for c in range(wp.tid(), count[0], stride):
            q = idx[c]
            if unchanged(moved, base, slack_c, q, c, margin, skip) != 0:
                act[c] = 0
                continue
            evaluated += 1
            near, coef, diff, dist2, diff0, normal, side0 = geometry(p, x0, q, edge_pairs,
                                                                     band2, interior)
            n, signed = contact_normal(diff, dist2, normal, side0, t)
            track(moved, base, slack_c, slack_x, q, c, near, dist2, signed, band, t)
            act[c] = 0
            if near == 2:  # noqa: SIM102 (Warp evaluates both sides of an ``and``)
                if respond(inv_mass, q, coef, diff, diff0, n, signed, t, mu, c, act, corr, wc,
                           deep, touch, state[ST_PASS], cnt) != 0:
                    state[ST_PROJECTED] = 1
                    state[ST_PASS_ANY] = 1
                    wp.atomic_add(stats, STAT_PT_CONTACTS + edge_pairs, 1)
        wp.atomic_add(stats, STAT_EVALUATED, evaluated)

    @wp.kernel(module=module)
    def zero_counts(state: wp.array(dtype=wp.int32), cnt: wp.array(dtype=wp.int32)):
        """Contact counts to zero before a pass's half (nothing once the passes stopped)."""
        if state[ST_DONE] != 0:
            return
        cnt[wp.tid()] = 0

    @wp.kernel(module=module)
    def contact_relax(idx: wp.array(dtype=wp.vec4i), count: wp.array(dtype=wp.int32),
                      act: wp.array(dtype=wp.int32), wc: wp.array(dtype=vec4),
                      cnt: wp.array(dtype=wp.int32), state: wp.array(dtype=wp.int32),
                      corr: wp.array(dtype=vec3), scatter: int, dp: wp.array(dtype=vec3),
                      stride: int):
        """corr[c] /= the largest contact count among contact c's moving particles; with
        ``scatter``, each moving particle's share w_k coef_k corr[c] added to dp (in list
        order on the CPU's one thread: the order the gathered sums use)."""
        if state[ST_DONE] != 0 or state[ST_PASS_ANY] == 0:
            return
        for c in range(wp.tid(), count[0], stride):
            if act[c] == 0:
                continue
            q = idx[c]
            w = wc[c]
            most = int(1)
            for k in range(4):
                if w[k] != zero:
                    most = wp.max(most, cnt[q[k]])
            share = corr[c] / scalar(most)
            corr[c] = share
            if scatter != 0:
                for k in range(4):
                    if w[k] != zero:
                        wp.atomic_add(dp, q[k], share * w[k])

    @wp.kernel(module=module)
    def apply_sums(state: wp.array(dtype=wp.int32), touch: wp.array(dtype=wp.int32),
                   dp: wp.array(dtype=vec3), p: wp.array(dtype=vec3),
                   moved: wp.array(dtype=scalar)):
        """Scattered sums: p[i] += dp[i], moved[i] += its length, dp[i] = 0 (touched only)."""
        i = wp.tid()
        if state[ST_DONE] != 0 or state[ST_PASS_ANY] == 0 or touch[i] != state[ST_PASS]:
            return
        d = dp[i]
        p[i] = p[i] + d
        moved[i] = moved[i] + wp.length(d)
        dp[i] = vec3(zero, zero, zero)

    @wp.kernel(module=module)
    def contact_apply(start: wp.array(dtype=wp.int32), entries: wp.array(dtype=wp.int32),
                      act: wp.array(dtype=wp.int32), wc: wp.array(dtype=vec4),
                      corr: wp.array(dtype=vec3), state: wp.array(dtype=wp.int32),
                      touch: wp.array(dtype=wp.int32), p: wp.array(dtype=vec3),
                      moved: wp.array(dtype=scalar)):
        """p[i] += sum over its contacts (in list order) of w_i coef_i lambda (relaxed);
        moved[i] += its length."""
        i = wp.tid()
        if state[ST_DONE] != 0 or state[ST_PASS_ANY] == 0 or touch[i] != state[ST_PASS]:
            return
        dp = vec3(zero, zero, zero)
        touched = int(0)
        for e in range(start[i], start[i + 1]):
            c = entries[e] // 4
            if act[c] == 0:
                continue
            wk = wc[c][entries[e] % 4]
            if wk == zero:
                continue
            dp = dp + corr[c] * wk
            touched = 1
        if touched != 0:
            p[i] = p[i] + dp
            moved[i] = moved[i] + wp.length(dp)

    @wp.kernel(module=module)
    def next_phase(state: wp.array(dtype=wp.int32)):
        """Between the point-triangle and the edge-edge half of a pass: new touch marks."""
        state[ST_PASS] = state[ST_PASS] + 1
        state[ST_PASS_ANY] = 0

    @wp.kernel(module=module)
    def pass_end(state: wp.array(dtype=wp.int32), deep: wp.array(dtype=scalar),
                 resolved: scalar):
        if state[ST_DONE] == 0 and deep[0] <= resolved:
            state[ST_DONE] = 1
        deep[0] = zero
        state[ST_PASS] = state[ST_PASS] + 1
        state[ST_PASS_ANY] = 0

    @wp.kernel(module=module)
    def mark_crossed(p: wp.array(dtype=vec3), x0: wp.array(dtype=vec3),
                     inv_mass: wp.array(dtype=scalar), idx: wp.array(dtype=wp.vec4i),
                     count: wp.array(dtype=wp.int32), edge_pairs: int, t: scalar, band: scalar,
                     interior: scalar, moved: wp.array(dtype=scalar),
                     base: wp.array(dtype=scalar), slack_c: wp.array(dtype=scalar),
                     slack_x: wp.array(dtype=scalar), margin: scalar, skip: int,
                     state: wp.array(dtype=wp.int32), flag: wp.array(dtype=wp.int32),
                     reverted: wp.array(dtype=wp.int32), stride: int):
        """Fail-safe: flag the free, not yet reverted particles of pairs on the wrong side
        (pairs that cannot have reached the other side since their last evaluation are
        skipped, by their fail-safe slack)."""
        if state[ST_PROJECTED] == 0 or state[ST_STOP] != 0:
            return
        band2 = band * band
        for c in range(wp.tid(), count[0], stride):
            q = idx[c]
            if unchanged(moved, base, slack_x, q, c, margin, skip) != 0:
                continue
            near, coef, diff, dist2, diff0, normal, side0 = geometry(p, x0, q, edge_pairs,
                                                                     band2, interior)
            n, signed = contact_normal(diff, dist2, normal, side0, t)
            track(moved, base, slack_c, slack_x, q, c, near, dist2, signed, band, t)
            if near != 2 or signed >= zero:
                continue
            epoch = state[ST_EPOCH]
            for k in range(4):
                i = q[k]
                if inv_mass[i] > zero and reverted[i] != epoch:
                    flag[i] = epoch
                    state[ST_ANY] = 1

    @wp.kernel(module=module)
    def revert_apply(x0: wp.array(dtype=vec3), flag: wp.array(dtype=wp.int32),
                     state: wp.array(dtype=wp.int32), reverted: wp.array(dtype=wp.int32),
                     p: wp.array(dtype=vec3), moved: wp.array(dtype=scalar),
                     stats: wp.array(dtype=wp.int32)):
        i = wp.tid()
        if state[ST_PROJECTED] == 0 or state[ST_STOP] != 0:
            return
        epoch = state[ST_EPOCH]
        if flag[i] == epoch and reverted[i] != epoch:
            moved[i] = moved[i] + wp.length(x0[i] - p[i])
            p[i] = x0[i]
            reverted[i] = epoch
            wp.atomic_add(stats, STAT_REVERTED, 1)

    @wp.kernel(module=module)
    def round_end(state: wp.array(dtype=wp.int32)):
        if state[ST_ANY] == 0:
            state[ST_STOP] = 1
        state[ST_ANY] = 0

    return SimpleNamespace(**{k: v for k, v in locals().items()
                              if not k.startswith("_") and k not in ("precision",)})
