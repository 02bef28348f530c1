"""Self-collision: broad phase, narrow phase, contact response and the fold / twist scenes.

Every reference used here is written in this file, independently of the solver's code:

* triangle-triangle intersection: two triangles intersect when an edge of one crosses the other,
  decided with orientation (signed volume) predicates only (no closest points, no barycentrics);
* vertex-triangle distance: the plane distance when the projection falls inside the triangle
  (same-sign edge cross products), otherwise the distance to the nearest edge segment;
* candidate completeness: brute-force box and distance tests over all pairs.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver, SettingsError
from pbdcloth.backends.reference import ReferenceBackend
from pbdcloth.cloth.mesh import ClothMesh
from pbdcloth.cloth.model import build_model
from pbdcloth.scenes.cloth import SCENES, fold_scene, grid, twist_scene
from pbdcloth.selfcollision.geometry import closest_point_triangle, closest_points_segments
from pbdcloth.selfcollision.lists import SweepGrid, list_radii
from pbdcloth.selfcollision.stage import SelfCollision
from pbdcloth.selfcollision.stats import NullStats
from pbdcloth.selfcollision.tuning import DEFAULT_TUNING, SelfCollisionTuning

# --- independent geometry ---------------------------------------------------------------------


def _orient(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Signed volume det[b - a, c - a, d - a], rows of (K, 3)."""
    return np.einsum("ij,ij->i", np.cross(b - a, c - a), d - a)


