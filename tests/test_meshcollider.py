"""MeshCollider: deforming triangle-mesh obstacles (issue 15).

The checks here do not use the solver's collision code: inside tests are generalized winding
numbers (Jacobson et al. 2013, "Robust inside-outside segmentation using generalized winding
numbers": w(p) = sum of the solid angles of the triangles seen from p over 4 pi, the solid angle
by Van Oosterom and Strackee 1983), path tests are Möller-Trumbore segment-triangle
intersections (Möller and Trumbore 1997). Every setting an assertion depends on is set here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.cloth.mesh import grid
from pbdcloth.colliders import MeshCollider, MeshColliderError, SolverInputError, mesh_contact
from pbdcloth.colliders.broadphase import BoxGrid
from pbdcloth.colliders.ccd import first_crossing
from pbdcloth.scenes.props import box_mesh, capsule_mesh

if TYPE_CHECKING:
    from conftest import BackendCase

FPS = 24.0


# --- independent geometry -------------------------------------------------------------------
def _closed_shells(triangles: np.ndarray) -> list[np.ndarray] | None:
    """The triangle indices of each connected shell of the mesh, when every shell is closed
    (each edge shared by exactly two of its triangles); ``None`` otherwise."""
    t = np.asarray(triangles, dtype=np.int64)
    edges = np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    if not (counts == 2).all():
        return None
    label = np.arange(int(t.max()) + 1)
    while True:  # propagate the smallest vertex label over the triangles until it settles
        low = label[t].min(axis=1)
        new = label.copy()
        np.minimum.at(new, t.reshape(-1), np.repeat(low, 3))
        new = new[new]
        if np.array_equal(new, label):
            break
        label = new
    shell = label[t[:, 0]]
    return [np.flatnonzero(shell == s) for s in np.unique(shell)]


def winding_numbers(points: np.ndarray, vertices: np.ndarray, triangles: np.ndarray
                    ) -> np.ndarray:
    """Generalized winding number of a closed mesh at each point (|w| ~ 1 inside, ~ 0 out):
    the sum of the triangles' signed solid angles over 4 pi (Jacobson et al. 2013), each from
    Van Oosterom and Strackee's formula tan(Omega / 2) = det[a b c] / (|a||b||c| + (a.b)|c| +
    (b.c)|a| + (c.a)|b|). A closed shell's winding number is 0 outside its bounding box, so
    each closed shell is summed only at the points inside its box."""
    points = np.asarray(points, dtype=float)
    vertices = np.asarray(vertices, dtype=float)
    out = np.zeros(points.shape[0])
    shells = _closed_shells(triangles)
    groups = [np.arange(len(triangles))] if shells is None else shells
    for tri in groups:
        corners = vertices[np.asarray(triangles)[tri]]          # (T, 3 corners, 3)
        if shells is None:
            near = np.arange(points.shape[0])
        else:
            lo, hi = corners.min(axis=(0, 1)), corners.max(axis=(0, 1))
            near = np.flatnonzero(((points >= lo) & (points <= hi)).all(axis=1))
        A, B, C = (corners[:, k, :].T for k in range(3))         # (3, T) each
        for lo_ in range(0, near.size, 128):
            idx = near[lo_:lo_ + 128]
            p = points[idx].T[:, :, None]                          # (3, P, 1)
            a, b, c = A[:, None, :] - p, B[:, None, :] - p, C[:, None, :] - p
            la = np.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
            lb = np.sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2])
            lc = np.sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2])
            det = (a[0] * (b[1] * c[2] - b[2] * c[1]) + a[1] * (b[2] * c[0] - b[0] * c[2])
                   + a[2] * (b[0] * c[1] - b[1] * c[0]))
            den = (la * lb * lc + (a[0] * b[0] + a[1] * b[1] + a[2] * b[2]) * lc
                   + (b[0] * c[0] + b[1] * c[1] + b[2] * c[2]) * la
                   + (c[0] * a[0] + c[1] * a[1] + c[2] * a[2]) * lb)
            out[idx] += np.arctan2(det, den).sum(axis=1) / (2.0 * np.pi)
    return out


def segment_hits(p0: np.ndarray, p1: np.ndarray, A: np.ndarray, B: np.ndarray, C: np.ndarray
                 ) -> int:
    """How many (segment, triangle) pairs intersect: segments p0 -> p1 (S, 3), triangles
    ABC (T, 3) each (Möller-Trumbore)."""
    lo, hi = np.minimum(p0, p1), np.maximum(p0, p1)
    tlo, thi = np.minimum(np.minimum(A, B), C), np.maximum(np.maximum(A, B), C)
    si, ti = np.nonzero(((lo[:, None] <= thi[None]) & (hi[:, None] >= tlo[None])).all(axis=2))
    d = (p1 - p0)[si]
    a = A[ti]
    e1, e2 = B[ti] - a, C[ti] - a
    h = np.cross(d, e2)
    det = np.einsum("ki,ki->k", e1, h)
    ok = np.abs(det) > 1e-18
    inv = 1.0 / np.where(ok, det, 1.0)
    s = p0[si] - a
    u = np.einsum("ki,ki->k", s, h) * inv
    q = np.cross(s, e1)
    v = np.einsum("ki,ki->k", d, q) * inv
    t = np.einsum("ki,ki->k", e2, q) * inv
    return int((ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0) & (t <= 1)).sum())


def path_hits(q0: np.ndarray, q1: np.ndarray, x0: np.ndarray, x1: np.ndarray,
              tris: np.ndarray, samples: int = 4) -> int:
    """Crossings of the collider vertex paths q0 -> q1 through the cloth moving x0 -> x1 over
    one substep, both linear: each of ``samples`` pieces of the path against the cloth at the
    piece's end."""
    hits = 0
    for k in range(samples):
        ta, tb = k / samples, (k + 1) / samples
        x = x0 + tb * (x1 - x0)
        hits += segment_hits(q0 + ta * (q1 - q0), q0 + tb * (q1 - q0), x[tris[:, 0]],
                             x[tris[:, 1]], x[tris[:, 2]])
    return hits


