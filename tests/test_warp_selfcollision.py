"""Self-collision on the Warp backend (CPU device), what only Warp has: the device lists against
brute force and against the numpy stage's lists (one build, and pair for pair after every
partial update of a sequence through the fold scene), one projection against the numpy stage,
the skipping of unchanged pairs against evaluating every pair (bit for bit), scattered against
gathered sums (bit for bit), the growth of the device's candidate buffers, and the CPU's native
loops against the kernels they replace (bit for bit). (The fold and
twist scenes run on both backends in ``test_selfcollision.py``.)
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from typing import Any

import numpy as np
import pytest

wp = pytest.importorskip("warp")

from pbdcloth import ClothSettings
from pbdcloth.backends.base import Control
from pbdcloth.backends.warp.backend import WarpBackend
from pbdcloth.backends.warp.kernels import build_kernels
from pbdcloth.backends.warp.selfcollision import WarpSelfCollision
from pbdcloth.cloth.mesh import ClothMesh
from pbdcloth.cloth.model import build_model
from pbdcloth.cloth.state import ClothState
from pbdcloth.scenes.cloth import fold_scene
from pbdcloth.selfcollision.stage import SelfCollision
from pbdcloth.selfcollision.tuning import DEFAULT_TUNING, SelfCollisionTuning
from pbdcloth.solver import ClothSolver
from test_selfcollision import (
    _crumpled,
    intersecting_pairs,
    point_triangle_distance,
    segment_distance,
)

REST_EXCLUSION = DEFAULT_TUNING.rest_exclusion
FOLD_RESOLUTION = 40  # the scene's own (at 32 the contact rounds leave it draped, unfolded)


def _launch(kernel: Any, dim: int, inputs: list[Any]) -> None:
    if dim > 0:
        wp.launch(kernel, dim=dim, inputs=inputs, device="cpu")


def _stage(pos: np.ndarray, tris: np.ndarray, X: np.ndarray, P: np.ndarray,
           settings: ClothSettings, precision: str, project: bool,
           tuning: SelfCollisionTuning = DEFAULT_TUNING, sums: str | None = None
           ) -> tuple[np.ndarray, Any]:
    """Run the Warp stage once on its own: broad phase on P (velocities zero: no clamp),
    then, if ``project``, one narrow phase with X as the substep start. Returns (P, stage)."""
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 0.1)
    k = build_kernels(precision)
    sc = WarpSelfCollision(model, k, wp.get_device("cpu"), tuning=tuning, sums=sums)
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
    nothing more), at the list radius of a first build, (1 + clamp) t + the large skin (at
    least REST_EXCLUSION t = 2.4 cm)."""
    pos, tris, x = _crumpled()
    t = 0.015
    s = ClothSettings(self_collision=True, self_thickness=t, self_clamp=0.5)
    _, sc = _stage(pos, tris, x, x, s, "float64", project=False)
    r = float(sc.lists.radius.numpy()[0])
    assert r >= REST_EXCLUSION * t - 1e-12
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
    """The device lists hold exactly the numpy stage's pairs at the list radius of a first
    build (the numpy stage's full build, float64, same positions). At 5 cm the rest exclusions are not
    empty (a vertex and the triangle across the diagonal of its quad, 6.4 cm apart at rest,
    are closer than REST_EXCLUSION t = 7.9 cm), so their keys are applied too; pairs merely
    joined by a mesh edge are listed by both."""
    pos, tris, x = _crumpled()
    s = ClothSettings(self_collision=True, self_thickness=thickness, self_clamp=0.5)
    _, sc = _stage(pos, tris, x, x, s, "float64", project=False)
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 0.1)
    ref = SelfCollision(model).lists
    excl = ref.exclusions(thickness)
    r, skin = ref.radii(thickness, 0.5)  # a first build takes the large skin
    radius = float(sc.lists.radius.numpy()[0])
    assert radius == pytest.approx(r + skin, rel=1e-12)
    P = np.ascontiguousarray(x.T)
    v, tt, _ = ref.point_triangle_pairs(P, radius, excl.point_triangle)
    i, j, _ = ref.edge_edge_pairs(P, radius, excl.edge_edge)
    if thickness > 0.03:
        assert excl.point_triangle.size > 0 and excl.edge_edge.size > 0
    tri_of = {tuple(row): i for i, row in enumerate(tris.tolist())}
    n = int(sc.pt.count.numpy()[0])
    got = sorted((int(v), tri_of[(int(a), int(b), int(c))])
                 for v, a, b, c in sc.pt.idx.numpy()[:n])
    want = sorted(zip(v.tolist(), tt.tolist()))
    assert len(want) > 50 and got == want
    edges = model.topology.edges
    edge_of = {tuple(row): i for i, row in enumerate(edges.tolist())}
    n = int(sc.ee.count.numpy()[0])
    got_e = sorted((edge_of[(int(a), int(b))], edge_of[(int(c), int(d))])
                   for a, b, c, d in sc.ee.idx.numpy()[:n])
    want_e = sorted(zip(i.tolist(), j.tolist()))
    assert len(want_e) > 50 and got_e == want_e
    # Some listed pairs are joined by a mesh edge (the one-ring is no longer excluded).
    joined = {frozenset(e) for e in edges.tolist()}
    assert any(frozenset((v, int(c))) in joined for v, t in got for c in tris[t])