def _segment_crosses_triangle(p, q, a, b, c) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Segment pq passes through the interior of triangle abc (strict: touching is not)."""
    s1, s2 = _orient(a, b, c, p), _orient(a, b, c, q)
    o1, o2, o3 = _orient(p, q, a, b), _orient(p, q, b, c), _orient(p, q, c, a)
    same = ((o1 > 0) & (o2 > 0) & (o3 > 0)) | ((o1 < 0) & (o2 < 0) & (o3 < 0))
    return (s1 * s2 < 0) & same


def intersecting_pairs(x: np.ndarray, tris: np.ndarray, chunk: int = 256) -> np.ndarray:
    """All pairs of triangles sharing no vertex that intersect, (K, 2), by brute force."""
    corners = x[tris]
    lo, hi = corners.min(axis=1), corners.max(axis=1)
    found = []
    for s in range(0, len(tris), chunk):
        overlap = ((lo[s:s + chunk, None] <= hi[None]) & (lo[None] <= hi[s:s + chunk, None])).all(-1)
        i, j = np.nonzero(overlap)
        i = i + s
        keep = i < j
        i, j = i[keep], j[keep]
        shared = (tris[i][:, :, None] == tris[j][:, None, :]).any(axis=(1, 2))
        i, j = i[~shared], j[~shared]
        A, B = corners[i], corners[j]
        hit = np.zeros(i.size, dtype=bool)
        for U, V in ((A, B), (B, A)):
            for k in range(3):
                hit |= _segment_crosses_triangle(U[:, k], U[:, (k + 1) % 3], V[:, 0], V[:, 1],
                                                 V[:, 2])
        found.append(np.stack([i[hit], j[hit]], axis=1))
    return np.concatenate(found)


def _point_segment_distance(p, a, b):  # type: ignore[no-untyped-def]
    ab = b - a
    t = np.clip(np.einsum("ij,ij->i", p - a, ab) / np.einsum("ij,ij->i", ab, ab), 0.0, 1.0)
    return np.linalg.norm(p - (a + t[:, None] * ab), axis=1)


def segment_distance(p1, p2, q1, q2, steps: int = 80):  # type: ignore[no-untyped-def]
    """Distance between segments, rows of (K, 3): ternary search over the parameter on p1p2
    of the distance to segment q1q2, which is a convex function of it."""
    lo = np.zeros(len(p1))
    hi = np.ones(len(p1))
    f = lambda s: _point_segment_distance(p1 + s[:, None] * (p2 - p1), q1, q2)
    for _ in range(steps):
        m1, m2 = lo + (hi - lo) / 3.0, hi - (hi - lo) / 3.0
        left = f(m1) <= f(m2)
        hi = np.where(left, m2, hi)
        lo = np.where(left, lo, m1)
    return f(0.5 * (lo + hi))


def point_triangle_distance(p, a, b, c):  # type: ignore[no-untyped-def]
    """Distance from points p to triangles abc, rows of (K, 3), by the plane / edge split."""
    n = np.cross(b - a, c - a)
    inside = np.ones(len(p), dtype=bool)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= np.einsum("ij,ij->i", np.cross(v - u, p - u), n) >= 0.0
    plane = np.abs(np.einsum("ij,ij->i", p - a, n)) / np.linalg.norm(n, axis=1)
    edge = np.minimum(np.minimum(_point_segment_distance(p, a, b), _point_segment_distance(p, b, c)),
                      _point_segment_distance(p, c, a))
    return np.where(inside, plane, edge)


def min_vertex_triangle_distance(x, rest, tris, thickness, chunk=256):  # type: ignore[no-untyped-def]
    """Smallest distance from a vertex to a triangle that is not its neighbour: the vertex is
    not a corner and the pair is at least pi/2 thickness apart in the rest shape (the solver's
    definition of neighbours; on the test meshes, whose edges are 3x the thickness, that only
    excludes corners). Pairs farther than the thickness apart in bounding boxes are skipped;
    returns inf when no pair comes that close."""
    lo = x[tris].min(axis=1) - thickness
    hi = x[tris].max(axis=1) + thickness
    best = np.inf
    for s in range(0, len(x), chunk):
        v, t = np.nonzero(((x[s:s + chunk, None] >= lo[None]) & (x[s:s + chunk, None] <= hi[None])
                           ).all(-1))
        v = v + s
        keep = (tris[t] != v[:, None]).all(axis=1)
        v, t = v[keep], t[keep]
        corners = [tris[t, k] for k in range(3)]
        far = point_triangle_distance(rest[v], *(rest[c] for c in corners)) >= 0.5 * np.pi * thickness
        v, corners = v[far], [c[far] for c in corners]
        if v.size:
            best = min(best, float(point_triangle_distance(x[v], *(x[c] for c in corners)).min()))
    return best


# --- the references themselves ----------------------------------------------------------------


def nearest_after_checking_every_frame(scene, frames) -> float:  # type: ignore[no-untyped-def]
    """Assert that no frame end of ``frames`` ((positions, velocities) per frame) is non-finite
    or has intersecting non-adjacent triangles; return the smallest vertex-triangle distance
    between non-neighbours over all frames [m]."""
    t = scene.settings.self_thickness
    nearest = []
    for k, (x, _) in enumerate(frames, start=1):
        assert np.isfinite(x).all(), f"frame {k}: non-finite positions"
        pairs = intersecting_pairs(x, scene.triangles)
        assert len(pairs) == 0, f"frame {k}: triangles {pairs[:5].tolist()} intersect"
        nearest.append(min_vertex_triangle_distance(x, scene.positions, scene.triangles, t))
    return min(nearest)


def test_reference_intersection_and_distance_on_known_cases() -> None:
    tris = np.array([[0, 1, 2], [3, 4, 5]])
    flat = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
    piercing = np.array([[0.2, 0.2, -0.5], [0.2, 0.2, 0.5], [2.0, 2.0, 0.0]])
    apart = piercing + [0.0, 0.0, 1.0]
    assert intersecting_pairs(np.vstack([flat, piercing]), tris).tolist() == [[0, 1]]
    assert intersecting_pairs(np.vstack([flat, apart]), tris).size == 0
    p = np.array([[0.25, 0.25, 0.3], [2.0, 0.0, 0.0], [-1.0, -1.0, 0.0]])
    a, b, c = (np.repeat(flat[k:k + 1], 3, axis=0) for k in range(3))
    np.testing.assert_allclose(point_triangle_distance(p, a, b, c), [0.3, 1.0, np.sqrt(2.0)])


# --- geometry of the solver against brute force -----------------------------------------------


def test_closest_point_triangle_matches_dense_sampling() -> None:
    """The Voronoi-region closest point is never farther than the best of 5,000 samples of
    the triangle (sample spacing 1/100 of the triangle: the tolerance)."""
    rng = np.random.default_rng(1)
    k = 200
    a, b, c = rng.normal(size=(3, k, 3))
    c[:5] = a[:5] + 0.5 * (b[:5] - a[:5])  # degenerate (zero-area) triangles
    p = rng.normal(size=(k, 3)) * 2.0
    u, v, w, face = closest_point_triangle(p.T, a.T, b.T, c.T)
    assert np.all(u >= 0) and np.all(v >= 0) and np.all(w >= 0)
    np.testing.assert_allclose(u + v + w, 1.0, atol=1e-12)
    q = u[:, None] * a + v[:, None] * b + w[:, None] * c
    d_solver = np.linalg.norm(p - q, axis=1)
    # "In the face" exactly when the closest point is the projection onto the plane, strictly
    # inside all three edges (checked with the independent edge-side test).
    n = np.cross(b - a, c - a)
    inside = np.ones(k, dtype=bool)
    for e0, e1 in ((a, b), (b, c), (c, a)):
        inside &= np.einsum("ij,ij->i", np.cross(e1 - e0, p - e0), n) > 1e-9
    assert np.array_equal(face[5:], inside[5:]) and not face[:5].any()
    g = np.linspace(0.0, 1.0, 101)
    s, t = np.meshgrid(g, g)
    ok = s + t <= 1.0
    s, t = s[ok], t[ok]
    samples = a[:, None] + s[None, :, None] * (b - a)[:, None] + t[None, :, None] * (c - a)[:, None]
    d_best = np.linalg.norm(samples - p[:, None], axis=2).min(axis=1)
    edge = np.maximum(np.linalg.norm(b - a, axis=1), np.linalg.norm(c - a, axis=1))
    assert np.all(d_solver <= d_best + 1e-12)
    assert np.all(d_best - d_solver <= 0.015 * edge)
    # Non-degenerate triangles: also the exact independent distance.
    np.testing.assert_allclose(d_solver[5:], point_triangle_distance(p[5:], a[5:], b[5:], c[5:]),
                               atol=1e-12)


def test_closest_points_segments_match_independent_distance() -> None:
    rng = np.random.default_rng(2)
    k = 300
    p1, p2, q1, q2 = rng.normal(size=(4, k, 3))
    q2[:10] = q1[:10] + 2.0 * (p2[:10] - p1[:10])  # parallel pairs
    q1[10:20] = p1[10:20] + 0.3 * (p2[10:20] - p1[10:20])  # touching pairs
    s, t = closest_points_segments(p1.T, p2.T, q1.T, q2.T)
    assert np.all((s >= 0) & (s <= 1) & (t >= 0) & (t <= 1))
    d_solver = np.linalg.norm((p1 + s[:, None] * (p2 - p1)) - (q1 + t[:, None] * (q2 - q1)), axis=1)
    # Ternary search converges to ~1e-14 of the segment length; 1e-9 is a safe bound.
    np.testing.assert_allclose(d_solver, segment_distance(p1, p2, q1, q2), atol=1e-9)


@pytest.mark.parametrize("symmetric", [False, True])
def test_sweep_grid_finds_exactly_the_overlapping_pairs(symmetric: bool) -> None:
    rng = np.random.default_rng(3)
    pts = rng.uniform(-1.0, 1.0, size=(3, 800)) * np.array([[2.0], [1.0], [0.1]])
    half = rng.uniform(0.0, 0.1, size=(3, 800))
    pad: np.ndarray | None = half
    if symmetric:
        lo, hi = pts - half - 0.05, pts + half + 0.05
    else:
        lo = rng.uniform(-2.0, 2.0, size=(3, 300)) * np.array([[1.0], [0.5], [0.05]])
        hi = lo + rng.uniform(0.0, 0.3, size=(3, 300))
        pad = None
    for cell in (0.03, 0.2, 5.0):
        box, pt = SweepGrid(pts, cell).query(lo, hi, pad=pad, symmetric=symmetric)
        p = np.zeros_like(pts) if pad is None else pad
        brute = ((pts[:, None, :] + p[:, None, :] >= lo[:, :, None])
                 & (pts[:, None, :] - p[:, None, :] <= hi[:, :, None])).all(axis=0)
        want = set(zip(*np.nonzero(brute)))
        if symmetric:
            want = {(i, j) for i, j in want if i < j}
            got = [(min(a, b), max(a, b)) for a, b in zip(box.tolist(), pt.tolist())]
        else:
            got = list(zip(box.tolist(), pt.tolist()))
        assert len(got) == len(set(got)), "a pair was reported twice"
        assert set(got) == want


def _crumpled(n: int = 12, seed: int = 4):  # type: ignore[no-untyped-def]
    """A grid and a random crumpled pose of it (many close non-neighbour pairs)."""
    pos, tris = grid(n, n, 1.0, 1.0)
    rng = np.random.default_rng(seed)
    x = 0.15 * rng.uniform(size=pos.shape) + 0.3 * pos[:, [2, 0, 1]] * np.array([1.0, 0.2, 1.0])
    return pos, tris, x


def test_candidates_contain_every_close_non_neighbour_pair() -> None:
    """Point-triangle and edge-edge candidates versus brute force over all pairs. Neighbours
    (the solver's documented rule, rest-shape exclusions aside): a vertex and a triangle it is a
    corner of; two edges sharing a vertex."""
    pos, tris, x = _crumpled()
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 0.1)
    sc = SelfCollision(model)
    P = np.ascontiguousarray(x.T)
    r = 0.03
    n = len(x)
    ring = np.eye(n, dtype=bool)  # a vertex is its own only neighbour: incidence alone
    none = np.zeros(0, dtype=np.int64)
    v, t, _ = sc.lists.point_triangle_pairs(P, r, none)
    got = set(zip(v.tolist(), t.tolist()))
    vv, tt = np.meshgrid(np.arange(n), np.arange(len(tris)), indexing="ij")
    vv, tt = vv.ravel(), tt.ravel()
    keep = ~ring[vv[:, None], tris[tt]].any(axis=1)
    vv, tt = vv[keep], tt[keep]
    d = point_triangle_distance(x[vv], x[tris[tt, 0]], x[tris[tt, 1]], x[tris[tt, 2]])
    close = set(zip(vv[d < r].tolist(), tt[d < r].tolist()))
    assert len(close) > 50 and close <= got
    # No neighbour is ever a candidate.
    assert not ring[v[:, None], tris[t]].any()
    edges = model.topology.edges
    i, j, _ = sc.lists.edge_edge_pairs(P, r, none)
    got_e = set(zip(i.tolist(), j.tolist()))
    ii, jj = np.triu_indices(len(edges), 1)
    linked = ring[edges[ii][:, :, None], edges[jj][:, None, :]].any(axis=(1, 2))
    ii, jj = ii[~linked], jj[~linked]
    dmin = segment_distance(x[edges[ii, 0]], x[edges[ii, 1]], x[edges[jj, 0]], x[edges[jj, 1]])
    close_e = set(zip(ii[dmin < r].tolist(), jj[dmin < r].tolist()))
    assert len(close_e) > 50 and close_e <= got_e
    assert not ring[edges[i][:, :, None], edges[j][:, None, :]].any()


def test_rest_gap_sets_the_list_radius_on_a_regular_grid() -> None:
    """On a grid of spacing h the nearest pairs not excluded at rest are h apart (a vertex and
    the triangle beyond its neighbour, two parallel edges) when t = 0.55 h excludes the pairs
    across a diagonal (h / sqrt 2 < pi t / 2): list radius 0.9 h, below the cap r + max_skin t.
    At t = h / 2 and t = h / 5 the cap binds (nothing lies within the search reach at h / 5)."""
    pos, tris = grid(9, 9, 1.0, 1.0)
    h = 1.0 / 8
    sc = SelfCollision(build_model(ClothMesh.from_arrays(pos, tris), None, 0.1))
    t = 0.55 * h
    assert sc.rest_gap(t) == pytest.approx(h, rel=1e-12)
    r, skin = sc.list_radii(t, 0.5)
    assert r == pytest.approx(1.5 * t) and r + skin == pytest.approx(0.9 * h)
    for t in (0.5 * h, 0.2 * h):
        r, skin = sc.list_radii(t, 0.5)
        assert skin == pytest.approx(DEFAULT_TUNING.max_skin * t)
    # Without the gap the radius is the exclusion radius.
    r, skin = list_radii(t, 0.5, DEFAULT_TUNING)
    assert r + skin == pytest.approx(DEFAULT_TUNING.rest_exclusion * t)


@pytest.mark.slow
def test_partial_list_updates_equal_full_builds_and_miss_no_close_pair() -> None:
    """Verlet lists updated for the movers only: after each substep the lists equal a full build
    at the reference positions (same pairs, same order), and every non-neighbour pair closer
    than r at the current positions is listed (brute force). A common translation moves no
    one; moving 10 % of the particles by more than half the skin updates their pairs only;
    moving half of them builds anew, with the smallest skin."""
    pos, tris, x = _crumpled(16, seed=9)
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 0.1)
    sc = SelfCollision(model)
    t, clamp = 0.015, 0.5
    r, skin = sc.list_radii(t, clamp)
    excl = sc.exclusions(t)
    n = len(x)
    edges = model.topology.edges
    rng = np.random.default_rng(3)
    P = np.ascontiguousarray(x.T)
    sc.begin_substep(P.copy(), t, clamp)
    assert sc.stats.rebuilds == 1
    P = P + np.array([[0.3], [-0.1], [0.2]])  # the whole cloth moves: nothing to update
    assert not sc.begin_substep(P.copy(), t, clamp)
    for round_ in range(6):
        movers = rng.choice(n, size=n // 10, replace=False)
        P = P.copy()
        P[:, movers] += rng.normal(scale=skin, size=(3, movers.size))
        P += rng.normal(scale=0.05, size=(3, 1))
        assert sc.begin_substep(P.copy(), t, clamp)
        assert sc.stats.rebuilds == 1 and sc.stats.partial_rebuilds == round_ + 1
        lists = sc.lists
        assert lists.reference is not None
        assert lists.point_triangle is not None and lists.edge_edge is not None
        v, tt, _ = lists.point_triangle_pairs(lists.reference, r + skin, excl.point_triangle)
        i, j, _ = lists.edge_edge_pairs(lists.reference, r + skin, excl.edge_edge)
        for got, want, width in ((lists.point_triangle, (v, tt), len(tris)),
                                 (lists.edge_edge, (i, j), len(edges))):
            key = got[0].astype(np.int64) * width + got[1]
            assert np.all(np.diff(key) > 0)
            assert sorted(zip(*(a.tolist() for a in want))) == list(zip(*(a.tolist() for a in got)))
        # Completeness at the current positions, against brute force.
        y = P.T
        listed = set(zip(lists.point_triangle[0].tolist(), lists.point_triangle[1].tolist()))
        vv, tt = np.meshgrid(np.arange(n), np.arange(len(tris)), indexing="ij")
        vv, tt = vv.ravel(), tt.ravel()
        keep = ~(tris[tt] == vv[:, None]).any(axis=1)
        vv, tt = vv[keep], tt[keep]
        d = point_triangle_distance(y[vv], y[tris[tt, 0]], y[tris[tt, 1]], y[tris[tt, 2]])
        close = set(zip(vv[d < r].tolist(), tt[d < r].tolist()))
        assert len(close) > 20 and close <= listed
        ii, jj = np.triu_indices(len(edges), 1)
        linked = (edges[ii][:, :, None] == edges[jj][:, None, :]).any(axis=(1, 2))
        ii, jj = ii[~linked], jj[~linked]
        dmin = segment_distance(y[edges[ii, 0]], y[edges[ii, 1]], y[edges[jj, 0]], y[edges[jj, 1]])
        close_e = set(zip(ii[dmin < r].tolist(), jj[dmin < r].tolist()))
        assert len(close_e) > 20 and close_e <= set(zip(lists.edge_edge[0].tolist(),
                                                        lists.edge_edge[1].tolist()))
    P = P.copy()
    P[:, : n // 2] += 2.0 * skin
    assert sc.begin_substep(P.copy(), t, clamp)
    assert sc.stats.rebuilds == 2 and np.array_equal(sc.lists.reference, P)
    # Half of the cloth moving fast: the new lists take the smallest skin.
    assert sc.lists.skin == pytest.approx(list_radii(t, clamp, DEFAULT_TUNING)[1])
    assert sc.lists.skin < skin


# --- contact response -------------------------------------------------------------------------


def _two_triangles(gap: float):  # type: ignore[no-untyped-def]
    """Triangle 0 in the plane y = 0, triangle 1 a vertex of which is ``gap`` above it."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 0, 1],
                    [0.2, gap, 0.2], [0.3, 1.0, 0.9], [0.9, 1.0, 0.3]], dtype=float)
    return pos, np.array([[0, 1, 2], [3, 4, 5]])