def record_substeps(solver: ClothSolver) -> list[np.ndarray]:
    """A list that receives the cloth's positions (N, 3) at the end of every substep."""
    states: list[np.ndarray] = []
    backend = solver.backend
    update = backend._update  # type: ignore[attr-defined]

    def spy(P, X, *rest):  # type: ignore[no-untyped-def]
        out = update(P, X, *rest)
        states.append(np.array(out[0].T))
        return out

    backend._update = spy  # type: ignore[attr-defined]
    return states


def substep_runner(backend: str, n_sub: int) -> tuple[int, int]:
    """How a test sees every substep: (substeps per step, steps per frame). numpy: ``n_sub``
    substeps per frame, each recorded (:func:`record_substeps`); Warp runs a whole frame on the
    device, so there one step of 1 substep is one substep (1 / (fps n_sub) s: the same h, and
    the collider's frames are given at n_sub times the rate)."""
    return (n_sub, 1) if backend == "numpy" else (1, n_sub)


def box_triangles(center, half):  # type: ignore[no-untyped-def]
    v, quads = box_mesh(center, half)
    return v, np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])


# --- unit pieces ----------------------------------------------------------------------------
@pytest.mark.parametrize("count, every", [(400, 40), (4000, 20)],
                         ids=["few-big-boxes", "big-boxes-in-their-own-grid"])
def test_box_grid_finds_exactly_the_overlapping_boxes(count: int, every: int) -> None:
    rng = np.random.default_rng(3)
    centre = rng.uniform(-1, 1, (3, count))
    half = rng.uniform(0.0, 0.1, (3, count))
    half[:, ::every] *= 5.0  # boxes wider than two cells: tested directly, or in a grid
    grid = BoxGrid(count)
    grid.refit(centre, half, 0.1)
    assert grid.big.size > 0 and (grid.big_grid is not None) == (count > 1000)
    lo = rng.uniform(-1, 1, (3, 300))
    hi = lo + rng.uniform(0.0, 0.2, (3, 300))
    q, b = grid.query(lo, hi)
    brute = np.argwhere(((centre[:, None, :] + half[:, None, :] >= lo[:, :, None])
                         & (centre[:, None, :] - half[:, None, :] <= hi[:, :, None])).all(axis=0))
    assert set(zip(q.tolist(), b.tolist())) == set(map(tuple, brute.tolist()))
    grid.refit(centre + 0.01, half, 0.1)  # refit keeps the answer exact after a move
    q, b = grid.query(lo + 0.01, hi + 0.01)
    assert set(zip(q.tolist(), b.tolist())) == set(map(tuple, brute.tolist()))


def test_first_crossing_of_a_point_through_a_moving_triangle() -> None:
    """A point at rest at z = 0; a triangle moving from z = -1 to z = 3 meets it at t = 1/4."""
    col = lambda *v: np.array(v, dtype=float).reshape(3, 1)
    x = col(0.2, 0.2, 0.0)
    hit, t, u, v, w, side = first_crossing(x, x, col(0, 0, -1), col(0, 0, 3), col(1, 0, -1),
                                           col(1, 0, 3), col(0, 1, -1), col(0, 1, 3))
    assert hit[0] and t[0] == pytest.approx(0.25, abs=1e-8)
    assert (u[0], v[0], w[0]) == pytest.approx((0.6, 0.2, 0.2), abs=1e-8)
    assert side[0] == 1.0
    # Beside the triangle (x + y > 1): the plane is crossed, the triangle is not.
    x = col(0.8, 0.8, 0.0)
    hit, *_ = first_crossing(x, x, col(0, 0, -1), col(0, 0, 3), col(1, 0, -1), col(1, 0, 3),
                             col(0, 1, -1), col(0, 1, 3))
    assert not hit[0]


# --- validation -----------------------------------------------------------------------------
def test_bad_meshes_and_frames_are_refused_naming_the_problem() -> None:
    v, t = capsule_mesh((0, 0, 0), (0, 1, 0), 0.1, segments=8, rings=2)
    with pytest.raises(MeshColliderError, match="vertex 3"):
        MeshCollider(np.where(np.arange(len(v))[:, None] == 3, np.nan, v), t)
    with pytest.raises(MeshColliderError, match=r"shape \(V, 3\)"):
        MeshCollider(v[:, :2], t)
    with pytest.raises(MeshColliderError, match="triangle 0"):
        MeshCollider(v, t + len(v))
    with pytest.raises(MeshColliderError, match=r"\(T, 3\)"):
        MeshCollider(v, t.astype(float))
    c = MeshCollider(v, t)
    with pytest.raises(MeshColliderError, match="topology changed"):
        c.move_to(v[:-1])
    assert issubclass(MeshColliderError, SolverInputError)

    def frames(k: int) -> np.ndarray:
        return v if k < 3 else np.full_like(v, np.nan)

    c = MeshCollider(None, t, frames=frames, first_frame=1, name="walk")
    c.end_frame()  # frames are read when first needed: nothing past the last step is read
    with pytest.raises(MeshColliderError, match="walk frame 3: vertex 0"):
        c.pose_at(1.0)
    seq = np.stack([v, v + 0.1, v + 0.2])
    c = MeshCollider(None, t, frames=seq)
    assert np.array_equal(c.vertices, v)  # between steps: the current pose
    assert np.array_equal(c.pose_at(1.0), v + 0.1)  # a step reads the next frame
    c.end_frame()
    c.end_frame()  # past the last frame the mesh stays
    assert np.array_equal(c.pose_at(1.0), v + 0.2)
    c.seek(1)
    assert np.array_equal(c.pose_at(0.0), v + 0.1)


