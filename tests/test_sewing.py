"""Stitches: the sewing scene (two flat panels sewn into a tube skirt) and a stitch's closing.

The self-intersection check is the independent brute-force reference of test_selfcollision.py
(edge-through-triangle by orientation predicates), run on the mesh with each stitched pair
welded into one point: triangles that meet at a seam then share a vertex, as they do in the
garment, and are not counted as crossing each other there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.cloth.mesh import grid
from pbdcloth.cloth.stitches import Stitches
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


def test_sewn_tube_closes_its_seams_and_never_intersects(backend: Any) -> None:
    """Measured (numpy and Warp): every seam gap 0 to float rounding (< 1e-6 m) from frame 11
    on, the hem resting on the pelvis at y = 0.96 m, no crossing triangle in any frame (nor
    without the welding).
    Asserted: gaps under 1 mm after settling, no intersection, the tube still on the hips
    (its lowest point above the pelvis axis minus its radius), at rest (kinetic energy)."""
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
    gap = np.linalg.norm(x[st.i] - x[st.j], axis=1)
    assert gap.max() < 1e-3, gap.max()
    hip_y, hip_radius = 0.53 * 1.75, 0.075 * 1.75
    assert x[:, 1].min() > hip_y - hip_radius
    assert solver.kinetic_energy() < 1e-3


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