@pytest.mark.parametrize("passes", [1, 4])
def test_warp_projection_matches_the_numpy_stage(passes: int) -> None:
    """One narrow phase (passes, friction, Jacobi averaging, fail-safe) on a crumpled cloth
    pressed together, float64 kernels against the numpy stage: the same method, so the same
    positions to round-off. One pass: 1e-12 m (the sums run in another order). Four passes:
    a contact solved to exactly the thickness by a pass is or is not a contact in the next
    by the last bit of its distance, and when it is, it changes the Jacobi divisor of its
    neighbours' corrections. The numpy stage itself, given positions perturbed by 1e-15 m,
    moves by up to ~2e-4 m then (measured); the Warp result must lie no farther from it than
    the farthest of three such perturbed numpy runs (and below 3e-4 m, t / 50)."""
    tuning = dataclasses.replace(DEFAULT_TUNING, passes=passes)
    pos, tris, X = _crumpled()
    rng = np.random.default_rng(7)
    P = X + rng.normal(scale=0.004, size=X.shape)  # the substep's motion, a few millimetres
    t = 0.015
    s = ClothSettings(self_collision=True, self_thickness=t, self_clamp=0.5, self_friction=0.3)
    out, sc = _stage(pos, tris, X, P, s, "float64", project=True, tuning=tuning)
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 0.1)

    def numpy_stage(P: np.ndarray) -> np.ndarray:
        Pn = np.ascontiguousarray(P.T)
        ref = SelfCollision(model, tuning)
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


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_scattered_and_gathered_sums_give_the_same_bits(precision: str) -> None:
    """The CPU's contact-by-contact sums and the per-particle gathered sums (CUDA's) over
    the same narrow phase (four passes, friction, many contacts): identical positions."""
    pos, tris, X = _crumpled()
    P = X + np.random.default_rng(7).normal(scale=0.004, size=X.shape)
    s = ClothSettings(self_collision=True, self_thickness=0.015, self_clamp=0.5,
                      self_friction=0.3)
    a, sa = _stage(pos, tris, X, P, s, precision, project=True, sums="scatter")
    b, sb = _stage(pos, tris, X, P, s, precision, project=True, sums="gather")
    assert sa.sums == "scatter" and sb.sums == "gather"
    assert np.abs(a - P).max() > 1e-4  # contacts moved the cloth
    assert np.array_equal(a, b)


def test_sums_default_by_device_and_reject_unknown_names() -> None:
    pos, tris, _ = _crumpled()
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 0.1)
    k = build_kernels("float32")
    assert WarpSelfCollision(model, k, wp.get_device("cpu")).sums == "scatter"
    with pytest.raises(ValueError, match="sums must be one of"):
        WarpSelfCollision(model, k, wp.get_device("cpu"), sums="atomic")