# --- Must show: a limb sweeping through a hanging cloth -------------------------------------
def _sweep(colliders_on: bool, frames: int = 7, backend: str = "numpy"
           ) -> tuple[int, int, float]:
    """A capsule-like limb mesh (radius 5 cm) sweeps at 3 m/s through a hanging 0.8 m sheet
    (10 substeps at 24 fps: 12.5 mm per substep, three thicknesses of 4 mm). Returns the cloth
    vertices found inside the limb and the limb vertex path crossings, over every substep end,
    and how far the cloth was carried [m]."""
    cv, ct = capsule_mesh((0, 0.55, 0), (0, 0.95, 0), 0.05, segments=16, rings=4)
    speed, n_sub = 3.0, 10
    per_step, steps = substep_runner(backend, n_sub)

    def limb(k: float) -> np.ndarray:
        return cv + np.array([0.0, 0.0, -0.15 + speed * k / (FPS * steps)])

    pos, tris = grid(31, 31, 0.8, 0.8, plane="xy", origin=(-0.4, 1.2, 0.0))
    top = np.flatnonzero(pos[:, 1] > 1.2 - 1e-9)
    s = ClothSettings(substeps=per_step, iterations=6, thickness=0.004, friction=0.0,
                      static_friction=0.0, model="xpbd", stretch_compliance=1e-8,
                      shear_compliance=1e-6, bend_compliance=1.0, damping=0.0, tethers=False,
                      self_collision=False, backend=backend)
    cols = [MeshCollider(None, ct, frames=limb, name="limb")] if colliders_on else []
    solver = ClothSolver(pos, tris, pinned=top, settings=s, colliders=cols)
    assert solver.backend.name == backend
    states = record_substeps(solver) if backend == "numpy" else []
    inside = crossings = 0
    x_prev = pos.copy()
    for f in range(1, frames * steps + 1):
        states.clear()
        solver.step(1.0 / (FPS * steps))
        if backend != "numpy":
            states.append(solver.positions)
        assert len(states) == per_step
        for k, x in enumerate(states):
            q0 = limb(f - 1) + (k / per_step) * (limb(f) - limb(f - 1))
            q1 = limb(f - 1) + ((k + 1) / per_step) * (limb(f) - limb(f - 1))
            inside += int((np.abs(winding_numbers(x, q1, ct)) > 0.5).sum())
            crossings += path_hits(q0, q1, x_prev, x, tris)
            x_prev = x
    return inside, crossings, float(solver.positions[:, 2].max())


@pytest.mark.slow
def test_limb_sweeping_at_3_m_per_s_neither_enters_nor_pierces_the_cloth() -> None:
    inside, crossings, carried = _sweep(True)
    assert carried > 0.5  # the limb went 0.5 m past the sheet's plane, carrying the cloth
    assert inside == 0
    assert crossings == 0


@pytest.mark.slow
def test_the_sweep_checks_find_a_limb_that_nobody_stops() -> None:
    inside, crossings, carried = _sweep(False, frames=4)
    assert carried == 0.0
    assert inside > 50 and crossings > 50


