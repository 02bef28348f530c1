"""The strain limit (Provot 1995; pbdcloth.constraints.strain_limit): the closed form of one
hanging corner, conservation, what it buys on pinned sheets, the backends against each other."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

import numpy as np
import pytest
from pbdcloth import ClothSettings, ClothSolver
from pbdcloth.backends import numpy_backend
from pbdcloth.backends.reference import ReferenceBackend
from pbdcloth.cloth.mesh import grid
from pbdcloth.constraints.distance import distance_colors
from pbdcloth.constraints.strain_limit import limit_target, project_strain_limit

if TYPE_CHECKING:
    from conftest import BackendCase

A, B = 0.3, 0.4      # half base and height of the triangle [m]; its slanted edges are 0.5 m


def _corner(settings: ClothSettings) -> ClothSolver:
    """A triangle hanging from its two top corners (pinned), its third corner free."""
    pos = np.array([[-A, 0.0, 0.0], [A, 0.0, 0.0], [0.0, -B, 0.0]])
    return ClothSolver(pos, [[0, 1, 2]], pinned=[0, 1], settings=settings)


@pytest.mark.parametrize("limit", [0.02, 0.1])
def test_a_hanging_corner_settles_where_both_edges_reach_the_limit(
        backend: BackendCase, limit: float) -> None:
    """With no stretch constraint (PBD stretch stiffness 0) only the limit holds the corner:
    an edge past (1 + s) 0.5 m is shortened to t 0.5 m (t = 1 + s - 1e-4), so the corner
    settles between the depths sqrt((t 0.5)^2 - 0.3^2) and sqrt(((1 + s) 0.5)^2 - 0.3^2), the
    closed forms. Alternating sweeps over two edges end at some point of the lens both allow,
    not at its lowest point (that would take Dykstra's algorithm), so the band is widened by a
    quarter of each substep's fall h^2 g = 0.17 mm (measured 0.02 mm below the target's depth
    at s = 2 %); no edge ends more than 1e-6 past the limit, the sweeps having stopped."""
    settings = backend.cloth_settings(model="pbd", stretch_stiffness=0.0, damping=20.0,
                                      strain_limit=limit, hierarchy=False)
    free = _corner(settings.replace(strain_limit=0.0))
    limited = _corner(settings)
    for _ in range(96):
        free.step(1 / 24)
        limited.step(1 / 24)
    half_base, edge = A, np.hypot(A, B)
    deepest = np.sqrt(((1.0 + limit) * edge) ** 2 - half_base ** 2)
    shallowest = np.sqrt((limit_target(limit) * edge) ** 2 - half_base ** 2)
    depth = -float(limited.positions[2, 1])
    assert -float(free.positions[2, 1]) > deepest + 1.0       # the limit is what holds it
    fall = 9.81 * (1 / 240) ** 2
    assert shallowest - 0.25 * fall < depth < deepest + 0.25 * fall, (depth, shallowest, deepest)
    assert limit - 1e-3 < limited.max_strain() < limit + 1e-6


def test_stitches_inside_the_sweeps_end_with_every_edge_within_and_every_seam_closed() -> None:
    """Two 6 x 6 sheets whose facing columns are sewn (rest length 0), jittered by 2 mm
    (edges up to 10.7 % long, seams up to ~7 mm open). The stitch written here welds each sewn
    pair at its midpoint (equal masses). With it inside the sweeps, the sweeps stop before the
    cap (measured: after 11 of 48) with every edge within 1 % (the final sweep shortened none
    after the last stitch pass) and every seam closed; welded after the sweeps instead (the
    order before the stitches moved inside), edges next to the seam end 1.99 % long."""
    left, tris = grid(6, 6, 0.5, 0.5)
    right = left + np.array([0.5, 0.0, 0.0])
    pos = np.concatenate([left, right])
    n = left.shape[0]
    seam_left = np.flatnonzero(np.isclose(left[:, 0], 0.5))
    seam = np.stack([seam_left, np.flatnonzero(np.isclose(left[:, 0], 0.0)) + n], axis=1)
    assert np.allclose(pos[seam[:, 0]], pos[seam[:, 1]])
    faces = np.concatenate([tris, tris + n])
    model = ClothSolver(pos, faces, settings=ClothSettings(backend="numpy")).model
    colors = distance_colors(model.stretch, model.particle_count)
    rest = model.stretch.rest
    jitter = np.random.default_rng(3).normal(0.0, 2e-3, pos.shape)

    def weld(P: np.ndarray) -> None:
        mid = 0.5 * (P[:, seam[:, 0]] + P[:, seam[:, 1]])
        P[:, seam[:, 0]] = mid
        P[:, seam[:, 1]] = mid

    def strain(P: np.ndarray) -> float:
        d = P[:, model.stretch.i] - P[:, model.stretch.j]
        return float((np.sqrt((d * d).sum(0)) / rest).max() - 1.0)

    inside = np.ascontiguousarray((pos + jitter).T)
    assert strain(inside) > 0.1
    sweeps = project_strain_limit(inside, colors, 0.01, 48, between=lambda: weld(inside),
                                  moved=seam.reshape(-1))
    assert sweeps < 48
    assert strain(inside) <= 0.01 + 1e-12
    assert np.array_equal(inside[:, seam[:, 0]], inside[:, seam[:, 1]])
    after = np.ascontiguousarray((pos + jitter).T)
    project_strain_limit(after, colors, 0.01, 48)
    weld(after)
    assert strain(after) > 0.015


def test_a_sweep_keeps_linear_and_angular_momentum() -> None:
    """Unequal masses, every edge stretched by 30 %: each projection moves an edge's ends by
    w_i / (w_i + w_j) and w_j / (w_i + w_j) of C along the edge, so a sweep keeps
    sum m dx = 0, and one color (no shared particles, all projected at once) also keeps
    sum m x x dx = 0 (to rounding, 1e-13 of the moves)."""
    pos, tris = grid(12, 10, 1.0, 0.8)
    rng = np.random.default_rng(7)
    solver = ClothSolver(pos, tris, settings=ClothSettings(backend="numpy"),
                         point_attributes={"mass_scale": rng.uniform(0.2, 5.0, len(pos))})
    model = solver.model
    mass = 1.0 / model.inv_mass
    colors = distance_colors(model.stretch, model.particle_count)
    before = pos * 1.3 + rng.normal(0.0, 1e-3, pos.shape)
    for sweep, check_torque in ((colors, False), (colors[:1], True)):
        P = np.ascontiguousarray(before.T)
        project_strain_limit(P, sweep, 0.01, 1)
        moved = P.T - before
        assert np.abs(moved).max() > 0.01
        scale = float(np.abs(mass[:, None] * moved).sum())
        assert np.abs((mass[:, None] * moved).sum(0)).max() < 1e-13 * scale
        if check_torque:
            torque = (mass[:, None] * np.cross(before, moved)).sum(0)
            assert np.abs(torque).max() < 1e-13 * scale
    project_strain_limit(P, colors, 0.0, 3)          # 0: off, nothing moves
    assert np.array_equal(P.T - before, moved)


def test_the_limit_holds_a_hanging_sheet_to_one_percent(backend: BackendCase) -> None:
    """60 x 60 sheet hanging from two corners, PBD 10 x 1 with the hierarchical pass, 36
    frames: without the limit its longest edge reaches 2.7 % (at the pins); with the default
    limit (1 %, sweeps until every edge is within it) no edge is ever more than 1 % + 1e-6
    long (measured 1.000 %; 1e-6 covers float32 lengths on Warp)."""
    worst = {}
    for limit in (0.0, 0.01):
        settings = backend.cloth_settings(damping=0.5, strain_limit=limit)
        pos, tris = grid(60, 60, 1.0, 1.0, plane="xy")
        solver = ClothSolver(pos, tris, pinned=[0, 59], settings=settings)
        worst[limit] = 0.0
        for _ in range(36):
            solver.step(1 / 24)
            worst[limit] = max(worst[limit], solver.max_strain())
    assert worst[0.0] > 0.02, worst
    assert worst[0.01] < 0.01 + 1e-6, worst


def _sweeps_over_every_edge(P: np.ndarray, colors: list, limit: float, passes: int) -> int:
    """The strain limit with every sweep visiting every edge (the same arithmetic as
    project_strain_limit, without its skipping)."""
    R = P.reshape(-1)
    trigger, target = 1.0 + limit, limit_target(limit)
    for sweep in range(passes):
        shortened = 0
        for c in colors:
            g = c.gather.reshape(2, 3, c.count)
            x = R[g]
            d = x[0] - x[1]
            length = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
            hit = np.flatnonzero(length > trigger * c.rest)
            step = d[:, hit] * ((length[hit] - target * c.rest[hit])
                                / np.maximum(length[hit], 1e-12))
            g = g[:, :, hit]
            R[g] = x[:, :, hit] - c.frac[:, :, hit] * step
            shortened += hit.size
        if shortened == 0:
            return sweep + 1
    return passes


def test_the_sweeps_stop_with_every_edge_within_the_limit() -> None:
    """A free sheet jittered by 2 mm (48 % of its edges past 1 %, up to 31 %): the sweeps
    stop once one shortens nothing (measured 48), and then every edge is within the limit;
    one sweep is not enough. Visiting in later sweeps
    only the edges with an end moved since their last visit gives, bit for bit, the
    positions of sweeps that visit every edge."""
    pos, tris = grid(30, 30, 1.0, 1.0)
    rng = np.random.default_rng(3)
    solver = ClothSolver(pos, tris, settings=ClothSettings(backend="numpy"))
    model = solver.model
    colors = distance_colors(model.stretch, model.particle_count)
    start = np.ascontiguousarray((pos + rng.normal(0.0, 2e-3, pos.shape)).T)
    strain = {}
    for passes in (1, 64):
        P = start.copy()
        used = project_strain_limit(P, colors, 0.01, passes)
        full = start.copy()
        assert _sweeps_over_every_edge(full, colors, 0.01, passes) == used
        assert np.array_equal(P, full)
        x = P.T
        length = np.linalg.norm(x[model.stretch.i] - x[model.stretch.j], axis=1)
        strain[passes] = (used, float((length / model.stretch.rest - 1.0).max()))
    assert strain[1][0] == 1 and strain[1][1] > 0.011, strain
    assert 1 < strain[64][0] < 64 and strain[64][1] <= 0.01 + 1e-12, strain


def test_the_sweeps_equal_the_sequential_loop() -> None:
    """The colored numpy sweeps against the reference loop's edge by edge sweeps over four
    frames of a stretchy XPBD sheet where the limit acts: 1e-12 m."""
    pos, tris = grid(12, 10, 1.0, 0.8, plane="xy")
    s = ClothSettings(backend="numpy", model="xpbd", stretch_compliance=0.1, substeps=3,
                      iterations=2, strain_limit=0.005, strain_limit_passes=3,
                      hierarchy_sweeps=1)  # more sweeps hold the sheet without the limit
    fast = ClothSolver(pos, tris, pinned=[0, 11], settings=s)
    slow = ClothSolver(pos, tris, pinned=[0, 11], settings=s)
    slow.use_backend(ReferenceBackend(slow.model))
    free = ClothSolver(pos, tris, pinned=[0, 11], settings=s.replace(strain_limit=0.0))
    for _ in range(4):
        fast.step(1 / 24)
        slow.step(1 / 24)
        free.step(1 / 24)
    assert free.max_strain() > 0.01 and np.abs(free.positions - fast.positions).max() > 1e-4
    assert np.abs(fast.positions - slow.positions).max() < 1e-12


def test_tearing_turns_the_limit_off() -> None:
    """A limit below the tear strain would stop every tear: with tear_strain > 0 the solve
    applies none (ClothSettings.effective_strain_limit)."""
    assert ClothSettings().effective_strain_limit == 0.01
    assert ClothSettings(tear_strain=0.2).effective_strain_limit == 0.0
    assert ClothSettings(strain_limit=0.0).effective_strain_limit == 0.0


# --- contact sliding --------------------------------------------------------------------------
def test_a_sliding_end_keeps_none_of_its_move_into_the_obstacle() -> None:
    """One edge, 20 % long, its first end touching a floor (normal +y) and its second end
    beside it and lower (hanging over a ledge). Without sliding the first end is pulled down,
    into the floor; with
    it that end moves only along the floor, no lower, and the second end takes the rest: the
    sweeps still end with the edge within the limit."""
    model = ClothSolver(*grid(2, 2, 1.0, 1.0), settings=ClothSettings(backend="numpy")).model
    colors = distance_colors(model.stretch, 4)
    edge = (int(model.stretch.i[0]), int(model.stretch.j[0]))
    a, b = edge
    touching = np.zeros(4, dtype=bool)
    touching[a] = True
    normals = np.zeros((4, 3))
    normals[:, 1] = 1.0
    moved = {}
    for slide in (False, True):
        P = model.mesh.positions.T.copy(order="C")
        rest = float(np.linalg.norm(P[:, a] - P[:, b]))
        P[:, b] = P[:, a] + np.array([0.8, -0.6, 0.0]) * 1.2 * rest   # 20 % long, over the ledge
        start = P.copy()
        project_strain_limit(P, colors, 0.01, 16,
                             sliding=(touching, normals) if slide else None)
        assert np.linalg.norm(P[:, a] - P[:, b]) <= 1.01 * rest + 1e-15
        moved[slide] = P[:, a] - start[:, a]
    assert moved[False][1] < -0.02 * rest                 # pulled into the floor
    assert moved[True][1] == 0.0                          # not a bit lower: slid along it
    assert moved[True][0] > 0.0 and np.linalg.norm(moved[True]) > 0.01 * rest


def _cloak_worst_strain(backend: str, sliding: bool, frames: int = 22) -> float:
    from pbdcloth.scenes.cloth import cloak_scene

    scene = cloak_scene(start_moving=False)  # at rest: the impact the slide was measured on
    scene.settings = scene.settings.replace(backend=backend, device="cpu",
                                            contact_sliding=sliding)
    solver = scene.make_solver()
    worst = 0.0
    for frame in range(1, frames + 1):
        assert scene.animate is not None
        scene.animate(solver, frame)
        solver.step(1.0 / scene.fps)
        worst = max(worst, solver.max_strain())
    return worst


@pytest.mark.skipif(importlib.util.find_spec("warp") is None,
                    reason="warp-lang is not installed")
def test_contact_sliding_halves_the_walking_cloaks_stretch() -> None:
    """The cloak on the walking capsule body (its own backend, Warp), started at rest, its
    largest strain over frames 1 to 22: 5.5 % as the colliders leave the edges over the
    capsules after each iteration, 2.8 % with the ends in contact sliding (numpy: 5.5 % and
    2.8 % too; its sliding equals the reference loop's, below). With one sweep per coarse
    level of the hierarchy (``hierarchy_sweeps`` 1, the default before) 9.4 % and 4.8 %."""
    off, on = _cloak_worst_strain("warp", False), _cloak_worst_strain("warp", True)
    assert off > 0.045, off
    assert on < 0.035, on


def test_contact_sliding_equals_the_sequential_loop_and_is_off_by_default() -> None:
    """A sheet pinned at two corners falls onto a sphere (contacts from frame 3): the numpy
    sweeps with sliding against the reference loop's edge by edge ones, 1e-12 m over six
    frames; off, the frames differ (sliding changes something) and the default is off."""
    from pbdcloth import Sphere

    assert ClothSettings().contact_sliding is False
    pos, tris = grid(8, 8, 1.0, 1.0, origin=(-0.5, 0.6, -0.5))
    runs = {}
    for name, sliding in (("numpy", True), ("reference", True), ("off", False)):
        s = ClothSettings(backend="numpy", substeps=4, iterations=2, thickness=0.01,
                          contact_sliding=sliding)
        solver = ClothSolver(pos, tris, pinned=[0, 7], settings=s,
                             colliders=[Sphere((0.0, 0.3, 0.0), 0.25)])
        if name == "reference":
            solver.use_backend(ReferenceBackend(solver.model))
        for _ in range(6):
            solver.step(1 / 24)
        assert solver.last_stats.contacts > 0
        runs[name] = solver.positions
    assert np.abs(runs["numpy"] - runs["reference"]).max() < 1e-12
    assert np.abs(runs["numpy"] - runs["off"]).max() > 1e-6


def test_contacts_with_a_fast_collider_do_not_slide(backend: BackendCase,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A bar at 48 m/s through a curtain with one substep (2 m per substep, tests/
    test_hardening.py), contact sliding on: the contacts of the bar's front, whose surface
    moves 200 thicknesses along their normal per substep, do not slide, so no particle passes
    through the bar and the row at its height rides on its front (measured 37 past z - 0.2 m).
    Control (numpy): with every contact sliding the sweeps slide that row up over the bar, none
    of it carried, one particle through it."""
    from test_hardening import sweep_through_curtain

    s = backend.cloth_settings(substeps=1, iterations=2, contact_sliding=True)
    crossed, solver, z = sweep_through_curtain(s, 48.0)
    assert crossed == [0, 0, 0, 0]
    assert np.count_nonzero(solver.positions[:, 2] > z - 0.2) >= 21
    if backend.name == "numpy":
        monkeypatch.setattr(numpy_backend, "sliding_particles",
                            lambda active, *_: active.copy())
        crossed, solver, z = sweep_through_curtain(s, 48.0)
        assert sum(crossed) > 0 or np.count_nonzero(solver.positions[:, 2] > z - 0.2) < 21