def _project_once(pos, tris, X, P, thickness=0.1, friction=0.0, masses=None,  # type: ignore[no-untyped-def]
                  tuning=DEFAULT_TUNING):
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 1.0)
    sc = SelfCollision(model, tuning)
    if masses is not None:
        sc.inv_mass = 1.0 / np.asarray(masses, dtype=float)
    Pt = np.ascontiguousarray(P.T)
    sc.begin_substep(Pt, thickness, 0.5)
    sc.project(Pt, np.ascontiguousarray(X.T), thickness, friction)
    return Pt.T, sc


def test_skipping_unchanged_pairs_gives_the_same_narrow_phase() -> None:
    """The narrow phase evaluates, after its first pass, only pairs whose particles moved enough
    to matter, also in a substep's second iteration (after the solver's constraints moved the
    particles). On a crumpled cloth pressed together (hundreds of contacts, four passes and the
    fail-safe), two iterations with a small move in between give positions equal bit for bit
    to those of evaluating every pair in every pass (``skip_unchanged=False``), with fewer pair
    evaluations. A recorder that records nothing changes nothing either."""
    pos, tris, X = _crumpled(16, seed=5)
    rng = np.random.default_rng(11)
    P = X + rng.normal(scale=0.004, size=X.shape)
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 0.1)

    def run(sc: SelfCollision) -> np.ndarray:
        Pt = np.ascontiguousarray(P.T)
        X0 = np.ascontiguousarray(X.T)
        sc.begin_substep(Pt, 0.015, 0.5)
        n = sc.project(Pt, X0, 0.015, 0.3)
        assert n > 200
        Pt[:, ::7] += 1e-4  # what the constraints of the next iteration might move
        sc.project(Pt, X0, 0.015, 0.3)
        return Pt.T

    every_stage = SelfCollision(model, dataclasses.replace(DEFAULT_TUNING, skip_unchanged=False))
    skipped_stage = SelfCollision(model, DEFAULT_TUNING)
    every, skipped = run(every_stage), run(skipped_stage)
    assert np.array_equal(every, skipped)
    assert np.abs(every - P).max() > 1e-3
    # 0.81 measured
    assert skipped_stage.stats.evaluated < 0.9 * every_stage.stats.evaluated
    quiet = SelfCollision(model, DEFAULT_TUNING, stats=NullStats())
    assert np.array_equal(run(quiet), skipped)
    assert quiet.stats.evaluated == 0 and quiet.stats.frame_extra() == NullStats().frame_extra()