# --- Must show: a spike under a sheet -------------------------------------------------------
def _sheet_and_cone() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A 1 m sheet of 21 x 21 points at y = 0.5 (its triangles, and its border to pin) and a
    cone of 1 cm base radius, 12 cm tall, its base at y = 0 and its tip inside a cloth
    triangle, away from the triangle's vertices and edges: (positions, triangles, border,
    cone vertices (ring of 8, tip, base centre), cone triangles)."""
    pos, tris = grid(21, 21, 1.0, 1.0, plane="xz", origin=(-0.5, 0.5, -0.5))
    border = np.flatnonzero((np.abs(pos[:, 0]) > 0.5 - 1e-9) | (np.abs(pos[:, 2]) > 0.5 - 1e-9))
    tip_xz = np.array([0.012, 0.031])
    ring = 8
    ang = 2 * np.pi * np.arange(ring) / ring
    base = np.stack([tip_xz[0] + 0.01 * np.cos(ang), np.zeros(ring),
                     tip_xz[1] + 0.01 * np.sin(ang)], axis=1)
    cone = np.concatenate([base, [[tip_xz[0], 0.12, tip_xz[1]], [tip_xz[0], 0.0, tip_xz[1]]]])
    cone_t = np.array([[k, (k + 1) % ring, ring] for k in range(ring)]
                      + [[(k + 1) % ring, k, ring + 1] for k in range(ring)])
    return pos, tris, border, cone, cone_t


def _spike(monkeypatch: pytest.MonkeyPatch | None, backend: str = "numpy"
           ) -> tuple[float, int]:
    """A cone (base radius 1 cm, far below the sheet's 5 cm edges) pushed up at 1 m/s for a
    quarter of a second under a sheet pinned along its border (its tip 12 cm above the sheet's
    plane at the end), then held for 10 frames, its tip under a cloth triangle, away from the
    triangle's vertices. Returns how far the tip ended below the sheet [m] (negative: above
    it) and the tip path's crossings of the cloth over every substep."""
    pos, tris, border, cone, cone_t = _sheet_and_cone()

    per_step, steps = substep_runner(backend, 10)

    def spike(k: float) -> np.ndarray:
        return cone + np.array([0.0, 0.25 + min(k / steps, 6) / FPS, 0.0])

    s = ClothSettings(substeps=per_step, iterations=6, thickness=0.004, friction=0.0,
                      static_friction=0.0, model="xpbd", stretch_compliance=1e-7,
                      shear_compliance=1e-6, bend_compliance=1.0, damping=0.0, tethers=False,
                      self_collision=False, backend=backend)
    if monkeypatch is not None:
        monkeypatch.setattr(mesh_contact, "project_collider_vertices", lambda *a, **k: 0)
        import pbdcloth.colliders.mesh as mesh_module
        monkeypatch.setattr(mesh_module, "project_collider_vertices", lambda *a, **k: 0)
    solver = ClothSolver(pos, tris, pinned=border, settings=s,
                         colliders=[MeshCollider(None, cone_t, frames=spike)])
    assert solver.backend.name == backend
    states = record_substeps(solver) if backend == "numpy" else []
    crossings = 0
    x_prev = pos.copy()
    tip = cone.shape[0] - 2  # after the base ring
    for f in range(1, 16 * steps + 1):
        states.clear()
        solver.step(1.0 / (FPS * steps))
        if backend != "numpy":
            states.append(solver.positions)
        for k, x in enumerate(states):
            d = (spike(f) - spike(f - 1))[tip:tip + 1]
            q0 = spike(f - 1)[tip:tip + 1] + (k / per_step) * d
            q1 = spike(f - 1)[tip:tip + 1] + ((k + 1) / per_step) * d
            crossings += path_hits(q0, q1, x_prev, x, tris)
            x_prev = x
    x = solver.positions
    # Height of the sheet over the tip: the triangles whose xz projection holds the tip.
    tip_end = spike(16 * steps)[tip]
    a, b, c = (x[tris[:, k]][:, [0, 2]] for k in range(3))
    p = tip_end[[0, 2]]
    det = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (c[:, 0] - a[:, 0]) * (b[:, 1] - a[:, 1])
    l1 = ((p[0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (c[:, 0] - a[:, 0]) * (p[1] - a[:, 1])) / det
    l2 = ((b[:, 0] - a[:, 0]) * (p[1] - a[:, 1]) - (p[0] - a[:, 0]) * (b[:, 1] - a[:, 1])) / det
    over = (l1 >= 0) & (l2 >= 0) & (l1 + l2 <= 1)
    y = ((1 - l1 - l2) * x[tris[:, 0], 1] + l1 * x[tris[:, 1], 1] + l2 * x[tris[:, 2], 1])[over]
    return float(y.min() - tip_end[1]), crossings


@pytest.mark.slow
def test_a_spike_pushed_up_under_a_sheet_does_not_pierce_it() -> None:
    below, crossings = _spike(None)
    assert crossings == 0
    assert below >= 0.004 * 0.9  # the sheet stays a thickness above the tip


def test_without_collider_vertices_against_cloth_triangles_the_spike_pierces(
        monkeypatch: pytest.MonkeyPatch) -> None:
    below, crossings = _spike(monkeypatch)
    assert crossings > 0 and below < 0.0


# --- Must show: friction on a moving platform -----------------------------------------------
def _platform(mu: float, backend: str = "numpy") -> tuple[float, float]:
    """A 0.2 m cloth patch rests on a 2 m box platform; after 12 frames at rest the platform
    accelerates at 0.5 m/s^2 for 1 s to 0.5 m/s and keeps that speed for 1 s. Within a frame
    the platform moves linearly (as every mesh collider does), so its speed jumps by
    a / fps = 0.021 m/s at each frame, less than the mu g h = 0.033 m/s static friction with
    mu = 0.8 can give in one substep (h = 1/240 s). Returns the platform's travel and the cloth
    centroid's travel along x over the 2 s [m]."""
    pv, pt = box_triangles((0.0, 0.05, 0.0), (1.0, 0.05, 0.5))

    def x_at(k: int) -> float:
        t = max(k - 12, 0) / FPS
        ramp = 1.0
        return 0.5 * (t * t / (2 * ramp) if t < ramp else t - ramp / 2)

    def platform(k: int) -> np.ndarray:
        return pv + np.array([x_at(k), 0.0, 0.0])

    pos, tris = grid(11, 11, 0.2, 0.2, plane="xz", origin=(-0.1, 0.1 + 0.004, -0.1))
    s = ClothSettings(substeps=10, iterations=2, thickness=0.004, friction=mu,
                      static_friction=mu, model="xpbd", stretch_compliance=1e-7,
                      shear_compliance=1e-6, bend_compliance=1.0, damping=0.0, tethers=False,
                      restitution=0.0, self_collision=False, backend=backend)
    solver = ClothSolver(pos, tris, settings=s, colliders=[MeshCollider(None, pt,
                                                                          frames=platform)])
    assert solver.backend.name == backend
    for _ in range(12):
        solver.step(1.0 / FPS)
    start = solver.positions[:, 0].mean()
    for _ in range(48):
        solver.step(1.0 / FPS)
    assert solver.positions[:, 1].min() > 0.1  # still on the platform
    return x_at(60) - x_at(12), float(solver.positions[:, 0].mean() - start)


@pytest.mark.slow
def test_a_patch_on_a_moving_platform_is_carried_with_static_friction() -> None:
    travel, carried = _platform(0.8)
    assert travel == pytest.approx(0.75)
    # 2 s of contact: slip below 1 mm per second.
    assert abs(travel - carried) < 2e-3


@pytest.mark.slow
def test_without_friction_the_platform_slides_out_under_the_patch() -> None:
    travel, carried = _platform(0.0)
    assert abs(carried) < 0.02 * travel


# --- Must show: the skirt on the walking body -----------------------------------------------
def _skirt_inside(frames: int, body_collides: bool, coarse: bool, backend: str = "numpy"
                  ) -> list[int]:
    """Cloth vertices inside the walking body (winding number > 1/2) at every frame end."""
    from pbdcloth.scenes.cloth import SKIRT_TIGHT_CUT, skirt_scene
    from pbdcloth.scenes.walker import WalkingBody

    size = {"nu": 48, "nv": 16, "body_segments": 16, "body_rings": 12} if coarse else {}
    settings = ClothSettings(
        model="xpbd", substeps=10, iterations=3, density=0.2, stretch_compliance=1e-7,
        shear_compliance=1e-6, bend_compliance=20.0, damping=0.3, tethers=True,
        tether_slack=1.02, thickness=0.006, friction=0.3, static_friction=0.3,
        self_collision=False, backend=backend)
    # The tight cut: the thighs press into the skirt, so without the collider many vertices
    # end inside the body.
    scene = skirt_scene(frames=frames, settings=settings, body_collides=body_collides,
                        **SKIRT_TIGHT_CUT, **size)
    body = WalkingBody(segments=size.get("body_segments", 32), rings=size.get("body_rings", 24))
    solver = scene.make_solver()
    inside = []
    for k in range(1, frames + 1):
        assert scene.animate is not None
        scene.animate(solver, k)
        solver.step(1.0 / scene.fps)
        w = winding_numbers(solver.positions, body.vertices(k / scene.fps), body.triangles)
        inside.append(int((w > 0.5).sum()))
    return inside


def test_the_walking_body_is_a_closed_outward_mesh_that_deforms() -> None:
    from pbdcloth.scenes.walker import WalkingBody

    body = WalkingBody()
    v, t = body.rest, body.triangles
    edges = np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1)
    assert set(np.unique(edges, axis=0, return_counts=True)[1].tolist()) == {2}  # watertight
    volume = np.einsum("ij,ij->i", v[t[:, 0]], np.cross(v[t[:, 1]], v[t[:, 2]])).sum() / 6
    assert volume > 0.0  # outward
    # Deforming, not rigid: the knee-to-ankle distance stays, the hip-to-ankle one changes.
    a, b = body.vertices(0.0), body.vertices(0.3)
    d = lambda x: np.linalg.norm(x[:, None] - x[None, ::97], axis=2)
    assert np.abs(d(a) - d(b)).max() > 0.05


def test_skirt_scene_has_the_particles_the_issue_asks_for() -> None:
    from pbdcloth.scenes.cloth import SCENES

    scene = SCENES["skirt"]()
    assert 3000 <= scene.positions.shape[0] <= 10000
    assert isinstance(scene.colliders[0], MeshCollider)


@pytest.mark.slow
def test_coarse_skirt_no_cloth_vertex_inside_the_body_at_any_frame_end() -> None:
    assert _skirt_inside(12, True, coarse=True) == [0] * 12


def test_coarse_skirt_without_the_body_collider_many_vertices_are_inside() -> None:
    inside = _skirt_inside(8, False, coarse=True)
    assert max(inside) >= 20


@pytest.mark.slow
def test_skirt_without_the_body_collider_many_vertices_are_inside() -> None:
    assert max(_skirt_inside(12, False, coarse=False)) >= 100


# --- scene files: type = "mesh", method = "triangles" ----------------------------------------
ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def test_example_scene_reads_a_body_mesh_sequence_and_keeps_the_cloth_outside() -> None:
    from pbdcloth.pipeline.scenefile import load_scene

    spec = load_scene(ROOT / "examples" / "walk_mesh.toml", {"frames": 14})
    scene = spec.scene()
    solver = scene.make_solver()
    [body] = solver.colliders
    assert isinstance(body, MeshCollider) and body.frame == 1
    start = np.array(body.vertices)
    reached = 0
    for k in range(2, 15):
        assert scene.animate is not None
        scene.animate(solver, k)
        solver.step(1.0 / scene.fps)
        v = np.array(body.vertices)
        inside = winding_numbers(solver.positions, v, body.triangles) > 0.5
        assert not inside.any(), k
        reached = max(reached, solver.last_stats.contacts)
    assert not np.array_equal(v, start) and reached > 0  # it walked, and into the curtain


def _sequence(folder, frames, change=None):  # type: ignore[no-untyped-def]
    """Copy frames of the example sequence into ``folder``; ``change(frame, text)`` edits."""
    for f in frames:
        text = (ROOT / "examples" / "data" / "walk" / f"walk.{f:04d}.obj").read_text()
        (folder / f"walk.{f:04d}.obj").write_text(change(f, text) if change else text)


def _scene_file(folder, frames: int, method: str = "triangles") -> object:  # type: ignore[no-untyped-def]
    text = (ROOT / "examples" / "walk_mesh.toml").read_text()
    text = text.replace('file = "data/walk/walk.$F4.obj"', 'file = "walk.$F4.obj"')
    text = text.replace('\nmethod = "triangles"\n', f'\nmethod = "{method}"\n')
    text = text.replace("frames = 24", f"frames = {frames}")
    path = folder / "scene.toml"
    path.write_text(text)
    return path


def test_a_missing_frame_of_the_sequence_is_refused_naming_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pbdcloth.pipeline.scenefile import SceneFileError, load_scene

    _sequence(tmp_path, [1, 2, 3, 5, 6])
    with pytest.raises(SceneFileError, match=r"frame 4 is missing .*walk\.0004\.obj"):
        load_scene(_scene_file(tmp_path, 6))
    with pytest.raises(SceneFileError, match="voxel_size: is required"):
        load_scene(_scene_file(tmp_path, 3, method="sdf"))


def _run_file(path, frames: int) -> None:  # type: ignore[no-untyped-def]
    from pbdcloth.pipeline.scenefile import load_scene

    scene = load_scene(path).scene()
    solver = scene.make_solver()
    for k in range(2, frames + 1):
        assert scene.animate is not None
        scene.animate(solver, k)
        solver.step(1.0 / scene.fps)


def test_a_topology_change_in_the_sequence_is_refused_naming_the_frame(tmp_path) -> None:  # type: ignore[no-untyped-def]
    def drop_face(frame: int, text: str) -> str:
        return text.rsplit("\nf ", 1)[0] + "\n" if frame == 3 else text

    _sequence(tmp_path, range(1, 6), drop_face)
    with pytest.raises(MeshColliderError, match=r"frame 3 .*topology changed"):
        _run_file(_scene_file(tmp_path, 5), 5)


def test_nan_points_in_the_sequence_are_refused_naming_the_frame(tmp_path) -> None:  # type: ignore[no-untyped-def]
    def nan(frame: int, text: str) -> str:
        if frame != 4:
            return text
        lines = text.split("\n")
        k = next(n for n, line in enumerate(lines) if line.startswith("v "))
        lines[k] = "v nan " + " ".join(lines[k].split()[2:])
        return "\n".join(lines)

    _sequence(tmp_path, range(1, 6), nan)
    with pytest.raises(MeshColliderError, match=r"frame 4: vertex 0 is \[nan"):
        _run_file(_scene_file(tmp_path, 5), 5)


def test_an_animated_usd_mesh_is_read_at_the_frames_time_codes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pxr")
    from pbdcloth.pipeline.scenefile import load_scene
    from pbdcloth.scenes.walker import WalkingBody
    from pxr import Gf, Usd, UsdGeom, Vt

    body = WalkingBody(segments=12, rings=8)
    stage = Usd.Stage.CreateNew(str(tmp_path / "walk.usda"))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    mesh = UsdGeom.Mesh.Define(stage, "/walk")
    stage.SetDefaultPrim(mesh.GetPrim())
    mesh.GetFaceVertexCountsAttr().Set(Vt.IntArray([3] * len(body.triangles)))
    mesh.GetFaceVertexIndicesAttr().Set(Vt.IntArray(body.triangles.reshape(-1).tolist()))
    for f in range(1, 6):
        pts = body.vertices((f - 1) / 24.0)
        mesh.GetPointsAttr().Set(Vt.Vec3fArray([Gf.Vec3f(*map(float, p)) for p in pts]),
                                 Usd.TimeCode(f))
    stage.Save()
    text = _scene_file(tmp_path, 5).read_text().replace('"walk.$F4.obj"', '"walk.usda"')  # type: ignore[attr-defined]
    (tmp_path / "scene.toml").write_text(text)
    scene = load_scene(tmp_path / "scene.toml").scene()
    [collider] = scene.colliders
    assert isinstance(collider, MeshCollider)
    np.testing.assert_allclose(collider.pose_at(1.0), body.vertices(1 / 24.0), atol=1e-6)
    collider.end_frame()
    np.testing.assert_allclose(collider.pose_at(1.0), body.vertices(2 / 24.0), atol=1e-6)


# --- Must show: a VDB sequence drapes like the same motion as a mesh sequence ----------------
@pytest.mark.slow
def test_a_vdb_sequence_and_the_same_mesh_sequence_drape_alike(  # type: ignore[no-untyped-def]
        tmp_path, backend: BackendCase) -> None:
    """A ball mesh that rises 0.2 m and grows from 0.25 to 0.3 m over 12 frames, under a
    falling 0.9 m sheet: once as a MeshCollider on the mesh frames, once as an SdfSequence of
    .vdb files made from the same frames by OpenVDB (1 cm voxels), on each backend. Drapes are
    chaotic, so statistics: the mean particle deviation stays within 4 voxels and the centroids
    within 2 cm, while the same VDB held still at its first frame puts the centroid 0.1 m
    off."""
    pytest.importorskip("pyopenvdb")
    from pbdcloth.colliders import SdfCollider, SdfSequence
    from pbdcloth.colliders.vdb_io import level_set_from_mesh, write_level_set

    unit_v, unit_t = capsule_mesh((0, 0, 0), (0, 0, 0), 1.0, segments=24, rings=8)

    def ball(k: int) -> np.ndarray:
        u = min(k, 12) / 12
        return unit_v * (0.25 + 0.05 * u) + np.array([0.0, 0.3 + 0.2 * u, 0.0])

    for k in range(26):
        g = level_set_from_mesh(ball(k), unit_t, 0.01, 3.0)
        g.name = "ball"
        write_level_set(tmp_path / f"ball.{k:04d}.vdb", g)
    pos, tris = grid(21, 21, 0.9, 0.9, plane="xz", origin=(-0.45, 0.85, -0.45))
    s = ClothSettings(substeps=10, iterations=4, thickness=0.01, friction=0.3,
                      static_friction=0.3, model="xpbd", stretch_compliance=1e-7,
                      shear_compliance=1e-6, bend_compliance=1.0, damping=0.3, tethers=False,
                      self_collision=False, hierarchy=False, strain_limit=0.0,
                      **backend.settings)

    def drape(collider: object) -> np.ndarray:
        solver = ClothSolver(pos, tris, settings=s, colliders=[collider])
        assert solver.backend.name == backend.name
        for _ in range(24):
            solver.step(1.0 / FPS)
        return np.array(solver.positions)

    x_mesh = drape(MeshCollider(None, unit_t, frames=ball))
    x_vdb = drape(SdfSequence(lambda f: SdfCollider.from_vdb(tmp_path / f"ball.{f:04d}.vdb")))
    x_still = drape(SdfSequence(lambda f: SdfCollider.from_vdb(tmp_path / "ball.0000.vdb")))
    assert np.linalg.norm(x_vdb - x_mesh, axis=1).mean() < 0.04
    assert np.linalg.norm(x_vdb.mean(axis=0) - x_mesh.mean(axis=0)) < 0.02
    assert np.linalg.norm(x_still.mean(axis=0) - x_mesh.mean(axis=0)) > 0.1


def test_scene_files_read_vdb_and_mesh_sequences_as_level_set_sequences(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pyopenvdb")
    from pbdcloth.colliders import SdfSequence
    from pbdcloth.colliders.vdb_io import level_set_from_mesh, write_level_set
    from pbdcloth.pipeline.scenefile import SceneFileError, load_scene

    _sequence(tmp_path, range(1, 5))
    for f in range(1, 5):
        v = capsule_mesh((0, 0.3 + 0.01 * f, 0.5), (0, 0.3 + 0.01 * f, 0.5), 0.2)
        write_level_set(tmp_path / f"ball.{f:04d}.vdb", level_set_from_mesh(*v, 0.02, 3.0))
    base = _scene_file(tmp_path, 4).read_text()  # type: ignore[attr-defined]
    vdb = base.replace('type = "mesh"\nmethod = "triangles"\nfile = "walk.$F4.obj"',
                       'type = "vdb"\nfile = "ball.$F4.vdb"')
    mesh = base.replace('\nmethod = "triangles"\n', '\nmethod = "sdf"\nvoxel_size = 0.02\n')
    for text in (vdb, mesh):
        (tmp_path / "seq.toml").write_text(text)
        scene = load_scene(tmp_path / "seq.toml").scene()
        assert isinstance(scene.colliders[0], SdfSequence)
        solver = scene.make_solver()
        for k in range(2, 5):
            assert scene.animate is not None
            scene.animate(solver, k)
            solver.step(1.0 / scene.fps)
        assert scene.colliders[0].frame == 4
    (tmp_path / "ball.0003.vdb").unlink()
    (tmp_path / "seq.toml").write_text(vdb)
    with pytest.raises(SceneFileError, match="frame 3 is missing"):
        load_scene(tmp_path / "seq.toml")


def test_a_mesh_sequence_run_resumes_bit_identically(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pbdcloth.pipeline.scenefile import load_scene
    from pbdcloth.pipeline.simulate import checkpoint_path, simulate

    def spec(sub: str):  # type: ignore[no-untyped-def]
        return load_scene(ROOT / "examples" / "walk_mesh.toml",
                          {"out": tmp_path / sub, "format": "obj", "frames": 12})

    simulate(spec("whole"), progress=False)

    def ctrl_c(frame: int, last: int) -> None:
        if frame == 9:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        simulate(spec("cut"), progress=False, on_progress=ctrl_c)
    assert checkpoint_path(spec("cut")).is_file()
    result = simulate(spec("cut"), resume=True, progress=False)
    assert result.resumed_from == 9
    for k in range(1, 13):
        name = f"cloth.{k:04d}.obj"
        assert (tmp_path / "cut" / name).read_bytes() == (tmp_path / "whole" / name).read_bytes()


def _rescue(monkeypatch: pytest.MonkeyPatch | None) -> int:
    """A patch resting on a box whose middle vertex starts 2 mm inside the box's top (as after
    some failure), within the contact band; returns how many cloth vertices are inside the box
    after 6 frames."""
    v, t = box_triangles((0.0, 0.05, 0.0), (0.5, 0.05, 0.5))
    pos, tris = grid(11, 11, 0.2, 0.2, plane="xz", origin=(-0.1, 0.106, -0.1))
    pos[60, 1] = 0.098
    if monkeypatch is not None:
        monkeypatch.setattr(mesh_contact, "find_trapped",
                            lambda *a: (np.zeros(0, np.intp), np.zeros(0, np.intp)))
    s = ClothSettings(substeps=10, iterations=4, thickness=0.004, friction=0.3,
                      model="xpbd", stretch_compliance=1e-7, shear_compliance=1e-6,
                      bend_compliance=1.0, damping=0.0, tethers=False, self_collision=False,
                      backend="numpy")
    solver = ClothSolver(pos, tris, settings=s, colliders=[MeshCollider(v, t)])
    for _ in range(6):
        solver.step(1.0 / FPS)
    return int((np.abs(winding_numbers(solver.positions, v, t)) > 0.5).sum())


def test_a_cloth_vertex_found_inside_a_closed_mesh_is_sent_out() -> None:
    assert _rescue(None) == 0


def test_without_the_rescue_the_vertex_stays_inside(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _rescue(monkeypatch) == 1


def test_cloth_starting_exactly_on_the_surface_stays_on_it_despite_degenerate_triangles() -> None:
    """Vertices exactly in a triangle's plane at the start (also on the shared diagonal) take
    the front of the (static) plane; zero-area triangles give no NaN and no push."""
    v = np.array([[-1, 0, -1], [1, 0, -1], [1, 0, 1], [-1, 0, 1], [0, 0, 0], [0, 0, 0]], float)
    t = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 4], [0, 0, 1]])
    pos, tris = grid(10, 10, 0.5, 0.5, plane="xz", origin=(-0.25, 0.0, -0.25))
    s = ClothSettings(substeps=5, iterations=3, thickness=0.01, model="xpbd", tethers=False,
                      self_collision=False, backend="numpy")
    solver = ClothSolver(pos, tris, settings=s, colliders=[MeshCollider(v, t)])
    for _ in range(10):
        solver.step(1.0 / FPS)
    np.testing.assert_allclose(solver.positions[:, 1], 0.01, atol=1e-9)


def test_cloth_starting_exactly_on_the_surface_stays_on_it_at_two_iterations(
        backend: BackendCase) -> None:
    """The same flat start at 2 iterations per substep (the scenes' usual count), on both
    backends: the side of a vertex in the plane at the start is chosen the same way at every
    collider call of the substep (chosen from the vertex's motion, the second call saw the
    first call's push and flipped it, and the cloth fell through at every even count)."""
    v = np.array([[-1, 0, -1], [1, 0, -1], [1, 0, 1], [-1, 0, 1]], float)
    pos, tris = grid(10, 10, 0.5, 0.5, plane="xz", origin=(-0.25, 0.0, -0.25))
    s = backend.cloth_settings(substeps=5, iterations=2, thickness=0.01, model="xpbd",
                               tethers=False, self_collision=False)
    solver = ClothSolver(pos, tris, settings=s,
                         colliders=[MeshCollider(v, np.array([[0, 2, 1], [0, 3, 2]]))])
    for _ in range(10):
        solver.step(1.0 / FPS)
    np.testing.assert_allclose(solver.positions[:, 1], 0.01,
                               atol=max(1e-9, 1e3 * backend.eps * 0.01))


# --- sharp collider edges against cloth edges ---------------------------------------------------
def test_sharp_edges_are_the_creases_and_the_borders() -> None:
    from pbdcloth.colliders.mesh_edges import sharp_edges

    v, t = box_triangles((0.0, 0.0, 0.0), (0.5, 0.2, 0.3))
    assert sharp_edges(v, t).shape == (12, 2)  # the box's 12 edges, not its 6 face diagonals
    square = np.array([[0.0, 0, 0], [1, 0, 0], [1, 0, 1], [0, 0, 1]])
    flat = sharp_edges(square, np.array([[0, 1, 2], [0, 2, 3]]))
    assert sorted(map(tuple, flat.tolist())) == [(0, 1), (0, 3), (1, 2), (2, 3)]  # borders
    cv, ct = capsule_mesh((0, 0, 0), (0, 0.4, 0), 0.1, segments=32, rings=8)
    assert sharp_edges(cv, ct).shape[0] == 0  # 11 degrees between neighbouring faces


def _wire(backend: BackendCase, edges: bool) -> tuple[float, float]:
    """A 1 m sheet (5 cm edges) falls onto a 3 mm wire that lies between two rows of its
    vertices and reaches past its sides (so that no vertex of either mesh meets a face of the
    other): returns the lowest height, over the wire's top, at which a cloth edge that
    straddles the wire at rest crosses the wire's line (an independent measure), and the
    sheet's mean height [m] after half a second."""
    import pbdcloth.colliders.mesh as mesh_module

    v, t = box_triangles((0.0, 0.5, 0.025), (0.8, 0.0015, 0.0015))
    pos, tris = grid(21, 21, 1.0, 1.0, plane="xz", origin=(-0.5, 0.53, -0.5))
    s = ClothSettings(substeps=10, iterations=4, thickness=0.004, friction=0.3, model="xpbd",
                      stretch_compliance=1e-7, shear_compliance=1e-6, bend_compliance=1.0,
                      damping=0.0, tethers=False, self_collision=False, hierarchy=False,
                      **backend.settings)
    real = mesh_module.sharp_edges
    mesh_module.sharp_edges = real if edges else (  # type: ignore[assignment]
        lambda vertices, triangles: np.zeros((0, 2), dtype=np.intp))
    try:
        wire = MeshCollider(v, t)
    finally:
        mesh_module.sharp_edges = real
    solver = ClothSolver(pos, tris, settings=s, colliders=[wire])
    assert solver.backend.name == backend.name
    for _ in range(12):
        solver.step(1.0 / FPS)
    x = solver.positions
    e = np.unique(np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]),
                          axis=1), axis=0)
    a, b = x[e[:, 0]], x[e[:, 1]]
    straddle = ((pos[e[:, 0], 2] - 0.025) * (pos[e[:, 1], 2] - 0.025) < 0) \
        & ((a[:, 2] - 0.025) * (b[:, 2] - 0.025) < 0)
    u = (0.025 - a[straddle, 2]) / (b[straddle, 2] - a[straddle, 2])
    height = a[straddle, 1] + u * (b[straddle, 1] - a[straddle, 1])
    assert height.size > 5
    return float(height.min() - 0.5015), float(x[:, 1].mean())


