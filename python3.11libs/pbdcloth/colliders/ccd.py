"""Continuous vertex-triangle collision: the first time a moving point meets a moving triangle.

Over a substep every point moves linearly, t in [0, 1]: the vertex x(t) = x0 + t (x1 - x0), the
corners a(t), b(t), c(t) likewise. The vertex lies in the triangle's plane when

    f(t) = (x(t) - a(t)) . ((b(t) - a(t)) x (c(t) - a(t))) = 0,

a cubic in t (Provot 1997, "Collision and self-collision handling in cloth model dedicated to
design garments"; Bridson, Fedkiw and Anderson 2002, "Robust treatment of collisions, contact
and friction for cloth animation", section 6.1). With ``e = x - a``, ``n(t) = n0 + t n1 + t^2
n2``, n0 = ab0 x ac0, n1 = ab0 x dac + dab x ac0, n2 = dab x dac:

    f(t) = e0.n0 + t (e0.n1 + de.n0) + t^2 (e0.n2 + de.n1) + t^3 de.n2.

The interval [0, 1] is cut at the roots of f' (where f turns), so that f is monotone on each of
at most three pieces; a piece whose ends differ in sign holds one root, found by
:data:`BISECTIONS` halvings. The earliest root at which the vertex lies inside the triangle
(barycentric coordinates >= -:data:`INSIDE_TOLERANCE`) is the crossing. ``side`` is the sign of
f(0): the side of the triangle's plane (along its winding's normal) the vertex starts on.
"""

from __future__ import annotations

import numpy as np

from ..arrays import B, F
from ..selfcollision.geometry import cross, dot, safe_div

__all__ = ["BISECTIONS", "INSIDE_TOLERANCE", "barycentric", "first_crossing"]

#: Halvings of a monotone piece: the crossing time to 2^-30 of the substep.
BISECTIONS = 30
#: Barycentric slack of the inside test at a crossing (relative; catches hits on shared edges
#: from both triangles rather than from neither).
INSIDE_TOLERANCE = 1e-7


def barycentric(p: F, a: F, b: F, c: F) -> tuple[F, F, F]:
    """Barycentric coordinates (u, v, w) of the projection of ``p`` onto the plane of abc, not
    clamped (Ericson 2005, "Real-Time Collision Detection", 3.4); (3, K) columns in, (K,) out.
    A degenerate triangle gives (1, 0, 0)."""
    v0, v1, v2 = b - a, c - a, p - a
    d00, d01, d11 = dot(v0, v0), dot(v0, v1), dot(v1, v1)
    d20, d21 = dot(v2, v0), dot(v2, v1)
    den = d00 * d11 - d01 * d01
    v = safe_div(d11 * d20 - d01 * d21, den)
    w = safe_div(d00 * d21 - d01 * d20, den)
    return 1.0 - v - w, v, w


def _cubic(c: tuple[F, F, F, F], t: F) -> F:
    return ((c[3] * t + c[2]) * t + c[1]) * t + c[0]