def test_stats_record_counts_and_exclusive_phase_times() -> None:
    """The default recorder sums counters and charges each phase only its own time: a phase
    opened inside another is not also counted in the outer one, and nothing opened inside an
    untimed phase (None) is counted at all; ``reset`` zeroes everything."""
    import time

    from pbdcloth.selfcollision.stats import SelfCollisionStats

    st = SelfCollisionStats()
    with st.phase("candidates"):
        time.sleep(0.01)
        with st.phase("hash"):
            time.sleep(0.06)
    with st.phase(None):
        with st.phase("edge_edge"):
            time.sleep(0.01)
    assert st.seconds["hash"] >= 0.06
    assert 0.01 <= st.seconds["candidates"] < 0.06  # the inner phase's time is not in it
    assert st.seconds["edge_edge"] == 0.0 and st.seconds["point_triangle"] == 0.0
    st.on_substep()
    st.on_substep()
    st.on_lists(10, 4)
    st.on_contacts(3, 1)
    extra = st.frame_extra()
    assert extra["self_pt_candidates"] == 5.0 and extra["self_ee_contacts"] == 1.0
    st.reset()
    assert st == SelfCollisionStats()


#: One Jacobi pass: a single contact is solved exactly in one pass, and the corrections are
#: applied at the positions they were computed at (momentum is conserved by each projection,
#: about the positions it sees).
ONE_PASS: SelfCollisionTuning = dataclasses.replace(DEFAULT_TUNING, passes=1)


