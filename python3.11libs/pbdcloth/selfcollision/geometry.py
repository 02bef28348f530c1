"""Closest points of triangles and segments, and the small column-wise vector helpers they use.

All arrays are component-major columns: a (3, K) array holds K vectors, so that every function
works on whole batches of pairs at once (the numpy stage's layout).
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from ..arrays import B, F

G = TypeVar("G", bound=np.generic)

__all__ = ["closest_point_triangle", "closest_points_segments", "columns", "cross", "dot",
           "safe_div", "sign", "triangle_spheres", "unit", "within"]


def dot(a: F, b: F) -> F:
    """Column-wise dot product of (3, K) arrays, shape (K,)."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def triangle_spheres(a: F, b: F, c: F) -> tuple[F, F]:
    """Centroid (3, T) and radius (T,) of a sphere around each triangle (corners (3, T))."""
    centre = (a + b + c) * (1.0 / 3.0)
    radius2 = np.maximum(np.maximum(dot(a - centre, a - centre), dot(b - centre, b - centre)),
                         dot(c - centre, c - centre))
    return centre, np.sqrt(radius2)


def within(x: F, y: F, reach: F) -> B:
    """Mask of columns with |x - y| <= reach ((3, K), (3, K), (K,))."""
    d = x - y
    return dot(d, d) <= reach * reach


def sign(x: F) -> F:
    """+1 where x >= 0, else -1."""
    return np.where(x >= 0.0, 1.0, -1.0)


def unit(m: F) -> F:
    """Columns of m scaled to unit length (zero columns stay zero)."""
    length = np.sqrt(dot(m, m))
    return m * safe_div(np.ones_like(length), length)


def columns(a: NDArray[G], idx: NDArray[np.integer[Any]]) -> NDArray[G]:
    """Columns ``idx`` of a (k, M) array, shape (k, K) (``take`` is several times faster than
    ``a[:, idx]``)."""
    return np.take(a, idx, axis=1)


def cross(a: F, b: F) -> F:
    return np.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def safe_div(num: F, den: F) -> F:
    """num / den where den != 0, else 0."""
    ok = den != 0.0
    return np.where(ok, num / np.where(ok, den, 1.0), 0.0)


def closest_point_triangle(p: F, a: F, b: F, c: F) -> tuple[F, F, F, B]:
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
    d1 = dot(ab, ap)
    d2 = dot(ac, ap)
    aa = dot(ab, ab)
    cc = dot(ac, ac)
    bc_ = dot(ab, ac)
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
    v = safe_div(vb, den)
    w = safe_div(vc, den)
    d43: F = d4 - d3
    d56: F = d5 - d6
    e_bc = (va <= 0.0) & (d43 >= 0.0) & (d56 >= 0.0)
    w_bc = safe_div(d43, d43 + d56)
    v = np.where(e_bc, 1.0 - w_bc, v)
    w = np.where(e_bc, w_bc, w)
    e_ac = (vb <= 0.0) & (d2 >= 0.0) & (d6 <= 0.0)
    w_ac = safe_div(d2, d2 - d6)
    v = np.where(e_ac, 0.0, v)
    w = np.where(e_ac, w_ac, w)
    r_c = (d6 >= 0.0) & (d5 <= d6)
    v = np.where(r_c, 0.0, v)
    w = np.where(r_c, 1.0, w)
    e_ab = (vc <= 0.0) & (d1 >= 0.0) & (d3 <= 0.0)
    v_ab = safe_div(d1, d1 - d3)
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
    a = dot(d1, d1)
    e = dot(d2, d2)
    f = dot(d2, r)
    c = dot(d1, r)
    b = dot(d1, d2)
    den = a * e - b * b
    s = np.where(den > 1e-12 * a * e, np.clip(safe_div(b * f - c * e, den), 0.0, 1.0), 0.0)
    t = safe_div(b * s + f, e)
    low = t < 0.0
    high = t > 1.0
    s = np.where(low, np.clip(safe_div(-c, a), 0.0, 1.0), s)
    s = np.where(high, np.clip(safe_div(b - c, a), 0.0, 1.0), s)
    t = np.clip(t, 0.0, 1.0)
    return s, t