def first_crossing(x0: F, x1: F, a0: F, a1: F, b0: F, b1: F, c0: F, c1: F
                   ) -> tuple[B, F, F, F, F, F]:
    """The earliest time each vertex path crosses its triangle, for K pairs ((3, K) columns).

    Returns ``hit`` (K,), the time ``t`` (K,) (1 where no hit), the barycentric coordinates
    (u, v, w) (K,) of the crossing point in the triangle at that time, and ``side`` (K,): the
    sign of f(0) (0 when the vertex starts exactly in the plane; such a pair reports no hit).
    """
    e0, de = x0 - a0, (x1 - x0) - (a1 - a0)
    ab0, dab = b0 - a0, (b1 - b0) - (a1 - a0)
    ac0, dac = c0 - a0, (c1 - c0) - (a1 - a0)
    n0 = cross(ab0, ac0)
    n1 = cross(ab0, dac) + cross(dab, ac0)
    n2 = cross(dab, dac)
    coef = (dot(e0, n0), dot(e0, n1) + dot(de, n0), dot(e0, n2) + dot(de, n1), dot(de, n2))
    side = np.sign(coef[0])
    k = coef[0].shape[0]
    # Roots of f'(t) = c1 + 2 c2 t + 3 c3 t^2 cut [0, 1] into monotone pieces.
    qa, qb, qc = 3.0 * coef[3], 2.0 * coef[2], coef[1]
    disc = qb * qb - 4.0 * qa * qc
    sq = np.sqrt(np.maximum(disc, 0.0))
    quad = np.abs(qa) > 1e-300
    with np.errstate(divide="ignore", invalid="ignore"):
        r1 = np.where(quad, (-qb - sq) / (2.0 * qa), safe_div(-qc, qb))
        r2 = np.where(quad, (-qb + sq) / (2.0 * qa), r1)
    r1 = np.where((disc >= 0.0) | ~quad, r1, 0.0)
    r2 = np.where((disc >= 0.0) | ~quad, r2, 0.0)
    r1, r2 = np.clip(np.minimum(r1, r2), 0.0, 1.0), np.clip(np.maximum(r1, r2), 0.0, 1.0)
    r1 = np.nan_to_num(r1)
    r2 = np.nan_to_num(r2)
    cuts = (np.zeros(k), r1, r2, np.ones(k))
    hit = np.zeros(k, dtype=bool)
    t_hit = np.ones(k)
    bary = (np.ones(k), np.zeros(k), np.zeros(k))
    # The pieces that hold a root, all bisected together (each pair's arithmetic is its own:
    # the same halvings as piece by piece); the earliest piece with a crossing wins.
    f_lo = _cubic(coef, cuts[0])
    lives = []
    for piece in range(3):
        lo, hi = cuts[piece], cuts[piece + 1]
        f_hi = _cubic(coef, hi)
        lives.append(np.flatnonzero((side != 0.0) & (hi > lo)
                                    & (np.sign(f_lo) * np.sign(f_hi) <= 0.0)))
        f_lo = f_hi
    live = np.concatenate(lives)
    if live.size == 0:
        return hit, t_hit, bary[0], bary[1], bary[2], side
    t0 = np.concatenate([cuts[p].take(lv) for p, lv in enumerate(lives)])
    t1 = np.concatenate([cuts[p + 1].take(lv) for p, lv in enumerate(lives)])
    cl = tuple(c.take(live) for c in coef)
    s0 = np.sign(_cubic(cl, t0))  # type: ignore[arg-type]
    for _ in range(BISECTIONS):
        mid = 0.5 * (t0 + t1)
        same = np.sign(_cubic(cl, mid)) == s0  # type: ignore[arg-type]
        t0 = np.where(same, mid, t0)
        t1 = np.where(same, t1, mid)
    t = t1[None]
    xt = x0[:, live] + t * (x1[:, live] - x0[:, live])
    at = a0[:, live] + t * (a1[:, live] - a0[:, live])
    bt = b0[:, live] + t * (b1[:, live] - b0[:, live])
    ct = c0[:, live] + t * (c1[:, live] - c0[:, live])
    u, v, w = barycentric(xt, at, bt, ct)
    inside = (u >= -INSIDE_TOLERANCE) & (v >= -INSIDE_TOLERANCE) & (w >= -INSIDE_TOLERANCE)
    # In piece order, a pair not hit yet takes its first piece's crossing.
    offset = 0
    for lv in lives:
        sl = slice(offset, offset + lv.size)
        offset += lv.size
        got_at = np.flatnonzero(inside[sl] & ~hit.take(lv)) + sl.start
        got = live.take(got_at)
        hit[got] = True
        t_hit[got] = t1.take(got_at)
        for dst, src in zip(bary, (u, v, w)):
            dst[got] = src.take(got_at)
    return hit, t_hit, bary[0], bary[1], bary[2], side