def test_contact_pushes_to_thickness_and_conserves_momentum() -> None:
    pos, tris = _two_triangles(0.5)
    X = pos.copy()
    X[3, 1] = 0.07
    P = X.copy()
    P[3, 1] = 0.04  # the vertex came within 4 cm of triangle 0 (thickness 10 cm)
    masses = np.array([1.0, 2.0, 3.0, 0.5, 1.0, 1.0])
    out, _ = _project_once(pos, tris, X, P, masses=masses, tuning=ONE_PASS)
    delta = out - P
    # Linear and angular momentum of the corrections vanish.
    np.testing.assert_allclose((masses[:, None] * delta).sum(axis=0), 0.0, atol=1e-15)
    np.testing.assert_allclose((masses[:, None] * np.cross(P, delta)).sum(axis=0), 0.0,
                               atol=1e-15)
    # A single contact is solved exactly in one pass: its constraint, linear in the positions
    # for the normal n = +y and the closest point's barycentrics (0.6, 0.2, 0.2) it was
    # linearised at, is met to round-off (W = w_p + sum b_k^2 w_k is its exact effective mass).
    q = 0.6 * out[0] + 0.2 * out[1] + 0.2 * out[2]
    assert out[3, 1] - q[1] == pytest.approx(0.1, abs=1e-14)
    assert out[3, 1] > P[3, 1] and np.all(out[:3, 1] < 0.0)


