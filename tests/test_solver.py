"""The PBD solver against closed forms, the reference loop, and itself."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pbdcloth
import pytest
from pbdcloth import ClothSettings, ClothSolver, Plane, SettingsError, SolverInputError, Sphere
from pbdcloth.backends.reference import ReferenceBackend
from pbdcloth.constraints.bend import dihedral_angle
from pbdcloth.scenes.cloth import drape_scene, grid

if TYPE_CHECKING:
    from conftest import BackendCase

G = np.array([0.0, -9.81, 0.0])

#: The settings exactly as the API contract writes them.
CONTRACT: dict[str, object] = dict(
    model="pbd", substeps=10, iterations=1, stretch_stiffness=1.0, shear_stiffness=1.0,
    bend_stiffness=0.1, damping=0.0, gravity=(0.0, -9.81, 0.0), wind=(0.0, 0.0, 0.0),
    thickness=0.01, friction=0.0, restitution=0.0)


def contract_settings(backend: BackendCase | None = None, **kw: object) -> ClothSettings:
    """The contract's settings with overrides, on ``backend`` (default: numpy)."""
    base = {**CONTRACT, **kw}
    if backend is None:
        return ClothSettings(**base, backend="numpy")  # type: ignore[arg-type]
    return backend.cloth_settings(**base)


@pytest.mark.parametrize("model", ["pbd", "xpbd"])
def test_free_fall_matches_the_schemes_closed_form(crumpled_grid, backend: BackendCase,
                                                   model: str) -> None:
    pos, tris = crumpled_grid
    v0 = np.array([0.3, 1.2, -0.4])
    s = contract_settings(backend, model=model)
    solver = ClothSolver(pos, tris, settings=s, velocities=np.tile(v0, (len(pos), 1)))
    frames, dt = 6, 1 / 24
    for _ in range(frames):
        solver.step(dt)
    n = frames * s.substeps
    h = dt / s.substeps
    expected = pos + n * h * v0 + h * h * G * n * (n + 1) / 2
    # Symplectic Euler is exact here up to rounding (one unit per step on ~1 m positions, so
    # 60 substeps end within ~20 eps: measured 4.8e-15 m on numpy, 1.9e-6 m on Warp's float32);
    # constraints see a rigid translation and correct by rounding-level amounts only. The
    # velocities carry that rounding divided by h (measured 300 eps).
    assert np.abs(solver.positions - expected).max() < 100 * backend.eps
    assert np.abs(solver.velocities - (v0 + n * h * G)).max() < 2000 * backend.eps


def test_pinned_points_never_move(small_grid) -> None:
    pos, tris = small_grid
    pins = [0, 11, 60]
    solver = ClothSolver(pos, tris, pinned=pins, settings=contract_settings(),
                         colliders=[Sphere((0.5, -0.3, 0.4), 0.2)])
    for _ in range(12):
        solver.step(1 / 24)
        assert np.array_equal(solver.positions[pins], pos[pins])
    assert np.abs(solver.positions - pos).max() > 0.05  # the rest did fall


@pytest.mark.parametrize("model", ["pbd", "xpbd"])
def test_constraints_conserve_linear_momentum(crumpled_grid, backend: BackendCase,
                                              model: str) -> None:
    pos, tris = crumpled_grid
    rng = np.random.default_rng(11)
    v0 = rng.normal(scale=0.5, size=pos.shape)
    s = contract_settings(backend, model=model, iterations=3, bend_stiffness=0.8,
                          bend_compliance=1e-3)
    solver = ClothSolver(pos, tris, settings=s, velocities=v0)
    m = solver.model.mass
    p0 = (m[:, None] * v0).sum(axis=0)
    dt, frames = 1 / 24, 5
    for _ in range(frames):
        solver.step(dt)
    p = (m[:, None] * solver.velocities).sum(axis=0)
    expected = p0 + m.sum() * G * dt * frames
    assert np.abs(solver.positions - (pos + v0 * dt * frames)).max() > 1e-2  # shape changed
    # Relative rounding: measured 3.4e-14 (numpy, 150 eps) and 3.2e-5 (Warp, 270 eps).
    assert np.linalg.norm(p - expected) / np.linalg.norm(expected) < 1000 * backend.eps


def _hanging_strain(**kw: object) -> float:
    """Max edge strain of a sheet hanging from its top corners, settled by damping (the plain
    solve: the hierarchical pass would hold it nearly inextensible whatever the stiffness)."""
    pos, tris = grid(15, 15, 1.0, 1.0, plane="xy")
    s = contract_settings(damping=4.0, hierarchy=False, **kw)
    solver = ClothSolver(pos, tris, pinned=[0, 14], settings=s)
    for _ in range(48):
        solver.step(1 / 24)
    return solver.max_strain()


@pytest.mark.slow
def test_hanging_strain_falls_as_stiffness_rises() -> None:
    strains = [_hanging_strain(stretch_stiffness=k, shear_stiffness=k) for k in (0.3, 0.6, 0.9, 1.0)]
    assert all(a > b for a, b in zip(strains, strains[1:])), strains


