"""Bend plasticity (``plasticity_rate``, ``plasticity_threshold``): hinges bent past the
threshold creep toward their angle, frame by frame, by the closed-form flow rule of
:mod:`pbdcloth.cloth.plasticity`; below it nothing moves; creases survive a release, a tear
and a checkpoint.

Every test sets the settings its assertions depend on, never relying on the defaults.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from pbdcloth import ClothSettings
from pbdcloth.cloth.mesh import ClothMesh, grid
from pbdcloth.cloth.model import build_model
from pbdcloth.cloth.plasticity import with_bend_rest
from pbdcloth.cloth.tear import carry_bend_rest, tear_edges
from pbdcloth.constraints.bend import dihedral_angle
from pbdcloth.solver import ClothSolver

if TYPE_CHECKING:
    from conftest import BackendCase

DT = 1.0 / 24.0


def _settings(case: BackendCase | None = None, **changes: Any) -> ClothSettings:
    base = dict(model="xpbd", substeps=10, iterations=1, damping=0.0, tethers=False,
                gravity=(0.0, 0.0, 0.0), self_collision=False, hierarchy=False,
                plasticity_rate=3.0, plasticity_threshold=0.2)
    base.update(changes)
    return case.cloth_settings(**base) if case is not None else ClothSettings(**base,
                                                                          backend="numpy")


def _hinge(fold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two flat triangles sharing the edge 0-1 (rest angle 0), and the same points with the
    wing 3 folded by ``fold`` [rad] about the shared edge."""
    flat = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.2], [-0.1, 0.0, 0.1], [0.1, 0.0, 0.1]])
    bent = flat.copy()
    bent[3] = [0.1 * np.cos(fold), 0.1 * np.sin(fold), 0.1]
    return flat, np.array([[0, 1, 2], [1, 0, 3]]), bent


def _angle(x: np.ndarray, quad: np.ndarray) -> float:
    return float(dihedral_angle(*(x[quad[k]][:, None] for k in range(4)))[0])


def test_a_held_hinge_creeps_to_its_angle_minus_the_threshold(backend: BackendCase) -> None:
    """All four points pinned and moved to a 1 rad fold in the first frame, then held: frame by
    frame the rest angle follows exactly the
    flow rule (to 1e-12 rad; float32 angles on Warp: 1e-6), so it tends to theta - tau (the
    rest angle after frame k is theta0_k = theta0_(k-1) + (1 - exp(-r dt)) (theta -
    theta0_(k-1) - tau))."""
    flat, faces, bent = _hinge(1.0)
    solver = ClothSolver(flat, faces, pinned=[0, 1, 2, 3], settings=_settings(backend))
    solver.set_pin_targets(bent)
    theta = _angle(bent, solver.model.bend.quads[0])
    assert abs(abs(theta) - 1.0) < 1e-12
    tau, share = 0.2, 1.0 - np.exp(-3.0 * DT)
    rest = 0.0
    tol = 1e-6 if backend.name == "warp" else 1e-12
    for _ in range(48):
        stats = solver.step(DT)
        excess = theta - rest
        rest += share * np.sign(excess) * (abs(excess) - tau)
        assert stats.extra["yielded_hinges"] == 1.0
        assert abs(solver.model.bend.rest_angle[0] - rest) < tol
    # exp(-r 2 s) = 0.25 %: within 2.5e-3 of theta - tau, from below.
    assert abs(abs(rest) - (1.0 - tau)) < 2.5e-3 and abs(rest) < 1.0 - tau


def test_below_the_threshold_nothing_creeps() -> None:
    flat, faces, bent = _hinge(0.15)
    solver = ClothSolver(flat, faces, pinned=[0, 1, 2, 3], settings=_settings())
    model = solver.model
    solver.set_pin_targets(bent)
    for _ in range(10):
        stats = solver.step(DT)
        assert stats.extra["yielded_hinges"] == 0.0
    assert solver.model is model and solver.model.bend.rest_angle[0] == 0.0