def test_crossed_vertex_returns_to_its_start_side() -> None:
    """A vertex that passed through the triangle during the substep is put back on the side
    it came from (start positions X), not pushed on through."""
    pos, tris = _two_triangles(0.5)
    X = pos.copy()
    X[3, 1] = 0.03
    P = X.copy()
    P[3, 1] = -0.02  # crossed
    out, _ = _project_once(pos, tris, X, P)
    assert out[3, 1] > 0.0
    # And one that started below stays below.
    X2 = X.copy()
    X2[3, 1] = -0.03
    P2 = X2.copy()
    P2[3, 1] = 0.02
    out2, _ = _project_once(pos, tris, X2, P2)
    assert out2[3, 1] < 0.0


def test_edge_edge_contact_separates_crossing_edges() -> None:
    """Two edges crossing like an X whose triangles reach away from each other (one down, one
    up), so that no vertex comes near the other triangle: only edge-edge can see it."""
    pos = np.array([[-1, 0, 0], [1, 0, 0], [0, -3, 0],
                    [0, 0.5, -1], [0, 0.5, 1], [0, 3.5, 0]], dtype=float)
    tris = np.array([[0, 1, 2], [3, 4, 5]])
    X = pos.copy()
    X[3:, 1] -= 0.48  # edge 3-4 two centimetres above edge 0-1
    P = X.copy()
    P[3:, 1] -= 0.03  # crossed: one centimetre below it
    masses = np.array([1.0, 3.0, 1.0, 2.0, 0.5, 1.0])
    out, sc = _project_once(pos, tris, X, P, thickness=0.05, masses=masses, tuning=ONE_PASS)
    assert sc.stats.edge_edge_contacts == 1 and sc.stats.point_triangle_contacts == 0
    # Closest points at s = s' = 1/2: back above, one thickness apart (exact for one contact).
    gap = 0.5 * (out[3, 1] + out[4, 1]) - 0.5 * (out[0, 1] + out[1, 1])
    assert gap == pytest.approx(0.05, abs=1e-14)
    delta = out - P
    np.testing.assert_allclose((masses[:, None] * delta).sum(axis=0), 0.0, atol=1e-15)
    np.testing.assert_allclose((masses[:, None] * np.cross(P, delta)).sum(axis=0), 0.0,
                               atol=1e-15)


def test_friction_removes_small_slip_between_layers() -> None:
    pos, tris = _two_triangles(0.5)
    X = pos.copy()
    X[3, 1] = 0.09
    P = X.copy()
    P[3] += [0.002, -0.04, 0.0]  # pressed in by 4 cm while sliding 2 mm
    slide = _project_once(pos, tris, X, P, friction=0.0, tuning=ONE_PASS)[0]
    stick = _project_once(pos, tris, X, P, friction=1.0, tuning=ONE_PASS)[0]
    # Slip of the vertex relative to its contact point (barycentrics 0.598, 0.202, 0.2): without
    # friction the sideways part stays, with mu = 1 (slip 2 mm < mu * depth 4 cm) it is removed.
    def rel(out):  # type: ignore[no-untyped-def]
        q = 0.598 * out[0] + 0.202 * out[1] + 0.2 * out[2]
        q0 = 0.598 * X[0] + 0.202 * X[1] + 0.2 * X[2]
        return (out[3] - X[3]) - (q - q0)
    assert rel(slide)[0] == pytest.approx(0.002, rel=1e-9)
    assert abs(rel(stick)[0]) < 1e-15