@pytest.mark.slow
def test_hanging_strain_falls_as_iterations_rise() -> None:
    strains = [_hanging_strain(iterations=n, substeps=2) for n in (1, 2, 4, 8)]
    assert all(a > b for a, b in zip(strains, strains[1:])), strains


def _hinge_angles(solver: ClothSolver) -> np.ndarray:
    q = solver.model.topology.bend_quads
    x = solver.positions
    return dihedral_angle(*(x[q[:, k]].T for k in range(4)))


@pytest.mark.parametrize("model", ["pbd", "xpbd"])
def test_a_flat_sheet_at_rest_stays_exactly_still(small_grid, backend: BackendCase,
                                                  model: str) -> None:
    pos, tris = small_grid
    s = contract_settings(backend, model=model, gravity=(0, 0, 0), bend_stiffness=1.0)
    solver = ClothSolver(pos, tris, pinned=[0], settings=s)
    for _ in range(12):
        solver.step(1 / 24)
    # numpy: rest and current angles and lengths computed the same way, so nothing moves at
    # all. Warp stores positions and rest data in float32, rounded separately: the sheet sits
    # within the rounding of its positions (measured 7e-8 m), never drifts.
    bound = 0.0 if backend.name == "numpy" else 8 * backend.eps
    assert np.abs(solver.positions - pos).max() <= bound


@pytest.mark.parametrize("model", ["pbd", "xpbd"])
def test_bending_restores_a_perturbed_sheet(small_grid, model: str) -> None:
    pos, tris = small_grid
    bumped = pos.copy()
    bumped[:, 1] += 0.08 * np.sin(3 * bumped[:, 0]) * np.sin(4 * bumped[:, 2])
    s = contract_settings(model=model, gravity=(0, 0, 0), bend_stiffness=1.0,
                          bend_compliance=0.0, damping=5.0)
    solver = ClothSolver(pos, tris, settings=s)
    solver.positions = bumped
    before = np.abs(_hinge_angles(solver)).max()
    for _ in range(24):
        solver.step(1 / 24)
    after = np.abs(_hinge_angles(solver)).max()
    assert before > 0.05 and after < 0.2 * before, (before, after)
    # Without bending the bumps stay (only stretch/shear act, which a bump barely violates).
    soft = ClothSolver(pos, tris, settings=s.replace(bend_stiffness=0.0, bend_compliance=1e9))
    soft.positions = bumped
    for _ in range(24):
        soft.step(1 / 24)
    assert np.abs(_hinge_angles(soft)).max() > 0.5 * before


def test_bend_stiffness_changes_the_drape_over_a_sphere() -> None:
    results = []
    for k in (0.0, 1.0):
        scene = drape_scene(resolution=16, frames=24,
                            settings=contract_settings(bend_stiffness=k, friction=0.3))
        solver = scene.make_solver()
        for _ in range(scene.frames):
            solver.step(1 / 24)
        results.append(solver.positions.copy())
    # A stiff sheet spans wider; the two drapes differ by centimetres, not rounding.
    assert np.abs(results[0] - results[1]).max() > 0.03


@pytest.mark.parametrize(("model", "sweeps"), [("pbd", 1), ("xpbd", 1), ("pbd", 4)])
def test_colored_solve_equals_the_sequential_loop(crumpled_grid, model: str, sweeps: int) -> None:
    pos, tris = crumpled_grid
    s = contract_settings(model=model, substeps=3, iterations=2, stretch_stiffness=0.9,
                          bend_stiffness=0.7, bend_compliance=0.01, tethers=True, friction=0.4,
                          restitution=0.5, hierarchy_sweeps=sweeps)
    colliders = lambda: [Sphere((0.5, -0.3, 0.4), 0.3), Plane((0, -0.5, 0), (0, 1, 0))]  # noqa: E731
    fast = ClothSolver(pos, tris, pinned=[0, 11], settings=s, colliders=colliders())
    slow = ClothSolver(pos, tris, pinned=[0, 11], settings=s, colliders=colliders())
    slow.use_backend(ReferenceBackend(slow.model))
    for _ in range(4):
        fast.step(1 / 24)
        slow.step(1 / 24)
    assert np.abs(fast.positions - pos).max() > 0.05
    assert np.abs(fast.positions - slow.positions).max() < 1e-12
    assert np.abs(fast.velocities - slow.velocities).max() < 1e-10  # = 1e-12 / h


def test_two_runs_are_byte_identical() -> None:
    def run() -> bytes:
        scene = drape_scene(resolution=20, frames=10)
        solver = scene.make_solver()
        for _ in range(scene.frames):
            solver.step(1 / 24)
        return solver.positions.tobytes() + solver.velocities.tobytes()

    assert run() == run()


