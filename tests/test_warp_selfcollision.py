"""Self-collision on the Warp backend (CPU device): broad phase against brute force, one
projection against the numpy stage, and the fold and twist scenes checked with the independent
triangle-triangle intersection and vertex-triangle distance tests of ``test_selfcollision.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

wp = pytest.importorskip("warp")

from pbdcloth import ClothSettings
from pbdcloth.backends.base import Control
from pbdcloth.cloth.state import ClothState
from pbdcloth.backends.warp.backend import WarpBackend
from pbdcloth.backends.warp.kernels import build_kernels
from pbdcloth.backends.warp.selfcollision import WarpSelfCollision
from pbdcloth.selfcollision import stage as selfcollision
from pbdcloth.selfcollision.stage import REST_EXCLUSION, SelfCollision
from pbdcloth.cloth.mesh import ClothMesh
from pbdcloth.cloth.model import build_model
from pbdcloth.scenes.cloth import fold_scene, twist_scene
from test_selfcollision import (
    _crumpled,
    intersecting_pairs,
    nearest_after_checking_every_frame,
    point_triangle_distance,
    segment_distance,
)

FOLD_FRAMES = 48
FOLD_RESOLUTION = 32  # 32 x 19 points, 3.2 cm edges: three times the 1 cm self thickness
TWIST_FRAMES = 48  # 3.75 degrees per frame: 180 degrees of twist at frame 48
TWIST_RESOLUTION = 24


def _launch(kernel: Any, dim: int, inputs: list[Any]) -> None:
    if dim > 0:
        wp.launch(kernel, dim=dim, inputs=inputs, device="cpu")


def _stage(pos: np.ndarray, tris: np.ndarray, X: np.ndarray, P: np.ndarray,
           settings: ClothSettings, precision: str, project: bool) -> tuple[np.ndarray, Any]:
    """Run the Warp stage once on its own: broad phase on P (velocities zero: no clamp),
    then, if ``project``, one narrow phase with X as the substep start. Returns (P, stage)."""
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 0.1)
    k = build_kernels(precision)
    sc = WarpSelfCollision(model, k, wp.get_device("cpu"))
    sc.prepare(settings)
    sc.begin_frame()
    dtype = np.float32 if precision == "float32" else np.float64
    p = wp.array(P.astype(dtype), dtype=k.vec3, device="cpu")
    x = wp.array(X.astype(dtype), dtype=k.vec3, device="cpu")
    v = wp.zeros(len(P), dtype=k.vec3, device="cpu")
    v_pred = wp.zeros(len(P), dtype=k.vec3, device="cpu")
    inv_mass = wp.array(model.inv_mass.astype(dtype), dtype=k.scalar, device="cpu")
    sc.issue_predict(_launch, settings, 1e-3, x, v, v_pred, p, inv_mass)
    while sc.grow_if_needed():  # the buffers overflowed: larger ones, same positions
        sc.issue_predict(_launch, settings, 1e-3, x, v, v_pred, p, inv_mass)
    if project:
        sc.issue_project(_launch, settings, p, x, inv_mass)
    return p.numpy().astype(np.float64), sc


def test_warp_candidates_contain_every_close_non_neighbour_pair() -> None:
    """Candidates of the device broad phase versus brute force over all pairs (the same
    neighbour rule as the numpy stage: incidence only, the crumpled grid's rest shape excludes
    nothing more), at the list radius (1 + clamp) t + skin = REST_EXCLUSION t = 2.4 cm."""
    pos, tris, x = _crumpled()
    t = 0.015
    s = ClothSettings(self_collision=True, self_thickness=t, self_clamp=0.5)
    r = REST_EXCLUSION * t
    _, sc = _stage(pos, tris, x, x, s, "float64", project=False)
    n = len(x)
    ring = np.eye(n, dtype=bool)  # a vertex is its own only neighbour: incidence alone
    count = int(sc.pt.count.numpy()[0])
    assert count == int(sc.pt.need.numpy()[0])
    q = sc.pt.idx.numpy()[:count]
    tri_of = {tuple(row): i for i, row in enumerate(tris.tolist())}
    got = {(int(v), tri_of[(int(a), int(b), int(c))]) for v, a, b, c in q}
    assert len(got) == count, "a pair was reported twice"
    vv, tt = np.meshgrid(np.arange(n), np.arange(len(tris)), indexing="ij")
    vv, tt = vv.ravel(), tt.ravel()
    keep = ~ring[vv[:, None], tris[tt]].any(axis=1)
    vv, tt = vv[keep], tt[keep]
    d = point_triangle_distance(x[vv], x[tris[tt, 0]], x[tris[tt, 1]], x[tris[tt, 2]])
    close = set(zip(vv[d < r].tolist(), tt[d < r].tolist()))
    # Exactly the close pairs, but for round-off at the radius (1e-9 m in float64).
    loose = set(zip(vv[d < r + 1e-9].tolist(), tt[d < r + 1e-9].tolist()))
    assert len(close) > 50 and close <= got <= loose
    edges = sc.model.topology.edges
    count = int(sc.ee.count.numpy()[0])
    q = sc.ee.idx.numpy()[:count]
    edge_of = {tuple(row): i for i, row in enumerate(edges.tolist())}
    got_e = {(edge_of[(int(a), int(b))], edge_of[(int(c), int(e))]) for a, b, c, e in q}
    assert len(got_e) == count
    ii, jj = np.triu_indices(len(edges), 1)
    linked = ring[edges[ii][:, :, None], edges[jj][:, None, :]].any(axis=(1, 2))
    ii, jj = ii[~linked], jj[~linked]
    dmin = segment_distance(x[edges[ii, 0]], x[edges[ii, 1]], x[edges[jj, 0]], x[edges[jj, 1]])
    close_e = set(zip(ii[dmin < r].tolist(), jj[dmin < r].tolist()))
    loose_e = set(zip(ii[dmin < r + 1e-9].tolist(), jj[dmin < r + 1e-9].tolist()))
    assert len(close_e) > 50 and close_e <= got_e <= loose_e


@pytest.mark.parametrize("thickness", [0.015, 0.05])
def test_warp_candidate_lists_equal_the_numpy_stage(thickness: float) -> None:
    """The device lists hold exactly the numpy stage's pairs at the device's list radius (the
    numpy stage's full build, float64, same positions). At 5 cm the rest exclusions are not
    empty (a vertex and the triangle across the diagonal of its quad, 6.4 cm apart at rest,
    are closer than REST_EXCLUSION t = 7.9 cm), so their keys are applied too; pairs merely
    joined by a mesh edge are listed by both."""
    pos, tris, x = _crumpled()
    s = ClothSettings(self_collision=True, self_thickness=thickness, self_clamp=0.5)
    _, sc = _stage(pos, tris, x, x, s, "float64", project=False)
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 0.1)
    ref = SelfCollision(model)
    excl = ref.exclusions(thickness)
    radius = REST_EXCLUSION * thickness  # the device's list radius
    P = np.ascontiguousarray(x.T)
    ref._pt = ref._point_triangle_candidates(P, radius, excl.point_triangle)
    ref._ee = ref._edge_edge_candidates(P, radius, excl.edge_edge)
    if thickness > 0.03:
        assert excl.point_triangle.size > 0 and excl.edge_edge.size > 0
    tri_of = {tuple(row): i for i, row in enumerate(tris.tolist())}
    n = int(sc.pt.count.numpy()[0])
    got = sorted((int(v), tri_of[(int(a), int(b), int(c))])
                 for v, a, b, c in sc.pt.idx.numpy()[:n])
    want = sorted(zip(ref._pt[0].tolist(), ref._pt[1].tolist()))
    assert len(want) > 50 and got == want
    edges = model.topology.edges
    edge_of = {tuple(row): i for i, row in enumerate(edges.tolist())}
    n = int(sc.ee.count.numpy()[0])
    got_e = sorted((edge_of[(int(a), int(b))], edge_of[(int(c), int(d))])
                   for a, b, c, d in sc.ee.idx.numpy()[:n])
    want_e = sorted(zip(ref._ee[0].tolist(), ref._ee[1].tolist()))
    assert len(want_e) > 50 and got_e == want_e
    # Some listed pairs are joined by a mesh edge (the one-ring is no longer excluded).
    joined = {frozenset(e) for e in edges.tolist()}
    assert any(frozenset((v, int(c))) in joined for v, t in got for c in tris[t])


@pytest.mark.parametrize("passes", [1, 4])
def test_warp_projection_matches_the_numpy_stage(monkeypatch: Any, passes: int) -> None:
    """One narrow phase (passes, friction, Jacobi averaging, fail-safe) on a crumpled cloth
    pressed together, float64 kernels against the numpy stage: the same method, so the same
    positions to round-off. One pass: 1e-12 m (the sums run in another order). Four passes:
    a contact solved to exactly the thickness by a pass is or is not a contact in the next
    by the last bit of its distance, and when it is, it changes the Jacobi divisor of its
    neighbours' corrections. The numpy stage itself, given positions perturbed by 1e-15 m,
    moves by up to ~2e-4 m then (measured); the Warp result must lie no farther from it than
    the farthest of three such perturbed numpy runs (and below 3e-4 m, t / 50)."""
    monkeypatch.setattr(selfcollision, "PASSES", passes)
    pos, tris, X = _crumpled()
    rng = np.random.default_rng(7)
    P = X + rng.normal(scale=0.004, size=X.shape)  # the substep's motion, a few millimetres
    t = 0.015
    s = ClothSettings(self_collision=True, self_thickness=t, self_clamp=0.5, self_friction=0.3)
    out, sc = _stage(pos, tris, X, P, s, "float64", project=True)
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 0.1)

    def numpy_stage(P: np.ndarray) -> np.ndarray:
        Pn = np.ascontiguousarray(P.T)
        ref = SelfCollision(model)
        ref.begin_substep(Pn, t, 0.5)
        ref.project(Pn, np.ascontiguousarray(X.T), t, 0.3)
        return Pn.T

    want = numpy_stage(P)
    moved = np.linalg.norm(want - P, axis=1)
    assert np.count_nonzero(moved > 1e-6) > 20  # many contacts were projected
    st = sc.stats.numpy()
    assert st[4] > 0 and st[5] > 0  # point-triangle and edge-edge contacts
    if passes == 1:
        np.testing.assert_allclose(out, want, atol=1e-12, rtol=0)
        return
    spread = max(np.abs(numpy_stage(P + np.random.default_rng(seed).normal(
        scale=1e-15, size=P.shape)) - want).max() for seed in range(3))
    assert spread < 3e-4
    np.testing.assert_allclose(out, want, atol=max(spread, 1e-12), rtol=0)


# --- scenes -----------------------------------------------------------------------------------


def _warp(scene: Any, **changes: Any) -> Any:
    scene.settings = scene.settings.replace(backend="warp", device="cpu", **changes)
    return scene


def _run(scene: Any, frames: int) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[Any]]:
    solver = scene.make_solver()
    assert isinstance(solver._backend, WarpBackend)
    out, stats = [], []
    for frame in range(1, frames + 1):
        if scene.animate is not None:
            scene.animate(solver, frame)
        stats.append(solver.step(1.0 / scene.fps))
        out.append((solver.positions.copy(), solver.velocities.copy()))
    return out, stats


@pytest.fixture(scope="module")
def fold_run() -> Any:
    """The fold scene on the Warp CPU device with self-collision, run once."""
    scene = _warp(fold_scene(resolution=FOLD_RESOLUTION, frames=FOLD_FRAMES))
    frames, stats = _run(scene, FOLD_FRAMES)
    return scene, frames, stats


@pytest.mark.slow
def test_warp_fold_scene_never_intersects_itself(fold_run: Any) -> None:
    scene, frames, stats = fold_run
    t = scene.settings.self_thickness
    nearest = nearest_after_checking_every_frame(scene, frames)
    # Layers do touch (the test is not vacuous) and never come closer than half the thickness.
    assert sum(s.extra["self_pt_contacts"] for s in stats) > 0
    assert nearest < 1.5 * t
    assert nearest >= 0.5 * t, f"closest vertex-triangle pair {nearest:.4f} m"


@pytest.mark.slow
def test_warp_fold_scene_without_self_collision_intersects() -> None:
    scene = _warp(fold_scene(resolution=FOLD_RESOLUTION, frames=FOLD_FRAMES),
                  self_collision=False)
    solver = scene.make_solver()
    for _ in range(FOLD_FRAMES):
        solver.step(1.0 / scene.fps)
        if len(intersecting_pairs(solver.positions, scene.triangles)):
            return
    pytest.fail("the fold scene never intersected itself with self-collision off")


@pytest.mark.slow
def test_warp_reruns_are_bit_identical(fold_run: Any) -> None:
    """A second run through the first contacts gives identical arrays (CPU device)."""
    _, first, stats = fold_run
    frames = 20
    assert sum(s.extra["self_pt_contacts"] + s.extra["self_ee_contacts"]
               for s in stats[:frames]) > 0
    again, _ = _run(_warp(fold_scene(resolution=FOLD_RESOLUTION, frames=frames)), frames)
    for (x1, v1), (x2, v2) in zip(first[:frames], again):
        assert np.array_equal(x1, x2) and np.array_equal(v1, v2)


def _twist_without_intersections(frames_to_run: int) -> None:
    scene = _warp(twist_scene(resolution=TWIST_RESOLUTION, frames=frames_to_run))
    t = scene.settings.self_thickness
    frames, stats = _run(scene, frames_to_run)
    nearest = nearest_after_checking_every_frame(scene, frames)
    assert sum(s.extra["self_pt_contacts"] for s in stats) > 0
    assert nearest >= 0.5 * t, f"closest vertex-triangle pair {nearest:.4f} m"


@pytest.mark.slow
def test_warp_twist_scene_never_intersects_itself_up_to_180_degrees() -> None:
    """Frame ends up to 180 degrees of twist (with pairs joined by a mesh edge tested, a hinge
    folded flat under the twist no longer lets them pass: before, 1 to 3 triangle pairs
    intersected from 161 degrees on)."""
    assert twist_scene().info["degrees_per_frame"] * TWIST_FRAMES == pytest.approx(180.0)
    _twist_without_intersections(TWIST_FRAMES)


@pytest.mark.slow
def test_warp_twist_scene_without_self_collision_intersects_at_180_degrees() -> None:
    scene = _warp(twist_scene(resolution=TWIST_RESOLUTION, frames=TWIST_FRAMES),
                  self_collision=False)
    frames, _ = _run(scene, TWIST_FRAMES)
    assert len(intersecting_pairs(frames[-1][0], scene.triangles)) > 0


def test_overflowing_candidate_buffers_grow_and_rerun_the_frame(monkeypatch: Any) -> None:
    """Buffers of 8 pairs and one slot per query: the crumpled cloth's broad phase overflows them and, grown, finds
    the same candidates as with the default buffers; in the fold scene (candidates only
    where the layers meet, up to ~50 pairs at this resolution) the frames whose contacts
    overflow them are run again with larger ones and stay free of intersections."""
    import pbdcloth.backends.warp.selfcollision as stage

    pos, tris, x = _crumpled()
    s = ClothSettings(self_collision=True, self_thickness=0.015, self_clamp=0.5)
    _, big = _stage(pos, tris, x, x, s, "float64", project=False)
    monkeypatch.setattr(stage, "INITIAL_PER_QUERY", 0)
    monkeypatch.setattr(stage, "MIN_CAPACITY", 8)
    monkeypatch.setattr(stage, "INITIAL_SLOTS", 1)
    _, small = _stage(pos, tris, x, x, s, "float64", project=False)
    for name in ("pt", "ee"):
        a, b = getattr(big, name), getattr(small, name)
        n = int(a.count.numpy()[0])
        assert n > 8 and int(b.count.numpy()[0]) == n and b.slots > 1
        np.testing.assert_array_equal(a.idx.numpy()[:n], b.idx.numpy()[:n])
    scene = _warp(fold_scene(resolution=20, frames=44))
    solver = scene.make_solver()
    grown = []
    checked = 0
    for frame in range(44):
        before = (solver.positions.copy(), solver.velocities.copy())
        stats = solver.step(1.0 / scene.fps)
        sc = solver._backend._selfcol
        grown.append(max(sc.pt.capacity, sc.ee.capacity, sc.pt.slots, sc.ee.slots))
        assert len(intersecting_pairs(solver.positions, scene.triangles)) == 0, frame
        if frame > 0 and grown[-1] > grown[-2]:
            # The rerun frame reports the candidates of its own run only.
            assert stats.extra["self_ee_candidates"] <= sc.ee.capacity
            # ... and equals the frame run by a fresh backend with ample buffers (both
            # rebuild the lists at the first substep; the obstacles are posed again).
            with monkeypatch.context() as m:
                m.setattr(stage, "INITIAL_SLOTS", 64)
                m.setattr(stage, "INITIAL_PER_QUERY", 8)
                fresh = WarpBackend(solver.model, device="cpu")
                out = ClothState(*before)
                fresh.step(ClothState(*before), out, Control(
                    scene.settings, np.zeros((0, 3)), np.zeros((0, 3)), scene.colliders),
                    1.0 / scene.fps)
                x, v = out.positions, out.velocities
            assert np.array_equal(x, solver.positions) and np.array_equal(v, solver.velocities)
            checked += 1
    assert grown[0] == 8 and grown[-1] > 8 and checked > 0