def test_velocity_clamp_limits_motion_relative_to_the_mean() -> None:
    pos, tris = grid(6, 6)
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 0.1)
    sc = SelfCollision(model)
    rng = np.random.default_rng(5)
    V = rng.normal(size=(3, 36)) * 4.0 + np.array([[0.0], [-30.0], [0.0]])  # falling fast
    h, t, c = 1e-3, 0.01, 0.5
    V0 = V.copy()
    clamped = sc.clamp_velocity(V, h, t, c)
    rel = np.linalg.norm(V[:, :, None] - V[:, None, :], axis=0)
    assert clamped > 0
    assert rel.max() <= 2 * c * t / h * (1 + 1e-12)
    assert clamped < 36  # only the outliers
    m = model.mass
    assert np.allclose(V @ m, V0 @ m, rtol=0, atol=1e-12 * np.abs(V0 @ m).max())  # momentum kept


# --- scenes, on every backend -----------------------------------------------------------------

FOLD_FRAMES = 48
FOLD_RESOLUTION = 40  # the scene's own: 40 x 24 points, 2.6 cm edges, 1 cm self thickness
TWIST_FRAMES = 48  # 3.75 degrees per frame: 180 degrees of twist at frame 48
TWIST_RESOLUTION = 24


def _on(scene: Any, backend: Any, **changes: Any) -> Any:
    """``scene`` with its settings moved onto ``backend`` (a conftest ``BackendCase``)."""
    scene.settings = backend.cloth_settings(**{**scene.settings.to_dict(), **changes})
    return scene


def _run(scene, frames):  # type: ignore[no-untyped-def]
    solver = scene.make_solver()
    assert solver.backend_name == scene.settings.backend
    out = []
    stats = []
    for frame in range(1, frames + 1):
        if scene.animate is not None:
            scene.animate(solver, frame)
        stats.append(solver.step(1.0 / scene.fps))
        out.append((solver.positions.copy(), solver.velocities.copy()))
    return solver, out, stats


def _first_intersecting_frame(scene, frames):  # type: ignore[no-untyped-def]
    solver = scene.make_solver()
    for frame in range(1, frames + 1):
        if scene.animate is not None:
            scene.animate(solver, frame)
        solver.step(1.0 / scene.fps)
        if len(intersecting_pairs(solver.positions, scene.triangles)):
            return frame
    return None


def test_scenes_are_registered_for_the_demo() -> None:
    assert "fold" in SCENES and "twist" in SCENES
    assert SCENES["fold"]().settings.self_collision
    assert SCENES["twist"]().settings.self_collision


def test_fast_twist_never_intersects_itself(backend: Any) -> None:
    """The short check of the default run: the twist scene turned 30 degrees a frame, 210
    degrees in seven frames, with contacts in the seventh frame (20 x 20 points)."""
    scene = _on(twist_scene(resolution=20, frames=7, degrees_per_frame=30.0), backend)
    t = scene.settings.self_thickness
    _, frames, stats = _run(scene, 7)
    nearest = nearest_after_checking_every_frame(scene, frames)
    assert sum(s.extra["self_pt_contacts"] for s in stats) > 50
    assert nearest >= 0.5 * t, f"closest vertex-triangle pair {nearest:.4f} m"


def test_the_solver_hands_its_tuning_to_the_stage(backend: Any) -> None:
    """``ClothSolver(..., self_collision_tuning=)`` reaches the stage: one contact pass per
    iteration instead of four gives other positions once layers touch."""
    scene = _on(twist_scene(resolution=16, frames=4, degrees_per_frame=45.0), backend)

    def run(tuning: SelfCollisionTuning) -> np.ndarray:
        solver = ClothSolver(scene.positions, scene.triangles, pinned=scene.pinned,
                             settings=scene.settings, colliders=scene.colliders,
                             self_collision_tuning=tuning)
        contacts = 0.0
        for frame in range(1, 5):
            scene.animate(solver, frame)
            contacts += solver.step(1.0 / scene.fps).extra["self_pt_contacts"]
        assert contacts > 0
        return solver.positions

    assert not np.array_equal(run(DEFAULT_TUNING), run(ONE_PASS))


@pytest.fixture(scope="module")
def fold_runs() -> dict[str, Any]:
    """The fold scene with self-collision, run once per backend for the tests that look at it
    (filled by :func:`fold_run`)."""
    return {}


