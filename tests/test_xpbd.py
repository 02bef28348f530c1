"""XPBD in physical units, tethers, animated pins and capsule colliders."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
import pytest
from pbdcloth import Capsule, ClothSettings, ClothSolver, SettingsError, SolverInputError
from pbdcloth.cloth.model import BendFamily, DistanceFamily
from pbdcloth.scenes.cloth import cloak_scene, grid

if TYPE_CHECKING:
    from conftest import BackendCase

G = 9.81


def _single_spring(mass: float, settings: ClothSettings, rest: float = 0.5) -> ClothSolver:
    """One particle of ``mass`` hanging from a pin by ONE distance constraint of length ``rest``.

    Built from a one-triangle mesh whose model keeps only the pin-particle edge: the third corner
    is pinned too and carries no constraint, so the particle feels exactly one spring.
    """
    pos = np.array([[0.0, 0.0, 0.0], [0.0, -rest, 0.0], [0.3, 0.0, 0.0]])
    solver = ClothSolver(pos, [[0, 1, 2]], pinned=[0, 2], settings=settings)
    model = solver.model
    w = np.array([0.0, 1.0 / mass, 0.0])
    one = np.array([0], dtype=np.intp)
    spring = DistanceFamily(
        i=one, j=one + 1, rest=np.array([rest]), wi=np.zeros(1), wj=np.array([1.0 / mass]),
        wi_frac=np.zeros(1), wj_frac=np.ones(1), offsets=np.array([0, 1]), source=np.zeros(1, int),
    )
    empty_d = DistanceFamily(*(np.zeros(0, dtype=np.intp if k in (0, 1, 7, 8) else float)
                               for k in range(7)), offsets=np.zeros(1, int),
                             source=np.zeros(0, int))
    empty_b = BendFamily(quads=np.zeros((0, 4), np.intp), rest_angle=np.zeros(0),
                         w=np.zeros((0, 4)), offsets=np.zeros(1, int), source=np.zeros(0, int))
    solver.model = dataclasses.replace(model, mass=np.array([np.inf, mass, np.inf]), inv_mass=w,
                                       stretch=spring, shear=empty_d, bend=empty_b)
    from pbdcloth.backends.numpy_backend import NumpyBackend

    solver.use_backend(NumpyBackend(solver.model))
    return solver


def _settled_extension(mass: float, **kw: object) -> float:
    # The strain limit off: Hooke's law under the compliance alone.
    s = ClothSettings(damping=20.0, strain_limit=0.0, **kw)  # type: ignore[arg-type]
    solver = _single_spring(mass, s)
    for _ in range(96):
        solver.step(1 / 24)
    assert np.abs(solver.velocities).max() < 1e-6  # settled
    return float(-solver.positions[1, 1] - 0.5)


def test_hookes_law_under_xpbd_compliance() -> None:
    mass, alpha = 0.2, 0.01  # kg, m/N: expected extension m g alpha = 19.62 mm
    expected = mass * G * alpha
    runs = {
        (sub, it): _settled_extension(mass, model="xpbd", stretch_compliance=alpha, substeps=sub,
                                      iterations=it)
        for sub, it in ((5, 1), (50, 1), (5, 10), (50, 10))
    }
    for key, ext in runs.items():
        assert abs(ext - expected) / expected < 1e-3, (key, ext, expected)
    values = list(runs.values())
    assert (max(values) - min(values)) / expected < 1e-3


def test_pbd_extension_depends_on_the_time_step() -> None:
    """PBD stiffness is not physical: the same k hangs differently with the substep count.

    For one constraint the settled PBD extension is (1 - k) h^2 g / k: independent of the
    iteration count (that is what k' = 1 - (1 - k)^(1/n) is for) but not of h. For a whole cloth
    the iteration count changes the stretch too (test_solver.test_hanging_strain_falls_as_...).
    """
    k = 0.5
    ext = {sub: _settled_extension(1.0, model="pbd", stretch_stiffness=k, substeps=sub)
           for sub in (5, 50)}
    for sub, e in ext.items():
        h = 1 / 24 / sub
        assert abs(e - (1 - k) * h * h * G / k) < 1e-9, (sub, e)
    assert ext[5] / ext[50] == pytest.approx(100.0, rel=1e-6)
    same_k_more_iterations = _settled_extension(1.0, model="pbd", stretch_stiffness=k,
                                                substeps=5, iterations=4)
    assert same_k_more_iterations == pytest.approx(ext[5], rel=1e-6)


def _hanging_max_stretch(substeps: int, iterations: int) -> float:
    pos, tris = grid(50, 50, 1.0, 1.0, plane="xy")
    s = ClothSettings(model="xpbd", substeps=substeps, iterations=iterations,
                      stretch_compliance=0.0, shear_compliance=0.0, bend_compliance=10.0,
                      damping=1.0)
    solver = ClothSolver(pos, tris, pinned=np.arange(50), settings=s)  # top row
    for _ in range(12):
        solver.step(1 / 24)
    return solver.max_strain()


def test_small_steps_beat_many_iterations_at_equal_cost() -> None:
    small_steps = _hanging_max_stretch(20, 1)
    many_iterations = _hanging_max_stretch(1, 20)
    print(f"max stretch: 20 substeps x 1 iteration {small_steps:.4f}, "
          f"1 substep x 20 iterations {many_iterations:.4f}")
    assert small_steps < 0.5 * many_iterations


def _long_cloth_strain(tethers: bool) -> float:
    pos, tris = grid(10, 40, 0.25, 1.0 * 39 / 39, plane="xy")
    s = ClothSettings(model="pbd", substeps=10, iterations=2, tethers=tethers, damping=2.0,
                      hierarchy=False, strain_limit=0.0)
    solver = ClothSolver(pos, tris, pinned=np.arange(10), settings=s)
    for _ in range(48):
        solver.step(1 / 24)
    return solver.max_strain()


def test_tethers_limit_the_stretch_of_a_long_hanging_cloth() -> None:
    with_tethers, without = _long_cloth_strain(True), _long_cloth_strain(False)
    print(f"long cloth max strain: tethers {with_tethers:.4f}, none {without:.4f}")
    assert with_tethers < 0.02 < without


def test_pins_follow_animated_targets_exactly_at_frame_ends(backend: BackendCase) -> None:
    pos, tris = grid(8, 8, 1.0, 1.0, plane="xy")
    pins = np.array([0, 7])
    solver = ClothSolver(pos, tris, pinned=pins, settings=backend.cloth_settings(substeps=5))
    # Exactly the targets in the backend's precision (Warp: float32, then back to float64).
    stored = np.float32 if backend.name == "warp" else np.float64
    for frame in range(1, 13):
        targets = pos[pins] + np.array([0.1 * frame, 0.05 * np.sin(frame), 0.0])
        solver.set_pin_targets(targets)
        solver.step(1 / 24)
        assert np.array_equal(solver.positions[pins], targets.astype(stored).astype(np.float64))
    # A pin moving 0.1 m per frame moves at 2.4 m/s: its velocity is exactly the target motion
    # (to position rounding over the substep: measured 10 eps on numpy, 21 on Warp).
    assert np.abs(solver.velocities[pins, 0] - 0.1 * 24).max() < 100 * backend.eps
    with pytest.raises(SolverInputError, match=r"shape \(2, 3\)"):
        solver.set_pin_targets(np.zeros((3, 3)))


def test_capsule_distance_is_exact() -> None:
    cap = Capsule((0, 0, 0), (0, 2, 0), 0.5)
    pts = np.array([[1.0, 1.0, 0.0], [0.0, 3.0, 0.0], [0.0, -1.0, 0.0], [0.2, 0.5, 0.0]])
    phi, n = cap.query(pts)
    assert np.allclose(phi, [0.5, 0.5, 0.5, -0.3])
    assert np.allclose(n, [[1, 0, 0], [0, 1, 0], [0, -1, 0], [1, 0, 0]])
    cap.move_to((1, 0, 0), (1, 2, 0))
    assert np.allclose(cap.query(pts, 0.5)[0][0], 0.0)  # halfway: axis at x = 0.5
    assert np.allclose(cap.displacement(pts, 0.0, 1.0), [1, 0, 0])


def test_cloak_on_a_walking_body_stays_outside_the_capsules() -> None:
    scene = cloak_scene(frames=96, nu=13, nv=20)
    solver = scene.make_solver()
    worst = np.inf
    for frame in range(1, scene.frames + 1):
        assert scene.animate is not None
        scene.animate(solver, frame)
        solver.step(1 / scene.fps)
        for c in solver.colliders:
            worst = min(worst, float(c.query(solver.positions)[0].min()))
    assert worst > -0.1 * scene.settings.thickness, worst
    assert np.abs(solver.positions - scene.positions).max() > 0.5  # the body walked on


def test_out_of_range_physical_settings_are_refused() -> None:
    with pytest.raises(SettingsError, match="'stretch_compliance' = -1e-06 m/N is out of range"):
        ClothSettings(model="xpbd", stretch_compliance=-1e-6)
    with pytest.raises(SettingsError, match="'bend_compliance'"):
        ClothSettings(bend_compliance=-1.0)
    with pytest.raises(SettingsError, match="'density' = 0.0 kg/m\\^2 is out of range"):
        ClothSettings(density=0.0)
    with pytest.raises(SettingsError, match="'density'"):
        ClothSettings(density=-0.2)
    with pytest.raises(SettingsError, match="'tether_slack' = 0.9"):
        ClothSettings(tether_slack=0.9)