def _strip_fold(plastic: bool) -> float:
    """A 0.6 x 0.1 m strip dropped across a thin capsule (radius 2 cm) folds over it for 1 s;
    then the capsule and gravity go and it relaxes for 2 s: the mean |hinge angle| at the
    end."""
    from pbdcloth.colliders.shapes import Capsule

    pos, tris = grid(24, 4, 0.6, 0.1, plane="xz")
    pos = pos - pos.mean(axis=0) + [0.0, 0.03, 0.0]
    rate = 4.0 if plastic else 0.0
    solver = ClothSolver(pos, tris, settings=_settings(
        gravity=(0.0, -9.81, 0.0), bend_compliance=20.0, plasticity_rate=rate,
        plasticity_threshold=0.05, damping=1.0),
        colliders=[Capsule((0.0, 0.0, -0.2), (0.0, 0.0, 0.2), 0.02)])
    for _ in range(24):
        solver.step(DT)
    solver.colliders = []
    solver.settings = solver.settings.replace(gravity=(0.0, 0.0, 0.0), damping=4.0)
    for _ in range(48):
        solver.step(DT)
    quads = solver.model.bend.quads
    x = solver.positions
    return float(np.abs(dihedral_angle(*(x[quads[:, k]].T for k in range(4)))).mean())


@pytest.mark.slow
def test_a_bent_strip_keeps_its_crease_once_released() -> None:
    """Folded over a capsule, then released: the elastic strip springs back nearly flat, the
    plastic one keeps its crease (measured: mean |angle| 0.0024 rad elastic, 0.058 rad
    plastic, where the fold had 0.07-0.08)."""
    elastic, plastic = _strip_fold(False), _strip_fold(True)
    assert elastic < 0.01
    assert plastic > 10 * elastic


def test_a_tear_keeps_the_plastic_rest_angles() -> None:
    """Rest angles moved by plasticity survive a tear: every hinge of the torn cloth keeps its
    hinge's angle (found by its shared edge through the points' origins)."""
    pos, tris = grid(12, 8, 1.0, 0.6)
    model = build_model(ClothMesh.from_arrays(pos, tris), None, 0.15)
    rng = np.random.default_rng(3)
    model = with_bend_rest(model, rng.uniform(-0.5, 0.5, model.bend.count))
    e = model.topology.edges
    line = np.flatnonzero((e[:, 0] % 12 == 5) & (e[:, 1] % 12 == 5))
    tear = tear_edges(model, line)
    torn = carry_bend_rest(tear.model, model, tear.origin)
    old = {tuple(sorted(q[:2])): r for q, r in zip(model.bend.quads.tolist(),
                                                   model.bend.rest_angle.tolist())}
    got = [old[tuple(sorted(tear.origin[q[:2]].tolist()))] for q in torn.bend.quads]
    assert torn.bend.count == model.bend.count - line.size
    np.testing.assert_array_equal(torn.bend.rest_angle, got)
    assert not np.array_equal(tear.model.bend.rest_angle, torn.bend.rest_angle)


def test_plastic_creases_resume_from_a_checkpoint(backend: BackendCase) -> None:
    """get_state after some hinges yielded, set_state into a fresh solver: the rest angles
    come back and the following frames are the same bits."""
    pos, tris = grid(10, 4, 0.5, 0.2, plane="xz")
    held = np.arange(4) * 10

    def make() -> ClothSolver:
        return ClothSolver(pos, tris, pinned=held, settings=_settings(
            backend, gravity=(0.0, -9.81, 0.0), bend_compliance=20.0, plasticity_rate=4.0,
            plasticity_threshold=0.01))

    a = make()
    for _ in range(10):
        a.step(DT)
    assert np.abs(a.model.bend.rest_angle).max() > 0.0
    b = make()
    b.set_state(a.get_state())
    np.testing.assert_array_equal(b.model.bend.rest_angle, a.model.bend.rest_angle)
    for _ in range(6):
        a.step(DT)
        b.step(DT)
    assert a.positions.tobytes() == b.positions.tobytes()