# --- buffer growth ----------------------------------------------------------------------------


@pytest.mark.slow
def test_overflowing_candidate_buffers_grow_and_rerun_the_frame() -> None:
    """Buffers of 8 pairs and one slot per query: the crumpled cloth's broad phase overflows
    them and, grown, finds the same candidates as with the default buffers; in the fold scene
    (candidates only where the layers meet, up to ~50 pairs at this resolution) the frames
    whose contacts overflow them are run again with larger ones and stay free of
    intersections."""
    tiny = dataclasses.replace(DEFAULT_TUNING, warp_initial_per_query=0, warp_min_capacity=8,
                               warp_initial_slots=1)
    ample = dataclasses.replace(tiny, warp_initial_per_query=8, warp_initial_slots=64)
    pos, tris, x = _crumpled()
    s = ClothSettings(self_collision=True, self_thickness=0.015, self_clamp=0.5)
    _, big = _stage(pos, tris, x, x, s, "float64", project=False)
    _, small = _stage(pos, tris, x, x, s, "float64", project=False, tuning=tiny)
    for name in ("pt", "ee"):
        a, b = getattr(big, name), getattr(small, name)
        n = int(a.count.numpy()[0])
        assert n > 8 and int(b.count.numpy()[0]) == n and b.slots > 1
        np.testing.assert_array_equal(a.idx.numpy()[:n], b.idx.numpy()[:n])
    scene = fold_scene(resolution=FOLD_RESOLUTION, frames=44)
    scene.settings = scene.settings.replace(backend="warp", device="cpu")
    solver = ClothSolver(scene.positions, scene.triangles, pinned=scene.pinned,
                         settings=scene.settings, colliders=scene.colliders,
                         self_collision_tuning=tiny)
    assert solver.backend_name == "warp"
    grown = []
    checked = 0
    for frame in range(44):
        before = (solver.positions.copy(), solver.velocities.copy())
        stats = solver.step(1.0 / scene.fps)
        sc = solver.backend.self_collision
        grown.append(max(sc.pt.capacity, sc.ee.capacity, sc.pt.slots, sc.ee.slots))
        assert len(intersecting_pairs(solver.positions, scene.triangles)) == 0, frame
        if frame > 0 and grown[-1] > grown[-2]:
            # The rerun frame reports the candidates of its own run only.
            assert stats.extra["self_ee_candidates"] <= sc.ee.capacity
            # ... and equals the frame run by a fresh backend with ample buffers (both
            # rebuild the lists at the first substep; the obstacles are posed again).
            fresh = WarpBackend(solver.model, device="cpu", tuning=ample)
            out = ClothState(*before)
            fresh.step(ClothState(*before), out, Control(
                scene.settings, np.zeros((0, 3)), np.zeros((0, 3)), scene.colliders),
                1.0 / scene.fps)
            x, v = out.positions, out.velocities
            assert np.array_equal(x, solver.positions) and np.array_equal(v, solver.velocities)
            checked += 1
    assert grown[0] == 8 and grown[-1] > 8 and checked > 0


# --- partial updates --------------------------------------------------------------------------


def _fold_positions(frames: int, resolution: int = 32) -> tuple[Any, list[np.ndarray]]:
    """The fold scene's frame-end positions (N, 3) of a Warp CPU run, frames 1..``frames``,
    with every setting the lists depend on given explicitly."""
    scene = fold_scene(resolution=resolution, frames=frames)
    scene.settings = scene.settings.replace(
        backend="warp", device="cpu", substeps=30, iterations=2, self_collision=True,
        self_thickness=0.01, self_clamp=0.5, tethers=False, strain_limit=0.0)
    solver = scene.make_solver()
    out = []
    for _ in range(frames):
        solver.step(1.0 / scene.fps)
        out.append(solver.positions.copy())
    return scene, out