@pytest.mark.slow
def test_a_wire_between_cloth_vertices_holds_the_sheet_by_its_edges(
        backend: BackendCase) -> None:
    over, mean = _wire(backend, edges=True)
    assert over >= 0.9 * 0.004  # the straddling edges rest a thickness above the wire
    assert mean > 0.2  # hanging over it (a free fall would be 1.2 m lower)


def test_without_the_edge_test_the_sheet_falls_through_the_wire(backend: BackendCase) -> None:
    over, mean = _wire(backend, edges=False)
    assert over < -0.5 and mean < -0.5


# --- the re-check after the pushes -----------------------------------------------------------
def _spike_under_a_ceiling(backend: BackendCase, monkeypatch: pytest.MonkeyPatch | None
                           ) -> list[int]:
    """The spike of :func:`_spike` (cone of 1 cm radius) rising over 6 frames until its tip is
    1 cm above a sheet pinned along its border, under a fixed plate (two triangles, 0.6 m
    square, part of the same mesh) 1.2 cm above the sheet: pushed up by the tip, the sheet's
    vertices over it would rest at 1.0 + 0.4 cm, past the plate. The collider vertices' pushes
    come after the cloth vertices' continuous test, so only the re-check of the pushed vertices
    (their path from the substep's start against the collider's triangles) keeps them below
    the plate at a substep's end; a vertex past it then stays on that side (the side is kept
    from the substep's start). ``monkeypatch``: the re-check turned off (numpy: ``recheck``;
    Warp: its launch left out). Returns the cloth vertices above the plate at each of 12 frame
    ends."""
    pos, tris, border, cone, cone_t = _sheet_and_cone()
    ceiling = 0.5 + 0.012
    plate = np.array([[-0.3, ceiling, -0.3], [0.3, ceiling, -0.3], [0.3, ceiling, 0.3],
                      [-0.3, ceiling, 0.3]])
    n = cone.shape[0]
    triangles = np.concatenate([cone_t, [[n, n + 1, n + 2], [n, n + 2, n + 3]]])
    low, high = 0.5 - 0.15, 0.5 + 0.01 - 0.12  # the cone's base: the tip 3 cm below, 1 cm above

    def frames(k: int) -> np.ndarray:
        return np.concatenate([cone + np.array([0.0, low + (high - low) * min(k / 6, 1.0),
                                                0.0]), plate])

    s = backend.cloth_settings(substeps=10, iterations=4, thickness=0.004, friction=0.0,
                               static_friction=0.0, model="xpbd", stretch_compliance=1e-7,
                               shear_compliance=1e-6, bend_compliance=1.0, damping=0.0,
                               tethers=False, self_collision=False, hierarchy=False)
    if monkeypatch is not None and backend.name == "numpy":
        import pbdcloth.colliders.mesh as mesh_module
        monkeypatch.setattr(mesh_module, "recheck", lambda *a, **k: None)
    elif monkeypatch is not None:
        from pbdcloth.backends.warp import mesh_collider
        launches = mesh_collider.DeviceMeshCollider.launches

        def without_recheck(self, *args):  # type: ignore[no-untyped-def]
            kn = self.kn
            return [(k, dim, inputs) for k, dim, inputs in launches(self, *args)
                    if k is not self.mk.recheck
                    and not (kn is not None and k is kn.vertices_all and inputs[-2] == 1)]

        monkeypatch.setattr(mesh_collider.DeviceMeshCollider, "launches", without_recheck)
    solver = ClothSolver(pos, tris, pinned=border, settings=s,
                         colliders=[MeshCollider(None, triangles, frames=frames)])
    assert solver.backend.name == backend.name
    above = []
    for _ in range(12):
        solver.step(1.0 / FPS)
        x = solver.positions
        under = (np.abs(x[:, 0]) < 0.3) & (np.abs(x[:, 2]) < 0.3)
        above.append(int((x[under, 1] > ceiling).sum()))
    return above


def test_vertices_pushed_by_a_spike_stay_below_a_plate_over_the_sheet(
        backend: BackendCase) -> None:
    assert _spike_under_a_ceiling(backend, None) == [0] * 12


def test_without_the_recheck_a_pushed_vertex_ends_above_the_plate(
        backend: BackendCase, monkeypatch: pytest.MonkeyPatch) -> None:
    above = _spike_under_a_ceiling(backend, monkeypatch)
    assert above[-1] > 0
