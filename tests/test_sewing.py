"""Stitches: the sewing scene (two flat panels sewn into a tube skirt) and a stitch's closing.

The self-intersection check is the independent brute-force reference of test_selfcollision.py
(edge-through-triangle by orientation predicates), run on the mesh with each stitched pair
welded into one point: triangles that meet at a seam then share a vertex, as they do in the
garment, and are not counted as crossing each other there.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.backends.reference import ReferenceBackend
from pbdcloth.cloth.mesh import grid
from pbdcloth.cloth.stitches import Stitches, TriangleStitches
from pbdcloth.scenes import SCENES
from pbdcloth.scenes.sewing import sewing_scene
from test_selfcollision import intersecting_pairs

DT = 1.0 / 24.0

#: Frames run: 12 sewing with gravity off, then the drop onto the hips (settled by frame 24:
#: kinetic energy below 1e-4 J).
FRAMES = 30


def _welded(triangles: np.ndarray, i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    weld = np.arange(n)
    weld[j] = i
    return weld[triangles]


def test_sewing_is_a_demo_scene() -> None:
    assert SCENES["sewing"] is sewing_scene


@pytest.mark.slow
def test_sewn_tube_closes_its_seams_and_never_intersects(backend: Any) -> None:
    """Measured (numpy and Warp): every seam gap 0 to float rounding (< 1e-6 m) from frame 11
    on, the hem resting on the pelvis at y = 0.96 m, no crossing triangle in any frame (nor
    without the welding).
    Largest edge strain 2.03 % (numpy) and 2.17 % (Warp), at frames 16-17 as the tube lands
    (14.9 % with the stitches projected after the strain limit's sweeps).
    Asserted: gaps under 1 mm after settling, no intersection, every edge under 3 % at every
    frame end, the tube still on the hips (its lowest point above the pelvis axis minus its
    radius), at rest (kinetic energy)."""
    scene = sewing_scene()
    scene.settings = scene.settings.replace(**backend.settings)
    solver = scene.make_solver()
    st = solver.model.stitches
    assert st.count == 2 * 11  # both side edges, 11 rows
    n = solver.model.particle_count
    welded = _welded(scene.triangles, st.i, st.j, n)
    gap0 = np.linalg.norm(solver.positions[st.i] - solver.positions[st.j], axis=1)
    assert gap0.min() > 0.39  # laid out apart
    for frame in range(1, FRAMES + 1):
        assert scene.animate is not None
        scene.animate(solver, frame)
        solver.step(DT)
        x = solver.positions
        pairs = intersecting_pairs(x, welded)
        assert len(pairs) == 0, f"frame {frame}: triangles {pairs[:5].tolist()} intersect"
        assert solver.max_strain() < 0.03, f"frame {frame}: strain {solver.max_strain():.2%}"
    gap = np.linalg.norm(x[st.i] - x[st.j], axis=1)
    assert gap.max() < 1e-3, gap.max()
    hip_y, hip_radius = 0.53 * 1.75, 0.075 * 1.75
    assert x[:, 1].min() > hip_y - hip_radius
    assert solver.kinetic_energy() < 1e-3


@pytest.mark.parametrize("name", [
    pytest.param("warp", marks=pytest.mark.skipif(
        importlib.util.find_spec("warp") is None, reason="warp-lang is not installed")),
    pytest.param("numpy", marks=pytest.mark.slow),
])
def test_a_tight_tube_stretches_no_edge_at_its_seams(name: str) -> None:
    """The sewing scene at 10 points across (140 particles): the tube, tighter than the
    pelvis, lands on the hips pulled taut. With the stitches inside the strain limit's sweeps
    the largest edge strain over 30 frames is 1.35 % (both backends); with the stitches after
    the sweeps the edges next to the seams took the stretch: 4.04 % (3.45 % at rest)."""
    scene = sewing_scene(resolution=10)
    scene.settings = scene.settings.replace(backend=name, device="cpu")
    solver = scene.make_solver()
    st = solver.model.stitches
    worst = 0.0
    for frame in range(1, FRAMES + 1):
        assert scene.animate is not None
        scene.animate(solver, frame)
        solver.step(DT)
        worst = max(worst, solver.max_strain())
    assert worst < 0.02, worst
    gap = np.linalg.norm(solver.positions[st.i] - solver.positions[st.j], axis=1)
    assert gap.max() < 1e-3, gap.max()


def test_a_stitch_closes_at_its_speed_and_conserves_momentum(backend: Any) -> None:
    """Two free 3 x 3 patches 0.5 m apart, no gravity, one stitch between facing corners
    closing at 0.6 m/s: the gap shrinks by 0.6 m/s x t (to rounding, float32 on Warp) until it
    is shut, and the total momentum stays 0 (the stitch's moves are split by inverse mass)."""
    a, tris = grid(3, 3, 0.1, 0.1, plane="xz")
    b = a + [0.6, 0.0, 0.0]
    pos = np.concatenate([a, b])
    faces = np.concatenate([tris, tris + 9])
    settings = backend.cloth_settings(model="pbd", substeps=10, iterations=2,
                                      gravity=(0.0, 0.0, 0.0), damping=0.0, tethers=False,
                                      bend_stiffness=0.0)
    solver = ClothSolver(pos, faces, settings=settings, stitches=Stitches([[8, 9]], 0.0, 0.6))
    start = np.linalg.norm(pos[8] - pos[9])
    # velocities are (x - x_prev) / h: position rounding (eps x 0.7 m) over h, times the mass;
    # measured 7e-17 (numpy), 4.5e-8 kg m/s (Warp float32) against each patch's 4.5e-4
    bound = 100 * backend.eps * 0.7 / (DT / 10) * solver.model.mass.sum()
    gaps = []
    for _ in range(24):
        solver.step(DT)
        x = solver.positions
        gaps.append(np.linalg.norm(x[8] - x[9]))
        momentum = (solver.model.mass[:, None] * solver.velocities).sum(axis=0)
        assert np.abs(momentum).max() < bound
    t = DT * np.arange(1, 25)
    closing = gaps[:12]
    np.testing.assert_allclose(closing, start - 0.6 * t[:12], atol=1e-5)
    assert max(gaps[-3:]) < 1e-5


@pytest.mark.parametrize("model", ["pbd", "xpbd"])
def test_stitched_pinned_point_pulls_only_the_free_one(model: str) -> None:
    pos, tris = grid(3, 3, 0.2, 0.2, plane="xz")
    settings = ClothSettings(model=model, substeps=4, iterations=2, gravity=(0.0, 0.0, 0.0),
                             backend="numpy", tethers=False, bend_stiffness=0.0,
                             bend_compliance=1e3)
    solver = ClothSolver(pos, tris, pinned=[0], settings=settings,
                         stitches=Stitches([[0, 8]], 0.0, 10.0))
    for _ in range(12):
        solver.step(DT)
    np.testing.assert_array_equal(solver.positions[0], pos[0])
    assert np.linalg.norm(solver.positions[8] - pos[0]) < 1e-3


# --- point-to-triangle stitches ----------------------------------------------------------------

def _layers(use: str, model: str = "pbd", gravity: float = 0.0, frames: int = 24):  # type: ignore
    """A 5 x 5 sheet 0.2 m above another and shifted by (3, 2) cm, three of its points sewn
    onto the triangles of the lower sheet right under them, at the barycentric coordinates of
    their projections; no pins, so momentum is conserved."""
    a, tris = grid(5, 5, 0.4, 0.4, plane="xz")
    faces = np.concatenate([tris, tris + 25])
    upper = a + [0.03, 0.2, 0.02]
    pos = np.concatenate([a, upper])
    points, chosen, bary = [], [], []
    for j in (0, 12, 2):   # lower quads sharing no point
        for t, (i0, i1, i2) in enumerate(tris):
            p0, p1, p2 = a[i0, ::2], a[i1, ::2], a[i2, ::2]
            m = np.array([p1 - p0, p2 - p0]).T
            v, w = np.linalg.solve(m, upper[j, ::2] - p0)
            if min(v, w, 1.0 - v - w) >= 0.0:
                points.append(25 + j)
                chosen.append(t)
                bary.append([1.0 - v - w, v, w])
                break
    stitches = TriangleStitches(points, tris[chosen], bary, 0.0, speed=0.5)
    settings = ClothSettings(model=model, substeps=4, iterations=2, backend="numpy",
                             tethers=False, gravity=(0.0, gravity, 0.0), damping=0.0,
                             bend_stiffness=0.0, bend_compliance=1e3)
    solver = ClothSolver(pos, faces, settings=settings, triangle_stitches=stitches)
    assert solver.model.triangle_stitches.color_count == 1
    if use == "reference":
        solver.use_backend(ReferenceBackend(solver.model))
    elif use.startswith("warp"):
        from pbdcloth.backends.warp.backend import WarpBackend

        solver.use_backend(WarpBackend(solver.model, device="cpu",
                                       precision="float64" if use == "warp64" else "float32"))
    for _ in range(frames):
        solver.step(DT)
    return solver


def _gaps(solver: ClothSolver) -> np.ndarray:
    st = solver.model.triangle_stitches
    x = solver.positions
    q = (st.barycentric[:, :, None] * x[st.members[:, 1:]]).sum(axis=1)
    return np.linalg.norm(x[st.members[:, 0]] - q, axis=1)


@pytest.mark.parametrize("model", ["pbd", "xpbd"])
def test_triangle_stitches_sew_points_onto_triangles_on_every_backend(model: str) -> None:
    """Numpy against the per-constraint reference (measured 1.7e-14 m) and Warp float64
    (1.6e-14 m), bound 1e-12; Warp float32 measured 1.4e-5 m, bound 1e-4. The 0.2 m gaps close
    at 0.5 m/s (0.4 s) and stay shut (4e-17 m after 1 s); momentum stays 0 (5e-16)."""
    pytest.importorskip("warp")
    numpy_run = _layers("numpy", model)
    assert _gaps(numpy_run).max() < 1e-9
    momentum = (numpy_run.model.mass[:, None] * numpy_run.velocities).sum(axis=0)
    assert np.abs(momentum).max() < 1e-12
    for use, bound in (("reference", 1e-12), ("warp64", 1e-12), ("warp", 1e-4)):
        assert np.abs(_layers(use, model).positions - numpy_run.positions).max() < bound, use
    half = _layers("numpy", model, frames=4)   # after 1/6 s the gaps have closed 0.5 m/s x t
    np.testing.assert_allclose(_gaps(half), 0.2 - 0.5 * 4 * DT, atol=1e-9)


@pytest.mark.parametrize(("kwargs", "words"), [
    (dict(points=[30], triangles=[[0, 1, 5]], barycentric=[[0.5, 0.5, 0.5]]), "sum to 1"),
    (dict(points=[30], triangles=[[0, 1, 5]], barycentric=[[1.5, -0.5, 0.0]]), ">= 0"),
    (dict(points=[1], triangles=[[0, 1, 5]], barycentric=[[1, 0, 0]]), "as a corner"),
    (dict(points=[30, 31], triangles=[[0, 1, 5]], barycentric=[[1, 0, 0]]), "(2, 3)"),
    (dict(points=[30], triangles=[[0, 1, 99]], barycentric=[[1, 0, 0]]), "outside"),
])
def test_bad_triangle_stitches_are_refused(kwargs: dict, words: str) -> None:  # type: ignore
    from pbdcloth.cloth.stitches import StitchError

    pos, tris = grid(6, 6)
    with pytest.raises(StitchError) as err:
        ClothSolver(pos, tris, triangle_stitches=TriangleStitches(**kwargs))
    assert words in str(err.value)