def _pairs(sc: WarpSelfCollision, tris: np.ndarray, edges: np.ndarray
           ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The device lists as sorted (vertex, triangle) and (edge i, edge j) pairs."""
    tri_of = {tuple(row): i for i, row in enumerate(tris.tolist())}
    edge_of = {tuple(row): i for i, row in enumerate(edges.tolist())}
    n = int(sc.pt.count.numpy()[0])
    pt = sorted((int(v), tri_of[(int(a), int(b), int(c))]) for v, a, b, c in sc.pt.idx.numpy()[:n])
    n = int(sc.ee.count.numpy()[0])
    ee = sorted((edge_of[(int(a), int(b))], edge_of[(int(c), int(d))])
                for a, b, c, d in sc.ee.idx.numpy()[:n])
    return pt, ee


STEPS = 30


@pytest.mark.slow
def test_partial_updates_give_the_numpy_stages_lists_pair_for_pair() -> None:
    """The device lists (float64 kernels) and the numpy stage's CandidateLists, updated from
    the same positions, hold the same pairs after every update of a sequence through the fold
    scene's folding (frame ends 20-28, STEPS steps between each two: the movers of one step
    are a few percent of the cloth), with the same number of full builds, of partial updates
    and of particles refreshed; both kinds of update occur."""
    scene, frames = _fold_positions(44)
    s = scene.settings
    t, clamp = s.self_thickness, s.self_clamp
    model = ClothSolver(scene.positions, scene.triangles, settings=s.replace(backend="numpy"),
                        colliders=scene.colliders).model
    ample = dataclasses.replace(DEFAULT_TUNING, warp_initial_per_query=16,
                                warp_initial_slots=96)
    k = build_kernels("float64")
    sc = WarpSelfCollision(model, k, wp.get_device("cpu"), tuning=ample)
    sc.prepare(s)
    sc.begin_frame()
    ref = SelfCollision(model, DEFAULT_TUNING)
    n = model.particle_count
    p = wp.zeros(n, dtype=k.vec3, device="cpu")
    zeros = [wp.zeros(n, dtype=k.vec3, device="cpu") for _ in range(3)]
    inv_mass = wp.array(model.inv_mass, dtype=k.scalar, device="cpu")
    tris, edges = model.topology.triangles, model.topology.edges
    steps = 0
    for a, b in itertools.pairwise(frames[39:]):
        for f in np.linspace(0.0, 1.0, STEPS, endpoint=False):
            P = a + f * (b - a)
            p.assign(P)
            sc.issue_predict(_launch, s, 1e-3, zeros[0], zeros[1], zeros[2], p, inv_mass)
            ref.begin_substep(np.ascontiguousarray(P.T), t, clamp)
            got_pt, got_ee = _pairs(sc, tris, edges)
            v, tt = ref.lists.point_triangle
            i, j = ref.lists.edge_edge
            assert got_pt == sorted(zip(v.tolist(), tt.tolist())), steps
            assert got_ee == sorted(zip(i.tolist(), j.tolist())), steps
            steps += 1
    assert not sc.grow_if_needed()
    st = sc.frame_extra(1)
    rs = ref.stats
    assert (st["self_rebuilds"], st["self_partial_rebuilds"], st["self_refreshed"]) == (
        rs.rebuilds, rs.partial_rebuilds, rs.refreshed)
    assert rs.rebuilds >= 2 and rs.partial_rebuilds > 10 and rs.refreshed > 0
    assert rs.point_triangle_candidates > 0 and rs.edge_edge_candidates > 0


def test_skipping_unchanged_pairs_gives_bit_identical_frames() -> None:
    """The fold scene (Warp CPU, float32) through its first contacts with the narrow phase
    skipping the pairs whose slack the motion cannot have used up, and evaluating every pair
    in every pass: identical positions and velocities at every frame end, identical contact
    counts, and the skipping evaluates far fewer pairs."""
    frames = 26
    scene = fold_scene(resolution=FOLD_RESOLUTION, frames=frames)
    scene.settings = scene.settings.replace(
        backend="warp", device="cpu", substeps=30, iterations=2, self_collision=True,
        self_thickness=0.01, self_clamp=0.5, self_friction=0.2, tethers=False)
    every = dataclasses.replace(DEFAULT_TUNING, skip_unchanged=False)
    runs = []
    for tuning in (DEFAULT_TUNING, every):
        solver = ClothSolver(scene.positions, scene.triangles, settings=scene.settings,
                             colliders=scene.colliders, self_collision_tuning=tuning)
        out = []
        for _ in range(frames):
            st = solver.step(1.0 / scene.fps)
            out.append((solver.positions.copy(), solver.velocities.copy(), dict(st.extra)))
        runs.append(out)
    contacts = 0.0
    for (x1, v1, e1), (x2, v2, e2) in zip(*runs):
        assert np.array_equal(x1, x2) and np.array_equal(v1, v2)
        for key in ("self_pt_contacts", "self_ee_contacts", "self_reverted"):
            assert e1[key] == e2[key]
        contacts += e1["self_pt_contacts"] + e1["self_ee_contacts"]
    assert contacts > 100
    skipped = sum(e["self_evaluated"] for *_, e in runs[0])
    every_pair = sum(e["self_evaluated"] for *_, e in runs[1])
    assert skipped < 0.5 * every_pair


@pytest.mark.slow
def test_native_cpu_loops_give_the_kernels_results_bit_for_bit() -> None:
    """The CPU's native loops (candidate searches and the narrow phase's pair passes,
    :mod:`pbdcloth.backends.warp.selfcollision_native`) on two threads and on one against the
    Warp kernels they replace (float32, all fed the same positions through the fold scene's
    folding, full builds and partial updates): the same candidate lists in the same order, the
    same projected positions bit for bit and the same counts of contacts and evaluated
    pairs."""
    scene, frames = _fold_positions(44)
    s = scene.settings.replace(self_friction=0.2)
    model = ClothSolver(scene.positions, scene.triangles, settings=s.replace(backend="numpy"),
                        colliders=scene.colliders).model
    ample = dataclasses.replace(DEFAULT_TUNING, warp_initial_per_query=16,
                                warp_initial_slots=96)
    k = build_kernels("float32")
    n = model.particle_count
    stages = []
    for native, threads in ((True, 2), (True, 1), (False, 1)):
        tuning = dataclasses.replace(ample, warp_cpu_threads=threads)
        sc = WarpSelfCollision(model, k, wp.get_device("cpu"), tuning=tuning, native=native)
        sc.prepare(s)
        sc.begin_frame()
        stages.append(sc)
    assert stages[0].kn is not None and stages[2].kn is None
    assert stages[0].threads == min(2, os.cpu_count() or 1)
    zeros = [wp.zeros(n, dtype=k.vec3, device="cpu") for _ in range(3)]
    inv_mass = wp.array(model.inv_mass.astype(np.float32), dtype=k.scalar, device="cpu")
    previous = frames[39].astype(np.float32)
    steps = 0
    for a, b in itertools.pairwise(frames[40:]):
        for f in np.linspace(0.0, 1.0, STEPS, endpoint=False):
            P = (a + f * (b - a)).astype(np.float32)
            out = []
            for sc in stages:
                p = wp.array(P, dtype=k.vec3, device="cpu")
                x = wp.array(previous, dtype=k.vec3, device="cpu")
                sc.issue_predict(_launch, s, 1e-3, zeros[0], zeros[1], zeros[2], p, inv_mass)
                lists = [fam.idx.numpy()[:int(fam.count.numpy()[0])] for fam in (sc.pt, sc.ee)]
                for iteration in range(2):
                    sc.issue_project(_launch, s, p, x, inv_mass, iteration)
                out.append((lists, p.numpy()))
            want_lists, want_p = out[-1]
            for got_lists, got_p in out[:-1]:
                for got, want in zip(got_lists, want_lists):
                    assert np.array_equal(got, want), steps
                assert np.array_equal(got_p, want_p), steps
            previous = P
            steps += 1
    st1, st2, st3 = (sc.frame_extra(1) for sc in stages)
    assert st1 == st2 == st3
    assert st1["self_rebuilds"] >= 1 and st1["self_partial_rebuilds"] >= 1
    assert st1["self_pt_contacts"] > 0 and st1["self_ee_contacts"] > 0