def test_no_particle_ends_a_frame_inside_a_moving_sphere(backend: BackendCase) -> None:
    pos, tris = grid(10, 10, 0.6, 0.6, plane="xz", origin=(0.0, 0.36, 0.0))
    sphere = Sphere((0.3, 0.15, 0.3), 0.15)
    s = contract_settings(backend, substeps=8, friction=0.3, thickness=0.02)
    solver = ClothSolver(pos, tris, pinned=[0, 9], settings=s,
                         colliders=[Plane((0.0, 0.0, 0.0), (0.0, 1.0, 0.0)), sphere])
    free = solver.model.inv_mass > 0
    deepest = np.inf
    for frame in range(1, 11):
        t = frame / 24
        sphere.move_to((0.3 + 0.4 * t, 0.15 + 0.5 * t, 0.3))
        solver.step(1 / 24)
        phi, _ = sphere.query(solver.positions[free], 1.0)
        deepest = min(deepest, float(phi.min()))
    # Projected last in every iteration (friction moves along the tangent plane, outward): at
    # least the thickness, to rounding of the ~0.5 m positions; and the cloth does touch.
    assert s.thickness - 16 * backend.eps < deepest < s.thickness + 1e-3


def test_demo_scene_keeps_particles_out_of_the_sphere() -> None:
    scene = drape_scene(resolution=30, frames=36)
    sphere = next(c for c in scene.colliders if isinstance(c, Sphere))
    solver = scene.make_solver()
    worst = np.inf
    for _ in range(scene.frames):
        solver.step(1 / 24)
        phi, _ = sphere.query(solver.positions)
        worst = min(worst, float(phi.min()))
    t = scene.settings.thickness
    # Collisions are projected last in each iteration: particles end each frame at the thickness
    # shell, so none is inside the sphere and none closer than 90% of the thickness.
    assert worst > -0.1 * t
    assert worst > 0.9 * t
    assert worst < 2 * t  # the cloth does touch the sphere


def test_settings_are_validated_with_clear_errors() -> None:
    with pytest.raises(SettingsError, match=r"setting 'substeps' = 0 is out of range \[1, 1000\]"):
        ClothSettings(substeps=0)
    with pytest.raises(SettingsError, match="'stretch_stiffness' = 1.5"):
        ClothSettings(stretch_stiffness=1.5)
    with pytest.raises(SettingsError, match="'model' must be one of"):
        ClothSettings(model="fem")
    with pytest.raises(SettingsError, match="'gravity' must be finite"):
        ClothSettings(gravity=(0, float("nan"), 0))
    with pytest.raises(SettingsError, match="'iterations' must be a whole number"):
        ClothSettings(iterations=2.5)
    with pytest.raises(SettingsError, match=r"unknown setting\(s\) \['substep'\]"):
        ClothSettings.from_dict({"substep": 3})
    with pytest.raises(SolverInputError, match="dt must be a positive number"):
        ClothSolver(*grid(3, 3)).step(0.0)
    with pytest.raises(SolverInputError, match="not a pbdcloth collider"):
        ClothSolver(*grid(3, 3), colliders=["sphere"])  # type: ignore[list-item]


def test_contract_names_exist() -> None:
    for name in ("ClothSettings", "ClothSolver", "Plane", "Sphere", "Capsule"):
        assert hasattr(pbdcloth, name)
    pos, tris = grid(5, 5)
    solver = pbdcloth.ClothSolver(pos, tris, pinned=None, settings=contract_settings(),
                                  colliders=[pbdcloth.Plane((0, 0, 0), (0, 1, 0)),
                                             pbdcloth.Sphere((0, 1, 0), 0.5)])
    solver.step(1 / 24)
    assert solver.positions.shape == (25, 3) and solver.positions.dtype == np.float64
    assert solver.velocities.shape == (25, 3) and solver.velocities.dtype == np.float64


def test_wind_pushes_along_the_normal_only(small_grid, backend: BackendCase) -> None:
    """A flat sheet (normal +-y) feels (wind . n) n: the full vertical wind, none of the sideways."""
    pos, tris = small_grid
    wind = np.array([3.0, 2.0, -1.0])
    s = contract_settings(backend, gravity=(0, 0, 0), wind=tuple(wind))
    solver = ClothSolver(pos, tris, settings=s)
    frames, dt = 4, 1 / 24
    for _ in range(frames):
        solver.step(dt)
    n = frames * s.substeps
    h = dt / s.substeps
    expected = pos + h * h * np.array([0.0, wind[1], 0.0]) * n * (n + 1) / 2
    # Measured 2e-17 m (numpy) and 4.9e-8 m (Warp: the float32 rounding of the positions).
    assert np.abs(solver.positions - expected).max() < 8 * backend.eps
    # Edge-on wind does nothing at all (beyond that rounding).
    side = ClothSolver(pos, tris, settings=s.replace(wind=(3.0, 0.0, -1.0)))
    side.step(dt)
    assert np.abs(side.positions - pos).max() < 8 * backend.eps