@pytest.fixture
def fold_run(backend: Any, fold_runs: dict[str, Any]) -> Any:
    """(scene, frames, stats) of the fold scene on ``backend``, run once."""
    if backend.name not in fold_runs:
        scene = _on(fold_scene(resolution=FOLD_RESOLUTION, frames=FOLD_FRAMES), backend)
        _, frames, stats = _run(scene, FOLD_FRAMES)
        fold_runs[backend.name] = (scene, frames, stats)
    return fold_runs[backend.name]


@pytest.mark.slow
def test_fold_scene_never_intersects_itself(fold_run) -> None:  # type: ignore[no-untyped-def]
    scene, frames, stats = fold_run
    t = scene.settings.self_thickness
    nearest = nearest_after_checking_every_frame(scene, frames)
    # Layers do touch (the test is not vacuous) and never come closer than half the thickness.
    assert sum(s.extra["self_pt_contacts"] for s in stats) > 0
    assert nearest < 1.5 * t
    assert nearest >= 0.5 * t, f"closest vertex-triangle pair {nearest:.4f} m"


@pytest.mark.slow
def test_reruns_are_bit_identical(backend, fold_run) -> None:  # type: ignore[no-untyped-def]
    """A second run of the fold scene, through its first contacts, gives identical arrays
    (Warp: on the CPU device)."""
    _, first, stats = fold_run
    frames = 20
    assert sum(s.extra["self_pt_contacts"] + s.extra["self_ee_contacts"]
               for s in stats[:frames]) > 0
    _, again, _ = _run(_on(fold_scene(resolution=FOLD_RESOLUTION, frames=frames), backend),
                       frames)
    for (x1, v1), (x2, v2) in zip(first[:frames], again):
        assert np.array_equal(x1, x2) and np.array_equal(v1, v2)


@pytest.mark.slow
def test_fold_scene_without_self_collision_intersects(backend: Any) -> None:
    scene = _on(fold_scene(resolution=FOLD_RESOLUTION, frames=FOLD_FRAMES), backend,
                self_collision=False)
    assert _first_intersecting_frame(scene, FOLD_FRAMES) is not None


@pytest.mark.slow
def test_twist_scene_never_intersects_itself_up_to_180_degrees(backend: Any) -> None:
    """Frame ends up to 180 degrees of twist (with pairs joined by a mesh edge tested, a hinge
    folded flat under the twist no longer lets them pass)."""
    scene = _on(twist_scene(resolution=TWIST_RESOLUTION, frames=TWIST_FRAMES), backend)
    assert scene.info["degrees_per_frame"] * TWIST_FRAMES == pytest.approx(180.0)
    t = scene.settings.self_thickness
    _, frames, stats = _run(scene, TWIST_FRAMES)
    nearest = nearest_after_checking_every_frame(scene, frames)
    assert sum(s.extra["self_pt_contacts"] for s in stats) > 0
    assert nearest >= 0.5 * t, f"closest vertex-triangle pair {nearest:.4f} m"


@pytest.mark.slow
def test_twist_scene_without_self_collision_intersects_at_180_degrees(backend: Any) -> None:
    scene = _on(twist_scene(resolution=TWIST_RESOLUTION, frames=TWIST_FRAMES), backend,
                self_collision=False)
    _, frames, _ = _run(scene, TWIST_FRAMES)
    assert len(intersecting_pairs(frames[-1][0], scene.triangles)) > 0


# --- settings and backends --------------------------------------------------------------------


def test_settings_are_declared_and_validated() -> None:
    s = ClothSettings(self_collision=True, self_thickness=0.004, self_friction=0.5, self_clamp=0.25)
    assert s.to_dict()["self_thickness"] == 0.004
    with pytest.raises(SettingsError, match="self_thickness"):
        ClothSettings(self_thickness=0.0)
    with pytest.raises(SettingsError, match="self_clamp"):
        ClothSettings(self_clamp=0.9)
    with pytest.raises(SettingsError, match="self_friction"):
        ClothSettings(self_friction=-1.0)


def test_reference_backend_refuses_self_collision() -> None:
    pos, tris = grid(4, 4)
    solver = ClothSolver(pos, tris, settings=ClothSettings(self_collision=True))
    solver.use_backend(ReferenceBackend(solver.model))
    with pytest.raises(NotImplementedError, match="self-collision"):
        solver.step()


def test_self_collision_off_leaves_the_solver_unchanged() -> None:
    """Switching self-collision off gives bit for bit the plain solver (the hook is inert)."""
    pos, tris = grid(8, 8)
    a = ClothSolver(pos, tris, pinned=[0, 7], settings=ClothSettings())
    b = ClothSolver(pos, tris, pinned=[0, 7], settings=ClothSettings(self_thickness=0.3))
    for _ in range(3):
        a.step()
        b.step()
    assert np.array_equal(a.positions, b.positions)


def test_demo_command_runs_the_new_scenes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pbdcloth.cli.main import main

    for name in ("fold", "twist"):
        out = tmp_path / name
        assert main(["demo", "--scene", name, "--frames", "1", "--out", str(out), "--quiet"]) == 0
        assert (out / "cloth.0001.obj").exists() and (out / "summary.json").exists()
